#!/usr/bin/env python3
"""tests/sweep_compare.py - the check shared by tests/test_slurm.sh and tests/test_local_sweep.sh.

  sweep_compare.py LABEL ONE MERGED   the rows of MERGED/results.csv (every column but date_utc and
                                      hostname; golden files compared by their content-hash name, the
                                      cache directories differ) equal ONE's, in the same order, none
                                      twice, and MERGED/verdicts.csv equals ONE's (but date_utc).
                                      Prints 'LABEL: merged = one piece: ...'; exit 1 (saying where)
                                      when they differ.
  sweep_compare.py --rows CSV         the number of data rows of a results CSV.

python3 and its csv module only.
"""
import csv
import os
import sys


def rows(d):
    with open(os.path.join(d, "results.csv")) as f:
        r = list(csv.DictReader(f))
    for x in r:
        for k in ("date_utc", "hostname"):
            x.pop(k)
        x["golden_path"] = os.path.basename(x["golden_path"])  # the cache directories differ
    return r


def verdicts(d):
    with open(os.path.join(d, "verdicts.csv")) as f:
        return [{k: v for k, v in x.items() if k != "date_utc"} for x in csv.DictReader(f)]


def same(label, one, merged):
    a, b = rows(one), rows(merged)
    if len(a) != len(b):
        return f"rows: one piece {len(a)}, merged {len(b)}"
    keys = [(x["golden_path"], x["variant"]) for x in b]
    if len(set(keys)) != len(keys):
        return "a row twice in the merged table"
    for i, (x, y) in enumerate(zip(a, b)):
        diff = [k for k in x if x[k] != y[k]]
        if diff:
            return f"row {i} ({x['variant']} on {x['golden_path']}) differs in {diff[:5]}"
    va, vb = verdicts(one), verdicts(merged)
    if va != vb:
        return "verdicts differ: " + str([(x["hypothesis"], x["verdict"], y["verdict"]) for x, y in zip(va, vb)])
    print(f"{label}: merged = one piece: {len(a)} rows, verdicts " +
          " ".join(f"{x['hypothesis']}={x['verdict']}" for x in va))
    return None


def main(argv):
    if len(argv) == 3 and argv[1] == "--rows":
        with open(argv[2]) as f:
            print(sum(1 for _ in csv.reader(f)) - 1)
        return 0
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    why = same(*argv[1:])
    if why:
        print(f"{argv[1]}: {why}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

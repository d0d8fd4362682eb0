#!/usr/bin/env python3
"""tests/sweep_compare.py - the check shared by tests/test_slurm.sh, tests/test_local_sweep.sh and tests/gpu/sweep_job.sh.

  sweep_compare.py LABEL ONE MERGED   the rows of MERGED/results.csv (every column but date_utc and
                                      hostname; golden files compared by their content-hash name, the
                                      cache directories differ) equal ONE's, in the same order, none
                                      twice, and MERGED/verdicts.csv equals ONE's (but date_utc).
                                      Prints 'LABEL: merged = one piece: ...'; exit 1 (saying where)
                                      when they differ.
  sweep_compare.py --measured LABEL ONE MERGED
                                      the same for two GPU runs of a sweep (issue 15: shards on other
                                      GPUs or at other times): the measured columns (MEASURED below:
                                      times, bandwidths, read references, clocks; a reason that is only
                                      the timing's "timing hit the ... cap" note; a verdict's observed
                                      range and sentence) may differ and are summarized instead (the
                                      largest relative difference of the median time); every other
                                      column must be equal: the verdicts and their counts of
                                      observations in, out and unclear too.
                                      A folder without results.csv or verdicts.csv: one line, exit 2.
  sweep_compare.py --rows CSV         the number of data rows of a results CSV.

python3 and its csv module only.
"""
import csv
import os
import sys


# what a second run of the same step measures anew (data/SCHEMA.md); everything else is the step's
# deterministic outcome: the configuration, the errors against the models, the checks, the verdict
MEASURED = ("time_samples", "time_converged", "time_median_s", "time_min_s", "time_max_s", "time_mean_s",
            "time_stdrel", "time_elapsed_s", "gbps", "peak_read_gbps", "frac_peak", "ref_read_s",
            "ref_read_pages_s", "ref_read_contig_s", "frac_ref", "sm_clock_mhz_before", "sm_clock_mhz_after")
# a verdict's observed range and its sentence quote measured values; its counts and the verdict do not
VERDICT_MEASURED = ("value_min", "value_max", "reason")
TIMING_NOTE = "timing hit the "  # a reason that is only the timing's note (harness/run.c): measured too


def rows(d):
    with open(os.path.join(d, "results.csv")) as f:
        r = list(csv.DictReader(f))
    for x in r:
        for k in ("date_utc", "hostname"):
            x.pop(k, None)
        x["golden_path"] = os.path.basename(x["golden_path"])  # the cache directories differ
    return r


def compared(r, skip):
    """Copies of rows r without the columns in skip (and, with any, a reason that is only the timing note)."""
    out = []
    for x in r:
        y = {k: v for k, v in x.items() if k not in skip}
        if skip and y.get("reason", "").startswith(TIMING_NOTE):
            y["reason"] = ""
        out.append(y)
    return out


def verdicts(d, skip=()):
    drop = ("date_utc",) + (VERDICT_MEASURED if skip else ())
    with open(os.path.join(d, "verdicts.csv")) as f:
        return [{k: v for k, v in x.items() if k not in drop} for x in csv.DictReader(f)]


def time_drift(a, b):
    """The largest |b / a - 1| of time_median_s over the timed rows of two tables, and its row; None if none."""
    worst = None
    for x, y in zip(a, b):
        try:
            t1, t2 = float(x["time_median_s"]), float(y["time_median_s"])
        except (KeyError, ValueError):
            continue
        if t1 > 0 and t2 > 0 and (worst is None or abs(t2 / t1 - 1) > worst[0]):
            worst = (abs(t2 / t1 - 1), f"{x['variant']} on {x['golden_path']}")
    return worst


def same(label, one, merged, skip=()):
    ra, rb = rows(one), rows(merged)
    a, b = compared(ra, skip), compared(rb, skip)
    if len(a) != len(b):
        return f"rows: one piece {len(a)}, merged {len(b)}"
    keys = [(x["golden_path"], x["variant"]) for x in b]
    if len(set(keys)) != len(keys):
        return "a row twice in the merged table"
    for i, (x, y) in enumerate(zip(a, b)):
        diff = [k for k in x if x[k] != y[k]]
        if diff:
            return f"row {i} ({x['variant']} on {x['golden_path']}) differs in {diff[:5]}"
    va, vb = verdicts(one, skip), verdicts(merged, skip)
    if va != vb:
        return "verdicts differ: " + str([(x["hypothesis"], x["verdict"], y["verdict"]) for x, y in zip(va, vb)])
    print(f"{label}: merged = one piece{' but the measured columns' if skip else ''}: {len(a)} rows, verdicts " +
          " ".join(f"{x['hypothesis']}={x['verdict']}" for x in va))
    if skip:
        w = time_drift(ra, rb)
        if w:
            print(f"{label}: time_median_s differs by {100 * w[0]:.1f} % at most ({w[1]})")
    return None


def main(argv):
    if len(argv) == 3 and argv[1] == "--rows":
        with open(argv[2]) as f:
            print(sum(1 for _ in csv.reader(f)) - 1)
        return 0
    skip = ()
    if len(argv) == 5 and argv[1] == "--measured":
        skip, argv = MEASURED, argv[1:]
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    for d in argv[2:]:  # both runs' tables, before reading either
        for name in ("results.csv", "verdicts.csv"):
            if not os.path.isfile(os.path.join(d, name)):
                print(f"sweep_compare.py: {os.path.join(d, name)}: no such file (a finished or merged run's folder?)",
                      file=sys.stderr)
                return 2
    why = same(*argv[1:], skip=skip)
    if why:
        print(f"{argv[1]}: {why}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

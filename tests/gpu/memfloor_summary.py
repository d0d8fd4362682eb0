#!/usr/bin/env python3
"""memfloor_summary.py - a markdown table from a memfloor.sh output folder (memfloor.csv and
memfloor_knobs.txt), also when the run was cut short before memfloor.sh wrote its own table.

usage: tests/gpu/memfloor_summary.py DIR [VARIANT ...]
One line per configuration and knob setting: the read reference and, per variant, the median time in us
with frac_ref in brackets (and the verdict when not PASS); SKIP rows are left out. Exit status 2 on a
folder it cannot read. Standard library only."""
import csv
import os
import sys

if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if len(sys.argv) > 1 else 2)
d = sys.argv[1]
try:
    rows = list(csv.DictReader(open(os.path.join(d, "memfloor.csv"))))
    knobs = []
    for line in open(os.path.join(d, "memfloor_knobs.txt")):
        n, k = line.split()
        knobs += [k] * int(n)
except (OSError, ValueError, KeyError) as e:
    print(f"memfloor_summary: {d}: {e}", file=sys.stderr)
    sys.exit(2)
if len(knobs) != len(rows):
    print(f"memfloor_summary: {d}: memfloor_knobs.txt accounts for {len(knobs)} rows, memfloor.csv has {len(rows)}",
          file=sys.stderr)
    sys.exit(2)
table, order, seen_v = {}, [], []
for k, r in zip(knobs, rows):
    if r["verdict"] == "SKIP":
        continue
    key = (os.path.basename(r["golden_path"])[:-3], k)
    if key not in table:
        table[key] = {}
        order.append(key)
    table[key][r["variant"]] = r
    if r["variant"] not in seen_v:
        seen_v.append(r["variant"])
variants = sys.argv[2:] or seen_v
print("| configuration | knobs | read us | " + " | ".join(variants) + " |")
print("|---|---|---|" + "---|" * len(variants))
for key in order:
    cells, read = [], None
    for v in variants:
        r = table[key].get(v)
        if not r:
            cells.append("-")
            continue
        read = 1e6 * float(r["ref_read_s"])
        mark = "" if r["verdict"] == "PASS" else " " + r["verdict"]
        cells.append("%.1f (%.3f)%s" % (1e6 * float(r["time_median_s"]), float(r["frac_ref"]), mark))
    if read is not None:
        print("| %s | %s | %.1f | %s |" % (key[0], "default" if key[1] == "-" else key[1], read, " | ".join(cells)))

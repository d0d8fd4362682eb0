#!/usr/bin/env python3
"""verdict_table.py - the README's table of experiment verdicts, made from the verdicts.csv files that
`decodelab experiment` writes (one per experiment folder), so that the table says what the runs said.

usage:
  experiments/verdict_table.py DIR [DIR ...]          print the markdown table of every DIR/*/verdicts.csv
                                                       (or DIR/verdicts.csv), in experiment and hypothesis order
  experiments/verdict_table.py --readme README.md --check   exit 1 if a generated block is stale
  experiments/verdict_table.py --readme README.md --write   rewrite the generated blocks in place (atomically)
A generated block in a markdown file sits between the lines
  <!-- verdicts: DIR [DIR ...] -->   and   <!-- /verdicts -->
(DIRs relative to the file's folder). Exit status: 0 ok, 1 stale (--check), 2 bad input.
Standard library only."""
import csv
import glob
import os
import re
import sys

BEGIN = re.compile(r"^<!-- verdicts: (.+) -->$")
END = "<!-- /verdicts -->"


def fail(msg):
    print(f"verdict_table: {msg}", file=sys.stderr)
    sys.exit(2)


def rows_of(dirs):
    files = []
    for d in dirs:
        if not os.path.isdir(d):
            fail(f"{d}: not a directory")
        own = os.path.join(d, "verdicts.csv")
        found = [own] if os.path.isfile(own) else sorted(glob.glob(os.path.join(d, "*", "verdicts.csv")))
        if not found:
            fail(f"{d}: no verdicts.csv in it or in its sub-folders")
        files += [(f, d) for f in found]
    rows = []
    for f, d in files:
        with open(f, newline="") as fh:
            rd = csv.DictReader(fh)
            need = {"experiment", "hypothesis", "claim", "verdict", "reason", "reduced"}
            if not rd.fieldnames or not need <= set(rd.fieldnames):
                fail(f"{f}: not a verdicts table (columns {sorted(need)} expected)")
            rows += [dict(r, _file=f, _dir=d) for r in rd]
    key = lambda r: (r["experiment"], int(r["hypothesis"][1:]) if r["hypothesis"][1:].isdigit() else 0)
    return sorted(rows, key=key)


def cell(s):
    return s.replace("|", "\\|").replace("\n", " ").strip()


def table(dirs):
    rows = rows_of(dirs)
    out = ["| experiment | hypothesis | verdict | deciding numbers |", "|---|---|---|---|"]
    # one hypothesis from two runs (two folders, e.g. two cards): each row names its folder, or they look alike
    seen = {}
    for r in rows:
        seen[(r["experiment"], r["hypothesis"])] = seen.get((r["experiment"], r["hypothesis"]), 0) + 1
    for r in rows:
        exp = r["experiment"].split("_")[0]
        sweep = " (reduced sweep)" if r["reduced"] not in ("", "0") else ""
        src = f" ({os.path.basename(os.path.normpath(r['_dir']))})" if seen[(r["experiment"], r["hypothesis"])] > 1 else ""
        out.append(f"| {exp} {r['hypothesis']}{sweep}{src} | {cell(r['claim'])} | **{r['verdict']}** | {cell(r['reason'])} |")
    return "\n".join(out)


def blocks(path, write):
    base = os.path.dirname(os.path.abspath(path))
    lines = open(path).read().split("\n")
    out, i, stale, n = [], 0, 0, 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        n += 1
        j = i
        while j < len(lines) and lines[j] != END:
            j += 1
        if j == len(lines):
            fail(f"{path}: '{lines[i - 1]}' has no '{END}' after it")
        want = table([os.path.join(base, d) for d in m.group(1).split()]).split("\n")
        if lines[i:j] != want:
            stale += 1
        out += want
        i = j
    if n == 0:
        fail(f"{path}: no '<!-- verdicts: DIR ... -->' block")
    if write and stale:
        tmp = f"{path}.tmp.{os.getpid()}"
        with open(tmp, "w") as fh:
            fh.write("\n".join(out))
        os.replace(tmp, path)
    return stale


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] == "--readme":
        if len(argv) != 3 or argv[2] not in ("--check", "--write"):
            fail("usage: --readme FILE --check|--write")
        stale = blocks(argv[1], argv[2] == "--write")
        if argv[2] == "--check" and stale:
            print(f"verdict_table: {argv[1]}: {stale} verdict block(s) stale; run "
                  f"experiments/verdict_table.py --readme {argv[1]} --write", file=sys.stderr)
            return 1
        return 0
    print(table(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

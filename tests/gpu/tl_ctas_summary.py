#!/usr/bin/env python3
"""tl_ctas_summary.py - which CTAs of a streaming launch end late, and whether they are the same ones launch after
launch (issue 10, after the exits' spread of 2026-12-04b). Reads the per-CTA rows that a DIAG build writes with
DL_STREAM_DRY=3 and DL_STREAM_TL_CTAS=PREFIX (PREFIX.<launch>.tsv: cta, sm, entry_us, first_tile_us, exit_us,
segments, tiles, and from 2026-12-04's fourth session the start's milestones record_us, page_id_us, issue_us, q_us,
-1 where not reached) and prints, over the launches given:
  - per launch: the exits' p10 / p50 / last, and where the files have them, the medians over the CTAs of the start's
    milestones (the producer's slot record loaded, its first page id loaded, its first copy issued; the first tile
    held; a consumer's Q ready), in us from the launch's first entry;
  - the rank correlation (Spearman) of the CTAs' exits between consecutive launches, by CTA and by SM: near 1, the
    same CTAs (or SMs) are late every time, a static cause (the plan's work, or the SM's place); near 0, chance;
  - the rank correlation of exits with the CTA's planned tiles and segments (is the late CTA the one with more work,
    or with more segment starts and ends?), and the CTAs grouped by (segments, tiles): how many, their mean first
    tile and mean exit over the launches, the earliest and latest exit;
  - the latest CTAs by mean exit rank, with their mean exit, SM, segments and tiles;
  - per launch, where the files have the tiles, whether a CTA's start sets its end: the rank correlation of the
    first tile held with the exit, and with the time a tile after it ((exit - first tile) / tiles; negative: the
    CTAs that start late run their tiles faster, as when they share a saturated memory system);
  - with --bytes B (the case's KV bytes), per launch the main phase's rate: B over the time from the CTAs' median
    first tile (the probe's first copy landed) to the last exit, in TB/s (what the streaming rate was once the
    start was over: 2026-12-04's sixth session compared the kernel's, ~3.0 TB/s at B64 L1024, with the probe's).
Usage: tl_ctas_summary.py PREFIX [--skip N] [--bytes B] (skip the first N launches: warm-up; default 5)."""
import argparse
import glob
import os
import re
import statistics
import sys


def fail(msg):
    """Bad input: one line on stderr, exit 2."""
    print("tl_ctas_summary: " + msg, file=sys.stderr)
    sys.exit(2)


def load(path):
    rows = []
    with open(path) as f:
        head = f.readline().split()
        if head[:5] != ["cta", "sm", "entry_us", "first_tile_us", "exit_us"]:
            fail("%s: not a DL_STREAM_TL_CTAS file (header %r)" % (path, head))
        for n, line in enumerate(f, 2):
            f5 = line.split()
            if len(f5) not in (5, 7, 11): # the row formats of 2026-12-04b, -c and -d on
                fail("%s line %d: %d fields (want 5, 7 or 11): %r" % (path, n, len(f5), line.rstrip()))
            try:
                rows.append((int(f5[0]), int(f5[1]), float(f5[2]), float(f5[3]), float(f5[4]),
                             int(f5[5]) if len(f5) > 6 else -1, int(f5[6]) if len(f5) > 6 else -1,
                             tuple(float(x) for x in f5[7:11]) if len(f5) > 10 else None))
            except (ValueError, IndexError):
                fail("%s line %d: bad row %r" % (path, n, line.rstrip()))
    return rows


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order): # ties share their mean rank
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den > 0 else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prefix")
    ap.add_argument("--skip", type=int, default=5)
    ap.add_argument("--bytes", type=float, default=0.0, help="the case's KV bytes: print the main phase's rate")
    o = ap.parse_args()
    if o.bytes < 0:
        fail("--bytes %g: the KV bytes cannot be negative" % o.bytes)
    files = {}
    for p in glob.glob(glob.escape(o.prefix) + ".*.tsv"):
        m = re.match(r".*\.(\d+)\.tsv$", p)
        if m:
            files[int(m.group(1))] = p
    launches = [k for k in sorted(files) if k > o.skip]
    if len(launches) < 2:
        fail("fewer than two launches after --skip %d under %s.*.tsv (found %s)"
                 % (o.skip, o.prefix, sorted(files) or "none"))
    data = {k: load(files[k]) for k in launches}
    n = len(data[launches[0]])
    if n == 0:
        fail("%s: no CTA rows" % files[launches[0]])
    for k in launches:
        if len(data[k]) != n:
            fail("launch %d has %d CTAs, launch %d %d: not the same grid"
                     % (k, len(data[k]), launches[0], n))
    print("%d CTAs, launches %s (%s.*.tsv)" % (n, launches, o.prefix))
    for k in launches:
        ex = sorted(r[4] for r in data[k])
        line = "launch %2d: exits p10 %.2f p50 %.2f last %.2f us" % (k, ex[n // 10], ex[n // 2], ex[-1])
        if all(r[7] is not None for r in data[k]):
            cols = [[r[7][m] for r in data[k]] for m in range(3)] + [[r[3] for r in data[k]], [r[7][3] for r in data[k]]]
            names = ("record", "page id", "issue", "first tile", "q")
            line += " | start p50:" + "".join(
                " %s %s" % (nm, "%.2f" % statistics.median(v) if v else "-")
                for nm, v in zip(names, ([x for x in c if x >= 0] for c in cols)))
        if o.bytes > 0:
            firsts = [r[3] for r in data[k] if r[3] >= 0]
            span = ex[-1] - statistics.median(firsts) if firsts else 0.0
            line += (" | main phase %.2f us, %.2f TB/s" % (span, o.bytes / span / 1e6) if span > 0
                     else " | main phase -")
        print(line)
    for k in launches: # does a CTA's start set its end? (2026-12-05, seventeenth session)
        rs = [r for r in data[k] if r[3] >= 0 and r[6] > 0]
        if len(rs) < 3:
            continue
        first = [r[3] for r in rs]
        per_tile = [(r[4] - r[3]) / r[6] for r in rs]
        q = statistics.quantiles(per_tile, n=10, method="inclusive")
        print("launch %2d: first tile vs exit rho %.2f, vs us a tile after it rho %.2f (us a tile p10 %.3f p50 %.3f "
              "p90 %.3f)" % (k, spearman(first, [r[4] for r in rs]), spearman(first, per_tile), q[0],
                             statistics.median(per_tile), q[8]))
    exit_by_cta = {k: [r[4] for r in sorted(data[k])] for k in launches}
    by_cta = [spearman(exit_by_cta[a], exit_by_cta[b]) for a, b in zip(launches, launches[1:])]
    print("rank correlation of exits, consecutive launches, by CTA: %s" % " ".join("%.2f" % x for x in by_cta))
    def per_sm(k):
        d = {}
        for r in data[k]:
            d.setdefault(r[1], []).append(r[4])
        return {sm: max(v) for sm, v in d.items()}
    sms = sorted(set.intersection(*(set(per_sm(k)) for k in launches)))
    if len(sms) >= 3:
        by_sm = []
        for a, b in zip(launches, launches[1:]):
            pa, pb = per_sm(a), per_sm(b)
            by_sm.append(spearman([pa[s] for s in sms], [pb[s] for s in sms]))
        print("rank correlation of exits, consecutive launches, by SM (an SM's last exit; %d SMs in every launch): %s"
              % (len(sms), " ".join("%.2f" % x for x in by_sm)))
    mean_rank = [0.0] * n
    mean_exit = [0.0] * n
    for k in launches:
        for i, rk in enumerate(ranks(exit_by_cta[k])):
            mean_rank[i] += rk / len(launches)
            mean_exit[i] += exit_by_cta[k][i] / len(launches)
    last = {r[0]: r for r in data[launches[-1]]}
    if all(last[i][5] >= 0 for i in range(n)):
        segs, tiles = [last[i][5] for i in range(n)], [last[i][6] for i in range(n)]
        print("rank correlation of the mean exit with the planned tiles %.2f (tiles %d..%d), with the segments %.2f "
              "(segments %d..%d)" % (spearman(mean_exit, tiles), min(tiles), max(tiles), spearman(mean_exit, segs),
                                     min(segs), max(segs)))
        groups = {}
        for i in range(n):
            groups.setdefault((segs[i], tiles[i]), []).append(i)
        print("by the plan's (segments, tiles), over the launches: CTAs, mean first tile, mean exit, earliest / latest "
              "exit (us)")
        for key in sorted(groups):
            idx = groups[key]
            members = set(idx)
            firsts = [r[3] for k in launches for r in data[k] if r[0] in members]
            exits = [exit_by_cta[k][i] for k in launches for i in idx]
            print("  segments %3d  tiles %5d  %4d CTAs  first %7.2f  exit %7.2f  (%7.2f / %7.2f)"
                  % (key[0], key[1], len(idx), statistics.fmean(firsts), statistics.fmean(exits), min(exits),
                     max(exits)))
    late = sorted(range(n), key=lambda i: -mean_rank[i])[:10]
    print("latest CTAs by mean exit rank (0 = first out):")
    for i in late:
        print("  cta %4d  rank %5.1f  mean exit %7.2f us  sm %3d (last launch)  segments %d  tiles %d"
              % (i, mean_rank[i], mean_exit[i], last[i][1], last[i][5], last[i][6]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""derive_thresholds.py - the implementation limits of harness/compare.c from a `make test-gpu` results CSV.

usage: python3 experiments/derive_thresholds.py [RESULTS.csv] > results/<dir>/thresholds.txt
(default: results/h200_2026-12-01/test-gpu-results.csv; only the csv module is used)

1. Per golden model (fp32, bf16, fp8, fp8acc, bf16simt): the worst kernel-vs-model figure over
   every PASS/FAIL row (every variant, split setting and schedule; SKIP rows carry no figures):
   global o rel L2 (model_o_rel_l2), per-(request, head) o rel L2 (model_o_head_rel_l2), lse max
   abs (model_lse_max_abs). The model of a split or planned kernel follows the kernel's schedule
   (column model_schedule), so these are arithmetic differences, not schedule differences.
2. The limits: MARGIN (8) x the worst figure, the figure first rounded UP to 4 significant digits
   (so the limit is never below 8 x the measurement; compare.c carries exactly these numbers);
   a figure of 0 gets the floor FLOOR (8 x 2^-24: a float32 rounding of the output). The
   per-head limit is also capped at HEAD_CAP (5e-3, half the smallest planted bug of
   tests/test_planted.c: one head x 1.01 = per-head error 1e-2), so that a 1 % error in one
   head stays a FAIL; the table says where the cap decides.
3. The precision bands vs exact are analytic (compare.c: from the unit roundoff of each model's
   roundings), not measured limits, and are not re-derived here: 8 x the worst measured figure
   would absorb the outlier / channel-outlier rows that the band exists to flag as `above
   expected`. The worst exact_* figures per model, KV dtype and distribution are printed beside
   the band in force at the run (columns band_o_rel_l2, band_lse_abs) as a check.
"""
import csv
import math
import os
import sys
from collections import defaultdict

MARGIN = 8.0
FLOOR = MARGIN * 2.0 ** -24
HEAD_CAP = 5e-3
MODELS = ["fp32", "bf16", "fp8", "fp8acc", "bf16simt"]
FIGURES = [("o", "model_o_rel_l2", None), ("head", "model_o_head_rel_l2", "model_o_head_worst"),
           ("lse", "model_lse_max_abs", "model_lse_head_worst")]


def ceil_sig(x, digits=4):
    """x rounded up to `digits` significant digits (0 stays 0)."""
    if x <= 0.0:
        return 0.0
    e = math.floor(math.log10(x)) - (digits - 1)
    q = x / 10.0 ** e
    r = math.ceil(q - 1e-9)  # 6124.7 -> 6125; exactly 6125.0 stays
    return float(f"{r}e{e}")


def where(r, worst_col):
    case = os.path.basename(r["golden_path"])
    s = f"{r['variant']} {case} splits={r['num_splits']} sched={r['model_schedule'] or '-'}"
    s += f" kv={r['kv_dtype']} D={r['head_dim']} page={r['page_size']} Hq={r['num_qo_heads']} {r['distribution']}"
    if worst_col and int(r[worst_col]) >= 0:
        hq = int(r["num_qo_heads"])
        row = int(r[worst_col])
        s += f" (request {row // hq}, head {row % hq})"
    return s


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "results/h200_2026-12-01/test-gpu-results.csv"
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    judged = [r for r in rows if r["verdict"] in ("PASS", "FAIL")]
    npass = sum(r["verdict"] == "PASS" for r in judged)
    devices = sorted({r["device_name"] for r in judged})
    dates = sorted({r["date_utc"][:10] for r in judged})
    seeds = sorted({int(r["seed"]) for r in judged})
    print(f"# thresholds derived by experiments/derive_thresholds.py from {path}")
    print(f"# {len(rows)} rows: {npass} PASS, {len(judged) - npass} FAIL, {len(rows) - len(judged)} SKIP (no figures);"
          f" device {', '.join(devices)}; date {', '.join(dates)}; seeds {seeds[0]}..{seeds[-1]};"
          f" {len({r['golden_path'] for r in judged})} golden files")
    print(f"# limit = {MARGIN:g} x worst (worst rounded up to 4 significant digits); floor {FLOOR:.4g} (8 x 2^-24)"
          f" where the worst is 0; per-head limit capped at {HEAD_CAP:g}")
    print()

    print("## 1. worst kernel-vs-model figure per golden model (over every PASS/FAIL row)")
    print()
    worst = {}
    for m in MODELS:
        rs = [r for r in judged if r["model"] == m]
        if not rs:
            print(f"{m}: no rows")
            continue
        variants = sorted({r["variant"] for r in rs})
        print(f"{m}: {len(rs)} rows; variants {', '.join(variants)}")
        worst[m] = {}
        for key, col, wcol in FIGURES:
            r = max(rs, key=lambda x: float(x[col]))
            v = float(r[col])
            worst[m][key] = v
            print(f"  {key:<4} {v:.6e}  {where(r, wcol)}")
        ratio = max(float(r["model_o_head_rel_l2"]) / float(r["model_o_rel_l2"]) for r in rs
                    if float(r["model_o_rel_l2"]) > 0)
        print(f"  largest per-head / global ratio of one row: {ratio:.1f}")
    print()

    print(f"## 2. implementation limits (harness/compare.c, tests/test_compare.c pin them)")
    print()
    print(f"{'model':<9} {'worst o':>10} {'limit o':>10} | {'worst head':>10} {'8 x head':>10} {'limit head':>10} |"
          f" {'worst lse':>10} {'limit lse':>10}")
    notes = []
    for m in MODELS:
        if m not in worst:
            continue
        w = worst[m]
        b = {k: ceil_sig(w[k]) for k in w}
        lim = {k: (MARGIN * b[k] if b[k] > 0 else FLOOR) for k in b}
        head8 = lim["head"]
        if lim["head"] > HEAD_CAP:
            lim["head"] = HEAD_CAP
            notes.append(f"{m}: 8 x the worst per-head figure ({head8:.3e}) is over the cap {HEAD_CAP:g}: the cap"
                         f" decides (margin {HEAD_CAP / w['head']:.2f} x the measured {w['head']:.4e})")
        for k in w:
            if w[k] == 0:
                notes.append(f"{m}: worst {k} is 0: floor {FLOOR:.3e}")
        print(f"{m:<9} {b['o']:>10.3e} {lim['o']:>10.3e} | {b['head']:>10.3e} {head8:>10.3e} {lim['head']:>10.3e} |"
              f" {b['lse']:>10.3e} {lim['lse']:>10.3e}")
    for n in notes:
        print(f"note: {n}")
    print("note: how far a correct kernel may move when its exp differs from glibc's by an ulp or two (P rounding")
    print("      flips): experiments/exp_sensitivity.sh, results/h200_2026-12-01/exp_sensitivity_cpu.txt")
    print()

    print("## 3. precision vs exact: worst kernel figure per model, KV dtype and distribution, against the band")
    print("##    recorded in the CSV (analytic bands, compare.c; not re-derived - see the docstring)")
    print()
    groups = defaultdict(list)
    for r in judged:
        groups[(r["model"], r["kv_dtype"], r["distribution"])].append(r)
    print(f"{'model':<9} {'kv':<5} {'distribution':<16} {'rows':>4} {'exact o':>10} {'band o':>8} {'exact lse':>10}"
          f" {'band lse':>8}  above expected")
    for (m, kv, dist) in sorted(groups, key=lambda k: (MODELS.index(k[0]) if k[0] in MODELS else 99, k[1], k[2])):
        rs = groups[(m, kv, dist)]
        eo = max(float(r["exact_o_rel_l2"]) for r in rs)
        el = max(float(r["exact_lse_max_abs"]) for r in rs)
        bo = max(float(r["band_o_rel_l2"]) for r in rs)
        bl = max(float(r["band_lse_abs"]) for r in rs)
        above = sum(r["verdict_exact"] == "above expected" for r in rs)
        print(f"{m:<9} {kv:<5} {dist:<16} {len(rs):>4} {eo:>10.3e} {bo:>8.3g} {el:>10.3e} {bl:>8.3g}  {above}"
              + ("  <- normal inputs above the band" if above and dist == "normal" else ""))


if __name__ == "__main__":
    main()

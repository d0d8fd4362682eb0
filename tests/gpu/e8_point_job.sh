#!/usr/bin/env bash
# e8_point_job.sh - one GPU-machine call (issue 13, E8 H9): the one point of E8 where fp8-none-mma
# FAILed against its model (sink_delta 12, p_scale 1, forward order, shard 0 of 2026-12-02), rerun
# alone with fresh seeds, with --splits 1 (the stored fp8 model) and auto (the split schedule's
# model), so that a FAIL that repeats (the kernel differs from its model) is told from one that does
# not (the limit is tight at a strong sink). Saves the GPU outputs (candidate files, data/SCHEMA.md)
# and the result rows. Expects .carry/decodelab.gz. Environment: OUT (required), SEEDS.
# Prints last one line per (seed, splits, variant) with its verdict and model o rel. L2.
set -uo pipefail
: "${OUT:?set OUT}"
SEEDS=${SEEDS:-"20261703 20261704 20261705"}
T=/tmp/e8pt; rm -rf "$T"; mkdir -p "$T" "$OUT"
gunzip -c .carry/decodelab.gz > "$T/dl" && chmod +x "$T/dl" || exit 2
for s in $SEEDS; do
    g="$T/s12_$s.h5"
    timeout 150 "$T/dl" golden --preset llama3-8b --kv-dtype e4m3 --batch 16 --seq-len 8192 --distribution sink \
        --sink-tokens 4 --sink-delta 12 --p-scale 1 --models exact,bf16,fp8 --seed "$s" --out "$g" --force \
        > "$T/golden_$s.log" 2>&1 || { echo "golden seed $s failed (exit $?)"; continue; }
    for sp in 1 auto; do
        mkdir -p "$T/out_${s}_$sp"
        timeout 90 "$T/dl" run "$g" --variants 'fp8-none-mma,fp8acc-none-mma' --splits "$sp" \
            --save-outputs "$T/out_${s}_$sp" --out "$T/rows.h5" > "$T/run_${s}_$sp.log" 2>&1
        echo "seed $s splits $sp: exit $?"
    done
    rm -f "$g"
done
tar czf "$OUT/e8pt.tgz" --exclude='e8pt/dl' -C /tmp e8pt
python3 - "$T/rows.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print("seed %-10s splits=%-4s %-16s %-5s model_o_rel_l2 %s  limit %s  lse_max_abs %s" % (
        r["seed"], r.get("num_splits", "?"), r["variant"], r["verdict"], r.get("model_o_rel_l2"),
        r.get("limit_o_rel_l2"), r.get("model_lse_max_abs")))
PY

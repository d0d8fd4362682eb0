#!/usr/bin/env bash
# order_job.sh - one GPU-machine call (issue 10, attempt #24): the plan's walk, the default (`auto`: the heads
# order where it fits, dl_plan.h) against DL_STREAM_ORDER=tasks, with bf16-hw-stream on llama3-8B e4m3 NHD
# B128/B256 L4096 and B64 L1024, and HND B128. (Its run of 2026-12-03, results/h200_2026-12-03h call 2, with the
# build 771125c also swept DL_STREAM_PREFETCH, since removed, and had tasks as the default.) Steps in priority order, results packed
# after each (a call cut by its time limit returns what ran). Expects .carry/decodelab.gz (tests/gpu/
# unpack_carry.sh first). Environment: OUT (required); VARIANTS (default bf16-hw-stream); MAXT (0.5).
# Writes $OUT/order.tgz; prints the rows last. Run it under `timeout 560`.
set -uo pipefail
: "${OUT:?set OUT}"
T=/tmp/order; mkdir -p "$T" "$OUT"
[ -f .carry/decodelab.gz ] || { echo "order_job: .carry/decodelab.gz missing" >&2; exit 2; }
gunzip -c .carry/decodelab.gz > "$T/dl" && chmod +x "$T/dl"
export DL_WORKDIR=$T/golden
H='DL_STREAM_ORDER=tasks'
step() { # config, knobs
    echo "== $1 ($2) from $SECONDS s"
    DECODELAB=$T/dl CONFIGS="$1" VARIANTS="${VARIANTS:-bf16-hw-stream}" KNOBS="$2" OUT="$T/mf-$1" MAXT="${MAXT:-0.5}" \
        bash tests/gpu/memfloor.sh > "$T/mf-$1.log" 2>&1 || echo "   memfloor ($1) exit $? (see its log)"
    tar czf "$OUT/order.tgz.part" --exclude='*.h5' --exclude=order/dl -C /tmp order && mv "$OUT/order.tgz.part" "$OUT/order.tgz"
}
step 8b_b128_l4096_e4m3 "- $H - $H"
step 8b_b64_l1024_e4m3 "- $H"
step 8b_b128_l4096_e4m3_hnd "- $H"
step 8b_b256_l4096_e4m3 "- $H"
echo "== rows (median us, cold L2)"
for f in "$T"/mf-*/memfloor_table.txt; do grep -v '^golden' "$f"; done

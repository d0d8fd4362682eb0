#!/usr/bin/env bash
# stream_quick.sh - one device call's worth of checks for the streaming family
# (gpu/decode_stream.cu): nasty small cases over page sizes 1..256, groups 1..16,
# D 64/128/256, both layouts, every KV dtype, each run by every tensor-core variant
# against the golden models, then the issue-10 seed configuration timed.
# Environment: DECODELAB (binary), OUT (where logs go; default a temp dir),
# DL_SEED (default random, printed), DL_BENCH=0 to skip the timed part.
set -uo pipefail
DECODELAB=${DECODELAB:-build/decodelab}
OUT=${OUT:-$(mktemp -d /tmp/dl_stream.XXXXXX)}
SEED=${DL_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
W=/tmp/dl_stream_work; mkdir -p "$W" "$OUT"
echo "stream_quick: seed $SEED, logs in $OUT"
LENS=1,2,15,16,17,63,64,65,100,257,1000
# kv D layout page group(qo/kv with 2 kv heads) q
CASES="e4m3 128 NHD 16 4 bf16
e4m3 128 HND 2 1 f16
e4m3 64 NHD 8 3 bf16
e4m3 256 NHD 256 12 bf16
e5m2 128 HND 64 8 bf16
e5m2 64 NHD 1 2 f16
bf16 128 NHD 16 5 bf16
bf16 64 HND 128 16 f16
f16 256 HND 4 9 bf16
f16 128 NHD 32 1 f16
e4m3 128 NHD 48 4 bf16"
i=0
echo "$CASES" | while read -r kv d lay ps grp qd; do
    echo "$DECODELAB golden --seq-len $LENS --num-kv-heads 2 --num-qo-heads $((2*grp)) --head-dim $d --page-size $ps --kv-layout $lay --q-dtype $qd --kv-dtype $kv --seed $((SEED+i)) --models exact,bf16 --out $W/c$i.h5 --force"
    i=$((i+1))
done > "$W/gen.txt"
OMP_NUM_THREADS=1 xargs -P "$(nproc)" -I{} sh -c '{} > /dev/null' < "$W/gen.txt" || { echo "golden generation failed"; exit 2; }
status=0
n=$(wc -l < "$W/gen.txt")
for ((i=0; i<n; i++)); do
    label=$(echo "$CASES" | sed -n "$((i+1))p")
    "$DECODELAB" run "$W/c$i.h5" --variants 'bf16-*-mma,*-stream' --out "$OUT/check.h5" > "$OUT/c$i.log" 2>&1 || status=1
    printf '%-28s' "$label"
    awk '$1 ~ /stream|mma/ && ($2=="PASS"||$2=="MARGINAL"||$2=="FAIL"||$2=="SKIP") { printf " %s=%s:%s", $1, $2, $4 }' "$OUT/c$i.log"
    echo
    grep -q FAIL "$OUT/c$i.log" && status=1
done
if [ "${DL_BENCH:-1}" = 1 ]; then
    "$DECODELAB" golden --preset llama3-8b --batch 64 --seq-len 1024 --kv-dtype e4m3 --kv-scale absmax-tensor \
        --models exact,bf16 --seed 1 --out "$W/seed.h5" --force > /dev/null || exit 2
    "$DECODELAB" run "$W/seed.h5" --variants 'bf16-fast-mma,*-stream' --time --out "$OUT/bench.h5" 2>&1 | tee "$OUT/bench.log"
fi
exit $status

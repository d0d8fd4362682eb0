#!/usr/bin/env bash
# precision_job.sh - one lent-GPU call for the issue-4 precision work:
#   quick: the new variants on a few nasty cases (splits 1 and 4)
#   acc:   tests/gpu/fp8_accumulator.sh (the FP8 accumulator finding)
#   time:  llama3-8B e4m3 B64 L1024, every variant, timed
# Usage (device): OUT=dir tests/gpu/precision_job.sh [quick] [acc] [time]
set -u
set -o pipefail # a failing command before a pipe (cmd | tee) fails the job
BIN=${DECODELAB:-build-static/decodelab}
OUT=${OUT:-/tmp/i4}
STEPS=${*:-quick acc time}
G=/tmp/i4_golden; mkdir -p "$OUT" "$G"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-16}
rc=0
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
if has quick; then
    L=1,2,15,16,17,31,32,33,63,64,65,100,257,1000
    i=0
    for spec in "e4m3 128 4 NHD 16 bf16" "e5m2 64 5 HND 1 f16" "e4m3 256 8 HND 16 f16" "e5m2 128 1 NHD 16 bf16" \
                "e4m3 64 7 NHD 1 bf16" "f16 128 4 HND 16 bf16" "bf16 256 5 NHD 1 f16" "f16 64 8 NHD 16 f16"; do
        set -- $spec
        f=$G/q$i.h5
        "$BIN" golden --seq-len $L --num-kv-heads 2 --num-qo-heads $(( 2 * $3 )) --head-dim $2 --page-size $5 \
            --kv-layout $4 --q-dtype $6 --kv-dtype $1 --seed $(( 500 + i )) --out "$f" --force > /dev/null || { echo "golden $spec failed"; rc=1; }
        for sp in 1 4; do
            echo "== kv=$1 D=$2 group=$3 $4 page=$5 q=$6 splits=$sp"
            "$BIN" run "$f" --splits $sp --variants 'fp8*,bf16-*-simt,fp32-cast-simt' 2>&1 || rc=1
        done
        i=$(( i + 1 ))
    done > "$OUT/quick.log" 2>&1
    grep -E "^==|FAIL|PASS|SKIP" "$OUT/quick.log" | grep -v "^fp32" | head -120
fi
if has acc; then
    OUT=$OUT DECODELAB=$BIN tests/gpu/fp8_accumulator.sh > "$OUT/acc.log" 2>&1 || rc=1
    tail -n 3 "$OUT/acc.log"
fi
if has time; then
    f=$G/l3_e4m3.h5
    "$BIN" golden --preset llama3-8b --batch 64 --seq-len 1024 --q-dtype bf16 --kv-dtype e4m3 --out "$f" --force > /dev/null || rc=1
    "$BIN" run "$f" --time --out "$OUT/results.h5" 2>&1 | tee "$OUT/time.log" || rc=1
fi
exit $rc

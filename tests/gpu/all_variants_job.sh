#!/usr/bin/env bash
# all_variants_job.sh - everything one lent-GPU call does for every variant, with a prebuilt static binary
# (`make static` here; the GPU machine has no HDF5 headers or Check):
#   1. device facts and the measured read peak (decodelab info)
#   2. make test-gpu: every variant on the nasty-case matrix + compute-sanitizer subset
#   3. the issue-3 benchmark configurations, timed, appended to results
#   4. census: SASS instruction census + Nsight Compute tensor-pipe counters (E2)
#   5. sanitize: compute-sanitizer racecheck + synccheck over every variant (memcheck runs in 2)
# Usage on the device: OUT=<dir> tests/gpu/all_variants_job.sh [steps...]
#   (steps: info test bench census sanitize; default: info test bench)
# DL_SANITIZE_TIMEOUT (seconds, default 300) bounds step 5.
# Full logs and results go under $OUT; a short table is printed last.
set -u
set -o pipefail # a failing command before a pipe (cmd | tee) fails the job
BIN=${DECODELAB:-build-static/decodelab}
OUT=${OUT:-/tmp/dl_out}
STEPS=${*:-info test bench}
mkdir -p "$OUT"
G=/tmp/dl_golden; mkdir -p "$G"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-16}
rc=0

has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/nvidia-smi.csv" 2>&1
if has info; then "$BIN" info | tee "$OUT/info.txt" || rc=1; fi

if has test; then
    DL_WORKDIR=/tmp/dl_testgpu DECODELAB=$BIN make --no-print-directory test-gpu > "$OUT/test-gpu.log" 2>&1 || rc=1
    tail -n 45 "$OUT/test-gpu.log"
fi

if has bench; then
    # the discussion's two configurations (issue 3): llama3-8B e4m3 and bf16, llama-13B bf16
    gen() { local f=$G/$1.h5; shift; [ -f "$f" ] || "$BIN" golden "$@" --out "$f" > /dev/null || rc=1; echo "$f"; }
    F1=$(gen l3-8b_b64_l1024_e4m3 --preset llama3-8b --batch 64 --seq-len 1024 --q-dtype bf16 --kv-dtype e4m3)
    F2=$(gen l3-8b_b64_l1024_bf16 --preset llama3-8b --batch 64 --seq-len 1024 --q-dtype bf16 --kv-dtype bf16)
    F3=$(gen l-13b_b64_l1024_bf16 --preset llama-13b --batch 64 --seq-len 1024 --q-dtype bf16 --kv-dtype bf16)
    for f in $F1 $F2 $F3; do
        echo "== $f"
        "$BIN" run "$f" --time ${DL_RUN_FLAGS:-} --out "$OUT/results.h5" 2>&1 | tee -a "$OUT/bench.log" || rc=1
    done
fi
if has census; then
    "$BIN" sass --binary "$BIN" --out "$OUT/census.csv" > "$OUT/census.log" 2>&1 || rc=1
    for f in $F1 $F3; do
        "$BIN" ncu "$f" --binary "$BIN" --out "$OUT/census.csv" >> "$OUT/census.log" 2>&1 || rc=1
    done
    tail -n 30 "$OUT/census.log"
fi

if has sanitize; then
    DL_TOOLS=${DL_TOOLS:-"racecheck synccheck"} DL_WORKDIR=/tmp/dl_sanitize DECODELAB=$BIN \
        timeout "${DL_SANITIZE_TIMEOUT:-300}" make --no-print-directory test-gpu-sanitize > "$OUT/sanitize.log" 2>&1 || rc=1
    tail -n 25 "$OUT/sanitize.log"
fi
exit $rc

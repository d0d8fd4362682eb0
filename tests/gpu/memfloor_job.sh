#!/usr/bin/env bash
# memfloor_job.sh - one GPU-machine call for issue 10 (2026-12-01): make test-gpu, then the memfloor
# benchmark over all its configurations (results CSV + table), the flush-method
# comparison, the planted-bug demonstration (make PLANT=skip_last_token must make
# test-gpu fail) and racecheck on the streaming kernels. Expects the gzipped
# static binaries in .carry/ (decodelab.gz, decodelab-plant.gz); writes at most
# 8 files to $OUT.
set -uo pipefail
: "${OUT:?}"
gunzip -c .carry/decodelab.gz > /tmp/decodelab && gunzip -c .carry/decodelab-plant.gz > /tmp/decodelab-plant
chmod +x /tmp/decodelab /tmp/decodelab-plant
export DECODELAB=/tmp/decodelab
status=0
# 0. make test-gpu with this binary first (at most 4 minutes: a hang stops the job; a FAIL does not;
#    MF_TESTGPU=0 skips it, and with it the racecheck of step 2, which runs on one of its golden files)
trc=0
if [ "${MF_TESTGPU:-1}" != 0 ]; then
DL_SEED=${DL_SEED:-20261201} DL_WORKDIR=/tmp/tg timeout 240 bash tests/gpu/nasty_matrix.sh > "$OUT/test-gpu.log" 2>&1
trc=$?
tail -3 "$OUT/test-gpu.log"
fi
if [ $trc -eq 124 ]; then # a hang: the benchmark would hang too
    echo "memfloor_job: make test-gpu timed out: the benchmark was not run"
    tar czf "$OUT/logs.tgz" -C /tmp tg 2>/dev/null
    exit 1
elif [ $trc -ne 0 ]; then # a FAILing variant: its rows show FAIL (timed anyway), the others are measured
    echo "memfloor_job: make test-gpu failed (exit $trc): benchmarking anyway (the job exits 1)"
    status=1
fi
# 3. the benchmark
OUT=/tmp/mf VARIANTS='bf16-*-mma,*-stream,fp8-none-wgmma' MAXT=${MAXT:-1.5} timeout "${MF_BENCH_S:-420}" bash tests/gpu/memfloor.sh > /tmp/mf.log 2>&1 || status=1
cp /tmp/mf/memfloor.csv /tmp/mf/memfloor_table.txt "$OUT/" 2>/dev/null
# 4. flush method: the same two kernels, read-only flush (MF_FLUSH=0 skips it)
[ "${MF_FLUSH:-1}" = 0 ] || for cfg in 8b_b64_l1024_e4m3 8b_b128_l4096_e4m3; do
    "$DECODELAB" run /tmp/dl_memfloor/$cfg.h5 --variants 'bf16-fast-mma,bf16-hw-stream' --time --max-time-s 1.5 \
        --flush read --out /tmp/flush.h5 > /dev/null 2>&1 || status=1
done
cp /tmp/flush.csv "$OUT/flushread.csv" 2>/dev/null
# 1. planted bug: the nasty matrix with the planted binary must fail (MF_PLANT=0 skips it)
if [ "${MF_PLANT:-1}" != 0 ]; then
DECODELAB=/tmp/decodelab-plant DL_WORKDIR=/tmp/plant DL_SPLITS=1 DL_SKIP_SANITIZER=1 DL_SEED=5 \
    bash tests/gpu/nasty_matrix.sh > /tmp/plant.log 2>&1
prc=$?
{ echo "planted (skip_last_token) test-gpu exit: $prc"; grep -E "^verdicts|FAILED|passed" /tmp/plant.log
  grep -c "FAIL" /tmp/plant/summary.txt | sed 's/^/summary lines with a FAIL: /'; } > "$OUT/plant.txt"
[ $prc -eq 1 ] || status=1
fi
# 2. racecheck on the streaming kernels (case 25 of the test-gpu run: pages 8, group 16)
if [ -f /tmp/tg/case25.h5 ]; then
compute-sanitizer --tool racecheck --error-exitcode 99 "$DECODELAB" run /tmp/tg/case25.h5 --variants '*-stream,*-wgmma' \
    > /tmp/race.log 2>&1; rrc=$?
{ echo "racecheck exit $rrc"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|PASS|FAIL" /tmp/race.log; } > "$OUT/race.txt"
[ $rrc -eq 0 ] || [ $rrc -eq 1 ] || status=1 # 1: a FAIL verdict (test-gpu reports it); 99: a race
fi
tar czf "$OUT/logs.tgz" -C /tmp plant.log race.log mf.log mf 2>/dev/null
cat "$OUT/plant.txt" "$OUT/race.txt" 2>/dev/null; cat /tmp/mf/memfloor_table.txt
exit $status

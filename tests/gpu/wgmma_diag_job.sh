#!/usr/bin/env bash
# wgmma_diag_job.sh - one GPU-machine call for issue 12: why do the wgmma kernels not match the fp8wg
# model at rounding level? (1) `decodelab probe --wgmma-acc`: single wgmmas, chains of 1-8 wgmmas from C
# or from scale-d = 0, and random full matrices with one alignment per element or shared by blocks of
# rows x columns; (2) the two wgmma variants on three small golden files (lengths 1: QK alone; 64: one
# tile; 1024: many tiles), their outputs saved as candidate files (`run --save-outputs`), so that other
# models can judge them here, without a GPU: regenerate the same golden files with the commands in
# $OUT/golden_commands.txt (deterministic) and run `decodelab compare G.h5 CAND.h5 --model M`.
#   run(command="OUT=$OUT bash tests/gpu/wgmma_diag_job.sh", carry=[".carry"])
# Expects .carry/decodelab.gz. Writes $OUT/wgmma_acc_probe2.txt, $OUT/runs.txt, $OUT/candidates.tgz,
# $OUT/golden_commands.txt; prints the probe's summary lines and the run tables.
set -uo pipefail
: "${OUT:?}"
gunzip -c .carry/decodelab.gz > /tmp/dl && chmod +x /tmp/dl
/tmp/dl probe --wgmma-acc > "$OUT/wgmma_acc_probe2.txt" 2>&1
echo "probe exit $?"
grep '^# ' "$OUT/wgmma_acc_probe2.txt" | grep -v '^# D = \|^# model = '
ONES=$(printf '1,%.0s' $(seq 1 64)); ONES=${ONES%,}
T64=$(printf '64,%.0s' $(seq 1 16)); T64=${T64%,}
M="--models exact,fp8,fp8wg,fp8accwg"
cat > "$OUT/golden_commands.txt" <<CMDS
decodelab golden --preset llama3-8b --seq-len $ONES --q-dtype bf16 --kv-dtype e4m3 --distribution outlier --seed 104 $M --out len1.h5
decodelab golden --preset llama3-8b --seq-len $T64 --q-dtype bf16 --kv-dtype e4m3 --seed 105 $M --out len64.h5
decodelab golden --preset llama3-8b --batch 4 --seq-len 1024 --q-dtype bf16 --kv-dtype e4m3 --seed 101 $M --out l1024.h5
CMDS
mkdir -p /tmp/wd && cd /tmp/wd || exit 2
sed 's|^decodelab|/tmp/dl|' "$OUT/golden_commands.txt" | while read -r cmd; do $cmd > /dev/null || echo "failed: $cmd"; done
: > "$OUT/runs.txt"
for f in len1 len64 l1024; do
    mkdir -p "cand/$f"
    echo "== $f" >> "$OUT/runs.txt"
    /tmp/dl run "$f.h5" --variants 'fp8*-wgmma,fp8-none-mma' --splits 1 --save-outputs "cand/$f" >> "$OUT/runs.txt" 2>&1
done
tar czf "$OUT/candidates.tgz" cand
sed -n '/^== \|^variant\|wgmma\|fp8-none-mma\|limits\|judged/p' "$OUT/runs.txt"

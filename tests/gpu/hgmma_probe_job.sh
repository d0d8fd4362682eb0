#!/usr/bin/env bash
# hgmma_probe_job.sh - one GPU-machine call for issue 12: what does the Hopper BF16 warpgroup MMA
# (HGMMA, wgmma m64n8k16 f32.bf16.bf16, as bf16-fast-wgmma issues it) do with its sums? Runs
# `decodelab probe --hgmma-acc` (gpu/wgmma_acc_probe.cu; cases and model family in gpu/probes.c):
# ~700 single-wgmma cases (exponent gaps, truncation or rounding, the role of C, cancellation,
# subnormal operands and results), the same as chains of 2 and 4, 5120 random chains of 1..16
# wgmmas and 64 random full matrices, each result against dl_hgmma_model for several fraction-bit
# counts and result roundings, a sequential FP32 sum and the exact sum rounded once.
#   run(command="gunzip -c .carry/decodelab.gz > /tmp/dl && chmod +x /tmp/dl && DECODELAB=/tmp/dl OUT=$OUT bash tests/gpu/hgmma_probe_job.sh", carry=[".carry"])
# Then the FP8 probe (--wgmma-acc) once more, which shares the kernel bodies.
# DECODELAB: the binary (default build-static/decodelab). Writes $OUT/hgmma_acc_probe.txt and
# $OUT/wgmma_acc_probe.txt (the whole tables; commit them under results/) and prints the GPU, the chain/random/full lines and, last, the
# '# summary' lines (one per model: how many cases, chains and outputs it matches bitwise).
# Exit status: the probe's (0 ok; 1 a launch failed or a launch's 512 outputs disagree).
set -uo pipefail
: "${OUT:?}"
BIN=${DECODELAB:-build-static/decodelab}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not available"
"$BIN" probe --hgmma-acc > "$OUT/hgmma_acc_probe.txt" 2>&1
rc=$?
echo "probe --hgmma-acc exit $rc; $(wc -l < "$OUT/hgmma_acc_probe.txt") lines in hgmma_acc_probe.txt"
grep -v '^# summary' "$OUT/hgmma_acc_probe.txt" | grep '^# \(cases\|random\|full\)' | grep -v 'one alignment per' || true
# the shared-alignment alternatives that come closest (one alignment per block of outputs)
grep 'one alignment per' "$OUT/hgmma_acc_probe.txt" | awk '{for (i = 1; i < NF; i++) if ($i == "on") print $(i + 1) "\t" $0}' |
    sort -n | tail -3 | cut -f2- || true
grep -v '^# summary' "$OUT/hgmma_acc_probe.txt" | grep -iE 'error|fail|not built' | head -5 || true
# the FP8 probe again (its kernel body is now shared with the HGMMA one): its '# ' lines must still
# read gpu == model on every case, 512 of 512 per random-chain line, 32768 of 32768 full-matrix outputs
"$BIN" probe --wgmma-acc > "$OUT/wgmma_acc_probe.txt" 2>&1
rc8=$?
echo "probe --wgmma-acc exit $rc8 (as committed in results/h200_2026-12-01d/wgmma_acc_probe3.txt: 290/290 cases, 512/512 per chain line, 32768/32768):"
grep '^# ' "$OUT/wgmma_acc_probe.txt" | grep -v 'one alignment per' | cut -c1-140 || true
if ! grep '^# summary' "$OUT/hgmma_acc_probe.txt"; then
    echo "# summary: none (the probe did not finish); hgmma_acc_probe.txt begins:"
    head -5 "$OUT/hgmma_acc_probe.txt"
fi
[ $rc -eq 0 ] && rc=$rc8
exit $rc

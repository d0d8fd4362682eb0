#!/usr/bin/env bash
# stream_diag_job.sh - one GPU-machine call (issue 10, 2026-12-01 session 2): `make test-gpu`
# with this tree's binary, then a diagnosis of the streaming kernel at llama3-8B B128 L4096
# e4m3: the kernel as is, its memory path alone (DL_STREAM_DRY=1: consumers release every stage
# unread), the polling producer (DL_STREAM_POLL=1), one CTA per SM; on NHD, HND, HND with
# 64-token pages, and one KV head (a (page, head) slice = the whole page).
# Expects .carry/decodelab.gz. Writes test-gpu.log, diag_table.txt, diag.csv, logs.tgz to $OUT.
set -uo pipefail
: "${OUT:?}"
gunzip -c .carry/decodelab.gz > /tmp/dl && chmod +x /tmp/dl
export DECODELAB=/tmp/dl
status=0
DL_SEED=${DL_SEED:-20261201} DL_WORKDIR=/tmp/tg bash tests/gpu/nasty_matrix.sh > "$OUT/test-gpu.log" 2>&1 || status=1
tail -3 "$OUT/test-gpu.log"
OUT=/tmp/diag VARIANTS=bf16-hw-stream MAXT=${MAXT:-1.0} \
  CONFIGS="${CONFIGS:-8b_b128_l4096_e4m3 8b_b128_l4096_e4m3_hnd 8b_b128_l4096_e4m3_hnd_p64 kvh1_b1024_l4096_e4m3}" \
  KNOBS="${KNOBS:-- DL_STREAM_DRY=1 DL_STREAM_POLL=1 DL_STREAM_CTAS_PER_SM=1 DL_STREAM_DRY=1,DL_STREAM_CTAS_PER_SM=1}" \
  bash tests/gpu/memfloor.sh > /tmp/diag.log 2>&1 || status=1
cp /tmp/diag/memfloor_table.txt "$OUT/diag_table.txt"; cp /tmp/diag/memfloor.csv "$OUT/diag.csv"
tar czf "$OUT/logs.tgz" -C /tmp diag.log diag tg/summary.txt 2>/dev/null
cat "$OUT/diag_table.txt"
exit $status

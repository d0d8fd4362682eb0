#!/usr/bin/env bash
# walk_job.sh - one device call (issue 10, 2026-12-06e): the copy probe's walk. Whole-page boxes against one-head
# boxes issued back to back (DL_STREAM_PROBE_WALK=1, as the tile rings' warps of one run ask for a page), two-head
# boxes back to back and one-head boxes walked a run apart, alternated, at B4 L32768, B1 L32768 and B64 L1024 e4m3;
# the older diagnosis build's two rows at B4 beside. Needs .carry/decodelab-diag71.xz (a `make DIAG=1` build with
# DL_STREAM_PROBE_WALK) and .carry/decodelab-diag.xz. Environment: OUT (required). Prints the rows last
# (the probe writes no outputs: its rows FAIL by design, timed with --time-failed).
set -uo pipefail
: "${OUT:?set OUT}"
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "card: $card"; date -u
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/card.txt"
bash tests/gpu/unpack_carry.sh .carry >/dev/null || exit 2
rm -rf /tmp/steps
K='DL_STREAM_DRY=4 DL_STREAM_DRY=4,DL_STREAM_BOXHEADS=1,DL_STREAM_PROBE_WALK=1 DL_STREAM_DRY=4,DL_STREAM_BOXHEADS=2,DL_STREAM_PROBE_WALK=1 DL_STREAM_DRY=4,DL_STREAM_BOXHEADS=1'
STEPS="decodelab-diag71|8b_b4_l32768_e4m3|$K $K|bf16-hw-stream"
STEPS="$STEPS;decodelab-diag|8b_b4_l32768_e4m3|DL_STREAM_DRY=4 DL_STREAM_DRY=4,DL_STREAM_BOXHEADS=1|bf16-hw-stream"
STEPS="$STEPS;decodelab-diag71|8b_b1_l32768_e4m3|$K $K|bf16-hw-stream"
STEPS="$STEPS;decodelab-diag71|8b_b64_l1024_e4m3|$K $K|bf16-hw-stream"
STEPS="$STEPS" OUT=$OUT timeout 240 bash tests/gpu/steps_job.sh | tail -34

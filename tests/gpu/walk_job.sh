#!/usr/bin/env bash
# walk_job.sh - one device call (issue 10, 2026-12-06e): the copy probe's walk. Whole-page boxes against one-head
# boxes issued back to back (DL_STREAM_PROBE_WALK=1, as the tile rings' warps of one run ask for a page), two-head
# boxes back to back and one-head boxes walked a run apart, alternated, at B4 L32768, B1 L32768 and B64 L1024 e4m3;
# the older diagnosis build's two rows at B4 beside. Needs .carry/decodelab-diag71.xz (a `make DIAG=1` build with
# DL_STREAM_PROBE_WALK) and .carry/decodelab-diag.xz. Environment: OUT (required). Prints the rows last
# (the probe writes no outputs: its rows FAIL by design, timed with --time-failed).
source tests/gpu/job_start.sh # the card, .carry unpacked, WALK_K
STEPS="decodelab-diag71|8b_b4_l32768_e4m3|$WALK_K $WALK_K|bf16-hw-stream"
STEPS="$STEPS;decodelab-diag|8b_b4_l32768_e4m3|DL_STREAM_DRY=4 DL_STREAM_DRY=4,DL_STREAM_BOXHEADS=1|bf16-hw-stream"
STEPS="$STEPS;decodelab-diag71|8b_b1_l32768_e4m3|$WALK_K $WALK_K|bf16-hw-stream"
STEPS="$STEPS;decodelab-diag71|8b_b64_l1024_e4m3|$WALK_K $WALK_K|bf16-hw-stream"
STEPS="$STEPS" OUT=$OUT timeout 240 bash tests/gpu/steps_job.sh | tail -34

#!/usr/bin/env bash
# cap_standalone_job.sh - one device call (issue 10, thirty-eighth session): DL_STREAM_CHAIN_CAP=2, every launch of
# the warp-consumer stream kernels held to its plan's CTAs an SM by padded shared memory (gpu/dl_plan.h
# dl_plan_chain_pad), standalone, against the default 1 (only a layer chained with PDL held). The question: does an
# idle GPU place a plan with room for more CTAs an SM evenly? (The thirty-seventh session's diagnosis build, B1
# L32768 on the two-head stage, 396 CTAs at three an SM where four fit: 43.62-43.65 us unpadded, 43.42 padded, H100.)
# Rows whose schedule ends in `:cap<N>` were held; the others are a null pair (the plan fills what fits).
# Needs .carry/decodelab.xz (a build with the knob's value 2, from 2026-12-07's thirty-eighth session). Environment:
# OUT (required); CONFIGS (memfloor_configs.sh names, in priority order); VARIANTS (default bf16-hw-stream); STEPS_S
# (the steps' time limit, default 400). Prints the rows last (tests/gpu/steps_job.sh).
set -uo pipefail
: "${OUT:?set OUT}"
source tests/gpu/job_start.sh # the card, .carry unpacked
CONFIGS=${CONFIGS:-"8b_b1_l32768_e4m3 8b_b4_l32768_e4m3 g16_b4_l32768_e4m3 8b_b8_l16384_e4m3 8b_b16_l8192_e4m3 8b_b128_l4096_e4m3 70b_b64_l4096_e4m3"}
K='DL_STREAM_CHAIN_CAP=1 DL_STREAM_CHAIN_CAP=2 DL_STREAM_CHAIN_CAP=1 DL_STREAM_CHAIN_CAP=2'
STEPS=
for c in $CONFIGS; do STEPS="${STEPS:+$STEPS;}decodelab|$c|$K|${VARIANTS:-bf16-hw-stream}"; done
STEPS="$STEPS" OUT=$OUT timeout "${STEPS_S:-400}" bash tests/gpu/steps_job.sh | tail -80

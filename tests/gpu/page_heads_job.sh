#!/usr/bin/env bash
# page_heads_job.sh - one device call (issue 10, attempt #70): the page stage at two heads a stage against main.
# Steps, in priority order (tests/gpu/steps_job.sh; results packed after each, the rows printed last):
#   1. the two-head build (decodelab-ph2: make static STREAM_PAGE_HEADS=2) at B4 L32768, bf16-hw-stream: its default
#      (the tile rings there, the same code as main's) alternated with DL_STREAM_STAGE=page (the two-head page
#      stage), both PASS-judged against the golden outputs;
#   2. the copy probe's walk at B4 L32768 from the clean diagnosis build (whole-page, one-head and two-head boxes
#      back to back, one-head a run apart), where .carry/decodelab-diag71.xz is carried (WALK=0 skips it);
#   3. step 1's pair at B64 L1024 e4m3, B1 L32768 and the 70B shape;
#   4. B128 L4096 e4m3, where main's bf16-hw-stream takes the 8-head page stage: main (decodelab) and the two-head
#      build alternated by steps;
#   5. bf16-cast-stream and bf16-fast-stream from the two-head build at B64 L1024 and the 70B shape (their default
#      takes the page stage), PASS-judged and timed beside main's.
# Needs .carry/decodelab.xz (main) and .carry/decodelab-ph2.xz. Environment: OUT (required); PRE_STEPS (steps_job.sh
# steps run first, e.g. a diagnosis on another carried binary, so that one call runs both in one table).
source tests/gpu/job_start.sh # the card, .carry unpacked, WALK_K
P='- DL_STREAM_STAGE=page - DL_STREAM_STAGE=page'
STEPS="${PRE_STEPS:+$PRE_STEPS;}decodelab-ph2|8b_b4_l32768_e4m3|$P|bf16-hw-stream"
if [ "${WALK:-1}" = 1 ] && [ -f .carry/decodelab-diag71.gz ]; then
    STEPS="$STEPS;decodelab-diag71|8b_b4_l32768_e4m3|$WALK_K $WALK_K|bf16-hw-stream"
fi
STEPS="$STEPS;decodelab-ph2|8b_b64_l1024_e4m3|$P|bf16-hw-stream"
STEPS="$STEPS;decodelab-ph2|8b_b1_l32768_e4m3|$P|bf16-hw-stream"
STEPS="$STEPS;decodelab-ph2|70b_b64_l4096_e4m3|$P|bf16-hw-stream"
STEPS="$STEPS;decodelab|8b_b128_l4096_e4m3|-|bf16-hw-stream;decodelab-ph2|8b_b128_l4096_e4m3|-|bf16-hw-stream"
STEPS="$STEPS;decodelab|8b_b128_l4096_e4m3|-|bf16-hw-stream;decodelab-ph2|8b_b128_l4096_e4m3|-|bf16-hw-stream"
STEPS="$STEPS;decodelab|8b_b64_l1024_e4m3|-|bf16-cast-stream,bf16-fast-stream;decodelab-ph2|8b_b64_l1024_e4m3|-|bf16-cast-stream,bf16-fast-stream"
STEPS="$STEPS;decodelab|70b_b64_l4096_e4m3|-|bf16-cast-stream,bf16-fast-stream;decodelab-ph2|70b_b64_l4096_e4m3|-|bf16-cast-stream,bf16-fast-stream"
STEPS="$STEPS" OUT=$OUT timeout "${STEPS_S:-500}" bash tests/gpu/steps_job.sh | tail -60

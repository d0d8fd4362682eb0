#!/usr/bin/env bash
# claim_job.sh - one device call (issue 10, attempt #71): a split task's tiles claimed at run time (make
# STREAM_CLAIM=1, DL_STREAM_CLAIM) against the plan's fixed segments, in one binary, alternated. Steps, in priority
# order (tests/gpu/steps_job.sh; results packed after each, the rows printed last):
#   1. B4 L32768 (the merge kernel: 16-17 segments a task), bf16-hw-stream: off / DL_STREAM_CLAIM=2, twice, then
#      claims of 1 and 4 tiles, and owners' claims without thieves (DL_STREAM_CLAIM_MIN=0: the claims' own cost);
#   2. B1 L32768 (~99 segments a task): off / 2, twice;
#   3. B64 L1024 e4m3 and the 70B shape (tasks merged by ticket, 1-2 segments a task): off / 2;
#   4. the three policies (cast, fast, hw) at B4: off / 2;
#   5. main's build at B4 (decodelab), the reference row.
# Every row PASS-judged against the golden outputs (the claims move a segment's tokens, the model keeps the plan's
# cut: the merge's rounding alone differs). Needs .carry/decodelab-a71.xz (make static BUILD=build-a71
# STREAM_CLAIM=1) and .carry/decodelab.xz (main). Environment: OUT (required); PRE_STEPS (steps run first);
# STEPS_S (the steps' time limit, default 400).
source tests/gpu/job_start.sh # the card, .carry unpacked
P='- DL_STREAM_CLAIM=2 - DL_STREAM_CLAIM=2'
STEPS="${PRE_STEPS:+$PRE_STEPS;}decodelab-a71|8b_b4_l32768_e4m3|$P DL_STREAM_CLAIM=1 DL_STREAM_CLAIM=4 DL_STREAM_CLAIM=2,DL_STREAM_CLAIM_MIN=0|bf16-hw-stream"
STEPS="$STEPS;decodelab-a71|8b_b1_l32768_e4m3|$P|bf16-hw-stream"
STEPS="$STEPS;decodelab-a71|8b_b64_l1024_e4m3|- DL_STREAM_CLAIM=2|bf16-hw-stream"
STEPS="$STEPS;decodelab-a71|70b_b64_l4096_e4m3|- DL_STREAM_CLAIM=2|bf16-hw-stream"
STEPS="$STEPS;decodelab-a71|8b_b4_l32768_e4m3|- DL_STREAM_CLAIM=2|bf16-cast-stream,bf16-fast-stream"
STEPS="$STEPS;decodelab|8b_b4_l32768_e4m3|-|bf16-hw-stream"
STEPS="$STEPS" OUT=$OUT timeout "${STEPS_S:-400}" bash tests/gpu/steps_job.sh | tail -40

#!/usr/bin/env bash
# page_heads_job.sh - one device call (issue 10, attempt #70 as a policy): bf16-hw-stream's stage rule, one binary.
# DL_STREAM_STAGE=auto with the rule before 2026-12-07 (DL_STREAM_HW_PAGE=8: the 8-head page stage where runs are long
# and the plan merges by ticket, the tile rings elsewhere) alternated with the default since (DL_STREAM_HW_PAGE=2: the
# two-head page stage where the plan needs the merge kernel or runs are long; both named, so the pairs mean the same
# whatever the build's default), each row PASS-judged against the golden outputs; the table's last column names
# the stage and merge each row ran (`page2`, `page`, `tile`). Steps, in priority order (tests/gpu/steps_job.sh;
# results packed after each, the rows printed last):
#   1. B1 L32768 and B4 L32768 e4m3 (the two-head rule takes page2: merge-kernel plans);
#   2. B64 L1024 e4m3 (both rules keep the tile rings: short runs merged by ticket) and B128 L4096 (page2 in place of
#      page);
#   3. where the two-head rule was not measured: B8 L16384, B16 L8192 and B256 L4096 e4m3;
#   4. the 70B shape (group 8: the tile rings under both), and the cast and fast policies at B64 L1024 (page);
#   5. B1 L32768 on page2 with fewer, longer segments (DL_STREAM_MIN_TILES=8, DL_STREAM_MAX_SEGS=64) and with two
#      merge CTAs a query head (DL_STREAM_MERGE_SPLIT=2; auto's plans there say `kernel4`: four): the 1.5x-FlashInfer target there
#      needs 32.0 us on the H200, ~0.9 us under the two-head stage's 32.8-32.9 (2026-12-06i).
# Needs .carry/decodelab.xz (the build under test). Environment: OUT (required); PRE_STEPS (steps_job.sh steps
# run first); BIN (the carried binary's name, default decodelab); STEPS_S (the steps' time limit, default 500);
# B1_ONLY=1: step 5's four B1 settings alone, alternated twice (~100 s on an H100: a pre-screen on any card).
case "${B1_ONLY:-0}" in 0|1) ;; *) echo "page_heads_job: B1_ONLY must be 0 or 1, not '$B1_ONLY'" >&2; exit 2 ;; esac
source tests/gpu/job_start.sh # the card, .carry unpacked, WALK_K
B=${BIN:-decodelab}
B1K='DL_STREAM_HW_PAGE=2,DL_STREAM_MIN_TILES=8 DL_STREAM_HW_PAGE=2,DL_STREAM_MAX_SEGS=64 DL_STREAM_HW_PAGE=2,DL_STREAM_MERGE_SPLIT=2 DL_STREAM_HW_PAGE=2'
if [ "${B1_ONLY:-0}" = 1 ]; then
    STEPS="${PRE_STEPS:+$PRE_STEPS;}$B|8b_b1_l32768_e4m3|$B1K $B1K|bf16-hw-stream"
else
    P='DL_STREAM_HW_PAGE=8 DL_STREAM_HW_PAGE=2 DL_STREAM_HW_PAGE=8 DL_STREAM_HW_PAGE=2'
    STEPS="${PRE_STEPS:+$PRE_STEPS;}$B|8b_b1_l32768_e4m3|$P|bf16-hw-stream"
    for c in 8b_b4_l32768_e4m3 8b_b64_l1024_e4m3 8b_b128_l4096_e4m3 8b_b8_l16384_e4m3 8b_b16_l8192_e4m3 8b_b256_l4096_e4m3; do
        STEPS="$STEPS;$B|$c|$P|bf16-hw-stream"
    done
    STEPS="$STEPS;$B|70b_b64_l4096_e4m3|DL_STREAM_HW_PAGE=8 DL_STREAM_HW_PAGE=2|bf16-hw-stream"
    STEPS="$STEPS;$B|8b_b64_l1024_e4m3|DL_STREAM_HW_PAGE=8 DL_STREAM_HW_PAGE=2|bf16-cast-stream,bf16-fast-stream"
    STEPS="$STEPS;$B|8b_b1_l32768_e4m3|$B1K|bf16-hw-stream"
fi
STEPS="$STEPS" OUT=$OUT timeout "${STEPS_S:-500}" bash tests/gpu/steps_job.sh | tail -80

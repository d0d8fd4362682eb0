#!/usr/bin/env bash
# claim_job.sh - one device call (issue 10, attempt #71): a split task's tiles claimed at run time (make
# STREAM_CLAIM=1, DL_STREAM_CLAIM) against the plan's fixed segments, in one binary, alternated. Steps, in priority
# order (tests/gpu/steps_job.sh; results packed after each, the rows printed last), after a smoke run (below):
#   1. B4 L32768 (the merge kernel: 16-17 segments a task), bf16-hw-stream: off / DL_STREAM_CLAIM=2, twice, then
#      8 own tiles (DL_STREAM_CLAIM_OWN; default 4), claims of 4 tiles, and owners' claims without thieves
#      (DL_STREAM_CLAIM_MIN=0: the claims' own cost);
#   2. B1 L32768 (~99 segments a task): off / 2, twice;
#   3. B64 L1024 e4m3 and the 70B shape (tasks merged by ticket, 1-2 segments a task): off / 2;
#   4. the cast and fast policies at B4 on the tile rings (their default there is the page stage, which takes no
#      claims): off / 2;
#   5. main's build at B4 (decodelab), the reference row.
# Every row PASS-judged against the golden outputs (the claims move a segment's tokens, the model keeps the plan's
# cut: the merge's rounding alone differs). Needs .carry/decodelab-a71.xz (make static BUILD=build-a71
# STREAM_CLAIM=1) and .carry/decodelab.xz (main). Environment: OUT (required); PRE_STEPS (steps run first);
# STEPS_S (the steps' time limit, default 400).
source tests/gpu/job_start.sh # the card, .carry unpacked
# 0. a smoke run first, under a time limit: a small split case (B2 L5000, 16 tasks over the plan's warps) with claims
#    and thieves at their most (DL_STREAM_CLAIM_MIN=1), the tile rings for every policy, merged by the kernel and by
#    ticket; a hang or a FAIL stops here
gunzip -c .carry/decodelab-a71.gz > /tmp/a71 && chmod +x /tmp/a71 || exit 2
/tmp/a71 golden --preset llama3-8b --batch 2 --seq-len 5000 --kv-dtype e4m3 --kv-scale absmax-tensor --models exact,bf16 \
    --seed 7 --out /tmp/claim_smoke.h5 > /dev/null || exit 2
for m in kernel ticket; do
    rc=0; DL_STREAM_CLAIM=2 DL_STREAM_CLAIM_MIN=1 DL_STREAM_STAGE=tile DL_STREAM_MERGE=$m timeout 90 /tmp/a71 run /tmp/claim_smoke.h5 \
        --variants 'bf16-*-stream' > "$OUT/smoke_$m.txt" 2>&1 || rc=$?
    echo "== smoke, merge $m: exit $rc"; grep -E 'PASS|FAIL|claim' "$OUT/smoke_$m.txt" | head -8
    [ $rc -eq 0 ] || { echo "claim_job: the smoke run ($m) exited $rc: stopping"; exit 1; }
done
P='- DL_STREAM_CLAIM=2 - DL_STREAM_CLAIM=2'
STEPS="${PRE_STEPS:+$PRE_STEPS;}decodelab-a71|8b_b4_l32768_e4m3|$P DL_STREAM_CLAIM=2,DL_STREAM_CLAIM_OWN=8 DL_STREAM_CLAIM=4 DL_STREAM_CLAIM=2,DL_STREAM_CLAIM_MIN=0|bf16-hw-stream"
STEPS="$STEPS;decodelab-a71|8b_b1_l32768_e4m3|$P|bf16-hw-stream"
STEPS="$STEPS;decodelab-a71|8b_b64_l1024_e4m3|- DL_STREAM_CLAIM=2|bf16-hw-stream"
STEPS="$STEPS;decodelab-a71|70b_b64_l4096_e4m3|- DL_STREAM_CLAIM=2|bf16-hw-stream"
STEPS="$STEPS;decodelab-a71|8b_b4_l32768_e4m3|DL_STREAM_STAGE=tile DL_STREAM_STAGE=tile,DL_STREAM_CLAIM=2|bf16-cast-stream,bf16-fast-stream"
STEPS="$STEPS;decodelab|8b_b4_l32768_e4m3|-|bf16-hw-stream"
STEPS="$STEPS" OUT=$OUT timeout "${STEPS_S:-400}" bash tests/gpu/steps_job.sh | tail -40

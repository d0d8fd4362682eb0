#!/usr/bin/env bash
# queue_job.sh - gpu/NOTES.md's device queue (issue 10) as one call, cut to the time it is given: on an H200, item 1
# (the two-head rule's timing, tests/gpu/page_heads_job.sh) and then, if TIME_S leaves 200 s, item 2 (the layer chain's
# six configurations, tests/gpu/chain_job.sh); on any other card the H100-able work: the standalone cap's configurations
# not yet run (tests/gpu/cap_standalone_job.sh at B8 L16384, B16 L8192, B128 L4096 and the 70B shape). A call named
# `nvidia-h200` may bring an H100: either way the call measures something. Needs .carry/decodelab.xz (main's build).
# Environment: OUT (required); TIME_S (this job's own limit in s, default 540: set it to the device budget left less
# ~100 s for the machine's start, and the call's timeout above it); ITEMS (the H200's items, default '1 2'; '2' on a
# second, warm call: item 1 takes ~430 s of the default 540). Results under $OUT/policy, $OUT/chain.tgz or
# $OUT/capall; each step prints its table last.
set -uo pipefail
: "${OUT:?set OUT}"; mkdir -p "$OUT"
TIME_S=${TIME_S:-540}
case $TIME_S in '' | *[!0-9]*) echo "queue_job: TIME_S='$TIME_S' is not a whole number of seconds" >&2; exit 2 ;; esac
[ "$TIME_S" -ge 60 ] || { echo "queue_job: TIME_S=$TIME_S leaves no room for a step (60 s at least)" >&2; exit 2; }
ITEMS=${ITEMS:-1 2}
for i in $ITEMS; do case $i in 1 | 2) ;; *) echo "queue_job: ITEMS holds '$i'; the H200's items are 1 and 2" >&2; exit 2 ;; esac; done
has() { case " $ITEMS " in *" $1 "*) return 0 ;; esac; return 1; }
[ -f .carry/decodelab.xz ] || { echo "queue_job: .carry/decodelab.xz missing (copy main's build there first)" >&2; exit 2; }
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "queue_job: card '$card', $TIME_S s ($(date -u +%H:%M:%S) UTC)"
lim() { local n=$((TIME_S - SECONDS - 20)); [ "$n" -gt "$1" ] && n=$1; echo "$n"; } # a step's limit: at most $1
case "$card" in
*H200*)
    if has 1; then
        s=$(lim 400)
        OUT=$OUT/policy STEPS_S=$s timeout $((s + 30)) bash tests/gpu/page_heads_job.sh 2>&1 | tail -60
    fi
    s=$(lim 420)
    if ! has 2; then
        :
    elif [ "$s" -ge 200 ]; then
        bash tests/gpu/unpack_carry.sh .carry > /dev/null && rm -rf /tmp/c
        OUT=/tmp/c CONFIGS='8b_b1_l32768_e4m3 8b_b4_l32768_e4m3 8b_b64_l1024_e4m3 8b_b64_l1024_bf16 70b_b64_l4096_e4m3 8b_b128_l4096_e4m3' \
            VARIANTS='bf16-hw-stream,bf16-cast-stream,bf16-cast-mma' L=8 timeout "$s" bash tests/gpu/chain_job.sh 2>&1 | tail -25
        tar czf "$OUT/chain.tgz" -C /tmp c
    else
        echo "queue_job: $s s left, item 2 (the layer chain) not started"
    fi ;;
*)
    s=$(lim 380)
    CONFIGS="8b_b8_l16384_e4m3 8b_b16_l8192_e4m3 8b_b128_l4096_e4m3 70b_b64_l4096_e4m3" OUT=$OUT/capall STEPS_S=$s \
        timeout $((s + 30)) bash tests/gpu/cap_standalone_job.sh 2>&1 | tail -50 ;;
esac

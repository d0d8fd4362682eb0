#!/usr/bin/env bash
# queue_job.sh - gpu/NOTES.md's device queue (issue 10) as one call, cut to the time it is given: on an H200, item 1
# (the two-head rule's timing, tests/gpu/page_heads_job.sh), then, if TIME_S leaves 200 s, item 2 (the layer chain's
# six configurations, tests/gpu/chain_job.sh), then, if 150 s are left, item 3 (issue 10's "done when" on main's
# build: `make test-gpu`'s script and the sanitizers, tests/gpu/verify_job.sh, both steps at once); on any other card
# the items of OTHER_ITEMS: item 3, and item x (the experiments, tests/gpu/experiments_job.sh: `decodelab experiment
# --full` of each E<n> in EXPS on main's build, as a user runs them). A call named `nvidia-h200` may bring an H100:
# either way the call measures or checks something. Needs .carry/decodelab.xz (main's build), or
# .carry-q/decodelab.xz, which then replaces .carry/ (so the call needs no script of its own: carry .carry-q and run
# this).
# Environment: OUT (required); TIME_S (this job's own limit in s, default 540: set it to the device budget left less
# ~100 s for the machine's start, and the call's timeout above it); ITEMS (the H200's items, default '1 2 3'; '2 3' or
# '3' on a second, warm call: item 1 takes ~430 s of the default 540); OTHER_ITEMS (any other card's, default '3';
# 'x' for the experiments, '3 x' for both in that order; '' for nothing: the call then stops at once there); EXPS (item
# x's experiments, passed on to experiments_job.sh, whose default is all of them, E3 first, in order until the time
# is spent). Results under
# $OUT/policy, $OUT/chain.tgz, $OUT/verify-*.tgz and $OUT/experiments.tgz; each step prints its table or summary last.
# Exit status: 0, or the first item's that failed (its job script's: 1 a FAIL row or sanitizer error, 2 a step that
# could not run, 124 a time limit).
set -uo pipefail
: "${OUT:?set OUT}"
TIME_S=${TIME_S:-540}
case $TIME_S in '' | *[!0-9]*) echo "queue_job: TIME_S='$TIME_S' is not a whole number of seconds" >&2; exit 2 ;; esac
[ "$TIME_S" -ge 60 ] || { echo "queue_job: TIME_S=$TIME_S leaves no room for a step (60 s at least)" >&2; exit 2; }
ITEMS=${ITEMS:-1 2 3}
for i in $ITEMS; do case $i in 1 | 2 | 3) ;; *) echo "queue_job: ITEMS holds '$i'; the items are 1, 2 and 3" >&2; exit 2 ;; esac; done
OTHER_ITEMS=${OTHER_ITEMS-3}
for i in $OTHER_ITEMS; do case $i in 3 | x) ;; *) echo "queue_job: OTHER_ITEMS holds '$i'; another card's items are 3 and x (or '' for none)" >&2; exit 2 ;; esac; done
mkdir -p "$OUT" # only once the settings are known good
has() { case " $ITEMS " in *" $1 "*) return 0 ;; esac; return 1; }
if [ -f .carry-q/decodelab.xz ]; then rm -rf .carry && mkdir -p .carry && cp .carry-q/decodelab.xz .carry/ || exit 2; fi
[ -f .carry/decodelab.xz ] || { echo "queue_job: neither .carry-q/decodelab.xz nor .carry/decodelab.xz (carry main's build)" >&2; exit 2; }
bash tests/gpu/unpack_carry.sh .carry > /dev/null || exit 2 # once: items 2, 3 and x read .carry/decodelab.gz
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "queue_job: card '$card', $TIME_S s ($(date -u +%H:%M:%S) UTC)"
lim() { local n=$((TIME_S - SECONDS - 20)); [ "$n" -gt "$1" ] && n=$1; echo "$n"; } # a step's limit: at most $1
worst=0
note() { [ "$1" -ne 0 ] && echo "queue_job: $2 exited $1" && [ $worst -eq 0 ] && worst=$1; return 0; } # rc, item
verify() { # item 3: test-gpu's script and the sanitizers on main's build, at once, cut to the time left
    local v; v=$(lim 300)
    if [ "$v" -lt 150 ]; then echo "queue_job: $v s left, item 3 (verify) not started"; return; fi
    rm -rf /tmp/verify
    OUT=$OUT PARALLEL=1 STEPS='matrix sanitize' MATRIX_S=$v SANITIZE_S=$v timeout $((v + 20)) bash tests/gpu/verify_job.sh 2>&1 | tail -40
    note $? "item 3 (verify_job.sh)"
}
experiments() { # item x: the experiments as a user runs them (decodelab experiment --full), until the time is spent
    local v; v=$(lim "$TIME_S")
    if [ "$v" -lt 60 ]; then echo "queue_job: $v s left, item x (experiments) not started"; return; fi
    rm -rf /tmp/exp
    OUT=$OUT BUDGET_S=$v timeout $((v + 15)) bash tests/gpu/experiments_job.sh 2>&1 | tail -60
    note $? "item x (experiments_job.sh)"
}
case "$card" in
*H200*)
    if has 1; then
        s=$(lim 400)
        OUT=$OUT/policy STEPS_S=$s timeout $((s + 30)) bash tests/gpu/page_heads_job.sh 2>&1 | tail -60
        note $? "item 1 (page_heads_job.sh)"
    fi
    s=$(lim 420)
    if ! has 2; then
        :
    elif [ "$s" -ge 200 ]; then
        rm -rf /tmp/c
        OUT=/tmp/c CONFIGS='8b_b1_l32768_e4m3 8b_b4_l32768_e4m3 8b_b64_l1024_e4m3 8b_b64_l1024_bf16 70b_b64_l4096_e4m3 8b_b128_l4096_e4m3' \
            VARIANTS='bf16-hw-stream,bf16-cast-stream,bf16-cast-mma' L=8 timeout "$s" bash tests/gpu/chain_job.sh 2>&1 | tail -25
        note $? "item 2 (chain_job.sh)"
        tar czf "$OUT/chain.tgz" -C /tmp c
    else
        echo "queue_job: $s s left, item 2 (the layer chain) not started"
    fi
    if has 3; then verify; fi ;;
*)
    [ -n "$OTHER_ITEMS" ] || echo "queue_job: OTHER_ITEMS is empty: nothing queued for this card"
    for i in $OTHER_ITEMS; do case $i in 3) verify ;; x) experiments ;; esac; done ;;
esac
exit $worst

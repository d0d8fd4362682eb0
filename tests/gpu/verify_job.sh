#!/usr/bin/env bash
# verify_job.sh - one GPU-machine call: issue 10's "done when" on a prebuilt binary. Steps (STEPS, default
# 'matrix sanitize'), each under its own time limit, results packed after each (a call cut short returns
# what ran):
#   matrix    `make test-gpu`'s script whole (DL_STRICT=1, its memcheck step included)
#   sanitize  tests/gpu/sanitize.sh, memcheck and racecheck over the streaming and wgmma variants
#   heads     the same with DL_STREAM_ORDER=heads forced (the plan's heads order and
#             the merge rows it numbers, on cases where 'auto' might keep the tasks order)
#   cluster   the same with DL_STREAM_MERGE=cluster over the streaming variants (issue 10 attempt #61: the tile
#             rings in thread-block clusters that merge their split tasks; a make STREAM_CLUSTER=1 binary)
#   claim     the same with DL_STREAM_CLAIM=2 over the streaming variants (issue 10 attempt #71: a split task's tiles
#             claimed at run time and stolen by its other segments' warps; a make STREAM_CLAIM=1 binary)
#   claimmatrix  the matrix step with DL_STREAM_CLAIM=2 (and DL_STREAM_CLAIM_MIN=1: thieves take a segment's last tile)
# Runs DECODELAB (a binary's path) if set, else .carry/decodelab.gz (tests/gpu/unpack_carry.sh first). Environment:
# OUT (required), DL_SEED
# (default: random, printed by each step), MATRIX_S / SANITIZE_S (time limits, default 330 / 230 s), VERIFY_TMP (its
# work folder, default /tmp/verify).
# PARALLEL=1 runs the steps at the same time (the GPU is shared; these check, they do not time).
# Writes $OUT/verify-STEP.tgz (its log and work folder, no golden files); prints each step's summary last. Exit status:
# 0 when every step exited 0, else the first failing step's (1 a FAIL or sanitizer error, 124 a step's time limit).
set -uo pipefail
: "${OUT:?set OUT}"
T=${VERIFY_TMP:-/tmp/verify}; mkdir -p "$T" "$OUT"
if [ -n "${DECODELAB:-}" ]; then # a binary named (e.g. build-static/decodelab), else the carried one
    [ -x "$DECODELAB" ] || { echo "verify_job: DECODELAB='$DECODELAB' is not an executable file" >&2; exit 2; }
    cp "$DECODELAB" "$T/dl"
else
    [ -f .carry/decodelab.gz ] || { echo "verify_job: .carry/decodelab.gz missing (or set DECODELAB=BINARY)" >&2; exit 2; }
    gunzip -c .carry/decodelab.gz > "$T/dl" && chmod +x "$T/dl"
fi
pack() { # step: its log and work folder, no golden files
    tar czf "$OUT/verify-$1.tgz.part" --exclude='*.h5' -C "$T" "$1.log" "$1" && mv "$OUT/verify-$1.tgz.part" "$OUT/verify-$1.tgz"
}
one() { # step
    echo "== $1 from $SECONDS s"
    case $1 in
      matrix) DECODELAB=$T/dl DL_STRICT=1 DL_WORKDIR=$T/matrix timeout "${MATRIX_S:-330}" bash tests/gpu/nasty_matrix.sh \
                  > "$T/matrix.log" 2>&1 ;;
      sanitize) DECODELAB=$T/dl DL_TOOLS='memcheck racecheck' DL_VARIANTS='*-stream *-wgmma' DL_WORKDIR=$T/sanitize \
                  timeout "${SANITIZE_S:-230}" bash tests/gpu/sanitize.sh > "$T/sanitize.log" 2>&1 ;;
      heads) DECODELAB=$T/dl DL_STREAM_ORDER=heads DL_TOOLS='memcheck racecheck' DL_VARIANTS='*-stream *-wgmma' DL_WORKDIR=$T/heads \
                  timeout "${SANITIZE_S:-230}" bash tests/gpu/sanitize.sh > "$T/heads.log" 2>&1 ;;
      cluster) DECODELAB=$T/dl DL_STREAM_MERGE=cluster DL_TOOLS='memcheck racecheck' DL_VARIANTS='*-stream' \
                  DL_WORKDIR=$T/cluster timeout "${SANITIZE_S:-230}" bash tests/gpu/sanitize.sh > "$T/cluster.log" 2>&1 ;;
      claim) DECODELAB=$T/dl DL_STREAM_CLAIM=2 DL_TOOLS='memcheck racecheck' DL_VARIANTS='*-stream' \
                  DL_WORKDIR=$T/claim timeout "${SANITIZE_S:-230}" bash tests/gpu/sanitize.sh > "$T/claim.log" 2>&1 ;;
      claimmatrix) DECODELAB=$T/dl DL_STREAM_CLAIM=2 DL_STREAM_CLAIM_MIN=1 DL_STRICT=1 DL_WORKDIR=$T/claimmatrix \
                  timeout "${MATRIX_S:-330}" bash tests/gpu/nasty_matrix.sh > "$T/claimmatrix.log" 2>&1 ;;
    esac
    local rc=$?
    echo "$rc" > "$T/$1.rc"
    echo "   exit $rc (124: its time limit)" | tee -a "$T/$1.log"
    echo "== $1 done at $SECONDS s"
    pack "$1"
}
for s in ${STEPS:-matrix sanitize}; do
    case $s in matrix|sanitize|heads|cluster|claim|claimmatrix) ;;
      *) echo "verify_job: unknown step '$s' (matrix, sanitize, heads, cluster, claim, claimmatrix)" >&2; exit 2 ;; esac
done
for s in ${STEPS:-matrix sanitize}; do
    rm -f "$T/$s.rc"
    if [ "${PARALLEL:-0}" = 1 ]; then one "$s" & else one "$s"; fi
done
wait
echo "== summaries"
for s in ${STEPS:-matrix sanitize}; do
    echo "-- $s"
    case $s in
      matrix|claimmatrix) grep -E '^test-gpu: decodelab|^verdicts:|^cluster setting:|^memcheck .*exit [^01]|FAILED|exit [0-9]+$' "$T/$s.log" | tail -8 ;;
      *) tail -22 "$T/$s.log" ;;
    esac
done
worst=0 # the first failing step's exit (a step with no exit recorded was cut off: 124)
for s in ${STEPS:-matrix sanitize}; do
    rc=$(cat "$T/$s.rc" 2> /dev/null || echo 124)
    if [ "$rc" -ne 0 ] && [ "$worst" -eq 0 ]; then worst=$rc; fi
done
echo "verify_job: exit $worst"
exit "$worst"

# job_start.sh - sourced first by a steps_job.sh call's script (walk_job.sh, page_heads_job.sh): names the card (and
# writes $OUT/card.txt), unpacks .carry (tests/gpu/unpack_carry.sh; exits 2 if a file does not), clears the last
# call's /tmp/steps (a warm machine keeps /tmp), and sets WALK_K, the copy probe's walk knobs (whole-page boxes,
# one-head and two-head boxes back to back, one-head boxes a run apart; a DIAG=1 build's DL_STREAM_PROBE_WALK).
set -uo pipefail
: "${OUT:?set OUT}"
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "card: $card"; date -u
mkdir -p "$OUT"; nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/card.txt"
bash tests/gpu/unpack_carry.sh .carry >/dev/null || exit 2
rm -rf /tmp/steps
WALK_K='DL_STREAM_DRY=4 DL_STREAM_DRY=4,DL_STREAM_BOXHEADS=1,DL_STREAM_PROBE_WALK=1 DL_STREAM_DRY=4,DL_STREAM_BOXHEADS=2,DL_STREAM_PROBE_WALK=1 DL_STREAM_DRY=4,DL_STREAM_BOXHEADS=1'

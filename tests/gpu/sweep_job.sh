#!/usr/bin/env bash
# sweep_job.sh - one GPU-machine call for issue 15: an experiment's sweep in one piece on the first GPU, then
# as N shards through experiments/local_sweep.sh on every GPU nvidia-smi lists (two GPUs and N = 2: both at
# once; one GPU: the shards in turn), merged, and compared with tests/sweep_compare.py --measured (the same
# rows but for the measured columns, the same verdicts); prints both wall times and their ratio last, beside the
# best ratio the shards' points allow (E6's 5 points on 2 GPUs: 3 of 5 on one of them, 0.6; E5's 12: 0.5).
# The golden files and CPU models come first, in a run of their own with no GPU visible (--full), so that
# neither timed run counts making them (both read the one cache).
# Environment: OUT (required), XP (default experiments/E6_group_sweep.cfg), N (default 2), DECODELAB (default
# .carry/decodelab.gz unpacked by tests/gpu/unpack_carry.sh, else build/decodelab). Writes $OUT/sweep.tgz (the
# one-piece and merged results, the shards' logs; no golden file) and $OUT/sweep_summary.txt. Exit 0: the tables
# match; 1: they differ or a run failed (the summary says which); 2: a bad XP or N, no binary or no GPU.
set -uo pipefail
: "${OUT:?set OUT}"
XP=${XP:-experiments/E6_group_sweep.cfg} N=${N:-2}
[ -f "$XP" ] || { echo "sweep_job: XP: '$XP' is not a file (an experiments/E*.cfg)" >&2; exit 2; }
case "$N" in '' | *[!0-9]* | 0) echo "sweep_job: N: '$N' is not a number of shards (1 or more)" >&2; exit 2;; esac
T=/tmp/sweep_job; rm -rf "$T"; mkdir -p "$T" "$OUT"
if [ -n "${DECODELAB:-}" ]; then BIN=$DECODELAB
elif [ -f .carry/decodelab.gz ]; then gunzip -c .carry/decodelab.gz > "$T/dl" && chmod +x "$T/dl" && BIN=$T/dl
else BIN=build/decodelab; fi
[ -x "$BIN" ] || { echo "sweep_job: no decodelab binary ($BIN)" >&2; exit 2; }
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr -d ' ' | paste -sd, -)
[ -n "$gpus" ] || { echo "sweep_job: nvidia-smi lists no GPU" >&2; exit 2; }
first=${gpus%%,*}
S=$T/summary.txt
{ echo "sweep_job: $XP, $N shards, GPUs $gpus: $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c |
    sed 's/^ *//' | paste -sd';' -), $(date -u +%FT%TZ)"; } | tee "$S"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
pack() { tar czf "$OUT/sweep.tgz.part" --exclude='*.h5' --exclude=cache --exclude=dl -C /tmp sweep_job &&
    mv "$OUT/sweep.tgz.part" "$OUT/sweep.tgz"; cp "$S" "$OUT/sweep_summary.txt"; }

t0=$(now)
CUDA_VISIBLE_DEVICES= "$BIN" experiment "$XP" --full --out "$T/cpu" --cache "$T/cache" > "$T/cpu.log" 2>&1 ||
    { echo "sweep_job: the CPU steps failed (exit $?): $(tail -n 2 "$T/cpu.log")" | tee -a "$S"; pack; exit 1; }
echo "golden files and CPU models (no GPU): $(secs "$t0" "$(now)") s" | tee -a "$S"

t0=$(now)
CUDA_VISIBLE_DEVICES=$first "$BIN" experiment "$XP" --out "$T/one" --cache "$T/cache" > "$T/one.log" 2>&1 ||
    { echo "sweep_job: the one-piece run failed (exit $?): $(tail -n 2 "$T/one.log")" | tee -a "$S"; pack; exit 1; }
one=$(secs "$t0" "$(now)")
echo "one piece on GPU $first: $one s wall" | tee -a "$S"
pack

t0=$(now)
DECODELAB=$BIN DL_SWEEP_GPUS=$gpus DL_SWEEP_OUT="$T/shards" DL_SWEEP_MERGED="$T/merged" DL_SWEEP_CACHE="$T/cache" \
    experiments/local_sweep.sh "$XP" "$N" > "$T/sharded.log" 2>&1
rc=$?
sharded=$(secs "$t0" "$(now)")
grep -E '^(local_sweep|shards|shard [0-9]|merge)' "$T/sharded.log" | tee -a "$S"
[ "$rc" = 0 ] || { echo "sweep_job: local_sweep.sh exited $rc: $(tail -n 3 "$T/sharded.log")" | tee -a "$S"; pack; exit 1; }
echo "$N shards on GPUs $gpus, merged: $sharded s wall (the script's own start and merge included)" | tee -a "$S"

python3 tests/sweep_compare.py --measured issue15 "$T/one" "$T/merged" 2>&1 | tee -a "$S"
same=${PIPESTATUS[0]}
# the best ratio the shards' points allow (points cost alike): the most points a lane runs over all points
ideal=$(python3 - "$T/shards" "$N" "$(echo "$gpus" | tr ',' '\n' | wc -l)" <<'PY'
import csv, glob, os, sys
d, n, g = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pts = [len({r["golden_path"] for r in csv.DictReader(open(os.path.join(d, f"shard-{k}-of-{n}", "results.csv")))})
       for k in range(n)]
lanes = min(g, n)
print(f"{max(sum(pts[k::lanes]) for k in range(lanes)) / sum(pts):.3f} (points by shard {pts}, {lanes} at once)")
PY
)
echo "wall: one piece $one s, sharded $sharded s, ratio $(awk -v a="$sharded" -v b="$one" 'BEGIN { printf "%.3f", a / b }'); by points at best $ideal" |
    tee -a "$S"
pack
exit "$same"

#!/bin/bash
# experiments/slurm_sweep.sh - one experiment's sweep spread over the nodes of a Slurm cluster as a job
# array: array task K runs shard K of N (`decodelab experiment FILE --shard K/N`, the sweep points i with
# i mod N = K, golden files included), each on one GPU; a merge job that starts when every task ended
# well combines the shards and writes the report (`decodelab experiment FILE --merge ...`), the same
# rows and verdicts as the sweep run in one piece (experiments/README.md, "Sharded sweeps").
#
#SBATCH --job-name=decodelab-sweep
#SBATCH --array=0-3
#SBATCH --gres=gpu:1
#SBATCH --output=slurm-%x-%A_%a.out
#
# usage (from the repository root, on a filesystem every node sees):
#   experiments/slurm_sweep.sh FILE.cfg N [FLAGS]     submit the N tasks (--array=0-(N-1), N in 1..4096) and the merge job
#                                                     (--dependency=afterok on the array); prints both job ids
#   sbatch --array=0-(N-1) experiments/slurm_sweep.sh FILE.cfg N [FLAGS]   the array alone (N must match it)
#   experiments/slurm_sweep.sh --merge FILE.cfg N     merge by hand, once every shard is done
# FLAGS are passed to every shard (e.g. --full, --reduced, --binary PATH).
# Rerun (resume) tasks that failed or were cancelled: DL_SWEEP_TASKS=1,5 experiments/slurm_sweep.sh FILE.cfg N
# submits only those tasks, and a new merge job after them. Every task runs with --resume: a task killed
# part-way loses nothing it completed and does nothing twice when it runs again.
#
# Environment:
#   DECODELAB       the binary (default build/decodelab; on a GPU cluster `make static` builds one to carry)
#   DL_SWEEP_OUT    where the shards go (default results/<name>/shards: DIR/shard-K-of-N)
#   DL_SWEEP_MERGED where the merged results and report go (default results/<name>)
#   DL_SWEEP_CACHE  the golden-file cache (default build/golden-cache); shared by all tasks
#   DL_SWEEP_TASKS  submit mode: which array indices to submit (default 0-(N-1))
#   DL_SBATCH_ARGS  submit mode: extra sbatch options for every job (partition, account, time, --output ...)
# Exit status: that of `decodelab experiment` (0 done, 2 bad input or a step that failed, 3 --stop-after).
set -euo pipefail

die() { echo "slurm_sweep.sh: $*" >&2; exit 2; }

merge=0
if [ "${1:-}" = "--merge" ]; then merge=1; shift; fi
[ $# -ge 2 ] || die "usage: experiments/slurm_sweep.sh [--merge] FILE.cfg N [FLAGS] (see the header)"
file=$1 n=$2
shift 2
[ -f "$file" ] || die "FILE.cfg: '$file' is not a file"
case "$n" in '' | *[!0-9]*) die "N: '$n' is not a number of shards (1..4096)";; esac
[ "${#n}" -le 6 ] || die "N: '$n' must be in 1..4096"
n=$((10#$n)) # "08" is 8, not a bad octal number
{ [ "$n" -ge 1 ] && [ "$n" -le 4096 ]; } || die "N: '$n' must be in 1..4096"

# Under Slurm the script is a copy in the spool directory: work from where it was submitted.
if [ -n "${SLURM_SUBMIT_DIR:-}" ]; then cd "$SLURM_SUBMIT_DIR"; fi
bin=${DECODELAB:-build/decodelab}
name=$(sed -n 's/^[[:space:]]*name[[:space:]]*=[[:space:]]*"\([A-Za-z0-9_-]*\)".*/\1/p' "$file" | head -n 1)
[ -n "$name" ] || die "$file: no name = \"...\"; line"
out=${DL_SWEEP_OUT:-results/$name/shards}
merged=${DL_SWEEP_MERGED:-results/$name}
cache=${DL_SWEEP_CACHE:-build/golden-cache}

if [ "$merge" = 1 ]; then
    dirs=()
    for ((k = 0; k < n; k++)); do dirs+=("$out/shard-$k-of-$n"); done
    # decodelab names any shard that is missing, unfinished, or holds a row twice
    exec "$bin" experiment "$file" --merge "${dirs[@]}" --out "$merged"
fi

if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
    k=$SLURM_ARRAY_TASK_ID
    [ "$k" -lt "$n" ] || die "array task $k, but the sweep has N = $n shards (submit --array=0-$((n - 1)))"
    echo "slurm_sweep.sh: job ${SLURM_ARRAY_JOB_ID:-?}_$k on $(hostname): shard $k/$n of $file" \
         "(GPU ${CUDA_VISIBLE_DEVICES:-none})"
    exec "$bin" experiment "$file" --shard "$k/$n" --out "$out/shard-$k-of-$n" --cache "$cache" --resume "$@"
fi

[ -z "${SLURM_JOB_ID:-}" ] || die "run under sbatch without --array: submit --array=0-$((n - 1)) (or run it without sbatch to submit)"
command -v sbatch >/dev/null || die "sbatch not found: run on a Slurm login node"
[ -x "$bin" ] || die "DECODELAB: '$bin' is not an executable (make, or make static)"
# the sweep must be valid before anything is queued: --shard 0/N with --stop-after 0 checks the file
# and every point through golden's own parser and runs nothing (exit 3; 0 when shard 0 has no point).
# The login node has no GPU, where decodelab takes the reduced sweep: check the full one the GPU tasks
# run, unless FLAGS choose
sweep=(--full)
for f in "$@"; do case "$f" in --reduced | --full) sweep=();; esac; done
chk=$(mktemp -d)
set +e
msg=$("$bin" experiment "$file" --shard "0/$n" --out "$chk/o" --cache "$chk/c" --stop-after 0 "${sweep[@]}" "$@" 2>&1 >/dev/null)
rc=$?
set -e
rm -rf "$chk"
[ "$rc" = 3 ] || [ "$rc" = 0 ] || die "$file does not run as shard 0/$n (exit $rc): $msg"
tasks=${DL_SWEEP_TASKS:-0-$((n - 1))}
# shellcheck disable=SC2086 # DL_SBATCH_ARGS is a list of options
array=$(sbatch --parsable --array="$tasks" ${DL_SBATCH_ARGS:-} "$0" "$file" "$n" "$@")
array=${array%%;*}
# the merge needs no GPU and starts only if every task ended with exit 0 (afterok); after a failed task,
# rerun it (DL_SWEEP_TASKS=K) and a new merge job is queued behind the rerun (scancel the old one: its
# dependency can never be met)
# shellcheck disable=SC2086
mjob=$(sbatch --parsable --job-name=decodelab-merge --dependency="afterok:$array" ${DL_SBATCH_ARGS:-} \
       --wrap "DECODELAB='$bin' DL_SWEEP_OUT='$out' DL_SWEEP_MERGED='$merged' '$0' --merge '$file' '$n'")
mjob=${mjob%%;*}
echo "array job $array (tasks $tasks of $n shards -> $out), merge job $mjob (-> $merged/report.md)"

#!/bin/bash
# experiments/local_sweep.sh - one experiment's sweep spread over the GPUs of one host: shard K of N
# (`decodelab experiment FILE --shard K/N`, the sweep points i with i mod N = K, golden files included)
# runs as its own process on its own GPU (CUDA_VISIBLE_DEVICES), all N at the same time; once every shard
# ended well they are merged (`decodelab experiment FILE --merge ...`) into the rows, verdicts and report
# of the sweep run in one piece (experiments/README.md, "Sweeps on the GPUs of one host"). The one-host
# counterpart of experiments/slurm_sweep.sh (a Slurm job array), with the same directories and knobs.
#
# usage (from the repository root):
#   experiments/local_sweep.sh FILE.cfg N [FLAGS]   run the N shards, wait for all of them, merge
#   experiments/local_sweep.sh --help               this text
# FLAGS are passed to every shard (e.g. --full, --reduced, --binary PATH).
#
# Where the shards run (G = the number of GPUs listed, see DL_SWEEP_GPUS):
#   G >= N   all N shards at once, shard K on the K-th GPU of the list (the first N are used);
#   0 < G < N  G lanes at once, lane g on the g-th GPU running shards g, g+G, ... one after another
#            (one GPU: every shard in turn on it);
#   G = 0    no GPU: N CPU-only processes at once (CUDA_VISIBLE_DEVICES set empty in each);
#   DL_SWEEP_SEQUENTIAL=1: one shard after another, on the first GPU listed (CPU-only if none).
# Every shard of one sweep must see a GPU or none alike: without a GPU a shard runs the reduced sweep,
# and the merge refuses shards of different sweeps. Unless OMP_NUM_THREADS is set, each shard gets
# nproc / (shards at once) OpenMP threads (the rows do not depend on the thread count).
#
# Shard K writes OUT/shard-K-of-N (its rows and shard.cfg; OUT = DL_SWEEP_OUT) and its output to
# OUT/shard-K-of-N.log. Every shard runs with --resume: after a shard failed or was killed, rerun the same
# command - completed shards and completed steps are kept, not redone - and the merge follows once all
# are complete. Interrupting the script (Ctrl-C, kill) stops the shards it started; a rerun resumes them.
#
# Environment:
#   DECODELAB       the binary (default build/decodelab)
#   DL_SWEEP_GPUS   the GPUs, a comma list of CUDA_VISIBLE_DEVICES ids (indices or UUIDs: 0,1,2,3 or 4,5);
#                   set but empty: none (CPU only). Default: $CUDA_VISIBLE_DEVICES when set (so that a job
#                   given some GPUs of a host stays on them), else the GPUs `nvidia-smi` lists, else none
#   DL_SWEEP_SEQUENTIAL  1: run the shards one after another
#   DL_SWEEP_OUT    where the shards go (default results/<name>/shards: DIR/shard-K-of-N)
#   DL_SWEEP_MERGED where the merged results and report go (default results/<name>)
#   DL_SWEEP_CACHE  the golden-file cache (default build/golden-cache); shared by all shards
# Each shard process (and the steps it runs) sees DL_SWEEP_SHARD=K, for a --binary wrapper
# (tests/test_local_sweep.sh uses one).
# Exit status: 0 merged; 2 bad input, a shard that failed (the script says how to resume) or a merge
# that refused; 3 every failed shard was stopped by a --stop-after in FLAGS.
set -euo pipefail

die() { echo "local_sweep.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

case "${1:-}" in -h | --help) usage; exit 0;; esac
[ $# -ge 2 ] || die "usage: experiments/local_sweep.sh FILE.cfg N [FLAGS] (--help says more)"
file=$1 n=$2
shift 2
[ -f "$file" ] || die "FILE.cfg: '$file' is not a file"
case "$n" in '' | *[!0-9]*) die "N: '$n' is not a number of shards (1..4096)";; esac
n=$((10#$n))
{ [ "$n" -ge 1 ] && [ "$n" -le 4096 ]; } || die "N: '$n' must be in 1..4096"

bin=${DECODELAB:-build/decodelab}
[ -x "$bin" ] || die "DECODELAB: '$bin' is not an executable (run make)"
name=$(sed -n 's/^[[:space:]]*name[[:space:]]*=[[:space:]]*"\([A-Za-z0-9_-]*\)".*/\1/p' "$file" | head -n 1)
[ -n "$name" ] || die "$file: no name = \"...\"; line"
out=${DL_SWEEP_OUT:-results/$name/shards}
merged=${DL_SWEEP_MERGED:-results/$name}
cache=${DL_SWEEP_CACHE:-build/golden-cache}

# ---- the GPUs
if [ -n "${DL_SWEEP_GPUS+set}" ]; then
    list=$DL_SWEEP_GPUS from=DL_SWEEP_GPUS
elif [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then
    list=$CUDA_VISIBLE_DEVICES from=CUDA_VISIBLE_DEVICES
elif command -v nvidia-smi >/dev/null 2>&1 && smi=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null); then
    list=$(echo "$smi" | tr -d ' ' | paste -sd, -) from=nvidia-smi
else
    list="" from="no nvidia-smi"
fi
gpus=()
if [ -n "$list" ]; then
    id='[A-Za-z0-9/:._-]+'
    [[ "$list" =~ ^$id(,$id)*$ ]] || die "$from: '$list' is not a comma list of GPU ids (0,1,... or UUIDs)"
    IFS=, read -r -a gpus <<< "$list"
    for ((i = 1; i < ${#gpus[@]}; i++)); do
        for ((j = 0; j < i; j++)); do
            [ "${gpus[j]}" != "${gpus[i]}" ] || die "$from: '$list': GPU ${gpus[i]} listed twice"
        done
    done
fi
case "${DL_SWEEP_SEQUENTIAL:-0}" in 0 | 1) ;; *) die "DL_SWEEP_SEQUENTIAL: '$DL_SWEEP_SEQUENTIAL' must be 0 or 1";; esac
g=${#gpus[@]}
if [ "${DL_SWEEP_SEQUENTIAL:-0}" = 1 ]; then
    lanes=1 how="one after another (DL_SWEEP_SEQUENTIAL=1)"
elif [ "$g" -ge "$n" ]; then
    lanes=$n how="all $n at once"
elif [ "$g" -ge 1 ]; then
    lanes=$g how="$g at once, the rest in turn (fewer GPUs than shards)"
else
    lanes=$n how="all $n at once"
fi
# lane_gpu L: the CUDA_VISIBLE_DEVICES of lane L (empty: CPU only)
lane_gpu() { if [ "$g" -ge 1 ]; then echo "${gpus[$1]}"; fi; }
if [ "$g" -ge 1 ]; then
    where="GPUs $(IFS=,; echo "${gpus[*]:0:lanes}") (from $from)"
else
    case "$from" in
        nvidia-smi) where="CPU only (nvidia-smi lists no GPU)";;
        no\ nvidia-smi) where="CPU only (nvidia-smi not found; DL_SWEEP_GPUS=0,1,... names GPUs)";;
        *) where="CPU only ($from is empty)";;
    esac
fi
omp=${OMP_NUM_THREADS:-$(( $(nproc) / lanes > 0 ? $(nproc) / lanes : 1 ))}

# ---- the sweep must be valid before N processes start: --shard 0/N with --stop-after 0 checks the file
# and every point through golden's own parser and runs nothing (exit 3; 0 when shard 0 has no point)
chk=$(mktemp -d)
set +e
msg=$(CUDA_VISIBLE_DEVICES=$(lane_gpu 0) "$bin" experiment "$file" --shard "0/$n" --out "$chk/o" --cache "$chk/c" \
      --stop-after 0 "$@" 2>&1 >/dev/null)
rc=$?
set -e
rm -rf "$chk"
[ "$rc" = 3 ] || [ "$rc" = 0 ] || die "$file does not run as shard 0/$n (exit $rc): $msg"

mkdir -p "$out"
tmp=$(mktemp -d)
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# run_shard K GPU FLAGS...: shard K in the foreground of its lane; its exit status and time go to $tmp
run_shard() {
    local k=$1 gpu=$2 t0 rc=0 pid
    shift 2
    local dir=$out/shard-$k-of-$n
    t0=$(now)
    echo "== local_sweep.sh: shard $k/$n of $file on $(hostname), ${gpu:+GPU }${gpu:-CPU only}, $(date -u +%FT%TZ)" >> "$dir.log"
    # its own process group (setsid), so that an interrupt stops the shard and the step it is running
    CUDA_VISIBLE_DEVICES=$gpu DL_SWEEP_SHARD=$k OMP_NUM_THREADS=$omp \
        $setsid "$bin" experiment "$file" --shard "$k/$n" --out "$dir" --cache "$cache" --resume "$@" >> "$dir.log" 2>&1 &
    pid=$!
    echo "$pid" > "$tmp/pid-$k"
    wait "$pid" || rc=$?
    rm -f "$tmp/pid-$k"
    echo "$rc $(secs "$t0" "$(now)")" > "$tmp/status-$k"
}
lane() {
    local l=$1 gpu k
    shift
    gpu=$(lane_gpu "$l")
    for ((k = l; k < n; k += lanes)); do run_shard "$k" "$gpu" "$@"; done
}
setsid=
if command -v setsid >/dev/null 2>&1; then setsid=setsid; fi
lane_pids=()
# Ctrl-C, kill or hang-up: stop the lanes, then the shards they started (by pid); a rerun resumes them
# shellcheck disable=SC2317 # called by the trap
stop() {
    trap - INT TERM HUP
    kill "${lane_pids[@]}" 2>/dev/null || true
    for f in "$tmp"/pid-*; do
        if [ -f "$f" ]; then kill -- "-$(cat "$f")" 2>/dev/null || kill "$(cat "$f")" 2>/dev/null || true; fi
    done
    echo "local_sweep.sh: interrupted; the shards were stopped. Resume: rerun the same command" >&2
    rm -rf "$tmp"
    exit 130
}
trap stop INT TERM HUP

echo "local_sweep.sh: $name, $n shards, $how, $where, OMP_NUM_THREADS=$omp; shards in $out/shard-K-of-$n (+ .log)"
t0=$(now)
for ((l = 0; l < lanes; l++)); do
    lane "$l" "$@" &
    lane_pids+=($!)
done
wait "${lane_pids[@]}" || true
trap - INT TERM HUP
tshards=$(secs "$t0" "$(now)")

failed=() stopped=0
for ((k = 0; k < n; k++)); do
    rc=missing t='?'
    [ -f "$tmp/status-$k" ] && read -r rc t < "$tmp/status-$k"
    gpu=$(lane_gpu $((k % lanes)))
    sig=
    if [ "$rc" != missing ] && [ "$rc" -gt 128 ]; then sig=" (SIG$(kill -l $((rc - 128)) 2>/dev/null || echo ?))"; fi
    printf 'shard %d/%d  %-12s exit %-3s %6s s  %s%s\n' "$k" "$n" "${gpu:+GPU }${gpu:-CPU}" "$rc" "$t" \
           "$out/shard-$k-of-$n.log" "$sig"
    if [ "$rc" != 0 ]; then
        failed+=("$k")
        [ "$rc" != 3 ] || stopped=$((stopped + 1))
    fi
done
rm -rf "$tmp"
echo "shards: ${tshards} s wall ($how)"
if [ "${#failed[@]}" -gt 0 ]; then
    for k in "${failed[@]}"; do
        echo "shard $k/$n did not finish: last lines of $out/shard-$k-of-$n.log:"
        tail -n 3 "$out/shard-$k-of-$n.log" | sed 's/^/    /'
    done
    echo "local_sweep.sh: ${#failed[@]} of $n shards did not finish (${failed[*]}); not merged." \
         "Resume: rerun the same command (completed shards and steps are kept, not redone): $0 $file $n $*"
    if [ "$stopped" = "${#failed[@]}" ]; then exit 3; fi
    exit 2
fi

dirs=()
for ((k = 0; k < n; k++)); do dirs+=("$out/shard-$k-of-$n"); done
t0=$(now)
rc=0
# decodelab names any shard that is missing, unfinished, or holds a row twice
"$bin" experiment "$file" --merge "${dirs[@]}" --out "$merged" || rc=$?
echo "merge: $(secs "$t0" "$(now)") s wall, exit $rc -> $merged/report.md"
exit "$rc"

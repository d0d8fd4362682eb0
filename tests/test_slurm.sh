#!/bin/bash
# tests/test_slurm.sh - `make test-slurm`: experiments/slurm_sweep.sh on a real one-node Slurm cluster.
#
# Starts munged and a single-node Slurm (slurmctld + slurmd on localhost, three fake GPUs so that the
# script's --gres=gpu:1 is honoured) in a temporary directory, then:
#   1. runs experiment E5 in one piece (the reference: reduced sweep, 8 points, CPU models);
#   2. submits the same sweep through the script as a 3-task array plus its dependent merge job,
#      with task 1 slowed down (one second per golden file) and cancelled (scancel) part-way;
#   3. checks that task 1 left a shard that is unfinished but keeps what it completed, that the merge
#      job did not run, and that the other two shards finished;
#   4. resubmits task 1 alone through the script (DL_SWEEP_TASKS=1) with a new merge job, waits;
#   5. checks the merged rows (every column but date_utc and hostname; golden files compared by
#      their content-hash name) and verdicts equal the one-piece run's: nothing lost, nothing twice
#      (tests/sweep_compare.py, shared with tests/test_local_sweep.sh).
# Every daemon it started is stopped on exit (trap). SKIPs, saying why, without slurm/munge, without
# root (slurmd runs jobs as their owner), or without python3.
# Environment: DECODELAB (default build/decodelab), DL_KEEP_SLURM=1 keeps the temporary directory.
set -uo pipefail
export PATH="$PATH:/usr/sbin:/sbin"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BIN=${DECODELAB:-build/decodelab}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
XP=experiments/E5_e4m3_vs_e5m2.cfg
T0=$(date +%s)

# Submit mode's checks, with a stand-in sbatch (no cluster needed): the check runs the full sweep the GPU tasks
# run (the login node has no GPU, where decodelab takes the reduced one: a file whose full sweep was invalid got
# queued), and N may have a leading zero ("08" died in bash's octal arithmetic with exit 1).
F=$(mktemp -d /tmp/dl_slurm_submit.XXXXXX)
mkdir -p "$F/bin"
printf '#!/bin/sh\necho "$*" >> "%s/calls"\necho 4242\n' "$F" > "$F/bin/sbatch"
chmod +x "$F/bin/sbatch"
sed 's/^\(sweep = {\)/\1 num_qo_heads = [8, 6]; num_kv_heads = 4;/; s/^reduced = {/reduced = { num_qo_heads = 8;/' \
    "$XP" > "$F/bad_full.cfg"
grep -q 'num_qo_heads = \[8, 6\]' "$F/bad_full.cfg" && grep -q 'reduced = { num_qo_heads = 8;' "$F/bad_full.cfg" ||
    { echo "FAIL test-slurm: could not make a sweep whose full form is invalid from $XP"; rm -rf "$F"; exit 1; }
"$BIN" experiment "$F/bad_full.cfg" --out "$F/r" --cache "$F/c" --stop-after 0 --reduced > /dev/null 2>&1
rc_r=$?
out=$(PATH="$F/bin:$PATH" DECODELAB="$BIN" DL_SWEEP_OUT="$F/s" experiments/slurm_sweep.sh "$F/bad_full.cfg" 2 2>&1)
rc=$?
if [ "$rc_r" != 3 ] || [ "$rc" != 2 ] || [ -e "$F/calls" ] || ! grep -q "num_qo_heads = 6" <<< "$out"; then
    echo "FAIL test-slurm: a sweep invalid in full (reduced exit $rc_r) was submitted or not named (exit $rc): $out"
    rm -rf "$F"; exit 1
fi
out=$(PATH="$F/bin:$PATH" DECODELAB="$BIN" DL_SWEEP_OUT="$F/s" DL_SWEEP_MERGED="$F/m" experiments/slurm_sweep.sh "$XP" 08 2>&1)
rc=$?
if [ "$rc" != 0 ] || ! grep -q -- "--array=0-7" "$F/calls" 2>/dev/null; then
    echo "FAIL test-slurm: N = 08 (exit $rc): $out; sbatch saw: $(cat "$F/calls" 2>/dev/null)"
    rm -rf "$F"; exit 1
fi
rm -rf "$F"
echo "test-slurm: submit checks (the full sweep checked, N = 08) passed"

skip() { echo "SKIP test-slurm: $*"; exit 0; }
for t in slurmctld slurmd sbatch squeue scancel scontrol sinfo munged munge; do
    command -v "$t" >/dev/null 2>&1 || skip "$t not found (Debian/Ubuntu: apt-get install slurm-wlm munge)"
done
[ "$(id -u)" = 0 ] || skip "needs root: slurmd must be able to run the jobs (SlurmUser=root)"
command -v python3 >/dev/null 2>&1 || skip "python3 not found (it picks free ports and compares the CSV tables)"
[ -x "$BIN" ] || { echo "FAIL test-slurm: $BIN is not built"; exit 1; }

T=$(mktemp -d /tmp/dl_slurm.XXXXXX)
chmod 755 "$T"
export SLURM_CONF=$T/slurm.conf
cleanup() {
    local rc=$?
    if [ -f "$T/run/slurmctld.pid" ]; then scancel --quiet --user=root >/dev/null 2>&1 || true; fi
    for p in slurmd slurmctld munged; do
        if [ -f "$T/run/$p.pid" ]; then
            pid=$(cat "$T/run/$p.pid")
            kill "$pid" 2>/dev/null
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
        fi
    done
    if [ "${DL_KEEP_SLURM:-0}" = 1 ]; then echo "test-slurm: kept $T"; else rm -rf "$T"; fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
    echo "FAIL test-slurm: $*"
    for f in "$T"/log/slurmctld.log "$T"/log/slurmd.log "$T"/slurm-*.out; do
        [ -f "$f" ] && { echo "--- $f (last lines)"; tail -n 15 "$f"; }
    done
    exit 1
}
# wait_for SECONDS DESCRIPTION COMMAND...: poll every 0.2 s until COMMAND succeeds
wait_for() {
    local secs=$1 what=$2
    shift 2
    local end=$(($(date +%s) + secs))
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$end" ] || fail "timed out after ${secs}s waiting for $what"
        sleep 0.2
    done
}

# ---- munge and a one-node Slurm
mkdir -p "$T/run" "$T/log" "$T/state" "$T/spool"
chmod 700 "$T/run" "$T/log"
dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 2>/dev/null && chmod 400 "$T/munge.key"
munged --force --key-file="$T/munge.key" --socket="$T/run/munge.sock" --pid-file="$T/run/munged.pid" \
       --log-file="$T/log/munged.log" --seed-file="$T/run/munge.seed" || fail "munged did not start"
wait_for 10 "munged" munge --socket="$T/run/munge.sock" -n
read -r P1 P2 < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1", 0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
NCPU=$(nproc)
# three GPUs for --gres=gpu:1: character devices when mknod is allowed, plain files otherwise
# (slurmd then logs that they are not devices, and counts them all the same)
for i in 0 1 2; do mknod "$T/gpu$i" c 1 3 2>/dev/null || touch "$T/gpu$i"; done
cat > "$T/slurm.conf" <<EOF
ClusterName=dltest
SlurmctldHost=localhost
SlurmctldPort=$P1
SlurmdPort=$P2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/run/munge.sock
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/run/slurmctld.pid
SlurmdPidFile=$T/run/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
KillWait=2
MinJobAge=600
GresTypes=gpu
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$NCPU Gres=gpu:3 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
echo "NodeName=localhost Name=gpu File=$T/gpu[0-2]" > "$T/gres.conf"
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" -N localhost || fail "slurmd did not start"
node_idle() { sinfo -h -n localhost -o %t | grep -q '^idle'; }
wait_for 30 "the node to come up idle" node_idle
echo "test-slurm: one-node Slurm up in $(($(date +%s) - T0))s (ports $P1/$P2, $NCPU CPUs, 3 GPUs)"

# ---- 1. the sweep in one piece
"$BIN" experiment "$XP" --out "$T/one" --cache "$T/cache-one" > "$T/one.log" 2>&1 || fail "one-piece run failed: $(tail -n 3 "$T/one.log")"

# ---- 2. the array through the script, task 1 slowed down and cancelled part-way
cat > "$T/slow.sh" <<EOF
#!/bin/sh
# test-slurm: task 1 takes a second per golden file, so that it can be cancelled part-way
[ "\${SLURM_ARRAY_TASK_ID:-}" = 1 ] && sleep 1
exec "$BIN" "\$@"
EOF
chmod +x "$T/slow.sh"
export DECODELAB=$BIN DL_SWEEP_OUT=$T/shards DL_SWEEP_MERGED=$T/merged DL_SWEEP_CACHE=$T/cache
export DL_SBATCH_ARGS="--output=$T/slurm-%j.out"
sub=$(experiments/slurm_sweep.sh "$XP" 3 --binary "$T/slow.sh") || fail "submission failed: $sub"
echo "test-slurm: $sub"
array=$(echo "$sub" | sed -n 's/^array job \([0-9]*\) .*/\1/p')
merge1=$(echo "$sub" | sed -n 's/.*merge job \([0-9]*\) .*/\1/p')
{ [ -n "$array" ] && [ -n "$merge1" ]; } || fail "no job ids in: $sub"
S1=$T/shards/shard-1-of-3
wait_for 60 "task 1's first rows" test -s "$S1/results.csv"
scancel "${array}_1" || fail "scancel ${array}_1 failed"
tasks_gone() { [ -z "$(squeue -h -j "$array" -o %i 2>/dev/null)" ]; }
wait_for 90 "the array to end" tasks_gone
state1=$(scontrol show job "${array}_1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1)
[ "$state1" = CANCELLED ] || fail "task 1 ended $state1, expected CANCELLED"

# ---- 3. the state after the cancel
grep -q '^complete = false;' "$S1/shard.cfg" || fail "task 1's shard.cfg does not say unfinished"
rows1=$(python3 tests/sweep_compare.py --rows "$S1/results.csv")
# E5 reduced: 8 points; shard 1 holds points 1, 4 and 7, 4 model rows each
{ [ "$rows1" -gt 0 ] && [ "$rows1" -lt 12 ]; } || fail "task 1 kept $rows1 rows: expected part of its 3 points x 4 models"
for k in 0 2; do
    grep -q '^complete = true;' "$T/shards/shard-$k-of-3/shard.cfg" || fail "shard $k did not finish"
done
reason=$(squeue -h -j "$merge1" -o %r)
case "$reason" in *Dependency*) ;; *) fail "merge job $merge1: reason '$reason', expected a dependency never satisfied";; esac
[ ! -e "$T/merged/report.md" ] || fail "the merge ran although task 1 was cancelled"
scancel "$merge1"
echo "test-slurm: task 1 cancelled part-way with $rows1 of 12 rows kept; merge job $merge1 held back ($reason)"

# ---- 4. task 1 again (resumed), and a new merge job behind it
sub=$(DL_SWEEP_TASKS=1 experiments/slurm_sweep.sh "$XP" 3) || fail "resubmission failed: $sub"
echo "test-slurm: $sub"
array2=$(echo "$sub" | sed -n 's/^array job \([0-9]*\) .*/\1/p')
merge2=$(echo "$sub" | sed -n 's/.*merge job \([0-9]*\) .*/\1/p')
job_gone() { [ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ]; }
wait_for 90 "the rerun of task 1 and the merge" job_gone "$merge2"
state2=$(scontrol show job "$merge2" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1)
[ "$state2" = COMPLETED ] || fail "merge job $merge2 ended $state2 (output: $(tail -n 3 "$T/slurm-$merge2.out" 2>/dev/null))"
grep -q '^complete = true;' "$S1/shard.cfg" || fail "task 1's rerun did not finish its shard"
grep -q "done before: ref models" "$T/slurm-$array2.out" ||
    fail "the rerun of task 1 redid what it had completed (no 'done before' step)"

# ---- 5. the merged sweep = the one-piece sweep
python3 tests/sweep_compare.py test-slurm "$T/one" "$T/merged" || fail "merged results differ from the one-piece run (above)"
grep -q '| H1 |' "$T/merged/report.md" || fail "no report"
echo "PASS test-slurm ($(($(date +%s) - T0))s)"

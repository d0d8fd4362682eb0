#!/bin/bash
# tests/test_local_sweep.sh - `make test-local-sweep`: experiments/local_sweep.sh (a sweep's shards as
# processes of one host, merged after) on this machine, CPU only, against the same sweep in one piece.
#
# Experiment E5 (reduced sweep, 8 points, CPU models; CUDA_VISIBLE_DEVICES empty throughout, so that a
# GPU machine runs the same CPU sweep) is run:
#   1. in one piece: the reference;
#   2. through the script with N = 3 and no GPU (DL_SWEEP_GPUS empty): three CPU processes at once - a
#      barrier in the --binary wrapper proves they ran concurrently - with shard 1 killed (SIGKILL)
#      at its second golden file: the script must exit 2 with a line saying how to resume, not merge,
#      leave shard 1 unfinished with its first point's rows and the others complete; then the same
#      command again: shard 1 resumes ("done before"), no golden file is made twice, and the merged
#      rows (every column but date_utc and hostname; golden files by their content-hash name) and
#      verdicts equal the one-piece run's (tests/sweep_compare.py, shared with tests/test_slurm.sh);
#   3. with DL_SWEEP_SEQUENTIAL=1, interrupted (SIGTERM to the script) while shard 0 runs a step: exit
#      130 and no process of the shard left; rerun: the shards one after another, merged = one piece;
#   4. with two GPU ids for three shards (DL_SWEEP_GPUS=90,91: ids no machine has, so CUDA finds no
#      device and the shards run on the CPU): two lanes, shards 0 and 2 one after the other with
#      CUDA_VISIBLE_DEVICES=90, shard 1 with 91; merged = one piece;
#   4b. tests/sweep_compare.py --measured (for GPU runs): changed times, a timing note, a verdict's range
#      pass; a changed error or verdict fails;
#   5. usage errors: --help, a bad N, a missing file, a bad GPU list, each one line and exit 2.
# SKIPs, saying why, without python3. Environment: DECODELAB (default build/decodelab),
# DL_KEEP_LOCAL_SWEEP=1 keeps the temporary directory.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BIN=${DECODELAB:-build/decodelab}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
XP=experiments/E5_e4m3_vs_e5m2.cfg
SWEEP=experiments/local_sweep.sh
T0=$(date +%s)

command -v python3 >/dev/null 2>&1 || { echo "SKIP test-local-sweep: python3 not found (it compares the CSV tables)"; exit 0; }
[ -x "$BIN" ] || { echo "FAIL test-local-sweep: $BIN is not built"; exit 1; }
T=$(mktemp -d /tmp/dl_local_sweep.XXXXXX)
bg=
cleanup() {
    local rc=$?
    if [ -n "$bg" ]; then kill "$bg" 2>/dev/null; fi
    if [ "${DL_KEEP_LOCAL_SWEEP:-0}" = 1 ]; then echo "test-local-sweep: kept $T"; else rm -rf "$T"; fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL test-local-sweep: $*"; exit 1; }
export CUDA_VISIBLE_DEVICES=
unset DL_SWEEP_GPUS DL_SWEEP_SEQUENTIAL OMP_NUM_THREADS

# The --binary of every shard: logs each step as "shard GPU" in $T/<run>.steps, then runs decodelab.
# DLT_BARRIER=1: each step waits until all 3 shards have started one (fails after 30 s: not concurrent).
# DLT_KILL=1: shard 1 kills its own experiment process (SIGKILL) at its second step.
# DLT_HOLD=1: the first step writes its pid to $T/<run>.held and sleeps (for an interrupt).
cat > "$T/step.sh" <<EOF
#!/bin/sh
T=$T
run=\${DLT_RUN:?}
echo "\${DL_SWEEP_SHARD:-?} \${CUDA_VISIBLE_DEVICES-unset}" >> "\$T/\$run.steps"
if [ "\${DLT_BARRIER:-0}" = 1 ]; then
    touch "\$T/\$run.started-\$DL_SWEEP_SHARD"
    i=0
    until [ -e "\$T/\$run.started-0" ] && [ -e "\$T/\$run.started-1" ] && [ -e "\$T/\$run.started-2" ]; do
        i=\$((i + 1))
        [ \$i -le 300 ] || { echo "step.sh: shard \$DL_SWEEP_SHARD waited 30 s for the others: not run at once"; exit 1; }
        sleep 0.1
    done
fi
if [ "\${DLT_KILL:-0}" = 1 ] && [ "\$DL_SWEEP_SHARD" = 1 ] && [ "\$(grep -c '^1 ' "\$T/\$run.steps")" = 2 ]; then
    kill -KILL "\$PPID"
    exit 1
fi
if [ "\${DLT_HOLD:-0}" = 1 ] && [ ! -e "\$T/\$run.held" ]; then
    echo \$\$ > "\$T/\$run.held"
    sleep 60
fi
exec "$BIN" "\$@"
EOF
chmod +x "$T/step.sh"
# sweep RUN [VAR=VALUE...]: the script on E5 with N = 3, its own directories; output in $T/RUN.out
sweep() {
    local run=$1
    shift
    env DECODELAB="$BIN" DL_SWEEP_OUT="$T/$run/shards" DL_SWEEP_MERGED="$T/$run/merged" DL_SWEEP_CACHE="$T/$run/cache" \
        DLT_RUN="$run" "$@" "$SWEEP" "$XP" 3 --binary "$T/step.sh" > "$T/$run.out" 2>&1
}
steps_of() { grep -c "^$2 " "$T/$1.steps"; }
show() { sed 's/^/    /' "$T/$1.out"; }

# ---- 1. the sweep in one piece
"$BIN" experiment "$XP" --out "$T/one" --cache "$T/cache-one" > "$T/one.log" 2>&1 ||
    fail "one-piece run failed: $(tail -n 3 "$T/one.log")"
echo "test-local-sweep: one piece in $(($(date +%s) - T0))s"

# ---- 2. three CPU processes at once, shard 1 killed part-way, then the same command again
t=$(date +%s)
sweep par DL_SWEEP_GPUS= DLT_BARRIER=1 DLT_KILL=1
rc=$?
[ "$rc" = 2 ] || { show par; fail "with shard 1 killed the script exited $rc, expected 2"; }
grep -q 'all 3 at once, CPU only' "$T/par.out" || { show par; fail "no 'all 3 at once, CPU only' line"; }
grep -q '^shard 1/3  CPU  *exit 137 ' "$T/par.out" || { show par; fail "no 'shard 1/3 ... exit 137' line"; }
grep -q 'Resume: rerun the same command' "$T/par.out" || { show par; fail "no line saying how to resume"; }
S=$T/par/shards
grep -q '^complete = false;' "$S/shard-1-of-3/shard.cfg" || fail "killed shard 1's shard.cfg does not say unfinished"
rows1=$(python3 tests/sweep_compare.py --rows "$S/shard-1-of-3/results.csv")
# shard 1 holds points 1, 4 and 7 (4 model rows each); killed at point 4's golden file: point 1's rows kept
[ "$rows1" = 4 ] || fail "killed shard 1 kept $rows1 rows, expected its first point's 4"
for k in 0 2; do
    grep -q '^complete = true;' "$S/shard-$k-of-3/shard.cfg" || fail "shard $k did not finish"
done
[ ! -e "$T/par/merged/report.md" ] || fail "merged although shard 1 was killed"
mv "$T/par.out" "$T/par-killed.out"
sweep par DL_SWEEP_GPUS=
rc=$?
[ "$rc" = 0 ] || { show par; fail "the rerun exited $rc"; }
grep -q 'done before: ref models 2/8' "$S/shard-1-of-3.log" || fail "the rerun of shard 1 redid its first point"
# golden steps: shard 0 three, shard 2 two (none again in the rerun); shard 1 point 1, point 4 (killed),
# and in the rerun points 4 and 7
for k in "0 3" "1 4" "2 2"; do
    read -r sh want <<< "$k"
    [ "$(steps_of par "$sh")" = "$want" ] || fail "shard $sh ran $(steps_of par "$sh") golden steps, expected $want"
done
! grep -qv '^[0-9] $' "$T/par.steps" || fail "a step ran with CUDA_VISIBLE_DEVICES set: $(grep -v '^[0-9] $' "$T/par.steps" | head -n 1)"
{ grep -q "^shards: .* s wall" "$T/par.out" && grep -q "^merge: .* s wall, exit 0" "$T/par.out"; } || { show par; fail "no wall times"; }
python3 tests/sweep_compare.py test-local-sweep "$T/one" "$T/par/merged" || fail "3 processes at once: merged differs from one piece"
echo "test-local-sweep: 3 CPU shards at once, shard 1 killed and resumed: $(($(date +%s) - t))s"

# ---- 3. one after another, interrupted during shard 0, then again
t=$(date +%s)
DLT_HOLD=1 DECODELAB="$BIN" DL_SWEEP_OUT="$T/seq/shards" DL_SWEEP_MERGED="$T/seq/merged" DL_SWEEP_CACHE="$T/seq/cache" \
    DLT_RUN=seq DL_SWEEP_SEQUENTIAL=1 "$SWEEP" "$XP" 3 --binary "$T/step.sh" > "$T/seq-interrupted.out" 2>&1 &
bg=$!
for _ in $(seq 300); do [ -s "$T/seq.held" ] && break; sleep 0.1; done
[ -s "$T/seq.held" ] || fail "the sequential run did not start a step in 30 s"
held=$(cat "$T/seq.held")
kill -TERM "$bg"
wait "$bg"
rc=$?
bg=
[ "$rc" = 130 ] || { show seq-interrupted; fail "the interrupted script exited $rc, expected 130"; }
for _ in $(seq 50); do kill -0 "$held" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$held" 2>/dev/null || fail "the step of shard 0 (pid $held) still runs after the script was interrupted"
grep -q 'interrupted' "$T/seq-interrupted.out" || { show seq-interrupted; fail "no line saying the script was interrupted"; }
sweep seq DL_SWEEP_SEQUENTIAL=1
rc=$?
[ "$rc" = 0 ] || { show seq; fail "the sequential rerun exited $rc"; }
grep -q 'one after another (DL_SWEEP_SEQUENTIAL=1)' "$T/seq.out" || { show seq; fail "no 'one after another' line"; }
# one after another: the steps in shard order
# (the interrupted step of shard 0 first: its golden file was not made, the rerun makes it)
order=$(cut -d' ' -f1 "$T/seq.steps" | tr -d '\n')
[ "$order" = 000011122 ] || fail "steps by shard $order, expected 000011122 (one shard after another)"
python3 tests/sweep_compare.py test-local-sweep "$T/one" "$T/seq/merged" || fail "one after another: merged differs from one piece"
echo "test-local-sweep: one shard after another, interrupted and resumed: $(($(date +%s) - t))s"

# ---- 4. fewer GPUs than shards: two lanes
t=$(date +%s)
sweep lanes DL_SWEEP_GPUS=90,91
rc=$?
[ "$rc" = 0 ] || { show lanes; fail "with two GPU ids the script exited $rc"; }
grep -q '2 at once, the rest in turn' "$T/lanes.out" || { show lanes; fail "no '2 at once' line"; }
[ "$(cut -d' ' -f1,2 "$T/lanes.steps" | sort | uniq -c | awk '{ printf "%s:%s:%s ", $2, $3, $1 }')" = "0:90:3 1:91:3 2:90:2 " ] ||
    fail "steps per (shard, GPU) are not 0:90:3 1:91:3 2:90:2: $(sort "$T/lanes.steps" | uniq -c | tr '\n' ' ')"
last0=$(grep -n '^0 ' "$T/lanes.steps" | tail -n 1 | cut -d: -f1)
first2=$(grep -n '^2 ' "$T/lanes.steps" | head -n 1 | cut -d: -f1)
[ "$last0" -lt "$first2" ] || fail "shards 0 and 2 (one lane, GPU 90) overlapped"
python3 tests/sweep_compare.py test-local-sweep "$T/one" "$T/lanes/merged" || fail "two lanes: merged differs from one piece"
echo "test-local-sweep: 3 shards on 2 GPU ids: $(($(date +%s) - t))s"

# ---- 4b. sweep_compare.py --measured (tests/gpu/sweep_job.sh's check of GPU runs, whose times differ):
# measured columns that differ pass (a time, a read reference, a timing note as the reason, a verdict's
# observed range), a checked one fails (an error, a verdict); the plain check fails on a measured one
edit() {  # edit DIR FILE ROW COLUMN VALUE: DIR/FILE's data row ROW (from 0) gets VALUE in COLUMN
    python3 - "$@" <<'PY'
import csv, os, sys
d, name, row, col, val = sys.argv[1:]
p = os.path.join(d, name)
with open(p) as f:
    r = list(csv.DictReader(f))
assert col in r[0], col
r[int(row)][col] = val
with open(p, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(r[0].keys()))
    w.writeheader()
    w.writerows(r)
PY
}
measured() { python3 tests/sweep_compare.py --measured test-local-sweep "$T/base" "$T/meas" > "$T/meas.out"; }
# the base: the one-piece run with row 2 as a timed row that converged (no reason)
cp -r "$T/one" "$T/base" && edit "$T/base" results.csv 2 reason "" && cp -r "$T/base" "$T/meas" ||
    fail "--measured: copying the one-piece run failed"
edit "$T/meas" results.csv 1 time_median_s 1.5e-05 && edit "$T/meas" results.csv 1 ref_read_s 1.2e-05 &&
    edit "$T/meas" results.csv 2 reason "timing hit the 2 s cap before stdrel < 0.5% (1.2% after 99 samples)" &&
    edit "$T/meas" verdicts.csv 0 value_max 123 || fail "--measured: editing the copy failed"
measured || fail "--measured refused a change in measured columns: $(cat "$T/meas.out")"
! python3 tests/sweep_compare.py test-local-sweep "$T/base" "$T/meas" > /dev/null ||
    fail "the plain check passed a change in time_median_s"
edit "$T/meas" results.csv 1 model_o_rel_l2 0.5
! measured || fail "--measured passed a change in model_o_rel_l2"
grep -q "differs in \['model_o_rel_l2'\]" "$T/meas.out" || fail "--measured did not name model_o_rel_l2: $(cat "$T/meas.out")"
rm -rf "$T/meas" && cp -r "$T/base" "$T/meas" && edit "$T/meas" verdicts.csv 0 verdict REJECTED
! measured || fail "--measured passed a changed verdict"
grep -q "verdicts differ" "$T/meas.out" || fail "--measured did not say the verdicts differ: $(cat "$T/meas.out")"
out=$(python3 tests/sweep_compare.py --measured test-local-sweep "$T/base" "$T/none" 2>&1)
rc=$?
[ "$rc" = 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && case "$out" in *"$T/none/results.csv: no such file"*) true;; *) false;; esac ||
    fail "--measured on a missing folder: exit $rc, '$out' (expected one line naming $T/none/results.csv, exit 2)"
echo "test-local-sweep: sweep_compare.py --measured"

# ---- 5. usage errors: one line, exit 2, nothing run
"$SWEEP" --help > "$T/help.out" 2>&1 || fail "--help exited $?"
grep -q 'local_sweep.sh FILE.cfg N \[FLAGS\]' "$T/help.out" || fail "--help shows no usage"
check_err() {  # check_err EXPECTED-TEXT ARGS...: exit 2 and one line containing the text
    local want=$1 out rc
    shift
    out=$(env DECODELAB="$BIN" "$@" 2>&1)
    rc=$?
    [ "$rc" = 2 ] || fail "'$*' exited $rc, expected 2: $out"
    [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "'$*': not one line: $out"
    case "$out" in *"$want"*) ;; *) fail "'$*' said '$out', expected '$want'";; esac
}
check_err "N: '0' must be in 1..4096" "$SWEEP" "$XP" 0
check_err "N: 'x' is not a number" "$SWEEP" "$XP" x
check_err "usage: experiments/local_sweep.sh FILE.cfg N" "$SWEEP" "$XP"
check_err "'$T/none.cfg' is not a file" "$SWEEP" "$T/none.cfg" 3
check_err "'0,,1' is not a comma list of GPU ids" DL_SWEEP_GPUS=0,,1 "$SWEEP" "$XP" 3
check_err "GPU 1 listed twice" DL_SWEEP_GPUS=1,1 "$SWEEP" "$XP" 3
check_err "does not run as shard 0/3" "$SWEEP" "$XP" 3 --no-such-flag
echo "PASS test-local-sweep ($(($(date +%s) - T0))s)"

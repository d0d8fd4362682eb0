#!/usr/bin/env bash
# flashinfer_compare.sh - decodelab's variants and FlashInfer's decode backends on the
# same golden files, with the same checks and the same clock (issue 6). One lent-GPU call:
#
#   DECODELAB=build-static/decodelab OUT=<dir> bash tests/gpu/flashinfer_compare.sh
#   (or: DECODELAB=build-static/decodelab make compare-flashinfer)
#
# Needs, carried with the tree (.whl is git-ignored; see harness/baselines/README.md):
#   .whl/*.whl   flashinfer-python and apache-tvm-ffi (the only packages the GPU image lacks); a pure-Python
#                wheel may travel as NAME.whl.txz instead (its files, tar + xz: flashinfer's 18 MB wheel is 7.6 MB
#                so; the tree, the binary and both wheels no longer fit 64 MiB otherwise), unpacked into $SITE
#   $DECODELAB   a `make static` binary, or .whl/decodelab.xz (stripped, xz -6; unpacked by unpack_carry.sh) or .gz
#   .whl/aot/    optional: FlashInfer's JIT modules compiled for sm_90a on the CPU machine
#                (flashinfer_decode.py --prebuild .whl/aot); what does not load is compiled here
#
# Steps, each under a timeout, with progress on stdout:
#   1. install the wheels into $SITE (/tmp/site); start compiling any missing JIT module in the
#      background while the golden files are generated
#   2. golden files: llama3-8B (32/8 heads, D 128) batch 64 length 1024, Q bf16, KV e4m3 and bf16
#      (one scale for all heads: --kv-scale absmax-tensor, since FlashInfer takes per-tensor
#      scales); llama-13B (40/40) bf16; then the grid $GRID (batch:length, llama3-8B e4m3) while
#      the elapsed time is under $BUDGET_S (--models auto: only the models some variant is judged by on
#      the case, so a bf16 cache skips the four fp8 ones, 41 of B256 bf16's 89 s on 16 cores, and no
#      file holds the f32 originals, 8 of that file's 12 GiB)
#   3. per golden file: decodelab run --time (every variant, checked then timed), the FlashInfer
#      baseline (one candidate file per backend, timed the same way), decodelab compare; all
#      rows go into one results table
#      (SET=issue10 [ONLY="names"]: issue 10's ten configurations instead; see below)
#   4. ONE table: per configuration, every decodelab variant and FlashInfer backend with its
#      verdict, error vs exact, median time, fraction of the read peak measured in the same
#      run, and the speed ratio to the fastest FlashInfer backend
# $OUT gets (at most 8 files): results.h5, results.csv, table.md, job.log, candidates.tar.gz (if <= CAND_MAX_MB), and with
# SET=issue10 summary.md and targets.md (flashinfer_decode.py --summary: the issue's per-configuration
# table; --targets: its targets judged).
# Exit status: 0 every step ran and every decodelab variant passed its check (a FlashInfer backend whose output
# FAILs ours is a verdict in the table, not a failure of the job); 1 a step failed, a decodelab variant FAILed or a
# FlashInfer backend did not run; 2 bad settings or a setup step (wheels, binary) failed.
set -u
set -o pipefail # a failing command before a pipe (cmd | tee) fails the job
BIN=${DECODELAB:-build-static/decodelab}
OUT=${OUT:-/tmp/dl_fi_out}
WHL=${WHL:-.whl}
SITE=${SITE:-/tmp/site}
WORK=${WORK:-/tmp/dl_fi_work}
BUDGET_S=${BUDGET_S:-240}
GRID=${GRID:-"1:1024 16:4096 256:1024 1:16384"}
RUN_TIME_S=${RUN_TIME_S:-1.5}
# SET=issue10: instead of the configurations below and the grid, issue 10's ten (ORDER of
# memfloor_configs.sh: its table's eight plus llama3-8B B256 L4096 e4m3 and bf16), each with
# --kv-scale absmax-tensor; ONLY="name ..." runs a subset of them (the ten do not fit one call: spread
# them over calls, one results table each).
# shellcheck source=tests/gpu/memfloor_configs.sh
source "$(dirname "$0")/memfloor_configs.sh" # C (name -> golden flags), ORDER
[[ "${CAND_MAX_MB:-12}" =~ ^[0-9]+$ ]] ||
    { echo "flashinfer_compare: CAND_MAX_MB='$CAND_MAX_MB' is not a whole number of MiB" >&2; exit 2; }
case "${SET:-}" in
    "") ;;
    issue10) for name in ${ONLY:-}; do
                 [ -n "${C[$name]:-}" ] || { echo "flashinfer_compare: ONLY names '$name', not one of: $ORDER" >&2; exit 2; }
             done ;;
    *) echo "flashinfer_compare: SET='$SET' is not known (known: issue10)" >&2; exit 2 ;;
esac
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-16} PYTHONUNBUFFERED=1 MAX_JOBS=${MAX_JOBS:-16}
mkdir -p "$OUT" "$WORK/golden" "$WORK/cand"
RES=$WORK/results.h5
LOG=$OUT/job.log
T0=$(date +%s)
el() { echo $(($(date +%s) - T0)); }
say() { echo "[$(el) s] $*" | tee -a "$LOG"; }
rc=0

# the static binary is ~48 MB, the wheels ~21 MB, the tree ~36 MB: over the 64 MiB a call may carry, so
# the binary travels compressed in .whl/: stripped and xz (~7 MB; `strip -o /tmp/dl build-static/decodelab
# && xz -6 -c /tmp/dl > .whl/decodelab.xz`), or gzipped as .whl/decodelab.gz (~14 MB, when the tree is small)
# (taken when DECODELAB is not set, even if an older build-static/ was left on a warm machine)
if [ -z "${DECODELAB:-}" ] && [ -f "$WHL/decodelab.xz" ]; then
    bash "$(dirname "$0")/unpack_carry.sh" "$WHL" || exit 2
fi
if [ -z "${DECODELAB:-}" ] && [ -f "$WHL/decodelab.gz" ]; then
    gunzip -c "$WHL/decodelab.gz" > "$WORK/decodelab" && chmod +x "$WORK/decodelab" && BIN=$WORK/decodelab
fi
[ -x "$BIN" ] || { echo "flashinfer_compare.sh: $BIN is not an executable (set DECODELAB, or carry $WHL/decodelab.xz or .gz)"; exit 2; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BASE="$ROOT/harness/baselines/flashinfer_decode.py"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >> "$LOG" 2>&1

# ---- 1. FlashInfer from the carried wheels
say "installing $(ls "$WHL"/*.whl 2>/dev/null | xargs -n1 basename | tr '\n' ' ')"
timeout 180 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
    "$WHL"/*.whl >> "$LOG" 2>&1 || { say "FAIL: pip install of $WHL/*.whl (see job.log)"; exit 2; }
for t in "$WHL"/*.whl.txz; do # a pure-Python wheel's files (dist-info included): what pip --target would copy
    [ -e "$t" ] || continue
    say "unpacking $(basename "$t") into $SITE"
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2], filter="data")' \
        "$t" "$SITE" >> "$LOG" 2>&1 || { say "FAIL: $t does not unpack into $SITE (see job.log)"; exit 2; }
done
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
if [ -d "$WHL/aot" ]; then
    mkdir -p "$SITE/flashinfer/data/aot" && cp -r "$WHL"/aot/* "$SITE/flashinfer/data/aot/" 2>/dev/null
    say "prebuilt JIT modules: $(ls "$WHL/aot" | wc -l) copied into flashinfer/data/aot"
fi
FI_VER=$(timeout 120 python3 -c "import flashinfer, torch; print(flashinfer.__version__, 'torch', torch.__version__)" 2>> "$LOG")
[ -n "$FI_VER" ] || { say "FAIL: import flashinfer (see job.log)"; exit 2; }
say "flashinfer $FI_VER"
(timeout 420 python3 "$BASE" --warm --dtypes bf16:e4m3,bf16:bf16 > "$WORK/warm.log" 2>&1; echo "warm exit $?" >> "$WORK/warm.log") &
WARM=$!

# ---- 2./3. one configuration: golden, decodelab run, FlashInfer, compare
# --models auto where the binary knows it (built from 2026-12-05 on), else all
MODELS=all; "$BIN" golden --help 2>/dev/null | grep -q 'or auto' && MODELS=auto
config() {  # name, then decodelab golden flags
    local name=$1; shift
    local g=$WORK/golden/$name.h5 peak
    say "== $name: golden $* --models $MODELS"
    timeout 150 "$BIN" golden "$@" --models "$MODELS" --force --out "$g" >> "$LOG" 2>&1 || { say "FAIL: golden $name"; rc=1; return; }
    say "   decodelab run --time"
    timeout 180 "$BIN" run "$g" --time --max-time-s "$RUN_TIME_S" --out "$RES" > "$WORK/run_$name.txt" 2>&1 || rc=1
    cat "$WORK/run_$name.txt" >> "$LOG"
    peak=$(sed -n 's/^peak read bandwidth: \([0-9.]*\) GB\/s.*/\1/p' "$WORK/run_$name.txt" | head -1)
    grep -E '^(bf16|fp32|fp8)' "$WORK/run_$name.txt" | awk '{printf "     %-18s %-8s %s us\n", $1, $2, $10}'
    say "   FlashInfer (peak ${peak:-unknown} GB/s)"
    rm -f "$WORK/cand/$name".*.cand.h5
    timeout 300 python3 "$BASE" "$g" --out-dir "$WORK/cand" --decodelab "$BIN" --max-time-s "$RUN_TIME_S" \
        ${peak:+--peak-read-gbps "$peak"} 2>&1 | tee -a "$LOG" | sed 's/^/     /' || rc=1
    local cands=("$WORK/cand/$name".*.cand.h5)
    if [ -e "${cands[0]}" ]; then
        say "   decodelab compare (${#cands[@]} candidates)"
        local cst=0
        timeout 120 "$BIN" compare "$g" "${cands[@]}" --out "$RES" >> "$LOG" 2>&1 || cst=$?
        # compare's exit 1 is a candidate that FAILed our check (tc-fa2 does against the bf16 model): a finding,
        # in the table, not the job's failure; any other non-zero status is
        case $cst in
            0) ;;
            1) say "   a FlashInfer candidate FAILed our check (its verdict is in the table)" ;;
            *) say "FAIL: decodelab compare exited $cst (see job.log)"; rc=1 ;;
        esac
    else
        say "   no candidate written"; rc=1
    fi
    cp -f "$RES" "$OUT/results.h5" 2>/dev/null; cp -f "${RES%.h5}.csv" "$OUT/results.csv" 2>/dev/null
    rm -f "$g"   # golden files are large (the 13B one is GBs); the results keep the hash and config
}

if [ "${SET:-}" = issue10 ]; then
    for name in ${ONLY:-$ORDER}; do
        if [ "$(el)" -ge "$BUDGET_S" ]; then say "issue10: stopping before $name (elapsed $(el) s >= BUDGET_S=$BUDGET_S)"; break; fi
        # shellcheck disable=SC2086 # the flags are meant to split
        config "$name" ${C[$name]} --q-dtype bf16 --kv-scale absmax-tensor
    done
    GRID="" MAIN=0
fi
if [ "${MAIN:-1}" = 1 ]; then   # MAIN=0: the grid alone (a quick plumbing check)
    config l3-8b_b64_l1024_e4m3 --preset llama3-8b --batch 64 --seq-len 1024 --q-dtype bf16 --kv-dtype e4m3 --kv-scale absmax-tensor
    config l3-8b_b64_l1024_bf16 --preset llama3-8b --batch 64 --seq-len 1024 --q-dtype bf16 --kv-dtype bf16 --kv-scale absmax-tensor
    config l-13b_b64_l1024_bf16 --preset llama-13b --batch 64 --seq-len 1024 --q-dtype bf16 --kv-dtype bf16 --kv-scale absmax-tensor
fi
for bl in $GRID; do
    if [ "$(el)" -ge "$BUDGET_S" ]; then say "grid: stopping before B:L=$bl (elapsed $(el) s >= BUDGET_S=$BUDGET_S)"; break; fi
    b=${bl%%:*}; l=${bl##*:}
    config "l3-8b_b${b}_l${l}_e4m3" --preset llama3-8b --batch "$b" --seq-len "$l" --q-dtype bf16 --kv-dtype e4m3 --kv-scale absmax-tensor
done
kill "$WARM" 2>/dev/null; wait "$WARM" 2>/dev/null
cat "$WORK/warm.log" >> "$LOG" 2>/dev/null
# the candidate files (FlashInfer's outputs) return with $OUT only while they fit what a lent-GPU call returns in
# one file (16 MiB; a warm machine's candidates of B128 L4096 e4m3 and bf16 took 13.5 MB, with B256 L4096 e4m3's
# added they did not return, 2026-12-05): CAND_MAX_MB (default 12), else they stay in $WORK
tar -C "$WORK" -czf "$WORK/candidates.tar.gz" cand 2>/dev/null
cand_mb=$(( $(stat -c %s "$WORK/candidates.tar.gz" 2>/dev/null || echo 0) / 1048576 ))
if [ "$cand_mb" -le "${CAND_MAX_MB:-12}" ]; then mv -f "$WORK/candidates.tar.gz" "$OUT/candidates.tar.gz"
else say "candidates.tar.gz is $cand_mb MiB, over CAND_MAX_MB=${CAND_MAX_MB:-12}: left in $WORK, not in \$OUT"; fi

# ---- 4. the table
say "table (results: $OUT/results.csv)"
python3 "$BASE" --table "${RES%.h5}.csv" > "$OUT/table.md" 2>> "$LOG" || rc=1
if [ "${SET:-}" = issue10 ]; then
    python3 "$BASE" --summary "${RES%.h5}.csv" > "$OUT/summary.md" 2>> "$LOG" || rc=1
    python3 "$BASE" --targets "${RES%.h5}.csv" > "$OUT/targets.md" 2>> "$LOG" || rc=1
fi
cat "$OUT/table.md"
say "done, exit $rc"
exit $rc

#!/usr/bin/env bash
# test_gpu_script.sh - the verdict logic of `make test-gpu` (tests/gpu/nasty_matrix.sh) without a GPU:
# a stub decodelab prints canned run tables, and the script's exit status and summary are checked.
#   - a FAIL of a variant in the known-failures list is an XFAIL: counted, the run passes (the list is
#     a fixture here, in the format of tests/gpu/known_failures.txt, given by DL_KNOWN_FAILURES);
#   - with DL_STRICT=1 the same FAIL fails the run;
#   - a FAIL of any other variant fails the run, a MISSING row too;
#   - the memcheck step (a stub compute-sanitizer): passes on zero errors, fails on an error or a
#     log without its summary line;
#   - the "page2" runs (DL_STREAM_STAGE=page2, bf16-hw-stream alone) come once for each case that takes them;
#   - DL_SPLITS: a setting it does not know is refused; "chain" runs each case once with --chain 3, "cluster"
#     once with DL_STREAM_MERGE=cluster, "hgroup1" once with the heads order and DL_STREAM_HEAD_GROUP=1;
#   - every device job script (tests/gpu/*.sh) parses (bash -n); queue_job.sh refuses an item it does not know;
#   - tests/gpu/modes_job.sh's checks (a FAIL, an untimed row, a row appended by --resume) through a stub;
#   - tests/gpu/chain_job.sh's table (every run named with its median) and its exit on a FAIL row, through a stub;
#   - the exit status of tests/gpu/verify_job.sh (a FAIL in its matrix step) and of tests/gpu/steps_job.sh (a step's
#     FAIL rows, except a DL_STREAM_DRY step's, whose rows FAIL by design).
# `make test-gpu-script` (part of `make test`).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/dl_test_gpu_script.XXXXXX)
trap 'rm -rf "$T"' EXIT
KNOWN=fp8-none-wgmma
# refused LOG PATTERN CMD...: CMD (its output kept in LOG) exits 2 with PATTERN in its output; else prints what
# it did instead and returns 1
refused() {
    local log=$1 pat=$2 rc
    shift 2
    "$@" > "$log" 2>&1
    rc=$?
    [ $rc -eq 2 ] && grep -q -- "$pat" "$log" && return 0
    echo "exit $rc (want 2 and '$pat'): $(cat "$log")"
    return 1
}
printf '# fixture\n%s\tissue 0\ta known failure of the stub\n' "$KNOWN" > "$T/known_failures.txt"
# the stub: STUB_FAIL = the variants whose rows say FAIL; STUB_DROP = a variant left out of the table; STUB_SKIP = the
# variants whose rows say SKIP; STUB_SKIP_PAGE2=1: bf16-hw-stream SKIPs under DL_STREAM_STAGE=page2. Its list holds
# fp8-none-simt with no kernel (kernel file '-'), which SKIPs every case, as the registry's does
cat > "$T/decodelab" <<STUB
#!/usr/bin/env bash
case "\$1" in
  info) echo "stub device"; exit 0 ;;
  list) printf 'variant compute\nbf16-fast-mma bf16\n$KNOWN fp8\nbf16-hw-stream bf16\nfp8-none-simt fp8 none simt fp8 - x\n'; exit 0 ;;
  golden) while [ \$# -gt 0 ]; do [ "\$1" = --out ] && : > "\$2"; shift; done; exit 0 ;;
  run) rc=0
       [ -n "\${STUB_ARGS_LOG:-}" ] && echo "\$* stage=\${DL_STREAM_STAGE:-} order=\${DL_STREAM_ORDER:-} group=\${DL_STREAM_HEAD_GROUP:-} merge=\${DL_STREAM_MERGE:-}" >> "\$STUB_ARGS_LOG"
       echo "fp8-none-simt SKIP no FP8 arithmetic on CUDA cores"
       for v in bf16-fast-mma $KNOWN bf16-hw-stream; do
         [ "\$v" = "\${STUB_DROP:-}" ] && continue
         if [ "\$v" = bf16-hw-stream ] && [ "\${STUB_SKIP_PAGE2:-0}" = 1 ] && [ "\${DL_STREAM_STAGE:-}" = page2 ]; then
           echo "\$v SKIP the stage refused"; continue; fi
         case " \${STUB_SKIP:-} " in *" \$v "*) echo "\$v SKIP not supported"; continue ;; esac
         case " \${STUB_FAIL:-} " in *" \$v "*) echo "\$v FAIL 1 1.0e-03 2.0e-03 0"; rc=1 ;;
                                     *) echo "\$v PASS 1 1.0e-07 2.0e-07 0" ;; esac
         [ "\$v" = bf16-hw-stream ] && echo "    schedule plan:8x2w:16segs:kernel:heads" # a split task merged (sanitize.sh)
       done; exit \$rc ;;
esac
exit 2
STUB
chmod +x "$T/decodelab"
# N = the matrix's runs with DL_SPLITS=1 that run every variant: one a case, one more for the 8-KV-head cases (their
# "page" run) and for the 16-bit D 128 ones (their "wide" run); P2 = the "page2" runs, bf16-hw-stream's alone (the
# 8-bit D 128 cases with pages a multiple of 16 and groups up to 8); the stub makes the golden files
counts=$(DECODELAB="$T/decodelab" DL_SEED=1 DL_WORKDIR="$T/w_count" DL_GENERATE_ONLY=1 bash "$ROOT/tests/gpu/nasty_matrix.sh" \
    | awk '/^case / { n++; if (/hkv=8/) n++; if (/ kv=(bf16|f16) D=128 /) n++
                      if (match($0, / kv=e(4m3|5m2) D=128 [A-Z]+ page=[0-9]+ group=[0-9]+ /)) {
                          split(substr($0, RSTART, RLENGTH), f, /[ =]/); if (f[8] % 16 == 0 && f[10] <= 8) p2++ } }
           END { print n + 0, p2 + 0 }')
read -r N P2 <<< "$counts"
[ "$N" -gt 0 ] && [ "$P2" -gt 0 ] || { echo "FAIL test_gpu_script: no cases counted ($counts)"; exit 1; }
fails=0
check() { # name, expected exit, expected text in the output, then env settings
    local name=$1 want=$2 text=$3; shift 3
    env DECODELAB="$T/decodelab" DL_KNOWN_FAILURES="$T/known_failures.txt" DL_SEED=1 DL_WORKDIR="$T/w_$name" DL_SKIP_SANITIZER=1 DL_SPLITS=1 "$@" \
        bash "$ROOT/tests/gpu/nasty_matrix.sh" > "$T/$name.log" 2>&1
    local rc=$?
    if [ $rc -ne "$want" ] || ! grep -q -- "$text" "$T/$name.log"; then
        echo "FAIL test_gpu_script $name: exit $rc (want $want), '$text' $(grep -q -- "$text" "$T/$name.log" && echo found || echo 'not found')"
        tail -5 "$T/$name.log"; fails=1
    else echo "PASS test_gpu_script $name"; fi
}
check all_pass 0 "0 FAIL, 0 XFAIL"
check known_fail 0 "0 FAIL, $N XFAIL" STUB_FAIL="$KNOWN"
check known_fail_strict 1 "$N FAIL, 0 XFAIL" STUB_FAIL="$KNOWN" DL_STRICT=1
check other_fail 1 "$N FAIL, 0 XFAIL" STUB_FAIL=bf16-fast-mma
check both_fail 1 "$N FAIL, $N XFAIL" STUB_FAIL="bf16-fast-mma $KNOWN"
check missing 1 "$N MISSING" STUB_DROP=bf16-fast-mma
check san_jobs_bad 2 "DL_SAN_JOBS='x' is not a positive whole number" DL_SAN_JOBS=x
check splits_bad 2 "DL_SPLITS: 'chains' is not a split count" DL_SPLITS=chains
# a variant with a kernel that SKIPs every case fails the matrix (fp8-none-simt, which has none, does not)
check never_runs 1 "test-gpu: bf16-fast-mma ran on no case (every cell SKIP)" STUB_SKIP=bf16-fast-mma
check page2_refused 1 "bf16-hw-stream SKIPped DL_STREAM_STAGE=page2 on cases it takes" STUB_SKIP_PAGE2=1
# the "chain" setting (issue 10, attempt #60) runs each case with three layers: run's own check then covers it
check chain_setting 0 "0 FAIL, 0 XFAIL" DL_SPLITS=chain STUB_ARGS_LOG="$T/chain_args.log"
n_chain=$(grep -c -- "--splits auto --chain 3 --max-time-s 0.02 --min-samples 1 --out" "$T/chain_args.log")
NC=$(DECODELAB="$T/decodelab" DL_SEED=1 DL_WORKDIR="$T/w_count" DL_GENERATE_ONLY=1 bash "$ROOT/tests/gpu/nasty_matrix.sh" |
     grep -c '^case ') # one chain run a case (the page and wide runs come beside it)
if [ "$NC" -gt 0 ] && [ "$n_chain" -eq "$NC" ]; then
    echo "PASS test_gpu_script chain_args ($n_chain runs with --chain 3, one a case)"
else echo "FAIL test_gpu_script chain_args: $n_chain runs with --chain 3 for $NC cases"; fails=1; fi
# setting_runs NAME SETTING PATTERN WHAT: DL_SPLITS=SETTING passes through the stub, and the stub's argument log
# holds one run a case of the form PATTERN (a grep regex) among the matrix's N runs
setting_runs() {
    local name=$1 setting=$2 pattern=$3 what=$4 log="$T/$1_args.log" n_set n_all
    check "${name}_setting" 0 "0 FAIL, 0 XFAIL" DL_SPLITS="$setting" STUB_ARGS_LOG="$log"
    n_set=$(grep -c -- "$pattern" "$log")
    n_all=$(wc -l < "$log")
    if [ "$n_set" -eq "$NC" ] && [ "$n_all" -eq $((N + P2)) ]; then
        echo "PASS test_gpu_script ${name}_args ($n_set runs with $what, one a case)"
    else echo "FAIL test_gpu_script ${name}_args: $n_set runs with $what for $NC cases ($n_all runs)"; fails=1; fi
}
# the "page2" runs (attempt #70): bf16-hw-stream alone with DL_STREAM_STAGE=page2, one a case that takes it
check page2_runs 0 "0 FAIL, 0 XFAIL" STUB_ARGS_LOG="$T/page2_args.log"
n_p2=$(grep -c -- "--splits auto --variants bf16-hw-stream --out .* stage=page2 " "$T/page2_args.log")
n_p2_any=$(grep -c -- "stage=page2 " "$T/page2_args.log")
if [ "$n_p2" -eq "$P2" ] && [ "$n_p2_any" -eq "$P2" ]; then
    echo "PASS test_gpu_script page2_args ($n_p2 runs of bf16-hw-stream with DL_STREAM_STAGE=page2)"
else echo "FAIL test_gpu_script page2_args: $n_p2 runs of bf16-hw-stream alone, $n_p2_any with page2, for $P2 cases"; fails=1; fi
# the "cluster" setting (attempt #61): each case once with --splits auto and DL_STREAM_MERGE=cluster
setting_runs cluster cluster "--splits auto --out .* merge=cluster$" "DL_STREAM_MERGE=cluster"
# the "hgroup1" setting (attempt #67): each case once with --splits auto, the heads order and head groups of one
setting_runs hgroup hgroup1 "--splits auto --out .* order=heads group=1 merge=$" "DL_STREAM_HEAD_GROUP=1"
# the memcheck step through a stub compute-sanitizer on PATH: it runs the stub decodelab, then prints
# the summary STUB_SAN asks for (clean: 0 errors; error: 3 errors and exit 99; none: no summary line)
mkdir -p "$T/bin"
cat > "$T/bin/compute-sanitizer" <<'SAN'
#!/usr/bin/env bash
shift 6 # --tool memcheck --error-exitcode 99 --print-limit 20
"$@"; rc=$?
case "${STUB_SAN:-clean}" in
  clean) echo "========= ERROR SUMMARY: 0 errors"; exit $rc ;;
  error) echo "========= ERROR SUMMARY: 3 errors"; exit 99 ;;
  none) exit $rc ;;
esac
SAN
chmod +x "$T/bin/compute-sanitizer"
check memcheck_clean 0 "memcheck: ok" DL_SKIP_SANITIZER=0 PATH="$T/bin:$PATH"
check memcheck_error 1 "memcheck: FAILED" DL_SKIP_SANITIZER=0 PATH="$T/bin:$PATH" STUB_SAN=error
check memcheck_no_summary 1 "memcheck: FAILED (no ERROR SUMMARY" DL_SKIP_SANITIZER=0 PATH="$T/bin:$PATH" STUB_SAN=none
# sanitize.sh through the same stubs (memcheck alone): every run clean -> 0; a variant with a kernel that SKIPs every
# case -> 1 (the tool checked nothing); bf16-hw-stream SKIPping the page2 cases run for it alone -> 1
sancheck() { # name, expected exit, expected text, then env settings
    local name=$1 want=$2 text=$3 rc=0; shift 3
    (cd "$ROOT" && env "$@" PATH="$T/bin:$PATH" DECODELAB="$T/decodelab" DL_TOOLS=memcheck DL_SEED=1 \
        DL_WORKDIR="$T/san_$name" bash tests/gpu/sanitize.sh) > "$T/san_$name.log" 2>&1 || rc=$?
    if [ $rc -eq "$want" ] && grep -q -- "$text" "$T/san_$name.log"; then echo "PASS test_gpu_script sanitize $name"
    else echo "FAIL test_gpu_script sanitize $name: exit $rc (want $want), '$text' expected:"; tail -5 "$T/san_$name.log"; fails=1; fi
}
sancheck clean 0 "test-gpu-sanitize: zero errors"
sancheck never_runs 1 "memcheck bf16-fast-mma: SKIPped every case" STUB_SKIP=bf16-fast-mma
sancheck page2_refused 1 "memcheck bf16-hw-stream .*SKIPped a case run for it alone" STUB_SKIP_PAGE2=1
# the device job scripts run only on the GPU machine: here at least each must parse
for f in "$ROOT"/tests/gpu/*.sh; do
    if bash -n "$f" 2> "$T/syntax.log"; then :; else
        echo "FAIL test_gpu_script syntax $(basename "$f"):"; cat "$T/syntax.log"; fails=1
    fi
done
[ $fails -eq 0 ] && echo "PASS test_gpu_script syntax of $(ls "$ROOT"/tests/gpu/*.sh | wc -l) device job scripts"
# queue_job.sh refuses an item it does not know before it touches the carry or the card (exit 2, the item named)
if why=$(cd "$T" && refused "$T/queue.log" "OTHER_ITEMS holds '4'" env OUT="$T/q" OTHER_ITEMS='x 4' bash "$ROOT/tests/gpu/queue_job.sh") &&
    why=$(cd "$T" && refused "$T/queue.log" "ITEMS holds 'x'" env OUT="$T/q" ITEMS='1 x' bash "$ROOT/tests/gpu/queue_job.sh"); then
    echo "PASS test_gpu_script queue_job_items"
else echo "FAIL test_gpu_script queue_job_items: $why"; fails=1; fi
# verify_job.sh (issue 10's "done when") carries a failing step into its exit status: its matrix step through the
# stub decodelab (carried gzipped, as on the device), all PASS -> 0, a FAIL row -> 1, in a folder whose tests/ is ours
mkdir -p "$T/vj/.carry" && ln -s "$ROOT/tests" "$T/vj/tests" && gzip -c "$T/decodelab" > "$T/vj/.carry/decodelab.gz"
vcheck() { # name, expected exit, then env settings
    local name=$1 want=$2 rc=0; shift 2
    (cd "$T/vj" && env "$@" OUT="$T/vj/out_$name" VERIFY_TMP="$T/vj/t_$name" STEPS=matrix DL_SEED=1 DL_SPLITS=1 \
        DL_SKIP_SANITIZER=1 DL_KNOWN_FAILURES="$T/known_failures.txt" bash tests/gpu/verify_job.sh) > "$T/vj/$name.log" 2>&1 || rc=$?
    if [ $rc -eq "$want" ] && grep -q "verify_job: exit $want" "$T/vj/$name.log"; then echo "PASS test_gpu_script verify_job $name"
    else echo "FAIL test_gpu_script verify_job $name: exit $rc (want $want)"; tail -5 "$T/vj/$name.log"; fails=1; fi
}
vcheck all_pass 0
vcheck a_fail 1 STUB_FAIL=bf16-fast-mma
# steps_job.sh carries a step's memfloor.sh exit, except exit 1 of a DL_STREAM_DRY step (its rows FAIL by design):
# a fake memfloor.sh (exit FAKE_RC) in a folder whose tests/gpu/steps_job.sh is ours
mkdir -p "$T/sj/tests/gpu" "$T/sj/.carry" && ln -s "$ROOT/tests/gpu/steps_job.sh" "$T/sj/tests/gpu/steps_job.sh"
printf '#!/usr/bin/env bash\nmkdir -p "$OUT"; echo "golden x" > "$OUT/memfloor_table.txt"; exit "${FAKE_RC:-0}"\n' \
    > "$T/sj/tests/gpu/memfloor.sh"
gzip -c "$T/decodelab" > "$T/sj/.carry/decodelab.gz"
scheck() { # name, expected exit, KNOBS of the one step, FAKE_RC
    local rc=0
    (cd "$T/sj" && FAKE_RC=$4 OUT="$T/sj/out_$1" STEPS_TMP="$T/sj/t_$1" STEPS="decodelab|8b_b1_l32768_e4m3|$3|bf16-hw-stream" \
        bash tests/gpu/steps_job.sh) > "$T/sj/$1.log" 2>&1 || rc=$?
    if [ $rc -eq "$2" ] && [ -s "$T/sj/out_$1/steps.tgz" ]; then echo "PASS test_gpu_script steps_job $1"
    else echo "FAIL test_gpu_script steps_job $1: exit $rc (want $2), steps.tgz $([ -s "$T/sj/out_$1/steps.tgz" ] && echo written || echo missing)"
        tail -5 "$T/sj/$1.log"; fails=1; fi
}
scheck clean 0 - 0
scheck fail_row 1 - 1
scheck dry_rows 0 'DL_STREAM_DRY=4 DL_STREAM_DRY=4,DL_STREAM_BOXHEADS=1' 1
scheck dry_error 2 'DL_STREAM_DRY=1' 2
scheck dry0_fail 1 'DL_STREAM_DRY=0' 1
# memfloor_summary.py on a committed memfloor folder cut short (2026-12-02b: no memfloor_table.txt): its
# B128 L4096 e4m3 line carries the CSV's bf16-hw-stream median (287.8 us) and frac_ref; a folder whose
# knob log does not account for the CSV's rows is refused
MF="$ROOT/results/h200_2026-12-02b/memfloor_all"
want=$(python3 -c "import csv,sys; r=[x for x in csv.DictReader(open(sys.argv[1])) if x['variant']=='bf16-hw-stream' and x['golden_path'].endswith('/8b_b128_l4096_e4m3.h5')][0]; print('%.1f (%.3f)' % (1e6*float(r['time_median_s']), float(r['frac_ref'])))" "$MF/memfloor.csv")
if python3 "$ROOT/tests/gpu/memfloor_summary.py" "$MF" bf16-hw-stream > "$T/ms.md" 2>&1 &&
    grep -q "^| 8b_b128_l4096_e4m3 | default | [0-9.]* | $want |" "$T/ms.md"; then
    mkdir -p "$T/mf_bad" && cp "$MF/memfloor.csv" "$T/mf_bad/" && head -1 "$MF/memfloor_knobs.txt" > "$T/mf_bad/memfloor_knobs.txt"
    if why=$(refused "$T/ms_bad.log" "accounts for 6 rows" python3 "$ROOT/tests/gpu/memfloor_summary.py" "$T/mf_bad"); then
        echo "PASS test_gpu_script memfloor_summary ($want)"
    else echo "FAIL test_gpu_script memfloor_summary: a knob log short of the CSV: $why"; fails=1; fi
else
    echo "FAIL test_gpu_script memfloor_summary: no B128 line with $want:"; cat "$T/ms.md"; fails=1
fi
# tl_ctas_summary.py on the committed per-CTA rows of the 70B page stage (2026-12-04c call 1, launches 6-12): its
# group of 16-segment CTAs carries their count and the mean exit computed here from the same files; a file
# that is not a DL_STREAM_TL_CTAS file is refused with exit 2
mkdir -p "$T/tl" && tar xzf "$ROOT/results/h200_2026-12-04c/call1-steps.tgz" -C "$T/tl" --wildcards 'steps/tl70p.*.tsv'
want=$(python3 -c "
import glob, re, statistics, sys
ex = []
for p in glob.glob(sys.argv[1] + '.*.tsv'):
    if int(re.match(r'.*\.(\d+)\.tsv$', p).group(1)) <= 5: continue
    rows = [l.split() for l in open(p)][1:]
    ex += [float(r[4]) for r in rows if r[5] == '16']
print('%d %.2f' % (len(ex) // 7, statistics.fmean(ex)))" "$T/tl/steps/tl70p")
read -r want_n want_exit <<< "$want"
if python3 "$ROOT/tests/gpu/tl_ctas_summary.py" "$T/tl/steps/tl70p" > "$T/tl.out" 2>&1 &&
    grep -q "segments  16  tiles   248  *$want_n CTAs  first  *[0-9.]*  exit  *$want_exit " "$T/tl.out"; then
    printf 'cta\tnope\n' > "$T/tl/bad.6.tsv" && cp "$T/tl/bad.6.tsv" "$T/tl/bad.7.tsv"
    if why=$(refused "$T/tl_bad.log" "not a DL_STREAM_TL_CTAS file" python3 "$ROOT/tests/gpu/tl_ctas_summary.py" "$T/tl/bad"); then
        echo "PASS test_gpu_script tl_ctas_summary ($want_n CTAs of 16 segments, mean exit $want_exit us)"
    else echo "FAIL test_gpu_script tl_ctas_summary: bad file: $why"; fails=1; fi
else
    echo "FAIL test_gpu_script tl_ctas_summary: no 16-segment group of $want_n CTAs, mean exit $want_exit:"; cat "$T/tl.out"; fails=1
fi
# the start's milestones (files from 2026-12-04's fourth session on): per launch the median over the CTAs that
# reached each one; -1 (not reached) left out, '-' where none did
printf 'cta\tsm\tentry_us\tfirst_tile_us\texit_us\tsegments\ttiles\trecord_us\tpage_id_us\tissue_us\tq_us\n' > "$T/tl/ms.6.tsv"
printf '0\t0\t0.0\t5.0\t20.0\t1\t8\t1.0\t2.0\t2.5\t-1\n1\t1\t0.1\t6.0\t21.0\t1\t8\t2.0\t3.0\t3.5\t-1\n2\t2\t0.1\t7.0\t22.0\t1\t8\t3.0\t4.0\t-1\t-1\n' >> "$T/tl/ms.6.tsv"
sed 's/\t-1$/\t4.5/' "$T/tl/ms.6.tsv" > "$T/tl/ms.7.tsv"
if python3 "$ROOT/tests/gpu/tl_ctas_summary.py" "$T/tl/ms" > "$T/tl_ms.out" 2>&1 &&
    grep -q "launch  6: .* | start p50: record 2.00 page id 3.00 issue 3.00 first tile 6.00 q -$" "$T/tl_ms.out" &&
    grep -q "launch  7: .* | start p50: record 2.00 page id 3.00 issue 3.00 first tile 6.00 q 4.50$" "$T/tl_ms.out"; then
    echo "PASS test_gpu_script tl_ctas_summary milestones"
else
    echo "FAIL test_gpu_script tl_ctas_summary milestones:"; cat "$T/tl_ms.out"; fails=1
fi
# --bytes: the main phase's rate, the bytes over (last exit - median first tile): 22.0 - 6.0 = 16 us for 48 MB is
# 3.00 TB/s in both launches; a negative byte count is refused with exit 2
if python3 "$ROOT/tests/gpu/tl_ctas_summary.py" "$T/tl/ms" --bytes 48e6 > "$T/tl_rate.out" 2>&1 &&
    [ "$(grep -c '| main phase 16.00 us, 3.00 TB/s$' "$T/tl_rate.out")" = 2 ]; then
    if why=$(refused "$T/tl_rate_bad.log" "cannot be negative" python3 "$ROOT/tests/gpu/tl_ctas_summary.py" "$T/tl/ms" --bytes -1); then
        echo "PASS test_gpu_script tl_ctas_summary --bytes"
    else echo "FAIL test_gpu_script tl_ctas_summary --bytes -1: $why"; fails=1; fi
else
    echo "FAIL test_gpu_script tl_ctas_summary --bytes:"; cat "$T/tl_rate.out"; fails=1
fi
# the start against the end, per launch: three CTAs of 8 tiles whose first tiles come at 5, 6, 7 us and whose exits
# fall at 30, 26, 22 us (the late starters run their tiles at 3.125, 2.5, 1.875 us a tile): rho -1.00 both ways,
# the median 2.500 us a tile, in both launches
printf 'cta\tsm\tentry_us\tfirst_tile_us\texit_us\tsegments\ttiles\n' > "$T/tl/se.6.tsv"
printf '0\t0\t0.0\t5.0\t30.0\t1\t8\n1\t1\t0.1\t6.0\t26.0\t1\t8\n2\t2\t0.1\t7.0\t22.0\t1\t8\n' >> "$T/tl/se.6.tsv"
cp "$T/tl/se.6.tsv" "$T/tl/se.7.tsv"
if python3 "$ROOT/tests/gpu/tl_ctas_summary.py" "$T/tl/se" > "$T/tl_se.out" 2>&1 &&
    [ "$(grep -c 'first tile vs exit rho -1.00, vs us a tile after it rho -1.00 (us a tile p10 [0-9.]* p50 2.500 ' "$T/tl_se.out")" = 2 ]; then
    echo "PASS test_gpu_script tl_ctas_summary start against end"
else
    echo "FAIL test_gpu_script tl_ctas_summary start against end:"; cat "$T/tl_se.out"; fails=1
fi
# modes_job.sh's checks through a stub decodelab (golden touches --out; run appends one row a variant to the CSV
# twin of --out, with the timing mode and flush its flags ask for; MSTUB=resume: --resume appends too, MSTUB=fail:
# the graph rows FAIL, MSTUB=untimed: the hot rows have no median): clean passes, each defect fails with its message
mkdir -p "$T/mstub"
cat > "$T/mstub/dl" <<'STUB'
#!/usr/bin/env bash
cmd=$1; shift
if [ "$cmd" = golden ]; then while [ $# -gt 0 ]; do [ "$1" = --out ] && : > "$2"; shift; done; exit 0; fi
g=$1; out=; resume=0; graph=; hot=0; flush=write; vars=
while [ $# -gt 0 ]; do case $1 in --out) out=$2; shift;; --variants) vars=$2; shift;; --resume) resume=1;;
    --hot-l2) hot=1;; --graph) graph=graph-;; --flush) flush=$2; shift;; esac; shift; done
mode=${graph}cold-l2; [ $hot = 1 ] && { mode=${graph}hot-l2; flush=none; }
csv=${out%.h5}.csv
[ -f "$csv" ] || echo "golden_path,variant,timing_mode,flush,verdict,time_median_s,ref_read_s,frac_ref" > "$csv"
[ $resume = 1 ] && [ "${MSTUB:-}" != resume ] && exit 0
verdict=PASS; med=1e-5; [ "${MSTUB:-}" = fail ] && [ -n "$graph" ] && verdict=FAIL
[ "${MSTUB:-}" = untimed ] && [ $hot = 1 ] && med=nan
for v in ${vars//,/ }; do echo "$g,$v,$mode,$flush,$verdict,$med,0.9e-5,0.9" >> "$csv"; done
[ $verdict = FAIL ] && exit 1; exit 0
STUB
chmod +x "$T/mstub/dl"
mcheck() { # name, expected exit, expected text, then env settings
    local name=$1 want=$2 text=$3; shift 3
    rm -rf "$T/mstub/out" "$T/mstub/w"
    local rc=0
    (cd "$ROOT" && env "$@" DECODELAB="$T/mstub/dl" OUT="$T/mstub/out" DL_WORKDIR="$T/mstub/w" bash tests/gpu/modes_job.sh) \
        > "$T/mstub/$name.log" 2>&1 || rc=$?
    if [ $rc -eq "$want" ] && grep -q -- "$text" "$T/mstub/$name.log"; then echo "PASS test_gpu_script modes_job $name"
    else echo "FAIL test_gpu_script modes_job $name: exit $rc (want $want), '$text' expected:"; tail -5 "$T/mstub/$name.log"; fails=1; fi
}
mcheck clean 0 "every row PASS and timed; --resume appended nothing"
mcheck resume_appends 1 "--resume appended 3 rows on 8b_b64_l1024_e4m3" MSTUB=resume
mcheck graph_fails 1 "exit 1: a row FAILed" MSTUB=fail
mcheck hot_untimed 1 "a check FAILED" MSTUB=untimed
# chain_job.sh (issue 10, attempt #60) through a stub decodelab: run writes one row a variant to the CSV twin of --out,
# its median 20 us standalone or in a plain chain, 15 us in a chain with DL_STREAM_PDL=1 (CSTUB=fail: the chain's
# rows FAIL); the table names each run with its median, a FAIL row fails the job
mkdir -p "$T/cstub"
cat > "$T/cstub/dl" <<'STUB'
#!/usr/bin/env bash
cmd=$1; shift
if [ "$cmd" = golden ]; then while [ $# -gt 0 ]; do [ "$1" = --out ] && : > "$2"; shift; done; exit 0; fi
g=$1; out=; vars=; chain=0
while [ $# -gt 0 ]; do case $1 in --out) out=$2; shift;; --variants) vars=$2; shift;; --chain) chain=$2; shift;; esac; shift; done
csv=${out%.h5}.csv
echo "golden_path,variant,timing_mode,verdict,time_median_s,ref_read_s,frac_ref,model_schedule" > "$csv"
verdict=PASS; [ "${CSTUB:-}" = fail ] && [ "$chain" -gt 1 ] && verdict=FAIL
med=2e-5; [ "$chain" -gt 1 ] && [ "${DL_STREAM_PDL:-}" = 1 ] && med=1.5e-5
for v in ${vars//,/ }; do echo "$g,$v,chain$chain,$verdict,$med,1e-5,0.5,plan:stub" >> "$csv"; done
[ $verdict = FAIL ] && exit 1; exit 0
STUB
chmod +x "$T/cstub/dl" && gzip -c "$T/cstub/dl" > "$T/cstub/base.gz"
ccheck() { # name, expected exit, then env settings; the table is checked below
    local name=$1 want=$2; shift 2
    rm -rf "$T/cstub/out" "$T/cstub/w"
    local rc=0
    (cd "$ROOT" && env "$@" DECODELAB="$T/cstub/dl" BASE="$T/cstub/base.gz" CONFIGS=8b_b1_l32768_e4m3 \
        VARIANTS=bf16-hw-stream OUT="$T/cstub/out" DL_WORKDIR="$T/cstub/w" bash tests/gpu/chain_job.sh) \
        > "$T/cstub/$name.log" 2>&1 || rc=$?
    [ $rc -eq "$want" ] && return 0
    echo "FAIL test_gpu_script chain_job $name: exit $rc (want $want)"; tail -5 "$T/cstub/$name.log"; fails=1; return 1
}
row() { grep -E "^8b_b1_l32768_e4m3 +bf16-hw-stream +$1 " "$T/cstub/out/chain_table.txt"; }
if ccheck clean 0; then
    if row chain-pdl | grep -qE " PASS +15.00 " && row chain-plain | grep -qE " PASS +20.00 " && row base1 | grep -q PASS &&
        row alone2 | grep -q PASS && [ "$(grep -c '^8b_b1' "$T/cstub/out/chain_table.txt")" -eq 6 ] &&
        [ "$(wc -l < "$T/cstub/out/chain.csv")" -eq 7 ]; then echo "PASS test_gpu_script chain_job clean"
    else echo "FAIL test_gpu_script chain_job clean: the table lacks a run or a median:"; cat "$T/cstub/out/chain_table.txt"; fails=1; fi
fi
if ccheck chain_fails 1 CSTUB=fail; then
    if row chain-pdl | grep -qE " FAIL "; then echo "PASS test_gpu_script chain_job chain_fails"
    else echo "FAIL test_gpu_script chain_job chain_fails: no FAIL row"; cat "$T/cstub/out/chain_table.txt"; fails=1; fi
fi
exit $fails

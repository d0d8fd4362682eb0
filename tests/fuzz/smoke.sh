#!/usr/bin/env bash
# smoke.sh - `make fuzz-smoke`: for each named target (golden, cli, results):
#  1. replay every kept regression input (tests/fuzz/regressions/<target>/*): each must pass;
#  2. fuzz for FUZZ_SECONDS from a scratch copy of the seeds (tests/fuzz/corpus/<target>/),
#     in libFuzzer's fork mode so that the run goes on after a finding;
#  3. replay each finding and classify it by where it happened: inside libhdf5 (the first
#     stack frame outside the sanitizer runtime is in libhdf5 or libconfig: a library bug on a hostile
#     file, see tests/README.md; reported, kept, not failing) or in our code (FAIL). An OOM by the
#     RSS limit carries no allocation stack: it is replayed under a malloc limit to find one.
# Exit 1 on any finding in our code. Prints executions per target.
# Environment: FUZZ_BUILD (default build-fuzz), FUZZ_SECONDS (default 60), FUZZ_RSS_MB
# (default 2048, also the malloc limit: an allocation sized by a hostile file is a finding).
set -u
B=${FUZZ_BUILD:-build-fuzz}
SECS=${FUZZ_SECONDS:-60}
RSS=${FUZZ_RSS_MB:-2048}
HERE=$(cd "$(dirname "$0")" && pwd)
export LSAN_OPTIONS="suppressions=$HERE/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="fast_unwind_on_malloc=0:${ASAN_OPTIONS:-}"
status=0
summary=""

# Where did the finding in log $1 happen? Prints "libhdf5" or "ours: <frame>".
classify() {
    local frame
    frame=$(grep -E '^ *#[0-9]+ ' "$1" | grep -vE 'in (__interceptor_|__asan|__sanitizer|__lsan|__ubsan|malloc|calloc|realloc|free|operator|fuzzer::)|libclang_rt|compiler-rt|libc\.so|sysdeps/|/fuzz_[a-z]+\+0x' | head -1)
    if [ -z "$frame" ]; then echo "ours: (no stack frame)"; return; fi
    case "$frame" in *libhdf5*|*libconfig*) echo "library" ;; *) echo "ours: $(echo "$frame" | sed 's/^ *//' | cut -c1-160)" ;; esac
}

for t in "$@"; do
    bin="$B/fuzz/fuzz_$t"
    [ -x "$bin" ] || { echo "fuzz-smoke: $bin missing (make fuzz)" >&2; exit 2; }
    rm -rf "$B/artifacts/$t" "$B/work/$t"
    mkdir -p "$B/artifacts/$t" "$B/corpus/$t" "$B/logs" "$B/work/$t"
    # 1. regressions
    nreg=0
    if [ -d "$HERE/regressions/$t" ]; then
        for f in "$HERE/regressions/$t"/*; do
            [ -f "$f" ] || continue
            nreg=$((nreg + 1))
            if ! "$bin" -rss_limit_mb="$RSS" -malloc_limit_mb="$RSS" -timeout=30 "$f" > "$B/logs/$t.regression.log" 2>&1; then
                echo "fuzz-smoke: $t: regression input $f fails again:"
                grep -E 'ERROR|SUMMARY|^ *#[0-9]' "$B/logs/$t.regression.log" | head -15
                status=1
            fi
        done
    fi
    # 2. fuzz (fork mode: one job at a time, keep going after crashes, timeouts and OOMs)
    cp -n "$HERE/corpus/$t"/* "$B/corpus/$t/" 2>/dev/null
    log="$B/logs/$t.log"
    (cd "$B/work/$t" && "$OLDPWD/$bin" "$OLDPWD/$B/corpus/$t" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 \
        -ignore_ooms=1 -max_total_time="$SECS" -rss_limit_mb="$RSS" -malloc_limit_mb="$RSS" -timeout=10 \
        -artifact_prefix="$OLDPWD/$B/artifacts/$t/") > "$log" 2>&1
    execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
    # 3. classify the findings
    nours=0; nlib=0; kinds=""
    for a in "$B/artifacts/$t"/*; do
        [ -f "$a" ] || continue
        alog="$B/logs/$t.$(basename "$a").log"
        "$bin" -rss_limit_mb="$RSS" -malloc_limit_mb="$RSS" -timeout=10 "$a" > "$alog" 2>&1 && continue  # not reproducible
        where=$(classify "$alog")
        if [ "$where" = "ours: (no stack frame)" ] && grep -q "libFuzzer: timeout" "$alog"; then
            # a timeout has no stack to classify and may be the machine's load (2 cores shared with a
            # build): once more with 6x the time; a real hang times out again and stays ours
            "$bin" -rss_limit_mb="$RSS" -malloc_limit_mb="$RSS" -timeout=60 "$a" > "$alog.retry" 2>&1 && continue
            where=$(classify "$alog.retry")
        fi
        if [ "$where" != library ] && grep -q "libFuzzer: out-of-memory (used:" "$alog"; then
            # the RSS limit was crossed: the stack printed is libFuzzer's, not the allocation's. Replay
            # with a malloc limit of a quarter of it (and room above the RSS limit) so that the large
            # allocation itself stops the run with its stack, and classify that
            "$bin" -rss_limit_mb=$((RSS * 4)) -malloc_limit_mb=$((RSS / 4)) -timeout=60 "$a" > "$alog.malloc" 2>&1
            grep -q "libFuzzer: out-of-memory (malloc(" "$alog.malloc" && where=$(classify "$alog.malloc")
        fi
        kind=$(basename "$a" | cut -d- -f1)
        if [ "$where" = library ]; then
            nlib=$((nlib + 1)); kinds="$kinds $kind"
        else
            nours=$((nours + 1))
            echo "fuzz-smoke: $t: FINDING in our code ($kind): $where"
            echo "            input kept at $a; log $alog"
            status=1
        fi
    done
    line=$(printf '%-8s %10s executions in %4ss (%s), %d regression inputs replayed; findings: %d ours, %d inside libhdf5/libconfig%s' \
        "$t" "${execs:-?}" "$SECS" "${cov:-no coverage line}" "$nreg" "$nours" "$nlib" "${kinds:+ (${kinds# })}")
    summary="$summary$line"$'\n'
done
echo "== fuzz-smoke"
printf '%s' "$summary"
if [ $status -eq 0 ]; then echo "fuzz-smoke: no finding in our code"; else echo "fuzz-smoke: FAILED"; fi
exit $status

#!/usr/bin/env bash
# race_job.sh - one GPU-machine call (issue 10, attempt #14): is the nondeterminism of bf16-cast-stream
# and bf16-fast-stream on the llama3-70B shape (B64 L4096 e4m3, split tasks; stream_ab_job.sh,
# 2026-12-03) a race in the new code? The same golden file, REPS runs of each binary (each run launches
# twice and compares bitwise: column det), then compute-sanitizer racecheck on a small split case of
# that shape with the new binary. Expects .carry/decodelab.gz (new) and .carry/decodelab-old.gz.
# Environment: OUT (required), REPS (default 3), VARIANTS. Writes $OUT/race.tgz; prints the verdicts.
set -uo pipefail
: "${OUT:?set OUT}"
REPS=${REPS:-3}
[[ $REPS =~ ^[1-9][0-9]?$ ]] || { echo "race_job: REPS='$REPS' is not an integer in 1..99" >&2; exit 2; }
VARIANTS=${VARIANTS:-"bf16-cast-stream,bf16-fast-stream,bf16-hw-stream"}
T=/tmp/race; rm -rf "$T"; mkdir -p "$T" "$OUT"
for b in new old; do
    f=.carry/decodelab.gz; [ $b = old ] && f=.carry/decodelab-old.gz
    gunzip -c "$f" > "$T/$b" && chmod +x "$T/$b" || { echo "race_job: no $f"; exit 2; }
done
"$T/new" golden --preset llama3-70b --batch 64 --seq-len 4096 --kv-dtype e4m3 --kv-scale absmax-tensor \
    --models exact,bf16 --seed 1 --out "$T/g70.h5" > "$T/golden.log" 2>&1 || { echo "golden failed"; cat "$T/golden.log"; exit 2; }
for b in new old; do
    for i in $(seq "$REPS"); do
        timeout 120 "$T/$b" run "$T/g70.h5" --variants "$VARIANTS" > "$T/run_${b}_$i.log" 2>&1
        echo "$b run $i (exit $?):"
        grep -E '^(bf16|fp8)[a-z0-9-]+ +(PASS|FAIL|SKIP)' "$T/run_${b}_$i.log" | awk '{ printf "  %-18s %-5s o_relL2 %s o_head %s det %s\n", $1, $2, $4, $5, $NF }'
    done
done
"$T/new" golden --preset llama3-70b --batch 2 --seq-len 2048 --kv-dtype e4m3 --kv-scale absmax-tensor \
    --models exact,bf16 --seed 2 --out "$T/small.h5" > /dev/null 2>&1
for v in ${VARIANTS//,/ }; do
    timeout 150 compute-sanitizer --tool racecheck --racecheck-report all "$T/new" run "$T/small.h5" --variants "$v" \
        --splits 4 > "$T/racecheck_$v.log" 2>&1
    echo "racecheck $v (exit $?): $(grep -E 'RACECHECK SUMMARY|hazard' "$T/racecheck_$v.log" | tail -2 | tr '\n' ' ')"
done
rm -f "$T/g70.h5" "$T/small.h5"
tar czf "$OUT/race.tgz" --exclude=race/new --exclude=race/old -C /tmp race

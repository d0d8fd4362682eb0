#!/usr/bin/env bash
# modes_job.sh - one device call: the timing modes of `decodelab run` on the streaming family where the plan
# merges by ticket (B64 L1024 e4m3) and where it launches the merge kernel (B1 L32768 e4m3): cold L2 with the
# write flush (default), the read flush, hot L2, the graph mode cold and hot, then `--resume` over the same
# results file, which must time nothing again. Checks: every row PASS, every timed row has a median, the resume
# run appends no row. Environment: OUT (required), DECODELAB (default .carry/decodelab.gz, unpacked),
# CONFIGS (default the two above), VARIANTS (default 'bf16-hw-stream,bf16-fast-stream,fp8-none-wgmma'),
# MAXT (--max-time-s, default 0.5). Prints the table last; exit 1 on a failed check, 2 when a run cannot run.
set -euo pipefail
: "${OUT:?set OUT}"
VARIANTS=${VARIANTS:-bf16-hw-stream,bf16-fast-stream,fp8-none-wgmma}
CONFIGS=${CONFIGS:-"8b_b64_l1024_e4m3 8b_b1_l32768_e4m3"}
MAXT=${MAXT:-0.5}
W=${DL_WORKDIR:-/tmp/dl_modes}; mkdir -p "$W" "$OUT"
if [ -z "${DECODELAB:-}" ]; then
    gunzip -c .carry/decodelab.gz > "$W/decodelab" && chmod +x "$W/decodelab"; DECODELAB=$W/decodelab
fi
# shellcheck source=tests/gpu/memfloor_configs.sh
source "$(dirname "$0")/memfloor_configs.sh" # C (name -> golden flags)
res=$OUT/modes.h5; rm -f "$res" "${res%.h5}.csv"
rows() { python3 -c 'import csv,sys; print(sum(1 for _ in csv.DictReader(open(sys.argv[1]))))' "${res%.h5}.csv"; }
bad=0
for cfg in $CONFIGS; do
    [ -n "${C[$cfg]:-}" ] || { echo "modes_job: unknown config '$cfg'" >&2; exit 2; }
    g=$W/$cfg.h5
    # shellcheck disable=SC2086 # the config's flags and the mode are word lists
    [ -f "$g" ] || "$DECODELAB" golden ${C[$cfg]} --kv-scale absmax-tensor --models exact,bf16,fp8wg --seed 1 --out "$g" > /dev/null
    for mode in "" "--flush read" "--hot-l2" "--graph" "--graph --hot-l2"; do
        m=${mode//--/}; m=${m:-cold}; log=$OUT/${cfg}_${m// /_}.log
        echo "== $cfg --time $mode" >&2
        rc=0
        # shellcheck disable=SC2086
        "$DECODELAB" run "$g" --variants "$VARIANTS" --time $mode --max-time-s "$MAXT" --out "$res" > "$log" 2>&1 || rc=$?
        if [ $rc -eq 1 ]; then echo "   exit 1: a row FAILed (see $log)" >&2; bad=1
        elif [ $rc -ne 0 ]; then echo "   exit $rc (see $log)" >&2; cat "$log" >&2; exit 2; fi
    done
    before=$(rows)
    log=$OUT/${cfg}_resume.log
    "$DECODELAB" run "$g" --variants "$VARIANTS" --time --max-time-s "$MAXT" --out "$res" --resume > "$log" 2>&1 ||
        { echo "   resume run exit $? (see $log)" >&2; bad=1; }
    after=$(rows)
    if [ "$after" != "$before" ]; then echo "modes_job: --resume appended $((after - before)) rows on $cfg" >&2; bad=1
    else echo "   --resume: no row appended ($after rows)" >&2; fi
done
python3 - "${res%.h5}.csv" > "$OUT/modes_table.txt" <<'PY' || bad=1
import csv, sys, os, math
rows = list(csv.DictReader(open(sys.argv[1])))
bad = 0
print("%-24s %-18s %-14s %-6s %-6s %10s %10s %8s" % ("golden", "variant", "timing_mode", "flush", "verd", "median_us", "ref_us", "frac_ref"))
for r in rows:
    f = lambda k, s=1.0: float(r.get(k, "nan") or "nan") * s
    if r["verdict"] != "PASS" or math.isnan(f("time_median_s")): bad = 1
    print("%-24s %-18s %-14s %-6s %-6s %10.2f %10.2f %8.3f" % (os.path.basename(r["golden_path"])[:24], r["variant"], r["timing_mode"],
          r["flush"], r["verdict"], f("time_median_s", 1e6), f("ref_read_s", 1e6), f("frac_ref")))
sys.exit(bad)
PY
cat "$OUT/modes_table.txt"
[ $bad -eq 0 ] && echo "modes_job: every row PASS and timed; --resume appended nothing" || echo "modes_job: a check FAILED (above)"
exit $bad

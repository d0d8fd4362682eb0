#!/usr/bin/env bash
# memfloor.sh - the issue-10 benchmark (FP8 decode at the memory floor): builds the
# golden files of the configurations on the GPU machine (all cores), then times
# the selected variants on each with `decodelab run --time` (cold L2, median).
# Environment:
#   DECODELAB   binary (default build/decodelab)      OUT   results folder (required)
#   CONFIGS     space-separated names from the table below (default: all)
#   VARIANTS    --variants glob list (default 'bf16-*-mma,*-stream,fp8-none-wgmma')
#   KNOBS       space-separated env settings to sweep, each "A=1,B=2" or "-" for none (default "-")
#   MAXT        --max-time-s per variant (default 3)
# A FAIL verdict is reported, timed anyway (--time-failed) and makes the exit status 1; a run
# that cannot run (exit 2) stops the script. The last lines are a table: config, knobs, variant, us, the read,
# frac_ref, errors, cta_max% (the plan's busiest CTA over its CTAs' mean, results version 5; "-" without a plan), and
# the planned kernels' stage and merge (page2, page, deep or tile / ticket or kernel..., from model_schedule).
set -euo pipefail
DECODELAB=${DECODELAB:-build/decodelab}
: "${OUT:?set OUT to the results folder}"
VARIANTS=${VARIANTS:-'bf16-*-mma,*-stream,fp8-none-wgmma'}
KNOBS=${KNOBS:--}
MAXT=${MAXT:-3}
W=${DL_WORKDIR:-/tmp/dl_memfloor}; mkdir -p "$W" "$OUT"
# shellcheck source=tests/gpu/memfloor_configs.sh
source "$(dirname "$0")/memfloor_configs.sh" # C (name -> golden flags), ORDER
CONFIGS=${CONFIGS:-$ORDER}
TABLE="$OUT/memfloor_table.txt"; : > "$TABLE"
failed=0
KNOBLOG="$OUT/memfloor_knobs.txt"; : > "$KNOBLOG" # one line per run: the knobs of the rows it appended
for cfg in $CONFIGS; do
  [ -n "${C[$cfg]:-}" ] || { echo "memfloor: unknown config '$cfg' (known: ${!C[*]})" >&2; exit 2; }
  g="$W/$cfg.h5"
  models=exact,bf16; case "${C[$cfg]}" in *e4m3*|*e5m2*) models=exact,bf16,fp8wg ;; esac # fp8wg: the wgmma rows' model
  [ -f "$g" ] || "$DECODELAB" golden ${C[$cfg]} --kv-scale absmax-tensor --models $models --seed 1 --out "$g" > /dev/null
  for knob in $KNOBS; do
    envs=(); [ "$knob" != "-" ] && IFS=, read -ra envs <<< "$knob"
    log="$OUT/${cfg}_${knob//[=,\/]/_}.log"
    echo "memfloor: $cfg ${knob}" >&2
    rc=0; env "${envs[@]}" "$DECODELAB" run "$g" --variants "$VARIANTS" --time --time-failed --max-time-s "$MAXT" --out "$OUT/memfloor.h5" > "$log" 2>&1 || rc=$?
    if [ $rc -eq 1 ]; then echo "memfloor: a variant FAILed (timed anyway; the table shows which): $log" >&2; failed=1
    elif [ $rc -ne 0 ]; then echo "memfloor: run failed (exit $rc): $log" >&2; cat "$log" >&2; exit 2; fi
    n=$(grep -oE '^results: [0-9]+ rows' "$log" | grep -oE '[0-9]+')
    echo "${n:-0} $knob" >> "$KNOBLOG"
  done
done
# the table, from the results CSV (one row per config x knobs x variant; the knobs of each row from
# memfloor_knobs.txt, the rows of each run in order)
python3 - "$OUT/memfloor.csv" "$KNOBLOG" > "$TABLE" <<'PY'
import csv, sys, os
rows = list(csv.DictReader(open(sys.argv[1])))
knobs = []
for line in open(sys.argv[2]):
    n, k = line.split(" ", 1)
    knobs += [k.strip()] * int(n)
print("%-34s %-26s %-18s %-6s %10s %10s %8s %12s %12s %8s %s" % ("golden", "knobs", "variant", "verd", "median_us", "ref_us", "frac_ref", "o_relL2/mod", "o_relL2/ex", "cta_max%", "stage/merge"))
def stage(s):  # the planned kernels' stage and merge from model_schedule (data/SCHEMA.md): page2, page, deep or tile
    if not s.startswith("plan:"): return "-"
    f = s.split(":")
    st = "page2" if ":page2" in s else "page" if ":page" in s else "deep" if ":deep" in s else "tile"
    return "%s/%s" % (st, f[3] if len(f) > 3 else "?")
for i, r in enumerate(rows):
    if r.get("verdict") != "FAIL" and r.get("time_median_s", "nan") in ("", "nan"): continue  # SKIP rows
    f = lambda k, s=1.0: float(r.get(k, "nan") or "nan") * s
    # the plan's busiest CTA over its CTAs' mean, % (results version 5; "-" without a plan or in an older table)
    most, mean = f("plan_cta_tokens_max"), f("plan_cta_tokens_mean")
    bal = "%+.1f" % (100 * (most / mean - 1)) if most > 0 and mean > 0 else "-"
    print("%-34s %-26s %-18s %-6s %10.2f %10.2f %8.3f %12.3e %12.3e %8s %s" % (os.path.basename(r["golden_path"]), knobs[i] if i < len(knobs) else "?",
          r["variant"], r["verdict"], f("time_median_s", 1e6), f("ref_read_s", 1e6), f("frac_ref"), f("model_o_rel_l2"), f("exact_o_rel_l2"), bal,
          stage(r.get("model_schedule", ""))))
PY
cat "$TABLE"
exit $failed

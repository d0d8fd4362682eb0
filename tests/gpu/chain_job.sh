#!/usr/bin/env bash
# chain_job.sh - one device call for attempt #60 (issue 10): the layer chain. Per config, alternated: the build
# timed standalone (`run --time`, one launch a sample), then `run --time --chain L` with programmatic dependent
# launch (DL_STREAM_PDL=1, the default) and without (DL_STREAM_PDL=0), then standalone again; with BASE, a baseline
# build standalone first and last (does the build's standalone time move?), and with BASE_CHAIN=1 also its chain with
# programmatic dependent launch beside the build's (e.g. a CHAIN_EARLY_COPIES=1 build). Every run checks its variants first
# (`--chain` also checks one chain on poisoned outputs against one launch). Environment: OUT (required);
# DECODELAB (default .carry/decodelab.gz, unpacked); BASE (optional: a .gz build); CONFIGS (memfloor_configs.sh
# names; default B1 and B4 L32768 e4m3, B64 L1024 e4m3 and bf16); VARIANTS (default
# 'bf16-hw-stream,bf16-cast-stream,fp8-none-wgmma'); L (layers, default 8); MAXT (--max-time-s, default 0.3).
# Writes $OUT/chain.csv (every row, with a `run` column naming the run) and $OUT/chain_table.txt; prints the table
# last. Exit 1 when a row FAILed, 2 when a run cannot run. Run it under `timeout`.
set -uo pipefail
: "${OUT:?set OUT}"
VARIANTS=${VARIANTS:-bf16-hw-stream,bf16-cast-stream,fp8-none-wgmma}
CONFIGS=${CONFIGS:-"8b_b1_l32768_e4m3 8b_b4_l32768_e4m3 8b_b64_l1024_e4m3 8b_b64_l1024_bf16"}
L=${L:-8}
MAXT=${MAXT:-0.3}
W=${DL_WORKDIR:-/tmp/dl_chain}; mkdir -p "$W/r" "$OUT"
if [ -z "${DECODELAB:-}" ]; then
    gunzip -c .carry/decodelab.gz > "$W/decodelab" && chmod +x "$W/decodelab"; DECODELAB=$W/decodelab
fi
if [ -n "${BASE:-}" ]; then gunzip -c "$BASE" > "$W/base" && chmod +x "$W/base"; fi
# shellcheck source=tests/gpu/memfloor_configs.sh
source "$(dirname "$0")/memfloor_configs.sh" # C (name -> golden flags)
bad=0
run() { # NAME BIN ENV... -- ARGS...: one `decodelab run` into $W/r/NAME.h5
    local name=$1 bin=$2; shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local rc=0 log=$W/r/$name.log
    echo "== $name ($SECONDS s)" >&2
    env "${envs[@]}" "$bin" run "$g" --variants "$VARIANTS" --time --max-time-s "$MAXT" --out "$W/r/$name.h5" "$@" \
        > "$log" 2>&1 || rc=$?
    if [ $rc -eq 1 ]; then echo "   exit 1: a row FAILed (see $log)" >&2; bad=1
    elif [ $rc -ne 0 ]; then echo "   exit $rc:" >&2; tail -5 "$log" >&2; bad=2; fi
}
for cfg in $CONFIGS; do
    [ -n "${C[$cfg]:-}" ] || { echo "chain_job: unknown config '$cfg'" >&2; exit 2; }
    g=$W/$cfg.h5
    models=exact,bf16; case "${C[$cfg]}" in *e4m3*|*e5m2*) models=exact,bf16,fp8wg ;; esac # fp8wg: the wgmma rows'
    # shellcheck disable=SC2086 # the config's flags are a word list
    [ -f "$g" ] || "$DECODELAB" golden ${C[$cfg]} --kv-scale absmax-tensor --models $models --seed 1 \
        --out "$g" > /dev/null || { echo "chain_job: golden $cfg failed" >&2; exit 2; }
    [ -n "${BASE:-}" ] && run "${cfg}__base1" "$W/base" X=1 --
    run "${cfg}__alone1" "$DECODELAB" X=1 --
    run "${cfg}__chain-pdl" "$DECODELAB" DL_STREAM_PDL=1 -- --chain "$L"
    run "${cfg}__chain-plain" "$DECODELAB" DL_STREAM_PDL=0 -- --chain "$L"
    [ -n "${BASE:-}" ] && [ "${BASE_CHAIN:-0}" = 1 ] && run "${cfg}__base-chain-pdl" "$W/base" DL_STREAM_PDL=1 -- --chain "$L"
    run "${cfg}__alone2" "$DECODELAB" X=1 --
    [ -n "${BASE:-}" ] && run "${cfg}__base2" "$W/base" X=1 --
    cp "$W"/r/"$cfg"__*.log "$OUT/" 2> /dev/null
done
python3 - "$W/r" "$OUT/chain.csv" > "$OUT/chain_table.txt" <<'PY' || bad=1
import csv, glob, math, os, sys
rows = []
for p in sorted(glob.glob(os.path.join(sys.argv[1], "*.csv")), key=os.path.getmtime):
    cfg, run = os.path.basename(p)[:-4].split("__")
    for r in csv.DictReader(open(p)):
        r["run"] = run
        rows.append((cfg, run, r))
if rows:
    keys = ["run"] + [k for k in rows[0][2] if k != "run"]
    with open(sys.argv[2], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for _, _, r in rows: w.writerow(r)
fail = 0
print("%-20s %-17s %-12s %-5s %9s %9s %8s  %s" % ("config", "variant", "run", "verd", "median_us", "ref_us", "frac_ref", "plan"))
for cfg, run, r in rows:
    if r["verdict"] == "SKIP": continue
    if r["verdict"] != "PASS": fail = 1
    f = lambda k: float(r.get(k) or "nan")
    print("%-20s %-17s %-12s %-5s %9.2f %9.2f %8.3f  %s" % (cfg, r["variant"], run, r["verdict"], 1e6 * f("time_median_s"),
          1e6 * f("ref_read_s"), f("frac_ref"), r.get("model_schedule", "")))
sys.exit(fail)
PY
cat "$OUT/chain_table.txt"
exit $bad

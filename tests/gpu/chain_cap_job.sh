#!/usr/bin/env bash
# chain_cap_job.sh - one device call (issue 10, thirty-seventh session): DL_STREAM_CHAIN_CAP, a layer chained with
# programmatic dependent launch held to its plan's CTAs an SM by padded shared memory (gpu/dl_plan.h
# dl_plan_chain_pad). Per setting of the knob, in the order ROUNDS gives (default 1 0 1 0), tests/gpu/chain_job.sh over
# CONFIGS: by default group 16 B4 L32768 and B128 L4096 e4m3 (planned at one CTA an SM where two fit: their chained
# rows should end in `:cap1`) and llama3-8B B1 L32768 and B64 L1024 e4m3 (the tile rings, two an SM where two fit:
# no `:cap`, no change). One work folder (the goldens made once); each setting's rows alone in $OUT/capK_rN.{txt,csv}.
# Then, with a DIAG=1 build carried as .carry/decodelab-diag.xz (optional), the standalone question: B1 L32768 on the
# two-head stage (396 CTAs: three an SM where four fit) unpadded against padded to three an SM (DL_STREAM_SMEM_PAD=8),
# alternated twice: does an idle GPU place a plan with room evenly? Prints the chained rows of every setting last,
# then packs the settings' files into $OUT/cap_files.tgz (a device call returns eight files at most).
# Needs .carry/decodelab.xz (the build under test). Environment: OUT (required); CONFIGS (memfloor_configs.sh names);
# VARIANTS (default bf16-hw-stream); L (layers, default 8); ROUNDS (0s and 1s). Exit 1 when a row FAILed, 2 when a
# run cannot run. Run it under `timeout` (~250 s on an H100 with the defaults).
set -uo pipefail
: "${OUT:?set OUT}"
CONFIGS=${CONFIGS:-"g16_b4_l32768_e4m3 g16_b128_l4096_e4m3 8b_b1_l32768_e4m3 8b_b64_l1024_e4m3"}
VARIANTS=${VARIANTS:-bf16-hw-stream}
L=${L:-8}
ROUNDS=${ROUNDS:-"1 0 1 0"}
for k in $ROUNDS; do
    case $k in 0|1) ;; *) echo "chain_cap_job: ROUNDS holds '$k'; each setting is 0 or 1" >&2; exit 2 ;; esac
done
# shellcheck source=tests/gpu/job_start.sh
source tests/gpu/job_start.sh # the card, .carry unpacked
W=/tmp/dl_chain_cap
mkdir -p "$W"
gunzip -c .carry/decodelab.gz > "$W/decodelab" && chmod +x "$W/decodelab" || { echo "chain_cap_job: no .carry/decodelab.gz" >&2; exit 2; }
"$W/decodelab" --version
bad=0 n=0
for k in $ROUNDS; do
    n=$((n + 1))
    rm -rf "$W/r" "$W/o" # this setting's rows alone (chain_job.sh tables every csv under $W/r)
    echo "== DL_STREAM_CHAIN_CAP=$k, round $n ($SECONDS s)"
    DECODELAB=$W/decodelab DL_STREAM_CHAIN_CAP=$k DL_WORKDIR=$W OUT=$W/o CONFIGS="$CONFIGS" VARIANTS=$VARIANTS L=$L \
        bash tests/gpu/chain_job.sh > "$OUT/cap${k}_r$n.log" 2>&1
    rc=$?
    [ $rc -gt $bad ] && bad=$rc
    cp "$W/o/chain_table.txt" "$OUT/cap${k}_r$n.txt" 2> /dev/null
    cp "$W/o/chain.csv" "$OUT/cap${k}_r$n.csv" 2> /dev/null || { echo "   no table (exit $rc): $OUT/cap${k}_r$n.log" >&2; bad=2; }
done
if [ -f .carry/decodelab-diag.gz ]; then
    gunzip -c .carry/decodelab-diag.gz > "$W/dld" && chmod +x "$W/dld"
    g=$W/8b_b1_l32768_e4m3.h5
    # shellcheck source=tests/gpu/memfloor_configs.sh
    source tests/gpu/memfloor_configs.sh # C (name -> golden flags), as chain_job.sh makes them
    # shellcheck disable=SC2086 # the config's flags are a word list
    [ -f "$g" ] || "$W/dld" golden ${C[8b_b1_l32768_e4m3]} --kv-scale absmax-tensor --models exact,bf16,fp8wg --seed 1 \
        --out "$g" > /dev/null || { echo "chain_cap_job: golden B1 failed" >&2; exit 2; }
    i=0
    for pad in 0 8 0 8; do
        i=$((i + 1))
        echo "== standalone B1, DL_STREAM_SMEM_PAD=$pad ($SECONDS s)"
        DL_STREAM_SMEM_PAD=$pad "$W/dld" run "$g" --variants bf16-hw-stream --time --max-time-s 0.3 \
            --out "$W/pad${pad}_$i.h5" > "$OUT/pad${pad}_$i.log" 2>&1
        rc=$?
        [ $rc -gt $bad ] && bad=$rc
        cp "$W/pad${pad}_$i.csv" "$OUT/" 2> /dev/null
    done
fi
python3 - "$OUT" <<'PY'
import csv, glob, os, re, sys
out = sys.argv[1]
key = lambda p: int(re.search(r"_r?(\d+)\.csv$", p).group(1))
print("%-8s %-20s %-17s %-12s %-5s %9s %8s  %s" % ("setting", "config", "variant", "run", "verd", "median_us", "frac_ref", "plan"))
for p in sorted(glob.glob(os.path.join(out, "cap*_r*.csv")), key=key) + sorted(glob.glob(os.path.join(out, "pad*_*.csv")), key=key):
    name = os.path.basename(p)[:-4]
    for r in csv.DictReader(open(p)):
        if r.get("verdict") == "SKIP" or (name.startswith("cap") and r.get("run") != "chain-pdl"): continue
        f = lambda k: float(r.get(k) or "nan")
        print("%-8s %-20s %-17s %-12s %-5s %9.2f %8.3f  %s" % (name.split("_")[0], os.path.basename(r.get("golden_path", ""))[:-3][:20],
              r["variant"], r.get("run", "alone"), r["verdict"], 1e6 * f("time_median_s"), f("frac_ref"), r.get("model_schedule", "")))
PY
# the tool returns at most eight files from $OUT: the settings' files travel as one archive beside card.txt
files=$(cd "$OUT" && shopt -s nullglob && echo cap*_r*.* pad*_*.*)
if [ -n "$files" ]; then
    # shellcheck disable=SC2086 # a word list of plain names made above
    (cd "$OUT" && tar czf cap_files.tgz.part $files && mv cap_files.tgz.part cap_files.tgz && rm -f $files) ||
        echo "chain_cap_job: could not pack $OUT (its files stay as they are)" >&2
fi
exit $bad

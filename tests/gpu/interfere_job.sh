#!/usr/bin/env bash
# interfere_job.sh - one GPU-machine call (issue 10, after 2026-12-04b call 1): why the streaming kernel's copies
# and its consumers, each faster than the read alone, take 1.3x the read together, even unsynchronized
# (DL_STREAM_DRY=5 took as long as the real kernel at the 70B shape). Three readings per row, so that the rows
# can be set side by side:
#  1. Nsight Compute with `--clock-control none` (clocks as they run): duration, SM / L2 / DRAM cycles per second,
#     DRAM throughput, instructions, shared-memory wavefronts and bank conflicts, issue activity, and every stall
#     reason's warps per issued instruction (smsp__average_warps_issue_stalled_*; by regex, so a name this ncu
#     lacks matches nothing);
#  2. Nsight Compute with `--clock-control base` (the SM clock held at base: no power throttling): duration and
#     cycles. If DRY=5 still takes about the real kernel's time at a held clock, power is not the cause;
#  3. nvidia-smi every 20 ms (SM clock, power, clock-event reasons) while `run --hot-l2` times the row for ~1.5 s.
# ROWS: ';'-separated 'NAME|BIN|KNOBS|VARIANT' (BIN a carried binary, .carry/BIN.gz; KNOBS comma-joined
# VAR=VALUE or '-'); CONFIG: a memfloor_configs.sh name (default 70b_b64_l4096_e4m3). Environment: OUT
# (required). Writes $OUT/interfere.tgz after every row; prints a table last. Run it under `timeout 560`.
set -uo pipefail
[ -n "${OUT:-}" ] || { echo "interfere_job: set OUT (the folder for interfere.tgz)" >&2; exit 2; }
[ -n "${ROWS:-}" ] || { echo "interfere_job: set ROWS (see the header)" >&2; exit 2; }
CONFIG=${CONFIG:-70b_b64_l4096_e4m3}
T=/tmp/interfere; rm -rf "$T"; mkdir -p "$T" "$OUT"
# shellcheck source=tests/gpu/memfloor_configs.sh
source "$(dirname "$0")/memfloor_configs.sh"
[ -n "${C[$CONFIG]:-}" ] || { echo "interfere_job: unknown CONFIG '$CONFIG'" >&2; exit 2; }
pack() { tar czf "$OUT/interfere.tgz.part" --exclude='*.h5' --exclude='interfere/bin-*' -C /tmp interfere &&
    mv "$OUT/interfere.tgz.part" "$OUT/interfere.tgz"; }
G=$T/$CONFIG.h5
first=${ROWS%%|*}; first=${ROWS#*|}; first=${first%%|*}
[ -f ".carry/$first.gz" ] || { echo "interfere_job: .carry/$first.gz missing (tests/gpu/unpack_carry.sh first?)" >&2; exit 2; }
gunzip -c ".carry/$first.gz" > "$T/bin-$first" && chmod +x "$T/bin-$first"
echo "== golden $CONFIG from $SECONDS s"
"$T/bin-$first" golden ${C[$CONFIG]} --kv-scale absmax-tensor --models exact,bf16 --seed 1 --out "$G" > "$T/golden.log" 2>&1 ||
    { echo "interfere_job: golden failed (see golden.log)"; pack; exit 2; }
M='gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__cycles_elapsed.avg.per_second,'\
'dram__cycles_elapsed.avg.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,'\
'l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,'\
'smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,'\
'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
IFS=';' read -ra list <<< "$ROWS"
for row in "${list[@]}"; do
    IFS='|' read -r name bin knobs variant <<< "$row"
    [ -x "$T/bin-$bin" ] || { gunzip -c ".carry/$bin.gz" > "$T/bin-$bin" && chmod +x "$T/bin-$bin"; } ||
        { echo "interfere_job: .carry/$bin.gz missing (row $name)"; continue; }
    envs=(); [ "$knobs" != "-" ] && IFS=, read -ra envs <<< "$knobs"
    echo "== $name: $bin ($knobs) $variant from $SECONDS s"
    echo "$row" > "$T/$name.row"
    env "${envs[@]}" timeout 90 ncu --clock-control none --metrics "$M" -k 'regex:stream_decode' -s 2 -c 1 \
        "$T/bin-$bin" run "$G" --variants "$variant" --time-failed --max-time-s 0.1 > "$T/$name.none.txt" 2>&1 ||
        echo "   ncu none exit $?"
    env "${envs[@]}" timeout 60 ncu --clock-control base --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second \
        -k 'regex:stream_decode' -s 2 -c 1 "$T/bin-$bin" run "$G" --variants "$variant" --time-failed --max-time-s 0.1 \
        > "$T/$name.base.txt" 2>&1 || echo "   ncu base exit $?"
    nvidia-smi --query-gpu=utilization.gpu,clocks.sm,clocks.mem,power.draw,clocks_event_reasons.active \
        --format=csv,noheader,nounits -lms 20 > "$T/$name.smi.csv" 2> /dev/null &
    smi=$!
    env "${envs[@]}" timeout 60 "$T/bin-$bin" run "$G" --variants "$variant" --hot-l2 --time-failed --max-time-s 1.5 \
        --min-samples 5000 > "$T/$name.hot.log" 2>&1 || echo "   hot run exit $?"
    kill $smi 2> /dev/null; wait $smi 2> /dev/null
    pack
done
echo "== table ($CONFIG; ncu durations in us; smi: medians over samples with utilization >= 90 %)"
python3 - "$T" "$ROWS" <<'PY'
import csv, os, re, statistics, sys
T, rows = sys.argv[1], [r.split("|")[0] for r in sys.argv[2].split(";") if r]
def metrics(p):
    out = {}
    for line in open(p, errors="replace") if os.path.exists(p) else []:
        f = line.split()
        if len(f) in (2, 3) and re.match(r"^[a-z0-9_]+__[a-z0-9_.]+$", f[0]): # name [unit] value
            try:
                out[f[0]] = (float(f[-1].replace(",", "")), f[1] if len(f) == 3 else "")
            except ValueError:
                pass
    return out
def us(m, k="gpu__time_duration.sum"):
    v, unit = m.get(k, (float("nan"), "us"))
    return v / 1000 if unit == "ns" else v * 1000 if unit == "ms" else v
def ghz(m, k):
    v, unit = m.get(k, (float("nan"), "Ghz"))
    return v / 1000 if unit.lower().startswith("mhz") else v
print("%-10s %9s %9s %7s %7s %7s %6s %8s %9s %6s %6s  %s" % ("row", "none_us", "base_us", "SM_GHz", "L2_GHz", "base_GHz",
      "dram%", "inst_M", "shm_wf_M", "issue%", "hmma%", "smi: SM MHz, W, reasons"))
for name in rows:
    a, b = metrics(os.path.join(T, name + ".none.txt")), metrics(os.path.join(T, name + ".base.txt"))
    g = lambda k: a.get(k, (float("nan"),))[0]
    smi = []
    for r in csv.reader(open(os.path.join(T, name + ".smi.csv"))) if os.path.exists(os.path.join(T, name + ".smi.csv")) else []:
        try:
            if float(r[0]) >= 90:
                smi.append((float(r[1]), float(r[3]), r[4].strip()))
        except (ValueError, IndexError):
            pass
    s = ("%d samples %.0f MHz %.0f W %s" % (len(smi), statistics.median(x[0] for x in smi), statistics.median(x[1] for x in smi),
         ",".join(sorted(set(x[2] for x in smi))))) if smi else "no busy samples"
    print("%-10s %9.2f %9.2f %7.3f %7.3f %7.3f %6.1f %8.2f %9.2f %6.1f %6.1f  %s" % (name, us(a), us(b),
          ghz(a, "sm__cycles_elapsed.avg.per_second"), ghz(a, "lts__cycles_elapsed.avg.per_second"),
          ghz(b, "sm__cycles_elapsed.avg.per_second"), g("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
          g("smsp__inst_executed.sum") / 1e6, g("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum") / 1e6,
          g("smsp__issue_active.avg.pct_of_peak_sustained_active"),
          g("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"), s))
    st = sorted(((v[0], k[len("smsp__average_warps_issue_stalled_"):-len("_per_issue_active.ratio")]) for k, v in a.items()
                 if k.startswith("smsp__average_warps_issue_stalled_")), reverse=True)[:7]
    print("%-10s stalls/issue: %s" % ("", "  ".join("%s %.2f" % (k, v) for v, k in st)))
PY

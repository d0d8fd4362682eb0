#!/usr/bin/env bash
# overlap_job.sh - one GPU-machine call (issue 10, after attempts #21-#23): why bf16-hw-stream at B128 L4096 e4m3
# takes 1.12x the read when its copy path alone takes 1.03x and its consumers alone 0.68x (2026-12-03, seventh
# session). Three readings, one step each:
#  1. layout: NHD boxes are 16 rows of 128 B at a 1 KB stride, HND boxes contiguous; the real kernel and both
#     DRY rows on NHD, HND and HND with 64-token pages (memfloor.sh, main and the diagnosis build);
#  2. clocks: the SM clock, memory clock, power and clock-event reasons sampled by nvidia-smi (every 20 ms) while the real kernel,
#     DRY=1 and DRY=2 run back to back (`run --hot-l2`: the 1 GB cache is far larger than L2, so every launch
#     still reads DRAM) for ~2 s each; if the real kernel's SM clock sits below DRY=1's, power binds;
#  3. Nsight Compute with `--clock-control none` (the clocks as they run, not locked at base) on the real kernel,
#     DRY=1 and the contiguous read of the same bytes: duration, SM, GPC, L2 and DRAM cycles per second, DRAM and L2
#     throughput, shared-memory wavefronts and bank conflicts (TMA writes and consumer reads share the ports).
# Expects .carry/decodelab.gz (main) and .carry/decodelab-diag.gz (make static BUILD=build-diag DIAG=1), unpacked
# by tests/gpu/unpack_carry.sh first. Environment: OUT (required); STEPS (default "layout clocks ncu"); CONFIG (the
# memfloor_configs.sh case of the clocks and ncu steps, default 8b_b128_l4096_e4m3; 2026-12-04's sixth session
# queued them at 8b_b64_l1024_e4m3, whose main phase streams at ~3.0 TB/s against the copy probe's ~3.8). The ncu
# step also profiles DL_STREAM_DRY=2 (the consumers alone).
# Writes $OUT/overlap.tgz (rewritten after every step: a call cut by its time limit returns what ran); prints a
# summary last. Step limits: 240 + 100 s (layout), ~40 s (clocks), 4 x 60 s (ncu): run it under `timeout 560`.
set -uo pipefail
: "${OUT:?set OUT}"
STEPS=${STEPS:-"layout clocks ncu"}
CONFIG=${CONFIG:-8b_b128_l4096_e4m3}
# shellcheck source=tests/gpu/memfloor_configs.sh
source "$(dirname "$0")/memfloor_configs.sh" # C: name -> golden flags
[ -n "${C[$CONFIG]:-}" ] || { echo "overlap_job: CONFIG '$CONFIG' is not a memfloor_configs.sh case (known: ${!C[*]})" >&2; exit 2; }
T=/tmp/overlap; rm -rf "$T"; mkdir -p "$T" "$OUT"
for b in "" -diag; do
    [ -f ".carry/decodelab$b.gz" ] || { echo "overlap_job: .carry/decodelab$b.gz missing (see the header)" >&2; exit 2; }
    gunzip -c ".carry/decodelab$b.gz" > "$T/dl${b:-main}" && chmod +x "$T/dl${b:-main}"
done
MAIN=$T/dlmain DIAG=$T/dl-diag
export DL_WORKDIR=$T/golden # one set of golden files for every step
G=$DL_WORKDIR/$CONFIG.h5
pack() { tar czf "$OUT/overlap.tgz.part" --exclude='*.h5' --exclude=overlap/dlmain --exclude=overlap/dl-diag \
    -C /tmp overlap && mv "$OUT/overlap.tgz.part" "$OUT/overlap.tgz"; }
mf() { # name, binary, configs, knobs, timeout (s)
    echo "== $1: $3 (knobs $4) from $SECONDS s"
    DECODELAB=$2 CONFIGS="$3" VARIANTS=bf16-hw-stream KNOBS="$4" OUT=$T/mf-$1 MAXT=0.5 \
        timeout "$5" bash tests/gpu/memfloor.sh > "$T/mf-$1.log" 2>&1 || echo "   memfloor ($1) exit $? (see its log)"
    pack
}
case " $STEPS " in *" layout "*)
    L='8b_b128_l4096_e4m3 8b_b128_l4096_e4m3_hnd 8b_b128_l4096_e4m3_hnd_p64'
    mf main "$MAIN" "$L" - 240 # three golden files first (~50 s each on 16 cores, 2026-12-03)
    mf dry "$DIAG" "$L" 'DL_STREAM_DRY=1 DL_STREAM_DRY=2' 100 ;;
esac
[ -f "$G" ] || DECODELAB=$MAIN CONFIGS=$CONFIG VARIANTS=bf16-hw-stream OUT=$T/mf-golden MAXT=0.2 \
    bash tests/gpu/memfloor.sh > "$T/mf-golden.log" 2>&1

clocks() { # name, binary, knob: nvidia-smi samples while `run --hot-l2` times the kernel for ~2 s
    local csv=$T/clocks-$1.csv
    nvidia-smi --query-gpu=timestamp,utilization.gpu,clocks.sm,clocks.mem,power.draw,temperature.gpu \
        --format=csv,noheader,nounits -lms 20 > "$csv" 2> /dev/null &
    local smi=$!
    nvidia-smi --query-gpu=utilization.gpu,clocks_event_reasons.active --format=csv,noheader,nounits -lms 20 \
        > "$T/reasons-$1.csv" 2> /dev/null & # a separate process: an unknown field must not cost the clocks
    local why=$!
    env "$3" "$2" run "$G" --variants bf16-hw-stream --hot-l2 --time-failed --max-time-s 2 --min-samples 7000 \
        > "$T/clocks-$1.log" 2>&1 || true
    kill $smi $why 2> /dev/null; wait $smi $why 2> /dev/null
}
case " $STEPS " in *" clocks "*)
    echo "== clocks from $SECONDS s"
    clocks real "$MAIN" DL_STREAM_DRY=0; clocks dry1 "$DIAG" DL_STREAM_DRY=1; clocks dry2 "$DIAG" DL_STREAM_DRY=2
    pack ;;
esac

NCU_M='gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second,'\
'dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,'\
'l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum,'\
'lts__cycles_elapsed.avg.per_second,gpc__cycles_elapsed.avg.per_second'
ncu_one() { # name, binary, knob, kernel regex, extra run flags
    echo "== ncu $1 from $SECONDS s"
    env "$3" timeout 60 ncu --clock-control none --metrics "$NCU_M" -k "regex:$4" -s 3 -c 1 \
        "$2" run "$G" --variants bf16-hw-stream --time-failed --max-time-s 0.2 > "$T/ncu-$1.txt" 2>&1 ||
        echo "   ncu ($1) exit $? (see ncu-$1.txt)"
}
case " $STEPS " in *" ncu "*)
    ncu_one real "$MAIN" DL_STREAM_DRY=0 stream_decode
    ncu_one dry1 "$DIAG" DL_STREAM_DRY=1 stream_decode
    ncu_one dry2 "$DIAG" DL_STREAM_DRY=2 stream_decode
    ncu_one read "$MAIN" DL_STREAM_DRY=0 dl_read_contig
    pack ;;
esac

echo "== summary (median us, cold L2, from memfloor; clocks: medians of the samples with utilization >= 90 %)"
for f in "$T"/mf-main/memfloor_table.txt "$T"/mf-dry/memfloor_table.txt; do [ -f "$f" ] && grep -E 'PASS|FAIL' "$f"; done
python3 - "$T" <<'PY'
import csv, glob, os, statistics, sys
T = sys.argv[1]
for name in ("real", "dry1", "dry2"):
    p = os.path.join(T, "clocks-%s.csv" % name)
    rows = []
    for r in csv.reader(open(p)) if os.path.exists(p) else []:
        try:
            rows.append([float(x) for x in r[1:6]])
        except (ValueError, IndexError):
            pass
    busy = [r for r in rows if r[0] >= 90]
    if not busy:
        print("clocks %-5s no busy samples (%d in all)" % (name, len(rows)))
        continue
    med = [statistics.median(r[i] for r in busy) for i in range(1, 5)]
    print("clocks %-5s %4d busy samples: SM %.0f MHz, mem %.0f MHz, power %.0f W, %.0f C" % (name, len(busy), *med))
    p = os.path.join(T, "reasons-%s.csv" % name) # clock-event reasons (a bit mask) of the busy samples, counted
    seen = {}
    for r in csv.reader(open(p)) if os.path.exists(p) else []:
        try:
            if float(r[0]) >= 90:
                seen[r[1].strip()] = seen.get(r[1].strip(), 0) + 1
        except (ValueError, IndexError):
            pass
    print("reasons %-5s %s" % (name, ", ".join("%s x%d" % kv for kv in sorted(seen.items())) or "none read"))
for p in sorted(glob.glob(os.path.join(T, "ncu-*.txt"))):
    name = os.path.basename(p)[4:-4]
    for line in open(p, errors="replace"):
        f = line.split()
        if len(f) >= 3 and f[0].split(".")[0] in ("gpu__time_duration", "sm__cycles_elapsed", "dram__cycles_elapsed",
                "dram__bytes_read", "dram__throughput", "lts__throughput", "l1tex__data_pipe_lsu_wavefronts_mem_shared",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared", "smsp__inst_executed", "lts__cycles_elapsed",
                "gpc__cycles_elapsed"):
            print("ncu %-5s %-58s %s %s" % (name, f[0], f[-2], f[-1]))
PY

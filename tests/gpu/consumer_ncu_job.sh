#!/usr/bin/env bash
# consumer_ncu_job.sh - one GPU-machine call (issue 10, after attempt #11): what the streaming kernel's
# consumer warps wait on, per SASS instruction. With one producer per consumer the copy path alone runs at
# the read (B128 L4096 e4m3: 258 us vs 255), the consumers alone took 240 us, the kernel 288: the overlap
# or the consumers' own latency loses the rest; at B1 L32768 the consumers bind (59.9 us vs a 28.2 us copy
# path). Nsight Compute's warp-state sampling (SourceCounters: samples per PC and stall reason) on
# bf16-hw-stream at both cases; the report is exported as its SASS source page (CSV) and the 25 PCs with
# the most samples are printed with their instruction and their top stall reasons, so that a consumer's
# wait on its full barrier (SYNCS / mbarrier try_wait), on its MMAs or on shared-memory loads tells which.
# Environment: VARIANT (default bf16-hw-stream), CASES (default "b128_l4096 b1_l32768"), BINS ("new", or
# "new old" to profile .carry/decodelab-old.gz as well, e.g. the build before a change that regressed).
# Expects .carry/decodelab.gz. Writes $OUT/consumer_ncu.tgz (CSVs, details, logs; not the reports, 33 MB
# each); prints the tables last.
set -uo pipefail
: "${OUT:?set OUT}"
VARIANT=${VARIANT:-bf16-hw-stream}
CASES=${CASES:-"b128_l4096 b1_l32768"}
BINS=${BINS:-new}
mkdir -p "$OUT"
T=/tmp/consumer_ncu; rm -rf "$T"; mkdir -p "$T"
status=0
for b in $BINS; do
    case $b in new) src=.carry/decodelab.gz ;; old) src=.carry/decodelab-old.gz ;;
               *) echo "consumer_ncu_job: BINS entries are 'new' or 'old', not '$b'" >&2; exit 2 ;; esac
    [ -f "$src" ] || { echo "consumer_ncu_job: $src missing" >&2; exit 2; }
    gunzip -c "$src" > "/tmp/dl-$b" && chmod +x "/tmp/dl-$b"
done
for c in $CASES; do
    case $c in b128_l4096) args="--batch 128 --seq-len 4096" ;; b1_l32768) args="--batch 1 --seq-len 32768" ;;
               b4_l32768) args="--batch 4 --seq-len 32768" ;;
               *) echo "consumer_ncu_job: unknown case '$c' (b128_l4096 b1_l32768 b4_l32768)" >&2; exit 2 ;; esac
    g="$T/$c.h5"
    models=exact,bf16; case $VARIANT in fp8-*) models=exact,bf16,fp8wg ;; esac
    "/tmp/dl-${BINS%% *}" golden --preset llama3-8b $args --kv-dtype e4m3 --kv-scale absmax-tensor --models $models \
        --seed 1 --out "$g" > "$T/golden_$c.log" 2>&1 || { echo "golden $c failed"; status=2; continue; }
    for b in $BINS; do
        name=${c}_$b
        ncu --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source yes \
            -k 'regex:stream_decode_kernel|wgmma_decode_kernel' -c 1 -o "$T/$name" -f "/tmp/dl-$b" run "$g" --variants "$VARIANT" \
            > "$T/ncu_$name.log" 2>&1 || status=1
        ncu -i "$T/$name.ncu-rep" --page source --csv --print-source sass > "$T/source_$name.csv" 2> "$T/source_$name.err" || status=1
        ncu -i "$T/$name.ncu-rep" --page details > "$T/details_$name.txt" 2>&1 || status=1
        rm -f "$T/$name.ncu-rep"
    done
    rm -f "$g"
done
tar czf "$OUT/consumer_ncu.tgz" -C /tmp consumer_ncu
for c in $CASES; do for b in $BINS; do
    name=${c}_$b
    echo "== $VARIANT $name: duration and warp state"
    grep -E "^\s+(Duration|Warp Cycles Per Issued|Warp Cycles Per Executed)" "$T/details_$name.txt" | head -4
    python3 - "$T/source_$name.csv" <<'PY'
import csv, sys
try:
    rows = list(csv.reader(open(sys.argv[1])))
except OSError as e:
    sys.exit(f"  no source page: {e}")
# the header is the first row that names a Source column; the sample columns are those naming "Sampling"
hi = next((i for i, r in enumerate(rows) if any(c.strip() == "Source" for c in r)), None)
if hi is None:
    sys.exit("  no 'Source' column in the source page; its first line: %s" % (rows[0] if rows else "(empty)"))
head = rows[hi]
src = head.index(next(c for c in head if c.strip() == "Source"))
samp = [i for i, c in enumerate(head) if "Sampling" in c and "All" in c] or [i for i, c in enumerate(head) if "Sampling" in c]
stall = [i for i, c in enumerate(head) if (c.startswith("stall_") or c.lower().startswith("warp stall")) and "Sampling" not in c]
if not samp:
    sys.exit("  no sampling column; columns: %s" % ", ".join(head))
def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0
body = [r for r in rows[hi + 1:] if len(r) == len(head)]
total = sum(num(r[samp[0]]) for r in body) or 1.0
print("  columns used: %s; %d PCs, %d samples" % (head[samp[0]], len(body), total))
for r in sorted(body, key=lambda r: -num(r[samp[0]]))[:25]:
    reasons = sorted(((num(r[i]), head[i]) for i in stall), reverse=True)[:3]
    print("  %5.1f %%  %-60s %s" % (100 * num(r[samp[0]]) / total, r[src].strip()[:60],
                                   ", ".join("%s %.0f" % (n, v) for v, n in reasons if v > 0)))
PY
done; done
exit $status

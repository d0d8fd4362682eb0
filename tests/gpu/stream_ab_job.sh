#!/usr/bin/env bash
# stream_ab_job.sh - one GPU-machine call (issue 10): a change to the streaming family, judged.
# 1. test-gpu (DL_STRICT=1, memcheck skipped) with the NEW binary: every variant against the CPU
#    reference on fresh random inputs; a FAIL stops the job before any timing.
# 2. memfloor.sh with the OLD and then the NEW binary on the same golden files (CONFIGS, VARIANTS).
# 3. With a diagnosis build present, its DL_STREAM_DRY=1 row (the copy path alone) on the same files.
# Prints last a table: config, variant, old us, new us, new/old, the read reference (us). Exit status: test-gpu's
# when it fails, else the new binary's memfloor.sh exit (1: a FAIL row), else 0.
# Expects in .carry/: decodelab.gz (new), decodelab-old.gz (old), optionally decodelab-diag.gz (new,
# make DIAG=1). Writes $OUT/ab.tgz (the test-gpu log and results, both memfloor folders).
# Environment: OUT (required), SEED (default 20261601), CONFIGS (default B128 L4096, B64 L1024,
# B1 L32768, B4 L32768, the 70B shape B64 L4096, all e4m3), VARIANTS (default bf16-hw-stream,
# fp8-none-wgmma,bf16-fast-wgmma,bf16-cast-stream), MAXT (default 1.0). The 70B shape and bf16-cast-stream
# (the slowest consumer) are in the defaults because a stage-release race showed there and nowhere in
# test-gpu's small cases (attempt #14, gpu/NOTES.md): a FAIL with det NO in the table is such a race.
set -uo pipefail
: "${OUT:?set OUT}"
mkdir -p "$OUT"
SEED=${SEED:-20261601}
CONFIGS=${CONFIGS:-"8b_b128_l4096_e4m3 8b_b64_l1024_e4m3 8b_b1_l32768_e4m3 8b_b4_l32768_e4m3 70b_b64_l4096_e4m3"}
VARIANTS=${VARIANTS:-"bf16-hw-stream,fp8-none-wgmma,bf16-fast-wgmma,bf16-cast-stream"}
MAXT=${MAXT:-1.0}
T=/tmp/ab; rm -rf "$T"; mkdir -p "$T"
unpack() { [ -f "$2" ] && gunzip -c "$2" > "$T/$1" && chmod +x "$T/$1"; }
unpack new .carry/decodelab.gz; unpack old .carry/decodelab-old.gz; unpack diag .carry/decodelab-diag.gz
[ -x "$T/new" ] && [ -x "$T/old" ] || { echo "stream_ab_job: need .carry/decodelab.gz and .carry/decodelab-old.gz"; exit 2; }
pack() { tar czf "$OUT/ab.tgz" --exclude='*.h5' --exclude=ab/new --exclude=ab/old --exclude=ab/diag -C /tmp ab; }

echo "== test-gpu, new binary, seed $SEED"
DECODELAB=$T/new DL_STRICT=1 DL_SEED=$SEED DL_WORKDIR=$T/tg DL_SKIP_SANITIZER=1 timeout 300 \
    bash tests/gpu/nasty_matrix.sh > "$T/test-gpu.log" 2>&1
rc=$?
grep -E '^verdicts:' "$T/test-gpu.log"
if [ $rc -ne 0 ]; then
    echo "test-gpu failed (exit $rc): no timing; the log's FAIL lines:"
    grep -E 'FAIL' "$T/test-gpu.log" | head -5
    pack; exit 1
fi

export DL_WORKDIR=$T/golden # one set of golden files for both binaries
ab_bad=0 # the new binary's memfloor exit (1: a FAIL row), the job's
for b in old new; do
    echo "== memfloor, $b binary"
    DECODELAB=$T/$b CONFIGS="$CONFIGS" VARIANTS="$VARIANTS" KNOBS=- OUT=$T/mf-$b MAXT=$MAXT \
        timeout 400 bash tests/gpu/memfloor.sh > "$T/mf-$b.log" 2>&1 || { rc=$?; echo "memfloor ($b) exit $rc"; [ $b = new ] && ab_bad=$rc; }
done
if [ -x "$T/diag" ]; then
    echo "== the copy path alone (DL_STREAM_DRY=1, diagnosis build of the new code)"
    DECODELAB=$T/diag CONFIGS="$CONFIGS" VARIANTS="$VARIANTS" KNOBS=DL_STREAM_DRY=1 OUT=$T/mf-dry MAXT=$MAXT \
        timeout 300 bash tests/gpu/memfloor.sh > "$T/mf-dry.log" 2>&1
    tail -n +2 "$T/mf-dry/memfloor_table.txt" | awk '{ printf "  %-28s %-18s DRY=1 %9s us  read %9s us\n", $1, $3, $5, $6 }' 
fi
pack
echo "== old vs new (median us, cold L2; read = the contiguous read of the same bytes)"
python3 - "$T/mf-old/memfloor.csv" "$T/mf-new/memfloor.csv" <<'PY'
import csv, os, sys
def load(p):
    try:
        return {(os.path.basename(r["golden_path"]), r["variant"]): r for r in csv.DictReader(open(p))}
    except OSError:
        return {}
old, new = load(sys.argv[1]), load(sys.argv[2])
print("%-28s %-18s %9s %9s %7s %9s %s" % ("golden", "variant", "old", "new", "new/old", "read", "verdict(new) det"))
for k in new:
    n, o = new[k], old.get(k)
    nu = 1e6 * float(n["time_median_s"]); ou = 1e6 * float(o["time_median_s"]) if o else float("nan")
    det = {"1": "yes", "0": "NO"}.get(n.get("deterministic", ""), "-")
    print("%-28s %-18s %9.2f %9.2f %7.3f %9.2f %s %s" % (k[0], k[1], ou, nu, nu / ou, 1e6 * float(n["ref_read_s"]),
                                                      n["verdict"], det))
PY
exit $ab_bad

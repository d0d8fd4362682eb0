#!/usr/bin/env bash
# shape_ab_job.sh - one GPU-machine call (issue 10, attempt #21): do more consumer warps per SM move the
# warp-consumer streaming kernels toward the read? The same golden files, timed with main's build and with
# the STREAM_SHAPE builds (gpu/NOTES.md, attempts #21 and #22), then main's code with the diagnosis paths (the copy
# path alone, DL_STREAM_DRY=1, and the consumers alone, DL_STREAM_DRY=2), then main's build at groups 9-16
# with one CTA per SM (its registers allow one; the plan counts two). Every timed row is first checked
# against the CPU reference on the golden file (a FAIL is timed anyway and shows in the table).
# Expects in .carry/ (xz, unpacked by tests/gpu/unpack_carry.sh first): decodelab.gz (main); any of
# decodelab-s51.gz (make static BUILD=build-s51 STREAM_SHAPE=5,1 STREAM_PRODUCERS=one),
# decodelab-s41r.gz (make static BUILD=build-s41r STREAM_SHAPE=4,1 STREAM_SETMAXNREG=1),
# decodelab-s61.gz (make static BUILD=build-s61 STREAM_SHAPE=6,1), decodelab-diag.gz (make static
# BUILD=build-diag DIAG=1); the ones absent are skipped, said so (a call carries four xz binaries at most).
# Environment: OUT (required); CONFIGS (default B128 and B256 L4096 e4m3, llama-13B B64 L1024 bf16, B128
# L4096 bf16), VARIANTS (default bf16-hw-stream,bf16-cast-stream), DRY_CONFIGS (default B128 and B256 L4096
# e4m3), G16 (default g16_b128_l4096_e4m3; empty: skip), MAXT (default 0.5).
# Writes $OUT/shape_ab.tgz (every memfloor folder and log, no golden file; rewritten after every step, so a call cut
# by its time limit returns what ran: the first run, 2026-12-03, took ~230 s for main, ~135 s per other build);
# prints the table last.
set -uo pipefail
: "${OUT:?set OUT}"
mkdir -p "$OUT"
CONFIGS=${CONFIGS:-"8b_b128_l4096_e4m3 8b_b256_l4096_e4m3 13b_b64_l1024_bf16 8b_b128_l4096_bf16"}
VARIANTS=${VARIANTS:-"bf16-hw-stream,bf16-cast-stream"}
DRY_CONFIGS=${DRY_CONFIGS:-"8b_b128_l4096_e4m3 8b_b256_l4096_e4m3"}
G16=${G16-g16_b128_l4096_e4m3}
MAXT=${MAXT:-0.5}
T=/tmp/shape_ab; rm -rf "$T"; mkdir -p "$T"
export DL_WORKDIR=$T/golden # one set of golden files for every binary
unpack() { [ -f ".carry/decodelab$2.gz" ] && gunzip -c ".carry/decodelab$2.gz" > "$T/$1" && chmod +x "$T/$1"; }
unpack main ""; unpack s51 -s51; unpack s41r -s41r; unpack s61 -s61; unpack diag -diag
[ -x "$T/main" ] || { echo "shape_ab_job: need .carry/decodelab.gz (main's build)"; exit 2; }
pack() { tar czf "$OUT/shape_ab.tgz.part" --exclude='*.h5' --exclude=shape_ab/main --exclude=shape_ab/s51 \
    --exclude=shape_ab/s41r --exclude=shape_ab/s61 --exclude=shape_ab/diag -C /tmp shape_ab &&
    mv "$OUT/shape_ab.tgz.part" "$OUT/shape_ab.tgz"; }

mf() { # name, binary, configs, knobs, timeout
    echo "== $1: $3 (knobs $4) from $SECONDS s"
    DECODELAB=$T/$2 CONFIGS="$3" VARIANTS="$VARIANTS" KNOBS="$4" OUT=$T/mf-$1 MAXT=$MAXT \
        timeout "$5" bash tests/gpu/memfloor.sh > "$T/mf-$1.log" 2>&1 || echo "   memfloor ($1) exit $? (see its log)"
    pack # after every step: a call cut by its time limit still returns what ran
}
mf main main "$CONFIGS" - 300
for b in s51 s41r s61; do
    if [ -x "$T/$b" ]; then mf "$b" "$b" "$CONFIGS" - 200; else echo "== $b: no .carry/decodelab-$b.gz, skipped"; fi
done
if [ -x "$T/diag" ]; then
    VARIANTS=bf16-hw-stream mf dry diag "$DRY_CONFIGS" "DL_STREAM_DRY=1 DL_STREAM_DRY=2" 150
else
    echo "== dry: no .carry/decodelab-diag.gz, skipped"
fi
[ -n "$G16" ] && VARIANTS=bf16-hw-stream mf g16 main "$G16" "- DL_STREAM_CTAS_PER_SM=1" 120
pack

echo "== median us, cold L2 (read = the read of the same bytes in the same run; x = the row's us / main's)"
python3 - "$T" <<'PY'
import csv, os, sys
T = sys.argv[1]
def rows(name):
    p = os.path.join(T, "mf-" + name, "memfloor.csv")
    knobs = []
    try:
        for line in open(os.path.join(T, "mf-" + name, "memfloor_knobs.txt")):
            n, k = line.split(" ", 1)
            knobs += [k.strip()] * int(n)
        out = list(csv.DictReader(open(p)))
    except OSError:
        return []
    return [(os.path.basename(r["golden_path"]).replace(".h5", ""), r["variant"], knobs[i] if i < len(knobs) else "?", r)
            for i, r in enumerate(out) if r.get("time_median_s") not in ("", "nan", None)]
us = lambda r: 1e6 * float(r["time_median_s"])
main = {(c, v): r for c, v, k, r in rows("main") if k == "-"}
print("%-22s %-17s %-24s %9s %9s %7s %8s %s" % ("config", "variant", "build / knobs", "us", "read", "x main", "frac_ref", "verdict"))
for name in ("main", "s51", "s41r", "s61", "dry", "g16"):
    for c, v, k, r in rows(name):
        m = main.get((c, v))
        x = us(r) / us(m) if m and name not in ("g16",) else float("nan")
        print("%-22s %-17s %-24s %9.2f %9.2f %7.3f %8.3f %s" % (c, v, name + ("" if k == "-" else " " + k), us(r),
              1e6 * float(r["ref_read_s"]), x, float(r["frac_ref"] or "nan"), r["verdict"]))
PY

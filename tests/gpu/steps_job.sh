#!/usr/bin/env bash
# steps_job.sh - one GPU-machine call of several memfloor.sh runs, in priority order, results packed after each
# (a call cut by its time limit returns what ran); golden files made once per config and shared by the steps.
# STEPS: ';'-separated steps, each 'BIN|CONFIG|KNOBS|VARIANTS':
#   BIN       a carried binary's name: .carry/BIN.gz (tests/gpu/unpack_carry.sh first), e.g. decodelab or
#             decodelab-diag (a `make DIAG=1` build, for the DL_STREAM_DRY knobs)
#   CONFIG    a memfloor_configs.sh name;  KNOBS  memfloor.sh's KNOBS ('-' = defaults; space-separated)
#   VARIANTS  memfloor.sh's --variants list (default bf16-hw-stream)
# e.g. STEPS='decodelab|8b_b64_l1024_e4m3|- DL_STREAM_ORDER=heads|fp8-none-wgmma'. Environment: OUT (required),
# MAXT (0.5), STEPS_TMP (its work folder, default /tmp/steps). Writes $OUT/steps.tgz; prints the rows last. Run it
# under `timeout 560`. Exit status: 0, or the first failing step's memfloor.sh exit (1 a FAIL row, 2 a run that
# could not run); a step with a DL_STREAM_DRY knob other than 0 in KNOBS FAILs its rows by design (nothing
# computed), so its exit 1 is not counted.
set -uo pipefail
: "${OUT:?set OUT}"; : "${STEPS:?set STEPS (see the header)}"
T=${STEPS_TMP:-/tmp/steps}; mkdir -p "$T" "$OUT"
export DL_WORKDIR=$T/golden
i=0
worst=0
IFS=';' read -ra list <<< "$STEPS"
for st in "${list[@]}"; do
    IFS='|' read -r bin cfg knobs vars <<< "$st"
    [ -f ".carry/$bin.gz" ] || { echo "steps_job: .carry/$bin.gz missing (step '$st')" >&2; exit 2; }
    [ -x "$T/$bin" ] || { gunzip -c ".carry/$bin.gz" > "$T/$bin" && chmod +x "$T/$bin"; }
    i=$((i + 1)); d="$T/s$i-$cfg"
    echo "== step $i: $bin $cfg ($knobs) ${vars:-bf16-hw-stream} from $SECONDS s"
    DECODELAB=$T/$bin CONFIGS="$cfg" VARIANTS="${vars:-bf16-hw-stream}" KNOBS="$knobs" OUT="$d" MAXT="${MAXT:-0.5}" \
        bash tests/gpu/memfloor.sh > "$d.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        dry=0; [[ " $knobs" =~ [\ ,]DL_STREAM_DRY=[1-9] ]] && dry=1
        if [ $rc -eq 1 ] && [ $dry -eq 1 ]; then echo "   memfloor exit 1 (a DRY step: its rows FAIL by design)"
        else echo "   memfloor exit $rc (see $d.log)"; [ $worst -eq 0 ] && worst=$rc; fi
    fi
    echo "$st" > "$d.step"
    tar czf "$OUT/steps.tgz.part" --exclude='*.h5' --exclude="$(basename "$T")/decodelab*" -C "$(dirname "$T")" "$(basename "$T")" && mv "$OUT/steps.tgz.part" "$OUT/steps.tgz"
done
echo "== rows (median us, cold L2)"
for f in "$T"/s*/memfloor_table.txt; do echo "-- $(cat "${f%/memfloor_table.txt}.step")"; grep -v '^golden' "$f"; done
[ $worst -eq 0 ] || echo "steps_job: a step failed (exit $worst; above)"
exit $worst

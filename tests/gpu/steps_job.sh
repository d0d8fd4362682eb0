#!/usr/bin/env bash
# steps_job.sh - one GPU-machine call of several memfloor.sh runs, in priority order, results packed after each
# (a call cut by its time limit returns what ran); golden files made once per config and shared by the steps.
# STEPS: ';'-separated steps, each 'BIN|CONFIG|KNOBS|VARIANTS':
#   BIN       a carried binary's name: .carry/BIN.gz (tests/gpu/unpack_carry.sh first), e.g. decodelab or
#             decodelab-diag (a `make DIAG=1` build, for the DL_STREAM_DRY knobs)
#   CONFIG    a memfloor_configs.sh name;  KNOBS  memfloor.sh's KNOBS ('-' = defaults; space-separated)
#   VARIANTS  memfloor.sh's --variants list (default bf16-hw-stream)
# e.g. STEPS='decodelab|8b_b64_l1024_e4m3|- DL_STREAM_ORDER=heads|fp8-none-wgmma'. Environment: OUT (required),
# MAXT (0.5). Writes $OUT/steps.tgz; prints the rows last. Run it under `timeout 560`.
set -uo pipefail
: "${OUT:?set OUT}"; : "${STEPS:?set STEPS (see the header)}"
T=/tmp/steps; mkdir -p "$T" "$OUT"
export DL_WORKDIR=$T/golden
i=0
IFS=';' read -ra list <<< "$STEPS"
for st in "${list[@]}"; do
    IFS='|' read -r bin cfg knobs vars <<< "$st"
    [ -f ".carry/$bin.gz" ] || { echo "steps_job: .carry/$bin.gz missing (step '$st')" >&2; exit 2; }
    [ -x "$T/$bin" ] || { gunzip -c ".carry/$bin.gz" > "$T/$bin" && chmod +x "$T/$bin"; }
    i=$((i + 1)); d="$T/s$i-$cfg"
    echo "== step $i: $bin $cfg ($knobs) ${vars:-bf16-hw-stream} from $SECONDS s"
    DECODELAB=$T/$bin CONFIGS="$cfg" VARIANTS="${vars:-bf16-hw-stream}" KNOBS="$knobs" OUT="$d" MAXT="${MAXT:-0.5}" \
        bash tests/gpu/memfloor.sh > "$d.log" 2>&1 || echo "   memfloor exit $? (see $d.log)"
    echo "$st" > "$d.step"
    tar czf "$OUT/steps.tgz.part" --exclude='*.h5' --exclude='steps/decodelab*' -C /tmp steps && mv "$OUT/steps.tgz.part" "$OUT/steps.tgz"
done
echo "== rows (median us, cold L2)"
for f in "$T"/s*/memfloor_table.txt; do echo "-- $(cat "${f%/memfloor_table.txt}.step")"; grep -v '^golden' "$f"; done

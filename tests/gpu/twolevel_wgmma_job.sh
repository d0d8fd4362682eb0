#!/usr/bin/env bash
# twolevel_wgmma_job.sh - one GPU-machine call (issue 12, "two-level figures"): the native FP8 kernels
# with two-level accumulation, promotion every 1, 2 and 4 k32 blocks (fp8acc-none-wgmma dispatches
# the golden file's acc_promote_blocks), against one-level (fp8-none-wgmma): verdict against their
# models, error against exact, and time (cold L2, median). One golden file per promotion count
# (llama3-8B e4m3, absmax-tensor scales, seed 1; CONFIG overrides the shape).
#   run(command="OUT=$OUT bash tests/gpu/twolevel_wgmma_job.sh", carry=[".carry"])
# Expects .carry/decodelab.gz. Writes $OUT/twolevel_<N>.txt (the run tables) and prints a table last:
# promote, variant, verdict, o rel L2 vs exact, median us.
set -uo pipefail
: "${OUT:?}"
CONFIG=${CONFIG:-"--preset llama3-8b --batch 128 --seq-len 4096 --kv-dtype e4m3"}
MAXT=${MAXT:-1.0}
gunzip -c .carry/decodelab.gz > /tmp/dl && chmod +x /tmp/dl || exit 2
mkdir -p /tmp/tl && cd /tmp/tl || exit 2
table=$OUT/twolevel_table.txt
printf '%-8s %-18s %-7s %12s %11s\n' promote variant verdict o_relL2/ex median_us > "$table"
for n in 1 2 4; do
    g=g$n.h5
    # shellcheck disable=SC2086
    /tmp/dl golden $CONFIG --kv-scale absmax-tensor --models exact,fp8wg,fp8accwg --acc-promote-blocks "$n" \
        --seed 1 --out "$g" > "$OUT/golden_$n.log" 2>&1 || { echo "golden $n failed"; cat "$OUT/golden_$n.log"; exit 2; }
    vars='fp8acc-none-wgmma'; [ "$n" = 2 ] && vars='fp8-none-wgmma,fp8acc-none-wgmma'
    /tmp/dl run "$g" --variants "$vars" --time --time-failed --max-time-s "$MAXT" > "$OUT/twolevel_$n.txt" 2>&1
    # the run table's columns: variant verdict splits o_relL2 o_head lse_abs | o_relL2/ex lse_abs/ex ... median_us
    awk -v n="$n" '$1 ~ /wgmma$/ && ($2 == "PASS" || $2 == "FAIL") {
        for (i = 1; i <= NF; i++) if ($i == "|") { bar[++nb] = i }
        printf "%-8s %-18s %-7s %12s %11s\n", n, $1, $2, $(bar[1] + 1), $(bar[2] + 1) }' "$OUT/twolevel_$n.txt" >> "$table"
    rm -f "$g"
done
cat "$table"

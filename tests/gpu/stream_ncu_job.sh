#!/usr/bin/env bash
# stream_ncu_job.sh - one GPU-machine call (issue 10): where the streaming kernel's time goes.
# Nsight Compute on bf16-hw-stream (and fp8-none-wgmma beside it) at llama3-8B B128 L4096 e4m3 NHD,
# with 2 CTAs per SM (the default) and 1 (DL_STREAM_CTAS_PER_SM=1, 1.4x slower on 2026-12-01):
# throughput, memory tables, warp-state (stall reasons: a consumer starved of data waits on its
# full barrier, one bound by its own work stalls on dependencies) and scheduler sections, and the
# stall breakdown (smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio, every reason
# this ncu has: the section alone printed none on 2026-12-01, no pc sampling counter); then the same
# memory counters on the contiguous read reference of the same bytes (dl_read_contig_kernel, timed
# by `run --time`), to tell whether the kernel's L2 works harder per DRAM byte than a plain read
# (2026-12-01: L2 80 % busy vs DRAM 64 %). Metrics by regex, so a name this ncu lacks matches nothing
# instead of failing the profile.
# ncu locks the SM clock at base (1.33 GHz): compare durations only within this job.
# Expects .carry/decodelab.gz. Writes ncu_<variant>_<ctas>.txt (4), ncu_read_contig.txt and golden.log to $OUT.
set -uo pipefail
: "${OUT:?}"
gunzip -c .carry/decodelab.gz > /tmp/dl && chmod +x /tmp/dl
G=/tmp/ncu_g.h5
/tmp/dl golden --preset llama3-8b --batch 128 --seq-len 4096 --kv-dtype e4m3 --kv-scale absmax-tensor \
    --models exact,bf16,fp8wg --seed 1 --out "$G" > "$OUT/golden.log" 2>&1 || { echo "golden failed"; exit 2; }
status=0
STALL='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
MEM='regex:^(dram__bytes_read\.sum|lts__t_(sectors|requests)_(op_read|srcunit_tex_op_read|srcunit_ltcfabric)\.sum)$'
mem_lines() { # the memory counters of one profile, as "name value"
    awk '$1 ~ /^(dram__bytes_read|lts__t_sectors|lts__t_requests)/ { printf "    %-44s %s %s\n", $1, $(NF-1), $NF }' "$1"
}
for v in bf16-hw-stream fp8-none-wgmma; do
    for ctas in 2 1; do
        f="$OUT/ncu_${v}_${ctas}.txt"
        DL_STREAM_CTAS_PER_SM=$ctas ncu --section SpeedOfLight --section MemoryWorkloadAnalysis \
            --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats \
            --section LaunchStats --section Occupancy \
            --metrics "$STALL,$MEM" \
            -k 'regex:(stream|wgmma)_decode' -c 1 \
            /tmp/dl run "$G" --variants "$v" > "$f" 2>&1 || status=1
        echo "== $v, $ctas CTAs/SM"
        grep -E "^\s+(Duration|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Warp Cycles Per Issued|Achieved Occupancy|Registers Per)" "$f"
        # the stall breakdown: warps stalled per issued instruction, by reason, largest first
        awk '$1 ~ /^smsp__average_warps_issue_stalled_/ { r = $1; sub(/^smsp__average_warps_issue_stalled_/, "", r);
             sub(/_per_issue_active\.ratio$/, "", r); printf "    stall %-24s %s\n", r, $NF }' "$f" | sort -k3 -g -r | head -10
        mem_lines "$f"
    done
done
f="$OUT/ncu_read_contig.txt"
ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --metrics "$MEM" -k 'regex:dl_read_contig' -c 1 \
    /tmp/dl run "$G" --variants bf16-hw-stream --time --max-time-s 0.2 > "$f" 2>&1 || status=1
echo "== the contiguous read of the same bytes"
grep -E "^\s+(Duration|DRAM Throughput|L2 Cache Throughput)" "$f"
mem_lines "$f"
exit $status

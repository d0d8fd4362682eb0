#!/usr/bin/env bash
# e2_probes_job.sh - one GPU-machine call (issue 13 item 2, "E2, finished"): profiles every E2
# probe kernel (gpu/e2_probes.cu, `decodelab probe`) under Nsight Compute and writes the table
# probe -> counters per warp beside the SASS census of the same kernels, so that the forms the
# tensor-pipe counter counts are named by measurement, not inferred.
#
# The prediction it tests (from the census, tests/test_probes.c): every probe kernel is
# straight-line code, so each warp executes each static instruction once, and
#   sm__inst_executed_pipe_tensor_op_hmma.sum / warps == census count of HMMA.* + HFMA2.MMA*
# for every probe (HFMA2.MMA: the packed-16-bit FMA/ADD/MUL and the -RZ,RZ immediate moves that
# ptxas places on the MMA unit; plain HFMA2/HADD2/HMUL2, HMNMX2, HSET(P)2, F2FP, HADD2.F32, PRMT,
# LOP3, MOV, IMAD.MOV and FFMA not at all), and sm__inst_executed.sum / warps == the census total
# less NOPs and the trailing BRA.
#
#   run(command="OUT=$OUT bash tests/gpu/e2_probes_job.sh", carry=[".carry"])
# Expects .carry/decodelab.gz (gzip -c build-static/decodelab). Writes to $OUT (at most 8 files):
#   e2_probes.tsv    probe, forms, census (HMMA+HFMA2.MMA, of which moves, executed total),
#                    each metric / warps, and whether the prediction holds
#   summary.txt      the verdict lines
#   ncu_probes.csv   ncu's raw CSV of the probe launches
#   forms.txt        `decodelab sass --kernels 'e2_probe*' --forms` on the carried binary
#   metrics.txt      the metrics this ncu offers on this GPU (--query-metrics), and those used
#   decode_src.csv.gz  optional: per-SASS-instruction executed counts of fp32-cast-simt and
#                    bf16-cast-simt on a small llama3-8B case (ncu source page), to name the
#                    decode kernels' HFMA2.MMA instructions by execution
#   job.log
set -uo pipefail
: "${OUT:?}"
exec > >(tee "$OUT/job.log") 2>&1
gunzip -c .carry/decodelab.gz > /tmp/dl && chmod +x /tmp/dl
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -x "$NCU" ] || { echo "e2_probes_job: ncu not found"; exit 2; }
echo "ncu: $NCU ($($NCU --version | tail -1))"
/tmp/dl info | head -3

# 1. the metrics: the brief's five, plus every sm__inst_executed_pipe_* and the tensor/fma/fp16
#    pipe-cycle counters this ncu offers here (names checked against --query-metrics, so a metric
#    this chip lacks is reported as such instead of failing the run)
$NCU --query-metrics > /tmp/q.txt 2>&1 || true
WANT="sm__inst_executed_pipe_tensor_op_hmma sm__inst_executed_pipe_fma sm__inst_executed_pipe_alu sm__inst_executed smsp__inst_executed_pipe_fp16"
EXTRA=$(awk '{print $1}' /tmp/q.txt | grep -E '^sm__inst_executed_pipe_[a-z0-9_]+$|^sm__pipe_(tensor_op_hmma|fma|fmaheavy|fmalite|fp16|shared|alu)_cycles_active$' | grep -v '_pred_on' | sort -u | head -60)
M=""
{ echo "# offered by this ncu on this GPU (sm__inst_executed_pipe_*, pipe cycles):"; echo "$EXTRA"; echo "# used:"; } > "$OUT/metrics.txt"
for b in $WANT $EXTRA; do
    case ",$M," in *",$b.sum,"*) continue ;; esac
    if grep -qE "^$b[[:space:]]" /tmp/q.txt || ! [ -s /tmp/q.txt ]; then M="$M${M:+,}$b.sum"; echo "$b.sum" >> "$OUT/metrics.txt"
    else echo "NOT OFFERED: $b" | tee -a "$OUT/metrics.txt"; fi
done

# 2. the probes, each launched once, every metric (kernel replay)
/tmp/dl probe --list > /tmp/probes.tsv
$NCU --clock-control none --csv --print-kernel-base mangled -k regex:e2_probe --metrics "$M" \
     --log-file "$OUT/ncu_probes.csv" /tmp/dl probe --run all
echo "ncu exit $?"

# 3. the census of the same kernels in the same binary (cuobjdump of the toolkit here)
/tmp/dl sass --binary /tmp/dl --kernels 'e2_probe*' --forms > "$OUT/forms.txt" 2>&1 || echo "census failed (cuobjdump?): $(tail -1 "$OUT/forms.txt")"

# 4. the table and the verdicts
awk -F'\t' -v OFS='\t' -v SUM="$OUT/summary.txt" '
function csv(line, f,   n, i, c, q, cur) { n = 0; cur = ""; q = 0
    for (i = 1; i <= length(line); i++) { c = substr(line, i, 1)
        if (c == "\"") { q = !q; continue }
        if (c == "," && !q) { f[++n] = cur; cur = ""; continue }
        cur = cur c }
    f[++n] = cur; return n }
FILENAME ~ /probes.tsv$/ { if ($1 !~ /^#/) { order[++np] = $2; forms[$2] = $3; per[$2] = $4; warps[$2] = $5 } next }
FILENAME ~ /forms.txt$/ { if ($1 == "form") { k = $2; n = $4 + 0
        if ($3 ~ /^HMMA\./ || $3 ~ /^HFMA2\.MMA/) { mma[k] += n; mv[k] += $5 }
        tot[k] += n; if ($3 ~ /^NOP/ || $3 == "BRA") tot[k] -= n; have[k] = 1 } next }
{ n = csv($0, f)
  if (!hdr) { for (i = 1; i <= n; i++) { if (f[i] == "Kernel Name") ck = i; if (f[i] == "Metric Name") cm = i; if (f[i] == "Metric Value") cv = i }
              if (ck && cm && cv) hdr = 1; next }
  k = f[ck]; m = f[cm]; v = f[cv]; gsub(/[, ]/, "", v)
  if (!(m in seen)) { seen[m] = 1; mets[++nm] = m }
  if (!((k, m) in val)) val[k, m] = v }
END {
  line = "probe\tforms\tper_thread\twarps\tcensus_HMMA+HFMA2.MMA\tof_which_moves\tcensus_executed"
  for (j = 1; j <= nm; j++) line = line "\t" mets[j] "/warp"
  print line "\thmma_prediction\tinst_prediction"
  bad = 0; badi = 0; checked = 0
  for (i = 1; i <= np; i++) { k = order[i]; w = warps[k]
    line = k "\t" forms[k] "\t" per[k] "\t" w "\t" (have[k] ? mma[k] + 0 : "?") "\t" (have[k] ? mv[k] + 0 : "?") "\t" (have[k] ? tot[k] : "?")
    h = ""; t = ""
    for (j = 1; j <= nm; j++) { v = val[k, mets[j]]; x = (v ~ /^[0-9.]+$/) ? v / w : (v == "" ? "-" : v); line = line "\t" x
        if (mets[j] == "sm__inst_executed_pipe_tensor_op_hmma.sum") h = x
        if (mets[j] == "sm__inst_executed.sum") t = x }
    ph = (!have[k] || h == "" || h == "-") ? "n/a" : (h == mma[k] ? "holds" : "FAILS")
    pt = (!have[k] || t == "" || t == "-") ? "n/a" : (t == tot[k] ? "holds" : "differs")
    if (ph == "FAILS") { bad++; badl = badl " " k "(" h " vs " mma[k] ")" }
    if (ph != "n/a") checked++
    if (pt == "differs") { badi++; badil = badil " " k "(" t " vs " tot[k] ")" }
    print line "\t" ph "\t" pt }
  printf "tensor_op_hmma / warp == census HMMA.* + HFMA2.MMA* : %s on %d of %d probes%s\n", \
      (checked == 0 ? "NOT DECIDED" : (bad ? "REJECTED" : "HOLDS")), checked - bad, np, (bad ? ";" badl : "") > SUM
  printf "inst_executed / warp == census total less NOP and BRA: %s%s\n", (badi ? "differs on" : "holds where measured"), badil > SUM
}' /tmp/probes.tsv "$OUT/forms.txt" "$OUT/ncu_probes.csv" > "$OUT/e2_probes.tsv"
cat "$OUT/summary.txt"
column -t -s $'\t' "$OUT/e2_probes.tsv" | cut -c1-220

# 5. optional, best effort: where the decode kernels' tensor-pipe count comes from, by instruction
#    (ncu's source page: executed warp instructions per SASS line; sum the HFMA2.MMA lines)
if /tmp/dl golden --preset llama3-8b --batch 4 --seq-len 1024 --kv-dtype e4m3 --models exact,fp32,bf16 --out /tmp/g.h5 > /dev/null 2>&1; then
    for v in fp32-cast-simt bf16-cast-simt; do
        echo "== $v"
        timeout 120 $NCU --clock-control none -k regex:simt_decode -c 1 --section SourceCounters --page source \
            --print-source sass --csv /tmp/dl run /tmp/g.h5 --variants $v > /tmp/src_$v.csv 2>&1 || echo "source page failed for $v"
        timeout 60 $NCU --clock-control none -k regex:simt_decode -c 1 --csv \
            --metrics sm__inst_executed_pipe_tensor_op_hmma.sum,sm__inst_executed.sum /tmp/dl run /tmp/g.h5 --variants $v 2>&1 | grep -E 'sm__inst' || true
    done
    cat /tmp/src_*.csv 2>/dev/null | gzip > "$OUT/decode_src.csv.gz"
fi
exit 0

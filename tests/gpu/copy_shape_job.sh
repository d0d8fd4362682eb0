#!/usr/bin/env bash
# copy_shape_job.sh - one GPU-machine call (issue 10): which copy shape the streaming kernel's producer
# alone can stream at the read. bf16-hw-stream at llama3-8B B128 L4096 e4m3 in four layouts (NHD pages
# of 16: four 2 KB boxes of 128-byte rows per K or V tile; HND pages of 16: four contiguous 2 KB boxes;
# HND pages of 64: one 8 KB box; one KV head, B1024: a page is one contiguous 2 KB box), each real and
# with DL_STREAM_DRY=1 (consumers release every stage unread: the copy path alone), and the NHD case
# with one CTA per SM. Needs the diagnosis build (make DIAG=1) as .carry/decodelab-diag.gz.
# Writes $OUT/copy_shape.tgz (logs, CSV, table); prints the table last. DRY rows FAIL by design.
set -uo pipefail
: "${OUT:?set OUT}"
mkdir -p "$OUT"
[ -f .carry/decodelab-diag.gz ] || { echo "copy_shape_job: need .carry/decodelab-diag.gz (make static BUILD=build-diag DIAG=1)"; exit 2; }
gunzip -c .carry/decodelab-diag.gz > /tmp/dl_diag && chmod +x /tmp/dl_diag
T=/tmp/copy_shape; rm -rf "$T"
DECODELAB=/tmp/dl_diag CONFIGS='8b_b128_l4096_e4m3 8b_b128_l4096_e4m3_hnd 8b_b128_l4096_e4m3_hnd_p64 kvh1_b1024_l4096_e4m3' \
    VARIANTS=bf16-hw-stream KNOBS='- DL_STREAM_DRY=1' OUT=$T MAXT=${MAXT:-1.0} timeout 420 bash tests/gpu/memfloor.sh > "$T.log" 2>&1
echo "memfloor exit $? (1 expected: the DRY rows FAIL by design)"
DECODELAB=/tmp/dl_diag CONFIGS=8b_b128_l4096_e4m3 VARIANTS=bf16-hw-stream \
    KNOBS='DL_STREAM_CTAS_PER_SM=1 DL_STREAM_CTAS_PER_SM=1,DL_STREAM_DRY=1' OUT=$T-1cta MAXT=${MAXT:-1.0} \
    timeout 150 bash tests/gpu/memfloor.sh > "$T-1cta.log" 2>&1
echo "memfloor (1 CTA/SM) exit $?"
tar czf "$OUT/copy_shape.tgz" --exclude='*.h5' -C /tmp copy_shape copy_shape.log copy_shape-1cta copy_shape-1cta.log
cat "$T/memfloor_table.txt"; tail -n +2 "$T-1cta/memfloor_table.txt"

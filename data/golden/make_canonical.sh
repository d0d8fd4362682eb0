#!/bin/sh
# make_canonical.sh - regenerate the canonical golden set in data/golden/ with the CLI.
# Small nasty cases (a few MB in all): NHD and HND, page sizes 1 and 16, ragged lengths
# including 1 and page boundaries +-1, group sizes 1/4/5 (and 4 at llama3-8b's head shape),
# every KV dtype (f16, bf16, e4m3, e5m2), Q in f32/f16/bf16, all four distributions.
# Deterministic: rerunning gives byte-identical files (tests/test_cli.c checks they verify).
# usage: data/golden/make_canonical.sh [path/to/decodelab]   (default build/decodelab)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../../build/decodelab}
g() { out=$1; shift; "$bin" golden --force --out "$here/$out" "$@" | sed -n 's/^case: *//p' | sed "s|^|$out: |"; }

g nhd_p16_g4_e4m3.h5          --num-qo-heads 8  --num-kv-heads 2 --head-dim 64  --page-size 16 --kv-layout NHD \
                              --kv-dtype e4m3 --seq-len 1,15,16,17,33,100 --seed 1
g hnd_p16_g4_e4m3.h5          --num-qo-heads 8  --num-kv-heads 2 --head-dim 64  --page-size 16 --kv-layout HND \
                              --kv-dtype e4m3 --seq-len 1,15,16,17,33,100 --seed 1
g nhd_p1_g1_bf16.h5           --num-qo-heads 4  --num-kv-heads 4 --head-dim 128 --page-size 1  --kv-layout NHD \
                              --kv-dtype bf16 --batch 4 --seq-len 1:50 --seed 2
g hnd_p16_g5_e5m2.h5          --num-qo-heads 10 --num-kv-heads 2 --head-dim 64  --page-size 16 --kv-layout HND \
                              --kv-dtype e5m2 --seq-len 1,31,32,64,65 --seed 3
g nhd_p16_g5_f16_qf16.h5      --num-qo-heads 5  --num-kv-heads 1 --head-dim 128 --page-size 16 --kv-layout NHD \
                              --q-dtype f16 --kv-dtype f16 --seq-len 1,200 --seed 4
g hnd_p1_g4_e4m3_outlier.h5   --num-qo-heads 8  --num-kv-heads 2 --head-dim 128 --page-size 1  --kv-layout HND \
                              --kv-dtype e4m3 --seq-len 1,3,70 --distribution outlier --outlier-prob 0.01 --seed 5
g nhd_p16_g4_e4m3_channel.h5  --num-qo-heads 8  --num-kv-heads 2 --head-dim 128 --page-size 16 --kv-layout NHD \
                              --kv-dtype e4m3 --batch 4 --seq-len 1:80 --distribution channel-outlier --seed 6
g nhd_p16_g1_e5m2_qf32.h5     --num-qo-heads 2  --num-kv-heads 2 --head-dim 32  --page-size 16 --kv-layout NHD \
                              --q-dtype f32 --kv-dtype e5m2 --seq-len 16,48 --distribution uniform \
                              --kv-scale absmax-tensor --seed 7
g llama3-8b_p16_e4m3.h5       --preset llama3-8b --page-size 16 --kv-dtype e4m3 --seq-len 1,40 --seed 8
du -ch "$here"/*.h5 | tail -1

# memfloor_configs.sh - issue 10's benchmark configurations, one table for the scripts that time them
# (sourced by memfloor.sh and flashinfer_compare.sh): name -> `decodelab golden` flags (Q bf16 by default;
# each script adds --kv-scale absmax-tensor). ORDER: issue 10's ten (its table's eight, then B256 L4096
# e4m3 and bf16); the others are diagnosis variants of them.
# shellcheck disable=SC2034 # used by the scripts that source it
declare -A C=(
  [8b_b64_l1024_e4m3]="--preset llama3-8b --batch 64 --seq-len 1024 --kv-dtype e4m3"
  [8b_b64_l1024_bf16]="--preset llama3-8b --batch 64 --seq-len 1024 --kv-dtype bf16"
  [8b_b128_l4096_e4m3]="--preset llama3-8b --batch 128 --seq-len 4096 --kv-dtype e4m3"
  [8b_b128_l4096_bf16]="--preset llama3-8b --batch 128 --seq-len 4096 --kv-dtype bf16"
  [70b_b64_l4096_e4m3]="--preset llama3-70b --batch 64 --seq-len 4096 --kv-dtype e4m3"
  [8b_b4_l32768_e4m3]="--preset llama3-8b --batch 4 --seq-len 32768 --kv-dtype e4m3"
  [8b_b1_l32768_e4m3]="--preset llama3-8b --batch 1 --seq-len 32768 --kv-dtype e4m3"
  [13b_b64_l1024_bf16]="--preset llama-13b --batch 64 --seq-len 1024 --kv-dtype bf16"
  [8b_b256_l4096_e4m3]="--preset llama3-8b --batch 256 --seq-len 4096 --kv-dtype e4m3"
  [8b_b256_l4096_bf16]="--preset llama3-8b --batch 256 --seq-len 4096 --kv-dtype bf16"
  [8b_b64_l1024_e4m3_hnd]="--preset llama3-8b --batch 64 --seq-len 1024 --kv-dtype e4m3 --kv-layout HND"
  [8b_b128_l4096_e4m3_hnd]="--preset llama3-8b --batch 128 --seq-len 4096 --kv-dtype e4m3 --kv-layout HND"
  [8b_b128_l4096_e4m3_hnd_p64]="--preset llama3-8b --batch 128 --seq-len 4096 --kv-dtype e4m3 --kv-layout HND --page-size 64"
  [8b_d64_b128_l4096_e4m3]="--preset llama3-8b --head-dim 64 --batch 128 --seq-len 4096 --kv-dtype e4m3"
  [8b_d256_b64_l1024_e4m3]="--preset llama3-8b --head-dim 256 --batch 64 --seq-len 1024 --kv-dtype e4m3"
  [8b_d256_b64_l4096_e4m3]="--preset llama3-8b --head-dim 256 --batch 64 --seq-len 4096 --kv-dtype e4m3"
  [8b_d256_b4_l32768_e4m3]="--preset llama3-8b --head-dim 256 --batch 4 --seq-len 32768 --kv-dtype e4m3"
  [70b_d256_b64_l1024_e4m3]="--preset llama3-70b --head-dim 256 --batch 64 --seq-len 1024 --kv-dtype e4m3"
  [8b_b8_l16384_e4m3]="--preset llama3-8b --batch 8 --seq-len 16384 --kv-dtype e4m3"
  [8b_b16_l8192_e4m3]="--preset llama3-8b --batch 16 --seq-len 8192 --kv-dtype e4m3"
  [kvh1_b1024_l4096_e4m3]="--num-qo-heads 4 --num-kv-heads 1 --batch 1024 --seq-len 4096 --kv-dtype e4m3"
  [g16_b128_l4096_e4m3]="--num-qo-heads 32 --num-kv-heads 2 --head-dim 128 --batch 128 --seq-len 4096 --kv-dtype e4m3"
  [g16_b4_l32768_e4m3]="--num-qo-heads 32 --num-kv-heads 2 --head-dim 128 --batch 4 --seq-len 32768 --kv-dtype e4m3"
)
ORDER="8b_b64_l1024_e4m3 8b_b64_l1024_bf16 8b_b128_l4096_e4m3 8b_b128_l4096_bf16 70b_b64_l4096_e4m3 8b_b4_l32768_e4m3 8b_b1_l32768_e4m3 13b_b64_l1024_bf16 8b_b256_l4096_e4m3 8b_b256_l4096_bf16"

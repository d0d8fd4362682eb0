#!/bin/sh
# gpu_kernel_check.sh - build and run tests/gpu_kernel_check.cu on a GPU machine
# with nvcc and gcc only (no HDF5, Check or OpenBLAS needed: a naive dgemm
# stands in for the exact model). Usage:
#   tests/gpu_kernel_check.sh [OUTDIR] [-- EXTRA_NVCC_FLAGS...]   builds OUTDIR/check
#   OUTDIR/check [--small] [--no-matrix] [--time] [--only N]
set -e
OUT=${1:-/tmp/gk}; shift 2>/dev/null || true
[ "$1" = "--" ] && shift
mkdir -p "$OUT/shim"
cat > "$OUT/shim/cblas.h" <<'H'
enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };
void cblas_dgemm(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int, int, int, double,
                 const double *, int, const double *, int, double, double *, int);
int openblas_get_num_threads(void);
void openblas_set_num_threads(int);
H
for f in ref/dl_common.c ref/dl_formats.c ref/dl_paged.c ref/dl_rng.c ref/dl_ref.c gpu/registry.c; do
  gcc -std=c11 -O2 -D_DEFAULT_SOURCE -DDL_HAVE_CUDA=1 -fopenmp -I"$OUT/shim" -c "$f" -o "$OUT/$(basename "$f" .c).o"
done
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DDL_HAVE_CUDA=1 -DDL_NAIVE_BLAS "$@" \
  tests/gpu_kernel_check.cu gpu/runtime.cu gpu/decode_simt.cu gpu/decode_mma.cu \
  "$OUT"/dl_*.o "$OUT"/registry.o -Xcompiler -fopenmp -o "$OUT/check"

/* e2_probes.cu - the E2 probe kernels (issue 13 item 2; rows in gpu/dl_probes.def).
 *
 * Question: which instruction forms does Nsight Compute's sm__inst_executed_pipe_tensor_op_hmma
 * count? Each kernel here issues ONE candidate form (packed and scalar FP16/BF16 FMA, MUL, ADD, MAX,
 * compare, conversions, byte permutes, bit logic, immediate moves; FP32 FFMA and HMMA as controls)
 * through inline PTX, 64 times per thread (16 for HMMA) in four interleaved dependent chains, and
 * writes the result so nothing is dead. Every kernel is straight-line code (fully unrolled, no
 * branch): the static count of each form in its disassembly is exactly what each warp executes, so
 * counter / warps can be compared with the census form by form (tests/gpu/e2_probes_job.sh). One
 * block of DL_PROBE_THREADS threads per launch. Inputs come from the seed argument, so nothing
 * folds to constants. */
#include <stdint.h>

#include "dl_cuda.cuh"
#include "dl_probes.h"

#define PROBE_N 64 /* forms per thread (16 per chain) */

/* four chains x[0..3], each op reading its own chain and the next ones (nothing to simplify) */
#define CHAINS_2(OP)                                                                                      \
    _Pragma("unroll") for (int i = 0; i < PROBE_N; i++) x[i & 3] = OP(x[i & 3], x[(i + 1) & 3]);
#define CHAINS_3(OP)                                                                                      \
    _Pragma("unroll") for (int i = 0; i < PROBE_N; i++) x[i & 3] = OP(x[i & 3], x[(i + 1) & 3], x[(i + 2) & 3]);

__device__ __forceinline__ uint32_t seed_word(uint32_t seed, int k)
{
    /* distinct finite halves (f16 ~1.0-1.2, bf16 ~0.008) per thread and chain; shifts and
     * multiply-adds only, so that no LOP3 or PRMT outside the probed forms appears */
    const uint32_t t = (seed >> 26) + threadIdx.x + 128u * (uint32_t)k;
    return 0x3c003c00u + t + (t << 16); /* not t * 0x10001: that constant would need a register move */
}

#define KERNEL_BEGIN(id)                                                                                  \
    extern "C" __global__ void __launch_bounds__(DL_PROBE_THREADS) e2_probe_##id(uint32_t *out, uint32_t seed) \
    {
#define KERNEL_END_X                                                                                      \
    out[blockIdx.x * blockDim.x + threadIdx.x] = x[0] + x[1] + x[2] + x[3];                               \
    }

/* ---- packed and scalar 16-bit arithmetic (32-bit registers hold f16x2 / bf16x2) */
#define PTX3(name, ins)                                                                                   \
    __device__ __forceinline__ uint32_t name(uint32_t a, uint32_t b, uint32_t c)                         \
    {                                                                                                     \
        uint32_t d;                                                                                       \
        asm volatile(ins " %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));                           \
        return d;                                                                                         \
    }
#define PTX2(name, ins)                                                                                   \
    __device__ __forceinline__ uint32_t name(uint32_t a, uint32_t b)                                     \
    {                                                                                                     \
        uint32_t d;                                                                                       \
        asm volatile(ins " %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));                                      \
        return d;                                                                                         \
    }
PTX3(p_fma_f16x2, "fma.rn.f16x2")
PTX3(p_fma_bf16x2, "fma.rn.bf16x2")
PTX2(p_mul_f16x2, "mul.rn.f16x2")
PTX2(p_mul_bf16x2, "mul.rn.bf16x2")
PTX2(p_add_f16x2, "add.rn.f16x2")
PTX2(p_add_bf16x2, "add.rn.bf16x2")
PTX2(p_max_f16x2, "max.f16x2")
PTX2(p_max_bf16x2, "max.bf16x2")
PTX2(p_set_f16x2, "set.gt.f16x2.f16x2")

/* scalar: 16-bit registers, one dependent chain (independent scalar FMAs may be paired into one
 * packed HFMA2 by ptxas) */
__device__ __forceinline__ unsigned short p_fma_f16(unsigned short a, unsigned short b, unsigned short c)
{
    unsigned short d;
    asm volatile("fma.rn.f16 %0, %1, %2, %3;" : "=h"(d) : "h"(a), "h"(b), "h"(c));
    return d;
}
__device__ __forceinline__ unsigned short p_fma_bf16(unsigned short a, unsigned short b, unsigned short c)
{
    unsigned short d;
    asm volatile("fma.rn.bf16 %0, %1, %2, %3;" : "=h"(d) : "h"(a), "h"(b), "h"(c));
    return d;
}
__device__ __forceinline__ uint32_t p_setp_f16x2(uint32_t a, uint32_t b)
{
    uint32_t d;
    asm volatile("{.reg .pred p, q; setp.gt.f16x2 p|q, %1, %2; selp.b32 %0, %1, %2, p;}" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
__device__ __forceinline__ uint32_t p_lop3_xor3(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t d;
    asm volatile("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
__device__ __forceinline__ uint32_t p_prmt(uint32_t a, uint32_t b)
{
    uint32_t d;
    asm volatile("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
/* conversions: the output word is the next input (reinterpreted, no extra instruction) */
__device__ __forceinline__ uint32_t p_cvt_bf16x2(uint32_t a, uint32_t b)
{
    uint32_t d;
    asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(__uint_as_float(a)), "f"(__uint_as_float(b)));
    return d;
}
__device__ __forceinline__ uint32_t p_cvt_f16x2(uint32_t a, uint32_t b)
{
    uint32_t d;
    asm volatile("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(__uint_as_float(a)), "f"(__uint_as_float(b)));
    return d;
}
__device__ __forceinline__ uint32_t p_cvt_e4m3x2(uint32_t a, uint32_t b)
{
    uint32_t d;
    (void)b;
    asm volatile("{.reg .b16 lo, hi; mov.b32 {lo, hi}, %1; cvt.rn.f16x2.e4m3x2 %0, lo;}" : "=r"(d) : "r"(a));
    return d;
}
__device__ __forceinline__ uint32_t p_cvt_f32_f16(uint32_t a, uint32_t b)
{
    float f;
    (void)b;
    asm volatile("{.reg .b16 lo, hi; mov.b32 {lo, hi}, %1; cvt.f32.f16 %0, lo;}" : "=f"(f) : "r"(a));
    return __float_as_uint(f);
}
__device__ __forceinline__ uint32_t p_ffma(uint32_t a, uint32_t b, uint32_t c)
{
    float d;
    asm volatile("fma.rn.f32 %0, %1, %2, %3;" : "=f"(d) : "f"(__uint_as_float(a)), "f"(__uint_as_float(b)), "f"(__uint_as_float(c)));
    return __float_as_uint(d);
}

#define PROBE(id, ARITY, OP)                                                                              \
    KERNEL_BEGIN(id)                                                                                      \
    uint32_t x[4] = {seed_word(seed, 0), seed_word(seed, 1), seed_word(seed, 2), seed_word(seed, 3)};     \
    CHAINS_##ARITY(OP) KERNEL_END_X

PROBE(hfma2_f16x2, 3, p_fma_f16x2)
PROBE(hfma2_bf16x2, 3, p_fma_bf16x2)
PROBE(hmul2_f16x2, 2, p_mul_f16x2)
PROBE(hmul2_bf16x2, 2, p_mul_bf16x2)
PROBE(hadd2_f16x2, 2, p_add_f16x2)
PROBE(hadd2_bf16x2, 2, p_add_bf16x2)
PROBE(hmnmx2_f16x2, 2, p_max_f16x2)
PROBE(hmnmx2_bf16x2, 2, p_max_bf16x2)
PROBE(hset2_f16x2, 2, p_set_f16x2)
PROBE(hsetp2_f16x2, 2, p_setp_f16x2)
PROBE(f2fp_bf16x2, 2, p_cvt_bf16x2)
PROBE(f2fp_f16x2, 2, p_cvt_f16x2)
PROBE(f2fp_e4m3x2, 2, p_cvt_e4m3x2)
PROBE(hadd2_f32_f16, 2, p_cvt_f32_f16)
PROBE(prmt, 2, p_prmt)
PROBE(lop3, 3, p_lop3_xor3)
PROBE(ffma, 3, p_ffma)

#define PROBE_SCALAR(id, OP)                                                                              \
    KERNEL_BEGIN(id)                                                                                      \
    unsigned short h = (unsigned short)seed_word(seed, 0), b = (unsigned short)seed_word(seed, 1),        \
                   c = (unsigned short)seed_word(seed, 2);                                                \
    _Pragma("unroll") for (int i = 0; i < PROBE_N; i++) h = OP(h, b, c);                                  \
    out[blockIdx.x * blockDim.x + threadIdx.x] = h;                                                       \
    }
PROBE_SCALAR(hfma2_f16, p_fma_f16)
PROBE_SCALAR(hfma2_bf16, p_fma_bf16)

/* 64 distinct 32-bit immediates stored one by one (volatile: no merging): every store needs its
 * value in a register, and ptxas chooses how to put it there (MOV, IMAD.MOV.U32, or the
 * HFMA2.MMA R, -RZ, RZ, h0, h1 move that the decode kernels are full of). */
KERNEL_BEGIN(mov_imm)
volatile uint32_t *o = out + (size_t)(blockIdx.x * blockDim.x + threadIdx.x) * 64 + (seed & 1);
#pragma unroll
for (int i = 0; i < 64; i++) o[i] = 0x3c013c01u + 0x00050003u * (uint32_t)i;
}

/* 16 mma.sync.m16n8k16 bf16 -> f32 per thread (one HMMA.16816.F32.BF16 each per warp), four
 * independent accumulators */
KERNEL_BEGIN(hmma_bf16)
uint32_t a[4] = {seed_word(seed, 0), seed_word(seed, 1), seed_word(seed, 2), seed_word(seed, 3)};
uint32_t b[2] = {seed_word(seed, 4), seed_word(seed, 5)};
float c[4][4];
#pragma unroll
for (int i = 0; i < 16; i++) c[i >> 2][i & 3] = (float)(seed >> (i + 8)); /* four different accumulators */
#pragma unroll
for (int i = 0; i < 16; i++) {
    float *d = c[i & 3];
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
float s = 0.0f;
#pragma unroll
for (int i = 0; i < 4; i++) s += c[i][0] + c[i][1] + c[i][2] + c[i][3];
out[blockIdx.x * blockDim.x + threadIdx.x] = __float_as_uint(s);
}

/* ---- the launcher: kernels in the order of gpu/dl_probes.def */
typedef void (*probe_fn)(uint32_t *, uint32_t);
static const probe_fn probe_kernels[] = {
#define DL_PROBE(id, form, count, ptx, note) e2_probe_##id,
#include "dl_probes.def"
#undef DL_PROBE
};

extern "C" int dl_probe_launch(int i, uint32_t *checksum)
{
    if (i < 0 || i >= (int)(sizeof probe_kernels / sizeof probe_kernels[0]))
        return dl_fail("probe index %d out of range", i);
    const size_t words = (size_t)DL_PROBE_THREADS * 64 + 1; /* mov_imm writes 64 words per thread */
    uint32_t *d = NULL;
    DL_CUDA_CHECK(cudaMalloc(&d, words * sizeof *d));
    cudaError_t e = cudaMemset(d, 0, words * sizeof *d);
    if (e == cudaSuccess) {
        probe_kernels[i]<<<1, DL_PROBE_THREADS>>>(d, 0x2545f491u);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    uint32_t *h = NULL;
    if (e == cudaSuccess) {
        h = (uint32_t *)malloc(words * sizeof *h);
        if (h) e = cudaMemcpy(h, d, words * sizeof *h, cudaMemcpyDeviceToHost);
    }
    uint32_t x = 0;
    for (size_t k = 0; h && e == cudaSuccess && k < words; k++) x ^= h[k] * (uint32_t)(2 * k + 1);
    free(h);
    cudaFree(d);
    if (e != cudaSuccess) return dl_fail("probe %s: %s", dl_probes[i].name, cudaGetErrorString(e));
    *checksum = x;
    return 0;
}

/* wgmma_acc_probe.cu - what does the Hopper warpgroup MMA do with its sums? (issue 12)
 * QGMMA (e4m3 operands, `decodelab probe --wgmma-acc`) and HGMMA (bf16, `--hgmma-acc`), one body
 * each for the chain and the full-matrix kernels, the operand type a policy (op_e4m3, op_bf16).
 *
 * One block per case, one warpgroup: D = C + A B with one wgmma.mma_async m64n8kK (K = 32 for e4m3,
 * 16 for bf16), every row of A equal to the case's a[0..K) and every column of B equal to b[0..K), so
 * that each of the 64 x 8 outputs is C + sum_k a[k] b[k] whatever the fragment layout; C is the
 * accumulator's initial value (scale-d = 1). With chain > 1, chain wgmmas (each its own a, b) are
 * issued back to back on one accumulator before the commit, as the decode kernels chain them;
 * zero_c = 1: the first of them has scale-d = 0 (C ignored), as the kernels start each chain. The
 * host (harness/cmd_probe.c) builds cases that isolate one question each (the exponent gap at which a
 * small product is lost, whether a partly kept product is truncated or rounded, whether C takes part
 * in the alignment) and prints the GPU's D beside the exact sum, a sequential FP32 sum and the
 * models. uniform[case] = 1 when all 512 outputs agree bitwise (a layout mistake shows as 0).
 * Shared-memory layout: no swizzle, K-major core matrices of 8 rows x 16 bytes: element (r, k) of A
 * at byte (r/8)*256 + (k/E)*128 + (r%8)*16 + (k%E)*size, of B (n, k) at (k/E)*128 + n*16 + (k%E)*size
 * (E = 16 / size elements per core-matrix row); LBO 128 (the next E k), SBO 256 (the next 8 rows);
 * bf16: imm-trans-a = imm-trans-b = 0 (both K-major). */
#include <stdint.h>
#include <string.h>

#include "dl_cuda.cuh"
#include "dl_probes.h"

__device__ __forceinline__ uint64_t acc_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3FFF) << 32);
}

/* The operand policies: element type, K of one wgmma, the instruction, the longest chain probed
 * (bf16: 16, as bf16-fast-wgmma issues at head dim 256), the name in error messages. */
struct op_e4m3 {
    using T = uint8_t;
    static constexpr int K = 32, MAX_CHAIN = 8;
    static constexpr const char *name = "wgmma";
    __device__ static __forceinline__ void mma(float *acc, uint64_t da, uint64_t db, int accumulate)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, %4, %5, p, 1, 1;\n}\n"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "l"(da), "l"(db), "r"(accumulate));
    }
};
struct op_bf16 {
    using T = uint16_t;
    static constexpr int K = 16, MAX_CHAIN = 16;
    static constexpr const char *name = "hgmma";
    __device__ static __forceinline__ void mma(float *acc, uint64_t da, uint64_t db, int accumulate)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "l"(da), "l"(db), "r"(accumulate));
    }
};

/* Element indices (byte offset / size) of A (r, k) and B (n, k) in the layout above. */
template <class Op> __device__ __forceinline__ int a_index(int r, int k)
{
    constexpr int S = sizeof(typename Op::T), E = 16 / S;
    return (r / 8) * (256 / S) + (k / E) * (128 / S) + (r % 8) * E + k % E;
}
template <class Op> __device__ __forceinline__ int b_index(int n, int k)
{
    constexpr int S = sizeof(typename Op::T), E = 16 / S;
    return (k / E) * (128 / S) + n * E + k % E;
}

/* CHAIN wgmmas back to back on one accumulator (unrolled, with the accumulator set before the
 * fence, so that ptxas issues them without a wait in between, as it does in the decode kernels). */
template <class Op, int CHAIN>
__device__ __forceinline__ void chain_body(const float *c, const typename Op::T *a, const typename Op::T *b, float *d,
                                           int *uniform, int zero_c)
{
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using T = typename Op::T;
    constexpr int K = Op::K;
    __shared__ __align__(1024) T sa[CHAIN][64 * K];
    __shared__ __align__(1024) T sb[CHAIN][8 * K];
    __shared__ int same;
    __shared__ float first;
    const int cs = blockIdx.x, t = threadIdx.x;
    for (int i = 0; i < CHAIN; i++) { /* every row of A = a[0..K), every column of B = b[0..K) */
        const T *ai = a + ((size_t)cs * CHAIN + i) * K, *bi = b + ((size_t)cs * CHAIN + i) * K;
        for (int j = t; j < 64 * K; j += 128) sa[i][a_index<Op>(j / K, j % K)] = ai[j % K];
        for (int j = t; j < 8 * K; j += 128) sb[i][b_index<Op>(j / K, j % K)] = bi[j % K];
    }
    if (t == 0) same = 1;
    float acc[4] = {c[cs], c[cs], c[cs], c[cs]};
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int i = 0; i < CHAIN; i++) /* chained: each wgmma adds to the previous one's accumulator */
        Op::mma(acc, acc_desc((uint32_t)__cvta_generic_to_shared(sa[i]), 128, 256),
                acc_desc((uint32_t)__cvta_generic_to_shared(sb[i]), 128, 256), (int)(i > 0 || !zero_c));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    asm volatile("" : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])::"memory");
    if (t == 0) first = acc[0];
    __syncthreads();
    for (int j = 0; j < 4; j++)
        if (__float_as_uint(acc[j]) != __float_as_uint(first)) same = 0;
    __syncthreads();
    if (t == 0) {
        d[cs] = first;
        uniform[cs] = same;
    }
#else
    if (threadIdx.x == 0) uniform[blockIdx.x] = -1; /* not built for sm_90a */
#endif
}

/* Full matrices, one wgmma per case, every element its own: A [64][K], B [8][K] (codes, K-major), C
 * and D [64][8] row-major; zero_c: scale-d = 0. D fragment of m64n8 f32: warp w, lane l holds rows
 * 16w + l/4 (d0, d1) and 16w + l/4 + 8 (d2, d3), columns 2(l%4) and 2(l%4)+1. */
template <class Op>
__device__ __forceinline__ void full_body(const float *c, const typename Op::T *a, const typename Op::T *b, float *d,
                                          int zero_c)
{
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using T = typename Op::T;
    constexpr int K = Op::K;
    __shared__ __align__(1024) T sa[64 * K];
    __shared__ __align__(1024) T sb[8 * K];
    const int cs = blockIdx.x, t = threadIdx.x, w = t / 32, l = t % 32;
    for (int i = t; i < 64 * K; i += 128) sa[a_index<Op>(i / K, i % K)] = a[(size_t)cs * 64 * K + i];
    for (int i = t; i < 8 * K; i += 128) sb[b_index<Op>(i / K, i % K)] = b[(size_t)cs * 8 * K + i];
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const int r0 = 16 * w + l / 4, c0 = 2 * (l % 4);
    const float *cc = c + (size_t)cs * 512;
    float acc[4] = {cc[r0 * 8 + c0], cc[r0 * 8 + c0 + 1], cc[(r0 + 8) * 8 + c0], cc[(r0 + 8) * 8 + c0 + 1]};
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    Op::mma(acc, acc_desc((uint32_t)__cvta_generic_to_shared(sa), 128, 256),
            acc_desc((uint32_t)__cvta_generic_to_shared(sb), 128, 256), (int)!zero_c);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    asm volatile("" : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])::"memory");
    float *dd = d + (size_t)cs * 512;
    dd[r0 * 8 + c0] = acc[0];
    dd[r0 * 8 + c0 + 1] = acc[1];
    dd[(r0 + 8) * 8 + c0] = acc[2];
    dd[(r0 + 8) * 8 + c0 + 1] = acc[3];
#else
    if (threadIdx.x == 0) d[(size_t)blockIdx.x * 512] = __int_as_float(0x7fc00001); /* not built for sm_90a */
#endif
}

/* The kernels, by name (the census test finds the HGMMA ones by "hgmma_acc_"). */
template <int CHAIN>
__global__ void __launch_bounds__(128) wgmma_acc_probe_kernel(const float *c, const uint8_t *a, const uint8_t *b,
                                                             float *d, int *uniform, int zero_c)
{
    chain_body<op_e4m3, CHAIN>(c, a, b, d, uniform, zero_c);
}
template <int CHAIN>
__global__ void __launch_bounds__(128) hgmma_acc_probe_kernel(const float *c, const uint16_t *a, const uint16_t *b,
                                                             float *d, int *uniform, int zero_c)
{
    chain_body<op_bf16, CHAIN>(c, a, b, d, uniform, zero_c);
}
__global__ void __launch_bounds__(128) wgmma_acc_full_kernel(const float *c, const uint8_t *a, const uint8_t *b,
                                                            float *d, int zero_c)
{
    full_body<op_e4m3>(c, a, b, d, zero_c);
}
__global__ void __launch_bounds__(128) hgmma_acc_full_kernel(const float *c, const uint16_t *a, const uint16_t *b,
                                                            float *d, int zero_c)
{
    full_body<op_bf16>(c, a, b, d, zero_c);
}

template <class Op, int CHAIN>
static void launch_chain(int n, const float *c, const typename Op::T *a, const typename Op::T *b, float *d, int *u,
                         int zero_c)
{
    if constexpr (sizeof(typename Op::T) == 1) wgmma_acc_probe_kernel<CHAIN><<<n, 128>>>(c, a, b, d, u, zero_c);
    else hgmma_acc_probe_kernel<CHAIN><<<n, 128>>>(c, a, b, d, u, zero_c);
}

/* n cases of chain wgmmas: device buffers, launch, results back; 0, or -1 with the error recorded */
template <class Op>
static int run_chain(int n, int chain, int zero_c, const float *c, const typename Op::T *a, const typename Op::T *b,
                     float *d, int *uniform)
{
    using T = typename Op::T;
    if (n < 1 || chain < 1 || chain > Op::MAX_CHAIN || (chain & (chain - 1)))
        return dl_fail("dl_%s_acc_probe: %d cases, chain %d (a power of two, 1 to %d)", Op::name, n, chain,
                       Op::MAX_CHAIN);
    const size_t ops = (size_t)n * chain * Op::K; /* elements of a (and of b) */
    float *dc = NULL, *dd = NULL;
    T *dab = NULL;
    int *du = NULL;
    cudaError_t e = cudaMalloc(&dc, n * sizeof(float));
    if (e == cudaSuccess) e = cudaMalloc(&dd, n * sizeof(float));
    if (e == cudaSuccess) e = cudaMalloc(&dab, 2 * ops * sizeof(T));
    if (e == cudaSuccess) e = cudaMalloc(&du, n * sizeof(int));
    if (e == cudaSuccess) e = cudaMemcpy(dc, c, n * sizeof(float), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(dab, a, ops * sizeof(T), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(dab + ops, b, ops * sizeof(T), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemset(du, 0xff, n * sizeof(int));
    if (e == cudaSuccess) {
        switch (chain) {
        case 1: launch_chain<Op, 1>(n, dc, dab, dab + ops, dd, du, zero_c); break;
        case 2: launch_chain<Op, 2>(n, dc, dab, dab + ops, dd, du, zero_c); break;
        case 4: launch_chain<Op, 4>(n, dc, dab, dab + ops, dd, du, zero_c); break;
        case 8: launch_chain<Op, 8>(n, dc, dab, dab + ops, dd, du, zero_c); break;
        default:
            if constexpr (Op::MAX_CHAIN >= 16) launch_chain<Op, 16>(n, dc, dab, dab + ops, dd, du, zero_c);
            break;
        }
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaMemcpy(d, dd, n * sizeof(float), cudaMemcpyDeviceToHost);
    if (e == cudaSuccess) e = cudaMemcpy(uniform, du, n * sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(dc);
    cudaFree(dd);
    cudaFree(dab);
    cudaFree(du);
    if (e != cudaSuccess) return dl_fail("%s accumulator probe: %s", Op::name, cudaGetErrorString(e));
    for (int i = 0; i < n; i++)
        if (uniform[i] < 0) return dl_fail("%s accumulator probe: the kernel was not built for sm_90a", Op::name);
    return 0;
}

/* n full-matrix cases: device buffers, launch, results back; D starts as NaN so every element must be written */
template <class Op>
static int run_full(int n, int zero_c, const float *c, const typename Op::T *a, const typename Op::T *b, float *d)
{
    using T = typename Op::T;
    if (n < 1) return dl_fail("dl_%s_acc_full: %d cases", Op::name, n);
    const size_t na = (size_t)n * 64 * Op::K, nb = (size_t)n * 8 * Op::K; /* elements */
    float *dc = NULL, *dd = NULL;
    T *dab = NULL;
    cudaError_t e = cudaMalloc(&dc, (size_t)n * 512 * sizeof(float));
    if (e == cudaSuccess) e = cudaMalloc(&dd, (size_t)n * 512 * sizeof(float));
    if (e == cudaSuccess) e = cudaMalloc(&dab, (na + nb) * sizeof(T));
    if (e == cudaSuccess) e = cudaMemcpy(dc, c, (size_t)n * 512 * sizeof(float), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(dab, a, na * sizeof(T), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(dab + na, b, nb * sizeof(T), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemset(dd, 0xff, (size_t)n * 512 * sizeof(float));
    if (e == cudaSuccess) {
        if constexpr (sizeof(T) == 1) wgmma_acc_full_kernel<<<n, 128>>>(dc, dab, dab + na, dd, zero_c);
        else hgmma_acc_full_kernel<<<n, 128>>>(dc, dab, dab + na, dd, zero_c);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaMemcpy(d, dd, (size_t)n * 512 * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dc);
    cudaFree(dd);
    cudaFree(dab);
    if (e != cudaSuccess) return dl_fail("%s accumulator probe (full matrices): %s", Op::name, cudaGetErrorString(e));
    uint32_t bits;
    memcpy(&bits, d, sizeof bits);
    if (bits == 0x7fc00001u) return dl_fail("%s accumulator probe: the kernel was not built for sm_90a", Op::name);
    return 0;
}

extern "C" int dl_wgmma_acc_probe(int n, int chain, int zero_c, const float *c, const uint8_t *a, const uint8_t *b,
                                  float *d, int *uniform)
{
    return run_chain<op_e4m3>(n, chain, zero_c, c, a, b, d, uniform);
}
extern "C" int dl_wgmma_acc_full(int n, int zero_c, const float *c, const uint8_t *a, const uint8_t *b, float *d)
{
    return run_full<op_e4m3>(n, zero_c, c, a, b, d);
}
extern "C" int dl_hgmma_acc_probe(int n, int chain, int zero_c, const float *c, const uint16_t *a, const uint16_t *b,
                                  float *d, int *uniform)
{
    return run_chain<op_bf16>(n, chain, zero_c, c, a, b, d, uniform);
}
extern "C" int dl_hgmma_acc_full(int n, int zero_c, const float *c, const uint16_t *a, const uint16_t *b, float *d)
{
    return run_full<op_bf16>(n, zero_c, c, a, b, d);
}

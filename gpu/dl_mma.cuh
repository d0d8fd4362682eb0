/* dl_mma.cuh - what the mma.sync kernels share: the instruction wrappers (m16n8k16
 * bf16/f16: decode_mma.cu, decode_stream.cu; m16n8k32 fp8: decode_fp8_mma.cu) and,
 * for the kernels with the GQA heads as the 16 MMA rows (decode_mma.cu,
 * decode_fp8_mma.cu), the score mask and row max, the online-softmax row update and
 * the accumulator rescale: the same numerics in both (expf, the max over the whole
 * 64-token tile). Included only by .cu files. */
#ifndef DL_MMA_CUH
#define DL_MMA_CUH

#include <cuda_fp8.h>
#include <stdint.h>
#include "../ref/dl_common.h"

/* x to an e4m3 code, saturating to +-448 (the fp8 model's e4m3_satfinite: Q / scale, p * p_scale) */
__device__ __forceinline__ uint32_t dl_e4m3_sat(float x)
{
    return (uint32_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}

/* mma.sync.aligned.<SHAPE_TYPES> with FP32 accumulators c[4] (in and out), A fragment a[4],
 * B fragment b0, b1: the operand list every form below shares. */
#define DL_MMA_SYNC(SHAPE_TYPES)                                                                  \
    asm volatile("mma.sync.aligned." SHAPE_TYPES " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n" \
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                 \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))

/* D += A B, m16n8k16, FP32 accumulators; F16 selects f16 operands, else bf16. */
template <bool F16>
__device__ __forceinline__ void dl_mma16816(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    if constexpr (F16)
        DL_MMA_SYNC("m16n8k16.row.col.f32.f16.f16.f32");
    else
        DL_MMA_SYNC("m16n8k16.row.col.f32.bf16.bf16.f32");
}

/* D += A B, m16n8k32, FP32 accumulators, A e4m3 and B in the KV cache's FP8 type. */
template <dl_dtype KV>
__device__ __forceinline__ void dl_mma16832_fp8(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    if constexpr (KV == DL_E4M3)
        DL_MMA_SYNC("m16n8k32.row.col.f32.e4m3.e4m3.f32");
    else
        DL_MMA_SYNC("m16n8k32.row.col.f32.e4m3.e5m2.f32");
}

/* Scale and mask a warp's two m16n8 score fragments (tokens tok0 + 8n + 2c + {0, 1} of rows
 * g, g + 8; tokens at or past nvalid get -inf) and take each row's max over the lane's
 * tokens: mx[r]. scale(x, r) is the score of accumulator x of row r (the kernel's model). */
template <class SCALE>
__device__ __forceinline__ void dl_mma_rows_mask_max(float (*s)[4], int tok0, int nvalid, float *mx, SCALE scale)
{
#pragma unroll
    for (int n = 0; n < 2; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int tok = tok0 + n * 8 + (i & 1);
            const float v = scale(s[n][i], i >> 1);
            s[n][i] = tok < nvalid ? v : -INFINITY;
            mx[i >> 1] = fmaxf(mx[i >> 1], s[n][i]);
        }
}

/* The running-max update of one tile, GQA heads as MMA rows: lane (g = lane / 4,
 * c = lane % 4) of warp `warp` holds rows g and g + 8, and mx[r] is the max of row
 * r's masked scores over the lane's tokens. mx is reduced over the 4 lanes of a row
 * and, through sMax ([WARPS][16] floats of shared memory, after a __syncthreads),
 * over the warps: the max over the whole tile, the model's kv_block. Then for each
 * row the running max m rises to m_new, dsum is rescaled, and f[r] = expf(m - m_new)
 * (0 while the row was empty, m = -inf) is the factor of the row's accumulators:
 * dl_mma_rows_rescale. */
template <int WARPS>
__device__ __forceinline__ void dl_mma_rows_max(float *mx, float *sMax, int warp, int g, int c, float *m, float *dsum,
                                                float *f)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    }
    if (c == 0) { sMax[warp * 16 + g] = mx[0]; sMax[warp * 16 + g + 8] = mx[1]; }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 2; r++) {
        float tmax = sMax[g + 8 * r];
#pragma unroll
        for (int w = 1; w < WARPS; w++) tmax = fmaxf(tmax, sMax[w * 16 + g + 8 * r]);
        const float m_new = fmaxf(m[r], tmax);
        f[r] = m[r] == -INFINITY ? 0.0f : expf(m[r] - m_new);
        m[r] = m_new;
        dsum[r] *= f[r];
    }
}

/* Rescale N m16n8 accumulator fragments (elements 0,1 in row g, 2,3 in row g + 8). */
template <int N> __device__ __forceinline__ void dl_mma_rows_rescale(float (*acc)[4], const float *f)
{
#pragma unroll
    for (int n = 0; n < N; n++) {
        acc[n][0] *= f[0]; acc[n][1] *= f[0];
        acc[n][2] *= f[1]; acc[n][3] *= f[1];
    }
}

/* Sum of a row's two values over the 4 lanes that hold the row. */
__device__ __forceinline__ void dl_mma_rows_quad_sum(float *x)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        x[r] += __shfl_xor_sync(0xffffffffu, x[r], 1);
        x[r] += __shfl_xor_sync(0xffffffffu, x[r], 2);
    }
}

#endif

/* dl_dequant.cuh - KV element conversion shared by every decode kernel: the
 * per-element cast (fp8 -> half -> float, one code at a time, the shape of the
 * reference system's CUDA-core decode) and the four-at-a-time bit-trick dequant
 * (byte permute, mask, shift; the 2^(bias difference) factor is folded into the
 * per-head scale, which is exact since it is a power of two), plus f16/bf16
 * loads. The CPU twin of the bit trick is ref/dl_formats.c (dl_fast_dequant_*).
 *
 * Convention: dl_deq4_f32<KV, FAST> turns 4 stored elements into 4 floats equal
 * to decode(code) / dl_deq_bias<KV, FAST>(); dl_deq_bf16<KV, FAST> into bf16
 * equal to decode(code) * 2^-dl_bf16_bias_log2<KV, FAST>(). The caller folds the
 * bias back in with the scales (k_scale into the score scale, v_scale into the
 * output), never per element. */
#ifndef DL_DEQUANT_CUH
#define DL_DEQUANT_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include "../ref/dl_common.h"

template <dl_dtype KV> struct dl_kv_size { static constexpr int value = (KV == DL_E4M3 || KV == DL_E5M2) ? 1 : 2; };

/* decode(code) = dl_deq4_f32 output * bias. Only e4m3 through the f16 bit trick
 * carries a bias (2^(15-7) = 256); e5m2 -> f16 is a pure byte move. */
template <dl_dtype KV, bool FAST> __host__ __device__ constexpr float dl_deq_bias()
{
    return (FAST && KV == DL_E4M3) ? 256.0f : 1.0f;
}

__device__ __forceinline__ float2 dl_h2_bits_to_f32(uint32_t bits)
{
    __half2 h = *reinterpret_cast<__half2 *>(&bits);
    return __half22float2(h);
}
__device__ __forceinline__ float2 dl_bf2_bits_to_f32(uint32_t bits)
{
    return make_float2(__uint_as_float(bits << 16), __uint_as_float(bits & 0xFFFF0000u));
}

/* One fp8 code to float through half, on its own (what static_cast does). */
template <dl_dtype KV> __device__ __forceinline__ float dl_cast_fp8(uint32_t byte)
{
    __half_raw hr = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)byte, KV == DL_E4M3 ? __NV_E4M3 : __NV_E5M2);
    return __half2float(__half(hr));
}

/* Four fp8 codes (little-endian in w) to two f16x2 words by the bit trick:
 * each code moved to the high byte of its 16-bit lane, then for e4m3 the
 * exponent+mantissa shifted right by 1 (5 - 4 exponent bits) keeping the sign;
 * the value is then code * 2^-8 (exact on normals, subnormals and zero). */
template <dl_dtype KV> __device__ __forceinline__ void dl_fast_fp8x4_f16(uint32_t w, uint32_t &h01, uint32_t &h23)
{
    uint32_t a = __byte_perm(w, 0u, 0x1404u);
    uint32_t b = __byte_perm(w, 0u, 0x3424u);
    if (KV == DL_E4M3) {
        a = (a & 0x80008000u) | ((a & 0x7F007F00u) >> 1);
        b = (b & 0x80008000u) | ((b & 0x7F007F00u) >> 1);
    }
    h01 = a;
    h23 = b;
}

/* 4 stored elements -> 4 floats (times 1/bias). w points at 4 bytes (fp8) or
 * 8 bytes (16-bit), given as 32-bit words. */
template <dl_dtype KV, bool FAST> __device__ __forceinline__ void dl_deq4_f32(const uint32_t *w, float *f)
{
    if constexpr (KV == DL_E4M3 || KV == DL_E5M2) {
        if constexpr (FAST) {
            uint32_t h01, h23;
            dl_fast_fp8x4_f16<KV>(w[0], h01, h23);
            float2 x = dl_h2_bits_to_f32(h01), y = dl_h2_bits_to_f32(h23);
            f[0] = x.x; f[1] = x.y; f[2] = y.x; f[3] = y.y;
        } else {
#pragma unroll
            for (int i = 0; i < 4; i++) f[i] = dl_cast_fp8<KV>((w[0] >> (8 * i)) & 0xFFu);
        }
    } else if constexpr (KV == DL_F16) {
        float2 x = dl_h2_bits_to_f32(w[0]), y = dl_h2_bits_to_f32(w[1]);
        f[0] = x.x; f[1] = x.y; f[2] = y.x; f[3] = y.y;
    } else {
        float2 x = dl_bf2_bits_to_f32(w[0]), y = dl_bf2_bits_to_f32(w[1]);
        f[0] = x.x; f[1] = x.y; f[2] = y.x; f[3] = y.y;
    }
}

/* N stored elements (N % 4 == 0) -> N floats (times 1/bias). */
template <dl_dtype KV, bool FAST, int N> __device__ __forceinline__ void dl_deq_f32(const uint32_t *w, float *f)
{
    constexpr int WPG = dl_kv_size<KV>::value; /* words per group of 4 elements */
#pragma unroll
    for (int g = 0; g < N / 4; g++) dl_deq4_f32<KV, FAST>(w + g * WPG, f + 4 * g);
}

__device__ __forceinline__ uint32_t dl_pack_bf16x2(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* The bf16 bit trick: four fp8 codes (little-endian in w) to two bf16x2 words,
 * each code moved to the high byte of its 16-bit lane and its exponent+mantissa
 * shifted right by 8 - 5 + 1 (e4m3: 4; e5m2: 3) keeping the sign, so the value
 * is decode(code) * 2^-dl_bf16_bias_log2 (exact on normals, subnormals and zero;
 * e4m3's smallest codes become bf16 subnormals). */
template <dl_dtype KV> __device__ __forceinline__ void dl_fast_fp8x4_bf16(uint32_t w, uint32_t &b01, uint32_t &b23)
{
    constexpr int SH = KV == DL_E4M3 ? 4 : 3;
    constexpr uint32_t M = (0x7F007F00u >> SH) & 0x7FFF7FFFu;
    const uint32_t a = __byte_perm(w, 0u, 0x1404u), b = __byte_perm(w, 0u, 0x3424u);
    b01 = (a & 0x80008000u) | ((a >> SH) & M);
    b23 = (b & 0x80008000u) | ((b >> SH) & M);
}

/* log2 of the factor the bf16 bit trick leaves out: 2^(127-7) for e4m3, 2^(127-15)
 * for e5m2; 0 for the cast path and 16-bit caches. */
template <dl_dtype KV, bool FAST> __host__ __device__ constexpr int dl_bf16_bias_log2()
{
    return !FAST ? 0 : (KV == DL_E4M3 ? 120 : (KV == DL_E5M2 ? 112 : 0));
}

/* N stored elements -> N/2 bf16x2 words holding bf16(decode(code)) (the bf16
 * model: scales are not applied per element; they fold into the score and
 * output scales). Cast: each fp8 code through half and float on its own, then
 * rounded (exact); FAST: the bit trick, values times 2^-dl_bf16_bias_log2. f16:
 * rounded to bf16; bf16: passed through. */
template <dl_dtype KV, bool FAST, int N> __device__ __forceinline__ void dl_deq_bf16(const uint32_t *w, uint32_t *out)
{
    if constexpr (KV == DL_BF16) {
#pragma unroll
        for (int i = 0; i < N / 2; i++) out[i] = w[i];
    } else if constexpr (FAST && (KV == DL_E4M3 || KV == DL_E5M2)) {
#pragma unroll
        for (int g = 0; g < N / 4; g++) dl_fast_fp8x4_bf16<KV>(w[g], out[2 * g], out[2 * g + 1]);
    } else {
        float f[N];
        dl_deq_f32<KV, false, N>(w, f);
#pragma unroll
        for (int i = 0; i < N / 2; i++) out[i] = dl_pack_bf16x2(f[2 * i], f[2 * i + 1]);
    }
}

/* Q element i of a [.., D] f16 or bf16 tensor as float. */
__device__ __forceinline__ float dl_load_q(const void *q, size_t i, dl_dtype t)
{
    uint16_t bits = ((const uint16_t *)q)[i];
    if (t == DL_BF16) return __uint_as_float((uint32_t)bits << 16);
    return __half2float(__ushort_as_half(bits));
}

#endif

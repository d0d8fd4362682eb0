/* dl_dequant.cuh - every KV element conversion of the decode kernels, in one
 * place: the three FP8 dequant policies (DL_DQ_CAST, DL_DQ_FAST, DL_DQ_HW),
 * f16/bf16 unpacking, and the Q load. The CPU twin of the bit trick is
 * ref/dl_formats.c (dl_fast_fp8x4_*).
 *
 *  - CAST: one code at a time, fp8 -> half -> float (what static_cast does; the
 *    reference system's CUDA-core decode);
 *  - FAST: the four-at-a-time bit trick (byte permute, mask, shift); the
 *    2^(bias difference) it leaves out is a power of two, folded by the caller
 *    into the per-head scales (exact) or, for the bf16x2 CUDA-core arithmetic,
 *    multiplied back per element;
 *  - HW: the packed hardware conversion cvt.rn.f16x2.e4m3x2 / e5m2x2 (two codes
 *    per instruction) to f16, which holds every e4m3/e5m2 value exactly.
 *
 * Convention: dl_deq_f32<KV, DQ, N> gives floats equal to decode(code) /
 * dl_deq_bias<KV, DQ>(); dl_deq_bf16<KV, DQ, N> (CAST, FAST) gives bf16 pairs
 * equal to decode(code) * 2^-dl_bf16_bias_log2<KV, DQ>(). The caller folds the
 * bias back in with the scales (k_scale into the score scale, v_scale into the
 * output), never per element. DQ may be given as a bool FAST (0 = CAST, 1 = FAST). */
#ifndef DL_DEQUANT_CUH
#define DL_DEQUANT_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include "../ref/dl_common.h"

/* The dequant policies. The values are template arguments of the kernels (and so appear
 * in the demangled names the registry's kernel globs select). */
enum { DL_DQ_CAST = 0, DL_DQ_FAST = 1, DL_DQ_HW = 2 };

template <dl_dtype KV> struct dl_kv_size { static constexpr int value = (KV == DL_E4M3 || KV == DL_E5M2) ? 1 : 2; };
template <dl_dtype KV> __host__ __device__ constexpr bool dl_is_fp8() { return KV == DL_E4M3 || KV == DL_E5M2; }

__device__ __forceinline__ float2 dl_h2_bits_to_f32(uint32_t bits)
{
    __half2 h = *reinterpret_cast<__half2 *>(&bits);
    return __half22float2(h);
}
__device__ __forceinline__ float2 dl_bf2_bits_to_f32(uint32_t bits)
{
    return make_float2(__uint_as_float(bits << 16), __uint_as_float(bits & 0xFFFF0000u));
}
__device__ __forceinline__ uint32_t dl_pack_bf16x2(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
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

/* The bf16 bit trick: four fp8 codes (little-endian in w) to two bf16x2 words,
 * each code moved to the high byte of its 16-bit lane and its exponent+mantissa
 * shifted right by 8 - 5 + 1 (e4m3: 4; e5m2: 3) keeping the sign, so the value
 * is decode(code) * 2^-(127-7) (e4m3) or 2^-(127-15) (e5m2) (exact on normals,
 * subnormals and zero; e4m3's smallest codes become bf16 subnormals; wrong on
 * NaN/Inf codes like every bit trick). */
template <dl_dtype KV> __device__ __forceinline__ void dl_fast_fp8x4_bf16(uint32_t w, uint32_t &b01, uint32_t &b23)
{
    constexpr int SH = KV == DL_E4M3 ? 4 : 3;
    constexpr uint32_t M = (0x7F007F00u >> SH) & 0x7FFF7FFFu;
    const uint32_t a = __byte_perm(w, 0u, 0x1404u), b = __byte_perm(w, 0u, 0x3424u);
    b01 = (a & 0x80008000u) | ((a >> SH) & M);
    b23 = (b & 0x80008000u) | ((b >> SH) & M);
}

/* ------------------------------------------------------------ the FP8 policies
 * dl_fp8_dq<KV, DQ> for an FP8 cache (KV e4m3 or e5m2), four codes (little-endian in
 * w) at a time:
 *   f32x4(w, f)      f[i] = decode(code i) / F32_BIAS
 *   x4(w, lo, hi)    16-bit pairs (codes 0,1 in lo, 2,3 in hi; element 2i in the low half):
 *                    bf16, or f16 when F16, = decode(code) * 2^-X4_BIAS_LOG2 */
template <dl_dtype KV, int DQ> struct dl_fp8_dq;

template <dl_dtype KV> struct dl_fp8_dq<KV, DL_DQ_CAST> {
    static constexpr bool F16 = false;
    static constexpr float F32_BIAS = 1.0f;
    static constexpr int X4_BIAS_LOG2 = 0;
    __device__ __forceinline__ static void f32x4(uint32_t w, float *f)
    {
#pragma unroll
        for (int i = 0; i < 4; i++) f[i] = dl_cast_fp8<KV>((w >> (8 * i)) & 0xFFu);
    }
    __device__ __forceinline__ static void x4(uint32_t w, uint32_t &lo, uint32_t &hi)
    {
        lo = dl_pack_bf16x2(dl_cast_fp8<KV>(w & 0xFFu), dl_cast_fp8<KV>((w >> 8) & 0xFFu));
        hi = dl_pack_bf16x2(dl_cast_fp8<KV>((w >> 16) & 0xFFu), dl_cast_fp8<KV>(w >> 24));
    }
};

/* e4m3 through the f16 bit trick carries 2^(15-7) = 256; e5m2 -> f16 is a pure byte move */
template <dl_dtype KV> struct dl_fp8_dq<KV, DL_DQ_FAST> {
    static constexpr bool F16 = false;
    static constexpr float F32_BIAS = KV == DL_E4M3 ? 256.0f : 1.0f;
    static constexpr int X4_BIAS_LOG2 = KV == DL_E4M3 ? 120 : 112;
    __device__ __forceinline__ static void f32x4(uint32_t w, float *f)
    {
        uint32_t h01, h23;
        dl_fast_fp8x4_f16<KV>(w, h01, h23);
        float2 x = dl_h2_bits_to_f32(h01), y = dl_h2_bits_to_f32(h23);
        f[0] = x.x; f[1] = x.y; f[2] = y.x; f[3] = y.y;
    }
    __device__ __forceinline__ static void x4(uint32_t w, uint32_t &lo, uint32_t &hi)
    {
        dl_fast_fp8x4_bf16<KV>(w, lo, hi);
    }
};

template <dl_dtype KV> struct dl_fp8_dq<KV, DL_DQ_HW> {
    static constexpr bool F16 = true;
    static constexpr float F32_BIAS = 1.0f;
    static constexpr int X4_BIAS_LOG2 = 0;
    /* The word's two halves go to cvt as 16-bit registers split by mov.b32, so ptxas reads the high
     * half in place (F2FP ... R.H1); through __nv_cvt_fp8x2_to_halfraw2(w >> 16) every high half
     * cost a shift (SHF), 128 per 64-token tile of the D128 streaming consumer (issue 10). */
    __device__ __forceinline__ static void x4(uint32_t w, uint32_t &lo, uint32_t &hi)
    {
        if constexpr (KV == DL_E4M3)
            asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\ncvt.rn.f16x2.e4m3x2 %0, l;\ncvt.rn.f16x2.e4m3x2 %1, h;\n}\n"
                : "=r"(lo), "=r"(hi) : "r"(w));
        else
            asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\ncvt.rn.f16x2.e5m2x2 %0, l;\ncvt.rn.f16x2.e5m2x2 %1, h;\n}\n"
                : "=r"(lo), "=r"(hi) : "r"(w));
    }
    __device__ __forceinline__ static void f32x4(uint32_t w, float *f)
    {
        uint32_t lo, hi;
        x4(w, lo, hi);
        float2 x = dl_h2_bits_to_f32(lo), y = dl_h2_bits_to_f32(hi);
        f[0] = x.x; f[1] = x.y; f[2] = y.x; f[3] = y.y;
    }
};

/* decode(code) = dl_deq_f32 output * dl_deq_bias (1 for 16-bit caches). */
template <dl_dtype KV, int DQ> __host__ __device__ constexpr float dl_deq_bias()
{
    if constexpr (dl_is_fp8<KV>()) return dl_fp8_dq<KV, DQ>::F32_BIAS;
    else return 1.0f;
}
/* log2 of the factor dl_deq_bf16 leaves out: 120 (e4m3) or 112 (e5m2) for the bit
 * trick, 0 for the cast and for 16-bit caches. */
template <dl_dtype KV, int DQ> __host__ __device__ constexpr int dl_bf16_bias_log2()
{
    if constexpr (dl_is_fp8<KV>()) return dl_fp8_dq<KV, DQ>::X4_BIAS_LOG2;
    else return 0;
}

/* 4 stored elements -> 4 floats (times 1/bias). w points at 4 bytes (fp8) or
 * 8 bytes (16-bit), given as 32-bit words. */
template <dl_dtype KV, int DQ> __device__ __forceinline__ void dl_deq4_f32(const uint32_t *w, float *f)
{
    if constexpr (dl_is_fp8<KV>()) {
        dl_fp8_dq<KV, DQ>::f32x4(w[0], f);
    } else if constexpr (KV == DL_F16) {
        float2 x = dl_h2_bits_to_f32(w[0]), y = dl_h2_bits_to_f32(w[1]);
        f[0] = x.x; f[1] = x.y; f[2] = y.x; f[3] = y.y;
    } else {
        float2 x = dl_bf2_bits_to_f32(w[0]), y = dl_bf2_bits_to_f32(w[1]);
        f[0] = x.x; f[1] = x.y; f[2] = y.x; f[3] = y.y;
    }
}

/* N stored elements (N % 4 == 0) -> N floats (times 1/bias). */
template <dl_dtype KV, int DQ, int N> __device__ __forceinline__ void dl_deq_f32(const uint32_t *w, float *f)
{
    constexpr int WPG = dl_kv_size<KV>::value; /* words per group of 4 elements */
#pragma unroll
    for (int g = 0; g < N / 4; g++) dl_deq4_f32<KV, DQ>(w + g * WPG, f + 4 * g);
}

/* N stored elements (N % 4 == 0 for fp8, N % 2 == 0 for 16-bit) -> N/2 bf16x2 words
 * holding bf16(decode(code)) (the bf16 model: scales are not applied per element;
 * they fold into the score and output scales). CAST: each fp8 code through half
 * and float on its own, then rounded (exact); FAST: the bit trick, values times
 * 2^-dl_bf16_bias_log2. f16: rounded to bf16; bf16: passed through. (HW gives f16,
 * not bf16: use dl_fp8_dq<KV, DL_DQ_HW>::x4.) All N conversions come before the
 * packs (the order the kernels were tuned with; a caller wanting them word by word
 * calls it once per word). */
template <dl_dtype KV, int DQ, int N> __device__ __forceinline__ void dl_deq_bf16(const uint32_t *w, uint32_t *out)
{
    static_assert(DQ == DL_DQ_CAST || DQ == DL_DQ_FAST, "dl_deq_bf16: the hw dequant gives f16");
    if constexpr (KV == DL_BF16) {
#pragma unroll
        for (int i = 0; i < N / 2; i++) out[i] = w[i];
    } else if constexpr (DQ == DL_DQ_FAST && dl_is_fp8<KV>()) {
#pragma unroll
        for (int g = 0; g < N / 4; g++) dl_fp8_dq<KV, DQ>::x4(w[g], out[2 * g], out[2 * g + 1]);
    } else if constexpr (KV == DL_F16) {
        float f[N];
#pragma unroll
        for (int i = 0; i < N / 2; i++) {
            const float2 x = dl_h2_bits_to_f32(w[i]);
            f[2 * i] = x.x;
            f[2 * i + 1] = x.y;
        }
#pragma unroll
        for (int i = 0; i < N / 2; i++) out[i] = dl_pack_bf16x2(f[2 * i], f[2 * i + 1]);
    } else {
        float f[N];
        dl_deq_f32<KV, DL_DQ_CAST, N>(w, f);
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

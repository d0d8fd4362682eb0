/* dl_formats.h - bit-exact CPU encoders/decoders for FP8 e4m3 (OCP "fn"),
 * FP8 e5m2, FP16 and BF16, and a bit-for-bit emulation of the "fast"
 * four-at-a-time FP8 dequant (byte permute, mask, shift, multiply by
 * 2^(bias difference)) that tensor-core kernels use.
 *
 * All encoders round to nearest, ties to even. Modes:
 *   DL_SATFINITE  - overflow and +-inf clamp to +-max finite (CUDA __NV_SATFINITE)
 *   DL_NOSAT      - overflow gives NaN (e4m3) or inf (e5m2, f16, bf16)
 * NaN input always encodes to NaN. Header-only helpers marked DL_HD are also
 * usable from CUDA device code. */
#ifndef DL_FORMATS_H
#define DL_FORMATS_H

#include <stdint.h>

#ifdef __CUDACC__
#define DL_HD __host__ __device__ __forceinline__
#else
#define DL_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { DL_SATFINITE = 0, DL_NOSAT = 1 } dl_sat_mode;

#define DL_E4M3_MAX 448.0f
#define DL_E5M2_MAX 57344.0f
#define DL_E4M3_NAN 0x7Fu   /* canonical e4m3 NaN (S.1111.111) */
#define DL_E5M2_NAN 0x7Fu   /* canonical e5m2 quiet NaN */
#define DL_F16_NAN  0x7E00u
#define DL_BF16_NAN 0x7FC0u

/* ---- exact decode ---- */
float dl_e4m3_to_f32(uint8_t code);
float dl_e5m2_to_f32(uint8_t code);
float dl_f16_to_f32(uint16_t bits);
float dl_bf16_to_f32(uint16_t bits);

/* ---- encode from float32 (RNE) ---- */
uint8_t  dl_f32_to_e4m3(float x, dl_sat_mode mode);
uint8_t  dl_f32_to_e5m2(float x, dl_sat_mode mode);
uint16_t dl_f32_to_f16(float x, dl_sat_mode mode);
uint16_t dl_f32_to_bf16(float x, dl_sat_mode mode);

/* Round a float32 to the nearest value of the format and return it as float32
 * (decode(encode(x))). Non-saturating for f16/bf16, saturating for fp8. */
float dl_round_bf16(float x);
float dl_round_f16(float x);
float dl_round_e4m3(float x);

/* ---- the fast ("bit-trick") dequant, emulated bit for bit ----
 * in:  four FP8 codes packed little-endian in a uint32 (byte i = element i).
 * out: four 16-bit patterns, element i in out[i].
 * e4m3->f16: scale 2^8; e4m3->bf16: scale 2^120; e5m2->f16: pure byte move;
 * e5m2->bf16: scale 2^112. Exact on normals, subnormals and zero. Differs from
 * the exact decode only on: e4m3 NaN (S.1111.111) -> +-480 (both targets);
 * e5m2->bf16 inf -> +-65536 and NaN -> +-81920/98304/114688 (finite). e5m2->f16
 * keeps inf and NaN. See dl_formats.c for the bit steps and why the multiply is exact. */
void dl_fast_dequant_e4m3_f16x4(uint32_t packed, uint16_t out[4]);
void dl_fast_dequant_e4m3_bf16x4(uint32_t packed, uint16_t out[4]);
void dl_fast_dequant_e5m2_f16x4(uint32_t packed, uint16_t out[4]);
void dl_fast_dequant_e5m2_bf16x4(uint32_t packed, uint16_t out[4]);

#ifdef __cplusplus
}
#endif
#endif

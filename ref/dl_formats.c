/* dl_formats.c - bit-exact encode/decode of FP8 e4m3 / e5m2, FP16 and BF16,
 * and a bit-for-bit CPU emulation of the "fast" four-at-a-time FP8 dequant.
 *
 * Everything works on the float32 bit pattern with integer arithmetic, so the
 * results do not depend on the host FPU rounding mode. One generic encoder and
 * one generic decoder cover the four formats; a small table gives each format's
 * widths and its finite maximum.
 *
 * Overflow rule (the one CUDA's cuda_fp8.hpp host path implements, checked bit
 * for bit against it by tests/nv_format_check.cu): first round to nearest-even
 * as if the exponent range were unbounded above; the result overflows when it
 * is larger than the format's max finite value. Hence the threshold is the
 * midpoint between max and the next (non-existent) value, and a value exactly
 * on it goes to whichever side is even:
 *   e4m3: max 448 = 1.110b*2^8 (mantissa even); midpoint to 480 is 464.
 *         |x| <= 464 rounds to <= 448; |x| > 464 overflows.
 *   e5m2: max 57344 = 1.11b*2^15 (odd); midpoint to 65536 is 61440.
 *         |x| < 61440 finite; |x| >= 61440 overflows.
 *   f16:  max 65504 (odd); |x| >= 65520 overflows.
 *   bf16: max (2-2^-7)*2^127 (odd); |x| >= (2-2^-8)*2^127 overflows.
 * Overflow (and +-inf input) gives +-max in DL_SATFINITE; in DL_NOSAT it gives
 * +-inf, except e4m3 which has no inf and gives S.1111.111 (NaN, sign kept, as
 * CUDA does). A NaN input gives the format's canonical positive NaN
 * (DL_*_NAN); CUDA's own converters give 0x7F (fp8), 0x7FFF (f16, bf16):
 * same for fp8, a different payload for f16/bf16. */
#include "dl_formats.h"

#include <string.h>

/* A binary format: exponent bits, mantissa bits, bias, and whether the all-ones
 * exponent means inf/NaN (IEEE-like) or, as in e4m3 "fn", only S.1111.111 is NaN. */
typedef struct {
    int ebits, mbits, bias;
    int ieee_specials;
    uint32_t max_code;  /* magnitude code of the largest finite value */
    uint32_t nan_code;  /* canonical NaN */
} fmt_desc;

static const fmt_desc FMT_E4M3 = {4, 3, 7, 0, 0x7Eu, DL_E4M3_NAN};
static const fmt_desc FMT_E5M2 = {5, 2, 15, 1, 0x7Bu, DL_E5M2_NAN};
static const fmt_desc FMT_F16 = {5, 10, 15, 1, 0x7BFFu, DL_F16_NAN};
static const fmt_desc FMT_BF16 = {8, 7, 127, 1, 0x7F7Fu, DL_BF16_NAN};

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Encode float32 bits into format f with round-to-nearest-even. */
static uint32_t encode(const fmt_desc *f, uint32_t xb, dl_sat_mode mode)
{
    const int nbits = 1 + f->ebits + f->mbits;
    const uint32_t sign = (xb >> 31) << (nbits - 1);
    const uint32_t a = xb & 0x7FFFFFFFu;
    const uint32_t inf_code = ((1u << f->ebits) - 1u) << f->mbits;

    if (a > 0x7F800000u) /* NaN */
        return f->nan_code;
    if (a == 0x7F800000u) { /* inf */
        if (mode == DL_SATFINITE)
            return sign | f->max_code;
        return sign | (f->ieee_specials ? inf_code : f->nan_code);
    }
    if (a == 0)
        return sign;

    /* value = sig * 2^e, with u = floor(log2(value)) */
    int32_t E = (int32_t)(a >> 23);
    uint32_t sig;
    int32_t e, u;
    if (E == 0) { /* float32 subnormal */
        sig = a;
        e = -149;
        int p = 31;
        while (!((sig >> p) & 1u))
            p--;
        u = p - 149;
    } else {
        sig = (a & 0x7FFFFFu) | 0x800000u;
        e = E - 150;
        u = E - 127;
    }

    /* Quantum (weight of the last mantissa bit) of the target at this value:
     * 2^(max(u, emin) - mbits), emin = 1 - bias, the subnormal quantum below emin. */
    const int32_t emin = 1 - f->bias;
    const int32_t q = (u > emin ? u : emin) - f->mbits;
    const int32_t s = q - e; /* right shift of sig; >= 23 - mbits >= 13 > 0 */
    uint32_t n;
    if (s > 31) {
        n = 0; /* value < 2^(q-7): far below half a quantum */
    } else {
        const uint32_t half = 1u << (s - 1);
        const uint32_t rem = sig & ((half << 1) - 1u);
        n = sig >> s;
        if (rem > half || (rem == half && (n & 1u)))
            n++;
    }

    /* n in [0, 2^(mbits+1)]: code = ((q + mbits + bias - 1) << mbits) + n.
     * This puts subnormals (q at the bottom, n < 2^mbits) at exponent field 0
     * and lets a rounding carry (n == 2^(mbits+1)) step into the next binade. */
    const int64_t code = ((int64_t)(q + f->mbits + f->bias - 1) << f->mbits) + (int64_t)n;
    if (code > (int64_t)f->max_code) {
        if (mode == DL_SATFINITE)
            return sign | f->max_code;
        return sign | (f->ieee_specials ? inf_code : f->nan_code);
    }
    return sign | (uint32_t)code;
}

/* Decode a code of format f (not bf16: its subnormals are float32 subnormals,
 * handled by dl_bf16_to_f32) to float32 bits. All finite values of e4m3, e5m2
 * and f16 are float32 normals or zero. */
static uint32_t decode(const fmt_desc *f, uint32_t code)
{
    const int nbits = 1 + f->ebits + f->mbits;
    const uint32_t sign = ((code >> (nbits - 1)) & 1u) << 31;
    const uint32_t emax = (1u << f->ebits) - 1u;
    const uint32_t ef = (code >> f->mbits) & emax;
    uint32_t m = code & ((1u << f->mbits) - 1u);

    if (f->ieee_specials && ef == emax) /* inf, or NaN with the payload kept and quieted */
        return sign | 0x7F800000u | (m ? 0x400000u | (m << (23 - f->mbits)) : 0u);
    if (!f->ieee_specials && ef == emax && m == (1u << f->mbits) - 1u)
        return sign | 0x7FC00000u;
    if (ef == 0) {
        if (m == 0)
            return sign;
        /* subnormal m * 2^(1 - bias - mbits): normalise so the leading 1 is implicit */
        int32_t u = 1 - f->bias;
        while (!(m & (1u << f->mbits))) {
            m <<= 1;
            u--;
        }
        m &= (1u << f->mbits) - 1u;
        return sign | ((uint32_t)(u + 127) << 23) | (m << (23 - f->mbits));
    }
    return sign | ((uint32_t)((int32_t)ef - f->bias + 127) << 23) | (m << (23 - f->mbits));
}

/* ---- exact decode ---- */
float dl_e4m3_to_f32(uint8_t code) { return bits_f32(decode(&FMT_E4M3, code)); }
float dl_e5m2_to_f32(uint8_t code) { return bits_f32(decode(&FMT_E5M2, code)); }
float dl_f16_to_f32(uint16_t bits) { return bits_f32(decode(&FMT_F16, bits)); }
/* bf16 is the top half of a float32: the decode is a shift (NaN payloads kept). */
float dl_bf16_to_f32(uint16_t bits) { return bits_f32((uint32_t)bits << 16); }

/* ---- encode ---- */
uint8_t dl_f32_to_e4m3(float x, dl_sat_mode mode) { return (uint8_t)encode(&FMT_E4M3, f32_bits(x), mode); }
uint8_t dl_f32_to_e5m2(float x, dl_sat_mode mode) { return (uint8_t)encode(&FMT_E5M2, f32_bits(x), mode); }
uint16_t dl_f32_to_f16(float x, dl_sat_mode mode) { return (uint16_t)encode(&FMT_F16, f32_bits(x), mode); }
uint16_t dl_f32_to_bf16(float x, dl_sat_mode mode) { return (uint16_t)encode(&FMT_BF16, f32_bits(x), mode); }

float dl_round_bf16(float x) { return dl_bf16_to_f32(dl_f32_to_bf16(x, DL_NOSAT)); }
float dl_round_f16(float x) { return dl_f16_to_f32(dl_f32_to_f16(x, DL_NOSAT)); }
float dl_round_e4m3(float x) { return dl_e4m3_to_f32(dl_f32_to_e4m3(x, DL_SATFINITE)); }

/* ---- the fast ("bit-trick") dequant ----
 *
 * What a kernel does on a uint32 q holding four FP8 codes (byte i = element i):
 *  1. PRMT: w01 = prmt(q, 0, 0x1404) puts byte 0 in the high byte of the low
 *     16-bit half and byte 1 in the high byte of the high half, zeros below;
 *     w23 = prmt(q, 0, 0x3424) does the same for bytes 2 and 3. Each 16-bit half
 *     is now code << 8.
 *  2. sign = w & 0x80008000; mag = (w & 0x7F007F00) >> shift, where shift is
 *     (target exponent bits - 4) for e4m3 and (target exponent bits - 5) for
 *     e5m2, so the FP8 exponent field lands in the low bits of the target's
 *     exponent field and the FP8 mantissa in the top of the target's mantissa.
 *     Read as the target format, mag is the FP8 magnitude times
 *     2^(fp8 bias - target bias) - for subnormals as well, since an FP8
 *     exponent field of 0 lands on a target exponent field of 0.
 *  3. mag *= 2^(target bias - fp8 bias) as a packed 16-bit multiply (HMUL2 /
 *     mul.bf16x2, round to nearest): 2^8 e4m3->f16, 2^120 e4m3->bf16,
 *     2^112 e5m2->bf16. e5m2->f16 needs neither step 2 nor 3: same exponent
 *     width and bias, so the code is already the f16's high byte.
 *  4. out = mag | sign.
 *
 * Why the multiply is exact (so any correctly rounded multiply, ours or the
 * GPU's, gives the same bits): mag's exponent field is at most 15 (e4m3) or 31
 * (e5m2), far below the target's all-ones field, so mag is never inf/NaN; it
 * has at most 4 (e4m3) or 3 (e5m2) significant bits. Scaled by 2^k its exponent
 * lands in [-9, 8] (e4m3, NaN code included) or [-16, 16] (e5m2, inf/NaN codes
 * included), all inside the normal range of both f16 ([-14, 15]; e4m3 only) and
 * bf16 ([-126, 127]); for e4m3->f16 the smallest product 2^-9 is an f16 normal.
 * A value with <= 4 significant bits in normal range is representable, so the
 * product is exact. The emulation below computes it with the exact decode,
 * an exact power-of-two scaling of the float32 bit pattern, and the RNE encoder.
 *
 * Where the result differs from the exact decode:
 *  - e4m3 (both targets): 0x7F / 0xFF (NaN) -> 1.111b * 2^8 = +480 / -480.
 *  - e5m2->bf16: exponent field 31 is taken as an ordinary binade, so
 *    +-inf (0x7C/0xFC) -> +-65536 and NaN 0x7D/0x7E/0x7F (and negatives) ->
 *    +-81920 / +-98304 / +-114688.
 *  - e5m2->f16: none (inf and NaN keep their bits; NaN stays NaN).
 * Every other code (normals, subnormals, +-0) is exact. */

/* PTX prmt.b32 default mode: result byte i = byte (sel >> 4i) & 7 of the
 * 8-byte value {b:a} (a = bytes 0-3, b = bytes 4-7). The sign-replicate bit
 * (sel nibble bit 3) is not used by the dequant and not emulated. */
static uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel)
{
    const uint64_t v = ((uint64_t)b << 32) | a;
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) {
        const uint32_t k = (sel >> (4 * i)) & 7u;
        r |= (uint32_t)((v >> (8 * k)) & 0xFFu) << (8 * i);
    }
    return r;
}

/* Multiply a finite 16-bit value by 2^k (k > 0) in its own format, for inputs
 * whose product is representable (see above): float32 decode is exact, adding
 * k to the float32 exponent field is exact while the result stays a float32
 * normal (true: products lie in [2^-16, 2^17)), and the RNE encode of a
 * representable value is exact. */
static uint16_t mul16_pow2(uint16_t h, int is_bf16, int k)
{
    const uint32_t xb = f32_bits(is_bf16 ? dl_bf16_to_f32(h) : dl_f16_to_f32(h));
    if ((xb & 0x7FFFFFFFu) == 0)
        return h;
    /* e4m3->bf16 subnormal codes give bf16 subnormals, i.e. float32
     * subnormals: those are renormalised first. */
    uint32_t e = (xb >> 23) & 0xFFu;
    uint32_t yb;
    if (e == 0) {
        /* float32 subnormal m * 2^-149: renormalise exactly */
        uint32_t m = xb & 0x7FFFFFu;
        int32_t u = -126;
        while (!(m & 0x800000u)) {
            m <<= 1;
            u--;
        }
        yb = (xb & 0x80000000u) | ((uint32_t)(u + k + 127) << 23) | (m & 0x7FFFFFu);
    } else {
        yb = xb + ((uint32_t)k << 23);
    }
    return is_bf16 ? dl_f32_to_bf16(bits_f32(yb), DL_NOSAT) : dl_f32_to_f16(bits_f32(yb), DL_NOSAT);
}

/* Steps 2-4 on one PRMT result: two elements, low half then high half. */
static void fast_pair(uint32_t w, int shift, int is_bf16, int k, uint16_t *lo, uint16_t *hi)
{
    const uint32_t sign = w & 0x80008000u;
    const uint32_t mag = (w & 0x7F007F00u) >> shift;
    const uint16_t m0 = mul16_pow2((uint16_t)(mag & 0xFFFFu), is_bf16, k);
    const uint16_t m1 = mul16_pow2((uint16_t)(mag >> 16), is_bf16, k);
    *lo = (uint16_t)(m0 | (sign & 0xFFFFu));
    *hi = (uint16_t)(m1 | (sign >> 16));
}

static void fast_dequant(uint32_t packed, int shift, int is_bf16, int k, uint16_t out[4])
{
    fast_pair(prmt(packed, 0, 0x1404u), shift, is_bf16, k, &out[0], &out[1]);
    fast_pair(prmt(packed, 0, 0x3424u), shift, is_bf16, k, &out[2], &out[3]);
}

/* shift 1 = 5 - 4 exponent bits, scale 2^(15 - 7) */
void dl_fast_dequant_e4m3_f16x4(uint32_t packed, uint16_t out[4]) { fast_dequant(packed, 1, 0, 8, out); }
/* shift 4 = 8 - 4, scale 2^(127 - 7) */
void dl_fast_dequant_e4m3_bf16x4(uint32_t packed, uint16_t out[4]) { fast_dequant(packed, 4, 1, 120, out); }
/* shift 3 = 8 - 5, scale 2^(127 - 15) */
void dl_fast_dequant_e5m2_bf16x4(uint32_t packed, uint16_t out[4]) { fast_dequant(packed, 3, 1, 112, out); }

/* Same exponent width and bias: each code is the high byte of its f16. */
void dl_fast_dequant_e5m2_f16x4(uint32_t packed, uint16_t out[4])
{
    const uint32_t w01 = prmt(packed, 0, 0x1404u), w23 = prmt(packed, 0, 0x3424u);
    out[0] = (uint16_t)(w01 & 0xFFFFu);
    out[1] = (uint16_t)(w01 >> 16);
    out[2] = (uint16_t)(w23 & 0xFFFFu);
    out[3] = (uint16_t)(w23 >> 16);
}

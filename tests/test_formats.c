/* test_formats.c - Check suite for ref/dl_formats: FP8 e4m3/e5m2, f16, bf16
 * encode/decode and the fast (bit-trick) dequant emulation.
 *
 * Expected values come from each format's definition written out here with
 * ldexp (sign, exponent, mantissa), never from the code under test. The
 * comparison with NVIDIA's own converters is tests/nv_format_check.cu. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../ref/dl_formats.h"
#include "dl_test.h"

/* ---- independent reference: the value of a code from the format definition ---- */
typedef struct {
    int ebits, mbits, bias;
    int ieee; /* all-ones exponent = inf/NaN; else (e4m3 "fn") only S.1111.111 is NaN */
} fmt;

static const fmt E4M3 = {4, 3, 7, 0}, E5M2 = {5, 2, 15, 1}, F16 = {5, 10, 15, 1}, BF16 = {8, 7, 127, 1};

/* value of code c as a double (NaN for NaN codes) */
static double ref_value(fmt f, uint32_t c)
{
    const int nb = 1 + f.ebits + f.mbits;
    const int s = (int)((c >> (nb - 1)) & 1u);
    const int emax = (1 << f.ebits) - 1;
    const int e = (int)((c >> f.mbits) & (uint32_t)emax);
    const int m = (int)(c & ((1u << f.mbits) - 1u));
    double v;
    if (f.ieee && e == emax)
        v = m == 0 ? INFINITY : NAN;
    else if (!f.ieee && e == emax && m == (1 << f.mbits) - 1)
        v = NAN;
    else if (e == 0)
        v = ldexp((double)m, 1 - f.bias - f.mbits);
    else
        v = ldexp((double)((1 << f.mbits) + m), e - f.bias - f.mbits);
    return s ? -v : v;
}

static int ref_is_nan(fmt f, uint32_t c) { return isnan(ref_value(f, c)); }

/* same value and same sign of zero; NaN equals NaN */
static int same_float(float got, double want)
{
    if (isnan(want))
        return isnan(got);
    return (double)got == want && !signbit(got) == !signbit(want);
}

static uint32_t enc(fmt f, float x, dl_sat_mode m)
{
    if (f.ebits == 4)
        return dl_f32_to_e4m3(x, m);
    if (f.ebits == 5 && f.mbits == 2)
        return dl_f32_to_e5m2(x, m);
    if (f.ebits == 5)
        return dl_f32_to_f16(x, m);
    return dl_f32_to_bf16(x, m);
}

/* ---- decode ---- */
START_TEST(test_e4m3_decode_all_codes)
{
    for (uint32_t c = 0; c < 256; c++) {
        const float got = dl_e4m3_to_f32((uint8_t)c);
        ck_assert_msg(same_float(got, ref_value(E4M3, c)), "e4m3 0x%02x -> %g, want %g", c, got, ref_value(E4M3, c));
    }
    /* facts of the format */
    ck_assert(dl_e4m3_to_f32(0x7E) == 448.0f);
    ck_assert(dl_e4m3_to_f32(0x01) == ldexpf(1.0f, -9));
    ck_assert(isnan(dl_e4m3_to_f32(0x7F)) && isnan(dl_e4m3_to_f32(0xFF)));
    ck_assert(!isinf(dl_e4m3_to_f32(0x78))); /* S.1111.000 is 256, not inf */
    ck_assert(dl_e4m3_to_f32(0x78) == 256.0f);
}
END_TEST

START_TEST(test_e5m2_decode_all_codes)
{
    for (uint32_t c = 0; c < 256; c++) {
        const float got = dl_e5m2_to_f32((uint8_t)c);
        ck_assert_msg(same_float(got, ref_value(E5M2, c)), "e5m2 0x%02x -> %g, want %g", c, got, ref_value(E5M2, c));
    }
    ck_assert(dl_e5m2_to_f32(0x7B) == 57344.0f);
    ck_assert(dl_e5m2_to_f32(0x7C) == INFINITY && dl_e5m2_to_f32(0xFC) == -INFINITY);
    ck_assert(dl_e5m2_to_f32(0x01) == ldexpf(1.0f, -16));
}
END_TEST

START_TEST(test_f16_bf16_decode_all_codes)
{
    for (uint32_t c = 0; c < 65536; c++) {
        ck_assert_msg(same_float(dl_f16_to_f32((uint16_t)c), ref_value(F16, c)), "f16 0x%04x", c);
        ck_assert_msg(same_float(dl_bf16_to_f32((uint16_t)c), ref_value(BF16, c)), "bf16 0x%04x", c);
    }
    ck_assert(dl_f16_to_f32(0x3C00) == 1.0f);
    ck_assert(dl_f16_to_f32(0x7BFF) == 65504.0f);
    ck_assert(dl_f16_to_f32(0x0001) == ldexpf(1.0f, -24));
    ck_assert(dl_bf16_to_f32(0x3F80) == 1.0f);
    ck_assert(dl_bf16_to_f32(0x7F7F) == ldexpf(255.0f, 120));
    ck_assert(dl_bf16_to_f32(0x0001) == ldexpf(1.0f, -133));
}
END_TEST

/* largest finite positive code, found by scanning the definition */
static uint32_t ref_max_code(fmt f)
{
    const int nb = 1 + f.ebits + f.mbits;
    uint32_t best = 0;
    for (uint32_t c = 0; c < (1u << (nb - 1)); c++)
        if (isfinite(ref_value(f, c)) && ref_value(f, c) > ref_value(f, best))
            best = c;
    return best;
}

static uint32_t sign_bit(fmt f) { return 1u << (f.ebits + f.mbits); }

/* ---- round trips ---- */
static void roundtrip(fmt f, uint32_t ncodes)
{
    const uint32_t maxc = ref_max_code(f);
    for (uint32_t c = 0; c < ncodes; c++) {
        if (ref_is_nan(f, c))
            continue;
        const double v = ref_value(f, c);
        const float x = (float)v; /* exact: every value of these formats is a float */
        ck_assert_msg((double)x == v, "value of 0x%x not a float", c);
        ck_assert_msg(enc(f, x, DL_NOSAT) == c, "nosat round trip 0x%x -> 0x%x", c, enc(f, x, DL_NOSAT));
        /* satfinite: inf clamps to max finite with the sign kept, the rest round-trips */
        const uint32_t want = isinf(v) ? (c & sign_bit(f)) | maxc : c;
        ck_assert_msg(enc(f, x, DL_SATFINITE) == want, "satfinite 0x%x -> 0x%x, want 0x%x", c,
                      enc(f, x, DL_SATFINITE), want);
    }
}

START_TEST(test_roundtrip_all_codes)
{
    roundtrip(E4M3, 256);
    roundtrip(E5M2, 256);
    roundtrip(F16, 65536);
    roundtrip(BF16, 65536);
}
END_TEST

/* ---- round to nearest, ties to even ---- */
/* Every midpoint between neighbouring positive finite values goes to the even
 * code (code LSB = mantissa LSB); one float32 ulp off the midpoint goes to the
 * nearer neighbour. Both signs, both modes (no overflow here). */
static void ties(fmt f)
{
    const uint32_t maxc = ref_max_code(f), sb = sign_bit(f);
    for (uint32_t c = 0; c < maxc; c++) {
        const double lo = ref_value(f, c), hi = ref_value(f, c + 1);
        const float mid = (float)((lo + hi) / 2);
        ck_assert_msg((double)mid == (lo + hi) / 2, "midpoint after 0x%x not a float", c);
        const uint32_t even = (c & 1u) ? c + 1 : c;
        for (int m = 0; m < 2; m++) {
            const dl_sat_mode mode = (dl_sat_mode)m;
            for (int neg = 0; neg < 2; neg++) {
                const float sg = neg ? -1.0f : 1.0f;
                const uint32_t s = neg ? sb : 0u;
                ck_assert_msg(enc(f, sg * mid, mode) == (s | even), "tie after 0x%x -> 0x%x", c, enc(f, sg * mid, mode));
                ck_assert_msg(enc(f, sg * nextafterf(mid, 0.0f), mode) == (s | c), "below tie after 0x%x", c);
                ck_assert_msg(enc(f, sg * nextafterf(mid, INFINITY), mode) == (s | (c + 1)), "above tie after 0x%x", c);
            }
        }
    }
}

START_TEST(test_rne_ties)
{
    ties(E4M3);
    ties(E5M2);
    ties(F16);
    ties(BF16);
}
END_TEST

/* ---- overflow, inf, NaN ---- */
static int is_overflow_nosat(fmt f, uint32_t code, int neg)
{
    if (!f.ieee)
        return ref_is_nan(f, code); /* e4m3: no inf, overflow is NaN */
    return ref_value(f, code) == (neg ? -INFINITY : INFINITY);
}

static void overflow(fmt f)
{
    const uint32_t maxc = ref_max_code(f), sb = sign_bit(f);
    const double maxv = ref_value(f, maxc), ulp = maxv - ref_value(f, maxc - 1);
    const float t = (float)(maxv + ulp / 2); /* midpoint between max and the next power of the binade */
    ck_assert((double)t == maxv + ulp / 2);
    for (int neg = 0; neg < 2; neg++) {
        const float sg = neg ? -1.0f : 1.0f;
        const uint32_t s = neg ? sb : 0u;
        /* the tie at t goes to the even side: max if max's code is even, else overflow */
        if ((maxc & 1u) == 0) {
            ck_assert_msg(enc(f, sg * t, DL_NOSAT) == (s | maxc), "tie at threshold, max even");
        } else {
            ck_assert_msg(is_overflow_nosat(f, enc(f, sg * t, DL_NOSAT), neg), "tie at threshold, max odd");
        }
        ck_assert(enc(f, sg * t, DL_SATFINITE) == (s | maxc));
        ck_assert(enc(f, sg * nextafterf(t, 0.0f), DL_NOSAT) == (s | maxc));
        ck_assert(enc(f, sg * nextafterf(t, INFINITY), DL_SATFINITE) == (s | maxc));
        ck_assert_msg(is_overflow_nosat(f, enc(f, sg * nextafterf(t, INFINITY), DL_NOSAT), neg), "just above threshold");
        ck_assert(enc(f, sg * 3.4028234663852886e38f, DL_SATFINITE) == (s | maxc));
        ck_assert(is_overflow_nosat(f, enc(f, sg * 3.4028234663852886e38f, DL_NOSAT), neg));
        ck_assert(enc(f, sg * INFINITY, DL_SATFINITE) == (s | maxc));
        ck_assert(is_overflow_nosat(f, enc(f, sg * INFINITY, DL_NOSAT), neg));
    }
    /* NaN in, NaN out, in both modes, whatever the sign or payload */
    const uint32_t nans[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFBFFFFFu};
    for (int i = 0; i < 4; i++) {
        float x;
        memcpy(&x, &nans[i], sizeof x);
        ck_assert_msg(ref_is_nan(f, enc(f, x, DL_SATFINITE)), "NaN 0x%08x satfinite", nans[i]);
        ck_assert_msg(ref_is_nan(f, enc(f, x, DL_NOSAT)), "NaN 0x%08x nosat", nans[i]);
    }
}

START_TEST(test_overflow_inf_nan)
{
    overflow(E4M3);
    overflow(E5M2);
    overflow(F16);
    overflow(BF16);
    /* the thresholds spelled out for the two FP8 formats (see dl_formats.c) */
    ck_assert(dl_f32_to_e4m3(464.0f, DL_NOSAT) == dl_f32_to_e4m3(448.0f, DL_NOSAT));
    ck_assert(isnan(dl_e4m3_to_f32(dl_f32_to_e4m3(nextafterf(464.0f, 1e9f), DL_NOSAT))));
    ck_assert(dl_e4m3_to_f32(dl_f32_to_e4m3(1e6f, DL_SATFINITE)) == 448.0f);
    ck_assert(isinf(dl_e5m2_to_f32(dl_f32_to_e5m2(61440.0f, DL_NOSAT))));
    ck_assert(dl_e5m2_to_f32(dl_f32_to_e5m2(61440.0f, DL_SATFINITE)) == 57344.0f);
    ck_assert(dl_e5m2_to_f32(dl_f32_to_e5m2(nextafterf(61440.0f, 0.0f), DL_NOSAT)) == 57344.0f);
}
END_TEST

/* ---- subnormals and signed zero ---- */
static void subnormals(fmt f)
{
    const uint32_t sb = sign_bit(f), one_sub = 1u, min_norm = 1u << f.mbits;
    const double ms = ref_value(f, one_sub);
    ck_assert(ms == ldexp(1.0, 1 - f.bias - f.mbits));
    for (int m = 0; m < 2; m++) {
        const dl_sat_mode mode = (dl_sat_mode)m;
        ck_assert(enc(f, 0.0f, mode) == 0u);
        ck_assert(enc(f, -0.0f, mode) == sb);
        /* half the smallest subnormal is a tie with zero: goes to zero, sign kept */
        ck_assert(enc(f, (float)(ms / 2), mode) == 0u);
        ck_assert(enc(f, (float)(-ms / 2), mode) == sb);
        ck_assert(enc(f, nextafterf((float)(ms / 2), 1.0f), mode) == one_sub);
        ck_assert(enc(f, (float)(ms * 1.5), mode) == 2u); /* tie between codes 1 and 2 */
        /* the smallest float32 subnormal underflows to a signed zero */
        ck_assert(enc(f, 1.4e-45f, mode) == 0u && enc(f, -1.4e-45f, mode) == sb);
        /* largest subnormal to smallest normal: the tie goes to the even (normal) code */
        const double a = ref_value(f, min_norm - 1), b = ref_value(f, min_norm);
        ck_assert(enc(f, (float)((a + b) / 2), mode) == min_norm);
        ck_assert(ref_value(f, min_norm) == ldexp(1.0, 1 - f.bias));
    }
}

START_TEST(test_subnormals_zero)
{
    subnormals(E4M3);
    subnormals(E5M2);
    subnormals(F16);
    subnormals(BF16);
    /* a float32 subnormal that bf16 keeps: bf16 shares float32's exponent range */
    ck_assert(dl_bf16_to_f32(dl_f32_to_bf16(ldexpf(3.0f, -133), DL_NOSAT)) == ldexpf(3.0f, -133));
}
END_TEST

/* ---- f16 / bf16 facts and the round helpers ---- */
START_TEST(test_f16_bf16_facts)
{
    const uint32_t f16_one = (uint32_t)F16.bias << F16.mbits, bf16_one = (uint32_t)BF16.bias << BF16.mbits;
    ck_assert(dl_f32_to_f16(1.0f, DL_NOSAT) == f16_one);
    ck_assert(dl_f32_to_bf16(1.0f, DL_NOSAT) == bf16_one);
    /* 1 + half an ulp ties to 1 (even); 1 + 3/2 ulp ties to 1 + 2 ulp (even) */
    ck_assert(dl_f32_to_f16(1.0f + ldexpf(1.0f, -11), DL_NOSAT) == f16_one);
    ck_assert(dl_f32_to_f16(1.0f + ldexpf(3.0f, -11), DL_NOSAT) == f16_one + 2u);
    ck_assert(dl_f32_to_bf16(1.0f + ldexpf(1.0f, -8), DL_NOSAT) == bf16_one);
    ck_assert(dl_f32_to_bf16(1.0f + ldexpf(3.0f, -8), DL_NOSAT) == bf16_one + 2u);
    /* 65504 is the f16 max; 65520 the overflow tie (max's code is odd) */
    ck_assert(dl_f16_to_f32(dl_f32_to_f16(65504.0f, DL_NOSAT)) == 65504.0f);
    ck_assert(isinf(dl_f16_to_f32(dl_f32_to_f16(65520.0f, DL_NOSAT))));
    ck_assert(dl_f16_to_f32(dl_f32_to_f16(65520.0f, DL_SATFINITE)) == 65504.0f);
    /* round helpers: f16/bf16 non-saturating, e4m3 saturating */
    ck_assert(dl_round_f16(1.0f + ldexpf(1.0f, -11)) == 1.0f);
    ck_assert(dl_round_f16(1.0f + ldexpf(1.0f, -11) + ldexpf(1.0f, -20)) == 1.0f + ldexpf(1.0f, -10));
    ck_assert(isinf(dl_round_f16(70000.0f)));
    ck_assert(dl_round_bf16(1.0f + ldexpf(1.0f, -8) + ldexpf(1.0f, -20)) == 1.0f + ldexpf(1.0f, -7));
    ck_assert(isinf(dl_round_bf16(3.4028234663852886e38f)));
    ck_assert(dl_round_e4m3(500.0f) == 448.0f && dl_round_e4m3(-1e30f) == -448.0f);
    ck_assert(dl_round_e4m3(ldexpf(17.0f, -4)) == 1.0f); /* 1.0625: tie between 1 and 1.125 */
    ck_assert(isnan(dl_round_e4m3(NAN)) && isnan(dl_round_f16(NAN)) && isnan(dl_round_bf16(NAN)));
}
END_TEST

/* ---- fast dequant ---- */
typedef enum { P_E4M3_F16, P_E4M3_BF16, P_E5M2_F16, P_E5M2_BF16, NPAIR } pair_t;

static void fast(pair_t p, uint32_t packed, uint16_t out[4])
{
    switch (p) {
    case P_E4M3_F16: dl_fast_dequant_e4m3_f16x4(packed, out); break;
    case P_E4M3_BF16: dl_fast_dequant_e4m3_bf16x4(packed, out); break;
    case P_E5M2_F16: dl_fast_dequant_e5m2_f16x4(packed, out); break;
    default: dl_fast_dequant_e5m2_bf16x4(packed, out); break;
    }
}

/* codes whose fast result is not the exact value (tested separately below) */
static int fast_differs(pair_t p, uint32_t c)
{
    if (p == P_E4M3_F16 || p == P_E4M3_BF16)
        return (c & 0x7Fu) == 0x7Fu;
    if (p == P_E5M2_BF16)
        return (c & 0x7Fu) >= 0x7Cu;
    return 0;
}

START_TEST(test_fast_dequant_equals_exact)
{
    for (int pi = 0; pi < NPAIR; pi++) {
        const pair_t p = (pair_t)pi;
        const fmt src = (p == P_E4M3_F16 || p == P_E4M3_BF16) ? E4M3 : E5M2;
        const fmt dst = (p == P_E4M3_F16 || p == P_E5M2_F16) ? F16 : BF16;
        for (uint32_t c = 0; c < 256; c++)
            for (int pos = 0; pos < 4; pos++) {
                /* c at byte pos; the other bytes other codes */
                uint32_t packed = 0;
                for (int b = 0; b < 4; b++)
                    packed |= ((b == pos ? c : (c * 53u + 29u * (uint32_t)b + 3u) & 0xFFu)) << (8 * b);
                uint16_t out[4];
                fast(p, packed, out);
                for (int b = 0; b < 4; b++) {
                    const uint32_t cb = (packed >> (8 * b)) & 0xFFu;
                    if (fast_differs(p, cb))
                        continue;
                    ck_assert_msg(same_float((float)ref_value(dst, out[b]), ref_value(src, cb)),
                                  "pair %d code 0x%02x at byte %d -> 0x%04x", pi, cb, b, out[b]);
                    if (p == P_E5M2_F16) /* a pure byte move */
                        ck_assert(out[b] == cb << 8);
                }
            }
    }
}
END_TEST

/* The fast path is NOT exact on e4m3 NaN: S.1111.111 read as a number is
 * 1.111b * 2^8 = 480. (Also e5m2->bf16 turns inf/NaN into finite numbers.) */
START_TEST(test_fast_dequant_nan_difference)
{
    const double v480 = ldexp(15.0, 5); /* 1.875 * 2^8 */
    ck_assert(isnan(dl_e4m3_to_f32(0x7F)) && isnan(dl_e4m3_to_f32(0xFF)));
    for (int pos = 0; pos < 4; pos++) {
        uint16_t h[4], b[4];
        const uint32_t pk = 0x7Fu << (8 * pos), nk = 0xFFu << (8 * pos);
        dl_fast_dequant_e4m3_f16x4(pk, h);
        dl_fast_dequant_e4m3_bf16x4(pk, b);
        ck_assert(ref_value(F16, h[pos]) == v480 && ref_value(BF16, b[pos]) == v480);
        dl_fast_dequant_e4m3_f16x4(nk, h);
        dl_fast_dequant_e4m3_bf16x4(nk, b);
        ck_assert(ref_value(F16, h[pos]) == -v480 && ref_value(BF16, b[pos]) == -v480);
    }
    /* e5m2 -> bf16: exponent field 31 is an ordinary binade after the shift */
    for (uint32_t m = 0; m < 4; m++)
        for (uint32_t s = 0; s < 2; s++) {
            const uint32_t c = (s << 7) | 0x7Cu | m;
            uint16_t b[4];
            dl_fast_dequant_e5m2_bf16x4(c, b);
            const double want = (s ? -1.0 : 1.0) * ldexp(4.0 + m, 14); /* (1 + m/4) * 2^16 */
            ck_assert_msg(ref_value(BF16, b[0]) == want, "e5m2 0x%02x -> bf16 %g", c, ref_value(BF16, b[0]));
            ck_assert(!isfinite(dl_e5m2_to_f32((uint8_t)c)));
        }
}
END_TEST

DL_TEST_SUITE("formats", 60, NULL, NULL,
              test_e4m3_decode_all_codes, test_e5m2_decode_all_codes, test_f16_bf16_decode_all_codes,
              test_roundtrip_all_codes, test_rne_ties, test_overflow_inf_nan, test_subnormals_zero,
              test_f16_bf16_facts, test_fast_dequant_equals_exact, test_fast_dequant_nan_difference)

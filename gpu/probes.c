/* probes.c - the table of the E2 probe kernels (gpu/dl_probes.def; kernels in gpu/e2_probes.cu),
 * and the host side of the warpgroup MMA accumulator probes (gpu/wgmma_acc_probe.cu): their cases,
 * random inputs and (HGMMA) the model family they are compared with. Plain C so that a build
 * without CUDA can list and generate them. */
#include "dl_probes.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ref/dl_common.h"
#include "../ref/dl_formats.h"
#include "../ref/dl_rng.h"

#ifndef DL_HAVE_CUDA
#define DL_HAVE_CUDA 0
#endif

const dl_probe dl_probes[] = {
#define DL_PROBE(id, form, count, ptx, note) {#id, "e2_probe_" #id, form, count, ptx, note},
#include "dl_probes.def"
#undef DL_PROBE
};
const int dl_num_probes = (int)(sizeof dl_probes / sizeof dl_probes[0]);

int dl_probe_find(const char *name)
{
    for (int i = 0; name && i < dl_num_probes; i++)
        if (!strcmp(dl_probes[i].name, name)) return i;
    return -1;
}

/* ---- the wgmma accumulator probe's cases (dl_probes.h) */

/* a * b = 2^e with both factors powers of two that e4m3 holds (2^-9 .. 2^8), a the larger:
 * e in -18..16; a is normal (so a * 1.75 is an e4m3 value too) for e >= -15 */
static void pow2_pair(int e, float *a, float *b)
{
    const int ea = e + 9 < 8 ? e + 9 : 8;
    *a = ldexpf(1.0f, ea);
    *b = ldexpf(1.0f, e - ea);
}

/* The case tables below: start case v[n] (zeroed, named), or return n when the table (cap) is full. */
#define NEW(...)                                                                                         \
    do {                                                                                                 \
        if (n == cap) return n;                                                                          \
        memset(&v[n], 0, sizeof v[n]);                                                                   \
        snprintf(v[n].name, sizeof v[n].name, __VA_ARGS__);                                              \
    } while (0)

int dl_wgmma_acc_cases(dl_acc_case *v, int cap)
{
    int n = 0;
    for (int j = 0; j < 32; j++) { /* pairing: D = b[j] exactly if a[k] meets b[k] */
        NEW("pair k=%d", j);
        v[n].a[j] = 1.0f;
        for (int k = 0; k < 32; k++) v[n].b[k] = ldexpf(1.0f + 0.5f * (k / 16), k % 16 - 8);
        n++;
    }
    for (int g = 1; g <= 30; g++) { /* a product 2^-g times the largest: kept, truncated, lost? */
        for (int form = 0; form < 3; form++) {
            NEW(form == 0 ? "gap %d" : form == 1 ? "gap %d x1.75" : "gap %d x-1.75", g);
            v[n].a[0] = 256.0f, v[n].b[0] = 256.0f; /* 2^16 */
            pow2_pair(16 - g, &v[n].a[5], &v[n].b[5]);
            if (form) v[n].a[5] *= form == 1 ? 1.75f : -1.75f;
            n++;
        }
    }
    for (int g = 1; g <= 30; g++) { /* C = 2^16 and one product 2^(16-g): does C set the alignment? */
        NEW("C gap %d", g);
        v[n].c = 65536.0f;
        pow2_pair(16 - g, &v[n].a[3], &v[n].b[3]);
        n++;
        NEW("C gap %d x1.75", g);
        v[n].c = 65536.0f;
        pow2_pair(16 - g, &v[n].a[3], &v[n].b[3]);
        v[n].a[3] *= 1.75f;
        n++;
    }
    for (int g = 1; g <= 30; g++) { /* C = 1.75 * 2^(16-g) small, one product 2^16 */
        NEW("small C %d x1.75", g);
        v[n].c = ldexpf(1.75f, 16 - g);
        v[n].a[9] = 256.0f, v[n].b[9] = 256.0f;
        n++;
    }
    for (int k = 4; k <= 23; k++) { /* C's own low bits: kept with no product, with a product of 1? */
        NEW("C tail %d, no product", k);
        v[n].c = 1.0f + ldexpf(1.0f, -k);
        n++;
        NEW("C tail %d, + 1", k);
        v[n].c = 1.0f + ldexpf(1.0f, -k);
        v[n].a[7] = 1.0f, v[n].b[7] = 1.0f;
        n++;
    }
    for (int sgn = 1; sgn >= -1; sgn -= 2) { /* a sum that carries 2 bits past the largest term: */
        NEW("carry %s", sgn > 0 ? "+" : "-"); /* is the result cut to 14 bits, truncated or rounded? */
        v[n].c = sgn * (1.875f + 3 * ldexpf(1.0f, -13));
        v[n].a[1] = v[n].a[2] = sgn * 1.875f, v[n].b[1] = v[n].b[2] = 1.0f;
        n++;
    }
    for (int late = 0; late < 2; late++) { /* one alignment over all 32 k, or one per 16-k half? */
        NEW("halves %s", late ? "big k=20" : "big k=5");
        for (int k = 0; k < 16; k++) {
            const int kk = late ? k : 16 + k;
            v[n].a[kk] = ldexpf(1.875f, -5), v[n].b[kk] = ldexpf(1.0f, -5);
        }
        v[n].a[late ? 20 : 5] = 4.0f, v[n].b[late ? 20 : 5] = 1.0f;
        n++;
    }
    for (int g = 1; g <= 26; g++) { /* 2^16 and 31 products 2^(16-g) */
        NEW("many %d", g);
        v[n].a[0] = 256.0f, v[n].b[0] = 256.0f;
        for (int k = 1; k < 32; k++) pow2_pair(16 - g, &v[n].a[k], &v[n].b[k]);
        n++;
    }
    /* Which exponent aligns a product whose mantissas multiply past 2: its own (normalized) or the
     * sum of its operands' exponents? x*y - x*y + C with C = 2^-13 survives only in the latter. */
    static const float unm[][2] = {{1.5f, 1.5f}, {1.875f, 1.875f}, {1.5f, 1.25f}, {1.25f, 1.5f}};
    static const char *const unm_name[] = {"1.5x1.5", "1.875x1.875", "1.5x1.25", "1.25x1.5"};
    for (int u = 0; u < 4; u++) {
        NEW("unnorm %s", unm_name[u]);
        v[n].c = ldexpf(1.0f, -13);
        v[n].a[2] = unm[u][0], v[n].a[9] = -unm[u][0], v[n].b[2] = v[n].b[9] = unm[u][1];
        n++;
    }
    /* Subnormal operands (e4m3: below 2^-6): does one align by its own exponent or by the smallest
     * normal's? C = 3 * 2^-14 beside 2^-9 * 256, C = 3 * 2^-32 beside 2^-9 * 2^-9: kept only in the
     * former. The subnormal in A, in B, in both. */
    for (int w = 0; w < 4; w++) {
        NEW("subnormal %s", w == 0 ? "a" : w == 1 ? "b" : w == 2 ? "3a" : "both");
        const float sub = ldexpf(w == 2 ? 3.0f : 1.0f, -9);
        v[n].a[4] = w == 1 ? 256.0f : sub;
        v[n].b[4] = w == 0 || w == 2 ? 256.0f : sub;
        v[n].c = w == 3 ? 3.0f * ldexpf(1.0f, -32) : 3.0f * ldexpf(1.0f, -14);
        n++;
    }
    return n;
}

/* Random chain case i of (chain, zero_c): chain steps of 32 e4m3 a and b (normal, scaled by 64 and
 * rounded, saturating; every 8th case has one outlier x8 per step), c normal x 1000 (unused when
 * zero_c). Deterministic (dl_rng_normal, seed 20261201). */
void dl_wgmma_acc_random(int chain, int zero_c, int i, float *c, float *a, float *b)
{
    const uint64_t stream = (uint64_t)(chain * 2 + zero_c), base = (uint64_t)i * 1024;
    *c = (float)(dl_rng_normal(20261201, stream, base) * 1000.0);
    for (int s = 0; s < chain; s++)
        for (int k = 0; k < 32; k++) {
            const uint64_t j = base + 1 + (uint64_t)(s * 64 + k);
            double x = dl_rng_normal(20261201, stream, j) * 64.0, y = dl_rng_normal(20261201, stream, j + 32) * 64.0;
            if (i % 8 == 7 && k == 3) x *= 8.0;
            a[s * 32 + k] = dl_e4m3_to_f32(dl_f32_to_e4m3((float)x, DL_SATFINITE));
            b[s * 32 + k] = dl_e4m3_to_f32(dl_f32_to_e4m3((float)y, DL_SATFINITE));
        }
}

/* Full-matrix random case i: c [64][8] normal x 1000; a [64][32] normal x 64 x 2^(m%8 - 4) per row m;
 * b [8][32] normal x 64 x 2^(j - 4) per row j, rows 4..7 zero when i % 4 == 1 (a GQA group of 4
 * padded to 8, as the decode kernel's Q); e4m3 values, saturating. Deterministic (seed 20261202). */
void dl_wgmma_acc_full_random(int i, float *c, float *a, float *b)
{
    const uint64_t base = (uint64_t)i * 4096;
    for (int k = 0; k < 512; k++) c[k] = (float)(dl_rng_normal(20261202, 0, base + (uint64_t)k) * 1000.0);
    for (int k = 0; k < 64 * 32; k++) {
        const double x = dl_rng_normal(20261202, 1, base + (uint64_t)k) * 64.0 * ldexp(1.0, (k / 32) % 8 - 4);
        a[k] = dl_e4m3_to_f32(dl_f32_to_e4m3((float)x, DL_SATFINITE));
    }
    for (int k = 0; k < 8 * 32; k++) {
        const double y = dl_rng_normal(20261202, 2, base + (uint64_t)k) * 64.0 * ldexp(1.0, k / 32 - 4);
        b[k] = (i % 4 == 1 && k / 32 >= 4) ? 0.0f : dl_e4m3_to_f32(dl_f32_to_e4m3((float)y, DL_SATFINITE));
    }
}

/* ---- the HGMMA (BF16 wgmma) accumulator probe: model, cases, random inputs (dl_probes.h) */

/* The frexp exponent HGMMA is modelled to align a bf16 operand by: a subnormal (below 2^-126)
 * counts with the smallest normal's (frexp of 2^-126: -125), as QGMMA does for FP8. */
static int bf16_exponent(float v)
{
    int e;
    (void)frexpf(v, &e);
    return e < -125 ? -125 : e;
}

int dl_hgmma_top(float c, const float *a, const float *b, int n, int flags)
{
    int e, top = INT_MIN;
    if (c != 0.0f && isfinite(c)) {
        (void)frexpf(c, &e);
        top = e;
    }
    for (int i = 0; i < n; i++) {
        if (a[i] == 0.0f || b[i] == 0.0f || !isfinite(a[i]) || !isfinite(b[i])) continue;
        if (flags & DL_HGMMA_NORM) (void)frexp((double)a[i] * b[i], &e); /* exact in double */
        else e = bf16_exponent(a[i]) + bf16_exponent(b[i]) - 1; /* mantissas 1.x * 1.y lie in [1, 4) */
        if (e > top) top = e;
    }
    return top;
}

float dl_hgmma_sum(float c, const float *a, const float *b, int n, int top, int frac_bits, int flags)
{
    int finite = isfinite(c);
    for (int i = 0; i < n; i++) finite &= isfinite(a[i]) && isfinite(b[i]);
    if (!finite || frac_bits < 1 || frac_bits > 40 || n > 64) { /* outside the model: plain float */
        float s = c;
        for (int i = 0; i < n; i++) s += a[i] * b[i];
        return s;
    }
    if (top == INT_MIN) return c; /* no nonzero term */
    /* top is frexp-like: the alignment's leading bit is 2^(top - 1). Every term is below 2^(top + 1),
     * so truncated it holds at most frac_bits + 2 bits above ulp; n + 1 <= 65 of them sum exactly in
     * double (frac_bits + 9 <= 49 bits). ulp >= 2^-292: normal in double. */
    const double ulp = ldexp(1.0, top - 1 - frac_bits);
    double s = trunc((double)c / ulp) * ulp;
    for (int i = 0; i < n; i++) s += trunc((double)a[i] * (double)b[i] / ulp) * ulp;
    if (s == 0.0) return 0.0f;
    /* the result: min(frac_bits, 23) fraction bits below its own leading bit, and not below
     * binary32's smallest subnormal (2^-149) */
    const int fb = frac_bits < 23 ? frac_bits : 23;
    int e;
    (void)frexp(s, &e);
    int q = e - 1 - fb;
    if (q < -149) q = -149;
    const double u = ldexp(1.0, q);
    const double r = (flags & DL_HGMMA_RN) ? nearbyint(s / u) : trunc(s / u); /* s / u: exact (a power of 2) */
    const double out = r * u;
    if (fabs(out) > FLT_MAX) /* overflow: to nearest gives inf, toward zero the largest finite */
        return copysignf((flags & DL_HGMMA_RN) ? INFINITY : FLT_MAX, (float)s);
    return (float)out; /* at most 24 significant bits, in range: exact */
}

float dl_hgmma_model(float c, const float *a, const float *b, int n, int frac_bits, int flags)
{
    return dl_hgmma_sum(c, a, b, n, dl_hgmma_top(c, a, b, n, flags), frac_bits, flags);
}

/* a * b = 2^e, both powers of two (bf16 holds 2^-133 .. 2^127, so any e in -200..200 splits) */
static void pow2_pair16(int e, float *a, float *b)
{
    *a = ldexpf(1.0f, e - e / 2);
    *b = ldexpf(1.0f, e / 2);
}

int dl_hgmma_acc_cases(dl_hacc_case *v, int cap)
{
    int n = 0;
    const float full = 255.0f / 128.0f; /* 1.1111111b: the widest bf16 mantissa; full * full has 16 bits */
    for (int j = 0; j < 16; j++) { /* pairing: D = b[j] exactly if a[k] meets b[k] */
        NEW("pair k=%d", j);
        v[n].a[j] = 1.0f;
        for (int k = 0; k < 16; k++) v[n].b[k] = ldexpf(1.0f + 0.5f * (k / 8), k % 8 - 4);
        n++;
    }
    /* a product 2^-g times the largest (2^16): kept, truncated (toward zero?), rounded, lost? The
     * full x full form has 16 significant bits, so the kept part shows where the cut lies. */
    static const char *const gap_form[] = {"", " x1.75", " x-1.75", " xfull", " x-full"};
    for (int g = 1; g <= 40; g++)
        for (int form = 0; form < 5; form++) {
            NEW("gap %d%s", g, gap_form[form]);
            v[n].a[0] = 256.0f, v[n].b[0] = 256.0f;
            pow2_pair16(16 - g, &v[n].a[5], &v[n].b[5]);
            if (form == 1 || form == 2) v[n].a[5] *= form == 1 ? 1.75f : -1.75f;
            if (form >= 3) v[n].a[5] *= form == 3 ? full : -full, v[n].b[5] *= full;
            n++;
        }
    for (int g = 1; g <= 40; g++) /* C = 2^16 and one product 2^(16-g): does C set the alignment? */
        for (int form = 0; form < 3; form++) {
            NEW("C gap %d%s", g, gap_form[form == 2 ? 3 : form]);
            v[n].c = 65536.0f;
            pow2_pair16(16 - g, &v[n].a[3], &v[n].b[3]);
            if (form == 1) v[n].a[3] *= 1.75f;
            if (form == 2) v[n].a[3] *= full, v[n].b[3] *= full;
            n++;
        }
    for (int g = 1; g <= 40; g++) { /* a small C (1.75, or 24 bits wide) below one product 2^16 */
        NEW("small C %d x1.75", g);
        v[n].c = ldexpf(1.75f, 16 - g);
        v[n].a[9] = 256.0f, v[n].b[9] = 256.0f;
        n++;
        NEW("small C %d full", g);
        v[n].c = ldexpf(2.0f - 0x1p-23f, 16 - g);
        v[n].a[9] = 256.0f, v[n].b[9] = 256.0f;
        n++;
    }
    for (int k = 4; k <= 23; k++) { /* C's own low bits: kept with no product, with a product of 1? */
        NEW("C tail %d, no product", k);
        v[n].c = 1.0f + ldexpf(1.0f, -k);
        n++;
        NEW("C tail %d, + 1", k);
        v[n].c = 1.0f + ldexpf(1.0f, -k);
        v[n].a[7] = 1.0f, v[n].b[7] = 1.0f;
        n++;
    }
    /* A sum that carries 2 bits past the largest term: (2 - 2^-23) + 2 * full = 6 - 2^-7 - 2^-23 has
     * 2^-21 as its binary32 ulp: toward zero 6 - 2^-7 - 2^-21, to nearest 6 - 2^-7 (0.75 ulp dropped);
     * the tie form drops exactly 0.5 ulp (nearest-even: up); the 13-bit form drops 0.75 of 2^-11. */
    static const float carry_c[3] = {2.0f - 0x1p-23f, 2.0f - 0x1p-22f, 255.0f / 128.0f + 3 * 0x1p-13f};
    static const char *const carry_name[3] = {"carry", "carry tie", "carry13"};
    for (int f = 0; f < 3; f++)
        for (int sgn = 1; sgn >= -1; sgn -= 2) {
            NEW("%s %s", carry_name[f], sgn > 0 ? "+" : "-");
            v[n].c = sgn * carry_c[f];
            v[n].a[1] = v[n].a[2] = sgn * full, v[n].b[1] = v[n].b[2] = 1.0f;
            n++;
        }
    for (int late = 0; late < 2; late++) { /* one alignment over the 16 k, or one per 8-k half? */
        NEW("halves %s", late ? "big k=10" : "big k=2");
        for (int k = 0; k < 8; k++) {
            const int kk = late ? k : 8 + k;
            v[n].a[kk] = ldexpf(full, -20), v[n].b[kk] = 1.0f;
        }
        v[n].a[late ? 10 : 2] = 4.0f, v[n].b[late ? 10 : 2] = 1.0f;
        n++;
    }
    for (int g = 1; g <= 40; g++) /* 2^16 and 15 products 2^(16-g) (or full * full times that) */
        for (int form = 0; form < 2; form++) {
            NEW("many %d%s", g, form ? " xfull" : "");
            v[n].a[0] = 256.0f, v[n].b[0] = 256.0f;
            for (int k = 1; k < 16; k++) {
                pow2_pair16(16 - g, &v[n].a[k], &v[n].b[k]);
                if (form) v[n].a[k] *= full, v[n].b[k] *= full;
            }
            n++;
        }
    /* Cancellation: 2^16 - 2^16 (two products, or C and a product) beside 1.75 * 2^(16-g): exactly
     * the small product, unless the cancelled pair sets the alignment and the small one is cut. */
    for (int g = 1; g <= 40; g++) {
        NEW("cancel %d", g);
        v[n].a[0] = 256.0f, v[n].b[0] = 256.0f, v[n].a[1] = -256.0f, v[n].b[1] = 256.0f;
        pow2_pair16(16 - g, &v[n].a[6], &v[n].b[6]);
        v[n].a[6] *= 1.75f;
        n++;
        NEW("C cancel %d", g);
        v[n].c = -65536.0f;
        v[n].a[0] = 256.0f, v[n].b[0] = 256.0f;
        pow2_pair16(16 - g, &v[n].a[6], &v[n].b[6]);
        v[n].a[6] *= 1.75f;
        n++;
    }
    /* Which exponent aligns a product whose mantissas multiply past 2: its own (normalized) or the
     * sum of its operands' exponents? x*y - x*y + C with C = 2^-j survives to a depth j one larger in
     * the latter (1x1: the control, where both agree). */
    static const float unm[][2] = {{1.5f, 1.5f}, {255.0f / 128.0f, 255.0f / 128.0f}, {1.5f, 1.25f}, {1.25f, 1.5f},
                                   {1.0f, 1.0f}};
    static const char *const unm_name[] = {"1.5x1.5", "fullxfull", "1.5x1.25", "1.25x1.5", "1x1"};
    for (int u = 0; u < 5; u++)
        for (int j = 20; j <= 27; j++) {
            NEW("unnorm %s C=2^-%d", unm_name[u], j);
            v[n].c = ldexpf(1.0f, -j);
            v[n].a[2] = unm[u][0], v[n].a[9] = -unm[u][0], v[n].b[2] = v[n].b[9] = unm[u][1];
            n++;
        }
    /* Subnormal operands (bf16: below 2^-126): 2^-130 * 2^120 = 2^-10 alone (0 if flushed), and beside
     * C = 3 * 2^(-10-j): aligned by its own exponent (-10) C keeps 2 more bits than by the smallest
     * normal's (-6). The subnormal in A or in B; 3 * 2^-131 has two bits. */
    static const char *const sub_name[] = {"sub a", "sub b", "sub3 a"};
    for (int w = 0; w < 3; w++) {
        NEW("%s alone", sub_name[w]);
        v[n].a[4] = w == 1 ? 0x1p120f : w == 2 ? 3 * 0x1p-131f : 0x1p-130f;
        v[n].b[4] = w == 1 ? 0x1p-130f : 0x1p120f;
        n++;
    }
    for (int w = 0; w < 2; w++)
        for (int j = 16; j <= 27; j++) {
            NEW("%s C=3*2^-%d", sub_name[w], 10 + j);
            v[n].a[4] = w ? 0x1p120f : 0x1p-130f;
            v[n].b[4] = w ? 0x1p-130f : 0x1p120f;
            v[n].c = 3.0f * ldexpf(1.0f, -10 - j);
            n++;
        }
    /* Results below binary32's normal range: 2^-140 and 1.75 * 2^-140 (subnormal: kept or flushed?),
     * 2^-150 (below the smallest subnormal), 2^-140 beside C = 2^-126 */
    static const int tiny_e[4] = {-140, -140, -150, -140};
    for (int w = 0; w < 4; w++) {
        NEW("tiny %s", w == 0 ? "2^-140" : w == 1 ? "1.75*2^-140" : w == 2 ? "2^-150" : "2^-140 + C");
        pow2_pair16(tiny_e[w], &v[n].a[11], &v[n].b[11]);
        if (w == 1) v[n].a[11] *= 1.75f;
        if (w == 3) v[n].c = 0x1p-126f;
        n++;
    }
    NEW("zero sum"); /* 1 - 1: +0 or -0? */
    v[n].a[0] = 1.0f, v[n].b[0] = 1.0f, v[n].a[1] = -1.0f, v[n].b[1] = 1.0f;
    n++;
    NEW("C -0 alone");
    v[n].c = -0.0f;
    n++;
    return n;
}
#undef NEW

/* Random chain case i of (chain, zero_c): chain steps of 16 bf16 a and b (rounded to nearest),
 * normal times a scale that depends on i % 3: 1, 64, or 2^u per element with u uniform in -6..6;
 * every 8th case one outlier x256 per step at k = 3; c normal x 1000 (x 2^-12 when i % 4 == 3;
 * unused when zero_c). Deterministic (dl_rng_normal, seed 20261203). */
void dl_hgmma_acc_random(int chain, int zero_c, int i, float *c, float *a, float *b)
{
    const uint64_t seed = 20261203, stream = (uint64_t)(chain * 2 + zero_c), base = (uint64_t)i * 2048;
    *c = (float)(dl_rng_normal(seed, stream, base) * (i % 4 == 3 ? 1000.0 / 4096.0 : 1000.0));
    for (int s = 0; s < chain; s++)
        for (int k = 0; k < 16; k++) {
            const uint64_t j = base + 1 + (uint64_t)(s * 64 + k);
            double x = dl_rng_normal(seed, stream, j), y = dl_rng_normal(seed, stream, j + 16);
            if (i % 3 == 1) x *= 64.0, y *= 64.0;
            if (i % 3 == 2) {
                x = ldexp(x, (int)dl_rng_below(seed, stream, j + 32, 13) - 6);
                y = ldexp(y, (int)dl_rng_below(seed, stream, j + 48, 13) - 6);
            }
            if (i % 8 == 7 && k == 3) x *= 256.0;
            a[s * 16 + k] = dl_round_bf16((float)x);
            b[s * 16 + k] = dl_round_bf16((float)y);
        }
}

/* Full-matrix random case i: c [64][8] normal x 1000; a [64][16] normal x 2^(m%8 - 4) per row m;
 * b [8][16] normal x 2^(j - 4) per row j, rows 4..7 zero when i % 4 == 1 (a GQA group of 4 padded
 * to 8, as the decode kernel's Q); bf16, rounded to nearest. Deterministic (seed 20261204). */
void dl_hgmma_acc_full_random(int i, float *c, float *a, float *b)
{
    const uint64_t seed = 20261204, base = (uint64_t)i * 4096;
    for (int k = 0; k < 512; k++) c[k] = (float)(dl_rng_normal(seed, 0, base + (uint64_t)k) * 1000.0);
    for (int k = 0; k < 64 * 16; k++)
        a[k] = dl_round_bf16((float)ldexp(dl_rng_normal(seed, 1, base + (uint64_t)k), (k / 16) % 8 - 4));
    for (int k = 0; k < 8 * 16; k++) {
        const float y = dl_round_bf16((float)ldexp(dl_rng_normal(seed, 2, base + (uint64_t)k), k / 16 - 4));
        b[k] = (i % 4 == 1 && k / 16 >= 4) ? 0.0f : y;
    }
}

#if !DL_HAVE_CUDA
int dl_probe_launch(int i, uint32_t *checksum)
{
    (void)i;
    (void)checksum;
    return dl_fail("built without CUDA (make CUDA=0 or nvcc not found): the probe kernels are not in this binary");
}
int dl_wgmma_acc_probe(int n, int chain, int zero_c, const float *c, const uint8_t *a, const uint8_t *b, float *d,
                       int *uniform)
{
    (void)n, (void)chain, (void)zero_c, (void)c, (void)a, (void)b, (void)d, (void)uniform;
    return dl_fail("built without CUDA (make CUDA=0 or nvcc not found): the wgmma probe is not in this binary");
}
int dl_wgmma_acc_full(int n, int zero_c, const float *c, const uint8_t *a, const uint8_t *b, float *d)
{
    (void)n, (void)zero_c, (void)c, (void)a, (void)b, (void)d;
    return dl_fail("built without CUDA (make CUDA=0 or nvcc not found): the wgmma probe is not in this binary");
}
int dl_hgmma_acc_probe(int n, int chain, int zero_c, const float *c, const uint16_t *a, const uint16_t *b, float *d,
                       int *uniform)
{
    (void)n, (void)chain, (void)zero_c, (void)c, (void)a, (void)b, (void)d, (void)uniform;
    return dl_fail("built without CUDA (make CUDA=0 or nvcc not found): the hgmma probe is not in this binary");
}
int dl_hgmma_acc_full(int n, int zero_c, const float *c, const uint16_t *a, const uint16_t *b, float *d)
{
    (void)n, (void)zero_c, (void)c, (void)a, (void)b, (void)d;
    return dl_fail("built without CUDA (make CUDA=0 or nvcc not found): the hgmma probe is not in this binary");
}
#endif

/* probes.c - the table of the E2 probe kernels (gpu/dl_probes.def; kernels in gpu/e2_probes.cu).
 * Plain C so that a build without CUDA can list them. */
#include "dl_probes.h"

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

int dl_wgmma_acc_cases(dl_acc_case *v, int cap)
{
    int n = 0;
#define NEW(...)                                                                                         \
    do {                                                                                                 \
        if (n == cap) return n;                                                                          \
        memset(&v[n], 0, sizeof v[n]);                                                                   \
        snprintf(v[n].name, sizeof v[n].name, __VA_ARGS__);                                              \
    } while (0)
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
#undef NEW
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
#endif

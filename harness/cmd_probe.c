/* cmd_probe.c - `decodelab probe`: the E2 probe kernels (gpu/e2_probes.cu, rows in
 * gpu/dl_probes.def; issue 13 item 2). Lists them (name, kernel, the SASS forms each issues and
 * how many per thread) or launches them once each, so that Nsight Compute can profile them:
 *   ncu -k regex:e2_probe --metrics ... decodelab probe --run all
 * (tests/gpu/e2_probes_job.sh); and the wgmma accumulator probes of issue 12 (gpu/wgmma_acc_probe.cu):
 * FP8 (--wgmma-acc, QGMMA) and BF16 (--hgmma-acc, HGMMA; tests/gpu/hgmma_probe_job.sh). Without a CUDA
 * device it says so and exits 0. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu/dl_gpu.h"
#include "../ref/dl_formats.h"
#include "../ref/dl_ref.h"
#include "../gpu/dl_probes.h"
#include "cli_util.h"
#include "dl_cli.h"

static void probe_help(FILE *f)
{
    fprintf(f,
            "usage: decodelab probe [--list] [--run NAME|all] [--wgmma-acc] [--hgmma-acc]\n\n"
            "The E2 probe kernels: small straight-line kernels that each issue one candidate instruction\n"
            "form (packed/scalar FP16/BF16 FMA, MUL, ADD, MAX, compare, conversions, PRMT, LOP3, immediate\n"
            "moves; FFMA and HMMA as controls) a known number of times per thread, one block of %d threads.\n"
            "Profile them with Nsight Compute and compare each counter / warps with the SASS census\n"
            "(decodelab sass --forms --kernels 'e2_probe*'): tests/gpu/e2_probes_job.sh.\n\n"
            "  --list        (default) one tab-separated line per probe: name, kernel, forms, per thread,\n"
            "                warps per launch, PTX, note\n"
            "  --run NAME    launch probe NAME once (all: every probe, in table order) and print its checksum\n"
            "  --wgmma-acc   the FP8 wgmma accumulator probe (issue 12): D = C + sum of 32 e4m3 products by one\n"
            "                m64n8k32 wgmma, on cases that each isolate one question (pairing of a and b, the\n"
            "                exponent gap at which a smaller product is lost, truncation or rounding, the role\n"
            "                of C); prints per case C, the exact sum, a sequential FP32 sum, the GPU's D and the\n"
            "                model's (dl_qgmma_add); then the same cases as chains of 2 and 4 wgmmas, and 512\n"
            "                random chains of 1, 2, 4 and 8 wgmmas (from C, or from scale-d = 0 as the decode\n"
            "                kernels start) against the model applied step by step; then 64 random full\n"
            "                matrices (every output its own row of A and column of B)\n"
            "  --hgmma-acc   the BF16 counterpart (HGMMA): D = C + sum of 16 bf16 products by one m64n8k16\n"
            "                wgmma, on cases for the same questions plus cancellation, subnormal operands and\n"
            "                results; prints per case C, the exact sum, a sequential FP32 sum, the GPU's D and\n"
            "                the model family dl_hgmma_model (gpu/dl_probes.h: products aligned to the largest\n"
            "                exponent, truncated to F fraction bits; t<F> truncates the result too, r<F> rounds it\n"
            "                to nearest, t25n aligns products by their normalized exponent), then the same cases\n"
            "                as chains of 2 and 4 wgmmas, 512 random chains of 1, 2, 4, 8 and 16 wgmmas (from C\n"
            "                or from scale-d = 0) and 64 random full matrices; last, one '# summary' line per\n"
            "                model (also fp32_seq, and step_rn: each wgmma's exact sum rounded to nearest once)\n"
            "                with how many cases, chains and outputs it matches bitwise. Exit 1 when a launch\n"
            "                fails or its 512 outputs disagree (a layout error)\n\n"
            "exit status: 0 ok (also: no CUDA device, nothing launched), 1 a launch failed, 2 bad usage.\n",
            DL_PROBE_THREADS);
}

/* The model of a chain: the steps' dl_qgmma_add in order, from c (from 0 when zero_c). */
static float chain_model(float c, const float *a, const float *b, int chain, int zero_c)
{
    float acc = zero_c ? 0.0f : c;
    for (int s = 0; s < chain; s++) acc = dl_qgmma_add(acc, a + s * 32, b + s * 32, 1, 32, DL_E4M3);
    return acc;
}

/* Launch n cases of chain steps of the accumulator probe of operand type t (DL_E4M3: QGMMA, 32 values
 * per step; DL_BF16: HGMMA, 16), values in fa, fb (n*chain*K), encoded here; d[i] and u[i] out; 0 or
 * dl_fail() */
static int launch_chain(dl_dtype t, int n, int chain, int zero_c, const float *c, const float *fa, const float *fb,
                        float *d, int *u)
{
    const int bf16 = t == DL_BF16;
    const size_t ops = (size_t)n * chain * (bf16 ? 16 : 32), size = bf16 ? 2 : 1;
    void *a = malloc(ops * size), *b = malloc(ops * size);
    if (!a || !b) {
        free(a), free(b);
        return dl_fail("out of memory");
    }
    for (size_t k = 0; k < ops; k++) {
        if (bf16) {
            ((uint16_t *)a)[k] = dl_f32_to_bf16(fa[k], DL_NOSAT);
            ((uint16_t *)b)[k] = dl_f32_to_bf16(fb[k], DL_NOSAT);
        } else {
            ((uint8_t *)a)[k] = dl_f32_to_e4m3(fa[k], DL_SATFINITE);
            ((uint8_t *)b)[k] = dl_f32_to_e4m3(fb[k], DL_SATFINITE);
        }
    }
    const int rc = bf16 ? dl_hgmma_acc_probe(n, chain, zero_c, c, a, b, d, u)
                        : dl_wgmma_acc_probe(n, chain, zero_c, c, a, b, d, u);
    free(a), free(b);
    return rc;
}

static int wgmma_acc(void)
{
    enum { CAP = 512, NRAND = 512, MAXCH = 8 };
    dl_acc_case *v = calloc(CAP, sizeof *v);
    float *c = calloc(NRAND, sizeof *c), *d = calloc(NRAND, sizeof *d);
    float *fa = calloc((size_t)NRAND * MAXCH * 32, sizeof *fa), *fb = calloc((size_t)NRAND * MAXCH * 32, sizeof *fb);
    int *u = calloc(NRAND, sizeof *u);
    int rc = 0;
    if (!v || !c || !d || !fa || !fb || !u) {
        rc = dl_fail("out of memory");
        goto out;
    }
    const int n = dl_wgmma_acc_cases(v, CAP);
    for (int i = 0; i < n && !rc; i++)
        for (int k = 0; k < 32; k++)
            if (dl_e4m3_to_f32(dl_f32_to_e4m3(v[i].a[k], DL_SATFINITE)) != v[i].a[k] ||
                dl_e4m3_to_f32(dl_f32_to_e4m3(v[i].b[k], DL_SATFINITE)) != v[i].b[k])
                rc = dl_fail("probe case '%s': k=%d: %g or %g is not an e4m3 value", v[i].name, k, v[i].a[k], v[i].b[k]);
    if (rc) goto out;
    dl_clear_error();
    if (dl_gpu_device_count() <= 0) {
        printf("no CUDA device: nothing launched; would run %d wgmma accumulator cases, the same as chains of 2 and 4, "
               "and %d random chains of 1, 2, 4 and 8 wgmmas (accumulator given or not)\n", n, NRAND);
        goto out;
    }
    /* 1. the hand-made cases, one wgmma each: the table */
    for (int chain = 1; chain <= 4 && !rc; chain *= 2) {
        for (int i = 0; i < n; i++) {
            c[i] = v[i].c;
            for (int s = 0; s < chain; s++) {
                memcpy(fa + ((size_t)i * chain + s) * 32, v[i].a, sizeof v[i].a);
                memcpy(fb + ((size_t)i * chain + s) * 32, v[i].b, sizeof v[i].b);
            }
        }
        if ((rc = launch_chain(DL_E4M3, n, chain, 0, c, fa, fb, d, u))) break;
        if (chain == 1) {
            printf("# D = C + sum_k a[k] b[k] by one wgmma m64n8k32 f32.e4m3.e4m3 (all 512 outputs; uniform = they agree)\n");
            printf("# model = dl_qgmma_add (ref/dl_ref.h, the fp8wg accumulator); gpu==model: 1 when bitwise equal\n");
            printf("%-24s %-16s %-20s %-20s %-20s %-20s %-14s %-7s %s\n", "case", "C", "exact", "fp32_seq", "gpu",
                   "model", "gpu-exact", "uniform", "gpu==model");
        }
        int agree = 0;
        for (int i = 0; i < n; i++) {
            const float mod = chain_model(c[i], fa + (size_t)i * chain * 32, fb + (size_t)i * chain * 32, chain, 0);
            const int same = memcmp(&mod, &d[i], sizeof mod) == 0;
            agree += same;
            if (u[i] != 1) rc = 1;
            if (chain == 1) {
                double ex = c[i];
                float seq = c[i];
                for (int k = 0; k < 32; k++) {
                    const double p = (double)v[i].a[k] * v[i].b[k];
                    ex += p;
                    seq += (float)p;
                }
                printf("%-24s %-16a %-20a %-20a %-20a %-20a %-14.6g %-7d %d\n", v[i].name, (double)c[i], ex,
                       (double)seq, (double)d[i], (double)mod, (double)d[i] - ex, u[i], same);
            } else if (!same) {
                printf("#   chain %d of the same wgmma differs: %-24s gpu %-20a model %a\n", chain, v[i].name,
                       (double)d[i], (double)mod);
            }
        }
        if (chain == 1) printf("# gpu == model (bitwise) on %d of %d cases\n", agree, n);
        else printf("# chain of %d times the same wgmma: gpu == model on %d of %d cases\n", chain, agree, n);
    }
    /* 2. random chains as the decode kernel issues them (its QK: D/32 wgmmas from scale-d = 0) */
    for (int chain = 1; chain <= MAXCH && !rc; chain *= 2)
        for (int zc = 0; zc <= 1 && !rc; zc++) {
            for (int i = 0; i < NRAND; i++)
                dl_wgmma_acc_random(chain, zc, i, &c[i], fa + (size_t)i * chain * 32, fb + (size_t)i * chain * 32);
            if ((rc = launch_chain(DL_E4M3, NRAND, chain, zc, c, fa, fb, d, u))) break;
            int agree = 0;
            double worst = 0.0;
            for (int i = 0; i < NRAND; i++) {
                const float mod = chain_model(c[i], fa + (size_t)i * chain * 32, fb + (size_t)i * chain * 32, chain, zc);
                const int same = memcmp(&mod, &d[i], sizeof mod) == 0;
                agree += same;
                if (u[i] != 1) rc = 1;
                const double rel = mod != 0.0f ? fabs((double)d[i] - mod) / fabs((double)mod) : fabs((double)d[i]);
                if (rel > worst) worst = rel;
                printf("rand chain=%d zero_c=%d i=%-4d gpu %-20a model %-20a %d\n", chain, zc, i, (double)d[i],
                       (double)mod, same);
            }
            printf("# random chains of %d (zero_c %d): gpu == model on %d of %d; largest |gpu-model|/|model| %.3g\n",
                   chain, zc, agree, NRAND, worst);
        }
    /* 3. full random matrices: every output its own row of A and column of B (as in the decode kernel,
     * where rows are tokens and columns heads): does one output depend on the others? */
    for (int zc = 0; zc <= 1 && !rc; zc++) {
        enum { NF = 64 };
        float *fc = malloc((size_t)NF * 512 * sizeof *fc), *fd = malloc((size_t)NF * 512 * sizeof *fd);
        float *xa = malloc((size_t)NF * 2048 * sizeof *xa), *xb = malloc((size_t)NF * 256 * sizeof *xb);
        uint8_t *ca = malloc((size_t)NF * 2048), *cb = malloc((size_t)NF * 256);
        if (!fc || !fd || !xa || !xb || !ca || !cb) rc = dl_fail("out of memory");
        for (int i = 0; i < NF && !rc; i++) dl_wgmma_acc_full_random(i, fc + i * 512, xa + i * 2048, xb + i * 256);
        for (int k = 0; k < NF * 2048 && !rc; k++) ca[k] = dl_f32_to_e4m3(xa[k], DL_SATFINITE);
        for (int k = 0; k < NF * 256 && !rc; k++) cb[k] = dl_f32_to_e4m3(xb[k], DL_SATFINITE);
        if (!rc) rc = dl_wgmma_acc_full(NF, zc, fc, ca, cb, fd);
        int agree = 0, shown = 0;
        double worst = 0.0;
        for (int i = 0; i < NF && !rc; i++)
            for (int m = 0; m < 64; m++)
                for (int j = 0; j < 8; j++) {
                    const float mod = dl_qgmma_add(zc ? 0.0f : fc[i * 512 + m * 8 + j], xa + i * 2048 + m * 32,
                                                   xb + i * 256 + j * 32, 1, 32, DL_E4M3);
                    const float g = fd[i * 512 + m * 8 + j];
                    if (!memcmp(&mod, &g, sizeof g)) {
                        agree++;
                        continue;
                    }
                    const double rel = mod != 0.0f ? fabs((double)g - mod) / fabs((double)mod) : fabs((double)g);
                    if (rel > worst || isnan(rel)) worst = isnan(rel) ? INFINITY : rel;
                    if (shown++ < 40)
                        printf("full zero_c=%d case %d m=%d n=%d: gpu %-20a model %a\n", zc, i, m, j, (double)g,
                               (double)mod);
                }
        if (!rc)
            printf("# full random matrices (zero_c %d): gpu == per-element model on %d of %d outputs; largest "
                   "|gpu-model|/|model| %.3g\n", zc, agree, NF * 512, worst);
        /* alternatives: one alignment shared by a block of gr rows x gc columns of the 64 x 8 outputs */
        for (int gr = 1; gr <= 64 && !rc; gr *= 2)
            for (int gcol = 1; gcol <= 8; gcol *= 2) {
                if (gr == 1 && gcol == 1) continue; /* the per-element model, above */
                int ok = 0;
                for (int i = 0; i < NF; i++)
                    for (int m0 = 0; m0 < 64; m0 += gr)
                        for (int j0 = 0; j0 < 8; j0 += gcol) {
                            int top = INT_MIN;
                            for (int m = m0; m < m0 + gr; m++)
                                for (int j = j0; j < j0 + gcol; j++) {
                                    const int t = dl_qgmma_top(zc ? 0.0f : fc[i * 512 + m * 8 + j],
                                                               xa + i * 2048 + m * 32, xb + i * 256 + j * 32, 1, 32, DL_E4M3);
                                    if (t > top) top = t;
                                }
                            for (int m = m0; m < m0 + gr; m++)
                                for (int j = j0; j < j0 + gcol; j++) {
                                    const float mod = dl_qgmma_sum(zc ? 0.0f : fc[i * 512 + m * 8 + j],
                                                                   xa + i * 2048 + m * 32, xb + i * 256 + j * 32, 1,
                                                                   32, top);
                                    ok += !memcmp(&mod, &fd[i * 512 + m * 8 + j], sizeof mod);
                                }
                        }
                printf("# full random matrices (zero_c %d): one alignment per %d rows x %d columns: gpu == it on "
                       "%d of %d outputs\n", zc, gr, gcol, ok, NF * 512);
            }
        free(fc), free(fd), free(xa), free(xb), free(ca), free(cb);
    }
out:
    if (rc < 0) rc = dl_cli_error("probe");
    free(v), free(c), free(d), free(fa), free(fb), free(u);
    return rc;
}

/* ---- the HGMMA probe (--hgmma-acc) */

/* The models each GPU result is compared with, bitwise: dl_hgmma_model for (bits, flags); bits 0:
 * fp32_seq (the 16 products added one by one in binary32), -1: step_rn (the wgmma's exact sum
 * rounded to nearest once). A chain applies the model once per wgmma. */
static const struct {
    const char *name;
    int bits, flags;
} hm[] = {
    {"t13", 13, 0},  {"t23", 23, 0},  {"t24", 24, 0},           {"t25", 25, 0},         {"r24", 24, DL_HGMMA_RN},
    {"r25", 25, DL_HGMMA_RN}, {"t25n", 25, DL_HGMMA_NORM}, {"fp32_seq", 0, 0}, {"step_rn", -1, 0},
};
enum { NHM = (int)(sizeof hm / sizeof hm[0]), HM_FAMILY = NHM - 2 }; /* the first HM_FAMILY: dl_hgmma_model */

static float hstep(int m, float acc, const float *a, const float *b)
{
    if (hm[m].bits == 0) {
        for (int k = 0; k < 16; k++) acc += a[k] * b[k]; /* bf16 x bf16: exact in binary32 */
        return acc;
    }
    if (hm[m].bits < 0) {
        double s = acc;
        for (int k = 0; k < 16; k++) s += (double)a[k] * b[k];
        return (float)s;
    }
    return dl_hgmma_model(acc, a, b, 16, hm[m].bits, hm[m].flags);
}

static float hchain(int m, float c, const float *a, const float *b, int chain, int zero_c)
{
    float acc = zero_c ? 0.0f : c;
    for (int s = 0; s < chain; s++) acc = hstep(m, acc, a + s * 16, b + s * 16);
    return acc;
}

/* which models give g bitwise: one '0'/'1' per hm[] entry into out[NHM + 1]; returns the mask */
static unsigned hmatch(float g, float c, const float *a, const float *b, int chain, int zero_c, char *out)
{
    unsigned mask = 0;
    for (int m = 0; m < NHM; m++) {
        const float x = hchain(m, c, a, b, chain, zero_c);
        const int same = memcmp(&x, &g, sizeof g) == 0;
        mask |= (unsigned)same << m;
        if (out) out[m] = same ? '1' : '0';
    }
    if (out) out[NHM] = 0;
    return mask;
}

static int is_bf16(float x) { return isfinite(x) && dl_round_bf16(x) == x; }

static int hgmma_acc(void)
{
    enum { CAP = 1024, NRAND = 512, MAXCH = DL_HGMMA_MAX_CHAIN, NF = 64 };
    dl_hacc_case *v = calloc(CAP, sizeof *v);
    float *c = calloc(CAP, sizeof *c), *d = calloc(CAP, sizeof *d);
    float *fa = calloc((size_t)CAP * MAXCH * 16, sizeof *fa), *fb = calloc((size_t)CAP * MAXCH * 16, sizeof *fb);
    int *u = calloc(CAP, sizeof *u);
    float *fc = malloc((size_t)NF * 512 * sizeof *fc), *fd = malloc((size_t)NF * 512 * sizeof *fd);
    float *xa = malloc((size_t)NF * 1024 * sizeof *xa), *xb = malloc((size_t)NF * 128 * sizeof *xb);
    uint16_t *ca = malloc((size_t)NF * 1024 * sizeof *ca), *cb = malloc((size_t)NF * 128 * sizeof *cb);
    /* per model: matches among the cases (chains of 1, 2, 4), the random chains, the full outputs */
    int cnt[NHM][5] = {{0}}, tot[5] = {0}, nonuniform = 0, rc = 0;
    if (!v || !c || !d || !fa || !fb || !u || !fc || !fd || !xa || !xb || !ca || !cb) {
        rc = dl_fail("out of memory");
        goto out;
    }
    const int n = dl_hgmma_acc_cases(v, CAP);
    for (int i = 0; i < n && !rc; i++)
        for (int k = 0; k < 16; k++)
            if (!is_bf16(v[i].a[k]) || !is_bf16(v[i].b[k]))
                rc = dl_fail("hgmma probe case '%s': k=%d: %g or %g is not a bf16 value", v[i].name, k, v[i].a[k],
                             v[i].b[k]);
    if (rc) goto out;
    dl_clear_error();
    if (dl_gpu_device_count() <= 0) {
        const char *why = dl_last_error();
        if (!strncmp(why, "no CUDA device: ", 16)) why += 16;
        printf("no CUDA device (%s): nothing launched; would run %d hgmma accumulator cases, the same as chains "
               "of 2 and 4, %d random chains of 1, 2, 4, 8 and 16 wgmmas (accumulator given or not) and %d random "
               "full matrices\n", why, n, NRAND, NF);
        goto out;
    }
    printf("# models (dl_hgmma_model, gpu/dl_probes.h): t<F>: products aligned to the largest exponent (operand "
           "exponents summed), truncated toward zero to F fraction bits, exact sum, result truncated; r<F>: result "
           "rounded to nearest even; t25n: products aligned by their own normalized exponent; fp32_seq: binary32 "
           "adds in k order; step_rn: the exact sum rounded once. match: one digit per model in this order:");
    for (int m = 0; m < NHM; m++) printf(" %s", hm[m].name);
    printf("\n");
    /* 1. the hand-made cases, one wgmma each (the table), then as chains of 2 and 4 of the same wgmma */
    static char match1[CAP][NHM + 1];
    for (int chain = 1, slot = 0; chain <= 4 && !rc; chain *= 2, slot++) {
        for (int i = 0; i < n; i++) {
            c[i] = v[i].c;
            for (int s = 0; s < chain; s++) {
                memcpy(fa + ((size_t)i * chain + s) * 16, v[i].a, sizeof v[i].a);
                memcpy(fb + ((size_t)i * chain + s) * 16, v[i].b, sizeof v[i].b);
            }
        }
        if ((rc = launch_chain(DL_BF16, n, chain, 0, c, fa, fb, d, u))) break;
        if (chain == 1) {
            printf("# D = C + sum_k a[k] b[k] by one wgmma m64n8k16 f32.bf16.bf16 (all 512 outputs; uniform = they agree)\n");
            printf("%-28s %-16s %-24s %-16s %-16s %-12s %-7s", "case", "C", "exact", "fp32_seq", "gpu", "gpu-exact",
                   "uniform");
            for (int m = 0; m < HM_FAMILY; m++) printf(" %-16s", hm[m].name);
            printf(" match\n");
        }
        tot[slot] = n;
        for (int i = 0; i < n; i++) {
            const float *a = fa + (size_t)i * chain * 16, *b = fb + (size_t)i * chain * 16;
            char mt[NHM + 1];
            const unsigned mask = hmatch(d[i], c[i], a, b, chain, 0, mt);
            for (int m = 0; m < NHM; m++) cnt[m][slot] += (mask >> m) & 1;
            if (u[i] != 1) nonuniform++;
            if (chain == 1) {
                double ex = c[i];
                for (int k = 0; k < 16; k++) ex += (double)v[i].a[k] * v[i].b[k];
                printf("%-28s %-16a %-24a %-16a %-16a %-12.4g %-7d", v[i].name, (double)c[i], ex,
                       (double)hchain(NHM - 2, c[i], a, b, 1, 0), (double)d[i], (double)d[i] - ex, u[i]);
                for (int m = 0; m < HM_FAMILY; m++) printf(" %-16a", (double)hchain(m, c[i], a, b, 1, 0));
                printf(" %s\n", mt);
                memcpy(match1[i], mt, sizeof mt);
            } else if (strcmp(mt, match1[i])) {
                printf("#   chain %d of the same wgmma matches otherwise: %-28s gpu %-16a match %s (one wgmma: %s)\n",
                       chain, v[i].name, (double)d[i], mt, match1[i]);
            }
        }
        printf("# cases as chains of %d wgmmas: gpu == model bitwise:", chain);
        for (int m = 0; m < NHM; m++) printf(" %s %d", hm[m].name, cnt[m][slot]);
        printf(" (of %d)\n", n);
    }
    /* 2. random chains as the decode kernels issue them (QK: D/16 wgmmas from scale-d = 0) */
    for (int chain = 1; chain <= MAXCH && !rc; chain *= 2)
        for (int zc = 0; zc <= 1 && !rc; zc++) {
            for (int i = 0; i < NRAND; i++)
                dl_hgmma_acc_random(chain, zc, i, &c[i], fa + (size_t)i * chain * 16, fb + (size_t)i * chain * 16);
            if ((rc = launch_chain(DL_BF16, NRAND, chain, zc, c, fa, fb, d, u))) break;
            int agree[NHM] = {0};
            for (int i = 0; i < NRAND; i++) {
                char mt[NHM + 1];
                const unsigned mask =
                    hmatch(d[i], c[i], fa + (size_t)i * chain * 16, fb + (size_t)i * chain * 16, chain, zc, mt);
                for (int m = 0; m < NHM; m++) agree[m] += (mask >> m) & 1;
                if (u[i] != 1) nonuniform++;
                printf("rand chain=%d zero_c=%d i=%-4d gpu %-16a match %s\n", chain, zc, i, (double)d[i], mt);
            }
            printf("# random chains of %d (zero_c %d): gpu == model bitwise:", chain, zc);
            for (int m = 0; m < NHM; m++) {
                printf(" %s %d", hm[m].name, agree[m]);
                cnt[m][3] += agree[m];
            }
            printf(" (of %d)\n", NRAND);
            tot[3] += NRAND;
        }
    /* 3. full random matrices: every output its own row of A and column of B */
    for (int zc = 0; zc <= 1 && !rc; zc++) {
        for (int i = 0; i < NF; i++) dl_hgmma_acc_full_random(i, fc + i * 512, xa + i * 1024, xb + i * 128);
        for (int k = 0; k < NF * 1024; k++) ca[k] = dl_f32_to_bf16(xa[k], DL_NOSAT);
        for (int k = 0; k < NF * 128; k++) cb[k] = dl_f32_to_bf16(xb[k], DL_NOSAT);
        if ((rc = dl_hgmma_acc_full(NF, zc, fc, ca, cb, fd))) break;
        int agree[NHM] = {0};
        for (int i = 0; i < NF; i++)
            for (int m = 0; m < 64; m++)
                for (int j = 0; j < 8; j++) {
                    const unsigned mask = hmatch(fd[i * 512 + m * 8 + j], fc[i * 512 + m * 8 + j], xa + i * 1024 + m * 16,
                                                 xb + i * 128 + j * 16, 1, zc, NULL);
                    for (int q = 0; q < NHM; q++) agree[q] += (mask >> q) & 1;
                }
        int best = 0;
        for (int q = 0; q < NHM; q++) {
            cnt[q][4] += agree[q];
            if (agree[q] > agree[best]) best = q;
        }
        tot[4] += NF * 512;
        printf("# full random matrices (zero_c %d): gpu == per-element model bitwise:", zc);
        for (int q = 0; q < NHM; q++) printf(" %s %d", hm[q].name, agree[q]);
        printf(" (of %d)\n", NF * 512);
        int shown = 0;
        for (int i = 0; i < NF && shown < 20; i++)
            for (int m = 0; m < 64 && shown < 20; m++)
                for (int j = 0; j < 8 && shown < 20; j++) {
                    const float g = fd[i * 512 + m * 8 + j];
                    const float x = hchain(best, fc[i * 512 + m * 8 + j], xa + i * 1024 + m * 16, xb + i * 128 + j * 16,
                                           1, zc);
                    if (memcmp(&x, &g, sizeof g))
                        printf("full zero_c=%d case %d m=%d n=%d: gpu %-16a %s %a\n", zc, i, m, j, (double)g,
                               hm[best].name, (double)x), shown++;
                }
        if (best >= HM_FAMILY) continue; /* the shared-alignment alternatives are of the model family */
        /* alternatives: one alignment shared by a block of gr rows x gc columns of the 64 x 8 outputs,
         * for the best per-element model */
        for (int gr = 1; gr <= 64; gr *= 2)
            for (int gcol = 1; gcol <= 8; gcol *= 2) {
                if (gr == 1 && gcol == 1) continue;
                int ok = 0;
                for (int i = 0; i < NF; i++)
                    for (int m0 = 0; m0 < 64; m0 += gr)
                        for (int j0 = 0; j0 < 8; j0 += gcol) {
                            int top = INT_MIN;
                            for (int m = m0; m < m0 + gr; m++)
                                for (int j = j0; j < j0 + gcol; j++) {
                                    const int t = dl_hgmma_top(zc ? 0.0f : fc[i * 512 + m * 8 + j], xa + i * 1024 + m * 16,
                                                               xb + i * 128 + j * 16, 16, hm[best].flags);
                                    if (t > top) top = t;
                                }
                            for (int m = m0; m < m0 + gr; m++)
                                for (int j = j0; j < j0 + gcol; j++) {
                                    const float x = dl_hgmma_sum(zc ? 0.0f : fc[i * 512 + m * 8 + j], xa + i * 1024 + m * 16,
                                                                 xb + i * 128 + j * 16, 16, top, hm[best].bits,
                                                                 hm[best].flags);
                                    ok += !memcmp(&x, &fd[i * 512 + m * 8 + j], sizeof x);
                                }
                        }
                printf("# full random matrices (zero_c %d): %s with one alignment per %d rows x %d columns: gpu == it "
                       "on %d of %d outputs\n", zc, hm[best].name, gr, gcol, ok, NF * 512);
            }
    }
    if (!rc) {
        for (int m = 0; m < NHM; m++)
            printf("# summary %-8s cases %d/%d, as chains of 2 %d/%d, of 4 %d/%d; random chains %d/%d; full-matrix "
                   "outputs %d/%d\n", hm[m].name, cnt[m][0], tot[0], cnt[m][1], tot[1], cnt[m][2], tot[2], cnt[m][3],
                   tot[3], cnt[m][4], tot[4]);
        printf("# summary launches whose 512 outputs disagree (a layout error if any): %d\n", nonuniform);
        if (nonuniform) rc = 1;
    }
out:
    if (rc < 0) rc = dl_cli_error("probe");
    free(v), free(c), free(d), free(fa), free(fb), free(u);
    free(fc), free(fd), free(xa), free(xb), free(ca), free(cb);
    return rc;
}

static void list(void)
{
    printf("#name\tkernel\tforms\tper_thread\twarps\tptx\tnote\n");
    for (int i = 0; i < dl_num_probes; i++) {
        const dl_probe *p = &dl_probes[i];
        printf("%s\t%s\t%s\t%d\t%d\t%s\t%s\n", p->name, p->kernel, p->form, p->count, DL_PROBE_THREADS / 32, p->ptx,
               p->note);
    }
}

enum { O_HELP = 'h', O_LIST = 256, O_RUN, O_WGMMA, O_HGMMA };

static const struct option probe_opts[] = {
    {"help", no_argument, 0, O_HELP},
    {"list", no_argument, 0, O_LIST},
    {"run", required_argument, 0, O_RUN},
    {"wgmma-acc", no_argument, 0, O_WGMMA},
    {"hgmma-acc", no_argument, 0, O_HGMMA},
    {0, 0, 0, 0},
};

/* --run NAME into *run, --wgmma-acc into *wgmma (1), --hgmma-acc into *wgmma (2). 0 ok, 1 help
 * printed, -1 error (recorded). */
static int parse_probe(int argc, char **argv, const char **run, int *wgmma)
{
    opterr = 0;
    optind = 0;
    for (int code; (code = getopt_long(argc, argv, ":h", probe_opts, NULL)) != -1;) {
        switch (code) {
        case O_HELP: probe_help(stdout); return 1;
        case O_LIST: break; /* the default */
        case O_WGMMA:
        case O_HGMMA:
            if (*wgmma && *wgmma != (code == O_WGMMA ? 1 : 2))
                return dl_fail("--wgmma-acc and --hgmma-acc: one at a time");
            *wgmma = code == O_WGMMA ? 1 : 2;
            break;
        case O_RUN:
            if (strcmp(optarg, "all") && dl_probe_find(optarg) < 0)
                return dl_fail("--run: no probe named '%s' (see decodelab probe --list)", optarg);
            *run = optarg;
            break;
        default: return dl_cli_getopt_fail("probe", code, argv);
        }
    }
    if (optind < argc) return dl_fail("unexpected argument '%s' (see decodelab probe --help)", argv[optind]);
    return 0;
}

int dl_cmd_probe(int argc, char **argv)
{
    const char *run = NULL;
    int wgmma = 0;
    int rc = parse_probe(argc, argv, &run, &wgmma);
    if (rc == 1) return 0;
    if (rc) return dl_cli_error("probe");
    if (wgmma) return wgmma == 1 ? wgmma_acc() : hgmma_acc();
    if (!run) {
        list();
        return 0;
    }
    const int one = strcmp(run, "all") ? dl_probe_find(run) : -1;
    dl_clear_error();
    if (dl_gpu_device_count() <= 0) {
        const char *why = dl_last_error();
        if (!strncmp(why, "no CUDA device: ", 16)) why += 16;
        printf("no CUDA device (%s): nothing launched; would run:\n", why);
        for (int i = 0; i < dl_num_probes; i++)
            if (one < 0 || one == i)
                printf("  %-16s %-28s %3d x %s per thread\n", dl_probes[i].name, dl_probes[i].kernel, dl_probes[i].count,
                       dl_probes[i].form);
        return 0;
    }
    int failed = 0;
    for (int i = 0; i < dl_num_probes; i++) {
        if (one >= 0 && one != i) continue;
        uint32_t sum = 0;
        if (dl_probe_launch(i, &sum)) {
            printf("%-16s FAIL: %s\n", dl_probes[i].name, dl_last_error());
            dl_clear_error();
            failed = 1;
            continue;
        }
        printf("%-16s %-28s launched 1 x %d threads, checksum %08x\n", dl_probes[i].name, dl_probes[i].kernel,
               DL_PROBE_THREADS, (unsigned)sum);
    }
    return failed;
}

/* test_ref.c - Check suite of the CPU reference (ref/dl_ref.c): closed-form
 * cases (equal keys, one dominant key, length 1), invariances (GQA = MHA with
 * duplicated heads, NHD = HND, page size and page permutation), lse against a
 * naive double loop written here, every model near exact, the reduced FP8
 * accumulator, determinism across thread counts, and error paths.
 *
 * Expected values are computed here from the stored inputs with this file's own
 * page-table walk (test_offset), never taken from the output under test. */
#include "../ref/dl_formats.h"
#include "../ref/dl_paged.h"
#include "../ref/dl_ref.h"
#include "../ref/dl_rng.h"
#include "dl_test.h"

#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

static dl_config small_cfg(int64_t B, int64_t Hq, int64_t Hkv, int64_t D, int64_t page, dl_layout layout,
                           dl_dtype kv, const int64_t *lens, uint64_t seed)
{
    dl_config cfg;
    dl_test_shape(&cfg, B, Hq, Hkv, D, page);
    dl_test_lens(&cfg, lens);
    cfg.kv_layout = layout;
    cfg.kv_dtype = kv;
    cfg.seed = seed;
    return cfg;
}

/* small_cfg built into *c (the test fails if it is refused). */
static void small_case(dl_case *c, int64_t B, int64_t Hq, int64_t Hkv, int64_t D, int64_t page, dl_layout layout,
                       dl_dtype kv, const int64_t *lens, uint64_t seed)
{
    dl_config cfg = small_cfg(B, Hq, Hkv, D, page, layout, kv, lens, seed);
    dl_test_build(&cfg, c);
}

/* dl_output_free on each output given, up to a NULL. */
static void free_outputs(dl_output *o, ...)
{
    va_list ap;
    va_start(ap, o);
    for (; o; o = va_arg(ap, dl_output *)) dl_output_free(o);
    va_end(ap);
}

static void run_model(const dl_case *c, dl_model m, const dl_model_params *p, dl_output *out)
{
    int rc = dl_reference(c, m, p, out);
    ck_assert_msg(rc == 0, "dl_reference(%s): %s", dl_model_name(m), dl_last_error());
}

/* Sequence length and element offset of (b, t, kv head g, d=0), computed here
 * from the page table and the layout definitions, independently of dl_paged.c. */
static int64_t test_len(const dl_case *c, int64_t b)
{
    return (int64_t)(c->kv_indptr[b + 1] - c->kv_indptr[b] - 1) * c->cfg.page_size + c->kv_last_page_len[b];
}

static int64_t test_offset(const dl_case *c, int64_t b, int64_t t, int64_t g)
{
    const dl_config *f = &c->cfg;
    int64_t ps = f->page_size, page = c->kv_indices[c->kv_indptr[b] + t / ps], slot = t % ps;
    if (f->kv_layout == DL_NHD) return ((page * ps + slot) * f->num_kv_heads + g) * f->head_dim;
    return ((page * f->num_kv_heads + g) * ps + slot) * f->head_dim;
}

static double kval(const dl_case *c, int64_t b, int64_t t, int64_t g, int64_t d)
{
    return (double)dl_decode_elem(c->cfg.kv_dtype, c->k_cache, test_offset(c, b, t, g) + d) * c->k_scale[g];
}

static double vval(const dl_case *c, int64_t b, int64_t t, int64_t g, int64_t d)
{
    return (double)dl_decode_elem(c->cfg.kv_dtype, c->v_cache, test_offset(c, b, t, g) + d) * c->v_scale[g];
}

static double qval(const dl_case *c, int64_t b, int64_t h, int64_t d)
{
    return (double)dl_decode_elem(c->cfg.q_dtype, c->q, (b * c->cfg.num_qo_heads + h) * c->cfg.head_dim + d);
}

/* score s_j = sm_scale * q.k_j in double */
static double score(const dl_case *c, int64_t b, int64_t h, int64_t t)
{
    int64_t g = h / dl_group_size(&c->cfg);
    double s = 0.0;
    for (int64_t d = 0; d < c->cfg.head_dim; d++) s += qval(c, b, h, d) * kval(c, b, t, g, d);
    return dl_sm_scale(&c->cfg) * s;
}

/* Attention by its definition, two passes in double: o [B,Hq,D], lse [B,Hq]. */
static void naive(const dl_case *c, double *o, double *lse)
{
    const dl_config *f = &c->cfg;
    int64_t D = f->head_dim, G = dl_group_size(f);
    for (int64_t b = 0; b < f->batch_size; b++) {
        int64_t len = test_len(c, b);
        double *s = malloc((size_t)len * sizeof(double));
        for (int64_t h = 0; h < f->num_qo_heads; h++) {
            double mx = -INFINITY, sum = 0.0;
            for (int64_t t = 0; t < len; t++) {
                s[t] = score(c, b, h, t);
                if (s[t] > mx) mx = s[t];
            }
            for (int64_t t = 0; t < len; t++) sum += exp(s[t] - mx);
            lse[b * f->num_qo_heads + h] = mx + log(sum);
            for (int64_t d = 0; d < D; d++) {
                double acc = 0.0;
                for (int64_t t = 0; t < len; t++) acc += exp(s[t] - mx) * vval(c, b, t, h / G, d);
                o[(b * f->num_qo_heads + h) * D + d] = acc / sum;
            }
        }
        free(s);
    }
}

static double rel_l2(const double *a, const double *ref, int64_t n)
{
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        num += (a[i] - ref[i]) * (a[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return sqrt(num / (den > 0.0 ? den : 1.0));
}

static double max_abs_diff(const double *a, const double *b, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]);
        if (!(e <= m)) m = e; /* NaN wins */
    }
    return m;
}

static int all_finite(const dl_output *o)
{
    int64_t n = o->batch_size * o->num_qo_heads;
    for (int64_t i = 0; i < n * o->head_dim; i++)
        if (!isfinite(o->o[i])) return 0;
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(o->lse[i])) return 0;
    return 1;
}

static int outputs_identical(const dl_output *a, const dl_output *b)
{
    int64_t n = a->batch_size * a->num_qo_heads;
    return a->batch_size == b->batch_size && a->num_qo_heads == b->num_qo_heads && a->head_dim == b->head_dim &&
           memcmp(a->o, b->o, (size_t)(n * a->head_dim) * sizeof(double)) == 0 &&
           memcmp(a->lse, b->lse, (size_t)n * sizeof(double)) == 0;
}

/* Assert |a - ref| <= tol * max(1, max|ref|) element-wise, for o and lse. */
static void assert_close(const dl_output *a, const double *o_ref, const double *lse_ref, double tol, const char *what)
{
    int64_t n = a->batch_size * a->num_qo_heads, no = n * a->head_dim;
    double so = 1.0, sl = 1.0;
    for (int64_t i = 0; i < no; i++) so = fmax(so, fabs(o_ref[i]));
    for (int64_t i = 0; i < n; i++) sl = fmax(sl, fabs(lse_ref[i]));
    double eo = max_abs_diff(a->o, o_ref, no), el = max_abs_diff(a->lse, lse_ref, n);
    ck_assert_msg(eo <= tol * so, "%s (%s): o max abs error %.3g > %.3g", what, dl_model_name(a->model), eo, tol * so);
    ck_assert_msg(el <= tol * sl, "%s (%s): lse max abs error %.3g > %.3g", what, dl_model_name(a->model), el,
                  tol * sl);
}

/* The closed-form o and lse: exact within 1e-12, fp32 within 1e-5. */
static void assert_exact_and_fp32(const dl_case *c, const double *o, const double *lse, const char *what)
{
    dl_output out;
    run_model(c, DL_MODEL_EXACT, NULL, &out);
    assert_close(&out, o, lse, 1e-12, what);
    dl_output_free(&out);
    run_model(c, DL_MODEL_FP32, NULL, &out);
    assert_close(&out, o, lse, 1e-5, what);
    dl_output_free(&out);
}

/* Every token of requests b < nb, KV heads g < ng, takes the raw codes of token 0 in cache
 * (c->k_cache or c->v_cache; D elements each). */
static void copy_token0(dl_case *c, void *cache, int64_t nb, int64_t ng, int64_t D)
{
    const size_t esz = dl_dtype_size(c->cfg.kv_dtype);
    for (int64_t b = 0; b < nb; b++)
        for (int64_t g = 0; g < ng; g++)
            for (int64_t t = 1; t < test_len(c, b); t++)
                memcpy((char *)cache + (size_t)test_offset(c, b, t, g) * esz,
                       (char *)cache + (size_t)test_offset(c, b, 0, g) * esz, (size_t)D * esz);
}

/* Deterministic test value in [-3, 3) for a logical position. */
static double logical_value(uint64_t seed, uint64_t stream, int64_t b, int64_t t, int64_t g, int64_t d)
{
    uint64_t idx = ((((uint64_t)b * 4096 + (uint64_t)t) * 64 + (uint64_t)g) * 1024) + (uint64_t)d;
    return 6.0 * dl_rng_uniform(seed, stream, idx) - 3.0;
}

/* Overwrite Q, K, V and the scales with values that depend only on the logical
 * position (b, h, t, d), written through test_offset: two cases with the same
 * lengths and heads then hold the same logical data whatever their layout,
 * page size or page order. */
static void fill_logical(dl_case *c, uint64_t seed)
{
    const dl_config *f = &c->cfg;
    for (int64_t g = 0; g < f->num_kv_heads; g++) {
        c->k_scale[g] = 0.5f + 0.25f * (float)g;
        c->v_scale[g] = 1.0f - 0.125f * (float)(g % 4);
    }
    for (int64_t b = 0; b < f->batch_size; b++) {
        for (int64_t h = 0; h < f->num_qo_heads; h++)
            for (int64_t d = 0; d < f->head_dim; d++)
                dl_encode_elem(f->q_dtype, c->q, (b * f->num_qo_heads + h) * f->head_dim + d,
                               (float)logical_value(seed, 1, b, 0, h, d));
        for (int64_t t = 0; t < test_len(c, b); t++)
            for (int64_t g = 0; g < f->num_kv_heads; g++)
                for (int64_t d = 0; d < f->head_dim; d++) {
                    int64_t off = test_offset(c, b, t, g) + d;
                    dl_encode_elem(f->kv_dtype, c->k_cache, off, (float)logical_value(seed, 2, b, t, g, d));
                    dl_encode_elem(f->kv_dtype, c->v_cache, off, (float)logical_value(seed, 3, b, t, g, d));
                }
    }
}

static const dl_model emulated[] = {DL_MODEL_FP32, DL_MODEL_BF16, DL_MODEL_FP8};

/* Compute exact and the emulated models of two cases that hold the same
 * logical data: exact within rel_tol, emulated models bit-identical. */
static void assert_same_outputs(const dl_case *a, const dl_case *b, double rel_tol, const char *what)
{
    dl_output oa, ob;
    run_model(a, DL_MODEL_EXACT, NULL, &oa);
    run_model(b, DL_MODEL_EXACT, NULL, &ob);
    assert_close(&ob, oa.o, oa.lse, rel_tol, what);
    free_outputs(&oa, &ob, NULL);
    for (size_t i = 0; i < sizeof emulated / sizeof *emulated; i++) {
        run_model(a, emulated[i], NULL, &oa);
        run_model(b, emulated[i], NULL, &ob);
        ck_assert_msg(outputs_identical(&oa, &ob), "%s: model %s differs", what, dl_model_name(emulated[i]));
        free_outputs(&oa, &ob, NULL);
    }
}

/* ---------------------------------------------------------------- tests */

START_TEST(test_lse_definition)
{
    const int64_t lens[] = {1, 15, 16, 17, 100};
    dl_case c;
    small_case(&c, 5, 8, 2, 32, 16, DL_NHD, DL_E4M3, lens, 11);
    int64_t n = 5 * 8;
    double *o = malloc((size_t)(n * 32) * sizeof(double)), *lse = malloc((size_t)n * sizeof(double));
    naive(&c, o, lse);
    dl_output out;
    run_model(&c, DL_MODEL_EXACT, NULL, &out);
    ck_assert_int_eq(out.model, DL_MODEL_EXACT);
    ck_assert_int_eq(out.batch_size, 5);
    ck_assert_int_eq(out.num_qo_heads, 8);
    ck_assert_int_eq(out.head_dim, 32);
    assert_close(&out, o, lse, 1e-12, "exact vs naive definition");
    dl_output_free(&out);
    free(o);
    free(lse);
    dl_case_free(&c);
}
END_TEST

START_TEST(test_all_keys_equal)
{
    const int64_t lens[] = {3, 16, 41};
    dl_case c;
    small_case(&c, 3, 4, 2, 16, 8, DL_HND, DL_E4M3, lens, 5);
    const int64_t B = 3, Hq = 4, D = 16, G = 2;
    /* every key of (b, g) := the key of token 0 (raw codes copied) */
    copy_token0(&c, c.k_cache, B, 2, D);
    double o[3 * 4 * 16], lse[3 * 4];
    for (int64_t b = 0; b < B; b++) {
        int64_t len = test_len(&c, b);
        for (int64_t h = 0; h < Hq; h++) {
            lse[b * Hq + h] = log((double)len) + score(&c, b, h, 0);
            for (int64_t d = 0; d < D; d++) {
                double m = 0.0;
                for (int64_t t = 0; t < len; t++) m += vval(&c, b, t, h / G, d);
                o[(b * Hq + h) * D + d] = m / (double)len;
            }
        }
    }
    assert_exact_and_fp32(&c, o, lse, "all keys equal");
    dl_output out;
    /* fp8: all P equal 1 -> e4m3(448) = 448 exactly, so o is the float mean of V */
    run_model(&c, DL_MODEL_FP8, NULL, &out);
    ck_assert_msg(max_abs_diff(out.o, o, B * Hq * D) < 1e-5, "fp8 all keys equal: o is not the mean of V");
    dl_output_free(&out);
    dl_case_free(&c);
}
END_TEST

START_TEST(test_dominant_key)
{
    const int64_t lens[] = {50, 40, 64};
    dl_config cfg = small_cfg(3, 2, 2, 32, 16, DL_NHD, DL_F16, lens, 7);
    cfg.q_dtype = DL_F32;
    dl_case c;
    dl_test_build(&cfg, &c);
    const int64_t B = 3, H = 2, D = 32;
    double sm = dl_sm_scale(&cfg);
    double o[3 * 2 * 32], lse[3 * 2];
    for (int64_t g = 0; g < H; g++) c.k_scale[g] = 1.0f;
    for (int64_t b = 0; b < B; b++) {
        int64_t len = test_len(&c, b), js = len - 3;
        for (int64_t h = 0; h < H; h++) {
            double qq = 0.0;
            for (int64_t d = 0; d < D; d++) qq += qval(&c, b, h, d) * qval(&c, b, h, d);
            double alpha = 80.0 / (sm * qq); /* k_js = alpha q: score about 80, others 0 */
            for (int64_t t = 0; t < len; t++)
                for (int64_t d = 0; d < D; d++)
                    dl_encode_elem(cfg.kv_dtype, c.k_cache, test_offset(&c, b, t, h) + d,
                                   t == js ? (float)(alpha * qval(&c, b, h, d)) : 0.0f);
            double s = score(&c, b, h, js);
            ck_assert_msg(s > 70.0, "dominant score %.3g too small", s);
            lse[b * H + h] = s;
            for (int64_t d = 0; d < D; d++) o[(b * H + h) * D + d] = vval(&c, b, js, h, d);
        }
    }
    assert_exact_and_fp32(&c, o, lse, "dominant key");
    dl_case_free(&c);
}
END_TEST

START_TEST(test_length_one)
{
    const int64_t lens[] = {1, 1, 1};
    dl_config cfg = small_cfg(3, 6, 2, 24, 4, DL_NHD, DL_E5M2, lens, 3);
    dl_case c;
    dl_test_build(&cfg, &c);
    const int64_t B = 3, Hq = 6, D = 24, G = 3;
    double o[3 * 6 * 24], lse[3 * 6];
    double o32[3 * 6 * 24];
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++) {
            lse[b * Hq + h] = score(&c, b, h, 0);
            for (int64_t d = 0; d < D; d++) {
                int64_t off = test_offset(&c, b, 0, h / G) + d;
                o[(b * Hq + h) * D + d] = vval(&c, b, 0, h / G, d);
                /* the fp32 model dequantizes in float: code * scale, rounded once */
                o32[(b * Hq + h) * D + d] = (double)(dl_decode_elem(cfg.kv_dtype, c.v_cache, off) * c.v_scale[h / G]);
            }
        }
    /* the documented float arithmetic of the score: dot in index order, then * sm_scale;
     * with one token lse = m + logf(1) = s_0 exactly */
    double lse32[3 * 6], lse16[3 * 6];
    const float smf = (float)dl_sm_scale(&cfg);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++) {
            float a32 = 0.0f, a16 = 0.0f, ks = c.k_scale[h / G];
            for (int64_t d = 0; d < D; d++) {
                float qf = (float)qval(&c, b, h, d);
                float code = dl_decode_elem(cfg.kv_dtype, c.k_cache, test_offset(&c, b, 0, h / G) + d);
                a32 += qf * (code * ks);
                /* bf16 model: scale folded into the score scale, not into the element */
                a16 += dl_round_bf16(qf) * dl_round_bf16(code);
            }
            lse32[b * Hq + h] = (double)(a32 * smf);
            lse16[b * Hq + h] = (double)(a16 * (smf * ks));
        }
    dl_output out;
    run_model(&c, DL_MODEL_EXACT, NULL, &out);
    assert_close(&out, o, lse, 1e-12, "length 1");
    dl_output_free(&out);
    run_model(&c, DL_MODEL_FP32, NULL, &out);
    ck_assert_msg(memcmp(out.o, o32, sizeof o32) == 0, "fp32 length 1: o is not exactly v_0");
    ck_assert_msg(max_abs_diff(out.lse, lse, B * Hq) < 1e-4, "fp32 length 1: lse is not near s_0");
    ck_assert_msg(memcmp(out.lse, lse32, sizeof lse32) == 0, "fp32 length 1: lse is not the float s_0");
    dl_output_free(&out);
    /* bf16: P = 1 is exact, so o is bf16(decode(v_0 code)) * v_scale, one float multiply */
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t d = 0; d < D; d++) {
                float code = dl_decode_elem(cfg.kv_dtype, c.v_cache, test_offset(&c, b, 0, h / G) + d);
                o32[(b * Hq + h) * D + d] = (double)(dl_round_bf16(code) * c.v_scale[h / G]);
            }
    run_model(&c, DL_MODEL_BF16, NULL, &out);
    ck_assert_msg(memcmp(out.o, o32, sizeof o32) == 0, "bf16 length 1: o is not bf16(code of v_0) * v_scale");
    ck_assert_msg(max_abs_diff(out.lse, lse, B * Hq) < 5e-2, "bf16 length 1: lse is not near s_0");
    ck_assert_msg(memcmp(out.lse, lse16, sizeof lse16) == 0, "bf16 length 1: lse is not the bf16-product s_0");
    dl_output_free(&out);
    /* fp8: P = 1 -> e4m3(448) = 448 exactly; o = 448 code / 1 * (v_scale / 448) = v_0 within float rounding */
    run_model(&c, DL_MODEL_FP8, NULL, &out);
    ck_assert_msg(max_abs_diff(out.o, o, B * Hq * D) < 1e-6, "fp8 length 1: o is not v_0");
    dl_output_free(&out);
    dl_case_free(&c);
}
END_TEST

/* The normalizer is the sum of the FP32 P, not of the rounded P that multiplies
 * V (dl_ref.h). With every value row equal to v, fp32 gives o = v, while bf16
 * and fp8 give v * sum(rounded p) / sum(p): close to v, but not equal. */
START_TEST(test_normalizer_uses_float_p)
{
    const int64_t lens[] = {90, 200};
    dl_config cfg = small_cfg(2, 4, 2, 32, 16, DL_NHD, DL_E4M3, lens, 13);
    cfg.q_dtype = DL_F32;
    dl_case c;
    dl_test_build(&cfg, &c);
    copy_token0(&c, c.v_cache, 2, 2, 32);
    double v[2 * 4 * 32];
    for (int64_t b = 0; b < 2; b++)
        for (int64_t h = 0; h < 4; h++)
            for (int64_t d = 0; d < 32; d++) { /* float dequant, as the emulated models do */
                float code = dl_decode_elem(cfg.kv_dtype, c.v_cache, test_offset(&c, b, 0, h / 2) + d);
                v[(b * 4 + h) * 32 + d] = (double)(code * c.v_scale[h / 2]);
            }
    const int64_t n = 2 * 4 * 32;
    dl_output out;
    run_model(&c, DL_MODEL_FP32, NULL, &out);
    ck_assert_msg(rel_l2(out.o, v, n) < 1e-6, "fp32: o != v with equal value rows");
    dl_output_free(&out);
    const dl_model rounded[] = {DL_MODEL_BF16, DL_MODEL_FP8};
    for (int i = 0; i < 2; i++) {
        double vr[2 * 4 * 32]; /* v as the model holds it: bf16 rounds the decoded code (exact for e4m3)
                                  and scales the output, fp8 keeps the codes */
        for (int64_t j = 0; j < n; j++) {
            const int64_t b = j / 128, h = (j / 32) % 4, d = j % 32;
            float code = dl_decode_elem(cfg.kv_dtype, c.v_cache, test_offset(&c, b, 0, h / 2) + d);
            vr[j] = rounded[i] == DL_MODEL_BF16 ? (double)(dl_round_bf16(code) * c.v_scale[h / 2]) : v[j];
        }
        run_model(&c, rounded[i], NULL, &out);
        double e = rel_l2(out.o, vr, n);
        ck_assert_msg(e > 1e-5 && e < 5e-2, "%s: o vs v rel L2 %.3g, expected the P-rounding bias (1e-5..5e-2)",
                      dl_model_name(rounded[i]), e);
        dl_output_free(&out);
    }
    dl_case_free(&c);
}
END_TEST

/* A strong sink: one key scores 12 above 16383 equal others, so the normalizer is ~1.1 made of one
 * term 1 and 16383 terms exp(-12) ~ 6e-6. A float running sum rounds every one of those adds the same
 * way and drifts (checked here: the emulated sequential float sum is off by more than 1e-5); the
 * models keep the sum in double (dl_ref.c header, issue 13), so the lse of fp32, bf16 and fp8 (none of
 * which rounds this Q) stays within float rounding of the scores (~1e-6 at |s| ~ 6) of the exact one. */
START_TEST(test_normalizer_no_drift_at_strong_sink)
{
    const int64_t n = 16384, D = 32;
    const int64_t lens[] = {n};
    dl_config cfg = small_cfg(1, 1, 1, D, 16, DL_NHD, DL_E4M3, lens, 29);
    cfg.q_dtype = DL_F32;
    dl_case c;
    dl_test_build(&cfg, &c);
    copy_token0(&c, c.k_cache, 1, 1, D);
    uint8_t *k0 = (uint8_t *)c.k_cache + test_offset(&c, 0, 0, 0);
    double a = 0.0; /* sum of |k_d| of the common key */
    for (int64_t d = 0; d < D; d++) a += fabs(kval(&c, 0, 1, 0, d));
    ck_assert_msg(a > 0.0, "the common key is all zero");
    for (int64_t d = 0; d < D; d++) k0[d] ^= 0x80u; /* the sink: the common key negated */
    /* s_0 = +s0, every other s = -s0, s0 ~ 6; t a bf16 value so that no model rounds Q (fp8 scales Q by
     * amax / 448: every |q_d| = t becomes the code 448 exactly) */
    const double sm = dl_sm_scale(&c.cfg), t = dl_round_bf16((float)(6.0 / (sm * a))), s0 = sm * a * t;
    float *q = (float *)c.q;
    for (int64_t d = 0; d < D; d++) {
        q[d] = (float)(kval(&c, 0, 1, 0, d) < 0.0 ? t : -t);
        if (c.q_orig) c.q_orig[d] = q[d];
    }
    /* the premise: a sequential float sum of these terms drifts */
    const float p_other = expf((float)(-2.0 * s0));
    float fsum = 1.0f;
    for (int64_t j = 1; j < n; j++) fsum += p_other;
    const double dsum = 1.0 + (double)(n - 1) * (double)p_other;
    ck_assert_msg(fabs(fsum - dsum) / dsum > 1e-5, "premise: the float sum drifts only %.3g",
                  fabs(fsum - dsum) / dsum);
    dl_output ex, m;
    run_model(&c, DL_MODEL_EXACT, NULL, &ex);
    ck_assert_msg(fabs(ex.lse[0] - (s0 + log(dsum))) < 1e-4, "exact lse %.9g, expected about %.9g", ex.lse[0],
                  s0 + log(dsum));
    const dl_model models[] = {DL_MODEL_FP32, DL_MODEL_BF16, DL_MODEL_FP8};
    for (int i = 0; i < 3; i++) {
        run_model(&c, models[i], NULL, &m);
        const double tol = 4e-6, e = fabs(m.lse[0] - ex.lse[0]);
        ck_assert_msg(e < tol, "%s: lse off the exact model's by %.3g (limit %.3g)", dl_model_name(models[i]), e, tol);
        dl_output_free(&m);
    }
    dl_output_free(&ex);
    dl_case_free(&c);
}
END_TEST

/* The bf16 model folds v_scale into the output instead of rounding
 * bf16(decode(code) * v_scale) per element (dl_ref.h): on an f16 cache (where
 * bf16(decode(code)) is a real rounding), o with v_scale = s is exactly the
 * float product (o with v_scale = 1) * s, and lse does not depend on v_scale. */
START_TEST(test_bf16_v_scale_folded)
{
    const int64_t lens[] = {1, 70, 129};
    dl_case c;
    small_case(&c, 3, 4, 2, 32, 16, DL_HND, DL_F16, lens, 17);
    const int64_t n = 3 * 4, no = n * 32;
    c.v_scale[0] = 1.0f;
    c.v_scale[1] = 1.0f;
    dl_output one, scaled;
    run_model(&c, DL_MODEL_BF16, NULL, &one);
    const float s[2] = {0.7f, 3.3f};
    c.v_scale[0] = s[0];
    c.v_scale[1] = s[1];
    run_model(&c, DL_MODEL_BF16, NULL, &scaled);
    for (int64_t i = 0; i < no; i++) {
        const int64_t h = (i / 32) % 4;
        const double want = (double)((float)one.o[i] * s[h / 2]);
        ck_assert_msg(scaled.o[i] == want, "o[%lld] = %.9g, expected bf16-model o(v_scale=1) * %g = %.9g",
                      (long long)i, scaled.o[i], (double)s[h / 2], want);
    }
    ck_assert_msg(memcmp(one.lse, scaled.lse, (size_t)n * sizeof(double)) == 0, "lse depends on v_scale");
    free_outputs(&one, &scaled, NULL);
    dl_case_free(&c);
}
END_TEST

START_TEST(test_gqa_equals_mha)
{
    const int64_t lens[] = {5, 33, 70};
    const int64_t B = 3, Hq = 8, D = 16, G = 4;
    dl_config cg = small_cfg(B, Hq, 2, D, 8, DL_NHD, DL_E4M3, lens, 21);
    dl_config cm = small_cfg(B, Hq, Hq, D, 8, DL_NHD, DL_E4M3, lens, 22);
    dl_case gq, mh;
    dl_test_build(&cg, &gq);
    dl_test_build(&cm, &mh);
    size_t esz = dl_dtype_size(cg.kv_dtype);
    memcpy(mh.q, gq.q, (size_t)(B * Hq * D) * dl_dtype_size(cg.q_dtype));
    for (int64_t h = 0; h < Hq; h++) {
        mh.k_scale[h] = gq.k_scale[h / G];
        mh.v_scale[h] = gq.v_scale[h / G];
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < test_len(&gq, b); t++)
            for (int64_t h = 0; h < Hq; h++) {
                memcpy((char *)mh.k_cache + (size_t)test_offset(&mh, b, t, h) * esz,
                       (char *)gq.k_cache + (size_t)test_offset(&gq, b, t, h / G) * esz, (size_t)D * esz);
                memcpy((char *)mh.v_cache + (size_t)test_offset(&mh, b, t, h) * esz,
                       (char *)gq.v_cache + (size_t)test_offset(&gq, b, t, h / G) * esz, (size_t)D * esz);
            }
    assert_same_outputs(&gq, &mh, 1e-12, "GQA vs MHA with duplicated KV heads");
    dl_case_free(&gq);
    dl_case_free(&mh);
}
END_TEST

START_TEST(test_nhd_equals_hnd)
{
    const int64_t lens[] = {9, 32, 1, 47};
    dl_config cn = small_cfg(4, 10, 2, 16, 16, DL_NHD, DL_E4M3, lens, 31);
    dl_config ch = small_cfg(4, 10, 2, 16, 16, DL_HND, DL_E4M3, lens, 31);
    dl_case a, b;
    dl_test_build(&cn, &a);
    dl_test_build(&ch, &b);
    fill_logical(&a, 99);
    fill_logical(&b, 99);
    assert_same_outputs(&a, &b, 1e-12, "NHD vs HND");
    dl_case_free(&a);
    dl_case_free(&b);
}
END_TEST

START_TEST(test_page_size_and_order)
{
    const int64_t lens[] = {1, 16, 17, 63, 130};
    const int64_t pages[] = {16, 1, 5, 64};
    dl_case base;
    dl_config c0 = small_cfg(5, 4, 1, 32, pages[0], DL_NHD, DL_BF16, lens, 41);
    dl_test_build(&c0, &base);
    fill_logical(&base, 7);
    for (size_t i = 1; i < sizeof pages / sizeof *pages; i++) {
        dl_config ci = small_cfg(5, 4, 1, 32, pages[i], i % 2 ? DL_HND : DL_NHD, DL_BF16, lens, 41 + i);
        dl_case other;
        dl_test_build(&ci, &other);
        fill_logical(&other, 7);
        char what[64];
        snprintf(what, sizeof what, "page size 16 vs %lld", (long long)pages[i]);
        assert_same_outputs(&base, &other, 1e-12, what);
        dl_case_free(&other);
    }
    /* permute the physical pages: page p moves to P-1-p, the page table follows */
    dl_case perm;
    dl_test_build(&c0, &perm);
    fill_logical(&perm, 7);
    int64_t P = perm.num_pages, page_elems = c0.page_size * c0.num_kv_heads * c0.head_dim;
    size_t pb = (size_t)page_elems * dl_dtype_size(c0.kv_dtype);
    char *k2 = malloc((size_t)P * pb), *v2 = malloc((size_t)P * pb);
    for (int64_t p = 0; p < P; p++) {
        memcpy(k2 + (size_t)(P - 1 - p) * pb, (char *)perm.k_cache + (size_t)p * pb, pb);
        memcpy(v2 + (size_t)(P - 1 - p) * pb, (char *)perm.v_cache + (size_t)p * pb, pb);
    }
    memcpy(perm.k_cache, k2, (size_t)P * pb);
    memcpy(perm.v_cache, v2, (size_t)P * pb);
    for (int64_t i = 0; i < perm.kv_indptr[c0.batch_size]; i++)
        perm.kv_indices[i] = (int32_t)(P - 1 - perm.kv_indices[i]);
    free(k2);
    free(v2);
    assert_same_outputs(&base, &perm, 1e-12, "page permutation");
    dl_case_free(&perm);
    dl_case_free(&base);
}
END_TEST

/* Every model near exact on normal inputs, with the ordering of their errors. */
static void models_near_exact(dl_dtype kv, double tol_fp8)
{
    dl_config cfg;
    dl_test_shape(&cfg, 4, 8, 2, 64, 16);
    dl_test_ragged(&cfg, 1, 300, 1234);
    cfg.kv_dtype = kv;
    dl_case c;
    dl_test_build(&cfg, &c);
    dl_output ex, out;
    run_model(&c, DL_MODEL_EXACT, NULL, &ex);
    ck_assert(all_finite(&ex));
    int64_t no = 4 * 8 * 64, nl = 4 * 8;
    const dl_model ms[] = {DL_MODEL_FP32, DL_MODEL_BF16, DL_MODEL_FP8, DL_MODEL_ORIG};
    const double tol_o[] = {1e-5, 2e-2, tol_fp8, 1e-1};
    const double tol_lse[] = {1e-5, 5e-2, 2e-1, 2e-1};
    double err[4];
    for (int i = 0; i < 4; i++) {
        run_model(&c, ms[i], NULL, &out);
        ck_assert_msg(all_finite(&out), "%s: non-finite output (poison read?)", dl_model_name(ms[i]));
        err[i] = rel_l2(out.o, ex.o, no);
        double el = max_abs_diff(out.lse, ex.lse, nl);
        ck_assert_msg(err[i] < tol_o[i], "kv=%s %s: rel L2 of o vs exact %.3g >= %.3g", dl_dtype_name(kv),
                      dl_model_name(ms[i]), err[i], tol_o[i]);
        ck_assert_msg(el < tol_lse[i], "kv=%s %s: lse max abs error vs exact %.3g >= %.3g", dl_dtype_name(kv),
                      dl_model_name(ms[i]), el, tol_lse[i]);
        dl_output_free(&out);
    }
    /* the models really compute differently: error grows with coarser arithmetic */
    ck_assert_msg(err[0] > 0.0 && err[0] < err[1] && err[1] < err[2], "errors fp32 %.3g bf16 %.3g fp8 %.3g not ordered",
                  err[0], err[1], err[2]);
    dl_output_free(&ex);
    dl_case_free(&c);
}

START_TEST(test_models_near_exact_e4m3) { models_near_exact(DL_E4M3, 1e-1); }
END_TEST

START_TEST(test_models_near_exact_bf16_cache) { models_near_exact(DL_BF16, 1e-1); }
END_TEST

START_TEST(test_fp8_reduced_accumulator)
{
    const int64_t lens[] = {200, 77, 128};
    dl_case c;
    small_case(&c, 3, 8, 2, 128, 16, DL_NHD, DL_E4M3, lens, 77);
    dl_model_params p;
    dl_model_params_default(&p);
    dl_output ex, full, red;
    run_model(&c, DL_MODEL_EXACT, NULL, &ex);
    run_model(&c, DL_MODEL_FP8, &p, &full);
    p.acc_mantissa_bits = 13;
    run_model(&c, DL_MODEL_FP8, &p, &red);
    int64_t no = 3 * 8 * 128;
    ck_assert_msg(!outputs_identical(&full, &red), "acc_mantissa_bits 13 gives the same output as 23");
    double d = rel_l2(red.o, full.o, no), e = rel_l2(red.o, ex.o, no);
    ck_assert_msg(d > 0.0 && d < 1e-2, "13-bit accumulator vs 23: rel L2 %.3g", d);
    ck_assert_msg(e < 1e-1, "13-bit accumulator vs exact: rel L2 %.3g", e);
    /* 0 means true FP32 too */
    dl_output zero;
    p.acc_mantissa_bits = 0;
    run_model(&c, DL_MODEL_FP8, &p, &zero);
    ck_assert(outputs_identical(&zero, &full));
    free_outputs(&zero, &ex, &full, &red, NULL);
    dl_case_free(&c);
}
END_TEST

/* The P-rounding flip allowance (dl_output.o_flip) bounds what a kernel whose P elements x =
 * p * p_scale sit a relative eta/2 away from the model's can reach: the fp8 model run with
 * p_scale * (1 +- eta/2) rounds the fragile elements the other way (the output scale
 * v_scale / p_scale undone), and every row stays within its allowance; some rows do move, so
 * the bound is exercised, and the models that do not round P to e4m3 give none. */
START_TEST(test_fp8_flip_allowance_bounds)
{
    const int64_t lens[] = {700, 301, 64, 1000};
    dl_case c;
    small_case(&c, 4, 8, 2, 64, 16, DL_NHD, DL_E4M3, lens, 4242);
    dl_model_params p;
    dl_model_params_default(&p);
    const int64_t rows = 4 * 8, D = 64;
    const dl_model ms[] = {DL_MODEL_FP8, DL_MODEL_FP8ACC};
    for (int mi = 0; mi < 2; mi++) {
        dl_output base;
        run_model(&c, ms[mi], &p, &base);
        ck_assert_ptr_nonnull(base.o_flip);
        int moved = 0, fragile = 0;
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            dl_model_params q = p;
            q.p_scale = p.p_scale * (float)(1.0 + sgn * DL_FLIP_ETA / 2);
            dl_output o2;
            run_model(&c, ms[mi], &q, &o2);
            for (int64_t r = 0; r < rows; r++) {
                double e2 = 0.0, r2 = 0.0;
                for (int64_t d = 0; d < D; d++) {
                    const double x = o2.o[r * D + d] * ((double)q.p_scale / (double)p.p_scale), y = base.o[r * D + d];
                    e2 += (x - y) * (x - y);
                    r2 += y * y;
                }
                ck_assert_msg(base.o_flip[r] >= 0.0 && isfinite(base.o_flip[r]), "o_flip[%lld] = %g", (long long)r,
                              base.o_flip[r]);
                ck_assert_msg(sqrt(e2) <= base.o_flip[r] + 1e-6 * sqrt(r2),
                              "%s row %lld, p_scale x (1 %+g eta): moved %.3g, allowance %.3g", dl_model_name(ms[mi]),
                              (long long)r, (double)sgn / 2, sqrt(e2), base.o_flip[r]);
                moved += sqrt(e2) > 1e-6 * sqrt(r2);
                fragile += base.o_flip[r] > 0.0;
            }
            dl_output_free(&o2);
        }
        ck_assert_msg(moved > 0 && fragile > 0, "%s: no row moved (%d) or none fragile (%d): the test has no teeth",
                      dl_model_name(ms[mi]), moved, fragile);
        dl_output_free(&base);
    }
    dl_output none;
    run_model(&c, DL_MODEL_BF16, &p, &none);
    ck_assert_ptr_null(none.o_flip);
    dl_output_free(&none);
    dl_case_free(&c);
}
END_TEST

START_TEST(test_kv_block_changes_little)
{
    const int64_t lens[] = {300, 65};
    dl_case c;
    small_case(&c, 2, 4, 1, 64, 16, DL_NHD, DL_E4M3, lens, 5);
    dl_model_params p;
    dl_model_params_default(&p);
    for (size_t i = 0; i < sizeof emulated / sizeof *emulated; i++) {
        dl_output a, b;
        p.kv_block = 64;
        run_model(&c, emulated[i], &p, &a);
        p.kv_block = 1;
        run_model(&c, emulated[i], &p, &b);
        double tol = emulated[i] == DL_MODEL_FP32 ? 1e-5 : 5e-2;
        ck_assert_msg(rel_l2(b.o, a.o, 2 * 4 * 64) < tol, "%s: kv_block 1 vs 64 too far", dl_model_name(emulated[i]));
        free_outputs(&a, &b, NULL);
    }
    dl_case_free(&c);
}
END_TEST

START_TEST(test_deterministic_threads)
{
    dl_config cfg;
    dl_test_shape(&cfg, 6, 8, 4, 32, 16);
    dl_test_ragged(&cfg, 1, 200, 8);
    dl_case c;
    dl_test_build(&cfg, &c);
    int saved = omp_get_max_threads();
    for (int m = 0; m < DL_MODEL_COUNT; m++) {
        dl_output one, four;
        omp_set_num_threads(1);
        run_model(&c, (dl_model)m, NULL, &one);
        omp_set_num_threads(4);
        run_model(&c, (dl_model)m, NULL, &four);
        ck_assert_msg(outputs_identical(&one, &four), "%s differs between 1 and 4 threads", dl_model_name((dl_model)m));
        free_outputs(&one, &four, NULL);
    }
    omp_set_num_threads(saved);
    dl_case_free(&c);
}
END_TEST

START_TEST(test_names_and_errors)
{
    for (int m = 0; m < DL_MODEL_COUNT; m++) {
        dl_model back;
        ck_assert_int_eq(dl_model_parse(dl_model_name((dl_model)m), &back), 0);
        ck_assert_int_eq(back, m);
        ck_assert(strlen(dl_model_description((dl_model)m)) > 10);
    }
    dl_model x;
    ck_assert_int_ne(dl_model_parse("fp16", &x), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "fp16"));

    dl_model_params p;
    dl_model_params_default(&p);
    ck_assert_int_eq(p.kv_block, 64);
    ck_assert_int_eq(p.acc_mantissa_bits, 23);
    ck_assert_int_eq(p.acc_block, 32);
    ck_assert(p.p_scale == 448.0f);

    const int64_t lens[] = {4};
    dl_case c;
    small_case(&c, 1, 2, 1, 8, 4, DL_NHD, DL_E4M3, lens, 1);
    dl_output out;
    float *keep = c.v_orig;
    c.v_orig = NULL;
    ck_assert_int_ne(dl_reference(&c, DL_MODEL_ORIG, NULL, &out), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "v_orig"));
    ck_assert_ptr_null(out.o);
    c.v_orig = keep;
    p.kv_block = 0;
    ck_assert_int_ne(dl_reference(&c, DL_MODEL_FP32, &p, &out), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "kv_block"));
    dl_model_params_default(&p);
    p.acc_mantissa_bits = 24;
    ck_assert_int_ne(dl_reference(&c, DL_MODEL_FP8, &p, &out), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "acc_mantissa_bits"));
    ck_assert_int_ne(dl_reference(&c, DL_MODEL_COUNT, NULL, &out), 0);
    dl_case_free(&c);
}
END_TEST

/* ---------------------------------------------------------------- fp8 accumulator, fp8acc, bf16simt */

/* One request, one head, D = 64, length 1 (so lse = the score itself): q and
 * the K row set by hand, scales 1. q_vals/k_vals give (dim, value) pairs; all
 * other elements are 0. */
static void one_token_case(dl_dtype kv, const float *q_vals, const float *k_vals, int n, dl_case *c)
{
    const int64_t lens[] = {1};
    dl_config cfg = small_cfg(1, 1, 1, 64, 16, DL_NHD, kv, lens, 3);
    cfg.q_dtype = DL_BF16;
    dl_test_build(&cfg, c);
    c->k_scale[0] = c->v_scale[0] = 1.0f;
    const int64_t off = test_offset(c, 0, 0, 0);
    for (int64_t d = 0; d < 64; d++) {
        dl_encode_elem(DL_BF16, c->q, d, 0.0f);
        dl_encode_elem(kv, c->k_cache, off + d, 0.0f);
    }
    for (int i = 0; i < n; i++) {
        dl_encode_elem(DL_BF16, c->q, (int64_t)q_vals[2 * i], q_vals[2 * i + 1]);
        dl_encode_elem(kv, c->k_cache, off + (int64_t)k_vals[2 * i], k_vals[2 * i + 1]);
    }
}

/* fp8 QK truncation, worked by hand: q = 1 everywhere -> q_scale = 1/448 and
 * every q code is 448; K = 1.0 at dim 0 and 2^-9 (the smallest e4m3
 * subnormal) at dim 1: dot = 448 + 0.875 = 448.875 exactly. Kept fraction bits
 * b at 448 = 1.75 * 2^8 leave a step of 2^(8-b): b = 10 -> 448.75, b = 5 -> 448. */
START_TEST(test_fp8_truncation_worked)
{
    const float qv[] = {0, 1.0f, 1, 1.0f}, kv[] = {0, 1.0f, 1, 0x1p-9f};
    dl_case c;
    one_token_case(DL_E4M3, qv, kv, 2, &c);
    for (int64_t d = 0; d < 64; d++) dl_encode_elem(DL_BF16, c.q, d, 1.0f); /* q = 1 everywhere */
    const float sm = (float)dl_sm_scale(&c.cfg), qs = 1.0f / 448.0f;
    const int bits[] = {23, 10, 5};
    const float dots[] = {448.875f, 448.75f, 448.0f};
    for (int i = 0; i < 3; i++) {
        dl_model_params p;
        dl_model_params_default(&p);
        p.acc_mantissa_bits = bits[i];
        for (int m = DL_MODEL_FP8; m <= DL_MODEL_FP8ACC; m++) {
            dl_output out;
            run_model(&c, (dl_model)m, &p, &out);
            const float want = dots[i] * qs * 1.0f * sm;
            ck_assert_msg(out.lse[0] == (double)want, "%s bits %d: lse %.9g, want %.9g", dl_model_name((dl_model)m),
                          bits[i], out.lse[0], (double)want);
            dl_output_free(&out);
        }
    }
    dl_case_free(&c);
}
END_TEST

/* bf16simt's run accumulator rounds each FMA to BF16: q = 1 at dim 0 and 2^-8
 * at dims 2, 4, 6 (all in the low half of lane 0's first run), K = 1: each
 * 1 + 2^-8 is a tie at BF16 (step 2^-7 at 1) and rounds to even, 1. The dot is
 * 1, where fp32 keeps 1 + 3 * 2^-8. */
START_TEST(test_bf16simt_rounds_each_fma)
{
    const float qv[] = {0, 1.0f, 2, 0x1p-8f, 4, 0x1p-8f, 6, 0x1p-8f};
    const float kv[] = {0, 1.0f, 2, 1.0f, 4, 1.0f, 6, 1.0f};
    const dl_dtype caches[] = {DL_BF16, DL_E4M3};
    for (int t = 0; t < 2; t++) {
        dl_case c;
        one_token_case(caches[t], qv, kv, 4, &c);
        const float sm = (float)dl_sm_scale(&c.cfg);
        dl_output b, f;
        run_model(&c, DL_MODEL_BF16SIMT, NULL, &b);
        run_model(&c, DL_MODEL_FP32, NULL, &f);
        ck_assert_msg(b.lse[0] == (double)(1.0f * 1.0f * sm), "bf16simt lse %.9g, want %.9g", b.lse[0], (double)sm);
        ck_assert_msg(fabs(f.lse[0] - (1.0 + 3.0 / 256.0) * sm) < 1e-6, "fp32 lse %.9g", f.lse[0]);
        free_outputs(&b, &f, NULL);
        dl_case_free(&c);
    }
}
END_TEST

/* bf16simt's dot goes lane by lane: the same products split over lanes 0 and 1
 * (dims 0 and 8 of a bf16 cache: 8 elements per lane) are added in FP32 by the
 * butterfly, so 1 + 2^-8 survives there (FP32 keeps it) while inside one run it
 * does not. */
START_TEST(test_bf16simt_lanes_add_in_fp32)
{
    const float qv[] = {0, 1.0f, 8, 0x1p-8f};
    const float kv[] = {0, 1.0f, 8, 1.0f};
    dl_case c;
    one_token_case(DL_BF16, qv, kv, 2, &c);
    const float sm = (float)dl_sm_scale(&c.cfg);
    dl_output b;
    run_model(&c, DL_MODEL_BF16SIMT, NULL, &b);
    ck_assert_msg(b.lse[0] == (double)((1.0f + 0x1p-8f) * 1.0f * sm), "bf16simt lse %.9g", b.lse[0]);
    dl_output_free(&b);
    dl_case_free(&c);
}
END_TEST

/* Two-level accumulation: with true FP32 the fp8acc model is fp8 up to the
 * order of FP32 additions; with a 10-bit accumulator it stays closer to the
 * FP32 result than the single chain does (the long P*V chain over 1000 tokens
 * is where the plain accumulator loses most). */
START_TEST(test_fp8acc_promotion_helps)
{
    const int64_t lens[] = {1000, 700};
    dl_case c;
    small_case(&c, 2, 8, 2, 128, 16, DL_NHD, DL_E4M3, lens, 91);
    dl_model_params p;
    dl_model_params_default(&p);
    dl_output ref, acc23, plain10, acc10;
    run_model(&c, DL_MODEL_FP8, &p, &ref);
    run_model(&c, DL_MODEL_FP8ACC, &p, &acc23);
    p.acc_mantissa_bits = 10;
    run_model(&c, DL_MODEL_FP8, &p, &plain10);
    run_model(&c, DL_MODEL_FP8ACC, &p, &acc10);
    const int64_t n = 2 * 8 * 128;
    const double e23 = rel_l2(acc23.o, ref.o, n), ep = rel_l2(plain10.o, ref.o, n), ea = rel_l2(acc10.o, ref.o, n);
    ck_assert_msg(e23 < 1e-5, "fp8acc vs fp8 at 23 bits: %.3g", e23);
    ck_assert_msg(ea > 0.0 && ea < ep, "10 bits: fp8acc error %.3g is not below fp8's %.3g", ea, ep);
    free_outputs(&ref, &acc23, &plain10, &acc10, NULL);
    dl_case_free(&c);
}
END_TEST

/* ---------------------------------------------------------------- schedules */

static const dl_model sched_models[] = {DL_MODEL_FP32, DL_MODEL_BF16, DL_MODEL_FP8, DL_MODEL_FP8ACC, DL_MODEL_BF16SIMT};

/* NULL and one segment per task are today's dl_reference, bit for bit; exact ignores schedules. */
START_TEST(test_sched_trivial_bit_for_bit)
{
    const int64_t lens[3] = {1, 100, 300};
    dl_case c;
    small_case(&c, 3, 8, 2, 64, 16, DL_NHD, DL_E4M3, lens, 11);
    int64_t indptr[7], begin[6];
    for (int t = 0; t <= 6; t++) indptr[t] = t;
    for (int t = 0; t < 6; t++) begin[t] = 0;
    dl_schedule one = {6, indptr, begin};
    dl_schedule split;
    ck_assert_int_eq(dl_schedule_split_kv(&c, 4, 64, &split, NULL), 0);
    ck_assert(dl_schedule_trivial(NULL) && dl_schedule_trivial(&one) && !dl_schedule_trivial(&split));
    for (size_t i = 0; i < sizeof sched_models / sizeof sched_models[0]; i++) {
        dl_output a, b, d;
        run_model(&c, sched_models[i], NULL, &a);
        ck_assert_int_eq(dl_reference_sched(&c, sched_models[i], NULL, NULL, &b), 0);
        ck_assert_int_eq(dl_reference_sched(&c, sched_models[i], NULL, &one, &d), 0);
        ck_assert_msg(outputs_identical(&a, &b) && outputs_identical(&a, &d), "%s", dl_model_name(sched_models[i]));
        free_outputs(&a, &b, &d, NULL);
    }
    dl_output a, b;
    run_model(&c, DL_MODEL_EXACT, NULL, &a);
    ck_assert_int_eq(dl_reference_sched(&c, DL_MODEL_EXACT, NULL, &split, &b), 0);
    ck_assert(outputs_identical(&a, &b));
    free_outputs(&a, &b, NULL);
    dl_schedule_free(&split);
    dl_case_free(&c);
}
END_TEST

/* Two segments [0, 128) and [128, 300) of one request are two independent
 * softmaxes: each equals the model on a case holding only those tokens (the
 * page table cut at page 8), and the result is their FP32 merge written out
 * here from the header: M = max lse_i, W = sum expf(lse_i - M), o = (sum
 * expf(lse_i - M) o_i) / W, lse = M + logf(W). Bit for bit. */
START_TEST(test_sched_segments_by_hand)
{
    const int64_t lens[1] = {300};
    dl_case c;
    small_case(&c, 1, 4, 1, 64, 16, DL_HND, DL_E4M3, lens, 12);
    const int32_t np = c.kv_indptr[1];
    int32_t ip_a[2] = {0, 8}, last_a[1] = {16}, ip_b[2] = {0, np - 8};
    dl_case ca = c, cb = c;
    ca.kv_indptr = ip_a;
    ca.kv_last_page_len = last_a;
    cb.kv_indptr = ip_b;
    cb.kv_indices = c.kv_indices + 8;
    int64_t indptr[2] = {0, 2}, begin[2] = {0, 128};
    dl_schedule s = {1, indptr, begin};
    for (size_t i = 0; i < sizeof sched_models / sizeof sched_models[0]; i++) {
        const dl_model m = sched_models[i];
        dl_output oa, ob, os;
        run_model(&ca, m, NULL, &oa);
        run_model(&cb, m, NULL, &ob);
        ck_assert_int_eq(dl_reference_sched(&c, m, NULL, &s, &os), 0);
        for (int64_t h = 0; h < 4; h++) {
            float l0 = (float)oa.lse[h], l1 = (float)ob.lse[h];
            float M = l0 > l1 ? l0 : l1;
            float W = 0.0f;
            W += expf(l0 - M);
            W += expf(l1 - M);
            for (int64_t d = 0; d < 64; d++) {
                float acc = 0.0f;
                acc += expf(l0 - M) * (float)oa.o[h * 64 + d];
                acc += expf(l1 - M) * (float)ob.o[h * 64 + d];
                ck_assert_msg(os.o[h * 64 + d] == (double)(acc / W), "%s h %lld d %lld: %.9g vs %.9g", dl_model_name(m),
                              (long long)h, (long long)d, os.o[h * 64 + d], (double)(acc / W));
            }
            ck_assert_msg(os.lse[h] == (double)(M + logf(W)), "%s lse h %lld", dl_model_name(m), (long long)h);
        }
        /* and the split differs from the unsplit model: by FP32 rounding for fp32, visibly for bf16 (P rounding) */
        dl_output ou;
        run_model(&c, m, NULL, &ou);
        double e = rel_l2(os.o, ou.o, 4 * 64);
        ck_assert_msg(e < (m == DL_MODEL_FP32 || m == DL_MODEL_BF16SIMT ? 1e-6 : 5e-2), "%s split vs unsplit %g",
                      dl_model_name(m), e);
        free_outputs(&oa, &ob, &os, &ou, NULL);
    }
    dl_case_free(&c);
}
END_TEST

/* The split-KV schedule: chunk = ceil(ceil(max_len / n) / tile) * tile; segment k at k * chunk < len. */
START_TEST(test_sched_split_kv)
{
    ck_assert_int_eq(dl_split_kv_chunk(1000, 4, 64), 256);
    ck_assert_int_eq(dl_split_kv_chunk(1000, 3, 64), 384);
    ck_assert_int_eq(dl_split_kv_chunk(1, 4, 64), 64);
    ck_assert_int_eq(dl_split_kv_chunk(1000, 1, 64), 1024);
    const int64_t lens[3] = {1, 300, 1000};
    dl_case c;
    small_case(&c, 3, 4, 2, 32, 16, DL_NHD, DL_BF16, lens, 13);
    dl_schedule s;
    int64_t chunk = 0;
    ck_assert_int_eq(dl_schedule_split_kv(&c, 4, 64, &s, &chunk), 0);
    ck_assert_int_eq(chunk, 256);
    ck_assert_int_eq(s.num_tasks, 6);
    const int64_t want_indptr[7] = {0, 1, 2, 4, 6, 10, 14};
    const int64_t want_begin[14] = {0, 0, 0, 256, 0, 256, 0, 256, 512, 768, 0, 256, 512, 768};
    for (int t = 0; t <= 6; t++) ck_assert_int_eq(s.seg_indptr[t], want_indptr[t]);
    for (int k = 0; k < 14; k++) ck_assert_int_eq(s.seg_begin[k], want_begin[k]);
    ck_assert_int_eq(dl_schedule_validate(&c, &s), 0);
    dl_schedule_free(&s);
    dl_case_free(&c);
}
END_TEST

/* Invalid schedules are refused naming the task. */
START_TEST(test_sched_refused)
{
    const int64_t lens[2] = {10, 40};
    dl_case c;
    small_case(&c, 2, 2, 1, 32, 16, DL_NHD, DL_BF16, lens, 14);
    dl_output o;
    struct {
        int64_t ntask, indptr[3], begin[4];
        const char *want;
    } bad[] = {
        {2, {0, 1, 3}, {0, 0, 0, 0}, "task 1 (request 1, KV head 0): seg_begin[2] = 0 must be > seg_begin[1] = 0"},
        {2, {0, 1, 3}, {3, 0, 20, 0}, "task 0 (request 0, KV head 0): its first segment begins at seg_begin[0] = 3"},
        {2, {0, 1, 3}, {0, 0, 40, 0}, "seg_begin[2] = 40 must be > seg_begin[1] = 0 and < the sequence length 40"},
        {2, {0, 1, 1}, {0, 0, 0, 0}, "task 1 (request 1, KV head 0) has no segment"},
        {3, {0, 1, 2}, {0, 0, 0, 0}, "num_tasks = 3, expected batch_size x num_kv_heads = 2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dl_schedule s = {bad[i].ntask, bad[i].indptr, bad[i].begin};
        ck_assert_int_ne(dl_reference_sched(&c, DL_MODEL_BF16, NULL, &s, &o), 0);
        ck_assert_msg(strstr(dl_last_error(), bad[i].want) != NULL, "case %zu: %s", i, dl_last_error());
    }
    dl_case_free(&c);
}
END_TEST

/* Prefix caching: a case built with --share-prefix (the first N pages of every request are
 * request 0's physical pages) against an unshared case built here by hand with the same K/V
 * contents (every page-table entry its own physical page, copied from the page it names, in
 * reverse order): every model, and a split-KV schedule, bit for bit - the reference follows
 * the page table into the shared pages. */
START_TEST(test_share_prefix_models)
{
    const int64_t lens[5] = {40, 33, 100, 35, 257};
    dl_config cfg = small_cfg(5, 8, 2, 32, 16, DL_NHD, DL_E4M3, lens, 71);
    cfg.share_prefix_pages = 2;
    dl_case sh;
    dl_test_build(&cfg, &sh);
    const int64_t B = 5, nnz = sh.kv_indptr[B];
    ck_assert_int_eq(sh.num_pages, nnz - (B - 1) * 2);
    ck_assert_int_eq(sh.kv_indices[sh.kv_indptr[3] + 1], sh.kv_indices[1]);

    dl_case un = sh;
    un.cfg.share_prefix_pages = 0;
    un.num_pages = nnz;
    const size_t page_elems = (size_t)(cfg.page_size * cfg.num_kv_heads * cfg.head_dim), es = dl_dtype_size(cfg.kv_dtype);
    const size_t nq = (size_t)(B * cfg.num_qo_heads * cfg.head_dim);
    un.q = malloc(nq * dl_dtype_size(cfg.q_dtype));
    un.q_orig = malloc(nq * sizeof(float));
    un.k_cache = malloc((size_t)nnz * page_elems * es);
    un.v_cache = malloc((size_t)nnz * page_elems * es);
    un.k_orig = malloc((size_t)nnz * page_elems * sizeof(float));
    un.v_orig = malloc((size_t)nnz * page_elems * sizeof(float));
    un.k_scale = malloc((size_t)cfg.num_kv_heads * sizeof(float));
    un.v_scale = malloc((size_t)cfg.num_kv_heads * sizeof(float));
    un.kv_indptr = malloc((size_t)(B + 1) * sizeof(int32_t));
    un.kv_indices = malloc((size_t)nnz * sizeof(int32_t));
    un.kv_last_page_len = malloc((size_t)B * sizeof(int32_t));
    memcpy(un.q, sh.q, nq * dl_dtype_size(cfg.q_dtype));
    memcpy(un.q_orig, sh.q_orig, nq * sizeof(float));
    memcpy(un.k_scale, sh.k_scale, (size_t)cfg.num_kv_heads * sizeof(float));
    memcpy(un.v_scale, sh.v_scale, (size_t)cfg.num_kv_heads * sizeof(float));
    memcpy(un.kv_indptr, sh.kv_indptr, (size_t)(B + 1) * sizeof(int32_t));
    memcpy(un.kv_last_page_len, sh.kv_last_page_len, (size_t)B * sizeof(int32_t));
    for (int64_t i = 0; i < nnz; i++) {
        const int64_t to = nnz - 1 - i, from = sh.kv_indices[i];
        un.kv_indices[i] = (int32_t)to;
        memcpy((char *)un.k_cache + (size_t)to * page_elems * es, (char *)sh.k_cache + (size_t)from * page_elems * es,
               page_elems * es);
        memcpy((char *)un.v_cache + (size_t)to * page_elems * es, (char *)sh.v_cache + (size_t)from * page_elems * es,
               page_elems * es);
        memcpy(un.k_orig + (size_t)to * page_elems, sh.k_orig + (size_t)from * page_elems, page_elems * sizeof(float));
        memcpy(un.v_orig + (size_t)to * page_elems, sh.v_orig + (size_t)from * page_elems, page_elems * sizeof(float));
    }
    ck_assert_int_eq(dl_case_validate(&un, "unshared"), 0);
    for (int m = 0; m < DL_MODEL_COUNT; m++) {
        dl_output a, b;
        run_model(&sh, (dl_model)m, NULL, &a);
        run_model(&un, (dl_model)m, NULL, &b);
        ck_assert_msg(all_finite(&a), "%s: non-finite output on the shared case", dl_model_name((dl_model)m));
        ck_assert_msg(outputs_identical(&a, &b), "model %s: shared and unshared cases differ",
                      dl_model_name((dl_model)m));
        free_outputs(&a, &b, NULL);
    }
    /* a split-KV schedule (segments that start inside and after the shared prefix) */
    dl_schedule sa, sb;
    int64_t chunk = 0;
    ck_assert_int_eq(dl_schedule_split_kv(&sh, 4, 16, &sa, &chunk), 0);
    ck_assert_int_eq(dl_schedule_split_kv(&un, 4, 16, &sb, &chunk), 0);
    dl_output a, b;
    ck_assert_int_eq(dl_reference_sched(&sh, DL_MODEL_BF16, NULL, &sa, &a), 0);
    ck_assert_int_eq(dl_reference_sched(&un, DL_MODEL_BF16, NULL, &sb, &b), 0);
    ck_assert(outputs_identical(&a, &b));
    free_outputs(&a, &b, NULL);
    dl_schedule_free(&sa);
    dl_schedule_free(&sb);
    /* and the shared pages are really read: change one shared K element, every request moves */
    dl_output before, after;
    run_model(&sh, DL_MODEL_FP32, NULL, &before);
    const int64_t off = dl_case_token_offset(&sh, 0, 3, 0);
    uint8_t *code = (uint8_t *)sh.k_cache + off;
    *code = (*code & 0x7F) == 0x38 ? 0x40 : 0x38; /* another finite e4m3 code (1.0 or 2.0) */
    run_model(&sh, DL_MODEL_FP32, NULL, &after);
    for (int64_t bb = 0; bb < B; bb++) {
        int64_t row = bb * cfg.num_qo_heads; /* query head 0 reads KV head 0 */
        ck_assert_msg(before.lse[row] != after.lse[row], "request %lld did not read the shared page", (long long)bb);
    }
    free_outputs(&before, &after, NULL);
    dl_case_free(&un);
    dl_case_free(&sh);
}
END_TEST

/* ---------------------------------------------------------------- E8: KV order, P cast */

/* Reverse iteration is forward iteration over the reversed sequence: with page size 1, reversing each
 * request's pages reverses its tokens, and every emulated model must then give bit-identical outputs. */
START_TEST(test_kv_order_reverse_is_reversed_sequence)
{
    const int64_t lens[3] = {1, 70, 200};
    dl_config cfg = small_cfg(3, 8, 2, 32, 1, DL_NHD, DL_E4M3, lens, 61);
    dl_case c, cr;
    dl_test_build(&cfg, &c);
    dl_test_build(&cfg, &cr);
    for (int64_t b = 0; b < 3; b++) {
        int32_t *ix = cr.kv_indices + cr.kv_indptr[b];
        const int64_t n = cr.kv_indptr[b + 1] - cr.kv_indptr[b];
        for (int64_t i = 0; i < n / 2; i++) {
            int32_t t = ix[i]; ix[i] = ix[n - 1 - i]; ix[n - 1 - i] = t;
        }
    }
    dl_model_params fwd, rev;
    dl_model_params_default(&fwd);
    dl_model_params_default(&rev);
    rev.kv_order = DL_KV_REVERSE;
    for (int m = DL_MODEL_FP32; m < DL_MODEL_COUNT; m++) {
        dl_output a, r, f;
        run_model(&c, (dl_model)m, &rev, &a);
        run_model(&cr, (dl_model)m, &fwd, &r);
        run_model(&c, (dl_model)m, &fwd, &f);
        ck_assert_msg(outputs_identical(&a, &r), "%s: reverse != forward over the reversed pages", dl_model_name((dl_model)m));
        /* and it is a different computation from forward on the long requests (float rounding at least) */
        int differ = 0;
        for (int64_t i = 0; i < 3 * 8 * 32; i++) differ |= a.o[i] != f.o[i];
        ck_assert_msg(differ, "%s: reverse gives exactly the forward output", dl_model_name((dl_model)m));
        free_outputs(&a, &r, &f, NULL);
    }
    /* exact does not depend on the order */
    dl_output e1, e2;
    run_model(&c, DL_MODEL_EXACT, &rev, &e1);
    run_model(&c, DL_MODEL_EXACT, &fwd, &e2);
    ck_assert(outputs_identical(&e1, &e2));
    ck_assert_int_eq(e1.p_values, -1);
    ck_assert(isnan(e1.p_cast_nmse));
    free_outputs(&e1, &e2, NULL);
    dl_kv_order_parse("reverse", &rev.kv_order);
    ck_assert_int_eq(rev.kv_order, DL_KV_REVERSE);
    ck_assert_int_ne(dl_kv_order_parse("backward", &rev.kv_order), 0);
    ck_assert_str_eq(dl_kv_order_name(DL_KV_FORWARD), "forward");
    rev.kv_order = 7;
    dl_output bad;
    ck_assert_int_ne(dl_reference(&c, DL_MODEL_FP8, &rev, &bad), 0);
    ck_assert_msg(strstr(dl_last_error(), "kv_order") != NULL, "%s", dl_last_error());
    dl_case_free(&c);
    dl_case_free(&cr);
}
END_TEST

/* The sink collapse in the fp8 model: forward + S = 1 casts nearly every non-sink P to zero at
 * Delta = 10; reverse iteration only those of the last block processed (the one holding the sinks);
 * counts cover exactly the non-sink (head, token) pairs; fp32 never rounds P to zero here. */
START_TEST(test_sink_p_cast_counts)
{
    const int64_t lens[2] = {300, 513};
    dl_config cfg = small_cfg(2, 8, 2, 64, 16, DL_NHD, DL_E4M3, lens, 62);
    cfg.dist.kind = DL_DIST_SINK;
    cfg.dist.sink_tokens = 4;
    cfg.dist.sink_delta = 10.0;
    dl_case c;
    dl_test_build(&cfg, &c);
    dl_model_params p;
    dl_model_params_default(&p);
    p.p_scale = 1.0f;
    const int64_t nonsink = 8 * (300 - 4 + 513 - 4);
    dl_output f, r, f32, f448;
    run_model(&c, DL_MODEL_FP8, &p, &f);
    ck_assert_int_eq(f.p_values, nonsink);
    ck_assert_msg(f.p_zeros > 0.97 * (double)nonsink, "forward S=1: %lld of %lld zero", (long long)f.p_zeros,
                  (long long)nonsink);
    p.kv_order = DL_KV_REVERSE;
    run_model(&c, DL_MODEL_FP8, &p, &r);
    ck_assert_int_eq(r.p_values, nonsink);
    /* reverse: at most the non-sink tokens sharing the last kv_block with the sinks, x 8 heads */
    ck_assert_msg(r.p_zeros <= 8 * 2 * 64, "reverse S=1: %lld zero", (long long)r.p_zeros);
    ck_assert(r.p_cast_nmse < f.p_cast_nmse);
    run_model(&c, DL_MODEL_FP32, &p, &f32);
    ck_assert_int_eq(f32.p_values, nonsink);
    ck_assert_int_eq(f32.p_zeros, 0);
    ck_assert(isnan(f32.p_cast_nmse));
    p.kv_order = DL_KV_FORWARD;
    p.p_scale = 448.0f;
    run_model(&c, DL_MODEL_FP8, &p, &f448);
    ck_assert(f448.p_zeros < f.p_zeros / 4);
    ck_assert(isfinite(f448.p_cast_nmse) && f448.p_cast_nmse > 0);
    free_outputs(&f, &r, &f32, &f448, NULL);
    dl_case_free(&c);
}
END_TEST

/* The prediction: E[max of k N(0,1)] and Phi(Delta + delta_k - 10 ln 2 - ln S), computed here. */
START_TEST(test_p_underflow_prediction)
{
    ck_assert_double_eq_tol(dl_expected_max_normal(1), 0.0, 1e-12);
    ck_assert_double_eq_tol(dl_expected_max_normal(2), 1.0 / sqrt(M_PI), 1e-6);
    ck_assert_double_eq_tol(dl_expected_max_normal(4), 1.0293754, 1e-6);
    dl_config cfg;
    dl_config_default(&cfg); /* D = 128, sm_scale 1/sqrt(128), std 1: sigma = 1 */
    cfg.dist.kind = DL_DIST_SINK;
    cfg.dist.sink_tokens = 4;
    cfg.dist.sink_delta = 6.0;
    dl_model_params p;
    dl_model_params_default(&p);
    p.p_scale = 1.0f;
    const double want = 0.5 * erfc(-(6.0 + 1.0293754 - 10.0 * log(2.0)) / sqrt(2.0));
    ck_assert_double_eq_tol(dl_p_underflow_predicted(&cfg, &p, DL_MODEL_FP8), want, 1e-6);
    p.p_scale = 256.0f;
    const double want256 = 0.5 * erfc(-(6.0 + 1.0293754 - 10.0 * log(2.0) - log(256.0)) / sqrt(2.0));
    ck_assert_double_eq_tol(dl_p_underflow_predicted(&cfg, &p, DL_MODEL_FP8ACC), want256, 1e-9);
    ck_assert(isnan(dl_p_underflow_predicted(&cfg, &p, DL_MODEL_BF16)));
    p.kv_order = DL_KV_REVERSE;
    ck_assert(isnan(dl_p_underflow_predicted(&cfg, &p, DL_MODEL_FP8)));
    p.kv_order = DL_KV_FORWARD;
    cfg.dist.kind = DL_DIST_NORMAL;
    ck_assert(isnan(dl_p_underflow_predicted(&cfg, &p, DL_MODEL_FP8)));
}
END_TEST

/* The P-cast statistics are integer counts and per-task sums added in task order: thread-count free. */
START_TEST(test_p_cast_stats_deterministic)
{
    const int64_t lens[4] = {17, 130, 64, 250};
    dl_config cfg = small_cfg(4, 8, 2, 32, 16, DL_NHD, DL_E4M3, lens, 63);
    cfg.dist.kind = DL_DIST_SINK;
    dl_case c;
    dl_test_build(&cfg, &c);
    int saved = omp_get_max_threads();
    dl_output one, three;
    omp_set_num_threads(1);
    run_model(&c, DL_MODEL_FP8, NULL, &one);
    omp_set_num_threads(3);
    run_model(&c, DL_MODEL_FP8, NULL, &three);
    omp_set_num_threads(saved);
    ck_assert_int_eq(one.p_values, three.p_values);
    ck_assert_int_eq(one.p_zeros, three.p_zeros);
    ck_assert(one.p_cast_nmse == three.p_cast_nmse);
    free_outputs(&one, &three, NULL);
    dl_case_free(&c);
}
END_TEST

DL_TEST_SUITE("ref", 60, NULL, NULL,
              test_lse_definition, test_share_prefix_models, test_all_keys_equal, test_dominant_key, test_length_one,
              test_normalizer_uses_float_p, test_normalizer_no_drift_at_strong_sink, test_bf16_v_scale_folded, test_gqa_equals_mha, test_nhd_equals_hnd,
              test_page_size_and_order, test_models_near_exact_e4m3, test_models_near_exact_bf16_cache,
              test_fp8_reduced_accumulator, test_kv_block_changes_little, test_fp8_flip_allowance_bounds,
              test_deterministic_threads,
              test_names_and_errors, test_fp8_truncation_worked, test_bf16simt_rounds_each_fma,
              test_bf16simt_lanes_add_in_fp32, test_fp8acc_promotion_helps, test_sched_trivial_bit_for_bit,
              test_sched_segments_by_hand, test_sched_split_kv, test_sched_refused,
              test_kv_order_reverse_is_reversed_sequence, test_sink_p_cast_counts, test_p_underflow_prediction,
              test_p_cast_stats_deterministic)

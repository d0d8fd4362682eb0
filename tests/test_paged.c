/* test_paged.c - the paged KV builder: lengths, the CSR page table (checked by
 * an independent walk), scattered pages, poison in exactly the unused slots,
 * layouts and page sizes holding the same logical values, quantization error
 * and scale modes, thread-count determinism, and dl_case_validate. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl_test.h"
#include "../ref/dl_formats.h"
#include "../ref/dl_paged.h"
#include "../ref/dl_rng.h"

static dl_config small_cfg(void)
{
    dl_config c;
    dl_test_shape(&c, 5, 8, 2, 16, 4);
    dl_test_ragged(&c, 1, 23, 1234);
    return c;
}

/* The test's own offset formulas (independent of dl_kv_offset). */
static int64_t nhd_off(const dl_config *c, int64_t page, int64_t slot, int64_t h)
{
    return ((page * c->page_size + slot) * c->num_kv_heads + h) * c->head_dim;
}
static int64_t hnd_off(const dl_config *c, int64_t page, int64_t slot, int64_t h)
{
    return ((page * c->num_kv_heads + h) * c->page_size + slot) * c->head_dim;
}
static int64_t layout_off(const dl_config *c, int64_t page, int64_t slot, int64_t h)
{
    return c->kv_layout == DL_NHD ? nhd_off(c, page, slot, h) : hnd_off(c, page, slot, h);
}
/* Offset of token t of request b by the test's own walk of the page table. */
static int64_t walk_off(const dl_case *c, int64_t b, int64_t t, int64_t h)
{
    int64_t ps = c->cfg.page_size, i = c->kv_indptr[b];
    int64_t tt = t;
    while (tt >= ps) { tt -= ps; i++; }
    return layout_off(&c->cfg, c->kv_indices[i], tt, h);
}

/* Sequence length of request b from the page table. */
static int64_t walk_len_of(const dl_case *c, int64_t b)
{
    return (int64_t)(c->kv_indptr[b + 1] - c->kv_indptr[b] - 1) * c->cfg.page_size + c->kv_last_page_len[b];
}

/* Recount pages and last-page fill of a length token by token. */
static void walk_len(int64_t len, int64_t ps, int64_t *pages, int64_t *last)
{
    *pages = 0;
    *last = 0;
    for (int64_t t = 0; t < len; t++) {
        if (*last == 0 || *last == ps) { (*pages)++; *last = 0; }
        (*last)++;
    }
}

static void check_table(const dl_case *c, const int64_t *expect_lens)
{
    int64_t ps = c->cfg.page_size, sum = 0;
    ck_assert_int_eq(c->kv_indptr[0], 0);
    for (int64_t b = 0; b < c->cfg.batch_size; b++) {
        int64_t len = dl_case_seq_len(c, b);
        if (expect_lens) ck_assert_int_eq(len, expect_lens[b]);
        int64_t pages, last;
        walk_len(len, ps, &pages, &last);
        sum += pages;
        ck_assert_int_eq(c->kv_indptr[b + 1], sum);
        ck_assert_int_eq(c->kv_last_page_len[b], last);
        ck_assert(last >= 1 && last <= ps);
    }
    ck_assert_int_eq(c->num_pages, sum);
    /* kv_indices is a permutation of 0..P-1 */
    char *seen = calloc((size_t)c->num_pages, 1);
    for (int64_t i = 0; i < c->num_pages; i++) {
        ck_assert(c->kv_indices[i] >= 0 && c->kv_indices[i] < c->num_pages);
        ck_assert_int_eq(seen[c->kv_indices[i]], 0);
        seen[c->kv_indices[i]] = 1;
    }
    free(seen);
    ck_assert_int_eq(dl_case_validate(c, "built"), 0);
}

START_TEST(test_lengths_in_range)
{
    dl_config cfg = small_cfg();
    cfg.batch_size = 300;
    cfg.seq_len_min = 3;
    cfg.seq_len_max = 5;
    dl_case c;
    dl_test_build(&cfg, &c);
    int hit[6] = {0};
    for (int64_t b = 0; b < cfg.batch_size; b++) {
        int64_t len = dl_case_seq_len(&c, b);
        ck_assert(len >= 3 && len <= 5);
        hit[len]++;
    }
    /* 300 uniform draws over 3 values: each appears (miss probability ~ 3*(2/3)^300) */
    ck_assert(hit[3] > 0 && hit[4] > 0 && hit[5] > 0);
    check_table(&c, NULL);
    dl_case_free(&c);
    /* fixed length */
    cfg.seq_len_min = cfg.seq_len_max = 9;
    dl_test_build(&cfg, &c);
    for (int64_t b = 0; b < cfg.batch_size; b++) ck_assert_int_eq(dl_case_seq_len(&c, b), 9);
    check_table(&c, NULL);
    dl_case_free(&c);
}
END_TEST

START_TEST(test_explicit_lengths_and_page_sizes)
{
    static const int64_t lens[] = {1, 4, 5, 17, 1, 256, 257, 600};
    static const int64_t sizes[] = {1, 4, 16, 7, 256};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        dl_config cfg = small_cfg();
        cfg.batch_size = 8;
        cfg.num_explicit_lens = 8;
        memcpy(cfg.explicit_lens, lens, sizeof lens);
        cfg.page_size = sizes[k];
        dl_case c;
        dl_test_build(&cfg, &c);
        check_table(&c, lens);
        /* closed-form counts: ceil(len/ps) pages, last = len - (pages-1)*ps */
        for (int b = 0; b < 8; b++) {
            int64_t pages = (lens[b] + sizes[k] - 1) / sizes[k];
            ck_assert_int_eq(c.kv_indptr[b + 1] - c.kv_indptr[b], pages);
        }
        if (sizes[k] == 1) {
            for (int b = 0; b < 8; b++) ck_assert_int_eq(c.kv_last_page_len[b], 1);
        }
        if (sizes[k] == 256) {
            ck_assert_int_eq(c.kv_indptr[8], 1 + 1 + 1 + 1 + 1 + 1 + 2 + 3);
            ck_assert_int_eq(c.kv_last_page_len[6], 1);
            ck_assert_int_eq(c.kv_last_page_len[7], 600 - 512);
        }
        dl_case_free(&c);
    }
}
END_TEST

START_TEST(test_pages_scattered)
{
    dl_config cfg = small_cfg();
    cfg.batch_size = 10;
    cfg.seq_len_min = cfg.seq_len_max = 40; /* 100 pages */
    dl_case c, c2;
    dl_test_build(&cfg, &c);
    ck_assert_int_eq(c.num_pages, 100);
    int fixed = 0, ascending = 0;
    for (int64_t i = 0; i < c.num_pages; i++) fixed += c.kv_indices[i] == i;
    for (int64_t i = 1; i < c.num_pages; i++) ascending += c.kv_indices[i] == c.kv_indices[i - 1] + 1;
    /* a uniform permutation of 100 has ~1 fixed point and ~1 ascending neighbour pair */
    ck_assert_msg(fixed < 10 && ascending < 10, "fixed %d ascending %d", fixed, ascending);
    dl_test_build(&cfg, &c2);
    ck_assert(memcmp(c.kv_indices, c2.kv_indices, 100 * sizeof(int32_t)) == 0); /* deterministic */
    dl_case_free(&c2);
    cfg.seed++;
    dl_test_build(&cfg, &c2);
    ck_assert(memcmp(c.kv_indices, c2.kv_indices, 100 * sizeof(int32_t)) != 0); /* seed matters */
    dl_case_free(&c2);
    dl_case_free(&c);
}
END_TEST

static int is_poison_code(dl_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case DL_F16: return ((const uint16_t *)p)[i] == DL_F16_NAN;
    case DL_BF16: return ((const uint16_t *)p)[i] == DL_BF16_NAN;
    case DL_E4M3: return ((const uint8_t *)p)[i] == DL_E4M3_NAN;
    case DL_E5M2: return ((const uint8_t *)p)[i] == DL_E5M2_NAN;
    default: return 0;
    }
}

START_TEST(test_poison_exactly_in_unused_slots)
{
    static const dl_dtype kv[] = {DL_E4M3, DL_E5M2, DL_F16, DL_BF16};
    for (int lay = 0; lay < 2; lay++)
        for (int k = 0; k < 4; k++) {
            dl_config cfg = small_cfg();
            cfg.kv_layout = lay ? DL_HND : DL_NHD;
            cfg.kv_dtype = kv[k];
            cfg.batch_size = 7;
            cfg.page_size = 5;
            dl_case c;
            dl_test_build(&cfg, &c);
            int64_t D = cfg.head_dim, H = cfg.num_kv_heads, ps = cfg.page_size;
            /* mark used (page, slot) pairs from the page table */
            char *used = calloc((size_t)(c.num_pages * ps), 1);
            int64_t n_unused = 0;
            for (int64_t b = 0; b < cfg.batch_size; b++) {
                for (int64_t t = 0; t < dl_case_seq_len(&c, b); t++)
                    used[c.kv_indices[c.kv_indptr[b] + t / ps] * ps + t % ps] = 1;
                n_unused += ps - c.kv_last_page_len[b];
            }
            int64_t n_poison_slots = 0;
            for (int64_t p = 0; p < c.num_pages; p++)
                for (int64_t s = 0; s < ps; s++) {
                    n_poison_slots += !used[p * ps + s];
                    for (int64_t h = 0; h < H; h++)
                        for (int64_t d = 0; d < D; d++) {
                            int64_t o = layout_off(&cfg, p, s, h) + d;
                            if (used[p * ps + s]) {
                                ck_assert(!is_poison_code(cfg.kv_dtype, c.k_cache, o));
                                ck_assert(!is_poison_code(cfg.kv_dtype, c.v_cache, o));
                                ck_assert(isfinite(dl_case_k_code(&c, o)) && isfinite(dl_case_v_code(&c, o)));
                                ck_assert(isfinite(c.k_orig[o]) && isfinite(c.v_orig[o]));
                            } else {
                                ck_assert(is_poison_code(cfg.kv_dtype, c.k_cache, o));
                                ck_assert(is_poison_code(cfg.kv_dtype, c.v_cache, o));
                                ck_assert(isnan(dl_case_k_code(&c, o)) && isnan(dl_case_v_code(&c, o)));
                                ck_assert(isnan(c.k_orig[o]) && isnan(c.v_orig[o]));
                            }
                        }
                }
            ck_assert_int_eq(n_poison_slots, n_unused);
            ck_assert_int_eq(dl_case_check_values(&c, "built"), 0); /* poison is not an error */
            free(used);
            dl_case_free(&c);
        }
}
END_TEST

/* N(0,1) of element counter e by the documented scheme: lane e&1 of the Box-Muller pair 4*(e>>1). */
static double pair_normal(uint64_t seed, uint64_t stream, uint64_t e)
{
    double z[2];
    dl_rng_normal2(seed, stream, 4 * (e >> 1), z);
    return z[e & 1];
}

/* Expected original K/V value at a logical position, from the documented counter scheme. */
static float expect_normal(const dl_config *cfg, uint64_t stream, int64_t b, int64_t t, int64_t h, int64_t d)
{
    uint64_t e = ((uint64_t)b << 40) | ((uint64_t)t << 20) | ((uint64_t)h << 10) | (uint64_t)d;
    return (float)(cfg->dist.mean + cfg->dist.std * pair_normal(cfg->seed, stream, e));
}

START_TEST(test_layouts_hold_same_logical_values)
{
    dl_config cfg = small_cfg();
    cfg.dist.mean = 0.25;
    cfg.dist.std = 2.0;
    dl_case n, h;
    cfg.kv_layout = DL_NHD;
    dl_test_build(&cfg, &n);
    cfg.kv_layout = DL_HND;
    dl_test_build(&cfg, &h);
    ck_assert_int_eq(n.num_pages, h.num_pages);
    ck_assert(memcmp(n.kv_indices, h.kv_indices, (size_t)n.num_pages * 4) == 0);
    int64_t H = cfg.num_kv_heads, D = cfg.head_dim;
    for (int64_t b = 0; b < cfg.batch_size; b++)
        for (int64_t t = 0; t < dl_case_seq_len(&n, b); t++)
            for (int64_t kh = 0; kh < H; kh++) {
                int64_t page = n.kv_indices[n.kv_indptr[b] + t / cfg.page_size], slot = t % cfg.page_size;
                int64_t on = nhd_off(&n.cfg, page, slot, kh), oh = hnd_off(&h.cfg, page, slot, kh);
                ck_assert_int_eq(dl_kv_offset(&n.cfg, page, slot, kh), on);
                ck_assert_int_eq(dl_kv_offset(&h.cfg, page, slot, kh), oh);
                ck_assert_int_eq(dl_case_token_offset(&n, b, t, kh), on);
                ck_assert_int_eq(dl_case_token_offset(&h, b, t, kh), oh);
                for (int64_t d = 0; d < D; d++) {
                    float want = expect_normal(&cfg, DL_STREAM_K, b, t, kh, d);
                    ck_assert(n.k_orig[on + d] == want && h.k_orig[oh + d] == want);
                    ck_assert(n.v_orig[on + d] == expect_normal(&cfg, DL_STREAM_V, b, t, kh, d));
                    ck_assert(n.v_orig[on + d] == h.v_orig[oh + d]);
                    ck_assert(((uint8_t *)n.k_cache)[on + d] == ((uint8_t *)h.k_cache)[oh + d]);
                    ck_assert(((uint8_t *)n.v_cache)[on + d] == ((uint8_t *)h.v_cache)[oh + d]);
                }
            }
    ck_assert(memcmp(n.k_scale, h.k_scale, (size_t)H * 4) == 0);
    dl_case_free(&n);
    dl_case_free(&h);
}
END_TEST

START_TEST(test_page_size_keeps_logical_values)
{
    dl_config cfg = small_cfg();
    cfg.kv_dtype = DL_E5M2;
    dl_case a, b;
    cfg.page_size = 1;
    dl_test_build(&cfg, &a);
    static const int64_t other[] = {3, 16, 256};
    for (int k = 0; k < 3; k++) {
        cfg.page_size = other[k];
        cfg.kv_layout = k == 1 ? DL_HND : DL_NHD;
        dl_test_build(&cfg, &b);
        ck_assert(memcmp(a.k_scale, b.k_scale, (size_t)cfg.num_kv_heads * 4) == 0);
        for (int64_t r = 0; r < cfg.batch_size; r++) {
            ck_assert_int_eq(dl_case_seq_len(&a, r), dl_case_seq_len(&b, r));
            for (int64_t t = 0; t < dl_case_seq_len(&a, r); t++)
                for (int64_t h = 0; h < cfg.num_kv_heads; h++) {
                    int64_t oa = walk_off(&a, r, t, h), ob = walk_off(&b, r, t, h);
                    for (int64_t d = 0; d < cfg.head_dim; d++) {
                        ck_assert(a.k_orig[oa + d] == b.k_orig[ob + d]);
                        ck_assert(a.v_orig[oa + d] == b.v_orig[ob + d]);
                        ck_assert(((uint8_t *)a.k_cache)[oa + d] == ((uint8_t *)b.k_cache)[ob + d]);
                        ck_assert(((uint8_t *)a.v_cache)[oa + d] == ((uint8_t *)b.v_cache)[ob + d]);
                    }
                }
        }
        ck_assert(memcmp(a.q_orig, b.q_orig, (size_t)(cfg.batch_size * cfg.num_qo_heads * cfg.head_dim) * 4) == 0);
        dl_case_free(&b);
    }
    dl_case_free(&a);
}
END_TEST

/* Half an ulp of format t at |y| (y in units of the scale): from the format's
 * mantissa bits and minimum normal exponent. */
static double half_ulp(dl_dtype t, double y)
{
    int mant, emin;
    switch (t) {
    case DL_E4M3: mant = 3; emin = -6; break;
    case DL_E5M2: mant = 2; emin = -14; break;
    case DL_F16: mant = 10; emin = -14; break;
    case DL_BF16: mant = 7; emin = -126; break;
    default: mant = 23; emin = -126; break;
    }
    int e = y != 0 ? (int)floor(log2(fabs(y))) : emin;
    if (e < emin) e = emin;
    return ldexp(0.5, e - mant);
}

static void check_quant_error(const dl_case *c, const float *orig, const float *scale, int is_k)
{
    const dl_config *cfg = &c->cfg;
    for (int64_t b = 0; b < cfg->batch_size; b++)
        for (int64_t t = 0; t < dl_case_seq_len(c, b); t++)
            for (int64_t h = 0; h < cfg->num_kv_heads; h++) {
                int64_t o = walk_off(c, b, t, h);
                for (int64_t d = 0; d < cfg->head_dim; d++) {
                    double x = orig[o + d];
                    double code = is_k ? dl_case_k_code(c, o + d) : dl_case_v_code(c, o + d);
                    double real = code * scale[h];
                    double y = x / scale[h];
                    /* + the float rounding of x/scale inside the encoder's input */
                    double bound = half_ulp(cfg->kv_dtype, y) * scale[h] + 0x1p-23 * fabs(x);
                    ck_assert_msg(fabs(real - x) <= bound, "%s b=%lld t=%lld h=%lld d=%lld: x=%.9g stored %.9g bound %.3g",
                                  dl_dtype_name(cfg->kv_dtype), (long long)b, (long long)t, (long long)h,
                                  (long long)d, x, real, bound);
                }
            }
}

START_TEST(test_quantization_error_bounded)
{
    static const dl_dtype kv[] = {DL_E4M3, DL_E5M2, DL_F16, DL_BF16};
    static const dl_dist dists[] = {DL_DIST_NORMAL, DL_DIST_OUTLIER, DL_DIST_CHANNEL_OUTLIER, DL_DIST_UNIFORM};
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 4; j++) {
            dl_config cfg = small_cfg();
            cfg.kv_dtype = kv[k];
            cfg.dist.kind = dists[j];
            cfg.dist.outlier_prob = 0.05;
            cfg.seq_len_min = 30;
            cfg.seq_len_max = 60;
            dl_case c;
            dl_test_build(&cfg, &c);
            check_quant_error(&c, c.k_orig, c.k_scale, 1);
            check_quant_error(&c, c.v_orig, c.v_scale, 0);
            ck_assert_int_eq(dl_case_check_values(&c, "built"), 0);
            dl_case_free(&c);
        }
}
END_TEST

/* absmax of a head over the used slots, by the logical walk */
static float head_absmax(const dl_case *c, const float *orig, int64_t h)
{
    float m = 0;
    for (int64_t b = 0; b < c->cfg.batch_size; b++)
        for (int64_t t = 0; t < dl_case_seq_len(c, b); t++) {
            int64_t o = walk_off(c, b, t, h);
            for (int64_t d = 0; d < c->cfg.head_dim; d++) m = fmaxf(m, fabsf(orig[o + d]));
        }
    return m;
}
static double head_code_absmax(const dl_case *c, int64_t h)
{
    double m = 0;
    for (int64_t b = 0; b < c->cfg.batch_size; b++)
        for (int64_t t = 0; t < dl_case_seq_len(c, b); t++) {
            int64_t o = walk_off(c, b, t, h);
            for (int64_t d = 0; d < c->cfg.head_dim; d++) m = fmax(m, fabs(dl_case_k_code(c, o + d)));
        }
    return m;
}

START_TEST(test_scale_modes)
{
    dl_config cfg = small_cfg();
    cfg.num_kv_heads = 4;
    cfg.num_qo_heads = 8;
    cfg.dist.kind = DL_DIST_OUTLIER; /* heads get different absmax */
    cfg.dist.outlier_prob = 0.01;
    static const dl_dtype fp8[] = {DL_E4M3, DL_E5M2};
    static const double fmax8[] = {448.0, 57344.0};
    for (int k = 0; k < 2; k++) {
        cfg.kv_dtype = fp8[k];
        dl_case c;
        /* per head: scale = absmax / format max, and the largest code is the format max */
        cfg.kv_scale_mode = DL_SCALE_ABSMAX_HEAD;
        dl_test_build(&cfg, &c);
        float gmax = 0;
        int distinct = 0;
        for (int64_t h = 0; h < 4; h++) {
            float m = head_absmax(&c, c.k_orig, h);
            gmax = fmaxf(gmax, m);
            ck_assert_float_eq(c.k_scale[h], m / (float)fmax8[k]);
            ck_assert_float_eq(c.v_scale[h], head_absmax(&c, c.v_orig, h) / (float)fmax8[k]);
            ck_assert(head_code_absmax(&c, h) == fmax8[k]);
            distinct += h > 0 && c.k_scale[h] != c.k_scale[0];
        }
        ck_assert(distinct > 0);
        dl_case_free(&c);
        /* per tensor: one scale from the global absmax */
        cfg.kv_scale_mode = DL_SCALE_ABSMAX_TENSOR;
        dl_test_build(&cfg, &c);
        for (int64_t h = 0; h < 4; h++) ck_assert_float_eq(c.k_scale[h], gmax / (float)fmax8[k]);
        double top = 0;
        for (int64_t h = 0; h < 4; h++) top = fmax(top, head_code_absmax(&c, h));
        ck_assert(top == fmax8[k]);
        check_quant_error(&c, c.k_orig, c.k_scale, 1);
        dl_case_free(&c);
        /* given */
        cfg.kv_scale_mode = DL_SCALE_GIVEN;
        cfg.kv_scale_value = 0.0625;
        dl_test_build(&cfg, &c);
        for (int64_t h = 0; h < 4; h++) ck_assert(c.k_scale[h] == 0.0625f && c.v_scale[h] == 0.0625f);
        int64_t o = walk_off(&c, 0, 0, 1);
        uint8_t want = k == 0 ? dl_f32_to_e4m3(c.k_orig[o] / 0.0625f, DL_SATFINITE)
                              : dl_f32_to_e5m2(c.k_orig[o] / 0.0625f, DL_SATFINITE);
        ck_assert_uint_eq(((uint8_t *)c.k_cache)[o], want);
        check_quant_error(&c, c.v_orig, c.v_scale, 0);
        dl_case_free(&c);
        cfg.kv_scale_mode = DL_SCALE_ABSMAX_HEAD;
    }
    /* f16/bf16: scale 1 unless given */
    cfg.kv_dtype = DL_BF16;
    dl_case c;
    dl_test_build(&cfg, &c);
    for (int64_t h = 0; h < 4; h++) ck_assert(c.k_scale[h] == 1.0f && c.v_scale[h] == 1.0f);
    int64_t o = walk_off(&c, 1, 0, 0);
    ck_assert_uint_eq(((uint16_t *)c.k_cache)[o], dl_f32_to_bf16(c.k_orig[o], DL_SATFINITE));
    dl_case_free(&c);
    cfg.kv_scale_mode = DL_SCALE_GIVEN;
    cfg.kv_scale_value = 2.0;
    cfg.kv_dtype = DL_F16;
    dl_test_build(&cfg, &c);
    for (int64_t h = 0; h < 4; h++) ck_assert(c.k_scale[h] == 2.0f);
    check_quant_error(&c, c.k_orig, c.k_scale, 1);
    dl_case_free(&c);
    /* a tensor of zeros (std so small the floats underflow to 0) gets scale 1 */
    cfg = small_cfg();
    cfg.dist.std = 1e-300;
    dl_test_build(&cfg, &c);
    ck_assert(head_absmax(&c, c.k_orig, 0) == 0.0f);
    for (int64_t h = 0; h < cfg.num_kv_heads; h++) ck_assert(c.k_scale[h] == 1.0f);
    dl_case_free(&c);
}
END_TEST

START_TEST(test_channel_outliers)
{
    dl_config cfg = small_cfg();
    cfg.dist.kind = DL_DIST_CHANNEL_OUTLIER;
    cfg.dist.num_outlier_channels = 3;
    cfg.dist.channel_scale = 20;
    cfg.seq_len_min = cfg.seq_len_max = 50;
    int64_t ch[3];
    ck_assert_int_eq(dl_outlier_channels(&cfg, ch), 0);
    ck_assert(ch[0] != ch[1] && ch[0] != ch[2] && ch[1] != ch[2]);
    dl_case c;
    dl_test_build(&cfg, &c);
    int64_t D = cfg.head_dim;
    double sum_sq[16] = {0}, vsum_sq[16] = {0};
    long n = 0;
    for (int64_t b = 0; b < cfg.batch_size; b++)
        for (int64_t t = 0; t < 50; t++)
            for (int64_t h = 0; h < cfg.num_kv_heads; h++) {
                int64_t o = walk_off(&c, b, t, h);
                for (int64_t d = 0; d < D; d++) {
                    int is_ch = d == ch[0] || d == ch[1] || d == ch[2];
                    uint64_t e = ((uint64_t)b << 40) | ((uint64_t)t << 20) | ((uint64_t)h << 10) | (uint64_t)d;
                    double z = pair_normal(cfg.seed, DL_STREAM_K, e);
                    ck_assert(c.k_orig[o + d] == (float)(is_ch ? 20 * z : z));
                    sum_sq[d] += (double)c.k_orig[o + d] * c.k_orig[o + d];
                    vsum_sq[d] += (double)c.v_orig[o + d] * c.v_orig[o + d];
                }
                n++;
            }
    for (int64_t d = 0; d < D; d++) {
        int is_ch = d == ch[0] || d == ch[1] || d == ch[2];
        /* 500 samples per channel: mean square ~400 on outlier channels, ~1 elsewhere, V never scaled */
        ck_assert(is_ch ? sum_sq[d] / n > 200 : sum_sq[d] / n < 2);
        ck_assert(vsum_sq[d] / n < 2);
    }
    /* Q is not scaled either */
    for (int64_t i = 0; i < cfg.batch_size * cfg.num_qo_heads * D; i++) ck_assert(fabsf(c.q_orig[i]) < 8);
    dl_case_free(&c);
}
END_TEST

START_TEST(test_q_storage)
{
    static const dl_dtype qd[] = {DL_F32, DL_F16, DL_BF16};
    for (int k = 0; k < 3; k++) {
        dl_config cfg = small_cfg();
        cfg.q_dtype = qd[k];
        dl_case c;
        dl_test_build(&cfg, &c);
        int64_t n = cfg.batch_size * cfg.num_qo_heads * cfg.head_dim;
        for (int64_t b = 0; b < cfg.batch_size; b++)
            for (int64_t h = 0; h < cfg.num_qo_heads; h++)
                for (int64_t d = 0; d < cfg.head_dim; d++) {
                    int64_t i = (b * cfg.num_qo_heads + h) * cfg.head_dim + d;
                    uint64_t e = ((uint64_t)b << 20) | ((uint64_t)h << 10) | (uint64_t)d;
                    ck_assert(c.q_orig[i] == (float)pair_normal(cfg.seed, DL_STREAM_Q, e));
                }
        for (int64_t i = 0; i < n; i++) {
            if (qd[k] == DL_F32) ck_assert(((float *)c.q)[i] == c.q_orig[i]);
            if (qd[k] == DL_F16) ck_assert_uint_eq(((uint16_t *)c.q)[i], dl_f32_to_f16(c.q_orig[i], DL_SATFINITE));
            if (qd[k] == DL_BF16) ck_assert_uint_eq(((uint16_t *)c.q)[i], dl_f32_to_bf16(c.q_orig[i], DL_SATFINITE));
            ck_assert(dl_case_q(&c, i) == dl_decode_elem(qd[k], c.q, i));
        }
        dl_case_free(&c);
    }
}
END_TEST

static int cases_identical(const dl_case *a, const dl_case *b)
{
    if (a->num_pages != b->num_pages) return 0;
    const dl_config *g = &a->cfg;
    size_t nq = (size_t)(g->batch_size * g->num_qo_heads * g->head_dim);
    size_t ne = (size_t)dl_case_cache_elems(a), es = dl_dtype_size(g->kv_dtype), H = (size_t)g->num_kv_heads;
    return memcmp(a->q, b->q, nq * dl_dtype_size(g->q_dtype)) == 0 && memcmp(a->q_orig, b->q_orig, nq * 4) == 0 &&
           memcmp(a->k_cache, b->k_cache, ne * es) == 0 && memcmp(a->v_cache, b->v_cache, ne * es) == 0 &&
           memcmp(a->k_orig, b->k_orig, ne * 4) == 0 && memcmp(a->v_orig, b->v_orig, ne * 4) == 0 &&
           memcmp(a->k_scale, b->k_scale, H * 4) == 0 && memcmp(a->v_scale, b->v_scale, H * 4) == 0 &&
           memcmp(a->kv_indptr, b->kv_indptr, (size_t)(g->batch_size + 1) * 4) == 0 &&
           memcmp(a->kv_indices, b->kv_indices, (size_t)a->num_pages * 4) == 0 &&
           memcmp(a->kv_last_page_len, b->kv_last_page_len, (size_t)g->batch_size * 4) == 0;
}

START_TEST(test_threads_bit_identical)
{
    dl_config cfg = small_cfg();
    cfg.batch_size = 16;
    cfg.seq_len_min = 1;
    cfg.seq_len_max = 200;
    cfg.num_kv_heads = 4;
    cfg.dist.kind = DL_DIST_OUTLIER;
    for (int lay = 0; lay < 2; lay++) {
        cfg.kv_layout = lay ? DL_HND : DL_NHD;
        dl_case one, four;
        omp_set_num_threads(1);
        dl_test_build(&cfg, &one);
        omp_set_num_threads(4);
        dl_test_build(&cfg, &four);
        ck_assert(cases_identical(&one, &four));
        dl_case_free(&four);
        cfg.seed++; /* and the comparison can fail: another seed differs */
        dl_test_build(&cfg, &four);
        ck_assert(!cases_identical(&one, &four));
        dl_case_free(&four);
        dl_case_free(&one);
    }
}
END_TEST

START_TEST(test_build_rejects_bad_config)
{
    dl_config cfg = small_cfg();
    cfg.batch_size = 0;
    dl_case c;
    ck_assert_int_ne(dl_case_build(&cfg, &c), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "batch_size"));
    ck_assert_ptr_null(c.k_cache);
    cfg = small_cfg();
    cfg.num_qo_heads = 6;
    cfg.num_kv_heads = 4;
    ck_assert_int_ne(dl_case_build(&cfg, &c), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "num_qo_heads"));
}
END_TEST

/* Corrupt a copy of a good table, expect rejection and a message naming source, dataset, index and value. */
static void expect_reject(dl_case *c, const char *needle1, const char *needle2)
{
    dl_clear_error();
    ck_assert_int_ne(dl_case_validate(c, "bad.h5"), 0);
    const char *m = dl_last_error();
    ck_assert_msg(strstr(m, "bad.h5") && strstr(m, needle1) && strstr(m, needle2), "message: %s", m);
}

START_TEST(test_validate_rejects_bad_tables)
{
    dl_config cfg = small_cfg();
    cfg.batch_size = 5;
    cfg.num_explicit_lens = 5;
    int64_t lens[5] = {9, 1, 4, 13, 6}; /* page 4: pages 3,1,1,4,2 -> indptr 0,3,4,5,9,11 */
    memcpy(cfg.explicit_lens, lens, sizeof lens);
    dl_case c;
    dl_test_build(&cfg, &c);
    ck_assert_int_eq(c.kv_indptr[3], 5);
    ck_assert_int_eq(dl_case_validate(&c, "good.h5"), 0);
    int32_t ip[6], ix[11], lp[5];
    memcpy(ip, c.kv_indptr, sizeof ip);
    memcpy(ix, c.kv_indices, sizeof ix);
    memcpy(lp, c.kv_last_page_len, sizeof lp);
#define RESTORE() (memcpy(c.kv_indptr, ip, sizeof ip), memcpy(c.kv_indices, ix, sizeof ix), \
                   memcpy(c.kv_last_page_len, lp, sizeof lp))
    c.kv_indptr[0] = 1;
    expect_reject(&c, "/inputs/kv_indptr[0]", "= 1");
    RESTORE();
    c.kv_indptr[3] = 3; /* less than kv_indptr[2] = 4 */
    expect_reject(&c, "/inputs/kv_indptr[3]", "= 3");
    RESTORE();
    c.kv_indptr[3] = 4; /* request 2 gets no page */
    expect_reject(&c, "/inputs/kv_indptr[3]", "no page");
    RESTORE();
    c.kv_indices[7] = -1;
    expect_reject(&c, "/inputs/kv_indices[7]", "= -1");
    RESTORE();
    c.kv_indices[2] = (int32_t)c.num_pages;
    expect_reject(&c, "/inputs/kv_indices[2]", "= 11");
    RESTORE();
    c.kv_last_page_len[4] = 0;
    expect_reject(&c, "/inputs/kv_last_page_len[4]", "= 0");
    RESTORE();
    c.kv_last_page_len[1] = 5; /* page_size is 4 */
    expect_reject(&c, "/inputs/kv_last_page_len[1]", "= 5");
    RESTORE();
    /* a page shared between requests (prefix caching) is legal: request 3's first page = request 0's */
    c.kv_indices[5] = c.kv_indices[0];
    ck_assert_msg(dl_case_validate(&c, "good.h5") == 0, "%s", dl_last_error());
    RESTORE();
    /* the same page twice in one request is refused, naming both positions */
    c.kv_indices[6] = c.kv_indices[5];
    expect_reject(&c, "page", "appears twice in request 3 (kv_indices[5] and kv_indices[6])");
    RESTORE();
    c.cfg.page_size = 300;
    expect_reject(&c, "page_size", "300");
    c.cfg.page_size = 4;
    ck_assert_int_eq(dl_case_validate(&c, "good.h5"), 0);

    /* values: a NaN code in a used slot, and a bad scale */
    int64_t o = dl_case_token_offset(&c, 3, 12, 1) + 5;
    uint8_t keep = ((uint8_t *)c.k_cache)[o];
    ((uint8_t *)c.k_cache)[o] = DL_E4M3_NAN;
    dl_clear_error();
    ck_assert_int_ne(dl_case_check_values(&c, "bad.h5"), 0);
    ck_assert_msg(strstr(dl_last_error(), "/inputs/k_cache") && strstr(dl_last_error(), "token 12"), "%s",
                  dl_last_error());
    ((uint8_t *)c.k_cache)[o] = keep;
    c.v_scale[1] = 0;
    ck_assert_int_ne(dl_case_check_values(&c, "bad.h5"), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "/inputs/v_scale[1]"));
    dl_case_free(&c);
}
END_TEST

/* --share-prefix N (prefix caching): the first N page-table entries of every request are
 * request 0's first N physical pages; the other pages are distinct and own, P = nnz - (B-1) N;
 * the shared tokens hold request 0's values; N = 0 is the unshared builder bit for bit; a
 * prefix longer than the shortest request's full pages is refused. */
START_TEST(test_share_prefix)
{
    for (int lay = 0; lay < 2; lay++) {
        dl_config cfg = small_cfg();
        cfg.kv_layout = lay ? DL_HND : DL_NHD;
        cfg.batch_size = 5;
        cfg.num_explicit_lens = 5;
        const int64_t lens[5] = {13, 8, 9, 23, 12}; /* page 4: full pages 3, 2, 2, 5, 3 */
        memcpy(cfg.explicit_lens, lens, sizeof lens);
        dl_case plain, c;
        dl_test_build(&cfg, &plain);
        cfg.share_prefix_pages = 0;
        dl_test_build(&cfg, &c); /* N = 0: the same bytes as before the option existed */
        ck_assert_int_eq(c.num_pages, plain.num_pages);
        ck_assert(!memcmp(c.kv_indices, plain.kv_indices, (size_t)plain.num_pages * 4));
        dl_case_free(&c);
        cfg.share_prefix_pages = 2;
        dl_test_build(&cfg, &c);
        const int64_t B = 5, N = 2, nnz = c.kv_indptr[B];
        ck_assert_int_eq(nnz, plain.kv_indptr[B]); /* the page table has as many entries */
        ck_assert_int_eq(c.num_pages, nnz - (B - 1) * N);
        for (int64_t b = 0; b < B; b++) ck_assert_int_eq(walk_len_of(&c, b), lens[b]);
        /* shared entries are request 0's pages; every other entry is a page of its own */
        int *uses = calloc((size_t)c.num_pages, sizeof *uses);
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = c.kv_indptr[b]; i < c.kv_indptr[b + 1]; i++) {
                const int64_t k = i - c.kv_indptr[b];
                ck_assert(c.kv_indices[i] >= 0 && c.kv_indices[i] < c.num_pages);
                if (b > 0 && k < N) ck_assert_int_eq(c.kv_indices[i], c.kv_indices[k]);
                else uses[c.kv_indices[i]]++;
            }
        for (int64_t p = 0; p < c.num_pages; p++) ck_assert_int_eq(uses[p], 1); /* a permutation of 0..P-1 */
        free(uses);
        ck_assert_int_eq(dl_case_validate(&c, "shared.h5"), 0);
        ck_assert_int_eq(dl_case_check_share(&c, "shared.h5"), 0);
        ck_assert_int_eq(dl_case_check_values(&c, "shared.h5"), 0);
        /* values: a shared token of request b is request 0's token; past the prefix, request b's own
         * values are those of the unshared case (counters of (b, t)) */
        const int64_t H = cfg.num_kv_heads, D = cfg.head_dim;
        for (int64_t b = 0; b < B; b++)
            for (int64_t t = 0; t < lens[b]; t++)
                for (int64_t h = 0; h < H; h++)
                    for (int64_t d = 0; d < D; d++) {
                        const float x = c.k_orig[walk_off(&c, b, t, h) + d];
                        const float want = t < N * cfg.page_size ? c.k_orig[walk_off(&c, 0, t, h) + d]
                                                                 : plain.k_orig[walk_off(&plain, b, t, h) + d];
                        ck_assert_msg(x == want, "b %lld t %lld h %lld d %lld", (long long)b, (long long)t,
                                      (long long)h, (long long)d);
                        const float y = c.v_orig[walk_off(&c, b, t, h) + d];
                        const float wv = t < N * cfg.page_size ? c.v_orig[walk_off(&c, 0, t, h) + d]
                                                               : plain.v_orig[walk_off(&plain, b, t, h) + d];
                        ck_assert(y == wv);
                    }
        /* a page table that does not share what the config says is refused */
        int32_t keep = c.kv_indices[c.kv_indptr[3] + 1];
        c.kv_indices[c.kv_indptr[3] + 1] = c.kv_indices[c.kv_indptr[3] + 2];
        dl_clear_error();
        ck_assert_int_ne(dl_case_check_share(&c, "lie.h5"), 0);
        ck_assert_msg(strstr(dl_last_error(), "share_prefix_pages = 2") && strstr(dl_last_error(), "request 3"), "%s",
                      dl_last_error());
        c.kv_indices[c.kv_indptr[3] + 1] = keep;
        c.cfg.share_prefix_pages = 3; /* request 1 has 2 full pages */
        ck_assert_int_ne(dl_case_check_share(&c, "lie.h5"), 0);
        ck_assert_msg(strstr(dl_last_error(), "request 1 has 8 tokens"), "%s", dl_last_error());
        dl_case_free(&c);
        dl_case_free(&plain);
        /* more than the shortest request's full pages: refused by the config check */
        cfg.share_prefix_pages = 3;
        dl_clear_error();
        ck_assert_int_ne(dl_case_build(&cfg, &c), 0);
        ck_assert_msg(strstr(dl_last_error(), "share_prefix_pages = 3") && strstr(dl_last_error(), "8 tokens"), "%s",
                      dl_last_error());
        /* a length range: its minimum bounds N */
        cfg.num_explicit_lens = 0;
        cfg.seq_len_min = 8;
        cfg.seq_len_max = 30;
        cfg.share_prefix_pages = 2;
        dl_test_build(&cfg, &c);
        ck_assert_int_eq(dl_case_check_share(&c, "range.h5"), 0);
        dl_case_free(&c);
        cfg.seq_len_min = 7;
        ck_assert_int_ne(dl_case_build(&cfg, &c), 0);
    }
}
END_TEST

/* The sink distribution: K of the first sink_tokens tokens of each request is the normal draw plus a
 * shift w that raises sm_scale * q_h . k by sink_delta for every query head h of the KV head's group
 * (checked here in double on the originals); every other K and all of V equal the normal case's. */
START_TEST(test_sink_shift)
{
    dl_config cn = small_cfg();
    cn.seq_len_min = 2;
    dl_config cs = cn;
    cs.dist.kind = DL_DIST_SINK;
    cs.dist.sink_tokens = 3;
    cs.dist.sink_delta = 7.25;
    dl_case n, s;
    dl_test_build(&cn, &n);
    dl_test_build(&cs, &s);
    const int64_t H = cn.num_kv_heads, D = cn.head_dim, G = cn.num_qo_heads / H;
    const double sm = 1.0 / sqrt((double)D);
    int shifted = 0;
    for (int64_t b = 0; b < cn.batch_size; b++) {
        const int64_t len = dl_case_seq_len(&n, b);
        for (int64_t t = 0; t < len; t++)
            for (int64_t g = 0; g < H; g++) {
                const int64_t off = walk_off(&n, b, t, g);
                ck_assert(memcmp(n.v_orig + off, s.v_orig + off, (size_t)D * 4) == 0);
                if (t >= 3) {
                    ck_assert(memcmp(n.k_orig + off, s.k_orig + off, (size_t)D * 4) == 0);
                    continue;
                }
                shifted++;
                for (int64_t r = 0; r < G; r++) {
                    double boost = 0.0;
                    for (int64_t d = 0; d < D; d++)
                        boost += (double)dl_case_q(&s, (b * cn.num_qo_heads + g * G + r) * D + d) *
                                 ((double)s.k_orig[off + d] - (double)n.k_orig[off + d]);
                    ck_assert_msg(fabs(sm * boost - 7.25) < 1e-4, "b %lld t %lld head %lld: boost %.9g",
                                  (long long)b, (long long)t, (long long)(g * G + r), sm * boost);
                }
            }
    }
    ck_assert_int_ge(shifted, 2 * 2 * 5);
    ck_assert_int_eq(dl_dist_parse("sink", &cs.dist.kind), 0);
    ck_assert_int_eq(cs.dist.kind, DL_DIST_SINK);
    char name[256];
    dl_config_name(&cs, name, sizeof name);
    ck_assert_msg(strstr(name, "dist=sink(3,7.25)") != NULL, "%s", name);
    /* a shared prefix would hold the sink keys, which each request shifts for its own queries: refused */
    dl_config csp = cs; /* requests long enough to share a full page */
    csp.seq_len_min = 2 * csp.page_size;
    if (csp.seq_len_max < csp.seq_len_min) csp.seq_len_max = csp.seq_len_min;
    ck_assert_int_eq(dl_config_validate(&csp), 0);
    csp.share_prefix_pages = 1;
    ck_assert_int_ne(dl_config_validate(&csp), 0);
    ck_assert_msg(strstr(dl_last_error(), "share_prefix_pages = 1 with distribution sink") != NULL, "%s", dl_last_error());
    csp.dist.sink_tokens = 0; /* no sink keys: nothing to share */
    ck_assert_msg(dl_config_validate(&csp) == 0, "%s", dl_last_error());
    cs.dist.sink_delta = NAN;
    ck_assert_int_ne(dl_config_validate(&cs), 0);
    ck_assert_msg(strstr(dl_last_error(), "sink_delta") != NULL, "%s", dl_last_error());
    dl_case_free(&n);
    dl_case_free(&s);
}
END_TEST

DL_TEST_SUITE("paged", 120, NULL, NULL,
              test_lengths_in_range, test_explicit_lengths_and_page_sizes, test_pages_scattered,
              test_poison_exactly_in_unused_slots, test_layouts_hold_same_logical_values,
              test_page_size_keeps_logical_values, test_quantization_error_bounded, test_scale_modes,
              test_channel_outliers, test_sink_shift, test_q_storage, test_threads_bit_identical,
              test_build_rejects_bad_config, test_validate_rejects_bad_tables, test_share_prefix)

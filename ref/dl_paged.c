/* dl_paged.c - builds a decode-attention case (Q, a paged KV cache in CSR form,
 * scales, originals) from a config with the counter-based RNG, and the
 * accessors and page-table checks shared by the reference, the HDF5 reader and
 * the GPU harness.
 *
 * Every generated value is a pure function of (seed, tensor, logical position),
 * see the counter scheme in dl_paged.h, so the fills may run on any number of
 * OpenMP threads and layout, page size and page permutation never change a
 * logical value. */
#include "dl_paged.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dl_formats.h"
#include "dl_rng.h"

/* ---- element encode / decode ---- */

float dl_decode_elem(dl_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case DL_F32: return ((const float *)p)[i];
    case DL_F16: return dl_f16_to_f32(((const uint16_t *)p)[i]);
    case DL_BF16: return dl_bf16_to_f32(((const uint16_t *)p)[i]);
    case DL_E4M3: return dl_e4m3_to_f32(((const uint8_t *)p)[i]);
    case DL_E5M2: return dl_e5m2_to_f32(((const uint8_t *)p)[i]);
    default: return NAN;
    }
}

void dl_encode_elem(dl_dtype t, void *p, int64_t i, float x)
{
    switch (t) {
    case DL_F32: ((float *)p)[i] = x; break;
    case DL_F16: ((uint16_t *)p)[i] = dl_f32_to_f16(x, DL_SATFINITE); break;
    case DL_BF16: ((uint16_t *)p)[i] = dl_f32_to_bf16(x, DL_SATFINITE); break;
    case DL_E4M3: ((uint8_t *)p)[i] = dl_f32_to_e4m3(x, DL_SATFINITE); break;
    case DL_E5M2: ((uint8_t *)p)[i] = dl_f32_to_e5m2(x, DL_SATFINITE); break;
    default: break;
    }
}

/* Store the format's canonical NaN (the poison) at index i. */
static void store_poison(dl_dtype t, void *p, int64_t i)
{
    switch (t) {
    case DL_F32: ((float *)p)[i] = NAN; break;
    case DL_F16: ((uint16_t *)p)[i] = DL_F16_NAN; break;
    case DL_BF16: ((uint16_t *)p)[i] = DL_BF16_NAN; break;
    case DL_E4M3: ((uint8_t *)p)[i] = DL_E4M3_NAN; break;
    case DL_E5M2: ((uint8_t *)p)[i] = DL_E5M2_NAN; break;
    default: break;
    }
}

double dl_dtype_max_finite(dl_dtype t)
{
    switch (t) {
    case DL_F32: return 3.4028234663852886e38;
    case DL_F16: return 65504.0;
    case DL_BF16: return 3.3895313892515355e38;
    case DL_E4M3: return DL_E4M3_MAX;
    case DL_E5M2: return DL_E5M2_MAX;
    default: return 0.0;
    }
}

/* ---- shapes and offsets ---- */

int64_t dl_case_seq_len(const dl_case *c, int64_t b)
{
    return (int64_t)(c->kv_indptr[b + 1] - c->kv_indptr[b] - 1) * c->cfg.page_size + c->kv_last_page_len[b];
}

int64_t dl_case_max_seq_len(const dl_case *c)
{
    int64_t m = 0;
    for (int64_t b = 0; b < c->cfg.batch_size; b++)
        if (dl_case_seq_len(c, b) > m) m = dl_case_seq_len(c, b);
    return m;
}

int64_t dl_kv_offset(const dl_config *cfg, int64_t page, int64_t slot, int64_t head)
{
    if (cfg->kv_layout == DL_NHD)
        return ((page * cfg->page_size + slot) * cfg->num_kv_heads + head) * cfg->head_dim;
    return ((page * cfg->num_kv_heads + head) * cfg->page_size + slot) * cfg->head_dim;
}

int64_t dl_case_token_offset(const dl_case *c, int64_t b, int64_t t, int64_t head)
{
    int64_t ps = c->cfg.page_size;
    int64_t page = c->kv_indices[c->kv_indptr[b] + t / ps];
    return dl_kv_offset(&c->cfg, page, t % ps, head);
}

int64_t dl_case_cache_elems(const dl_case *c)
{
    return c->num_pages * c->cfg.page_size * c->cfg.num_kv_heads * c->cfg.head_dim;
}

float dl_case_q(const dl_case *c, int64_t i) { return dl_decode_elem(c->cfg.q_dtype, c->q, i); }
float dl_case_k_code(const dl_case *c, int64_t i) { return dl_decode_elem(c->cfg.kv_dtype, c->k_cache, i); }
float dl_case_v_code(const dl_case *c, int64_t i) { return dl_decode_elem(c->cfg.kv_dtype, c->v_cache, i); }

/* ---- generated values ---- */

uint64_t dl_q_counter(int64_t b, int64_t h, int64_t d)
{
    return ((((uint64_t)b << 10) | (uint64_t)h) << 10) | (uint64_t)d;
}

uint64_t dl_kv_counter(int64_t b, int64_t t, int64_t h, int64_t d)
{
    return ((((((uint64_t)b << 20) | (uint64_t)t) << 10) | (uint64_t)h) << 10) | (uint64_t)d;
}

void dl_dist_draw2(const dl_dist_params *dp, uint64_t seed, uint64_t stream, uint64_t k, double out[2])
{
    switch (dp->kind) {
    case DL_DIST_NORMAL:
    case DL_DIST_SINK: /* normal draws; the sink shift is added to K afterwards (add_sink_shift) */
        dl_rng_normal2(seed, stream, 4 * k, out);
        out[0] = dp->mean + dp->std * out[0];
        out[1] = dp->mean + dp->std * out[1];
        return;
    case DL_DIST_UNIFORM:
        for (int l = 0; l < 2; l++) out[l] = dp->lo + (dp->hi - dp->lo) * dl_rng_uniform(seed, stream, 8 * k + 4 + l);
        return;
    case DL_DIST_OUTLIER: {
        dl_rng_normal2(seed, stream, 4 * k, out);
        int hit0 = dl_rng_uniform(seed, stream, 8 * k + 4) < dp->outlier_prob;
        int hit1 = dl_rng_uniform(seed, stream, 8 * k + 5) < dp->outlier_prob;
        if (hit0 || hit1) {
            double extra[2];
            dl_rng_normal2(seed, stream, 4 * k + 1, extra);
            double sd = sqrt(dp->outlier_var);
            if (hit0) out[0] += sd * extra[0];
            if (hit1) out[1] += sd * extra[1];
        }
        return;
    }
    case DL_DIST_CHANNEL_OUTLIER:
        dl_rng_normal2(seed, stream, 4 * k, out);
        return;
    default:
        out[0] = out[1] = NAN;
    }
}

double dl_dist_draw(const dl_dist_params *dp, uint64_t seed, uint64_t stream, uint64_t e)
{
    double v[2];
    dl_dist_draw2(dp, seed, stream, e >> 1, v);
    return v[e & 1];
}

int dl_outlier_channels(const dl_config *cfg, int64_t *channels)
{
    int64_t D = cfg->head_dim, n = cfg->dist.num_outlier_channels;
    if (n < 0 || n > D) return dl_fail("config: num_outlier_channels = %lld is outside 0..%lld", (long long)n, (long long)D);
    int64_t *all = dl_malloc((size_t)D * sizeof *all, "outlier channel permutation");
    if (!all) return -1;
    for (int64_t i = 0; i < D; i++) all[i] = i;
    /* partial Fisher-Yates: position i takes a random one of the D-i remaining */
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i + (int64_t)dl_rng_below(cfg->seed, DL_STREAM_CHANNELS, (uint64_t)i, (uint64_t)(D - i));
        int64_t tmp = all[i]; all[i] = all[j]; all[j] = tmp;
        channels[i] = all[i];
    }
    free(all);
    return 0;
}

void dl_case_free(dl_case *c)
{
    if (!c) return;
    free(c->q); free(c->k_cache); free(c->v_cache);
    free(c->k_scale); free(c->v_scale);
    free(c->kv_indptr); free(c->kv_indices); free(c->kv_last_page_len);
    dl_case_drop_originals(c);
    memset(c, 0, sizeof *c);
}

void dl_case_drop_originals(dl_case *c)
{
    free(c->q_orig); free(c->k_orig); free(c->v_orig);
    c->q_orig = c->k_orig = c->v_orig = NULL;
}

/* Per-KV-head scales of one cache tensor from its originals (poison is NaN and skipped). */
static void choose_scales(const dl_config *cfg, int64_t num_pages, const float *orig, float *scale)
{
    int64_t H = cfg->num_kv_heads, ps = cfg->page_size, D = cfg->head_dim;
    dl_dtype t = cfg->kv_dtype;
    int fp8 = (t == DL_E4M3 || t == DL_E5M2);
    if (cfg->kv_scale_mode == DL_SCALE_GIVEN || !fp8) {
        float s = cfg->kv_scale_mode == DL_SCALE_GIVEN ? (float)cfg->kv_scale_value : 1.0f;
        for (int64_t h = 0; h < H; h++) scale[h] = s;
        return;
    }
    float fmax = (float)dl_dtype_max_finite(t);
    /* max is exact and order-free, so the per-head loops may run on any thread */
    #pragma omp parallel for schedule(static)
    for (int64_t h = 0; h < H; h++) {
        float m = 0.0f;
        for (int64_t p = 0; p < num_pages; p++)
            for (int64_t s = 0; s < ps; s++) {
                const float *row = orig + dl_kv_offset(cfg, p, s, h);
                for (int64_t d = 0; d < D; d++) {
                    float a = fabsf(row[d]);
                    if (a > m) m = a; /* false for NaN poison */
                }
            }
        scale[h] = m;
    }
    if (cfg->kv_scale_mode == DL_SCALE_ABSMAX_TENSOR) {
        float m = 0.0f;
        for (int64_t h = 0; h < H; h++) if (scale[h] > m) m = scale[h];
        for (int64_t h = 0; h < H; h++) scale[h] = m;
    }
    for (int64_t h = 0; h < H; h++) scale[h] = scale[h] > 0.0f ? scale[h] / fmax : 1.0f;
}

/* Solve the n x n system A x = b in place (Gaussian elimination, partial pivoting, double).
 * A tiny ridge keeps a singular A (linearly dependent queries) solvable. */
static void solve_small(double *A, double *b, int64_t n)
{
    double dmax = 0.0;
    for (int64_t i = 0; i < n; i++) dmax = A[i * n + i] > dmax ? A[i * n + i] : dmax;
    for (int64_t i = 0; i < n; i++) A[i * n + i] += 1e-12 * dmax;
    for (int64_t k = 0; k < n; k++) {
        int64_t piv = k;
        for (int64_t i = k + 1; i < n; i++)
            if (fabs(A[i * n + k]) > fabs(A[piv * n + k])) piv = i;
        if (piv != k) {
            for (int64_t j = 0; j < n; j++) {
                double t = A[k * n + j]; A[k * n + j] = A[piv * n + j]; A[piv * n + j] = t;
            }
            double t = b[k]; b[k] = b[piv]; b[piv] = t;
        }
        if (A[k * n + k] == 0.0) continue;
        for (int64_t i = k + 1; i < n; i++) {
            double f = A[i * n + k] / A[k * n + k];
            for (int64_t j = k; j < n; j++) A[i * n + j] -= f * A[k * n + j];
            b[i] -= f * b[k];
        }
    }
    for (int64_t k = n - 1; k >= 0; k--) {
        double acc = b[k];
        for (int64_t j = k + 1; j < n; j++) acc -= A[k * n + j] * b[j];
        b[k] = A[k * n + k] != 0.0 ? acc / A[k * n + k] : 0.0;
    }
}

/* The attention sink (DL_DIST_SINK): for request b and KV head g, w is the minimum-norm vector in
 * the span of the group's stored queries q_h (decoded q_dtype values, h = g*G .. g*G+G-1) with
 * sm_scale * q_h . w = sink_delta for every h (w = Q^T c, (Q Q^T) c = sink_delta / sm_scale);
 * w is added (in double, rounded to float) to the original K of the request's first
 * min(sink_tokens, len_b) tokens, before scales are chosen and K is quantized. So every query head
 * of the group scores sink_delta more on a sink token than on the same unshifted draw (exactly
 * before storage rounding). V is not touched. */
static int add_sink_shift(dl_case *c, const int64_t *lens)
{
    const dl_config *cfg = &c->cfg;
    const int64_t B = cfg->batch_size, H = cfg->num_kv_heads, D = cfg->head_dim, G = dl_group_size(cfg);
    if (cfg->dist.kind != DL_DIST_SINK || cfg->dist.sink_tokens == 0) return 0;
    const double target = cfg->dist.sink_delta / dl_sm_scale(cfg);
    int failed = 0;
    #pragma omp parallel for schedule(dynamic, 1)
    for (int64_t t = 0; t < B * H; t++) {
        const int64_t b = t / H, g = t % H;
        double *Q = malloc((size_t)(G * D + G * G + G + D) * sizeof(double));
        if (!Q) {
            #pragma omp atomic write
            failed = 1;
            continue;
        }
        double *A = Q + G * D, *cv = A + G * G, *w = cv + G;
        for (int64_t r = 0; r < G; r++)
            for (int64_t d = 0; d < D; d++) Q[r * D + d] = (double)dl_case_q(c, (b * cfg->num_qo_heads + g * G + r) * D + d);
        for (int64_t i = 0; i < G; i++) {
            for (int64_t j = 0; j < G; j++) {
                double acc = 0.0;
                for (int64_t d = 0; d < D; d++) acc += Q[i * D + d] * Q[j * D + d];
                A[i * G + j] = acc;
            }
            cv[i] = target;
        }
        solve_small(A, cv, G);
        for (int64_t d = 0; d < D; d++) {
            double acc = 0.0;
            for (int64_t r = 0; r < G; r++) acc += Q[r * D + d] * cv[r];
            w[d] = acc;
        }
        const int64_t ns = cfg->dist.sink_tokens < lens[b] ? cfg->dist.sink_tokens : lens[b];
        for (int64_t tok = 0; tok < ns; tok++) {
            const int64_t off = dl_case_token_offset(c, b, tok, g);
            for (int64_t d = 0; d < D; d++) c->k_orig[off + d] = (float)((double)c->k_orig[off + d] + w[d]);
        }
        free(Q);
    }
    return failed ? dl_fail("dl_case_build: out of memory for the sink shift") : 0;
}

int dl_case_build(const dl_config *cfg, dl_case *out)
{
    memset(out, 0, sizeof *out);
    DL_TRY(dl_config_validate(cfg));
    dl_case *c = out;
    c->cfg = *cfg;
    const int64_t B = cfg->batch_size, Hq = cfg->num_qo_heads, H = cfg->num_kv_heads, D = cfg->head_dim;
    const int64_t ps = cfg->page_size, N = cfg->share_prefix_pages;
    const uint64_t seed = cfg->seed;
    int64_t *lens = NULL, *chan = NULL;
    int32_t *owner = NULL, *owner_page = NULL;
    unsigned char *chan_mask = NULL;

    /* sequence lengths and the CSR page table */
    lens = dl_malloc((size_t)B * sizeof *lens, "sequence lengths");
    c->kv_indptr = dl_malloc((size_t)(B + 1) * sizeof *c->kv_indptr, "kv_indptr");
    c->kv_last_page_len = dl_malloc((size_t)B * sizeof *c->kv_last_page_len, "kv_last_page_len");
    if (!lens || !c->kv_indptr || !c->kv_last_page_len) goto fail;
    int64_t total = 0;
    c->kv_indptr[0] = 0;
    for (int64_t b = 0; b < B; b++) {
        if (cfg->num_explicit_lens > 0)
            lens[b] = cfg->explicit_lens[b];
        else
            lens[b] = cfg->seq_len_min + (int64_t)dl_rng_below(seed, DL_STREAM_LENS, (uint64_t)b,
                                                               (uint64_t)(cfg->seq_len_max - cfg->seq_len_min + 1));
        int64_t pages = (lens[b] + ps - 1) / ps;
        total += pages;
        if (total > INT32_MAX) {
            dl_fail("dl_case_build: %lld pages in all do not fit the int32 page table", (long long)total);
            goto fail;
        }
        c->kv_indptr[b + 1] = (int32_t)total;
        c->kv_last_page_len[b] = (int32_t)(lens[b] - (pages - 1) * ps);
        if (lens[b] / ps < N) {
            dl_fail("dl_case_build: share_prefix_pages = %lld is more than the %lld full pages of request %lld "
                    "(%lld tokens)", (long long)N, (long long)(lens[b] / ps), (long long)b, (long long)lens[b]);
            goto fail;
        }
    }
    /* physical pages: request 0's, then every other request's own (its first N are request 0's) */
    const int64_t P = total - (B - 1) * N;
    c->num_pages = P;

    /* the physical pages, scattered by a Fisher-Yates permutation of 0..P-1, handed out in page-table
     * order; the first N entries of every request b > 0 repeat request 0's first N */
    int32_t *perm = dl_malloc((size_t)P * sizeof *perm, "page permutation");
    c->kv_indices = dl_malloc((size_t)total * sizeof *c->kv_indices, "kv_indices");
    owner = dl_malloc((size_t)P * sizeof *owner, "page owners");
    owner_page = dl_malloc((size_t)P * sizeof *owner_page, "page owners");
    if (!perm || !c->kv_indices || !owner || !owner_page) {
        free(perm);
        goto fail;
    }
    for (int64_t i = 0; i < P; i++) perm[i] = (int32_t)i;
    for (int64_t i = P - 1; i > 0; i--) {
        int64_t j = (int64_t)dl_rng_below(seed, DL_STREAM_PAGES, (uint64_t)i, (uint64_t)(i + 1));
        int32_t tmp = perm[i]; perm[i] = perm[j]; perm[j] = tmp;
    }
    int64_t u = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = c->kv_indptr[b]; i < c->kv_indptr[b + 1]; i++) {
            const int64_t k = i - c->kv_indptr[b];
            if (b > 0 && k < N) {
                c->kv_indices[i] = c->kv_indices[c->kv_indptr[0] + k]; /* shared: request 0's page k */
                continue;
            }
            c->kv_indices[i] = perm[u++];
            owner[c->kv_indices[i]] = (int32_t)b;
            owner_page[c->kv_indices[i]] = (int32_t)k;
        }
    free(perm);

    /* channel outliers of K */
    chan_mask = dl_calloc((size_t)D, 1, "outlier channel mask");
    if (!chan_mask) goto fail;
    if (cfg->dist.kind == DL_DIST_CHANNEL_OUTLIER && cfg->dist.num_outlier_channels > 0) {
        chan = dl_malloc((size_t)cfg->dist.num_outlier_channels * sizeof *chan, "outlier channels");
        if (!chan || dl_outlier_channels(cfg, chan) != 0) goto fail;
        for (int64_t i = 0; i < cfg->dist.num_outlier_channels; i++) chan_mask[chan[i]] = 1;
    }

    /* Q */
    const int64_t nq = B * Hq * D;
    c->q_orig = dl_malloc((size_t)nq * sizeof(float), "q_orig");
    c->q = dl_malloc((size_t)nq * dl_dtype_size(cfg->q_dtype), "q");
    if (!c->q_orig || !c->q) goto fail;
    #pragma omp parallel for schedule(static)
    for (int64_t bh = 0; bh < B * Hq; bh++) {
        int64_t b = bh / Hq, h = bh % Hq;
        for (int64_t d = 0; d < D; d++) {
            float x = (float)dl_dist_draw(&cfg->dist, seed, DL_STREAM_Q, dl_q_counter(b, h, d));
            c->q_orig[bh * D + d] = x;
            dl_encode_elem(cfg->q_dtype, c->q, bh * D + d, x);
        }
    }

    /* K and V originals in the physical layout, NaN in the unused slots */
    const int64_t ne = P * ps * H * D;
    size_t esz = dl_dtype_size(cfg->kv_dtype);
    c->k_orig = dl_malloc((size_t)ne * sizeof(float), "k_orig");
    c->v_orig = dl_malloc((size_t)ne * sizeof(float), "v_orig");
    c->k_cache = dl_malloc((size_t)ne * esz, "k_cache");
    c->v_cache = dl_malloc((size_t)ne * esz, "v_cache");
    c->k_scale = dl_malloc((size_t)H * sizeof(float), "k_scale");
    c->v_scale = dl_malloc((size_t)H * sizeof(float), "v_scale");
    if (!c->k_orig || !c->v_orig || !c->k_cache || !c->v_cache || !c->k_scale || !c->v_scale) goto fail;
    const float kscale_ch = (float)cfg->dist.channel_scale;
    const int chan_on = cfg->dist.kind == DL_DIST_CHANNEL_OUTLIER;
    #pragma omp parallel for schedule(dynamic, 1)
    for (int64_t p = 0; p < P; p++) {
        int64_t b = owner[p], t0 = (int64_t)owner_page[p] * ps;
        for (int64_t s = 0; s < ps; s++) {
            int64_t t = t0 + s;
            for (int64_t h = 0; h < H; h++) {
                int64_t off = dl_kv_offset(cfg, p, s, h);
                /* d and d+1 share one Box-Muller pair (element counters 2k, 2k+1) */
                for (int64_t d = 0; d < D; d += 2) {
                    double kd[2] = {NAN, NAN}, vd[2] = {NAN, NAN};
                    if (t < lens[b]) {
                        uint64_t k = dl_kv_counter(b, t, h, d) >> 1;
                        dl_dist_draw2(&cfg->dist, seed, DL_STREAM_K, k, kd);
                        dl_dist_draw2(&cfg->dist, seed, DL_STREAM_V, k, vd);
                    }
                    for (int64_t l = 0; l < 2 && d + l < D; l++) {
                        double kx = kd[l];
                        if (chan_on && chan_mask[d + l]) kx *= kscale_ch;
                        c->k_orig[off + d + l] = (float)kx;
                        c->v_orig[off + d + l] = (float)vd[l];
                    }
                }
            }
        }
    }

    /* the attention sink (distribution sink): shift the first keys of each request */
    if (add_sink_shift(c, lens)) goto fail;

    /* scales, then the stored codes: code = encode(orig / scale), poison where orig is NaN */
    choose_scales(cfg, P, c->k_orig, c->k_scale);
    choose_scales(cfg, P, c->v_orig, c->v_scale);
    #pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < P; p++)
        for (int64_t s = 0; s < ps; s++)
            for (int64_t h = 0; h < H; h++) {
                int64_t off = dl_kv_offset(cfg, p, s, h);
                for (int64_t d = 0; d < D; d++) {
                    float kx = c->k_orig[off + d], vx = c->v_orig[off + d];
                    if (isnan(kx)) store_poison(cfg->kv_dtype, c->k_cache, off + d);
                    else dl_encode_elem(cfg->kv_dtype, c->k_cache, off + d, kx / c->k_scale[h]);
                    if (isnan(vx)) store_poison(cfg->kv_dtype, c->v_cache, off + d);
                    else dl_encode_elem(cfg->kv_dtype, c->v_cache, off + d, vx / c->v_scale[h]);
                }
            }

    free(lens); free(chan); free(chan_mask); free(owner); free(owner_page);
    return 0;
fail:
    free(lens); free(chan); free(chan_mask); free(owner); free(owner_page);
    dl_case_free(c);
    return -1;
}

/* ---- checks for cases read from disk ---- */

int dl_case_validate(const dl_case *c, const char *source)
{
    const dl_config *cfg = &c->cfg;
    if (!source) source = "case";
    if (cfg->batch_size < 1 || cfg->batch_size > DL_MAX_BATCH)
        return dl_fail("%s: /config batch_size = %lld is outside 1..%d", source, (long long)cfg->batch_size, DL_MAX_BATCH);
    if (cfg->page_size < 1 || cfg->page_size > DL_MAX_PAGE_SIZE)
        return dl_fail("%s: /config page_size = %lld is outside 1..%d", source, (long long)cfg->page_size,
                       DL_MAX_PAGE_SIZE);
    if (cfg->num_kv_heads < 1 || cfg->num_kv_heads > DL_MAX_HEADS)
        return dl_fail("%s: /config num_kv_heads = %lld is outside 1..%d", source, (long long)cfg->num_kv_heads,
                       DL_MAX_HEADS);
    if (cfg->num_qo_heads < 1 || cfg->num_qo_heads > DL_MAX_HEADS || cfg->num_qo_heads % cfg->num_kv_heads != 0)
        return dl_fail("%s: /config num_qo_heads = %lld is outside 1..%d or not a multiple of num_kv_heads = %lld",
                       source, (long long)cfg->num_qo_heads, DL_MAX_HEADS, (long long)cfg->num_kv_heads);
    if (cfg->head_dim < 1 || cfg->head_dim > DL_MAX_HEAD_DIM)
        return dl_fail("%s: /config head_dim = %lld is outside 1..%d", source, (long long)cfg->head_dim,
                       DL_MAX_HEAD_DIM);
    if (c->num_pages < 0 || c->num_pages > INT32_MAX)
        return dl_fail("%s: /inputs/k_cache has %lld pages, outside 0..%d", source, (long long)c->num_pages, INT32_MAX);
    if (!c->kv_indptr || !c->kv_last_page_len || (!c->kv_indices && c->kv_indptr[cfg->batch_size] > 0))
        return dl_fail("%s: the page table is missing", source);
    const int64_t B = cfg->batch_size, ps = cfg->page_size;
    if (c->kv_indptr[0] != 0)
        return dl_fail("%s: /inputs/kv_indptr[0] = %d, expected 0", source, c->kv_indptr[0]);
    for (int64_t b = 0; b < B; b++) {
        int64_t lo = c->kv_indptr[b], hi = c->kv_indptr[b + 1];
        if (hi < lo)
            return dl_fail("%s: /inputs/kv_indptr[%lld] = %lld is less than kv_indptr[%lld] = %lld (not monotone)",
                           source, (long long)(b + 1), (long long)hi, (long long)b, (long long)lo);
        if (hi == lo)
            return dl_fail("%s: /inputs/kv_indptr[%lld] = %lld equals kv_indptr[%lld]: request %lld has no page",
                           source, (long long)(b + 1), (long long)hi, (long long)b, (long long)b);
        if ((hi - lo) > DL_MAX_SEQ_LEN / ps + 1)
            return dl_fail("%s: /inputs/kv_indptr[%lld] = %lld gives request %lld %lld pages, over the limit %d tokens",
                           source, (long long)(b + 1), (long long)hi, (long long)b, (long long)(hi - lo),
                           DL_MAX_SEQ_LEN);
    }
    for (int64_t b = 0; b < B; b++) {
        int32_t l = c->kv_last_page_len[b];
        if (l < 1 || l > ps)
            return dl_fail("%s: /inputs/kv_last_page_len[%lld] = %d is outside 1..page_size (%lld)", source,
                           (long long)b, l, (long long)ps);
        int64_t len = dl_case_seq_len(c, b);
        if (len > DL_MAX_SEQ_LEN)
            return dl_fail("%s: /inputs/kv_last_page_len[%lld]: request %lld has %lld tokens, over the limit %d",
                           source, (long long)b, (long long)b, (long long)len, DL_MAX_SEQ_LEN);
    }
    int64_t nnz = c->kv_indptr[B];
    for (int64_t i = 0; i < nnz; i++)
        if (c->kv_indices[i] < 0 || c->kv_indices[i] >= c->num_pages)
            return dl_fail("%s: /inputs/kv_indices[%lld] = %d is outside 0..%lld (num_pages = %lld)", source,
                           (long long)i, c->kv_indices[i], (long long)(c->num_pages - 1), (long long)c->num_pages);
    /* Pages may be shared between requests (prefix caching), never repeated within one: a request
     * that lists a page twice would hold the same K/V at two positions, which no cache producer
     * writes (an append would overwrite one of them) - it is a page-table bug, refused. */
    int64_t *seen = nnz > 0 ? dl_malloc((size_t)c->num_pages * sizeof *seen, "page check") : NULL;
    if (nnz > 0 && !seen) return -1;
    for (int64_t p = 0; p < (nnz > 0 ? c->num_pages : 0); p++) seen[p] = -1;
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = c->kv_indptr[b]; i < c->kv_indptr[b + 1]; i++) {
            const int32_t pg = c->kv_indices[i];
            if (seen[pg] >= c->kv_indptr[b]) {
                int64_t first = seen[pg];
                free(seen);
                return dl_fail("%s: /inputs/kv_indices: page %d appears twice in request %lld (kv_indices[%lld] and "
                               "kv_indices[%lld]): a request's pages must be distinct (sharing a page between "
                               "requests is allowed)", source, pg, (long long)b, (long long)first, (long long)i);
            }
            seen[pg] = i;
        }
    free(seen);
    return 0;
}

int dl_case_check_share(const dl_case *c, const char *source)
{
    const dl_config *cfg = &c->cfg;
    const int64_t N = cfg->share_prefix_pages, ps = cfg->page_size;
    if (!source) source = "case";
    if (N == 0) return 0;
    if (N < 0) return dl_fail("%s: /config@share_prefix_pages = %lld is negative", source, (long long)N);
    for (int64_t b = 0; b < cfg->batch_size; b++) {
        const int64_t full = dl_case_seq_len(c, b) / ps;
        if (full < N)
            return dl_fail("%s: /config@share_prefix_pages = %lld, but request %lld has %lld tokens = %lld full "
                           "pages of %lld", source, (long long)N, (long long)b, (long long)dl_case_seq_len(c, b),
                           (long long)full, (long long)ps);
        for (int64_t k = 0; k < N && b > 0; k++)
            if (c->kv_indices[c->kv_indptr[b] + k] != c->kv_indices[c->kv_indptr[0] + k])
                return dl_fail("%s: /config@share_prefix_pages = %lld, but page %lld of request %lld is "
                               "kv_indices[%lld] = %d, not request 0's page %d", source, (long long)N, (long long)k,
                               (long long)b, (long long)(c->kv_indptr[b] + k), c->kv_indices[c->kv_indptr[b] + k],
                               c->kv_indices[c->kv_indptr[0] + k]);
    }
    return 0;
}

int dl_case_check_values(const dl_case *c, const char *source)
{
    const dl_config *cfg = &c->cfg;
    const int64_t B = cfg->batch_size, Hq = cfg->num_qo_heads, H = cfg->num_kv_heads, D = cfg->head_dim;
    if (!source) source = "case";
    for (int64_t h = 0; h < H; h++) {
        if (!(c->k_scale[h] > 0.0f) || !isfinite(c->k_scale[h]))
            return dl_fail("%s: /inputs/k_scale[%lld] = %g must be finite and > 0", source, (long long)h,
                           (double)c->k_scale[h]);
        if (!(c->v_scale[h] > 0.0f) || !isfinite(c->v_scale[h]))
            return dl_fail("%s: /inputs/v_scale[%lld] = %g must be finite and > 0", source, (long long)h,
                           (double)c->v_scale[h]);
    }
    for (int64_t i = 0; i < B * Hq * D; i++) {
        float x = dl_case_q(c, i);
        if (!isfinite(x))
            return dl_fail("%s: /inputs/q[%lld][%lld][%lld] = %g is not finite", source, (long long)(i / (Hq * D)),
                           (long long)(i / D % Hq), (long long)(i % D), (double)x);
    }
    for (int64_t b = 0; b < B; b++) {
        int64_t len = dl_case_seq_len(c, b);
        for (int64_t t = 0; t < len; t++)
            for (int64_t h = 0; h < H; h++) {
                int64_t off = dl_case_token_offset(c, b, t, h);
                for (int64_t d = 0; d < D; d++) {
                    float k = dl_case_k_code(c, off + d), v = dl_case_v_code(c, off + d);
                    if (!isfinite(k) || !isfinite(v))
                        return dl_fail("%s: /inputs/%s element %lld (request %lld, token %lld, kv head %lld, d %lld) "
                                       "= %g is not finite", source, isfinite(k) ? "v_cache" : "k_cache",
                                       (long long)(off + d), (long long)b, (long long)t, (long long)h, (long long)d,
                                       (double)(isfinite(k) ? v : k));
                    if (c->k_orig && !isfinite(c->k_orig[off + d]))
                        return dl_fail("%s: /inputs/k_orig element %lld (request %lld, token %lld) is not finite",
                                       source, (long long)(off + d), (long long)b, (long long)t);
                    if (c->v_orig && !isfinite(c->v_orig[off + d]))
                        return dl_fail("%s: /inputs/v_orig element %lld (request %lld, token %lld) is not finite",
                                       source, (long long)(off + d), (long long)b, (long long)t);
                }
            }
    }
    return 0;
}

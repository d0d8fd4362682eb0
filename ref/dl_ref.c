/* dl_ref.c - the CPU reference of paged decode attention: the exact FP64 model
 * (gather + OpenBLAS dgemm) and the emulated arithmetic of the fp32, bf16 and
 * fp8 kernels. Slow and plain on purpose; every fast kernel is judged by it.
 *
 * Work is split over (request b, KV head g) pairs with OpenMP. Each pair owns
 * its outputs (the query heads g*group .. g*group+group-1 of request b) and is
 * computed by one thread in a fixed order, so results are bit-identical for any
 * thread count. OpenBLAS runs single-threaded inside (the parallelism is ours).
 *
 * Floating-point conventions of the emulated models (fp32, bf16, fp8):
 *  - every operation is a separate IEEE binary32 operation, no FMA contraction
 *    (gcc with -std=c11 does not contract); a GPU kernel that fuses multiply-add
 *    differs by float rounding only;
 *  - dot products are accumulated in index order d = 0..D-1;
 *  - softmax is online over blocks of kv_block tokens (see online_softmax);
 *  - the normalizer (running sum) is accumulated from the float P, before P is
 *    rounded for P*V, as a tensor-core kernel that sums its FP32 scores does; the
 *    sum itself is kept in double and rounded to float once: every kernel sums P in
 *    per-lane partial sums, and a sequential float sum drifts far from all of them when
 *    thousands of terms sit far below the sum (a strong sink: at sink_delta 12, L 8192
 *    it moved the fp8 model's o and lse by 2e-5 and failed a correct fp8-none-mma,
 *    issue 13; in double the kernel sat at 1.6e-6 per head, H200 outputs of 2026-12-03).
 * The models are one table (`models`, "the model table" below): name, HDF5 group,
 * description and the two functions of its arithmetic; a new model is a row there,
 * its functions, and its limits in harness/compare.c. */
#include "dl_ref.h"
#include "dl_formats.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *dl_kv_order_name(int order)
{
    return order == DL_KV_FORWARD ? "forward" : order == DL_KV_REVERSE ? "reverse" : "?";
}

int dl_kv_order_parse(const char *s, int *out)
{
    if (s && !strcmp(s, "forward")) *out = DL_KV_FORWARD;
    else if (s && !strcmp(s, "reverse")) *out = DL_KV_REVERSE;
    else return -1;
    return 0;
}

void dl_model_params_default(dl_model_params *p)
{
    memset(p, 0, sizeof *p);
    p->kv_block = 64;
    p->acc_mantissa_bits = 23;
    p->acc_block = 32;
    p->p_scale = 448.0f;
    p->acc_promote_blocks = 2;
    p->kv_order = DL_KV_FORWARD;
}

void dl_output_free(dl_output *o)
{
    if (!o) return;
    free(o->o);
    free(o->lse);
    free(o->o_flip);
    o->o = NULL;
    o->lse = NULL;
    o->o_flip = NULL;
}

/* ---------------------------------------------------------------- gathering */

/* Decoded codes (no scale) of K (which = 0) or V (which = 1) for request b,
 * KV head g, tokens 0..len-1, into out [len, D]. lut: the decoded value of
 * each of the 256 codes of a 1-byte format (NULL for 16/32-bit formats). */
static void gather_codes(const dl_case *c, const float *lut, int which, int64_t b, int64_t g, int64_t len,
                         float *out)
{
    const int64_t D = c->cfg.head_dim;
    const void *cache = which == 0 ? c->k_cache : c->v_cache;
    for (int64_t t = 0; t < len; t++) {
        int64_t off = dl_case_token_offset(c, b, t, g);
        if (lut) {
            const uint8_t *row = (const uint8_t *)cache + off;
            for (int64_t d = 0; d < D; d++) out[t * D + d] = lut[row[d]];
        } else {
            for (int64_t d = 0; d < D; d++) out[t * D + d] = dl_decode_elem(c->cfg.kv_dtype, cache, off + d);
        }
    }
}

/* Original (pre-quantization) values of src (k_orig or v_orig) as double. */
static void gather_orig(const dl_case *c, const float *src, int64_t b, int64_t g, int64_t len, double *out)
{
    const int64_t D = c->cfg.head_dim;
    for (int64_t t = 0; t < len; t++) {
        int64_t off = dl_case_token_offset(c, b, t, g);
        for (int64_t d = 0; d < D; d++) out[t * D + d] = (double)src[off + d];
    }
}

/* ---------------------------------------------------------------- exact / orig */

/* FP64 attention of G query rows Q [G, D] over K, V [len, D]: S = sm Q K^T,
 * per row max, exp, sum, lse = max + log(sum), P = exp(s - max) / sum, O = P V.
 * S is scratch [G, len]; O [G, D]; lse [G]. */
static void exact_core(int64_t G, int64_t len, int64_t D, double sm, const double *Q, const double *K,
                       const double *V, double *S, double *O, double *lse)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)G, (int)len, (int)D, sm, Q, (int)D, K, (int)D,
                0.0, S, (int)len);
    for (int64_t r = 0; r < G; r++) {
        double *s = S + r * len;
        double mx = s[0];
        for (int64_t j = 1; j < len; j++)
            if (s[j] > mx || isnan(s[j])) mx = s[j];
        double sum = 0.0;
        for (int64_t j = 0; j < len; j++) {
            s[j] = exp(s[j] - mx);
            sum += s[j];
        }
        lse[r] = mx + log(sum);
        for (int64_t j = 0; j < len; j++) s[j] /= sum;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)G, (int)D, (int)len, 1.0, S, (int)len, V, (int)D,
                0.0, O, (int)D);
}

/* exact (orig = 0) or orig (orig = 1) for one (b, g); o/lse point at head g*G of request b. */
static int task_fp64(const dl_case *c, const float *lut, int orig, int64_t b, int64_t g, double *o, double *lse)
{
    const dl_config *cfg = &c->cfg;
    const int64_t D = cfg->head_dim, G = dl_group_size(cfg), len = dl_case_seq_len(c, b);
    double *K = malloc((size_t)(len * D) * sizeof(double));
    double *V = malloc((size_t)(len * D) * sizeof(double));
    double *Q = malloc((size_t)(G * D) * sizeof(double));
    double *S = malloc((size_t)(G * len) * sizeof(double));
    float *tmp = orig ? NULL : malloc((size_t)(len * D) * sizeof(float));
    if (!K || !V || !Q || !S || (!orig && !tmp)) {
        free(K); free(V); free(Q); free(S); free(tmp);
        return -1;
    }
    const int64_t q0 = (b * cfg->num_qo_heads + g * G) * D;
    if (orig) {
        gather_orig(c, c->k_orig, b, g, len, K);
        gather_orig(c, c->v_orig, b, g, len, V);
        for (int64_t i = 0; i < G * D; i++) Q[i] = (double)c->q_orig[q0 + i];
    } else {
        const double ks = (double)c->k_scale[g], vs = (double)c->v_scale[g];
        gather_codes(c, lut, 0, b, g, len, tmp);
        for (int64_t i = 0; i < len * D; i++) K[i] = (double)tmp[i] * ks;
        gather_codes(c, lut, 1, b, g, len, tmp);
        for (int64_t i = 0; i < len * D; i++) V[i] = (double)tmp[i] * vs;
        for (int64_t i = 0; i < G * D; i++) Q[i] = (double)dl_case_q(c, q0 + i);
    }
    exact_core(G, len, D, dl_sm_scale(cfg), Q, K, V, S, o, lse);
    free(K); free(V); free(Q); free(S); free(tmp);
    return 0;
}

/* ---------------------------------------------------------------- emulated models */

/* How the P that multiplies V is rounded (the normalizer always sums FP32 P); the fp8
 * models round P to e4m3 inside online_softmax_mma. */
typedef enum { P_FLOAT, P_BF16 } p_rounding;

/* P-cast statistics of one online softmax: the P values of the tokens at processing positions
 * [lo, hi) are counted (values), and those that enter P*V as 0 (zeros). With acc2 (and part2 for
 * the MMA chain) set, a shadow accumulator [D] follows the same operations with the P value
 * before its rounding (p * p_scale for e4m3, p for bf16): the output it gives differs from the
 * model's only by the P cast (dl_output.p_cast_nmse). */
typedef struct {
    int64_t lo, hi;
    int64_t values, zeros;
    float *acc2, *part2;
    double flip; /* online_softmax_mma: the rounding-flip allowance, sum of |alt - pr| * ||V_j|| (DL_FLIP_ETA) */
} pstat;

/* The e4m3 value a P element may round to instead of pr = e4m3(x) when a kernel computes x
 * within a relative DL_FLIP_ETA of the model's x (its own FP32 score order and exp): the
 * other neighbour when a rounding boundary lies within x * (1 +- eta), else pr itself. */
static float e4m3_flip_alt(float x, float pr)
{
    const float lo = dl_e4m3_to_f32(dl_f32_to_e4m3(x * (1.0f - (float)DL_FLIP_ETA), DL_SATFINITE));
    const float hi = dl_e4m3_to_f32(dl_f32_to_e4m3(x * (1.0f + (float)DL_FLIP_ETA), DL_SATFINITE));
    return lo != pr ? lo : hi;
}

static void pstat_add(pstat *st, int64_t j, float pr)
{
    if (!st || j < st->lo || j >= st->hi) return;
    st->values++;
    if (pr == 0.0f) st->zeros++;
}

/* Max that propagates NaN (fmaxf would drop it). */
static float max_nan(float a, float b) { return (b > a || isnan(b)) ? b : a; }

/* Online softmax in float over scores s [len] and values V [len, D], in blocks
 * of kv_block tokens. Per block: m_new = max(m, block max); the running sum
 * and acc are scaled by f = expf(m - m_new) (f = 0 on the first block); then
 * for each token j in order: p = expf(s_j - m_new); sum += p (float P, double sum);
 * pr = p rounded (P_FLOAT: p; P_BF16: bf16(p)); acc[d] += pr * V[j, d] for d
 * in order. Returns m and sum. */
static void online_softmax(const float *s, const float *V, int64_t len, int64_t D, int64_t kv_block,
                           p_rounding pr_mode, float *acc, float *m_out, float *sum_out, pstat *st)
{
    float m = -INFINITY;
    double sum = 0.0; /* the normalizer: see the file header */
    float *acc2 = st ? st->acc2 : NULL;
    for (int64_t d = 0; d < D; d++) acc[d] = 0.0f;
    if (acc2)
        for (int64_t d = 0; d < D; d++) acc2[d] = 0.0f;
    for (int64_t j0 = 0; j0 < len; j0 += kv_block) {
        int64_t j1 = j0 + kv_block < len ? j0 + kv_block : len;
        float bmax = -INFINITY;
        for (int64_t j = j0; j < j1; j++) bmax = max_nan(bmax, s[j]);
        float m_new = max_nan(m, bmax);
        float f = m == -INFINITY ? 0.0f : expf(m - m_new);
        sum *= f;
        for (int64_t d = 0; d < D; d++) acc[d] *= f;
        if (acc2)
            for (int64_t d = 0; d < D; d++) acc2[d] *= f;
        for (int64_t j = j0; j < j1; j++) {
            float p = expf(s[j] - m_new);
            sum += p;
            const float pr = pr_mode == P_BF16 ? dl_round_bf16(p) : p;
            pstat_add(st, j, pr);
            const float *v = V + j * D;
            for (int64_t d = 0; d < D; d++) acc[d] += pr * v[d];
            if (acc2)
                for (int64_t d = 0; d < D; d++) acc2[d] += p * v[d];
        }
        m = m_new;
    }
    *m_out = m;
    *sum_out = (float)sum;
}

/* Truncate x toward zero to `bits` fraction bits: clear the low (23 - bits)
 * bits of its binary32 fraction field, keeping sign and exponent. For a normal
 * x this keeps the leading 1 and the top `bits` fraction bits (magnitude rounds
 * down); subnormals lose the same bit positions. inf and NaN pass unchanged. */
static float truncate_mantissa(float x, int bits)
{
    if (!isfinite(x)) return x;
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u &= ~((UINT32_C(1) << (23 - bits)) - 1u);
    memcpy(&x, &u, sizeof u);
    return x;
}

/* Dot product of q and k [D] in float, index order. If 0 < acc_bits < 23,
 * the reduced-precision accumulator of an FP8 MMA: the running sum is
 * truncated with truncate_mantissa(., acc_bits) after every acc_block products
 * (d = acc_block-1, 2*acc_block-1, ...) and after the last product. */
static float dot_f32(const float *q, const float *k, int64_t D, int acc_bits, int64_t acc_block)
{
    float acc = 0.0f;
    if (acc_bits <= 0 || acc_bits >= 23) {
        for (int64_t d = 0; d < D; d++) acc += q[d] * k[d];
        return acc;
    }
    for (int64_t d = 0; d < D; d++) {
        acc += q[d] * k[d];
        if ((d + 1) % acc_block == 0 || d + 1 == D) acc = truncate_mantissa(acc, acc_bits);
    }
    return acc;
}

/* Quantize x [n] (float) to e4m3 with scale absmax/448 (1 when absmax is 0):
 * out[i] = e4m3(x[i] / scale) decoded (exact in float). Returns the scale. */
static float quantize_e4m3(const float *x, int64_t n, float *out)
{
    float amax = 0.0f;
    for (int64_t i = 0; i < n; i++) amax = max_nan(amax, fabsf(x[i]));
    float scale = amax > 0.0f ? amax / DL_E4M3_MAX : 1.0f;
    for (int64_t i = 0; i < n; i++) out[i] = dl_round_e4m3(x[i] / scale);
    return scale;
}

/* ---- the FP8 MMA accumulator (fp8, fp8acc) ----
 * One chain of MMAs accumulates k-blocks of acc_block products: the running
 * value gets each product added in order (binary32) and is truncated with
 * truncate_mantissa(., acc_mantissa_bits) at the end of every k-block
 * (acc_mantissa_bits 0 or 23: no truncation). promote = 0: one chain for the
 * whole sum. promote = N > 0 (fp8acc): the chain restarts at 0 every N
 * k-blocks and its value is added to a separate FP32 accumulator. */
static float acc_trunc(float x, int bits) { return (bits <= 0 || bits >= 23) ? x : truncate_mantissa(x, bits); }

/* The exponent QGMMA aligns an FP8 operand by: frexp's, but a subnormal counts with the smallest
 * normal exponent (its exponent field, 0, means the same scale as 1). */
static int fp8_exponent(float v, dl_dtype t)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    const int field = (int)((u >> 23) & 0xFFu);
    int e = field - 126; /* frexpf's exponent of a normal float, read off its bits (the hot path of fp8wg) */
    if (field == 0) (void)frexpf(v, &e); /* a float subnormal */
    const int emin = t == DL_E5M2 ? -13 : -5; /* frexp of the smallest normal: 2^-14, 2^-6 */
    return e < emin ? emin : e;
}

int dl_qgmma_top(float c, const float *x, const float *y, int64_t ystride, int64_t n, dl_dtype yt)
{
    int e, top = INT_MIN;
    if (c != 0.0f && isfinite(c)) {
        (void)frexpf(c, &e);
        top = e;
    }
    for (int64_t i = 0; i < n; i++) {
        const float a = x[i], b = y[i * ystride];
        if (a != 0.0f && b != 0.0f && isfinite(a) && isfinite(b)) {
            /* the product's exponent before normalization: a 1.x times 1.y mantissa lies in [1, 4) */
            e = fp8_exponent(a, DL_E4M3) + fp8_exponent(b, yt) - 1;
            if (e > top) top = e;
        }
    }
    return top;
}

float dl_qgmma_sum(float c, const float *x, const float *y, int64_t ystride, int64_t n, int top)
{
    if (top == INT_MIN) return c; /* no nonzero term (or a non-finite one: left to float) */
    /* top is frexp-like: the alignment's leading bit is 2^(top - 1) */
    const double ulp = ldexp(1.0, top - 1 - DL_QGMMA_FRAC_BITS), per_ulp = ldexp(1.0, DL_QGMMA_FRAC_BITS + 1 - top);
    /* x * per_ulp is x / ulp exactly (a power of two, far from the double range's ends) */
    double s = trunc((double)c * per_ulp) * ulp; /* exact: every term has at most 15 bits above ulp */
    for (int64_t i = 0; i < n; i++) s += trunc((double)x[i] * (double)y[i * ystride] * per_ulp) * ulp;
    return truncate_mantissa((float)s, DL_QGMMA_FRAC_BITS); /* s has <= 21 significant bits: exact in float */
}

float dl_qgmma_add(float c, const float *x, const float *y, int64_t ystride, int64_t n, dl_dtype yt)
{
    return dl_qgmma_sum(c, x, y, ystride, n, dl_qgmma_top(c, x, y, ystride, n, yt));
}

/* One k-block of the chain: acc_trunc(part + the products) summed in binary32, or (qgmma) the
 * Hopper wgmma rule above. */
static float mma_block(float part, const float *q, const float *k, int64_t ks, int64_t n, const dl_model_params *p,
                       int qgmma, dl_dtype kt)
{
    if (qgmma) return dl_qgmma_add(part, q, k, ks, n, kt);
    for (int64_t i = 0; i < n; i++) part += q[i] * k[i * ks];
    return acc_trunc(part, p->acc_mantissa_bits);
}

/* q.k over D dims in k-blocks of p->acc_block dims (qgmma: of 32), as described above. */
static float dot_mma(const float *q, const float *k, int64_t D, const dl_model_params *p, int64_t promote, int qgmma,
                     dl_dtype kt)
{
    float main = 0.0f, part = 0.0f;
    int64_t nblk = 0;
    const int64_t kb = qgmma ? 32 : p->acc_block;
    for (int64_t d0 = 0; d0 < D; d0 += kb) {
        const int64_t d1 = d0 + kb < D ? d0 + kb : D;
        part = mma_block(part, q + d0, k + d0, 1, d1 - d0, p, qgmma, kt);
        if (promote > 0 && (++nblk % promote == 0 || d1 == D)) {
            main += part;
            part = 0.0f;
        }
    }
    return promote > 0 ? main : part;
}

/* online_softmax with P_E4M3 and the MMA accumulator on P*V: per kv_block, the
 * accumulator acc (the chain when promote = 0, the FP32 sum when promote > 0)
 * and sum are rescaled by f = expf(m - m_new); then tokens go in k-blocks of
 * acc_block tokens counted from the kv_block start: acc_part[d] += pr * V[j, d]
 * in token order, truncated at each k-block end; with promote > 0 the partial
 * is added to acc and restarts every promote k-blocks and at the kv_block end
 * (the kernel promotes before it rescales). part is scratch [D]. */
static void online_softmax_mma(const float *s, const float *V, int64_t len, int64_t D, const dl_model_params *p,
                               int64_t promote, int qgmma, dl_dtype vt, float *acc, float *part, float *m_out,
                               float *sum_out, pstat *st)
{
    const int64_t kb = qgmma ? 32 : p->acc_block;
    float prs[32]; /* qgmma: the block's P values */
    float m = -INFINITY;
    double sum = 0.0; /* the normalizer: see the file header */
    float *chain = promote > 0 ? part : acc;
    float *acc2 = st ? st->acc2 : NULL, *part2 = st ? st->part2 : NULL; /* the shadow (unrounded P) */
    float *chain2 = promote > 0 ? part2 : acc2;
    for (int64_t d = 0; d < D; d++) acc[d] = part[d] = 0.0f;
    if (acc2)
        for (int64_t d = 0; d < D; d++) acc2[d] = part2[d] = 0.0f;
    for (int64_t j0 = 0; j0 < len; j0 += p->kv_block) {
        int64_t j1 = j0 + p->kv_block < len ? j0 + p->kv_block : len;
        float bmax = -INFINITY;
        for (int64_t j = j0; j < j1; j++) bmax = max_nan(bmax, s[j]);
        float m_new = max_nan(m, bmax);
        float f = m == -INFINITY ? 0.0f : expf(m - m_new);
        sum *= f;
        if (st) st->flip *= (double)f;
        for (int64_t d = 0; d < D; d++) acc[d] *= f;
        if (acc2)
            for (int64_t d = 0; d < D; d++) acc2[d] *= f;
        int64_t nblk = 0;
        for (int64_t k0 = j0; k0 < j1; k0 += kb) {
            const int64_t k1 = k0 + kb < j1 ? k0 + kb : j1;
            for (int64_t j = k0; j < k1; j++) {
                float pj = expf(s[j] - m_new);
                sum += pj;
                float pr = dl_e4m3_to_f32(dl_f32_to_e4m3(pj * p->p_scale, DL_SATFINITE));
                pstat_add(st, j, pr);
                const float *v = V + j * D;
                if (st) {
                    const float alt = e4m3_flip_alt(pj * p->p_scale, pr);
                    if (alt != pr) { /* a fragile element: what its other rounding moves the output by */
                        double v2 = 0.0;
                        for (int64_t d = 0; d < D; d++) v2 += (double)v[d] * (double)v[d];
                        st->flip += fabs((double)alt - (double)pr) * sqrt(v2);
                    }
                }
                if (qgmma) prs[j - k0] = pr;
                else
                    for (int64_t d = 0; d < D; d++) chain[d] += pr * v[d];
                if (acc2) {
                    const float ps = pj * p->p_scale;
                    for (int64_t d = 0; d < D; d++) chain2[d] += ps * v[d];
                }
            }
            if (qgmma)
                for (int64_t d = 0; d < D; d++) chain[d] = dl_qgmma_add(chain[d], prs, V + k0 * D + d, D, k1 - k0, vt);
            else
                for (int64_t d = 0; d < D; d++) chain[d] = acc_trunc(chain[d], p->acc_mantissa_bits);
            /* the shadow (P not rounded, for the P-cast statistics) keeps the binary32 chain */
            if (acc2)
                for (int64_t d = 0; d < D; d++)
                    chain2[d] = acc_trunc(chain2[d], qgmma ? DL_QGMMA_FRAC_BITS : p->acc_mantissa_bits);
            if (promote > 0 && (++nblk % promote == 0 || k1 == j1)) {
                for (int64_t d = 0; d < D; d++) {
                    acc[d] += part[d];
                    part[d] = 0.0f;
                }
                if (acc2)
                    for (int64_t d = 0; d < D; d++) {
                        acc2[d] += part2[d];
                        part2[d] = 0.0f;
                    }
            }
        }
        m = m_new;
    }
    *m_out = m;
    *sum_out = (float)sum;
}

/* ---- bf16simt: the CUDA-core BF16 kernel (gpu/decode_simt.cu, BF16x2 arithmetic policy) ----
 * Lane t of the BDX = D / VEC lanes of a row (VEC = 16 elements for a 1-byte
 * cache, 8 otherwise: 16 bytes per lane) owns dims t*VEC .. t*VEC+VEC-1, in
 * runs of 8 dims. A run is one bf16x2 accumulator, starting at +0: the even
 * dims go to its low half, the odd ones to its high half, each by
 * fma.rn.bf16x2 (a*b + c exact, rounded once to BF16, RNE) for dims in order.
 * The lane's value x = 0.0f; x += (float(low) + float(high)) per run in order.
 * Then the butterfly: for off = L/2, L/4, .., 1: x[i] = x[i] + x[i + off]
 * (L = BDX rounded up to a power of two, missing lanes 0); lane 0's x is the dot. */

/* x rounded once to BF16 (RNE), subnormals included; x is finite and far below overflow. */
static float round_bf16_once(double x)
{
    if (x == 0.0 || !isfinite(x)) return (float)x;
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    const int e = (int)((u >> 52) & 0x7FFu) - 1022; /* |x| in [2^(e-1), 2^e) for a normal double */
    if (e - 8 >= -133) { /* so x is a normal double */
        /* 8 significant bits, round to nearest even on the bits: the 45 low mantissa bits go, the
         * kept part rounds up past half, or at exactly half when its last bit is odd (a carry steps
         * into the exponent, as a rounding past 2^e should) - the same value as the path below */
        const uint64_t low = (UINT64_C(1) << 45) - 1u;
        u += (low >> 1) + ((u >> 45) & 1u);
        u &= ~low;
        memcpy(&x, &u, sizeof u);
        return (float)x;
    }
    int f;
    (void)frexp(x, &f);          /* |x| in [2^(f-1), 2^f) */
    int ulp = f - 8;             /* 8 significant bits */
    if (ulp < -133) ulp = -133;  /* BF16 subnormal spacing */
    return (float)ldexp(nearbyint(ldexp(x, -ulp)), ulp);
}

static float fma_bf16(float a, float b, float c) { return round_bf16_once((double)a * (double)b + (double)c); }

static float bf16simt_dot(const float *q, const float *k, int64_t D, int64_t vec)
{
    float lane[DL_MAX_HEAD_DIM / 8 + 1];
    const int64_t bdx = (D + vec - 1) / vec;
    int64_t L = 1;
    while (L < bdx) L *= 2;
    for (int64_t t = 0; t < L; t++) {
        float x = 0.0f;
        for (int64_t r0 = t * vec; t < bdx && r0 < (t + 1) * vec && r0 < D; r0 += 8) {
            float lo = 0.0f, hi = 0.0f;
            for (int64_t d = r0; d < r0 + 8 && d < D; d += 2) {
                lo = fma_bf16(q[d], k[d], lo);
                if (d + 1 < D) hi = fma_bf16(q[d + 1], k[d + 1], hi);
            }
            x += lo + hi;
        }
        lane[t] = x;
    }
    for (int64_t off = L / 2; off >= 1; off /= 2)
        for (int64_t i = 0; i < off; i++) lane[i] = lane[i] + lane[i + off];
    return lane[0];
}

/* Merge nseg normalized segment results (o_i = po[i*D ..], lse_i = pl[i]) in
 * FP32 as the split-KV merge kernel does (gpu/runtime.cu): M = max lse_i,
 * W = sum_i expf(lse_i - M) in order, o[d] = (sum_i expf(lse_i - M) * o_i[d]
 * in order) / W, lse = M + logf(W). A segment with lse = -inf weighs nothing. */
static void merge_segments(const float *po, const float *pl, int64_t nseg, int64_t D, double *o, double *lse)
{
    float M = -INFINITY;
    for (int64_t i = 0; i < nseg; i++) M = max_nan(M, pl[i]);
    float W = 0.0f;
    for (int64_t i = 0; i < nseg; i++) W += pl[i] == -INFINITY ? 0.0f : expf(pl[i] - M);
    for (int64_t d = 0; d < D; d++) {
        float acc = 0.0f;
        for (int64_t i = 0; i < nseg; i++)
            if (pl[i] != -INFINITY) acc += expf(pl[i] - M) * po[i * D + d];
        o[d] = (double)(W > 0.0f ? acc / W : 0.0f);
    }
    *lse = (double)(W > 0.0f ? M + logf(W) : -INFINITY);
}

/* fp32, bf16 or fp8 model for one (b, g). The tokens are cut into nseg
 * segments starting at seg[0] = 0 < seg[1] < ... < len (seg NULL or nseg 1:
 * the whole sequence); each is an independent online softmax whose normalized
 * (o, lse) are merged by merge_segments. */
/* ---------------------------------------------------------------- the model table */

enum { MMA_NONE = 0, MMA_F32 = 1, MMA_QGMMA = 2 }; /* the row's softmax kind (model_row.mma) */

/* What an emulated model computes for one (request, KV head), in two functions: prepare()
 * turns the gathered K, V codes (decode(code), scales not applied) into the elements its
 * arithmetic multiplies, and may change the scales; scores() computes the scores of one query
 * head q (qr: scratch [D]) and says what the normalized output is multiplied by. Then the
 * online softmax of the row's kind runs per segment of the schedule. */
typedef struct {
    const dl_case *c;
    const dl_model_params *p;
    dl_model model;
    int64_t len, D;
    float sm, ks, vs; /* sm_scale; the KV head's scales (prepare may change them) */
    int mma;          /* the row's mma kind (MMA_*) */
} emu;
typedef void (*prepare_fn)(emu *e, float *K, float *V);

/* The format of the K and V elements the fp8 models multiply: the cache's own when it is FP8
 * (prep_fp8 leaves it), else e4m3 (prep_fp8 quantizes to it). */
static dl_dtype fp8_cache_type(const emu *e) { return e->c->cfg.kv_dtype == DL_E5M2 ? DL_E5M2 : DL_E4M3; }
typedef void (*scores_fn)(const emu *e, const float *q, float *qr, const float *K, float *s, float *out_scale,
                          int64_t *promote);

/* fp32: dequantize in float, code * scale, one element at a time; o = acc / sum */
static void prep_fp32(emu *e, float *K, float *V)
{
    for (int64_t i = 0; i < e->len * e->D; i++) K[i] = K[i] * e->ks;
    for (int64_t i = 0; i < e->len * e->D; i++) V[i] = V[i] * e->vs;
}
static void scores_fp32(const emu *e, const float *q, float *qr, const float *K, float *s, float *out_scale,
                        int64_t *promote)
{
    (void)qr;
    (void)promote;
    for (int64_t j = 0; j < e->len; j++) s[j] = dot_f32(q, K + j * e->D, e->D, 23, 1) * e->sm;
    *out_scale = 1.0f;
}

/* bf16, bf16simt: bf16(decode(code)), the scales stay out of the elements (folded into the
 * score and output scales): exact for fp8 codes and a bf16 cache, one rounding for f16 */
static void prep_bf16(emu *e, float *K, float *V)
{
    for (int64_t i = 0; i < e->len * e->D; i++) K[i] = dl_round_bf16(K[i]);
    for (int64_t i = 0; i < e->len * e->D; i++) V[i] = dl_round_bf16(V[i]);
}
/* bf16 x bf16 products are exact in float; the sum is rounded; k_scale folds into the
 * score scale, v_scale into the output */
static void scores_bf16(const emu *e, const float *q, float *qr, const float *K, float *s, float *out_scale,
                        int64_t *promote)
{
    (void)promote;
    for (int64_t d = 0; d < e->D; d++) qr[d] = dl_round_bf16(q[d]);
    const float sk = e->sm * e->ks;
    for (int64_t j = 0; j < e->len; j++) s[j] = dot_f32(qr, K + j * e->D, e->D, 23, 1) * sk;
    *out_scale = e->vs;
}
static void scores_bf16simt(const emu *e, const float *q, float *qr, const float *K, float *s, float *out_scale,
                            int64_t *promote)
{
    (void)promote;
    const int64_t vec = dl_dtype_size(e->c->cfg.kv_dtype) == 1 ? 16 : 8;
    for (int64_t d = 0; d < e->D; d++) qr[d] = dl_round_bf16(q[d]);
    for (int64_t j = 0; j < e->len; j++) s[j] = bf16simt_dot(qr, K + j * e->D, e->D, vec) * e->ks * e->sm;
    *out_scale = e->vs;
}

/* fp8, fp8acc: the codes as stored; a 16-bit cache is first quantized to e4m3 with one
 * scale per (request, KV head): absmax of the dequantized values / 448 */
static void prep_fp8(emu *e, float *K, float *V)
{
    const dl_dtype kv = e->c->cfg.kv_dtype;
    if (kv == DL_E4M3 || kv == DL_E5M2) return;
    for (int64_t i = 0; i < e->len * e->D; i++) K[i] = K[i] * e->ks;
    for (int64_t i = 0; i < e->len * e->D; i++) V[i] = V[i] * e->vs;
    e->ks = quantize_e4m3(K, e->len * e->D, K);
    e->vs = quantize_e4m3(V, e->len * e->D, V);
}
/* Q quantized to e4m3 per head; e4m3 x e4m3 (or e5m2) products are exact in float */
static void scores_fp8(const emu *e, const float *q, float *qr, const float *K, float *s, float *out_scale,
                       int64_t *promote)
{
    *promote = e->model == DL_MODEL_FP8ACC || e->model == DL_MODEL_FP8ACCWG ? e->p->acc_promote_blocks : 0;
    const float qs = quantize_e4m3(q, e->D, qr);
    const int qg = e->mma == MMA_QGMMA;
    for (int64_t j = 0; j < e->len; j++)
        s[j] = dot_mma(qr, K + j * e->D, e->D, e->p, *promote, qg, fp8_cache_type(e)) * qs * e->ks * e->sm;
    *out_scale = e->vs / e->p->p_scale;
}

/* One row per model, in dl_model order: a new model is a row and its functions.
 * prepare == NULL: an FP64 model (task_fp64). mma: the MMA-chain softmax with P quantized to
 * e4m3(p * p_scale) (online_softmax_mma; MMA_F32: k-blocks summed in binary32 and truncated to
 * acc_mantissa_bits; MMA_QGMMA: the Hopper wgmma rule, dl_qgmma_add); else (MMA_NONE)
 * online_softmax with P rounded as p_round.
 * shadow: the model rounds P, so its P-cast statistics are recorded. */
typedef struct {
    const char *name, *group, *description;
    prepare_fn prepare;
    scores_fn scores;
    p_rounding p_round;
    int mma, shadow;
} model_row;

static const model_row models[DL_MODEL_COUNT] = {
    {"exact", "/golden/exact",
     "FP64 attention on the dequantized stored inputs (decode(code)*scale), gathered pages, OpenBLAS dgemm", NULL,
     NULL, P_FLOAT, 0, 0},
    {"orig", "/golden/orig", "FP64 attention on the original values before storage rounding (q_orig, k_orig, v_orig)",
     NULL, NULL, P_FLOAT, 0, 0},
    {"fp32", "/golden/fp32",
     "CUDA-core kernel arithmetic: FP32 dequant, FP32 dots in index order, FP32 online softmax per kv_block",
     prep_fp32, scores_fp32, P_FLOAT, 0, 0},
    {"bf16", "/golden/bf16",
     "BF16 tensor-core kernel arithmetic: Q and decode(code) of K, V rounded to BF16, FP32 accumulation, "
     "scores * (sm_scale * k_scale), online softmax per kv_block, P rounded to BF16 before P*V, normalizer "
     "from FP32 P, output * v_scale",
     prep_bf16, scores_bf16, P_BF16, 0, 1},
    {"fp8", "/golden/fp8",
     "FP8 tensor-core kernel arithmetic: Q quantized to e4m3 per head, K/V e4m3 codes, QK accumulated in FP32 "
     "(optionally truncated to acc_mantissa_bits every acc_block products), P quantized to e4m3(p*p_scale) "
     "before P*V, normalizer from FP32 P",
     prep_fp8, scores_fp8, P_FLOAT, MMA_F32, 1},
    {"fp8acc", "/golden/fp8acc",
     "FP8 tensor-core kernel arithmetic with two-level accumulation: as fp8, but the MMA accumulator is a fresh "
     "partial for acc_promote_blocks k-blocks (QK dims, P*V tokens), then added to an FP32 accumulator",
     prep_fp8, scores_fp8, P_FLOAT, MMA_F32, 1},
    {"bf16simt", "/golden/bf16simt",
     "BF16 CUDA-core kernel arithmetic: Q, K, V rounded to BF16, q.k by packed bf16x2 FMA over runs of 8 dims "
     "(one BF16 rounding per FMA), FP32 cross-lane butterfly, FP32 online softmax and P*V, v_scale at the end",
     prep_bf16, scores_bf16simt, P_FLOAT, 0, 0},
    {"fp8wg", "/golden/fp8wg",
     "FP8 warpgroup-MMA (wgmma, QGMMA) kernel arithmetic: as fp8, with the Hopper accumulator measured on the "
     "H200: per wgmma of 32 products, every term (accumulator included) truncated to 13 fraction bits below the "
     "alignment exponent (the largest of the accumulator's and, per product, its operands' exponents summed), "
     "summed exactly, the sum truncated to 14 significant bits (acc_mantissa_bits and acc_block do not apply)",
     prep_fp8, scores_fp8, P_FLOAT, MMA_QGMMA, 1},
    {"fp8accwg", "/golden/fp8accwg",
     "fp8wg with two-level accumulation: each chain of acc_promote_blocks wgmmas starts from 0 and is added to an "
     "FP32 accumulator",
     prep_fp8, scores_fp8, P_FLOAT, MMA_QGMMA, 1},
};

const char *dl_model_name(dl_model m) { return (unsigned)m < DL_MODEL_COUNT ? models[m].name : "?"; }
const char *dl_model_description(dl_model m) { return (unsigned)m < DL_MODEL_COUNT ? models[m].description : "?"; }
const char *dl_model_group(dl_model m) { return (unsigned)m < DL_MODEL_COUNT ? models[m].group : "?"; }
int dl_model_is_fp64(dl_model m) { return (unsigned)m < DL_MODEL_COUNT && models[m].prepare == NULL; }

int dl_model_find(const char *s)
{
    for (int i = 0; s && i < DL_MODEL_COUNT; i++)
        if (strcmp(s, models[i].name) == 0) return i;
    return -1;
}

int dl_model_parse(const char *s, dl_model *out)
{
    const int found = dl_model_find(s);
    if (found >= 0) {
        *out = (dl_model)found;
        return 0;
    }
    char names[256] = "";
    for (int i = 0; i < DL_MODEL_COUNT; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", models[i].name);
    return dl_fail("model '%s' is unknown (expected one of %s)", s ? s : "(null)", names);
}

static int task_emulated(const dl_case *c, const float *lut, dl_model model, const dl_model_params *p,
                         int64_t b, int64_t g, const int64_t *seg, int64_t nseg, double *o, double *lse,
                         double *o_flip, int64_t *p_values, int64_t *p_zeros, double *pc_err2, double *pc_ref2)
{
    const dl_config *cfg = &c->cfg;
    const int64_t D = cfg->head_dim, G = dl_group_size(cfg), len = dl_case_seq_len(c, b);
    float *K = malloc((size_t)(len * D) * sizeof(float));
    float *V = malloc((size_t)(len * D) * sizeof(float));
    float *s = malloc((size_t)len * sizeof(float));
    float *qv = malloc((size_t)(2 * D) * sizeof(float));
    float *acc = malloc((size_t)(4 * D) * sizeof(float)); /* acc [D], fp8 partial [D], their shadows [D] [D] */
    if (nseg < 1 || !seg) nseg = 1;
    float *po = nseg > 1 ? malloc((size_t)(nseg * (2 * D + 2)) * sizeof(float)) : NULL; /* segment o [nseg, D], lse [nseg], shadow o [nseg, D], flip [nseg] */
    const model_row *row = &models[model];
    /* the shadow output (P not rounded) of the models that round P */
    const int shadow = row->shadow;
    double *o2 = malloc((size_t)(D + 1) * sizeof(double));
    double e2 = 0.0, r2 = 0.0;
    /* reverse order: each segment's scores and V rows copied in reverse token order */
    const int rev = p->kv_order == DL_KV_REVERSE;
    float *sr = rev ? malloc((size_t)(len + 1) * sizeof(float)) : NULL;
    float *Vr = rev ? malloc((size_t)(len * D + 1) * sizeof(float)) : NULL;
    if (!K || !V || !s || !qv || !acc || !o2 || (nseg > 1 && !po) || (rev && (!sr || !Vr))) {
        free(K); free(V); free(s); free(qv); free(acc); free(po); free(sr); free(Vr); free(o2);
        return -1;
    }
    /* non-sink tokens (the P-cast statistics count only them) */
    const int64_t nsink = c->cfg.dist.kind == DL_DIST_SINK ? c->cfg.dist.sink_tokens : 0;
    int64_t pv = 0, pz = 0;
    float *pl = po ? po + nseg * D : NULL, *po2 = po ? po + nseg * (D + 1) : NULL;
    float *pf = po ? po + nseg * (2 * D + 1) : NULL;
    float *q = qv, *qr = qv + D;
    const float sm = (float)dl_sm_scale(cfg);
    emu e = {c, p, model, len, D, sm, c->k_scale[g], c->v_scale[g], row->mma};
    gather_codes(c, lut, 0, b, g, len, K);
    gather_codes(c, lut, 1, b, g, len, V);
    row->prepare(&e, K, V);

    for (int64_t r = 0; r < G; r++) {
        const int64_t h = g * G + r;
        const int64_t q0 = (b * cfg->num_qo_heads + h) * D;
        for (int64_t d = 0; d < D; d++) q[d] = dl_case_q(c, q0 + d);
        /* scores of every token, then the output scale; then per segment */
        float out_scale = 1.0f;
        int64_t promote = 0;
        row->scores(&e, q, qr, K, s, &out_scale, &promote);
        for (int64_t k = 0; k < nseg; k++) {
            const int64_t j0 = nseg > 1 ? seg[k] : 0, j1 = nseg > 1 && k + 1 < nseg ? seg[k + 1] : len;
            const float *sk = s + j0, *vk = V + j0 * D;
            const int64_t n = j1 - j0;
            /* processing position i is token j0 + i (forward) or j1 - 1 - i (reverse); count the
             * positions of non-sink tokens (token >= nsink) */
            pstat st = {0, n, 0, 0, shadow ? acc + 2 * D : NULL, shadow ? acc + 3 * D : NULL, 0.0};
            if (rev) {
                for (int64_t i = 0; i < n; i++) {
                    sr[i] = sk[n - 1 - i];
                    memcpy(Vr + i * D, vk + (n - 1 - i) * D, (size_t)D * sizeof(float));
                }
                sk = sr;
                vk = Vr;
                st.hi = j1 - nsink < n ? j1 - nsink : n;
            } else {
                st.lo = nsink - j0 > 0 ? nsink - j0 : 0;
            }
            float m, sum;
            if (row->mma) online_softmax_mma(sk, vk, n, D, p, promote, row->mma == MMA_QGMMA, fp8_cache_type(&e), acc, acc + D, &m,
                                   &sum, &st);
            else online_softmax(sk, vk, n, D, p->kv_block, row->p_round, acc, &m, &sum, &st);
            pv += st.values;
            pz += st.zeros;
            const float *acc2 = st.acc2;
            if (nseg == 1) {
                /* (fp32: out_scale 1, the scales are in the elements; x * 1.0f == x) */
                for (int64_t d = 0; d < D; d++) o[r * D + d] = (double)(acc[d] / sum * out_scale);
                lse[r] = (double)(m + logf(sum));
                for (int64_t d = 0; shadow && d < D; d++) o2[d] = (double)(acc2[d] / sum * out_scale);
                if (o_flip) o_flip[r] = st.flip / (double)sum * (double)out_scale;
            } else {
                for (int64_t d = 0; d < D; d++) po[k * D + d] = acc[d] / sum * out_scale;
                pl[k] = m + logf(sum);
                for (int64_t d = 0; shadow && d < D; d++) po2[k * D + d] = acc2[d] / sum * out_scale;
                pf[k] = (float)(st.flip / (double)sum * (double)out_scale);
            }
        }
        if (nseg > 1) merge_segments(po, pl, nseg, D, o + r * D, lse + r);
        if (o_flip && nseg > 1) { /* the segments' allowances, weighted as the merge weighs them */
            double M = -INFINITY, W = 0.0, a = 0.0;
            for (int64_t k = 0; k < nseg; k++) M = pl[k] > M ? pl[k] : M;
            for (int64_t k = 0; k < nseg && M > -INFINITY; k++) {
                const double w = pl[k] == -INFINITY ? 0.0 : exp((double)pl[k] - M);
                W += w;
                a += w * (double)pf[k];
            }
            o_flip[r] = W > 0.0 ? a / W : 0.0;
        }
        if (shadow && nseg > 1) merge_segments(po2, pl, nseg, D, o2, o2 + D);
        for (int64_t d = 0; shadow && d < D; d++) {
            const double diff = o[r * D + d] - o2[d];
            e2 += diff * diff;
            r2 += o2[d] * o2[d];
        }
    }
    free(K); free(V); free(s); free(qv); free(acc); free(po); free(sr); free(Vr); free(o2);
    *p_values = pv;
    *p_zeros = pz;
    *pc_err2 = shadow ? e2 : NAN;
    *pc_ref2 = shadow ? r2 : NAN;
    return 0;
}

/* ---------------------------------------------------------------- the P-cast prediction (E8) */

double dl_expected_max_normal(int64_t k)
{
    if (k < 1) return NAN;
    if (k == 1) return 0.0;
    /* E[max] = integral of x * k * phi(x) * Phi(x)^(k-1) dx, trapezoid on [-12, 12] */
    const double h = 1e-3;
    double acc = 0.0;
    for (double x = -12.0; x <= 12.0; x += h) {
        const double phi = exp(-0.5 * x * x) / sqrt(2.0 * M_PI), cdf = 0.5 * erfc(-x / sqrt(2.0));
        acc += x * (double)k * phi * pow(cdf, (double)(k - 1));
    }
    return acc * h;
}

double dl_p_underflow_predicted(const dl_config *cfg, const dl_model_params *p, dl_model m)
{
    if (m != DL_MODEL_FP8 && m != DL_MODEL_FP8ACC && m != DL_MODEL_FP8WG && m != DL_MODEL_FP8ACCWG) return NAN;
    if (p->kv_order != DL_KV_FORWARD || cfg->dist.kind != DL_DIST_SINK || cfg->dist.sink_tokens < 1 ||
        cfg->dist.mean != 0.0)
        return NAN;
    const double sigma = dl_sm_scale(cfg) * cfg->dist.std * cfg->dist.std * sqrt((double)cfg->head_dim);
    const double mx = cfg->dist.sink_delta + sigma * dl_expected_max_normal(cfg->dist.sink_tokens);
    const double z = (mx + log(ldexp(1.0, -10)) - log((double)p->p_scale)) / sigma;
    return 0.5 * erfc(-z / sqrt(2.0));
}

/* ---------------------------------------------------------------- entry point */

static int check_params(const dl_model_params *p)
{
    if (p->kv_block < 1) return dl_fail("model params: kv_block = %lld must be >= 1", (long long)p->kv_block);
    if (p->acc_block < 1) return dl_fail("model params: acc_block = %lld must be >= 1", (long long)p->acc_block);
    if (p->acc_mantissa_bits < 0 || p->acc_mantissa_bits > 23)
        return dl_fail("model params: acc_mantissa_bits = %d is outside 0..23", p->acc_mantissa_bits);
    if (!(p->p_scale > 0.0f) || !isfinite(p->p_scale))
        return dl_fail("model params: p_scale = %g must be finite and > 0", (double)p->p_scale);
    if (p->acc_promote_blocks < 1)
        return dl_fail("model params: acc_promote_blocks = %lld must be >= 1", (long long)p->acc_promote_blocks);
    if (p->kv_order != DL_KV_FORWARD && p->kv_order != DL_KV_REVERSE)
        return dl_fail("model params: kv_order = %d is not forward (0) or reverse (1)", p->kv_order);
    return 0;
}

int dl_schedule_trivial(const dl_schedule *s)
{
    if (!s) return 1;
    for (int64_t t = 0; t < s->num_tasks; t++)
        if (s->seg_indptr[t + 1] - s->seg_indptr[t] != 1) return 0;
    return 1;
}

int dl_schedule_validate(const dl_case *c, const dl_schedule *s)
{
    if (!s) return 0;
    const int64_t Hkv = c->cfg.num_kv_heads, ntask = c->cfg.batch_size * Hkv;
    if (s->num_tasks != ntask)
        return dl_fail("schedule: num_tasks = %lld, expected batch_size x num_kv_heads = %lld", (long long)s->num_tasks,
                       (long long)ntask);
    if (!s->seg_indptr || !s->seg_begin) return dl_fail("schedule: seg_indptr or seg_begin is NULL");
    if (s->seg_indptr[0] != 0) return dl_fail("schedule: seg_indptr[0] = %lld, expected 0", (long long)s->seg_indptr[0]);
    for (int64_t t = 0; t < ntask; t++) {
        const int64_t b = t / Hkv, g = t % Hkv, len = dl_case_seq_len(c, b);
        const int64_t k0 = s->seg_indptr[t], k1 = s->seg_indptr[t + 1];
        if (k1 <= k0)
            return dl_fail("schedule: task %lld (request %lld, KV head %lld) has no segment (seg_indptr[%lld] = %lld, "
                           "seg_indptr[%lld] = %lld)", (long long)t, (long long)b, (long long)g, (long long)t,
                           (long long)k0, (long long)(t + 1), (long long)k1);
        if (s->seg_begin[k0] != 0)
            return dl_fail("schedule: task %lld (request %lld, KV head %lld): its first segment begins at "
                           "seg_begin[%lld] = %lld, expected 0", (long long)t, (long long)b, (long long)g,
                           (long long)k0, (long long)s->seg_begin[k0]);
        for (int64_t k = k0 + 1; k < k1; k++) {
            if (s->seg_begin[k] <= s->seg_begin[k - 1] || s->seg_begin[k] >= len)
                return dl_fail("schedule: task %lld (request %lld, KV head %lld): seg_begin[%lld] = %lld must be > "
                               "seg_begin[%lld] = %lld and < the sequence length %lld", (long long)t, (long long)b,
                               (long long)g, (long long)k, (long long)s->seg_begin[k], (long long)(k - 1),
                               (long long)s->seg_begin[k - 1], (long long)len);
        }
    }
    return 0;
}

int64_t dl_split_kv_chunk(int64_t max_seq_len, int num_splits, int64_t tile)
{
    const int64_t n = num_splits < 1 ? 1 : num_splits, t = tile < 1 ? 1 : tile;
    const int64_t per = (max_seq_len + n - 1) / n;
    return (per + t - 1) / t * t;
}

int dl_schedule_split_kv(const dl_case *c, int num_splits, int64_t tile, dl_schedule *s, int64_t *chunk_out)
{
    memset(s, 0, sizeof *s);
    const int64_t B = c->cfg.batch_size, Hkv = c->cfg.num_kv_heads;
    const int64_t maxlen = dl_case_max_seq_len(c);
    int64_t nseg = 0;
    const int64_t chunk = dl_split_kv_chunk(maxlen, num_splits, tile);
    if (chunk < 1) return dl_fail("schedule: split-KV chunk of %lld tokens (longest sequence %lld)", (long long)chunk,
                                  (long long)maxlen);
    for (int64_t b = 0; b < B; b++) {
        const int64_t len = dl_case_seq_len(c, b);
        nseg += Hkv * ((len + chunk - 1) / chunk);
    }
    int64_t *indptr = dl_malloc((size_t)(B * Hkv + 1) * sizeof(int64_t), "schedule seg_indptr");
    int64_t *begin = dl_malloc((size_t)(nseg > 0 ? nseg : 1) * sizeof(int64_t), "schedule seg_begin");
    if (!indptr || !begin) {
        free(indptr);
        free(begin);
        return -1;
    }
    int64_t k = 0;
    indptr[0] = 0;
    for (int64_t t = 0; t < B * Hkv; t++) {
        const int64_t len = dl_case_seq_len(c, t / Hkv);
        for (int64_t j = 0; j < len; j += chunk) begin[k++] = j;
        indptr[t + 1] = k;
    }
    s->num_tasks = B * Hkv;
    s->seg_indptr = indptr;
    s->seg_begin = begin;
    if (chunk_out) *chunk_out = chunk;
    return 0;
}

void dl_schedule_free(dl_schedule *s)
{
    if (!s) return;
    free((void *)s->seg_indptr);
    free((void *)s->seg_begin);
    memset(s, 0, sizeof *s);
}

int dl_reference(const dl_case *c, dl_model m, const dl_model_params *params, dl_output *out)
{
    return dl_reference_sched(c, m, params, NULL, out);
}

int dl_reference_sched(const dl_case *c, dl_model m, const dl_model_params *params, const dl_schedule *sched,
                       dl_output *out)
{
    dl_model_params defaults;
    if (!params) {
        dl_model_params_default(&defaults);
        params = &defaults;
    }
    if (!c || !out) return dl_fail("dl_reference: NULL case or output");
    memset(out, 0, sizeof *out);
    if ((unsigned)m >= DL_MODEL_COUNT) return dl_fail("dl_reference: model = %d is unknown", (int)m);
    DL_TRY(check_params(params));
    DL_TRY(dl_config_validate(&c->cfg));
    if (!c->q || !c->k_cache || !c->v_cache || !c->k_scale || !c->v_scale || !c->kv_indptr || !c->kv_indices ||
        !c->kv_last_page_len)
        return dl_fail("dl_reference: the case has a NULL tensor (q, caches, scales or page table)");
    if (m == DL_MODEL_ORIG && (!c->q_orig || !c->k_orig || !c->v_orig))
        return dl_fail("dl_reference: model orig needs q_orig, k_orig and v_orig, and the case lacks %s",
                       !c->q_orig ? "q_orig" : !c->k_orig ? "k_orig" : "v_orig");
    DL_TRY(dl_schedule_validate(c, sched));
    /* the exact models ignore schedules; a trivial schedule is today's computation */
    if (dl_model_is_fp64(m) || dl_schedule_trivial(sched)) sched = NULL;

    const dl_config *cfg = &c->cfg;
    const int64_t B = cfg->batch_size, Hq = cfg->num_qo_heads, Hkv = cfg->num_kv_heads, D = cfg->head_dim;
    const int64_t G = dl_group_size(cfg);
    out->model = m;
    out->batch_size = B;
    out->num_qo_heads = Hq;
    out->head_dim = D;
    out->o = dl_malloc((size_t)(B * Hq * D) * sizeof(double), "reference output o");
    out->lse = dl_malloc((size_t)(B * Hq) * sizeof(double), "reference output lse");
    out->o_flip = models[m].mma ? dl_malloc((size_t)(B * Hq) * sizeof(double), "reference output o_flip") : NULL;
    if (!out->o || !out->lse || (models[m].mma && !out->o_flip)) {
        dl_output_free(out);
        return -1;
    }

    /* 1-byte KV formats decode through a table of their 256 codes */
    float lut_buf[256];
    const float *lut = NULL;
    if (dl_dtype_size(cfg->kv_dtype) == 1) {
        for (int i = 0; i < 256; i++) {
            uint8_t code = (uint8_t)i;
            lut_buf[i] = dl_decode_elem(cfg->kv_dtype, &code, 0);
        }
        lut = lut_buf;
    }

    const int blas_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    int failed = 0;
    const int64_t ntask = B * Hkv;
    const int emulated = !dl_model_is_fp64(m);
    int64_t p_values = 0, p_zeros = 0; /* integer sums: the same for any thread count */
    double *pc = emulated ? dl_malloc((size_t)(2 * ntask) * sizeof(double), "P-cast error sums") : NULL;
    if (emulated && !pc) {
        dl_output_free(out);
        return -1;
    }
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : p_values, p_zeros)
    for (int64_t t = 0; t < ntask; t++) {
        const int64_t b = t / Hkv, g = t % Hkv;
        double *o = out->o + (b * Hq + g * G) * D;
        double *lse = out->lse + b * Hq + g * G;
        double *o_flip = out->o_flip ? out->o_flip + b * Hq + g * G : NULL;
        const int64_t *seg = sched ? sched->seg_begin + sched->seg_indptr[t] : NULL;
        const int64_t nseg = sched ? sched->seg_indptr[t + 1] - sched->seg_indptr[t] : 1;
        int64_t tv = 0, tz = 0;
        int rc = !emulated ? task_fp64(c, lut, m == DL_MODEL_ORIG, b, g, o, lse)
                           : task_emulated(c, lut, m, params, b, g, seg, nseg, o, lse, o_flip, &tv, &tz, &pc[2 * t],
                                           &pc[2 * t + 1]);
        p_values += tv;
        p_zeros += tz;
        if (rc != 0) {
#pragma omp atomic write
            failed = 1;
        }
    }
    openblas_set_num_threads(blas_threads);
    if (failed) {
        free(pc);
        dl_output_free(out);
        return dl_fail("dl_reference: out of memory for the per-(request, head) buffers of model %s "
                       "(longest sequence x head_dim)", dl_model_name(m));
    }
    out->p_values = emulated ? p_values : -1;
    out->p_zeros = emulated ? p_zeros : -1;
    /* per-task sums added in task order: the same for any thread count */
    double e2 = 0.0, r2 = 0.0;
    for (int64_t t = 0; pc && t < ntask; t++) {
        e2 += pc[2 * t];
        r2 += pc[2 * t + 1];
    }
    out->p_cast_nmse = pc && r2 > 0.0 ? e2 / r2 : NAN;
    free(pc);
    return 0;
}

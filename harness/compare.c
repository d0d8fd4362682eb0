/* compare.c - the one comparison routine (CLI and tests share it) and the
 * two tables: implementation limits (a kernel vs the CPU model of its own
 * arithmetic; PASS or FAIL) and expected precision bands (a model vs exact;
 * a measured figure, never a FAIL).
 *
 * Order of judgement: unwritten (poison) and non-finite elements first - any
 * is a FAIL whatever the norms say - then relative L2 of o and max abs error
 * of lse against the table, per (request, head) as well. The norms are taken over the elements where both
 * candidate and reference are finite. */
#include "dl_compare.h"

#include <math.h>
#include <string.h>

/* Running sums over the finite elements. */
typedef struct {
    double err2, ref2, max_abs;
} sums;

/* Classify element i; returns 1 when it goes into the norms. */
static int classify(double xi, int poisoned, double ri, dl_metrics *m)
{
    if (poisoned) {
        m->unwritten++;
        return 0;
    }
    if (!isfinite(ri)) {
        /* a non-finite reference is matched only by the same value */
        if (!(isnan(ri) && isnan(xi)) && xi != ri) m->nonfinite++;
        return 0;
    }
    if (!isfinite(xi)) {
        m->nonfinite++;
        return 0;
    }
    return 1;
}

static int poisoned_at(const double *x, const float *xf, int64_t i)
{
    if (x) {
        uint64_t b;
        memcpy(&b, &x[i], 8);
        return b == DL_POISON_F64_BITS;
    }
    uint32_t b;
    memcpy(&b, &xf[i], 4);
    return b == DL_POISON_F32_BITS;
}

/* The shared body: x (double) or xf (float) against r, rows of row_len; row_allow [rows] (or
 * NULL): an absolute L2 error each row may have on top (head_excess). */
static void compare_rows(const double *x, const float *xf, const double *r, int64_t n, int64_t row_len,
                         const double *row_allow, dl_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->n = n;
    m->head_worst = -1;
    if (row_len <= 0 || row_len > n || n % row_len) row_len = n > 0 ? n : 1;
    const int64_t rows = n > 0 ? n / row_len : 0;
    sums s = {0, 0, 0};
    int64_t worst_abs_at = -1;
    for (int64_t i = 0; i < n; i++) {
        double xi = x ? x[i] : (double)xf[i];
        if (!classify(xi, poisoned_at(x, xf, i), r[i], m)) continue;
        double e = xi - r[i];
        s.err2 += e * e;
        s.ref2 += r[i] * r[i];
        if (worst_abs_at < 0 || fabs(e) > s.max_abs) {
            s.max_abs = fmax(s.max_abs, fabs(e));
            worst_abs_at = i;
        }
    }
    int64_t nf = n - m->nonfinite - m->unwritten;
    m->rel_l2 = s.ref2 > 0.0 ? sqrt(s.err2 / s.ref2) : (s.err2 > 0.0 ? INFINITY : 0.0);
    m->nmse = s.ref2 > 0.0 ? s.err2 / s.ref2 : (s.err2 > 0.0 ? INFINITY : 0.0);
    m->max_abs = s.max_abs;
    /* max relative error with a floor: near-zero reference elements are
     * measured against DL_REL_FLOOR * rms(r) instead of themselves */
    double floor = nf > 0 ? DL_REL_FLOOR * sqrt(s.ref2 / (double)nf) : 0.0;
    double mr = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double xi = x ? x[i] : (double)xf[i];
        if (!isfinite(xi) || !isfinite(r[i]) || poisoned_at(x, xf, i)) continue;
        double e = fabs(xi - r[i]), den = fmax(fabs(r[i]), floor);
        double q = den > 0.0 ? e / den : (e > 0.0 ? INFINITY : 0.0);
        if (q > mr) mr = q;
    }
    m->max_rel = mr;
    /* per row: relative L2 with the floor DL_REL_FLOOR * rms row norm */
    double row_floor = rows > 0 ? DL_REL_FLOOR * sqrt(s.ref2 / (double)rows) : 0.0;
    double hw = 0.0, hx = 0.0;
    int64_t hk = -1;
    for (int64_t k = 0; k < rows; k++) {
        double e2 = 0.0, r2 = 0.0;
        int any = 0;
        for (int64_t i = k * row_len; i < (k + 1) * row_len; i++) {
            double xi = x ? x[i] : (double)xf[i];
            if (!isfinite(xi) || !isfinite(r[i]) || poisoned_at(x, xf, i)) continue;
            double e = xi - r[i];
            e2 += e * e;
            r2 += r[i] * r[i];
            any = 1;
        }
        if (!any) continue;
        double den = fmax(sqrt(r2), row_floor);
        double q = den > 0.0 ? sqrt(e2) / den : (e2 > 0.0 ? INFINITY : 0.0);
        if (hk < 0 || q > hw) {
            hw = fmax(hw, q);
            hk = k;
        }
        const double ex = row_allow ? fmax(0.0, sqrt(e2) - row_allow[k]) : sqrt(e2);
        const double qx = den > 0.0 ? ex / den : (ex > 0.0 ? INFINITY : 0.0);
        hx = fmax(hx, qx);
    }
    m->head_rel_l2 = hw;
    m->head_excess = hx;
    m->head_worst = row_len == 1 ? worst_abs_at : hk;
}

void dl_compare_rows_f32(const float *x, const double *r, int64_t n, int64_t row_len, dl_metrics *m)
{
    compare_rows(NULL, x, r, n, row_len, NULL, m);
}

void dl_compare_rows_f64(const double *x, const double *r, int64_t n, int64_t row_len, dl_metrics *m)
{
    compare_rows(x, NULL, r, n, row_len, NULL, m);
}

void dl_compare_f32(const float *x, const double *r, int64_t n, dl_metrics *m) { compare_rows(NULL, x, r, n, n, NULL, m); }

void dl_compare_f64(const double *x, const double *r, int64_t n, dl_metrics *m) { compare_rows(x, NULL, r, n, n, NULL, m); }

/* ---- the one routine ---- */

/* o/lse as double (o64, l64) or float (o32, l32): the one scoring of both. */
static void score(const double *o64, const float *o32, const double *l64, const float *l32, const dl_output *ref,
                  dl_scores *s)
{
    const int64_t rows = ref->batch_size * ref->num_qo_heads, D = ref->head_dim;
    memset(s, 0, sizeof *s);
    compare_rows(o64, o32, ref->o, rows * D, D, ref->o_flip, &s->o);
    /* the global share of the P-rounding flip allowance: ||per-row allowances|| / ||o_ref|| */
    if (ref->o_flip) {
        double a2 = 0.0, r2 = 0.0;
        for (int64_t k = 0; k < rows; k++) a2 += ref->o_flip[k] * ref->o_flip[k];
        for (int64_t i = 0; i < rows * D; i++)
            if (isfinite(ref->o[i])) r2 += ref->o[i] * ref->o[i];
        s->o_allow = r2 > 0.0 ? sqrt(a2 / r2) : (a2 > 0.0 ? INFINITY : 0.0);
    }
    s->lse.head_worst = -1;
    if (l64 || l32) {
        s->has_lse = 1;
        compare_rows(l64, l32, ref->lse, rows, 1, NULL, &s->lse);
    }
}

void dl_score_f32(const float *o, const float *lse, const dl_output *ref, dl_scores *s)
{
    score(NULL, o, NULL, lse, ref, s);
}

void dl_score_f64(const double *o, const double *lse, const dl_output *ref, dl_scores *s)
{
    score(o, NULL, lse, NULL, ref, s);
}

/* ---- implementation limits: a kernel against the CPU model of its own arithmetic ----
 * Derivation: limit = DL_IMPL_MARGIN (8) x the worst kernel-vs-model figure measured on the
 * NVIDIA H200 on 2026-12-01 (driver/runtime 13.0), the figure rounded up to 4 significant
 * digits. Source: results/h200_2026-12-01/test-gpu-results.csv, `make test-gpu` with seed
 * 20261201: 32 golden files (the 24 pairwise nasty cases + 8 with pages 2..256, groups to 16,
 * outlier and channel-outlier inputs; lengths 1..1000, D 64..256), every variant, splits
 * 1/4/auto, 744 PASS 0 FAIL; the model of a split or planned kernel follows the kernel's
 * schedule. Computed by experiments/derive_thresholds.py, whose output is
 * results/h200_2026-12-01/thresholds.txt (the row of each worst figure is named there).
 *
 *              worst measured (H200)                      limit (8 x, per head capped)
 *   model      o global   o per head  lse max abs        o global   o per head  lse
 *   fp32       6.125e-7   3.327e-6    7.630e-6           4.900e-6   2.662e-5    6.104e-5
 *   bf16       4.971e-5   1.536e-3    3.815e-6           3.977e-4   5e-3 (cap)  3.052e-5
 *   fp8        2.963e-7   1.491e-6    1.908e-6           2.370e-6   1.193e-5    1.526e-5
 *   fp8acc     2.938e-7   1.488e-6    1.908e-6           2.350e-6   1.190e-5    1.526e-5
 *   bf16simt   3.056e-7   1.610e-6    1.908e-6           2.445e-6   1.288e-5    1.526e-5
 *
 * Per-head cap HEAD_CAP = 5e-3, half the smallest planted bug (one head x 1.01: per-head error
 * 1e-2, tests/test_planted.c), so that a 1 % error in one head stays a FAIL. Only bf16 reaches
 * it (8 x 1.536e-3 = 1.23e-2): its per-head limit is 3.26 x the measured worst, not 8 x. Why the
 * bf16 per-head figure is that large: the model rounds P = expf(s - m) to BF16 for P*V, and a
 * kernel whose exp differs from glibc's expf by an ulp or two rounds an element that lies near
 * a BF16 rounding boundary the other way (one BF16 ulp, 2^-8 .. 2^-7 of that p); on a short
 * request one such flip is a per-head error of ~1e-3. Checked on the CPU: the bf16 model with
 * expf perturbed by -2..+2 float ulps (8 patterns) on the same 32 cases reproduces the H200's
 * worst row exactly (case08, request 6, head 5: 1.535e-3; global 4.97e-5), and the
 * second-largest (case07, 4.3e-4). The fp8/fp8acc models round P to e4m3 (ulp 2^-4 .. 2^-3):
 * flips there are rarer and 16x coarser; none happened on the first H200 run (their figures are
 * float-rounding size), so their limits do not allow one: the fp8 models carry instead a
 * P-rounding flip allowance per (request, head) (dl_output.o_flip, /golden/<model>/o_flip):
 * the o change that rounding each fragile P element (x = p * p_scale within a relative
 * DL_FLIP_ETA = 2^-14 of an e4m3 boundary) the other way can cause; the judge subtracts it from
 * each row's error (dl_metrics.head_excess) and adds its global share to the o limit
 * (dl_scores.o_allow). Why: the emulation over the test-gpu matrix of six seeds
 * (results/h200_2026-12-01/exp_sensitivity_cpu.txt) put 1.4 % of (fp8 case, exp pattern) runs
 * over the plain limits (one flip: per head 1e-3 .. 6.8e-3, global up to 3.5e-4), and the H200
 * then failed a correct fp8-none-mma and fp8acc-none-mma so (2026-12-01, seed 20261202, case 20:
 * global 3.07e-5, per head 1.27e-3; results/h200_2026-12-01b/test-gpu-seed20261202.log). A plain
 * limit that admits a flip (>= 7e-3 per head) would no longer catch a 1 % error in one head;
 * the allowance admits only flips of elements that sit at a boundary, and only their size.
 * bf16 stays under its cap in that emulation (per head at most 2.4e-3, global 1.0e-4: margins
 * 2.1x and 3.9x) and has no allowance.
 * Floor: a worst figure of 0 would get 8 x 2^-24 (a float32 rounding); none is 0.
 * Earlier H200 figures (2026-11-30, results/h200_2026-11-30/results.csv, llama3-8B B=64
 * length 1024: fp32 8.86e-7, bf16simt 8.04e-7, bf16 4.09e-5; results/fp8_accumulator_h200.txt
 * at 23 accumulator bits: fp8 9.09e-7, fp8acc 8.98e-7, lse 3.815e-6) are all under these
 * limits (the closest: fp8 at 2.6 x, lse 4 x).
 * exact/orig: no kernel implements them (a CPU recomputation): analytic, 1e-12
 * (two FP64 evaluations in another BLAS order differ by ~1e-13 at most). */
#define HEAD_CAP 5e-3
#define IMPL(model, o_worst, head_worst, lse_worst)                                                              \
    {model, DL_IMPL_MARGIN * (o_worst),                                                                          \
     DL_IMPL_MARGIN * (head_worst) < HEAD_CAP ? DL_IMPL_MARGIN * (head_worst) : HEAD_CAP,                         \
     DL_IMPL_MARGIN * (lse_worst)}
static const dl_threshold impl_table[DL_MODEL_COUNT] = {
    {DL_MODEL_EXACT, 1e-12, 1e-12, 1e-12},
    {DL_MODEL_ORIG, 1e-12, 1e-12, 1e-12},
    IMPL(DL_MODEL_FP32, 6.125e-7, 3.327e-6, 7.630e-6),
    IMPL(DL_MODEL_BF16, 4.971e-5, 1.536e-3, 3.815e-6),
    IMPL(DL_MODEL_FP8, 2.963e-7, 1.491e-6, 1.908e-6),
    IMPL(DL_MODEL_FP8ACC, 2.938e-7, 1.488e-6, 1.908e-6),
    IMPL(DL_MODEL_BF16SIMT, 3.056e-7, 1.610e-6, 1.908e-6),
    /* fp8wg: one 14-bit truncating QGMMA chain per segment carries a P-rounding flip on: every later
     * k-block truncates a value that differs, so a correct kernel whose exp differs from expf sits
     * past the flip allowance (which counts only the flipped products). Measured by the emulation
     * (experiments/exp_sensitivity.sh, expf -2..+2 ulp, 8 patterns, the test-gpu matrix of seeds
     * 20261401 and 20261402: worst global o 8.916e-6, worst per head beyond the allowance 2.278e-5;
     * with fp8's limits 6.6 .. 11 % of those runs FAILed) and on the H200 (2026-12-01, memfloor
     * llama3-8B B64 L1024 and B256 L4096: 1.569e-5 and 2.164e-5 beyond the allowance,
     * results/h200_2026-12-01d). fp8accwg restarts the chain every 1..4 k-blocks: the same
     * emulation keeps it under fp8's figures (worst beyond the allowance 3.486e-7), so it keeps them. */
    IMPL(DL_MODEL_FP8WG, 8.916e-6, 2.278e-5, 1.908e-6),
    IMPL(DL_MODEL_FP8ACCWG, 2.938e-7, 1.488e-6, 1.908e-6),
};

const dl_threshold *dl_threshold_impl(dl_model m)
{
    return (unsigned)m < DL_MODEL_COUNT ? &impl_table[m] : NULL;
}

/* ---- the o limits of long sequences (dl_compare.h: DL_ACC_LEN_REF) ----
 * The table's figures come from lengths up to 1000. Beyond that the float order of the sums matters:
 * the fp32 model (sequential FP32 online softmax) against exact on llama3-8B B4 e4m3 (absmax-tensor,
 * seed 1; CPU, 2026-12-03): o rel L2 7.07e-7 at length 1024, 1.21e-6 at 4096, 2.33e-6 at 16384,
 * 3.32e-6 at 32768, about 0.3 u sqrt(L). On the H200 (2026-12-03, results/h200_2026-12-03f) the
 * split CUDA-core kernels at length 32768 sat 3.24e-6 (B1, 33 splits) and 3.31e-6 (B4, 9 splits)
 * from the bf16simt model, over its 2.445e-6; their FP32 twins (fp32-*-simt, the same splits) sat
 * 3.20e-6 / 3.36e-6 from the fp32 model but 3.9e-7 / 5.5e-7 from exact: the model's own sequential
 * sum was the farther one. The same model computed on the kernel's split schedule (another correct
 * order, no GPU involved) sits 3.33e-6 / 3.42e-6 from the stored one (tests/test_model_sched.c,
 * test_long_sequence_orders). Scaling the o limits by sqrt(L / 1024) keeps the table's margin over
 * that drift at every length and leaves cases up to 1024 tokens exactly as before; a real bug stays
 * far above: the last of 32768 tokens dropped moved the bf16simt model's o by 4.4e-3 (CPU, B1, about
 * 1/sqrt(L)), over 300x the scaled limit 1.38e-5. lse is
 * a sum of positive terms (its drift stays ~1e-6) and keeps its limit. */
double dl_accum_scale(int64_t max_len)
{
    return max_len > DL_ACC_LEN_REF ? sqrt((double)max_len / DL_ACC_LEN_REF) : 1.0;
}

int dl_threshold_impl_len(dl_model m, int64_t max_len, dl_threshold *t)
{
    const dl_threshold *base = dl_threshold_impl(m);
    if (!base) return -1;
    const double k = dl_accum_scale(max_len);
    *t = *base;
    t->o_rel_l2 = base->o_rel_l2 * k;
    t->o_head_rel_l2 = base->o_head_rel_l2 * k;
    if (t->o_head_rel_l2 > HEAD_CAP && base->o_head_rel_l2 <= HEAD_CAP) t->o_head_rel_l2 = HEAD_CAP;
    return 0;
}

/* ---- expected precision band: a model against exact (same stored inputs, or the originals for orig) ----
 * Not a pass/fail limit: a correct kernel of a model shows its model's
 * arithmetic error against exact, and a figure above the band is reported as
 * "above expected" (e.g. BF16 dots on channel-outlier inputs), never a FAIL.
 * Expected size of the error of each model on inputs of unit variance, from
 * the unit roundoff u of the rounding each one adds; the band's upper edge is
 * about 2x the expected relative L2 of o. A rounding of relative error uniform
 * in [-u, u] has rms u/sqrt(3); o = sum_j p_j v_j averages errors of V and of
 * p, so o's relative error is about that rms.
 *  fp32: FP32 vs FP64: 1e-5, lse 1e-5.
 *  bf16: Q, K, V rounded to BF16 (u = 2^-9: rms 1.1e-3 each) and P rounded
 *        (rms 1.1e-3): together ~ 2e-3: 5e-3. The scores carry |s| sqrt(2)
 *        1.1e-3 ~ 1e-2 for |s| ~ 5: lse 3e-2.
 *  fp8:  Q quantized to e4m3 per head (u = 2^-4: rms 3.6e-2) and P to e4m3
 *        (rms 3.6e-2): ~ 5e-2 in o: 1e-1; lse: the score error ~ 3.6e-2 |s|
 *        ~ 0.2 for |s| ~ 5: 0.3.
 *  bf16simt: Q (and an f16 cache) rounded to BF16 (rms 1.1e-3), and every
 *        bf16x2 FMA rounds its partial: o ~ 3e-3 typical (measured 2.7e-3 ..
 *        3.6e-3 on normal inputs): 1.5e-2. lse: its scores carry bf16's Q/K
 *        rounding plus the rounding of every bf16x2 partial, so at least bf16's
 *        3e-2 (was 1e-2, under bf16's: the H200 run of 2026-12-01 measured 1.19e-2
 *        on normal inputs with an f16 cache, thresholds.txt section 3).
 *  orig (storage error: orig vs exact): the originals rounded to the KV format
 *        (and Q to its q_dtype; BF16 Q adds 1.1e-3): e4m3 u = 2^-4 (0.1, lse
 *        0.3); e5m2 u = 2^-3 (0.2, lse 0.6); bf16 u = 2^-9 (5e-3, lse 3e-2);
 *        f16 u = 2^-12 (but a BF16 Q adds 1.1e-3: 5e-3, lse 3e-2).
 *  exact: itself (1e-12).
 * These bands are analytic, not provisional, and are not re-derived as 8 x the worst
 * measured figure: that would absorb the outlier / channel-outlier rows the band exists to
 * flag. Checked against the H200 run of 2026-12-01 (results/h200_2026-12-01/thresholds.txt,
 * section 3: worst kernel-vs-exact figure per model, KV dtype and distribution): on normal
 * inputs every figure is within its band (fp32 1.1e-6 lse vs 1e-5; bf16 2.4e-3 o, 7.3e-3
 * lse; fp8 1.9e-2 o, 8.1e-2 lse; bf16simt 3.2e-3 o) except bf16simt's lse (1.19e-2, f16
 * cache: band raised to 3e-2, above); `above expected` only on channel-outlier inputs
 * (bf16 lse 3.2e-2, fp8 lse 0.50, bf16simt lse 6.8e-2) and bf16simt on outlier inputs
 * (lse 2.2e-2, within the new band). */
static const dl_threshold exact_table[DL_MODEL_COUNT] = {
    {DL_MODEL_EXACT, 1e-12, INFINITY, 1e-12},
    {DL_MODEL_ORIG, 0.1, INFINITY, 0.3}, /* placeholder row: orig depends on kv_dtype, see orig_table */
    {DL_MODEL_FP32, 1e-5, INFINITY, 1e-5},
    {DL_MODEL_BF16, 5e-3, INFINITY, 3e-2},
    {DL_MODEL_FP8, 1e-1, INFINITY, 0.3},
    {DL_MODEL_FP8ACC, 1e-1, INFINITY, 0.3},
    {DL_MODEL_BF16SIMT, 1.5e-2, INFINITY, 3e-2},
    {DL_MODEL_FP8WG, 1e-1, INFINITY, 0.3}, /* fp8's band: the 14-bit accumulator adds ~1e-4 to its 5e-2 */
    {DL_MODEL_FP8ACCWG, 1e-1, INFINITY, 0.3},
};
static const dl_threshold orig_table[DL_DTYPE_COUNT] = {
    [DL_F32] = {DL_MODEL_ORIG, 5e-3, INFINITY, 3e-2},
    [DL_F16] = {DL_MODEL_ORIG, 5e-3, INFINITY, 3e-2},
    [DL_BF16] = {DL_MODEL_ORIG, 5e-3, INFINITY, 3e-2},
    [DL_E4M3] = {DL_MODEL_ORIG, 0.1, INFINITY, 0.3},
    [DL_E5M2] = {DL_MODEL_ORIG, 0.2, INFINITY, 0.6},
};

const dl_threshold *dl_threshold_vs_exact(dl_model m, dl_dtype kv_dtype)
{
    if ((unsigned)m >= DL_MODEL_COUNT) return NULL;
    if (m == DL_MODEL_ORIG) return (unsigned)kv_dtype < DL_DTYPE_COUNT ? &orig_table[kv_dtype] : NULL;
    return &exact_table[m];
}

double dl_output_roundoff(dl_dtype o_dtype)
{
    return o_dtype == DL_BF16 ? ldexp(1.0, -8) : o_dtype == DL_F16 ? ldexp(1.0, -11) : 0.0;
}

double dl_limit_widened(double limit, double u) { return u + (1.0 + u) * limit; }

/* "x <= t" that is false for NaN metrics. */
static int within(double x, double t) { return x <= t; }

dl_verdict dl_judge_impl(const dl_scores *s, const dl_threshold *t, double o_round)
{
    const dl_metrics *o = &s->o, *l = &s->lse;
    if (o->nonfinite || o->unwritten || (s->has_lse && (l->nonfinite || l->unwritten))) return DL_FAIL;
    /* the model's P-rounding flip allowance (fp8, fp8acc; 0 otherwise) on top of each limit */
    if (!within(o->rel_l2, dl_limit_widened(t->o_rel_l2, o_round) + s->o_allow)) return DL_FAIL;
    if (!within(o->head_excess, dl_limit_widened(t->o_head_rel_l2, o_round))) return DL_FAIL;
    if (s->has_lse && !within(l->max_abs, t->lse_abs)) return DL_FAIL;
    return DL_PASS;
}

int dl_within_band(const dl_scores *s, const dl_threshold *band)
{
    const dl_metrics *o = &s->o, *l = &s->lse;
    if (o->nonfinite || o->unwritten || (s->has_lse && (l->nonfinite || l->unwritten))) return 0;
    if (!within(o->rel_l2, band->o_rel_l2)) return 0;
    if (s->has_lse && !within(l->max_abs, band->lse_abs)) return 0;
    return 1;
}

void dl_band_limits(const dl_threshold *band, double o_round, dl_threshold *t)
{
    t->model = band->model;
    t->o_rel_l2 = dl_limit_widened(band->o_rel_l2, o_round);
    t->o_head_rel_l2 = dl_limit_widened(DL_BAND_HEAD_FACTOR * band->o_rel_l2, o_round);
    t->lse_abs = band->lse_abs;
}

const char *dl_verdict_name(dl_verdict v) { return v == DL_PASS ? "PASS" : v == DL_FAIL ? "FAIL" : "?"; }

const char *dl_band_name(int within_band) { return within_band ? "within" : "above expected"; }

/* compare.c - the one comparison routine (CLI and tests share it) and the
 * threshold tables: implementation error (a kernel vs the CPU model of its own
 * arithmetic) and arithmetic/storage error (a model vs exact).
 *
 * Order of judgement: unwritten (poison) and non-finite elements first - any
 * is a FAIL whatever the norms say - then relative L2 of o and max abs error
 * of lse against the table. The norms are taken over the elements where both
 * candidate and reference are finite. */
#include "dl_compare.h"

#include <math.h>
#include <string.h>

/* One element into the running sums. xi is the candidate as double. */
typedef struct {
    double err2, ref2, max_abs;
} sums;

static void finish(const double *x, const float *xf, const double *r, int64_t n, dl_metrics *m, sums s)
{
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
        if (!isfinite(xi) || !isfinite(r[i])) continue;
        double e = fabs(xi - r[i]), den = fmax(fabs(r[i]), floor);
        double q = den > 0.0 ? e / den : (e > 0.0 ? INFINITY : 0.0);
        if (q > mr) mr = q;
    }
    m->max_rel = mr;
}

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

static void add(sums *s, double xi, double ri)
{
    double e = xi - ri;
    s->err2 += e * e;
    s->ref2 += ri * ri;
    if (fabs(e) > s->max_abs) s->max_abs = fabs(e);
}

void dl_compare_f32(const float *x, const double *r, int64_t n, dl_metrics *m)
{
    sums s = {0, 0, 0};
    memset(m, 0, sizeof *m);
    m->n = n;
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        if (classify(x[i], bits == DL_POISON_F32_BITS, r[i], m)) add(&s, x[i], r[i]);
    }
    finish(NULL, x, r, n, m, s);
}

void dl_compare_f64(const double *x, const double *r, int64_t n, dl_metrics *m)
{
    sums s = {0, 0, 0};
    memset(m, 0, sizeof *m);
    m->n = n;
    for (int64_t i = 0; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &x[i], 8);
        if (classify(x[i], bits == DL_POISON_F64_BITS, r[i], m)) add(&s, x[i], r[i]);
    }
    finish(x, NULL, r, n, m, s);
}

/* ---- implementation error: a kernel against the CPU model of its own arithmetic ----
 * Both sides round the same inputs the same way (the same codes, the same
 * BF16/FP8 rounding of Q, K, V); they differ only in the order of FP32
 * summations (warp shuffles, MMA fragment order, split-KV merges) and in
 * exp() (ex2.approx is ~2 ulp). With u32 = 2^-24 = 6.0e-8:
 *  fp32: a D = 128 dot with another summation order differs by about
 *        sqrt(D) u32 ~ 7e-7 relative (D u32 = 7.6e-6 in the worst case); the
 *        softmax-weighted sum over L = 1024 tokens adds ~ sqrt(L) u32 = 2e-6.
 *        PASS at 1e-5 (5x the typical), MARGINAL up to 1e-4 (the linear
 *        worst case of both sums). lse: s_j errors ~ 1e-6 absolute for |s| ~ 10,
 *        the log of a sum of L terms ~ L u32 = 6e-5 worst: 1e-5 / 1e-4.
 *  bf16: the same FP32 sums, but P is rounded to BF16 (u = 2^-9 = 1.95e-3):
 *        a one-ulp difference in the FP32 value of p_j flips its BF16 rounding
 *        only when p_j sits within 2^-16 relative of a rounding boundary, and a
 *        flip moves that p_j by 2^-8. Even if every p_j flipped the error in o
 *        would be ~2^-8 / sqrt(L)-averaged; PASS at 2e-3 (one BF16 unit
 *        roundoff over the whole output), MARGINAL to 1e-2 (five of them). lse
 *        is computed from FP32 sums: 1e-4 / 1e-3 (bf16-rounded Q.K at |s| ~ 10).
 *  fp8:  P is quantized to e4m3 (u = 2^-4 = 6.25e-2; a flip moves p_j by
 *        2^-3): PASS at 2e-2 (a third of one e4m3 unit roundoff), MARGINAL to
 *        5e-2 (below one unit roundoff: anything larger is a different
 *        arithmetic, not a different summation order). lse 1e-3 / 1e-2
 *        (Q rounded to e4m3 the same way on both sides; the scores differ
 *        only by FP32 order, amplified by reduced-precision accumulation).
 *  exact/orig: two FP64 evaluations (e.g. a recomputation with another BLAS
 *        kernel): u64 = 1.1e-16, D and L sums ~ 1e-13 worst: 1e-12 / 1e-10. */
static const dl_threshold impl_table[DL_MODEL_COUNT] = {
    {DL_MODEL_EXACT, 1e-12, 1e-10, 1e-12, 1e-10},
    {DL_MODEL_ORIG, 1e-12, 1e-10, 1e-12, 1e-10},
    {DL_MODEL_FP32, 1e-5, 1e-4, 1e-5, 1e-4},
    {DL_MODEL_BF16, 2e-3, 1e-2, 1e-4, 1e-3},
    {DL_MODEL_FP8, 2e-2, 5e-2, 1e-3, 1e-2},
    /* fp8acc: the fp8 arithmetic with a second accumulation level: same budget */
    {DL_MODEL_FP8ACC, 2e-2, 5e-2, 1e-3, 1e-2},
    /* bf16simt: the BF16 dot is emulated bit for bit (same roundings in the same
     * order); what is left is FP32 (score scale, expf, softmax and P*V order): fp32's row */
    {DL_MODEL_BF16SIMT, 1e-5, 1e-4, 1e-5, 1e-4},
};

const dl_threshold *dl_threshold_impl(dl_model m)
{
    return (unsigned)m < DL_MODEL_COUNT ? &impl_table[m] : NULL;
}

/* ---- model error against exact (same stored inputs, or the originals for orig) ----
 * Expected size of the error of each model on inputs of unit variance,
 * from the unit roundoff u of the rounding each one adds; PASS is about 2x the
 * expected relative L2 of o, MARGINAL about 2x more. A rounding of relative
 * error uniform in [-u, u] has rms u/sqrt(3); o = sum_j p_j v_j averages
 * errors of V and of p, so o's relative error is about that rms.
 *  fp32: as above (FP32 vs FP64): 1e-5 / 1e-4, lse 1e-5 / 1e-4.
 *  bf16: Q, K, V rounded to BF16 (u = 2^-9: rms 1.1e-3 each) and P rounded
 *        (rms 1.1e-3): together ~ 2e-3: PASS 5e-3, MARGINAL 2e-2. The scores
 *        carry |s| sqrt(2) 1.1e-3 ~ 1e-2 for |s| ~ 5: lse 3e-2 / 1e-1.
 *  fp8:  Q quantized to e4m3 per head (u = 2^-4: rms 3.6e-2) and P to e4m3
 *        (rms 3.6e-2): ~ 5e-2 in o: PASS 1e-1, MARGINAL 2.5e-1; lse: the score
 *        error ~ 3.6e-2 |s| ~ 0.2 for |s| ~ 5: 0.3 / 1.0.
 *  orig (storage error: orig vs exact): the originals rounded to the KV format
 *        (and Q to its q_dtype; BF16 Q adds 1.1e-3): e4m3 u = 2^-4 (rms 3.6e-2,
 *        applied to K and V: PASS 0.1, MARGINAL 0.25, lse 0.3 / 1.0); e5m2
 *        u = 2^-3 (rms 7.2e-2: 0.2 / 0.5, lse 0.6 / 2.0); bf16 u = 2^-9
 *        (5e-3 / 2e-2, lse 3e-2 / 1e-1); f16 u = 2^-12 (rms 1.4e-4, but a BF16
 *        Q adds 1.1e-3: 5e-3 / 2e-2, lse 3e-2 / 1e-1).
 *  exact: itself. */
static const dl_threshold exact_table[DL_MODEL_COUNT] = {
    {DL_MODEL_EXACT, 1e-12, 1e-10, 1e-12, 1e-10},
    {DL_MODEL_ORIG, 0.1, 0.25, 0.3, 1.0}, /* placeholder row: orig depends on kv_dtype, see orig_table */
    {DL_MODEL_FP32, 1e-5, 1e-4, 1e-5, 1e-4},
    {DL_MODEL_BF16, 5e-3, 2e-2, 3e-2, 1e-1},
    {DL_MODEL_FP8, 1e-1, 2.5e-1, 0.3, 1.0},
    {DL_MODEL_FP8ACC, 1e-1, 2.5e-1, 0.3, 1.0},
    /* bf16simt: Q (and an f16 cache) rounded to BF16 (rms 1.1e-3), and every
     * bf16x2 FMA rounds its partial (4 roundings per run, ~2e-3 relative per
     * run sum): o ~ 3e-3 typical (measured 2.7e-3..3.6e-3 on normal inputs, B=4
     * Hq=8 D=128 L=500, e4m3/bf16/f16 caches), lse 5e-4: PASS 1.5e-2, MARGINAL
     * 5e-2; lse 1e-2 / 5e-2 (outliers raise |s| and with it the score error) */
    {DL_MODEL_BF16SIMT, 1.5e-2, 5e-2, 1e-2, 5e-2},
};
static const dl_threshold orig_table[DL_DTYPE_COUNT] = {
    [DL_F32] = {DL_MODEL_ORIG, 5e-3, 2e-2, 3e-2, 1e-1},
    [DL_F16] = {DL_MODEL_ORIG, 5e-3, 2e-2, 3e-2, 1e-1},
    [DL_BF16] = {DL_MODEL_ORIG, 5e-3, 2e-2, 3e-2, 1e-1},
    [DL_E4M3] = {DL_MODEL_ORIG, 0.1, 0.25, 0.3, 1.0},
    [DL_E5M2] = {DL_MODEL_ORIG, 0.2, 0.5, 0.6, 2.0},
};

const dl_threshold *dl_threshold_vs_exact(dl_model m, dl_dtype kv_dtype)
{
    if ((unsigned)m >= DL_MODEL_COUNT) return NULL;
    if (m == DL_MODEL_ORIG) return (unsigned)kv_dtype < DL_DTYPE_COUNT ? &orig_table[kv_dtype] : NULL;
    return &exact_table[m];
}

/* "x <= t" that is false for NaN metrics. */
static int within(double x, double t) { return x <= t; }

dl_verdict dl_verdict_of(const dl_metrics *o, const dl_metrics *lse, const dl_threshold *t)
{
    if (o->nonfinite || o->unwritten || (lse && (lse->nonfinite || lse->unwritten))) return DL_FAIL;
    if (!within(o->rel_l2, t->o_marginal) || (lse && !within(lse->max_abs, t->lse_marginal))) return DL_FAIL;
    if (!within(o->rel_l2, t->o_pass) || (lse && !within(lse->max_abs, t->lse_pass))) return DL_MARGINAL;
    return DL_PASS;
}

const char *dl_verdict_name(dl_verdict v)
{
    return v == DL_PASS ? "PASS" : v == DL_MARGINAL ? "MARGINAL" : v == DL_FAIL ? "FAIL" : "?";
}

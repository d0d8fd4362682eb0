/* dl_compare.h - the one comparison routine (shared by the CLI and the tests)
 * and the two tables per golden model: implementation limits (a kernel against
 * the CPU model of its own arithmetic: PASS or FAIL) and expected precision
 * bands (a model against exact: a measured figure, `within` or `above
 * expected`, never a FAIL).
 *
 * Order: non-finite count first (any NaN/Inf where the reference is finite is
 * a FAIL), then relative L2 = ||x-r||/||r||, NMSE = ||x-r||^2/||r||^2, max abs
 * error, max relative error |x-r| / max(|r|, floor), and per row (one row =
 * one (request, query head): head_dim elements of o, one element of lse) the
 * largest row error, so that a bug in one head is not diluted by
 * sqrt(batch x heads) in the global figure. */
#ifndef DL_COMPARE_H
#define DL_COMPARE_H

#include <stdint.h>
#include "../ref/dl_ref.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { DL_PASS = 0, DL_FAIL } dl_verdict;

typedef struct {
    int64_t n;            /* elements compared */
    int64_t nonfinite;    /* candidate elements that are NaN/Inf where reference is finite */
    int64_t unwritten;    /* elements still holding the poison pattern (if checked) */
    double rel_l2, nmse, max_abs, max_rel;
    /* per row of row_len elements (o: one (request, head) row of head_dim; lse: one element):
     * head_rel_l2 = max over rows of ||x_row - r_row|| / max(||r_row||, DL_REL_FLOOR * rms row norm);
     * head_worst = the row (b * num_qo_heads + h) with the largest error - by that relative L2
     * for rows of several elements, by |x - r| for rows of one element (lse) -; -1 when none */
    double head_rel_l2;
    int64_t head_worst;
    /* the same per-row figure after each row's allowance (an absolute L2 error, the golden
     * model's P-rounding flip allowance dl_output.o_flip) is taken off the row's error:
     * max over rows of max(0, ||x_row - r_row|| - allow_row) / the same denominator; equals
     * head_rel_l2 when the model gives no allowance. The judge's per-head figure. */
    double head_excess;
} dl_metrics;

/* Limits of one golden model. Implementation table: a kernel PASSes when every
 * figure is at or under its limit (and nothing is non-finite or unwritten).
 * Precision band (vs exact): o_rel_l2 and lse_abs bound the expected error;
 * o_head_rel_l2 is not part of a band (INFINITY). */
typedef struct {
    dl_model model;
    double o_rel_l2;       /* relative L2 of o over the whole output */
    double o_head_rel_l2;  /* largest per-(request, head) relative L2 of o */
    double lse_abs;        /* largest |lse - lse_ref| of any (request, head) */
} dl_threshold;

/* The poison an output buffer is filled with before a kernel runs (all bytes
 * 0xFF: a NaN in float32 and float64, what cudaMemset(p, 0xFF, n) writes).
 * Candidate elements with exactly this bit pattern count as unwritten, not as
 * non-finite. */
#define DL_POISON_F32_BITS 0xFFFFFFFFu
#define DL_POISON_F64_BITS 0xFFFFFFFFFFFFFFFFull

/* Floor for max relative error: |x-r| / max(|r|, DL_REL_FLOOR * rms(r)); the
 * per-row relative L2 uses DL_REL_FLOOR * (rms of the row norms) likewise. */
#define DL_REL_FLOOR 1e-3

/* Compare candidate x to reference r: n elements in n / row_len rows (row_len
 * divides n; 0 or n = one row). */
void dl_compare_rows_f32(const float *x, const double *r, int64_t n, int64_t row_len, dl_metrics *m);
void dl_compare_rows_f64(const double *x, const double *r, int64_t n, int64_t row_len, dl_metrics *m);
/* The same over one row. */
void dl_compare_f32(const float *x, const double *r, int64_t n, dl_metrics *m);
void dl_compare_f64(const double *x, const double *r, int64_t n, dl_metrics *m);

/* ---- the one routine: an output (o [B, Hq, D], lse [B, Hq] or NULL) against a reference output ---- */
typedef struct {
    dl_metrics o, lse;    /* lse is all zero (n = 0) when has_lse = 0 */
    int has_lse;
    double o_allow;       /* the model's flip allowance relative to ||o_ref|| (0 when it gives none):
                           * the judge adds it to the global o limit */
} dl_scores;
void dl_score_f32(const float *o, const float *lse, const dl_output *ref, dl_scores *s);
void dl_score_f64(const double *o, const double *lse, const dl_output *ref, dl_scores *s);

/* Implementation limits of model m (measured on the H200 x 8; compare.c) and
 * the expected precision band of model m against exact. NULL for an unknown model. */
const dl_threshold *dl_threshold_impl(dl_model m);
const dl_threshold *dl_threshold_vs_exact(dl_model m, dl_dtype kv_dtype);
/* The margin of the implementation table over the worst measured kernel-vs-model error. */
#define DL_IMPL_MARGIN 8.0
/* The table's o limits hold for sequences up to DL_ACC_LEN_REF tokens (the lengths they were measured
 * on). A float sum over L tokens drifts from the exact sum by about 0.3 u sqrt(L) (u = 2^-24), so two
 * correct FP32-accumulating orders (a model and a kernel, or a split and an unsplit schedule) sit that
 * far apart: for longer sequences the o limits (global and per head, under the per-head cap) grow by
 * dl_accum_scale(max_len) = sqrt(max_len / DL_ACC_LEN_REF), 1 up to DL_ACC_LEN_REF. compare.c has the
 * measurement. */
#define DL_ACC_LEN_REF 1024
double dl_accum_scale(int64_t max_len);
/* dl_threshold_impl(m) for a case whose longest sequence has max_len tokens (o limits x dl_accum_scale);
 * returns 0, or -1 for an unknown model (*t untouched). */
int dl_threshold_impl_len(dl_model m, int64_t max_len, dl_threshold *t);

/* Unit roundoff of a candidate's o encoding: 0 for f32, 2^-8 for bf16, 2^-11
 * for f16. A correct kernel that rounds its FP32 output k (k within e of the
 * model m, relatively) to such a format is within u + (1 + u) e of m: the
 * o limits are widened by exactly that. */
double dl_output_roundoff(dl_dtype o_dtype);
/* The o limit after widening limit by output roundoff u: u + (1 + u) * limit. */
double dl_limit_widened(double limit, double u);

/* Implementation judgement: FAIL on any non-finite or unwritten element of o
 * (or lse when has_lse), or any figure over its limit (o limits widened by
 * o_round), else PASS. lse is judged only when has_lse. */
dl_verdict dl_judge_impl(const dl_scores *s, const dl_threshold *t, double o_round);
/* Precision against exact: 1 when the global o rel L2 and (with lse) the lse
 * error are finite and within the band, 0 otherwise ("above expected"). */
int dl_within_band(const dl_scores *s, const dl_threshold *band);
/* With no model to judge an implementation by (`compare` of a candidate that claims none), the band decides: *t gets
 * its limits, o's widened by the output roundoff o_round as a model's are, and every (request, head) row held to
 * DL_BAND_HEAD_FACTOR x the band's o (the band's global figure alone averaged a swapped or zeroed head away: two
 * swapped heads of 32 x 32 rows passed fp8's band at 0.079). The factor: the CPU models' worst row against exact
 * reached 2.8 x their band (fp8 on channel-outlier keys, 0.283 against 0.1; bf16simt 2.9 x; llama3-8B shapes,
 * 2026-12-08), so 5 keeps room while a wrong, zeroed or swapped head (relative error ~1) still fails. */
#define DL_BAND_HEAD_FACTOR 5.0
void dl_band_limits(const dl_threshold *band, double o_round, dl_threshold *t);
const char *dl_verdict_name(dl_verdict v); /* "PASS" "FAIL" */
const char *dl_band_name(int within);      /* "within" "above expected" */

#ifdef __cplusplus
}
#endif
#endif

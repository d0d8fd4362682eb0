/* dl_compare.h - the one comparison routine (shared by the CLI and the tests)
 * and the threshold table per golden model.
 *
 * Order: non-finite count first (any NaN/Inf where the reference is finite is
 * a FAIL), then relative L2 = ||x-r||/||r||, NMSE = ||x-r||^2/||r||^2, max abs
 * error, max relative error |x-r| / max(|r|, floor). */
#ifndef DL_COMPARE_H
#define DL_COMPARE_H

#include <stdint.h>
#include "../ref/dl_ref.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { DL_PASS = 0, DL_MARGINAL, DL_FAIL } dl_verdict;

typedef struct {
    int64_t n;            /* elements compared */
    int64_t nonfinite;    /* candidate elements that are NaN/Inf where reference is finite */
    int64_t unwritten;    /* elements still holding the poison pattern (if checked) */
    double rel_l2, nmse, max_abs, max_rel;
} dl_metrics;

/* Thresholds on rel_l2 for one golden model: <= pass is PASS, <= marginal is
 * MARGINAL, else FAIL. Non-finite or unwritten elements are always FAIL. */
typedef struct {
    dl_model model;
    double o_pass, o_marginal;      /* on relative L2 of o */
    double lse_pass, lse_marginal;  /* on max abs error of lse */
} dl_threshold;

/* The poison an output buffer is filled with before a kernel runs (all bytes
 * 0xFF: a NaN in float32 and float64, what cudaMemset(p, 0xFF, n) writes).
 * Candidate elements with exactly this bit pattern count as unwritten, not as
 * non-finite. */
#define DL_POISON_F32_BITS 0xFFFFFFFFu
#define DL_POISON_F64_BITS 0xFFFFFFFFFFFFFFFFull

/* Floor for max relative error: |x-r| / max(|r|, DL_REL_FLOOR * rms(r)). */
#define DL_REL_FLOOR 1e-3

/* Compare candidate x (float or double, see the two entry points) to reference r. */
void dl_compare_f32(const float *x, const double *r, int64_t n, dl_metrics *m);
void dl_compare_f64(const double *x, const double *r, int64_t n, dl_metrics *m);

/* Threshold for comparing an implementation against model m (implementation
 * error: tiny); and for comparing model m against exact (arithmetic error). */
const dl_threshold *dl_threshold_impl(dl_model m);
const dl_threshold *dl_threshold_vs_exact(dl_model m, dl_dtype kv_dtype);
/* Verdict from o's metrics and lse's (lse may be NULL: judge o alone). */
dl_verdict dl_verdict_of(const dl_metrics *o, const dl_metrics *lse, const dl_threshold *t);
const char *dl_verdict_name(dl_verdict v);  /* "PASS" "MARGINAL" "FAIL" */

#ifdef __cplusplus
}
#endif
#endif

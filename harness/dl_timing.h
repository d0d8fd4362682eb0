/* dl_timing.h - host-side timing statistics and the NVBench-style stop rule.
 *
 * A sampler returns one measurement (seconds) per call; dl_timing_collect
 * calls it until the relative standard deviation (sample stddev / mean) is
 * under opts.max_stdrel with at least opts.min_samples samples, or until
 * opts.max_time_s of wall clock (measured by opts.clock, default
 * CLOCK_MONOTONIC) has passed since the first sample began. Pure C: no CUDA. */
#ifndef DL_TIMING_H
#define DL_TIMING_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t n;            /* samples */
    double median, min, max, mean;
    double stdrel;        /* sample standard deviation / mean; NaN when n < 2 */
    int converged;        /* 1 if stdrel < max_stdrel with n >= min_samples */
    double elapsed_s;     /* wall clock spent sampling (host clock) */
} dl_timing_stats;

typedef struct {
    int64_t min_samples;  /* default 10 */
    int64_t max_samples;  /* hard bound on the sample array; default 100000 */
    double max_stdrel;    /* default 0.005 (0.5 %) */
    double max_time_s;    /* default 5 s */
    double (*clock)(void *ctx); /* seconds; NULL: CLOCK_MONOTONIC. For tests. */
    void *clock_ctx;
} dl_timing_opts;

void dl_timing_opts_default(dl_timing_opts *o);

/* Statistics of n samples (n >= 1). Does not reorder x. Returns 0, or records
 * an error (n < 1, allocation). converged/elapsed_s are left 0. */
int dl_timing_stats_of(const double *x, int64_t n, dl_timing_stats *s);

/* Median of n values (mean of the two middle ones for even n); copies x. NaN for n < 1. */
double dl_median(const double *x, int64_t n);

/* The stop rule: 1 if sampling should stop after n samples with relative spread
 * stdrel and elapsed seconds; sets *converged when it stops on the spread. */
int dl_timing_should_stop(const dl_timing_opts *o, int64_t n, double stdrel, double elapsed, int *converged);

/* One measurement in seconds into *sec; returns 0 or an error (recorded). */
typedef int (*dl_sample_fn)(void *ctx, double *sec);

/* Sample until the stop rule fires. On a sampler error returns it (stats
 * hold what was collected so far). */
int dl_timing_collect(dl_sample_fn fn, void *ctx, const dl_timing_opts *o, dl_timing_stats *s);

/* Host monotonic clock in seconds. */
double dl_now_s(void);

#ifdef __cplusplus
}
#endif
#endif

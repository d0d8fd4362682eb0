/* timing.c - timing statistics (median, min, max, mean, stdrel) and the
 * NVBench-style stop rule: sample until the relative spread is small or a
 * time cap is hit. See dl_timing.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ref/dl_common.h"
#include "dl_timing.h"

void dl_timing_opts_default(dl_timing_opts *o)
{
    memset(o, 0, sizeof *o);
    o->min_samples = 10;
    o->max_samples = 100000;
    o->max_stdrel = 0.005;
    o->max_time_s = 5.0;
}

double dl_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double dl_median(const double *x, int64_t n)
{
    if (n < 1) return NAN;
    double *t = malloc((size_t)n * sizeof *t);
    if (!t) return NAN;
    memcpy(t, x, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double m = (n % 2) ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    free(t);
    return m;
}

/* Two-pass mean and sample standard deviation (n-1). */
static void mean_stdrel(const double *x, int64_t n, double *mean, double *stdrel)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    double m = s / (double)n;
    *mean = m;
    if (n < 2 || m == 0) {
        *stdrel = NAN;
        return;
    }
    double ss = 0;
    for (int64_t i = 0; i < n; i++) ss += (x[i] - m) * (x[i] - m);
    *stdrel = sqrt(ss / (double)(n - 1)) / fabs(m);
}

int dl_timing_stats_of(const double *x, int64_t n, dl_timing_stats *s)
{
    memset(s, 0, sizeof *s);
    if (n < 1) return dl_fail("timing: no samples to summarise (n=%lld)", (long long)n);
    s->n = n;
    s->min = s->max = x[0];
    for (int64_t i = 1; i < n; i++) {
        if (x[i] < s->min) s->min = x[i];
        if (x[i] > s->max) s->max = x[i];
    }
    mean_stdrel(x, n, &s->mean, &s->stdrel);
    s->median = dl_median(x, n);
    if (isnan(s->median)) return dl_fail("timing: out of memory computing the median of %lld samples", (long long)n);
    return 0;
}

int dl_timing_should_stop(const dl_timing_opts *o, int64_t n, double stdrel, double elapsed, int *converged)
{
    *converged = 0;
    if (n >= o->min_samples && !isnan(stdrel) && stdrel < o->max_stdrel) {
        *converged = 1;
        return 1;
    }
    if (n >= 1 && elapsed >= o->max_time_s) return 1;
    if (n >= o->max_samples) return 1;
    return 0;
}

static double default_clock(void *ctx)
{
    (void)ctx;
    return dl_now_s();
}

int dl_timing_collect(dl_sample_fn fn, void *ctx, const dl_timing_opts *o, dl_timing_stats *s)
{
    memset(s, 0, sizeof *s);
    if (o->max_samples < 1 || o->min_samples < 1)
        return dl_fail("timing: min_samples (%lld) and max_samples (%lld) must be >= 1", (long long)o->min_samples,
                       (long long)o->max_samples);
    double (*clk)(void *) = o->clock ? o->clock : default_clock;
    double *x = dl_malloc((size_t)o->max_samples * sizeof *x, "timing samples");
    if (!x) return -1;
    /* Running sums for an O(1) stdrel per sample (Welford). */
    double mean = 0, m2 = 0, t0 = clk(o->clock_ctx), elapsed = 0;
    int64_t n = 0;
    int converged = 0, rc = 0;
    for (;;) {
        double sec;
        rc = fn(ctx, &sec);
        if (rc) break;
        x[n++] = sec;
        double d = sec - mean;
        mean += d / (double)n;
        m2 += d * (sec - mean);
        double stdrel = (n >= 2 && mean != 0) ? sqrt(m2 / (double)(n - 1)) / fabs(mean) : NAN;
        elapsed = clk(o->clock_ctx) - t0;
        if (dl_timing_should_stop(o, n, stdrel, elapsed, &converged)) break;
    }
    if (n > 0) {
        int rc2 = dl_timing_stats_of(x, n, s);
        if (!rc) rc = rc2;
    }
    s->converged = converged;
    s->elapsed_s = elapsed;
    free(x);
    return rc;
}

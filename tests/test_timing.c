/* test_timing.c - Check suite for the timing statistics and the stop rule
 * (harness/timing.c): median, mean, min, max and relative spread of known samples;
 * sampling stops at min_samples on flat samples, when the spread is small enough, at
 * max_samples, or at the time cap (a fake clock). No GPU is needed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../harness/dl_timing.h"
#include "dl_test.h"

START_TEST(test_timing_stats_known)
{
    double odd[] = {3, 1, 2};
    double even[] = {4, 1, 3, 2};
    ck_assert(dl_median(odd, 3) == 2.0);
    ck_assert(dl_median(even, 4) == 2.5);
    ck_assert(odd[0] == 3 && even[0] == 4); /* inputs not reordered */
    double x[] = {1, 2, 3, 4, 5};
    dl_timing_stats s;
    ck_assert_int_eq(dl_timing_stats_of(x, 5, &s), 0);
    /* mean 3, sample variance (4+1+0+1+4)/4 = 2.5 */
    ck_assert(s.median == 3 && s.min == 1 && s.max == 5 && s.mean == 3 && s.n == 5);
    ck_assert_double_eq_tol(s.stdrel, sqrt(2.5) / 3.0, 1e-15);
    double one[] = {7};
    ck_assert_int_eq(dl_timing_stats_of(one, 1, &s), 0);
    ck_assert(isnan(s.stdrel) && s.median == 7);
    ck_assert_int_ne(dl_timing_stats_of(one, 0, &s), 0);
}
END_TEST

typedef struct {
    const double *x;
    int64_t n, i;
} seq;

static int seq_sample(void *ctx, double *sec)
{
    seq *s = ctx;
    ck_assert_int_lt(s->i, s->n);
    *sec = s->x[s->i++];
    return 0;
}

static double fake_clock(void *ctx)
{
    double *t = ctx;
    double now = *t;
    *t += 0.5;
    return now;
}

/* two-pass sample stdrel, written independently of timing.c */
static double ref_stdrel(const double *x, int64_t n)
{
    double m = 0, v = 0;
    for (int64_t i = 0; i < n; i++) m += x[i];
    m /= (double)n;
    for (int64_t i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    return sqrt(v / (double)(n - 1)) / m;
}

START_TEST(test_timing_stop_rule)
{
    dl_timing_opts o;
    dl_timing_opts_default(&o);
    ck_assert(o.min_samples == 10 && o.max_stdrel == 0.005 && o.max_time_s == 5.0);
    double clk = 0;
    o.clock = fake_clock;
    o.clock_ctx = &clk;

    /* constant samples: stdrel 0, so the rule stops at exactly min_samples */
    double flat[100];
    for (int i = 0; i < 100; i++) flat[i] = 1e-4;
    seq s = {flat, 100, 0};
    dl_timing_stats st;
    ck_assert_int_eq(dl_timing_collect(seq_sample, &s, &o, &st), 0);
    ck_assert_int_eq(st.n, 10);
    ck_assert_int_eq(st.converged, 1);
    ck_assert(st.median == 1e-4 && st.stdrel < 1e-12); /* rounding of the mean only */

    /* noisy start, then flat: stops at the first n >= 10 whose stdrel < 0.5 % */
    double x[200];
    for (int i = 0; i < 200; i++) x[i] = i < 4 ? 1.0 + ((i % 2) ? 0.01 : -0.01) : 1.0;
    int64_t expect = -1;
    for (int64_t n = 10; n <= 200 && expect < 0; n++)
        if (ref_stdrel(x, n) < 0.005) expect = n;
    ck_assert_int_gt(expect, 10);
    o.max_time_s = 1e9;
    clk = 0;
    seq s2 = {x, 200, 0};
    ck_assert_int_eq(dl_timing_collect(seq_sample, &s2, &o, &st), 0);
    ck_assert_int_eq(st.n, expect);
    ck_assert_int_eq(st.converged, 1);
    ck_assert(st.median == 1.0 && st.min == 1.0 - 0.01 && st.max == 1.0 + 0.01);

    /* alternating +-10 %: never converges; the fake clock advances 0.5 s per
     * reading (one before the first sample, one after each), so a 7 s cap
     * stops after 14 samples */
    double alt[100];
    for (int i = 0; i < 100; i++) alt[i] = (i % 2) ? 1.1 : 0.9;
    o.max_time_s = 7.0;
    clk = 0;
    seq s3 = {alt, 100, 0};
    ck_assert_int_eq(dl_timing_collect(seq_sample, &s3, &o, &st), 0);
    ck_assert_int_eq(st.n, 14);
    ck_assert_int_eq(st.converged, 0);
    ck_assert_double_eq_tol(st.stdrel, ref_stdrel(alt, 14), 1e-12);
    ck_assert(st.median == 1.0);

    /* the pure rule */
    int conv;
    ck_assert_int_eq(dl_timing_should_stop(&o, 9, 0.0, 0.0, &conv), 0);
    ck_assert_int_eq(dl_timing_should_stop(&o, 10, 0.0049, 0.0, &conv), 1);
    ck_assert_int_eq(conv, 1);
    ck_assert_int_eq(dl_timing_should_stop(&o, 10, 0.0051, 0.0, &conv), 0);
    ck_assert_int_eq(dl_timing_should_stop(&o, 3, 0.2, 7.0, &conv), 1);
    ck_assert_int_eq(conv, 0);
    ck_assert_int_eq(dl_timing_should_stop(&o, 10, NAN, 0.0, &conv), 0);
}
END_TEST

DL_TEST_SUITE("timing", 60, NULL, NULL, test_timing_stats_known, test_timing_stop_rule)

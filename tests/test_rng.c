/* test_rng.c - the counter-based generator: determinism, independence from call
 * order, and the moments of uniform, normal and outlier draws on large samples
 * (bounds are 5 to 6 standard errors, computed from the closed-form moments). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dl_test.h"
#include "../ref/dl_paged.h"
#include "../ref/dl_rng.h"

#define N_DRAWS 1000000

START_TEST(test_same_counter_same_value)
{
    for (uint64_t i = 0; i < 1000; i++) {
        ck_assert_uint_eq(dl_rng_u64(42, DL_STREAM_K, i), dl_rng_u64(42, DL_STREAM_K, i));
        double a = dl_rng_normal(7, DL_STREAM_V, i), b = dl_rng_normal(7, DL_STREAM_V, i);
        ck_assert(memcmp(&a, &b, sizeof a) == 0);
    }
}
END_TEST

START_TEST(test_call_order_independent)
{
    enum { N = 4096 };
    static double fwd[N], rev[N], strided[N];
    for (int i = 0; i < N; i++) fwd[i] = dl_rng_normal(3, DL_STREAM_Q, (uint64_t)i);
    for (int i = N - 1; i >= 0; i--) {
        rev[i] = dl_rng_normal(3, DL_STREAM_Q, (uint64_t)i);
        (void)dl_rng_u64(99, DL_STREAM_PAGES, (uint64_t)i); /* interleave another stream */
    }
    for (int s = 0; s < 7; s++)
        for (int i = s; i < N; i += 7) strided[i] = dl_rng_normal(3, DL_STREAM_Q, (uint64_t)i);
    ck_assert(memcmp(fwd, rev, sizeof fwd) == 0);
    ck_assert(memcmp(fwd, strided, sizeof fwd) == 0);
}
END_TEST

START_TEST(test_seeds_streams_indices_differ)
{
    /* 64-bit outputs of different (seed, stream, index) should essentially never collide */
    int same_seed = 0, same_stream = 0, same_next = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        uint64_t x = dl_rng_u64(1, DL_STREAM_K, i);
        same_seed += x == dl_rng_u64(2, DL_STREAM_K, i);
        same_stream += x == dl_rng_u64(1, DL_STREAM_V, i);
        same_next += x == dl_rng_u64(1, DL_STREAM_K, i + 1);
    }
    ck_assert_int_eq(same_seed, 0);
    ck_assert_int_eq(same_stream, 0);
    ck_assert_int_eq(same_next, 0);
    /* and the sequences are uncorrelated: |corr| of 10^5 pairs < 6/sqrt(n) */
    const int n = 100000;
    double sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < n; i++) {
        double x = dl_rng_uniform(1, DL_STREAM_K, (uint64_t)i) - 0.5, y = dl_rng_uniform(2, DL_STREAM_K, (uint64_t)i) - 0.5;
        sxy += x * y; sxx += x * x; syy += y * y;
    }
    ck_assert(fabs(sxy / sqrt(sxx * syy)) < 6.0 / sqrt(n));
}
END_TEST

START_TEST(test_uniform_moments)
{
    double s = 0, s2 = 0, lo = 1, hi = 0;
    for (uint64_t i = 0; i < N_DRAWS; i++) {
        double u = dl_rng_uniform(11, DL_STREAM_Q, i);
        ck_assert(u >= 0.0 && u < 1.0);
        s += u; s2 += (u - 0.5) * (u - 0.5);
        if (u < lo) lo = u;
        if (u > hi) hi = u;
    }
    double mean = s / N_DRAWS, var = s2 / N_DRAWS;
    /* mean: sd = sqrt(1/12/N); (U-1/2)^2 has variance 1/80 - 1/144 */
    ck_assert_msg(fabs(mean - 0.5) < 6 * sqrt(1.0 / 12 / N_DRAWS), "mean %g", mean);
    ck_assert_msg(fabs(var - 1.0 / 12) < 6 * sqrt((1.0 / 80 - 1.0 / 144) / N_DRAWS), "var %g", var);
    ck_assert(lo < 1e-4 && hi > 1 - 1e-4); /* the extremes of 10^6 draws reach near both ends */
}
END_TEST

START_TEST(test_below_uniform_buckets)
{
    enum { K = 10 };
    long cnt[K] = {0};
    for (uint64_t i = 0; i < N_DRAWS; i++) {
        uint64_t r = dl_rng_below(5, DL_STREAM_PAGES, i, K);
        ck_assert_uint_lt(r, K);
        cnt[r]++;
    }
    double chi2 = 0, e = (double)N_DRAWS / K;
    for (int k = 0; k < K; k++) chi2 += (cnt[k] - e) * (cnt[k] - e) / e;
    ck_assert_msg(chi2 < 33.7, "chi2 = %g with 9 dof (p = 1e-4 at 33.7)", chi2);
    /* n = 1 always gives 0; a huge n stays below it */
    for (uint64_t i = 0; i < 1000; i++) {
        ck_assert_uint_eq(dl_rng_below(5, 1, i, 1), 0);
        ck_assert_uint_lt(dl_rng_below(5, 1, i, UINT64_C(3) << 40), UINT64_C(3) << 40);
    }
}
END_TEST

START_TEST(test_normal_is_box_muller_of_two_uniforms)
{
    for (uint64_t i = 0; i < 1000; i++) {
        double u1 = dl_rng_uniform(9, DL_STREAM_K, 2 * i), u2 = dl_rng_uniform(9, DL_STREAM_K, 2 * i + 1);
        double z = sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
        ck_assert(fabs(dl_rng_normal(9, DL_STREAM_K, i) - z) <= 1e-12 * (1 + fabs(z)));
        double zz[2];
        dl_rng_normal2(9, DL_STREAM_K, i, zz);
        double a = dl_rng_normal(9, DL_STREAM_K, i);
        ck_assert(memcmp(&zz[0], &a, sizeof a) == 0); /* the cos half is dl_rng_normal, bit for bit */
        double zs = sqrt(-2.0 * log(1.0 - u1)) * sin(2.0 * M_PI * u2);
        ck_assert(fabs(zz[1] - zs) <= 1e-12 * (1 + fabs(zs)));
    }
}
END_TEST

START_TEST(test_normal_pair_halves)
{
    /* the sin half is N(0,1) too, and uncorrelated with the cos half (also in square) */
    double s1 = 0, s2 = 0, sxy = 0, sq = 0;
    for (uint64_t i = 0; i < N_DRAWS; i++) {
        double z[2];
        dl_rng_normal2(31, DL_STREAM_Q, i, z);
        s1 += z[1]; s2 += z[1] * z[1]; sxy += z[0] * z[1];
        sq += (z[0] * z[0] - 1) * (z[1] * z[1] - 1);
    }
    double n = N_DRAWS;
    ck_assert(fabs(s1 / n) < 6 / sqrt(n));
    ck_assert(fabs(s2 / n - 1) < 6 * sqrt(2 / n));
    ck_assert(fabs(sxy / n) < 6 / sqrt(n));
    ck_assert(fabs(sq / n) < 6 * 2 / sqrt(n)); /* Var((x^2-1)(y^2-1)) = 4 for independent normals */
}
END_TEST

START_TEST(test_normal_moments)
{
    double s1 = 0, s2 = 0, s3 = 0, s4 = 0;
    long within1 = 0;
    for (uint64_t i = 0; i < N_DRAWS; i++) {
        double z = dl_rng_normal(123, DL_STREAM_V, i);
        ck_assert(isfinite(z));
        s1 += z; s2 += z * z; s3 += z * z * z; s4 += z * z * z * z;
        within1 += fabs(z) < 1.0;
    }
    double n = N_DRAWS;
    /* standard errors: mean 1/sqrt(n), E z^2 sqrt(2/n), E z^3 sqrt(15/n), E z^4 sqrt(96/n) */
    ck_assert_msg(fabs(s1 / n) < 6 / sqrt(n), "mean %g", s1 / n);
    ck_assert_msg(fabs(s2 / n - 1) < 6 * sqrt(2 / n), "E z^2 %g", s2 / n);
    ck_assert_msg(fabs(s3 / n) < 6 * sqrt(15 / n), "E z^3 %g", s3 / n);
    ck_assert_msg(fabs(s4 / n - 3) < 6 * sqrt(96 / n), "E z^4 %g", s4 / n);
    double p1 = erf(1.0 / sqrt(2.0)); /* P(|Z| < 1) */
    ck_assert_msg(fabs(within1 / n - p1) < 6 * sqrt(p1 * (1 - p1) / n), "P(|z|<1) %g", within1 / n);
}
END_TEST

START_TEST(test_outlier_rate_and_variance)
{
    /* outliers of std 1000 fall outside |x| < 10 with probability 1 - erf(0.01/sqrt2);
     * an N(0,1) draw essentially never does. */
    dl_dist_params dp = {0};
    dp.kind = DL_DIST_OUTLIER;
    dp.outlier_prob = 0.01;
    dp.outlier_var = 1e6;
    long big = 0;
    double s2 = 0;
    for (uint64_t e = 0; e < N_DRAWS; e++) {
        double x = dl_dist_draw(&dp, 77, DL_STREAM_K, e);
        big += fabs(x) > 10.0;
        s2 += x * x;
    }
    double n = N_DRAWS;
    double p = dp.outlier_prob * (1 - erf(10.0 / 1000.0 / sqrt(2.0)));
    ck_assert_msg(fabs(big / n - p) < 6 * sqrt(p * (1 - p) / n), "rate %g expected %g", big / n, p);
    /* E x^2 = 1 + prob*var = 10001; sd of x^2 is dominated by outliers: sqrt(prob*3*var^2) */
    double ex2 = 1 + dp.outlier_prob * dp.outlier_var;
    ck_assert_msg(fabs(s2 / n - ex2) < 6 * sqrt(dp.outlier_prob * 3 * dp.outlier_var * dp.outlier_var / n),
                  "E x^2 %g expected %g", s2 / n, ex2);
    /* the default FA3 setting: prob 0.001, var 100 */
    dp.outlier_prob = 0.001;
    dp.outlier_var = 100;
    long b2 = 0;
    for (uint64_t e = 0; e < N_DRAWS; e++) b2 += fabs(dl_dist_draw(&dp, 78, DL_STREAM_V, e)) > 6.0;
    /* P(|N(0,1)+N(0,100)| > 6) = erfc(6/sqrt(2*101)); P(|N(0,1)| > 6) ~ 2e-9 */
    double q = dp.outlier_prob * erfc(6.0 / sqrt(2.0 * 101.0));
    ck_assert_msg(fabs(b2 / n - q) < 6 * sqrt(q / n) + 1e-6, "default rate %g expected %g", b2 / n, q);
}
END_TEST

START_TEST(test_uniform_and_normal_params)
{
    dl_dist_params dp = {0};
    dp.kind = DL_DIST_UNIFORM;
    dp.lo = -3;
    dp.hi = 5;
    double s = 0;
    for (uint64_t e = 0; e < N_DRAWS; e++) {
        double x = dl_dist_draw(&dp, 1, DL_STREAM_Q, e);
        ck_assert(x >= -3 && x < 5);
        s += x;
    }
    ck_assert(fabs(s / N_DRAWS - 1.0) < 6 * 8 / sqrt(12.0 * N_DRAWS));
    dp.kind = DL_DIST_NORMAL;
    dp.mean = 2;
    dp.std = 0.5;
    double m = 0, v = 0;
    for (uint64_t e = 0; e < N_DRAWS; e++) {
        double x = dl_dist_draw(&dp, 1, DL_STREAM_Q, e);
        m += x; v += (x - 2) * (x - 2);
    }
    ck_assert(fabs(m / N_DRAWS - 2) < 6 * 0.5 / sqrt(N_DRAWS));
    ck_assert(fabs(v / N_DRAWS - 0.25) < 6 * 0.25 * sqrt(2.0 / N_DRAWS));
}
END_TEST

DL_TEST_SUITE("rng", 60, NULL, NULL,
              test_same_counter_same_value, test_call_order_independent, test_seeds_streams_indices_differ,
              test_uniform_moments, test_below_uniform_buckets, test_normal_is_box_muller_of_two_uniforms,
              test_normal_moments, test_normal_pair_halves, test_outlier_rate_and_variance,
              test_uniform_and_normal_params)

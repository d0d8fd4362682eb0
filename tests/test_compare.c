/* test_compare.c - the comparison routine and the threshold tables, on
 * hand-made vectors whose metrics are worked out by hand in each test. */
#include <math.h>
#include <string.h>

#include "../harness/dl_compare.h"
#include "dl_test.h"

#define EPS 1e-15

START_TEST(identical_is_zero)
{
    double r[4] = {1.5, -2.0, 0.25, 8.0}, x[4];
    memcpy(x, r, sizeof r);
    dl_metrics m;
    dl_compare_f64(x, r, 4, &m);
    ck_assert_int_eq(m.n, 4);
    ck_assert_int_eq(m.nonfinite, 0);
    ck_assert_int_eq(m.unwritten, 0);
    ck_assert(m.rel_l2 == 0.0 && m.nmse == 0.0 && m.max_abs == 0.0 && m.max_rel == 0.0);
}
END_TEST

/* r = (3, 4): ||r|| = 5. x = (3, 4.5): error (0, 0.5), ||e|| = 0.5.
 * rel_l2 = 0.1, nmse = 0.01, max_abs = 0.5, max_rel = 0.5 / 4 = 0.125
 * (the floor 1e-3 * rms(r) = 1e-3 * sqrt(12.5) is far below 4). */
START_TEST(metrics_by_hand)
{
    double r[2] = {3.0, 4.0}, x[2] = {3.0, 4.5};
    float xf[2] = {3.0f, 4.5f};
    dl_metrics m, mf;
    dl_compare_f64(x, r, 2, &m);
    dl_compare_f32(xf, r, 2, &mf);
    ck_assert_double_eq_tol(m.rel_l2, 0.1, EPS);
    ck_assert_double_eq_tol(m.nmse, 0.01, EPS);
    ck_assert_double_eq_tol(m.max_abs, 0.5, EPS);
    ck_assert_double_eq_tol(m.max_rel, 0.125, EPS);
    /* the float entry point gives the same numbers for exactly representable data */
    ck_assert(mf.rel_l2 == m.rel_l2 && mf.nmse == m.nmse && mf.max_abs == m.max_abs && mf.max_rel == m.max_rel);
}
END_TEST

/* The floor of the relative error: r = (0, 10), x = (1e-3, 10).
 * rms(r) = sqrt(100 / 2) = sqrt(50); floor = 1e-3 * sqrt(50); the error at r = 0
 * is 1e-3, so max_rel = 1e-3 / (1e-3 sqrt(50)) = 1 / sqrt(50). */
START_TEST(relative_floor)
{
    double r[2] = {0.0, 10.0}, x[2] = {1e-3, 10.0};
    dl_metrics m;
    dl_compare_f64(x, r, 2, &m);
    ck_assert_double_eq_tol(m.max_rel, 1.0 / sqrt(50.0), 1e-12);
    ck_assert_double_eq_tol(m.max_abs, 1e-3, EPS);
    ck_assert_double_eq_tol(m.rel_l2, 1e-3 / 10.0, 1e-15);
}
END_TEST

START_TEST(zero_reference)
{
    double r[2] = {0.0, 0.0}, same[2] = {0.0, 0.0}, off[2] = {1.0, 0.0};
    dl_metrics m;
    dl_compare_f64(same, r, 2, &m);
    ck_assert(m.rel_l2 == 0.0 && m.max_rel == 0.0);
    dl_compare_f64(off, r, 2, &m);
    ck_assert(isinf(m.rel_l2) && isinf(m.max_rel));
    ck_assert_double_eq(m.max_abs, 1.0);
}
END_TEST

/* Non-finite elements are counted first and left out of the norms: x = (NaN,
 * 1, +inf, 2) against r = (1, 1, 1, 1): two non-finite; over the two finite
 * elements the error is (0, 1), ||e||^2 = 1, ||r||^2 = 2 -> rel_l2 = 1/sqrt(2).
 * The verdict is FAIL whatever the thresholds. */
START_TEST(nonfinite_first)
{
    double r[4] = {1, 1, 1, 1}, x[4] = {NAN, 1, INFINITY, 2};
    dl_metrics m;
    dl_compare_f64(x, r, 4, &m);
    ck_assert_int_eq(m.nonfinite, 2);
    ck_assert_int_eq(m.unwritten, 0);
    ck_assert_double_eq_tol(m.rel_l2, 1.0 / sqrt(2.0), 1e-15);
    dl_threshold loose = {DL_MODEL_EXACT, 1e9, 1e9, 1e9, 1e9};
    dl_metrics ok = {0};
    ck_assert_int_eq(dl_verdict_of(&m, NULL, &loose), DL_FAIL);
    ck_assert_int_eq(dl_verdict_of(&ok, &m, &loose), DL_FAIL); /* non-finite lse fails too */
    /* a non-finite reference is matched only by the same value */
    double r2[3] = {NAN, INFINITY, -INFINITY}, x2[3] = {NAN, INFINITY, INFINITY};
    dl_compare_f64(x2, r2, 3, &m);
    ck_assert_int_eq(m.nonfinite, 1);
}
END_TEST

/* Poison (all bytes 0xFF) counts as unwritten, not as non-finite; another NaN
 * is non-finite. */
START_TEST(poison_counts_as_unwritten)
{
    float xf[4] = {1.0f, 0, 0, 2.0f};
    uint32_t poison = DL_POISON_F32_BITS, qnan = 0x7FC00000u;
    memcpy(&xf[1], &poison, 4);
    memcpy(&xf[2], &qnan, 4);
    double r[4] = {1, 1, 1, 2};
    dl_metrics m;
    dl_compare_f32(xf, r, 4, &m);
    ck_assert_int_eq(m.unwritten, 1);
    ck_assert_int_eq(m.nonfinite, 1);
    ck_assert(m.rel_l2 == 0.0);
    dl_threshold loose = {DL_MODEL_FP32, 1, 1, 1, 1};
    ck_assert_int_eq(dl_verdict_of(&m, NULL, &loose), DL_FAIL);

    double x[3] = {1, 0, 3};
    uint64_t p64 = DL_POISON_F64_BITS;
    memcpy(&x[1], &p64, 8);
    dl_compare_f64(x, r, 3, &m);
    ck_assert_int_eq(m.unwritten, 1);
    ck_assert_int_eq(m.nonfinite, 0);
    /* finite elements (1 vs 1, 3 vs 1): ||e||^2 = 4, ||r||^2 = 2 */
    ck_assert_double_eq_tol(m.rel_l2, sqrt(2.0), 1e-15);
}
END_TEST

/* Boundaries: <= pass is PASS, <= marginal is MARGINAL, else FAIL, on both o and lse. */
START_TEST(verdict_boundaries)
{
    dl_threshold t = {DL_MODEL_BF16, 0.1, 0.2, 0.01, 0.02};
    dl_metrics o = {0}, l = {0};
    o.rel_l2 = 0.1;
    ck_assert_int_eq(dl_verdict_of(&o, &l, &t), DL_PASS);
    o.rel_l2 = nextafter(0.1, 1.0);
    ck_assert_int_eq(dl_verdict_of(&o, &l, &t), DL_MARGINAL);
    o.rel_l2 = 0.2;
    ck_assert_int_eq(dl_verdict_of(&o, &l, &t), DL_MARGINAL);
    o.rel_l2 = nextafter(0.2, 1.0);
    ck_assert_int_eq(dl_verdict_of(&o, &l, &t), DL_FAIL);
    o.rel_l2 = 0.0;
    l.max_abs = 0.01;
    ck_assert_int_eq(dl_verdict_of(&o, &l, &t), DL_PASS);
    l.max_abs = 0.015;
    ck_assert_int_eq(dl_verdict_of(&o, &l, &t), DL_MARGINAL);
    l.max_abs = 0.03;
    ck_assert_int_eq(dl_verdict_of(&o, &l, &t), DL_FAIL);
    ck_assert_int_eq(dl_verdict_of(&o, NULL, &t), DL_PASS); /* o alone */
    o.rel_l2 = NAN;
    ck_assert_int_eq(dl_verdict_of(&o, NULL, &t), DL_FAIL);
    ck_assert_str_eq(dl_verdict_name(DL_PASS), "PASS");
    ck_assert_str_eq(dl_verdict_name(DL_MARGINAL), "MARGINAL");
    ck_assert_str_eq(dl_verdict_name(DL_FAIL), "FAIL");
}
END_TEST

/* The tables: each row is for its model, pass < marginal; implementation
 * error is tighter than model error for the reduced-precision models; the
 * storage row grows with the unit roundoff of the KV format. */
START_TEST(tables_consistent)
{
    for (int m = 0; m < DL_MODEL_COUNT; m++) {
        const dl_threshold *ti = dl_threshold_impl((dl_model)m);
        ck_assert_ptr_nonnull(ti);
        ck_assert_int_eq(ti->model, m);
        ck_assert(ti->o_pass > 0 && ti->o_pass < ti->o_marginal && ti->lse_pass < ti->lse_marginal);
        for (int d = DL_F16; d < DL_DTYPE_COUNT; d++) {
            const dl_threshold *te = dl_threshold_vs_exact((dl_model)m, (dl_dtype)d);
            ck_assert_int_eq(te->model, m);
            ck_assert(te->o_pass < te->o_marginal && te->lse_pass < te->lse_marginal);
            ck_assert(ti->o_pass <= te->o_pass);
        }
    }
    ck_assert(dl_threshold_impl(DL_MODEL_FP32)->o_pass < dl_threshold_impl(DL_MODEL_BF16)->o_pass);
    ck_assert(dl_threshold_impl(DL_MODEL_BF16)->o_pass < dl_threshold_impl(DL_MODEL_FP8)->o_pass);
    ck_assert(dl_threshold_vs_exact(DL_MODEL_ORIG, DL_BF16)->o_pass <
              dl_threshold_vs_exact(DL_MODEL_ORIG, DL_E4M3)->o_pass);
    ck_assert(dl_threshold_vs_exact(DL_MODEL_ORIG, DL_E4M3)->o_pass <
              dl_threshold_vs_exact(DL_MODEL_ORIG, DL_E5M2)->o_pass);
    ck_assert_ptr_null(dl_threshold_impl(DL_MODEL_COUNT));
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("compare");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, identical_is_zero);
    tcase_add_test(tc, metrics_by_hand);
    tcase_add_test(tc, relative_floor);
    tcase_add_test(tc, zero_reference);
    tcase_add_test(tc, nonfinite_first);
    tcase_add_test(tc, poison_counts_as_unwritten);
    tcase_add_test(tc, verdict_boundaries);
    tcase_add_test(tc, tables_consistent);
    suite_add_tcase(s, tc);
    return s;
}

DL_TEST_MAIN

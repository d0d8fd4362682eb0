/* test_experiment.c - Check suite for declarative experiments (harness/experiment.c,
 * harness/cmd_experiment.c): parsing, strict validation (one line naming file, key and
 * value), the verdict logic on synthetic rows (HOLDS / REJECTED / INCONCLUSIVE, noise,
 * missing and skipped rows, census rules), resuming an interrupted run without redoing
 * steps, and a tiny CPU-only E5-like experiment end to end through build/decodelab. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../ref/dl_common.h"
#include "../harness/dl_census.h"
#include "../harness/dl_experiment.h"
#include "../harness/dl_results.h"
#include "dl_test.h"

static void setup(void) { dl_test_mkdir("xp"); }

static void teardown(void) { ck_assert_int_eq(dl_test_rmdir(), 0); }

static const char *write_cfg(const char *name, const char *text)
{
    static char path[300];
    dl_test_path(path, sizeof path, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* A small valid experiment; %s is replaced by the hypotheses list. */
#define BASE_SWEEP                                                                                 \
    "name = \"t1\";\nquestion = \"q?\";\n"                                                         \
    "sweep = { num_qo_heads = 4; num_kv_heads = 2; head_dim = 64; batch = 2; seq_len = \"1:40\";\n" \
    "          kv_dtype = [\"e4m3\", \"e5m2\"]; seed = [0, 1]; };\n"                                \
    "variants = [\"fp32-cast-simt\", \"fp32-fast-simt\"];\nmodels = \"exact,orig,fp8\";\n"

static const char *ratio_hyp =
    "hypotheses = ( { claim = \"fast is as fast as cast\"; kind = \"ratio\"; metric = \"time_median_s\";\n"
    "  num = { variant = \"fp32-fast-simt\"; }; den = { variant = \"fp32-cast-simt\"; };\n"
    "  where = { kv_dtype = \"e4m3\"; }; lo = 0.9; hi = 1.1; } );\n";

static void load_ok(const char *text, dl_experiment *x)
{
    const char *p = write_cfg("ok.cfg", text);
    ck_assert_msg(dl_xp_load(p, x) == 0, "load failed: %s", dl_last_error());
}

START_TEST(test_parse)
{
    static dl_experiment x;
    char text[4096];
    snprintf(text, sizeof text, "%s%s", BASE_SWEEP, ratio_hyp);
    load_ok(text, &x);
    ck_assert_str_eq(x.name, "t1");
    ck_assert_int_eq(x.nfields, 7);
    ck_assert_int_eq(x.nvariants, 2);
    ck_assert_int_eq(x.nhyp, 1);
    ck_assert_int_eq(x.hyp[0].kind, DL_XP_RATIO);
    ck_assert(x.hyp[0].lo == 0.9 && x.hyp[0].hi == 1.1);
    ck_assert_str_eq(x.hyp[0].where[0].vals[0], "e4m3");
    dl_xp_point *pts = NULL;
    int n = 0;
    ck_assert_int_eq(dl_xp_points(&x, 0, dl_test_dir, &pts, &n), 0);
    ck_assert_int_eq(n, 4); /* 2 kv dtypes x 2 seeds */
    /* distinct configs get distinct cache names; the label names only swept fields */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) ck_assert_str_ne(pts[i].hash, pts[j].hash);
    ck_assert_str_eq(dl_xp_point_value(&pts[3], "kv_dtype"), "e5m2");
    ck_assert_str_eq(dl_xp_point_value(&pts[3], "seed"), "1");
    ck_assert_ptr_null(strstr(pts[0].label, "head_dim"));
    /* the hash is of the config, not of the field order: the same sweep written in another order agrees */
    static dl_experiment y;
    char text2[4096];
    snprintf(text2, sizeof text2,
             "name = \"t1\";\nquestion = \"q?\";\nsweep = { seed = [0, 1]; kv_dtype = [\"e4m3\", \"e5m2\"]; "
             "seq_len = \"1:40\"; batch = 2; head_dim = 64; num_kv_heads = 2; num_qo_heads = 4; };\n"
             "variants = [\"fp32-cast-simt\", \"fp32-fast-simt\"];\nmodels = \"exact,orig,fp8\";\n%s", ratio_hyp);
    load_ok(text2, &y);
    dl_xp_point *q = NULL;
    int m = 0;
    ck_assert_int_eq(dl_xp_points(&y, 0, dl_test_dir, &q, &m), 0);
    for (int i = 0; i < n; i++) {
        int same = 0;
        for (int j = 0; j < m; j++) same |= !strcmp(pts[i].hash, q[j].hash);
        ck_assert_msg(same, "point %s has no twin", pts[i].label);
    }
    dl_xp_points_free(pts, n);
    dl_xp_points_free(q, m);
}
END_TEST

/* Each bad file must be refused with one line naming the file, the key and the value. */
static void expect_bad(const char *text, const char *key, const char *value, int at_points)
{
    static dl_experiment x;
    const char *p = write_cfg("bad.cfg", text);
    int rc = dl_xp_load(p, &x);
    if (at_points && rc == 0) {
        dl_xp_point *pts = NULL;
        int n = 0;
        rc = dl_xp_points(&x, 0, dl_test_dir, &pts, &n);
        if (rc == 0) dl_xp_points_free(pts, n);
    }
    ck_assert_msg(rc != 0, "accepted: %s", text);
    const char *e = dl_last_error();
    ck_assert_msg(strstr(e, "bad.cfg") != NULL, "no file name in: %s", e);
    ck_assert_msg(strstr(e, key) != NULL, "no key '%s' in: %s", key, e);
    if (value) ck_assert_msg(strstr(e, value) != NULL, "no value '%s' in: %s", value, e);
    ck_assert_ptr_null(strchr(e, '\n'));
}

START_TEST(test_validation)
{
    char t[4096];
    snprintf(t, sizeof t, "%s%s colour = 3;\n", BASE_SWEEP, ratio_hyp);
    expect_bad(t, "colour", NULL, 0);                                      /* unknown top-level key */
    snprintf(t, sizeof t, "%s%s", BASE_SWEEP, "hypotheses = ( { claim = \"c\"; kind = \"ratio\"; metric = \"time_median_s\"; "
             "num = { variant = \"fp32-fast-simt\"; }; den = { variant = \"fp32-cast-simt\"; }; lo = 1; tolerance = 2; } );\n");
    expect_bad(t, "hypotheses[0].tolerance", NULL, 0);                     /* unknown rule key */
    snprintf(t, sizeof t, "%s%s", BASE_SWEEP, "hypotheses = ( { claim = \"c\"; kind = \"median\"; metric = \"time_median_s\"; "
             "num = { variant = \"fp32-fast-simt\"; }; lo = 1; } );\n");
    expect_bad(t, "hypotheses[0].kind", "median", 0);                      /* bad kind */
    snprintf(t, sizeof t, "%s%s", BASE_SWEEP, "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"time_median_s\"; "
             "num = { variant = \"fp64-*\"; }; lo = 1; } );\n");
    expect_bad(t, "hypotheses[0].num.variant", "fp64-*", 0);               /* no such variant */
    snprintf(t, sizeof t, "%s%s", BASE_SWEEP, "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"time_median_s\"; "
             "num = { variant = \"fp32-cast-simt\"; page_size = 16; }; lo = 1; } );\n");
    expect_bad(t, "hypotheses[0].num.page_size", NULL, 0);                 /* selects on an unswept field */
    snprintf(t, sizeof t, "%s%s", BASE_SWEEP, "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"time_median_s\"; "
             "num = { variant = \"fp32-cast-simt\"; kv_dtype = \"bf16\"; }; lo = 1; } );\n");
    expect_bad(t, "hypotheses[0].num.kv_dtype", "bf16", 0);                /* a value the sweep never sets */
    snprintf(t, sizeof t, "%s%s", BASE_SWEEP, "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"time_median_s\"; "
             "num = { variant = \"fp32-cast-simt\"; }; lo = 2; hi = 1; } );\n");
    expect_bad(t, "hypotheses[0].lo", "2 > 1", 0);                         /* empty interval */
    snprintf(t, sizeof t, "%s%s", BASE_SWEEP, "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"speed\"; "
             "num = { variant = \"fp32-cast-simt\"; }; lo = 1; } );\n");
    expect_bad(t, "hypotheses[0].metric", "speed", 0);                     /* not a results column */
    snprintf(t, sizeof t, "%s%s", BASE_SWEEP, "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"exact_o_rel_l2\"; "
             "num = { variant = \"ref-bf16\"; }; hi = 1; } );\n");
    expect_bad(t, "hypotheses[0].num.variant", "ref-bf16", 0);             /* model not computed */
    snprintf(t, sizeof t, "%s%s", BASE_SWEEP, "hypotheses = ( { claim = \"c\"; kind = \"census\"; metric = \"conv\"; "
             "num = { variant = \"fp32-fast-simt\"; }; hi = 1; } );\n");
    expect_bad(t, "hypotheses[0].metric", "sass", 0);                      /* census rule without measure.census */
    expect_bad("name = \"t1\"; question = \"q\"; sweep = { kv_dtype = [\"e4m3\", \"e9m9\"]; };\n"
               "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"exact_o_rel_l2\"; num = { variant = \"ref-orig\"; }; hi = 1; } );\n",
               "--kv-dtype", "e9m9", 1);                                   /* a bad sweep value, found by golden's parser */
    expect_bad("name = \"t1\"; question = \"q\"; sweep = { num_qo_heads = 6; num_kv_heads = 4; };\n"
               "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"exact_o_rel_l2\"; num = { variant = \"ref-orig\"; }; hi = 1; } );\n",
               "num_qo_heads", "6", 1);                                    /* impossible: 6 heads over 4 */
    expect_bad("name = \"t1\"; question = \"q\"; sweep = { seed = [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15];\n"
               " batch = [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]; seq_len = [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]; };\n"
               "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"exact_o_rel_l2\"; num = { variant = \"ref-orig\"; }; hi = 1; } );\n",
               "sweep.seq_len", "4096", 1);                                /* impossible: too many points */
    expect_bad("name = \"t1\"; question = \"q\"; sweep = { seed = [0, 0]; };\nhypotheses = ();\n", "sweep.seed", "0", 0);
    expect_bad("name = \"t1\"; question = ;\n", "syntax error", NULL, 0); /* libconfig's own error, with the line */
    expect_bad("name = \"t1\"; question = \"q\"; sweep = { models = \"all\"; };\n", "sweep.models", NULL, 0);
}
END_TEST

/* ---------------------------------------------------------------- verdicts on synthetic rows */

static dl_result_row *mkrow(dl_result_row *r, const dl_xp_point *p, const char *variant, double t, double stdrel)
{
    dl_result_row_init(r);
    snprintf(r->golden_path, sizeof r->golden_path, "%.1000s", p->golden);
    snprintf(r->variant, sizeof r->variant, "%s", variant);
    snprintf(r->verdict, sizeof r->verdict, "PASS");
    r->time_median_s = t;
    r->time_stdrel = stdrel;
    return r;
}

static dl_xp_verdict judge(const dl_experiment *x, const dl_xp_point *pts, int n, dl_result_row *rows, int nr,
                           dl_xp_result *res)
{
    ck_assert_int_eq(dl_xp_evaluate(x, 0, pts, n, rows, nr, NULL, 0, res), 0);
    return res->verdict;
}

/* The two points of BASE_SWEEP whose kv_dtype is e4m3 (the seeds 0 and 1), in sweep order. */
static void e4m3_points(const dl_xp_point *pts, int n, const dl_xp_point **a, const dl_xp_point **b)
{
    *a = *b = NULL;
    for (int i = 0; i < n; i++)
        if (!strcmp(dl_xp_point_value(&pts[i], "kv_dtype"), "e4m3")) {
            if (!*a) *a = &pts[i];
            else *b = &pts[i];
        }
    ck_assert_ptr_nonnull(*b);
}

/* BASE_SWEEP with the hypotheses `rule` loaded into x, its points into *pts (*n), the two e4m3 ones into *a, *b. */
static void rule_points(dl_experiment *x, const char *rule, dl_xp_point **pts, int *n, const dl_xp_point **a,
                        const dl_xp_point **b)
{
    static char text[4096];
    snprintf(text, sizeof text, "%s%s", BASE_SWEEP, rule);
    load_ok(text, x);
    *pts = NULL;
    *n = 0;
    ck_assert_int_eq(dl_xp_points(x, 0, dl_test_dir, pts, n), 0);
    e4m3_points(*pts, *n, a, b);
}

START_TEST(test_verdicts)
{
    static dl_experiment x;
    dl_xp_point *pts;
    int n;
    const dl_xp_point *a, *b; /* the e4m3 points are the ones the rule looks at */
    rule_points(&x, ratio_hyp, &pts, &n, &a, &b);
    dl_result_row rows[8];
    dl_xp_result res;
    /* ratios 1.00 and 1.05: both in [0.9, 1.1] -> HOLDS */
    mkrow(&rows[0], a, "fp32-fast-simt", 100e-6, 0.002);
    mkrow(&rows[1], a, "fp32-cast-simt", 100e-6, 0.002);
    mkrow(&rows[2], b, "fp32-fast-simt", 105e-6, 0.002);
    mkrow(&rows[3], b, "fp32-cast-simt", 100e-6, 0.002);
    ck_assert_int_eq(judge(&x, pts, n, rows, 4, &res), DL_XP_HOLDS);
    ck_assert_int_eq(res.nobs, 2);
    ck_assert(fabs(res.vmax - 1.05) < 1e-12 && fabs(res.vmin - 1.0) < 1e-12);
    /* timings that converged are not flagged; one that hit the time cap flags its observation */
    ck_assert(!res.obs[0].unconverged && !res.obs[1].unconverged);
    dl_xp_result_free(&res);
    rows[3].time_converged = 0;
    judge(&x, pts, n, rows, 4, &res);
    ck_assert_int_eq(res.obs[0].unconverged + res.obs[1].unconverged, 1);
    dl_xp_result_free(&res);
    rows[3].time_converged = 1;
    /* 0.5 is far outside with 0.3% noise -> REJECTED, whatever the other point says */
    rows[2].time_median_s = 50e-6;
    ck_assert_int_eq(judge(&x, pts, n, rows, 4, &res), DL_XP_REJECTED);
    ck_assert_int_eq(res.nout, 1);
    ck_assert_ptr_nonnull(strstr(res.reason, "0.5"));
    dl_xp_result_free(&res);
    /* 1.12 is outside by 0.02 = 1.8% of the value; with stdrel 1% on each side the combined noise is
     * 1.41%, and 2 x 1.41% x 1.12 = 0.032 > 0.02: the effect is within the noise -> INCONCLUSIVE */
    rows[2].time_median_s = 112e-6;
    rows[2].time_stdrel = rows[3].time_stdrel = 0.01;
    ck_assert_int_eq(judge(&x, pts, n, rows, 4, &res), DL_XP_INCONCLUSIVE);
    ck_assert_int_eq(res.nunclear, 1);
    ck_assert_ptr_nonnull(strstr(res.reason, "noise"));
    dl_xp_result_free(&res);
    /* the same 1.12 with 0.1% noise is resolved -> REJECTED */
    rows[2].time_stdrel = rows[3].time_stdrel = 0.001;
    ck_assert_int_eq(judge(&x, pts, n, rows, 4, &res), DL_XP_REJECTED);
    dl_xp_result_free(&res);
    /* one config missing its rows: what was measured holds, but not "for every config" -> INCONCLUSIVE */
    rows[2].time_median_s = 100e-6;
    ck_assert_int_eq(judge(&x, pts, n, rows, 2, &res), DL_XP_INCONCLUSIVE);
    ck_assert_int_eq(res.nmissing, 1);
    dl_xp_result_free(&res);
    /* a SKIP row is no data */
    snprintf(rows[0].verdict, sizeof rows[0].verdict, "SKIP");
    snprintf(rows[0].reason, sizeof rows[0].reason, "kv is 16-bit");
    ck_assert_int_eq(judge(&x, pts, n, rows, 2, &res), DL_XP_INCONCLUSIVE);
    ck_assert_ptr_nonnull(strstr(res.reason, "SKIP"));
    dl_xp_result_free(&res);
    /* nothing at all -> INCONCLUSIVE, no data */
    ck_assert_int_eq(judge(&x, pts, n, rows, 0, &res), DL_XP_INCONCLUSIVE);
    ck_assert_ptr_nonnull(strstr(res.reason, "no data"));
    dl_xp_result_free(&res);
    dl_xp_points_free(pts, n);
}
END_TEST

/* Zero denominators and the rules that could not fail (an audit, 2026-12-08): x/0 = inf lies inside [lo, inf] (it was
 * always REJECTED), 0/0 is a missing observation named in the reason (it was REJECTED as NaN); the REJECTED example is
 * the observation farthest outside (it was the one farthest from 1: the nearest miss below hi = 0.5); a rule whose
 * bounds are both infinite, a sass census rule with a where or a term other than kv_dtype (both ignored), and a bad
 * noise_k are refused at load, naming key and value. */
START_TEST(test_zero_denominators_and_refusals)
{
    static dl_experiment x;
    char text[4096];
    dl_xp_point *pts;
    int n;
    const dl_xp_point *a, *b;
    rule_points(&x,
                "hypotheses = ( { claim = \"fast is at least half of cast\"; kind = \"ratio\"; metric = \"time_median_s\";\n"
                "  num = { variant = \"fp32-fast-simt\"; }; den = { variant = \"fp32-cast-simt\"; };\n"
                "  where = { kv_dtype = \"e4m3\"; }; lo = 0.5; } );\n",
                &pts, &n, &a, &b);
    dl_result_row rows[4];
    dl_xp_result res;
    mkrow(&rows[0], a, "fp32-fast-simt", 100e-6, 0.002);
    mkrow(&rows[1], a, "fp32-cast-simt", 0.0, 0.002); /* x/0 */
    mkrow(&rows[2], b, "fp32-fast-simt", 100e-6, 0.002);
    mkrow(&rows[3], b, "fp32-cast-simt", 100e-6, 0.002);
    ck_assert_int_eq(judge(&x, pts, n, rows, 4, &res), DL_XP_HOLDS);
    ck_assert_int_eq(res.nin, 2);
    ck_assert(isinf(res.vmax));
    dl_xp_result_free(&res);
    rows[0].time_median_s = 0.0; /* 0/0: missing, said */
    ck_assert_int_eq(judge(&x, pts, n, rows, 4, &res), DL_XP_INCONCLUSIVE);
    ck_assert_int_eq(res.nmissing, 1);
    ck_assert_int_eq(res.nobs, 1);
    ck_assert_msg(strstr(res.reason, "0/0"), "%s", res.reason);
    dl_xp_result_free(&res);
    dl_xp_points_free(pts, n);

    /* the example of a REJECTED rule: the farthest outside (0.9 with hi = 0.5), not the nearest miss (0.6) */
    rule_points(&x,
                "hypotheses = ( { claim = \"c\"; kind = \"ratio\"; metric = \"time_median_s\";\n"
                "  num = { variant = \"fp32-fast-simt\"; }; den = { variant = \"fp32-cast-simt\"; };\n"
                "  where = { kv_dtype = \"e4m3\"; }; hi = 0.5; } );\n",
                &pts, &n, &a, &b);
    mkrow(&rows[0], a, "fp32-fast-simt", 60e-6, 0.001);
    mkrow(&rows[1], a, "fp32-cast-simt", 100e-6, 0.001);
    mkrow(&rows[2], b, "fp32-fast-simt", 90e-6, 0.001);
    mkrow(&rows[3], b, "fp32-cast-simt", 100e-6, 0.001);
    ck_assert_int_eq(judge(&x, pts, n, rows, 4, &res), DL_XP_REJECTED);
    ck_assert_msg(strstr(res.reason, "e.g. 0.9 at"), "%s", res.reason);
    dl_xp_result_free(&res);
    dl_xp_points_free(pts, n);

    const char *rule = "hypotheses = ( { claim = \"c\"; kind = \"ratio\"; metric = \"time_median_s\";\n"
                       "  num = { variant = \"fp32-fast-simt\"; }; den = { variant = \"fp32-cast-simt\"; }; %s } );\n";
    char r2[1024];
    snprintf(r2, sizeof r2, rule, "lo = \"-inf\";");
    snprintf(text, sizeof text, "%s%s", BASE_SWEEP, r2);
    expect_bad(text, "hypotheses[0].lo", "finite lo or hi", 0);
    snprintf(r2, sizeof r2, rule, "lo = \"-inf\"; hi = \"inf\";");
    snprintf(text, sizeof text, "%s%s", BASE_SWEEP, r2);
    expect_bad(text, "hypotheses[0].lo", "finite lo or hi", 0);
    snprintf(r2, sizeof r2, rule, "hi = 1; noise_k = -1;");
    snprintf(text, sizeof text, "%s%s", BASE_SWEEP, r2);
    expect_bad(text, "hypotheses[0].noise_k", "'-1'", 0);
    const char *census = "measure = { census = true; };\n"
                         "hypotheses = ( { claim = \"c\"; kind = \"census\"; metric = \"conv\";\n"
                         "  num = { variant = \"fp32-fast-simt\"; %s }; den = { variant = \"fp32-cast-simt\"; }; hi = 0.5; %s } );\n";
    snprintf(r2, sizeof r2, census, "", "where = { kv_dtype = \"e5m2\"; };");
    snprintf(text, sizeof text, "%s%s", BASE_SWEEP, r2);
    expect_bad(text, "hypotheses[0].where", "not sweep points", 0);
    snprintf(r2, sizeof r2, census, "seed = 1;", "");
    snprintf(text, sizeof text, "%s%s", BASE_SWEEP, r2);
    expect_bad(text, "hypotheses[0].num.seed", "variant and kv_dtype alone", 0);
    /* a census kv_dtype the sweep does not set is still a KV type ("e4m4" matched nothing, in silence) */
    snprintf(r2, sizeof r2, census, "kv_dtype = \"e4m4\";", "");
    snprintf(text, sizeof text, "name = \"t1\";\nquestion = \"q?\";\nsweep = { num_qo_heads = 4; num_kv_heads = 2; "
             "head_dim = 64; batch = 2; seq_len = \"1:40\"; seed = [0, 1]; };\nvariants = [\"fp32-cast-simt\", "
             "\"fp32-fast-simt\"];\nmodels = \"exact,orig,fp8\";\n%s", r2);
    expect_bad(text, "hypotheses[0].num.kv_dtype", "'e4m4'", 0);
    char good[1024];
    snprintf(good, sizeof good, census, "kv_dtype = \"e5m2\";", "");
    snprintf(text, sizeof text, "name = \"t1\";\nquestion = \"q?\";\nsweep = { num_qo_heads = 4; num_kv_heads = 2; "
             "head_dim = 64; batch = 2; seq_len = \"1:40\"; seed = [0, 1]; };\nvariants = [\"fp32-cast-simt\", "
             "\"fp32-fast-simt\"];\nmodels = \"exact,orig,fp8\";\n%s", good);
    load_ok(text, &x); /* a real KV type, not swept: taken */
}
END_TEST

START_TEST(test_census_verdict)
{
    static dl_experiment x;
    char text[4096];
    snprintf(text, sizeof text, "%smeasure = { census = true; };\n%s", BASE_SWEEP,
             "hypotheses = ( { claim = \"fast converts less\"; kind = \"census\"; metric = \"conv\";\n"
             "  num = { variant = \"fp32-fast-simt\"; kv_dtype = \"e4m3\"; }; den = { variant = \"fp32-cast-simt\"; kv_dtype = \"e4m3\"; };\n"
             "  hi = 0.99; } );\n");
    load_ok(text, &x);
    dl_census_row c[4];
    const char *names[4] = {"void (anonymous namespace)::simt_decode_kernel<128, (dl_dtype)3, true>(dl_gpu_args, int)",
                            "void (anonymous namespace)::simt_decode_kernel<128, (dl_dtype)3, false>(dl_gpu_args, int)",
                            "void (anonymous namespace)::simt_decode_kernel<128, (dl_dtype)2, false>(dl_gpu_args, int)",
                            "(anonymous namespace)::merge_kernel(dl_gpu_args)"};
    const char *vars[4] = {"fp32-fast-simt", "fp32-cast-simt", "fp32-cast-simt", "fp32-cast-simt"};
    const char *kv[4] = {"e4m3", "e4m3", "bf16", ""};
    double val[4] = {8, 40, 1000, 1000};
    for (int i = 0; i < 4; i++) {
        dl_census_row_init(&c[i]);
        snprintf(c[i].source, sizeof c[i].source, "sass");
        snprintf(c[i].variant, sizeof c[i].variant, "%s", vars[i]);
        snprintf(c[i].kernel, sizeof c[i].kernel, "%s", names[i]);
        snprintf(c[i].kv_dtype, sizeof c[i].kv_dtype, "%s", kv[i]);
        snprintf(c[i].metric, sizeof c[i].metric, "class:conv");
        c[i].value = val[i];
    }
    dl_xp_result res;
    /* 8 / 40 = 0.2: the bf16 instantiation and the merge kernel (not claimed by the glob) are not counted */
    ck_assert_int_eq(dl_xp_evaluate(&x, 0, NULL, 0, NULL, 0, c, 4, &res), 0);
    ck_assert_int_eq(res.verdict, DL_XP_HOLDS);
    ck_assert(res.nobs == 1 && fabs(res.obs[0].value - 0.2) < 1e-12);
    dl_xp_result_free(&res);
    c[0].value = 40; /* as many conversions as the cast sibling -> REJECTED */
    ck_assert_int_eq(dl_xp_evaluate(&x, 0, NULL, 0, NULL, 0, c, 4, &res), 0);
    ck_assert_int_eq(res.verdict, DL_XP_REJECTED);
    dl_xp_result_free(&res);
    ck_assert_int_eq(dl_xp_evaluate(&x, 0, NULL, 0, NULL, 0, c, 0, &res), 0); /* no census -> INCONCLUSIVE */
    ck_assert_int_eq(res.verdict, DL_XP_INCONCLUSIVE);
    dl_xp_result_free(&res);
}
END_TEST

/* A selector may read its own metric: p_underflow_frac over p_underflow_pred of the same row. */
START_TEST(test_selector_metric)
{
    static dl_experiment x;
    const char *text =
        "name = \"t2\";\nquestion = \"q?\";\n"
        "sweep = { num_qo_heads = 4; num_kv_heads = 2; head_dim = 64; batch = 2; seq_len = 40;\n"
        "          distribution = \"sink\"; sink_delta = [4, 8]; };\nmodels = \"exact,fp8\";\n"
        "hypotheses = ( { claim = \"formula\"; kind = \"ratio\"; metric = \"p_underflow_frac\";\n"
        "  num = { variant = \"ref-fp8\"; }; den = { variant = \"ref-fp8\"; metric = \"p_underflow_pred\"; };\n"
        "  lo = 0.8; hi = 1.25; } );\n";
    load_ok(text, &x);
    ck_assert_str_eq(x.hyp[0].den.metric, "p_underflow_pred");
    ck_assert_str_eq(x.hyp[0].num.metric, "");
    dl_xp_point *pts = NULL;
    int n = 0;
    ck_assert_int_eq(dl_xp_points(&x, 0, dl_test_dir, &pts, &n), 0);
    ck_assert_int_eq(n, 2);
    dl_result_row rows[2];
    for (int i = 0; i < 2; i++) {
        mkrow(&rows[i], &pts[i], "ref-fp8", NAN, NAN);
        snprintf(rows[i].verdict, sizeof rows[i].verdict, "-");
        rows[i].p_underflow_frac = 0.5 + 0.4 * i;
        rows[i].p_underflow_pred = 0.5;
    }
    dl_xp_result res;
    /* 0.5/0.5 = 1 in, 0.9/0.5 = 1.8 out: each row divided by itself, the other point never paired */
    ck_assert_int_eq(judge(&x, pts, n, rows, 2, &res), DL_XP_REJECTED);
    ck_assert_int_eq(res.nobs, 2);
    ck_assert(fabs(res.vmax - 1.8) < 1e-12 && fabs(res.vmin - 1.0) < 1e-12);
    dl_xp_result_free(&res);
    dl_xp_points_free(pts, n);
    char t[4096];
    snprintf(t, sizeof t, "%s", text);
    char *m = strstr(t, "metric = \"p_underflow_pred\"");
    memcpy(m, "metric = \"p_underflow_zzzz\"", 27);
    expect_bad(t, "hypotheses[0].den.metric", "p_underflow_zzzz", 0);
}
END_TEST

/* ---------------------------------------------------------------- end to end through the binary */

static int run_bin(const char *args, char *out, size_t n)
{
    const char *bin = getenv("DL_BIN");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", bin ? bin : "build/decodelab", args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t k = fread(out, 1, n - 1, p);
    out[k] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *tiny_e5 =
    "name = \"tiny_e5\";\nquestion = \"e4m3 or e5m2?\";\n"
    "sweep = { num_qo_heads = 4; num_kv_heads = 2; head_dim = 64; batch = 3; seq_len = \"1:70\";\n"
    "          kv_dtype = [\"e4m3\", \"e5m2\"]; seed = [3, 4]; };\n"
    "models = \"exact,orig,fp8\";\n"
    "hypotheses = (\n"
    " { claim = \"e5m2 stores worse\"; kind = \"ratio\"; metric = \"exact_o_rel_l2\";\n"
    "   num = { variant = \"ref-orig\"; kv_dtype = \"e5m2\"; }; den = { variant = \"ref-orig\"; kv_dtype = \"e4m3\"; }; lo = 1.0; },\n"
    " { claim = \"fp8 error under 50%\"; kind = \"value\"; metric = \"exact_o_rel_l2\"; num = { variant = \"ref-fp8\"; }; hi = 0.5; } );\n";

static int count_lines_with(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f)) n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

START_TEST(test_end_to_end_and_resume)
{
    const char *cfg = write_cfg("tiny.cfg", tiny_e5);
    char out[16384], args[1024], res_path[256], log[256], verdicts[256];
    static char line[4096];
    dl_test_path(res_path, sizeof res_path, "out/results.h5");
    dl_test_path(log, sizeof log, "out/steps.log");
    dl_test_path(verdicts, sizeof verdicts, "out/verdicts.csv");
    /* interrupted after 3 steps (golden 1, ref 1, golden 2) */
    snprintf(args, sizeof args, "experiment '%s' --out '%s/out' --cache '%s/cache' --stop-after 3", cfg, dl_test_dir, dl_test_dir);
    ck_assert_int_eq(run_bin(args, out, sizeof out), 3);
    ck_assert_int_eq(count_lines_with(log, " golden "), 2);
    dl_result_row *rows = NULL;
    int64_t n = 0;
    ck_assert_int_eq(dl_results_read(res_path, &rows, &n), 0);
    ck_assert_int_eq(n, 2); /* one point's ref-orig and ref-fp8 */
    free(rows);
    /* without --resume the directory is refused (nothing is overwritten) */
    snprintf(args, sizeof args, "experiment '%s' --out '%s/out' --cache '%s/cache'", cfg, dl_test_dir, dl_test_dir);
    ck_assert_int_eq(run_bin(args, out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--resume"));
    /* resume: the rest, nothing twice */
    snprintf(args, sizeof args, "experiment '%s' --out '%s/out' --cache '%s/cache' --resume", cfg, dl_test_dir, dl_test_dir);
    ck_assert_int_eq(run_bin(args, out, sizeof out), 0);
    ck_assert_int_eq(count_lines_with(log, " golden "), 4); /* 4 points, each generated once */
    ck_assert_int_eq(dl_results_read(res_path, &rows, &n), 0);
    ck_assert_int_eq(n, 8); /* 4 points x (orig, fp8) */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < i; j++)
            ck_assert(strcmp(rows[i].golden_path, rows[j].golden_path) || strcmp(rows[i].variant, rows[j].variant));
    /* the verdict of H1 recomputed independently from the rows: every e5m2/e4m3 ratio of the
     * storage error at equal seed must be >= 1 for HOLDS */
    double rmin = INFINITY, rmax = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        if (strcmp(rows[i].variant, "ref-orig") || strcmp(rows[i].kv_dtype, "e5m2")) continue;
        for (int64_t j = 0; j < n; j++)
            if (!strcmp(rows[j].variant, "ref-orig") && !strcmp(rows[j].kv_dtype, "e4m3") && rows[j].seed == rows[i].seed) {
                double r = rows[i].exact_o.rel_l2 / rows[j].exact_o.rel_l2;
                rmin = fmin(rmin, r);
                rmax = fmax(rmax, r);
            }
    }
    free(rows);
    ck_assert(isfinite(rmin));
    FILE *f = fopen(verdicts, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f)); /* header */
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f)); /* H1 */
    fclose(f);
    ck_assert_ptr_nonnull(strstr(line, rmin >= 1.0 ? ",HOLDS," : ",REJECTED,"));
    char want[64];
    snprintf(want, sizeof want, ",%.17g,%.17g,", rmin, rmax);
    ck_assert_msg(strstr(line, want) != NULL, "verdicts line %s lacks the range %s", line, want);
    /* a resumed complete run does nothing again */
    ck_assert_int_eq(run_bin(args, out, sizeof out), 0);
    ck_assert_int_eq(count_lines_with(log, " golden "), 4);
    ck_assert_ptr_nonnull(strstr(out, "HOLDS") ? out : strstr(out, "REJECTED"));
    dl_test_path(line, sizeof line, "out/report.md");
    ck_assert_int_gt(count_lines_with(line, "| H1 |"), 0);
}
END_TEST

/* ---------------------------------------------------------------- sharded sweeps (issue 13) */

static const char *tiny_six =
    "name = \"tiny_six\";\nquestion = \"e4m3 or e5m2?\";\n"
    "sweep = { num_qo_heads = 4; num_kv_heads = 2; head_dim = 64; batch = 3; seq_len = \"1:70\";\n"
    "          kv_dtype = [\"e4m3\", \"e5m2\"]; seed = [3, 4, 5]; };\n"
    "models = \"exact,orig,fp8\";\n"
    "hypotheses = (\n"
    " { claim = \"e5m2 stores worse\"; kind = \"ratio\"; metric = \"exact_o_rel_l2\";\n"
    "   num = { variant = \"ref-orig\"; kv_dtype = \"e5m2\"; }; den = { variant = \"ref-orig\"; kv_dtype = \"e4m3\"; }; lo = 1.0; },\n"
    " { claim = \"fp8 error under 2%\"; kind = \"value\"; metric = \"exact_o_rel_l2\"; num = { variant = \"ref-fp8\"; }; hi = 0.02; } );\n";

static void expect_exit2(const char *args, const char *needle1, const char *needle2)
{
    char out[8192];
    const int rc = run_bin(args, out, sizeof out);
    ck_assert_msg(rc == 2, "exit %d (2 expected) of %s: %s", rc, args, out);
    ck_assert_msg(strstr(out, needle1) != NULL, "'%s' not in: %s", needle1, out);
    if (needle2) ck_assert_msg(strstr(out, needle2) != NULL, "'%s' not in: %s", needle2, out);
    ck_assert_msg(strchr(out, '\n') == out + strlen(out) - 1, "not one line: %s", out);
}

/* A step that fails says why in the runner's own error: the step's exit status (or the signal that killed
 * it) and the step's last decodelab error line from steps.log (2026-12-02: "golden ... exited with status
 * 139" sent the reader to a 1.25 GiB cache's log to find "No space left on device"). A stub binary stands
 * in for decodelab (--binary). */
START_TEST(test_step_failure_named)
{
    const char *cfg = write_cfg("six.cfg", tiny_six);
    const char *stubs[2] = {"#!/bin/sh\necho 'decodelab golden: /c/x.h5: H5Dwrite failed on /inputs/v_cache (No space left "
                            "on device)' >&2\nexit 2\n",
                            "#!/bin/sh\nkill -SEGV $$\n"};
    const char *want[2] = {"exited with status 2: decodelab golden: /c/x.h5: H5Dwrite failed on /inputs/v_cache (No space "
                           "left on device) (see ",
                           "was killed by signal 11 (see "};
    for (int k = 0; k < 2; k++) {
        char stub[512], args[2048], out[16384];
        snprintf(stub, sizeof stub, "%s/stub%d.sh", dl_test_dir, k);
        FILE *f = fopen(stub, "w");
        ck_assert_ptr_nonnull(f);
        fputs(stubs[k], f);
        fclose(f);
        ck_assert_int_eq(chmod(stub, 0755), 0);
        snprintf(args, sizeof args, "experiment '%s' --out '%s/o%d' --cache '%s/c%d' --binary '%s'", cfg, dl_test_dir, k,
                 dl_test_dir, k, stub);
        ck_assert_int_eq(run_bin(args, out, sizeof out), 2);
        ck_assert_msg(strstr(out, want[k]) != NULL, "'%s' not in: %s", want[k], out);
        ck_assert_msg(strstr(out, "golden for ") != NULL, "the step is not named: %s", out);
    }
}
END_TEST

START_TEST(test_shard_flag_validation)
{
    const char *cfg = write_cfg("six.cfg", tiny_six);
    const char *bad[] = {"3/3", "7/3", "-1/3", "1/0", "a/b", "1", "1/3/4", "/3", "2/", "1/99999"};
    const char *why[] = {"0..2", "0..2", "K/N", "1..4096", "K/N", "K/N", "K/N", "K/N", "K/N", "1..4096"};
    char args[1024], want[64];
    for (int i = 0; i < 10; i++) {
        snprintf(args, sizeof args, "experiment '%s' --cache '%s/c' --out '%s/o' --shard '%s'", cfg, dl_test_dir, dl_test_dir, bad[i]);
        snprintf(want, sizeof want, "--shard: '%s'", bad[i]);
        expect_exit2(args, want, why[i]);
    }
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/x' --shard 0/2", cfg, dl_test_dir);
    expect_exit2(args, "--merge", "only --out");
    snprintf(args, sizeof args, "experiment '%s' --merge", cfg);
    expect_exit2(args, "--merge", NULL);
    snprintf(args, sizeof args, "experiment --merge '%s/s0' '%s/s1' '%s'", dl_test_dir, dl_test_dir, cfg);
    expect_exit2(args, "after --merge, was taken as a shard directory", "give FILE.cfg first");
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/nothing'", cfg, dl_test_dir);
    expect_exit2(args, "nothing/shard.cfg", "not a shard directory");
}
END_TEST

/* Every row of a results table as text, without the columns that name when and where it was written. */
static int rows_text(const char *h5, char ***out)
{
    dl_result_row *rows = NULL;
    int64_t n = 0;
    ck_assert_msg(dl_results_read(h5, &rows, &n) == 0, "%s", dl_last_error());
    char **t = calloc((size_t)n + 1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    for (int64_t r = 0; r < n; r++) {
        size_t cap = 65536, len = 0;
        t[r] = calloc(cap, 1);
        char cell[9000];
        for (int i = 0; i < dl_results_num_columns(); i++) {
            const char *nm = dl_results_column_name(i);
            if (!strcmp(nm, "date_utc") || !strcmp(nm, "hostname")) continue;
            dl_results_format_cell(&rows[r], i, cell, sizeof cell);
            len += (size_t)snprintf(t[r] + len, cap - len, "%s=%s|", nm, cell);
        }
    }
    free(rows);
    *out = t;
    return (int)n;
}

static void free_text(char **t, int n)
{
    for (int i = 0; i < n; i++) free(t[i]);
    free(t);
}

/* verdicts.csv without its last column (the date) */
static void verdicts_text(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[8192];
    buf[0] = 0;
    while (fgets(line, sizeof line, f)) {
        char *c = strrchr(line, ',');
        if (c) *c = 0;
        strncat(buf, line, n - strlen(buf) - 2);
        strncat(buf, "\n", n - strlen(buf) - 1);
    }
    fclose(f);
}

/* Shards 0..2 of a 6-point sweep, one of them interrupted and resumed, merged: the same rows in the same
 * order and the same verdicts as the sweep run in one piece; merging refuses an unfinished shard. */
START_TEST(test_shard_merge_equals_one_piece)
{
    const char *cfg = write_cfg("six.cfg", tiny_six);
    char out[16384], args[2048], p1[512], p2[512];
    snprintf(args, sizeof args, "experiment '%s' --out '%s/one' --cache '%s/cache'", cfg, dl_test_dir, dl_test_dir);
    ck_assert_msg(run_bin(args, out, sizeof out) == 0, "%s", out);
    /* shard 1 stopped after one step (its first golden file) */
    snprintf(args, sizeof args, "experiment '%s' --shard 1/3 --out '%s/s1' --cache '%s/cache2' --stop-after 1", cfg, dl_test_dir, dl_test_dir);
    ck_assert_int_eq(run_bin(args, out, sizeof out), 3);
    for (int k = 0; k < 3; k += 2) {
        snprintf(args, sizeof args, "experiment '%s' --shard %d/3 --out '%s/s%d' --cache '%s/cache2'", cfg, k, dl_test_dir, k, dl_test_dir);
        ck_assert_msg(run_bin(args, out, sizeof out) == 0, "%s", out);
        ck_assert_ptr_nonnull(strstr(out, "--merge"));
        snprintf(p1, sizeof p1, "%s/s%d/report.md", dl_test_dir, k);
        ck_assert_int_lt(count_lines_with(p1, "H1"), 0); /* a shard writes no report */
    }
    /* the unfinished shard is refused by the merge, naming it and the way to finish it */
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/s0' '%s/s1' '%s/s2' --out '%s/m'", cfg, dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir);
    ck_assert_int_eq(run_bin(args, out, sizeof out), 2);
    ck_assert_msg(strstr(out, "shard 1/3 did not finish") && strstr(out, "--resume"), "%s", out);
    /* resuming shard 1 finishes it; a second resume does nothing again */
    snprintf(args, sizeof args, "experiment '%s' --shard 1/3 --out '%s/s1' --cache '%s/cache2' --resume", cfg, dl_test_dir, dl_test_dir);
    ck_assert_msg(run_bin(args, out, sizeof out) == 0, "%s", out);
    ck_assert_msg(run_bin(args, out, sizeof out) == 0, "%s", out);
    dl_test_path(p1, sizeof p1, "s1/steps.log");
    ck_assert_int_eq(count_lines_with(p1, " golden "), 2); /* its 2 points, each generated once */
    /* the merge, given in any order */
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/s2' '%s/s0' '%s/s1' --out '%s/m'", cfg, dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir);
    ck_assert_msg(run_bin(args, out, sizeof out) == 0, "%s", out);
    /* same rows, same order, as the one-piece run (the golden cache differs: compare by hash) */
    char **a = NULL, **b = NULL;
    dl_test_path(p1, sizeof p1, "one/results.h5");
    dl_test_path(p2, sizeof p2, "m/results.h5");
    int na = rows_text(p1, &a), nb = rows_text(p2, &b);
    ck_assert_int_eq(na, 12);
    ck_assert_int_eq(nb, na);
    for (int i = 0; i < na; i++) {
        /* golden_path differs only by the cache directory */
        char *sa = strstr(a[i], ".h5|"), *sb = strstr(b[i], ".h5|");
        ck_assert_ptr_nonnull(sa);
        ck_assert_ptr_nonnull(sb);
        ck_assert_str_eq(sa - 16, sb - 16);
    }
    free_text(a, na);
    free_text(b, nb);
    static char va[16384], vb[16384];
    dl_test_path(p1, sizeof p1, "one/verdicts.csv");
    dl_test_path(p2, sizeof p2, "m/verdicts.csv");
    verdicts_text(p1, va, sizeof va);
    verdicts_text(p2, vb, sizeof vb);
    ck_assert_str_eq(va, vb);
    dl_test_path(p2, sizeof p2, "m/report.md");
    ck_assert_int_eq(count_lines_with(p2, "| H1 |"), 1);
    ck_assert_int_eq(count_lines_with(p2, "The rows come from"), 0); /* one build, no card */
    /* merging again over its own output is allowed (it was a merge); over a one-piece run it is not */
    ck_assert_msg(run_bin(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/s2' '%s/s0' '%s/s1' --out '%s/one'", cfg, dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir);
    ck_assert_int_eq(run_bin(args, out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "not of a merge"));
    /* a shard whose rows another build made (a task rerun after a rebuild): the merge's report says the verdicts mix
     * two builds, with each one's rows (it named one build, its own) */
    char s2res[600], s2csv[600];
    snprintf(s2res, sizeof s2res, "%s/s2/results.h5", dl_test_dir);
    dl_results_csv_path(s2res, s2csv, sizeof s2csv);
    dl_result_row *rr = NULL;
    int64_t nr = 0;
    ck_assert_int_eq(dl_results_read(s2res, &rr, &nr), 0);
    ck_assert_int_gt(nr, 0);
    for (int64_t i = 0; i < nr; i++) snprintf(rr[i].generator, sizeof rr[i].generator, "decodelab 0.1.0 (git other)");
    unlink(s2res);
    unlink(s2csv);
    ck_assert_int_eq(dl_results_append(s2res, rr, nr), 0);
    free(rr);
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/s2' '%s/s0' '%s/s1' --out '%s/m_two'", cfg, dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir);
    ck_assert_msg(run_bin(args, out, sizeof out) == 0, "%s", out);
    dl_test_path(p2, sizeof p2, "m_two/report.md");
    ck_assert_int_eq(count_lines_with(p2, "**The rows come from 2 builds:**"), 1);
    ck_assert_int_eq(count_lines_with(p2, "`decodelab 0.1.0 (git other)` ("), 1);
}
END_TEST

/* The merge refuses what would lose or double a point: a shard missing or given twice, a row twice, a row
 * missing, shards of another sweep; each one line naming it. A one-piece run refuses a shard directory. */
START_TEST(test_merge_refusals)
{
    char cfg[256];
    snprintf(cfg, sizeof cfg, "%s", write_cfg("six.cfg", tiny_six));
    char out[16384], args[4096], p[1400];
    for (int k = 0; k < 3; k++) {
        snprintf(args, sizeof args, "experiment '%s' --shard %d/3 --out '%s/s%d' --cache '%s/c'", cfg, k, dl_test_dir, k, dl_test_dir);
        ck_assert_msg(run_bin(args, out, sizeof out) == 0, "%s", out);
    }
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/s0' '%s/s2' --out '%s/m'", cfg, dl_test_dir, dl_test_dir, dl_test_dir);
    expect_exit2(args, "shards missing: 1/3", "--shard 1/3");
    /* OUT held by another experiment process (its .lock): refused, as a run is (a merge once wrote beside a run, and
     * the rows were counted twice); a folder holding a shard's manifest is not a merge's either */
    snprintf(p, sizeof p, "%s/held", dl_test_dir);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/held/.lock", dl_test_dir);
    int lfd = open(p, O_RDWR | O_CREAT, 0644);
    ck_assert_int_ge(lfd, 0);
    ck_assert_int_eq(flock(lfd, LOCK_EX | LOCK_NB), 0);
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/s0' '%s/s1' '%s/s2' --out '%s/held'", cfg, dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir);
    expect_exit2(args, "is in use by another decodelab experiment", NULL);
    close(lfd);
    /* an ncu census row twice in shard 0 (the check compared results rows alone: the sum counted it twice) */
    {
        char s0res[1400], s0cen[1400];
        snprintf(s0res, sizeof s0res, "%s/s0/results.h5", dl_test_dir);
        snprintf(s0cen, sizeof s0cen, "%s/s0/census.csv", dl_test_dir);
        dl_result_row *rr = NULL;
        int64_t nr = 0;
        ck_assert_int_eq(dl_results_read(s0res, &rr, &nr), 0);
        ck_assert_int_gt(nr, 0);
        dl_census_row cr[2];
        for (int k = 0; k < 2; k++) {
            dl_census_row_init(&cr[k]);
            snprintf(cr[k].source, sizeof cr[k].source, "ncu");
            snprintf(cr[k].variant, sizeof cr[k].variant, "bf16-fast-mma");
            snprintf(cr[k].kernel, sizeof cr[k].kernel, "mma_decode_kernel<64, (dl_dtype)3, true>(dl_gpu_args)");
            snprintf(cr[k].metric, sizeof cr[k].metric, "sm__inst_executed.sum");
            snprintf(cr[k].golden_path, sizeof cr[k].golden_path, "%s", rr[0].golden_path);
            cr[k].value = 1000;
        }
        free(rr);
        char keep[6000];
        snprintf(keep, sizeof keep, "cp '%s' '%s.keep' 2>/dev/null; true", s0cen, s0cen);
        ck_assert_int_eq(system(keep), 0);
        ck_assert_int_eq(dl_census_append(s0cen, cr, 2), 0);
        snprintf(args, sizeof args, "experiment '%s' --merge '%s/s0' '%s/s1' '%s/s2' --out '%s/m_ncu'", cfg, dl_test_dir,
                 dl_test_dir, dl_test_dir, dl_test_dir);
        expect_exit2(args, "ncu census row of point", "twice");
        snprintf(keep, sizeof keep, "rm -f '%s'; if [ -f '%s.keep' ]; then mv '%s.keep' '%s'; fi", s0cen, s0cen, s0cen, s0cen);
        ck_assert_int_eq(system(keep), 0);
    }
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/s0' '%s/s1' '%s/s2' --out '%s/held'", cfg, dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir);
    snprintf(p, sizeof p, "%s/held/shard.cfg", dl_test_dir);
    FILE *sf = fopen(p, "w");
    ck_assert_ptr_nonnull(sf);
    fclose(sf);
    expect_exit2(args, "shard.cfg (a shard's folder, not of a merge)", NULL);
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/s0' '%s/s1' '%s/s1' '%s/s2' --out '%s/m'", cfg, dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir);
    expect_exit2(args, "shard 1/3 given twice", NULL);
    /* a one-piece run or another shard number in a shard directory */
    snprintf(args, sizeof args, "experiment '%s' --out '%s/s1' --cache '%s/c' --resume", cfg, dl_test_dir, dl_test_dir);
    expect_exit2(args, "holds shard 1/3", NULL);
    snprintf(args, sizeof args, "experiment '%s' --shard 0/2 --out '%s/s1' --cache '%s/c' --resume", cfg, dl_test_dir, dl_test_dir);
    expect_exit2(args, "--shard: '0/2'", "holds shard 1/3");
    /* another sweep: the same name, other seeds */
    static char other[4096];
    snprintf(other, sizeof other, "%s", tiny_six);
    char *seeds = strstr(other, "seed = [3, 4, 5]");
    ck_assert_ptr_nonnull(seeds);
    memcpy(seeds, "seed = [3, 4, 6]", 16);
    const char *cfg2 = write_cfg("other.cfg", other);
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/s0' '%s/s1' '%s/s2' --out '%s/m'", cfg2, dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir);
    expect_exit2(args, "other sweep points", NULL);
    /* a row twice: shard 0's first row copied into shard 1 */
    dl_result_row *r0 = NULL, *r1 = NULL;
    int64_t n0 = 0, n1 = 0;
    char h0[512], h1[512];
    dl_test_path(h0, sizeof h0, "s0/results.h5");
    dl_test_path(h1, sizeof h1, "s1/results.h5");
    ck_assert_int_eq(dl_results_read(h0, &r0, &n0), 0);
    ck_assert_int_eq(dl_results_read(h1, &r1, &n1), 0);
    snprintf(p, sizeof p, "cp -r '%s/s1' '%s/s1x'", dl_test_dir, dl_test_dir);
    ck_assert_int_eq(system(p), 0);
    dl_test_path(h1, sizeof h1, "s1x/results.h5");
    ck_assert_int_eq(dl_results_append(h1, &r0[0], 1), 0);
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/s0' '%s/s1x' '%s/s2' --out '%s/m'", cfg, dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir);
    expect_exit2(args, "which is shard 0's", NULL);
    /* the same row twice within shard 1 */
    snprintf(p, sizeof p, "rm -rf '%s/s1x' && cp -r '%s/s1' '%s/s1x'", dl_test_dir, dl_test_dir, dl_test_dir);
    ck_assert_int_eq(system(p), 0);
    ck_assert_int_eq(dl_results_append(h1, &r1[1], 1), 0);
    expect_exit2(args, "twice", r1[1].variant);
    /* a row missing: shard 1 without its last row (its CSV twin gone too: append keeps a lost .h5's twin rows) */
    snprintf(p, sizeof p, "rm -rf '%s/s1x' && cp -r '%s/s1' '%s/s1x' && rm '%s/s1x/results.h5' '%s/s1x/results.csv'",
             dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir);
    ck_assert_int_eq(system(p), 0);
    ck_assert_int_eq(dl_results_append(h1, r1, n1 - 2), 0); /* the last point loses both its rows */
    expect_exit2(args, "rows missing", "no ref-<model> rows (shard 1/3");
    free(r0);
    free(r1);
    /* and the three good shards merge */
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/s0' '%s/s1' '%s/s2' --out '%s/m'", cfg, dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir);
    ck_assert_msg(run_bin(args, out, sizeof out) == 0, "%s", out);
    /* a shard whose results.h5 was lost but whose CSV twin came back (a copy that left out *.h5, as on
     * 2026-12-02): the merge reads the CSV, says so, and gives the same rows */
    snprintf(p, sizeof p, "rm -rf '%s/s1x' && cp -r '%s/s1' '%s/s1x' && rm '%s/s1x/results.h5'", dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir);
    ck_assert_int_eq(system(p), 0);
    snprintf(args, sizeof args, "experiment '%s' --merge '%s/s0' '%s/s1x' '%s/s2' --out '%s/m2'", cfg, dl_test_dir, dl_test_dir, dl_test_dir, dl_test_dir);
    ck_assert_msg(run_bin(args, out, sizeof out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "s1x has no results.h5: its rows are read from its CSV twin"), "%s", out);
    char **ta = NULL, **tb = NULL;
    dl_test_path(h0, sizeof h0, "m/results.h5");
    dl_test_path(h1, sizeof h1, "m2/results.h5");
    int na = rows_text(h0, &ta), nb = rows_text(h1, &tb);
    ck_assert_int_gt(na, 0);
    ck_assert_int_eq(nb, na);
    for (int i = 0; i < na; i++) ck_assert_str_eq(ta[i], tb[i]);
    free_text(ta, na);
    free_text(tb, nb);
    /* with neither file the shard's rows are missing, as before */
    snprintf(p, sizeof p, "rm '%s/s1x/results.csv'", dl_test_dir);
    ck_assert_int_eq(system(p), 0);
    expect_exit2(args, "rows missing", NULL);
}
END_TEST

/* ---------------------------------------------------------------- values as written */

/* A sweep value longer than a value holds is refused, naming it whole (it was cut to 63 characters and ran
 * --seq-len ...,1025,2: another case, unflagged). */
START_TEST(test_long_value_refused)
{
    const char *list = "1,7,33,64,100,128,255,256,257,511,512,513,1000,1023,1024,1025,2048";
    char t[4096];
    snprintf(t, sizeof t, "name = \"t1\"; question = \"q\";\nsweep = { batch = 17; seq_len = \"%s\"; };\n"
             "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"exact_o_rel_l2\"; num = { variant = \"ref-orig\"; }; hi = 1; } );\n",
             list);
    expect_bad(t, "sweep.seq_len", list, 1);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "longer than 63 characters"));
    snprintf(t, sizeof t, "name = \"t1\"; question = \"q\";\nsweep = { batch = 17; seq_len = [\"%s\", \"1:9\"]; };\n"
             "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"exact_o_rel_l2\"; num = { variant = \"ref-orig\"; }; hi = 1; } );\n",
             list);
    expect_bad(t, "sweep.seq_len", list, 1); /* as a list element too */
}
END_TEST

/* Load text as an experiment: 0 and its one point in *pt, or the error (one line naming bad.cfg). */
static int load_one_point(const char *text, dl_xp_point **pts)
{
    static dl_experiment x;
    const char *p = write_cfg("bad.cfg", text);
    int n = 0, rc = dl_xp_load(p, &x);
    if (!rc) rc = dl_xp_points(&x, 0, dl_test_dir, pts, &n);
    if (!rc) ck_assert_int_eq(n, 1);
    else ck_assert_msg(strstr(dl_last_error(), "bad.cfg") && !strchr(dl_last_error(), '\n'), "%s", dl_last_error());
    return rc;
}

/* An integer beyond 32 bits is its own value or refused with its line, never another number (libconfig 1.5
 * cut seed = [4294967301] to 5, batch = 4294967298 to 2, and named '1215752191' for 99999999999). */
START_TEST(test_big_integers)
{
    const char *head = "name = \"t1\"; question = \"q\";\n";
    const char *hyp = "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"exact_o_rel_l2\"; num = { variant = \"ref-orig\"; }; %s } );\n";
    char t[4096], h[512];
    dl_xp_point *pts = NULL;
    snprintf(h, sizeof h, hyp, "hi = 1;");
    /* out of golden's range: the error names the value written */
    const char *batches[] = {"4294967298", "99999999999", "4294967298L"};
    for (int i = 0; i < 3; i++) {
        snprintf(t, sizeof t, "%ssweep = {\n batch = %s; };\n%s", head, batches[i], h);
        expect_bad(t, "batch", i == 1 ? "'99999999999" : "'4294967298", 1);
        ck_assert_ptr_null(strstr(dl_last_error(), "1215752191"));
        ck_assert_ptr_null(strstr(dl_last_error(), "'2'"));
    }
    /* a seed beyond 32 bits runs as written, or (a libconfig that cuts it) is refused at its line */
    const char *seeds[] = {"[4294967301]", "4294967301", "[4294967301L]", "0x100000005"};
    for (int i = 0; i < 4; i++) {
        snprintf(t, sizeof t, "%ssweep = {\n seed = %s; };\n%s", head, seeds[i], h);
        if (load_one_point(t, &pts) == 0) {
            ck_assert_str_eq(dl_xp_point_value(&pts[0], "seed"), "4294967301");
            dl_xp_points_free(pts, 1);
        } else {
            const char *e = dl_last_error();
            ck_assert_msg(strstr(e, "bad.cfg:3: sweep.seed: ") && strstr(e, seeds[i][0] == '[' ? "'4294967301" : seeds[i]), "%s", e);
        }
    }
    /* beyond 64 bits: refused at its line */
    snprintf(t, sizeof t, "%ssweep = {\n seed = [99999999999999999999L]; };\n%s", head, h);
    ck_assert_int_ne(load_one_point(t, &pts), 0);
    ck_assert_msg(strstr(dl_last_error(), "bad.cfg:3"), "%s", dl_last_error());
    /* a rule's bound too */
    snprintf(h, sizeof h, hyp, "hi = 4294967297;");
    snprintf(t, sizeof t, "%ssweep = { seed = 1; };\n%s", head, h);
    static dl_experiment x;
    if (dl_xp_load(write_cfg("bad.cfg", t), &x) == 0) ck_assert(x.hyp[0].hi == 4294967297.0);
    else ck_assert_msg(strstr(dl_last_error(), "bad.cfg:3: hypotheses[0].hi: '4294967297'"), "%s", dl_last_error());
    /* big numbers in strings and comments are not integers */
    snprintf(h, sizeof h, hyp, "hi = 1;");
    snprintf(t, sizeof t, "name = \"t1\"; question = \"4294967298?\"; # 4294967298\n/* 4294967298 */ sweep = { seed = 1; };\n%s", h);
    ck_assert_msg(load_one_point(t, &pts) == 0, "%s", dl_last_error());
    dl_xp_points_free(pts, 1);
}
END_TEST

/* A float sweep value reaches `decodelab golden` as the double written (%.15g gave 0.123456789012346), and a
 * short one stays short (its cache name unchanged). */
START_TEST(test_float_round_trip)
{
    const char *vals[] = {"0.12345678901234567", "0.1", "1e-300"};
    const char *want[] = {NULL, "0.1", "1e-300"};
    for (int i = 0; i < 3; i++) {
        char t[1024];
        snprintf(t, sizeof t, "name = \"t1\"; question = \"q\"; sweep = { sm_scale = %s; };\n"
                 "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"exact_o_rel_l2\"; num = { variant = \"ref-orig\"; }; hi = 1; } );\n",
                 vals[i]);
        dl_xp_point *pts = NULL;
        ck_assert_msg(load_one_point(t, &pts) == 0, "%s", dl_last_error());
        const char *v = dl_xp_point_value(&pts[0], "sm_scale");
        ck_assert_msg(strtod(v, NULL) == strtod(vals[i], NULL), "%s passed on as %s", vals[i], v);
        if (want[i]) ck_assert_str_eq(v, want[i]);
        int found = 0;
        for (int k = 0; k + 1 < pts[0].argc; k++) found |= !strcmp(pts[0].argv[k], "--sm-scale") && !strcmp(pts[0].argv[k + 1], v);
        ck_assert(found);
        dl_xp_points_free(pts, 1);
    }
}
END_TEST

/* The experiment file must be a regular file that reads: a FIFO blocked forever; a folder, a missing or an
 * unreadable file said only "cannot read the experiment file". */
START_TEST(test_file_not_regular)
{
    static dl_experiment x;
    char path[512];
    dl_test_path(path, sizeof path, "fifo.cfg");
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    alarm(20); /* a read that blocks fails the test */
    ck_assert_int_ne(dl_xp_load(path, &x), 0);
    alarm(0);
    ck_assert_msg(strstr(dl_last_error(), path) && strstr(dl_last_error(), "not a regular file"), "%s", dl_last_error());
    ck_assert_int_ne(dl_xp_load(dl_test_dir, &x), 0);
    ck_assert_msg(strstr(dl_last_error(), strerror(EISDIR)), "%s", dl_last_error());
    dl_test_path(path, sizeof path, "none.cfg");
    ck_assert_int_ne(dl_xp_load(path, &x), 0);
    ck_assert_msg(strstr(dl_last_error(), path) && strstr(dl_last_error(), strerror(ENOENT)), "%s", dl_last_error());
    if (geteuid() != 0) { /* root reads it anyway */
        const char *p = write_cfg("locked.cfg", "name = \"t1\";\n");
        ck_assert_int_eq(chmod(p, 0), 0);
        ck_assert_int_ne(dl_xp_load(p, &x), 0);
        ck_assert_msg(strstr(dl_last_error(), strerror(EACCES)), "%s", dl_last_error());
    }
    char args[1024], out[4096];
    snprintf(args, sizeof args, "experiment '%s'", dl_test_dir);
    ck_assert_int_eq(run_bin(args, out, sizeof out), 2);
    ck_assert_msg(strstr(out, strerror(EISDIR)) && dl_test_lines(out) == 1, "%s", out);
}
END_TEST

/* A key of the wrong type names the key, the value and what is expected (num = "ref-orig" said
 * "num.variant: missing"); an @include that does not open, or names a folder or a FIFO, names its file. */
START_TEST(test_wrong_type_and_include)
{
    char t[4096];
    snprintf(t, sizeof t, "%s%s", BASE_SWEEP, "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"time_median_s\"; "
             "num = \"fp32-cast-simt\"; lo = 1; } );\n");
    expect_bad(t, "hypotheses[0].num", "'fp32-cast-simt'", 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "must be a group"));
    ck_assert_ptr_null(strstr(dl_last_error(), "missing"));
    snprintf(t, sizeof t, "%s%s", BASE_SWEEP, "hypotheses = ( { claim = \"c\"; kind = \"ratio\"; metric = \"time_median_s\"; "
             "num = { variant = \"fp32-cast-simt\"; }; den = [\"fp32-fast-simt\"]; lo = 1; } );\n");
    expect_bad(t, "hypotheses[0].den", "must be a group", 0);
    snprintf(t, sizeof t, "%s%s", BASE_SWEEP, "measure = 3;\nhypotheses = ( { claim = \"c\"; kind = \"value\"; "
             "metric = \"time_median_s\"; num = { variant = \"fp32-cast-simt\"; }; lo = 1; } );\n");
    expect_bad(t, "measure", "'3'", 0);
    expect_bad("name = \"t1\";\n@include \"no_such_xp_include.cfg\"\n", "bad.cfg:2: @include", "'no_such_xp_include.cfg'", 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), strerror(ENOENT)));
    /* a folder made libconfig's scanner exit the process ("input in flex scanner failed"), a FIFO blocked it: both
     * refused by name, from the file itself and from a file it includes */
    char folder[400], fifo[400], inc[400];
    dl_test_path(folder, sizeof folder, "inc_folder");
    dl_test_path(fifo, sizeof fifo, "inc_fifo");
    ck_assert_int_eq(mkdir(folder, 0755), 0);
    ck_assert_int_eq(mkfifo(fifo, 0644), 0);
    snprintf(t, sizeof t, "name = \"t1\";\n  @include \"%s\"\n", folder);
    expect_bad(t, "bad.cfg:2: @include", "not a regular file (a folder)", 0);
    snprintf(t, sizeof t, "name = \"t1\";\n@include \"%s\"\n", fifo);
    expect_bad(t, "bad.cfg:2: @include", "not a regular file (a FIFO)", 0);
    snprintf(t, sizeof t, "# a comment\n@include \"%s\"\n", fifo);
    dl_test_path(inc, sizeof inc, "inner.cfg");
    FILE *f = fopen(inc, "w");
    ck_assert_ptr_nonnull(f);
    fputs(t, f);
    fclose(f);
    snprintf(t, sizeof t, "name = \"t1\";\n@include \"%s\"\n", inc);
    static dl_experiment x;
    ck_assert_int_ne(dl_xp_load(write_cfg("bad.cfg", t), &x), 0);
    ck_assert_msg(strstr(dl_last_error(), "inner.cfg:2: @include") && strstr(dl_last_error(), "a FIFO"), "%s",
                  dl_last_error());
    rmdir(folder);
    unlink(fifo);
    unlink(inc);
}
END_TEST

/* ---------------------------------------------------------------- run directories and the cache */

static const char *one_point =
    "name = \"one\";\nquestion = \"q?\";\n"
    "sweep = { num_qo_heads = 4; num_kv_heads = 2; head_dim = 64; batch = 2; seq_len = 40; seed = 7; };\n"
    "models = \"exact,orig\";\n"
    "hypotheses = ( { claim = \"c\"; kind = \"value\"; metric = \"exact_o_rel_l2\"; num = { variant = \"ref-orig\"; }; hi = 1; } );\n";

/* --resume continues a one-piece run only of the same experiment and sweep (DIR/run.cfg), as a shard
 * directory does: another experiment's run was taken over, its report overwritten and rows mixed. */
START_TEST(test_resume_other_experiment_refused)
{
    static char two[1024], seed8[1024];
    char cfg1[256], cfg2[256], cfg3[256], out[8192], args[2048], report[512], saved[8192], now[8192], rows[512];
    snprintf(cfg1, sizeof cfg1, "%s", write_cfg("one.cfg", one_point));
    snprintf(two, sizeof two, "%s", one_point);
    memcpy(strstr(two, "\"one\""), "\"two\"", 5);
    snprintf(cfg2, sizeof cfg2, "%s", write_cfg("two.cfg", two)); /* write_cfg's buffer is reused */
    snprintf(args, sizeof args, "experiment '%s' --out '%s/o' --cache '%s/c'", cfg1, dl_test_dir, dl_test_dir);
    ck_assert_msg(run_bin(args, out, sizeof out) == 0, "%s", out);
    dl_test_path(report, sizeof report, "o/report.md");
    dl_test_path(rows, sizeof rows, "o/results.csv");
    dl_test_slurp(report, saved, sizeof saved);
    /* another experiment: refused, nothing written */
    snprintf(args, sizeof args, "experiment '%s' --out '%s/o' --cache '%s/c' --resume", cfg2, dl_test_dir, dl_test_dir);
    expect_exit2(args, "o/run.cfg: a run of experiment 'one', not of 'two'", NULL);
    dl_test_slurp(report, now, sizeof now);
    ck_assert_str_eq(now, saved);
    ck_assert_int_eq(count_lines_with(rows, "ref-orig"), 1);
    /* the same experiment with another sweep, or another cache */
    snprintf(seed8, sizeof seed8, "%s", one_point);
    memcpy(strstr(seed8, "seed = 7"), "seed = 8", 8);
    snprintf(cfg3, sizeof cfg3, "%s", write_cfg("seed8.cfg", seed8));
    snprintf(args, sizeof args, "experiment '%s' --out '%s/o' --cache '%s/c' --resume", cfg3, dl_test_dir, dl_test_dir);
    expect_exit2(args, "other sweep points", NULL);
    snprintf(args, sizeof args, "experiment '%s' --out '%s/o' --cache '%s/c2' --resume", cfg1, dl_test_dir, dl_test_dir);
    expect_exit2(args, "golden cache", NULL);
    ck_assert_int_eq(count_lines_with(rows, "ref-orig"), 1);
    /* its own experiment resumes */
    snprintf(args, sizeof args, "experiment '%s' --out '%s/o' --cache '%s/c' --resume", cfg1, dl_test_dir, dl_test_dir);
    ck_assert_msg(run_bin(args, out, sizeof out) == 0, "%s", out);
    /* a directory from before run.cfg: its verdicts.csv and rows say whose it is */
    char p[1024];
    snprintf(p, sizeof p, "rm '%s/o/run.cfg'", dl_test_dir);
    ck_assert_int_eq(system(p), 0);
    snprintf(args, sizeof args, "experiment '%s' --out '%s/o' --cache '%s/c' --resume", cfg2, dl_test_dir, dl_test_dir);
    expect_exit2(args, "verdicts.csv: a run of experiment 'one', not of 'two'", NULL);
    snprintf(args, sizeof args, "experiment '%s' --out '%s/o' --cache '%s/c' --resume", cfg3, dl_test_dir, dl_test_dir);
    expect_exit2(args, "no point of this sweep", NULL);
    snprintf(args, sizeof args, "experiment '%s' --out '%s/o' --cache '%s/c' --resume", cfg1, dl_test_dir, dl_test_dir);
    ck_assert_msg(run_bin(args, out, sizeof out) == 0, "%s", out);
    dl_test_path(p, sizeof p, "o/run.cfg");
    ck_assert_int_eq(count_lines_with(p, "experiment = \"one\""), 1);
}
END_TEST

/* Two experiments on one golden cache at once: a miss that the other run fills meanwhile is no failure
 * (it was: "'<cache>/<hash>.h5' exists (use --force...)"). A --binary wrapper makes the race certain: the
 * first golden waits until the second run has missed too; the second starts once the first's file exists. */
START_TEST(test_shared_cache_race)
{
    const char *cfg = write_cfg("one.cfg", one_point);
    char stub[512], o1[512], o2[512], cache[512], log1[512], log2[512];
    snprintf(stub, sizeof stub, "%s/race.sh", dl_test_dir);
    FILE *f = fopen(stub, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "#!/bin/sh\n"
            "if [ \"$1\" = golden ]; then\n"
            "  for a in \"$@\"; do [ \"$prev\" = --out ] && out=$a; prev=$a; done\n"
            "  i=0\n"
            "  if mkdir '%s/first' 2>/dev/null; then\n"
            "    while [ ! -d '%s/second' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n"
            "  else\n"
            "    mkdir '%s/second'\n"
            "    while [ ! -e \"$out\" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n"
            "  fi\n"
            "fi\n"
            "exec '%s' \"$@\"\n",
            dl_test_dir, dl_test_dir, dl_test_dir, dl_test_bin());
    fclose(f);
    ck_assert_int_eq(chmod(stub, 0755), 0);
    dl_test_path(o1, sizeof o1, "o1");
    dl_test_path(o2, sizeof o2, "o2");
    dl_test_path(cache, sizeof cache, "cache");
    dl_test_path(log1, sizeof log1, "run1.txt");
    dl_test_path(log2, sizeof log2, "run2.txt");
    const char *a1[] = {"experiment", cfg, "--out", o1, "--cache", cache, "--binary", stub, NULL};
    const char *a2[] = {"experiment", cfg, "--out", o2, "--cache", cache, "--binary", stub, NULL};
    pid_t p1 = dl_test_spawn(NULL, a1, log1, log1), p2 = dl_test_spawn(NULL, a2, log2, log2);
    int s1 = dl_test_wait(p1), s2 = dl_test_wait(p2);
    static char t1[16384], t2[16384];
    dl_test_slurp(log1, t1, sizeof t1);
    dl_test_slurp(log2, t2, sizeof t2);
    ck_assert_msg(s1 == 0 && s2 == 0, "status %d: %s\nstatus %d: %s", s1, t1, s2, t2);
    char second[512];
    dl_test_path(second, sizeof second, "second");
    ck_assert_int_eq(access(second, F_OK), 0); /* both generated: the race was run */
    ck_assert_ptr_nonnull(strstr(t1, "HOLDS"));
    ck_assert_ptr_nonnull(strstr(t2, "HOLDS"));
}
END_TEST

/* Two runs into one --out at once: the second is refused at once (exit 2, naming the directory and the lock),
 * not interleaved with the first, which then finishes. A --binary wrapper holds the first run's golden step
 * until the second has been refused. */
START_TEST(test_second_run_into_out_refused)
{
    const char *cfg = write_cfg("one.cfg", one_point);
    char stub[512], o[512], cache[512], log1[512], go[512];
    snprintf(stub, sizeof stub, "%s/hold.sh", dl_test_dir);
    dl_test_path(go, sizeof go, "go");
    FILE *f = fopen(stub, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "#!/bin/sh\n"
            "i=0; if [ \"$1\" = golden ]; then while [ ! -e '%s' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; fi\n"
            "exec '%s' \"$@\"\n",
            go, dl_test_bin());
    fclose(f);
    ck_assert_int_eq(chmod(stub, 0755), 0);
    dl_test_path(o, sizeof o, "o");
    dl_test_path(cache, sizeof cache, "cache");
    dl_test_path(log1, sizeof log1, "run1.txt");
    const char *a1[] = {"experiment", cfg, "--out", o, "--cache", cache, "--binary", stub, NULL};
    pid_t p1 = dl_test_spawn(NULL, a1, log1, log1);
    char lock[600];
    snprintf(lock, sizeof lock, "%s/.lock", o);
    for (int i = 0; i < 300 && access(lock, F_OK) != 0; i++) usleep(100000); /* the first run holds o */
    char args[2048];
    snprintf(args, sizeof args, "experiment '%s' --out '%s' --cache '%s' --resume", cfg, o, cache);
    expect_exit2(args, "is in use by another decodelab experiment", NULL);
    FILE *g = fopen(go, "w");
    ck_assert_ptr_nonnull(g);
    fclose(g);
    static char t1[16384];
    const int s1 = dl_test_wait(p1);
    dl_test_slurp(log1, t1, sizeof t1);
    ck_assert_msg(s1 == 0 && strstr(t1, "HOLDS"), "status %d: %s", s1, t1);
}
END_TEST

DL_TEST_SUITE("experiment", 120, setup, teardown,
              test_parse, test_validation, test_verdicts, test_census_verdict, test_selector_metric,
              test_end_to_end_and_resume, test_step_failure_named, test_shard_flag_validation, test_shard_merge_equals_one_piece,
              test_merge_refusals, test_long_value_refused, test_big_integers, test_float_round_trip,
              test_file_not_regular, test_wrong_type_and_include, test_resume_other_experiment_refused,
              test_shared_cache_race, test_second_run_into_out_refused, test_zero_denominators_and_refusals)

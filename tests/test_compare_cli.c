/* test_compare_cli.c - `decodelab compare` (binary in $DL_BIN) and the
 * candidate file (harness/candidate.c): candidates are written from a golden
 * file's own model outputs, so every expected error is known in closed form
 * (zero, one rounding, a 5 % scaling, a log-base mix-up); strict refusals
 * (format, version, hash, shape, dtype, LSE base, timing) exit 2 with one
 * line naming the field; the appended results row reads back; --out is checked before any scoring,
 * a FIFO is refused unread, a fixed-length UTF-8 dtype reads, a failed write names what failed. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness/dl_candidate.h"
#include "../harness/dl_compare.h"
#include "../harness/dl_golden.h"
#include "../harness/dl_results.h"
#include "../harness/dl_run.h"
#include "../ref/dl_formats.h"
#include "dl_test.h"
#include "golden_mutate.h"

static char gold[300], gold2[300], cand[300], res[300];
static dl_golden G;
static char hash[32];

static int64_t n_o(void) { return G.c.cfg.batch_size * G.c.cfg.num_qo_heads * G.c.cfg.head_dim; }
static int64_t n_l(void) { return G.c.cfg.batch_size * G.c.cfg.num_qo_heads; }

/* A candidate holding golden model m's outputs, o scaled by (1 + eps), in o_dtype; claiming the
 * golden model `model` and the compute `compute` (NULL: the attribute as dl_candidate_init leaves it). */
static void make_cand(dl_candidate *c, dl_model m, double eps, dl_dtype o_dtype, int lse_base, const char *model,
                      const char *compute)
{
    dl_candidate_init(c);
    if (model) snprintf(c->model, sizeof c->model, "%s", model);
    if (compute) snprintf(c->compute, sizeof c->compute, "%s", compute);
    snprintf(c->producer, sizeof c->producer, "unit-test 1.0");
    snprintf(c->backend, sizeof c->backend, "copy-%s", dl_model_name(m));
    snprintf(c->settings, sizeof c->settings, "golden model %s, eps %g", dl_model_name(m), eps);
    snprintf(c->golden_hash, sizeof c->golden_hash, "%s", hash);
    c->lse_base = lse_base;
    c->batch_size = G.c.cfg.batch_size;
    c->num_qo_heads = G.c.cfg.num_qo_heads;
    c->head_dim = G.c.cfg.head_dim;
    c->o_dtype = o_dtype;
    c->o = malloc((size_t)n_o() * sizeof(float));
    c->lse = malloc((size_t)n_l() * sizeof(float));
    ck_assert_ptr_nonnull(c->o);
    ck_assert_ptr_nonnull(c->lse);
    ck_assert(G.have[m]);
    for (int64_t i = 0; i < n_o(); i++) c->o[i] = (float)(G.out[m].o[i] * (1.0 + eps));
    for (int64_t i = 0; i < n_l(); i++) c->lse[i] = (float)G.out[m].lse[i];
}

/* Remove the results table res and its CSV twin (a twin left alone would keep its rows: the .h5 lost). */
static void unlink_res(void)
{
    char csv[320];
    dl_results_csv_path(res, csv, sizeof csv);
    unlink(res);
    unlink(csv);
}

static void write_cand(const dl_candidate *c, const char *path)
{
    ck_assert_msg(dl_candidate_write(path, c, 1) == 0, "write %s: %s", path, dl_last_error());
}

/* cand: the exact model's output, unchanged, as a float32 candidate */
static void write_exact_cand(void)
{
    dl_candidate c;
    make_cand(&c, DL_MODEL_EXACT, 0.0, DL_F32, 0, NULL, NULL);
    write_cand(&c, cand);
    dl_candidate_free(&c);
}

/* c written as cand, then the single row of a fresh results file after `compare gold cand --out res`
 * (with --model extra_model when it is not NULL). */
static int compare_to_row(const dl_candidate *c, const char *extra_model, dl_result_row *row)
{
    write_cand(c, cand);
    unlink_res();
    int rc = extra_model ? DL_RUN("compare", gold, cand, "--model", extra_model, "--out", res)
                         : DL_RUN("compare", gold, cand, "--out", res);
    if (rc > 1) return rc;
    dl_result_row *rows = NULL;
    int64_t n = 0;
    ck_assert_msg(dl_results_read(res, &rows, &n) == 0, "read %s: %s", res, dl_last_error());
    ck_assert_int_eq(n, 1);
    *row = rows[0];
    free(rows);
    return rc;
}

static void setup(void)
{
    dl_test_mkdir("compare");
    dl_test_path(gold, sizeof gold, "g.h5");
    dl_test_path(gold2, sizeof gold2, "g2.h5");
    dl_test_path(cand, sizeof cand, "cand.h5");
    dl_test_path(res, sizeof res, "res.h5");
    ck_assert_int_eq(access(dl_test_bin(), X_OK), 0);
    int rc = DL_RUN("golden", "--num-qo-heads", "8", "--num-kv-heads", "2", "--head-dim", "64", "--page-size", "16",
                 "--seq-len", "1,16,17,200", "--kv-dtype", "e4m3", "--models", "exact,fp32,bf16", "--seed", "5", "--out",
                 gold);
    ck_assert_msg(rc == 0, "golden failed (%d): %s", rc, dl_test_err);
    memset(&G, 0, sizeof G);
    ck_assert_msg(dl_golden_read(gold, &G) == 0, "%s", dl_last_error());
    dl_run_hash_string(dl_run_inputs_hash(&G.c), hash, sizeof hash);
}

static void teardown(void)
{
    dl_golden_free(&G);
    dl_test_rmdir();
}

START_TEST(help_and_hash)
{
    ck_assert_int_eq(DL_RUN("compare", "--help"), 0);
    ck_assert_ptr_nonnull(strstr(dl_test_out, "usage: decodelab compare"));
    ck_assert_int_eq(DL_RUN("--help"), 0);
    ck_assert_ptr_nonnull(strstr(dl_test_out, "compare"));
    /* the hash producers must write is the one run records */
    ck_assert_int_eq(DL_RUN("compare", "--golden-hash", gold), 0);
    char want[64];
    snprintf(want, sizeof want, "%s\n", hash);
    ck_assert_str_eq(dl_test_out, want);
    ck_assert_int_eq(strncmp(hash, "fnv1a64:", 8), 0);
    ck_assert_int_eq(strlen(hash), 24);
}
END_TEST

START_TEST(exact_copy_passes_vs_exact)
{
    dl_candidate c;
    make_cand(&c, DL_MODEL_EXACT, 0.0, DL_F32, 0, NULL, NULL);
    dl_result_row r;
    ck_assert_msg(compare_to_row(&c, NULL, &r) == 0, "%s%s", dl_test_out, dl_test_err);
    ck_assert_str_eq(r.variant, "ext:unit-test 1.0:copy-exact");
    ck_assert_str_eq(r.compute, "unknown");
    ck_assert_str_eq(r.unit, "unknown");
    ck_assert_str_eq(r.model, "exact"); /* no model claimed: judged against exact */
    ck_assert_str_eq(r.verdict, "PASS");
    ck_assert_str_eq(r.verdict_model, "-"); /* no model: the precision band decides */
    ck_assert_str_eq(r.verdict_exact, "within");
    ck_assert_str_eq(r.golden_hash, hash);
    ck_assert_int_eq(r.batch_size, 4);
    /* float32 of the exact values: every element within one rounding (2^-24 relative) */
    ck_assert(r.exact_o.rel_l2 <= ldexp(1.0, -24));
    ck_assert(r.exact_lse.max_abs <= ldexp(1.0, -24) * 64);
    ck_assert_int_eq(r.exact_o.n, n_o());
    ck_assert_int_eq(r.exact_o.nonfinite, 0);
    /* the band: bf16's vs-exact one for e4m3 when nothing is claimed */
    const dl_threshold *t = dl_threshold_vs_exact(DL_MODEL_BF16, DL_E4M3);
    ck_assert(r.band_o_rel_l2 == t->o_rel_l2 && r.band_lse_abs == t->lse_abs);
    /* no model: the band's limits, each row held to DL_BAND_HEAD_FACTOR x the band's o (o stored f32: unwidened) */
    ck_assert(r.limit_o_rel_l2 == t->o_rel_l2 && r.limit_lse_abs == t->lse_abs);
    ck_assert(r.limit_o_head_rel_l2 == DL_BAND_HEAD_FACTOR * t->o_rel_l2);
    ck_assert_str_eq(r.timing_mode, "none");
    ck_assert(isnan(r.time_median_s));
    ck_assert_ptr_nonnull(strstr(r.reason, "no model claimed"));
    ck_assert_ptr_nonnull(strstr(dl_test_out, "ext:unit-test 1.0:copy-exact"));
    dl_candidate_free(&c);
}
END_TEST

START_TEST(bf16_model_as_bf16_passes_at_bf16_level)
{
    dl_candidate c;
    make_cand(&c, DL_MODEL_BF16, 0.0, DL_BF16, 0, "bf16", "bf16");
    dl_result_row r;
    ck_assert_msg(compare_to_row(&c, NULL, &r) == 0, "%s%s", dl_test_out, dl_test_err);
    ck_assert_str_eq(r.model, "bf16");
    ck_assert_str_eq(r.compute, "bf16");
    ck_assert_str_eq(r.verdict_model, "PASS");
    /* storing o in bf16 rounds each element by at most 2^-8 relative (ties to even) */
    ck_assert(r.model_o.rel_l2 > 0 && r.model_o.rel_l2 <= ldexp(1.0, -8));
    /* the exact-side metric, computed here from the bf16 codes directly */
    double e2 = 0, r2 = 0;
    for (int64_t i = 0; i < n_o(); i++) {
        double x = dl_bf16_to_f32(dl_f32_to_bf16((float)G.out[DL_MODEL_BF16].o[i], DL_NOSAT));
        double d = x - G.out[DL_MODEL_EXACT].o[i];
        e2 += d * d;
        r2 += G.out[DL_MODEL_EXACT].o[i] * G.out[DL_MODEL_EXACT].o[i];
    }
    ck_assert_msg(fabs(r.exact_o.rel_l2 - sqrt(e2 / r2)) <= 1e-12 * sqrt(e2 / r2), "%.17g vs %.17g", r.exact_o.rel_l2,
                  sqrt(e2 / r2));
    ck_assert_str_eq(r.verdict_exact, sqrt(e2 / r2) <= dl_threshold_vs_exact(DL_MODEL_BF16, DL_E4M3)->o_rel_l2
                                          ? "within"
                                          : "above expected");
    /* the limits are widened by the bf16 output rounding: u + (1 + u) limit, u = 2^-8 */
    const dl_threshold *t = dl_threshold_impl(DL_MODEL_BF16);
    const double u = ldexp(1.0, -8);
    ck_assert(r.limit_o_rel_l2 == u + (1 + u) * t->o_rel_l2 && r.limit_lse_abs == t->lse_abs);
    ck_assert(r.limit_o_head_rel_l2 == u + (1 + u) * t->o_head_rel_l2);
    ck_assert(r.model_o.head_rel_l2 > 0 && r.model_o.head_rel_l2 <= u);
    ck_assert_ptr_nonnull(strstr(r.reason, "o stored as bf16"));
    /* f16 storage reads back too (rounding at most 2^-11 relative for these magnitudes) */
    dl_candidate_free(&c);
    make_cand(&c, DL_MODEL_BF16, 0.0, DL_F16, 0, "bf16", NULL);
    ck_assert_int_eq(compare_to_row(&c, NULL, &r), 0);
    ck_assert(r.model_o.rel_l2 > 0 && r.model_o.rel_l2 <= ldexp(1.0, -11));
    dl_candidate_free(&c);
}
END_TEST

START_TEST(perturbed_fails)
{
    dl_candidate c;
    make_cand(&c, DL_MODEL_EXACT, 0.05, DL_F32, 0, "fp32", NULL);
    dl_result_row r;
    ck_assert_int_eq(compare_to_row(&c, NULL, &r), 1);
    /* o scaled by 1.05: relative L2 against exact is 0.05 (up to float rounding) */
    ck_assert_msg(fabs(r.exact_o.rel_l2 - 0.05) < 1e-6, "%g", r.exact_o.rel_l2);
    ck_assert_str_eq(r.verdict, "FAIL");
    ck_assert_str_eq(r.verdict_model, "FAIL");
    ck_assert_str_eq(r.model, "fp32");
    /* --model none: judged against exact only, still 5 % off: FAIL */
    ck_assert_int_eq(compare_to_row(&c, "none", &r), 1);
    ck_assert_str_eq(r.model, "exact");
    /* a NaN in o is a FAIL, not a refusal */
    c.o[3] = NAN;
    snprintf(c.model, sizeof c.model, "exact");
    ck_assert_int_eq(compare_to_row(&c, NULL, &r), 1);
    ck_assert_int_eq(r.exact_o.nonfinite, 1);
    dl_candidate_free(&c);
}
END_TEST

START_TEST(log2_lse_converted)
{
    dl_candidate c;
    make_cand(&c, DL_MODEL_EXACT, 0.0, DL_F32, 2, NULL, NULL); /* the writer stores lse / ln 2 */
    dl_result_row r;
    ck_assert_int_eq(compare_to_row(&c, NULL, &r), 0);
    double maxl = 0;
    for (int64_t i = 0; i < n_l(); i++) maxl = fmax(maxl, fabs(G.out[DL_MODEL_EXACT].lse[i]));
    ck_assert(maxl > 0.5); /* a real test: the bases differ visibly on these values */
    ck_assert_msg(r.exact_lse.max_abs <= 4 * ldexp(maxl, -24), "%g", r.exact_lse.max_abs);
    /* the same log2 values declared natural: off by max |lse| (1/ln2 - 1) */
    for (int64_t i = 0; i < n_l(); i++) c.lse[i] = (float)(G.out[DL_MODEL_EXACT].lse[i] / log(2.0));
    c.lse_base = 0;
    ck_assert_int_eq(compare_to_row(&c, NULL, &r), 1);
    double want = maxl * (1 / log(2.0) - 1);
    ck_assert_msg(fabs(r.exact_lse.max_abs - want) <= 1e-5 * want, "%g vs %g", r.exact_lse.max_abs, want);
    /* without lse: judged on o alone */
    free(c.lse);
    c.lse = NULL;
    ck_assert_int_eq(compare_to_row(&c, NULL, &r), 0);
    ck_assert_int_eq(r.exact_lse.n, -1);
    ck_assert_ptr_nonnull(strstr(r.reason, "no lse"));
    dl_candidate_free(&c);
}
END_TEST

START_TEST(timing_columns_from_attributes)
{
    dl_candidate c;
    make_cand(&c, DL_MODEL_BF16, 0.0, DL_BF16, 2, "bf16", "fp32");
    snprintf(c.unit, sizeof c.unit, "simt");
    snprintf(c.timing_mode, sizeof c.timing_mode, "cold-l2");
    c.median_us = 100;
    c.min_us = 90;
    c.max_us = 120;
    c.stdrel = 0.004;
    c.samples = 12;
    c.converged = 1;
    c.peak_read_gbps = 4000;
    snprintf(c.device_name, sizeof c.device_name, "Test GPU");
    dl_result_row r;
    ck_assert_int_eq(compare_to_row(&c, NULL, &r), 0);
    ck_assert_str_eq(r.timing_mode, "cold-l2");
    ck_assert(r.time_median_s == 100e-6 && r.time_min_s == 90e-6 && r.time_max_s == 120e-6);
    ck_assert_int_eq(r.time_samples, 12);
    ck_assert_int_eq(r.time_converged, 1);
    ck_assert_str_eq(r.device_name, "Test GPU");
    ck_assert_str_eq(r.unit, "simt");
    /* bytes from the case in closed form: q bf16, K and V e4m3 of the exact tokens, scales, page table, o, lse */
    const dl_config *g = &G.c.cfg;
    int64_t tokens = 1 + 16 + 17 + 200, pages = 1 + 1 + 2 + 13;
    int64_t want = g->batch_size * g->num_qo_heads * g->head_dim * 2 + 2 * tokens * g->num_kv_heads * g->head_dim * 1 +
                   2 * g->num_kv_heads * 4 + 4 * ((g->batch_size + 1) + pages + g->batch_size) +
                   g->batch_size * g->num_qo_heads * g->head_dim * 4 + g->batch_size * g->num_qo_heads * 4;
    ck_assert_int_eq(r.bytes_total, want);
    ck_assert(fabs(r.gbps - want / 100e-6 / 1e9) <= 1e-12 * r.gbps);
    ck_assert(fabs(r.frac_peak - r.gbps / 4000) <= 1e-15);
    /* two candidates in one call: two rows, one append */
    unlink_res();
    char cand2[320];
    dl_test_path(cand2, sizeof cand2, "cand2.h5");
    snprintf(c.backend, sizeof c.backend, "second");
    write_cand(&c, cand2);
    ck_assert_int_eq(DL_RUN("compare", gold, cand, cand2, "--out", res), 0);
    dl_result_row *rows = NULL;
    int64_t n = 0;
    ck_assert_int_eq(dl_results_read(res, &rows, &n), 0);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(rows[1].variant, "ext:unit-test 1.0:second");
    free(rows);
    dl_candidate_free(&c);
}
END_TEST

/* Each damaged candidate: exit 2, one line on stderr holding `want`, no results file. */
static void refused(const char *want)
{
    unlink_res();
    int rc = DL_RUN("compare", gold, cand, "--out", res);
    ck_assert_msg(rc == 2, "expected exit 2 (%s), got %d: %s", want, rc, dl_test_err);
    ck_assert_msg(dl_test_lines(dl_test_err) == 1, "one line expected: %s", dl_test_err);
    ck_assert_msg(strstr(dl_test_err, want) != NULL, "'%s' not in: %s", want, dl_test_err);
    ck_assert_msg(strstr(dl_test_err, cand) != NULL || strstr(dl_test_err, "--model") != NULL, "file not named: %s", dl_test_err);
    ck_assert_int_eq(access(res, F_OK), -1);
}

START_TEST(refusals)
{
    dl_candidate c;
    make_cand(&c, DL_MODEL_EXACT, 0.0, DL_F32, 2, NULL, NULL);
    /* a string attribute set to a bad value (on the group or on /o) */
    static const struct {
        const char *obj, *name, *value, *want;
    } bad_str[] = {
        {"/", "format", "decodelab-golden", "format is 'decodelab-golden'"},
        {"/", "golden_hash", "fnv1a64:0000000000000000", "golden_hash is 'fnv1a64:0000000000000000'"},
        {"/", "lse_base", "10", "lse_base is '10'"},
        {"/o", "dtype", "e4m3", "dtype 'e4m3'"},
        {"/o", "dtype", "bf16", "HDF5 type is float"}, /* says bf16, holds float32 */
        {"/", "model", "fp16", "model is 'fp16'"},
        /* the axes hold the registry's values: "f32" fell back to bf16's band without a word */
        {"/", "compute", "f32", "compute is 'f32', expected one of fp32, bf16, fp8"},
        {"/", "dequant", "bittrick", "dequant is 'bittrick'"},
        {"/", "unit", "tensorcore", "unit is 'tensorcore'"},
    };
    for (size_t i = 0; i < sizeof bad_str / sizeof bad_str[0]; i++) {
        write_cand(&c, cand);
        ck_assert_int_eq(gm_set_attr_str(cand, bad_str[i].obj, bad_str[i].name, bad_str[i].value), 0);
        refused(bad_str[i].want);
    }
    write_cand(&c, cand);
    ck_assert_int_eq(gm_set_attr_i64(cand, "/", "format_version", 2), 0);
    refused("format_version is 2");
    write_cand(&c, cand);
    ck_assert_int_eq(gm_delete_attr(cand, "/", "producer"), 0);
    refused("producer is missing");
    write_cand(&c, cand);
    double neg = -3;
    ck_assert_int_eq(gm_set_attr(cand, "/", "median_us", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &neg), 0);
    refused("median_us is -3");
    write_cand(&c, cand);
    ck_assert_int_eq(gm_set_attr_i64(cand, "/", "samples", 12), 0);
    refused("median_us is missing");
    write_cand(&c, cand); /* elapsed_s and converged are timing attributes too */
    double three = 3, fifty = 50, nine = 9, eleven = 11, ten = 10;
    ck_assert_int_eq(gm_set_attr(cand, "/", "elapsed_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &three), 0);
    refused("median_us is missing");
    write_cand(&c, cand);
    ck_assert_int_eq(gm_set_attr_i64(cand, "/", "converged", 0), 0);
    refused("median_us is missing");
    write_cand(&c, cand); /* a mean outside min .. max */
    ck_assert_int_eq(gm_set_attr(cand, "/", "median_us", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &ten), 0);
    ck_assert_int_eq(gm_set_attr(cand, "/", "min_us", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &nine), 0);
    ck_assert_int_eq(gm_set_attr(cand, "/", "max_us", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &eleven), 0);
    ck_assert_int_eq(gm_set_attr(cand, "/", "mean_us", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &fifty), 0);
    refused("mean_us 50 is outside min_us 9 .. max_us 11");
    write_cand(&c, cand);
    ck_assert_int_eq(gm_delete(cand, "/o"), 0);
    refused("dataset /o is missing");
    /* wrong shapes: one request short; lse of the wrong length */
    c.batch_size--;
    write_cand(&c, cand);
    refused("has shape [3,8,64], expected [4,8,64]");
    c.batch_size++;
    write_cand(&c, cand);
    hsize_t ld[2] = {4, 7};
    ck_assert_int_eq(gm_replace(cand, "/lse", H5T_IEEE_F32LE, 2, ld, "f32"), 0);
    refused("/lse has shape [4,7]");
    /* a candidate made for another golden file (same shape, another seed) */
    int rc = DL_RUN("golden", "--num-qo-heads", "8", "--num-kv-heads", "2", "--head-dim", "64", "--page-size", "16",
                 "--seq-len", "1,16,17,200", "--kv-dtype", "e4m3", "--models", "exact", "--seed", "6", "--out", gold2);
    ck_assert_int_eq(rc, 0);
    dl_golden g2;
    memset(&g2, 0, sizeof g2);
    ck_assert_int_eq(dl_golden_read(gold2, &g2), 0);
    dl_run_hash_string(dl_run_inputs_hash(&g2.c), c.golden_hash, sizeof c.golden_hash);
    ck_assert_str_ne(c.golden_hash, hash);
    write_cand(&c, cand);
    refused("a candidate for another golden file");
    dl_golden_free(&g2);
    /* not HDF5; a bad --model */
    FILE *f = fopen(cand, "w");
    fputs("not hdf5\n", f);
    fclose(f);
    refused("not an HDF5 file");
    snprintf(c.golden_hash, sizeof c.golden_hash, "%s", hash);
    write_cand(&c, cand);
    unlink_res();
    ck_assert_int_eq(DL_RUN("compare", gold, cand, "--model", "fp16"), 2);
    ck_assert_ptr_nonnull(strstr(dl_test_err, "--model: 'fp16'"));
    ck_assert_int_eq(DL_RUN("compare", gold), 2);
    ck_assert_ptr_nonnull(strstr(dl_test_err, "missing CANDIDATE.h5"));
    dl_candidate_free(&c);
}
END_TEST

/* --out is checked before anything is scored or printed: a file that is not a results table (a golden file), a
 * missing directory, a CSV twin that is a directory (the .h5 must not be written alone) or a user's notes beside
 * a new table: exit 2, one line naming the path, nothing on stdout, every file as it was. A twin whose .h5 was
 * lost keeps its rows. */
START_TEST(out_checked_first)
{
    write_exact_cand(); /* the exact model's own output as cand */
    char notres[320], missing[320], r4[320], r4csv[320], notes_h5[320], notes[320], file[320];
    dl_test_path(notres, sizeof notres, "notres.h5");
    dl_test_path(missing, sizeof missing, "missingdir/r.h5");
    dl_test_path(r4, sizeof r4, "r4.h5");
    dl_test_path(r4csv, sizeof r4csv, "r4.csv");
    dl_test_path(notes_h5, sizeof notes_h5, "notes.h5");
    dl_test_path(notes, sizeof notes, "notes.csv");
    ck_assert_int_eq(gm_copy(gold, notres), 0);
    ck_assert_int_eq(mkdir(r4csv, 0755), 0);
    FILE *f = fopen(notes, "w");
    ck_assert_ptr_nonnull(f);
    fputs("my notes\n", f);
    fclose(f);
    const char *outs[] = {notres, missing, r4, notes_h5};
    const char *named[] = {notres, missing, r4csv, notes};
    const char *why[] = {"is not a results table", "No such file", "not a regular file", "not a results table's CSV twin"};
    for (int i = 0; i < 4; i++) {
        int rc = DL_RUN("compare", gold, cand, "--out", outs[i]);
        ck_assert_msg(rc == 2, "%s: exit %d: %s", outs[i], rc, dl_test_err);
        ck_assert_msg(dl_test_out[0] == 0, "%s: scored before the check:\n%s", outs[i], dl_test_out);
        ck_assert_msg(dl_test_lines(dl_test_err) == 1 && strstr(dl_test_err, named[i]) && strstr(dl_test_err, why[i]),
                      "%s: %s", outs[i], dl_test_err);
    }
    ck_assert(dl_test_same_bytes(gold, notres));
    ck_assert_int_eq(access(r4, F_OK), -1);
    ck_assert_int_eq(access(notes_h5, F_OK), -1);
    dl_test_slurp(notes, file, sizeof file);
    ck_assert_str_eq(file, "my notes\n");
    ck_assert(!dl_test_has_tmp(dl_test_dir));
    /* the .h5 lost, its twin kept: the next append holds the twin's 2 rows and the new one, in both files */
    unlink_res();
    ck_assert_int_eq(DL_RUN("compare", gold, cand, cand, "--out", res), 0);
    ck_assert_int_eq(unlink(res), 0);
    ck_assert_msg(DL_RUN("compare", gold, cand, "--out", res) == 0, "%s", dl_test_err);
    dl_result_row *rows = NULL;
    int64_t n = 0;
    ck_assert_int_eq(dl_results_read(res, &rows, &n), 0);
    ck_assert_int_eq(n, 3);
    free(rows);
    char csv[320];
    dl_results_csv_path(res, csv, sizeof csv);
    ck_assert_int_eq(dl_results_read_csv(csv, &rows, &n), 0);
    ck_assert_int_eq(n, 3);
    free(rows);
}
END_TEST

/* A FIFO (or anything not a regular file) as a candidate or as --out is refused at once, not read (which
 * would block forever): exit 2 naming it. Run under timeout(1): a hang is exit 124. */
START_TEST(fifo_refused)
{
    write_exact_cand(); /* the exact model's own output as cand */
    char fifo[320], fifo_out[320], cmd[2000];
    dl_test_path(fifo, sizeof fifo, "fifo.h5");
    dl_test_path(fifo_out, sizeof fifo_out, "fifo_out.h5");
    ck_assert_int_eq(mkfifo(fifo, 0644), 0);
    ck_assert_int_eq(mkfifo(fifo_out, 0644), 0);
    const char *args[][2] = {{fifo, ""}, {cand, fifo_out}};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "timeout 20 '%s' compare '%s' '%s' %s%s > '%s' 2> '%s'", dl_test_bin(), gold,
                 args[i][0], args[i][1][0] ? "--out " : "", args[i][1], dl_test_out_path, dl_test_err_path);
        int st = system(cmd);
        dl_test_slurp(dl_test_err_path, dl_test_err, sizeof dl_test_err);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "case %d: exit %d (124: blocked): %s", i,
                      WEXITSTATUS(st), dl_test_err);
        ck_assert_msg(strstr(dl_test_err, i ? fifo_out : fifo) && strstr(dl_test_err, "not a regular file"), "%s",
                      dl_test_err);
    }
}
END_TEST

/* The dtype attribute of /o and /lse as a fixed-length UTF-8 string (what some writers make) reads like the
 * variable-length one: the candidate is accepted and PASSes. */
START_TEST(fixed_utf8_dtype_accepted)
{
    write_exact_cand(); /* the exact model's own output as cand */
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 3);
    H5Tset_cset(t, H5T_CSET_UTF8);
    ck_assert_int_eq(gm_set_attr(cand, "/o", "dtype", t, t, "f32"), 0);
    ck_assert_int_eq(gm_set_attr(cand, "/lse", "dtype", t, t, "f32"), 0);
    H5Tclose(t);
    int rc = DL_RUN("compare", gold, cand);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, dl_test_err);
    ck_assert_ptr_nonnull(strstr(dl_test_out, "PASS"));
}
END_TEST

/* dl_candidate_write's failure names what failed (here the dataset /o: a shape HDF5 cannot make), never an
 * earlier, unrelated error; nothing is left behind. */
START_TEST(candidate_write_names_failure)
{
    dl_candidate c;
    make_cand(&c, DL_MODEL_EXACT, 0.0, DL_F32, 0, NULL, NULL);
    c.batch_size = -1; /* dims [2^64-1, ...]: H5Screate_simple refuses */
    dl_fail("an earlier error, already reported");
    ck_assert_int_ne(dl_candidate_write(cand, &c, 1), 0);
    ck_assert_msg(strstr(dl_last_error(), cand) && strstr(dl_last_error(), "dataset /o"), "%s", dl_last_error());
    ck_assert_int_eq(access(cand, F_OK), -1);
    ck_assert(!dl_test_has_tmp(dl_test_dir));
    dl_candidate_free(&c);
}
END_TEST

/* 1 when python3 imports `modules` (comma-separated); else prints "SKIP <test>: ..." and returns 0. */
static int have_python(const char *modules, const char *test)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "python3 -c 'import %s' > /dev/null 2>&1", modules);
    if (system(cmd) == 0) return 1;
    printf("SKIP %s: python3 with %s not found\n", test, modules);
    return 0;
}

/* flashinfer_decode.py ARGS (quoted by the caller), stdout and stderr into dl_test_out; its wait status. */
static int run_baseline(const char *args)
{
    const char *root = getenv("DL_ROOT") ? getenv("DL_ROOT") : ".";
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "python3 '%s/harness/baselines/flashinfer_decode.py' %s > '%s' 2>&1", root, args,
             dl_test_out_path);
    const int st = system(cmd);
    dl_test_slurp(dl_test_out_path, dl_test_out, sizeof dl_test_out);
    return st;
}

/* harness/baselines/flashinfer_decode.py without a GPU: its golden reader, its
 * Python FNV-1a hash and its candidate writer, checked by the C reader. Needs
 * python3 with h5py and numpy; says SKIP otherwise. */
START_TEST(python_baseline_writes_what_compare_reads)
{
    if (!have_python("h5py, numpy", "python_baseline_writes_what_compare_reads")) return;
    const char *root = getenv("DL_ROOT") ? getenv("DL_ROOT") : ".";
    char cmd[1400], fake[320];
    snprintf(cmd, sizeof cmd, "python3 '%s/harness/baselines/flashinfer_decode.py' '%s' --out-dir '%s' --fake-o bf16 > '%s' 2>&1",
             root, gold, dl_test_dir, dl_test_out_path);
    ck_assert_msg(system(cmd) == 0, "fake-o failed: %s", (dl_test_slurp(dl_test_out_path, dl_test_out, sizeof dl_test_out), dl_test_out));
    dl_test_path(fake, sizeof fake, "g.fake-bf16.cand.h5");
    unlink_res();
    ck_assert_msg(DL_RUN("compare", gold, fake, "--out", res) == 0, "%s%s", dl_test_out, dl_test_err);
    dl_result_row *rows = NULL;
    int64_t n = 0;
    ck_assert_int_eq(dl_results_read(res, &rows, &n), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(rows[0].variant, "ext:fake 0:golden-bf16");
    ck_assert_str_eq(rows[0].model, "bf16");
    /* its lse was written in log2 and converted back: within float rounding of the golden's */
    ck_assert(rows[0].model_lse.max_abs < 1e-5);
    ck_assert(rows[0].model_o.rel_l2 > 0 && rows[0].model_o.rel_l2 <= ldexp(1.0, -8));
    free(rows);
    /* per-head scales (this golden file's e4m3 default) are refused before torch is imported */
    snprintf(cmd, sizeof cmd, "python3 '%s/harness/baselines/flashinfer_decode.py' '%s' --out-dir '%s' > '%s' 2> '%s'",
             root, gold, dl_test_dir, dl_test_out_path, dl_test_err_path);
    int st = system(cmd);
    dl_test_slurp(dl_test_err_path, dl_test_err, sizeof dl_test_err);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "exit %d: %s", st, dl_test_err);
    ck_assert_ptr_nonnull(strstr(dl_test_err, "k_scale differs between KV heads"));
    ck_assert_int_eq(dl_test_lines(dl_test_err), 1);
}
END_TEST

/* flashinfer_decode.py --summary (issue 10's per-configuration table): the fastest PASS row of ours with a
 * 16-bit model and of any model, FlashInfer's fastest non-XQA backend whatever its verdict, XQA, and the
 * speed-ups, from a results CSV made here (a FAIL of ours is never "ours, best"). Needs python3 with numpy. */
START_TEST(python_summary_of_results)
{
    if (!have_python("numpy", "python_summary_of_results")) return;
    /* the rows in one file, then split over two (as from two device calls): the same line */
    const char *hdr = "golden_hash,config_name,variant,verdict,model,time_median_s,ref_read_s,frac_ref,bytes_kv\n";
    const char *rows[2] = {"h1,B=4 Hq=8 Hkv=2 kv=e4m3 len=64 D=128,bf16-x,PASS,bf16,100e-6,60e-6,0.6,2000000\n"
                           "h1,B=4 Hq=8 Hkv=2 kv=e4m3 len=64 D=128,fp8-y,PASS,fp8wg,75e-6,61e-6,0.81,2000000\n"
                           "h1,B=4 Hq=8 Hkv=2 kv=e4m3 len=64 D=128,bf16-wrong,FAIL,bf16,50e-6,60e-6,1.2,2000000\n",
                           "h1,B=4 Hq=8 Hkv=2 kv=e4m3 len=64 D=128,ext:fi 1:tc-fa2,FAIL,bf16,150e-6,,,2000000\n"
                           "h1,B=4 Hq=8 Hkv=2 kv=e4m3 len=64 D=128,ext:fi 1:cuda-core,PASS,bf16,200e-6,,,2000000\n"
                           "h1,B=4 Hq=8 Hkv=2 kv=e4m3 len=64 D=128,ext:fi 1:xqa,PASS,exact,92e-6,,,2000000\n"};
    char all[320], part[2][320], cmd[1800];
    dl_test_path(all, sizeof all, "summary.csv");
    dl_test_path(part[0], sizeof part[0], "ours.csv");
    dl_test_path(part[1], sizeof part[1], "theirs.csv");
    FILE *f = fopen(all, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s%s%s", hdr, rows[0], rows[1]);
    fclose(f);
    for (int i = 0; i < 2; i++) {
        ck_assert_ptr_nonnull(f = fopen(part[i], "w"));
        fprintf(f, "%s%s", hdr, rows[i]);
        fclose(f);
    }
    for (int split = 0; split < 2; split++) {
        snprintf(cmd, sizeof cmd, "--summary '%s' %s%s%s", split ? part[0] : all, split ? "'" : "",
                 split ? part[1] : "", split ? "'" : "");
        const int st = run_baseline(cmd);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit %d: %s", st, dl_test_out);
        ck_assert_msg(strstr(dl_test_out, "| B=4 Hq=8 Hkv=2 kv=e4m3 len=64 | 2 | 60.0 | 100.0 (bf16-x) | 0.600 | "
                                          "75.0 (fp8-y) | 150.0 (tc-fa2, FAIL) | 1.50x / 2.00x | 92.0 | 0.92x / 1.23x |") != NULL,
                      "split %d: %s", split, dl_test_out);
        ck_assert_int_eq(dl_test_lines(dl_test_out), 3); /* header, rule, one configuration */
        ck_assert_ptr_null(strstr(dl_test_out, "bf16-wrong"));
    }
    /* a later file supersedes: its row of (h1, bf16-x) replaces the earlier one, whichever order they come in */
    char redo[320];
    dl_test_path(redo, sizeof redo, "rerun.csv");
    ck_assert_ptr_nonnull(f = fopen(redo, "w"));
    fprintf(f, "%sh1,B=4 Hq=8 Hkv=2 kv=e4m3 len=64 D=128,bf16-x,PASS,bf16,90e-6,60e-6,0.667,2000000\n", hdr);
    fclose(f);
    for (int later = 0; later < 2; later++) {
        snprintf(cmd, sizeof cmd, "--summary '%s' '%s'", later ? all : redo, later ? redo : all);
        const int st = run_baseline(cmd);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit %d: %s", st, dl_test_out);
        ck_assert_msg(strstr(dl_test_out, later ? "| 90.0 (bf16-x) | 0.667 | 75.0 (fp8-y) | 150.0 (tc-fa2, FAIL) | "
                                                  "1.67x / 2.00x | 92.0 | 1.02x / 1.23x |"
                                                : "| 100.0 (bf16-x) | 0.600 | 75.0 (fp8-y) | 150.0 (tc-fa2, FAIL) | "
                                                  "1.50x / 2.00x | 92.0 | 0.92x / 1.23x |") != NULL,
                      "rerun %s: %s", later ? "last" : "first", dl_test_out);
        ck_assert_int_eq(dl_test_lines(dl_test_out), 3);
    }
    /* a CSV that is not a results table: exit 2, one line naming the file and the missing column */
    ck_assert_ptr_nonnull(f = fopen(part[0], "w"));
    fputs("variant,verdict\nbf16-x,PASS\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "--summary '%s'", part[0]);
    const int st = run_baseline(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "exit %d: %s", st, dl_test_out);
    ck_assert_ptr_nonnull(strstr(dl_test_out, "ours.csv: not a decodelab results table (no column 'golden_hash')"));
    ck_assert_int_eq(dl_test_lines(dl_test_out), 1);
}
END_TEST

/* flashinfer_decode.py --targets on a results CSV whose answer is known: per configuration the fastest PASS
 * variant's frac_ref against 0.91 and its row's page-order read over the reference (71 / 80 us), ours over FlashInfer's fastest non-XQA backend against 1.5x (e4m3 with
 * grouped heads) or 1.0x (a bf16 cache; an e4m3 MHA case), the frac_ref that target takes (1.5 x 71 / 140 us; 198 /
 * 190, above 1: beyond the read), 16-bit-model ours over XQA; then e4m3 / bf16. */
START_TEST(python_targets_of_results)
{
    if (!have_python("numpy", "python_targets_of_results")) return;
    char path[320], cmd[1200];
    dl_test_path(path, sizeof path, "targets.csv");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("golden_hash,config_name,variant,verdict,model,time_median_s,ref_read_s,ref_read_pages_s,frac_ref,bytes_kv\n"
          "h1,B=4 Hq=8 Hkv=2 kv=e4m3 len=64 D=128,bf16-x,PASS,bf16,100e-6,60e-6,66e-6,0.6,2000000\n"
          "h1,B=4 Hq=8 Hkv=2 kv=e4m3 len=64 D=128,fp8-y,PASS,fp8wg,75e-6,71e-6,80e-6,0.95,2000000\n"
          "h1,B=4 Hq=8 Hkv=2 kv=e4m3 len=64 D=128,bf16-wrong,FAIL,bf16,50e-6,60e-6,61e-6,1.2,2000000\n"
          "h1,B=4 Hq=8 Hkv=2 kv=e4m3 len=64 D=128,ext:fi 1:tc-fa2,FAIL,bf16,140e-6,,,,2000000\n"
          "h1,B=4 Hq=8 Hkv=2 kv=e4m3 len=64 D=128,ext:fi 1:xqa,PASS,exact,92e-6,,,,2000000\n"
          "h2,B=4 Hq=8 Hkv=2 kv=bf16 len=64 D=128,bf16-z,PASS,bf16,200e-6,198e-6,198e-6,0.99,4000000\n"
          "h2,B=4 Hq=8 Hkv=2 kv=bf16 len=64 D=128,ext:fi 1:cuda-core,PASS,bf16,190e-6,,,,4000000\n"
          "h3,B=2 Hq=4 Hkv=4 kv=e4m3 len=64 D=128,bf16-a,PASS,bf16,100e-6,50e-6,,0.5,1000000\n"
          "h3,B=2 Hq=4 Hkv=4 kv=e4m3 len=64 D=128,ext:fi 1:cuda-core,PASS,bf16,120e-6,,,,1000000\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "--targets '%s'", path);
    const int st = run_baseline(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit %d: %s", st, dl_test_out);
    const char *want[] = {
        "| B=4 Hq=8 Hkv=2 kv=e4m3 len=64 | fp8-y | 0.950: yes | 0.887 | 1.40x / 1.87x | 1.5x | no / yes | 0.761 | 0.92x: no |",
        "| B=4 Hq=8 Hkv=2 kv=bf16 len=64 | bf16-z | 0.990: yes | 1.000 | 0.95x / 0.95x | 1.0x | no / no | 1.042: beyond the read | - |",
        "| B=2 Hq=4 Hkv=4 kv=e4m3 len=64 | bf16-a | 0.500: no | - | 1.20x / 1.20x | 1.0x | yes / yes | 0.417 | - |",
        "| B=4 Hq=8 Hkv=2 len=64 | 100.0 | 200.0 | 0.500: yes |",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(dl_test_out, want[i]) != NULL, "missing '%s' in:\n%s", want[i], dl_test_out);
    ck_assert_int_eq(dl_test_lines(dl_test_out), 9); /* 2 + 3 rows, a blank line, 2 + 1 rows */
    ck_assert_ptr_null(strstr(dl_test_out, "bf16-wrong"));
}
END_TEST

/* With no model claimed the band decides, and since 2026-12-08 every (request, head) row too: one zeroed head of
 * 256 rows kept the global o error at 0.0625, under fp8's band (0.1), and passed; now it FAILs on its row (1.0 over
 * 5 x the band), and the limits and worst head are printed. The same copy unharmed passes. */
START_TEST(no_model_rows_judged)
{
    char big[300];
    dl_test_path(big, sizeof big, "g_rows.h5");
    int rc = DL_RUN("golden", "--num-qo-heads", "32", "--num-kv-heads", "8", "--head-dim", "64", "--page-size", "16",
                    "--batch", "8", "--seq-len", "64", "--kv-dtype", "e4m3", "--models", "exact", "--seed", "11",
                    "--out", big);
    ck_assert_msg(rc == 0, "golden failed (%d): %s", rc, dl_test_err);
    dl_golden gb;
    memset(&gb, 0, sizeof gb);
    ck_assert_int_eq(dl_golden_read(big, &gb), 0);
    const int64_t rows = gb.c.cfg.batch_size * gb.c.cfg.num_qo_heads, D = gb.c.cfg.head_dim;
    ck_assert_int_eq(rows, 256);
    dl_candidate c;
    dl_candidate_init(&c);
    snprintf(c.compute, sizeof c.compute, "fp8");
    snprintf(c.producer, sizeof c.producer, "unit-test 1.0");
    snprintf(c.backend, sizeof c.backend, "zeroed-head");
    snprintf(c.settings, sizeof c.settings, "exact with one head zeroed");
    dl_run_hash_string(dl_run_inputs_hash(&gb.c), c.golden_hash, sizeof c.golden_hash);
    c.batch_size = gb.c.cfg.batch_size;
    c.num_qo_heads = gb.c.cfg.num_qo_heads;
    c.head_dim = D;
    c.o_dtype = DL_F32;
    c.o = malloc((size_t)(rows * D) * sizeof(float));
    c.lse = malloc((size_t)rows * sizeof(float));
    ck_assert(c.o && c.lse);
    for (int64_t i = 0; i < rows * D; i++) c.o[i] = (float)gb.out[DL_MODEL_EXACT].o[i];
    for (int64_t i = 0; i < rows; i++) c.lse[i] = (float)gb.out[DL_MODEL_EXACT].lse[i];
    write_cand(&c, cand);
    unlink_res();
    ck_assert_int_eq(DL_RUN("compare", big, cand, "--out", res), 0); /* unharmed: PASS */
    for (int64_t d = 0; d < D; d++) c.o[(3 * 32 + 7) * D + d] = 0.0f; /* request 3, head 7 */
    write_cand(&c, cand);
    unlink_res();
    rc = DL_RUN("compare", big, cand, "--out", res);
    ck_assert_msg(rc == 1, "exit %d: %s", rc, dl_test_out);
    ck_assert_msg(strstr(dl_test_out, "worst head: row 103 (b=3 h=7)"), "%s", dl_test_out);
    dl_result_row *r = NULL;
    int64_t n = 0;
    ck_assert_int_eq(dl_results_read(res, &r, &n), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(r[0].verdict, "FAIL");
    ck_assert_msg(r[0].exact_o.rel_l2 < 0.1, "%g", r[0].exact_o.rel_l2);           /* the band alone passed it */
    ck_assert_msg(fabs(r[0].limit_o_head_rel_l2 - 5 * 0.1) < 1e-12, "%g", r[0].limit_o_head_rel_l2);
    ck_assert_msg(r[0].exact_o.head_rel_l2 > 0.99, "%g", r[0].exact_o.head_rel_l2);
    free(r);
    dl_candidate_free(&c);
    dl_golden_free(&gb);
}
END_TEST

/* No model claimed, o stored in 16 bits: the band's limits are widened by the storage roundoff, as the reason says
 * (the fp32 model's own output stored as bf16 failed fp32's band, 1e-5, on its rounding alone); the same output 2 %
 * off still fails. */
START_TEST(no_model_o_widened)
{
    dl_candidate c;
    make_cand(&c, DL_MODEL_FP32, 0.0, DL_BF16, 0, NULL, "fp32");
    dl_result_row r;
    ck_assert_int_eq(compare_to_row(&c, NULL, &r), 0);
    ck_assert_str_eq(r.verdict, "PASS");
    ck_assert_msg(r.exact_o.rel_l2 > 1e-4, "%g", r.exact_o.rel_l2); /* bf16's rounding is in it */
    ck_assert_msg(strstr(r.reason, "widened by its unit roundoff"), "%s", r.reason);
    dl_candidate_free(&c);
    make_cand(&c, DL_MODEL_FP32, 0.02, DL_BF16, 0, NULL, "fp32");
    ck_assert_int_eq(compare_to_row(&c, NULL, &r), 1);
    ck_assert_str_eq(r.verdict, "FAIL");
    dl_candidate_free(&c);
}
END_TEST

/* A golden file made with --kv-order reverse (E8): its bf16 model walked the cache backwards, which no forward
 * kernel computes; the candidate claiming it is judged by the bf16 band against exact and the row says so, with the
 * file's kv_order recorded (it FAILed, and the row's kv_order was empty). */
START_TEST(reverse_model_judged_by_band)
{
    char rev[300];
    dl_test_path(rev, sizeof rev, "g_rev.h5");
    int rc = DL_RUN("golden", "--num-qo-heads", "8", "--num-kv-heads", "2", "--head-dim", "64", "--page-size", "16",
                    "--seq-len", "1,16,17,200", "--kv-dtype", "e4m3", "--models", "exact,fp32,bf16", "--seed", "5",
                    "--kv-order", "reverse", "--out", rev);
    ck_assert_msg(rc == 0, "golden failed (%d): %s", rc, dl_test_err);
    dl_candidate c;
    make_cand(&c, DL_MODEL_BF16, 0.0, DL_F32, 0, "bf16", NULL); /* the forward bf16 model's output */
    write_cand(&c, cand);
    unlink_res();
    rc = DL_RUN("compare", rev, cand, "--out", res);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, dl_test_out);
    dl_result_row *r = NULL;
    int64_t n = 0;
    ck_assert_int_eq(dl_results_read(res, &r, &n), 0);
    ck_assert_str_eq(r[0].verdict, "PASS");
    ck_assert_str_eq(r[0].verdict_model, "-");
    ck_assert_str_eq(r[0].kv_order, "reverse");
    ck_assert_msg(strstr(r[0].reason, "in reverse (kv_order = reverse): judged by the bf16 band"), "%s", r[0].reason);
    free(r);
    /* the forward file judges it by its model, and records forward */
    dl_result_row fr;
    ck_assert_int_eq(compare_to_row(&c, NULL, &fr), 0);
    ck_assert_str_eq(fr.verdict_model, "PASS");
    ck_assert_str_eq(fr.kv_order, "forward");
    dl_candidate_free(&c);
}
END_TEST

DL_TEST_SUITE("compare_cli", 120, setup, teardown,
              help_and_hash, exact_copy_passes_vs_exact, bf16_model_as_bf16_passes_at_bf16_level, perturbed_fails,
              log2_lse_converted, timing_columns_from_attributes, refusals, python_baseline_writes_what_compare_reads,
              python_summary_of_results, python_targets_of_results, out_checked_first, fifo_refused,
              fixed_utf8_dtype_accepted, candidate_write_names_failure, no_model_rows_judged, no_model_o_widened,
              reverse_model_judged_by_band)

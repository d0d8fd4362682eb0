/* test_harness.c - Check suite for the CPU side of `decodelab run`: the
 * results writer (HDF5 + CSV twin, atomic append; version-1 tables still read),
 * timing statistics and the stop rule, variant selection by glob, bytes-moved
 * accounting, the read reference's expected count and checksum, the inputs
 * hash, and `run` on a machine without a GPU. No GPU is needed. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../gpu/dl_registry.h"
#include "../harness/dl_model_sched.h"
#include "../harness/dl_results.h"
#include "../harness/dl_run.h"
#include "../harness/dl_timing.h"
#include "dl_test.h"
#include "golden_mutate.h"

/* ---------------------------------------------------------------- helpers */

static char tmpdir[256];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/dl_test_harness.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    if (!d) return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(tmpdir);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    if (len) *len = (size_t)n;
    return b;
}

static int count_tmp_files(void)
{
    DIR *d = opendir(tmpdir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

/* A row with a distinct value in every column, derived from k. */
static void sample_row(dl_result_row *r, int k)
{
    dl_result_row_init(r);
    snprintf(r->golden_path, sizeof r->golden_path, "/tmp/g%d.h5", k);
    snprintf(r->golden_hash, sizeof r->golden_hash, "fnv1a64:%016x", 0xabc00 + k);
    snprintf(r->variant, sizeof r->variant, "fp32-cast-simt");
    snprintf(r->compute, sizeof r->compute, "fp32");
    snprintf(r->config_name, sizeof r->config_name, "B=%d Hq=32, \"quoted\" name", k);
    snprintf(r->seq_lens, sizeof r->seq_lens, "1,16,17,%d", 30 + k);
    snprintf(r->reason, sizeof r->reason, "line one\nline two, with comma");
    snprintf(r->verdict, sizeof r->verdict, k ? "PASS" : "SKIP");
    r->batch_size = 64 + k;
    r->head_dim = 128;
    r->seed = UINT64_C(0xFFFFFFFFFFFFFFF0) + (uint64_t)k; /* above INT64_MAX: must survive as unsigned */
    r->sm_scale = 1.0 / sqrt(128.0);
    r->model_o.rel_l2 = 1.25e-7 * (k + 1);
    r->exact_lse.max_rel = k ? INFINITY : NAN;
    r->time_median_s = 0.000127 + k * 1e-9;
    snprintf(r->timing_mode, sizeof r->timing_mode, k ? "cold-l2" : "hot-l2");
    snprintf(r->flush, sizeof r->flush, k ? "read" : "none");
    r->ref_read_pages_s = 3.8125e-5 + k * 1e-9;
    r->ref_read_contig_s = 3.75e-5 - k * 1e-9;
    r->ref_read_s = r->ref_read_contig_s;
    r->frac_ref = r->ref_read_s / r->time_median_s;
    r->bytes_total = INT64_C(134217728) + k;
    r->sm_clock_mhz_before = -1;
    r->dist_sink_tokens = 4 + k;
    r->dist_sink_delta = 6.5;
    snprintf(r->kv_order, sizeof r->kv_order, k ? "reverse" : "forward");
    r->p_scale = 256;
    r->p_underflow_frac = 0.25 + k;
    r->p_underflow_pred = 0.5;
    r->p_cast_nmse = 1.5e-4;
}

/* Parse one CSV record starting at *p (RFC 4180 quoting) into fields. */
static int csv_record(const char **p, char fields[][9000], int max)
{
    int n = 0;
    const char *s = *p;
    if (!*s) return 0;
    for (;;) {
        ck_assert_int_lt(n, max);
        char *out = fields[n];
        size_t k = 0;
        if (*s == '"') {
            s++;
            for (;;) {
                ck_assert(*s != 0);
                if (*s == '"' && s[1] == '"') {
                    out[k++] = '"';
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    out[k++] = *s++;
                }
            }
        } else {
            while (*s && *s != ',' && *s != '\n') out[k++] = *s++;
        }
        out[k] = 0;
        n++;
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s == '\n') s++;
        break;
    }
    *p = s;
    return n;
}

/* ---------------------------------------------------------------- results */

START_TEST(test_results_append_roundtrip)
{
    make_tmpdir();
    char h5[512], csv[600];
    snprintf(h5, sizeof h5, "%s/res.h5", tmpdir);
    dl_results_csv_path(h5, csv, sizeof csv);
    ck_assert_str_eq(csv + strlen(csv) - 8, "/res.csv");

    dl_result_row in[2];
    sample_row(&in[0], 0);
    sample_row(&in[1], 1);
    ck_assert_int_eq(dl_results_append(h5, &in[0], 1), 0);
    ck_assert_int_eq(dl_results_append(h5, &in[1], 1), 0);

    dl_result_row *out = NULL;
    int64_t n = 0;
    ck_assert_int_eq(dl_results_read(h5, &out, &n), 0);
    ck_assert_int_eq(n, 2);
    /* every column reads back as written */
    int nc = dl_results_num_columns();
    char a[9000], b[9000];
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < nc; i++) {
            dl_results_format_cell(&in[r], i, a, sizeof a);
            dl_results_format_cell(&out[r], i, b, sizeof b);
            ck_assert_msg(!strcmp(a, b), "row %d column %s: wrote '%s', read '%s'", r, dl_results_column_name(i), a, b);
        }
    ck_assert_uint_eq(out[1].seed, UINT64_C(0xFFFFFFFFFFFFFFF1));
    ck_assert(out[1].model_o.rel_l2 == 2.5e-7);
    ck_assert(isnan(out[0].exact_lse.max_rel) && isinf(out[1].exact_lse.max_rel));
    ck_assert(isnan(out[0].gbps)); /* never set: unknown */
    ck_assert_int_eq(out[0].time_samples, -1);
    ck_assert_str_eq(out[1].reason, "line one\nline two, with comma");
    ck_assert_str_eq(out[1].flush, "read");
    ck_assert(out[1].frac_ref == in[1].frac_ref && out[1].ref_read_pages_s == in[1].ref_read_pages_s);

    /* the CSV twin: header = column names, then the same two rows */
    char *text = slurp(csv, NULL);
    ck_assert_ptr_nonnull(text);
    const char *p = text;
    static char fields[200][9000];
    ck_assert_int_le(nc, 200);
    ck_assert_int_eq(csv_record(&p, fields, 200), nc);
    for (int i = 0; i < nc; i++) ck_assert_str_eq(fields[i], dl_results_column_name(i));
    /* the read reference's columns are in the table, the CSV carries them */
    const char *added[] = {"flush", "ref_read_s", "ref_read_pages_s", "ref_read_contig_s", "frac_ref"};
    for (int k = 0; k < 5; k++) {
        int found = 0;
        for (int i = 0; i < nc; i++) found |= !strcmp(fields[i], added[k]);
        ck_assert_msg(found, "CSV header lacks %s", added[k]);
    }
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(csv_record(&p, fields, 200), nc);
        for (int i = 0; i < nc; i++) {
            dl_results_format_cell(&in[r], i, a, sizeof a);
            ck_assert_msg(!strcmp(a, fields[i]), "csv row %d column %s: '%s' vs '%s'", r, dl_results_column_name(i),
                          fields[i], a);
        }
    }
    ck_assert_int_eq(csv_record(&p, fields, 200), 0);
    free(text);
    free(out);
    ck_assert_int_eq(count_tmp_files(), 0);
    remove_tmpdir();
}
END_TEST

START_TEST(test_results_atomic)
{
    make_tmpdir();
    char h5[512], csv[600];
    snprintf(h5, sizeof h5, "%s/res.h5", tmpdir);
    dl_results_csv_path(h5, csv, sizeof csv);
    dl_result_row r0, r1;
    sample_row(&r0, 0);
    sample_row(&r1, 1);
    ck_assert_int_eq(dl_results_append(h5, &r0, 1), 0);
    size_t n_h5, n_csv, n_h5b, n_csvb;
    char *h5_before = slurp(h5, &n_h5), *csv_before = slurp(csv, &n_csv);

    /* a write that fails after the temporaries are written leaves both files as they were */
    dl_results_fail_before_rename = 1;
    ck_assert_int_ne(dl_results_append(h5, &r1, 1), 0);
    dl_results_fail_before_rename = 0;
    char *h5_after = slurp(h5, &n_h5b), *csv_after = slurp(csv, &n_csvb);
    ck_assert_uint_eq(n_h5, n_h5b);
    ck_assert(!memcmp(h5_before, h5_after, n_h5));
    ck_assert_uint_eq(n_csv, n_csvb);
    ck_assert(!memcmp(csv_before, csv_after, n_csv));
    ck_assert_int_eq(count_tmp_files(), 0);
    dl_result_row *out = NULL;
    int64_t n = 0;
    ck_assert_int_eq(dl_results_read(h5, &out, &n), 0);
    ck_assert_int_eq(n, 1);
    free(out);
    free(h5_after);
    free(csv_after);

    /* a file that is not a results table is refused and left alone */
    char bad[512];
    snprintf(bad, sizeof bad, "%s/bad.h5", tmpdir);
    FILE *f = fopen(bad, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not an HDF5 file\n", f);
    fclose(f);
    ck_assert_int_ne(dl_results_append(bad, &r1, 1), 0);
    char *bad_after = slurp(bad, NULL);
    ck_assert_str_eq(bad_after, "not an HDF5 file\n");
    free(bad_after);
    ck_assert_int_eq(count_tmp_files(), 0);
    free(h5_before);
    free(csv_before);
    remove_tmpdir();
}
END_TEST

/* A version-1 table (written before the flush and read-reference columns):
 * its rows read with the new columns filled (flush from the timing mode, the
 * references NaN), an append upgrades it to version 2; a version-2 table
 * lacking one of them, or a later version, is refused. */
static int make_v1(const char *path)
{
    const char *added[] = {"/results/flush", "/results/ref_read_s", "/results/ref_read_pages_s",
                           "/results/ref_read_contig_s", "/results/frac_ref"};
    for (int k = 0; k < 5; k++)
        if (gm_delete(path, added[k])) return -1;
    return gm_set_attr_i64(path, "/", "format_version", 1);
}

/* A version-2 table (before E8's columns) reads with the version-3 columns unknown, and an append
 * rewrites it as version 3. */
START_TEST(test_results_version2)
{
    make_tmpdir();
    char h5[512];
    snprintf(h5, sizeof h5, "%s/v2.h5", tmpdir);
    dl_result_row in[2];
    sample_row(&in[0], 0);
    sample_row(&in[1], 1);
    ck_assert_int_eq(dl_results_append(h5, in, 2), 0);
    const char *added[] = {"/results/dist_sink_tokens", "/results/dist_sink_delta", "/results/kv_order",
                           "/results/p_scale", "/results/p_underflow_frac", "/results/p_underflow_pred",
                           "/results/p_cast_nmse"};
    for (int k = 0; k < 7; k++) ck_assert_int_eq(gm_delete(h5, added[k]), 0);
    ck_assert_int_eq(gm_set_attr_i64(h5, "/", "format_version", 2), 0);
    dl_result_row *out = NULL;
    int64_t n = 0;
    ck_assert_msg(dl_results_read(h5, &out, &n) == 0, "%s", dl_last_error());
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(out[1].dist_sink_tokens, -1);
    ck_assert(isnan(out[1].dist_sink_delta) && isnan(out[1].p_scale) && isnan(out[1].p_underflow_frac));
    ck_assert(isnan(out[1].p_underflow_pred) && isnan(out[1].p_cast_nmse));
    ck_assert_str_eq(out[1].kv_order, "");
    ck_assert_str_eq(out[1].flush, "read"); /* version-2 columns intact */
    free(out);
    dl_result_row extra;
    sample_row(&extra, 2);
    ck_assert_int_eq(dl_results_append(h5, &extra, 1), 0);
    ck_assert_int_eq(dl_results_read(h5, &out, &n), 0);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(out[2].kv_order, "reverse");
    ck_assert(out[2].p_underflow_frac == 2.25 && out[2].dist_sink_tokens == 6);
    ck_assert(isnan(out[0].p_cast_nmse));
    free(out);
    /* a version-3 table missing one of them is refused, naming it */
    ck_assert_int_eq(gm_delete(h5, "/results/p_cast_nmse"), 0);
    ck_assert_int_ne(dl_results_read(h5, &out, &n), 0);
    ck_assert_msg(strstr(dl_last_error(), "/results/p_cast_nmse") != NULL, "%s", dl_last_error());
    remove_tmpdir();
}
END_TEST

START_TEST(test_results_version1)
{
    make_tmpdir();
    char h5[512], csv[600];
    snprintf(h5, sizeof h5, "%s/old.h5", tmpdir);
    dl_results_csv_path(h5, csv, sizeof csv);
    /* cold-l2 ours, hot-l2 ours, cold-l2 external, untimed */
    const char *modes[4] = {"cold-l2", "graph-hot-l2", "cold-l2", "none"};
    const char *want[4] = {"write", "none", "unknown", "none"};
    dl_result_row in[4];
    for (int k = 0; k < 4; k++) {
        sample_row(&in[k], k + 1);
        snprintf(in[k].timing_mode, sizeof in[k].timing_mode, "%s", modes[k]);
        snprintf(in[k].kernel_file, sizeof in[k].kernel_file, "%s", k == 2 ? "external" : "gpu/decode_simt.cu");
    }
    ck_assert_int_eq(dl_results_append(h5, in, 4), 0);
    ck_assert_int_eq(make_v1(h5), 0);
    dl_result_row *out = NULL;
    int64_t n = 0;
    ck_assert_msg(dl_results_read(h5, &out, &n) == 0, "%s", dl_last_error());
    ck_assert_int_eq(n, 4);
    for (int k = 0; k < 4; k++) {
        ck_assert_str_eq(out[k].flush, want[k]);
        ck_assert(isnan(out[k].ref_read_s) && isnan(out[k].ref_read_pages_s) && isnan(out[k].ref_read_contig_s));
        ck_assert(isnan(out[k].frac_ref));
        ck_assert(out[k].time_median_s == in[k].time_median_s && out[k].seed == in[k].seed);
        ck_assert_str_eq(out[k].config_name, in[k].config_name);
    }
    free(out);

    /* appending rewrites it as version 2, the old rows with their filled-in values */
    dl_result_row extra;
    sample_row(&extra, 9);
    ck_assert_int_eq(dl_results_append(h5, &extra, 1), 0);
    ck_assert_int_eq(dl_results_read(h5, &out, &n), 0);
    ck_assert_int_eq(n, 5);
    ck_assert_str_eq(out[0].flush, "write");
    ck_assert_str_eq(out[2].flush, "unknown");
    ck_assert_str_eq(out[4].flush, "read");
    ck_assert(out[4].frac_ref == extra.frac_ref);
    free(out);
    char *text = slurp(csv, NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, ",frac_ref,"));
    free(text);
    hid_t f = gm_open(h5);
    ck_assert_int_ge(f, 0);
    int64_t ver = 0;
    hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
    ck_assert_int_ge(H5Aread(a, H5T_NATIVE_INT64, &ver), 0);
    H5Aclose(a);
    H5Fclose(f);
    ck_assert_int_eq(ver, DL_RESULTS_VERSION);

    /* a version-2 table without one of the new columns is refused, naming it */
    ck_assert_int_eq(gm_delete(h5, "/results/ref_read_contig_s"), 0);
    ck_assert_int_ne(dl_results_read(h5, &out, &n), 0);
    ck_assert_msg(strstr(dl_last_error(), "/results/ref_read_contig_s") != NULL, "%s", dl_last_error());
    /* so is a version this program does not know */
    ck_assert_int_eq(gm_set_attr_i64(h5, "/", "format_version", DL_RESULTS_VERSION + 1), 0);
    ck_assert_int_ne(dl_results_read(h5, &out, &n), 0);
    ck_assert_msg(strstr(dl_last_error(), "format_version") != NULL, "%s", dl_last_error());
    ck_assert_int_eq(gm_set_attr_i64(h5, "/", "format_version", 0), 0);
    ck_assert_int_ne(dl_results_read(h5, &out, &n), 0);
    remove_tmpdir();

    /* a table written by the version-1 writer itself (the fuzz seed, committed before version 2) */
    const char *root = getenv("DL_ROOT");
    char seed[600];
    snprintf(seed, sizeof seed, "%s/tests/fuzz/corpus/results/one_row.h5", root ? root : ".");
    ck_assert_msg(dl_results_read(seed, &out, &n) == 0, "%s: %s", seed, dl_last_error());
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(out[0].timing_mode, "none");
    ck_assert_str_eq(out[0].flush, "none");
    ck_assert(isnan(out[0].frac_ref));
    free(out);
}
END_TEST

/* ---------------------------------------------------------------- timing */

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

/* ---------------------------------------------------------------- selection */

static int count_prefix(const char *prefix)
{
    int n = 0;
    for (int i = 0; i < dl_num_variants; i++) n += !strncmp(dl_variants[i].name, prefix, strlen(prefix));
    return n;
}

static int count_suffix(const char *suffix)
{
    int n = 0;
    for (int i = 0; i < dl_num_variants; i++) {
        size_t a = strlen(dl_variants[i].name), b = strlen(suffix);
        n += a >= b && !strcmp(dl_variants[i].name + a - b, suffix);
    }
    return n;
}

START_TEST(test_variant_selection)
{
    ck_assert_int_gt(dl_num_variants, 0);
    const dl_variant **sel = calloc((size_t)dl_num_variants, sizeof *sel);
    int n = -1;
    ck_assert_int_eq(dl_run_select(NULL, sel, &n), 0);
    ck_assert_int_eq(n, dl_num_variants);
    for (int i = 0; i < n; i++) ck_assert_ptr_eq(sel[i], &dl_variants[i]); /* registry order */
    ck_assert_int_eq(dl_run_select("*", sel, &n), 0);
    ck_assert_int_eq(n, dl_num_variants);

    int nfp32 = count_prefix("fp32-");
    if (nfp32 > 0) {
        ck_assert_int_eq(dl_run_select("fp32-*", sel, &n), 0);
        ck_assert_int_eq(n, nfp32);
        for (int i = 0; i < n; i++) ck_assert(!strncmp(sel[i]->name, "fp32-", 5));
    }
    /* one exact name plus a suffix glob: the union, no duplicates */
    const char *first = dl_variants[0].name;
    int nmma = count_suffix("-mma");
    int first_is_mma = strlen(first) > 4 && !strcmp(first + strlen(first) - 4, "-mma");
    char globs[128];
    snprintf(globs, sizeof globs, "*-mma,%s", first);
    if (nmma > 0) {
        ck_assert_int_eq(dl_run_select(globs, sel, &n), 0);
        ck_assert_int_eq(n, nmma + !first_is_mma);
        ck_assert_ptr_eq(sel[0], &dl_variants[0]);
    }
    ck_assert_int_eq(dl_run_select(first, sel, &n), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(sel[0]->name, first);
    /* a pattern that matches nothing is an error, also inside a list */
    ck_assert_int_ne(dl_run_select("no-such-variant*", sel, &n), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "no-such-variant*"));
    snprintf(globs, sizeof globs, "%s,nope", first);
    ck_assert_int_ne(dl_run_select(globs, sel, &n), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "nope"));
    free(sel);
}
END_TEST

/* ---------------------------------------------------------------- bytes, hash */

/* B=2, Hq=4, Hkv=2, D=8, page 4, q bf16, kv e4m3; lengths 5 (pages 2,0, last 1) and 4 (page 1, last 4). */
typedef struct {
    dl_case c;
    uint16_t q[2 * 4 * 8];
    uint8_t k[3 * 4 * 2 * 8], v[3 * 4 * 2 * 8];
    float ks[2], vs[2];
    int32_t indptr[3], indices[3], last[2];
} small_case;

static void build_small(small_case *s)
{
    memset(s, 0, sizeof *s);
    dl_config_default(&s->c.cfg);
    dl_config *g = &s->c.cfg;
    g->batch_size = 2;
    g->num_qo_heads = 4;
    g->num_kv_heads = 2;
    g->head_dim = 8;
    g->page_size = 4;
    g->q_dtype = DL_BF16;
    g->kv_dtype = DL_E4M3;
    g->num_explicit_lens = 2;
    g->explicit_lens[0] = 5;
    g->explicit_lens[1] = 4;
    g->seq_len_min = 4;
    g->seq_len_max = 5;
    s->c.num_pages = 3;
    for (size_t i = 0; i < sizeof s->q / 2; i++) s->q[i] = (uint16_t)(0x3f80 + i);
    for (size_t i = 0; i < sizeof s->k; i++) {
        s->k[i] = (uint8_t)(i * 7);
        s->v[i] = (uint8_t)(i * 13);
    }
    s->ks[0] = s->ks[1] = s->vs[0] = s->vs[1] = 0.5f;
    int32_t indptr[] = {0, 2, 3}, indices[] = {2, 0, 1}, last[] = {1, 4};
    memcpy(s->indptr, indptr, sizeof indptr);
    memcpy(s->indices, indices, sizeof indices);
    memcpy(s->last, last, sizeof last);
    s->c.q = s->q;
    s->c.k_cache = s->k;
    s->c.v_cache = s->v;
    s->c.k_scale = s->ks;
    s->c.v_scale = s->vs;
    s->c.kv_indptr = s->indptr;
    s->c.kv_indices = s->indices;
    s->c.kv_last_page_len = s->last;
}

/* The tensor-core kernels have their model parameters built in (64-token tile = kv_block,
 * P as e4m3(p*448), fp8acc promotion every 2 blocks): a golden file made with other values
 * must make them SKIP with the parameter named, never run and FAIL; the accumulator width
 * stays free (the FP8 accumulator experiment varies it on purpose). */
START_TEST(test_variant_params)
{
    dl_model_params p;
    char why[256];
    const char *tiled[] = {"bf16-cast-mma", "bf16-fast-mma", "fp8-none-mma", "fp8acc-none-mma"};
    for (int i = 0; i < 4; i++) {
        const dl_variant *v = dl_variant_find(tiled[i]);
        ck_assert_ptr_nonnull(v);
        ck_assert_ptr_nonnull(v->params_ok);
        dl_model_params_default(&p);
        ck_assert_int_eq(v->params_ok(v, &p, why, sizeof why), 1);
        p.acc_mantissa_bits = 13;
        p.acc_block = 16;
        ck_assert_int_eq(v->params_ok(v, &p, why, sizeof why), 1);
        p.kv_block = 32;
        ck_assert_int_eq(v->params_ok(v, &p, why, sizeof why), 0);
        ck_assert_msg(strstr(why, "kv_block = 32") != NULL, "%s: %s", tiled[i], why);
    }
    const dl_variant *f8 = dl_variant_find("fp8-none-mma"), *f8a = dl_variant_find("fp8acc-none-mma");
    dl_model_params_default(&p);
    p.p_scale = 240.0f;
    ck_assert_int_eq(f8->params_ok(f8, &p, why, sizeof why), 0);
    ck_assert_msg(strstr(why, "p_scale = 240") != NULL, "%s", why);
    dl_model_params_default(&p);
    p.acc_promote_blocks = 4;
    ck_assert_int_eq(f8->params_ok(f8, &p, why, sizeof why), 1); /* fp8 has no promotion */
    ck_assert_int_eq(f8a->params_ok(f8a, &p, why, sizeof why), 0);
    ck_assert_msg(strstr(why, "acc_promote_blocks = 4") != NULL, "%s", why);
    /* the CUDA-core kernels take any parameters */
    ck_assert_ptr_null(dl_variant_find("fp32-cast-simt")->params_ok);
    ck_assert_ptr_null(dl_variant_find("bf16-fast-simt")->params_ok);
    /* ... but no kernel iterates in reverse: every variant SKIPs a reverse golden, naming kv_order */
    for (int v = 0; v < dl_num_variants; v++) {
        dl_model_params_default(&p);
        p.kv_order = DL_KV_REVERSE;
        why[0] = 0;
        ck_assert_int_eq(dl_run_params_ok(&dl_variants[v], &p, why, sizeof why), 0);
        ck_assert_msg(strstr(why, "kv_order = reverse") != NULL, "%s: %s", dl_variants[v].name, why);
    }
    dl_model_params_default(&p);
    ck_assert_int_eq(dl_run_params_ok(dl_variant_find("fp32-cast-simt"), &p, why, sizeof why), 1);
    p.p_scale = 256.0f;
    ck_assert_int_eq(dl_run_params_ok(f8, &p, why, sizeof why), 0);
}
END_TEST

/* The split count a variant launches with: the resolved count, or 1 for the FP8 kernels (never
 * split) and the planned streaming family (it schedules itself); --resume matches on it. */
START_TEST(test_variant_splits)
{
    ck_assert_int_eq(dl_variant_splits(dl_variant_find("bf16-fast-mma"), 4), 4);
    ck_assert_int_eq(dl_variant_splits(dl_variant_find("fp32-cast-simt"), 3), 3);
    ck_assert_int_eq(dl_variant_splits(dl_variant_find("fp8-none-mma"), 4), 1);
    ck_assert_int_eq(dl_variant_splits(dl_variant_find("bf16-hw-stream"), 4), 1);
    ck_assert_int_eq(dl_variant_splits(dl_variant_find("bf16-fast-mma"), 0), 1);
    for (int i = 0; i < dl_num_variants; i++)
        ck_assert_int_eq(dl_variants[i].splits, !(dl_variants[i].compute == DL_COMPUTE_FP8 || dl_variants[i].plan ||
                                                  dl_variants[i].unit == DL_UNIT_STREAM));
}
END_TEST

START_TEST(test_bytes_moved)
{
    static small_case s;
    build_small(&s);
    ck_assert_int_eq(dl_case_seq_len(&s.c, 0), 5);
    ck_assert_int_eq(dl_case_seq_len(&s.c, 1), 4);
    dl_bytes b;
    dl_run_bytes(&s.c, &b);
    /* by hand: q 2*4*8*2 B; K+V over 9 tokens 2*9*2*8*1; whole pages 2*3*4*2*8;
     * scales 2*2*4; page table (3+3+2)*4; o 2*4*8*4; lse 2*4*4 */
    ck_assert_int_eq(b.q, 128);
    ck_assert_int_eq(b.kv, 288);
    ck_assert_int_eq(b.kv_pages, 384);
    ck_assert_int_eq(b.scales, 16);
    ck_assert_int_eq(b.page_table, 32);
    ck_assert_int_eq(b.o, 256);
    ck_assert_int_eq(b.lse, 32);
    ck_assert_int_eq(b.total, 128 + 288 + 16 + 32 + 256 + 32);

    dl_result_row r;
    dl_result_row_init(&r);
    dl_run_fill_config(&r, "x.h5", &s.c);
    ck_assert_str_eq(r.seq_lens, "5,4");
    ck_assert_int_eq(r.total_tokens, 9);
    ck_assert_int_eq(r.max_seq_len, 5);
    ck_assert_int_eq(r.num_pages, 3);
    ck_assert_str_eq(r.kv_dtype, "e4m3");
    ck_assert_str_eq(r.q_dtype, "bf16");
    ck_assert_double_eq_tol(r.sm_scale, 1.0 / sqrt(8.0), 1e-15);
}
END_TEST

START_TEST(test_inputs_hash)
{
    static small_case a, b;
    build_small(&a);
    build_small(&b);
    uint64_t ha = dl_run_inputs_hash(&a.c);
    ck_assert(ha == dl_run_inputs_hash(&b.c));
    /* FNV-1a 64 of the empty input is its offset basis; ours covers the data, so differs */
    ck_assert(ha != UINT64_C(0xcbf29ce484222325));
    b.v[191] ^= 1; /* last byte of the V cache */
    ck_assert(ha != dl_run_inputs_hash(&b.c));
    b.v[191] ^= 1;
    b.indices[0] = 1; /* page table */
    b.indices[2] = 2;
    ck_assert(ha != dl_run_inputs_hash(&b.c));
    char str[32];
    dl_run_hash_string(UINT64_C(0x0123456789abcdef), str, sizeof str);
    ck_assert_str_eq(str, "fnv1a64:0123456789abcdef");
}
END_TEST

/* The read reference's expected bytes and xor-fold, recomputed here by hand:
 * NHD token rows are Hkv*D bytes at (page*page_size + slot)*Hkv*D, HND rows of
 * one head D bytes at ((page*Hkv + h)*page_size + slot)*D. */
static uint32_t fold_ref(const uint8_t *p, int64_t off, int64_t n)
{
    uint32_t x = 0;
    for (int64_t i = off; i < off + n; i++) {
        uint32_t word = (uint32_t)p[i] << (8 * (i % 4));
        x ^= word;
    }
    return x;
}

START_TEST(test_read_sum)
{
    static small_case s;
    build_small(&s);
    const int lens[2] = {5, 4};
    for (int layout = 0; layout < 2; layout++) {
        s.c.cfg.kv_layout = layout ? DL_HND : DL_NHD;
        uint32_t want = 0;
        for (int b = 0; b < 2; b++)
            for (int t = 0; t < lens[b]; t++) {
                int64_t page = s.indices[s.indptr[b] + t / 4], slot = t % 4;
                for (int h = 0; h < 2; h++) {
                    int64_t off = layout ? ((page * 2 + h) * 4 + slot) * 8 : (page * 4 + slot) * 16 + h * 8;
                    want ^= fold_ref(s.k, off, 8) ^ fold_ref(s.v, off, 8);
                }
            }
        int64_t bytes = 0;
        uint32_t x = 0;
        dl_run_read_sum(&s.c, 0, &bytes, &x);
        ck_assert_int_eq(bytes, 288); /* = dl_run_bytes kv (test_bytes_moved) */
        ck_assert_msg(x == want, "layout %d: %08x, by hand %08x", layout, x, want);
        /* contiguous: the first 144 bytes of each cache */
        dl_run_read_sum(&s.c, 1, &bytes, &x);
        ck_assert_int_eq(bytes, 288);
        ck_assert(x == (fold_ref(s.k, 0, 144) ^ fold_ref(s.v, 0, 144)));
    }
    /* a byte lands at bits 8*(offset % 4): one byte changed at offset 6 flips bits 16..23 */
    s.c.cfg.kv_layout = DL_NHD;
    int64_t bytes;
    uint32_t x0, x1;
    dl_run_read_sum(&s.c, 1, &bytes, &x0);
    s.k[6] ^= 0x5A;
    dl_run_read_sum(&s.c, 1, &bytes, &x1);
    ck_assert_uint_eq(x0 ^ x1, 0x5Au << 16);
    /* the page table decides: slot 1 of page 0 (the last page of request 0, 1 token) is
     * not read; slot 1 of page 2 (its first page) is */
    s.k[6] ^= 0x5A;
    dl_run_read_sum(&s.c, 0, &bytes, &x0);
    s.k[(0 * 4 + 1) * 16] ^= 0xFF;
    dl_run_read_sum(&s.c, 0, &bytes, &x1);
    ck_assert_uint_eq(x0, x1);
    s.k[(2 * 4 + 1) * 16] ^= 0xFF;
    dl_run_read_sum(&s.c, 0, &bytes, &x1);
    ck_assert_uint_eq(x0 ^ x1, 0xFFu);
}
END_TEST

/* ---------------------------------------------------------------- run, no GPU */

static const char *bin_path(void)
{
    const char *b = getenv("DL_BIN");
    return b && *b ? b : "build/decodelab";
}

START_TEST(test_run_without_gpu)
{
    if (dl_gpu_device_count() > 0) {
        printf("test_run_without_gpu: this machine has a CUDA device; not applicable\n");
        return;
    }
    if (access(bin_path(), X_OK) != 0) ck_abort_msg("decodelab binary not found at %s (set DL_BIN)", bin_path());
    make_tmpdir();
    char cmd[2048], out[512];
    snprintf(out, sizeof out, "%s/run.txt", tmpdir);
    snprintf(cmd, sizeof cmd,
             "%s golden --seq-len 1,16,17 --page-size 16 --num-qo-heads 4 --num-kv-heads 1 --head-dim 64 "
             "--kv-dtype e4m3 --out %s/g.h5 > /dev/null 2>&1",
             bin_path(), tmpdir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s run %s/g.h5 --time --out %s/res.h5 > %s 2>&1", bin_path(), tmpdir, tmpdir, out);
    int st = system(cmd);
    ck_assert(WIFEXITED(st));
    char *text = slurp(out, NULL);
    ck_assert_msg(WEXITSTATUS(st) == 0, "run exited %d: %s", WEXITSTATUS(st), text);
    ck_assert_msg(strstr(text, "no CUDA device (") != NULL, "output: %s", text);
    ck_assert_msg(strstr(text, "GPU variants skipped") != NULL, "output: %s", text);
    /* every registry variant is listed */
    for (int i = 0; i < dl_num_variants; i++) ck_assert_msg(strstr(text, dl_variants[i].name), "%s missing", dl_variants[i].name);
    /* nothing is written without a device */
    char res[512];
    snprintf(res, sizeof res, "%s/res.h5", tmpdir);
    ck_assert_int_ne(access(res, F_OK), 0);
    free(text);
    /* a missing golden file is bad input: exit 2 */
    snprintf(cmd, sizeof cmd, "%s run %s/missing.h5 > /dev/null 2>&1", bin_path(), tmpdir);
    st = system(cmd);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    remove_tmpdir();
}
END_TEST


/* The model for a schedule: the stored output for a trivial schedule, else
 * dl_reference_sched computed once per (inputs, model, params, schedule) and
 * served from memory to the next variant with the same schedule. */
START_TEST(test_model_for_schedule)
{
    dl_golden g;
    memset(&g, 0, sizeof g);
    dl_config cfg;
    dl_config_default(&cfg);
    cfg.batch_size = 3;
    cfg.num_qo_heads = 4;
    cfg.num_kv_heads = 2;
    cfg.head_dim = 32;
    cfg.page_size = 16;
    cfg.kv_dtype = DL_E4M3;
    cfg.num_explicit_lens = 3;
    cfg.explicit_lens[0] = 5;
    cfg.explicit_lens[1] = 200;
    cfg.explicit_lens[2] = 700;
    ck_assert_int_eq(dl_case_build(&cfg, &g.c), 0);
    dl_model_params_default(&g.params);
    ck_assert_int_eq(dl_reference(&g.c, DL_MODEL_BF16, &g.params, &g.out[DL_MODEL_BF16]), 0);
    g.have[DL_MODEL_BF16] = 1;
    const dl_output *o = NULL, *o2 = NULL;
    const int64_t n0 = dl_model_sched_computed();
    /* trivial: the stored output itself */
    ck_assert_int_eq(dl_model_for_schedule(&g, DL_MODEL_BF16, NULL, &o), 0);
    ck_assert_ptr_eq(o, &g.out[DL_MODEL_BF16]);
    dl_schedule s4, s2;
    ck_assert_int_eq(dl_schedule_split_kv(&g.c, 4, DL_MMA_SPLIT_TILE, &s4, NULL), 0);
    ck_assert_int_eq(dl_schedule_split_kv(&g.c, 2, DL_MMA_SPLIT_TILE, &s2, NULL), 0);
    ck_assert(dl_schedule_hash(&s4) != dl_schedule_hash(&s2));
    ck_assert_int_eq(dl_model_for_schedule(&g, DL_MODEL_BF16, &s4, &o), 0);
    ck_assert_int_eq(dl_model_sched_computed(), n0 + 1);
    ck_assert(o != &g.out[DL_MODEL_BF16]);
    /* the same schedule again (another variant): no recomputation, the same output */
    ck_assert_int_eq(dl_model_for_schedule(&g, DL_MODEL_BF16, &s4, &o2), 0);
    ck_assert_ptr_eq(o, o2);
    ck_assert_int_eq(dl_model_sched_computed(), n0 + 1);
    /* it is dl_reference_sched's output */
    dl_output want;
    ck_assert_int_eq(dl_reference_sched(&g.c, DL_MODEL_BF16, &g.params, &s4, &want), 0);
    ck_assert(memcmp(want.o, o->o, (size_t)(3 * 4 * 32) * sizeof(double)) == 0);
    ck_assert(memcmp(want.lse, o->lse, (size_t)(3 * 4) * sizeof(double)) == 0);
    dl_output_free(&want);
    /* another schedule, another model (the file lacks fp8: computed all the same), other params */
    ck_assert_int_eq(dl_model_for_schedule(&g, DL_MODEL_BF16, &s2, &o2), 0);
    ck_assert_int_eq(dl_model_sched_computed(), n0 + 2);
    ck_assert_int_eq(dl_model_for_schedule(&g, DL_MODEL_FP8, &s4, &o2), 0);
    ck_assert_int_eq(dl_model_sched_computed(), n0 + 3);
    g.params.kv_block = 32;
    ck_assert_int_eq(dl_model_for_schedule(&g, DL_MODEL_BF16, &s4, &o2), 0);
    ck_assert_int_eq(dl_model_sched_computed(), n0 + 4);
    /* a trivial schedule of a model the file lacks is an error naming it */
    ck_assert_int_ne(dl_model_for_schedule(&g, DL_MODEL_FP8, NULL, &o2), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "/golden/fp8"));
    /* an invalid schedule is refused */
    int64_t bad_indptr[7] = {0, 1, 2, 3, 4, 5, 6}, bad_begin[6] = {0, 0, 0, 0, 0, 3};
    dl_schedule bad = {6, bad_indptr, bad_begin};
    ck_assert_int_ne(dl_model_for_schedule(&g, DL_MODEL_BF16, &bad, &o2), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "task 5"));
    dl_model_sched_clear();
    dl_schedule_free(&s4);
    dl_schedule_free(&s2);
    dl_output_free(&g.out[DL_MODEL_BF16]);
    dl_case_free(&g.c);
}
END_TEST

/* A results table of format version 1 (the committed H200 run) still reads:
 * the columns new in version 2 read as unknown. */
START_TEST(test_results_v1_readable)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/results/h200_2026-11-30/results.h5", getenv("DL_ROOT") ? getenv("DL_ROOT") : ".");
    dl_result_row *rows = NULL;
    int64_t n = 0;
    ck_assert_msg(dl_results_read(path, &rows, &n) == 0, "%s", dl_last_error());
    ck_assert_int_eq(n, 27);
    ck_assert(isnan(rows[0].model_o.head_rel_l2) && rows[0].model_o.head_worst == -1);
    ck_assert(isnan(rows[0].limit_o_rel_l2));
    ck_assert_str_eq(rows[0].model_schedule, "");
    ck_assert(rows[0].model_o.rel_l2 > 0);
    free(rows);
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("harness");
    TCase *t = tcase_create("harness");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_results_append_roundtrip);
    tcase_add_test(t, test_results_atomic);
    tcase_add_test(t, test_results_version1);
    tcase_add_test(t, test_results_version2);
    tcase_add_test(t, test_timing_stats_known);
    tcase_add_test(t, test_timing_stop_rule);
    tcase_add_test(t, test_variant_selection);
    tcase_add_test(t, test_variant_params);
    tcase_add_test(t, test_variant_splits);
    tcase_add_test(t, test_bytes_moved);
    tcase_add_test(t, test_inputs_hash);
    tcase_add_test(t, test_read_sum);
    tcase_add_test(t, test_run_without_gpu);
    tcase_add_test(t, test_model_for_schedule);
    tcase_add_test(t, test_results_v1_readable);
    suite_add_tcase(s, t);
    return s;
}

DL_TEST_MAIN

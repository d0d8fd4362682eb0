/* test_results.c - Check suite for the results table (harness/results.c): the HDF5
 * table and its CSV twin written by dl_results_append (every column round-trips, CSV
 * quoting), the atomic append (a failed append leaves both files as they were, no
 * temporary file left), and older tables: format versions 1 and 2 still read (the
 * columns added later read as unknown) and are rewritten as the current version on
 * append; the committed H200 run (version 1) reads; a table whose .h5 was lost keeps its CSV twin's rows, and
 * targets that cannot take an append (a foreign CSV, a directory or FIFO, a missing directory) are refused
 * before anything is written. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../harness/dl_results.h"
#include "dl_test.h"
#include "golden_mutate.h"

static void setup(void) { dl_test_mkdir("results"); }
static void teardown(void) { dl_test_rmdir(); }

/* h5 = <scratch dir>/<name>, csv = the path of its CSV twin. */
static void table_paths(const char *name, char h5[512], char csv[600])
{
    dl_test_path(h5, 512, name);
    dl_results_csv_path(h5, csv, 600);
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
    DIR *d = opendir(dl_test_dir);
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
    r->plan_cta_tokens_max = 4096 + k;
    r->plan_cta_tokens_mean = 3971.875;
}

/* sample_row(r, k), appended to table h5. */
static void append_sample(const char *h5, dl_result_row *r, int k)
{
    sample_row(r, k);
    ck_assert_int_eq(dl_results_append(h5, r, 1), 0);
}

/* Every row of table h5 (the caller frees them); the test fails unless it reads and holds n_want rows. */
static dl_result_row *read_rows(const char *h5, int64_t n_want)
{
    dl_result_row *out = NULL;
    int64_t n = 0;
    ck_assert_msg(dl_results_read(h5, &out, &n) == 0, "%s", dl_last_error());
    ck_assert_int_eq(n, n_want);
    return out;
}

/* rows a[0..n) and b[0..n) equal cell by cell as the table formats them (what: which copy, for the message) */
static void same_cells(const dl_result_row *a, const dl_result_row *b, int n, const char *what)
{
    char x[9000], y[9000];
    for (int r = 0; r < n; r++)
        for (int i = 0; i < dl_results_num_columns(); i++) {
            dl_results_format_cell(&a[r], i, x, sizeof x);
            dl_results_format_cell(&b[r], i, y, sizeof y);
            ck_assert_msg(!strcmp(x, y), "%s row %d column %s: '%s' against '%s'", what, r, dl_results_column_name(i), y, x);
        }
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

START_TEST(test_results_append_roundtrip)
{
    char h5[512], csv[600];
    table_paths("res.h5", h5, csv);
    ck_assert_str_eq(csv + strlen(csv) - 8, "/res.csv");

    dl_result_row in[2];
    sample_row(&in[0], 0);
    sample_row(&in[1], 1);
    ck_assert_int_eq(dl_results_append(h5, &in[0], 1), 0);
    ck_assert_int_eq(dl_results_append(h5, &in[1], 1), 0);

    dl_result_row *out = read_rows(h5, 2);
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
}
END_TEST

/* The CSV twin read back (dl_results_read_csv: a table whose .h5 was lost, e.g. left out of a copy from the
 * GPU machine) gives the .h5's rows, every column equal; a damaged cell, a short line or another header is
 * refused with the file, line, column and value named. */
START_TEST(test_results_csv_read)
{
    char h5[512], csv[600];
    table_paths("res.h5", h5, csv);
    dl_result_row in[3];
    for (int k = 0; k < 3; k++) sample_row(&in[k], k);
    in[2].exact_lse.max_rel = -INFINITY;
    in[2].model_o.nmse = 0x1.fffffffffffffp-1; /* needs all 17 digits */
    in[2].p_cast_nmse = 0x1p-1074;             /* subnormal: strtod says ERANGE, the value is exact */
    ck_assert_int_eq(dl_results_append(h5, in, 3), 0);
    dl_result_row *a = read_rows(h5, 3), *b = NULL;
    int64_t n = 0;
    ck_assert_msg(dl_results_read_csv(csv, &b, &n) == 0, "%s", dl_last_error());
    ck_assert_int_eq(n, 3);
    same_cells(a, b, 3, "CSV against .h5:");
    ck_assert(b[2].model_o.nmse == 0x1.fffffffffffffp-1);
    ck_assert(b[2].p_cast_nmse == 0x1p-1074);
    ck_assert_uint_eq(b[1].seed, UINT64_C(0xFFFFFFFFFFFFFFF1));
    ck_assert_str_eq(b[1].reason, "line one\nline two, with comma");
    free(a);
    free(b);
    /* damage: batch_size of the second data row made text, a field too many, a header renamed */
    char *text = slurp(csv, NULL);
    ck_assert_ptr_nonnull(text);
    char bad[700];
    snprintf(bad, sizeof bad, "%s/bad.csv", dl_test_dir);
    char many[1200] = "fp32-cast-simt";
    for (int k = 0; k < 300; k++) strcat(many, ",x");
    const char *cases[][2] = {{",65,", ",6x5,"}, {"fp32-cast-simt", "fp32-cast-simt,extra"}, {"golden_hash", "golden_hesh"},
                              {"fp32-cast-simt", many}};
    const char *want[] = {"data row 2, column batch_size: '6x5'", "data row 2 has", "column 2 is 'golden_hesh'",
                          "data row 2 has more than 256 fields"};
    for (int c = 0; c < 4; c++) {
        char *at = strstr(text, cases[c][0]);
        if (c == 1 || c == 3) at = strstr(strstr(text, "\n/tmp/g1.h5"), cases[c][0]); /* the second data row */
        ck_assert_ptr_nonnull(at);
        FILE *f = fopen(bad, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "%.*s%s%s", (int)(at - text), text, cases[c][1], at + strlen(cases[c][0]));
        fclose(f);
        ck_assert_int_ne(dl_results_read_csv(bad, &b, &n), 0);
        ck_assert_msg(strstr(dl_last_error(), want[c]) && strstr(dl_last_error(), bad), "case %d: %s", c,
                      dl_last_error());
        ck_assert_ptr_null(b);
        ck_assert_int_eq(n, 0);
    }
    free(text);
}
END_TEST

START_TEST(test_results_atomic)
{
    char h5[512], csv[600];
    table_paths("res.h5", h5, csv);
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
    dl_result_row *out = read_rows(h5, 1);
    free(out);
    free(h5_after);
    free(csv_after);

    /* a file that is not a results table is refused and left alone */
    char bad[512];
    dl_test_path(bad, sizeof bad, "bad.h5");
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
}
END_TEST

/* The .h5 of a table lost, its CSV twin kept (e.g. left out of a copy): an append keeps the twin's rows, both
 * files then hold the old rows and the new, in order. */
START_TEST(test_results_lost_h5_keeps_csv)
{
    char h5[512], csv[600];
    table_paths("res.h5", h5, csv);
    dl_result_row in[3];
    for (int k = 0; k < 3; k++) sample_row(&in[k], k);
    ck_assert_int_eq(dl_results_append(h5, in, 2), 0);
    ck_assert_int_eq(unlink(h5), 0);
    ck_assert_msg(dl_results_check_out(h5) == 0, "%s", dl_last_error());
    ck_assert_msg(dl_results_append(h5, &in[2], 1) == 0, "%s", dl_last_error());
    dl_result_row *a = read_rows(h5, 3), *b = NULL;
    int64_t n = 0;
    ck_assert_msg(dl_results_read_csv(csv, &b, &n) == 0, "%s", dl_last_error());
    ck_assert_int_eq(n, 3);
    same_cells(in, a, 3, ".h5 against what was written:");
    same_cells(in, b, 3, "CSV against what was written:");
    free(a);
    free(b);
    ck_assert_int_eq(count_tmp_files(), 0);
}
END_TEST

/* dl_results_append and dl_results_check_out refuse, before writing anything, a target that cannot take the rows:
 * a CSV that is not a results table's twin (beside a lost .h5: a user's notes; beside a table: another format), a
 * twin or a table that is not a regular file (a directory would fail the twin's rename after the .h5 was
 * committed; a FIFO would block), a .h5 that is not a results table, a directory that does not exist. Each error
 * names the path and why; the files stay as they were. */
START_TEST(test_results_targets_refused)
{
    char h5[512], csv[600], other[512], other_csv[600];
    table_paths("notes.h5", h5, csv);
    dl_result_row r;
    sample_row(&r, 1);
    FILE *f = fopen(csv, "w");
    ck_assert_ptr_nonnull(f);
    fputs("my notes, not a table\n", f);
    fclose(f);
    for (int check = 0; check < 2; check++) {
        ck_assert_int_ne(check ? dl_results_check_out(h5) : dl_results_append(h5, &r, 1), 0);
        ck_assert_msg(strstr(dl_last_error(), csv) && strstr(dl_last_error(), "not a results table's CSV twin"), "%s",
                      dl_last_error());
        ck_assert_int_eq(access(h5, F_OK), -1);
        char *text = slurp(csv, NULL);
        ck_assert_str_eq(text, "my notes, not a table\n");
        free(text);
    }
    /* beside an existing table: its twin replaced by another format's CSV (a census) */
    table_paths("res.h5", other, other_csv);
    ck_assert_int_eq(dl_results_append(other, &r, 1), 0);
    f = fopen(other_csv, "w");
    ck_assert_ptr_nonnull(f);
    fputs("source,variant,kernel\n", f);
    fclose(f);
    ck_assert_int_ne(dl_results_append(other, &r, 1), 0);
    ck_assert_msg(strstr(dl_last_error(), other_csv) && strstr(dl_last_error(), "not a results table's CSV twin"), "%s",
                  dl_last_error());
    ck_assert_int_ne(dl_results_check_out(other), 0);
    dl_result_row *rows = read_rows(other, 1);
    free(rows);
    /* the twin a directory, then a FIFO: the .h5 untouched (absent stays absent) */
    unlink(other_csv);
    ck_assert_int_eq(mkdir(other_csv, 0755), 0);
    ck_assert_int_ne(dl_results_append(other, &r, 1), 0);
    ck_assert_msg(strstr(dl_last_error(), other_csv) && strstr(dl_last_error(), "not a regular file"), "%s",
                  dl_last_error());
    ck_assert_int_ne(dl_results_check_out(other), 0);
    rows = read_rows(other, 1);
    free(rows);
    rmdir(other_csv);
    unlink(csv);
    ck_assert_int_eq(mkfifo(csv, 0644), 0);
    ck_assert_int_ne(dl_results_append(h5, &r, 1), 0);
    ck_assert_msg(strstr(dl_last_error(), csv) && strstr(dl_last_error(), "not a regular file"), "%s", dl_last_error());
    ck_assert_int_eq(access(h5, F_OK), -1);
    unlink(csv);
    /* the .h5 a FIFO; a .h5 that is not a results table (a golden-like file); a missing directory */
    ck_assert_int_eq(mkfifo(h5, 0644), 0);
    ck_assert_int_ne(dl_results_append(h5, &r, 1), 0);
    ck_assert_msg(strstr(dl_last_error(), h5) && strstr(dl_last_error(), "not a regular file"), "%s", dl_last_error());
    ck_assert_int_ne(dl_results_check_out(h5), 0);
    unlink(h5);
    ck_assert_int_eq(gm_set_attr_str(other, "/", "format", "decodelab-golden"), 0);
    ck_assert_int_ne(dl_results_check_out(other), 0);
    ck_assert_msg(strstr(dl_last_error(), other) && strstr(dl_last_error(), "is not a results table") &&
                      strstr(dl_last_error(), "'decodelab-golden'"),
                  "%s", dl_last_error());
    char missing[600];
    dl_test_path(missing, sizeof missing, "nodir/r.h5");
    ck_assert_int_ne(dl_results_check_out(missing), 0);
    ck_assert_msg(strstr(dl_last_error(), missing) && strstr(dl_last_error(), "No such file"), "%s", dl_last_error());
    ck_assert_int_eq(count_tmp_files(), 0);
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
/* A table of sample rows 0 and 1 (into in[2]) made to look as version `ver` wrote it: the columns added since
 * deleted, the version set; its path in h5. */
static void older_table(const char *name, char *h5, size_t len, dl_result_row in[2], const char *const *added, int n,
                        int ver)
{
    dl_test_path(h5, len, name);
    sample_row(&in[0], 0);
    sample_row(&in[1], 1);
    ck_assert_int_eq(dl_results_append(h5, in, 2), 0);
    for (int k = 0; k < n; k++) ck_assert_int_eq(gm_delete(h5, added[k]), 0);
    ck_assert_int_eq(gm_set_attr_i64(h5, "/", "format_version", ver), 0);
}

/* Table h5 without column `col` (a dataset path) is refused, the error naming it. */
static void refused_without(const char *h5, const char *col)
{
    dl_result_row *out = NULL;
    int64_t n = 0;
    ck_assert_int_eq(gm_delete(h5, col), 0);
    ck_assert_int_ne(dl_results_read(h5, &out, &n), 0);
    ck_assert_msg(strstr(dl_last_error(), col) != NULL, "%s", dl_last_error());
}

START_TEST(test_results_version2)
{
    char h5[512];
    dl_result_row in[2];
    const char *const added[] = {"/results/dist_sink_tokens", "/results/dist_sink_delta", "/results/kv_order",
                                 "/results/p_scale", "/results/p_underflow_frac", "/results/p_underflow_pred",
                                 "/results/p_cast_nmse"};
    older_table("v2.h5", h5, sizeof h5, in, added, 7, 2);
    dl_result_row *out = read_rows(h5, 2);
    ck_assert_int_eq(out[1].dist_sink_tokens, -1);
    ck_assert(isnan(out[1].dist_sink_delta) && isnan(out[1].p_scale) && isnan(out[1].p_underflow_frac));
    ck_assert(isnan(out[1].p_underflow_pred) && isnan(out[1].p_cast_nmse));
    ck_assert_str_eq(out[1].kv_order, "");
    ck_assert_str_eq(out[1].flush, "read"); /* version-2 columns intact */
    free(out);
    dl_result_row extra;
    append_sample(h5, &extra, 2);
    out = read_rows(h5, 3);
    ck_assert_str_eq(out[2].kv_order, "reverse");
    ck_assert(out[2].p_underflow_frac == 2.25 && out[2].dist_sink_tokens == 6);
    ck_assert(isnan(out[0].p_cast_nmse));
    free(out);
    refused_without(h5, "/results/p_cast_nmse"); /* a version-3 (now 5) table missing one of them */
}
END_TEST

/* A version-4 table (before the plan's balance columns) reads with them unknown (-1, NaN), and an append rewrites
 * it as version 5 with the old rows' values kept and the new row's written. */
START_TEST(test_results_version4)
{
    char h5[512];
    dl_result_row in[2];
    const char *const added[] = {"/results/plan_cta_tokens_max", "/results/plan_cta_tokens_mean"};
    older_table("v4.h5", h5, sizeof h5, in, added, 2, 4);
    dl_result_row *out = read_rows(h5, 2);
    ck_assert_int_eq(out[1].plan_cta_tokens_max, -1);
    ck_assert(isnan(out[1].plan_cta_tokens_mean));
    ck_assert_str_eq(out[1].kv_order, "reverse"); /* version-3 columns intact */
    free(out);
    dl_result_row extra;
    append_sample(h5, &extra, 2);
    out = read_rows(h5, 3);
    ck_assert_int_eq(out[2].plan_cta_tokens_max, 4098);
    ck_assert(out[2].plan_cta_tokens_mean == 3971.875);
    ck_assert_int_eq(out[0].plan_cta_tokens_max, -1);
    free(out);
    refused_without(h5, "/results/plan_cta_tokens_mean"); /* a version-5 table missing one of them */
}
END_TEST

START_TEST(test_results_version1)
{
    char h5[512], csv[600];
    table_paths("old.h5", h5, csv);
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
    dl_result_row *out = read_rows(h5, 4);
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
    append_sample(h5, &extra, 9);
    out = read_rows(h5, 5);
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
    int64_t n = 0;
    ck_assert_int_eq(gm_delete(h5, "/results/ref_read_contig_s"), 0);
    ck_assert_int_ne(dl_results_read(h5, &out, &n), 0);
    ck_assert_msg(strstr(dl_last_error(), "/results/ref_read_contig_s") != NULL, "%s", dl_last_error());
    /* so is a version this program does not know */
    ck_assert_int_eq(gm_set_attr_i64(h5, "/", "format_version", DL_RESULTS_VERSION + 1), 0);
    ck_assert_int_ne(dl_results_read(h5, &out, &n), 0);
    ck_assert_msg(strstr(dl_last_error(), "format_version") != NULL, "%s", dl_last_error());
    ck_assert_int_eq(gm_set_attr_i64(h5, "/", "format_version", 0), 0);
    ck_assert_int_ne(dl_results_read(h5, &out, &n), 0);

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

/* A results table of format version 1 (the committed H200 run) still reads:
 * the columns new in version 2 read as unknown. */
START_TEST(test_results_v1_readable)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/results/h200_2026-11-30/results.h5", dl_test_root());
    dl_result_row *rows = read_rows(path, 27);
    ck_assert(isnan(rows[0].model_o.head_rel_l2) && rows[0].model_o.head_worst == -1);
    ck_assert(isnan(rows[0].limit_o_rel_l2));
    ck_assert_str_eq(rows[0].model_schedule, "");
    ck_assert(rows[0].model_o.rel_l2 > 0);
    free(rows);
}
END_TEST

DL_TEST_SUITE("results", 120, setup, teardown,
              test_results_append_roundtrip, test_results_csv_read, test_results_atomic, test_results_version1, test_results_version2, test_results_version4,
              test_results_v1_readable, test_results_lost_h5_keeps_csv, test_results_targets_refused)

/* results.c - the results table of `decodelab run` (see dl_results.h and
 * data/SCHEMA.md (results table)): a column table, an HDF5 writer/reader (one 1-D
 * dataset per column under /results) and a CSV twin, appended atomically. */
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../ref/dl_common.h"
#include "dl_results.h"
#include "dl_h5.h"

int dl_results_fail_before_rename = 0;

typedef struct {
    const char *name;
    dl_col_type type;
    size_t off, size;
    int since; /* format version that added the column */
} col_def;

#define FLD_SIZE(f) sizeof(((dl_result_row *)0)->f)
#define CS(f) {#f, DL_COL_STR, offsetof(dl_result_row, f), FLD_SIZE(f), 1}
#define CI(f) {#f, DL_COL_I64, offsetof(dl_result_row, f), 8, 1}
#define CU(f) {#f, DL_COL_U64, offsetof(dl_result_row, f), 8, 1}
#define CF(f) {#f, DL_COL_F64, offsetof(dl_result_row, f), 8, 1}
#define CS2(f) {#f, DL_COL_STR, offsetof(dl_result_row, f), FLD_SIZE(f), 2}
#define CF2(f) {#f, DL_COL_F64, offsetof(dl_result_row, f), 8, 2}
#define CS3(f) {#f, DL_COL_STR, offsetof(dl_result_row, f), FLD_SIZE(f), 3}
#define CI3(f) {#f, DL_COL_I64, offsetof(dl_result_row, f), 8, 3}
#define CF3(f) {#f, DL_COL_F64, offsetof(dl_result_row, f), 8, 3}
#define CF4(f) {#f, DL_COL_F64, offsetof(dl_result_row, f), 8, 4}
#define CI5(f) {#f, DL_COL_I64, offsetof(dl_result_row, f), 8, 5}
#define CF5(f) {#f, DL_COL_F64, offsetof(dl_result_row, f), 8, 5}
#define CM(p)                                                                                          \
    {#p "_n", DL_COL_I64, offsetof(dl_result_row, p.n), 8, 1},                                         \
    {#p "_nonfinite", DL_COL_I64, offsetof(dl_result_row, p.nonfinite), 8, 1},                         \
    {#p "_unwritten", DL_COL_I64, offsetof(dl_result_row, p.unwritten), 8, 1},                         \
    {#p "_rel_l2", DL_COL_F64, offsetof(dl_result_row, p.rel_l2), 8, 1},                               \
    {#p "_nmse", DL_COL_F64, offsetof(dl_result_row, p.nmse), 8, 1},                                   \
    {#p "_max_abs", DL_COL_F64, offsetof(dl_result_row, p.max_abs), 8, 1},                             \
    {#p "_max_rel", DL_COL_F64, offsetof(dl_result_row, p.max_rel), 8, 1},                             \
    {#p "_head_rel_l2", DL_COL_F64, offsetof(dl_result_row, p.head_rel_l2), 8, 2},                     \
    {#p "_head_worst", DL_COL_I64, offsetof(dl_result_row, p.head_worst), 8, 2}

/* The schema, in column order. data/SCHEMA.md (results table) documents each. */
static const col_def cols[] = {
    CS(golden_path), CS(golden_hash),
    CS(variant), CS(compute), CS(dequant), CS(unit), CS(model), CS(kernel_file),
    CS(config_name),
    CI(batch_size), CI(num_qo_heads), CI(num_kv_heads), CI(head_dim), CI(page_size),
    CS(kv_layout), CS(q_dtype), CS(kv_dtype), CF(sm_scale), CU(seed),
    CS(distribution), CF(dist_mean), CF(dist_std), CF(dist_lo), CF(dist_hi),
    CF(dist_outlier_prob), CF(dist_outlier_var), CI(dist_num_outlier_channels), CF(dist_channel_scale),
    CI3(dist_sink_tokens), CF3(dist_sink_delta),
    CI(seq_len_min), CI(seq_len_max), CI(num_explicit_lens), CS(seq_lens),
    CS(kv_scale_mode), CF(kv_scale_value),
    CI(num_pages), CI(total_tokens), CI(max_seq_len), CI(num_splits),
    CM(model_o), CM(model_lse), CM(exact_o), CM(exact_lse),
    CS2(model_schedule), CI5(plan_cta_tokens_max), CF5(plan_cta_tokens_mean),
    CS3(kv_order), CF3(p_scale), CF3(p_underflow_frac), CF3(p_underflow_pred), CF3(p_cast_nmse),
    {"model_o_head_excess", DL_COL_F64, offsetof(dl_result_row, model_o.head_excess), 8, 4}, CF4(model_o_flip_allow),
    CF2(limit_o_rel_l2), CF2(limit_o_head_rel_l2), CF2(limit_lse_abs),
    CF2(band_o_rel_l2), CF2(band_lse_abs),
    CS(verdict_model), CS(verdict_exact), CS(verdict), CI(deterministic), CS(reason),
    CS(timing_mode), CS2(flush), CI(graph_launches), CI(time_samples), CI(time_converged),
    CF(time_median_s), CF(time_min_s), CF(time_max_s), CF(time_mean_s), CF(time_stdrel), CF(time_elapsed_s),
    CI(bytes_q), CI(bytes_kv), CI(bytes_kv_pages), CI(bytes_scales), CI(bytes_page_table), CI(bytes_o),
    CI(bytes_lse), CI(bytes_total),
    CF(gbps), CF(peak_read_gbps), CF(frac_peak),
    CF2(ref_read_s), CF2(ref_read_pages_s), CF2(ref_read_contig_s), CF2(frac_ref),
    CS(device_name), CI(device_sm_count), CI(device_l2_bytes),
    CI(sm_clock_mhz_before), CI(sm_clock_mhz_after), CS(clock_source),
    CS(driver_version), CS(runtime_version), CS(generator), CS(date_utc), CS(hostname),
};
static const int num_cols = (int)(sizeof cols / sizeof cols[0]);

int dl_results_num_columns(void) { return num_cols; }
const char *dl_results_column_name(int i) { return (i >= 0 && i < num_cols) ? cols[i].name : NULL; }
dl_col_type dl_results_column_type(int i) { return cols[i].type; }

void dl_result_row_init(dl_result_row *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < num_cols; i++) {
        char *p = (char *)r + cols[i].off;
        if (cols[i].type == DL_COL_I64) *(int64_t *)p = -1;
        else if (cols[i].type == DL_COL_F64) *(double *)p = NAN;
    }
    r->seed = 0;
    strcpy(r->timing_mode, "none");
    strcpy(r->flush, "none");
    r->graph_launches = 1;
}

/* The flush of a version-1 row, which has no such column: every cold-l2 sample
 * of those versions was taken after the memset flush ("write"); a hot or
 * untimed row had none; an external candidate's is not known. */
static void flush_of_v1_row(dl_result_row *r)
{
    const char *f = "none";
    if (strcmp(r->timing_mode, "none") != 0) {
        if (!strcmp(r->kernel_file, "external")) f = "unknown";
        else if (strstr(r->timing_mode, "cold-l2")) f = "write";
    }
    snprintf(r->flush, sizeof r->flush, "%s", f);
}

void dl_stamp_date_host(char *date_utc, size_t ndate, char *hostname, size_t nhost)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date_utc, ndate, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (gethostname(hostname, nhost) != 0) snprintf(hostname, nhost, "unknown");
    hostname[nhost - 1] = 0;
}

void dl_result_row_stamp(dl_result_row *r)
{
    dl_stamp_date_host(r->date_utc, sizeof r->date_utc, r->hostname, sizeof r->hostname);
}

void dl_results_format_cell(const dl_result_row *r, int i, char *buf, size_t n)
{
    const char *p = (const char *)r + cols[i].off;
    switch (cols[i].type) {
    case DL_COL_STR: snprintf(buf, n, "%s", p); break;
    case DL_COL_I64: snprintf(buf, n, "%lld", (long long)*(const int64_t *)p); break;
    case DL_COL_U64: snprintf(buf, n, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case DL_COL_F64: {
        double v = *(const double *)p;
        if (isnan(v)) snprintf(buf, n, "nan");
        else if (isinf(v)) snprintf(buf, n, v > 0 ? "inf" : "-inf");
        else snprintf(buf, n, "%.17g", v);
        break;
    }
    }
}

void dl_results_csv_path(const char *h5_path, char *buf, size_t n)
{
    size_t len = strlen(h5_path);
    if (len > 3 && !strcmp(h5_path + len - 3, ".h5")) snprintf(buf, n, "%.*s.csv", (int)(len - 3), h5_path);
    else snprintf(buf, n, "%s.csv", h5_path);
}

/* ---------------------------------------------------------------- CSV */

void dl_csv_put(FILE *f, const char *s)
{
    int quote = s[0] == ' ' || (s[0] && s[strlen(s) - 1] == ' ') || strpbrk(s, ",\"\r\n") != NULL;
    if (!quote) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int dl_csv_read_record(FILE *f, char **fields, int max, char *buf, size_t cap)
{
    int nf = 0, ch, inq = 0;
    size_t used = 0;
    int started = 0;
    fields[nf++] = buf;
    while ((ch = fgetc(f)) != EOF) {
        started = 1;
        if (inq) {
            if (ch == '"') {
                int nx = fgetc(f);
                if (nx == '"') ch = '"';
                else {
                    inq = 0;
                    if (nx != EOF) ungetc(nx, f);
                    continue;
                }
            }
        } else if (ch == '"') {
            inq = 1;
            continue;
        } else if (ch == ',') {
            if (used + 1 >= cap || nf == max) return -1;
            buf[used++] = 0;
            fields[nf++] = buf + used;
            continue;
        } else if (ch == '\n') {
            break;
        } else if (ch == '\r') {
            continue;
        }
        if (used + 1 >= cap) return -1;
        buf[used++] = (char)ch;
    }
    if (!started) return 0;
    buf[used] = 0;
    return nf;
}

static int write_csv(const char *path, const dl_result_row *rows, int64_t n)
{
    FILE *f = fopen(path, "w");
    if (!f) return dl_fail("results: cannot create %s: %s", path, strerror(errno));
    for (int i = 0; i < num_cols; i++) {
        if (i) fputc(',', f);
        fputs(cols[i].name, f);
    }
    fputc('\n', f);
    char cell[8192 + 16];
    for (int64_t r = 0; r < n; r++) {
        for (int i = 0; i < num_cols; i++) {
            if (i) fputc(',', f);
            dl_results_format_cell(&rows[r], i, cell, sizeof cell);
            dl_csv_put(f, cell);
        }
        fputc('\n', f);
    }
    int bad = ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0;
    int err = errno;
    if (fclose(f) != 0) bad = 1;
    if (bad) return dl_fail("results: writing %s failed: %s", path, strerror(err));
    return 0;
}

/* One cell of column i from its CSV text (the inverse of dl_results_format_cell): 0, or -1 when the
 * text is not a whole value of the column's type or a string does not fit. */
static int parse_cell(dl_result_row *r, int i, const char *t)
{
    char *p = (char *)r + cols[i].off, *end = NULL;
    errno = 0;
    switch (cols[i].type) {
    case DL_COL_STR:
        if (strlen(t) >= cols[i].size) return -1;
        memcpy(p, t, strlen(t) + 1);
        return 0;
    case DL_COL_I64: *(int64_t *)p = strtoll(t, &end, 10); break;
    case DL_COL_U64:
        if (t[0] == '-') return -1;
        *(uint64_t *)p = strtoull(t, &end, 10);
        break;
    case DL_COL_F64: /* a subnormal sets ERANGE yet is read exactly as written (%.17g): not an error */
        *(double *)p = strtod(t, &end);
        return (!*t || *end) ? -1 : 0;
    }
    return (!*t || *end || errno) ? -1 : 0;
}

int dl_results_read_csv(const char *csv_path, dl_result_row **rows, int64_t *n)
{
    *rows = NULL;
    *n = 0;
    FILE *f = fopen(csv_path, "r");
    if (!f) return dl_fail("results: cannot open %s: %s", csv_path, strerror(errno));
    enum { MAXF = 256 };
    static char buf[1 << 16];
    char *fields[MAXF];
    int rc = 0, nf = dl_csv_read_record(f, fields, MAXF, buf, sizeof buf);
    if (nf < 0)
        rc = dl_fail("results: %s: the header has more than %d fields or %zu bytes: not a results table", csv_path, MAXF,
                     sizeof buf);
    else if (nf != num_cols)
        rc = dl_fail("results: %s: the header has %d fields, a results table %d (a CSV twin of another format?)",
                     csv_path, nf, num_cols);
    for (int i = 0; !rc && i < num_cols; i++)
        if (strcmp(fields[i], cols[i].name))
            rc = dl_fail("results: %s: column %d is '%s', expected '%s'", csv_path, i + 1, fields[i], cols[i].name);
    int64_t cap = 0, row = 0; /* data rows from 1 (a quoted cell may hold a newline: rows are not lines) */
    while (!rc && (nf = dl_csv_read_record(f, fields, MAXF, buf, sizeof buf)) != 0) {
        row++;
        if (nf != num_cols) {
            if (nf < 0)
                rc = dl_fail("results: %s: data row %lld has more than %d fields or %zu bytes", csv_path, (long long)row,
                             MAXF, sizeof buf);
            else
                rc = dl_fail("results: %s: data row %lld has %d fields, expected %d", csv_path, (long long)row, nf,
                             num_cols);
            break;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            dl_result_row *g = realloc(*rows, (size_t)cap * sizeof *g);
            if (!g) {
                rc = dl_fail("results: out of memory reading %s", csv_path);
                break;
            }
            *rows = g;
        }
        dl_result_row *r = &(*rows)[(*n)++];
        dl_result_row_init(r);
        for (int i = 0; i < num_cols && !rc; i++)
            if (parse_cell(r, i, fields[i]))
                rc = dl_fail("results: %s: data row %lld, column %s: '%s' is not a %s", csv_path, (long long)row,
                             cols[i].name, fields[i],
                             cols[i].type == DL_COL_STR ? "string that fits" : cols[i].type == DL_COL_F64 ? "number"
                                                                                                       : "integer");
    }
    if (!rc && ferror(f)) rc = dl_fail("results: reading %s failed", csv_path);
    fclose(f);
    if (rc) {
        free(*rows);
        *rows = NULL;
        *n = 0;
    }
    return rc;
}

/* ---------------------------------------------------------------- HDF5 */

/* Silence HDF5's error stack printing for the duration of a call. */
typedef struct {
    H5E_auto2_t fn;
    void *data;
} h5_quiet;
static void quiet_on(h5_quiet *q)
{
    H5Eget_auto2(H5E_DEFAULT, &q->fn, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}
static void quiet_off(const h5_quiet *q) { H5Eset_auto2(H5E_DEFAULT, q->fn, q->data); }

static hid_t str_type(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

static int write_h5(const char *path, const dl_result_row *rows, int64_t n)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return dl_fail("results: cannot create HDF5 file %s", path);
    int rc = 0;
    void *buf = malloc((size_t)(n > 0 ? n : 1) * 8);
    char header[64 * 200] = "";
    if (!buf) rc = dl_fail("results: out of memory writing %s", path);
    const dl_h5 h = {path, f};
    if (!rc && (dl_h5_put_str(&h, f, "/", "format", DL_RESULTS_FORMAT) ||
                dl_h5_put_i64(&h, f, "/", "format_version", DL_RESULTS_VERSION)))
        rc = dl_fail("results: writing root attributes of %s failed", path);
    hid_t g = rc ? -1 : H5Gcreate2(f, "results", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (!rc && g < 0) rc = dl_fail("results: cannot create group /results in %s", path);
    hsize_t dim = (hsize_t)n;
    hid_t sp = H5Screate_simple(1, &dim, NULL);
    for (int i = 0; !rc && i < num_cols; i++) {
        const col_def *c = &cols[i];
        hid_t ft, mt;
        int close_t = 0;
        if (c->type == DL_COL_STR) {
            ft = mt = str_type();
            close_t = 1;
            const char **s = buf;
            for (int64_t r = 0; r < n; r++) s[r] = (const char *)&rows[r] + c->off;
        } else {
            ft = c->type == DL_COL_I64 ? H5T_STD_I64LE : c->type == DL_COL_U64 ? H5T_STD_U64LE : H5T_IEEE_F64LE;
            mt = c->type == DL_COL_I64 ? H5T_NATIVE_INT64 : c->type == DL_COL_U64 ? H5T_NATIVE_UINT64 : H5T_NATIVE_DOUBLE;
            for (int64_t r = 0; r < n; r++) memcpy((char *)buf + 8 * r, (const char *)&rows[r] + c->off, 8);
        }
        hid_t d = H5Dcreate2(g, c->name, ft, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (d < 0 || (n > 0 && H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0))
            rc = dl_fail("results: writing column /results/%s of %s failed", c->name, path);
        if (d >= 0) H5Dclose(d);
        if (close_t) H5Tclose(ft);
        if (strlen(header) + strlen(c->name) + 2 < sizeof header) {
            if (i) strcat(header, ",");
            strcat(header, c->name);
        }
    }
    H5Sclose(sp);
    if (!rc && (dl_h5_put_i64(&h, g, "/results", "num_rows", n) || dl_h5_put_str(&h, g, "/results", "columns", header)))
        rc = dl_fail("results: writing /results attributes of %s failed", path);
    if (g >= 0) H5Gclose(g);
    if (H5Fclose(f) < 0 && !rc) rc = dl_fail("results: closing %s failed", path);
    free(buf);
    return rc;
}

static int read_h5(const char *path, dl_result_row **out, int64_t *nout)
{
    *out = NULL;
    *nout = 0;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return dl_fail("results: %s: not a readable HDF5 file", path);
    char fmt[64] = "";
    int64_t ver = -1, n = -1;
    int rc = 0;
    hid_t g = -1;
    const dl_h5 h = {path, f};
    if (dl_h5_get_str(&h, "/", "format", fmt, sizeof fmt) || strcmp(fmt, DL_RESULTS_FORMAT))
        rc = dl_fail("results: %s: attribute format is '%s', expected '%s'", path, fmt, DL_RESULTS_FORMAT);
    else if (dl_h5_get_i64(&h, "/", "format_version", &ver) || ver < DL_RESULTS_VERSION_MIN || ver > DL_RESULTS_VERSION)
        rc = dl_fail("results: %s: format_version is %lld, this program reads %d to %d", path, (long long)ver,
                     DL_RESULTS_VERSION_MIN, DL_RESULTS_VERSION);
    else if ((g = H5Gopen2(f, "results", H5P_DEFAULT)) < 0)
        rc = dl_fail("results: %s: group /results is missing", path);
    else if (dl_h5_get_i64(&h, "/results", "num_rows", &n) || n < 0 || n > (INT64_C(1) << 31))
        rc = dl_fail("results: %s: /results attribute num_rows is missing or out of range (%lld)", path, (long long)n);
    /* size limit before allocating: every numeric column stores 8 bytes per row in the file */
    struct stat st;
    int64_t num_numeric = 0;
    for (int i = 0; i < num_cols; i++) num_numeric += cols[i].type != DL_COL_STR && cols[i].since <= ver;
    if (!rc && (stat(path, &st) != 0 || n > (int64_t)st.st_size / (8 * num_numeric)))
        rc = dl_fail("results: %s: /results@num_rows = %lld needs at least %lld bytes, the file has %lld", path,
                     (long long)n, (long long)(n * 8 * num_numeric), (long long)st.st_size);
    dl_result_row *rows = NULL;
    void *buf = NULL;
    if (!rc) {
        rows = calloc((size_t)(n > 0 ? n : 1), sizeof *rows);
        buf = calloc((size_t)(n > 0 ? n : 1), 8);
        if (!rows || !buf) rc = dl_fail("results: out of memory reading %lld rows of %s", (long long)n, path);
        /* columns an older version lacks read as unknown (a version-1 file's thr_* columns are ignored) */
        for (int64_t r = 0; !rc && r < n; r++) dl_result_row_init(&rows[r]);
    }
    for (int i = 0; !rc && i < num_cols; i++) {
        const col_def *c = &cols[i];
        if (c->since > ver) continue;
        hid_t d = H5Dopen2(g, c->name, H5P_DEFAULT);
        if (d < 0) {
            rc = dl_fail("results: %s: column /results/%s is missing", path, c->name);
            break;
        }
        hid_t sp = H5Dget_space(d);
        hsize_t dim = 0;
        if (H5Sget_simple_extent_ndims(sp) != 1 || H5Sget_simple_extent_dims(sp, &dim, NULL) != 1 || (int64_t)dim != n)
            rc = dl_fail("results: %s: column /results/%s has %llu rows, num_rows is %lld", path, c->name,
                         (unsigned long long)dim, (long long)n);
        hid_t ft = H5Dget_type(d);
        H5T_class_t cls = H5Tget_class(ft);
        if (!rc && (c->type == DL_COL_STR) != (cls == H5T_STRING))
            rc = dl_fail("results: %s: column /results/%s has the wrong type class", path, c->name);
        if (!rc && n > 0) {
            if (c->type == DL_COL_STR) {
                hid_t mt = str_type();
                memset(buf, 0, (size_t)n * 8); /* a failed read may leave some strings allocated: reclaimable */
                if (!H5Tis_variable_str(ft) || H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
                    rc = dl_fail("results: %s: reading string column /results/%s failed", path, c->name);
#if H5_VERSION_GE(1, 12, 0)
                    H5Treclaim(mt, sp, H5P_DEFAULT, buf);
#else
                    H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, buf);
#endif
                } else {
                    char **s = buf;
                    for (int64_t r = 0; r < n; r++) {
                        snprintf((char *)&rows[r] + c->off, c->size, "%s", s[r] ? s[r] : "");
                    }
#if H5_VERSION_GE(1, 12, 0)
                    H5Treclaim(mt, sp, H5P_DEFAULT, buf);
#else
                    H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, buf);
#endif
                }
                H5Tclose(mt);
            } else {
                hid_t mt = c->type == DL_COL_I64   ? H5T_NATIVE_INT64
                           : c->type == DL_COL_U64 ? H5T_NATIVE_UINT64
                                                   : H5T_NATIVE_DOUBLE;
                if (H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
                    rc = dl_fail("results: %s: reading column /results/%s failed", path, c->name);
                else
                    for (int64_t r = 0; r < n; r++) memcpy((char *)&rows[r] + c->off, (char *)buf + 8 * r, 8);
            }
        }
        H5Tclose(ft);
        H5Sclose(sp);
        H5Dclose(d);
    }
    free(buf);
    if (g >= 0) H5Gclose(g);
    H5Fclose(f);
    if (rc) {
        free(rows);
        return rc;
    }
    if (ver < 2)
        for (int64_t r = 0; r < n; r++) flush_of_v1_row(&rows[r]);
    *out = rows;
    *nout = n;
    return 0;
}

int dl_results_read(const char *h5_path, dl_result_row **rows, int64_t *n)
{
    h5_quiet q;
    quiet_on(&q);
    int rc = read_h5(h5_path, rows, n);
    quiet_off(&q);
    return rc;
}

/* ---------------------------------------------------------------- append */

static int fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static void dir_of(const char *path, char *buf, size_t n)
{
    snprintf(buf, n, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash) snprintf(buf, n, ".");
    else if (slash == buf) buf[1] = 0;
    else *slash = 0;
}

/* The directory of path opened (its fd), or -1 with the error recorded. */
static int open_dir_of(const char *who, const char *path, char *dir, size_t n)
{
    dir_of(path, dir, n);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd < 0) return dl_fail("%s: cannot open directory %s of %s: %s", who, dir, path, strerror(errno));
    return dfd;
}

int dl_check_dir_of(const char *who, const char *path)
{
    char dir[4100];
    const int dfd = open_dir_of(who, path, dir, sizeof dir);
    if (dfd < 0) return -1;
    close(dfd);
    return 0;
}

int dl_lock_dir_of(const char *who, const char *path)
{
    char dir[4100];
    int dfd = open_dir_of(who, path, dir, sizeof dir);
    if (dfd < 0) return -1;
    if (flock(dfd, LOCK_EX) != 0) {
        int e = errno;
        close(dfd);
        return dl_fail("%s: cannot lock directory %s: %s", who, dir, strerror(e));
    }
    return dfd;
}

/* reason without a leading "results: <path>: " (the caller names path itself) */
static const char *reason_of(const char *msg, const char *path)
{
    size_t k = strlen(path);
    if (!strncmp(msg, "results: ", 9)) msg += 9;
    if (!strncmp(msg, path, k) && msg[k] == ':' && msg[k + 1] == ' ') msg += k + 2;
    return msg;
}

/* The header of the CSV at csv names a results table's first columns (of any version: an older twin is
 * rewritten from its .h5): 0, or -1 with why recorded. */
static int csv_header_is_results(const char *csv, const char *h5)
{
    FILE *f = fopen(csv, "r");
    if (!f) return dl_fail("results: cannot open %s (the CSV twin of %s): %s", csv, h5, strerror(errno));
    static char buf[1 << 16];
    char *fields[256];
    const int nf = dl_csv_read_record(f, fields, 256, buf, sizeof buf);
    fclose(f);
    if (nf < 2 || strcmp(fields[0], cols[0].name) || strcmp(fields[1], cols[1].name))
        return dl_fail("results: %s is not a results table's CSV twin (its header does not start with %s,%s): nothing "
                       "written; move it away or choose another output",
                       csv, cols[0].name, cols[1].name);
    return 0;
}

/* The targets of an append to h5_path, checked (see dl_results_check_out), and the rows they hold: those of the
 * .h5, or, when only its CSV twin exists, of the twin. 0, or -1 with the error recorded (*old NULL). */
static int check_targets(const char *h5_path, const char *csv, dl_result_row **old, int64_t *nold)
{
    *old = NULL;
    *nold = 0;
    struct stat st, cst;
    int have_h5 = 0, have_csv = 0;
    if (stat(h5_path, &st) == 0) {
        if (!S_ISREG(st.st_mode)) return dl_fail("results: %s is not a regular file: nothing written", h5_path);
        have_h5 = 1;
    } else if (errno != ENOENT) {
        return dl_fail("results: cannot stat %s: %s", h5_path, strerror(errno));
    }
    if (stat(csv, &cst) == 0) { /* a directory or FIFO would fail the rename after the .h5 is committed */
        if (!S_ISREG(cst.st_mode))
            return dl_fail("results: %s (the CSV twin of %s) is not a regular file: nothing written", csv, h5_path);
        have_csv = 1;
    } else if (errno != ENOENT) {
        return dl_fail("results: cannot stat %s (the CSV twin of %s): %s", csv, h5_path, strerror(errno));
    }
    if (have_h5) {
        if (dl_results_read(h5_path, old, nold)) {
            char why[1024];
            snprintf(why, sizeof why, "%s", reason_of(dl_last_error(), h5_path));
            return dl_fail("results: %s exists and is not a results table (%s): nothing written", h5_path, why);
        }
        if (have_csv && csv_header_is_results(csv, h5_path)) {
            free(*old);
            *old = NULL;
            *nold = 0;
            return -1;
        }
    } else if (have_csv && dl_results_read_csv(csv, old, nold)) { /* the .h5 lost: the twin's rows are kept */
        char why[1024];
        snprintf(why, sizeof why, "%s", reason_of(dl_last_error(), csv));
        return dl_fail("results: %s is not a results table's CSV twin (%s) and %s does not exist: nothing written; "
                       "move it away or choose another output",
                       csv, why, h5_path);
    }
    return 0;
}

int dl_results_check_out(const char *h5_path)
{
    char csv[4100], dir[4100];
    if (strlen(h5_path) > 4000) return dl_fail("results: path too long: %.80s...", h5_path);
    DL_TRY(dl_check_dir_of("results", h5_path));
    dir_of(h5_path, dir, sizeof dir);
    if (access(dir, W_OK) != 0)
        return dl_fail("results: directory %s of %s is not writable: %s", dir, h5_path, strerror(errno));
    dl_results_csv_path(h5_path, csv, sizeof csv);
    dl_result_row *old = NULL;
    int64_t nold = 0;
    DL_TRY(check_targets(h5_path, csv, &old, &nold));
    free(old);
    return 0;
}

int dl_results_append(const char *h5_path, const dl_result_row *rows, int64_t n)
{
    if (n < 0) return dl_fail("results: negative row count %lld", (long long)n);
    char csv[4100], tmp_h5[4200], tmp_csv[4200];
    if (strlen(h5_path) > 4000) return dl_fail("results: path too long: %.80s...", h5_path);
    dl_results_csv_path(h5_path, csv, sizeof csv);
    snprintf(tmp_h5, sizeof tmp_h5, "%s.tmp.%ld", h5_path, (long)getpid());
    snprintf(tmp_csv, sizeof tmp_csv, "%s.tmp.%ld", csv, (long)getpid());

    /* Serialise concurrent appenders on the directory. */
    const int dfd = dl_lock_dir_of("results", h5_path);
    if (dfd < 0) return -1;

    dl_result_row *old = NULL, *all = NULL;
    int64_t nold = 0;
    /* both targets checked under the lock, before anything is written */
    int rc = check_targets(h5_path, csv, &old, &nold);
    if (!rc) {
        all = malloc((size_t)(nold + n > 0 ? nold + n : 1) * sizeof *all);
        if (!all) rc = dl_fail("results: out of memory appending %lld rows to %s", (long long)n, h5_path);
    }
    if (!rc) {
        if (nold) memcpy(all, old, (size_t)nold * sizeof *all);
        if (n) memcpy(all + nold, rows, (size_t)n * sizeof *all);
        h5_quiet q;
        quiet_on(&q);
        rc = write_h5(tmp_h5, all, nold + n);
        quiet_off(&q);
    }
    if (!rc && fsync_path(tmp_h5) != 0) rc = dl_fail("results: fsync %s failed: %s", tmp_h5, strerror(errno));
    if (!rc) rc = write_csv(tmp_csv, all, nold + n);
    if (!rc && dl_results_fail_before_rename)
        rc = dl_fail("results: injected failure before renaming %s (test hook)", tmp_h5);
    if (!rc && rename(tmp_h5, h5_path) != 0)
        rc = dl_fail("results: rename %s -> %s failed: %s", tmp_h5, h5_path, strerror(errno));
    if (!rc && rename(tmp_csv, csv) != 0)
        rc = dl_fail("results: rename %s -> %s failed (the .h5 is updated, the CSV twin is stale): %s", tmp_csv, csv,
                     strerror(errno));
    if (rc) {
        unlink(tmp_h5);
        unlink(tmp_csv);
    } else {
        fsync(dfd);
    }
    flock(dfd, LOCK_UN);
    close(dfd);
    free(old);
    free(all);
    return rc;
}

/* candidate.c - the candidate file (an external kernel's output, see
 * dl_candidate.h and data/SCHEMA.md "The candidate file"): strict reading and
 * validation against a golden file, writing (tests, C producers), and scoring
 * into a results row with the same comparison routine and thresholds as
 * `decodelab run`. */
#include "dl_candidate.h"
#include "dl_h5.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../ref/dl_formats.h"
#include "dl_compare.h"
#include "dl_run.h"

/* longest "ext:<producer>:<backend>" that fits the results' variant column */
#define VARIANT_MAX 63

void dl_candidate_init(dl_candidate *c)
{
    memset(c, 0, sizeof *c);
    c->median_us = c->min_us = c->max_us = c->mean_us = c->stdrel = c->elapsed_s = c->peak_read_gbps = NAN;
    c->samples = c->converged = c->num_splits = c->deterministic = -1;
    c->o_dtype = DL_F32;
}

void dl_candidate_free(dl_candidate *c)
{
    if (!c) return;
    free(c->o);
    free(c->lse);
    c->o = NULL;
    c->lse = NULL;
}

/* ================================================================ reading */

typedef dl_h5 rd; /* the candidate being read */

static void quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

/* Root attributes through the one HDF5 layer (dl_h5.h): 0 read, 1 absent and
 * optional, -1 error (recorded). */
static int present(const rd *r, const char *name, int required)
{
    const int has = dl_h5_has(r, "/", name);
    if (has < 0) return dl_fail("%s: cannot query attribute /@%s", r->path, name);
    if (!has) return required ? dl_fail("%s: attribute /@%s is missing", r->path, name) : 1;
    return 0;
}

static int get_str(const rd *r, const char *name, char *buf, size_t n, int required)
{
    const int p = present(r, name, required);
    return p ? p : dl_h5_get_str(r, "/", name, buf, n);
}

static int get_i64(const rd *r, const char *name, int64_t *v, int required)
{
    const int p = present(r, name, required);
    return p ? p : dl_h5_get_i64(r, "/", name, v);
}

/* A number (float or integer): optional. */
static int get_f64(const rd *r, const char *name, double *v)
{
    const int p = present(r, name, 0);
    return p ? p : dl_h5_get_num(r, "/", name, v);
}

/* Open dataset name, check rank and dims, its dtype attribute (returned in
 * dt) and that the HDF5 type matches it. Returns the dataset id, 0 when absent
 * and optional, -1 on error. */
static hid_t ds_open(const rd *r, const char *name, int rank, const hsize_t *want, int required, const dl_dtype *allowed,
                     int nallowed, dl_dtype *dt)
{
    htri_t ex = H5Lexists(r->file, name, H5P_DEFAULT);
    if (ex <= 0) {
        if (required) return dl_fail("%s: dataset /%s is missing", r->path, name), -1;
        return 0;
    }
    hid_t d = H5Dopen2(r->file, name, H5P_DEFAULT);
    if (d < 0) return dl_fail("%s: /%s is not a dataset", r->path, name), -1;
    hid_t s = H5Dget_space(d), t = H5Dget_type(d);
    hsize_t dims[8] = {0};
    int rk = s >= 0 ? H5Sget_simple_extent_ndims(s) : -1;
    int ok = 0;
    char want_s[96] = "", got_s[96] = "";
    for (int i = 0; i < rank; i++)
        snprintf(want_s + strlen(want_s), sizeof want_s - strlen(want_s), "%s%llu", i ? "," : "",
                 (unsigned long long)want[i]);
    if (rk != rank) {
        dl_fail("%s: dataset /%s has rank %d, expected %d ([%s] from the golden config)", r->path, name, rk, rank, want_s);
        goto out;
    }
    H5Sget_simple_extent_dims(s, dims, NULL);
    for (int i = 0; i < rank; i++)
        snprintf(got_s + strlen(got_s), sizeof got_s - strlen(got_s), "%s%llu", i ? "," : "",
                 (unsigned long long)dims[i]);
    if (memcmp(dims, want, (size_t)rank * sizeof *dims)) {
        dl_fail("%s: dataset /%s has shape [%s], expected [%s] from the golden config", r->path, name, got_s, want_s);
        goto out;
    }
    char dts[16] = "";
    hid_t a = H5Aexists(d, "dtype") > 0 ? H5Aopen(d, "dtype", H5P_DEFAULT) : -1;
    if (a < 0) {
        dl_fail("%s: dataset /%s has no dtype attribute", r->path, name);
        goto out;
    }
    {
        /* read the dtype string through the root-attribute reader's logic */
        hid_t ft = H5Aget_type(a), mt = H5Tcopy(H5T_C_S1);
        int good = 0;
        if (ft >= 0 && H5Tget_class(ft) == H5T_STRING) {
            if (H5Tis_variable_str(ft) > 0) {
                char *sv = NULL;
                H5Tset_cset(mt, H5Tget_cset(ft));
                H5Tset_size(mt, H5T_VARIABLE);
                if (H5Aread(a, mt, &sv) >= 0 && sv && strlen(sv) < sizeof dts) {
                    snprintf(dts, sizeof dts, "%s", sv);
                    good = 1;
                }
                if (sv) H5free_memory(sv);
            } else if (H5Tget_size(ft) < sizeof dts) {
                H5Tset_cset(mt, H5Tget_cset(ft)); /* a UTF-8 string does not convert to ASCII */
                H5Tset_size(mt, H5Tget_size(ft) + 1);
                if (H5Aread(a, mt, dts) >= 0) good = 1;
            }
        }
        if (ft >= 0) H5Tclose(ft);
        H5Tclose(mt);
        H5Aclose(a);
        if (!good) {
            dl_fail("%s: dataset /%s: dtype attribute is not a short string", r->path, name);
            goto out;
        }
    }
    int found = 0;
    for (int i = 0; i < nallowed; i++)
        if (!strcmp(dts, dl_dtype_name(allowed[i]))) {
            *dt = allowed[i];
            found = 1;
        }
    if (!found) {
        char list[64] = "";
        for (int i = 0; i < nallowed; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", dl_dtype_name(allowed[i]));
        dl_fail("%s: dataset /%s has dtype '%s', expected one of %s", r->path, name, dts, list);
        goto out;
    }
    /* the HDF5 type must store that encoding: float32 for f32, 16-bit unsigned for f16/bf16 */
    H5T_class_t cls = H5Tget_class(t);
    size_t sz = H5Tget_size(t);
    int tok = *dt == DL_F32 ? (cls == H5T_FLOAT && sz == 4)
                            : (cls == H5T_INTEGER && sz == 2 && H5Tget_sign(t) == H5T_SGN_NONE);
    if (!tok) {
        dl_fail("%s: dataset /%s has dtype '%s' but its HDF5 type is %s of %zu bytes (expected %s)", r->path, name, dts,
                cls == H5T_FLOAT ? "float" : cls == H5T_INTEGER ? "integer" : "another class", sz,
                *dt == DL_F32 ? "float32" : "uint16");
        goto out;
    }
    ok = 1;
out:
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    if (!ok) {
        H5Dclose(d);
        return -1;
    }
    return d;
}

int dl_candidate_model_ok(const char *s)
{
    const int m = dl_model_find(s);
    return m >= 0 && m != DL_MODEL_ORIG;
}

static int read_attrs(const rd *r, const dl_golden *g, dl_candidate *c)
{
    const char *p = r->path;
    char fmt[64];
    int64_t ver = 0;
    if (get_str(r, "format", fmt, sizeof fmt, 1)) return -1;
    if (strcmp(fmt, DL_CANDIDATE_FORMAT))
        return dl_fail("%s: format is '%s', expected '%s'", p, fmt, DL_CANDIDATE_FORMAT);
    if (get_i64(r, "format_version", &ver, 1)) return -1;
    if (ver != DL_CANDIDATE_VERSION)
        return dl_fail("%s: format_version is %lld, this decodelab reads version %d", p, (long long)ver,
                       DL_CANDIDATE_VERSION);
    if (get_str(r, "producer", c->producer, sizeof c->producer, 1)) return -1;
    if (get_str(r, "backend", c->backend, sizeof c->backend, 1)) return -1;
    if (get_str(r, "settings", c->settings, sizeof c->settings, 1)) return -1;
    if (!c->producer[0]) return dl_fail("%s: producer is empty", p);
    if (!c->backend[0]) return dl_fail("%s: backend is empty", p);
    if (strchr(c->producer, ':') || strchr(c->backend, ':'))
        return dl_fail("%s: producer '%s' / backend '%s' must not contain ':' (the variant is ext:<producer>:<backend>)",
                       p, c->producer, c->backend);
    if (4 + strlen(c->producer) + 1 + strlen(c->backend) > VARIANT_MAX)
        return dl_fail("%s: producer '%s' and backend '%s' are too long together (ext:<producer>:<backend> must fit %d "
                       "characters)",
                       p, c->producer, c->backend, VARIANT_MAX);

    char want[32];
    dl_run_hash_string(dl_golden_inputs_hash(g), want, sizeof want);
    if (get_str(r, "golden_hash", c->golden_hash, sizeof c->golden_hash, 1)) return -1;
    if (strcmp(c->golden_hash, want))
        return dl_fail("%s: golden_hash is '%s' but the golden file's inputs hash to '%s' (a candidate for another "
                       "golden file)",
                       p, c->golden_hash, want);

    char base[8];
    if (get_str(r, "lse_base", base, sizeof base, 1)) return -1;
    if (!strcmp(base, "e")) c->lse_base = 0;
    else if (!strcmp(base, "2")) c->lse_base = 2;
    else return dl_fail("%s: lse_base is '%s', expected 'e' (natural log) or '2' (log2, FlashInfer)", p, base);

    /* optional strings */
    int rc;
    if ((rc = get_str(r, "model", c->model, sizeof c->model, 0)) < 0) return -1;
    if (rc == 0 && !dl_candidate_model_ok(c->model))
        return dl_fail("%s: model is '%s', expected a golden model other than orig (decodelab golden --help lists "
                       "them), or no model attribute", p, c->model);
    if (get_str(r, "compute", c->compute, sizeof c->compute, 0) < 0) return -1;
    if (get_str(r, "dequant", c->dequant, sizeof c->dequant, 0) < 0) return -1;
    if (get_str(r, "unit", c->unit, sizeof c->unit, 0) < 0) return -1;
    /* the registry's axes: a value outside them (compute = "f32") fell back to bf16's band without a word */
    static const char *const axes[3][6] = {{"fp32", "bf16", "fp8", NULL},
                                           {"cast", "fast", "hw", "none", NULL},
                                           {"simt", "mma", "stream", "wgmma", NULL}};
    const char *const axis_name[3] = {"compute", "dequant", "unit"};
    const char *const axis_val[3] = {c->compute, c->dequant, c->unit};
    for (int a = 0; a < 3; a++) {
        int ok = !axis_val[a][0] || (a == 0 && dl_candidate_model_ok(axis_val[a]) && strcmp(axis_val[a], "exact"));
        char list[64] = "";
        for (int k = 0; axes[a][k]; k++) {
            ok |= !strcmp(axis_val[a], axes[a][k]);
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", axes[a][k]);
        }
        if (!ok)
            return dl_fail("%s: %s is '%s', expected one of %s%s (the registry's axes), or no %s attribute", p,
                           axis_name[a], axis_val[a], list, a == 0 ? " or a golden model's name" : "", axis_name[a]);
    }
    if (get_str(r, "timing_mode", c->timing_mode, sizeof c->timing_mode, 0) < 0) return -1;
    if (get_str(r, "device_name", c->device_name, sizeof c->device_name, 0) < 0) return -1;
    if (get_str(r, "driver_version", c->driver_version, sizeof c->driver_version, 0) < 0) return -1;
    if (get_str(r, "runtime_version", c->runtime_version, sizeof c->runtime_version, 0) < 0) return -1;

    /* optional numbers */
    struct {
        const char *name;
        double *v;
    } fl[] = {{"median_us", &c->median_us}, {"min_us", &c->min_us},       {"max_us", &c->max_us},
              {"mean_us", &c->mean_us},     {"stdrel", &c->stdrel},       {"elapsed_s", &c->elapsed_s},
              {"peak_read_gbps", &c->peak_read_gbps}};
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
        if ((rc = get_f64(r, fl[i].name, fl[i].v)) < 0) return -1;
        if (rc == 0 && !(isfinite(*fl[i].v) && *fl[i].v >= 0))
            return dl_fail("%s: %s is %g, expected a finite number >= 0", p, fl[i].name, *fl[i].v);
    }
    struct {
        const char *name;
        int64_t *v, lo, hi;
    } in[] = {{"samples", &c->samples, 1, INT64_MAX},
              {"converged", &c->converged, 0, 1},
              {"num_splits", &c->num_splits, 1, 1 << 20},
              {"deterministic", &c->deterministic, 0, 1}};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        if ((rc = get_i64(r, in[i].name, in[i].v, 0)) < 0) return -1;
        if (rc == 0 && (*in[i].v < in[i].lo || *in[i].v > in[i].hi))
            return dl_fail("%s: %s is %lld, expected %lld..%lld", p, in[i].name, (long long)*in[i].v,
                           (long long)in[i].lo, (long long)in[i].hi);
    }
    /* timing attributes hang together: a median, and min <= median <= max */
    int any_timing = !isnan(c->min_us) || !isnan(c->max_us) || !isnan(c->mean_us) || !isnan(c->stdrel) ||
                     !isnan(c->elapsed_s) || !isnan(c->peak_read_gbps) || c->converged >= 0 || c->samples >= 0 ||
                     c->timing_mode[0];
    if (any_timing && isnan(c->median_us))
        return dl_fail("%s: median_us is missing but other timing attributes are present", p);
    if (!isnan(c->median_us)) {
        if (!(c->median_us > 0)) return dl_fail("%s: median_us is %g, expected > 0", p, c->median_us);
        if (!isnan(c->min_us) && c->min_us > c->median_us)
            return dl_fail("%s: min_us %g is above median_us %g", p, c->min_us, c->median_us);
        if (!isnan(c->max_us) && c->max_us < c->median_us)
            return dl_fail("%s: max_us %g is below median_us %g", p, c->max_us, c->median_us);
        if (!isnan(c->mean_us) && ((!isnan(c->min_us) && c->mean_us < c->min_us) ||
                                   (!isnan(c->max_us) && c->mean_us > c->max_us)))
            return dl_fail("%s: mean_us %g is outside min_us %g .. max_us %g", p, c->mean_us, c->min_us, c->max_us);
    }
    if (!isnan(c->peak_read_gbps) && !(c->peak_read_gbps > 0))
        return dl_fail("%s: peak_read_gbps is %g, expected > 0", p, c->peak_read_gbps);
    return 0;
}

static int read_data(const rd *r, const dl_golden *g, dl_candidate *c)
{
    const dl_config *cfg = &g->c.cfg;
    c->batch_size = cfg->batch_size;
    c->num_qo_heads = cfg->num_qo_heads;
    c->head_dim = cfg->head_dim;
    hsize_t od[3] = {(hsize_t)cfg->batch_size, (hsize_t)cfg->num_qo_heads, (hsize_t)cfg->head_dim};
    size_t no = (size_t)(cfg->batch_size * cfg->num_qo_heads * cfg->head_dim), nl = (size_t)(cfg->batch_size * cfg->num_qo_heads);
    static const dl_dtype o_types[] = {DL_F32, DL_F16, DL_BF16}, l_types[] = {DL_F32};
    int rc = -1;
    dl_dtype ldt;
    hid_t d = ds_open(r, "o", 3, od, 1, o_types, 3, &c->o_dtype), dl = -1;
    uint16_t *bits = NULL;
    if (d < 0) return -1;
    c->o = dl_malloc(no * sizeof(float), "candidate o");
    if (!c->o) goto out;
    if (c->o_dtype == DL_F32) {
        if (H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, c->o) < 0) {
            dl_fail("%s: cannot read dataset /o", r->path);
            goto out;
        }
    } else {
        bits = dl_malloc(no * sizeof(uint16_t), "candidate o bits");
        if (!bits) goto out;
        if (H5Dread(d, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, bits) < 0) {
            dl_fail("%s: cannot read dataset /o", r->path);
            goto out;
        }
        for (size_t i = 0; i < no; i++) c->o[i] = c->o_dtype == DL_F16 ? dl_f16_to_f32(bits[i]) : dl_bf16_to_f32(bits[i]);
    }
    hsize_t ld[2] = {od[0], od[1]};
    dl = ds_open(r, "lse", 2, ld, 0, l_types, 1, &ldt);
    if (dl < 0) goto out;
    if (dl > 0) {
        c->lse = dl_malloc(nl * sizeof(float), "candidate lse");
        if (!c->lse) goto out;
        if (H5Dread(dl, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, c->lse) < 0) {
            dl_fail("%s: cannot read dataset /lse", r->path);
            goto out;
        }
        /* log2 -> natural log: ln(x) = log2(x) * ln 2 */
        if (c->lse_base == 2)
            for (size_t i = 0; i < nl; i++) c->lse[i] = (float)((double)c->lse[i] * 0.69314718055994530942);
    }
    rc = 0;
out:
    free(bits);
    if (d > 0) H5Dclose(d);
    if (dl > 0) H5Dclose(dl);
    return rc;
}

int dl_candidate_read(const char *path, const dl_golden *g, dl_candidate *c)
{
    dl_candidate_init(c);
    quiet();
    struct stat st;
    if (stat(path, &st) != 0) return dl_fail("%s: cannot open candidate file (%s)", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return dl_fail("%s: not a regular file", path); /* a FIFO would block the read */
    if (access(path, R_OK) != 0) return dl_fail("%s: cannot read: %s", path, strerror(errno));
    if (H5Fis_hdf5(path) <= 0) return dl_fail("%s: not an HDF5 file", path);
    rd r = {path, H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT)};
    if (r.file < 0) return dl_fail("%s: cannot open as HDF5", path);
    int rc = read_attrs(&r, g, c);
    if (!rc) rc = read_data(&r, g, c);
    H5Fclose(r.file);
    if (rc) dl_candidate_free(c);
    return rc;
}

/* ================================================================ writing */

/* attributes through the one HDF5 layer (dl_h5.h); the file being written is h */
static int w_str(const dl_h5 *h, const char *name, const char *v) { return dl_h5_put_str(h, h->file, "/", name, v); }
static int w_i64(const dl_h5 *h, const char *name, int64_t v) { return dl_h5_put_i64(h, h->file, "/", name, v); }
static int w_f64(const dl_h5 *h, const char *name, double v) { return dl_h5_put_f64(h, h->file, "/", name, v); }

static int w_ds(const dl_h5 *h, const char *name, hid_t ft, hid_t mt, int rank, const hsize_t *dims,
                const void *data, const char *dtype)
{
    hid_t s = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(h->file, name, ft, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = (d >= 0 && H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0)
                 ? 0
                 : dl_fail("%s: %s dataset /%s failed", h->path, d < 0 ? "creating" : "writing", name);
    if (!rc) rc = dl_h5_put_str(h, d, name, "dtype", dtype);
    if (d >= 0) H5Dclose(d);
    H5Sclose(s);
    return rc;
}

static int write_body(const dl_h5 *f, const dl_candidate *c)
{
    int rc = 0;
    rc |= w_str(f, "format", DL_CANDIDATE_FORMAT);
    rc |= w_i64(f, "format_version", DL_CANDIDATE_VERSION);
    rc |= w_str(f, "producer", c->producer);
    rc |= w_str(f, "backend", c->backend);
    rc |= w_str(f, "settings", c->settings);
    rc |= w_str(f, "golden_hash", c->golden_hash);
    rc |= w_str(f, "lse_base", c->lse_base == 2 ? "2" : "e");
    const char *sn[] = {"model", "compute", "dequant", "unit", "timing_mode", "device_name", "driver_version",
                        "runtime_version"};
    const char *sv[] = {c->model, c->compute, c->dequant, c->unit, c->timing_mode, c->device_name, c->driver_version,
                        c->runtime_version};
    for (size_t i = 0; i < sizeof sn / sizeof sn[0]; i++)
        if (sv[i][0]) rc |= w_str(f, sn[i], sv[i]);
    const char *fn[] = {"median_us", "min_us", "max_us", "mean_us", "stdrel", "elapsed_s", "peak_read_gbps"};
    const double fv[] = {c->median_us, c->min_us, c->max_us, c->mean_us, c->stdrel, c->elapsed_s, c->peak_read_gbps};
    for (size_t i = 0; i < sizeof fn / sizeof fn[0]; i++)
        if (!isnan(fv[i])) rc |= w_f64(f, fn[i], fv[i]);
    const char *in[] = {"samples", "converged", "num_splits", "deterministic"};
    const int64_t iv[] = {c->samples, c->converged, c->num_splits, c->deterministic};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        if (iv[i] >= 0) rc |= w_i64(f, in[i], iv[i]);
    if (rc) return -1;

    size_t no = (size_t)(c->batch_size * c->num_qo_heads * c->head_dim), nl = (size_t)(c->batch_size * c->num_qo_heads);
    hsize_t od[3] = {(hsize_t)c->batch_size, (hsize_t)c->num_qo_heads, (hsize_t)c->head_dim};
    if (c->o_dtype == DL_F32) {
        rc = w_ds(f, "o", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, od, c->o, "f32");
    } else if (c->o_dtype == DL_F16 || c->o_dtype == DL_BF16) {
        uint16_t *bits = dl_malloc(no * sizeof *bits, "candidate o bits");
        if (!bits) return -1;
        for (size_t i = 0; i < no; i++)
            bits[i] = c->o_dtype == DL_F16 ? dl_f32_to_f16(c->o[i], DL_NOSAT) : dl_f32_to_bf16(c->o[i], DL_NOSAT);
        rc = w_ds(f, "o", H5T_STD_U16LE, H5T_NATIVE_UINT16, 3, od, bits, dl_dtype_name(c->o_dtype));
        free(bits);
    } else {
        return dl_fail("candidate o_dtype %s is not f32, f16 or bf16", dl_dtype_name(c->o_dtype));
    }
    if (rc || !c->lse) return rc;
    float *l = dl_malloc(nl * sizeof *l, "candidate lse");
    if (!l) return -1;
    for (size_t i = 0; i < nl; i++) l[i] = c->lse_base == 2 ? (float)((double)c->lse[i] / 0.69314718055994530942) : c->lse[i];
    hsize_t ld[2] = {od[0], od[1]};
    rc = w_ds(f, "lse", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, ld, l, "f32");
    free(l);
    return rc;
}

int dl_candidate_write(const char *path, const dl_candidate *c, int force)
{
    quiet();
    if (!force && access(path, F_OK) == 0) return dl_fail("%s: exists (refusing to overwrite)", path);
    if (!c->o) return dl_fail("%s: candidate has no o to write", path);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return dl_fail("%s: cannot create", tmp);
    const dl_h5 h = {path, f};
    int rc = write_body(&h, c); /* each failure records its own message */
    if (H5Fclose(f) < 0 && !rc) rc = dl_fail("%s: closing %s failed", path, tmp);
    /* durable like the golden and results files: the file, then (after the rename) its directory */
    int fd = rc ? -1 : open(tmp, O_RDONLY);
    if (!rc && (fd < 0 || fsync(fd) != 0)) rc = dl_fail("%s: fsync %s failed: %s", path, tmp, strerror(errno));
    if (fd >= 0) close(fd);
    if (!rc && rename(tmp, path) != 0) rc = dl_fail("%s: cannot rename into place (%s)", path, strerror(errno));
    if (rc) {
        unlink(tmp);
        return -1;
    }
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else slash[slash == dir] = 0; /* "/x" -> "/" */
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0) { /* best effort: the rename is durable once it is */
        fsync(fd);
        close(fd);
    }
    return 0;
}

/* ================================================================ scoring */

static void add_reason(dl_result_row *r, const char *fmt, const char *a, const char *b)
{
    size_t k = strlen(r->reason);
    if (k + 3 >= sizeof r->reason) return;
    if (k) {
        strcat(r->reason, "; ");
        k += 2;
    }
    snprintf(r->reason + k, sizeof r->reason - k, fmt, a, b);
}

int dl_candidate_score(const dl_golden *g, const char *golden_path, const dl_candidate *c, const char *cand_path,
                       const char *model_override, dl_result_row *r)
{
    const dl_case *cs = &g->c;
    const dl_config *cfg = &cs->cfg;

    /* which model is claimed */
    const char *mname = model_override ? model_override : c->model;
    int have_model = mname && mname[0] && strcmp(mname, "none") != 0;
    dl_model m = DL_MODEL_EXACT;
    if (have_model && (!dl_candidate_model_ok(mname) || dl_model_parse(mname, &m)))
        return dl_fail("--model: '%s' is not a golden model other than orig (decodelab golden --help) or none", mname);

    dl_run_fill_config(r, golden_path, cs, dl_golden_inputs_hash(g));
    dl_run_fill_params(r, &g->params);
    char vname[sizeof c->producer + sizeof c->backend + 8];
    snprintf(vname, sizeof vname, "ext:%s:%s", c->producer, c->backend); /* fits: checked when read */
    snprintf(r->variant, sizeof r->variant, "%.*s", (int)sizeof r->variant - 1, vname);
    snprintf(r->compute, sizeof r->compute, "%s", c->compute[0] ? c->compute : "unknown");
    snprintf(r->dequant, sizeof r->dequant, "%s", c->dequant[0] ? c->dequant : "unknown");
    snprintf(r->unit, sizeof r->unit, "%s", c->unit[0] ? c->unit : "unknown");
    snprintf(r->kernel_file, sizeof r->kernel_file, "external");
    r->num_splits = c->num_splits;
    r->deterministic = c->deterministic;
    snprintf(r->reason, sizeof r->reason, "candidate %s", cand_path);

    int have_exact = g->have[DL_MODEL_EXACT];
    const dl_output *exact = have_exact ? &g->out[DL_MODEL_EXACT] : NULL;
    const double o_round = dl_output_roundoff(c->o_dtype);
    snprintf(r->model_schedule, sizeof r->model_schedule, "none");
    /* a model stored from a reverse walk of the KV cache (E8) is not what a forward kernel computes: as `run` does
     * not judge a GPU variant by it, the claimed model's band decides here (exact and orig do not depend on it) */
    const int reversed = have_model && g->have[m] && g->params.kv_order != DL_KV_FORWARD && m != DL_MODEL_EXACT &&
                         m != DL_MODEL_ORIG;
    if (have_model && g->have[m] && !reversed) {
        /* like run: the claimed model with the implementation limits (PASS / FAIL), and exact with that
         * model's expected band (within / above expected). A candidate carries no schedule: the model is
         * the stored (unsplit) one. */
        snprintf(r->model, sizeof r->model, "%s", dl_model_name(m));
        dl_run_judge(r, c->o, c->lse, &g->out[m], m, exact, cfg->kv_dtype, o_round);
    } else {
        /* no model (or the golden file lacks it): exact only; the band of the claimed model, else of the
         * compute axis when it names a model, else of bf16, decides */
        if (!have_exact)
            return dl_fail("%s: the golden file has no /golden/exact%s%s%s", golden_path,
                           have_model ? " and no /golden/" : "", have_model ? mname : "",
                           have_model ? " to judge the candidate by" : " to judge a candidate without a model by");
        dl_model tm = DL_MODEL_BF16;
        if (reversed) {
            tm = m;
            add_reason(r, "the golden file's %s model walks the KV cache in reverse (kv_order = reverse): judged by "
                          "the %s band against exact", mname, mname);
        } else if (have_model) {
            tm = m;
            add_reason(r, "the golden file has no /golden/%s: judged by the %s band against exact", mname,
                       mname);
        } else if (dl_candidate_model_ok(c->compute) && strcmp(c->compute, "exact")) {
            dl_model_parse(c->compute, &tm);
        }
        if (!have_model)
            add_reason(r, "no model claimed: judged by the expected %s-vs-exact band (PASS within, FAIL above)%s",
                       dl_model_name(tm), "");
        snprintf(r->model, sizeof r->model, "exact");
        dl_run_judge(r, c->o, c->lse, NULL, tm, exact, cfg->kv_dtype, o_round);
    }
    if (!c->lse) add_reason(r, "no lse in the candidate: judged on o alone%s%s", "", "");
    if (c->o_dtype != DL_F32) {
        char u[64];
        snprintf(u, sizeof u, ": o limits widened by its unit roundoff %.3g", o_round);
        add_reason(r, "o stored as %s%s", dl_dtype_name(c->o_dtype), u);
    }
    /* last: the judgement's notes above are what the row's fixed-width reason must keep */
    if (c->settings[0]) add_reason(r, "settings: %s%s", c->settings, "");

    /* bytes, timing, device */
    dl_bytes b;
    dl_run_bytes(cs, &b);
    r->bytes_q = b.q;
    r->bytes_kv = b.kv;
    r->bytes_kv_pages = b.kv_pages;
    r->bytes_scales = b.scales;
    r->bytes_page_table = b.page_table;
    r->bytes_o = b.o;
    r->bytes_lse = b.lse;
    r->bytes_total = b.total;
    if (!isnan(c->median_us)) {
        snprintf(r->timing_mode, sizeof r->timing_mode, "%s", c->timing_mode[0] ? c->timing_mode : "unknown");
        snprintf(r->flush, sizeof r->flush, "unknown"); /* the candidate file does not say how L2 was flushed */
        r->graph_launches = 1;
        r->time_samples = c->samples;
        r->time_converged = c->converged;
        r->time_median_s = c->median_us / 1e6;
        r->time_min_s = c->min_us / 1e6;
        r->time_max_s = c->max_us / 1e6;
        r->time_mean_s = c->mean_us / 1e6;
        r->time_stdrel = c->stdrel;
        r->time_elapsed_s = c->elapsed_s;
        r->gbps = (double)r->bytes_total / r->time_median_s / 1e9;
        r->peak_read_gbps = c->peak_read_gbps;
        r->frac_peak = r->gbps / c->peak_read_gbps; /* NaN when the peak is unknown */
    }
    snprintf(r->device_name, sizeof r->device_name, "%s", c->device_name);
    snprintf(r->driver_version, sizeof r->driver_version, "%s", c->driver_version);
    snprintf(r->runtime_version, sizeof r->runtime_version, "%s", c->runtime_version);
    snprintf(r->clock_source, sizeof r->clock_source, "not read (external producer)");
    snprintf(r->generator, sizeof r->generator, "%s", dl_generator_string());
    return 0;
}

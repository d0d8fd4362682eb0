/* golden.c - write and read the golden file (HDF5), the contract in data/SCHEMA.md.
 *
 * Writing: every dataset chunked (about 256 KiB per chunk) with the Fletcher32
 * checksum filter, no object timestamps (identical inputs give identical
 * files), to "<path>.tmp.<pid>", flushed, fsync'ed and renamed; the temp file
 * is removed on any error. Reading: validates the format, version, config,
 * every dataset's presence, rank, shape, HDF5 type and `dtype` attribute, and
 * the element count before allocating anything sized by the file; then the
 * page table, non-finite values (refused, except the poison slots, which must
 * hold NaN). HDF5 verifies the checksums on read. Every refusal is one line
 * naming the file, the object and the value (dl_fail). */
#include "dl_golden.h"
#include "dl_h5.h"
#include "dl_run.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef DL_GIT_COMMIT
#define DL_GIT_COMMIT "unknown"
#endif

#define CHUNK_BYTES (256 * 1024)

static void h5_quiet(void) { dl_h5_quiet(); }

const char *dl_generator_string(void) { return "decodelab " DL_VERSION " (git " DL_GIT_COMMIT ")"; }



/* ================================ writing ================================ */

typedef struct {
    const char *path; /* for messages: the final path */
    hid_t file;
} wctx;

/* attributes through the one HDF5 layer (dl_h5.h) */
static int attr_i64(const wctx *w, hid_t obj, const char *objname, const char *name, int64_t v)
{
    const dl_h5 h = {w->path, w->file};
    return dl_h5_put_i64(&h, obj, objname, name, v);
}
static int attr_u64(const wctx *w, hid_t obj, const char *objname, const char *name, uint64_t v)
{
    const dl_h5 h = {w->path, w->file};
    return dl_h5_put_u64(&h, obj, objname, name, v);
}
static int attr_f64(const wctx *w, hid_t obj, const char *objname, const char *name, double v)
{
    const dl_h5 h = {w->path, w->file};
    return dl_h5_put_f64(&h, obj, objname, name, v);
}
static int attr_str(const wctx *w, hid_t obj, const char *objname, const char *name, const char *v)
{
    const dl_h5 h = {w->path, w->file};
    return dl_h5_put_str(&h, obj, objname, name, v);
}

static hid_t group_create(const wctx *w, const char *name)
{
    const char *path = w->path;
    hid_t gcpl = -1, g = -1;
    H5_CHECK(gcpl = H5Pcreate(H5P_GROUP_CREATE), name);
    H5_CHECK(H5Pset_obj_track_times(gcpl, 0), name);
    H5_CHECK(g = H5Gcreate2(w->file, name, H5P_DEFAULT, gcpl, H5P_DEFAULT), name);
fail:
    if (gcpl >= 0) H5Pclose(gcpl);
    return g;
}

/* Chunk shape: full inner dimensions, outer dimensions cut so that a chunk
 * holds about CHUNK_BYTES (at least one element). */
static void chunk_dims(int rank, const hsize_t *dims, size_t elem, hsize_t *chunk)
{
    hsize_t target = CHUNK_BYTES / elem;
    for (int i = 0; i < rank; i++) {
        hsize_t inner = 1;
        for (int j = i + 1; j < rank; j++) inner *= dims[j];
        hsize_t c = target / inner;
        chunk[i] = c < 1 ? 1 : c > dims[i] ? dims[i] : c;
    }
}

/* Create a chunked, checksummed dataset, write it and its `dtype` attribute. */
static int ds_write(const wctx *w, const char *name, hid_t ftype, hid_t mtype, int rank, const hsize_t *dims,
                    const void *data, const char *dtype_attr)
{
    const char *path = w->path;
    hid_t s = -1, dcpl = -1, d = -1;
    hsize_t chunk[4];
    int rc = -1;
    chunk_dims(rank, dims, H5Tget_size(ftype), chunk);
    H5_CHECK(s = H5Screate_simple(rank, dims, NULL), name);
    H5_CHECK(dcpl = H5Pcreate(H5P_DATASET_CREATE), name);
    H5_CHECK(H5Pset_chunk(dcpl, rank, chunk), name);
    H5_CHECK(H5Pset_fletcher32(dcpl), name);
    H5_CHECK(H5Pset_obj_track_times(dcpl, 0), name);
    H5_CHECK(d = H5Dcreate2(w->file, name, ftype, s, H5P_DEFAULT, dcpl, H5P_DEFAULT), name);
    H5_CHECK(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), name);
    if (dtype_attr && attr_str(w, d, name, "dtype", dtype_attr)) goto fail;
    rc = 0;
fail:
    if (d >= 0) H5Dclose(d);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (s >= 0) H5Sclose(s);
    return rc;
}

/* File and memory HDF5 types of a stored encoding. */
static void dtype_h5(dl_dtype t, hid_t *ftype, hid_t *mtype)
{
    switch (t) {
    case DL_F32: *ftype = H5T_IEEE_F32LE; *mtype = H5T_NATIVE_FLOAT; break;
    case DL_F16:
    case DL_BF16: *ftype = H5T_STD_U16LE; *mtype = H5T_NATIVE_UINT16; break;
    default: *ftype = H5T_STD_U8LE; *mtype = H5T_NATIVE_UINT8; break;
    }
}

static void cache_dims(const dl_config *cfg, int64_t num_pages, hsize_t *dims)
{
    dims[0] = (hsize_t)num_pages;
    dims[1] = (hsize_t)(cfg->kv_layout == DL_NHD ? cfg->page_size : cfg->num_kv_heads);
    dims[2] = (hsize_t)(cfg->kv_layout == DL_NHD ? cfg->num_kv_heads : cfg->page_size);
    dims[3] = (hsize_t)cfg->head_dim;
}

static int write_config(const wctx *w, const dl_config *c)
{
    hid_t g = group_create(w, "/config");
    int rc = -1;
    if (g < 0) return -1;
    int64_t lmin = c->seq_len_min, lmax = c->seq_len_max;
    if (c->num_explicit_lens > 0) {
        lmin = lmax = c->explicit_lens[0];
        for (int64_t i = 1; i < c->num_explicit_lens; i++) {
            if (c->explicit_lens[i] < lmin) lmin = c->explicit_lens[i];
            if (c->explicit_lens[i] > lmax) lmax = c->explicit_lens[i];
        }
    }
    const char *o = "/config";
    if (attr_i64(w, g, o, "batch_size", c->batch_size) || attr_i64(w, g, o, "num_qo_heads", c->num_qo_heads) ||
        attr_i64(w, g, o, "num_kv_heads", c->num_kv_heads) || attr_i64(w, g, o, "head_dim", c->head_dim) ||
        attr_i64(w, g, o, "page_size", c->page_size) ||
        attr_str(w, g, o, "kv_layout", dl_layout_name(c->kv_layout)) ||
        attr_str(w, g, o, "q_dtype", dl_dtype_name(c->q_dtype)) ||
        attr_str(w, g, o, "kv_dtype", dl_dtype_name(c->kv_dtype)) ||
        attr_f64(w, g, o, "sm_scale", dl_sm_scale(c)) || attr_u64(w, g, o, "seed", c->seed) ||
        attr_str(w, g, o, "distribution", dl_dist_name(c->dist.kind)) ||
        attr_f64(w, g, o, "dist_mean", c->dist.mean) || attr_f64(w, g, o, "dist_std", c->dist.std) ||
        attr_f64(w, g, o, "dist_lo", c->dist.lo) || attr_f64(w, g, o, "dist_hi", c->dist.hi) ||
        attr_f64(w, g, o, "outlier_prob", c->dist.outlier_prob) ||
        attr_f64(w, g, o, "outlier_var", c->dist.outlier_var) ||
        attr_i64(w, g, o, "num_outlier_channels", c->dist.num_outlier_channels) ||
        attr_f64(w, g, o, "channel_scale", c->dist.channel_scale) ||
        attr_i64(w, g, o, "sink_tokens", c->dist.sink_tokens) || attr_f64(w, g, o, "sink_delta", c->dist.sink_delta) ||
        attr_str(w, g, o, "seq_len_mode", c->num_explicit_lens > 0 ? "list" : "range") ||
        attr_i64(w, g, o, "seq_len_min", lmin) || attr_i64(w, g, o, "seq_len_max", lmax) ||
        attr_str(w, g, o, "kv_scale_mode", dl_scale_mode_name(c->kv_scale_mode)) ||
        attr_f64(w, g, o, "kv_scale_value", c->kv_scale_value) ||
        attr_i64(w, g, o, "share_prefix_pages", c->share_prefix_pages))
        goto fail;
    rc = 0;
fail:
    H5Gclose(g);
    return rc;
}

static int write_inputs(const wctx *w, const dl_case *c)
{
    const dl_config *cfg = &c->cfg;
    hid_t ft, mt, g = group_create(w, "/inputs");
    if (g < 0) return -1;
    H5Gclose(g);
    hsize_t qd[3] = {(hsize_t)cfg->batch_size, (hsize_t)cfg->num_qo_heads, (hsize_t)cfg->head_dim};
    hsize_t cd[4];
    cache_dims(cfg, c->num_pages, cd);
    hsize_t hd[1] = {(hsize_t)cfg->num_kv_heads};
    hsize_t ipd[1] = {(hsize_t)cfg->batch_size + 1};
    hsize_t ind[1] = {(hsize_t)c->kv_indptr[cfg->batch_size]};
    hsize_t lpd[1] = {(hsize_t)cfg->batch_size};
    dtype_h5(cfg->q_dtype, &ft, &mt);
    DL_TRY(ds_write(w, "/inputs/q", ft, mt, 3, qd, c->q, dl_dtype_name(cfg->q_dtype)));
    dtype_h5(cfg->kv_dtype, &ft, &mt);
    DL_TRY(ds_write(w, "/inputs/k_cache", ft, mt, 4, cd, c->k_cache, dl_dtype_name(cfg->kv_dtype)));
    DL_TRY(ds_write(w, "/inputs/v_cache", ft, mt, 4, cd, c->v_cache, dl_dtype_name(cfg->kv_dtype)));
    DL_TRY(ds_write(w, "/inputs/k_scale", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, hd, c->k_scale, "f32"));
    DL_TRY(ds_write(w, "/inputs/v_scale", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, hd, c->v_scale, "f32"));
    DL_TRY(ds_write(w, "/inputs/kv_indptr", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, ipd, c->kv_indptr, "i32"));
    DL_TRY(ds_write(w, "/inputs/kv_indices", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, ind, c->kv_indices, "i32"));
    DL_TRY(ds_write(w, "/inputs/kv_last_page_len", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, lpd, c->kv_last_page_len,
                    "i32"));
    if (c->q_orig) DL_TRY(ds_write(w, "/inputs/q_orig", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, qd, c->q_orig, "f32"));
    if (c->k_orig) DL_TRY(ds_write(w, "/inputs/k_orig", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4, cd, c->k_orig, "f32"));
    if (c->v_orig) DL_TRY(ds_write(w, "/inputs/v_orig", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4, cd, c->v_orig, "f32"));
    return 0;
}

static int write_model(const wctx *w, const dl_case *c, const dl_output *out)
{
    const dl_config *cfg = &c->cfg;
    const char *path = w->path;
    if ((unsigned)out->model >= DL_MODEL_COUNT)
        return dl_fail("%s: model = %d is unknown", path, (int)out->model);
    if (out->batch_size != cfg->batch_size || out->num_qo_heads != cfg->num_qo_heads ||
        out->head_dim != cfg->head_dim)
        return dl_fail("%s: output of model %s has shape [%lld, %lld, %lld], the case [%lld, %lld, %lld]", path,
                       dl_model_name(out->model), (long long)out->batch_size, (long long)out->num_qo_heads,
                       (long long)out->head_dim, (long long)cfg->batch_size, (long long)cfg->num_qo_heads,
                       (long long)cfg->head_dim);
    const char *dir = dl_model_group(out->model);
    char name[64];
    hid_t g = group_create(w, dir);
    if (g < 0) return -1;
    int rc = attr_str(w, g, dir, "description", dl_model_description(out->model));
    /* the P-cast statistics of an emulated model (dl_output) */
    if (!rc && out->p_values >= 0)
        rc = attr_i64(w, g, dir, "p_values", out->p_values) || attr_i64(w, g, dir, "p_zeros", out->p_zeros);
    if (!rc && isfinite(out->p_cast_nmse)) rc = attr_f64(w, g, dir, "p_cast_nmse", out->p_cast_nmse);
    H5Gclose(g);
    if (rc) return rc;
    hsize_t od[3] = {(hsize_t)cfg->batch_size, (hsize_t)cfg->num_qo_heads, (hsize_t)cfg->head_dim};
    hsize_t ld[2] = {(hsize_t)cfg->batch_size, (hsize_t)cfg->num_qo_heads};
    int64_t no = cfg->batch_size * cfg->num_qo_heads * cfg->head_dim, nl = cfg->batch_size * cfg->num_qo_heads;
    if (dl_model_is_fp64(out->model)) {
        snprintf(name, sizeof name, "%s/o", dir);
        DL_TRY(ds_write(w, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, od, out->o, "f64"));
        snprintf(name, sizeof name, "%s/lse", dir);
        DL_TRY(ds_write(w, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, ld, out->lse, "f64"));
        return 0;
    }
    /* float models: their values are float32 held in double; store float32 */
    float *buf = dl_malloc((size_t)no * sizeof(float), "float model output");
    if (!buf) return -1;
    for (int64_t i = 0; i < no; i++) buf[i] = (float)out->o[i];
    snprintf(name, sizeof name, "%s/o", dir);
    rc = ds_write(w, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, od, buf, "f32");
    if (!rc) {
        for (int64_t i = 0; i < nl; i++) buf[i] = (float)out->lse[i];
        snprintf(name, sizeof name, "%s/lse", dir);
        rc = ds_write(w, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, ld, buf, "f32");
    }
    free(buf);
    /* the P-rounding flip allowance of the models that round P to e4m3 (dl_output.o_flip) */
    if (!rc && out->o_flip) {
        snprintf(name, sizeof name, "%s/o_flip", dir);
        rc = ds_write(w, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, ld, out->o_flip, "f64");
    }
    return rc;
}

static int write_params(const wctx *w, const dl_model_params *p)
{
    const char *path = w->path;
    hid_t g = -1;
    int rc = -1;
    H5_CHECK(g = H5Gopen2(w->file, "/golden", H5P_DEFAULT), "/golden");
    if (attr_i64(w, g, "/golden", "kv_block", p->kv_block) ||
        attr_i64(w, g, "/golden", "acc_mantissa_bits", p->acc_mantissa_bits) ||
        attr_i64(w, g, "/golden", "acc_block", p->acc_block) ||
        attr_f64(w, g, "/golden", "p_scale", (double)p->p_scale) ||
        attr_i64(w, g, "/golden", "acc_promote_blocks", p->acc_promote_blocks) ||
        attr_str(w, g, "/golden", "kv_order", dl_kv_order_name(p->kv_order)))
        goto fail;
    rc = 0;
fail:
    if (g >= 0) H5Gclose(g);
    return rc;
}

static int write_all(const wctx *w, const dl_case *c, const dl_output *outs, int n, const dl_model_params *p)
{
    hid_t root = w->file;
    DL_TRY(attr_str(w, root, "/", "format", DL_GOLDEN_FORMAT));
    DL_TRY(attr_i64(w, root, "/", "format_version", DL_GOLDEN_VERSION));
    DL_TRY(attr_str(w, root, "/", "generator", dl_generator_string()));
    DL_TRY(write_config(w, &c->cfg));
    DL_TRY(write_inputs(w, c));
    hid_t g = group_create(w, "/golden");
    if (g < 0) return -1;
    H5Gclose(g);
    DL_TRY(write_params(w, p));
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++)
            if (outs[j].model == outs[i].model)
                return dl_fail("%s: model %s given twice", w->path, dl_model_name(outs[i].model));
        DL_TRY(write_model(w, c, &outs[i]));
    }
    return 0;
}

static int fsync_path(const char *p, int dir)
{
    int fd = open(p, dir ? O_RDONLY | O_DIRECTORY : O_RDONLY);
    if (fd < 0) return dl_fail("%s: open for fsync failed: %s", p, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && !dir) return dl_fail("%s: fsync failed: %s", p, strerror(e));
    return 0;
}

static int check_values(const char *path, const dl_case *c, int allow_nonfinite);

/* The index of the first non-finite x[i], i < n, or -1 (a model's o or lse, checked by the writer and the reader). */
static int64_t first_nonfinite(const double *x, int64_t n)
{
    for (int64_t i = 0; x && i < n; i++)
        if (!isfinite(x[i])) return i;
    return -1;
}

/* The temp file being written, unlinked by a SIGINT / SIGTERM / SIGHUP that ends the process meanwhile (a SIGKILL
 * leaves it: its name, FILE.tmp.PID, says what it is). */
static char g_tmp_path[4096];
static void unlink_tmp_and_die(int sig)
{
    if (g_tmp_path[0]) unlink(g_tmp_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

int dl_golden_check_case(const char *path, const dl_case *c)
{
    if (!check_values("", c, 0)) return 0;
    char e[1024];
    snprintf(e, sizeof e, "%s", dl_last_error() + 2); /* check_values' message after its empty path's ": " */
    return dl_fail("%s: refusing to write: %s", path, e);
}

int dl_golden_write(const char *path, const dl_case *c, const dl_output *outs, int n, const dl_model_params *p,
                    int force)
{
    char tmp[4096];
    struct stat st;
    h5_quiet();
    const int exists = stat(path, &st) == 0;
    if (exists && !force) return dl_fail("%s: file exists (use --force to overwrite)", path);
    if (exists && !S_ISREG(st.st_mode)) /* --force replaces a golden file, never a device, FIFO or folder */
        return dl_fail("%s: exists and is not a regular file (refusing to replace it)", path);
    if (dl_config_validate(&c->cfg)) {
        char e[1024];
        snprintf(e, sizeof e, "%s", dl_last_error());
        return dl_fail("%s: refusing to write: %s", path, e);
    }
    /* what the reader refuses is not written: non-finite or zero inputs and scales, non-finite model outputs
     * (e.g. --sm-scale 1e308, --dist-std 1e200, --kv-scale 1e-300) */
    if (dl_golden_check_case(path, c)) return -1;
    for (int i = 0; i < n; i++) {
        const dl_output *out = &outs[i];
        const int64_t nl = out->batch_size * out->num_qo_heads, no = nl * out->head_dim;
        const int64_t ko = first_nonfinite(out->o, no), kl = ko < 0 ? first_nonfinite(out->lse, nl) : -1;
        if (ko >= 0 || kl >= 0)
            return dl_fail("%s: refusing to write: %s/%s[%lld] = %g is not finite (the model overflowed: see the case's "
                           "scales and values)", path, dl_model_group(out->model), ko >= 0 ? "o" : "lse",
                           (long long)(ko >= 0 ? ko : kl), ko >= 0 ? out->o[ko] : out->lse[kl]);
    }
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return dl_fail("%s: path too long", path);
    const char *base = strrchr(tmp, '/');
    if (strlen(base ? base + 1 : tmp) > NAME_MAX) /* said plainly, before HDF5's message quotes the whole name */
        return dl_fail("%s: file name too long (%zu characters; with its temporary suffix at most %d)", path,
                       strlen(base ? base + 1 : tmp), NAME_MAX);
    snprintf(g_tmp_path, sizeof g_tmp_path, "%s", tmp);
    void (*old_int)(int) = signal(SIGINT, unlink_tmp_and_die), (*old_term)(int) = signal(SIGTERM, unlink_tmp_and_die),
         (*old_hup)(int) = signal(SIGHUP, unlink_tmp_and_die);

    hid_t fcpl = -1;
    wctx w = {path, -1};
    int rc = -1;
    H5_CHECK(fcpl = H5Pcreate(H5P_FILE_CREATE), tmp);
    H5_CHECK(H5Pset_obj_track_times(fcpl, 0), tmp);
    H5_CHECK(w.file = H5Fcreate(tmp, H5F_ACC_EXCL, fcpl, H5P_DEFAULT), tmp);
    if (write_all(&w, c, outs, n, p)) goto fail;
    H5_CHECK(H5Fflush(w.file, H5F_SCOPE_GLOBAL), tmp);
    hid_t f = w.file;
    w.file = -1;
    H5_CHECK(H5Fclose(f), tmp);
    if (fsync_path(tmp, 0)) goto fail;
    if (rename(tmp, path) != 0) {
        dl_fail("%s: rename from %s failed: %s", path, tmp, strerror(errno));
        goto fail;
    }
    {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path);
        fsync_path(dirname(dir), 1); /* best effort: the rename is durable once the directory is */
    }
    rc = 0;
fail:
    if (fcpl >= 0) H5Pclose(fcpl);
    if (rc != 0) {
        if (w.file >= 0) H5Fclose(w.file);
        unlink(tmp);
    }
    signal(SIGINT, old_int);
    signal(SIGTERM, old_term);
    signal(SIGHUP, old_hup);
    g_tmp_path[0] = '\0';
    return rc;
}

/* ================================ reading ================================ */

typedef struct {
    const char *path;
    hid_t file;
    int64_t file_bytes; /* size of the file on disk: no dataset may claim more storage */
} rctx;

/* A chunk may hold at most this many bytes (ours are 256 KiB; h5py's automatic
 * chunks are at most 1 MiB), and a dataset's data at most DL_MAX_INFLATE times
 * its stored bytes (deflate cannot compress better than about 1032:1). With
 * these a file cannot make the reader allocate much more than its own size. */
#define DL_MAX_CHUNK_BYTES (64 << 20)
#define DL_MAX_INFLATE 1100.0

static int rattr_i64(const rctx *r, const char *o, const char *name, int64_t *v)
{
    const dl_h5 h = {r->path, r->file};
    return dl_h5_get_i64(&h, o, name, v);
}
static int rattr_f64(const rctx *r, const char *o, const char *name, double *v)
{
    const dl_h5 h = {r->path, r->file};
    return dl_h5_get_f64(&h, o, name, v);
}
static int rattr_str(const rctx *r, const char *o, const char *name, char *buf, size_t n)
{
    const dl_h5 h = {r->path, r->file};
    return dl_h5_get_str(&h, o, name, buf, n);
}

static int read_config(const rctx *r, dl_config *c)
{
    const char *o = "/config", *path = r->path;
    char s[64];
    dl_config_default(c);
    if (H5Lexists(r->file, o, H5P_DEFAULT) <= 0) return dl_fail("%s: group /config is missing", path);
    DL_TRY(rattr_i64(r, o, "batch_size", &c->batch_size));
    DL_TRY(rattr_i64(r, o, "num_qo_heads", &c->num_qo_heads));
    DL_TRY(rattr_i64(r, o, "num_kv_heads", &c->num_kv_heads));
    DL_TRY(rattr_i64(r, o, "head_dim", &c->head_dim));
    DL_TRY(rattr_i64(r, o, "page_size", &c->page_size));
    DL_TRY(rattr_str(r, o, "kv_layout", s, sizeof s));
    if (dl_layout_parse(s, &c->kv_layout)) return dl_fail("%s: /config@kv_layout = '%s' is not NHD or HND", path, s);
    DL_TRY(rattr_str(r, o, "q_dtype", s, sizeof s));
    if (dl_dtype_parse(s, &c->q_dtype)) return dl_fail("%s: /config@q_dtype = '%s' is unknown", path, s);
    DL_TRY(rattr_str(r, o, "kv_dtype", s, sizeof s));
    if (dl_dtype_parse(s, &c->kv_dtype)) return dl_fail("%s: /config@kv_dtype = '%s' is unknown", path, s);
    DL_TRY(rattr_f64(r, o, "sm_scale", &c->sm_scale));
    DL_TRY(dl_h5_get_u64(&(const dl_h5){r->path, r->file}, o, "seed", &c->seed));
    DL_TRY(rattr_str(r, o, "distribution", s, sizeof s));
    if (dl_dist_parse(s, &c->dist.kind)) return dl_fail("%s: /config@distribution = '%s' is unknown", path, s);
    DL_TRY(rattr_f64(r, o, "dist_mean", &c->dist.mean));
    DL_TRY(rattr_f64(r, o, "dist_std", &c->dist.std));
    DL_TRY(rattr_f64(r, o, "dist_lo", &c->dist.lo));
    DL_TRY(rattr_f64(r, o, "dist_hi", &c->dist.hi));
    DL_TRY(rattr_f64(r, o, "outlier_prob", &c->dist.outlier_prob));
    DL_TRY(rattr_f64(r, o, "outlier_var", &c->dist.outlier_var));
    DL_TRY(rattr_i64(r, o, "num_outlier_channels", &c->dist.num_outlier_channels));
    DL_TRY(rattr_f64(r, o, "channel_scale", &c->dist.channel_scale));
    /* the sink parameters came later: absent in older files (defaults; they have no sink case) */
    if (H5Aexists_by_name(r->file, o, "sink_tokens", H5P_DEFAULT) > 0)
        DL_TRY(rattr_i64(r, o, "sink_tokens", &c->dist.sink_tokens));
    if (H5Aexists_by_name(r->file, o, "sink_delta", H5P_DEFAULT) > 0)
        DL_TRY(rattr_f64(r, o, "sink_delta", &c->dist.sink_delta));
    DL_TRY(rattr_str(r, o, "seq_len_mode", s, sizeof s));
    if (strcmp(s, "list") == 0) {
        if (c->batch_size < 1 || c->batch_size > DL_MAX_EXPLICIT_LENS)
            return dl_fail("%s: /config@seq_len_mode = 'list' with batch_size = %lld, outside 1..%d", path,
                           (long long)c->batch_size, DL_MAX_EXPLICIT_LENS);
        c->num_explicit_lens = c->batch_size; /* the lengths themselves come from the page table */
        for (int64_t i = 0; i < c->batch_size; i++) c->explicit_lens[i] = 1;
    } else if (strcmp(s, "range") != 0) {
        return dl_fail("%s: /config@seq_len_mode = '%s' is not 'range' or 'list'", path, s);
    }
    DL_TRY(rattr_i64(r, o, "seq_len_min", &c->seq_len_min));
    DL_TRY(rattr_i64(r, o, "seq_len_max", &c->seq_len_max));
    DL_TRY(rattr_str(r, o, "kv_scale_mode", s, sizeof s));
    if (dl_scale_mode_parse(s, &c->kv_scale_mode))
        return dl_fail("%s: /config@kv_scale_mode = '%s' is not absmax, absmax-tensor or given", path, s);
    DL_TRY(rattr_f64(r, o, "kv_scale_value", &c->kv_scale_value));
    if (dl_config_validate(c)) {
        char e[1024];
        snprintf(e, sizeof e, "%s", dl_last_error());
        return dl_fail("%s: /%s", path, e);
    }
    if (!(c->sm_scale > 0.0)) return dl_fail("%s: /config@sm_scale = %g must be > 0", path, c->sm_scale);
    return 0;
}

/* Expected layout of one dataset. dims[i] < 0 means "any (>= 1)". */
typedef struct {
    const char *name;
    int rank;
    int64_t dims[4];
    dl_dtype enc;       /* for dtype attr and HDF5 type; DL_DTYPE_COUNT + k for the extra kinds below */
} ds_spec;
enum { ENC_I32 = DL_DTYPE_COUNT, ENC_F64 };

static const char *enc_name(int e)
{
    return e == ENC_I32 ? "i32" : e == ENC_F64 ? "f64" : dl_dtype_name((dl_dtype)e);
}

static const char *storage_name(int e)
{
    switch (e) {
    case DL_F32: return "float32";
    case ENC_F64: return "float64";
    case ENC_I32: return "int32";
    case DL_F16:
    case DL_BF16: return "uint16 bit patterns";
    default: return "uint8 codes";
    }
}

/* Open a dataset and check rank, shape, HDF5 type and the dtype attribute;
 * fills dims_out. Returns the dataset id or -1. */
static hid_t ds_open(const rctx *r, const ds_spec *sp, hsize_t *dims_out)
{
    const char *path = r->path, *name = sp->name;
    hid_t d = -1, s = -1, t = -1;
    char attr[64];
    if (H5Lexists(r->file, name, H5P_DEFAULT) <= 0) {
        dl_fail("%s: dataset %s is missing", path, name);
        return -1;
    }
    H5_CHECK(d = H5Dopen2(r->file, name, H5P_DEFAULT), name);
    H5_CHECK(s = H5Dget_space(d), name);
    int rank = H5Sget_simple_extent_ndims(s);
    if (rank != sp->rank) {
        dl_fail("%s: dataset %s has rank %d, expected %d", path, name, rank, sp->rank);
        goto fail;
    }
    H5_CHECK(H5Sget_simple_extent_dims(s, dims_out, NULL), name);
    double elems = 1;
    for (int i = 0; i < rank; i++) {
        elems *= (double)dims_out[i];
        if ((sp->dims[i] >= 0 && dims_out[i] != (hsize_t)sp->dims[i]) || dims_out[i] < 1) {
            dl_fail("%s: dataset %s has dimension %d = %llu, expected %lld (from /config)", path, name, i,
                    (unsigned long long)dims_out[i], (long long)sp->dims[i]);
            goto fail;
        }
    }
    if (elems > (double)DL_MAX_ELEMS) {
        dl_fail("%s: dataset %s has %.3g elements, over the limit %.3g", path, name, elems, (double)DL_MAX_ELEMS);
        goto fail;
    }
    H5_CHECK(t = H5Dget_type(d), name);
    H5T_class_t cls = H5Tget_class(t);
    size_t sz = H5Tget_size(t);
    int ok;
    switch ((int)sp->enc) {
    case DL_F32: ok = cls == H5T_FLOAT && sz == 4; break;
    case ENC_F64: ok = cls == H5T_FLOAT && sz == 8; break;
    case ENC_I32: ok = cls == H5T_INTEGER && sz == 4 && H5Tget_sign(t) == H5T_SGN_2; break;
    case DL_F16:
    case DL_BF16: ok = cls == H5T_INTEGER && sz == 2 && H5Tget_sign(t) == H5T_SGN_NONE; break;
    default: ok = cls == H5T_INTEGER && sz == 1 && H5Tget_sign(t) == H5T_SGN_NONE; break;
    }
    if (!ok) {
        dl_fail("%s: dataset %s is stored as %s%s of %zu bytes, expected the storage of %s (%s)", path, name,
                cls == H5T_INTEGER ? (H5Tget_sign(t) == H5T_SGN_NONE ? "unsigned " : "signed ") : "",
                cls == H5T_FLOAT ? "float" : cls == H5T_INTEGER ? "integer" : cls == H5T_STRING ? "string" : "other type",
                sz, enc_name(sp->enc), storage_name(sp->enc));
        goto fail;
    }
    H5Tclose(t);
    t = -1;
    H5Sclose(s);
    s = -1;
    {
        /* the data must be on disk before anything is sized by the header */
        hid_t dcpl = H5Dget_create_plist(d);
        hsize_t cd[4] = {1, 1, 1, 1};
        double chunk = 0, need = elems * (double)sz, stored = (double)H5Dget_storage_size(d);
        H5D_layout_t lay = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
        int ext = dcpl >= 0 ? H5Pget_external_count(dcpl) : -1;
        if (lay == H5D_CHUNKED && H5Pget_chunk(dcpl, 4, cd) == rank) {
            chunk = (double)sz;
            for (int i = 0; i < rank; i++) chunk *= (double)cd[i];
        }
        if (dcpl >= 0) H5Pclose(dcpl);
        H5Eclear2(H5E_DEFAULT);
        if ((lay != H5D_CHUNKED && lay != H5D_CONTIGUOUS && lay != H5D_COMPACT) || ext != 0) {
            dl_fail("%s: dataset %s has layout %d with %d external files: only data inside the file "
                    "(contiguous, chunked or compact) is read", path, name, (int)lay, ext);
            goto fail;
        }
        if (chunk > DL_MAX_CHUNK_BYTES) {
            dl_fail("%s: dataset %s has chunks of %.0f bytes, over the limit %d", path, name, chunk, DL_MAX_CHUNK_BYTES);
            goto fail;
        }
        if (stored > (double)r->file_bytes || need > DL_MAX_INFLATE * stored + 4096.0) {
            dl_fail("%s: dataset %s holds %.0f bytes of data but %.0f bytes are stored (file: %lld bytes): "
                    "unwritten or implausible storage", path, name, need, stored, (long long)r->file_bytes);
            goto fail;
        }
    }
    if (H5Aexists(d, "dtype") <= 0) {
        dl_fail("%s: dataset %s has no dtype attribute (expected '%s')", path, name, enc_name(sp->enc));
        goto fail;
    }
    if (rattr_str(r, name, "dtype", attr, sizeof attr)) goto fail;
    if (strcmp(attr, enc_name(sp->enc)) != 0) {
        dl_fail("%s: dataset %s@dtype = '%s', expected '%s'", path, name, attr, enc_name(sp->enc));
        goto fail;
    }
    return d;
fail:
    if (t >= 0) H5Tclose(t);
    if (s >= 0) H5Sclose(s);
    if (d >= 0) H5Dclose(d);
    return -1;
}

/* Memory type for reading an encoding. */
static hid_t enc_mtype(int e)
{
    switch (e) {
    case DL_F32: return H5T_NATIVE_FLOAT;
    case ENC_F64: return H5T_NATIVE_DOUBLE;
    case ENC_I32: return H5T_NATIVE_INT32;
    case DL_F16:
    case DL_BF16: return H5T_NATIVE_UINT16;
    default: return H5T_NATIVE_UINT8;
    }
}
static size_t enc_size(int e)
{
    return e == ENC_F64 ? 8 : e == ENC_I32 ? 4 : dl_dtype_size((dl_dtype)e);
}

/* Open, check, allocate and read a dataset. *out is malloc'ed (caller frees). */
static int ds_read(const rctx *r, const ds_spec *sp, hsize_t *dims, void **out)
{
    const char *path = r->path, *name = sp->name;
    hid_t d = ds_open(r, sp, dims);
    int rc = -1;
    *out = NULL;
    if (d < 0) return -1;
    size_t n = 1;
    for (int i = 0; i < sp->rank; i++) n *= (size_t)dims[i];
    void *buf = dl_malloc(n * enc_size(sp->enc), name);
    if (!buf) goto fail;
    H5_CHECK(H5Dread(d, enc_mtype(sp->enc), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), name);
    *out = buf;
    buf = NULL;
    rc = 0;
fail:
    free(buf);
    H5Dclose(d);
    return rc;
}

/* The first bad K or V element of request b, in the order page, slot, head, K then V, dim (NULL w: whether there
 * is one): a used slot's code (or its original) not finite (unless allowed), or a slot past the end not NaN. */
enum { KV_NONFINITE, KV_POISON, KV_ORIG };
typedef struct {
    int what, k;
    int64_t page, slot, h, d;
    float x;
} kv_bad;
static int kv_request_bad(const dl_case *c, int64_t b, int allow_nonfinite, kv_bad *w)
{
    const dl_config *cfg = &c->cfg;
    const int64_t D = cfg->head_dim;
    const void *codes[2] = {c->k_cache, c->v_cache};
    const float *orig[2] = {c->k_orig, c->v_orig};
    const int64_t first = c->kv_indptr[b], last = c->kv_indptr[b + 1] - 1;
    for (int64_t pi = first; pi <= last; pi++) {
        const int64_t page = c->kv_indices[pi];
        const int64_t used = pi == last ? c->kv_last_page_len[b] : cfg->page_size;
        for (int64_t slot = 0; slot < cfg->page_size; slot++)
            for (int64_t h = 0; h < cfg->num_kv_heads; h++) {
                const int64_t off = dl_kv_offset(cfg, page, slot, h);
                for (int k = 0; k < 2; k++)
                    for (int64_t d = 0; d < D; d++) {
                        const float x = dl_decode_elem(cfg->kv_dtype, codes[k], off + d);
                        int what = -1;
                        float v = x;
                        if (slot < used && !isfinite(x) && !allow_nonfinite) what = KV_NONFINITE;
                        else if (slot >= used && !isnan(x)) what = KV_POISON;
                        else if (slot < used && orig[k] && !isfinite(orig[k][off + d]) && !allow_nonfinite)
                            what = KV_ORIG, v = orig[k][off + d];
                        if (what < 0) continue;
                        if (w) *w = (kv_bad){what, k, page, slot, h, d, v};
                        return 1;
                    }
            }
    }
    return 0;
}

/* Non-finite values: q, scales, orig values of used slots refused; poison
 * slots of the caches must hold NaN and used slots must be finite. */
static int check_values(const char *path, const dl_case *c, int allow_nonfinite)
{
    const dl_config *cfg = &c->cfg;
    const int64_t nq = cfg->batch_size * cfg->num_qo_heads * cfg->head_dim;
    for (int64_t i = 0; i < nq && !allow_nonfinite; i++) {
        float x = dl_decode_elem(cfg->q_dtype, c->q, i);
        if (!isfinite(x)) return dl_fail("%s: /inputs/q[%lld] = %g is not finite", path, (long long)i, x);
        if (c->q_orig && !isfinite(c->q_orig[i]))
            return dl_fail("%s: /inputs/q_orig[%lld] = %g is not finite", path, (long long)i, c->q_orig[i]);
    }
    for (int64_t h = 0; h < cfg->num_kv_heads; h++) {
        if (!(c->k_scale[h] > 0.0f) || !isfinite(c->k_scale[h]))
            return dl_fail("%s: /inputs/k_scale[%lld] = %g must be finite and > 0", path, (long long)h, c->k_scale[h]);
        if (!(c->v_scale[h] > 0.0f) || !isfinite(c->v_scale[h]))
            return dl_fail("%s: /inputs/v_scale[%lld] = %g must be finite and > 0", path, (long long)h, c->v_scale[h]);
    }
    /* the caches, request by request on all threads (a 4 GiB cache is ~2^31 elements); the first bad element of
     * the lowest request with one is reported, the same whatever the threads */
    const int64_t B = cfg->batch_size;
    int64_t bad = B;
#pragma omp parallel for schedule(dynamic, 1) reduction(min : bad)
    for (int64_t b = 0; b < B; b++)
        if (kv_request_bad(c, b, allow_nonfinite, NULL)) bad = b < bad ? b : bad;
    if (bad == B) return 0;
    kv_bad w;
    kv_request_bad(c, bad, allow_nonfinite, &w);
    const char *name = w.k ? "/inputs/v_cache" : "/inputs/k_cache";
    if (w.what == KV_POISON)
        return dl_fail("%s: %s[%lld, slot %lld, head %lld, %lld] = %g is a poison slot (past the end of request %lld) "
                       "and must hold NaN", path, name, (long long)w.page, (long long)w.slot, (long long)w.h,
                       (long long)w.d, w.x, (long long)bad);
    if (w.what == KV_ORIG)
        return dl_fail("%s: %s[%lld, slot %lld, head %lld, %lld] = %g is not finite", path,
                       w.k ? "/inputs/v_orig" : "/inputs/k_orig", (long long)w.page, (long long)w.slot, (long long)w.h,
                       (long long)w.d, w.x);
    return dl_fail("%s: %s[%lld, slot %lld, head %lld, %lld] = %g is not finite (request %lld)", path, name,
                   (long long)w.page, (long long)w.slot, (long long)w.h, (long long)w.d, w.x, (long long)bad);
}

static int read_params(const rctx *r, dl_model_params *p)
{
    int64_t v;
    double x;
    const char *path = r->path;
    dl_model_params_default(p);
    DL_TRY(rattr_i64(r, "/golden", "kv_block", &v));
    if (v < 1 || v > DL_MAX_SEQ_LEN) return dl_fail("%s: /golden@kv_block = %lld is outside 1..%d", path, (long long)v, DL_MAX_SEQ_LEN);
    p->kv_block = v;
    DL_TRY(rattr_i64(r, "/golden", "acc_mantissa_bits", &v));
    if (v < 0 || v > 23) return dl_fail("%s: /golden@acc_mantissa_bits = %lld is outside 0..23", path, (long long)v);
    p->acc_mantissa_bits = (int)v;
    DL_TRY(rattr_i64(r, "/golden", "acc_block", &v));
    if (v < 1 || v > DL_MAX_HEAD_DIM * 64) return dl_fail("%s: /golden@acc_block = %lld is outside 1..%d", path, (long long)v, DL_MAX_HEAD_DIM * 64);
    p->acc_block = v;
    DL_TRY(rattr_f64(r, "/golden", "p_scale", &x));
    if (!(x > 0.0) || !isfinite(x) || x > 1e30) return dl_fail("%s: /golden@p_scale = %g must be finite and > 0", path, x);
    p->p_scale = (float)x;
    /* acc_promote_blocks (fp8acc) came later: absent in older files, which have no fp8acc group */
    if (H5Aexists_by_name(r->file, "/golden", "acc_promote_blocks", H5P_DEFAULT) > 0) {
        DL_TRY(rattr_i64(r, "/golden", "acc_promote_blocks", &v));
        if (v < 1 || v > DL_MAX_HEAD_DIM) return dl_fail("%s: /golden@acc_promote_blocks = %lld is outside 1..%d", path, (long long)v, DL_MAX_HEAD_DIM);
        p->acc_promote_blocks = v;
    }
    /* kv_order came later still: absent = forward (the only order before) */
    if (H5Aexists_by_name(r->file, "/golden", "kv_order", H5P_DEFAULT) > 0) {
        char s[32];
        DL_TRY(rattr_str(r, "/golden", "kv_order", s, sizeof s));
        if (dl_kv_order_parse(s, &p->kv_order))
            return dl_fail("%s: /golden@kv_order = '%s' is not forward or reverse", path, s);
    }
    return 0;
}

static int read_model(const rctx *r, dl_golden *g, dl_model m)
{
    const dl_config *cfg = &g->c.cfg;
    const char *path = r->path;
    char on[64], ln[64];
    snprintf(on, sizeof on, "%s/o", dl_model_group(m));
    snprintf(ln, sizeof ln, "%s/lse", dl_model_group(m));
    int enc = dl_model_is_fp64(m) ? ENC_F64 : DL_F32;
    ds_spec so = {on, 3, {cfg->batch_size, cfg->num_qo_heads, cfg->head_dim, 0}, (dl_dtype)enc};
    ds_spec sl = {ln, 2, {cfg->batch_size, cfg->num_qo_heads, 0, 0}, (dl_dtype)enc};
    hsize_t dims[4];
    void *o = NULL, *l = NULL;
    dl_output *out = &g->out[m];
    memset(out, 0, sizeof *out);
    out->model = m;
    out->batch_size = cfg->batch_size;
    out->num_qo_heads = cfg->num_qo_heads;
    out->head_dim = cfg->head_dim;
    out->p_values = out->p_zeros = -1;
    out->p_cast_nmse = NAN;
    if (ds_read(r, &so, dims, &o) || ds_read(r, &sl, dims, &l)) goto fail;
    /* optional P-cast statistics (emulated models of newer files) */
    if (H5Aexists_by_name(r->file, dl_model_group(m), "p_values", H5P_DEFAULT) > 0 &&
        H5Aexists_by_name(r->file, dl_model_group(m), "p_zeros", H5P_DEFAULT) > 0) {
        int64_t pv, pz;
        if (rattr_i64(r, dl_model_group(m), "p_values", &pv) || rattr_i64(r, dl_model_group(m), "p_zeros", &pz)) goto fail;
        if (pv < 0 || pz < 0 || pz > pv) {
            dl_fail("%s: %s@p_zeros = %lld, p_values = %lld: expected 0 <= p_zeros <= p_values", path, dl_model_group(m),
                    (long long)pz, (long long)pv);
            goto fail;
        }
        out->p_values = pv;
        out->p_zeros = pz;
    }
    if (H5Aexists_by_name(r->file, dl_model_group(m), "p_cast_nmse", H5P_DEFAULT) > 0) {
        double x;
        if (rattr_f64(r, dl_model_group(m), "p_cast_nmse", &x)) goto fail;
        if (!(x >= 0.0) || !isfinite(x)) {
            dl_fail("%s: %s@p_cast_nmse = %g must be finite and >= 0", path, dl_model_group(m), x);
            goto fail;
        }
        out->p_cast_nmse = x;
    }
    int64_t no = cfg->batch_size * cfg->num_qo_heads * cfg->head_dim, nl = cfg->batch_size * cfg->num_qo_heads;
    if (enc == ENC_F64) {
        out->o = o;
        out->lse = l;
        o = l = NULL;
    } else {
        out->o = dl_malloc((size_t)no * sizeof(double), on);
        out->lse = dl_malloc((size_t)nl * sizeof(double), ln);
        if (!out->o || !out->lse) goto fail;
        for (int64_t i = 0; i < no; i++) out->o[i] = ((float *)o)[i];
        for (int64_t i = 0; i < nl; i++) out->lse[i] = ((float *)l)[i];
    }
    const int64_t ko = g->allow_nonfinite ? -1 : first_nonfinite(out->o, no);
    const int64_t kl = g->allow_nonfinite || ko >= 0 ? -1 : first_nonfinite(out->lse, nl);
    if (ko >= 0 || kl >= 0) {
        dl_fail("%s: %s[%lld] = %g is not finite", path, ko >= 0 ? on : ln, (long long)(ko >= 0 ? ko : kl),
                ko >= 0 ? out->o[ko] : out->lse[kl]);
        goto fail;
    }
    /* optional: the P-rounding flip allowance (fp8, fp8acc in files written since 2026-12-01) */
    char fn[64];
    snprintf(fn, sizeof fn, "%s/o_flip", dl_model_group(m));
    if (H5Lexists(r->file, fn, H5P_DEFAULT) > 0) {
        ds_spec sf = {fn, 2, {cfg->batch_size, cfg->num_qo_heads, 0, 0}, (dl_dtype)ENC_F64};
        void *f = NULL;
        if (ds_read(r, &sf, dims, &f)) goto fail;
        out->o_flip = f;
        for (int64_t i = 0; i < nl; i++)
            if (!(out->o_flip[i] >= 0.0) || !isfinite(out->o_flip[i])) {
                dl_fail("%s: %s[%lld] = %g must be finite and >= 0", path, fn, (long long)i, out->o_flip[i]);
                goto fail;
            }
    }
    free(o);
    free(l);
    g->have[m] = 1;
    return 0;
fail:
    free(o);
    free(l);
    return -1;
}

static int read_all(const rctx *r, dl_golden *g)
{
    const char *path = r->path;
    char s[256];
    int64_t v;
    dl_case *c = &g->c;
    dl_config *cfg = &c->cfg;

    DL_TRY(rattr_str(r, "/", "format", s, sizeof s));
    if (strcmp(s, DL_GOLDEN_FORMAT) != 0)
        return dl_fail("%s: attribute /@format = '%s', expected '%s'", path, s, DL_GOLDEN_FORMAT);
    DL_TRY(rattr_i64(r, "/", "format_version", &v));
    if (v != DL_GOLDEN_VERSION)
        return dl_fail("%s: attribute /@format_version = %lld, this program reads version %d", path, (long long)v,
                       DL_GOLDEN_VERSION);
    DL_TRY(rattr_str(r, "/", "generator", g->generator, sizeof g->generator));
    DL_TRY(read_config(r, cfg));
    /* optional: a case whose inputs hold NaN/Inf on purpose says so (default 0: refused) */
    if (H5Aexists_by_name(r->file, "/config", "allow_nonfinite", H5P_DEFAULT) > 0) {
        DL_TRY(rattr_i64(r, "/config", "allow_nonfinite", &v));
        if (v != 0 && v != 1) return dl_fail("%s: /config@allow_nonfinite = %lld, expected 0 or 1", path, (long long)v);
        g->allow_nonfinite = (int)v;
    }
    /* optional (files written before it have none: 0, no sharing); checked against the page
     * table below (dl_case_check_share) */
    if (H5Aexists_by_name(r->file, "/config", "share_prefix_pages", H5P_DEFAULT) > 0) {
        DL_TRY(rattr_i64(r, "/config", "share_prefix_pages", &v));
        if (v < 0 || v > DL_MAX_SEQ_LEN)
            return dl_fail("%s: /config@share_prefix_pages = %lld is outside 0..%d", path, (long long)v,
                           DL_MAX_SEQ_LEN);
        cfg->share_prefix_pages = v;
    }
    H5Eclear2(H5E_DEFAULT);

    const int64_t B = cfg->batch_size, Hq = cfg->num_qo_heads, Hkv = cfg->num_kv_heads, D = cfg->head_dim;
    const int64_t d1 = cfg->kv_layout == DL_NHD ? cfg->page_size : Hkv, d2 = cfg->kv_layout == DL_NHD ? Hkv : cfg->page_size;
    hsize_t dims[4];
    void *p;

    /* page table first: it fixes the remaining shapes */
    ds_spec sip = {"/inputs/kv_indptr", 1, {B + 1}, (dl_dtype)ENC_I32};
    DL_TRY(ds_read(r, &sip, dims, &p));
    c->kv_indptr = p;
    if (c->kv_indptr[0] != 0)
        return dl_fail("%s: /inputs/kv_indptr[0] = %d, expected 0", path, c->kv_indptr[0]);
    for (int64_t b = 0; b < B; b++)
        if (c->kv_indptr[b + 1] <= c->kv_indptr[b])
            return dl_fail("%s: /inputs/kv_indptr[%lld] = %d is not greater than kv_indptr[%lld] = %d (not "
                           "increasing: every request needs >= 1 page)", path, (long long)b + 1, c->kv_indptr[b + 1],
                           (long long)b, c->kv_indptr[b]);
    ds_spec sin = {"/inputs/kv_indices", 1, {c->kv_indptr[B]}, (dl_dtype)ENC_I32};
    DL_TRY(ds_read(r, &sin, dims, &p));
    c->kv_indices = p;
    ds_spec slp = {"/inputs/kv_last_page_len", 1, {B}, (dl_dtype)ENC_I32};
    DL_TRY(ds_read(r, &slp, dims, &p));
    c->kv_last_page_len = p;

    ds_spec sq = {"/inputs/q", 3, {B, Hq, D}, cfg->q_dtype};
    DL_TRY(ds_read(r, &sq, dims, &c->q));
    ds_spec sk = {"/inputs/k_cache", 4, {-1, d1, d2, D}, cfg->kv_dtype};
    DL_TRY(ds_read(r, &sk, dims, &c->k_cache));
    c->num_pages = (int64_t)dims[0];
    ds_spec sv = {"/inputs/v_cache", 4, {c->num_pages, d1, d2, D}, cfg->kv_dtype};
    DL_TRY(ds_read(r, &sv, dims, &c->v_cache));
    ds_spec sks = {"/inputs/k_scale", 1, {Hkv}, DL_F32}, svs = {"/inputs/v_scale", 1, {Hkv}, DL_F32};
    DL_TRY(ds_read(r, &sks, dims, &p));
    c->k_scale = p;
    DL_TRY(ds_read(r, &svs, dims, &p));
    c->v_scale = p;
    /* optional originals */
    ds_spec sqo = {"/inputs/q_orig", 3, {B, Hq, D}, DL_F32};
    ds_spec sko = {"/inputs/k_orig", 4, {c->num_pages, d1, d2, D}, DL_F32};
    ds_spec svo = {"/inputs/v_orig", 4, {c->num_pages, d1, d2, D}, DL_F32};
    if (H5Lexists(r->file, sqo.name, H5P_DEFAULT) > 0) {
        DL_TRY(ds_read(r, &sqo, dims, &p));
        c->q_orig = p;
    }
    int hk = H5Lexists(r->file, sko.name, H5P_DEFAULT) > 0, hv = H5Lexists(r->file, svo.name, H5P_DEFAULT) > 0;
    if (hk != hv) return dl_fail("%s: dataset %s is missing (the other original is present)", path, hk ? svo.name : sko.name);
    if (hk) {
        DL_TRY(ds_read(r, &sko, dims, &p));
        c->k_orig = p;
        DL_TRY(ds_read(r, &svo, dims, &p));
        c->v_orig = p;
    }

    DL_TRY(dl_case_validate(c, path));
    /* explicit lengths are recovered from the page table */
    if (cfg->num_explicit_lens > 0)
        for (int64_t b = 0; b < B; b++) cfg->explicit_lens[b] = dl_case_seq_len(c, b);
    DL_TRY(dl_case_check_share(c, path));
    DL_TRY(check_values(path, c, g->allow_nonfinite));

    if (H5Lexists(r->file, "/golden", H5P_DEFAULT) <= 0) return dl_fail("%s: group /golden is missing", path);
    DL_TRY(read_params(r, &g->params));
    for (int m = 0; m < DL_MODEL_COUNT; m++) {
        htri_t ex = H5Lexists(r->file, dl_model_group(m), H5P_DEFAULT);
        if (ex > 0) DL_TRY(read_model(r, g, (dl_model)m));
    }
    if (g->have[DL_MODEL_ORIG] && !c->k_orig)
        return dl_fail("%s: /golden/orig is present but /inputs/k_orig and v_orig are missing", path);
    if (g->have[DL_MODEL_ORIG] && !c->q_orig) /* the orig model is computed from all three originals */
        return dl_fail("%s: /golden/orig is present but /inputs/q_orig is missing", path);
    return 0;
}

int dl_golden_read(const char *path, dl_golden *g)
{
    struct stat st;
    memset(g, 0, sizeof *g);
    h5_quiet();
    if (stat(path, &st) != 0) return dl_fail("%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return dl_fail("%s: not a regular file", path);
    if (access(path, R_OK) != 0) return dl_fail("%s: cannot read: %s", path, strerror(errno));
    if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return dl_fail("%s: not an HDF5 file", path);
    }
    rctx r = {path, -1, (int64_t)st.st_size};
    int rc = -1;
    H5_CHECK(r.file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), path);
    rc = read_all(&r, g);
fail:
    if (r.file >= 0) H5Fclose(r.file);
    if (rc != 0) dl_golden_free(g);
    return rc;
}

uint64_t dl_golden_inputs_hash(const dl_golden *g)
{
    if (!g->have_inputs_hash) {
        dl_golden *m = (dl_golden *)g; /* the memo (dl_golden.h) */
        m->inputs_hash = dl_run_inputs_hash(&g->c);
        m->have_inputs_hash = 1;
    }
    return g->inputs_hash;
}

void dl_golden_free(dl_golden *g)
{
    dl_case_free(&g->c);
    for (int m = 0; m < DL_MODEL_COUNT; m++)
        if (g->have[m] || g->out[m].o || g->out[m].lse) dl_output_free(&g->out[m]);
    memset(g, 0, sizeof *g);
}

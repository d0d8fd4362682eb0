/* test_golden.c - the golden file: write/read round trip bit-exact, atomic
 * write (no temp left on error), overwrite refused without force, checksum
 * corruption detected, and each validation refusal of the reader (one line
 * naming the file, the object and the value). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../harness/dl_golden.h"
#include "../ref/dl_formats.h"
#include "dl_test.h"
#include "golden_mutate.h"

static char good[300]; /* a valid golden file written by the fixture */

static void small_config(dl_config *c, dl_layout layout)
{
    /* 1: one slot used, three poison slots; 4: exactly one full page; 9: three pages, the last with one slot */
    const int64_t lens[3] = {1, 4, 9};
    dl_test_shape(c, 3, 4, 2, 16, 4);
    dl_test_lens(c, lens);
    c->kv_layout = layout;
    c->seed = 7;
    c->sm_scale = dl_sm_scale(c);
}

/* Build the case and every model with the parameters *p. */
static void build_with(const dl_config *cfg, const dl_model_params *p, dl_case *c, dl_output outs[DL_MODEL_COUNT])
{
    ck_assert_msg(dl_case_build(cfg, c) == 0, "%s", dl_last_error());
    for (int m = 0; m < DL_MODEL_COUNT; m++)
        ck_assert_msg(dl_reference(c, (dl_model)m, p, &outs[m]) == 0, "%s", dl_last_error());
}

/* build_with the default parameters (into *p). */
static void build_all(const dl_config *cfg, dl_case *c, dl_output outs[DL_MODEL_COUNT], dl_model_params *p)
{
    dl_model_params_default(p);
    build_with(cfg, p, c, outs);
}

static void free_all(dl_case *c, dl_output outs[DL_MODEL_COUNT])
{
    for (int m = 0; m < DL_MODEL_COUNT; m++) dl_output_free(&outs[m]);
    dl_case_free(c);
}

/* The case of cfg with every model (parameters *p) written to path; the test fails if it is refused. */
static void write_case(const char *path, const dl_config *cfg, const dl_model_params *p)
{
    dl_case c;
    dl_output outs[DL_MODEL_COUNT];
    build_with(cfg, p, &c, outs);
    ck_assert_msg(dl_golden_write(path, &c, outs, DL_MODEL_COUNT, p, 0) == 0, "%s", dl_last_error());
    free_all(&c, outs);
}

/* The small NHD case with the default parameters, written to path. */
static void write_small(const char *path)
{
    dl_config cfg;
    dl_model_params p;
    small_config(&cfg, DL_NHD);
    dl_model_params_default(&p);
    write_case(path, &cfg, &p);
}

static int count_entries(const char *d)
{
    DIR *dp = opendir(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(dp));)
        if (e->d_name[0] != '.') n++;
    closedir(dp);
    return n;
}

static void setup(void)
{
    dl_test_mkdir("golden");
    dl_test_path(good, sizeof good, "good.h5");
    write_small(good);
}

static void teardown(void) { dl_test_rmdir(); }

static void round_trip(dl_layout layout, dl_dtype kv, dl_dtype q)
{
    dl_config cfg;
    dl_case c;
    dl_output outs[DL_MODEL_COUNT];
    dl_model_params p;
    char path[300];
    small_config(&cfg, layout);
    cfg.kv_dtype = kv;
    cfg.q_dtype = q;
    build_all(&cfg, &c, outs, &p);
    p.kv_block = 3; /* non-default params must come back too */
    p.acc_mantissa_bits = 13;
    snprintf(path, sizeof path, "%s/rt_%s_%s.h5", dl_test_dir, dl_layout_name(layout), dl_dtype_name(kv));
    ck_assert_msg(dl_golden_write(path, &c, outs, DL_MODEL_COUNT, &p, 0) == 0, "%s", dl_last_error());

    dl_golden g;
    ck_assert_msg(dl_golden_read(path, &g) == 0, "%s", dl_last_error());
    const dl_config *a = &c.cfg, *b = &g.c.cfg;
    ck_assert(a->batch_size == b->batch_size && a->num_qo_heads == b->num_qo_heads &&
              a->num_kv_heads == b->num_kv_heads && a->head_dim == b->head_dim && a->page_size == b->page_size);
    ck_assert(a->kv_layout == b->kv_layout && a->q_dtype == b->q_dtype && a->kv_dtype == b->kv_dtype);
    ck_assert(a->sm_scale == b->sm_scale && a->seed == b->seed && a->dist.kind == b->dist.kind);
    ck_assert(a->dist.std == b->dist.std && a->dist.outlier_var == b->dist.outlier_var);
    ck_assert(a->kv_scale_mode == b->kv_scale_mode);
    ck_assert_int_eq(b->num_explicit_lens, 3);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(b->explicit_lens[i], a->explicit_lens[i]);
    ck_assert_int_eq(g.c.num_pages, c.num_pages);
    const int64_t B = a->batch_size, nq = B * a->num_qo_heads * a->head_dim, ne = dl_case_cache_elems(&c);
    const int64_t nl = B * a->num_qo_heads;
    ck_assert(memcmp(g.c.q, c.q, (size_t)nq * dl_dtype_size(q)) == 0);
    ck_assert(memcmp(g.c.k_cache, c.k_cache, (size_t)ne * dl_dtype_size(kv)) == 0);
    ck_assert(memcmp(g.c.v_cache, c.v_cache, (size_t)ne * dl_dtype_size(kv)) == 0);
    ck_assert(memcmp(g.c.k_scale, c.k_scale, (size_t)a->num_kv_heads * 4) == 0);
    ck_assert(memcmp(g.c.v_scale, c.v_scale, (size_t)a->num_kv_heads * 4) == 0);
    ck_assert(memcmp(g.c.kv_indptr, c.kv_indptr, (size_t)(B + 1) * 4) == 0);
    ck_assert(memcmp(g.c.kv_indices, c.kv_indices, (size_t)c.kv_indptr[B] * 4) == 0);
    ck_assert(memcmp(g.c.kv_last_page_len, c.kv_last_page_len, (size_t)B * 4) == 0);
    ck_assert(memcmp(g.c.q_orig, c.q_orig, (size_t)nq * 4) == 0);
    ck_assert(memcmp(g.c.k_orig, c.k_orig, (size_t)ne * 4) == 0); /* NaN poison bits included */
    ck_assert(memcmp(g.c.v_orig, c.v_orig, (size_t)ne * 4) == 0);
    ck_assert(g.params.kv_block == 3 && g.params.acc_mantissa_bits == 13 && g.params.acc_block == p.acc_block &&
              g.params.p_scale == p.p_scale && g.params.kv_order == DL_KV_FORWARD);
    ck_assert(a->dist.sink_tokens == b->dist.sink_tokens && a->dist.sink_delta == b->dist.sink_delta);
    for (int m = 0; m < DL_MODEL_COUNT; m++) {
        ck_assert(g.have[m]);
        /* the P-cast statistics come back as written (-1 / NaN for exact and orig) */
        ck_assert_int_eq(g.out[m].p_values, outs[m].p_values);
        ck_assert_int_eq(g.out[m].p_zeros, outs[m].p_zeros);
        ck_assert(g.out[m].p_cast_nmse == outs[m].p_cast_nmse ||
                  (isnan(g.out[m].p_cast_nmse) && isnan(outs[m].p_cast_nmse)));
        /* float models hold float32 values, so the float32 file round trip is exact too */
        ck_assert(memcmp(g.out[m].o, outs[m].o, (size_t)nq * 8) == 0);
        ck_assert(memcmp(g.out[m].lse, outs[m].lse, (size_t)nl * 8) == 0);
    }
    ck_assert_str_eq(g.generator, dl_generator_string());
    dl_golden_free(&g);
    free_all(&c, outs);
}

START_TEST(round_trip_nhd_e4m3) { round_trip(DL_NHD, DL_E4M3, DL_BF16); }
END_TEST
START_TEST(round_trip_hnd_e5m2) { round_trip(DL_HND, DL_E5M2, DL_F16); }
END_TEST
START_TEST(round_trip_nhd_f16_q_f32) { round_trip(DL_NHD, DL_F16, DL_F32); }
END_TEST
START_TEST(round_trip_hnd_bf16) { round_trip(DL_HND, DL_BF16, DL_BF16); }
END_TEST

/* A sink case with reverse order round trips its distribution and kv_order; a file written before
 * them (attributes deleted) reads with the defaults: forward, sink_tokens 4, sink_delta 8, P-cast
 * statistics unknown. */
START_TEST(sink_reverse_round_trip_and_legacy)
{
    dl_config cfg;
    dl_model_params p;
    char path[300];
    small_config(&cfg, DL_NHD);
    cfg.dist.kind = DL_DIST_SINK;
    cfg.dist.sink_tokens = 3;
    cfg.dist.sink_delta = 5.5;
    dl_model_params_default(&p);
    p.kv_order = DL_KV_REVERSE;
    dl_test_path(path, sizeof path, "sink.h5");
    write_case(path, &cfg, &p);
    dl_golden g;
    ck_assert_msg(dl_golden_read(path, &g) == 0, "%s", dl_last_error());
    ck_assert_int_eq(g.c.cfg.dist.kind, DL_DIST_SINK);
    ck_assert_int_eq(g.c.cfg.dist.sink_tokens, 3);
    ck_assert(g.c.cfg.dist.sink_delta == 5.5);
    ck_assert_int_eq(g.params.kv_order, DL_KV_REVERSE);
    ck_assert(g.out[DL_MODEL_FP8].p_values > 0 && isfinite(g.out[DL_MODEL_FP8].p_cast_nmse));
    dl_golden_free(&g);
    /* legacy: the new attributes removed (the distribution made normal: an old file has no sink) */
    ck_assert_int_eq(gm_set_attr_str(path, "/config", "distribution", "normal"), 0);
    ck_assert_int_eq(gm_delete_attr(path, "/config", "sink_tokens"), 0);
    ck_assert_int_eq(gm_delete_attr(path, "/config", "sink_delta"), 0);
    ck_assert_int_eq(gm_delete_attr(path, "/golden", "kv_order"), 0);
    for (int m = 0; m < DL_MODEL_COUNT; m++) {
        char obj[64];
        snprintf(obj, sizeof obj, "/golden/%s", dl_model_name((dl_model)m));
        gm_delete_attr(path, obj, "p_values");
        gm_delete_attr(path, obj, "p_zeros");
        gm_delete_attr(path, obj, "p_cast_nmse");
    }
    ck_assert_msg(dl_golden_read(path, &g) == 0, "%s", dl_last_error());
    ck_assert_int_eq(g.params.kv_order, DL_KV_FORWARD);
    ck_assert_int_eq(g.c.cfg.dist.sink_tokens, 4);
    ck_assert(g.c.cfg.dist.sink_delta == 8.0);
    ck_assert_int_eq(g.out[DL_MODEL_FP8].p_values, -1);
    ck_assert(isnan(g.out[DL_MODEL_FP8].p_cast_nmse));
    dl_golden_free(&g);
}
END_TEST

/* Same case written twice: identical bytes (no timestamps in the file). */
/* A case with a shared prefix (--share-prefix 2: the first 2 pages of every request are request
 * 0's) round trips: the attribute, the page table that shares, the P distinct pages, every model;
 * the file reads back through the page-table check. A file without the attribute (written
 * before it existed) reads as 0. */
START_TEST(round_trip_shared_prefix)
{
    dl_config cfg;
    dl_case c;
    dl_output outs[DL_MODEL_COUNT];
    dl_model_params p;
    char path[300];
    small_config(&cfg, DL_HND);
    cfg.explicit_lens[0] = 9;
    cfg.explicit_lens[1] = 8;
    cfg.explicit_lens[2] = 13;
    cfg.share_prefix_pages = 2;
    build_all(&cfg, &c, outs, &p);
    ck_assert_int_eq(c.num_pages, c.kv_indptr[3] - 2 * 2);
    dl_test_path(path, sizeof path, "shared.h5");
    ck_assert_msg(dl_golden_write(path, &c, outs, DL_MODEL_COUNT, &p, 0) == 0, "%s", dl_last_error());
    dl_golden g;
    ck_assert_msg(dl_golden_read(path, &g) == 0, "%s", dl_last_error());
    ck_assert_int_eq(g.c.cfg.share_prefix_pages, 2);
    ck_assert_int_eq(g.c.num_pages, c.num_pages);
    ck_assert(memcmp(g.c.kv_indptr, c.kv_indptr, 4 * 4) == 0);
    ck_assert(memcmp(g.c.kv_indices, c.kv_indices, (size_t)c.kv_indptr[3] * 4) == 0);
    for (int64_t b = 1; b < 3; b++)
        for (int64_t k = 0; k < 2; k++) ck_assert_int_eq(g.c.kv_indices[g.c.kv_indptr[b] + k], g.c.kv_indices[k]);
    const int64_t ne = dl_case_cache_elems(&c), nq = 3 * 4 * 16;
    ck_assert(memcmp(g.c.k_cache, c.k_cache, (size_t)ne * dl_dtype_size(cfg.kv_dtype)) == 0);
    ck_assert(memcmp(g.c.v_cache, c.v_cache, (size_t)ne * dl_dtype_size(cfg.kv_dtype)) == 0);
    for (int m = 0; m < DL_MODEL_COUNT; m++) {
        ck_assert(g.have[m]);
        ck_assert(memcmp(g.out[m].o, outs[m].o, (size_t)nq * 8) == 0);
        ck_assert(memcmp(g.out[m].lse, outs[m].lse, 12 * 8) == 0);
    }
    dl_golden_free(&g);
    free_all(&c, outs);
    /* no attribute: 0 */
    char old[300];
    dl_test_path(old, sizeof old, "no_share_attr.h5");
    ck_assert_int_eq(gm_copy(good, old), 0);
    ck_assert_int_eq(gm_delete_attr(old, "/config", "share_prefix_pages"), 0);
    ck_assert_msg(dl_golden_read(old, &g) == 0, "%s", dl_last_error());
    ck_assert_int_eq(g.c.cfg.share_prefix_pages, 0);
    dl_golden_free(&g);
}
END_TEST

START_TEST(same_case_same_bytes)
{
    char path[300];
    dl_test_path(path, sizeof path, "again.h5");
    write_small(path);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", good, path);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(refuse_overwrite_without_force)
{
    dl_config cfg;
    dl_case c;
    dl_output outs[DL_MODEL_COUNT];
    dl_model_params p;
    small_config(&cfg, DL_NHD);
    cfg.seed = 99;
    build_all(&cfg, &c, outs, &p);
    ck_assert_int_ne(dl_golden_write(good, &c, outs, DL_MODEL_COUNT, &p, 0), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "exists"));
    ck_assert_ptr_nonnull(strstr(dl_last_error(), good));
    dl_golden g;
    ck_assert(dl_golden_read(good, &g) == 0);
    ck_assert(g.c.cfg.seed == 7); /* the old content */
    dl_golden_free(&g);
    ck_assert_int_eq(dl_golden_write(good, &c, outs, DL_MODEL_COUNT, &p, 1), 0);
    ck_assert(dl_golden_read(good, &g) == 0);
    ck_assert(g.c.cfg.seed == 99);
    dl_golden_free(&g);
    free_all(&c, outs);
    ck_assert(!dl_test_has_tmp(dl_test_dir));
}
END_TEST

/* A failure in the middle of writing (an output of the wrong shape, after the
 * inputs were written; a model given twice; a directory that does not exist)
 * leaves neither the file nor a temp file. */
START_TEST(atomic_write_no_temp_on_error)
{
    dl_config cfg;
    dl_case c;
    dl_output outs[DL_MODEL_COUNT];
    dl_model_params p;
    char path[300];
    small_config(&cfg, DL_NHD);
    build_all(&cfg, &c, outs, &p);
    dl_test_path(path, sizeof path, "broken.h5");
    int before = count_entries(dl_test_dir);

    outs[DL_MODEL_FP8].head_dim = 8;
    ck_assert_int_ne(dl_golden_write(path, &c, outs, DL_MODEL_COUNT, &p, 0), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "fp8"));
    outs[DL_MODEL_FP8].head_dim = cfg.head_dim;
    ck_assert_int_eq(access(path, F_OK), -1);
    ck_assert(!dl_test_has_tmp(dl_test_dir));

    dl_output twice[2] = {outs[0], outs[0]};
    ck_assert_int_ne(dl_golden_write(path, &c, twice, 2, &p, 0), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "twice"));
    ck_assert_int_eq(access(path, F_OK), -1);
    ck_assert_int_eq(count_entries(dl_test_dir), before);

    dl_test_path(path, sizeof path, "no/such/dir.h5");
    ck_assert_int_ne(dl_golden_write(path, &c, outs, DL_MODEL_COUNT, &p, 0), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "H5Fcreate"));
    ck_assert_int_eq(count_entries(dl_test_dir), before);
    free_all(&c, outs);
}
END_TEST

/* One byte of a dataset's stored chunk changed behind HDF5's back: the
 * Fletcher32 checksum no longer matches and the read fails naming the dataset. */
START_TEST(checksum_corruption_detected)
{
    char bad[300];
    dl_test_path(bad, sizeof bad, "corrupt.h5");
    ck_assert_int_eq(gm_copy(good, bad), 0);
    ck_assert_int_eq(gm_flip_raw_byte(bad, "/inputs/k_cache", 5), 0);
    dl_golden g;
    ck_assert_int_ne(dl_golden_read(bad, &g), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "/inputs/k_cache"));
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "H5Dread"));
    ck_assert_ptr_null(g.c.q); /* nothing left allocated */
    /* the same flip in a float64 golden output */
    ck_assert_int_eq(gm_copy(good, bad), 0);
    ck_assert_int_eq(gm_flip_raw_byte(bad, "/golden/exact/o", 17), 0);
    ck_assert_int_ne(dl_golden_read(bad, &g), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "/golden/exact/o"));
}
END_TEST

/* ---- validation refusals: a copy of the good file damaged one way each ---- */

typedef int (*mutation)(const char *path);

static int m_format(const char *p) { return gm_set_attr_str(p, "/", "format", "not-decodelab"); }
static int m_version(const char *p) { return gm_set_attr_i64(p, "/", "format_version", 2); }
static int m_no_v_cache(const char *p) { return gm_delete(p, "/inputs/v_cache"); }
static int m_no_config_attr(const char *p) { return gm_delete_attr(p, "/config", "head_dim"); }
static int m_heads(const char *p) { return gm_set_attr_i64(p, "/config", "num_kv_heads", 3); }
static int m_page_size(const char *p) { return gm_set_attr_i64(p, "/config", "page_size", 999); }
static int m_layout(const char *p) { return gm_set_attr_str(p, "/config", "kv_layout", "XYZ"); }
static int m_q_shape(const char *p)
{
    hsize_t d[3] = {3, 4, 17};
    return gm_replace(p, "/inputs/q", H5T_STD_U16LE, 3, d, "bf16");
}
static int m_q_rank(const char *p)
{
    hsize_t d[2] = {3, 64};
    return gm_replace(p, "/inputs/q", H5T_STD_U16LE, 2, d, "bf16");
}
static int m_q_h5type(const char *p)
{
    hsize_t d[3] = {3, 4, 16};
    return gm_replace(p, "/inputs/q", H5T_IEEE_F32LE, 3, d, "bf16");
}
static int m_k_dtype_attr(const char *p) { return gm_set_attr_str(p, "/inputs/k_cache", "dtype", "e5m2"); }
static int m_no_dtype_attr(const char *p) { return gm_delete_attr(p, "/inputs/k_scale", "dtype"); }
static int m_indptr_start(const char *p)
{
    int32_t v = 1;
    return gm_write_elem(p, "/inputs/kv_indptr", 0, H5T_NATIVE_INT32, &v);
}
static int m_indptr_monotone(const char *p)
{
    int32_t v = 0; /* kv_indptr[1] = 0 = kv_indptr[0] */
    return gm_write_elem(p, "/inputs/kv_indptr", 1, H5T_NATIVE_INT32, &v);
}
static int m_index_range(const char *p)
{
    int32_t v = 77;
    return gm_write_elem(p, "/inputs/kv_indices", 2, H5T_NATIVE_INT32, &v);
}
static int m_last_len_zero(const char *p)
{
    int32_t v = 0;
    return gm_write_elem(p, "/inputs/kv_last_page_len", 1, H5T_NATIVE_INT32, &v);
}
static int m_last_len_big(const char *p)
{
    int32_t v = 5; /* page_size is 4 */
    return gm_write_elem(p, "/inputs/kv_last_page_len", 2, H5T_NATIVE_INT32, &v);
}
static int m_q_nan(const char *p)
{
    uint16_t v = DL_BF16_NAN;
    return gm_write_elem(p, "/inputs/q", 5, H5T_NATIVE_UINT16, &v);
}
static int m_q_orig_inf(const char *p)
{
    float v = INFINITY;
    return gm_write_elem(p, "/inputs/q_orig", 6, H5T_NATIVE_FLOAT, &v);
}
static int m_scale_zero(const char *p)
{
    float v = 0.0f;
    return gm_write_elem(p, "/inputs/v_scale", 1, H5T_NATIVE_FLOAT, &v);
}
static int m_golden_nan(const char *p)
{
    float v = NAN;
    return gm_write_elem(p, "/golden/fp8/lse", 1, H5T_NATIVE_FLOAT, &v);
}
static int m_golden_shape(const char *p)
{
    hsize_t d[2] = {3, 5};
    return gm_replace(p, "/golden/bf16/lse", H5T_IEEE_F32LE, 2, d, "f32");
}
static int m_golden_f64_as_f32(const char *p)
{
    hsize_t d[2] = {3, 4};
    return gm_replace(p, "/golden/exact/lse", H5T_IEEE_F32LE, 2, d, "f32");
}
static int m_kv_block(const char *p) { return gm_set_attr_i64(p, "/golden", "kv_block", 0); }
static int m_kv_order(const char *p) { return gm_set_attr_str(p, "/golden", "kv_order", "sideways"); }
static int m_p_zeros(const char *p) { return gm_set_attr_i64(p, "/golden/fp8", "p_zeros", INT64_C(1) << 40); }
static int m_sink_delta(const char *p)
{
    double v = INFINITY;
    return gm_set_attr(p, "/config", "sink_delta", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}
static int m_no_golden(const char *p) { return gm_delete(p, "/golden"); }
static int m_no_q_orig(const char *p) { return gm_delete(p, "/inputs/q_orig"); } /* /golden/orig kept */
/* the good file's requests have 1, 4 and 9 tokens (page 4): request 0 has no full page to share */
static int m_share_claimed(const char *p) { return gm_set_attr_i64(p, "/config", "share_prefix_pages", 1); }
static int m_share_negative(const char *p) { return gm_set_attr_i64(p, "/config", "share_prefix_pages", -1); }

/* Poison and used slots are found by walking the page table of the good file. */
static int find_slot(const char *p, int want_poison, long long *elem)
{
    dl_golden g;
    if (dl_golden_read(p, &g)) return -1;
    const dl_config *c = &g.c.cfg;
    int rc = -1;
    for (int64_t b = 0; b < c->batch_size && rc; b++) {
        int64_t last = g.c.kv_indptr[b + 1] - 1, page = g.c.kv_indices[last];
        int64_t used = g.c.kv_last_page_len[b];
        if (want_poison && used < c->page_size) {
            *elem = dl_kv_offset(c, page, used, 1) + 3; /* slot just past the end, kv head 1, d 3 */
            rc = 0;
        } else if (!want_poison) {
            *elem = dl_kv_offset(c, page, used - 1, 0) + 2; /* the last token */
            rc = 0;
        }
    }
    dl_golden_free(&g);
    return rc;
}
static int m_poison_filled(const char *p)
{
    long long e;
    uint8_t v = 0x38; /* e4m3 1.0 */
    return find_slot(p, 1, &e) || gm_write_elem(p, "/inputs/k_cache", e, H5T_NATIVE_UINT8, &v);
}
static int m_used_slot_nan(const char *p)
{
    long long e;
    uint8_t v = DL_E4M3_NAN;
    return find_slot(p, 0, &e) || gm_write_elem(p, "/inputs/v_cache", e, H5T_NATIVE_UINT8, &v);
}
/* a NaN in the last token of every request (the check runs requests on several threads: the lowest is named) */
static int m_used_nan_every_request(const char *p)
{
    dl_golden g;
    if (dl_golden_read(p, &g)) return -1;
    const dl_config *c = &g.c.cfg;
    int rc = 0;
    uint8_t v = DL_E4M3_NAN;
    for (int64_t b = c->batch_size - 1; b >= 0 && !rc; b--) {
        const int64_t last = g.c.kv_indptr[b + 1] - 1, page = g.c.kv_indices[last];
        const long long e = dl_kv_offset(c, page, g.c.kv_last_page_len[b] - 1, 0) + 2;
        rc = gm_write_elem(p, "/inputs/v_cache", e, H5T_NATIVE_UINT8, &v);
    }
    dl_golden_free(&g);
    return rc;
}
static int m_k_orig_nan(const char *p)
{
    long long e;
    float v = NAN;
    return find_slot(p, 0, &e) || gm_write_elem(p, "/inputs/k_orig", e, H5T_NATIVE_FLOAT, &v);
}

typedef struct {
    const char *what;
    mutation fn;
    const char *field; /* must appear in the message */
    const char *value; /* must appear in the message (NULL: none) */
} refusal;

static const refusal refusals[] = {
    {"format", m_format, "format", "not-decodelab"},
    {"version", m_version, "format_version", "= 2,"},
    {"missing dataset", m_no_v_cache, "/inputs/v_cache", "missing"},
    {"missing config attribute", m_no_config_attr, "head_dim", "missing"},
    {"heads not dividing", m_heads, "num_kv_heads", "= 3"},
    {"page size out of range", m_page_size, "page_size", "= 999 "},
    {"layout", m_layout, "kv_layout", "XYZ"},
    {"q shape", m_q_shape, "/inputs/q", "= 17, expected 16"},
    {"q rank", m_q_rank, "/inputs/q", "rank 2"},
    {"q HDF5 type", m_q_h5type, "/inputs/q", "bf16"},
    {"k dtype attribute", m_k_dtype_attr, "/inputs/k_cache", "'e5m2'"},
    {"no dtype attribute", m_no_dtype_attr, "/inputs/k_scale", "dtype"},
    {"indptr start", m_indptr_start, "kv_indptr[0]", "= 1, expected 0"},
    {"indptr not monotone", m_indptr_monotone, "kv_indptr[1]", "= 0 is not greater"},
    {"index out of range", m_index_range, "kv_indices[2]", "= 77 "},
    {"last_page_len 0", m_last_len_zero, "kv_last_page_len[1]", "= 0 is outside"},
    {"last_page_len > page_size", m_last_len_big, "kv_last_page_len[2]", "= 5 is outside"},
    {"NaN in q", m_q_nan, "/inputs/q[5]", "= nan "},
    {"inf in q_orig", m_q_orig_inf, "/inputs/q_orig[6]", "= inf "},
    {"scale zero", m_scale_zero, "v_scale[1]", "= 0 "},
    {"NaN in a golden output", m_golden_nan, "/golden/fp8/lse[1]", "= nan "},
    {"golden shape", m_golden_shape, "/golden/bf16/lse", "= 5, expected 4"},
    {"golden f64 stored as f32", m_golden_f64_as_f32, "/golden/exact/lse", "f64"},
    {"model parameter", m_kv_block, "kv_block", "= 0 "},
    {"kv_order", m_kv_order, "kv_order", "sideways"},
    {"P-cast counts", m_p_zeros, "p_zeros", "1099511627776"},
    {"sink_delta not finite", m_sink_delta, "sink_delta", "inf"},
    {"no /golden", m_no_golden, "/golden", "missing"},
    {"orig model without q_orig", m_no_q_orig, "/inputs/q_orig", "is missing"},
    {"poison slot holds a value", m_poison_filled, "/inputs/k_cache", "poison"},
    {"NaN in a used slot", m_used_slot_nan, "/inputs/v_cache", "= nan "},
    {"NaN in k_orig", m_k_orig_nan, "/inputs/k_orig", "= nan "},
    {"NaN in every request", m_used_nan_every_request, "/inputs/v_cache", "(request 0)"},
    {"shared prefix the page table lacks", m_share_claimed, "share_prefix_pages = 1", "request 0 has 1 tokens"},
    {"shared prefix negative", m_share_negative, "share_prefix_pages", "= -1 "},
};
static const int num_refusals = (int)(sizeof refusals / sizeof refusals[0]);

START_TEST(validation_refusals)
{
    const refusal *r = &refusals[_i];
    char bad[300];
    snprintf(bad, sizeof bad, "%s/bad_%d.h5", dl_test_dir, _i);
    ck_assert_int_eq(gm_copy(good, bad), 0);
    ck_assert_msg(r->fn(bad) == 0, "mutation '%s' could not be applied", r->what);
    dl_golden g;
    dl_clear_error();
    ck_assert_msg(dl_golden_read(bad, &g) != 0, "'%s' was accepted", r->what);
    const char *e = dl_last_error();
    if (getenv("DL_VERBOSE")) fprintf(stderr, "%-28s %s\n", r->what, e);
    ck_assert_msg(strstr(e, bad) != NULL, "'%s': message lacks the file: %s", r->what, e);
    ck_assert_msg(strstr(e, r->field) != NULL, "'%s': message lacks '%s': %s", r->what, r->field, e);
    ck_assert_msg(!r->value || strstr(e, r->value), "'%s': message lacks '%s': %s", r->what, r->value, e);
    ck_assert_msg(strchr(e, '\n') == NULL, "'%s': message is not one line: %s", r->what, e);
    ck_assert_ptr_null(g.c.q);
    ck_assert_ptr_null(g.out[DL_MODEL_EXACT].o);
}
END_TEST

START_TEST(not_a_file_not_hdf5)
{
    dl_golden g;
    char p[300];
    dl_test_path(p, sizeof p, "missing.h5");
    ck_assert_int_ne(dl_golden_read(p, &g), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), p));
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "No such file"));
    dl_test_path(p, sizeof p, "text.h5");
    FILE *f = fopen(p, "w");
    fputs("this is not HDF5\n", f);
    fclose(f);
    ck_assert_int_ne(dl_golden_read(p, &g), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "not an HDF5 file"));
    ck_assert_int_ne(dl_golden_read(dl_test_dir, &g), 0); /* a directory */
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "not a regular file"));
}
END_TEST

Suite *make_suite(void)
{
    const TTest *tests[] = {round_trip_nhd_e4m3, round_trip_hnd_e5m2, round_trip_nhd_f16_q_f32, round_trip_hnd_bf16,
                            round_trip_shared_prefix, sink_reverse_round_trip_and_legacy, same_case_same_bytes,
                            refuse_overwrite_without_force, atomic_write_no_temp_on_error,
                            checksum_corruption_detected, not_a_file_not_hdf5};
    TCase *tc;
    Suite *s = dl_test_suite("golden", 60, setup, teardown, tests, (int)(sizeof tests / sizeof tests[0]), &tc);
    tcase_add_loop_test(tc, validation_refusals, 0, num_refusals);
    return s;
}

DL_TEST_MAIN

/* test_cli.c - the built decodelab binary (path in $DL_BIN, set by `make
 * test-unit`): exit codes 0/1/2, one-line errors naming the flag or file, the
 * field and the value, no partial output file, --help per subcommand, golden
 * then check verifies, determinism across thread counts, the committed
 * canonical set under $DL_ROOT/data/golden verifies, and `run --flush`. */
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../gpu/dl_gpu.h"
#include "../ref/dl_formats.h"
#include "dl_test.h"
#include "golden_mutate.h"

static char good[300];

static void setup(void)
{
    dl_test_mkdir("cli");
    dl_test_path(good, sizeof good, "good.h5");
    ck_assert_int_eq(access(dl_test_bin(), X_OK), 0);
    int rc = DL_RUN("golden", "--num-qo-heads", "10", "--num-kv-heads", "2", "--head-dim", "32", "--page-size", "4",
                 "--seq-len", "1,4,5,13", "--kv-layout", "HND", "--kv-dtype", "e5m2", "--seed", "3", "--out", good);
    ck_assert_msg(rc == 0, "golden failed (%d): %s", rc, dl_test_err);
}

static void teardown(void) { dl_test_rmdir(); }

START_TEST(help_each_subcommand)
{
    const char *cmds[3] = {"golden", "inspect", "check"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(DL_RUN(cmds[i], "--help"), 0);
        char want[64];
        snprintf(want, sizeof want, "usage: decodelab %s", cmds[i]);
        ck_assert_msg(strstr(dl_test_out, want) != NULL, "%s --help: %s", cmds[i], dl_test_out);
        ck_assert_str_eq(dl_test_err, "");
    }
    ck_assert_int_eq(DL_RUN("--help"), 0);
    ck_assert_ptr_nonnull(strstr(dl_test_out, "golden"));
}
END_TEST

START_TEST(golden_summary_check_inspect)
{
    char p[300];
    dl_test_path(p, sizeof p, "llama.h5");
    /* a preset with one flag overridden: 32 query heads over 4 KV heads */
    int rc = DL_RUN("golden", "--preset", "llama3-8b", "--num-kv-heads", "4", "--head-dim", "64", "--batch", "2",
                 "--seq-len", "3:20", "--page-size", "1", "--kv-dtype", "bf16", "--out", p);
    ck_assert_msg(rc == 0, "%s", dl_test_err);
    ck_assert_ptr_nonnull(strstr(dl_test_out, "Hq=32 Hkv=4 D=64 page=1"));
    ck_assert_ptr_nonnull(strstr(dl_test_out, "file:"));
    ck_assert_ptr_nonnull(strstr(dl_test_out, "fp8"));
    ck_assert_str_eq(dl_test_err, ""); /* no progress: stderr is not a TTY */
    ck_assert_int_eq(DL_RUN("check", p), 0);
    ck_assert_msg(strstr(dl_test_out, "all models verify") != NULL, "%s", dl_test_out);
    ck_assert_int_eq(DL_RUN("inspect", p), 0);
    ck_assert_ptr_nonnull(strstr(dl_test_out, "storage"));
    ck_assert_ptr_nonnull(strstr(dl_test_out, "arithmetic"));
    ck_assert_ptr_nonnull(strstr(dl_test_out, "/inputs/k_cache"));
    /* only some models */
    dl_test_path(p, sizeof p, "two.h5");
    ck_assert_int_eq(DL_RUN("golden", "--models", "exact,fp8", "--batch", "1", "--seq-len", "7", "--out", p), 0);
    ck_assert_int_eq(DL_RUN("check", p), 0);
    ck_assert_ptr_null(strstr(dl_test_out, "\n  bf16 "));
    ck_assert_ptr_nonnull(strstr(dl_test_out, "fp8"));
}
END_TEST

/* --models auto: exact and the models some registered variant is judged by on the case, and no originals. A 16-bit
 * cache runs no FP8-compute variant (fp8-*, fp8acc-*: "fp8 compute needs an fp8 KV cache"), so none of the
 * four fp8 models is computed; an e4m3 cache runs one variant of every model; a file made with kv_block 32
 * leaves the models only the 64-token-tile kernels are judged by (bf16, and with an e4m3 cache the fp8 ones). */
START_TEST(golden_models_auto)
{
    static const struct {
        const char *kv, *block, *models;
    } cases[] = {
        {"bf16", "64", "auto: exact, fp32, bf16, bf16simt ("},
        {"f16", "64", "auto: exact, fp32, bf16, bf16simt ("},
        {"e4m3", "64", "auto: exact, fp32, bf16, fp8, fp8acc, bf16simt, fp8wg, fp8accwg ("},
        {"e4m3", "32", "auto: exact, fp32, bf16simt ("},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char p[300];
        snprintf(p, sizeof p, "%s/auto_%zu.h5", dl_test_dir, i);
        int rc = DL_RUN("golden", "--batch", "2", "--seq-len", "5:70", "--kv-dtype", cases[i].kv, "--kv-block",
                        cases[i].block, "--models", "auto", "--out", p);
        ck_assert_msg(rc == 0, "%s", dl_test_err);
        ck_assert_msg(strstr(dl_test_out, cases[i].models) != NULL, "case %zu: %s", i, dl_test_out);
        /* the file holds those models and verifies */
        ck_assert_int_eq(DL_RUN("check", p), 0);
        ck_assert_msg(strstr(dl_test_out, "all models verify") != NULL, "%s", dl_test_out);
        ck_assert_msg((strstr(dl_test_out, "fp8wg") != NULL) == (strstr(cases[i].models, "fp8wg") != NULL),
                      "case %zu: %s", i, dl_test_out);
        ck_assert_int_eq(DL_RUN("inspect", p), 0);
        ck_assert_msg(strstr(dl_test_out, "k_orig") == NULL, "case %zu: originals written without orig: %s", i,
                      dl_test_out);
    }
    /* the originals come with orig, listed or in all */
    char p[300];
    dl_test_path(p, sizeof p, "with_orig.h5");
    ck_assert_int_eq(DL_RUN("golden", "--batch", "1", "--seq-len", "9", "--models", "exact,orig", "--out", p), 0);
    ck_assert_int_eq(DL_RUN("inspect", p), 0);
    ck_assert_msg(strstr(dl_test_out, "/inputs/k_orig, v_orig") != NULL, "%s", dl_test_out);
}
END_TEST

/* A golden file whose write fails part-way (a file-size limit standing in for a full disk: the
 * device machine's disk filled during an E8 shard on 2026-12-02): exit 2 with the file and the
 * system's reason named, nothing left behind under the name or as a temporary, and no crash after
 * the error (libhdf5's exit handler segfaulted on the file whose flush had failed: status 139). */
START_TEST(golden_write_fails_cleanly)
{
    char p[300];
    dl_test_path(p, sizeof p, "big.h5");
    struct rlimit rl = {256 * 1024, 256 * 1024};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    signal(SIGXFSZ, SIG_IGN); /* inherited by the child: write() fails with EFBIG instead of a signal */
    int rc = DL_RUN("golden", "--preset", "llama3-8b", "--batch", "4", "--seq-len", "512", "--models", "exact",
                    "--out", p);
    ck_assert_msg(rc == 2, "exit %d (want 2): %s", rc, dl_test_err);
    ck_assert_msg(strstr(dl_test_err, p) != NULL, "the file is not named: %s", dl_test_err);
    ck_assert_msg(strstr(dl_test_err, "File too large") != NULL, "the reason is not named: %s", dl_test_err);
    DIR *d = opendir(dl_test_dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        ck_assert_msg(strncmp(e->d_name, "big.h5", 6) != 0, "left behind: %s", e->d_name);
    closedir(d);
}
END_TEST

/* A stored float model changed by a few ulp no longer verifies: exit 1; so does the exact model's lse changed in a
 * file otherwise intact (a fresh copy), the row naming exact. */
START_TEST(check_fails_on_changed_model)
{
    char pristine[300];
    dl_test_path(pristine, sizeof pristine, "pristine.h5");
    ck_assert_int_eq(gm_copy(good, pristine), 0);
    float v = 0.123456f;
    ck_assert_int_eq(gm_write_elem(good, "/golden/bf16/o", 3, H5T_NATIVE_FLOAT, &v), 0);
    ck_assert_int_eq(DL_RUN("check", good), 1);
    ck_assert_ptr_nonnull(strstr(dl_test_out, "DOES NOT VERIFY"));
    ck_assert_int_eq(gm_copy(pristine, good), 0);
    ck_assert_int_eq(DL_RUN("check", good), 0); /* the copy verifies */
    double x = 1.0;
    ck_assert_int_eq(gm_write_elem(good, "/golden/exact/lse", 0, H5T_NATIVE_DOUBLE, &x), 0);
    ck_assert_int_eq(DL_RUN("check", good), 1);
    const char *row = strstr(dl_test_out, "\n  exact ");
    ck_assert_msg(row != NULL, "no exact row: %s", dl_test_out);
    const char *end = strchr(row + 1, '\n');
    const char *bad = strstr(dl_test_out, "DOES NOT VERIFY"); /* the first such row, and it is exact's */
    ck_assert_msg(end && bad > row && bad < end, "the exact row verifies, or another row fails first: %s", dl_test_out);
    ck_assert_msg(strstr(bad + 1, "DOES NOT VERIFY") == NULL, "another row fails too: %s", dl_test_out);
}
END_TEST

/* The stored P-cast counts are recomputed too: a sink file verifies; its fp8 zero count changed does not. */
START_TEST(check_p_cast_counts)
{
    char p[300];
    dl_test_path(p, sizeof p, "sink.h5");
    ck_assert_int_eq(DL_RUN("golden", "--num-qo-heads", "8", "--num-kv-heads", "2", "--head-dim", "64", "--seq-len", "300",
                         "--batch", "2", "--distribution", "sink", "--sink-delta", "9", "--p-scale", "1", "--kv-order",
                         "forward", "--models", "exact,fp8", "--out", p), 0);
    ck_assert_int_eq(DL_RUN("inspect", p), 0);
    ck_assert_msg(strstr(dl_test_out, "non-sink P values enter P*V as 0") && strstr(dl_test_out, "kv_order=forward"), "%s", dl_test_out);
    ck_assert_int_eq(DL_RUN("check", p), 0);
    ck_assert_int_eq(gm_set_attr_i64(p, "/golden/fp8", "p_zeros", 3), 0);
    ck_assert_int_eq(DL_RUN("check", p), 1);
    ck_assert_msg(strstr(dl_test_out, "P-cast counts: stored 3 zeros"), "%s", dl_test_out);
}
END_TEST

/* ---- bad flags: exit 2, one line naming the flag/field and the value, no file ---- */
typedef struct {
    const char *args[8];
    const char *field, *value;
} bad_flag;

static const bad_flag bad_flags[] = {
    {{"--batch", "0"}, "--batch", "'0'"},
    {{"--batch", "x7"}, "--batch", "x7"},
    {{"--num-qo-heads", "32", "--num-kv-heads", "3"}, "num_kv_heads", "3"},
    {{"--head-dim", "-4"}, "--head-dim", "-4"},
    {{"--page-size", "257"}, "--page-size", "257"},
    {{"--kv-layout", "NDH"}, "--kv-layout", "NDH"},
    {{"--q-dtype", "e4m3"}, "--q-dtype", "e4m3"},
    {{"--kv-dtype", "f32"}, "--kv-dtype", "f32"},
    {{"--sm-scale", "nan"}, "--sm-scale", "nan"},
    {{"--seed", "-1"}, "--seed", "-1"},
    {{"--distribution", "cauchy"}, "--distribution", "cauchy"},
    {{"--seq-len", "9:3"}, "--seq-len", "9:3"},
    {{"--seq-len", "5:"}, "--seq-len", "'5:' is not MIN:MAX"},
    {{"--seq-len", "1:2:3"}, "--seq-len", "'1:2:3' is not MIN:MAX"},
    {{"--p-scale", "1e-300"}, "--p-scale", "'1e-300' must be > 0 as a float"},
    {{"--out", "x23456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
               "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
               "01234567890123456789012345678901234567890123456789012345678901234567890.h5"},
     "x2345678901", "file name too long ("},
    {{"--seq-len", "4,0,2"}, "--seq-len", "'0'"},
    {{"--seq-len", "1,2", "--batch", "3"}, "batch_size", "3"},
    {{"--kv-scale", "-2"}, "--kv-scale", "-2"},
    {{"--dist-std", "0"}, "std", "0"},
    {{"--outlier-prob", "1.5"}, "outlier_prob", "1.5"},
    {{"--models", "exact,fp16"}, "--models", "fp16"},
    {{"--models", "auto,fp8"}, "--models", "auto stands alone"},
    {{"--preset", "gpt5"}, "--preset", "gpt5"},
    {{"--share-prefix", "-1"}, "--share-prefix", "'-1'"},
    {{"--share-prefix", "two"}, "--share-prefix", "'two'"},
    {{"--share-prefix", "3", "--seq-len", "40,33,100", "--page-size", "16"}, "--share-prefix",
     "'3' is more than the full pages of the shortest request (request 1: 33 tokens = 2 full pages"},
    {{"--share-prefix", "1", "--seq-len", "1:40", "--batch", "3"}, "--share-prefix",
     "'1' is more than the full pages of the shortest request (--seq-len minimum 1 tokens"},
    {{"--kv-order", "backward"}, "--kv-order", "backward"},
    {{"--seed", "0x10"}, "--seed", "'0x10'"},  /* decimal only, as every integer flag */
    {{"--batch", " 2"}, "--batch", "' 2'"},     /* no leading blank */
    {{"--sm-scale", "1e-320"}, "--sm-scale", "'1e-320' underflows"},
    /* values whose case a reader would refuse are refused before anything is written */
    {{"--sm-scale", "1e308", "--models", "exact"}, "/golden/exact/o[", "is not finite"},
    {{"--dist-std", "1e200"}, "/inputs/", "= inf is not finite"},
    {{"--kv-scale", "1e-300"}, "/inputs/k_scale[0]", "= 0 must be finite and > 0"},
    {{"--share-prefix", "1", "--distribution", "sink", "--seq-len", "40"}, "--share-prefix", "'1' with --distribution sink"},
    {{"--sink-delta", "inf"}, "--sink-delta", "inf"},
    {{"--sink-delta", "1e4"}, "--sink-delta", "1e4"},
    {{"--sink-tokens", "-1"}, "--sink-tokens", "-1"},
    {{"--bogus", "1"}, "option", "--bogus"},
    {{"stray"}, "argument", "stray"},
    /* a value holding a newline or a tab is printed escaped: the error stays one line (dl_cli_error) */
    {{"--batch", "1\n2"}, "--batch", "1\\x0a2"},
    {{"--kv-layout", "N\tHD"}, "--kv-layout", "N\\x09HD"},
};
static const int num_bad_flags = (int)(sizeof bad_flags / sizeof bad_flags[0]);

START_TEST(golden_bad_flags)
{
    const bad_flag *b = &bad_flags[_i];
    char p[300];
    snprintf(p, sizeof p, "%s/out_%d.h5", dl_test_dir, _i);
    const char *args[16] = {"golden", "--out", p};
    int n = 3;
    for (int i = 0; b->args[i]; i++) args[n++] = b->args[i];
    args[n] = NULL;
    int rc = dl_test_cli(NULL, args);
    ck_assert_msg(rc == 2, "case %d: exit %d, stderr: %s", _i, rc, dl_test_err);
    ck_assert_msg(dl_test_lines(dl_test_err) == 1, "case %d: not one line: %s", _i, dl_test_err);
    ck_assert_msg(strstr(dl_test_err, b->field) && strstr(dl_test_err, b->value), "case %d: lacks '%s' or '%s': %s", _i,
                  b->field, b->value, dl_test_err);
    ck_assert_int_eq(access(p, F_OK), -1);
    ck_assert(!dl_test_has_tmp(dl_test_dir));
    ck_assert_str_eq(dl_test_out, "");
}
END_TEST

/* ncu checks --out's folder before profiling (minutes on a GPU): exit 2 naming it, with or without a device */
START_TEST(ncu_out_checked_first)
{
    char missing[300];
    dl_test_path(missing, sizeof missing, "nodir/census.csv");
    ck_assert_int_eq(DL_RUN("ncu", good, "--out", missing), 2);
    ck_assert_msg(strstr(dl_test_err, "nodir") != NULL && dl_test_lines(dl_test_err) == 1, "%s", dl_test_err);
}
END_TEST

START_TEST(golden_missing_out_and_existing_file)
{
    ck_assert_int_eq(DL_RUN("golden", "--batch", "1"), 2);
    ck_assert_ptr_nonnull(strstr(dl_test_err, "--out"));
    ck_assert_int_eq(DL_RUN("golden", "--out"), 2);
    ck_assert_ptr_nonnull(strstr(dl_test_err, "--out: missing value"));
    char keep[300];
    dl_test_path(keep, sizeof keep, "keep.h5");
    ck_assert_int_eq(gm_copy(good, keep), 0);
    ck_assert_int_eq(DL_RUN("golden", "--seed", "5", "--out", good), 2);
    ck_assert_ptr_nonnull(strstr(dl_test_err, "exists"));
    ck_assert_int_eq(dl_test_lines(dl_test_err), 1);
    ck_assert(dl_test_same_bytes(good, keep));
    ck_assert_int_eq(DL_RUN("golden", "--seed", "5", "--out", good, "--force"), 0);
    ck_assert(!dl_test_same_bytes(good, keep));
    /* --force replaces a file, never a FIFO (or device, or folder) of that name */
    char fifo[300];
    dl_test_path(fifo, sizeof fifo, "fifo.h5");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(DL_RUN("golden", "--out", fifo, "--force"), 2);
    ck_assert_msg(strstr(dl_test_err, "not a regular file") && strstr(dl_test_err, fifo), "%s", dl_test_err);
    struct stat st;
    ck_assert(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    ck_assert_int_eq(unlink(fifo), 0);
}
END_TEST

/* ---- bad files: check and inspect exit 2 with one line naming file, field, value ---- */
typedef struct {
    const char *what;
    int (*fn)(const char *path);
    const char *field, *value;
} bad_file;

static int f_missing(const char *p) { return unlink(p); }
static int f_text(const char *p)
{
    FILE *f = fopen(p, "w");
    fputs("hello\n", f);
    return fclose(f);
}
static int f_format(const char *p) { return gm_set_attr_str(p, "/", "format", "hdf5-something"); }
static int f_version(const char *p) { return gm_set_attr_i64(p, "/", "format_version", 7); }
static int f_no_ds(const char *p) { return gm_delete(p, "/inputs/kv_indices"); }
static int f_shape(const char *p)
{
    hsize_t d[1] = {3};
    return gm_replace(p, "/inputs/k_scale", H5T_IEEE_F32LE, 1, d, "f32");
}
static int f_dtype(const char *p) { return gm_set_attr_str(p, "/inputs/v_cache", "dtype", "e4m3"); }
static int f_range(const char *p)
{
    int32_t v = -1;
    return gm_write_elem(p, "/inputs/kv_indices", 0, H5T_NATIVE_INT32, &v);
}
static int f_monotone(const char *p)
{
    int32_t v = 1; /* kv_indptr = [0, 1, 1, ...]: request 1 loses its page */
    return gm_write_elem(p, "/inputs/kv_indptr", 2, H5T_NATIVE_INT32, &v);
}
static int f_last(const char *p)
{
    int32_t v = 9;
    return gm_write_elem(p, "/inputs/kv_last_page_len", 3, H5T_NATIVE_INT32, &v);
}
static int f_nan(const char *p)
{
    uint16_t v = DL_BF16_NAN;
    return gm_write_elem(p, "/inputs/q", 11, H5T_NATIVE_UINT16, &v);
}

static const bad_file bad_files[] = {
    {"missing file", f_missing, "No such file", NULL},
    {"not HDF5", f_text, "not an HDF5 file", NULL},
    {"wrong format", f_format, "format", "hdf5-something"},
    {"wrong version", f_version, "format_version", "= 7,"},
    {"missing dataset", f_no_ds, "/inputs/kv_indices", "missing"},
    {"wrong shape", f_shape, "/inputs/k_scale", "= 3, expected 2"},
    {"wrong dtype", f_dtype, "/inputs/v_cache", "'e4m3'"},
    {"index out of range", f_range, "kv_indices[0]", "= -1 "},
    {"indptr not monotone", f_monotone, "kv_indptr[2]", "= 1 is not greater"},
    {"last_page_len", f_last, "kv_last_page_len[3]", "= 9 is outside"},
    {"NaN in q", f_nan, "/inputs/q[11]", "= nan "},
};
static const int num_bad_files = (int)(sizeof bad_files / sizeof bad_files[0]);

START_TEST(check_inspect_bad_files)
{
    const bad_file *b = &bad_files[_i];
    char p[300];
    dl_test_path(p, sizeof p, "bad.h5");
    ck_assert_int_eq(gm_copy(good, p), 0);
    ck_assert_msg(b->fn(p) == 0, "could not apply '%s'", b->what);
    const char *cmds[2] = {"check", "inspect"};
    for (int i = 0; i < 2; i++) {
        int rc = DL_RUN(cmds[i], p);
        ck_assert_msg(rc == 2, "%s on '%s': exit %d: %s", cmds[i], b->what, rc, dl_test_err);
        ck_assert_msg(dl_test_lines(dl_test_err) == 1, "'%s': not one line: %s", b->what, dl_test_err);
        ck_assert_msg(strstr(dl_test_err, p) != NULL, "'%s': lacks the file: %s", b->what, dl_test_err);
        ck_assert_msg(strstr(dl_test_err, b->field) && (!b->value || strstr(dl_test_err, b->value)),
                      "'%s': lacks '%s'/'%s': %s", b->what, b->field, b->value ? b->value : "", dl_test_err);
    }
}
END_TEST

START_TEST(check_usage_errors)
{
    ck_assert_int_eq(DL_RUN("check"), 2);
    ck_assert_ptr_nonnull(strstr(dl_test_err, "FILE"));
    ck_assert_int_eq(DL_RUN("inspect", good, "extra"), 2);
    ck_assert_ptr_nonnull(strstr(dl_test_err, "extra"));
    ck_assert_int_eq(DL_RUN("check", "--frobnicate", good), 2);
    ck_assert_ptr_nonnull(strstr(dl_test_err, "--frobnicate"));
    ck_assert_int_eq(DL_RUN("nonsense"), 2);
}
END_TEST

/* --share-prefix N: documented in golden --help, recorded in the file (/config, the case name
 * that inspect and run print), the page table shares, the file verifies; deterministic over
 * thread counts like any case. */
START_TEST(golden_share_prefix)
{
    ck_assert_int_eq(DL_RUN("golden", "--help"), 0);
    ck_assert_msg(strstr(dl_test_out, "--share-prefix N") && strstr(dl_test_out, "request 0's"), "%s", dl_test_out);
    char a[300], b[300];
    dl_test_path(a, sizeof a, "sh1.h5");
    dl_test_path(b, sizeof b, "sh2.h5");
    const char *args_a[] = {"golden", "--seq-len", "40,33,100,257", "--page-size", "16", "--num-qo-heads", "4",
                            "--num-kv-heads", "2", "--head-dim", "32", "--share-prefix", "2", "--out", a, NULL};
    const char *args_b[] = {"golden", "--seq-len", "40,33,100,257", "--page-size", "16", "--num-qo-heads", "4",
                            "--num-kv-heads", "2", "--head-dim", "32", "--share-prefix", "2", "--out", b, NULL};
    ck_assert_msg(dl_test_cli("1", args_a) == 0, "%s", dl_test_err);
    ck_assert_ptr_nonnull(strstr(dl_test_out, "share=2"));
    ck_assert_ptr_nonnull(strstr(dl_test_out, "24 pages")); /* 3 + 3 + 7 + 17 = 30 entries, 2 x 3 of them shared */
    ck_assert_int_eq(dl_test_cli("2", args_b), 0);
    ck_assert(dl_test_same_bytes(a, b));
    ck_assert_int_eq(DL_RUN("check", a), 0);
    ck_assert_msg(strstr(dl_test_out, "all models verify") != NULL, "%s", dl_test_out);
    ck_assert_int_eq(DL_RUN("inspect", a), 0);
    ck_assert_msg(strstr(dl_test_out, "share_prefix_pages=2") && strstr(dl_test_out, "24 physical pages for 30"), "%s",
                  dl_test_out);
    /* the attribute and the sharing in the file itself */
    hid_t f = gm_open(a);
    ck_assert(f >= 0);
    int64_t v = -1;
    hid_t at = H5Aopen_by_name(f, "/config", "share_prefix_pages", H5P_DEFAULT, H5P_DEFAULT);
    ck_assert(at >= 0 && H5Aread(at, H5T_NATIVE_INT64, &v) >= 0);
    H5Aclose(at);
    ck_assert_int_eq(v, 2);
    int32_t ip[5], ix[30];
    hid_t d = H5Dopen2(f, "/inputs/kv_indptr", H5P_DEFAULT);
    ck_assert(d >= 0 && H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, ip) >= 0);
    H5Dclose(d);
    d = H5Dopen2(f, "/inputs/kv_indices", H5P_DEFAULT);
    ck_assert(d >= 0 && H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, ix) >= 0);
    H5Dclose(d);
    H5Fclose(f);
    ck_assert_int_eq(ip[4], 30);
    for (int r = 1; r < 4; r++)
        for (int k = 0; k < 2; k++) ck_assert_int_eq(ix[ip[r] + k], ix[k]);
    ck_assert_int_ne(ix[ip[1] + 2], ix[2]); /* the third page is a request's own */
}
END_TEST

/* Same flags with 1 and 2 OpenMP threads: byte-identical files (every dataset
 * and attribute; no timestamps are stored). */
START_TEST(deterministic_across_threads)
{
    char a[300], b[300];
    dl_test_path(a, sizeof a, "t1.h5");
    dl_test_path(b, sizeof b, "t2.h5");
    const char *args_a[] = {"golden", "--batch", "5", "--seq-len", "1:40", "--num-qo-heads", "8", "--num-kv-heads",
                            "8", "--head-dim", "64", "--distribution", "outlier", "--out", a, NULL};
    const char *args_b[] = {"golden", "--batch", "5", "--seq-len", "1:40", "--num-qo-heads", "8", "--num-kv-heads",
                            "8", "--head-dim", "64", "--distribution", "outlier", "--out", b, NULL};
    ck_assert_int_eq(dl_test_cli("1", args_a), 0);
    ck_assert_int_eq(dl_test_cli("2", args_b), 0);
    ck_assert(dl_test_same_bytes(a, b));
}
END_TEST

/* ---- run: --flush (issue 10) ---- */
static const bad_flag bad_run_flags[] = {
    {{"--flush", "bogus"}, "--flush", "'bogus' is not write or read"},
    {{"--flush", "WRITE"}, "--flush", "'WRITE'"},
    {{"--flush", ""}, "--flush", "''"},
    {{"--flush"}, "--flush", "missing value"},
    {{"--flush", "read", "--hot-l2"}, "--flush", "--hot-l2"},
    {{"--hot-l2", "--flush", "write"}, "--flush", "--hot-l2"},
    /* --chain (issue 10, attempt #60: the layer chain) */
    {{"--chain", "1"}, "--chain", "'1' is not an integer in 2..64"},
    {{"--chain", "65"}, "--chain", "'65'"},
    {{"--chain", "four"}, "--chain", "'four'"},
    {{"--chain"}, "--chain", "missing value"},
    {{"--chain", "4", "--graph"}, "--chain", "--graph"},
    {{"--hot-l2", "--chain", "2"}, "--chain", "--hot-l2"},
};
static const int num_bad_run_flags = (int)(sizeof bad_run_flags / sizeof bad_run_flags[0]);

START_TEST(run_bad_flags)
{
    const bad_flag *b = &bad_run_flags[_i];
    char res[300];
    snprintf(res, sizeof res, "%s/res_%d.h5", dl_test_dir, _i);
    const char *args[16] = {"run", good, "--out", res};
    int n = 4;
    for (int i = 0; b->args[i]; i++) args[n++] = b->args[i];
    args[n] = NULL;
    int rc = dl_test_cli(NULL, args);
    ck_assert_msg(rc == 2, "case %d: exit %d, stderr: %s", _i, rc, dl_test_err);
    ck_assert_msg(dl_test_lines(dl_test_err) == 1, "case %d: not one line: %s", _i, dl_test_err);
    ck_assert_msg(strstr(dl_test_err, "decodelab run: ") && strstr(dl_test_err, b->field) && strstr(dl_test_err, b->value),
                  "case %d: lacks '%s' or '%s': %s", _i, b->field, b->value, dl_test_err);
    ck_assert_str_eq(dl_test_out, ""); /* refused before the golden file is read */
    ck_assert_int_eq(access(res, F_OK), -1);
    ck_assert(!dl_test_has_tmp(dl_test_dir));
}
END_TEST

START_TEST(run_flush_accepted_and_documented)
{
    ck_assert_int_eq(DL_RUN("run", "--help"), 0);
    const char *doc[] = {"--flush write|read", "flush", "ref_read_s", "ref_read_pages_s", "ref_read_contig_s",
                         "frac_ref", "--hot-l2"};
    for (size_t i = 0; i < sizeof doc / sizeof doc[0]; i++)
        ck_assert_msg(strstr(dl_test_out, doc[i]) != NULL, "run --help lacks '%s'", doc[i]);
    if (dl_gpu_device_count() > 0) return; /* below: what a machine without a GPU does */
    const char *modes[] = {"write", "read"};
    for (int i = 0; i < 2; i++) {
        int rc = DL_RUN("run", good, "--flush", modes[i]);
        ck_assert_msg(rc == 0, "--flush %s: exit %d: %s", modes[i], rc, dl_test_err);
        ck_assert_ptr_nonnull(strstr(dl_test_out, "GPU variants skipped"));
        ck_assert_str_eq(dl_test_err, "");
    }
}
END_TEST

/* --chain: documented; without a GPU, accepted and the variants skipped, as for --time. */
START_TEST(run_chain_accepted_and_documented)
{
    ck_assert_int_eq(DL_RUN("run", "--help"), 0);
    const char *doc[] = {"--chain L", "chain-cold-l2", "graph_launches L", "DL_STREAM_PDL=0", "poisoned outputs"};
    for (size_t i = 0; i < sizeof doc / sizeof doc[0]; i++)
        ck_assert_msg(strstr(dl_test_out, doc[i]) != NULL, "run --help lacks '%s'", doc[i]);
    if (dl_gpu_device_count() > 0) return; /* below: what a machine without a GPU does */
    int rc = DL_RUN("run", good, "--chain", "4");
    ck_assert_msg(rc == 0, "--chain 4: exit %d: %s", rc, dl_test_err);
    ck_assert_ptr_nonnull(strstr(dl_test_out, "GPU variants skipped"));
    ck_assert_str_eq(dl_test_err, "");
}
END_TEST

/* Every file of the committed canonical set verifies. */
START_TEST(canonical_set_verifies)
{
    const char *root = getenv("DL_ROOT");
    char pat[600];
    snprintf(pat, sizeof pat, "%s/data/golden/*.h5", root ? root : ".");
    glob_t gl;
    ck_assert_msg(glob(pat, 0, NULL, &gl) == 0 && gl.gl_pathc >= 8, "canonical set missing: %s", pat);
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        int rc = DL_RUN("check", gl.gl_pathv[i]);
        ck_assert_msg(rc == 0, "%s: exit %d\n%s%s", gl.gl_pathv[i], rc, dl_test_out, dl_test_err);
    }
    globfree(&gl);
}
END_TEST

/* A DL_STREAM_* name no build reads (a typo) and a knob's value in a wrong form stop `run` and `experiment` with exit
 * 2 and one line naming it, before any file is read or written (they were once ignored, or FAILed each row). */
START_TEST(stream_knob_refused_first)
{
    char res[300], xp_out[300], cfg[1200];
    dl_test_path(res, sizeof res, "knob.h5");
    dl_test_path(xp_out, sizeof xp_out, "knob_xp");
    snprintf(cfg, sizeof cfg, "%s/experiments/E3_gqa_fp8_dequant.cfg", dl_test_root());
    const char *set[][3] = {{"DL_STREAM_MERG", "ticket", "(DL_STREAM_MERGE?)"}, {"DL_STREAM_UNIT", "1O", "'1O'"}};
    for (int k = 0; k < 2; k++) {
        setenv(set[k][0], set[k][1], 1);
        int rc = DL_RUN("run", good, "--variants", "bf16-hw-stream", "--out", res);
        ck_assert_msg(rc == 2 && dl_test_lines(dl_test_err) == 1 && strstr(dl_test_err, "decodelab run: ") &&
                          strstr(dl_test_err, set[k][0]) && strstr(dl_test_err, set[k][2]),
                      "%s: exit %d, stderr: %s", set[k][0], rc, dl_test_err);
        ck_assert_str_eq(dl_test_out, "");
        ck_assert_int_eq(access(res, F_OK), -1);
        rc = DL_RUN("experiment", cfg, "--out", xp_out);
        ck_assert_msg(rc == 2 && dl_test_lines(dl_test_err) == 1 && strstr(dl_test_err, "decodelab experiment: ") &&
                          strstr(dl_test_err, set[k][0]) && strstr(dl_test_err, set[k][2]),
                      "%s: exit %d, stderr: %s", set[k][0], rc, dl_test_err);
        ck_assert_int_eq(access(xp_out, F_OK), -1);
        unsetenv(set[k][0]);
    }
}
END_TEST

Suite *make_suite(void)
{
    const TTest *tests[] = {help_each_subcommand, golden_summary_check_inspect, golden_models_auto,
                            check_fails_on_changed_model, golden_write_fails_cleanly,
                            check_p_cast_counts, golden_missing_out_and_existing_file, ncu_out_checked_first, check_usage_errors,
                            run_flush_accepted_and_documented, run_chain_accepted_and_documented,
                            deterministic_across_threads, golden_share_prefix,
                            canonical_set_verifies, stream_knob_refused_first};
    TCase *tc;
    Suite *s = dl_test_suite("cli", 120, setup, teardown, tests, (int)(sizeof tests / sizeof tests[0]), &tc);
    tcase_add_loop_test(tc, golden_bad_flags, 0, num_bad_flags);
    tcase_add_loop_test(tc, check_inspect_bad_files, 0, num_bad_files);
    tcase_add_loop_test(tc, run_bad_flags, 0, num_bad_run_flags);
    return s;
}

DL_TEST_MAIN

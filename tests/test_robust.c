/* test_robust.c - issue 7: nothing lost, hostile inputs refused, determinism.
 *  - SIGKILL `decodelab golden` while it computes and while it writes: the
 *    file of that name is either absent (none before) or byte-identical to the
 *    one before, and still verifies;
 *  - SIGKILL a process in the middle of a loop of results appends: the table
 *    always reads, and holds whole rows 0..n-1 in order (none lost, none twice);
 *  - `run --resume` skips exactly the variants already recorded (inputs hash,
 *    split count, timing mode, flush); --resume without --out is refused;
 *  - refusals added for hostile files: datasets whose data the file does not
 *    hold (a small file claiming gigabytes), external storage, NaN inputs
 *    unless /config@allow_nonfinite = 1, a results num_rows the file cannot hold;
 *  - every input kept under tests/fuzz/regressions/{golden,results} is read
 *    without a crash (under `make test SAN=asan,ubsan` also without a report);
 *    there are at least 3 (made by these tests with DL_KEEP_HOSTILE=dir);
 *  - the same seed gives byte-identical golden files with 1 and 3 OpenMP threads;
 *  - the GPU code's environment knobs refuse what is not a whole integer in range (dl_env_int).
 * Uses $DL_BIN (the CLI) and $DL_ROOT (the repository), set by `make test-unit`. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../harness/dl_golden.h"
#include "../harness/dl_results.h"
#include "../harness/dl_run.h"
#include "dl_test.h"
#include "golden_mutate.h"

static char small[300];

static void sleep_ms(double ms)
{
    struct timespec t = {(time_t)(ms / 1000), (long)((ms - 1000 * (long)(ms / 1000)) * 1e6)};
    nanosleep(&t, NULL);
}

/* Run and capture stdout and stderr together into buf. */
static int run_capture(char *buf, size_t n, const char *const *args)
{
    char out[320];
    dl_test_path(out, sizeof out, "capture.txt");
    int rc = dl_test_wait(dl_test_spawn(NULL, args, out, out));
    dl_test_slurp(out, buf, n);
    return rc;
}

/* Does a file whose name starts with prefix exist in dir? */
static int exists_prefix(const char *d, const char *prefix)
{
    DIR *dp = opendir(d);
    int found = 0;
    for (struct dirent *e; dp && (e = readdir(dp));)
        if (!strncmp(e->d_name, prefix, strlen(prefix))) found = 1;
    if (dp) closedir(dp);
    return found;
}

static void setup(void)
{
    dl_test_mkdir("robust");
    dl_test_path(small, sizeof small, "small.h5");
    ck_assert_int_eq(access(dl_test_bin(), X_OK), 0);
    ck_assert_int_eq(DL_RUN("golden", "--num-qo-heads", "4", "--num-kv-heads", "2", "--head-dim", "16", "--page-size",
                         "4", "--seq-len", "1,5,9", "--kv-dtype", "e4m3", "--seed", "5", "--out", small),
                     0);
}

static void teardown(void)
{
    dl_test_rmdir();
}

/* ------------------------------------------------------------ SIGKILL golden */

/* A case that takes a while to compute and writes a file of ~100 MB. */
#define BIG_ARGS "--preset", "llama3-8b", "--batch", "8", "--seq-len", "2048", "--models", "fp32", "--force"

/* when = 0: kill (with sig) as soon as the temporary file appears (mid-write); else after `when` ms (computing). */
static void kill_golden_sig(const char *target, double when, int sig)
{
    char name[300];
    snprintf(name, sizeof name, "%s", strrchr(target, '/') + 1);
    char prefix[320];
    snprintf(prefix, sizeof prefix, "%s.tmp.", name);
    pid_t pid = dl_test_spawn("2", (const char *const[]){"golden", BIG_ARGS, "--out", target, NULL}, NULL, NULL);
    if (when > 0) {
        sleep_ms(when);
    } else {
        double waited = 0;
        while (!exists_prefix(dl_test_dir, prefix) && waited < 60000) {
            sleep_ms(0.5);
            waited += 0.5;
        }
        ck_assert_msg(exists_prefix(dl_test_dir, prefix), "golden never started writing %s", target);
        sleep_ms(20); /* well inside the write of ~100 MB */
    }
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    ck_assert_msg(r == 0, "golden finished before it could be killed; make BIG_ARGS bigger");
    kill(pid, sig);
    ck_assert_int_eq(dl_test_wait(pid), 128 + sig);
}
static void kill_golden(const char *target, double when) { kill_golden_sig(target, when, SIGKILL); }

START_TEST(sigkill_golden_leaves_old_file)
{
    char target[300], saved[300];
    dl_test_path(target, sizeof target, "target.h5");
    dl_test_path(saved, sizeof saved, "saved_copy.h5");
    /* no file before: none after */
    kill_golden(target, 150);
    ck_assert_int_ne(access(target, F_OK), 0);
    kill_golden(target, 0);
    ck_assert_int_ne(access(target, F_OK), 0);
    /* a file before: the same bytes after, and it still verifies */
    ck_assert_int_eq(gm_copy(small, target), 0);
    ck_assert_int_eq(gm_copy(small, saved), 0);
    kill_golden(target, 150);
    ck_assert(dl_test_same_bytes(target, saved));
    kill_golden(target, 0);
    ck_assert(dl_test_same_bytes(target, saved));
    ck_assert_int_eq(DL_RUN("check", target), 0);
}
END_TEST

/* SIGTERM or SIGINT mid-write: the process dies by the signal, the old file (or none) is left, and so is no
 * temporary file (a SIGKILL cannot be caught: its FILE.tmp.PID stays, named for what it is). */
START_TEST(sigterm_golden_leaves_no_temp)
{
    char target[300], saved[300], prefix[320];
    dl_test_path(target, sizeof target, "target.h5");
    dl_test_path(saved, sizeof saved, "saved_copy.h5");
    snprintf(prefix, sizeof prefix, "target.h5.tmp.");
    kill_golden_sig(target, 0, SIGTERM);
    ck_assert_int_ne(access(target, F_OK), 0);
    ck_assert_msg(!exists_prefix(dl_test_dir, prefix), "a temporary file was left after SIGTERM");
    ck_assert_int_eq(gm_copy(small, target), 0);
    ck_assert_int_eq(gm_copy(small, saved), 0);
    kill_golden_sig(target, 0, SIGINT);
    ck_assert(dl_test_same_bytes(target, saved));
    ck_assert_msg(!exists_prefix(dl_test_dir, prefix), "a temporary file was left after SIGINT");
}
END_TEST

/* ------------------------------------------------------- SIGKILL appends */

static void make_row(dl_result_row *r, int64_t i)
{
    dl_result_row_init(r);
    snprintf(r->variant, sizeof r->variant, "row%lld", (long long)i);
    snprintf(r->golden_hash, sizeof r->golden_hash, "fnv1a64:%016llx", (unsigned long long)i);
    snprintf(r->verdict, sizeof r->verdict, "PASS");
    r->batch_size = i;
    r->time_median_s = (double)i * 1e-6;
}

/* Child: append rows start, start+1, ... one per call, forever. */
static void append_forever(const char *path, int64_t start)
{
    for (int64_t i = start;; i++) {
        dl_result_row r;
        make_row(&r, i);
        if (dl_results_append(path, &r, 1)) _exit(3);
    }
}

/* The table reads and holds rows 0..n-1 exactly once each, in order. */
static int64_t check_rows(const char *path)
{
    dl_result_row *rows = NULL;
    int64_t n = 0;
    ck_assert_msg(dl_results_read(path, &rows, &n) == 0, "%s", dl_last_error());
    for (int64_t i = 0; i < n; i++) {
        char want[64];
        snprintf(want, sizeof want, "row%lld", (long long)i);
        ck_assert_str_eq(rows[i].variant, want);
        ck_assert_int_eq(rows[i].batch_size, i);
        ck_assert(rows[i].time_median_s == (double)i * 1e-6);
        ck_assert_str_eq(rows[i].verdict, "PASS");
    }
    free(rows);
    return n;
}

START_TEST(sigkill_results_append_loop)
{
    char path[300];
    dl_test_path(path, sizeof path, "results.h5");
    int64_t n = 0;
    srand(12345);
    for (int round = 0; round < 8; round++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) append_forever(path, n);
        /* wait for its first row (an append rewrites and fsyncs the table), then kill it at a random point */
        struct stat st;
        for (int waited = 0; waited < 20000 && (stat(path, &st) != 0 || check_rows(path) == n); waited++) sleep_ms(1);
        sleep_ms(rand() % 25);
        kill(pid, SIGKILL);
        ck_assert_int_eq(dl_test_wait(pid), 128 + SIGKILL);
        int64_t m = check_rows(path);
        ck_assert_msg(m > n, "round %d: no row appended (%lld rows)", round, (long long)m);
        n = m;
    }
    /* the CSV twin has a header and one line per row (or lags by one append when the kill fell between the renames) */
    char csv[400], line[20000];
    dl_results_csv_path(path, csv, sizeof csv);
    FILE *f = fopen(csv, "r");
    ck_assert_ptr_nonnull(f);
    int64_t lines = 0;
    while (fgets(line, sizeof line, f)) lines += strchr(line, '\n') != NULL;
    fclose(f);
    ck_assert_msg(lines == n + 1 || lines == n, "csv has %lld lines for %lld rows", (long long)lines, (long long)n);
}
END_TEST

/* ------------------------------------------------------------ resume */

START_TEST(resume_skips_recorded_variants)
{
    ck_assert_int_ge(dl_num_variants, 2);
    dl_golden g;
    ck_assert(dl_golden_read(small, &g) == 0);
    /* the read golden carries its inputs hash, computed once, equal to the hash of its inputs */
    ck_assert(dl_golden_inputs_hash(&g) == dl_run_inputs_hash(&g.c));
    char hash[32], res[300];
    dl_run_hash_string(dl_run_inputs_hash(&g.c), hash, sizeof hash);
    dl_test_path(res, sizeof res, "res.h5");
    /* variant 0 recorded for this file (splits 1, untimed); variant 1 for another file */
    dl_result_row r[2];
    dl_result_row_init(&r[0]);
    snprintf(r[0].golden_hash, sizeof r[0].golden_hash, "%s", hash);
    snprintf(r[0].variant, sizeof r[0].variant, "%s", dl_variants[0].name);
    snprintf(r[0].verdict, sizeof r[0].verdict, "PASS");
    r[0].num_splits = 1;
    dl_result_row_init(&r[1]);
    snprintf(r[1].golden_hash, sizeof r[1].golden_hash, "fnv1a64:0000000000000001");
    snprintf(r[1].variant, sizeof r[1].variant, "%s", dl_variants[1].name);
    snprintf(r[1].verdict, sizeof r[1].verdict, "PASS");
    r[1].num_splits = 1;
    ck_assert_int_eq(dl_results_append(res, r, 2), 0);

    const dl_variant *sel[64];
    int nsel;
    /* same hash, splits and timing mode: variant 0 dropped, the rest kept in order */
    for (int i = 0; i < dl_num_variants; i++) sel[i] = &dl_variants[i];
    nsel = dl_num_variants;
    ck_assert_int_eq(dl_run_resume_filter(res, &g.c, dl_golden_inputs_hash(&g), 1, "none", "none", sel, &nsel), 0);
    ck_assert_int_eq(nsel, dl_num_variants - 1);
    for (int i = 0; i < nsel; i++) ck_assert_ptr_eq(sel[i], &dl_variants[i + 1]);
    /* another split count or a timing mode the PASS row was not timed in: nothing dropped */
    const char *modes[2] = {"none", "cold-l2"};
    int splits[2] = {4, 1};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < dl_num_variants; i++) sel[i] = &dl_variants[i];
        nsel = dl_num_variants;
        ck_assert_int_eq(dl_run_resume_filter(res, &g.c, dl_golden_inputs_hash(&g), splits[k], modes[k], "write", sel, &nsel), 0);
        ck_assert_int_eq(nsel, dl_num_variants);
    }
    /* variant 1 timed cold-l2 after the memset flush: --flush write skips it, --flush read does not */
    dl_result_row t;
    dl_result_row_init(&t);
    snprintf(t.golden_hash, sizeof t.golden_hash, "%s", hash);
    snprintf(t.variant, sizeof t.variant, "%s", dl_variants[1].name);
    snprintf(t.verdict, sizeof t.verdict, "PASS");
    snprintf(t.timing_mode, sizeof t.timing_mode, "cold-l2");
    snprintf(t.flush, sizeof t.flush, "write");
    t.num_splits = 1;
    ck_assert_int_eq(dl_results_append(res, &t, 1), 0);
    const char *flushes[2] = {"write", "read"};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < dl_num_variants; i++) sel[i] = &dl_variants[i];
        nsel = dl_num_variants;
        ck_assert_int_eq(dl_run_resume_filter(res, &g.c, dl_golden_inputs_hash(&g), 1, "cold-l2", flushes[k], sel, &nsel), 0);
        ck_assert_int_eq(nsel, dl_num_variants - (k == 0));
        if (k == 0 && dl_num_variants > 2) ck_assert_ptr_eq(sel[1], &dl_variants[2]);
    }
    /* auto splits resolve the same way run does */
    ck_assert_int_eq(dl_run_resolve_splits(&g.c, 7), 7);
    ck_assert_int_ge(dl_run_resolve_splits(&g.c, 0), 1);
    /* a missing results file: nothing recorded, nothing dropped */
    char none[320];
    dl_test_path(none, sizeof none, "none.h5");
    nsel = dl_num_variants;
    ck_assert_int_eq(dl_run_resume_filter(none, &g.c, dl_golden_inputs_hash(&g), 1, "none", "none", sel, &nsel), 0);
    ck_assert_int_eq(nsel, dl_num_variants);
    dl_golden_free(&g);

    /* the CLI (no GPU here: it lists what would run) */
    static char out[65536];
    ck_assert_int_eq(run_capture(out, sizeof out, (const char *const[]){"run", small, "--splits", "1", "--out", res,
                                                                         "--resume", NULL}),
                     0);
    char want[128];
    snprintf(want, sizeof want, "resume: 1 of %d selected variants", dl_num_variants);
    ck_assert_msg(strstr(out, want) != NULL, "%s", out);
    snprintf(want, sizeof want, "  %-18s ", dl_variants[0].name);
    ck_assert_msg(strstr(out, want) == NULL, "%s", out);
    snprintf(want, sizeof want, "  %-18s ", dl_variants[1].name);
    ck_assert_msg(strstr(out, want) != NULL || !strstr(out, "would"), "%s", out);
    ck_assert_int_eq(run_capture(out, sizeof out, (const char *const[]){"run", small, "--resume", NULL}), 2);
    ck_assert_msg(strstr(out, "--resume") && strstr(out, "--out"), "%s", out);
}
END_TEST

/* ------------------------------------------------------------ hostile files */

/* Replace dataset ds by a chunked (Fletcher32) dataset of the given shape with nothing written. */
static int replace_unwritten(const char *path, const char *ds, hid_t ftype, int rank, const hsize_t *dims,
                             const hsize_t *chunk, const char *dtype)
{
    hid_t f = gm_open(path);
    if (f < 0) return -1;
    H5Ldelete(f, ds, H5P_DEFAULT);
    hid_t s = H5Screate_simple(rank, dims, NULL), p = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(p, rank, chunk);
    H5Pset_fletcher32(p);
    hid_t d = H5Dcreate2(f, ds, ftype, s, H5P_DEFAULT, p, H5P_DEFAULT);
    int rc = d >= 0 ? 0 : -1;
    if (d >= 0) H5Dclose(d);
    H5Pclose(p);
    H5Sclose(s);
    H5Fclose(f);
    if (!rc) rc = gm_set_attr_str(path, ds, "dtype", dtype);
    return rc;
}

/* DL_KEEP_HOSTILE=DIR: copy a hostile file built by a test there (how the committed
 * tests/fuzz/regressions/{golden,results} inputs were made). */
static void keep_hostile(const char *path, const char *name)
{
    const char *d = getenv("DL_KEEP_HOSTILE");
    if (!d) return;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/%s'", path, d, name);
    if (system(cmd) != 0) fprintf(stderr, "could not keep %s\n", path);
}

static void expect_refusal(const char *path, const char *w1, const char *w2)
{
    dl_golden g;
    ck_assert_msg(dl_golden_read(path, &g) != 0, "%s was accepted", path);
    const char *e = dl_last_error();
    ck_assert_msg(strstr(e, path) && strstr(e, w1) && (!w2 || strstr(e, w2)), "message: %s", e);
    ck_assert(!strchr(e, '\n'));
}

START_TEST(refuse_data_not_in_file)
{
    char p[300];
    dl_golden g;
    ck_assert(dl_golden_read(small, &g) == 0);
    const dl_config cfg = g.c.cfg;
    dl_golden_free(&g);
    /* NHD [pages, page_size, Hkv, D]: 2^24 pages claimed = 1 GiB of e4m3 in a file of ~100 KB */
    hsize_t dims[4] = {1u << 24, (hsize_t)cfg.page_size, (hsize_t)cfg.num_kv_heads, (hsize_t)cfg.head_dim};
    hsize_t chunk[4] = {1024, dims[1], dims[2], dims[3]};
    dl_test_path(p, sizeof p, "claims.h5");
    ck_assert_int_eq(gm_copy(small, p), 0);
    ck_assert_int_eq(replace_unwritten(p, "/inputs/k_cache", H5T_STD_U8LE, 4, dims, chunk, "e4m3"), 0);
    keep_hostile(p, "golden-claims-1GiB-k_cache.h5");
    expect_refusal(p, "/inputs/k_cache", "stored");
    /* a chunk over the limit (64 MiB) */
    hsize_t big[4] = {1u << 20, dims[1], dims[2], dims[3]};
    ck_assert_int_eq(gm_copy(small, p), 0);
    ck_assert_int_eq(replace_unwritten(p, "/inputs/k_cache", H5T_STD_U8LE, 4, big, big, "e4m3"), 0);
    keep_hostile(p, "golden-chunk-over-64MiB.h5");
    expect_refusal(p, "/inputs/k_cache", "chunks");
    /* the same through the CLI: exit 2, one line */
    ck_assert_int_eq(DL_RUN("check", p), 2);
}
END_TEST

START_TEST(refuse_external_storage)
{
    char p[300], raw[300];
    dl_test_path(p, sizeof p, "external.h5");
    dl_test_path(raw, sizeof raw, "raw.bin");
    ck_assert_int_eq(gm_copy(small, p), 0);
    FILE *f = fopen(raw, "wb");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 4096; i++) fputc(0, f);
    fclose(f);
    hid_t h = gm_open(p);
    ck_assert(h >= 0);
    H5Ldelete(h, "/inputs/k_scale", H5P_DEFAULT);
    hsize_t dims[1] = {2};
    hid_t s = H5Screate_simple(1, dims, NULL), pl = H5Pcreate(H5P_DATASET_CREATE);
    ck_assert(H5Pset_external(pl, raw, 0, 8) >= 0);
    hid_t d = H5Dcreate2(h, "/inputs/k_scale", H5T_IEEE_F32LE, s, H5P_DEFAULT, pl, H5P_DEFAULT);
    ck_assert(d >= 0);
    H5Dclose(d);
    H5Pclose(pl);
    H5Sclose(s);
    H5Fclose(h);
    ck_assert_int_eq(gm_set_attr_str(p, "/inputs/k_scale", "dtype", "f32"), 0);
    expect_refusal(p, "/inputs/k_scale", "external");
}
END_TEST

START_TEST(nonfinite_inputs_need_allow_flag)
{
    char p[300];
    dl_test_path(p, sizeof p, "nan.h5");
    ck_assert_int_eq(gm_copy(small, p), 0);
    uint16_t nan_bf16 = 0x7FC0; /* q is bf16 */
    ck_assert_int_eq(gm_write_elem(p, "/inputs/q", 3, H5T_NATIVE_UINT16, &nan_bf16), 0);
    expect_refusal(p, "/inputs/q", "not finite");
    ck_assert_int_eq(gm_set_attr_i64(p, "/config", "allow_nonfinite", 2), 0);
    expect_refusal(p, "allow_nonfinite", "2");
    ck_assert_int_eq(gm_set_attr_i64(p, "/config", "allow_nonfinite", 1), 0);
    dl_golden g;
    ck_assert_msg(dl_golden_read(p, &g) == 0, "%s", dl_last_error());
    ck_assert_int_eq(g.allow_nonfinite, 1);
    dl_golden_free(&g);
    ck_assert_int_eq(gm_set_attr_i64(p, "/config", "allow_nonfinite", 0), 0);
    expect_refusal(p, "/inputs/q", "not finite");
    /* the committed/generated file without the attribute reads as allow_nonfinite = 0 */
    ck_assert(dl_golden_read(small, &g) == 0);
    ck_assert_int_eq(g.allow_nonfinite, 0);
    dl_golden_free(&g);
}
END_TEST

START_TEST(results_rows_bounded_by_file)
{
    char p[300];
    dl_test_path(p, sizeof p, "r.h5");
    dl_result_row r;
    make_row(&r, 0);
    ck_assert_int_eq(dl_results_append(p, &r, 1), 0);
    ck_assert_int_eq(gm_set_attr_i64(p, "/results", "num_rows", INT64_C(1) << 30), 0);
    keep_hostile(p, "results-num_rows-2e30.h5");
    dl_result_row *rows = NULL;
    int64_t n = 0;
    ck_assert_int_ne(dl_results_read(p, &rows, &n), 0);
    ck_assert_msg(strstr(dl_last_error(), "num_rows") && strstr(dl_last_error(), p), "%s", dl_last_error());
    ck_assert_ptr_null(rows);
}
END_TEST

/* Every kept fuzz finding still reads without a crash (the outcome may be a refusal). */
START_TEST(fuzz_regressions_replay)
{
    char pat[600];
    glob_t gl;
    int total = 0;
    snprintf(pat, sizeof pat, "%s/tests/fuzz/regressions/golden/*", dl_test_root());
    if (glob(pat, 0, NULL, &gl) == 0) {
        for (size_t i = 0; i < gl.gl_pathc; i++, total++) {
            dl_golden g;
            if (dl_golden_read(gl.gl_pathv[i], &g) == 0) {
                ck_assert_int_eq(dl_case_validate(&g.c, gl.gl_pathv[i]), 0);
                dl_golden_free(&g);
            } else {
                ck_assert(!strchr(dl_last_error(), '\n'));
            }
        }
        globfree(&gl);
    }
    snprintf(pat, sizeof pat, "%s/tests/fuzz/regressions/results/*", dl_test_root());
    if (glob(pat, 0, NULL, &gl) == 0) {
        for (size_t i = 0; i < gl.gl_pathc; i++, total++) {
            dl_result_row *rows = NULL;
            int64_t n = 0;
            if (dl_results_read(gl.gl_pathv[i], &rows, &n) == 0) free(rows);
        }
        globfree(&gl);
    }
    /* and the seed corpus is accepted as it is */
    snprintf(pat, sizeof pat, "%s/tests/fuzz/corpus/golden/*.h5", dl_test_root());
    ck_assert_int_eq(glob(pat, 0, NULL, &gl), 0);
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        dl_golden g;
        ck_assert_msg(dl_golden_read(gl.gl_pathv[i], &g) == 0, "%s", dl_last_error());
        dl_golden_free(&g);
    }
    globfree(&gl);
    /* the committed regressions (tests/fuzz/regressions/{golden,results}) are replayed, not an empty glob */
    ck_assert_int_ge(total, 3);
}
END_TEST

/* ------------------------------------------------------------ determinism */

START_TEST(deterministic_1_vs_3_threads)
{
    char a[300], b[300];
    dl_test_path(a, sizeof a, "t1.h5");
    dl_test_path(b, sizeof b, "t3.h5");
    ck_assert_int_eq(dl_test_cli("1", (const char *const[]){"golden", "--batch", "7", "--seq-len", "1:70", "--num-qo-heads",
                                                        "12", "--num-kv-heads", "3", "--head-dim", "40", "--kv-layout",
                                                        "HND", "--distribution", "channel-outlier", "--out", a, NULL}),
                     0);
    ck_assert_int_eq(dl_test_cli("3", (const char *const[]){"golden", "--batch", "7", "--seq-len", "1:70", "--num-qo-heads",
                                                        "12", "--num-kv-heads", "3", "--head-dim", "40", "--kv-layout",
                                                        "HND", "--distribution", "channel-outlier", "--out", b, NULL}),
                     0);
    ck_assert(dl_test_same_bytes(a, b));
}
END_TEST

/* The GPU code's environment knobs (DL_STREAM_*, DL_BENCH_*) are parsed by dl_env_int: unset gives the default,
 * a whole integer in range is taken, anything else is refused with its name, value and range, the default kept. */
START_TEST(env_knob_refuses_bad_values)
{
    const char *name = "DL_TEST_ENV_KNOB";
    int v = -7;
    unsetenv(name);
    ck_assert_int_eq(dl_env_int(name, 1, 16, 4, NULL, &v), 0);
    ck_assert_int_eq(v, 4);
    setenv(name, "16", 1);
    ck_assert_int_eq(dl_env_int(name, 1, 16, 4, NULL, &v), 0);
    ck_assert_int_eq(v, 16);
    const char *bad[] = {"", "17", "0", "3x", "2.5", " ", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv(name, bad[i], 1);
        dl_clear_error();
        ck_assert_int_eq(dl_env_int(name, 1, 16, 4, "KB", &v), -1);
        ck_assert_int_eq(v, 4);
        char want[128];
        snprintf(want, sizeof want, "DL_TEST_ENV_KNOB: '%s' is not an integer in 1..16 (KB)", bad[i]);
        ck_assert_str_eq(dl_last_error(), want);
    }
    setenv(name, "3x", 1);
    ck_assert_int_eq(dl_env_int(name, 1, 16, 4, NULL, &v), -1);
    ck_assert_str_eq(dl_last_error(), "DL_TEST_ENV_KNOB: '3x' is not an integer in 1..16");
    unsetenv(name);
}
END_TEST

DL_TEST_SUITE("robust", 300, setup, teardown,
              sigkill_golden_leaves_old_file, sigterm_golden_leaves_no_temp, sigkill_results_append_loop, resume_skips_recorded_variants,
              refuse_data_not_in_file, refuse_external_storage, nonfinite_inputs_need_allow_flag,
              results_rows_bounded_by_file, fuzz_regressions_replay, deterministic_1_vs_3_threads,
              env_knob_refuses_bad_values)

/* dl_test.h - shared helpers for the Check suites (tests/dl_test.c, linked into every
 * test binary): the suite and its main(), a scratch directory, running the decodelab
 * binary with its output captured, and a small case of a given shape. */
#ifndef DL_TEST_H
#define DL_TEST_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include "../harness/dl_census.h"
#include "../ref/dl_paged.h"

/* Each tests/test_<module>.c defines `Suite *make_suite(void)` and uses DL_TEST_MAIN
 * (DL_TEST_SUITE below writes both). */
#define DL_TEST_MAIN                                                      \
    int main(void)                                                        \
    {                                                                     \
        SRunner *sr = srunner_create(make_suite());                       \
        srunner_run_all(sr, CK_NORMAL);                                   \
        int failed = srunner_ntests_failed(sr);                           \
        srunner_free(sr);                                                 \
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                 \
    }

/* A suite `name` of one test case (of the same name) holding tests[0..n-1], each with a
 * timeout of `timeout` seconds and, when setup is not NULL, the checked fixture
 * setup/teardown around it. *tc (when tc is not NULL) gets the case, for loop tests. */
Suite *dl_test_suite(const char *name, double timeout, SFun setup, SFun teardown, const TTest *const *tests, int n,
                     TCase **tc);

/* make_suite() and main() of a test file whose tests are the arguments after teardown. */
#define DL_TEST_SUITE(name, timeout, setup, teardown, ...)                                                 \
    Suite *make_suite(void)                                                                                \
    {                                                                                                      \
        const TTest *tests[] = {__VA_ARGS__};                                                              \
        return dl_test_suite(name, timeout, setup, teardown, tests, (int)(sizeof tests / sizeof tests[0]), \
                             NULL);                                                                        \
    }                                                                                                      \
    DL_TEST_MAIN

/* ---- scratch directory ---- */

/* The running test's scratch directory (dl_test_mkdir), and the files DL_RUN sends the
 * binary's stdout and stderr to. */
extern char dl_test_dir[256], dl_test_out_path[300], dl_test_err_path[300];

/* Make a fresh /tmp/dl_test_<stem>_XXXXXX as dl_test_dir (the test fails if it cannot). */
void dl_test_mkdir(const char *stem);
/* Remove dl_test_dir and everything in it: 0, or -1 (said on stderr) if rm failed. */
int dl_test_rmdir(void);
/* "<dl_test_dir>/<name>" into buf (n bytes); returns buf. */
char *dl_test_path(char *buf, size_t n, const char *name);

/* ---- the decodelab binary ---- */

/* The binary under test: $DL_BIN (set by `make test-unit`), else build/decodelab. */
const char *dl_test_bin(void);
/* $DL_ROOT (the repository root, set by `make test-unit`), else ".". */
const char *dl_test_root(void);

/* Read up to n-1 bytes of a file into buf, NUL-terminated ("" if it cannot be read). */
void dl_test_slurp(const char *path, char *buf, size_t n);

/* Start the binary with args (NULL-terminated): stdout into the file out_path, stderr into
 * err_path (NULL: /dev/null; err_path equal to out_path: both into that one file),
 * OMP_NUM_THREADS=omp for the child when omp is not NULL. Returns the child's pid. */
pid_t dl_test_spawn(const char *omp, const char *const *args, const char *out_path, const char *err_path);
/* Wait for a child: its exit status, or 128 + the signal that killed it. */
int dl_test_wait(pid_t pid);

/* Run the binary with args (NULL-terminated), stdout/stderr into the files
 * out_path/err_path and then into out/err; omp: OMP_NUM_THREADS for the child,
 * or NULL. Returns the exit status (128 + signal if killed). */
int dl_test_run(const char *omp, const char *const *args, const char *out_path, const char *err_path, char *out,
                size_t nout, char *err, size_t nerr);

/* What the last DL_RUN printed on stdout and stderr. */
extern char dl_test_out[65536], dl_test_err[65536];
/* dl_test_run with the output in dl_test_dir (dl_test_out_path, dl_test_err_path) and in
 * dl_test_out / dl_test_err. */
int dl_test_cli(const char *omp, const char *const *args);
#define DL_RUN(...) dl_test_cli(NULL, (const char *const[]){__VA_ARGS__, NULL})

/* The number of '\n' in s. */
int dl_test_lines(const char *s);
/* Does directory d hold a file with ".tmp." in its name (an atomic write left unfinished)? */
int dl_test_has_tmp(const char *d);
/* Do two files hold the same bytes? */
int dl_test_same_bytes(const char *a, const char *b);

/* ---- cases ---- */

/* dl_config_default, then the shape: B requests, Hq query heads over Hkv KV heads, head
 * dimension D, page size page. */
void dl_test_shape(dl_config *c, int64_t B, int64_t Hq, int64_t Hkv, int64_t D, int64_t page);
/* Explicit sequence lengths: lens[0..c->batch_size-1]. */
void dl_test_lens(dl_config *c, const int64_t *lens);
/* Ragged sequence lengths drawn from min_len..max_len by dl_case_build, with this seed. */
void dl_test_ragged(dl_config *c, int64_t min_len, int64_t max_len, uint64_t seed);
/* dl_case_build; the test fails, naming the error, if it refuses. */
void dl_test_build(const dl_config *cfg, dl_case *c);
/* Parse a cuobjdump -sass listing held in a string into *c (asserts it parses). */
void dl_test_census_parse(const char *listing, dl_census *c);
/* 1 when cuobjdump is found; else prints "SKIP <suite> <test>: <why>" and returns 0. */
int dl_test_have_cuobjdump(const char *suite, const char *test);

#endif

/* dl_test.h - shared helpers for the Check suites: a main() that runs one suite. */
#ifndef DL_TEST_H
#define DL_TEST_H

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Each tests/test_<module>.c defines `Suite *make_suite(void)` and uses DL_TEST_MAIN. */
#define DL_TEST_MAIN                                                      \
    int main(void)                                                        \
    {                                                                     \
        SRunner *sr = srunner_create(make_suite());                       \
        srunner_run_all(sr, CK_NORMAL);                                   \
        int failed = srunner_ntests_failed(sr);                           \
        srunner_free(sr);                                                 \
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                 \
    }

/* The decodelab binary under test: $DL_BIN (set by `make test-unit`), else build/decodelab. */
static inline const char *dl_test_bin(void)
{
    const char *b = getenv("DL_BIN");
    return b ? b : "build/decodelab";
}

/* Read up to n-1 bytes of a file into buf, NUL-terminated ("" if it cannot be read). */
static inline void dl_test_slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = 0;
    if (f) fclose(f);
}

/* Run the binary with args (NULL-terminated), stdout/stderr into the files
 * out_path/err_path and then into out/err; omp: OMP_NUM_THREADS for the child,
 * or NULL. Returns the exit status (128 + signal if killed). */
static inline int dl_test_run(const char *omp, const char *const *args, const char *out_path,
                              const char *err_path, char *out, size_t nout, char *err, size_t nerr)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = dl_test_bin();
    for (; args[n - 1] && n < 63; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        if (omp) setenv("OMP_NUM_THREADS", omp, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    dl_test_slurp(out_path, out, nout);
    dl_test_slurp(err_path, err, nerr);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif

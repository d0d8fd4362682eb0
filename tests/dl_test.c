/* dl_test.c - the helpers of dl_test.h, linked into every Check suite of tests/. */
#include "dl_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

char dl_test_dir[256], dl_test_out_path[300], dl_test_err_path[300];
char dl_test_out[65536], dl_test_err[65536];

Suite *dl_test_suite(const char *name, double timeout, SFun setup, SFun teardown, const TTest *const *tests, int n,
                     TCase **tc)
{
    Suite *s = suite_create(name);
    TCase *t = tcase_create(name);
    tcase_set_timeout(t, timeout);
    if (setup) tcase_add_checked_fixture(t, setup, teardown);
    for (int i = 0; i < n; i++) tcase_add_test(t, tests[i]);
    suite_add_tcase(s, t);
    if (tc) *tc = t;
    return s;
}

void dl_test_mkdir(const char *stem)
{
    snprintf(dl_test_dir, sizeof dl_test_dir, "/tmp/dl_test_%s_XXXXXX", stem);
    ck_assert_ptr_nonnull(mkdtemp(dl_test_dir));
    dl_test_path(dl_test_out_path, sizeof dl_test_out_path, "stdout.txt");
    dl_test_path(dl_test_err_path, sizeof dl_test_err_path, "stderr.txt");
}

int dl_test_rmdir(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dl_test_dir);
    if (system(cmd) == 0) return 0;
    fprintf(stderr, "could not remove %s\n", dl_test_dir);
    return -1;
}

char *dl_test_path(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dl_test_dir, name);
    return buf;
}

const char *dl_test_bin(void)
{
    const char *b = getenv("DL_BIN");
    return b && *b ? b : "build/decodelab";
}

const char *dl_test_root(void)
{
    const char *r = getenv("DL_ROOT");
    return r && *r ? r : ".";
}

void dl_test_slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = 0;
    if (f) fclose(f);
}

pid_t dl_test_spawn(const char *omp, const char *const *args, const char *out_path, const char *err_path)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = dl_test_bin();
    for (; args[n - 1] && n < 63; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = err_path && out_path && !strcmp(err_path, out_path)
                    ? o
                    : open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        if (omp) setenv("OMP_NUM_THREADS", omp, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

int dl_test_wait(pid_t pid)
{
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int dl_test_run(const char *omp, const char *const *args, const char *out_path, const char *err_path, char *out,
                size_t nout, char *err, size_t nerr)
{
    int rc = dl_test_wait(dl_test_spawn(omp, args, out_path, err_path));
    dl_test_slurp(out_path, out, nout);
    dl_test_slurp(err_path, err, nerr);
    return rc;
}

int dl_test_cli(const char *omp, const char *const *args)
{
    return dl_test_run(omp, args, dl_test_out_path, dl_test_err_path, dl_test_out, sizeof dl_test_out, dl_test_err,
                       sizeof dl_test_err);
}

int dl_test_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

int dl_test_has_tmp(const char *d)
{
    DIR *dp = opendir(d);
    int found = 0;
    for (struct dirent *e; (e = readdir(dp));)
        if (strstr(e->d_name, ".tmp.")) found = 1;
    closedir(dp);
    return found;
}

int dl_test_same_bytes(const char *a, const char *b)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

void dl_test_shape(dl_config *c, int64_t B, int64_t Hq, int64_t Hkv, int64_t D, int64_t page)
{
    dl_config_default(c);
    c->batch_size = B;
    c->num_qo_heads = Hq;
    c->num_kv_heads = Hkv;
    c->head_dim = D;
    c->page_size = page;
}

void dl_test_lens(dl_config *c, const int64_t *lens)
{
    c->num_explicit_lens = c->batch_size;
    for (int64_t b = 0; b < c->batch_size; b++) c->explicit_lens[b] = lens[b];
}

void dl_test_ragged(dl_config *c, int64_t min_len, int64_t max_len, uint64_t seed)
{
    c->seq_len_min = min_len;
    c->seq_len_max = max_len;
    c->seed = seed;
}

void dl_test_build(const dl_config *cfg, dl_case *c)
{
    int rc = dl_case_build(cfg, c);
    ck_assert_msg(rc == 0, "dl_case_build: %s", dl_last_error());
}

void dl_test_census_parse(const char *listing, dl_census *c)
{
    FILE *f = fmemopen((void *)listing, strlen(listing), "r");
    ck_assert_ptr_nonnull(f);
    memset(c, 0, sizeof *c);
    ck_assert_int_eq(dl_census_parse(f, c), 0);
    fclose(f);
}

int dl_test_have_cuobjdump(const char *suite, const char *test)
{
    char tool[1024];
    if (dl_census_find_tool("cuobjdump", "DL_CUOBJDUMP", tool, sizeof tool) == 0) return 1;
    printf("SKIP %s %s: %s (optional: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)\n", suite, test,
           dl_last_error());
    fflush(stdout);
    return 0;
}

/* cli_util.c - flag parsing, model lists, clock, file size, ulp distance, and the error line for the CLI. */
#include "cli_util.h"
#include "dl_cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int dl_cli_golden_cmd(const char *cmd, int argc, char **argv, void (*help)(FILE *),
                      int (*body)(const char *file, const dl_golden *g))
{
    const char *file;
    dl_golden g;
    int rc = dl_cli_one_file(cmd, argc, argv, &file, help);
    if (rc == 1) return 0;
    if (rc || dl_golden_read(file, &g)) return dl_cli_error(cmd);
    rc = body(file, &g);
    dl_golden_free(&g);
    return rc;
}

int dl_cli_file_arg(const char *cmd, const char *what, const char *a, const char **file)
{
    if (a[0] == '-') return dl_fail("unknown flag '%s' (see decodelab %s --help)", a, cmd);
    if (*file) return dl_fail("one %s expected, got '%s' and '%s'", what, *file, a);
    *file = a;
    return 0;
}

int dl_cli_getopt_fail(const char *cmd, int code, char **argv)
{
    if (code == ':') return dl_fail("%s: missing value (see decodelab %s --help)", argv[optind - 1], cmd);
    /* optopt: the letter of an unknown short option (within "-xh" optind still points at it); 0 for an
     * unknown long option, the option's code ('h' or >= 256) for a long option given a value it does not take */
    if (optopt > 0 && optopt < 256 && optopt != 'h')
        return dl_fail("unknown option '-%c' (see decodelab %s --help)", optopt, cmd);
    return dl_fail("unknown option '%s' (see decodelab %s --help)", argv[optind - 1], cmd);
}

int dl_parse_i64(const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (isspace((unsigned char)s[0]) || errno || end == s || *end || v < lo || v > hi)
        return dl_fail("%s: '%s' is not an integer in %lld..%lld", flag, s, (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

int dl_parse_u64(const char *flag, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)s[0])) return dl_fail("%s: '%s' is not an unsigned 64-bit integer", flag, s);
    unsigned long long v = strtoull(s, &end, 10); /* decimal, as every other integer flag ("010" is ten) */
    if (errno || end == s || *end) return dl_fail("%s: '%s' is not an unsigned 64-bit integer", flag, s);
    *out = v;
    return 0;
}

int dl_parse_f64(const char *flag, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (isspace((unsigned char)s[0]) || end == s || *end || !isfinite(v) || (errno == ERANGE && fabs(v) > 1.0))
        return dl_fail("%s: '%s' is not a finite number", flag, s);
    if (errno == ERANGE) return dl_fail("%s: '%s' underflows a double (below about 2.2e-308)", flag, s);
    *out = v;
    return 0;
}

int dl_parse_models(const char *flag, const char *s, int want[DL_MODEL_COUNT])
{
    char buf[256];
    memset(want, 0, DL_MODEL_COUNT * sizeof *want);
    if (strcmp(s, "all") == 0) {
        for (int m = 0; m < DL_MODEL_COUNT; m++) want[m] = 1;
        return 0;
    }
    if (strlen(s) >= sizeof buf || !s[0]) return dl_fail("%s: '%s' is not a list of models", flag, s);
    strcpy(buf, s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        dl_model m;
        if (dl_model_parse(tok, &m))
            return dl_fail("%s: model '%s' is unknown (expected a list of exact, orig, fp32, bf16, fp8, fp8acc, "
                           "bf16simt, fp8wg, fp8accwg, or all)", flag, tok);
        want[m] = 1;
    }
    return 0;
}

double dl_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int64_t dl_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* Map a float's bits onto a line where adjacent floats are adjacent integers. */
static int64_t ordered(float x)
{
    int32_t i;
    memcpy(&i, &x, 4);
    return i >= 0 ? (int64_t)i : -(int64_t)(i & 0x7FFFFFFF);
}

int64_t dl_ulp_distance(float a, float b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0 : INT64_MAX;
    int64_t d = ordered(a) - ordered(b);
    return d < 0 ? -d : d;
}

/* dl_cli.h: the one place a subcommand's error line is printed. */
int dl_cli_error(const char *cmd)
{
    /* one line whatever the message quotes (a flag value or file name may hold a newline) */
    fprintf(stderr, "decodelab %s: ", cmd);
    for (const unsigned char *p = (const unsigned char *)dl_last_error(); *p; p++) {
        if (*p < 0x20 || *p == 0x7f) fprintf(stderr, "\\x%02x", *p);
        else fputc(*p, stderr);
    }
    fputc('\n', stderr);
    return 2;
}

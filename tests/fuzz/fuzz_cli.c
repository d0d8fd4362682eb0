/* fuzz_cli.c - libFuzzer target: the option parsers of `decodelab golden`,
 * `run` and `check`/`inspect` (dl_cmd_golden_parse, dl_cmd_run_parse,
 * dl_cli_one_file), without doing any of the work. The first byte picks the
 * subcommand; the rest is split on NUL bytes into its arguments (at most 64).
 * Seeds: tests/fuzz/corpus/cli (argument lists from the docs and tests). */
#include <stdlib.h>
#include <string.h>

#include "../../harness/dl_cli.h"
#include "../../ref/dl_common.h"
#include "fuzz_common.h"

static void no_help(FILE *f) { fputs("usage\n", f); }

FUZZ_INIT("dl_fuzz_cli", ".txt")

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const cmds[3] = {"golden", "run", "check"};
    if (size < 1 || size > 4096) return 0;
    int which = data[0] % 3;
    /* a private NUL-terminated copy: the parsers keep pointers into argv */
    char *buf = malloc(size + 1);
    if (!buf) abort();
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = 0;
    char *argv[66];
    int argc = 0;
    argv[argc++] = (char *)cmds[which];
    for (size_t i = 0; i < size - 1 && argc < 65;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    dl_clear_error();
    int rc;
    const char *file = NULL;
    if (which == 0) rc = dl_cmd_golden_parse(argc, argv);
    else if (which == 1) rc = dl_cmd_run_parse(argc, argv);
    else rc = dl_cli_one_file("check", argc, argv, &file, no_help);
    /* a refusal records a message (dl_cli_error prints it as one line, control characters escaped) */
    if (rc < 0 && !strcmp(dl_last_error(), "unknown error")) abort(); /* dl_clear_error() above: nothing recorded */
    if (rc == 0 && which == 2 && !file) abort();
    free(buf);
    return 0;
}

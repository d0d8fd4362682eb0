/* fuzz_common.h - shared by the libFuzzer targets in tests/fuzz/: write the
 * input bytes to a per-process file in /dev/shm (or /tmp) for the readers that
 * take a path, and silence stdout (--help text). */
#ifndef DL_FUZZ_COMMON_H
#define DL_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz_path[128];

static void fuzz_cleanup(void) { unlink(fuzz_path); }

/* Pick the scratch file name once (suffix e.g. ".h5") and silence stdout. */
static void fuzz_init(const char *stem, const char *suffix)
{
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fuzz_path, sizeof fuzz_path, "%s/%s_%ld%s", dir, stem, (long)getpid(), suffix);
    atexit(fuzz_cleanup);
    if (!freopen("/dev/null", "w", stdout)) perror("freopen /dev/null");
}

/* The LLVMFuzzerInitialize of a target whose scratch file is named after stem, with suffix. */
#define FUZZ_INIT(stem, suffix)                            \
    int LLVMFuzzerInitialize(int *argc, char ***argv)      \
    {                                                      \
        (void)argc;                                        \
        (void)argv;                                        \
        fuzz_init(stem, suffix);                           \
        return 0;                                          \
    }

/* Write the input to fuzz_path; returns 0 on success. */
static int fuzz_write(const uint8_t *data, size_t size)
{
    FILE *f = fopen(fuzz_path, "wb");
    if (!f) return -1;
    size_t w = size ? fwrite(data, 1, size, f) : 0;
    return (fclose(f) == 0 && w == size) ? 0 : -1;
}

#endif

/* cmd_probe.c - `decodelab probe`: the E2 probe kernels (gpu/e2_probes.cu, rows in
 * gpu/dl_probes.def; issue 13 item 2). Lists them (name, kernel, the SASS forms each issues and
 * how many per thread) or launches them once each, so that Nsight Compute can profile them:
 *   ncu -k regex:e2_probe --metrics ... decodelab probe --run all
 * (tests/gpu/e2_probes_job.sh). Without a CUDA device it says so and exits 0. */
#include <stdio.h>
#include <string.h>

#include "../gpu/dl_gpu.h"
#include "../gpu/dl_probes.h"
#include "dl_cli.h"

static void probe_help(FILE *f)
{
    fprintf(f,
            "usage: decodelab probe [--list] [--run NAME|all]\n\n"
            "The E2 probe kernels: small straight-line kernels that each issue one candidate instruction\n"
            "form (packed/scalar FP16/BF16 FMA, MUL, ADD, MAX, compare, conversions, PRMT, LOP3, immediate\n"
            "moves; FFMA and HMMA as controls) a known number of times per thread, one block of %d threads.\n"
            "Profile them with Nsight Compute and compare each counter / warps with the SASS census\n"
            "(decodelab sass --forms --kernels 'e2_probe*'): tests/gpu/e2_probes_job.sh.\n\n"
            "  --list        (default) one tab-separated line per probe: name, kernel, forms, per thread,\n"
            "                warps per launch, PTX, note\n"
            "  --run NAME    launch probe NAME once (all: every probe, in table order) and print its checksum\n\n"
            "exit status: 0 ok (also: no CUDA device, nothing launched), 1 a launch failed, 2 bad usage.\n",
            DL_PROBE_THREADS);
}

static void list(void)
{
    printf("#name\tkernel\tforms\tper_thread\twarps\tptx\tnote\n");
    for (int i = 0; i < dl_num_probes; i++) {
        const dl_probe *p = &dl_probes[i];
        printf("%s\t%s\t%s\t%d\t%d\t%s\t%s\n", p->name, p->kernel, p->form, p->count, DL_PROBE_THREADS / 32, p->ptx,
               p->note);
    }
}

int dl_cmd_probe(int argc, char **argv)
{
    const char *run = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            probe_help(stdout);
            return 0;
        } else if (!strcmp(a, "--list")) {
            /* default */
        } else if (!strcmp(a, "--run") && i + 1 < argc) {
            run = argv[++i];
            if (strcmp(run, "all") && dl_probe_find(run) < 0) {
                dl_fail("--run: no probe named '%s' (see decodelab probe --list)", run);
                return dl_cli_error("probe");
            }
        } else {
            dl_fail("unknown or incomplete argument '%s' (see decodelab probe --help)", a);
            return dl_cli_error("probe");
        }
    }
    if (!run) {
        list();
        return 0;
    }
    const int one = strcmp(run, "all") ? dl_probe_find(run) : -1;
    dl_clear_error();
    if (dl_gpu_device_count() <= 0) {
        const char *why = dl_last_error();
        if (!strncmp(why, "no CUDA device: ", 16)) why += 16;
        printf("no CUDA device (%s): nothing launched; would run:\n", why);
        for (int i = 0; i < dl_num_probes; i++)
            if (one < 0 || one == i)
                printf("  %-16s %-28s %3d x %s per thread\n", dl_probes[i].name, dl_probes[i].kernel, dl_probes[i].count,
                       dl_probes[i].form);
        return 0;
    }
    int failed = 0;
    for (int i = 0; i < dl_num_probes; i++) {
        if (one >= 0 && one != i) continue;
        uint32_t sum = 0;
        if (dl_probe_launch(i, &sum)) {
            printf("%-16s FAIL: %s\n", dl_probes[i].name, dl_last_error());
            dl_clear_error();
            failed = 1;
            continue;
        }
        printf("%-16s %-28s launched 1 x %d threads, checksum %08x\n", dl_probes[i].name, dl_probes[i].kernel,
               DL_PROBE_THREADS, (unsigned)sum);
    }
    return failed;
}

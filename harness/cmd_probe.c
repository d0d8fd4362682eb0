/* cmd_probe.c - `decodelab probe`: the E2 probe kernels (gpu/e2_probes.cu, rows in
 * gpu/dl_probes.def; issue 13 item 2). Lists them (name, kernel, the SASS forms each issues and
 * how many per thread) or launches them once each, so that Nsight Compute can profile them:
 *   ncu -k regex:e2_probe --metrics ... decodelab probe --run all
 * (tests/gpu/e2_probes_job.sh). Without a CUDA device it says so and exits 0. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu/dl_gpu.h"
#include "../ref/dl_formats.h"
#include "../ref/dl_ref.h"
#include "../gpu/dl_probes.h"
#include "cli_util.h"
#include "dl_cli.h"

static void probe_help(FILE *f)
{
    fprintf(f,
            "usage: decodelab probe [--list] [--run NAME|all] [--wgmma-acc]\n\n"
            "The E2 probe kernels: small straight-line kernels that each issue one candidate instruction\n"
            "form (packed/scalar FP16/BF16 FMA, MUL, ADD, MAX, compare, conversions, PRMT, LOP3, immediate\n"
            "moves; FFMA and HMMA as controls) a known number of times per thread, one block of %d threads.\n"
            "Profile them with Nsight Compute and compare each counter / warps with the SASS census\n"
            "(decodelab sass --forms --kernels 'e2_probe*'): tests/gpu/e2_probes_job.sh.\n\n"
            "  --list        (default) one tab-separated line per probe: name, kernel, forms, per thread,\n"
            "                warps per launch, PTX, note\n"
            "  --run NAME    launch probe NAME once (all: every probe, in table order) and print its checksum\n"
            "  --wgmma-acc   the FP8 wgmma accumulator probe (issue 12): D = C + sum of 32 e4m3 products by one\n"
            "                m64n8k32 wgmma, on cases that each isolate one question (pairing of a and b, the\n"
            "                exponent gap at which a smaller product is lost, truncation or rounding, the role\n"
            "                of C); prints per case C, the exact sum, a sequential FP32 sum and the GPU's D\n\n"
            "exit status: 0 ok (also: no CUDA device, nothing launched), 1 a launch failed, 2 bad usage.\n",
            DL_PROBE_THREADS);
}

static int wgmma_acc(void)
{
    enum { CAP = 512 };
    dl_acc_case *v = calloc(CAP, sizeof *v);
    float *c = calloc(CAP, sizeof *c), *d = calloc(CAP, sizeof *d);
    uint8_t *a = calloc(CAP * 32, 1), *b = calloc(CAP * 32, 1);
    int *u = calloc(CAP, sizeof *u);
    if (!v || !c || !d || !a || !b || !u) {
        free(v), free(c), free(d), free(a), free(b), free(u);
        dl_fail("out of memory");
        return dl_cli_error("probe");
    }
    const int n = dl_wgmma_acc_cases(v, CAP);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        c[i] = v[i].c;
        for (int k = 0; k < 32; k++) {
            a[i * 32 + k] = dl_f32_to_e4m3(v[i].a[k], DL_SATFINITE);
            b[i * 32 + k] = dl_f32_to_e4m3(v[i].b[k], DL_SATFINITE);
            if (dl_e4m3_to_f32(a[i * 32 + k]) != v[i].a[k] || dl_e4m3_to_f32(b[i * 32 + k]) != v[i].b[k])
                rc = dl_fail("probe case '%s': k=%d: %g or %g is not an e4m3 value", v[i].name, k, v[i].a[k], v[i].b[k]);
        }
    }
    if (!rc) {
        dl_clear_error();
        if (dl_gpu_device_count() <= 0) {
            printf("no CUDA device: nothing launched; would run %d wgmma accumulator cases\n", n);
            goto out;
        }
        rc = dl_wgmma_acc_probe(n, 1, c, a, b, d, u);
    }
    if (rc) {
        rc = dl_cli_error("probe");
        goto out;
    }
    printf("# D = C + sum_k a[k] b[k] by one wgmma m64n8k32 f32.e4m3.e4m3 (all 512 outputs; uniform = they agree)\n");
    printf("# model = dl_qgmma_add (ref/dl_ref.h, the fp8wg accumulator); gpu==model: 1 when bitwise equal\n");
    printf("%-24s %-16s %-20s %-20s %-20s %-20s %-14s %-7s %s\n", "case", "C", "exact", "fp32_seq", "gpu", "model",
           "gpu-exact", "uniform", "gpu==model");
    int agree = 0;
    for (int i = 0; i < n; i++) {
        double ex = c[i];
        float seq = c[i];
        for (int k = 0; k < 32; k++) {
            const double p = (double)v[i].a[k] * v[i].b[k];
            ex += p;
            seq += (float)p;
        }
        const float mod = dl_qgmma_add(c[i], v[i].a, v[i].b, 1, 32);
        const int same = memcmp(&mod, &d[i], sizeof mod) == 0;
        agree += same;
        printf("%-24s %-16a %-20a %-20a %-20a %-20a %-14.6g %-7d %d\n", v[i].name, (double)c[i], ex, (double)seq,
               (double)d[i], (double)mod, (double)d[i] - ex, u[i], same);
        if (u[i] != 1) rc = 1;
    }
    printf("# gpu == model (bitwise) on %d of %d cases\n", agree, n);
    /* chains: the same wgmma issued 2 and 4 times on one accumulator, against the model applied as often */
    for (int chain = 2; chain <= 4 && !rc; chain *= 2) {
        if (dl_wgmma_acc_probe(n, chain, c, a, b, d, u)) {
            rc = dl_cli_error("probe");
            break;
        }
        int same = 0, first = -1;
        for (int i = 0; i < n; i++) {
            float mod = c[i];
            for (int r = 0; r < chain; r++) mod = dl_qgmma_add(mod, v[i].a, v[i].b, 1, 32);
            if (!memcmp(&mod, &d[i], sizeof mod)) same++;
            else if (first < 0) first = i;
            if (u[i] != 1) rc = 1;
        }
        printf("# chain of %d wgmmas: gpu == model applied %d times on %d of %d cases", chain, chain, same, n);
        if (first >= 0) {
            float mod = c[first];
            for (int r = 0; r < chain; r++) mod = dl_qgmma_add(mod, v[first].a, v[first].b, 1, 32);
            printf("; first difference: '%s' gpu %a model %a", v[first].name, (double)d[first], (double)mod);
        }
        printf("\n");
        for (int i = 0; i < n; i++) {
            float mod = c[i];
            for (int r = 0; r < chain; r++) mod = dl_qgmma_add(mod, v[i].a, v[i].b, 1, 32);
            if (memcmp(&mod, &d[i], sizeof mod))
                printf("#   chain %d differs: %-24s gpu %-20a model %a\n", chain, v[i].name, (double)d[i], (double)mod);
        }
    }
out:
    free(v), free(c), free(d), free(a), free(b), free(u);
    return rc;
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

enum { O_HELP = 'h', O_LIST = 256, O_RUN, O_WGMMA };

static const struct option probe_opts[] = {
    {"help", no_argument, 0, O_HELP},
    {"list", no_argument, 0, O_LIST},
    {"run", required_argument, 0, O_RUN},
    {"wgmma-acc", no_argument, 0, O_WGMMA},
    {0, 0, 0, 0},
};

/* --run NAME into *run, --wgmma-acc into *wgmma. 0 ok, 1 help printed, -1 error (recorded). */
static int parse_probe(int argc, char **argv, const char **run, int *wgmma)
{
    opterr = 0;
    optind = 0;
    for (int code; (code = getopt_long(argc, argv, ":h", probe_opts, NULL)) != -1;) {
        switch (code) {
        case O_HELP: probe_help(stdout); return 1;
        case O_LIST: break; /* the default */
        case O_WGMMA: *wgmma = 1; break;
        case O_RUN:
            if (strcmp(optarg, "all") && dl_probe_find(optarg) < 0)
                return dl_fail("--run: no probe named '%s' (see decodelab probe --list)", optarg);
            *run = optarg;
            break;
        default: return dl_cli_getopt_fail("probe", code, argv);
        }
    }
    if (optind < argc) return dl_fail("unexpected argument '%s' (see decodelab probe --help)", argv[optind]);
    return 0;
}

int dl_cmd_probe(int argc, char **argv)
{
    const char *run = NULL;
    int wgmma = 0;
    int rc = parse_probe(argc, argv, &run, &wgmma);
    if (rc == 1) return 0;
    if (rc) return dl_cli_error("probe");
    if (wgmma) return wgmma_acc();
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

/* main.c - the decodelab CLI: dispatches to one subcommand (harness/cmd_*.c). */
#include <stdio.h>
#include <string.h>

#include <hdf5.h>

#include "../ref/dl_common.h"
#include "dl_cli.h"
#include "dl_golden.h"
#include "dl_census.h"
#include "dl_experiment.h"

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} dl_subcommand;

static const dl_subcommand subcommands[] = {
    {"golden", dl_cmd_golden, "generate a golden dataset (inputs + reference outputs) as HDF5"},
    {"inspect", dl_cmd_inspect, "print a golden file's config, shapes and the errors between its models"},
    {"check", dl_cmd_check, "recompute the reference models from a golden file's inputs and compare"},
    {"run", dl_cmd_run, "run GPU decode variants on a golden file: check, time, record results"},
    {"list", dl_cmd_list, "print the variant registry (axes, golden model, thresholds)"},
    {"info", dl_cmd_info, "print the GPU and its measured peak read bandwidth"},
    {"compare", dl_cmd_compare, "score an external kernel's output (candidate file) against a golden file"},
    {"sass", dl_cmd_sass, "instruction census of the variants' kernels (cuobjdump -sass)"},
    {"ncu", dl_cmd_ncu, "Nsight Compute tensor-pipe counters per variant on a golden file (GPU)"},
    {"probe", dl_cmd_probe, "the E2 probe kernels: one instruction form each, for Nsight Compute (--list, --run)"},
    {"experiment", dl_cmd_experiment, "run an experiment file (experiments/E*.cfg): sweep, measure, verdicts, report"},
};
static const int num_subcommands = (int)(sizeof subcommands / sizeof subcommands[0]);

static void usage(FILE *f)
{
    fprintf(f, "usage: decodelab <command> [options]   (decodelab <command> --help for its options)\n\n"
               "decode attention over a paged KV cache: CPU reference, golden files, GPU variants.\n\n"
               "commands:\n");
    for (int i = 0; i < num_subcommands; i++) fprintf(f, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "\nexit status: 0 ok, 1 a check failed, 2 bad input or usage.\n");
}

int main(int argc, char **argv)
{
    /* No HDF5 clean-up at exit: every file is closed (or, after a failed write, unlinked) by the code
     * that opened it. A file whose flush failed (a full disk) stays in HDF5's table, and libhdf5 1.10's
     * exit handler crashed closing it again (status 139 after the clear error and the clean-up). */
    H5dont_atexit();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("%s\n", dl_generator_string());
        return 0;
    }
    for (int i = 0; i < num_subcommands; i++)
        if (!strcmp(argv[1], subcommands[i].name)) return subcommands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "decodelab: unknown command '%s' (try decodelab --help)\n", argv[1]);
    return 2;
}

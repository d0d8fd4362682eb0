/* cmd_list.c - `decodelab list`: the variant registry as a table. */
#include <stdio.h>
#include <string.h>

#include "../gpu/dl_registry.h"
#include "dl_cli.h"
#include "dl_compare.h"

int dl_cmd_list(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: decodelab list\n\nPrints the variant registry: name, axes (compute, dequant, unit), the golden\n"
                   "model each must match, its kernel file, its implementation limits (relative L2 of o over the whole\n"
                   "output / per (request, head), max abs error of lse: PASS at or under every one) and a summary.\n"
                   "The o limits are for sequences up to %d tokens; a longer case's grow by sqrt(length / %d)\n"
                   "(the drift of float sums in another order; harness/compare.c).\n", DL_ACC_LEN_REF, DL_ACC_LEN_REF);
            return 0;
        }
        dl_fail("unknown argument '%s' (see decodelab list --help)", argv[i]);
        return dl_cli_error("list");
    }
    printf("%-18s %-7s %-7s %-6s %-8s %-22s %-19s %-19s %s\n", "variant", "compute", "dequant", "unit", "model",
           "kernel file", "o relL2 limit/head", "lse abs limit", "summary");
    for (int i = 0; i < dl_num_variants; i++) {
        const dl_variant *v = &dl_variants[i];
        const dl_threshold *t = dl_threshold_impl(v->model);
        char thr_o[32] = "-", thr_l[32] = "-";
        if (t) {
            snprintf(thr_o, sizeof thr_o, "%.2g/%.2g", t->o_rel_l2, t->o_head_rel_l2);
            snprintf(thr_l, sizeof thr_l, "%.2g", t->lse_abs);
        }
        printf("%-18s %-7s %-7s %-6s %-8s %-22s %-19s %-19s %s%s\n", v->name, dl_compute_name(v->compute),
               dl_dequant_name(v->dequant), dl_unit_name(v->unit), dl_model_name(v->model), v->file ? v->file : "-",
               thr_o, thr_l, v->summary ? v->summary : "", v->launch ? "" : " [not built]");
    }
    return 0;
}


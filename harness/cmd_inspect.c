/* cmd_inspect.c - `decodelab inspect FILE`: a golden file's config, dataset
 * shapes, and the errors between its models, judged by the shared comparison
 * routine: storage (orig vs exact), arithmetic (fp32/bf16/fp8 vs exact), and
 * total (each model vs orig, no verdict). Exit 0, or 2 for a bad file. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "dl_cli.h"
#include "dl_compare.h"
#include "dl_golden.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: decodelab inspect FILE\n\n"
               "Print a golden file's config, dataset shapes and the errors between its models:\n"
               "  storage     orig vs exact  (the inputs rounded to q_dtype / kv_dtype)\n"
               "  arithmetic  fp32, bf16, fp8 vs exact  (the same stored inputs, computed in lower precision)\n"
               "  total       fp32, bf16, fp8, exact vs orig  (storage and arithmetic together)\n"
               "o: relative L2, max abs, max rel (floor %g x rms); lse: max abs error (natural log).\n"
               "Precision: within or above the expected band of each model (harness/compare.c); o head = the\n"
               "largest per-(request, head) rel L2.\n\n"
               "exit status: 0 printed, 2 bad input (one line naming the file, dataset and value).\n",
            DL_REL_FLOOR);
}

/* Parse "FILE [--help]"; returns 0 with *file set, 1 after --help, -1 on error. */
int dl_cli_one_file(const char *cmd, int argc, char **argv, const char **file, void (*help)(FILE *))
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    opterr = 0;
    optind = 0;
    for (;;) {
        int code = getopt_long(argc, argv, ":h", opts, NULL);
        if (code == -1) break;
        if (code == 'h') {
            help(stdout);
            return 1;
        }
        return dl_cli_getopt_fail(cmd, code, argv);
    }
    if (optind >= argc) return dl_fail("FILE: missing (usage: decodelab %s FILE)", cmd);
    if (optind + 1 < argc) return dl_fail("unexpected argument '%s' (usage: decodelab %s FILE)", argv[optind + 1], cmd);
    *file = argv[optind];
    return 0;
}

static void row(const char *kind, const dl_golden *g, dl_model m, dl_model ref, int verdict)
{
    const int64_t no = g->c.cfg.batch_size * g->c.cfg.num_qo_heads * g->c.cfg.head_dim;
    const int64_t nl = g->c.cfg.batch_size * g->c.cfg.num_qo_heads;
    dl_scores sc;
    dl_score_f64(g->out[m].o, g->out[m].lse, &g->out[ref], &sc);
    const dl_metrics mo = sc.o, ml = sc.lse;
    (void)no;
    (void)nl;
    char v[64] = "-";
    if (verdict) {
        const dl_threshold *t = dl_threshold_vs_exact(m, g->c.cfg.kv_dtype);
        snprintf(v, sizeof v, "%-14s (band: o <= %.2g, lse <= %.2g)", dl_band_name(dl_within_band(&sc, t)),
                 t->o_rel_l2, t->lse_abs);
    }
    printf("  %-10s  %-8s  %-5s  %10.3e  %10.3e  %10.3e  %10.3e  %11.3e  %s\n", kind, dl_model_name(m),
           dl_model_name(ref), mo.rel_l2, mo.head_rel_l2, mo.max_abs, mo.max_rel, ml.max_abs, v);
}

/* Print golden file g (read from file). */
static int inspect_file(const char *file, const dl_golden *g)
{
    const dl_config *c = &g->c.cfg;
    char name[512];
    dl_config_name(c, name, sizeof name);
    int64_t tokens = 0, lmin = INT64_MAX, lmax = 0;
    for (int64_t b = 0; b < c->batch_size; b++) {
        int64_t l = dl_case_seq_len(&g->c, b);
        tokens += l;
        if (l < lmin) lmin = l;
        if (l > lmax) lmax = l;
    }
    printf("file:      %s (%lld bytes)\n", file, (long long)dl_file_size(file));
    printf("generator: %s\n", g->generator);
    printf("case:      %s\n", name);
    printf("config:    batch_size=%lld num_qo_heads=%lld num_kv_heads=%lld (group %lld) head_dim=%lld page_size=%lld\n"
           "           kv_layout=%s q_dtype=%s kv_dtype=%s sm_scale=%.17g seed=%llu distribution=%s\n"
           "           seq lens %lld..%lld (%lld tokens), kv_scale_mode=%s\n",
           (long long)c->batch_size, (long long)c->num_qo_heads, (long long)c->num_kv_heads,
           (long long)dl_group_size(c), (long long)c->head_dim, (long long)c->page_size, dl_layout_name(c->kv_layout),
           dl_dtype_name(c->q_dtype), dl_dtype_name(c->kv_dtype), c->sm_scale, (unsigned long long)c->seed,
           dl_dist_name(c->dist.kind), (long long)lmin, (long long)lmax, (long long)tokens,
           dl_scale_mode_name(c->kv_scale_mode));
    if (c->share_prefix_pages > 0)
        printf("           share_prefix_pages=%lld: the first %lld pages of every request are request 0's (%lld "
               "physical pages for %d page-table entries)\n",
               (long long)c->share_prefix_pages, (long long)c->share_prefix_pages, (long long)g->c.num_pages,
               g->c.kv_indptr[c->batch_size]);
    if (c->dist.kind == DL_DIST_SINK)
        printf("sink:      the first %lld keys of each request score %g higher\n", (long long)c->dist.sink_tokens,
               c->dist.sink_delta);
    printf("params:    kv_block=%lld acc_mantissa_bits=%d acc_block=%lld acc_promote_blocks=%lld p_scale=%g "
           "kv_order=%s\n",
           (long long)g->params.kv_block, g->params.acc_mantissa_bits, (long long)g->params.acc_block,
           (long long)g->params.acc_promote_blocks, (double)g->params.p_scale, dl_kv_order_name(g->params.kv_order));
    const int nhd = c->kv_layout == DL_NHD;
    long long B = c->batch_size, Hq = c->num_qo_heads, Hkv = c->num_kv_heads, D = c->head_dim, P = g->c.num_pages;
    long long a1 = nhd ? c->page_size : Hkv, a2 = nhd ? Hkv : c->page_size;
    printf("datasets:\n");
    printf("  /inputs/q                 [%lld, %lld, %lld] %s\n", B, Hq, D, dl_dtype_name(c->q_dtype));
    if (g->c.q_orig) printf("  /inputs/q_orig            [%lld, %lld, %lld] f32\n", B, Hq, D);
    printf("  /inputs/k_cache, v_cache  [%lld, %lld, %lld, %lld] %s (%s)\n", P, a1, a2, D, dl_dtype_name(c->kv_dtype),
           dl_layout_name(c->kv_layout));
    if (g->c.k_orig) printf("  /inputs/k_orig, v_orig    [%lld, %lld, %lld, %lld] f32\n", P, a1, a2, D);
    printf("  /inputs/k_scale, v_scale  [%lld] f32\n", Hkv);
    printf("  /inputs/kv_indptr         [%lld] i32\n", B + 1);
    printf("  /inputs/kv_indices        [%d] i32\n", g->c.kv_indptr[B]);
    printf("  /inputs/kv_last_page_len  [%lld] i32\n", B);
    for (int m = 0; m < DL_MODEL_COUNT; m++)
        if (g->have[m])
        {
            printf("  /golden/%-8s o [%lld, %lld, %lld], lse [%lld, %lld] %s", dl_model_name((dl_model)m), B, Hq, D,
                   B, Hq, m == DL_MODEL_EXACT || m == DL_MODEL_ORIG ? "f64" : "f32");
            if (g->out[m].p_values > 0)
                printf("; P cast: %lld of %lld non-sink P values enter P*V as 0 (%.3g%%)", (long long)g->out[m].p_zeros,
                       (long long)g->out[m].p_values, 100.0 * (double)g->out[m].p_zeros / (double)g->out[m].p_values);
            if (isfinite(g->out[m].p_cast_nmse)) printf(", P-cast nmse %.3g", g->out[m].p_cast_nmse);
            printf("\n");
        }
    if (!g->have[DL_MODEL_EXACT]) {
        printf("errors:    no /golden/exact in this file: nothing to compare against\n");
        return 0;
    }
    printf("errors between the golden models:\n");
    printf("  %-10s  %-8s  %-5s  %10s  %10s  %10s  %10s  %11s  %s\n", "kind", "model", "vs", "o rel_l2", "o head",
           "o max_abs", "o max_rel", "lse max_abs", "precision (expected band)");
    if (g->have[DL_MODEL_ORIG]) row("storage", g, DL_MODEL_ORIG, DL_MODEL_EXACT, 1);
    for (int m = DL_MODEL_FP32; m < DL_MODEL_COUNT; m++)
        if (g->have[m]) row("arithmetic", g, (dl_model)m, DL_MODEL_EXACT, 1);
    if (g->have[DL_MODEL_ORIG]) {
        row("total", g, DL_MODEL_EXACT, DL_MODEL_ORIG, 0);
        for (int m = DL_MODEL_FP32; m < DL_MODEL_COUNT; m++)
            if (g->have[m]) row("total", g, (dl_model)m, DL_MODEL_ORIG, 0);
    }
    return 0;
}

int dl_cmd_inspect(int argc, char **argv)
{
    return dl_cli_golden_cmd("inspect", argc, argv, usage, inspect_file);
}

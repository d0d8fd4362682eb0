/* cmd_check.c - `decodelab check FILE`: a golden file verifies itself.
 * Every stored model is recomputed from the stored inputs with the stored
 * model parameters and compared with what the file holds:
 *  exact, orig (FP64): relative L2 of o and max abs error of lse <= 1e-12
 *    (the implementation table of harness/compare.c). Not bit-exact, because
 *    OpenBLAS picks its dgemm/dgemv kernel by CPU, and a different kernel sums
 *    in a different order (~1e-16 relative per operation).
 *  fp32, bf16, fp8 (FP32 values stored as float32): every element within
 *    1 float ulp. The models are plain C with a fixed order of operations, so
 *    on the machine that wrote the file they agree bit for bit; one ulp is
 *    allowed for another machine whose libm expf/logf rounds differently or a
 *    compiler that contracts a*b+c into an FMA. Anything more is a real
 *    difference (a changed model, corrupted data, different parameters).
 * Exit 0 when every model verifies, 1 when one does not, 2 for a bad file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "dl_cli.h"
#include "dl_compare.h"
#include "dl_golden.h"

#define CHECK_MAX_ULP 1

static void usage(FILE *f)
{
    fprintf(f, "usage: decodelab check FILE\n\n"
               "Recompute every model stored in a golden file from its stored inputs and parameters and\n"
               "compare: exact/orig (float64) to relative L2 and lse abs error <= 1e-12; fp32/bf16/fp8\n"
               "(float32) every element of o and lse within %d ulp (bit-identical on the writing machine).\n\n"
               "exit status: 0 every model verifies, 1 a model does not, 2 bad input (one line naming\n"
               "the file, dataset and value).\n",
            CHECK_MAX_ULP);
}

/* Float model: count bit-identical elements and the largest ulp distance. */
static void ulp_stats(const double *stored, const double *fresh, int64_t n, int64_t *same, int64_t *maxulp)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t d = dl_ulp_distance((float)stored[i], (float)fresh[i]);
        if (d == 0) (*same)++;
        if (d > *maxulp) *maxulp = d;
    }
}

/* Verify the models of golden file g (read from file). */
static int check_file(const char *file, const dl_golden *g)
{
    const dl_config *c = &g->c.cfg;
    const int64_t no = c->batch_size * c->num_qo_heads * c->head_dim, nl = c->batch_size * c->num_qo_heads;
    const int progress = isatty(2);
    char name[512];
    dl_config_name(c, name, sizeof name);
    printf("file: %s\ncase: %s\n", file, name);
    int w = 5; /* the model column: as wide as the longest name present */
    for (int m = 0; m < DL_MODEL_COUNT; m++)
        if (g->have[m] && (int)strlen(dl_model_name((dl_model)m)) > w) w = (int)strlen(dl_model_name((dl_model)m));
    printf("  %-*s  %10s  %10s  %-22s  %-22s  %8s  %s\n", w, "model", "elements", "identical", "o", "lse", "time",
           "result");
    int any = 0, failed = 0;
    for (int m = 0; m < DL_MODEL_COUNT; m++) {
        if (!g->have[m]) continue;
        any = 1;
        if (progress) fprintf(stderr, "recomputing %s ...\n", dl_model_name((dl_model)m));
        dl_output fresh;
        double t0 = dl_now();
        if (dl_reference(&g->c, (dl_model)m, &g->params, &fresh)) return dl_cli_error("check");
        double t = dl_now() - t0;
        const dl_output *st = &g->out[m];
        int64_t same = 0, maxulp_o = 0, maxulp_l = 0;
        for (int64_t i = 0; i < no; i++) same += memcmp(&st->o[i], &fresh.o[i], sizeof(double)) == 0;
        for (int64_t i = 0; i < nl; i++) same += memcmp(&st->lse[i], &fresh.lse[i], sizeof(double)) == 0;
        char so[32], sl[32];
        int ok;
        if (m == DL_MODEL_EXACT || m == DL_MODEL_ORIG) {
            dl_scores sc;
            dl_score_f64(st->o, st->lse, &fresh, &sc);
            ok = dl_judge_impl(&sc, dl_threshold_impl((dl_model)m), 0.0) == DL_PASS;
            snprintf(so, sizeof so, "rel_l2 %.2e", sc.o.rel_l2);
            snprintf(sl, sizeof sl, "max_abs %.2e", sc.lse.max_abs);
        } else {
            int64_t s2 = 0;
            same = 0;
            ulp_stats(st->o, fresh.o, no, &same, &maxulp_o);
            ulp_stats(st->lse, fresh.lse, nl, &s2, &maxulp_l);
            same += s2;
            ok = maxulp_o <= CHECK_MAX_ULP && maxulp_l <= CHECK_MAX_ULP;
            snprintf(so, sizeof so, "max %lld ulp", (long long)maxulp_o);
            snprintf(sl, sizeof sl, "max %lld ulp", (long long)maxulp_l);
            /* the stored P-cast counts (issue 13): the same P values, and the same zeros up to the few
             * that an ulp of expf on another machine may move across the rounding boundary */
            if (st->p_values >= 0) {
                const int64_t tol = fresh.p_values / 1000 > 2 ? fresh.p_values / 1000 : 2;
                const int64_t dz = st->p_zeros - fresh.p_zeros;
                if (st->p_values != fresh.p_values || dz > tol || -dz > tol) {
                    printf("  %-*s  P-cast counts: stored %lld zeros of %lld P values, recomputed %lld of %lld\n",
                           w, dl_model_name((dl_model)m), (long long)st->p_zeros, (long long)st->p_values,
                           (long long)fresh.p_zeros, (long long)fresh.p_values);
                    ok = 0;
                }
            }
        }
        printf("  %-*s  %10lld  %10lld  %-22s  %-22s  %7.2fs  %s\n", w, dl_model_name((dl_model)m),
               (long long)(no + nl), (long long)same, so, sl, t, ok ? "VERIFIED" : "DOES NOT VERIFY");
        failed |= !ok;
        dl_output_free(&fresh);
    }
    if (!any) {
        printf("no /golden/<model> in %s: nothing to verify\n", file);
        return 1;
    }
    printf("%s\n", failed ? "FAILED: a stored model does not match its recomputation" : "all models verify");
    return failed ? 1 : 0;
}

int dl_cmd_check(int argc, char **argv)
{
    return dl_cli_golden_cmd("check", argc, argv, usage, check_file);
}

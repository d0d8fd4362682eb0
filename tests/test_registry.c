/* test_registry.c - Check suite for the variant registry (gpu/registry.c) as `run`
 * uses it (harness/run_util.c): selection of variants by name and glob lists (registry
 * order, union without duplicates, a pattern that matches nothing refused); the model
 * parameters the tensor-core kernels have built in (another value: SKIP naming the
 * parameter; no kernel runs a reverse golden); the split count each variant launches
 * with. No GPU is needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu/dl_registry.h"
#include "../harness/dl_run.h"
#include "dl_test.h"

static int count_prefix(const char *prefix)
{
    int n = 0;
    for (int i = 0; i < dl_num_variants; i++) n += !strncmp(dl_variants[i].name, prefix, strlen(prefix));
    return n;
}

static int count_suffix(const char *suffix)
{
    int n = 0;
    for (int i = 0; i < dl_num_variants; i++) {
        size_t a = strlen(dl_variants[i].name), b = strlen(suffix);
        n += a >= b && !strcmp(dl_variants[i].name + a - b, suffix);
    }
    return n;
}

START_TEST(test_variant_selection)
{
    ck_assert_int_gt(dl_num_variants, 0);
    const dl_variant **sel = calloc((size_t)dl_num_variants, sizeof *sel);
    int n = -1;
    ck_assert_int_eq(dl_run_select(NULL, sel, &n), 0);
    ck_assert_int_eq(n, dl_num_variants);
    for (int i = 0; i < n; i++) ck_assert_ptr_eq(sel[i], &dl_variants[i]); /* registry order */
    ck_assert_int_eq(dl_run_select("*", sel, &n), 0);
    ck_assert_int_eq(n, dl_num_variants);

    int nfp32 = count_prefix("fp32-");
    if (nfp32 > 0) {
        ck_assert_int_eq(dl_run_select("fp32-*", sel, &n), 0);
        ck_assert_int_eq(n, nfp32);
        for (int i = 0; i < n; i++) ck_assert(!strncmp(sel[i]->name, "fp32-", 5));
    }
    /* one exact name plus a suffix glob: the union, no duplicates */
    const char *first = dl_variants[0].name;
    int nmma = count_suffix("-mma");
    int first_is_mma = strlen(first) > 4 && !strcmp(first + strlen(first) - 4, "-mma");
    char globs[128];
    snprintf(globs, sizeof globs, "*-mma,%s", first);
    if (nmma > 0) {
        ck_assert_int_eq(dl_run_select(globs, sel, &n), 0);
        ck_assert_int_eq(n, nmma + !first_is_mma);
        ck_assert_ptr_eq(sel[0], &dl_variants[0]);
    }
    ck_assert_int_eq(dl_run_select(first, sel, &n), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(sel[0]->name, first);
    /* a pattern that matches nothing is an error, also inside a list */
    ck_assert_int_ne(dl_run_select("no-such-variant*", sel, &n), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "no-such-variant*"));
    snprintf(globs, sizeof globs, "%s,nope", first);
    ck_assert_int_ne(dl_run_select(globs, sel, &n), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "nope"));
    free(sel);
}
END_TEST

/* The tensor-core kernels have their model parameters built in (64-token tile = kv_block,
 * P as e4m3(p*448), fp8acc promotion every 2 blocks): a golden file made with other values
 * must make them SKIP with the parameter named, never run and FAIL; the accumulator width
 * stays free (the FP8 accumulator experiment varies it on purpose). */
START_TEST(test_variant_params)
{
    dl_model_params p;
    char why[256];
    const char *tiled[] = {"bf16-cast-mma", "bf16-fast-mma", "fp8-none-mma", "fp8acc-none-mma"};
    for (int i = 0; i < 4; i++) {
        const dl_variant *v = dl_variant_find(tiled[i]);
        ck_assert_ptr_nonnull(v);
        ck_assert_ptr_nonnull(v->params_ok);
        dl_model_params_default(&p);
        ck_assert_int_eq(v->params_ok(v, &p, why, sizeof why), 1);
        p.acc_mantissa_bits = 13;
        p.acc_block = 16;
        ck_assert_int_eq(v->params_ok(v, &p, why, sizeof why), 1);
        p.kv_block = 32;
        ck_assert_int_eq(v->params_ok(v, &p, why, sizeof why), 0);
        ck_assert_msg(strstr(why, "kv_block = 32") != NULL, "%s: %s", tiled[i], why);
    }
    const dl_variant *f8 = dl_variant_find("fp8-none-mma"), *f8a = dl_variant_find("fp8acc-none-mma");
    /* the static P scale is a kernel argument (dl_gpu_args.p_scale, E8's S): any value runs */
    dl_model_params_default(&p);
    p.p_scale = 1.0f;
    ck_assert_int_eq(f8->params_ok(f8, &p, why, sizeof why), 1);
    p.p_scale = 256.0f;
    ck_assert_int_eq(f8a->params_ok(f8a, &p, why, sizeof why), 1);
    dl_model_params_default(&p);
    p.acc_promote_blocks = 4;
    ck_assert_int_eq(f8->params_ok(f8, &p, why, sizeof why), 1); /* fp8 has no promotion */
    ck_assert_int_eq(f8a->params_ok(f8a, &p, why, sizeof why), 0);
    ck_assert_msg(strstr(why, "acc_promote_blocks = 4") != NULL, "%s", why);
    /* the wgmma fp8acc kernel is built for promotion every 1, 2 or 4 k32 blocks; its fp8 twin ignores it */
    const dl_variant *w8 = dl_variant_find("fp8-none-wgmma"), *w8a = dl_variant_find("fp8acc-none-wgmma");
    ck_assert(w8 && w8a);
    for (int pb = 1; pb <= 5; pb++) {
        dl_model_params_default(&p);
        p.acc_promote_blocks = pb;
        ck_assert_int_eq(w8->params_ok(w8, &p, why, sizeof why), 1);
        const int want = pb == 1 || pb == 2 || pb == 4;
        ck_assert_msg(w8a->params_ok(w8a, &p, why, sizeof why) == want, "acc_promote_blocks %d: %s", pb, why);
        if (!want) ck_assert_msg(strstr(why, "acc_promote_blocks = ") != NULL, "%s", why);
    }
    p.kv_block = 32;
    ck_assert_int_eq(w8a->params_ok(w8a, &p, why, sizeof why), 0);
    /* the CUDA-core kernels take any parameters */
    ck_assert_ptr_null(dl_variant_find("fp32-cast-simt")->params_ok);
    ck_assert_ptr_null(dl_variant_find("bf16-fast-simt")->params_ok);
    /* ... but no kernel iterates in reverse: every variant SKIPs a reverse golden, naming kv_order */
    for (int v = 0; v < dl_num_variants; v++) {
        dl_model_params_default(&p);
        p.kv_order = DL_KV_REVERSE;
        why[0] = 0;
        ck_assert_int_eq(dl_run_params_ok(&dl_variants[v], &p, why, sizeof why), 0);
        ck_assert_msg(strstr(why, "kv_order = reverse") != NULL, "%s: %s", dl_variants[v].name, why);
    }
    dl_model_params_default(&p);
    ck_assert_int_eq(dl_run_params_ok(dl_variant_find("fp32-cast-simt"), &p, why, sizeof why), 1);
    p.p_scale = 256.0f; /* a kernel argument now (E8): the FP8 kernels run */
    ck_assert_int_eq(dl_run_params_ok(f8, &p, why, sizeof why), 1);
    p.kv_block = 32; /* ... while the 64-token tile is still built in */
    ck_assert_int_eq(dl_run_params_ok(f8, &p, why, sizeof why), 0);
}
END_TEST

/* The split count a variant launches with: the resolved count, or 1 for the FP8 kernels (never
 * split) and the planned streaming family, stream and wgmma units (it schedules itself); --resume
 * matches on it. The rule reads the unit, not the plan pointer, which is NULL in a build without CUDA. */
START_TEST(test_variant_splits)
{
    ck_assert_int_eq(dl_variant_splits(dl_variant_find("bf16-fast-mma"), 4), 4);
    ck_assert_int_eq(dl_variant_splits(dl_variant_find("fp32-cast-simt"), 3), 3);
    ck_assert_int_eq(dl_variant_splits(dl_variant_find("fp8-none-mma"), 4), 1);
    ck_assert_int_eq(dl_variant_splits(dl_variant_find("bf16-hw-stream"), 4), 1);
    ck_assert_int_eq(dl_variant_splits(dl_variant_find("bf16-fast-mma"), 0), 1);
    for (int i = 0; i < dl_num_variants; i++)
        ck_assert_int_eq(dl_variants[i].splits, !(dl_variants[i].compute == DL_COMPUTE_FP8 ||
                                                  dl_variants[i].unit == DL_UNIT_WGMMA ||
                                                  dl_variants[i].unit == DL_UNIT_STREAM));
}
END_TEST

DL_TEST_SUITE("registry", 60, NULL, NULL, test_variant_selection, test_variant_params, test_variant_splits)

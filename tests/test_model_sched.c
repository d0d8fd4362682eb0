/* test_model_sched.c - Check suite for the model of a schedule (harness/model_sched.c):
 * the stored output for a trivial schedule, else dl_reference_sched's output, computed
 * once per (inputs, model, params, schedule) and served from memory to the next variant
 * with the same schedule; a missing model or an invalid schedule refused; at length 32768
 * the split model judged against the stored one with the limits for that length. */
#include <stdio.h>
#include <string.h>

#include "../harness/dl_compare.h"
#include "../harness/dl_golden.h"
#include "../harness/dl_model_sched.h"
#include "dl_test.h"

/* The model for a schedule: the stored output for a trivial schedule, else
 * dl_reference_sched computed once per (inputs, model, params, schedule) and
 * served from memory to the next variant with the same schedule. */
START_TEST(test_model_for_schedule)
{
    dl_golden g;
    memset(&g, 0, sizeof g);
    const int64_t lens[3] = {5, 200, 700};
    dl_config cfg;
    dl_test_shape(&cfg, 3, 4, 2, 32, 16);
    dl_test_lens(&cfg, lens);
    cfg.kv_dtype = DL_E4M3;
    ck_assert_int_eq(dl_case_build(&cfg, &g.c), 0);
    dl_model_params_default(&g.params);
    ck_assert_int_eq(dl_reference(&g.c, DL_MODEL_BF16, &g.params, &g.out[DL_MODEL_BF16]), 0);
    g.have[DL_MODEL_BF16] = 1;
    const dl_output *o = NULL, *o2 = NULL;
    const int64_t n0 = dl_model_sched_computed();
    /* trivial: the stored output itself */
    ck_assert_int_eq(dl_model_for_schedule(&g, DL_MODEL_BF16, NULL, &o), 0);
    ck_assert_ptr_eq(o, &g.out[DL_MODEL_BF16]);
    dl_schedule s4, s2;
    ck_assert_int_eq(dl_schedule_split_kv(&g.c, 4, DL_MMA_SPLIT_TILE, &s4, NULL), 0);
    ck_assert_int_eq(dl_schedule_split_kv(&g.c, 2, DL_MMA_SPLIT_TILE, &s2, NULL), 0);
    ck_assert(dl_schedule_hash(&s4) != dl_schedule_hash(&s2));
    ck_assert_int_eq(dl_model_for_schedule(&g, DL_MODEL_BF16, &s4, &o), 0);
    ck_assert_int_eq(dl_model_sched_computed(), n0 + 1);
    ck_assert(o != &g.out[DL_MODEL_BF16]);
    /* the same schedule again (another variant): no recomputation, the same output */
    ck_assert_int_eq(dl_model_for_schedule(&g, DL_MODEL_BF16, &s4, &o2), 0);
    ck_assert_ptr_eq(o, o2);
    ck_assert_int_eq(dl_model_sched_computed(), n0 + 1);
    /* it is dl_reference_sched's output */
    dl_output want;
    ck_assert_int_eq(dl_reference_sched(&g.c, DL_MODEL_BF16, &g.params, &s4, &want), 0);
    ck_assert(memcmp(want.o, o->o, (size_t)(3 * 4 * 32) * sizeof(double)) == 0);
    ck_assert(memcmp(want.lse, o->lse, (size_t)(3 * 4) * sizeof(double)) == 0);
    dl_output_free(&want);
    /* another schedule, another model (the file lacks fp8: computed all the same), other params */
    ck_assert_int_eq(dl_model_for_schedule(&g, DL_MODEL_BF16, &s2, &o2), 0);
    ck_assert_int_eq(dl_model_sched_computed(), n0 + 2);
    ck_assert_int_eq(dl_model_for_schedule(&g, DL_MODEL_FP8, &s4, &o2), 0);
    ck_assert_int_eq(dl_model_sched_computed(), n0 + 3);
    g.params.kv_block = 32;
    ck_assert_int_eq(dl_model_for_schedule(&g, DL_MODEL_BF16, &s4, &o2), 0);
    ck_assert_int_eq(dl_model_sched_computed(), n0 + 4);
    /* a trivial schedule of a model the file lacks is an error naming it */
    ck_assert_int_ne(dl_model_for_schedule(&g, DL_MODEL_FP8, NULL, &o2), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "/golden/fp8"));
    /* an invalid schedule is refused */
    int64_t bad_indptr[7] = {0, 1, 2, 3, 4, 5, 6}, bad_begin[6] = {0, 0, 0, 0, 0, 3};
    dl_schedule bad = {6, bad_indptr, bad_begin};
    ck_assert_int_ne(dl_model_for_schedule(&g, DL_MODEL_BF16, &bad, &o2), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "task 5"));
    dl_model_sched_clear();
    dl_schedule_free(&s4);
    dl_schedule_free(&s2);
    dl_output_free(&g.out[DL_MODEL_BF16]);
    dl_case_free(&g.c);
}
END_TEST

/* Long sequences: the same model computed on a split schedule (another correct summation order, as a
 * split kernel's) sits about 0.3 u sqrt(L) from the stored sequential one. At length 32768 that is over
 * the table's bf16simt o limit (measured on lengths up to 1000): the H200's split CUDA-core kernels
 * FAILed so on 2026-12-03 (3.2e-6 / 3.3e-6 against 2.445e-6). The limits for the case's length
 * (dl_threshold_impl_len) pass it, and still fail the same model with one token of the 32768 dropped. */
START_TEST(test_long_sequence_orders)
{
    const int64_t L = 32768;
    dl_golden g;
    memset(&g, 0, sizeof g);
    dl_config cfg;
    dl_test_shape(&cfg, 1, 32, 8, 128, 16); /* llama3-8B's heads */
    dl_test_lens(&cfg, &L);
    cfg.kv_dtype = DL_E4M3;
    cfg.kv_scale_mode = DL_SCALE_GIVEN; /* the same scale with one token fewer */
    cfg.kv_scale_value = 1.0 / 64;
    dl_test_build(&cfg, &g.c);
    dl_model_params_default(&g.params);
    const dl_model models[2] = {DL_MODEL_BF16SIMT, DL_MODEL_FP32};
    for (int i = 0; i < 2; i++) {
        const dl_model m = models[i];
        ck_assert_int_eq(dl_reference(&g.c, m, &g.params, &g.out[m]), 0);
        g.have[m] = 1;
        dl_schedule s;
        int64_t chunk = 0;
        ck_assert_int_eq(dl_schedule_split_kv(&g.c, 33, DL_MMA_SPLIT_TILE, &s, &chunk), 0);
        ck_assert_int_eq(chunk, 1024);
        const dl_output *split = NULL;
        ck_assert_int_eq(dl_model_for_schedule(&g, m, &s, &split), 0);
        dl_scores sc;
        dl_score_f64(split->o, split->lse, &g.out[m], &sc);
        dl_threshold lim;
        ck_assert_int_eq(dl_threshold_impl_len(m, L, &lim), 0);
        ck_assert_msg(dl_judge_impl(&sc, &lim, 0.0) == DL_PASS, "%s split vs stored at %lld: o %.3e limit %.3e",
                      dl_model_name(m), (long long)L, sc.o.rel_l2, lim.o_rel_l2);
        /* the drift is real (not a zero difference passing anything): of the table limit's size, and for
         * bf16simt over it */
        ck_assert(sc.o.rel_l2 > 0.4 * dl_threshold_impl(m)->o_rel_l2);
        if (m == DL_MODEL_BF16SIMT)
            ck_assert_msg(dl_judge_impl(&sc, dl_threshold_impl(m), 0.0) == DL_FAIL, "o %.3e", sc.o.rel_l2);
        dl_schedule_free(&s);
        /* one token dropped: the last (the same values up to it: counters by logical position) */
        dl_case c2;
        dl_config cfg2 = cfg;
        const int64_t L2 = L - 1;
        dl_test_lens(&cfg2, &L2);
        dl_test_build(&cfg2, &c2);
        dl_output short_out;
        ck_assert_int_eq(dl_reference(&c2, m, &g.params, &short_out), 0);
        dl_score_f64(short_out.o, short_out.lse, &g.out[m], &sc);
        ck_assert_msg(dl_judge_impl(&sc, &lim, 0.0) == DL_FAIL, "%s one token dropped passed: o %.3e limit %.3e",
                      dl_model_name(m), sc.o.rel_l2, lim.o_rel_l2);
        ck_assert(sc.o.rel_l2 > 10 * lim.o_rel_l2);
        dl_output_free(&short_out);
        dl_case_free(&c2);
    }
    dl_model_sched_clear();
    for (int i = 0; i < 2; i++) dl_output_free(&g.out[models[i]]);
    dl_case_free(&g.c);
}
END_TEST

DL_TEST_SUITE("model_sched", 60, NULL, NULL, test_model_for_schedule, test_long_sequence_orders)

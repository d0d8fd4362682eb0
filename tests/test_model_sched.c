/* test_model_sched.c - Check suite for the model of a schedule (harness/model_sched.c):
 * the stored output for a trivial schedule, else dl_reference_sched's output, computed
 * once per (inputs, model, params, schedule) and served from memory to the next variant
 * with the same schedule; a missing model or an invalid schedule refused. */
#include <stdio.h>
#include <string.h>

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

DL_TEST_SUITE("model_sched", 60, NULL, NULL, test_model_for_schedule)

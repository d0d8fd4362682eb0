/* test_planted.c - planted bugs must FAIL (issue 11): a candidate is a model's
 * output plus the effect of one kernel bug, scored by the one comparison
 * routine (dl_candidate_score, what `decodelab compare` runs; a few also through
 * the binary on written candidate files) against golden files made by
 * `decodelab golden`. Every bug, every emulated model, with and without lse,
 * must FAIL; the unperturbed models and a bf16-rounded correct output declared
 * as bf16 must PASS. The effect of a bug is computed, not guessed: the model
 * is run on the case as the buggy kernel sees it (a token or page removed, a
 * page read from its neighbour, a wrong KV head, a scale off), and the
 * affected (request, head) rows are taken from that output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/dl_candidate.h"
#include "../harness/dl_compare.h"
#include "../harness/dl_golden.h"
#include "../harness/dl_results.h"
#include "../harness/dl_run.h"
#include "../ref/dl_formats.h"
#include "dl_test.h"

static char gold16[300], gold1[300], cand[300];
static dl_golden G16, G1;

static const dl_model models[] = {DL_MODEL_FP32, DL_MODEL_BF16, DL_MODEL_FP8, DL_MODEL_FP8ACC, DL_MODEL_BF16SIMT};
#define NMODELS ((int)(sizeof models / sizeof models[0]))

/* ---- a case as a buggy kernel sees it: its own copy of the page table, scales and q ---- */
typedef struct {
    dl_case c;
    int32_t *indptr, *indices, *last;
    float *ks, *vs;
    void *q;
} mod_case;

/* A malloc'd copy of the n bytes at src (the test fails if there is no memory). */
static void *copy_of(const void *src, size_t n)
{
    void *p = malloc(n);
    ck_assert_ptr_nonnull(p);
    memcpy(p, src, n);
    return p;
}

static void mod_init(mod_case *m, const dl_case *src)
{
    const dl_config *g = &src->cfg;
    const int64_t B = g->batch_size, nnz = src->kv_indptr[B];
    const size_t qb = (size_t)(B * g->num_qo_heads * g->head_dim) * dl_dtype_size(g->q_dtype);
    m->c = *src;
    m->c.kv_indptr = m->indptr = copy_of(src->kv_indptr, (size_t)(B + 1) * 4);
    m->c.kv_indices = m->indices = copy_of(src->kv_indices, (size_t)nnz * 4);
    m->c.kv_last_page_len = m->last = copy_of(src->kv_last_page_len, (size_t)B * 4);
    m->c.k_scale = m->ks = copy_of(src->k_scale, (size_t)g->num_kv_heads * 4);
    m->c.v_scale = m->vs = copy_of(src->v_scale, (size_t)g->num_kv_heads * 4);
    m->c.q = m->q = copy_of(src->q, qb);
}

static void mod_free(mod_case *m)
{
    free(m->indptr);
    free(m->indices);
    free(m->last);
    free(m->ks);
    free(m->vs);
    free(m->q);
}

/* Remove page slot k (an index into kv_indices) of request b from the page table. */
static void drop_page_slot(mod_case *m, int64_t b, int64_t k)
{
    const int64_t B = m->c.cfg.batch_size, nnz = m->indptr[B];
    memmove(&m->indices[k], &m->indices[k + 1], (size_t)(nnz - k - 1) * 4);
    for (int64_t i = b + 1; i <= B; i++) m->indptr[i]--;
}

/* ---- candidates ---- */

static void cand_init(dl_candidate *c, const dl_golden *g, dl_model m, const char *what)
{
    dl_candidate_init(c);
    snprintf(c->producer, sizeof c->producer, "planted");
    snprintf(c->backend, sizeof c->backend, "%s", dl_model_name(m));
    snprintf(c->settings, sizeof c->settings, "%s", what);
    dl_run_hash_string(dl_run_inputs_hash(&g->c), c->golden_hash, sizeof c->golden_hash);
    snprintf(c->model, sizeof c->model, "%s", dl_model_name(m));
    const dl_config *cfg = &g->c.cfg;
    c->batch_size = cfg->batch_size;
    c->num_qo_heads = cfg->num_qo_heads;
    c->head_dim = cfg->head_dim;
    c->o_dtype = DL_F32;
    const int64_t nl = cfg->batch_size * cfg->num_qo_heads, no = nl * cfg->head_dim;
    c->o = malloc((size_t)no * sizeof(float));
    c->lse = malloc((size_t)nl * sizeof(float));
    ck_assert(c->o && c->lse);
    for (int64_t i = 0; i < no; i++) c->o[i] = (float)g->out[m].o[i];
    for (int64_t i = 0; i < nl; i++) c->lse[i] = (float)g->out[m].lse[i];
}

/* Rows (b, h) of the candidate from another output (the model on the buggy case). */
static void take_row(dl_candidate *c, const dl_output *from, int64_t b, int64_t h, int64_t from_h)
{
    const int64_t Hq = c->num_qo_heads, D = c->head_dim;
    for (int64_t d = 0; d < D; d++) c->o[(b * Hq + h) * D + d] = (float)from->o[(b * Hq + from_h) * D + d];
    c->lse[b * Hq + h] = (float)from->lse[b * Hq + from_h];
}

static void take_request(dl_candidate *c, const dl_output *from, int64_t b)
{
    for (int64_t h = 0; h < c->num_qo_heads; h++) take_row(c, from, b, h, h);
}

/* Score c (with lse, then without) and require the verdict; prints the deciding figures. */
static void expect(const dl_golden *g, const char *gpath, dl_candidate *c, const char *want, const char *what)
{
    for (int with_lse = 1; with_lse >= 0; with_lse--) {
        float *keep = c->lse;
        if (!with_lse) c->lse = NULL;
        dl_result_row r;
        dl_result_row_init(&r);
        int rc = dl_candidate_score(g, gpath, c, "planted", NULL, &r);
        c->lse = keep;
        ck_assert_msg(rc == 0, "%s: %s", what, dl_last_error());
        printf("  %-8s %-34s %-8s o %.2e head %.2e (limit %.2e) lse %.2e (limit %.2e) -> %s\n", c->model, what,
               with_lse ? "with lse" : "o alone", r.model_o.rel_l2, r.model_o.head_rel_l2, r.limit_o_head_rel_l2,
               with_lse ? r.model_lse.max_abs : NAN, r.limit_lse_abs, r.verdict);
        ck_assert_msg(!strcmp(r.verdict, want), "%s, model %s, %s: verdict %s, expected %s (o %g head %g lse %g)", what,
                      c->model, with_lse ? "with lse" : "without lse", r.verdict, want, r.model_o.rel_l2,
                      r.model_o.head_rel_l2, r.model_lse.max_abs);
    }
}

static void model_on(const mod_case *mc, const dl_golden *g, dl_model m, dl_output *out)
{
    ck_assert_msg(dl_reference(&mc->c, m, &g->params, out) == 0, "%s", dl_last_error());
}

/* The buggy kernel's output: model m on the modified case mc. Its request b (h < 0), or its query head
 * from_h as query head h of request b, replaces g's model-m output in a candidate, which must FAIL.
 * Frees mc. */
static void expect_planted_fails(mod_case *mc, const dl_golden *g, const char *gpath, dl_model m, int64_t b, int64_t h,
                                 int64_t from_h, const char *what)
{
    dl_output o;
    model_on(mc, g, m, &o);
    dl_candidate c;
    cand_init(&c, g, m, what);
    if (h < 0) take_request(&c, &o, b);
    else take_row(&c, &o, b, h, from_h);
    expect(g, gpath, &c, "FAIL", what);
    dl_candidate_free(&c);
    dl_output_free(&o);
    mod_free(mc);
}

static void setup(void)
{
    dl_test_mkdir("planted");
    dl_test_path(gold16, sizeof gold16, "g16.h5");
    dl_test_path(gold1, sizeof gold1, "g1.h5");
    dl_test_path(cand, sizeof cand, "cand.h5");
    int rc = DL_RUN("golden", "--num-qo-heads", "8", "--num-kv-heads", "2", "--head-dim", "64", "--page-size", "16",
                 "--seq-len", "1,17,200,515", "--kv-dtype", "e4m3", "--models", "exact,fp32,bf16,fp8,fp8acc,bf16simt",
                 "--seed", "21", "--out", gold16);
    ck_assert_msg(rc == 0, "golden failed (%d): %s", rc, dl_test_err);
    rc = DL_RUN("golden", "--num-qo-heads", "4", "--num-kv-heads", "2", "--head-dim", "64", "--page-size", "1",
             "--kv-layout", "HND", "--seq-len", "2,33,300", "--kv-dtype", "e5m2", "--models",
             "exact,fp32,bf16,fp8,fp8acc,bf16simt", "--seed", "22", "--out", gold1);
    ck_assert_msg(rc == 0, "golden failed (%d): %s", rc, dl_test_err);
    memset(&G16, 0, sizeof G16);
    memset(&G1, 0, sizeof G1);
    ck_assert_msg(dl_golden_read(gold16, &G16) == 0, "%s", dl_last_error());
    ck_assert_msg(dl_golden_read(gold1, &G1) == 0, "%s", dl_last_error());
}

static void teardown(void)
{
    dl_golden_free(&G16);
    dl_golden_free(&G1);
    dl_test_rmdir();
}

/* ---------------------------------------------------------------- the planted bugs */

/* The unperturbed models PASS; so does a bf16-rounded output of a correct
 * kernel declared as bf16 (o limits widened by the bf16 unit roundoff). */
START_TEST(clean_passes)
{
    for (int i = 0; i < NMODELS; i++) {
        dl_candidate c;
        cand_init(&c, &G16, models[i], "unperturbed");
        expect(&G16, gold16, &c, "PASS", "unperturbed");
        for (int64_t k = 0; k < c.batch_size * c.num_qo_heads * c.head_dim; k++)
            c.o[k] = dl_bf16_to_f32(dl_f32_to_bf16(c.o[k], DL_NOSAT));
        c.o_dtype = DL_BF16;
        expect(&G16, gold16, &c, "PASS", "bf16-rounded output, declared bf16");
        /* the same values declared f32: the rounding is not allowed for */
        c.o_dtype = DL_F32;
        if (models[i] != DL_MODEL_BF16) expect(&G16, gold16, &c, "FAIL", "bf16-rounded output, declared f32");
        dl_candidate_free(&c);
    }
}
END_TEST

/* One query head, or one whole request, scaled by 1.01 (and 1.05). */
START_TEST(scaled_head_and_request)
{
    for (int i = 0; i < NMODELS; i++) {
        const double f[2] = {1.01, 1.05};
        for (int k = 0; k < 2; k++) {
            dl_candidate c;
            char what[64];
            cand_init(&c, &G16, models[i], "head x f");
            const int64_t b = 2, h = 5, D = c.head_dim, Hq = c.num_qo_heads;
            for (int64_t d = 0; d < D; d++) c.o[(b * Hq + h) * D + d] *= (float)f[k];
            snprintf(what, sizeof what, "query head (2, 5) x %.2f", f[k]);
            expect(&G16, gold16, &c, "FAIL", what);
            dl_candidate_free(&c);
            cand_init(&c, &G16, models[i], "request x f");
            for (int64_t x = b * Hq * D; x < (b + 1) * Hq * D; x++) c.o[x] *= (float)f[k];
            snprintf(what, sizeof what, "request 2 x %.2f", f[k]);
            expect(&G16, gold16, &c, "FAIL", what);
            dl_candidate_free(&c);
        }
        /* one KV head's V x 1.01: every query head of its group */
        dl_candidate c;
        cand_init(&c, &G16, models[i], "V of KV head 1 x 1.01");
        mod_case mc;
        mod_init(&mc, &G16.c);
        mc.vs[1] *= 1.01f;
        dl_output o;
        model_on(&mc, &G16, models[i], &o);
        for (int64_t h = 4; h < 8; h++) take_row(&c, &o, 3, h, h);
        expect(&G16, gold16, &c, "FAIL", "request 3: V of KV head 1 x 1.01");
        dl_output_free(&o);
        mod_free(&mc);
        dl_candidate_free(&c);
    }
}
END_TEST

/* The first or the last token of one request dropped (page size 1: any token is a page). */
START_TEST(token_dropped)
{
    for (int i = 0; i < NMODELS; i++) {
        for (int first = 0; first < 2; first++) {
            for (int64_t b = 1; b < 3; b++) {
                mod_case mc;
                mod_init(&mc, &G1.c);
                drop_page_slot(&mc, b, first ? mc.indptr[b] : mc.indptr[b + 1] - 1);
                char what[64];
                snprintf(what, sizeof what, "request %lld: %s token dropped", (long long)b, first ? "first" : "last");
                expect_planted_fails(&mc, &G1, gold1, models[i], b, -1, -1, what);
            }
        }
        /* the last token of a page-16 request (last_page_len - 1) */
        mod_case mc;
        mod_init(&mc, &G16.c);
        ck_assert(mc.last[3] > 1);
        mc.last[3]--;
        expect_planted_fails(&mc, &G16, gold16, models[i], 3, -1, -1, "request 3 (page 16): last token dropped");
    }
}
END_TEST

/* One page missing, or read from its neighbour (page size 16, a request of 515 tokens). */
START_TEST(page_missing_or_neighbour)
{
    for (int i = 0; i < NMODELS; i++) {
        for (int kind = 0; kind < 3; kind++) {
            mod_case mc;
            mod_init(&mc, &G16.c);
            const int64_t b = kind == 2 ? 2 : 3, k = mc.indptr[b] + (kind == 2 ? 0 : 7);
            const char *what = kind == 0   ? "request 3: page 7 missing"
                               : kind == 1 ? "request 3: page 7 read from page 8"
                                           : "request 2: page 0 read from page 1";
            if (kind == 0) drop_page_slot(&mc, b, k);
            else mc.indices[k] = mc.indices[k + 1];
            expect_planted_fails(&mc, &G16, gold16, models[i], b, -1, -1, what);
        }
    }
}
END_TEST

/* Query head h reads the wrong KV head: the model with q of head h placed in
 * a head of the other group gives exactly what that head would compute. */
START_TEST(wrong_kv_head)
{
    const dl_config *cfg = &G16.c.cfg;
    const int64_t Hq = cfg->num_qo_heads, D = cfg->head_dim, es = (int64_t)dl_dtype_size(cfg->q_dtype);
    for (int i = 0; i < NMODELS; i++) {
        const int64_t b = 3, h = 1, h2 = 6; /* head 1 (KV head 0) computed against KV head 1 */
        mod_case mc;
        mod_init(&mc, &G16.c);
        memcpy((char *)mc.q + (b * Hq + h2) * D * es, (const char *)G16.c.q + (b * Hq + h) * D * es, (size_t)(D * es));
        expect_planted_fails(&mc, &G16, gold16, models[i], b, h, h2, "query head (3, 1) reads KV head 1");
    }
}
END_TEST

/* sm_scale, k_scale or v_scale 1 % or 5 % off on one query head. */
START_TEST(scale_off_one_head)
{
    const double f[2] = {1.01, 1.05};
    for (int i = 0; i < NMODELS; i++) {
        for (int which = 0; which < 3; which++) {
            for (int k = 0; k < 2; k++) {
                mod_case mc;
                mod_init(&mc, &G16.c);
                if (which == 0) mc.c.cfg.sm_scale = dl_sm_scale(&G16.c.cfg) * f[k];
                else if (which == 1) mc.ks[0] *= (float)f[k];
                else mc.vs[0] *= (float)f[k];
                char what[64];
                snprintf(what, sizeof what, "head (3, 2): %s x %.2f", which == 0 ? "sm_scale" : which == 1 ? "k_scale" : "v_scale",
                         f[k]);
                expect_planted_fails(&mc, &G16, gold16, models[i], 3, 2, 2, what);
            }
        }
    }
}
END_TEST

/* The same through the binary: candidate files written and `decodelab compare`d (exit 1 = a FAIL). */
START_TEST(through_the_cli)
{
    dl_candidate c;
    cand_init(&c, &G16, DL_MODEL_BF16, "head x 1.01");
    ck_assert_int_eq(dl_candidate_write(cand, &c, 1), 0);
    ck_assert_msg(DL_RUN("compare", gold16, cand) == 0, "%s%s", dl_test_out, dl_test_err);
    for (int64_t d = 0; d < c.head_dim; d++) c.o[(2 * c.num_qo_heads + 5) * c.head_dim + d] *= 1.01f;
    ck_assert_int_eq(dl_candidate_write(cand, &c, 1), 0);
    ck_assert_int_eq(DL_RUN("compare", gold16, cand), 1);
    ck_assert_msg(strstr(dl_test_out, "FAIL") && strstr(dl_test_out, "b=2 h=5"), "%s", dl_test_out);
    free(c.lse);
    c.lse = NULL; /* o alone */
    ck_assert_int_eq(dl_candidate_write(cand, &c, 1), 0);
    ck_assert_int_eq(DL_RUN("compare", gold16, cand), 1);
    dl_candidate_free(&c);
}
END_TEST

DL_TEST_SUITE("planted", 120, setup, teardown,
              clean_passes, scaled_head_and_request, token_dropped, page_missing_or_neighbour, wrong_kv_head,
              scale_off_one_head, through_the_cli)

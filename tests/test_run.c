/* test_run.c - Check suite for the CPU side of `decodelab run` (harness/run_util.c,
 * harness/run.c): bytes-moved accounting and the result row's configuration columns,
 * the inputs hash, the read reference's expected byte count and checksum (NHD and HND,
 * page table order and contiguous), and `run` on a machine without a GPU (every
 * variant listed, nothing written, a missing file is exit 2; --out checked before any work). No GPU is needed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../gpu/dl_registry.h"
#include "../harness/dl_golden.h"
#include "../harness/dl_results.h"
#include "../harness/dl_run.h"
#include "dl_test.h"

/* B=2, Hq=4, Hkv=2, D=8, page 4, q bf16, kv e4m3; lengths 5 (pages 2,0, last 1) and 4 (page 1, last 4). */
typedef struct {
    dl_case c;
    uint16_t q[2 * 4 * 8];
    uint8_t k[3 * 4 * 2 * 8], v[3 * 4 * 2 * 8];
    float ks[2], vs[2];
    int32_t indptr[3], indices[3], last[2];
} small_case;

static void build_small(small_case *s)
{
    const int64_t lens[2] = {5, 4};
    memset(s, 0, sizeof *s);
    dl_config *g = &s->c.cfg;
    dl_test_shape(g, 2, 4, 2, 8, 4);
    dl_test_lens(g, lens);
    g->q_dtype = DL_BF16;
    g->kv_dtype = DL_E4M3;
    g->seq_len_min = 4;
    g->seq_len_max = 5;
    s->c.num_pages = 3;
    for (size_t i = 0; i < sizeof s->q / 2; i++) s->q[i] = (uint16_t)(0x3f80 + i);
    for (size_t i = 0; i < sizeof s->k; i++) {
        s->k[i] = (uint8_t)(i * 7);
        s->v[i] = (uint8_t)(i * 13);
    }
    s->ks[0] = s->ks[1] = s->vs[0] = s->vs[1] = 0.5f;
    int32_t indptr[] = {0, 2, 3}, indices[] = {2, 0, 1}, last[] = {1, 4};
    memcpy(s->indptr, indptr, sizeof indptr);
    memcpy(s->indices, indices, sizeof indices);
    memcpy(s->last, last, sizeof last);
    s->c.q = s->q;
    s->c.k_cache = s->k;
    s->c.v_cache = s->v;
    s->c.k_scale = s->ks;
    s->c.v_scale = s->vs;
    s->c.kv_indptr = s->indptr;
    s->c.kv_indices = s->indices;
    s->c.kv_last_page_len = s->last;
}

START_TEST(test_bytes_moved)
{
    static small_case s;
    build_small(&s);
    ck_assert_int_eq(dl_case_seq_len(&s.c, 0), 5);
    ck_assert_int_eq(dl_case_seq_len(&s.c, 1), 4);
    dl_bytes b;
    dl_run_bytes(&s.c, &b);
    /* by hand: q 2*4*8*2 B; K+V over 9 tokens 2*9*2*8*1; whole pages 2*3*4*2*8;
     * scales 2*2*4; page table (3+3+2)*4; o 2*4*8*4; lse 2*4*4 */
    ck_assert_int_eq(b.q, 128);
    ck_assert_int_eq(b.kv, 288);
    ck_assert_int_eq(b.kv_pages, 384);
    ck_assert_int_eq(b.scales, 16);
    ck_assert_int_eq(b.page_table, 32);
    ck_assert_int_eq(b.o, 256);
    ck_assert_int_eq(b.lse, 32);
    ck_assert_int_eq(b.total, 128 + 288 + 16 + 32 + 256 + 32);

    dl_result_row r;
    dl_result_row_init(&r);
    dl_run_fill_config(&r, "x.h5", &s.c, dl_run_inputs_hash(&s.c));
    ck_assert_str_eq(r.seq_lens, "5,4");
    ck_assert_int_eq(r.total_tokens, 9);
    ck_assert_int_eq(r.max_seq_len, 5);
    ck_assert_int_eq(r.num_pages, 3);
    ck_assert_str_eq(r.kv_dtype, "e4m3");
    ck_assert_str_eq(r.q_dtype, "bf16");
    ck_assert_double_eq_tol(r.sm_scale, 1.0 / sqrt(8.0), 1e-15);
}
END_TEST

START_TEST(test_inputs_hash)
{
    static small_case a, b;
    build_small(&a);
    build_small(&b);
    uint64_t ha = dl_run_inputs_hash(&a.c);
    ck_assert(ha == dl_run_inputs_hash(&b.c));
    /* FNV-1a 64 of the empty input is its offset basis; ours covers the data, so differs */
    ck_assert(ha != UINT64_C(0xcbf29ce484222325));
    b.v[191] ^= 1; /* last byte of the V cache */
    ck_assert(ha != dl_run_inputs_hash(&b.c));
    b.v[191] ^= 1;
    b.indices[0] = 1; /* page table */
    b.indices[2] = 2;
    ck_assert(ha != dl_run_inputs_hash(&b.c));
    char str[32];
    dl_run_hash_string(UINT64_C(0x0123456789abcdef), str, sizeof str);
    ck_assert_str_eq(str, "fnv1a64:0123456789abcdef");
}
END_TEST

/* The read reference's expected bytes and xor-fold, recomputed here by hand:
 * NHD token rows are Hkv*D bytes at (page*page_size + slot)*Hkv*D, HND rows of
 * one head D bytes at ((page*Hkv + h)*page_size + slot)*D. */
static uint32_t fold_ref(const uint8_t *p, int64_t off, int64_t n)
{
    uint32_t x = 0;
    for (int64_t i = off; i < off + n; i++) {
        uint32_t word = (uint32_t)p[i] << (8 * (i % 4));
        x ^= word;
    }
    return x;
}

START_TEST(test_read_sum)
{
    static small_case s;
    build_small(&s);
    const int lens[2] = {5, 4};
    for (int layout = 0; layout < 2; layout++) {
        s.c.cfg.kv_layout = layout ? DL_HND : DL_NHD;
        uint32_t want = 0;
        for (int b = 0; b < 2; b++)
            for (int t = 0; t < lens[b]; t++) {
                int64_t page = s.indices[s.indptr[b] + t / 4], slot = t % 4;
                for (int h = 0; h < 2; h++) {
                    int64_t off = layout ? ((page * 2 + h) * 4 + slot) * 8 : (page * 4 + slot) * 16 + h * 8;
                    want ^= fold_ref(s.k, off, 8) ^ fold_ref(s.v, off, 8);
                }
            }
        int64_t bytes = 0;
        uint32_t x = 0;
        dl_run_read_sum(&s.c, 0, &bytes, &x);
        ck_assert_int_eq(bytes, 288); /* = dl_run_bytes kv (test_bytes_moved) */
        ck_assert_msg(x == want, "layout %d: %08x, by hand %08x", layout, x, want);
        /* contiguous: the first 144 bytes of each cache */
        dl_run_read_sum(&s.c, 1, &bytes, &x);
        ck_assert_int_eq(bytes, 288);
        ck_assert(x == (fold_ref(s.k, 0, 144) ^ fold_ref(s.v, 0, 144)));
    }
    /* a byte lands at bits 8*(offset % 4): one byte changed at offset 6 flips bits 16..23 */
    s.c.cfg.kv_layout = DL_NHD;
    int64_t bytes;
    uint32_t x0, x1;
    dl_run_read_sum(&s.c, 1, &bytes, &x0);
    s.k[6] ^= 0x5A;
    dl_run_read_sum(&s.c, 1, &bytes, &x1);
    ck_assert_uint_eq(x0 ^ x1, 0x5Au << 16);
    /* the page table decides: slot 1 of page 0 (the last page of request 0, 1 token) is
     * not read; slot 1 of page 2 (its first page) is */
    s.k[6] ^= 0x5A;
    dl_run_read_sum(&s.c, 0, &bytes, &x0);
    s.k[(0 * 4 + 1) * 16] ^= 0xFF;
    dl_run_read_sum(&s.c, 0, &bytes, &x1);
    ck_assert_uint_eq(x0, x1);
    s.k[(2 * 4 + 1) * 16] ^= 0xFF;
    dl_run_read_sum(&s.c, 0, &bytes, &x1);
    ck_assert_uint_eq(x0 ^ x1, 0xFFu);
}
END_TEST

/* ---------------------------------------------------------------- run, no GPU */

/* A fresh test folder `stem` holding g.h5: an e4m3 golden file, page 16, D 64, with the given options. */
static void golden_in_test_dir(const char *stem, const char *opts)
{
    if (access(dl_test_bin(), X_OK) != 0) ck_abort_msg("decodelab binary not found at %s (set DL_BIN)", dl_test_bin());
    dl_test_mkdir(stem);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s golden %s --page-size 16 --head-dim 64 --kv-dtype e4m3 --out %s/g.h5 > /dev/null 2>&1",
             dl_test_bin(), opts, dl_test_dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_run_without_gpu)
{
    if (dl_gpu_device_count() > 0) {
        printf("test_run_without_gpu: this machine has a CUDA device; not applicable\n");
        return;
    }
    golden_in_test_dir("run", "--seq-len 1,16,17 --num-qo-heads 4 --num-kv-heads 1");
    char cmd[2048], out[512];
    dl_test_path(out, sizeof out, "run.txt");
    snprintf(cmd, sizeof cmd, "%s run %s/g.h5 --time --out %s/res.h5 > %s 2>&1", dl_test_bin(), dl_test_dir, dl_test_dir, out);
    int st = system(cmd);
    ck_assert(WIFEXITED(st));
    static char text[65536];
    dl_test_slurp(out, text, sizeof text);
    ck_assert_msg(WEXITSTATUS(st) == 0, "run exited %d: %s", WEXITSTATUS(st), text);
    ck_assert_msg(strstr(text, "no CUDA device (") != NULL, "output: %s", text);
    ck_assert_msg(strstr(text, "GPU variants skipped") != NULL, "output: %s", text);
    /* every registry variant is listed */
    for (int i = 0; i < dl_num_variants; i++) ck_assert_msg(strstr(text, dl_variants[i].name), "%s missing", dl_variants[i].name);
    /* nothing is written without a device */
    char res[512];
    dl_test_path(res, sizeof res, "res.h5");
    ck_assert_int_ne(access(res, F_OK), 0);
    /* a missing golden file is bad input: exit 2 */
    snprintf(cmd, sizeof cmd, "%s run %s/missing.h5 > /dev/null 2>&1", dl_test_bin(), dl_test_dir);
    st = system(cmd);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    dl_test_rmdir();
}
END_TEST

/* run --out is checked before anything else is read or run (on a GPU machine, before any kernel): a file that is
 * not a results table (a golden file), a missing directory, a CSV twin that is a directory: exit 2 with one line
 * naming the path, nothing on stdout, the files as they were. A golden file that is a FIFO is refused unread
 * (timeout(1) turns a hang into 124). No GPU is needed: the checks come first. */
START_TEST(test_run_out_checked_first)
{
    golden_in_test_dir("runout", "--seq-len 1,16,17 --num-qo-heads 4 --num-kv-heads 1");
    char g[512], notres[512], missing[512], r4[512], r4csv[512], fifo[512], out[512], err[512], cmd[4096];
    dl_test_path(g, sizeof g, "g.h5");
    dl_test_path(notres, sizeof notres, "notres.h5");
    dl_test_path(missing, sizeof missing, "missingdir/x.h5");
    dl_test_path(r4, sizeof r4, "r4.h5");
    dl_test_path(r4csv, sizeof r4csv, "r4.csv");
    dl_test_path(fifo, sizeof fifo, "fifo.h5");
    dl_test_path(out, sizeof out, "out.txt");
    dl_test_path(err, sizeof err, "err.txt");
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", g, notres);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(mkdir(r4csv, 0755), 0);
    ck_assert_int_eq(mkfifo(fifo, 0644), 0);
    const char *golden[] = {g, g, g, fifo};
    const char *dest[] = {notres, missing, r4, NULL};
    const char *named[] = {notres, missing, r4csv, fifo};
    const char *why[] = {"is not a results table", "No such file", "not a regular file", "not a regular file"};
    static char text[65536], etext[65536];
    for (int i = 0; i < 4; i++) {
        snprintf(cmd, sizeof cmd, "timeout 20 '%s' run '%s' %s%s > '%s' 2> '%s'", dl_test_bin(), golden[i],
                 dest[i] ? "--out " : "", dest[i] ? dest[i] : "", out, err);
        int st = system(cmd);
        dl_test_slurp(out, text, sizeof text);
        dl_test_slurp(err, etext, sizeof etext);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "case %d: exit %d: %s%s", i, WEXITSTATUS(st), text, etext);
        ck_assert_msg(text[0] == 0, "case %d: worked before the check:\n%s", i, text);
        ck_assert_msg(dl_test_lines(etext) == 1 && strstr(etext, named[i]) && strstr(etext, why[i]), "case %d: %s", i,
                      etext);
    }
    ck_assert(dl_test_same_bytes(g, notres));
    ck_assert_int_ne(access(r4, F_OK), 0);
    dl_test_rmdir();
}
END_TEST

/* run --save-outputs: a variant's outputs written as a candidate file that `decodelab compare` reads and
 * judges by the variant's model (here the fp8wg model's own output stands in for the kernel's: it must
 * PASS; the same output with one head scaled by 1.01 must FAIL); a missing folder is refused. */
START_TEST(test_save_outputs_round_trip)
{
    golden_in_test_dir("save", "--seq-len 1,16,70 --num-qo-heads 8 --num-kv-heads 2 --models exact,fp8wg");
    char cmd[2048], g_path[512], out[512];
    dl_test_path(g_path, sizeof g_path, "g.h5");
    dl_test_path(out, sizeof out, "out.txt");
    dl_golden g;
    ck_assert_int_eq(dl_golden_read(g_path, &g), 0);
    const dl_variant *v = dl_variant_find("fp8-none-wgmma");
    ck_assert_ptr_nonnull(v);
    const dl_output *m = &g.out[DL_MODEL_FP8WG];
    const size_t no = (size_t)(g.c.cfg.batch_size * g.c.cfg.num_qo_heads * g.c.cfg.head_dim);
    const size_t nl = (size_t)(g.c.cfg.batch_size * g.c.cfg.num_qo_heads);
    float *o = malloc(no * sizeof *o), *lse = malloc(nl * sizeof *lse);
    ck_assert(o && lse);
    for (size_t i = 0; i < no; i++) o[i] = (float)m->o[i];
    for (size_t i = 0; i < nl; i++) lse[i] = (float)m->lse[i];
    dl_result_row r;
    dl_result_row_init(&r);
    snprintf(r.compute, sizeof r.compute, "fp8");
    snprintf(r.dequant, sizeof r.dequant, "none");
    snprintf(r.unit, sizeof r.unit, "wgmma");
    snprintf(r.model_schedule, sizeof r.model_schedule, "none");
    r.num_splits = 1;
    r.deterministic = 1;
    ck_assert_int_eq(dl_run_save_outputs(dl_test_dir, &g, v, &r, o, lse), 0);
    snprintf(cmd, sizeof cmd, "%s compare %s %s/fp8-none-wgmma.splits1.h5 > %s 2>&1", dl_test_bin(), g_path, dl_test_dir,
             out);
    static char text[65536];
    int st = system(cmd);
    dl_test_slurp(out, text, sizeof text);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "compare exited %d: %s", WEXITSTATUS(st), text);
    ck_assert_msg(strstr(text, "PASS") && strstr(text, "fp8wg"), "compare output: %s", text);
    for (size_t i = 0; i < (size_t)g.c.cfg.head_dim; i++) o[i] *= 1.01f; /* request 0, head 0 */
    ck_assert_int_eq(dl_run_save_outputs(dl_test_dir, &g, v, &r, o, lse), 0); /* overwritten in place */
    st = system(cmd);
    dl_test_slurp(out, text, sizeof text);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1 && strstr(text, "FAIL"), "compare exited %d: %s",
                  WEXITSTATUS(st), text);
    /* the CLI refuses a folder that does not exist, before anything runs */
    snprintf(cmd, sizeof cmd, "%s run %s --save-outputs %s/nope > %s 2>&1", dl_test_bin(), g_path, dl_test_dir, out);
    st = system(cmd);
    dl_test_slurp(out, text, sizeof text);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(text, "--save-outputs"), "run: %s", text);
    free(o);
    free(lse);
    dl_golden_free(&g);
    dl_test_rmdir();
}
END_TEST

/* dl_run_judge_launches on a fresh row of the file's configuration, the bf16 model judging (test_judge_both_launches) */
static dl_verdict judge_pair(dl_result_row *r, const char *g_path, const dl_golden *g, float *o[2], float *lse[2],
                             size_t no, size_t nl)
{
    dl_result_row_init(r);
    dl_run_fill_config(r, g_path, &g->c, 0);
    return dl_run_judge_launches(r, o, lse, no, nl, &g->out[DL_MODEL_BF16], DL_MODEL_BF16, &g->out[DL_MODEL_EXACT],
                                 g->c.cfg.kv_dtype);
}

/* dl_run_judge_launches, the judgement of `run`'s two check launches: the bf16 model's own output stands in for
 * both launches. Equal launches: deterministic, PASS. A second launch with one head off by 1 % (what a kernel that
 * trips on state its first launch left behind would write) FAILs the row, whose reason and error columns are the
 * second's; a first launch so off FAILs whatever the second; launches one ulp apart in one element both PASS, the
 * row PASS and not deterministic, the reason saying so. */
START_TEST(test_judge_both_launches)
{
    golden_in_test_dir("judge2", "--seq-len 1,16,70 --num-qo-heads 8 --num-kv-heads 2 --models exact,bf16");
    char g_path[512];
    dl_test_path(g_path, sizeof g_path, "g.h5");
    dl_golden g;
    ck_assert_int_eq(dl_golden_read(g_path, &g), 0);
    const dl_output *m = &g.out[DL_MODEL_BF16];
    const size_t no = (size_t)(g.c.cfg.batch_size * g.c.cfg.num_qo_heads * g.c.cfg.head_dim);
    const size_t nl = (size_t)(g.c.cfg.batch_size * g.c.cfg.num_qo_heads);
    float *o[2] = {malloc(no * sizeof(float)), malloc(no * sizeof(float))};
    float *lse[2] = {malloc(nl * sizeof(float)), malloc(nl * sizeof(float))};
    ck_assert(o[0] && o[1] && lse[0] && lse[1]);
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < no; i++) o[k][i] = (float)m->o[i];
        for (size_t i = 0; i < nl; i++) lse[k][i] = (float)m->lse[i];
    }
    dl_result_row r;
    ck_assert_int_eq(judge_pair(&r, g_path, &g, o, lse, no, nl), DL_PASS);
    ck_assert_int_eq(r.deterministic, 1);
    ck_assert_str_eq(r.verdict, "PASS");
    ck_assert_str_eq(r.reason, "");
    const double pass_err = r.model_o.rel_l2;

    const size_t h = (size_t)g.c.cfg.head_dim * 9; /* request 1, head 1: a 70-token request's rows */
    for (size_t i = h; i < h + (size_t)g.c.cfg.head_dim; i++) o[1][i] *= 1.01f;
    ck_assert_int_eq(judge_pair(&r, g_path, &g, o, lse, no, nl), DL_FAIL);
    ck_assert_int_eq(r.deterministic, 0);
    ck_assert_str_eq(r.verdict, "FAIL");
    ck_assert_str_eq(r.verdict_model, "FAIL");
    ck_assert_msg(strstr(r.reason, "second of two launches") != NULL, "reason: %s", r.reason);
    ck_assert_msg(r.model_o.rel_l2 > pass_err, "the row holds the second launch's error: %g vs %g", r.model_o.rel_l2,
                  pass_err);

    float *t = o[0]; /* the bad launch first: FAIL, the first's errors kept */
    o[0] = o[1];
    o[1] = t;
    ck_assert_int_eq(judge_pair(&r, g_path, &g, o, lse, no, nl), DL_FAIL);
    ck_assert_str_eq(r.verdict, "FAIL");
    ck_assert_msg(strstr(r.reason, "differ bitwise (the second passes") != NULL, "reason: %s", r.reason);

    for (size_t i = 0; i < no; i++) o[0][i] = o[1][i]; /* both good again, then one element one ulp apart */
    o[1][h] = nextafterf(o[1][h], INFINITY);
    ck_assert_int_eq(judge_pair(&r, g_path, &g, o, lse, no, nl), DL_PASS);
    ck_assert_int_eq(r.deterministic, 0);
    ck_assert_str_eq(r.verdict, "PASS");
    ck_assert_msg(strstr(r.reason, "differ bitwise (the second passes") != NULL, "reason: %s", r.reason);
    for (int k = 0; k < 2; k++) {
        free(o[k]);
        free(lse[k]);
    }
    dl_golden_free(&g);
    dl_test_rmdir();
}
END_TEST

DL_TEST_SUITE("run", 120, NULL, NULL, test_bytes_moved, test_inputs_hash, test_read_sum, test_run_without_gpu,
              test_run_out_checked_first,
              test_save_outputs_round_trip, test_judge_both_launches)

/* test_plan.c - the balanced plan of the streaming family (gpu/plan.c): every
 * tile of every (request, KV head) task in exactly one segment, segments of a
 * task in token order, slots balanced to one tile, partials' workspace
 * rows numbered task by task for split tasks only, the heads order's runs shared by the Hkv slots of a
 * group, the clusters' plan (each task in its own cluster's slots), the schedule view (what the CPU model follows)
 * equal to the device buffer, the tickets zero, and bad arguments refused. */
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "dl_test.h"
#include "../gpu/dl_plan.h"
#include "../ref/dl_common.h"

typedef struct {
    const int32_t *slot_ptr, *seg_task, *seg_t0, *seg_t1, *seg_out, *task_ptr, *tickets;
} views;

static views view_of(const dl_plan *p)
{
    views v;
    v.slot_ptr = p->buf;
    v.seg_task = v.slot_ptr + p->num_slots + 1;
    v.seg_t0 = v.seg_task + p->num_segs;
    v.seg_t1 = v.seg_t0 + p->num_segs;
    v.seg_out = v.seg_t1 + p->num_segs;
    v.task_ptr = v.seg_out + p->num_segs;
    v.tickets = v.task_ptr + p->num_tasks + 1;
    return v;
}

/* Checks every invariant of plan p for these lengths; returns the largest slot size. */
static int64_t check_built_tol(const dl_plan *pp, int B, int Hkv, const int32_t *len, int tile, int warps,
                               int max_ctas, int64_t tol)
{
    const dl_plan p = *pp;
    const views v = view_of(&p);
    ck_assert_uint_eq(p.buf_len, (size_t)(p.num_slots + 1) + 4 * (size_t)p.num_segs + 2 * (size_t)p.num_tasks + 1 + 2);
    ck_assert_int_eq(p.num_tasks, B * Hkv);
    ck_assert_int_le(p.ctas, max_ctas);
    ck_assert_int_eq(p.num_slots, p.ctas * warps);
    int64_t N = 0;
    for (int b = 0; b < B; b++) N += (int64_t)Hkv * ((len[b] + tile - 1) / tile);
    ck_assert_int_eq(p.num_tiles, N);

    /* every tile covered once: count per (task, tile) */
    int64_t *first = calloc((size_t)p.num_tasks + 1, sizeof(int64_t));
    for (int t = 0; t < p.num_tasks; t++) first[t + 1] = first[t] + (len[t / Hkv] + tile - 1) / tile;
    int *hit = calloc((size_t)N, sizeof(int));
    int64_t smin = N, smax = 0, nonempty = 0;
    ck_assert_int_eq(v.slot_ptr[0], 0);
    for (int s = 0; s < p.num_slots; s++) {
        ck_assert_int_le(v.slot_ptr[s], v.slot_ptr[s + 1]);
        int64_t size = 0;
        for (int k = v.slot_ptr[s]; k < v.slot_ptr[s + 1]; k++) {
            ck_assert_int_lt(v.seg_t0[k], v.seg_t1[k]);
            for (int tl = v.seg_t0[k]; tl < v.seg_t1[k]; tl++) hit[first[v.seg_task[k]] + tl]++;
            size += v.seg_t1[k] - v.seg_t0[k];
        }
        if (size > 0) {
            nonempty++;
            if (size < smin) smin = size;
        }
        if (size > smax) smax = size;
    }
    ck_assert_int_eq(v.slot_ptr[p.num_slots], p.num_segs);
    for (int64_t i = 0; i < N; i++) ck_assert_int_eq(hit[i], 1);
    /* balanced: the used slots differ by at most tol tiles (1: equal cuts; the heads order: by at most one tile a
     * head); empty slots only when N < slots (the heads order: past the last whole group of Hkv) */
    ck_assert_int_le(smax - smin, tol);
    if (p.order == DL_ORDER_TASKS && !p.cluster && N >= p.num_slots) ck_assert_int_eq(nonempty, p.num_slots);
    if (p.order == DL_ORDER_HEADS) { /* g: the heads read side by side (a head group, or all of them) */
        const int g = p.head_group ? p.head_group : Hkv;
        ck_assert_int_eq(Hkv % g, 0);
        ck_assert(p.head_group < Hkv); /* all the heads are said as 0 */
        const int64_t U = N / Hkv * (Hkv / g), runs = p.num_slots / g < U ? p.num_slots / g : U;
        ck_assert_int_eq(nonempty, runs * g);
        /* the g slots of a run cover the same tiles of the same requests, one head of the group each */
        for (int64_t r = 0; r < runs; r++)
            for (int h = 1; h < g; h++) {
                const int s = (int)(r * g + h), s0 = (int)(r * g);
                ck_assert_int_eq(v.slot_ptr[s + 1] - v.slot_ptr[s], v.slot_ptr[s0 + 1] - v.slot_ptr[s0]);
                for (int i = 0; i < v.slot_ptr[s + 1] - v.slot_ptr[s]; i++) {
                    const int k = v.slot_ptr[s] + i, k0 = v.slot_ptr[s0] + i;
                    ck_assert_int_eq(v.seg_task[k], v.seg_task[k0] + h);
                    ck_assert_int_eq(v.seg_t0[k], v.seg_t0[k0]);
                    ck_assert_int_eq(v.seg_t1[k], v.seg_t1[k0]);
                }
            }
    }

    /* each task's segments (in id order) run in token order from tile 0 to the last; the schedule view
     * lists them so, each starting at seg_t0 * tile; a split task's partials are the workspace rows
     * task_ptr[t].. in token order, rows numbered 0.. task by task; an unsplit task has none */
    int next_part = 0;
    int64_t sk = 0;
    ck_assert_int_eq(v.task_ptr[0], 0);
    for (int t = 0; t < p.num_tasks; t++) {
        int n = 0, tl = 0;
        ck_assert_int_eq(p.sched_indptr[t], sk);
        for (int k = 0; k < p.num_segs; k++)
            if (v.seg_task[k] == t) n++;
        ck_assert_int_ge(n, 1);
        ck_assert_int_eq(v.task_ptr[t], next_part);
        ck_assert_int_eq(v.task_ptr[t + 1] - v.task_ptr[t], n > 1 ? n : 0);
        for (int k = 0, i = 0; k < p.num_segs; k++) {
            if (v.seg_task[k] != t) continue;
            ck_assert_int_eq(v.seg_t0[k], tl);
            tl = v.seg_t1[k];
            ck_assert_int_eq(p.sched_begin[sk++], (int64_t)v.seg_t0[k] * tile);
            if (n == 1) ck_assert_int_eq(v.seg_out[k], -1);
            else ck_assert_int_eq(v.seg_out[k], v.task_ptr[t] + i++);
        }
        if (n > 1) next_part += n;
        ck_assert_int_eq(tl, (len[t / Hkv] + tile - 1) / tile);
        ck_assert_int_eq(v.tickets[t], 0);
    }
    ck_assert_int_eq(p.sched_indptr[p.num_tasks], p.num_segs);
    ck_assert_int_eq(next_part, p.num_partials);
    free(first);
    free(hit);
    return smax;
}
/* check_built_tol with equal cuts: the used slots within one tile of each other. */
static int64_t check_built(const dl_plan *pp, int B, int Hkv, const int32_t *len, int tile, int warps, int max_ctas)
{
    return check_built_tol(pp, B, Hkv, len, tile, warps, max_ctas, 1);
}

/* check_built of dl_plan_build's plan (the tasks order) and of the heads order's. */
static int64_t check_plan(int B, int Hkv, const int32_t *len, int tile, int warps, int max_ctas, int min_tiles)
{
    dl_plan p;
    ck_assert_int_eq(dl_plan_build(B, Hkv, len, tile, warps, max_ctas, min_tiles, &p), 0);
    ck_assert_int_eq(p.order, DL_ORDER_TASKS);
    const int64_t smax = check_built(&p, B, Hkv, len, tile, warps, max_ctas);
    dl_plan_free(&p);
    ck_assert_int_eq(dl_plan_build_pool(B, Hkv, len, tile, warps, max_ctas, min_tiles, 0, 1, DL_ORDER_HEADS, 0, &p), 0);
    check_built(&p, B, Hkv, len, tile, warps, max_ctas);
    dl_plan_free(&p);
    return smax;
}

START_TEST(test_seed_case_shape)
{
    /* llama3-8B B64 L1024: 512 tasks x 16 tiles on 132 SMs x 2 CTAs x 3 warps */
    int32_t len[64];
    for (int b = 0; b < 64; b++) len[b] = 1024;
    int64_t smax = check_plan(64, 8, len, 64, 3, 264, 4);
    ck_assert_int_eq(smax, 11); /* 8192 tiles / 792 slots = 10.34: 10 or 11 each */
}
END_TEST

START_TEST(test_ragged_and_tiny)
{
    const int32_t len[11] = {1, 2, 15, 16, 17, 63, 64, 65, 100, 257, 1000};
    check_plan(11, 2, len, 64, 3, 264, 4);  /* fewer tiles than slots: min_tiles bounds them */
    check_plan(11, 2, len, 64, 4, 1, 1);    /* one CTA: long runs crossing many tasks */
    check_plan(11, 3, len, 64, 1, 7, 2);
    const int32_t one[1] = {1};
    ck_assert_int_eq(check_plan(1, 1, one, 64, 3, 264, 4), 1);
}
END_TEST

START_TEST(test_long_single_request_splits)
{
    const int32_t len[1] = {32768};
    dl_plan p;
    ck_assert_int_eq(dl_plan_build(1, 8, len, 64, 3, 264, 16, &p), 0);
    /* 4096 tiles, at least 16 per slot: 256 slots rounded up to 86 whole CTAs (258 slots of
     * 15-16 tiles), so each 512-tile task lands in 33 or 34 segments */
    ck_assert_int_eq(p.num_tiles, 4096);
    ck_assert_int_eq(p.ctas, 86);
    ck_assert_int_eq(p.num_partials, p.num_segs);
    const views v = view_of(&p);
    for (int t = 0; t < 8; t++) {
        ck_assert_int_ge(v.task_ptr[t + 1] - v.task_ptr[t], 33);
        ck_assert_int_le(v.task_ptr[t + 1] - v.task_ptr[t], 34);
    }
    const int most = dl_plan_max_task_segs(&p);
    ck_assert(most == 33 || most == 34);
    dl_plan_free(&p);
    /* the seed case: 512 tasks of 16 tiles, slots of 10-11 tiles: no task in more than 3 segments */
    int32_t seed[64];
    for (int b = 0; b < 64; b++) seed[b] = 1024;
    ck_assert_int_eq(dl_plan_build(64, 8, seed, 64, 3, 264, 4, &p), 0);
    ck_assert_int_ge(dl_plan_max_task_segs(&p), 2);
    ck_assert_int_le(dl_plan_max_task_segs(&p), 3);
    dl_plan_free(&p);
    /* one CTA with many warps and few tiles: nothing split */
    const int32_t two[2] = {64, 64};
    ck_assert_int_eq(dl_plan_build(2, 1, two, 64, 3, 1, 4, &p), 0);
    ck_assert_int_eq(dl_plan_max_task_segs(&p), 1);
    dl_plan_free(&p);
    check_plan(1, 8, len, 64, 3, 264, 16);
}
END_TEST

/* DL_STREAM_STAGE and DL_STREAM_HW_PAGE (attempt #70): every stage parsed to its heads, a bad one refused by name
 * with the value; DL_STREAM_HW_PAGE unset gives the default asked for, 2 and 8 are taken, any other value refused
 * with it (a value in range but not a stage's heads, one out of range, one not a number) */
START_TEST(test_stage_knobs)
{
    int st = 99;
    ck_assert_int_eq(dl_plan_stage_of(NULL, &st), 0);
    ck_assert_int_eq(st, DL_STAGE_AUTO);
    const char *names[] = {"auto", "tile", "page", "page2"};
    const int want[] = {DL_STAGE_AUTO, DL_STAGE_TILE, DL_STAGE_PAGE, DL_STAGE_PAGE2};
    for (int i = 0; i < 4; i++) {
        st = 99;
        ck_assert_int_eq(dl_plan_stage_of(names[i], &st), 0);
        ck_assert_int_eq(st, want[i]);
    }
    ck_assert_int_eq(want[2], 8); /* the page stage's heads: decode_stream.cu's page_shape<8> and <2> */
    ck_assert_int_eq(want[3], 2);
    ck_assert_int_ne(dl_plan_stage_of("page4", &st), 0);
    ck_assert(strstr(dl_last_error(), "DL_STREAM_STAGE: 'page4' is not 'auto'") != NULL);
    ck_assert_int_ne(dl_plan_stage_of("", &st), 0);

    /* unset: the two-head rule standalone, the 8-head rule in a layer chained with PDL; a set value wins in both */
    int h = 99;
    unsetenv("DL_STREAM_HW_PAGE");
    ck_assert_int_eq(dl_plan_hw_page_heads(0, &h), 0);
    ck_assert_int_eq(h, 2);
    ck_assert_int_eq(dl_plan_hw_page_heads(1, &h), 0);
    ck_assert_int_eq(h, 8);
    setenv("DL_STREAM_HW_PAGE", "2", 1);
    ck_assert_int_eq(dl_plan_hw_page_heads(1, &h), 0);
    ck_assert_int_eq(h, 2);
    ck_assert_int_eq(dl_plan_hw_page_heads(0, &h), 0);
    ck_assert_int_eq(h, 2);
    setenv("DL_STREAM_HW_PAGE", "8", 1);
    ck_assert_int_eq(dl_plan_hw_page_heads(0, &h), 0);
    ck_assert_int_eq(h, 8);
    setenv("DL_STREAM_HW_PAGE", "4", 1);
    ck_assert_int_ne(dl_plan_hw_page_heads(0, &h), 0);
    ck_assert(strstr(dl_last_error(), "DL_STREAM_HW_PAGE: '4' is not 2 or 8") != NULL);
    ck_assert_int_ne(dl_plan_hw_page_heads(1, &h), 0);
    ck_assert(strstr(dl_last_error(), "DL_STREAM_HW_PAGE: '4' is not 2 or 8") != NULL);
    setenv("DL_STREAM_HW_PAGE", "16", 1);
    ck_assert_int_ne(dl_plan_hw_page_heads(0, &h), 0);
    ck_assert(strstr(dl_last_error(), "DL_STREAM_HW_PAGE") != NULL);
    setenv("DL_STREAM_HW_PAGE", "two", 1);
    ck_assert_int_ne(dl_plan_hw_page_heads(0, &h), 0);
    ck_assert(strstr(dl_last_error(), "DL_STREAM_HW_PAGE") != NULL);
    unsetenv("DL_STREAM_HW_PAGE");

    /* dl_plan_check_env (`decodelab run`'s check before any launch): each knob's bad value refused by name */
    const char *knob[] = {"DL_STREAM_ORDER", "DL_STREAM_STAGE", "DL_STREAM_MERGE", "DL_STREAM_HW_PAGE", "DL_STREAM_PDL",
                          "DL_STREAM_CHAIN_CAP"};
    const char *good[] = {"heads", "page2", "kernel", "8", "0", "0"};
    enum { nk = sizeof knob / sizeof *knob };
    for (int i = 0; i < nk; i++) unsetenv(knob[i]);
    ck_assert_int_eq(dl_plan_check_env(), 0);
    int pdl = -1, cap = -1; /* the chain's defaults: PDL, held */
    ck_assert_int_eq(dl_plan_chain_knobs(&pdl, &cap), 0);
    ck_assert_int_eq(pdl, 1);
    ck_assert_int_eq(cap, 1);
    for (int i = 0; i < nk; i++) setenv(knob[i], good[i], 1);
    ck_assert_int_eq(dl_plan_check_env(), 0);
    ck_assert_int_eq(dl_plan_chain_knobs(&pdl, &cap), 0);
    ck_assert_int_eq(pdl, 0);
    ck_assert_int_eq(cap, 0);
    for (int i = 0; i < nk; i++) {
        setenv(knob[i], "bogus", 1);
        ck_assert_int_ne(dl_plan_check_env(), 0);
        ck_assert(strstr(dl_last_error(), knob[i]) != NULL);
        ck_assert(strstr(dl_last_error(), "bogus") != NULL);
        setenv(knob[i], good[i], 1);
    }
    setenv("DL_STREAM_CHAIN_CAP", "2", 1); /* every launch held, standalone too */
    ck_assert_int_eq(dl_plan_check_env(), 0);
    ck_assert_int_eq(dl_plan_chain_knobs(&pdl, &cap), 0);
    ck_assert_int_eq(cap, 2);
    setenv("DL_STREAM_CHAIN_CAP", "3", 1); /* out of 0..2 */
    ck_assert_int_ne(dl_plan_check_env(), 0);
    ck_assert(strstr(dl_last_error(), "DL_STREAM_CHAIN_CAP") != NULL);
    for (int i = 0; i < nk; i++) unsetenv(knob[i]);
}
END_TEST

/* dl_plan_check_env's knob table: every integer knob refused above its widest range and in a wrong form, by
 * name and value; a name no build reads refused with the nearest named; the table holds exactly the DL_STREAM_*
 * variables the sources read (knob, dl_env_int, getenv) and the README's knob table a row for each. */
static int source_reads(const char *text, const char *name)
{
    const char *call[] = {"knob(\"", "dl_env_int(\"", "getenv(\""};
    char pat[160];
    for (int c = 0; c < 3; c++) {
        snprintf(pat, sizeof pat, "%s%s\"", call[c], name);
        if (strstr(text, pat)) return 1;
    }
    return 0;
}

START_TEST(test_knob_table)
{
    const int n = dl_plan_knob_count();
    ck_assert_int_ge(n, 30);
    for (int i = 0; i < n; i++) unsetenv(dl_plan_knob_name(i));
    ck_assert_int_eq(dl_plan_check_env(), 0);
    ck_assert_ptr_null(dl_plan_knob_name(n));
    const char *words[] = {"DL_STREAM_ORDER", "DL_STREAM_STAGE", "DL_STREAM_MERGE", "DL_STREAM_TL_CTAS"};
    int integers = 0;
    for (int i = 0; i < n; i++) {
        const char *k = dl_plan_knob_name(i);
        int word = 0;
        for (int w = 0; w < 4; w++) word |= !strcmp(k, words[w]);
        if (word) continue;
        integers++;
        setenv(k, "1O", 1); /* a typo: letter O */
        ck_assert_int_ne(dl_plan_check_env(), 0);
        ck_assert_msg(strstr(dl_last_error(), k) && strstr(dl_last_error(), "'1O'"), "%s: %s", k, dl_last_error());
        setenv(k, "1048577", 1); /* above every knob's widest range (the largest: 1 << 20) */
        ck_assert_int_ne(dl_plan_check_env(), 0);
        ck_assert_msg(strstr(dl_last_error(), k) && strstr(dl_last_error(), "1048577"), "%s: %s", k, dl_last_error());
        unsetenv(k);
    }
    ck_assert_int_eq(integers, n - 4);
    setenv("DL_STREAM_PROBE_THREADS", "64", 1); /* inside its range: taken here (the plan checks the rest) */
    setenv("DL_STREAM_UNIT", "32", 1);
    ck_assert_int_eq(dl_plan_check_env(), 0);
    setenv("DL_STREAM_UNIT", "8", 1); /* below 16 */
    ck_assert_int_ne(dl_plan_check_env(), 0);
    ck_assert(strstr(dl_last_error(), "DL_STREAM_UNIT: '8'") != NULL);
    unsetenv("DL_STREAM_UNIT");
    unsetenv("DL_STREAM_PROBE_THREADS");
    setenv("DL_STREAM_MERG", "ticket", 1); /* a name no build reads: refused, the nearest named */
    ck_assert_int_ne(dl_plan_check_env(), 0);
    ck_assert_msg(strstr(dl_last_error(), "DL_STREAM_MERG:") && strstr(dl_last_error(), "(DL_STREAM_MERGE?)"), "%s",
                  dl_last_error());
    unsetenv("DL_STREAM_MERG");
    setenv("DL_STREAM_CTAS_PER_SMX", "1", 1);
    ck_assert_int_ne(dl_plan_check_env(), 0);
    ck_assert(strstr(dl_last_error(), "(DL_STREAM_CTAS_PER_SM?)") != NULL);
    unsetenv("DL_STREAM_CTAS_PER_SMX");
    ck_assert_int_eq(dl_plan_check_env(), 0);

    /* the sources: every DL_STREAM_* they read is in the table, and every table name is read somewhere */
    const char *pats[] = {"gpu/*.cu", "gpu/*.cuh", "gpu/*.c", "gpu/*.h", "harness/*.c", "harness/*.h", "ref/*.c"};
    enum { cap = 1 << 20 };
    size_t used = 0, size = 0;
    char *all = NULL;
    int nfiles = 0;
    for (int g = 0; g < 7; g++) {
        char pat[1100];
        snprintf(pat, sizeof pat, "%s/%s", dl_test_root(), pats[g]);
        glob_t gl;
        ck_assert_int_eq(glob(pat, 0, NULL, &gl), 0);
        for (size_t f = 0; f < gl.gl_pathc; f++) {
            if (used + cap > size) {
                size = size ? 2 * size : 8 * (size_t)cap;
                all = realloc(all, size);
                ck_assert_ptr_nonnull(all);
            }
            dl_test_slurp(gl.gl_pathv[f], all + used, cap);
            used += strlen(all + used);
            nfiles++;
        }
        globfree(&gl);
    }
    ck_assert_int_ge(nfiles, 20);
    for (int i = 0; i < n; i++)
        ck_assert_msg(source_reads(all, dl_plan_knob_name(i)), "%s: in the table, read by no source",
                      dl_plan_knob_name(i));
    const char *call[] = {"knob(\"DL_STREAM_", "dl_env_int(\"DL_STREAM_", "getenv(\"DL_STREAM_"};
    int reads = 0;
    for (int c = 0; c < 3; c++)
        for (const char *p = all; (p = strstr(p, call[c])); p++) {
            const char *q = strchr(p, '"') + 1;
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(q, "\""), q);
            int known = 0;
            for (int i = 0; i < n; i++) known |= !strcmp(name, dl_plan_knob_name(i));
            ck_assert_msg(known, "%s: read by the sources, not in dl_plan_check_env's table (gpu/plan.c)", name);
            reads++;
        }
    ck_assert_int_ge(reads, n);
    free(all);

    /* the README's knob table: a row for each */
    char *readme = malloc(cap);
    ck_assert_ptr_nonnull(readme);
    char path[1024];
    snprintf(path, sizeof path, "%s/README.md", dl_test_root());
    dl_test_slurp(path, readme, cap);
    ck_assert_msg(readme[0], "cannot read %s", path);
    for (int i = 0; i < n; i++) {
        char row[160];
        snprintf(row, sizeof row, "\n| `%s` |", dl_plan_knob_name(i));
        ck_assert_msg(strstr(readme, row), "README.md: no row '| `%s` |' in the streaming family's knob table",
                      dl_plan_knob_name(i));
    }
    free(readme);
}
END_TEST

/* DL_STREAM_MERGE: every value parsed to its mode (a value left unset once ran the merge kernel for
 * 'ticket'), a bad one refused by name, and auto resolved by the plan's longest task */
START_TEST(test_merge_mode)
{
    int m = 99;
    ck_assert_int_eq(dl_plan_merge_mode(NULL, &m), 0);
    ck_assert_int_eq(m, DL_MERGE_AUTO);
    m = 99;
    ck_assert_int_eq(dl_plan_merge_mode("auto", &m), 0);
    ck_assert_int_eq(m, DL_MERGE_AUTO);
    m = 99;
    ck_assert_int_eq(dl_plan_merge_mode("ticket", &m), 0);
    ck_assert_int_eq(m, DL_MERGE_TICKET);
    m = 99;
    ck_assert_int_eq(dl_plan_merge_mode("kernel", &m), 0);
    ck_assert_int_eq(m, DL_MERGE_KERNEL);
    ck_assert_int_ne(dl_plan_merge_mode("Kernel", &m), 0);
    ck_assert(strstr(dl_last_error(), "DL_STREAM_MERGE: 'Kernel' is not") != NULL);
    ck_assert_int_ne(dl_plan_merge_mode("", &m), 0);
    m = 99;
    ck_assert_int_eq(dl_plan_merge_mode("cluster", &m), 0);
    ck_assert_int_eq(m, DL_MERGE_CLUSTER);

    dl_plan p;
    /* B1 L32768 on 264 x 3 warps with the kernel's segment cap: tasks of 512 tiles in ~86 segments */
    const int32_t one[1] = {32768};
    ck_assert_int_eq(dl_plan_build(1, 8, one, 64, 3, 264, (512 + DL_PLAN_MAX_SEGS_KERNEL - 1) / DL_PLAN_MAX_SEGS_KERNEL,
                                   &p), 0);
    ck_assert_int_ge(dl_plan_max_task_segs(&p), DL_PLAN_MERGE_KERNEL_SEGS);
    ck_assert_int_eq(dl_plan_pick_merge(DL_MERGE_AUTO, &p), DL_MERGE_KERNEL);
    ck_assert_int_eq(dl_plan_pick_merge(DL_MERGE_TICKET, &p), DL_MERGE_TICKET);
    ck_assert_int_eq(dl_plan_pick_merge(DL_MERGE_KERNEL, &p), DL_MERGE_KERNEL);
    dl_plan_free(&p);
    /* the seed case (B64 L1024): at most 3 segments a task, so auto keeps the ticket */
    int32_t seed[64];
    for (int b = 0; b < 64; b++) seed[b] = 1024;
    ck_assert_int_eq(dl_plan_build(64, 8, seed, 64, 3, 264, 4, &p), 0);
    ck_assert_int_gt(p.num_partials, 0);
    ck_assert_int_eq(dl_plan_pick_merge(DL_MERGE_AUTO, &p), DL_MERGE_TICKET);
    ck_assert_int_eq(dl_plan_pick_merge(DL_MERGE_KERNEL, &p), DL_MERGE_KERNEL);
    dl_plan_free(&p);
    /* nothing split: nothing to merge, whatever the mode */
    const int32_t two[2] = {64, 64};
    ck_assert_int_eq(dl_plan_build(2, 1, two, 64, 3, 1, 4, &p), 0);
    ck_assert_int_eq(p.num_partials, 0);
    ck_assert_int_eq(dl_plan_pick_merge(DL_MERGE_KERNEL, &p), DL_MERGE_TICKET);
    ck_assert_int_eq(dl_plan_pick_merge(DL_MERGE_AUTO, &p), DL_MERGE_TICKET);
    dl_plan_free(&p);
}
END_TEST

/* The merge kernel's CTAs per (task, query head) (attempt #35): asked values are taken; auto gives the fewest
 * of 1, 2, 4 with at least one CTA per SM (B1 L32768 32 heads -> 4, B4 128 -> 2, B8 256 -> 1 on 132 SMs); other
 * values, and a head_dim that 4C does not divide, are refused naming the knob. */
START_TEST(test_merge_split)
{
    const struct { int asked; int64_t heads; int want; } cases[] = {
        {0, 32, 4}, {0, 65, 4}, {0, 66, 2}, {0, 128, 2}, {0, 131, 2}, {0, 132, 1}, {0, 256, 1},
        {1, 32, 1}, {2, 32, 2}, {4, 1024, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int c = -1;
        ck_assert_int_eq(dl_plan_merge_split(cases[i].asked, cases[i].heads, 132, 128, &c), 0);
        ck_assert_int_eq(c, cases[i].want);
    }
    int c = -1;
    ck_assert_int_eq(dl_plan_merge_split(0, 32, 132, 64, &c), 0); /* D 64: 4 CTAs of 16 dims */
    ck_assert_int_eq(c, 4);
    const int bad[] = {3, 5, 8, -1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = -1;
        ck_assert_int_ne(dl_plan_merge_split(bad[i], 32, 132, 128, &c), 0);
        ck_assert_int_eq(c, -1);
        ck_assert(strstr(dl_last_error(), "DL_STREAM_MERGE_SPLIT: '") != NULL);
    }
    ck_assert_int_ne(dl_plan_merge_split(4, 32, 132, 24, &c), 0); /* 24 dims: not whole groups of 4 over 4 CTAs */
    ck_assert(strstr(dl_last_error(), "head_dim 24 is not a multiple of 16") != NULL);
    ck_assert_int_eq(dl_plan_merge_split(2, 32, 132, 24, &c), 0); /* but over 2 CTAs they are */
    ck_assert_int_eq(c, 2);
}
END_TEST

START_TEST(test_bad_arguments)
{
    dl_plan p;
    const int32_t len[2] = {10, 0};
    ck_assert_int_ne(dl_plan_build(2, 1, len, 64, 3, 10, 4, &p), 0);
    ck_assert(strstr(dl_last_error(), "request 1 has sequence length 0") != NULL);
    ck_assert_int_ne(dl_plan_build(0, 1, len, 64, 3, 10, 4, &p), 0);
    ck_assert_int_ne(dl_plan_build(1, 1, len, 64, 0, 10, 4, &p), 0);
    ck_assert_int_ne(dl_plan_build(1, 1, NULL, 64, 3, 10, 4, &p), 0);
}
END_TEST

/* whole waves: a plan left short of max_ctas by min_tiles rounded to the nearest multiple of the SMs */
START_TEST(test_ctas_per_sm)
{
    const int smem_sm = 233472; /* H200: 228 KB a SM */
    /* D128 e4m3 streaming kernel (99,448 bytes): 2 by shared memory; registers allow 2 at group 4 and 1 at
     * groups 9-16, where the plan once counted 2 and ran two waves */
    ck_assert_int_eq(dl_plan_ctas_per_sm(smem_sm, 99448, 2), 2);
    ck_assert_int_eq(dl_plan_ctas_per_sm(smem_sm, 99448, 1), 1);
    ck_assert_int_eq(dl_plan_ctas_per_sm(smem_sm, 99448, 0), 2); /* no occupancy given: shared memory */
    ck_assert_int_eq(dl_plan_ctas_per_sm(smem_sm, 99448, 6), 2); /* registers allow more: shared memory binds */
    /* D128 16-bit (197,752 bytes): 1; the runtime's 1 KB reserve counts: 2 x 116,000 fits in 233,472 bytes,
     * 2 x (116,000 + 1024) does not; 115,712 + 1024 is exactly half */
    ck_assert_int_eq(dl_plan_ctas_per_sm(smem_sm, 197752, 2), 1);
    ck_assert_int_eq(dl_plan_ctas_per_sm(smem_sm, 116000, 0), 1);
    ck_assert_int_eq(dl_plan_ctas_per_sm(smem_sm, 115712, 0), 2);
    /* clamped to 1..4: a tiny CTA, and one that fits nowhere */
    ck_assert_int_eq(dl_plan_ctas_per_sm(smem_sm, 1024, 0), 4);
    ck_assert_int_eq(dl_plan_ctas_per_sm(smem_sm, 300000, 0), 1);
}
END_TEST

/* A chained layer's pad: no SM may hold more of the plan's CTAs than ceil(ctas / sms), with room kept beside them. */
static void check_chain_pad(int smem_sm, int smem_cta, int occ, int ctas, int sms, int want_cap)
{
    const int pad = dl_plan_chain_pad(smem_sm, smem_cta, occ, ctas, sms);
    int fit = smem_sm / (smem_cta + 1024);
    if (occ > 0 && occ < fit) fit = occ;
    if (want_cap == 0) { /* no more fit than the plan's: no pad */
        ck_assert_int_eq(pad, 0);
        return;
    }
    ck_assert_int_gt(pad, 0);
    const int padded = smem_cta + pad + 1024;
    ck_assert_int_le(want_cap * padded, smem_sm);        /* the plan's CTAs still fit an SM */
    ck_assert_int_gt((want_cap + 1) * padded, smem_sm);  /* one more does not */
    ck_assert_int_lt(want_cap, fit);                     /* and one more did before */
    ck_assert_int_le(smem_cta + pad, smem_sm - 1024);    /* a launchable CTA */
    ck_assert_int_ge(smem_sm - want_cap * padded, 7 * 1024); /* a merge CTA (6-7 KB + the reserve) fits beside */
}

START_TEST(test_chain_pad)
{
    const int smem_sm = 233472; /* 228 KB an SM, as the H100 and H200 */
    /* group 16 (the hw policy's 2 x 3 kernel, 99,448 bytes, 2 fit) planned at 1 CTA an SM: B128 L4096 and B4
     * L32768 plan 132 CTAs on 132 SMs (thirty-seventh session): held to 1 */
    check_chain_pad(smem_sm, 99448, 2, 132, 132, 1);
    ck_assert_int_eq(dl_plan_chain_pad(smem_sm, 99448, 2, 132, 132), 16265); /* 233472 / 2 - 1024 - 99448 + 1 */
    /* the tile rings at 2 an SM where 2 fit: nothing to hold */
    check_chain_pad(smem_sm, 99448, 2, 264, 132, 0);
    /* registers bind at the plan's count already: no pad */
    check_chain_pad(smem_sm, 99448, 1, 132, 132, 0);
    /* the two-head stage (50,224 bytes, 4 fit) at 2 an SM (DL_STREAM_CTAS_PER_SM=2): held to 2 (the measured pad was
     * 30 KB: 2 of 80 KB fit, 3 do not) */
    check_chain_pad(smem_sm, 50224, 4, 264, 132, 2);
    /* at 4 an SM (its own plan): full, nothing to hold */
    check_chain_pad(smem_sm, 50224, 4, 528, 132, 0);
    /* a plan short of whole SMs (100 CTAs on 132) counts 1 an SM; one over a wave (133) 2 */
    check_chain_pad(smem_sm, 50224, 4, 100, 132, 1);
    check_chain_pad(smem_sm, 50224, 4, 133, 132, 2);
    /* more than a wave: no cap; degenerate inputs: none */
    check_chain_pad(smem_sm, 99448, 2, 400, 132, 0);
    ck_assert_int_eq(dl_plan_chain_pad(0, 99448, 2, 132, 132), 0);
    ck_assert_int_eq(dl_plan_chain_pad(smem_sm, 99448, 2, 0, 132), 0);
    ck_assert_int_eq(dl_plan_chain_pad(smem_sm, 99448, 2, 132, 0), 0);
}
END_TEST

START_TEST(test_wave_ctas)
{
    /* B1 L32768 (4096 tiles), 3 warps, 132 SMs x 2: min_tiles 6 gives 228 CTAs -> 264 */
    ck_assert_int_eq(dl_plan_wave_ctas(4096, 3, 132, 264, 6), 264);
    /* min_tiles 16: 86 CTAs -> one wave */
    ck_assert_int_eq(dl_plan_wave_ctas(4096, 3, 132, 264, 16), 132);
    /* fp8-none-wgmma (2 warpgroups a CTA) min_tiles 16: 128 -> 132; min 8: 256 -> 264 */
    ck_assert_int_eq(dl_plan_wave_ctas(4096, 2, 132, 264, 16), 132);
    ck_assert_int_eq(dl_plan_wave_ctas(4096, 2, 132, 264, 8), 264);
    /* already full (B4 L32768: 16384 tiles) or already whole waves: no change */
    ck_assert_int_eq(dl_plan_wave_ctas(16384, 3, 132, 264, 6), 0);
    ck_assert_int_eq(dl_plan_wave_ctas(132 * 3 * 4, 3, 132, 264, 4), 0);
    /* under half a wave (a small case): left to min_tiles; just over half: up to one wave */
    ck_assert_int_eq(dl_plan_wave_ctas(100, 3, 132, 264, 4), 0);
    ck_assert_int_eq(dl_plan_wave_ctas(66 * 3 * 4, 3, 132, 264, 4), 132);
    ck_assert_int_eq(dl_plan_wave_ctas(65 * 3 * 4, 3, 132, 264, 4), 0);
    /* a rounded count builds a plan of exactly that many CTAs, every slot busy */
    const int32_t len[1] = {32768};
    dl_plan p;
    ck_assert_int_eq(dl_plan_build(1, 8, len, 64, 3, dl_plan_wave_ctas(4096, 3, 132, 264, 6), 1, &p), 0);
    ck_assert_int_eq(p.ctas, 264);
    ck_assert_int_eq(p.num_slots, 792);
    dl_plan_free(&p);
    check_plan(1, 8, len, 64, 3, 264, 1);
    /* dl_plan_build_waves: a split plan is rounded, a plan of whole tasks kept (B64 L1024, 16 tiles a
     * task, 2 warpgroups, min_tiles 16: 256 CTAs of whole tasks), and waves 0 keeps either */
    ck_assert_int_eq(dl_plan_build_waves(1, 8, len, 64, 3, 132, 264, 6, 1, 0, 1, DL_ORDER_TASKS, 0, &p), 0);
    ck_assert_int_eq(p.ctas, 264);
    ck_assert_int_gt(dl_plan_max_task_segs(&p), 1);
    dl_plan_free(&p);
    ck_assert_int_eq(dl_plan_build_waves(1, 8, len, 64, 3, 132, 264, 6, 0, 0, 1, DL_ORDER_TASKS, 0, &p), 0);
    ck_assert_int_eq(p.ctas, 228);
    dl_plan_free(&p);
    int32_t len64[64];
    for (int b = 0; b < 64; b++) len64[b] = 1024;
    ck_assert_int_eq(dl_plan_build_waves(64, 8, len64, 64, 2, 132, 264, 16, 1, 0, 1, DL_ORDER_TASKS, 0, &p), 0);
    ck_assert_int_eq(p.ctas, 256);
    ck_assert_int_eq(dl_plan_max_task_segs(&p), 1);
    dl_plan_free(&p);
    /* bad arguments: no change */
    ck_assert_int_eq(dl_plan_wave_ctas(0, 3, 132, 264, 6), 0);
    ck_assert_int_eq(dl_plan_wave_ctas(4096, 3, 0, 264, 6), 0);
}
END_TEST

/* dl_plan_build_pool: the static slots cover the first tiles evenly, the pool slots the rest in
 * chunks, every tile once, each task's segments in token order (B4 L32768 and a ragged batch) */
START_TEST(test_pool)
{
    int32_t len[5] = {32768, 32768, 32768, 32768, 0};
    const int32_t ragged[5] = {1, 700, 64, 4097, 33};
    for (int c = 0; c < 2; c++) {
        const int32_t *L = c ? ragged : len;
        const int B = c ? 5 : 4, Hkv = c ? 2 : 8;
        dl_plan p;
        ck_assert_int_eq(dl_plan_build_pool(B, Hkv, L, 64, 3, 264, 1, 10, 2, DL_ORDER_TASKS, 0, &p), 0);
        const views v = view_of(&p);
        int64_t N = 0;
        for (int b = 0; b < B; b++) N += (int64_t)Hkv * ((L[b] + 63) / 64);
        const int64_t Np = N * 10 / 100;
        ck_assert_int_eq(p.num_static, p.ctas * 3);
        ck_assert_int_eq(p.num_slots, p.num_static + (Np + 1) / 2);
        int64_t *first = calloc((size_t)p.num_tasks + 1, sizeof(int64_t));
        for (int t = 0; t < p.num_tasks; t++) first[t + 1] = first[t] + (L[t / Hkv] + 63) / 64;
        int *hit = calloc((size_t)N, sizeof(int));
        int64_t smin = N, smax = 0, pooled = 0;
        for (int s = 0; s < p.num_slots; s++) {
            int64_t size = 0;
            for (int k = v.slot_ptr[s]; k < v.slot_ptr[s + 1]; k++) {
                for (int tl = v.seg_t0[k]; tl < v.seg_t1[k]; tl++) hit[first[v.seg_task[k]] + tl]++;
                size += v.seg_t1[k] - v.seg_t0[k];
            }
            if (s < p.num_static) {
                if (size < smin) smin = size;
                if (size > smax) smax = size;
            } else {
                if (s < p.num_slots - 1) ck_assert_int_eq(size, 2);
                else ck_assert_int_ge(size, 1);
                pooled += size;
            }
        }
        ck_assert_int_eq(pooled, Np);
        ck_assert_int_eq(p.buf[p.buf_len - 2], 0); /* the pool's claim and done counts start at zero */
        ck_assert_int_eq(p.buf[p.buf_len - 1], 0);
        ck_assert_int_le(smax - smin, 1);
        for (int64_t i = 0; i < N; i++) ck_assert_int_eq(hit[i], 1);
        for (int t = 0; t < p.num_tasks; t++) { /* the schedule: from token 0, in token order */
            const int64_t k0 = p.sched_indptr[t], k1 = p.sched_indptr[t + 1];
            ck_assert_int_lt(k0, k1);
            ck_assert_int_eq(p.sched_begin[k0], 0);
            for (int64_t k = k0 + 1; k < k1; k++) ck_assert_int_gt(p.sched_begin[k], p.sched_begin[k - 1]);
            ck_assert_int_lt(p.sched_begin[k1 - 1], L[t / Hkv]);
        }
        free(first);
        free(hit);
        dl_plan_free(&p);
    }
    /* pool 0 is dl_plan_build's plan; bad pool arguments are refused */
    dl_plan a, b;
    ck_assert_int_eq(dl_plan_build(4, 8, len, 64, 3, 264, 6, &a), 0);
    ck_assert_int_eq(dl_plan_build_pool(4, 8, len, 64, 3, 264, 6, 0, 1, DL_ORDER_TASKS, 0, &b), 0);
    ck_assert_uint_eq(a.buf_len, b.buf_len);
    ck_assert_int_eq(memcmp(a.buf, b.buf, a.buf_len * sizeof(int32_t)), 0);
    ck_assert_int_eq(b.num_static, b.num_slots);
    dl_plan_free(&a);
    dl_plan_free(&b);
    ck_assert_int_ne(dl_plan_build_pool(4, 8, len, 64, 3, 264, 6, 51, 1, DL_ORDER_TASKS, 0, &a), 0);
    ck_assert_int_ne(dl_plan_build_pool(4, 8, len, 64, 3, 264, 6, 10, 0, DL_ORDER_TASKS, 0, &a), 0);
    ck_assert_int_ne(dl_plan_build_pool(4, 8, len, 64, 3, 264, 6, 10, 2, DL_ORDER_HEADS, 0, &a), 0); /* no pool */
    ck_assert_int_ne(dl_plan_build_pool(4, 8, len, 64, 3, 264, 6, 0, 1, 2, 0, &a), 0);
    ck_assert_int_ne(dl_plan_build_pool(4, 8, len, 64, 3, 264, 6, 0, 1, -2, 0, &a), 0);
}
END_TEST

/* The heads order (attempt #24): llama3-8B B128 L4096 on 264 CTAs x 3 warps is 99 runs of 82-83 tiles
 * per head, every slot used; llama-13B's 40 KV heads take 19 runs of 40 slots (760 of 792 used); fewer
 * slots than heads fall back to the tasks order; auto picks heads only where no slot is left empty; the
 * knob's values parse, others are refused. */
START_TEST(test_heads_order)
{
    static int32_t len[128];
    for (int b = 0; b < 128; b++) len[b] = 4096;
    dl_plan p;
    ck_assert_int_eq(dl_plan_build_pool(128, 8, len, 64, 3, 264, 4, 0, 1, DL_ORDER_HEADS, 0, &p), 0);
    ck_assert_int_eq(p.order, DL_ORDER_HEADS);
    ck_assert_int_eq(p.num_slots, 792);
    ck_assert_int_eq(check_built(&p, 128, 8, len, 64, 3, 264), 83); /* 8192 tiles a head / 99 runs */
    dl_plan_free(&p);
    ck_assert_int_eq(dl_plan_build_pool(64, 40, len, 64, 3, 264, 4, 0, 1, DL_ORDER_HEADS, 0, &p), 0);
    const views v = view_of(&p);
    ck_assert_int_eq(v.slot_ptr[760], p.num_segs); /* slots 760.. empty */
    ck_assert_int_lt(v.slot_ptr[759], p.num_segs);
    check_built(&p, 64, 40, len, 64, 3, 264);
    dl_plan_free(&p);
    /* the walk taken for (B, Hkv, CTAs, pool %, order asked): fewer slots than heads fall back to tasks;
     * auto takes heads where every slot gets a run (B128: 792 slots = 99 x 8), with a group of heads where the
     * slots and heads share a factor of 2 or more (13B: 792 = 99 x 8, groups of 8 of its 40 heads; 393 slots and 8
     * heads share none: tasks), else tasks (any pool) */
    const struct { int B, Hkv, ctas, pool, ask, want, group; } cases[] = {
        {2, 8, 1, 0, DL_ORDER_HEADS, DL_ORDER_TASKS, 0}, /* 3 slots */
        {128, 8, 264, 0, DL_ORDER_AUTO, DL_ORDER_HEADS, 0},
        {64, 40, 264, 0, DL_ORDER_AUTO, DL_ORDER_HEADS, 8},
        {64, 8, 131, 0, DL_ORDER_AUTO, DL_ORDER_TASKS, 0},
        {128, 8, 264, 10, DL_ORDER_AUTO, DL_ORDER_TASKS, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(dl_plan_build_pool(cases[i].B, cases[i].Hkv, len, 64, 3, cases[i].ctas, 4, cases[i].pool, 2,
                                            cases[i].ask, 0, &p), 0);
        ck_assert_int_eq(p.order, cases[i].want);
        ck_assert_int_eq(p.head_group, cases[i].group);
        if (!cases[i].pool) check_built(&p, cases[i].B, cases[i].Hkv, len, 64, 3, cases[i].ctas);
        dl_plan_free(&p);
    }
    int order = -2;
    ck_assert_int_eq(dl_plan_order_of(NULL, &order), 0);
    ck_assert_int_eq(order, DL_ORDER_AUTO);
    ck_assert_int_eq(dl_plan_order_of("auto", &order), 0);
    ck_assert_int_eq(order, DL_ORDER_AUTO);
    ck_assert_int_eq(dl_plan_order_of("heads", &order), 0);
    ck_assert_int_eq(order, DL_ORDER_HEADS);
    ck_assert_int_eq(dl_plan_order_of("tasks", &order), 0);
    ck_assert_int_eq(order, DL_ORDER_TASKS);
    ck_assert_int_ne(dl_plan_order_of("head", &order), 0);
}
END_TEST

/* Head groups (attempt #67, DL_PLAN_HEAD_GROUP): llama-13B's 40 KV heads on 396 warps (132 CTAs x 3) take the
 * tasks order with all the heads asked for; with 4 (asked, or auto's: gcd(396, 40)) every warp gets a run of 4
 * heads side by side (99 runs) and auto takes the heads order, auto's plan word for word the asked one's; a group
 * of all the heads is the default's plan where the slots are a multiple of them; groups of 1 and 2 on ragged
 * lengths with the cost and apportioned cuts keep every tile once and every task in token order; a group that does
 * not divide the heads, or past the field, is refused. */
START_TEST(test_head_groups)
{
    static int32_t len[128], ragged[50];
    for (int b = 0; b < 128; b++) len[b] = 1024;
    for (int b = 0; b < 50; b++) ragged[b] = 1 + (b * 977) % 3000;
    dl_plan p, q;
    ck_assert_int_eq(dl_plan_build_pool(64, 40, len, 64, 3, 132, 4, 0, 1, DL_ORDER_AUTO, DL_PLAN_HEAD_GROUP(40), &p), 0);
    ck_assert_int_eq(p.order, DL_ORDER_TASKS);
    ck_assert_int_eq(p.head_group, 0);
    dl_plan_free(&p);
    ck_assert_int_eq(dl_plan_build_pool(64, 40, len, 64, 3, 132, 4, 0, 1, DL_ORDER_AUTO, 0, &q), 0);
    ck_assert_int_eq(q.order, DL_ORDER_HEADS);
    ck_assert_int_eq(q.head_group, 4);
    ck_assert_int_eq(dl_plan_build_pool(64, 40, len, 64, 3, 132, 4, 0, 1, DL_ORDER_AUTO, DL_PLAN_HEAD_GROUP(4), &p), 0);
    ck_assert_uint_eq(p.buf_len, q.buf_len);
    ck_assert_int_eq(memcmp(p.buf, q.buf, p.buf_len * sizeof(int32_t)), 0);
    dl_plan_free(&q);
    ck_assert_int_eq(p.order, DL_ORDER_HEADS);
    ck_assert_int_eq(p.head_group, 4);
    ck_assert_int_eq(p.num_slots, 396);
    ck_assert_int_eq(check_built(&p, 64, 40, len, 64, 3, 132), 104); /* 16 tiles x 64 requests x 10 groups / 99 */
    {
        const views v = view_of(&p); /* slot 5 = run 1, head 1 of its group: group 0's heads until the walk passes 1024 */
        ck_assert_int_eq(v.seg_task[v.slot_ptr[5]] % 40, 1);
        ck_assert_int_eq(v.seg_task[v.slot_ptr[4]] + 1, v.seg_task[v.slot_ptr[5]]);
        ck_assert_int_eq(v.seg_task[v.slot_ptr[395 + 1] - 1] % 40, 39); /* the last run ends in the last group */
    }
    dl_plan_free(&p);
    /* a group of all 8 heads: the default's plan, buffer and schedule alike */
    ck_assert_int_eq(dl_plan_build_pool(128, 8, len, 64, 3, 264, 4, 0, 1, DL_ORDER_AUTO, 4, &p), 0);
    ck_assert_int_eq(dl_plan_build_pool(128, 8, len, 64, 3, 264, 4, 0, 1, DL_ORDER_AUTO, 4 | DL_PLAN_HEAD_GROUP(8), &q), 0);
    ck_assert_int_eq(p.order, DL_ORDER_HEADS);
    ck_assert_int_eq(q.head_group, 0);
    ck_assert_uint_eq(p.buf_len, q.buf_len);
    ck_assert_int_eq(memcmp(p.buf, q.buf, p.buf_len * sizeof(int32_t)), 0);
    ck_assert_int_eq(memcmp(p.sched_begin, q.sched_begin, (size_t)p.num_segs * sizeof(int64_t)), 0);
    dl_plan_free(&p);
    dl_plan_free(&q);
    /* ragged, groups of 1 and 2 of 8 heads, equal, cost and apportioned cuts */
    const int cuts[] = {0, 4, DL_PLAN_APPORTION};
    for (int g = 1; g <= 2; g++)
        for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
            ck_assert_int_eq(dl_plan_build_pool(50, 8, ragged, 64, 3, 264, 1, 0, 1, DL_ORDER_HEADS,
                                                cuts[c] | DL_PLAN_HEAD_GROUP(g), &p), 0);
            ck_assert_int_eq(p.order, DL_ORDER_HEADS);
            ck_assert_int_eq(p.head_group, g);
            check_built_tol(&p, 50, 8, ragged, 64, 3, 264, 1 << 20);
            dl_plan_free(&p);
        }
    ck_assert_int_ne(dl_plan_build_pool(64, 40, len, 64, 3, 132, 4, 0, 1, DL_ORDER_AUTO, DL_PLAN_HEAD_GROUP(3), &p), 0);
    ck_assert_int_ne(dl_plan_build_pool(64, 40, len, 64, 3, 132, 4, 0, 1, DL_ORDER_AUTO, 1 << 26, &p), 0);
}
END_TEST

/* The whole-page stage's condition (dl_plan_ctas_share_tiles): a heads plan with 8 warps a CTA for 8 KV heads
 * holds (llama3-8B B128 L4096 on 132 CTAs; ragged lengths 1..1000; one request of one tile), the same requests in
 * the tasks order, with 3 warps a CTA, or with a pool do not, and one segment moved by a tile breaks it. */
START_TEST(test_ctas_share_tiles)
{
    static int32_t len[128];
    for (int b = 0; b < 128; b++) len[b] = 4096;
    const int32_t ragged[11] = {1, 2, 15, 16, 17, 31, 32, 33, 100, 257, 1000}, one[1] = {10};
    dl_plan p;
    ck_assert_int_eq(dl_plan_build_pool(128, 8, len, 64, 8, 132, 4, 0, 1, DL_ORDER_HEADS, 0, &p), 0);
    ck_assert_int_eq(p.ctas, 132);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 8), 1);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 4), 0); /* 8 warps a CTA, not 4 */
    const views v = view_of(&p);
    int32_t *t1 = (int32_t *)v.seg_t1;
    t1[v.slot_ptr[5]] -= 1; /* slot 5 (CTA 0, head 5) ends its first segment a tile early */
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 8), 0);
    dl_plan_free(&p);
    ck_assert_int_eq(dl_plan_build_pool(11, 8, ragged, 64, 8, 132, 4, 0, 1, DL_ORDER_HEADS, 0, &p), 0);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 8), 1);
    check_built(&p, 11, 8, ragged, 64, 8, 132);
    dl_plan_free(&p);
    ck_assert_int_eq(dl_plan_build_pool(1, 8, one, 64, 8, 132, 1, 0, 1, DL_ORDER_HEADS, 0, &p), 0);
    ck_assert_int_eq(p.ctas, 1);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 8), 1);
    dl_plan_free(&p);
    ck_assert_int_eq(dl_plan_build_pool(128, 8, len, 64, 8, 132, 4, 0, 1, DL_ORDER_TASKS, 0, &p), 0);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 8), 0);
    dl_plan_free(&p);
    ck_assert_int_eq(dl_plan_build_pool(128, 8, len, 64, 3, 264, 4, 0, 1, DL_ORDER_HEADS, 0, &p), 0);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 8), 0); /* 3 warps a CTA */
    dl_plan_free(&p);
    ck_assert_int_eq(dl_plan_build_pool(128, 8, len, 64, 8, 132, 4, 10, 2, DL_ORDER_AUTO, 0, &p), 0);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 8), 0); /* a pool */
    dl_plan_free(&p);
    /* head groups of 2 (the two-head page stage, DL_STREAM_STAGE=page2): 2 warps a CTA hold, ragged too, and
     * groups of 4 on 2 warps a CTA (each CTA two heads of a group's run); the same plan asked of 4 warps, or groups of
     * one head (each slot a run of its own), do not */
    ck_assert_int_eq(dl_plan_build_pool(4, 8, len, 64, 2, 528, 4, 0, 1, DL_ORDER_HEADS, DL_PLAN_HEAD_GROUP(2), &p), 0);
    ck_assert_int_eq(p.head_group, 2);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 2), 1);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 4), 0);
    dl_plan_free(&p);
    ck_assert_int_eq(dl_plan_build_pool(11, 8, ragged, 64, 2, 528, 1, 0, 1, DL_ORDER_HEADS, DL_PLAN_HEAD_GROUP(2), &p),
                     0);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 2), 1);
    check_built(&p, 11, 8, ragged, 64, 2, 528);
    dl_plan_free(&p);
    ck_assert_int_eq(dl_plan_build_pool(4, 8, len, 64, 2, 528, 4, 0, 1, DL_ORDER_HEADS, DL_PLAN_HEAD_GROUP(4), &p), 0);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 2), 1); /* a group's 4 heads over two CTAs, 2 and 2 */
    dl_plan_free(&p);
    ck_assert_int_eq(dl_plan_build_pool(4, 8, len, 64, 2, 528, 4, 0, 1, DL_ORDER_HEADS, DL_PLAN_HEAD_GROUP(1), &p), 0);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 2), 0); /* one head a run: a CTA's two warps on different runs */
    dl_plan_free(&p);
}
END_TEST

/* The most a CTA's run costs in the heads order: its tiles (slot c * warps's) plus seg_cost for each segment
 * past its first (a request boundary inside the run); every CTA's run non-empty. */
static int64_t max_run_cost(const dl_plan *p, int warps, int seg_cost)
{
    const int32_t *slot_ptr = p->buf, *t0 = slot_ptr + p->num_slots + 1 + p->num_segs, *t1 = t0 + p->num_segs;
    int64_t most = 0;
    for (int c = 0; c < p->ctas; c++) {
        const int s = c * warps, n = slot_ptr[s + 1] - slot_ptr[s];
        ck_assert_int_ge(n, 1);
        int64_t tiles = 0;
        for (int k = slot_ptr[s]; k < slot_ptr[s + 1]; k++) tiles += t1[k] - t0[k];
        const int64_t cost = tiles + (int64_t)seg_cost * (n - 1);
        most = cost > most ? cost : most;
    }
    return most;
}

/* DL_STREAM_SEG_COST (attempt #30): the page stage's plan at the llama3-70B shape (64 requests of 4096 tokens, 8 KV
 * heads, 8 warps a CTA, 132 SMs) and on ragged lengths: still a plan whose CTAs' warps share their tiles, every tile
 * once (check_built), every CTA with work; with a cost of 4 tiles per boundary the costliest run costs the least any
 * cut can (32 tiles, no boundary inside), and the equal cut (cost 0) is r * U / runs as before. */
START_TEST(test_seg_cost_heads_plan)
{
    static int32_t len[64], ragged[64];
    for (int b = 0; b < 64; b++) len[b] = 4096, ragged[b] = 1 + (b * 2654435761u) % 9000;
    dl_plan p0, p4;
    ck_assert_int_eq(dl_plan_build_waves(64, 8, len, 64, 8, 132, 132, 4, 1, 0, 1, DL_ORDER_HEADS, 0, &p0), 0);
    ck_assert_int_eq(dl_plan_build_waves(64, 8, len, 64, 8, 132, 132, 4, 1, 0, 1, DL_ORDER_HEADS, 4, &p4), 0);
    ck_assert_int_eq(p0.cut, DL_CUT_EQUAL);
    ck_assert_int_eq(p4.cut, DL_CUT_COST);
    ck_assert_int_eq(p4.seg_cost, 4);
    for (int i = 0; i < 2; i++) {
        const dl_plan *p = i ? &p4 : &p0;
        ck_assert_int_eq(p->ctas, 132);
        ck_assert_int_eq(dl_plan_ctas_share_tiles(p, 8), 1);
        check_built_tol(p, 64, 8, len, 64, 8, 132, i ? 16 : 1); /* cost 4: runs of 32 and 16 tiles (below) */
    }
    /* cost 0: runs of 31 or 32 tiles (4096 over 132), r * U / runs */
    const int32_t *sp0 = p0.buf, *t00 = sp0 + p0.num_slots + 1 + p0.num_segs, *t10 = t00 + p0.num_segs;
    for (int c = 0; c < 132; c++) {
        int64_t tiles = 0;
        for (int k = sp0[8 * c]; k < sp0[8 * c + 1]; k++) tiles += t10[k] - t00[k];
        ck_assert_int_eq(tiles, (int64_t)(c + 1) * 4096 / 132 - (int64_t)c * 4096 / 132);
    }
    /* counted at 4 tiles a boundary: the equal cut's crossing runs of 31 tiles cost 35; cost 4 cuts at the requests'
     * starts (two runs of 32 tiles a request, four requests' runs halved again), the least possible: 32 tiles */
    ck_assert_int_eq(max_run_cost(&p0, 8, 4), 35);
    ck_assert_int_eq(max_run_cost(&p4, 8, 4), 32);
    ck_assert_int_eq(max_run_cost(&p4, 8, 0), 32);
    dl_plan_free(&p0);
    dl_plan_free(&p4);
    /* ragged: still a whole plan, every CTA with work, and its costliest run, counted at the plan's cost, no
     * costlier than the equal cut's counted the same way (the bisection's bound is the least any cut reaches) */
    ck_assert_int_eq(dl_plan_build_pool(64, 8, ragged, 64, 8, 132, 1, 0, 1, DL_ORDER_HEADS, 0, &p0), 0);
    for (int cost = 0; cost <= DL_PLAN_MAX_SEG_COST; cost += 8) {
        ck_assert_int_eq(dl_plan_build_pool(64, 8, ragged, 64, 8, 132, 1, 0, 1, DL_ORDER_HEADS, cost, &p4), 0);
        ck_assert_int_eq(dl_plan_ctas_share_tiles(&p4, 8), 1);
        check_built_tol(&p4, 64, 8, ragged, 64, 8, 132, 1 + (int64_t)cost * 64); /* coverage; balance by cost */
        ck_assert_int_le(max_run_cost(&p4, 8, cost), max_run_cost(&p0, 8, cost));
        dl_plan_free(&p4);
    }
    dl_plan_free(&p0);
    ck_assert_int_ne(dl_plan_build_pool(64, 8, len, 64, 8, 132, 1, 0, 1, DL_ORDER_HEADS, -1, &p4), 0);
    ck_assert_int_ne(dl_plan_build_pool(64, 8, len, 64, 8, 132, 1, 0, 1, DL_ORDER_HEADS, DL_PLAN_MAX_SEG_COST + 1, &p4), 0);
}
END_TEST

/* The longest run of a heads plan (slot c * warps's tiles), and whether any run crosses a request boundary (holds
 * more than one segment). */
static int64_t longest_run(const dl_plan *p, int warps, int *crosses)
{
    const int32_t *slot_ptr = p->buf, *t0 = slot_ptr + p->num_slots + 1 + p->num_segs, *t1 = t0 + p->num_segs;
    int64_t most = 0;
    *crosses = 0;
    for (int c = 0; c < p->ctas; c++) {
        const int s = c * warps;
        int64_t tiles = 0;
        for (int k = slot_ptr[s]; k < slot_ptr[s + 1]; k++) tiles += t1[k] - t0[k];
        if (slot_ptr[s + 1] - slot_ptr[s] > 1) *crosses = 1;
        most = tiles > most ? tiles : most;
    }
    return most;
}

/* DL_STREAM_APPORTION (attempt #31): with at least as many runs as requests, no run crosses a request boundary
 * and the longest is the highest-averages bound; at the 70B shape 60 requests get two runs of 32 tiles and four
 * get three of 21-22 (the cost-4 cut gives eight CTAs 16 tiles instead); at B4 L32768 runs of 15-16 tiles (the
 * cost-4 cut: 8 and 16); with fewer runs than requests (B256 L4096) the cost's cut, unchanged. */
START_TEST(test_apportioned_heads_plan)
{
    static int32_t len[256], ragged[100];
    int crosses = 0;
    dl_plan p, q;
    for (int b = 0; b < 256; b++) len[b] = 4096;
    ck_assert_int_eq(dl_plan_build_pool(64, 8, len, 64, 8, 132, 1, 0, 1, DL_ORDER_HEADS, DL_PLAN_APPORTION, &p), 0);
    ck_assert_int_eq(p.cut, DL_CUT_APPORTION);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 8), 1);
    check_built_tol(&p, 64, 8, len, 64, 8, 132, 11); /* runs of 32 and 21 */
    ck_assert_int_eq(longest_run(&p, 8, &crosses), 32);
    ck_assert_int_eq(crosses, 0);
    const int32_t *t0 = p.buf + p.num_slots + 1 + p.num_segs, *t1 = t0 + p.num_segs;
    int n32 = 0;
    for (int c = 0; c < 132; c++) { /* slot 8c, the CTA's head 0: one segment (no crossing), 32 tiles or fewer */
        const int k = p.buf[8 * c];
        n32 += t1[k] - t0[k] == 32;
    }
    ck_assert_int_eq(n32, 120); /* 60 requests x 2 runs of 32 */
    dl_plan_free(&p);
    for (int b = 0; b < 4; b++) len[b] = 32768;
    ck_assert_int_eq(dl_plan_build_pool(4, 8, len, 64, 8, 132, 1, 0, 1, DL_ORDER_HEADS, DL_PLAN_APPORTION, &p), 0);
    check_built(&p, 4, 8, len, 64, 8, 132);
    ck_assert_int_eq(longest_run(&p, 8, &crosses), 16);
    ck_assert_int_eq(crosses, 0);
    dl_plan_free(&p);
    for (int b = 0; b < 256; b++) len[b] = 4096; /* fewer runs (132) than requests (256): the cost's cut */
    ck_assert_int_eq(dl_plan_build_pool(256, 8, len, 64, 8, 132, 1, 0, 1, DL_ORDER_HEADS, 4 | DL_PLAN_APPORTION, &p), 0);
    ck_assert_int_eq(dl_plan_build_pool(256, 8, len, 64, 8, 132, 1, 0, 1, DL_ORDER_HEADS, 4, &q), 0);
    ck_assert_int_eq(p.cut, DL_CUT_COST); /* the fallback, said so */
    ck_assert_int_eq(p.num_segs, q.num_segs);
    ck_assert_mem_eq(p.buf, q.buf, p.buf_len * sizeof(int32_t));
    dl_plan_free(&p);
    dl_plan_free(&q);
    /* ragged, 100 requests of 1..9000 tokens over 132 runs: whole, no crossing, and the longest run no longer than
     * that request's tiles over its share: ceil(tiles / k) with k >= 1 runs, at most the longest request's tiles */
    int64_t most_tiles = 0;
    for (int b = 0; b < 100; b++) {
        ragged[b] = 1 + (b * 2654435761u) % 9000;
        const int64_t t = (ragged[b] + 63) / 64;
        most_tiles = t > most_tiles ? t : most_tiles;
    }
    ck_assert_int_eq(dl_plan_build_pool(100, 8, ragged, 64, 8, 132, 1, 0, 1, DL_ORDER_HEADS, DL_PLAN_APPORTION, &p), 0);
    ck_assert_int_eq(dl_plan_ctas_share_tiles(&p, 8), 1);
    check_built_tol(&p, 100, 8, ragged, 64, 8, 132, most_tiles);
    ck_assert_int_le(longest_run(&p, 8, &crosses), most_tiles);
    ck_assert_int_eq(crosses, 0);
    dl_plan_free(&p);
    ck_assert_int_ne(dl_plan_build_pool(4, 8, len, 64, 8, 132, 1, 0, 1, DL_ORDER_HEADS, 0x2000, &p), 0); /* unknown bit */
}
END_TEST

/* A slot's work as the streaming kernels run it (attempt #44): its tokens, and its 64-token tiles, taken from each
 * segment's first token (the plan's units [t0, t1) of `unit` tokens, the last ending at the sequence's end). */
static void slot_work(const dl_plan *p, int Hkv, const int32_t *len, int s, int64_t *tokens, int64_t *tiles64)
{
    const views v = view_of(p);
    *tokens = *tiles64 = 0;
    for (int k = v.slot_ptr[s]; k < v.slot_ptr[s + 1]; k++) {
        const int64_t end = (int64_t)v.seg_t1[k] * p->tile, l = len[v.seg_task[k] / Hkv];
        const int64_t n = (end < l ? end : l) - (int64_t)v.seg_t0[k] * p->tile;
        *tokens += n;
        *tiles64 += (n + 63) / 64;
    }
}

/* The plan cut at pages (DL_STREAM_UNIT=16, attempt #44) against the cut at tiles, heads order, equal runs, on
 * 264 CTAs x 3 warps (99 runs of 8 heads): a whole plan either way (check_built in units); the costliest slot
 * holds ceil(units a head / 99) units, so its tokens fall from 6 tiles (384) to 21 units (336) at llama3-8B B1
 * L32768 and from 11 tiles (704) to 42 units (672) at B64 L1024 (equal runs), while its 64-token tiles of compute
 * stay 6 at B1 and may rise at B64 (a segment's last tile partial, below); at B1 the kernel's CTA count is the same
 * with min_tiles x 4 as the unit. */
START_TEST(test_unit_cut)
{
    static int32_t len1[1] = {32768}, len64[64];
    for (int b = 0; b < 64; b++) len64[b] = 1024;
    const struct { int B; const int32_t *len; int64_t u64, u16; } cases[] = {
        {1, len1, 512, 2048},
        {64, len64, 1024, 4096},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t most_tok[2] = {0, 0}, most_tiles[2] = {0, 0}, sum_tok[2] = {0, 0};
        for (int u = 0; u < 2; u++) {
            const int unit = u ? 16 : 64;
            dl_plan p;
            ck_assert_int_eq(dl_plan_build_pool(cases[i].B, 8, cases[i].len, unit, 3, 264, 1, 0, 1, DL_ORDER_HEADS,
                                                0, &p), 0);
            ck_assert_int_eq(p.tile, unit);
            ck_assert_int_eq(p.num_slots, 792);
            const int64_t units = u ? cases[i].u16 : cases[i].u64, want = (units + 98) / 99;
            ck_assert_int_eq(check_built(&p, cases[i].B, 8, cases[i].len, unit, 3, 264), want);
            for (int s = 0; s < p.num_slots; s++) {
                int64_t tok, t64;
                slot_work(&p, 8, cases[i].len, s, &tok, &t64);
                sum_tok[u] += tok;
                most_tok[u] = tok > most_tok[u] ? tok : most_tok[u];
                most_tiles[u] = t64 > most_tiles[u] ? t64 : most_tiles[u];
            }
            ck_assert_int_eq(most_tok[u], want * unit); /* whole units: the lengths are multiples of 64 */
            dl_plan_free(&p);
        }
        ck_assert_int_eq(sum_tok[0], (int64_t)cases[i].B * 8 * cases[i].len[0]); /* every token once, either cut */
        ck_assert_int_eq(sum_tok[1], sum_tok[0]);
        ck_assert_int_lt(most_tok[1], most_tok[0]);
        /* compute: at B1 a slot is one segment, ceil(21 / 4) = 6 tiles either way; at B64 a run of 42 units crosses
         * at most one request boundary (64 units a request), two partial tiles: up to ceil(42 / 4) + 1 = 12, which
         * the equal cut reaches (a boundary 1 mod 4 units into a run) where the tile cut's costliest is 11 */
        ck_assert_int_eq(most_tiles[0], (cases[i].u64 + 98) / 99);
        if (cases[i].B == 1) ck_assert_int_eq(most_tiles[1], most_tiles[0]);
        else ck_assert_int_le(most_tiles[1], ((cases[i].u16 + 98) / 99 + 3) / 4 + 1);
    }
    /* with the kernel's default cut where it merges by ticket (4 tiles a request boundary, dl_plan.h #30; 16 units at
     * unit 16) the page cut leaves B64 L1024's costliest slot as it was (the cost cut's runs end at request
     * boundaries, which the tile cut already reaches), and still trims B1's (one request: no boundary) */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t most[2];
        for (int u = 0; u < 2; u++) {
            dl_plan p;
            ck_assert_int_eq(dl_plan_build_pool(cases[i].B, 8, cases[i].len, u ? 16 : 64, 3, 264, 1, 0, 1,
                                                DL_ORDER_HEADS, u ? 16 : 4, &p), 0);
            most[u] = 0;
            for (int s = 0; s < p.num_slots; s++) {
                int64_t tok, t64;
                slot_work(&p, 8, cases[i].len, s, &tok, &t64);
                most[u] = tok > most[u] ? tok : most[u];
            }
            dl_plan_free(&p);
        }
        if (cases[i].B == 1) ck_assert_int_lt(most[1], most[0]);
        else ck_assert_int_eq(most[1], most[0]);
    }
    /* B1 L32768 with the kernel's waves (132 SMs, 2 CTAs each): min_tiles 6 and min 24 units give the same grid */
    dl_plan a, b;
    ck_assert_int_eq(dl_plan_build_waves(1, 8, len1, 64, 3, 132, 264, 6, 1, 0, 1, DL_ORDER_AUTO, 0, &a), 0);
    ck_assert_int_eq(dl_plan_build_waves(1, 8, len1, 16, 3, 132, 264, 24, 1, 0, 1, DL_ORDER_AUTO, 0, &b), 0);
    ck_assert_int_eq(a.ctas, b.ctas);
    ck_assert_int_eq(a.order, b.order);
    dl_plan_free(&a);
    dl_plan_free(&b);
    /* ragged lengths cut at 16: a whole plan, each segment's tokens inside its sequence */
    static int32_t ragged[100];
    for (int r = 0; r < 100; r++) ragged[r] = 1 + (r * 2654435761u) % 3000;
    dl_plan p;
    ck_assert_int_eq(dl_plan_build_pool(100, 8, ragged, 16, 3, 264, 1, 0, 1, DL_ORDER_HEADS, 0, &p), 0);
    check_built(&p, 100, 8, ragged, 16, 3, 264);
    int64_t total = 0;
    for (int s = 0; s < p.num_slots; s++) {
        int64_t tok, t64;
        slot_work(&p, 8, ragged, s, &tok, &t64);
        ck_assert_int_ge(tok, 0);
        total += tok;
    }
    int64_t want = 0;
    for (int r = 0; r < 100; r++) want += 8 * (int64_t)ragged[r];
    ck_assert_int_eq(total, want);
    dl_plan_free(&p);
}
END_TEST

/* The clusters' plan (attempt #61): task t's tiles in the slots of its K clusters of C CTAs alone (slot s holds task
 * s / (K C W)), cut into K C W runs in token order that differ by at most a tile (a slot of none where the task is
 * shorter), the generic invariants (every tile once, partial rows, schedule view, tickets zero); the shape rule; bad
 * arguments. */
static void check_cluster(int B, int Hkv, const int32_t *len, int warps, int C, int K)
{
    dl_plan p;
    ck_assert_int_eq(dl_plan_build_cluster(B, Hkv, len, 64, warps, C, K, &p), 0);
    ck_assert_int_eq(p.cluster, C);
    ck_assert_int_eq(p.cluster_per_task, K);
    ck_assert_int_eq(p.ctas, B * Hkv * K * C);
    check_built_tol(&p, B, Hkv, len, 64, warps, p.ctas, INT32_MAX);
    const views v = view_of(&p);
    const int per = K * C * warps;
    for (int t = 0; t < p.num_tasks; t++) {
        const int64_t n = (len[t / Hkv] + 63) / 64;
        int64_t lo = INT64_MAX, hi = 0;
        for (int i = 0; i < per; i++) {
            const int s = t * per + i;
            int64_t size = 0;
            for (int k = v.slot_ptr[s]; k < v.slot_ptr[s + 1]; k++) {
                ck_assert_int_eq(v.seg_task[k], t);
                size += v.seg_t1[k] - v.seg_t0[k];
            }
            ck_assert_int_le(v.slot_ptr[s + 1] - v.slot_ptr[s], 1);
            lo = size < lo ? size : lo;
            hi = size > hi ? size : hi;
        }
        ck_assert_int_le(hi - lo, 1);
        ck_assert_int_eq(hi, (n + per - 1) / per);
        /* the kernel's view of cluster kc of task t: its segments from slot_ptr, their rows consecutive from the
         * first one's (cluster_merge) */
        for (int kc = 0; kc < K; kc++) {
            const int cid = t * K + kc, ks = v.slot_ptr[cid * C * warps], ke = v.slot_ptr[(cid + 1) * C * warps];
            for (int k = ks; k < ke; k++) {
                ck_assert_int_eq(v.seg_task[k], t);
                if (v.seg_out[k] >= 0) ck_assert_int_eq(v.seg_out[k], v.seg_out[ks] + (k - ks));
            }
        }
    }
    dl_plan_free(&p);
}

/* dl_plan_cluster_shape into c, k; returns c * 100 + k for one assertion a case */
static int shape_of(int B, int Hkv, const int32_t *len, int warps, int max_ctas, int asked)
{
    int c = -1, k = -1;
    ck_assert_int_eq(dl_plan_cluster_shape(B, Hkv, len, 64, warps, max_ctas, asked, &c, &k), 0);
    return c * 100 + k;
}

START_TEST(test_cluster_plan)
{
    int32_t b4[4] = {32768, 32768, 32768, 32768};
    const int32_t b1[1] = {32768};
    int32_t b64[64], b8[8], b16[16];
    for (int b = 0; b < 64; b++) b64[b] = 1024;
    for (int b = 0; b < 8; b++) b8[b] = 16384;
    for (int b = 0; b < 16; b++) b16[b] = 8192;
    /* the shape rule on 132 SMs x 2 CTAs of 2 warps: B4 L32768 (32 tasks) C 8 K 1; B1 (8 tasks) C 8 K 4; B8 L16384
     * C 4 K 1; B16 L8192 C 2 K 1; B64 L1024 (512 tasks) none; three warps: C 8 (24 segments), B1 K 4; asked 16 at
     * B1: K 2; 4 at B4: K 2; a short request caps K (40 tiles over C 8 x 2 warps: K 2); requests of one tile: none */
    ck_assert_int_eq(shape_of(4, 8, b4, 2, 264, 0), 801);
    ck_assert_int_eq(shape_of(1, 8, b1, 2, 264, 0), 804);
    ck_assert_int_eq(shape_of(8, 8, b8, 2, 264, 0), 401);
    ck_assert_int_eq(shape_of(16, 8, b16, 2, 264, 0), 201);
    ck_assert_int_eq(shape_of(64, 8, b64, 2, 264, 0), 0);
    ck_assert_int_eq(shape_of(1, 8, b1, 3, 264, 0), 804);
    ck_assert_int_eq(shape_of(1, 8, b1, 2, 264, 16), 1602);
    ck_assert_int_eq(shape_of(4, 8, b4, 2, 264, 4), 402);
    ck_assert_int_eq(shape_of(4, 8, b4, 2, 264, 16), 1601); /* asked: taken even where it does not all fit */
    const int32_t t40[1] = {40 * 64};
    ck_assert_int_eq(shape_of(1, 8, t40, 2, 264, 0), 802);
    const int32_t tiny[3] = {1, 64, 17};
    ck_assert_int_eq(shape_of(3, 2, tiny, 2, 264, 0), 0);
    ck_assert_int_eq(shape_of(1, 8, b1, 2, 15, 0), 0);
    check_cluster(4, 8, b4, 2, 8, 1);
    check_cluster(1, 8, b1, 2, 8, 4);
    check_cluster(1, 8, b1, 2, 16, 2);
    check_cluster(1, 8, b1, 3, 8, 4);
    /* ragged, with tasks shorter than a task's slots (1 tile: whole, written in place; 5 tiles over 8 slots, or over
     * 16 in two clusters, one of them holding 2) and lengths that are not whole tiles */
    const int32_t ragged[3] = {1, 300, 64 * 40 + 7};
    check_cluster(3, 2, ragged, 2, 4, 1);
    check_cluster(3, 2, ragged, 2, 4, 2);
    dl_plan p;
    ck_assert_int_eq(dl_plan_build_cluster(3, 2, ragged, 64, 2, 4, 1, &p), 0);
    ck_assert_int_eq(p.sched_indptr[1] - p.sched_indptr[0], 1); /* request 0: one tile, one segment */
    ck_assert_int_eq(p.sched_indptr[3] - p.sched_indptr[2], 5); /* request 1: 5 tiles, 5 of the 8 slots */
    ck_assert_int_eq(p.sched_indptr[5] - p.sched_indptr[4], 8); /* request 2: 41 tiles over 8 */
    ck_assert_int_eq(p.num_partials, 2 * (5 + 8));
    dl_plan_free(&p);
    /* refused: a cluster not a power of 2 in 2..16, more than 32 segments a cluster, K out of 1..32, a length < 1 */
    ck_assert_int_ne(dl_plan_build_cluster(4, 8, b4, 64, 2, 3, 1, &p), 0);
    ck_assert(strstr(dl_last_error(), "cluster=3") != NULL);
    ck_assert_int_ne(dl_plan_build_cluster(4, 8, b4, 64, 2, 1, 1, &p), 0);
    ck_assert_int_ne(dl_plan_build_cluster(4, 8, b4, 64, 2, 32, 1, &p), 0);
    ck_assert_int_ne(dl_plan_build_cluster(4, 8, b4, 64, 3, 16, 1, &p), 0);
    ck_assert_int_ne(dl_plan_build_cluster(4, 8, b4, 64, 2, 8, 0, &p), 0);
    ck_assert_int_ne(dl_plan_build_cluster(4, 8, b4, 64, 2, 8, 33, &p), 0);
    ck_assert(strstr(dl_last_error(), "per_task=33") != NULL);
    const int32_t zero[2] = {64, 0};
    ck_assert_int_ne(dl_plan_build_cluster(2, 8, zero, 64, 2, 2, 1, &p), 0);
    ck_assert(strstr(dl_last_error(), "request 1 has sequence length 0") != NULL);
}
END_TEST

/* dl_plan_cta_tokens, the busiest CTA's share: by hand on a small plan, then bf16-hw-stream's plans at llama3-8B B4
 * L32768 (264 CTAs of 2 warps, 8 KV heads: 66 runs of the heads order), where the H200's timelines tied the CTAs'
 * exits to their tiles: the apportioned cut gives each request 16 or 17 runs, so a 16-run request's runs hold 512 / 16
 * = 32 tiles and their CTAs (2 warps of one run) 4096 tokens; the equal cut at 16-token units cuts 8192 units into 66
 * runs, 8 of 125 units, so its busiest CTA holds 2 x 125 x 16 = 4000; the mean is every token of every head over the
 * 264 CTAs either way. Each checked against the CTAs' sums of slot_work too. */
START_TEST(test_cta_tokens)
{
    dl_plan p;
    int64_t most = -1;
    double mean = -1;
    const int32_t small[1] = {1000}; /* 16 tiles, the last of 40 tokens, over 2 CTAs x 2 warps: 4 runs of 4 tiles */
    ck_assert_int_eq(dl_plan_build(1, 1, small, 64, 2, 2, 1, &p), 0);
    ck_assert_int_eq(p.ctas, 2);
    ck_assert_int_eq(dl_plan_cta_tokens(&p, 1, small, &most, &mean), 0);
    ck_assert_int_eq(most, 512);          /* CTA 0: tiles 0-7; CTA 1: tiles 8-15, 488 tokens */
    ck_assert(mean == 500.0);
    dl_plan_free(&p);

    int32_t len4[4] = {32768, 32768, 32768, 32768};
    const struct { int unit, cuts; int64_t most; } cases[] = {{64, DL_PLAN_APPORTION, 4096}, {16, 0, 4000}};
    for (int i = 0; i < 2; i++) {
        const int per = 64 / cases[i].unit;
        ck_assert_int_eq(dl_plan_build_waves(4, 8, len4, cases[i].unit, 2, 132, 264, 4 * per, 1, 0, 1, DL_ORDER_AUTO,
                                             cases[i].cuts, &p), 0);
        ck_assert_int_eq(p.ctas, 264);
        ck_assert_int_eq(dl_plan_cta_tokens(&p, 8, len4, &most, &mean), 0);
        ck_assert_int_eq(most, cases[i].most);
        ck_assert_double_eq_tol(mean, 4.0 * 8 * 32768 / 264, 1e-9);
        int64_t cta_most = 0, cta = 0;
        for (int s = 0; s < p.num_slots; s++) {
            int64_t tok, t64;
            slot_work(&p, 8, len4, s, &tok, &t64);
            cta += tok;
            if (s % p.warps == p.warps - 1) cta_most = cta > cta_most ? cta : cta_most, cta = 0;
        }
        ck_assert_int_eq(cta_most, most);
        dl_plan_free(&p);
    }
}
END_TEST

DL_TEST_SUITE("plan", 60, NULL, NULL,
              test_seed_case_shape, test_ragged_and_tiny, test_long_single_request_splits, test_bad_arguments,
              test_stage_knobs, test_merge_mode, test_merge_split, test_ctas_per_sm, test_chain_pad, test_wave_ctas, test_pool, test_heads_order, test_ctas_share_tiles,
              test_seg_cost_heads_plan, test_apportioned_heads_plan, test_unit_cut, test_cluster_plan, test_head_groups,
              test_cta_tokens, test_knob_table)

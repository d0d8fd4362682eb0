/* plan.c - the balanced work plan of gpu/decode_stream.cu (see dl_plan.h). */
#include "dl_plan.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ref/dl_common.h"

void dl_plan_free(dl_plan *p)
{
    if (!p) return;
    free(p->buf);
    free(p->sched_indptr);
    free(p->sched_begin);
    p->buf = NULL;
    p->sched_indptr = p->sched_begin = NULL;
}

int dl_plan_build(int B, int Hkv, const int32_t *seq_len, int tile, int warps, int max_ctas, int min_tiles,
                  dl_plan *p)
{
    return dl_plan_build_pool(B, Hkv, seq_len, tile, warps, max_ctas, min_tiles, 0, 1, DL_ORDER_TASKS, 0, p);
}

int dl_plan_order_of(const char *s, int *order)
{
    if (!s || !strcmp(s, "auto")) *order = DL_ORDER_AUTO;
    else if (!strcmp(s, "tasks")) *order = DL_ORDER_TASKS;
    else if (!strcmp(s, "heads")) *order = DL_ORDER_HEADS;
    else
        return dl_fail("DL_STREAM_ORDER: '%s' is not 'auto' (the default: 'heads' where it leaves no slot empty, "
                       "else 'tasks'), 'tasks' (the tiles of every (request, KV head) task end to end, cut into "
                       "equal runs) or 'heads' (the tiles of the requests cut once, each run given to one slot per "
                       "KV head, so that the heads of a page are read together)", s);
    return 0;
}

int dl_plan_stage_of(const char *s, int *stage)
{
    if (!s || !strcmp(s, "auto")) *stage = DL_STAGE_AUTO;
    else if (!strcmp(s, "tile")) *stage = DL_STAGE_TILE;
    else if (!strcmp(s, "page")) *stage = DL_STAGE_PAGE;
    else if (!strcmp(s, "page2")) *stage = DL_STAGE_PAGE2;
    else
        return dl_fail("DL_STREAM_STAGE: '%s' is not 'auto' (the default: by policy and case, README), 'tile' (a ring "
                       "of 64-token tiles per consumer warp), 'page' (one ring shared by the 8 warps of a CTA, stages "
                       "of 16 rows of the 8 KV heads) or 'page2' (one ring shared by 2 warps, stages of 16 rows of 2 "
                       "KV heads; bf16-hw-stream)", s);
    return 0;
}

/* DL_STREAM_HW_PAGE's default standalone: 2 since 2026-12-07 (test-gpu, the sanitizers and the rule's timing against 8
 * on an H100: results/h100_2026-12-07/). In a layer chained with programmatic dependent launch (run --chain,
 * DL_STREAM_PDL=1): 8, since there the two-head stage lost to the 8-head rule's stages (H100, 2026-12-07,
 * bf16-hw-stream, chain of 8, median us a layer, two rounds): B1 L32768 33.13 against 31.11, B4 L32768 105.05-105.09
 * against 95.66-95.97, B8 L16384 104.64-104.95 against 95.19-95.20; B16 L8192 99.25-99.27 against 99.13-99.17, B128
 * L4096 351.53 against 351.97. Chained plainly (DL_STREAM_PDL=0) the two-head stage was 0.6 us faster at B1, 2.3 at
 * B128 and 0.0-1.0 slower at B4-B16, so a plain chain keeps 2 (results/h100_2026-12-07c/). */
enum { kHwPageHeads = DL_STAGE_PAGE2, kHwPageHeadsPdl = DL_STAGE_PAGE };

int dl_plan_hw_page_heads(int chained_pdl, int *heads)
{
    DL_TRY(dl_env_int("DL_STREAM_HW_PAGE", DL_STAGE_PAGE2, DL_STAGE_PAGE, chained_pdl ? kHwPageHeadsPdl : kHwPageHeads,
                      NULL, heads));
    if (*heads != DL_STAGE_PAGE2 && *heads != DL_STAGE_PAGE)
        return dl_fail("DL_STREAM_HW_PAGE: '%d' is not 2 or 8 (the KV heads a page stage holds, for bf16-hw-stream's "
                       "DL_STREAM_STAGE=auto)", *heads);
    return 0;
}

int dl_plan_chain_knobs(int *pdl, int *cap)
{
    DL_TRY(dl_env_int("DL_STREAM_PDL", 0, 1, 1, NULL, pdl));
    return dl_env_int("DL_STREAM_CHAIN_CAP", 0, 2, 1, NULL, cap);
}

/* Every DL_STREAM_* variable a build reads (README, "Tuning the streaming family"; test_plan holds this list to the
 * sources), and for the integer ones the widest range any case takes: a case may take less (DL_STREAM_CTAS_PER_SM
 * what fits an SM, DL_STREAM_HEAD_GROUP and DL_STREAM_BOXHEADS its KV heads), checked when its plan is made. lo > hi:
 * a word, checked by its parser (DL_STREAM_TL_CTAS: a path prefix). */
static const struct {
    const char *name;
    int lo, hi;
} stream_knobs[] = {
    {"DL_STREAM_APPORTION", 0, 1},        {"DL_STREAM_BOXHEADS", 1, 1 << 20},
    {"DL_STREAM_CHAIN_CAP", 0, 2},        {"DL_STREAM_CLAIM", 0, 64},
    {"DL_STREAM_CLAIM_MIN", 0, 64},       {"DL_STREAM_CLAIM_OWN", 1, 64},
    {"DL_STREAM_CLUSTER_SIZE", 0, DL_PLAN_MAX_CLUSTER}, {"DL_STREAM_CTAS_PER_SM", 1, 32},
    {"DL_STREAM_DEEP", 0, 1},             {"DL_STREAM_DRY", 0, 7},
    {"DL_STREAM_FIRST_PAGES", 0, 1},      {"DL_STREAM_HEAD_GROUP", 0, DL_PLAN_HEAD_GROUP_MASK},
    {"DL_STREAM_HW_PAGE", DL_STAGE_PAGE2, DL_STAGE_PAGE}, {"DL_STREAM_L2PROMO", 0, 256},
    {"DL_STREAM_MAX_SEGS", 1, 1 << 20},   {"DL_STREAM_MERGE", 1, 0},
    {"DL_STREAM_MERGE_FORM", 0, 1},       {"DL_STREAM_MERGE_LATE", 0, 1},
    {"DL_STREAM_MERGE_SPLIT", 0, 4},      {"DL_STREAM_MIN_TILES", 1, 1 << 20},
    {"DL_STREAM_ORDER", 1, 0},            {"DL_STREAM_PDL", 0, 1},
    {"DL_STREAM_POOL", 0, 50},            {"DL_STREAM_POOL_CHUNK", 1, 1 << 20},
    {"DL_STREAM_PROBE_L2PF", 0, 64},      {"DL_STREAM_PROBE_LDG", 0, 1},
    {"DL_STREAM_PROBE_LDGSTS", 0, 1},     {"DL_STREAM_PROBE_LDG_SMEM", 0, 1},
    {"DL_STREAM_PROBE_LDG_STS", 0, 2},    {"DL_STREAM_PROBE_RING", 0, 200},
    {"DL_STREAM_PROBE_THREADS", 32, 256}, {"DL_STREAM_PROBE_WALK", 0, 1},
    {"DL_STREAM_PROBE_WAVES", 1, 16},     {"DL_STREAM_SEG_COST", 0, DL_PLAN_MAX_SEG_COST / 4},
    {"DL_STREAM_SMEM_PAD", 0, 224},       {"DL_STREAM_STAGE", 1, 0},
    {"DL_STREAM_TL_CTAS", 1, 0},          {"DL_STREAM_UNIT", 16, 64},
    {"DL_STREAM_WAVES", 0, 1},
};
enum { kNumStreamKnobs = (int)(sizeof stream_knobs / sizeof stream_knobs[0]) };

int dl_plan_knob_count(void) { return kNumStreamKnobs; }

const char *dl_plan_knob_name(int i) { return i >= 0 && i < kNumStreamKnobs ? stream_knobs[i].name : NULL; }

/* Edits (insert, delete, replace) from a to b, both at most 63 characters (else a large number). */
static int edits(const char *a, const char *b)
{
    const int m = (int)strlen(a), n = (int)strlen(b);
    if (m > 63 || n > 63) return 1 << 20;
    int d[64][64];
    for (int i = 0; i <= m; i++) d[i][0] = i;
    for (int j = 0; j <= n; j++) d[0][j] = j;
    for (int i = 1; i <= m; i++)
        for (int j = 1; j <= n; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            d[i][j] = best;
        }
    return d[m][n];
}

extern char **environ;

int dl_plan_check_env(void)
{
    /* a name no build reads would be ignored without a word: refuse it, naming the nearest knob */
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "DL_STREAM_", 10)) continue;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(*e, "="), *e);
        int known = 0, near = 0, best = 1 << 20;
        for (int i = 0; i < kNumStreamKnobs && !known; i++) {
            known = !strcmp(name, stream_knobs[i].name);
            const int d = edits(name, stream_knobs[i].name);
            if (d < best) best = d, near = i;
        }
        if (!known)
            return dl_fail("%s: no build reads this variable (%s?); the streaming family's knobs: README, \"Tuning the "
                           "streaming family\"",
                           name, stream_knobs[near].name);
    }
    int v;
    for (int i = 0; i < kNumStreamKnobs; i++) /* the integers' form and widest range */
        if (stream_knobs[i].lo <= stream_knobs[i].hi)
            DL_TRY(dl_env_int(stream_knobs[i].name, stream_knobs[i].lo, stream_knobs[i].hi, 0, NULL, &v));
    DL_TRY(dl_plan_order_of(getenv("DL_STREAM_ORDER"), &v));
    DL_TRY(dl_plan_stage_of(getenv("DL_STREAM_STAGE"), &v));
    DL_TRY(dl_plan_merge_mode(getenv("DL_STREAM_MERGE"), &v)); /* the chain's knobs: integers of the table above */
    return dl_plan_hw_page_heads(0, &v); /* the default does not matter here: only a set value is checked */
}

/* The segments of the tiles [u0, u1) of the head-less walk for head i of its group (the walk: the B requests' tiles
 * once per group of g KV heads, group q's request b at ub[q B + b]..ub[q B + b + 1]; one group of all the heads, g
 * = Hkv, by default), appended at *nseg. */
static void walk_heads(const int64_t *ub, int B, int groups, int Hkv, int g, int i, int64_t u0, int64_t u1,
                       int32_t *st, int32_t *s0, int32_t *s1, int64_t *nseg)
{
    int e = 0; /* the walk's (group, request) pieces: e = q B + b */
    while (e < groups * B && ub[e + 1] <= u0) e++;
    for (int64_t u = u0; u < u1; e++) {
        const int64_t end = ub[e + 1] < u1 ? ub[e + 1] : u1;
        st[*nseg] = (e % B) * Hkv + (e / B) * g + i;
        s0[*nseg] = (int32_t)(u - ub[e]);
        s1[*nseg] = (int32_t)(end - ub[e]);
        (*nseg)++;
        u = end;
    }
}

/* The request boundaries ub[1..B-1] (strictly increasing) at or before walk tile x: how many. */
static int64_t bounds_upto(const int64_t *ub, int B, int64_t x)
{
    int lo = 1, hi = B; /* the first b in [1, B) with ub[b] > x, by bisection */
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (ub[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo - 1;
}

/* The cost of the run of walk tiles [u0, u1) (request b's at ub[b]..ub[b + 1]): its tiles plus c for each
 * request boundary inside it. */
static int64_t run_cost(const int64_t *ub, int B, int64_t u0, int64_t u1, int c)
{
    return (u1 - u0) + (int64_t)c * (bounds_upto(ub, B, u1 - 1) - bounds_upto(ub, B, u0));
}

/* The runs that cutting greedily at cost <= T makes (each as long as T allows, at least one tile), their cuts into
 * cut[1..] when cut is not NULL. */
static int64_t greedy_cuts(const int64_t *ub, int B, int64_t U, int c, int64_t T, int64_t *cut)
{
    int64_t n = 0, u = 0;
    int nb = 1; /* the first boundary past the run's start */
    while (u < U) {
        while (nb < B && ub[nb] <= u) nb++;
        int64_t cost = 1;
        int b = nb;
        u++;
        while (u < U) {
            const int64_t add = 1 + (b < B && ub[b] == u ? c : 0);
            if (cost + add > T) break;
            if (b < B && ub[b] == u) b++;
            cost += add;
            u++;
        }
        n++;
        if (cut) cut[n] = u;
    }
    return n;
}

/* The heads order's cuts with each request its own runs (DL_PLAN_APPORTION, attempt #31), for runs >= B: one run
 * a request, then each next run to the request whose runs are longest (the most tiles per run; ties: the first),
 * each request's runs cut equally, so that no run crosses a request boundary and the longest run is as short as
 * such a cut allows (the highest-averages rule). cut[0..runs] as heads_cuts; k: room for B run counts. */
static void apportion_cuts(const int64_t *ub, int B, int64_t runs, int64_t *k, int64_t *cut)
{
    for (int b = 0; b < B; b++) k[b] = 1;
    for (int64_t extra = runs - B; extra > 0; extra--) {
        int best = 0;
        for (int b = 1; b < B; b++) /* (ub[b+1]-ub[b]) / k[b] > best's, without division */
            if ((ub[b + 1] - ub[b]) * k[best] > (ub[best + 1] - ub[best]) * k[b]) best = b;
        k[best]++;
    }
    int64_t r = 0;
    for (int b = 0; b < B; b++) {
        const int64_t t = ub[b + 1] - ub[b];
        for (int64_t i = 0; i < k[b]; i++) cut[r++] = ub[b] + i * t / k[b];
    }
    cut[r] = ub[B];
}

/* The heads order's cuts of the head-less walk of U tiles (request b's at ub[b]..ub[b + 1]) into runs: cut[r]..
 * cut[r + 1] for r < runs (runs <= U). seg_cost 0: equal runs, r * U / runs. Else a run costs its tiles plus
 * seg_cost for each request boundary inside it (a segment past its first: an epilogue, a ticket and a new Q in
 * the middle of the run; the CTAs whose run crossed one ended last at the 70B shape, gpu/NOTES.md #30): the least
 * largest cost any cut reaches (greedy cuts at cost <= T need no more than runs runs; T by bisection), then the
 * costliest run split in two where the larger half costs least, until there are runs runs. */
static void heads_cuts(const int64_t *ub, int B, int64_t U, int64_t runs, int seg_cost, int64_t *cut)
{
    cut[0] = 0;
    if (seg_cost == 0) {
        for (int64_t r = 1; r <= runs; r++) cut[r] = r * U / runs;
        return;
    }
    int64_t lo = (U + runs - 1) / runs, hi = U + (int64_t)seg_cost * B; /* greedy(hi) makes one run */
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (greedy_cuts(ub, B, U, seg_cost, mid, NULL) <= runs) hi = mid;
        else lo = mid + 1;
    }
    int64_t n = greedy_cuts(ub, B, U, seg_cost, lo, cut);
    for (; n < runs; n++) {
        int64_t best = -1, worst = -1;
        for (int64_t r = 0; r < n; r++) { /* the costliest run of two tiles or more */
            const int64_t cr = run_cost(ub, B, cut[r], cut[r + 1], seg_cost);
            if (cut[r + 1] - cut[r] >= 2 && cr > worst) worst = cr, best = r;
        }
        /* its split: the middle tile, or a boundary inside it, whichever leaves the larger half cheapest */
        const int64_t u0 = cut[best], u1 = cut[best + 1];
        int64_t at = u0 + (u1 - u0) / 2;
        int64_t at_cost = run_cost(ub, B, u0, at, seg_cost);
        const int64_t right = run_cost(ub, B, at, u1, seg_cost);
        if (right > at_cost) at_cost = right;
        for (int b = 1 + (int)bounds_upto(ub, B, u0); b < B && ub[b] < u1; b++) { /* the boundaries inside */
            const int64_t l = run_cost(ub, B, u0, ub[b], seg_cost), r = run_cost(ub, B, ub[b], u1, seg_cost);
            if ((l > r ? l : r) < at_cost) at_cost = l > r ? l : r, at = ub[b];
        }
        memmove(cut + best + 2, cut + best + 1, (size_t)(n - best) * sizeof(int64_t));
        cut[best + 1] = at;
    }
}

/* The plan p from its slots' segments (slot s: segments slot_ptr[s]..slot_ptr[s + 1]; segment k: tiles s0[k]..s1[k]
 * of task st[k]), for either walk or the clusters: per task where its segments begin in the schedule (task_first)
 * and the first of its partials' workspace rows (row0, the device's task_ptr: rows numbered task by task, split
 * tasks only); every walk meets a task's segments in token order, so the i-th one met is the i-th in each list.
 * p->cut and p->seg_cost are the caller's. Returns 0 or dl_fail(). */
static int plan_assemble(dl_plan *p, int T, int64_t N, int tile, int warps, int64_t ctas, int64_t nslots_all,
                         int64_t nstatic, int order, const int32_t *slot_ptr, const int32_t *st, const int32_t *s0,
                         const int32_t *s1, int64_t nseg)
{
    int32_t *so = malloc((size_t)(nseg > 0 ? nseg : 1) * sizeof(int32_t));
    int32_t *task_first = malloc(((size_t)T + 1) * sizeof(int32_t)), *task_nseg = calloc((size_t)T, sizeof(int32_t));
    int32_t *row0 = malloc(((size_t)T + 1) * sizeof(int32_t)), *fill = calloc((size_t)T, sizeof(int32_t));
    if (!so || !task_first || !task_nseg || !row0 || !fill) {
        free(so); free(task_first); free(task_nseg); free(row0); free(fill);
        return dl_fail("dl_plan_build: out of memory for a plan of %lld segments", (long long)nseg);
    }
    for (int64_t k = 0; k < nseg; k++) task_nseg[st[k]]++;
    task_first[0] = row0[0] = 0;
    for (int t = 0; t < T; t++) {
        task_first[t + 1] = task_first[t] + task_nseg[t];
        row0[t + 1] = row0[t] + (task_nseg[t] > 1 ? task_nseg[t] : 0);
    }
    p->tile = tile;
    p->warps = warps;
    p->ctas = (int)ctas;
    p->num_tasks = T;
    p->num_slots = (int)nslots_all;
    p->num_static = (int)nstatic;
    p->num_segs = (int)nseg;
    p->num_partials = row0[T];
    p->num_tiles = N;
    p->order = order;
    p->buf_len = (size_t)(nslots_all + 1) + 4 * (size_t)nseg + (size_t)T + 1 + (size_t)T + 2;
    p->buf = malloc(p->buf_len * sizeof(int32_t));
    p->sched_indptr = malloc(((size_t)T + 1) * sizeof(int64_t));
    p->sched_begin = malloc((size_t)(nseg > 0 ? nseg : 1) * sizeof(int64_t));
    int rc = 0;
    if (!p->buf || !p->sched_indptr || !p->sched_begin) {
        dl_plan_free(p);
        rc = dl_fail("dl_plan_build: out of memory for a plan of %lld segments", (long long)nseg);
    } else {
        for (int64_t k = 0; k < nseg; k++) {
            const int t = st[k], i = fill[t]++;
            so[k] = task_nseg[t] > 1 ? row0[t] + i : -1;
            p->sched_begin[task_first[t] + i] = (int64_t)s0[k] * tile;
        }
        int32_t *o = p->buf;
        memcpy(o, slot_ptr, ((size_t)nslots_all + 1) * sizeof(int32_t));
        o += nslots_all + 1;
        memcpy(o, st, (size_t)nseg * sizeof(int32_t));
        o += nseg;
        memcpy(o, s0, (size_t)nseg * sizeof(int32_t));
        o += nseg;
        memcpy(o, s1, (size_t)nseg * sizeof(int32_t));
        o += nseg;
        memcpy(o, so, (size_t)nseg * sizeof(int32_t));
        o += nseg;
        memcpy(o, row0, ((size_t)T + 1) * sizeof(int32_t)); /* task_ptr */
        for (int t = 0; t <= T; t++) p->sched_indptr[t] = task_first[t];
        memset(o + T + 1, 0, ((size_t)T + 2) * sizeof(int32_t)); /* tickets, the pool's claim and done counts */
    }
    free(so); free(task_first); free(task_nseg); free(row0); free(fill);
    return rc;
}

int dl_plan_build_pool(int B, int Hkv, const int32_t *seq_len, int tile, int warps, int max_ctas, int min_tiles,
                       int pool_pct, int chunk, int order, int cuts, dl_plan *p)
{
    memset(p, 0, sizeof *p);
    const int seg_cost = cuts & DL_PLAN_SEG_COST_MASK, apportion = (cuts & DL_PLAN_APPORTION) != 0;
    const int asked_group = (cuts >> DL_PLAN_HEAD_GROUP_SHIFT) & DL_PLAN_HEAD_GROUP_MASK;
    int g = asked_group ? asked_group : Hkv; /* KV heads a run goes to side by side (auto: below) */
    if (B < 1 || Hkv < 1 || tile < 1 || warps < 1 || max_ctas < 1 || min_tiles < 1 || !seq_len || pool_pct < 0 ||
        pool_pct > 50 || chunk < 1 || order < DL_ORDER_AUTO || order > DL_ORDER_HEADS ||
        (order == DL_ORDER_HEADS && pool_pct > 0) || cuts < 0 ||
        (cuts & ~(DL_PLAN_SEG_COST_MASK | DL_PLAN_APPORTION | DL_PLAN_HEAD_GROUP(DL_PLAN_HEAD_GROUP_MASK))) ||
        seg_cost > DL_PLAN_MAX_SEG_COST || Hkv % g)
        return dl_fail("dl_plan_build: bad arguments (B=%d Hkv=%d tile=%d warps=%d max_ctas=%d min_tiles=%d "
                       "pool_pct=%d chunk=%d order=%d cuts=%#x; the heads order takes no pool; cuts: a cost 0..%d, "
                       "or'ed with DL_PLAN_APPORTION and DL_PLAN_HEAD_GROUP(g), g dividing Hkv)", B, Hkv, tile, warps,
                       max_ctas, min_tiles, pool_pct, chunk, order, (unsigned)cuts, DL_PLAN_MAX_SEG_COST);
    const int T = B * Hkv;
    int64_t N = 0;
    for (int b = 0; b < B; b++) {
        if (seq_len[b] < 1) return dl_fail("dl_plan_build: request %d has sequence length %d (< 1)", b, seq_len[b]);
        N += (int64_t)Hkv * ((seq_len[b] + tile - 1) / tile);
    }
    /* slots: every resident warp, but no run shorter than min_tiles, whole CTAs */
    int64_t slots = (int64_t)max_ctas * warps;
    int64_t by_len = (N + min_tiles - 1) / min_tiles;
    if (slots > by_len) slots = by_len;
    int64_t ctas = (slots + warps - 1) / warps;
    slots = ctas * warps;
    if (slots > N) slots = N; /* never an empty slot in the middle: trailing ones stay empty */
    const int64_t nstatic = ctas * warps;
    /* the auto group (attempt #67): where the walk's order is auto, no pool, and the slots are whole CTAs but not a
     * multiple of Hkv, the largest group dividing both (their gcd) if it is 2 or more, so that the heads order
     * still fits; else all the heads (llama-13B: 40 heads on 396 warps -> 4; llama3-8B's 8 on 396 -> 4) */
    if (!asked_group && order == DL_ORDER_AUTO && pool_pct == 0 && slots == nstatic && slots % Hkv) {
        int64_t a = slots, b = Hkv;
        while (b) {
            const int64_t t = a % b;
            a = b;
            b = t;
        }
        if (a >= 2) g = (int)a;
    }
    /* the heads order: runs of the head-less walk (N / Hkv tiles once per group of g heads), each to g consecutive
     * slots; fewer slots than g: the tasks order */
    const int groups = Hkv / g;
    const int64_t U = N / Hkv * groups, runs = slots / g < U ? slots / g : U;
    if (order == DL_ORDER_AUTO) /* heads where every slot gets a run, and no pool */
        order = runs >= 1 && runs * g == slots && slots == nstatic && pool_pct == 0 ? DL_ORDER_HEADS : DL_ORDER_TASKS;
    if (runs < 1) order = DL_ORDER_TASKS;
    /* the pool: the last pool_pct % of the tiles (in the walk's order) as slots of `chunk` tiles */
    const int64_t Np = N * pool_pct / 100, Ns = N - Np, npool = (Np + chunk - 1) / chunk;
    const int64_t nslots_all = nstatic + npool;

    /* segments: walk the slots over the tasks, the static ones over the first Ns tiles, then the pool's */
    int64_t cap = nslots_all + T;
    int32_t *slot_ptr = calloc((size_t)nslots_all + 1, sizeof(int32_t));
    int32_t *st = malloc((size_t)cap * sizeof(int32_t)), *s0 = malloc((size_t)cap * sizeof(int32_t));
    int32_t *s1 = malloc((size_t)cap * sizeof(int32_t));
    const int64_t E = (int64_t)groups * B; /* the walk's (group, request) pieces */
    int64_t *ub = malloc(((size_t)E + 1) * sizeof(int64_t)), *nruns = malloc((size_t)E * sizeof(int64_t));
    int64_t *cut = malloc(((size_t)(runs > 0 ? runs : 0) + 1) * sizeof(int64_t)); /* the heads order's runs */
    if (!slot_ptr || !st || !s0 || !s1 || !ub || !nruns || !cut) {
        free(slot_ptr); free(st); free(s0); free(s1); free(ub); free(nruns); free(cut);
        return dl_fail("dl_plan_build: out of memory for %lld slots", (long long)nslots_all);
    }
    int64_t nseg = 0;
    if (order == DL_ORDER_HEADS) {
        ub[0] = 0;
        for (int64_t e = 0; e < E; e++) ub[e + 1] = ub[e] + (seq_len[e % B] + tile - 1) / tile;
        if (apportion && runs >= E) {
            apportion_cuts(ub, (int)E, runs, nruns, cut);
            p->cut = DL_CUT_APPORTION;
        } else {
            heads_cuts(ub, (int)E, U, runs, seg_cost, cut);
            p->cut = seg_cost ? DL_CUT_COST : DL_CUT_EQUAL;
            p->seg_cost = seg_cost;
        }
        for (int64_t s = 0; s < nslots_all; s++) {
            slot_ptr[s] = (int32_t)nseg;
            const int64_t r = s / g;
            if (r < runs) walk_heads(ub, B, groups, Hkv, g, (int)(s % g), cut[r], cut[r + 1], st, s0, s1, &nseg);
        }
        p->head_group = g < Hkv ? g : 0;
    } else {
        int task = 0;
        int64_t task_tiles = (seq_len[0] + tile - 1) / tile, in_task = 0; /* tiles of task done */
        for (int64_t s = 0; s < nslots_all; s++) {
            slot_ptr[s] = (int32_t)nseg;
            int64_t want = 0;
            if (s >= nstatic) want = (s - nstatic + 1) * chunk > Np ? Np - (s - nstatic) * chunk : chunk;
            else if (s < slots) want = (s + 1) * Ns / slots - s * Ns / slots;
            while (want > 0) {
                while (in_task == task_tiles) { /* next task */
                    task++;
                    in_task = 0;
                    task_tiles = (seq_len[task / Hkv] + tile - 1) / tile;
                }
                int64_t take = task_tiles - in_task < want ? task_tiles - in_task : want;
                st[nseg] = task;
                s0[nseg] = (int32_t)in_task;
                s1[nseg] = (int32_t)(in_task + take);
                nseg++;
                in_task += take;
                want -= take;
            }
        }
    }
    slot_ptr[nslots_all] = (int32_t)nseg;
    const int rc = plan_assemble(p, T, N, tile, warps, ctas, nslots_all, nstatic, order, slot_ptr, st, s0, s1, nseg);
    free(slot_ptr); free(st); free(s0); free(s1); free(ub); free(nruns); free(cut);
    return rc;
}

int dl_plan_cluster_shape(int B, int Hkv, const int32_t *seq_len, int tile, int warps, int max_ctas, int asked,
                          int *cluster, int *per_task)
{
    *cluster = *per_task = 0;
    if (B < 1 || Hkv < 1 || tile < 1 || warps < 1 || max_ctas < 1 || !seq_len) return 0;
    int64_t longest = 0;
    for (int b = 0; b < B; b++) {
        const int64_t n = seq_len[b] < 1 ? 0 : (seq_len[b] + tile - 1) / tile;
        longest = n > longest ? n : longest;
    }
    if (longest < 2) return 0; /* no task to split */
    const int64_t T = (int64_t)B * Hkv;
    int c = asked;
    if (c == 0)
        for (c = DL_PLAN_AUTO_CLUSTER; c >= 2; c /= 2)
            if (T * c <= max_ctas && c * warps <= DL_PLAN_MAX_CLUSTER_SEGS) break;
    if (c < 2) return 0;
    int64_t k = T * c <= max_ctas ? max_ctas / (T * c) : 1; /* clusters a task: as many as fit at once */
    const int64_t by_len = longest / ((int64_t)c * warps); /* no more than give the longest task's warps a tile */
    if (k > by_len) k = by_len > 0 ? by_len : 1;
    if (k > DL_PLAN_MAX_CLUSTERS_PER_TASK) k = DL_PLAN_MAX_CLUSTERS_PER_TASK;
    *cluster = c;
    *per_task = (int)k;
    return 0;
}

int dl_plan_build_cluster(int B, int Hkv, const int32_t *seq_len, int tile, int warps, int cluster, int per_task,
                          dl_plan *p)
{
    memset(p, 0, sizeof *p);
    if (B < 1 || Hkv < 1 || tile < 1 || warps < 1 || !seq_len || cluster < 2 || cluster > DL_PLAN_MAX_CLUSTER ||
        (cluster & (cluster - 1)) || cluster * warps > DL_PLAN_MAX_CLUSTER_SEGS || per_task < 1 ||
        per_task > DL_PLAN_MAX_CLUSTERS_PER_TASK)
        return dl_fail("dl_plan_build_cluster: bad arguments (B=%d Hkv=%d tile=%d warps=%d cluster=%d per_task=%d; the "
                       "cluster a power of 2 from 2 to %d, at most %d segments a cluster, 1 to %d clusters a task)", B,
                       Hkv, tile, warps, cluster, per_task, DL_PLAN_MAX_CLUSTER, DL_PLAN_MAX_CLUSTER_SEGS,
                       DL_PLAN_MAX_CLUSTERS_PER_TASK);
    const int T = B * Hkv, per = per_task * cluster * warps; /* slots a task */
    int64_t N = 0;
    for (int b = 0; b < B; b++) {
        if (seq_len[b] < 1) return dl_fail("dl_plan_build: request %d has sequence length %d (< 1)", b, seq_len[b]);
        N += (int64_t)Hkv * ((seq_len[b] + tile - 1) / tile);
    }
    const int64_t nslots = (int64_t)T * per;
    int32_t *slot_ptr = malloc(((size_t)nslots + 1) * sizeof(int32_t));
    int32_t *st = malloc((size_t)nslots * sizeof(int32_t)), *s0 = malloc((size_t)nslots * sizeof(int32_t));
    int32_t *s1 = malloc((size_t)nslots * sizeof(int32_t));
    if (!slot_ptr || !st || !s0 || !s1) {
        free(slot_ptr); free(st); free(s0); free(s1);
        return dl_fail("dl_plan_build: out of memory for %lld slots", (long long)nslots);
    }
    int64_t nseg = 0;
    for (int t = 0; t < T; t++) { /* task t: slots t * per.. in token order, equal shares; a slot of no tile: empty */
        const int64_t n = (seq_len[t / Hkv] + tile - 1) / tile;
        for (int i = 0; i < per; i++) {
            const int64_t s = (int64_t)t * per + i, a = i * n / per, e = (i + 1) * n / per;
            slot_ptr[s] = (int32_t)nseg;
            if (e > a) {
                st[nseg] = t;
                s0[nseg] = (int32_t)a;
                s1[nseg] = (int32_t)e;
                nseg++;
            }
        }
    }
    slot_ptr[nslots] = (int32_t)nseg;
    const int rc = plan_assemble(p, T, N, tile, warps, (int64_t)T * per_task * cluster, nslots, nslots, DL_ORDER_TASKS,
                                 slot_ptr, st, s0, s1, nseg);
    p->cluster = cluster;
    p->cluster_per_task = per_task;
    free(slot_ptr); free(st); free(s0); free(s1);
    return rc;
}

int dl_plan_max_task_segs(const dl_plan *p)
{
    int most = 0;
    for (int t = 0; t < p->num_tasks; t++) {
        const int n = (int)(p->sched_indptr[t + 1] - p->sched_indptr[t]);
        most = n > most ? n : most;
    }
    return most;
}

int dl_plan_cta_tokens(const dl_plan *p, int Hkv, const int32_t *seq_len, int64_t *most, double *mean)
{
    const int32_t *slot_ptr = p->buf, *task = slot_ptr + p->num_slots + 1, *t0 = task + p->num_segs,
                  *t1 = t0 + p->num_segs;
    int64_t *tok = (int64_t *)calloc(p->ctas > 0 ? (size_t)p->ctas : 1, sizeof(int64_t));
    if (!tok) return dl_fail("dl_plan_cta_tokens: out of memory for %d CTAs", p->ctas);
    for (int s = 0; s < p->num_static; s++) /* the pool's slots go to whoever claims them: not counted */
        for (int k = slot_ptr[s]; k < slot_ptr[s + 1]; k++) {
            const int64_t len = seq_len[task[k] / Hkv], end = (int64_t)t1[k] * p->tile;
            tok[s / p->warps] += (end < len ? end : len) - (int64_t)t0[k] * p->tile;
        }
    int64_t sum = 0;
    int busy = 0;
    *most = 0;
    for (int c = 0; c < p->ctas; c++) {
        if (tok[c] > *most) *most = tok[c];
        sum += tok[c];
        busy += tok[c] > 0;
    }
    *mean = busy ? (double)sum / busy : 0.0;
    free(tok);
    return 0;
}

int dl_plan_merge_mode(const char *s, int *mode)
{
    if (!s || !strcmp(s, "auto")) *mode = DL_MERGE_AUTO;
    else if (!strcmp(s, "ticket")) *mode = DL_MERGE_TICKET;
    else if (!strcmp(s, "kernel")) *mode = DL_MERGE_KERNEL;
    else if (!strcmp(s, "cluster")) *mode = DL_MERGE_CLUSTER;
    else
        return dl_fail("DL_STREAM_MERGE: '%s' is not 'auto' (the default: 'kernel' when some task has at least %d "
                       "segments, else 'ticket'), 'ticket' (the warp that finishes a task's last segment), "
                       "'kernel' (a second kernel, one CTA per task and query head) or 'cluster' (each task's CTAs "
                       "a thread-block cluster that merges its partials; the tile rings of a make STREAM_CLUSTER=1 "
                       "build)", s, DL_PLAN_MERGE_KERNEL_SEGS);
    return 0;
}

int dl_plan_pick_merge(int mode, const dl_plan *p)
{
    if (p->num_partials == 0) return DL_MERGE_TICKET;
    if (mode == DL_MERGE_AUTO)
        return dl_plan_max_task_segs(p) >= DL_PLAN_MERGE_KERNEL_SEGS ? DL_MERGE_KERNEL : DL_MERGE_TICKET;
    return mode;
}

int dl_plan_merge_split(int asked, int64_t heads, int sms, int head_dim, int *split)
{
    if (asked != 0 && asked != 1 && asked != 2 && asked != 4)
        return dl_fail("DL_STREAM_MERGE_SPLIT: '%d' is not 0 (auto: the fewest of 1, 2, 4 that give the merge kernel "
                       "one CTA per SM), 1, 2 or 4 (CTAs per task and query head)", asked);
    int c = asked;
    if (c == 0) c = heads >= sms ? 1 : 2 * heads >= sms ? 2 : 4;
    if (head_dim <= 0 || head_dim % (4 * c))
        return dl_fail("DL_STREAM_MERGE_SPLIT=%d: head_dim %d is not a multiple of %d (each of the %d CTAs of a head "
                       "takes whole groups of 4 of its dims)", c, head_dim, 4 * c, c);
    *split = c;
    return 0;
}

int dl_plan_ctas_per_sm(int smem_sm, int smem_cta, int occupancy)
{
    int per_sm = smem_sm / (smem_cta + 1024);
    if (occupancy > 0 && occupancy < per_sm) per_sm = occupancy;
    if (per_sm < 1) per_sm = 1;
    return per_sm > 4 ? 4 : per_sm;
}

int dl_plan_chain_pad(int smem_sm, int smem_cta, int occupancy, int ctas, int sms)
{
    if (smem_sm <= 0 || smem_cta <= 0 || ctas < 1 || sms < 1) return 0;
    const int cap = (ctas + sms - 1) / sms; /* the plan's CTAs an SM */
    int fit = smem_sm / (smem_cta + 1024);
    if (occupancy > 0 && occupancy < fit) fit = occupancy;
    if (fit <= cap) return 0;
    return smem_sm / (cap + 1) - 1024 - smem_cta + 1; /* cap + 1 CTAs of smem_cta + pad + 1024 exceed smem_sm */
}

int dl_plan_wave_ctas(int64_t num_tiles, int warps, int sms, int max_ctas, int min_tiles)
{
    if (num_tiles < 1 || warps < 1 || sms < 1 || max_ctas < sms || min_tiles < 1) return 0;
    /* the CTAs dl_plan_build would use: no run shorter than min_tiles, whole CTAs */
    const int64_t by_len = (num_tiles + min_tiles - 1) / min_tiles;
    const int64_t ctas = (by_len + warps - 1) / warps;
    if (ctas >= max_ctas || ctas % sms == 0) return 0;
    const int64_t waves = (ctas + sms / 2) / sms; /* nearest, ties up */
    if (waves < 1) return 0; /* under half a wave: a small case, left to min_tiles */
    return (int)(waves * sms > max_ctas ? max_ctas : waves * sms);
}

int dl_plan_build_waves(int B, int Hkv, const int32_t *seq_len, int tile, int warps, int sms, int max_ctas,
                        int min_tiles, int waves, int pool_pct, int chunk, int order, int cuts, dl_plan *p)
{
    if (dl_plan_build_pool(B, Hkv, seq_len, tile, warps, max_ctas, min_tiles, pool_pct, chunk, order, cuts, p))
        return -1;
    if (!waves || dl_plan_max_task_segs(p) < 2) return 0; /* whole tasks stay whole */
    const int c = dl_plan_wave_ctas(p->num_tiles, warps, sms, max_ctas, min_tiles);
    if (c == 0 || c == p->ctas) return 0;
    dl_plan_free(p);
    return dl_plan_build_pool(B, Hkv, seq_len, tile, warps, c, 1, pool_pct, chunk, order, cuts, p);
}

int dl_plan_ctas_share_tiles(const dl_plan *p, int heads)
{
    if (heads < 1 || p->order != DL_ORDER_HEADS || p->warps != heads || p->num_static != p->num_slots ||
        p->num_slots != p->ctas * p->warps)
        return 0;
    const int32_t *slot_ptr = p->buf, *task = slot_ptr + p->num_slots + 1, *t0 = task + p->num_segs,
                  *t1 = t0 + p->num_segs;
    for (int c = 0; c < p->ctas; c++) {
        const int s0 = c * heads, n = slot_ptr[s0 + 1] - slot_ptr[s0];
        for (int h = 0; h < heads; h++) {
            const int s = s0 + h;
            if (slot_ptr[s + 1] - slot_ptr[s] != n) return 0;
            for (int i = 0; i < n; i++) {
                const int k = slot_ptr[s] + i, k0 = slot_ptr[s0] + i;
                if (task[k] != task[k0] + h || task[k0] % heads != 0 || t0[k] != t0[k0] || t1[k] != t1[k0]) return 0;
            }
        }
    }
    return 1;
}

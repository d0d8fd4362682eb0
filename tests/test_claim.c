/* test_claim.c - the claims on a split task's tiles (gpu/dl_claim.h, issue 10 attempt #71): worked examples of the
 * word's arithmetic, then random interleavings of owners and thieves over a task's segments, each replayed step by
 * step as the GPU's atomics would order them, with every tile taken exactly once, the owners' first tiles their own,
 * and a slow owner robbed. */
#include <string.h>

#include "dl_test.h"
#include "../gpu/dl_claim.h"
#include "../ref/dl_rng.h"

/* Segment of 5 tiles, owner chunks of 2, one thief: the sequence worked by hand in dl_claim.h's terms. */
START_TEST(test_claim_worked_example)
{
    unsigned long long w = 0, old;
    old = w, w += 2; /* owner: unclaimed [1, 5) -> takes 1, 2 */
    dl_claim_range r = dl_claim_owner(old, 5, 1, 2);
    ck_assert_int_eq(r.lo, 1);
    ck_assert_int_eq(r.hi, 3);
    ck_assert(dl_claim_more(old, 5, 1, 2)); /* 3 and 4 left */
    ck_assert_int_eq(dl_claim_left(w, 5, 1), 2);
    old = w, w += DL_CLAIM_THIEF; /* thief: takes the back, 4 */
    ck_assert_int_eq(dl_claim_thief(old, 5, 1), 4);
    ck_assert_int_eq(dl_claim_left(w, 5, 1), 1);
    old = w, w += 2; /* owner: only 3 is left */
    r = dl_claim_owner(old, 5, 1, 2);
    ck_assert_int_eq(r.lo, 3);
    ck_assert_int_eq(r.hi, 4);
    ck_assert(!dl_claim_more(old, 5, 1, 2));
    ck_assert_int_eq(dl_claim_left(w, 5, 1), 0);
    old = w, w += DL_CLAIM_THIEF; /* a late thief gets nothing, and its add leaves nothing claimable */
    ck_assert_int_eq(dl_claim_thief(old, 5, 1), -1);
    ck_assert_int_eq(dl_claim_left(w, 5, 1), 0);
    r = dl_claim_owner(w, 5, 1, 2);
    ck_assert_int_ge(r.lo, r.hi);
    /* one tile: the owner's first, nothing to claim or steal */
    ck_assert_int_eq(dl_claim_left(0, 1, 1), 0);
    ck_assert_int_eq(dl_claim_thief(0, 1, 1), -1);
    /* two tiles: a thief may take tile 1 before the owner claims; then the owner's claim is empty */
    w = 0;
    ck_assert_int_eq(dl_claim_thief(w, 2, 1), 1);
    w += DL_CLAIM_THIEF;
    r = dl_claim_owner(w, 2, 1, 1);
    ck_assert_int_ge(r.lo, r.hi);
    /* six tiles, the first three the owner's unclaimed (F 3), chunks of 2: the claim takes 3, 4; a thief then 5 */
    w = 0;
    old = w, w += 2;
    r = dl_claim_owner(old, 6, 3, 2);
    ck_assert_int_eq(r.lo, 3);
    ck_assert_int_eq(r.hi, 5);
    ck_assert(dl_claim_more(old, 6, 3, 2));
    ck_assert_int_eq(dl_claim_left(w, 6, 3), 1);
    old = w, w += DL_CLAIM_THIEF;
    ck_assert_int_eq(dl_claim_thief(old, 6, 3), 5);
    old = w, w += 2;
    r = dl_claim_owner(old, 6, 3, 2);
    ck_assert_int_ge(r.lo, r.hi);
    ck_assert_int_eq(dl_claim_thief(w, 6, 3), -1);
    /* no more tiles than the owner's own: nothing to claim or steal */
    ck_assert_int_eq(dl_claim_left(0, 3, 4), 0);
    ck_assert_int_eq(dl_claim_thief(0, 3, 4), -1);
}
END_TEST

enum { kMaxSegs = 12, kMaxTiles = 48 };
typedef struct {
    int nseg, n[kMaxSegs];
    unsigned long long w[kMaxSegs];
    int taken[kMaxSegs][kMaxTiles]; /* by whom: agent + 1, 0 = not yet; a second take fails the test */
    int stolen;                     /* tiles taken by an agent that does not own them */
} task_state;

typedef struct {
    int phase; /* 0 own first tiles, 1 owner claims, 2 thief scans, 3 thief adds, 4 done */
    int victim;
} agent;

static void take(task_state *ts, int seg, int tile, int who)
{
    ck_assert_int_ge(tile, 0);
    ck_assert_int_lt(tile, ts->n[seg]);
    ck_assert_msg(ts->taken[seg][tile] == 0, "segment %d tile %d taken by %d and again by %d", seg, tile,
                  ts->taken[seg][tile] - 1, who);
    ts->taken[seg][tile] = who + 1;
    if (seg != who) ts->stolen++;
}

/* One step of agent i (the producer of segment i): as stream_produce_one's claim path does it, one memory
 * operation a step (the owner's add, a thief's scan of the words, a thief's add). */
static void step(task_state *ts, agent *ag, int i, int F, int c, int cmin)
{
    agent *a = &ag[i];
    const int n = ts->n[i];
    if (a->phase == 0) { /* its first F tiles, unclaimed */
        for (int t = 0; t < F && t < n; t++) take(ts, i, t, i);
        a->phase = n > F ? 1 : 2;
    } else if (a->phase == 1) {
        const unsigned long long old = ts->w[i];
        ts->w[i] += (unsigned long long)c;
        const dl_claim_range r = dl_claim_owner(old, n, F, c);
        for (int t = r.lo; t < r.hi; t++) take(ts, i, t, i);
        if (r.lo >= r.hi || !dl_claim_more(old, n, F, c)) a->phase = 2;
    } else if (a->phase == 2) {
        int best = -1, most = cmin - 1;
        if (cmin > 0)
            for (int v = 0; v < ts->nseg; v++) {
                const int left = dl_claim_left(ts->w[v], ts->n[v], F);
                if (v != i && left > most) most = left, best = v;
            }
        if (best < 0) a->phase = 4;
        else a->phase = 3, a->victim = best;
    } else if (a->phase == 3) {
        const int v = a->victim;
        const unsigned long long old = ts->w[v];
        ts->w[v] += DL_CLAIM_THIEF;
        const int t = dl_claim_thief(old, ts->n[v], F);
        if (t >= 0) take(ts, v, t, i);
        a->phase = 2;
    }
}

/* Runs a task of nseg segments of n[] tiles (each owner's first F unclaimed) to the end under a random schedule
 * (agent `slow` is picked 1 time in `slowness` when others can run); returns the tiles stolen. */
static int run_task(uint64_t seed, int nseg, const int *n, int F, int c, int cmin, int slow, int slowness)
{
    task_state ts;
    memset(&ts, 0, sizeof ts);
    agent ag[kMaxSegs];
    memset(ag, 0, sizeof ag);
    ts.nseg = nseg;
    int total = 0;
    for (int i = 0; i < nseg; i++) ts.n[i] = n[i], total += n[i];
    uint64_t draw = 0;
    for (long steps = 0;; steps++) {
        ck_assert_msg(steps < 100000, "no end after %ld steps (seed %llu)", steps, (unsigned long long)seed);
        int live[kMaxSegs], nl = 0;
        for (int i = 0; i < nseg; i++)
            if (ag[i].phase != 4) live[nl++] = i;
        if (nl == 0) break;
        int i = live[dl_rng_below(seed, 1, draw++, (uint64_t)nl)];
        if (i == slow && nl > 1 && dl_rng_below(seed, 2, draw++, (uint64_t)slowness) != 0)
            continue; /* the slow owner waits this step */
        step(&ts, ag, i, F, c, cmin);
    }
    int got = 0;
    for (int s = 0; s < nseg; s++) {
        for (int t = 0; t < F && t < n[s]; t++) ck_assert_int_eq(ts.taken[s][t], s + 1); /* the first F: its owner's */
        for (int t = 0; t < n[s]; t++) got += ts.taken[s][t] != 0;
        if (cmin == 0) /* no thieves: the owner took all its tiles */
            for (int t = 0; t < n[s]; t++) ck_assert_int_eq(ts.taken[s][t], s + 1);
    }
    ck_assert_int_eq(got, total); /* every tile taken (and none twice: take() checks) */
    return ts.stolen;
}

START_TEST(test_claim_interleavings)
{
    int runs = 0;
    const int own[3] = {1, 2, 4};
    for (int nseg = 1; nseg <= kMaxSegs; nseg += 3)
        for (int fi = 0; fi < 3; fi++)
            for (int c = 1; c <= 4; c++)
                for (int cmin = 0; cmin <= 3; cmin++)
                    for (int r = 0; r < 20; r++, runs++) {
                        const uint64_t seed = 0x71c1a1ull * 1000003u + (uint64_t)runs;
                        int n[kMaxSegs];
                        for (int i = 0; i < nseg; i++) n[i] = 1 + (int)dl_rng_below(seed, 3, (uint64_t)i, kMaxTiles);
                        run_task(seed, nseg, n, own[fi], c, cmin, (int)dl_rng_below(seed, 4, 0, (uint64_t)nseg),
                                 1 + r % 5);
                    }
    ck_assert_int_eq(runs, 4 * 3 * 4 * 4 * 20);
}
END_TEST

/* A task of 8 segments of 20 tiles whose segment 3 is ten times slower than the others: the others take tiles
 * from its back (and from each other's), and still every tile once. */
START_TEST(test_claim_slow_owner_is_robbed)
{
    const int n[8] = {20, 20, 20, 20, 20, 20, 20, 20};
    int robbed = 0;
    for (int r = 0; r < 20; r++) robbed += run_task(0x5105ull + (uint64_t)r, 8, n, 4, 2, 2, 3, 10) > 0;
    ck_assert_int_eq(robbed, 20);
    /* with thieves off (cmin 0) nothing is stolen however slow an owner */
    for (int r = 0; r < 20; r++) ck_assert_int_eq(run_task(0x5105ull + (uint64_t)r, 8, n, 4, 2, 0, 3, 10), 0);
}
END_TEST

DL_TEST_SUITE("claim", 60, NULL, NULL, test_claim_worked_example, test_claim_interleavings,
              test_claim_slow_owner_is_robbed)

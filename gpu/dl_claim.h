/* dl_claim.h - the claims on a split task's tiles (issue 10, attempt #71, `make STREAM_CLAIM=1`): the warps of a
 * split task's segments that finish their own tiles first take the last unclaimed tiles of the task's other
 * segments, so that the task ends when its warps together have read it, not when its slowest warp has.
 *
 * A segment of n 64-token tiles (relative tiles 0..n-1) has one 64-bit word, zero before a launch and set back to
 * zero by whoever merges its task; its first F tiles (F >= 1) are the owner's without a claim, so that its first
 * claim's round trip hides behind them. The low 32 bits f count the tiles its owner claimed after those, the high 32
 * bits s the tiles thieves took from its back. Both only grow, by atomic adds, so each claim sees the exact word
 * before it, and the unclaimed tiles are always [F + f, n - s):
 *   - the owner adds c and takes [F + f, min(F + f + c, n - s)) of the word it saw;
 *   - a thief adds DL_CLAIM_THIEF and takes n - 1 - s if F + f + s < n (else nothing; its add is harmless).
 * Every tile is taken once: each add removes what it takes from the front or the back of the unclaimed range. The
 * owner claims again while its last claim left some (dl_claim_more), so when it stops nothing is left unclaimed
 * (its first claim may go out before it copies its own F tiles).
 * Plain C: the kernels (gpu/decode_stream.cu) and tests/test_claim.c, which replays random interleavings, share it. */
#ifndef DL_CLAIM_H
#define DL_CLAIM_H

#include "../ref/dl_formats.h" /* DL_HD */

#define DL_CLAIM_THIEF (1ull << 32) /* a thief's add */

typedef struct {
    int lo, hi; /* relative tiles [lo, hi); empty when lo >= hi */
} dl_claim_range;

DL_HD int dl_claim_f(unsigned long long w) { return (int)(w & 0xffffffffull); }
DL_HD int dl_claim_s(unsigned long long w) { return (int)(w >> 32); }

/* The owner's tiles from a claim of c tiles that saw word `old`, in a segment of n tiles whose first F are its own. */
DL_HD dl_claim_range dl_claim_owner(unsigned long long old, int n, int F, int c)
{
    const int f = dl_claim_f(old), s = dl_claim_s(old);
    dl_claim_range r;
    r.lo = F + f;
    r.hi = F + f + c < n - s ? F + f + c : n - s;
    return r;
}

/* Whether tiles may be left after an owner's claim of c tiles that saw `old` (then it claims again). */
DL_HD int dl_claim_more(unsigned long long old, int n, int F, int c)
{
    return F + dl_claim_f(old) + c < n - dl_claim_s(old);
}

/* The tile a thief took with an add that saw `old`, or -1. */
DL_HD int dl_claim_thief(unsigned long long old, int n, int F)
{
    const int f = dl_claim_f(old), s = dl_claim_s(old);
    return F + f + s < n ? n - 1 - s : -1;
}

/* The unclaimed tiles of a segment of n tiles, its first F its owner's, whose word is w (what a thief's scan
 * compares). */
DL_HD int dl_claim_left(unsigned long long w, int n, int F)
{
    const int r = n - F - dl_claim_f(w) - dl_claim_s(w);
    return r > 0 ? r : 0;
}

#endif

/* b4_plan.c - the costliest CTA of bf16-hw-stream's plan at llama3-8B B4 L32768, B1 L32768, B8 L16384 and B16 L8192
 * (the cases where the merge kernel runs; gpu/plan.c as
 * make_plan calls it there: the tile rings, 2 consumer warps a CTA, 2 CTAs an SM on 132 SMs, min_tiles 4, whole
 * waves, the auto order: heads) for units of 64 and 16 tokens and the cuts: apportioned (the default where the
 * merge kernel runs), equal (cost 0), cost 4. A CTA's two warps share its SM's time, so the CTA's tokens (the sum
 * of its warps') is what its exit follows (the H200 timeline of 2026-12-06d: rank correlation 0.72 with the tiles).
 * Built and run from the repository root (README.md beside it). */
#include <stdio.h>
#include <stdlib.h>
#include "gpu/dl_plan.h"
static void cta_share(const dl_plan *p, int Hkv, const int32_t *len, int warps)
{
    const int32_t *slot_ptr = p->buf, *task = slot_ptr + p->num_slots + 1, *t0 = task + p->num_segs, *t1 = t0 + p->num_segs;
    long long most = 0, most_tiles = 0; double sum = 0; int used = 0, nmost = 0;
    long long *tok = calloc(p->ctas, sizeof(long long)), *til = calloc(p->ctas, sizeof(long long));
    for (int s = 0; s < p->num_slots; s++)
        for (int k = slot_ptr[s]; k < slot_ptr[s + 1]; k++) {
            const long long end = (long long)t1[k] * p->tile, l = len[task[k] / Hkv];
            const long long n = (end < l ? end : l) - (long long)t0[k] * p->tile;
            tok[s / warps] += n, til[s / warps] += (n + 63) / 64;
        }
    for (int c = 0; c < p->ctas; c++) {
        if (tok[c]) used++, sum += (double)tok[c];
        if (tok[c] > most) most = tok[c];
        if (til[c] > most_tiles) most_tiles = til[c];
    }
    for (int c = 0; c < p->ctas; c++) nmost += tok[c] == most;
    printf(" %d %d %lld %d %.1f %.2f %lld\n", p->num_slots, p->num_segs, most, nmost, sum / used, 100.0 * (most / (sum / used) - 1), most_tiles);
    free(tok), free(til);
}
int main(void)
{
    const int Bs[] = {4, 1, 8, 16}, Ls[] = {32768, 32768, 16384, 8192};
    printf("B unit cut ctas slots segs costliest_cta_tok n_at_most mean_cta_tok over_mean_pct costliest_cta_tiles\n");
    for (int bi = 0; bi < 4; bi++) {
        const int B = Bs[bi], L = Ls[bi];
        int32_t len[16];
        for (int b = 0; b < B; b++) len[b] = L;
        for (int unit = 64; unit >= 16; unit /= 4) {
            const int per = 64 / unit;
            const int cuts[] = {DL_PLAN_APPORTION, 0, 4 * per};
            const char *name[] = {"apportion", "equal", "cost4"};
            for (int ci = 0; ci < 3; ci++) {
                dl_plan p;
                if (dl_plan_build_waves(B, 8, len, unit, 2, 132, 264, 4 * per, 1, 0, 1, DL_ORDER_AUTO, cuts[ci], &p)) return 1;
                printf("%d %d %s %d", B, unit, name[ci], p.ctas);
                cta_share(&p, 8, len, 2);
                dl_plan_free(&p);
            }
        }
    }
    return 0;
}

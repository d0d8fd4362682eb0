/* deep_plan.c - the costliest consumer warp of the deep rings' plan at llama3-8B B64 L1024 (gpu/plan.c as make_plan calls
 * it for bf16-cast-stream there: 2 consumer warps a CTA, one CTA an SM on 132 SMs, min_tiles 4, whole waves, the
 * auto order) for units of 64, 32 and 16 tokens and request-boundary costs 0-16 (or the apportioned cut). Built and
 * run from the repository root (README.md beside it). */
#include <stdio.h>
#include <stdlib.h>
#include "gpu/dl_plan.h"
static void share(const dl_plan *p, int Hkv, const int32_t *len, long long *most_tok, long long *most_tiles, double *mean_tok, int *nmost)
{
    const int32_t *slot_ptr = p->buf, *task = slot_ptr + p->num_slots + 1, *t0 = task + p->num_segs, *t1 = t0 + p->num_segs;
    double sum = 0; int used = 0; *most_tok = *most_tiles = 0; *nmost=0;
    long long *toks = calloc(p->num_slots, sizeof(long long));
    for (int s = 0; s < p->num_slots; s++) {
        long long tok = 0, tiles = 0;
        for (int k = slot_ptr[s]; k < slot_ptr[s + 1]; k++) {
            const long long end = (long long)t1[k] * p->tile, l = len[task[k] / Hkv];
            const long long n = (end < l ? end : l) - (long long)t0[k] * p->tile;
            tok += n; tiles += (n + 63) / 64;
        }
        toks[s]=tok;
        if (tok) used++, sum += (double)tok;
        if (tok > *most_tok) *most_tok = tok;
        if (tiles > *most_tiles) *most_tiles = tiles;
    }
    for (int s=0;s<p->num_slots;s++) if (toks[s]==*most_tok) (*nmost)++;
    free(toks);
    *mean_tok = sum / used;
}
int main(void){
    int B=64, L=1024; int32_t len[64]; for(int b=0;b<B;b++) len[b]=L;
    int costs[]={0,1,2,4,8,16};
    printf("unit cut ctas slots segs costliest_tok n_at_most mean_tok costliest_tiles\n");
    for (int unit=64; unit>=16; unit/=2){
        int per=64/unit;
        for (int ci=0; ci<7; ci++){
            int cuts = ci<6 ? costs[ci]*per : DL_PLAN_APPORTION;
            dl_plan p;
            if (dl_plan_build_waves(B, 8, len, unit, 2, 132, 132, 4*per, 1, 0, 1, DL_ORDER_AUTO, cuts, &p)) return 1;
            long long tok,tiles; double mean; int n;
            share(&p,8,len,&tok,&tiles,&mean,&n);
            printf("%d %s%d %d %d %d %lld %d %.1f %lld\n", unit, ci<6?"cost":"apportion", ci<6?costs[ci]:0, p.ctas, p.num_slots, p.num_segs, tok, n, mean, tiles);
            dl_plan_free(&p);
        }
    }
}

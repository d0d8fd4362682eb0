/* plan_units.c - the costliest consumer warp's share of the streaming kernels' plan (gpu/plan.c) when the plan is
 * cut at 64-token tiles and at 16-token units (issue 10, attempt #44), for the tile rings' arguments as make_plan
 * in gpu/decode_stream.cu passes them (3 consumer warps a CTA, 132 SMs x 2 CTAs, min_tiles 4, whole waves, the
 * heads order, a request boundary priced at 4 tiles, or the apportioned cut where the plan needs the merge kernel:
 * a task in 4 segments or more). A warp's tokens count its bytes; its tiles, 64 tokens from each segment's first,
 * count its MMAs. Built and run from the repository root (README.md beside it). */
#include <stdio.h>
#include <stdlib.h>

#include "gpu/dl_plan.h"

static void share(const dl_plan *p, int Hkv, const int32_t *len, long long *most_tok, long long *most_tiles,
                  double *mean_tok)
{
    const int32_t *slot_ptr = p->buf, *task = slot_ptr + p->num_slots + 1, *t0 = task + p->num_segs,
                  *t1 = t0 + p->num_segs;
    double sum = 0;
    int used = 0;
    *most_tok = *most_tiles = 0;
    for (int s = 0; s < p->num_slots; s++) {
        long long tok = 0, tiles = 0;
        for (int k = slot_ptr[s]; k < slot_ptr[s + 1]; k++) {
            const long long end = (long long)t1[k] * p->tile, l = len[task[k] / Hkv];
            const long long n = (end < l ? end : l) - (long long)t0[k] * p->tile;
            tok += n;
            tiles += (n + 63) / 64;
        }
        if (tok) used++, sum += (double)tok;
        if (tok > *most_tok) *most_tok = tok;
        if (tiles > *most_tiles) *most_tiles = tiles;
    }
    *mean_tok = sum / used;
}

int main(void)
{
    const struct { const char *name; int B, L; } cases[] = {
        {"llama3-8B B1 L32768", 1, 32768},   {"llama3-8B B4 L32768", 4, 32768},
        {"llama3-8B B16 L8192", 16, 8192},   {"llama3-8B B64 L1024", 64, 1024},
        {"70B shape B64 L4096", 64, 4096},   {"llama3-8B B128 L4096", 128, 4096},
    };
    printf("case\tunit\tcut\tctas\tcostliest_tokens\tmean_tokens\tcostliest_tiles\n");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t *len = malloc(sizeof(int32_t) * (size_t)cases[i].B);
        for (int b = 0; b < cases[i].B; b++) len[b] = cases[i].L;
        for (int unit = 64; unit >= 16; unit /= 4) {
            const int per = 64 / unit;
            dl_plan p;
            const char *cut = "cost4";
            if (dl_plan_build_waves(cases[i].B, 8, len, unit, 3, 132, 264, 4 * per, 1, 0, 1, DL_ORDER_AUTO, 4 * per,
                                    &p))
                return 1;
            if (p.order == DL_ORDER_HEADS && dl_plan_max_task_segs(&p) >= DL_PLAN_MERGE_KERNEL_SEGS) {
                dl_plan_free(&p);
                if (dl_plan_build_waves(cases[i].B, 8, len, unit, 3, 132, 264, 4 * per, 1, 0, 1, DL_ORDER_AUTO,
                                        DL_PLAN_APPORTION, &p))
                    return 1;
                cut = "apportion";
            }
            long long tok, tiles;
            double mean;
            share(&p, 8, len, &tok, &tiles, &mean);
            printf("%s\t%d\t%s\t%d\t%lld\t%.1f\t%lld\n", cases[i].name, unit, cut, p.ctas, tok, mean, tiles);
            dl_plan_free(&p);
        }
        free(len);
    }
    return 0;
}

/* decode_stream.cu - the streaming tensor-core decode family, built for bytes:
 * bf16-cast-stream, bf16-fast-stream, bf16-hw-stream (warp consumers, mma.sync; golden
 * model bf16) and fp8-none-wgmma (warpgroup consumers, native FP8 wgmma; golden model fp8:
 * see "the wgmma consumer" below). Two producers (stream_produce_one: one warp per consumer, with the
 * pool of DL_STREAM_POOL; stream_produce: one warp serving every consumer, the wgmma kernels'), one
 * plan, one merge; each variant is judged against its model computed for the schedule it ran.
 *
 * What differs from decode_mma.cu (the reference system's shape, heads as MMA
 * rows, every thread copying 16-byte pieces with cp.async):
 *  - producer warps (one per consumer warp) stream the KV with the bulk-copy engine (TMA,
 *    cp.async.bulk.tensor, one copy per page and 128-byte column slab, an
 *    mbarrier per stage) while consumer warps compute: no address arithmetic or
 *    copy issue per byte in the consumers;
 *  - each consumer warp owns whole 64-token tiles (a ring of S stages of its own), or, where the case
 *    takes it (the page stage, page_shape, DL_STREAM_STAGE), the 8 (or 2) consumer warps of a CTA share
 *    one ring whose stages hold 16 rows of all 8 KV heads (or of 2), one TMA box each;
 *    tokens are the MMA M dimension and the group's query heads N
 *    (S^T = K Q^T with K as the A operand, Q as B held in registers; groups <= 8
 *    fit one n8 tile, 9..16 two), so no padded rows and no cross-warp softmax;
 *  - P goes from the S accumulator to the B operand of O^T += V^T P with
 *    movmatrix (an 8x8 transpose in registers);
 *  - the dequant is a policy with three values (dl_fp8_dq of gpu/dl_dequant.cuh):
 *    scalar cast (one code at a time, the reference CUDA-core decode's conversion),
 *    the four-at-a-time bit trick, and the packed hardware conversion
 *    cvt.rn.f16x2.e4m3x2 (hw; the MMAs then run in f16, which holds every
 *    e4m3/e5m2 value exactly);
 *  - exp2 with log2(e) folded into the score scale; the accumulator rescale is
 *    skipped when no running max of the warp rose;
 *  - a balanced schedule (gpu/plan.c): all tiles of all (request, KV head) tasks
 *    cut into runs, one per consumer warp, over one wave of resident CTAs (by
 *    default where it fits, the heads order: the Hkv warps of a run read the same
 *    pages' tokens, one KV head each: dl_plan.h, issue 10 attempt #24; its runs cut at
 *    request starts where that costs least, DL_STREAM_SEG_COST, attempt #30);
 *    the warp that finishes the last segment of a split task merges its partials
 *    (a ticket per task, no second launch);
 *  - a warp loads its next segment's inputs (record, Q, scales: seg_in) before the finished
 *    segment's stores, fence and ticket, and the producers prefetch later segments' Q into L2
 *    (attempt #37).
 * Numerics (the bf16 model, per segment of the plan): K, V = decode(code)
 * exactly (bf16 or f16 operands), Q rounded to bf16, FP32 accumulation,
 * running max per 64-token tile, P rounded to bf16 before P*V (the hw variant
 * then converts that bf16 value to f16: exact above 2^-14, P below it loses low
 * bits, a relative contribution < 2^-14), scales folded into score and output.
 * Last-tile rows past the sequence end are masked (scores -inf by select, V rows
 * zeroed in shared memory: zero_tail_rows) so stale or poisoned bytes never reach an MMA.
 * Layout constraints: page_size must divide 64 or be a multiple of 64 (a tile
 * is whole pages or part of one page), else SKIP.
 * Run: decodelab run FILE.h5 --variants '*-stream' --time */
#include <cuda.h>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "dl_claim.h"
#include "dl_cuda.cuh"
#include "dl_dequant.cuh"
#include "dl_dispatch.cuh"
#include "dl_mma.cuh"
#include "dl_plan.h"
#include "dl_tile_off.cuh"

namespace {

/* Producer warps of the warp-consumer kernels: one per consumer warp, each serving its consumer's
 * ring alone (the default since issue 10's attempt #11: one producer per CTA, serving every consumer
 * in turn, held the copy path alone at 1.19x the read at B128 L4096; one per consumer brought it to
 * 1.01x), or with make STREAM_PRODUCERS=one a single producer per CTA (kept for A/B runs). */
#ifndef DL_STREAM_PRODUCER_PER_CONSUMER
#define DL_STREAM_PRODUCER_PER_CONSUMER 1
#endif

/* Consumer warps and stages per consumer of every warp-consumer shape whose rings fit (W x S stages within
 * 200 KB), from make STREAM_SHAPE=W,S (issue 10, attempt #21: more consumer warps per SM; an experiment,
 * not a default); 0: the rule of stream_shape. */
#ifndef DL_STREAM_W
#define DL_STREAM_W 0
#endif
#ifndef DL_STREAM_S
#define DL_STREAM_S 0
#endif
/* make STREAM_SETMAXNREG=1 (attempt #22, an experiment): where a shape has 4 consumer warps and 4 producer
 * warps (one warpgroup each, e.g. STREAM_SHAPE=4,1), the kernel is compiled for 2 CTAs per SM (128 registers
 * a thread at launch) and the producers' warpgroup gives registers to the consumers' (setmaxnreg: 40 and
 * 208), so that 8 consumer warps per SM keep the registers one has now. */
#ifndef DL_STREAM_SETMAXNREG
#define DL_STREAM_SETMAXNREG 0
#endif
constexpr int kSmrProducerRegs = 40, kSmrConsumerRegs = 208; /* 4 x 32 x (40 + 208) x 2 CTAs <= 65536 */

/* Shared-memory shape of one instantiation: per stage a K tile and a V tile of
 * 64 rows, each stored as SLABS column slabs of 64 x SW bytes (SW = TMA box width,
 * at most 128 bytes so the 128-byte swizzle applies). W consumer warps with S
 * stages each. D 128 with an 8-bit cache: 2 warps of 3 stages (96 KB, 2 CTAs an SM) since attempt #54, instead of
 * 3 of 2 (why, inferred and not measured per stage: a warp a tile behind then leaves its producer a free stage; the plan
 * also changes, 2 warps a CTA giving fewer, longer runs) (H100, 2026-12-05, bf16-hw-stream,
 * median us: the 70B shape 212.16-212.35 -> 199.87-200.19, B64 L1024 70.43-70.62 -> 62.59-62.72, B4 L32768 on the
 * tile rings 113.39 -> 111.33, B1 L32768 42.59 -> 42.24; gpu/NOTES.md #54). Groups 9-16 (NT 2)
 * with the fast policy keep 3 x 2 (attempt #58; one CTA an SM of 3 consumer warps, where 2 x 3 ran two of 2; why
 * that is faster not measured. H100, 2026-12-05, group 16 B128 L4096 e4m3, median us, 3 x 2 against 2 x 3:
 * bf16-fast-stream 133.15-133.18 against 155.97-156.03; bf16-cast-stream 225.81-225.90 against 211.55-211.79 and
 * bf16-hw-stream 126.40-126.72 against 126.18-126.37, so those two keep 2 x 3). The 16-bit caches keep 3 x 2 (D128 bf16:
 * B64 L1024 gained, 118.82 -> 108.51, but B128 L4096 and llama-13B lost 0.6-1.0 %, and bf16-cast-mma is as fast at
 * B64 L1024). D 256 with an 8-bit cache: 2 x 3 for the hw policy alone (attempt #56; 192 KB, 1 CTA an SM as with
 * 3 x 2; H200 2026-12-05, bf16-hw-stream, e4m3, median us: B64 L1024 102.24 -> 90.46, the 70B shape at L1024 125.54
 * -> 100.83, B4 L32768 158.45 -> 149.68); the cast and fast policies, whose consumers cost more, keep 3 x 2 (2 x 3:
 * bf16-fast-stream B4 L32768 221.57 -> 290.90, B64 L1024 150.72 -> 158.88; bf16-cast-stream B4 350.69 -> 508.03).
 * D64 (8 KB stages) keeps 4 x 3: 2 x 3 lost there (H100, B128 L4096 199.52 -> 211.20).
 * DEEP (attempt #57, DL_STREAM_DEEP): the 16-bit caches at D 128 in 2 x 3 as well (192 KB, 1 CTA an SM), a second
 * instantiation the plan picks where the consumer warps' runs are short (stream_make_plan): 2 x 3 took bf16-cast-stream
 * B64 L1024 bf16 from 85.86-85.89 to 79.39-79.42 us and llama-13B from 326.93 to 328.42 (H200, 2026-12-05). */
template <int D, int ES, int DQ = DL_DQ_CAST, int NT = 1, bool DEEP = false> struct stream_shape {
    static_assert(!DEEP || (D == 128 && ES == 2), "the deep rings: the 16-bit caches at D 128");
    static constexpr int R = D * ES;
    static constexpr int SW = R >= 128 ? 128 : R;
    static constexpr int SLABS = R / SW;
    static constexpr int TILE_BYTES = kTile * R;
    static constexpr int STAGE = 2 * TILE_BYTES;
    static constexpr bool SET = DL_STREAM_W > 0 && DL_STREAM_S > 0 && DL_STREAM_W * DL_STREAM_S * STAGE <= 200 * 1024;
    static constexpr bool TWO_BY_3 = /* #54, #56, #57, #58 */
        DEEP || (ES == 1 && ((D == 128 && (NT == 1 || DQ != DL_DQ_FAST)) || (D == 256 && DQ == DL_DQ_HW)));
    static constexpr int W = SET ? DL_STREAM_W : STAGE <= 8192 ? 4 : TWO_BY_3 ? 2 : (STAGE <= 32768 ? 3 : 1);
    static constexpr int S = SET ? DL_STREAM_S : STAGE <= 8192 || TWO_BY_3 ? 3 : 2;
    static constexpr int NP = DL_STREAM_PRODUCER_PER_CONSUMER ? W : 1; /* producer warps */
    static constexpr int THREADS = 32 * (W + NP);
    static constexpr bool SMR = DL_STREAM_SETMAXNREG && W == 4 && NP == 4; /* setmaxnreg (attempt #22) */
    static constexpr int SMEM = W * S * STAGE + 1024 + 2 * W * S * 8 + W * S * 4; /* + a header per stage */
    /* The plan's CTAs an SM at most, unless DL_STREAM_CTAS_PER_SM asks (0: what fits). The hw policy at D 128, 8-bit
     * caches, groups 9-16 (its 2 x 3 kernel fits twice an SM): one (attempt #59). B128 L4096 group 16 e4m3,
     * bf16-hw-stream: 132x2w:264segs 90.34 us against 264x2w:528segs 97.73 / 97.76 (H200, 2026-12-05f) and 90.8 /
     * 98.6 (another H200, 2026-12-05e); H100 115.3 against 126.3, and at B4 L32768 48.1 against 49.0 (2026-12-05g):
     * the small batch does not lose the halved consumer warps. The cast policy's kernel of the same shape wants two
     * (212.3-212.8 against 284.5-284.6 us, H200, 2026-12-05e). */
    static constexpr int CTAS_CAP = ES == 1 && D == 128 && DQ == DL_DQ_HW && NT == 2 ? 1 : 0;
    static_assert(CTAS_CAP == 0 || CTAS_CAP == 1, "0: what fits, 1: one"); /* and nvcc sees it used */
};
/* The rule above as the table the README gives (Tuning the streaming family; consumer warps x stages), checked at
 * compile time so that a change to one is a change to the other. A STREAM_SHAPE=W,S build sets every shape. */
template <int D, int ES, int DQ, int NT, bool DEEP = false> constexpr bool shape_is(int w, int s)
{
    return stream_shape<D, ES, DQ, NT, DEEP>::W == w && stream_shape<D, ES, DQ, NT, DEEP>::S == s;
}
static_assert((DL_STREAM_W > 0 && DL_STREAM_S > 0) ||
                  (shape_is<128, 1, DL_DQ_CAST, 1>(2, 3) && shape_is<128, 1, DL_DQ_FAST, 1>(2, 3) &&
                   shape_is<128, 1, DL_DQ_HW, 1>(2, 3) &&                                  /* #54 */
                   shape_is<128, 1, DL_DQ_CAST, 2>(2, 3) && shape_is<128, 1, DL_DQ_FAST, 2>(3, 2) &&
                   shape_is<128, 1, DL_DQ_HW, 2>(2, 3) &&                                  /* #58 */
                   shape_is<256, 1, DL_DQ_HW, 1>(2, 3) && shape_is<256, 1, DL_DQ_FAST, 1>(3, 2) &&
                   shape_is<256, 1, DL_DQ_CAST, 1>(3, 2) &&                                /* #56 */
                   shape_is<64, 1, DL_DQ_HW, 1>(4, 3) && shape_is<64, 2, DL_DQ_CAST, 1>(3, 2) &&
                   shape_is<128, 2, DL_DQ_CAST, 1>(3, 2) && shape_is<128, 2, DL_DQ_CAST, 1, true>(2, 3) && /* #57 */
                   shape_is<256, 2, DL_DQ_CAST, 1>(1, 2)),
              "stream_shape's rule and the README's table of shapes disagree: change both");

/* The whole-page stage (issue 10, attempt #26; DL_STREAM_STAGE, the stage policy the dispatch picks where it
 * fits): one ring of S stages shared by the CTA's W = 8 consumer warps, one per KV head (the plan's heads order
 * with runs of Hkv = 8 slots: the 8 warps of a CTA walk the same tiles). A stage is the K or the V of 16 token
 * rows of all 8 heads, one TMA copy of a box (128 B, 16 rows, 8 heads) that lands as [head][row][128 B]: head h's
 * 16 rows are the 2 KB at h x 2 KB, 1 KB-aligned, so the 128-byte swizzle is that of the tile stages. A 64-token
 * tile is 8 stages, K0..K3 then V0..V3 (16 rows each); a consumer waits for the four K stages before S's first MMA
 * and the four V stages before P*V (attempt #27), and releases the K four after S, the V four after P*V (empty
 * barriers count every lane of the 8 warps). One producer warp,
 * lanes 0-7 one stage each.
 * Why: the copy probe (DL_STREAM_DRY=4, H200 2026-12-04) copied llama3-8B B128 L4096 e4m3 NHD in 8-head boxes
 * in 248.5 us against the read's 259.7 and the tile rings' copy path alone (DRY=1) 259.7, 1-head boxes 270.9.
 * Cases: 8-bit cache, D 128, 8 KV heads, group <= 8, page_size a multiple of 16 (either layout): page_misfit. */
/* The page ring's stages, from make STREAM_PAGE_S=N (8 or 12; an experiment: 12 is the default and the measured;
 * 13 measured no better, 2026-12-04b; a multiple of 4 since attempt #48: a tile's four K and four V stages are then
 * always an aligned four of the ring, one barrier each). */
#ifndef DL_STREAM_PAGE_S
#define DL_STREAM_PAGE_S 12
#endif
static_assert(DL_STREAM_PAGE_S == 8 || DL_STREAM_PAGE_S == 12, "STREAM_PAGE_S: 8 or 12 stages of 16 KB");
/* The page stage's heads a stage, HEADS (a template argument: attempt #70 made it a policy, 2026-12-06). 8: the
 * whole page (the KV heads are 8: page_misfit), a CTA of 8 consumer warps and one producer; 2: 16 rows of an
 * aligned pair of KV heads (the plan's head groups of 2, DL_PLAN_HEAD_GROUP), a CTA of 2 consumer warps and one
 * producer (4 CTAs an SM), the KV heads even; the copies' boxes are the stage's heads wide (the copy probe,
 * DL_STREAM_DRY=4 with DL_STREAM_PROBE_WALK=1, copied one-head boxes issued back to back 7 % slower than whole-page
 * boxes at B4 L32768 and two-head boxes 1.4 %). The two-head stage is compiled for the hw policy alone: on the H200
 * (2026-12-06i, against the tile rings) bf16-hw-stream B1 L32768 -2.4 %, B4 -0.5 %, B128 L4096 -0.6 % (against the
 * 8-head page stage), B64 L1024 +5.1 %, the 70B shape +5.8 %; bf16-cast-stream and bf16-fast-stream 0.8-16 % slower
 * than with 8 heads (gpu/NOTES.md #70). page_stage_plan's rule follows those figures. */
template <int HEADS_> struct page_shape {
    static_assert(HEADS_ == 2 || HEADS_ == 8, "the page stage: 2 or 8 KV heads a stage");
    static constexpr int R = 128, SW = 128, SLABS = 1, ROWS = 16, HEADS = HEADS_;
    static constexpr bool ALL = HEADS == 8; /* the whole page: the KV heads are 8 (page_misfit), so the 8-head kernels
                                             * need no head arithmetic and keep their code (page_rows, the box's head) */
    static constexpr int STAGE = ROWS * HEADS * R; /* 16 KB at 8 heads */
    static constexpr int TILE_BYTES = STAGE;       /* (the tile rings' V offset: not used here) */
    static constexpr int HEAD_BYTES = ROWS * R;    /* one head's rows in a stage */
    static constexpr int W = HEADS, S = DL_STREAM_PAGE_S, NP = 1;
    static constexpr int Q = S / 4; /* quads: a full and an empty barrier each (attempt #48) */
    static constexpr int THREADS = 32 * (W + NP);
    static constexpr bool SMR = false;
    static constexpr int SMEM = S * STAGE + 1024 + 2 * Q * 8;
};
constexpr int kPageRows = 16; /* a page stage's token rows, whatever its heads */
/* PAGE: 0 (the tile rings, stream_shape) or the page stage's heads (page_shape<PAGE>) */
template <int D, dl_dtype KV, int DQ, int NT, int PAGE, bool DEEP = false>
using stream_shape_of = std::conditional_t<PAGE != 0, page_shape<PAGE ? PAGE : 8>,
                                           stream_shape<D, dl_kv_size<KV>::value, DQ, NT, DEEP>>;
/* The instantiations with a deep-ring kernel (attempt #57). */
template <int D, dl_dtype KV> constexpr bool kDeepFits = D == 128 && dl_kv_size<KV>::value == 2;
/* The instantiations with a page-stage kernel (8 heads a stage: every policy; 2 heads: the hw policy's, attempt #70). */
template <int D, dl_dtype KV, int NT> constexpr bool kPageFits = D == 128 && dl_kv_size<KV>::value == 1 && NT == 1;
template <int D, dl_dtype KV, int DQ, int NT, int PAGE>
constexpr bool kPageHeadsFit = kPageFits<D, KV, NT> && (PAGE == 8 || (PAGE == 2 && DQ == DL_DQ_HW));
/* bf16-hw-stream takes the page stage (DL_STREAM_STAGE=auto) where a CTA's run has this many tiles or more (with
 * 8 heads a stage, where its plan merges by ticket; with 2, or where it needs the merge kernel), and NHD, groups <= 4
 * (page_stage_plan) */
constexpr int kPageHwMinRun = 12;
/* DL_STREAM_HW_PAGE's defaults (standalone: 2; a layer chained with programmatic dependent launch: 8) and what
 * they were measured on: gpu/plan.c, dl_plan_hw_page_heads */
/* The deep rings (attempt #57, DL_STREAM_DEEP unset): taken where a slot's run averages this many tiles or fewer. The
 * bound lies between the cases measured (H200, 2026-12-05, 2 x 3 against 3 x 2, bf16-cast-stream): B64 L1024 bf16,
 * 31 tiles a slot, -7.5 %; llama-13B B64 L1024, 155 tiles, +0.5 %; where between them it turns is not measured. */
constexpr int kDeepMaxRun = 64;
/* DL_STREAM_SEG_COST's default (plans merged by ticket): a request boundary inside a CTA's run counts as 4 tiles.
 * H200 2026-12-04c, 0 -> 4: bf16-hw-stream 70B B64 L4096 (tile rings) 161.4 -> 154.1 us, B128 L4096 (page)
 * 269.5 -> 262.0, B64 L1024 57.7 -> 54.8; bf16-fast-stream B128 283.9 -> 267.8; fp8-none-wgmma 70B 171.3 -> 157.6,
 * B128 308.9 -> 303.7; 8 no better than 4 (B128). */
constexpr int kSegCost = 4;

/* ------------------------------------------------------------ PTX wrappers */

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(uint64_t *bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "WAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra WAIT_%=;\n"
                 "}\n" ::"r"(smem_u32(bar)),
                 "r"(parity)
                 : "memory");
}
/* One TMA copy of a box (SW bytes x rows) at coordinates (x, slot, head, page). */
__device__ __forceinline__ void tma_load(void *dst, const CUtensorMap *map, uint64_t *bar, int x, int slot, int head,
                                         int page)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(smem_u32(dst)),
                 "l"(map), "r"(x), "r"(slot), "r"(head), "r"(page), "r"(smem_u32(bar))
                 : "memory");
}

#if DL_STREAM_DIAG
/* A TMA prefetch of a box into L2 (no shared memory, no barrier): the copy probe's DL_STREAM_PROBE_L2PF (attempt
 * #46's producers used it too: branch attempt46) */
__device__ __forceinline__ void tma_prefetch_l2(const CUtensorMap *map, int x, int slot, int head, int page)
{
    asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];\n" ::"l"(map), "r"(x),
                 "r"(slot), "r"(head), "r"(page)
                 : "memory");
}
#endif

__device__ __forceinline__ uint32_t movmatrix_t(uint32_t x)
{
    uint32_t y;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
    return y;
}
__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t *r)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t addr, uint32_t *r)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* Pack two floats (already rounded to bf16 values where the model says so) into
 * the operand type. */
template <bool F16> __device__ __forceinline__ uint32_t pack2(float lo, float hi)
{
    if constexpr (F16) {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<uint32_t *>(&h);
    } else {
        return dl_pack_bf16x2(lo, hi);
    }
}
__device__ __forceinline__ float round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
/* pack2<true>(round_bf16(lo), round_bf16(hi)) with the two roundings as one cvt.rn.bf16x2.f32 (the same RNE) and the
 * halves widened by a shift and a mask: 4 instructions a pair instead of 5 (attempt #52) */
__device__ __forceinline__ uint32_t pack_f16_of_bf16(float lo, float hi)
{
    const uint32_t b = dl_pack_bf16x2(lo, hi);
    return pack2<true>(__uint_as_float(b << 16), __uint_as_float(b & 0xFFFF0000u));
}
/* 2^x as one MUFU.EX2 (issue 10, attempt #39). exp2f compiles to the same MUFU.EX2 inside a range test, a halving
 * and a squaring, so that results under 2^-126 come out subnormal; this flushes them to zero. Only the warp
 * consumers' softmax uses it: there every exponent is s - m <= 0 with the row's largest term 1, so a flushed term
 * (under 2^-126) changes neither the FP32 sum nor P*V, and P rounded to f16 flushes it anyway. */
__device__ __forceinline__ float ex2_ftz(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* f16x2 -> bf16x2 (the bf16 model rounds an f16 cache to bf16) */
__device__ __forceinline__ uint32_t h2_to_bf2(uint32_t w)
{
    float2 f = dl_h2_bits_to_f32(w);
    return dl_pack_bf16x2(f.x, f.y);
}

/* A warp consumer's segment inputs, loaded as early as the warp knows the segment and turned into operands only
 * where they are first needed (issue 10, attempt #37): at a segment boundary the next segment's loads are issued
 * before the finished segment's epilogue, so that they overlap its stores, fence and ticket instead of following
 * them. Q as the B operand: column n = query head g (+8 per n-tile), k-step ks; fp8: logical k 2c,2c+1 / 2c+8,2c+9
 * = dims c*D/4 + 4ks + {0,1} / {2,3} (the lane's K slice); 16-bit: the natural order. Raw: the two 16-bit pairs
 * (d0, d0+1) and (d1, d1+1) of each k-step, 32-bit loads (d0 and d1 are even). */
/* The first of the dims of Q that lane column c holds at k-step ks (its pair d0, d0 + 1; the second pair at
 * d0 + 2 for an 8-bit cache, d0 + 8 for a 16-bit one): the order of the B operand above. */
template <int D, bool FP8> __device__ __forceinline__ int q_dim0(int ks, int c) { return FP8 ? c * (D / 4) + 4 * ks : 16 * ks + 2 * c; }
template <int D, int NT> struct seg_in {
    int4 r, e;                  /* the segment's record (grec): {task, tok0, tok1, page base}, {length, k, k+1, out} */
    uint32_t q[NT][D / 16][2];  /* Q, raw pairs */
    float ks, vs;               /* k_scale, v_scale of its KV head */
};
template <int D, int NT, bool FP8>
__device__ __forceinline__ void seg_in_load(const dl_gpu_args &a, const int4 *rec, int k, int t, int g, int c,
                                            seg_in<D, NT> &s)
{
    const int G = a.num_qo_heads / a.num_kv_heads, b = t / a.num_kv_heads, kvh = t % a.num_kv_heads;
    s.r = rec[2 * k];
    s.e = rec[2 * k + 1];
    s.ks = a.k_scale[kvh];
    s.vs = a.v_scale[kvh];
    const uint16_t *q = (const uint16_t *)a.q;
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        const int head = g + 8 * nt;
        const size_t base = ((size_t)b * a.num_qo_heads + kvh * G + head) * D;
#pragma unroll
        for (int ks = 0; ks < D / 16; ks++) {
            const int d0 = q_dim0<D, FP8>(ks, c), d1 = d0 + (FP8 ? 2 : 8);
            s.q[nt][ks][0] = head < G ? *(const uint32_t *)(q + base + d0) : 0u;
            s.q[nt][ks][1] = head < G ? *(const uint32_t *)(q + base + d1) : 0u;
        }
    }
}
/* The B operand from raw Q pairs: each element rounded to bf16 (the model), times mul, packed for the MMA type. */
template <bool F16, int D, int NT>
__device__ __forceinline__ void q_operand(const uint32_t (&raw)[NT][D / 16][2], dl_dtype qt, float mul,
                                          uint32_t (&qf)[NT][D / 16][2])
{
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int ks = 0; ks < D / 16; ks++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint32_t w = raw[nt][ks][h];
                float lo, hi;
                if (qt == DL_BF16) {
                    lo = __uint_as_float(w << 16);
                    hi = __uint_as_float(w & 0xffff0000u);
                } else {
                    lo = __half2float(__ushort_as_half((unsigned short)(w & 0xffffu)));
                    hi = __half2float(__ushort_as_half((unsigned short)(w >> 16)));
                }
                qf[nt][ks][h] = pack2<F16>(round_bf16(lo) * mul, round_bf16(hi) * mul);
            }
}
/* The B operand loaded and made at once, element by element (the warp consumers without attempt #37's early load). */
template <bool F16, int D, int NT, bool FP8>
__device__ __forceinline__ void q_load_operand(const dl_gpu_args &a, int t, int g, int c, float mul,
                                               uint32_t (&qf)[NT][D / 16][2])
{
    const int G = a.num_qo_heads / a.num_kv_heads, b = t / a.num_kv_heads, kvh = t % a.num_kv_heads;
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        const int head = g + 8 * nt;
#pragma unroll
        for (int ks = 0; ks < D / 16; ks++) {
            const int d0 = q_dim0<D, FP8>(ks, c), d1 = d0 + (FP8 ? 2 : 8);
            float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            if (head < G) {
                const size_t base = ((size_t)b * a.num_qo_heads + kvh * G + head) * D;
                v[0] = round_bf16(dl_load_q(a.q, base + d0, a.q_dtype)) * mul;
                v[1] = round_bf16(dl_load_q(a.q, base + d0 + 1, a.q_dtype)) * mul;
                v[2] = round_bf16(dl_load_q(a.q, base + d1, a.q_dtype)) * mul;
                v[3] = round_bf16(dl_load_q(a.q, base + d1 + 1, a.q_dtype)) * mul;
            }
            qf[nt][ks][0] = pack2<F16>(v[0], v[1]);
            qf[nt][ks][1] = pack2<F16>(v[2], v[3]);
        }
    }
}
/* An L2 prefetch of the Q rows of request b, query heads h0 .. h0 + nh - 1 (16-bit values), one 128-byte line a
 * lane: the producers' for the segments they start after their first (attempt #37), so that the consumer's load of
 * that segment's Q at the previous segment's end hits L2. */
__device__ __forceinline__ void q_prefetch_l2(const dl_gpu_args &a, int b, int h0, int nh, int lane)
{
    const char *p0 = (const char *)a.q + ((size_t)b * a.num_qo_heads + h0) * a.head_dim * 2;
    const uintptr_t lo = (uintptr_t)p0 & ~(uintptr_t)127, hi = (uintptr_t)p0 + (uintptr_t)nh * a.head_dim * 2;
    for (uintptr_t p = lo + 128 * (uintptr_t)lane; p < hi; p += 32 * 128)
        asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
}
/* The same for task t's query heads (request t / Hkv, KV head t % Hkv's group; Hkv = a.num_kv_heads). */
__device__ __forceinline__ void q_prefetch_task_l2(const dl_gpu_args &a, int t, int Hkv, int lane)
{
    q_prefetch_l2(a, t / Hkv, (t % Hkv) * (a.num_qo_heads / Hkv), a.num_qo_heads / Hkv, lane);
}

/* The lane's N ldmatrix bases in a tile at shared address t: t + y[q], each behind an empty asm so that the compiler
 * adds each load's constant to one of these (the load's immediate) rather than folding the constants into the
 * lane terms (it ORed them, then added: one IADD3 a load) */
template <int SW> __device__ __forceinline__ void ldsm_bases(const ldsm_lane<SW> &l, uint32_t t,
                                                             uint32_t (&b)[ldsm_lane<SW>::N])
{
#pragma unroll
    for (int q = 0; q < ldsm_lane<SW>::N; q++) asm("mov.u32 %0, %1;\n" : "=r"(b[q]) : "r"(t + l.y[q]));
}
/* The shared address of rows r0 + lr, chunks 2k + b from the bases (ldsm_bases) */
template <int SW> __device__ __forceinline__ uint32_t ldsm_at(const uint32_t (&b)[ldsm_lane<SW>::N], int r0, int k)
{
    return b[k % ldsm_lane<SW>::N] + ldsm_const<SW>(r0, k);
}

/* Orders this thread's generic shared-memory writes before later async-proxy (TMA, wgmma) accesses. */
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/* Zero rows nvalid..63 of a stage's tile (R bytes a row, all slabs), by thread tid of n. The rows of a
 * partial tile past the sequence end hold stale or never-written bytes, NaN codes among them, and a
 * P of 0 does not cancel a NaN in P*V; zeroing them once here replaced a select on every V operand of
 * every tile (64 SEL per 64-token tile in the D128 fp8 warp consumer, 128 LOP3 in the 16-bit one:
 * issue 10, attempt #14). The fence orders the writes before the producer's next copy into the stage
 * (the caller's arrival on the empty barrier releases it); callers sync before reading the rows. */
template <int SW, int R>
__device__ __forceinline__ void zero_tail_rows(const uint8_t *tile, int nvalid, int swz, int tid, int n)
{
    constexpr int CH = R / 16;
    for (int i = tid; i < (kTile - nvalid) * CH; i += n)
        *(uint4 *)(const_cast<uint8_t *>(tile) + tile_off<SW>(nvalid + i / CH, i % CH, swz)) = make_uint4(0u, 0u, 0u, 0u);
    fence_async_smem();
}
/* The page stage's form (page_shape): rows from..15 of one head's 16 rows of a stage (SW = R: one slab). */
template <int R>
__device__ __forceinline__ void zero_page_rows(const uint8_t *rows, int from, int swz, int tid, int n)
{
    constexpr int CH = R / 16;
    for (int i = tid; i < (kPageRows - from) * CH; i += n)
        *(uint4 *)(const_cast<uint8_t *>(rows) + tile_off<R>(from + i / CH, i % CH, swz)) = make_uint4(0u, 0u, 0u, 0u);
}

/* The lane's V bytes of k-step kk of a tile (tokens 2c, 2c+1, 2c+8, 2c+9 of its 16; VB bytes each from dim g*VB):
 * w[r][q], r the token, q the 32-bit word (attempt #41: the tile rings load k-step 0's before the softmax). The
 * consumer's P*V loop keeps its own copy of these loads: called from there too it changed the code of kernels #41
 * does not touch (page as a runtime argument: the D 64 hw tile loop's stall cycles 2127 -> 2394; as a template
 * argument: D 256 kernels among 24 that differed). */
template <int SW, int VB>
__device__ __forceinline__ void v_words(const uint8_t *vb, int kk, bool page, const v_lane<VB> &vl,
                                        uint32_t (&w)[4][VB / 4])
{
    constexpr int VW = VB / 4;
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const int row0 = (page ? 0 : kk * 16) + 8 * (r >> 1); /* + 2c + (r & 1): in vl */
#pragma unroll
        for (int q = 0; q < VW; q += 4) {
            if constexpr (VW >= 4) {
                const uint4 x = *(const uint4 *)(vb + vl.off[r & 1][q / 4] + row_step<SW>(row0));
                w[r][q] = x.x; w[r][q + 1] = x.y; w[r][q + 2] = x.z; w[r][q + 3] = x.w;
            }
        }
        if constexpr (VW == 2) {
            const uint2 x = *(const uint2 *)(vb + vl.off[r & 1][0] + row_step<SW>(row0));
            w[r][0] = x.x; w[r][1] = x.y;
        }
    }
}
/* The page stage's ring (page_shape, S stages, S a multiple of 4): stage i of a consumer's tile j (K0..K3 = 0..3,
 * V0..V3 = 4..7) is the ring's (8j + i) mod S, and its head's rows are page_rows (from the quad: below). The
 * barriers are per quad (attempt #48): a tile's four K stages, or its four V stages, are always an aligned four of
 * the ring, quad u = 2j + h (h 0: K, 1: V), barrier u mod Q at phase (u / Q) & 1. A consumer waits for its tile's K quad before S's first MMA and
 * for its V quad before P*V (so that ptxas interleaves the four m-tiles' chains, attempt #27), and releases the K
 * quad after S, the V quad after P*V (one proxy fence: see the tile rings' release). Each stage released after its
 * own MMAs (8 fences a tile) was slower in every row measured, bf16-hw-stream 70B B64 L4096 e4m3 176.10 us against
 * 171.74, B64 L1024 65.17 / 64.90, B128 L4096 275.07 / 272.35, and bf16-fast-stream by 1.7-2.2 % (H200 2026-12-04,
 * call 5). A barrier per stage (8 waits and 8 arrivals a tile, before #48) made a full tile's path 860 instructions
 * against 746 (bf16-hw-stream D128 e4m3, `decodelab sass --loop` less its zeroing). */
template <int Q, class PS> __device__ __forceinline__ const uint8_t *page_rows(const uint8_t *ring, int j, int i, int kvh)
{
    const unsigned qd = (2u * j + i / 4) % Q; /* stage (8j + i) mod S = 4 qd + i mod 4 */
    const int h = PS::ALL ? kvh : kvh % PS::HEADS; /* the head's place in the stage */
    return ring + (4 * qd + i % 4) * PS::STAGE + h * PS::HEAD_BYTES;
}
template <int Q> __device__ __forceinline__ void page_wait(uint64_t *full, int j, int h)
{
    const unsigned u = 2u * j + h;
    mbar_wait(&full[u % Q], (u / Q) & 1);
}
template <int Q> __device__ __forceinline__ void page_release(uint64_t *empty, int j, int h)
{
    fence_async_smem();
    __syncwarp();
    mbar_arrive(&empty[(2u * j + h) % Q]);
}

/* Merge the partials of one split task (workspace rows k0..k1 in token order, each
 * a normalized o and natural-log lse per query head) into
 * o/lse, by one warp, lanes over (head, 4-float column) items:
 *   M = max lse_i, w_i = exp(lse_i - M), o = sum w_i o_i / sum w_i, lse = M + log(sum w_i).
 * Partials written by other CTAs are read through L2 (ld.global.cg).
 * M and the sums updated segment by segment (online), NB items of a lane at once: no store
 * comes between their loads, so the batch waits on one L2 round trip per few segments instead of one
 * per item (the stores to o may alias the workspace for all the compiler knows: one item at a time,
 * the next item's loads waited for the last one's stores; issue 10 attempt #29). NB = 4 costs the
 * 8-bit D128 warp consumers no register (ptxas); elsewhere it raised counts or spills (D64 groups 9-16:
 * 128 -> 170 registers; the wgmma kernels' spills), so those keep NB = 1. (A batched form
 * in two passes, lse loaded twice and the indices by shuffles, was slower everywhere: attempt #13.) */
template <int NB>
__device__ __forceinline__ void merge_task(const dl_gpu_args &a, int k0, int k1, int G, size_t row0, int lane)
{
    const int D = a.head_dim, cols = D / 4, n = G * cols;
    const float *ws = (const float *)a.workspace;
    for (int it0 = 0; it0 < n; it0 += 32 * NB) {
        float M[NB], den[NB];
        float4 acc[NB];
#pragma unroll
        for (int u = 0; u < NB; u++) M[u] = -INFINITY, den[u] = 0.0f, acc[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll(NB == 1 ? 4 : 2)
        for (int k = k0; k < k1; k++) {
            float l[NB];
            float4 o[NB];
#pragma unroll
            for (int u = 0; u < NB; u++) { /* a lane's item past n reloads item 0's row (never stored) */
                const int it = it0 + lane + 32 * u < n ? it0 + lane + 32 * u : 0, head = it / cols, col = it % cols;
                const float *p = ws + ((size_t)k * G + head) * (D + 1);
                l[u] = __ldcg(p + D);
                o[u] = make_float4(__ldcg(p + 4 * col), __ldcg(p + 4 * col + 1), __ldcg(p + 4 * col + 2),
                                   __ldcg(p + 4 * col + 3));
            }
#pragma unroll
            for (int u = 0; u < NB; u++) {
                const float Mn = fmaxf(M[u], l[u]);
                const float f = M[u] == -INFINITY ? 0.0f : expf(M[u] - Mn), w = expf(l[u] - Mn);
                acc[u].x = acc[u].x * f + w * o[u].x;
                acc[u].y = acc[u].y * f + w * o[u].y;
                acc[u].z = acc[u].z * f + w * o[u].z;
                acc[u].w = acc[u].w * f + w * o[u].w;
                den[u] = den[u] * f + w;
                M[u] = Mn;
            }
        }
#pragma unroll
        for (int u = 0; u < NB; u++) {
            const int it = it0 + lane + 32 * u;
            if (it >= n) continue;
            const int head = it / cols, col = it % cols;
            float *o = a.o + (row0 + head) * D + 4 * col;
            o[0] = acc[u].x / den[u]; o[1] = acc[u].y / den[u]; o[2] = acc[u].z / den[u]; o[3] = acc[u].w / den[u];
            if (col == 0) a.lse[row0 + head] = M[u] + logf(den[u]);
        }
    }
}

/* Attempt #71 (make STREAM_CLAIM=1, an experiment; DL_STREAM_CLAIM picks it at run time): a split task's segments
 * claim their tiles (gpu/dl_claim.h) and, in a warp's last segment once its own are claimed, take the unclaimed
 * tiles at the back of the task's other segments, so that the warps of a task that run faster read more of it. The
 * tile rings with a producer per consumer at D 128 and groups <= 8 (the kernels that load a segment's inputs early,
 * #37) alone; 0 compiles none of it, so that the other builds' kernels keep their code. Measured on an H100: at best a
 * tie with the plan's fixed segments (gpu/NOTES.md, #71). */
#ifndef DL_STREAM_CLAIM
#define DL_STREAM_CLAIM 0
#endif
#if DL_STREAM_CLAIM
constexpr int kClaimEnd = -2; /* #71: a stage's header after a claiming segment's last tile (no bytes in it) */
#endif

struct stream_params;
template <int NB = 1>
__device__ __forceinline__ void split_ticket_merge(const dl_gpu_args &a, const stream_params &sp, const int32_t *seg_out,
                                                   int t, int G, size_t row0, int lane);

struct stream_params {
    const int32_t *plan;  /* dl_plan buffer (device) */
    int num_slots, num_segs, num_tasks;
    int num_static;       /* slots [num_static, num_slots) are the pool (dl_plan.h): claimed at run time */
    const int4 *srec;     /* per slot, two int4: its first segment's record with k0, k1 = the slot's segments */
    const int4 *grec;     /* per segment, two int4: {task, tok0, tok1, page base}, {length, k, k + 1, out}, its
                           * tokens [tok0, tok1) (64-token tiles from tok0; tok1 <= length)
                           * (plan_records: the producers' first copy waits on two loads, not four) */
    const int4 *sfp;      /* attempt #34 (DL_STREAM_FIRST_PAGES=1; else NULL): per slot, the ids of the pages that hold
                           * tokens tok0 + 16 i (i < 4) of its first segment's first tile (page size >= 16), so
                           * that its first copies wait on one load (the record), not on the record, then the ids */
    int swz;              /* tile_off swizzle mode */
    int dry;              /* diagnosis only, wrong outputs (DL_STREAM_DRY, in a DIAG=1 build): 1 = the
                           * consumers release each stage unread and write nothing; 2 = the producer copies
                           * nothing (it arrives on the full barrier alone), every consumer computes on
                           * whatever the stage holds; 3 = the normal work, timed per CTA (timeline below:
                           * right outputs); 4 = the copy probe (stream_copy_probe) instead of the kernel;
                           * 5 (the page stage only) = copies and compute side by side, unsynchronized: the
                           * producer reuses a stage once its previous copy landed, the consumers never wait
                           * nor release and compute on whatever the ring holds; 6 = the normal work, but the
                           * merge kernel returns after its wait (its launch and wait without its body); 7 = the
                           * copy probe of 4 with its timeline (stream_copy_probe, launch_planned) */
#if DL_STREAM_CLAIM
    unsigned long long *cword; /* #71: per partial row, its segment's claim word (dl_claim.h); NULL: no claims */
    const int2 *cinfo;         /* per partial row: {its segment's first tile from the task's start, its tiles} */
    int cchunk, cmin, cown;    /* the owner's tiles a claim; a thief's fewest unclaimed tiles a victim must have
                                * (0: no thieves); a segment's first tiles, its owner's without a claim */
#endif
};
/* Attempt #60, the layer chain (run --chain): a warp-consumer kernel launched with programmatic dependent launch
 * after the previous layer's kernels (a->pdl 2, DL_STREAM_PDL) starts while they end. In a chain (a->pdl 1 or 2)
 * it triggers its dependents at entry (standalone it does not: the merge kernel's grid resident from the decode's
 * entry cost 0.5-2.2 us at B1 and B4 on an H100, 2026-12-05g). Its consumers wait (griddepcontrol.wait: the
 * previous grid complete, its writes visible) before their first inputs (Q), the outputs and the tickets; its
 * producers copy every tile before waiting but the one holding a request's last token (the only page the previous
 * kernel may write in a decode step: this step's K and V appended; the plan and the page table are the host's,
 * written before the step). The one-producer form (stream_produce, make STREAM_PRODUCERS=one) waits before its
 * first copy. A CHAIN_EARLY_COPIES=1 build (DL_STREAM_EARLY_COPIES) never waits to copy: a bound, right only where
 * the previous kernel writes none of the KV the copies read. Launched plainly, the waits return at once. The waits
 * are unconditional: a runtime branch on them moved ptxas's register allocation of 39 of the 123 kernels. */
#ifndef DL_STREAM_EARLY_COPIES
#define DL_STREAM_EARLY_COPIES 0
#endif
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
/* The diagnosis paths are compiled only with make DIAG=1: a runtime branch alone moved ptxas's
 * register allocation of the production kernels (bf16-fast-stream D128: 135 registers -> 128 and a
 * 36-byte spill). */
#ifndef DL_STREAM_DIAG
#define DL_STREAM_DIAG 0
#endif

/* The timeline of one launch (DL_STREAM_DRY=3, DIAG builds alone): %globaltimer per CTA at entry, at
 * the first tile a consumer holds, and at the last warp's exit, and the merge kernel's first entry and
 * last exit; the host prints their spread after each of the first launches (tl_report). */
#if DL_STREAM_DIAG
constexpr int kTlMax = 8192; /* CTAs timed; the rest are not */
constexpr size_t kTlPrefixMax = 4000; /* DL_STREAM_TL_CTAS: the longest path prefix */
__device__ unsigned long long g_tl[3 * kTlMax], g_tl_merge[2];
__device__ int g_merge_dry; /* DL_STREAM_DRY=6: the merge kernel parks its tickets and returns (set by launch_planned) */
/* DL_STREAM_MERGE_LATE=1 (DIAG builds; right outputs): in a layer chain the merge kernel does not trigger its
 * dependents at entry, so the next layer's decode grid launches as the merge CTAs exit, not while they are resident
 * (the thirty-seventh session's question: do resident merge CTAs keep the next layer's two-head CTAs off their SMs?) */
__device__ int g_merge_late;
/* the start's milestones per CTA (DL_STREAM_DRY=3): the producer's first slot record loaded, its first page id
 * loaded, its first copy issued, and a consumer's Q in registers (the warp consumers; ~0: not reached) */
enum { kTlRec = 0, kTlPage = 1, kTlIssue = 2, kTlQ = 3, kTlMarks = 4 };
__device__ unsigned long long g_tl_mark[kTlMarks * kTlMax];
__device__ unsigned int g_tl_sm[kTlMax]; /* the SM each CTA ran on (the per-CTA dump, DL_STREAM_TL_CTAS) */
__device__ __forceinline__ unsigned long long tl_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
/* a timed CTA's stamps at its entry (blockIdx.x < kTlMax): entry = exit = now, no first tile, no milestone, its SM */
__device__ __forceinline__ void tl_begin_cta()
{
    const unsigned long long t = tl_now();
    g_tl[3 * blockIdx.x] = t, g_tl[3 * blockIdx.x + 1] = ~0ull, g_tl[3 * blockIdx.x + 2] = t;
    for (int m = 0; m < kTlMarks; m++) g_tl_mark[kTlMarks * blockIdx.x + m] = ~0ull;
    unsigned int sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    g_tl_sm[blockIdx.x] = sm;
}
/* by thread 0, before the CTA's first barrier */
#define TL_BEGIN(sp)                                                                                          \
    do {                                                                                                      \
        if ((sp).dry == 3 && threadIdx.x == 0 && blockIdx.x < kTlMax) tl_begin_cta();                        \
    } while (0)
#define TL_FIRST(sp, j)                                                                                       \
    do {                                                                                                      \
        if ((sp).dry == 3 && (j) == 0 && (threadIdx.x & 31) == 0 && blockIdx.x < kTlMax)                      \
            atomicMin(&g_tl[3 * blockIdx.x + 1], tl_now());                                                   \
    } while (0)
#define TL_END(sp)                                                                                            \
    do {                                                                                                      \
        if ((sp).dry == 3 && (threadIdx.x & 31) == 0 && blockIdx.x < kTlMax)                                  \
            atomicMax(&g_tl[3 * blockIdx.x + 2], tl_now());                                                   \
    } while (0)
/* milestone `what` by lane 0, once the loaded value `dep` is in its register (the test reads it: the stamp
 * cannot be taken before the load lands; no real id or record field is INT_MIN) */
#define TL_MARK(sp, what, dep)                                                                                \
    do {                                                                                                      \
        if ((sp).dry == 3 && (int)(dep) != INT_MIN && (threadIdx.x & 31) == 0 && blockIdx.x < kTlMax)          \
            atomicMin(&g_tl_mark[kTlMarks * blockIdx.x + (what)], tl_now());                                  \
    } while (0)
#else
#define TL_BEGIN(sp) ((void)0)
#define TL_FIRST(sp, j) ((void)0)
#define TL_END(sp) ((void)0)
#define TL_MARK(sp, what, dep) ((void)0)
#endif

/* Valid tokens of 64-token tile `tile` of a segment of n tokens, `left` the sequence's tokens from the segment's
 * first (>= n): a segment's tiles count from its first token (attempt #44: a plan cut at pages starts segments
 * inside a 64-token tile of the sequence). */
__device__ __forceinline__ int tile_tokens(int n, int tile, int left)
{
#if DL_PLANT_SKIP_LAST_TOKEN /* a planted bug (make PLANT=skip_last_token): the sequence's last token is never read */
    return min(kTile, min(n, left - 1) - tile * kTile);
#else
    (void)left;
    return min(kTile, n - tile * kTile);
#endif
}

/* The rings' barriers, by thread 0, then a CTA barrier: full[i] completes on `producers` arrivals (the page
 * stage's quads: 4 lanes) plus the bytes, empty[i] on `consumers` arrivals (a warp or a warpgroup). */
__device__ __forceinline__ void ring_barriers_init(uint64_t *full, uint64_t *empty, int n, int consumers,
                                                   int producers = 1)
{
    if (threadIdx.x == 0) {
        for (int i = 0; i < n; i++) {
            mbar_init(&full[i], producers);
            mbar_init(&empty[i], consumers);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
}

/* A split task's segment is written (by this warp, or by the warpgroup before this warp): the
 * warp takes the task's ticket; the one that finishes the task's last segment merges them all
 * (merge_task, NB items a lane at once) and resets the ticket for the next launch. Called by one whole warp. */
template <int NB>
__device__ __forceinline__ void split_ticket_merge(const dl_gpu_args &a, const stream_params &sp, const int32_t *seg_out,
                                                   int t, int G, size_t row0, int lane)
{
    const int32_t *task_ptr = seg_out + sp.num_segs;
    int *tickets = (int *)(task_ptr + sp.num_tasks + 1);
    const int k0 = task_ptr[t], k1 = task_ptr[t + 1];
    __threadfence();
    __syncwarp();
    int old = 0;
    if (lane == 0) old = atomicAdd(&tickets[t], 1);
    old = __shfl_sync(0xffffffffu, old, 0);
    if (old == k1 - k0 - 1) {
        __threadfence();
        merge_task<NB>(a, k0, k1, G, row0, lane);
        if (lane == 0) tickets[t] = 0; /* ready for the next launch */
#if DL_STREAM_CLAIM
        if (sp.cword) /* #71: every segment of the task has taken its ticket, so no claim on its words is left */
            for (int p = k0 + lane; p < k1; p += 32) sp.cword[p] = 0;
#endif
    }
}

#ifndef DL_STREAM_CLUSTER
#define DL_STREAM_CLUSTER 0
#endif
/* Attempt #61 (make STREAM_CLUSTER=1, DL_STREAM_MERGE=cluster): the merge of a split task by the thread-block
 * clusters that computed it (dl_plan_build_cluster: task t has K clusters of C CTAs, clusters t K.., K = the grid's
 * clusters over the tasks; C, the rank and the cluster from %cluster_nctarank, %cluster_ctarank and %clusterid.x,
 * so the kernels' parameters are main's), instead of the merge kernel (its launch gap after the grid's last exit,
 * ~0.9 us, then its body, ~3.5 us at B1 and B4 L32768, gpu/NOTES.md) or the ticket (one warp merging every
 * segment). Each consumer warp has written its segments' partials to the workspace (rows task_ptr[t].. in token
 * order, normalized o, then the natural-log lse, as for the other merges) and arrives at the cluster barrier
 * (release: those writes, at cluster scope, before any other CTA's acquire; the producer warps have exited, which
 * releases the barrier for them). After it every stage of the cluster is consumed, so the CTA's ring is free: its
 * consumer threads (32W, warps 0..W-1) put the cluster's n x G lse values there (one load each), then take items
 * (head, dim) of the task's G x D outputs, rank r's thread i the items r 32W + i, + C 32W, ... (its slice), each
 * in the models' form (merge_segments in ref/dl_ref.c): M = max lse_k, w_k = expf(lse_k - M), o = sum w_k o_k /
 * sum w_k in token order, lse = M + logf(sum w_k), the o loads 8 segments at a time, all issued before any is used;
 * adjacent threads take adjacent dims. K = 1: that is the output. K > 1 (a task longer than one cluster's CTAs can
 * hold at once: B1): the cluster's result goes to its row of K after the task's partials (workspace rows
 * num_partials + t K + kc; lse -inf where the cluster had no segment), then each CTA adds one to the task's ticket
 * after its slice (a fence first); the CTA that brings it to K C merges the task's K rows for every item the same
 * way and sets the ticket back to 0. Tasks of one segment wrote o and lse in place: nothing to merge, no barrier
 * (the same for all of a task's clusters). Inlined: its registers stay under the main loop's (a form that held all
 * 32 segments' loads in registers raised ptxas's count of 84 of the 123 kernels, also as a call). */
[[maybe_unused]] __device__ __forceinline__ float merge_rows(const float *ws, const float *sl, int stride, int r0,
                                                             int n, int G, int head, int D, int dim, float *lse)
{
    constexpr int kBatch = 8;
    float M = sl[head];
    for (int k = 1; k < n; k++) M = fmaxf(M, sl[k * stride + head]);
    float den = 0.0f, acc = 0.0f;
    for (int b = 0; b < n; b += kBatch) {
        float o[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; u++) /* a row past n reloads row b's (weight 0 below) */
            o[u] = __ldcg(ws + ((size_t)(r0 + (b + u < n ? b + u : b)) * G + head) * (D + 1) + dim);
#pragma unroll
        for (int u = 0; u < kBatch; u++)
            if (b + u < n) {
                const float w = expf(sl[(b + u) * stride + head] - M);
                den += w;
                acc += w * o[u];
            }
    }
    *lse = M + logf(den);
    return acc / den;
}
template <int W>
__device__ __forceinline__ void cluster_merge(const dl_gpu_args &a, const stream_params &sp, const int32_t *seg_out,
                                              int G, float *sl)
{
    unsigned C, rank, cid;
    asm("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(C));
    asm("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    asm("mov.u32 %0, %%clusterid.x;\n" : "=r"(cid));
    const int K = (int)(gridDim.x / C) / sp.num_tasks, t = (int)cid / K, kc = (int)cid % K;
    const int32_t *task_ptr = seg_out + sp.num_segs;
    if (task_ptr[t + 1] - task_ptr[t] < 2) return;
    const int per = (int)C * W, ks = sp.plan[cid * per], n = sp.plan[(cid + 1) * per] - ks; /* slot_ptr: segments */
    const int r0 = n > 0 ? seg_out[ks] : 0; /* the cluster's partial rows r0.. (consecutive: token order) */
    asm volatile("barrier.cluster.arrive.release;\n" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory");
    float *ws = (float *)a.workspace;
    const int D = a.head_dim, tid = (int)threadIdx.x;
    for (int i = tid; i < n * G; i += 32 * W) sl[i] = __ldcg(ws + ((size_t)r0 * G + i) * (D + 1) + D); /* k G + h */
    asm volatile("bar.sync 1, %0;\n" ::"n"(32 * W) : "memory"); /* the consumer warps alone */
    const size_t row0 = (size_t)(t / a.num_kv_heads) * a.num_qo_heads + (t % a.num_kv_heads) * G;
    const int crow = task_ptr[sp.num_tasks] + t * K; /* K > 1: the task's K cluster rows */
    for (int it = (int)rank * 32 * W + tid; it < G * D; it += (int)C * 32 * W) {
        const int head = it / D, dim = it % D;
        float lse = -INFINITY, o = 0.0f;
        if (n > 0) o = merge_rows(ws, sl, G, r0, n, G, head, D, dim, &lse);
        if (K == 1) {
            a.o[(row0 + head) * D + dim] = o;
            if (dim == 0) a.lse[row0 + head] = lse;
        } else {
            float *p = ws + ((size_t)(crow + kc) * G + head) * (D + 1);
            p[dim] = o;
            if (dim == 0) p[D] = lse;
        }
    }
    if (K == 1) return;
    /* the flag past the staged lse values (at most DL_PLAN_MAX_CLUSTER_SEGS rows of up to 16 query heads) */
    int *ticket = (int *)(task_ptr + sp.num_tasks + 1) + t, *flag = (int *)(sl + DL_PLAN_MAX_CLUSTER_SEGS * 16);
    __threadfence(); /* this thread's items of the cluster's row, before the ticket (as split_ticket_merge) */
    asm volatile("bar.sync 1, %0;\n" ::"n"(32 * W) : "memory"); /* the slice written (and sl read) */
    if (tid == 0) *flag = atomicAdd(ticket, 1);
    asm volatile("bar.sync 1, %0;\n" ::"n"(32 * W) : "memory");
    if (*flag != K * (int)C - 1) return;
    __threadfence(); /* every slice of every cluster of the task written */
    for (int i = tid; i < K * G; i += 32 * W) sl[i] = __ldcg(ws + ((size_t)crow * G + i) * (D + 1) + D);
    asm volatile("bar.sync 1, %0;\n" ::"n"(32 * W) : "memory");
    for (int it = tid; it < G * D; it += 32 * W) {
        const int head = it / D, dim = it % D;
        float lse;
        const float o = merge_rows(ws, sl, G, crow, K, G, head, D, dim, &lse);
        a.o[(row0 + head) * D + dim] = o;
        if (dim == 0) a.lse[row0 + head] = lse;
    }
    if (tid == 0) *ticket = 0; /* ready for the next launch */
}

/* The merge kernel (issue 10, attempt #15; DL_STREAM_MERGE=kernel, or auto for plans with long tasks:
 * dl_plan.h): the split tasks' partials merged by a second kernel, C CTAs per (task, query head), each of
 * kMergeThreads threads and D / C of the head's dims (attempt #35, DL_STREAM_MERGE_SPLIT): thread (sub, col)
 * takes the floats col, col + cols, col + 2 cols, col + 3 cols of its CTA's share (cols = D / 4C), so that a
 * warp's loads are contiguous, over the segments k0 + sub, k0 + sub + SUB, ...; in the models' form
 * (merge_segments in ref/dl_ref.c): M = max lse_i first (a block reduction), then w_i = expf(lse_i - M),
 * o = sum w_i o_i / sum w_i, lse = M + logf(sum w_i), the SUB partial sums added in sub order. So a task's
 * segments are merged by many threads instead of one warp, and the plan may cut a task into more segments
 * (DL_STREAM_MAX_SEGS): the one-warp merge made 64 segments slower than 32 at B1 L32768. Launched with
 * programmatic stream serialization; griddepcontrol.wait holds it until the decode kernel's writes are complete
 * and visible. Tasks of one segment (written in place) return at once. The decode kernels are not told: in this
 * mode the plan's tickets start parked (kParkedTicket, set by make_plan) so that no warp's count reaches its
 * task's last segment, and this kernel parks them again after each launch. */
constexpr int kMergeThreads = 256;
constexpr int kParkedTicket = INT_MIN / 2;
/* Where the tickets begin in the plan buffer (its layout: dl_plan.h). */
__host__ __device__ constexpr int plan_tickets_at(int num_slots, int num_segs, int num_tasks)
{
    return num_slots + 1 + 4 * num_segs + num_tasks + 1;
}
/* A merge thread's weighted sum of its segments' partials (segments sub, sub + SUB, ... < n; the four floats
 * at f, f + cols, f + 2 cols, f + 3 cols of a row of D + 1 floats, o then lse), B segments at a time with
 * every load issued before any is used: a segment past n reloads the batch's first with weight 0. Read past
 * L1 (__ldcg: the decode kernel wrote them). Until attempt #35 a thread took four adjacent floats (rows are
 * not 16-byte aligned, so as four scalar loads): a warp's load then spanned 512 bytes for 128 used, and each of
 * the four loads fetched the same sectors again from L2. */
template <int B>
__device__ __forceinline__ float4 merge_batches(const float *ws, const int *s_row, const float *s_w, int n, int sub,
                                                int SUB, int G, int head, int D, int f, int cols)
{
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i0 = sub; i0 < n; i0 += B * SUB) {
        float w[B];
        float4 o[B];
#pragma unroll
        for (int u = 0; u < B; u++) {
            const int i = i0 + u * SUB, ii = i < n ? i : i0;
            w[u] = i < n ? s_w[ii] : 0.0f;
            const float *p = ws + ((size_t)s_row[ii] * G + head) * (D + 1) + f;
            o[u] = make_float4(__ldcg(p), __ldcg(p + cols), __ldcg(p + 2 * cols), __ldcg(p + 3 * cols));
        }
#pragma unroll
        for (int u = 0; u < B; u++) {
            acc.x += w[u] * o[u].x; acc.y += w[u] * o[u].y; acc.z += w[u] * o[u].z; acc.w += w[u] * o[u].w;
        }
    }
    return acc;
}

/* Attempt #65 (ONEPASS, DL_STREAM_MERGE_FORM=1): the merge's chain of dependent loads shortened by two. The
 * task's bounds come from the plan, which the host wrote before the decode kernel ran, so they are loaded before
 * griddepcontrol.wait (the two-pass form loads them after it); and each thread loads its segments' lse beside their
 * partials, keeping its own running max and sums, rescaled once to the CTA's max at the end (merge_onepass), where
 * the two-pass form waits for every lse (one load round trip and two CTA barriers) before the first partial's load.
 * The sums are the same terms in another grouping: w_i = exp(lse_i - m) exp(m - M) for a thread's max m. */
template <int B>
__device__ __forceinline__ float4 merge_onepass(const float *ws, int k0, int n, int sub, int SUB, int G, int head,
                                                int D, int f, int cols, float *m_out, float *den_out)
{
    float m = -INFINITY, den = 0.0f;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i0 = sub; i0 < n; i0 += B * SUB) {
        float l[B];
        float4 o[B];
#pragma unroll
        for (int u = 0; u < B; u++) { /* a segment past n reloads the batch's first (weight 0 below) */
            const int i = i0 + u * SUB, ii = i < n ? i : i0;
            const float *p = ws + ((size_t)(k0 + ii) * G + head) * (D + 1);
            l[u] = __ldcg(p + D);
            o[u] = make_float4(__ldcg(p + f), __ldcg(p + f + cols), __ldcg(p + f + 2 * cols), __ldcg(p + f + 3 * cols));
        }
        /* no branch on the lse values here: with one (nothing weighs yet when every lse so far is -inf) ptxas issued
         * the partials' loads after it, a second round trip (the SASS); selects instead */
        float mb = m;
#pragma unroll
        for (int u = 0; u < B; u++)
            if (i0 + u * SUB < n) mb = fmaxf(mb, l[u]);
        const float r = m == -INFINITY ? 0.0f : expf(m - mb);
        acc.x *= r, acc.y *= r, acc.z *= r, acc.w *= r, den *= r;
#pragma unroll
        for (int u = 0; u < B; u++) {
            const float w = i0 + u * SUB < n && l[u] != -INFINITY ? expf(l[u] - mb) : 0.0f;
            acc.x += w * o[u].x; acc.y += w * o[u].y; acc.z += w * o[u].z; acc.w += w * o[u].w;
            den += w;
        }
        m = mb;
    }
    *m_out = m, *den_out = den;
    return acc;
}

/* A merged column's four outputs (dims f, f + cols, f + 2 cols, f + 3 cols of task t's query head `head`): o / W, and
 * the head's lse = M + log W by the thread holding dim 0. */
__device__ __forceinline__ void merge_store(const dl_gpu_args &a, int t, int G, int head, int D, int f, int cols,
                                            float4 o, float W, float M)
{
    const size_t row = (size_t)(t / a.num_kv_heads) * a.num_qo_heads + (t % a.num_kv_heads) * G + head;
    float *out = a.o + row * D + f;
    out[0] = o.x / W, out[cols] = o.y / W, out[2 * cols] = o.z / W, out[3 * cols] = o.w / W;
    if (f == 0) a.lse[row] = M + logf(W);
}

/* The largest v (MAX) or the sum of v over the merge CTA's threads (shuffles, then red[kMergeThreads / 32] and one
 * barrier). */
template <bool MAX> __device__ __forceinline__ float merge_cta_reduce(float v, float *red)
{
    for (int o = 16; o > 0; o /= 2) {
        const float x = __shfl_xor_sync(0xffffffffu, v, o);
        v = MAX ? fmaxf(v, x) : v + x;
    }
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    float R = red[0];
    for (int i = 1; i < kMergeThreads / 32; i++) R = MAX ? fmaxf(R, red[i]) : R + red[i];
    return R;
}

/* The one-pass form at one CTA a head (C 1) is held to 64 registers (4 CTAs an SM: B16 L8192's 512 merge CTAs in one
 * wave on 132 SMs; with 80 they took two and lost 1.0 us; held so, ptxas: 24 bytes of spill, it won 0.4-0.8 us at B8
 * and B16 against the two-pass form, H100 2026-12-06);
 * the other forms keep ptxas's own counts (0: no minimum given; an explicit 1 raised the two-pass kernels from 44-48
 * registers to 80). The one-pass at C 2 and 4 keeps its 80, as measured (held to 48, 5 CTAs an SM, it spilled 208
 * bytes). */
template <int C, bool ONEPASS>
__global__ void __launch_bounds__(kMergeThreads, ONEPASS && C == 1 ? 4 : 0) stream_merge_kernel(const dl_gpu_args a, int32_t *plan,
                                                                     int num_slots, int num_segs, int num_tasks
#if DL_STREAM_CLAIM
                                                                     , unsigned long long *cword /* #71, or NULL */
#endif
)
{
#if DL_STREAM_DIAG
    if (!g_merge_late)
#endif
        pdl_trigger(); /* the layer chain (#60): the next layer's decode grid may launch (a no-op without one) */
    const int G = a.num_qo_heads / a.num_kv_heads, D = a.head_dim, cols = D / (4 * C);
    const int part = blockIdx.x % C, t = blockIdx.x / C / G, head = blockIdx.x / C % G;
    const int32_t *seg_out = plan + num_slots + 1 + 3 * num_segs, *task_ptr = seg_out + num_segs;
    int k0 = 0, k1 = 0;
    if constexpr (ONEPASS) { /* the host's plan: readable before the decode grid completes */
        k0 = task_ptr[t], k1 = task_ptr[t + 1];
        if (k1 - k0 < 2) return;
    }
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#if DL_STREAM_DIAG /* the timeline: harmless when DL_STREAM_DRY != 3 (nothing reads it then) */
    if (threadIdx.x == 0) atomicMin(&g_tl_merge[0], tl_now());
#endif
    if constexpr (!ONEPASS) {
        k0 = task_ptr[t], k1 = task_ptr[t + 1];
        if (k1 - k0 < 2) return;
    }
    if (head == 0 && part == 0 && threadIdx.x == 0)
        plan[plan_tickets_at(num_slots, num_segs, num_tasks) + t] = kParkedTicket;
#if DL_STREAM_CLAIM
    if (cword && head == 0 && part == 0) /* #71: the decode grid is complete, so are the task's claims */
        for (int p = k0 + (int)threadIdx.x; p < k1; p += kMergeThreads) cword[p] = 0;
#endif
#if DL_STREAM_DIAG
    if (g_merge_dry) return; /* DL_STREAM_DRY=6: the merge's launch and wait alone (wrong outputs) */
#endif
    if constexpr (ONEPASS) {
        const float *ws = (const float *)a.workspace;
        const int n = k1 - k0, tid = (int)threadIdx.x;
        const int SUB = kMergeThreads / cols, sub = tid / cols, col = tid % cols, f = part * 4 * cols + col;
        __shared__ float s_den[kMergeThreads], red_max[kMergeThreads / 32];
        __shared__ float4 s_o[kMergeThreads];
        float m, den;
        float4 acc = n > 4 * SUB ? merge_onepass<8>(ws, k0, n, sub, SUB, G, head, D, f, cols, &m, &den)
                                 : merge_onepass<4>(ws, k0, n, sub, SUB, G, head, D, f, cols, &m, &den);
        /* the CTA's max M by shuffles and one barrier; each thread rescales its own sums to it (a first form had
         * the column's first thread rescale every thread's sums, SUB exponentials in a row: 1.0 us slower at B1, H100) */
        const float M = merge_cta_reduce<true>(m, red_max);
        const float r = m == -INFINITY ? 0.0f : expf(m - M);
        acc.x *= r, acc.y *= r, acc.z *= r, acc.w *= r;
        s_o[tid] = acc, s_den[tid] = den * r;
        __syncthreads();
        if (sub == 0) {
            float W = s_den[col];
            float4 o = s_o[col];
            for (int i = 1; i < SUB; i++) {
                const float4 x = s_o[i * cols + col];
                o.x += x.x; o.y += x.y; o.z += x.z; o.w += x.w;
                W += s_den[i * cols + col];
            }
            merge_store(a, t, G, head, D, f, cols, o, W, M);
        }
    } else {
        /* n = k1 - k0 <= kMergeThreads segments (make_plan refuses a plan with more): thread i holds
         * segment i's row and weight w_i = exp(lse_i - M) in shared memory, so that the loop below has
         * only independent loads of the partials (session 2026-12-03d: the merge took 4.4-5.7 us at B1
         * and B4 L32768 with the weights recomputed from global lse loads in the loop; gpu/NOTES.md #17) */
        const float *ws = (const float *)a.workspace;
        const int n = k1 - k0, tid = (int)threadIdx.x;
        __shared__ int s_row[kMergeThreads];
        __shared__ float s_w[kMergeThreads], red_max[kMergeThreads / 32], red_sum[kMergeThreads / 32];
        __shared__ float4 part_o[kMergeThreads];
        float l = -INFINITY;
        if (tid < n) {
            const int r = k0 + tid; /* the task's partial rows (dl_plan.h) */
            s_row[tid] = r;
            l = __ldcg(ws + ((size_t)r * G + head) * (D + 1) + D);
        }
        const float M = merge_cta_reduce<true>(l, red_max);
        const float wt = tid < n && M != -INFINITY ? expf(l - M) : 0.0f;
        if (tid < n) s_w[tid] = wt;
        const float W = merge_cta_reduce<false>(wt, red_sum);
        /* every thread has a sub: kMergeThreads (256) is a multiple of cols (D / 4C: 1 to 64) (computed here, after
         * the sums: hoisted above them, it cost the C 2 and 4 kernels 16 and 24 more instructions, cuobjdump) */
        const int SUB = kMergeThreads / cols, sub = tid / cols, col = tid % cols, f = part * 4 * cols + col;
        /* batches of B segments a thread (merge_batches), the loads unconditional, so that a batch's loads
         * are in flight together: with the bound checked between them ptxas issued one segment's loads at
         * a time (the SASS of 8937463), and the merge of ~99 segments took 10-13.6 us (the timeline of
         * 2026-12-03d, call 2). B = 8 from 5 segments a thread (B1 L32768: ~13; 39.10 -> 37.44 us), else 4
         * (B4 L32768, ~3-4 a thread, lost ~1 us with 8: half of each batch reloaded for nothing) */
        const float4 acc = n > 4 * SUB ? merge_batches<8>(ws, s_row, s_w, n, sub, SUB, G, head, D, f, cols)
                                       : merge_batches<4>(ws, s_row, s_w, n, sub, SUB, G, head, D, f, cols);
        part_o[tid] = acc;
        __syncthreads();
        if (sub == 0) {
            float4 o = part_o[col];
            for (int i = 1; i < SUB; i++) {
                const float4 x = part_o[i * cols + col];
                o.x += x.x; o.y += x.y; o.z += x.z; o.w += x.w;
            }
            merge_store(a, t, G, head, D, f, cols, o, W, M);
        }
    }
#if DL_STREAM_DIAG
    if (threadIdx.x == 0) atomicMax(&g_tl_merge[1], tl_now());
#endif
}

/* Attempt #34: the id of the page holding token first-tile-token + 16 q (q < 4) from a slot's sfp record. */
__device__ __forceinline__ int first_page(const int4 fp, int q) { return q == 0 ? fp.x : q == 1 ? fp.y : q == 2 ? fp.z : fp.w; }
/* Slot s's sfp record, or zeros where the plan has none (DL_STREAM_FIRST_PAGES=0, or pages under 16 tokens: the
 * plan leaves sp.sfp NULL there, so a producer that finds it set may take a tile's first copies from it: at most 4). */
__device__ __forceinline__ int4 slot_first_pages(const stream_params &sp, int s)
{
    return sp.sfp ? sp.sfp[s] : make_int4(0, 0, 0, 0);
}

/* The one producer warp of a CTA (the wgmma kernels; the warp consumers with make STREAM_PRODUCERS=one):
 * it serves the CTA's W consumers (warps or warpgroups) in turn, one
 * tile each per round, through their rings of S stages (STAGE bytes each: the K tile, then the
 * V tile at TILE_BYTES); no pool (stream_produce_one has it); lane p loads the id of the tile's
 * page p (before waiting for the free stage, so the load latency hides behind the wait) and issues
 * that page's copies.
 * (Loading the ids a round ahead instead changed nothing, and an L2 prefetch of later tiles
 * made it slower: gpu/NOTES.md, issue 10 attempts #8 and #10.) Warp-uniform control flow.
 * Consumer w's segments are those of plan slot blockIdx.x * W + w. */
template <int W, int S, int STAGE, int TILE_BYTES, int SW, int SLABS, bool WAIT = false>
__device__ __forceinline__ void stream_produce(const dl_gpu_args &a, const stream_params &sp, const CUtensorMap *kmap,
                                               const CUtensorMap *vmap, uint8_t *smem, uint64_t *full,
                                               uint64_t *empty, int lane)
{
    const int Hkv = a.num_kv_heads, ps = a.page_size;
    const int rows = ps < kTile ? ps : kTile; /* box rows */
    const uint32_t copy_bytes = (uint32_t)(SW * rows);
    int ck[W], kend[W], ctok[W], ct1[W], ckvh[W], cpb[W], cj[W];
    int4 cfp[W]; /* attempt #34: the first tile's page ids (sp.sfp) */
    /* consumer w starts a segment of record r = {task, tok0, tok1, page base} */
    auto start_segment = [&](int w, const int4 r) {
        ckvh[w] = r.x % Hkv;
        cpb[w] = r.w;
        ctok[w] = r.y;
        ct1[w] = r.z;
    };
#pragma unroll
    for (int w = 0; w < W; w++) {
        const int slot = blockIdx.x * W + w;
        const int4 r = sp.srec[2 * slot], e = sp.srec[2 * slot + 1];
        cfp[w] = slot_first_pages(sp, slot);
        ck[w] = e.y;
        kend[w] = e.z;
        TL_MARK(sp, kTlRec, e.z);
        cj[w] = 0;
        ctok[w] = ct1[w] = ckvh[w] = cpb[w] = 0;
        if (ck[w] < kend[w]) start_segment(w, r);
    }
    for (;;) {
        bool any = false;
#pragma unroll
        for (int w = 0; w < W; w++) {
            if (ck[w] >= kend[w]) continue;
            any = true;
            const int st = cj[w] % S;
            uint8_t *tk = smem + (w * S + st) * STAGE, *tv = tk + TILE_BYTES;
            const int tok0 = ctok[w], ntok = min(kTile, ct1[w] - tok0);
            const int ncopy = ps >= kTile ? 1 : (ntok + ps - 1) / ps;
            const int32_t *pages = a.kv_indices + cpb[w];
            const bool fp = sp.sfp && cj[w] == 0; /* lane < ncopy <= 4 (slot_first_pages) */
            const int pg0 = lane < ncopy ? (fp ? first_page(cfp[w], lane * rows / 16) : pages[(tok0 + lane * rows) / ps])
                                         : 0;
            const int pg1 = lane + 32 < ncopy ? pages[(tok0 + (lane + 32) * rows) / ps] : 0;
            if (cj[w] == 0) TL_MARK(sp, kTlPage, pg0);
            if constexpr (WAIT && !DL_STREAM_EARLY_COPIES) if (cj[w] == 0) pdl_wait(); /* #60: warp consumers */
            mbar_wait(&empty[w * S + st], ((cj[w] / S) & 1) ^ 1);
            if (lane == 0) {
                if (DL_STREAM_DIAG && sp.dry == 2) mbar_arrive(&full[w * S + st]);
                else mbar_expect_tx(&full[w * S + st], (uint32_t)(ncopy * 2 * SLABS) * copy_bytes);
            }
            __syncwarp();
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int p = lane + 32 * h;
                if (p < ncopy && !(DL_STREAM_DIAG && sp.dry == 2)) {
                    const int tok = tok0 + p * rows, page = h ? pg1 : pg0, slot0 = tok % ps;
#pragma unroll
                    for (int sl = 0; sl < SLABS; sl++) {
                        const int off = sl * kTile * SW + p * rows * SW;
                        tma_load(tk + off, kmap, &full[w * S + st], sl * SW, slot0, ckvh[w], page);
                        tma_load(tv + off, vmap, &full[w * S + st], sl * SW, slot0, ckvh[w], page);
                    }
                }
            }
            if (cj[w] == 0) TL_MARK(sp, kTlIssue, pg0);
            cj[w]++;
            if ((ctok[w] += kTile) >= ct1[w] && ++ck[w] < kend[w]) {
                const int4 rk = sp.grec[2 * ck[w]];
                q_prefetch_task_l2(a, rk.x, Hkv, lane); /* #37 */
                start_segment(w, rk);
            }
        }
        if (!any) break;
    }
}

#if DL_STREAM_CLAIM
/* #71: the tiles a split task's segment copies, in the order stream_produce_one's producer asks for them
 * (gpu/dl_claim.h): its first sp.cown tiles (the owner's, unclaimed; its first claim's atomic goes out with the
 * first of them), the owner's claims of sp.cchunk tiles (the next claim's atomic in flight while this one's tiles
 * are copied), then, in the slot's last segment alone (a warp with more to do goes on to its next segment, whose
 * task's other warps may take from it), as a thief, the back tile of the task's segment with the most unclaimed
 * while one has sp.cmin; -1 at the end. on: claims apply (sp.cword set, a split task's segment). Warp-uniform: every
 * lane holds the same state (lane 0's atomics are broadcast). */
struct claim_walk {
    const stream_params *sp;
    bool on, more, last;
    unsigned long long *w, nxt;
    int n, a0, F, lane, phase, i, hi, p0, p1; /* phase 1 the owner's tiles, 2 a thief's, 3 done; p0, p1: the rows */
    __device__ claim_walk(const stream_params &s, const int4 r, int part, bool slot_last, int ln)
        : sp(&s), on(s.cword && part >= 0), more(false), last(slot_last), w(on ? s.cword + part : nullptr), nxt(0),
          n((r.z - r.y + kTile - 1) / kTile), a0(r.y / kTile), F(s.cown), lane(ln), phase(1), i(1), hi(0), p0(-1),
          p1(-1)
    {
        hi = n < F ? n : F; /* tiles 1 .. hi - 1 next: the rest of the owner's own */
        more = n > F;
    }
    __device__ int first(int tok) /* the segment's first tile; the owner's first claim goes out now */
    {
        if (on && more && lane == 0) nxt = atomicAdd(w, (unsigned long long)sp->cchunk);
        return tok;
    }
    __device__ int next(int t) /* t: the segment's task */
    {
        const int c = sp->cchunk;
        for (;;) {
            if (phase == 1) {
                if (i < hi) return (a0 + i++) * kTile;
                if (!more) { phase = 2; continue; }
                const unsigned long long cur = __shfl_sync(0xffffffffu, nxt, 0);
                const dl_claim_range cr = dl_claim_owner(cur, n, F, c);
                if (cr.lo >= cr.hi) { phase = 2; continue; }
                more = dl_claim_more(cur, n, F, c);
                if (lane == 0 && more) nxt = atomicAdd(w, (unsigned long long)c);
                i = cr.lo, hi = cr.hi;
                continue;
            }
            if (phase == 2 && last && sp->cmin > 0) {
                if (p0 < 0) { /* the task's partial rows (dl_plan.h's task_ptr) */
                    const int32_t *task_ptr = sp->plan + sp->num_slots + 1 + 4 * sp->num_segs;
                    p0 = task_ptr[t], p1 = task_ptr[t + 1];
                }
                const int part = (int)(w - sp->cword);
                int best = -1, most = sp->cmin - 1, vn = 0, va = 0;
                for (int p = p0 + lane; p < p1; p += 32) {
                    if (p == part) continue;
                    const int2 ci = sp->cinfo[p];
                    const int left = dl_claim_left(__ldcg(sp->cword + p), ci.y, F);
                    if (left > most) most = left, best = p, vn = ci.y, va = ci.x;
                }
                for (int o = 16; o > 0; o /= 2) { /* the warp's choice: the most left, then the lowest row */
                    const int m2 = __shfl_xor_sync(0xffffffffu, most, o), b2 = __shfl_xor_sync(0xffffffffu, best, o);
                    const int n2 = __shfl_xor_sync(0xffffffffu, vn, o), a2 = __shfl_xor_sync(0xffffffffu, va, o);
                    if (b2 >= 0 && (best < 0 || m2 > most || (m2 == most && b2 < best)))
                        most = m2, best = b2, vn = n2, va = a2;
                }
                if (best >= 0) {
                    unsigned long long old = 0;
                    if (lane == 0) old = atomicAdd(sp->cword + best, DL_CLAIM_THIEF);
                    const int tile = dl_claim_thief(__shfl_sync(0xffffffffu, old, 0), vn, F);
                    if (tile >= 0) return (va + tile) * kTile;
                    continue; /* taken meanwhile: look again */
                }
            }
            phase = 3;
            return -1;
        }
    }
};
#endif

/* The producer warp of one consumer (the warp consumers' default, one producer per consumer; issue 10,
 * attempt #19): the segments of plan slot `slot`, then pool slots (dl_plan.h) claimed one at a time
 * through the plan's claim count while any is left, so that the warps that finish early take the last
 * tiles. Lane 0 writes, before each stage's arrival, the stage's segment into the stage's header (the
 * arrival's release makes it visible to the consumer's wait), and after the last tile a -1 with a plain
 * arrival: the consumer follows the headers once its own slot is done. The last producer done claiming
 * resets the counts for the next launch. Warp-uniform control flow. */
template <int S, int STAGE, int TILE_BYTES, int SW, int SLABS>
__device__ __forceinline__ void stream_produce_one(const dl_gpu_args &a, const stream_params &sp,
                                                   const CUtensorMap *kmap, const CUtensorMap *vmap, uint8_t *ring,
                                                   uint64_t *full, uint64_t *empty, volatile int *hdr, int lane,
                                                   int slot, int producers)
{
    int *pool = (int *)sp.plan + plan_tickets_at(sp.num_slots, sp.num_segs, sp.num_tasks) + sp.num_tasks;
    const int Hkv = a.num_kv_heads, ps = a.page_size;
    const int rows = ps < kTile ? ps : kTile; /* box rows */
    const uint32_t copy_bytes = (uint32_t)(SW * rows);
    int j = 0;
    /* segment k from its record r = {task, tok0, tok1, page base} */
    /* len: the request's length (the record's second int4); the tile holding its last token waits (#60); part: the
     * segment's partial row (-1: a whole task) and last (the slot's last segment), for the claims of #71 */
    auto produce_segment = [&](const int4 r, int k, const int4 *fp, int len, int part, bool last) { /* fp: sfp of a slot's first; last: the slot's last */
        const int kvh = r.x % Hkv;
        const int32_t *pages = a.kv_indices + r.w;
#if DL_STREAM_CLAIM
        /* #71: a split task's segment (cw.on) walks the tiles it claims (claim_walk), each stage's header the tile's
         * first token, and ends with a stage of no bytes whose header is kClaimEnd; else the plan's tiles as cut */
        claim_walk cw(sp, r, part, last, lane);
        for (int tok0 = cw.first(r.y); tok0 >= 0 && (cw.on || tok0 < r.z); tok0 = cw.on ? cw.next(r.x) : tok0 + kTile, j++) {
            const int st = j % S;
            uint8_t *tk = ring + st * STAGE, *tv = tk + TILE_BYTES;
            const int ntok = min(kTile, (cw.on ? len : r.z) - tok0);
#define DL_CLAIM_HDR (cw.on ? tok0 : k)
#else
        (void)part, (void)last;
        for (int tok0 = r.y; tok0 < r.z; tok0 += kTile, j++) {
            const int st = j % S;
            uint8_t *tk = ring + st * STAGE, *tv = tk + TILE_BYTES;
            const int ntok = min(kTile, r.z - tok0);
#define DL_CLAIM_HDR k
#endif
            const int ncopy = ps >= kTile ? 1 : (ntok + ps - 1) / ps;
            const bool first = fp && tok0 == r.y; /* lane < ncopy <= 4 (slot_first_pages) */
            const int pg0 = lane < ncopy ? (first ? first_page(*fp, lane * rows / 16) : pages[(tok0 + lane * rows) / ps])
                                         : 0;
            const int pg1 = lane + 32 < ncopy ? pages[(tok0 + (lane + 32) * rows) / ps] : 0;
            if (j == 0) TL_MARK(sp, kTlPage, pg0);
            if (!DL_STREAM_EARLY_COPIES && tok0 + kTile >= len) pdl_wait(); /* #60: the last tile of the request */
            mbar_wait(&empty[st], ((j / S) & 1) ^ 1);
            if (lane == 0) {
                hdr[st] = DL_CLAIM_HDR;
                if (DL_STREAM_DIAG && sp.dry == 2) mbar_arrive(&full[st]);
                else mbar_expect_tx(&full[st], (uint32_t)(ncopy * 2 * SLABS) * copy_bytes);
            }
            __syncwarp();
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int p = lane + 32 * h;
                if (p < ncopy && !(DL_STREAM_DIAG && sp.dry == 2)) {
                    const int tok = tok0 + p * rows, page = h ? pg1 : pg0, slot0 = tok % ps;
#pragma unroll
                    for (int sl = 0; sl < SLABS; sl++) {
                        const int off = sl * kTile * SW + p * rows * SW;
                        tma_load(tk + off, kmap, &full[st], sl * SW, slot0, kvh, page);
                        tma_load(tv + off, vmap, &full[st], sl * SW, slot0, kvh, page);
                    }
                }
            }
            if (j == 0) TL_MARK(sp, kTlIssue, pg0);
        }
#undef DL_CLAIM_HDR
#if DL_STREAM_CLAIM
        if (cw.on) { /* the segment's end */
            const int st = j % S;
            mbar_wait(&empty[st], ((j / S) & 1) ^ 1);
            if (lane == 0) {
                hdr[st] = kClaimEnd;
                mbar_arrive(&full[st]);
            }
            __syncwarp();
            j++;
        }
#endif
    };
    auto produce_slot = [&](int s) {
        const int4 r = sp.srec[2 * s], e = sp.srec[2 * s + 1];
        const int4 fp = slot_first_pages(sp, s);
        TL_MARK(sp, kTlRec, e.z);
        if (e.y < e.z) produce_segment(r, e.y, sp.sfp ? &fp : nullptr, e.x, DL_STREAM_CLAIM ? e.w : -1, e.y + 1 == e.z);
        for (int k = e.y + 1; k < e.z; k++) {
            const int4 rk = sp.grec[2 * k];
#if DL_STREAM_CLAIM
            const int4 ek = sp.grec[2 * k + 1];
            const int lk = ek.x, pk = ek.w;
#else
            const int lk = sp.grec[2 * k + 1].x, pk = -1;
#endif
            q_prefetch_task_l2(a, rk.x, Hkv, lane); /* #37 */
            produce_segment(rk, k, nullptr, lk, pk, k + 1 == e.z);
        }
    };
    produce_slot(slot);
    if (sp.num_static < sp.num_slots) { /* the pool */
        for (;;) {
            int s = 0;
            if (lane == 0) s = sp.num_static + atomicAdd(&pool[0], 1);
            s = __shfl_sync(0xffffffffu, s, 0);
            if (s >= sp.num_slots) break;
            produce_slot(s);
        }
        if (lane == 0 && atomicAdd(&pool[1], 1) == producers - 1) { /* every claim is made: reset */
            pool[0] = 0;
            pool[1] = 0;
        }
    }
    const int st = j % S; /* the end */
    mbar_wait(&empty[st], ((j / S) & 1) ^ 1);
    if (lane == 0) {
        hdr[st] = -1;
        mbar_arrive(&full[st]);
    }
}

/* The producer warp of the page stage (page_shape): the tiles of the CTA's run (slot blockIdx.x * W's segments;
 * the CTA's other slots hold the same tiles for the other heads: make_plan checks it, dl_plan_ctas_share_tiles),
 * each tile 8 stages of the shared ring, K then V of its four 16-row pieces; lane i < 8 takes the tile's stage i:
 * it loads the piece's page id, waits for the stage's quad to be free (lanes 0-3 the K quad, 4-7 the V quad,
 * numbered as page_wait does), and copies the box of all 8 heads with its bytes on the quad's full barrier, or,
 * for a piece past the segment's end, arrives with no bytes (the consumers mask those scores and zero those V
 * rows); a full barrier completes on its four lanes' arrivals and bytes. Warp-uniform loop. */
template <int W, int S, int STAGE, class PS>
__device__ __forceinline__ void stream_produce_pages(const dl_gpu_args &a, const stream_params &sp,
                                                     const CUtensorMap *kmap, const CUtensorMap *vmap, uint8_t *ring,
                                                     uint64_t *full, uint64_t *empty, int lane)
{
    constexpr int Q = S / 4;
    const int ps = a.page_size, slot = blockIdx.x * W, piece = lane & 3;
    const CUtensorMap *map = lane < 4 ? kmap : vmap;
    const int4 r0 = sp.srec[2 * slot], e0 = sp.srec[2 * slot + 1];
    const int4 fp0 = slot_first_pages(sp, slot); /* attempt #34 */
    TL_MARK(sp, kTlRec, e0.z);
    int n = 0; /* stages issued */
    for (int k = e0.y; k < e0.z; k++) {
        const int4 r = k == e0.y ? r0 : sp.grec[2 * k]; /* {task, tok0, tok1, page base} */
        const int len = k == e0.y ? e0.x : sp.grec[2 * k + 1].x; /* the request's length */
        const int h0 = PS::ALL ? 0 : r.x % a.num_kv_heads; /* the box's first head: the group's */
        if (k > e0.y) q_prefetch_l2(a, r.x / a.num_kv_heads, 0, a.num_qo_heads, lane); /* #37: every head's warp */
        const int32_t *pages = a.kv_indices + r.w;
        for (int tok0 = r.y; tok0 < r.z; tok0 += kTile, n += 8) {
            const int tok = tok0 + piece * PS::ROWS;
            if (lane < 8) {
                const unsigned i = n + lane, st = i % S, u = i / 4, qd = u % Q; /* stage, quad, its barriers */
                const bool copy = tok < r.z && !(DL_STREAM_DIAG && sp.dry == 2);
                const int page = !copy ? 0 : sp.sfp && n == 0 ? first_page(fp0, piece) : pages[tok / ps];
                if (n == 0) TL_MARK(sp, kTlPage, page);
                if (!DL_STREAM_EARLY_COPIES && tok0 + kTile >= len) pdl_wait(); /* #60: the request's last tile */
                if (DL_STREAM_DIAG && sp.dry == 5) { /* unsynchronized: the quad's previous copies have landed */
                    if (u >= (unsigned)Q) mbar_wait(&full[qd], ((u / Q) - 1) & 1);
                } else {
                    mbar_wait(&empty[qd], ((u / Q) & 1) ^ 1);
                }
                if (copy) {
                    mbar_expect_tx(&full[qd], (uint32_t)STAGE);
                    tma_load(ring + st * STAGE, map, &full[qd], 0, tok % ps, h0, page);
                } else {
                    mbar_arrive(&full[qd]);
                }
                if (n == 0) TL_MARK(sp, kTlIssue, page);
            }
            __syncwarp();
        }
    }
    if (DL_STREAM_DIAG && sp.dry == 5 && lane == 0) /* no copy in flight when the CTA exits */
        for (int m = n / 4 > Q ? n / 4 - Q : 0; m < n / 4; m++) mbar_wait(&full[m % Q], (m / Q) & 1);
}

#if DL_STREAM_DIAG
constexpr int kProbeMaxStages = 32, kProbeSmem = 64 * 1024; /* DL_STREAM_DRY=4: stages and bytes per CTA */
/* The copy-shape probe (DL_STREAM_DRY=4, DIAG=1 builds; issue 10, before a whole-page stage is built): the
 * case's pages copied by TMA into a ring of shared memory and nothing else, each copy a box of
 * DL_STREAM_BOXHEADS consecutive KV heads x the page's rows (NHD: pieces of boxheads x row bytes at the token
 * row's stride; boxheads = Hkv: the whole page in one box). CTA c takes a contiguous run of the page list
 * (kv_indices in the page table's order) and walks it once per head group, the head groups outermost, so that
 * with boxheads < Hkv the pieces of a token row are read a whole run apart in time (as by warps of different
 * tasks). DL_STREAM_PROBE_WALK=1 puts the head groups innermost instead: a page's boxes are issued back to back
 * (one-head boxes then reach DRAM as the tile rings' warps of one run ask for them, the eight heads at about the
 * same time), so that the box size alone is compared with whole-page boxes.
 * Thread 0 issues; a stage is reused once its previous copy has landed (ns stages in flight per CTA).
 * Outputs are not written: time it with run --time-failed, beside the read and DL_STREAM_DRY=1.
 * LDGSTS (DL_STREAM_PROBE_LDGSTS=1): the same boxes, stages and walk, copied by the CTA's 32 threads with 16-byte
 * cp.async (LDGSTS) instead of TMA, each thread's copies of a stage arriving on its barrier (count 32): whether
 * TMA itself, rather than the walk or the balance, keeps a stream of these pages from ending with the read (the
 * read reference uses 16-byte loads).
 * LDG (DL_STREAM_PROBE_LDG=1): the same boxes and walk, each thread loading its 16-byte pieces of a page's K and V
 * box into registers (kProbeLdgBatch of each before their fold, 512 bytes a thread, 48 KB an SM at 3 CTAs; compiled
 * for 16 CTAs an SM, ptxas issues 19 of the 32 loads before the first fold, 126 registers; 128 with
 * the STS instance beside it, both without spills, bd803bc) and folding them
 * into one word; nothing is staged in shared memory (the CTA still reserves the TMA probe's, so that the same
 * number of CTAs share an SM): whether staging in shared memory, rather than the walk, is what the probes lose
 * against the page-order read. DL_STREAM_PROBE_LDG_STS=1: each batch is stored into the CTA's 16 KB and folded from
 * there (bytes landing in shared memory through registers, not through the async copies); 2: the 16 KB reserved,
 * unused (its control at the same CTAs an SM). */
/* timed (DL_STREAM_DRY=7): per CTA, in the timeline's arrays (g_tl: entry, the first copy landed, the last copy
 * landed; g_tl_mark: the first page id loaded, the first copy issued), as the decode kernels' DL_STREAM_DRY=3. */
/* One box of the probe (heads hg .. hg + bh - 1 of a page, R bytes a row) as n 16-byte chunks in the global order
 * of its bytes: contiguous runs ("pieces", `stride` bytes apart) of 2^sh chunks each (probe_setup checks the power
 * of 2); chunk i lies off(i) bytes from the box's first byte, `first` bytes into the cache (offsets in a box fit 32
 * bits: a page of all heads does). */
struct box_chunks {
    int n, sh;
    uint32_t stride;
    int64_t first;
    __device__ box_chunks(bool nhd, int64_t page, int hg, int bh, int Hkv, int ps, int R)
    {
        const int piece = nhd ? bh * R : ps * R, pieces = nhd ? ps : bh;
        sh = __ffs(piece / 16) - 1;
        n = pieces << sh;
        stride = nhd ? (uint32_t)(Hkv * R) : (uint32_t)piece;
        first = nhd ? (page * ps * Hkv + hg) * R : (page * Hkv + hg) * ps * R;
    }
    __device__ uint32_t off(int i) const { return (uint32_t)(i >> sh) * stride + (uint32_t)(i & ((1 << sh) - 1)) * 16; }
};
/* LDGSTS: thread tid's 16-byte cp.asyncs of one box into dst, of nt threads */
__device__ __forceinline__ void ldgsts_box(uint8_t *dst, const uint8_t *cache, const box_chunks &bx, int tid, int nt)
{
    for (int i = tid; i < bx.n; i += nt) dl_cp_async16(dst + 16 * i, cache + bx.first + bx.off(i), 16);
}
constexpr int kProbeTma = 0, kProbeLdgsts = 1, kProbeLdg = 2, kProbeLdgSts = 3, kProbeLdgBatch = 16;
constexpr int kProbeLdgStage = 2 * kProbeLdgBatch * 32 * 16; /* DL_STREAM_PROBE_LDG_STS: a batch of K and V, 32 lanes */
constexpr int kProbeMaxThreads = 256; /* LDGSTS: DL_STREAM_PROBE_THREADS (32 .. 256) share a CTA's copies */
__device__ unsigned g_probe_sink; /* LDG: written only if the fold hits an impossible key (keeps the loads) */
/* LDG: thread lane's 16-byte chunks of the K and the V box at the same offsets, loaded kProbeLdgBatch at a time
 * before any is used, folded into *acc; STS: each batch stored into `stage` (the CTA's kProbeLdgStage bytes of shared
 * memory) first and folded from there, the next lane's pieces */
template <bool STS>
__device__ __forceinline__ void ldg_boxes(const uint8_t *kc, const uint8_t *vc, const box_chunks &bx, int lane,
                                          unsigned *acc, uint4 *stage)
{
    for (int i0 = lane; i0 < bx.n; i0 += 32 * kProbeLdgBatch) {
        uint4 k[kProbeLdgBatch], v[kProbeLdgBatch];
#pragma unroll
        for (int u = 0; u < kProbeLdgBatch; u++) {
            const int i = i0 + 32 * u;
            k[u] = v[u] = make_uint4(0, 0, 0, 0);
            if (i < bx.n) {
                k[u] = __ldcs((const uint4 *)(kc + bx.first + bx.off(i)));
                v[u] = __ldcs((const uint4 *)(vc + bx.first + bx.off(i)));
            }
        }
        if constexpr (STS) { /* DL_STREAM_PROBE_LDG_STS=1: the batch lands in shared memory; the fold reads the next lane's */
#pragma unroll
            for (int u = 0; u < kProbeLdgBatch; u++) {
                stage[u * 32 + lane] = k[u];
                stage[(kProbeLdgBatch + u) * 32 + lane] = v[u];
            }
            __syncwarp();
#pragma unroll
            for (int u = 0; u < 2 * kProbeLdgBatch; u++) {
                const uint4 x = stage[u * 32 + ((lane + 1) & 31)];
                *acc ^= x.x ^ x.y ^ x.z ^ x.w;
            }
            __syncwarp(); /* read before the next batch overwrites */
            continue;
        }
#pragma unroll
        for (int u = 0; u < kProbeLdgBatch; u++) *acc ^= k[u].x ^ k[u].y ^ k[u].z ^ k[u].w ^ v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
}
template <int MODE>
__global__ void __launch_bounds__(MODE >= kProbeLdg ? 32 : kProbeMaxThreads, MODE >= kProbeLdg ? 16 : 1) stream_copy_probe(const int32_t *kv_indices, int npages, int Hkv, int boxheads,
                                                         int ns, uint32_t box_bytes,
                                                         const __grid_constant__ CUtensorMap kmap,
                                                         const __grid_constant__ CUtensorMap vmap, int timed,
                                                         const uint8_t *kc, const uint8_t *vc, int nhd, int ps, int R,
                                                         int l2pf, int inner)
{
    extern __shared__ __align__(1024) uint8_t probe_smem[];
    __shared__ uint64_t full[kProbeMaxStages];
    const int per = (npages + gridDim.x - 1) / gridDim.x, j0 = blockIdx.x * per, j1 = min(npages, j0 + per);
    const int tid = threadIdx.x; /* the LDG probe: its lane (32 threads a CTA) */
    if (MODE == kProbeTma && tid != 0) return;
    timed = timed && blockIdx.x < kTlMax && tid == 0;
    if (timed) tl_begin_cta(); /* a CTA with no pages keeps entry = exit and no first landing */
    if (j0 >= j1) return;
    const int npg = j1 - j0, ng = Hkv / boxheads, nrun = npg * ng; /* copies of the CTA's run */
    /* copy m of the walk: its page's index j and first head hg (head groups outermost, or innermost: `inner`) */
    auto walk = [&](int m, int &j, int &hg) {
        j = j0 + (inner ? m / ng : m % npg);
        hg = (inner ? m % ng : m / npg) * boxheads;
    };
    if constexpr (MODE >= kProbeLdg) { /* kProbeLdgSts: DL_STREAM_PROBE_LDG_STS=1 */
        unsigned acc = 0;
        for (int n = 0; n < nrun; n++) {
            int j, hg;
            walk(n, j, hg);
            const int page = kv_indices[j];
            if (timed && n == 0) g_tl_mark[kTlMarks * blockIdx.x + kTlPage] = tl_now();
            ldg_boxes<MODE == kProbeLdgSts>(kc, vc, box_chunks(nhd, page, hg, boxheads, Hkv, ps, R), tid, &acc,
                                            (uint4 *)probe_smem);
            if (timed && n == 0) g_tl[3 * blockIdx.x + 1] = tl_now(); /* the first page's pieces folded */
        }
        if (acc == 0x9E3779B9u) g_probe_sink = acc;
        if (timed) g_tl[3 * blockIdx.x + 2] = tl_now();
        return;
    }
    if (tid == 0) {
        for (int st = 0; st < ns; st++) mbar_init(&full[st], MODE == kProbeLdgsts ? (int)blockDim.x : 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    if (MODE == kProbeLdgsts) __syncthreads();
    auto prefetch = [&](int m) { /* TMA (DL_STREAM_PROBE_L2PF): copy m's boxes into L2 only, by thread 0 */
        if (MODE != kProbeTma || m >= nrun) return;
        int jm, hgm;
        walk(m, jm, hgm);
        const int pg = kv_indices[jm];
        tma_prefetch_l2(&kmap, 0, 0, hgm, pg);
        tma_prefetch_l2(&vmap, 0, 0, hgm, pg);
    };
    for (int m = 0; m < l2pf; m++) prefetch(m);
    int n = 0;
    for (; n < nrun; n++) {
        int j, hg;
        walk(n, j, hg);
        if (l2pf) prefetch(n + l2pf);
        const int st = n % ns, page = kv_indices[j];
        if (timed && n == 0 && page != INT_MIN) g_tl_mark[kTlMarks * blockIdx.x + kTlPage] = tl_now();
        if (n >= ns) mbar_wait(&full[st], ((n / ns) - 1) & 1); /* its previous copy has landed */
        if (timed && n == ns) g_tl[3 * blockIdx.x + 1] = tl_now(); /* copy 0 landed (waited for just now) */
        uint8_t *dst = probe_smem + (size_t)st * 2 * box_bytes;
        if constexpr (MODE == kProbeLdgsts) {
            const box_chunks bx(nhd, page, hg, boxheads, Hkv, ps, R);
            ldgsts_box(dst, kc, bx, tid, blockDim.x);
            ldgsts_box(dst + box_bytes, vc, bx, tid, blockDim.x);
            /* this thread's arrival (one of the barrier's blockDim.x) once its copies above have landed */
            asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_u32(&full[st]))
                         : "memory");
        } else {
            mbar_expect_tx(&full[st], 2 * box_bytes);
            tma_load(dst, &kmap, &full[st], 0, 0, hg, page);
            tma_load(dst + box_bytes, &vmap, &full[st], 0, 0, hg, page);
        }
        if (timed && n == 0) g_tl_mark[kTlMarks * blockIdx.x + kTlIssue] = tl_now();
    }
    for (int m = n > ns ? n - ns : 0; m < n; m++) { /* the last ones land */
        mbar_wait(&full[m % ns], (m / ns) & 1);
        if (timed && m == 0) g_tl[3 * blockIdx.x + 1] = tl_now(); /* fewer copies than stages */
    }
    if (timed) g_tl[3 * blockIdx.x + 2] = tl_now();
}
#endif

/* The minimum CTAs per SM the tile rings' kernels are compiled for: the CTAs their shared memory admits (2 or 1),
 * 1 for D 128 with an 8-bit cache and two n8 tiles (groups 9-16: 213-237 registers, #23), so that ptxas neither
 * lets registers bind first nor trades registers for an occupancy the shared memory forbids. Without one, its own
 * choice moved with small edits (attempt #44, static hot-loop figures in gpu/NOTES.md): bf16-hw-stream D128
 * e4m3 went from 168 registers to 180 (one CTA an SM), the D128 16-bit kernels from 160 to 134 registers with
 * 59-63 % more stall cycles a tile. The page stage (0: none given) keeps ptxas's own choice, measured as it is. */
template <int D, dl_dtype KV, int DQ, int NT, int PAGE, bool DEEP> constexpr int stream_min_ctas()
{
    using SH = stream_shape_of<D, KV, DQ, NT, PAGE, DEEP>;
    if (DL_STREAM_SETMAXNREG) return SH::SMR ? 2 : 1; /* attempt #22's experiment, as it was built */
    if (PAGE) return 0;
    const bool two = 2 * (SH::SMEM + 1024) <= 228 * 1024;
    return two && !(D == 128 && dl_kv_size<KV>::value == 1 && NT == 2) ? 2 : 1;
}
/* PAGE: the page stage of PAGE heads a stage (page_shape<PAGE>: 8, the whole page, or 2), else (0) the tile rings
 * (stream_shape; DEEP: their 2 x 3 form, #57); CL: the tile rings launched in thread-block clusters, split tasks
 * merged by cluster_merge (attempt #61: instances of their own, in a make STREAM_CLUSTER=1 build alone, so that the
 * other kernels keep their code). */
template <int D, dl_dtype KV, int DQ, int NT, int PAGE = 0, bool DEEP = false, bool CL = false>
__global__ void __launch_bounds__(stream_shape_of<D, KV, DQ, NT, PAGE, DEEP>::THREADS,
                                  (stream_min_ctas<D, KV, DQ, NT, PAGE, DEEP>()))
    stream_decode_kernel(const dl_gpu_args a, const stream_params sp, const __grid_constant__ CUtensorMap kmap,
                         const __grid_constant__ CUtensorMap vmap)
{
    constexpr int ES = dl_kv_size<KV>::value;
    using SH = stream_shape_of<D, KV, DQ, NT, PAGE, DEEP>;
    static_assert(!PAGE || kPageHeadsFit<D, KV, DQ, NT, PAGE>, "the page stage: 8-bit cache, D 128, group <= 8 (2 "
                                                               "heads a stage: the hw policy)");
    static_assert(!(PAGE && DEEP), "the deep rings are tile rings");
    static_assert(!(PAGE && CL), "the clusters are the tile rings'");
    constexpr int W = SH::W, S = SH::S, SW = SH::SW, SLABS = SH::SLABS;
    constexpr int RING = PAGE ? S : W * S; /* stages: one ring shared by the CTA, or one ring per consumer */
    constexpr int NB = PAGE ? S / 4 : RING; /* full and empty barriers: a quad's (attempt #48), or a stage's */
    constexpr bool FP8 = ES == 1;
    using POL = dl_fp8_dq<FP8 ? KV : DL_E4M3, DQ>;
    constexpr bool F16 = FP8 ? POL::F16 : false;
    constexpr int BIAS = dl_bf16_bias_log2<KV, DQ>();
    constexpr float kHalfBias = (float)(1ull << (BIAS - BIAS / 2));
    constexpr float kQMul = (float)(1ull << (BIAS / 2)), kPMul = kQMul;
    constexpr int MT = D / 16; /* m-tiles of O^T (dims), also k-steps of S */

    extern __shared__ __align__(1024) uint8_t smem_raw[];
    /* 1024-byte alignment for the 128-byte swizzle, by offset so the compiler
     * keeps shared-memory loads (LDS), not generic ones */
    uint8_t *smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
    uint64_t *full = (uint64_t *)(smem + RING * SH::STAGE), *empty = full + NB;
    volatile int *hdr = (volatile int *)(empty + NB); /* the segment of each stage (pool: attempt #19) */

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    TL_BEGIN(sp);
    if (a.pdl) pdl_trigger(); /* #60: a chained layer */
    ring_barriers_init(full, empty, NB, PAGE ? 32 * W : 32, PAGE ? 4 : 1);

    /* the plan's seg_out (split_ticket_merge finds task_ptr and the tickets after it); the segments themselves come
     * from the records (sp.srec, sp.grec: seg_in) */
    const int32_t *seg_out = sp.plan + sp.num_slots + 1 + 3 * sp.num_segs;
    const int G = a.num_qo_heads / a.num_kv_heads, Hkv = a.num_kv_heads;

    if (SH::NP == 1 ? warp == W : warp >= W) {
        /* setmaxnreg (attempt #22): each role's first instruction, so that ptxas compiles the code it heads
         * for that count (warp-uniform: a whole warpgroup takes each branch) */
        if constexpr (SH::SMR) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kSmrProducerRegs));
        if constexpr (PAGE)
            stream_produce_pages<W, S, SH::STAGE, SH>(a, sp, &kmap, &vmap, smem, full, empty, lane);
        else if constexpr (SH::NP != W)
            stream_produce<W, S, SH::STAGE, SH::TILE_BYTES, SW, SLABS, true>(a, sp, &kmap, &vmap, smem, full, empty,
                                                                              lane);
        else
            stream_produce_one<S, SH::STAGE, SH::TILE_BYTES, SW, SLABS>(
                a, sp, &kmap, &vmap, smem + (warp - W) * S * SH::STAGE, full + (warp - W) * S,
                empty + (warp - W) * S, hdr + (warp - W) * S, lane, blockIdx.x * W + warp - W, (int)gridDim.x * W);
        TL_END(sp);
        return;
    }

    /* ---------------- consumer warp */
    if constexpr (SH::SMR) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kSmrConsumerRegs));
    pdl_wait(); /* #60: before Q, the outputs and the tickets */
    const int g = lane / 4, c = lane % 4;
    const int slot = blockIdx.x * W + warp;
    uint8_t *mine = smem + warp * S * SH::STAGE;

    /* per-lane shared-memory offsets inside a tile (constant across tiles) */
    constexpr int KCH = FP8 ? D / 64 : 1;     /* fp8 K: 16-byte chunks per lane slice */
    constexpr int VB = D / 8;                 /* fp8 V: bytes per lane slice */
    int koff[KCH];                            /* fp8 K: row g's chunks; rows g + 8, m-tiles: row_step (#49) */
    v_lane<VB> vl;                            /* fp8 V: the lane's offsets (v_lane_of) */
    ldsm_lane<SW> kl, vl16;                   /* 16-bit K and V: the lane's ldmatrix offsets (#50) */
    if constexpr (FP8) {
#pragma unroll
        for (int q = 0; q < KCH; q++) koff[q] = tile_off<SW>(g, c * KCH + q, sp.swz);
        vl = v_lane_of<SW, VB>(g, c, sp.swz);
    } else {
        kl = ldsm_lane_of<SW>((lane & 7) + 8 * ((lane >> 3) & 1), lane >> 4, sp.swz);
        vl16 = ldsm_lane_of<SW>((lane & 7) + 8 * (lane >> 4), (lane >> 3) & 1, sp.swz);
    }

    /* the segments of the warp's slot, then (one producer per consumer) those its producer names in the
     * stages' headers until a -1: the pool's (stream_produce_one). `in` holds segment k's inputs, loaded at the
     * previous segment's end (attempt #37: seg_in) or, for the slot's first and the pool's, at the loop's top. */
    int j = 0;
    /* attempt #37 at D 128 with one n8 tile (groups <= 8: the llama shapes; the raw Q held over the epilogue is 16
     * registers beside its 32 accumulators); elsewhere each segment's inputs are loaded at its start, from the plan's
     * arrays as before #37 (with seg_in there too, ptxas took D 64 8-bit caches with two n8 tiles from 128 registers
     * to 160-164: one CTA an SM instead of two) */
    constexpr bool kEarlyIn = D == 128 && NT == 1;
    constexpr bool kEarlyV = FP8 && !PAGE && D == 128; /* attempt #41, below */
    const int32_t *slot_ptr = sp.plan;
    seg_in<D, NT> in;
    bool have = false; /* kEarlyIn: in holds segment k's */
    int k, kend;
    if constexpr (kEarlyIn) {
        const int4 r0 = sp.srec[2 * slot], e0 = sp.srec[2 * slot + 1];
        k = e0.y, kend = e0.z;
        have = k < kend;
        if (have) seg_in_load<D, NT, FP8>(a, sp.grec, k, r0.x, g, c, in);
    } else {
        k = slot_ptr[slot], kend = slot_ptr[slot + 1];
    }
    for (;; k++) {
        if (k >= kend) {
            if constexpr (SH::NP != W) break; /* the round-robin producer: no pool, no headers */
            mbar_wait(&full[warp * S + j % S], (j / S) & 1); /* waited again below: a completed phase */
            k = hdr[warp * S + j % S];
            if (k < 0) break;
            kend = k + 1;
            have = false;
        }
        int t, len, part = -1, tok0, tok1, t_next = -1; /* the segment: tokens [tok0, tok1) of task t */
        float ksc, vsc;
        uint32_t qf[NT][MT][2];
        if constexpr (kEarlyIn) {
            if (!have) seg_in_load<D, NT, FP8>(a, sp.grec, k, sp.grec[2 * k].x, g, c, in);
            have = k + 1 < kend; /* the slot's next segment: its task now, its inputs at this one's end */
            if (have) t_next = sp.grec[2 * (k + 1)].x;
            t = in.r.x, len = in.e.x, part = in.e.w, tok0 = in.r.y, tok1 = in.r.z, ksc = in.ks, vsc = in.vs;
            q_operand<F16, D, NT>(in.q, a.q_dtype, kQMul, qf);
        } else {
            const int4 r = sp.grec[2 * k]; /* {task, tok0, tok1, page base} (plan_records) */
            t = r.x, len = dl_seq_len(a, t / Hkv), tok0 = r.y, tok1 = r.z;
            q_load_operand<F16, D, NT, FP8>(a, t, g, c, kQMul, qf);
            ksc = a.k_scale[t % Hkv], vsc = a.v_scale[t % Hkv];
        }
        const int b = t / Hkv, kvh = t % Hkv;
        if (j == 0) TL_MARK(sp, kTlQ, qf[NT - 1][MT - 1][1]); /* INT_MIN: a +0 / -0 pair, never at once in practice */
        const float sk2 = a.sm_scale * ksc * kHalfBias * 1.4426950408889634f;
        const float vs_b = vsc * kHalfBias;

        float acc[MT][NT][4];
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int nt = 0; nt < NT; nt++) acc[i][nt][0] = acc[i][nt][1] = acc[i][nt][2] = acc[i][nt][3] = 0.0f;
        float m[NT][2], dsum[NT][2];
#pragma unroll
        for (int nt = 0; nt < NT; nt++) m[nt][0] = m[nt][1] = -INFINITY, dsum[nt][0] = dsum[nt][1] = 0.0f;

        const int ntok = tok1 - tok0, ntile = (ntok + kTile - 1) / kTile; /* tiles from the segment's first token */
#if DL_STREAM_CLAIM
        /* #71: a split task's segment with claims takes its tiles from the stages' headers until kClaimEnd */
        const bool claims = kEarlyIn && !PAGE && !CL && SH::NP == W && sp.cword && part >= 0;
        for (int tile = 0; claims || tile < ntile; tile++, j++) {
            const int st = j % S;
            const uint8_t *tk = mine + st * SH::STAGE, *tv = tk + SH::TILE_BYTES;
            int nvalid = tile_tokens(ntok, tile, len - tok0);
            bool partial = nvalid < kTile;
#else
        for (int tile = 0; tile < ntile; tile++, j++) {
            const int st = j % S;
            const uint8_t *tk = mine + st * SH::STAGE, *tv = tk + SH::TILE_BYTES;
            const int nvalid = tile_tokens(ntok, tile, len - tok0);
            const bool partial = nvalid < kTile;
#endif
            const bool sync = !(DL_STREAM_DIAG && sp.dry == 5); /* DL_STREAM_DRY=5: the page ring unsynchronized */
            constexpr int Q = PAGE ? S / 4 : 1;
            if constexpr (PAGE) {
                if (sync) page_wait<Q>(full, j, 0); /* the K quad */
            } else {
                mbar_wait(&full[warp * S + st], (j / S) & 1);
            }
#if DL_STREAM_CLAIM
            if (claims) { /* the tile's first token, or the segment's end (the stage goes back unread) */
                const int tc = hdr[warp * S + st];
                if (tc == kClaimEnd) {
                    __syncwarp();
                    mbar_arrive(&empty[warp * S + st]);
                    j++;
                    break;
                }
                nvalid = tile_tokens(len - tc, 0, len - tc);
                partial = nvalid < kTile;
            }
#endif
            TL_FIRST(sp, j);
            if (DL_STREAM_DIAG && sp.dry == 1) { /* diagnosis: the stage released unread (DL_STREAM_DRY=1) */
                if constexpr (PAGE) {
                    page_release<Q>(empty, j, 0);
                    page_wait<Q>(full, j, 1);
                    page_release<Q>(empty, j, 1);
                } else {
                    __syncwarp();
                    mbar_arrive(&empty[warp * S + st]);
                }
                continue;
            }
            if (!PAGE && partial) { /* V rows past the end to 0 (the scores there are masked to -inf below) */
                zero_tail_rows<SW, SH::R>(tv, nvalid, sp.swz, lane, 32);
                __syncwarp();
            }

            /* S^T = K Q^T: 4 m-tiles of 16 tokens */
            float s[4][NT][4];
#pragma unroll
            for (int mt = 0; mt < 4; mt++) {
#pragma unroll
                for (int nt = 0; nt < NT; nt++) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.0f;
                if constexpr (FP8) {
                    const uint8_t *kb = tk;
                    if constexpr (PAGE) kb = page_rows<Q, SH>(smem, j, mt, kvh);
#pragma unroll
                    for (int q = 0; q < KCH; q++) {
                        /* rows g and g + 8 of the m-tile (the page stage: each m-tile is a stage of its own) */
                        const uint8_t *kq = kb + koff[q] + row_step<SW>(PAGE ? 0 : mt * 16);
                        const uint4 r0 = *(const uint4 *)kq, r1 = *(const uint4 *)(kq + row_step<SW>(8));
                        const uint32_t w0[4] = {r0.x, r0.y, r0.z, r0.w}, w1[4] = {r1.x, r1.y, r1.z, r1.w};
#pragma unroll
                        for (int wi = 0; wi < 4; wi++) {
                            uint32_t af[4];
                            POL::x4(w0[wi], af[0], af[2]);
                            POL::x4(w1[wi], af[1], af[3]);
#pragma unroll
                            for (int nt = 0; nt < NT; nt++)
                                dl_mma16816<F16>(s[mt][nt], af, qf[nt][q * 4 + wi][0], qf[nt][q * 4 + wi][1]);
                        }
                    }
                } else {
                    uint32_t kb[ldsm_lane<SW>::N];
                    ldsm_bases<SW>(kl, smem_u32(tk), kb);
#pragma unroll
                    for (int ks = 0; ks < MT; ks++) { /* rows mt * 16 + (lane & 7) + 8 ((lane >> 3) & 1), chunk 2 ks + (lane >> 4) */
                        uint32_t af[4];
                        ldsm_x4(ldsm_at<SW>(kb, mt * 16, ks), af);
                        if constexpr (KV == DL_F16) {
#pragma unroll
                            for (int i = 0; i < 4; i++) af[i] = h2_to_bf2(af[i]);
                        }
#pragma unroll
                        for (int nt = 0; nt < NT; nt++) dl_mma16816<F16>(s[mt][nt], af, qf[nt][ks][0], qf[nt][ks][1]);
                    }
                }
            }

            if constexpr (PAGE) {
                if (sync) page_release<Q>(empty, j, 0); /* K0..K3 */
            }
            /* attempt #41: the tile rings' first k-step of V loaded now, before the softmax's rescale branch (a
             * basic block ptxas does not schedule across), so that its shared-memory latency hides under the softmax.
             * D 128 only: at D 64 with two n8 tiles ptxas took 128 registers to 160-174 (one CTA an SM instead of two),
             * at D 256 it spilled more */
            uint32_t v0[4][VB / 4];
            if constexpr (kEarlyV) v_words<SW, VB>(tv, 0, false, vl, v0);
            /* scale (log2 units), mask the tail, column (= head) max */
            float mx[NT][2];
#pragma unroll
            for (int nt = 0; nt < NT; nt++) mx[nt][0] = mx[nt][1] = -INFINITY;
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int nt = 0; nt < NT; nt++)
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        float x = s[mt][nt][i] * sk2;
                        if (partial && mt * 16 + g + 8 * (i >> 1) >= nvalid) x = -INFINITY;
                        s[mt][nt][i] = x;
                        mx[nt][i & 1] = fmaxf(mx[nt][i & 1], x);
                    }
            bool rise = false;
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    float x = mx[nt][e];
                    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 4));
                    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 8));
                    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 16));
                    const float m_new = fmaxf(m[nt][e], x);
                    rise |= m_new > m[nt][e];
                    mx[nt][e] = m_new; /* now the new running max */
                }
            if (__any_sync(0xffffffffu, rise)) {
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    float f[2];
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        f[e] = m[nt][e] == -INFINITY ? 0.0f : ex2_ftz(m[nt][e] - mx[nt][e]);
                        dsum[nt][e] *= f[e];
                        m[nt][e] = mx[nt][e];
                    }
#pragma unroll
                    for (int i = 0; i < MT; i++) {
                        acc[i][nt][0] *= f[0]; acc[i][nt][1] *= f[1];
                        acc[i][nt][2] *= f[0]; acc[i][nt][3] *= f[1];
                    }
                }
            }

            /* P = 2^(s - m): FP32 into the sum, BF16 (the model) into P*V,
             * transposed to the B operand with movmatrix */
            uint32_t pb[4][NT][2];
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    float p[4];
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        p[i] = ex2_ftz(s[mt][nt][i] - m[nt][i & 1]);
                        dsum[nt][i & 1] += p[i];
                    }
                    uint32_t lo, hi;
                    if constexpr (F16) {
                        lo = pack_f16_of_bf16(p[0], p[1]);
                        hi = pack_f16_of_bf16(p[2], p[3]);
                    } else {
                        lo = dl_pack_bf16x2(p[0] * kPMul, p[1] * kPMul);
                        hi = dl_pack_bf16x2(p[2] * kPMul, p[3] * kPMul);
                    }
                    pb[mt][nt][0] = movmatrix_t(lo);
                    pb[mt][nt][1] = movmatrix_t(hi);
                }

            /* O^T += V^T P: k-steps of 16 tokens (the page stage: the V quad waited for first, as K) */
            if constexpr (PAGE) {
                if (sync) page_wait<Q>(full, j, 1);
            }
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                if constexpr (FP8) {
                    /* tokens 2c, 2c+1, 2c+8, 2c+9 of the k-step, the lane's VB bytes;
                     * m-tile 2j+u row g = dim g*VB + 4j + 2u, row g+8 = that + 1 */
                    constexpr int VW = VB / 4;
                    const uint8_t *vb = tv;
                    if constexpr (PAGE) { /* the k-step's 16 tokens are stage 4 + kk (rows past the end to 0) */
                        vb = page_rows<Q, SH>(smem, j, 4 + kk, kvh);
                        if (nvalid < 16 * kk + 16) {
                            zero_page_rows<SH::R>(vb, max(0, nvalid - 16 * kk), sp.swz, lane, 32);
                            __syncwarp();
                        }
                    }
                    uint32_t w[4][VW];
                    if (kEarlyV && kk == 0) {
#pragma unroll
                        for (int r = 0; r < 4; r++)
#pragma unroll
                            for (int q = 0; q < VW; q++) w[r][q] = v0[r][q];
                    } else {
#pragma unroll
                        for (int r = 0; r < 4; r++) {
                            /* rows 2c + (r & 1) (in vl) + row0: the k-step's 16 tokens, or the page stage's 16 rows */
                            const int row0 = (PAGE ? 0 : kk * 16) + 8 * (r >> 1);
#pragma unroll
                            for (int q = 0; q < VW; q += 4) {
                                if constexpr (VW >= 4) {
                                    const uint4 x = *(const uint4 *)(vb + vl.off[r & 1][q / 4] + row_step<SW>(row0));
                                    w[r][q] = x.x; w[r][q + 1] = x.y; w[r][q + 2] = x.z; w[r][q + 3] = x.w;
                                }
                            }
                            if constexpr (VW == 2) {
                                const uint2 x = *(const uint2 *)(vb + vl.off[r & 1][0] + row_step<SW>(row0));
                                w[r][0] = x.x; w[r][1] = x.y;
                            }
                        }
                    }
#pragma unroll
                    for (int q = 0; q < VW; q++) {
                        uint32_t a0[4], a1[4];
                        POL::x4(__byte_perm(w[0][q], w[1][q], 0x5140), a0[0], a0[1]);
                        POL::x4(__byte_perm(w[2][q], w[3][q], 0x5140), a0[2], a0[3]);
                        POL::x4(__byte_perm(w[0][q], w[1][q], 0x7362), a1[0], a1[1]);
                        POL::x4(__byte_perm(w[2][q], w[3][q], 0x7362), a1[2], a1[3]);
#pragma unroll
                        for (int nt = 0; nt < NT; nt++) {
                            dl_mma16816<F16>(acc[2 * q][nt], a0, pb[kk][nt][0], pb[kk][nt][1]);
                            dl_mma16816<F16>(acc[2 * q + 1][nt], a1, pb[kk][nt][0], pb[kk][nt][1]);
                        }
                    }
                } else {
                    uint32_t vb16[ldsm_lane<SW>::N];
                    ldsm_bases<SW>(vl16, smem_u32(tv), vb16);
#pragma unroll
                    for (int i = 0; i < MT; i++) { /* tokens kk * 16 + (lane & 7) + 8 (lane >> 4), chunk 2 i + ((lane >> 3) & 1) */
                        uint32_t af[4];
                        ldsm_x4_t(ldsm_at<SW>(vb16, kk * 16, i), af);
                        if constexpr (KV == DL_F16) {
#pragma unroll
                            for (int e = 0; e < 4; e++) af[e] = h2_to_bf2(af[e]);
                        }
#pragma unroll
                        for (int nt = 0; nt < NT; nt++)
                            dl_mma16816<F16>(acc[i][nt], af, pb[kk][nt][0], pb[kk][nt][1]);
                    }
                }
            }
            /* The stage goes back to the producer, whose next copy into it is an async-proxy write after
             * this warp's generic reads: without the proxy fence the arrival (SYNCS.ARRIVE) did not wait
             * for the tile's last V loads, which ptxas issues just before it once nothing consumes them
             * first; the copy overwrote them (attempt #14 without this fence: bf16-cast-stream and
             * bf16-fast-stream on the llama3-70B shape FAILed with outputs that differed run to run,
             * H200 2026-12-03, results/h200_2026-12-03b/). */
            if constexpr (PAGE) {
                if (sync) page_release<Q>(empty, j, 1); /* V0..V3 */
            } else {
                fence_async_smem();
                __syncwarp();
                mbar_arrive(&empty[warp * S + st]);
            }
        }
        /* attempt #37: the next segment's inputs asked for now, before this one's stores, fence and ticket */
        if (kEarlyIn && have) seg_in_load<D, NT, FP8>(a, sp.grec, k + 1, t_next, g, c, in);
        if constexpr (!kEarlyIn) part = seg_out[k];

        if (DL_STREAM_DIAG && sp.dry == 1) continue; /* DL_STREAM_DRY=1: nothing written, no merge */
        /* the segment's result: normalized o (v_scale applied) and natural-log lse */
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                float x = dsum[nt][e];
                x += __shfl_xor_sync(0xffffffffu, x, 4);
                x += __shfl_xor_sync(0xffffffffu, x, 8);
                x += __shfl_xor_sync(0xffffffffu, x, 16);
                dsum[nt][e] = x;
            }
        const size_t row0 = (size_t)b * a.num_qo_heads + kvh * G;
        float *ws = (float *)a.workspace;
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int head = 2 * c + e + 8 * nt;
                if (head >= G) continue;
                const float inv = vs_b / dsum[nt][e];
                float *orow = part < 0 ? a.o + (row0 + head) * D : ws + ((size_t)part * G + head) * (D + 1);
#pragma unroll
                for (int i = 0; i < MT; i++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const int dim = FP8 ? g * VB + 4 * (i / 2) + 2 * (i % 2) + h : 16 * i + g + 8 * h;
                        orow[dim] = acc[i][nt][2 * h + e] * inv;
                    }
                if (g == 0) {
                    const float lse = (m[nt][e] + log2f(dsum[nt][e])) * 0.6931471805599453f;
                    if (part < 0) a.lse[row0 + head] = lse;
                    else orow[D] = lse;
                }
            }
        if (part >= 0 && !CL) split_ticket_merge<FP8 && D == 128 ? 4 : 1>(a, sp, seg_out, t, G, row0, lane);
    }
    if constexpr (CL)
        if (!(DL_STREAM_DIAG && sp.dry == 1)) cluster_merge<W>(a, sp, seg_out, G, (float *)smem);
    TL_END(sp);
}

/* ------------------------------------------------------------ the wgmma consumer (issue 12)
 * fp8-none-wgmma: the same producer, plan and merge; the consumer of a ring is a warpgroup
 * (4 warps, 128 threads) that computes in FP8 on the native Hopper path (wgmma.mma_async,
 * QGMMA in SASS), with the fp8 model's numerics:
 *  - S^T = K Q^T as m64n8k32 e4m3 (e5m2 K: .e5m2.e4m3): A = the K tile straight from the TMA
 *    stage (a 128- or 64-byte swizzled K-major descriptor, D/32 instructions chained in the
 *    FP32 accumulator), B = Q quantized to e4m3 per head (scale absmax/448), written once per
 *    segment into a swizzled [8 heads][D] buffer; s = ((dot * q_scale) * k_scale) * sm_scale;
 *  - the tile max over the 4 warps through shared memory; acc and sum rescaled by
 *    expf(m - m_new); p = expf(s - m_new) summed in FP32, P = e4m3_satfinite(p * 448);
 *  - O^T += V^T P as m64n8k32 per 64 dims and 32 tokens: A = V^T from registers (per warp 16
 *    dims x 32 tokens; the rows are permuted so that a thread's two rows are adjacent dims:
 *    one 16-bit load per token, then byte permutes), B = P from a [32-token][8-head]
 *    core-matrix buffer; a 32-token step with no valid token is skipped, as the model has no
 *    such k-block;
 *  - o = acc / sum * (v_scale / 448), lse = m + logf(sum), per segment (merged by ticket).
 * Group <= 8 (one n8 tile), page_size >= 8 (the swizzled layouts wgmma reads); else SKIP. */
/* Stages per warpgroup of the wgmma kernels, from make STREAM_WG_S=N (2..4; issue 10, attempt #55, an experiment
 * after #54 gave the warp consumers' 8-bit rings a third stage): shapes whose rings would pass 200 KB keep 2. */
#ifndef DL_STREAM_WG_S
#define DL_STREAM_WG_S 2
#endif
static_assert(DL_STREAM_WG_S >= 2 && DL_STREAM_WG_S <= 4, "STREAM_WG_S: 2, 3 or 4 stages a warpgroup");
template <int D, int CE = 1> struct wg_shape { /* CE: bytes of a compute element (1: FP8, 2: BF16) */
    static constexpr int R = D; /* FP8 row bytes */
    static constexpr int SW = R >= 128 ? 128 : R;
    static constexpr int SLABS = R / SW;
    static constexpr int TILE_BYTES = kTile * R;
    static constexpr int STAGE = 2 * TILE_BYTES;
    static constexpr int W = 2;                     /* consumer warpgroups per CTA */
    static constexpr int S = W * DL_STREAM_WG_S * STAGE <= 200 * 1024 ? DL_STREAM_WG_S : 2; /* stages a warpgroup */
    static constexpr int QB = 8 * R * CE;           /* Q: FP8 SLABS x [8 heads][SW]; BF16 [D/8][8 heads][8] */
    static constexpr int PB = 8 * kTile * CE;       /* P: core matrices [tokens/(16/CE)][8 heads][16 bytes] */
    static constexpr int RED = 128 * 4;             /* floats: 2 x [4 warps][8 heads] maxima, [4][8] sums, [8] q scales */
    static constexpr int PER_WG = ((QB + PB + RED + 1023) / 1024) * 1024;
    static constexpr int THREADS = 32 * (4 * W + 1);
    static constexpr int SMEM = W * S * STAGE + W * PER_WG + 2 * W * S * 8 + 1024;
};

/* The low word of a wgmma descriptor (dl_tile_off.cuh's wg_desc) behind an empty asm, so that each wg_desc_add of
 * it is one add of a constant (attempt #51: the loops rebuilt every descriptor from its address, ~6 instructions
 * each, 8-12 a tile). */
__device__ __forceinline__ uint64_t wg_desc_base(uint64_t d)
{
    uint32_t lo = (uint32_t)d;
    asm("mov.u32 %0, %1;\n" : "=r"(lo) : "r"(lo));
    return ((d >> 32) << 32) | lo;
}

/* d[4] (+)= A B, m64n8k32, FP32 accumulators; A and B from descriptors; KV: the A type. */
template <dl_dtype KV> __device__ __forceinline__ void wg_mma_ss(float *d, uint64_t da, uint64_t db, int accumulate)
{
    if constexpr (KV == DL_E5M2)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e4m3 {%0,%1,%2,%3}, %4, %5, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "l"(da), "l"(db), "r"(accumulate));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, %4, %5, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "l"(da), "l"(db), "r"(accumulate));
}
/* d[4] (+)= A B, m64n8k32, A (4 registers of 4 codes) from registers, B from a descriptor. */
template <dl_dtype KV> __device__ __forceinline__ void wg_mma_rs(float *d, const uint32_t *a, uint64_t db, int accumulate)
{
    if constexpr (KV == DL_E5M2)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e4m3 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
/* Wait for every committed group; the accumulators are named so that no read of them moves
 * above the wait. */
template <int N> __device__ __forceinline__ void wg_wait(float (*acc)[4])
{
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(acc[i][0]), "+f"(acc[i][1]), "+f"(acc[i][2]), "+f"(acc[i][3])::"memory");
}
/* The 128 threads of warpgroup wg (named barrier 1 + wg). */
__device__ __forceinline__ void wg_sync(int wg) { asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory"); }
/* The wgmma kernels' start, shared by both: the rings' barriers set up, then the producer warp (the last) runs its
 * copies and the function returns true (its caller returns); the consumer warps get false. */
template <class SH>
__device__ __forceinline__ bool wg_producer_ran(const dl_gpu_args &a, const stream_params &sp, const CUtensorMap *kmap,
                                                const CUtensorMap *vmap, uint8_t *smem, uint64_t *full, uint64_t *empty,
                                                int warp, int lane)
{
    TL_BEGIN(sp);
    ring_barriers_init(full, empty, SH::W * SH::S, 128);
    if (warp != 4 * SH::W) return false;
    stream_produce<SH::W, SH::S, SH::STAGE, SH::TILE_BYTES, SH::SW, SH::SLABS>(a, sp, kmap, vmap, smem, full, empty, lane);
    TL_END(sp);
    return true;
}
/* A segment's end, shared by both wgmma kernels: the running sums added over the warpgroup's 4
 * warps, then o = acc / sum * out_scale() and lse = m + log(sum) for the 2 heads the thread holds
 * (into o / lse, or into the workspace row of a split task's segment, whose last warp merges).
 * out_scale is called where the kernels computed it before this was shared (same code from ptxas). */
template <int D, typename OUT_SCALE>
__device__ __forceinline__ void wg_segment_end(const dl_gpu_args &a, const stream_params &sp, const int32_t *seg_out,
                                               int k, int t, int G, size_t row0, int wg, int wq, int g, int c,
                                               int lane, float *sRed, const float (*acc)[4], const float *m,
                                               const float *dsum, OUT_SCALE out_scale_fn)
{
    constexpr int MB = D / 64;
#pragma unroll
    for (int e = 0; e < 2; e++) {
        float x = dsum[e];
        x += __shfl_xor_sync(0xffffffffu, x, 4);
        x += __shfl_xor_sync(0xffffffffu, x, 8);
        x += __shfl_xor_sync(0xffffffffu, x, 16);
        if (g == 0) sRed[64 + wq * 8 + 2 * c + e] = x;
    }
    wg_sync(wg);
    const int part = seg_out[k];
    float *ws = (float *)a.workspace;
    const float out_scale = out_scale_fn();
#pragma unroll
    for (int e = 0; e < 2; e++) {
        const int head = 2 * c + e;
        if (head >= G) continue;
        const float den = sRed[64 + head] + sRed[72 + head] + sRed[80 + head] + sRed[88 + head];
        float *orow = part < 0 ? a.o + (row0 + head) * D : ws + ((size_t)part * G + head) * (D + 1);
#pragma unroll
        for (int mb = 0; mb < MB; mb++) {
            const int d0 = 64 * mb + 16 * wq + 2 * g;
            orow[d0] = acc[mb][e] / den * out_scale;
            orow[d0 + 1] = acc[mb][2 + e] / den * out_scale;
        }
        if (wq == 0 && g == 0) {
            const float lse = m[e] + logf(den);
            if (part < 0) a.lse[row0 + head] = lse;
            else orow[D] = lse;
        }
    }
    if (part >= 0) {
        __threadfence();
        wg_sync(wg);
        if (wq == 0) split_ticket_merge(a, sp, seg_out, t, G, row0, lane);
    }
}

template <int D, dl_dtype KV, int PROMOTE>
__global__ void __launch_bounds__(wg_shape<D>::THREADS, 2)
    wgmma_decode_kernel(const dl_gpu_args a, const stream_params sp, const __grid_constant__ CUtensorMap kmap,
                        const __grid_constant__ CUtensorMap vmap)
{
    using SH = wg_shape<D>;
    constexpr int W = SH::W, S = SH::S, SW = SH::SW, MB = D / 64;
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    uint8_t *smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
    uint8_t *extra = smem + W * S * SH::STAGE;
    uint64_t *full = (uint64_t *)(extra + W * SH::PER_WG), *empty = full + W * S;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (wg_producer_ran<SH>(a, sp, &kmap, &vmap, smem, full, empty, warp, lane)) return;

    /* ---------------- consumer warpgroup */
    const int wg = warp / 4, wq = warp % 4, tid = threadIdx.x % 128, g = lane / 4, c = lane % 4;
    uint8_t *ring = smem + wg * S * SH::STAGE;
    uint8_t *sQ = extra + wg * SH::PER_WG, *sP = sQ + SH::QB;
    float *sRed = (float *)(sP + SH::PB); /* [0, 64): tile maxima (2 buffers); [64, 96): sums; [96, 104): q scales */
    const int32_t *slot_ptr = sp.plan, *seg_out = sp.plan + sp.num_slots + 1 + 3 * sp.num_segs;
    const int G = a.num_qo_heads / a.num_kv_heads, Hkv = a.num_kv_heads;
    const int slot = blockIdx.x * W + wg;
    const uint32_t qaddr = smem_u32(sQ), paddr = smem_u32(sP);

    int j = 0; /* tiles consumed */
    for (int k = slot_ptr[slot]; k < slot_ptr[slot + 1]; k++) {
        const int4 rec = sp.grec[2 * k]; /* {task, tok0, tok1, page base} (plan_records) */
        const int t = rec.x, b = t / Hkv, kvh = t % Hkv;
        const int len = dl_seq_len(a, b);
        const size_t row0 = (size_t)b * a.num_qo_heads + kvh * G;

        /* Q to e4m3 per head: 16 threads per head, D/16 dims each; scale = absmax / 448 */
        {
            constexpr int PER = D / 16;
            const int head = tid / 16, sub = tid % 16;
            float q[PER], amax = 0.0f;
#pragma unroll
            for (int i = 0; i < PER; i++) {
                q[i] = head < G ? dl_load_q(a.q, (row0 + head) * D + sub * PER + i, a.q_dtype) : 0.0f;
                amax = fmaxf(amax, fabsf(q[i]));
            }
#pragma unroll
            for (int off = 8; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
            const float scale = amax > 0.0f ? __fdiv_rn(amax, 448.0f) : 1.0f;
            wg_sync(wg); /* the previous segment's wgmmas and reads of sQ / sRed are done */
#pragma unroll
            for (int i = 0; i < PER; i++) {
                const int d = sub * PER + i, sl = d / SW, cb = d % SW, ch = cb / 16;
                const int x = SW == 128 ? (head & 7) : ((head >> 1) & 3);
                sQ[sl * 8 * SW + head * SW + ((ch ^ x) << 4) + cb % 16] = (uint8_t)dl_e4m3_sat(__fdiv_rn(q[i], scale));
            }
            if (sub == 0) sRed[96 + head] = scale;
            fence_async_smem();
            wg_sync(wg);
        }
        const float ks = a.k_scale[kvh], sm = a.sm_scale;
        const float qs[2] = {sRed[96 + 2 * c], sRed[96 + 2 * c + 1]};

        float acc[MB][4];
#pragma unroll
        for (int i = 0; i < MB; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
        float m[2] = {-INFINITY, -INFINITY}, dsum[2] = {0.0f, 0.0f};

        const int ntok = rec.z - rec.y, ntile = (ntok + kTile - 1) / kTile; /* tiles from the segment's first token */
        for (int tile = 0; tile < ntile; tile++, j++) {
            const int st = j % S;
            const uint8_t *tk = ring + st * SH::STAGE, *tv = tk + SH::TILE_BYTES;
            const int nvalid = tile_tokens(ntok, tile, len - rec.y);
            mbar_wait(&full[wg * S + st], (j / S) & 1);
            TL_FIRST(sp, j);
            if (DL_STREAM_DIAG && sp.dry == 1) { /* diagnosis: the stage released unread (DL_STREAM_DRY=1) */
                mbar_arrive(&empty[wg * S + st]);
                continue;
            }
            /* V rows past the end to 0, read after the warpgroup barrier that precedes the V reads */
            if (nvalid < kTile) zero_tail_rows<SW, SH::R>(tv, nvalid, sp.swz, threadIdx.x % 128, 128);

            /* S^T = K Q^T: rows = tokens (warp wq: 16wq + g, + 8), columns = heads 2c, 2c+1 */
            /* fp8acc (PROMOTE = N > 0): a fresh chain every N k32 blocks, the partials added in FP32 */
            constexpr int NS = PROMOTE > 0 ? (D / 32 + PROMOTE - 1) / PROMOTE : 1;
            float s[NS][4];
#pragma unroll
            for (int p = 0; p < NS; p++) s[p][0] = s[p][1] = s[p][2] = s[p][3] = 0.0f;
            wg_fence();
            const uint64_t da0 = wg_desc_base(wg_desc(smem_u32(tk), 16, 8 * SW, SW));
            const uint64_t dq0 = wg_desc_base(wg_desc(qaddr, 16, 8 * SW, SW));
#pragma unroll
            for (int kk = 0; kk < D / 32; kk++) {
                const int sl = kk * 32 / SW, off = kk * 32 % SW;
                const uint64_t da = wg_desc_add(da0, sl * kTile * SW + off);
                const uint64_t db = wg_desc_add(dq0, sl * 8 * SW + off);
                if constexpr (PROMOTE > 0) wg_mma_ss<KV>(s[kk / PROMOTE], da, db, kk % PROMOTE != 0);
                else wg_mma_ss<KV>(s[0], da, db, kk > 0);
            }
            wg_commit();
            wg_wait<NS>(s);
#pragma unroll
            for (int p = 1; p < NS; p++) /* main = ((0 + part 0) + part 1) + ..., the fp8acc model's order */
                s[0][0] += s[p][0], s[0][1] += s[p][1], s[0][2] += s[p][2], s[0][3] += s[p][3];

            /* scale in the model's order, mask, tile max over the 4 warps */
            float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int tok = 16 * wq + g + 8 * (i >> 1);
                float x = __fmul_rn(__fmul_rn(__fmul_rn(s[0][i], qs[i & 1]), ks), sm);
                if (tok >= nvalid) x = -INFINITY;
                s[0][i] = x;
                mx[i & 1] = fmaxf(mx[i & 1], x);
            }
            float *red = sRed + (j & 1) * 32;
#pragma unroll
            for (int e = 0; e < 2; e++) {
                float x = mx[e];
                x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 4));
                x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 8));
                x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 16));
                if (g == 0) red[wq * 8 + 2 * c + e] = x;
            }
            wg_sync(wg);
            float f[2], mn[2];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int h = 2 * c + e;
                const float tm = fmaxf(fmaxf(red[h], red[8 + h]), fmaxf(red[16 + h], red[24 + h]));
                mn[e] = fmaxf(m[e], tm);
                f[e] = m[e] == -INFINITY ? 0.0f : expf(m[e] - mn[e]);
                m[e] = mn[e];
                dsum[e] *= f[e];
            }
#pragma unroll
            for (int i = 0; i < MB; i++) {
                acc[i][0] *= f[0]; acc[i][1] *= f[1];
                acc[i][2] *= f[0]; acc[i][3] *= f[1];
            }
            /* P = e4m3(p * 448) into the core-matrix buffer: token t, head n at (t/16)*128 + n*16 + t%16 */
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int tok = 16 * wq + g + 8 * (i >> 1), n = 2 * c + (i & 1);
                const float p = expf(s[0][i] - m[i & 1]);
                dsum[i & 1] += p;
                sP[(tok / 16) * 128 + n * 16 + tok % 16] = (uint8_t)dl_e4m3_sat(p * a.p_scale);
            }
            fence_async_smem();
            wg_sync(wg);

            /* O^T += V^T P: per 64 dims (m-block) and 32 tokens; row r of the warp's 16 holds dim
             * 64 mb + 16 wq + 2 (r % 8) + r / 8, so a thread's rows g, g + 8 are the adjacent dims
             * 2g, 2g + 1 of one 16-bit load per token */
            uint32_t af[2][MB][4]; /* every A fragment first: wgmma.fence must follow their writes */
#pragma unroll
            for (int kc = 0; kc < 2; kc++)
#pragma unroll
                for (int mb = 0; mb < MB; mb++) {
                    const int d0 = 64 * mb + 16 * wq + 2 * g;
#pragma unroll
                    for (int half = 0; half < 2; half++) {
                        uint32_t h[4];
#pragma unroll
                        for (int i = 0; i < 4; i++) {
                            const int tok = 32 * kc + 16 * half + 4 * c + i;
                            const uint16_t v = *(const uint16_t *)(tv + tile_off<SW>(tok, d0 / 16, sp.swz) + d0 % 16);
                            h[i] = v;
                        }
                        const uint32_t x01 = __byte_perm(h[0], h[1], 0x5410), x23 = __byte_perm(h[2], h[3], 0x5410);
                        af[kc][mb][2 * half] = __byte_perm(x01, x23, 0x6420);     /* dim d0: tokens i = 0..3 */
                        af[kc][mb][2 * half + 1] = __byte_perm(x01, x23, 0x7531); /* dim d0 + 1 */
                    }
                }
            /* fp8acc: the tile's two k32 blocks chain in a fresh partial (PROMOTE >= 2: one chain, as the
             * fp8acc model promotes at the end of each kv_block; PROMOTE = 1: a partial per block), added
             * to acc after the rescale, in block order */
            constexpr int NKC = PROMOTE == 1 ? 2 : 1;
            constexpr int NP = PROMOTE > 0 ? NKC * MB : 1;
            float part[NP][4];
#pragma unroll
            for (int i = 0; i < NP; i++) part[i][0] = part[i][1] = part[i][2] = part[i][3] = 0.0f;
            wg_fence();
            const uint64_t dp0 = wg_desc_base(wg_desc(paddr, 128, 256, 0));
#pragma unroll
            for (int kc = 0; kc < 2; kc++) {
                /* no skip of a k-block without a valid token (its V is masked to 0, its P is 0): a branch
                 * around the wgmmas made ptxas serialize every one of them (C7520); and by the measured
                 * QGMMA rule (dl_qgmma_add) adding only zero products leaves a 14-bit C unchanged, which
                 * the previous block's output is, so the fp8wg model's "no such k-block" still holds */
                const uint64_t db = wg_desc_add(dp0, kc * 256);
#pragma unroll
                for (int mb = 0; mb < MB; mb++) {
                    if constexpr (PROMOTE == 1) wg_mma_rs<KV>(part[kc * MB + mb], af[kc][mb], db, 0);
                    else if constexpr (PROMOTE > 0) wg_mma_rs<KV>(part[mb], af[kc][mb], db, kc > 0);
                    else wg_mma_rs<KV>(acc[mb], af[kc][mb], db, 1);
                }
            }
            wg_commit();
            if constexpr (PROMOTE > 0) {
                wg_wait<NP>(part);
#pragma unroll
                for (int q = 0; q < NP; q++) /* q = kc * MB + mb: block 0's partials first */
                    acc[q % MB][0] += part[q][0], acc[q % MB][1] += part[q][1], acc[q % MB][2] += part[q][2],
                        acc[q % MB][3] += part[q][3];
            } else {
                wg_wait<MB>(acc);
            }
            mbar_arrive(&empty[wg * S + st]);
        }

        if (DL_STREAM_DIAG && sp.dry == 1) continue; /* DL_STREAM_DRY=1: nothing written, no merge */
        /* the segment's result: sums over the 4 warps, o = acc / sum * (v_scale / 448) */
        wg_segment_end<D>(a, sp, seg_out, k, t, G, row0, wg, wq, g, c, lane, sRed, acc, m, dsum,
                          [&] { return a.v_scale[kvh] / a.p_scale; });
    }
    TL_END(sp);
}

/* ------------------------------------------------------------ bf16-fast-wgmma (issue 12)
 * The BF16 counterpart of fp8-none-wgmma on the same path (producer, plan, ticket merge, one
 * warpgroup per ring), computing as bf16-fast-stream does, with the bf16 model's numerics: FP8
 * codes dequantized in registers by the bit trick (dl_fp8_dq<KV, DL_DQ_FAST>: decode(code) x
 * 2^-BIAS, exact in BF16), multiplied by wgmma m64n8k16 bf16 (HGMMA) into FP32 accumulators:
 *  - S^T = K Q^T: A = K from registers (warp wq: tokens 16wq + g, + 8); in k-step ks a lane's 4
 *    bytes of a row are dims c*D/4 + 4ks + {0..3}, logical k 2c, 2c+1, 2c+8, 2c+9 (the
 *    bf16-fast-stream permutation of the dims); B = Q, bf16(q) x 2^(BIAS/2), written once per
 *    segment in that logical order into a no-swizzle K-major buffer of core matrices (logical k
 *    L of head n at (L/8)*128 + n*16 + (L%8)*2; descriptor LBO 128, one k-step = 256 bytes);
 *    s = (dot x 2^(BIAS - BIAS/2)) * (sm_scale * k_scale);
 *  - the softmax of fp8-none-wgmma (tile max through shared memory, expf); P = bf16(p) x
 *    2^(BIAS/2) into the same core-matrix layout (token t of head n at (t/8)*128 + n*16 + (t%8)*2);
 *  - O^T += V^T P per 64 dims and 16 tokens: A = V^T from registers (a lane's rows g, g+8 are the
 *    adjacent dims d0, d0+1 of one 16-bit load per token; tokens past the end load as 0);
 *  - o = acc / sum * (v_scale * 2^(BIAS - BIAS/2)), lse = m + logf(sum), per segment.
 * HGMMA's accumulator (measured 2026-12-02, `decodelab probe --hgmma-acc`) truncates products aligned to the
 * largest exponent to 25 fraction bits; the bf16 model's limits absorb the difference (README). Built 2026-12-01,
 * first run on the H200 2026-12-02 (PASS). Group <= 8, page_size >= 8, FP8 caches. */
__device__ __forceinline__ void wg_mma_bf16_rs(float *d, const uint32_t *a, uint64_t db, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}
/* The bits of a float that is a BF16 value (no rounding: the caller rounded) */
__device__ __forceinline__ uint16_t bf16_bits(float x) { return (uint16_t)(__float_as_uint(x) >> 16); }

template <int D, dl_dtype KV>
__global__ void __launch_bounds__(wg_shape<D, 2>::THREADS, 2)
    wgmma_bf16_decode_kernel(const dl_gpu_args a, const stream_params sp, const __grid_constant__ CUtensorMap kmap,
                             const __grid_constant__ CUtensorMap vmap)
{
    using SH = wg_shape<D, 2>;
    using POL = dl_fp8_dq<KV, DL_DQ_FAST>;
    constexpr int W = SH::W, S = SH::S, SW = SH::SW, MB = D / 64, KS = D / 16, KCH = D / 64;
    constexpr int BIAS = dl_bf16_bias_log2<KV, DL_DQ_FAST>();
    constexpr float kHalfBias = (float)(1ull << (BIAS - BIAS / 2)), kMul = (float)(1ull << (BIAS / 2));
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    uint8_t *smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
    uint8_t *extra = smem + W * S * SH::STAGE;
    uint64_t *full = (uint64_t *)(extra + W * SH::PER_WG), *empty = full + W * S;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (wg_producer_ran<SH>(a, sp, &kmap, &vmap, smem, full, empty, warp, lane)) return;

    /* ---------------- consumer warpgroup */
    const int wg = warp / 4, wq = warp % 4, tid = threadIdx.x % 128, g = lane / 4, c = lane % 4;
    uint8_t *ring = smem + wg * S * SH::STAGE;
    uint8_t *sQ = extra + wg * SH::PER_WG, *sP = sQ + SH::QB;
    float *sRed = (float *)(sP + SH::PB); /* [0, 64): tile maxima (2 buffers); [64, 96): sums */
    const int32_t *slot_ptr = sp.plan, *seg_out = sp.plan + sp.num_slots + 1 + 3 * sp.num_segs;
    const int G = a.num_qo_heads / a.num_kv_heads, Hkv = a.num_kv_heads;
    const int slot = blockIdx.x * W + wg;
    const uint32_t qaddr = smem_u32(sQ), paddr = smem_u32(sP);
    int koff[2][KCH]; /* the lane's K chunks: rows 16wq + g (+ 8), 16-byte chunks c*KCH + q */
#pragma unroll
    for (int h = 0; h < 2; h++)
#pragma unroll
        for (int q = 0; q < KCH; q++) koff[h][q] = tile_off<SW>(16 * wq + g + 8 * h, c * KCH + q, sp.swz);

    int j = 0; /* tiles consumed */
    for (int k = slot_ptr[slot]; k < slot_ptr[slot + 1]; k++) {
        const int4 rec = sp.grec[2 * k]; /* {task, tok0, tok1, page base} (plan_records) */
        const int t = rec.x, b = t / Hkv, kvh = t % Hkv;
        const int len = dl_seq_len(a, b);
        const size_t row0 = (size_t)b * a.num_qo_heads + kvh * G;

        /* Q to bf16 x 2^(BIAS/2) in the permuted logical order: 16 threads per head */
        {
            constexpr int PER = D / 16;
            const int head = tid / 16, sub = tid % 16;
            wg_sync(wg); /* the previous segment's wgmmas and reads of sQ / sRed are done */
#pragma unroll
            for (int i = 0; i < PER; i++) {
                const int L = sub * PER + i, ks = L / 16, pp = L % 16;
                const int d = ((pp % 8) / 2) * (D / 4) + 4 * ks + (pp % 2) + 2 * (pp / 8);
                const float q = head < G ? round_bf16(dl_load_q(a.q, (row0 + head) * D + d, a.q_dtype)) * kMul : 0.0f;
                *(uint16_t *)(sQ + (L / 8) * 128 + head * 16 + (L % 8) * 2) = bf16_bits(q);
            }
            fence_async_smem();
            wg_sync(wg);
        }
        const float sks = a.sm_scale * a.k_scale[kvh];

        float acc[MB][4];
#pragma unroll
        for (int i = 0; i < MB; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
        float m[2] = {-INFINITY, -INFINITY}, dsum[2] = {0.0f, 0.0f};

        const int ntok = rec.z - rec.y, ntile = (ntok + kTile - 1) / kTile; /* tiles from the segment's first token */
        for (int tile = 0; tile < ntile; tile++, j++) {
            const int st = j % S;
            const uint8_t *tk = ring + st * SH::STAGE, *tv = tk + SH::TILE_BYTES;
            const int nvalid = tile_tokens(ntok, tile, len - rec.y);
            mbar_wait(&full[wg * S + st], (j / S) & 1);
            TL_FIRST(sp, j);
            if (DL_STREAM_DIAG && sp.dry == 1) { /* diagnosis: the stage released unread (DL_STREAM_DRY=1) */
                mbar_arrive(&empty[wg * S + st]);
                continue;
            }
            /* V rows past the end to 0, read after the warpgroup barrier that precedes the V reads */
            if (nvalid < kTile) zero_tail_rows<SW, SH::R>(tv, nvalid, sp.swz, threadIdx.x % 128, 128);

            /* S^T = K Q^T: every k-step's A fragment first (wgmma.fence must follow their writes) */
            uint32_t af[KS][4];
#pragma unroll
            for (int q = 0; q < KCH; q++) {
                const uint4 r0 = *(const uint4 *)(tk + koff[0][q]), r1 = *(const uint4 *)(tk + koff[1][q]);
                const uint32_t w0[4] = {r0.x, r0.y, r0.z, r0.w}, w1[4] = {r1.x, r1.y, r1.z, r1.w};
#pragma unroll
                for (int wi = 0; wi < 4; wi++) {
                    POL::x4(w0[wi], af[4 * q + wi][0], af[4 * q + wi][2]);
                    POL::x4(w1[wi], af[4 * q + wi][1], af[4 * q + wi][3]);
                }
            }
            float s[1][4] = {{0.0f, 0.0f, 0.0f, 0.0f}};
            wg_fence();
            {
                const uint64_t dq0 = wg_desc_base(wg_desc(qaddr, 128, 256, 0));
#pragma unroll
                for (int ks = 0; ks < KS; ks++) wg_mma_bf16_rs(s[0], af[ks], wg_desc_add(dq0, ks * 256), ks > 0);
            }
            wg_commit();
            wg_wait<1>(s);

            /* scale as the bf16 model, mask, tile max over the 4 warps */
            float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int tok = 16 * wq + g + 8 * (i >> 1);
                float x = __fmul_rn(s[0][i] * kHalfBias, sks);
                if (tok >= nvalid) x = -INFINITY;
                s[0][i] = x;
                mx[i & 1] = fmaxf(mx[i & 1], x);
            }
            float *red = sRed + (j & 1) * 32;
#pragma unroll
            for (int e = 0; e < 2; e++) {
                float x = mx[e];
                x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 4));
                x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 8));
                x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 16));
                if (g == 0) red[wq * 8 + 2 * c + e] = x;
            }
            wg_sync(wg);
            float f[2];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int h = 2 * c + e;
                const float tm = fmaxf(fmaxf(red[h], red[8 + h]), fmaxf(red[16 + h], red[24 + h]));
                const float mn = fmaxf(m[e], tm);
                f[e] = m[e] == -INFINITY ? 0.0f : expf(m[e] - mn);
                m[e] = mn;
                dsum[e] *= f[e];
            }
#pragma unroll
            for (int i = 0; i < MB; i++) {
                acc[i][0] *= f[0]; acc[i][1] *= f[1];
                acc[i][2] *= f[0]; acc[i][3] *= f[1];
            }
            /* P = bf16(p) x 2^(BIAS/2) into the core-matrix buffer */
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int tok = 16 * wq + g + 8 * (i >> 1), n = 2 * c + (i & 1);
                const float p = expf(s[0][i] - m[i & 1]);
                dsum[i & 1] += p;
                *(uint16_t *)(sP + (tok / 8) * 128 + n * 16 + (tok % 8) * 2) = bf16_bits(round_bf16(p) * kMul);
            }
            fence_async_smem();
            wg_sync(wg);

            /* O^T += V^T P: every A fragment first; token pairs (2c, 2c+1) and (2c+8, 2c+9) of the
             * k-step, dims d0 (row g) and d0 + 1 (row g + 8) */
            uint32_t vf[4][MB][4];
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
#pragma unroll
                for (int mb = 0; mb < MB; mb++) {
                    const int d0 = 64 * mb + 16 * wq + 2 * g;
                    uint32_t h[4];
#pragma unroll
                    for (int r = 0; r < 4; r++) {
                        const int tok = 16 * kk + 2 * c + (r & 1) + 8 * (r >> 1);
                        const uint16_t v = *(const uint16_t *)(tv + tile_off<SW>(tok, d0 / 16, sp.swz) + d0 % 16);
                        h[r] = v;
                    }
                    POL::x4(__byte_perm(h[0], h[1], 0x5140), vf[kk][mb][0], vf[kk][mb][1]);
                    POL::x4(__byte_perm(h[2], h[3], 0x5140), vf[kk][mb][2], vf[kk][mb][3]);
                }
            wg_fence();
            const uint64_t dp0 = wg_desc_base(wg_desc(paddr, 128, 256, 0));
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                const uint64_t db = wg_desc_add(dp0, kk * 256);
#pragma unroll
                for (int mb = 0; mb < MB; mb++) wg_mma_bf16_rs(acc[mb], vf[kk][mb], db, 1);
            }
            wg_commit();
            wg_wait<MB>(acc);
            mbar_arrive(&empty[wg * S + st]);
        }

        if (DL_STREAM_DIAG && sp.dry == 1) continue; /* DL_STREAM_DRY=1: nothing written, no merge */
        /* the segment's result: sums over the 4 warps, o = acc / sum * (v_scale * 2^(BIAS - BIAS/2)) */
        wg_segment_end<D>(a, sp, seg_out, k, t, G, row0, wg, wq, g, c, lane, sRed, acc, m, dsum,
                          [&] { return a.v_scale[kvh] * kHalfBias; });
    }
    TL_END(sp);
}

/* ------------------------------------------------------------ host side */

typedef CUresult (*encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                              const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static int get_encode(encode_fn *fn)
{
    static encode_fn cached = nullptr;
    static std::once_flag once;
    static cudaError_t err = cudaSuccess;
    std::call_once(once, [] {
        cudaDriverEntryPointQueryResult q;
        void *p = nullptr;
        err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
        if (err == cudaSuccess && q == cudaDriverEntryPointSuccess) cached = (encode_fn)p;
    });
    if (!cached)
        return dl_fail("decode_stream.cu: cuTensorMapEncodeTiled not found in the driver (%s)",
                       err == cudaSuccess ? "symbol not found" : cudaGetErrorString(err));
    *fn = cached;
    return 0;
}

/* The launch data a plan carries (dl_gpu_plan.host): the K and V tensor maps, encoded once
 * per case instead of at every launch, and the shared-memory swizzle they use. */
struct stream_maps {
    CUtensorMap k, v;
    int swz;
    int dry;      /* DL_STREAM_DRY */
    int merge_late; /* DL_STREAM_MERGE_LATE (DIAG builds): the merge kernel triggers no early launch */
    int smem_pad;   /* DL_STREAM_SMEM_PAD (DIAG builds): bytes of dynamic shared memory added to each decode CTA */
    int chain_pad;  /* a layer chained with PDL: bytes of shared memory added to each CTA (dl_plan_chain_pad) */
    int pad_all;    /* DL_STREAM_CHAIN_CAP=2: chain_pad on every launch, not only a PDL-chained layer's */
    const char *tl_ctas; /* DL_STREAM_TL_CTAS (with DL_STREAM_DRY=3): the per-CTA rows' path prefix, or NULL */
    CUtensorMap pk, pv; /* DL_STREAM_DRY=4: the copy probe's maps (box: boxheads KV heads x the page's rows) */
    int boxheads, probe_ns, probe_ctas, probe_pages, probe_row; /* row: R, a head's row bytes */
    int probe_smem;   /* the probe's dynamic shared memory a CTA (0: the LDG probe with DL_STREAM_PROBE_LDG_SMEM=0) */
    int probe_threads; /* threads a probe CTA (DL_STREAM_PROBE_THREADS with LDGSTS; else 32) */
    int probe_l2pf;   /* TMA: copies prefetched into L2 ahead of the ring (DL_STREAM_PROBE_L2PF) */
    int probe_walk;   /* DL_STREAM_PROBE_WALK: 0 head groups outermost (a run once per group), 1 innermost */
    int probe_ldg_sts; /* DL_STREAM_PROBE_LDG_STS: 0 off, 1 the LDG probe's batches pass through shared memory, 2 the
                        * same shared memory reserved, unused */
    int probe_mode;   /* kProbeTma, or DL_STREAM_PROBE_LDGSTS=1: 16-byte cp.async copies, DL_STREAM_PROBE_LDG=1:
                       * 16-byte loads into registers (kProbeLdgSts with DL_STREAM_PROBE_LDG_STS=1: then stored) */
    uint32_t probe_box;
    size_t srec, grec; /* where the slot and segment records begin in the plan's device buffer (int32 units) */
    int merge_split;   /* DL_STREAM_MERGE_SPLIT as resolved for this plan: CTAs per (task, query head) (attempt #35) */
    int merge_form;    /* DL_STREAM_MERGE_FORM (attempt #65): the merge kernel's form, 0 two passes, 1 one pass */
    int pdl;           /* DL_STREAM_PDL (attempt #60): 1 = a chained layer (dl_gpu_args.pdl) triggers and uses PDL */
    int first_pages;   /* DL_STREAM_FIRST_PAGES (attempt #34; page sizes >= 16): the slots' first page ids at sfp */
    size_t sfp;
    int cluster;       /* attempt #61: CTAs a thread-block cluster (DL_STREAM_MERGE=cluster), else 0 */
    int cluster_said;  /* the clusters' residency reported once (launch_planned) */
    int claim, claim_min, claim_own; /* attempt #71 (DL_STREAM_CLAIM, _MIN, _OWN): claim 0 = no claims */
    size_t cword, cinfo;  /* with claims: the claim words (u64 a partial row) and {first tile, tiles} a partial row */
};

/* The 4-D byte view (row bytes, slot, head, page) of a cache, a box of
 * (SW bytes, min(page_size, 64) slots, 1, 1), swizzle by mode (the copy probe: box_heads heads, box_rows slots). */
static int make_map(CUtensorMap *map, const void *base, const dl_gpu_args *a, int R, int SW, int swz,
                    CUtensorMapL2promotion promo, int box_heads = 1, int box_rows = 0)
{
    encode_fn enc = nullptr;
    DL_TRY(get_encode(&enc));
    const uint64_t ps = (uint64_t)a->page_size, H = (uint64_t)a->num_kv_heads;
    cuuint64_t dim[4] = {(cuuint64_t)R, ps, H, (cuuint64_t)a->num_pages};
    cuuint64_t stride[3]; /* bytes, dims 1..3 */
    if (a->kv_layout == DL_NHD) {
        stride[0] = H * R;
        stride[1] = R;
        stride[2] = ps * H * R;
    } else {
        stride[0] = R;
        stride[1] = ps * R;
        stride[2] = H * ps * R;
    }
    cuuint32_t box[4] = {(cuuint32_t)SW, (cuuint32_t)(box_rows ? box_rows : ps < kTile ? ps : kTile),
                         (cuuint32_t)box_heads, 1};
    cuuint32_t estr[4] = {1, 1, 1, 1};
    CUtensorMapSwizzle sw = swz == 2 ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : (swz == 1 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_NONE);
    CUresult r = enc(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, const_cast<void *>(base), dim, stride, box, estr,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, sw, promo,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return dl_fail("decode_stream.cu: cuTensorMapEncodeTiled failed (error %d) for rows of %d bytes, page_size %d, "
                       "%lld pages",
                       (int)r, R, a->page_size, (long long)a->num_pages);
    return 0;
}

#if DL_STREAM_DIAG
static int tl_cmp(const void *x, const void *y)
{
    const unsigned long long a = *(const unsigned long long *)x, b = *(const unsigned long long *)y;
    return a < b ? -1 : a > b;
}
/* DL_STREAM_DRY=3: after each of the first 12 launches of the process, one line on stderr: the
 * launch's CTAs on the %globaltimer clock, in us from the first CTA's entry: the last entry, the
 * first tile held (earliest, median, last), the exits (10th, 50th, 90th percentile, last), the merge
 * kernel's first entry and last exit, the mean CTA life over the span, the clock's step, and the medians of
 * the start's milestones (g_tl_mark: record, page id, first copy issued, Q; '-' where no CTA reached one).
 * With DL_STREAM_TL_CTAS=PREFIX, also PREFIX.<launch>.tsv: one row per CTA (cta, sm, entry, first tile,
 * exit, in us from the first entry, first tile -1 if it held none; the plan's segments and tiles in its slots;
 * the four milestones, -1 where not reached), written whole then renamed, so that a slow CTA can be traced to its
 * SM or its work across launches. */
static double tl_us(unsigned long long x, unsigned long long t0) { return x == ~0ull ? -1.0 : (double)(x - t0) * 1e-3; }
/* probe_pages > 0: the copy probe's timeline (DL_STREAM_DRY=7): no plan; a CTA's "tiles" are its copies (a page's K
 * and V boxes, once per head group: probe_groups), its segments 0 */
static int tl_dump(const char *prefix, int launch, const unsigned long long *h, const unsigned long long *mk, int n,
                   unsigned long long t0, const dl_gpu_plan *pl, int probe_pages, int probe_groups)
{
    /* the plan (gpu/dl_plan.h: slot_ptr[num_slots + 1] first) through the segments' records (plan_records: per
     * segment {task, tok0, tok1, page base}, ...) */
    const size_t grec = probe_pages > 0 ? 0 : ((const stream_maps *)pl->host)->grec;
    const size_t nplan = probe_pages > 0 ? 0 : grec + 8 * (size_t)pl->num_segs; /* none: probe */
    unsigned int *sm = (unsigned int *)malloc(sizeof(unsigned int) * (size_t)n);
    int32_t *plan = (int32_t *)malloc(sizeof(int32_t) * nplan);
    if (!sm || (nplan && !plan)) {
        free(sm), free(plan);
        return dl_fail("timeline: out of host memory");
    }
    cudaError_t e = cudaMemcpyFromSymbol(sm, g_tl_sm, sizeof(unsigned int) * (size_t)n);
    if (e == cudaSuccess && nplan) e = cudaMemcpy(plan, pl->dev, sizeof(int32_t) * nplan, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        free(sm), free(plan);
        return dl_fail("timeline: copy back of the SM ids or the plan failed: %s", cudaGetErrorString(e));
    }
    const int32_t *slot_ptr = plan, *rec = nplan ? plan + grec : NULL;
    char path[kTlPrefixMax + 32], part[kTlPrefixMax + 40]; /* make_plan checked the prefix's length */
    snprintf(path, sizeof path, "%s.%d.tsv", prefix, launch);
    snprintf(part, sizeof part, "%s.part", path);
    FILE *f = fopen(part, "w");
    if (!f) {
        free(sm), free(plan);
        return dl_fail("DL_STREAM_TL_CTAS: cannot write %s: %s", part, strerror(errno));
    }
    fprintf(f, "cta\tsm\tentry_us\tfirst_tile_us\texit_us\tsegments\ttiles\trecord_us\tpage_id_us\tissue_us\tq_us\n");
    for (int i = 0; i < n; i++) {
        const unsigned long long fi = h[3 * i + 1];
        int segs = 0, tiles = 0; /* the CTA's static slots (a pool's claims are not counted) */
        if (probe_pages > 0) { /* stream_copy_probe's runs (its grid, per_sm x SMs x waves <= 16, is below kTlMax: n is it) */
            const int per = (probe_pages + n - 1) / n, j0 = i * per, j1 = probe_pages < j0 + per ? probe_pages : j0 + per;
            tiles = j1 > j0 ? (j1 - j0) * probe_groups : 0;
        }
        for (int w = 0; w < pl->warps && probe_pages == 0; w++) {
            const int slot = i * pl->warps + w;
            if (slot >= pl->num_static) break;
            for (int k = slot_ptr[slot]; k < slot_ptr[slot + 1]; k++) /* 64-token tiles from each segment's start */
                segs++, tiles += (rec[8 * k + 2] - rec[8 * k + 1] + kTile - 1) / kTile;
        }
        const unsigned long long *m = mk + kTlMarks * i;
        fprintf(f, "%d\t%u\t%.3f\t%.3f\t%.3f\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\n", i, sm[i], tl_us(h[3 * i], t0),
                tl_us(fi, t0), tl_us(h[3 * i + 2], t0), segs, tiles, tl_us(m[kTlRec], t0), tl_us(m[kTlPage], t0),
                tl_us(m[kTlIssue], t0), tl_us(m[kTlQ], t0));
    }
    free(sm), free(plan);
    if (fclose(f) != 0 || rename(part, path) != 0) {
        remove(part);
        return dl_fail("DL_STREAM_TL_CTAS: cannot write %s: %s", path, strerror(errno));
    }
    return 0;
}

/* after a launch of the plan's kernel (DL_STREAM_DRY=3: ctas = the plan's, probe_pages 0) or of the copy probe
 * (DL_STREAM_DRY=7: its grid, pages and head groups) */
static int tl_report(const dl_gpu_plan *pl, cudaStream_t stream, int ctas, int probe_pages, int probe_groups)
{
    const bool merged = pl->merge_kernel && probe_pages == 0;
    static int launches = 0;
    if (++launches > 12) return 0;
    const int n = ctas < kTlMax ? ctas : kTlMax;
    /* h: 3 stamps per CTA, the merge kernel's 2, then the milestones (kTlMarks per CTA) */
    unsigned long long *h = (unsigned long long *)malloc(sizeof(unsigned long long) * ((3 + kTlMarks) * (size_t)n + 2));
    if (!h) return dl_fail("timeline: out of host memory");
    unsigned long long *mk = h + 3 * (size_t)n + 2;
    DL_CUDA_CHECK(cudaStreamSynchronize(stream));
    cudaError_t e = cudaMemcpyFromSymbol(h, g_tl, sizeof(unsigned long long) * 3 * (size_t)n);
    if (e == cudaSuccess) e = cudaMemcpyFromSymbol(h + 3 * n, g_tl_merge, 2 * sizeof(unsigned long long));
    if (e == cudaSuccess) e = cudaMemcpyFromSymbol(mk, g_tl_mark, sizeof(unsigned long long) * kTlMarks * (size_t)n);
    if (e != cudaSuccess) {
        free(h);
        return dl_fail("timeline: copy back failed: %s", cudaGetErrorString(e));
    }
    unsigned long long *beg = (unsigned long long *)malloc(sizeof(unsigned long long) * 4 * (size_t)n);
    if (!beg) {
        free(h);
        return dl_fail("timeline: out of host memory");
    }
    unsigned long long *first = beg + n, *end = first + n, *mark = end + n, t0 = ~0ull, step = ~0ull;
    double life = 0.0;
    for (int i = 0; i < n; i++) {
        beg[i] = h[3 * i], first[i] = h[3 * i + 1], end[i] = h[3 * i + 2];
        if (beg[i] < t0) t0 = beg[i];
        life += (double)(end[i] - beg[i]);
    }
    const char *dump = ((const stream_maps *)pl->host)->tl_ctas;
    if (dump && tl_dump(dump, launches, h, mk, n, t0, pl, probe_pages, probe_groups)) {
        free(beg);
        free(h);
        return 1;
    }
    qsort(beg, (size_t)n, sizeof *beg, tl_cmp);
    qsort(first, (size_t)n, sizeof *first, tl_cmp); /* a CTA with no tile keeps ~0: sorted last */
    qsort(end, (size_t)n, sizeof *end, tl_cmp);
    for (int i = 1; i < n; i++)
        if (end[i] > end[i - 1] && end[i] - end[i - 1] < step) step = end[i] - end[i - 1];
    int nf = n;
    while (nf > 0 && first[nf - 1] == ~0ull) nf--;
#define TL_US(x) ((double)((x) - t0) * 1e-3)
    const double span = TL_US(end[n - 1]);
    fprintf(stderr,
            "timeline #%d: %d CTAs%s; us from the first entry: last entry %.2f | first tile %.2f / %.2f / %.2f | "
            "exits p10 %.2f p50 %.2f p90 %.2f last %.2f",
            launches, ctas, ctas > n ? " (the first 8192 timed)" : "", TL_US(beg[n - 1]),
            nf ? TL_US(first[0]) : -1.0, nf ? TL_US(first[nf / 2]) : -1.0, nf ? TL_US(first[nf - 1]) : -1.0,
            TL_US(end[n / 10]), TL_US(end[n / 2]), TL_US(end[(9 * n) / 10]), span);
    if (merged) fprintf(stderr, " | merge %.2f - %.2f", TL_US(h[3 * n]), TL_US(h[3 * n + 1]));
    fprintf(stderr, " | mean life / span %.3f | clock step %.3f us", span > 0 ? life * 1e-3 / n / span : 0.0,
            step == ~0ull ? 0.0 : (double)step * 1e-3);
    static const char *const mark_name[kTlMarks] = {"record", "page id", "issue", "q"};
    fprintf(stderr, " | start p50:");
    for (int w = 0; w < kTlMarks; w++) { /* the median over the CTAs that reached it */
        int nm = 0;
        for (int i = 0; i < n; i++)
            if (mk[kTlMarks * i + w] != ~0ull) mark[nm++] = mk[kTlMarks * i + w];
        qsort(mark, (size_t)nm, sizeof *mark, tl_cmp);
        if (nm) fprintf(stderr, " %s %.2f", mark_name[w], TL_US(mark[nm / 2]));
        else fprintf(stderr, " %s -", mark_name[w]);
    }
    fputc('\n', stderr);
#undef TL_US
    free(beg);
    free(h);
    return 0;
}
#endif

/* The launch of a planned kernel KERN of shape SH (stream_shape or wg_shape): the plan's grid,
 * its tensor maps and schedule; the plan must be for SH::W consumers per CTA. PDL: KERN waits as a chained layer
 * must (the warp-consumer kernels, #60), so a->pdl 2 launches it with programmatic dependent launch. */
template <auto KERN, class SH, bool PDL = false, bool CL = false> static int launch_planned(const dl_gpu_args *a)
{
    DL_TRY(dl_smem_limit<KERN>(SH::SMEM));
    const dl_gpu_plan *pl = (const dl_gpu_plan *)a->plan;
    if (!pl || pl->warps != SH::W)
        return dl_fail("decode_stream.cu: no plan for this launch (or a plan for %d consumers, kernel has %d): call "
                       "the variant's plan function first", pl ? pl->warps : 0, SH::W);
    const stream_maps *m = (const stream_maps *)pl->host;
    if ((m->cluster > 0) != CL) /* attempt #61: a clusters' plan runs the CL kernels alone, and they no other plan */
        return dl_fail("decode_stream.cu: a plan %s clusters for a kernel %s them: plan and launch disagree",
                       m->cluster ? "with" : "without", CL ? "with" : "without");
    const int32_t *dev = (const int32_t *)pl->dev;
    stream_params sp = {dev, pl->num_slots, pl->num_segs, pl->num_tasks, pl->num_static,
                        (const int4 *)(dev + m->srec), (const int4 *)(dev + m->grec),
                        m->first_pages ? (const int4 *)(dev + m->sfp) : nullptr, m->swz, m->dry};
    dl_gpu_args ak = *a; /* pdl: 0 unless a chained layer's (then 2 where this launch uses programmatic dependent
                          * launch: a layer after the first) */
    ak.pdl = PDL && m->pdl ? a->pdl : 0;
#if DL_STREAM_CLAIM
    if (m->claim) { /* #71: a layer's claims are reset by its merge, which a chained layer's producers do not wait for */
        if (a->pdl)
            return dl_fail("DL_STREAM_CLAIM=%d with run --chain: a chained layer's producers claim before the previous "
                           "layer's merge has reset the claims (unset DL_STREAM_CLAIM)", m->claim);
        sp.cword = (unsigned long long *)(dev + m->cword);
        sp.cinfo = (const int2 *)(dev + m->cinfo);
        sp.cchunk = m->claim, sp.cmin = m->claim_min, sp.cown = m->claim_own;
    }
#endif
#if DL_STREAM_DIAG
    if (m->dry == 3) { /* the merge kernel's stamps: min and max from here */
        const unsigned long long init[2] = {~0ull, 0ull};
        DL_CUDA_CHECK(cudaMemcpyToSymbolAsync(g_tl_merge, init, sizeof init, 0, cudaMemcpyHostToDevice,
                                              (cudaStream_t)a->stream));
        DL_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)a->stream)); /* init lives on the stack */
    }
    static int merge_dry = 0; /* g_merge_dry as last set (0 at load) */
    if ((m->dry == 6) != merge_dry) {
        const int v = m->dry == 6;
        DL_CUDA_CHECK(cudaMemcpyToSymbol(g_merge_dry, &v, sizeof v));
        merge_dry = v;
    }
    static int merge_late = 0; /* g_merge_late as last set (0 at load) */
    if (m->merge_late != merge_late) {
        DL_CUDA_CHECK(cudaMemcpyToSymbol(g_merge_late, &m->merge_late, sizeof m->merge_late));
        merge_late = m->merge_late;
    }
    if (m->dry == 4 || m->dry == 7) { /* the copy probe instead of the decode kernel (7: with its timeline) */
        const int smem = m->probe_smem; /* its attribute set by make_plan */
        (m->probe_mode == kProbeLdg      ? stream_copy_probe<kProbeLdg>
         : m->probe_mode == kProbeLdgSts ? stream_copy_probe<kProbeLdgSts>
         : m->probe_mode == kProbeLdgsts ? stream_copy_probe<kProbeLdgsts>
                                         : stream_copy_probe<kProbeTma>)<<<m->probe_ctas, m->probe_threads, smem,
                                                                           (cudaStream_t)a->stream>>>(
            a->kv_indices, m->probe_pages, a->num_kv_heads, m->boxheads, m->probe_ns, m->probe_box, m->pk, m->pv,
            m->dry == 7, (const uint8_t *)a->k_cache, (const uint8_t *)a->v_cache, a->kv_layout == DL_NHD,
            a->page_size, m->probe_row, m->probe_l2pf, m->probe_walk);
        DL_CUDA_CHECK_LAUNCH();
        if (m->dry == 7)
            DL_TRY(tl_report(pl, (cudaStream_t)a->stream, m->probe_ctas, m->probe_pages,
                             a->num_kv_heads / m->boxheads));
        return 0;
    }
#endif
    if constexpr (CL) { /* attempt #61: task t's CTAs one thread-block cluster (cluster_merge) */
        if (!m->cluster_said) { /* once a plan: sizes over 8 allowed; whether every cluster is resident at once */
            if (m->cluster > 8)
                DL_CUDA_CHECK(cudaFuncSetAttribute(KERN, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
            cudaLaunchConfig_t cfg = {};
            cudaLaunchAttribute at;
            at.id = cudaLaunchAttributeClusterDimension;
            at.val.clusterDim.x = (unsigned)m->cluster, at.val.clusterDim.y = at.val.clusterDim.z = 1;
            cfg.gridDim = dim3((unsigned)pl->ctas), cfg.blockDim = dim3(SH::THREADS);
            cfg.dynamicSmemBytes = SH::SMEM, cfg.attrs = &at, cfg.numAttrs = 1;
            int fit = 0;
            DL_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&fit, KERN, &cfg));
            if (fit < pl->ctas / m->cluster)
                fprintf(stderr, "note: DL_STREAM_MERGE=cluster: %d clusters of %d CTAs, %d resident at once (the rest "
                                "wait for a cluster to end)\n", pl->ctas / m->cluster, m->cluster, fit);
            ((stream_maps *)m)->cluster_said = 1;
        }
        DL_CUDA_CHECK(dl_launch_ex(KERN, dim3((unsigned)pl->ctas), dim3(SH::THREADS), SH::SMEM, (cudaStream_t)a->stream,
                                   ak.pdl == 2, (unsigned)m->cluster, ak, sp, m->k, m->v));
        DL_CUDA_CHECK_LAUNCH();
#if DL_STREAM_DIAG
        if (m->dry == 3) DL_TRY(tl_report(pl, (cudaStream_t)a->stream, pl->ctas, 0, 0));
#endif
        return 0;
    }
    /* the pads: DL_STREAM_SMEM_PAD (DIAG builds, else 0) and, on a layer chained with PDL (every launch with
     * DL_STREAM_CHAIN_CAP=2), the plan's cap */
    const int smem = SH::SMEM + m->smem_pad + (ak.pdl || m->pad_all ? m->chain_pad : 0);
    if (smem != SH::SMEM) DL_TRY(dl_smem_limit<KERN>(smem));
    if (ak.pdl == 2) { /* the layer chain (#60): may start before the previous kernel in the stream completes */
        DL_CUDA_CHECK(dl_launch_ex(KERN, dim3((unsigned)pl->ctas), dim3(SH::THREADS), smem,
                                   (cudaStream_t)a->stream, true, 0u, ak, sp, m->k, m->v));
    } else {
        KERN<<<pl->ctas, SH::THREADS, smem, (cudaStream_t)a->stream>>>(ak, sp, m->k, m->v);
    }
    DL_CUDA_CHECK_LAUNCH();
    if (pl->merge_kernel) { /* attempt #15: the split tasks' merge as a second kernel (waits in griddepcontrol.wait) */
        const int C = m->merge_split;
        const bool one = m->merge_form == 1; /* attempt #65 (DL_STREAM_MERGE_FORM) */
        DL_CUDA_CHECK(dl_launch_ex(C == 4   ? (one ? stream_merge_kernel<4, true> : stream_merge_kernel<4, false>)
                                   : C == 2 ? (one ? stream_merge_kernel<2, true> : stream_merge_kernel<2, false>)
                                            : (one ? stream_merge_kernel<1, true> : stream_merge_kernel<1, false>),
                                   dim3((unsigned)(pl->num_tasks * (a->num_qo_heads / a->num_kv_heads) * C)),
                                   dim3(kMergeThreads), 0, (cudaStream_t)a->stream, true, 0u, ak, (int32_t *)pl->dev,
                                   pl->num_slots, pl->num_segs, pl->num_tasks
#if DL_STREAM_CLAIM
                                   , sp.cword
#endif
                                   ));
    }
#if DL_STREAM_DIAG
    if (m->dry == 3) DL_TRY(tl_report(pl, (cudaStream_t)a->stream, pl->ctas, 0, 0));
#endif
    return 0;
}
template <int D, dl_dtype KV, int DQ, int NT> static int launch_stream(const dl_gpu_args *a)
{
    const dl_gpu_plan *pl = (const dl_gpu_plan *)a->plan;
    if (pl && pl->page_stage) { /* the plan function chose the page stage (stream_make_plan): its heads a stage */
        if constexpr (kPageHeadsFit<D, KV, DQ, NT, 8>)
            if (pl->page_stage == 8)
                return launch_planned<stream_decode_kernel<D, KV, DQ, NT, 8>, page_shape<8>, true>(a);
        if constexpr (kPageHeadsFit<D, KV, DQ, NT, 2>)
            if (pl->page_stage == 2)
                return launch_planned<stream_decode_kernel<D, KV, DQ, NT, 2>, page_shape<2>, true>(a);
        return dl_fail("decode_stream.cu: a page-stage plan (%d heads a stage) for a case or policy it does not take "
                       "(D=%d, group %d): plan and launch disagree", pl->page_stage, D,
                       a->num_qo_heads / a->num_kv_heads);
    }
#if DL_STREAM_CLUSTER
    if (pl && pl->cluster) { /* attempt #61: the clusters' plan (make_plan, DL_STREAM_MERGE=cluster) */
        if (!pl->deep_rings)
            return launch_planned<stream_decode_kernel<D, KV, DQ, NT, false, false, true>,
                                  stream_shape<D, dl_kv_size<KV>::value, DQ, NT>, true, true>(a);
        if constexpr (kDeepFits<D, KV>)
            return launch_planned<stream_decode_kernel<D, KV, DQ, NT, false, true, true>,
                                  stream_shape<D, dl_kv_size<KV>::value, DQ, NT, true>, true, true>(a);
        else
            return dl_fail("decode_stream.cu: a deep-ring plan for a case without deep rings: plan and launch disagree");
    }
#endif
    if (pl && pl->deep_rings) { /* the plan function chose the deep rings (stream_make_plan, attempt #57) */
        if constexpr (kDeepFits<D, KV>)
            return launch_planned<stream_decode_kernel<D, KV, DQ, NT, false, true>,
                                  stream_shape<D, dl_kv_size<KV>::value, DQ, NT, true>, true>(a);
        else
            return dl_fail("decode_stream.cu: a deep-ring plan for a case without deep rings (D=%d, %d-bit cache): "
                           "plan and launch disagree", D, 8 * dl_kv_size<KV>::value);
    }
    return launch_planned<stream_decode_kernel<D, KV, DQ, NT>, stream_shape<D, dl_kv_size<KV>::value, DQ, NT>, true>(a);
}
template <int D, dl_dtype KV, int PROMOTE> static int launch_wgmma(const dl_gpu_args *a)
{
    return launch_planned<wgmma_decode_kernel<D, KV, PROMOTE>, wg_shape<D>>(a);
}
template <int D, dl_dtype KV> static int launch_wgmma_bf16(const dl_gpu_args *a)
{
    return launch_planned<wgmma_bf16_decode_kernel<D, KV>, wg_shape<D, 2>>(a);
}

/* The shape of the instantiation for (D, kv element size), at run time. */
struct shape_rt {
    int W, SMEM, R, SW;
    int occ;       /* resident CTAs per SM by the kernel's registers and shared memory; 0: by shared memory alone */
    int min_tiles; /* the plan's fewest tiles per consumer before it uses fewer consumers (DL_STREAM_MIN_TILES) */
    bool pool;     /* the kernel claims pool slots (one producer per consumer: stream_produce_one) */
    int page;      /* the page stage's heads a stage (page_shape<page>: 8 or 2), 0: none; the heads order, every CTA's
                    * warps on the same tiles */
    int page_min_run; /* the page stage: fewest tiles a CTA's run may have (fewer: make_plan returns 1) */
    bool page_run_ticket; /* page_min_run binds only where the plan merges by ticket (the two-head stage's rule) */
    bool page_ticket_only; /* the page stage only where its plan merges by ticket (make_plan returns 1 where it would
                            * need the merge kernel: the hw policy's rule for 8 heads a stage, attempt #62) */
    bool deep;        /* the deep rings (stream_shape's DEEP, attempt #57) */
    int deep_max_run; /* the deep rings: most tiles a slot may have on average (more: make_plan returns 1); 0: any */
    int ctas_cap;     /* stream_shape's CTAS_CAP: the plan's CTAs an SM at most unless DL_STREAM_CTAS_PER_SM asks */
    int promo;             /* the TMA maps' L2 promotion in bytes, the default of DL_STREAM_L2PROMO (attempts #64, #66) */
    bool chains;           /* launched with PDL in a layer chain (the warp consumers: launch_planned's PDL) */
};
/* The plan's default fewest tiles per consumer: 4 for warp consumers; 16 for the warpgroup (wgmma)
 * consumers, whose per-segment set-up and merge cost more: 16 made fp8-none-wgmma 52.0 us instead of
 * 66.5 and bf16-fast-wgmma 64.9 instead of 77.9 at llama3-8B B64 L1024 e4m3 and changed no other
 * configuration by more than 0.6 %, while the warp consumers lost with it (bf16-hw-stream 67.3 vs
 * 64.2 us; H200, 2026-12-02, results/h200_2026-12-02b/memfloor_all). */
constexpr int kWarpMinTiles = 4, kWgMinTiles = 16;
template <class SH> static shape_rt shape_rt_of(int min_tiles = kWarpMinTiles, bool pool = false, int page = 0)
{
    return {SH::W, SH::SMEM, SH::R, SH::SW, 0, min_tiles, pool, page, 0, false, false, false, 0, 0, 128, false};
}
template <int D, int ES, int DQ, int NT, bool DEEP = false> static shape_rt stream_shape_rt()
{
    using SH = stream_shape<D, ES, DQ, NT, DEEP>;
    shape_rt r = shape_rt_of<SH>(kWarpMinTiles, SH::NP == SH::W); /* a producer per consumer: the pool */
    r.deep = DEEP;
    r.ctas_cap = SH::CTAS_CAP;
    r.promo = SH::R >= 256 && (DEEP || ES == 1) ? 256 : 128; /* attempts #64, #66, #68 (make_plan's DL_STREAM_L2PROMO) */
    r.chains = true;
    return r;
}

/* A tuning knob from the environment (gpu/NOTES.md): dl_env_int (ref/dl_common.h) without a unit. */
static int knob(const char *name, int lo, int hi, int def, int *out) { return dl_env_int(name, lo, hi, def, nullptr, out); }

template <int DQ> static int dispatch_stream(const dl_gpu_args *a)
{
    const char *who = DQ == DL_DQ_CAST   ? "decode_stream.cu, cast"
                      : DQ == DL_DQ_FAST ? "decode_stream.cu, fast"
                                         : "decode_stream.cu, hw";
    return dl_dispatch<DL_KV_ALL>(a, DQ == DL_DQ_CAST, who, [&](auto s) {
        return dl_dispatch_group_n8(a, [&](auto nt) {
            return launch_stream<decltype(s)::D, decltype(s)::KV, DQ, decltype(nt)::value>(a);
        });
    });
}

} // namespace

/* The plan's buffer followed by the producers' records (issue 10, attempt #20), 16-byte aligned: per
 * segment k two int4 {task, tok0, tok1, page base (kv_indptr[b])}, {length of b, k, k + 1, seg_out[k]}, its tokens
 * [tok0, tok1): the plan's units [seg_t0, seg_t1) in tokens (p->tile a unit: attempt #44), tok1 at most the length;
 * per slot s its first segment's record with k0, k1 = the slot's segments [slot_ptr[s], slot_ptr[s + 1])
 * in the second int4 (an empty slot: zeros, k0 = k1). A producer's first copy then waits on the slot's
 * record and the page ids, not on slot_ptr, the segment, kv_indptr and the length, then the page ids.
 * With maps->first_pages (attempt #34, page sizes >= 16), then per slot one int4: the ids of the pages that hold
 * tokens tok0 + 16 q (q < 4) of its first segment's first tile, 0 past the segment's end (sp.sfp).
 * Sets maps->srec, maps->grec, maps->sfp; returns the buffer (malloc'd, *len int32s) or NULL after dl_fail(). */
static int32_t *plan_records(const dl_plan *p, const dl_gpu_args *a, const int32_t *h_seq_len, stream_maps *maps,
                             size_t *len)
{
    const int B = a->batch_size, Hkv = a->num_kv_heads;
    const size_t srec = (p->buf_len + 3) & ~(size_t)3, grec = srec + 8 * (size_t)p->num_slots;
    const size_t sfp = grec + 8 * (size_t)p->num_segs;
    /* #71: with claims, per partial row a claim word (two int32, zero: reset by each launch's merge) and its
     * segment's {first tile, tiles} */
    const size_t cword = (sfp + (maps->first_pages ? 4 * (size_t)p->num_slots : 0) + 3) & ~(size_t)3;
    const size_t cinfo = cword + (maps->claim ? 2 * (size_t)p->num_partials : 0);
    *len = cinfo + (maps->claim ? 2 * (size_t)p->num_partials : 0);
    int32_t *all = (int32_t *)calloc(*len, sizeof(int32_t)), *indptr = (int32_t *)malloc((B + 1) * sizeof(int32_t));
    if (!all || !indptr) {
        free(all);
        free(indptr);
        dl_fail("dl_stream_make_plan: out of memory for a plan of %zu int32s", *len);
        return NULL;
    }
    const cudaError_t e = cudaMemcpy(indptr, a->kv_indptr, (B + 1) * sizeof(int32_t), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        free(all);
        free(indptr);
        dl_fail("dl_stream_make_plan: reading kv_indptr back (%d entries) failed: %s", B + 1, cudaGetErrorString(e));
        return NULL;
    }
    for (int b = 0; b < B; b++) /* the records' lengths come from the host: they must match the page table */
        if (h_seq_len[b] < 1 || (h_seq_len[b] + a->page_size - 1) / a->page_size != indptr[b + 1] - indptr[b]) {
            dl_fail("dl_stream_make_plan: request %d: length %d tokens does not fit its %d pages of %d (kv_indptr)", b,
                    h_seq_len[b], indptr[b + 1] - indptr[b], a->page_size);
            free(all);
            free(indptr);
            return NULL;
        }
    memcpy(all, p->buf, p->buf_len * sizeof(int32_t));
    const int32_t *slot_ptr = p->buf, *seg_task = slot_ptr + p->num_slots + 1;
    const int32_t *seg_t0 = seg_task + p->num_segs, *seg_t1 = seg_t0 + p->num_segs, *seg_out = seg_t1 + p->num_segs;
    for (int k = 0; k < p->num_segs; k++) {
        const int t = seg_task[k], b = t / Hkv;
        int32_t *r = all + grec + 8 * (size_t)k;
        const int64_t end = (int64_t)seg_t1[k] * p->tile;
        r[0] = t, r[1] = seg_t0[k] * p->tile, r[2] = end < h_seq_len[b] ? (int32_t)end : h_seq_len[b], r[3] = indptr[b];
        r[4] = h_seq_len[b], r[5] = k, r[6] = k + 1, r[7] = seg_out[k];
        if (maps->claim && seg_out[k] >= 0) { /* in 64-token tiles: claims take the plan's unit to be the tile */
            all[cinfo + 2 * (size_t)seg_out[k]] = r[1] / kTile;
            all[cinfo + 2 * (size_t)seg_out[k] + 1] = (r[2] - r[1] + kTile - 1) / kTile;
        }
    }
    for (int s = 0; s < p->num_slots; s++) {
        const int k0 = slot_ptr[s], k1 = slot_ptr[s + 1];
        int32_t *r = all + srec + 8 * (size_t)s;
        if (k0 < k1) memcpy(r, all + grec + 8 * (size_t)k0, 8 * sizeof(int32_t));
        r[5] = k0, r[6] = k1;
    }
    if (maps->first_pages) {
        int32_t *ids = (int32_t *)malloc((size_t)indptr[B] * sizeof(int32_t));
        const cudaError_t e2 = ids ? cudaMemcpy(ids, a->kv_indices, (size_t)indptr[B] * sizeof(int32_t),
                                                cudaMemcpyDeviceToHost)
                                   : cudaErrorMemoryAllocation;
        if (e2 != cudaSuccess) {
            dl_fail("dl_stream_make_plan: reading the page table back (%d ids) for DL_STREAM_FIRST_PAGES failed: %s",
                    indptr[B], cudaGetErrorString(e2));
            free(ids);
            free(all);
            free(indptr);
            return NULL;
        }
        for (int s = 0; s < p->num_slots; s++) {
            const int k0 = slot_ptr[s];
            if (k0 >= slot_ptr[s + 1]) continue;
            const int32_t *rec = all + grec + 8 * (size_t)k0; /* {task, tok0, tok1, page base} */
            for (int q = 0; q < 4; q++) {
                const int tok = rec[1] + 16 * q;
                all[sfp + 4 * (size_t)s + q] = tok < rec[2] ? ids[rec[3] + tok / a->page_size] : 0;
            }
        }
        free(ids);
    }
    free(indptr);
    maps->srec = srec;
    maps->grec = grec;
    maps->sfp = sfp;
    maps->cword = cword;
    maps->cinfo = cinfo;
    return all;
}

#if DL_STREAM_DIAG
/* DL_STREAM_DRY=4: the copy probe's maps, stages and grid (stream_copy_probe) into m; R = row bytes of a head. */
static int probe_setup(const dl_gpu_args *a, const int32_t *h_seq_len, int R, int sms, CUtensorMapL2promotion promo,
                       stream_maps *m)
{
    DL_TRY(knob("DL_STREAM_BOXHEADS", 1, a->num_kv_heads, a->num_kv_heads, &m->boxheads));
    const int64_t box = (int64_t)R * a->page_size * m->boxheads;
    if (a->num_kv_heads % m->boxheads || R > 256 || R % 16 || a->page_size > 256 || box % 128 ||
        2 * 2 * box > 200 * 1024)
        return dl_fail("DL_STREAM_DRY=4: DL_STREAM_BOXHEADS=%d must divide the %d KV heads, rows of %d bytes must be a "
                       "multiple of 16 and at most 256, page_size %d at most 256, a box a multiple of 128 bytes and "
                       "two stages (K and V boxes) within 200 KB",
                       m->boxheads, a->num_kv_heads, R, a->page_size);
    m->probe_box = (uint32_t)box;
    m->probe_row = R;
    /* DL_STREAM_PROBE_RING=KB: the stages' bytes a CTA (unset: 64 KB, and at least two stages where a stage is more
     * than 32 KB); a smaller ring lets more CTAs share an SM, each with a shorter run (2-head boxes in 16 KB: 12 CTAs
     * an SM on the H200, ~1.3 pages a CTA at B1 L32768), to tell the LDG probe's 16 CTAs an SM from its loads into
     * registers */
    int ring_kb;
    DL_TRY(knob("DL_STREAM_PROBE_RING", 0, 200, 0, &ring_kb));
    if (ring_kb && (int64_t)ring_kb * 1024 < 2 * 2 * box)
        return dl_fail("DL_STREAM_PROBE_RING=%d: two stages of a K and a V box of %lld bytes do not fit %d KB", ring_kb,
                       (long long)box, ring_kb);
    m->probe_ns = (int)((ring_kb ? (int64_t)ring_kb * 1024 : kProbeSmem) / (2 * box));
    if (m->probe_ns > kProbeMaxStages) m->probe_ns = kProbeMaxStages;
    if (m->probe_ns < 2) m->probe_ns = 2; /* the default ring with stages over 32 KB */
    int smem = m->probe_ns * 2 * (int)box;
    int per_sm = 0;
    int ldgsts, ldg;
    DL_TRY(knob("DL_STREAM_PROBE_LDGSTS", 0, 1, 0, &ldgsts));
    DL_TRY(knob("DL_STREAM_PROBE_LDG", 0, 1, 0, &ldg));
    if (ldgsts && ldg) return dl_fail("DL_STREAM_PROBE_LDGSTS=1 and DL_STREAM_PROBE_LDG=1: the probe copies one way, set one");
    m->probe_mode = ldg ? kProbeLdg : ldgsts ? kProbeLdgsts : kProbeTma;
    /* DL_STREAM_PROBE_LDG_SMEM=0: the LDG probe reserves no shared memory, so that registers alone bound its CTAs an
     * SM (16 by its launch bounds: ~1 page a CTA at B1 L32768, many loads in flight an SM, as the page-order read) */
    int ldg_smem;
    DL_TRY(knob("DL_STREAM_PROBE_LDG_SMEM", 0, 1, 1, &ldg_smem));
    if (!ldg_smem && !ldg) return dl_fail("DL_STREAM_PROBE_LDG_SMEM=0 is the LDG probe's (set DL_STREAM_PROBE_LDG=1)");
    if (!ldg_smem) smem = 0;
    /* DL_STREAM_PROBE_LDG_STS=1 (LDG): each thread stores its batch of 16-byte pieces into the CTA's 16 KB of shared
     * memory (instead of the ring), and the fold reads them back (the next lane's): bytes that land in shared memory
     * through registers, against TMA's and cp.async's copies; 2 = the same 16 KB reserved and unused (as many CTAs an
     * SM, no stores), its control */
    DL_TRY(knob("DL_STREAM_PROBE_LDG_STS", 0, 2, 0, &m->probe_ldg_sts));
    if (m->probe_ldg_sts && !ldg)
        return dl_fail("DL_STREAM_PROBE_LDG_STS=%d is the LDG probe's (set DL_STREAM_PROBE_LDG=1)", m->probe_ldg_sts);
    if (m->probe_ldg_sts && !ldg_smem)
        return dl_fail("DL_STREAM_PROBE_LDG_STS=%d reserves shared memory: unset DL_STREAM_PROBE_LDG_SMEM=0", m->probe_ldg_sts);
    if (m->probe_ldg_sts) smem = kProbeLdgStage;
    if (m->probe_ldg_sts == 1) m->probe_mode = kProbeLdgSts;
    m->probe_smem = smem;
    /* DL_STREAM_PROBE_THREADS=N (LDGSTS): N threads a CTA share its copies, same stages and walk: whether more threads
     * issuing 16-byte copies an SM, as the LDG probe's 16 CTAs an SM, bring the staged copies to the read */
    DL_TRY(knob("DL_STREAM_PROBE_THREADS", 32, kProbeMaxThreads, 32, &m->probe_threads));
    if (m->probe_threads % 32) return dl_fail("DL_STREAM_PROBE_THREADS: '%d' is not a multiple of 32", m->probe_threads);
    if (m->probe_threads != 32 && !ldgsts)
        return dl_fail("DL_STREAM_PROBE_THREADS=%d is the LDGSTS probe's (set DL_STREAM_PROBE_LDGSTS=1)", m->probe_threads);
    /* DL_STREAM_PROBE_L2PF=P (TMA): thread 0 asks for the CTA's first P copies' boxes into L2 at its start
     * (cp.async.bulk.prefetch.tensor) and for copy n + P's as it issues copy n: whether asking for more pages at once
     * than the ring holds (the LDG probe's 16 CTAs an SM ask for every page at once) brings the staged copies of the
     * small cases to the read. 0: off */
    DL_TRY(knob("DL_STREAM_PROBE_L2PF", 0, 64, 0, &m->probe_l2pf));
    /* DL_STREAM_PROBE_WALK=1: a page's head groups back to back (stream_copy_probe's walk) instead of a run per group */
    DL_TRY(knob("DL_STREAM_PROBE_WALK", 0, 1, 0, &m->probe_walk));
    if (m->probe_l2pf && m->probe_mode != kProbeTma)
        return dl_fail("DL_STREAM_PROBE_L2PF=%d is the TMA probe's (unset DL_STREAM_PROBE_LDG and _LDGSTS)", m->probe_l2pf);
    const char *mode_knob = ldg ? "DL_STREAM_PROBE_LDG=1" : "DL_STREAM_PROBE_LDGSTS=1";
    const int64_t piece = (a->kv_layout == DL_NHD ? (int64_t)m->boxheads : a->page_size) * R / 16; /* 16-byte chunks */
    if (m->probe_mode != kProbeTma && (piece & (piece - 1)))
        return dl_fail("%s: a box's contiguous run in the cache (%s: %s x rows of %d bytes) is %lld chunks of 16 bytes, "
                       "not a power of 2",
                       mode_knob, a->kv_layout == DL_NHD ? "NHD" : "HND",
                       a->kv_layout == DL_NHD ? "DL_STREAM_BOXHEADS heads" : "page_size tokens", R, (long long)piece);
    const void *kern = m->probe_mode == kProbeLdg      ? (const void *)stream_copy_probe<kProbeLdg>
                       : m->probe_mode == kProbeLdgSts ? (const void *)stream_copy_probe<kProbeLdgSts>
                       : m->probe_mode == kProbeLdgsts ? (const void *)stream_copy_probe<kProbeLdgsts>
                                                       : (const void *)stream_copy_probe<kProbeTma>;
    DL_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    DL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, m->probe_threads, smem));
    if (per_sm < 1) return dl_fail("DL_STREAM_DRY=4: a CTA of %d bytes of stages fits no SM", smem);
    /* DL_STREAM_PROBE_WAVES=k: k times the resident CTAs, each with 1/k of the pages, so that the block scheduler
     * hands the later CTAs to whichever SM frees first (the read reference's grid works that way; the decode
     * kernels' plans are one wave) */
    int waves;
    DL_TRY(knob("DL_STREAM_PROBE_WAVES", 1, 16, 1, &waves));
    m->probe_ctas = per_sm * sms * waves;
    int64_t pages = 0;
    for (int b = 0; b < a->batch_size; b++) pages += (h_seq_len[b] + a->page_size - 1) / a->page_size;
    m->probe_pages = (int)pages;
    DL_TRY(make_map(&m->pk, a->k_cache, a, R, R, 0, promo, m->boxheads, a->page_size));
    DL_TRY(make_map(&m->pv, a->v_cache, a, R, R, 0, promo, m->boxheads, a->page_size));
    fprintf(stderr, "DL_STREAM_DRY=4: copy probe (%s, %d threads a CTA), boxes of %d KV heads x %d rows (%u bytes), %d stages per CTA, "
                    "%d CTAs (%d resident x %d waves), %d pages, head groups %s\n",
            m->probe_mode >= kProbeLdg       ? (m->probe_ldg_sts == 1   ? "16-byte loads into registers, then shared memory"
                                               : m->probe_ldg_sts == 2 ? "16-byte loads into registers, 16 KB reserved unused"
                                                                       : "16-byte loads into registers, no staging")
            : m->probe_mode == kProbeLdgsts ? "16-byte cp.async"
                                            : "TMA",
            m->probe_threads, m->boxheads, a->page_size, m->probe_box,
            m->probe_ns, m->probe_ctas, per_sm * sms, waves, m->probe_pages,
            m->probe_walk ? "innermost (a page's boxes back to back)" : "outermost (a run once per group)");
    return 0;
}
#endif

/* The plan of a launch (gpu/plan.c) for consumers of shape sh (W per CTA), and its tensor maps. Returns 0, -1
 * after dl_fail(), or 1 (nothing built, no error) where sh is the page stage's and the plan does not fit it. */
static int make_plan(const dl_gpu_args *a, const int32_t *h_seq_len, const shape_rt sh, dl_gpu_plan *out)
{
    memset(out, 0, sizeof *out);
    int dev = 0, sms = 0;
    DL_CUDA_CHECK(cudaGetDevice(&dev));
    DL_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    /* resident CTAs per SM from the shared-memory footprint, or the occupancy API's count where lower */
    int smem_sm = 0;
    DL_CUDA_CHECK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
    int per_sm = dl_plan_ctas_per_sm(smem_sm, sh.SMEM, sh.occ);
    /* tuning knobs (gpu/NOTES.md): fewer resident CTAs, longer runs per warp, at most about
     * max_segs segments per task (slots are rounded up to whole CTAs: the last warp of a split
     * task merges them alone), the TMA maps' L2 promotion (default 128 B, 256 for the deep rings and the 8-bit
     * caches' rows of 256 bytes: below; with 256 the NHD 128-byte rows of one head pulled their neighbour's too,
     * gpu/NOTES.md) */
    int min_tiles, max_segs, promo_bytes, dry, merge, waves, pool_pct, pool_chunk;
    DL_TRY(knob("DL_STREAM_CTAS_PER_SM", 1, per_sm, sh.ctas_cap > 0 && sh.ctas_cap < per_sm ? sh.ctas_cap : per_sm,
                &per_sm));
    DL_TRY(knob("DL_STREAM_MIN_TILES", 1, 1 << 20, sh.min_tiles, &min_tiles));
    DL_TRY(dl_plan_merge_mode(getenv("DL_STREAM_MERGE"), &merge)); /* who merges a split task: dl_plan.h */
    /* attempt #61: each task's CTAs a thread-block cluster that merges its partials (cluster_merge), the tile rings
     * of a make STREAM_CLUSTER=1 build alone; where no cluster fits (dl_plan_cluster_shape), auto's plan and merge */
    if (merge == DL_MERGE_CLUSTER && !DL_STREAM_CLUSTER)
        return dl_fail("DL_STREAM_MERGE=cluster: this binary has no cluster merge; build one with make STREAM_CLUSTER=1 "
                       "(e.g. make static BUILD=build-a61 STREAM_CLUSTER=1)");
    const bool cluster_env = merge == DL_MERGE_CLUSTER;
    /* the wgmma kernels ignore it (auto), as the pool; page_stage_plan never asks for the page stage with it */
    const bool cluster_asked = cluster_env && sh.pool;
    if (cluster_env) merge = DL_MERGE_AUTO;
    /* the cluster's CTAs (DL_STREAM_CLUSTER_SIZE: 0 = dl_plan_cluster_shape's rule, else 2, 4, 8 or 16 as asked, even
     * where the clusters do not all fit at once) */
    int cluster_size;
    DL_TRY(knob("DL_STREAM_CLUSTER_SIZE", 0, DL_PLAN_MAX_CLUSTER, 0, &cluster_size));
    if (cluster_size & (cluster_size - 1) || cluster_size == 1)
        return dl_fail("DL_STREAM_CLUSTER_SIZE: '%d' is not 0 (the largest of 8, 4, 2 whose clusters all fit at once), "
                       "2, 4, 8 or 16 (CTAs a task with DL_STREAM_MERGE=cluster)", cluster_size);
    if (cluster_size && !cluster_env)
        return dl_fail("DL_STREAM_CLUSTER_SIZE=%d without DL_STREAM_MERGE=cluster (it sizes the clusters of that merge)",
                       cluster_size);
    DL_TRY(knob("DL_STREAM_MAX_SEGS", 1, 1 << 20,
                merge == DL_MERGE_TICKET ? DL_PLAN_MAX_SEGS_TICKET : DL_PLAN_MAX_SEGS_KERNEL, &max_segs));
    DL_TRY(knob("DL_STREAM_WAVES", 0, 1, 1, &waves)); /* default 1 since 2026-12-03d (attempt #16) */
    /* the heads order's cost of a request boundary inside a run, in tiles (attempt #30, dl_plan.h): the CTAs whose
     * run crossed one ended last at the 70B shape. Default kSegCost where the plan merges by ticket; where it
     * needs the merge kernel, the apportioned cut (below) */
    int seg_cost;
    DL_TRY(knob("DL_STREAM_SEG_COST", 0, DL_PLAN_MAX_SEG_COST / (kTile / 16), kSegCost, &seg_cost));
    /* the plan's unit in tokens (attempt #44): 64, its tiles (the default), or 32 or 16, a cut at pages: a segment
     * may then start and end inside a 64-token tile of its sequence, and the kernels take 64-token tiles from its
     * first token (the last one partial, masked as a sequence's last tile is), so that the warps' shares of the
     * bytes differ by a unit, not a tile. A unit starts a copy: where the copies' boxes are longer than the unit
     * asked (the tile rings' boxes are min(page_size, 64) rows; the page stage's 16), the unit is theirs
     * (model_schedule names the unit taken) */
    int unit;
    DL_TRY(knob("DL_STREAM_UNIT", 16, kTile, kTile, &unit));
    if (unit != 16 && unit != 32 && unit != kTile)
        return dl_fail("DL_STREAM_UNIT: '%d' is not 16, 32 or 64 (tokens per unit of the plan's cut; 64: its tiles)",
                       unit);
    const int copy_rows = sh.page ? kPageRows : a->page_size < kTile ? a->page_size : kTile;
    if (unit < copy_rows) unit = copy_rows; /* page sizes 32 and up on the tile rings: the page */
    const int per_tile = kTile / unit; /* units in a tile: min_tiles, seg_cost and the pool chunk are counted in tiles */
    const bool seg_cost_asked = getenv("DL_STREAM_SEG_COST") != nullptr;
    /* each request its own runs where there are at least as many runs as requests (attempt #31, dl_plan.h):
     * 1 always, 0 never; unset: where the plan needs the merge kernel (below) */
    int apportion;
    DL_TRY(knob("DL_STREAM_APPORTION", 0, 1, 0, &apportion));
    /* the merge kernel's CTAs per (task, query head), each with D / C of the dims (attempt #35): 1, 2 or 4; 0 = the
     * fewest of those that give the merge kernel at least one CTA per SM (at most 4) */
    int merge_split;
    DL_TRY(knob("DL_STREAM_MERGE_SPLIT", 0, 4, 0, &merge_split));
    if (merge_split == 3) /* refused now, whatever the plan's merge: dl_plan_merge_split checks the value first */
        return dl_plan_merge_split(merge_split, 0, 1, 0, &merge_split);
    /* the merge kernel's form (attempt #65, stream_merge_kernel): 0 two passes (every lse, then the partials), 1 one
     * pass (each thread's lse beside its partials, the task's bounds loaded before the grid dependency's wait);
     * unset: 1 (H100 2026-12-06: B1 L32768 (C 4) 41.54-41.60 -> 41.28-41.31 us, B4 (C 2) 108.38-108.51 ->
     * 108.03-108.27; at C 1 the form first took 80 registers, 3 CTAs of 256 threads an SM against the two-pass form's
     * 5, and lost at B16 L8192, 109.06-109.12 -> 110.08-110.40, two waves; held to 64 registers since #65c it won
     * there, 109.02-109.30 -> 108.38-108.48, and at B8 L16384, 108.54 -> 108.06-108.16, twenty-fourth session) */
    int merge_form;
    DL_TRY(knob("DL_STREAM_MERGE_FORM", 0, 1, 1, &merge_form));
    /* each slot's first page ids in its own record (attempt #34: the first copies wait on one load, not two; the
     * default since 2026-12-04's fifth session: 0.5-1.4 us off the cases merged by ticket, gpu/NOTES.md #34) */
    int first_pages;
    DL_TRY(knob("DL_STREAM_FIRST_PAGES", 0, 1, 1, &first_pages));
    const bool apportion_asked = getenv("DL_STREAM_APPORTION") != nullptr;
    int apportion_flag = apportion ? DL_PLAN_APPORTION : 0;
    /* the tail's pool (attempt #19, dl_plan_build_pool): the last DL_STREAM_POOL % of the tiles in slots of
     * DL_STREAM_POOL_CHUNK tiles, claimed at run time by the warps that finish first; the warp-consumer
     * kernels alone (the wgmma kernels' one producer serves every consumer: no pool, the knob is ignored) */
    DL_TRY(knob("DL_STREAM_POOL", 0, 50, 0, &pool_pct));
    DL_TRY(knob("DL_STREAM_POOL_CHUNK", 1, 1 << 20, 2, &pool_chunk));
    if (!sh.pool) pool_pct = 0;
    /* rows of 256 bytes or more promote 256 bytes on the deep rings (attempt #64: bf16-cast-stream B64 L1024 bf16
     * 79.52-79.65 -> 78.37-78.50 us on an H200) and the 8-bit caches' tile rings (#66: on an H100 bf16-hw-stream D
     * 256 e4m3 1.4-2.2 % faster at B64 L1024, B64 L4096, B4 L32768 and the 70B shape; an H200 even at D 256 B64 L1024);
     * the 16-bit caches' default rings keep 128 (#68: with 256 an H200 lost 2.9-3.4 %, llama-13B 314.1-314.5 ->
     * 323.5-324.1 us, B128 L4096 bf16 496.1 -> 513.8, where an H100 gained 0.2-1.0 %; gpu/NOTES.md); elsewhere 128
     * (a 256-byte promotion of 128-byte NHD rows also fetched the next head's, #7; the page stage's and the wgmma
     * kernels' maps were not measured) */
    DL_TRY(knob("DL_STREAM_L2PROMO", 0, 256, sh.promo, &promo_bytes));
    /* the plan's walk (dl_plan.h, attempt #24): auto takes the heads order where it leaves no slot empty, for
     * the warp consumers (attempt #24) and, since 2026-12-03i, the wgmma consumers where no task needs the merge
     * kernel (below; fp8-none-wgmma B128 L4096 312.0-313.2 -> 307.3-307.7 us; gpu/NOTES.md #25) */
    int order;
    DL_TRY(dl_plan_order_of(getenv("DL_STREAM_ORDER"), &order));
    if (sh.page) order = DL_ORDER_HEADS; /* the page stage's caller checked that the knob does not ask for tasks */
    if (order == DL_ORDER_HEADS && pool_pct > 0)
        return dl_fail("DL_STREAM_ORDER=heads with DL_STREAM_POOL=%d: the heads order takes no pool (unset one)",
                       pool_pct);
    /* the heads order's group of KV heads read side by side (attempt #67, dl_plan.h DL_PLAN_HEAD_GROUP): 0 (unset)
     * auto: all of them where the slots are a multiple of Hkv, else gcd(slots, Hkv) if 2 or more (bf16-cast-stream
     * on an H100, 2026-12-06: llama-13B 451.5-453.1 -> 445.3-446.1 us, B128 L4096 bf16 712.1-712.5 -> 706.2-706.3,
     * B256 1390.5 -> 1380.9; gpu/NOTES.md #67); Hkv: all of them (the tasks order where they do not fit); g < Hkv
     * lets the slots be a multiple of g. The page stage copies a page for all its heads at once and keeps them all */
    int head_group;
    const int group_max = a->num_kv_heads < DL_PLAN_HEAD_GROUP_MASK ? a->num_kv_heads : DL_PLAN_HEAD_GROUP_MASK;
    DL_TRY(knob("DL_STREAM_HEAD_GROUP", 0, group_max, 0, &head_group));
    if (head_group && a->num_kv_heads % head_group)
        return dl_fail("DL_STREAM_HEAD_GROUP=%d: does not divide the %d KV heads (0: all of them)", head_group,
                       a->num_kv_heads);
    if (sh.page) head_group = sh.page == 8 ? 0 : sh.page; /* a stage's heads (attempt #70) */
    DL_TRY(knob("DL_STREAM_DRY", 0, 7, 0, &dry)); /* diagnosis: wrong outputs, time with run --time-failed */
    /* attempt #60: a chained layer's launch with programmatic dependent launch (pdl 1; 0: plainly), and such a layer
     * held to the plan's CTAs an SM (chain_cap 1; 0: not held) by unused shared memory, so that the next layer's CTAs,
     * launched early, cannot pile onto the SMs that free first (dl_plan_chain_pad; thirty-seventh session) */
    int pdl, chain_cap;
    DL_TRY(dl_plan_chain_knobs(&pdl, &chain_cap));
    /* attempt #71 (make STREAM_CLAIM=1, gpu/dl_claim.h): a split task's segments claim their tiles, DL_STREAM_CLAIM a
     * claim (0, the default: no claims, the plan's segments as cut), and a slot's last segment, once its own are
     * claimed, takes one at a time the back tiles of the task's segment with the most unclaimed, while it has
     * DL_STREAM_CLAIM_MIN (0: no thieves).
     * The tile rings with a producer per consumer at D 128 and groups <= 8 take it, with 64-token units and no pool;
     * other kernels ignore it */
    int claim, claim_min, claim_own;
    DL_TRY(knob("DL_STREAM_CLAIM", 0, 64, 0, &claim));
    DL_TRY(knob("DL_STREAM_CLAIM_MIN", 0, 64, 2, &claim_min));
    /* a segment's first tiles, its owner's without a claim (>= 1): the first claim's round trip hides behind them
     * (with 1, the owners' claims alone cost bf16-hw-stream 3 us at B4 L32768 on an H100, 2026-12-06) */
    DL_TRY(knob("DL_STREAM_CLAIM_OWN", 1, 64, 4, &claim_own));
    if (claim && !DL_STREAM_CLAIM)
        return dl_fail("DL_STREAM_CLAIM=%d: this binary has no claims; build one with make STREAM_CLAIM=1 (e.g. make "
                       "static BUILD=build-a71 STREAM_CLAIM=1)", claim);
    if (claim && dry == 1)
        return dl_fail("DL_STREAM_CLAIM=%d with DL_STREAM_DRY=1: nothing merges, so the claims are never reset (unset "
                       "one)", claim);
    if (!(sh.pool && !sh.page && a->head_dim == 128 && a->num_qo_heads <= 8 * a->num_kv_heads && unit == kTile &&
          pool_pct == 0 && !cluster_asked))
        claim = 0;
    if (dry && !DL_STREAM_DIAG)
        return dl_fail("DL_STREAM_DRY=%d: this binary has no diagnosis paths; build one with make DIAG=1 (e.g. make "
                       "static BUILD=build-diag DIAG=1)", dry);
    int merge_late; /* diagnosis, right outputs: the merge kernel of a chained layer triggers no early launch */
    DL_TRY(knob("DL_STREAM_MERGE_LATE", 0, 1, 0, &merge_late));
    if (merge_late && !DL_STREAM_DIAG)
        return dl_fail("DL_STREAM_MERGE_LATE=%d: this binary has no diagnosis paths; build one with make DIAG=1 (e.g. "
                       "make static BUILD=build-diag DIAG=1)", merge_late);
    /* diagnosis, right outputs: KB of shared memory added to each decode CTA, unused, so that fewer fit an SM than
     * the plan's per_sm allows (the plan is made as without it): does even placement over the SMs matter? */
    int smem_pad_kb;
    DL_TRY(knob("DL_STREAM_SMEM_PAD", 0, 224, 0, &smem_pad_kb));
    if (smem_pad_kb && !DL_STREAM_DIAG)
        return dl_fail("DL_STREAM_SMEM_PAD=%d: this binary has no diagnosis paths; build one with make DIAG=1 (e.g. "
                       "make static BUILD=build-diag DIAG=1)", smem_pad_kb);
    if (smem_pad_kb && cluster_asked)
        return dl_fail("DL_STREAM_SMEM_PAD=%d with DL_STREAM_MERGE=cluster: the clusters' launch takes no pad (unset "
                       "one)", smem_pad_kb);
    if (smem_pad_kb && sh.SMEM + 1024 * smem_pad_kb > smem_sm - 1024) /* the runtime keeps 1 KB a CTA */
        return dl_fail("DL_STREAM_SMEM_PAD=%d: %d + %d bytes a CTA exceed the SM's %d less the 1 KB reserve",
                       smem_pad_kb, sh.SMEM, 1024 * smem_pad_kb, smem_sm);
    const char *tl_ctas = getenv("DL_STREAM_TL_CTAS");
    if (tl_ctas && !*tl_ctas) tl_ctas = NULL;
    if (tl_ctas && dry != 3 && dry != 7)
        return dl_fail("DL_STREAM_TL_CTAS=%s: the per-CTA rows come with the timeline; set DL_STREAM_DRY=3 (or 7, the copy "
                       "probe's; a make DIAG=1 build)", tl_ctas);
#if DL_STREAM_DIAG
    if (tl_ctas && strlen(tl_ctas) > kTlPrefixMax)
        return dl_fail("DL_STREAM_TL_CTAS: a path prefix of %zu characters (at most %zu)", strlen(tl_ctas),
                       kTlPrefixMax);
#endif
    if (dry == 5 && !sh.page)
        return dl_fail("DL_STREAM_DRY=5 runs the page stage's ring unsynchronized: this plan is for %s (set "
                       "DL_STREAM_STAGE=page on a case it takes)", sh.pool ? "the tile rings" : "a wgmma kernel");
    if (promo_bytes != 0 && promo_bytes != 64 && promo_bytes != 128 && promo_bytes != 256)
        return dl_fail("DL_STREAM_L2PROMO: '%d' is not 0, 64, 128 or 256", promo_bytes);
    const CUtensorMapL2promotion promo = promo_bytes == 0    ? CU_TENSOR_MAP_L2_PROMOTION_NONE
                                         : promo_bytes == 64  ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
                                         : promo_bytes == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                                              : CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    int max_len = 1;
    for (int b = 0; b < a->batch_size; b++) max_len = h_seq_len[b] > max_len ? h_seq_len[b] : max_len;
    const int max_units = (max_len + unit - 1) / unit;
    int min_units = min_tiles * per_tile; /* the plan counts units */
    if (min_units < (max_units + max_segs - 1) / max_segs) min_units = (max_units + max_segs - 1) / max_segs;
    stream_maps *maps = (stream_maps *)malloc(sizeof(stream_maps));
    if (!maps) return dl_fail("dl_stream_make_plan: out of memory for the tensor maps");
    maps->swz = a->page_size >= 8 ? (sh.SW == 128 ? 2 : 1) : 0;
    maps->cluster = maps->cluster_said = 0;
    maps->dry = dry;
    maps->merge_late = merge_late;
    maps->smem_pad = 1024 * smem_pad_kb;
    maps->chain_pad = 0; /* set with the plan's CTAs (below) */
    maps->pad_all = 0;
    maps->pdl = pdl;
    maps->tl_ctas = tl_ctas;
    maps->first_pages = first_pages && a->page_size >= 16; /* below 16 a tile's first copies take more ids */
    maps->claim = claim;
    maps->claim_min = claim ? claim_min : 0;
    maps->claim_own = claim_own;
    const int box_heads = sh.page ? sh.page : 1, box_rows = sh.page ? kPageRows : 0;
    if (make_map(&maps->k, a->k_cache, a, sh.R, sh.SW, maps->swz, promo, box_heads, box_rows) ||
        make_map(&maps->v, a->v_cache, a, sh.R, sh.SW, maps->swz, promo, box_heads, box_rows)) {
        free(maps);
        return -1;
    }
    out->host = maps;
#if DL_STREAM_DIAG
    if ((dry == 4 || dry == 7) && probe_setup(a, h_seq_len, sh.R, sms, promo, maps)) {
        dl_gpu_plan_free(out);
        return -1;
    }
#endif
    dl_plan p; /* whole waves when min_tiles binds and tasks are split anyway (dl_plan.h, attempt #16) */
    auto build = [&](int walk) { /* the plan for this walk and the current cut; on failure the tensor maps go too */
        if (!dl_plan_build_waves(a->batch_size, a->num_kv_heads, h_seq_len, unit, sh.W, sms, sms * per_sm, min_units,
                                 waves, pool_pct, pool_chunk * per_tile, walk,
                                 seg_cost * per_tile | apportion_flag | DL_PLAN_HEAD_GROUP(head_group), &p))
            return 0;
        dl_gpu_plan_free(out);
        return -1;
    };
    int cluster = 0, per_task = 0; /* C and K (dl_plan_cluster_shape) */
    if (cluster_asked)
        dl_plan_cluster_shape(a->batch_size, a->num_kv_heads, h_seq_len, unit, sh.W, sms * per_sm, cluster_size,
                              &cluster, &per_task);
    if (cluster) {
        if (dl_plan_build_cluster(a->batch_size, a->num_kv_heads, h_seq_len, unit, sh.W, cluster, per_task, &p)) {
            dl_gpu_plan_free(out);
            return -1;
        }
    } else if (build(order)) {
        return -1;
    }
    const int merge_asked = merge;
    merge = cluster ? (p.num_partials ? DL_MERGE_CLUSTER : DL_MERGE_TICKET) : dl_plan_pick_merge(merge_asked, &p);
    /* where the plan needs the merge kernel, each request its own runs, equal within it (where runs < requests: the
     * equal cut). The cost cut's longer runs lose there (bf16-hw-stream B4 L32768 e4m3: 87.65 us at 0, 89.82 at 4),
     * while the equal cut's boundaries lose at B8-B16 (H200 2026-12-04d call 1, bf16-hw-stream e4m3, equal /
     * apportioned: B16 L8192 100.13 / 91.23, B8 L16384 95.30 / 89.18, B4 87.65 / 87.71; gpu/NOTES.md #31) */
    if (!seg_cost_asked && !apportion_asked && p.order == DL_ORDER_HEADS && merge == DL_MERGE_KERNEL) {
        dl_plan_free(&p);
        seg_cost = 0;
        apportion_flag = DL_PLAN_APPORTION;
        if (build(order)) return -1;
        merge = dl_plan_pick_merge(merge_asked, &p);
    }
    /* the wgmma consumers with auto: the tasks order where the plan needs the merge kernel (fp8-none-wgmma B4
     * L32768 e4m3: heads 97.7 us, tasks 94.9; B1 even; heads faster with the ticket: B128 L4096 -1.6 %, 70B
     * -1.0 %; gpu/NOTES.md #25) */
    if (!sh.pool && order == DL_ORDER_AUTO && p.order == DL_ORDER_HEADS && merge == DL_MERGE_KERNEL) {
        dl_plan_free(&p);
        if (build(DL_ORDER_TASKS)) return -1;
        merge = dl_plan_pick_merge(merge_asked, &p);
    }
    if (sh.page && (!dl_plan_ctas_share_tiles(&p, sh.W) ||
                    ((!sh.page_run_ticket || merge != DL_MERGE_KERNEL) &&
                     p.num_tiles < (int64_t)sh.page_min_run * per_tile * sh.W * p.ctas) ||
                    (sh.page_ticket_only && merge == DL_MERGE_KERNEL))) { /* the tile rings instead */
        dl_plan_free(&p);
        dl_gpu_plan_free(out);
        return 1;
    }
    if (sh.deep && sh.deep_max_run > 0 &&
        p.num_tiles > (int64_t)sh.deep_max_run * per_tile * p.num_slots) { /* long runs: the default rings instead */
        dl_plan_free(&p);
        dl_gpu_plan_free(out);
        return 1;
    }
    if (merge == DL_MERGE_KERNEL && dl_plan_max_task_segs(&p) > kMergeThreads) {
        const int n = dl_plan_max_task_segs(&p);
        dl_plan_free(&p);
        dl_gpu_plan_free(out);
        return dl_fail("dl_stream_make_plan: a task cut into %d segments; the merge kernel takes at most %d (lower "
                       "DL_STREAM_MAX_SEGS or raise DL_STREAM_MIN_TILES; with DL_STREAM_POOL, raise "
                       "DL_STREAM_POOL_CHUNK)", n, kMergeThreads);
    }
    if (dry == 6 && merge != DL_MERGE_KERNEL) {
        dl_plan_free(&p);
        dl_gpu_plan_free(out);
        return dl_fail("DL_STREAM_DRY=6 times the merge kernel without its body: this plan merges by ticket (set "
                       "DL_STREAM_MERGE=kernel, or take a case with long tasks)");
    }
    if (merge == DL_MERGE_KERNEL && /* C CTAs per (task, head), auto: the fewest for one per SM */
        dl_plan_merge_split(merge_split, (int64_t)p.num_tasks * (a->num_qo_heads / a->num_kv_heads), sms, a->head_dim,
                            &merge_split)) {
        dl_plan_free(&p);
        dl_gpu_plan_free(out);
        return -1;
    }
    maps->merge_split = merge == DL_MERGE_KERNEL ? merge_split : 0;
    maps->merge_form = merge_form;
    out->merge_kernel = maps->merge_split; /* 0: by ticket */
    out->merge_form = maps->merge_split ? maps->merge_form : 0;
    out->order = p.order;
    out->head_group = p.head_group; /* 0 but in the heads order (dl_plan_build_pool) */
    out->cut = p.cut;
    out->seg_cost = p.seg_cost / per_tile; /* in tiles, as asked */
    out->unit = unit;
    out->claim = maps->claim;
    out->claim_min = maps->claim_min;
    out->claim_own = maps->claim_own;
    out->page_stage = sh.page;
    out->deep_rings = sh.deep;
    out->warps = p.warps;
    out->ctas = p.ctas;
    if (chain_cap && sh.chains && (chain_cap == 2 || (a->pdl && pdl)) && merge != DL_MERGE_CLUSTER) {
        /* 0 where no more than the plan's fit; DL_STREAM_CHAIN_CAP=2 holds every launch so */
        maps->chain_pad = dl_plan_chain_pad(smem_sm, sh.SMEM + maps->smem_pad, sh.occ, p.ctas, sms);
        maps->pad_all = chain_cap == 2;
        out->chain_cap = maps->chain_pad ? (p.ctas + sms - 1) / sms : 0;
    }
    out->num_tasks = p.num_tasks;
    out->num_slots = p.num_slots;
    out->num_static = p.num_static;
    out->num_segs = p.num_segs;
    out->num_partials = p.num_partials;
    if (dl_plan_cta_tokens(&p, a->num_kv_heads, h_seq_len, &out->cta_tokens_max, &out->cta_tokens_mean)) {
        dl_plan_free(&p);
        dl_gpu_plan_free(out);
        return -1;
    }
    out->sched_indptr = p.sched_indptr;
    out->sched_begin = p.sched_begin;
    const int G = a->num_qo_heads / a->num_kv_heads;
    out->workspace_bytes = (size_t)p.num_partials * G * (a->head_dim + 1) * sizeof(float);
    if (merge == DL_MERGE_CLUSTER && per_task > 1) /* the clusters' rows, K a task after the partials (cluster_merge) */
        out->workspace_bytes += (size_t)p.num_tasks * per_task * G * (a->head_dim + 1) * sizeof(float);
    maps->cluster = merge == DL_MERGE_CLUSTER ? cluster : 0;
    out->cluster = maps->cluster;
    out->cluster_per_task = maps->cluster ? per_task : 0;
    if (merge == DL_MERGE_KERNEL) /* no decode warp merges (stream_merge_kernel); tickets per dl_plan.h */
        for (int t = 0; t < p.num_tasks; t++)
            p.buf[plan_tickets_at(p.num_slots, p.num_segs, p.num_tasks) + t] = kParkedTicket;
    /* the plan, then the producers' records (plan_records) */
    size_t len = 0;
    int32_t *all = plan_records(&p, a, h_seq_len, maps, &len);
    free(p.buf);
    if (!all) {
        dl_gpu_plan_free(out);
        return -1;
    }
    cudaError_t e = cudaMalloc(&out->dev, len * sizeof(int32_t));
    if (e == cudaSuccess) e = cudaMemcpy(out->dev, all, len * sizeof(int32_t), cudaMemcpyHostToDevice);
    /* a pageable copy may return before its DMA lands, and the bench stream (non-blocking) does not wait for the
     * legacy stream: the plan must be whole before the first launch reads it (as dl_dev_upload does) */
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    free(all);
    if (e != cudaSuccess) {
        dl_gpu_plan_free(out);
        return dl_fail("dl_stream_make_plan: cudaMalloc/cudaMemcpy of a %zu-byte plan failed: %s",
                       len * sizeof(int32_t), cudaGetErrorString(e));
    }
    return 0;
}

/* The fewest resident CTAs per SM of KERN (registers and shared memory) into *occ. */
template <auto KERN, class SH> static int occupancy_min(int *occ)
{
    DL_TRY(dl_smem_limit<KERN>(SH::SMEM));
    int o = 0;
    DL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o, KERN, SH::THREADS, SH::SMEM));
    if (o < *occ) *occ = o;
    return 0;
}

/* Why the page stage of HEADS KV heads a stage (page_shape<HEADS>) does not take case a with dequant policy dq and
 * the plan knobs' order and pool, or NULL. */
static const char *page_misfit(const dl_gpu_args *a, int heads, int dq, int order, int pool_pct)
{
    if (dl_dtype_size(a->kv_dtype) != 1) return "the cache is not 8-bit (e4m3, e5m2)";
    if (a->head_dim != 128) return "head_dim is not 128";
    if (heads == 8 && a->num_kv_heads != 8) return "the KV heads are not 8";
    if (heads == 2 && a->num_kv_heads % 2) return "the KV heads are odd";
    if (heads == 2 && dq != DL_DQ_HW) return "two heads a stage are compiled for bf16-hw-stream alone";
    if (a->num_qo_heads / a->num_kv_heads > 8) return "the group is over 8 query heads a KV head";
    if (a->page_size % kPageRows) return "page_size is not a multiple of 16";
    if (order == DL_ORDER_TASKS) return "DL_STREAM_ORDER=tasks (the page stage takes the heads order)";
    if (pool_pct > 0) return "DL_STREAM_POOL is set (the page stage takes no pool)";
    return NULL;
}

/* The page stage's plan (page_shape) where the knob and the case allow it: 0 and a plan in out, 1 (nothing
 * built) where they do not, or -1 after dl_fail() (an error, or DL_STREAM_STAGE=page or page2 where it cannot run).
 * auto, by dequant policy dq, measured on the H200 (2026-12-04, llama3-8B / the 70B shape, e4m3, median us,
 * page vs tile): the cast and fast policies gain with 8 heads a stage everywhere it fits (bf16-cast-stream B128
 * L4096 369.5 vs 582.6, 70B B64 L4096 214.5 vs 314.8, B64 L1024 76.3 vs 104.0, B1 L32768 44.5 vs 58.1; the 8 warps
 * an SM compute more than 2 CTAs of 3), and lose with 2 (2026-12-06i: 0.8-16 %). The hw policy gained with 8 heads
 * only on NHD with long runs and lost on short runs, HND and at group 8 (2026-12-04; where its plan needed the merge
 * kernel the tile rings were faster, #62, 2026-12-05h). With 2 heads a stage (attempt #70, H200 2026-12-06i, against
 * the tile rings unless said) it gains at B1 L32768 (32.83-32.90 against 33.54-33.70 us, a CTA's run ~4 tiles, the
 * merge kernel), B4 L32768 (82.62-82.66 against 82.98-83.10, the merge kernel) and B128 L4096 (258.78-259.55 against
 * the 8-head page stage's 260.74-260.93, runs of ~62 tiles, the ticket), and loses at B64 L1024 (51.04-51.07 against
 * 48.51-48.64, runs of ~8 tiles, the ticket) and at group 8 (the 70B shape, 150.24-150.34 against 142.02-142.14). So
 * with DL_STREAM_HW_PAGE=2 auto gives bf16-hw-stream the two-head stage on NHD, 8 KV heads, groups up to 4, where its
 * plan needs the merge kernel or a CTA's run has kPageHwMinRun tiles or more (the default since
 * 2026-12-07, dl_plan_hw_page_heads; H100 against the 8-head rule: B1 L32768 -1.5 %, B4 L32768 -0.5 %, B128 L4096 -0.9 %, B256 L4096 -0.4 %,
 * B8 L16384 and B16 L8192 within +0.3 %); with 8 (main's rule before, and the default for a layer chained with
 * programmatic dependent launch) the 8-head stage on NHD, groups up to 4, where runs have
 * kPageHwMinRun tiles and the plan merges by ticket; the tile rings elsewhere. Other KV head counts: not
 * measured, the tile rings (DL_STREAM_STAGE=page2 forces the two-head stage where the KV heads are even). */
static int page_stage_plan(const dl_gpu_args *a, const int32_t *h_seq_len, int dq, dl_gpu_plan *out)
{
    int stage, order, pool_pct;
    DL_TRY(dl_plan_stage_of(getenv("DL_STREAM_STAGE"), &stage)); /* DL_STAGE_*: the page stage's heads, 0, or -1 */
    if (stage == DL_STAGE_TILE) return 1;
    DL_TRY(dl_plan_order_of(getenv("DL_STREAM_ORDER"), &order));
    DL_TRY(knob("DL_STREAM_POOL", 0, 50, 0, &pool_pct));
    int merge;
    DL_TRY(dl_plan_merge_mode(getenv("DL_STREAM_MERGE"), &merge));
    const bool hw_auto = stage == DL_STAGE_AUTO && dq == DL_DQ_HW; /* the hw policy's rule (above) */
    int pdl, cap; /* a chained layer launched with programmatic dependent launch (a->pdl, DL_STREAM_PDL) */
    DL_TRY(dl_plan_chain_knobs(&pdl, &cap));
    int hw_heads; /* the heads a stage the hw policy's auto takes (DL_STREAM_HW_PAGE, else by chaining) */
    DL_TRY(dl_plan_hw_page_heads(a->pdl && pdl, &hw_heads));
    const int heads = stage > 0 ? stage : hw_auto ? hw_heads : 8;
    const char *asked = heads == 2 ? "DL_STREAM_STAGE=page2" : "DL_STREAM_STAGE=page";
    const char *why = merge == DL_MERGE_CLUSTER ? "DL_STREAM_MERGE=cluster is set (the clusters are the tile rings')"
                                                : page_misfit(a, heads, dq, order, pool_pct);
    if (why) return stage > 0 ? dl_fail("%s: %s", asked, why) : 1;
    if (hw_auto && (a->kv_layout != DL_NHD || a->num_kv_heads != 8 || a->num_qo_heads / a->num_kv_heads > 4))
        return 1;
    shape_rt sh = heads == 2 ? shape_rt_of<page_shape<2>>(kWarpMinTiles, false, 2)
                             : shape_rt_of<page_shape<8>>(kWarpMinTiles, false, 8);
    sh.chains = true;
    sh.page_min_run = hw_auto ? kPageHwMinRun : 0;
    sh.page_run_ticket = hw_auto && heads == 2; /* where the plan needs the merge kernel, any run (B1 L32768) */
    sh.page_ticket_only = hw_auto && heads == 8; /* attempt #62: where the page plan needs the merge kernel, tiles */
    sh.occ = 1 << 20;
    DL_TRY(dl_dispatch<DL_KV_FP8>(a, false, "decode_stream.cu, page plan", [&](auto s) {
        constexpr int D = decltype(s)::D;
        constexpr dl_dtype KV = decltype(s)::KV;
        if constexpr (kPageFits<D, KV, 1>) {
            if (heads == 2) /* the hw policy's alone (page_misfit) */
                return occupancy_min<stream_decode_kernel<D, KV, DL_DQ_HW, 1, 2>, page_shape<2>>(&sh.occ);
            DL_TRY((occupancy_min<stream_decode_kernel<D, KV, DL_DQ_CAST, 1, 8>, page_shape<8>>(&sh.occ)));
            DL_TRY((occupancy_min<stream_decode_kernel<D, KV, DL_DQ_FAST, 1, 8>, page_shape<8>>(&sh.occ)));
            DL_TRY((occupancy_min<stream_decode_kernel<D, KV, DL_DQ_HW, 1, 8>, page_shape<8>>(&sh.occ)));
        }
        return 0;
    }));
    if (sh.occ < 1) return dl_fail("decode_stream.cu: the page-stage kernel (%d heads a stage) does not fit on an SM",
                                   heads);
    const int rc = make_plan(a, h_seq_len, sh, out);
    if (rc == 1 && stage > 0)
        return dl_fail("%s: the plan does not give the %d warps of every CTA the same tiles (fewer tiles a KV head "
                       "than CTAs?)", asked, heads);
    return rc;
}

/* The streaming variants' plan, by dequant policy DQ (bf16-cast-stream, bf16-fast-stream, bf16-hw-stream): the page
 * stage's where it fits and DL_STREAM_STAGE allows (page_stage_plan), else the tile rings'. */
template <int DQ> static int stream_make_plan(const dl_gpu_args *a, const int32_t *h_seq_len, dl_gpu_plan *out)
{
    const int pr = page_stage_plan(a, h_seq_len, DQ, out);
    if (pr <= 0) return pr;
    const int es = (a->kv_dtype == DL_E4M3 || a->kv_dtype == DL_E5M2) ? 1 : 2;
    int deep;
    DL_TRY(knob("DL_STREAM_DEEP", 0, 1, -1, &deep)); /* unset: by the runs' length (kDeepMaxRun) */
    if (deep != 0 && es == 2 && a->head_dim == 128) { /* the deep rings (attempt #57) where they may be taken */
        using DSH = stream_shape<128, 2, DL_DQ_CAST, 1, true>; /* (a 16-bit cache's shape: the same for NT 2) */
        shape_rt dsh = stream_shape_rt<128, 2, DL_DQ_CAST, 1, true>();
        dsh.deep_max_run = deep == 1 ? 0 : kDeepMaxRun;
        dsh.occ = 1 << 20;
        DL_TRY(dl_dispatch<DL_KV_ALL>(a, true, "decode_stream.cu, deep plan", [&](auto s) {
            return dl_dispatch_group_n8(a, [&](auto nt) { /* the case's own kernel's CTAs an SM */
                constexpr dl_dtype KV = decltype(s)::KV;
                if constexpr (kDeepFits<decltype(s)::D, KV>)
                    return occupancy_min<stream_decode_kernel<128, KV, DL_DQ_CAST, decltype(nt)::value, false, true>,
                                         DSH>(&dsh.occ);
                return 0;
            });
        }));
        if (dsh.occ < 1) return dl_fail("decode_stream.cu: the deep-ring kernel does not fit on an SM");
        const int rc = make_plan(a, h_seq_len, dsh, out);
        if (rc <= 0) return rc; /* 1: runs too long for them, the default rings below */
    }
    shape_rt sh{}; /* the tile rings' shape for this case and policy DQ, set in the dispatch below */
    /* The plan counts the CTAs per SM that registers and shared memory both allow for the variant's own kernel
     * (policy DQ; the occupancy API). Shared memory alone overcounted D128 8-bit caches with groups 9-16 (two n8
     * tiles, 230-245 registers: one CTA per SM, not two), whose plans then ran as two waves: 145.7 us against 126.0
     * with one CTA per SM at group 16, B128 L4096 e4m3 (H200, 2026-12-03, gpu/NOTES.md attempt #23). Until #58 it
     * took the lowest occupancy of the three policies' kernels, which since the shapes differ by policy (#56, #58)
     * planned one policy for another's occupancy. */
    DL_TRY(dl_dispatch<DL_KV_ALL>(a, true, "decode_stream.cu, plan", [&](auto s) {
        return dl_dispatch_group_n8(a, [&](auto nt) {
            constexpr int D = decltype(s)::D, NT = decltype(nt)::value;
            constexpr dl_dtype KV = decltype(s)::KV;
            constexpr int ES = dl_kv_size<KV>::value;
            constexpr int PQ = ES == 1 ? DQ : DL_DQ_CAST; /* the 16-bit caches: the cast kernel, their one */
            sh = stream_shape_rt<D, ES, PQ, NT>(); /* with its CTAS_CAP (attempt #59) */
            int occ = 1 << 20;
            DL_TRY((occupancy_min<stream_decode_kernel<D, KV, PQ, NT>, stream_shape<D, ES, PQ, NT>>(&occ)));
            if (occ < 1)
                return dl_fail("decode_stream.cu: the streaming kernel (D=%d, %d consumer warps a CTA) does "
                               "not fit on an SM", D, sh.W);
            sh.occ = occ;
            return 0;
        });
    }));
    return make_plan(a, h_seq_len, sh, out);
}

/* The wgmma kernel's shape with its occupancy (its registers bind, not only shared memory). */
template <int D, dl_dtype KV, int PROMOTE> static int wgmma_shape(shape_rt *sh)
{
    using SH = wg_shape<D>;
    constexpr auto kern = wgmma_decode_kernel<D, KV, PROMOTE>;
    DL_TRY(dl_smem_limit<kern>(SH::SMEM));
    *sh = shape_rt_of<SH>(kWgMinTiles);
    DL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&sh->occ, kern, SH::THREADS, SH::SMEM));
    if (sh->occ < 1) return dl_fail("decode_stream.cu: the wgmma kernel (D=%d) does not fit on an SM", D);
    return 0;
}

/* fp8-none-wgmma and fp8acc-none-wgmma (every promotion count) share the shape; the plan takes the
 * lowest occupancy among them. */
extern "C" int dl_wgmma_make_plan(const dl_gpu_args *a, const int32_t *h_seq_len, dl_gpu_plan *out)
{
    shape_rt sh, s1, s2, s4;
    DL_TRY(dl_dispatch<DL_KV_FP8>(a, false, "decode_stream.cu, wgmma plan", [&](auto s) {
        DL_TRY((wgmma_shape<decltype(s)::D, decltype(s)::KV, 0>(&sh)));
        DL_TRY((wgmma_shape<decltype(s)::D, decltype(s)::KV, 1>(&s1)));
        DL_TRY((wgmma_shape<decltype(s)::D, decltype(s)::KV, 2>(&s2)));
        return wgmma_shape<decltype(s)::D, decltype(s)::KV, 4>(&s4);
    }));
    for (const shape_rt *x : {&s1, &s2, &s4})
        if (x->occ < sh.occ) sh.occ = x->occ;
    return make_plan(a, h_seq_len, sh, out);
}

/* bf16-fast-wgmma: its own shape (larger Q and P buffers) and occupancy. */
extern "C" int dl_wgmma_bf16_make_plan(const dl_gpu_args *a, const int32_t *h_seq_len, dl_gpu_plan *out)
{
    shape_rt sh;
    DL_TRY(dl_dispatch<DL_KV_FP8>(a, false, "decode_stream.cu, bf16 wgmma plan", [&](auto s) {
        constexpr int D = decltype(s)::D;
        constexpr auto kern = wgmma_bf16_decode_kernel<D, decltype(s)::KV>;
        DL_TRY(dl_smem_limit<kern>(wg_shape<D, 2>::SMEM));
        sh = shape_rt_of<wg_shape<D, 2>>(kWgMinTiles);
        DL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&sh.occ, kern, wg_shape<D, 2>::THREADS,
                                                                    wg_shape<D, 2>::SMEM));
        if (sh.occ < 1) return dl_fail("decode_stream.cu: the bf16 wgmma kernel (D=%d) does not fit on an SM", D);
        return 0;
    }));
    return make_plan(a, h_seq_len, sh, out);
}

extern "C" int dl_stream_cast_make_plan(const dl_gpu_args *a, const int32_t *h_seq_len, dl_gpu_plan *out)
{
    return stream_make_plan<DL_DQ_CAST>(a, h_seq_len, out);
}
extern "C" int dl_stream_fast_make_plan(const dl_gpu_args *a, const int32_t *h_seq_len, dl_gpu_plan *out)
{
    return stream_make_plan<DL_DQ_FAST>(a, h_seq_len, out);
}
extern "C" int dl_stream_hw_make_plan(const dl_gpu_args *a, const int32_t *h_seq_len, dl_gpu_plan *out)
{
    return stream_make_plan<DL_DQ_HW>(a, h_seq_len, out);
}

extern "C" void dl_gpu_plan_free(dl_gpu_plan *p)
{
    if (!p) return;
    if (p->dev) cudaFree(p->dev);
    free(p->host);
    free(p->sched_indptr);
    free(p->sched_begin);
    memset(p, 0, sizeof *p);
}

extern "C" int dl_launch_bf16_cast_stream(const dl_gpu_args *a) { return dispatch_stream<DL_DQ_CAST>(a); }
extern "C" int dl_launch_bf16_fast_stream(const dl_gpu_args *a) { return dispatch_stream<DL_DQ_FAST>(a); }
extern "C" int dl_launch_bf16_hw_stream(const dl_gpu_args *a) { return dispatch_stream<DL_DQ_HW>(a); }
template <int PROMOTE> static int dispatch_wgmma(const dl_gpu_args *a)
{
    return dl_dispatch<DL_KV_FP8>(a, false, PROMOTE ? "decode_stream.cu, wgmma fp8acc" : "decode_stream.cu, wgmma",
                                  [&](auto s) { return launch_wgmma<decltype(s)::D, decltype(s)::KV, PROMOTE>(a); });
}
extern "C" int dl_launch_fp8_none_wgmma(const dl_gpu_args *a) { return dispatch_wgmma<0>(a); }
extern "C" int dl_launch_bf16_fast_wgmma(const dl_gpu_args *a)
{
    return dl_dispatch<DL_KV_FP8>(a, false, "decode_stream.cu, bf16 wgmma",
                                  [&](auto s) { return launch_wgmma_bf16<decltype(s)::D, decltype(s)::KV>(a); });
}
extern "C" int dl_launch_fp8acc_none_wgmma(const dl_gpu_args *a)
{
    switch (a->acc_promote_blocks) {
    case 1: return dispatch_wgmma<1>(a);
    case 2: return dispatch_wgmma<2>(a);
    case 4: return dispatch_wgmma<4>(a);
    default:
        return dl_fail("fp8acc-none-wgmma: acc_promote_blocks = %d (the kernel is built for 1, 2 and 4)",
                       a->acc_promote_blocks);
    }
}

/* decode_mma.cu - tensor-core paged decode attention in BF16: the variants
 * bf16-cast-mma and bf16-fast-mma. Golden model: bf16.
 *
 * What it is: the shape of the reference system's tensor-core decode. One CTA
 * (4 warps) per (request, KV head, split chunk); the query heads of the GQA
 * group are the M rows of one 16-row mma.sync.m16n8k16 tile (rows >= group are
 * zero padding); raw K/V tiles of 64 tokens stream into shared memory through a
 * multi-stage cp.async pipeline (read from DRAM once per group); each warp takes
 * 16 tokens of a tile. K and V are dequantized in registers to BF16 exactly as
 * the bf16 model does: bf16(decode(code)) (exact for fp8 codes; an f16 cache is
 * rounded, a bf16 cache passes through), the per-head scales folded into the
 * score scale (sm_scale * k_scale) and the output (v_scale), never applied per
 * element; Q is rounded to bf16; S = Q K^T and O += P V accumulate in FP32; the running max is the
 * max over whole 64-token tiles shared by the 4 warps (the model's kv_block);
 * P = exp(s - m) is summed in FP32 and rounded to BF16 before P*V.
 * Fragment trick: the head_dim order inside each 16-wide k-step is permuted
 * (Q's A fragments are stored permuted in shared memory) so that a thread's
 * B fragment of K is 4 consecutive elements of a row: one 16-byte shared load
 * feeds 2 (16-bit) or 4 (fp8) k-steps, and the four-at-a-time dequant applies
 * directly. For P*V the thread loads consecutive head_dim elements of the token
 * rows it needs and pairs the tokens with byte permutes; the output columns
 * come out permuted and are put back in place when written.
 *
 * Sibling difference: bf16-cast-mma converts each FP8 code on its own
 * (fp8 -> half -> float -> bf16); bf16-fast-mma uses the four-at-a-time bit
 * trick straight to bf16 (template parameter FAST; its 2^-bias is folded into
 * the Q/P operands and the score/output scales). Everything else is identical.
 * Hypothesis (mission E1/E3): tensor cores amortize the dequant over the GQA
 * group; MHA stays memory-bound whatever the unit.
 * Run: decodelab run FILE.h5 --variants 'bf16-*-mma' --time */
#include "dl_cuda.cuh"
#include "dl_dequant.cuh"
#include "dl_dispatch.cuh"
#include "dl_mma.cuh"
#include "dl_paged.cuh"

namespace {

constexpr int kWarps = 4, kThreads = 32 * kWarps;
constexpr int kTile = 64; /* tokens per tile = the bf16 model's kv_block */
#ifndef DL_MMA_MINB
#define DL_MMA_MINB 1 /* __launch_bounds__ min CTAs per SM: caps registers (tuning knob) */
#endif
#ifndef DL_MMA_SMEM_BUDGET
#define DL_MMA_SMEM_BUDGET 98304 /* bytes of pipeline stages per CTA (tuning knob) */
#endif

template <int D, dl_dtype KV> struct mma_shape {
    static constexpr int ES = dl_kv_size<KV>::value;
    static constexpr int ROWB = D * ES;
    /* rows unpadded; bank conflicts avoided by the XOR swizzles of dl_swz
     * (K: 2 rows x 64 bytes per quarter warp; V: 4 rows x R bytes) */
    static constexpr int KSTRIDE = ROWB, VSTRIDE = ROWB;
    static constexpr int STAGE = kTile * (KSTRIDE + VSTRIDE);
    static constexpr int NPT = kTile * ROWB / 16 / kThreads; /* loader chunks per thread */
    static constexpr int STAGES = (DL_MMA_SMEM_BUDGET / STAGE) > 4 ? 4 : ((DL_MMA_SMEM_BUDGET / STAGE) < 2 ? 2 : (DL_MMA_SMEM_BUDGET / STAGE));
    static constexpr int E = 16 / ES;            /* K elements per 16-byte load */
    static constexpr int KSPB = E / 4;           /* k-steps fed by one K load */
    static constexpr int EV = (16 / ES) < (D / 8) ? (16 / ES) : (D / 8); /* V elements per load */
    static constexpr int R = EV * ES;            /* V bytes per load (8 or 16) */
    static constexpr int QFRAG = (D / 16) * 32 * 16; /* bytes of permuted Q fragments */
    static constexpr int PIPE = STAGES * STAGE;
    static constexpr int MERGE = kWarps * 16 * (D + 1) * 4;
    static constexpr int SMEM = (PIPE > MERGE ? PIPE : MERGE) + QFRAG + kWarps * 16 * 4;
};

/* q as bf16 bits, as the model rounds it: bf16 Q as is, f16 Q rounded (RNE). */
__device__ __forceinline__ float dl_q_bf16(const dl_gpu_args &a, size_t i)
{
    return __bfloat162float(__float2bfloat16_rn(dl_load_q(a.q, i, a.q_dtype)));
}

template <int NB> struct raw_t;
template <> struct raw_t<8> { uint32_t w[2]; };
template <> struct raw_t<16> { uint32_t w[4]; };
template <int NB> __device__ __forceinline__ raw_t<NB> lds_raw(const uint8_t *p)
{
    raw_t<NB> r;
    if constexpr (NB == 16) {
        uint4 v = *(const uint4 *)p;
        r.w[0] = v.x; r.w[1] = v.y; r.w[2] = v.z; r.w[3] = v.w;
    } else {
        uint2 v = *(const uint2 *)p;
        r.w[0] = v.x; r.w[1] = v.y;
    }
    return r;
}

template <int D, dl_dtype KV, bool FAST>
__global__ void __launch_bounds__(kThreads, DL_MMA_MINB) mma_decode_kernel(const dl_gpu_args a, int chunk)
{
    using S = mma_shape<D, KV>;
    constexpr int ROWB = S::ROWB, KS = S::KSTRIDE, VS = S::VSTRIDE, STAGES = S::STAGES;
    static_assert(KS == ROWB && VS == ROWB, "the tile loader's stages are kTile * ROWB bytes apart");
    constexpr int E = S::E, KSPB = S::KSPB, EV = S::EV, R = S::R;
    constexpr int NT = D / 8; /* n8 tiles of the output */
    constexpr int BIAS = dl_bf16_bias_log2<KV, FAST>();
    constexpr float kHalfBias = (float)(1ull << (BIAS - BIAS / 2)); /* exact, <= 2^60 */
    constexpr float kQMul = (float)(1ull << (BIAS / 2)), kPMul = kQMul;
    extern __shared__ __align__(16) uint8_t smem[];
    uint8_t *sK = smem, *sV = smem + STAGES * kTile * KS;
    constexpr int BIG = S::PIPE > S::MERGE ? S::PIPE : S::MERGE;
    uint4 *sQ = (uint4 *)(smem + BIG);              /* [D/16 k-steps][32 lanes] A fragments */
    float *sMax = (float *)(smem + BIG + S::QFRAG); /* [4 warps][16 rows] */

    const int G = a.num_qo_heads / a.num_kv_heads;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, c = lane % 4;
    const int split = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    const int len = dl_seq_len(a, b);
    const int start = split * chunk, end = min(len, start + chunk);

    if (start >= end) { /* empty chunk of a split: o = 0, lse = -inf */
        for (int i = tid; i < G * D; i += kThreads) dl_out_o_row(a, b, kvh * G + i / D, split)[i % D] = 0.0f;
        if (tid < G) *dl_out_lse(a, b, kvh * G + tid, split) = -INFINITY;
        return;
    }

    const int32_t *pages = a.kv_indices + a.kv_indptr[b];
    const int ntiles = (end - start + kTile - 1) / kTile;
    dl_tile_loader<ROWB, kTile, S::NPT, 1, 2> ld(a.page_size);
    ld.template prologue<STAGES>(a, pages, start, end, ntiles, kvh, sK, sV, tid, kThreads);

    /* Q A-fragments, permuted: k-step ks covers head_dim elements
     * blk*4E + c*E + 4j + {0,1} (logical k 2c, 2c+1) and + {2,3} (2c+8, 2c+9). */
    for (int ks = warp; ks < D / 16; ks += kWarps) {
        const int d0 = (ks / KSPB) * 4 * E + c * E + 4 * (ks % KSPB);
        float v[2][4];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int row = g + 8 * r;
            const size_t base = ((size_t)b * a.num_qo_heads + kvh * G + row) * D + d0;
#pragma unroll
            for (int e = 0; e < 4; e++) v[r][e] = row < G ? dl_q_bf16(a, base + e) * kQMul : 0.0f;
        }
        sQ[ks * 32 + lane] = make_uint4(dl_pack_bf16x2(v[0][0], v[0][1]), dl_pack_bf16x2(v[1][0], v[1][1]),
                                        dl_pack_bf16x2(v[0][2], v[0][3]), dl_pack_bf16x2(v[1][2], v[1][3]));
    }

    /* scales folded (the bf16 model): s = dot * (sm_scale * k_scale), o = acc / sum * v_scale;
     * the bit trick's 2^-BIAS on K (V) is undone half by Q (P), half by the score (output)
     * scale, all exact powers of two, so no product leaves the normal range */
    const float sk_b = a.sm_scale * a.k_scale[kvh] * kHalfBias;
    const float vs_b = a.v_scale[kvh] * kHalfBias;

    float acc[NT][4];
#pragma unroll
    for (int n = 0; n < NT; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, dsum[2] = {0.0f, 0.0f};

    for (int it = 0; it < ntiles; it++) {
        ld.template advance<STAGES>(a, pages, start, end, ntiles, it, kvh, sK, sV, tid, kThreads);
        const int st = it % STAGES;
        const uint8_t *tk = sK + st * kTile * KS, *tv = sV + st * kTile * VS;
        const int nvalid = min(kTile, end - start - it * kTile);
        const int kbase = warp * 16;

        /* S = Q K^T for this warp's 16 tokens (two n8 tiles) */
        float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
        for (int blk = 0; blk < D / (4 * E); blk++) {
            uint32_t kb[2][E / 2];
#pragma unroll
            for (int n = 0; n < 2; n++) {
                raw_t<16> raw = lds_raw<16>(tk + dl_swz<ROWB, 1>(kbase + n * 8 + g, blk * 4 + c));
                dl_deq_bf16<KV, FAST, E>(raw.w, kb[n]);
            }
#pragma unroll
            for (int j = 0; j < KSPB; j++) {
                const uint4 q4 = sQ[(blk * KSPB + j) * 32 + lane];
                const uint32_t qa[4] = {q4.x, q4.y, q4.z, q4.w};
                dl_mma16816<false>(s[0], qa, kb[0][2 * j], kb[0][2 * j + 1]);
                dl_mma16816<false>(s[1], qa, kb[1][2 * j], kb[1][2 * j + 1]);
            }
        }
        /* scale, mask, per-row max over the warp's tokens */
        float mx[2] = {-INFINITY, -INFINITY};
        dl_mma_rows_mask_max(s, kbase + 2 * c, nvalid, mx, [&](float x, int) { return x * sk_b; });
        float f[2];
        dl_mma_rows_max<kWarps>(mx, sMax, warp, g, c, m, dsum, f);
        dl_mma_rows_rescale<NT>(acc, f);
        /* P = exp(s - m): FP32 into the sum, BF16 into P*V */
        uint32_t pa[4];
#pragma unroll
        for (int n = 0; n < 2; n++) {
            float p[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                p[i] = expf(s[n][i] - m[i >> 1]);
                dsum[i >> 1] += p[i];
            }
            pa[2 * n] = dl_pack_bf16x2(p[0] * kPMul, p[1] * kPMul);
            pa[2 * n + 1] = dl_pack_bf16x2(p[2] * kPMul, p[3] * kPMul);
        }
        /* O += P V: rows 2c, 2c+1 (k 2c, 2c+1) and 2c+8, 2c+9 of the warp's tokens;
         * head_dim element step*8*EV + g*EV + e goes to n-tile step*EV + e, column g. */
#pragma unroll
        for (int step = 0; step < D / (8 * EV); step++) {
            uint32_t vr[4][EV / 2];
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const int row = kbase + 2 * c + (r & 1) + 8 * (r >> 1);
                const int byte = step * 8 * R + g * R; /* logical byte in the row */
                raw_t<R> raw = lds_raw<R>(tv + dl_swz<ROWB, 2>(row, byte / 16) + byte % 16);
                dl_deq_bf16<KV, FAST, EV>(raw.w, vr[r]);
            }
#pragma unroll
            for (int e = 0; e < EV; e++) {
                const uint32_t sel = (e & 1) ? 0x7632u : 0x5410u;
                const uint32_t b0 = __byte_perm(vr[0][e / 2], vr[1][e / 2], sel);
                const uint32_t b1 = __byte_perm(vr[2][e / 2], vr[3][e / 2], sel);
                dl_mma16816<false>(acc[step * EV + e], pa, b0, b1);
            }
        }
    }
    dl_cp_async_wait<0>();
    __syncthreads();

    /* combine the 4 warps: same running max, so sums add */
    dl_mma_rows_quad_sum(dsum);
    float *red = (float *)smem; /* [4 warps][16 rows][D + 1] */
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = g + 8 * (i >> 1), col = 2 * c + (i & 1);
            const int dd = (n / EV) * 8 * EV + col * EV + (n % EV);
            red[(warp * 16 + row) * (D + 1) + dd] = acc[n][i];
        }
    if (c == 0) {
        red[(warp * 16 + g) * (D + 1) + D] = dsum[0];
        red[(warp * 16 + g + 8) * (D + 1) + D] = dsum[1];
        if (warp == 0) { sMax[g] = m[0]; sMax[g + 8] = m[1]; } /* m is the same in every warp */
    }
    __syncthreads();
    for (int i = tid; i < G * D; i += kThreads) {
        const int row = i / D, dd = i % D;
        float o = 0.0f, den = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; w++) {
            o += red[(w * 16 + row) * (D + 1) + dd];
            den += red[(w * 16 + row) * (D + 1) + D];
        }
        dl_out_o_row(a, b, kvh * G + row, split)[dd] = o / den * vs_b;
    }
    if (tid < G) {
        float den = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; w++) den += red[(w * 16 + tid) * (D + 1) + D];
        *dl_out_lse(a, b, kvh * G + tid, split) = sMax[tid] + logf(den);
    }
}

template <bool FAST> static int dispatch_mma(const dl_gpu_args *a)
{
    const char *who = FAST ? "decode_mma.cu, fast" : "decode_mma.cu, cast";
    return dl_dispatch<DL_KV_ALL>(a, !FAST, who, [&](auto s) {
        constexpr int D = decltype(s)::D;
        constexpr dl_dtype KV = decltype(s)::KV;
        return dl_launch_split_kv<mma_decode_kernel<D, KV, FAST>>(a, kThreads, mma_shape<D, KV>::SMEM, kTile);
    });
}

} // namespace

extern "C" int dl_launch_bf16_cast_mma(const dl_gpu_args *a) { return dispatch_mma<false>(a); }
extern "C" int dl_launch_bf16_fast_mma(const dl_gpu_args *a) { return dispatch_mma<true>(a); }

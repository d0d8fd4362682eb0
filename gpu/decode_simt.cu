/* decode_simt.cu - CUDA-core (SIMT) paged decode attention in FP32: the
 * variants fp32-cast-simt and fp32-fast-simt. Golden model: fp32.
 *
 * What it is: the shape of the reference system's CUDA-core decode. One CTA per
 * (request, KV head, split chunk); raw K/V tiles of T tokens are streamed into
 * shared memory by a 4-stage cp.async pipeline (read from DRAM once per GQA
 * group); threads are laid out [tz token lane][ty query head][tx head-dim
 * lane], each thread owning 16 bytes of a row (VEC elements). Every query head
 * of the group converts the same K/V elements again from shared memory, in
 * FP32, and keeps its own online softmax (scores in log2 units via exp2); the
 * token lanes are merged at the end, split chunks by gpu/runtime.cu.
 * Scales: k_scale folds into the score scale, v_scale into the output.
 * Registers decide its speed on MHA: at 256 threads (G = 1, 16-bit KV, D 128)
 * 77 registers give 3 CTAs per SM; 86 or more give 2, and llama-13B bf16 went
 * from 328 to 388 us on the H200 (2026-11-30) when a change added 11 of them.
 * Check `-Xptxas -v` after every edit.
 * Why it is over 2x slower than the tensor-core variants at group 4 (155 vs 65 us
 * on llama3-8B e4m3, H200, 2026-11-30): inherent to the shape it models - every
 * query head re-reads and re-converts each K/V element from shared memory, so
 * instruction issue, not DRAM, bounds it; at group 1 it reaches 91 % of the read
 * peak like the tensor-core kernel (gpu/NOTES.md).
 *
 * Sibling difference: fp32-cast-simt converts each FP8 code on its own
 * (fp8 -> half -> float); fp32-fast-simt replaces only that conversion with the
 * four-at-a-time bit trick (template parameter FAST, gpu/dl_dequant.cuh).
 * Hypothesis (mission E3/E6): is the per-element cast what makes the CUDA-core
 * kernel slow for GQA with an FP8 cache, and would the fast dequant fix it?
 * Run: decodelab run FILE.h5 --variants 'fp32-*-simt' --time */
#include "dl_cuda.cuh"
#include "dl_dequant.cuh"
#include "dl_paged.cuh"

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
#ifndef DL_SIMT_STAGES
#define DL_SIMT_STAGES 4 /* cp.async pipeline depth (tuning knob) */
#endif
#ifndef DL_SIMT_TILE_BYTES
#define DL_SIMT_TILE_BYTES 8192 /* bytes of K (and of V) per tile (tuning knob) */
#endif
constexpr int kStages = DL_SIMT_STAGES;

template <int D, dl_dtype KV> struct simt_shape {
    static constexpr int ES = dl_kv_size<KV>::value;
    static constexpr int VEC = 16 / ES;       /* elements per thread per row: 16 bytes */
    static constexpr int BDX = D / VEC;       /* threads per row */
    static constexpr int ROWB = D * ES;       /* bytes per K/V row */
    static constexpr int T = DL_SIMT_TILE_BYTES / ROWB; /* tokens per tile */
    static constexpr int PIPE_BYTES = kStages * 2 * T * ROWB;
};

/* Threads per CTA for group size G: BDX * G * TL, TL a power of two. */
template <int D, dl_dtype KV> static int simt_token_lanes(int G)
{
    int per = simt_shape<D, KV>::BDX * G, tl = 1;
    while (tl * 2 * per <= 256) tl *= 2;
    return tl;
}
template <int D, dl_dtype KV> static size_t simt_smem_bytes(int G, int nthreads)
{
    using S = simt_shape<D, KV>;
    size_t pipe = (size_t)S::PIPE_BYTES + (size_t)G * S::T * sizeof(float);
    size_t merge = (size_t)(nthreads / S::BDX) * (D + 2) * sizeof(float);
    return pipe > merge ? pipe : merge;
}

template <int D, dl_dtype KV, bool FAST>
__global__ void __launch_bounds__(512, 1) simt_decode_kernel(const dl_gpu_args a, int chunk)
{
    using S = simt_shape<D, KV>;
    constexpr int VEC = S::VEC, BDX = S::BDX, T = S::T, ROWB = S::ROWB;
    extern __shared__ __align__(16) uint8_t smem[];
    uint8_t *sK = smem, *sV = smem + kStages * T * ROWB;
    float *sS = (float *)(smem + S::PIPE_BYTES); /* [G][T] log2-scaled scores */

    const int G = a.num_qo_heads / a.num_kv_heads;
    const int tid = threadIdx.x, nthreads = blockDim.x;
    const int tx = tid % BDX, ty = (tid / BDX) % G, tz = tid / (BDX * G), TL = nthreads / (BDX * G);
    const int split = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    const int head = kvh * G + ty;
    const int len = dl_seq_len(a, b);
    const int start = split * chunk, end = min(len, start + chunk);

    if (start >= end) { /* empty chunk of a split: o = 0, lse = -inf */
        if (tz == 0) {
            float *o = dl_out_o_row(a, b, head, split);
            for (int i = 0; i < VEC; i++) o[tx * VEC + i] = 0.0f;
            if (tx == 0) *dl_out_lse(a, b, head, split) = -INFINITY;
        }
        return;
    }

    constexpr float bias = dl_deq_bias<KV, FAST>();
    const float qk_scale = a.sm_scale * a.k_scale[kvh] * bias * kLog2e;
    const float v_out_scale = a.v_scale[kvh] * bias;
    float q[VEC], o[VEC];
#pragma unroll
    for (int i = 0; i < VEC; i++) {
        q[i] = dl_load_q(a.q, ((size_t)b * a.num_qo_heads + head) * D + tx * VEC + i, a.q_dtype);
        o[i] = 0.0f;
    }
    float m = -INFINITY, d = 0.0f;

    const int32_t *pages = a.kv_indices + a.kv_indptr[b];
    const int ntiles = (end - start + T - 1) / T;
    /* nthreads > 128 always (see simt_token_lanes): ceil(chunks / 129) per thread cover a tile */
    dl_tile_loader<ROWB, T, (T * ROWB / 16 + 128) / 129, 0, 0> ld(a.page_size);
#pragma unroll
    for (int s = 0; s < kStages - 1; s++) {
        if (s < ntiles) {
            ld.fetch(a, pages, start + s * T, min(T, end - start - s * T), tid, nthreads);
            ld.issue(a, kvh, sK + s * T * ROWB, sV + s * T * ROWB, tid, nthreads);
        }
        dl_cp_async_commit();
    }
    if (kStages - 1 < ntiles)
        ld.fetch(a, pages, start + (kStages - 1) * T, min(T, end - start - (kStages - 1) * T), tid, nthreads);

    for (int it = 0; it < ntiles; it++) {
        dl_cp_async_wait<kStages - 2>();
        __syncthreads();
        {
            const int nt = it + kStages - 1, st = nt % kStages;
            if (nt < ntiles) ld.issue(a, kvh, sK + st * T * ROWB, sV + st * T * ROWB, tid, nthreads);
            dl_cp_async_commit();
            if (nt + 1 < ntiles) ld.fetch(a, pages, start + (nt + 1) * T, min(T, end - start - (nt + 1) * T), tid, nthreads);
        }
        const int st = it % kStages;
        const uint8_t *tk = sK + st * T * ROWB, *tv = sV + st * T * ROWB;
        const int nvalid = min(T, end - start - it * T);

        /* scores: every head converts the K row itself */
        float m_tile = -INFINITY;
        for (int j0 = 0; j0 < nvalid; j0 += TL) {
            const int j = j0 + tz;
            uint4 raw = *(const uint4 *)(tk + j * ROWB + tx * 16);
            float k[VEC];
            dl_deq_f32<KV, FAST, VEC>((const uint32_t *)&raw, k);
            float dot = 0.0f;
#pragma unroll
            for (int i = 0; i < VEC; i++) dot = fmaf(q[i], k[i], dot);
#pragma unroll
            for (int off = BDX / 2; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
            if (j < nvalid) {
                const float s2 = dot * qk_scale;
                if (tx == 0) sS[ty * T + j] = s2;
                m_tile = fmaxf(m_tile, s2);
            }
        }
        __syncwarp();
        const float m_new = fmaxf(m, m_tile);
        if (m_new != -INFINITY) {
            const float f = exp2f(m - m_new);
            d *= f;
#pragma unroll
            for (int i = 0; i < VEC; i++) o[i] *= f;
            m = m_new;
        }
        /* P*V: every head converts the V row itself */
        for (int j = tz; j < nvalid; j += TL) {
            const float p = exp2f(sS[ty * T + j] - m);
            d += p;
            uint4 raw = *(const uint4 *)(tv + j * ROWB + tx * 16);
            float v[VEC];
            dl_deq_f32<KV, FAST, VEC>((const uint32_t *)&raw, v);
#pragma unroll
            for (int i = 0; i < VEC; i++) o[i] = fmaf(p, v[i], o[i]);
        }
    }
    dl_cp_async_wait<0>();
    __syncthreads();

    /* merge the TL token lanes of each head */
    float *red = (float *)smem; /* [TL][G][D + 2] */
    float *mine = red + (size_t)(tz * G + ty) * (D + 2);
#pragma unroll
    for (int i = 0; i < VEC; i++) mine[tx * VEC + i] = o[i];
    if (tx == 0) { mine[D] = m; mine[D + 1] = d; }
    __syncthreads();
    if (tz != 0) return;
    float M = -INFINITY;
    for (int z = 0; z < TL; z++) M = fmaxf(M, red[(size_t)(z * G + ty) * (D + 2) + D]);
    float acc[VEC], dsum = 0.0f;
#pragma unroll
    for (int i = 0; i < VEC; i++) acc[i] = 0.0f;
    for (int z = 0; z < TL; z++) {
        const float *r = red + (size_t)(z * G + ty) * (D + 2);
        const float w = dl_state_weight(r[D], M);
        dsum += r[D + 1] * w;
#pragma unroll
        for (int i = 0; i < VEC; i++) acc[i] += r[tx * VEC + i] * w;
    }
    float *out = dl_out_o_row(a, b, head, split);
    const float inv = v_out_scale / dsum;
#pragma unroll
    for (int i = 0; i < VEC; i++) out[tx * VEC + i] = acc[i] * inv;
    if (tx == 0) *dl_out_lse(a, b, head, split) = (M + log2f(dsum)) * kLn2;
}

template <int D, dl_dtype KV, bool FAST> static int launch_simt(const dl_gpu_args *a)
{
    const int G = a->num_qo_heads / a->num_kv_heads;
    const int nthreads = simt_shape<D, KV>::BDX * G * simt_token_lanes<D, KV>(G);
    const size_t smem = simt_smem_bytes<D, KV>(G, nthreads);
    static size_t smem_set = 0; /* raise the dynamic limit once per instantiation */
    if (smem > smem_set) {
        DL_CUDA_CHECK(cudaFuncSetAttribute(simt_decode_kernel<D, KV, FAST>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        smem_set = smem;
    }
    const int splits = a->num_splits < 1 ? 1 : a->num_splits;
    const int chunk = dl_chunk_tokens(a, simt_shape<D, KV>::T);
    dim3 grid(splits, a->num_kv_heads, a->batch_size);
    simt_decode_kernel<D, KV, FAST><<<grid, nthreads, smem, (cudaStream_t)a->stream>>>(*a, chunk);
    DL_CUDA_CHECK_LAUNCH();
    if (splits > 1) DL_TRY(dl_gpu_launch_merge(a));
    return 0;
}

template <bool FAST> static int dispatch_simt(const dl_gpu_args *a)
{
#define DL_SIMT_D(KV)                                                         \
    switch (a->head_dim) {                                                    \
    case 64: return launch_simt<64, KV, FAST>(a);                             \
    case 128: return launch_simt<128, KV, FAST>(a);                           \
    case 256: return launch_simt<256, KV, FAST>(a);                           \
    default: break;                                                           \
    }                                                                         \
    break;
    switch (a->kv_dtype) {
    case DL_E4M3: DL_SIMT_D(DL_E4M3)
    case DL_E5M2: DL_SIMT_D(DL_E5M2)
    case DL_F16: if (!FAST) { DL_SIMT_D(DL_F16) } break;
    case DL_BF16: if (!FAST) { DL_SIMT_D(DL_BF16) } break;
    default: break;
    }
#undef DL_SIMT_D
    return dl_fail("decode_simt.cu: no kernel for head_dim=%d kv=%s fast=%d", a->head_dim,
                   dl_dtype_name(a->kv_dtype), (int)FAST);
}

} // namespace

extern "C" int dl_launch_fp32_cast_simt(const dl_gpu_args *a) { return dispatch_simt<false>(a); }
extern "C" int dl_launch_fp32_fast_simt(const dl_gpu_args *a) { return dispatch_simt<true>(a); }

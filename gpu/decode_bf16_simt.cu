/* decode_bf16_simt.cu - CUDA-core (SIMT) paged decode attention computing the
 * q.k products in BF16: the variants bf16-cast-simt and bf16-fast-simt.
 * Golden model: bf16simt (ref/dl_ref.c reproduces the BF16 dot bit for bit).
 *
 * What it is: the thread layout and cp.async pipeline of decode_simt.cu
 * ([tz token lane][ty query head][tx head-dim lane], 16 bytes of a K/V row per
 * lane, every query head converting the same row again), with the arithmetic
 * of a BF16 CUDA-core kernel: Q and decode(code) rounded to BF16; each lane's
 * products in runs of 8 dims through packed fma.rn.bf16x2 (one bf16x2
 * accumulator per run, starting at +0: even dims in the low half, odd in the
 * high half, one BF16 rounding per FMA); then FP32 where a real kernel keeps
 * it: run halves added as float, the cross-lane butterfly (shfl_xor), the
 * scores s = (dot * k_scale) * sm_scale, the online softmax (expf, natural
 * units) and P*V (FMA on the BF16 values of V); v_scale at the output.
 *
 * Sibling difference: bf16-cast-simt converts each FP8 code on its own
 * (fp8 -> half -> float -> bf16, exact); bf16-fast-simt converts four at a time
 * with the bit trick straight into BF16: byte permute, sign mask, exponent +
 * mantissa shifted right by 4 (e4m3) or 3 (e5m2), then one bf16x2 FMA by
 * 2^120 (2^112) to undo the bias difference (exact, subnormals included; wrong
 * on NaN/Inf codes like every bit trick). 16-bit caches have no dequant (the
 * fast variant SKIPs them); an f16 cache is rounded to BF16.
 * Hypothesis (mission E3): does packed BF16 arithmetic (2 products per
 * instruction) with a cheap conversion make the CUDA-core kernel competitive
 * for GQA with an FP8 cache, and what does BF16 accumulation over 8-dim runs
 * cost in accuracy (bf16simt vs exact)?
 * Why it is over 2x slower than the tensor-core variants at group 4 (162-195 vs
 * 65 us on llama3-8B e4m3, H200, 2026-11-30): the same per-head re-reading and
 * re-conversion as decode_simt.cu, plus the run-wise BF16 rounding work; it is
 * the CUDA-core shape the experiment measures, not an untuned accident.
 * Run: decodelab run FILE.h5 --variants 'bf16-*-simt' --time */
#include "dl_cuda.cuh"
#include "dl_dequant.cuh"
#include "dl_paged.cuh"

namespace {

#ifndef DL_BSIMT_STAGES
#define DL_BSIMT_STAGES 4 /* cp.async pipeline depth (tuning knob) */
#endif
#ifndef DL_BSIMT_TILE_BYTES
#define DL_BSIMT_TILE_BYTES 8192 /* bytes of K (and of V) per tile (tuning knob) */
#endif
constexpr int kStages = DL_BSIMT_STAGES;

template <int D, dl_dtype KV> struct bsimt_shape {
    static constexpr int ES = dl_kv_size<KV>::value;
    static constexpr int VEC = 16 / ES;       /* elements per lane per row: 16 bytes */
    static constexpr int W2 = VEC / 2;        /* bf16x2 words per lane */
    static constexpr int BDX = D / VEC;       /* lanes per row */
    static constexpr int ROWB = D * ES;
    static constexpr int T = DL_BSIMT_TILE_BYTES / ROWB;
    static constexpr int PIPE_BYTES = kStages * 2 * T * ROWB;
};

template <int D, dl_dtype KV> static int bsimt_token_lanes(int G)
{
    int per = bsimt_shape<D, KV>::BDX * G, tl = 1;
    while (tl * 2 * per <= 256) tl *= 2;
    return tl;
}
template <int D, dl_dtype KV> static size_t bsimt_smem_bytes(int G, int nthreads)
{
    using S = bsimt_shape<D, KV>;
    size_t pipe = (size_t)S::PIPE_BYTES + (size_t)G * S::T * sizeof(float);
    size_t merge = (size_t)(nthreads / S::BDX) * (D + 2) * sizeof(float);
    return pipe > merge ? pipe : merge;
}

__device__ __forceinline__ uint32_t fma_bf16x2(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

/* Four fp8 codes (word w) -> two bf16x2 words of decode(code), by the bit trick. */
template <dl_dtype KV> __device__ __forceinline__ void fast_fp8x4_bf16(uint32_t w, uint32_t &b01, uint32_t &b23)
{
    constexpr int SH = KV == DL_E4M3 ? 4 : 3;                    /* 8 - exponent bits */
    constexpr uint32_t BIAS = KV == DL_E4M3 ? 0x7B807B80u : 0x77807780u; /* 2^120 / 2^112 in bf16x2 */
    uint32_t a = __byte_perm(w, 0u, 0x1404u), b = __byte_perm(w, 0u, 0x3424u);
    a = (a & 0x80008000u) | ((a & 0x7F007F00u) >> SH);
    b = (b & 0x80008000u) | ((b & 0x7F007F00u) >> SH);
    b01 = fma_bf16x2(a, BIAS, 0x80008000u); /* + (-0): keeps the sign of zero */
    b23 = fma_bf16x2(b, BIAS, 0x80008000u);
}

/* One lane's 16 stored bytes -> W2 bf16x2 words (element 2i low, 2i+1 high). */
template <dl_dtype KV, bool FAST, int W2> __device__ __forceinline__ void to_bf16x2(const uint4 &raw, uint32_t *out)
{
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
    if constexpr (KV == DL_E4M3 || KV == DL_E5M2) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            if constexpr (FAST) {
                fast_fp8x4_bf16<KV>(w[j], out[2 * j], out[2 * j + 1]);
            } else {
                float f[4];
#pragma unroll
                for (int i = 0; i < 4; i++) f[i] = dl_cast_fp8<KV>((w[j] >> (8 * i)) & 0xFFu);
                out[2 * j] = dl_pack_bf16x2(f[0], f[1]);
                out[2 * j + 1] = dl_pack_bf16x2(f[2], f[3]);
            }
        }
    } else if constexpr (KV == DL_F16) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float2 x = dl_h2_bits_to_f32(w[j]);
            out[j] = dl_pack_bf16x2(x.x, x.y);
        }
    } else {
#pragma unroll
        for (int j = 0; j < 4; j++) out[j] = w[j];
    }
}

template <int D, dl_dtype KV, bool FAST>
__global__ void __launch_bounds__(512, 1) bf16_simt_decode_kernel(const dl_gpu_args a, int chunk)
{
    using S = bsimt_shape<D, KV>;
    constexpr int VEC = S::VEC, W2 = S::W2, BDX = S::BDX, T = S::T, ROWB = S::ROWB;
    extern __shared__ __align__(16) uint8_t smem[];
    uint8_t *sK = smem, *sV = smem + kStages * T * ROWB;
    float *sS = (float *)(smem + S::PIPE_BYTES); /* [G][T] scores */

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

    const float ks = a.k_scale[kvh], sm = a.sm_scale;
    uint32_t q2[W2];
    float o[VEC];
#pragma unroll
    for (int i = 0; i < W2; i++) {
        const size_t qi = ((size_t)b * a.num_qo_heads + head) * D + tx * VEC + 2 * i;
        q2[i] = dl_pack_bf16x2(dl_load_q(a.q, qi, a.q_dtype), dl_load_q(a.q, qi + 1, a.q_dtype));
    }
#pragma unroll
    for (int i = 0; i < VEC; i++) o[i] = 0.0f;
    float m = -INFINITY, d = 0.0f;

    const int32_t *pages = a.kv_indices + a.kv_indptr[b];
    const int ntiles = (end - start + T - 1) / T;
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

        /* scores: BF16 runs of 8 dims, FP32 across runs and lanes */
        float m_tile = -INFINITY;
        for (int j0 = 0; j0 < nvalid; j0 += TL) {
            const int j = j0 + tz;
            const uint4 raw = *(const uint4 *)(tk + j * ROWB + tx * 16);
            uint32_t k2[W2];
            to_bf16x2<KV, FAST, W2>(raw, k2);
            float dot = 0.0f;
#pragma unroll
            for (int r = 0; r < W2 / 4; r++) {
                uint32_t acc = 0u;
#pragma unroll
                for (int i = 0; i < 4; i++) acc = fma_bf16x2(q2[4 * r + i], k2[4 * r + i], acc);
                const float lo = __uint_as_float(acc << 16), hi = __uint_as_float(acc & 0xFFFF0000u);
                dot = __fadd_rn(dot, __fadd_rn(lo, hi));
            }
#pragma unroll
            for (int off = BDX / 2; off > 0; off /= 2) dot = __fadd_rn(dot, __shfl_xor_sync(0xffffffffu, dot, off));
            if (j < nvalid) {
                const float s = __fmul_rn(__fmul_rn(dot, ks), sm);
                if (tx == 0) sS[ty * T + j] = s;
                m_tile = fmaxf(m_tile, s);
            }
        }
        __syncwarp();
        const float m_new = fmaxf(m, m_tile);
        if (m_new != -INFINITY) {
            const float f = m == -INFINITY ? 0.0f : expf(m - m_new);
            d *= f;
#pragma unroll
            for (int i = 0; i < VEC; i++) o[i] *= f;
            m = m_new;
        }
        /* P*V in FP32 on the BF16 values of V */
        for (int j = tz; j < nvalid; j += TL) {
            const float p = expf(sS[ty * T + j] - m);
            d += p;
            const uint4 raw = *(const uint4 *)(tv + j * ROWB + tx * 16);
            uint32_t v2[W2];
            to_bf16x2<KV, FAST, W2>(raw, v2);
#pragma unroll
            for (int i = 0; i < W2; i++) {
                o[2 * i] = fmaf(p, __uint_as_float(v2[i] << 16), o[2 * i]);
                o[2 * i + 1] = fmaf(p, __uint_as_float(v2[i] & 0xFFFF0000u), o[2 * i + 1]);
            }
        }
    }
    dl_cp_async_wait<0>();
    __syncthreads();

    /* merge the TL token lanes of each head (natural-log states) */
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
        const float w = r[D] == -INFINITY ? 0.0f : expf(r[D] - M);
        dsum += r[D + 1] * w;
#pragma unroll
        for (int i = 0; i < VEC; i++) acc[i] += r[tx * VEC + i] * w;
    }
    float *out = dl_out_o_row(a, b, head, split);
    const float vs = a.v_scale[kvh];
#pragma unroll
    for (int i = 0; i < VEC; i++) out[tx * VEC + i] = acc[i] / dsum * vs;
    if (tx == 0) *dl_out_lse(a, b, head, split) = M + logf(dsum);
}

template <int D, dl_dtype KV, bool FAST> static int launch_bsimt(const dl_gpu_args *a)
{
    const int G = a->num_qo_heads / a->num_kv_heads;
    const int nthreads = bsimt_shape<D, KV>::BDX * G * bsimt_token_lanes<D, KV>(G);
    const size_t smem = bsimt_smem_bytes<D, KV>(G, nthreads);
    static size_t smem_set = 0; /* raise the dynamic limit once per instantiation */
    if (smem > smem_set) {
        DL_CUDA_CHECK(cudaFuncSetAttribute(bf16_simt_decode_kernel<D, KV, FAST>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        smem_set = smem;
    }
    const int splits = a->num_splits < 1 ? 1 : a->num_splits;
    const int chunk = dl_chunk_tokens(a, bsimt_shape<D, KV>::T);
    dim3 grid(splits, a->num_kv_heads, a->batch_size);
    bf16_simt_decode_kernel<D, KV, FAST><<<grid, nthreads, smem, (cudaStream_t)a->stream>>>(*a, chunk);
    DL_CUDA_CHECK_LAUNCH();
    if (splits > 1) DL_TRY(dl_gpu_launch_merge(a));
    return 0;
}

template <bool FAST> static int dispatch_bsimt(const dl_gpu_args *a)
{
#define DL_BSIMT_D(KV)                                                        \
    switch (a->head_dim) {                                                    \
    case 64: return launch_bsimt<64, KV, FAST>(a);                            \
    case 128: return launch_bsimt<128, KV, FAST>(a);                          \
    case 256: return launch_bsimt<256, KV, FAST>(a);                          \
    default: break;                                                           \
    }                                                                         \
    break;
    switch (a->kv_dtype) {
    case DL_E4M3: DL_BSIMT_D(DL_E4M3)
    case DL_E5M2: DL_BSIMT_D(DL_E5M2)
    case DL_F16: if (!FAST) { DL_BSIMT_D(DL_F16) } break;
    case DL_BF16: if (!FAST) { DL_BSIMT_D(DL_BF16) } break;
    default: break;
    }
#undef DL_BSIMT_D
    return dl_fail("decode_bf16_simt.cu: no kernel for head_dim=%d kv=%s fast=%d", a->head_dim,
                   dl_dtype_name(a->kv_dtype), (int)FAST);
}

} // namespace

extern "C" int dl_launch_bf16_cast_simt(const dl_gpu_args *a) { return dispatch_bsimt<false>(a); }
extern "C" int dl_launch_bf16_fast_simt(const dl_gpu_args *a) { return dispatch_bsimt<true>(a); }

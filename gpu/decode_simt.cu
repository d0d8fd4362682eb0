/* decode_simt.cu - CUDA-core (SIMT) paged decode attention: one kernel body,
 * simt_decode<ARITH, D, KV, DQ>, with the arithmetic and the dequant as policies.
 * The variants (registry rows, gpu/dl_variants.def) and their entry points:
 *   fp32-cast-simt, fp32-fast-simt   ARITH simt_fp32    simt_decode_kernel<D, KV, FAST>       model fp32
 *   bf16-cast-simt, bf16-fast-simt   ARITH simt_bf16x2  bf16_simt_decode_kernel<D, KV, FAST>  model bf16simt
 * DQ is the FP8 dequant policy of gpu/dl_dequant.cuh: DL_DQ_CAST converts each
 * FP8 code on its own (fp8 -> half -> float), DL_DQ_FAST four at a time with the
 * bit trick. Everything else is the same kernel.
 *
 * What it is: the shape of the reference system's CUDA-core decode. One CTA per
 * (request, KV head, split chunk); raw K/V tiles of T tokens are streamed into
 * shared memory by a 4-stage cp.async pipeline (read from DRAM once per GQA
 * group); threads are laid out [tz token lane][ty query head][tx head-dim
 * lane], each thread owning 16 bytes of a row (VEC elements). Every query head
 * of the group converts the same K/V elements again from shared memory and
 * keeps its own online softmax; the token lanes are merged at the end, split
 * chunks by gpu/runtime.cu.
 *  - simt_fp32: FP32 dot products, scores in log2 units (exp2), k_scale and the
 *    dequant bias folded into the score scale, v_scale into the output.
 *  - simt_bf16x2: the arithmetic of a BF16 CUDA-core kernel: Q and decode(code)
 *    rounded to BF16; each lane's products in runs of 8 dims through packed
 *    fma.rn.bf16x2 (one bf16x2 accumulator per run starting at +0, even dims in
 *    the low half, one BF16 rounding per FMA); then FP32: run halves added, the
 *    cross-lane butterfly, s = (dot * k_scale) * sm_scale, the online softmax in
 *    natural units (expf) and P*V on the BF16 values of V; v_scale at the output.
 *    The bit trick's 2^-bias cannot be folded into the scales here (the scaled
 *    BF16 products would leave the normal range and round unlike the model), so
 *    it is undone per element by one bf16x2 FMA by 2^120 (e4m3) or 2^112 (e5m2),
 *    exact. An f16 cache is rounded to BF16 (ref/dl_ref.c reproduces the BF16 dot
 *    bit for bit).
 * Registers decide its speed on MHA (3 or 2 CTAs per SM at 256 threads): check
 * `-Xptxas -v` (build/gpu/decode_simt.ptxas.txt) after every edit, and keep the
 * policies stateless (gpu/NOTES.md, "One body per kernel family"). Why it is over
 * 2x slower than the tensor-core variants at group 4: inherent to the shape it
 * models - every query head re-reads and re-converts each K/V element from shared
 * memory, so instruction issue, not DRAM, bounds it (gpu/NOTES.md).
 * Hypotheses (mission E3/E6): is the per-element cast what makes the CUDA-core
 * kernel slow for GQA with an FP8 cache, would the fast dequant fix it, and does
 * packed BF16 arithmetic (2 products per instruction) make it competitive, at
 * what cost in accuracy (bf16simt vs exact)?
 * Run: decodelab run FILE.h5 --variants '*-simt' --time */
#include "dl_cuda.cuh"
#include "dl_dequant.cuh"
#include "dl_dispatch.cuh"
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

/* ------------------------------------------------------------ arithmetic policies
 * Stateless: the kernel keeps the per-thread state in its own locals (a policy
 * object would be the same arithmetic, but it changes the order in which the
 * compiler numbers values, hence register allocation and scheduling: the policies
 * as written here keep the machine code of the two former kernel files). Per thread:
 *   qword q[NQ]           the lane's VEC elements of its query head, and o[VEC] = 0 (init)
 *   s0 = scalar0(a, kvh), s1 = scalar1(a, kvh)   two per-head scalars, read once
 * and the kernel calls
 *   dot(q, raw)           the head's q.k over one K row (raw: the lane's 16 stored
 *                         bytes), reduced over the BDX lanes of the row
 *   score(dot, s0, s1)    the score of that dot (in the units of exp())
 *   rescale(m, m_new)     the factor of o and d when the running max rises from m
 *   exp(x)                p of a score x relative to the running max
 *   v_row(raw, v)         the lane's VEC values of one V row, as P*V multiplies them
 *   weight(m, M)          the weight of a token lane's state of max m in the common max M
 *   out(acc, dsum, out_scale(a, kvh, dsum, s1))   an output element, v_scale applied
 *   lse(M, dsum)          the natural-log lse */

/* FP32: s0 = sm_scale * k_scale * bias * log2(e) (scores in log2 units, exp2), s1 =
 * v_scale * bias, bias = the dequant's dl_deq_bias (folded: never per element). */
template <int D, dl_dtype KV, int DQ> struct simt_fp32 {
    static constexpr int VEC = simt_shape<D, KV>::VEC, BDX = simt_shape<D, KV>::BDX;
    typedef float word;
    static constexpr int NW = VEC;

    __device__ __forceinline__ static float scalar0(const dl_gpu_args &a, int kvh)
    {
        return a.sm_scale * a.k_scale[kvh] * dl_deq_bias<KV, DQ>() * kLog2e;
    }
    __device__ __forceinline__ static float scalar1(const dl_gpu_args &a, int kvh)
    {
        return a.v_scale[kvh] * dl_deq_bias<KV, DQ>();
    }
    __device__ __forceinline__ static void init(const dl_gpu_args &a, int b, int head, int tx, word *q, float *o)
    {
#pragma unroll
        for (int i = 0; i < VEC; i++) {
            q[i] = dl_load_q(a.q, ((size_t)b * a.num_qo_heads + head) * D + tx * VEC + i, a.q_dtype);
            o[i] = 0.0f;
        }
    }
    __device__ __forceinline__ static void row(const uint4 &raw, word *x)
    {
        dl_deq_f32<KV, DQ, VEC>((const uint32_t *)&raw, x);
    }
    __device__ __forceinline__ static float dot(const word *q, const word *k)
    {
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < VEC; i++) dot = fmaf(q[i], k[i], dot);
#pragma unroll
        for (int off = BDX / 2; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
        return dot;
    }
    __device__ __forceinline__ static float score(float dot, float s0, float s1) { return dot * s0; }
    __device__ __forceinline__ static float rescale(float m, float m_new) { return exp2f(m - m_new); }
    __device__ __forceinline__ static float exp(float x) { return exp2f(x); }
    __device__ __forceinline__ static void pv(float p, const word *v, float *o)
    {
#pragma unroll
        for (int i = 0; i < VEC; i++) o[i] = fmaf(p, v[i], o[i]);
    }
    __device__ __forceinline__ static float weight(float m, float M) { return dl_state_weight(m, M); }
    __device__ __forceinline__ static float out_scale(const dl_gpu_args &a, int kvh, float dsum, float s1)
    {
        return s1 / dsum;
    }
    __device__ __forceinline__ static float out(float acc, float dsum, float scale) { return acc * scale; }
    __device__ __forceinline__ static float lse(float M, float dsum) { return (M + log2f(dsum)) * kLn2; }
};

__device__ __forceinline__ uint32_t fma_bf16x2(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

/* BF16x2: q as bf16 pairs; s0 = k_scale, s1 = sm_scale, applied one after the other
 * in FP32 (s = (dot * k_scale) * sm_scale, as the bf16simt model); natural units
 * (expf); v_scale read at the output. */
template <int D, dl_dtype KV, int DQ> struct simt_bf16x2 {
    static constexpr int VEC = simt_shape<D, KV>::VEC, W2 = VEC / 2, BDX = simt_shape<D, KV>::BDX;
    static constexpr int BIAS = dl_bf16_bias_log2<KV, DQ>(); /* of the bit trick; 0 for the cast */
    typedef uint32_t word;
    static constexpr int NW = W2;

    __device__ __forceinline__ static float scalar0(const dl_gpu_args &a, int kvh) { return a.k_scale[kvh]; }
    __device__ __forceinline__ static float scalar1(const dl_gpu_args &a, int kvh) { return a.sm_scale; }
    __device__ __forceinline__ static void init(const dl_gpu_args &a, int b, int head, int tx, word *q2, float *o)
    {
#pragma unroll
        for (int i = 0; i < W2; i++) {
            const size_t qi = ((size_t)b * a.num_qo_heads + head) * D + tx * VEC + 2 * i;
            q2[i] = dl_pack_bf16x2(dl_load_q(a.q, qi, a.q_dtype), dl_load_q(a.q, qi + 1, a.q_dtype));
        }
#pragma unroll
        for (int i = 0; i < VEC; i++) o[i] = 0.0f;
    }
    /* one lane's 16 stored bytes -> W2 bf16x2 words of bf16(decode(code)), word by word */
    __device__ __forceinline__ static void row(const uint4 &raw, word *out)
    {
        constexpr int EPW = VEC / 4; /* elements per 32-bit word */
        const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
        for (int j = 0; j < 4; j++) dl_deq_bf16<KV, DQ, EPW>(w + j, out + j * EPW / 2);
        if constexpr (BIAS != 0) {
            constexpr uint32_t pow2 = ((uint32_t)(127 + BIAS) << 7) * 0x10001u; /* 2^BIAS as a bf16 pair */
#pragma unroll
            for (int i = 0; i < W2; i++) out[i] = fma_bf16x2(out[i], pow2, 0x80008000u); /* + (-0): keeps -0 */
        }
    }
    __device__ __forceinline__ static float dot(const word *q2, const word *k2)
    {
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
        return dot;
    }
    __device__ __forceinline__ static float score(float dot, float s0, float s1)
    {
        return __fmul_rn(__fmul_rn(dot, s0), s1);
    }
    __device__ __forceinline__ static float rescale(float m, float m_new)
    {
        return m == -INFINITY ? 0.0f : expf(m - m_new);
    }
    __device__ __forceinline__ static float exp(float x) { return expf(x); }
    __device__ __forceinline__ static void pv(float p, const word *v2, float *o)
    {
#pragma unroll
        for (int i = 0; i < W2; i++) {
            o[2 * i] = fmaf(p, __uint_as_float(v2[i] << 16), o[2 * i]);
            o[2 * i + 1] = fmaf(p, __uint_as_float(v2[i] & 0xFFFF0000u), o[2 * i + 1]);
        }
    }
    __device__ __forceinline__ static float weight(float m, float M) { return m == -INFINITY ? 0.0f : expf(m - M); }
    __device__ __forceinline__ static float out_scale(const dl_gpu_args &a, int kvh, float dsum, float s1)
    {
        return a.v_scale[kvh];
    }
    __device__ __forceinline__ static float out(float acc, float dsum, float scale) { return acc / dsum * scale; }
    __device__ __forceinline__ static float lse(float M, float dsum) { return M + logf(dsum); }
};

/* ------------------------------------------------------------ the kernel */

/* The one body; the two __global__ entry points below only name it. */
template <template <int, dl_dtype, int> class ARITH, int D, dl_dtype KV, int DQ>
__device__ __forceinline__ void simt_decode(const dl_gpu_args &a, int chunk)
{
    using S = simt_shape<D, KV>;
    constexpr int VEC = S::VEC, BDX = S::BDX, T = S::T, ROWB = S::ROWB;
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

    using AR = ARITH<D, KV, DQ>;
    const float s0 = AR::scalar0(a, kvh), s1 = AR::scalar1(a, kvh);
    typename AR::word q[AR::NW];
    float o[VEC];
    AR::init(a, b, head, tx, q, o);
    float m = -INFINITY, d = 0.0f;

    const int32_t *pages = a.kv_indices + a.kv_indptr[b];
    const int ntiles = (end - start + T - 1) / T;
    /* nthreads > 128 always (see simt_token_lanes): ceil(chunks / 129) per thread cover a tile */
    dl_tile_loader<ROWB, T, (T * ROWB / 16 + 128) / 129, 0, 0> ld(a.page_size);
    ld.template prologue<kStages>(a, pages, start, end, ntiles, kvh, sK, sV, tid, nthreads);

    for (int it = 0; it < ntiles; it++) {
        ld.template advance<kStages>(a, pages, start, end, ntiles, it, kvh, sK, sV, tid, nthreads);
        const int st = it % kStages;
        const uint8_t *tk = sK + st * T * ROWB, *tv = sV + st * T * ROWB;
        const int nvalid = min(T, end - start - it * T);

        /* scores: every head converts the K row itself */
        float m_tile = -INFINITY;
        for (int j0 = 0; j0 < nvalid; j0 += TL) {
            const int j = j0 + tz;
            const uint4 raw = *(const uint4 *)(tk + j * ROWB + tx * 16);
            typename AR::word k[AR::NW];
            AR::row(raw, k);
            const float dot = AR::dot(q, k);
            if (j < nvalid) {
                const float s = AR::score(dot, s0, s1);
                if (tx == 0) sS[ty * T + j] = s;
                m_tile = fmaxf(m_tile, s);
            }
        }
        __syncwarp();
        const float m_new = fmaxf(m, m_tile);
        if (m_new != -INFINITY) {
            const float f = AR::rescale(m, m_new);
            d *= f;
#pragma unroll
            for (int i = 0; i < VEC; i++) o[i] *= f;
            m = m_new;
        }
        /* P*V: every head converts the V row itself */
        for (int j = tz; j < nvalid; j += TL) {
            const float p = AR::exp(sS[ty * T + j] - m);
            d += p;
            const uint4 raw = *(const uint4 *)(tv + j * ROWB + tx * 16);
            typename AR::word v[AR::NW];
            AR::row(raw, v);
            AR::pv(p, v, o);
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
        const float w = AR::weight(r[D], M);
        dsum += r[D + 1] * w;
#pragma unroll
        for (int i = 0; i < VEC; i++) acc[i] += r[tx * VEC + i] * w;
    }
    float *out = dl_out_o_row(a, b, head, split);
    const float scale = AR::out_scale(a, kvh, dsum, s1);
#pragma unroll
    for (int i = 0; i < VEC; i++) out[tx * VEC + i] = AR::out(acc[i], dsum, scale);
    if (tx == 0) *dl_out_lse(a, b, head, split) = AR::lse(M, dsum);
}

/* The entry points, one per arithmetic: they keep the kernel names of the census and
 * results tables (and of the registry's kernel globs) from before the two CUDA-core
 * files became one; FAST is the dequant policy (DL_DQ_FAST, else DL_DQ_CAST). */
template <int D, dl_dtype KV, bool FAST>
__global__ void __launch_bounds__(512, 1) simt_decode_kernel(const dl_gpu_args a, int chunk)
{
    simt_decode<simt_fp32, D, KV, FAST ? DL_DQ_FAST : DL_DQ_CAST>(a, chunk);
}
template <int D, dl_dtype KV, bool FAST>
__global__ void __launch_bounds__(512, 1) bf16_simt_decode_kernel(const dl_gpu_args a, int chunk)
{
    simt_decode<simt_bf16x2, D, KV, FAST ? DL_DQ_FAST : DL_DQ_CAST>(a, chunk);
}

template <bool BF16, bool FAST> static int dispatch_simt(const dl_gpu_args *a)
{
    const char *who = BF16 ? (FAST ? "decode_simt.cu, bf16 fast" : "decode_simt.cu, bf16 cast")
                           : (FAST ? "decode_simt.cu, fp32 fast" : "decode_simt.cu, fp32 cast");
    return dl_dispatch<DL_KV_ALL>(a, !FAST, who, [&](auto s) {
        constexpr int D = decltype(s)::D;
        constexpr dl_dtype KV = decltype(s)::KV;
        const int G = a->num_qo_heads / a->num_kv_heads;
        const int nthreads = simt_shape<D, KV>::BDX * G * simt_token_lanes<D, KV>(G);
        constexpr auto kernel = BF16 ? bf16_simt_decode_kernel<D, KV, FAST> : simt_decode_kernel<D, KV, FAST>;
        return dl_launch_split_kv<kernel>(a, nthreads, simt_smem_bytes<D, KV>(G, nthreads), simt_shape<D, KV>::T);
    });
}

} // namespace

extern "C" int dl_launch_fp32_cast_simt(const dl_gpu_args *a) { return dispatch_simt<false, false>(a); }
extern "C" int dl_launch_fp32_fast_simt(const dl_gpu_args *a) { return dispatch_simt<false, true>(a); }
extern "C" int dl_launch_bf16_cast_simt(const dl_gpu_args *a) { return dispatch_simt<true, false>(a); }
extern "C" int dl_launch_bf16_fast_simt(const dl_gpu_args *a) { return dispatch_simt<true, true>(a); }

/* dl_paged.cuh - the paged-KV walk shared by the cp.async kernels: copy one tile
 * of T tokens of one KV head (K and V rows of D elements, ROWB bytes each) from
 * the CSR page table into shared memory with 16-byte cp.async, and the online-
 * softmax state merge used at the end of a CTA and by the split-KV merge.
 *
 * Addressing: token t of a request lives on page pages[t / page_size], slot
 * t % page_size; its row for KV head h starts at element
 *   NHD: ((page * page_size + slot) * Hkv + h) * D
 *   HND: ((page * Hkv + h) * page_size + slot) * D
 * so either way one row is D contiguous elements; k_cache and v_cache share the
 * offset. Rows at or past nvalid are zero-filled (never read from memory), so a
 * kernel may multiply them by p = 0 without meeting the poison in unused slots.
 *
 * The loader also runs the multi-stage pipeline (prologue(), advance()) of the
 * cp.async kernels: decode_simt.cu, decode_mma.cu, decode_fp8_mma.cu.
 * Tried and dropped: page ids from a shared-memory window loaded once per CTA
 * instead of the global loads one tile ahead (no gain, and its registers cost the
 * SIMT kernel its third CTA per SM: gpu/NOTES.md, log #5). */
#ifndef DL_PAGED_CUH
#define DL_PAGED_CUH

#include "dl_cuda.cuh"

/* Shared-memory placement of 16-byte chunk ch of tile row r (rows of ROWB
 * bytes, no padding). SWZ 0: plain. SWZ 1 (the MMA kernel's K): rows r and r+1
 * land in different 64-byte halves of a 128-byte bank window. SWZ 2 (its V):
 * rows 0,2,4,6 (mod 8) land in distinct 32-byte (16 when rows are 64 bytes)
 * bank groups. Both XOR chunk bits inside an aligned window, so a row stays a
 * permutation of itself. */
template <int ROWB, int SWZ> __device__ __forceinline__ int dl_swz(int r, int ch)
{
    constexpr int CPR = ROWB / 16;
    if constexpr (SWZ == 1 && CPR >= 8) ch ^= (r & 1) << 2;
    if constexpr (SWZ == 2 && CPR >= 8) ch ^= ((r >> 1) & 3) << 1;
    if constexpr (SWZ == 2 && CPR == 4) ch ^= (r >> 1) & 3;
    return r * ROWB + ch * 16;
}

/* Loader of one tile of T tokens. Thread tid owns chunks i = tid + k*nthreads
 * (k < NPT, chunk-major so a warp's copies are coalesced). fetch() reads the
 * page ids of the thread's rows into registers one tile ahead, so the
 * dependent page-table load is off the critical path; issue() starts the
 * cp.async copies of the tile whose ids were fetched. */
template <int ROWB, int T, int NPT, int KSWZ, int VSWZ> struct dl_tile_loader {
    static constexpr int CPR = ROWB / 16, CHUNKS = T * CPR;
    int32_t pg[NPT], sl[NPT]; /* page id (-1: zero fill) and slot of each owned chunk's token */
    uint32_t magic;           /* t / page_size = umulhi(t, magic), exact for t < 2^32 / page_size */

    __device__ __forceinline__ explicit dl_tile_loader(int page_size)
        : magic(page_size == 1 ? 0u : 0xFFFFFFFFu / (uint32_t)page_size + 1u) {}

    __device__ __forceinline__ void fetch(const dl_gpu_args &a, const int32_t *pages, int tile_base, int nvalid,
                                          int tid, int nthreads)
    {
        const int ps = a.page_size;
#pragma unroll
        for (int k = 0; k < NPT; k++) {
            const int i = tid + k * nthreads, row = i / CPR;
            const uint32_t t = (uint32_t)(tile_base + row);
            const int pi = ps == 1 ? (int)t : (int)__umulhi(t, magic);
            sl[k] = (int)t - pi * ps;
            pg[k] = (i < CHUNKS && row < nvalid) ? pages[pi] : -1;
        }
    }
    __device__ __forceinline__ void issue(const dl_gpu_args &a, int head, uint8_t *sK, uint8_t *sV, int tid,
                                          int nthreads) const
    {
        const int ps = a.page_size, H = a.num_kv_heads;
        const bool nhd = a.kv_layout == DL_NHD;
        const uint8_t *gk = (const uint8_t *)a.k_cache, *gv = (const uint8_t *)a.v_cache;
#pragma unroll
        for (int k = 0; k < NPT; k++) {
            const int i = tid + k * nthreads;
            if (i < CHUNKS) {
                const int row = i / CPR, ch = i % CPR;
                const int p = pg[k] < 0 ? 0 : pg[k];
                const uint32_t r = nhd ? ((uint32_t)p * ps + sl[k]) * H + head : ((uint32_t)p * H + head) * ps + sl[k];
                const size_t off = (size_t)r * ROWB + ch * 16;
                const int bytes = pg[k] < 0 ? 0 : 16;
                dl_cp_async16(sK + dl_swz<ROWB, KSWZ>(row, ch), gk + off, bytes);
                dl_cp_async16(sV + dl_swz<ROWB, VSWZ>(row, ch), gv + off, bytes);
            }
        }
    }

    /* The S-stage pipeline over the ntiles tiles of tokens [start, end) of one request and
     * KV head, stage s at sK + s * T * ROWB (and sV + ...). prologue(): tiles 0..S-2
     * issued, one commit group each (empty past the last tile), the page ids of tile
     * S-1 fetched. */
    template <int S>
    __device__ __forceinline__ void prologue(const dl_gpu_args &a, const int32_t *pages, int start, int end, int ntiles,
                                             int head, uint8_t *sK, uint8_t *sV, int tid, int nthreads)
    {
#pragma unroll
        for (int s = 0; s < S - 1; s++) {
            if (s < ntiles) {
                fetch(a, pages, start + s * T, min(T, end - start - s * T), tid, nthreads);
                issue(a, head, sK + s * T * ROWB, sV + s * T * ROWB, tid, nthreads);
            }
            dl_cp_async_commit();
        }
        if (S - 1 < ntiles) fetch(a, pages, start + (S - 1) * T, min(T, end - start - (S - 1) * T), tid, nthreads);
    }
    /* At the top of tile it: wait until tile it has landed and every thread is done with
     * tile it - 1, then issue tile it + S - 1 into the stage that tile it - 1 used (one
     * commit group, empty past the last tile) and fetch the page ids of tile it + S. */
    template <int S>
    __device__ __forceinline__ void advance(const dl_gpu_args &a, const int32_t *pages, int start, int end, int ntiles,
                                            int it, int head, uint8_t *sK, uint8_t *sV, int tid, int nthreads)
    {
        dl_cp_async_wait<S - 2>();
        __syncthreads();
        const int nt = it + S - 1, st = nt % S;
        if (nt < ntiles) issue(a, head, sK + st * T * ROWB, sV + st * T * ROWB, tid, nthreads);
        dl_cp_async_commit();
        if (nt + 1 < ntiles) fetch(a, pages, start + (nt + 1) * T, min(T, end - start - (nt + 1) * T), tid, nthreads);
    }
};

/* Online-softmax state in base-2 units: m = running max of log2-scaled
 * scores, d = sum of 2^(s - m). Merge weight of a state into a common max M;
 * an empty state (m = -inf) weighs 0. */
__device__ __forceinline__ float dl_state_weight(float m, float M) { return m == -INFINITY ? 0.0f : exp2f(m - M); }

#endif

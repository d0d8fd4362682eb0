/* dl_paged.cuh - the paged-KV walk shared by every decode kernel: copy one tile
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
 * kernel may multiply them by p = 0 without meeting the poison in unused slots. */
#ifndef DL_PAGED_CUH
#define DL_PAGED_CUH

#include "dl_cuda.cuh"

template <int ROWB, int T, int KSTRIDE, int VSTRIDE>
__device__ __forceinline__ void dl_load_kv_tile(const dl_gpu_args &a, const int32_t *pages, int head, int tile_base,
                                                int nvalid, uint8_t *sK, uint8_t *sV, int tid, int nthreads)
{
    constexpr int CPR = ROWB / 16; /* 16-byte chunks per row */
    const int ps = a.page_size;
    const uint8_t *gk = (const uint8_t *)a.k_cache, *gv = (const uint8_t *)a.v_cache;
    for (int i = tid; i < T * CPR; i += nthreads) {
        const int row = i / CPR, ch = i % CPR;
        int64_t off = 0;
        int bytes = 0;
        if (row < nvalid) {
            const int t = tile_base + row, pi = t / ps, slot = t - pi * ps;
            const int64_t page = pages[pi];
            const int64_t r = a.kv_layout == DL_NHD ? (page * ps + slot) * a.num_kv_heads + head
                                                    : (page * a.num_kv_heads + head) * ps + slot;
            off = r * ROWB + ch * 16;
            bytes = 16;
        }
        dl_cp_async16(sK + row * KSTRIDE + ch * 16, gk + off, bytes);
        dl_cp_async16(sV + row * VSTRIDE + ch * 16, gv + off, bytes);
    }
}

/* Online-softmax state in base-2 units: m = running max of log2-scaled
 * scores, d = sum of 2^(s - m). Merge weight of a state into a common max M;
 * an empty state (m = -inf) weighs 0. */
__device__ __forceinline__ float dl_state_weight(float m, float M) { return m == -INFINITY ? 0.0f : exp2f(m - M); }

#endif

/* dl_dispatch.cuh - the one dispatch and launch layer of the decode kernels: the
 * runtime shape of a call (head dim, KV dtype, GQA group) to the compile-time
 * template arguments of a kernel, and the launch steps every family repeats.
 * Host code; included only by .cu files.
 *
 *   return dl_dispatch<DL_KV_ALL>(a, kv16, "decode_simt.cu fp32 fast", [&](auto s) {
 *       return launch<decltype(s)::D, decltype(s)::KV>(a);
 *   });
 *
 * instantiates launch<D, KV> for D in {64, 128, 256} and every KV dtype of the
 * set, and calls the one that matches a; a shape outside the set is recorded
 * with dl_fail ("<who>: no kernel for head_dim=.. kv=..") and returns -1. The
 * registry's supports() predicates keep such calls from happening. */
#ifndef DL_DISPATCH_CUH
#define DL_DISPATCH_CUH

#include <type_traits>

#include "dl_cuda.cuh"

/* The compile-time shape handed to the dispatch callback. */
template <int D_, dl_dtype KV_> struct dl_shape {
    static constexpr int D = D_;
    static constexpr dl_dtype KV = KV_;
};

/* Which KV dtypes a kernel family is compiled for: all four, or the FP8 ones (the fp8
 * tensor-core kernels). */
typedef enum { DL_KV_ALL = 0, DL_KV_FP8 } dl_kv_set;

template <dl_dtype KV, class F> static int dl_dispatch_head_dim(const dl_gpu_args *a, bool *found, F &&launch)
{
    switch (a->head_dim) {
    case 64: return launch(dl_shape<64, KV>{});
    case 128: return launch(dl_shape<128, KV>{});
    case 256: return launch(dl_shape<256, KV>{});
    default: break;
    }
    *found = false;
    return -1;
}

/* kv16: whether a 16-bit cache runs. A 16-bit cache has no dequant, so only the cast
 * variants run it (the registry SKIPs the others); the 16-bit instantiations of the
 * other dequant policies are compiled all the same (DL_KV_ALL), and test_census checks
 * that they are the cast kernels instruction for instruction. */
template <dl_kv_set KVS, class F>
static int dl_dispatch(const dl_gpu_args *a, bool kv16, const char *who, F &&launch)
{
    bool found = true;
    int rc = -1;
    switch (a->kv_dtype) {
    case DL_E4M3: rc = dl_dispatch_head_dim<DL_E4M3>(a, &found, launch); break;
    case DL_E5M2: rc = dl_dispatch_head_dim<DL_E5M2>(a, &found, launch); break;
    case DL_F16:
    case DL_BF16:
        found = false;
        if constexpr (KVS == DL_KV_ALL) {
            if (kv16) {
                found = true;
                rc = a->kv_dtype == DL_F16 ? dl_dispatch_head_dim<DL_F16>(a, &found, launch)
                                           : dl_dispatch_head_dim<DL_BF16>(a, &found, launch);
            }
        }
        break;
    default: found = false; break;
    }
    if (!found)
        return dl_fail("%s: no kernel for head_dim=%d kv=%s", who, a->head_dim, dl_dtype_name(a->kv_dtype));
    return rc;
}

/* The GQA group as a number of n8 MMA tiles (kernels with the query heads as the MMA N
 * dimension): 1 for groups up to 8, 2 up to 16. */
template <class F> static int dl_dispatch_group_n8(const dl_gpu_args *a, F &&launch)
{
    const int G = a->num_qo_heads / a->num_kv_heads;
    return G <= 8 ? launch(std::integral_constant<int, 1>{}) : launch(std::integral_constant<int, 2>{});
}

/* Raise the dynamic shared-memory limit of KERNEL to bytes, once per kernel and size. */
template <auto KERNEL> static int dl_smem_limit(size_t bytes)
{
    static size_t set = 0;
    if (bytes > set) {
        DL_CUDA_CHECK(cudaFuncSetAttribute(KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
        set = bytes;
    }
    return 0;
}

/* The launch of the split-KV kernels: a grid of (splits, KV heads, requests), the
 * kernel taking (args, chunk tokens per split), then the LSE merge when split. */
template <auto KERNEL> static int dl_launch_split_kv(const dl_gpu_args *a, int nthreads, size_t smem, int tile)
{
    DL_TRY(dl_smem_limit<KERNEL>(smem));
    const int splits = a->num_splits < 1 ? 1 : a->num_splits;
    const int chunk = dl_chunk_tokens(a, tile);
    dim3 grid(splits, a->num_kv_heads, a->batch_size);
    KERNEL<<<grid, nthreads, smem, (cudaStream_t)a->stream>>>(*a, chunk);
    DL_CUDA_CHECK_LAUNCH();
    if (splits > 1) DL_TRY(dl_gpu_launch_merge(a));
    return 0;
}

#endif

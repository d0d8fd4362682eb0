/* dl_cuda.cuh - shared device-side plumbing of the gpu/ kernels: the one CUDA
 * error macro of the library, cp.async wrappers (16-byte global->shared copies
 * with zero fill), and the internal launch helpers between the kernel files and
 * gpu/runtime.cu (the split-KV merge). Included only by .cu files. */
#ifndef DL_CUDA_CUH
#define DL_CUDA_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include "dl_gpu.h"

/* Check a CUDA runtime call; on error record "CALL failed: error (file:line)"
 * with dl_fail() and return -1 from the enclosing int function. The runtime's
 * last-error state is cleared first, so that a later variant's
 * DL_CUDA_CHECK_LAUNCH does not report this error as its own. */
#define DL_CUDA_CHECK(call)                                                                   \
    do {                                                                                      \
        cudaError_t dl_cuda_err_ = (call);                                                    \
        if (dl_cuda_err_ != cudaSuccess) {                                                    \
            (void)cudaGetLastError();                                                         \
            return dl_fail("%s failed: %s (%s:%d)", #call, cudaGetErrorString(dl_cuda_err_), \
                           __FILE__, __LINE__);                                               \
        }                                                                                     \
    } while (0)

/* After every <<<>>> launch: the launch error (bad config, missing image...). */
#define DL_CUDA_CHECK_LAUNCH() DL_CUDA_CHECK(cudaGetLastError())

/* 16-byte asynchronous copy global -> shared; src_bytes 0 writes 16 zero bytes. */
__device__ __forceinline__ void dl_cp_async16(void *smem_dst, const void *gmem_src, int src_bytes)
{
    uint32_t dst = (uint32_t)__cvta_generic_to_shared(smem_dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void dl_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void dl_cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* Sequence length of request b from the CSR page table. */
__device__ __forceinline__ int dl_seq_len(const dl_gpu_args &a, int b)
{
    int npages = a.kv_indptr[b + 1] - a.kv_indptr[b];
    return (npages - 1) * a.page_size + a.kv_last_page_len[b];
}

/* Workspace layout for num_splits S: partial o [B, Hq, S, D] float, then
 * partial lse [B, Hq, S] float (natural log; -inf marks an empty chunk). */
__device__ __forceinline__ float *dl_ws_o(const dl_gpu_args &a) { return (float *)a.workspace; }
__device__ __forceinline__ float *dl_ws_lse(const dl_gpu_args &a)
{
    return (float *)a.workspace + (size_t)a.batch_size * a.num_qo_heads * a.num_splits * a.head_dim;
}

/* Write the output of one (request, query head, chunk): final o/lse when
 * num_splits == 1, the workspace partial otherwise. o_val is normalized. */
__device__ __forceinline__ float *dl_out_o_row(const dl_gpu_args &a, int b, int h, int split)
{
    if (a.num_splits == 1) return a.o + ((size_t)b * a.num_qo_heads + h) * a.head_dim;
    return dl_ws_o(a) + (((size_t)b * a.num_qo_heads + h) * a.num_splits + split) * a.head_dim;
}
__device__ __forceinline__ float *dl_out_lse(const dl_gpu_args &a, int b, int h, int split)
{
    if (a.num_splits == 1) return a.lse + (size_t)b * a.num_qo_heads + h;
    return dl_ws_lse(a) + ((size_t)b * a.num_qo_heads + h) * a.num_splits + split;
}

/* Chunk of the sequence per split, a whole number of `tile` tokens. */
static inline int dl_chunk_tokens(const dl_gpu_args *a, int tile)
{
    int s = a->num_splits < 1 ? 1 : a->num_splits;
    int per = (a->max_seq_len + s - 1) / s;
    return (per + tile - 1) / tile * tile;
}

/* gpu/runtime.cu: enqueue the LSE merge of the split partials into a->o/lse. */
int dl_gpu_launch_merge(const dl_gpu_args *a);

/* Launch kern<<<grid, block, smem, stream>>>(args...), with programmatic stream serialization when pdl: it may
 * start before the previous kernel in the stream completes (that kernel's griddepcontrol.launch_dependents, or its
 * exit), and orders itself with griddepcontrol.wait; and in thread-block clusters of `cluster` CTAs along x when
 * cluster > 1 (grid.x a multiple of it; above 8, kern must allow non-portable sizes). Returns the launch's error. */
template <typename... P, typename... A>
static cudaError_t dl_launch_ex(void (*kern)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool pdl,
                                unsigned cluster, A... args)
{
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[2];
    unsigned n = 0;
    if (pdl) {
        attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[n].val.programmaticStreamSerializationAllowed = 1;
        n++;
    }
    if (cluster > 1) {
        attr[n].id = cudaLaunchAttributeClusterDimension;
        attr[n].val.clusterDim.x = cluster;
        attr[n].val.clusterDim.y = 1;
        attr[n].val.clusterDim.z = 1;
        n++;
    }
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = n;
    return cudaLaunchKernelEx(&cfg, kern, (P)args...);
}

#endif

/* runtime.cu - the CUDA runtime side of gpu/: device discovery (device count,
 * SM count) and the split-KV merge kernel that combines the per-chunk partials (normalized o, natural-log
 * lse; an empty chunk has lse = -inf and weighs nothing) into the final o/lse:
 *   M = max_s lse_s,  w_s = exp(lse_s - M),  o = sum_s w_s o_s / sum_s w_s,
 *   lse = M + log(sum_s w_s).
 * The workspace size and the split heuristic are plain C in gpu/registry.c so
 * that a CPU-only build has them too. */
#include "dl_cuda.cuh"

namespace {

__global__ void merge_kernel(const dl_gpu_args a)
{
    const int bh = blockIdx.x, S = a.num_splits, D = a.head_dim;
    const float *lse = dl_ws_lse(a) + (size_t)bh * S;
    const float *po = dl_ws_o(a) + (size_t)bh * S * D;
    float M = -INFINITY;
    for (int s = 0; s < S; s++) M = fmaxf(M, lse[s]);
    float W = 0.0f;
    for (int s = 0; s < S; s++) W += lse[s] == -INFINITY ? 0.0f : expf(lse[s] - M);
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float acc = 0.0f;
        for (int s = 0; s < S; s++)
            if (lse[s] != -INFINITY) acc += expf(lse[s] - M) * po[(size_t)s * D + d];
        a.o[(size_t)bh * D + d] = W > 0.0f ? acc / W : 0.0f;
    }
    if (threadIdx.x == 0) a.lse[bh] = W > 0.0f ? M + logf(W) : -INFINITY;
}

} // namespace

int dl_gpu_launch_merge(const dl_gpu_args *a)
{
    const int blocks = a->batch_size * a->num_qo_heads;
    merge_kernel<<<blocks, 128, 0, (cudaStream_t)a->stream>>>(*a);
    DL_CUDA_CHECK_LAUNCH();
    return 0;
}

extern "C" int dl_gpu_device_count(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky-free error state */
        /* without an NVIDIA driver the runtime reports "driver version is
         * insufficient": say what that means on a machine with no GPU */
        if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice)
            dl_fail("no CUDA device: no NVIDIA driver or GPU found; cudaGetDeviceCount: %s", cudaGetErrorString(e));
        else
            dl_fail("no CUDA device: cudaGetDeviceCount: %s", cudaGetErrorString(e));
        return 0;
    }
    if (n == 0) dl_fail("no CUDA device: cudaGetDeviceCount found 0 devices");
    return n;
}

extern "C" int dl_gpu_sm_count(void)
{
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        (void)cudaGetLastError(); /* no device: leave no sticky error behind */
        return 0;
    }
    return sms;
}

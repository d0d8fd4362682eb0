/* dl_bench.cu - the harness's GPU side (see dl_bench.h): device info, NVML
 * clocks via dlopen, device memory helpers, L2 flush, CUDA event timing of one
 * launch or of a CUDA-graph replay, and the peak read bandwidth calibration
 * kernel (16-byte streaming loads over a buffer much larger than L2).
 * Timing follows NVBench: flush L2 per cold sample (a memset of 2x L2), events
 * around the launch; hot samples put a spin kernel first so launch latency is
 * hidden behind device work. */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ref/dl_common.h"
#include "dl_bench.h"

#define DL_CUDA_TRY(call)                                                                               \
    do {                                                                                                \
        cudaError_t dl_e_ = (call);                                                                     \
        if (dl_e_ != cudaSuccess)                                                                       \
            return dl_fail("%s failed: %s (%s:%d)", #call, cudaGetErrorString(dl_e_), __FILE__, __LINE__); \
    } while (0)

/* ------------------------------------------------------------ device info */

extern "C" int dl_bench_device_info(dl_device_info *info)
{
    memset(info, 0, sizeof *info);
    int dev = 0, v = 0;
    DL_CUDA_TRY(cudaGetDevice(&dev));
    info->device = dev;
    cudaDeviceProp prop;
    DL_CUDA_TRY(cudaGetDeviceProperties(&prop, dev));
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    DL_CUDA_TRY(cudaDeviceGetPCIBusId(info->pci_bus_id, (int)sizeof info->pci_bus_id, dev));
    info->cc_major = prop.major;
    info->cc_minor = prop.minor;
    DL_CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev));
    info->sm_count = v;
    DL_CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, dev));
    info->l2_bytes = v;
    DL_CUDA_TRY(cudaDeviceGetAttribute(&info->sm_clock_khz_max, cudaDevAttrClockRate, dev));
    DL_CUDA_TRY(cudaDeviceGetAttribute(&info->mem_clock_khz_max, cudaDevAttrMemoryClockRate, dev));
    DL_CUDA_TRY(cudaDeviceGetAttribute(&info->mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev));
    info->theoretical_gbps = 2.0 * info->mem_clock_khz_max * 1e3 * (info->mem_bus_bits / 8.0) / 1e9;
    size_t fr = 0, tot = 0;
    DL_CUDA_TRY(cudaMemGetInfo(&fr, &tot));
    info->free_mem = (int64_t)fr;
    info->total_mem = (int64_t)tot;
    DL_CUDA_TRY(cudaDriverGetVersion(&info->driver_version));
    DL_CUDA_TRY(cudaRuntimeGetVersion(&info->runtime_version));
    return 0;
}

/* ------------------------------------------------------------ NVML (dlopen) */

typedef int nvml_ret;
typedef void *nvml_device;
static struct {
    int tried, ok;
    char why[160];
    nvml_device dev;
    nvml_ret (*get_clock)(nvml_device, int, unsigned int *);
    const char *(*err_str)(nvml_ret);
} nvml;

enum { NVML_CLOCK_SM_ = 1, NVML_CLOCK_MEM_ = 2 };

static void nvml_open(void)
{
    if (nvml.tried) return;
    nvml.tried = 1;
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(nvml.why, sizeof nvml.why, "no NVML: dlopen libnvidia-ml.so.1 failed");
        return;
    }
    nvml_ret (*init)(void) = (nvml_ret(*)(void))dlsym(h, "nvmlInit_v2");
    nvml_ret (*by_pci)(const char *, nvml_device *) =
        (nvml_ret(*)(const char *, nvml_device *))dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
    nvml.get_clock = (nvml_ret(*)(nvml_device, int, unsigned int *))dlsym(h, "nvmlDeviceGetClockInfo");
    nvml.err_str = (const char *(*)(nvml_ret))dlsym(h, "nvmlErrorString");
    if (!init || !by_pci || !nvml.get_clock) {
        snprintf(nvml.why, sizeof nvml.why, "no NVML: symbols missing in libnvidia-ml.so.1");
        return;
    }
    nvml_ret r = init();
    if (r != 0) {
        snprintf(nvml.why, sizeof nvml.why, "no NVML: nvmlInit_v2 returned %d", r);
        return;
    }
    int dev = 0;
    char bus[32] = "";
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetPCIBusId(bus, (int)sizeof bus, dev) != cudaSuccess) {
        snprintf(nvml.why, sizeof nvml.why, "no NVML: cannot get the CUDA device's PCI bus id");
        return;
    }
    r = by_pci(bus, &nvml.dev);
    if (r != 0) {
        snprintf(nvml.why, sizeof nvml.why, "no NVML: no NVML device for PCI bus %s (%d)", bus, r);
        return;
    }
    nvml.ok = 1;
    snprintf(nvml.why, sizeof nvml.why, "nvml");
}

static int nvml_clock(int type, char *why, size_t n)
{
    nvml_open();
    if (!nvml.ok) {
        snprintf(why, n, "%s", nvml.why);
        return -1;
    }
    unsigned int mhz = 0;
    nvml_ret r = nvml.get_clock(nvml.dev, type, &mhz);
    if (r != 0) {
        snprintf(why, n, "nvmlDeviceGetClockInfo failed: %s", nvml.err_str ? nvml.err_str(r) : "?");
        return -1;
    }
    snprintf(why, n, "nvml");
    return (int)mhz;
}

extern "C" int dl_bench_sm_clock_mhz(char *why, size_t n) { return nvml_clock(NVML_CLOCK_SM_, why, n); }
extern "C" int dl_bench_mem_clock_mhz(char *why, size_t n) { return nvml_clock(NVML_CLOCK_MEM_, why, n); }

/* ------------------------------------------------------------ memory */

extern "C" int dl_dev_malloc(void **p, size_t bytes, const char *what)
{
    *p = NULL;
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        *p = NULL;
        return dl_fail("cudaMalloc of %zu bytes for %s failed: %s", bytes, what, cudaGetErrorString(e));
    }
    return 0;
}

extern "C" void dl_dev_free(void *p)
{
    if (p) cudaFree(p);
}

extern "C" int dl_dev_upload(void *dst, const void *src, size_t bytes, const char *what)
{
    /* A pageable cudaMemcpy may return before the DMA lands, and the bench
     * stream does not wait for the legacy stream: synchronize the device. */
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return dl_fail("upload of %s (%zu bytes) failed: %s", what, bytes, cudaGetErrorString(e));
    return 0;
}

extern "C" int dl_dev_download(void *dst, const void *src, size_t bytes, const char *what)
{
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return dl_fail("download of %s (%zu bytes) failed: %s", what, bytes, cudaGetErrorString(e));
    return 0;
}

extern "C" int dl_dev_poison(void *p, size_t bytes, void *stream)
{
    DL_CUDA_TRY(cudaMemsetAsync(p, 0xFF, bytes, (cudaStream_t)stream));
    DL_CUDA_TRY(cudaStreamSynchronize((cudaStream_t)stream));
    return 0;
}

extern "C" int dl_dev_check_launch(const char *what, void *stream)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return dl_fail("%s: launch failed: %s", what, cudaGetErrorString(e));
    e = cudaStreamSynchronize((cudaStream_t)stream);
    if (e != cudaSuccess) return dl_fail("%s: kernel failed: %s", what, cudaGetErrorString(e));
    return 0;
}

/* ------------------------------------------------------------ bench context */

struct dl_bench {
    cudaStream_t stream;
    cudaEvent_t start, stop;
    void *flush;
    size_t flush_bytes;
    unsigned flush_count;
    long long spin_cycles;
    cudaGraphExec_t graph_exec;
    int graph_n;
    unsigned *sink;
};

/* Keeps the GPU busy for about `cycles` SM clocks. */
__global__ void dl_spin_kernel(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

extern "C" int dl_bench_create(dl_bench **out)
{
    *out = NULL;
    dl_bench *b = (dl_bench *)calloc(1, sizeof *b);
    if (!b) return dl_fail("out of memory allocating the bench context");
    dl_device_info info;
    int rc = dl_bench_device_info(&info);
    if (!rc) {
        b->flush_bytes = (size_t)(2 * (info.l2_bytes > 0 ? info.l2_bytes : (64 << 20)));
        /* about 20 us at the peak SM clock */
        b->spin_cycles = (long long)(info.sm_clock_khz_max > 0 ? info.sm_clock_khz_max : 2000000) * 20 / 1000;
        cudaError_t e = cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking);
        if (e == cudaSuccess) e = cudaEventCreate(&b->start);
        if (e == cudaSuccess) e = cudaEventCreate(&b->stop);
        if (e == cudaSuccess) e = cudaMalloc(&b->flush, b->flush_bytes);
        if (e == cudaSuccess) e = cudaMalloc((void **)&b->sink, 64);
        if (e != cudaSuccess)
            rc = dl_fail("bench setup (stream, events, %zu-byte L2 flush buffer) failed: %s", b->flush_bytes,
                         cudaGetErrorString(e));
    }
    if (rc) {
        dl_bench_destroy(b);
        return rc;
    }
    *out = b;
    return 0;
}

extern "C" void dl_bench_destroy(dl_bench *b)
{
    if (!b) return;
    if (b->graph_exec) cudaGraphExecDestroy(b->graph_exec);
    if (b->flush) cudaFree(b->flush);
    if (b->sink) cudaFree(b->sink);
    if (b->start) cudaEventDestroy(b->start);
    if (b->stop) cudaEventDestroy(b->stop);
    if (b->stream) cudaStreamDestroy(b->stream);
    free(b);
}

extern "C" void *dl_bench_stream(dl_bench *b) { return (void *)b->stream; }
extern "C" int64_t dl_bench_flush_bytes(const dl_bench *b) { return (int64_t)b->flush_bytes; }

extern "C" int dl_bench_flush_l2(dl_bench *b)
{
    /* A different byte each time, so no pass writes what is already there. */
    int value = (int)(1 + (b->flush_count++ % 254));
    DL_CUDA_TRY(cudaMemsetAsync(b->flush, value, b->flush_bytes, b->stream));
    return 0;
}

static int before_sample(dl_bench *b, int flush)
{
    if (flush) return dl_bench_flush_l2(b);
    dl_spin_kernel<<<1, 1, 0, b->stream>>>(b->spin_cycles);
    DL_CUDA_TRY(cudaGetLastError());
    return 0;
}

static int elapsed(dl_bench *b, double *sec)
{
    DL_CUDA_TRY(cudaEventSynchronize(b->stop));
    float ms = 0;
    DL_CUDA_TRY(cudaEventElapsedTime(&ms, b->start, b->stop));
    *sec = 1e-3 * (double)ms;
    return 0;
}

extern "C" int dl_bench_time_launch(dl_bench *b, dl_launch_fn fn, const dl_gpu_args *a, int flush, double *sec)
{
    DL_TRY(before_sample(b, flush));
    DL_CUDA_TRY(cudaEventRecord(b->start, b->stream));
    DL_TRY(fn(a));
    DL_CUDA_TRY(cudaGetLastError());
    DL_CUDA_TRY(cudaEventRecord(b->stop, b->stream));
    return elapsed(b, sec);
}

extern "C" int dl_bench_graph_capture(dl_bench *b, dl_launch_fn fn, const dl_gpu_args *a, int n)
{
    if (n < 1) return dl_fail("graph: launches per replay must be >= 1, not %d", n);
    if (b->graph_exec) {
        cudaGraphExecDestroy(b->graph_exec);
        b->graph_exec = NULL;
    }
    DL_CUDA_TRY(cudaStreamSynchronize(b->stream));
    DL_CUDA_TRY(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeRelaxed));
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) rc = fn(a);
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(b->stream, &g);
    if (rc) {
        if (g) cudaGraphDestroy(g);
        return rc;
    }
    if (e != cudaSuccess) return dl_fail("graph: cudaStreamEndCapture failed: %s", cudaGetErrorString(e));
    e = cudaGraphInstantiate(&b->graph_exec, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        b->graph_exec = NULL;
        return dl_fail("graph: cudaGraphInstantiate of %d launches failed: %s", n, cudaGetErrorString(e));
    }
    b->graph_n = n;
    /* one untimed replay: uploads the graph */
    DL_CUDA_TRY(cudaGraphLaunch(b->graph_exec, b->stream));
    DL_CUDA_TRY(cudaStreamSynchronize(b->stream));
    return 0;
}

extern "C" int dl_bench_time_graph(dl_bench *b, int flush, double *sec_per_launch)
{
    if (!b->graph_exec) return dl_fail("graph: no graph captured (call dl_bench_graph_capture first)");
    DL_TRY(before_sample(b, flush));
    DL_CUDA_TRY(cudaEventRecord(b->start, b->stream));
    DL_CUDA_TRY(cudaGraphLaunch(b->graph_exec, b->stream));
    DL_CUDA_TRY(cudaEventRecord(b->stop, b->stream));
    double s = 0;
    DL_TRY(elapsed(b, &s));
    *sec_per_launch = s / b->graph_n;
    return 0;
}

/* ------------------------------------------------------------ calibration */

/* Streaming read, 16-byte loads, 8 independent loads in flight per thread.
 * The xor of everything is stored only if it equals an unlikely key, so the
 * loads cannot be removed and nothing is written in practice. */
__global__ void dl_read_bw_kernel(const uint4 *__restrict__ p, size_t n16, unsigned key, unsigned *sink)
{
    const int U = 8;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + (U - 1) * stride < n16; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = __ldcs(p + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n16; i += stride) {
        uint4 v = __ldcs(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == key) sink[0] = acc;
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, c = *(const double *)y;
    return (a > c) - (a < c);
}

extern "C" int dl_bench_peak_read(dl_bench *b, int64_t bytes, int runs, dl_peak_read *out)
{
    memset(out, 0, sizeof *out);
    if (runs < 1) return dl_fail("peak read: runs must be >= 1, not %d", runs);
    dl_device_info info;
    DL_TRY(dl_bench_device_info(&info));
    if (bytes <= 0) {
        /* 4 GiB (>= 64x L2 on Hopper): launch ramp-up and the write-back of the dirty
         * lines the L2 flush leaves behind stay well under 1 % of the time. */
        bytes = (int64_t)4 << 30;
        if (64 * info.l2_bytes > bytes) bytes = 64 * info.l2_bytes;
        if (bytes > info.free_mem / 2) bytes = info.free_mem / 2;
    }
    bytes &= ~(int64_t)15;
    if (bytes < 16) return dl_fail("peak read: buffer of %lld bytes is too small", (long long)bytes);
    void *buf = NULL;
    DL_TRY(dl_dev_malloc(&buf, (size_t)bytes, "peak-read calibration buffer"));
    double *t = (double *)calloc((size_t)runs, sizeof *t);
    int rc = t ? 0 : dl_fail("out of memory for %d timings", runs);
    /* not zeros: a fixed non-zero byte pattern */
    if (!rc && cudaMemsetAsync(buf, 0x5A, (size_t)bytes, b->stream) != cudaSuccess)
        rc = dl_fail("peak read: cudaMemsetAsync of the buffer failed");
    int threads = 256, blocks = info.sm_count * (2048 / threads);
    size_t n16 = (size_t)bytes / 16;
    for (int r = -2; !rc && r < runs; r++) {
        rc = dl_bench_flush_l2(b);
        if (!rc && cudaEventRecord(b->start, b->stream) != cudaSuccess) rc = dl_fail("peak read: event record failed");
        if (!rc) {
            dl_read_bw_kernel<<<blocks, threads, 0, b->stream>>>((const uint4 *)buf, n16, 0x9E3779B9u, b->sink);
            cudaError_t e = cudaGetLastError();
            if (e != cudaSuccess) rc = dl_fail("peak read: kernel launch failed: %s", cudaGetErrorString(e));
        }
        if (!rc && cudaEventRecord(b->stop, b->stream) != cudaSuccess) rc = dl_fail("peak read: event record failed");
        double s = 0;
        if (!rc) rc = elapsed(b, &s);
        if (!rc && r >= 0) t[r] = s;
    }
    if (!rc) {
        qsort(t, (size_t)runs, sizeof *t, cmp_d);
        out->bytes = bytes;
        out->runs = runs;
        out->min_s = t[0];
        out->max_s = t[runs - 1];
        out->median_s = (runs % 2) ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
        out->gbps = (double)bytes / out->median_s / 1e9;
        out->gbps_best = (double)bytes / out->min_s / 1e9;
    }
    free(t);
    dl_dev_free(buf);
    return rc;
}

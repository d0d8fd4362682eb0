/* dl_bench.cu - the harness's GPU side (see dl_bench.h): device info, NVML
 * clocks via dlopen, device memory helpers, L2 flush, CUDA event timing of one
 * launch or of a CUDA-graph replay, and the peak read bandwidth calibration
 * kernel (16-byte streaming loads over a buffer much larger than L2).
 * Timing follows NVBench: flush L2 per cold sample (a memset of 2x L2, or with
 * DL_FLUSH_READ a read of 4x L2), events around the launch; hot samples put a
 * spin kernel first so launch latency is hidden behind device work. Also the
 * read reference of a decode case (dl_bench_time_read: a page-table-order and
 * a contiguous read of exactly the case's KV bytes), and DL_BENCH_CARVEOUT, a diagnosis that sets the SMs'
 * shared-memory carveout between a cold sample's flush and its timed launch. */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ref/dl_common.h"
#include "dl_bench.h"
#include "dl_cuda.cuh"

/* ------------------------------------------------------------ device info */

extern "C" int dl_bench_device_info(dl_device_info *info)
{
    memset(info, 0, sizeof *info);
    int dev = 0, v = 0;
    DL_CUDA_CHECK(cudaGetDevice(&dev));
    info->device = dev;
    cudaDeviceProp prop;
    DL_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    DL_CUDA_CHECK(cudaDeviceGetPCIBusId(info->pci_bus_id, (int)sizeof info->pci_bus_id, dev));
    info->cc_major = prop.major;
    info->cc_minor = prop.minor;
    DL_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev));
    info->sm_count = v;
    DL_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, dev));
    info->l2_bytes = v;
    DL_CUDA_CHECK(cudaDeviceGetAttribute(&info->sm_clock_khz_max, cudaDevAttrClockRate, dev));
    DL_CUDA_CHECK(cudaDeviceGetAttribute(&info->mem_clock_khz_max, cudaDevAttrMemoryClockRate, dev));
    DL_CUDA_CHECK(cudaDeviceGetAttribute(&info->mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev));
    info->theoretical_gbps = 2.0 * info->mem_clock_khz_max * 1e3 * (info->mem_bus_bits / 8.0) / 1e9;
    size_t fr = 0, tot = 0;
    DL_CUDA_CHECK(cudaMemGetInfo(&fr, &tot));
    info->free_mem = (int64_t)fr;
    info->total_mem = (int64_t)tot;
    DL_CUDA_CHECK(cudaDriverGetVersion(&info->driver_version));
    DL_CUDA_CHECK(cudaRuntimeGetVersion(&info->runtime_version));
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

extern "C" int dl_dev_context_ok(void)
{
    (void)cudaGetLastError(); /* a non-sticky error of the failed call is not the context's */
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return dl_fail("the CUDA context is lost: %s", cudaGetErrorString(e));
    return 0;
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
    DL_CUDA_CHECK(cudaMemsetAsync(p, 0xFF, bytes, (cudaStream_t)stream));
    DL_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
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

/* Counters of a read self-check (dl_bench_read_check). */
struct dl_rr_check {
    unsigned long long bytes;
    unsigned xor_fold;
};

struct dl_bench {
    cudaStream_t stream;
    cudaEvent_t start, stop;
    void *flush;
    size_t flush_bytes;
    unsigned flush_count;
    dl_flush_mode flush_mode;
    void *rflush;               /* DL_FLUSH_READ: 4x L2, allocated on first use */
    size_t rflush_bytes;
    int rflush_blocks;
    int sm_count;
    int contig_blocks_per_sm[2]; /* occupancy of dl_read_contig_kernel<false/true>; 0 = not asked yet */
    long long spin_cycles;
    cudaGraphExec_t graph_exec;
    int graph_n;
    unsigned *sink;
    dl_rr_check *check;         /* dl_bench_read_check's counters, allocated on first use */
    int carveout_kb;            /* DL_BENCH_CARVEOUT: the shared memory an SM is set up for after a flush; 0 = off */
};

/* Keeps the GPU busy for about `cycles` SM clocks. */
__global__ void dl_spin_kernel(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

/* DL_BENCH_CARVEOUT=KB (diagnosis, issue 10; 0 or unset = off): after each cold sample's flush, one CTA an SM of
 * this empty kernel holding KB of shared memory, so that the timed launch finds the SMs set up for a large
 * shared-memory carveout instead of the flush's (nothing else of the sample changes; outside the events).
 * DL_BENCH_CARVEOUT_PREF (0..100, default 100) is its preferred carveout, percent of the most: 0 with a small KB is
 * the control (the same extra kernel, the SMs left with the most L1). */
__global__ void dl_carveout_kernel() {}

static int carveout_setup(dl_bench *b)
{
    int pref = 100;
    DL_TRY(dl_env_int("DL_BENCH_CARVEOUT", 0, 227, 0, "KB of shared memory a CTA", &b->carveout_kb));
    if (!b->carveout_kb) return 0;
    DL_TRY(dl_env_int("DL_BENCH_CARVEOUT_PREF", 0, 100, 100, "percent", &pref));
    DL_CUDA_CHECK(cudaFuncSetAttribute(dl_carveout_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       b->carveout_kb * 1024));
    DL_CUDA_CHECK(cudaFuncSetAttribute(dl_carveout_kernel, cudaFuncAttributePreferredSharedMemoryCarveout, pref));
    fprintf(stderr, "decodelab: DL_BENCH_CARVEOUT=%d: an empty kernel with %d KB of shared memory a CTA (carveout "
                    "preference %d %%), one CTA an SM, after every cold sample's flush (diagnosis)\n",
            b->carveout_kb, b->carveout_kb, pref);
    return 0;
}

extern "C" int dl_bench_create(dl_bench **out)
{
    *out = NULL;
    dl_bench *b = (dl_bench *)calloc(1, sizeof *b);
    if (!b) return dl_fail("out of memory allocating the bench context");
    dl_device_info info;
    int rc = dl_bench_device_info(&info);
    if (!rc) {
        b->sm_count = info.sm_count > 0 ? info.sm_count : 1;
        b->flush_mode = DL_FLUSH_WRITE;
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
    if (!rc) rc = carveout_setup(b);
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
    if (b->rflush) cudaFree(b->rflush);
    if (b->sink) cudaFree(b->sink);
    if (b->check) cudaFree(b->check);
    if (b->start) cudaEventDestroy(b->start);
    if (b->stop) cudaEventDestroy(b->stop);
    if (b->stream) cudaStreamDestroy(b->stream);
    free(b);
}

extern "C" void *dl_bench_stream(dl_bench *b) { return (void *)b->stream; }
extern "C" int64_t dl_bench_flush_bytes(const dl_bench *b)
{
    return (int64_t)(b->flush_mode == DL_FLUSH_READ ? b->rflush_bytes : b->flush_bytes);
}

/* A grid-stride read of n16 16-byte words, 8 independent loads in flight per
 * thread: ld.global.cg (CG, cached in L2 with the normal eviction priority) or
 * ld.global.cs (streaming, evict-first). The xor of everything is stored only if it
 * equals an unlikely key, so the loads cannot be removed and nothing is written in
 * practice. The body of the read flush and of the peak calibration. */
template <bool CG>
__device__ __forceinline__ void dl_stream_read(const uint4 *__restrict__ p, size_t n16, unsigned key, unsigned *sink)
{
    const int U = 8;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + (U - 1) * stride < n16; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = CG ? __ldcg(p + i + u * stride) : __ldcs(p + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n16; i += stride) {
        uint4 v = CG ? __ldcg(p + i) : __ldcs(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == key) sink[0] = acc;
}

/* The read flush: dl_stream_read with 16-byte loads, 8 in flight per
 * thread (min 4 CTAs per SM: ptxas then issues all 8 before the first use),
 * like dl_read_bw_kernel but with ld.global.cg (cached in L2 with the normal
 * eviction priority) instead of .cs: evict-first lines would mostly
 * replace one another and leave the previous contents of L2 in place. The xor
 * is stored only if it equals an unlikely key (nothing is written in practice). */
__global__ void __launch_bounds__(256, 4) dl_flush_read_kernel(const uint4 *__restrict__ p, size_t n16, unsigned key,
                                                            unsigned *sink)
{
    dl_stream_read<true>(p, n16, key, sink);
}

extern "C" int dl_bench_set_flush(dl_bench *b, dl_flush_mode mode)
{
    if (mode != DL_FLUSH_WRITE && mode != DL_FLUSH_READ) return dl_fail("L2 flush: unknown mode %d", (int)mode);
    if (mode == DL_FLUSH_READ && !b->rflush) {
        /* 4x L2: twice the write flush, since a read leaves nothing dirty to push the old lines out */
        size_t bytes = 2 * b->flush_bytes;
        int per_sm = 0;
        DL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, dl_flush_read_kernel, 256, 0));
        if (per_sm < 1) return dl_fail("L2 flush: the read-flush kernel fits no CTA on an SM");
        cudaError_t e = cudaMalloc(&b->rflush, bytes);
        if (e != cudaSuccess) {
            b->rflush = NULL;
            return dl_fail("L2 flush: cudaMalloc of the %zu-byte read-flush buffer (4x L2) failed: %s", bytes,
                           cudaGetErrorString(e));
        }
        b->rflush_bytes = bytes;
        b->rflush_blocks = per_sm * b->sm_count;
        /* a fixed non-zero pattern, written once; the dirty lines it leaves are pushed
         * out by the first read flush, before anything is timed */
        DL_CUDA_CHECK(cudaMemsetAsync(b->rflush, 0x5A, bytes, b->stream));
        DL_CUDA_CHECK(cudaStreamSynchronize(b->stream));
    }
    b->flush_mode = mode;
    return 0;
}

extern "C" dl_flush_mode dl_bench_get_flush(const dl_bench *b) { return b->flush_mode; }

extern "C" int dl_bench_flush_l2(dl_bench *b)
{
    if (b->flush_mode == DL_FLUSH_READ) {
        dl_flush_read_kernel<<<b->rflush_blocks, 256, 0, b->stream>>>((const uint4 *)b->rflush, b->rflush_bytes / 16,
                                                                      0x9E3779B9u, b->sink);
        DL_CUDA_CHECK(cudaGetLastError());
        return 0;
    }
    /* A different byte each time, so no pass writes what is already there. */
    int value = (int)(1 + (b->flush_count++ % 254));
    DL_CUDA_CHECK(cudaMemsetAsync(b->flush, value, b->flush_bytes, b->stream));
    return 0;
}

static int before_sample(dl_bench *b, int flush)
{
    if (flush) {
        DL_TRY(dl_bench_flush_l2(b));
        if (b->carveout_kb) {
            dl_carveout_kernel<<<b->sm_count, 32, (size_t)b->carveout_kb * 1024, b->stream>>>();
            DL_CUDA_CHECK(cudaGetLastError());
        }
        return 0;
    }
    dl_spin_kernel<<<1, 1, 0, b->stream>>>(b->spin_cycles);
    DL_CUDA_CHECK(cudaGetLastError());
    return 0;
}

static int elapsed(dl_bench *b, double *sec)
{
    DL_CUDA_CHECK(cudaEventSynchronize(b->stop));
    float ms = 0;
    DL_CUDA_CHECK(cudaEventElapsedTime(&ms, b->start, b->stop));
    *sec = 1e-3 * (double)ms;
    return 0;
}

extern "C" int dl_bench_time_launch(dl_bench *b, dl_launch_fn fn, const dl_gpu_args *a, int flush, double *sec)
{
    return dl_bench_time_chain(b, fn, a, 1, flush, sec);
}

extern "C" int dl_bench_time_chain(dl_bench *b, dl_launch_fn fn, const dl_gpu_args *a, int n, int flush,
                                   double *sec_per_launch)
{
    if (n < 1 || n > DL_CHAIN_MAX) return dl_fail("chain: %d layers (1 to %d)", n, DL_CHAIN_MAX);
    DL_TRY(before_sample(b, flush));
    DL_CUDA_CHECK(cudaEventRecord(b->start, b->stream));
    for (int l = 0; l < n; l++) {
        DL_TRY(fn(&a[l]));
        DL_CUDA_CHECK(cudaGetLastError());
    }
    DL_CUDA_CHECK(cudaEventRecord(b->stop, b->stream));
    double s = 0;
    DL_TRY(elapsed(b, &s));
    *sec_per_launch = s / n;
    return 0;
}

extern "C" int dl_dev_copy(void *dst, const void *src, size_t bytes, const char *what)
{
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice);
    if (e != cudaSuccess) return dl_fail("copy of %s (%zu bytes, device to device) failed: %s", what, bytes,
                                         cudaGetErrorString(e));
    return 0;
}

extern "C" int dl_bench_graph_capture(dl_bench *b, dl_launch_fn fn, const dl_gpu_args *a, int n)
{
    if (n < 1) return dl_fail("graph: launches per replay must be >= 1, not %d", n);
    if (b->graph_exec) {
        cudaGraphExecDestroy(b->graph_exec);
        b->graph_exec = NULL;
    }
    DL_CUDA_CHECK(cudaStreamSynchronize(b->stream));
    DL_CUDA_CHECK(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeRelaxed));
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
    DL_CUDA_CHECK(cudaGraphLaunch(b->graph_exec, b->stream));
    DL_CUDA_CHECK(cudaStreamSynchronize(b->stream));
    return 0;
}

extern "C" int dl_bench_time_graph(dl_bench *b, int flush, double *sec_per_launch)
{
    if (!b->graph_exec) return dl_fail("graph: no graph captured (call dl_bench_graph_capture first)");
    DL_TRY(before_sample(b, flush));
    DL_CUDA_CHECK(cudaEventRecord(b->start, b->stream));
    DL_CUDA_CHECK(cudaGraphLaunch(b->graph_exec, b->stream));
    DL_CUDA_CHECK(cudaEventRecord(b->stop, b->stream));
    double s = 0;
    DL_TRY(elapsed(b, &s));
    *sec_per_launch = s / b->graph_n;
    return 0;
}

/* ------------------------------------------------------------ calibration */

/* Streaming read (dl_stream_read with ld.global.cs), 16-byte loads, 8 independent
 * loads in flight per thread. */
__global__ void dl_read_bw_kernel(const uint4 *__restrict__ p, size_t n16, unsigned key, unsigned *sink)
{
    dl_stream_read<false>(p, n16, key, sink);
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

/* ------------------------------------------------------------ read reference */

/* 256-thread CTAs; DL_RR_U K+V load pairs per thread per round. The kernels are
 * declared with a minimum of 4 CTAs per SM: without it ptxas holds them to 32
 * registers and consumes each load before issuing the next few (2-4 in flight);
 * with it every round issues its 8 loads before the first use (see the SASS). */
enum { DL_RR_THREADS = 256, DL_RR_U = 4, DL_RR_MAX_PAGES = 1024 };
static const unsigned DL_RR_KEY = 0x9E3779B9u;

/* Loads of G bytes. */
template <int G> struct dl_rr_vec;
template <> struct dl_rr_vec<16> { typedef uint4 T; };
template <> struct dl_rr_vec<8> { typedef uint2 T; };
template <> struct dl_rr_vec<4> { typedef unsigned T; };
template <> struct dl_rr_vec<2> { typedef unsigned short T; };
template <> struct dl_rr_vec<1> { typedef unsigned char T; };

/* xor-fold of the value loaded from element i of its array: every byte x at
 * byte offset o lands at bits 8*(o % 4) (dl_run_read_sum's definition). */
__device__ __forceinline__ unsigned dl_rr_fold(uint4 v, size_t) { return v.x ^ v.y ^ v.z ^ v.w; }
__device__ __forceinline__ unsigned dl_rr_fold(uint2 v, size_t) { return v.x ^ v.y; }
__device__ __forceinline__ unsigned dl_rr_fold(unsigned v, size_t) { return v; }
__device__ __forceinline__ unsigned dl_rr_fold(unsigned short v, size_t i)
{
    return (unsigned)v << (16 * (unsigned)(i & 1));
}
__device__ __forceinline__ unsigned dl_rr_fold(unsigned char v, size_t i)
{
    return (unsigned)v << (8 * (unsigned)(i & 3));
}

template <typename T> __device__ __forceinline__ T dl_rr_zero() { return T(); }
template <> __device__ __forceinline__ uint4 dl_rr_zero<uint4>() { return make_uint4(0, 0, 0, 0); }
template <> __device__ __forceinline__ uint2 dl_rr_zero<uint2>() { return make_uint2(0, 0); }

/* n / d for n < 2^31 by a multiply-high (the divisor is the same for a whole
 * launch): mul = ceil(2^(31+l) / d), l = ceil(log2 d), q = umulhi(n, mul) >> (l-1).
 * Checked against n / d on the host for d up to 2^30. */
struct dl_fastdiv {
    unsigned d, mul, shr;
};

static dl_fastdiv dl_fastdiv_make(unsigned d)
{
    dl_fastdiv f = {d, 0, 0};
    if (d > 1) {
        unsigned l = 0;
        while ((1ull << l) < d) l++;
        unsigned long long p = 31 + l;
        f.mul = (unsigned)(((1ull << p) + d - 1) / d);
        f.shr = (unsigned)(p - 32);
    }
    return f;
}

__host__ __device__ __forceinline__ unsigned dl_fastdiv_q(unsigned n, dl_fastdiv f)
{
#ifdef __CUDA_ARCH__
    return f.d == 1 ? n : __umulhi(n, f.mul) >> f.shr;
#else
    return f.d == 1 ? n : (unsigned)(((unsigned long long)n * f.mul) >> 32) >> f.shr;
#endif
}

/* Geometry of the page-table reader, in units of G bytes. */
struct dl_rr_pages {
    const void *k, *v;
    const int32_t *indptr, *indices, *last;
    unsigned P;         /* units per page (all heads): page_size * Hkv * D * elem / G */
    dl_fastdiv fP;
    unsigned used_row;  /* units per token row of the used test: NHD Hkv*D*elem/G, HND D*elem/G */
    unsigned F;         /* HND: units per head block of a page (page_size * D*elem/G); NHD: P */
    int pages_per_cta;  /* consecutive pages of a request per CTA step (<= DL_RR_MAX_PAGES) */
};

/* Unit i (of n) of a CTA step over the pages s_page[0..): whether it is read,
 * and its offset in units of G bytes from the start of the K (= V) cache.
 * e_last: the step's index of the request's last page (else ~0u); last_units:
 * kv_last_page_len * used_row. Host-callable so that the walk can be emulated. */
__host__ __device__ __forceinline__ bool dl_rr_unit(const dl_rr_pages &p, const int32_t *s_page, unsigned n,
                                                    unsigned e_last, unsigned last_units, unsigned i, size_t *off)
{
    unsigned e = dl_fastdiv_q(i, p.fP);
    const unsigned w = i - e * p.P;
    bool in = i < n;
    if (e == e_last) in = in && (w % p.F) < last_units;
    *off = (size_t)s_page[in ? e : 0] * p.P + w;
    return in;
}

/* Page-table order: CTA (blockIdx.x = request b, blockIdx.y + k*gridDim.y =
 * group g of pages_per_cta consecutive pages of b). The group's page numbers
 * are staged in shared memory; then the group's units i in [0, pages * P) are
 * read in rounds of DL_RR_U per thread (coalesced: consecutive threads read
 * consecutive units of a page), K and V at the same offset. Only the request's
 * last page is partial: NHD reads its first last_len token rows (w < last_len
 * * row), HND the first last_len rows of each head block (w % F < last_len * row). */
template <int G, bool CHECK>
__global__ void __launch_bounds__(DL_RR_THREADS, 4)
    dl_read_pages_kernel(dl_rr_pages p, unsigned key, unsigned *sink, dl_rr_check *check)
{
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); /* --chain: the next read may launch */
    typedef typename dl_rr_vec<G>::T T;
    __shared__ int32_t s_page[DL_RR_MAX_PAGES];
    const int b = blockIdx.x;
    const int j_begin = p.indptr[b], j_end = p.indptr[b + 1];
    const unsigned last_units = (unsigned)p.last[b] * p.used_row;
    const T *__restrict__ K = (const T *)p.k;
    const T *__restrict__ V = (const T *)p.v;
    unsigned acc = 0;
    unsigned long long nbytes = 0;
    for (int g = blockIdx.y;; g += gridDim.y) {
        const int j0 = j_begin + g * p.pages_per_cta;
        if (j0 >= j_end) break;
        const int np = min(p.pages_per_cta, j_end - j0);
        __syncthreads(); /* the previous group is done with s_page */
        for (int e = threadIdx.x; e < np; e += DL_RR_THREADS) s_page[e] = p.indices[j0 + e];
        __syncthreads();
        const unsigned n = (unsigned)np * p.P;
        const unsigned e_last = (j0 + np == j_end) ? (unsigned)(np - 1) : 0xFFFFFFFFu;
        for (unsigned base = threadIdx.x; base < n; base += DL_RR_U * DL_RR_THREADS) {
            size_t off[DL_RR_U];
            bool ok[DL_RR_U];
#pragma unroll
            for (int u = 0; u < DL_RR_U; u++)
                ok[u] = dl_rr_unit(p, s_page, n, e_last, last_units, base + u * DL_RR_THREADS, &off[u]);
            T kv[DL_RR_U], vv[DL_RR_U];
#pragma unroll
            for (int u = 0; u < DL_RR_U; u++) {
                kv[u] = dl_rr_zero<T>();
                vv[u] = dl_rr_zero<T>();
                if (ok[u]) {
                    kv[u] = __ldcs(K + off[u]);
                    vv[u] = __ldcs(V + off[u]);
                }
            }
#pragma unroll
            for (int u = 0; u < DL_RR_U; u++) {
                acc ^= dl_rr_fold(kv[u], off[u]) ^ dl_rr_fold(vv[u], off[u]);
                if (CHECK) nbytes += ok[u] ? 2 * G : 0;
            }
        }
    }
    if (CHECK) {
        atomicAdd(&check->bytes, nbytes);
        atomicXor(&check->xor_fold, acc);
    } else if (acc == key) {
        sink[0] = acc;
    }
}

/* Contiguous: bytes [0, nbytes) of K and of V, 16-byte loads over the first
 * n16 = nbytes / 16 units (grid-stride, DL_RR_U K+V pairs in flight per
 * thread), then the nbytes % 16 tail bytes one at a time. */
template <bool CHECK>
__global__ void __launch_bounds__(DL_RR_THREADS, 4)
    dl_read_contig_kernel(const void *k, const void *v, size_t nbytes, unsigned key, unsigned *sink, dl_rr_check *check)
{
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); /* --chain: the next read may launch */
    const uint4 *__restrict__ K = (const uint4 *)k;
    const uint4 *__restrict__ V = (const uint4 *)v;
    const size_t n16 = nbytes / 16;
    const size_t stride = (size_t)gridDim.x * DL_RR_THREADS;
    size_t i = (size_t)blockIdx.x * DL_RR_THREADS + threadIdx.x;
    unsigned acc = 0;
    unsigned long long nread = 0;
    for (; i + (DL_RR_U - 1) * stride < n16; i += DL_RR_U * stride) {
        uint4 kv[DL_RR_U], vv[DL_RR_U];
#pragma unroll
        for (int u = 0; u < DL_RR_U; u++) {
            kv[u] = __ldcs(K + i + u * stride);
            vv[u] = __ldcs(V + i + u * stride);
        }
#pragma unroll
        for (int u = 0; u < DL_RR_U; u++) acc ^= dl_rr_fold(kv[u], 0) ^ dl_rr_fold(vv[u], 0);
        if (CHECK) nread += 2 * 16 * DL_RR_U;
    }
    for (; i < n16; i += stride) {
        acc ^= dl_rr_fold(__ldcs(K + i), 0) ^ dl_rr_fold(__ldcs(V + i), 0);
        if (CHECK) nread += 2 * 16;
    }
    const unsigned char *kb = (const unsigned char *)k, *vb = (const unsigned char *)v;
    for (size_t t = 16 * n16 + (size_t)blockIdx.x * DL_RR_THREADS + threadIdx.x; t < nbytes; t += stride) {
        acc ^= dl_rr_fold(__ldcs(kb + t), t) ^ dl_rr_fold(__ldcs(vb + t), t);
        if (CHECK) nread += 2;
    }
    if (CHECK) {
        atomicAdd(&check->bytes, nread);
        atomicXor(&check->xor_fold, acc);
    } else if (acc == key) {
        sink[0] = acc;
    }
}

extern "C" int dl_read_ref_load_bytes(const dl_gpu_args *a)
{
    int64_t row = (int64_t)a->head_dim * (int64_t)dl_dtype_size(a->kv_dtype);
    if (a->kv_layout == DL_NHD) row *= a->num_kv_heads;
    int g = 16;
    while (g > 1 && row % g) g >>= 1;
    return g;
}

/* Everything a reader launch needs, computed before the start event is recorded
 * (no host work between the events but the launch itself). */
typedef struct {
    dl_read_order order;
    int g;                  /* DL_READ_PAGES: load width */
    dl_rr_pages pages;
    dim3 grid;
    size_t contig_bytes;    /* DL_READ_CONTIG: bytes per cache */
    int empty;              /* nothing to read */
} dl_rr_plan;

static int rr_plan(dl_bench *b, const dl_gpu_args *a, int64_t total_tokens, dl_read_order order, int check,
                   dl_rr_plan *pl)
{
    *pl = dl_rr_plan();
    pl->order = order;
    if (a->batch_size < 1 || a->num_kv_heads < 1 || a->head_dim < 1 || a->page_size < 1 || a->max_seq_len < 0 ||
        total_tokens < 0)
        return dl_fail("read reference: bad case geometry (B=%d Hkv=%d D=%d page=%d max_seq_len=%d tokens=%lld)",
                       a->batch_size, a->num_kv_heads, a->head_dim, a->page_size, a->max_seq_len,
                       (long long)total_tokens);
    const int64_t elem = (int64_t)dl_dtype_size(a->kv_dtype);
    const int64_t head_row = (int64_t)a->head_dim * elem, row = head_row * a->num_kv_heads;
    if (order == DL_READ_CONTIG) {
        pl->contig_bytes = (size_t)(total_tokens * row);
        pl->empty = pl->contig_bytes == 0;
        int *per_sm = &b->contig_blocks_per_sm[check ? 1 : 0];
        if (!*per_sm) {
            const void *fn =
                check ? (const void *)dl_read_contig_kernel<true> : (const void *)dl_read_contig_kernel<false>;
            DL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, fn, DL_RR_THREADS, 0));
            if (*per_sm < 1) return dl_fail("read reference: the contiguous reader fits no CTA on an SM");
        }
        /* every CTA resident at once (a grid-stride loop with a second wave would end late) */
        size_t work = (pl->contig_bytes / 16 + (size_t)DL_RR_U * DL_RR_THREADS - 1) / ((size_t)DL_RR_U * DL_RR_THREADS);
        size_t blocks = (size_t)*per_sm * (size_t)b->sm_count;
        if (work < blocks) blocks = work;
        pl->grid = dim3((unsigned)(blocks > 0 ? blocks : 1));
        return 0;
    }
    if (order != DL_READ_PAGES) return dl_fail("read reference: unknown reader %d", (int)order);
    const int g = dl_read_ref_load_bytes(a);
    pl->g = g;
    const int64_t P = (int64_t)a->page_size * row / g;
    if (P < 1 || P > (INT64_C(1) << 30))
        return dl_fail("read reference: %lld units per page is out of range", (long long)P);
    dl_rr_pages *p = &pl->pages;
    p->k = a->k_cache;
    p->v = a->v_cache;
    p->indptr = a->kv_indptr;
    p->indices = a->kv_indices;
    p->last = a->kv_last_page_len;
    p->P = (unsigned)P;
    p->fP = dl_fastdiv_make((unsigned)P);
    p->used_row = (unsigned)((a->kv_layout == DL_NHD ? row : head_row) / g);
    p->F = a->kv_layout == DL_NHD ? (unsigned)P : (unsigned)((int64_t)a->page_size * head_row / g);
    /* about two rounds of DL_RR_U units per thread per CTA step */
    int64_t ppc = (int64_t)2 * DL_RR_U * DL_RR_THREADS / P;
    p->pages_per_cta = (int)(ppc < 1 ? 1 : ppc > DL_RR_MAX_PAGES ? DL_RR_MAX_PAGES : ppc);
    int64_t max_pages = ((int64_t)a->max_seq_len + a->page_size - 1) / a->page_size;
    int64_t groups = (max_pages + p->pages_per_cta - 1) / p->pages_per_cta;
    if (groups > 65535) groups = 65535; /* the kernel loops over the rest */
    pl->grid = dim3((unsigned)a->batch_size, (unsigned)(groups > 0 ? groups : 1));
    pl->empty = total_tokens == 0;
    return 0;
}

/* A read's launch on b's stream; pdl (--chain: the reads of the layers after the first): with programmatic dependent
 * launch, so that it may start while the previous read runs (the reads wait for nothing: they read only the caches). */
template <typename... P, typename... A>
static cudaError_t rr_launch_one(dl_bench *b, void (*kern)(P...), dim3 grid, int pdl, A... args)
{
    return dl_launch_ex(kern, grid, dim3(DL_RR_THREADS), 0, b->stream, pdl != 0, 0u, args...);
}

template <bool CHECK> static void rr_launch_pages(dl_bench *b, const dl_rr_plan *pl, dl_rr_check *check, int pdl)
{
    const dl_rr_pages &p = pl->pages;
    switch (pl->g) {
    case 16: rr_launch_one(b, dl_read_pages_kernel<16, CHECK>, pl->grid, pdl, p, DL_RR_KEY, b->sink, check); break;
    case 8: rr_launch_one(b, dl_read_pages_kernel<8, CHECK>, pl->grid, pdl, p, DL_RR_KEY, b->sink, check); break;
    case 4: rr_launch_one(b, dl_read_pages_kernel<4, CHECK>, pl->grid, pdl, p, DL_RR_KEY, b->sink, check); break;
    case 2: rr_launch_one(b, dl_read_pages_kernel<2, CHECK>, pl->grid, pdl, p, DL_RR_KEY, b->sink, check); break;
    default: rr_launch_one(b, dl_read_pages_kernel<1, CHECK>, pl->grid, pdl, p, DL_RR_KEY, b->sink, check); break;
    }
}

/* Enqueue one read (check != NULL: the counting variant into *check; pdl: rr_launch_one). */
static int rr_launch(dl_bench *b, const dl_gpu_args *a, const dl_rr_plan *pl, dl_rr_check *check, int pdl = 0)
{
    if (pl->empty) return 0;
    if (pl->order == DL_READ_CONTIG) {
        if (check)
            rr_launch_one(b, dl_read_contig_kernel<true>, pl->grid, pdl, a->k_cache, a->v_cache, pl->contig_bytes,
                          DL_RR_KEY, b->sink, check);
        else
            rr_launch_one(b, dl_read_contig_kernel<false>, pl->grid, pdl, a->k_cache, a->v_cache, pl->contig_bytes,
                          DL_RR_KEY, b->sink, check);
    } else if (check) {
        rr_launch_pages<true>(b, pl, check, pdl);
    } else {
        rr_launch_pages<false>(b, pl, check, pdl);
    }
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return dl_fail("read reference (%s reader): launch failed: %s",
                       pl->order == DL_READ_CONTIG ? "contiguous" : "page-table", cudaGetErrorString(e));
    return 0;
}

extern "C" int dl_bench_time_read(dl_bench *b, const dl_gpu_args *a, int64_t total_tokens, dl_read_order order,
                                  int flush, double *sec)
{
    return dl_bench_time_read_chain(b, a, 1, total_tokens, order, flush, sec);
}

extern "C" int dl_bench_time_read_chain(dl_bench *b, const dl_gpu_args *a, int n, int64_t total_tokens,
                                        dl_read_order order, int flush, double *sec_per_read)
{
    if (n < 1 || n > DL_CHAIN_MAX) return dl_fail("read chain: %d layers (1 to %d)", n, DL_CHAIN_MAX);
    dl_rr_plan pl[DL_CHAIN_MAX];
    for (int l = 0; l < n; l++) DL_TRY(rr_plan(b, &a[l], total_tokens, order, 0, &pl[l]));
    DL_TRY(before_sample(b, flush));
    DL_CUDA_CHECK(cudaEventRecord(b->start, b->stream));
    for (int l = 0; l < n; l++) DL_TRY(rr_launch(b, &a[l], &pl[l], NULL, l > 0));
    DL_CUDA_CHECK(cudaEventRecord(b->stop, b->stream));
    double s = 0;
    DL_TRY(elapsed(b, &s));
    *sec_per_read = s / n;
    return 0;
}

extern "C" int dl_bench_read_check(dl_bench *b, const dl_gpu_args *a, int64_t total_tokens, dl_read_order order,
                                   int64_t *bytes_read, uint32_t *xor_fold)
{
    *bytes_read = -1;
    *xor_fold = 0;
    dl_rr_plan pl;
    DL_TRY(rr_plan(b, a, total_tokens, order, 1, &pl));
    if (!b->check) {
        cudaError_t e = cudaMalloc((void **)&b->check, sizeof *b->check);
        if (e != cudaSuccess) {
            b->check = NULL;
            return dl_fail("read reference: cudaMalloc of the check counters failed: %s", cudaGetErrorString(e));
        }
    }
    DL_CUDA_CHECK(cudaMemsetAsync(b->check, 0, sizeof *b->check, b->stream));
    DL_TRY(rr_launch(b, a, &pl, b->check));
    dl_rr_check h;
    DL_CUDA_CHECK(cudaStreamSynchronize(b->stream));
    DL_CUDA_CHECK(cudaMemcpy(&h, b->check, sizeof h, cudaMemcpyDeviceToHost));
    *bytes_read = (int64_t)h.bytes;
    *xor_fold = h.xor_fold;
    return 0;
}

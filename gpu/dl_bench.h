/* dl_bench.h - the GPU side of the harness: device info and SM clock (NVML via
 * dlopen), device memory helpers, an L2 flush buffer (2x the L2 size), CUDA
 * event timing of one launch (cold or hot L2), CUDA-graph replays, and the
 * peak-read-bandwidth calibration kernel. Implemented in gpu/dl_bench.cu; the
 * harness includes only this header (no CUDA headers) and calls it only when
 * built with DL_HAVE_CUDA=1. Every function returns 0 or records one line
 * with dl_fail() naming the CUDA call and its error string. */
#ifndef DL_BENCH_H
#define DL_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include "dl_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int device;                 /* CUDA ordinal in use */
    char name[256];
    char pci_bus_id[32];
    int cc_major, cc_minor;
    int sm_count;
    int64_t l2_bytes;
    int64_t total_mem, free_mem;
    int sm_clock_khz_max;       /* cudaDevAttrClockRate: a static peak, not the current clock */
    int mem_clock_khz_max;      /* cudaDevAttrMemoryClockRate */
    int mem_bus_bits;
    double theoretical_gbps;    /* 2 * mem clock * bus width / 8 (datasheet-style DDR estimate) */
    int driver_version, runtime_version; /* e.g. 13000 */
} dl_device_info;

/* Info about the current CUDA device. */
int dl_bench_device_info(dl_device_info *info);

/* Current SM clock of the current device in MHz through NVML (dlopen of
 * libnvidia-ml.so.1, device matched by PCI bus id); -1 when unavailable, with
 * the reason written into why (always written: "nvml" on success). */
int dl_bench_sm_clock_mhz(char *why, size_t n);
/* Same for the memory clock. */
int dl_bench_mem_clock_mhz(char *why, size_t n);

/* Device memory. */
int dl_dev_malloc(void **p, size_t bytes, const char *what);
void dl_dev_free(void *p);
int dl_dev_upload(void *dst, const void *src, size_t bytes, const char *what);
int dl_dev_download(void *dst, const void *src, size_t bytes, const char *what);
/* Fill with byte 0xFF (a NaN for float32: 0xFFFFFFFF) on stream, synchronously. */
int dl_dev_poison(void *p, size_t bytes, void *stream);
/* After a launch: cudaGetLastError, then synchronize the stream; names what. */
int dl_dev_check_launch(const char *what, void *stream);

/* A timing context: one stream, two events, the flush buffer. */
typedef struct dl_bench dl_bench;
int dl_bench_create(dl_bench **out);
void dl_bench_destroy(dl_bench *b);
void *dl_bench_stream(dl_bench *b);          /* cudaStream_t to launch on */
int64_t dl_bench_flush_bytes(const dl_bench *b);

/* Enqueue an L2 flush: a memset of the whole flush buffer (2x L2 bytes). */
int dl_bench_flush_l2(dl_bench *b);

/* Time one launch of fn(a) (a->stream must be dl_bench_stream(b)) with CUDA
 * events. flush: write the flush buffer first (cold L2). Otherwise a short
 * spin kernel runs first so the host enqueues the launch while the GPU is
 * busy (launch latency stays out of the measurement). *sec = event time. */
int dl_bench_time_launch(dl_bench *b, dl_launch_fn fn, const dl_gpu_args *a, int flush, double *sec);

/* CUDA-graph mode: capture n launches of fn(a) into one graph (replaces any
 * previous graph of b), then time one replay; *sec_per_launch = replay / n.
 * With flush, L2 is flushed before each replay (only the first launch of a
 * replay sees a cold L2). */
int dl_bench_graph_capture(dl_bench *b, dl_launch_fn fn, const dl_gpu_args *a, int n);
int dl_bench_time_graph(dl_bench *b, int flush, double *sec_per_launch);

/* Peak read bandwidth calibration: a grid-stride streaming read of a device
 * buffer of `bytes` (0: max(4 GiB, 64 x L2), at most half the free memory)
 * with 16-byte loads, L2 flushed before each of `runs` timed runs after 2
 * warm-ups. bandwidth = bytes / median time. */
typedef struct {
    int64_t bytes;
    int runs;
    double median_s, min_s, max_s;
    double gbps;               /* bytes / median_s / 1e9 */
    double gbps_best;          /* bytes / min_s / 1e9 */
} dl_peak_read;
int dl_bench_peak_read(dl_bench *b, int64_t bytes, int runs, dl_peak_read *out);

#ifdef __cplusplus
}
#endif
#endif

/* dl_bench.h - the GPU side of the harness: device info and SM clock (NVML via
 * dlopen), device memory helpers, the L2 flush (a write of 2x the L2 size, or
 * a read of 4x), CUDA event timing of one launch (cold or hot L2), CUDA-graph
 * replays, the peak-read-bandwidth calibration kernel, and the read reference
 * of a decode case (a tuned read of exactly its KV bytes). Implemented in gpu/dl_bench.cu; the
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
/* Whether the CUDA context still works after a failed variant (a fault such as an illegal address is sticky: every
 * later call fails with it): 0, or dl_fail naming the error. */
int dl_dev_context_ok(void);

/* A timing context: one stream, two events, the flush buffer. */
typedef struct dl_bench dl_bench;
int dl_bench_create(dl_bench **out);
void dl_bench_destroy(dl_bench *b);
void *dl_bench_stream(dl_bench *b);          /* cudaStream_t to launch on */
int64_t dl_bench_flush_bytes(const dl_bench *b); /* bytes the selected flush writes or reads */

/* How a cold sample flushes L2 (decodelab run --flush). */
typedef enum {
    /* cudaMemsetAsync over a buffer of 2x the L2 size (the default): L2 is left
     * full of dirty lines, which the timed kernel may have to write back */
    DL_FLUSH_WRITE = 0,
    /* a streaming read of a buffer of 4x the L2 size with L2-allocating 16-byte
     * loads (ld.global.cg), result discarded: L2 is left holding clean lines */
    DL_FLUSH_READ = 1
} dl_flush_mode;

/* Select the flush of every later cold sample of b (dl_bench_flush_l2, the
 * peak-read calibration, the read reference, the variants). DL_FLUSH_READ
 * allocates the 4x L2 read buffer on first use (filled once, synchronously). */
int dl_bench_set_flush(dl_bench *b, dl_flush_mode mode);
dl_flush_mode dl_bench_get_flush(const dl_bench *b);

/* Enqueue an L2 flush of the selected mode (default: the memset of 2x L2). */
int dl_bench_flush_l2(dl_bench *b);

/* Time one launch of fn(a) (a->stream must be dl_bench_stream(b)) with CUDA
 * events. flush: write the flush buffer first (cold L2). Otherwise a short
 * spin kernel runs first so the host enqueues the launch while the GPU is
 * busy (launch latency stays out of the measurement). *sec = event time. */
int dl_bench_time_launch(dl_bench *b, dl_launch_fn fn, const dl_gpu_args *a, int flush, double *sec);

/* The layer chain (run --chain): n launches of fn, a[l] each (layer l's copy of the caches; a[l].pdl 1 or 2),
 * queued back to back between one pair of events; with flush, L2 is flushed once before the first. *sec_per_launch
 * = the events' time / n. A variant that supports it (dl_gpu_args.pdl) starts layer l + 1 before layer l ends. */
#define DL_CHAIN_MAX 64
int dl_bench_time_chain(dl_bench *b, dl_launch_fn fn, const dl_gpu_args *a, int n, int flush, double *sec_per_launch);
/* Device-to-device copy (the chain's layer copies); dl_fail() naming `what` on error. */
int dl_dev_copy(void *dst, const void *src, size_t bytes, const char *what);

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

/* The read reference of a decode case (issue 10): how fast can the GPU read
 * exactly the case's KV bytes, i.e. the K and V rows of every token of every
 * request for all KV heads (2 x total_tokens x Hkv x D x elem bytes, the
 * `bytes_kv` of harness/run_util.c dl_run_bytes). Two readers:
 *
 *  DL_READ_PAGES   walks the CSR page table (a->kv_indptr, kv_indices,
 *                  kv_last_page_len on the device) as a decode kernel does: a
 *                  CTA per (request, group of consecutive pages), the group's
 *                  page numbers staged in shared memory; of each page only the
 *                  used tokens are read (NHD: the first len_in_page token rows,
 *                  contiguous; HND: per KV head the first len_in_page rows),
 *                  K and V from the same offsets.
 *  DL_READ_CONTIG  the same byte count read contiguously from the start of the
 *                  K cache and of the V cache (a grid-stride loop, as many CTAs
 *                  as fit on the GPU at once).
 *
 * Both use ld.global.cs loads of dl_read_ref_load_bytes(a) bytes (16 unless
 * the rows are not a multiple of 16 bytes; the contiguous reader always uses 16
 * plus a byte tail), 4 independent K+V load pairs in flight per thread
 * (8 loads: 128 bytes with 16-byte loads), 256-thread CTAs, the values
 * xor-reduced and stored only if equal to an unlikely key (nothing is written
 * in practice, and the compiler cannot drop the loads).
 *
 * Sampling is the caller's: one call = one sample timed exactly like
 * dl_bench_time_launch (flush: an L2 flush of the selected mode first, else a
 * spin kernel; CUDA events around the single launch). `decodelab run --time`
 * drives it with dl_timing_collect, the same stop rule as the variants
 * (harness/timing.c), after 3 unflushed warm-up launches per reader. */
typedef enum { DL_READ_PAGES = 0, DL_READ_CONTIG = 1 } dl_read_order;

/* Width in bytes of the page-table reader's loads for the case: the largest
 * power of two <= 16 dividing the contiguous row (NHD: Hkv x D x elem bytes;
 * HND: D x elem bytes). */
int dl_read_ref_load_bytes(const dl_gpu_args *a);

/* Time one read of the case's KV bytes (a: the case's device arguments, a->stream
 * must be dl_bench_stream(b); total_tokens: the sum of its sequence lengths). */
int dl_bench_time_read(dl_bench *b, const dl_gpu_args *a, int64_t total_tokens, dl_read_order order, int flush,
                       double *sec);

/* The read reference of the layer chain: n reads as dl_bench_time_read's, read l over a[l]'s caches, back to
 * back between one pair of events, reads after the first launched with programmatic dependent launch (each read
 * triggers its dependents at entry and waits for nothing: a read of layer l + 1 may overlap layer l's);
 * *sec_per_read = the events' time / n. */
int dl_bench_time_read_chain(dl_bench *b, const dl_gpu_args *a, int n, int64_t total_tokens, dl_read_order order,
                             int flush, double *sec_per_read);

/* Self-check of a reader (untimed): run it once counting the bytes it loads
 * and xor-folding them, each byte x at byte offset o of its cache contributing
 * x << 8*(o % 4) (the definition of harness/run_util.c dl_run_read_sum, which
 * computes the expected values on the host). */
int dl_bench_read_check(dl_bench *b, const dl_gpu_args *a, int64_t total_tokens, dl_read_order order,
                        int64_t *bytes_read, uint32_t *xor_fold);

#ifdef __cplusplus
}
#endif
#endif

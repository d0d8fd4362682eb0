/* cmd_info.c - `decodelab info`: the CUDA device and its peak read bandwidth
 * measured here (gpu/dl_bench.h); without a device it says so and exits 0. */
#include <stdio.h>
#include <string.h>

#include "../gpu/dl_bench.h"
#include "cli_util.h"
#include "dl_cli.h"
#include "dl_run.h"

#ifndef DL_HAVE_CUDA
#define DL_HAVE_CUDA 0
#endif

int dl_cmd_info(int argc, char **argv)
{
    int runs = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: decodelab info [--peak-runs N]\n\nPrints the CUDA device (name, SMs, L2, memory, clocks,\n"
                   "driver and runtime versions) and its peak read bandwidth measured here: a streaming read\n"
                   "of a buffer much larger than L2 with 16-byte loads, L2 flushed before each run, median of N\n"
                   "runs (default 20). Without a CUDA device it says so and exits 0.\n");
            return 0;
        } else if (!strcmp(argv[i], "--peak-runs") && i + 1 < argc) {
            int64_t v;
            if (dl_parse_i64("--peak-runs", argv[++i], 1, 10000, &v)) return dl_cli_error("info");
            runs = (int)v;
        } else {
            dl_fail("unknown argument '%s' (see decodelab info --help)", argv[i]);
            return dl_cli_error("info");
        }
    }
    dl_clear_error();
    int ndev = dl_gpu_device_count();
    if (ndev <= 0) {
        printf("no CUDA device (%s)\n", dl_run_no_device_reason());
        return 0;
    }
#if DL_HAVE_CUDA
    dl_device_info info;
    if (dl_bench_device_info(&info)) return dl_cli_error("info");
    char drv[16], rt[16], why[160];
    dl_run_version_string(info.driver_version, drv, sizeof drv);
    dl_run_version_string(info.runtime_version, rt, sizeof rt);
    printf("devices:            %d (using ordinal %d)\n", ndev, info.device);
    printf("name:               %s (compute capability %d.%d, PCI %s)\n", info.name, info.cc_major, info.cc_minor,
           info.pci_bus_id);
    printf("SMs:                %d\n", info.sm_count);
    printf("L2:                 %.1f MiB (%lld bytes)\n", info.l2_bytes / 1048576.0, (long long)info.l2_bytes);
    printf("memory:             %.1f GiB total, %.1f GiB free\n", info.total_mem / 1073741824.0,
           info.free_mem / 1073741824.0);
    printf("SM clock (max):     %d MHz (static attribute)\n", info.sm_clock_khz_max / 1000);
    int sm = dl_bench_sm_clock_mhz(why, sizeof why);
    if (sm >= 0) printf("SM clock (now):     %d MHz (NVML)\n", sm);
    else printf("SM clock (now):     unknown (%s)\n", why);
    int mem = dl_bench_mem_clock_mhz(why, sizeof why);
    printf("memory clock (max): %d MHz, bus %d bits: datasheet-style %.0f GB/s\n", info.mem_clock_khz_max / 1000,
           info.mem_bus_bits, info.theoretical_gbps);
    if (mem >= 0) printf("memory clock (now): %d MHz (NVML)\n", mem);
    printf("driver / runtime:   %s / %s\n", drv, rt);
    dl_bench *b = NULL;
    dl_peak_read pk;
    if (dl_bench_create(&b) || dl_bench_peak_read(b, 0, runs, &pk)) {
        dl_bench_destroy(b);
        return dl_cli_error("info");
    }
    printf("L2 flush buffer:    %.1f MiB (2x L2)\n", dl_bench_flush_bytes(b) / 1048576.0);
    printf("peak read (measured): %.1f GB/s median, %.1f best, %.1f worst (%d runs over %.2f GiB, 16-byte loads, L2 "
           "flushed)\n",
           pk.gbps, pk.gbps_best, pk.bytes / pk.max_s / 1e9, pk.runs, pk.bytes / 1073741824.0);
    dl_bench_destroy(b);
    return 0;
#else
    (void)runs;
    printf("%d CUDA devices reported, but this binary was built without CUDA\n", ndev);
    return 0;
#endif
}

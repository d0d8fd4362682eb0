/* dl_probes.h - the E2 probe kernels (issue 13 item 2): small straight-line kernels that each
 * issue one candidate instruction form a known number of times per thread, so that Nsight
 * Compute's pipe counters (sm__inst_executed_pipe_tensor_op_hmma.sum ...) can be matched form by
 * form against the SASS census. Rows: gpu/dl_probes.def; kernels: gpu/e2_probes.cu; CLI:
 * `decodelab probe` (harness/cmd_probe.c); GPU job: tests/gpu/e2_probes_job.sh. */
#ifndef DL_PROBES_H
#define DL_PROBES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Launch shape of every probe: one block of this many threads (4 warps). */
#define DL_PROBE_THREADS 128

typedef struct {
    const char *name;    /* "hfma2_f16x2" */
    const char *kernel;  /* "e2_probe_hfma2_f16x2" */
    const char *form;    /* fnmatch glob over SASS forms */
    int count;           /* instances of form per thread (straight-line: static = executed) */
    const char *ptx;
    const char *note;
} dl_probe;

extern const dl_probe dl_probes[];
extern const int dl_num_probes;

/* Index of a probe by name, -1 if none. */
int dl_probe_find(const char *name);

/* Launch probe i once (one block of DL_PROBE_THREADS threads), wait, and return the XOR of its
 * outputs in *checksum. 0 or dl_fail(). Without CUDA: records why and returns -1. */
int dl_probe_launch(int i, uint32_t *checksum);

/* One case of the wgmma accumulator probe: D = c + sum_k a[k] b[k] (a, b: e4m3 values). */
typedef struct {
    char name[32];
    float c;
    float a[32], b[32];
} dl_acc_case;

/* The probe's cases, each isolating one question (pairing of a[k] with b[k]; the exponent gap at
 * which a smaller product is lost; truncation or rounding; the role of c; one alignment per 32 k or
 * per 16), at most cap of them, in a fixed order. Returns how many. */
int dl_wgmma_acc_cases(dl_acc_case *v, int cap);

/* The wgmma accumulator probe (gpu/wgmma_acc_probe.cu, issue 12): for each of n cases, d[i] = c[i] +
 * sum_k a[i*32+k] * b[i*32+k] computed by one m64n8k32 e4m3 wgmma (a, b: e4m3 codes; every row of A
 * and column of B the case's 32 codes; chain > 1: that wgmma issued chain times on one accumulator),
 * uniform[i] = 1 when all 512 outputs agree bitwise. 0 or
 * dl_fail(). Without CUDA: records why and returns -1. */
int dl_wgmma_acc_probe(int n, int chain, const float *c, const uint8_t *a, const uint8_t *b, float *d, int *uniform);

#ifdef __cplusplus
}
#endif
#endif

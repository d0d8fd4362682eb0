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

/* Random chain case i for (chain <= 8, zero_c): *c, a[chain*32], b[chain*32] (e4m3 values). */
void dl_wgmma_acc_random(int chain, int zero_c, int i, float *c, float *a, float *b);

/* The wgmma accumulator probe (gpu/wgmma_acc_probe.cu, issue 12): for each of n cases a chain of
 * `chain` (1, 2, 4 or 8) m64n8k32 e4m3 wgmmas on one accumulator that starts at c[i] (zero_c = 1: the first
 * wgmma ignores it, scale-d = 0); step s of case i multiplies the e4m3 codes a[(i*chain+s)*32 + k]
 * and b[(i*chain+s)*32 + k] (every row of A and column of B the same 32 codes); d[i] = the result,
 * uniform[i] = 1 when all 512 outputs agree bitwise. 0 or dl_fail(). Without CUDA: records why and
 * returns -1. */
int dl_wgmma_acc_probe(int n, int chain, int zero_c, const float *c, const uint8_t *a, const uint8_t *b, float *d,
                       int *uniform);

/* Full-matrix random case i: c [64*8], a [64*32], b [8*32] (e4m3 values; gpu/probes.c says how). */
void dl_wgmma_acc_full_random(int i, float *c, float *a, float *b);

/* Full matrices, one wgmma per case, every output its own: a [n][64][32] and b [n][8][32] e4m3 codes
 * (K-major rows), c and d [n][64][8] (row m, column n); zero_c: scale-d = 0. d[i][m][j] should be
 * dl_qgmma_add(c[i][m][j], row m of a, row j of b, 1, 32). 0 or dl_fail(); without CUDA -1. */
int dl_wgmma_acc_full(int n, int zero_c, const float *c, const uint8_t *a, const uint8_t *b, float *d);

#ifdef __cplusplus
}
#endif
#endif

/* dl_probes.h - the E2 probe kernels (issue 13 item 2): small straight-line kernels that each
 * issue one candidate instruction form a known number of times per thread, so that Nsight
 * Compute's pipe counters (sm__inst_executed_pipe_tensor_op_hmma.sum ...) can be matched form by
 * form against the SASS census. Rows: gpu/dl_probes.def; kernels: gpu/e2_probes.cu; CLI:
 * `decodelab probe` (harness/cmd_probe.c); GPU job: tests/gpu/e2_probes_job.sh. Also the warpgroup
 * MMA accumulator probes of issue 12 (gpu/wgmma_acc_probe.cu): FP8 (QGMMA, --wgmma-acc) and BF16
 * (HGMMA, --hgmma-acc; GPU job tests/gpu/hgmma_probe_job.sh). */
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

/* ---- the HGMMA (BF16 warpgroup MMA) accumulator probe: the BF16 counterpart of the above
 * (`decodelab probe --hgmma-acc`; kernels in gpu/wgmma_acc_probe.cu, cases and model in gpu/probes.c) */

/* One case: D = c + sum_k a[k] b[k] over the 16 k of one m64n8k16 wgmma (a, b: bf16 values). */
typedef struct {
    char name[32];
    float c;
    float a[16], b[16];
} dl_hacc_case;

/* Longest chain the HGMMA probe issues (1, 2, 4, 8 or 16 wgmmas on one accumulator). */
#define DL_HGMMA_MAX_CHAIN 16

/* The probe's cases, each isolating one question (pairing; the exponent gap at which a smaller
 * product is lost; truncation or rounding of a partly kept one; the role of c; cancellation;
 * subnormal operands; the exponent a product aligns by; one alignment per 16 k or per 8), at most
 * cap of them, in a fixed order. Returns how many. */
int dl_hgmma_acc_cases(dl_hacc_case *v, int cap);

/* Random chain case i for (chain <= DL_HGMMA_MAX_CHAIN, zero_c): *c, a[chain*16], b[chain*16]
 * (bf16 values). Deterministic. */
void dl_hgmma_acc_random(int chain, int zero_c, int i, float *c, float *a, float *b);

/* Full-matrix random case i: c [64*8], a [64*16], b [8*16] (bf16 values; gpu/probes.c says how). */
void dl_hgmma_acc_full_random(int i, float *c, float *a, float *b);

/* The model family the probe compares against, generalising dl_qgmma_add (ref/dl_ref.h) to bf16
 * operands: the alignment exponent E is the largest of c's binary exponent and, per nonzero product,
 * exp(a) + exp(b) (the product's exponent before normalization; a subnormal bf16 counting as the
 * smallest normal, 2^-126), or with DL_HGMMA_NORM the product's own normalized exponent. Every term,
 * c included, is truncated toward zero to a multiple of 2^(E - frac_bits); the terms are summed
 * exactly; the sum is cut to min(frac_bits, 23) fraction bits (toward zero; DL_HGMMA_RN: to nearest,
 * ties to even) and to binary32. frac_bits 1..40, n <= 64. dl_hgmma_top: the alignment exponent
 * (frexp-like: E + 1; INT_MIN when every term is 0); dl_hgmma_sum: the sum for a given top (>= the
 * terms' own: a shared alignment). Non-finite inputs: left to float arithmetic. */
enum { DL_HGMMA_RN = 1, DL_HGMMA_NORM = 2 };
int dl_hgmma_top(float c, const float *a, const float *b, int n, int flags);
float dl_hgmma_sum(float c, const float *a, const float *b, int n, int top, int frac_bits, int flags);
float dl_hgmma_model(float c, const float *a, const float *b, int n, int frac_bits, int flags);

/* The HGMMA probe (gpu/wgmma_acc_probe.cu): for each of n cases a chain of `chain` (1, 2, 4, 8 or
 * 16) m64n8k16 f32.bf16.bf16 wgmmas on one accumulator that starts at c[i] (zero_c = 1: the first
 * ignores it, scale-d = 0); step s of case i multiplies the bf16 bit patterns a[(i*chain+s)*16 + k]
 * and b[(i*chain+s)*16 + k] (every row of A and column of B the same 16 values); d[i] = the result,
 * uniform[i] = 1 when all 512 outputs agree bitwise. 0 or dl_fail(); without CUDA: records why and
 * returns -1. */
int dl_hgmma_acc_probe(int n, int chain, int zero_c, const float *c, const uint16_t *a, const uint16_t *b, float *d,
                       int *uniform);

/* Full matrices, one wgmma per case, every element its own: a [n][64][16] and b [n][8][16] bf16 bit
 * patterns (K-major rows), c and d [n][64][8]; zero_c: scale-d = 0. 0 or dl_fail(); without CUDA -1. */
int dl_hgmma_acc_full(int n, int zero_c, const float *c, const uint16_t *a, const uint16_t *b, float *d);

#ifdef __cplusplus
}
#endif
#endif

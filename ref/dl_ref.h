/* dl_ref.h - the CPU reference of paged decode attention and its arithmetic models.
 *
 * For request b, query head h, KV head h/group, tokens j of the sequence:
 *   s_j = sm_scale * q.k_j,  lse = ln(sum_j exp(s_j)),  o = sum_j softmax(s)_j v_j
 * Models (one name each, the same string in files, CLI and results):
 *   exact - FP64 on the dequantized stored inputs, via OpenBLAS (dgemm/dgemv)
 *   orig  - FP64 on the original values before storage rounding
 *   fp32  - a CUDA-core kernel: FP32 dequant, FP32 dots, FP32 online softmax
 *   bf16  - a BF16 tensor-core kernel: Q and the decoded K, V codes rounded to BF16
 *           (scales not applied per element), FP32 accumulation, P rounded to BF16
 *           before P*V; the scales are folded as production kernels do:
 *           s = (q . k) * (sm_scale * k_scale), o = acc / sum * v_scale
 *   fp8   - an FP8 tensor-core kernel: Q quantized to e4m3 per head, K/V codes as
 *           stored, QK accumulated in FP32 (or a reduced-precision accumulator),
 *           P quantized to e4m3 with a static scale before P*V
 *   fp8acc - fp8 with two-level accumulation: the MMA accumulator is a fresh
 *           partial for acc_promote_blocks k-blocks, then added into an FP32 sum
 *   bf16simt - a CUDA-core BF16 kernel: Q, K, V rounded to BF16, q.k by packed
 *           bf16x2 FMA over runs of 8 dims (one rounding per FMA), FP32 for the
 *           cross-lane butterfly, the softmax and P*V
 * All are slow and plain on purpose: they are what fast kernels are judged by.
 *
 * Details of the emulated models (fp32, bf16, fp8), see dl_ref.c for the exact rules:
 *  - single binary32 operations, no FMA; dots in index order d = 0..D-1, then * sm_scale;
 *  - online softmax per kv_block tokens: m_new = max(m, block max), sum and acc
 *    rescaled by expf(m - m_new), then p_j = expf(s_j - m_new) added in token order;
 *    o = acc / sum, lse = m + logf(sum);
 *  - bf16/fp8: the normalizer sum adds the FP32 p_j; only the P that multiplies V
 *    is rounded (bf16(p), or e4m3(p * p_scale) satfinite, divided back at the end);
 *  - fp8: q_scale = absmax(q_h)/448 per query head (1 if zero); s = dot * q_scale *
 *    k_scale * sm_scale; o = acc / sum * (v_scale / p_scale). The reduced-precision
 *    accumulator (acc_mantissa_bits < 23) applies to both MMA chains: QK over the
 *    head_dim in k-blocks of acc_block dims, and P*V over the tokens of each
 *    kv_block in k-blocks of acc_block tokens (the chain carries across kv_blocks,
 *    rescaled in FP32 by the softmax factor). A 16-bit KV cache is first quantized
 *    to e4m3 with one scale per (request, KV head) = absmax / 448.
 *  - fp8acc: as fp8, but every acc_promote_blocks k-blocks (and at the end of the
 *    dot, and of each kv_block for P*V) the truncated partial is added to a
 *    separate FP32 accumulator in one binary32 add, and the partial restarts at 0.
 *  - fp8wg, fp8accwg: fp8 and fp8acc with the accumulator of the Hopper wgmma (dl_qgmma_add, one
 *    k-block = one m64n8k32 wgmma of 32 products): the file's acc_mantissa_bits and acc_block do
 *    not apply (13 fraction bits, 32 products, fixed by the hardware); promote as fp8acc.
 *  - bf16simt: see dl_ref.c (bf16simt_dot) for the exact order the kernel uses.
 *  - kv_order (every emulated model): forward visits tokens 0, 1, ..., len-1; reverse visits
 *    len-1, ..., 0, the kv_blocks (and fp8 k-blocks) counted from the last token, so with an
 *    attention sink at the front the running max meets the sink last (experiments/E8).
 *
 * Schedules (split-KV and other work splits): a kernel that cuts a sequence
 * into segments computes each as an independent online softmax (the running
 * max restarts at the segment's first token, kv_blocks are counted from the
 * segment start), finalizes it (o_i = acc / sum times the model's output
 * scale, lse_i = m + logf(sum)), then merges the segments of each (request,
 * query head) in segment order in FP32, as gpu/runtime.cu's merge kernel does:
 *   M = max_i lse_i;  W = sum_i expf(lse_i - M);
 *   o[d] = (sum_i expf(lse_i - M) * o_i[d]) / W;  lse = M + logf(W)
 * (sums in order i = 0, 1, ...; a segment with lse = -inf weighs nothing).
 * dl_reference_sched computes a model for such a schedule. */
#ifndef DL_REF_H
#define DL_REF_H

#include "dl_paged.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    DL_MODEL_EXACT = 0, DL_MODEL_ORIG, DL_MODEL_FP32, DL_MODEL_BF16, DL_MODEL_FP8,
    DL_MODEL_FP8ACC, DL_MODEL_BF16SIMT, DL_MODEL_FP8WG, DL_MODEL_FP8ACCWG, DL_MODEL_COUNT
} dl_model;

/* The order in which the emulated models visit the tokens of a sequence (or of each segment of a
 * schedule): forward = token 0 first (every GPU kernel of gpu/), reverse = the last token first
 * (blocks of kv_block tokens counted from the last token). exact/orig do not depend on it. */
typedef enum { DL_KV_FORWARD = 0, DL_KV_REVERSE = 1 } dl_kv_order;
const char *dl_kv_order_name(int order);         /* "forward" "reverse" */
int dl_kv_order_parse(const char *s, int *out);  /* 0 ok, -1 unknown (no error recorded) */

/* Parameters of the arithmetic models. */
typedef struct {
    int64_t kv_block;      /* fp32/bf16/fp8: tokens per online-softmax step (running max per block); default 64 */
    /* fp8: reduced-precision accumulator. acc_mantissa_bits = 23 means true FP32.
     * Otherwise (1..22) the running QK partial sum is truncated toward zero to that
     * many fraction bits (low 23-bits bits of the binary32 fraction cleared) after
     * every acc_block products and after the last one; 0 also means true FP32. */
    int acc_mantissa_bits; /* default 23 */
    int64_t acc_block;     /* default 32 (the k of one m16n8k32 MMA) */
    float p_scale;         /* fp8: P is encoded as e4m3(p * p_scale), divided back after P*V; default 448 */
    int64_t acc_promote_blocks; /* fp8acc: k-blocks per partial before it is added to FP32; default 2
                                 * (the fp8 model never promotes) */
    int kv_order;          /* dl_kv_order: token iteration order of the emulated models; default forward */
} dl_model_params;

void dl_model_params_default(dl_model_params *p);

/* The Hopper FP8 warpgroup MMA's accumulator (QGMMA; the fp8wg and fp8accwg models), as measured on
 * the H200 by `decodelab probe --wgmma-acc` (results/h200_2026-12-01c/wgmma_acc_probe.txt, and the
 * random chains of results/h200_2026-12-01d/wgmma_acc_probe2.txt): one wgmma adds n products
 * x[i] * y[i * ystride] (x: e4m3 values; y: values of format yt, e4m3 or e5m2) to the accumulator c.
 * The alignment exponent E is the largest of c's binary exponent and, per nonzero product, the
 * sum of its operands' exponents (a subnormal counting as the smallest normal): the product's
 * exponent before normalization, one below its own when the mantissas multiply to [2, 4). Every
 * term, c included, is truncated toward zero to a multiple of 2^(E - 13); the terms are summed
 * exactly; the sum is truncated toward zero to 14 significant bits (13 fraction bits). */
#define DL_QGMMA_FRAC_BITS 13
float dl_qgmma_add(float c, const float *x, const float *y, int64_t ystride, int64_t n, dl_dtype yt);
/* Its two halves: the alignment exponent (frexp-like: E + 1; INT_MIN when every term is 0), and
 * the truncated sum for a given alignment exponent top (>= the terms' own: a shared one) */
int dl_qgmma_top(float c, const float *x, const float *y, int64_t ystride, int64_t n, dl_dtype yt);
float dl_qgmma_sum(float c, const float *x, const float *y, int64_t ystride, int64_t n, int top);

const char *dl_model_name(dl_model m);          /* "exact" "orig" "fp32" "bf16" "fp8" "fp8acc" "bf16simt" "fp8wg" "fp8accwg" */
int dl_model_parse(const char *s, dl_model *out);
int dl_model_find(const char *s);               /* the model's index by name, -1 if none (no error recorded) */
const char *dl_model_description(dl_model m);   /* one sentence for the file attribute */
const char *dl_model_group(dl_model m);         /* its HDF5 group in a golden file: "/golden/<name>" */
int dl_model_is_fp64(dl_model m);               /* 1: exact, orig (FP64 outputs); 0: the emulated models */

/* Output of one model: o [B, Hq, D], lse [B, Hq] (natural log). */
typedef struct {
    dl_model model;
    int64_t batch_size, num_qo_heads, head_dim;
    double *o;
    double *lse;
    /* The P cast (emulated models): p_values = P values that entered P*V, over (query head, token)
     * pairs of the non-sink tokens (all tokens unless the distribution is sink: then tokens
     * >= sink_tokens of each request); p_zeros = how many of them entered as 0 (rounded to zero by
     * the model's P rounding, or exp underflow). -1 for exact/orig and when unknown (read from a
     * file without them). */
    int64_t p_values, p_zeros;
    /* The error the P cast alone causes (bf16, fp8, fp8acc): sum over the output of (o - o2)^2 over
     * sum of o2^2, o2 the same model with P not rounded (p * p_scale, resp. p, into P*V; every other
     * operation the same). NaN for the other models and when unknown. */
    double p_cast_nmse;
    /* The P-rounding flip allowance [B, Hq] (fp8, fp8acc: P rounded to e4m3; NULL for the other
     * models and for files without it): per (request, head), an upper bound of ||o_kernel - o||
     * (L2 over head_dim, absolute) that a correct kernel can reach by rounding a P element to
     * the other e4m3 neighbour: sum over the fragile elements (those whose x = p * p_scale lies
     * within a relative DL_FLIP_ETA of a rounding boundary) of |alt - pr| * ||V_j|| (scaled as o,
     * rescaled to the final max, over the softmax sum). A kernel's own FP32 score order and exp
     * move x by far less than DL_FLIP_ETA (harness/compare.c); the judge grants this bound on
     * top of the implementation limits. */
    double *o_flip;
} dl_output;

/* Relative window of x = p * p_scale inside which an e4m3 P element counts as fragile (2^-14 =
 * 6.1e-5): over 6x the FP32 score error of a D = 256 dot of exact e4m3 products against scores
 * of |s| <= 10 (D * 2^-24 * sum |q k|) and 500x a 2-ulp expf difference. */
#define DL_FLIP_ETA 6.103515625e-05

/* The fraction of non-sink P values that an e4m3 P cast rounds to zero under an attention sink,
 * as predicted for forward iteration (Lau, arXiv 2606.06521): the sink tokens come first, so the
 * running max is m = sink_delta + sigma * delta_k from the first block on (delta_k = E[max of
 * sink_tokens standard normals], sigma = sm_scale * std^2 * sqrt(head_dim) the spread of a
 * non-sink score); a non-sink p = exp(s - m) becomes 0 when p * p_scale < 2^-10 (half the
 * smallest e4m3 subnormal), so the fraction is Phi((m + ln 2^-10 - ln p_scale) / sigma)
 * = Phi(delta + delta_k - 6.93 - ln S) for sigma = 1. NaN where the prediction does not apply:
 * a model without an e4m3 P cast (only fp8, fp8acc), reverse order, no sink (distribution not
 * sink, sink_tokens 0) or dist_mean != 0. Assumes the sink dominates the running max (delta well
 * above the largest non-sink score of the first block). */
double dl_p_underflow_predicted(const dl_config *cfg, const dl_model_params *p, dl_model m);
/* E[max of k independent standard normals] (0 for k = 1; numerical integration). */
double dl_expected_max_normal(int64_t k);

/* Compute model m on case c into out (allocates out->o/lse; free with dl_output_free).
 * orig needs c->k_orig/v_orig (else error). Deterministic whatever the number of
 * threads: every (b, h) is computed independently in a fixed order. */
int dl_reference(const dl_case *c, dl_model m, const dl_model_params *p, dl_output *out);
void dl_output_free(dl_output *o);

/* A kernel's schedule: the tokens of task t = b * num_kv_heads + kvh cut into segments
 * [seg_begin[k], next segment's begin or the sequence length) for k in [seg_indptr[t], seg_indptr[t+1]);
 * each segment is an independent online softmax (running max restarting at its first token,
 * kv_blocks counted from the segment start); the segments' normalized (o_i, lse_i) are then
 * merged in order: M = max lse_i, w_i = exp(lse_i - M), o = sum w_i o_i / sum w_i, lse = M + log(sum w_i)
 * (in FP32 with expf/logf, see "Schedules" above). */
typedef struct {
    int64_t num_tasks;           /* batch_size * num_kv_heads */
    const int64_t *seg_indptr;   /* [num_tasks + 1], starts at 0, each task >= 1 segment */
    const int64_t *seg_begin;    /* [seg_indptr[num_tasks]]: per task 0 first, strictly increasing, < len */
} dl_schedule;

/* Model m on case c for schedule s. s == NULL or one segment per task: dl_reference, bit for bit.
 * exact/orig ignore schedules (they are exact). s is validated first (dl_schedule_validate). */
int dl_reference_sched(const dl_case *c, dl_model m, const dl_model_params *p, const dl_schedule *s, dl_output *out);

/* 0 when s is NULL or fits c: num_tasks = B * Hkv, every task has a segment, its first begins at
 * 0, begins strictly increasing and < the request's length; else dl_fail naming the task. */
int dl_schedule_validate(const dl_case *c, const dl_schedule *s);
/* 1 when s is NULL or has one segment per task. */
int dl_schedule_trivial(const dl_schedule *s);

/* The split-KV kernels' chunk (dl_chunk_tokens in gpu/dl_cuda.cuh):
 * ceil(ceil(max_seq_len / num_splits) / tile) * tile tokens. */
int64_t dl_split_kv_chunk(int64_t max_seq_len, int num_splits, int64_t tile);
/* The schedule of the split-KV kernels on c: chunk = dl_split_kv_chunk(longest sequence of c,
 * num_splits, tile) (tile 64 for the tensor-core kernels); segment k of every task begins at
 * k * chunk for every k * chunk < len. Allocates (free with dl_schedule_free); *chunk_out
 * (may be NULL) gets the chunk. */
int dl_schedule_split_kv(const dl_case *c, int num_splits, int64_t tile, dl_schedule *s, int64_t *chunk_out);
void dl_schedule_free(dl_schedule *s);

#ifdef __cplusplus
}
#endif
#endif

/* dl_gpu.h - the C interface between the harness and the CUDA kernels.
 * Kernels are CUDA C exported through extern "C" launchers; the harness never
 * includes CUDA headers. Every launcher validates nothing: the harness checks
 * supports() and the case before calling it. */
#ifndef DL_GPU_H
#define DL_GPU_H

#include <stddef.h>
#include <stdint.h>
#include "../ref/dl_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device pointers and shape of one decode call. */
typedef struct dl_gpu_args_s {
    int batch_size, num_qo_heads, num_kv_heads, head_dim, page_size;
    dl_layout kv_layout;
    dl_dtype q_dtype, kv_dtype;
    float sm_scale;
    float p_scale;                    /* the fp8 kernels' static P scale: P = e4m3(p * p_scale), output / p_scale
                                       * (the golden file's p_scale; E8's S = 1, 256, 448) */
    int acc_promote_blocks;           /* fp8acc-none-wgmma: k32 blocks per FP32 promotion, 1, 2 or 4 (the golden
                                       * file's acc_promote_blocks) */
    int64_t num_pages;
    const void *q;                    /* [B, Hq, D] f16/bf16 bits */
    const void *k_cache, *v_cache;    /* raw encoding of kv_dtype */
    const float *k_scale, *v_scale;   /* [Hkv] */
    const int32_t *kv_indptr, *kv_indices, *kv_last_page_len;
    int max_seq_len;                  /* longest sequence in the batch (host-computed) */
    float *o;                         /* [B, Hq, D] fp32 out */
    float *lse;                       /* [B, Hq] natural-log lse out */
    int num_splits;                   /* split-KV chunks per sequence; 1 = no split */
    void *workspace;                  /* split-KV partials, dl_gpu_workspace_bytes() or the plan's */
    const void *plan;                 /* a dl_gpu_plan (host struct) for variants with a plan function */
    void *stream;                     /* cudaStream_t */
    int pdl;                          /* run --chain: 1 the chain's first layer, 2 a later one, 0 none. A
                                       * variant that supports it (decode_stream.cu's warp-consumer kernels,
                                       * DL_STREAM_PDL) lets the next layer launch early, and launches a later
                                       * layer with programmatic dependent launch after the previous one's */
} dl_gpu_args;

/* A work plan built on the host before launches (like FlashInfer's plan/run):
 * the variant's plan function fills it from the case; launches then read it
 * through dl_gpu_args.plan. sched_* is the schedule the kernel runs, in tokens,
 * for the split-aware CPU model: the segments of task t = b * Hkv + kvh are
 * [sched_begin[k], next begin or len) for k in [sched_indptr[t], sched_indptr[t+1]). */
typedef struct {
    int warps, ctas, num_tasks, num_slots, num_segs, num_partials;
    int num_static;                   /* slots [num_static, num_slots): the pool, claimed at run time (DL_STREAM_POOL) */
    int merge_kernel;                 /* C >= 1: split tasks merged by a second kernel (DL_STREAM_MERGE), C CTAs per
                                       * (task, query head) (DL_STREAM_MERGE_SPLIT); 0: by a warp */
    int merge_form;                   /* the merge kernel's form (DL_STREAM_MERGE_FORM, attempt #65): 0 two passes, 1 one */
    int order;                        /* the plan's walk, DL_ORDER_TASKS or DL_ORDER_HEADS (gpu/dl_plan.h) */
    int head_group;                   /* the heads order's group of KV heads (DL_STREAM_HEAD_GROUP), or 0: all of them */
    int page_stage;                   /* the page stage's KV heads a stage, 8 or 2 (DL_STREAM_STAGE, gpu/decode_stream.cu
                                       * page_shape), 0: none */
    int deep_rings;                   /* 1: the tile rings' deep form (DL_STREAM_DEEP, stream_shape's DEEP) */
    int chain_cap;                    /* a layer chained with PDL (any launch with DL_STREAM_CHAIN_CAP=2): the CTAs an
                                       * SM it is held to (unused shared memory padded onto each CTA:
                                       * dl_plan_chain_pad); 0: not held (standalone or chained plainly under the
                                       * default, or the kernel fits no more than the plan's) */
    int cluster;                      /* C >= 2: split tasks merged inside thread-block clusters of C CTAs
                                       * (DL_STREAM_MERGE=cluster, attempt #61); 0: not clustered */
    int cluster_per_task;             /* with cluster: K clusters a task (K > 1: their rows merged by a ticket) */
    int cut, seg_cost;                /* the heads order's cut (DL_CUT_*, gpu/dl_plan.h) and its cost in tiles */
    int unit;                         /* tokens per unit of the plan's cut: 64 (its tiles) or 16, 32 (DL_STREAM_UNIT) */
    int claim, claim_min, claim_own;  /* attempt #71 (make STREAM_CLAIM=1, DL_STREAM_CLAIM): the owner's tiles a claim on a
                                       * split task's segment, a thief's fewest unclaimed tiles, and a segment's first
                                       * tiles, its owner's unclaimed; claim 0: no claims */
    size_t workspace_bytes;           /* bytes the launch needs in dl_gpu_args.workspace */
    int64_t cta_tokens_max;           /* the busiest CTA's tokens (dl_plan_cta_tokens, gpu/dl_plan.h) */
    double cta_tokens_mean;           /* the mean over the CTAs with work */
    int64_t *sched_indptr, *sched_begin;
    void *dev;                        /* device copy of the work list */
    void *host;                       /* the plan function's own launch data (e.g. tensor maps) */
} dl_gpu_plan;
/* h_seq_len: [batch] sequence lengths (host). Returns 0 or dl_fail(). */
typedef int (*dl_plan_fn)(const struct dl_gpu_args_s *a, const int32_t *h_seq_len, dl_gpu_plan *out);
/* Frees what a plan function allocated (host and device). */
void dl_gpu_plan_free(dl_gpu_plan *p);

/* Bytes of workspace needed for num_splits > 1. */
size_t dl_gpu_workspace_bytes(const dl_gpu_args *a);

/* A launcher enqueues the kernel(s) on a->stream; returns 0 or records an error. */
typedef int (*dl_launch_fn)(const dl_gpu_args *a);

/* Device discovery: number of CUDA devices (0 if none or no driver); the
 * reason when 0 goes to dl_last_error(). */
int dl_gpu_device_count(void);

/* The SM count of the current device (cudaDevAttrMultiProcessorCount: a MIG
 * instance reports its own); 0 when there is no device or the build has no CUDA
 * (no error recorded). */
int dl_gpu_sm_count(void);

/* Split-KV heuristic: how many chunks per sequence so that the
 * batch * num_kv_heads * splits CTAs fill num_sms SMs (dl_gpu_sm_count(), or the
 * results' device_sm_count), while each chunk keeps >= 256 tokens of
 * a->max_seq_len. 1 = no split, and always 1 when num_sms <= 0 (no device). Reads
 * only the shape fields of a (no device access). */
int dl_gpu_choose_splits(const dl_gpu_args *a, int num_sms);

/* The launchers, one per row of gpu/dl_variants.def that has a kernel:
 * int dl_launch_<id>(const dl_gpu_args *a). Each enqueues its kernel(s) on a->stream
 * (and, for split-KV launches with a->num_splits > 1, the LSE merge). */
#define DL_VARIANT(id, name, compute, dequant, unit, model, has_kernel, ...) DL_DECLARE_LAUNCH_##has_kernel(id)
#define DL_DECLARE_LAUNCH_1(id) int dl_launch_##id(const dl_gpu_args *a);
#define DL_DECLARE_LAUNCH_0(id)
#include "dl_variants.def"
#undef DL_VARIANT
#undef DL_DECLARE_LAUNCH_1
#undef DL_DECLARE_LAUNCH_0

/* gpu/decode_stream.cu: the plan functions of the streaming family (warp consumers) and of its
 * warpgroup (wgmma) consumers */
/* the streaming variants', one per dequant policy (the page stage's rule differs: gpu/decode_stream.cu) */
int dl_stream_cast_make_plan(const dl_gpu_args *a, const int32_t *h_seq_len, dl_gpu_plan *out);
int dl_stream_fast_make_plan(const dl_gpu_args *a, const int32_t *h_seq_len, dl_gpu_plan *out);
int dl_stream_hw_make_plan(const dl_gpu_args *a, const int32_t *h_seq_len, dl_gpu_plan *out);
int dl_wgmma_make_plan(const dl_gpu_args *a, const int32_t *h_seq_len, dl_gpu_plan *out);
int dl_wgmma_bf16_make_plan(const dl_gpu_args *a, const int32_t *h_seq_len, dl_gpu_plan *out); /* bf16-fast-wgmma */

#ifdef __cplusplus
}
#endif
#endif

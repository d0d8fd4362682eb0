/* dl_model_sched.h - the model a kernel is judged against follows the schedule
 * the kernel ran (ref/dl_ref.h "Schedules"). A trivial schedule (none, or one
 * segment per task) is judged against the stored golden output; any other is
 * computed with dl_reference_sched on the fly, once per (inputs hash, model,
 * model parameters, schedule hash), and kept in memory so that several variants
 * that ran the same schedule share one computation. Pure host code. */
#ifndef DL_MODEL_SCHED_H
#define DL_MODEL_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include "../ref/dl_ref.h"
#include "dl_golden.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tokens per tile of the tensor-core split-KV kernels (kTile in gpu/decode_mma.cu and
 * gpu/decode_fp8_mma.cu; = the kv_block their params_ok requires). */
#define DL_MMA_SPLIT_TILE 64

/* The output of model m on golden g for schedule s (NULL = none): the stored
 * /golden/<m> when s is trivial or m is exact/orig, else dl_reference_sched
 * with g's model parameters, cached. *out stays valid until
 * dl_model_sched_clear(). Errors (an invalid schedule, a model the file lacks,
 * out of memory) are recorded with dl_fail and returned nonzero. */
int dl_model_for_schedule(const dl_golden *g, dl_model m, const dl_schedule *s, const dl_output **out);

/* FNV-1a 64 over num_tasks, seg_indptr and seg_begin (0 for NULL). */
uint64_t dl_schedule_hash(const dl_schedule *s);

/* Free every cached output. */
void dl_model_sched_clear(void);
/* Model outputs computed (not served from the cache or the file) since start (for tests and logs). */
int64_t dl_model_sched_computed(void);

#ifdef __cplusplus
}
#endif
#endif

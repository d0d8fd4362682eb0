/* dl_candidate.h - the candidate file: the output of a decode kernel that is
 * not ours (FlashInfer, a vendor library, a new prototype), written by any
 * program so that `decodelab compare` scores it against a golden file with the
 * same comparison routine and thresholds as `decodelab run`. Contract:
 * data/SCHEMA.md ("The candidate file").
 *
 * Reading validates everything before any scoring: format and version, the
 * golden hash (a candidate made from another golden file is refused), the
 * shapes against the golden's config, the dtype attributes, the LSE base and
 * the optional timing attributes. o is decoded to float32 and lse converted to
 * the natural log on reading. */
#ifndef DL_CANDIDATE_H
#define DL_CANDIDATE_H

#include <stdint.h>
#include "../ref/dl_ref.h"
#include "dl_golden.h"
#include "dl_results.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DL_CANDIDATE_FORMAT "decodelab-candidate"
#define DL_CANDIDATE_VERSION 1

typedef struct {
    /* required root attributes */
    char producer[128];       /* e.g. "flashinfer 0.6.18.post1" */
    char backend[48];         /* e.g. "cuda-core", "tc-fa2" */
    char settings[1024];      /* free text: how the producer was called */
    char golden_hash[32];     /* "fnv1a64:<16 hex>" of the golden inputs (dl_run_inputs_hash) */
    int lse_base;             /* as stored: 0 = natural ("e"), 2 = base 2 ("2") */
    /* optional root attributes ("" / NaN / -1 when absent) */
    char model[16];           /* golden model it claims to implement: exact fp32 bf16 fp8, or "" */
    char compute[16], dequant[16], unit[16]; /* its axes, "" when absent */
    char timing_mode[24];
    double median_us, min_us, max_us, mean_us, stdrel, elapsed_s, peak_read_gbps;
    int64_t samples, converged, num_splits, deterministic;
    char device_name[256], driver_version[16], runtime_version[16];
    /* data */
    int64_t batch_size, num_qo_heads, head_dim;
    dl_dtype o_dtype;         /* encoding of o in the file: DL_F32, DL_F16 or DL_BF16 */
    float *o;                 /* [B, Hq, D], decoded to float32 */
    float *lse;               /* [B, Hq], natural log; NULL when the file has none */
} dl_candidate;

/* Zero every field: strings "", numbers unknown (NaN / -1), no data. */
void dl_candidate_init(dl_candidate *c);

/* Read and validate path against the golden file g (its config and the hash
 * of its inputs). On error records one line naming path, the field and the
 * value, and returns nonzero (c is left freed). Caller frees with
 * dl_candidate_free. */
int dl_candidate_read(const char *path, const dl_golden *g, dl_candidate *c);

/* 1 if s names a golden model a candidate may claim (any but orig), else 0. */
int dl_candidate_model_ok(const char *s);
void dl_candidate_free(dl_candidate *c);

/* Write c to path (refused if it exists unless force): the root attributes
 * that are set (optional strings when non-empty, numbers when known), o in
 * c->o_dtype (from the float32 c->o, rounded to nearest even for f16/bf16),
 * lse as float32 in the base c->lse_base (c->lse holds natural logs; base 2
 * stores lse / ln 2) when c->lse is not NULL. Atomic: written to
 * "<path>.tmp.<pid>", fsync'ed, renamed, the directory fsync'ed; a failure
 * records what failed (dl_fail) and leaves path as it was. For tests and C
 * producers; the Python baselines write the same layout with h5py. */
int dl_candidate_write(const char *path, const dl_candidate *c, int force);

/* Score candidate c against golden g into row r (initialised by the caller
 * with dl_result_row_init): config and bytes from the golden case, the
 * variant name "ext:<producer>:<backend>", axes from the candidate or
 * "unknown", metrics of o and lse against the claimed model (impl
 * thresholds) and against exact (model-vs-exact thresholds), timing columns
 * from the candidate's attributes.
 * model_override: NULL = use the candidate's model attribute; "none" = judge
 * against exact only; else a model name. Without a model, the model columns
 * hold the comparison against exact and both verdicts use
 * dl_threshold_vs_exact(M, kv_dtype) with M = the candidate's compute axis
 * when it names a model (fp32, bf16, fp8), else bf16. */
int dl_candidate_score(const dl_golden *g, const char *golden_path, const dl_candidate *c, const char *cand_path,
                       const char *model_override, dl_result_row *r);

#ifdef __cplusplus
}
#endif
#endif

/* dl_run.h - pieces of `decodelab run` (harness/cmd_run.c) that are pure host
 * code and tested on the CPU: variant selection by glob, the bytes a decode
 * kernel must move, the expected count and checksum of the read reference, the
 * golden inputs' content hash, and filling a results row from a case. */
#ifndef DL_RUN_H
#define DL_RUN_H

#include <stdint.h>
#include "../gpu/dl_registry.h"
#include "dl_compare.h"
#include "dl_results.h"
#include "dl_timing.h"
#include "dl_golden.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Select the variants matching a comma-separated glob list (NULL or "" = all),
 * in registry order, into out[0..*n) (out has room for dl_num_variants).
 * Every pattern of the list must match at least one variant, else an error
 * names it (a typo never silently selects nothing). */
int dl_run_select(const char *globs, const dl_variant **out, int *n);

/* Bytes a decode kernel must move at least: each input read once, each output
 * written once. K/V count exact tokens (sum of sequence lengths x Hkv x D x
 * element size, for K and V); kv_pages counts whole pages referenced by the
 * page table instead (an upper bound for a page-granular reader); total uses
 * the exact-token figure. */
typedef struct {
    int64_t q, kv, kv_pages, scales, page_table, o, lse, total;
} dl_bytes;
void dl_run_bytes(const dl_case *c, dl_bytes *b);

/* What the read reference (gpu/dl_bench.h dl_bench_time_read) must read for
 * case c, for its self-check: *bytes = the K and V bytes of the exact tokens
 * (= dl_run_bytes kv), *xor_fold = the xor over every byte x read, at byte offset
 * o of its cache array, of (uint32)x << 8*(o % 4). contiguous = 0: the bytes the
 * page table points at (each request's tokens, all KV heads, per the layout);
 * 1: the first kv/2 bytes of the K cache and of the V cache (the fold stops at the end of
 * a cache that holds fewer: pages shared between requests; that reader is not run then). */
void dl_run_read_sum(const dl_case *c, int contiguous, int64_t *bytes, uint32_t *xor_fold);

/* 64-bit FNV-1a over every input dataset of the case (q, k_cache, v_cache,
 * k_scale, v_scale, kv_indptr, kv_indices, kv_last_page_len: their raw bytes,
 * each preceded by its byte length), written as "fnv1a64:<16 hex digits>". */
uint64_t dl_run_inputs_hash(const dl_case *c);
/* One FNV-1a 64 step over n bytes (start from h = 0xcbf29ce484222325). */
uint64_t dl_fnv1a64(uint64_t h, const void *p, size_t n);
void dl_run_hash_string(uint64_t h, char *buf, size_t n);

/* The split-KV count `decodelab run --splits` resolves to for case c:
 * requested when > 0, else dl_gpu_choose_splits for the case (at least 1). */
int dl_run_resolve_splits(const dl_case *c, int requested);

/* --resume: drop from sel[0..*nsel) every variant that already has a row in
 * the results table at results_path (absent = no rows) with the same golden
 * inputs hash, the same resolved split count, the same timing mode and the same
 * flush (column `flush`: "write", "read" or "none"; a SKIP or FAIL row, never
 * timed, matches any timing mode and flush; a SKIP row any split count).
 * Keeps the order of the rest. */
int dl_run_resume_filter(const char *results_path, const dl_case *c, uint64_t inputs_hash, int splits,
                         const char *timing_mode, const char *flush, const dl_variant **sel, int *nsel);

/* `run --save-outputs`: the variant's o [B, Hq, D] and lse [B, Hq] (natural log) on golden g as a candidate
 * file dir/<variant>.splits<r->num_splits>.h5 (data/SCHEMA.md; overwritten atomically), claiming the
 * variant's model, its axes from r, the schedule r->model_schedule in `settings`, so that `decodelab
 * compare` can judge them later, without a GPU, against any model. 0 or dl_fail(). */
struct dl_variant;
int dl_run_save_outputs(const char *dir, const dl_golden *g, const struct dl_variant *v, const dl_result_row *r,
                        const float *o, const float *lse);

/* run --chain's most layers (gpu/dl_bench.h DL_CHAIN_MAX; this header builds without CUDA) */
#define DL_RUN_CHAIN_MAX 64

/* How `run` checks and times (harness/run.c); the CLI fills it from its flags. */
typedef struct {
    int time;            /* time the variants that passed (and the read reference) */
    int time_failed;     /* also time a variant whose check FAILed (the row stays FAIL) */
    const char *save_dir; /* NULL, or a folder: each checked variant's o and lse as a candidate file there */
    int hot_l2, graph, graph_launches, peak_runs;
    int chain;           /* --chain L (>= 2): time L layers back to back (copies of the caches), else 0 */
    int flush;           /* dl_flush_mode (gpu/dl_bench.h) of a cold sample */
    int splits;          /* split-KV chunks per sequence; 0 = dl_gpu_choose_splits */
    dl_timing_opts topt; /* the sampling rules */
} dl_run_opts;

/* Check (and with o->time, time) the variants sel[0..nsel) on the golden case g
 * on the current CUDA device; rows[i] (initialized, config and variant columns
 * filled) receives variant i's verdict, metrics and timing. *any_fail is set when
 * a row FAILed. Prints the device line, the peak and the read reference. Returns
 * 0, or dl_fail() on a setup error (a variant's own CUDA error is a FAIL row). */
int dl_run_case(const dl_run_opts *o, const dl_golden *g, const dl_variant **sel, int nsel, dl_result_row *rows,
                int *any_fail);
/* The results columns timing_mode ("cold-l2", "graph-hot-l2", ...) and flush of o. */
const char *dl_run_timing_mode(const dl_run_opts *o);
const char *dl_run_flush_name(const dl_run_opts *o);
/* The variant's axes, model, kernel file and limits into a row. */
void dl_run_fill_variant(dl_result_row *r, const dl_variant *v);
/* "13.0" from a CUDA version number such as 13000. */
void dl_run_version_string(int v, char *buf, size_t n);
/* The reason dl_gpu_device_count() recorded, without its "no CUDA device: " prefix. */
const char *dl_run_no_device_reason(void);

/* Fill the golden-file and config columns of a row from a case and its inputs hash (dl_golden_inputs_hash, or
 * dl_run_inputs_hash(c)). */
void dl_run_fill_config(dl_result_row *r, const char *golden_path, const dl_case *c, uint64_t inputs_hash);

/* Fill the model-parameter columns of a row (kv_order, p_scale) from a golden file's parameters. */
void dl_run_fill_params(dl_result_row *r, const dl_model_params *p);

/* Can variant v be judged against a golden file made with model parameters p? Its own params_ok
 * (the parameters its kernel has built in) and the iteration order (kernels are forward only).
 * 1 yes; 0 no, with the SKIP reason in reason. */
int dl_run_params_ok(const dl_variant *v, const dl_model_params *p, char *reason, size_t n);

/* Copy one comparison's metrics (dl_compare_*) into a results row's metric columns. */
void dl_run_put_metrics(dl_result_metrics *d, const dl_metrics *m);

/* The judgement of one output (o [B,Hq,D] float32, lse [B,Hq] or NULL = judged
 * on o alone), shared by `run` and `compare`, into row r:
 *  - against model_out (the output of model m for the schedule the kernel ran)
 *    with dl_threshold_impl_len(m, r->max_seq_len) (dl_run_fill_config sets
 *    it first: the o limits of long sequences), o limits widened by o_round
 *    (dl_output_roundoff of the o encoding): model_* columns, limit_*,
 *    verdict_model PASS / FAIL;
 *  - against exact (NULL: not available) with the band dl_threshold_vs_exact(m,
 *    kv_dtype): exact_* columns, band_*, verdict_exact "within" / "above
 *    expected" (or "-"), never a FAIL;
 *  - verdict = verdict_model. Without a model (model_out NULL: a candidate that
 *    claims none) the model columns repeat the exact ones, verdict_model is "-"
 *    and the band decides: PASS within it, FAIL above (or without exact).
 * Returns the verdict. */
dl_verdict dl_run_judge(dl_result_row *r, const float *o, const float *lse, const dl_output *model_out, dl_model m,
                        const dl_output *exact, dl_dtype kv_dtype, double o_round);

/* The judgement of two launches of one kernel on the same inputs (o[0], lse[0] the first; o[1], lse[1] the
 * second; no, nl their lengths): r->deterministic = 1 where they agree bit for bit, and the first is judged into
 * r as dl_run_judge does. Where they differ, the second is judged as well and the row's verdict is the worse of
 * the two: a kernel whose repeat launch goes wrong (state the first left behind: tickets, workspace) FAILs, the
 * row then holding the second launch's errors and a reason that says so; two launches that differ but both pass
 * keep PASS with the reason "two launches on the same inputs differ bitwise (...)". Returns the row's verdict. */
dl_verdict dl_run_judge_launches(dl_result_row *r, float *const o[2], float *const lse[2], size_t no, size_t nl,
                                 const dl_output *model_out, dl_model m, const dl_output *exact, dl_dtype kv_dtype);

#ifdef __cplusplus
}
#endif
#endif

/* dl_registry.h - the static registry of decode variants: one row per variant.
 * Names are <compute>-<dequant>-<unit>, the same string in the CLI, results
 * and plots. Adding a variant is adding a row to gpu/dl_variants.def (which
 * gpu/registry.c and gpu/dl_gpu.h both expand) and a kernel. */
#ifndef DL_REGISTRY_H
#define DL_REGISTRY_H

#include "dl_gpu.h"
#include "../ref/dl_ref.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { DL_COMPUTE_FP32 = 0, DL_COMPUTE_BF16, DL_COMPUTE_FP8 } dl_compute;
/* NONE: an FP8 cache feeds FP8 arithmetic as stored (no conversion at all);
 * HW: the packed hardware conversion cvt.rn.f16x2.e4m3x2 / e5m2x2 (two codes per instruction) */
typedef enum { DL_DEQUANT_CAST = 0, DL_DEQUANT_FAST, DL_DEQUANT_NONE, DL_DEQUANT_HW } dl_dequant;
/* MMA: mma.sync with the GQA heads as M rows, cp.async tiles, one CTA per (request, KV head);
 * STREAM: mma.sync with tokens as M and heads as N, a bulk-copy (TMA) producer warp and the
 * balanced plan of gpu/plan.c (gpu/decode_stream.cu);
 * WGMMA: the warpgroup MMA (wgmma.mma_async: QGMMA / HGMMA in SASS, no HMMA): fp8-none-wgmma
 * (issue 12), and the FlashInfer baseline's tc-fa3 rows; tests/test_census.c checks the SASS. */
typedef enum { DL_UNIT_SIMT = 0, DL_UNIT_MMA, DL_UNIT_WGMMA, DL_UNIT_STREAM } dl_unit;

typedef struct dl_variant {
    const char *name;        /* e.g. "fp32-cast-simt" */
    dl_compute compute;
    dl_dequant dequant;
    dl_unit unit;
    dl_model model;          /* the golden model it must match */
    const char *file;        /* gpu/<file>.cu holding its kernel */
    const char *summary;     /* one line: what it is */
    dl_launch_fn launch;     /* NULL when built without CUDA */
    /* Returns 1 if the variant can run cfg; else 0 and writes why into reason. */
    int (*supports)(const struct dl_variant *v, const dl_config *cfg, char *reason, size_t n);
    /* Shell glob (fnmatch) over the demangled kernel names (c++filt) that selects this
     * variant's kernel instantiations in the SASS census and in Nsight Compute output
     * (harness/census.c), e.g. "*::simt_decode_kernel<*, false>(*". */
    const char *kernel;
    /* NULL, or: returns 1 if the golden file's model parameters are the ones the kernel
     * has built in (e.g. its tile = the model's kv_block); else 0 and why (a SKIP, never a
     * FAIL that would blame the kernel for a file made with other settings). */
    int (*params_ok)(const struct dl_variant *v, const dl_model_params *p, char *reason, size_t n);
    /* NULL, or the plan function the harness calls once per case before launching
     * (the launch reads the plan through dl_gpu_args.plan; the plan's schedule
     * decides the model the variant is judged by). */
    dl_plan_fn plan;
    int splits; /* 1: honours dl_gpu_args.num_splits; 0: runs unsplit or schedules itself */
} dl_variant;

extern const dl_variant dl_variants[];
extern const int dl_num_variants;

const dl_variant *dl_variant_find(const char *name);
/* The split-KV count variant v launches with when the case resolves to `resolved`
 * (--splits or dl_gpu_choose_splits): resolved, or 1 for a variant that never splits. */
int dl_variant_splits(const dl_variant *v, int resolved);
/* want[m] = 1 for every model m that some variant is judged by on cfg (its supports and params_ok
 * accept cfg and p, whether or not this binary holds its kernel), else 0: the emulated models a
 * golden file of cfg needs for `decodelab run` (decodelab golden --models auto adds exact and orig). */
void dl_variant_models(const dl_config *cfg, const dl_model_params *p, int want[DL_MODEL_COUNT]);
/* Shell-style glob match (fnmatch) of a comma-separated list of patterns. */
int dl_variant_matches(const dl_variant *v, const char *globs);
const char *dl_compute_name(dl_compute c);
const char *dl_dequant_name(dl_dequant d);
const char *dl_unit_name(dl_unit u);

#ifdef __cplusplus
}
#endif
#endif

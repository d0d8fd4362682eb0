/* dl_golden.h - the golden file (HDF5) contract, see data/SCHEMA.md.
 * Writing is atomic: to "<path>.tmp.<pid>", flushed, then renamed; nothing
 * half-written is left behind on error. Reading validates format, version,
 * every dataset's presence, rank, shape and dtype attribute, config ranges and
 * the page table before anything sized by the file is allocated. */
#ifndef DL_GOLDEN_H
#define DL_GOLDEN_H

#include "../ref/dl_ref.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DL_GOLDEN_FORMAT "decodelab-golden"
#define DL_GOLDEN_VERSION 1

typedef struct {
    dl_case c;
    int have[DL_MODEL_COUNT];         /* which /golden/<model> groups are present */
    dl_output out[DL_MODEL_COUNT];
    dl_model_params params;           /* read from /golden attributes */
    char generator[256];
    int allow_nonfinite;              /* /config@allow_nonfinite (optional, default 0): NaN/Inf inputs accepted */
    uint64_t inputs_hash;             /* dl_golden_inputs_hash's memo (when have_inputs_hash) */
    int have_inputs_hash;
} dl_golden;

/* Write case + the given model outputs (outs[i] for i < n) to path.
 * Refuses to overwrite an existing file unless force. */
int dl_golden_write(const char *path, const dl_case *c, const dl_output *outs, int n,
                    const dl_model_params *p, int force);
/* The inputs' checks dl_golden_read makes (finite q and used cache slots, NaN poison slots, scales finite and > 0),
 * made before anything is written: 0, or dl_fail("PATH: refusing to write: ..."). dl_golden_write calls it too. */
int dl_golden_check_case(const char *path, const dl_case *c);
/* Read and validate a golden file. Caller frees with dl_golden_free. */
int dl_golden_read(const char *path, dl_golden *g);
void dl_golden_free(dl_golden *g);
/* dl_run_inputs_hash(&g->c), computed on the first call for this golden and remembered: a byte-serial hash of every
 * input byte (~1.2 s per GiB on a 2-core CI machine) that the rows, candidates and --resume of one command all need,
 * and `inspect` or `check` never. The memo is a cache: g must not be a const object, nor its inputs change after
 * (a golden zeroed, or read by dl_golden_read, starts without one). */
uint64_t dl_golden_inputs_hash(const dl_golden *g);

/* Program version and git commit, e.g. "decodelab 0.1.0 (git abc1234)". */
const char *dl_generator_string(void);

#ifdef __cplusplus
}
#endif
#endif

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

#ifdef __cplusplus
}
#endif
#endif

/* probes.c - the table of the E2 probe kernels (gpu/dl_probes.def; kernels in gpu/e2_probes.cu).
 * Plain C so that a build without CUDA can list them. */
#include "dl_probes.h"

#include <string.h>

#include "../ref/dl_common.h"

#ifndef DL_HAVE_CUDA
#define DL_HAVE_CUDA 0
#endif

const dl_probe dl_probes[] = {
#define DL_PROBE(id, form, count, ptx, note) {#id, "e2_probe_" #id, form, count, ptx, note},
#include "dl_probes.def"
#undef DL_PROBE
};
const int dl_num_probes = (int)(sizeof dl_probes / sizeof dl_probes[0]);

int dl_probe_find(const char *name)
{
    for (int i = 0; name && i < dl_num_probes; i++)
        if (!strcmp(dl_probes[i].name, name)) return i;
    return -1;
}

#if !DL_HAVE_CUDA
int dl_probe_launch(int i, uint32_t *checksum)
{
    (void)i;
    (void)checksum;
    return dl_fail("built without CUDA (make CUDA=0 or nvcc not found): the probe kernels are not in this binary");
}
#endif

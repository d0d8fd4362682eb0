/* fuzz_experiment.c - libFuzzer target: the experiment-file parser and
 * validator (dl_xp_load, harness/experiment.c) and the sweep expansion of an
 * accepted file (dl_xp_points, full and reduced). The input bytes become a
 * temporary .cfg file. Seeds: tests/fuzz/corpus/experiment (experiments/E*.cfg). */
#include <stdlib.h>

#include "../../harness/dl_experiment.h"
#include "fuzz_common.h"

FUZZ_INIT("dl_fuzz_experiment", ".cfg")

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static dl_experiment x; /* large: keep it off the stack */
    if (fuzz_write(data, size)) abort();
    if (dl_xp_load(fuzz_path, &x) == 0) {
        for (int reduced = 0; reduced < 2; reduced++) {
            dl_xp_point *pts = NULL;
            int n = 0;
            if (dl_xp_points(&x, reduced, "/nonexistent-dl-fuzz-cache", &pts, &n) == 0) dl_xp_points_free(pts, n);
        }
    }
    return 0;
}

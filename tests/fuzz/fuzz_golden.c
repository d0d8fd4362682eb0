/* fuzz_golden.c - libFuzzer target: the golden-file loader and validator.
 * The input bytes become a temporary .h5 file read with dl_golden_read (which
 * validates everything before allocating); a file it accepts must also pass
 * the page-table and value checks the kernels rely on. Any crash, sanitizer
 * report, leak or allocation over -malloc_limit_mb is a finding.
 * Seeds: tests/fuzz/corpus/golden (small golden files). */
#include <stdlib.h>

#include "../../harness/dl_golden.h"
#include "fuzz_common.h"

FUZZ_INIT("dl_fuzz_golden", ".h5")

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (fuzz_write(data, size)) abort(); /* the scratch file must be writable */
    dl_golden g;
    if (dl_golden_read(fuzz_path, &g) == 0) {
        /* accepted: the invariants every consumer relies on must hold */
        if (dl_case_validate(&g.c, fuzz_path) != 0) abort();
        if (!g.allow_nonfinite && dl_case_check_values(&g.c, fuzz_path) != 0) abort();
        dl_golden_free(&g);
    }
    return 0;
}

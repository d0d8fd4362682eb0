/* fuzz_results.c - libFuzzer target: the results-table reader
 * (dl_results_read, used by `run --out` before appending and by --resume).
 * The input bytes become a temporary .h5 file. Seeds: tests/fuzz/corpus/results. */
#include <stdlib.h>

#include "../../harness/dl_results.h"
#include "fuzz_common.h"

FUZZ_INIT("dl_fuzz_results", ".h5")

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (fuzz_write(data, size)) abort();
    dl_result_row *rows = NULL;
    int64_t n = 0;
    if (dl_results_read(fuzz_path, &rows, &n) == 0) {
        /* every string column of an accepted row is terminated inside its buffer */
        for (int64_t r = 0; r < n; r++)
            for (int i = 0; i < dl_results_num_columns(); i++) {
                char cell[16384];
                dl_results_format_cell(&rows[r], i, cell, sizeof cell);
            }
        free(rows);
    }
    return 0;
}

/* cli_util.h - small helpers shared by the CLI subcommands (harness/cmd_*.c):
 * strict flag-value parsing that records "--flag: 'value' ..." on error, getopt_long's errors,
 * the model list, a monotonic clock and file sizes. */
#ifndef DL_CLI_UTIL_H
#define DL_CLI_UTIL_H

#include <stdint.h>
#include "../ref/dl_ref.h"

/* A command-line argument a of `decodelab cmd` that no flag of cmd claimed: a flag is
 * refused ("unknown flag"); else a is the one FILE (what: e.g. "golden file") of cmd, and
 * a second one is refused. Returns 0, or -1 with the error recorded. */
int dl_cli_file_arg(const char *cmd, const char *what, const char *a, const char **file);
/* Record the error of getopt_long's code ':' (a flag's value missing: "<flag>: missing value") or '?' (an
 * unknown option, or a value given to a flag that takes none: "unknown option '<arg>'") for `decodelab
 * cmd`; returns -1. The subcommands parse with getopt_long, optstring ":h", opterr = 0. */
int dl_cli_getopt_fail(const char *cmd, int code, char **argv);
/* Parse a whole string as an integer in lo..hi; on error records
 * "<flag>: '<s>' is not an integer in lo..hi" and returns -1. */
int dl_parse_i64(const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out);
int dl_parse_u64(const char *flag, const char *s, uint64_t *out);
/* A finite number (strtod syntax). */
int dl_parse_f64(const char *flag, const char *s, double *out);
/* Comma-separated model names ("exact,fp8" or "all") into want[DL_MODEL_COUNT]. */
int dl_parse_models(const char *flag, const char *s, int want[DL_MODEL_COUNT]);
/* Seconds on a monotonic clock. */
double dl_now(void);
/* Size of a file in bytes, -1 if it cannot be stat'ed. */
int64_t dl_file_size(const char *path);
/* Units distance between two floats (0 = bit-identical; +0 and -0 are 0 apart). */
int64_t dl_ulp_distance(float a, float b);

#endif

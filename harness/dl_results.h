/* dl_results.h - the results table of `decodelab run`: one row per (golden
 * file, variant), appended atomically to an HDF5 file and rewritten in full to
 * its CSV twin. Schema: data/SCHEMA.md (results table) (one 1-D dataset per column
 * under the group /results; the column table in results.c is the source).
 *
 * Atomic append: take an exclusive flock on its directory, read every row of
 * the existing file (if any), write old rows + new rows to "<path>.tmp.<pid>"
 * and "<csv>.tmp.<pid>", fsync both, rename over the originals, fsync the
 * directory. Any failure before the renames leaves the old files untouched
 * and removes the temporaries. A .h5 lost with its CSV twin kept: the twin's rows are read back. */
#ifndef DL_RESULTS_H
#define DL_RESULTS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DL_RESULTS_FORMAT "decodelab-results"
/* 2: + flush, ref_read_s, ref_read_pages_s, ref_read_contig_s, frac_ref (issue 10); per-head
 * metrics, model_schedule, limit_* and band_* replacing thr_* (issue 11).
 * Version 1 tables still read (data/SCHEMA.md says how their rows are filled);
 * an append rewrites the table as version 2. */
/* 3: + dist_sink_tokens, dist_sink_delta (the sink distribution), kv_order, p_scale (model parameters
 * of the golden file), p_underflow_frac, p_underflow_pred, p_cast_nmse (the P cast, experiment E8). */
/* 4: + model_o_head_excess, model_o_flip_allow (the fp8 models' P-rounding flip allowance). */
/* 5: + plan_cta_tokens_max, plan_cta_tokens_mean (a planned variant's busiest CTA and the mean, issue 10). */
#define DL_RESULTS_VERSION 5
#define DL_RESULTS_VERSION_MIN 1

/* Error metrics of one tensor against one reference (mirrors dl_metrics). */
typedef struct {
    int64_t n, nonfinite, unwritten;
    double rel_l2, nmse, max_abs, max_rel;
    double head_rel_l2;   /* largest per-(request, head) relative L2 (version 2) */
    int64_t head_worst;   /* that (request, head) as b * num_qo_heads + h; lse: the one of max_abs (version 2) */
    double head_excess;   /* per-head figure beyond the model's flip allowance (version 4; model_o only) */
} dl_result_metrics;

/* One row. Strings are owned by the row (fixed buffers); unknown numbers are
 * NaN (double) or -1 (integer). */
typedef struct {
    /* golden file */
    char golden_path[1024];
    char golden_hash[32];       /* "fnv1a64:<16 hex>" of the input datasets (dl_run_inputs_hash) */
    /* variant */
    char variant[64], compute[16], dequant[16], unit[16], model[16], kernel_file[64];
    /* config: every field of dl_config */
    char config_name[512];
    int64_t batch_size, num_qo_heads, num_kv_heads, head_dim, page_size;
    char kv_layout[8], q_dtype[8], kv_dtype[8];
    double sm_scale;
    uint64_t seed;
    char distribution[32];
    double dist_mean, dist_std, dist_lo, dist_hi, dist_outlier_prob, dist_outlier_var;
    int64_t dist_num_outlier_channels;
    double dist_channel_scale;
    int64_t dist_sink_tokens;   /* (version 3) sink distribution: leading sink tokens per request */
    double dist_sink_delta;     /* (version 3) sink distribution: their score boost */
    int64_t seq_len_min, seq_len_max, num_explicit_lens;
    char seq_lens[8192];        /* the actual per-request lengths, comma-separated (truncated with "..." if huge) */
    char kv_scale_mode[24];
    double kv_scale_value;
    int64_t num_pages, total_tokens, max_seq_len, num_splits;
    /* checks */
    dl_result_metrics model_o, model_lse, exact_o, exact_lse;
    char model_schedule[64];    /* the schedule the model followed: "none" (as stored) or "split-kv:<n>x<chunk>" ... */
    int64_t plan_cta_tokens_max; /* (version 5) a planned variant: the tokens of its busiest CTA (-1: no plan) */
    double plan_cta_tokens_mean; /* (version 5) and the mean over its CTAs with work (NaN: no plan) */
    char kv_order[12];          /* (version 3) the golden file's model kv_order: "forward" / "reverse"; "" unknown */
    double p_scale;             /* (version 3) the golden file's model p_scale */
    double p_underflow_frac;    /* (version 3) CPU model rows: fraction of the non-sink P values that entered P*V as 0 */
    double p_cast_nmse;         /* (version 3) CPU model rows (bf16, fp8, fp8acc): the error of the P cast alone */
    double model_o_flip_allow;  /* (version 4) the golden model's P-rounding flip allowance relative to ||o||
                                 * (fp8, fp8acc; 0 for the other models), added to limit_o_rel_l2 */
    double p_underflow_pred;    /* (version 3) sink cases, fp8/fp8acc rows, forward order: the fraction predicted by
                                 * Phi((delta + sigma*E[max of k N(0,1)] + ln(2^-10) ... ), see data/SCHEMA.md */
    double limit_o_rel_l2, limit_o_head_rel_l2, limit_lse_abs; /* implementation limits used (o: output rounding included) */
    double band_o_rel_l2, band_lse_abs;                         /* expected precision band vs exact */
    char verdict_model[12];     /* PASS FAIL (implementation, against the model), "-" none */
    char verdict_exact[24];     /* "within" / "above expected" (the band), "-" without exact */
    char verdict[12];           /* PASS FAIL SKIP: verdict_model (or SKIP); decides the exit status */
    int64_t deterministic;      /* 1 two launches bitwise equal, 0 not, -1 not checked */
    char reason[512];           /* why SKIP, why FAIL (error text), or why not timed; "" otherwise */
    /* timing */
    char timing_mode[24];       /* "none" "cold-l2" "hot-l2" "graph-cold-l2" "graph-hot-l2" */
    char flush[8];              /* L2 flush per timed sample: "write" "read"; "none" (hot/untimed); "unknown" */
    int64_t graph_launches;     /* launches per graph replay (graph modes), else 1 */
    int64_t time_samples, time_converged;
    double time_median_s, time_min_s, time_max_s, time_mean_s, time_stdrel, time_elapsed_s;
    /* bytes the kernel must move */
    int64_t bytes_q, bytes_kv, bytes_kv_pages, bytes_scales, bytes_page_table, bytes_o, bytes_lse, bytes_total;
    double gbps, peak_read_gbps, frac_peak;
    /* the read reference of the case (gpu/dl_bench.h dl_bench_time_read), seconds */
    double ref_read_s;          /* min of the two readers */
    double ref_read_pages_s, ref_read_contig_s; /* page-table order, contiguous: median of each */
    double frac_ref;            /* ref_read_s / time_median_s */
    /* device and provenance */
    char device_name[256];
    int64_t device_sm_count, device_l2_bytes;
    int64_t sm_clock_mhz_before, sm_clock_mhz_after; /* NVML; -1 when unavailable */
    char clock_source[64];      /* "nvml" or why not */
    char driver_version[16], runtime_version[16];
    char generator[256];        /* dl_generator_string(): version + git commit */
    char date_utc[32];          /* ISO 8601, e.g. 2025-01-31T12:00:00Z */
    char hostname[64];
} dl_result_row;

/* Initialise a row: empty strings, every number unknown (NaN / -1), verdicts "". */
void dl_result_row_init(dl_result_row *r);

/* Column table access (for tests and the CSV writer). */
typedef enum { DL_COL_STR = 0, DL_COL_I64, DL_COL_U64, DL_COL_F64 } dl_col_type;
int dl_results_num_columns(void);
const char *dl_results_column_name(int i);
dl_col_type dl_results_column_type(int i);
/* Write column i of row r as CSV-ready text into buf (not quoted). */
void dl_results_format_cell(const dl_result_row *r, int i, char *buf, size_t n);

/* CSV twin path: "<stem>.csv" if path ends in ".h5", else "<path>.csv". */
void dl_results_csv_path(const char *h5_path, char *buf, size_t n);

/* Append rows[0..n) to the table at h5_path (created if absent), atomically. When the .h5 is absent but
 * its CSV twin exists (the .h5 lost), the twin's rows are kept (old + new rows in both files); a twin that
 * is not a results CSV is refused. The targets are checked as dl_results_check_out does, under the lock,
 * before anything is written: a failure leaves both files as they were. */
int dl_results_append(const char *h5_path, const dl_result_row *rows, int64_t n);

/* Whether h5_path can take dl_results_append, checked before long work (run, compare, experiment): its
 * directory exists and is writable; h5_path is absent or a regular file that reads as a results table;
 * its CSV twin is absent or a regular file whose header is a results table's (any version), or, when
 * the .h5 is absent, a twin that reads whole (dl_results_read_csv). 0, or -1 with one line naming the
 * path and why. Takes no lock; writes nothing. */
int dl_results_check_out(const char *h5_path);

/* Read every row of h5_path. *rows is allocated (caller frees with free()). */
int dl_results_read(const char *h5_path, dl_result_row **rows, int64_t *n);

/* Read every row of a results table's CSV twin (as dl_results_append writes it: every column, numbers
 * at full precision, so the rows equal the .h5's). For a table whose .h5 was lost. *rows as above. */
int dl_results_read_csv(const char *csv_path, dl_result_row **rows, int64_t *n);

/* Test hook: when set to 1, dl_results_append fails after writing the
 * temporary files and before renaming them (simulates a crash/disk error). */
extern int dl_results_fail_before_rename;

/* Fill date_utc (now) and hostname. */
void dl_result_row_stamp(dl_result_row *r);

/* The current UTC time (ISO 8601, "...Z") into date_utc and this machine's host name ("unknown" if it
 * cannot be read) into hostname: the stamp of a results row and of a census row. */
void dl_stamp_date_host(char *date_utc, size_t ndate, char *hostname, size_t nhost);
/* Serialise the appenders of a table file: open the directory holding path and take an exclusive
 * flock on it. Returns the descriptor (close it to unlock), or -1 with a dl_fail message naming
 * who ("results", "census") and the directory. */
int dl_lock_dir_of(const char *who, const char *path);
/* Whether the directory holding path can be opened (a table's file checked before long work): 0, or -1 with the
 * same message as dl_lock_dir_of's. Takes no lock. */
int dl_check_dir_of(const char *who, const char *path);

/* Write one CSV field (RFC 4180 quoting when it holds a comma, quote, newline or edge space). */
void dl_csv_put(FILE *f, const char *s);
/* Read one CSV record (RFC 4180) into fields[0..max) (the text in buf, cap bytes): the number of
 * fields, 0 at end of file, -1 when a record has more than max fields or cap bytes. */
int dl_csv_read_record(FILE *f, char **fields, int max, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif

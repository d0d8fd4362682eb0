/* dl_experiment.h - declarative experiments (`decodelab experiment FILE`):
 * one libconfig file per question (experiments/E*.cfg, format in
 * experiments/README.md) holding the question, the sweep (golden-file fields
 * as lists of values, the GPU variants), the measure and one decision rule per
 * hypothesis. This module loads and validates a file, expands the sweep into
 * points (each a `decodelab golden` flag set with a content hash naming its
 * cached golden file), and judges each hypothesis on results rows and census
 * rows: HOLDS, REJECTED or INCONCLUSIVE with the reason. Running the steps and
 * writing the report is harness/cmd_experiment.c. */
#ifndef DL_EXPERIMENT_H
#define DL_EXPERIMENT_H

#include <stdint.h>
#include "dl_census.h"
#include "dl_results.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DL_XP_MAX_FIELDS 24
#define DL_XP_MAX_VALUES 32
#define DL_XP_MAX_TERMS 8
#define DL_XP_MAX_HYP 12
#define DL_XP_MAX_VARIANTS 24
#define DL_XP_MAX_POINTS 4096
#define DL_XP_VAL 64 /* a value holds at most 63 characters; a longer one is refused */

/* A sweep field: a `decodelab golden` flag name with underscores (kv_dtype = --kv-dtype) and its values. */
typedef struct {
    char name[48];
    int nvals;
    char vals[DL_XP_MAX_VALUES][DL_XP_VAL];
} dl_xp_field;

/* One term of a selector or filter: sweep field (or kv_dtype for census rows) in any of vals. */
typedef struct {
    char key[48];
    int nvals;
    char vals[DL_XP_MAX_VALUES][DL_XP_VAL];
} dl_xp_term;

/* Which rows: variant glob ("ref-<model>" for a CPU reference model) and field terms; metric, when
 * set, replaces the rule's metric for these rows (e.g. p_underflow_frac over p_underflow_pred). */
typedef struct {
    int present;
    char variant[128];
    char metric[128];
    int nterms;
    dl_xp_term terms[DL_XP_MAX_TERMS];
} dl_xp_sel;

typedef enum { DL_XP_RATIO = 0, DL_XP_VALUE, DL_XP_CENSUS } dl_xp_kind;

typedef struct {
    char claim[512];        /* the hypothesis in a sentence */
    dl_xp_kind kind;
    char metric[128];       /* results column (ratio/value) or census metric ("conv", "op:HMMA", an ncu metric) */
    char source[8];         /* census: "sass" or "ncu" */
    dl_xp_sel num, den;     /* den only for ratio (and optionally census) */
    int nwhere;
    dl_xp_term where[DL_XP_MAX_TERMS];
    double lo, hi;          /* the decision interval for the ratio or value */
    double noise_k;         /* an out-of-interval value within noise_k x measured stdrel of the bound is unresolved */
    int line;               /* source line in the file */
} dl_xp_hyp;

typedef struct {
    char path[1024];
    char name[128];
    char question[1024];
    int nfields, nreduced;
    dl_xp_field fields[DL_XP_MAX_FIELDS];
    dl_xp_field reduced[DL_XP_MAX_FIELDS];   /* overrides used without a GPU (or with --reduced) */
    int nvariants;
    char variants[DL_XP_MAX_VARIANTS][64];   /* registry globs; none = a CPU-only experiment */
    char models[256];                        /* golden models to compute ("all" or a comma list) */
    int time, census, ncu, hot_l2;
    double max_time_s;
    int nhyp;
    dl_xp_hyp hyp[DL_XP_MAX_HYP];
} dl_experiment;

/* One point of the sweep. */
typedef struct {
    int nvals;
    char names[DL_XP_MAX_FIELDS][48];
    char vals[DL_XP_MAX_FIELDS][DL_XP_VAL];
    char label[512];         /* "kv_dtype=e4m3 distribution=outlier" (swept fields only) */
    char hash[24];           /* 16 hex digits: FNV-1a of the canonical golden flags */
    char golden[1100];       /* <cache>/<hash>.h5 */
    int argc;
    char *argv[2 * DL_XP_MAX_FIELDS + 8]; /* "golden" --flag value ... --models M (owned, dl_xp_points_free) */
} dl_xp_point;

/* Load and validate: any error is one line "FILE:LINE: key: value: why" and -1. */
int dl_xp_load(const char *path, dl_experiment *x);
/* Expand the sweep (with the reduced overrides when reduced) into points under cache_dir;
 * validates every point through `decodelab golden`'s own option parser. */
int dl_xp_points(const dl_experiment *x, int reduced, const char *cache_dir, dl_xp_point **pts, int *n);
void dl_xp_points_free(dl_xp_point *pts, int n);
/* The value of field name at a point ("" if the field is not set there). */
const char *dl_xp_point_value(const dl_xp_point *p, const char *name);

typedef enum { DL_XP_HOLDS = 0, DL_XP_REJECTED, DL_XP_INCONCLUSIVE } dl_xp_verdict;
const char *dl_xp_verdict_name(dl_xp_verdict v);  /* "HOLDS" "REJECTED" "INCONCLUSIVE" */

typedef struct {
    char what[600];          /* point label and variants */
    double num, den, value;  /* value = num/den (ratio, census with den) or num */
    double noise;            /* relative noise of value (0 when deterministic) */
    int status;              /* 0 in [lo, hi], 1 out (resolved), 2 out but within noise */
    int unconverged;         /* a timing-derived value from a row whose sampling hit the time cap (time_converged = 0) */
} dl_xp_obs;

typedef struct {
    dl_xp_verdict verdict;
    char reason[768];
    int nobs, nin, nout, nunclear, nmissing;
    dl_xp_obs *obs;          /* owned: dl_xp_result_free */
    double vmin, vmax;       /* range of the observed values */
} dl_xp_result;

/* Judge hypothesis h on results rows (ratio/value) or census rows (census). Rows
 * are matched to points by golden_path. */
int dl_xp_evaluate(const dl_experiment *x, int h, const dl_xp_point *pts, int npts, const dl_result_row *rows,
                   int64_t nrows, const dl_census_row *crows, int64_t ncrows, dl_xp_result *out);
void dl_xp_result_free(dl_xp_result *r);

/* A numeric results column of a row by name (NaN if not numeric or unknown). */
double dl_xp_row_metric(const dl_result_row *r, const char *column);

#ifdef __cplusplus
}
#endif
#endif

/* dl_common.h - shared types of decodelab: dtypes, layouts, the case config,
 * and the one error-reporting mechanism of the CPU library (dl_fail / DL_TRY).
 *
 * Errors: a library function that can fail returns int (0 ok, nonzero error)
 * after recording one line with dl_fail(); the CLI prints dl_last_error() and
 * exits with status 2. Nothing in ref/ or harness/ calls exit(). */
#ifndef DL_COMMON_H
#define DL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DL_VERSION "0.1.0"

typedef enum { DL_F32 = 0, DL_F16, DL_BF16, DL_E4M3, DL_E5M2, DL_DTYPE_COUNT } dl_dtype;
typedef enum { DL_NHD = 0, DL_HND } dl_layout;
typedef enum {
    DL_DIST_NORMAL = 0,      /* N(mean, std) */
    DL_DIST_UNIFORM,         /* U(lo, hi) */
    DL_DIST_OUTLIER,         /* FA3-style: N(0,1) + N(0,outlier_std)*Bernoulli(outlier_prob) */
    DL_DIST_CHANNEL_OUTLIER, /* N(0,1); keys: a few head_dim channels scaled by channel_scale */
    DL_DIST_SINK,            /* N(mean, std); the first sink_tokens keys of each request shifted so that every
                              * query head of the group scores sink_delta higher on them (an attention sink) */
    DL_DIST_COUNT
} dl_dist;
typedef enum {
    DL_SCALE_ABSMAX_HEAD = 0, /* per KV head: absmax / format max */
    DL_SCALE_ABSMAX_TENSOR,   /* one scale for all heads: absmax over the tensor / format max */
    DL_SCALE_GIVEN            /* kv_scale_value for every head (per-tensor) */
} dl_scale_mode;

/* Distribution parameters; unused fields are ignored by the distribution. */
typedef struct {
    dl_dist kind;
    double mean, std;           /* normal */
    double lo, hi;              /* uniform */
    double outlier_prob;        /* outlier: Bernoulli probability (default 0.001) */
    double outlier_var;         /* outlier: variance of the added normal (default 100, i.e. N(0,100) = std 10) */
    int64_t num_outlier_channels; /* channel_outlier: how many head_dim channels of K are scaled */
    double channel_scale;       /* channel_outlier: factor applied to those channels */
    int64_t sink_tokens;        /* sink: how many leading tokens of each request are sinks (default 4) */
    double sink_delta;          /* sink: the score boost of a sink token, in units of sm_scale * q.k (default 8) */
} dl_dist_params;

#define DL_MAX_EXPLICIT_LENS 4096

/* Everything that defines a case. A case's name is its parameters (dl_config_name). */
typedef struct {
    int64_t batch_size, num_qo_heads, num_kv_heads, head_dim, page_size;
    dl_layout kv_layout;
    dl_dtype q_dtype;   /* DL_F32, DL_F16, DL_BF16 */
    dl_dtype kv_dtype;  /* DL_F16, DL_BF16, DL_E4M3, DL_E5M2 */
    double sm_scale;    /* 0 at parse time means 1/sqrt(head_dim) */
    uint64_t seed;
    dl_dist_params dist;
    /* Sequence lengths: explicit list if num_explicit_lens > 0, else uniform in
     * [seq_len_min, seq_len_max] (equal for a fixed length). */
    int64_t seq_len_min, seq_len_max;
    int64_t num_explicit_lens;
    int64_t explicit_lens[DL_MAX_EXPLICIT_LENS];
    dl_scale_mode kv_scale_mode;
    double kv_scale_value;      /* DL_SCALE_GIVEN only */
    /* Prefix caching: the first share_prefix_pages pages of every request are the same
     * physical pages as request 0's (0 = no sharing). Each of those pages is full in every
     * request (at most the full pages of the shortest request). */
    int64_t share_prefix_pages;
} dl_config;

/* Limits that keep a hostile file or flag from sizing an unbounded allocation. */
#define DL_MAX_BATCH      65536
#define DL_MAX_HEADS      1024
#define DL_MAX_HEAD_DIM   1024
#define DL_MAX_PAGE_SIZE  256
#define DL_MAX_SEQ_LEN    (1 << 20)
#define DL_MAX_ELEMS      (INT64_C(1) << 34) /* per tensor */

/* Fill cfg with defaults: llama3-8b-like 32/8 heads, D=128, batch 1, len 128,
 * page 16, NHD, q bf16, kv e4m3, normal(0,1), seed 0, per-head absmax scales. */
void dl_config_default(dl_config *cfg);
/* Check every field for range and consistency; records the offending field. */
int dl_config_validate(const dl_config *cfg);
/* Is d a KV cache type (f16, bf16, e4m3, e5m2)? */
int dl_dtype_is_kv(dl_dtype d);
/* group size = num_qo_heads / num_kv_heads */
static inline int64_t dl_group_size(const dl_config *c) { return c->num_qo_heads / c->num_kv_heads; }
/* Effective sm_scale (1/sqrt(D) when cfg->sm_scale == 0). */
double dl_sm_scale(const dl_config *cfg);
/* Writes "B=64 Hq=32 Hkv=8 D=128 page=16 layout=NHD q=bf16 kv=e4m3 len=1024 dist=normal seed=0"
 * (a sink distribution: "dist=sink(K,DELTA)") */
void dl_config_name(const dl_config *cfg, char *buf, size_t n);

const char *dl_dtype_name(dl_dtype t);          /* "f32" "f16" "bf16" "e4m3" "e5m2" */
int dl_dtype_parse(const char *s, dl_dtype *out); /* 0 ok */
size_t dl_dtype_size(dl_dtype t);               /* bytes per stored element */
const char *dl_layout_name(dl_layout l);        /* "NHD" "HND" */
int dl_layout_parse(const char *s, dl_layout *out);
const char *dl_dist_name(dl_dist d);            /* "normal" "uniform" "outlier" "channel-outlier" */
const char *dl_scale_mode_name(dl_scale_mode m); /* "absmax" "absmax-tensor" "given" */
int dl_scale_mode_parse(const char *s, dl_scale_mode *out); /* 0 ok */
int dl_dist_parse(const char *s, dl_dist *out);

/* ---- error reporting (the CPU library's one mechanism) ---- */
/* Record a one-line message (printf format) and return -1. */
int dl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *dl_last_error(void);
void dl_clear_error(void);

/* Propagate a failing int-returning call. */
#define DL_TRY(call) do { int dl_try_rc_ = (call); if (dl_try_rc_ != 0) return dl_try_rc_; } while (0)

/* An integer knob from the environment: unset = def; else a whole integer in lo..hi, or -1 with a one-line
 * message naming it, the value and the range (and `unit`, what it counts, where not NULL). */
int dl_env_int(const char *name, int lo, int hi, int def, const char *unit, int *out);

/* malloc/calloc that record "out of memory allocating N bytes for WHAT" on failure. */
void *dl_malloc(size_t bytes, const char *what);
void *dl_calloc(size_t count, size_t size, const char *what);

#ifdef __cplusplus
}
#endif
#endif

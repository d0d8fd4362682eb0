/* dl_common.c - config defaults, names of enums, validation, and the error slot. */
#include "dl_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char dl_err_buf[4096]; /* room for two long paths and the system's reason */

int dl_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dl_err_buf, sizeof dl_err_buf, fmt, ap);
    va_end(ap);
    return -1;
}

const char *dl_last_error(void) { return dl_err_buf[0] ? dl_err_buf : "unknown error"; }
void dl_clear_error(void) { dl_err_buf[0] = 0; }

int dl_env_int(const char *name, int lo, int hi, int def, const char *unit, int *out)
{
    *out = def;
    const char *e = getenv(name);
    if (!e) return 0;
    char *end = NULL;
    const long v = strtol(e, &end, 10);
    if (!*e || *end || v < lo || v > hi) {
        if (unit) return dl_fail("%s: '%s' is not an integer in %d..%d (%s)", name, e, lo, hi, unit);
        return dl_fail("%s: '%s' is not an integer in %d..%d", name, e, lo, hi);
    }
    *out = (int)v;
    return 0;
}

void *dl_malloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) dl_fail("out of memory allocating %zu bytes for %s", bytes, what);
    return p;
}

void *dl_calloc(size_t count, size_t size, const char *what)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) dl_fail("out of memory allocating %zu x %zu bytes for %s", count, size, what);
    return p;
}

static const char *const dtype_names[DL_DTYPE_COUNT] = {"f32", "f16", "bf16", "e4m3", "e5m2"};
static const size_t dtype_sizes[DL_DTYPE_COUNT] = {4, 2, 2, 1, 1};
static const char *const dist_names[DL_DIST_COUNT] = {"normal", "uniform", "outlier", "channel-outlier", "sink"};

const char *dl_dtype_name(dl_dtype t) { return (unsigned)t < DL_DTYPE_COUNT ? dtype_names[t] : "?"; }
size_t dl_dtype_size(dl_dtype t) { return (unsigned)t < DL_DTYPE_COUNT ? dtype_sizes[t] : 0; }
const char *dl_layout_name(dl_layout l) { return l == DL_NHD ? "NHD" : l == DL_HND ? "HND" : "?"; }
const char *dl_dist_name(dl_dist d) { return (unsigned)d < DL_DIST_COUNT ? dist_names[d] : "?"; }

int dl_dtype_parse(const char *s, dl_dtype *out)
{
    for (int i = 0; i < DL_DTYPE_COUNT; i++)
        if (strcmp(s, dtype_names[i]) == 0) { *out = (dl_dtype)i; return 0; }
    return -1;
}

int dl_layout_parse(const char *s, dl_layout *out)
{
    if (strcmp(s, "NHD") == 0) { *out = DL_NHD; return 0; }
    if (strcmp(s, "HND") == 0) { *out = DL_HND; return 0; }
    return -1;
}

static const char *const scale_mode_names[] = {"absmax", "absmax-tensor", "given"};

const char *dl_scale_mode_name(dl_scale_mode m) { return (unsigned)m < 3 ? scale_mode_names[m] : "?"; }

int dl_scale_mode_parse(const char *s, dl_scale_mode *out)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, scale_mode_names[i]) == 0) { *out = (dl_scale_mode)i; return 0; }
    return -1;
}

int dl_dist_parse(const char *s, dl_dist *out)
{
    for (int i = 0; i < DL_DIST_COUNT; i++)
        if (strcmp(s, dist_names[i]) == 0) { *out = (dl_dist)i; return 0; }
    return -1;
}

void dl_config_default(dl_config *c)
{
    memset(c, 0, sizeof *c);
    c->batch_size = 1;
    c->num_qo_heads = 32;
    c->num_kv_heads = 8;
    c->head_dim = 128;
    c->page_size = 16;
    c->kv_layout = DL_NHD;
    c->q_dtype = DL_BF16;
    c->kv_dtype = DL_E4M3;
    c->sm_scale = 0.0;
    c->seed = 0;
    c->dist.kind = DL_DIST_NORMAL;
    c->dist.mean = 0.0;
    c->dist.std = 1.0;
    c->dist.lo = -1.0;
    c->dist.hi = 1.0;
    c->dist.outlier_prob = 0.001;
    c->dist.outlier_var = 100.0;
    c->dist.num_outlier_channels = 4;
    c->dist.channel_scale = 20.0;
    c->dist.sink_tokens = 4;
    c->dist.sink_delta = 8.0;
    c->seq_len_min = c->seq_len_max = 128;
    c->kv_scale_mode = DL_SCALE_ABSMAX_HEAD;
    c->kv_scale_value = 1.0;
    c->share_prefix_pages = 0;
}

double dl_sm_scale(const dl_config *c)
{
    return c->sm_scale != 0.0 ? c->sm_scale : 1.0 / sqrt((double)c->head_dim);
}

#define RANGE(field, lo, hi)                                                             \
    do {                                                                                 \
        if (c->field < (lo) || c->field > (hi))                                          \
            return dl_fail("config: %s = %lld is outside %lld..%lld", #field,             \
                           (long long)c->field, (long long)(lo), (long long)(hi));        \
    } while (0)

int dl_dtype_is_kv(dl_dtype d) { return d == DL_F16 || d == DL_BF16 || d == DL_E4M3 || d == DL_E5M2; }

int dl_config_validate(const dl_config *c)
{
    RANGE(batch_size, 1, DL_MAX_BATCH);
    RANGE(num_qo_heads, 1, DL_MAX_HEADS);
    RANGE(num_kv_heads, 1, DL_MAX_HEADS);
    RANGE(head_dim, 1, DL_MAX_HEAD_DIM);
    RANGE(page_size, 1, DL_MAX_PAGE_SIZE);
    if (c->num_qo_heads % c->num_kv_heads != 0)
        return dl_fail("config: num_qo_heads = %lld is not a multiple of num_kv_heads = %lld",
                       (long long)c->num_qo_heads, (long long)c->num_kv_heads);
    if (c->kv_layout != DL_NHD && c->kv_layout != DL_HND)
        return dl_fail("config: kv_layout = %d is not NHD or HND", (int)c->kv_layout);
    if (c->q_dtype != DL_F32 && c->q_dtype != DL_F16 && c->q_dtype != DL_BF16)
        return dl_fail("config: q_dtype = %s is not f32, f16 or bf16", dl_dtype_name(c->q_dtype));
    if (!dl_dtype_is_kv(c->kv_dtype))
        return dl_fail("config: kv_dtype = %s is not f16, bf16, e4m3 or e5m2", dl_dtype_name(c->kv_dtype));
    if (!(c->sm_scale >= 0.0) || !isfinite(c->sm_scale))
        return dl_fail("config: sm_scale = %g must be finite and >= 0 (0 means 1/sqrt(head_dim))", c->sm_scale);
    if ((unsigned)c->dist.kind >= DL_DIST_COUNT)
        return dl_fail("config: distribution = %d is unknown", (int)c->dist.kind);
    if (!(c->dist.std > 0.0) || !isfinite(c->dist.std) || !isfinite(c->dist.mean))
        return dl_fail("config: normal std = %g must be finite and > 0", c->dist.std);
    if (!(c->dist.lo < c->dist.hi) || !isfinite(c->dist.lo) || !isfinite(c->dist.hi))
        return dl_fail("config: uniform range %g..%g must be finite with lo < hi", c->dist.lo, c->dist.hi);
    if (!(c->dist.outlier_prob >= 0.0 && c->dist.outlier_prob <= 1.0))
        return dl_fail("config: outlier_prob = %g is outside 0..1", c->dist.outlier_prob);
    if (!(c->dist.outlier_var >= 0.0) || !isfinite(c->dist.outlier_var))
        return dl_fail("config: outlier_var = %g must be finite and >= 0", c->dist.outlier_var);
    if (c->dist.kind == DL_DIST_CHANNEL_OUTLIER &&
        (c->dist.num_outlier_channels < 0 || c->dist.num_outlier_channels > c->head_dim))
        return dl_fail("config: num_outlier_channels = %lld is outside 0..head_dim (%lld)",
                       (long long)c->dist.num_outlier_channels, (long long)c->head_dim);
    if (!isfinite(c->dist.channel_scale) || c->dist.channel_scale <= 0.0)
        return dl_fail("config: channel_scale = %g must be finite and > 0", c->dist.channel_scale);
    if (c->dist.sink_tokens < 0 || c->dist.sink_tokens > DL_MAX_SEQ_LEN)
        return dl_fail("config: sink_tokens = %lld is outside 0..%d", (long long)c->dist.sink_tokens, DL_MAX_SEQ_LEN);
    if (!isfinite(c->dist.sink_delta) || fabs(c->dist.sink_delta) > 1000.0)
        return dl_fail("config: sink_delta = %g must be finite and within -1000..1000", c->dist.sink_delta);
    if (c->num_explicit_lens < 0 || c->num_explicit_lens > DL_MAX_EXPLICIT_LENS)
        return dl_fail("config: %lld explicit lengths is outside 0..%d", (long long)c->num_explicit_lens,
                       DL_MAX_EXPLICIT_LENS);
    if (c->num_explicit_lens > 0) {
        if (c->num_explicit_lens != c->batch_size)
            return dl_fail("config: %lld explicit sequence lengths given for batch_size = %lld",
                           (long long)c->num_explicit_lens, (long long)c->batch_size);
        for (int64_t i = 0; i < c->num_explicit_lens; i++)
            if (c->explicit_lens[i] < 1 || c->explicit_lens[i] > DL_MAX_SEQ_LEN)
                return dl_fail("config: seq_len[%lld] = %lld is outside 1..%d", (long long)i,
                               (long long)c->explicit_lens[i], DL_MAX_SEQ_LEN);
    } else {
        RANGE(seq_len_min, 1, DL_MAX_SEQ_LEN);
        RANGE(seq_len_max, c->seq_len_min, DL_MAX_SEQ_LEN);
    }
    if (c->kv_scale_mode != DL_SCALE_ABSMAX_HEAD && c->kv_scale_mode != DL_SCALE_ABSMAX_TENSOR &&
        c->kv_scale_mode != DL_SCALE_GIVEN)
        return dl_fail("config: kv_scale_mode = %d is unknown", (int)c->kv_scale_mode);
    if (c->kv_scale_mode == DL_SCALE_GIVEN && (!(c->kv_scale_value > 0.0) || !isfinite(c->kv_scale_value)))
        return dl_fail("config: kv_scale = %g must be finite and > 0", c->kv_scale_value);
    if (c->share_prefix_pages < 0 || c->share_prefix_pages > DL_MAX_SEQ_LEN)
        return dl_fail("config: share_prefix_pages = %lld is outside 0..%d", (long long)c->share_prefix_pages,
                       DL_MAX_SEQ_LEN);
    if (c->share_prefix_pages > 0 && c->dist.kind == DL_DIST_SINK && c->dist.sink_tokens > 0)
        /* the sink shift is made per request from its own queries (dl_paged.c, add_sink_shift), and a shared
         * page's keys are every request's: no one shift serves them all */
        return dl_fail("config: share_prefix_pages = %lld with distribution sink (sink_tokens = %lld): the sink keys "
                       "would lie in the shared pages, whose one shift cannot serve every request's queries; use "
                       "one or the other (or sink_tokens = 0)", (long long)c->share_prefix_pages,
                       (long long)c->dist.sink_tokens);
    if (c->share_prefix_pages > 0) {
        /* every shared page must be a full page of every request: at most the full pages of the
         * shortest request (a range draws no length below seq_len_min) */
        int64_t shortest = c->num_explicit_lens > 0 ? c->explicit_lens[0] : c->seq_len_min;
        for (int64_t i = 1; i < c->num_explicit_lens; i++)
            if (c->explicit_lens[i] < shortest) shortest = c->explicit_lens[i];
        if (c->share_prefix_pages > shortest / c->page_size)
            return dl_fail("config: share_prefix_pages = %lld is more than the %lld full pages of the shortest "
                           "request (%lld tokens, page_size %lld)", (long long)c->share_prefix_pages,
                           (long long)(shortest / c->page_size), (long long)shortest, (long long)c->page_size);
    }
    /* bound the total size of one cache tensor */
    int64_t maxlen = c->num_explicit_lens > 0 ? 0 : c->seq_len_max;
    for (int64_t i = 0; i < c->num_explicit_lens; i++)
        if (c->explicit_lens[i] > maxlen) maxlen = c->explicit_lens[i];
    double elems = (double)c->batch_size * (double)(maxlen + c->page_size) * (double)c->num_kv_heads *
                   (double)c->head_dim;
    if (elems > (double)DL_MAX_ELEMS)
        return dl_fail("config: the KV cache would hold %.3g elements, over the limit %.3g", elems,
                       (double)DL_MAX_ELEMS);
    return 0;
}

void dl_config_name(const dl_config *c, char *buf, size_t n)
{
    char len[64];
    if (c->num_explicit_lens > 0)
        snprintf(len, sizeof len, "list(%lld)", (long long)c->num_explicit_lens);
    else if (c->seq_len_min == c->seq_len_max)
        snprintf(len, sizeof len, "%lld", (long long)c->seq_len_min);
    else
        snprintf(len, sizeof len, "%lld:%lld", (long long)c->seq_len_min, (long long)c->seq_len_max);
    char dist[96];
    if (c->dist.kind == DL_DIST_SINK)
        snprintf(dist, sizeof dist, "sink(%lld,%g)", (long long)c->dist.sink_tokens, c->dist.sink_delta);
    else
        snprintf(dist, sizeof dist, "%s", dl_dist_name(c->dist.kind));
    snprintf(buf, n, "B=%lld Hq=%lld Hkv=%lld D=%lld page=%lld layout=%s q=%s kv=%s len=%s dist=%s seed=%llu",
             (long long)c->batch_size, (long long)c->num_qo_heads, (long long)c->num_kv_heads,
             (long long)c->head_dim, (long long)c->page_size, dl_layout_name(c->kv_layout),
             dl_dtype_name(c->q_dtype), dl_dtype_name(c->kv_dtype), len, dist, (unsigned long long)c->seed);
    size_t k = strlen(buf);
    if (c->share_prefix_pages > 0 && k + 1 < n)
        snprintf(buf + k, n - k, " share=%lld", (long long)c->share_prefix_pages);
}

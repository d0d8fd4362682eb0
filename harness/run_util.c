/* run_util.c - the pure host pieces of `decodelab run` (see dl_run.h):
 * variant selection by glob, bytes-moved accounting, the read reference's
 * expected count and checksum, the golden inputs' hash, and the config columns
 * of a results row. Kept apart from cmd_run.c so the
 * tests link them without the CLI. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dl_run.h"

int dl_run_select(const char *globs, const dl_variant **out, int *n)
{
    *n = 0;
    if (globs && *globs) {
        /* every pattern must match something */
        char buf[1024];
        if (strlen(globs) >= sizeof buf) return dl_fail("--variants: list too long (%zu chars)", strlen(globs));
        strcpy(buf, globs);
        char *save = NULL;
        for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            int hit = 0;
            for (int i = 0; i < dl_num_variants && !hit; i++) hit = fnmatch(p, dl_variants[i].name, 0) == 0;
            if (!hit) return dl_fail("--variants: pattern '%s' matches no variant (see decodelab list)", p);
        }
    }
    for (int i = 0; i < dl_num_variants; i++)
        if (!globs || !*globs || dl_variant_matches(&dl_variants[i], globs)) out[(*n)++] = &dl_variants[i];
    if (*n == 0) return dl_fail("--variants: '%s' selects no variant", globs ? globs : "");
    return 0;
}

void dl_run_bytes(const dl_case *c, dl_bytes *b)
{
    const dl_config *g = &c->cfg;
    int64_t tokens = 0;
    for (int64_t i = 0; i < g->batch_size; i++) tokens += dl_case_seq_len(c, i);
    int64_t nnz = c->kv_indptr[g->batch_size];
    int64_t kvsz = (int64_t)dl_dtype_size(g->kv_dtype), row = g->num_kv_heads * g->head_dim * kvsz;
    memset(b, 0, sizeof *b);
    b->q = g->batch_size * g->num_qo_heads * g->head_dim * (int64_t)dl_dtype_size(g->q_dtype);
    b->kv = 2 * tokens * row;
    b->kv_pages = 2 * nnz * g->page_size * row;
    b->scales = 2 * g->num_kv_heads * (int64_t)sizeof(float);
    b->page_table = (int64_t)sizeof(int32_t) * ((g->batch_size + 1) + nnz + g->batch_size);
    b->o = g->batch_size * g->num_qo_heads * g->head_dim * (int64_t)sizeof(float);
    b->lse = g->batch_size * g->num_qo_heads * (int64_t)sizeof(float);
    b->total = b->q + b->kv + b->scales + b->page_table + b->o + b->lse;
}

/* xor-fold of n bytes that start at byte offset off of their array */
static uint32_t fold_bytes(uint32_t acc, const uint8_t *p, int64_t off, int64_t n)
{
    for (int64_t i = 0; i < n; i++) acc ^= (uint32_t)p[i] << (8 * ((off + i) & 3));
    return acc;
}

void dl_run_read_sum(const dl_case *c, int contiguous, int64_t *bytes, uint32_t *xor_fold)
{
    const dl_config *g = &c->cfg;
    const int64_t head_row = g->head_dim * (int64_t)dl_dtype_size(g->kv_dtype), row = g->num_kv_heads * head_row;
    const uint8_t *k = c->k_cache, *v = c->v_cache;
    int64_t tokens = 0;
    uint32_t acc = 0;
    for (int64_t b = 0; b < g->batch_size; b++) tokens += dl_case_seq_len(c, b);
    if (contiguous) {
        /* the first tokens x row bytes of each cache; with pages shared between requests the caches
         * may hold fewer (cmd_run.c does not run the contiguous reader then): read no further */
        const int64_t cache = dl_case_cache_elems(c) * (int64_t)dl_dtype_size(g->kv_dtype);
        const int64_t n = tokens * row < cache ? tokens * row : cache;
        acc = fold_bytes(fold_bytes(0, k, 0, n), v, 0, n);
    } else {
        /* every (request, token, KV head) row where the page table puts it (ref/dl_paged.h) */
        for (int64_t b = 0; b < g->batch_size; b++)
            for (int64_t t = 0, len = dl_case_seq_len(c, b); t < len; t++)
                for (int64_t h = 0; h < g->num_kv_heads; h++) {
                    int64_t off = dl_case_token_offset(c, b, t, h) * (int64_t)dl_dtype_size(g->kv_dtype);
                    acc = fold_bytes(fold_bytes(acc, k + off, off, head_row), v + off, off, head_row);
                }
    }
    *bytes = 2 * tokens * row;
    *xor_fold = acc;
}

uint64_t dl_fnv1a64(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t fnv_block(uint64_t h, const void *p, size_t n)
{
    uint64_t len = n;
    h = dl_fnv1a64(h, &len, sizeof len);
    return p ? dl_fnv1a64(h, p, n) : h;
}

uint64_t dl_run_inputs_hash(const dl_case *c)
{
    const dl_config *g = &c->cfg;
    uint64_t h = 0xcbf29ce484222325ull;
    size_t qn = (size_t)(g->batch_size * g->num_qo_heads * g->head_dim) * dl_dtype_size(g->q_dtype);
    size_t kvn = (size_t)dl_case_cache_elems(c) * dl_dtype_size(g->kv_dtype);
    size_t nnz = (size_t)c->kv_indptr[g->batch_size];
    h = fnv_block(h, c->q, qn);
    h = fnv_block(h, c->k_cache, kvn);
    h = fnv_block(h, c->v_cache, kvn);
    h = fnv_block(h, c->k_scale, (size_t)g->num_kv_heads * sizeof(float));
    h = fnv_block(h, c->v_scale, (size_t)g->num_kv_heads * sizeof(float));
    h = fnv_block(h, c->kv_indptr, (size_t)(g->batch_size + 1) * sizeof(int32_t));
    h = fnv_block(h, c->kv_indices, nnz * sizeof(int32_t));
    h = fnv_block(h, c->kv_last_page_len, (size_t)g->batch_size * sizeof(int32_t));
    return h;
}

void dl_run_hash_string(uint64_t h, char *buf, size_t n) { snprintf(buf, n, "fnv1a64:%016llx", (unsigned long long)h); }

void dl_run_fill_config(dl_result_row *r, const char *golden_path, const dl_case *c, uint64_t inputs_hash)
{
    const dl_config *g = &c->cfg;
    snprintf(r->golden_path, sizeof r->golden_path, "%s", golden_path);
    dl_run_hash_string(inputs_hash, r->golden_hash, sizeof r->golden_hash);
    dl_config_name(g, r->config_name, sizeof r->config_name);
    r->batch_size = g->batch_size;
    r->num_qo_heads = g->num_qo_heads;
    r->num_kv_heads = g->num_kv_heads;
    r->head_dim = g->head_dim;
    r->page_size = g->page_size;
    snprintf(r->kv_layout, sizeof r->kv_layout, "%s", dl_layout_name(g->kv_layout));
    snprintf(r->q_dtype, sizeof r->q_dtype, "%s", dl_dtype_name(g->q_dtype));
    snprintf(r->kv_dtype, sizeof r->kv_dtype, "%s", dl_dtype_name(g->kv_dtype));
    r->sm_scale = dl_sm_scale(g);
    r->seed = g->seed;
    snprintf(r->distribution, sizeof r->distribution, "%s", dl_dist_name(g->dist.kind));
    r->dist_mean = g->dist.mean;
    r->dist_std = g->dist.std;
    r->dist_lo = g->dist.lo;
    r->dist_hi = g->dist.hi;
    r->dist_outlier_prob = g->dist.outlier_prob;
    r->dist_outlier_var = g->dist.outlier_var;
    r->dist_num_outlier_channels = g->dist.num_outlier_channels;
    r->dist_channel_scale = g->dist.channel_scale;
    r->dist_sink_tokens = g->dist.sink_tokens;
    r->dist_sink_delta = g->dist.sink_delta;
    r->seq_len_min = g->seq_len_min;
    r->seq_len_max = g->seq_len_max;
    r->num_explicit_lens = g->num_explicit_lens;
    /* the actual length of every request, whatever produced it */
    size_t used = 0, cap = sizeof r->seq_lens;
    r->seq_lens[0] = 0;
    int64_t tokens = 0, maxlen = 0;
    for (int64_t b = 0; b < g->batch_size; b++) {
        int64_t len = dl_case_seq_len(c, b);
        tokens += len;
        if (len > maxlen) maxlen = len;
        char item[32];
        int k = snprintf(item, sizeof item, "%s%lld", b ? "," : "", (long long)len);
        if (used + (size_t)k + 4 >= cap) {
            if (used + 4 < cap) strcpy(r->seq_lens + used, "...");
            used = cap;
        } else if (used < cap) {
            memcpy(r->seq_lens + used, item, (size_t)k + 1);
            used += (size_t)k;
        }
    }
    snprintf(r->kv_scale_mode, sizeof r->kv_scale_mode, "%s", dl_scale_mode_name(g->kv_scale_mode));
    r->kv_scale_value = g->kv_scale_value;
    r->num_pages = c->num_pages;
    r->total_tokens = tokens;
    r->max_seq_len = maxlen;
}


int dl_run_resolve_splits(const dl_case *c, int requested)
{
    if (requested > 0) return requested;
    dl_gpu_args a;
    memset(&a, 0, sizeof a);
    a.batch_size = (int)c->cfg.batch_size;
    a.num_qo_heads = (int)c->cfg.num_qo_heads;
    a.num_kv_heads = (int)c->cfg.num_kv_heads;
    a.head_dim = (int)c->cfg.head_dim;
    a.page_size = (int)c->cfg.page_size;
    a.max_seq_len = (int)dl_case_max_seq_len(c);
    int s = dl_gpu_choose_splits(&a, dl_gpu_sm_count());
    return s < 1 ? 1 : s;
}

int dl_run_resume_filter(const char *results_path, const dl_case *c, uint64_t inputs_hash, int splits,
                         const char *timing_mode, const char *flush, const dl_variant **sel, int *nsel)
{
    struct stat st;
    if (stat(results_path, &st) != 0) {
        if (errno == ENOENT) return 0; /* nothing recorded yet */
        return dl_fail("--resume: cannot stat %s: %s", results_path, strerror(errno));
    }
    dl_result_row *rows = NULL;
    int64_t nrows = 0;
    DL_TRY(dl_results_read(results_path, &rows, &nrows));
    char hash[32];
    dl_run_hash_string(inputs_hash, hash, sizeof hash);
    const int64_t want_splits = dl_run_resolve_splits(c, splits);
    int kept = 0;
    for (int i = 0; i < *nsel; i++) {
        int done = 0;
        for (int64_t r = 0; r < nrows && !done; r++) {
            const dl_result_row *x = &rows[r];
            int skip = !strcmp(x->verdict, "SKIP"), fail = !strcmp(x->verdict, "FAIL");
            done = !strcmp(x->golden_hash, hash) && !strcmp(x->variant, sel[i]->name) &&
                   (skip || x->num_splits == dl_variant_splits(sel[i], (int)want_splits)) &&
                   (skip || fail || (!strcmp(x->timing_mode, timing_mode) && !strcmp(x->flush, flush)));
        }
        if (!done) sel[kept++] = sel[i];
    }
    *nsel = kept;
    free(rows);
    return 0;
}

void dl_run_put_metrics(dl_result_metrics *d, const dl_metrics *m)
{
    d->n = m->n;
    d->nonfinite = m->nonfinite;
    d->unwritten = m->unwritten;
    d->rel_l2 = m->rel_l2;
    d->nmse = m->nmse;
    d->max_abs = m->max_abs;
    d->max_rel = m->max_rel;
    d->head_rel_l2 = m->head_rel_l2;
    d->head_worst = m->head_worst;
    d->head_excess = m->head_excess;
}

dl_verdict dl_run_judge(dl_result_row *r, const float *o, const float *lse, const dl_output *model_out, dl_model m,
                        const dl_output *exact, dl_dtype kv_dtype, double o_round)
{
    dl_scores sm, se;
    dl_verdict v = DL_PASS;
    const dl_threshold *band = dl_threshold_vs_exact(m, kv_dtype);
    if (band) {
        r->band_o_rel_l2 = band->o_rel_l2;
        r->band_lse_abs = band->lse_abs;
    }
    if (exact) {
        dl_score_f32(o, lse, exact, &se);
        dl_run_put_metrics(&r->exact_o, &se.o);
        if (lse) dl_run_put_metrics(&r->exact_lse, &se.lse);
        snprintf(r->verdict_exact, sizeof r->verdict_exact, "%s", dl_band_name(band && dl_within_band(&se, band)));
    } else {
        snprintf(r->verdict_exact, sizeof r->verdict_exact, "-");
    }
    if (model_out) {
        dl_threshold lim; /* the table's limits for this case's longest sequence (r->max_seq_len) */
        if (dl_threshold_impl_len(m, r->max_seq_len, &lim)) { /* not reached: m comes from the registry */
            snprintf(r->reason, sizeof r->reason, "no implementation limits for model %d", (int)m);
            return DL_FAIL;
        }
        const dl_threshold *t = &lim;
        dl_score_f32(o, lse, model_out, &sm);
        dl_run_put_metrics(&r->model_o, &sm.o);
        if (lse) dl_run_put_metrics(&r->model_lse, &sm.lse);
        r->model_o_flip_allow = sm.o_allow;
        r->limit_o_rel_l2 = dl_limit_widened(t->o_rel_l2, o_round) + sm.o_allow;
        r->limit_o_head_rel_l2 = dl_limit_widened(t->o_head_rel_l2, o_round);
        r->limit_lse_abs = t->lse_abs;
        v = dl_judge_impl(&sm, t, o_round);
        snprintf(r->verdict_model, sizeof r->verdict_model, "%s", dl_verdict_name(v));
    } else {
        /* no model to judge the implementation by: the precision band decides, o widened by its roundoff and
         * every (request, head) row held too (dl_band_limits) */
        if (exact) {
            r->model_o = r->exact_o;
            r->model_lse = r->exact_lse;
        }
        v = DL_FAIL;
        if (exact && band) {
            dl_threshold t;
            dl_band_limits(band, o_round, &t);
            r->limit_o_rel_l2 = t.o_rel_l2;
            r->limit_o_head_rel_l2 = t.o_head_rel_l2;
            r->limit_lse_abs = t.lse_abs;
            v = dl_judge_impl(&se, &t, 0.0); /* t is widened already */
        }
        snprintf(r->verdict_model, sizeof r->verdict_model, "-");
    }
    snprintf(r->verdict, sizeof r->verdict, "%s", dl_verdict_name(v));
    return v;
}

dl_verdict dl_run_judge_launches(dl_result_row *r, float *const o[2], float *const lse[2], size_t no, size_t nl,
                                 const dl_output *model_out, dl_model m, const dl_output *exact, dl_dtype kv_dtype)
{
    r->deterministic = !memcmp(o[0], o[1], no * sizeof(float)) && !memcmp(lse[0], lse[1], nl * sizeof(float));
    dl_verdict first = dl_run_judge(r, o[0], lse[0], model_out, m, exact, kv_dtype, 0.0);
    if (r->deterministic) return first;
    dl_result_row *second = dl_malloc(sizeof *second, "a scratch results row");
    if (!second) { /* dl_malloc named the failure; the row cannot be judged whole */
        snprintf(r->verdict, sizeof r->verdict, "%s", dl_verdict_name(DL_FAIL));
        snprintf(r->reason, sizeof r->reason, "error: out of memory judging the second launch");
        return DL_FAIL;
    }
    *second = *r;
    dl_verdict again = dl_run_judge(second, o[1], lse[1], model_out, m, exact, kv_dtype, 0.0);
    if (again == DL_FAIL && first != DL_FAIL) { /* the row shows the failing launch */
        *r = *second;
        snprintf(r->reason, sizeof r->reason, "the second of two launches on the same inputs fails its check (the "
                 "first passed; the error columns are the second's)");
    } else {
        snprintf(r->reason, sizeof r->reason, "two launches on the same inputs differ bitwise (the second %s its "
                 "check)", again == DL_FAIL ? "fails" : "passes");
    }
    free(second);
    return first == DL_FAIL ? first : again;
}

void dl_run_fill_params(dl_result_row *r, const dl_model_params *p)
{
    snprintf(r->kv_order, sizeof r->kv_order, "%s", dl_kv_order_name(p->kv_order));
    r->p_scale = (double)p->p_scale;
}

int dl_run_params_ok(const dl_variant *v, const dl_model_params *p, char *reason, size_t n)
{
    if (p->kv_order != DL_KV_FORWARD) {
        snprintf(reason, n, "golden made with kv_order = %s: every GPU kernel iterates the KV cache forward "
                 "(reverse order is a CPU model only, experiments/E8)", dl_kv_order_name(p->kv_order));
        return 0;
    }
    return !v->params_ok || v->params_ok(v, p, reason, n);
}

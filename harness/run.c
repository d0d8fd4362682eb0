/* run.c - `decodelab run` as a library: one golden case on the GPU - the
 * device buffers, the read reference, and per variant the plan (if any), two
 * checked launches on poisoned outputs, the judgement against the variant's
 * model for the schedule it ran, the timing and the results row. The CLI
 * (harness/cmd_run.c) parses flags and prints (the experiment runner runs that
 * CLI as a child process). Plain C: without CUDA only the helpers build and
 * dl_run_case reports that no GPU code is in the binary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu/dl_bench.h"
#include "../gpu/dl_plan.h"
#include "../gpu/dl_registry.h"
#include "dl_candidate.h"
#include "dl_compare.h"
#include "dl_golden.h"
#include "dl_model_sched.h"
#include "dl_results.h"
#include "dl_run.h"
#include "dl_timing.h"

#ifndef DL_HAVE_CUDA
#define DL_HAVE_CUDA 0
#endif

const char *dl_run_no_device_reason(void)
{
    const char *why = dl_last_error();
    if (!why || !*why) return "no reason given";
    if (!strncmp(why, "no CUDA device: ", 16)) why += 16;
    return why;
}

void dl_run_fill_variant(dl_result_row *r, const dl_variant *v)
{
    snprintf(r->variant, sizeof r->variant, "%s", v->name);
    snprintf(r->compute, sizeof r->compute, "%s", dl_compute_name(v->compute));
    snprintf(r->dequant, sizeof r->dequant, "%s", dl_dequant_name(v->dequant));
    snprintf(r->unit, sizeof r->unit, "%s", dl_unit_name(v->unit));
    snprintf(r->model, sizeof r->model, "%s", dl_model_name(v->model));
    snprintf(r->kernel_file, sizeof r->kernel_file, "%s", v->file ? v->file : "");
    const dl_threshold *t = dl_threshold_impl(v->model);
    if (t) {
        r->limit_o_rel_l2 = t->o_rel_l2;
        r->limit_o_head_rel_l2 = t->o_head_rel_l2;
        r->limit_lse_abs = t->lse_abs;
    }
}

void dl_run_version_string(int v, char *buf, size_t n) { snprintf(buf, n, "%d.%d", v / 1000, (v % 1000) / 10); }

const char *dl_run_timing_mode(const dl_run_opts *o)
{
    if (o->chain > 1) return "chain-cold-l2";
    if (o->graph) return o->hot_l2 ? "graph-hot-l2" : "graph-cold-l2";
    return o->hot_l2 ? "hot-l2" : "cold-l2";
}

const char *dl_run_flush_name(const dl_run_opts *o)
{
    if (o->hot_l2) return "none";
    return o->flush == DL_FLUSH_READ ? "read" : "write";
}

/* --save-outputs (dl_run.h). */
int dl_run_save_outputs(const char *dir, const dl_golden *g, const struct dl_variant *v, const dl_result_row *r,
                        const float *o, const float *lse)
{
    const dl_config *cfg = &g->c.cfg;
    dl_candidate c;
    dl_candidate_init(&c);
    snprintf(c.producer, sizeof c.producer, "%s", dl_generator_string());
    snprintf(c.backend, sizeof c.backend, "%s", v->name);
    snprintf(c.settings, sizeof c.settings,
             "decodelab run --save-outputs: variant %s, splits %lld, schedule %s (decodelab run judged it against "
             "the model for that schedule; decodelab compare judges against the stored model, the same only for "
             "schedule none or a plan whose merge is none)",
             v->name, (long long)r->num_splits, r->model_schedule);
    dl_run_hash_string(dl_golden_inputs_hash(g), c.golden_hash, sizeof c.golden_hash);
    c.lse_base = 0;
    snprintf(c.model, sizeof c.model, "%s", dl_model_name(v->model));
    snprintf(c.compute, sizeof c.compute, "%s", r->compute);
    snprintf(c.dequant, sizeof c.dequant, "%s", r->dequant);
    snprintf(c.unit, sizeof c.unit, "%s", r->unit);
    c.num_splits = r->num_splits;
    c.deterministic = r->deterministic;
    snprintf(c.device_name, sizeof c.device_name, "%s", r->device_name);
    c.batch_size = cfg->batch_size;
    c.num_qo_heads = cfg->num_qo_heads;
    c.head_dim = cfg->head_dim;
    c.o_dtype = DL_F32;
    c.o = (float *)o;
    c.lse = (float *)lse;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.splits%lld.h5", dir, v->name, (long long)r->num_splits);
    return dl_candidate_write(path, &c, 1); /* c borrows o and lse: not freed here */
}

#if DL_HAVE_CUDA
_Static_assert(DL_CHAIN_MAX == DL_RUN_CHAIN_MAX, "run --chain's bound is gpu/dl_bench.h's");
typedef struct {
    void *q, *k, *v, *ks, *vs, *indptr, *indices, *last, *o, *lse, *ws;
    size_t ws_bytes;
    void *lk[DL_CHAIN_MAX], *lv[DL_CHAIN_MAX]; /* --chain: layer l's copies of k and v (lk[0] = k, lv[0] = v) */
    void *lo, *llse; /* --chain: the last layer's own o and lse in the chain check (what an earlier layer wrote
                      * there cannot stand in for an element the last one did not write) */
    int layers;
} dev_bufs;

static void dev_free_all(dev_bufs *d)
{
    void *p[] = {d->q, d->k, d->v, d->ks, d->vs, d->indptr, d->indices, d->last, d->o, d->lse, d->ws, d->lo, d->llse};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) dl_dev_free(p[i]);
    for (int l = 1; l < d->layers; l++) {
        dl_dev_free(d->lk[l]);
        dl_dev_free(d->lv[l]);
    }
    memset(d, 0, sizeof *d);
}

/* --chain L: layers 1 .. L-1 of the caches, copies of the uploaded ones (the same bytes at other addresses, so
 * that each layer's read is a cold read of its own, as a model's layers are). */
static int upload_layers(const dl_case *c, dev_bufs *d, int layers)
{
    const size_t kvb = (size_t)dl_case_cache_elems(c) * dl_dtype_size(c->cfg.kv_dtype);
    d->lk[0] = d->k;
    d->lv[0] = d->v;
    d->layers = 1;
    const size_t ob = (size_t)(c->cfg.batch_size * c->cfg.num_qo_heads * c->cfg.head_dim) * sizeof(float);
    DL_TRY(dl_dev_malloc(&d->lo, ob, "--chain: the last layer's o"));
    DL_TRY(dl_dev_malloc(&d->llse, ob / (size_t)c->cfg.head_dim, "--chain: the last layer's lse"));
    for (int l = 1; l < layers; l++) {
        char what[64];
        snprintf(what, sizeof what, "--chain: layer %d of %d's k_cache", l, layers);
        DL_TRY(dl_dev_malloc(&d->lk[l], kvb, what));
        d->layers = l + 1; /* freed from here on */
        DL_TRY(dl_dev_copy(d->lk[l], d->k, kvb, what));
        snprintf(what, sizeof what, "--chain: layer %d of %d's v_cache", l, layers);
        DL_TRY(dl_dev_malloc(&d->lv[l], kvb, what));
        DL_TRY(dl_dev_copy(d->lv[l], d->v, kvb, what));
    }
    return 0;
}

static int upload(void **dst, const void *src, size_t bytes, const char *what)
{
    DL_TRY(dl_dev_malloc(dst, bytes, what));
    return dl_dev_upload(*dst, src, bytes, what);
}

static int upload_case(const dl_case *c, dev_bufs *d)
{
    const dl_config *g = &c->cfg;
    size_t qn = (size_t)(g->batch_size * g->num_qo_heads * g->head_dim);
    size_t kvb = (size_t)dl_case_cache_elems(c) * dl_dtype_size(g->kv_dtype);
    size_t nnz = (size_t)c->kv_indptr[g->batch_size];
    DL_TRY(upload(&d->q, c->q, qn * dl_dtype_size(g->q_dtype), "q"));
    DL_TRY(upload(&d->k, c->k_cache, kvb, "k_cache"));
    DL_TRY(upload(&d->v, c->v_cache, kvb, "v_cache"));
    DL_TRY(upload(&d->ks, c->k_scale, (size_t)g->num_kv_heads * 4, "k_scale"));
    DL_TRY(upload(&d->vs, c->v_scale, (size_t)g->num_kv_heads * 4, "v_scale"));
    DL_TRY(upload(&d->indptr, c->kv_indptr, (size_t)(g->batch_size + 1) * 4, "kv_indptr"));
    DL_TRY(upload(&d->indices, c->kv_indices, (nnz ? nnz : 1) * 4, "kv_indices"));
    DL_TRY(upload(&d->last, c->kv_last_page_len, (size_t)g->batch_size * 4, "kv_last_page_len"));
    DL_TRY(dl_dev_malloc(&d->o, qn * sizeof(float), "o"));
    DL_TRY(dl_dev_malloc(&d->lse, (size_t)(g->batch_size * g->num_qo_heads) * sizeof(float), "lse"));
    return 0;
}

typedef struct {
    dl_bench *b;
    dl_launch_fn fn;
    const dl_gpu_args *a; /* the layers' arguments, chain of them (1 but with --chain) */
    int flush, graph, chain;
} sampler;

static int sample(void *ctx, double *sec)
{
    sampler *s = ctx;
    return s->graph ? dl_bench_time_graph(s->b, s->flush, sec)
                    : dl_bench_time_chain(s->b, s->fn, s->a, s->chain, s->flush, sec);
}

/* --chain: layer l's launch arguments from layer 0's: its caches, pdl after the first. */
static void layer_args(dl_gpu_args *al, const dl_gpu_args *a, const dev_bufs *d, int layers)
{
    for (int l = 0; l < layers; l++) {
        al[l] = *a;
        al[l].k_cache = l ? d->lk[l] : a->k_cache;
        al[l].v_cache = l ? d->lv[l] : a->v_cache;
        al[l].pdl = l > 0 ? 2 : 1;
    }
}

/* One checked launch: poison, launch, wait, download. The split-KV workspace is poisoned too: a partial a launch
 * did not write would otherwise hold the last launch's (nearly right) values, and the merge would pass them on. */
static int checked_launch(const dl_variant *v, const dl_gpu_args *a, const dev_bufs *d, float *o, float *lse,
                          size_t no, size_t nl)
{
    DL_TRY(dl_dev_poison(d->o, no * sizeof(float), a->stream));
    DL_TRY(dl_dev_poison(d->lse, nl * sizeof(float), a->stream));
    if (d->ws) DL_TRY(dl_dev_poison(d->ws, d->ws_bytes, a->stream));
    DL_TRY(v->launch(a));
    DL_TRY(dl_dev_check_launch(v->name, a->stream));
    DL_TRY(dl_dev_download(o, d->o, no * sizeof(float), "o"));
    return dl_dev_download(lse, d->lse, nl * sizeof(float), "lse");
}

/* The launch arguments of the case on the uploaded buffers (no split-KV yet). */
static void case_args(dl_gpu_args *a, const dl_case *c, const dev_bufs *d, dl_bench *bench, int64_t max_seq_len)
{
    const dl_config *cfg = &c->cfg;
    memset(a, 0, sizeof *a);
    a->batch_size = (int)cfg->batch_size;
    a->num_qo_heads = (int)cfg->num_qo_heads;
    a->num_kv_heads = (int)cfg->num_kv_heads;
    a->head_dim = (int)cfg->head_dim;
    a->page_size = (int)cfg->page_size;
    a->kv_layout = cfg->kv_layout;
    a->q_dtype = cfg->q_dtype;
    a->kv_dtype = cfg->kv_dtype;
    a->sm_scale = (float)dl_sm_scale(cfg);
    a->p_scale = 448.0f; /* the fp8 models' default; run_variant sets the golden file's */
    a->acc_promote_blocks = 2;
    a->num_pages = c->num_pages;
    a->q = d->q;
    a->k_cache = d->k;
    a->v_cache = d->v;
    a->k_scale = d->ks;
    a->v_scale = d->vs;
    a->kv_indptr = d->indptr;
    a->kv_indices = d->indices;
    a->kv_last_page_len = d->last;
    a->max_seq_len = (int)max_seq_len;
    a->o = d->o;
    a->lse = d->lse;
    a->stream = dl_bench_stream(bench);
    a->num_splits = 1;
}

/* The case's read reference (gpu/dl_bench.h dl_bench_time_read): the median
 * time of each reader and the faster; NaN until measured. */
typedef struct {
    double t[2];         /* [DL_READ_PAGES], [DL_READ_CONTIG] */
    int64_t n[2];        /* samples */
    int converged[2];
    double ref_s;        /* min of the two */
    int load_bytes;      /* the page-table reader's load width */
} read_ref;

typedef struct {
    dl_bench *b;
    const dl_gpu_args *a; /* the layers' arguments, chain of them (1 but with --chain) */
    int64_t tokens;
    dl_read_order order;
    int flush, chain;
} read_sampler;

static int read_sample(void *ctx, double *sec)
{
    read_sampler *s = ctx;
    return dl_bench_time_read_chain(s->b, s->a, s->chain, s->tokens, s->order, s->flush, sec);
}

/* Bytes of one token's K (or V) row over all KV heads. */
static int64_t cfg_row_bytes(const dl_config *cfg)
{
    return cfg->num_kv_heads * cfg->head_dim * (int64_t)dl_dtype_size(cfg->kv_dtype);
}

/* Self-check both readers against the host's count and xor-fold of the case's
 * KV bytes (dl_run_read_sum), then time each like a variant: 3 unflushed
 * warm-ups, then dl_timing_collect with the run's sampling rules, flushed
 * unless --hot-l2 (one launch per sample also with --graph). */
static int measure_read_ref(const dl_run_opts *o, const dl_case *c, const dev_bufs *d, dl_bench *bench, read_ref *ref)
{
    static const char *const what[2] = {"page-table", "contiguous"};
    int64_t tokens = 0, maxlen = 0;
    for (int64_t b = 0; b < c->cfg.batch_size; b++) {
        int64_t len = dl_case_seq_len(c, b);
        tokens += len;
        if (len > maxlen) maxlen = len;
    }
    dl_gpu_args a, al[DL_CHAIN_MAX];
    case_args(&a, c, d, bench, maxlen);
    const int chain = o->chain > 1 ? o->chain : 1;
    layer_args(al, &a, d, chain);
    ref->load_bytes = dl_read_ref_load_bytes(&a);
    /* the contiguous reader reads tokens x row bytes from the start of each cache: with pages
     * shared between requests (prefix caching) the caches hold fewer, so it is not run (NaN) */
    const int64_t row = cfg_row_bytes(&c->cfg);
    const int contig_fits = tokens * row <= dl_case_cache_elems(c) * (int64_t)dl_dtype_size(c->cfg.kv_dtype);
    ref->t[1] = NAN;
    ref->n[1] = 0;
    ref->converged[1] = 0;
    for (int k = 0; k < (contig_fits ? 2 : 1); k++) {
        const dl_read_order order = k == 0 ? DL_READ_PAGES : DL_READ_CONTIG;
        int64_t want_bytes = 0, got_bytes = 0;
        uint32_t want_xor = 0, got_xor = 0;
        dl_run_read_sum(c, order == DL_READ_CONTIG, &want_bytes, &want_xor);
        for (int l = 0; l < chain; l++) { /* every layer's copy holds the case's bytes */
            DL_TRY(dl_bench_read_check(bench, &al[l], tokens, order, &got_bytes, &got_xor));
            if (got_bytes != want_bytes || got_xor != want_xor)
                return dl_fail("the %s reader read %lld bytes (xor-fold %08x) of layer %d, the case's KV bytes are "
                               "%lld (xor-fold %08x)",
                               what[k], (long long)got_bytes, (unsigned)got_xor, l, (long long)want_bytes,
                               (unsigned)want_xor);
        }
        double warm;
        for (int i = 0; i < 3; i++) DL_TRY(dl_bench_time_read(bench, &a, tokens, order, 0, &warm));
        read_sampler s = {bench, al, tokens, order, !o->hot_l2, chain};
        dl_timing_stats st;
        DL_TRY(dl_timing_collect(read_sample, &s, &o->topt, &st));
        ref->t[k] = st.median;
        ref->n[k] = st.n;
        ref->converged[k] = st.converged;
    }
    ref->ref_s = contig_fits && ref->t[1] < ref->t[0] ? ref->t[1] : ref->t[0];
    return 0;
}

static int run_variant_planned(const dl_run_opts *o, const dl_golden *g, const dl_variant *v, dl_bench *bench,
                               dev_bufs *d, const dl_peak_read *peak, const read_ref *ref, dl_result_row *r,
                               float *ho[2], float *hl[2], dl_gpu_args *ap, const dl_gpu_plan *plan);

/* The sequence lengths of the case (host), for a plan function; NULL (dl_fail) when out of memory. */
static int32_t *case_lens(const dl_case *c)
{
    int32_t *lens = dl_malloc((size_t)c->cfg.batch_size * sizeof(int32_t), "sequence lengths");
    if (lens)
        for (int64_t b = 0; b < c->cfg.batch_size; b++) lens[b] = (int32_t)dl_case_seq_len(c, b);
    return lens;
}

/* --chain: the layers' arguments al[0 .. chain) from layer 0's a; a planned variant gets a plan of its own per
 * layer after the first (lp[1 ..]: its tensor maps name the layer's caches; its tickets and counters are the
 * layer's), sharing layer 0's workspace. *nlp: plans made (lp[1 .. *nlp]), to free with chain_free. */
static int chain_setup(const dl_variant *v, const dl_case *c, const dl_gpu_args *a, const dev_bufs *d, int chain,
                       dl_gpu_args *al, dl_gpu_plan *lp, int *nlp)
{
    *nlp = 0;
    layer_args(al, a, d, chain);
    if (!v->plan) return 0;
    int32_t *lens = case_lens(c);
    if (!lens) return -1;
    int rc = 0;
    for (int l = 1; l < chain && !rc; l++) {
        memset(&lp[l], 0, sizeof lp[l]);
        rc = v->plan(&al[l], lens, &lp[l]);
        if (rc) break;
        *nlp = l;
        if (lp[l].workspace_bytes > d->ws_bytes)
            rc = dl_fail("--chain: layer %d's plan asks for %zu workspace bytes, layer 0's had %zu", l,
                         lp[l].workspace_bytes, d->ws_bytes);
        al[l].plan = &lp[l];
    }
    free(lens);
    return rc;
}

static void chain_free(dl_gpu_plan *lp, int nlp)
{
    for (int l = 1; l <= nlp; l++) dl_gpu_plan_free(&lp[l]);
}

/* --chain: one untimed chain on poisoned outputs; the last layer's o and lse (the same inputs as every layer's)
 * must equal one launch's (bit for bit where two launches agreed bitwise, else within the model's limits).
 * Returns 0 with *ok set, or nonzero on a CUDA error. */
static int chain_check(const dl_variant *v, const dl_gpu_args *al, int chain, const dev_bufs *d, const dl_golden *g,
                       const dl_output *mod, dl_result_row *r, float *ho[2], float *hl[2], size_t no, size_t nl,
                       int *ok)
{
    *ok = 0;
    dl_gpu_args last = al[chain - 1]; /* the last layer writes its own poisoned o and lse */
    last.o = d->lo;
    last.lse = d->llse;
    DL_TRY(dl_dev_poison(d->o, no * sizeof(float), al[0].stream));
    DL_TRY(dl_dev_poison(d->lse, nl * sizeof(float), al[0].stream));
    DL_TRY(dl_dev_poison(d->lo, no * sizeof(float), al[0].stream));
    DL_TRY(dl_dev_poison(d->llse, nl * sizeof(float), al[0].stream));
    if (d->ws) DL_TRY(dl_dev_poison(d->ws, d->ws_bytes, al[0].stream));
    for (int l = 0; l < chain; l++) DL_TRY(v->launch(l == chain - 1 ? &last : &al[l]));
    DL_TRY(dl_dev_check_launch(v->name, al[0].stream));
    DL_TRY(dl_dev_download(ho[1], d->lo, no * sizeof(float), "o"));
    DL_TRY(dl_dev_download(hl[1], d->llse, nl * sizeof(float), "lse"));
    if (r->deterministic) {
        *ok = !memcmp(ho[0], ho[1], no * sizeof(float)) && !memcmp(hl[0], hl[1], nl * sizeof(float));
        return 0;
    }
    dl_result_row *tmp = dl_malloc(sizeof *tmp, "a scratch results row");
    if (!tmp) return -1;
    *tmp = *r;
    *ok = dl_run_judge(tmp, ho[1], hl[1], mod, v->model, g->have[DL_MODEL_EXACT] ? &g->out[DL_MODEL_EXACT] : NULL,
                       g->c.cfg.kv_dtype, 0.0) != DL_FAIL;
    free(tmp);
    return 0;
}

/* Check (and time) one variant into row r. Returns 0, or nonzero on a CUDA
 * error (recorded into r as a FAIL with the reason). */
static int run_variant(const dl_run_opts *o, const dl_golden *g, const dl_variant *v, dl_bench *bench, dev_bufs *d,
                       const dl_device_info *info, const dl_peak_read *peak, const read_ref *ref, dl_result_row *r,
                       float *ho[2], float *hl[2])
{
    const dl_case *c = &g->c;
    dl_gpu_args a;
    case_args(&a, c, d, bench, r->max_seq_len);
    a.p_scale = g->params.p_scale;
    a.acc_promote_blocks = (int)g->params.acc_promote_blocks;
    a.num_splits = dl_variant_splits(v, o->splits > 0 ? o->splits : dl_gpu_choose_splits(&a, info->sm_count));
    dl_gpu_plan plan;
    memset(&plan, 0, sizeof plan);
    if (v->plan) { /* the variant schedules itself (balanced plan): --splits does not apply */
        int32_t *lens = case_lens(c);
        if (!lens) return -1;
        dl_gpu_args pa = a; /* with --chain, planned as the chain's first layer (layer_args), so that every layer's
                             * plan, and with it the last layer's outputs, is the one launch's (chain_check) */
        pa.pdl = o->chain > 1 && o->time;
        int prc = v->plan(&pa, lens, &plan);
        free(lens);
        DL_TRY(prc);
        a.plan = &plan;
    }
    r->num_splits = a.num_splits;
    int rc = run_variant_planned(o, g, v, bench, d, peak, ref, r, ho, hl, &a, v->plan ? &plan : NULL);
    if (v->plan) dl_gpu_plan_free(&plan);
    return rc;
}

/* run_variant once the launch arguments (and the plan, if any) are set. */
static int run_variant_planned(const dl_run_opts *o, const dl_golden *g, const dl_variant *v, dl_bench *bench,
                               dev_bufs *d, const dl_peak_read *peak, const read_ref *ref, dl_result_row *r,
                               float *ho[2], float *hl[2], dl_gpu_args *ap, const dl_gpu_plan *plan)
{
    const dl_case *c = &g->c;
    const dl_config *cfg = &c->cfg;
    size_t no = (size_t)(cfg->batch_size * cfg->num_qo_heads * cfg->head_dim);
    size_t nl = (size_t)(cfg->batch_size * cfg->num_qo_heads);
    dl_gpu_args a = *ap;
    size_t ws = plan ? plan->workspace_bytes : dl_gpu_workspace_bytes(&a);
    if (ws > d->ws_bytes) {
        dl_dev_free(d->ws);
        d->ws = NULL;
        d->ws_bytes = 0;
        DL_TRY(dl_dev_malloc(&d->ws, ws, "split-KV workspace"));
        d->ws_bytes = ws;
    }
    a.workspace = d->ws;

    /* check: two launches, each on poisoned outputs; both are judged, and whether they agree bit for bit is recorded */
    DL_TRY(checked_launch(v, &a, d, ho[0], hl[0], no, nl));
    DL_TRY(checked_launch(v, &a, d, ho[1], hl[1], no, nl));

    /* judge: against the variant's model for the schedule it ran (split-KV on the tensor-core kernels: the
     * model computed with the same segments and merge, dl_model_sched.h; the CUDA-core kernels' tile is
     * not exported, and their models round nothing after the scores: the stored model), and against exact */
    const dl_output *mod = &g->out[v->model];
    snprintf(r->model_schedule, sizeof r->model_schedule, "none");
    if (plan) { /* a planned variant: the model of its plan's segments and merge (the stored one where no task is
                 * split: then the merge is named none, and the plan's shape is still recorded) */
        dl_schedule sc = {plan->num_tasks, plan->sched_indptr, plan->sched_begin};
        DL_TRY(dl_model_for_schedule(g, v->model, &sc, &mod));
        char cut[32] = ""; /* the heads order's cut, when not equal runs */
        if (plan->order == DL_ORDER_HEADS && plan->cut == DL_CUT_COST)
            snprintf(cut, sizeof cut, ":cost%d", plan->seg_cost);
        else if (plan->order == DL_ORDER_HEADS && plan->cut == DL_CUT_APPORTION)
            snprintf(cut, sizeof cut, ":apportion");
        char merge[32] = "ticket"; /* or the merge kernel, with its CTAs per (task, head) when more than one */
        if (dl_schedule_trivial(&sc)) snprintf(merge, sizeof merge, "none");
        else if (plan->merge_kernel == 1) snprintf(merge, sizeof merge, "kernel%s", plan->merge_form ? "-1p" : "");
        else if (plan->merge_kernel > 1)
            snprintf(merge, sizeof merge, "kernel%d%s", plan->merge_kernel, plan->merge_form ? "-1p" : "");
        else if (plan->cluster > 0 && plan->cluster_per_task > 1)
            snprintf(merge, sizeof merge, "cluster%dx%d", plan->cluster, plan->cluster_per_task);
        else if (plan->cluster > 0) snprintf(merge, sizeof merge, "cluster%d", plan->cluster);
        char unit[16] = ""; /* the cut's unit, when not the 64-token tile (DL_STREAM_UNIT) */
        if (plan->unit > 0 && plan->unit != DL_MMA_SPLIT_TILE) snprintf(unit, sizeof unit, ":unit%d", plan->unit);
        char walk[24] = "tasks"; /* heads<g> where a run went to a group of g KV heads (DL_STREAM_HEAD_GROUP) */
        if (plan->order == DL_ORDER_HEADS && plan->head_group > 0) snprintf(walk, sizeof walk, "heads%d", plan->head_group);
        else if (plan->order == DL_ORDER_HEADS) snprintf(walk, sizeof walk, "heads");
        char claim[24] = ""; /* attempt #71: the split tasks' tiles claimed at run time (DL_STREAM_CLAIM) */
        if (plan->claim > 0 && !dl_schedule_trivial(&sc))
            snprintf(claim, sizeof claim, ":claim%dm%df%d", plan->claim, plan->claim_min, plan->claim_own);
        char cap[16] = ""; /* a launch held to N CTAs an SM (DL_STREAM_CHAIN_CAP: a PDL-chained layer, or any with 2) */
        if (plan->chain_cap > 0) snprintf(cap, sizeof cap, ":cap%d", plan->chain_cap);
        char sched[128];
        const int len = snprintf(sched, sizeof sched, "plan:%dx%dw:%dsegs:%s:%s%s%s%s%s%s%s", plan->ctas, plan->warps,
                                 plan->num_segs, merge, walk, cut,
                                 plan->page_stage == 2 ? ":page2" : plan->page_stage ? ":page" : "",
                                 plan->deep_rings ? ":deep" : "", unit, claim, cap);
        if (len < 0 || (size_t)len >= sizeof r->model_schedule) /* the row's field is fixed (data/SCHEMA.md) */
            return dl_fail("run: the plan's schedule name '%s' is longer than the results' model_schedule field "
                           "(%zu characters)", sched, sizeof r->model_schedule - 1);
        memcpy(r->model_schedule, sched, (size_t)len + 1);
        r->plan_cta_tokens_max = plan->cta_tokens_max;
        r->plan_cta_tokens_mean = plan->cta_tokens_mean;
    } else if (a.num_splits > 1 && v->unit != DL_UNIT_SIMT) {
        dl_schedule sc;
        int64_t chunk = 0;
        DL_TRY(dl_schedule_split_kv(c, a.num_splits, DL_MMA_SPLIT_TILE, &sc, &chunk));
        int src = dl_model_for_schedule(g, v->model, &sc, &mod);
        if (!src && !dl_schedule_trivial(&sc))
            snprintf(r->model_schedule, sizeof r->model_schedule, "split-kv:%dx%lld", a.num_splits, (long long)chunk);
        dl_schedule_free(&sc);
        DL_TRY(src);
    }
    /* both launches judged (dl_run_judge_launches): a repeat launch that goes wrong fails the row */
    dl_verdict worst = dl_run_judge_launches(r, ho, hl, no, nl, mod, v->model,
                                             g->have[DL_MODEL_EXACT] ? &g->out[DL_MODEL_EXACT] : NULL, cfg->kv_dtype);
    if (o->save_dir) DL_TRY(dl_run_save_outputs(o->save_dir, g, v, r, ho[0], hl[0]));

    if (!o->time) return 0;
    if (worst == DL_FAIL && !o->time_failed) {
        snprintf(r->reason, sizeof r->reason, "not timed: the check failed");
        return 0;
    }
    if (worst == DL_FAIL) {
        size_t n = strlen(r->reason);
        snprintf(r->reason + n, sizeof r->reason - n, "%stimed anyway (--time-failed)", n ? "; " : "");
    }
    /* time */
    const int chain = o->chain > 1 ? o->chain : 1;
    dl_gpu_args al[DL_CHAIN_MAX];
    dl_gpu_plan lp[DL_CHAIN_MAX];
    int nlp = 0, chain_ok = 1;
    if (chain > 1) {
        int crc = chain_setup(v, c, &a, d, chain, al, lp, &nlp);
        if (!crc) crc = chain_check(v, al, chain, d, g, mod, r, ho, hl, no, nl, &chain_ok);
        if (crc || !chain_ok) chain_free(lp, nlp);
        DL_TRY(crc);
        if (!chain_ok) {
            snprintf(r->verdict, sizeof r->verdict, "FAIL");
            snprintf(r->reason, sizeof r->reason, "the chain of %d layers (--chain) left outputs that differ from one "
                     "launch's%s: not timed", chain, r->deterministic ? " (bitwise)" : " (beyond the model's limits)");
            return 0;
        }
    }
    sampler s = {bench, v->launch, chain > 1 ? al : &a, !o->hot_l2, o->graph, chain};
    double warm;
    int trc = 0;
    for (int i = 0; i < 3 && !trc; i++) trc = dl_bench_time_chain(bench, v->launch, s.a, chain, 0, &warm);
    if (!trc && o->graph) trc = dl_bench_graph_capture(bench, v->launch, &a, o->graph_launches);
    dl_timing_stats st;
    if (!trc) trc = dl_timing_collect(sample, &s, &o->topt, &st);
    chain_free(lp, nlp);
    DL_TRY(trc);
    snprintf(r->timing_mode, sizeof r->timing_mode, "%s", dl_run_timing_mode(o));
    snprintf(r->flush, sizeof r->flush, "%s", dl_run_flush_name(o));
    r->graph_launches = o->graph ? o->graph_launches : chain;
    r->time_samples = st.n;
    r->time_converged = st.converged;
    r->time_median_s = st.median;
    r->time_min_s = st.min;
    r->time_max_s = st.max;
    r->time_mean_s = st.mean;
    r->time_stdrel = st.stdrel;
    r->time_elapsed_s = st.elapsed_s;
    r->gbps = (double)r->bytes_total / st.median / 1e9;
    r->peak_read_gbps = peak->gbps;
    r->frac_peak = peak->gbps > 0 ? r->gbps / peak->gbps : NAN;
    r->ref_read_pages_s = ref->t[0];
    r->ref_read_contig_s = ref->t[1];
    r->ref_read_s = ref->ref_s;
    r->frac_ref = ref->ref_s / st.median; /* NaN when the reference is unknown */
    if (!st.converged)
        /* tests/sweep_compare.py --measured takes a reason starting "timing hit the " as a measurement */
        snprintf(r->reason, sizeof r->reason, "timing hit the %.3g s cap before stdrel < %.3g%% (%.3f%% after %lld samples)",
                 o->topt.max_time_s, 100 * o->topt.max_stdrel, 100 * st.stdrel, (long long)st.n);
    return 0;
}

int dl_run_case(const dl_run_opts *o, const dl_golden *g, const dl_variant **sel, int nsel, dl_result_row *rows,
                int *any_fail)
{
    const dl_case *c = &g->c;
    dl_bench *bench = NULL;
    dev_bufs d;
    memset(&d, 0, sizeof d);
    dl_device_info info;
    dl_peak_read peak;
    memset(&peak, 0, sizeof peak);
    peak.gbps = NAN;
    read_ref ref = {{NAN, NAN}, {0, 0}, {0, 0}, NAN, 0};
    DL_TRY(dl_bench_device_info(&info));
    DL_TRY(dl_bench_create(&bench));
    size_t no = (size_t)(c->cfg.batch_size * c->cfg.num_qo_heads * c->cfg.head_dim);
    size_t nl = (size_t)(c->cfg.batch_size * c->cfg.num_qo_heads);
    float *ho[2] = {dl_malloc(no * 4, "o download"), dl_malloc(no * 4, "o download")};
    float *hl[2] = {dl_malloc(nl * 4, "lse download"), dl_malloc(nl * 4, "lse download")};
    int rc = (ho[0] && ho[1] && hl[0] && hl[1]) ? 0 : -1;
    if (!rc && o->time && !o->hot_l2) rc = dl_bench_set_flush(bench, (dl_flush_mode)o->flush);
    if (!rc && o->time) rc = dl_bench_peak_read(bench, 0, o->peak_runs, &peak);
    if (!rc) rc = upload_case(c, &d);
    if (!rc && o->time && o->chain > 1) rc = upload_layers(c, &d, o->chain);
    char drv[16], rt[16];
    dl_run_version_string(info.driver_version, drv, sizeof drv);
    dl_run_version_string(info.runtime_version, rt, sizeof rt);
    printf("device: %s (%d SMs, L2 %.1f MiB, %.1f GiB), driver %s, runtime %s\n", info.name, info.sm_count,
           info.l2_bytes / 1048576.0, info.total_mem / 1073741824.0, drv, rt);
    if (o->time && !rc)
        printf("peak read bandwidth: %.1f GB/s (median of %d runs over %.2f GiB, 16-byte loads, L2 flushed (%s); best "
               "%.1f)\n",
               peak.gbps, peak.runs, peak.bytes / 1073741824.0, o->flush == DL_FLUSH_READ ? "read" : "write",
               peak.gbps_best);
    dl_bytes bytes;
    dl_run_bytes(c, &bytes);
    char ref_mode[64]; /* how the read reference was timed: one read a sample, or a read of a chain's layer */
    if (o->chain > 1) snprintf(ref_mode, sizeof ref_mode, "per read of a chain of %d (chain-cold-l2)", o->chain);
    else snprintf(ref_mode, sizeof ref_mode, "%s", o->hot_l2 ? "hot-l2" : "cold-l2");
    if (o->time && !rc) {
        dl_clear_error();
        if (measure_read_ref(o, c, &d, bench, &ref)) {
            /* the variants still run; their ref_read_* and frac_ref stay NaN */
            fprintf(stderr, "decodelab run: read reference: %s: ref_read_* and frac_ref left NaN\n", dl_last_error());
            ref.t[0] = ref.t[1] = ref.ref_s = NAN;
        } else {
            if (ref.n[1] == 0)
                printf("read reference: page-table order %.2f us (%lld samples%s, %d-byte loads), contiguous not run "
                       "(pages shared between requests: the caches hold fewer than %lld B) over %lld B of KV, %s, "
                       "flush %s: ref_read %.2f us = %.1f GB/s\n",
                       1e6 * ref.t[0], (long long)ref.n[0], ref.converged[0] ? "" : ", not converged", ref.load_bytes,
                       (long long)bytes.kv, (long long)bytes.kv, ref_mode, dl_run_flush_name(o),
                       1e6 * ref.ref_s, bytes.kv / ref.ref_s / 1e9);
            else
                printf("read reference: page-table order %.2f us (%lld samples%s, %d-byte loads), contiguous %.2f us "
                       "(%lld samples%s, 16-byte loads) over %lld B of KV, %s, flush %s: ref_read %.2f us = %.1f "
                       "GB/s\n",
                       1e6 * ref.t[0], (long long)ref.n[0], ref.converged[0] ? "" : ", not converged", ref.load_bytes,
                       1e6 * ref.t[1], (long long)ref.n[1], ref.converged[1] ? "" : ", not converged",
                       (long long)bytes.kv, ref_mode, dl_run_flush_name(o), 1e6 * ref.ref_s,
                       bytes.kv / ref.ref_s / 1e9);
        }
    }
    char lost[400] = ""; /* why the CUDA context became unusable, after which variant */
    for (int i = 0; !rc && i < nsel; i++) {
        const dl_variant *v = sel[i];
        dl_result_row *r = &rows[i];
        r->bytes_q = bytes.q;
        r->bytes_kv = bytes.kv;
        r->bytes_kv_pages = bytes.kv_pages;
        r->bytes_scales = bytes.scales;
        r->bytes_page_table = bytes.page_table;
        r->bytes_o = bytes.o;
        r->bytes_lse = bytes.lse;
        r->bytes_total = bytes.total;
        r->peak_read_gbps = peak.gbps;
        snprintf(r->device_name, sizeof r->device_name, "%s", info.name);
        r->device_sm_count = info.sm_count;
        r->device_l2_bytes = info.l2_bytes;
        snprintf(r->driver_version, sizeof r->driver_version, "%s", drv);
        snprintf(r->runtime_version, sizeof r->runtime_version, "%s", rt);
        char why[sizeof r->reason];
        if (!v->supports(v, &c->cfg, why, sizeof why)) {
            snprintf(r->verdict, sizeof r->verdict, "SKIP");
            snprintf(r->reason, sizeof r->reason, "%s", why);
            continue;
        }
        if (!dl_run_params_ok(v, &g->params, why, sizeof why)) {
            snprintf(r->verdict, sizeof r->verdict, "SKIP");
            snprintf(r->reason, sizeof r->reason, "%s", why);
            continue;
        }
        if (!v->launch) {
            snprintf(r->verdict, sizeof r->verdict, "SKIP");
            snprintf(r->reason, sizeof r->reason, "no launcher (built without this kernel)");
            continue;
        }
        if (!g->have[v->model]) {
            snprintf(r->verdict, sizeof r->verdict, "SKIP");
            snprintf(r->reason, sizeof r->reason, "the golden file has no /golden/%s to judge it by",
                     dl_model_name(v->model));
            continue;
        }
        if (lost[0]) { /* a variant before this one left the context unusable: this one did not run */
            snprintf(r->verdict, sizeof r->verdict, "SKIP");
            snprintf(r->reason, sizeof r->reason, "not run: %s", lost);
            continue;
        }
        r->sm_clock_mhz_before = dl_bench_sm_clock_mhz(r->clock_source, sizeof r->clock_source);
        dl_clear_error();
        if (run_variant(o, g, v, bench, &d, &info, &peak, &ref, r, ho, hl)) {
            snprintf(r->verdict, sizeof r->verdict, "FAIL");
            snprintf(r->reason, sizeof r->reason, "error: %s", dl_last_error());
            if (dl_dev_context_ok()) /* sticky: every later call would fail with this variant's fault */
                snprintf(lost, sizeof lost, "%s after %s (its row FAILs with the error)", dl_last_error(), v->name);
        }
        r->sm_clock_mhz_after = dl_bench_sm_clock_mhz(r->clock_source, sizeof r->clock_source);
    }
    for (int i = 0; i < nsel; i++)
        if (!strcmp(rows[i].verdict, "FAIL")) *any_fail = 1;
    dl_model_sched_clear();
    free(ho[0]);
    free(ho[1]);
    free(hl[0]);
    free(hl[1]);
    dev_free_all(&d);
    dl_bench_destroy(bench);
    return rc;
}
#else
int dl_run_case(const dl_run_opts *o, const dl_golden *g, const dl_variant **sel, int nsel, dl_result_row *rows,
                int *any_fail)
{
    (void)o; (void)g; (void)sel; (void)nsel; (void)rows; (void)any_fail;
    return dl_fail("this binary was built without CUDA: no GPU variant can run");
}
#endif /* DL_HAVE_CUDA */

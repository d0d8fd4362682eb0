/* cmd_run.c - `decodelab run` (check every selected GPU variant against a
 * golden file, optionally time it the NVBench way beside the case's read
 * reference, record results), `decodelab
 * list` (the variant registry) and `decodelab info` (the device and its
 * measured peak read bandwidth). The CUDA side lives in gpu/dl_bench.cu and
 * the kernels; this file is plain C and builds without CUDA (DL_HAVE_CUDA=0),
 * in which case `run` and `info` report that no device is usable. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu/dl_bench.h"
#include "../gpu/dl_registry.h"
#include "cli_util.h"
#include "dl_cli.h"
#include "dl_compare.h"
#include "dl_golden.h"
#include "dl_model_sched.h"
#include "dl_results.h"
#include "dl_run.h"
#include "dl_timing.h"

#ifndef DL_HAVE_CUDA
#define DL_HAVE_CUDA 0
#endif
/* helpers only the GPU path calls are unused in a CUDA=0 build */
#define GPU_ONLY __attribute__((unused))

/* The reason dl_gpu_device_count() recorded, without a leading "no CUDA device: ". */
static const char *no_device_reason(void)
{
    const char *why = dl_last_error();
    if (!why || !*why) return "no reason given";
    if (!strncmp(why, "no CUDA device: ", 16)) why += 16;
    return why;
}

GPU_ONLY static void fill_variant(dl_result_row *r, const dl_variant *v)
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

GPU_ONLY static void version_string(int v, char *buf, size_t n) { snprintf(buf, n, "%d.%d", v / 1000, (v % 1000) / 10); }

/* ================================================================ options */

typedef struct {
    const char *golden, *variants, *out;
    int time, hot_l2, graph, graph_launches, peak_runs;
    int flush, flush_given; /* dl_flush_mode (--flush write|read); given on the command line */
    int splits; /* 0 = auto */
    int resume; /* skip variants whose row is already in --out */
    dl_timing_opts topt;
} run_opts;

static void run_help(FILE *f)
{
    fprintf(f,
            "usage: decodelab run GOLDEN.h5 [--variants GLOB[,GLOB]] [--time] [--flush write|read] [--hot-l2]\n"
            "                     [--graph] [--out RESULTS.h5] [--max-time-s S] [--min-samples N] [--splits N|auto]\n\n"
            "Checks every selected GPU variant on the golden file: the outputs are poisoned (NaN) before\n"
            "each launch, every element must be written; o and lse are scored against the variant's own\n"
            "golden model for the schedule the kernel ran (implementation limits, global and per (request, head)):\n"
            "PASS or FAIL; against exact: the precision, within or above the model's expected band (not a FAIL).\n"
            "A variant that cannot run the case is a SKIP row with its reason.\n\n"
            "  --variants GLOB[,GLOB]  select variants by shell glob (default: all; see decodelab list)\n"
            "  --splits N|auto         split-KV chunks per sequence (default auto: dl_gpu_choose_splits)\n"
            "  --time                  time each variant that passed its check: warm-up, then per sample an\n"
            "                          L2 flush and one launch between CUDA events, until stdrel < --max-stdrel\n"
            "                          with >= --min-samples samples, or --max-time-s. First, once per case, the\n"
            "                          read reference: two reads of exactly the case's KV bytes, timed the same\n"
            "                          way (columns ref_read_pages_s: in page-table order; ref_read_contig_s: the\n"
            "                          same byte count contiguously; ref_read_s: the faster of the two medians)\n"
            "                          and frac_ref = ref_read_s / time_median_s (1 = as fast as a plain read)\n"
            "  --flush write|read      how a cold sample flushes L2 (implies --time; column flush): write (default)\n"
            "                          = a memset of 2x L2, leaving dirty lines the timed kernel may write back;\n"
            "                          read = a streaming read of 4x L2 (discarded), leaving only clean lines.\n"
            "                          Used for the peak calibration, the read reference and the variants\n"
            "  --hot-l2                no flush between samples (timing_mode hot-l2, flush none; also for the\n"
            "                          read reference); cannot be combined with --flush\n"
            "  --graph                 time replays of a CUDA graph of --graph-launches launches (default\n"
            "                          20); per-launch time = replay / launches (the read reference stays one\n"
            "                          launch per sample, flushed unless --hot-l2)\n"
            "  --max-time-s S          time cap per variant and per reader of the read reference (default 5)\n"
            "  --min-samples N         (default 10)      --max-stdrel X   (default 0.005)\n"
            "  --peak-runs N           runs of the peak-read calibration kernel (default 20)\n"
            "  --out RESULTS.h5        append one row per variant to RESULTS.h5 and its twin RESULTS.csv\n"
            "                          (atomically; schema: data/SCHEMA.md (results table)). Without it nothing is written.\n"
            "  --resume                skip the variants that already have a row in --out for the same golden\n"
            "                          inputs (content hash), split count, timing mode and flush (an interrupted\n"
            "                          sweep reruns without duplicating rows)\n\n"
            "Without a CUDA device: says so, lists the variants that would have run, exits 0.\n"
            "exit status: 0 all checks PASS/SKIP, 1 a variant FAILed, 2 bad input or setup error.\n");
}

static int parse_run(int argc, char **argv, run_opts *o)
{
    memset(o, 0, sizeof *o);
    dl_timing_opts_default(&o->topt);
    o->graph_launches = 20;
    o->peak_runs = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = (i + 1 < argc) ? argv[i + 1] : NULL;
        int64_t iv;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            run_help(stdout);
            return 1;
        } else if (!strcmp(a, "--time")) {
            o->time = 1;
        } else if (!strcmp(a, "--hot-l2")) {
            o->hot_l2 = 1;
        } else if (!strcmp(a, "--graph")) {
            o->graph = 1;
        } else if (!strcmp(a, "--resume")) {
            o->resume = 1;
        } else if (a[0] == '-' && a[1] == '-' && !val) {
            return dl_fail("%s: missing value (or unknown flag; see decodelab run --help)", a);
        } else if (!strcmp(a, "--variants")) {
            o->variants = argv[++i];
        } else if (!strcmp(a, "--out")) {
            o->out = argv[++i];
        } else if (!strcmp(a, "--max-time-s")) {
            DL_TRY(dl_parse_f64(a, argv[++i], &o->topt.max_time_s));
            if (!(o->topt.max_time_s > 0)) return dl_fail("%s: '%s' must be > 0", a, argv[i]);
        } else if (!strcmp(a, "--max-stdrel")) {
            DL_TRY(dl_parse_f64(a, argv[++i], &o->topt.max_stdrel));
            if (!(o->topt.max_stdrel > 0)) return dl_fail("%s: '%s' must be > 0", a, argv[i]);
        } else if (!strcmp(a, "--min-samples")) {
            DL_TRY(dl_parse_i64(a, argv[++i], 1, 1000000, &o->topt.min_samples));
            if (o->topt.max_samples < o->topt.min_samples) o->topt.max_samples = o->topt.min_samples;
        } else if (!strcmp(a, "--graph-launches")) {
            DL_TRY(dl_parse_i64(a, argv[++i], 1, 100000, &iv));
            o->graph_launches = (int)iv;
        } else if (!strcmp(a, "--peak-runs")) {
            DL_TRY(dl_parse_i64(a, argv[++i], 1, 10000, &iv));
            o->peak_runs = (int)iv;
        } else if (!strcmp(a, "--flush")) {
            const char *v = argv[++i];
            if (!strcmp(v, "write")) o->flush = DL_FLUSH_WRITE;
            else if (!strcmp(v, "read")) o->flush = DL_FLUSH_READ;
            else return dl_fail("--flush: '%s' is not write or read", v);
            o->flush_given = 1;
        } else if (!strcmp(a, "--splits")) {
            if (!strcmp(argv[++i], "auto")) o->splits = 0;
            else {
                DL_TRY(dl_parse_i64(a, argv[i], 1, 4096, &iv));
                o->splits = (int)iv;
            }
        } else if (a[0] == '-') {
            return dl_fail("unknown flag '%s' (see decodelab run --help)", a);
        } else if (!o->golden) {
            o->golden = a;
        } else {
            return dl_fail("one golden file expected, got '%s' and '%s'", o->golden, a);
        }
    }
    if (!o->golden) return dl_fail("missing GOLDEN.h5 (see decodelab run --help)");
    if (o->resume && !o->out) return dl_fail("--resume: needs --out RESULTS.h5 (the table to resume)");
    if (o->flush_given && o->hot_l2)
        return dl_fail("--flush: '%s' cannot be combined with --hot-l2 (no flush between samples)",
                       o->flush == DL_FLUSH_READ ? "read" : "write");
    if ((o->hot_l2 || o->graph || o->flush_given) && !o->time) o->time = 1;
    return 0;
}

GPU_ONLY static const char *timing_mode(const run_opts *o)
{
    if (o->graph) return o->hot_l2 ? "graph-hot-l2" : "graph-cold-l2";
    return o->hot_l2 ? "hot-l2" : "cold-l2";
}

/* The results column `flush` of a timed row. */
GPU_ONLY static const char *flush_name(const run_opts *o)
{
    if (o->hot_l2) return "none";
    return o->flush == DL_FLUSH_READ ? "read" : "write";
}

/* ================================================================ table */

GPU_ONLY static void print_header(int timed)
{
    printf("%-18s %-7s %6s %11s %11s %11s | %11s %11s %-14s %4s", "variant", "verdict", "splits", "o_relL2", "o_head",
           "lse_abs", "o_relL2/ex", "lse_abs/ex", "precision", "det");
    if (timed) printf(" | %10s %10s %10s %7s %6s %8s %6s %8s", "median_us", "min_us", "max_us", "stdrel%", "n", "GB/s",
                      "%peak", "frac_ref");
    printf("\n");
}

GPU_ONLY static void print_row(const dl_result_row *r, int timed)
{
    if (!strcmp(r->verdict, "SKIP")) {
        printf("%-18s %-8s %s\n", r->variant, r->verdict, r->reason);
        return;
    }
    printf("%-18s %-7s %6lld %11.3e %11.3e %11.3e | %11.3e %11.3e %-14s %4s", r->variant, r->verdict,
           (long long)r->num_splits, r->model_o.rel_l2, r->model_o.head_rel_l2, r->model_lse.max_abs, r->exact_o.rel_l2,
           r->exact_lse.max_abs, r->verdict_exact, r->deterministic == 1 ? "yes" : r->deterministic == 0 ? "NO" : "-");
    if (timed && r->time_samples > 0) {
        printf(" | %10.2f %10.2f %10.2f %7.3f %6lld %8.1f %6.1f", 1e6 * r->time_median_s, 1e6 * r->time_min_s,
               1e6 * r->time_max_s, 100 * r->time_stdrel, (long long)r->time_samples, r->gbps, 100 * r->frac_peak);
        if (isfinite(r->frac_ref)) printf(" %8.3f", r->frac_ref);
        else printf(" %8s", "-");
        if (r->time_converged == 0) printf(" NOT CONVERGED");
    }
    printf("\n");
    if (strcmp(r->model_schedule, "none") && r->model_schedule[0])
        printf("%-18s   judged against the %s model computed for the kernel's schedule %s\n", "", r->model, r->model_schedule);
    if (!strcmp(r->verdict, "FAIL") && r->model_o.head_worst >= 0)
        printf("%-18s   limits: o rel L2 %.3g, per head %.3g, lse %.3g; worst head: b=%lld h=%lld\n", "",
               r->limit_o_rel_l2, r->limit_o_head_rel_l2, r->limit_lse_abs,
               (long long)(r->model_o.head_worst / r->num_qo_heads), (long long)(r->model_o.head_worst % r->num_qo_heads));
    if (r->reason[0]) printf("%-18s   %s\n", "", r->reason);
    if (r->model_o.unwritten > 0 || r->model_lse.unwritten > 0 || r->model_o.nonfinite > 0 || r->model_lse.nonfinite > 0)
        printf("%-18s   o: %lld unwritten, %lld non-finite; lse: %lld unwritten, %lld non-finite\n", "",
               (long long)r->model_o.unwritten, (long long)r->model_o.nonfinite, (long long)r->model_lse.unwritten,
               (long long)r->model_lse.nonfinite);
}

/* ================================================================ GPU part */

#if DL_HAVE_CUDA
typedef struct {
    void *q, *k, *v, *ks, *vs, *indptr, *indices, *last, *o, *lse, *ws;
    size_t ws_bytes;
} dev_bufs;

static void dev_free_all(dev_bufs *d)
{
    void *p[] = {d->q, d->k, d->v, d->ks, d->vs, d->indptr, d->indices, d->last, d->o, d->lse, d->ws};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) dl_dev_free(p[i]);
    memset(d, 0, sizeof *d);
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
    const dl_gpu_args *a;
    int flush, graph;
} sampler;

static int sample(void *ctx, double *sec)
{
    sampler *s = ctx;
    return s->graph ? dl_bench_time_graph(s->b, s->flush, sec) : dl_bench_time_launch(s->b, s->fn, s->a, s->flush, sec);
}

/* One checked launch: poison, launch, wait, download. */
static int checked_launch(const dl_variant *v, const dl_gpu_args *a, const dev_bufs *d, float *o, float *lse,
                          size_t no, size_t nl)
{
    DL_TRY(dl_dev_poison(d->o, no * sizeof(float), a->stream));
    DL_TRY(dl_dev_poison(d->lse, nl * sizeof(float), a->stream));
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
    const dl_gpu_args *a;
    int64_t tokens;
    dl_read_order order;
    int flush;
} read_sampler;

static int read_sample(void *ctx, double *sec)
{
    read_sampler *s = ctx;
    return dl_bench_time_read(s->b, s->a, s->tokens, s->order, s->flush, sec);
}

/* Self-check both readers against the host's count and xor-fold of the case's
 * KV bytes (dl_run_read_sum), then time each like a variant: 3 unflushed
 * warm-ups, then dl_timing_collect with the run's sampling rules, flushed
 * unless --hot-l2 (one launch per sample also with --graph). */
static int measure_read_ref(const run_opts *o, const dl_case *c, const dev_bufs *d, dl_bench *bench, read_ref *ref)
{
    static const char *const what[2] = {"page-table", "contiguous"};
    int64_t tokens = 0, maxlen = 0;
    for (int64_t b = 0; b < c->cfg.batch_size; b++) {
        int64_t len = dl_case_seq_len(c, b);
        tokens += len;
        if (len > maxlen) maxlen = len;
    }
    dl_gpu_args a;
    case_args(&a, c, d, bench, maxlen);
    ref->load_bytes = dl_read_ref_load_bytes(&a);
    for (int k = 0; k < 2; k++) {
        const dl_read_order order = k == 0 ? DL_READ_PAGES : DL_READ_CONTIG;
        int64_t want_bytes = 0, got_bytes = 0;
        uint32_t want_xor = 0, got_xor = 0;
        dl_run_read_sum(c, order == DL_READ_CONTIG, &want_bytes, &want_xor);
        DL_TRY(dl_bench_read_check(bench, &a, tokens, order, &got_bytes, &got_xor));
        if (got_bytes != want_bytes || got_xor != want_xor)
            return dl_fail("the %s reader read %lld bytes (xor-fold %08x), the case's KV bytes are %lld "
                           "(xor-fold %08x)",
                           what[k], (long long)got_bytes, (unsigned)got_xor, (long long)want_bytes, (unsigned)want_xor);
        double warm;
        for (int i = 0; i < 3; i++) DL_TRY(dl_bench_time_read(bench, &a, tokens, order, 0, &warm));
        read_sampler s = {bench, &a, tokens, order, !o->hot_l2};
        dl_timing_stats st;
        DL_TRY(dl_timing_collect(read_sample, &s, &o->topt, &st));
        ref->t[k] = st.median;
        ref->n[k] = st.n;
        ref->converged[k] = st.converged;
    }
    ref->ref_s = ref->t[0] < ref->t[1] ? ref->t[0] : ref->t[1];
    return 0;
}

static int run_variant_planned(const run_opts *o, const dl_golden *g, const dl_variant *v, dl_bench *bench,
                               dev_bufs *d, const dl_peak_read *peak, const read_ref *ref, dl_result_row *r,
                               float *ho[2], float *hl[2], dl_gpu_args *ap, const dl_gpu_plan *plan);

/* Check (and time) one variant into row r. Returns 0, or nonzero on a CUDA
 * error (recorded into r as a FAIL with the reason). */
static int run_variant(const run_opts *o, const dl_golden *g, const dl_variant *v, dl_bench *bench, dev_bufs *d,
                       const dl_device_info *info, const dl_peak_read *peak, const read_ref *ref, dl_result_row *r,
                       float *ho[2], float *hl[2])
{
    const dl_case *c = &g->c;
    const dl_config *cfg = &c->cfg;
    dl_gpu_args a;
    case_args(&a, c, d, bench, r->max_seq_len);
    a.num_splits = o->splits > 0 ? o->splits : dl_gpu_choose_splits(&a, info->sm_count);
    if (a.num_splits < 1) a.num_splits = 1;
    dl_gpu_plan plan;
    memset(&plan, 0, sizeof plan);
    if (v->compute == DL_COMPUTE_FP8) a.num_splits = 1; /* the FP8 kernels never split (gpu/decode_fp8_mma.cu) */
    if (v->plan) { /* the variant schedules itself (balanced plan): --splits does not apply */
        a.num_splits = 1;
        int32_t *lens = dl_malloc((size_t)cfg->batch_size * sizeof(int32_t), "sequence lengths");
        if (!lens) return -1;
        for (int64_t b = 0; b < cfg->batch_size; b++) lens[b] = (int32_t)dl_case_seq_len(c, b);
        int prc = v->plan(&a, lens, &plan);
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
static int run_variant_planned(const run_opts *o, const dl_golden *g, const dl_variant *v, dl_bench *bench,
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

    /* check: two launches, each on poisoned outputs; the second must repeat the first bit for bit */
    DL_TRY(checked_launch(v, &a, d, ho[0], hl[0], no, nl));
    DL_TRY(checked_launch(v, &a, d, ho[1], hl[1], no, nl));
    r->deterministic = !memcmp(ho[0], ho[1], no * sizeof(float)) && !memcmp(hl[0], hl[1], nl * sizeof(float));

    /* judge: against the variant's model for the schedule it ran (split-KV on the tensor-core kernels: the
     * model computed with the same segments and merge, dl_model_sched.h; the CUDA-core kernels' tile is
     * not exported, and their models round nothing after the scores: the stored model), and against exact */
    const dl_output *mod = &g->out[v->model];
    snprintf(r->model_schedule, sizeof r->model_schedule, "none");
    if (plan) { /* a planned variant: the model of its plan's segments and merge */
        dl_schedule sc = {plan->num_tasks, plan->sched_indptr, plan->sched_begin};
        DL_TRY(dl_model_for_schedule(g, v->model, &sc, &mod));
        if (!dl_schedule_trivial(&sc))
            snprintf(r->model_schedule, sizeof r->model_schedule, "plan:%dx%dw:%dsegs", plan->ctas, plan->warps,
                     plan->num_segs);
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
    dl_verdict worst = dl_run_judge(r, ho[0], hl[0], mod, v->model, g->have[DL_MODEL_EXACT] ? &g->out[DL_MODEL_EXACT] : NULL,
                                    cfg->kv_dtype, 0.0);
    if (!r->deterministic) snprintf(r->reason, sizeof r->reason, "two launches on the same inputs differ bitwise");

    if (!o->time) return 0;
    if (worst == DL_FAIL) {
        snprintf(r->reason, sizeof r->reason, "not timed: the check failed");
        return 0;
    }
    /* time */
    sampler s = {bench, v->launch, &a, !o->hot_l2, o->graph};
    double warm;
    for (int i = 0; i < 3; i++) DL_TRY(dl_bench_time_launch(bench, v->launch, &a, 0, &warm));
    if (o->graph) DL_TRY(dl_bench_graph_capture(bench, v->launch, &a, o->graph_launches));
    dl_timing_stats st;
    DL_TRY(dl_timing_collect(sample, &s, &o->topt, &st));
    snprintf(r->timing_mode, sizeof r->timing_mode, "%s", timing_mode(o));
    snprintf(r->flush, sizeof r->flush, "%s", flush_name(o));
    r->graph_launches = o->graph ? o->graph_launches : 1;
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
        snprintf(r->reason, sizeof r->reason, "timing hit the %.3g s cap before stdrel < %.3g%% (%.3f%% after %lld samples)",
                 o->topt.max_time_s, 100 * o->topt.max_stdrel, 100 * st.stdrel, (long long)st.n);
    return 0;
}

static int run_gpu(const run_opts *o, const dl_golden *g, const dl_variant **sel, int nsel, dl_result_row *rows,
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
    char drv[16], rt[16];
    version_string(info.driver_version, drv, sizeof drv);
    version_string(info.runtime_version, rt, sizeof rt);
    printf("device: %s (%d SMs, L2 %.1f MiB, %.1f GiB), driver %s, runtime %s\n", info.name, info.sm_count,
           info.l2_bytes / 1048576.0, info.total_mem / 1073741824.0, drv, rt);
    if (o->time && !rc)
        printf("peak read bandwidth: %.1f GB/s (median of %d runs over %.2f GiB, 16-byte loads, L2 flushed (%s); best "
               "%.1f)\n",
               peak.gbps, peak.runs, peak.bytes / 1073741824.0, o->flush == DL_FLUSH_READ ? "read" : "write",
               peak.gbps_best);
    dl_bytes bytes;
    dl_run_bytes(c, &bytes);
    if (o->time && !rc) {
        dl_clear_error();
        if (measure_read_ref(o, c, &d, bench, &ref)) {
            /* the variants still run; their ref_read_* and frac_ref stay NaN */
            fprintf(stderr, "decodelab run: read reference: %s: ref_read_* and frac_ref left NaN\n", dl_last_error());
            ref.t[0] = ref.t[1] = ref.ref_s = NAN;
        } else {
            printf("read reference: page-table order %.2f us (%lld samples%s, %d-byte loads), contiguous %.2f us "
                   "(%lld samples%s, 16-byte loads) over %lld B of KV, %s, flush %s: ref_read %.2f us = %.1f GB/s\n",
                   1e6 * ref.t[0], (long long)ref.n[0], ref.converged[0] ? "" : ", not converged", ref.load_bytes,
                   1e6 * ref.t[1], (long long)ref.n[1], ref.converged[1] ? "" : ", not converged",
                   (long long)bytes.kv, o->hot_l2 ? "hot-l2" : "cold-l2", flush_name(o), 1e6 * ref.ref_s,
                   bytes.kv / ref.ref_s / 1e9);
        }
    }
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
        if (v->params_ok && !v->params_ok(v, &g->params, why, sizeof why)) {
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
        r->sm_clock_mhz_before = dl_bench_sm_clock_mhz(r->clock_source, sizeof r->clock_source);
        dl_clear_error();
        if (run_variant(o, g, v, bench, &d, &info, &peak, &ref, r, ho, hl)) {
            snprintf(r->verdict, sizeof r->verdict, "FAIL");
            snprintf(r->reason, sizeof r->reason, "error: %s", dl_last_error());
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
#endif /* DL_HAVE_CUDA */

/* ================================================================ run */

int dl_cmd_run_parse(int argc, char **argv)
{
    run_opts o;
    return parse_run(argc, argv, &o);
}

int dl_cmd_run(int argc, char **argv)
{
    run_opts o;
    int prc = parse_run(argc, argv, &o);
    if (prc == 1) return 0;
    if (prc) return dl_cli_error("run");
    const dl_variant **sel = calloc((size_t)dl_num_variants + 1, sizeof *sel);
    int nsel = 0;
    if (!sel) return dl_cli_error("run");
    if (dl_run_select(o.variants, sel, &nsel)) {
        free(sel);
        return dl_cli_error("run");
    }
    dl_golden g;
    memset(&g, 0, sizeof g);
    if (dl_golden_read(o.golden, &g)) {
        free(sel);
        return dl_cli_error("run");
    }
    char name[512];
    dl_config_name(&g.c.cfg, name, sizeof name);
    printf("golden: %s\ncase:   %s\n", o.golden, name);
    if (o.resume) {
        int before = nsel;
        if (dl_run_resume_filter(o.out, &g.c, o.splits, o.time ? timing_mode(&o) : "none",
                                 o.time ? flush_name(&o) : "none", sel, &nsel)) {
            dl_golden_free(&g);
            free(sel);
            return dl_cli_error("run");
        }
        printf("resume: %d of %d selected variants already have a row in %s: skipped\n", before - nsel, before, o.out);
        if (nsel == 0) {
            printf("resume: nothing left to run\n");
            dl_golden_free(&g);
            free(sel);
            return 0;
        }
    }

    dl_clear_error();
    int ndev = dl_gpu_device_count();
    if (ndev <= 0) {
        printf("no CUDA device (%s): GPU variants skipped\n", no_device_reason());
        printf("variants that would have run:\n");
        for (int i = 0; i < nsel; i++) {
            char reason[512] = "";
            int ok = sel[i]->supports(sel[i], &g.c.cfg, reason, sizeof reason);
            if (ok && sel[i]->params_ok) ok = sel[i]->params_ok(sel[i], &g.params, reason, sizeof reason);
            printf("  %-18s %s%s%s\n", sel[i]->name, ok ? "would run" : "would SKIP: ", ok ? "" : reason,
                   sel[i]->launch ? "" : " [kernel not built in this binary]");
        }
        dl_golden_free(&g);
        free(sel);
        return 0;
    }

    int rc = 0, any_fail = 0;
#if DL_HAVE_CUDA
    dl_result_row *rows = calloc((size_t)nsel, sizeof *rows);
    if (!rows) {
        dl_golden_free(&g);
        free(sel);
        return dl_cli_error("run");
    }
    for (int i = 0; i < nsel; i++) {
        dl_result_row_init(&rows[i]);
        dl_result_row_stamp(&rows[i]);
        dl_run_fill_config(&rows[i], o.golden, &g.c);
        fill_variant(&rows[i], sel[i]);
        snprintf(rows[i].generator, sizeof rows[i].generator, "%s", dl_generator_string());
        snprintf(rows[i].clock_source, sizeof rows[i].clock_source, "not read");
    }
    if (run_gpu(&o, &g, sel, nsel, rows, &any_fail)) {
        rc = dl_cli_error("run");
    } else {
        printf("\n");
        print_header(o.time);
        for (int i = 0; i < nsel; i++) print_row(&rows[i], o.time);
        if (o.time) {
            printf("timing: %s, flush %s; bytes = Q + K/V of the exact tokens (%lld B) + scales + page table + O + "
                   "LSE = %lld B; frac_ref = ref_read / median\n",
                   timing_mode(&o), flush_name(&o), (long long)rows[0].bytes_kv, (long long)rows[0].bytes_total);
        }
        if (o.out) {
            if (dl_results_append(o.out, rows, nsel)) rc = dl_cli_error("run");
            else {
                char csv[4200];
                dl_results_csv_path(o.out, csv, sizeof csv);
                printf("results: %d rows appended to %s and %s\n", nsel, o.out, csv);
            }
        }
    }
    free(rows);
#else
    rc = 2;
    fprintf(stderr, "decodelab run: %d CUDA devices reported, but this binary was built without CUDA\n", ndev);
#endif
    dl_golden_free(&g);
    free(sel);
    if (rc) return rc;
    return any_fail ? 1 : 0;
}

/* ================================================================ list */

int dl_cmd_list(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: decodelab list\n\nPrints the variant registry: name, axes (compute, dequant, unit), the golden\n"
                   "model each must match, its kernel file, its implementation limits (relative L2 of o over the whole\n"
                   "output / per (request, head), max abs error of lse: PASS at or under every one) and a summary.\n");
            return 0;
        }
        dl_fail("unknown argument '%s' (see decodelab list --help)", argv[i]);
        return dl_cli_error("list");
    }
    printf("%-18s %-7s %-7s %-6s %-6s %-22s %-19s %-19s %s\n", "variant", "compute", "dequant", "unit", "model",
           "kernel file", "o relL2 limit/head", "lse abs limit", "summary");
    for (int i = 0; i < dl_num_variants; i++) {
        const dl_variant *v = &dl_variants[i];
        const dl_threshold *t = dl_threshold_impl(v->model);
        char thr_o[32] = "-", thr_l[32] = "-";
        if (t) {
            snprintf(thr_o, sizeof thr_o, "%.2g/%.2g", t->o_rel_l2, t->o_head_rel_l2);
            snprintf(thr_l, sizeof thr_l, "%.2g", t->lse_abs);
        }
        printf("%-18s %-7s %-7s %-6s %-6s %-22s %-19s %-19s %s%s\n", v->name, dl_compute_name(v->compute),
               dl_dequant_name(v->dequant), dl_unit_name(v->unit), dl_model_name(v->model), v->file ? v->file : "-",
               thr_o, thr_l, v->summary ? v->summary : "", v->launch ? "" : " [not built]");
    }
    return 0;
}

/* ================================================================ info */

int dl_cmd_info(int argc, char **argv)
{
    int runs = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: decodelab info [--peak-runs N]\n\nPrints the CUDA device (name, SMs, L2, memory, clocks,\n"
                   "driver and runtime versions) and its peak read bandwidth measured here: a streaming read\n"
                   "of a buffer much larger than L2 with 16-byte loads, L2 flushed before each run, median of N\n"
                   "runs (default 20). Without a CUDA device it says so and exits 0.\n");
            return 0;
        } else if (!strcmp(argv[i], "--peak-runs") && i + 1 < argc) {
            int64_t v;
            if (dl_parse_i64("--peak-runs", argv[++i], 1, 10000, &v)) return dl_cli_error("info");
            runs = (int)v;
        } else {
            dl_fail("unknown argument '%s' (see decodelab info --help)", argv[i]);
            return dl_cli_error("info");
        }
    }
    dl_clear_error();
    int ndev = dl_gpu_device_count();
    if (ndev <= 0) {
        printf("no CUDA device (%s)\n", no_device_reason());
        return 0;
    }
#if DL_HAVE_CUDA
    dl_device_info info;
    if (dl_bench_device_info(&info)) return dl_cli_error("info");
    char drv[16], rt[16], why[160];
    version_string(info.driver_version, drv, sizeof drv);
    version_string(info.runtime_version, rt, sizeof rt);
    printf("devices:            %d (using ordinal %d)\n", ndev, info.device);
    printf("name:               %s (compute capability %d.%d, PCI %s)\n", info.name, info.cc_major, info.cc_minor,
           info.pci_bus_id);
    printf("SMs:                %d\n", info.sm_count);
    printf("L2:                 %.1f MiB (%lld bytes)\n", info.l2_bytes / 1048576.0, (long long)info.l2_bytes);
    printf("memory:             %.1f GiB total, %.1f GiB free\n", info.total_mem / 1073741824.0,
           info.free_mem / 1073741824.0);
    printf("SM clock (max):     %d MHz (static attribute)\n", info.sm_clock_khz_max / 1000);
    int sm = dl_bench_sm_clock_mhz(why, sizeof why);
    if (sm >= 0) printf("SM clock (now):     %d MHz (NVML)\n", sm);
    else printf("SM clock (now):     unknown (%s)\n", why);
    int mem = dl_bench_mem_clock_mhz(why, sizeof why);
    printf("memory clock (max): %d MHz, bus %d bits: datasheet-style %.0f GB/s\n", info.mem_clock_khz_max / 1000,
           info.mem_bus_bits, info.theoretical_gbps);
    if (mem >= 0) printf("memory clock (now): %d MHz (NVML)\n", mem);
    printf("driver / runtime:   %s / %s\n", drv, rt);
    dl_bench *b = NULL;
    dl_peak_read pk;
    if (dl_bench_create(&b) || dl_bench_peak_read(b, 0, runs, &pk)) {
        dl_bench_destroy(b);
        return dl_cli_error("info");
    }
    printf("L2 flush buffer:    %.1f MiB (2x L2)\n", dl_bench_flush_bytes(b) / 1048576.0);
    printf("peak read (measured): %.1f GB/s median, %.1f best, %.1f worst (%d runs over %.2f GiB, 16-byte loads, L2 "
           "flushed)\n",
           pk.gbps, pk.gbps_best, pk.bytes / pk.max_s / 1e9, pk.runs, pk.bytes / 1073741824.0);
    dl_bench_destroy(b);
    return 0;
#else
    (void)runs;
    printf("%d CUDA devices reported, but this binary was built without CUDA\n", ndev);
    return 0;
#endif
}

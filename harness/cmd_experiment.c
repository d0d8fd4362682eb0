/* cmd_experiment.c - `decodelab experiment FILE`: run one declarative
 * experiment (harness/experiment.c loads it) step by step and write its report.
 *
 * Steps, in order, each skipped when its record already exists (so an
 * interrupted run continues with --resume and nothing completed is redone):
 *   golden  per sweep point: `decodelab golden` into the cache, named by the
 *           content hash of its flags (an existing file is reused; a missing one is
 *           made with --force, so that a run sharing the cache may fill it meanwhile);
 *   ref     per point: every CPU model of the golden file scored against exact,
 *           appended as results rows named ref-<model> (record: those rows);
 *   census  once: the SASS census of the binary into census.csv (record: its rows);
 *   run     per point and variant (GPU only): `decodelab run --out results.h5`
 *           (record: the row of that golden file and variant);
 *   ncu     per point and variant (GPU only, measure.ncu): `decodelab ncu`.
 * Then every hypothesis is judged on the rows (HOLDS / REJECTED / INCONCLUSIVE)
 * and OUT/report.md and OUT/verdicts.csv are written. OUT/run.cfg records the
 * experiment and sweep a run directory holds; --resume continues only those.
 *
 * Sharded sweeps (issue 13): --shard K/N runs only the points i with i mod N = K
 * (K from 0, as SLURM_ARRAY_TASK_ID; the census belongs to shard 0), records
 * them in OUT/shard.cfg, and writes no report; --merge DIR... checks that the
 * shards are the N disjoint slices of this sweep, complete, with no row twice
 * and none missing, puts their rows in the order a one-piece run writes them,
 * and judges and reports exactly as a one-piece run. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <getopt.h>
#include <libconfig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../gpu/dl_plan.h"
#include "../gpu/dl_registry.h"
#include "cli_util.h"
#include "dl_census.h"
#include "dl_cli.h"
#include "dl_compare.h"
#include "dl_experiment.h"
#include "dl_golden.h"
#include "dl_proc.h"
#include "dl_results.h"
#include "dl_run.h"

static void xp_help(FILE *f)
{
    fprintf(f,
            "usage: decodelab experiment FILE.cfg [--out DIR] [--cache DIR] [--resume] [--reduced|--full]\n"
            "                            [--binary PATH] [--stop-after N] [--shard K/N]\n"
            "       decodelab experiment FILE.cfg --merge DIR [DIR...] [--out DIR]\n\n"
            "Runs one experiment file (experiments/README.md): generates or reuses the golden file of\n"
            "every sweep point (cache named by the content hash of its config), scores the CPU models\n"
            "against exact (rows ref-<model>), takes the SASS census, runs every variant on a GPU\n"
            "(check + timing), and judges each hypothesis: HOLDS, REJECTED or INCONCLUSIVE (with the\n"
            "reason). Writes DIR/results.h5 (+ .csv), DIR/census.csv, DIR/report.md, DIR/verdicts.csv.\n\n"
            "  --out DIR       output directory (default results/<name>)\n"
            "  --cache DIR     golden file cache (default build/golden-cache)\n"
            "  --resume        continue an interrupted run: steps with a record in DIR are skipped (DIR must\n"
            "                  hold this experiment with this sweep and cache: DIR/run.cfg)\n"
            "  --reduced       use the file's `reduced` sweep overrides (default when there is no GPU)\n"
            "  --full          use the full sweep even without a GPU\n"
            "  --binary PATH   the decodelab to run steps with (default: this one)\n"
            "  --stop-after N  stop after N steps were run (to test --resume); exit status 3\n"
            "  --shard K/N     run only shard K of N (K = 0..N-1, as SLURM_ARRAY_TASK_ID): the sweep points i\n"
            "                  with i mod N = K, golden files included; the census is shard 0's. Writes rows\n"
            "                  and DIR/shard.cfg, no report (default DIR results/<name>/shard-K-of-N)\n"
            "  --merge DIR...  combine the N shard directories of this experiment into --out (default\n"
            "                  results/<name>): refuses a shard missing, given twice or unfinished, a point\n"
            "                  or row missing or present twice (naming them), then judges and reports as a\n"
            "                  one-piece run (experiments/README.md, \"Sharded sweeps\"); takes no other flag\n"
            "                  but --out\n\n"
            "Progress goes to stderr: a live line with an ETA on a terminal, one line per step otherwise.\n"
            "exit status: 0 done (whatever the verdicts), 2 bad file/usage or a step that could not run,\n"
            "3 stopped by --stop-after.\n");
}

#define XP_MAX_MERGE 4096

typedef struct {
    const char *file, *out, *cache, *binary;
    int resume, reduced, full;
    long stop_after;
    int shard_k, shard_n;  /* --shard K/N; shard_n = 0: not sharded */
    int nmerge;            /* --merge DIR... */
    const char *merge[XP_MAX_MERGE];
} xp_opts;

/* --shard K/N: two decimal integers, N in 1..DL_XP_MAX_POINTS, K in 0..N-1. */
static int parse_shard(const char *v, int *k, int *n)
{
    const char *slash = strchr(v, '/');
    char *e1 = NULL, *e2 = NULL;
    int ok = slash && slash != v && slash[1] && strspn(v, "0123456789") == (size_t)(slash - v) &&
             strspn(slash + 1, "0123456789") == strlen(slash + 1) && (slash - v) <= 6 && strlen(slash + 1) <= 6;
    long kk = ok ? strtol(v, &e1, 10) : -1, nn = ok ? strtol(slash + 1, &e2, 10) : -1;
    if (!ok) return dl_fail("--shard: '%s' is not K/N (shard K of N, e.g. 0/4)", v);
    if (nn < 1 || nn > DL_XP_MAX_POINTS)
        return dl_fail("--shard: '%s': N = %ld must be in 1..%d", v, nn, DL_XP_MAX_POINTS);
    if (kk >= nn)
        return dl_fail("--shard: '%s': K = %ld must be in 0..%ld (shards are numbered from 0, as SLURM_ARRAY_TASK_ID)",
                       v, kk, nn - 1);
    *k = (int)kk;
    *n = (int)nn;
    return 0;
}

enum { O_HELP = 'h', O_RESUME = 256, O_REDUCED, O_FULL, O_OUT, O_CACHE, O_BINARY, O_STOP, O_SHARD, O_MERGE };

static const struct option xp_long_opts[] = {
    {"help", no_argument, 0, O_HELP},
    {"resume", no_argument, 0, O_RESUME},
    {"reduced", no_argument, 0, O_REDUCED},
    {"full", no_argument, 0, O_FULL},
    {"out", required_argument, 0, O_OUT},
    {"cache", required_argument, 0, O_CACHE},
    {"binary", required_argument, 0, O_BINARY},
    {"stop-after", required_argument, 0, O_STOP},
    {"shard", required_argument, 0, O_SHARD},
    {"merge", no_argument, 0, O_MERGE}, /* takes the arguments after it up to the next flag */
    {0, 0, 0, 0},
};

/* --merge DIR...: the arguments from argv[optind] up to the next flag (getopt_long moves the
 * arguments it skips over, as it does an option's value). */
static int parse_merge(int argc, char **argv, xp_opts *o)
{
    if (o->nmerge) return dl_fail("--merge: given twice (list every shard directory after one --merge)");
    while (optind < argc && argv[optind][0] != '-') {
        if (o->nmerge == XP_MAX_MERGE) return dl_fail("--merge: more than %d directories", XP_MAX_MERGE);
        if (!argv[optind][0]) return dl_fail("--merge: '' is not a directory");
        o->merge[o->nmerge++] = argv[optind++];
    }
    if (!o->nmerge) return dl_fail("--merge: no directory given (the shard directories to combine)");
    return 0;
}

static int parse(int argc, char **argv, xp_opts *o)
{
    int64_t v;
    memset(o, 0, sizeof *o);
    o->stop_after = -1;
    opterr = 0;
    optind = 0;
    for (int code, li = -1; (code = getopt_long(argc, argv, ":h", xp_long_opts, &li)) != -1;) {
        if (code >= O_OUT && code <= O_BINARY && !optarg[0]) return dl_fail("--%s: '' is empty", xp_long_opts[li].name);
        switch (code) {
        case O_HELP: xp_help(stdout); return 1;
        case O_RESUME: o->resume = 1; break;
        case O_REDUCED: o->reduced = 1; break;
        case O_FULL: o->full = 1; break;
        case O_OUT: o->out = optarg; break;
        case O_CACHE: o->cache = optarg; break;
        case O_BINARY: o->binary = optarg; break;
        case O_STOP:
            DL_TRY(dl_parse_i64("--stop-after", optarg, 0, 1000000, &v));
            o->stop_after = (long)v;
            break;
        case O_SHARD:
            if (o->shard_n) return dl_fail("--shard: given twice");
            DL_TRY(parse_shard(optarg, &o->shard_k, &o->shard_n));
            break;
        case O_MERGE: DL_TRY(parse_merge(argc, argv, o)); break;
        default: return dl_cli_getopt_fail("experiment", code, argv);
        }
    }
    for (; optind < argc; optind++) DL_TRY(dl_cli_file_arg("experiment", "experiment file", argv[optind], &o->file));
    if (!o->file && o->nmerge) { /* --merge takes every word after it: a FILE.cfg given last became a shard folder */
        const char *last = o->merge[o->nmerge - 1];
        const size_t l = strlen(last);
        if (l > 4 && !strcmp(last + l - 4, ".cfg"))
            return dl_fail("missing FILE.cfg: '%s', after --merge, was taken as a shard directory (give FILE.cfg "
                           "first: decodelab experiment FILE.cfg --merge DIR...)", last);
    }
    if (!o->file) return dl_fail("missing FILE.cfg (see decodelab experiment --help)");
    if (o->reduced && o->full) return dl_fail("--reduced and --full: choose one");
    if (o->nmerge && (o->shard_n || o->resume || o->reduced || o->full || o->cache || o->binary || o->stop_after >= 0))
        return dl_fail("--merge: takes only --out (the shards fix the sweep, the cache and the binary)");
    return 0;
}

/* One process at a time in an output directory: an exclusive, non-blocking flock on DIR/.lock, held until the
 * process ends (close-on-exec: the steps' own processes neither hold nor need it; they lock the directory itself
 * for each append). A second run into DIR is refused, not interleaved with the first. *fd: the lock's descriptor. */
static int lock_out_dir(const char *dir, int *fd)
{
    char p[1300];
    snprintf(p, sizeof p, "%s/.lock", dir);
    *fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (*fd < 0) return dl_fail("cannot open %s: %s", p, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) == 0) return 0;
    const int e = errno;
    close(*fd);
    *fd = -1;
    if (e == EWOULDBLOCK)
        return dl_fail("%s is in use by another decodelab experiment (it holds %s): wait for it to end, or --out "
                       "another directory", dir, p);
    return dl_fail("cannot lock %s: %s", p, strerror(e));
}

static int mkdirs(const char *path)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return dl_fail("cannot create directory %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return dl_fail("cannot create directory %s: %s", buf, strerror(errno));
    return 0;
}

/* ---------------------------------------------------------------- progress */

typedef struct {
    int tty, total, index;
    double t0, spent; /* seconds spent on steps run in this process */
    int run;          /* steps run in this process */
} progress;

static void fmt_dur(double s, char *buf, size_t n)
{
    if (!(s >= 0) || s > 1e7) snprintf(buf, n, "?");
    else if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

static void progress_step(progress *p, const char *what, int skipped)
{
    p->index++;
    char el[32], eta[32];
    fmt_dur(dl_now() - p->t0, el, sizeof el);
    int left = p->total - p->index + 1;
    fmt_dur(p->run ? p->spent / p->run * left : -1, eta, sizeof eta);
    if (p->tty)
        fprintf(stderr, "\r\033[K[%d/%d] %s%s  elapsed %s  ETA %s", p->index, p->total, skipped ? "done before: " : "",
                what, el, p->run ? eta : "?");
    else
        fprintf(stderr, "[%d/%d] %s%s\n", p->index, p->total, skipped ? "done before: " : "", what);
    fflush(stderr);
}

static void progress_end(progress *p)
{
    if (p->tty) fprintf(stderr, "\n");
}

/* ---------------------------------------------------------------- steps */

typedef struct {
    const dl_experiment *x;
    const xp_opts *o;
    char dir[1100], results[1200], census[1200], log[1200], bin[1024];
    dl_result_row *rows;
    int64_t nrows;
    dl_census_row *crows;
    int64_t ncrows;
    int gpu;
    char no_gpu[512];
    char census_note[512], ncu_note[512];
} xp_run;

static int reload(xp_run *r)
{
    free(r->rows);
    free(r->crows);
    r->rows = NULL;
    r->crows = NULL;
    r->nrows = r->ncrows = 0;
    if (dl_file_size(r->results) >= 0) DL_TRY(dl_results_read(r->results, &r->rows, &r->nrows));
    if (dl_file_size(r->census) >= 0) DL_TRY(dl_census_read(r->census, &r->crows, &r->ncrows));
    return 0;
}

static int have_row(const xp_run *r, const char *golden, const char *variant)
{
    for (int64_t i = 0; i < r->nrows; i++)
        if (!strcmp(r->rows[i].golden_path, golden) && !strcmp(r->rows[i].variant, variant)) return 1;
    return 0;
}

static int have_census(const xp_run *r, const char *source, const char *golden, const char *variant)
{
    for (int64_t i = 0; i < r->ncrows; i++) {
        const dl_census_row *c = &r->crows[i];
        if (strcmp(c->source, source)) continue;
        if (!strcmp(source, "sass")) return 1;
        if (!strcmp(c->golden_path, golden) && !strcmp(c->variant, variant)) return 1;
    }
    return 0;
}

/* Run the binary with args, output appended to the log. */
static int run_child(xp_run *r, const char *const *args, int *status)
{
    int fd = open(r->log, O_WRONLY | O_CREAT | O_APPEND, 0666);
    if (fd < 0) return dl_fail("cannot open %s: %s", r->log, strerror(errno));
    char line[4096] = "$";
    for (int i = 0; args[i]; i++) {
        strncat(line, " ", sizeof line - strlen(line) - 1);
        strncat(line, args[i], sizeof line - strlen(line) - 1);
    }
    strncat(line, "\n", sizeof line - strlen(line) - 1);
    ssize_t w = write(fd, line, strlen(line));
    (void)w;
    int rc = dl_proc_run(args, -1, fd, fd, NULL, status);
    close(fd);
    return rc;
}

/* Why a step failed, for its error message: "exited with status N" or "was killed by signal N", then the
 * last line of the step log that is a decodelab error ("decodelab ...: ..."), cut to fit, if any. */
static const char *step_failure(const xp_run *r, int status, char *buf, size_t n)
{
    char last[600] = "";
    FILE *f = fopen(r->log, "r");
    if (f) {
        char line[4096];
        if (fseek(f, -65536, SEEK_END) != 0) rewind(f); /* a short log: from its start */
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "decodelab ", 10) && strchr(line, ':')) {
                line[strcspn(line, "\n")] = 0;
                snprintf(last, sizeof last, "%.*s%s", 400, line, strlen(line) > 400 ? " ..." : "");
            }
        fclose(f);
    }
    if (status > 128) snprintf(buf, n, "was killed by signal %d", status - 128);
    else snprintf(buf, n, "exited with status %d", status);
    if (last[0]) snprintf(buf + strlen(buf), n - strlen(buf), ": %s", last);
    return buf;
}

static int step_golden(xp_run *r, const dl_xp_point *p)
{
    const char *args[2 * DL_XP_MAX_FIELDS + 12];
    int n = 0;
    args[n++] = r->bin;
    for (int i = 0; i < p->argc; i++) args[n++] = p->argv[i];
    /* a miss that another run on the same cache fills meanwhile is no failure: golden writes a temporary
     * file and renames it over, and the content of a cache file is fixed by its name */
    args[n++] = "--force";
    args[n] = NULL;
    int st;
    DL_TRY(run_child(r, args, &st));
    char why[1024];
    if (st != 0) return dl_fail("golden for %s %s (see %s)", p->label, step_failure(r, st, why, sizeof why), r->log);
    return 0;
}

/* Rows ref-<model>: each CPU model of the golden file against exact. */
static int step_ref(xp_run *r, const dl_xp_point *p)
{
    dl_golden g;
    memset(&g, 0, sizeof g);
    DL_TRY(dl_golden_read(p->golden, &g));
    int rc = 0;
    if (!g.have[DL_MODEL_EXACT]) rc = dl_fail("%s has no /golden/exact", p->golden);
    dl_result_row *rows = rc ? NULL : calloc(DL_MODEL_COUNT, sizeof *rows);
    if (!rc && !rows) rc = dl_fail("out of memory");
    int n = 0;
    const int64_t no = g.c.cfg.batch_size * g.c.cfg.num_qo_heads * g.c.cfg.head_dim;
    const int64_t nl = g.c.cfg.batch_size * g.c.cfg.num_qo_heads;
    for (int m = 0; !rc && m < DL_MODEL_COUNT; m++) {
        if (m == DL_MODEL_EXACT || !g.have[m]) continue;
        dl_result_row *w = &rows[n++];
        dl_result_row_init(w);
        dl_result_row_stamp(w);
        dl_run_fill_config(w, p->golden, &g.c, dl_golden_inputs_hash(&g));
        dl_run_fill_params(w, &g.params);
        if (g.out[m].p_values > 0) w->p_underflow_frac = (double)g.out[m].p_zeros / (double)g.out[m].p_values;
        w->p_underflow_pred = dl_p_underflow_predicted(&g.c.cfg, &g.params, (dl_model)m);
        w->p_cast_nmse = g.out[m].p_cast_nmse;
        snprintf(w->variant, sizeof w->variant, "ref-%s", dl_model_name((dl_model)m));
        snprintf(w->compute, sizeof w->compute, "%s", dl_model_name((dl_model)m));
        snprintf(w->dequant, sizeof w->dequant, "-");
        snprintf(w->unit, sizeof w->unit, "cpu");
        snprintf(w->model, sizeof w->model, "%s", dl_model_name((dl_model)m));
        snprintf(w->kernel_file, sizeof w->kernel_file, "ref/dl_ref.c");
        dl_scores sc;
        dl_score_f64(g.out[m].o, g.out[m].lse, &g.out[DL_MODEL_EXACT], &sc);
        (void)no;
        (void)nl;
        dl_run_put_metrics(&w->exact_o, &sc.o);
        dl_run_put_metrics(&w->exact_lse, &sc.lse);
        const dl_threshold *t = dl_threshold_vs_exact((dl_model)m, g.c.cfg.kv_dtype);
        if (t) {
            w->band_o_rel_l2 = t->o_rel_l2;
            w->band_lse_abs = t->lse_abs;
        }
        /* a CPU model is not an implementation: no implementation verdict; its precision is a figure */
        snprintf(w->verdict_model, sizeof w->verdict_model, "-");
        snprintf(w->verdict_exact, sizeof w->verdict_exact, "%s", t ? dl_band_name(dl_within_band(&sc, t)) : "-");
        snprintf(w->verdict, sizeof w->verdict, "-");
        snprintf(w->reason, sizeof w->reason, "CPU reference model vs exact (storage error for orig)");
        snprintf(w->generator, sizeof w->generator, "%s", dl_generator_string());
        snprintf(w->device_name, sizeof w->device_name, "cpu");
        snprintf(w->clock_source, sizeof w->clock_source, "cpu model");
    }
    if (!rc && n > 0) rc = dl_results_append(r->results, rows, n);
    free(rows);
    dl_golden_free(&g);
    return rc;
}

static int step_census(xp_run *r)
{
    dl_census c;
    memset(&c, 0, sizeof c);
    if (dl_census_disassemble(r->bin, &c)) {
        snprintf(r->census_note, sizeof r->census_note, "census not taken: %.480s", dl_last_error());
        dl_census_free(&c);
        return 0;
    }
    dl_census_row *rows = NULL;
    int64_t n = 0;
    int rc = dl_census_rows(&c, &rows, &n);
    if (!rc && n == 0) snprintf(r->census_note, sizeof r->census_note, "census: %.400s holds no GPU kernels", r->bin);
    if (!rc && n > 0) rc = dl_census_append(r->census, rows, n);
    free(rows);
    dl_census_free(&c);
    return rc;
}

static int step_run(xp_run *r, const dl_xp_point *p, const char *variant)
{
    char mt[32];
    snprintf(mt, sizeof mt, "%g", r->x->max_time_s);
    const char *args[16];
    int n = 0;
    args[n++] = r->bin;
    args[n++] = "run";
    args[n++] = p->golden;
    args[n++] = "--variants";
    args[n++] = variant;
    if (r->x->time) {
        args[n++] = "--time";
        args[n++] = "--max-time-s";
        args[n++] = mt;
    }
    if (r->x->hot_l2) args[n++] = "--hot-l2";
    args[n++] = "--out";
    args[n++] = r->results;
    args[n] = NULL;
    int st;
    DL_TRY(run_child(r, args, &st));
    char why[1024];
    if (st != 0 && st != 1)
        return dl_fail("run %s on %s %s (see %s)", variant, p->label, step_failure(r, st, why, sizeof why), r->log);
    return 0;
}

static int step_ncu(xp_run *r, const dl_xp_point *p, const char *variant)
{
    const char *args[] = {r->bin, "ncu", p->golden, "--variants", variant, "--out", r->census, NULL};
    int st;
    DL_TRY(run_child(r, args, &st));
    if (st == 2) snprintf(r->ncu_note, sizeof r->ncu_note, "ncu could not run (status 2: ncu not found?), see %.300s", r->log);
    else if (st != 0) snprintf(r->ncu_note, sizeof r->ncu_note, "ncu failed on %.60s %.200s (status %d), see %.200s", variant, p->label, st, r->log);
    return 0;
}

/* ---------------------------------------------------------------- report */

static void md_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", f);
        else if (*s == '\n') fputc(' ', f);
        else fputc(*s, f);
    }
}

static void describe_sel(FILE *f, const dl_xp_sel *s)
{
    fprintf(f, "`%s`", s->variant);
    if (s->metric[0]) fprintf(f, " (`%s`)", s->metric);
    for (int t = 0; t < s->nterms; t++) {
        fprintf(f, " %s=", s->terms[t].key);
        for (int v = 0; v < s->terms[t].nvals; v++) fprintf(f, "%s%s", v ? "/" : "", s->terms[t].vals[v]);
    }
}

static void describe_rule(FILE *f, const dl_xp_hyp *h)
{
    const char *kind = h->kind == DL_XP_RATIO ? "ratio" : h->kind == DL_XP_VALUE ? "value" : "census";
    fprintf(f, "Rule: %s of `%s`%s%s: ", kind, h->metric, h->kind == DL_XP_CENSUS ? " from " : "",
            h->kind == DL_XP_CENSUS ? h->source : "");
    describe_sel(f, &h->num);
    if (h->den.present) {
        fprintf(f, " over ");
        describe_sel(f, &h->den);
    }
    if (h->nwhere) {
        fprintf(f, ", where");
        for (int t = 0; t < h->nwhere; t++) {
            fprintf(f, " %s=", h->where[t].key);
            for (int v = 0; v < h->where[t].nvals; v++) fprintf(f, "%s%s", v ? "/" : "", h->where[t].vals[v]);
        }
    }
    fprintf(f, "; must lie in [%g, %g] for every observation (noise margin %g x stdrel).\n", h->lo, h->hi, h->noise_k);
}

static int write_report(xp_run *r, const dl_xp_point *pts, int npts, int reduced, dl_xp_result *res)
{
    const dl_experiment *x = r->x;
    char path[1300], tmp[1400];
    snprintf(path, sizeof path, "%s/report.md", r->dir);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return dl_fail("cannot create %s: %s", tmp, strerror(errno));
    char date[32];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    const char *device = "none (CPU models only)";
    for (int64_t i = 0; i < r->nrows; i++)
        if (strcmp(r->rows[i].unit, "cpu") && r->rows[i].device_name[0]) device = r->rows[i].device_name;
    fprintf(f, "# %s\n\n**Question.** %s\n\n", x->name, x->question);
    fprintf(f, "Experiment file `%s`; written %s by %s; device: %s; sweep: %s, %d points", x->path, date,
            dl_generator_string(), device, reduced ? "reduced (no GPU or --reduced)" : "full", npts);
    if (x->nvariants) {
        fprintf(f, "; variants:");
        for (int i = 0; i < x->nvariants; i++) fprintf(f, " `%s`", x->variants[i]);
    }
    fprintf(f, ". Rows: `results.csv` (%lld), census: `census.csv` (%lld).\n\n", (long long)r->nrows, (long long)r->ncrows);
    /* rows of more than one build or card (a shard rerun after a rebuild, shards on two kinds of GPU, a --resume
     * with another binary) all feed the verdicts below: say so, with each one's count */
    for (int col = 0; col < 2; col++) {
        enum { kMax = 8 };
        const char *val[kMax];
        int64_t cnt[kMax];
        int nv = 0, more = 0;
        for (int64_t i = 0; i < r->nrows; i++) {
            const char *v = col == 0 ? r->rows[i].generator : r->rows[i].device_name;
            if (col == 1 && (!strcmp(r->rows[i].unit, "cpu") || !v[0])) continue; /* CPU rows have no card */
            int k = 0;
            while (k < nv && strcmp(val[k], v)) k++;
            if (k == nv && nv == kMax) more = 1;
            else if (k == nv) val[nv] = v, cnt[nv++] = 1;
            else cnt[k]++;
        }
        if (nv < 2) continue;
        fprintf(f, "**The rows come from %d %s%s:**", nv + more, col == 0 ? "builds" : "devices", more ? " or more" : "");
        for (int k = 0; k < nv; k++) fprintf(f, "%s `%s` (%lld rows)", k ? "," : "", val[k], (long long)cnt[k]);
        fprintf(f, "; the verdicts below mix them.\n\n");
    }
    if (!r->gpu) fprintf(f, "GPU steps not run: %s.\n\n", r->no_gpu);
    if (r->census_note[0]) fprintf(f, "Census: %s.\n\n", r->census_note);
    if (r->ncu_note[0]) fprintf(f, "Nsight Compute: %s.\n\n", r->ncu_note);
    fprintf(f, "| # | hypothesis | verdict | deciding numbers |\n|---|---|---|---|\n");
    for (int h = 0; h < x->nhyp; h++) {
        fprintf(f, "| H%d | ", h + 1);
        md_escape(f, x->hyp[h].claim);
        fprintf(f, " | **%s** | ", dl_xp_verdict_name(res[h].verdict));
        md_escape(f, res[h].reason);
        fprintf(f, " |\n");
    }
    for (int h = 0; h < x->nhyp; h++) {
        const dl_xp_hyp *hy = &x->hyp[h];
        fprintf(f, "\n## H%d: %s\n\n", h + 1, dl_xp_verdict_name(res[h].verdict));
        fprintf(f, "%s\n\n", hy->claim);
        describe_rule(f, hy);
        fprintf(f, "\n%s.\n\n", res[h].reason);
        if (res[h].nobs) {
            fprintf(f, "| observation | numerator | denominator | value | noise (stdrel) | in interval |\n|---|---|---|---|---|---|\n");
            int shown = 0;
            for (int i = 0; i < res[h].nobs && shown < 60; i++, shown++) {
                const dl_xp_obs *o = &res[h].obs[i];
                fprintf(f, "| ");
                md_escape(f, o->what);
                fprintf(f, " | %.6g | %.6g | %.6g | %.2g%%%s | %s |\n", o->num, o->den, o->value, 100 * o->noise,
                        o->unconverged ? " **timing not converged**" : "",
                        o->status == 0 ? "yes" : o->status == 1 ? "**no**" : "within noise");
            }
            if (res[h].nobs > shown) fprintf(f, "\n(%d more in the rows)\n", res[h].nobs - shown);
        }
    }
    fprintf(f, "\n## Sweep points\n\n| hash | point |\n|---|---|\n");
    for (int i = 0; i < npts; i++) fprintf(f, "| `%s` | %s |\n", pts[i].hash, pts[i].label);
    int bad = ferror(f) != 0;
    if (fclose(f) != 0) bad = 1;
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return dl_fail("writing %s failed", path);
    }
    /* verdicts.csv */
    snprintf(path, sizeof path, "%s/verdicts.csv", r->dir);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "w");
    if (!f) return dl_fail("cannot create %s: %s", tmp, strerror(errno));
    fprintf(f, "experiment,hypothesis,claim,verdict,reason,n_obs,n_in,n_out,n_unclear,n_missing,value_min,value_max,lo,hi,"
               "reduced,date_utc\n");
    for (int h = 0; h < x->nhyp; h++) {
        fprintf(f, "%s,H%d,\"", x->name, h + 1);
        for (const char *c = x->hyp[h].claim; *c; c++) fprintf(f, *c == '"' ? "\"\"" : "%c", *c);
        fprintf(f, "\",%s,\"", dl_xp_verdict_name(res[h].verdict));
        for (const char *c = res[h].reason; *c; c++) fprintf(f, *c == '"' ? "\"\"" : "%c", *c);
        fprintf(f, "\",%d,%d,%d,%d,%d,%.17g,%.17g,%.17g,%.17g,%d,%s\n", res[h].nobs, res[h].nin, res[h].nout,
                res[h].nunclear, res[h].nmissing, res[h].nobs ? res[h].vmin : NAN, res[h].nobs ? res[h].vmax : NAN,
                x->hyp[h].lo, x->hyp[h].hi, reduced, date);
    }
    bad = ferror(f) != 0;
    if (fclose(f) != 0) bad = 1;
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return dl_fail("writing %s failed", path);
    }
    return 0;
}

/* Does a rule need rows only a GPU run makes? */
static int needs_gpu(const dl_xp_hyp *h)
{
    if (h->kind == DL_XP_CENSUS) return !strcmp(h->source, "ncu");
    return strncmp(h->num.variant, "ref-", 4) || (h->den.present && strncmp(h->den.variant, "ref-", 4));
}

/* Judge every hypothesis on r's rows and write report.md and verdicts.csv. */
static int judge_and_report(xp_run *r, const dl_xp_point *pts, int npts, int reduced)
{
    const dl_experiment *x = r->x;
    int rc = 0;
    dl_xp_result res[DL_XP_MAX_HYP];
    memset(res, 0, sizeof res);
    for (int h = 0; h < x->nhyp && !rc; h++)
        if (dl_xp_evaluate(x, h, pts, npts, r->rows, r->nrows, r->crows, r->ncrows, &res[h])) rc = -1;
        else if (res[h].nobs == 0 && x->hyp[h].kind == DL_XP_CENSUS && !strcmp(x->hyp[h].source, "sass") &&
                 r->census_note[0]) {
            snprintf(res[h].reason, sizeof res[h].reason, "no data: %.700s", r->census_note);
        } else if (!r->gpu && res[h].nobs == 0 && needs_gpu(&x->hyp[h])) {
            char was[sizeof res[h].reason];
            snprintf(was, sizeof was, "%s", res[h].reason);
            snprintf(res[h].reason, sizeof res[h].reason, "needs GPU rows, and this machine has %.200s; %.400s", r->no_gpu, was);
        }
    if (!rc && write_report(r, pts, npts, reduced, res)) rc = -1;
    if (!rc) {
        printf("\n%-4s %-13s %s\n", "", "verdict", "hypothesis / deciding numbers");
        for (int h = 0; h < x->nhyp; h++)
            printf("H%-3d %-13s %s\n%-18s %s\n", h + 1, dl_xp_verdict_name(res[h].verdict), x->hyp[h].claim, "",
                   res[h].reason);
        printf("\nreport: %s/report.md, verdicts: %s/verdicts.csv, rows: %s/results.csv\n", r->dir, r->dir, r->dir);
    }
    for (int h = 0; h < x->nhyp; h++) dl_xp_result_free(&res[h]);
    return rc;
}

/* ---------------------------------------------------------------- shard manifest */

/* DIR/shard.cfg (libconfig): which shard of which sweep a directory holds, and how it ended; DIR/run.cfg
 * (run = 1, as shard 0/1): the same record of a one-piece run. */
typedef struct {
    char path[1300];
    char experiment[128], cache[1100], no_gpu[512], census_note[512], ncu_note[512];
    int run, k, n, reduced, gpu, complete;
    int npoints;
    char (*hashes)[24];
} xp_manifest;

static void manifest_free(xp_manifest *m)
{
    free(m->hashes);
    m->hashes = NULL;
}

static int cfg_str(config_setting_t *root, const char *name, const char *v)
{
    config_setting_t *s = config_setting_add(root, name, CONFIG_TYPE_STRING);
    return s && config_setting_set_string(s, v) == CONFIG_TRUE ? 0 : -1;
}

static int cfg_int(config_setting_t *root, const char *name, int v)
{
    config_setting_t *s = config_setting_add(root, name, CONFIG_TYPE_INT);
    return s && config_setting_set_int(s, v) == CONFIG_TRUE ? 0 : -1;
}

static int cfg_bool(config_setting_t *root, const char *name, int v)
{
    config_setting_t *s = config_setting_add(root, name, CONFIG_TYPE_BOOL);
    return s && config_setting_set_bool(s, v) == CONFIG_TRUE ? 0 : -1;
}

/* Write a libconfig file atomically (temporary + rename). */
static int cfg_write_atomic(config_t *c, const char *path)
{
    char tmp[1400];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (config_write_file(c, tmp) != CONFIG_TRUE || rename(tmp, path) != 0) {
        unlink(tmp);
        return dl_fail("cannot write %s: %s", path, strerror(errno));
    }
    return 0;
}

static int manifest_write(const xp_manifest *m, const char *file)
{
    config_t c;
    config_init(&c);
    config_setting_t *root = config_root_setting(&c);
    int rc = cfg_str(root, "format", m->run ? "decodelab-run" : "decodelab-shard") || cfg_int(root, "version", 1) ||
             cfg_str(root, "experiment", m->experiment) || cfg_str(root, "file", file) || cfg_int(root, "shard", m->k) ||
             cfg_int(root, "shards", m->n) || cfg_bool(root, "reduced", m->reduced) ||
             cfg_str(root, "cache", m->cache) || cfg_bool(root, "gpu", m->gpu) || cfg_str(root, "no_gpu", m->no_gpu) ||
             cfg_str(root, "census_note", m->census_note) || cfg_str(root, "ncu_note", m->ncu_note) ||
             cfg_bool(root, "complete", m->complete);
    config_setting_t *pts = rc ? NULL : config_setting_add(root, "points", CONFIG_TYPE_ARRAY);
    if (!rc && !pts) rc = -1;
    for (int i = 0; !rc && i < m->npoints; i++)
        if (!config_setting_set_string_elem(pts, -1, m->hashes[i])) rc = -1;
    if (rc) rc = dl_fail("cannot build %s", m->path);
    else rc = cfg_write_atomic(&c, m->path);
    config_destroy(&c);
    return rc;
}

static int manifest_read(const char *path, xp_manifest *m, int run)
{
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s", path);
    m->run = run;
    const char *format = run ? "decodelab-run" : "decodelab-shard";
    config_t c;
    config_init(&c);
    int rc = 0;
    if (config_read_file(&c, path) != CONFIG_TRUE) {
        if (config_error_type(&c) != CONFIG_ERR_FILE_IO)
            rc = dl_fail("%s:%d: %s", path, config_error_line(&c), config_error_text(&c));
        else if (run) rc = dl_fail("%s: cannot read it: %s", path, strerror(errno));
        else rc = dl_fail("%s: cannot read it: not a shard directory (one made by --shard K/N)", path);
        config_destroy(&c);
        return rc;
    }
    const char *str;
    if (!config_lookup_string(&c, "format", &str) || strcmp(str, format))
        rc = dl_fail("%s: format is not %s", path, format);
#define GETS(key, dst)                                                                   \
    if (!rc) {                                                                           \
        if (!config_lookup_string(&c, key, &str)) rc = dl_fail("%s: %s missing", path, key); \
        else snprintf(dst, sizeof dst, "%s", str);                                       \
    }
#define GETI(key, dst)                                                                   \
    if (!rc && !config_lookup_int(&c, key, &dst)) rc = dl_fail("%s: %s missing", path, key);
#define GETB(key, dst)                                                                   \
    if (!rc && !config_lookup_bool(&c, key, &dst)) rc = dl_fail("%s: %s missing", path, key);
    GETS("experiment", m->experiment);
    GETS("cache", m->cache);
    GETS("no_gpu", m->no_gpu);
    GETS("census_note", m->census_note);
    GETS("ncu_note", m->ncu_note);
    GETI("shard", m->k);
    GETI("shards", m->n);
    GETB("reduced", m->reduced);
    GETB("gpu", m->gpu);
    GETB("complete", m->complete);
#undef GETS
#undef GETI
#undef GETB
    if (!rc && (m->n < 1 || m->n > DL_XP_MAX_POINTS || m->k < 0 || m->k >= m->n))
        rc = dl_fail("%s: shard = %d, shards = %d: not a shard K/N with K in 0..N-1", path, m->k, m->n);
    const config_setting_t *pts = rc ? NULL : config_lookup(&c, "points");
    if (!rc && (!pts || config_setting_type(pts) != CONFIG_TYPE_ARRAY)) rc = dl_fail("%s: points missing", path);
    if (!rc) {
        m->npoints = config_setting_length(pts);
        m->hashes = calloc((size_t)(m->npoints > 0 ? m->npoints : 1), sizeof *m->hashes);
        if (!m->hashes) rc = dl_fail("out of memory reading %s", path);
        for (int i = 0; !rc && i < m->npoints; i++) {
            const char *h = config_setting_get_string_elem(pts, (unsigned)i);
            if (!h) rc = dl_fail("%s: points[%d] is not a string", path, i);
            else snprintf(m->hashes[i], sizeof m->hashes[i], "%.20s", h);
        }
    }
    config_destroy(&c);
    if (rc) manifest_free(m);
    return rc;
}

/* Does manifest m describe shard k/n of x's sweep points pts (those i with i mod n = k), made from the same
 * sweep (reduced, cache)? 0 yes; else dl_fail naming what differs. A run record is shard 0/1. */
static int manifest_matches(const xp_manifest *m, const dl_experiment *x, const dl_xp_point *pts, int npts,
                            int reduced, const char *cache)
{
    char who[64];
    if (m->run) snprintf(who, sizeof who, "the run");
    else snprintf(who, sizeof who, "shard %d/%d", m->k, m->n);
    if (strcmp(m->experiment, x->name))
        return dl_fail("%s: a %s of experiment '%s', not of '%s'", m->path, m->run ? "run" : "shard", m->experiment,
                       x->name);
    if (m->reduced != reduced)
        return dl_fail("%s: %s ran the %s sweep, this run is %s", m->path, who, m->reduced ? "reduced" : "full",
                       reduced ? "reduced" : "full");
    if (strcmp(m->cache, cache))
        return dl_fail("%s: %s used the golden cache '%s', this run '%s' (rows are matched to points by "
                       "golden path)", m->path, who, m->cache, cache);
    int j = 0;
    for (int i = m->k; i < npts; i += m->n, j++)
        if (j >= m->npoints || strcmp(m->hashes[j], pts[i].hash))
            return dl_fail("%s: %s holds other sweep points than %s gives it (point %d, %s, hash %s): "
                           "was it run with another experiment file?", m->path, who, x->path, i + 1,
                           pts[i].label, pts[i].hash);
    if (j != m->npoints)
        return dl_fail("%s: %s holds %d points, %s gives it %d: was it run with another experiment file?",
                       m->path, who, m->npoints, x->path, j);
    return 0;
}

/* Fill the record of shard k/n, or with run set of the one-piece run (0/1); m->hashes holds its points. */
static void manifest_fill(xp_manifest *m, const xp_run *r, int run, int k, int n, const dl_xp_point *pts, int npts,
                          int reduced, const char *cache)
{
    snprintf(m->path, sizeof m->path, "%s/%s", r->dir, run ? "run.cfg" : "shard.cfg");
    m->run = run;
    snprintf(m->experiment, sizeof m->experiment, "%s", r->x->name);
    snprintf(m->cache, sizeof m->cache, "%s", cache);
    snprintf(m->no_gpu, sizeof m->no_gpu, "%s", r->no_gpu);
    snprintf(m->census_note, sizeof m->census_note, "%s", r->census_note);
    snprintf(m->ncu_note, sizeof m->ncu_note, "%s", r->ncu_note);
    m->k = k;
    m->n = n;
    m->reduced = reduced;
    m->gpu = r->gpu;
    m->npoints = 0;
    for (int i = k; i < npts; i += n) snprintf(m->hashes[m->npoints++], sizeof m->hashes[0], "%s", pts[i].hash);
}

/* A run directory from before run.cfg: taken over only if its verdicts.csv (if any) names this experiment
 * and every row is of a point of this sweep. */
static int legacy_matches(const xp_run *r, const dl_xp_point *pts, int npts)
{
    char path[1300], line[512] = "";
    snprintf(path, sizeof path, "%s/verdicts.csv", r->dir);
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(line, sizeof line, f) || !fgets(line, sizeof line, f)) line[0] = 0; /* the row after the header */
        fclose(f);
        line[strcspn(line, ",\n")] = 0;
        if (line[0] && strcmp(line, r->x->name))
            return dl_fail("%s: a run of experiment '%s', not of '%s' (the directory has no run.cfg, the record of "
                           "newer runs): --out another directory", path, line, r->x->name);
    }
    for (int64_t i = 0; i < r->nrows + r->ncrows; i++) {
        const char *g = i < r->nrows ? r->rows[i].golden_path : r->crows[i - r->nrows].golden_path;
        const char *v = i < r->nrows ? r->rows[i].variant : r->crows[i - r->nrows].variant;
        int p = 0;
        while (g[0] && p < npts && strcmp(pts[p].golden, g)) p++;
        if (p == npts)
            return dl_fail("%s holds a row of %s on %s, which is no point of this sweep (the directory has no run.cfg, "
                           "the record of newer runs: another experiment or sweep?): --out another directory", r->dir,
                           v, g);
    }
    return 0;
}

/* May a one-piece run go on in r->dir? Its DIR/run.cfg (the record a run writes when it starts, as a shard
 * writes shard.cfg) must name this experiment, sweep, cache and reduction; a directory without one must
 * pass legacy_matches. 0 yes; else dl_fail naming what differs, before anything is written. */
static int run_record_matches(const xp_run *r, const dl_xp_point *pts, int npts, int reduced, const char *cache)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/run.cfg", r->dir);
    if (dl_file_size(path) < 0) return legacy_matches(r, pts, npts);
    xp_manifest m;
    DL_TRY(manifest_read(path, &m, 1));
    int bad = manifest_matches(&m, r->x, pts, npts, reduced, cache);
    manifest_free(&m);
    return bad;
}

/* ---------------------------------------------------------------- merge */

typedef struct {
    int point, shard; /* point index, index of the shard directory */
    int64_t row;      /* index into that shard's rows */
} row_ref;

static const dl_xp_point *sort_pts; /* qsort's context (merge_main, one sort at a time) */
static int cmp_point_golden(const void *a, const void *b)
{
    return strcmp(sort_pts[*(const int *)a].golden, sort_pts[*(const int *)b].golden);
}

/* Index of the point whose golden file is path, via the sorted index order[] (-1: none). */
static int point_by_golden(const dl_xp_point *pts, const int *order, int npts, const char *path)
{
    int lo = 0, hi = npts - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcmp(pts[order[mid]].golden, path);
        if (!c) return order[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static int merge_main(const xp_opts *o, const dl_experiment *x)
{
    const int nd = o->nmerge;
    xp_manifest *man = calloc((size_t)nd, sizeof *man);
    dl_result_row **srows = calloc((size_t)nd, sizeof *srows);
    dl_census_row **scrows = calloc((size_t)nd, sizeof *scrows);
    int64_t *nsr = calloc((size_t)nd, sizeof *nsr), *nscr = calloc((size_t)nd, sizeof *nscr);
    int *by_k = NULL, *order = NULL, *pt_count = NULL;
    row_ref *refs = NULL, *crefs = NULL;
    dl_result_row *out_rows = NULL;
    dl_census_row *out_crows = NULL;
    dl_xp_point *pts = NULL;
    int npts = 0, rc = 0;
    int64_t nrefs = 0, ncrefs = 0, nout = 0, ncout = 0;
    char path[1400];
    if (!man || !srows || !scrows || !nsr || !nscr) {
        rc = dl_fail("out of memory");
        goto done;
    }
    /* 1. the manifests: one split into N, every shard once, finished, of this experiment */
    for (int d = 0; d < nd && !rc; d++) {
        snprintf(path, sizeof path, "%s/shard.cfg", o->merge[d]);
        rc = manifest_read(path, &man[d], 0);
    }
    const int N = rc ? 0 : man[0].n;
    for (int d = 1; d < nd && !rc; d++)
        if (man[d].n != N)
            rc = dl_fail("--merge: %s is shard %d/%d, %s shard %d/%d: not one split of the sweep", o->merge[0], man[0].k,
                         N, o->merge[d], man[d].k, man[d].n);
    by_k = rc ? NULL : malloc((size_t)N * sizeof *by_k);
    if (!rc && !by_k) rc = dl_fail("out of memory");
    for (int k = 0; k < N && !rc; k++) by_k[k] = -1;
    for (int d = 0; d < nd && !rc; d++) {
        if (by_k[man[d].k] >= 0)
            rc = dl_fail("--merge: shard %d/%d given twice: %s and %s", man[d].k, N, o->merge[by_k[man[d].k]], o->merge[d]);
        else by_k[man[d].k] = d;
    }
    if (!rc) {
        char miss[512] = "";
        int nmiss = 0, first = -1;
        for (int k = 0; k < N; k++)
            if (by_k[k] < 0 && nmiss++ < 8) {
                size_t l = strlen(miss);
                snprintf(miss + l, sizeof miss - l, "%s%d/%d", l ? ", " : "", k, N);
                if (first < 0) first = k;
            }
        if (nmiss)
            rc = dl_fail("--merge: %d of %d shards missing: %s%s (no directory given holds them; run e.g. decodelab "
                         "experiment %s --shard %d/%d)", nmiss, N, miss, nmiss > 8 ? ", ..." : "", x->path, first, N);
    }
    for (int d = 1; d < nd && !rc; d++) {
        if (man[d].reduced != man[0].reduced || strcmp(man[d].cache, man[0].cache))
            rc = dl_fail("--merge: %s and %s ran different sweeps (reduced %d/%d, cache '%s'/'%s')", o->merge[0],
                         o->merge[d], man[0].reduced, man[d].reduced, man[0].cache, man[d].cache);
        else if (man[d].gpu != man[0].gpu)
            rc = dl_fail("--merge: %s ran %s a GPU, %s %s: the GPU rows of one part would be missing", o->merge[0],
                         man[0].gpu ? "with" : "without", o->merge[d], man[d].gpu ? "with" : "without");
    }
    const int reduced = rc ? 0 : man[0].reduced;
    if (!rc) rc = dl_xp_points(x, reduced, man[0].cache, &pts, &npts);
    for (int d = 0; d < nd && !rc; d++) {
        rc = manifest_matches(&man[d], x, pts, npts, reduced, man[0].cache);
        if (!rc && !man[d].complete)
            rc = dl_fail("--merge: %s: shard %d/%d did not finish (rerun it: decodelab experiment %s --shard %d/%d --out %s "
                         "--resume)", o->merge[d], man[d].k, N, x->path, man[d].k, N, o->merge[d]);
    }
    /* 2. the rows of every shard, each assigned to its point: owned by that shard, none twice */
    for (int d = 0; d < nd && !rc; d++) {
        snprintf(path, sizeof path, "%s/results.h5", o->merge[d]);
        if (dl_file_size(path) >= 0) rc = dl_results_read(path, &srows[d], &nsr[d]);
        else {
            /* the .h5 lost (e.g. left out of a copy), its CSV twin kept: the same rows, every column */
            char csv[sizeof path];
            snprintf(csv, sizeof csv, "%s/results.csv", o->merge[d]);
            if (dl_file_size(csv) >= 0) {
                fprintf(stderr, "decodelab experiment: --merge: %s has no results.h5: its rows are read from its CSV twin, "
                                "results.csv\n", o->merge[d]);
                rc = dl_results_read_csv(csv, &srows[d], &nsr[d]);
            }
        }
        snprintf(path, sizeof path, "%s/census.csv", o->merge[d]);
        if (!rc && dl_file_size(path) >= 0) rc = dl_census_read(path, &scrows[d], &nscr[d]);
        nrefs += nsr[d];
        ncrefs += nscr[d];
    }
    order = rc ? NULL : malloc((size_t)(npts > 0 ? npts : 1) * sizeof *order);
    refs = rc ? NULL : calloc((size_t)(nrefs > 0 ? nrefs : 1), sizeof *refs);
    crefs = rc ? NULL : calloc((size_t)(ncrefs > 0 ? ncrefs : 1), sizeof *crefs);
    pt_count = rc ? NULL : calloc((size_t)(npts > 0 ? npts : 1), sizeof *pt_count);
    if (!rc && (!order || !refs || !crefs || !pt_count)) rc = dl_fail("out of memory");
    for (int i = 0; !rc && i < npts; i++) order[i] = i;
    sort_pts = pts;
    if (!rc) qsort(order, (size_t)npts, sizeof *order, cmp_point_golden);
    nrefs = ncrefs = 0;
    for (int d = 0; d < nd && !rc; d++) {
        for (int64_t i = 0; i < nsr[d] && !rc; i++) {
            const dl_result_row *w = &srows[d][i];
            int p = point_by_golden(pts, order, npts, w->golden_path);
            if (p < 0)
                rc = dl_fail("--merge: %s: row %lld (%s on %s) belongs to no point of the sweep", o->merge[d], (long long)i,
                             w->variant, w->golden_path);
            else if (p % N != man[d].k)
                rc = dl_fail("--merge: %s (shard %d/%d) holds a row of point %d (%s), which is shard %d's", o->merge[d],
                             man[d].k, N, p + 1, pts[p].label, p % N);
            else refs[nrefs++] = (row_ref){p, d, i};
        }
        for (int64_t i = 0; i < nscr[d] && !rc; i++) {
            const dl_census_row *c = &scrows[d][i];
            if (!strcmp(c->source, "sass")) {
                if (man[d].k != 0)
                    rc = dl_fail("--merge: %s (shard %d/%d) holds SASS census rows: the census is shard 0's", o->merge[d],
                                 man[d].k, N);
                else crefs[ncrefs++] = (row_ref){-1, d, i};
                continue;
            }
            int p = point_by_golden(pts, order, npts, c->golden_path);
            if (p < 0 || p % N != man[d].k)
                rc = dl_fail("--merge: %s: census row %lld (%s %s on %s) belongs to %s", o->merge[d], (long long)i,
                             c->source, c->variant, c->golden_path, p < 0 ? "no point of the sweep" : "another shard");
            else crefs[ncrefs++] = (row_ref){p, d, i};
        }
    }
    /* rows twice: the same (point, variant), or (point, variant, kernel, metric) of ncu */
    for (int64_t i = 0; i < nrefs && !rc; i++)
        for (int64_t j = 0; j < i && !rc; j++) {
            const row_ref *a = &refs[i], *b = &refs[j];
            if (a->point != b->point) continue;
            const dl_result_row *ra = &srows[a->shard][a->row], *rb = &srows[b->shard][b->row];
            if (!strcmp(ra->variant, rb->variant))
                rc = dl_fail("--merge: row of point %d (%s), variant %s, twice: in %s and in %s", a->point + 1,
                             pts[a->point].label, ra->variant, o->merge[b->shard], o->merge[a->shard]);
        }
    for (int64_t i = 0; i < ncrefs && !rc; i++) /* the ncu rows (a point's): (point, variant, kernel, metric) once */
        for (int64_t j = 0; crefs[i].point >= 0 && j < i && !rc; j++) {
            const row_ref *a = &crefs[i], *b = &crefs[j];
            if (a->point != b->point) continue;
            const dl_census_row *ca = &scrows[a->shard][a->row], *cb = &scrows[b->shard][b->row];
            if (!strcmp(ca->variant, cb->variant) && !strcmp(ca->kernel, cb->kernel) && !strcmp(ca->metric, cb->metric))
                rc = dl_fail("--merge: %s census row of point %d (%s), variant %s, metric %s, twice: in %s and in %s",
                             ca->source, a->point + 1, pts[a->point].label, ca->variant, ca->metric,
                             o->merge[b->shard], o->merge[a->shard]);
        }
    for (int64_t i = 0; i < nrefs && !rc; i++) pt_count[refs[i].point]++;
    /* 3. nothing missing: every point has its CPU model rows, and on a GPU a row per variant */
    const dl_variant *vars[64];
    int nv = 0;
    for (int v = 0; v < dl_num_variants && nv < 64; v++) {
        int hit = 0;
        for (int k = 0; k < x->nvariants; k++) hit |= dl_variant_matches(&dl_variants[v], x->variants[k]);
        if (hit) vars[nv++] = &dl_variants[v];
    }
    if (!rc) {
        char miss[768] = "";
        int nmiss = 0;
        for (int p = 0; p < npts; p++) {
            int have_ref = 0;
            for (int64_t i = 0; i < nrefs; i++)
                if (refs[i].point == p && !strncmp(srows[refs[i].shard][refs[i].row].variant, "ref-", 4)) have_ref = 1;
            for (int v = -1; v < (man[0].gpu ? nv : 0); v++) {
                int have = v < 0 ? have_ref : 0;
                for (int64_t i = 0; v >= 0 && i < nrefs && !have; i++)
                    have = refs[i].point == p && !strcmp(srows[refs[i].shard][refs[i].row].variant, vars[v]->name);
                if (have || nmiss++ >= 4) continue;
                size_t l = strlen(miss);
                snprintf(miss + l, sizeof miss - l, "%spoint %d (%.120s): %s rows (shard %d/%d, %.120s)", l ? "; " : "",
                         p + 1, pts[p].label, v < 0 ? "no ref-<model>" : vars[v]->name, p % N, N, o->merge[by_k[p % N]]);
            }
        }
        if (nmiss)
            rc = dl_fail("--merge: %d rows missing: %s%s; rerun those shards with --resume", nmiss, miss,
                         nmiss > 4 ? "; ..." : "");
    }
    if (!rc && x->census && !man[by_k[0]].census_note[0]) {
        int sass = 0;
        for (int64_t i = 0; i < ncrefs; i++) sass |= crefs[i].point < 0;
        if (!sass)
            rc = dl_fail("--merge: %s (shard 0/%d) has no SASS census rows and no note why: rerun it with --resume",
                         o->merge[by_k[0]], N);
    }
    /* 4. the rows in the order of a one-piece run: per point its ref-<model> rows, then per point and variant
     * (registry order) the GPU rows; census: shard 0's SASS rows, then ncu rows per point and variant */
    out_rows = rc ? NULL : calloc((size_t)(nrefs > 0 ? nrefs : 1), sizeof *out_rows);
    out_crows = rc ? NULL : calloc((size_t)(ncrefs > 0 ? ncrefs : 1), sizeof *out_crows);
    if (!rc && (!out_rows || !out_crows)) rc = dl_fail("out of memory for the merged rows");
    unsigned char *used = rc ? NULL : calloc((size_t)(nrefs + ncrefs + 1), 1);
    if (!rc && !used) rc = dl_fail("out of memory");
    for (int pass = 0; pass < 2 && !rc; pass++)
        for (int p = 0; p < npts; p++)
            for (int v = pass ? 0 : -1; v < (pass ? nv + 1 : 0); v++) /* pass 0: ref rows; pass 1: variants, then the rest */
                for (int64_t i = 0; i < nrefs; i++) {
                    if (used[i] || refs[i].point != p) continue;
                    const dl_result_row *w = &srows[refs[i].shard][refs[i].row];
                    int is_ref = !strncmp(w->variant, "ref-", 4);
                    if (pass == 0 ? !is_ref : (v < nv && strcmp(w->variant, vars[v]->name))) continue;
                    out_rows[nout++] = *w;
                    used[i] = 1;
                }
    for (int64_t i = 0; i < ncrefs && !rc; i++)
        if (crefs[i].point < 0) out_crows[ncout++] = scrows[crefs[i].shard][crefs[i].row];
    for (int p = 0; p < npts && !rc; p++)
        for (int v = 0; v <= nv; v++)
            for (int64_t i = 0; i < ncrefs; i++) {
                if (used[nrefs + i] || crefs[i].point != p) continue;
                const dl_census_row *c = &scrows[crefs[i].shard][crefs[i].row];
                if (v < nv && strcmp(c->variant, vars[v]->name)) continue;
                out_crows[ncout++] = *c;
                used[nrefs + i] = 1;
            }
    free(used);
    /* 5. write OUT: the merged tables, merge.cfg, then the verdicts and the report */
    xp_run r;
    memset(&r, 0, sizeof r);
    r.x = x;
    r.o = o;
    if (o->out) snprintf(r.dir, sizeof r.dir, "%s", o->out);
    else snprintf(r.dir, sizeof r.dir, "results/%s", x->name);
    snprintf(r.results, sizeof r.results, "%s/results.h5", r.dir);
    snprintf(r.census, sizeof r.census, "%s/census.csv", r.dir);
    char mpath[1300], csv[1300];
    snprintf(mpath, sizeof mpath, "%s/merge.cfg", r.dir);
    dl_results_csv_path(r.results, csv, sizeof csv);
    for (int d = 0; d < nd && !rc; d++) {
        char a[PATH_MAX], b[PATH_MAX];
        if (realpath(o->merge[d], a) && realpath(r.dir, b) && !strcmp(a, b))
            rc = dl_fail("--out: '%s' is one of the shard directories: merge into another", r.dir);
    }
    /* one process per OUT, as a run takes it: a run or another merge writing there meanwhile interleaved rows
     * (twice counted); and a run's or a shard's folder (run.cfg, shard.cfg) is not a merge's to take */
    int lock_fd = -1;
    if (!rc) rc = mkdirs(r.dir);
    if (!rc) rc = lock_out_dir(r.dir, &lock_fd);
    for (int k = 0; k < 2 && !rc; k++) {
        char m[1300];
        snprintf(m, sizeof m, "%s/%s", r.dir, k ? "shard.cfg" : "run.cfg");
        if (dl_file_size(m) >= 0)
            rc = dl_fail("--out: %s holds %s (a %s's folder, not of a merge): merge into another directory", r.dir, m,
                         k ? "shard" : "run");
    }
    if (!rc && (dl_file_size(r.results) >= 0 || dl_file_size(r.census) >= 0)) {
        if (dl_file_size(mpath) < 0)
            rc = dl_fail("%s already holds results of a run (not of a merge): --out another directory", r.dir);
        else {
            unlink(r.results);
            unlink(csv);
            unlink(r.census);
        }
    }
    if (!rc && nout > 0) rc = dl_results_append(r.results, out_rows, nout);
    if (!rc && ncout > 0) rc = dl_census_append(r.census, out_crows, ncout);
    if (!rc) {
        config_t c;
        config_init(&c);
        config_setting_t *root = config_root_setting(&c);
        rc = cfg_str(root, "format", "decodelab-merge") || cfg_int(root, "version", 1) ||
             cfg_str(root, "experiment", x->name) || cfg_str(root, "file", x->path) || cfg_int(root, "shards", N);
        config_setting_t *dirs = rc ? NULL : config_setting_add(root, "shard_dirs", CONFIG_TYPE_ARRAY);
        for (int k = 0; !rc && k < N; k++)
            if (!dirs || !config_setting_set_string_elem(dirs, -1, o->merge[by_k[k]])) rc = -1;
        rc = rc ? dl_fail("cannot build %s", mpath) : cfg_write_atomic(&c, mpath);
        config_destroy(&c);
    }
    if (!rc) {
        r.rows = out_rows;
        r.nrows = nout;
        r.crows = out_crows;
        r.ncrows = ncout;
        const xp_manifest *m0 = &man[by_k[0]];
        r.gpu = m0->gpu;
        snprintf(r.no_gpu, sizeof r.no_gpu, "%s", m0->no_gpu);
        snprintf(r.census_note, sizeof r.census_note, "%s", m0->census_note);
        for (int k = 0; k < N && !r.ncu_note[0]; k++) snprintf(r.ncu_note, sizeof r.ncu_note, "%s", man[by_k[k]].ncu_note);
        printf("experiment %s: merged %d shards (%d points, %lld rows, %lld census rows) -> %s\n", x->name, N, npts,
               (long long)nout, (long long)ncout, r.dir);
        rc = judge_and_report(&r, pts, npts, reduced);
        out_rows = NULL; /* owned by r now */
        out_crows = NULL;
        free(r.rows);
        free(r.crows);
    }
    if (lock_fd >= 0) close(lock_fd);
done:
    for (int d = 0; man && d < nd; d++) manifest_free(&man[d]);
    for (int d = 0; srows && d < nd; d++) free(srows[d]);
    for (int d = 0; scrows && d < nd; d++) free(scrows[d]);
    free(man);
    free(srows);
    free(scrows);
    free(nsr);
    free(nscr);
    free(by_k);
    free(order);
    free(pt_count);
    free(refs);
    free(crefs);
    free(out_rows);
    free(out_crows);
    dl_xp_points_free(pts, npts);
    return rc ? dl_cli_error("experiment") : 0;
}

/* ---------------------------------------------------------------- main */

int dl_cmd_experiment(int argc, char **argv)
{
    xp_opts o;
    int prc = parse(argc, argv, &o);
    if (prc == 1) return 0;
    if (prc) return dl_cli_error("experiment");
    static dl_experiment x; /* large: keep it off the stack */
    if (dl_xp_load(o.file, &x)) return dl_cli_error("experiment");
    if (o.nmerge) return merge_main(&o, &x);
    if (dl_plan_check_env()) return dl_cli_error("experiment"); /* a bad DL_STREAM_* knob: before any point runs */
    const int sharded = o.shard_n > 0;

    xp_run r;
    memset(&r, 0, sizeof r);
    r.x = &x;
    r.o = &o;
    if (o.binary) snprintf(r.bin, sizeof r.bin, "%s", o.binary);
    else if (dl_proc_self_exe(r.bin, sizeof r.bin)) return dl_cli_error("experiment");
    dl_clear_error();
    r.gpu = dl_gpu_device_count() > 0;
    if (!r.gpu) {
        const char *why = dl_last_error();
        if (!strncmp(why, "no CUDA device: ", 16)) why += 16;
        snprintf(r.no_gpu, sizeof r.no_gpu, "no CUDA device (%s)", why);
    }
    int reduced = o.reduced || (!r.gpu && !o.full && x.nreduced > 0);
    if (o.out) snprintf(r.dir, sizeof r.dir, "%s", o.out);
    else if (sharded) snprintf(r.dir, sizeof r.dir, "results/%s/shard-%d-of-%d", x.name, o.shard_k, o.shard_n);
    else snprintf(r.dir, sizeof r.dir, "results/%s", x.name);
    const char *cache = o.cache ? o.cache : "build/golden-cache";
    snprintf(r.results, sizeof r.results, "%s/results.h5", r.dir);
    snprintf(r.census, sizeof r.census, "%s/census.csv", r.dir);
    snprintf(r.log, sizeof r.log, "%s/steps.log", r.dir);

    dl_xp_point *pts = NULL;
    int npts = 0;
    xp_manifest man;
    memset(&man, 0, sizeof man);
    if (dl_xp_points(&x, reduced, cache, &pts, &npts)) return dl_cli_error("experiment");
    int rc = 0, lock_fd = -1;
    if (!o.resume && (dl_file_size(r.results) >= 0 || dl_file_size(r.census) >= 0)) {
        dl_fail("%s already holds results of a run: --resume to continue it, or --out another directory", r.dir);
        rc = dl_cli_error("experiment");
        goto out;
    }
    /* a shard directory holds one shard of one sweep: resume only that; a one-piece run never writes into it */
    char mpath[1300], rpath[1300];
    snprintf(mpath, sizeof mpath, "%s/shard.cfg", r.dir);
    snprintf(rpath, sizeof rpath, "%s/run.cfg", r.dir);
    if (dl_file_size(mpath) >= 0) {
        xp_manifest old;
        if (manifest_read(mpath, &old, 0)) {
            rc = dl_cli_error("experiment");
            goto out;
        }
        int bad = 0;
        if (!sharded) bad = dl_fail("%s holds shard %d/%d of %s: resume it with --shard %d/%d, or merge it with --merge",
                                    r.dir, old.k, old.n, old.experiment, old.k, old.n);
        else if (old.k != o.shard_k || old.n != o.shard_n)
            bad = dl_fail("--shard: '%d/%d', but %s holds shard %d/%d", o.shard_k, o.shard_n, r.dir, old.k, old.n);
        else bad = manifest_matches(&old, &x, pts, npts, reduced, cache);
        manifest_free(&old);
        if (bad) {
            rc = dl_cli_error("experiment");
            goto out;
        }
    } else if (sharded && (dl_file_size(r.results) >= 0 || dl_file_size(r.census) >= 0 || dl_file_size(rpath) >= 0)) {
        dl_fail("%s holds results of a one-piece run, not of shard %d/%d: --out another directory", r.dir, o.shard_k,
                o.shard_n);
        rc = dl_cli_error("experiment");
        goto out;
    }
    if (mkdirs(r.dir) || lock_out_dir(r.dir, &lock_fd) || mkdirs(cache) || reload(&r) ||
        (!sharded && run_record_matches(&r, pts, npts, reduced, cache))) {
        rc = dl_cli_error("experiment");
        goto out;
    }
    /* the directory's record: shard.cfg of a shard, run.cfg of a one-piece run */
    const int shard_k = sharded ? o.shard_k : 0, shard_n = sharded ? o.shard_n : 1;
    man.hashes = calloc((size_t)(npts / shard_n + 1), sizeof *man.hashes);
    if (!man.hashes) {
        dl_fail("out of memory");
        rc = dl_cli_error("experiment");
        goto out;
    }
    manifest_fill(&man, &r, !sharded, shard_k, shard_n, pts, npts, reduced, cache);
    man.complete = 0;
    if (manifest_write(&man, x.path)) {
        rc = dl_cli_error("experiment");
        goto out;
    }
    /* the points this process runs: all, or those of its shard (i mod N = K); the census is shard 0's */
#define OWNED(p_) (!sharded || (p_) % o.shard_n == o.shard_k)
    const int do_census = x.census && (!sharded || o.shard_k == 0);
    int nown = 0;
    for (int p = 0; p < npts; p++) nown += OWNED(p);

    /* the variants of the experiment, in registry order */
    const dl_variant *vars[64];
    int nv = 0;
    for (int v = 0; v < dl_num_variants && nv < 64; v++) {
        int hit = 0;
        for (int k = 0; k < x.nvariants; k++) hit |= dl_variant_matches(&dl_variants[v], x.variants[k]);
        if (hit) vars[nv++] = &dl_variants[v];
    }
    if (sharded)
        printf("experiment %s, shard %d/%d: %d of %d points (%s sweep), %d variants -> %s\n", x.name, o.shard_k,
               o.shard_n, nown, npts, reduced ? "reduced" : "full", nv, r.dir);
    else
        printf("experiment %s: %d points (%s sweep), %d variants, %d hypotheses -> %s\n", x.name, npts,
               reduced ? "reduced" : "full", nv, x.nhyp, r.dir);
    if (!r.gpu && nv) printf("GPU steps not run: %s\n", r.no_gpu);
    fflush(stdout);

    progress pg;
    memset(&pg, 0, sizeof pg);
    pg.tty = isatty(2);
    pg.t0 = dl_now();
    pg.total = 2 * nown + (do_census ? 1 : 0) + (r.gpu ? nown * nv * (1 + (x.ncu ? 1 : 0)) : 0);
    long ran = 0;
    char what[1400];
#define STEP_BEGIN(done_)                                                                       \
    if (!(done_) && o.stop_after >= 0 && ran >= o.stop_after) goto stopped;                     \
    progress_step(&pg, what, (done_));                                                          \
    double t_step_ = dl_now();
#define STEP_END()                                                                              \
    pg.spent += dl_now() - t_step_;                                                             \
    pg.run++;                                                                                   \
    ran++;

    for (int p = 0; p < npts; p++) {
        if (!OWNED(p)) continue;
        const dl_xp_point *pt = &pts[p];
        int done = dl_file_size(pt->golden) >= 0;
        snprintf(what, sizeof what, "golden %d/%d %s", p + 1, npts, pt->label);
        {
            STEP_BEGIN(done);
            if (!done) {
                if (step_golden(&r, pt)) {
                    rc = dl_cli_error("experiment");
                    goto out;
                }
                STEP_END();
            }
        }
        int models_done = 1, any = 0;
        for (int m = 0; m < DL_MODEL_COUNT; m++) {
            char nm[32];
            snprintf(nm, sizeof nm, "ref-%s", dl_model_name((dl_model)m));
            if (m == DL_MODEL_EXACT) continue;
            if (have_row(&r, pt->golden, nm)) any = 1;
        }
        models_done = any;
        snprintf(what, sizeof what, "ref models %d/%d %s", p + 1, npts, pt->label);
        {
            STEP_BEGIN(models_done);
            if (!models_done) {
                if (step_ref(&r, pt) || reload(&r)) {
                    rc = dl_cli_error("experiment");
                    goto out;
                }
                STEP_END();
            }
        }
    }
    if (do_census) {
        int done = have_census(&r, "sass", "", "");
        snprintf(what, sizeof what, "census of %s", r.bin);
        STEP_BEGIN(done);
        if (!done) {
            if (step_census(&r) || reload(&r)) {
                rc = dl_cli_error("experiment");
                goto out;
            }
            STEP_END();
        }
    }
    for (int p = 0; r.gpu && p < npts; p++) {
        if (!OWNED(p)) continue;
        for (int v = 0; v < nv; v++) {
            const dl_xp_point *pt = &pts[p];
            int done = have_row(&r, pt->golden, vars[v]->name);
            snprintf(what, sizeof what, "run %s %d/%d %s", vars[v]->name, p + 1, npts, pt->label);
            {
                STEP_BEGIN(done);
                if (!done) {
                    if (step_run(&r, pt, vars[v]->name) || reload(&r)) {
                        rc = dl_cli_error("experiment");
                        goto out;
                    }
                    STEP_END();
                }
            }
            if (!x.ncu) continue;
            done = have_census(&r, "ncu", pt->golden, vars[v]->name);
            snprintf(what, sizeof what, "ncu %s %d/%d %s", vars[v]->name, p + 1, npts, pt->label);
            {
                STEP_BEGIN(done);
                if (!done) {
                    if (step_ncu(&r, pt, vars[v]->name) || reload(&r)) {
                        rc = dl_cli_error("experiment");
                        goto out;
                    }
                    STEP_END();
                }
            }
        }
    }
    progress_end(&pg);
#undef STEP_BEGIN
#undef STEP_END
#undef OWNED

    /* the record: finished, with the notes the report carries */
    manifest_fill(&man, &r, !sharded, shard_k, shard_n, pts, npts, reduced, cache);
    man.complete = 1;
    if (manifest_write(&man, x.path)) {
        rc = dl_cli_error("experiment");
        goto out;
    }
    if (sharded) { /* no report (half a sweep) */
        printf("shard %d/%d of %s done: %d points, %lld rows in %s/results.csv\n", o.shard_k, o.shard_n, x.name, nown,
               (long long)r.nrows, r.dir);
        printf("when all %d shards are done: decodelab experiment %s --merge <the %d shard directories>\n", o.shard_n,
               x.path, o.shard_n);
    } else if (judge_and_report(&r, pts, npts, reduced)) {
        rc = dl_cli_error("experiment");
    }
    goto out;
stopped:
    progress_end(&pg);
    fprintf(stderr, "stopped after %ld steps (--stop-after); continue with --resume\n", ran);
    rc = 3;
out:
    if (lock_fd >= 0) close(lock_fd);
    manifest_free(&man);
    dl_xp_points_free(pts, npts);
    free(r.rows);
    free(r.crows);
    return rc;
}

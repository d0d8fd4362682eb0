/* cmd_experiment.c - `decodelab experiment FILE`: run one declarative
 * experiment (harness/experiment.c loads it) step by step and write its report.
 *
 * Steps, in order, each skipped when its record already exists (so an
 * interrupted run continues with --resume and nothing completed is redone):
 *   golden  per sweep point: `decodelab golden` into the cache, named by the
 *           content hash of its flags (an existing file is reused);
 *   ref     per point: every CPU model of the golden file scored against exact,
 *           appended as results rows named ref-<model> (record: those rows);
 *   census  once: the SASS census of the binary into census.csv (record: its rows);
 *   run     per point and variant (GPU only): `decodelab run --out results.h5`
 *           (record: the row of that golden file and variant);
 *   ncu     per point and variant (GPU only, measure.ncu): `decodelab ncu`.
 * Then every hypothesis is judged on the rows (HOLDS / REJECTED / INCONCLUSIVE)
 * and OUT/report.md and OUT/verdicts.csv are written. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
            "                            [--binary PATH] [--stop-after N]\n\n"
            "Runs one experiment file (experiments/README.md): generates or reuses the golden file of\n"
            "every sweep point (cache named by the content hash of its config), scores the CPU models\n"
            "against exact (rows ref-<model>), takes the SASS census, runs every variant on a GPU\n"
            "(check + timing), and judges each hypothesis: HOLDS, REJECTED or INCONCLUSIVE (with the\n"
            "reason). Writes DIR/results.h5 (+ .csv), DIR/census.csv, DIR/report.md, DIR/verdicts.csv.\n\n"
            "  --out DIR       output directory (default results/<name>)\n"
            "  --cache DIR     golden file cache (default build/golden-cache)\n"
            "  --resume        continue an interrupted run: steps with a record in DIR are skipped\n"
            "  --reduced       use the file's `reduced` sweep overrides (default when there is no GPU)\n"
            "  --full          use the full sweep even without a GPU\n"
            "  --binary PATH   the decodelab to run steps with (default: this one)\n"
            "  --stop-after N  stop after N steps were run (to test --resume); exit status 3\n\n"
            "Progress goes to stderr: a live line with an ETA on a terminal, one line per step otherwise.\n"
            "exit status: 0 done (whatever the verdicts), 2 bad file/usage or a step that could not run,\n"
            "3 stopped by --stop-after.\n");
}

typedef struct {
    const char *file, *out, *cache, *binary;
    int resume, reduced, full;
    long stop_after;
} xp_opts;

static int parse(int argc, char **argv, xp_opts *o)
{
    memset(o, 0, sizeof *o);
    o->stop_after = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            xp_help(stdout);
            return 1;
        } else if (!strcmp(a, "--resume")) {
            o->resume = 1;
        } else if (!strcmp(a, "--reduced")) {
            o->reduced = 1;
        } else if (!strcmp(a, "--full")) {
            o->full = 1;
        } else if (a[0] == '-' && i + 1 >= argc) {
            return dl_fail("%s: missing value (or unknown flag; see decodelab experiment --help)", a);
        } else if (!strcmp(a, "--out") || !strcmp(a, "--cache") || !strcmp(a, "--binary")) {
            const char *v = argv[++i];
            if (!*v) return dl_fail("%s: '' is empty", a);
            if (a[2] == 'o') o->out = v;
            else if (a[2] == 'c') o->cache = v;
            else o->binary = v;
        } else if (!strcmp(a, "--stop-after")) {
            int64_t v;
            DL_TRY(dl_parse_i64(a, argv[++i], 0, 1000000, &v));
            o->stop_after = (long)v;
        } else if (a[0] == '-') {
            return dl_fail("unknown flag '%s' (see decodelab experiment --help)", a);
        } else if (!o->file) {
            o->file = a;
        } else {
            return dl_fail("one experiment file expected, got '%s' and '%s'", o->file, a);
        }
    }
    if (!o->file) return dl_fail("missing FILE.cfg (see decodelab experiment --help)");
    if (o->reduced && o->full) return dl_fail("--reduced and --full: choose one");
    return 0;
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

static int step_golden(xp_run *r, const dl_xp_point *p)
{
    const char *args[2 * DL_XP_MAX_FIELDS + 12];
    int n = 0;
    args[n++] = r->bin;
    for (int i = 0; i < p->argc; i++) args[n++] = p->argv[i];
    args[n] = NULL;
    int st;
    DL_TRY(run_child(r, args, &st));
    if (st != 0) return dl_fail("golden for %s exited with status %d (see %s)", p->label, st, r->log);
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
        dl_run_fill_config(w, p->golden, &g.c);
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
    if (st != 0 && st != 1) return dl_fail("run %s on %s exited with status %d (see %s)", variant, p->label, st, r->log);
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

/* ---------------------------------------------------------------- main */

int dl_cmd_experiment(int argc, char **argv)
{
    xp_opts o;
    int prc = parse(argc, argv, &o);
    if (prc == 1) return 0;
    if (prc) return dl_cli_error("experiment");
    static dl_experiment x; /* large: keep it off the stack */
    if (dl_xp_load(o.file, &x)) return dl_cli_error("experiment");

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
    else snprintf(r.dir, sizeof r.dir, "results/%s", x.name);
    const char *cache = o.cache ? o.cache : "build/golden-cache";
    snprintf(r.results, sizeof r.results, "%s/results.h5", r.dir);
    snprintf(r.census, sizeof r.census, "%s/census.csv", r.dir);
    snprintf(r.log, sizeof r.log, "%s/steps.log", r.dir);

    dl_xp_point *pts = NULL;
    int npts = 0;
    if (dl_xp_points(&x, reduced, cache, &pts, &npts)) return dl_cli_error("experiment");
    int rc = 0;
    if (!o.resume && (dl_file_size(r.results) >= 0 || dl_file_size(r.census) >= 0)) {
        dl_fail("%s already holds results of a run: --resume to continue it, or --out another directory", r.dir);
        rc = dl_cli_error("experiment");
        goto out;
    }
    if (mkdirs(r.dir) || mkdirs(cache) || reload(&r)) {
        rc = dl_cli_error("experiment");
        goto out;
    }

    /* the variants of the experiment, in registry order */
    const dl_variant *vars[64];
    int nv = 0;
    for (int v = 0; v < dl_num_variants && nv < 64; v++) {
        int hit = 0;
        for (int k = 0; k < x.nvariants; k++) hit |= dl_variant_matches(&dl_variants[v], x.variants[k]);
        if (hit) vars[nv++] = &dl_variants[v];
    }
    printf("experiment %s: %d points (%s sweep), %d variants, %d hypotheses -> %s\n", x.name, npts,
           reduced ? "reduced" : "full", nv, x.nhyp, r.dir);
    if (!r.gpu && nv) printf("GPU steps not run: %s\n", r.no_gpu);
    fflush(stdout);

    progress pg;
    memset(&pg, 0, sizeof pg);
    pg.tty = isatty(2);
    pg.t0 = dl_now();
    pg.total = 2 * npts + (x.census ? 1 : 0) + (r.gpu ? npts * nv * (1 + (x.ncu ? 1 : 0)) : 0);
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
    if (x.census) {
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

    {
        dl_xp_result res[DL_XP_MAX_HYP];
        memset(res, 0, sizeof res);
        for (int h = 0; h < x.nhyp && !rc; h++)
            if (dl_xp_evaluate(&x, h, pts, npts, r.rows, r.nrows, r.crows, r.ncrows, &res[h])) rc = dl_cli_error("experiment");
            else if (res[h].nobs == 0 && x.hyp[h].kind == DL_XP_CENSUS && !strcmp(x.hyp[h].source, "sass") &&
                     r.census_note[0]) {
                snprintf(res[h].reason, sizeof res[h].reason, "no data: %.700s", r.census_note);
            } else if (!r.gpu && res[h].nobs == 0 && needs_gpu(&x.hyp[h])) {
                char was[sizeof res[h].reason];
                snprintf(was, sizeof was, "%s", res[h].reason);
                snprintf(res[h].reason, sizeof res[h].reason, "needs GPU rows, and this machine has %.200s; %.400s", r.no_gpu, was);
            }
        if (!rc && write_report(&r, pts, npts, reduced, res)) rc = dl_cli_error("experiment");
        if (!rc) {
            printf("\n%-4s %-13s %s\n", "", "verdict", "hypothesis / deciding numbers");
            for (int h = 0; h < x.nhyp; h++)
                printf("H%-3d %-13s %s\n%-18s %s\n", h + 1, dl_xp_verdict_name(res[h].verdict), x.hyp[h].claim, "",
                       res[h].reason);
            printf("\nreport: %s/report.md, verdicts: %s/verdicts.csv, rows: %s/results.csv\n", r.dir, r.dir, r.dir);
        }
        for (int h = 0; h < x.nhyp; h++) dl_xp_result_free(&res[h]);
    }
    goto out;
stopped:
    progress_end(&pg);
    fprintf(stderr, "stopped after %ld steps (--stop-after); continue with --resume\n", ran);
    rc = 3;
out:
    dl_xp_points_free(pts, npts);
    free(r.rows);
    free(r.crows);
    return rc;
}

/* cmd_ncu.c - `decodelab ncu GOLDEN`: Nsight Compute's instruction counters
 * per variant, stored beside the SASS census (mission E2: what a profiler's
 * tensor-pipe counter says vs what the machine code holds). For each selected
 * variant that supports the case, runs
 *   ncu --clock-control none --csv --print-kernel-base mangled --log-file TMP
 *       --metrics M1,M2,... <this decodelab> run GOLDEN --variants V
 * parses ncu's CSV (details page: one line per kernel launch and metric),
 * demangles the kernel names and appends one census row per (variant, kernel,
 * metric) with the first launch's value and the number of launches. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../gpu/dl_registry.h"
#include "dl_census.h"
#include "dl_cli.h"
#include "dl_golden.h"
#include "dl_proc.h"
#include "dl_run.h"

/* The seed discussion's counters and their siblings (tensor pipe by kind, the
 * pipes the CUDA-core kernels use, and the totals to normalise by). */
static const char *const default_metrics =
    "sm__inst_executed_pipe_tensor_op.sum,sm__inst_executed_pipe_tensor_op_hmma.sum,"
    "sm__inst_executed_pipe_tensor_op_dmma.sum,sm__inst_executed_pipe_tensor_op_imma.sum,"
    "sm__inst_executed_pipe_tensor_op_gmma.sum,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active,"
    "sm__pipe_tensor_op_hmma_cycles_active.sum,sm__inst_executed_pipe_fma.sum,sm__inst_executed_pipe_fp16.sum,"
    "sm__inst_executed_pipe_alu.sum,sm__inst_executed_pipe_xu.sum,sm__inst_executed_pipe_lsu.sum,"
    "sm__inst_executed.sum,dram__bytes_read.sum,gpu__time_duration.sum";
/* Exactly the four of the seed discussion: the fallback when a sibling is unknown to this ncu/GPU. */
static const char *const seed_metrics =
    "sm__inst_executed_pipe_tensor_op.sum,sm__inst_executed_pipe_tensor_op_dmma.sum,"
    "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.sum";

static void ncu_help(FILE *f)
{
    fprintf(f,
            "usage: decodelab ncu GOLDEN.h5 [--variants GLOB[,GLOB]] [--out CENSUS.csv] [--metrics M1,M2,...]\n"
            "                     [--binary PATH]\n\n"
            "On a GPU machine: profiles `decodelab run GOLDEN.h5 --variants V` under Nsight Compute\n"
            "(ncu --clock-control none) for every selected variant that supports the case, with the\n"
            "tensor-pipe counters (sm__inst_executed_pipe_tensor_op_hmma.sum and siblings) and the\n"
            "other pipes, and appends one census row per (variant, kernel, metric) to CENSUS.csv\n"
            "(source=ncu; the same table as `decodelab sass --out`, data/SCHEMA.md).\n"
            "ncu is looked for on PATH, then $CUDA_HOME/bin and /usr/local/cuda/bin, then $DL_NCU.\n"
            "If ncu rejects a metric of the default list, the run is retried with the seed's four.\n\n"
            "exit status: 0 ok (also: no CUDA device, nothing profiled), 1 ncu failed on a variant,\n"
            "2 bad input or ncu not found.\n");
}

/* Index of a header name among fields, -1 if absent. */
static int col_of(char **f, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(f[i], name)) return i;
    return -1;
}

/* Split one CSV line in place (quoted fields, "" escapes). */
static int split_csv(char *s, char **f, int max)
{
    int n = 0;
    char *w = s;
    while (*s && n < max) {
        f[n++] = w;
        if (*s == '"') {
            s++;
            for (;;) {
                if (!*s) break;
                if (*s == '"' && s[1] == '"') {
                    *w++ = '"';
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    *w++ = *s++;
                }
            }
        }
        while (*s && *s != ',' && *s != '\n' && *s != '\r') *w++ = *s++;
        *w++ = 0;
        if (*s == ',') s++;
        else break;
    }
    return n;
}

/* "4,899,840" -> 4899840; "n/a" -> NaN */
static double parse_value(const char *s)
{
    char buf[64];
    size_t k = 0;
    for (; *s && k + 1 < sizeof buf; s++)
        if (*s != ',' && *s != ' ') buf[k++] = *s;
    buf[k] = 0;
    char *end;
    double v = strtod(buf, &end);
    return (k == 0 || *end) ? NAN : v;
}

typedef struct {
    char mangled[512], metric[128], unit[24];
    double value;
    int64_t launches;
} ncu_val;

/* Parse ncu's CSV log into vals (first launch's value per kernel and metric). */
static int parse_ncu_log(const char *path, ncu_val **vals, int *nv, char *device, size_t dn)
{
    FILE *f = fopen(path, "r");
    if (!f) return dl_fail("ncu: cannot read its log %s: %s", path, strerror(errno));
    static char line[65536];
    char *fld[64];
    int ck = -1, cm = -1, cu = -1, cv = -1, cd = -1, cid = -1, cap = 0;
    char last_id[32] = "";
    *vals = NULL;
    *nv = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] != '"') continue; /* ==PROF== lines, the application's own output */
        int n = split_csv(line, fld, 64);
        if (ck < 0) {
            ck = col_of(fld, n, "Kernel Name");
            cm = col_of(fld, n, "Metric Name");
            cu = col_of(fld, n, "Metric Unit");
            cv = col_of(fld, n, "Metric Value");
            cd = col_of(fld, n, "Device");
            cid = col_of(fld, n, "ID");
            if (ck < 0 || cm < 0 || cv < 0) {
                fclose(f);
                return dl_fail("ncu: %s: CSV header lacks Kernel Name / Metric Name / Metric Value", path);
            }
            continue;
        }
        if (n <= ck || n <= cm || n <= cv) continue;
        (void)cd;
        (void)last_id;
        int j = 0;
        for (; j < *nv; j++)
            if (!strcmp((*vals)[j].mangled, fld[ck]) && !strcmp((*vals)[j].metric, fld[cm])) break;
        if (j < *nv) {
            (*vals)[j].launches++;
            continue;
        }
        if (*nv == cap) {
            cap = cap ? 2 * cap : 64;
            ncu_val *v = realloc(*vals, (size_t)cap * sizeof *v);
            if (!v) {
                fclose(f);
                return dl_fail("ncu: out of memory");
            }
            *vals = v;
        }
        ncu_val *v = &(*vals)[(*nv)++];
        snprintf(v->mangled, sizeof v->mangled, "%s", fld[ck]);
        snprintf(v->metric, sizeof v->metric, "%s", fld[cm]);
        snprintf(v->unit, sizeof v->unit, "%s", cu >= 0 && cu < n ? fld[cu] : "");
        v->value = parse_value(fld[cv]);
        v->launches = 1;
        (void)cid;
    }
    fclose(f);
    (void)device;
    (void)dn;
    return 0;
}

int dl_cmd_ncu(int argc, char **argv)
{
    const char *golden = NULL, *globs = NULL, *out = NULL, *metrics = default_metrics, *binary = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            ncu_help(stdout);
            return 0;
        } else if (a[0] == '-' && i + 1 < argc &&
                   (!strcmp(a, "--variants") || !strcmp(a, "--out") || !strcmp(a, "--metrics") || !strcmp(a, "--binary"))) {
            const char *v = argv[++i];
            if (!*v) {
                dl_fail("%s: '' is empty", a);
                return dl_cli_error("ncu");
            }
            if (!strcmp(a, "--variants")) globs = v;
            else if (!strcmp(a, "--out")) out = v;
            else if (!strcmp(a, "--metrics")) metrics = v;
            else binary = v;
        } else if (a[0] == '-') {
            dl_fail("unknown or incomplete argument '%s' (see decodelab ncu --help)", a);
            return dl_cli_error("ncu");
        } else if (!golden) {
            golden = a;
        } else {
            dl_fail("one golden file expected, got '%s' and '%s'", golden, a);
            return dl_cli_error("ncu");
        }
    }
    if (!golden) {
        dl_fail("missing GOLDEN.h5 (see decodelab ncu --help)");
        return dl_cli_error("ncu");
    }
    if (out && dl_check_dir_of("census", out)) /* its directory, before the profiling runs (minutes) */
        return dl_cli_error("ncu");
    const dl_variant **sel = calloc((size_t)dl_num_variants + 1, sizeof *sel);
    int nsel = 0;
    if (!sel || dl_run_select(globs, sel, &nsel)) {
        free(sel);
        return dl_cli_error("ncu");
    }
    dl_golden g;
    memset(&g, 0, sizeof g);
    if (dl_golden_read(golden, &g)) {
        free(sel);
        return dl_cli_error("ncu");
    }
    dl_clear_error();
    int rc = 0;
    if (dl_gpu_device_count() <= 0) {
        {
            const char *why = dl_last_error();
            if (!strncmp(why, "no CUDA device: ", 16)) why += 16;
            printf("no CUDA device (%s): nothing to profile\n", why);
        }
        goto done;
    }
    char ncu[1024], self[1024];
    if (dl_census_find_tool("ncu", "DL_NCU", ncu, sizeof ncu)) {
        rc = dl_cli_error("ncu");
        goto done;
    }
    if (!binary) {
        if (dl_proc_self_exe(self, sizeof self)) {
            rc = dl_cli_error("ncu");
            goto done;
        }
        binary = self;
    }
    char hash[32];
    dl_run_hash_string(dl_golden_inputs_hash(&g), hash, sizeof hash);
    int failed = 0;
    for (int s = 0; s < nsel; s++) {
        const dl_variant *v = sel[s];
        char why[512];
        if (!v->supports(v, &g.c.cfg, why, sizeof why)) {
            printf("%-18s SKIP: %s\n", v->name, why);
            continue;
        }
        char log[64];
        snprintf(log, sizeof log, "/tmp/decodelab-ncu.%ld.csv", (long)getpid());
        const char *use = metrics;
        int status = -1;
        for (int attempt = 0; attempt < 2; attempt++) {
            unlink(log);
            const char *args[] = {ncu, "--clock-control", "none", "--csv", "--print-kernel-base", "mangled",
                                  "--log-file", log, "--metrics", use, binary, "run", golden, "--variants", v->name,
                                  NULL};
            printf("%-18s profiling: %s ... %s run %s --variants %s\n", v->name, ncu, binary, golden, v->name);
            FILE *sink = tmpfile();
            if (dl_proc_run(args, -1, sink ? fileno(sink) : -1, -1, NULL, &status)) {
                if (sink) fclose(sink);
                rc = dl_cli_error("ncu");
                goto done;
            }
            if (sink) fclose(sink);
            if (status == 0 || use != default_metrics) break;
            printf("%-18s ncu exited with %d on the default metrics; retrying with the seed's four\n", v->name, status);
            use = seed_metrics;
        }
        if (status != 0) {
            printf("%-18s FAIL: ncu exited with status %d (its log: %s)\n", v->name, status, log);
            failed = 1;
            continue;
        }
        ncu_val *vals = NULL;
        int nv = 0;
        if (parse_ncu_log(log, &vals, &nv, NULL, 0)) {
            rc = dl_cli_error("ncu");
            goto done;
        }
        unlink(log);
        /* demangle through the census's routine so names match the sass rows */
        dl_census dm;
        memset(&dm, 0, sizeof dm);
        dm.k = calloc((size_t)(nv > 0 ? nv : 1), sizeof *dm.k);
        dl_census_row *rows = calloc((size_t)(nv > 0 ? nv : 1), sizeof *rows);
        if (!dm.k || !rows) {
            free(dm.k);
            free(rows);
            free(vals);
            dl_fail("ncu: out of memory");
            rc = dl_cli_error("ncu");
            goto done;
        }
        dm.cap = nv;
        for (int j = 0; j < nv; j++) {
            snprintf(dm.k[j].mangled, sizeof dm.k[j].mangled, "%s", vals[j].mangled);
            snprintf(dm.k[j].name, sizeof dm.k[j].name, "%s", vals[j].mangled);
        }
        dm.n = nv;
        dl_census_demangle(&dm);
        for (int j = 0; j < nv; j++) {
            dl_census_row *r = &rows[j];
            dl_census_row_init(r);
            snprintf(r->source, sizeof r->source, "ncu");
            snprintf(r->variant, sizeof r->variant, "%s", v->name);
            snprintf(r->kernel, sizeof r->kernel, "%s", dm.k[j].name);
            snprintf(r->kv_dtype, sizeof r->kv_dtype, "%s", dm.k[j].kv_dtype);
            snprintf(r->metric, sizeof r->metric, "%s", vals[j].metric);
            snprintf(r->unit, sizeof r->unit, "%s", vals[j].unit);
            r->value = vals[j].value;
            r->launches = vals[j].launches;
            snprintf(r->golden_path, sizeof r->golden_path, "%s", golden);
            snprintf(r->golden_hash, sizeof r->golden_hash, "%s", hash);
            snprintf(r->binary, sizeof r->binary, "%s", binary);
            snprintf(r->tool, sizeof r->tool, "%s", ncu);
            if (strstr(vals[j].metric, "tensor_op") && dl_census_kernel_matches(v->kernel, dm.k[j].name))
                printf("%-18s   %-60.60s %s = %g\n", v->name, dm.k[j].name, vals[j].metric, vals[j].value);
        }
        if (out && dl_census_append(out, rows, nv)) rc = dl_cli_error("ncu");
        else if (out) printf("%-18s %d rows appended to %s\n", v->name, nv, out);
        free(dm.k);
        free(rows);
        free(vals);
        if (rc) goto done;
    }
    if (failed) rc = 1;
done:
    dl_golden_free(&g);
    free(sel);
    return rc;
}

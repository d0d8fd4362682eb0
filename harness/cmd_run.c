/* cmd_run.c - the `decodelab run` command line: flags, help, the table it
 * prints and the results it appends. The work (device buffers, read reference,
 * plan, checked launches, judgement, timing) is harness/run.c (dl_run_case).
 * Plain C; without CUDA it says no device is usable and lists what would run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../gpu/dl_bench.h"
#include "../gpu/dl_plan.h"
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


/* ================================================================ options */

typedef struct {
    const char *golden, *variants, *out;
    dl_run_opts x;   /* what harness/run.c needs */
    int flush_given; /* --flush given on the command line */
    int resume;      /* skip variants whose row is already in --out */
} run_opts;

static void run_help(FILE *f)
{
    fprintf(f,
            "usage: decodelab run GOLDEN.h5 [--variants GLOB[,GLOB]] [--time] [--flush write|read] [--hot-l2]\n"
            "                     [--time-failed] [--graph | --chain L] [--out RESULTS.h5] [--max-time-s S]\n"
            "                     [--min-samples N] [--splits N|auto] [--save-outputs DIR]\n\n"
            "Checks every selected GPU variant on the golden file: the outputs are poisoned (NaN) before\n"
            "each launch, every element must be written; o and lse are scored against the variant's own\n"
            "golden model for the schedule the kernel ran (implementation limits, global and per (request, head);\n"
            "the o limits grow by sqrt(L / 1024) for a longest sequence of L > 1024 tokens: decodelab list --help):\n"
            "PASS or FAIL; against exact: the precision, within or above the model's expected band (not a FAIL).\n"
            "A variant that cannot run the case is a SKIP row with its reason.\n\n"
            "  --variants GLOB[,GLOB]  select variants by shell glob (default: all; see decodelab list)\n"
            "  --splits N|auto         split-KV chunks per sequence (default auto: dl_gpu_choose_splits)\n"
            "  --time                  time each variant that passed its check: warm-up, then per sample an\n"
            "                          L2 flush and one launch between CUDA events, until stdrel < --max-stdrel\n"
            "                          with >= --min-samples samples, or --max-time-s. First, once per case, the\n"
            "                          read reference: two reads of exactly the case's KV bytes, timed the same\n"
            "                          way (columns ref_read_pages_s: in page-table order; ref_read_contig_s: the\n"
            "                          same byte count contiguously, not run where requests share pages; ref_read_s:\n"
            "                          the faster of the two medians)\n"
            "                          and frac_ref = ref_read_s / time_median_s (1 = as fast as a plain read)\n"
            "  --time-failed           also time a variant whose check FAILed (implies --time; for diagnosis: the\n"
            "                          row stays FAIL, its reason says it was timed anyway)\n"
            "  --flush write|read      how a cold sample flushes L2 (implies --time; column flush): write (default)\n"
            "                          = a memset of 2x L2, leaving dirty lines the timed kernel may write back;\n"
            "                          read = a streaming read of 4x L2 (discarded), leaving only clean lines.\n"
            "                          Used for the peak calibration, the read reference and the variants\n"
            "  --hot-l2                no flush between samples (timing_mode hot-l2, flush none; also for the\n"
            "                          read reference); cannot be combined with --flush\n"
            "  --graph                 time replays of a CUDA graph of --graph-launches launches (default\n"
            "                          20); per-launch time = replay / launches (the read reference stays one\n"
            "                          launch per sample, flushed unless --hot-l2)\n"
            "  --chain L               the layer chain (2 <= L <= 64; implies --time; timing_mode chain-cold-l2,\n"
            "                          graph_launches L): L launches back to back, each over its own copy of the\n"
            "                          caches (a model's L layers: L - 1 copies more in GPU memory), L2 flushed\n"
            "                          once before the first; per-launch time = the chain's / L. The variants that\n"
            "                          support it (the warp-consumer stream kernels; DL_STREAM_PDL=0 turns it off)\n"
            "                          launch each layer after the first with programmatic dependent launch: it\n"
            "                          starts while the previous ends, held to its plan's CTAs an SM where more\n"
            "                          would fit (DL_STREAM_CHAIN_CAP=0 lets them, 2 holds every launch so,\n"
            "                          standalone too; schedule :cap<N>). The read reference is timed the same\n"
            "                          way (L reads, each after the first with that launch). Before timing, one\n"
            "                          chain on poisoned outputs must leave one launch's outputs (else FAIL, not\n"
            "                          timed).\n"
            "                          --resume treats chains of any L as one timing mode\n"
            "  --max-time-s S          time cap per variant and per reader of the read reference (default 5)\n"
            "  --min-samples N         (default 10)      --max-stdrel X   (default 0.005)\n"
            "  --peak-runs N           runs of the peak-read calibration kernel (default 20)\n"
            "  --out RESULTS.h5        append one row per variant to RESULTS.h5 and its twin RESULTS.csv\n"
            "                          (atomically; schema: data/SCHEMA.md (results table)). Without it nothing is written.\n"
            "                          Checked before anything runs: its directory must exist, an existing RESULTS.h5\n"
            "                          or RESULTS.csv must be a results table's (a RESULTS.csv whose .h5 was lost keeps\n"
            "                          its rows)\n"
            "  --save-outputs DIR      write each checked variant's o and lse (its first checked launch) to\n"
            "                          DIR/<variant>.splits<N>.h5, a candidate file (data/SCHEMA.md), so that other\n"
            "                          models can judge them later without a GPU: decodelab compare GOLDEN FILE\n"
            "                          --model M (against the stored model: exact for schedule none or one segment\n"
            "                          per sequence; the settings attribute names the schedule). DIR must exist\n"
            "  --resume                skip the variants that already have a row in --out for the same golden\n"
            "                          inputs (content hash), split count, timing mode and flush (an interrupted\n"
            "                          sweep reruns without duplicating rows)\n\n"
            "Without a CUDA device: says so, lists the variants that would have run, exits 0.\n"
            "exit status: 0 all checks PASS/SKIP, 1 a variant FAILed, 2 bad input or setup error.\n");
}

static int parse_run(int argc, char **argv, run_opts *o)
{
    memset(o, 0, sizeof *o);
    dl_timing_opts_default(&o->x.topt);
    o->x.graph_launches = 20;
    o->x.peak_runs = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = (i + 1 < argc) ? argv[i + 1] : NULL;
        int64_t iv;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            run_help(stdout);
            return 1;
        } else if (!strcmp(a, "--time")) {
            o->x.time = 1;
        } else if (!strcmp(a, "--time-failed")) {
            o->x.time_failed = 1;
        } else if (!strcmp(a, "--hot-l2")) {
            o->x.hot_l2 = 1;
        } else if (!strcmp(a, "--graph")) {
            o->x.graph = 1;
        } else if (!strcmp(a, "--resume")) {
            o->resume = 1;
        } else if (a[0] == '-' && a[1] == '-' && !val) {
            return dl_fail("%s: missing value (or unknown flag; see decodelab run --help)", a);
        } else if (!strcmp(a, "--variants")) {
            o->variants = argv[++i];
        } else if (!strcmp(a, "--out")) {
            o->out = argv[++i];
        } else if (!strcmp(a, "--save-outputs")) {
            o->x.save_dir = argv[++i];
            struct stat st;
            if (stat(o->x.save_dir, &st) != 0 || !S_ISDIR(st.st_mode))
                return dl_fail("--save-outputs: '%s' is not an existing directory", o->x.save_dir);
        } else if (!strcmp(a, "--max-time-s")) {
            DL_TRY(dl_parse_f64(a, argv[++i], &o->x.topt.max_time_s));
            if (!(o->x.topt.max_time_s > 0)) return dl_fail("%s: '%s' must be > 0", a, argv[i]);
        } else if (!strcmp(a, "--max-stdrel")) {
            DL_TRY(dl_parse_f64(a, argv[++i], &o->x.topt.max_stdrel));
            if (!(o->x.topt.max_stdrel > 0)) return dl_fail("%s: '%s' must be > 0", a, argv[i]);
        } else if (!strcmp(a, "--min-samples")) {
            DL_TRY(dl_parse_i64(a, argv[++i], 1, 1000000, &o->x.topt.min_samples));
            if (o->x.topt.max_samples < o->x.topt.min_samples) o->x.topt.max_samples = o->x.topt.min_samples;
        } else if (!strcmp(a, "--graph-launches")) {
            DL_TRY(dl_parse_i64(a, argv[++i], 1, 100000, &iv));
            o->x.graph_launches = (int)iv;
        } else if (!strcmp(a, "--chain")) {
            DL_TRY(dl_parse_i64(a, argv[++i], 2, DL_RUN_CHAIN_MAX, &iv));
            o->x.chain = (int)iv;
        } else if (!strcmp(a, "--peak-runs")) {
            DL_TRY(dl_parse_i64(a, argv[++i], 1, 10000, &iv));
            o->x.peak_runs = (int)iv;
        } else if (!strcmp(a, "--flush")) {
            const char *v = argv[++i];
            if (!strcmp(v, "write")) o->x.flush = DL_FLUSH_WRITE;
            else if (!strcmp(v, "read")) o->x.flush = DL_FLUSH_READ;
            else return dl_fail("--flush: '%s' is not write or read", v);
            o->flush_given = 1;
        } else if (!strcmp(a, "--splits")) {
            if (!strcmp(argv[++i], "auto")) o->x.splits = 0;
            else {
                DL_TRY(dl_parse_i64(a, argv[i], 1, 4096, &iv));
                o->x.splits = (int)iv;
            }
        } else {
            DL_TRY(dl_cli_file_arg("run", "golden file", a, &o->golden));
        }
    }
    if (!o->golden) return dl_fail("missing GOLDEN.h5 (see decodelab run --help)");
    if (o->resume && !o->out) return dl_fail("--resume: needs --out RESULTS.h5 (the table to resume)");
    if (o->flush_given && o->x.hot_l2)
        return dl_fail("--flush: '%s' cannot be combined with --hot-l2 (no flush between samples)",
                       o->x.flush == DL_FLUSH_READ ? "read" : "write");
    if (o->x.chain && o->x.graph) return dl_fail("--chain: '%d' cannot be combined with --graph", o->x.chain);
    if (o->x.chain && o->x.hot_l2)
        return dl_fail("--chain: '%d' cannot be combined with --hot-l2 (a chain is flushed once, before it)",
                       o->x.chain);
    if ((o->x.hot_l2 || o->x.graph || o->x.chain || o->flush_given || o->x.time_failed) && !o->x.time) o->x.time = 1;
    return 0;
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
        printf("%-18s   judged against the %s model for the kernel's schedule %s\n", "", r->model, r->model_schedule);
    if (r->plan_cta_tokens_max > 0 && r->plan_cta_tokens_mean > 0)
        printf("%-18s   plan balance: the busiest CTA holds %lld tokens (summed over its KV heads), %+.1f %% over the "
               "CTAs' mean of %.1f\n", "", (long long)r->plan_cta_tokens_max,
               100.0 * ((double)r->plan_cta_tokens_max / r->plan_cta_tokens_mean - 1.0), r->plan_cta_tokens_mean);
    if (r->model_o_flip_allow > 0.0 && r->model_o.head_excess < r->model_o.head_rel_l2)
        printf("%-18s   P-rounding flips allowed by the %s model: o limit +%.3g; per head judged beyond the "
               "allowance: %.3e\n", "", r->model, r->model_o_flip_allow, r->model_o.head_excess);
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
    if (dl_plan_check_env()) return dl_cli_error("run"); /* a bad knob stops the run before any file is read or written */
    /* the output checked before any work (no kernel runs for a table that cannot take the rows) */
    if (o.out && dl_results_check_out(o.out)) return dl_cli_error("run");
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
        if (dl_run_resume_filter(o.out, &g.c, dl_golden_inputs_hash(&g), o.x.splits, o.x.time ? dl_run_timing_mode(&o.x) : "none",
                                 o.x.time ? dl_run_flush_name(&o.x) : "none", sel, &nsel)) {
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
        printf("no CUDA device (%s): GPU variants skipped\n", dl_run_no_device_reason());
        printf("variants that would have run:\n");
        for (int i = 0; i < nsel; i++) {
            char reason[512] = "";
            int ok = sel[i]->supports(sel[i], &g.c.cfg, reason, sizeof reason);
            if (ok) ok = dl_run_params_ok(sel[i], &g.params, reason, sizeof reason);
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
        dl_run_fill_config(&rows[i], o.golden, &g.c, dl_golden_inputs_hash(&g));
        dl_run_fill_params(&rows[i], &g.params);
        dl_run_fill_variant(&rows[i], sel[i]);
        snprintf(rows[i].generator, sizeof rows[i].generator, "%s", dl_generator_string());
        snprintf(rows[i].clock_source, sizeof rows[i].clock_source, "not read");
    }
    if (dl_run_case(&o.x, &g, sel, nsel, rows, &any_fail)) {
        rc = dl_cli_error("run");
    } else {
        printf("\n");
        print_header(o.x.time);
        for (int i = 0; i < nsel; i++) print_row(&rows[i], o.x.time);
        if (o.x.time) {
            printf("timing: %s, flush %s; bytes = Q + K/V of the exact tokens (%lld B) + scales + page table + O + "
                   "LSE = %lld B; frac_ref = ref_read / median\n",
                   dl_run_timing_mode(&o.x), dl_run_flush_name(&o.x), (long long)rows[0].bytes_kv, (long long)rows[0].bytes_total);
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


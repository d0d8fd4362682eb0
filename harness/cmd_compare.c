/* cmd_compare.c - `decodelab compare`: score the output of a kernel that is not
 * ours (a candidate file, data/SCHEMA.md "The candidate file", e.g. written by
 * harness/baselines/flashinfer_decode.py) against a golden file with the same
 * comparison routine and thresholds as `decodelab run`, print the same kind
 * of table and append rows in the same results schema. Plain host code: no
 * GPU is needed. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "dl_candidate.h"
#include "dl_cli.h"
#include "dl_golden.h"
#include "dl_results.h"
#include "dl_run.h"

static void compare_help(FILE *f)
{
    fprintf(f,
            "usage: decodelab compare GOLDEN.h5 CANDIDATE.h5 [CANDIDATE.h5 ...] [--model M|none] [--out RESULTS.h5]\n"
            "       decodelab compare --golden-hash GOLDEN.h5\n\n"
            "Scores the output of any other program (a candidate file: o [B,Hq,D] and optionally lse [B,Hq],\n"
            "with attributes naming the producer, its backend, its settings and its timing; see data/SCHEMA.md,\n"
            "\"The candidate file\") against the golden file, with the comparison routine and limits of\n"
            "decodelab run: against the golden model the candidate claims (attribute model): PASS or FAIL on the\n"
            "model's implementation limits (global and per-(request, head) rel L2 of o, max lse error; a bf16/f16\n"
            "o widens the o limits by its unit roundoff; beyond 1024 tokens they grow by sqrt(L / 1024)); and\n"
            "against exact: the precision, within or above the model's expected band (never a FAIL). A candidate\n"
            "that claims no model is judged by the band of its compute attribute (fp32, bf16, fp8), else of bf16:\n"
            "PASS within, FAIL above, o widened by its roundoff as above, and every (request, head) row within 5x\n"
            "the band's o (a zeroed or swapped head fails). A golden file made with --kv-order reverse judges a\n"
            "candidate claiming an emulated model by that model's band (no forward kernel computes its order).\n"
            "A log2 LSE (lse_base \"2\", FlashInfer's) is converted to the natural log.\n"
            "The candidate must name the golden file's input hash (golden_hash): one made for another\n"
            "golden file is refused.\n\n"
            "  --model M|none      override the candidate's claimed model (exact, fp32, bf16, fp8, fp8acc, bf16simt,\n"
            "                      fp8wg, fp8accwg; none = exact only)\n"
            "  --out RESULTS.h5    append one row per candidate (variant ext:<producer>:<backend>) to RESULTS.h5\n"
            "                      and its twin RESULTS.csv, atomically, in the results schema of decodelab run\n"
            "                      (checked first: an existing RESULTS.h5 or RESULTS.csv must be a results table's;\n"
            "                      a RESULTS.csv whose .h5 was lost keeps its rows)\n"
            "  --golden-hash       print the golden file's input hash (fnv1a64:...) and exit, for producers\n\n"
            "exit status: 0 every candidate PASS, 1 one FAILed, 2 bad input (one line naming the file,\n"
            "the field and the value; nothing written).\n");
}

typedef struct {
    const char *golden, *out, *model;
    const char *cands[64];
    int ncands, hash_only;
} cmp_opts;

enum { O_HELP = 'h', O_HASH = 256, O_OUT, O_MODEL };

static const struct option compare_opts[] = {
    {"help", no_argument, 0, O_HELP},
    {"golden-hash", no_argument, 0, O_HASH},
    {"out", required_argument, 0, O_OUT},
    {"model", required_argument, 0, O_MODEL},
    {0, 0, 0, 0},
};

/* 0 ok, 1 help printed, -1 error (recorded). */
static int parse_compare(int argc, char **argv, cmp_opts *o)
{
    const int max = (int)(sizeof o->cands / sizeof o->cands[0]);
    memset(o, 0, sizeof *o);
    opterr = 0;
    optind = 0;
    for (int code; (code = getopt_long(argc, argv, ":h", compare_opts, NULL)) != -1;) {
        switch (code) {
        case O_HELP: compare_help(stdout); return 1;
        case O_HASH: o->hash_only = 1; break;
        case O_OUT: o->out = optarg; break;
        case O_MODEL: o->model = optarg; break;
        default: return dl_cli_getopt_fail("compare", code, argv);
        }
    }
    /* the files, in order: GOLDEN.h5, then the candidates */
    if (optind < argc) o->golden = argv[optind++];
    if (argc - optind > max) return dl_fail("more than %d candidate files", max);
    while (optind < argc) o->cands[o->ncands++] = argv[optind++];
    if (!o->golden) return dl_fail("missing GOLDEN.h5 (see decodelab compare --help)");
    if (o->hash_only) {
        if (o->ncands) return dl_fail("--golden-hash takes only GOLDEN.h5, got also '%s'", o->cands[0]);
        return 0;
    }
    if (!o->ncands) return dl_fail("missing CANDIDATE.h5 (see decodelab compare --help)");
    if (o->model && strcmp(o->model, "none") && !dl_candidate_model_ok(o->model))
        return dl_fail("--model: '%s' is not a golden model other than orig (decodelab golden --help) or none", o->model);
    return 0;
}

static void print_header(void)
{
    printf("%-40s %-7s %-6s %11s %11s %11s | %11s %-14s | %10s %10s %10s %7s %6s %8s %6s\n", "variant", "verdict",
           "model", "o_relL2", "o_head", "lse_abs", "o_relL2/ex", "precision", "median_us", "min_us", "max_us",
           "stdrel%", "n", "GB/s", "%peak");
}

static void print_row(const dl_result_row *r)
{
    printf("%-40s %-7s %-6s %11.3e %11.3e %11.3e | %11.3e %-14s |", r->variant, r->verdict, r->model,
           r->model_o.rel_l2, r->model_o.head_rel_l2, r->model_lse.max_abs, r->exact_o.rel_l2, r->verdict_exact);
    if (!isnan(r->time_median_s))
        printf(" %10.2f %10.2f %10.2f %7.3f %6lld %8.1f %6.1f%s\n", 1e6 * r->time_median_s, 1e6 * r->time_min_s,
               1e6 * r->time_max_s, 100 * r->time_stdrel, (long long)r->time_samples, r->gbps, 100 * r->frac_peak,
               r->time_converged == 0 ? " NOT CONVERGED" : "");
    else
        printf(" %10s\n", "not timed");
    printf("%-40s   %s\n", "", r->reason);
    if (!isnan(r->limit_o_rel_l2)) /* a model's limits, or the band's when no model judges */
        printf("%-40s   limits: o rel L2 %.3g, per head %.3g, lse %.3g; worst head: row %lld (b=%lld h=%lld)\n", "",
               r->limit_o_rel_l2, r->limit_o_head_rel_l2, r->limit_lse_abs, (long long)r->model_o.head_worst,
               r->model_o.head_worst >= 0 ? (long long)(r->model_o.head_worst / r->num_qo_heads) : -1LL,
               r->model_o.head_worst >= 0 ? (long long)(r->model_o.head_worst % r->num_qo_heads) : -1LL);
    if (r->model_o.nonfinite > 0 || r->model_lse.nonfinite > 0)
        printf("%-40s   o: %lld non-finite; lse: %lld non-finite\n", "", (long long)r->model_o.nonfinite,
               (long long)r->model_lse.nonfinite);
}

int dl_cmd_compare(int argc, char **argv)
{
    cmp_opts o;
    int prc = parse_compare(argc, argv, &o);
    if (prc == 1) return 0;
    if (prc) return dl_cli_error("compare");
    /* the output checked before any scoring: a table that cannot take the rows fails now */
    if (o.out && !o.hash_only && dl_results_check_out(o.out)) return dl_cli_error("compare");
    dl_golden g;
    memset(&g, 0, sizeof g);
    if (dl_golden_read(o.golden, &g)) return dl_cli_error("compare");
    if (o.hash_only) {
        char h[32];
        dl_run_hash_string(dl_golden_inputs_hash(&g), h, sizeof h);
        printf("%s\n", h);
        dl_golden_free(&g);
        return 0;
    }
    dl_result_row *rows = calloc((size_t)o.ncands, sizeof *rows);
    if (!rows) {
        dl_golden_free(&g);
        dl_fail("out of memory for %d result rows", o.ncands);
        return dl_cli_error("compare");
    }
    int rc = 0, any_fail = 0;
    /* validate and score every candidate before anything is printed or written */
    for (int i = 0; i < o.ncands && !rc; i++) {
        dl_candidate c;
        dl_result_row_init(&rows[i]);
        dl_result_row_stamp(&rows[i]);
        if (dl_candidate_read(o.cands[i], &g, &c)) {
            rc = dl_cli_error("compare");
            break;
        }
        if (dl_candidate_score(&g, o.golden, &c, o.cands[i], o.model, &rows[i])) rc = dl_cli_error("compare");
        dl_candidate_free(&c);
        if (!strcmp(rows[i].verdict, "FAIL")) any_fail = 1;
    }
    if (!rc) {
        char name[512];
        dl_config_name(&g.c.cfg, name, sizeof name);
        printf("golden: %s\ncase:   %s\n\n", o.golden, name);
        print_header();
        for (int i = 0; i < o.ncands; i++) print_row(&rows[i]);
        printf("bytes = Q + K/V of the exact tokens (%lld B) + scales + page table + O + LSE = %lld B\n",
               (long long)rows[0].bytes_kv, (long long)rows[0].bytes_total);
        if (o.out) {
            if (dl_results_append(o.out, rows, o.ncands)) rc = dl_cli_error("compare");
            else {
                char csv[4200];
                dl_results_csv_path(o.out, csv, sizeof csv);
                printf("results: %d rows appended to %s and %s\n", o.ncands, o.out, csv);
            }
        }
    }
    free(rows);
    dl_golden_free(&g);
    if (rc) return rc;
    return any_fail ? 1 : 0;
}

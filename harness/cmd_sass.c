/* cmd_sass.c - `decodelab sass`: the instruction census of the variants'
 * kernels. Disassembles a binary (by default this very executable) with
 * cuobjdump -sass, counts instruction classes per kernel instantiation, maps
 * kernels to variants by the registry's kernel globs, prints a table and
 * optionally appends the census to a CSV table (data/SCHEMA.md). With --forms it also names the
 * full instruction forms (opcode with modifiers: HFMA2.MMA apart from HFMA2) of each kernel shown
 * (issue 13, E2); --kernels GLOB shows any kernel by its name (e.g. the probes, 'e2_probe*'); --base compares
 * each kernel with the same instantiation in another build (registers, stack, instructions, hot loop). */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../gpu/dl_registry.h"
#include "cli_util.h"
#include "dl_census.h"
#include "dl_cli.h"
#include "dl_proc.h"
#include "dl_results.h"

static void sass_help(FILE *f)
{
    fprintf(f,
            "usage: decodelab sass [--binary PATH] [--variants GLOB[,GLOB]] [--kernels GLOB] [--out CENSUS.csv]\n"
            "                      [--all] [--forms] [--loop] [--base OTHER]\n\n"
            "Disassembles the GPU kernels of PATH (default: this decodelab executable) with\n"
            "`cuobjdump -sass` and counts, per kernel instantiation, the instruction classes:\n"
            "  tensor   HMMA HGMMA QGMMA IMMA       fp32     FFMA FMUL FADD\n"
            "  packed16 HFMA2 HMUL2 HADD2          conv     F2F F2FP I2F F2I\n"
            "  bytebit  PRMT LOP3 SHF              mem      LDG LDGSTS LDS STS LDSM UTMALDG\n"
            "  mufu     MUFU\n"
            "Kernels are mapped to variants by the glob in each registry row (decodelab list).\n"
            "cuobjdump is looked for on PATH, then in $CUDA_HOME/bin and /usr/local/cuda/bin, then at\n"
            "the path in $DL_CUOBJDUMP (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm provides\n"
            "both tools under site-packages/nvidia/cu13/bin). With --variants or --kernels only the kernels\n"
            "they select are disassembled (seconds; all of them: ~30 s on two cores).\n\n"
            "  --variants GLOB   only these variants (default all)\n"
            "  --all             also list kernels no variant claims (merge, calibration kernels)\n"
            "  --kernels GLOB    list the kernels whose demangled name matches GLOB (fnmatch), claimed or not,\n"
            "                    instead of the variants' (e.g. --kernels 'e2_probe*': decodelab probe)\n"
            "  --forms           also print, per kernel listed, every instruction form with its modifiers (the\n"
            "                    census above counts base opcodes: HFMA2.MMA and HFMA2 are both HFMA2), one\n"
            "                    tab-separated line each: form, kernel, FORM, count, rz_moves (HFMA2 whose\n"
            "                    multiplicands are -RZ and RZ: a move of the addend), the first instance;\n"
            "                    with --out, also one row per kernel and form (metric form:<FORM>)\n"
            "  --loop            also print, per kernel listed, its hot loop: of the spans from a backward\n"
            "                    branch's target to the branch that hold tensor instructions (none: fp32 +\n"
            "                    packed16 ones), the innermost, then the one with the most, then the shortest\n"
            "                    (a tile loop, not the loop around it); its instructions by class, counted\n"
            "                    statically (every path once, those a full tile skips included); stall_cycles,\n"
            "                    the cycles its control codes make a warp wait after each instruction, summed\n"
            "                    (a floor on one warp's time through it; '-' if the listing lacks them);\n"
            "                    sb_waits, its instructions that wait on a variable-latency result;\n"
            "                    zeroing, those of total in blocks that a predicated forward branch skips\n"
            "                    and that store RZ to shared memory with no tensor instruction (a partial\n"
            "                    tile's zeroing: total - zeroing is nearer a full tile's path). One\n"
            "                    tab-separated line each: loop, variant, kernel, first and branch address,\n"
            "                    total, the classes, stall_cycles, sb_waits, zeroing; with --out, also the\n"
            "                    rows loop:total, loop:class:<name>, loop:stall_cycles,\n"
            "                    loop:scoreboard_waits, loop:zeroing\n"
            "  --base OTHER      compare with another build (a decodelab binary, an object or a cubin): per kernel\n"
            "                    listed, the same instantiation in OTHER (by demangled name), its registers and\n"
            "                    stack bytes a thread (cuobjdump -res-usage), instructions, and with --loop its hot\n"
            "                    loop's instructions, stall cycles and scoreboard waits, written 'OTHER>this' where\n"
            "                    they differ (stall cycles with the change in %%), once where equal. One\n"
            "                    tab-separated line each: compare, variant, kernel, regs, stack, total, loop_total,\n"
            "                    stall_cycles, sb_waits; kernels in one of the two only are named, and a line\n"
            "                    counts the kernels that differ\n"
            "  --out FILE.csv    append the census rows (one per variant, kernel and class/opcode) to FILE.csv\n\n"
            "exit status: 0 ok, 2 bad usage or cuobjdump missing/failing.\n");
}

/* "void (anonymous namespace)::simt_decode_kernel<128, (dl_dtype)3, true>(dl_gpu_args, int)"
 * -> "simt_decode_kernel<128,e4m3,true>" */
static void short_name(const char *name, char *buf, size_t n)
{
    const char *p = name;
    if (!strncmp(p, "void ", 5)) p += 5;
    const char *ns = strstr(p, "::");
    const char *lt = strchr(p, '<'), *par = strchr(p, '(');
    while (ns && (!lt || ns < lt) && (!par || ns < par || !strncmp(p, "(anonymous namespace)", 21))) {
        p = ns + 2;
        ns = strstr(p, "::");
        lt = strchr(p, '<');
        par = strchr(p, '(');
    }
    size_t k = 0;
    int depth = 0;
    for (; *p && k + 8 < n; p++) {
        if (*p == '(' && depth == 0) break;
        if (*p == '<') depth++;
        if (*p == '>') depth--;
        if (*p == ' ') continue;
        if (!strncmp(p, "(dl_dtype)", 10)) {
            int v = atoi(p + 10);
            const char *dn = (v >= 0 && v < DL_DTYPE_COUNT) ? dl_dtype_name((dl_dtype)v) : "?";
            k += (size_t)snprintf(buf + k, n - k, "%s", dn);
            p += 10;
            while (p[1] >= '0' && p[1] <= '9') p++;
            continue;
        }
        buf[k++] = *p;
    }
    buf[k] = 0;
}

static void print_line(const char *variant, const dl_census_kernel *k)
{
    char sn[160];
    short_name(k->name, sn, sizeof sn);
    printf("%-16s %-40s %6lld", variant, sn, (long long)k->total);
    for (int c = 0; c < DL_CLS_COUNT; c++) printf(" %8lld", (long long)k->cls[c]);
    printf("\n");
}

/* The forms of k, largest count first: "form<TAB>kernel<TAB>FORM<TAB>count<TAB>rz_moves<TAB>example". */
static void print_forms(const char *variant, const dl_census_kernel *k)
{
    char sn[160];
    short_name(k->name, sn, sizeof sn);
    const dl_census_form **v = dl_census_forms_sorted(k);
    for (int j = 0; v && j < k->nforms; j++)
        printf("form\t%s\t%s\t%lld\t%lld\t%s\n", sn, v[j]->form, (long long)v[j]->count, (long long)v[j]->rz_moves,
               v[j]->example);
    (void)variant;
    free(v);
}

/* The hot loop of k (dl_census.h): "loop<TAB>variant<TAB>kernel<TAB>first<TAB>branch<TAB>total<TAB>classes...
 * <TAB>stall_cycles<TAB>sb_waits<TAB>zeroing", or "loop<TAB>variant<TAB>kernel<TAB>none" without a backward branch. */
static void print_loop(const char *variant, const dl_census_kernel *k)
{
    char sn[160];
    short_name(k->name, sn, sizeof sn);
    const dl_census_loop *L = &k->loop;
    if (!L->found) {
        printf("loop\t%s\t%s\tnone\n", variant, sn);
        return;
    }
    printf("loop\t%s\t%s\t0x%x\t0x%x\t%lld", variant, sn, L->first, L->branch, (long long)L->total);
    for (int c = 0; c < DL_CLS_COUNT; c++) printf("\t%lld", (long long)L->cls[c]);
    if (L->stall < 0) printf("\t-");
    else printf("\t%lld", (long long)L->stall);
    printf("\t%lld\t%lld\n", (long long)L->sb_waits, (long long)L->zeroing);
}

/* "a" where a == b, else "a>b", with the change in % when pct (a > 0); "?" for an unknown (-1) value. Returns
 * whether they differ. */
static int pair(char *buf, size_t n, int64_t a, int64_t b, int pct)
{
    if (a < 0 || b < 0) {
        char x[24] = "?", y[24] = "?";
        if (a >= 0) snprintf(x, sizeof x, "%lld", (long long)a);
        if (b >= 0) snprintf(y, sizeof y, "%lld", (long long)b);
        snprintf(buf, n, "%s>%s", x, y);
    } else if (a == b) {
        snprintf(buf, n, "%lld", (long long)a);
    } else if (pct && a > 0) {
        snprintf(buf, n, "%lld>%lld (%+.1f%%)", (long long)a, (long long)b, 100.0 * (double)(b - a) / (double)a);
    } else {
        snprintf(buf, n, "%lld>%lld", (long long)a, (long long)b);
    }
    return a != b;
}

/* The compare line of kernel k (this binary) against o, its instantiation in the base (--base); returns 1 when
 * they differ in registers, stack or instructions, or in the hot loop's figures when loop is set. */
static int print_compare(const char *variant, const dl_census_kernel *o, const dl_census_kernel *k, int loop)
{
    char sn[160], r[32], st[32], t[64], lt[64], ls[64], lw[64];
    short_name(k->name, sn, sizeof sn);
    int differ = pair(r, sizeof r, o->regs, k->regs, 0) | pair(st, sizeof st, o->stack, k->stack, 0) |
                 pair(t, sizeof t, o->total, k->total, 0);
    if (loop && o->loop.found && k->loop.found) {
        differ |= pair(lt, sizeof lt, o->loop.total, k->loop.total, 0) |
                  pair(ls, sizeof ls, o->loop.stall, k->loop.stall, 1) |
                  pair(lw, sizeof lw, o->loop.sb_waits, k->loop.sb_waits, 0);
    } else {
        snprintf(lt, sizeof lt, "%s", !loop ? "" : o->loop.found == k->loop.found ? "none" : "found in one only");
        ls[0] = lw[0] = 0;
        differ |= loop && o->loop.found != k->loop.found;
    }
    printf("compare\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", variant, sn, r, st, t, lt, ls, lw);
    return differ;
}

enum { O_HELP = 'h', O_ALL = 256, O_FORMS, O_LOOP, O_BINARY, O_OUT, O_VARIANTS, O_KERNELS, O_BASE };

static const struct option sass_opts[] = {
    {"help", no_argument, 0, O_HELP},
    {"all", no_argument, 0, O_ALL},
    {"forms", no_argument, 0, O_FORMS},
    {"loop", no_argument, 0, O_LOOP},
    {"binary", required_argument, 0, O_BINARY},
    {"out", required_argument, 0, O_OUT},
    {"variants", required_argument, 0, O_VARIANTS},
    {"kernels", required_argument, 0, O_KERNELS},
    {"base", required_argument, 0, O_BASE},
    {0, 0, 0, 0},
};

typedef struct {
    const char *binary, *out, *globs, *kglob, *base;
    int all, forms, loop;
} sass_args;

/* Whether the listing needs kernel `name` (dl_census_disassemble_only): --kernels' glob, else a kernel of a variant
 * --variants selects. */
static int sass_keeps(const char *name, void *ctx)
{
    const sass_args *a = ctx;
    if (a->kglob) return fnmatch(a->kglob, name, 0) == 0;
    for (int v = 0; v < dl_num_variants; v++)
        if (dl_variant_matches(&dl_variants[v], a->globs) && dl_census_kernel_matches(dl_variants[v].kernel, name))
            return 1;
    return 0;
}

/* 0 ok, 1 help printed, -1 error (recorded). */
static int parse_sass(int argc, char **argv, sass_args *a)
{
    memset(a, 0, sizeof *a);
    opterr = 0;
    optind = 0;
    for (int code, li = -1; (code = getopt_long(argc, argv, ":h", sass_opts, &li)) != -1;) {
        if (code >= O_BINARY && !optarg[0]) return dl_fail("--%s: '' is empty", sass_opts[li].name);
        switch (code) {
        case O_HELP: sass_help(stdout); return 1;
        case O_ALL: a->all = 1; break;
        case O_FORMS: a->forms = 1; break;
        case O_LOOP: a->loop = 1; break;
        case O_BINARY: a->binary = optarg; break;
        case O_OUT: a->out = optarg; break;
        case O_VARIANTS: a->globs = optarg; break;
        case O_KERNELS: a->kglob = optarg; break;
        case O_BASE: a->base = optarg; break;
        default: return dl_cli_getopt_fail("sass", code, argv);
        }
    }
    if (optind < argc) return dl_fail("unexpected argument '%s' (see decodelab sass --help)", argv[optind]);
    return 0;
}

int dl_cmd_sass(int argc, char **argv)
{
    sass_args a;
    int rc = parse_sass(argc, argv, &a);
    if (rc == 1) return 0;
    if (rc) return dl_cli_error("sass");
    char self[4096];
    if (!a.binary) {
        if (dl_proc_self_exe(self, sizeof self)) return dl_cli_error("sass");
        a.binary = self;
    }
    if (a.globs) {
        int hit = 0;
        for (int v = 0; v < dl_num_variants; v++) hit |= dl_variant_matches(&dl_variants[v], a.globs);
        if (!hit) {
            dl_fail("--variants: '%s' selects no variant (see decodelab list)", a.globs);
            return dl_cli_error("sass");
        }
    }
    if (a.out && dl_check_dir_of("census", a.out)) /* its directory, before the disassembly (tens of seconds) */
        return dl_cli_error("sass");
    if (a.base && access(a.base, R_OK) != 0) { /* likewise */
        dl_fail("--base '%s': %s", a.base, strerror(errno));
        return dl_cli_error("sass");
    }
    dl_census c, b;
    memset(&c, 0, sizeof c);
    memset(&b, 0, sizeof b);
    /* every kernel for --all or all variants; else those listed alone (a few seconds instead of ~30) */
    dl_census_keep_fn only = !a.all && (a.kglob || a.globs) ? sass_keeps : NULL;
    if (dl_census_disassemble_only(a.binary, only, &a, &c) || (a.base && dl_census_disassemble_only(a.base, only, &a, &b))) {
        dl_census_free(&c);
        dl_census_free(&b);
        return dl_cli_error("sass");
    }
    printf("binary: %s\ntool:   %s\nkernels: %d", a.binary, c.tool, c.in_binary);
    if (c.n < c.in_binary) printf(" (%d disassembled: those --%s selects)", c.n, a.kglob ? "kernels" : "variants");
    printf("\n");
    if (a.base) printf("base:   %s (kernels: %d)\n", a.base, b.in_binary);
    printf("\n");
    printf("%-16s %-40s %6s", "variant", "kernel", "total");
    for (int k = 0; k < DL_CLS_COUNT; k++) printf(" %8s", dl_census_class_name(k));
    printf("\n");
    int shown = 0;
    /* the kernels listed, in order, with the variant they are listed under (for --forms) */
    const dl_census_kernel **listed = calloc((size_t)(c.n > 0 ? c.n : 1) * (size_t)(dl_num_variants + 1), sizeof *listed);
    const char **listed_as = calloc((size_t)(c.n > 0 ? c.n : 1) * (size_t)(dl_num_variants + 1), sizeof *listed_as);
    int nlisted = 0;
    if (!listed || !listed_as) {
        free(listed);
        free(listed_as);
        dl_census_free(&c);
        dl_fail("sass: out of memory");
        return dl_cli_error("sass");
    }
#define LIST(var, k) do { print_line(var, k); listed[nlisted] = k; listed_as[nlisted++] = var; } while (0)
    if (a.kglob) {
        for (int i = 0; i < c.n; i++) {
            if (fnmatch(a.kglob, c.k[i].name, 0)) continue;
            const char *as = "-";
            for (int v = 0; v < dl_num_variants; v++)
                if (dl_census_kernel_matches(dl_variants[v].kernel, c.k[i].name)) {
                    as = dl_variants[v].name;
                    break;
                }
            LIST(as, &c.k[i]);
            shown++;
        }
        if (!shown) printf("no kernel of %s matches --kernels '%s'\n", a.binary, a.kglob);
    } else {
        for (int v = 0; v < dl_num_variants; v++) {
            const dl_variant *var = &dl_variants[v];
            if (a.globs && !dl_variant_matches(var, a.globs)) continue;
            int any = 0;
            for (int i = 0; i < c.n; i++)
                if (dl_census_kernel_matches(var->kernel, c.k[i].name)) {
                    LIST(var->name, &c.k[i]);
                    any = 1;
                    shown++;
                }
            if (!any)
                printf("%-16s %s\n", var->name,
                       var->kernel ? "no kernel in this binary matches its glob (built without CUDA?)"
                                   : "no kernel glob in its registry row");
        }
        if (a.all)
            for (int i = 0; i < c.n; i++) {
                int m = 0;
                for (int v = 0; v < dl_num_variants; v++) m |= dl_census_kernel_matches(dl_variants[v].kernel, c.k[i].name);
                if (!m) LIST("-", &c.k[i]);
            }
    }
#undef LIST
    if (a.forms && nlisted) {
        printf("\n#form\tkernel\tFORM\tcount\trz_moves\tfirst instance\n");
        for (int j = 0; j < nlisted; j++) print_forms(listed_as[j], listed[j]);
    }
    if (a.loop && nlisted) {
        printf("\n#loop\tvariant\tkernel\tfirst\tbranch\ttotal");
        for (int k = 0; k < DL_CLS_COUNT; k++) printf("\t%s", dl_census_class_name(k));
        printf("\tstall_cycles\tsb_waits\tzeroing\n");
        for (int j = 0; j < nlisted; j++) print_loop(listed_as[j], listed[j]);
    }
    if (a.base && nlisted) {
        printf("\n#compare\tvariant\tkernel\tregs\tstack\ttotal\tloop_total\tstall_cycles\tsb_waits"
               "\t(base>this binary: %s>%s)\n", a.base, a.binary);
        int differ = 0, only_here = 0, only_base = 0;
        for (int j = 0; j < nlisted; j++) {
            const dl_census_kernel *o = dl_census_find(&b, listed[j]->name);
            if (o) {
                differ += print_compare(listed_as[j], o, listed[j], a.loop);
            } else {
                char sn[160];
                short_name(listed[j]->name, sn, sizeof sn);
                printf("compare\t%s\t%s\tnot in the base\n", listed_as[j], sn);
                only_here++;
            }
        }
        /* the base's kernels that this selection would list and this binary lacks */
        for (int i = 0; i < b.n; i++) {
            if (dl_census_find(&c, b.k[i].name)) continue;
            const char *as = NULL;
            if (a.kglob) {
                if (!fnmatch(a.kglob, b.k[i].name, 0)) as = "-";
            } else {
                for (int v = 0; v < dl_num_variants && !as; v++)
                    if ((!a.globs || dl_variant_matches(&dl_variants[v], a.globs)) &&
                        dl_census_kernel_matches(dl_variants[v].kernel, b.k[i].name))
                        as = dl_variants[v].name;
            }
            if (!as) continue;
            char sn[160];
            short_name(b.k[i].name, sn, sizeof sn);
            printf("compare\t%s\t%s\tonly in the base\n", as, sn);
            only_base++;
        }
        printf("compare: %d kernels listed, %d differ, %d not in the base, %d only in the base (differ: in registers, "
               "stack or instructions%s)\n", nlisted, differ, only_here, only_base, a.loop ? ", or the hot loop's figures" : "");
    }
    rc = 0;
    if (a.out) {
        dl_census_row *rows = NULL;
        int64_t n = 0;
        if (dl_census_rows(&c, &rows, &n) || dl_census_append(a.out, rows, n)) rc = dl_cli_error("sass");
        else printf("\ncensus: %lld rows appended to %s\n", (long long)n, a.out);
        free(rows);
        rows = NULL;
        if (!rc && a.forms) {
            /* the form rows of the kernels listed (a kernel listed under several variants once each) */
            if (dl_census_form_rows(&c, a.kglob, &rows, &n)) rc = dl_cli_error("sass");
            int64_t keep = 0;
            for (int64_t r = 0; !rc && r < n; r++) {
                int in = 0;
                for (int j = 0; j < nlisted && !in; j++)
                    in = !strcmp(rows[r].kernel, listed[j]->name) && !strcmp(rows[r].variant, listed_as[j]);
                if (in) rows[keep++] = rows[r];
            }
            if (!rc && dl_census_append(a.out, rows, keep)) rc = dl_cli_error("sass");
            else if (!rc) printf("census: %lld form rows appended to %s\n", (long long)keep, a.out);
            free(rows);
        }
        if (!rc && a.loop) {
            rows = calloc((size_t)(nlisted > 0 ? nlisted : 1) * DL_CENSUS_LOOP_ROWS, sizeof *rows);
            n = 0;
            if (!rows) {
                dl_fail("sass: out of memory");
                rc = dl_cli_error("sass");
            }
            for (int j = 0; !rc && j < nlisted; j++) n += dl_census_loop_rows(&c, listed[j], listed_as[j], rows + n);
            if (!rc && dl_census_append(a.out, rows, n)) rc = dl_cli_error("sass");
            else if (!rc) printf("census: %lld loop rows appended to %s\n", (long long)n, a.out);
            free(rows);
        }
    }
    free(listed);
    free(listed_as);
    if (!rc && shown == 0) printf("\nno variant kernel found in %s\n", a.binary);
    dl_census_free(&c);
    dl_census_free(&b);
    return rc;
}

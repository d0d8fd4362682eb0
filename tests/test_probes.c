/* test_probes.c - Check suite for the E2 probe kernels (gpu/e2_probes.cu, gpu/dl_probes.def;
 * issue 13 item 2) and the form census that names them (harness/census.c, `decodelab sass
 * --forms`): the form parser on a hand-written listing, the probe table, `decodelab probe`, and -
 * on the real build/gpu/e2_probes.o - that every probe kernel holds exactly the instruction forms
 * and counts its row promises, in straight-line code (so that static count = executed count, which
 * tests/gpu/e2_probes_job.sh relies on when it divides Nsight Compute's counters by the warps).
 * Needs cuobjdump (+ nvdisasm) for the disassembly tests; without it they SKIP, printing why,
 * as tests/test_census.c does. Also the wgmma accumulator probes (issue 12): the FP8 model against
 * the H200's committed table, and the BF16 (HGMMA) probe's cases, random inputs, model family
 * (worked by hand), CLI and kernels (HGMMA in the SASS, no spills). */
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../gpu/dl_probes.h"
#include "../ref/dl_common.h"
#include "../ref/dl_formats.h"
#include "../ref/dl_ref.h"
#include "../ref/dl_rng.h"
#include "../harness/dl_census.h"
#include "dl_test.h"

#ifndef DL_HAVE_CUDA
#define DL_HAVE_CUDA 0
#endif

/* ---------------------------------------------------------------- form parser */

static const char *listing =
    "\tcode for sm_90a\n\t\tFunction : e2_probe_x\n"
    "        /*0000*/                   HFMA2.MMA R7, -RZ, RZ, 1.005859375, 1.00390625 ; /* 0x1 */\n"
    "        /*0010*/                   HFMA2.MMA R2, R2, R3, R4 ;   /* 0x2 */\n"
    "        /*0020*/               @P0 HFMA2 R2, R2, R3, R4 ;   /* 0x3 */\n"
    "                                                                /* 0x000fe20000000800 */\n"
    "        /*0030*/                   HFMA2.MMA.BF16_V2 R2, R2, R3, -RZ ;   /* 0x4 */\n"
    "        /*0040*/                   F2FP.BF16.F32.PACK_AB R0, R1, R2 ; /* 0x5 */\n"
    "        /*0050*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ; /* 0x6 */\n"
    "        /*0060*/                   EXIT ;  /* 0x7 */\n";

START_TEST(test_forms_listing)
{
    dl_census c;
    dl_test_census_parse(listing, &c);
    ck_assert_int_eq(c.n, 1);
    const dl_census_kernel *k = &c.k[0];
    ck_assert_int_eq(k->total, 7);
    /* the base census folds HFMA2.MMA, HFMA2 and HFMA2.MMA.BF16_V2 together; the forms do not */
    ck_assert_int_eq(k->op[dl_census_opcode_index("HFMA2")], 4);
    ck_assert_int_eq(k->nforms, 6);
    ck_assert_int_eq(dl_census_form_count(k, "HFMA2.MMA"), 2);
    ck_assert_int_eq(dl_census_form_count(k, "HFMA2"), 1); /* the predicated one */
    ck_assert_int_eq(dl_census_form_count(k, "HFMA2.MMA*"), 3);
    ck_assert_int_eq(dl_census_form_count(k, "HMMA.*|HFMA2.MMA*"), 4);
    ck_assert_int_eq(dl_census_form_count(k, "F2FP.BF16.F32.PACK_AB"), 1);
    ck_assert_int_eq(dl_census_form_count(k, "F2FP"), 0); /* whole forms, not prefixes */
    int64_t sum = 0, moves = 0;
    for (int j = 0; j < k->nforms; j++) {
        sum += k->forms[j].count;
        moves += k->forms[j].rz_moves;
        if (!strcmp(k->forms[j].form, "HFMA2.MMA")) {
            ck_assert_int_eq(k->forms[j].rz_moves, 1); /* -RZ, RZ: a constant move; R2, R3: arithmetic */
            ck_assert_str_eq(k->forms[j].example, "HFMA2.MMA R7, -RZ, RZ, 1.005859375, 1.00390625");
        }
    }
    ck_assert_int_eq(sum, k->total);
    ck_assert_int_eq(moves, 1); /* "R2, R3, -RZ" is not a move: only the multiplicands count */
    const dl_census_form **v = dl_census_forms_sorted(k);
    ck_assert_ptr_nonnull(v);
    ck_assert_str_eq(v[0]->form, "HFMA2.MMA"); /* largest count first */
    free(v);
    dl_census_row *rows = NULL;
    int64_t n = 0;
    ck_assert_int_eq(dl_census_form_rows(&c, NULL, &rows, &n), 0);
    ck_assert_int_eq(n, 6);
    ck_assert_str_eq(rows[0].metric, "form:HFMA2.MMA");
    ck_assert_str_eq(rows[0].variant, "-");
    ck_assert(rows[0].value == 2);
    free(rows);
    ck_assert_int_eq(dl_census_form_rows(&c, "nothing*", &rows, &n), 0);
    ck_assert_int_eq(n, 0);
    free(rows);
    dl_census_free(&c);
}
END_TEST

/* wgmma forms keep their shape: HGMMA.64x8x16.F32.BF16, not HGMMA.64 (the x between digits) */
START_TEST(test_forms_wgmma_shape)
{
    static const char *wg = "\tcode for sm_90a\n\t\tFunction : k\n"
                            "        /*0000*/                   HGMMA.64x8x16.F32.BF16 R24, gdesc[UR8], R24, !UP0 ; /* 0x1 */\n"
                            "        /*0010*/                   HGMMA.64x8x16.F32.BF16 R24, gdesc[UR8], R24, gsb0 ; /* 0x2 */\n"
                            "        /*0020*/                   QGMMA.64x8x32.F32.E4M3.E4M3 R24, gdesc[UR4], R24 ; /* 0x3 */\n"
                            "        /*0030*/                   MOV R1, 0x1 ; /* 0x4 */\n";
    dl_census c;
    dl_test_census_parse(wg, &c);
    ck_assert_int_eq(c.n, 1);
    const dl_census_kernel *k = &c.k[0];
    ck_assert_int_eq(dl_census_form_count(k, "HGMMA.64x8x16.F32.BF16"), 2);
    ck_assert_int_eq(dl_census_form_count(k, "QGMMA.64x8x32.F32.E4M3.E4M3"), 1);
    ck_assert_int_eq(dl_census_form_count(k, "HGMMA.64"), 0);
    ck_assert_int_eq(k->op[dl_census_opcode_index("HGMMA")], 2);
    ck_assert_int_eq(k->nforms, 3);
    dl_census_free(&c);
}
END_TEST

/* ---------------------------------------------------------------- the table and the CLI */

START_TEST(test_probe_table)
{
    ck_assert_int_ge(dl_num_probes, 10);
    int hmma = 0;
    for (int i = 0; i < dl_num_probes; i++) {
        const dl_probe *p = &dl_probes[i];
        char want[96];
        snprintf(want, sizeof want, "e2_probe_%s", p->name);
        ck_assert_str_eq(p->kernel, want);
        ck_assert_int_eq(dl_probe_find(p->name), i); /* names are unique */
        ck_assert_msg(p->count > 0 && p->form[0] && p->ptx[0] && p->note[0], "%s: incomplete row", p->name);
        hmma |= !strncmp(p->form, "HMMA.", 5);
    }
    ck_assert_msg(hmma, "no HMMA control probe");
    ck_assert_int_eq(dl_probe_find("no-such-probe"), -1);
}
END_TEST

static char out_buf[1 << 20], err_buf[8192];
static char tmpdir[] = "/tmp/dl_test_probes.XXXXXX";
static int run_cli(const char *const *args)
{
    char o[300], e[300];
    snprintf(o, sizeof o, "%s/out.txt", tmpdir);
    snprintf(e, sizeof e, "%s/err.txt", tmpdir);
    return dl_test_run(NULL, args, o, e, out_buf, sizeof out_buf, err_buf, sizeof err_buf);
}

START_TEST(test_probe_cli)
{
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    const char *list[] = {"probe", "--list", NULL};
    ck_assert_int_eq(run_cli(list), 0);
    for (int i = 0; i < dl_num_probes; i++) {
        char line[128];
        snprintf(line, sizeof line, "\n%s\t%s\t", dl_probes[i].name, dl_probes[i].kernel);
        ck_assert_msg(strstr(out_buf, line), "probe --list lacks %s", dl_probes[i].name);
    }
    const char *bad[] = {"probe", "--run", "no-such-probe", NULL};
    ck_assert_int_eq(run_cli(bad), 2);
    ck_assert_ptr_nonnull(strstr(err_buf, "no probe named 'no-such-probe'"));
    const char *bad2[] = {"probe", "--frobnicate", NULL};
    ck_assert_int_eq(run_cli(bad2), 2);
    const char *help[] = {"probe", "--help", NULL};
    ck_assert_int_eq(run_cli(help), 0);
    ck_assert_ptr_nonnull(strstr(out_buf, "usage: decodelab probe"));
    /* without a device: says so, lists what it would run, exit 0; with one: every probe launched */
    const char *all[] = {"probe", "--run", "all", NULL};
    ck_assert_int_eq(run_cli(all), 0);
    if (strstr(out_buf, "no CUDA device")) {
        ck_assert_ptr_nonnull(strstr(out_buf, "nothing launched; would run:"));
        ck_assert_ptr_nonnull(strstr(out_buf, "hmma_bf16"));
    } else {
        for (int i = 0; i < dl_num_probes; i++) ck_assert_msg(strstr(out_buf, dl_probes[i].kernel), "%s", out_buf);
        ck_assert_ptr_null(strstr(out_buf, "FAIL"));
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---------------------------------------------------------------- the real object */


/* build/gpu/e2_probes.o beside the binary under test (DL_BIN = <build>/decodelab) */
static void object_path(char *p, size_t n)
{
    char bin[1024];
    snprintf(bin, sizeof bin, "%s", dl_test_bin());
    snprintf(p, n, "%s/gpu/e2_probes.o", dirname(bin));
}

START_TEST(test_forms_in_the_object)
{
    if (!DL_HAVE_CUDA) {
        printf("test_probes: this build has no CUDA kernels (CUDA=0): the probe object is not built\n");
        return;
    }
    if (!dl_test_have_cuobjdump("test_probes", "forms_in_the_object")) return;
    char obj[1100];
    object_path(obj, sizeof obj);
    dl_census c;
    memset(&c, 0, sizeof c);
    ck_assert_msg(dl_census_disassemble(obj, &c) == 0, "census of %s: %s", obj, dl_last_error());
    ck_assert_int_eq(c.n, dl_num_probes); /* one kernel per row, nothing else */
    for (int i = 0; i < dl_num_probes; i++) {
        const dl_probe *p = &dl_probes[i];
        const dl_census_kernel *k = NULL;
        for (int j = 0; j < c.n; j++)
            if (!strcmp(c.k[j].mangled, p->kernel)) k = &c.k[j];
        ck_assert_msg(k, "%s: no kernel %s in %s", p->name, p->kernel, obj);
        /* the promised forms, exactly as many as the row says */
        const int64_t got = dl_census_form_count(k, p->form);
        /* straight-line: one EXIT and the one BRA of the trailing self-loop, no other branch */
        const int64_t branches = dl_census_form_count(k, "BRA*|BRX*|JMP*|CALL*|RET*|BSSY*|BSYNC*|WARPSYNC*");
        const int64_t exits = dl_census_form_count(k, "EXIT*");
        /* the split the E2 proof is about: forms on the MMA unit */
        const int64_t mma = dl_census_form_count(k, "HMMA.*|HFMA2.MMA*");
        printf("test_probes: %-14s %3lld x %s (rows: %d); HMMA/HFMA2.MMA forms %lld; total %lld\n", p->name,
               (long long)got, p->form, p->count, (long long)mma, (long long)k->total);
        ck_assert_msg(got == p->count, "%s: %lld instances of %s, the row says %d", p->name, (long long)got, p->form,
                      p->count);
        ck_assert_msg(branches == 1 && exits == 1, "%s: %lld branches, %lld exits: not straight-line", p->name,
                      (long long)branches, (long long)exits);
    }
    /* what the proof needs from the set: the packed FMA probes issue both HFMA2 and HFMA2.MMA, the
     * FFMA control none of them, the move probe HFMA2.MMA moves */
    for (int j = 0; j < c.n; j++) {
        const dl_census_kernel *k = &c.k[j];
        if (!strcmp(k->mangled, "e2_probe_ffma")) ck_assert_int_eq(dl_census_form_count(k, "HMMA.*|HFMA2*"), 0);
        if (!strcmp(k->mangled, "e2_probe_hfma2_f16x2")) {
            ck_assert_int_gt(dl_census_form_count(k, "HFMA2.MMA"), 0);
            ck_assert_int_gt(dl_census_form_count(k, "HFMA2"), 0);
        }
        if (!strcmp(k->mangled, "e2_probe_mov_imm")) {
            int64_t mv = 0;
            for (int f = 0; f < k->nforms; f++) mv += k->forms[f].rz_moves;
            ck_assert_int_gt(mv, 0);
        }
    }
    dl_census_free(&c);
}
END_TEST

/* decodelab sass --kernels 'e2_probe*' --forms --out: the form lines and rows, the class rows as before */
START_TEST(test_sass_forms_cli)
{
    if (!DL_HAVE_CUDA) {
        printf("SKIP test_probes sass_forms_cli: built without CUDA (no probe kernels)\n");
        fflush(stdout);
        return;
    }
    if (!dl_test_have_cuobjdump("test_probes", "sass_forms_cli")) return;
    char dir[] = "/tmp/dl_test_probes_sass.XXXXXX", csv[256], o[300], e[300];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(csv, sizeof csv, "%s/census.csv", dir);
    snprintf(o, sizeof o, "%s/out.txt", dir);
    snprintf(e, sizeof e, "%s/err.txt", dir);
    const char *args[] = {"sass", "--kernels", "e2_probe*", "--forms", "--out", csv, NULL};
    int rc = dl_test_run(NULL, args, o, e, out_buf, sizeof out_buf, err_buf, sizeof err_buf);
    ck_assert_msg(rc == 0, "%s", err_buf);
    ck_assert_ptr_nonnull(strstr(out_buf, "form\te2_probe_hmma_bf16\tHMMA.16816.F32.BF16\t16\t0\t"));
    ck_assert_ptr_nonnull(strstr(out_buf, "form\te2_probe_hfma2_f16x2\tHFMA2.MMA\t"));
    ck_assert_ptr_null(strstr(out_buf, "simt_decode_kernel")); /* only the kernels asked for */
    dl_census_row *rows = NULL;
    int64_t n = 0;
    ck_assert_int_eq(dl_census_read(csv, &rows, &n), 0);
    const int per = 1 + DL_CLS_COUNT + dl_census_num_opcodes();
    int64_t cls = 0, form = 0, other = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!strncmp(rows[i].metric, "form:", 5)) form++;
        else if (!strcmp(rows[i].metric, "total") || !strncmp(rows[i].metric, "class:", 6) ||
                 !strncmp(rows[i].metric, "op:", 3))
            cls++;
        else other++;
        if (!strcmp(rows[i].metric, "form:HMMA.16816.F32.BF16")) {
            ck_assert_str_eq(rows[i].kernel, "e2_probe_hmma_bf16");
            ck_assert(rows[i].value == 16);
        }
    }
    ck_assert_int_eq(other, 0);
    ck_assert_int_gt(form, dl_num_probes);
    /* the class/opcode rows are those of every kernel of the binary, as without --forms */
    ck_assert_int_eq(cls % per, 0);
    free(rows);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ------------------------------------------- the wgmma accumulator: model vs the H200's table */

/* The measured table of `decodelab probe --wgmma-acc` (H200, 2026-12-01, fourth session): every
 * case row's gpu column must equal dl_qgmma_add (the fp8wg model's accumulator) on the same case,
 * bitwise. The cases come from dl_wgmma_acc_cases, matched by name; the columns are found by the
 * header line. The random-chain rows are checked by test_qgmma_reproduces_h200_chains. */
#define QGMMA_TABLE "results/h200_2026-12-01d/wgmma_acc_probe3.txt"
START_TEST(test_qgmma_reproduces_h200_table)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/" QGMMA_TABLE, dl_test_root());
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    enum { CAP = 512 };
    dl_acc_case *v = calloc(CAP, sizeof *v);
    ck_assert_ptr_nonnull(v);
    const int n = dl_wgmma_acc_cases(v, CAP);
    ck_assert_int_gt(n, 200);
    char line[1024];
    int ncols = 0, gpu_col = -1, checked = 0, lost = 0, exact_rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || !strncmp(line, "rand ", 5) || !strncmp(line, "full ", 5)) continue; /* comments; the random cases' lines */
        char *tok[32];
        int nt = 0;
        for (char *t = strtok(line, " \t\n"); t && nt < 32; t = strtok(NULL, " \t\n")) tok[nt++] = t;
        if (nt == 0) continue;
        if (!strcmp(tok[0], "case")) { /* header: case C exact fp32_seq gpu ... */
            ncols = nt - 1;
            for (int i = 1; i < nt; i++)
                if (!strcmp(tok[i], "gpu")) gpu_col = i - 1;
            continue;
        }
        ck_assert_msg(ncols > 0 && gpu_col >= 0, "%s: no header line before the rows", path);
        ck_assert_int_gt(nt, ncols);
        char name[64] = "";
        for (int i = 0; i < nt - ncols; i++)
            snprintf(name + strlen(name), sizeof name - strlen(name), "%s%s", i ? " " : "", tok[i]);
        const dl_acc_case *cs = NULL;
        for (int i = 0; i < n; i++)
            if (!strcmp(v[i].name, name)) cs = &v[i];
        ck_assert_msg(cs != NULL, "%s: row '%s' is not a case of dl_wgmma_acc_cases", path, name);
        const float c = (float)strtod(tok[nt - ncols], NULL);
        const float gpu = (float)strtod(tok[nt - ncols + gpu_col], NULL);
        ck_assert_msg(c == cs->c, "%s: row '%s': C %a, the case says %a", path, name, (double)c, (double)cs->c);
        const float mod = dl_qgmma_add(cs->c, cs->a, cs->b, 1, 32, DL_E4M3);
        ck_assert_msg(memcmp(&mod, &gpu, sizeof mod) == 0, "%s: row '%s': the H200 gave %a, dl_qgmma_add %a", path,
                      name, (double)gpu, (double)mod);
        /* the table has teeth: many rows differ from a binary32 sum, some from the exact one */
        float seq = cs->c;
        double ex = cs->c;
        for (int k = 0; k < 32; k++) {
            seq += cs->a[k] * cs->b[k];
            ex += (double)cs->a[k] * cs->b[k];
        }
        if (seq != gpu) lost++;
        if ((double)gpu == ex) exact_rows++;
        checked++;
    }
    fclose(f);
    free(v);
    ck_assert_int_eq(checked, n); /* every case measured, once */
    ck_assert_int_gt(lost, 50);
    ck_assert_int_gt(exact_rows, 50);
}
END_TEST

/* The table's random chains (1, 2, 4, 8 wgmmas in a row, from a given C or from scale-d = 0, as the
 * decode kernels issue them; inputs regenerated by dl_wgmma_acc_random): the H200's result must equal
 * dl_qgmma_add applied step by step, bitwise, on every one of the 4096 rows. */
START_TEST(test_qgmma_reproduces_h200_chains)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/" QGMMA_TABLE, dl_test_root());
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char line[1024];
    int checked = 0, lost = 0;
    float a[8 * 32], b[8 * 32], c;
    while (fgets(line, sizeof line, f)) {
        int chain, zc, i, eq;
        double gpu, mod;
        if (sscanf(line, "rand chain=%d zero_c=%d i=%d gpu %la model %la %d", &chain, &zc, &i, &gpu, &mod, &eq) != 6)
            continue;
        ck_assert_msg(chain >= 1 && chain <= 8 && (zc == 0 || zc == 1) && i >= 0, "%s: bad row: %s", path, line);
        dl_wgmma_acc_random(chain, zc, i, &c, a, b);
        float acc = zc ? 0.0f : c, seq = acc;
        for (int s = 0; s < chain; s++) {
            acc = dl_qgmma_add(acc, a + s * 32, b + s * 32, 1, 32, DL_E4M3);
            for (int k = 0; k < 32; k++) seq += a[s * 32 + k] * b[s * 32 + k];
        }
        const float g = (float)gpu;
        ck_assert_msg(memcmp(&acc, &g, sizeof g) == 0, "%s: chain %d zero_c %d case %d: the H200 gave %a, the model %a",
                      path, chain, zc, i, gpu, (double)acc);
        if (seq != g) lost++;
        checked++;
    }
    fclose(f);
    ck_assert_int_eq(checked, 4096);
    ck_assert_int_gt(lost, 1000); /* teeth: most rows differ from a binary32 sum */
}
END_TEST

/* dl_qgmma_add by hand: 2^16 + 1.75 * 2^4 keeps 2^16 + 24 (the term truncated to a multiple of
 * 2^(16 - 13)); -28 keeps -24 (toward zero); C alone keeps 13 fraction bits; a carry past the
 * largest term drops what falls below 14 significant bits, toward zero. */
START_TEST(test_qgmma_by_hand)
{
    float a[32] = {0}, b[32] = {0};
    a[0] = 256.0f, b[0] = 256.0f;
    a[5] = 1.75f, b[5] = 16.0f;
    ck_assert_float_eq(dl_qgmma_add(0.0f, a, b, 1, 32, DL_E4M3), 65536.0f + 24.0f);
    a[5] = -1.75f;
    ck_assert_float_eq(dl_qgmma_add(0.0f, a, b, 1, 32, DL_E4M3), 65536.0f - 24.0f);
    float z[32] = {0};
    ck_assert_float_eq(dl_qgmma_add(1.0f + 0x1p-13f, z, z, 1, 32, DL_E4M3), 1.0f + 0x1p-13f);
    ck_assert_float_eq(dl_qgmma_add(1.0f + 0x1p-14f, z, z, 1, 32, DL_E4M3), 1.0f);
    float x[32] = {0}, one[32] = {0};
    x[1] = x[2] = 1.875f, one[1] = one[2] = 1.0f;
    ck_assert_float_eq(dl_qgmma_add(1.875f + 3 * 0x1p-13f, x, one, 1, 32, DL_E4M3), 5.625f);
    /* strided y (the P*V use: a column of V) */
    float col[64] = {0};
    col[0] = 2.0f, col[2] = 0x1p-20f;
    float p2[2] = {1.0f, 1.0f};
    ck_assert_float_eq(dl_qgmma_add(0.0f, p2, col, 2, 2, DL_E4M3), 2.0f);
    /* the alignment follows the operands' exponents, not the product's: 1.5 * 1.5 = 2.25 aligns as
     * 2^0, so C = 2^-13 survives 1.5*1.5 - 1.5*1.5; as 2^1 it would be cut to 0 */
    float u[32] = {0}, w[32] = {0};
    u[0] = 1.5f, u[1] = -1.5f, w[0] = w[1] = 1.5f;
    ck_assert_float_eq(dl_qgmma_add(0x1p-13f, u, w, 1, 32, DL_E4M3), 0x1p-13f);
    /* a subnormal operand counts with the smallest normal exponent: e4m3 2^-9 (2^-6 scale) times
     * 256 aligns as 2^2, cutting 3 * 2^-14 to 0; an e5m2 2^-9 is normal and keeps it */
    float sub[32] = {0}, big[32] = {0};
    sub[0] = 0x1p-9f, big[0] = 256.0f;
    ck_assert_float_eq(dl_qgmma_add(3 * 0x1p-14f, big, sub, 1, 32, DL_E4M3), 0.5f);
    ck_assert_float_eq(dl_qgmma_add(3 * 0x1p-14f, big, sub, 1, 32, DL_E5M2), 0.5f + 3 * 0x1p-14f);
}
END_TEST

/* ------------------------------------------- the HGMMA (BF16 wgmma) accumulator probe */

static int is_bf16(float x) { return isfinite(x) && dl_round_bf16(x) == x; }

/* The cases: deterministic, every operand exactly a bf16 value, names unique, each case with a
 * nonzero term (but the -0 one), and the questions the brief names all present. */
START_TEST(test_hgmma_cases)
{
    enum { CAP = 2048 };
    dl_hacc_case *v = calloc(CAP, sizeof *v), *w = calloc(CAP, sizeof *w);
    ck_assert_ptr_nonnull(v);
    ck_assert_ptr_nonnull(w);
    const int n = dl_hgmma_acc_cases(v, CAP);
    ck_assert_int_gt(n, 300);
    ck_assert_int_lt(n, 1024); /* the CLI's capacity */
    ck_assert_int_eq(dl_hgmma_acc_cases(w, CAP), n);
    ck_assert_int_eq(memcmp(v, w, (size_t)n * sizeof *v), 0);
    ck_assert_int_eq(dl_hgmma_acc_cases(w, 10), 10); /* a cap is a cap */
    int subnormal = 0, negative = 0, with_c = 0;
    for (int i = 0; i < n; i++) {
        int nonzero = v[i].c != 0.0f;
        for (int k = 0; k < 16; k++) {
            ck_assert_msg(is_bf16(v[i].a[k]) && is_bf16(v[i].b[k]), "case '%s' k=%d: %a, %a not bf16", v[i].name, k,
                          (double)v[i].a[k], (double)v[i].b[k]);
            nonzero |= v[i].a[k] * v[i].b[k] != 0.0f || (v[i].a[k] != 0.0f && v[i].b[k] != 0.0f);
            subnormal |= (v[i].a[k] != 0.0f && fabsf(v[i].a[k]) < 0x1p-126f) ||
                         (v[i].b[k] != 0.0f && fabsf(v[i].b[k]) < 0x1p-126f);
            negative |= v[i].a[k] < 0.0f;
        }
        with_c += v[i].c != 0.0f;
        ck_assert_msg(nonzero || !strcmp(v[i].name, "C -0 alone"), "case '%s' is all zero", v[i].name);
        for (int j = 0; j < i; j++) ck_assert_msg(strcmp(v[i].name, v[j].name), "case name '%s' twice", v[i].name);
    }
    ck_assert(subnormal && negative && with_c > 50);
    static const char *const need[] = {"pair k=15", "gap 24 xfull", "C gap 25 x1.75", "small C 20 full", "carry tie -",
                                       "halves big k=10", "many 20", "cancel 26", "C cancel 26",
                                       "unnorm 1.5x1.5 C=2^-24", "sub a C=3*2^-34", "tiny 2^-150"};
    for (size_t q = 0; q < sizeof need / sizeof need[0]; q++) {
        int found = 0;
        for (int i = 0; i < n; i++) found |= !strcmp(v[i].name, need[q]);
        ck_assert_msg(found, "no case '%s'", need[q]);
    }
    free(v);
    free(w);
}
END_TEST

/* The random chains and full matrices: deterministic, bf16, finite, not degenerate. */
START_TEST(test_hgmma_random)
{
    float c1, c2, a1[DL_HGMMA_MAX_CHAIN * 16], b1[DL_HGMMA_MAX_CHAIN * 16], a2[DL_HGMMA_MAX_CHAIN * 16],
        b2[DL_HGMMA_MAX_CHAIN * 16];
    for (int chain = 1; chain <= DL_HGMMA_MAX_CHAIN; chain *= 2)
        for (int zc = 0; zc <= 1; zc++)
            for (int i = 0; i < 64; i++) {
                dl_hgmma_acc_random(chain, zc, i, &c1, a1, b1);
                dl_hgmma_acc_random(chain, zc, i, &c2, a2, b2);
                ck_assert(memcmp(&c1, &c2, sizeof c1) == 0 && isfinite(c1) && c1 != 0.0f);
                ck_assert_int_eq(memcmp(a1, a2, (size_t)chain * 16 * sizeof *a1), 0);
                ck_assert_int_eq(memcmp(b1, b2, (size_t)chain * 16 * sizeof *b1), 0);
                int distinct = 0;
                for (int k = 0; k < chain * 16; k++) {
                    ck_assert_msg(is_bf16(a1[k]) && is_bf16(b1[k]), "chain %d case %d k %d", chain, i, k);
                    distinct += k > 0 && a1[k] != a1[k - 1];
                }
                ck_assert_int_gt(distinct, chain * 16 / 2);
            }
    dl_hgmma_acc_random(4, 0, 1, &c2, a2, b2); /* another case: other values */
    dl_hgmma_acc_random(4, 0, 2, &c1, a1, b1);
    ck_assert(c1 != c2 && memcmp(a1, a2, 64 * sizeof *a1));
    float *c = malloc(512 * sizeof *c), *a = malloc(1024 * sizeof *a), *b = malloc(128 * sizeof *b);
    ck_assert(c && a && b);
    for (int i = 0; i < 4; i++) {
        dl_hgmma_acc_full_random(i, c, a, b);
        for (int k = 0; k < 1024; k++) ck_assert(is_bf16(a[k]) && a[k] != 0.0f);
        int zero_rows = 0;
        for (int j = 0; j < 8; j++) {
            int z = 1;
            for (int k = 0; k < 16; k++) {
                ck_assert(is_bf16(b[j * 16 + k]));
                z &= b[j * 16 + k] == 0.0f;
            }
            zero_rows += z;
        }
        ck_assert_int_eq(zero_rows, i % 4 == 1 ? 4 : 0); /* the padded GQA group */
        for (int k = 0; k < 512; k++) ck_assert(isfinite(c[k]));
    }
    free(c), free(a), free(b);
}
END_TEST

/* dl_hgmma_model by hand (F = frac_bits; E = the alignment exponent; ulp = 2^(E - F)) */
START_TEST(test_hgmma_model_by_hand)
{
    float a[16] = {0}, b[16] = {0};
    /* 1 + 2^-30 (a product 2^-15 * 2^-15 beside C = 1), F = 24: E = 0, ulp 2^-24: the product is cut
     * to 0, D = 1. 1 - 2^-30: truncated toward zero (to -0), not floored (to -2^-24, which would
     * leave 1 - 2^-24 after the final cut): D = 1 again. */
    a[3] = 0x1p-15f, b[3] = 0x1p-15f;
    ck_assert_float_eq(dl_hgmma_model(1.0f, a, b, 16, 24, 0), 1.0f);
    a[3] = -0x1p-15f;
    ck_assert_float_eq(dl_hgmma_model(1.0f, a, b, 16, 24, 0), 1.0f);
    /* 1 + 3 products of 2^-24: F = 24 keeps each (one ulp), the sum 1 + 1.5 * 2^-23 is cut to 23
     * fraction bits: 1 + 2^-23 toward zero, 1 + 2^-22 to nearest; F = 23 drops all three: 1. */
    memset(a, 0, sizeof a), memset(b, 0, sizeof b);
    for (int k = 0; k < 3; k++) a[k] = 0x1p-12f, b[k] = 0x1p-12f;
    ck_assert_float_eq(dl_hgmma_model(1.0f, a, b, 16, 24, 0), 1.0f + 0x1p-23f);
    ck_assert_float_eq(dl_hgmma_model(1.0f, a, b, 16, 24, DL_HGMMA_RN), 1.0f + 0x1p-22f);
    ck_assert_float_eq(dl_hgmma_model(1.0f, a, b, 16, 23, 0), 1.0f);
    /* cancellation: 2^16 - 2^16 + 1.75 * 2^-10. E = 16 is set by the cancelled pair: F = 24, ulp
     * 2^-8: 0.4375 ulp, cut to 0; F = 27, ulp 2^-11: 3.5 ulp, cut to 3: 1.5 * 2^-10; F = 28: kept */
    memset(a, 0, sizeof a), memset(b, 0, sizeof b);
    a[0] = 256.0f, b[0] = 256.0f, a[1] = -256.0f, b[1] = 256.0f, a[6] = 1.75f * 0x1p-5f, b[6] = 0x1p-5f;
    ck_assert_float_eq(dl_hgmma_model(0.0f, a, b, 16, 24, 0), 0.0f);
    ck_assert_float_eq(dl_hgmma_model(0.0f, a, b, 16, 27, 0), 1.5f * 0x1p-10f);
    ck_assert_float_eq(dl_hgmma_model(0.0f, a, b, 16, 28, 0), 1.75f * 0x1p-10f);
    ck_assert_int_eq(dl_hgmma_top(0.0f, a, b, 16, 0), 17); /* frexp-like: E + 1 */
    /* 2^16 - 1.75 * 2^-9, F = 25: ulp 2^-9, the term cut toward zero to -2^-9; 2^16 - 2^-9 lies
     * below 2^16, where binary32's ulp is 2^-8: half an ulp dropped: toward zero 2^16 - 2^-8, to
     * nearest even 2^16 (2^16 - 2^-8 is odd); F = 24: the term is cut to 0: 2^16 */
    memset(a, 0, sizeof a), memset(b, 0, sizeof b);
    a[0] = 256.0f, b[0] = 256.0f, a[5] = -1.75f * 0x1p-4f, b[5] = 0x1p-5f;
    ck_assert_float_eq(dl_hgmma_model(0.0f, a, b, 16, 25, 0), 65536.0f - 0x1p-8f);
    ck_assert_float_eq(dl_hgmma_model(0.0f, a, b, 16, 25, DL_HGMMA_RN), 65536.0f);
    ck_assert_float_eq(dl_hgmma_model(0.0f, a, b, 16, 24, 0), 65536.0f);
    /* the exponent a product aligns by: 1.5 * 1.5 - 1.5 * 1.5 + 2^-24, F = 24. By the operands'
     * exponents E = 0, ulp 2^-24: C survives; by the product's own (2.25: E = 1, ulp 2^-23): cut */
    memset(a, 0, sizeof a), memset(b, 0, sizeof b);
    a[2] = 1.5f, a[9] = -1.5f, b[2] = b[9] = 1.5f;
    ck_assert_float_eq(dl_hgmma_model(0x1p-24f, a, b, 16, 24, 0), 0x1p-24f);
    ck_assert_float_eq(dl_hgmma_model(0x1p-24f, a, b, 16, 24, DL_HGMMA_NORM), 0.0f);
    /* a subnormal operand: 2^-130 * 2^120 = 2^-10 beside C = 3 * 2^-34, F = 24. Counted as 2^-126
     * (the default) E = -6, ulp 2^-30: C is cut, D = 2^-10; by its own exponent (NORM) E = -10,
     * ulp 2^-34: C kept, 2^-10 + 1.5 * 2^-33 cut to 23 bits: 2^-10 + 2^-33 */
    memset(a, 0, sizeof a), memset(b, 0, sizeof b);
    a[4] = 0x1p-130f, b[4] = 0x1p120f;
    ck_assert_float_eq(dl_hgmma_model(3 * 0x1p-34f, a, b, 16, 24, 0), 0x1p-10f);
    ck_assert_float_eq(dl_hgmma_model(3 * 0x1p-34f, a, b, 16, 24, DL_HGMMA_NORM), 0x1p-10f + 0x1p-33f);
    /* a result below binary32's normals: 1.09375 * 2^-72 * 2^-73 = 2^-145 + 2^-149 + 2^-150, on the
     * subnormal grid 2^-149: 17.5 steps, toward zero 17, to nearest even 18 */
    memset(a, 0, sizeof a), memset(b, 0, sizeof b);
    a[0] = 1.09375f * 0x1p-72f, b[0] = 0x1p-73f;
    ck_assert_float_eq(dl_hgmma_model(0.0f, a, b, 16, 24, 0), 17 * 0x1p-149f);
    ck_assert_float_eq(dl_hgmma_model(0.0f, a, b, 16, 24, DL_HGMMA_RN), 18 * 0x1p-149f);
    /* C's own bits with no product: F = 13 keeps 13 fraction bits of C (toward zero); nothing
     * nonzero at all: C as it is */
    memset(a, 0, sizeof a);
    ck_assert_float_eq(dl_hgmma_model(1.0f + 0x1p-13f + 0x1p-14f, a, b, 16, 13, 0), 1.0f + 0x1p-13f);
    ck_assert_int_eq(dl_hgmma_top(0.0f, a, b, 16, 0), INT_MIN);
    ck_assert_float_eq(dl_hgmma_model(0.0f, a, b, 16, 24, 0), 0.0f);
}
END_TEST

/* On FP8 operands (e4m3 normals, which are bf16 values too) the family with F = 13 is the measured
 * QGMMA rule: dl_hgmma_model(., 13, 0) == dl_qgmma_add bitwise, on random cases with and without C. */
START_TEST(test_hgmma_model_is_qgmma_at_13)
{
    float a[32], b[32];
    int differs_from_f24 = 0;
    for (int i = 0; i < 2000; i++) {
        for (int k = 0; k < 32; k++) {
            uint8_t code[2];
            for (int t = 0; t < 2; t++) { /* a normal e4m3 code (exponent field 1..15), not NaN (S.1111.111) */
                const uint64_t j = (uint64_t)(i * 64 + k) * 4;
                const uint8_t sgn = (uint8_t)dl_rng_below(7, (uint64_t)t, j, 2);
                const uint8_t ex = (uint8_t)(1 + dl_rng_below(7, (uint64_t)t, j + 1, 15));
                uint8_t man = (uint8_t)dl_rng_below(7, (uint64_t)t, j + 2, 8);
                if (ex == 15 && man == 7) man = 6;
                code[t] = (uint8_t)(sgn << 7 | ex << 3 | man);
            }
            a[k] = (k + i) % 5 == 0 ? 0.0f : dl_e4m3_to_f32(code[0]);
            b[k] = dl_e4m3_to_f32(code[1]);
            ck_assert(is_bf16(a[k]) && is_bf16(b[k]));
        }
        const float c = i % 2 ? 0.0f : (float)(dl_rng_normal(7, 3, (uint64_t)i) * 1000.0);
        const float q = dl_qgmma_add(c, a, b, 1, 32, DL_E4M3), h = dl_hgmma_model(c, a, b, 32, 13, 0);
        ck_assert_msg(memcmp(&q, &h, sizeof q) == 0, "case %d: dl_qgmma_add %a, dl_hgmma_model(13) %a", i, (double)q,
                      (double)h);
        const float h24 = dl_hgmma_model(c, a, b, 32, 24, 0);
        differs_from_f24 += memcmp(&h, &h24, sizeof h) != 0;
    }
    ck_assert_int_gt(differs_from_f24, 1000); /* frac_bits matters */
}
END_TEST

/* `decodelab probe --hgmma-acc`: without a device it says so and exits 0, naming as many cases as
 * dl_hgmma_acc_cases makes; with one, the summary lines come last and no launch disagrees. */
START_TEST(test_hgmma_cli)
{
    char dir[] = "/tmp/dl_test_probes_hg.XXXXXX", o[300], e[300];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(o, sizeof o, "%s/out.txt", dir);
    snprintf(e, sizeof e, "%s/err.txt", dir);
    const char *help[] = {"probe", "--help", NULL};
    ck_assert_int_eq(dl_test_run(NULL, help, o, e, out_buf, sizeof out_buf, err_buf, sizeof err_buf), 0);
    ck_assert_ptr_nonnull(strstr(out_buf, "--hgmma-acc"));
    const char *both[] = {"probe", "--wgmma-acc", "--hgmma-acc", NULL};
    ck_assert_int_eq(dl_test_run(NULL, both, o, e, out_buf, sizeof out_buf, err_buf, sizeof err_buf), 2);
    ck_assert_ptr_nonnull(strstr(err_buf, "one at a time"));
    const char *hg[] = {"probe", "--hgmma-acc", NULL};
    const int rc = dl_test_run(NULL, hg, o, e, out_buf, sizeof out_buf, err_buf, sizeof err_buf);
    if (strstr(out_buf, "no CUDA device")) {
        ck_assert_int_eq(rc, 0);
        enum { CAP = 1024 };
        dl_hacc_case *v = calloc(CAP, sizeof *v);
        ck_assert_ptr_nonnull(v);
        char want[96];
        snprintf(want, sizeof want, "nothing launched; would run %d hgmma accumulator cases", dl_hgmma_acc_cases(v, CAP));
        free(v);
        ck_assert_msg(strstr(out_buf, want) != NULL, "%s", out_buf);
    } else {
        ck_assert_msg(rc == 0, "probe --hgmma-acc: exit %d: %s", rc, err_buf);
        ck_assert_ptr_nonnull(strstr(out_buf, "# summary t25 "));
        ck_assert_ptr_nonnull(strstr(out_buf, "# summary launches whose 512 outputs disagree (a layout error if any): 0\n"));
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* build/gpu/wgmma_acc_probe.o: every HGMMA probe kernel holds its chain's HGMMA.64x8x16.F32.BF16
 * (1, 2, 4, 8, 16; the full-matrix kernel 1) and no other MMA; ptxas spilled nothing in them. */
START_TEST(test_hgmma_in_the_object)
{
    if (!DL_HAVE_CUDA) {
        printf("test_probes: this build has no CUDA kernels (CUDA=0): the hgmma probe object is not built\n");
        return;
    }
    char bin[1024], obj[1100], ptxas[1100];
    snprintf(bin, sizeof bin, "%s", dl_test_bin());
    const char *dir = dirname(bin); /* the build directory (DL_BIN = <build>/decodelab) */
    snprintf(obj, sizeof obj, "%s/gpu/wgmma_acc_probe.o", dir);
    snprintf(ptxas, sizeof ptxas, "%s/gpu/wgmma_acc_probe.ptxas.txt", dir);
    FILE *f = fopen(ptxas, "r"); /* the build's -Xptxas -v output (Makefile) */
    ck_assert_msg(f != NULL, "cannot open %s", ptxas);
    char line[1024];
    int entries = 0, in_hgmma = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "Compiling entry function")) {
            in_hgmma = strstr(line, "hgmma_acc_") != NULL;
            entries += in_hgmma;
        } else if (in_hgmma && strstr(line, "spill")) {
            ck_assert_msg(strstr(line, " 0 bytes spill stores, 0 bytes spill loads"), "%s: spills: %s", ptxas, line);
        }
    }
    fclose(f);
    ck_assert_int_eq(entries, 6);
    if (!dl_test_have_cuobjdump("test_probes", "hgmma_in_the_object")) return;
    dl_census c;
    memset(&c, 0, sizeof c);
    ck_assert_msg(dl_census_disassemble(obj, &c) == 0, "census of %s: %s", obj, dl_last_error());
    int seen = 0;
    for (int j = 0; j < c.n; j++) {
        const dl_census_kernel *k = &c.k[j];
        if (!strstr(k->mangled, "hgmma_acc_")) {
            ck_assert_int_eq(dl_census_form_count(k, "HGMMA*"), 0);
            continue;
        }
        int chain = 1;
        const char *t = strstr(k->mangled, "ILi");
        if (t) chain = atoi(t + 3);
        const int64_t got = dl_census_form_count(k, "HGMMA.64x8x16.F32.BF16");
        printf("test_probes: %-48s %lld x HGMMA.64x8x16.F32.BF16 (chain %d)\n", k->mangled, (long long)got, chain);
        ck_assert_msg(got == chain, "%s: %lld HGMMA.64x8x16.F32.BF16, want %d", k->mangled, (long long)got, chain);
        ck_assert_int_eq(dl_census_form_count(k, "QGMMA*|HMMA*"), 0);
        seen++;
    }
    ck_assert_int_eq(seen, 6);
    dl_census_free(&c);
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("probes");
    TCase *tc = tcase_create("probes");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_forms_listing);
    tcase_add_test(tc, test_forms_wgmma_shape);
    tcase_add_test(tc, test_probe_table);
    tcase_add_test(tc, test_probe_cli);
    tcase_add_test(tc, test_forms_in_the_object);
    tcase_add_test(tc, test_sass_forms_cli);
    tcase_add_test(tc, test_qgmma_reproduces_h200_table);
    tcase_add_test(tc, test_qgmma_reproduces_h200_chains);
    tcase_add_test(tc, test_qgmma_by_hand);
    tcase_add_test(tc, test_hgmma_cases);
    tcase_add_test(tc, test_hgmma_random);
    tcase_add_test(tc, test_hgmma_model_by_hand);
    tcase_add_test(tc, test_hgmma_model_is_qgmma_at_13);
    tcase_add_test(tc, test_hgmma_cli);
    tcase_add_test(tc, test_hgmma_in_the_object);
    suite_add_tcase(s, tc);
    return s;
}

DL_TEST_MAIN

/* test_probes.c - Check suite for the E2 probe kernels (gpu/e2_probes.cu, gpu/dl_probes.def;
 * issue 13 item 2) and the form census that names them (harness/census.c, `decodelab sass
 * --forms`): the form parser on a hand-written listing, the probe table, `decodelab probe`, and -
 * on the real build/gpu/e2_probes.o - that every probe kernel holds exactly the instruction forms
 * and counts its row promises, in straight-line code (so that static count = executed count, which
 * tests/gpu/e2_probes_job.sh relies on when it divides Nsight Compute's counters by the warps).
 * Needs cuobjdump (+ nvdisasm) for the disassembly tests; without it they SKIP, printing why,
 * as tests/test_census.c does. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../gpu/dl_probes.h"
#include "../ref/dl_common.h"
#include "../ref/dl_formats.h"
#include "../ref/dl_ref.h"
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
    if (!DL_HAVE_CUDA) return;
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

Suite *make_suite(void)
{
    Suite *s = suite_create("probes");
    TCase *tc = tcase_create("probes");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_forms_listing);
    tcase_add_test(tc, test_probe_table);
    tcase_add_test(tc, test_probe_cli);
    tcase_add_test(tc, test_forms_in_the_object);
    tcase_add_test(tc, test_sass_forms_cli);
    tcase_add_test(tc, test_qgmma_reproduces_h200_table);
    tcase_add_test(tc, test_qgmma_reproduces_h200_chains);
    tcase_add_test(tc, test_qgmma_by_hand);
    suite_add_tcase(s, tc);
    return s;
}

DL_TEST_MAIN

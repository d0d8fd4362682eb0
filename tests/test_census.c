/* test_census.c - Check suite for the SASS instruction census (harness/census.c):
 * the listing parser on a hand-written listing, the tool search and its error,
 * the census CSV table, and - on the real build/decodelab - what the design of
 * the variants implies about their machine code. Needs cuobjdump (+ nvdisasm):
 * on PATH, in $CUDA_HOME/bin, at $DL_CUOBJDUMP, or in Python site-packages (.ci/run installs them from
 * PyPI). When it cannot be found the two tests on the real binary SKIP, printing why (the
 * tool is optional: a machine with nvcc but without cuobjdump must pass `make test`); when it
 * is found and the disassembly fails, they FAIL. */
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../gpu/dl_registry.h"
#include "../harness/dl_census.h"
#include "dl_test.h"

#ifndef DL_HAVE_CUDA
#define DL_HAVE_CUDA 0
#endif

/* ---------------------------------------------------------------- parser */

static const char *listing =
    "\n\tcode for sm_90a\n"
    "Fatbin elf code:\n================\narch = sm_90a\n\n"
    "\t\tFunction : _Z3fooILi1EEvv\n"
    "\t.headerflags\t@\"EF_CUDA_SM90\"\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;      /* 0x00000a00ff017b82 */\n"
    "                                                                /* 0x000fe20000000800 */\n"
    "        /*0010*/              @!P1 FFMA.FTZ R2, R2, R3, R4 ;   /* 0x0000000102029824 */\n"
    "        /*0020*/               @P0 HMMA.16816.F32.BF16 R4, R8, R12, R4 ; /* 0x1 */\n"
    "        /*0030*/                   F2FP.BF16.F32.PACK_AB R0, R1, R2 ; /* 0x2 */\n"
    "        /*0040*/                   LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64] ; /* 0x3 */\n"
    "        /*0050*/                   LDG.E.128 R4, desc[UR4][R2.64] ; /* 0x4 */\n"
    "        /*0060*/                   EXIT ;  /* 0x5 */\n"
    "\t\tFunction : _Z3barv\n"
    "        /*0000*/                   MUFU.EX2 R1, R2 ;  /* 0x6 */\n"
    "        /*0010*/                   PRMT R1, R2, 0x7604, R3 ;  /* 0x7 */\n"
    "        /*0020*/                   HFMA2.MMA R1, R2, R3, R4 ;  /* 0x8 */\n";

START_TEST(test_parse_listing)
{
    dl_census c;
    dl_test_census_parse(listing, &c);
    ck_assert_int_eq(c.n, 2);
    const dl_census_kernel *k = &c.k[0];
    ck_assert_str_eq(k->mangled, "_Z3fooILi1EEvv");
    ck_assert_str_eq(k->arch, "sm_90a");
    /* 7 instruction lines; the encoding-only continuation line is not one */
    ck_assert_int_eq(k->total, 7);
    ck_assert_int_eq(k->cls[DL_CLS_TENSOR], 1);  /* predicated HMMA, suffixes stripped */
    ck_assert_int_eq(k->cls[DL_CLS_FP32], 1);    /* @!P1 FFMA.FTZ */
    ck_assert_int_eq(k->cls[DL_CLS_CONV], 1);    /* F2FP (not F2F: whole base opcode) */
    ck_assert_int_eq(k->op[dl_census_opcode_index("F2F")], 0);
    ck_assert_int_eq(k->cls[DL_CLS_MEM], 2);     /* LDGSTS and LDG, counted apart */
    ck_assert_int_eq(k->op[dl_census_opcode_index("LDGSTS")], 1);
    ck_assert_int_eq(k->op[dl_census_opcode_index("LDG")], 1);
    ck_assert_int_eq(c.k[1].total, 3);
    ck_assert_int_eq(c.k[1].cls[DL_CLS_MUFU], 1);
    ck_assert_int_eq(c.k[1].cls[DL_CLS_BYTEBIT], 1);
    ck_assert_int_eq(c.k[1].cls[DL_CLS_PACKED16], 1);
    /* every counted opcode belongs to exactly one class: class sums equal opcode sums */
    for (int i = 0; i < c.n; i++) {
        int64_t by_op = 0, by_cls = 0;
        for (int o = 0; o < dl_census_num_opcodes(); o++) by_op += c.k[i].op[o];
        for (int q = 0; q < DL_CLS_COUNT; q++) by_cls += c.k[i].cls[q];
        ck_assert_int_eq(by_op, by_cls);
    }
    dl_census_demangle(&c);
    /* c++filt (binutils) is part of the build tools: foo<1> demangles */
    ck_assert_ptr_nonnull(strstr(c.k[0].name, "foo<1>"));
    dl_census_free(&c);
}
END_TEST

/* ---------------------------------------------------------------- the hot loop */

/* The second 64-bit word of an sm_70+ instruction with the given stall cycles (bits 41-44) and
 * scoreboard wait mask (bits 52-57); the other fields zero. */
static unsigned long long ctl_word(int stall, int wait) { return (unsigned long long)stall << 41 | (unsigned long long)wait << 52; }

/* One instruction at addr, with its control word on the next line (as cuobjdump writes them). */
static size_t put_insn(char *buf, size_t n, size_t at, unsigned addr, const char *text, int stall, int wait)
{
    return at + (size_t)snprintf(buf + at, n - at,
                                 "        /*%04x*/                   %s ;   /* 0x000000000000000%x */\n"
                                 "                                                          /* 0x%016llx */\n",
                                 addr, text, addr & 15, ctl_word(stall, wait));
}

typedef struct {
    const char *text;
    int stall, wait;
} line_spec;

/* The census of a hand-built listing buf (at bytes written, of cap) with n kernels, and kernel k's hot loop spanning
 * first..branch. */
static const dl_census_loop *loop_of(const char *buf, size_t at, size_t cap, dl_census *c, int n, int k,
                                     uint32_t first, uint32_t branch)
{
    ck_assert_uint_lt(at, cap - 1);
    dl_test_census_parse(buf, c);
    ck_assert_int_eq(c->n, n);
    const dl_census_loop *L = &c->k[k].loop;
    ck_assert_int_eq(L->found, 1);
    ck_assert_uint_eq(L->first, first);
    ck_assert_uint_eq(L->branch, branch);
    return L;
}

START_TEST(test_hot_loop)
{
    /* a segment loop (0x10..0xb0) around a tile loop (0x20..0x70) whose last iteration is peeled off
     * after it (the two HMMAs at 0x80, 0x90: the segment loop holds more tensor instructions than the
     * tile loop, yet the tile loop is the hot one), a wait loop with no tensor work (0x30..0x40), and
     * a forward branch and a BRA.DIV whose encodings hold hex digits too */
    const line_spec k0[] = {
        {"MOV R1, RZ", 1, 0},                                /* 0x00 */
        {"LDS.128 R4, [R2]", 2, 0},                          /* 0x10: segment loop */
        {"HMMA.16816.F32 R8, R4, R6, R8", 3, 0},             /* 0x20: tile loop */
        {"SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R9], R6", 4, 1}, /* 0x30: wait loop */
        {"@!P0 BRA 0x30", 5, 0},                             /* 0x40 */
        {"F2FP.F16.E4M3.UNPACK_B R4, R5", 6, 2},             /* 0x50 */
        {"HMMA.16816.F32 R8, R4, R6, R8", 7, 0},             /* 0x60 */
        {"@P1 BRA 0x20", 8, 0},                              /* 0x70 */
        {"HMMA.16816.F32 R8, R4, R6, R8", 9, 0},             /* 0x80 */
        {"HMMA.16816.F32 R8, R4, R6, R8", 10, 0},            /* 0x90 */
        {"BRA.DIV UR8, 0x100", 11, 0},                       /* 0xa0 */
        {"@P2 BRA 0x10", 12, 4},                             /* 0xb0 */
        {"EXIT", 13, 0},                                     /* 0xc0 */
    };
    const int n0 = (int)(sizeof k0 / sizeof k0[0]);
    static char buf[16384];
    size_t at = (size_t)snprintf(buf, sizeof buf, "arch = sm_90a\n\t\tFunction : _Z5tilesv\n");
    for (int i = 0; i < n0; i++) at = put_insn(buf, sizeof buf, at, 16u * (unsigned)i, k0[i].text, k0[i].stall, k0[i].wait);
    /* a CUDA-core kernel: no tensor work, its inner loop has the FFMAs */
    at += (size_t)snprintf(buf + at, sizeof buf - at, "\t\tFunction : _Z4simtv\n");
    const line_spec k1[] = {{"FFMA R1, R2, R3, R1", 1, 0}, {"FFMA R1, R2, R3, R1", 1, 0}, {"@P0 BRA 0x0", 2, 0},
                            {"LDG.E R2, desc[UR4][R4.64]", 1, 1}, {"@P1 BRA 0x30", 1, 0}, {"EXIT", 1, 0}};
    for (int i = 0; i < 6; i++) at = put_insn(buf, sizeof buf, at, 16u * (unsigned)i, k1[i].text, k1[i].stall, k1[i].wait);
    /* no backward branch; and a listing without control words */
    at += (size_t)snprintf(buf + at, sizeof buf - at,
                           "\t\tFunction : _Z4flatv\n        /*0000*/   HMMA.16816.F32 R8, R4, R6, R8 ; /* 0x1 */\n"
                           "\t\tFunction : _Z5nocodev\n        /*0000*/   HMMA.16816.F32 R8, R4, R6, R8 ; /* 0x1 */\n"
                           "        /*0010*/   @P0 BRA 0x0 ; /* 0x2 */\n");
    dl_census c;
    const dl_census_loop *L = loop_of(buf, at, sizeof buf, &c, 4, 0, 0x20, 0x70);
    int64_t stall = 0, waits = 0;
    for (int i = 2; i <= 7; i++) { /* the tile loop's instructions: 0x20 .. 0x70 */
        stall += k0[i].stall;
        waits += k0[i].wait != 0;
    }
    ck_assert_int_eq(L->total, 6);
    ck_assert_int_eq(L->cls[DL_CLS_TENSOR], 2);
    ck_assert_int_eq(L->cls[DL_CLS_CONV], 1);
    ck_assert_int_eq(L->stall, stall);
    ck_assert_int_eq(L->sb_waits, waits);
    L = &c.k[1].loop; /* FFMA loop 0x00..0x20, not the LDG loop 0x30..0x40 */
    ck_assert_int_eq(L->found, 1);
    ck_assert_uint_eq(L->first, 0x0);
    ck_assert_uint_eq(L->branch, 0x20);
    ck_assert_int_eq(L->cls[DL_CLS_FP32], 2);
    ck_assert_int_eq(L->stall, k1[0].stall + k1[1].stall + k1[2].stall);
    ck_assert_int_eq(c.k[2].loop.found, 0);
    ck_assert_int_eq(c.k[3].loop.found, 1);
    ck_assert_int_eq(c.k[3].loop.stall, -1); /* no control words: stall unknown, not 0 */
    /* the loop rows: one per class, total, stall, scoreboard waits, with the loop's values */
    dl_census_row rows[DL_CENSUS_LOOP_ROWS];
    ck_assert_int_eq(dl_census_loop_rows(&c, &c.k[0], "v", rows), DL_CENSUS_LOOP_ROWS);
    int seen = 0;
    for (int i = 0; i < DL_CENSUS_LOOP_ROWS; i++) {
        if (!strcmp(rows[i].metric, "loop:stall_cycles")) ck_assert(rows[i].value == (double)stall && ++seen);
        if (!strcmp(rows[i].metric, "loop:class:tensor")) ck_assert(rows[i].value == 2.0 && ++seen);
        if (!strcmp(rows[i].metric, "loop:total")) ck_assert(rows[i].value == 6.0 && ++seen);
    }
    ck_assert_int_eq(seen, 3);
    ck_assert_int_eq(dl_census_loop_rows(&c, &c.k[2], "v", rows), 0);
    dl_census_free(&c);
}
END_TEST

/* A partial tile's zeroing inside the hot loop: the instructions a predicated forward branch skips where they store
 * RZ to shared memory and hold no tensor instruction are counted in loop.zeroing (and its row); a block storing a
 * register, a block with an HMMA, and what an unpredicated branch jumps over are not. */
START_TEST(test_loop_zeroing)
{
    const char *k[] = {
        "MOV R1, RZ",                      /* 0x00 */
        "HMMA.16816.F32 R8, R4, R6, R8",   /* 0x10: the loop */
        "@P0 BRA 0x50",                    /* 0x20: skips 0x30, 0x40: zeroing */
        "IADD3 R2, R2, 0x10, RZ",          /* 0x30 */
        "STS.128 [R2], RZ",                /* 0x40 */
        "@P1 BRA 0x70",                    /* 0x50: skips a store of R4 */
        "STS.128 [R2], R4",                /* 0x60 */
        "@!P2 BRA 0xa0",                   /* 0x70: skips a zeroing store and an HMMA */
        "STS [R2+0x10], RZ",               /* 0x80 */
        "HMMA.16816.F32 R8, R4, R6, R8",   /* 0x90 */
        "BRA 0xc0",                        /* 0xa0: not predicated */
        "STS.64 [R2], RZ",                 /* 0xb0 */
        "@P3 BRA 0x10",                    /* 0xc0: back to the loop's top */
        "EXIT",                            /* 0xd0 */
    };
    static char buf[8192];
    size_t at = (size_t)snprintf(buf, sizeof buf, "arch = sm_90a\n\t\tFunction : _Z4zerov\n");
    for (unsigned i = 0; i < sizeof k / sizeof k[0]; i++) at = put_insn(buf, sizeof buf, at, 16u * i, k[i], 1, 0);
    dl_census c;
    const dl_census_loop *L = loop_of(buf, at, sizeof buf, &c, 1, 0, 0x10, 0xc0);
    ck_assert_int_eq(L->total, 12);
    ck_assert_int_eq(L->zeroing, 2);
    dl_census_row rows[DL_CENSUS_LOOP_ROWS];
    ck_assert_int_eq(dl_census_loop_rows(&c, &c.k[0], "v", rows), DL_CENSUS_LOOP_ROWS);
    int seen = 0;
    for (int i = 0; i < DL_CENSUS_LOOP_ROWS; i++)
        if (!strcmp(rows[i].metric, "loop:zeroing")) ck_assert(rows[i].value == 2.0 && ++seen);
    ck_assert_int_eq(seen, 1);
    dl_census_free(&c);
}
END_TEST

/* `cuobjdump -res-usage` read into the kernels of the listing above, by mangled name: registers and stack bytes;
 * a kernel the usage does not name keeps -1, a Function line without its REG line is an error. */
START_TEST(test_parse_resources)
{
    dl_census c;
    dl_test_census_parse(listing, &c);
    ck_assert_int_eq(c.k[0].regs, -1);
    const char *usage = "\nResource usage:\n Common:\n  GLOBAL:0\n"
                        " Function _Z3fooILi1EEvv:\n  REG:168 STACK:48 SHARED:1024 LOCAL:0 CONSTANT[0]:1024 TEXTURE:0\n"
                        " Function _Z9not_therev:\n  REG:12 STACK:0 SHARED:0 LOCAL:0\n";
    FILE *f = fmemopen((void *)usage, strlen(usage), "r");
    ck_assert_int_eq(dl_census_parse_resources(f, &c), 0);
    fclose(f);
    ck_assert_int_eq(c.k[0].regs, 168);
    ck_assert_int_eq(c.k[0].stack, 48);
    ck_assert_int_eq(c.k[1].regs, -1); /* _Z3barv: not in the usage */
    ck_assert_int_eq(c.k[1].stack, -1);
    const char *bad = " Function _Z3barv:\n  SHARED:0\n";
    f = fmemopen((void *)bad, strlen(bad), "r");
    ck_assert_int_ne(dl_census_parse_resources(f, &c), 0);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "_Z3barv"));
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "REG:"));
    dl_census_free(&c);
}
END_TEST

/* A census file that cannot be written is refused before the disassembly (tens of seconds), in one
 * line naming it, with nothing written; on any machine, cuobjdump or not. */
START_TEST(test_sass_out_refused_first)
{
    dl_test_mkdir("census");
    char out[1200];
    snprintf(out, sizeof out, "%s/no-such-dir/census.csv", dl_test_dir);
    const int rc = DL_RUN("sass", "--loop", "--out", out);
    ck_assert_msg(rc == 2, "exit %d, stderr: %s", rc, dl_test_err);
    ck_assert_msg(dl_test_lines(dl_test_err) == 1 && strstr(dl_test_err, "decodelab sass: ") && strstr(dl_test_err, out),
                  "stderr: %s", dl_test_err);
    ck_assert_str_eq(dl_test_out, ""); /* no listing header: refused before cuobjdump ran */
    ck_assert_int_eq(access(out, F_OK), -1);
    ck_assert_int_eq(dl_test_rmdir(), 0);
}
END_TEST

START_TEST(test_find_tool_error_names_every_place)
{
    char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    char *old_home = getenv("CUDA_HOME") ? strdup(getenv("CUDA_HOME")) : NULL;
    setenv("PATH", "/nonexistent-dir-a", 1);
    setenv("CUDA_HOME", "/nonexistent-cuda", 1);
    setenv("DL_TEST_TOOL", "/nonexistent-tool", 1);
    char p[1024];
    ck_assert_int_ne(dl_census_find_tool("no-such-tool-xyz", "DL_TEST_TOOL", p, sizeof p), 0);
    const char *e = dl_last_error();
    ck_assert_ptr_nonnull(strstr(e, "no-such-tool-xyz not found"));
    ck_assert_ptr_nonnull(strstr(e, "PATH"));
    ck_assert_ptr_nonnull(strstr(e, "/nonexistent-cuda/bin/no-such-tool-xyz"));
    ck_assert_ptr_nonnull(strstr(e, "DL_TEST_TOOL=/nonexistent-tool"));
    /* the env var is honoured when it names an executable */
    setenv("DL_TEST_TOOL", "/bin/sh", 1);
    ck_assert_int_eq(dl_census_find_tool("no-such-tool-xyz", "DL_TEST_TOOL", p, sizeof p), 0);
    ck_assert_str_eq(p, "/bin/sh");
    unsetenv("DL_TEST_TOOL");
    if (old_path) setenv("PATH", old_path, 1);
    if (old_home) setenv("CUDA_HOME", old_home, 1);
    else unsetenv("CUDA_HOME");
    free(old_path);
    free(old_home);
}
END_TEST

/* A tool installed from PyPI (site-packages/nvidia/cu<N>/bin) is found without any
 * variable set: a fake one is planted under a temporary $HOME/.local. */
START_TEST(test_find_tool_in_site_packages)
{
    char home[] = "/tmp/dl_census_home_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(home));
    char dir[512], tool[600], cmd[700];
    snprintf(dir, sizeof dir, "%s/.local/lib/python3.99/site-packages/nvidia/cu13/bin", home);
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(tool, sizeof tool, "%s/dl-fake-tool", dir);
    FILE *f = fopen(tool, "w");
    ck_assert_ptr_nonnull(f);
    fputs("#!/bin/sh\n", f);
    fclose(f);
    ck_assert_int_eq(chmod(tool, 0755), 0);
    char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("PATH", "/nonexistent-dir-a", 1);
    setenv("HOME", home, 1);
    char p[1024];
    ck_assert_int_eq(dl_census_find_tool("dl-fake-tool", NULL, p, sizeof p), 0);
    ck_assert_str_eq(p, tool);
    if (old_path) setenv("PATH", old_path, 1);
    if (old_home) setenv("HOME", old_home, 1);
    free(old_path);
    free(old_home);
    snprintf(cmd, sizeof cmd, "rm -rf %s", home);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_csv_round_trip)
{
    char dir[] = "/tmp/dl_test_census.XXXXXX", path[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/census.csv", dir);
    dl_census_row r[2];
    dl_census_row_init(&r[0]);
    snprintf(r[0].source, sizeof r[0].source, "sass");
    snprintf(r[0].kernel, sizeof r[0].kernel, "void k<128, (dl_dtype)3, true>(dl_gpu_args, int)");
    snprintf(r[0].metric, sizeof r[0].metric, "class:conv");
    r[0].value = 40;
    r[1] = r[0];
    snprintf(r[1].kernel, sizeof r[1].kernel, "a \"quoted\" name");
    r[1].value = 0.1;
    ck_assert_int_eq(dl_census_append(path, r, 1), 0);
    ck_assert_int_eq(dl_census_append(path, r + 1, 1), 0);
    dl_census_row *back = NULL;
    int64_t n = 0;
    ck_assert_int_eq(dl_census_read(path, &back, &n), 0);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(back[0].kernel, r[0].kernel); /* commas inside a field survive */
    ck_assert_str_eq(back[1].kernel, r[1].kernel); /* quotes survive */
    ck_assert(back[0].value == 40 && back[1].value == 0.1); /* %.17g reads back exactly */
    ck_assert(isnan(back[0].value) == 0 && back[0].launches == -1);
    free(back);
    /* a file of another format is refused, not overwritten */
    FILE *f = fopen(path, "w");
    fputs("a,b\n1,2\n", f);
    fclose(f);
    ck_assert_int_ne(dl_census_append(path, r, 1), 0);
    ck_assert_ptr_nonnull(strstr(dl_last_error(), "header"));
    unlink(path);
    rmdir(dir);
}
END_TEST

/* ---------------------------------------------------------------- the real binary */

static dl_census real;
static int real_rc = -1;      /* dl_census_disassemble's status; -1 until census_setup has run */
static char real_err[2200];   /* its error line */

/* The real binary's census, taken once for the whole suite (an unchecked fixture: it runs in Check's parent
 * process, so each forked test inherits it): the disassembly of every kernel takes ~30 s. Nothing is judged
 * here; load_real() fails the test that needs the census when it could not be taken. */
static void census_setup(void)
{
    char tool[1024];
    if (!DL_HAVE_CUDA || dl_census_find_tool("cuobjdump", "DL_CUOBJDUMP", tool, sizeof tool) != 0) return;
    const char *bin = getenv("DL_BIN");
    char path[1024];
    snprintf(path, sizeof path, "%s", bin ? bin : "build/decodelab");
    memset(&real, 0, sizeof real);
    real_rc = dl_census_disassemble(path, &real);
    snprintf(real_err, sizeof real_err, "%s: %s", path, real_rc ? dl_last_error() : "");
}

static void census_teardown(void) { dl_census_free(&real); }

static void load_real(void)
{
    ck_assert_msg(real_rc != -1, "the suite's census was not taken (census_setup did not run)");
    if (real_rc != 0)
        ck_abort_msg("cannot take the census of %s (install cuobjdump + nvdisasm: "
                     "pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm, then put site-packages/nvidia/cu13/bin "
                     "on PATH or set DL_CUOBJDUMP to its cuobjdump)", real_err);
}

/* Sum of class cls over the variant's kernels whose kv template argument is kv ("" = any). */
static int64_t sum_class(const dl_variant *v, const char *kv, int cls, int *nk)
{
    int64_t s = 0;
    *nk = 0;
    for (int i = 0; i < real.n; i++)
        if (dl_census_kernel_matches(v->kernel, real.k[i].name) && (!*kv || !strcmp(real.k[i].kv_dtype, kv))) {
            s += real.k[i].cls[cls];
            (*nk)++;
        }
    return s;
}

/* Whether two demangled kernel names differ only in the dequant template argument: the last
 * one ("<128, (dl_dtype)2, true>(", "<..., simt_fp32, 1>("), or for the streaming family
 * (<D, KV, DQ, NT>) the one before the last. Every other argument (head dim, KV dtype,
 * arithmetic, group tiles) and the rest of the name must match. */
static int split_args(const char *p, const char *end, const char **arg)
{
    int n = 0;
    while (p && p < end && n < 8) {
        arg[n++] = p;
        p = strstr(p, ", ");
        if (p) p += 2;
    }
    return n;
}

static int same_but_dequant(const char *a, const char *b)
{
    const char *la = strchr(a, '<'), *lb = strchr(b, '<'), *ea = strstr(a, ">("), *eb = strstr(b, ">(");
    if (!la || !lb || !ea || !eb || la - a != lb - b || strncmp(a, b, (size_t)(la - a)) || strcmp(ea, eb))
        return 0;
    /* the template arguments, split at ", " (none of ours holds a comma) */
    const char *arg_a[8], *arg_b[8];
    const int na = split_args(la + 1, ea, arg_a);
    const int nb = split_args(lb + 1, eb, arg_b);
    if (na != nb || na < 2) return 0;
    const int dq = strstr(a, "stream_decode_kernel<") ? 2 : na - 1; /* <D, KV, DQ, NT, PAGE>; elsewhere the last */
    for (int i = 0; i < na; i++) {
        const char *enda = i + 1 < na ? arg_a[i + 1] : ea, *endb = i + 1 < nb ? arg_b[i + 1] : eb;
        if (i == dq) continue;
        if (enda - arg_a[i] != endb - arg_b[i] || strncmp(arg_a[i], arg_b[i], (size_t)(enda - arg_a[i]))) return 0;
    }
    return 1;
}

START_TEST(test_design_in_the_disassembly)
{
    if (!DL_HAVE_CUDA) {
        printf("test_census: this build has no CUDA kernels (CUDA=0): design assertions not applicable\n");
        return;
    }
    if (!dl_test_have_cuobjdump("test_census", "design_in_the_disassembly")) return;
    load_real();
    int checked_fast = 0, checked_16bit = 0;
    for (int i = 0; i < dl_num_variants; i++) {
        const dl_variant *v = &dl_variants[i];
        if (!v->launch) continue; /* a registry row with no kernel in this build */
        int nk;
        int64_t tensor = sum_class(v, "", DL_CLS_TENSOR, &nk);
        /* Every built variant must be findable in its machine code, or the census says nothing about it. */
        ck_assert_msg(v->kernel && nk > 0, "%s: no kernel of the binary matches its registry glob '%s'", v->name,
                      v->kernel ? v->kernel : "(none)");
        if (v->unit == DL_UNIT_SIMT) {
            /* CUDA-core variants are the E2 control: their design issues FFMA/HFMA2 only, so any tensor
             * instruction would mean a helper or the compiler brought in MMA and the E2 comparison
             * (profiler counter vs machine code) would be about the wrong kernel. */
            ck_assert_msg(tensor == 0, "%s holds %lld tensor instructions", v->name, (long long)tensor);
        } else {
            /* Tensor-core variants exist to put QK and PV on the MMA units: every instantiation must
             * hold tensor instructions (mma.sync -> HMMA/QMMA, wgmma -> HGMMA/QGMMA). */
            for (int k = 0; k < real.n; k++)
                if (dl_census_kernel_matches(v->kernel, real.k[k].name))
                    ck_assert_msg(real.k[k].cls[DL_CLS_TENSOR] > 0, "%s: %s holds no tensor instruction", v->name,
                                  real.k[k].name);
            if (v->unit == DL_UNIT_WGMMA) {
                /* warpgroup MMA must assemble to the Hopper GMMA instruction of its compute type - QGMMA
                 * for FP8, HGMMA for BF16 - and never to HMMA (issue 12) */
                int64_t hg = 0, qg = 0, h = 0;
                for (int k = 0; k < real.n; k++)
                    if (dl_census_kernel_matches(v->kernel, real.k[k].name)) {
                        hg += real.k[k].op[dl_census_opcode_index("HGMMA")];
                        qg += real.k[k].op[dl_census_opcode_index("QGMMA")];
                        h += real.k[k].op[dl_census_opcode_index("HMMA")];
                    }
                const int fp8 = v->compute == DL_COMPUTE_FP8;
                ck_assert_msg(fp8 ? qg > 0 && hg == 0 : hg > 0 && qg == 0, "%s: %lld QGMMA, %lld HGMMA (want only %s)",
                              v->name, (long long)qg, (long long)hg, fp8 ? "QGMMA" : "HGMMA");
                ck_assert_msg(h == 0, "%s: %lld HMMA beside its GMMA (issue 12: no HMMA on the native path)", v->name,
                              (long long)h);
            }
        }
        if (v->dequant != DL_DEQUANT_FAST) continue;
        /* the cast sibling: same compute and unit, dequant cast */
        const dl_variant *cast = NULL;
        for (int j = 0; j < dl_num_variants; j++)
            if (dl_variants[j].compute == v->compute && dl_variants[j].unit == v->unit &&
                dl_variants[j].dequant == DL_DEQUANT_CAST && dl_variants[j].launch)
                cast = &dl_variants[j];
        if (!cast) continue;
        const char *fp8[] = {"e4m3", "e5m2"};
        for (int t = 0; t < 2; t++) {
            int nf, nc;
            int64_t conv_fast = sum_class(v, fp8[t], DL_CLS_CONV, &nf);
            int64_t conv_cast = sum_class(cast, fp8[t], DL_CLS_CONV, &nc);
            ck_assert_msg(nf > 0 && nc > 0, "%s/%s: no %s instantiation", v->name, cast->name, fp8[t]);
            /* The bit trick replaces the per-element F2F/F2FP conversions by byte moves and one
             * multiply, so the fast kernel must hold fewer conversion instructions than its cast
             * sibling on an FP8 cache (seen in the disassembly: 8 vs 40 per simt instantiation,
             * 20 vs 116..404 per mma instantiation, 16 vs 64 for bf16-*-simt, for e4m3 and e5m2 alike).
             * Not asserted: that the fast kernel holds no more conversions than on a bf16 cache - true
             * for fp32-*-simt and bf16-*-mma, but bf16-fast-simt keeps 4 more per instantiation. */
            ck_assert_msg(conv_fast < conv_cast, "%s %s: %lld conversions, %s: %lld", v->name, fp8[t],
                          (long long)conv_fast, cast->name, (long long)conv_cast);
            checked_fast++;
        }
        /* For a 16-bit cache the dequant axis has nothing to do: the FAST template flag must not
         * change a single instruction of the 16-bit instantiations. */
        const char *b16[] = {"bf16", "f16"};
        for (int t = 0; t < 2; t++)
            for (int k = 0; k < real.n; k++) {
                if (!dl_census_kernel_matches(v->kernel, real.k[k].name) || strcmp(real.k[k].kv_dtype, b16[t])) continue;
                /* its cast twin: the same name but for the dequant template argument */
                int twins = 0;
                for (int m = 0; m < real.n; m++) {
                    if (!dl_census_kernel_matches(cast->kernel, real.k[m].name) || strcmp(real.k[m].kv_dtype, b16[t]))
                        continue;
                    if (!same_but_dequant(real.k[k].name, real.k[m].name)) continue;
                    twins++;
                    ck_assert_msg(real.k[k].total == real.k[m].total, "%s vs %s: %lld vs %lld instructions",
                                  real.k[k].name, real.k[m].name, (long long)real.k[k].total,
                                  (long long)real.k[m].total);
                }
                ck_assert_msg(twins == 1, "%s: %d cast twins", real.k[k].name, twins);
                checked_16bit++;
            }
    }
    /* the registry has fast/cast pairs (fp32-*-simt, bf16-*-simt, bf16-*-mma, bf16-*-stream): the
     * comparisons must have run, the 16-bit one on every 16-bit fast instantiation */
    ck_assert_int_ge(checked_fast, 2);
    ck_assert_int_ge(checked_16bit, 2);
}
END_TEST

/* The registry's globs claim each kernel of the binary at most once, and each streaming warp-consumer
 * kernel (stream_decode_kernel<D, KV, DQ, NT, PAGE>) by the variant of its dequant argument (0 cast,
 * 1 fast, 2 hw): once the page-stage argument followed NT (attempt #26, 2026-12-04), the globs "<*, 1, *>"
 * and "<*, 2, *>" also matched NT = 1 and NT = 2, and gave bf16-fast-stream and bf16-hw-stream other
 * policies' kernels in the census (the committed census runs, 2026-12-01, predate it). Their hot loops hold what the
 * design says a 64-token tile costs a warp: (64 / 16) x (D / 16) HMMAs for S and as many for P*V per
 * n8 tile of query heads, and with the hardware conversion at least one F2FP per two FP8 bytes of the
 * tile's K and V (64 x D x 2 bytes over 32 lanes). */
START_TEST(test_one_variant_per_kernel)
{
    if (!DL_HAVE_CUDA) {
        printf("SKIP test_census one_variant_per_kernel: built without CUDA (no kernels to census)\n");
        fflush(stdout);
        return;
    }
    if (!dl_test_have_cuobjdump("test_census", "one_variant_per_kernel")) return;
    load_real();
    int stream = 0;
    for (int k = 0; k < real.n; k++) {
        const dl_variant *by = NULL;
        int claims = 0;
        for (int v = 0; v < dl_num_variants; v++)
            if (dl_census_kernel_matches(dl_variants[v].kernel, real.k[k].name)) {
                claims++;
                by = &dl_variants[v];
            }
        ck_assert_msg(claims <= 1, "%s is claimed by %d variants", real.k[k].name, claims);
        int D, kv, dq, nt;
        const char *p = strstr(real.k[k].name, "stream_decode_kernel<");
        if (!p || sscanf(p, "stream_decode_kernel<%d, (dl_dtype)%d, %d, %d", &D, &kv, &dq, &nt) != 4) continue;
        const dl_dequant want[] = {DL_DEQUANT_CAST, DL_DEQUANT_FAST, DL_DEQUANT_HW};
        ck_assert_msg(claims == 1 && dq >= 0 && dq < 3 && by->dequant == want[dq], "%s: claimed by %s", real.k[k].name,
                      by ? by->name : "no variant");
        const dl_census_loop *L = &real.k[k].loop;
        ck_assert_msg(L->found && L->cls[DL_CLS_TENSOR] == 2 * (64 / 16) * (D / 16) * nt,
                      "%s: hot loop with %lld tensor instructions", real.k[k].name, (long long)L->cls[DL_CLS_TENSOR]);
        if (dq == 2 && (kv == DL_E4M3 || kv == DL_E5M2))
            ck_assert_msg(L->cls[DL_CLS_CONV] >= 64 * D * 2 / 32 / 2, "%s: %lld conversions in the hot loop",
                          real.k[k].name, (long long)L->cls[DL_CLS_CONV]);
        ck_assert_msg(L->stall > 0, "%s: no control words read", real.k[k].name);
        stream++;
    }
    ck_assert_int_ge(stream, 3 * 3 * 4 * 2); /* three policies, D 64/128/256, four KV types, one and two n8 tiles */
}
END_TEST

/* decodelab sass --base: the real binary against itself, every kernel listed pairs with its instantiation and
 * nothing differs (registers read, a hot loop each); a base that cannot be read is refused in one line naming it,
 * before any disassembly. */
START_TEST(test_sass_base)
{
    dl_test_mkdir("census_base");
    char missing[1200];
    snprintf(missing, sizeof missing, "%s/no-such-binary", dl_test_dir);
    int rc = DL_RUN("sass", "--base", missing);
    ck_assert_msg(rc == 2 && dl_test_lines(dl_test_err) == 1 && strstr(dl_test_err, missing) &&
                      strstr(dl_test_err, "--base"), "exit %d, stderr: %s", rc, dl_test_err);
    ck_assert_str_eq(dl_test_out, "");
    if (!DL_HAVE_CUDA || !dl_test_have_cuobjdump("test_census", "sass_base")) {
        ck_assert_int_eq(dl_test_rmdir(), 0);
        return;
    }
    const char *bin = getenv("DL_BIN") ? getenv("DL_BIN") : "build/decodelab";
    /* fp8-none-mma: six small kernels, so that only they are disassembled (seconds, not the ~30 of all) */
    rc = DL_RUN("sass", "--binary", bin, "--base", bin, "--variants", "fp8-none-mma", "--loop");
    ck_assert_msg(rc == 0, "exit %d, stderr: %s", rc, dl_test_err);
    int lines = 0, listed = -1, differ = -1, here = -1, base = -1;
    for (const char *p = dl_test_out; (p = strstr(p, "\ncompare\t")); p++) {
        char variant[64], kernel[256], regs[32], stack[32];
        ck_assert_int_eq(sscanf(p + 1, "compare\t%63[^\t]\t%255[^\t]\t%31[^\t]\t%31[^\t]", variant, kernel, regs, stack), 4);
        ck_assert_str_eq(variant, "fp8-none-mma");
        ck_assert_msg(!strchr(regs, '>') && atoi(regs) > 0, "%s: regs '%s'", kernel, regs);
        ck_assert_msg(!strchr(stack, '>') && !strchr(stack, '?'), "%s: stack '%s'", kernel, stack);
        lines++;
    }
    const char *sum = strstr(dl_test_out, "compare: ");
    ck_assert_ptr_nonnull(sum);
    ck_assert_int_eq(sscanf(sum, "compare: %d kernels listed, %d differ, %d not in the base, %d only in the base",
                            &listed, &differ, &here, &base), 4);
    ck_assert_int_eq(lines, 3 * 2); /* D 64/128/256, e4m3 and e5m2 */
    ck_assert_int_eq(listed, lines);
    /* the header says how many the binary holds and how many were disassembled: those the variant claims */
    int in_binary = -1, disassembled = -1;
    const char *kl = strstr(dl_test_out, "\nkernels: ");
    ck_assert_ptr_nonnull(kl);
    ck_assert_int_eq(sscanf(kl, "\nkernels: %d (%d disassembled", &in_binary, &disassembled), 2);
    ck_assert_int_eq(disassembled, lines);
    ck_assert_int_gt(in_binary, 100);
    ck_assert_int_eq(differ, 0);
    ck_assert_int_eq(here, 0);
    ck_assert_int_eq(base, 0);
    ck_assert_int_eq(dl_test_rmdir(), 0);
}
END_TEST

START_TEST(test_rows_cover_every_kernel)
{
    if (!DL_HAVE_CUDA) {
        printf("SKIP test_census rows_cover_every_kernel: built without CUDA (no kernels to census)\n");
        fflush(stdout);
        return;
    }
    if (!dl_test_have_cuobjdump("test_census", "rows_cover_every_kernel")) return;
    load_real();
    dl_census_row *rows = NULL;
    int64_t n = 0;
    ck_assert_int_eq(dl_census_rows(&real, &rows, &n), 0);
    /* each (variant, kernel) pair gives 1 total + one row per class + one per opcode, and the
     * class rows of a pair add up to the sum of its opcode rows */
    const int per = 1 + DL_CLS_COUNT + dl_census_num_opcodes();
    ck_assert_int_eq(n % per, 0);
    ck_assert_int_ge(n / per, real.n);
    for (int64_t i = 0; i < n; i += per) {
        double cls = 0, ops = 0;
        for (int j = 1; j < per; j++) {
            if (!strncmp(rows[i + j].metric, "class:", 6)) cls += rows[i + j].value;
            else ops += rows[i + j].value;
        }
        ck_assert_str_eq(rows[i].metric, "total");
        ck_assert(cls == ops && ops <= rows[i].value);
    }
    free(rows);
}
END_TEST

Suite *make_suite(void)
{
    const TTest *tests[] = {test_parse_listing, test_find_tool_error_names_every_place, test_find_tool_in_site_packages,
                            test_csv_round_trip, test_design_in_the_disassembly, test_rows_cover_every_kernel,
                            test_hot_loop, test_one_variant_per_kernel, test_sass_out_refused_first,
                            test_parse_resources, test_sass_base, test_loop_zeroing};
    TCase *tc = NULL;
    Suite *s = dl_test_suite("census", 120, NULL, NULL, tests, (int)(sizeof tests / sizeof tests[0]), &tc);
    tcase_add_unchecked_fixture(tc, census_setup, census_teardown);
    return s;
}

DL_TEST_MAIN

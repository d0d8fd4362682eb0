/* dl_census.h - the instruction census of the GPU kernels (`decodelab sass`)
 * and the census table that also holds Nsight Compute counters (`decodelab ncu`).
 *
 * The census disassembles a binary with `cuobjdump -sass`, splits the listing
 * into kernel functions, counts each instruction by its base opcode (the part
 * before the first '.', predicate stripped) into classes, demangles the names
 * (c++filt) and maps every kernel to the registry variants whose `kernel` glob
 * matches its demangled name. Table format: data/SCHEMA.md (census table). */
#ifndef DL_CENSUS_H
#define DL_CENSUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DL_CENSUS_FORMAT "decodelab-census"

/* Instruction classes (mission E2/E3). */
typedef enum {
    DL_CLS_TENSOR = 0, /* HMMA HGMMA QGMMA IMMA (and QMMA) */
    DL_CLS_FP32,       /* FFMA FMUL FADD */
    DL_CLS_PACKED16,   /* HFMA2 HMUL2 HADD2 */
    DL_CLS_CONV,       /* F2F F2FP I2F F2I */
    DL_CLS_BYTEBIT,    /* PRMT LOP3 SHF */
    DL_CLS_MEM,        /* LDG LDGSTS LDS STS LDSM UTMALDG */
    DL_CLS_MUFU,       /* MUFU */
    DL_CLS_COUNT
} dl_census_class;

/* Class names as stored ("tensor" "fp32" "packed16" "conv" "bytebit" "mem" "mufu"). */
const char *dl_census_class_name(int cls);
/* Parse a class name; -1 if unknown. */
int dl_census_class_parse(const char *s);
/* How many opcodes the census counts one by one (the members of all classes). */
int dl_census_num_opcodes(void);
/* Index of a base opcode among them, -1 if it is not counted. */
int dl_census_opcode_index(const char *op);

/* One instruction form of a kernel: the full opcode with its modifiers, as the listing writes it
 * (predicate stripped): "HFMA2.MMA", "HFMA2.BF16_V2", "F2FP.BF16.F32.PACK_AB", "HMMA.16816.F32.BF16".
 * The base-opcode census above folds these together (HFMA2.MMA and HFMA2 are both op:HFMA2);
 * `decodelab sass --forms` names them apart (issue 13, E2). */
typedef struct {
    char form[64];
    int64_t count;
    int64_t rz_moves;       /* HFMA2*: instances whose multiplicands are -RZ and RZ (d = c: a move of c) */
    char example[128];      /* the first instance, opcode and operands, without address and encoding */
} dl_census_form;

/* A kernel's hot loop (`decodelab sass --loop`): of the spans from a backward branch's target to the
 * branch that hold tensor instructions (when none does: fp32 + packed16 ones), the innermost (no other
 * such span inside it), then the one holding the most, then the shortest: a tile loop, not the segment
 * loop around it, even where the tile loop's last iteration is peeled off after it. Static
 * counts: every instruction of the span once, the paths a full tile skips included. stall: the cycles the
 * control codes make the warp wait after each instruction (bits 41-44 of an instruction's second 64-bit
 * word, sm_70 and later), summed: a floor on one warp's time through the span, scoreboard waits (on a
 * variable-latency result: shared memory, MUFU, shuffles) not timed but counted in sb_waits; -1 when the
 * listing has no control word for some instruction of the span. */
typedef struct {
    int found;              /* 0: the kernel has no backward branch */
    uint32_t first, branch; /* addresses of the span's first instruction and of its backward branch */
    int64_t total, cls[DL_CLS_COUNT], stall, sb_waits;
    int64_t zeroing; /* of total: what a predicated forward branch skips inside the span where that holds a store
                      * of RZ to shared memory and no tensor instruction (a partial tile's zeroing, which a full
                      * tile skips): total - zeroing counts a full tile's path more nearly */
} dl_census_loop;

/* One kernel function of the listing. */
typedef struct {
    char arch[16];          /* "sm_90a" */
    char mangled[512];
    char name[1024];        /* demangled (c++filt), or the mangled name when it cannot be demangled */
    char kv_dtype[8];       /* from a "(dl_dtype)N" template argument, "" if none */
    int64_t total;          /* every instruction */
    int64_t cls[DL_CLS_COUNT];
    int64_t *op;            /* [dl_census_num_opcodes()] */
    dl_census_form *forms;  /* every instruction form of the kernel, in order of first appearance */
    int nforms, capforms;
    dl_census_loop loop;    /* its hot loop */
    int regs, stack;        /* registers a thread and stack bytes a thread (spills), from `cuobjdump -res-usage`;
                             * -1 where the listing gave none */
} dl_census_kernel;

typedef struct {
    dl_census_kernel *k;
    int n, cap;
    int in_binary;          /* kernels in the binary (n, unless dl_census_disassemble_only left some out) */
    char tool[1024];        /* the cuobjdump that made it ("" when parsed from text) */
    char binary[1024];
} dl_census;

void dl_census_free(dl_census *c);

/* Find a tool: on PATH, then $CUDA_HOME/bin (and /usr/local/cuda/bin), then the
 * path in env var `envvar`. On failure records one line naming everything tried. */
int dl_census_find_tool(const char *tool, const char *envvar, char *path, size_t n);

/* Parse a `cuobjdump -sass` listing from f into c (appends kernels). */
int dl_census_parse(FILE *f, dl_census *c);
/* Fill regs and stack of c's kernels from a `cuobjdump -res-usage` listing (" Function <mangled>:" then
 * "  REG:168 STACK:24 ..."), by mangled name; kernels it does not name keep -1. Returns 0, or dl_fail() on a
 * Function line without its REG line. */
int dl_census_parse_resources(FILE *f, dl_census *c);
/* Demangle every kernel's name through c++filt (left mangled if c++filt is
 * missing; returns 0 either way unless out of memory) and fill kv_dtype. */
int dl_census_demangle(dl_census *c);
/* Find cuobjdump (env DL_CUOBJDUMP last), disassemble binary, parse, read its resource usage, demangle. */
int dl_census_disassemble(const char *binary, dl_census *c);
/* The same for the kernels whose demangled name keep(name, ctx) accepts, alone (keep NULL: every kernel): the
 * disassembly costs ~0.1 s a kernel (~30 s for all of decodelab's), `cuobjdump -res-usage` names them at once. */
typedef int (*dl_census_keep_fn)(const char *name, void *ctx);
int dl_census_disassemble_only(const char *binary, dl_census_keep_fn keep, void *ctx, dl_census *c);

/* Instances of the kernel's forms that match glob: fnmatch patterns separated by '|'
 * ("HFMA2.MMA*", "HMMA.*|HFMA2.MMA", exact "PRMT"). */
int64_t dl_census_form_count(const dl_census_kernel *k, const char *glob);
/* The forms of k sorted by count (largest first, then by name) into a new array of k->nforms
 * pointers (free()); NULL when out of memory or k has none. */
const dl_census_form **dl_census_forms_sorted(const dl_census_kernel *k);

/* The kernel of c whose demangled name is name, or NULL (`decodelab sass --base`: the same instantiation in
 * another build; the anonymous namespace's hash is not part of the demangled name). */
const dl_census_kernel *dl_census_find(const dl_census *c, const char *name);

/* Does the demangled kernel name match a variant's kernel glob (fnmatch)? */
int dl_census_kernel_matches(const char *glob, const char *demangled);

/* ---- the census table (CSV, appended atomically: data/SCHEMA.md) ---- */
typedef struct {
    char source[8];         /* "sass" or "ncu" */
    char variant[64];       /* registry name, "-" when no variant's glob matches */
    char kernel[1024];      /* demangled kernel name */
    char arch[16];          /* sass: the listing's arch; ncu: "sm_<cc>" */
    char kv_dtype[8];
    char metric[128];       /* sass: "class:<name>", "op:<OPCODE>" or "total"; ncu: the metric name */
    double value;
    char unit[24];          /* "inst" for sass; ncu's unit */
    int64_t launches;       /* ncu: launches of the kernel profiled (value is the first); sass: -1 */
    char golden_path[1024]; /* ncu: the golden file run; sass: "" */
    char golden_hash[32];
    char binary[1024];      /* the disassembled / profiled binary */
    char tool[1024];        /* cuobjdump or ncu path */
    char device_name[128];
    char generator[256];
    char date_utc[32];
    char hostname[64];
} dl_census_row;

void dl_census_row_init(dl_census_row *r);   /* empty strings, value NaN, launches -1, date/host/generator stamped */
/* Rows of the sass census: for each variant and each kernel its glob matches, one row per
 * class, per counted opcode and the total. Kernels no variant claims get variant "-".
 * *rows is allocated (free()). */
int dl_census_rows(const dl_census *c, dl_census_row **rows, int64_t *n);
/* Rows of the form census (`decodelab sass --forms --out`): for each kernel whose demangled name
 * matches kernel_glob (NULL: every kernel), one row per form with metric "form:<FORM>" (value: its
 * static count), under every variant whose glob claims the kernel, or "-". Not part of
 * dl_census_rows(): the class/opcode rows stay as they were. *rows allocated (free()). */
int dl_census_form_rows(const dl_census *c, const char *kernel_glob, dl_census_row **rows, int64_t *n);
/* The hot-loop rows of kernel k listed under variant (`decodelab sass --loop --out`): metrics
 * "loop:total", "loop:class:<name>" (unit inst), "loop:stall_cycles" (unit cycles, -1 unknown),
 * "loop:scoreboard_waits" and "loop:zeroing" (inst), into out (room for DL_CENSUS_LOOP_ROWS). Returns the rows written:
 * 0 when k has no loop. */
#define DL_CENSUS_LOOP_ROWS (DL_CLS_COUNT + 4)
int dl_census_loop_rows(const dl_census *c, const dl_census_kernel *k, const char *variant, dl_census_row *out);

/* Append rows to a CSV census table (created with its header if absent):
 * flock the directory, read the old file (refusing another header), write old + new
 * to a temporary, fsync, rename. */
int dl_census_append(const char *csv_path, const dl_census_row *rows, int64_t n);
/* Read every row of a census table. *rows allocated (free()). */
int dl_census_read(const char *csv_path, dl_census_row **rows, int64_t *n);

#ifdef __cplusplus
}
#endif
#endif

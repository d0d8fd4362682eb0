/* census.c - the SASS instruction census (see dl_census.h): find cuobjdump,
 * disassemble, split the listing into kernels, count opcodes by class,
 * demangle, map kernels to registry variants, and the census CSV table
 * (data/SCHEMA.md, census table) shared with the Nsight Compute counters. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../gpu/dl_registry.h"
#include "dl_census.h"
#include "dl_results.h"
#include "dl_golden.h"
#include "dl_proc.h"

/* ---------------------------------------------------------------- classes */

static const char *const class_names[DL_CLS_COUNT] = {"tensor", "fp32", "packed16", "conv", "bytebit", "mem", "mufu"};

static const struct {
    const char *op;
    int cls;
} opcodes[] = {
    {"HMMA", DL_CLS_TENSOR},  {"HGMMA", DL_CLS_TENSOR},  {"QGMMA", DL_CLS_TENSOR}, {"IMMA", DL_CLS_TENSOR},
    {"QMMA", DL_CLS_TENSOR}, /* FP8 mma.sync may assemble to this on sm_89+ */
    {"FFMA", DL_CLS_FP32},    {"FMUL", DL_CLS_FP32},     {"FADD", DL_CLS_FP32},
    {"HFMA2", DL_CLS_PACKED16}, {"HMUL2", DL_CLS_PACKED16}, {"HADD2", DL_CLS_PACKED16},
    {"F2F", DL_CLS_CONV},     {"F2FP", DL_CLS_CONV},     {"I2F", DL_CLS_CONV},     {"F2I", DL_CLS_CONV},
    {"PRMT", DL_CLS_BYTEBIT}, {"LOP3", DL_CLS_BYTEBIT},  {"SHF", DL_CLS_BYTEBIT},
    {"LDG", DL_CLS_MEM},      {"LDGSTS", DL_CLS_MEM},    {"LDS", DL_CLS_MEM},      {"STS", DL_CLS_MEM},
    {"LDSM", DL_CLS_MEM},     {"UTMALDG", DL_CLS_MEM},
    {"MUFU", DL_CLS_MUFU},
};
#define NUM_OPS ((int)(sizeof opcodes / sizeof opcodes[0]))

const char *dl_census_class_name(int cls) { return cls >= 0 && cls < DL_CLS_COUNT ? class_names[cls] : "?"; }
int dl_census_class_parse(const char *s)
{
    for (int i = 0; i < DL_CLS_COUNT; i++)
        if (s && !strcmp(s, class_names[i])) return i;
    return -1;
}
int dl_census_num_opcodes(void) { return NUM_OPS; }
int dl_census_opcode_index(const char *op)
{
    for (int i = 0; i < NUM_OPS; i++)
        if (!strcmp(op, opcodes[i].op)) return i;
    return -1;
}

void dl_census_free(dl_census *c)
{
    for (int i = 0; c && i < c->n; i++) {
        free(c->k[i].op);
        free(c->k[i].forms);
    }
    if (c) free(c->k);
    if (c) memset(c, 0, sizeof *c);
}

/* ---------------------------------------------------------------- finding tools */

static int executable(const char *p) { return access(p, X_OK) == 0; }

int dl_census_find_tool(const char *tool, const char *envvar, char *path, size_t n)
{
    char tried[2048] = "";
    size_t used = 0;
#define TRIED(...) do { if (used < sizeof tried) used += (size_t)snprintf(tried + used, sizeof tried - used, __VA_ARGS__); } while (0)
    const char *pathenv = getenv("PATH");
    if (pathenv && *pathenv) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", pathenv);
        char *save = NULL;
        for (char *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
            snprintf(path, n, "%s/%s", *d ? d : ".", tool);
            if (executable(path)) return 0;
        }
        TRIED("PATH");
    } else {
        TRIED("PATH (unset)");
    }
    const char *cuda_home = getenv("CUDA_HOME");
    if (cuda_home && *cuda_home) {
        snprintf(path, n, "%s/bin/%s", cuda_home, tool);
        if (executable(path)) return 0;
        TRIED(", %s", path);
    } else {
        TRIED(", $CUDA_HOME/bin (CUDA_HOME unset)");
    }
    if (!cuda_home || strcmp(cuda_home, "/usr/local/cuda")) {
        snprintf(path, n, "/usr/local/cuda/bin/%s", tool);
        if (executable(path)) return 0;
        TRIED(", %s", path);
    }
    const char *env = envvar ? getenv(envvar) : NULL;
    if (env && *env) {
        snprintf(path, n, "%s", env);
        if (executable(path)) return 0;
        TRIED(", %s=%s (not an executable file)", envvar, env);
    } else if (envvar) {
        TRIED(", $%s (unset)", envvar);
    }
    /* the PyPI packages nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm put the tools under
     * site-packages/nvidia/cu<major>/bin: look in the usual Python prefixes (newest last) */
    const char *home = getenv("HOME"), *venv = getenv("VIRTUAL_ENV");
    const char *prefixes[] = {venv, home, home, "/usr/local/lib", "/usr/lib"};
    const char *suffixes[] = {"/lib/python3*/site-packages", "/.local/lib/python3*/site-packages",
                              "/.pyenv/versions/*/lib/python3*/site-packages", "/python3*/dist-packages",
                              "/python3/dist-packages"};
    for (int i = 0; i < 5; i++) {
        if (!prefixes[i] || !*prefixes[i]) continue;
        char pat[1024];
        snprintf(pat, sizeof pat, "%s%s/nvidia/cu*/bin/%s", prefixes[i], suffixes[i], tool);
        glob_t gl;
        if (glob(pat, 0, NULL, &gl) == 0) {
            for (size_t k = gl.gl_pathc; k-- > 0;)
                if (executable(gl.gl_pathv[k])) {
                    snprintf(path, n, "%s", gl.gl_pathv[k]);
                    globfree(&gl);
                    return 0;
                }
        }
        globfree(&gl);
    }
    TRIED(", the nvidia/cu*/bin folders of Python site-packages (pip install nvidia-cuda-%s)",
          strcmp(tool, "c++filt") ? tool : "cuobjdump");
#undef TRIED
    path[0] = 0;
    return dl_fail("%s not found; tried %s", tool, tried);
}

/* ---------------------------------------------------------------- parsing */

static dl_census_kernel *new_kernel(dl_census *c, const char *arch, const char *mangled)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        dl_census_kernel *k = realloc(c->k, (size_t)cap * sizeof *k);
        if (!k) return NULL;
        c->k = k;
        c->cap = cap;
    }
    dl_census_kernel *k = &c->k[c->n];
    memset(k, 0, sizeof *k);
    k->op = calloc((size_t)NUM_OPS, sizeof *k->op);
    if (!k->op) return NULL;
    k->regs = k->stack = -1;
    snprintf(k->arch, sizeof k->arch, "%s", arch);
    snprintf(k->mangled, sizeof k->mangled, "%s", mangled);
    snprintf(k->name, sizeof k->name, "%s", mangled);
    c->n++;
    return k;
}

/* The base opcode of an instruction line "        /x0040x/   @!P0 FFMA.FTZ R1, ..." (x = '*'),
 * written into op, its address into *addr and whether it is predicated into *pred; 0 if the line holds an
 * instruction, -1 if not. With form != NULL also the full opcode with its modifiers ("FFMA.FTZ") into form, and
 * *operands set to the text after it. */
static int line_parse(const char *s, char *op, size_t n, char *form, size_t fn, const char **operands,
                      uint32_t *addr, int *pred)
{
    while (*s == ' ' || *s == '\t') s++;
    if (s[0] != '/' || s[1] != '*') return -1;
    const char *p = s + 2;
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return -1; /* the address */
    *addr = (uint32_t)strtoul(p, NULL, 16);
    while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')) p++;
    if (p[0] != '*' || p[1] != '/') return -1;
    p += 2;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '{') p++; /* dual-issue braces of old architectures */
    while (*p == ' ' || *p == '\t') p++;
    *pred = *p == '@';
    if (*pred) { /* predicate */
        while (*p && *p != ' ' && *p != '\t') p++;
        while (*p == ' ' || *p == '\t') p++;
    }
    const char *start = p;
    size_t i = 0;
    while (((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_') && i + 1 < n) op[i++] = *p++;
    op[i] = 0;
    if (i == 0) return -1;
    if (form) {
        size_t j = 0;
        /* a lowercase x between digits belongs to a shape modifier: HGMMA.64x8x16.F32.BF16 */
        for (p = start; ((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' ||
                         (*p == 'x' && p > start && p[-1] >= '0' && p[-1] <= '9' && p[1] >= '0' && p[1] <= '9')) &&
                        j + 1 < fn;
             p++)
            form[j++] = *p;
        form[j] = 0;
        while (*p == ' ' || *p == '\t') p++;
        if (operands) *operands = p;
    }
    return 0;
}

/* Whether the operands "R4, -RZ, RZ, 0, 0 ;" of an HFMA2 make it a move (d = -0 * 0 + c). */
static int rz_move(const char *operands)
{
    const char *c = strchr(operands, ',');
    if (!c) return 0;
    c++;
    while (*c == ' ') c++;
    return !strncmp(c, "-RZ, RZ,", 8) || !strncmp(c, "RZ, RZ,", 7) || !strncmp(c, "RZ, -RZ,", 8);
}

static int add_form(dl_census_kernel *k, const char *form, const char *operands)
{
    int j = 0;
    for (; j < k->nforms; j++)
        if (!strcmp(k->forms[j].form, form)) break;
    if (j == k->nforms) {
        if (k->nforms == k->capforms) {
            int cap = k->capforms ? 2 * k->capforms : 32;
            dl_census_form *f = realloc(k->forms, (size_t)cap * sizeof *f);
            if (!f) return -1;
            k->forms = f;
            k->capforms = cap;
        }
        dl_census_form *f = &k->forms[k->nforms++];
        memset(f, 0, sizeof *f);
        snprintf(f->form, sizeof f->form, "%s", form);
        int len = (int)strcspn(operands, ";\n");
        while (len > 0 && operands[len - 1] == ' ') len--;
        snprintf(f->example, sizeof f->example, "%s %.*s", form, len, operands);
    }
    k->forms[j].count++;
    if (!strncmp(form, "HFMA2", 5) && rz_move(operands)) k->forms[j].rz_moves++;
    return 0;
}

/* Whether form matches one of the '|'-separated globs of spec. */
static int form_matches(const char *spec, const char *form)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *g = strtok_r(buf, "|", &save); g; g = strtok_r(NULL, "|", &save))
        if (fnmatch(g, form, 0) == 0) return 1;
    return 0;
}

int64_t dl_census_form_count(const dl_census_kernel *k, const char *glob)
{
    int64_t s = 0;
    for (int j = 0; k && glob && j < k->nforms; j++)
        if (form_matches(glob, k->forms[j].form)) s += k->forms[j].count;
    return s;
}

static int cmp_form(const void *a, const void *b)
{
    const dl_census_form *x = *(const dl_census_form *const *)a, *y = *(const dl_census_form *const *)b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->form, y->form);
}

const dl_census_form **dl_census_forms_sorted(const dl_census_kernel *k)
{
    if (!k || k->nforms <= 0) return NULL;
    const dl_census_form **v = malloc((size_t)k->nforms * sizeof *v);
    if (!v) return NULL;
    for (int j = 0; j < k->nforms; j++) v[j] = &k->forms[j];
    qsort(v, (size_t)k->nforms, sizeof *v, cmp_form);
    return v;
}

/* ---------------------------------------------------------------- the hot loop */

/* What the hot loop needs of one instruction (dl_census.h, dl_census_loop). */
typedef struct {
    uint32_t addr, target; /* target: of a branch */
    int8_t cls;            /* -1: a class the census does not count */
    uint8_t stall, waits;  /* from the control word: stall cycles, and whether it waits on a scoreboard */
    uint8_t ctl, back;     /* its control word was read; it branches back (target <= addr) */
    uint8_t fwd, zero_st;  /* a predicated forward branch; a store of RZ to shared memory (STS* [..], RZ) */
} insn;

typedef struct {
    insn *v;
    int n, cap;
} insns;

/* The control word of an instruction: the listing's next line, a lone comment "/x 0x000fe20008000100 x/". */
static int control_word(const char *s, uint64_t *w)
{
    while (*s == ' ' || *s == '\t') s++;
    if (strncmp(s, "/* 0x", 5)) return -1;
    char *end;
    *w = strtoull(s + 5, &end, 16);
    while (*end == ' ') end++;
    return end > s + 5 && !strncmp(end, "*/", 2) ? 0 : -1;
}

/* First index of v[0..n) whose address is >= addr (addresses rise through a kernel). */
static int first_at(const insn *v, int n, uint32_t addr)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (v[mid].addr < addr) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* A span from a backward branch's target (first) to the branch (last), and its counts of the two keys. */
typedef struct {
    int first, last;
    int64_t tensor, fp; /* tensor instructions; fp32 + packed16 ones */
} span;

/* k->loop from the kernel's instructions v[0..n); -1 when out of memory. */
static int find_loop(dl_census_kernel *k, const insn *v, int n)
{
    memset(&k->loop, 0, sizeof k->loop);
    int nb = 0;
    for (int b = 0; b < n; b++) nb += v[b].back;
    if (nb == 0) return 0;
    int64_t (*pre)[2] = malloc((size_t)(n + 1) * sizeof *pre); /* prefix sums of the two keys */
    span *sp = malloc((size_t)nb * sizeof *sp);
    if (!pre || !sp) {
        free(pre);
        free(sp);
        return -1;
    }
    pre[0][0] = pre[0][1] = 0;
    for (int i = 0; i < n; i++) {
        pre[i + 1][0] = pre[i][0] + (v[i].cls == DL_CLS_TENSOR);
        pre[i + 1][1] = pre[i][1] + (v[i].cls == DL_CLS_FP32 || v[i].cls == DL_CLS_PACKED16);
    }
    int any_tensor = 0;
    nb = 0;
    for (int b = 0; b < n; b++)
        if (v[b].back) {
            const int t = first_at(v, n, v[b].target);
            sp[nb] = (span){t, b, pre[b + 1][0] - pre[t][0], pre[b + 1][1] - pre[t][1]};
            any_tensor |= sp[nb++].tensor > 0;
        }
    free(pre);
    /* the key: tensor where any span holds tensor instructions. Innermost: no other span with the key inside it (the
     * tile loop, not the segment loop around it, even where the tile loop's last iteration is peeled off after it);
     * of those the most, then the shortest */
#define KEY(j) (any_tensor ? sp[j].tensor : sp[j].fp)
    int best = -1;
    for (int j = 0; j < nb; j++) {
        if (KEY(j) <= 0) continue;
        int inner = 1;
        for (int m = 0; m < nb && inner; m++)
            if (m != j && KEY(m) > 0 && sp[m].first >= sp[j].first && sp[m].last <= sp[j].last &&
                (sp[m].first != sp[j].first || sp[m].last != sp[j].last))
                inner = 0;
        if (inner && (best < 0 || KEY(j) > KEY(best) ||
                      (KEY(j) == KEY(best) && sp[j].last - sp[j].first < sp[best].last - sp[best].first)))
            best = j;
    }
#undef KEY
    const int bt = best < 0 ? 0 : sp[best].first, bb = best < 0 ? -1 : sp[best].last;
    free(sp);
    if (bb < 0) return 0;
    dl_census_loop *L = &k->loop;
    L->found = 1;
    L->first = v[bt].addr;
    L->branch = v[bb].addr;
    int all_ctl = 1;
    for (int i = bt; i <= bb; i++) {
        L->total++;
        if (v[i].cls >= 0) L->cls[v[i].cls]++;
        L->stall += v[i].stall;
        L->sb_waits += v[i].waits;
        all_ctl &= v[i].ctl;
    }
    if (!all_ctl) L->stall = -1;
    /* the zeroing blocks: what a predicated forward branch of the loop skips, up to a target inside the loop, where
     * that holds a store of RZ to shared memory and no tensor instruction (a partial tile's zeroing) */
    unsigned char *z = calloc((size_t)(bb - bt + 1), 1);
    if (!z) return -1;
    for (int i = bt; i <= bb; i++) {
        if (!v[i].fwd || v[i].target > v[bb].addr) continue;
        const int e = first_at(v, n, v[i].target);
        int zs = 0, tensor = 0;
        for (int m = i + 1; m < e; m++) {
            zs |= v[m].zero_st;
            tensor |= v[m].cls == DL_CLS_TENSOR;
        }
        if (zs && !tensor)
            for (int m = i + 1; m < e; m++) z[m - bt] = 1;
    }
    for (int i = 0; i <= bb - bt; i++) L->zeroing += z[i];
    free(z);
    return 0;
}

/* Whether an STS's operands "[R36], RZ ;" store RZ. */
static int stores_rz(const char *operands)
{
    const char *p = strstr(operands, "],");
    if (!p) return 0;
    p += 2;
    while (*p == ' ') p++;
    return p[0] == 'R' && p[1] == 'Z' && (p[2] == ' ' || p[2] == ';' || p[2] == 0);
}

static int push_insn(insns *s, const insn *x)
{
    if (s->n == s->cap) {
        const int cap = s->cap ? 2 * s->cap : 4096;
        insn *v = realloc(s->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = *x;
    return 0;
}

int dl_census_parse(FILE *f, dl_census *c)
{
    char line[8192], arch[16] = "", op[64], form[64];
    const char *operands = "";
    dl_census_kernel *cur = NULL;
    insns in = {0};
    int pending = 0, rc = 0, pred = 0; /* pending: the last instruction still lacks its control word */
#define END_KERNEL() do { if (cur && find_loop(cur, in.v, in.n)) rc = dl_fail("sass listing: out of memory"); in.n = 0; } while (0)
    while (!rc && fgets(line, sizeof line, f)) {
        const char *a = strstr(line, "arch = ");
        if (a && !strstr(line, "Function")) {
            END_KERNEL();
            sscanf(a + 7, "%15s", arch);
            cur = NULL;
            continue;
        }
        const char *fn = strstr(line, "Function : ");
        if (fn) {
            END_KERNEL();
            char name[512];
            if (sscanf(fn + 11, "%511s", name) != 1) {
                rc = dl_fail("sass listing: unreadable function line: %.80s", line);
                break;
            }
            cur = new_kernel(c, arch, name);
            if (!cur) rc = dl_fail("sass listing: out of memory");
            continue;
        }
        if (!cur) continue;
        insn x = {0};
        uint64_t w;
        if (line_parse(line, op, sizeof op, form, sizeof form, &operands, &x.addr, &pred)) {
            if (pending && control_word(line, &w) == 0) {
                insn *p = &in.v[in.n - 1];
                p->stall = (uint8_t)((w >> 41) & 15);
                p->waits = ((w >> 52) & 63) != 0;
                p->ctl = 1;
            }
            pending = 0;
            continue;
        }
        cur->total++;
        if (add_form(cur, form, operands)) rc = dl_fail("sass listing: out of memory");
        int i = dl_census_opcode_index(op);
        x.cls = -1;
        if (i >= 0) {
            cur->op[i]++;
            cur->cls[opcodes[i].cls]++;
            x.cls = (int8_t)opcodes[i].cls;
        }
        if (!strcmp(op, "BRA")) { /* "BRA 0x2470 ;", "BRA.DIV UR8, 0x13620 ;": the last hex operand before ';' */
            const char *semi = strchr(operands, ';'), *h = strstr(operands, "0x"), *last = NULL;
            for (; h && (!semi || h < semi); h = strstr(h + 2, "0x")) last = h;
            if (last) {
                x.target = (uint32_t)strtoul(last, NULL, 16);
                x.back = x.target <= x.addr;
                x.fwd = !x.back && pred;
            }
        }
        x.zero_st = !strncmp(op, "STS", 3) && stores_rz(operands);
        if (!rc && push_insn(&in, &x)) rc = dl_fail("sass listing: out of memory");
        pending = 1;
    }
    if (!rc) END_KERNEL();
#undef END_KERNEL
    free(in.v);
    if (!rc && ferror(f)) rc = dl_fail("sass listing: read error");
    return rc;
}

/* kv_dtype from a "(dl_dtype)N" template argument of a demangled name. */
static void fill_kv_dtype(dl_census_kernel *k)
{
    const char *p = strstr(k->name, "(dl_dtype)");
    k->kv_dtype[0] = 0;
    if (!p) return;
    int v = atoi(p + 10);
    if (v >= 0 && v < DL_DTYPE_COUNT) snprintf(k->kv_dtype, sizeof k->kv_dtype, "%s", dl_dtype_name((dl_dtype)v));
}

int dl_census_demangle(dl_census *c)
{
    char filt[1024];
    int have = dl_census_find_tool("c++filt", NULL, filt, sizeof filt) == 0;
    dl_clear_error();
    if (have && c->n > 0) {
        FILE *in = tmpfile(), *out = tmpfile();
        if (!in || !out) {
            if (in) fclose(in);
            if (out) fclose(out);
            return dl_fail("census: cannot create temporary files: %s", strerror(errno));
        }
        for (int i = 0; i < c->n; i++) fprintf(in, "%s\n", c->k[i].mangled);
        fflush(in);
        rewind(in);
        const char *argv[] = {filt, NULL};
        int status = -1;
        if (dl_proc_run(argv, fileno(in), fileno(out), -1, NULL, &status) == 0 && status == 0) {
            rewind(out);
            char line[1024];
            for (int i = 0; i < c->n && fgets(line, sizeof line, out); i++) {
                line[strcspn(line, "\n")] = 0;
                snprintf(c->k[i].name, sizeof c->k[i].name, "%s", line);
            }
        }
        dl_clear_error();
        fclose(in);
        fclose(out);
    }
    for (int i = 0; i < c->n; i++) fill_kv_dtype(&c->k[i]);
    return 0;
}

int dl_census_parse_resources(FILE *f, dl_census *c)
{
    char line[2048], name[1024] = "";
    while (fgets(line, sizeof line, f)) {
        const char *p = line + strspn(line, " \t");
        if (!strncmp(p, "Function ", 9)) {
            snprintf(name, sizeof name, "%s", p + 9);
            name[strcspn(name, ":\r\n")] = 0;
            continue;
        }
        if (!name[0]) continue;
        const char *r = strstr(p, "REG:"), *st = strstr(p, "STACK:");
        if (!r) return dl_fail("sass: cuobjdump -res-usage: function %s: no REG: on the line after it ('%.60s')", name, p);
        const int reg = atoi(r + 4), stack = st ? atoi(st + 6) : -1;
        for (int i = 0; i < c->n; i++)
            if (!strcmp(c->k[i].mangled, name)) c->k[i].regs = reg, c->k[i].stack = stack;
        name[0] = 0;
    }
    return 0;
}

/* Run tool with option opt (and, when fun is not NULL, `-fun fun`: those functions alone) on binary (env:
 * NVDISASM_PATH when the tool's directory holds nvdisasm), its output in *out (a rewound temporary file, the
 * caller's to close). */
static int run_tool(const char *tool, const char *opt, const char *fun, const char *binary, FILE **out)
{
    /* cuobjdump -sass runs nvdisasm: a toolkit from PyPI keeps both in one directory that
     * need not be on PATH, so name that directory when nvdisasm is there. */
    char dir[1024], nvd[1100];
    snprintf(dir, sizeof dir, "%s", tool);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    snprintf(nvd, sizeof nvd, "%s/nvdisasm", dir);
    const char *env[] = {executable(nvd) ? "NVDISASM_PATH" : NULL, dir, NULL};
    FILE *o = tmpfile(), *err = tmpfile();
    if (!o || !err) {
        if (o) fclose(o);
        if (err) fclose(err);
        return dl_fail("sass: cannot create temporary files: %s", strerror(errno));
    }
    const char *argv[] = {tool, opt, fun ? "-fun" : binary, fun, fun ? binary : NULL, NULL};
    int status = -1, rc = dl_proc_run(argv, -1, fileno(o), fileno(err), env[0] ? env : NULL, &status);
    if (!rc && status != 0) {
        char msg[512] = "";
        rewind(err);
        size_t k = fread(msg, 1, sizeof msg - 1, err);
        msg[k] = 0;
        msg[strcspn(msg, "\n")] = 0;
        rc = dl_fail("sass: %s %s%s %s exited with status %d: %s", tool, opt, fun ? " -fun ..." : "", binary, status,
                     msg[0] ? msg : "(no message)");
    }
    fclose(err);
    if (rc) {
        fclose(o);
        return rc;
    }
    rewind(o);
    *out = o;
    return 0;
}

/* The kernels a `cuobjdump -res-usage` listing (res) names, demangled, into *fun as the comma-separated mangled
 * names of those keep() accepts (malloc'd; NULL when it accepts every one); *kept and *named get the counts. */
static int kept_functions(FILE *res, dl_census_keep_fn keep, void *ctx, char **fun, int *kept, int *named)
{
    dl_census all;
    memset(&all, 0, sizeof all);
    char line[2048];
    int rc = 0;
    *fun = NULL;
    *kept = *named = 0;
    while (!rc && fgets(line, sizeof line, res)) {
        const char *p = line + strspn(line, " \t");
        if (strncmp(p, "Function ", 9)) continue;
        char name[512];
        snprintf(name, sizeof name, "%s", p + 9);
        name[strcspn(name, ":\r\n")] = 0;
        if (!new_kernel(&all, "", name)) rc = dl_fail("sass: out of memory");
    }
    if (!rc) rc = dl_census_demangle(&all);
    size_t len = 0;
    for (int i = 0; !rc && i < all.n; i++)
        if (keep(all.k[i].name, ctx)) len += strlen(all.k[i].mangled) + 1, (*kept)++;
    *named = all.n;
    if (!rc && *kept < all.n) {
        char *f = malloc(len + 1);
        if (!f) rc = dl_fail("sass: out of memory");
        size_t at = 0;
        for (int i = 0; !rc && i < all.n; i++)
            if (keep(all.k[i].name, ctx)) at += (size_t)sprintf(f + at, "%s%s", at ? "," : "", all.k[i].mangled);
        if (!rc) f[at] = 0, *fun = f;
    }
    dl_census_free(&all);
    return rc;
}

int dl_census_disassemble_only(const char *binary, dl_census_keep_fn keep, void *ctx, dl_census *c)
{
    char tool[1024];
    if (access(binary, R_OK) != 0) return dl_fail("--binary '%s': %s", binary, strerror(errno));
    DL_TRY(dl_census_find_tool("cuobjdump", "DL_CUOBJDUMP", tool, sizeof tool));
    FILE *res = NULL, *out = NULL;
    DL_TRY(run_tool(tool, "-res-usage", NULL, binary, &res)); /* ~0.1 s: names every kernel */
    char *fun = NULL;
    int kept = 0, named = 0, rc = keep ? kept_functions(res, keep, ctx, &fun, &kept, &named) : 0;
    /* the disassembly takes ~0.1 s a kernel: only the kept ones, when keep leaves some out */
    if (!rc && (!keep || kept > 0)) rc = run_tool(tool, "-sass", fun, binary, &out);
    if (!rc && out) rc = dl_census_parse(out, c);
    if (out) fclose(out);
    rewind(res);
    if (!rc) rc = dl_census_parse_resources(res, c);
    fclose(res);
    free(fun);
    DL_TRY(rc);
    c->in_binary = keep ? named : c->n;
    snprintf(c->tool, sizeof c->tool, "%s", tool);
    snprintf(c->binary, sizeof c->binary, "%s", binary);
    return dl_census_demangle(c);
}

int dl_census_disassemble(const char *binary, dl_census *c) { return dl_census_disassemble_only(binary, NULL, NULL, c); }

const dl_census_kernel *dl_census_find(const dl_census *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->k[i].name, name)) return &c->k[i];
    return NULL;
}

int dl_census_kernel_matches(const char *glob, const char *demangled)
{
    return glob && *glob && fnmatch(glob, demangled, 0) == 0;
}

/* ---------------------------------------------------------------- rows */

void dl_census_row_init(dl_census_row *r)
{
    memset(r, 0, sizeof *r);
    r->value = NAN;
    r->launches = -1;
    dl_stamp_date_host(r->date_utc, sizeof r->date_utc, r->hostname, sizeof r->hostname);
    snprintf(r->generator, sizeof r->generator, "%s", dl_generator_string());
}

/* A sass row of kernel k under variant: every column but metric and value (unit "inst"). */
static void sass_row(dl_census_row *r, const dl_census *c, const dl_census_kernel *k, const char *variant)
{
    dl_census_row_init(r);
    snprintf(r->source, sizeof r->source, "sass");
    snprintf(r->variant, sizeof r->variant, "%s", variant);
    snprintf(r->kernel, sizeof r->kernel, "%s", k->name);
    snprintf(r->arch, sizeof r->arch, "%s", k->arch);
    snprintf(r->kv_dtype, sizeof r->kv_dtype, "%s", k->kv_dtype);
    snprintf(r->unit, sizeof r->unit, "inst");
    snprintf(r->binary, sizeof r->binary, "%s", c->binary);
    snprintf(r->tool, sizeof r->tool, "%s", c->tool);
}

static void kernel_rows(const dl_census *c, const dl_census_kernel *k, const char *variant, dl_census_row *out,
                        int64_t *n)
{
    dl_census_row base;
    sass_row(&base, c, k, variant);
    dl_census_row *r = &out[(*n)++];
    *r = base;
    snprintf(r->metric, sizeof r->metric, "total");
    r->value = (double)k->total;
    for (int i = 0; i < DL_CLS_COUNT; i++) {
        r = &out[(*n)++];
        *r = base;
        snprintf(r->metric, sizeof r->metric, "class:%s", class_names[i]);
        r->value = (double)k->cls[i];
    }
    for (int i = 0; i < NUM_OPS; i++) {
        r = &out[(*n)++];
        *r = base;
        snprintf(r->metric, sizeof r->metric, "op:%s", opcodes[i].op);
        r->value = (double)k->op[i];
    }
}

int dl_census_rows(const dl_census *c, dl_census_row **rows, int64_t *n)
{
    const int per = 1 + DL_CLS_COUNT + NUM_OPS;
    int64_t pairs = 0;
    for (int i = 0; i < c->n; i++) {
        int m = 0;
        for (int v = 0; v < dl_num_variants; v++) m += dl_census_kernel_matches(dl_variants[v].kernel, c->k[i].name);
        pairs += m ? m : 1;
    }
    *rows = calloc((size_t)(pairs > 0 ? pairs : 1) * per, sizeof **rows);
    *n = 0;
    if (!*rows) return dl_fail("census: out of memory for %lld rows", (long long)(pairs * per));
    for (int v = 0; v < dl_num_variants; v++)
        for (int i = 0; i < c->n; i++)
            if (dl_census_kernel_matches(dl_variants[v].kernel, c->k[i].name))
                kernel_rows(c, &c->k[i], dl_variants[v].name, *rows, n);
    for (int i = 0; i < c->n; i++) {
        int m = 0;
        for (int v = 0; v < dl_num_variants; v++) m += dl_census_kernel_matches(dl_variants[v].kernel, c->k[i].name);
        if (!m) kernel_rows(c, &c->k[i], "-", *rows, n);
    }
    return 0;
}

static int64_t form_rows_of(const dl_census *c, const dl_census_kernel *k, const char *variant, dl_census_row *out)
{
    for (int j = 0; j < k->nforms; j++) {
        dl_census_row *r = &out[j];
        sass_row(r, c, k, variant);
        snprintf(r->metric, sizeof r->metric, "form:%s", k->forms[j].form);
        r->value = (double)k->forms[j].count;
    }
    return k->nforms;
}

int dl_census_form_rows(const dl_census *c, const char *kernel_glob, dl_census_row **rows, int64_t *n)
{
    int64_t need = 0;
    for (int i = 0; i < c->n; i++) {
        if (kernel_glob && fnmatch(kernel_glob, c->k[i].name, 0)) continue;
        int m = 0;
        for (int v = 0; v < dl_num_variants; v++) m += dl_census_kernel_matches(dl_variants[v].kernel, c->k[i].name);
        need += (int64_t)(m ? m : 1) * c->k[i].nforms;
    }
    *n = 0;
    *rows = calloc((size_t)(need > 0 ? need : 1), sizeof **rows);
    if (!*rows) return dl_fail("census: out of memory for %lld form rows", (long long)need);
    for (int i = 0; i < c->n; i++) {
        if (kernel_glob && fnmatch(kernel_glob, c->k[i].name, 0)) continue;
        int m = 0;
        for (int v = 0; v < dl_num_variants; v++)
            if (dl_census_kernel_matches(dl_variants[v].kernel, c->k[i].name)) {
                *n += form_rows_of(c, &c->k[i], dl_variants[v].name, *rows + *n);
                m++;
            }
        if (!m) *n += form_rows_of(c, &c->k[i], "-", *rows + *n);
    }
    return 0;
}

int dl_census_loop_rows(const dl_census *c, const dl_census_kernel *k, const char *variant, dl_census_row *out)
{
    if (!k->loop.found) return 0;
    int n = 0;
    for (int i = 0; i < DL_CENSUS_LOOP_ROWS; i++) {
        dl_census_row *r = &out[n++];
        sass_row(r, c, k, variant);
        if (i < DL_CLS_COUNT) {
            snprintf(r->metric, sizeof r->metric, "loop:class:%s", class_names[i]);
            r->value = (double)k->loop.cls[i];
        } else if (i == DL_CLS_COUNT) {
            snprintf(r->metric, sizeof r->metric, "loop:total");
            r->value = (double)k->loop.total;
        } else if (i == DL_CLS_COUNT + 1) {
            snprintf(r->metric, sizeof r->metric, "loop:stall_cycles");
            snprintf(r->unit, sizeof r->unit, "cycles");
            r->value = (double)k->loop.stall;
        } else if (i == DL_CLS_COUNT + 2) {
            snprintf(r->metric, sizeof r->metric, "loop:scoreboard_waits");
            r->value = (double)k->loop.sb_waits;
        } else {
            snprintf(r->metric, sizeof r->metric, "loop:zeroing");
            r->value = (double)k->loop.zeroing;
        }
    }
    return n;
}

/* ---------------------------------------------------------------- CSV table */

typedef enum { T_STR, T_F64, T_I64 } ctype;
typedef struct {
    const char *name;
    ctype t;
    size_t off, size;
} cdef;
#define RS(f) {#f, T_STR, offsetof(dl_census_row, f), sizeof(((dl_census_row *)0)->f)}
static const cdef ccols[] = {
    RS(source), RS(variant), RS(kernel), RS(arch), RS(kv_dtype), RS(metric),
    {"value", T_F64, offsetof(dl_census_row, value), 8}, RS(unit),
    {"launches", T_I64, offsetof(dl_census_row, launches), 8},
    RS(golden_path), RS(golden_hash), RS(binary), RS(tool), RS(device_name), RS(generator), RS(date_utc), RS(hostname),
};
#define NCC ((int)(sizeof ccols / sizeof ccols[0]))

static void write_header(FILE *f)
{
    for (int i = 0; i < NCC; i++) fprintf(f, "%s%s", i ? "," : "", ccols[i].name);
    fputc('\n', f);
}

static void write_row(FILE *f, const dl_census_row *r)
{
    char buf[64];
    for (int i = 0; i < NCC; i++) {
        if (i) fputc(',', f);
        const char *p = (const char *)r + ccols[i].off;
        if (ccols[i].t == T_STR) dl_csv_put(f, p);
        else if (ccols[i].t == T_I64) fprintf(f, "%lld", (long long)*(const int64_t *)p);
        else {
            double v = *(const double *)p;
            if (isnan(v)) fputs("nan", f);
            else {
                snprintf(buf, sizeof buf, "%.17g", v);
                fputs(buf, f);
            }
        }
    }
    fputc('\n', f);
}

int dl_census_read(const char *csv_path, dl_census_row **rows, int64_t *n)
{
    *rows = NULL;
    *n = 0;
    FILE *f = fopen(csv_path, "r");
    if (!f) return dl_fail("census: cannot open %s: %s", csv_path, strerror(errno));
    static char buf[16384];
    char *fields[64];
    int nf = dl_csv_read_record(f, fields, 64, buf, sizeof buf);
    int rc = 0;
    if (nf != NCC) rc = dl_fail("census: %s: header has %d fields, expected %d (format %s)", csv_path, nf, NCC, DL_CENSUS_FORMAT);
    for (int i = 0; !rc && i < NCC; i++)
        if (strcmp(fields[i], ccols[i].name))
            rc = dl_fail("census: %s: column %d is '%s', expected '%s'", csv_path, i + 1, fields[i], ccols[i].name);
    int64_t cap = 0, line = 1;
    while (!rc && (nf = dl_csv_read_record(f, fields, 64, buf, sizeof buf)) != 0) {
        line++;
        if (nf != NCC) {
            rc = dl_fail("census: %s: line %lld has %d fields, expected %d", csv_path, (long long)line, nf, NCC);
            break;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 256;
            dl_census_row *r = realloc(*rows, (size_t)cap * sizeof *r);
            if (!r) {
                rc = dl_fail("census: out of memory reading %s", csv_path);
                break;
            }
            *rows = r;
        }
        dl_census_row *r = &(*rows)[(*n)++];
        memset(r, 0, sizeof *r);
        for (int i = 0; i < NCC; i++) {
            char *p = (char *)r + ccols[i].off;
            if (ccols[i].t == T_STR) snprintf(p, ccols[i].size, "%s", fields[i]);
            else if (ccols[i].t == T_I64) *(int64_t *)p = strtoll(fields[i], NULL, 10);
            else *(double *)p = strtod(fields[i], NULL);
        }
    }
    fclose(f);
    if (rc) {
        free(*rows);
        *rows = NULL;
        *n = 0;
    }
    return rc;
}

int dl_census_append(const char *csv_path, const dl_census_row *rows, int64_t n)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", csv_path, (long)getpid());
    const int dfd = dl_lock_dir_of("census", csv_path);
    if (dfd < 0) return -1;
    dl_census_row *old = NULL;
    int64_t nold = 0;
    int rc = 0;
    struct stat st;
    if (stat(csv_path, &st) == 0) rc = dl_census_read(csv_path, &old, &nold);
    FILE *f = rc ? NULL : fopen(tmp, "w");
    if (!rc && !f) rc = dl_fail("census: cannot create %s: %s", tmp, strerror(errno));
    if (!rc) {
        write_header(f);
        for (int64_t i = 0; i < nold; i++) write_row(f, &old[i]);
        for (int64_t i = 0; i < n; i++) write_row(f, &rows[i]);
        int bad = ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0;
        if (fclose(f) != 0) bad = 1;
        if (bad) rc = dl_fail("census: writing %s failed", tmp);
        if (!rc && rename(tmp, csv_path) != 0) rc = dl_fail("census: rename %s -> %s: %s", tmp, csv_path, strerror(errno));
        if (rc) unlink(tmp);
        else fsync(dfd);
    }
    flock(dfd, LOCK_UN);
    close(dfd);
    free(old);
    return rc;
}

/* experiment.c - load, validate and expand experiment files, and judge their
 * hypotheses (see dl_experiment.h; file format: experiments/README.md). The
 * files are read by libconfig; the only text read by hand is a scan for integer
 * literals libconfig cannot hold (bad_literal) and an @include's file name. */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <libconfig.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../gpu/dl_registry.h"
#include "cli_util.h"
#include "dl_cli.h"
#include "dl_experiment.h"
#include "dl_run.h"
#include "dl_results.h"

/* ---------------------------------------------------------------- errors */

static int xfail(const dl_experiment *x, const config_setting_t *s, const char *key, const char *val, const char *fmt,
                 ...) __attribute__((format(printf, 5, 6)));
static int xfail(const dl_experiment *x, const config_setting_t *s, const char *key, const char *val, const char *fmt,
                 ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    int line = s ? config_setting_source_line(s) : 0;
    if (val) return dl_fail("%s:%d: %s: '%s': %s", x->path, line, key, val, why);
    return dl_fail("%s:%d: %s: %s", x->path, line, key, why);
}

/* A scalar setting as text (strings as is, integers in full, floats in the fewest digits that read back
 * as the same double, booleans true/false): -1 if not a scalar. */
static int scalar_text(const config_setting_t *s, char *buf, size_t n)
{
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_STRING: snprintf(buf, n, "%s", config_setting_get_string(s)); return 0;
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64: snprintf(buf, n, "%lld", (long long)config_setting_get_int64(s)); return 0;
    case CONFIG_TYPE_FLOAT: {
        /* passed on to `decodelab golden`: the value written, not a neighbour (%.15g loses digits) */
        double v = config_setting_get_float(s);
        for (int digits = 15; digits <= 17; digits++) {
            snprintf(buf, n, "%.*g", digits, v);
            if (strtod(buf, NULL) == v) break;
        }
        return 0;
    }
    case CONFIG_TYPE_BOOL: snprintf(buf, n, "%s", config_setting_get_bool(s) ? "true" : "false"); return 0;
    default: return -1;
    }
}

/* One value of a sweep field or term: a scalar, a string of at most DL_XP_VAL - 1 characters, not empty. */
static int value_of(const dl_experiment *x, const config_setting_t *e, const char *key, char *val,
                    const char *not_scalar)
{
    if (scalar_text(e, val, DL_XP_VAL)) return xfail(x, e, key, NULL, "%s", not_scalar);
    if (config_setting_type(e) == CONFIG_TYPE_STRING && strlen(config_setting_get_string(e)) >= DL_XP_VAL)
        return xfail(x, e, key, config_setting_get_string(e), "longer than %d characters", DL_XP_VAL - 1);
    if (!val[0]) return xfail(x, e, key, "", "an empty string is not a value");
    return 0;
}

/* A scalar or a list/array of scalars into vals. */
static int values_of(const dl_experiment *x, const config_setting_t *s, const char *key, char vals[][DL_XP_VAL],
                     int max, int *n)
{
    *n = 0;
    int t = config_setting_type(s);
    if (t == CONFIG_TYPE_ARRAY || t == CONFIG_TYPE_LIST) {
        int len = config_setting_length(s);
        if (len == 0) return xfail(x, s, key, "[]", "an empty list sweeps nothing");
        if (len > max) return xfail(x, s, key, NULL, "%d values, at most %d", len, max);
        for (int i = 0; i < len; i++) {
            const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
            char what[48];
            snprintf(what, sizeof what, "element %d is not a scalar", i);
            DL_TRY(value_of(x, e, key, vals[i], what));
            for (int j = 0; j < i; j++)
                if (!strcmp(vals[i], vals[j])) return xfail(x, e, key, vals[i], "listed twice");
        }
        *n = len;
        return 0;
    }
    DL_TRY(value_of(x, s, key, vals[0], "must be a value or a list of values"));
    *n = 1;
    return 0;
}

static const config_setting_t *member(const config_setting_t *g, const char *name)
{
    return config_setting_get_member((config_setting_t *)g, name);
}

/* g must be a group (what: its expected form): else refused naming the key and, for a scalar, its value. */
static int need_group(const dl_experiment *x, const config_setting_t *g, const char *key, const char *what)
{
    if (config_setting_type(g) == CONFIG_TYPE_GROUP) return 0;
    char v[256];
    return xfail(x, g, key, scalar_text(g, v, sizeof v) ? NULL : v, "must be a group %s", what);
}

/* Only these keys may appear in group g. */
static int only_keys(const dl_experiment *x, const config_setting_t *g, const char *where, const char *const *allowed)
{
    int len = config_setting_length(g);
    for (int i = 0; i < len; i++) {
        const config_setting_t *e = config_setting_get_elem(g, (unsigned)i);
        const char *nm = config_setting_name(e);
        int ok = 0;
        for (int k = 0; allowed[k] && !ok; k++) ok = !strcmp(nm, allowed[k]);
        if (!ok) {
            char key[160];
            snprintf(key, sizeof key, "%s%s%s", where, *where ? "." : "", nm);
            char list[512] = "";
            for (int k = 0; allowed[k]; k++) {
                strncat(list, k ? ", " : "", sizeof list - strlen(list) - 1);
                strncat(list, allowed[k], sizeof list - strlen(list) - 1);
            }
            return xfail(x, e, key, NULL, "unknown key (allowed: %s)", list);
        }
    }
    return 0;
}

static int get_string(const dl_experiment *x, const config_setting_t *g, const char *name, const char *where,
                      char *out, size_t n, int required)
{
    const config_setting_t *s = member(g, name);
    char key[160];
    snprintf(key, sizeof key, "%s%s%s", where, *where ? "." : "", name);
    if (!s) return required ? xfail(x, g, key, NULL, "missing") : 0;
    if (config_setting_type(s) != CONFIG_TYPE_STRING) return xfail(x, s, key, NULL, "must be a string");
    const char *v = config_setting_get_string(s);
    if (!*v && required) return xfail(x, s, key, "", "must not be empty");
    if (strlen(v) >= n) return xfail(x, s, key, NULL, "longer than %zu characters", n - 1);
    snprintf(out, n, "%s", v);
    return 0;
}

static int get_bool(const dl_experiment *x, const config_setting_t *g, const char *name, const char *where, int *out)
{
    const config_setting_t *s = member(g, name);
    if (!s) return 0;
    char key[160];
    snprintf(key, sizeof key, "%s.%s", where, name);
    if (config_setting_type(s) != CONFIG_TYPE_BOOL) {
        char v[DL_XP_VAL] = "?";
        scalar_text(s, v, sizeof v);
        return xfail(x, s, key, v, "must be true or false");
    }
    *out = config_setting_get_bool(s);
    return 0;
}

static int get_number(const dl_experiment *x, const config_setting_t *g, const char *name, const char *where,
                      double *out)
{
    const config_setting_t *s = member(g, name);
    if (!s) return 0;
    char key[160];
    snprintf(key, sizeof key, "%s.%s", where, name);
    int t = config_setting_type(s);
    if (t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64) *out = (double)config_setting_get_int64(s);
    else if (t == CONFIG_TYPE_FLOAT) *out = config_setting_get_float(s);
    else if (t == CONFIG_TYPE_STRING && !strcmp(config_setting_get_string(s), "inf")) *out = INFINITY;
    else if (t == CONFIG_TYPE_STRING && !strcmp(config_setting_get_string(s), "-inf")) *out = -INFINITY;
    else {
        char v[DL_XP_VAL] = "?";
        scalar_text(s, v, sizeof v);
        return xfail(x, s, key, v, "must be a number (or \"inf\", \"-inf\")");
    }
    if (isnan(*out)) return xfail(x, s, key, "nan", "must be a number");
    return 0;
}

/* Sweep fields are `decodelab golden` flags; these belong to the experiment, not to a point. */
static const char *const reserved_fields[] = {"out", "force", "help", "models", NULL};

static int load_fields(const dl_experiment *x, const config_setting_t *g, const char *where, dl_xp_field *f, int *n)
{
    DL_TRY(need_group(x, g, where, "{ field = values; ... }"));
    int len = config_setting_length(g);
    if (len > DL_XP_MAX_FIELDS) return xfail(x, g, where, NULL, "%d fields, at most %d", len, DL_XP_MAX_FIELDS);
    *n = 0;
    for (int i = 0; i < len; i++) {
        const config_setting_t *e = config_setting_get_elem(g, (unsigned)i);
        char key[160];
        snprintf(key, sizeof key, "%s.%s", where, config_setting_name(e));
        for (int r = 0; reserved_fields[r]; r++)
            if (!strcmp(config_setting_name(e), reserved_fields[r]))
                return xfail(x, e, key, NULL, "not a sweep field (the experiment sets it)");
        dl_xp_field *fd = &f[(*n)++];
        snprintf(fd->name, sizeof fd->name, "%s", config_setting_name(e));
        DL_TRY(values_of(x, e, key, fd->vals, DL_XP_MAX_VALUES, &fd->nvals));
    }
    return 0;
}

static const dl_xp_field *find_field(const dl_xp_field *f, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(f[i].name, name)) return &f[i];
    return NULL;
}

static int is_swept(const dl_experiment *x, const char *name)
{
    return find_field(x->fields, x->nfields, name) || find_field(x->reduced, x->nreduced, name);
}

/* A selector/filter term list from group g (variant handled by the caller). */
static int load_terms(const dl_experiment *x, const config_setting_t *g, const char *where, dl_xp_term *t, int *n,
                      int census)
{
    DL_TRY(need_group(x, g, where, "{ field = values; ... }"));
    int len = config_setting_length(g);
    *n = 0;
    for (int i = 0; i < len; i++) {
        const config_setting_t *e = config_setting_get_elem(g, (unsigned)i);
        const char *nm = config_setting_name(e);
        if (!strcmp(nm, "variant") || !strcmp(nm, "metric")) continue;
        char key[200];
        snprintf(key, sizeof key, "%s.%s", where, nm);
        if (!is_swept(x, nm) && !(census && !strcmp(nm, "kv_dtype")))
            return xfail(x, e, key, NULL, "not a field of the sweep (a rule can only select on swept fields)");
        if (*n == DL_XP_MAX_TERMS) return xfail(x, e, key, NULL, "more than %d terms", DL_XP_MAX_TERMS);
        dl_xp_term *tm = &t[(*n)++];
        snprintf(tm->key, sizeof tm->key, "%s", nm);
        DL_TRY(values_of(x, e, key, tm->vals, DL_XP_MAX_VALUES, &tm->nvals));
        /* a census kv_dtype the sweep does not set must still name a KV type ("e4m4" matched no row, in silence) */
        for (int v = 0; v < tm->nvals && census && !strcmp(nm, "kv_dtype") && !is_swept(x, nm); v++) {
            dl_dtype d;
            if (dl_dtype_parse(tm->vals[v], &d) || !dl_dtype_is_kv(d))
                return xfail(x, e, key, tm->vals[v], "not a KV type (f16, bf16, e4m3, e5m2)");
        }
        /* every value must be one the sweep can produce */
        const dl_xp_field *f = find_field(x->fields, x->nfields, nm);
        const dl_xp_field *fr = find_field(x->reduced, x->nreduced, nm);
        for (int v = 0; v < tm->nvals && (f || fr); v++) {
            int hit = 0;
            for (int k = 0; f && k < f->nvals; k++) hit |= !strcmp(f->vals[k], tm->vals[v]);
            for (int k = 0; fr && k < fr->nvals; k++) hit |= !strcmp(fr->vals[k], tm->vals[v]);
            if (!hit) return xfail(x, e, key, tm->vals[v], "the sweep never sets this value");
        }
    }
    return 0;
}

static int model_computed(const dl_experiment *x, const char *model)
{
    if (!strcmp(x->models, "all")) return 1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", x->models);
    char *save = NULL;
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save))
        if (!strcmp(p, model)) return 1;
    return 0;
}

static int load_sel(const dl_experiment *x, const config_setting_t *g, const char *where, dl_xp_sel *s, int census)
{
    static const char *const any[] = {NULL};
    (void)any;
    memset(s, 0, sizeof *s);
    s->present = 1;
    DL_TRY(need_group(x, g, where, "{ variant = \"...\"; ... }"));
    DL_TRY(get_string(x, g, "variant", where, s->variant, sizeof s->variant, 1));
    char key[200];
    DL_TRY(get_string(x, g, "metric", where, s->metric, sizeof s->metric, 0));
    if (member(g, "metric")) {
        snprintf(key, sizeof key, "%s.metric", where);
        if (census) return xfail(x, member(g, "metric"), key, s->metric, "a census rule has one metric (the rule's)");
        int found = 0;
        for (int i = 0; i < dl_results_num_columns() && !found; i++)
            found = !strcmp(dl_results_column_name(i), s->metric) && dl_results_column_type(i) != DL_COL_STR;
        if (!found) return xfail(x, member(g, "metric"), key, s->metric, "not a numeric results column (data/SCHEMA.md)");
    }
    snprintf(key, sizeof key, "%s.variant", where);
    if (!strncmp(s->variant, "ref-", 4)) {
        if (census) return xfail(x, member(g, "variant"), key, s->variant, "census rows are GPU variants, not models");
        dl_model m;
        if (dl_model_parse(s->variant + 4, &m))
            return xfail(x, member(g, "variant"), key, s->variant, "ref-<model> names an unknown model");
        if (m == DL_MODEL_EXACT) return xfail(x, member(g, "variant"), key, s->variant, "exact is the reference itself");
        if (!model_computed(x, s->variant + 4))
            return xfail(x, member(g, "variant"), key, s->variant, "that model is not in the experiment's models");
    } else {
        int hit = 0;
        for (int v = 0; v < dl_num_variants; v++) hit |= fnmatch(s->variant, dl_variants[v].name, 0) == 0;
        if (!hit) return xfail(x, member(g, "variant"), key, s->variant, "matches no registry variant (decodelab list)");
        if (!census) {
            int in = 0;
            for (int v = 0; v < dl_num_variants; v++) {
                if (fnmatch(s->variant, dl_variants[v].name, 0)) continue;
                for (int k = 0; k < x->nvariants; k++) in |= fnmatch(x->variants[k], dl_variants[v].name, 0) == 0;
            }
            if (!in) return xfail(x, member(g, "variant"), key, s->variant, "not among the experiment's variants");
        }
    }
    return load_terms(x, g, where, s->terms, &s->nterms, census);
}

static int load_hyp(const dl_experiment *x, const config_setting_t *g, int idx, dl_xp_hyp *h)
{
    char where[32];
    snprintf(where, sizeof where, "hypotheses[%d]", idx);
    DL_TRY(need_group(x, g, where, "{ claim = ...; }"));
    static const char *const keys[] = {"claim", "kind", "metric", "source", "num", "den", "where", "lo", "hi", "noise_k", NULL};
    DL_TRY(only_keys(x, g, where, keys));
    memset(h, 0, sizeof *h);
    h->line = config_setting_source_line(g);
    DL_TRY(get_string(x, g, "claim", where, h->claim, sizeof h->claim, 1));
    char kind[16] = "";
    DL_TRY(get_string(x, g, "kind", where, kind, sizeof kind, 1));
    char key[64];
    snprintf(key, sizeof key, "%s.kind", where);
    if (!strcmp(kind, "ratio")) h->kind = DL_XP_RATIO;
    else if (!strcmp(kind, "value")) h->kind = DL_XP_VALUE;
    else if (!strcmp(kind, "census")) h->kind = DL_XP_CENSUS;
    else return xfail(x, member(g, "kind"), key, kind, "is not ratio, value or census");
    DL_TRY(get_string(x, g, "metric", where, h->metric, sizeof h->metric, 1));
    snprintf(key, sizeof key, "%s.metric", where);
    if (h->kind == DL_XP_CENSUS) {
        snprintf(h->source, sizeof h->source, "sass");
        DL_TRY(get_string(x, g, "source", where, h->source, sizeof h->source, 0));
        if (strcmp(h->source, "sass") && strcmp(h->source, "ncu"))
            return xfail(x, member(g, "source"), key, h->source, "source must be sass or ncu");
        if (!strcmp(h->source, "sass") && dl_census_class_parse(h->metric) < 0 && strcmp(h->metric, "total") &&
            !(strncmp(h->metric, "op:", 3) == 0 && dl_census_opcode_index(h->metric + 3) >= 0))
            return xfail(x, member(g, "metric"), key, h->metric,
                         "not a census class (tensor fp32 packed16 conv bytebit mem mufu), total, or op:<OPCODE>");
        if (!strcmp(h->source, "sass") && !x->census)
            return xfail(x, member(g, "source"), key, h->source, "needs measure.census = true");
        if (!strcmp(h->source, "ncu") && !x->ncu)
            return xfail(x, member(g, "source"), key, h->source, "needs measure.ncu = true");
    } else {
        int found = 0;
        for (int i = 0; i < dl_results_num_columns() && !found; i++)
            found = !strcmp(dl_results_column_name(i), h->metric) && dl_results_column_type(i) != DL_COL_STR;
        if (!found) return xfail(x, member(g, "metric"), key, h->metric, "not a numeric results column (data/SCHEMA.md)");
        if (member(g, "source")) return xfail(x, member(g, "source"), key, NULL, "source is for census rules only");
    }
    const config_setting_t *s = member(g, "num");
    char w2[64];
    snprintf(w2, sizeof w2, "%s.num", where);
    if (!s) return xfail(x, g, w2, NULL, "missing (which rows the rule is about)");
    DL_TRY(load_sel(x, s, w2, &h->num, h->kind == DL_XP_CENSUS));
    s = member(g, "den");
    snprintf(w2, sizeof w2, "%s.den", where);
    if (s) {
        if (h->kind == DL_XP_VALUE) return xfail(x, s, w2, NULL, "a value rule has no denominator");
        DL_TRY(load_sel(x, s, w2, &h->den, h->kind == DL_XP_CENSUS));
    } else if (h->kind == DL_XP_RATIO) {
        return xfail(x, g, w2, NULL, "missing (a ratio rule needs num and den)");
    }
    s = member(g, "where");
    if (s) {
        snprintf(w2, sizeof w2, "%s.where", where);
        if (member(s, "variant")) return xfail(x, member(s, "variant"), w2, NULL, "variant belongs in num/den");
        /* a SASS census row belongs to a kernel of the binary, not to a sweep point: nothing to select it by */
        if (h->kind == DL_XP_CENSUS && !strcmp(h->source, "sass"))
            return xfail(x, s, w2, NULL, "a sass census rule counts the binary's kernels, not sweep points: "
                                         "select them by num/den's variant and kv_dtype");
        DL_TRY(load_terms(x, s, w2, h->where, &h->nwhere, 0));
    }
    if (h->kind == DL_XP_CENSUS && !strcmp(h->source, "sass")) /* likewise any term but kv_dtype */
        for (int side = 0; side < 2; side++) {
            const dl_xp_sel *sel = side ? &h->den : &h->num;
            for (int t = 0; t < sel->nterms; t++)
                if (strcmp(sel->terms[t].key, "kv_dtype")) {
                    snprintf(w2, sizeof w2, "%s.%s.%s", where, side ? "den" : "num", sel->terms[t].key);
                    return xfail(x, member(member(g, side ? "den" : "num"), sel->terms[t].key), w2, NULL,
                                 "a sass census rule selects kernels by variant and kv_dtype alone");
                }
        }
    h->lo = -INFINITY;
    h->hi = INFINITY;
    h->noise_k = 2.0;
    DL_TRY(get_number(x, g, "lo", where, &h->lo));
    DL_TRY(get_number(x, g, "hi", where, &h->hi));
    DL_TRY(get_number(x, g, "noise_k", where, &h->noise_k));
    snprintf(key, sizeof key, "%s.lo", where);
    if (!member(g, "lo") && !member(g, "hi")) return xfail(x, g, key, NULL, "a rule needs lo, hi or both");
    if (!(h->lo <= h->hi)) {
        char v[64];
        snprintf(v, sizeof v, "%g > %g", h->lo, h->hi);
        return xfail(x, member(g, "lo"), key, v, "an empty interval: lo must be <= hi");
    }
    if (!isfinite(h->lo) && !isfinite(h->hi))
        return xfail(x, member(g, "lo") ? member(g, "lo") : member(g, "hi"), key, NULL,
                     "a rule needs a finite lo or hi (with neither, no observation can lie outside)");
    snprintf(key, sizeof key, "%s.noise_k", where);
    if (!(h->noise_k >= 0) || isinf(h->noise_k)) {
        char v[64];
        snprintf(v, sizeof v, "%g", h->noise_k);
        return xfail(x, member(g, "noise_k"), key, v, "must be finite and >= 0");
    }
    return 0;
}

/* ---------------------------------------------------------------- reading the file */

/* Does this libconfig cut an integer written without the L suffix to 32 bits? 1.5 reads 4294967301 as 5,
 * with no error; later versions read it as a 64-bit integer. */
static int libconfig_cuts_ints(void)
{
    static int cuts = -1;
    if (cuts < 0) {
        config_t c;
        config_init(&c);
        cuts = config_read_string(&c, "a = 4294967301;") == CONFIG_TRUE &&
               config_setting_type(config_lookup(&c, "a")) == CONFIG_TYPE_INT;
        config_destroy(&c);
    }
    return cuts;
}

/* The whole of a file, NUL-terminated (malloc'd), or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t n = 0, cap = 4096;
    char *buf = malloc(cap);
    for (size_t k; buf && (k = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += k;
        if (n + 1 == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    fclose(f);
    if (buf) buf[n] = 0;
    return buf;
}

typedef struct {
    int line;
    char text[80];   /* as written */
    long long v;     /* its value (saturated beyond 64 bits) */
    int over;        /* beyond 64 bits (else beyond 32 bits without L) */
} bad_literal;

/* The first integer literal of file (outside strings and comments) that libconfig cannot hold: beyond 64
 * bits, or beyond 32 bits without the L suffix where libconfig cuts those. 1 found, 0 none. */
static int find_bad_literal(const char *file, bad_literal *b)
{
    char *text = slurp(file);
    if (!text) return 0;
    int found = 0, line = 1;
    const char *p = text;
    while (*p && !found) {
        const unsigned char c = (unsigned char)*p;
        if (c == '\n') {
            line++;
            p++;
        } else if (c == '"') { /* a string, escapes included */
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1]) p++;
                line += *p == '\n';
            }
            if (*p) p++;
        } else if (c == '#' || (c == '/' && p[1] == '/')) {
            while (*p && *p != '\n') p++;
        } else if (c == '/' && p[1] == '*') {
            for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++) line += *p == '\n';
            if (*p) p += 2;
        } else if (isalpha(c) || c == '*' || c == '_' || c == '@') { /* a name (digits and '-' in it too) */
            while (*p && (isalnum((unsigned char)*p) || strchr("-_*@", *p))) p++;
        } else if (isdigit(c) || ((c == '-' || c == '+') && isdigit((unsigned char)p[1])) || c == '.') {
            const char *s = p;
            const int hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
            p += hex ? 2 : 1;
            while (hex ? isxdigit((unsigned char)*p) : isdigit((unsigned char)*p)) p++;
            if (!hex && (*p == '.' || *p == 'e' || *p == 'E' || c == '.')) { /* a float */
                while (*p && (isdigit((unsigned char)*p) || strchr(".eE+-", *p))) p++;
                continue;
            }
            const int is64 = *p == 'L';
            while (*p == 'L') p++;
            errno = 0;
            unsigned long long u = hex ? strtoull(s + 2, NULL, 16) : 0;
            long long v = hex ? (long long)u : strtoll(s, NULL, 10);
            const int over = errno == ERANGE || (hex && u > LLONG_MAX);
            if (over || (!is64 && libconfig_cuts_ints() && (v < INT_MIN || v > INT_MAX))) {
                b->line = line;
                snprintf(b->text, sizeof b->text, "%.*s", (int)(p - s), s);
                b->v = v;
                b->over = over;
                found = 1;
            }
        } else {
            p++;
        }
    }
    free(text);
    return found;
}

/* The key of the integer setting a bad literal at file:line is: the last one at or before that line whose
 * value keeps the literal's low 32 bits (what a cut leaves), else the last one at or before it. */
static void literal_key(const config_setting_t *g, const char *gkey, const char *file, const bad_literal *b,
                        char *key, size_t n, int *best_line, int *best_match)
{
    for (int i = 0; i < config_setting_length(g); i++) {
        const config_setting_t *e = config_setting_get_elem(g, (unsigned)i);
        char k[256];
        const char *nm = config_setting_name(e);
        if (nm) snprintf(k, sizeof k, "%s%s%s", gkey, *gkey ? "." : "", nm);
        else if (config_setting_is_group(e)) snprintf(k, sizeof k, "%s[%d]", gkey, i);
        else snprintf(k, sizeof k, "%s", gkey);
        if (config_setting_is_aggregate(e)) {
            literal_key(e, k, file, b, key, n, best_line, best_match);
            continue;
        }
        const int t = config_setting_type(e), line = config_setting_source_line(e);
        const char *src = config_setting_source_file(e);
        if ((t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64) || !src || strcmp(src, file) || line > b->line) continue;
        const int match = (unsigned)config_setting_get_int64(e) == (unsigned)b->v;
        if (match > *best_match || (match == *best_match && line >= *best_line)) {
            snprintf(key, n, "%s", k);
            *best_line = line;
            *best_match = match;
        }
    }
}

/* Refuse a file (or an included one) holding an integer libconfig could not hold: its value would be
 * another number than the one written, with no error. */
static int check_int_literals(const config_t *cfg, const char *path)
{
    const char *files[16] = {path};
    int nfiles = 1;
    /* the included files: the source files of the root's settings (an @include is top level or in a group) */
    const config_setting_t *stack[64] = {config_root_setting(cfg)};
    for (int top = 1; top > 0;) {
        const config_setting_t *g = stack[--top];
        for (int i = 0; i < config_setting_length(g); i++) {
            const config_setting_t *e = config_setting_get_elem(g, (unsigned)i);
            const char *src = config_setting_source_file(e);
            int seen = !src;
            for (int f = 0; f < nfiles && !seen; f++) seen = !strcmp(files[f], src);
            if (!seen && nfiles < 16) files[nfiles++] = src;
            if (config_setting_is_aggregate(e) && top < 64) stack[top++] = e;
        }
    }
    for (int f = 0; f < nfiles; f++) {
        bad_literal b;
        if (!find_bad_literal(files[f], &b)) continue;
        char key[256] = "?";
        int line = 0, match = -1;
        literal_key(config_root_setting(cfg), "", files[f], &b, key, sizeof key, &line, &match);
        if (b.over) return dl_fail("%s:%d: %s: '%s': beyond the 64-bit integer range", files[f], b.line, key, b.text);
        return dl_fail("%s:%d: %s: '%s': this libconfig cuts an integer beyond 32 bits silently: write %sL",
                       files[f], b.line, key, b.text, b.text);
    }
    return 0;
}

/* libconfig's error, one line: the experiment file's own trouble with the reason, an @include with the
 * file it names, or a syntax error with its line. */
static int read_error(const config_t *cfg, const char *path)
{
    const char *file = config_error_file(cfg) ? config_error_file(cfg) : path;
    const int line = config_error_line(cfg);
    const char *text = config_error_text(cfg) ? config_error_text(cfg) : "?";
    if (config_error_type(cfg) == CONFIG_ERR_FILE_IO)
        return dl_fail("%s: cannot read the experiment file: %s", path, errno ? strerror(errno) : "read error");
    if (strstr(text, "include")) {
        /* libconfig does not say which: the quoted name of that line's @include */
        char name[1024] = "?";
        char *t = slurp(file);
        const char *p = t;
        for (int l = 1; p && *p && l < line; p++) l += *p == '\n';
        const char *q = p ? strchr(p, '"') : NULL;
        const char *eol = p ? strchr(p, '\n') : NULL;
        if (q && (!eol || q < eol)) snprintf(name, sizeof name, "%.*s", (int)strcspn(q + 1, "\"\n"), q + 1);
        free(t);
        struct stat st;
        if (stat(name, &st) != 0)
            return dl_fail("%s:%d: @include: '%s': %s (the path is taken from the working directory)", file, line, name,
                           strerror(errno));
        return dl_fail("%s:%d: @include: '%s': %s", file, line, name,
                       S_ISREG(st.st_mode) ? text : "not a regular file");
    }
    return dl_fail("%s:%d: syntax error: %s", file, line, text);
}

/* Refuse an @include, in path or (depth first) in a file it includes, whose name is a folder, a FIFO or a device:
 * libconfig 1.5's scanner exits the process on a folder ("input in flex scanner failed") and waits forever on a
 * FIFO. Names are taken from the working directory, as libconfig takes them; one that does not open is libconfig's
 * to name (read_error). */
static int check_includes(const char *path, int depth)
{
    char *t = depth <= 10 ? slurp(path) : NULL; /* deeper, libconfig refuses the nesting itself */
    int rc = 0, line = 1;
    for (const char *p = t; !rc && p && *p; line++) {
        const size_t len = strcspn(p, "\n");
        const char *q = p + strspn(p, " \t");
        const char *a = !strncmp(q, "@include", 8) ? memchr(q, '"', len - (size_t)(q - p)) : NULL;
        if (a) {
            char name[1024];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(a + 1, "\"\n"), a + 1);
            struct stat st;
            if (stat(name, &st) == 0)
                rc = S_ISREG(st.st_mode) ? check_includes(name, depth + 1)
                                         : dl_fail("%s:%d: @include: '%s': not a regular file (%s)", path, line, name,
                                                   S_ISDIR(st.st_mode)    ? "a folder"
                                                   : S_ISFIFO(st.st_mode) ? "a FIFO"
                                                                          : "a device or socket");
        }
        p += len + (p[len] == '\n');
    }
    free(t);
    return rc;
}

int dl_xp_load(const char *path, dl_experiment *x)
{
    memset(x, 0, sizeof *x);
    snprintf(x->path, sizeof x->path, "%s", path);
    /* a FIFO or a device would block or never end, a folder reads as a vague I/O error */
    struct stat st;
    if (stat(path, &st) != 0) return dl_fail("%s: cannot read the experiment file: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return dl_fail("%s: cannot read the experiment file: %s", path, strerror(EISDIR));
    if (!S_ISREG(st.st_mode)) return dl_fail("%s: not a regular file", path);
    DL_TRY(check_includes(path, 0));
    config_t cfg;
    config_init(&cfg);
    errno = 0;
    int rc = config_read_file(&cfg, path) == CONFIG_TRUE ? check_int_literals(&cfg, path) : read_error(&cfg, path);
    if (rc) {
        config_destroy(&cfg);
        return rc;
    }
    const config_setting_t *root = config_root_setting(&cfg);
    static const char *const keys[] = {"name", "question", "sweep", "reduced", "variants", "models", "measure",
                                       "hypotheses", NULL};
    rc = only_keys(x, root, "", keys);
    if (!rc) rc = get_string(x, root, "name", "", x->name, sizeof x->name, 1);
    for (const char *p = x->name; !rc && *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
            rc = xfail(x, member(root, "name"), "name", x->name, "only letters, digits, '_' and '-' (it names the output directory)");
    if (!rc) rc = get_string(x, root, "question", "", x->question, sizeof x->question, 1);
    snprintf(x->models, sizeof x->models, "all");
    if (!rc) rc = get_string(x, root, "models", "", x->models, sizeof x->models, 0);
    if (!rc) {
        int want[DL_MODEL_COUNT];
        if (dl_parse_models("models", x->models, want)) rc = xfail(x, member(root, "models"), "models", x->models, "%s", dl_last_error());
        else if (!want[DL_MODEL_EXACT]) rc = xfail(x, member(root, "models"), "models", x->models, "must include exact (every error is measured against it)");
    }
    const config_setting_t *s = rc ? NULL : member(root, "sweep");
    if (!rc && !s) rc = xfail(x, root, "sweep", NULL, "missing");
    if (!rc) rc = load_fields(x, s, "sweep", x->fields, &x->nfields);
    s = rc ? NULL : member(root, "reduced");
    if (!rc && s) rc = load_fields(x, s, "reduced", x->reduced, &x->nreduced);
    s = rc ? NULL : member(root, "variants");
    if (!rc && s) {
        char vals[DL_XP_MAX_VALUES][DL_XP_VAL];
        int n = 0;
        int t = config_setting_type(s);
        if (t == CONFIG_TYPE_ARRAY || t == CONFIG_TYPE_LIST) {
            if (config_setting_length(s) > DL_XP_MAX_VARIANTS) rc = xfail(x, s, "variants", NULL, "too many");
            for (int i = 0; !rc && i < config_setting_length(s); i++) {
                const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
                if (config_setting_type(e) != CONFIG_TYPE_STRING) rc = xfail(x, e, "variants", NULL, "element %d is not a string", i);
                else snprintf(vals[n++], DL_XP_VAL, "%s", config_setting_get_string(e));
            }
        } else {
            rc = xfail(x, s, "variants", NULL, "must be a list of registry globs, e.g. [\"fp32-*-simt\"]");
        }
        for (int i = 0; !rc && i < n; i++) {
            int hit = 0;
            for (int v = 0; v < dl_num_variants; v++) hit |= fnmatch(vals[i], dl_variants[v].name, 0) == 0;
            if (!hit) rc = xfail(x, s, "variants", vals[i], "matches no registry variant (decodelab list)");
            snprintf(x->variants[x->nvariants++], sizeof x->variants[0], "%.63s", vals[i]);
        }
    }
    x->max_time_s = 2.0;
    s = rc ? NULL : member(root, "measure");
    if (!rc && s) {
        static const char *const mk[] = {"time", "census", "ncu", "hot_l2", "max_time_s", NULL};
        rc = need_group(x, s, "measure", "{ time = true; ... }");
        if (!rc) rc = only_keys(x, s, "measure", mk);
        if (!rc) rc = get_bool(x, s, "time", "measure", &x->time);
        if (!rc) rc = get_bool(x, s, "census", "measure", &x->census);
        if (!rc) rc = get_bool(x, s, "ncu", "measure", &x->ncu);
        if (!rc) rc = get_bool(x, s, "hot_l2", "measure", &x->hot_l2);
        if (!rc) rc = get_number(x, s, "max_time_s", "measure", &x->max_time_s);
        if (!rc && !(x->max_time_s > 0 && x->max_time_s <= 600)) {
            char v[32];
            snprintf(v, sizeof v, "%g", x->max_time_s);
            rc = xfail(x, member(s, "max_time_s"), "measure.max_time_s", v, "must be in (0, 600]");
        }
        if (!rc && (x->time || x->ncu || x->hot_l2) && x->nvariants == 0)
            rc = xfail(x, s, "measure", NULL, "timing or ncu asked for, but no variants listed");
    }
    s = rc ? NULL : member(root, "hypotheses");
    if (!rc && !s) rc = xfail(x, root, "hypotheses", NULL, "missing (what the experiment decides)");
    if (!rc && config_setting_type(s) != CONFIG_TYPE_LIST)
        rc = xfail(x, s, "hypotheses", NULL, "must be a list ( { claim = ...; ... }, ... )");
    if (!rc && (config_setting_length(s) < 1 || config_setting_length(s) > DL_XP_MAX_HYP))
        rc = xfail(x, s, "hypotheses", NULL, "1 to %d hypotheses", DL_XP_MAX_HYP);
    for (int i = 0; !rc && i < config_setting_length(s); i++) {
        rc = load_hyp(x, config_setting_get_elem(s, (unsigned)i), i, &x->hyp[i]);
        x->nhyp = i + 1;
    }
    config_destroy(&cfg);
    return rc;
}

/* ---------------------------------------------------------------- points */

/* A sweep point (field i at value index idx[i]) as a configuration: a default case,
 * the preset first, the other fields in order, then the whole case validated. */
static int validate_point(const dl_xp_field *f, int nf, const int *idx)
{
    static dl_config cfg; /* ~33 KiB: the explicit length list */
    dl_model_params prm;
    dl_config_default(&cfg);
    dl_model_params_default(&prm);
    int batch_given = 0;
    for (int i = 0; i < nf; i++) batch_given |= !strcmp(f[i].name, "batch");
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nf; i++)
            if ((pass == 0) == !strcmp(f[i].name, "preset"))
                DL_TRY(dl_golden_set(&cfg, &prm, f[i].name, f[i].vals[idx[i]], batch_given));
    cfg.sm_scale = dl_sm_scale(&cfg);
    return dl_config_validate(&cfg);
}

/* FNV-1a over a string's bytes (the terminator excluded) */
static uint64_t fnv(uint64_t h, const char *s) { return dl_fnv1a64(h, s, strlen(s)); }

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void dl_xp_points_free(dl_xp_point *pts, int n)
{
    for (int i = 0; pts && i < n; i++)
        for (int k = 0; k < pts[i].argc; k++) free(pts[i].argv[k]);
    free(pts);
}

const char *dl_xp_point_value(const dl_xp_point *p, const char *name)
{
    for (int i = 0; i < p->nvals; i++)
        if (!strcmp(p->names[i], name)) return p->vals[i];
    return "";
}

int dl_xp_points(const dl_experiment *x, int reduced, const char *cache_dir, dl_xp_point **out, int *nout)
{
    dl_xp_field f[DL_XP_MAX_FIELDS];
    int nf = x->nfields;
    memcpy(f, x->fields, sizeof f);
    if (reduced)
        for (int r = 0; r < x->nreduced; r++) {
            int k = 0;
            while (k < nf && strcmp(f[k].name, x->reduced[r].name)) k++;
            if (k == nf) {
                if (nf == DL_XP_MAX_FIELDS) return dl_fail("%s: reduced.%s: too many fields", x->path, x->reduced[r].name);
                nf++;
            }
            f[k] = x->reduced[r];
        }
    int64_t total = 1;
    for (int i = 0; i < nf; i++) {
        total *= f[i].nvals;
        if (total > DL_XP_MAX_POINTS)
            return dl_fail("%s: sweep.%s: the sweep has more than %d points (an impossible sweep); split the experiment",
                           x->path, f[i].name, DL_XP_MAX_POINTS);
    }
    dl_xp_point *pts = calloc((size_t)total, sizeof *pts);
    if (!pts) return dl_fail("%s: out of memory for %lld points", x->path, (long long)total);
    int rc = 0;
    for (int64_t p = 0; !rc && p < total; p++) {
        dl_xp_point *pt = &pts[p];
        int64_t rest = p;
        char *flags[2 * DL_XP_MAX_FIELDS];
        int nflags = 0;
        pt->argv[pt->argc++] = strdup("golden");
        pt->label[0] = 0;
        int idx[DL_XP_MAX_FIELDS];
        for (int i = nf - 1; i >= 0; i--) { /* the last field varies fastest */
            idx[i] = (int)(rest % f[i].nvals);
            rest /= f[i].nvals;
        }
        for (int i = 0; i < nf; i++) {
            const char *v = f[i].vals[idx[i]];
            snprintf(pt->names[pt->nvals], sizeof pt->names[0], "%s", f[i].name);
            snprintf(pt->vals[pt->nvals], sizeof pt->vals[0], "%s", v);
            pt->nvals++;
            char flag[64];
            snprintf(flag, sizeof flag, "--%s", f[i].name);
            for (char *c = flag + 2; *c; c++)
                if (*c == '_') *c = '-';
            pt->argv[pt->argc++] = strdup(flag);
            pt->argv[pt->argc++] = strdup(v);
            char item[200];
            snprintf(item, sizeof item, "%s=%s", f[i].name, v);
            flags[nflags++] = strdup(item);
            if (f[i].nvals > 1) {
                size_t l = strlen(pt->label);
                snprintf(pt->label + l, sizeof pt->label - l, "%s%s=%s", l ? " " : "", f[i].name, v);
            }
        }
        if (!pt->label[0]) snprintf(pt->label, sizeof pt->label, "(single point)");
        pt->argv[pt->argc++] = strdup("--models");
        pt->argv[pt->argc++] = strdup(x->models);
        /* content hash: the sorted field=value set, the models, the program version */
        qsort(flags, (size_t)nflags, sizeof flags[0], cmp_str);
        uint64_t h = 0xcbf29ce484222325ull;
        h = fnv(h, "decodelab-golden " DL_VERSION ";");
        for (int i = 0; i < nflags; i++) {
            h = fnv(h, flags[i]);
            h = fnv(h, ";");
            free(flags[i]);
        }
        h = fnv(h, "models=");
        h = fnv(h, x->models);
        snprintf(pt->hash, sizeof pt->hash, "%016llx", (unsigned long long)h);
        snprintf(pt->golden, sizeof pt->golden, "%s/%s.h5", cache_dir, pt->hash);
        pt->argv[pt->argc++] = strdup("--out");
        pt->argv[pt->argc++] = strdup(pt->golden);
        for (int k = 0; k < pt->argc; k++)
            if (!pt->argv[k]) rc = dl_fail("%s: out of memory", x->path);
        /* validate the point as a configuration: its fields set on a default case with golden's
         * own checks (dl_golden_set: names the flag and value), the preset first, then the case
         * as a whole (dl_config_validate) */
        if (!rc && validate_point(f, nf, idx) != 0) {
            char why[512];
            snprintf(why, sizeof why, "%s", dl_last_error());
            rc = dl_fail("%s: sweep point %lld (%s): %s", x->path, (long long)p + 1, pt->label, why);
        }
    }
    if (rc) {
        dl_xp_points_free(pts, (int)total);
        return rc;
    }
    *out = pts;
    *nout = (int)total;
    return 0;
}

/* ---------------------------------------------------------------- verdicts */

const char *dl_xp_verdict_name(dl_xp_verdict v)
{
    static const char *const n[] = {"HOLDS", "REJECTED", "INCONCLUSIVE"};
    return (unsigned)v < 3 ? n[v] : "?";
}

void dl_xp_result_free(dl_xp_result *r)
{
    if (r) free(r->obs);
    if (r) r->obs = NULL;
}

double dl_xp_row_metric(const dl_result_row *r, const char *column)
{
    for (int i = 0; i < dl_results_num_columns(); i++)
        if (!strcmp(dl_results_column_name(i), column)) {
            if (dl_results_column_type(i) == DL_COL_STR) return NAN;
            char buf[64];
            dl_results_format_cell(r, i, buf, sizeof buf);
            double v = strtod(buf, NULL);
            if (dl_results_column_type(i) == DL_COL_I64 && v == -1) return NAN; /* unknown integer */
            return v;
        }
    return NAN;
}

static int term_ok(const dl_xp_term *t, const char *value)
{
    for (int i = 0; i < t->nvals; i++)
        if (!strcmp(t->vals[i], value)) return 1;
    return 0;
}

static int point_ok(const dl_xp_point *p, const dl_xp_term *t, int n)
{
    for (int i = 0; i < n; i++)
        if (!term_ok(&t[i], dl_xp_point_value(p, t[i].key))) return 0;
    return 1;
}

static const dl_xp_point *point_of(const dl_xp_point *pts, int npts, const char *golden_path)
{
    for (int i = 0; i < npts; i++)
        if (!strcmp(pts[i].golden, golden_path)) return &pts[i];
    return NULL;
}

/* Is a timing-derived metric (noisy)? Its relative noise is the row's time_stdrel
 * (also for the read reference's columns, whose own spread is not recorded). */
static int noisy(const char *metric)
{
    return !strncmp(metric, "time_", 5) || !strcmp(metric, "gbps") || !strcmp(metric, "frac_peak") ||
           !strncmp(metric, "ref_read_", 9) || !strcmp(metric, "frac_ref");
}

/* Classify value v with relative noise nz against [lo, hi]. */
static int classify(double v, double nz, const dl_xp_hyp *h)
{
    if (v >= h->lo && v <= h->hi) return 0;
    if (!isfinite(v)) return 1; /* x/0 outside the interval: no noise margin brings an infinity back */
    double bound = v < h->lo ? h->lo : h->hi;
    double margin = h->noise_k * nz * fabs(v);
    return fabs(v - bound) <= margin ? 2 : 1;
}

static int add_obs(dl_xp_result *r, int *cap)
{
    if (r->nobs == *cap) {
        *cap = *cap ? 2 * *cap : 32;
        dl_xp_obs *o = realloc(r->obs, (size_t)*cap * sizeof *o);
        if (!o) return dl_fail("experiment: out of memory");
        r->obs = o;
    }
    memset(&r->obs[r->nobs], 0, sizeof r->obs[0]);
    r->nobs++;
    return 0;
}

/* A usable results row: not SKIP/FAIL, metric finite. */
static int row_usable(const dl_result_row *r, const char *metric, double *v, char *why, size_t n)
{
    if (!strcmp(r->verdict, "SKIP")) {
        snprintf(why, n, "%s SKIP (%s)", r->variant, r->reason);
        return 0;
    }
    if (!strcmp(r->verdict, "FAIL")) {
        snprintf(why, n, "%s FAIL%s%s", r->variant, r->reason[0] ? ": " : "", r->reason);
        return 0;
    }
    *v = dl_xp_row_metric(r, metric);
    if (!isfinite(*v)) {
        snprintf(why, n, "%s has no %s%s%s", r->variant, metric, r->reason[0] ? " - " : "", r->reason);
        return 0;
    }
    return 1;
}

/* Do two points agree on every field except those named by the selectors? */
static int same_rest(const dl_xp_point *a, const dl_xp_point *b, const dl_xp_hyp *h)
{
    for (int i = 0; i < a->nvals; i++) {
        const char *k = a->names[i];
        int excluded = 0;
        for (int t = 0; t < h->num.nterms; t++) excluded |= !strcmp(h->num.terms[t].key, k);
        for (int t = 0; t < h->den.nterms; t++) excluded |= !strcmp(h->den.terms[t].key, k);
        if (!excluded && strcmp(a->vals[i], dl_xp_point_value(b, k))) return 0;
    }
    return 1;
}

static void finish(dl_xp_result *r, const dl_xp_hyp *h, const char *missing_why)
{
    r->vmin = INFINITY;
    r->vmax = -INFINITY;
    for (int i = 0; i < r->nobs; i++) {
        const dl_xp_obs *o = &r->obs[i];
        if (o->status == 0) r->nin++;
        else if (o->status == 1) r->nout++;
        else r->nunclear++;
        if (o->value < r->vmin) r->vmin = o->value;
        if (o->value > r->vmax) r->vmax = o->value;
    }
    char iv[96];
    snprintf(iv, sizeof iv, "[%g, %g]", h->lo, h->hi);
    if (r->nout > 0) {
        const dl_xp_obs *w = NULL; /* the example: the observation farthest outside, relative to its bound */
        double wd = -1;
        for (int i = 0; i < r->nobs; i++) {
            const double v = r->obs[i].value, bound = v < h->lo ? h->lo : h->hi;
            const double d = isfinite(v) ? fabs(v - bound) / fmax(fabs(bound), 1e-300) : INFINITY;
            if (r->obs[i].status == 1 && (!w || d > wd)) w = &r->obs[i], wd = d;
        }
        r->verdict = DL_XP_REJECTED;
        snprintf(r->reason, sizeof r->reason, "%d of %d observations outside %s beyond the noise, e.g. %.4g at %.400s",
                 r->nout, r->nobs, iv, w->value, w->what);
    } else if (r->nobs == 0) {
        r->verdict = DL_XP_INCONCLUSIVE;
        snprintf(r->reason, sizeof r->reason, "no data%s%s", missing_why[0] ? ": " : "", missing_why);
    } else if (r->nunclear > 0) {
        const dl_xp_obs *w = NULL;
        for (int i = 0; i < r->nobs; i++)
            if (r->obs[i].status == 2) w = &r->obs[i];
        r->verdict = DL_XP_INCONCLUSIVE;
        snprintf(r->reason, sizeof r->reason,
                 "%d of %d observations outside %s by less than %g x the measured noise (e.g. %.4g with stdrel %.2g%% at %.400s)",
                 r->nunclear, r->nobs, iv, h->noise_k, w->value, 100 * w->noise, w->what);
    } else if (r->nmissing > 0) {
        r->verdict = DL_XP_INCONCLUSIVE;
        snprintf(r->reason, sizeof r->reason, "the %d observations made lie in %s, but %d are missing (%s)", r->nobs, iv,
                 r->nmissing, missing_why);
    } else {
        r->verdict = DL_XP_HOLDS;
        snprintf(r->reason, sizeof r->reason, "all %d observations in %s (range %.4g .. %.4g)", r->nobs, iv, r->vmin,
                 r->vmax);
    }
}

static int eval_rows(const dl_experiment *x, const dl_xp_hyp *h, const dl_xp_point *pts, int npts,
                     const dl_result_row *rows, int64_t nrows, dl_xp_result *r)
{
    (void)x;
    int cap = 0;
    char missing[512] = "";
    for (int p = 0; p < npts; p++) {
        const dl_xp_point *pn = &pts[p];
        if (!point_ok(pn, h->where, h->nwhere) || !point_ok(pn, h->num.terms, h->num.nterms)) continue;
        /* the numerator rows at this point */
        int found_num = 0;
        for (int64_t i = 0; i < nrows; i++) {
            const dl_result_row *a = &rows[i];
            if (strcmp(a->golden_path, pn->golden) || fnmatch(h->num.variant, a->variant, 0)) continue;
            found_num = 1;
            double va = NAN, vb = NAN;
            char why[600];
            const char *mnum = h->num.metric[0] ? h->num.metric : h->metric;
            const char *mden = h->den.metric[0] ? h->den.metric : h->metric;
            if (!row_usable(a, mnum, &va, why, sizeof why)) {
                r->nmissing++;
                if (!missing[0]) snprintf(missing, sizeof missing, "%.250s at %.250s", why, pn->label);
                continue;
            }
            double na = noisy(mnum) && isfinite(a->time_stdrel) ? a->time_stdrel : 0;
            if (h->kind == DL_XP_VALUE) {
                DL_TRY(add_obs(r, &cap));
                dl_xp_obs *o = &r->obs[r->nobs - 1];
                snprintf(o->what, sizeof o->what, "%s, %s", pn->label, a->variant);
                o->num = o->value = va;
                o->den = NAN;
                o->noise = na;
                o->status = classify(va, na, h);
                o->unconverged = noisy(mnum) && a->time_converged == 0;
                continue;
            }
            int found_den = 0;
            for (int q = 0; q < npts; q++) {
                const dl_xp_point *pd = &pts[q];
                if (!point_ok(pd, h->where, h->nwhere) || !point_ok(pd, h->den.terms, h->den.nterms) ||
                    !same_rest(pn, pd, h))
                    continue;
                for (int64_t j = 0; j < nrows; j++) {
                    const dl_result_row *b = &rows[j];
                    /* a row is divided by itself only when the two sides read different metrics */
                    if (strcmp(b->golden_path, pd->golden) || fnmatch(h->den.variant, b->variant, 0) ||
                        (b == a && !strcmp(mnum, mden)))
                        continue;
                    found_den = 1;
                    if (!row_usable(b, mden, &vb, why, sizeof why)) {
                        r->nmissing++;
                        if (!missing[0]) snprintf(missing, sizeof missing, "%.250s at %.250s", why, pd->label);
                        continue;
                    }
                    double nb = noisy(mden) && isfinite(b->time_stdrel) ? b->time_stdrel : 0;
                    if (va == 0 && vb == 0) { /* 0/0 says nothing about the ratio: missing, named */
                        r->nmissing++;
                        if (!missing[0])
                            snprintf(missing, sizeof missing, "0/0 (%.60s of %s and of %s both 0) at %.250s", mnum,
                                     a->variant, b->variant, pn->label);
                        continue;
                    }
                    DL_TRY(add_obs(r, &cap));
                    dl_xp_obs *o = &r->obs[r->nobs - 1];
                    if (pd == pn) snprintf(o->what, sizeof o->what, "%s, %s / %s", pn->label, a->variant, b->variant);
                    else snprintf(o->what, sizeof o->what, "%s (%s) / %s (%s)", a->variant, pn->label, b->variant, pd->label);
                    o->num = va;
                    o->den = vb;
                    o->value = va / vb;
                    o->noise = sqrt(na * na + nb * nb);
                    o->status = classify(o->value, o->noise, h); /* x/0 = +-inf: inside [lo, inf] or out */
                    o->unconverged = (noisy(mnum) && a->time_converged == 0) || (noisy(mden) && b->time_converged == 0);
                }
            }
            if (!found_den) {
                r->nmissing++;
                if (!missing[0]) snprintf(missing, sizeof missing, "no %s row to divide by for %s", h->den.variant, pn->label);
            }
        }
        if (!found_num) {
            r->nmissing++;
            if (!missing[0]) snprintf(missing, sizeof missing, "no %s row at %s (not run)", h->num.variant, pn->label);
        }
    }
    finish(r, h, missing);
    return 0;
}

/* Census: sum of the metric over the rows a selector picks (kernels claimed by the variant's glob). */
static double census_sum(const dl_xp_hyp *h, const dl_xp_sel *s, const dl_xp_point *pts, int npts,
                         const dl_census_row *c, int64_t n, int *count)
{
    char metric[160];
    if (!strcmp(h->source, "sass") && dl_census_class_parse(h->metric) >= 0) snprintf(metric, sizeof metric, "class:%s", h->metric);
    else snprintf(metric, sizeof metric, "%s", h->metric);
    double sum = 0;
    *count = 0;
    for (int64_t i = 0; i < n; i++) {
        const dl_census_row *r = &c[i];
        if (strcmp(r->source, h->source) || strcmp(r->metric, metric) || fnmatch(s->variant, r->variant, 0)) continue;
        const dl_variant *v = dl_variant_find(r->variant);
        if (!v || !dl_census_kernel_matches(v->kernel, r->kernel)) continue; /* e.g. the split-KV merge kernel */
        int ok = 1;
        for (int t = 0; t < s->nterms && ok; t++)
            if (!strcmp(s->terms[t].key, "kv_dtype") && !point_of(pts, npts, r->golden_path)) ok = term_ok(&s->terms[t], r->kv_dtype);
        if (!strcmp(h->source, "ncu")) {
            const dl_xp_point *p = point_of(pts, npts, r->golden_path);
            if (!p || !point_ok(p, h->where, h->nwhere)) continue;
            for (int t = 0; t < s->nterms && ok; t++) {
                const char *pv = dl_xp_point_value(p, s->terms[t].key);
                /* kv_dtype not swept: the point has no value for it, the row its instantiation's */
                if (!strcmp(s->terms[t].key, "kv_dtype") && !pv[0]) pv = r->kv_dtype;
                ok = term_ok(&s->terms[t], pv);
            }
        }
        if (!ok || !isfinite(r->value)) continue;
        sum += r->value;
        (*count)++;
    }
    return sum;
}

int dl_xp_evaluate(const dl_experiment *x, int hi, const dl_xp_point *pts, int npts, const dl_result_row *rows,
                   int64_t nrows, const dl_census_row *crows, int64_t ncrows, dl_xp_result *r)
{
    memset(r, 0, sizeof *r);
    const dl_xp_hyp *h = &x->hyp[hi];
    if (h->kind != DL_XP_CENSUS) return eval_rows(x, h, pts, npts, rows, nrows, r);
    int cap = 0, cn = 0, cd = 0;
    double sn = census_sum(h, &h->num, pts, npts, crows, ncrows, &cn);
    char missing[256] = "";
    if (cn == 0) {
        snprintf(missing, sizeof missing, "no %s census rows %s for %s (%s)", h->source,
                 ncrows ? "match the selector" : "at all", h->num.variant,
                 ncrows ? "check its kv_dtype and variant"
                 : !strcmp(h->source, "ncu") ? "ncu runs on a GPU machine only" : "cuobjdump missing or no CUDA kernels");
        r->nmissing = 1;
        finish(r, h, missing);
        return 0;
    }
    DL_TRY(add_obs(r, &cap));
    dl_xp_obs *o = &r->obs[0];
    o->num = sn;
    o->den = NAN;
    o->value = sn;
    snprintf(o->what, sizeof o->what, "%s %s of %s (%d kernel rows)", h->source, h->metric, h->num.variant, cn);
    if (h->den.present) {
        double sd = census_sum(h, &h->den, pts, npts, crows, ncrows, &cd);
        if (cd == 0) {
            r->nobs = 0;
            r->nmissing = 1;
            snprintf(missing, sizeof missing, "no %s census rows for %s", h->source, h->den.variant);
            finish(r, h, missing);
            return 0;
        }
        o->den = sd;
        o->value = sd != 0 ? sn / sd : (sn == 0 ? 1.0 : INFINITY);
        snprintf(o->what, sizeof o->what, "%s %s: %s %g / %s %g", h->source, h->metric, h->num.variant, sn,
                 h->den.variant, sd);
    }
    o->status = classify(o->value, 0, h);
    finish(r, h, "");
    return 0;
}

/* cmd_golden.c - `decodelab golden`: build a case from flags (or a preset
 * overridden by flags), compute the reference models, write the golden file
 * atomically and print a summary. Bad flags: one line, exit 2, no file. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../gpu/dl_registry.h"
#include "../ref/dl_paged.h"
#include "cli_util.h"
#include "dl_cli.h"
#include "dl_golden.h"

typedef struct {
    const char *name;
    int64_t num_qo_heads, num_kv_heads, head_dim;
    const char *what;
} preset;

static const preset presets[] = {
    {"llama3-8b", 32, 8, 128, "Llama 3 8B: 32 query heads over 8 KV heads (GQA group 4), head_dim 128"},
    {"llama-13b", 40, 40, 128, "Llama 2 13B: 40 query heads, 40 KV heads (MHA), head_dim 128"},
    {"llama3-70b", 64, 8, 128, "Llama 3 70B: 64 query heads over 8 KV heads (GQA group 8), head_dim 128"},
};
static const int num_presets = (int)(sizeof presets / sizeof presets[0]);

enum {
    O_HELP = 'h', O_PRESET = 256, O_BATCH, O_HQ, O_HKV, O_D, O_PAGE, O_LAYOUT, O_QT, O_KVT, O_SM, O_SEED, O_DIST,
    O_LEN, O_KVSCALE, O_MEAN, O_STD, O_LO, O_HI, O_OPROB, O_OVAR, O_OCH, O_CHS, O_MODELS, O_OUT, O_FORCE,
    O_KVBLOCK, O_ACCBITS, O_ACCBLOCK, O_PSCALE, O_ACCPROMOTE, O_SHARE,
    O_SINKTOK, O_SINKDELTA, O_KVORDER /* E8: the attention sink and the KV iteration order */
};

static const struct option long_opts[] = {
    {"help", no_argument, 0, O_HELP},
    {"preset", required_argument, 0, O_PRESET},
    {"batch", required_argument, 0, O_BATCH},
    {"num-qo-heads", required_argument, 0, O_HQ},
    {"num-kv-heads", required_argument, 0, O_HKV},
    {"head-dim", required_argument, 0, O_D},
    {"page-size", required_argument, 0, O_PAGE},
    {"kv-layout", required_argument, 0, O_LAYOUT},
    {"q-dtype", required_argument, 0, O_QT},
    {"kv-dtype", required_argument, 0, O_KVT},
    {"sm-scale", required_argument, 0, O_SM},
    {"seed", required_argument, 0, O_SEED},
    {"distribution", required_argument, 0, O_DIST},
    {"seq-len", required_argument, 0, O_LEN},
    {"kv-scale", required_argument, 0, O_KVSCALE},
    {"share-prefix", required_argument, 0, O_SHARE},
    {"dist-mean", required_argument, 0, O_MEAN},
    {"dist-std", required_argument, 0, O_STD},
    {"dist-lo", required_argument, 0, O_LO},
    {"dist-hi", required_argument, 0, O_HI},
    {"outlier-prob", required_argument, 0, O_OPROB},
    {"outlier-var", required_argument, 0, O_OVAR},
    {"num-outlier-channels", required_argument, 0, O_OCH},
    {"channel-scale", required_argument, 0, O_CHS},
    {"models", required_argument, 0, O_MODELS},
    {"out", required_argument, 0, O_OUT},
    {"force", no_argument, 0, O_FORCE},
    {"kv-block", required_argument, 0, O_KVBLOCK},
    {"acc-mantissa-bits", required_argument, 0, O_ACCBITS},
    {"acc-block", required_argument, 0, O_ACCBLOCK},
    {"p-scale", required_argument, 0, O_PSCALE},
    {"acc-promote-blocks", required_argument, 0, O_ACCPROMOTE},
    {"sink-tokens", required_argument, 0, O_SINKTOK},
    {"sink-delta", required_argument, 0, O_SINKDELTA},
    {"kv-order", required_argument, 0, O_KVORDER},
    {0, 0, 0, 0},
};

static void usage(FILE *f)
{
    dl_config d;
    dl_config_default(&d);
    fprintf(f,
            "usage: decodelab golden --out FILE [options]\n\n"
            "Build a decode-attention case (Q, paged KV cache, scales), compute the reference models\n"
            "and write them as a golden HDF5 file (data/SCHEMA.md). Written atomically; an existing\n"
            "FILE is refused unless --force. Presets set the head shape; explicit flags override them.\n\n"
            "case:\n"
            "  --preset NAME            ");
    for (int i = 0; i < num_presets; i++) fprintf(f, "%s%s", i ? ", " : "", presets[i].name);
    fprintf(f,
            "\n"
            "  --batch N                requests (default %lld; with a --seq-len list: its length)\n"
            "  --num-qo-heads N         query heads (default %lld)\n"
            "  --num-kv-heads N         KV heads; must divide num-qo-heads (default %lld)\n"
            "  --head-dim N             (default %lld)\n"
            "  --page-size N            tokens per page, 1..%d (default %lld)\n"
            "  --kv-layout NHD|HND      cache layout (default NHD)\n"
            "  --q-dtype f32|f16|bf16   (default bf16)\n"
            "  --kv-dtype f16|bf16|e4m3|e5m2  (default e4m3)\n"
            "  --sm-scale X             softmax scale (default 1/sqrt(head_dim))\n"
            "  --seed N                 (default 0)\n"
            "  --seq-len N | MIN:MAX | a,b,c   fixed, uniform ragged range, or one length per request\n"
            "  --kv-scale absmax|absmax-tensor|X   per-KV-head absmax, one absmax for all heads, or a given scale\n"
            "  --share-prefix N         prefix caching: the first N pages of every request are request 0's\n"
            "                           (the same physical pages: the page table shares them); N at most the\n"
            "                           full pages of the shortest request (with MIN:MAX: of MIN); not with\n"
            "                           --distribution sink, whose keys are shifted per request (default 0)\n"
            "values:\n"
            "  --distribution normal|uniform|outlier|channel-outlier|sink  (default normal)\n"
            "  --dist-mean X --dist-std X        normal (default 0, 1)\n"
            "  --dist-lo X --dist-hi X           uniform (default -1, 1)\n"
            "  --outlier-prob X --outlier-var X  outlier: N(0,1) + N(0,var)*Bernoulli(prob) (default 0.001, 100)\n"
            "  --num-outlier-channels N --channel-scale X  channel-outlier: K channels scaled (default 4, 20)\n"
            "  --sink-tokens N --sink-delta X    sink: normal, and the first N keys of each request shifted so that\n"
            "                           every query head of the group scores X more on them (default 4, 8)\n"
            "models:\n"
            "  --models LIST            comma-separated of exact,orig,fp32,bf16,fp8,fp8acc,bf16simt,\n"
            "                           fp8wg,fp8accwg, or all (default), or auto: exact and the models the\n"
            "                           registry's variants are judged by on this case (a 16-bit cache needs\n"
            "                           no fp8* model; decodelab list shows each variant's). The originals\n"
            "                           (q_orig, k_orig, v_orig) are written only with orig, which reads them\n"
            "  --kv-block N             tokens per online-softmax step of fp32/bf16/fp8 (default 64)\n"
            "  --acc-mantissa-bits N    fp8: accumulator mantissa bits, 23 = true FP32 (default 23)\n"
            "  --acc-block N            fp8: k-elements per accumulation block (default 32)\n"
            "  --p-scale X              fp8: static scale of P before e4m3 (default 448)\n"
            "  --acc-promote-blocks N   fp8acc, fp8accwg: k-blocks per partial before it is added in FP32 (default 2)\n"
            "  --kv-order forward|reverse  token order of the emulated models' online softmax (default forward;\n"
            "                           the GPU kernels are forward only and SKIP a reverse file)\n"
            "output:\n"
            "  --out FILE               the golden file (required)\n"
            "  --force                  overwrite FILE if it exists (a regular file only)\n"
            "  --help                   this text\n\n"
            "example: decodelab golden --preset llama3-8b --batch 64 --seq-len 1024 --kv-dtype e4m3 --out g.h5\n"
            "exit status: 0 written, 2 bad input (one line naming the flag and value; no file written).\n",
            (long long)d.batch_size, (long long)d.num_qo_heads, (long long)d.num_kv_heads, (long long)d.head_dim,
            DL_MAX_PAGE_SIZE, (long long)d.page_size);
}

static int parse_seq_len(const char *s, dl_config *c, int batch_given)
{
    const char *flag = "--seq-len";
    const char *colon = strchr(s, ':'), *comma = strchr(s, ',');
    char buf[64];
    if (colon) {
        size_t k = (size_t)(colon - s);
        if (k >= sizeof buf) return dl_fail("%s: '%s' is not N, MIN:MAX or a,b,c", flag, s);
        memcpy(buf, s, k);
        buf[k] = 0;
        if (dl_parse_i64(flag, buf, 1, DL_MAX_SEQ_LEN, &c->seq_len_min) ||
            dl_parse_i64(flag, colon + 1, 1, DL_MAX_SEQ_LEN, &c->seq_len_max)) /* the whole value named */
            return dl_fail("%s: '%s' is not MIN:MAX (whole numbers in 1..%d)", flag, s, DL_MAX_SEQ_LEN);
        if (c->seq_len_max < c->seq_len_min) return dl_fail("%s: '%s' has MAX < MIN", flag, s);
        c->num_explicit_lens = 0;
        return 0;
    }
    if (comma) {
        int64_t n = 0;
        const char *p = s;
        while (*p) {
            const char *e = strchr(p, ',');
            size_t k = e ? (size_t)(e - p) : strlen(p);
            if (k == 0 || k >= sizeof buf) return dl_fail("%s: '%s' is not a list of lengths", flag, s);
            if (n >= DL_MAX_EXPLICIT_LENS)
                return dl_fail("%s: more than %d lengths in the list", flag, DL_MAX_EXPLICIT_LENS);
            memcpy(buf, p, k);
            buf[k] = 0;
            DL_TRY(dl_parse_i64(flag, buf, 1, DL_MAX_SEQ_LEN, &c->explicit_lens[n]));
            n++;
            p = e ? e + 1 : p + k;
            if (e && !*p) return dl_fail("%s: '%s' ends with a comma", flag, s);
        }
        c->num_explicit_lens = n;
        if (!batch_given) c->batch_size = n;
        return 0;
    }
    DL_TRY(dl_parse_i64(flag, s, 1, DL_MAX_SEQ_LEN, &c->seq_len_min));
    c->seq_len_max = c->seq_len_min;
    c->num_explicit_lens = 0;
    return 0;
}

typedef struct {
    dl_config cfg;
    dl_model_params params;
    int want[DL_MODEL_COUNT];
    int auto_models; /* --models auto: want[] is settled once the case is (dl_variant_models) */
    const char *out;
    int force;
} golden_args;

/* Apply one option (code, value) to a. */
static int apply(golden_args *a, int code, const char *v, int batch_given)
{
    dl_config *c = &a->cfg;
    int64_t x;
    switch (code) {
    case O_BATCH: return dl_parse_i64("--batch", v, 1, DL_MAX_BATCH, &c->batch_size);
    case O_HQ: return dl_parse_i64("--num-qo-heads", v, 1, DL_MAX_HEADS, &c->num_qo_heads);
    case O_HKV: return dl_parse_i64("--num-kv-heads", v, 1, DL_MAX_HEADS, &c->num_kv_heads);
    case O_D: return dl_parse_i64("--head-dim", v, 1, DL_MAX_HEAD_DIM, &c->head_dim);
    case O_PAGE: return dl_parse_i64("--page-size", v, 1, DL_MAX_PAGE_SIZE, &c->page_size);
    case O_LAYOUT:
        if (dl_layout_parse(v, &c->kv_layout)) return dl_fail("--kv-layout: '%s' is not NHD or HND", v);
        return 0;
    case O_QT:
        if (dl_dtype_parse(v, &c->q_dtype) || (c->q_dtype != DL_F32 && c->q_dtype != DL_F16 && c->q_dtype != DL_BF16))
            return dl_fail("--q-dtype: '%s' is not f32, f16 or bf16", v);
        return 0;
    case O_KVT:
        if (dl_dtype_parse(v, &c->kv_dtype) || c->kv_dtype == DL_F32)
            return dl_fail("--kv-dtype: '%s' is not f16, bf16, e4m3 or e5m2", v);
        return 0;
    case O_SM:
        DL_TRY(dl_parse_f64("--sm-scale", v, &c->sm_scale));
        if (!(c->sm_scale > 0.0)) return dl_fail("--sm-scale: '%s' must be > 0", v);
        return 0;
    case O_SEED: return dl_parse_u64("--seed", v, &c->seed);
    case O_DIST:
        if (dl_dist_parse(v, &c->dist.kind))
            return dl_fail("--distribution: '%s' is not normal, uniform, outlier, channel-outlier or sink", v);
        return 0;
    case O_LEN: return parse_seq_len(v, c, batch_given);
    case O_KVSCALE:
        if (dl_scale_mode_parse(v, &c->kv_scale_mode) || c->kv_scale_mode == DL_SCALE_GIVEN) {
            /* "given" is spelled as the scale itself */
            double s;
            if (dl_parse_f64("--kv-scale", v, &s) || !(s > 0.0))
                return dl_fail("--kv-scale: '%s' is not absmax, absmax-tensor or a number > 0", v);
            c->kv_scale_mode = DL_SCALE_GIVEN;
            c->kv_scale_value = s;
        }
        return 0;
    case O_SHARE: return dl_parse_i64("--share-prefix", v, 0, DL_MAX_SEQ_LEN, &c->share_prefix_pages);
    case O_MEAN: return dl_parse_f64("--dist-mean", v, &c->dist.mean);
    case O_STD: return dl_parse_f64("--dist-std", v, &c->dist.std);
    case O_LO: return dl_parse_f64("--dist-lo", v, &c->dist.lo);
    case O_HI: return dl_parse_f64("--dist-hi", v, &c->dist.hi);
    case O_OPROB: return dl_parse_f64("--outlier-prob", v, &c->dist.outlier_prob);
    case O_OVAR: return dl_parse_f64("--outlier-var", v, &c->dist.outlier_var);
    case O_OCH: return dl_parse_i64("--num-outlier-channels", v, 0, DL_MAX_HEAD_DIM, &c->dist.num_outlier_channels);
    case O_CHS: return dl_parse_f64("--channel-scale", v, &c->dist.channel_scale);
    case O_MODELS:
        a->auto_models = strcmp(v, "auto") == 0;
        if (a->auto_models) return 0;
        if (strstr(v, "auto")) return dl_fail("--models: '%s': auto stands alone, not in a list", v);
        return dl_parse_models("--models", v, a->want);
    case O_OUT:
        if (!v[0]) return dl_fail("--out: '' is not a file name");
        a->out = v;
        return 0;
    case O_FORCE: a->force = 1; return 0;
    case O_KVBLOCK: return dl_parse_i64("--kv-block", v, 1, DL_MAX_SEQ_LEN, &a->params.kv_block);
    case O_ACCBITS:
        DL_TRY(dl_parse_i64("--acc-mantissa-bits", v, 0, 23, &x));
        a->params.acc_mantissa_bits = (int)x;
        return 0;
    case O_ACCBLOCK: return dl_parse_i64("--acc-block", v, 1, 65536, &a->params.acc_block);
    case O_PSCALE: {
        double s;
        DL_TRY(dl_parse_f64("--p-scale", v, &s));
        if (!((float)s > 0.0f) || s > 1e30) /* stored as a float: 1e-300 would be 0 */
            return dl_fail("--p-scale: '%s' must be > 0 as a float (1.2e-38 .. 1e30)", v);
        a->params.p_scale = (float)s;
        return 0;
    }
    case O_ACCPROMOTE: return dl_parse_i64("--acc-promote-blocks", v, 1, DL_MAX_HEAD_DIM, &a->params.acc_promote_blocks);
    case O_SINKTOK: return dl_parse_i64("--sink-tokens", v, 0, DL_MAX_SEQ_LEN, &c->dist.sink_tokens);
    case O_SINKDELTA:
        DL_TRY(dl_parse_f64("--sink-delta", v, &c->dist.sink_delta));
        if (fabs(c->dist.sink_delta) > 1000.0) return dl_fail("--sink-delta: '%s' is outside -1000..1000", v);
        return 0;
    case O_KVORDER:
        if (dl_kv_order_parse(v, &a->params.kv_order)) return dl_fail("--kv-order: '%s' is not forward or reverse", v);
        return 0;
    }
    return dl_fail("internal: option %d not handled", code);
}

/* Parse argv into a. Returns 0 ok, 1 when --help was printed, -1 on error. */
static int parse_args(int argc, char **argv, golden_args *a)
{
    int codes[256];
    const char *vals[256];
    int n = 0, batch_given = 0;
    const char *preset_name = NULL;
    memset(a, 0, sizeof *a);
    dl_config_default(&a->cfg);
    dl_model_params_default(&a->params);
    for (int m = 0; m < DL_MODEL_COUNT; m++) a->want[m] = 1;

    opterr = 0;
    optind = 0; /* GNU: reinitialise (the CLI or a test may call us more than once) */
    for (;;) {
        int li = -1;
        int code = getopt_long(argc, argv, ":h", long_opts, &li);
        if (code == -1) break;
        if (code == '?' || code == ':') return dl_cli_getopt_fail("golden", code, argv);
        if (code == O_HELP) {
            usage(stdout);
            return 1;
        }
        if (code == O_PRESET) {
            preset_name = optarg;
            continue;
        }
        if (code == O_BATCH) batch_given = 1;
        if (n == (int)(sizeof codes / sizeof codes[0])) return dl_fail("too many options");
        codes[n] = code;
        vals[n] = optarg;
        n++;
    }
    if (optind < argc) return dl_fail("unexpected argument '%s' (see decodelab golden --help)", argv[optind]);
    if (preset_name) {
        int found = 0;
        for (int i = 0; i < num_presets; i++)
            if (strcmp(preset_name, presets[i].name) == 0) {
                a->cfg.num_qo_heads = presets[i].num_qo_heads;
                a->cfg.num_kv_heads = presets[i].num_kv_heads;
                a->cfg.head_dim = presets[i].head_dim;
                found = 1;
            }
        if (!found) return dl_fail("--preset: '%s' is unknown (llama3-8b, llama-13b, llama3-70b)", preset_name);
    }
    const char *share_val = NULL;
    for (int i = 0; i < n; i++) {
        DL_TRY(apply(a, codes[i], vals[i], batch_given));
        if (codes[i] == O_SHARE) share_val = vals[i];
    }
    if (share_val && a->cfg.share_prefix_pages > 0 && a->cfg.dist.kind == DL_DIST_SINK && a->cfg.dist.sink_tokens > 0)
        return dl_fail("--share-prefix: '%s' with --distribution sink: the sink shift is made per request from its "
                       "queries, and the sink keys would lie in the shared pages (use one or the other, or "
                       "--sink-tokens 0)", share_val);
    if (share_val && a->cfg.share_prefix_pages > 0) {
        /* each shared page must be full in every request: at most the full pages of the shortest one */
        const dl_config *c = &a->cfg;
        const int64_t ps = c->page_size;
        if (c->num_explicit_lens > 0) {
            int64_t b = 0;
            for (int64_t i = 1; i < c->num_explicit_lens; i++)
                if (c->explicit_lens[i] < c->explicit_lens[b]) b = i;
            if (c->share_prefix_pages > c->explicit_lens[b] / ps)
                return dl_fail("--share-prefix: '%s' is more than the full pages of the shortest request (request "
                               "%lld: %lld tokens = %lld full pages of --page-size %lld)", share_val, (long long)b,
                               (long long)c->explicit_lens[b], (long long)(c->explicit_lens[b] / ps), (long long)ps);
        } else if (c->share_prefix_pages > c->seq_len_min / ps) {
            return dl_fail("--share-prefix: '%s' is more than the full pages of the shortest request (--seq-len "
                           "minimum %lld tokens = %lld full pages of --page-size %lld)", share_val,
                           (long long)c->seq_len_min, (long long)(c->seq_len_min / ps), (long long)ps);
        }
    }
    if (!a->out) return dl_fail("--out: missing (where to write the golden file)");
    int any = 0;
    for (int m = 0; m < DL_MODEL_COUNT; m++) any |= a->want[m];
    if (!any) return dl_fail("--models: no model selected");
    return 0;
}

int dl_golden_set(dl_config *c, dl_model_params *p, const char *name, const char *value, int batch_given)
{
    char flag[64];
    size_t k = 0;
    for (; name[k] && k + 1 < sizeof flag; k++) flag[k] = name[k] == '_' ? '-' : name[k];
    flag[k] = 0;
    if (!strcmp(flag, "preset")) {
        for (int i = 0; i < num_presets; i++)
            if (strcmp(value, presets[i].name) == 0) {
                c->num_qo_heads = presets[i].num_qo_heads;
                c->num_kv_heads = presets[i].num_kv_heads;
                c->head_dim = presets[i].head_dim;
                return 0;
            }
        return dl_fail("--preset: '%s' is unknown (llama3-8b, llama-13b, llama3-70b)", value);
    }
    int code = -1;
    for (int i = 0; long_opts[i].name; i++)
        if (!strcmp(long_opts[i].name, flag) && long_opts[i].has_arg == required_argument) code = long_opts[i].val;
    if (code < 0 || code == O_MODELS || code == O_OUT)
        return dl_fail("--%s: not a field of a case or of its models (see decodelab golden --help)", flag);
    static golden_args a; /* ~33 KiB: the explicit length list */
    a.cfg = *c;
    a.params = *p;
    DL_TRY(apply(&a, code, value, batch_given));
    *c = a.cfg;
    *p = a.params;
    return 0;
}

int dl_cmd_golden_parse(int argc, char **argv)
{
    static golden_args a; /* ~33 KiB: the explicit length list */
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc;
    a.cfg.sm_scale = dl_sm_scale(&a.cfg);
    return dl_config_validate(&a.cfg) ? -1 : 0;
}

static void human_bytes(double b, char *buf, size_t n)
{
    if (b >= 1 << 30) snprintf(buf, n, "%.2f GiB", b / (1 << 30));
    else if (b >= 1 << 20) snprintf(buf, n, "%.2f MiB", b / (1 << 20));
    else if (b >= 1 << 10) snprintf(buf, n, "%.1f KiB", b / (1 << 10));
    else snprintf(buf, n, "%.0f B", b);
}

int dl_cmd_golden(int argc, char **argv)
{
    golden_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc == 1) return 0;
    if (rc) return dl_cli_error("golden");
    dl_config *cfg = &a.cfg;
    cfg->sm_scale = dl_sm_scale(cfg); /* store the effective value */
    if (dl_config_validate(cfg)) return dl_cli_error("golden");
    if (a.auto_models) {
        dl_variant_models(cfg, &a.params, a.want);
        a.want[DL_MODEL_EXACT] = 1;
    }
    if (!a.force && dl_file_size(a.out) >= 0) {
        dl_fail("--out: '%s' exists (use --force to overwrite)", a.out);
        return dl_cli_error("golden");
    }
    const int progress = isatty(2);
    char name[512];
    dl_config_name(cfg, name, sizeof name);

    dl_case c;
    dl_output outs[DL_MODEL_COUNT];
    double tm[DL_MODEL_COUNT] = {0};
    int n = 0;
    memset(outs, 0, sizeof outs);
    if (progress) fprintf(stderr, "building case %s ...\n", name);
    double t0 = dl_now();
    if (dl_case_build(cfg, &c)) return dl_cli_error("golden");
    if (dl_golden_check_case(a.out, &c)) { /* inputs a reader refuses (overflowed values or scales): before the models */
        rc = dl_cli_error("golden");
        goto done;
    }
    double t_build = dl_now() - t0;
    for (int m = 0; m < DL_MODEL_COUNT; m++) {
        if (!a.want[m]) continue;
        if (progress) fprintf(stderr, "computing model %s ...\n", dl_model_name((dl_model)m));
        t0 = dl_now();
        if (dl_reference(&c, (dl_model)m, &a.params, &outs[n])) {
            rc = dl_cli_error("golden");
            goto done;
        }
        tm[m] = dl_now() - t0;
        n++;
    }
    /* the originals go into the file with the orig model, the only one computed from them (f32, they are
     * 4x the bytes of an 8-bit cache and 2x a 16-bit one: without them the file is ~1/5 or ~1/3 the size) */
    if (!a.want[DL_MODEL_ORIG]) dl_case_drop_originals(&c);
    if (progress) fprintf(stderr, "writing %s ...\n", a.out);
    t0 = dl_now();
    if (dl_golden_write(a.out, &c, outs, n, &a.params, a.force)) {
        rc = dl_cli_error("golden");
        goto done;
    }
    double t_write = dl_now() - t0;

    int64_t tokens = 0;
    for (int64_t b = 0; b < cfg->batch_size; b++) tokens += dl_case_seq_len(&c, b);
    const int nhd = cfg->kv_layout == DL_NHD;
    char fs[32], kvb[32];
    human_bytes((double)dl_file_size(a.out), fs, sizeof fs);
    human_bytes(2.0 * (double)dl_case_cache_elems(&c) * (double)dl_dtype_size(cfg->kv_dtype), kvb, sizeof kvb);
    printf("case:    %s\n", name);
    printf("inputs:  q [%lld, %lld, %lld] %s; k/v cache [%lld, %lld, %lld, %lld] %s %s (%s for both); "
           "%lld pages, %lld tokens\n",
           (long long)cfg->batch_size, (long long)cfg->num_qo_heads, (long long)cfg->head_dim,
           dl_dtype_name(cfg->q_dtype), (long long)c.num_pages,
           (long long)(nhd ? cfg->page_size : cfg->num_kv_heads), (long long)(nhd ? cfg->num_kv_heads : cfg->page_size),
           (long long)cfg->head_dim, dl_layout_name(cfg->kv_layout), dl_dtype_name(cfg->kv_dtype), kvb,
           (long long)c.num_pages, (long long)tokens);
    if (a.auto_models) {
        printf("models:  auto:");
        for (int m = 0, k = 0; m < DL_MODEL_COUNT; m++)
            if (a.want[m]) printf("%s %s", k++ ? "," : "", dl_model_name((dl_model)m));
        printf(" (exact and the models of the variants that run this case)\n");
    }
    printf("time:    build %.3f s", t_build);
    for (int m = 0; m < DL_MODEL_COUNT; m++)
        if (a.want[m]) printf(", %s %.3f s", dl_model_name((dl_model)m), tm[m]);
    printf(", write %.3f s\n", t_write);
    printf("file:    %s (%s)\n", a.out, fs);
    rc = 0;
done:
    for (int i = 0; i < n; i++) dl_output_free(&outs[i]);
    dl_case_free(&c);
    return rc;
}

/* registry.c - the static table of GPU decode variants (the rows of
 * gpu/dl_variants.def: name, axes, launcher, golden model, kernel file, supports
 * predicate, kernel glob), lookup and glob selection, the split-KV heuristic and
 * workspace size. Plain C: with DL_HAVE_CUDA=0 the launchers are NULL,
 * dl_gpu_device_count() says why and dl_gpu_sm_count() is 0. */
#include "dl_registry.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifndef DL_HAVE_CUDA
#define DL_HAVE_CUDA 0
#endif

#if DL_HAVE_CUDA
#define DL_LAUNCH(fn) fn
#else
#define DL_LAUNCH(fn) NULL
int dl_gpu_device_count(void)
{
    dl_fail("built without CUDA (make CUDA=0 or nvcc not found): no GPU variants can run");
    return 0;
}
int dl_gpu_sm_count(void) { return 0; }
#endif

/* Write the SKIP reason (printf format) and return 0 ("not supported"). */
static int skip(char *reason, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int skip(char *reason, size_t n, const char *fmt, ...)
{
    if (reason && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, n, fmt, ap);
        va_end(ap);
    }
    return 0;
}

static int is_fp8(dl_dtype t) { return t == DL_E4M3 || t == DL_E5M2; }

/* What every kernel of gpu/ handles; fast variants additionally need an FP8 cache. */
static int supports_common(const dl_variant *v, const dl_config *cfg, char *reason, size_t n)
{
    if (cfg->q_dtype != DL_F16 && cfg->q_dtype != DL_BF16)
        return skip(reason, n, "q is %s: the kernels take f16/bf16 Q only", dl_dtype_name(cfg->q_dtype));
    if (cfg->kv_dtype != DL_F16 && cfg->kv_dtype != DL_BF16 && !is_fp8(cfg->kv_dtype))
        return skip(reason, n, "kv is %s: the kernels take f16/bf16/e4m3/e5m2", dl_dtype_name(cfg->kv_dtype));
    if (v->dequant == DL_DEQUANT_FAST && !is_fp8(cfg->kv_dtype))
        return skip(reason, n, "kv is 16-bit: no FP8 dequant, same kernel as the cast variant");
    if (cfg->head_dim != 64 && cfg->head_dim != 128 && cfg->head_dim != 256)
        return skip(reason, n, "head_dim=%lld: kernels are built for 64, 128 and 256",
                    (long long)cfg->head_dim);
    if (cfg->num_kv_heads < 1 || cfg->num_qo_heads % cfg->num_kv_heads != 0)
        return skip(reason, n, "num_qo_heads=%lld is not a multiple of num_kv_heads",
                    (long long)cfg->num_qo_heads);
    const int64_t G = dl_group_size(cfg);
    if (G < 1 || G > 16)
        return skip(reason, n, "group size %lld: kernels take 1..16 (one 16-row MMA tile)", (long long)G);
    if (cfg->batch_size > 65535 || cfg->num_kv_heads > 65535)
        return skip(reason, n, "batch=%lld or num_kv_heads above the 65535 grid limit",
                    (long long)cfg->batch_size);
    if (cfg->page_size < 1 || cfg->page_size > DL_MAX_PAGE_SIZE)
        return skip(reason, n, "page_size=%lld outside 1..256", (long long)cfg->page_size);
    return 1;
}

/* FP8 compute (gpu/decode_fp8_mma.cu): the cache is the MMA operand as stored. */
static int supports_fp8_mma(const dl_variant *v, const dl_config *cfg, char *reason, size_t n)
{
    if (!supports_common(v, cfg, reason, n)) return 0;
    if (!is_fp8(cfg->kv_dtype))
        return skip(reason, n, "fp8 compute needs an fp8 KV cache (kv is %s)", dl_dtype_name(cfg->kv_dtype));
    return 1;
}

/* Model parameters the tensor-core kernels have built in (gpu/decode_mma.cu, decode_fp8_mma.cu):
 * a 64-token tile is the model's kv_block (the running max is updated per tile), P is quantized
 * as e4m3(p * S) with the file's S (dl_gpu_args.p_scale), and fp8acc promotes every 2 k32 blocks. The accumulator width
 * (acc_mantissa_bits, acc_block) is deliberately free: goldens that vary it are how the FP8
 * accumulator experiment (tests/gpu/fp8_accumulator.sh) asks which one the GPU has. */
static int params_tile64(const dl_variant *v, const dl_model_params *p, char *reason, size_t n)
{
    (void)v;
    if (p->kv_block != 64)
        return skip(reason, n, "kernel tile is 64 tokens: golden made with kv_block = %lld", (long long)p->kv_block);
    return 1;
}

/* fp8acc-none-wgmma: built for promotion every 1, 2 or 4 k32 blocks (dl_launch_fp8acc_none_wgmma) */
static int params_fp8wg(const dl_variant *v, const dl_model_params *p, char *reason, size_t n)
{
    if (!params_tile64(v, p, reason, n)) return 0;
    if (v->model == DL_MODEL_FP8ACCWG && p->acc_promote_blocks != 1 && p->acc_promote_blocks != 2 &&
        p->acc_promote_blocks != 4)
        return skip(reason, n, "kernel promotes every 1, 2 or 4 k32 blocks: golden made with acc_promote_blocks = %lld",
                    (long long)p->acc_promote_blocks);
    return 1;
}

static int params_fp8(const dl_variant *v, const dl_model_params *p, char *reason, size_t n)
{
    if (!params_tile64(v, p, reason, n)) return 0;
    if (v->model == DL_MODEL_FP8ACC && p->acc_promote_blocks != 2)
        return skip(reason, n, "kernel promotes every 2 k32 blocks: golden made with acc_promote_blocks = %lld",
                    (long long)p->acc_promote_blocks);
    return 1;
}

/* The streaming family (gpu/decode_stream.cu): a tile is whole pages or part of one page,
 * and TMA writes shared memory at 128-byte aligned addresses. */
static int supports_stream(const dl_variant *v, const dl_config *cfg, char *reason, size_t n)
{
    if (!supports_common(v, cfg, reason, n)) return 0;
    if (v->dequant == DL_DEQUANT_HW && !is_fp8(cfg->kv_dtype))
        return skip(reason, n, "kv is 16-bit: no FP8 dequant, same kernel as the cast variant");
    const int64_t ps = cfg->page_size;
    if (!(64 % ps == 0 || ps % 64 == 0))
        return skip(reason, n, "page_size=%lld: the bulk-copy tiles need a page size dividing 64 or a multiple of 64",
                    (long long)ps);
    if (ps == 1 && cfg->head_dim * dl_dtype_size(cfg->kv_dtype) < 128)
        return skip(reason, n, "page_size=1 with %lld-byte rows: a one-row TMA copy would land off the 128-byte "
                    "alignment the bulk-copy engine needs", (long long)(cfg->head_dim * dl_dtype_size(cfg->kv_dtype)));
    return 1;
}

/* The wgmma consumers of the streaming family (fp8-none-wgmma, fp8acc-none-wgmma, bf16-fast-wgmma):
 * FP8 caches, one n8 tile of heads, and the swizzled shared-memory layouts the warpgroup MMA reads
 * (TMA writes them for page_size >= 8). */
static int supports_wgmma(const dl_variant *v, const dl_config *cfg, char *reason, size_t n)
{
    if (v->compute == DL_COMPUTE_FP8 && !supports_fp8_mma(v, cfg, reason, n)) return 0;
    if (v->compute != DL_COMPUTE_FP8 && !is_fp8(cfg->kv_dtype))
        return skip(reason, n, "the bf16 wgmma kernel dequantizes FP8 codes in registers (kv is %s: a 16-bit cache "
                    "would need its own operand path)", dl_dtype_name(cfg->kv_dtype));
    if (!supports_stream(v, cfg, reason, n)) return 0;
    const int64_t G = cfg->num_qo_heads / cfg->num_kv_heads;
    if (G > 8) return skip(reason, n, "group=%lld: the wgmma kernel has one n8 tile of query heads (group <= 8)", (long long)G);
    if (cfg->page_size < 8)
        return skip(reason, n, "page_size=%lld: wgmma reads K from the 64/128-byte swizzled layout TMA writes for "
                    "page_size >= 8", (long long)cfg->page_size);
    return 1;
}

/* Hopper has no FP8 arithmetic outside the tensor cores: the cell exists only to say so. */
static int supports_fp8_simt(const dl_variant *v, const dl_config *cfg, char *reason, size_t n)
{
    (void)v;
    (void)cfg;
    return skip(reason, n, "no FP8 arithmetic on CUDA cores: Hopper has FP8 only in tensor-core MMA");
}

/* The table: one row per line of gpu/dl_variants.def. Without CUDA the launchers and the
 * plan functions are NULL (the rows stay: list, supports and SKIP reasons work). */
#define DL_LAUNCH_1(id) DL_LAUNCH(dl_launch_##id)
#define DL_LAUNCH_0(id) NULL
#define DL_PLAN(fn) DL_LAUNCH(fn)
#define DL_VARIANT(id, name, compute, dequant, unit, model, has_kernel, file, summary, supports, glob, params_ok, plan, \
                   splits)                                                                                             \
    {name, DL_COMPUTE_##compute, DL_DEQUANT_##dequant, DL_UNIT_##unit, DL_MODEL_##model, file, summary,                 \
     DL_LAUNCH_##has_kernel(id), supports, glob, params_ok, DL_PLAN(plan), splits},
const dl_variant dl_variants[] = {
#include "dl_variants.def"
};
#undef DL_VARIANT
const int dl_num_variants = (int)(sizeof dl_variants / sizeof dl_variants[0]);

int dl_variant_splits(const dl_variant *v, int resolved) { return v->splits && resolved > 1 ? resolved : 1; }

const dl_variant *dl_variant_find(const char *name)
{
    for (int i = 0; name && i < dl_num_variants; i++)
        if (strcmp(dl_variants[i].name, name) == 0) return &dl_variants[i];
    return NULL;
}

void dl_variant_models(const dl_config *cfg, const dl_model_params *p, int want[DL_MODEL_COUNT])
{
    for (int m = 0; m < DL_MODEL_COUNT; m++) want[m] = 0;
    for (int i = 0; i < dl_num_variants; i++) { /* no reason wanted: skip() writes none into NULL */
        const dl_variant *v = &dl_variants[i];
        if (v->supports(v, cfg, NULL, 0) && (!v->params_ok || v->params_ok(v, p, NULL, 0)))
            want[v->model] = 1;
    }
}

int dl_variant_matches(const dl_variant *v, const char *globs)
{
    if (!globs || !*globs) return 1;
    char pat[256];
    const char *p = globs;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len > 0 && len < sizeof pat) {
            memcpy(pat, p, len);
            pat[len] = '\0';
            if (fnmatch(pat, v->name, 0) == 0) return 1;
        }
        if (!comma) break;
        p = comma + 1;
    }
    return 0;
}

const char *dl_compute_name(dl_compute c)
{
    static const char *const names[] = {"fp32", "bf16", "fp8"};
    return (unsigned)c < 3 ? names[c] : "?";
}
const char *dl_dequant_name(dl_dequant d)
{
    static const char *const names[] = {"cast", "fast", "none", "hw"};
    return (unsigned)d < 4 ? names[d] : "?";
}
const char *dl_unit_name(dl_unit u)
{
    static const char *const names[] = {"simt", "mma", "wgmma", "stream"};
    return (unsigned)u < 4 ? names[u] : "?";
}

size_t dl_gpu_workspace_bytes(const dl_gpu_args *a)
{
    if (!a || a->num_splits <= 1) return 0;
    return (size_t)a->batch_size * a->num_qo_heads * a->num_splits * (a->head_dim + 1) * sizeof(float);
}

int dl_gpu_choose_splits(const dl_gpu_args *a, int num_sms)
{
    const long ctas = (long)a->batch_size * a->num_kv_heads;
    if (num_sms <= 0 || ctas <= 0 || ctas >= num_sms) return 1;
    long want = (2L * num_sms + ctas - 1) / ctas; /* about two CTAs per SM */
    long by_len = a->max_seq_len / 256;               /* chunks of >= 256 tokens */
    if (want > by_len) want = by_len;
    if (want > 64) want = 64;
    return want < 1 ? 1 : (int)want;
}

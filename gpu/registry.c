/* registry.c - the static table of GPU decode variants (one row each: name,
 * axes, launcher, golden model, kernel file, supports predicate), lookup and
 * glob selection, the split-KV heuristic and workspace size. Plain C: with
 * DL_HAVE_CUDA=0 the launchers are NULL and dl_gpu_device_count() says why. */
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
#endif

#define DL_H200_SMS 132

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
 * as e4m3(p * 448), and fp8acc promotes every 2 k32 blocks. The accumulator width
 * (acc_mantissa_bits, acc_block) is deliberately free: goldens that vary it are how the FP8
 * accumulator experiment (experiments/fp8_accumulator.sh) asks which one the GPU has. */
static int params_tile64(const dl_variant *v, const dl_model_params *p, char *reason, size_t n)
{
    (void)v;
    if (p->kv_block != 64)
        return skip(reason, n, "kernel tile is 64 tokens: golden made with kv_block = %lld", (long long)p->kv_block);
    return 1;
}

static int params_fp8(const dl_variant *v, const dl_model_params *p, char *reason, size_t n)
{
    if (!params_tile64(v, p, reason, n)) return 0;
    if (p->p_scale != 448.0f)
        return skip(reason, n, "kernel quantizes P as e4m3(p * 448): golden made with p_scale = %g", (double)p->p_scale);
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

/* Hopper has no FP8 arithmetic outside the tensor cores: the cell exists only to say so. */
static int supports_fp8_simt(const dl_variant *v, const dl_config *cfg, char *reason, size_t n)
{
    (void)v;
    (void)cfg;
    return skip(reason, n, "no FP8 arithmetic on CUDA cores: Hopper has FP8 only in tensor-core MMA");
}

#if DL_HAVE_CUDA
/* launchers of gpu/decode_fp8_mma.cu and gpu/decode_bf16_simt.cu */
int dl_launch_fp8_none_mma(const dl_gpu_args *a);
int dl_launch_fp8acc_none_mma(const dl_gpu_args *a);
int dl_launch_bf16_cast_simt(const dl_gpu_args *a);
int dl_launch_bf16_fast_simt(const dl_gpu_args *a);
#endif
#define DL_PLAN(fn) DL_LAUNCH(fn)

const dl_variant dl_variants[] = {
    {"fp32-cast-simt", DL_COMPUTE_FP32, DL_DEQUANT_CAST, DL_UNIT_SIMT, DL_MODEL_FP32, "decode_simt",
     "CUDA cores, FP32, each FP8 code cast on its own by every query head (the reference CUDA-core decode)",
     DL_LAUNCH(dl_launch_fp32_cast_simt), supports_common,
     "*::simt_decode_kernel<*, false>(*", NULL, NULL},
    {"fp32-fast-simt", DL_COMPUTE_FP32, DL_DEQUANT_FAST, DL_UNIT_SIMT, DL_MODEL_FP32, "decode_simt",
     "fp32-cast-simt with only the conversion replaced by the four-at-a-time bit-trick dequant",
     DL_LAUNCH(dl_launch_fp32_fast_simt), supports_common,
     "*::simt_decode_kernel<*, true>(*", NULL, NULL},
    {"bf16-cast-mma", DL_COMPUTE_BF16, DL_DEQUANT_CAST, DL_UNIT_MMA, DL_MODEL_BF16, "decode_mma",
     "tensor cores (mma.sync m16n8k16 bf16, FP32 acc), GQA heads as MMA rows, per-element FP8 cast",
     DL_LAUNCH(dl_launch_bf16_cast_mma), supports_common,
     "*::mma_decode_kernel<*, false>(*", params_tile64, NULL},
    {"bf16-fast-mma", DL_COMPUTE_BF16, DL_DEQUANT_FAST, DL_UNIT_MMA, DL_MODEL_BF16, "decode_mma",
     "bf16-cast-mma with the four-at-a-time bit-trick dequant (the reference tensor-core decode)",
     DL_LAUNCH(dl_launch_bf16_fast_mma), supports_common,
     "*::mma_decode_kernel<*, true>(*", params_tile64, NULL},
    {"fp8-none-mma", DL_COMPUTE_FP8, DL_DEQUANT_NONE, DL_UNIT_MMA, DL_MODEL_FP8, "decode_fp8_mma",
     "tensor cores in FP8 (mma.sync m16n8k32 e4m3, FP32 acc), Q to e4m3 per head, P to e4m3(p*448), no split-KV",
     DL_LAUNCH(dl_launch_fp8_none_mma), supports_fp8_mma,
     "*::fp8_mma_decode_kernel<*, 0>(*", params_fp8, NULL},
    {"fp8acc-none-mma", DL_COMPUTE_FP8, DL_DEQUANT_NONE, DL_UNIT_MMA, DL_MODEL_FP8ACC, "decode_fp8_mma",
     "fp8-none-mma with two-level accumulation: MMA partials promoted to FP32 every 2 k32 blocks",
     DL_LAUNCH(dl_launch_fp8acc_none_mma), supports_fp8_mma,
     "*::fp8_mma_decode_kernel<*, 2>(*", params_fp8, NULL},
    {"fp8-none-simt", DL_COMPUTE_FP8, DL_DEQUANT_NONE, DL_UNIT_SIMT, DL_MODEL_FP8, NULL,
     "does not exist: Hopper CUDA cores have no FP8 arithmetic (always SKIP)",
     NULL, supports_fp8_simt, NULL, NULL, NULL},
    {"bf16-cast-simt", DL_COMPUTE_BF16, DL_DEQUANT_CAST, DL_UNIT_SIMT, DL_MODEL_BF16SIMT, "decode_bf16_simt",
     "CUDA cores, q.k by packed bf16x2 FMA over 8-dim runs, FP32 reduction/softmax/P*V, per-element FP8 cast",
     DL_LAUNCH(dl_launch_bf16_cast_simt), supports_common,
     "*::bf16_simt_decode_kernel<*, false>(*", NULL, NULL},
    {"bf16-fast-simt", DL_COMPUTE_BF16, DL_DEQUANT_FAST, DL_UNIT_SIMT, DL_MODEL_BF16SIMT, "decode_bf16_simt",
     "bf16-cast-simt with the four-at-a-time fp8->bf16 bit trick",
     DL_LAUNCH(dl_launch_bf16_fast_simt), supports_common,
     "*::bf16_simt_decode_kernel<*, true>(*", NULL, NULL},
    {"bf16-cast-stream", DL_COMPUTE_BF16, DL_DEQUANT_CAST, DL_UNIT_STREAM, DL_MODEL_BF16, "decode_stream",
     "tensor cores (mma.sync bf16), tokens as M and heads as N, TMA producer warp, balanced plan, per-element FP8 cast",
     DL_LAUNCH(dl_launch_bf16_cast_stream), supports_stream,
     "*::stream_decode_kernel<*, 0, *>(*", params_tile64, DL_PLAN(dl_stream_make_plan)},
    {"bf16-fast-stream", DL_COMPUTE_BF16, DL_DEQUANT_FAST, DL_UNIT_STREAM, DL_MODEL_BF16, "decode_stream",
     "bf16-cast-stream with the four-at-a-time fp8->bf16 bit trick",
     DL_LAUNCH(dl_launch_bf16_fast_stream), supports_stream,
     "*::stream_decode_kernel<*, 1, *>(*", params_tile64, DL_PLAN(dl_stream_make_plan)},
    {"bf16-hw-stream", DL_COMPUTE_BF16, DL_DEQUANT_HW, DL_UNIT_STREAM, DL_MODEL_BF16, "decode_stream",
     "bf16-cast-stream with the packed hardware conversion (cvt.rn.f16x2.e4m3x2) and f16 MMAs (exact K/V, bf16-rounded Q, P)",
     DL_LAUNCH(dl_launch_bf16_hw_stream), supports_stream,
     "*::stream_decode_kernel<*, 2, *>(*", params_tile64, DL_PLAN(dl_stream_make_plan)},
};
const int dl_num_variants = (int)(sizeof dl_variants / sizeof dl_variants[0]);

const dl_variant *dl_variant_find(const char *name)
{
    for (int i = 0; name && i < dl_num_variants; i++)
        if (strcmp(dl_variants[i].name, name) == 0) return &dl_variants[i];
    return NULL;
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

int dl_gpu_choose_splits(const dl_gpu_args *a)
{
    const long ctas = (long)a->batch_size * a->num_kv_heads;
    if (ctas <= 0 || ctas >= DL_H200_SMS) return 1;
    long want = (2L * DL_H200_SMS + ctas - 1) / ctas; /* about two CTAs per SM */
    long by_len = a->max_seq_len / 256;               /* chunks of >= 256 tokens */
    if (want > by_len) want = by_len;
    if (want > 64) want = 64;
    return want < 1 ? 1 : (int)want;
}

/* gpu_kernel_check.cu - standalone GPU check of the decode kernels of gpu/
 * against the CPU reference models (ref/), without HDF5 or Check, so that it
 * builds on the lent GPU machine with nvcc alone (see the build line below).
 *
 * 1. Correctness: a matrix of small nasty cases built fresh with dl_case_build
 *    (ragged lengths incl. 1 and page boundaries +-1 and tile boundaries, page
 *    sizes 1/3/16, groups 1/4/5/7/8, D 64/128/256, NHD/HND, every KV dtype, Q
 *    f16/bf16), each run unsplit and split into 3 chunks. Output poisoned with
 *    NaN first; every element must be written; o is scored by relative L2 and
 *    lse by max abs error against the variant's own model (fp32 or bf16) and
 *    against exact. Prints one row per (case, variant, splits).
 * 2. Timing (--time): the issue's three configurations, median of 20 launches
 *    with CUDA events, L2 flushed (2x L2 bytes written) before each launch, and
 *    a read-bandwidth calibration kernel.
 *
 * Build (on the GPU machine; cblas is only needed by the exact model, a naive
 * dgemm below stands in when OpenBLAS is absent):
 *   gcc -std=c11 -O2 -D_DEFAULT_SOURCE -I<dir with cblas.h> -c ref/*.c
 *   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DDL_HAVE_CUDA=1 \
 *        tests/gpu_kernel_check.cu gpu/*.cu gpu/registry.c(as obj) ref objs -o check */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>

#include "../gpu/dl_registry.h"
#include "../ref/dl_paged.h"
#include "../ref/dl_ref.h"

#define CK(call)                                                                                        \
    do {                                                                                                \
        cudaError_t e_ = (call);                                                                        \
        if (e_ != cudaSuccess) {                                                                        \
            fprintf(stderr, "%s failed: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__, __LINE__); \
            exit(2);                                                                                    \
        }                                                                                               \
    } while (0)

#ifdef DL_NAIVE_BLAS
/* Naive stand-ins for the three OpenBLAS entry points ref/dl_ref.c uses. */
extern "C" {
int openblas_get_num_threads(void) { return 1; }
void openblas_set_num_threads(int n) { (void)n; }
void cblas_dgemm(int order, int ta, int tb, int M, int N, int K, double alpha, const double *A, int lda,
                 const double *B, int ldb, double beta, double *C, int ldc)
{
    (void)order; /* row-major only */
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k = 0; k < K; k++) {
                double a = ta == 112 ? A[k * lda + i] : A[i * lda + k];
                double b = tb == 112 ? B[j * ldb + k] : B[k * ldb + j];
                s += a * b;
            }
            C[i * ldc + j] = alpha * s + (beta == 0.0 ? 0.0 : beta * C[i * ldc + j]);
        }
}
}
#endif

struct dev_case {
    void *q, *k, *v;
    float *ks, *vs;
    int32_t *indptr, *indices, *last;
    float *o, *lse;
    void *ws;
    size_t ws_bytes;
};

static size_t q_bytes(const dl_config *c) { return (size_t)(c->batch_size * c->num_qo_heads * c->head_dim) * 2; }

static void upload(const dl_case *cs, dev_case *d)
{
    const dl_config *c = &cs->cfg;
    size_t cache = (size_t)dl_case_cache_elems(cs) * dl_dtype_size(c->kv_dtype);
    size_t nout = (size_t)(c->batch_size * c->num_qo_heads);
    CK(cudaMalloc(&d->q, q_bytes(c)));
    CK(cudaMalloc(&d->k, cache));
    CK(cudaMalloc(&d->v, cache));
    CK(cudaMalloc(&d->ks, c->num_kv_heads * 4));
    CK(cudaMalloc(&d->vs, c->num_kv_heads * 4));
    CK(cudaMalloc(&d->indptr, (c->batch_size + 1) * 4));
    CK(cudaMalloc(&d->indices, cs->num_pages * 4 + 4));
    CK(cudaMalloc(&d->last, c->batch_size * 4));
    CK(cudaMalloc(&d->o, nout * c->head_dim * 4));
    CK(cudaMalloc(&d->lse, nout * 4));
    CK(cudaMemcpy(d->q, cs->q, q_bytes(c), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->k, cs->k_cache, cache, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->v, cs->v_cache, cache, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->ks, cs->k_scale, c->num_kv_heads * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->vs, cs->v_scale, c->num_kv_heads * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->indptr, cs->kv_indptr, (c->batch_size + 1) * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->indices, cs->kv_indices, cs->kv_indptr[c->batch_size] * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->last, cs->kv_last_page_len, c->batch_size * 4, cudaMemcpyHostToDevice));
    d->ws = NULL;
    d->ws_bytes = 0;
}

static void free_dev(dev_case *d)
{
    cudaFree(d->q); cudaFree(d->k); cudaFree(d->v); cudaFree(d->ks); cudaFree(d->vs);
    cudaFree(d->indptr); cudaFree(d->indices); cudaFree(d->last); cudaFree(d->o); cudaFree(d->lse);
    if (d->ws) cudaFree(d->ws);
}

static dl_gpu_args make_args(const dl_case *cs, dev_case *d, int splits)
{
    const dl_config *c = &cs->cfg;
    dl_gpu_args a;
    memset(&a, 0, sizeof a);
    a.batch_size = (int)c->batch_size; a.num_qo_heads = (int)c->num_qo_heads; a.num_kv_heads = (int)c->num_kv_heads;
    a.head_dim = (int)c->head_dim; a.page_size = (int)c->page_size; a.kv_layout = c->kv_layout;
    a.q_dtype = c->q_dtype; a.kv_dtype = c->kv_dtype; a.sm_scale = (float)dl_sm_scale(c);
    a.num_pages = cs->num_pages; a.q = d->q; a.k_cache = d->k; a.v_cache = d->v; a.k_scale = d->ks; a.v_scale = d->vs;
    a.kv_indptr = d->indptr; a.kv_indices = d->indices; a.kv_last_page_len = d->last;
    int mx = 0;
    for (int64_t b = 0; b < c->batch_size; b++) mx = std::max(mx, (int)dl_case_seq_len(cs, b));
    a.max_seq_len = mx; a.o = d->o; a.lse = d->lse; a.num_splits = splits; a.stream = 0;
    size_t need = dl_gpu_workspace_bytes(&a);
    if (need > d->ws_bytes) {
        if (d->ws) cudaFree(d->ws);
        CK(cudaMalloc(&d->ws, need));
        d->ws_bytes = need;
    }
    a.workspace = d->ws;
    return a;
}

struct metrics { long nan; double rel_l2, lse_abs; };

static metrics score(const float *o, const float *lse, const dl_output *ref, int64_t n_o, int64_t n_l)
{
    metrics m = {0, 0.0, 0.0};
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n_o; i++) {
        if (!isfinite(o[i])) { m.nan++; continue; }
        double e = (double)o[i] - ref->o[i];
        num += e * e;
        den += ref->o[i] * ref->o[i];
    }
    for (int64_t i = 0; i < n_l; i++) {
        if (!isfinite(lse[i])) { m.nan++; continue; }
        m.lse_abs = std::max(m.lse_abs, fabs((double)lse[i] - ref->lse[i]));
    }
    m.rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
    return m;
}

static int run_matrix(bool small)
{
    const dl_dtype kvs[] = {DL_F16, DL_BF16, DL_E4M3, DL_E5M2};
    const int dims[] = {64, 128, 256};
    struct combo { int G; dl_layout lay; int ps; };
    const combo combos[] = {{1, DL_NHD, 1}, {4, DL_HND, 16}, {5, DL_NHD, 16}, {8, DL_HND, 1}, {7, DL_NHD, 3}};
    int fails = 0, passes = 0, skips = 0, rows = 0;
    double worst_fp32 = 0, worst_bf16 = 0, worst_bf16_split = 0;
    printf("%-70s %-15s %2s %8s %10s %10s %10s %s\n", "case", "variant", "S", "unwrit", "relL2_mdl", "lse_mdl",
           "relL2_exact", "verdict");
    int ci = 0;
    for (dl_dtype kv : kvs)
        for (int D : dims)
            for (const combo &cb : combos) {
                ci++;
                if (small && (ci % 4) != 1) continue;
                dl_config cfg;
                dl_config_default(&cfg);
                cfg.num_kv_heads = 2; cfg.num_qo_heads = 2 * cb.G; cfg.head_dim = D; cfg.page_size = cb.ps;
                cfg.kv_layout = cb.lay; cfg.kv_dtype = kv; cfg.q_dtype = (ci % 2) ? DL_BF16 : DL_F16;
                cfg.seed = 1000 + ci;
                const int64_t P = cb.ps;
                int64_t lens[] = {1, P > 1 ? P - 1 : 2, P, P + 1, 64, 65, 127, 129, 300, 2 * P + 1};
                cfg.batch_size = 10; cfg.num_explicit_lens = 10;
                for (int i = 0; i < 10; i++) cfg.explicit_lens[i] = lens[i];
                cfg.seq_len_min = 1; cfg.seq_len_max = 300;
                if (dl_config_validate(&cfg) != 0) { printf("config invalid: %s\n", dl_last_error()); return 1; }
                dl_case cs;
                if (dl_case_build(&cfg, &cs) != 0) { printf("case build: %s\n", dl_last_error()); return 1; }
                dl_output ref32, ref16, refx;
                if (dl_reference(&cs, DL_MODEL_FP32, NULL, &ref32) || dl_reference(&cs, DL_MODEL_BF16, NULL, &ref16) ||
                    dl_reference(&cs, DL_MODEL_EXACT, NULL, &refx)) {
                    printf("reference: %s\n", dl_last_error());
                    return 1;
                }
                dev_case d;
                upload(&cs, &d);
                char name[256];
                dl_config_name(&cfg, name, sizeof name);
                const int64_t n_l = cfg.batch_size * cfg.num_qo_heads, n_o = n_l * D;
                std::vector<float> o(n_o), l(n_l);
                for (int vi = 0; vi < dl_num_variants; vi++) {
                    const dl_variant *v = &dl_variants[vi];
                    char reason[256] = "";
                    if (!v->supports(v, &cfg, reason, sizeof reason)) {
                        printf("%-70.70s %-15s    SKIP: %s\n", name, v->name, reason);
                        skips++;
                        continue;
                    }
                    for (int splits : {1, 3}) {
                        dl_gpu_args a = make_args(&cs, &d, splits);
                        CK(cudaMemset(d.o, 0xFF, n_o * 4));
                        CK(cudaMemset(d.lse, 0xFF, n_l * 4));
                        if (v->launch(&a) != 0) { printf("launch failed: %s\n", dl_last_error()); return 1; }
                        CK(cudaDeviceSynchronize());
                        CK(cudaMemcpy(o.data(), d.o, n_o * 4, cudaMemcpyDeviceToHost));
                        CK(cudaMemcpy(l.data(), d.lse, n_l * 4, cudaMemcpyDeviceToHost));
                        const dl_output *mr = v->model == DL_MODEL_FP32 ? &ref32 : &ref16;
                        metrics mm = score(o.data(), l.data(), mr, n_o, n_l);
                        metrics mx = score(o.data(), l.data(), &refx, n_o, n_l);
                        double tol = v->model == DL_MODEL_FP32 ? 1e-5 : (splits == 1 ? 2e-4 : 2e-3);
                        bool ok = mm.nan == 0 && mm.rel_l2 <= tol && mm.lse_abs <= 1e-3;
                        if (v->model == DL_MODEL_FP32) worst_fp32 = std::max(worst_fp32, mm.rel_l2);
                        else if (splits == 1) worst_bf16 = std::max(worst_bf16, mm.rel_l2);
                        else worst_bf16_split = std::max(worst_bf16_split, mm.rel_l2);
                        printf("%-70.70s %-15s %2d %8ld %10.2e %10.2e %10.2e %s\n", name, v->name, splits, mm.nan,
                               mm.rel_l2, mm.lse_abs, mx.rel_l2, ok ? "PASS" : "FAIL");
                        rows++;
                        if (ok) passes++; else fails++;
                    }
                }
                free_dev(&d);
                dl_output_free(&ref32); dl_output_free(&ref16); dl_output_free(&refx);
                dl_case_free(&cs);
            }
    printf("\nmatrix: %d rows, %d PASS, %d FAIL, %d SKIP; worst relL2 vs model: fp32 %.2e, bf16 unsplit %.2e, "
           "bf16 split %.2e\n", rows, passes, fails, skips, worst_fp32, worst_bf16, worst_bf16_split);
    return fails ? 1 : 0;
}

/* ------------------------------------------------------------------ timing */

__global__ void fill_kernel(uint32_t *p, size_t nwords, uint32_t seed, int kind)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nwords; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t x = (uint32_t)i * 2654435761u ^ seed;
        x ^= x >> 15; x *= 0x2c1b3c6du; x ^= x >> 12;
        if (kind == 0) p[i] = x & 0xBFBFBFBFu & 0xF7F7F7F7u; /* fp8 bytes, exponent kept low: finite */
        else p[i] = (x & 0x80008000u) | 0x3C003C00u | (x & 0x007F007Fu) ; /* bf16 in [1,2) +-, finite */
    }
}

__global__ void read_kernel(const uint4 *p, size_t n, uint32_t *out)
{
    uint32_t acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = __ldcs(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) *out = acc;
}

static double median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static int run_timing(int only)
{
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    size_t flush_bytes = (size_t)prop.l2CacheSize * 2;
    void *flush;
    CK(cudaMalloc(&flush, flush_bytes));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));

    /* read-bandwidth calibration: 4 GiB streamed */
    size_t nb = (size_t)4 << 30;
    void *big;
    uint32_t *sink;
    CK(cudaMalloc(&big, nb)); CK(cudaMalloc(&sink, 4));
    CK(cudaMemset(big, 1, nb));
    std::vector<float> ts;
    for (int i = 0; i < 10; i++) {
        CK(cudaEventRecord(e0));
        read_kernel<<<prop.multiProcessorCount * 8, 512>>>((const uint4 *)big, nb / 16, sink);
        CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ts.push_back(ms);
    }
    const double peak = nb / (median(ts) * 1e-3) / 1e9;
    printf("\n%s, %d SMs, L2 %d MB: read bandwidth %.0f GB/s (median of 10 x 4 GiB)\n", prop.name,
           prop.multiProcessorCount, prop.l2CacheSize >> 20, peak);
    CK(cudaFree(big));

    struct tc { const char *name; int hq, hkv; dl_dtype kv; double ref_us; };
    const tc cfgs[] = {{"llama3-8B e4m3 (32/8)", 32, 8, DL_E4M3, 77}, {"llama3-8B bf16 (32/8)", 32, 8, DL_BF16, 83},
                       {"llama-13B bf16 (40/40)", 40, 40, DL_BF16, 319}};
    const int B = 64, L = 1024, D = 128, PS = 16;
    printf("%-24s %-15s %9s %9s %9s %7s %s\n", "config (B64 L1024 D128)", "variant", "median_us", "min_us", "GB/s",
           "%peak", "bar_us");
    for (int ti = 0; ti < 3; ti++) {
        const tc &t = cfgs[ti];
        if (only >= 0 && ti != only) continue;
        const int pages_per = L / PS, P = B * pages_per;
        const size_t es = dl_dtype_size(t.kv);
        const size_t cache = (size_t)P * PS * t.hkv * D * es;
        void *k, *v, *q; float *ks, *vs, *o, *lse; int32_t *ip, *ix, *lp;
        CK(cudaMalloc(&k, cache)); CK(cudaMalloc(&v, cache)); CK(cudaMalloc(&q, (size_t)B * t.hq * D * 2));
        CK(cudaMalloc(&ks, t.hkv * 4)); CK(cudaMalloc(&vs, t.hkv * 4));
        CK(cudaMalloc(&o, (size_t)B * t.hq * D * 4)); CK(cudaMalloc(&lse, (size_t)B * t.hq * 4));
        CK(cudaMalloc(&ip, (B + 1) * 4)); CK(cudaMalloc(&ix, P * 4)); CK(cudaMalloc(&lp, B * 4));
        fill_kernel<<<1024, 256>>>((uint32_t *)k, cache / 4, 1, es == 1 ? 0 : 1);
        fill_kernel<<<1024, 256>>>((uint32_t *)v, cache / 4, 2, es == 1 ? 0 : 1);
        fill_kernel<<<256, 256>>>((uint32_t *)q, (size_t)B * t.hq * D / 2, 3, 1);
        std::vector<float> sc(t.hkv, es == 1 ? 0.01f : 1.0f);
        CK(cudaMemcpy(ks, sc.data(), t.hkv * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(vs, sc.data(), t.hkv * 4, cudaMemcpyHostToDevice));
        std::vector<int32_t> hip(B + 1), hix(P), hlp(B, PS);
        for (int b = 0; b <= B; b++) hip[b] = b * pages_per;
        for (int i = 0; i < P; i++) hix[i] = i;
        srand(7);
        for (int i = P - 1; i > 0; i--) std::swap(hix[i], hix[rand() % (i + 1)]);
        CK(cudaMemcpy(ip, hip.data(), (B + 1) * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(ix, hix.data(), P * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(lp, hlp.data(), B * 4, cudaMemcpyHostToDevice));
        dl_gpu_args a;
        memset(&a, 0, sizeof a);
        a.batch_size = B; a.num_qo_heads = t.hq; a.num_kv_heads = t.hkv; a.head_dim = D; a.page_size = PS;
        a.kv_layout = DL_NHD; a.q_dtype = DL_BF16; a.kv_dtype = t.kv; a.sm_scale = 1.0f / sqrtf((float)D);
        a.num_pages = P; a.q = q; a.k_cache = k; a.v_cache = v; a.k_scale = ks; a.v_scale = vs;
        a.kv_indptr = ip; a.kv_indices = ix; a.kv_last_page_len = lp; a.max_seq_len = L; a.o = o; a.lse = lse;
        a.num_splits = dl_gpu_choose_splits(&a);
        const double bytes = 2.0 * cache + (double)B * t.hq * D * 2 + (double)B * t.hq * (D + 1) * 4;
        dl_config cfg;
        dl_config_default(&cfg);
        cfg.batch_size = B; cfg.num_qo_heads = t.hq; cfg.num_kv_heads = t.hkv; cfg.kv_dtype = t.kv;
        std::vector<float> first;
        for (int vi = 0; vi < dl_num_variants; vi++) {
            const dl_variant *var = &dl_variants[vi];
            char reason[256];
            if (!var->supports(var, &cfg, reason, sizeof reason)) {
                printf("%-24s %-15s SKIP: %s\n", t.name, var->name, reason);
                continue;
            }
          const int chosen = dl_gpu_choose_splits(&a);
          for (int splits : {chosen, 2 * chosen}) {
            a.num_splits = splits;
            void *ws = NULL;
            if (dl_gpu_workspace_bytes(&a)) CK(cudaMalloc(&ws, dl_gpu_workspace_bytes(&a)));
            a.workspace = ws;
            if (var->launch(&a) != 0) { printf("launch: %s\n", dl_last_error()); return 1; }
            CK(cudaDeviceSynchronize());
            std::vector<float> s;
            for (int i = 0; i < 20; i++) {
                CK(cudaMemsetAsync(flush, i, flush_bytes));
                CK(cudaEventRecord(e0));
                var->launch(&a);
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); s.push_back(ms * 1000.0f);
            }
            CK(cudaGetLastError());
            /* cross-check: outputs of the variants agree (fp32 vs bf16 arithmetic) */
            std::vector<float> out((size_t)B * t.hq * D);
            CK(cudaMemcpy(out.data(), o, out.size() * 4, cudaMemcpyDeviceToHost));
            double num = 0, den = 0;
            long bad = 0;
            for (size_t i = 0; i < out.size(); i++) {
                if (!isfinite(out[i])) bad++;
                if (!first.empty()) { double e = out[i] - first[i]; num += e * e; den += (double)first[i] * first[i]; }
            }
            if (first.empty()) first = out;
            const double med = median(s), mn = *std::min_element(s.begin(), s.end());
            printf("%-24s %-15s %9.1f %9.1f %9.0f %6.1f%% %6.0f  (splits %d, nonfinite %ld, relL2 vs first %.1e)\n",
                   t.name, var->name, med, mn, bytes / (med * 1e-6) / 1e9, 100.0 * bytes / (med * 1e-6) / 1e9 / peak,
                   t.ref_us, a.num_splits, bad, den > 0 ? sqrt(num / den) : 0.0);
            if (ws) cudaFree(ws);
          }
        }
        cudaFree(k); cudaFree(v); cudaFree(q); cudaFree(ks); cudaFree(vs); cudaFree(o); cudaFree(lse);
        cudaFree(ip); cudaFree(ix); cudaFree(lp);
    }
    cudaFree(flush);
    return 0;
}

int main(int argc, char **argv)
{
    bool do_time = false, small = false, no_matrix = false;
    int only = -1; /* --only N: time configuration N only (0 8B e4m3, 1 8B bf16, 2 13B bf16) */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--only") && i + 1 < argc) only = atoi(argv[++i]);
        if (!strcmp(argv[i], "--time")) do_time = true;
        else if (!strcmp(argv[i], "--small")) small = true;
        else if (!strcmp(argv[i], "--no-matrix")) no_matrix = true;
    }
    if (dl_gpu_device_count() < 1) { printf("no GPU: %s\n", dl_last_error()); return 2; }
    int rc = no_matrix ? 0 : run_matrix(small);
    if (do_time) rc |= run_timing(only);
    return rc;
}

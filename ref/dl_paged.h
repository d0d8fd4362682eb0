/* dl_paged.h - a decode-attention case in memory: Q, a paged KV cache in CSR
 * form (FlashInfer's kv_indptr / kv_indices / kv_last_page_len), per-KV-head
 * scales, and the original values before storage rounding.
 *
 * Storage: every tensor holds its raw encoding - float for f32, uint16 bit
 * patterns for f16/bf16, uint8 codes for e4m3/e5m2. real = decode(code)*scale.
 * Layouts: NHD [pages, page_size, Hkv, D], HND [pages, Hkv, page_size, D].
 * Unused slots of each last page hold poison (the format's NaN). */
#ifndef DL_PAGED_H
#define DL_PAGED_H

#include "dl_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    dl_config cfg;
    int64_t num_pages;          /* rows of k_cache / v_cache (= kv_indptr[B] - (B-1) * share_prefix_pages
                                 * for a built case; any count for a file) */
    void *q;                    /* [B, Hq, D], encoding cfg.q_dtype */
    void *k_cache, *v_cache;    /* [P, ...], encoding cfg.kv_dtype */
    float *k_scale, *v_scale;   /* [Hkv] */
    int32_t *kv_indptr;         /* [B+1] */
    int32_t *kv_indices;        /* [kv_indptr[B]] */
    int32_t *kv_last_page_len;  /* [B] */
    float *q_orig;              /* [B, Hq, D] values before rounding to q_dtype (NULL if unknown) */
    float *k_orig, *v_orig;     /* same shape as caches, before quantization (NULL if unknown) */
} dl_case;

/* Build a case from cfg with the counter-based RNG: lengths, scattered page
 * permutation, Q/K/V drawn from cfg->dist, quantization with scales, poison in
 * unused slots. Deterministic in cfg alone. Caller owns *out (dl_case_free). */
int dl_case_build(const dl_config *cfg, dl_case *out);
void dl_case_free(dl_case *c);
/* Frees the originals (q_orig, k_orig, v_orig: only the orig model reads them) and sets them NULL. */
void dl_case_drop_originals(dl_case *c);

/* Sequence length of request b. */
int64_t dl_case_seq_len(const dl_case *c, int64_t b);
/* The longest request's length (0 for an empty batch). */
int64_t dl_case_max_seq_len(const dl_case *c);
/* Element offset of (physical page, slot, kv head, d=0) in k_cache / v_cache. */
int64_t dl_kv_offset(const dl_config *cfg, int64_t page, int64_t slot, int64_t head);
/* Element offset of token t of request b, kv head h, d=0 (walks the page table). */
int64_t dl_case_token_offset(const dl_case *c, int64_t b, int64_t t, int64_t head);
/* Number of elements in one cache tensor: num_pages * page_size * Hkv * D. */
int64_t dl_case_cache_elems(const dl_case *c);

/* Decoded values (no scale): q element i, cache element i. */
float dl_case_q(const dl_case *c, int64_t i);
float dl_case_k_code(const dl_case *c, int64_t i);
float dl_case_v_code(const dl_case *c, int64_t i);
/* Decode one raw stored element of dtype t at index i of buffer p. */
float dl_decode_elem(dl_dtype t, const void *p, int64_t i);
/* Encode x to dtype t (RNE, satfinite: overflow clamps to the format's max
 * finite, for f16/bf16 too; NaN stays NaN) into buffer p at index i. */
void dl_encode_elem(dl_dtype t, void *p, int64_t i, float x);
/* Largest finite value of dtype t (448 for e4m3, 57344 for e5m2, 65504 for f16...). */
double dl_dtype_max_finite(dl_dtype t);

/* ---- how dl_case_build draws values (the contract GPU-side generators follow) ----
 * Each element has a counter fixed by its LOGICAL position, never by layout,
 * page size or permutation:
 *   Q  (stream DL_STREAM_Q):               e = (b << 20) | (h << 10) | d
 *   K, V (streams DL_STREAM_K / _V):       e = (b << 40) | (t << 20) | (h << 10) | d
 * Elements 2k and 2k+1 (lane l = e & 1; d and d+1 of one row when d is even)
 * form pair k = e >> 1, which owns the raw counters 8k..8k+7 of its stream:
 *   normal          mean + std * dl_rng_normal2(seed, s, 4k)[l]        (uniforms 8k, 8k+1)
 *   uniform         lo + (hi-lo) * dl_rng_uniform(seed, s, 8k+4+l)
 *   outlier         dl_rng_normal2(4k)[l] + sqrt(outlier_var) * dl_rng_normal2(4k+1)[l]
 *                   * [dl_rng_uniform(8k+4+l) < outlier_prob]          (uniforms 8k..8k+5)
 *   channel-outlier dl_rng_normal2(4k)[l]; for K, times channel_scale on the channels of
 *                   dl_outlier_channels (same for every head and token)
 *   sink            as normal; then K of the first sink_tokens tokens of each request gets the
 *                   minimum-norm shift w with sm_scale * q_h . w = sink_delta for every query head
 *                   h of its KV head's group (q as stored), added before scales and quantization
 * The double result is rounded to float for q_orig / k_orig / v_orig.
 * Sequence lengths: seq_len_min + dl_rng_below(seed, DL_STREAM_LENS, b, max-min+1).
 * kv_indices: Fisher-Yates on 0..P-1, for i = P-1 down to 1 swap i with
 * dl_rng_below(seed, DL_STREAM_PAGES, i, i+1); the permuted pages are handed out in
 * page-table order. With cfg->share_prefix_pages = N > 0, entries 0..N-1 of every request
 * b > 0 are request 0's first N pages (not drawn: P = kv_indptr[B] - (B-1) N), so the
 * tokens t < N * page_size of every request hold request 0's values (counters of b = 0).
 * Scales (fp8 kv): absmax over the head (or tensor) / format max, 1 for an
 * all-zero head; f16/bf16: 1; DL_SCALE_GIVEN: kv_scale_value for every head. */
uint64_t dl_q_counter(int64_t b, int64_t h, int64_t d);
uint64_t dl_kv_counter(int64_t b, int64_t t, int64_t h, int64_t d);
/* The draws of distribution dp for elements 2k and 2k+1 of a stream (no channel scaling). */
void dl_dist_draw2(const dl_dist_params *dp, uint64_t seed, uint64_t stream, uint64_t k, double out[2]);
/* One element: dl_dist_draw2(e >> 1)[e & 1]. */
double dl_dist_draw(const dl_dist_params *dp, uint64_t seed, uint64_t stream, uint64_t e);
/* The cfg->dist.num_outlier_channels distinct head_dim channels of K that the
 * channel-outlier distribution scales (partial Fisher-Yates on DL_STREAM_CHANNELS:
 * position i takes i + dl_rng_below(seed, CHANNELS, i, D-i)). channels has room for that many. */
int dl_outlier_channels(const dl_config *cfg, int64_t *channels);

/* Check the page table and shapes of a case (for files read from disk):
 * indptr starts at 0, is non-decreasing, every request has >= 1 page, every
 * index in [0, num_pages), last_page_len in 1..page_size, no page twice in one request (pages
 * shared between requests - prefix caching - are allowed). Records the field. */
int dl_case_validate(const dl_case *c, const char *source);
/* Check that the page table of a (validated) case is what cfg.share_prefix_pages = N says:
 * the first N entries of every request are request 0's first N pages, and every request has
 * at least N full pages. Records the field. */
int dl_case_check_share(const dl_case *c, const char *source);
/* Check the values of a (validated) case: scales finite and > 0, q finite, every
 * used slot of k/v_cache (and k/v_orig when present) finite. Poison in the unused
 * slots is expected and not looked at. Records the dataset and element. */
int dl_case_check_values(const dl_case *c, const char *source);

#ifdef __cplusplus
}
#endif
#endif

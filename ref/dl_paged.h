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
    int64_t num_pages;          /* rows of k_cache / v_cache (= kv_indptr[B]) */
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

/* Sequence length of request b. */
int64_t dl_case_seq_len(const dl_case *c, int64_t b);
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
/* Encode x to dtype t (satfinite for fp8, RNE) into buffer p at index i. */
void dl_encode_elem(dl_dtype t, void *p, int64_t i, float x);

/* Check the page table and shapes of a case (for files read from disk):
 * indptr starts at 0, is non-decreasing, every request has >= 1 page, every
 * index in [0, num_pages), last_page_len in 1..page_size. Records the field. */
int dl_case_validate(const dl_case *c, const char *source);

#ifdef __cplusplus
}
#endif
#endif

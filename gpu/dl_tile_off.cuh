/* dl_tile_off.cuh - byte offsets in the streaming kernels' swizzled shared-memory tiles (decode_stream.cu) and their
 * wgmma descriptors, for host and device: tests/nv_tile_off_check.cu checks on the host, for every row, chunk, lane,
 * swizzle and shared address, the identities that the kernels' address arithmetic relies on (issue 10, attempts
 * #49-#51). */
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define DL_TILE_HD __host__ __device__ __forceinline__
#else
#define DL_TILE_HD inline
#endif
/* the device pass unrolls; the host compiler (gcc -Wall) would warn of an unknown pragma */
#ifdef __CUDA_ARCH__
#define DL_TILE_UNROLL _Pragma("unroll")
#else
#define DL_TILE_UNROLL
#endif

constexpr int kTile = 64; /* tokens a tile (the bf16 model's kv_block) */

/* Byte offset of logical 16-byte chunk ch of row r in a swizzled tile (see decode_stream.cu's stream_shape): rows of
 * SW bytes, slabs of kTile rows for rows wider than SW. swz: 0 none, 1 the 64-byte TMA swizzle, 2 the 128-byte one. */
template <int SW> DL_TILE_HD int tile_off(int r, int ch, int swz)
{
    constexpr int CPS = SW / 16;
    const int slab = ch / CPS, c = ch % CPS;
    /* the 16-byte chunk's XOR: 128-byte swizzle (swz 2) r & 7, 64-byte (swz 1) (r >> 1) & 3 = (r & 6) >> 1, none 0;
     * as a mask and a shift, so that ptxas selects instead of branching three ways at every use (attempt #43) */
    const int xm = swz == 2 ? 7 : (swz == 1 ? 6 : 0), xs = swz == 1;
    const int x = (r & xm) >> xs;
    return slab * (kTile * SW) + r * SW + ((c ^ x) << 4);
}
/* Every swizzle's XOR above reads only a row's low three bits, so tile_off(r0 + r, ch) = tile_off(r, ch) + r0 * SW
 * for r0 a multiple of 8: a lane computes its offsets once for its rows under 8 (or 16) and each m-tile, k-step or
 * stage adds a constant, which the shared-memory loads take as an immediate (attempt #49). Before, ptxas kept no
 * per-row offsets in the 168 registers and computed every K and V address of a tile again from the lane index. */
template <int SW> DL_TILE_HD constexpr int row_step(int r0) { return r0 * SW; }

/* A lane's ldmatrix offsets (the 16-bit caches' K and V, attempt #50): rows r0 + lr and 16-byte chunks 2k + b, lr < 16
 * and b < 2 the lane's, r0 a multiple of 8 and k the call's. A chunk's XOR takes its bit 0 from b alone, so by row_step
 * tile_off(r0 + lr, 2k + b) = y[k mod N] + ldsm_const(r0, k), N = CPS/2 offsets a lane; the constant is an immediate
 * of the load. */
template <int SW> struct ldsm_lane {
    static constexpr int CPS = SW / 16, N = CPS / 2 > 0 ? CPS / 2 : 1;
    int y[N];
};
template <int SW> DL_TILE_HD ldsm_lane<SW> ldsm_lane_of(int lr, int b, int swz)
{
    ldsm_lane<SW> l;
DL_TILE_UNROLL
    for (int q = 0; q < ldsm_lane<SW>::N; q++) l.y[q] = tile_off<SW>(lr, 2 * q + b, swz);
    return l;
}
template <int SW> DL_TILE_HD constexpr int ldsm_const(int r0, int k)
{
    return (2 * k / ldsm_lane<SW>::CPS) * (kTile * SW) + row_step<SW>(r0);
}

/* The lane's fp8 V offsets (decode_stream.cu's v_words and P*V loop): its rows 2c and 2c + 1 (h), its VB bytes from
 * dim g * VB as 16-byte chunks (VB 16, 32) or one 8-byte half of a chunk (VB 8); rows 2c + 8 and 2c + 9, and every
 * k-step's rows, are these plus row_step. */
template <int VB> struct v_lane {
    static constexpr int N = VB >= 16 ? VB / 16 : 1;
    int off[2][N];
};
template <int SW, int VB> DL_TILE_HD v_lane<VB> v_lane_of(int g, int c, int swz)
{
    v_lane<VB> v;
DL_TILE_UNROLL
    for (int h = 0; h < 2; h++)
DL_TILE_UNROLL
        for (int q = 0; q < v_lane<VB>::N; q++)
            v.off[h][q] = VB >= 16 ? tile_off<SW>(2 * c + h, g * (VB / 16) + q, swz)
                                   : tile_off<SW>(2 * c + h, g / 2, swz) + (g & 1) * 8;
    return v;
}

/* A wgmma shared-memory matrix descriptor: start address, leading / stride byte offsets, swizzle (sw = row bytes of
 * the swizzle pattern: 128, 64, or 0 for none). */
DL_TILE_HD uint64_t wg_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, int sw)
{
    const uint64_t mode = sw == 128 ? 1 : sw == 64 ? 2 : 0;
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | (mode << 62);
}
/* Descriptor d with its start address `bytes` further on (a multiple of 16): the address field is the low 14 bits of
 * the low word, (addr & 0x3FFFF) >> 4, and shared addresses stay under 0x40000, so the add never carries out of it:
 * wg_desc(a + bytes, ...) == wg_desc_add(wg_desc(a, ...), bytes) (attempt #51; tests/nv_tile_off_check.cu). */
DL_TILE_HD uint64_t wg_desc_add(uint64_t d, uint32_t bytes)
{
    return ((d >> 32) << 32) | (uint32_t)((uint32_t)d + (bytes >> 4));
}

/* nv_tile_off_check.cu - the streaming kernels' shared-memory offset identities (gpu/dl_tile_off.cuh), checked on the
 * host for every swizzle (none, 64-byte, 128-byte), row width, row, chunk and lane the kernels use:
 *   row_step     tile_off(r0 + r, ch) = tile_off(r, ch) + r0 * SW, r0 a multiple of 8 (attempt #49)
 *   v_lane_of    the fp8 V loads' offsets (rows 2c + h + row0, the lane's VB bytes from dim g * VB)
 *   ldsm_lane_of the 16-bit K and V ldmatrix offsets (rows r0 + lr, chunks 2k + b; attempt #50)
 *   wg_desc_add  a wgmma descriptor moved on by a constant = the descriptor of the moved address (attempt #51)
 * and that tile_off itself puts every (row, chunk) of a tile at a distinct 16-byte chunk inside it.
 * Exits 1 naming the first case that differs. Part of `make test-nv` (needs nvcc, not a GPU). */
#include <cstdio>
#include <cstring>

#include "dl_tile_off.cuh"

static long checked = 0;
static int failed = 0;

static void expect(int got, int want, const char *what, int SW, int swz, int a, int b, int c)
{
    checked++;
    if (got != want && !failed) {
        failed = 1;
        std::printf("FAIL nv_tile_off_check: %s SW=%d swz=%d (%d, %d, %d): %d, want %d\n", what, SW, swz, a, b, c, got,
                    want);
    }
}

/* A tile of R bytes a row (R / SW slabs): tile_off a bijection onto its 16-byte chunks, and the row identity. */
template <int SW, int R> static void check_tile(int swz)
{
    constexpr int CH = R / 16;
    static unsigned char seen[kTile * R / 16];
    std::memset(seen, 0, sizeof seen);
    for (int r = 0; r < kTile; r++)
        for (int ch = 0; ch < CH; ch++) {
            const int off = tile_off<SW>(r, ch, swz);
            const int ok = off >= 0 && off < kTile * R && off % 16 == 0 && !seen[off / 16];
            expect(ok, 1, "tile_off inside the tile, 16-byte aligned, once", SW, swz, r, ch, off);
            if (ok) seen[off / 16] = 1;
            for (int r0 = 0; r0 + r < kTile; r0 += 8)
                expect(tile_off<SW>(r0 + r, ch, swz), tile_off<SW>(r, ch, swz) + row_step<SW>(r0), "row_step", SW, swz,
                       r0, r, ch);
        }
}

/* The fp8 V loads (VB = D / 8 bytes a lane; decode_stream.cu's v_words): rows row0 + 2c + h, row0 = (kk * 16 or 0) +
 * 8 (r >> 1), chunk g * VB / 16 + q (VB >= 16) or byte (g & 1) * 8 of chunk g / 2 (VB 8). */
template <int SW, int VB> static void check_v(int swz)
{
    for (int g = 0; g < 8; g++)
        for (int c = 0; c < 4; c++) {
            const v_lane<VB> v = v_lane_of<SW, VB>(g, c, swz);
            for (int row0 = 0; row0 < kTile; row0 += 8)
                for (int h = 0; h < 2; h++)
                    for (int q = 0; q < v_lane<VB>::N; q++) {
                        const int want = VB >= 16 ? tile_off<SW>(row0 + 2 * c + h, g * (VB / 16) + q, swz)
                                                  : tile_off<SW>(row0 + 2 * c + h, g / 2, swz) + (g & 1) * 8;
                        expect(v.off[h][q] + row_step<SW>(row0), want, "v_lane_of", SW, swz, g * 4 + c, row0 + h, q);
                    }
        }
}

/* The 16-bit ldmatrix loads (R = 2 D bytes a row): K rows r0 + (lane & 7) + 8 ((lane >> 3) & 1), chunk 2 ks +
 * (lane >> 4); V rows r0 + (lane & 7) + 8 (lane >> 4), chunk 2 i + ((lane >> 3) & 1); r0 = 16 mt or 16 kk. */
template <int SW, int R> static void check_ldsm(int swz)
{
    for (int lane = 0; lane < 32; lane++)
        for (int form = 0; form < 2; form++) {
            const int lr = form == 0 ? (lane & 7) + 8 * ((lane >> 3) & 1) : (lane & 7) + 8 * (lane >> 4);
            const int b = form == 0 ? lane >> 4 : (lane >> 3) & 1;
            const ldsm_lane<SW> l = ldsm_lane_of<SW>(lr, b, swz);
            for (int r0 = 0; r0 < kTile; r0 += 16)
                for (int k = 0; k < R / 32; k++)
                    expect(l.y[k % ldsm_lane<SW>::N] + ldsm_const<SW>(r0, k), tile_off<SW>(r0 + lr, 2 * k + b, swz),
                           form == 0 ? "ldsm K" : "ldsm V", SW, swz, lane, r0, k);
        }
}

/* wg_desc_add(wg_desc(a), bytes) = wg_desc(a + bytes) for every 16-byte aligned shared address a + bytes under 228 KB
 * (the most shared memory a CTA has), the layouts the wgmma kernels take (K-major swizzled K and Q: LBO 16, SBO
 * 8 rows; Q and P for the register-A form: LBO 128, SBO 256) and the offsets they add (up to 4 k-blocks of 256 B,
 * or the slab and k32 offsets of a tile of up to 4 slabs). */
static void check_desc()
{
    const struct { unsigned lbo, sbo; int sw; } lay[] = {{16, 8 * 128, 128}, {16, 8 * 64, 64}, {128, 256, 0}};
    const unsigned top = 228 * 1024;
    for (const auto &l : lay)
        for (unsigned a = 0; a < top; a += 16)
            for (unsigned bytes = 0; bytes <= 3 * kTile * 128 + 96 && a + bytes < top; bytes += 16) {
                const unsigned long long got = wg_desc_add(wg_desc(a, l.lbo, l.sbo, l.sw), bytes);
                const unsigned long long want = wg_desc(a + bytes, l.lbo, l.sbo, l.sw);
                checked++;
                if (got != want && !failed) {
                    failed = 1;
                    std::printf("FAIL nv_tile_off_check: wg_desc_add sw=%d lbo=%u (a %u, +%u): %llx, want %llx\n", l.sw,
                                l.lbo, a, bytes, got, want);
                }
            }
}

int main()
{
    check_desc();
    /* the swizzles the tensor maps take (decode_stream.cu, make_maps): SW 128 the 128-byte one (2), SW 64 the 64-byte
     * one (1), none (0) for pages under 8 rows; the rows the kernels stage: 8-bit D 64 / 128 / 256 (64, 128, 256
     * bytes), 16-bit D 64 / 128 / 256 (128, 256, 512) */
    for (int swz = 0; swz < 3; swz += 2) {
        check_tile<128, 128>(swz);
        check_tile<128, 256>(swz);
        check_tile<128, 512>(swz);
        check_v<128, 16>(swz);
        check_v<128, 32>(swz);
        check_ldsm<128, 128>(swz);
        check_ldsm<128, 256>(swz);
        check_ldsm<128, 512>(swz);
    }
    for (int swz = 0; swz < 2; swz++) {
        check_tile<64, 64>(swz);
        check_v<64, 8>(swz);
    }
    if (failed) return 1;
    std::printf("PASS nv_tile_off_check: %ld offsets\n", checked);
    return 0;
}

/* dl_rng.h - counter-based random numbers: value = f(seed, stream, index).
 *
 * No state: any element of any tensor can be drawn independently, in any order,
 * on any thread, on the CPU or the GPU, and comes out bit-identical. The mixer
 * is SplitMix64's finalizer applied to a hash of (seed, stream, index).
 * Normals use Box-Muller on two uniforms drawn from sub-counters of the index,
 * computed in double with libm (CPU) - GPU code that needs identical inputs
 * copies the CPU-generated tensors rather than recomputing transcendental
 * functions. Streams name the tensor being drawn (see DL_STREAM_*). */
#ifndef DL_RNG_H
#define DL_RNG_H

#include <stdint.h>
#include "dl_formats.h" /* DL_HD */

#ifdef __cplusplus
extern "C" {
#endif

enum {
    DL_STREAM_Q = 1, DL_STREAM_K = 2, DL_STREAM_V = 3,
    DL_STREAM_LENS = 4, DL_STREAM_PAGES = 5, DL_STREAM_CHANNELS = 6,
    DL_STREAM_POISON = 7
};

DL_HD uint64_t dl_splitmix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* 64 random bits for (seed, stream, index). */
DL_HD uint64_t dl_rng_u64(uint64_t seed, uint64_t stream, uint64_t index)
{
    return dl_splitmix64(dl_splitmix64(seed ^ dl_splitmix64(stream * 0xD1B54A32D192ED03ull)) + index);
}

/* Uniform double in [0, 1) with 53 random bits. */
DL_HD double dl_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
    return (double)(dl_rng_u64(seed, stream, index) >> 11) * 0x1.0p-53;
}

/* Uniform integer in [0, n) (n > 0), by multiply-shift on 32 high bits; bias < n/2^32. */
DL_HD uint64_t dl_rng_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n)
{
    return (uint64_t)(((dl_rng_u64(seed, stream, index) >> 32) * (unsigned __int128)n) >> 32);
}

#ifdef __cplusplus
}
#endif

/* Standard normal N(0,1) for (seed, stream, index), CPU only: Box-Muller on the
 * uniforms at sub-counters 2*index and 2*index+1, r*cos(2*pi*u2) with
 * r = sqrt(-2 ln(1-u1)) (1-u1 > 0, so never log(0)). */
double dl_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);
/* Both outputs of the same Box-Muller pair: out[0] = r*cos (== dl_rng_normal, bit
 * for bit), out[1] = r*sin, an independent N(0,1). Half the cost per normal. */
void dl_rng_normal2(uint64_t seed, uint64_t stream, uint64_t index, double out[2]);

#endif

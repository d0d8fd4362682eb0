/* dl_rng.c - the CPU-only part of the counter-based generator: standard
 * normals by Box-Muller. The integer and uniform draws are inline in dl_rng.h
 * so that CUDA code can use them too. */
#include "dl_rng.h"

#include <math.h>

/* Both Box-Muller outputs of the uniforms at sub-counters 2*index and 2*index+1.
 * u1 is in [0,1), so 1-u1 is in (0,1] and the log never sees 0. */
void dl_rng_normal2(uint64_t seed, uint64_t stream, uint64_t index, double out[2])
{
    const double two_pi = 6.283185307179586476925286766559;
    double u1 = dl_rng_uniform(seed, stream, 2 * index);
    double u2 = dl_rng_uniform(seed, stream, 2 * index + 1);
    double r = sqrt(-2.0 * log(1.0 - u1));
    out[0] = r * cos(two_pi * u2);
    out[1] = r * sin(two_pi * u2);
}

/* N(0,1): the cosine output of dl_rng_normal2 (same code path, so bit-identical). */
double dl_rng_normal(uint64_t seed, uint64_t stream, uint64_t index)
{
    double z[2];
    dl_rng_normal2(seed, stream, index, z);
    return z[0];
}

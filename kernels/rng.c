#include <math.h>

#include "rng.h"

/* splitmix64's finalizer: a bijection on 64 bits with full avalanche. */
static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t attn_hash(uint64_t seed, uint64_t stream, uint64_t index)
{
    /* Key the counter by seed and stream through two rounds, so neighbouring
     * seeds or streams do not give shifted copies of the same sequence. */
    const uint64_t key = mix64(mix64(seed ^ 0x9e3779b97f4a7c15ull) + stream);
    return mix64(key + index * 0x9e3779b97f4a7c15ull);
}

double attn_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
    return (double)(attn_hash(seed, stream, index) >> 11) * 0x1.0p-53;
}

/* 1 - u keeps the log away from 0. */
double attn_gauss(uint64_t seed, uint64_t stream, uint64_t index)
{
    const double u1 = 1.0 - attn_uniform(seed, stream, 2 * index);
    const double u2 = attn_uniform(seed, stream, 2 * index + 1);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

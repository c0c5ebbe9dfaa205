#include <math.h>

#include "fill.h"

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

/* Box-Muller on two independent uniforms; 1 - u keeps the log away from 0. */
static float normal(uint64_t seed, uint64_t stream, size_t index)
{
    const double u1 = 1.0 - attn_uniform(seed, stream, 2 * (uint64_t)index);
    const double u2 = attn_uniform(seed, stream, 2 * (uint64_t)index + 1);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

float attn_fill_value(attn_fill_kind kind, uint64_t seed, int tensor, size_t index)
{
    /* Integer Q and K make every product and partial sum of a dot product
     * exact in fp32 (|q.k| <= 96 * 100 * 100 < 2^24 for dk <= 96), so extreme
     * logits test overflow handling, not the rounding of the dot product. */
    if (kind == ATTN_FILL_EXTREME && tensor != ATTN_TENSOR_V)
        return (float)((int)(attn_hash(seed, (uint64_t)tensor, index) % 201u) - 100);
    return normal(seed, (uint64_t)tensor, index);
}

void attn_fill(float *x, size_t n, attn_fill_kind kind, uint64_t seed, int tensor, int threads)
{
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
    for (size_t i = 0; i < n; i++)
        x[i] = attn_fill_value(kind, seed, tensor, i);
    (void)threads;
}

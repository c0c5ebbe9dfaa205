#include <math.h>

#include "fill.h"

float attn_fill_value(attn_fill_kind kind, uint64_t seed, int tensor, size_t index)
{
    /* Integer Q and K make every product and partial sum of a dot product
     * exact in fp32 (|q.k| <= 96 * 100 * 100 < 2^24 for dk <= 96), so extreme
     * logits test overflow handling, not the rounding of the dot product. */
    if (kind == ATTN_FILL_EXTREME && tensor != ATTN_TENSOR_V)
        return (float)((int)(attn_hash(seed, (uint64_t)tensor, index) % 201u) - 100);
    return (float)attn_gauss(seed, (uint64_t)tensor, (uint64_t)index);
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

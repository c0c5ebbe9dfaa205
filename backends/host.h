/* Small pieces every host (CPU) backend needs. */
#ifndef ATTN_HOST_H
#define ATTN_HOST_H

#include <stdbool.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend.h"

/* The calling thread's index in its OpenMP team; 0 outside one. */
static inline int attn_thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* Bytes attn_own_kv_len takes for p. */
/* Whether rows [0, n) of a row-major matrix hold only finite values. Where
 * one does not, a product with a weight of 0 for a key a query cannot see
 * (0 x NaN, 0 x Inf) would reach that query's row: the backends multiply
 * such rows into the masked part of P V row by row, over visible keys only.
 * O(n cols) against the O(rows n cols) product it guards. */
static inline bool attn_rows_finite(const float *x, size_t n, size_t cols)
{
    const size_t e = n * cols;
    unsigned bad = 0;
#pragma omp simd reduction(| : bad)
    for (size_t i = 0; i < e; i++) {
        unsigned u;
        memcpy(&u, &x[i], sizeof(u));
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return !bad;
}

static inline size_t attn_kv_len_bytes(const attn_problem *p)
{
    return p->kv_len ? (size_t)p->batch * sizeof(int) : 0;
}

/* Points p->kv_len at a private copy (the caller's array may be gone by the
 * time run is called); *copy is the block to free later, NULL when p has
 * no padding. false when the allocation failed. */
static inline bool attn_own_kv_len(const attn_allocator *a, attn_problem *p, int **copy)
{
    *copy = NULL;
    if (!p->kv_len)
        return true;
    *copy = attn_alloc(a, attn_kv_len_bytes(p));
    if (!*copy)
        return false;
    memcpy(*copy, p->kv_len, attn_kv_len_bytes(p));
    p->kv_len = *copy;
    return true;
}

#endif

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

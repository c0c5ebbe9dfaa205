/* The common base of the host (CPU) backends: the problem with a private
 * copy of its padding lengths, the thread count, the allocator, the kernel
 * table of the case's ISA and the bound tensors. A backend's state starts
 * with an attn_host member, so the generic bind and read below serve it,
 * and its prepare and release wrap attn_host_create and attn_host_destroy
 * around its own buffers. */
#ifndef ATTN_HOST_H
#define ATTN_HOST_H

#include <stdbool.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend.h"

typedef struct attn_host {
    attn_problem p;               /* p.kv_len points at kv_len below, p.ragged at ragged */
    int *kv_len;                  /* a private copy: the caller's may go away */
    attn_ragged ragged;           /* p.ragged points here, its arrays at lens (a private
                                     copy too) */
    void *lens;
    int threads;
    const attn_allocator *alloc;
    const attn_kernels *k;        /* cfg->isa's table */
    attn_tensors t;               /* bound by attn_host_bind; O is written in place */
} attn_host;

/* Bytes attn_host_create takes for a state of `size` bytes. */
size_t attn_host_workspace(size_t size, const attn_problem *p);

/* *state: a zeroed state of `size` bytes (its first member an attn_host)
 * with the base filled in from p and cfg. ATTN_ENOMEM, or ATTN_EUNSUPPORTED
 * when this CPU cannot run cfg->isa's kernels (supports says so first). */
attn_status attn_host_create(size_t size, const attn_problem *p, const attn_config *cfg,
                             void **state);

/* Frees what attn_host_create took; state may be NULL. */
void attn_host_destroy(void *state);

/* The bind and read verbs of a backend that computes into the bound O. */
attn_status attn_host_bind(void *state, const attn_tensors *t);
attn_status attn_host_read(void *state, float *out);
/* The run and bind of a backend with a backward (backend.h), around its
 * forward and backward: run computes the forward unless the case is the
 * backward alone, then the backward when there is one; bind binds, and for
 * the backward alone computes the forward it starts from. */
typedef void attn_host_pass_fn(void *state);
attn_status attn_host_run_passes(void *state, attn_host_pass_fn *forward,
                                 attn_host_pass_fn *backward);
attn_status attn_host_bind_passes(void *state, const attn_tensors *t,
                                  attn_host_pass_fn *forward);

/* The read_grads verb of a backend that computes into the bound gradients. */
attn_status attn_host_read_grads(void *state, float *dq, float *dk, float *dv);

/* For supports: ATTN_EUNSUPPORTED when cfg's ISA cannot run here. */
attn_status attn_host_supports_isa(const char *name, const attn_config *cfg, char *why,
                                   size_t len);

/* The calling thread's index in its OpenMP team; 0 outside one. */
static inline int attn_thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

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

#endif

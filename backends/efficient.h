/* What the efficient-attention backends share (definitions in variant.h):
 *   masked.c      local, sparse: exact softmax over each row's key intervals;
 *   kernelized.c  linear, performer: feature maps and prefix sums;
 *   linformer.c   linformer: projected keys and values.
 * All of them are GEMM-shaped on the register-tiled kernels of kernels/ (the
 * tiled backend's, at the case's ISA). Queries go in blocks of QBLOCK rows;
 * sums over keys are taken in float over chunks of KCHUNK keys and added up
 * across chunks in double, so their rounding does not grow with N. */
#ifndef ATTN_EFFICIENT_H
#define ATTN_EFFICIENT_H

#include "host.h"
#include "variant.h"

#define QBLOCK 64
#define KCHUNK 256

/* The variant's own conditions on p and the kernels' ISA. */
attn_status attn_efficient_supports(const attn_problem *p, const attn_config *cfg, char *why,
                                    size_t len);

/* n floats of 1.0f from a: the alpha of the kernels' pv when it accumulates. */
float *attn_efficient_ones(const attn_allocator *a, size_t n);

/* Per-thread scratch: [threads][nf] floats and [threads][nd] doubles. */
typedef struct attn_scratch {
    float *f;
    size_t nf;
    double *d;                  /* NULL when nd is 0 */
    size_t nd;
} attn_scratch;

/* Its bytes, for workspace(). */
size_t attn_scratch_bytes(int threads, size_t nf, size_t nd);
bool attn_scratch_alloc(attn_scratch *x, const attn_allocator *a, int threads, size_t nf,
                        size_t nd);
void attn_scratch_free(attn_scratch *x, const attn_allocator *a);

/* OpenMP over the (batch, head) pairs, one at a time: head(state, bh, and
 * the calling thread's floats and doubles of x). */
typedef void attn_head_fn(void *state, size_t bh, float *f, double *d);
void attn_efficient_heads(const attn_host *h, const attn_scratch *x, attn_head_fn *head,
                          void *state);

#endif

/* The efficient-attention variants: what each computes, and the random
 * structure (blocks, features, projections) that the backend and the
 * reference both regenerate from the variant's seed.
 *
 * Positions: query i sits at key position i' = i + Nk - Nq (the causal
 * alignment). Causal and padding masks apply to every kind but linformer,
 * for which causality is not defined.
 *
 *   local      softmax over the keys of the window, i' - L <= j <= i' + R
 *              (the problem's window, backend.h; --window W is L = R = W):
 *              the function of an exact backend given the same window,
 *              computed by its own code over the window's keys only.
 *   sparse     softmax over the keys of the window, or j < globals,
 *              or i < globals (global queries see every key), or j in one of
 *              the random_blocks key blocks (of `block` keys) drawn for the
 *              query's block i' / block (attn_random_blocks). Needs Nq == Nk.
 *              random_blocks == 0 is the Longformer pattern, > 0 BigBird's.
 *   linear     phi(x) = elu(x) + 1 elementwise;
 *              O_i = sum_j phi(q_i).phi(k_j) v_j / sum_j phi(q_i).phi(k_j)
 *              over the visible j (no scale); no visible key: zeros.
 *   performer  x~ = x * scale^(1/2); phi(x) = exp(W x~ - |x~|^2 / 2) / sqrt(m)
 *              with W the m x d_k features of attn_performer_features; then
 *              O_i as for linear, with this phi: an unbiased estimate of
 *              softmax attention with logits scale * q.k.
 *   linformer  K' = E K, V' = F V over the valid keys j < kv_len[b], E and F
 *              [p, Nk] with N(0, 1/p) entries (attn_linformer_e, _f), the
 *              same for every batch and head; O = softmax(scale Q K'^T) V'. */
#ifndef ATTN_VARIANT_H
#define ATTN_VARIANT_H

#include <math.h>
#include <stdint.h>

#include "backend.h"
#include "kernels/rng.h"

/* Defaults the command line starts from (printed by --help). */
enum {
    ATTN_DEFAULT_WINDOW = 128,
    ATTN_DEFAULT_GLOBALS = 16,
    ATTN_DEFAULT_RANDOM_BLOCKS = 3,
    ATTN_DEFAULT_BLOCK = 64,
    ATTN_DEFAULT_FEATURES = 256,
    ATTN_DEFAULT_PROJ = 256,
    ATTN_MAX_RANDOM_BLOCKS = 1024,  /* --random-blocks at most */
};

const char *attn_kind_name(attn_kind k);

/* The knobs at their defaults (seed 1). */
static inline attn_variant attn_variant_defaults(void)
{
    return (attn_variant){ .globals = ATTN_DEFAULT_GLOBALS,
                           .random_blocks = ATTN_DEFAULT_RANDOM_BLOCKS,
                           .block = ATTN_DEFAULT_BLOCK, .features = ATTN_DEFAULT_FEATURES,
                           .proj = ATTN_DEFAULT_PROJ, .seed = 1 };
}

/* sparse: the key blocks query block qb attends at random, ascending and
 * distinct, in out[0..n); n = min(random_blocks, number of key blocks). */
int attn_random_blocks(const attn_problem *p, int qb, int *out);

/* local, sparse: the keys query i of batch b sees, as ascending disjoint
 * half-open intervals [lo, hi) in sp (room for ATTN_MAX_SPANS); returns how
 * many. The backend's iteration order; the reference keeps its own predicate. */
typedef struct attn_span {
    int lo, hi;
} attn_span;
#define ATTN_MAX_SPANS (ATTN_MAX_RANDOM_BLOCKS + 2)
int attn_variant_spans(const attn_problem *p, int b, int i, attn_span *sp);
/* Sorts sp[0..n), merges overlapping or touching intervals and drops empty
 * ones, in place; returns how many are left. */
int attn_spans_merge(attn_span *sp, int n);

/* performer: W [m][d_k], row-major. Blocks of d_k rows are orthogonalized
 * (Gram-Schmidt on Gaussian rows), then each row is given the norm of an
 * independent Gaussian d_k-vector, so every row is marginally N(0, I). */
void attn_performer_features(const attn_problem *p, double *w);

/* linformer: E[t][j], F[t][j] for t < proj, j < Nk. */
static inline double attn_linformer_e(const attn_problem *p, int t, int j)
{
    return attn_gauss(p->var.seed, 0x11f0e, (uint64_t)t * (uint64_t)p->seq_kv + (uint64_t)j) /
           sqrt((double)p->var.proj);
}

static inline double attn_linformer_f(const attn_problem *p, int t, int j)
{
    return attn_gauss(p->var.seed, 0x11f0f, (uint64_t)t * (uint64_t)p->seq_kv + (uint64_t)j) /
           sqrt((double)p->var.proj);
}

/* The variant's own check of p beyond the backend's caps: ATTN_OK or
 * ATTN_EUNSUPPORTED with why. */
attn_status attn_variant_supports(const attn_problem *p, char *why, size_t len);

#endif

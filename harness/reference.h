/* The reference: softmax attention by its definition, accumulated in double.
 * Rows are independent, so for large problems it computes a seeded,
 * stratified sample of query rows exactly instead of all of them. */
#ifndef ATTN_REFERENCE_H
#define ATTN_REFERENCE_H

#include <stdint.h>

#include "backend.h"

/* The output buffer's poison before a backend runs (harness/check.c): a quiet
 * NaN whose payload no arithmetic produces, so that an element left unwritten
 * is told apart from a NaN a backend computed. */
#define ATTN_POISON_BITS 0x7fc0deadu

struct attn_ref_grads;

typedef struct attn_ref {
    const struct attn_ref_grads *grads;  /* the backward's reference beside it (attn_inputs
                                            sets it), or NULL */
    const struct attn_ref *unquantized;  /* a quantized cache: the reference on K and V
                                            before quantization (attn_inputs sets it), or
                                            NULL */
    size_t nrows;            /* rows computed */
    size_t total_rows;       /* B*H*Nq */
    size_t *rows;            /* ascending flat row ids ((b*H + h)*Nq + i) */
    double *out;             /* [nrows][d_v] */
    double max_abs_logit;    /* max |scale*q.k| over finite visible entries of those rows */
    double max_abs_v;        /* max |V| over the whole tensor's finite values */
    size_t nonfinite_inputs; /* NaN or Inf values in Q, K and V */
    size_t nan_inputs;       /* of those, NaN */
    size_t poison_inputs;    /* of those, NaN with the bits of the output's poison
                                (ATTN_POISON_BITS), which the check cannot then tell from
                                an element never written */
} attn_ref;

/* Multiply-adds the automatic mode allows before it samples (~1-2 s on 2 cores). */
#define ATTN_REF_BUDGET (1ull << 31)

/* Rows the reference will compute: want < 0 all, 0 automatic, else min(want, all). */
size_t attn_ref_plan_rows(const attn_problem *p, long want);
/* Bytes attn_ref_compute will allocate for that plan. */
size_t attn_ref_bytes(const attn_problem *p, long want, int threads);

/* Softmax attention under p's causal and padding masks; p->kind is ignored. */
attn_status attn_ref_compute(attn_ref *r, const attn_problem *p, const attn_tensors *in,
                             long want, uint64_t seed, int threads);

/* The definition of p->kind (backends/variant.h), in double, for the same
 * rows as dense: what a variant backend is checked against. max_abs_logit
 * is the largest exponent the kind evaluates (its logits for the softmax
 * kinds, the feature exponents for performer, 0 for linear). */
attn_status attn_ref_variant(attn_ref *r, const attn_ref *dense, const attn_problem *p,
                             const attn_tensors *in, int threads);
void attn_ref_free(attn_ref *r);

/* The definition's pieces, each written out from backend.h (not taken
 * from the helpers the backends use), for the references of this file and
 * of reference_grad.c: key j visible to query i of batch item b under the
 * causal and padding masks; inside the window; ALiBi's slope of head h;
 * the K/V head of flat query head bh. */
bool attn_ref_visible(const attn_problem *p, int b, int i, int j);
bool attn_ref_in_window(const attn_problem *p, int b, int i, int j);
double attn_ref_alibi_slope(int heads, int h);
size_t attn_ref_kv_of(const attn_problem *p, size_t bh);

/* The backward's reference (attn_backward(p)): dQ, dK and dV by their
 * definition (backend.h), in double, from the inputs' fp32 values and dO,
 * for whole K/V heads: K/V head r = b * Hkv + g gives every row of dQ of
 * the G query heads that read it (G * Nq rows from flat query row
 * (b * H + g * G) * Nq on) and every row of its dK and dV (Nk rows from
 * r * Nk). It computes its own O and L; nothing of the forward's is used. */
typedef struct attn_ref_grads {
    size_t nheads;          /* K/V heads computed, of total_heads (B * Hkv) */
    size_t total_heads;
    size_t *heads;          /* their flat ids, ascending */
    double *dq;             /* [nheads][G * Nq][dk] */
    double *dk, *dv;        /* [nheads][Nk][dk], [nheads][Nk][dv] */
    /* The scale of each gradient's rounding errors, as max|V| is of the
     * output's: the largest sum of the magnitudes of its terms, bounded by
     *   dQ:  scale max|K| max_i sum_j g_ij
     *   dK:  scale max|Q| max_j sum_i g_ij
     *   dV:  max|dO| max_j sum_i P_ij
     * with g_ij = P_ij (|dP_ij| + |D_i|) |ds_ij/ds0_ij| (the terms of dS
     * before their cancellation). */
    double mag[3];
    double max_abs_logit;   /* as attn_ref's, over the rows computed */
} attn_ref_grads;

/* Heads the reference computes: want < 0 all, else as many as
 * ATTN_REF_BUDGET allows, at least 2 (the first and the last; 1 when there
 * is one), spread evenly. */
size_t attn_ref_grads_plan(const attn_problem *p, long want);
size_t attn_ref_grads_bytes(const attn_problem *p, long want, int threads);
attn_status attn_ref_grads_compute(attn_ref_grads *g, const attn_problem *p,
                                   const attn_tensors *in, long want, int threads);
void attn_ref_grads_free(attn_ref_grads *g);

#endif

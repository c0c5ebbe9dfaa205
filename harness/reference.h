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

typedef struct attn_ref {
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

#endif

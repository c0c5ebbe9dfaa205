/* The naive backend's pieces, shared by its files: the forward (naive.c)
 * and the backward (backward.c). */
#ifndef ATTN_NAIVE_INTERNAL_H
#define ATTN_NAIVE_INTERNAL_H

#include "host.h"

typedef struct naive_state {
    attn_host h;
    float *scores;                /* [threads][naive_row_floats]: the scores, then (16-bit
                                     storage) a row of Q, of K and of V in fp32 */
    float *pds;                   /* the backward: P and dS' of one K/V head's rows,
                                     [2][G Nq][Nk] */
} naive_state;

size_t naive_row_floats(const attn_problem *p);

/* Row `row` (n elements from element row * n) of a tensor in fp32: in place
 * when it is stored so, else converted into buf. */
const float *naive_row_f32(const float *f32, const uint16_t *h, attn_dtype dt, size_t row,
                           int n, float *buf);

/* The scores of query row `row` (flat over B, H, Nq) after the modifiers,
 * sc[j] for its visible keys j in [*beg, *end); returns their maximum
 * (-inf when none). buf: 2 dk floats, a row of K and the row of Q widened
 * from 16-bit storage. */
float naive_scores(const attn_problem *p, const attn_tensors *t, size_t row, float *sc,
                   float *buf, int *beg, int *end);

/* The forward over every row, into t.o (and t.lse when set). */
void naive_forward(void *state);

/* backward.c: its workspace beside the forward's, and the backward itself
 * from t.o, t.lse and t.dout into t.dq, t.dk, t.dv. */
size_t naive_bwd_bytes(const attn_problem *p);
void naive_backward(void *state);

#endif

/* The blas backend's pieces, shared by its files: the forward (blas.c)
 * and the backward (backward.c). */
#ifndef ATTN_BLAS_INTERNAL_H
#define ATTN_BLAS_INTERNAL_H

#include "host.h"

typedef struct blas_state {
    attn_host h;
    float *scores;                /* [threads][seq_q][seq_kv] */
    int *end;                     /* [threads][2][seq_q] each row's visible keys [beg, end) */
    float *pos, *slope;           /* ALiBi: [seq_kv] key positions; [threads][seq_kv] slope */
    float *mx;                    /* sinks, L: [threads][seq_q] each row's largest score */
    float *grad;                  /* the backward: [threads][seq_q][seq_kv], dP then dS' */
    float *rowf;                  /* the backward: [threads][2][seq_q], D and L log2(e) */
} blas_state;

static inline size_t blas_score_elems(const attn_problem *p)
{
    return (size_t)p->seq_q * (size_t)p->seq_kv;
}

/* backward.c: its bytes beside the forward's, its buffers, and the
 * backward from t.o, t.lse and t.dout. */
size_t blas_bwd_bytes(const attn_problem *p, const attn_config *cfg);
bool blas_bwd_alloc(blas_state *s, const attn_config *cfg);
void blas_bwd_free(blas_state *s);
void blas_backward(void *state);

#endif

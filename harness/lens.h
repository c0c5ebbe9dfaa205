/* --lens: the per-item lengths of a serving batch (backend.h), as explicit
 * pairs or a seeded distribution, and the arrays one problem holds. */
#ifndef ATTN_LENS_H
#define ATTN_LENS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

typedef enum attn_lens_kind {
    ATTN_LENS_PAIRS = 0,    /* Nq:Nk,Nq:Nk,...: one pair per item */
    ATTN_LENS_DECODE,       /* decode:uniform:LO:HI: Nq = 1, Nk uniform in [LO, HI] */
    ATTN_LENS_PREFILL,      /* prefill:uniform:LO:HI: Nq = Nk uniform in [LO, HI] */
    ATTN_LENS_MIXED,        /* mixed:uniform:LO:HI:P:C: Nk uniform in [LO, HI]; the first
                               P items prefill chunks of min(C, Nk) queries, the others
                               decode tokens */
} attn_lens_kind;

typedef struct attn_lens {
    attn_lens_kind kind;
    int lo, hi;             /* the distributions' range of Nk */
    int prefills, chunk;    /* mixed */
    int *pairs;             /* ATTN_LENS_PAIRS: [npairs][2] (Nq, Nk) */
    int npairs;
    char *spec;             /* the canonical text (case names, repro lines) */
} attn_lens;

/* Parses val; false with why (one line naming what --lens accepts). */
bool attn_lens_parse(const char *val, attn_lens *out, char *why, size_t len);
void attn_lens_free(attn_lens *l);

/* The arrays of one problem's serving batch; p->ragged points at r. */
typedef struct attn_batch {
    attn_ragged r;
    int *nq, *nk;
    long *q0, *k0;
} attn_batch;

bool attn_batch_alloc(attn_batch *bt, int max_batch);
void attn_batch_free(attn_batch *bt);

/* Item lengths for `batch` items from l (its distribution drawn from seed),
 * K/V in pages of `page` tokens (0: packed); the largest Nq and Nk into
 * *seq_q and *seq_kv. */
void attn_batch_make(attn_batch *bt, const attn_lens *l, int batch, int page, uint64_t seed,
                     int *seq_q, int *seq_kv);

/* A dense batch's shape as a serving batch (every item Nq:Nk), for --page
 * without --lens. */
void attn_batch_dense(attn_batch *bt, int batch, int seq_q, int seq_kv, int page);

#endif

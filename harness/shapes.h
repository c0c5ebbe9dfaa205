/* The shapes of a run: the cross product of the size lists in a stable
 * order (batch, heads, kv_heads, seq, seq_kv, dk, dv, page, causal; the last
 * varying fastest), each made into the problem the backends are given. */
#ifndef ATTN_SHAPES_H
#define ATTN_SHAPES_H

#include "cli.h"
#include "lens.h"

size_t attn_shapes_count(const attn_opts *o);

/* What a problem points at: its padding lengths, and a serving batch's
 * lengths and offsets, sized for the run's largest batch. */
typedef struct attn_shape_buf {
    int *kv;
    attn_batch batch;
} attn_shape_buf;

bool attn_shape_buf_alloc(attn_shape_buf *buf, const attn_opts *o);
void attn_shape_buf_free(attn_shape_buf *buf);

/* The idx-th problem, pointing into buf. */
void attn_shapes_problem(const attn_opts *o, size_t idx, attn_problem *p, attn_shape_buf *buf);
/* The largest batch of the run. */
int attn_shapes_max_batch(const attn_opts *o);

#endif

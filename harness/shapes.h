/* The shapes of a run: the cross product of the size lists in a stable
 * order (batch, heads, kv_heads, seq, seq_kv, dk, dv, causal; the last varying
 * fastest), each made into the problem the backends are given. */
#ifndef ATTN_SHAPES_H
#define ATTN_SHAPES_H

#include "cli.h"

size_t attn_shapes_count(const attn_opts *o);
/* The idx-th problem; kv must hold as many ints as the largest batch. */
void attn_shapes_problem(const attn_opts *o, size_t idx, attn_problem *p, int *kv);
/* The largest batch of the run: what kv above needs. */
int attn_shapes_max_batch(const attn_opts *o);

#endif

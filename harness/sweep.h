/* Sweep: the cross product of the shape lists in a stable order (batch,
 * heads, seq, seq_kv, dk, dv, causal; backends innermost), run case by case
 * with every finished case reported, appended to the CSV and to the JSON. */
#ifndef ATTN_SWEEP_H
#define ATTN_SWEEP_H

#include "cli.h"
#include "machine.h"

size_t attn_sweep_shapes(const attn_opts *o);
/* The idx-th problem; kv must hold as many ints as the largest batch. */
void attn_sweep_problem(const attn_opts *o, size_t idx, attn_problem *p, int *kv);

/* Before any work: the bytes a shape needs beside backend workspace, and
 * whether they fit; why says how much it needs and how much there is. */
bool attn_shape_fits(const attn_problem *p, const attn_setup *s, char *why, size_t len);

/* Runs everything and returns the exit code. */
int attn_sweep_run(const attn_opts *o, const attn_machine *m, const char *prog);

#endif

/* Deterministic inputs. Every element is a pure function of (seed, tensor,
 * index) through a counter-based generator, so any element can be regenerated
 * alone and the fill is the same for any thread count. */
#ifndef ATTN_FILL_H
#define ATTN_FILL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/rng.h"
#include "problem.h"

enum { ATTN_TENSOR_Q = 0, ATTN_TENSOR_K = 1, ATTN_TENSOR_V = 2, ATTN_TENSOR_SINKS = 3,
       ATTN_TENSOR_DOUT = 4 };

float attn_fill_value(attn_fill_kind kind, uint64_t seed, int tensor, size_t index);
void attn_fill(float *x, size_t n, attn_fill_kind kind, uint64_t seed, int tensor, int threads);

#endif

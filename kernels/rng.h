/* The counter-based generator every seeded thing in attnbench draws from:
 * the harness's inputs, the variants' random structure (sparse blocks,
 * performer features, linformer projections) and the arch models' weights.
 * A value is a pure function of (seed, stream, index), so any element can
 * be regenerated alone and nothing depends on the thread count. It sits
 * below both the backends and the harness, which include it downward. */
#ifndef ATTN_RNG_H
#define ATTN_RNG_H

#include <stdint.h>

/* 64 well-mixed bits for (seed, stream, index). */
uint64_t attn_hash(uint64_t seed, uint64_t stream, uint64_t index);

/* Uniform in [0, 1) with 53 random bits. */
double attn_uniform(uint64_t seed, uint64_t stream, uint64_t index);

/* A standard normal: Box-Muller on the uniforms 2 index and 2 index + 1. */
double attn_gauss(uint64_t seed, uint64_t stream, uint64_t index);

#endif

/* Building blocks of the model comparison (attnbench arch): a row-major
 * GEMM (OpenBLAS when the build has it, else a cache-blocked GEMM on the
 * register-tiled kernels of kernels.h), the sinusoidal positional encoding,
 * and vectorized exp-based activations. */
#ifndef ATTN_LAYERS_H
#define ATTN_LAYERS_H

#include <stdbool.h>
#include <stddef.h>

/* C[M][N] = A[M][K] . B[K][N] + beta * C, row-major with leading dimensions
 * lda, ldb, ldc; beta is 0 (C is only written) or 1. threads >= 1. */
void attn_gemm(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
               float beta, float *C, int ldc, int threads);

/* The same, always through the blocked fallback (for tests and comparison). */
void attn_gemm_blocked(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc, int threads);

/* What attn_gemm runs: "OpenBLAS <config>" or "blocked (<isa> kernels)". */
const char *attn_gemm_name(void);
bool attn_gemm_is_blas(void);

/* "Attention Is All You Need": pe[pos][2i] = sin(pos / 10000^(2i/d)),
 * pe[pos][2i+1] = cos(pos / 10000^(2i/d)), for pos < n, into pe [n][d]
 * (an odd d ends with a sin column). Computed in double. */
void attn_positional_encoding(float *pe, int n, int d);

/* In place over n values: y = 1 / (1 + e^-x), y = tanh(x). */
void attn_sigmoid(float *x, size_t n);
void attn_tanh(float *x, size_t n);

#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "kernels/kernels.h"
#include "layers.h"

#if ATTN_HAVE_OPENBLAS
#include <cblas.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

#define LOG2E ((float)ATTN_LOG2E)

/* Rows of A per block: the block (MB x K) stays in L2 while every 64-column
 * strip of B streams past it; the kernels tile 6 rows x 64 columns. */
#define MB 192
/* Columns per temporary when beta = 1 (the result is added to C after). */
#define NB 256

void attn_gemm_blocked(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc, int threads)
{
    const attn_kernels *k = attn_kernels_best();
    const int blocks = (M + MB - 1) / MB;
    if (K == 0) {
        for (int i = 0; i < M && beta == 0; i++)
            memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof(float));
        return;
    }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
        float *tmp = beta != 0 ? malloc((size_t)MB * NB * sizeof(float)) : NULL;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (int b = 0; b < blocks; b++) {
            const int i0 = b * MB, rows = M - i0 < MB ? M - i0 : MB;
            const float *a = A + (size_t)i0 * lda;
            float *c = C + (size_t)i0 * ldc;
            if (beta == 0) {
                k->qk(c, ldc, a, lda, B, ldb, rows, N, K, 0);
                continue;
            }
            for (int j0 = 0; j0 < N; j0 += NB) {
                const int cols = N - j0 < NB ? N - j0 : NB;
                if (!tmp) {   /* out of memory: the plain loop, slowly */
                    for (int i = 0; i < rows; i++)
                        for (int j = j0; j < j0 + cols; j++) {
                            float s = 0;
                            for (int q = 0; q < K; q++)
                                s += a[(size_t)i * lda + q] * B[(size_t)q * ldb + j];
                            c[(size_t)i * ldc + j] += s;
                        }
                    continue;
                }
                k->qk(tmp, NB, a, lda, B + j0, ldb, rows, cols, K, 0);
                for (int i = 0; i < rows; i++) {
                    float *ci = c + (size_t)i * ldc + j0;
                    const float *ti = tmp + (size_t)i * NB;
#pragma omp simd
                    for (int j = 0; j < cols; j++)
                        ci[j] += ti[j];
                }
            }
        }
        free(tmp);
    }
    (void)threads;
}

/* OpenBLAS runs single-threaded inside OpenMP threads that split C: its own
 * pool never wakes, so it never spin-waits on a core the next OpenMP region
 * (the attention backends, the fallback) needs. Wide, short products (an
 * LSTM step: 32 x 2048) split by columns, tall ones by rows. */
void attn_gemm(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
               float beta, float *C, int ldc, int threads)
{
#if ATTN_HAVE_OPENBLAS
    openblas_set_num_threads(1);
    const bool by_rows = M >= N || M >= 64 * threads;
    const int parts = threads < 1 ? 1 : threads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(parts) schedule(static, 1) if (parts > 1)
#endif
    for (int t = 0; t < parts; t++) {
        if (by_rows) {
            const int r0 = (int)((long)M * t / parts), r1 = (int)((long)M * (t + 1) / parts);
            if (r1 > r0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, N, K, 1.0f,
                            A + (size_t)r0 * lda, lda, B, ldb, beta, C + (size_t)r0 * ldc, ldc);
        } else {
            const int per = (N + 16 * parts - 1) / (16 * parts) * 16;
            const int c0 = per * t, c1 = c0 + per < N ? c0 + per : N;
            if (c1 > c0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, c1 - c0, K, 1.0f, A,
                            lda, B + c0, ldb, beta, C + c0, ldc);
        }
    }
#else
    attn_gemm_blocked(M, N, K, A, lda, B, ldb, beta, C, ldc, threads);
#endif
}

bool attn_gemm_is_blas(void)
{
    return ATTN_HAVE_OPENBLAS;
}

const char *attn_gemm_name(void)
{
#if ATTN_HAVE_OPENBLAS
    static char name[320];
    if (!name[0])
        snprintf(name, sizeof(name), "OpenBLAS sgemm (%s)", openblas_get_config());
    return name;
#else
    static char name[64];
    if (!name[0])
        snprintf(name, sizeof(name), "blocked GEMM (%s kernels)",
                 attn_isa_name(attn_kernels_best()->isa));
    return name;
#endif
}

void attn_positional_encoding(float *pe, int n, int d)
{
    for (int pos = 0; pos < n; pos++)
        for (int c = 0; c < d; c++) {
            const int i2 = c & ~1;   /* 2i */
            const double angle = pos / pow(10000.0, (double)i2 / d);
            pe[(size_t)pos * d + c] = (float)(c & 1 ? cos(angle) : sin(angle));
        }
}

/* exp through the kernels' exp2, a chunk at a time. */
#define CHUNK 1024

void attn_sigmoid(float *x, size_t n)
{
    const attn_kernels *k = attn_kernels_best();
    float t[CHUNK], y[CHUNK];
    for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
        const int m = n - i0 < CHUNK ? (int)(n - i0) : CHUNK;
        float *xi = x + i0;
#pragma omp simd
        for (int i = 0; i < m; i++)
            t[i] = -LOG2E * xi[i] > 126.0f ? 126.0f : -LOG2E * xi[i];   /* NaN stays NaN */
        k->exp2(y, t, m);
        /* Below -87 the true value is under fp32's smallest normal: 0. */
#pragma omp simd
        for (int i = 0; i < m; i++)
            xi[i] = xi[i] < -87.0f ? 0.0f : 1.0f / (1.0f + y[i]);
    }
}

/* tanh(x) = 2 sigmoid(2x) - 1 loses digits near 0; 1 - 2 / (e^2x + 1) too.
 * Below |x| = 0.125 the odd Taylor series to x^7 is used (error < 1e-9). */
void attn_tanh(float *x, size_t n)
{
    const attn_kernels *k = attn_kernels_best();
    float t[CHUNK], y[CHUNK];
    for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
        const int m = n - i0 < CHUNK ? (int)(n - i0) : CHUNK;
        float *xi = x + i0;
#pragma omp simd
        for (int i = 0; i < m; i++)
            t[i] = 2.0f * LOG2E * fabsf(xi[i]) > 126.0f ? 126.0f : 2.0f * LOG2E * fabsf(xi[i]);
        k->exp2(y, t, m);
#pragma omp simd
        for (int i = 0; i < m; i++) {
            const float a = fabsf(xi[i]), a2 = a * a;
            const float big = 1.0f - 2.0f / (y[i] + 1.0f);
            const float small = a * (1.0f + a2 * (-1.0f / 3 + a2 * (2.0f / 15 + a2 * (-17.0f / 315))));
            const float r = a < 0.125f ? small : big;
            xi[i] = copysignf(r, xi[i]);
        }
    }
}

/* What the AVX-512 kernel files share (kernels_avx512.c and, with
 * AVX512_BF16, kernels_avx512_bf16.c): lane masks, the loads and stores of
 * a tile row's vectors, and the tree that sums 16 accumulators into one
 * vector. Included only by files compiled with the AVX-512 flags. */
#ifndef ATTN_KERNELS_AVX512_H
#define ATTN_KERNELS_AVX512_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define INLINE static inline __attribute__((always_inline))

INLINE __mmask16 lanes(int n)
{
    return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}

/* Vector v of a tile row of NV vectors: the last one may be partial. FULL
 * (a constant) says it is not, so the common case has no masked accesses. */
INLINE __m512 load_v(const float *p, int v, int NV, int FULL, __mmask16 tail)
{
    return v < NV - 1 || FULL ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(tail, p);
}

INLINE void store_v(float *p, int v, int NV, int FULL, __mmask16 tail, __m512 x)
{
    if (v < NV - 1 || FULL)
        _mm512_storeu_ps(p, x);
    else
        _mm512_mask_storeu_ps(p, tail, x);
}

/* One vector of the horizontal sums of 16 accumulators, by a transpose-
 * and-add tree (4 levels, 15 adds). The tree leaves the sum of accumulator
 * 4a + b in lane { 0, 2, 1, 3 }[b] + { 0, 8, 4, 12 }[a] (scatter_4x4's
 * table). */

INLINE __m512 sum16(__m512 a[16])
{
    __m512 b[8], c[4], d[2];
    for (int r = 0; r < 8; r++)
        b[r] = _mm512_add_ps(_mm512_shuffle_f32x4(a[r], a[r + 8], 0x44),
                             _mm512_shuffle_f32x4(a[r], a[r + 8], 0xee));
    for (int r = 0; r < 4; r++)
        c[r] = _mm512_add_ps(_mm512_shuffle_f32x4(b[r], b[r + 4], 0x88),
                             _mm512_shuffle_f32x4(b[r], b[r + 4], 0xdd));
    for (int r = 0; r < 2; r++)
        d[r] = _mm512_add_ps(_mm512_shuffle_ps(c[r], c[r + 2], 0x44),
                             _mm512_shuffle_ps(c[r], c[r + 2], 0xee));
    return _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], 0x88), _mm512_shuffle_ps(d[0], d[1], 0xdd));
}

/* The 16 lanes of sum16 over accumulators indexed key * 4 + query (4 keys
 * by 4 queries) stored to S^T[key][query] (stride ss), the lanes of keys >=
 * nk or queries >= nq left out: one permutation puts each key's 4 scores
 * in one 128-bit lane, stored with a mask of nq lanes. (A scatter of the 16
 * lanes is microcoded on Zen 4: qk_rows ran at 82 GFLOP/s on one core in
 * bench_kernels with it.) NK and NQ are constants of each instance. */
INLINE void scatter_4x4(float *st, ptrdiff_t ss, __m512 sums, const int NK, const int NQ)
{
    /* lane of (key a, query b) in sums: { 0, 2, 1, 3 }[b] + { 0, 8, 4, 12 }[a] */
    static const int32_t from[16] = { 0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15 };
    const __m512 rows = _mm512_permutexvar_ps(_mm512_loadu_si512(from), sums);
    const __mmask8 q = (__mmask8)((1u << NQ) - 1);
    _mm_mask_storeu_ps(st, q, _mm512_castps512_ps128(rows));
    if (NK > 1)
        _mm_mask_storeu_ps(st + ss, q, _mm512_extractf32x4_ps(rows, 1));
    if (NK > 2)
        _mm_mask_storeu_ps(st + 2 * ss, q, _mm512_extractf32x4_ps(rows, 2));
    if (NK > 3)
        _mm_mask_storeu_ps(st + 3 * ss, q, _mm512_extractf32x4_ps(rows, 3));
}

#endif

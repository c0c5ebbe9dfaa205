/* The AVX-512 kernels' readers of K or V rows in their storage
 * (rows_of.h: fp32, bf16, fp16, q8_0, q4_0, fp8) and the P.V register
 * tile over them, as inlined templates: what kernels_avx512.c (pv, pv_t,
 * dequant_rows), kernels_avx512_qk_rows.c and kernels_avx512_pv_rows.c
 * share. Decoding's kernels on stored rows are files of their own so that
 * the three compile side by side: as one file the AVX-512 kernels took
 * 190 s to compile under the sanitizers on the 2-core Skylake-SP Xeon (44 s
 * without), the longest step of scripts/test's sanitizer build. */
#ifndef ATTN_KERNELS_AVX512_ROWS_H
#define ATTN_KERNELS_AVX512_ROWS_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "kernels_avx512.h"
#include "rows_of.h"

#define ROWS 6   /* broadcast rows per register tile */
#define VECS 4   /* zmm per tile row: 64 floats */
#define ROWS_WIDE 16   /* pv_wide's: a tile row for each query of a decoding tile */

INLINE __m512 widen(__m256i h, const int ST)
{
    return ST == ST_BF16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                         : _mm512_cvtph_ps(h);
}

/* 16 fp8 codes read back (dequant_rows says how) without the scale: e5m2
 * its value, e4m3 its value times 2^-8 (fp8_mult has the factor back);
 * NONAN: no NaN blend, a NaN code read as a finite value (the caller sets
 * the NaN results). */
INLINE __m512 fp8_raw(__m128i b, const int E4, const int NONAN)
{
    if (!E4)
        return _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(b), 8));
    /* e4m3's sign on top and its 7 magnitude bits below fp16's exponent's
     * top bit: an fp16 of its value times 2^-8 (bias 15 against 7), exactly,
     * subnormals too; the NaN codes (magnitude 0x7f) an fp16 NaN. */
    const __m256i w = _mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(b), 7),
                                       _mm256_set1_epi16((short)0xbf80));
    if (NONAN)
        return _mm512_cvtph_ps(w);
    const __mmask16 nan = _mm_cmpeq_epi8_mask(_mm_or_si128(b, _mm_set1_epi8((char)0x80)),
                                              _mm_set1_epi8((char)0xff));
    return _mm512_cvtph_ps(_mm256_mask_mov_epi16(w, nan, _mm256_set1_epi16(0x7e00)));
}

/* The e4m3 NaN codes (magnitude 0x7f) among bytes [c, c + 64) of a row,
 * one bit each (none past d). */
#define FP8_NAN_SPAN 64
INLINE uint64_t fp8_nan_bits(const uint8_t *row, int c, int d)
{
    const __mmask64 t = d - c >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (d - c)) - 1;
    const __m512i b = _mm512_maskz_loadu_epi8(t, row + c);
    return _mm512_cmpeq_epi8_mask(_mm512_or_si512(b, _mm512_set1_epi8((char)0x80)),
                                  _mm512_set1_epi8((char)0xff));
}

/* Whether bytes [0, d) of a row hold an e4m3 NaN code. */
INLINE int fp8_nan_row(const uint8_t *row, int d)
{
    uint64_t any = 0;
    for (int c = 0; c < d; c += 64)
        any |= fp8_nan_bits(row, c, d);
    return any != 0;
}

/* Whether any of rows rows, stride bytes apart, holds an e4m3 NaN code in
 * bytes [0, d). */
INLINE int fp8_nan_rows(const uint8_t *x, ptrdiff_t stride, int rows, int d)
{
    for (int r = 0; r < rows; r++)
        if (fp8_nan_row(x + r * stride, d))
            return 1;
    return 0;
}

/* 16 codes times the scale (m: fp8_mult's). */
INLINE __m512 fp8_vec(__m128i b, const int E4, const int NONAN, __m512 m)
{
    return _mm512_mul_ps(fp8_raw(b, E4, NONAN), m);
}

/* Values c0 + h .. c0 + h + 15 of a quantized row (c0 a multiple of 32,
 * h 0 or 16, a constant; for fp8, lanes past t zero), read back: q8_0 and
 * q4_0 the half h of block c0 / 32; fp8 as fp8_raw reads it, not yet times
 * fp8_mult (the head's one factor: the decoding kernels, its only readers,
 * apply it to their sums) and without e4m3's NaN blend (they set the NaN
 * results after: qk_rows_q, rows_entry.h). */
INLINE __m512 load_quant(const uint8_t *row, int c0, const int h, __mmask16 t, int full,
                         const int ST)
{
    if (ST == ST_E4M3 || ST == ST_E5M2) {
        const __m128i b = full ? _mm_loadu_si128((const __m128i *)(row + c0 + h))
                               : _mm_maskz_loadu_epi8(t, row + c0 + h);
        return fp8_raw(b, ST == ST_E4M3, 1);
    }
    const uint8_t *blk = row + (c0 >> 5) * (ST == ST_Q8_0 ? 34 : 18);
    short s;
    memcpy(&s, blk, sizeof(s));
    const __m512 d = _mm512_cvtph_ps(_mm256_set1_epi16(s));
    __m512i n;
    if (ST == ST_Q8_0) {
        n = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(blk + 2 + h)));
    } else {
        const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(blk + 2)));
        n = _mm512_sub_epi32(h ? _mm512_srli_epi32(b, 4)
                               : _mm512_and_si512(b, _mm512_set1_epi32(0xf)),
                             _mm512_set1_epi32(8));
    }
    return _mm512_mul_ps(_mm512_cvtepi32_ps(n), d);
}

/* 16 values of row r from column c0 + h (c0 a multiple of 32, h 0 or 16, a
 * constant), lanes past t zero where !full (fp8: load_quant's, without the
 * head's factor). */
INLINE __m512 row_load(const rows_of *x, ptrdiff_t r, int c0, const int h, __mmask16 t,
                       int full, const int ST)
{
    if (ST_QUANT(ST))
        return load_quant(x->q + r * x->stride, c0, h, t, full, ST);
    const ptrdiff_t at = r * x->stride + c0 + h;
    if (ST == ST_F32)
        return full ? _mm512_loadu_ps(x->f + at) : _mm512_maskz_loadu_ps(t, x->f + at);
    return widen(full ? _mm256_loadu_si256((const __m256i *)(x->h + at))
                      : _mm256_maskz_loadu_epi16(t, x->h + at), ST);
}

/* V's rows v are stored as ST says; the tile is their columns c0 + H0..
 * (c0 a multiple of 32; H0 0, or 16 for a tile of one vector that starts
 * at the second half of that 32-value block, as pv_wide's 16 x 16). fp8's
 * rows are summed as read back without the head's factor, which the sums
 * take once at the end (o = alpha o + fp8_mult P.V): one multiply a tile
 * instead of one a vector of V. */
INLINE void pv_tile(float *restrict o, ptrdiff_t os, const float *restrict pt, ptrdiff_t ps,
                    rows_of v, int c0, const float *restrict alpha, int nk, const int R,
                    const int NV, const int FULL, __mmask16 tail, const int PF, const int ST,
                    const int TR, ptrdiff_t ahead, const int H0, unsigned pfm)
{
    __m512 acc[ROWS_WIDE][VECS];
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
        const __m512 a = _mm512_set1_ps(alpha[r]);
#pragma GCC unroll 4
        for (int c = 0; c < NV; c++)
            acc[r][c] = ST_FP8(ST) ? _mm512_setzero_ps()
                                   : _mm512_mul_ps(a, load_v(o + r * os + 16 * c, c, NV, FULL,
                                                             tail));
    }
    for (int j = 0; j < nk; j++) {
        __m512 b[VECS];
        if (PF)   /* few rows (decoding): V streams from memory; see PF_KEYS */
#pragma GCC unroll 4
            for (int c = H0 / 16; c < NV + H0 / 16; c++)
                /* 16-bit or quantized: one per 32 values */
                if ((ST == ST_F32 || !(c & 1)) && (pfm >> (c - H0 / 16) & 1))
                    _mm_prefetch(row_addr(&v, j, c0 + 16 * c, ahead, ST), _MM_HINT_T2);
#pragma GCC unroll 4
        for (int c = 0; c < NV; c++) {
            const int h = c + H0 / 16;   /* the vector's half of a 32-value block */
            b[c] = row_load(&v, j, c0 + 32 * (h >> 1), 16 * (h & 1), tail, c < NV - 1 || FULL,
                            ST);
        }
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
            /* TR: the weights not transposed (pv_t), row r's at pt[r][j] */
            const __m512 p = _mm512_set1_ps(TR ? pt[r * ps + j] : pt[j * ps + r]);
#pragma GCC unroll 4
            for (int c = 0; c < NV; c++)
                acc[r][c] = _mm512_fmadd_ps(p, b[c], acc[r][c]);
        }
    }
    const __m512 mult = _mm512_set1_ps(ST_FP8(ST) ? fp8_mult(v.scale, ST == ST_E4M3) : 1.0f);
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < NV; c++) {
            if (ST_FP8(ST))
                acc[r][c] = _mm512_fmadd_ps(
                    acc[r][c], mult,
                    _mm512_mul_ps(_mm512_set1_ps(alpha[r]),
                                  load_v(o + r * os + 16 * c, c, NV, FULL, tail)));
            store_v(o + r * os + 16 * c, c, NV, FULL, tail, acc[r][c]);
        }
}

#define PVT(R, NV, F, PF) \
    pv_tile(out, os, p, ps, v, c0, a, nk, R, NV, F, tail, PF, ST, TR, pf, 0, pfm)
/* q8_0 and q4_0 V is a multiple of 32 wide (the formats' rule): strips of
 * 2 or 4 whole vectors, the only tiles compiled for them. The six others
 * were never run; without them kernels_avx512_pv_rows.c compiles in 135 s
 * instead of 159 under the sanitizers (scripts/test's build-san/; one job,
 * the 2-core Skylake-SP Xeon), kernels_avx512_qk_rows.c in 75 instead of
 * 89 (qk_rows_any: the same for K). Not kept: for every format, a partial
 * strip's last vector in a tile of its own, its whole vectors in their
 * whole tile (5 tile shapes instead of 8, 73 s instead of 165): GCC then
 * kept the 4-row tile's tests of pfm on the stack, two loads a key in its
 * loop, and pv16 with prefetches took 1.28x the time at 4 queries of bf16,
 * 1.06-1.12x at 8 (bench_kernels, best of 28 rounds, the two builds in
 * turn). */
#define PV_TILE_PF(R, PF) do {                                                 \
        if (ST == ST_Q8_0 || ST == ST_Q4_0) {                                      \
            if (nv == 2)                                                           \
                PVT(R, 2, 1, PF);                                                  \
            else                                                                   \
                PVT(R, 4, 1, PF);                                                  \
            break;                                                                 \
        }                                                                          \
        switch (tail == 0xffff ? nv + 4 : nv) {                                    \
        case 1: PVT(R, 1, 0, PF); break;                                           \
        case 2: PVT(R, 2, 0, PF); break;                                           \
        case 3: PVT(R, 3, 0, PF); break;                                           \
        case 4: PVT(R, 4, 0, PF); break;                                           \
        case 5: PVT(R, 1, 1, PF); break;                                           \
        case 6: PVT(R, 2, 1, PF); break;                                           \
        case 7: PVT(R, 3, 1, PF); break;                                           \
        default: PVT(R, 4, 1, PF); break;                                          \
        }                                                                          \
    } while (0)
/* pf: V streams from memory (decoding): the row pf bytes ahead (the
 * table's pf_keys, rows_of.h) is prefetched; the groups of 6 rows share
 * the prefetches of each row's vectors (pfm, pv_any), and then find it in
 * cache. */
#define PV_TILE(R) do {                                                        \
        if (pf && pfm)                                                         \
            PV_TILE_PF(R, 1);                                                  \
        else                                                                   \
            PV_TILE_PF(R, 0);                                                  \
    } while (0)

/* P.V of nq = 8, 12 or 16 queries (pv_wide_fits) in one register tile,
 * each row of V read back once for all of them: 16 x 16 (two passes per
 * 32 values, the block halves of a quantized row), 12 x 32 or 8 x 32. In
 * rows of 6 (pv_any's tile), 16 queries read each row back three times;
 * a 16-bit row's widening (two instructions a vector) or a quantized
 * one's (three) then costs a third or more of the FMAs' issue slots. */
#define PV_WIDE(R, NV, H0) do {                                                          \
        if (pf)                                                                          \
            pv_tile(o + c0 + (H0), os, pt, ps, v, c0, alpha, nk, R, NV, 1, 0xffff, 1, ST, 0, \
                    pf, H0, ~0u);                                                        \
        else                                                                             \
            pv_tile(o + c0 + (H0), os, pt, ps, v, c0, alpha, nk, R, NV, 1, 0xffff, 0, ST, 0, \
                    0, H0, 0);                                                           \
    } while (0)

INLINE int pv_wide_fits(int nq, int dv, const int ST, const int TR)
{
    return ST != ST_F32 && !TR && dv % 32 == 0 && (nq == 8 || nq == 12 || nq == 16);
}

INLINE void pv_wide_any(float *restrict o, ptrdiff_t os, const float *restrict pt, ptrdiff_t ps,
                        rows_of v, const float *restrict alpha, int nq, int nk, int dv,
                        ptrdiff_t pf, const int ST)
{
    for (int c0 = 0; c0 < dv; c0 += 32) {
        if (nq == 16) {
            PV_WIDE(16, 1, 0);
            PV_WIDE(16, 1, 16);
        } else if (nq == 12) {
            PV_WIDE(12, 2, 0);
        } else {
            PV_WIDE(8, 2, 0);
        }
    }
}

/* Not inlined: inlined, the rows of 6 and fewer, compiled beside it, ran
 * 3% slower at 4 queries of bf16. A function of its own for each format,
 * named, not left to GCC's cloning of one function over ST: whether GCC
 * cloned it depended on the size of its callers, and in a build with
 * smaller ones it did not; ST then tested at run time, pv16 took 1.07x
 * the time and pv_q 1.26x (q8_0) at 16 queries (bench_kernels, the 2-core
 * Skylake-SP Xeon, best of 28 rounds, the two builds in turn). */
#define PV_WIDE_FN(NAME, ST)                                                                   \
    static __attribute__((noinline, unused)) void NAME(                                        \
        float *restrict o, ptrdiff_t os, const float *restrict pt, ptrdiff_t ps, rows_of v,     \
        const float *restrict alpha, int nq, int nk, int dv, ptrdiff_t pf)                      \
    {                                                                                          \
        pv_wide_any(o, os, pt, ps, v, alpha, nq, nk, dv, pf, ST);                              \
    }
PV_WIDE_FN(pv_wide_f16, ST_F16)
PV_WIDE_FN(pv_wide_bf16, ST_BF16)
PV_WIDE_FN(pv_wide_q8_0, ST_Q8_0)
PV_WIDE_FN(pv_wide_q4_0, ST_Q4_0)
PV_WIDE_FN(pv_wide_e4m3, ST_E4M3)
PV_WIDE_FN(pv_wide_e5m2, ST_E5M2)

typedef void pv_wide_fn(float *restrict, ptrdiff_t, const float *restrict, ptrdiff_t, rows_of,
                        const float *restrict, int, int, int, ptrdiff_t);

/* ST's pv_wide (a constant once inlined: a direct call). */
INLINE pv_wide_fn *pv_wide(const int ST)
{
    return ST == ST_F16 ? pv_wide_f16 : ST == ST_BF16 ? pv_wide_bf16 : ST == ST_Q8_0 ? pv_wide_q8_0
           : ST == ST_Q4_0 ? pv_wide_q4_0 : ST == ST_E4M3 ? pv_wide_e4m3 : pv_wide_e5m2;
}

/* The vectors of a V row that the g-th of `groups` row groups prefetches
 * (bit c: the tile's vector c): those with c = g mod groups, so that the
 * groups share a row's lines, each fetched once, and the fetches spread
 * over the passes. All in the first group, as before, a tile's lines were
 * asked for within a twelfth of its P.V at 32 queries. On the 2-core Intel
 * Xeon Skylake-SP, one thread, 32 queries against fp32 K/V streamed from
 * memory in 192-key tiles, d = 128 (old and new builds alternating, medians
 * of 8 rounds): P.V alone 74 -> 81 GFLOP/s, the tile's Q.K^T, softmax and
 * P.V 77-79 -> 81-85. Whole decodes (H = 32, d = 128, Nk = 32K, B = 1, 2
 * threads, medians of 15 or 9 interleaved processes): Hkv = 1 fp32
 * 3.66 -> 3.40 ms, bf16 3.61 -> 3.57; Hkv = 8 fp32 at Nq = 4 (3 groups)
 * 20.46 -> 19.42, at Nq = 2 (2 groups) 17.73 -> 17.83. */
INLINE unsigned pv_pf_mask(int g, int groups)
{
    unsigned m = 0;
    for (int c = g; c < VECS; c += groups)
        m |= 1u << c;
    return m;
}

/* A q8_0 or q4_0 V's block scales are applied to each vector of V as it is
 * read back (load_quant). Not kept: the weights multiplied by the scales
 * first, w(j, b, r) = p(j, r) d(j, b) for 32 keys at a time, and V's
 * integers converted with no multiply. On the 2-core Intel Xeon
 * (Skylake-SP), bench_kernels' pv_q of 48 keys, d = 128, 4 queries, q8_0:
 * 868 ns as here, 1009 with the scales read one by one, 1088 with 16 keys'
 * scales gathered at once (vpgatherdd); perf put 710 of a 1130 ns call on
 * the tiles alone, where pv16 takes 598 ns over bf16 rows.
 * Nor, in prefill (fp32 V, 64 queries x 192 keys: V's 64-column strip is
 * 48 KB, over L1), the keys in blocks of 24 to 96, every row group over a
 * block before the next, so that its rows of V and P^T stay in L1: on the
 * Skylake-SP Xeon, one thread, the two alternating 40 times in one
 * process, best of each, the blocks took 1.01-1.24x the time (d = 64 and
 * 128), so P.V's 85% of the FMA peak there (bench_kernels) is not L2's
 * bandwidth. */
INLINE void pv_any(float *restrict o, ptrdiff_t o_stride, const float *restrict pt,
                   ptrdiff_t pt_stride, rows_of v, const float *restrict alpha, int nq, int nk,
                   int dv, ptrdiff_t pf, const int ST, const int TR)
{
    const ptrdiff_t os = o_stride, ps = pt_stride;
    if (pv_wide_fits(nq, dv, ST, TR)) {
        pv_wide(ST)(o, os, pt, ps, v, alpha, nq, nk, dv, pf);
        return;
    }
    const int groups = (nq + ROWS - 1) / ROWS;
    /* Rows of 6, but 1 or 2 queries left after them go with the 6 before
     * in two tiles (7 = 4 + 3, 8 = 4 + 4): a tile of 1 or 2 rows has 4 or
     * 8 accumulators, each waiting on the FMA before it. On the 2-core
     * Zen 5 EPYC (bench_kernels --bench pv, fp32, 48 keys of d = 128, the
     * two builds in turn, 3 runs each): 8 queries 453-486 ns against
     * 497-505, 32 queries 1820-1841 against 1848-1884; 16 the same. */
    const int whole = nq / ROWS - (nq > ROWS && nq % ROWS && nq % ROWS < 3);
    for (int c0 = 0; c0 < dv; c0 += 16 * VECS) {
        const int w = dv - c0 < 16 * VECS ? dv - c0 : 16 * VECS;
        const int nv = (w + 15) / 16;
        const __mmask16 tail = lanes(w - 16 * (nv - 1));
        int i = 0, g = 0;
        for (; g < whole; g++, i += ROWS) {
            float *out = o + i * os + c0;
            const float *p = TR ? pt + i * ps : pt + i, *a = alpha + i;
            const unsigned pfm = pv_pf_mask(g, groups);
            PV_TILE(ROWS);
        }
        for (; i < nq; g++) {
            const int r = nq - i > ROWS ? 4 : nq - i;
            float *out = o + i * os + c0;
            const float *p = TR ? pt + i * ps : pt + i, *a = alpha + i;
            const unsigned pfm = pv_pf_mask(g, groups);
            switch (r) {
            case 1: PV_TILE(1); break;
            case 2: PV_TILE(2); break;
            case 3: PV_TILE(3); break;
            case 4: PV_TILE(4); break;
            default: PV_TILE(5); break;
            }
            i += r;
        }
    }
}

#endif

/* AVX2 + FMA versions (and F16C, which every AVX2 CPU has). This file alone
 * is compiled with -mavx2 -mfma -mf16c; nothing here runs unless the CPU
 * reports all three.
 *
 * With 16 ymm registers the tiles are 6 x 16: 12 accumulators, 2 vector
 * loads and one broadcast per step. Tails use maskload/maskstore lanes.
 * Decoding's kernels read K and V in their storage (rows_of.h: fp32,
 * 16-bit, quantized), widened or read back in registers 8 values at a
 * time, and prefetch the rows ahead as the AVX-512 ones do, with hint T0:
 * on the 2-core Zen 3 EPYC (H = 32, Hkv = 8, d = 128, Nk = 32K, 2
 * threads, 5 interleaved runs) fp32 took 15.4 ms against 16.4 with T2,
 * bf16 10.9 against 12.6. Before these kernels the AVX2 table ran C's
 * for 16-bit and quantized K/V: bf16 decoding took 114 ms there, 0.18x
 * the fp32 time, and q8_0 586 ms.
 *
 * Tried there and not kept: bf16 rows read 16 values a load, the even ones
 * shifted into place and the odd ones masked (the queries permuted to
 * match), took qk_rows16's 48 keys x 4 queries in L1 from 713-742 ns to
 * 871-880 and left pv16 within the noise; P.V over blocks of 8 keys (each
 * block's rows read whole rather than the tile one 16-column strip at a
 * time) took a tile streamed from memory (one thread, best of 30, five
 * runs) 2050-2650 ns against 2540-2740, yet whole decodes no less time
 * (bf16, Nk = 32K, 10-12 interleaved rounds: medians 10.7 ms against 10.3
 * on 2 threads, 13.9 against 14.7 on one).
 *
 * The quantized caches' scales stay out of the inner loops (the arithmetic
 * in docs/quantized.md): 48 keys x 4 queries of d = 128 in L1 there,
 * medians of 300 batches, old and new alternating in one process, three
 * runs: fp8e5m2 qk_rows_q 1028 -> 957-996 ns, pv_q 932 -> 812; fp8e4m3
 * 1330 -> 1135 and 1141 -> 1001-1029 (with its NaN search); pv_q q8_0
 * 966 -> 772, q4_0 1114 -> 915. Not kept: q4_0's (n - 8) d as one FMA,
 * n d - 8 d (bit for bit the same value), took qk_rows_q 1055 -> 1100 ns
 * and pv_q 1140 -> 1215: the subtraction it saves runs on an integer
 * pipe, the multiply it adds on an FMA one. Nor, for qk_rows and
 * qk_rows16, Q's vectors held in registers (an empty asm on each, so that
 * GCC cannot fold their loads into the FMAs again for the second key):
 * bf16 715 -> 763 ns, fp32 652 -> 682, q4_0 1444 -> 1863; nor bf16
 * widened by vbroadcasti128 and vpshufb instead of vpmovzxwd and vpslld
 * (1-2%, inside the noise); nor q4_0's high nibbles as the byte
 * sign-extended, its top bit flipped and shifted right arithmetically (n
 * - 8, one instruction fewer): qk_rows_q 1460-1489 -> 1585-1595 ns, a
 * byte's two nibbles no longer sharing one widening load. Nor P.V of 4
 * rows reading fp32 V row by row, two keys a step, with the accumulators
 * in O rather than in registers (a stand-alone loop of that shape read V
 * from memory faster than 16-column strips do): fp32 decoding (H = 32,
 * Hkv = 8, Nk = 32K, 2 threads, two runs of 6 interleaved rounds) took
 * 12.27 and 12.29 ms against 12.60 and 12.67, a gain inside the noise,
 * for a path the 16-bit and quantized V would each need again. Nor P.V
 * of 1 to 4 rows in strips of 24 to 48 columns (12 accumulators for 3 or
 * 4 rows, where 16 columns give 8, each waiting on its FMA's latency
 * every key): bench_kernels' 4 columns, two runs, old and new in turn,
 * pv 556 and 610 ns against 632 and 567, pv16 640 and 648 against 621
 * and 634, 8 columns (6 rows, then 2 in 32 columns) 1279 and 1339 against
 * 1562 and 1841; decoding (H = 32, Hkv = 8, Nk = 32K, 2 threads, medians
 * of 6 interleaved rounds) fp32 12.46 ms against 12.68, bf16 7.18 against
 * 7.01. A run of bench_kernels just before those had put the same 4
 * columns at 937 ns (pv) and 1172 (pv16): only kernels timed in turn in
 * one sitting compare. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "rows_of.h"

#define ROWS 6
#define VECS 2   /* ymm per tile row: 16 floats */

/* How far ahead decoding prefetches for these kernels (attn_kernels.pf_keys,
 * rows_of.h): a quarter of the AVX-512 table's PF_KEYS, 24 KB of each of K
 * and V ahead instead of 96, so that what is prefetched is still in L1
 * (32 KB on the AVX2 cores) when the kernels reach it. On the 2-core Zen 3
 * EPYC (H = 32, Hkv = 8, d = 128, Nk = 32K, 2 threads, medians of 12
 * interleaved runs each) bf16 took 8.3 ms against 9.0 with PF_KEYS, fp32
 * 14.0 against 14.4, q4_0 (compute-bound) 8.5 against 8.4; 16 keys ahead
 * against PF_KEYS, 14 runs: bf16 8.1 against 9.1, fp32 15.0 against 15.3.
 * Pages of 16 (Llama-3.1-8B, bf16, B = 1, 6 runs) took 8.1 ms against 10.3,
 * the contiguous cache 7.8 both ways. Not kept: 16-bit rows 32 ahead
 * rather than twice 48 (that Llama shape, bf16, Nk = 32K, 8 interleaved
 * runs): the contiguous cache 7.03 ms against 7.22, but pages of 16 8.26
 * against 7.93 and pages of 64 8.45 against 7.88. */
#define PF_KEYS_AVX2 48

#define INLINE static inline __attribute__((always_inline))

/* All-ones in the first n lanes (n in [0, 8]). */
INLINE __m256i lanes(int n)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}

INLINE __m256 load(const float *p, __m256i mask, int full)
{
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask);
}

INLINE void store(float *p, __m256i mask, int full, __m256 x)
{
    if (full)
        _mm256_storeu_ps(p, x);
    else
        _mm256_maskstore_ps(p, mask, x);
}

/* Lanes [0, n) of x to p (n in 1..8) by plain stores: vmaskmovps is slow
 * to store on AMD's cores (about 12 cycles on Zen 3), which matters where
 * every row of a narrow decoding tile is stored through it. */
INLINE void store_n(float *p, int n, __m256 x)
{
    if (n >= 8) {
        _mm256_storeu_ps(p, x);
        return;
    }
    __m128 h = _mm256_castps256_ps128(x);
    if (n >= 4) {
        _mm_storeu_ps(p, h);
        h = _mm256_extractf128_ps(x, 1);
        p += 4;
        n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)p, h);
        h = _mm_movehl_ps(h, h);
        p += 2;
        n -= 2;
    }
    if (n)
        _mm_store_ss(p, h);
}

/* Storage of decoding's K and V rows (rows_of.h), 8 values at a time. */

/* Bytes [0, n) of p in a zeroed vector (n <= 16): the tail of a row, where
 * AVX2 has no masked loads narrower than 32 bits. */
INLINE __m128i tail_bytes(const void *p, int n)
{
    uint8_t t[16] = { 0 };
    memcpy(t, p, (size_t)n);
    return _mm_loadu_si128((const __m128i *)t);
}

/* bf16: the bits shifted into the upper half; fp16: vcvtph2ps (F16C). */
INLINE __m256 widen(__m128i h, const int ST)
{
    return ST == ST_BF16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
                         : _mm256_cvtph_ps(h);
}

/* 8 fp8 codes (the low 8 bytes of b) read back without the scale: e5m2
 * its value (the code as the upper byte of an fp16), e4m3 its value times
 * 2^-8 (its sign on top and its 7 magnitude bits below fp16's exponent's
 * top bit: an fp16, exactly, subnormals too; fp8_mult has the factor
 * back); NONAN: an e4m3 NaN code read as a finite value (the caller sets
 * the NaN results), else an fp16 NaN. */
INLINE __m256 fp8_raw(__m128i b, const int E4, const int NONAN)
{
    if (!E4)
        return _mm256_cvtph_ps(_mm_slli_epi16(_mm_cvtepu8_epi16(b), 8));
    const __m128i w = _mm_and_si128(_mm_slli_epi16(_mm_cvtepi8_epi16(b), 7),
                                    _mm_set1_epi16((short)0xbf80));
    if (NONAN)
        return _mm256_cvtph_ps(w);
    const __m128i nan = _mm_cvtepi8_epi16(_mm_cmpeq_epi8(_mm_or_si128(b, _mm_set1_epi8((char)0x80)),
                                                         _mm_set1_epi8((char)0xff)));
    return _mm256_cvtph_ps(_mm_blendv_epi8(w, _mm_set1_epi16(0x7e00), nan));
}

/* The e4m3 NaN codes (magnitude 0x7f) among bytes [c, c + 32) of a row, one
 * bit each (none past d). */
#define FP8_NAN_SPAN 32
INLINE uint64_t fp8_nan_bits(const uint8_t *row, int c, int d)
{
    __m256i b;
    if (d - c >= 32) {
        b = _mm256_loadu_si256((const __m256i *)(row + c));
    } else {
        uint8_t t[32] = { 0 };
        memcpy(t, row + c, (size_t)(d - c));
        b = _mm256_loadu_si256((const __m256i *)t);
    }
    return (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(
        _mm256_or_si256(b, _mm256_set1_epi8((char)0x80)), _mm256_set1_epi8((char)0xff)));
}

/* Whether bytes [0, d) of a row hold an e4m3 NaN code. */
INLINE int fp8_nan_row(const uint8_t *row, int d)
{
    uint64_t any = 0;
    for (int c = 0; c < d; c += 32)
        any |= fp8_nan_bits(row, c, d);
    return any != 0;
}

/* Whether any of rows rows, stride bytes apart, holds an e4m3 NaN code in
 * bytes [0, d): the largest of the codes with their sign bit set is 0xff
 * only if one is. Two instructions per 32 bytes where fp8_nan_row takes
 * five: the decoding kernels ask this of every tile, and search row by
 * row only where it says yes. Its loop over a row unrolled by 4 took
 * qk_rows_q e4m3 (48 keys x 4 queries, d = 128, in L1, the header's way)
 * 1134-1189 -> 1083-1138 ns, pv_q 1007-1013 -> 986-988. */
INLINE int fp8_nan_rows(const uint8_t *x, ptrdiff_t stride, int rows, int d)
{
    const __m256i top = _mm256_set1_epi8((char)0x80);
    __m256i mx = top;
    for (int r = 0; r < rows; r++) {
        const uint8_t *row = x + r * stride;
        int c = 0;
#pragma GCC unroll 4
        for (; c + 32 <= d; c += 32)
            mx = _mm256_max_epu8(mx, _mm256_or_si256(
                                         _mm256_loadu_si256((const __m256i *)(row + c)), top));
        if (c < d) {
            uint8_t t[32] = { 0 };
            memcpy(t, row + c, (size_t)(d - c));
            mx = _mm256_max_epu8(mx, _mm256_or_si256(_mm256_loadu_si256((const __m256i *)t),
                                                     top));
        }
    }
    return _mm256_movemask_epi8(_mm256_cmpeq_epi8(mx, _mm256_set1_epi8((char)0xff))) != 0;
}

/* Values c0 + h .. c0 + h + 7 of a quantized row (c0 a multiple of 32, h
 * a multiple of 8 below 32; for fp8, only the n = d - c0 - h < 8 values
 * left where !full, the lanes past them zero), read back: q8_0 and q4_0
 * the eighth h / 8 of block c0 / 32, times its scale; fp8 as fp8_raw
 * reads it, not yet times fp8_mult (the head's one factor: the decoding
 * kernels, its only readers, apply it to their sums), e4m3 without its
 * NaN codes (they set the NaN results after). */
INLINE __m256 load_quant(const uint8_t *row, int c0, int h, int n, int full, const int ST)
{
    if (ST_FP8(ST)) {
        const __m128i b = full ? _mm_loadl_epi64((const __m128i *)(row + c0 + h))
                               : tail_bytes(row + c0 + h, n);
        return fp8_raw(b, ST == ST_E4M3, 1);
    }
    const uint8_t *blk = row + (c0 >> 5) * (ST == ST_Q8_0 ? 34 : 18);
    short s;
    memcpy(&s, blk, sizeof(s));
    const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16(s));
    if (ST == ST_Q8_0)
        return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                 _mm_loadl_epi64((const __m128i *)(blk + 2 + h)))), d);
    /* byte i holds value i in its low nibble, value i + 16 in its high one */
    const __m256i b =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(blk + 2 + (h & 15))));
    const __m256i q = _mm256_sub_epi32(
        _mm256_and_si256(_mm256_srl_epi32(b, _mm_cvtsi32_si128((h & 16) >> 2)),
                         _mm256_set1_epi32(0xf)),
        _mm256_set1_epi32(8));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(q), d);
}

/* 8 values of row r of x from column c0 + h (c0 a multiple of 32, h a
 * multiple of 8 below 32), stored as ST says, widened to fp32; where
 * !full only the n < 8 values left (t: their lanes), the others zero. */
INLINE __m256 row_load(const rows_of *x, ptrdiff_t r, int c0, int h, __m256i t, int n, int full,
                       const int ST)
{
    if (ST_QUANT(ST))
        return load_quant(x->q + r * x->stride, c0, h, n, full, ST);
    const ptrdiff_t at = r * x->stride + c0 + h;
    if (ST == ST_F32)
        return load(x->f + at, t, full);
    return widen(full ? _mm_loadu_si128((const __m128i *)(x->h + at))
                      : tail_bytes(x->h + at, 2 * n), ST);
}

/* Whether the vector of values c0 + h .. c0 + h + 7 (c0 a multiple of 32,
 * h of 8) starts a new 64-byte line's worth of its row (fp32: every 16
 * values; 16-bit, q8_0: every 32, a block; q4_0, fp8: every 64): where
 * decoding's kernels prefetch, one prefetch per line of the stream. */
INLINE int pf_here(int c0, const int h, const int ST)
{
    if (ST == ST_F32)
        return !(h & 15);
    if (ST == ST_F16 || ST == ST_BF16 || ST == ST_Q8_0)
        return !h;
    return !h && !(c0 & 63);
}

/* One column c of K against row c of Q^T: R x NV vectors of scores. */
INLINE void qk_step(__m256 acc[][VECS], const float *restrict k, ptrdiff_t ks,
                    const float *restrict qt, ptrdiff_t qs, int c, const int R, const int NV,
                    const int FULL, __m256i tail)
{
    __m256 b[VECS];
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++)
        b[v] = load(qt + c * qs + 8 * v, tail, v < NV - 1 || FULL);
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        const __m256 a = _mm256_broadcast_ss(k + r * ks + c);
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            acc[r][v] = _mm256_fmadd_ps(a, b[v], acc[r][v]);
    }
}

INLINE void qk_tile(float *restrict st, ptrdiff_t ss, const float *restrict k, ptrdiff_t ks,
                    const float *restrict qt, ptrdiff_t qs, int dk,
                    const int R, const int NV, const int FULL, __m256i tail, const int PF,
                    ptrdiff_t ahead)
{
    __m256 acc[ROWS][VECS];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            acc[r][v] = _mm256_setzero_ps();
    /* With PF, steps of 16 columns of K, each after its prefetches: the
     * loop over c stays the loop of !PF, not one with a test and the
     * prefetches' addresses carried through every step (kernels_avx512.c
     * has the measurements). */
    if (!PF)
        for (int c = 0; c < dk; c++)
            qk_step(acc, k, ks, qt, qs, c, R, NV, FULL, tail);
    for (int c0 = 0; PF && c0 < dk; c0 += 16) {
#pragma GCC unroll 8
        for (int r = 0; r < R; r++)   /* one line of each row, `ahead` bytes on */
            _mm_prefetch((const char *)((uintptr_t)k + (uintptr_t)((r * ks + c0) *
                                                                 (ptrdiff_t)sizeof(float) +
                                                                 ahead)),
                         _MM_HINT_T0);
        const int ce = c0 + 16 < dk ? c0 + 16 : dk;
        for (int c = c0; c < ce; c++)
            qk_step(acc, k, ks, qt, qs, c, R, NV, FULL, tail);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            store(st + r * ss + 8 * v, tail, v < NV - 1 || FULL, acc[r][v]);
}

#define QK_TILE_PF(R, PF) do {                                                             \
        if (nv == 2 && full) qk_tile(s, ss, kr, ks, q, qs, dk, R, 2, 1, tail, PF, pf); \
        else if (nv == 2)    qk_tile(s, ss, kr, ks, q, qs, dk, R, 2, 0, tail, PF, pf); \
        else                 qk_tile(s, ss, kr, ks, q, qs, dk, R, 1, 0, tail, PF, pf); \
    } while (0)
#define QK_TILE(R) do {                                                        \
        if (pf && i0 == 0)                                                     \
            QK_TILE_PF(R, 1);                                                  \
        else                                                                   \
            QK_TILE_PF(R, 0);                                                  \
    } while (0)

/* pf: K streams from memory once (decoding): the first 16 columns'
 * register tiles prefetch the rows pf bytes ahead of their own, a line of
 * each row every 16 steps, in among their FMAs (kernels_avx512.c's qk
 * says why not a burst per tile). */
static decl_qk_fn(qk_avx2)
{
    const ptrdiff_t ss = st_stride, ks = k_stride, qs = qt_stride;
    for (int i0 = 0; i0 < nq; i0 += 8 * VECS) {
        const int w = nq - i0 < 8 * VECS ? nq - i0 : 8 * VECS;
        const int nv = (w + 7) / 8;
        const int full = w == 8 * VECS;
        const __m256i tail = lanes(w - 8 * (nv - 1));
        const float *q = qt + i0;
        int j = 0;
        for (; j + ROWS <= nk; j += ROWS) {
            float *s = st + j * ss + i0;
            const float *kr = k + j * ks;
            QK_TILE(ROWS);
        }
        float *s = st + j * ss + i0;
        const float *kr = k + j * ks;
        switch (nk - j) {
        case 1: QK_TILE(1); break;
        case 2: QK_TILE(2); break;
        case 3: QK_TILE(3); break;
        case 4: QK_TILE(4); break;
        case 5: QK_TILE(5); break;
        default: break;
        }
    }
}

/* 2^x as in kernels_c.c. The clamps keep the exponent field valid (below
 * LO the result is 2^-126); NaN passes through them (MINPS and MAXPS return
 * their second operand when one is NaN). */
INLINE __m256 exp2_ps(__m256 x)
{
    x = _mm256_min_ps(_mm256_set1_ps(ATTN_EXP2_HI), x);
    x = _mm256_max_ps(_mm256_set1_ps(ATTN_EXP2_LO), x);
    const __m256 n = _mm256_floor_ps(x);
    const __m256 f = _mm256_sub_ps(x, n);
    __m256 p = _mm256_set1_ps(ATTN_EXP2_C6);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(ATTN_EXP2_C5));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(ATTN_EXP2_C4));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(ATTN_EXP2_C3));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(ATTN_EXP2_C2));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(ATTN_EXP2_C1));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(ATTN_EXP2_C0));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n),
                                                         _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

static decl_exp2_fn(exp2_avx2)
{
    for (int i = 0; i < n; i += 8) {
        const int full = n - i >= 8;
        const __m256i t = lanes(n - i);
        store(y + i, t, full, exp2_ps(load(x + i, t, full)));
    }
}

INLINE void softmax_strip(float *restrict st, ptrdiff_t ss, int nk, const int *restrict end,
                          float *restrict m, float *restrict l, float *restrict alpha,
                          __m256i t, int n, const int full, const int masked)
{
    const __m256i e = masked ? (full ? _mm256_loadu_si256((const __m256i *)end)
                                     : _mm256_maskload_epi32(end, t))
                             : _mm256_setzero_si256();
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    /* Four running maxima: one would wait on the max latency every key. */
    __m256 mx4[4] = { ninf, ninf, ninf, ninf };
    for (int j = 0; j < nk; j++) {
        __m256 s = load(st + j * ss, t, full);
        if (masked)
            s = _mm256_blendv_ps(ninf, s, _mm256_castsi256_ps(
                    _mm256_cmpgt_epi32(e, _mm256_set1_epi32(j))));
        mx4[j & 3] = _mm256_max_ps(s, mx4[j & 3]);
    }
    const __m256 mx = _mm256_max_ps(_mm256_max_ps(mx4[0], mx4[1]), _mm256_max_ps(mx4[2], mx4[3]));
    const __m256 mold = load(m, t, full);
    const __m256 mnew = _mm256_max_ps(mx, mold);
    const __m256 muse = _mm256_andnot_ps(_mm256_cmp_ps(mnew, ninf, _CMP_EQ_OQ), mnew);
    const __m256 a = exp2_ps(_mm256_sub_ps(mold, muse));
    __m256 sum = _mm256_mul_ps(load(l, t, full), a);
    for (int j = 0; j < nk; j++) {
        float *s = st + j * ss;
        __m256 p = exp2_ps(_mm256_sub_ps(load(s, t, full), muse));
        if (masked)
            p = _mm256_and_ps(p, _mm256_castsi256_ps(_mm256_cmpgt_epi32(e, _mm256_set1_epi32(j))));
        store_n(s, n, p);
        sum = _mm256_add_ps(sum, p);
    }
    store_n(m, n, mnew);
    store_n(l, n, sum);
    store_n(alpha, n, a);
}

/* Decoding's narrow tiles (nq <= 4 queries, no mask): a strip would use nq
 * of a vector's 8 lanes for each key, and store them through vmaskmovps,
 * which AMD's cores run slowly (the whole step took 310 ns over 48 keys
 * at 4 columns, 168 at 8, in bench_kernels on the Zen 3 EPYC). Here a
 * vector holds 2 keys' 4 lanes, loaded and stored as two halves, the
 * stores plain ones of nq lanes. The max and P are the strip's; l is
 * summed in another order. */
INLINE __m128 q4_load(const float *p, __m128i tq, const int FULL)
{
    return FULL ? _mm_loadu_ps(p) : _mm_maskload_ps(p, tq);
}

/* Lanes [0, nq) of x to p (nq in 1..4). */
INLINE void q4_store(float *p, int nq, __m128 x)
{
    if (nq >= 4) {
        _mm_storeu_ps(p, x);
        return;
    }
    if (nq >= 2)
        _mm_storel_pi((__m64 *)p, x);
    if (nq == 3)
        _mm_store_ss(p + 2, _mm_movehl_ps(x, x));
    if (nq == 1)
        _mm_store_ss(p, x);
}

INLINE __m256 keys2_load(const float *st, ptrdiff_t ss, __m128i tq, const int FULL)
{
    return _mm256_set_m128(q4_load(st + ss, tq, FULL), q4_load(st, tq, FULL));
}

INLINE void keys2_store(float *st, ptrdiff_t ss, int nq, __m256 p)
{
    q4_store(st, nq, _mm256_castps256_ps128(p));
    q4_store(st + ss, nq, _mm256_extractf128_ps(p, 1));
}

INLINE __m128 halves_max(__m256 x)
{
    return _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
}

INLINE void softmax_narrow(float *restrict st, ptrdiff_t ss, int nk, int nq, float *restrict m,
                           float *restrict l, float *restrict alpha, const int FULL)
{
    const __m128i tq = _mm_cmpgt_epi32(_mm_set1_epi32(nq), _mm_setr_epi32(0, 1, 2, 3));
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    /* Pairs of keys two at a time (two running maxima and sums: one would
     * wait on the latency every pair), then a pair, then an odd last key. */
    __m256 mx0 = ninf, mx1 = ninf;
    int j = 0;
    for (; j + 4 <= nk; j += 4) {
        mx0 = _mm256_max_ps(keys2_load(st + j * ss, ss, tq, FULL), mx0);
        mx1 = _mm256_max_ps(keys2_load(st + (j + 2) * ss, ss, tq, FULL), mx1);
    }
    if (j + 2 <= nk)
        mx0 = _mm256_max_ps(keys2_load(st + j * ss, ss, tq, FULL), mx0);
    __m128 mx = halves_max(_mm256_max_ps(mx0, mx1));
    if (nk & 1)
        mx = _mm_max_ps(q4_load(st + (nk - 1) * ss, tq, FULL), mx);
    const __m128 mold = q4_load(m, tq, FULL);
    const __m128 mnew = _mm_max_ps(mx, mold);
    const __m128 muse = _mm_andnot_ps(_mm_cmpeq_ps(mnew, _mm_set1_ps(-INFINITY)), mnew);
    const __m256 mu = _mm256_set_m128(muse, muse);
    const __m128 a = _mm256_castps256_ps128(
        exp2_ps(_mm256_castps128_ps256(_mm_sub_ps(mold, muse))));
    __m256 sum0 = _mm256_setzero_ps(), sum1 = _mm256_setzero_ps();
    for (j = 0; j + 4 <= nk; j += 4) {
        float *s0 = st + j * ss, *s1 = s0 + 2 * ss;
        const __m256 p0 = exp2_ps(_mm256_sub_ps(keys2_load(s0, ss, tq, FULL), mu));
        const __m256 p1 = exp2_ps(_mm256_sub_ps(keys2_load(s1, ss, tq, FULL), mu));
        keys2_store(s0, ss, nq, p0);
        keys2_store(s1, ss, nq, p1);
        sum0 = _mm256_add_ps(sum0, p0);
        sum1 = _mm256_add_ps(sum1, p1);
    }
    if (j + 2 <= nk) {
        const __m256 p = exp2_ps(_mm256_sub_ps(keys2_load(st + j * ss, ss, tq, FULL), mu));
        keys2_store(st + j * ss, ss, nq, p);
        sum0 = _mm256_add_ps(sum0, p);
    }
    const __m256 sum = _mm256_add_ps(sum0, sum1);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
    if (nk & 1) {
        float *s = st + (nk - 1) * ss;
        const __m128 p = _mm256_castps256_ps128(
            exp2_ps(_mm256_castps128_ps256(_mm_sub_ps(q4_load(s, tq, FULL), muse))));
        q4_store(s, nq, p);
        s4 = _mm_add_ps(s4, p);
    }
    q4_store(m, nq, mnew);
    q4_store(l, nq, _mm_fmadd_ps(q4_load(l, tq, FULL), a, s4));
    q4_store(alpha, nq, a);
}

static decl_softmax_fn(softmax_avx2)
{
    if (!end && nq == 4) {
        softmax_narrow(st, st_stride, nk, nq, m, l, alpha, 1);
        return;
    }
    if (!end && nq < 4) {
        softmax_narrow(st, st_stride, nk, nq, m, l, alpha, 0);
        return;
    }
    for (int i = 0; i < nq; i += 8) {
        const int full = nq - i >= 8;
        const int n = nq - i < 8 ? nq - i : 8;
        const __m256i t = lanes(n);
        if (end && full)
            softmax_strip(st + i, st_stride, nk, end + i, m + i, l + i, alpha + i, t, n, 1, 1);
        else if (end)
            softmax_strip(st + i, st_stride, nk, end + i, m + i, l + i, alpha + i, t, n, 0, 1);
        else if (full)
            softmax_strip(st + i, st_stride, nk, NULL, m + i, l + i, alpha + i, t, n, 1, 0);
        else
            softmax_strip(st + i, st_stride, nk, NULL, m + i, l + i, alpha + i, t, n, 0, 0);
    }
}

/* V's rows v are stored as ST says; the tile is their columns c0 .. c0 +
 * 8 NV - 1, the last vector's n columns (tail: their lanes) unless FULL.
 * fp8's rows are summed as read back without the head's factor, which
 * the sums take once at the end (o = alpha o + fp8_mult P.V): one
 * multiply a tile instead of one a vector of V. */
INLINE void pv_tile(float *restrict o, ptrdiff_t os, const float *restrict pt, ptrdiff_t ps,
                    rows_of v, int c0, const float *restrict alpha, int nk, const int R,
                    const int NV, const int FULL, __m256i tail, int n, const int TR, const int ST,
                    const int PF, ptrdiff_t pf)
{
    __m256 acc[ROWS][VECS];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        const __m256 a = _mm256_broadcast_ss(alpha + r);
#pragma GCC unroll 2
        for (int c = 0; c < NV; c++)
            acc[r][c] = ST_FP8(ST) ? _mm256_setzero_ps()
                                   : _mm256_mul_ps(a, load(o + r * os + 8 * c, tail,
                                                           c < NV - 1 || FULL));
    }
    const float mult = ST_FP8(ST) ? fp8_mult(v.scale, ST == ST_E4M3) : 1.0f;
    for (int j = 0; j < nk; j++, v = rows_from(v, 1, ST)) {
        __m256 b[VECS];
        if (PF)   /* V streams from memory (decoding): this strip starts a line */
            _mm_prefetch(row_addr(&v, 0, c0, pf, ST), _MM_HINT_T0);
#pragma GCC unroll 2
        for (int c = 0; c < NV; c++) {
            const int x = c0 + 8 * c;
            b[c] = row_load(&v, 0, x & ~31, x & 31, tail, n, c < NV - 1 || FULL, ST);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            /* TR: the weights not transposed (pv_t), row r's at pt[r][j] */
            const __m256 p = _mm256_broadcast_ss(TR ? pt + r * ps + j : pt + j * ps + r);
#pragma GCC unroll 2
            for (int c = 0; c < NV; c++)
                acc[r][c] = _mm256_fmadd_ps(p, b[c], acc[r][c]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int c = 0; c < NV; c++) {
            float *to = o + r * os + 8 * c;
            const int f = c < NV - 1 || FULL;
            if (ST_FP8(ST))
                acc[r][c] = _mm256_fmadd_ps(acc[r][c], _mm256_set1_ps(mult),
                                            _mm256_mul_ps(_mm256_broadcast_ss(alpha + r),
                                                          load(to, tail, f)));
            store(to, tail, f, acc[r][c]);
        }
}

/* pf: V streams from memory (decoding): the first row group prefetches it,
 * pf bytes ahead, and the others find it in cache. Whether a strip
 * prefetches (it starts a line of each row) is settled per strip, so that
 * the loop over the keys holds no test: with the test inside, pv16's 48
 * keys x 4 queries in L1 took 1290-1460 ns against 1030-1340 (medians of
 * 300 batches, old and new alternating in one process, three runs, Zen 3
 * EPYC), pv_q 2-12% longer; whole decodes gained nothing to measure. */
#define PV_TILE_PF(R, F) do {                                                           \
        if (nv == 2 && full)                                                            \
            pv_tile(out, os, p, ps, v, c0, a, nk, R, 2, 1, tail, n, TR, ST, F, pf);     \
        else if (nv == 2)                                                               \
            pv_tile(out, os, p, ps, v, c0, a, nk, R, 2, 0, tail, n, TR, ST, F, pf);     \
        else                                                                            \
            pv_tile(out, os, p, ps, v, c0, a, nk, R, 1, 0, tail, n, TR, ST, F, pf);     \
    } while (0)
#define PV_TILE(R) do {                                                    \
        if (pf && i == 0 && pf_here(c0 & ~31, c0 & 31, ST))               \
            PV_TILE_PF(R, 1);                                              \
        else                                                               \
            PV_TILE_PF(R, 0);                                              \
    } while (0)

/* q8_0 and q4_0 V: values c0 + h .. c0 + h + 7 of a row (c0 a multiple of
 * 16, h 0 or 8) as the integers they hold (q4_0: nibble - 8), in fp32,
 * exactly; the block's scale is pvq_tile's weights'. */
INLINE __m256 qint(const uint8_t *row, int c0, const int h, const int ST)
{
    const uint8_t *blk = row + (c0 >> 5) * (ST == ST_Q8_0 ? 34 : 18) + 2;
    if (ST == ST_Q8_0)
        return _mm256_cvtepi32_ps(
            _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(blk + (c0 & 31) + h))));
    /* byte i holds value i in its low nibble, value i + 16 in its high one */
    const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(blk + h)));
    const __m256i n = (c0 & 16) ? _mm256_srli_epi32(b, 4) : b;
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(n, _mm256_set1_epi32(0xf)),
                                               _mm256_set1_epi32(8)));
}

/* P.V over q8_0 or q4_0 rows v, R <= ROWS rows of the output, columns c0
 * .. c0 + 15 (one half of a block): w holds each key's weights of these
 * rows already times the block's scale (w[j ws + r], pvq_any), so that a
 * vector of V costs its load and conversion, and no multiply. alpha NULL:
 * the rows are not rescaled (a later chunk of keys). */
INLINE void pvq_tile(float *restrict o, ptrdiff_t os, const float *restrict w, ptrdiff_t ws,
                     rows_of v, int c0, const float *restrict alpha, int nk, const int R,
                     const int ST, const int PF, ptrdiff_t pf)
{
    __m256 acc[ROWS][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int c = 0; c < 2; c++) {
            const __m256 x = _mm256_loadu_ps(o + r * os + 8 * c);
            acc[r][c] = alpha ? _mm256_mul_ps(_mm256_broadcast_ss(alpha + r), x) : x;
        }
    for (int j = 0; j < nk; j++, v = rows_from(v, 1, ST), w += ws) {
        if (PF)   /* V streams from memory (decoding): this strip starts a line */
            _mm_prefetch(row_addr(&v, 0, c0, pf, ST), _MM_HINT_T0);
        const __m256 b0 = qint(v.q, c0, 0, ST), b1 = qint(v.q, c0, 8, ST);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const __m256 p = _mm256_broadcast_ss(w + r);
            acc[r][0] = _mm256_fmadd_ps(p, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(p, b1, acc[r][1]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int c = 0; c < 2; c++)
            _mm256_storeu_ps(o + r * os + 8 * c, acc[r][c]);
}

/* Floats of pvq_any's weights: keys x blocks x 4 or 8 rows. */
#define PVQ_W 3072

#define PVQ_TILE(R) do {                                                                  \
        if (pf && i == 0 && pf_here(c0 & ~31, c0 & 31, ST))                               \
            pvq_tile(o + i * os + c0, os, w + (c0 >> 5) * wr, ws, rows_from(v, j0, ST),   \
                     c0, a, kc, R, ST, 1, pf);                                            \
        else                                                                              \
            pvq_tile(o + i * os + c0, os, w + (c0 >> 5) * wr, ws, rows_from(v, j0, ST),   \
                     c0, a, kc, R, ST, 0, pf);                                            \
    } while (0)

/* pv_any for q8_0 and q4_0 V (dv a multiple of 32, the formats' rule):
 * for each group of up to ROWS rows and each chunk of keys, the weights
 * P[j][r] times the scale of each block of row j, once, then pvq_tile
 * per 16 columns. The products are rounded once more than pv_tile's
 * (p d, then times the integer: pv_tile's d times the integer is exact),
 * one unit of fp32's rounding per term (the header has its speed). */
INLINE void pvq_any(float *restrict o, ptrdiff_t os, const float *restrict pt, ptrdiff_t ps,
                    rows_of v, const float *restrict alpha, int nq, int nk, int dv, ptrdiff_t pf,
                    const int ST)
{
    float w[PVQ_W] __attribute__((aligned(32)));
    const int nb = dv / 32;
    for (int i = 0; i < nq; i += ROWS) {
        const int rows = nq - i < ROWS ? nq - i : ROWS, wr = rows <= 4 ? 4 : 8;
        const ptrdiff_t ws = (ptrdiff_t)nb * wr;
        const int kmax = PVQ_W / (int)ws;
        const __m256i t = lanes(rows);
        for (int j0 = 0; j0 < nk; j0 += kmax) {
            const int kc = nk - j0 < kmax ? nk - j0 : kmax;
            for (int j = 0; j < kc; j++) {
                const __m256 p = _mm256_maskload_ps(pt + (ptrdiff_t)(j0 + j) * ps + i, t);
                const uint8_t *row = v.q + (ptrdiff_t)(j0 + j) * v.stride;
                for (int b = 0; b < nb; b++) {
                    short h;
                    memcpy(&h, row + b * (ST == ST_Q8_0 ? 34 : 18), sizeof(h));
                    const __m256 x = _mm256_mul_ps(p, _mm256_cvtph_ps(_mm_set1_epi16(h)));
                    float *to = w + j * ws + b * wr;
                    if (wr == 4)
                        _mm_store_ps(to, _mm256_castps256_ps128(x));
                    else
                        _mm256_store_ps(to, x);
                }
            }
            const float *a = j0 == 0 ? alpha + i : NULL;
            for (int c0 = 0; c0 < dv; c0 += 16)
                switch (rows) {
                case 1: PVQ_TILE(1); break;
                case 2: PVQ_TILE(2); break;
                case 3: PVQ_TILE(3); break;
                case 4: PVQ_TILE(4); break;
                case 5: PVQ_TILE(5); break;
                default: PVQ_TILE(6); break;
                }
        }
    }
}

INLINE void pv_any(float *restrict o, ptrdiff_t o_stride, const float *restrict pt,
                   ptrdiff_t pt_stride, rows_of v, const float *restrict alpha, int nq, int nk,
                   int dv, ptrdiff_t pf, const int ST, const int TR)
{
    const ptrdiff_t os = o_stride, ps = pt_stride;
    if ((ST == ST_Q8_0 || ST == ST_Q4_0) && !TR && dv / 32 * 8 <= PVQ_W) {
        pvq_any(o, os, pt, ps, v, alpha, nq, nk, dv, pf, ST);
        return;
    }
    for (int c0 = 0; c0 < dv; c0 += 8 * VECS) {
        const int w = dv - c0 < 8 * VECS ? dv - c0 : 8 * VECS;
        const int nv = (w + 7) / 8;
        const int full = w == 8 * VECS;
        const int n = w - 8 * (nv - 1);
        const __m256i tail = lanes(n);
        int i = 0;
        for (; i + ROWS <= nq; i += ROWS) {
            float *out = o + i * os + c0;
            const float *p = TR ? pt + i * ps : pt + i, *a = alpha + i;
            PV_TILE(ROWS);
        }
        float *out = o + i * os + c0;
        const float *p = TR ? pt + i * ps : pt + i, *a = alpha + i;
        switch (nq - i) {
        case 1: PV_TILE(1); break;
        case 2: PV_TILE(2); break;
        case 3: PV_TILE(3); break;
        case 4: PV_TILE(4); break;
        case 5: PV_TILE(5); break;
        default: break;
        }
    }
}

static decl_pv_fn(pv_avx2)
{
    pv_any(o, o_stride, pt, pt_stride, (rows_of){ .f = v, .stride = v_stride }, alpha, nq, nk, dv,
           pf, ST_F32, 0);
}

static decl_pv_t_fn(pv_t_avx2)
{
    pv_any(o, o_stride, p, p_stride, (rows_of){ .f = v, .stride = v_stride }, alpha, nq, nk, dv,
           0, ST_F32, 1);
}

/* tanh(y) for the softcap, as every version computes it: sign(y) (1 - e) /
 * (1 + e) with e = 2^(-2 log2(e) |y|), on exp2_ps. */
INLINE __m256 tanh_ps(__m256 y)
{
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    const __m256 e = exp2_ps(_mm256_mul_ps(_mm256_set1_ps((float)(-2.0 * ATTN_LOG2E)),
                                           _mm256_andnot_ps(sign, y)));
    const __m256 th = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
    return _mm256_or_ps(th, _mm256_and_ps(y, sign));
}

/* The score modifiers (kernels.h), 8 queries a vector. */
static decl_mods_fn(mods_avx2)
{
    const __m256 vcap = _mm256_set1_ps(cap), inv = _mm256_set1_ps(cap > 0 ? 1.0f / cap : 0.0f);
    const __m256 ninf = _mm256_set1_ps(-INFINITY), sign = _mm256_set1_ps(-0.0f);
    for (int i = 0; i < nq; i += 8) {
        const int n = nq - i < 8 ? nq - i : 8, full = n == 8;
        const __m256i t = lanes(n);
        const __m256 sl = slope ? load(slope + i, t, full) : _mm256_setzero_ps();
        const __m256 ps = slope ? load(pos + i, t, full) : _mm256_setzero_ps();
        const __m256i bg = beg ? (full ? _mm256_loadu_si256((const __m256i *)(beg + i))
                                       : _mm256_maskload_epi32(beg + i, t))
                               : _mm256_setzero_si256();
        for (int j = 0; j < nk; j++) {
            float *s = st + j * st_stride + i;
            __m256 x = load(s, t, full);
            if (cap > 0)
                x = _mm256_mul_ps(vcap, tanh_ps(_mm256_mul_ps(x, inv)));
            if (slope) {
                const __m256 d = _mm256_andnot_ps(
                    sign, _mm256_sub_ps(ps, _mm256_set1_ps((float)(j0 + j))));
                x = _mm256_fnmadd_ps(sl, d, x);
            }
            if (beg)
                x = _mm256_blendv_ps(x, ninf, _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                                                  bg, _mm256_set1_epi32(j0 + j))));
            store_n(s, n, x);
        }
    }
}

/* One row of bwd_ds, 8 keys at a time; MODS (a constant) says whether a
 * cap or a slope is there at all. */
INLINE void bwd_ds_row(float *restrict s, float *restrict dp, int nk, int j0, float lse,
                       float dd, int beg, int end, float cap, float slope, float at, float scale,
                       const int MODS)
{
    const __m256 vl = _mm256_set1_ps(lse), vd = _mm256_set1_ps(dd), vs = _mm256_set1_ps(scale);
    const __m256 vcap = _mm256_set1_ps(cap), inv = _mm256_set1_ps(cap > 0 ? 1.0f / cap : 0.0f);
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    const __m256i step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int j = 0; j < nk; j += 8) {
        const int n = nk - j < 8 ? nk - j : 8;
        const __m256i key = _mm256_add_epi32(_mm256_set1_epi32(j0 + j), step);
        const __m256i t = _mm256_and_si256(
            lanes(n), _mm256_and_si256(_mm256_cmpgt_epi32(key, _mm256_set1_epi32(beg - 1)),
                                       _mm256_cmpgt_epi32(_mm256_set1_epi32(end), key)));
        __m256 x = _mm256_maskload_ps(s + j, t), d = one;
        if (MODS && cap > 0) {
            const __m256 th = tanh_ps(_mm256_mul_ps(x, inv));
            x = _mm256_mul_ps(vcap, th);
            d = _mm256_fnmadd_ps(th, th, one);
        }
        if (MODS && slope != 0.0f) {
            const __m256 dist = _mm256_andnot_ps(
                sign, _mm256_sub_ps(_mm256_set1_ps(at), _mm256_cvtepi32_ps(key)));
            x = _mm256_fnmadd_ps(_mm256_set1_ps(slope), dist, x);
        }
        const __m256 vis = _mm256_castsi256_ps(t);
        const __m256 p = _mm256_and_ps(vis, exp2_ps(_mm256_sub_ps(x, vl)));
        __m256 g = _mm256_mul_ps(_mm256_mul_ps(vs, p),
                                 _mm256_sub_ps(_mm256_maskload_ps(dp + j, t), vd));
        if (MODS)
            g = _mm256_mul_ps(g, d);
        store_n(s + j, n, p);
        store_n(dp + j, n, _mm256_and_ps(vis, g));
    }
}

static decl_bwd_ds_fn(bwd_ds_avx2)
{
    const int mods = cap > 0 || slope != 0.0f;
    for (int r = 0; r < nq; r++) {
        const int b = beg ? beg[r] : j0, e = end ? end[r] : j0 + nk;
        if (mods)
            bwd_ds_row(s + r * stride, dp + r * stride, nk, j0, lse[r], dd[r], b, e, cap, slope,
                       (float)(pos0 + r), scale, 1);
        else
            bwd_ds_row(s + r * stride, dp + r * stride, nk, j0, lse[r], dd[r], b, e, cap, slope,
                       (float)(pos0 + r), scale, 0);
    }
}

static float hmax(__m256 x)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

static float hsum(__m256 x)
{
    __m128 m = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

static decl_softmax_rows_fn(softmax_rows_avx2)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    for (int r = 0; r < rows; r++) {
        float *row = s + r * stride;
        int e = end ? end[r] : n;
        e = e < 0 ? 0 : e > n ? n : e;
        __m256 acc[4] = { ninf, ninf, ninf, ninf };
        for (int j = 0; j < e; j += 8) {
            const __m256i t = lanes(e - j);
            const __m256 x = _mm256_blendv_ps(ninf, _mm256_maskload_ps(row + j, t),
                                              _mm256_castsi256_ps(t));
            acc[(j >> 3) & 3] = _mm256_max_ps(x, acc[(j >> 3) & 3]);
        }
        const __m256 mx = _mm256_set1_ps(hmax(_mm256_max_ps(_mm256_max_ps(acc[0], acc[1]),
                                                            _mm256_max_ps(acc[2], acc[3]))));
        for (int u = 0; u < 4; u++)
            acc[u] = _mm256_setzero_ps();
        for (int j = 0; j < e; j += 8) {
            const __m256i t = lanes(e - j);
            const __m256 p = _mm256_and_ps(_mm256_castsi256_ps(t), exp2_ps(_mm256_sub_ps(
                                 _mm256_maskload_ps(row + j, t), mx)));
            _mm256_maskstore_ps(row + j, t, p);
            acc[(j >> 3) & 3] = _mm256_add_ps(acc[(j >> 3) & 3], p);
        }
        const float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]),
                                             _mm256_add_ps(acc[2], acc[3])));
        const __m256 inv = _mm256_set1_ps(1.0f / sum);
        for (int j = 0; j < e; j += 8) {
            const __m256i t = lanes(e - j);
            _mm256_maskstore_ps(row + j, t, _mm256_mul_ps(_mm256_maskload_ps(row + j, t), inv));
        }
        for (int j = e; j < n; j += 8)
            _mm256_maskstore_ps(row + j, lanes(n - j), _mm256_setzero_ps());
    }
}

/* One vector of the horizontal sums of 8 accumulators: lane a holds the
 * sum of a[a]'s lanes. */
INLINE __m256 sum8(const __m256 a[8])
{
    const __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
    const __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
    const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                         _mm256_permute2f128_ps(u0, u1, 0x31));
}

/* Decoding's scores as dot products along d, NK keys x NQ queries at a
 * time (constants of each instance, NK NQ <= 8), so that each row of K is
 * loaded (and widened or read back) once for up to 4 queries and each
 * query's vector serves NK keys: one accumulator per (key, query), summed
 * by one tree at the end. K's rows k are stored as ST says. */
INLINE void qk_keys(float *restrict st, ptrdiff_t ss, rows_of k, const float *restrict q,
                    ptrdiff_t qs, int dk, const int NK, const int NQ, ptrdiff_t pf, const int ST)
{
    __m256 acc[8];
#pragma GCC unroll 8
    for (int a = 0; a < 8; a++)
        acc[a] = _mm256_setzero_ps();
    /* 32 values a step (a block of q8_0 or q4_0), in four eighths */
    for (int c0 = 0; c0 < dk; c0 += 32)
#pragma GCC unroll 4
        for (int h = 0; h < 32; h += 8) {
            const int c = c0 + h;
            if (c >= dk)
                break;
            const int n = dk - c, full = n >= 8;
            const __m256i t = lanes(n);
            __m256 qv[4];
#pragma GCC unroll 4
            for (int i = 0; i < NQ; i++)
                qv[i] = load(q + i * qs + c, t, full);
#pragma GCC unroll 8
            for (int r = 0; r < NK; r++) {
                if (pf && pf_here(c0, h, ST))
                    _mm_prefetch(row_addr(&k, r, c, pf, ST), _MM_HINT_T0);
                const __m256 kv = row_load(&k, r, c0, h, t, n, full, ST);
#pragma GCC unroll 4
                for (int i = 0; i < NQ; i++)
                    acc[r * NQ + i] = _mm256_fmadd_ps(kv, qv[i], acc[r * NQ + i]);
            }
        }
    float sums[8];
    /* fp8: the head's factor, once for the sums (load_quant) */
    const __m256 mult = _mm256_set1_ps(ST_FP8(ST) ? fp8_mult(k.scale, ST == ST_E4M3) : 1.0f);
    _mm256_storeu_ps(sums, ST_FP8(ST) ? _mm256_mul_ps(sum8(acc), mult) : sum8(acc));
#pragma GCC unroll 8
    for (int r = 0; r < NK; r++)
#pragma GCC unroll 4
        for (int i = 0; i < NQ; i++)
            st[r * ss + i] = sums[r * NQ + i];
}

/* Keys a block for NQ queries: 8 accumulators (4 x 2 keys, ... 1 x 8). */
#define KEYS_OF(NQ) ((NQ) == 1 ? 8 : (NQ) == 2 ? 4 : 2)

INLINE void qk_rows_nq(float *restrict st, ptrdiff_t ss, rows_of k, const float *restrict q,
                       ptrdiff_t qs, int nk, int dk, const int NQ, ptrdiff_t pf, const int ST)
{
    int j = 0;
    for (; j + KEYS_OF(NQ) <= nk; j += KEYS_OF(NQ))
        qk_keys(st + j * ss, ss, rows_from(k, j, ST), q, qs, dk, KEYS_OF(NQ), NQ, pf, ST);
    for (; j < nk; j++)
        qk_keys(st + j * ss, ss, rows_from(k, j, ST), q, qs, dk, 1, NQ, pf, ST);
}

INLINE void qk_rows_dk(float *restrict st, ptrdiff_t ss, rows_of k, const float *restrict q,
                       ptrdiff_t qs, int nk, int nq, int dk, ptrdiff_t pf_rows, const int ST)
{
    for (int i = 0; i < nq; i += 4) {
        /* the first pass over the keys prefetches the rows ahead (PF_KEYS) */
        const ptrdiff_t pf = i == 0 ? pf_rows : 0;
        const float *qi = q + i * qs;
        switch (nq - i < 4 ? nq - i : 4) {
        case 1: qk_rows_nq(st + i, ss, k, qi, qs, nk, dk, 1, pf, ST); break;
        case 2: qk_rows_nq(st + i, ss, k, qi, qs, nk, dk, 2, pf, ST); break;
        case 3: qk_rows_nq(st + i, ss, k, qi, qs, nk, dk, 3, pf, ST); break;
        default: qk_rows_nq(st + i, ss, k, qi, qs, nk, dk, 4, pf, ST); break;
        }
    }
}

/* The usual d as constants of their own instances: each key's loop
 * unrolled, no tail. bench_kernels' 48 keys of d = 128 on the 2-core Zen 3
 * EPYC, best of 4 runs: qk_rows 858 -> 660 ns (4 queries), qk_rows16
 * 1032 -> 710, qk_rows_q 1019 -> 896 (q8_0), 1148 -> 1048 (q4_0); the
 * same for pv (already unrolled by its 16 columns) changed nothing. */
INLINE void qk_rows_any(float *restrict st, ptrdiff_t ss, rows_of k, const float *restrict q,
                        ptrdiff_t qs, int nk, int nq, int dk, ptrdiff_t pf_rows, const int ST)
{
    switch (dk) {
    case 64: qk_rows_dk(st, ss, k, q, qs, nk, nq, 64, pf_rows, ST); break;
    case 128: qk_rows_dk(st, ss, k, q, qs, nk, nq, 128, pf_rows, ST); break;
    default: qk_rows_dk(st, ss, k, q, qs, nk, nq, dk, pf_rows, ST); break;
    }
}

#define ROWS_ISA avx2
#include "rows_entry.h"

/* 16-bit rows widened 8 at a time: bf16 by a shift into the upper half,
 * fp16 by vcvtph2ps (F16C); the tail of a row through a small buffer. */
static decl_cvt_rows_fn(cvt_rows_avx2)
{
    for (int r = 0; r < rows; r++) {
        const uint16_t *s = src + r * src_stride;
        float *d = dst + r * dst_stride;
        /* the row pf bytes on, as decoding's other kernels fetch theirs:
         * the widened K of decoding tiles wider than DOTS_MAX streams from
         * memory through here */
        if (pf)
            for (int c = 0; c < cols; c += 32)
                _mm_prefetch((const char *)((uintptr_t)(s + c) + (uintptr_t)pf), _MM_HINT_T0);
        int c = 0;
        for (; c + 8 <= cols; c += 8) {
            const __m128i h = _mm_loadu_si128((const __m128i *)(s + c));
            const __m256 x = bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(
                                        _mm256_cvtepu16_epi32(h), 16))
                                  : _mm256_cvtph_ps(h);
            _mm256_storeu_ps(d + c, x);
        }
        if (c < cols) {
            uint16_t t[8] = { 0 };
            for (int x = 0; x < cols - c; x++)
                t[x] = s[c + x];
            const __m128i h = _mm_loadu_si128((const __m128i *)t);
            const __m256 x = bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(
                                        _mm256_cvtepu16_epi32(h), 16))
                                  : _mm256_cvtph_ps(h);
            _mm256_maskstore_ps(d + c, lanes(cols - c), x);
        }
    }
}

/* Quantized rows (quant.h's formats), 8 values a vector: q8_0 and q4_0
 * the int8 (or nibble - 8) widened to int32, converted (exactly) and
 * multiplied by the block's scale; fp8 as fp8_raw reads it (e4m3's NaN
 * codes blended in where the row has any), times the scale (e4m3: times
 * 2^8). Each is the C definition's value bit for bit (a NaN may differ in
 * its payload). The row pf bytes on is prefetched a line at a time, as
 * cvt_rows does. */
static decl_dequant_rows_fn(dequant_rows_avx2)
{
    const ptrdiff_t row_bytes = (ptrdiff_t)attn_kvq_row_bytes(fmt, (size_t)cols);
    const __m256 sc = _mm256_set1_ps(fp8_mult(scale, fmt == ATTN_KVQ_FP8E4M3));
    for (int r = 0; r < rows; r++) {
        const uint8_t *s = src + r * src_stride;
        float *d = dst + r * dst_stride;
        if (pf)
            for (ptrdiff_t x = 0; x < row_bytes; x += 64)
                _mm_prefetch((const char *)((uintptr_t)s + (uintptr_t)(x + pf)), _MM_HINT_T0);
        if (fmt == ATTN_KVQ_Q8_0 || fmt == ATTN_KVQ_Q4_0) {
            const int q8 = fmt == ATTN_KVQ_Q8_0, bytes = q8 ? 34 : 18;
            for (int b = 0; b < cols / ATTN_QBLOCK; b++) {
                const uint8_t *blk = s + b * bytes;
                short h;
                memcpy(&h, blk, sizeof(h));
                const __m256 dv = _mm256_cvtph_ps(_mm_set1_epi16(h));
                __m256i x[4];
                if (q8) {
                    for (int v = 0; v < 4; v++)
                        x[v] = _mm256_cvtepi8_epi32(
                            _mm_loadl_epi64((const __m128i *)(blk + 2 + 8 * v)));
                } else {
                    const __m256i lo4 = _mm256_set1_epi32(0xf), eight = _mm256_set1_epi32(8);
                    for (int v = 0; v < 2; v++) {
                        const __m256i n = _mm256_cvtepu8_epi32(
                            _mm_loadl_epi64((const __m128i *)(blk + 2 + 8 * v)));
                        x[v] = _mm256_sub_epi32(_mm256_and_si256(n, lo4), eight);
                        x[v + 2] = _mm256_sub_epi32(_mm256_srli_epi32(n, 4), eight);
                    }
                }
                for (int v = 0; v < 4; v++)
                    _mm256_storeu_ps(d + b * ATTN_QBLOCK + 8 * v,
                                     _mm256_mul_ps(_mm256_cvtepi32_ps(x[v]), dv));
            }
            continue;
        }
        const int e4 = fmt == ATTN_KVQ_FP8E4M3;
        const int nonan = e4 && !fp8_nan_row(s, cols);
        int c = 0;
        for (; c + 8 <= cols; c += 8) {
            const __m128i b = _mm_loadl_epi64((const __m128i *)(s + c));
            const __m256 x = e4 ? nonan ? fp8_raw(b, 1, 1) : fp8_raw(b, 1, 0) : fp8_raw(b, 0, 0);
            _mm256_storeu_ps(d + c, _mm256_mul_ps(x, sc));
        }
        if (c < cols)
            _mm256_maskstore_ps(d + c, lanes(cols - c),
                                _mm256_mul_ps(fp8_raw(tail_bytes(s + c, cols - c), e4, 0), sc));
    }
}

void attn_kernels_init_avx2(attn_kernels *k)
{
    k->isa = ATTN_ISA_AVX2;
    k->qk = qk_avx2;
    k->qk_exp = NULL;   /* C's would be slower than qk and softmax here */
    k->qk_rows = qk_rows_avx2;
    k->softmax = softmax_avx2;
    k->mods = mods_avx2;
    k->bwd_ds = bwd_ds_avx2;
    k->pv = pv_avx2;
    k->pv_t = pv_t_avx2;
    k->softmax_rows = softmax_rows_avx2;
    k->exp2 = exp2_avx2;
    k->cvt_rows = cvt_rows_avx2;
    k->dequant_rows = dequant_rows_avx2;
    k->qk_rows16 = qk_rows16_avx2;
    k->pv16 = pv16_avx2;
    k->qk_rows_q = qk_rows_q_avx2;
    k->pv_q = pv_q_avx2;
    k->prefetches = 1;
    k->pf_keys = PF_KEYS_AVX2;
    k->fetch_v = 1;
}

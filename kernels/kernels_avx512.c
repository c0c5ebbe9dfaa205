/* AVX-512 (F, BW, VL, DQ) versions. This file, kernels_avx512_qk_rows.c
 * and kernels_avx512_pv_rows.c (decoding's kernels on stored rows) alone
 * are compiled with the AVX-512 flags; nothing here runs unless the CPU
 * reports them.
 *
 * Register tiles: Q.K^T and P.V both keep a 6 x 64 block of results in 24
 * zmm accumulators (6 broadcast scalars against 4 vector loads per step), so
 * 24 FMAs share 10 loads. Tails are masked lanes and smaller row counts of
 * the same inlined tile, instantiated for each constant size. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "half.h"
#include "kernels.h"
#include "kernels_avx512.h"
#include "kernels_avx512_rows.h"
#include "rows_of.h"

/* qk's rows when its tile is one vector wide (decoding's 16 columns): 12
 * broadcasts share each Q^T load, not 6. On the 2-core Zen 5 EPYC (one
 * thread, bench_kernels --bench, 48 keys, d = 128, 16 columns) 254 against
 * 202 GFLOP/s (peak 269); whole decoding runs (H = 32, Hkv = 8, Nq = 4,
 * d = 128, 1 thread) 197-200 against 190-193 with K/V in cache (Nk = 1K),
 * and no faster with Nk = 32K, where streaming K and V bounds them. At
 * two vectors (32 columns: multi-query decoding), 12 rows were not faster
 * than 6 on the 2-core Skylake-SP Xeon (one thread, 192-key tiles of
 * d = 128, 8 runs of the two builds in turn, medians: 128 against 134
 * GFLOP/s in L2, 91 against 96 streaming from memory). */
#define ROWS_NARROW 12

/* 2^x as in kernels_c.c, in 9 instructions: VREDUCEPS gives f = x - floor(x)
 * and VSCALEFPS multiplies by 2^floor(x) itself, so n is never formed. The
 * clamp turns -inf into a tiny value instead of the NaN -inf - -inf would
 * give; NaN passes through it (MAXPS returns its second operand). */
INLINE __m512 exp2_ps(__m512 x)
{
    x = _mm512_max_ps(_mm512_set1_ps(ATTN_EXP2_LO - 1.0f), x);
    const __m512 f = _mm512_reduce_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 p = _mm512_set1_ps(ATTN_EXP2_C6);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(ATTN_EXP2_C5));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(ATTN_EXP2_C4));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(ATTN_EXP2_C3));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(ATTN_EXP2_C2));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(ATTN_EXP2_C1));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(ATTN_EXP2_C0));
    return _mm512_scalef_ps(p, x);
}

/* K's value at element `at` of k, broadcast: fp32, or with K16 bf16 widened
 * exactly. A bf16 value is the upper half of the fp32 it widens to, and the
 * 32 bits from the value before it hold it there: one broadcast load and
 * one AND a value (FIRST: the row's first value, whose 32 bits start
 * before the row, by a shift instead). Against cvt_rows and qk on the
 * widened rows (the same scores, bit for bit), on the 2-core EPYC of CPU
 * family 25 (Zen 4), one thread, 48 keys of d = 128 in L1
 * (bench_kernels --bench qk_kbf16 cvt+qk, prefetching as decoding does):
 * 16 columns 1774-1784 ns against 2230, 32 columns 3411-3420 against
 * 3857-3896 (qk alone on fp32 rows: 1836 and 3413). There the ANDs run on
 * the FP pipes that the FMAs leave (kernels.h, attn_kernels.kbf16); on
 * Intel's AVX-512 cores 512-bit integer ops share ports 0 and 5 with the
 * FMAs. */
INLINE __m512 k_bcast(const void *restrict k, ptrdiff_t at, const int K16, const int FIRST)
{
    if (!K16)
        return _mm512_set1_ps(((const float *)k)[at]);
    const uint16_t *h = (const uint16_t *)k + at;
    if (FIRST)
        return _mm512_castsi512_ps(_mm512_set1_epi32((int)((uint32_t)h[0] << 16)));
    int32_t w;
    memcpy(&w, h - 1, sizeof(w));
    return _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_set1_epi32(w), _mm512_set1_epi32((int)0xffff0000u)));
}

/* Row `at` elements on from k, of fp32 or (K16) bf16 elements. */
INLINE const void *k_at(const void *k, ptrdiff_t at, const int K16)
{
    return K16 ? (const void *)((const uint16_t *)k + at) : (const void *)((const float *)k + at);
}

/* One column c of K against row c of Q^T: R x NV vectors of scores. */
INLINE void qk_step(__m512 acc[][VECS], const void *restrict k, ptrdiff_t ks,
                    const float *restrict qt, ptrdiff_t qs, int c, const int R, const int NV,
                    const int FULL, __mmask16 tail, const int K16, const int FIRST)
{
    __m512 b[VECS];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++)
        b[v] = load_v(qt + c * qs + 16 * v, v, NV, FULL, tail);
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        const __m512 a = k_bcast(k, r * ks + c, K16, FIRST);
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
    }
}

/* EXP (a constant): the epilogue of qk_exp, the scores' weights against
 * m[] with the columns' max and sum (m, mx and sm at the tile's first
 * column; mx and sm read and written here, so that the 6-key tiles of a
 * strip chain them through L1 rather than hold 8 more registers). */
INLINE void qk_tile(float *restrict st, ptrdiff_t ss, const void *restrict k, ptrdiff_t ks,
                    const float *restrict qt, ptrdiff_t qs, int dk,
                    const int R, const int NV, const int FULL, __mmask16 tail, const int PF,
                    ptrdiff_t ahead, const int EXP, const float *restrict m,
                    float *restrict mx, float *restrict sm, const int K16)
{
    const int ES = K16 ? 2 : 4, LINE = 64 / ES;   /* bytes a value, values a line */
    __m512 acc[ROWS_NARROW][VECS];
#pragma GCC unroll 12
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[r][v] = _mm512_setzero_ps();
    /* With PF, steps of a line of K (16 columns, 32 of bf16), each after its
     * prefetches, so that
     * the loop over c is the loop of !PF. With the prefetch inside it (one
     * step in 16), GCC carried the rows' addresses through every step, in
     * registers and on the stack. 48 keys of d = 128 in L1, one thread of
     * the 2-core Intel Xeon Skylake-SP (bench_kernels --bench, qk+pf, best
     * of 5 runs of the two builds in turn): 16 columns 78 GFLOP/s before,
     * 86 now; 32 columns 103 before, 122 now (qk without prefetches: 103-107
     * and 131-137). AVX2 (kernels_avx2.c) the same way: 63 -> 68 and
     * 69 -> 72. */
    if (K16)   /* the rows' first values */
        qk_step(acc, k, ks, qt, qs, 0, R, NV, FULL, tail, K16, 1);
    if (!PF)
        for (int c = K16; c < dk; c++)
            qk_step(acc, k, ks, qt, qs, c, R, NV, FULL, tail, K16, 0);
    for (int c0 = 0; PF && c0 < dk; c0 += LINE) {
#pragma GCC unroll 12
        for (int r = 0; r < R; r++)   /* one line of each row, `ahead` bytes on */
            _mm_prefetch((const char *)((uintptr_t)k + (uintptr_t)((r * ks + c0) * ES + ahead)),
                         _MM_HINT_T2);
        const int ce = c0 + LINE < dk ? c0 + LINE : dk;
        for (int c = c0 ? c0 : K16; c < ce; c++)
            qk_step(acc, k, ks, qt, qs, c, R, NV, FULL, tail, K16, 0);
    }
    if (EXP) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            const __m512 mv = load_v(m + 16 * v, v, NV, FULL, tail);
            __m512 xv = load_v(mx + 16 * v, v, NV, FULL, tail);
            __m512 sv = load_v(sm + 16 * v, v, NV, FULL, tail);
#pragma GCC unroll 12
            for (int r = 0; r < R; r++) {
                xv = _mm512_max_ps(acc[r][v], xv);   /* a NaN score leaves xv */
                const __m512 p = exp2_ps(_mm512_sub_ps(acc[r][v], mv));
                store_v(st + r * ss + 16 * v, v, NV, FULL, tail, p);
                sv = _mm512_add_ps(sv, p);
            }
            store_v(mx + 16 * v, v, NV, FULL, tail, xv);
            store_v(sm + 16 * v, v, NV, FULL, tail, sv);
        }
        return;
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            store_v(st + r * ss + 16 * v, v, NV, FULL, tail, acc[r][v]);
}

#define QK_AT(R, NV, FULL, PF) \
    qk_tile(s, ss, kr, ks, q, qs, dk, R, NV, FULL, tail, PF, pf, EXP, mq, xq, sq, K16)
#define QK_TILE_PF(R, PF) do {                                                     \
        switch (tail == 0xffff ? nv + 4 : nv) {                                    \
        case 1: QK_AT(R, 1, 0, PF); break;                                         \
        case 2: QK_AT(R, 2, 0, PF); break;                                         \
        case 3: QK_AT(R, 3, 0, PF); break;                                         \
        case 4: QK_AT(R, 4, 0, PF); break;                                         \
        case 5: QK_AT(R, 1, 1, PF); break;                                         \
        case 6: QK_AT(R, 2, 1, PF); break;                                         \
        case 7: QK_AT(R, 3, 1, PF); break;                                         \
        default: QK_AT(R, 4, 1, PF); break;                                        \
        }                                                                          \
    } while (0)
#define QK_TILE(R) do {                                                        \
        if (PFS && pf && i0 == 0)                                              \
            QK_TILE_PF(R, 1);                                                  \
        else                                                                   \
            QK_TILE_PF(R, 0);                                                  \
    } while (0)

/* pf: K streams from memory once (decoding), so the first 64 columns'
 * register tiles prefetch the rows pf ahead of their own (pf_keys), a line of
 * each row every 16 steps, in among their FMAs. A burst of a whole key
 * tile's lines before the tile (what the tiled backend does for
 * memory-bound tiles) stalls the arithmetic behind it when the tile is
 * compute-bound; backends/tiled/internal.h (DOTS_MAX) has the numbers.
 * PFS: the instance that prefetches (pf != 0), a function of its own. */
INLINE void qk_any(float *restrict st, ptrdiff_t st_stride, const void *restrict k,
                   ptrdiff_t k_stride, const float *restrict qt, ptrdiff_t qt_stride, int nk,
                   int nq, int dk, ptrdiff_t pf, const int PFS, const int EXP,
                   const float *restrict m, float *restrict mx, float *restrict sm,
                   const int K16)
{
    const ptrdiff_t ss = st_stride, ks = k_stride, qs = qt_stride;
    for (int i0 = 0; i0 < nq; i0 += 16 * VECS) {
        const int w = nq - i0 < 16 * VECS ? nq - i0 : 16 * VECS;
        const int nv = (w + 15) / 16;
        const __mmask16 tail = lanes(w - 16 * (nv - 1));
        const float *q = qt + i0;
        const float *mq = EXP ? m + i0 : NULL;
        float *xq = EXP ? mx + i0 : NULL, *sq = EXP ? sm + i0 : NULL;
        int j = 0;
        if (nv == 1)
            for (; j + ROWS_NARROW <= nk; j += ROWS_NARROW) {
                float *s = st + j * ss + i0;
                const void *kr = k_at(k, j * ks, K16);
                if (PFS && pf && i0 == 0) {
                    if (tail == 0xffff)
                        QK_AT(ROWS_NARROW, 1, 1, 1);
                    else
                        QK_AT(ROWS_NARROW, 1, 0, 1);
                } else if (tail == 0xffff) {
                    QK_AT(ROWS_NARROW, 1, 1, 0);
                } else {
                    QK_AT(ROWS_NARROW, 1, 0, 0);
                }
            }
        for (; j + ROWS <= nk; j += ROWS) {
            float *s = st + j * ss + i0;
            const void *kr = k_at(k, j * ks, K16);
            QK_TILE(ROWS);
        }
        float *s = st + j * ss + i0;
        const void *kr = k_at(k, j * ks, K16);
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

/* The calls with and without prefetches in two functions: in one, GCC's
 * registers for the tiles without them came out worse (qk, 16 columns, 48
 * keys of d = 128 in L1, bench_kernels --bench on the 2-core Intel Xeon
 * Skylake-SP: 90 GFLOP/s against 103-105). */
static __attribute__((noinline)) void qk_pf_avx512(float *restrict st, ptrdiff_t ss,
                                                   const float *restrict k, ptrdiff_t ks,
                                                   const float *restrict qt, ptrdiff_t qs, int nk,
                                                   int nq, int dk, ptrdiff_t pf)
{
    qk_any(st, ss, k, ks, qt, qs, nk, nq, dk, pf, 1, 0, NULL, NULL, NULL, 0);
}

static decl_qk_fn(qk_avx512)
{
    if (pf)
        qk_pf_avx512(st, st_stride, k, k_stride, qt, qt_stride, nk, nq, dk, pf);
    else
        qk_any(st, st_stride, k, k_stride, qt, qt_stride, nk, nq, dk, 0, 0, 0, NULL, NULL, NULL,
               0);
}

static decl_qk_exp_fn(qk_exp_avx512)
{
    qk_any(st, st_stride, k, k_stride, qt, qt_stride, nk, nq, dk, 0, 0, 1, m, mx, sum, 0);
}

/* qk on bf16 K in place (k_bcast): the same tiles and order of sums. */
static __attribute__((noinline)) void qk_kbf16_pf_avx512(float *restrict st, ptrdiff_t ss,
                                                         const uint16_t *restrict k,
                                                         ptrdiff_t ks, const float *restrict qt,
                                                         ptrdiff_t qs, int nk, int nq, int dk,
                                                         ptrdiff_t pf)
{
    qk_any(st, ss, k, ks, qt, qs, nk, nq, dk, pf, 1, 0, NULL, NULL, NULL, 1);
}

static decl_qk_kbf16_fn(qk_kbf16_avx512)
{
    if (pf)
        qk_kbf16_pf_avx512(st, st_stride, k, k_stride, qt, qt_stride, nk, nq, dk, pf);
    else
        qk_any(st, st_stride, k, k_stride, qt, qt_stride, nk, nq, dk, 0, 0, 0, NULL, NULL, NULL,
               1);
}

/* Q^T in 16 x 16 blocks: 16 rows of Q loaded (rows past nq are zeros,
 * columns past dk masked), transposed in registers in four rounds of
 * shuffles (32-bit pairs, 64-bit pairs, 128-bit lanes twice), scaled, and
 * stored as 16 rows of Q^T masked to nq. The scalar loop stores each
 * element to a different cache line; at d = 128 it took 3.5 us of a 64-query
 * block's 72 us at N = 256, this about a third of that. */
INLINE void transpose16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    /* r[4g + x]: rows 4g..4g+3 of columns x, x + 4, x + 8, x + 12 (one per lane) */
    for (int g = 0; g < 16; g += 4) {
        r[g] = _mm512_shuffle_ps(t[g], t[g + 2], 0x44);
        r[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], 0xee);
        r[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
        r[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xee);
    }
    /* t[x] (x < 4): rows 0..7 of columns x, x + 8; t[x + 4]: of x + 4, x + 12;
     * t[x + 8], t[x + 12]: the same of rows 8..15 */
    for (int h = 0; h < 16; h += 8)
        for (int x = 0; x < 4; x++) {
            t[h + x] = _mm512_shuffle_f32x4(r[h + x], r[h + 4 + x], 0x88);
            t[h + 4 + x] = _mm512_shuffle_f32x4(r[h + x], r[h + 4 + x], 0xdd);
        }
    for (int x = 0; x < 8; x++) {
        r[x] = _mm512_shuffle_f32x4(t[x], t[x + 8], 0x88);
        r[x + 8] = _mm512_shuffle_f32x4(t[x], t[x + 8], 0xdd);
    }
}

static decl_pack_qt_fn(pack_qt_avx512)
{
    const __m512 s = _mm512_set1_ps(scale);
    for (int i0 = 0; i0 < nq; i0 += 16) {
        const int ni = nq - i0 < 16 ? nq - i0 : 16;
        const __mmask16 rows = lanes(ni);
        for (int c0 = 0; c0 < dk; c0 += 16) {
            const int nc = dk - c0 < 16 ? dk - c0 : 16;
            const __mmask16 cols = lanes(nc);
            __m512 r[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++)
                r[i] = i < ni ? _mm512_maskz_loadu_ps(cols, q + (i0 + i) * q_stride + c0)
                              : _mm512_setzero_ps();
            transpose16(r);
#pragma GCC unroll 16
            for (int c = 0; c < 16; c++)
                if (c < nc)
                    _mm512_mask_storeu_ps(qt + (c0 + c) * qt_stride + i0, rows,
                                          _mm512_mul_ps(r[c], s));
        }
    }
}

static decl_exp2_fn(exp2_avx512)
{
    for (int i = 0; i < n; i += 16) {
        const __mmask16 t = lanes(n - i);
        _mm512_mask_storeu_ps(y + i, t, exp2_ps(_mm512_maskz_loadu_ps(t, x + i)));
    }
}

/* One 16-query column strip of the softmax step; masked is a constant so
 * the unmasked common case carries no visibility compares, and with all 16
 * lanes in use (FULL, a constant) it carries no lane masks either: the
 * step's exp is on the critical path at d = 64 (a tenth of the FMA work). */
INLINE void softmax_strip(float *restrict st, ptrdiff_t ss, int nk, const int *restrict end,
                          float *restrict m, float *restrict l, float *restrict alpha,
                          __mmask16 t, const int masked, const int FULL)
{
    const __m512i e = masked ? _mm512_maskz_loadu_epi32(t, end) : _mm512_setzero_si512();
    /* Four running maxima: one would wait on the max latency every key. */
    __m512 mx4[4];
    for (int u = 0; u < 4; u++)
        mx4[u] = _mm512_set1_ps(-INFINITY);
    int j = 0;
    for (; j + 4 <= nk; j += 4)
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            const __mmask16 vis = masked ? _mm512_mask_cmpgt_epi32_mask(t, e, _mm512_set1_epi32(j + u)) : t;
            mx4[u] = _mm512_mask_max_ps(mx4[u], vis, mx4[u], _mm512_maskz_loadu_ps(t, st + (j + u) * ss));
        }
    for (; j < nk; j++) {
        const __mmask16 vis = masked ? _mm512_mask_cmpgt_epi32_mask(t, e, _mm512_set1_epi32(j)) : t;
        mx4[0] = _mm512_mask_max_ps(mx4[0], vis, mx4[0], _mm512_maskz_loadu_ps(t, st + j * ss));
    }
    const __m512 mx = _mm512_max_ps(_mm512_max_ps(mx4[0], mx4[1]), _mm512_max_ps(mx4[2], mx4[3]));
    const __m512 mold = _mm512_maskz_loadu_ps(t, m);
    const __m512 mnew = _mm512_max_ps(mx, mold);
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    const __m512 muse = _mm512_mask_mov_ps(mnew, _mm512_cmp_ps_mask(mnew, ninf, _CMP_EQ_OQ),
                                           _mm512_setzero_ps());
    const __m512 a = exp2_ps(_mm512_sub_ps(mold, muse));
    __m512 sum = _mm512_mul_ps(_mm512_maskz_loadu_ps(t, l), a);
    if (FULL && !masked) {
        /* Two sums: one would wait on the add latency every key. Four keys
         * a step with four sums took the softmax alone 0.94-0.96x its time
         * (Skylake-SP Xeon, one thread, bench_kernels' tile, best of 40
         * alternating rounds) but whole prefill runs no less (H = 8,
         * N = 1K, d = 64 causal and not, d = 128 not, 2 threads, medians of
         * 9 rounds in one process: 0.995-1.002x), and l adds in another
         * order. */
        __m512 sum2 = _mm512_setzero_ps();
        for (j = 0; j + 2 <= nk; j += 2) {
            float *s = st + j * ss;
            const __m512 p0 = exp2_ps(_mm512_sub_ps(_mm512_loadu_ps(s), muse));
            const __m512 p1 = exp2_ps(_mm512_sub_ps(_mm512_loadu_ps(s + ss), muse));
            _mm512_storeu_ps(s, p0);
            _mm512_storeu_ps(s + ss, p1);
            sum = _mm512_add_ps(sum, p0);
            sum2 = _mm512_add_ps(sum2, p1);
        }
        if (j < nk) {
            const __m512 p0 = exp2_ps(_mm512_sub_ps(_mm512_loadu_ps(st + j * ss), muse));
            _mm512_storeu_ps(st + j * ss, p0);
            sum = _mm512_add_ps(sum, p0);
        }
        sum = _mm512_add_ps(sum, sum2);
    } else {
        for (j = 0; j < nk; j++) {
            const __mmask16 vis =
                masked ? _mm512_mask_cmpgt_epi32_mask(t, e, _mm512_set1_epi32(j)) : t;
            float *s = st + j * ss;
            const __m512 p = _mm512_maskz_mov_ps(
                vis, exp2_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(t, s), muse)));
            _mm512_mask_storeu_ps(s, t, p);
            sum = _mm512_add_ps(sum, p);
        }
    }
    _mm512_mask_storeu_ps(m, t, mnew);
    _mm512_mask_storeu_ps(l, t, sum);
    _mm512_mask_storeu_ps(alpha, t, a);
}

/* Decoding's narrow tiles (nq <= 8 queries, no mask): a strip would run
 * exp2 on 16 lanes per key with nq of them in use. Here a vector holds
 * 16 / W keys, W lanes each (W = 4 or 8, a constant: the key's queries, the
 * lanes past nq idle), loaded and stored a key at a time under the
 * queries' mask (nothing read or written past them). The max is exact and
 * P holds the same exp2 values as softmax_strip's; l adds them in another
 * order. On the 2-core Zen 5 EPYC (bench_kernels, 48 keys in L1): 49 ns
 * against 81 for 4 queries, 57 against 81 for 8. The keys' n (1 .. 16 / W)
 * rows from st: */
INLINE __m512 keys_load(const float *st, ptrdiff_t ss, int n, __mmask16 tq, const int W)
{
    if (W == 4) {
        const __mmask8 t = (__mmask8)tq;
        __m512 v = _mm512_castps128_ps512(_mm_maskz_loadu_ps(t, st));
        if (n > 1)
            v = _mm512_insertf32x4(v, _mm_maskz_loadu_ps(t, st + ss), 1);
        if (n > 2)
            v = _mm512_insertf32x4(v, _mm_maskz_loadu_ps(t, st + 2 * ss), 2);
        if (n > 3)
            v = _mm512_insertf32x4(v, _mm_maskz_loadu_ps(t, st + 3 * ss), 3);
        return v;
    }
    __m512 v = _mm512_castps256_ps512(_mm256_maskz_loadu_ps((__mmask8)tq, st));
    if (n > 1)
        v = _mm512_insertf32x8(v, _mm256_maskz_loadu_ps((__mmask8)tq, st + ss), 1);
    return v;
}

INLINE void keys_store(float *st, ptrdiff_t ss, int n, __mmask16 tq, __m512 v, const int W)
{
    const __mmask8 t = (__mmask8)tq;
    if (W == 4) {
        _mm_mask_storeu_ps(st, t, _mm512_castps512_ps128(v));
        if (n > 1)
            _mm_mask_storeu_ps(st + ss, t, _mm512_extractf32x4_ps(v, 1));
        if (n > 2)
            _mm_mask_storeu_ps(st + 2 * ss, t, _mm512_extractf32x4_ps(v, 2));
        if (n > 3)
            _mm_mask_storeu_ps(st + 3 * ss, t, _mm512_extractf32x4_ps(v, 3));
        return;
    }
    _mm256_mask_storeu_ps(st, t, _mm512_castps512_ps256(v));
    if (n > 1)
        _mm256_mask_storeu_ps(st + ss, t, _mm512_extractf32x8_ps(v, 1));
}

/* Every key slot of v combined (max or sum), so each holds all of them. */
INLINE __m512 slots_max(__m512 v, const int W)
{
    v = _mm512_max_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    if (W == 4)
        v = _mm512_max_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    return v;
}

INLINE __m512 slots_sum(__m512 v, const int W)
{
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    if (W == 4)
        v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    return v;
}

INLINE void softmax_narrow(float *restrict st, ptrdiff_t ss, int nk, int nq, float *restrict m,
                           float *restrict l, float *restrict alpha, const int W)
{
    const int K = 16 / W;   /* keys a vector */
    const __mmask16 tq = lanes(nq);
    const __mmask16 all = W == 4 ? (__mmask16)(tq * 0x1111u) : (__mmask16)(tq * 0x0101u);
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    /* Whole vectors two at a time (two running maxima and sums: one would
     * wait on the latency every vector), then the tail's keys. */
    const int whole = nk / (2 * K) * (2 * K);
    __m512 mx0 = ninf, mx1 = ninf;
    for (int j = 0; j < whole; j += 2 * K) {
        mx0 = _mm512_mask_max_ps(mx0, all, mx0, keys_load(st + j * ss, ss, K, tq, W));
        mx1 = _mm512_mask_max_ps(mx1, all, mx1, keys_load(st + (j + K) * ss, ss, K, tq, W));
    }
    for (int j = whole; j < nk; j += K) {
        const int n = nk - j < K ? nk - j : K;
        const __m512 x = keys_load(st + j * ss, ss, n, tq, W);
        mx0 = _mm512_mask_max_ps(mx0, all & lanes(n * W), mx0, x);
    }
    const __m512 mold = W == 4 ? _mm512_broadcast_f32x4(_mm_maskz_loadu_ps((__mmask8)tq, m))
                               : _mm512_broadcast_f32x8(_mm256_maskz_loadu_ps((__mmask8)tq, m));
    const __m512 mnew = _mm512_max_ps(slots_max(_mm512_max_ps(mx0, mx1), W), mold);
    const __m512 muse = _mm512_mask_mov_ps(mnew, _mm512_cmp_ps_mask(mnew, ninf, _CMP_EQ_OQ),
                                           _mm512_setzero_ps());
    const __m512 a = exp2_ps(_mm512_sub_ps(mold, muse));
    __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
    for (int j = 0; j < whole; j += 2 * K) {
        float *s0 = st + j * ss, *s1 = s0 + K * ss;
        const __m512 p0 = _mm512_maskz_mov_ps(
            all, exp2_ps(_mm512_sub_ps(keys_load(s0, ss, K, tq, W), muse)));
        const __m512 p1 = _mm512_maskz_mov_ps(
            all, exp2_ps(_mm512_sub_ps(keys_load(s1, ss, K, tq, W), muse)));
        keys_store(s0, ss, K, tq, p0, W);
        keys_store(s1, ss, K, tq, p1, W);
        sum0 = _mm512_add_ps(sum0, p0);
        sum1 = _mm512_add_ps(sum1, p1);
    }
    for (int j = whole; j < nk; j += K) {
        const int n = nk - j < K ? nk - j : K;
        const __m512 p = _mm512_maskz_mov_ps(
            all & lanes(n * W), exp2_ps(_mm512_sub_ps(keys_load(st + j * ss, ss, n, tq, W), muse)));
        keys_store(st + j * ss, ss, n, tq, p, W);
        sum0 = _mm512_add_ps(sum0, p);
    }
    const __m512 lnew = _mm512_fmadd_ps(
        W == 4 ? _mm512_broadcast_f32x4(_mm_maskz_loadu_ps((__mmask8)tq, l))
               : _mm512_broadcast_f32x8(_mm256_maskz_loadu_ps((__mmask8)tq, l)),
        a, slots_sum(_mm512_add_ps(sum0, sum1), W));
    _mm512_mask_storeu_ps(m, tq, mnew);
    _mm512_mask_storeu_ps(l, tq, lnew);
    _mm512_mask_storeu_ps(alpha, tq, a);
}

static decl_softmax_fn(softmax_avx512)
{
    if (!end && nq <= 4) {
        softmax_narrow(st, st_stride, nk, nq, m, l, alpha, 4);
        return;
    }
    if (!end && nq <= 8) {
        softmax_narrow(st, st_stride, nk, nq, m, l, alpha, 8);
        return;
    }
    for (int i = 0; i < nq; i += 16) {
        const __mmask16 t = lanes(nq - i);
        if (end)
            softmax_strip(st + i, st_stride, nk, end + i, m + i, l + i, alpha + i, t, 1, 0);
        else if (t == 0xffff)
            softmax_strip(st + i, st_stride, nk, NULL, m + i, l + i, alpha + i, t, 0, 1);
        else
            softmax_strip(st + i, st_stride, nk, NULL, m + i, l + i, alpha + i, t, 0, 0);
    }
}

static decl_mods_fn(mods_avx512)
{
    const __m512 k2 = _mm512_set1_ps((float)(-2.0 * ATTN_LOG2E));
    const __m512 vcap = _mm512_set1_ps(cap), inv = _mm512_set1_ps(cap > 0 ? 1.0f / cap : 0.0f);
    const __m512 one = _mm512_set1_ps(1.0f), ninf = _mm512_set1_ps(-INFINITY);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    for (int i = 0; i < nq; i += 16) {
        const __mmask16 t = lanes(nq - i);
        const __m512 sl = slope ? _mm512_maskz_loadu_ps(t, slope + i) : _mm512_setzero_ps();
        const __m512 ps = slope ? _mm512_maskz_loadu_ps(t, pos + i) : _mm512_setzero_ps();
        const __m512i bg = beg ? _mm512_maskz_loadu_epi32(t, beg + i) : _mm512_setzero_si512();
        for (int j = 0; j < nk; j++) {
            float *s = st + j * st_stride + i;
            __m512 x = _mm512_maskz_loadu_ps(t, s);
            if (cap > 0) {
                const __m512 y = _mm512_mul_ps(x, inv);
                const __m512 e = exp2_ps(_mm512_mul_ps(k2, _mm512_abs_ps(y)));
                const __m512 th = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
                const __m512i sy = _mm512_and_si512(_mm512_castps_si512(y), sign);
                x = _mm512_mul_ps(vcap, _mm512_castsi512_ps(
                                            _mm512_or_si512(_mm512_castps_si512(th), sy)));
            }
            if (slope) {
                const __m512 d = _mm512_abs_ps(_mm512_sub_ps(ps, _mm512_set1_ps((float)(j0 + j))));
                x = _mm512_fnmadd_ps(sl, d, x);
            }
            if (beg)
                x = _mm512_mask_mov_ps(x, _mm512_cmpgt_epi32_mask(bg, _mm512_set1_epi32(j0 + j)),
                                       ninf);
            _mm512_mask_storeu_ps(s, t, x);
        }
    }
}

/* tanh(y) for the softcap, as mods_avx512 computes it: sign(y) (1 - e) /
 * (1 + e) with e = 2^(-2 log2(e) |y|). */
INLINE __m512 tanh_ps(__m512 y)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 e = exp2_ps(_mm512_mul_ps(_mm512_set1_ps((float)(-2.0 * ATTN_LOG2E)),
                                           _mm512_abs_ps(y)));
    const __m512 th = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
    const __m512i sy = _mm512_and_si512(_mm512_castps_si512(y), _mm512_set1_epi32((int)0x80000000u));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(th), sy));
}

/* One row of bwd_ds, 16 keys at a time; MODS (a constant) says whether a
 * cap or a slope is there at all. */
INLINE void bwd_ds_row(float *restrict s, float *restrict dp, int nk, int j0, float lse,
                       float dd, int beg, int end, float cap, float slope, float at, float scale,
                       const int MODS)
{
    const __m512 vl = _mm512_set1_ps(lse), vd = _mm512_set1_ps(dd), vs = _mm512_set1_ps(scale);
    const __m512 vcap = _mm512_set1_ps(cap), inv = _mm512_set1_ps(cap > 0 ? 1.0f / cap : 0.0f);
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512i step = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int j = 0; j < nk; j += 16) {
        const __m512i key = _mm512_add_epi32(_mm512_set1_epi32(j0 + j), step);
        const __mmask16 t = lanes(nk - j) & _mm512_cmpge_epi32_mask(key, _mm512_set1_epi32(beg)) &
                            _mm512_cmplt_epi32_mask(key, _mm512_set1_epi32(end));
        __m512 x = _mm512_maskz_loadu_ps(t, s + j), d = one;
        if (MODS && cap > 0) {
            const __m512 th = tanh_ps(_mm512_mul_ps(x, inv));
            x = _mm512_mul_ps(vcap, th);
            d = _mm512_fnmadd_ps(th, th, one);
        }
        if (MODS && slope != 0.0f) {
            const __m512 dist = _mm512_abs_ps(_mm512_sub_ps(_mm512_set1_ps(at),
                                                            _mm512_cvtepi32_ps(key)));
            x = _mm512_fnmadd_ps(_mm512_set1_ps(slope), dist, x);
        }
        const __m512 p = _mm512_maskz_mov_ps(t, exp2_ps(_mm512_sub_ps(x, vl)));
        __m512 g = _mm512_mul_ps(_mm512_mul_ps(vs, p),
                                 _mm512_sub_ps(_mm512_maskz_loadu_ps(t, dp + j), vd));
        if (MODS)
            g = _mm512_mul_ps(g, d);
        const __mmask16 w = lanes(nk - j);
        _mm512_mask_storeu_ps(s + j, w, p);
        _mm512_mask_storeu_ps(dp + j, w, _mm512_maskz_mov_ps(t, g));
    }
}

static decl_bwd_ds_fn(bwd_ds_avx512)
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

static decl_pv_fn(pv_avx512)
{
    pv_any(o, o_stride, pt, pt_stride, (rows_of){ .f = v, .stride = v_stride }, alpha, nq, nk,
           dv, pf, ST_F32, 0);
}

static decl_pv_t_fn(pv_t_avx512)
{
    pv_any(o, o_stride, p, p_stride, (rows_of){ .f = v, .stride = v_stride }, alpha, nq, nk, dv,
           0, ST_F32, 1);
}

/* Four accumulators in each pass, so no pass waits on one dependency chain. */
static decl_softmax_rows_fn(softmax_rows_avx512)
{
    for (int r = 0; r < rows; r++) {
        float *row = s + r * stride;
        int e = end ? end[r] : n;
        e = e < 0 ? 0 : e > n ? n : e;
        __m512 acc[4];
        for (int u = 0; u < 4; u++)
            acc[u] = _mm512_set1_ps(-INFINITY);
        for (int j = 0; j < e; j += 16)
            acc[(j >> 4) & 3] = _mm512_mask_max_ps(acc[(j >> 4) & 3], lanes(e - j),
                                                   acc[(j >> 4) & 3],
                                                   _mm512_maskz_loadu_ps(lanes(e - j), row + j));
        const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(
            _mm512_max_ps(_mm512_max_ps(acc[0], acc[1]), _mm512_max_ps(acc[2], acc[3]))));
        for (int u = 0; u < 4; u++)
            acc[u] = _mm512_setzero_ps();
        for (int j = 0; j < e; j += 16) {
            const __mmask16 t = lanes(e - j);
            const __m512 p = _mm512_maskz_mov_ps(t, exp2_ps(_mm512_sub_ps(
                                 _mm512_maskz_loadu_ps(t, row + j), mx)));
            _mm512_mask_storeu_ps(row + j, t, p);
            acc[(j >> 4) & 3] = _mm512_add_ps(acc[(j >> 4) & 3], p);
        }
        const float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]),
                                                             _mm512_add_ps(acc[2], acc[3])));
        const __m512 inv = _mm512_set1_ps(1.0f / sum);
        for (int j = 0; j < e; j += 16) {
            const __mmask16 t = lanes(e - j);
            _mm512_mask_storeu_ps(row + j, t, _mm512_mul_ps(_mm512_maskz_loadu_ps(t, row + j), inv));
        }
        for (int j = e; j < n; j += 16)
            _mm512_mask_storeu_ps(row + j, lanes(n - j), _mm512_setzero_ps());
    }
}

/* bf16: the bits shifted into the upper half; fp16: vcvtph2ps (AVX512F). */
static decl_cvt_rows_fn(cvt_rows_avx512)
{
    for (int r = 0; r < rows; r++) {
        const uint16_t *s = src + r * src_stride;
        float *d = dst + r * dst_stride;
        /* The row pf bytes on, as decoding's other kernels prefetch theirs:
         * the widened K of decoding tiles wider than DOTS_MAX streams from
         * memory through here. */
        if (pf)
            for (int c = 0; c < cols; c += 32)
                _mm_prefetch((const char *)((uintptr_t)(s + c) + (uintptr_t)pf), _MM_HINT_T2);
        for (int c = 0; c < cols; c += 32)
            _mm_prefetch((const char *)((uintptr_t)(s + c) +
                                        (uintptr_t)(PF_NEAR * src_stride * 2)),
                         _MM_HINT_T0);
        for (int c = 0; c < cols; c += 16) {
            const __mmask16 m = lanes(cols - c);
            const __m256i h = _mm256_maskz_loadu_epi16(m, s + c);
            const __m512 x = bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(
                                        _mm512_cvtepu16_epi32(h), 16))
                                  : _mm512_cvtph_ps(h);
            _mm512_mask_storeu_ps(d + c, m, x);
        }
    }
}

/* Quantized rows (quant.h's formats), 16 values a vector:
 *   q8_0, q4_0  the int8 (or nibble - 8) widened to int32, converted
 *               (exactly) and multiplied by the block's scale;
 *   fp8e4m3     sign-extended to 16 bits, shifted and masked into an fp16
 *               of its value times 2^-8 (exact, subnormals too), vcvtph2ps,
 *               NaN codes blended in unless the row has none, times 2^8
 *               times the scale (fp8_raw, fp8_mult);
 *   fp8e5m2     the byte as the upper half of an fp16, vcvtph2ps, times the
 *               scale.
 * Each is the C definition's value bit for bit (a NaN may differ in its
 * payload). The row pf bytes on is prefetched a line at a time, as
 * cvt_rows does. */
static decl_dequant_rows_fn(dequant_rows_avx512)
{
    const ptrdiff_t row_bytes = (ptrdiff_t)attn_kvq_row_bytes(fmt, (size_t)cols);
    const __m512 sc = _mm512_set1_ps(fp8_mult(scale, fmt == ATTN_KVQ_FP8E4M3));
    for (int r = 0; r < rows; r++) {
        const uint8_t *s = src + r * src_stride;
        float *d = dst + r * dst_stride;
        if (pf)
            for (ptrdiff_t x = 0; x < row_bytes; x += 64)
                _mm_prefetch((const char *)((uintptr_t)s + (uintptr_t)(x + pf)), _MM_HINT_T2);
        if (fmt == ATTN_KVQ_Q8_0 || fmt == ATTN_KVQ_Q4_0) {
            const int q8 = fmt == ATTN_KVQ_Q8_0, bytes = q8 ? 34 : 18;
            for (int b = 0; b < cols / ATTN_QBLOCK; b++) {
                const uint8_t *blk = s + b * bytes;
                uint16_t h;
                memcpy(&h, blk, sizeof(h));
                const __m512 dv = _mm512_cvtph_ps(_mm256_set1_epi16((short)h));
                __m512i lo, hi;
                if (q8) {
                    lo = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(blk + 2)));
                    hi = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(blk + 18)));
                } else {
                    const __m512i n = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(blk + 2)));
                    const __m512i eight = _mm512_set1_epi32(8);
                    lo = _mm512_sub_epi32(_mm512_and_si512(n, _mm512_set1_epi32(0xf)), eight);
                    hi = _mm512_sub_epi32(_mm512_srli_epi32(n, 4), eight);
                }
                _mm512_storeu_ps(d + b * ATTN_QBLOCK, _mm512_mul_ps(_mm512_cvtepi32_ps(lo), dv));
                _mm512_storeu_ps(d + b * ATTN_QBLOCK + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(hi), dv));
            }
            continue;
        }
        const int e4 = fmt == ATTN_KVQ_FP8E4M3;
        const int nonan = e4 && !fp8_nan_row(s, cols);
        int c = 0;
        for (; c + 16 <= cols; c += 16) {
            const __m128i b = _mm_loadu_si128((const __m128i *)(s + c));
            _mm512_storeu_ps(d + c, e4 ? nonan ? fp8_vec(b, 1, 1, sc) : fp8_vec(b, 1, 0, sc)
                                       : fp8_vec(b, 0, 0, sc));
        }
        if (c < cols) {
            const __mmask16 m = lanes(cols - c);
            _mm512_mask_storeu_ps(d + c, m, fp8_vec(_mm_maskz_loadu_epi8(m, s + c), e4, 0, sc));
        }
    }
}

void attn_kernels_init_avx512(attn_kernels *k)
{
    k->isa = ATTN_ISA_AVX512;
    k->qk = qk_avx512;
    k->qk_exp = qk_exp_avx512;
    k->qk_kbf16 = qk_kbf16_avx512;
    /* Decoding's bf16 K in place where the ANDs have FP pipes of their own
     * (k_bcast): AMD's cores. Intel's run 512-bit integer ops on the FMAs'
     * ports 0 and 5 and keep cvt_rows and qk. */
    k->kbf16 = attn_cpu_amd();
    k->pack_qt = pack_qt_avx512;
    k->softmax = softmax_avx512;
    k->pv = pv_avx512;
    k->softmax_rows = softmax_rows_avx512;
    k->exp2 = exp2_avx512;
    k->cvt_rows = cvt_rows_avx512;
    k->dequant_rows = dequant_rows_avx512;
    attn_kernels_init_avx512_qk_rows(k);
    attn_kernels_init_avx512_pv_rows(k);
    k->mods = mods_avx512;
    k->pv_t = pv_t_avx512;
    k->bwd_ds = bwd_ds_avx512;
    k->prefetches = 1;
    k->pf_keys = attn_cpu_amd() ? PF_KEYS_AMD : PF_KEYS;
    k->dec_keys = attn_cpu_amd() ? DEC_KEYS_AMD : 0;
}

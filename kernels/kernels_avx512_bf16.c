/* AVX-512 with AVX512_BF16: the bf16 kernels on vdpbf16ps. This file alone
 * is compiled with -mavx512bf16; nothing here runs unless the CPU reports
 * it (kernels.c).
 *
 * vdpbf16ps adds two bf16 products per fp32 lane (pairs along the
 * reduction), so one instruction does the work of two FMAs: the register
 * tiles are those of the fp32 kernels (6 rows x 64 fp32 lanes in 24 zmm
 * accumulators), each step now consuming a pair of d (Q.K^T) or of keys
 * (P.V). Operands come as 32-bit pairs (kernels.h): a broadcast pair of K
 * or P against vectors of 16 pairs of Q^T or V. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "kernels_avx512.h"

#define ROWS 6   /* broadcast rows per register tile */
#define VECS 4   /* zmm per tile row: 64 fp32 lanes */

INLINE __m512i load_w(const uint32_t *p, int v, int NV, int FULL, __mmask16 tail)
{
    return v < NV - 1 || FULL ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi32(tail, p);
}

INLINE __m512 dot(__m512 acc, __m512i a, __m512i b)
{
    return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b);
}

/* The 32-bit pair of bf16 at p (any alignment). */
INLINE uint32_t word(const uint16_t *p)
{
    uint32_t w;
    memcpy(&w, p, sizeof(w));
    return w;
}

INLINE void qk_tile(float *restrict st, ptrdiff_t ss, const uint16_t *restrict k, ptrdiff_t ks,
                    const uint32_t *restrict qt, ptrdiff_t qs, int dk, float scale,
                    const int R, const int NV, const int FULL, __mmask16 tail)
{
    __m512 acc[ROWS][VECS];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[r][v] = _mm512_setzero_ps();
    const int pairs = dk / 2;
    for (int c = 0; c < pairs; c++) {
        __m512i b[VECS];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            b[v] = load_w(qt + c * qs + 16 * v, v, NV, FULL, tail);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const __m512i a = _mm512_set1_epi32((int)word(k + r * ks + 2 * c));
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[r][v] = dot(acc[r][v], a, b[v]);
        }
    }
    if (dk & 1) {   /* the last d alone: its pair's other half is 0 */
        __m512i b[VECS];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            b[v] = load_w(qt + pairs * qs + 16 * v, v, NV, FULL, tail);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const __m512i a = _mm512_set1_epi32((int)k[r * ks + dk - 1]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[r][v] = dot(acc[r][v], a, b[v]);
        }
    }
    const __m512 s = _mm512_set1_ps(scale);
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            store_v(st + r * ss + 16 * v, v, NV, FULL, tail, _mm512_mul_ps(acc[r][v], s));
}

#define QK_TILE(R) do {                                                            \
        switch (tail == 0xffff ? nv + 4 : nv) {                                    \
        case 1: qk_tile(s, ss, kr, ks, q, qs, dk, scale, R, 1, 0, tail); break;    \
        case 2: qk_tile(s, ss, kr, ks, q, qs, dk, scale, R, 2, 0, tail); break;    \
        case 3: qk_tile(s, ss, kr, ks, q, qs, dk, scale, R, 3, 0, tail); break;    \
        case 4: qk_tile(s, ss, kr, ks, q, qs, dk, scale, R, 4, 0, tail); break;    \
        case 5: qk_tile(s, ss, kr, ks, q, qs, dk, scale, R, 1, 1, tail); break;    \
        case 6: qk_tile(s, ss, kr, ks, q, qs, dk, scale, R, 2, 1, tail); break;    \
        case 7: qk_tile(s, ss, kr, ks, q, qs, dk, scale, R, 3, 1, tail); break;    \
        default: qk_tile(s, ss, kr, ks, q, qs, dk, scale, R, 4, 1, tail); break;   \
        }                                                                          \
    } while (0)

static decl_qk_bf16_fn(qk_bf16_avx512)
{
    const ptrdiff_t ss = st_stride, ks = k_stride, qs = qt_stride;
    for (int i0 = 0; i0 < nq; i0 += 16 * VECS) {
        const int w = nq - i0 < 16 * VECS ? nq - i0 : 16 * VECS;
        const int nv = (w + 15) / 16;
        const __mmask16 tail = lanes(w - 16 * (nv - 1));
        const uint32_t *q = qt + i0;
        int j = 0;
        for (; j + ROWS <= nk; j += ROWS) {
            float *s = st + j * ss + i0;
            const uint16_t *kr = k + j * ks;
            QK_TILE(ROWS);
        }
        float *s = st + j * ss + i0;
        const uint16_t *kr = k + j * ks;
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

/* Decoding: 4 keys x 4 queries at a time, 32 values of d per step, each
 * pair of d one dot-product lane (K and Q rows are already pairs along d:
 * no packing), 16 accumulators summed by the tree, scaled, scattered. A
 * key row is loaded once for the 4 queries, and nothing is widened: half
 * the instructions of the widening kernel (qk_rows16) for Q.K^T. */
INLINE void rows_keys4(float *restrict st, ptrdiff_t ss, const uint16_t *restrict k,
                       ptrdiff_t ks, const uint16_t *restrict q, ptrdiff_t qs, int dk,
                       float scale, const int NK, const int NQ, ptrdiff_t pf)
{
    __m512 acc[16];
#pragma GCC unroll 16
    for (int a = 0; a < 16; a++)
        acc[a] = _mm512_setzero_ps();
    for (int c = 0; c < dk; c += 32) {
        const __mmask32 t = dk - c >= 32 ? 0xffffffffu : (__mmask32)((1u << (dk - c)) - 1);
        __m512i qv[4];
#pragma GCC unroll 4
        for (int i = 0; i < NQ; i++)
            qv[i] = _mm512_maskz_loadu_epi16(t, q + i * qs + c);
#pragma GCC unroll 4
        for (int r = 0; r < NK; r++) {
            const uint16_t *kr = k + r * ks + c;
            if (pf)   /* the row pf bytes on (kernels.h) */
                _mm_prefetch((const char *)((uintptr_t)kr + (uintptr_t)pf), _MM_HINT_T2);
            const __m512i kv = _mm512_maskz_loadu_epi16(t, kr);
#pragma GCC unroll 4
            for (int i = 0; i < NQ; i++)
                acc[r * 4 + i] = dot(acc[r * 4 + i], kv, qv[i]);
        }
    }
    scatter_4x4(st, ss, _mm512_mul_ps(sum16(acc), _mm512_set1_ps(scale)), NK, NQ);
}

#define ROWS_KEYS4(NK) do {                                                        \
        switch (nqq) {                                                             \
        case 1: rows_keys4(s, ss, kr, ks, qq, qs, dk, scale, NK, 1, pfi); break;   \
        case 2: rows_keys4(s, ss, kr, ks, qq, qs, dk, scale, NK, 2, pfi); break;   \
        case 3: rows_keys4(s, ss, kr, ks, qq, qs, dk, scale, NK, 3, pfi); break;   \
        default: rows_keys4(s, ss, kr, ks, qq, qs, dk, scale, NK, 4, pfi); break;  \
        }                                                                          \
    } while (0)

static decl_qk_rows_bf16_fn(qk_rows_bf16_avx512)
{
    const ptrdiff_t ss = st_stride, ks = k_stride, qs = q_stride;
    for (int i = 0; i < nq; i += 4) {
        const int nqq = nq - i < 4 ? nq - i : 4;
        const ptrdiff_t pfi = i == 0 ? pf : 0;
        const uint16_t *qq = q + i * qs;
        for (int j = 0; j < nk; j += 4) {
            float *s = st + j * ss + i;
            const uint16_t *kr = k + j * ks;
            switch (nk - j < 4 ? nk - j : 4) {
            case 1: ROWS_KEYS4(1); break;
            case 2: ROWS_KEYS4(2); break;
            case 3: ROWS_KEYS4(3); break;
            default: ROWS_KEYS4(4); break;
            }
        }
    }
}

/* Two rows of 16 bf16 (a, b) as 16 pairs (a[x], b[x]). */
INLINE __m512i interleave(__m256i a, __m256i b)
{
    return _mm512_or_si512(_mm512_cvtepu16_epi32(a),
                           _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
}

static decl_pack_v_bf16_fn(pack_v_bf16_avx512)
{
    for (int j = 0; j < nk; j += 2) {
        const uint16_t *a = v + j * v_stride, *b = a + v_stride;
        const int two = j + 1 < nk;
        uint32_t *out = vp + j / 2 * vp_stride;
        for (int c = 0; c < dv; c += 16) {
            const __mmask16 m = lanes(dv - c);
            const __m256i x = _mm256_maskz_loadu_epi16(m, a + c);
            const __m256i y = two ? _mm256_maskz_loadu_epi16(m, b + c) : _mm256_setzero_si256();
            _mm512_mask_storeu_epi32(out + c, m, interleave(x, y));
        }
    }
}

static decl_pack_p_bf16_fn(pack_p_bf16_avx512)
{
    for (int j = 0; j < nk; j += 2) {
        const float *a = pt + j * pt_stride, *b = a + pt_stride;
        const int two = j + 1 < nk;
        uint32_t *out = pp + j / 2 * pp_stride;
        for (int i = 0; i < nq; i += 16) {
            const __mmask16 m = lanes(nq - i);
            const __m256i x = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, a + i));
            const __m256i y = two ? (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, b + i))
                                  : _mm256_setzero_si256();
            _mm512_mask_storeu_epi32(out + i, m, interleave(x, y));
        }
    }
}

/* Q^T in pairs: each row of Q is a row of 32-bit pairs, so this is the
 * 32-bit transpose of an nq x dk/2 matrix, one row of Q^T (16 queries) per
 * gather. Once per query block, against the block's whole pass over the
 * keys. An odd dk's last pair holds the last d and 0. */
static decl_pack_qt_bf16_fn(pack_qt_bf16_avx512)
{
    const int pairs = dk / 2;
    for (int i0 = 0; i0 < nq; i0 += 16) {
        const int ni = nq - i0 < 16 ? nq - i0 : 16;
        const __mmask16 rows = lanes(ni);
        for (int c0 = 0; c0 < pairs; c0 += 16) {
            const int nc = pairs - c0 < 16 ? pairs - c0 : 16;
            /* column c of the 16 x 16 block, gathered from the rows */
            const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8,
                                                                    7, 6, 5, 4, 3, 2, 1, 0),
                                                   _mm512_set1_epi32((int)(q_stride / 2)));
            const uint16_t *base = q + i0 * q_stride + 2 * c0;
            if (!(q_stride & 1)) {
#pragma GCC unroll 4
                for (int c = 0; c < 16; c++)
                    if (c < nc)
                        _mm512_mask_storeu_epi32(
                            qt + (c0 + c) * qt_stride + i0, rows,
                            _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), rows, idx,
                                                        base + 2 * c, 4));
            } else {
                for (int c = 0; c < nc; c++)
                    for (int i = 0; i < ni; i++)
                        qt[(c0 + c) * qt_stride + i0 + i] = word(base + i * q_stride + 2 * c);
            }
        }
        if (dk & 1)
            for (int i = 0; i < ni; i++)
                qt[pairs * qt_stride + i0 + i] = q[(i0 + i) * q_stride + dk - 1];
    }
}

INLINE void pv_tile(float *restrict o, ptrdiff_t os, const uint32_t *restrict pp, ptrdiff_t ps,
                    const uint32_t *restrict vp, ptrdiff_t vs, const float *restrict alpha,
                    int nk, const int R, const int NV, const int FULL, __mmask16 tail)
{
    __m512 acc[ROWS][VECS];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        const __m512 a = _mm512_set1_ps(alpha[r]);
#pragma GCC unroll 4
        for (int c = 0; c < NV; c++)
            acc[r][c] = _mm512_mul_ps(a, load_v(o + r * os + 16 * c, c, NV, FULL, tail));
    }
    const int pairs = (nk + 1) / 2;
    for (int j = 0; j < pairs; j++) {
        __m512i b[VECS];
#pragma GCC unroll 4
        for (int c = 0; c < NV; c++)
            b[c] = load_w(vp + j * vs + 16 * c, c, NV, FULL, tail);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const __m512i p = _mm512_set1_epi32((int)pp[j * ps + r]);
#pragma GCC unroll 4
            for (int c = 0; c < NV; c++)
                acc[r][c] = dot(acc[r][c], p, b[c]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < NV; c++)
            store_v(o + r * os + 16 * c, c, NV, FULL, tail, acc[r][c]);
}

#define PV_TILE(R) do {                                                            \
        switch (tail == 0xffff ? nv + 4 : nv) {                                    \
        case 1: pv_tile(out, os, p, ps, vc, vs, a, nk, R, 1, 0, tail); break;      \
        case 2: pv_tile(out, os, p, ps, vc, vs, a, nk, R, 2, 0, tail); break;      \
        case 3: pv_tile(out, os, p, ps, vc, vs, a, nk, R, 3, 0, tail); break;      \
        case 4: pv_tile(out, os, p, ps, vc, vs, a, nk, R, 4, 0, tail); break;      \
        case 5: pv_tile(out, os, p, ps, vc, vs, a, nk, R, 1, 1, tail); break;      \
        case 6: pv_tile(out, os, p, ps, vc, vs, a, nk, R, 2, 1, tail); break;      \
        case 7: pv_tile(out, os, p, ps, vc, vs, a, nk, R, 3, 1, tail); break;      \
        default: pv_tile(out, os, p, ps, vc, vs, a, nk, R, 4, 1, tail); break;     \
        }                                                                          \
    } while (0)

static decl_pv_bf16_fn(pv_bf16_avx512)
{
    const ptrdiff_t os = o_stride, ps = pp_stride, vs = vp_stride;
    for (int c0 = 0; c0 < dv; c0 += 16 * VECS) {
        const int w = dv - c0 < 16 * VECS ? dv - c0 : 16 * VECS;
        const int nv = (w + 15) / 16;
        const __mmask16 tail = lanes(w - 16 * (nv - 1));
        const uint32_t *vc = vp + c0;
        int i = 0;
        for (; i + ROWS <= nq; i += ROWS) {
            float *out = o + i * os + c0;
            const uint32_t *p = pp + i;
            const float *a = alpha + i;
            PV_TILE(ROWS);
        }
        float *out = o + i * os + c0;
        const uint32_t *p = pp + i;
        const float *a = alpha + i;
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

/* Decoding's P.V on bf16 rows of V read in place (pv_rows_bf16): a tile
 * of up to 4 queries by 64 columns of V, two keys a step. The step's 2 x 4
 * weights, rounded to bf16 at once (vcvtne2ps2bf16), are interleaved into
 * each query's pair of keys (one pshufb) and broadcast; each 32 values of
 * the two keys' rows become 16 + 16 pairs in column order by one
 * lane-crossing permute of each row (a 64-bit lane of 4 columns to each
 * half of a 128-bit lane) and an unpack (a 16-column tail: widened and
 * merged, as pack_v_bf16 pairs them). One vdpbf16ps then adds both keys'
 * products to 16 columns of a query, where pv16 takes two FMAs and widens
 * each row's values first. Measured on the 2-core Zen 4 EPYC:
 * bench_kernels, 48 keys of d = 128 in L1, best of 7 rounds, 4 queries
 * 250-273 ns against pv16's 529, 8 queries 489 against 1078, 16 (pv16's
 * 16 x 16 tile) 962-990 against 1899, 32 1926-1946 against 3655 (the
 * weights broadcast from registers, two shuffles each, took 295, 580,
 * 1146-1200 and 2296-2325). Whole decodes (H = 32, Hkv = 8, d = 128, bf16
 * Q and K/V, bench_ab --vs-pv-bf16 off, 9 to 15 alternating rounds, time
 * over pv16's, the medians): in L3 (Nk = 2K, one thread) 0.80-0.81x,
 * Nq = 4 0.87x, pages of 64 0.81x; Nk = 4K on two threads 0.77x; from
 * memory (Nk = 32K, two threads) the dense cache 1.00x, Nk = 128K
 * 1.00-1.08x in three runs, Hkv = 32 0.98-1.03x, B = 16 0.99x, Nq = 4
 * 0.87-0.93x, pages of 16 0.89-0.96x (B = 16 0.89x), pages of 64
 * 0.94-1.02x, pages of 256 0.99x: where the bandwidth bounds, no change
 * beyond the noise; where the arithmetic does, a fifth less time. The
 * outputs moved by P's rounding: NMSE 2e-6 against the double reference
 * at Nk = 2K (1.7e-13 with pv16), as in the prefill's bf16 path. */
INLINE void pvr_pairs32(const uint16_t *a, const uint16_t *b, int two, __mmask32 m, __m512i *lo,
                        __m512i *hi)
{
    const __m512i idx = _mm512_set_epi64(7, 3, 6, 2, 5, 1, 4, 0);
    const __m512i x = _mm512_permutexvar_epi64(idx, _mm512_maskz_loadu_epi16(m, a));
    const __m512i y = two ? _mm512_permutexvar_epi64(idx, _mm512_maskz_loadu_epi16(m, b))
                          : _mm512_setzero_si512();
    *lo = _mm512_unpacklo_epi16(x, y);
    *hi = _mm512_unpackhi_epi16(x, y);
}

INLINE __m512i pvr_pairs16(const uint16_t *a, const uint16_t *b, int two, __mmask16 m)
{
    const __m256i x = _mm256_maskz_loadu_epi16(m, a);
    const __m256i y = two ? _mm256_maskz_loadu_epi16(m, b) : _mm256_setzero_si256();
    return _mm512_or_si512(_mm512_cvtepu16_epi32(x),
                           _mm512_slli_epi32(_mm512_cvtepu16_epi32(y), 16));
}

INLINE void pvr_tile(float *restrict o, ptrdiff_t os, const float *restrict pt, ptrdiff_t ps,
                     const uint16_t *restrict v, ptrdiff_t vs, const float *restrict alpha,
                     int nk, const int R, const int NV, const int FULL, __mmask16 tail,
                     ptrdiff_t pf)
{
    __m512 acc[4][VECS];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        const __m512 a = _mm512_set1_ps(alpha[r]);
#pragma GCC unroll 4
        for (int c = 0; c < NV; c++)
            acc[r][c] = _mm512_mul_ps(a, load_v(o + r * os + 16 * c, c, NV, FULL, tail));
    }
    const __mmask8 qm = (__mmask8)((1u << R) - 1);
    /* bytes of [a0..a3 b0..b3] (words) to [a0 b0 a1 b1 a2 b2 a3 b3] */
    const __m128i inter = _mm_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
    for (int j = 0; j < nk; j += 2) {
        const int two = j + 1 < nk;
        const uint16_t *ra = v + j * vs, *rb = ra + vs;
        if (pf)   /* the two rows pf bytes on (kernels.h), a line per 32 values */
#pragma GCC unroll 4
            for (int c = 0; c < NV; c += 2) {
                _mm_prefetch((const char *)((uintptr_t)(ra + 16 * c) + (uintptr_t)pf), _MM_HINT_T2);
                if (two)
                    _mm_prefetch((const char *)((uintptr_t)(rb + 16 * c) + (uintptr_t)pf),
                                 _MM_HINT_T2);
            }
        const __m128 xa = _mm_maskz_loadu_ps(qm, pt + j * ps);
        const __m128 xb = two ? _mm_maskz_loadu_ps(qm, pt + (j + 1) * ps) : _mm_setzero_ps();
        uint32_t w[4];
        _mm_storeu_si128((__m128i *)w, _mm_shuffle_epi8((__m128i)_mm_cvtne2ps_pbh(xb, xa), inter));
        /* Broadcast from memory (a load each), not shuffled out of the
         * register: GCC's two shuffles a query compete with V's. */
        __asm__ volatile("" : "+m"(w));
        __m512i b[VECS];
#pragma GCC unroll 4
        for (int c = 0; c < NV; c += 2) {
            if (c + 1 < NV) {
                const __mmask32 m = c + 2 < NV || FULL ? 0xffffffffu
                                                       : 0xffffu | (__mmask32)tail << 16;
                pvr_pairs32(ra + 16 * c, rb + 16 * c, two, m, &b[c], &b[c + 1]);
            } else {
                b[c] = pvr_pairs16(ra + 16 * c, rb + 16 * c, two, FULL ? 0xffff : tail);
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const __m512i p = _mm512_set1_epi32((int)w[r]);
#pragma GCC unroll 4
            for (int c = 0; c < NV; c++)
                acc[r][c] = dot(acc[r][c], p, b[c]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < NV; c++)
            store_v(o + r * os + 16 * c, c, NV, FULL, tail, acc[r][c]);
}

#define PVR_TILE(R) do {                                                                \
        switch (tail == 0xffff ? nv + 4 : nv) {                                         \
        case 1: pvr_tile(out, os, p, ps, vc, vs, a, nk, R, 1, 0, tail, pfi); break;      \
        case 2: pvr_tile(out, os, p, ps, vc, vs, a, nk, R, 2, 0, tail, pfi); break;      \
        case 3: pvr_tile(out, os, p, ps, vc, vs, a, nk, R, 3, 0, tail, pfi); break;      \
        case 4: pvr_tile(out, os, p, ps, vc, vs, a, nk, R, 4, 0, tail, pfi); break;      \
        case 5: pvr_tile(out, os, p, ps, vc, vs, a, nk, R, 1, 1, tail, pfi); break;      \
        case 6: pvr_tile(out, os, p, ps, vc, vs, a, nk, R, 2, 1, tail, pfi); break;      \
        case 7: pvr_tile(out, os, p, ps, vc, vs, a, nk, R, 3, 1, tail, pfi); break;      \
        default: pvr_tile(out, os, p, ps, vc, vs, a, nk, R, 4, 1, tail, pfi); break;     \
        }                                                                               \
    } while (0)

static decl_pv_rows_bf16_fn(pv_rows_bf16_avx512)
{
    const ptrdiff_t os = o_stride, ps = pt_stride, vs = v_stride;
    for (int c0 = 0; c0 < dv; c0 += 16 * VECS) {
        const int w = dv - c0 < 16 * VECS ? dv - c0 : 16 * VECS;
        const int nv = (w + 15) / 16;
        const __mmask16 tail = lanes(w - 16 * (nv - 1));
        const uint16_t *vc = v + c0;
        for (int i = 0; i < nq; i += 4) {
            float *out = o + i * os + c0;
            const float *p = pt + i, *a = alpha + i;
            /* the row ahead: once, by the first row group */
            const ptrdiff_t pfi = i == 0 ? pf : 0;
            switch (nq - i < 4 ? nq - i : 4) {
            case 1: PVR_TILE(1); break;
            case 2: PVR_TILE(2); break;
            case 3: PVR_TILE(3); break;
            default: PVR_TILE(4); break;
            }
        }
    }
}

void attn_kernels_init_avx512_bf16(attn_kernels *k)
{
    k->pack_qt_bf16 = pack_qt_bf16_avx512;
    k->qk_bf16 = qk_bf16_avx512;
    k->qk_rows_bf16 = qk_rows_bf16_avx512;
    k->pack_v_bf16 = pack_v_bf16_avx512;
    k->pack_p_bf16 = pack_p_bf16_avx512;
    k->pv_bf16 = pv_bf16_avx512;
    k->pv_rows_bf16 = pv_rows_bf16_avx512;
    /* AMD's cores: measured on Zen 4 (above), Zen 5 by the same rule, not
     * measured there; Intel's keep pv16 (not measured). */
    k->pv_rows = attn_cpu_amd();
    k->bf16_dot = 1;
}

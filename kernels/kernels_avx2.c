/* AVX2 + FMA versions (and F16C, which every AVX2 CPU has). This file alone
 * is compiled with -mavx2 -mfma -mf16c; nothing here runs unless the CPU
 * reports all three.
 *
 * With 16 ymm registers the tiles are 6 x 16: 12 accumulators, 2 vector
 * loads and one broadcast per step. Tails use maskload/maskstore lanes. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels.h"

#define ROWS 6
#define VECS 2   /* ymm per tile row: 16 floats */

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

INLINE void qk_tile(float *restrict st, ptrdiff_t ss, const float *restrict k, ptrdiff_t ks,
                    const float *restrict qt, ptrdiff_t qs, int dk,
                    const int R, const int NV, const int FULL, __m256i tail)
{
    __m256 acc[ROWS][VECS];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            acc[r][v] = _mm256_setzero_ps();
    for (int c = 0; c < dk; c++) {
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
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            store(st + r * ss + 8 * v, tail, v < NV - 1 || FULL, acc[r][v]);
}

#define QK_TILE(R) do {                                                        \
        if (nv == 2 && full) qk_tile(s, ss, kr, ks, q, qs, dk, R, 2, 1, tail); \
        else if (nv == 2)    qk_tile(s, ss, kr, ks, q, qs, dk, R, 2, 0, tail); \
        else                 qk_tile(s, ss, kr, ks, q, qs, dk, R, 1, 0, tail); \
    } while (0)

static decl_qk_fn(qk_avx2)
{
    (void)pf;   /* no prefetching here: the tiled backend prefetches decoding's tiles */
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
                          __m256i t, const int full, const int masked)
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
        store(s, t, full, p);
        sum = _mm256_add_ps(sum, p);
    }
    store(m, t, full, mnew);
    store(l, t, full, sum);
    store(alpha, t, full, a);
}

static decl_softmax_fn(softmax_avx2)
{
    for (int i = 0; i < nq; i += 8) {
        const int full = nq - i >= 8;
        const __m256i t = lanes(nq - i);
        if (end && full)
            softmax_strip(st + i, st_stride, nk, end + i, m + i, l + i, alpha + i, t, 1, 1);
        else if (end)
            softmax_strip(st + i, st_stride, nk, end + i, m + i, l + i, alpha + i, t, 0, 1);
        else if (full)
            softmax_strip(st + i, st_stride, nk, NULL, m + i, l + i, alpha + i, t, 1, 0);
        else
            softmax_strip(st + i, st_stride, nk, NULL, m + i, l + i, alpha + i, t, 0, 0);
    }
}

INLINE void pv_tile(float *restrict o, ptrdiff_t os, const float *restrict pt, ptrdiff_t ps,
                    const float *restrict v, ptrdiff_t vs, const float *restrict alpha, int nk,
                    const int R, const int NV, const int FULL, __m256i tail, const int TR)
{
    __m256 acc[ROWS][VECS];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        const __m256 a = _mm256_broadcast_ss(alpha + r);
#pragma GCC unroll 2
        for (int c = 0; c < NV; c++)
            acc[r][c] = _mm256_mul_ps(a, load(o + r * os + 8 * c, tail, c < NV - 1 || FULL));
    }
    for (int j = 0; j < nk; j++) {
        __m256 b[VECS];
#pragma GCC unroll 2
        for (int c = 0; c < NV; c++)
            b[c] = load(v + j * vs + 8 * c, tail, c < NV - 1 || FULL);
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
        for (int c = 0; c < NV; c++)
            store(o + r * os + 8 * c, tail, c < NV - 1 || FULL, acc[r][c]);
}

#define PV_TILE(R) do {                                                               \
        if (nv == 2 && full) pv_tile(out, os, p, ps, vc, vs, a, nk, R, 2, 1, tail, TR);  \
        else if (nv == 2)    pv_tile(out, os, p, ps, vc, vs, a, nk, R, 2, 0, tail, TR);  \
        else                 pv_tile(out, os, p, ps, vc, vs, a, nk, R, 1, 0, tail, TR);  \
    } while (0)

INLINE void pv_any(float *restrict o, ptrdiff_t o_stride, const float *restrict pt,
                   ptrdiff_t pt_stride, const float *restrict v, ptrdiff_t v_stride,
                   const float *restrict alpha, int nq, int nk, int dv, const int TR)
{
    const ptrdiff_t os = o_stride, ps = pt_stride, vs = v_stride;
    for (int c0 = 0; c0 < dv; c0 += 8 * VECS) {
        const int w = dv - c0 < 8 * VECS ? dv - c0 : 8 * VECS;
        const int nv = (w + 7) / 8;
        const int full = w == 8 * VECS;
        const __m256i tail = lanes(w - 8 * (nv - 1));
        const float *vc = v + c0;
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
    (void)pf;
    pv_any(o, o_stride, pt, pt_stride, v, v_stride, alpha, nq, nk, dv, 0);
}

static decl_pv_t_fn(pv_t_avx2)
{
    pv_any(o, o_stride, p, p_stride, v, v_stride, alpha, nq, nk, dv, 1);
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

/* One score as a dot product along d: two 8-lane accumulators, a masked
 * tail, then a horizontal sum. */
static decl_qk_rows_fn(qk_rows_avx2)
{
    (void)pf;   /* no prefetching here, as in qk */
    const int full = dk / 8 * 8;
    const __m256i tail = lanes(dk - full);
    for (int j = 0; j < nk; j++) {
        const float *kr = k + j * k_stride;
        for (int i = 0; i < nq; i++) {
            const float *qr = q + i * q_stride;
            __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
            int c = 0;
            for (; c + 16 <= full; c += 16) {
                a0 = _mm256_fmadd_ps(_mm256_loadu_ps(kr + c), _mm256_loadu_ps(qr + c), a0);
                a1 = _mm256_fmadd_ps(_mm256_loadu_ps(kr + c + 8), _mm256_loadu_ps(qr + c + 8), a1);
            }
            if (c < full)
                a0 = _mm256_fmadd_ps(_mm256_loadu_ps(kr + c), _mm256_loadu_ps(qr + c), a0);
            if (full < dk)
                a1 = _mm256_fmadd_ps(_mm256_maskload_ps(kr + full, tail),
                                     _mm256_maskload_ps(qr + full, tail), a1);
            const __m256 a = _mm256_add_ps(a0, a1);
            __m128 x = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
            x = _mm_add_ps(x, _mm_movehl_ps(x, x));
            x = _mm_add_ss(x, _mm_movehdup_ps(x));
            st[j * st_stride + i] = _mm_cvtss_f32(x);
        }
    }
}

/* 16-bit rows widened 8 at a time: bf16 by a shift into the upper half,
 * fp16 by vcvtph2ps (F16C); the tail of a row through a small buffer. */
static decl_cvt_rows_fn(cvt_rows_avx2)
{
    for (int r = 0; r < rows; r++) {
        const uint16_t *s = src + r * src_stride;
        float *d = dst + r * dst_stride;
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

void attn_kernels_init_avx2(attn_kernels *k)
{
    k->isa = ATTN_ISA_AVX2;
    k->qk = qk_avx2;
    k->qk_rows = qk_rows_avx2;
    k->softmax = softmax_avx2;
    k->pv = pv_avx2;
    k->pv_t = pv_t_avx2;
    k->softmax_rows = softmax_rows_avx2;
    k->exp2 = exp2_avx2;
    k->cvt_rows = cvt_rows_avx2;
}

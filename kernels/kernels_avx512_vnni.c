/* AVX-512 with AVX512_VNNI: decoding's scores from a q8_0 or q4_0 K with Q
 * in q8_0 (qk_rows_i8, kernels.h), on vpdpbusd. This file alone is
 * compiled with -mavx512vnni; nothing here runs unless the CPU reports it
 * (kernels.c).
 *
 * vpdpbusd adds, per 32-bit lane, the four products of an unsigned byte
 * of one operand and a signed byte of the other: 64 products a vector.
 * K is the unsigned operand: q8_0's integers plus 128 (the sign bit
 * flipped), q4_0's nibbles as stored (the integer plus 8); the offset
 * times the sum of Q's four bytes of each lane is taken back by that
 * lane's starting value, so that every lane holds the exact sum of its
 * own four products (a correction in one lane per block would be
 * cancelled only after the rounding of the fp32 products). A vector holds
 * two blocks of one key (q8_0: one block a 256-bit half; q4_0: each
 * block's low nibbles in one quarter, its high ones in another, Q's bytes
 * arranged to match), so its 16 lanes are partial sums of two blocks:
 * converted to fp32 (exact: at most 4 * 127 * 128 in magnitude) and
 * multiplied by the product of the two blocks' scales (exact: 11 bits
 * each) lane by lane, into one fp32 accumulator per key and query, summed
 * across lanes at the end by the tree of the fp32 kernels (sum16). The
 * same terms as the C definition's, summed in another order: fp32
 * rounding apart, the same scores. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "kernels_avx512.h"

/* Q's rows for a group of up to 4 queries, arranged once per call: per
 * query i and pair of blocks p, the 64 bytes vpdpbusd takes (qv), the
 * accumulator's starting value (init: each lane's offset correction) and
 * the scales of Q's blocks lane by lane (dq). At most MAX_PAIRS pairs
 * (d <= 512); wider rows go to C's. */
#define MAX_PAIRS 8

typedef struct q_prep {
    __m512i qv[4][MAX_PAIRS];
    __m512i init[4][MAX_PAIRS];
    __m512 dq[4][MAX_PAIRS];
} q_prep;

INLINE uint16_t half_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof(h));
    return h;
}

/* Lanes of each block: q8_0 (block 2p in lanes 0-7, 2p + 1 in 8-15);
 * q4_0 (2p in 0-3 and 8-11, 2p + 1 in 4-7 and 12-15). */
INLINE __m512 pair_scales(uint16_t s0, uint16_t s1, const int Q4)
{
    __m256i h;
    if (Q4) {
        const __m128i x = _mm_unpacklo_epi64(_mm_set1_epi16((short)s0), _mm_set1_epi16((short)s1));
        h = _mm256_inserti128_si256(_mm256_castsi128_si256(x), x, 1);
    } else {
        h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)s0)),
                                    _mm_set1_epi16((short)s1), 1);
    }
    return _mm512_cvtph_ps(h);
}

static void prep_q(q_prep *x, const uint8_t *q, ptrdiff_t qs, int nq, int blocks, const int Q4)
{
    /* the offset as vpdpbusd's unsigned operand: each lane's -init */
    const __m512i off = _mm512_set1_epi8(Q4 ? 8 : (char)0x80);
    for (int i = 0; i < nq; i++)
        for (int p = 0; 2 * p < blocks; p++) {
            const uint8_t *b0 = q + i * qs + 2 * p * 34;
            const int two = 2 * p + 1 < blocks;
            __m512i v;
            if (Q4) {
                /* [2p low | 2p+1 low | 2p high | 2p+1 high]: low nibble j
                 * of a block is value j, the high one value j + 16 */
                const __m128i z = _mm_setzero_si128();
                const __m128i a0 = _mm_loadu_si128((const __m128i *)(b0 + 2)),
                              a1 = _mm_loadu_si128((const __m128i *)(b0 + 18)),
                              c0 = two ? _mm_loadu_si128((const __m128i *)(b0 + 36)) : z,
                              c1 = two ? _mm_loadu_si128((const __m128i *)(b0 + 52)) : z;
                v = _mm512_inserti64x4(
                    _mm512_castsi256_si512(
                        _mm256_inserti128_si256(_mm256_castsi128_si256(a0), c0, 1)),
                    _mm256_inserti128_si256(_mm256_castsi128_si256(a1), c1, 1), 1);
            } else {
                const __m256i y1 = two ? _mm256_loadu_si256((const __m256i *)(b0 + 36))
                                       : _mm256_setzero_si256();
                v = _mm512_inserti64x4(
                    _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(b0 + 2))), y1, 1);
            }
            x->qv[i][p] = v;
            x->init[i][p] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                             _mm512_dpbusd_epi32(_mm512_setzero_si512(), off, v));
            x->dq[i][p] = pair_scales(half_at(b0), two ? half_at(b0 + 34) : 0, Q4);
        }
}

/* The two scales of a key's pair of blocks, lane by lane as pair_scales
 * puts them, from one masked load of the words up to the second scale
 * (nothing read past it) and a permutation. */
INLINE __m512 key_scales(const uint8_t *b0, int two, const int Q4)
{
    if (!two)
        return pair_scales(half_at(b0), 0, Q4);
    const int w1 = Q4 ? 9 : 17;   /* the second scale's word: byte 18 or 34 */
    const __m512i words = _mm512_maskz_loadu_epi16((__mmask32)((2u << w1) - 1), b0);
    const __m512i idx = Q4 ? _mm512_set_epi64(0, 0, 0, 0, 0x0009000900090009, 0x0000000000000000,
                                               0x0009000900090009, 0x0000000000000000)
                           : _mm512_set_epi64(0, 0, 0, 0, 0x0011001100110011, 0x0011001100110011,
                                               0x0000000000000000, 0x0000000000000000);
    return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(idx, words)));
}

/* Key row's pair p as vpdpbusd's unsigned operand, and its scales lane by
 * lane (a lone last block: the other half zero). */
INLINE __m512i key_pair(const uint8_t *row, int p, int two, const int Q4, __m512 *dk)
{
    if (Q4) {
        const uint8_t *b0 = row + 2 * p * 18;
        const __m128i x0 = _mm_loadu_si128((const __m128i *)(b0 + 2));
        const __m128i x1 = two ? _mm_loadu_si128((const __m128i *)(b0 + 20)) : _mm_setzero_si128();
        *dk = key_scales(b0, two, 1);
        /* [x0 x1 x0 x1], the upper half shifted down a nibble, masked */
        const __m256i y = _mm256_inserti128_si256(_mm256_castsi128_si256(x0), x1, 1);
        const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(y), y, 1);
        return _mm512_and_si512(_mm512_mask_srli_epi16(z, (__mmask32)0xffff0000u, z, 4),
                                _mm512_set1_epi8(0x0f));
    }
    const uint8_t *b0 = row + 2 * p * 34;
    const __m256i y0 = _mm256_loadu_si256((const __m256i *)(b0 + 2));
    const __m256i y1 = two ? _mm256_loadu_si256((const __m256i *)(b0 + 36))
                           : _mm256_set1_epi8((char)0x80);   /* 0 after the flip */
    *dk = key_scales(b0, two, 0);
    return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(y0), y1, 1),
                            _mm512_set1_epi8((char)0x80));
}

/* NK keys (1..4) against NQ queries (1..4) of x: 16 accumulators, one per
 * (key, query), summed by sum16, scattered to S^T. */
INLINE void keys4(float *restrict st, ptrdiff_t ss, const uint8_t *k, ptrdiff_t ks,
                  const q_prep *x, int blocks_rt, float scale, ptrdiff_t pf, const int NK,
                  const int NQ, const int Q4, const int B)
{
    const int blocks = B ? B : blocks_rt;
    __m512 acc[16];
#pragma GCC unroll 16
    for (int a = 0; a < 16; a++)
        acc[a] = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int p = 0; 2 * p < blocks; p++) {
        const int two = 2 * p + 1 < blocks;
#pragma GCC unroll 4
        for (int r = 0; r < NK; r++) {
            const uint8_t *row = k + r * ks;
            if (pf) {   /* one per block, as the other kernels' */
                const ptrdiff_t at = 2 * p * (Q4 ? 18 : 34) + pf;
                _mm_prefetch((const char *)((uintptr_t)row + (uintptr_t)at), _MM_HINT_T2);
                _mm_prefetch((const char *)((uintptr_t)row + (uintptr_t)(at + (Q4 ? 18 : 34))),
                             _MM_HINT_T2);
            }
            __m512 dk;
            const __m512i kv = key_pair(row, p, two, Q4, &dk);
#pragma GCC unroll 4
            for (int i = 0; i < NQ; i++) {
                const __m512i d = _mm512_dpbusd_epi32(x->init[i][p], kv, x->qv[i][p]);
                acc[r * 4 + i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d),
                                                 _mm512_mul_ps(dk, x->dq[i][p]), acc[r * 4 + i]);
            }
        }
    }
    scatter_4x4(st, ss, _mm512_mul_ps(sum16(acc), _mm512_set1_ps(scale)), NK, NQ);
}

#define KEYS4(NK) do {                                                                   \
        switch (nqq) {                                                                   \
        case 1: keys4(s, ss, kj, ks, &x, blocks, scale, pf, NK, 1, Q4, B); break;        \
        case 2: keys4(s, ss, kj, ks, &x, blocks, scale, pf, NK, 2, Q4, B); break;        \
        case 3: keys4(s, ss, kj, ks, &x, blocks, scale, pf, NK, 3, Q4, B); break;        \
        default: keys4(s, ss, kj, ks, &x, blocks, scale, pf, NK, 4, Q4, B); break;       \
        }                                                                                \
    } while (0)

INLINE void rows_i8(float *restrict st, ptrdiff_t ss, const uint8_t *k, ptrdiff_t ks,
                    const uint8_t *q, ptrdiff_t qs, int nk, int nq, int dk, float scale,
                    ptrdiff_t pf_rows, const int Q4, const int B)
{
    const int blocks = dk / ATTN_QBLOCK;
    q_prep x;
    for (int i = 0; i < nq; i += 4) {
        const int nqq = nq - i < 4 ? nq - i : 4;
        const ptrdiff_t pf = i == 0 ? pf_rows : 0;
        prep_q(&x, q + i * qs, qs, nqq, blocks, Q4);
        for (int j = 0; j < nk; j += 4) {
            float *s = st + j * ss + i;
            const uint8_t *kj = k + j * ks;
            switch (nk - j < 4 ? nk - j : 4) {
            case 1: KEYS4(1); break;
            case 2: KEYS4(2); break;
            case 3: KEYS4(3); break;
            default: KEYS4(4); break;
            }
        }
    }
}

/* The usual d as constants of their own instances: the pairs unrolled. */
INLINE void rows_d(float *restrict st, ptrdiff_t ss, const uint8_t *k, ptrdiff_t ks,
                   const uint8_t *q, ptrdiff_t qs, int nk, int nq, int dk, float scale,
                   ptrdiff_t pf, const int Q4)
{
    switch (dk) {
    case 64: rows_i8(st, ss, k, ks, q, qs, nk, nq, dk, scale, pf, Q4, 2); break;
    case 128: rows_i8(st, ss, k, ks, q, qs, nk, nq, dk, scale, pf, Q4, 4); break;
    case 256: rows_i8(st, ss, k, ks, q, qs, nk, nq, dk, scale, pf, Q4, 8); break;
    default: rows_i8(st, ss, k, ks, q, qs, nk, nq, dk, scale, pf, Q4, 0); break;
    }
}

/* Each format's instances in a function of its own. */
#define ROWS_FMT(NAME, Q4)                                                                     \
    static __attribute__((noinline)) void NAME(float *restrict st, ptrdiff_t ss,              \
                                               const uint8_t *k, ptrdiff_t ks,                 \
                                               const uint8_t *q, ptrdiff_t qs, int nk, int nq, \
                                               int dk, float scale, ptrdiff_t pf)              \
    {                                                                                          \
        rows_d(st, ss, k, ks, q, qs, nk, nq, dk, scale, pf, Q4);                               \
    }
ROWS_FMT(rows_q8_0, 0)
ROWS_FMT(rows_q4_0, 1)

static attn_qk_rows_i8_fn *c_version;

static decl_qk_rows_i8_fn(qk_rows_i8_vnni)
{
    if (dk > 2 * MAX_PAIRS * ATTN_QBLOCK) {
        c_version(st, st_stride, k, k_stride, q, q_stride, nk, nq, dk, fmt, scale, pf);
        return;
    }
    /* pf: bytes ahead of each row, as qk_rows_q's */
    (fmt == ATTN_KVQ_Q8_0 ? rows_q8_0 : rows_q4_0)(st, st_stride, k, k_stride, q, q_stride, nk,
                                                    nq, dk, scale, pf);
}

void attn_kernels_init_avx512_vnni(attn_kernels *k)
{
    c_version = k->qk_rows_i8;
    k->qk_rows_i8 = qk_rows_i8_vnni;
    k->int8_dot = 1;
}

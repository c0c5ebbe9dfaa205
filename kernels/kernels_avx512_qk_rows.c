/* AVX-512 Q.K^T of decoding on K's rows in their storage (qk_rows,
 * qk_rows16, qk_rows_q: rows_entry.h's entry points), as dot products
 * along d; a file of its own (kernels_avx512_rows.h says why). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "kernels_avx512.h"
#include "kernels_avx512_rows.h"
#include "rows_of.h"

/* 4 keys x 4 queries at a time, so each row of K is loaded (and for
 * 16-bit K widened) once for up to 4 queries: 16 accumulators, one per
 * (key, query), reduced by the same tree into one vector of 16 scores,
 * scattered to their places. NK keys and NQ queries (1..4 each) are
 * constants of each instance; K's rows k are stored as ST says.
 * Measured on the 2-core EPYC, decoding H = 32, Hkv = 8 (4 queries a
 * tile), d = 128: widening per query made Q.K^T cost 2.5 of a 5.5 ms run
 * at Nk = 32K. With fp32 K, the blocks replaced one pass over the keys per
 * query: tiles of 16 queries (Nq = 4 of each of 4 heads, Nk = 32K), in two
 * runs each interleaved with the old limit of 8 columns (22.2 and 22.6 ms),
 * took 20.5 ms with one pass per query and 19.9 ms with these blocks
 * (medians of 3 processes each). */
INLINE void qk_keys4(float *restrict st, ptrdiff_t ss, rows_of k, const float *restrict q,
                     ptrdiff_t qs, int dk, const int NK, const int NQ, ptrdiff_t pf, const int ST,
                     const int WHOLE)
{
    __m512 acc[16];
#pragma GCC unroll 16
    for (int a = 0; a < 16; a++)
        acc[a] = _mm512_setzero_ps();
    const ptrdiff_t ahead = pf;
    /* 32 values a step (a block of q8_0 or q4_0), in two halves */
    for (int c0 = 0; c0 < dk; c0 += 32)
#pragma GCC unroll 2
        for (int h = 0; h < 32; h += 16) {
            const int c = c0 + h;
            if (!WHOLE && c >= dk)
                break;
            const __mmask16 t = WHOLE ? (__mmask16)0xffff : lanes(dk - c);
            const int full = WHOLE || c + 16 <= dk;
            __m512 qv[4];
#pragma GCC unroll 4
            for (int i = 0; i < NQ; i++)
                qv[i] = full ? _mm512_loadu_ps(q + i * qs + c)
                             : _mm512_maskz_loadu_ps(t, q + i * qs + c);
#pragma GCC unroll 4
            for (int r = 0; r < NK; r++) {
                /* one prefetch per 64 bytes on the first query group (a
                 * quantized row: one per 32 values, its blocks) */
                if (pf && (ST == ST_F32 || !h))
                    _mm_prefetch(row_addr(&k, r, c, ahead, ST), _MM_HINT_T2);
                const __m512 kv = row_load(&k, r, c0, h, t, full, ST);
#pragma GCC unroll 4
                for (int i = 0; i < NQ; i++)
                    acc[r * 4 + i] = _mm512_fmadd_ps(kv, qv[i], acc[r * 4 + i]);
            }
        }
    /* fp8: the head's factor, once for the sums (load_quant) */
    const __m512 sums = sum16(acc);
    scatter_4x4(st, ss,
                ST_FP8(ST) ? _mm512_mul_ps(sums, _mm512_set1_ps(fp8_mult(k.scale, ST == ST_E4M3)))
                           : sums,
                NK, NQ);
}

#define QK_KEYS4(NK) do {                                                              \
        switch (nqq) {                                                                 \
        case 1: qk_keys4(s, ss, kj, qq, qs, dk, NK, 1, pf, ST, WHOLE); break;          \
        case 2: qk_keys4(s, ss, kj, qq, qs, dk, NK, 2, pf, ST, WHOLE); break;          \
        case 3: qk_keys4(s, ss, kj, qq, qs, dk, NK, 3, pf, ST, WHOLE); break;          \
        default: qk_keys4(s, ss, kj, qq, qs, dk, NK, 4, pf, ST, WHOLE); break;         \
        }                                                                              \
    } while (0)

INLINE void qk_rows_keys(float *restrict st, ptrdiff_t ss, rows_of k, const float *restrict q,
                         ptrdiff_t qs, int nk, int nq, int dk, ptrdiff_t pf_rows, const int ST,
                         const int WHOLE)
{
    for (int i = 0; i < nq; i += 4) {
        const int nqq = nq - i < 4 ? nq - i : 4;
        const ptrdiff_t pf = i == 0 ? pf_rows : 0;
        const float *qq = q + i * qs;
        for (int j = 0; j < nk; j += 4) {
            float *s = st + j * ss + i;
            const rows_of kj = rows_from(k, j, ST);
            switch (nk - j < 4 ? nk - j : 4) {
            case 1: QK_KEYS4(1); break;
            case 2: QK_KEYS4(2); break;
            case 3: QK_KEYS4(3); break;
            default: QK_KEYS4(4); break;
            }
        }
    }
}

/* WHOLE (a constant): d a multiple of 32, so every step's two halves are
 * whole vectors, with no tail's mask or test to carry. With the tests in
 * (whether each half is whole, a compare and branch before each row's
 * load) the compiled loop carried nearly as many other instructions as
 * FMAs (this VM has no counters to say which resource that exhausts; a
 * core that issues 4 a cycle is the likely one): on the 2-core Intel Xeon
 * (Skylake-SP, AVX-512, 2.5 GHz, peak 151 GFLOP/s a core), 48 keys of
 * d = 128 in L1, the old kernel and this one alternating 15 times in one
 * process, best of each: 49 GFLOP/s against 31 for 4 queries, 80 against
 * 51 for 8 and 16 (72-77 against 49-51 with the prefetch). qk_rows16 and
 * qk_rows_q take the same loop. The usual d as constants of their own
 * instances, as kernels_avx2.c has them, added nothing here: 73-77
 * against this loop's 76-80 in the same way. Nor, for bf16 K, 32 values
 * widened from one 64-byte load by one shift (the even ones) and one mask
 * (the odd ones), Q's rows laid out even and odd to match, where
 * vpmovzxwd and vpslld take two instructions for 16: 754 against 757 ns
 * at 4 queries and 3006 against 3004 at 16 (best of 8 and 4 runs, old and
 * new builds in turn), so the widening is not what bounds this loop.
 * q8_0 and q4_0 rows are whole blocks (d a multiple of 32, the formats'
 * rule): WHOLE is the only instance compiled for them. */
INLINE void qk_rows_any(float *restrict st, ptrdiff_t ss, rows_of k, const float *restrict q,
                        ptrdiff_t qs, int nk, int nq, int dk, ptrdiff_t pf_rows, const int ST)
{
    if (dk % 32 == 0 || ST == ST_Q8_0 || ST == ST_Q4_0)
        qk_rows_keys(st, ss, k, q, qs, nk, nq, dk, pf_rows, ST, 1);
    else
        qk_rows_keys(st, ss, k, q, qs, nk, nq, dk, pf_rows, ST, 0);
}

#define ROWS_ISA avx512
#define ROWS_PART_QK
#include "rows_entry.h"

void attn_kernels_init_avx512_qk_rows(attn_kernels *k)
{
    k->qk_rows = qk_rows_avx512;
    k->qk_rows16 = qk_rows16_avx512;
    k->qk_rows_q = qk_rows_q_avx512;
}

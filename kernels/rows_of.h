/* The K or V rows a decoding kernel reads, in their storage (fp32, 16-bit
 * or a quantized cache), as the SIMD kernel files describe them to their
 * inlined templates. Plain C: included by each ISA's file. */
#ifndef ATTN_ROWS_OF_H
#define ATTN_ROWS_OF_H

#include <stddef.h>
#include <stdint.h>

/* Storage of the K or V rows a kernel reads (a constant of each instance):
 * fp32, 16-bit widened to fp32 in registers as it is loaded, or a
 * quantized cache (quant.h) read back to fp32 in registers, bit for bit
 * as its definition reads it (each file's dequant_rows has the
 * arithmetic). */
enum { ST_F32 = 0, ST_F16, ST_BF16, ST_Q8_0, ST_Q4_0, ST_E4M3, ST_E5M2 };

#define ST_QUANT(ST) ((ST) >= ST_Q8_0)
#define ST_FP8(ST) ((ST) == ST_E4M3 || (ST) == ST_E5M2)

/* Rows of K or V as a kernel reads them: f (fp32), h (16-bit) or q
 * (quantized bytes), stride elements (bytes for q) apart; scale: fp8's. */
typedef struct rows_of {
    const float *f;
    const uint16_t *h;
    const uint8_t *q;
    ptrdiff_t stride;
    float scale;
} rows_of;

/* Rows from row j of x on. */
static inline rows_of rows_from(rows_of x, ptrdiff_t j, const int ST)
{
    if (ST_QUANT(ST))
        x.q += j * x.stride;
    else if (ST == ST_F32)
        x.f += j * x.stride;
    else
        x.h += j * x.stride;
    return x;
}

/* What the fp8 kernels multiply their e4m3 values, read back times 2^-8
 * through fp16 (exactly, subnormals too), by: the scale times 2^8. The
 * product is the C definition's value times the scale, rounded once:
 * 2^8 scale is exact for every scale attn_fp8_scale gives (at most
 * FLT_MAX / 448). e5m2 is read back as its value: the scale itself. */
static inline float fp8_mult(float scale, const int E4)
{
    return E4 ? scale * 0x1p8f : scale;
}

/* The address of value c of row r, plus `ahead` bytes, for prefetches
 * (past the end of the array it is no pointer C allows, but a prefetch may
 * name any); for a quantized row, of its block (fp8: its byte). */
static inline const char *row_addr(const rows_of *x, ptrdiff_t r, int c, ptrdiff_t ahead,
                                   const int ST)
{
    if (ST_QUANT(ST)) {
        const ptrdiff_t off = ST == ST_Q8_0   ? (c >> 5) * 34
                              : ST == ST_Q4_0 ? (c >> 5) * 18
                                              : c;
        return (const char *)((uintptr_t)x->q + (uintptr_t)(r * x->stride + off + ahead));
    }
    const ptrdiff_t at = r * x->stride + c;
    return ST == ST_F32 ? (const char *)((uintptr_t)x->f + (uintptr_t)(at * 4 + ahead))
                        : (const char *)((uintptr_t)x->h + (uintptr_t)(at * 2 + ahead));
}

/* Keys stream from memory once in decoding: the row PF_KEYS ahead of the
 * one in hand (twice as many 16-bit rows, four times quantized: about the
 * same bytes; attn_kernels.pf_keys, from which the tiled backend gives the
 * kernels their pf, through the block table in pages) is prefetched
 * towards L2, one prefetch per cache line, so that misses stay in flight
 * while the arithmetic runs (a prefetch never faults: rows past the end of
 * K are harmless). Measured on the 2-core
 * EPYC VM, decoding H = 32, Hkv = 8 and 32, d = 128, Nk = 32K, 48-key
 * tiles: this with the tiled backend's prefetch of the next tile moved
 * 31-48 GB/s, either alone 18-33, against 25-34 with 192-key tiles (hint
 * T0 was slower still: L1's miss buffers bound it). The AVX2 table's
 * distance is a quarter of this (kernels_avx2.c, PF_KEYS_AVX2). */
#define PF_KEYS 192

/* The AVX-512 table's distance on AMD's cores (attn_cpu_amd): a quarter
 * of PF_KEYS, like AVX2's (kernels_avx2.c, PF_KEYS_AVX2), 24 KB of each
 * of K and V ahead at d = 128 in 16 bits. On the 2-core Zen 4 EPYC, one
 * run of bench_ab --pf-keys 192 --vs-pf-keys 48 (H = 32, d = 128, Nq = 1,
 * Nk = 32K, causal, 2 threads, 11 alternating rounds, time near over far,
 * the same bits in every row): Llama-3.1-8B (Hkv = 8, bf16 Q and K/V) in
 * pages of 16, 64 and 256 0.91x, 0.86x and 0.83x at B = 1, 0.98x, 1.02x
 * and 1.02x at B = 16, the contiguous cache 0.98x at both (docs/serving.md);
 * fp32 Q: bf16 K/V 0.97x at Hkv = 32 and 1.01x at Hkv = 8, fp16 0.98x,
 * fp32 at Nk = 128K 0.97x; compute-bound decoding 0.95-1.01x (q8_0, and
 * multi-query at Hkv = 1). Not measured on Zen 5; Intel's cores keep
 * PF_KEYS, not measured there either. */
#define PF_KEYS_AMD 48

/* The AVX-512 table's decoding tile on AMD's cores (attn_kernels.dec_keys)
 * where K/V are 16-bit or quantized in a dense cache: 192 keys, where the
 * rule of half of L1 gives 32 or 48 at d = 128. The softmax and the
 * accumulator's rescaling come once a tile, and at 1 to 16 columns a
 * short tile spends on them a good part of what its dot products take;
 * the prefetch distance (PF_KEYS_AMD) does not depend on the tile there.
 * backends/tiled/plan.c has the figures (the 2-core Zen 4 EPYC); not
 * measured on Zen 5 or on Intel's cores, which keep the rule. */
#define DEC_KEYS_AMD 192

/* The widening kernels (cvt_rows, AVX-512) also prefetch the row PF_NEAR
 * ahead of the one in hand into L1: the rows after the WIDEN_ROWS
 * (backends/tiled/keys.c) that the tiled backend widens at a time for qk.
 * cvt_rows's own prefetch, its pf ahead as the other kernels', brings
 * those rows to L2; without this their loads wait on L2 in a loop with
 * nothing else to do, where qk's and P.V's own loads wait among their
 * FMAs: on the 2-core Zen 4 EPYC, decoding
 * (H = 32, Hkv = 8, Nq = 4, d = 128, bf16 K/V, 2 threads) spent 17% of its
 * samples in cvt_rows, most on its loads, against 39% in qk; with this,
 * 0.90-0.97x the time at B = 1, Nk = 32K and 0.90-0.95x at B = 8,
 * Nk = 16K (medians of 5 or 9 interleaved processes, three runs). Not
 * kept: the same in dequant_rows (q8_0, the same shapes: 1.00x). */
#define PF_NEAR 12

/* cvt_rows and dequant_rows once fetched PF_KEYS rows ahead (of their
 * width) whatever the table's distance, and past its page in a paged
 * cache (no row of the block table lies a fixed distance on); they now
 * take the distance the other kernels do (their pf, from the tiled
 * backend's plan). On the 2-core Zen 4 EPYC, the two builds in 9
 * alternating processes (medians; H = 32, d = 128, Nk = 32K, fp32 Q, 2
 * threads): Hkv = 8 q8_0 1.02x the time, fp8e4m3 1.01x; multi-query
 * (Hkv = 1) fp16 1.00x, q8_0 1.00x; Llama-3.1-8B in pages of 16, q8_0
 * 0.99x and fp16 1.00x; fp16 causal prefill (H = 8, N = 2K) 0.99-1.01x
 * over 4 rounds: no change beyond the noise, one rule fewer. */

#endif

/* The quantized K/V cache formats, in plain C: the harness quantizes its
 * inputs through these, the reference and naive read through them, and the
 * tiled backend's tile conversion (and any SIMD version) is tested against
 * them. docs/quantized.md says what each does, and why.
 *
 * Every format is along d, a row of n values at a time:
 *   q8_0     blocks of 32 values: an fp16 scale s = max|x| / 127, then 32
 *            int8 q = round(x / s) (half away from zero); x' = q s.
 *            34 bytes per 32 values (llama.cpp's block_q8_0).
 *   q4_0     blocks of 32 values: an fp16 scale s = m / -8, m the value of
 *            largest magnitude (its sign kept), then 16 bytes: byte j holds
 *            q_j in its low nibble and q_{j+16} in its high one, q =
 *            min(15, trunc(x / s + 8.5)); x' = (q - 8) s. 18 bytes per 32
 *            (llama.cpp's block_q4_0 and its rounding rule).
 *   fp8e4m3  one byte per value, OCP FP8 E4M3 (bias 7, no infinity, NaN
 *            0x7f / 0xff, largest 448), times a per-K/V-head fp32 scale.
 *   fp8e5m2  one byte per value, OCP FP8 E5M2 (bias 15, the upper byte of
 *            an fp16: infinities and NaNs as fp16's, largest 57344), times
 *            the same kind of scale.
 * A block (q8_0, q4_0) holding a NaN or an infinity stores a NaN scale,
 * so that all its 32 values read back as NaN. fp8 rounds to nearest, ties
 * to even, and saturates: a value past the largest finite one (infinities
 * too) is stored as that largest one, with its sign; a NaN stays NaN. The
 * fp8 scale of a K/V head is max|x| over its finite values divided by the
 * format's largest value (1 when that max is 0): the head's largest value
 * is stored as the format's largest.
 *
 * Values read back (dequantized) are fp32: q s in fp32 (exact for q8_0
 * and q4_0: an 8-bit integer times an 11-bit scale), and for fp8 the
 * format's value times the scale, rounded once to fp32. */
#ifndef ATTN_QUANT_H
#define ATTN_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "attnbench/backend.h"   /* attn_kvq, ATTN_QBLOCK, attn_kvq_row_bytes */
#include "half.h"

/* The largest finite value of an fp8 format. */
static inline float attn_fp8_max(attn_kvq f)
{
    return f == ATTN_KVQ_FP8E4M3 ? 448.0f : 57344.0f;
}

/* One fp8 value: its code for x (nearest, ties to even, saturating; NaN:
 * a NaN), and the exact value of a code. */
uint8_t attn_fp8_encode(float x, attn_kvq f);

static inline float attn_fp8_decode(uint8_t c, attn_kvq f)
{
    if (f == ATTN_KVQ_FP8E5M2)
        return attn_f16_to_f32((uint16_t)(c << 8));   /* the upper byte of an fp16 */
    if ((c & 0x7fu) == 0x7fu)
        return attn_bits_f32(0x7fc00000u | (uint32_t)(c & 0x80u) << 24);   /* NaN */
    /* The 7 magnitude bits at fp32's exponent's low end: the value times
     * 2^-120, exact (a subnormal fp32 for e4m3's subnormals). */
    const float v = attn_bits_f32((uint32_t)(c & 0x7fu) << 20) * 0x1p120f;
    return (c & 0x80u) ? -v : v;
}

/* The 256 values of format f's codes (attn_fp8_decode of each). */
const float *attn_fp8_values(attn_kvq f);

/* The fp8 scale of values x[0..n) (above): max|x| over the finite ones
 * divided by the format's largest value; 1 when that max is 0. */
float attn_fp8_scale(const float *x, size_t n, attn_kvq f);

/* Row x[0..n) into dst (attn_kvq_row_bytes(f, n) bytes); scale is the fp8
 * scale (ignored by the block formats). */
void attn_kvq_quantize_row(void *dst, const float *x, size_t n, attn_kvq f, float scale);

/* Row src (n values) read back into x[0..n). */
void attn_kvq_dequantize_row(float *x, const void *src, size_t n, attn_kvq f, float scale);

/* Value i of row src, read back as attn_kvq_dequantize_row would (the
 * reference's element-at-a-time view). */
float attn_kvq_value(const void *src, size_t i, attn_kvq f, float scale);

#endif

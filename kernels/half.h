/* The 16-bit storage types, one value at a time, in plain C: the harness
 * rounds its fp32 inputs through these, the portable kernels and naive read
 * through them, and the SIMD conversions are tested against them.
 *
 * bf16 is the upper half of an fp32 (1 sign, 8 exponent, 7 mantissa bits:
 * fp32's range, 8 bits of precision, unit roundoff 2^-8); fp16 is IEEE
 * binary16 (5 exponent, 10 mantissa bits: 11 bits of precision, unit
 * roundoff 2^-11, largest finite 65504, subnormals from 2^-24). Rounding is
 * to nearest, ties to even; NaN stays NaN (quiet), infinities stay. */
#ifndef ATTN_HALF_H
#define ATTN_HALF_H

#include <stdint.h>
#include <string.h>

static inline float attn_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static inline uint32_t attn_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float attn_bf16_to_f32(uint16_t h)
{
    return attn_bits_f32((uint32_t)h << 16);
}

static inline uint16_t attn_f32_to_bf16(float f)
{
    const uint32_t u = attn_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);   /* NaN: keep it one, quiet */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline float attn_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return attn_bits_f32(sign | 0x7f800000u | (m << 13));
    if (e)
        return attn_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
    const float sub = (float)m * 0x1p-24f;   /* subnormal or zero: exact */
    return sign ? -sub : sub;
}

static inline uint16_t attn_f32_to_f16(float f)
{
    const uint32_t u = attn_f32_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u)                     /* 65520 and up, and inf: inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) {                   /* normal in fp16: rebias 127 -> 15 */
        const uint32_t r = a - 0x38000000u;
        return (uint16_t)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
    }
    const int shift = 126 - (int)(a >> 23);   /* subnormal: units of 2^-24 */
    if (shift > 24)
        return (uint16_t)sign;                /* below 2^-25, or 2^-25 itself (tie to 0) */
    const uint32_t m = (a & 0x7fffffu) | 0x800000u, r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
    return (uint16_t)(sign | (r + (rem > half || (rem == half && (r & 1u)))));
}

/* Element i of a 16-bit tensor of storage type bf16 (bf16 != 0) or fp16. */
static inline float attn_half_to_f32(uint16_t h, int bf16)
{
    return bf16 ? attn_bf16_to_f32(h) : attn_f16_to_f32(h);
}

#endif

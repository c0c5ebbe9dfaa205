/* The quantized K/V formats in plain C (quant.h says what each is). */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "half.h"
#include "quant.h"

/* fp16 NaN: a block's scale when the block holds a NaN or an infinity. */
#define SCALE_NAN 0x7e00u

uint8_t attn_fp8_encode(float x, attn_kvq f)
{
    const int e4 = f == ATTN_KVQ_FP8E4M3, mb = e4 ? 3 : 2, bias = e4 ? 7 : 15;
    const uint8_t sign = signbit(x) ? 0x80u : 0u;
    if (isnan(x))
        return (uint8_t)(sign | (e4 ? 0x7fu : 0x7eu));
    const double a = fabs((double)x), mx = attn_fp8_max(f);
    if (a >= mx)   /* saturating: the largest finite value, infinities too */
        return (uint8_t)(sign | (e4 ? 0x7eu : 0x7bu));
    if (a == 0)
        return sign;
    /* The step of a's binade (of the subnormals below 2^(1 - bias)); a / q
     * is exact, rint rounds it to nearest, ties to even. */
    int e;
    frexp(a, &e);
    const int emin = 1 - bias, E = e - 1 < emin ? emin : e - 1;
    const double r = rint(ldexp(a, mb - E));   /* a in units of 2^(E - mb) */
    if (r < ldexp(1.0, mb) && E == emin)
        return (uint8_t)(sign | (unsigned)r);  /* subnormal (or 0) */
    /* r in [2^mb, 2^(mb+1)]: 2^(mb+1) is the next binade's first value */
    const int up = r >= ldexp(1.0, mb + 1);
    const unsigned m = (unsigned)(up ? r / 2 : r) - (1u << mb);
    return (uint8_t)(sign | (unsigned)(E + up + bias) << mb | m);
}

/* Every code's value, for the row loops (attn_fp8_decode, once each). */
static float fp8_table[2][256];
static pthread_once_t fp8_once = PTHREAD_ONCE_INIT;

static void fp8_fill(void)
{
    for (int c = 0; c < 256; c++) {
        fp8_table[0][c] = attn_fp8_decode((uint8_t)c, ATTN_KVQ_FP8E4M3);
        fp8_table[1][c] = attn_fp8_decode((uint8_t)c, ATTN_KVQ_FP8E5M2);
    }
}

const float *attn_fp8_values(attn_kvq f)
{
    pthread_once(&fp8_once, fp8_fill);
    return fp8_table[f == ATTN_KVQ_FP8E5M2];
}

float attn_fp8_scale(const float *x, size_t n, attn_kvq f)
{
    float amax = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && fabsf(x[i]) > amax)
            amax = fabsf(x[i]);
    return amax > 0 ? amax / attn_fp8_max(f) : 1.0f;
}

static void put16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, sizeof(v));
}

static float get16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return attn_f16_to_f32(v);
}

static int block_finite(const float *x)
{
    for (int j = 0; j < ATTN_QBLOCK; j++)
        if (!isfinite(x[j]))
            return 0;
    return 1;
}

static void q8_0_block(uint8_t *y, const float *x)
{
    if (!block_finite(x)) {
        put16(y, SCALE_NAN);
        memset(y + 2, 0, ATTN_QBLOCK);
        return;
    }
    float amax = 0;
    for (int j = 0; j < ATTN_QBLOCK; j++)
        amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
    const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
    put16(y, attn_f32_to_f16(d));
    for (int j = 0; j < ATTN_QBLOCK; j++)
        y[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
}

static void q4_0_block(uint8_t *y, const float *x)
{
    if (!block_finite(x)) {
        put16(y, SCALE_NAN);
        memset(y + 2, 0x88, ATTN_QBLOCK / 2);
        return;
    }
    float amax = 0, max = 0;
    for (int j = 0; j < ATTN_QBLOCK; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    const float d = max / -8.0f, id = d != 0 ? 1.0f / d : 0.0f;
    put16(y, attn_f32_to_f16(d));
    for (int j = 0; j < ATTN_QBLOCK / 2; j++) {
        const int lo = (int)(int8_t)(x[j] * id + 8.5f), hi = (int)(int8_t)(x[j + 16] * id + 8.5f);
        y[2 + j] = (uint8_t)((lo < 15 ? lo : 15) | (hi < 15 ? hi : 15) << 4);
    }
}

void attn_kvq_quantize_row(void *dst, const float *x, size_t n, attn_kvq f, float scale)
{
    uint8_t *y = dst;
    switch (f) {
    case ATTN_KVQ_Q8_0:
        for (size_t b = 0; b < n / ATTN_QBLOCK; b++)
            q8_0_block(y + b * 34, x + b * ATTN_QBLOCK);
        break;
    case ATTN_KVQ_Q4_0:
        for (size_t b = 0; b < n / ATTN_QBLOCK; b++)
            q4_0_block(y + b * 18, x + b * ATTN_QBLOCK);
        break;
    default:
        for (size_t i = 0; i < n; i++)
            y[i] = attn_fp8_encode(x[i] / scale, f);
        break;
    }
}

float attn_kvq_value(const void *src, size_t i, attn_kvq f, float scale)
{
    const uint8_t *y = src;
    const size_t b = i / ATTN_QBLOCK, j = i % ATTN_QBLOCK;
    switch (f) {
    case ATTN_KVQ_Q8_0:
        return (float)(int8_t)y[b * 34 + 2 + j] * get16(y + b * 34);
    case ATTN_KVQ_Q4_0: {
        const uint8_t q = y[b * 18 + 2 + j % 16];
        return (float)((j < 16 ? q & 0xf : q >> 4) - 8) * get16(y + b * 18);
    }
    default:
        return attn_fp8_decode(y[i], f) * scale;
    }
}

void attn_kvq_dequantize_row(float *x, const void *src, size_t n, attn_kvq f, float scale)
{
    const uint8_t *y = src;
    switch (f) {
    case ATTN_KVQ_Q8_0:
        for (size_t b = 0; b < n / ATTN_QBLOCK; b++) {
            const uint8_t *blk = y + b * 34;
            const float d = get16(blk);
            for (int j = 0; j < ATTN_QBLOCK; j++)
                x[b * ATTN_QBLOCK + j] = (float)(int8_t)blk[2 + j] * d;
        }
        break;
    case ATTN_KVQ_Q4_0:
        for (size_t b = 0; b < n / ATTN_QBLOCK; b++) {
            const uint8_t *blk = y + b * 18;
            const float d = get16(blk);
            for (int j = 0; j < ATTN_QBLOCK / 2; j++) {
                x[b * ATTN_QBLOCK + j] = (float)((blk[2 + j] & 0xf) - 8) * d;
                x[b * ATTN_QBLOCK + j + 16] = (float)((blk[2 + j] >> 4) - 8) * d;
            }
        }
        break;
    default: {
        const float *t = attn_fp8_values(f);
        for (size_t i = 0; i < n; i++)
            x[i] = t[y[i]] * scale;
        break;
    }
    }
}

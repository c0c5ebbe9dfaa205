/* The quantized K/V formats (kernels/quant.h) against hand-worked vectors:
 * what each stores for a block of zeros, for its largest values, for
 * values between two of its steps (the rounding rule), for subnormals and
 * for NaN and infinities; and the harness's end of them: the byte
 * accounting, the reference reading the stored values, the refusals. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "inputs.h"
#include "kernels/half.h"
#include "kernels/quant.h"
#include "memory.h"
#include "tap.h"

static float scale_of(const uint8_t *blk)
{
    uint16_t h;
    memcpy(&h, blk, 2);
    return attn_f16_to_f32(h);
}

/* Row x (n values) through format f and back; true when every value reads
 * back as want[] (NaN as NaN), else why says the first that does not. */
static bool round_trip(const float *x, const float *want, int n, attn_kvq f, float scale,
                       uint8_t *y, char *why, size_t len)
{
    float back[64];
    attn_kvq_quantize_row(y, x, (size_t)n, f, scale);
    attn_kvq_dequantize_row(back, y, (size_t)n, f, scale);
    for (int i = 0; i < n; i++) {
        const float v = attn_kvq_value(y, (size_t)i, f, scale);
        if (!(back[i] == want[i] || (isnan(back[i]) && isnan(want[i]))) ||
            !(v == back[i] || (isnan(v) && isnan(back[i])))) {
            snprintf(why, len, "value %d: %.9g reads back %.9g (one at a time %.9g), not %.9g", i,
                     x[i], back[i], v, want[i]);
            return false;
        }
    }
    return true;
}

static void test_q8_0(void)
{
    char why[200] = "";
    uint8_t y[2 * 34];
    float x[64], want[64];

    memset(x, 0, sizeof(x));
    bool ok = round_trip(x, x, 32, ATTN_KVQ_Q8_0, 1, y, why, sizeof(why)) && scale_of(y) == 0;
    if (!tap_ok(ok, "q8_0: a block of zeros stores scale 0 and reads back zeros"))
        tap_diag("%s", why);

    /* max|x| = 127: scale 1 exactly; integers read back as they are, and
     * halves round away from zero (roundf, llama.cpp's rule). */
    for (int i = 0; i < 32; i++)
        x[i] = want[i] = (float)(i * 8 - 127);   /* -127, -119, ..., 121 */
    x[1] = 63.5f, want[1] = 64;
    x[2] = -63.5f, want[2] = -64;
    x[3] = 127, want[3] = 127;
    ok = round_trip(x, want, 32, ATTN_KVQ_Q8_0, 1, y, why, sizeof(why)) && scale_of(y) == 1.0f &&
         (int8_t)y[2] == -127 && (int8_t)y[3] == 64 && (int8_t)y[4] == -64;
    if (!tap_ok(ok, "q8_0: +-max with scale 1 exactly, int8 as stored, halves away from zero"))
        tap_diag("%s", why);

    /* Values below fp16's range: the scale max|x| / 127 rounds to 0, so the
     * block reads back as zeros (llama.cpp's format does the same). */
    for (int i = 0; i < 32; i++)
        x[i] = 1e-40f * (float)(i - 16), want[i] = 0;
    ok = round_trip(x, want, 32, ATTN_KVQ_Q8_0, 1, y, why, sizeof(why)) && scale_of(y) == 0;
    if (!tap_ok(ok, "q8_0: a block of fp32 subnormals has scale 0 in fp16 and reads back zeros"))
        tap_diag("%s", why);

    /* A NaN or an infinity makes its block's scale NaN: every value of
     * that block reads back NaN; the next block is untouched. */
    for (int i = 0; i < 64; i++)
        x[i] = want[i] = (float)(i % 32 - 16);
    x[70 - 64 + 0] = -INFINITY;
    for (int i = 0; i < 32; i++)
        want[i] = NAN;
    /* The second block's max|x| is 16: steps of the scale 16 / 127 in fp16. */
    const float d = 16.0f / 127.0f;
    for (int i = 32; i < 64; i++)
        want[i] = roundf(x[i] * (1.0f / d)) * attn_f16_to_f32(attn_f32_to_f16(d));
    ok = round_trip(x, want, 64, ATTN_KVQ_Q8_0, 1, y, why, sizeof(why)) && isnan(scale_of(y));
    if (!tap_ok(ok, "q8_0: an infinity makes its block NaN (scale NaN), the next block exact "
                "to its steps"))
        tap_diag("%s", why);
}

/* Q in q8_0 (backend.h): the harness hands Q over as the fp32 values of
 * its blocks, and a backend gets the blocks back by quantizing again. That
 * must give blocks of the same values: over rows of every scale of value
 * (fp16's subnormal scales, scales that round to 0, zero blocks, one value
 * alone), the values read back, quantized again and read back are the
 * same (a block whose scale rounds to 0 may keep other integers beside
 * it: its values are 0 either way, -0 or +0, which no sum tells apart). */
static void test_q8_0_again(void)
{
    char why[200] = "";
    uint8_t y[4 * 34], y2[4 * 34];
    float x[128], back[128], again[128];
    bool ok = true;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int row = 0; ok && row < 20000; row++) {
        /* 2^-36 .. 2^22: a block whose max|x| passes 127 times fp16's
         * largest (65504) has an infinite scale, and reads back inf and NaN */
        const float mag = ldexpf(1.0f, row % 59 - 36);
        for (int i = 0; i < 128; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = mag * ((float)(s >> 40) / (float)(1u << 24) * 2.0f - 1.0f);
        }
        if (row % 7 == 1)
            memset(x + 32, 0, 32 * sizeof(float));
        if (row % 11 == 2)
            for (int i = 64; i < 96; i++)
                x[i] = i == 70 ? -mag : 0.0f;
        attn_kvq_quantize_row(y, x, 128, ATTN_KVQ_Q8_0, 1.0f);
        attn_kvq_dequantize_row(back, y, 128, ATTN_KVQ_Q8_0, 1.0f);
        attn_kvq_quantize_row(y2, back, 128, ATTN_KVQ_Q8_0, 1.0f);
        attn_kvq_dequantize_row(again, y2, 128, ATTN_KVQ_Q8_0, 1.0f);
        for (int i = 0; ok && i < 128; i++)
            if (again[i] != back[i]) {
                snprintf(why, sizeof(why), "row %d (values to %.3g), value %d: %.9g quantized "
                         "again reads back %.9g", row, (double)mag, i, back[i], again[i]);
                ok = false;
            }
    }
    if (!tap_ok(ok, "q8_0: quantizing the values read back gives them back (20000 rows of "
                "every magnitude, zero blocks, lone values): Q in q8_0 goes over in fp32"))
        tap_diag("%s", why);
}

static void test_q4_0(void)
{
    char why[200] = "";
    uint8_t y[2 * 18];
    float x[64], want[64];

    memset(x, 0, sizeof(x));
    bool ok = round_trip(x, x, 32, ATTN_KVQ_Q4_0, 1, y, why, sizeof(why)) && scale_of(y) == 0;
    /* q = trunc(0 + 8.5) = 8: byte 0x88, read back (8 - 8) * 0 */
    ok = ok && y[2] == 0x88 && y[17] == 0x88;
    if (!tap_ok(ok, "q4_0: a block of zeros stores scale 0, nibbles 8, reads back zeros"))
        tap_diag("%s", why);

    /* The largest magnitude -8 (negative): scale -8 / -8 = 1, q = trunc(x +
     * 8.5): -8 -> 0, 7 -> 15, 2.5 -> 11 (halves round up), -2.5 -> 6. */
    for (int i = 0; i < 32; i++)
        x[i] = want[i] = (float)(i % 16 - 8);
    x[0] = -8, want[0] = -8;
    x[1] = 2.5f, want[1] = 3;
    x[2] = -2.5f, want[2] = -2;
    x[16] = 7, want[16] = 7;
    ok = round_trip(x, want, 32, ATTN_KVQ_Q4_0, 1, y, why, sizeof(why)) && scale_of(y) == 1.0f;
    /* byte j: q_j in the low nibble, q_{j+16} in the high one */
    ok = ok && y[2 + 0] == (0x0 | 0xf << 4) && y[2 + 1] == (11 | 1 << 4);
    if (!tap_ok(ok, "q4_0: max -8 gives scale 1; halves round up; q_j low nibble, q_j+16 high"))
        tap_diag("%s", why);

    /* The largest magnitude +8: scale -1, and -8 cannot be stored: trunc(8
     * + 8.5) = 16 is clamped to 15, which reads back -7. */
    for (int i = 0; i < 32; i++)
        x[i] = want[i] = 0;
    x[0] = 8, want[0] = 8;
    x[5] = -8, want[5] = -7;
    ok = round_trip(x, want, 32, ATTN_KVQ_Q4_0, 1, y, why, sizeof(why)) && scale_of(y) == -1.0f;
    if (!tap_ok(ok, "q4_0: max +8 gives scale -1, and -8 clamps to -7"))
        tap_diag("%s", why);

    for (int i = 0; i < 64; i++)
        x[i] = want[i] = (float)(i % 16 - 8);
    x[40] = NAN;
    for (int i = 32; i < 64; i++)
        want[i] = NAN;
    ok = round_trip(x, want, 64, ATTN_KVQ_Q4_0, 1, y, why, sizeof(why)) && isnan(scale_of(y + 18));
    if (!tap_ok(ok, "q4_0: a NaN makes its block NaN, the block before it exact"))
        tap_diag("%s", why);
}

static void test_fp8(void)
{
    static const struct { float x; uint8_t e4m3, e5m2; } v[] = {
        { 0.0f, 0x00, 0x00 },
        { -0.0f, 0x80, 0x80 },
        { 1.0f, 0x38, 0x3c },
        { -2.0f, 0xc0, 0xc0 },
        { 1.0625f, 0x38, 0x3c },    /* e4m3: halfway 1 and 1.125, to even (1) */
        { 1.1875f, 0x3a, 0x3d },    /* e4m3: halfway 1.125 and 1.25, to even (1.25) */
        { 1.125f, 0x39, 0x3c },     /* e5m2: halfway 1 and 1.25, to even (1) */
        { 1.375f, 0x3b, 0x3e },     /* e5m2: halfway 1.25 and 1.5, to even (1.5) */
        { 448.0f, 0x7e, 0x5f },     /* e4m3's largest */
        { 500.0f, 0x7e, 0x60 },     /* e4m3 saturates (e5m2: 512) */
        { 57344.0f, 0x7e, 0x7b },   /* e5m2's largest */
        { 1e6f, 0x7e, 0x7b },       /* both saturate */
        { INFINITY, 0x7e, 0x7b },   /* infinities saturate too */
        { -INFINITY, 0xfe, 0xfb },
        { 0x1p-9f, 0x01, 0x18 },    /* e4m3's least subnormal */
        { 0x1p-10f, 0x00, 0x14 },   /* e4m3: halfway 0 and 2^-9, to even (0) */
        { 0x3p-10f, 0x02, 0x1a },   /* e4m3: halfway 2^-9 and 2^-8, to even (2^-8) */
        { 0x1p-16f, 0x00, 0x01 },   /* e5m2's least subnormal */
        { 0x1p-6f, 0x08, 0x24 },    /* e4m3's least normal */
    };
    bool ok = true;
    char why[200] = "";
    for (size_t i = 0; ok && i < sizeof(v) / sizeof(v[0]); i++) {
        const uint8_t a = attn_fp8_encode(v[i].x, ATTN_KVQ_FP8E4M3);
        const uint8_t b = attn_fp8_encode(v[i].x, ATTN_KVQ_FP8E5M2);
        if (a != v[i].e4m3 || b != v[i].e5m2) {
            snprintf(why, sizeof(why), "%g: e4m3 0x%02x (want 0x%02x), e5m2 0x%02x (want 0x%02x)",
                     v[i].x, a, v[i].e4m3, b, v[i].e5m2);
            ok = false;
        }
    }
    ok = ok && attn_fp8_encode(NAN, ATTN_KVQ_FP8E4M3) == 0x7f &&
         attn_fp8_encode(NAN, ATTN_KVQ_FP8E5M2) == 0x7e;
    if (!tap_ok(ok, "fp8: hand-worked codes (ties to even, subnormals, saturation of large "
                "values and infinities, NaN kept) for e4m3 and e5m2"))
        tap_diag("%s", why);

    /* Every code's value encodes back to that code; NaN codes read NaN. */
    ok = true;
    for (int f = ATTN_KVQ_FP8E4M3; ok && f <= ATTN_KVQ_FP8E5M2; f++)
        for (int c = 0; ok && c < 256; c++) {
            const float x = attn_fp8_decode((uint8_t)c, (attn_kvq)f);
            const bool nan = f == ATTN_KVQ_FP8E4M3 ? (c & 0x7f) == 0x7f : (c & 0x7f) > 0x7c;
            const bool inf = f == ATTN_KVQ_FP8E5M2 && (c & 0x7f) == 0x7c;
            if (nan != (bool)isnan(x) || inf != (bool)isinf(x) ||
                (!nan && !inf && attn_fp8_encode(x, (attn_kvq)f) != c) ||
                attn_fp8_values((attn_kvq)f)[c] != x) {
                if (!(nan && isnan(attn_fp8_values((attn_kvq)f)[c]))) {
                    snprintf(why, sizeof(why), "format %d code 0x%02x reads %g", f, c, x);
                    ok = false;
                }
            }
        }
    ok = ok && attn_fp8_decode(0x7e, ATTN_KVQ_FP8E4M3) == 448.0f &&
         attn_fp8_decode(0x01, ATTN_KVQ_FP8E4M3) == 0x1p-9f &&
         attn_fp8_decode(0x7b, ATTN_KVQ_FP8E5M2) == 57344.0f;
    if (!tap_ok(ok, "fp8: every code of both formats reads back and encodes to itself; NaN and "
                "e5m2's infinities read as such"))
        tap_diag("%s", why);

    /* The scale: max|x| over the finite values / the format's largest. */
    const float row[5] = { 0.0f, 1.0f, -896.0f, INFINITY, NAN };
    const float s = attn_fp8_scale(row, 5, ATTN_KVQ_FP8E4M3);
    uint8_t y[5];
    const float want[5] = { 0.0f, 1.0f, -896.0f, 896.0f, NAN };
    ok = s == 2.0f && attn_fp8_scale(row, 1, ATTN_KVQ_FP8E4M3) == 1.0f &&
         round_trip(row, want, 5, ATTN_KVQ_FP8E4M3, s, y, why, sizeof(why)) && y[2] == 0xfe;
    if (!tap_ok(ok, "fp8: the scale is max|finite x| / 448 (2 here; 1 for zeros); the largest "
                "stores as 448, an infinity saturates to it"))
        tap_diag("%s (scale %g)", why, s);
}

/* The harness: bytes at the stored width, the reference on the stored
 * values, the refusals. */
static void test_harness(void)
{
    attn_problem p = { .batch = 2, .heads = 4, .kv_heads = 2, .seq_q = 3, .seq_kv = 40,
                       .d_k = 64, .d_v = 32, .scale = 0.125f, .kv_dtype = ATTN_DTYPE_Q8_0 };
    attn_sizes sz;
    bool ok = attn_problem_sizes(&p, &sz) && sz.kv == 2 * 2 * 40 * (2 * 34 + 1 * 34);
    p.kv_dtype = ATTN_DTYPE_Q4_0;
    ok = ok && attn_problem_sizes(&p, &sz) && sz.kv == 2 * 2 * 40 * (2 * 18 + 18);
    p.kv_dtype = ATTN_DTYPE_FP8E4M3;
    ok = ok && attn_problem_sizes(&p, &sz) && sz.kv == 2 * 2 * 40 * (64 + 32) + 2 * 2 * 8;
    tap_ok(ok, "K/V bytes at the stored width: q8_0 34 and q4_0 18 per 32 values, fp8 one "
           "per value and a scale per K/V head (%zu)", sz.kv);

    /* The reference reads the stored values: its output from the cache
     * equals the reference on the cache read back into fp32 K and V. */
    p.kv_dtype = ATTN_DTYPE_Q4_0;
    attn_setup s = { .fill = ATTN_FILL_NORMAL, .seed = 7, .threads = 1, .check_rows = -1 };
    attn_inputs in;
    char why[512];
    ok = attn_inputs_make(&in, &p, &s, why, sizeof(why)) == ATTN_OK;
    if (!ok) {
        tap_ok(false, "inputs of a q4_0 cache: %s", why);
        tap_ok(false, "the quantization reference");
        return;
    }
    float *k = attn_inputs_dequantize(&in, &p, false), *v = attn_inputs_dequantize(&in, &p, true);
    attn_tensors t = attn_inputs_tensors(&in);
    t.k = k;
    t.v = v;
    t.kq = t.vq = NULL;
    attn_problem p32 = p;
    p32.kv_dtype = ATTN_DTYPE_FP32;
    attn_ref r32;
    ok = k && v && attn_ref_compute(&r32, &p32, &t, -1, 7, 1) == ATTN_OK;
    double diff = ok ? 0 : 1, qdiff = 0;
    for (size_t i = 0; ok && i < r32.nrows * (size_t)p.d_v; i++) {
        diff = fmax(diff, fabs(r32.out[i] - in.ref.out[i]));
        qdiff = fmax(qdiff, fabs(in.qref.out[i] - in.ref.out[i]));
    }
    tap_ok(ok && diff == 0, "the reference of a q4_0 cache is the reference on its values read "
           "back, exactly (max diff %g)", diff);
    /* The quantization reference is on the values before quantization:
     * q4_0 moves the output by far more than rounding would. */
    tap_ok(ok && in.ref.unquantized == &in.qref && qdiff > 1e-3,
           "beside it, the reference before quantization (the output moves by %.3g)", qdiff);
    if (ok)
        attn_ref_free(&r32);
    attn_host_free(k);
    attn_host_free(v);
    attn_inputs_free(&in);
}

static void test_refusals(void)
{
    char why[256] = "";
    attn_problem p = { .batch = 1, .heads = 2, .seq_q = 1, .seq_kv = 8, .d_k = 48, .d_v = 48,
                       .scale = 0.1f, .kv_dtype = ATTN_DTYPE_Q8_0 };
    const attn_backend *naive = attn_backend_find("naive"), *tiled = attn_backend_find("tiled");
    const attn_config cfg = { .threads = 1 };
    attn_status st = attn_backend_supports(naive, &p, &cfg, why, sizeof(why));
    tap_ok(st == ATTN_EINVAL && strstr(why, "multiples of 32"),
           "q8_0 with dk = 48 is refused: %s", why);
    p.d_k = p.d_v = 64;
    p.kv_dtype = ATTN_DTYPE_FP8E5M2;
    p.pass = ATTN_PASS_BWD;
    st = attn_backend_supports(tiled, &p, &cfg, why, sizeof(why));
    tap_ok(st == ATTN_EUNSUPPORTED && strstr(why, "backward"), "the backward from a quantized "
           "cache is refused: %s", why);
    p.pass = ATTN_PASS_FWD;
    p.d_k = p.d_v = 48;
    st = attn_backend_supports(tiled, &p, &cfg, why, sizeof(why));
    tap_ok(st == ATTN_OK, "fp8 takes any d (48 here)");
    const attn_backend *blas = attn_backend_find("blas");
    st = blas ? attn_backend_supports(blas, &p, &cfg, why, sizeof(why)) : ATTN_EINVAL;
    tap_ok(st == ATTN_EUNSUPPORTED, "a backend without quantized caches SKIPS them: %s", why);

    /* Q in q8_0: d_k in blocks of 32, the forward only, q8_0 alone of the
     * quantized types; a backend whose dtypes lack q8_0 SKIPS it. */
    p = (attn_problem){ .batch = 1, .heads = 2, .seq_q = 1, .seq_kv = 8, .d_k = 48, .d_v = 64,
                        .scale = 0.1f, .dtype = ATTN_DTYPE_Q8_0 };
    st = attn_backend_supports(tiled, &p, &cfg, why, sizeof(why));
    tap_ok(st == ATTN_EINVAL && strstr(why, "multiple of 32"), "Q in q8_0 with dk = 48 is "
           "refused: %s", why);
    p.d_k = 64;
    st = attn_backend_supports(tiled, &p, &cfg, why, sizeof(why));
    tap_ok(st == ATTN_OK, "Q in q8_0 with fp32 K/V and dk = 64: tiled takes it");
    p.pass = ATTN_PASS_BWD;
    st = attn_backend_supports(naive, &p, &cfg, why, sizeof(why));
    tap_ok(st == ATTN_EUNSUPPORTED && strstr(why, "backward"), "the backward with Q in q8_0 is "
           "refused: %s", why);
    p.pass = ATTN_PASS_FWD;
    p.dtype = ATTN_DTYPE_Q4_0;
    st = attn_backend_supports(naive, &p, &cfg, why, sizeof(why));
    tap_ok(st == ATTN_EINVAL && strstr(why, "q8_0"), "Q in q4_0 is refused: %s", why);
    p.dtype = ATTN_DTYPE_Q8_0;
    st = blas ? attn_backend_supports(blas, &p, &cfg, why, sizeof(why)) : ATTN_EINVAL;
    tap_ok(st == ATTN_EUNSUPPORTED, "a backend whose dtypes lack q8_0 SKIPS Q in q8_0: %s", why);
}

int main(void)
{
    test_q8_0();
    test_q8_0_again();
    test_q4_0();
    test_fp8();
    test_harness();
    test_refusals();
    return tap_done();
}

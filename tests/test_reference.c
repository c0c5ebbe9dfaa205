/* The reference against values worked out by hand. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"
#include "inputs.h"
#include "kernels/half.h"
#include "memory.h"
#include "reference.h"
#include "tap.h"

static bool near(double a, double b, double tol)
{
    return fabs(a - b) <= tol;
}

/* Full-mode reference of a hand-built problem; out is [rows][dv] in row order. */
static attn_ref compute(const attn_problem *p, const float *q, const float *k, const float *v)
{
    attn_ref r;
    const attn_tensors in = { .q = q, .k = k, .v = v };
    if (attn_ref_compute(&r, p, &in, -1, 1, 1) != ATTN_OK) {
        printf("Bail out! reference out of memory\n");
        exit(2);
    }
    return r;
}

static void softmax_123(void)
{
    /* dk = 1, q = 1, k = 1, 2, 3: logits 1, 2, 3; V = identity, so O = the weights. */
    const attn_problem p = { .batch = 1, .heads = 1, .seq_q = 1, .seq_kv = 3, .d_k = 1,
                             .d_v = 3, .scale = 1.0f };
    const float q[] = { 1 }, k[] = { 1, 2, 3 }, v[] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 };
    attn_ref r = compute(&p, q, k, v);
    tap_ok(near(r.out[0], 0.0900306, 1e-6) && near(r.out[1], 0.2447285, 1e-6) &&
           near(r.out[2], 0.6652410, 1e-6),
           "softmax of [1,2,3] is [0.0900, 0.2447, 0.6652] (got %.6f %.6f %.6f)",
           r.out[0], r.out[1], r.out[2]);
    tap_ok(r.max_abs_logit == 3.0 && r.max_abs_v == 1.0, "max|logit| 3 and max|V| 1 recorded");
    attn_ref_free(&r);
}

static void two_keys(void)
{
    /* q = [1,0]: logits 1 and 0, weights e/(e+1) and 1/(e+1). */
    const attn_problem p = { .batch = 1, .heads = 1, .seq_q = 1, .seq_kv = 2, .d_k = 2,
                             .d_v = 2, .scale = 1.0f };
    const float q[] = { 1, 0 }, k[] = { 1, 0, 0, 1 }, v[] = { 1, 2, 3, 4 };
    attn_ref r = compute(&p, q, k, v);
    const double w = exp(1.0) / (exp(1.0) + 1.0);
    tap_ok(near(r.out[0], w + 3 * (1 - w), 1e-12) && near(r.out[1], 2 * w + 4 * (1 - w), 1e-12),
           "one query, two keys: O = [1.5379, 2.5379] (got %.4f %.4f)", r.out[0], r.out[1]);
    attn_ref_free(&r);
}

static void scale_applies(void)
{
    /* The same problem with scale 2: logits 2 and 0. */
    const attn_problem p = { .batch = 1, .heads = 1, .seq_q = 1, .seq_kv = 2, .d_k = 2,
                             .d_v = 1, .scale = 2.0f };
    const float q[] = { 1, 0 }, k[] = { 1, 0, 0, 1 }, v[] = { 1, 0 };
    attn_ref r = compute(&p, q, k, v);
    const double w = exp(2.0) / (exp(2.0) + 1.0);
    tap_ok(near(r.out[0], w, 1e-12), "scale multiplies the logits (%.6f == %.6f)", r.out[0], w);
    attn_ref_free(&r);
}

/* Zero queries give equal logits, so each row is the mean of the V rows it
 * sees: v_j = j + 1 makes the visible set readable from the output. */
static attn_ref uniform(int b, int nq, int nk, bool causal, const int *kv_len)
{
    static float q[64], k[64], v[64];
    memset(q, 0, sizeof(q));
    memset(k, 0, sizeof(k));
    for (int x = 0; x < b; x++)
        for (int j = 0; j < nk; j++)
            v[x * nk + j] = (float)(j + 1);
    const attn_problem p = { .batch = b, .heads = 1, .seq_q = nq, .seq_kv = nk, .d_k = 1,
                             .d_v = 1, .scale = 1.0f, .causal = causal, .kv_len = kv_len };
    return compute(&p, q, k, v);
}

static bool rows_are(const attn_ref *r, const double *want, int n)
{
    for (int i = 0; i < n; i++)
        if (!near(r->out[i], want[i], 1e-12))
            return false;
    return true;
}

static void masks(void)
{
    attn_ref r = uniform(1, 3, 3, true, NULL);
    tap_ok(rows_are(&r, (const double[]){ 1, 1.5, 2 }, 3),
           "causal 3x3: row i sees keys 0..i (%.2f %.2f %.2f)", r.out[0], r.out[1], r.out[2]);
    attn_ref_free(&r);

    r = uniform(1, 2, 3, true, NULL);
    tap_ok(rows_are(&r, (const double[]){ 1.5, 2 }, 2),
           "causal Nq=2 Nk=3 is aligned bottom-right: row 0 sees keys 0..1 (%.2f %.2f)",
           r.out[0], r.out[1]);
    attn_ref_free(&r);

    r = uniform(1, 3, 2, true, NULL);
    tap_ok(rows_are(&r, (const double[]){ 0, 1, 1.5 }, 3),
           "causal Nq=3 Nk=2: row 0 sees no key and is zero (%.2f %.2f %.2f)",
           r.out[0], r.out[1], r.out[2]);
    attn_ref_free(&r);

    r = uniform(2, 3, 3, false, (const int[]){ 2, 0 });
    tap_ok(rows_are(&r, (const double[]){ 1.5, 1.5, 1.5, 0, 0, 0 }, 6),
           "padding kv_len {2, 0}: batch 0 sees keys 0..1, batch 1 is all zeros");
    attn_ref_free(&r);

    r = uniform(1, 3, 3, true, (const int[]){ 2 });
    tap_ok(rows_are(&r, (const double[]){ 1, 1.5, 1.5 }, 3),
           "causal with kv_len 2: both masks apply (%.2f %.2f %.2f)", r.out[0], r.out[1], r.out[2]);
    attn_ref_free(&r);
}

static void extreme(void)
{
    /* Logits 1e4 and 1e4 - 1: exp would overflow without the max subtracted. */
    const attn_problem p = { .batch = 1, .heads = 1, .seq_q = 1, .seq_kv = 2, .d_k = 1,
                             .d_v = 1, .scale = 1.0f };
    const float q[] = { 1e4f }, k[] = { 1.0f, 0.9999f }, v[] = { 1, 0 };
    attn_ref r = compute(&p, q, k, v);
    const double d = 1e4 * (1.0 - (double)0.9999f), w = 1.0 / (1.0 + exp(-d));
    tap_ok(isfinite(r.out[0]) && near(r.out[0], w, 1e-9),
           "logits near 1e4 do not overflow (%.6f == %.6f)", r.out[0], w);
    attn_ref_free(&r);
}

static void sampled(void)
{
    enum { B = 2, H = 3, NQ = 50, NK = 40, D = 8 };
    static float q[B * H * NQ * D], k[B * H * NK * D], v[B * H * NK * D];
    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++)
        q[i] = (float)sin(0.37 * (double)i);
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        k[i] = (float)cos(0.11 * (double)i);
        v[i] = (float)sin(0.05 * (double)i + 1.0);
    }
    const attn_problem p = { .batch = B, .heads = H, .seq_q = NQ, .seq_kv = NK, .d_k = D,
                             .d_v = D, .scale = 0.35f, .causal = true };
    const attn_tensors in = { .q = q, .k = k, .v = v };
    attn_ref full, part;
    if (attn_ref_compute(&full, &p, &in, -1, 3, 2) || attn_ref_compute(&part, &p, &in, 17, 3, 2)) {
        printf("Bail out! reference out of memory\n");
        exit(2);
    }
    bool same = part.nrows == 17, ascending = true;
    for (size_t x = 0; x < part.nrows; x++) {
        ascending &= x == 0 || part.rows[x] > part.rows[x - 1];
        for (int c = 0; c < D; c++)
            same &= part.out[x * D + c] == full.out[part.rows[x] * D + c];
    }
    tap_ok(same, "a sampled row equals the same row of the full reference, bitwise");
    tap_ok(ascending && part.rows[0] == 0 && part.rows[16] == (size_t)B * H * NQ - 1,
           "sampled rows are distinct, ascending, and include the first and last row");
    tap_ok(attn_ref_plan_rows(&p, 0) == (size_t)B * H * NQ, "automatic mode checks every row of a small problem");
    const attn_problem big = { .batch = 1, .heads = 8, .seq_q = 65536, .seq_kv = 65536,
                               .d_k = 64, .d_v = 64, .scale = 0.125f };
    const size_t n = attn_ref_plan_rows(&big, 0);
    tap_ok(n >= 256 && n < 8u * 65536, "automatic mode samples %zu rows of a 65536-token problem", n);
    attn_ref_free(&full);
    attn_ref_free(&part);
}

/* 16-bit K and V held alone (the forward, harness/inputs.h): the inputs
 * hold no fp32 copies of them, and the reference reading the 16-bit
 * storage gives exactly the outputs and statistics of the reference on
 * fp32 arrays of the same rounded values; a planted slip in the reading
 * (bf16 bits read as fp16) does not. */
static void sixteen_bits(void)
{
    attn_problem p = { .batch = 2, .heads = 4, .kv_heads = 2, .seq_q = 3, .seq_kv = 40,
                       .d_k = 24, .d_v = 16, .scale = 0.2f, .causal = true,
                       .kv_dtype = ATTN_DTYPE_BF16 };
    const attn_setup s = { .seed = 7, .threads = 2, .check_rows = -1 };
    for (int dt = ATTN_DTYPE_BF16; dt <= ATTN_DTYPE_FP16; dt++) {
        p.kv_dtype = (attn_dtype)dt;
        const char *name = attn_dtype_name(p.kv_dtype);
        attn_inputs in;
        char why[256];
        if (attn_inputs_make(&in, &p, &s, why, sizeof(why)) != ATTN_OK) {
            printf("Bail out! %s\n", why);
            exit(2);
        }
        attn_sizes sz;
        attn_problem_sizes(&p, &sz);
        tap_ok(!in.k && !in.v && in.k16 && in.v16 &&
               attn_inputs_bytes(&p, &sz) == (sz.q + (size_t)p.heads) * 4 + (sz.k + sz.v) * 2,
               "%s K/V: held in 16 bits alone, and counted so", name);
        float *k = attn_inputs_widen(in.k16, sz.k, p.kv_dtype);
        float *v = attn_inputs_widen(in.v16, sz.v, p.kv_dtype);
        attn_ref r32;
        const attn_tensors t32 = { .q = in.q, .k = k, .v = v };
        const bool ok = k && v && attn_ref_compute(&r32, &p, &t32, -1, 1, 2) == ATTN_OK;
        tap_ok(ok && r32.nrows == in.ref.nrows &&
               !memcmp(r32.out, in.ref.out, r32.nrows * (size_t)p.d_v * sizeof(double)) &&
               r32.max_abs_v == in.ref.max_abs_v && r32.max_abs_logit == in.ref.max_abs_logit,
               "%s K/V: the reference from the 16-bit storage is the fp32 one, bit for bit",
               name);
        /* Planted: the other 16-bit type's reading of the same bits. */
        attn_problem wrong = p;
        wrong.kv_dtype = dt == ATTN_DTYPE_BF16 ? ATTN_DTYPE_FP16 : ATTN_DTYPE_BF16;
        attn_ref rw;
        const attn_tensors t16 = attn_inputs_tensors(&in);
        const bool okw = attn_ref_compute(&rw, &wrong, &t16, -1, 1, 2) == ATTN_OK;
        tap_ok(okw && memcmp(rw.out, in.ref.out, rw.nrows * (size_t)p.d_v * sizeof(double)),
               "planted: %s bits read as the other type give another reference", name);
        if (ok)
            attn_ref_free(&r32);
        if (okw)
            attn_ref_free(&rw);
        attn_host_free(k);
        attn_host_free(v);
        attn_inputs_free(&in);
    }
}

int main(void)
{
    sixteen_bits();
    softmax_123();
    two_keys();
    scale_applies();
    masks();
    extreme();
    sampled();
    return tap_done();
}

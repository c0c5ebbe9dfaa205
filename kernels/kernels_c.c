/* The portable versions: the definition of each kernel, and the baseline the
 * ISA versions are checked against. Plain loops in the same summation order
 * as the SIMD versions (c ascending in Q.K^T, j ascending in the softmax sum
 * and in P.V); the build's ISO C mode does not contract a*b + c into FMA. */
#include <math.h>
#include <string.h>

#include "half.h"
#include "kernels.h"

static decl_qk_fn(qk_c)
{
    (void)pf;   /* no prefetching here */
    for (int j = 0; j < nk; j++) {
        float *s = st + j * st_stride;
        for (int i = 0; i < nq; i++)
            s[i] = 0.0f;
        for (int c = 0; c < dk; c++) {
            const float a = k[j * k_stride + c];
            const float *b = qt + c * qt_stride;
            for (int i = 0; i < nq; i++)
                s[i] += a * b[i];
        }
    }
}

static decl_qk_kbf16_fn(qk_kbf16_c)
{
    (void)pf;
    for (int j = 0; j < nk; j++) {
        float *s = st + j * st_stride;
        for (int i = 0; i < nq; i++)
            s[i] = 0.0f;
        for (int c = 0; c < dk; c++) {
            const float a = attn_bf16_to_f32(k[j * k_stride + c]);
            const float *b = qt + c * qt_stride;
            for (int i = 0; i < nq; i++)
                s[i] += a * b[i];
        }
    }
}

static decl_pack_qt_fn(pack_qt_c)
{
    for (int i = 0; i < nq; i++)
        for (int c = 0; c < dk; c++)
            qt[c * qt_stride + i] = q[i * q_stride + c] * scale;
}

static decl_qk_rows_fn(qk_rows_c)
{
    (void)pf;
    for (int j = 0; j < nk; j++)
        for (int i = 0; i < nq; i++) {
            float s = 0.0f;
            for (int c = 0; c < dk; c++)
                s += k[j * k_stride + c] * q[i * q_stride + c];
            st[j * st_stride + i] = s;
        }
}

/* 2^x by range reduction x = n + f, n = floor(x), f in [0, 1), a
 * polynomial for 2^f and n added to the exponent. */
static inline float exp2_one(float x)
{
    if (x != x)
        return x;
    if (x < ATTN_EXP2_LO)
        return 0.0f;
    if (x > ATTN_EXP2_HI)
        x = ATTN_EXP2_HI;
    float n = (float)(int)x;   /* truncation; floor below */
    if (n > x)
        n -= 1.0f;
    const float f = x - n;
    float p = ATTN_EXP2_C6;
    p = p * f + ATTN_EXP2_C5;
    p = p * f + ATTN_EXP2_C4;
    p = p * f + ATTN_EXP2_C3;
    p = p * f + ATTN_EXP2_C2;
    p = p * f + ATTN_EXP2_C1;
    p = p * f + ATTN_EXP2_C0;
    union { unsigned u; float f; } scale = { .u = (unsigned)((int)n + 127) << 23 };
    return p * scale.f;
}

static decl_exp2_fn(exp2_c)
{
    for (int i = 0; i < n; i++)
        y[i] = exp2_one(x[i]);
}

/* What a query's scores are shifted by: its running max, or 0 while it has
 * seen no visible key (m = -inf), so that no -inf - -inf appears; then every
 * P is 0 and alpha = exp2(-inf) = 0 multiplies an O and an l that are 0. */
static inline float subtrahend(float m)
{
    return m == -INFINITY ? 0.0f : m;
}

static inline int visible(const int *end, int i, int j)
{
    return !end || j < end[i];
}

static decl_softmax_fn(softmax_c)
{
    float *mx = alpha;   /* the column max lives in alpha until alpha is known */
    for (int i = 0; i < nq; i++)
        mx[i] = -INFINITY;
    for (int j = 0; j < nk; j++) {
        const float *s = st + j * st_stride;
        for (int i = 0; i < nq; i++)
            if (visible(end, i, j) && s[i] > mx[i])
                mx[i] = s[i];
    }
    for (int i = 0; i < nq; i++) {
        const float mnew = mx[i] > m[i] ? mx[i] : m[i];
        alpha[i] = exp2_one(m[i] - subtrahend(mnew));
        l[i] *= alpha[i];
        m[i] = mnew;
    }
    for (int j = 0; j < nk; j++) {
        float *s = st + j * st_stride;
        for (int i = 0; i < nq; i++) {
            const float p = visible(end, i, j) ? exp2_one(s[i] - subtrahend(m[i])) : 0.0f;
            s[i] = p;
            l[i] += p;
        }
    }
}

/* qk's scores, then each one's weight against m as it stands (the lazy
 * rescale, kernels.h). */
static decl_qk_exp_fn(qk_exp_c)
{
    qk_c(st, st_stride, k, k_stride, qt, qt_stride, nk, nq, dk, 0);
    for (int j = 0; j < nk; j++) {
        float *s = st + j * st_stride;
        for (int i = 0; i < nq; i++) {
            if (s[i] > mx[i])
                mx[i] = s[i];
            s[i] = exp2_one(s[i] - m[i]);
            sum[i] += s[i];
        }
    }
}

static decl_mods_fn(mods_c)
{
    const float k2 = (float)(-2.0 * ATTN_LOG2E), inv = cap > 0 ? 1.0f / cap : 0.0f;
    for (int j = 0; j < nk; j++) {
        float *s = st + j * st_stride;
        const float at = (float)(j0 + j);
        for (int i = 0; i < nq; i++) {
            float x = s[i];
            if (cap > 0) {
                const float y = x * inv, e = exp2_one(k2 * fabsf(y));
                const float t = (1.0f - e) / (1.0f + e);
                x = cap * (y < 0 ? -t : t);
            }
            if (slope)
                x -= slope[i] * fabsf(pos[i] - at);
            if (beg && j0 + j < beg[i])
                x = -INFINITY;
            s[i] = x;
        }
    }
}

static decl_pv_fn(pv_c)
{
    (void)pf;
    for (int i = 0; i < nq; i++) {
        float *out = o + i * o_stride;
        for (int c = 0; c < dv; c++)
            out[c] *= alpha[i];
        for (int j = 0; j < nk; j++) {
            const float w = pt[j * pt_stride + i];
            const float *row = v + j * v_stride;
            for (int c = 0; c < dv; c++)
                out[c] += w * row[c];
        }
    }
}

static decl_pv_t_fn(pv_t_c)
{
    for (int i = 0; i < nq; i++) {
        float *out = o + i * o_stride;
        for (int c = 0; c < dv; c++)
            out[c] *= alpha[i];
        for (int j = 0; j < nk; j++) {
            const float w = p[i * p_stride + j];
            const float *row = v + j * v_stride;
            for (int c = 0; c < dv; c++)
                out[c] += w * row[c];
        }
    }
}

static decl_bwd_ds_fn(bwd_ds_c)
{
    const float k2 = (float)(-2.0 * ATTN_LOG2E), inv = cap > 0 ? 1.0f / cap : 0.0f;
    for (int r = 0; r < nq; r++) {
        float *sr = s + r * stride, *dr = dp + r * stride;
        const float at = (float)(pos0 + r);
        for (int j = 0; j < nk; j++) {
            const int key = j0 + j;
            if ((beg && key < beg[r]) || (end && key >= end[r])) {
                sr[j] = 0.0f;
                dr[j] = 0.0f;
                continue;
            }
            float x = sr[j], th = 0.0f;
            if (cap > 0) {
                const float y = x * inv, e = exp2_one(k2 * fabsf(y));
                th = (1.0f - e) / (1.0f + e);
                th = y < 0 ? -th : th;
                x = cap * th;
            }
            x -= slope * fabsf(at - (float)key);
            const float pr = exp2_one(x - lse[r]);
            sr[j] = pr;
            dr[j] = scale * pr * (dr[j] - dd[r]) * (1.0f - th * th);
        }
    }
}

static decl_softmax_rows_fn(softmax_rows_c)
{
    for (int r = 0; r < rows; r++) {
        float *row = s + r * stride;
        int e = end ? end[r] : n;
        e = e < 0 ? 0 : e > n ? n : e;
        float mx = -INFINITY, sum = 0.0f;
        for (int j = 0; j < e; j++)
            mx = row[j] > mx ? row[j] : mx;
        for (int j = 0; j < e; j++) {
            row[j] = exp2_one(row[j] - mx);
            sum += row[j];
        }
        const float inv = 1.0f / sum;
        for (int j = 0; j < e; j++)
            row[j] *= inv;
        for (int j = e; j < n; j++)
            row[j] = 0.0f;
    }
}

static decl_cvt_rows_fn(cvt_rows_c)
{
    (void)pf;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            dst[r * dst_stride + c] = attn_half_to_f32(src[r * src_stride + c], bf16);
}

static decl_dequant_rows_fn(dequant_rows_c)
{
    (void)pf;
    for (int r = 0; r < rows; r++)
        attn_kvq_dequantize_row(dst + r * dst_stride, src + r * src_stride, (size_t)cols, fmt,
                                scale);
}

/* K or V rows in a storage of less than fp32, value c of row j as read
 * back: 16-bit (h, bf16) or quantized (q, fmt, scale), stride apart (bytes
 * for q). */
typedef struct rows_c {
    const uint16_t *h;
    int bf16;
    const uint8_t *q;
    attn_kvq fmt;
    float scale;
    ptrdiff_t stride;
} rows_c;

static inline float row_value(const rows_c *x, int j, int c)
{
    return x->q ? attn_kvq_value(x->q + j * x->stride, (size_t)c, x->fmt, x->scale)
                : attn_half_to_f32(x->h[j * x->stride + c], x->bf16);
}

static void qk_rows_any_c(float *st, ptrdiff_t st_stride, const rows_c *k, const float *q,
                          ptrdiff_t q_stride, int nk, int nq, int dk)
{
    for (int j = 0; j < nk; j++)
        for (int i = 0; i < nq; i++) {
            float s = 0.0f;
            for (int c = 0; c < dk; c++)
                s += row_value(k, j, c) * q[i * q_stride + c];
            st[j * st_stride + i] = s;
        }
}

static void pv_any_c(float *o, ptrdiff_t o_stride, const float *pt, ptrdiff_t pt_stride,
                     const rows_c *v, const float *alpha, int nq, int nk, int dv)
{
    for (int i = 0; i < nq; i++) {
        float *out = o + i * o_stride;
        for (int c = 0; c < dv; c++)
            out[c] *= alpha[i];
        for (int j = 0; j < nk; j++) {
            const float w = pt[j * pt_stride + i];
            for (int c = 0; c < dv; c++)
                out[c] += w * row_value(v, j, c);
        }
    }
}

static decl_qk_rows_q_fn(qk_rows_q_c)
{
    (void)pf;
    const rows_c x = { .q = k, .fmt = fmt, .scale = scale, .stride = k_stride };
    qk_rows_any_c(st, st_stride, &x, q, q_stride, nk, nq, dk);
}

static decl_pv_q_fn(pv_q_c)
{
    (void)pf;
    const rows_c x = { .q = v, .fmt = fmt, .scale = scale, .stride = v_stride };
    pv_any_c(o, o_stride, pt, pt_stride, &x, alpha, nq, nk, dv);
}

static decl_qk_rows_i8_fn(qk_rows_i8_c)
{
    (void)pf;
    const size_t kb = fmt == ATTN_KVQ_Q8_0 ? 34 : 18;
    for (int j = 0; j < nk; j++)
        for (int i = 0; i < nq; i++) {
            const uint8_t *kr = k + j * k_stride, *qr = q + i * q_stride;
            float s = 0.0f;
            for (int b = 0; b < dk / ATTN_QBLOCK; b++) {
                const uint8_t *kx = kr + b * kb, *qx = qr + b * 34;
                int32_t dot = 0;
                for (int c = 0; c < ATTN_QBLOCK; c++) {
                    const int nk_c = fmt == ATTN_KVQ_Q8_0 ? (int8_t)kx[2 + c]
                                     : c < 16            ? (kx[2 + c] & 0xf) - 8
                                                         : (kx[2 + c - 16] >> 4) - 8;
                    dot += nk_c * (int8_t)qx[2 + c];
                }
                uint16_t hk, hq;
                memcpy(&hk, kx, sizeof(hk));
                memcpy(&hq, qx, sizeof(hq));
                /* the two scales' product is exact (11 bits each) */
                s = fmaf((float)dot, attn_f16_to_f32(hk) * attn_f16_to_f32(hq), s);
            }
            st[j * st_stride + i] = s * scale;
        }
}

static decl_qk_rows16_fn(qk_rows16_c)
{
    (void)pf;
    const rows_c x = { .h = k, .bf16 = bf16, .stride = k_stride };
    qk_rows_any_c(st, st_stride, &x, q, q_stride, nk, nq, dk);
}

static decl_pv16_fn(pv16_c)
{
    (void)pf;
    const rows_c x = { .h = v, .bf16 = bf16, .stride = v_stride };
    pv_any_c(o, o_stride, pt, pt_stride, &x, alpha, nq, nk, dv);
}

/* Two 16-bit values as one word, the first in the low half. */
static uint32_t pair(uint16_t lo, uint16_t hi)
{
    return (uint32_t)lo | (uint32_t)hi << 16;
}

static decl_pack_qt_bf16_fn(pack_qt_bf16_c)
{
    for (int i = 0; i < nq; i++)
        for (int c = 0; c < dk; c += 2)
            qt[c / 2 * qt_stride + i] =
                pair(q[i * q_stride + c], c + 1 < dk ? q[i * q_stride + c + 1] : 0);
}

/* One pair's dot product as vdpbf16ps adds it: the odd product, then the
 * even one (each exact in fp32). */
static float dot2(float acc, uint32_t a, uint32_t b)
{
    acc += attn_bf16_to_f32((uint16_t)(a >> 16)) * attn_bf16_to_f32((uint16_t)(b >> 16));
    return acc + attn_bf16_to_f32((uint16_t)a) * attn_bf16_to_f32((uint16_t)b);
}

static decl_qk_bf16_fn(qk_bf16_c)
{
    for (int j = 0; j < nk; j++) {
        float *s = st + j * st_stride;
        for (int i = 0; i < nq; i++)
            s[i] = 0.0f;
        for (int c = 0; c < dk; c += 2) {
            const uint16_t *kr = k + j * k_stride;
            const uint32_t a = pair(kr[c], c + 1 < dk ? kr[c + 1] : 0);
            const uint32_t *b = qt + c / 2 * qt_stride;
            for (int i = 0; i < nq; i++)
                s[i] = dot2(s[i], a, b[i]);
        }
        for (int i = 0; i < nq; i++)
            s[i] *= scale;
    }
}

static decl_qk_rows_bf16_fn(qk_rows_bf16_c)
{
    (void)pf;
    for (int j = 0; j < nk; j++)
        for (int i = 0; i < nq; i++) {
            const uint16_t *kr = k + j * k_stride, *qr = q + i * q_stride;
            float s = 0.0f;
            for (int c = 0; c < dk; c += 2)
                s = dot2(s, pair(kr[c], c + 1 < dk ? kr[c + 1] : 0),
                         pair(qr[c], c + 1 < dk ? qr[c + 1] : 0));
            st[j * st_stride + i] = s * scale;
        }
}

static decl_pack_v_bf16_fn(pack_v_bf16_c)
{
    for (int j = 0; j < nk; j += 2)
        for (int c = 0; c < dv; c++)
            vp[j / 2 * vp_stride + c] =
                pair(v[j * v_stride + c], j + 1 < nk ? v[(j + 1) * v_stride + c] : 0);
}

static decl_pack_p_bf16_fn(pack_p_bf16_c)
{
    for (int j = 0; j < nk; j += 2)
        for (int i = 0; i < nq; i++)
            pp[j / 2 * pp_stride + i] =
                pair(attn_f32_to_bf16(pt[j * pt_stride + i]),
                     j + 1 < nk ? attn_f32_to_bf16(pt[(j + 1) * pt_stride + i]) : 0);
}

static decl_pv_bf16_fn(pv_bf16_c)
{
    for (int i = 0; i < nq; i++) {
        float *orow = o + i * o_stride;
        for (int c = 0; c < dv; c++)
            orow[c] *= alpha[i];
        for (int j = 0; j < nk; j += 2) {
            const uint32_t a = pp[j / 2 * pp_stride + i];
            const uint32_t *b = vp + j / 2 * vp_stride;
            for (int c = 0; c < dv; c++)
                orow[c] = dot2(orow[c], a, b[c]);
        }
    }
}

static decl_pv_rows_bf16_fn(pv_rows_bf16_c)
{
    (void)pf;
    for (int i = 0; i < nq; i++) {
        float *orow = o + i * o_stride;
        for (int c = 0; c < dv; c++)
            orow[c] *= alpha[i];
        for (int j = 0; j < nk; j += 2) {
            const bool two = j + 1 < nk;
            const uint32_t a = pair(attn_f32_to_bf16(pt[j * pt_stride + i]),
                                    two ? attn_f32_to_bf16(pt[(j + 1) * pt_stride + i]) : 0);
            const uint16_t *x = v + j * v_stride, *y = x + v_stride;
            for (int c = 0; c < dv; c++)
                orow[c] = dot2(orow[c], a, pair(x[c], two ? y[c] : 0));
        }
    }
}

void attn_kernels_init_c(attn_kernels *k)
{
    k->isa = ATTN_ISA_C;
    k->qk = qk_c;
    k->qk_exp = qk_exp_c;
    k->qk_kbf16 = qk_kbf16_c;
    k->qk_rows = qk_rows_c;
    k->pack_qt = pack_qt_c;
    k->softmax = softmax_c;
    k->pv = pv_c;
    k->softmax_rows = softmax_rows_c;
    k->exp2 = exp2_c;
    k->cvt_rows = cvt_rows_c;
    k->dequant_rows = dequant_rows_c;
    k->qk_rows_q = qk_rows_q_c;
    k->qk_rows_i8 = qk_rows_i8_c;
    k->pv_q = pv_q_c;
    k->qk_rows16 = qk_rows16_c;
    k->pv16 = pv16_c;
    k->pack_qt_bf16 = pack_qt_bf16_c;
    k->qk_bf16 = qk_bf16_c;
    k->qk_rows_bf16 = qk_rows_bf16_c;
    k->pack_v_bf16 = pack_v_bf16_c;
    k->pack_p_bf16 = pack_p_bf16_c;
    k->pv_bf16 = pv_bf16_c;
    k->pv_rows_bf16 = pv_rows_bf16_c;
    k->mods = mods_c;
    k->pv_t = pv_t_c;
    k->bwd_ds = bwd_ds_c;
    k->bf16_dot = 0;
    k->int8_dot = 0;
    k->kbf16 = 0;
    k->prefetches = 0;
    k->pf_keys = 0;
    k->dec_keys = 0;
    k->fetch_v = 0;
}

/* naive: the definition, written as plain fp32 loops. One query row at a time:
 * its visible scores, a max-subtracted softmax, the weighted sum of V rows.
 * Each thread materializes one score row (Nk floats). It is the baseline every
 * speedup is quoted against, so it stays simple: no blocking and no hand-written
 * SIMD (the compiler vectorizes what it can at -O3). Grouped K/V heads are
 * read where they are, never copied. From bf16 or fp16 storage it converts
 * each row of Q, K and V it reads to fp32 as it goes, and computes as from
 * fp32 (no intermediate is rounded to 16 bits). The score modifiers are
 * their definitions (backend.h) in the same loops: tanhf per score for the
 * softcap, the slope times the distance for ALiBi, the window's keys only,
 * the sink in the sum. The backward (--pass bwd, fwdbwd) is backward.c's;
 * the forward before it also leaves each row's log-sum-exp. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/half.h"
#include "naive/internal.h"

size_t naive_row_floats(const attn_problem *p)
{
    return (size_t)p->seq_kv +
           (attn_reduced(p) ? 2 * (size_t)p->d_k + (size_t)attn_v_stride(p) : 0);
}

static size_t naive_workspace(const attn_problem *p, const attn_config *cfg)
{
    return attn_host_workspace(sizeof(naive_state), p) +
           (size_t)cfg->threads * naive_row_floats(p) * sizeof(float) + naive_bwd_bytes(p);
}

const float *naive_row_f32(const float *f32, const uint16_t *h, attn_dtype dt, size_t row,
                           int n, float *buf)
{
    if (f32)
        return f32 + row * (size_t)n;
    const uint16_t *x = h + row * (size_t)n;
    const int bf16 = dt == ATTN_DTYPE_BF16;
    for (int c = 0; c < n; c++)
        buf[c] = attn_half_to_f32(x[c], bf16);
    return buf;
}

/* Key j of K/V head g of item b in K or V (v), n values, in fp32: in
 * place, or read back into buf from 16-bit or quantized storage (fp8's
 * scale: one per item and K/V head). */
static const float *kv_row(const attn_problem *p, const attn_tensors *t, bool v, int b, int g,
                           int j, int n, float *buf)
{
    const size_t row = attn_kv_row(p, t->pages, b, g, j);
    if (!attn_dtype_quantized(p->kv_dtype))
        return naive_row_f32(v ? t->v : t->k, v ? t->v16 : t->k16, p->kv_dtype, row, n, buf);
    const float *scale = v ? t->vscale : t->kscale;
    attn_kvq_dequantize_row(buf, (v ? t->vq : t->kq) + row * attn_dtype_row_bytes(p->kv_dtype, (size_t)n),
                            (size_t)n, attn_dtype_kvq(p->kv_dtype),
                            scale ? scale[(size_t)b * (size_t)attn_kv_heads(p) + (size_t)g] : 1.0f);
    return buf;
}

static void naive_release(void *state)
{
    naive_state *s = state;
    if (s) {
        attn_free(s->h.alloc, s->scores);
        attn_free(s->h.alloc, s->pds);
    }
    attn_host_destroy(s);
}

static attn_status naive_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    naive_state *s;
    attn_status st = attn_host_create(sizeof(*s), p, cfg, (void **)&s);
    if (st != ATTN_OK)
        return st;
    s->scores = attn_alloc(cfg->alloc, (size_t)cfg->threads * naive_row_floats(p) * sizeof(float));
    if (attn_backward(p))
        s->pds = attn_alloc(cfg->alloc, naive_bwd_bytes(p));
    if (!s->scores || (attn_backward(p) && !s->pds)) {
        naive_release(s);
        return ATTN_ENOMEM;
    }
    *state = s;
    return ATTN_OK;
}

float naive_scores(const attn_problem *p, const attn_tensors *t, size_t row, float *sc,
                   float *buf, int *beg_out, int *end_out)
{
    const int dk = p->d_k;
    int b, h, i;
    attn_q_where(p, row, &b, &h, &i);
    const int g = h / attn_group(p);
    const float *q = naive_row_f32(t->q, t->q16, p->dtype, row, dk, buf + dk);
    int beg, end;
    attn_visible_range(p, b, i, &beg, &end);
    *beg_out = beg;
    *end_out = end;
    const float cap = p->mods.softcap;
    const float slope = p->mods.alibi ? (float)attn_alibi_slope(p->heads, h) : 0.0f;
    const long at = (long)i + attn_seq_kv_of(p, b) - attn_seq_q_of(p, b);

    float m = -INFINITY;
    for (int j = beg; j < end; j++) {
        const float *k = kv_row(p, t, false, b, g, j, dk, buf);
        float dot = 0.0f;
        for (int c = 0; c < dk; c++)
            dot += q[c] * k[c];
        sc[j] = p->scale * dot;
        if (cap > 0)
            sc[j] = cap * tanhf(sc[j] / cap);
        if (slope != 0.0f)
            sc[j] -= slope * (float)labs((long)j - at);
        if (sc[j] > m)
            m = sc[j];
    }
    return m;
}

/* The unnormalized softmax of one query row: sc[j] = exp(s_j - max) for its
 * visible keys j in [*beg, *end); returns their sum, with the sink's term
 * (0 when no key is visible), and the maximum in *mx. buf: 2 dk floats for
 * rows of Q and K converted from 16-bit storage. */
static float naive_probs(const attn_problem *p, const attn_tensors *t, size_t row, float *sc,
                         float *buf, int *beg, int *end, float *mx)
{
    const float m = naive_scores(p, t, row, sc, buf, beg, end);
    int b, h, i;
    attn_q_where(p, row, &b, &h, &i);
    *mx = m;
    if (*end == *beg)
        return 0.0f;
    float l = p->mods.sinks ? expf(t->sinks[h] - m) : 0.0f;
    for (int j = *beg; j < *end; j++) {
        sc[j] = expf(sc[j] - m);
        l += sc[j];
    }
    return l;
}

/* sc: the row's scores (Nk floats), then the rows of 16-bit storage. */
static void naive_row(const attn_problem *p, const attn_tensors *t, size_t row, float *sc)
{
    const int nk = p->seq_kv, dv = p->d_v, vs = attn_v_stride(p);
    int b, h, i;
    attn_q_where(p, row, &b, &h, &i);
    const int g = h / attn_group(p);
    float *o = t->o + row * (size_t)dv, *buf = sc + nk;
    int beg, end;
    float m;
    const float l = naive_probs(p, t, row, sc, buf, &beg, &end, &m);

    for (int c = 0; c < dv; c++)
        o[c] = 0.0f;
    /* L = ln sum_j e^{s_j}: -inf for a row that sees no key. */
    if (t->lse)
        t->lse[row] = end == beg ? -INFINITY : m + logf(l);
    if (end == beg)
        return;
    for (int j = beg; j < end; j++) {
        const float w = sc[j];
        /* A row of V: vs elements apart (V read from K: K's rows), dv used. */
        const float *v = kv_row(p, t, true, b, g, j, vs,
                                buf + 2 * p->d_k);
        for (int c = 0; c < dv; c++)
            o[c] += w * v[c];
    }
    const float inv = 1.0f / l;
    for (int c = 0; c < dv; c++)
        o[c] *= inv;
}

/* P of every row: the softmax of naive_row, normalized, 0 past the visible keys. */
static attn_status naive_weights(void *state, float *out)
{
    naive_state *s = state;
    const attn_problem *p = &s->h.p;
    const int nk = p->seq_kv;
    const size_t rows = (size_t)p->batch * p->heads * p->seq_q;
    for (size_t row = 0; row < rows; row++) {
        float *w = out + row * (size_t)nk;
        int beg, end;
        float m;
        const float l = naive_probs(p, &s->h.t, row, w, s->scores + nk, &beg, &end, &m);
        for (int j = beg; j < end; j++)
            w[j] /= l;
        memset(w, 0, (size_t)beg * sizeof(float));
        memset(w + end, 0, (size_t)(nk - end) * sizeof(float));
    }
    return ATTN_OK;
}

/* Rows are independent and each is computed by one thread in a fixed order,
 * so the output is bitwise the same for any thread count. */
void naive_forward(void *state)
{
    naive_state *s = state;
    const attn_problem *p = &s->h.p;
    const long rows = (long)attn_q_rows(p);

#ifdef _OPENMP
#pragma omp parallel for num_threads(s->h.threads) schedule(dynamic, 8)
#endif
    for (long r = 0; r < rows; r++)
        naive_row(p, &s->h.t, (size_t)r,
                  s->scores + (size_t)attn_thread_id() * naive_row_floats(p));
}

static attn_status naive_run(void *state)
{
    return attn_host_run_passes(state, naive_forward, naive_backward);
}

static attn_status naive_bind(void *state, const attn_tensors *t)
{
    return attn_host_bind_passes(state, t, naive_forward);
}

const attn_backend attn_backend_naive = {
    .name      = "naive",
    .summary   = "plain fp32 loops, one score row per query (the baseline)",
    .dtypes    = ATTN_DTYPE_BIT(ATTN_DTYPE_BF16) | ATTN_DTYPE_BIT(ATTN_DTYPE_FP16) |
                 ATTN_DTYPES_QUANTIZED,
    .mods      = ATTN_MOD_ALL,
    .passes    = ATTN_PASS_BIT(ATTN_PASS_BWD) | ATTN_PASS_BIT(ATTN_PASS_FWDBWD),
    .layouts   = ATTN_LAYOUT_RAGGED | ATTN_LAYOUT_PAGED,
    .prepare   = naive_prepare,
    .bind      = naive_bind,
    .run       = naive_run,
    .read      = attn_host_read,
    .read_grads = attn_host_read_grads,
    .release   = naive_release,
    .workspace = naive_workspace,
    .weights   = naive_weights,
};

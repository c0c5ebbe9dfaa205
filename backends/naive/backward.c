/* naive's backward: the definition (backend.h) as plain fp32 loops, one
 * K/V head at a time, materializing its rows' P and dS' (G Nq x Nk each):
 *   each query row: its scores again, P = e^{s - L} with the forward's L,
 *   dP_j = dO.v_j, D = dO.O, dS'_j = scale P_j (dP_j - D) (times the
 *   softcap's 1 - tanh^2), and its dQ row = sum_j dS'_j k_j;
 *   each key row: dV_j = sum_i P_ij dO_i, dK_j = sum_i dS'_ij q_i over the
 *   rows of every query head of the group.
 * Each element of a gradient is summed by one thread in a fixed order, so
 * the result is bitwise the same for any thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "naive/internal.h"

size_t naive_bwd_bytes(const attn_problem *p)
{
    if (!attn_backward(p))
        return 0;
    return 2 * (size_t)attn_group(p) * (size_t)p->seq_q * (size_t)p->seq_kv * sizeof(float);
}

/* Query row e of K/V head r's rows (row: its flat id): P and dS' into
 * pr and ds (Nk each, 0 where not visible), and its dQ row. */
static void row_grads(const naive_state *s, size_t row, float *pr, float *ds, float *sc)
{
    const attn_problem *p = &s->h.p;
    const attn_tensors *t = &s->h.t;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const size_t bh = row / (size_t)nq, kv0 = attn_kv_head_of(p, bh) * (size_t)nk;
    const int i = (int)(row % (size_t)nq), h = (int)(bh % (size_t)p->heads);
    float *buf = sc + nk;
    int beg, end;
    naive_scores(p, t, row, sc, buf, &beg, &end);
    memset(pr, 0, (size_t)nk * sizeof(float));
    memset(ds, 0, (size_t)nk * sizeof(float));
    float *dq = t->dq + row * (size_t)dk;
    memset(dq, 0, (size_t)dk * sizeof(float));
    if (beg == end)
        return;
    const float *dout = t->dout + row * (size_t)dv, *o = t->o + row * (size_t)dv;
    const float lse = t->lse[row], cap = p->mods.softcap;
    const float slope = p->mods.alibi ? (float)attn_alibi_slope(p->heads, h) : 0.0f;
    const long at = (long)i + nk - nq;
    float dd = 0.0f;
    for (int c = 0; c < dv; c++)
        dd += dout[c] * o[c];
    for (int j = beg; j < end; j++) {
        pr[j] = expf(sc[j] - lse);
        const float *v = naive_row_f32(t->v, t->v16, p->kv_dtype, kv0 + (size_t)j, dv,
                                       buf + 2 * dk);
        float dp = 0.0f;
        for (int c = 0; c < dv; c++)
            dp += dout[c] * v[c];
        float g = pr[j] * (dp - dd) * p->scale;
        if (cap > 0) {
            /* tanh(s0 / C) from the capped score: s = C tanh - slope |j - i'| */
            const float th = (sc[j] + slope * (float)labs((long)j - at)) / cap;
            g *= 1.0f - th * th;
        }
        ds[j] = g;
        const float *k = naive_row_f32(t->k, t->k16, p->kv_dtype, kv0 + (size_t)j, dk, buf);
        for (int c = 0; c < dk; c++)
            dq[c] += g * k[c];
    }
}

/* Key row j of K/V head r: its dK and dV rows, from the G Nq rows of P and
 * dS' whose first query row is row0. */
static void key_grads(const naive_state *s, size_t r, int j, size_t row0, const float *pr,
                      const float *ds, float *buf)
{
    const attn_problem *p = &s->h.p;
    const attn_tensors *t = &s->h.t;
    const int nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const size_t rows = (size_t)attn_group(p) * (size_t)p->seq_q;
    float *dkr = t->dk + (r * (size_t)nk + (size_t)j) * dk;
    float *dvr = t->dv + (r * (size_t)nk + (size_t)j) * dv;
    memset(dkr, 0, (size_t)dk * sizeof(float));
    memset(dvr, 0, (size_t)dv * sizeof(float));
    for (size_t e = 0; e < rows; e++) {
        const float w = pr[e * (size_t)nk + (size_t)j], g = ds[e * (size_t)nk + (size_t)j];
        if (w == 0.0f && g == 0.0f)
            continue;   /* not visible (or a weight that adds nothing) */
        const float *dout = t->dout + (row0 + e) * (size_t)dv;
        for (int c = 0; c < dv; c++)
            dvr[c] += w * dout[c];
        const float *q = naive_row_f32(t->q, t->q16, p->dtype, row0 + e, dk, buf);
        for (int c = 0; c < dk; c++)
            dkr[c] += g * q[c];
    }
}

void naive_backward(void *state)
{
    naive_state *s = state;
    const attn_problem *p = &s->h.p;
    const int hkv = attn_kv_heads(p), group = attn_group(p), nk = p->seq_kv;
    const size_t rows = (size_t)group * (size_t)p->seq_q, heads = (size_t)p->batch * hkv;
    float *pr = s->pds, *ds = s->pds + rows * (size_t)nk;
    for (size_t r = 0; r < heads; r++) {
        const size_t row0 = (r / (size_t)hkv * (size_t)p->heads + r % (size_t)hkv * group) *
                            (size_t)p->seq_q;
#ifdef _OPENMP
#pragma omp parallel num_threads(s->h.threads)
#endif
        {
            float *sc = s->scores + (size_t)attn_thread_id() * naive_row_floats(p);
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 4)
#endif
            for (long e = 0; e < (long)rows; e++)
                row_grads(s, row0 + (size_t)e, pr + (size_t)e * nk, ds + (size_t)e * nk, sc);
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 16)
#endif
            for (int j = 0; j < nk; j++)
                key_grads(s, r, j, row0, pr, ds, sc + nk);
        }
    }
}

/* The backward's reference: dQ, dK and dV of softmax attention by their
 * definition (backend.h), accumulated in double, for whole K/V heads. One
 * query row at a time, its own forward first (scores, L, O, D), then its
 * terms of dQ (its own row) and of dK and dV (every key it sees), which
 * each thread sums into rows of its own, added up at the end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "memory.h"
#include "reference.h"

/* Multiply-adds of one K/V head: per query row and visible key, the score
 * (dk), dP (dv), and the terms of dQ (dk), dK (dk) and dV (dv). */
static double head_cost(const attn_problem *p)
{
    const double g = (double)p->heads / (p->kv_heads > 0 ? p->kv_heads : p->heads);
    return g * p->seq_q * (double)p->seq_kv * (3.0 * p->d_k + 2.0 * p->d_v);
}

size_t attn_ref_grads_plan(const attn_problem *p, long want)
{
    const size_t total = (size_t)p->batch * (size_t)(p->kv_heads > 0 ? p->kv_heads : p->heads);
    if (want < 0)
        return total;
    size_t n = (size_t)((double)ATTN_REF_BUDGET / head_cost(p));
    n = n < 2 ? 2 : n;
    return n < total ? n : total;
}

static int nthreads(int threads)
{
    return threads < 1 ? 1 : threads;
}

size_t attn_ref_grads_bytes(const attn_problem *p, long want, int threads)
{
    const size_t n = attn_ref_grads_plan(p, want), g = (size_t)attn_group(p);
    const size_t nk = (size_t)p->seq_kv, dk = (size_t)p->d_k, dv = (size_t)p->d_v;
    const size_t per_head = g * (size_t)p->seq_q * dk + nk * (dk + dv);
    /* Each thread: its dK and dV rows and two column sums, and a row of
     * scores, the scores before the softcap and P, and one of O. */
    const size_t per_thread = nk * (dk + dv + 2) + 3 * nk + dv;
    return n * (sizeof(size_t) + per_head * sizeof(double)) +
           (size_t)nthreads(threads) * per_thread * sizeof(double);
}

void attn_ref_grads_free(attn_ref_grads *g)
{
    attn_host_free(g->heads);
    attn_host_free(g->dq);
    attn_host_free(g->dk);
    attn_host_free(g->dv);
    memset(g, 0, sizeof(*g));
}

typedef struct row_acc {
    double *dk, *dv;        /* [Nk][dk], [Nk][dv]: this thread's sums */
    double *colp, *colg;    /* [Nk]: sum_i P_ij, sum_i g_ij */
    double *s, *s0, *pr, *o;    /* the row's scores, before the softcap, P; O [dv] */
    double rowg;            /* the largest sum_j g_ij of its rows */
    double max_logit;
} row_acc;

/* Query row i of flat query head bh: its dQ row into dq, its terms of dK
 * and dV into a. */
static void grad_row(const attn_problem *p, const attn_tensors *in, size_t bh, int i,
                     double *dq, row_acc *a)
{
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const int b = (int)(bh / (size_t)p->heads), h = (int)(bh % (size_t)p->heads);
    const size_t row = bh * (size_t)nq + (size_t)i;
    const float *q = in->q + row * dk, *dout = in->dout + row * dv;
    const size_t r = attn_ref_kv_of(p, bh);
    const float *k = in->k + r * (size_t)nk * dk, *v = in->v + r * (size_t)nk * dv;
    const double cap = p->mods.softcap, scale = p->scale;
    const double slope = p->mods.alibi ? attn_ref_alibi_slope(p->heads, h) : 0.0;
    const long at = (long)i + nk - nq;

    for (int c = 0; c < dk; c++)
        dq[c] = 0.0;
    double m = -INFINITY;
    int seen = 0;
    for (int j = 0; j < nk; j++) {
        if (!attn_ref_visible(p, b, i, j) || !attn_ref_in_window(p, b, i, j)) {
            a->s[j] = NAN;
            continue;
        }
        seen++;
        double dot = 0.0;
        for (int c = 0; c < dk; c++)
            dot += (double)q[c] * (double)k[(size_t)j * dk + c];
        a->s0[j] = scale * dot;
        a->s[j] = cap > 0 ? cap * tanh(a->s0[j] / cap) : a->s0[j];
        a->s[j] -= slope * (double)labs((long)j - at);
        m = a->s[j] > m || isnan(a->s[j]) ? a->s[j] : m;
    }
    if (!seen)
        return;   /* no key: dQ = 0 and no terms of dK, dV */
    double l = 0.0;
    for (int j = 0; j < nk; j++)
        if (!isnan(a->s[j]))
            l += exp(a->s[j] - m);
    const double lse = m + log(l);
    for (int c = 0; c < dv; c++)
        a->o[c] = 0.0;
    for (int j = 0; j < nk; j++) {
        if (isnan(a->s[j]))
            continue;
        a->pr[j] = exp(a->s[j] - lse);
        for (int c = 0; c < dv; c++)
            a->o[c] += a->pr[j] * (double)v[(size_t)j * dv + c];
        if (a->s[j] >= m - 64 && fabs(a->s[j]) > a->max_logit)
            a->max_logit = fabs(a->s[j]);
    }
    double dd = 0.0;
    for (int c = 0; c < dv; c++)
        dd += (double)dout[c] * a->o[c];
    double gsum = 0.0;
    for (int j = 0; j < nk; j++) {
        if (isnan(a->s[j]))
            continue;
        double dp = 0.0;
        for (int c = 0; c < dv; c++)
            dp += (double)dout[c] * (double)v[(size_t)j * dv + c];
        /* ds/ds0: the softcap's 1 - tanh^2. */
        double dcap = 1.0;
        if (cap > 0) {
            const double t = tanh(a->s0[j] / cap);
            dcap = 1.0 - t * t;
        }
        const double ds = a->pr[j] * (dp - dd) * dcap;
        const double g = a->pr[j] * (fabs(dp) + fabs(dd)) * dcap;
        gsum += g;
        a->colg[j] += g;
        a->colp[j] += a->pr[j];
        for (int c = 0; c < dk; c++) {
            dq[c] += scale * ds * (double)k[(size_t)j * dk + c];
            a->dk[(size_t)j * dk + c] += scale * ds * (double)q[c];
        }
        for (int c = 0; c < dv; c++)
            a->dv[(size_t)j * dv + c] += a->pr[j] * (double)dout[c];
    }
    a->rowg = gsum > a->rowg ? gsum : a->rowg;
}

static double max_abs(const float *x, size_t n)
{
    double m = 0.0;
    for (size_t e = 0; e < n; e++)
        if (isfinite(x[e]) && fabs((double)x[e]) > m)
            m = fabs((double)x[e]);
    return m;
}

attn_status attn_ref_grads_compute(attn_ref_grads *g, const attn_problem *p,
                                   const attn_tensors *in, long want, int threads)
{
    memset(g, 0, sizeof(*g));
    const int nt = nthreads(threads), group = attn_group(p);
    const size_t nk = (size_t)p->seq_kv, dk = (size_t)p->d_k, dv = (size_t)p->d_v;
    const size_t rows = (size_t)group * (size_t)p->seq_q;
    g->total_heads = (size_t)p->batch * (size_t)attn_kv_heads(p);
    g->nheads = attn_ref_grads_plan(p, want);
    g->heads = attn_host_alloc(g->nheads * sizeof(size_t));
    g->dq = attn_host_alloc(g->nheads * rows * dk * sizeof(double));
    g->dk = attn_host_alloc(g->nheads * nk * dk * sizeof(double));
    g->dv = attn_host_alloc(g->nheads * nk * dv * sizeof(double));
    const size_t per_thread = nk * (dk + dv + 2) + 3 * nk + dv;
    double *scratch = attn_host_alloc((size_t)nt * per_thread * sizeof(double));
    row_acc *acc = calloc((size_t)nt, sizeof(*acc));
    if (!g->heads || !g->dq || !g->dk || !g->dv || !scratch || !acc) {
        free(acc);
        attn_host_free(scratch);
        attn_ref_grads_free(g);
        return ATTN_ENOMEM;
    }
    for (int t = 0; t < nt; t++) {
        double *w = scratch + (size_t)t * per_thread;
        acc[t] = (row_acc){ .dk = w, .dv = w + nk * dk, .colp = w + nk * (dk + dv),
                            .colg = w + nk * (dk + dv + 1), .s = w + nk * (dk + dv + 2),
                            .s0 = w + nk * (dk + dv + 3), .pr = w + nk * (dk + dv + 4),
                            .o = w + nk * (dk + dv + 5) };
    }
    /* Spread evenly, the first and the last always among them. */
    for (size_t x = 0; x < g->nheads; x++)
        g->heads[x] = g->nheads == 1 ? 0 : x * (g->total_heads - 1) / (g->nheads - 1);

    double colp = 0.0, colg = 0.0;
    for (size_t x = 0; x < g->nheads; x++) {
        const size_t r = g->heads[x], hkv = (size_t)attn_kv_heads(p);
        const size_t bh0 = r / hkv * (size_t)p->heads + r % hkv * (size_t)group;
        for (int t = 0; t < nt; t++)
            memset(acc[t].dk, 0, nk * (dk + dv + 2) * sizeof(double));
        const long n = (long)rows;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 4)
#endif
        for (long e = 0; e < n; e++) {
#ifdef _OPENMP
            row_acc *a = &acc[omp_get_thread_num()];
#else
            row_acc *a = &acc[0];
#endif
            grad_row(p, in, bh0 + (size_t)e / (size_t)p->seq_q,
                     (int)((size_t)e % (size_t)p->seq_q), g->dq + (x * rows + (size_t)e) * dk, a);
        }
        double *dks = g->dk + x * nk * dk, *dvs = g->dv + x * nk * dv;
        memset(dks, 0, nk * dk * sizeof(double));
        memset(dvs, 0, nk * dv * sizeof(double));
        for (int t = 0; t < nt; t++) {
            for (size_t e = 0; e < nk * dk; e++)
                dks[e] += acc[t].dk[e];
            for (size_t e = 0; e < nk * dv; e++)
                dvs[e] += acc[t].dv[e];
        }
        for (size_t j = 0; j < nk; j++) {
            double cp = 0.0, cg = 0.0;
            for (int t = 0; t < nt; t++) {
                cp += acc[t].colp[j];
                cg += acc[t].colg[j];
            }
            colp = cp > colp ? cp : colp;
            colg = cg > colg ? cg : colg;
        }
    }
    double rowg = 0.0;
    for (int t = 0; t < nt; t++) {
        rowg = acc[t].rowg > rowg ? acc[t].rowg : rowg;
        g->max_abs_logit = acc[t].max_logit > g->max_abs_logit ? acc[t].max_logit
                                                                : g->max_abs_logit;
    }
    const size_t b = (size_t)p->batch, h = (size_t)p->heads, hkv = (size_t)attn_kv_heads(p);
    const double mq = max_abs(in->q, b * h * (size_t)p->seq_q * dk);
    const double mk = max_abs(in->k, b * hkv * nk * dk);
    const double mdo = max_abs(in->dout, b * h * (size_t)p->seq_q * dv);
    g->mag[0] = (double)p->scale * mk * rowg;
    g->mag[1] = (double)p->scale * mq * colg;
    g->mag[2] = mdo * colp;
    free(acc);
    attn_host_free(scratch);
    return ATTN_OK;
}

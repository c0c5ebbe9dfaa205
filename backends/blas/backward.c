/* blas's backward: what a user writes with a good BLAS, P materialized.
 * Per K/V head, for each query head of its group:
 *   S = scale Q K^T and dP = dO V^T     two sgemms, Nq x Nk each
 *   P = e^{S - L}, dS' = scale P (dP - D) (times the softcap's 1 - tanh^2)
 *                                       one vectorized pass (the kernels'
 *                                       bwd_ds, with the masks and modifiers)
 *   dV += P^T dO, dK += dS'^T Q          two sgemms (the group's sum: beta 1)
 *   dQ = dS' K                           one sgemm
 * over the keys some row sees (kmax), the others' dK and dV left 0. Two
 * Nq x Nk matrices per thread: the memory this backend shows. Threads:
 * OpenMP over K/V heads, one single-threaded sgemm each, as the forward;
 * each head's result is the same for any thread count. */
#include <math.h>
#include <string.h>

#include "blas/internal.h"
#include "config.h"

#if ATTN_HAVE_OPENBLAS

#include <cblas.h>

size_t blas_bwd_bytes(const attn_problem *p, const attn_config *cfg)
{
    if (!attn_backward(p))
        return 0;
    return (size_t)cfg->threads *
           (blas_score_elems(p) + 2 * (size_t)p->seq_q) * sizeof(float);
}

bool blas_bwd_alloc(blas_state *s, const attn_config *cfg)
{
    const attn_problem *p = &s->h.p;
    if (!attn_backward(p))
        return true;
    s->grad = attn_alloc(cfg->alloc, (size_t)cfg->threads * blas_score_elems(p) * sizeof(float));
    s->rowf = attn_alloc(cfg->alloc, (size_t)cfg->threads * 2 * (size_t)p->seq_q * sizeof(float));
    return s->grad && s->rowf;
}

void blas_bwd_free(blas_state *s)
{
    attn_free(s->h.alloc, s->grad);
    attn_free(s->h.alloc, s->rowf);
}

/* K/V head r, with one thread's P, dS', row figures and visible ranges. */
static void bwd_head(const blas_state *s, size_t r, float *pr, float *ds, float *rowf, int *end)
{
    const attn_problem *p = &s->h.p;
    const attn_tensors *t = &s->h.t;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const int hkv = attn_kv_heads(p), group = attn_group(p);
    const int b = (int)(r / (size_t)hkv), g = (int)(r % (size_t)hkv);
    const float *k = t->k + r * (size_t)nk * dk, *v = t->v + r * (size_t)nk * dv;
    float *dkh = t->dk + r * (size_t)nk * dk, *dvh = t->dv + r * (size_t)nk * dv;
    float *dd = rowf, *lse2 = rowf + nq;
    int *beg = end + nq;
    const int kmax = attn_visible_end(p, b, nq - 1);
    memset(dkh + (size_t)kmax * dk, 0, (size_t)(nk - kmax) * dk * sizeof(float));
    memset(dvh + (size_t)kmax * dv, 0, (size_t)(nk - kmax) * dv * sizeof(float));
    const float cap = p->mods.softcap > 0 ? (float)(p->mods.softcap * ATTN_LOG2E) : 0.0f;
    for (int hh = 0; hh < group; hh++) {
        const int h = g * group + hh;
        const size_t bh = (size_t)b * p->heads + (size_t)h;
        const float *q = t->q + bh * (size_t)nq * dk, *dout = t->dout + bh * (size_t)nq * dv;
        const float *o = t->o + bh * (size_t)nq * dv;
        float *dq = t->dq + bh * (size_t)nq * dk;
        if (kmax == 0) {
            memset(dq, 0, (size_t)nq * dk * sizeof(float));
            continue;
        }
        for (int i = 0; i < nq; i++) {
            attn_visible_range(p, b, i, &beg[i], &end[i]);
            float d = 0.0f;
            for (int c = 0; c < dv; c++)
                d += dout[(size_t)i * dv + c] * o[(size_t)i * dv + c];
            dd[i] = d;
            lse2[i] = t->lse[bh * (size_t)nq + (size_t)i] * (float)ATTN_LOG2E;
        }
        /* Scores in log2 units, for the kernels' exp2. */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, kmax, dk,
                    (float)((double)p->scale * ATTN_LOG2E), q, dk, k, dk, 0.0f, pr, nk);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, kmax, dv, 1.0f, dout, dv, v, dv,
                    0.0f, ds, nk);
        const float slope =
            p->mods.alibi ? (float)(attn_alibi_slope(p->heads, h) * ATTN_LOG2E) : 0.0f;
        s->h.k->bwd_ds(pr, ds, nk, nq, kmax, 0, lse2, dd, beg, end, cap, slope, nk - nq,
                       p->scale);
        const float beta = hh ? 1.0f : 0.0f;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kmax, dv, nq, 1.0f, pr, nk, dout,
                    dv, beta, dvh, dv);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kmax, dk, nq, 1.0f, ds, nk, q, dk,
                    beta, dkh, dk);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, dk, kmax, 1.0f, ds, nk, k, dk,
                    0.0f, dq, dk);
    }
}

void blas_backward(void *state)
{
    blas_state *s = state;
    const attn_problem *p = &s->h.p;
    const long heads = (long)p->batch * attn_kv_heads(p);
    const size_t nq = (size_t)p->seq_q;
#ifdef _OPENMP
#pragma omp parallel for num_threads(s->h.threads) schedule(dynamic, 1)
#endif
    for (long r = 0; r < heads; r++) {
        const size_t tid = (size_t)attn_thread_id();
        bwd_head(s, (size_t)r, s->scores + tid * blas_score_elems(p),
                 s->grad + tid * blas_score_elems(p), s->rowf + tid * 2 * nq,
                 s->end + tid * 2 * nq);
    }
}

#endif

/* blas: attention as most people first write it with a good BLAS. Per
 * (batch, head): S = scale * Q.K^T with one cblas_sgemm, a row softmax over
 * the visible keys (kernels/, vectorized), O = P.V with one cblas_sgemm.
 * The score matrix is materialized on purpose; that is what this backend
 * measures: Nq x Nk floats per head in flight.
 *
 * The score modifiers are applied to S as the materialized way would: the
 * softcap and ALiBi in one pass of the kernels' mods (S's rows as its
 * columns: keys contiguous), the window's keys left of a row set to -inf
 * (the GEMMs still span every key some row sees: the waste this backend
 * shows), a sink as the factor S_i / (S_i + 2^(sigma - m_i)) on row i of P
 * (S_i = 1 / max P_i after the softmax), V read from K with K's stride.
 *
 * Threads: OpenMP over (batch, head), one single-threaded sgemm per head.
 * Measured on the 2-core development machine (README, "blas"), this beats
 * one head at a time with OpenBLAS's own threads, whose workers spin
 * between calls and fight OpenMP's for the cores.
 *
 * The backward (--pass bwd, fwdbwd) is backward.c's; the forward before it
 * also leaves each row's log-sum-exp. */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "config.h"

#if ATTN_HAVE_OPENBLAS

#include <cblas.h>
#include <math.h>

#include "blas/internal.h"

#define score_elems blas_score_elems

/* Each row's largest score is kept for the sinks and for L. */
static bool keeps_max(const attn_problem *p)
{
    return p->mods.sinks || attn_backward(p);
}

static size_t blas_workspace(const attn_problem *p, const attn_config *cfg)
{
    size_t bytes = attn_host_workspace(sizeof(blas_state), p);
    bytes += (size_t)cfg->threads * score_elems(p) * sizeof(float);
    bytes += (size_t)cfg->threads * 2 * (size_t)p->seq_q * sizeof(int);
    if (p->mods.alibi)
        bytes += (size_t)(cfg->threads + 1) * (size_t)p->seq_kv * sizeof(float);
    if (keeps_max(p))
        bytes += (size_t)cfg->threads * (size_t)p->seq_q * sizeof(float);
    return bytes + blas_bwd_bytes(p, cfg);
}

static attn_status blas_supports(const attn_problem *p, const attn_config *cfg, char *why,
                                 size_t len)
{
    /* cblas_sgemm takes int sizes; ld*rows of S must fit too. */
    if (score_elems(p) > (size_t)2147483647) {
        snprintf(why, len, "blas: the %d x %d score matrix exceeds the int range of CBLAS",
                 p->seq_q, p->seq_kv);
        return ATTN_EUNSUPPORTED;
    }
    return attn_host_supports_isa("blas", cfg, why, len);
}

static void blas_release(void *state)
{
    blas_state *s = state;
    if (s) {
        blas_bwd_free(s);
        attn_free(s->h.alloc, s->mx);
        attn_free(s->h.alloc, s->slope);
        attn_free(s->h.alloc, s->pos);
        attn_free(s->h.alloc, s->end);
        attn_free(s->h.alloc, s->scores);
    }
    attn_host_destroy(s);
}

static attn_status blas_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    blas_state *s;
    attn_status st = attn_host_create(sizeof(*s), p, cfg, (void **)&s);
    if (st != ATTN_OK)
        return st;
    s->scores = attn_alloc(cfg->alloc, (size_t)cfg->threads * score_elems(p) * sizeof(float));
    s->end = attn_alloc(cfg->alloc, (size_t)cfg->threads * 2 * (size_t)p->seq_q * sizeof(int));
    if (p->mods.alibi) {
        s->pos = attn_alloc(cfg->alloc, (size_t)p->seq_kv * sizeof(float));
        s->slope = attn_alloc(cfg->alloc, (size_t)cfg->threads * (size_t)p->seq_kv * sizeof(float));
    }
    if (keeps_max(p))
        s->mx = attn_alloc(cfg->alloc, (size_t)cfg->threads * (size_t)p->seq_q * sizeof(float));
    if (!s->scores || !s->end || (p->mods.alibi && (!s->pos || !s->slope)) ||
        (keeps_max(p) && !s->mx) || !blas_bwd_alloc(s, cfg)) {
        blas_release(s);
        return ATTN_ENOMEM;
    }
    for (int j = 0; p->mods.alibi && j < p->seq_kv; j++)
        s->pos[j] = (float)j;
    /* Each head's sgemm runs on the thread that owns the head. */
    openblas_set_num_threads(1);
    *state = s;
    return ATTN_OK;
}

/* The modifiers on S (log2 units) before the softmax: the softcap and
 * ALiBi over its kmax columns, then -inf left of each row's window. */
static void blas_mods(const blas_state *s, float *sc, float *slope, const int *beg, int h,
                      int kmax)
{
    const attn_problem *p = &s->h.p;
    const int nq = p->seq_q, nk = p->seq_kv;
    const float cap = p->mods.softcap > 0 ? (float)(p->mods.softcap * ATTN_LOG2E) : 0.0f;
    if (cap > 0 || p->mods.alibi) {
        if (p->mods.alibi) {
            const float m = (float)(attn_alibi_slope(p->heads, h) * ATTN_LOG2E);
            for (int j = 0; j < kmax; j++)
                slope[j] = m;
        }
        /* S's rows are the kernel's keys, its columns the kernel's
         * queries: row i is at position i' = j0 + i, column j at pos[j]. */
        s->h.k->mods(sc, nk, nq, kmax, nk - nq, cap, p->mods.alibi ? slope : NULL, s->pos, NULL);
    }
    for (int i = 0; p->mods.window && i < nq; i++)
        for (int j = 0; j < beg[i] && j < kmax; j++)
            sc[(size_t)i * nk + j] = -INFINITY;
}

/* Row i of P times S_i / (S_i + 2^(sigma - m_i)): the sink's share of its
 * sum. m_i is the row's largest visible score (before the softmax), and the
 * softmax left 2^(s - m_i) / S_i, so max P_i = 1 / S_i. */
static void blas_sinks(const blas_state *s, float *sc, const float *mx, const int *end, int h)
{
    const attn_problem *p = &s->h.p;
    const float sigma = (float)(s->h.t.sinks[h] * ATTN_LOG2E);
    for (int i = 0; i < p->seq_q; i++) {
        if (end[i] <= 0)
            continue;
        float *row = sc + (size_t)i * p->seq_kv, top = 0.0f;
        for (int j = 0; j < end[i]; j++)
            top = row[j] > top ? row[j] : top;
        const float f = 1.0f / (1.0f + exp2f(sigma - mx[i]) * top);
        for (int j = 0; j < end[i]; j++)
            row[j] *= f;
    }
}

static void blas_head(const blas_state *s, size_t bh, float *sc, int *end, float *slope,
                      float *mx)
{
    const attn_problem *p = &s->h.p;
    const attn_tensors *t = &s->h.t;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v, vs = attn_v_stride(p);
    const int b = (int)(bh / (size_t)p->heads), h = (int)(bh % (size_t)p->heads);
    const float *q = t->q + bh * (size_t)nq * dk;
    const float *k = t->k + attn_kv_head_of(p, bh) * (size_t)nk * dk;
    const float *v = t->v + attn_kv_head_of(p, bh) * (size_t)nk * vs;
    float *o = t->o + bh * (size_t)nq * dv;
    int *beg = end + nq;
    /* Keys past the padding length are never multiplied: the matrices
     * shrink to the keys some query can see. */
    const int kmax = attn_visible_end(p, b, nq - 1);
    if (kmax == 0) {
        memset(o, 0, (size_t)nq * dv * sizeof(float));
        for (int i = 0; t->lse && i < nq; i++)
            t->lse[bh * (size_t)nq + (size_t)i] = -INFINITY;
        return;
    }
    bool whole = true;           /* every row sees keys [0, kmax) */
    for (int i = 0; i < nq; i++) {
        attn_visible_range(p, b, i, &beg[i], &end[i]);
        if (beg[i] == end[i])
            beg[i] = end[i] = 0;  /* sees nothing: a row of zeros */
        whole = whole && beg[i] == 0 && end[i] == kmax;
    }
    /* Scores in log2 units, so that the softmax kernel's exp2 applies. */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, kmax, dk,
                (float)((double)p->scale * ATTN_LOG2E), q, dk, k, dk, 0.0f, sc, nk);
    blas_mods(s, sc, slope, beg, h, kmax);
    /* The sinks' m_i, and L's, before the softmax overwrites S. */
    if (mx)
        for (int i = 0; i < nq; i++) {
            const float *row = sc + (size_t)i * nk;
            float m = -INFINITY;
            for (int j = beg[i]; j < end[i]; j++)
                m = row[j] > m ? row[j] : m;
            mx[i] = m;
        }
    s->h.k->softmax_rows(sc, nk, nq, kmax, end);
    /* The window's -inf may come out of the softmax's exp2 as a denormal,
     * not 0: exactly 0, as the keys past end[i] are. */
    for (int i = 0; p->mods.window && i < nq; i++)
        memset(sc + (size_t)i * nk, 0, (size_t)(beg[i] < kmax ? beg[i] : kmax) * sizeof(float));
    if (p->mods.sinks)
        blas_sinks(s, sc, mx, end, h);
    /* L = ln sum_j 2^(s_j log2(e)): the softmax left 2^(s - m) / l, whose
     * largest is 1 / l, so L = (m - log2(max P)) ln 2; -inf for no key. */
    for (int i = 0; t->lse && i < nq; i++) {
        const float *row = sc + (size_t)i * nk;
        float top = 0.0f;
        for (int j = beg[i]; j < end[i]; j++)
            top = row[j] > top ? row[j] : top;
        t->lse[bh * (size_t)nq + (size_t)i] =
            end[i] > beg[i] ? (mx[i] - log2f(top)) * (float)(1.0 / ATTN_LOG2E) : -INFINITY;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, dv, kmax,
                1.0f, sc, nk, v, vs, 0.0f, o, dv);
    /* A NaN or Inf in a key some rows cannot see reached them through its
     * weight 0: those rows again, over their own visible keys. */
    if (whole || attn_rows_finite(v, 1, (size_t)(kmax - 1) * vs + dv))
        return;
    for (int i = 0; i < nq; i++) {
        attn_visible_range(p, b, i, &beg[i], &end[i]);
        if (beg[i] == 0 && end[i] == kmax)
            continue;
        if (end[i] > beg[i])
            cblas_sgemv(CblasRowMajor, CblasTrans, end[i] - beg[i], dv, 1.0f,
                        v + (size_t)beg[i] * vs, vs, sc + (size_t)i * nk + beg[i], 1, 0.0f,
                        o + (size_t)i * dv, 1);
        else
            memset(o + (size_t)i * dv, 0, (size_t)dv * sizeof(float));
    }
}

/* Heads are independent and each is computed by one thread with the same
 * calls, so the output does not depend on the thread count. */
static void blas_forward(void *state)
{
    blas_state *s = state;
    const attn_problem *p = &s->h.p;
    const long heads = (long)p->batch * p->heads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(s->h.threads) schedule(dynamic, 1)
#endif
    for (long bh = 0; bh < heads; bh++) {
        const int tid = attn_thread_id();
        blas_head(s, (size_t)bh, s->scores + (size_t)tid * score_elems(p),
                  s->end + (size_t)tid * 2 * (size_t)p->seq_q,
                  s->slope ? s->slope + (size_t)tid * (size_t)p->seq_kv : NULL,
                  s->mx ? s->mx + (size_t)tid * (size_t)p->seq_q : NULL);
    }
}

static attn_status blas_run(void *state)
{
    return attn_host_run_passes(state, blas_forward, blas_backward);
}

static attn_status blas_bind(void *state, const attn_tensors *t)
{
    return attn_host_bind_passes(state, t, blas_forward);
}

static const char *blas_version(void)
{
    return openblas_get_config();
}

const attn_backend attn_backend_blas = {
    .name      = "blas",
    .summary   = "OpenBLAS sgemm + vectorized row softmax, materialized scores",
    .mods      = ATTN_MOD_ALL,
    .passes    = ATTN_PASS_BIT(ATTN_PASS_BWD) | ATTN_PASS_BIT(ATTN_PASS_FWDBWD),
    .supports  = blas_supports,
    .prepare   = blas_prepare,
    .bind      = blas_bind,
    .run       = blas_run,
    .read      = attn_host_read,
    .read_grads = attn_host_read_grads,
    .release   = blas_release,
    .workspace = blas_workspace,
    .version   = blas_version,
};

#else

const attn_backend attn_backend_blas = {
    .name      = "blas",
    .summary   = "OpenBLAS sgemm + vectorized row softmax, materialized scores",
#if ATTN_OPENBLAS_DISABLED
    .not_built = "this build was configured with -Dopenblas=disabled",
#else
    .not_built = "OpenBLAS was not found (pkg-config openblas; Debian: libopenblas-dev)",
#endif
};

#endif

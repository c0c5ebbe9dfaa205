/* blas: attention as most people first write it with a good BLAS. Per
 * (batch, head): S = scale * Q.K^T with one cblas_sgemm, a row softmax over
 * the visible keys (kernels/, vectorized), O = P.V with one cblas_sgemm.
 * The score matrix is materialized on purpose; that is what this backend
 * measures: Nq x Nk floats per head in flight.
 *
 * Threads: OpenMP over (batch, head), one single-threaded sgemm per head.
 * Measured on the 2-core development machine (README, "blas"), this beats
 * one head at a time with OpenBLAS's own threads, whose workers spin
 * between calls and fight OpenMP's for the cores. */
#include <stdio.h>
#include <string.h>

#include "host.h"
#include "config.h"

#if ATTN_HAVE_OPENBLAS

#include <cblas.h>

typedef struct blas_state {
    attn_host h;
    float *scores;                /* [threads][seq_q][seq_kv] */
    int *end;                     /* [threads][seq_q] visible keys per row */
} blas_state;

static size_t score_elems(const attn_problem *p)
{
    return (size_t)p->seq_q * (size_t)p->seq_kv;
}

static size_t blas_workspace(const attn_problem *p, const attn_config *cfg)
{
    size_t bytes = attn_host_workspace(sizeof(blas_state), p);
    bytes += (size_t)cfg->threads * score_elems(p) * sizeof(float);
    bytes += (size_t)cfg->threads * (size_t)p->seq_q * sizeof(int);
    return bytes;
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
    s->end = attn_alloc(cfg->alloc, (size_t)cfg->threads * (size_t)p->seq_q * sizeof(int));
    if (!s->scores || !s->end) {
        blas_release(s);
        return ATTN_ENOMEM;
    }
    /* Each head's sgemm runs on the thread that owns the head. */
    openblas_set_num_threads(1);
    *state = s;
    return ATTN_OK;
}

static void blas_head(const blas_state *s, size_t bh, float *sc, int *end)
{
    const attn_problem *p = &s->h.p;
    const attn_tensors *t = &s->h.t;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const int b = (int)(bh / (size_t)p->heads);
    const float *q = t->q + bh * (size_t)nq * dk;
    const float *k = t->k + attn_kv_head_of(p, bh) * (size_t)nk * dk;
    const float *v = t->v + attn_kv_head_of(p, bh) * (size_t)nk * dv;
    float *o = t->o + bh * (size_t)nq * dv;
    /* Keys past the padding length are never multiplied: the matrices
     * shrink to the keys some query can see. */
    const int kmax = attn_visible_end(p, b, nq - 1);
    if (kmax == 0) {
        memset(o, 0, (size_t)nq * dv * sizeof(float));
        return;
    }
    for (int i = 0; i < nq; i++)
        end[i] = attn_visible_end(p, b, i);
    /* Scores in log2 units, so that the softmax kernel's exp2 applies. */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, kmax, dk,
                (float)((double)p->scale * ATTN_LOG2E), q, dk, k, dk, 0.0f, sc, nk);
    s->h.k->softmax_rows(sc, nk, nq, kmax, end);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, dv, kmax,
                1.0f, sc, nk, v, dv, 0.0f, o, dv);
    /* A NaN or Inf in a key some rows cannot see reached them through its
     * weight 0: those rows again, over their own visible keys. */
    if (end[0] < kmax && !attn_rows_finite(v + (size_t)end[0] * dv, (size_t)(kmax - end[0]), (size_t)dv))
        for (int i = 0; i < nq && end[i] < kmax; i++) {
            if (end[i] > 0)
                cblas_sgemv(CblasRowMajor, CblasTrans, end[i], dv, 1.0f, v, dv, sc + (size_t)i * nk,
                            1, 0.0f, o + (size_t)i * dv, 1);
            else
                memset(o + (size_t)i * dv, 0, (size_t)dv * sizeof(float));
        }
}

/* Heads are independent and each is computed by one thread with the same
 * calls, so the output does not depend on the thread count. */
static attn_status blas_run(void *state)
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
                  s->end + (size_t)tid * (size_t)p->seq_q);
    }
    return ATTN_OK;
}

static const char *blas_version(void)
{
    return openblas_get_config();
}

const attn_backend attn_backend_blas = {
    .name      = "blas",
    .summary   = "OpenBLAS sgemm + vectorized row softmax, materialized scores",
    .supports  = blas_supports,
    .prepare   = blas_prepare,
    .bind      = attn_host_bind,
    .run       = blas_run,
    .read      = attn_host_read,
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

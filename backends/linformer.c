/* linformer: K' = E K and V' = F V over the valid keys (E, F [p, Nk] from
 * the seed, variant.h), then softmax attention over the p projected keys:
 * O(N p d). GEMM-shaped: E K and F V in chunks of KCHUNK keys (float within
 * a chunk, double across), Q K'^T and P V' in blocks of QBLOCK queries.
 * Threads: OpenMP over (batch, head). Not causal (supports refuses it). */
#include <string.h>

#include "efficient.h"

typedef struct lin_state {
    attn_host h;
    attn_scratch x;
    float *et, *ft;             /* E^T, F^T [Nk][p] */
    float *ones;                /* [max(QBLOCK, p)] */
} lin_state;

static size_t ones_count(const attn_problem *p)
{
    return p->var.proj > QBLOCK ? (size_t)p->var.proj : QBLOCK;
}

/* Per thread: a chunk of K' and V', K'^T and V' in float, scores
 * [QBLOCK][p]; K', V' in double. */
static void scratch_sizes(const attn_problem *p, size_t *fl, size_t *db)
{
    const size_t np = (size_t)p->var.proj, dk = (size_t)p->d_k, dv = (size_t)p->d_v;
    *fl = 2 * np * (dk + dv) + QBLOCK * np;
    *db = np * (dk + dv);
}

static size_t lin_workspace(const attn_problem *p, const attn_config *cfg)
{
    size_t fl, db;
    scratch_sizes(p, &fl, &db);
    return attn_host_workspace(sizeof(lin_state), p) +
           attn_scratch_bytes(cfg->threads, fl, db) +
           ones_count(p) * sizeof(float) + 2 * (size_t)p->var.proj * p->seq_kv * sizeof(float);
}

static void lin_release(void *state)
{
    lin_state *s = state;
    if (s) {
        const attn_allocator *a = s->h.alloc;
        attn_scratch_free(&s->x, a);
        attn_free(a, s->et);
        attn_free(a, s->ft);
        attn_free(a, s->ones);
    }
    attn_host_destroy(s);
}

static attn_status lin_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    lin_state *s;
    attn_status st = attn_host_create(sizeof(*s), p, cfg, (void **)&s);
    if (st != ATTN_OK)
        return st;
    size_t fl, db;
    scratch_sizes(p, &fl, &db);
    const size_t np = (size_t)p->var.proj, n = np * p->seq_kv;
    if (!attn_scratch_alloc(&s->x, cfg->alloc, cfg->threads, fl, db) ||
        !(s->ones = attn_efficient_ones(cfg->alloc, ones_count(p))) ||
        !(s->et = attn_alloc(cfg->alloc, n * sizeof(float))) ||
        !(s->ft = attn_alloc(cfg->alloc, n * sizeof(float)))) {
        lin_release(s);
        return ATTN_ENOMEM;
    }
    for (int j = 0; j < p->seq_kv; j++)
        for (int u = 0; u < p->var.proj; u++) {
            s->et[(size_t)j * np + u] = (float)attn_linformer_e(p, u, j);
            s->ft[(size_t)j * np + u] = (float)attn_linformer_f(p, u, j);
        }
    *state = s;
    return ATTN_OK;
}

static void linformer_head(void *state, size_t bh, float *fs, double *ds)
{
    const lin_state *s = state;
    const attn_problem *p = &s->h.p;
    const attn_kernels *kn = s->h.k;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v, np = p->var.proj;
    const int b = (int)(bh / (size_t)p->heads);
    const int valid = p->kv_len ? p->kv_len[b] : nk;
    const float *q = s->h.t.q + bh * (size_t)nq * dk;
    const float *k = s->h.t.k + bh * (size_t)nk * dk, *v = s->h.t.v + bh * (size_t)nk * dv;
    float *o = s->h.t.o + bh * (size_t)nq * dv;
    const size_t nkp = (size_t)np * dk, nvp = (size_t)np * dv;
    float *kc = fs, *vc = kc + nkp, *kpt = vc + nvp, *vpf = kpt + nkp, *sc = vpf + nvp;
    double *kd = ds, *vd = kd + nkp;

    memset(kd, 0, nkp * sizeof(double));
    memset(vd, 0, nvp * sizeof(double));
    for (int j0 = 0; j0 < valid; j0 += KCHUNK) {
        const int n = valid - j0 < KCHUNK ? valid - j0 : KCHUNK;
        memset(kc, 0, nkp * sizeof(float));
        memset(vc, 0, nvp * sizeof(float));
        kn->pv(kc, dk, s->et + (size_t)j0 * np, np, k + (size_t)j0 * dk, dk, s->ones, np, n, dk, 0);
        kn->pv(vc, dv, s->ft + (size_t)j0 * np, np, v + (size_t)j0 * dv, dv, s->ones, np, n, dv, 0);
        for (size_t e = 0; e < nkp; e++)
            kd[e] += kc[e];
        for (size_t e = 0; e < nvp; e++)
            vd[e] += vc[e];
    }
    /* K'^T scaled into log2 units for the softmax kernel, and V'. */
    const double ls = p->scale * ATTN_LOG2E;
    for (int t = 0; t < np; t++)
        for (int c = 0; c < dk; c++)
            kpt[(size_t)c * np + t] = (float)(ls * kd[(size_t)t * dk + c]);
    for (size_t e = 0; e < nvp; e++)
        vpf[e] = (float)vd[e];
    for (int i0 = 0; i0 < nq; i0 += QBLOCK) {
        const int rows = nq - i0 < QBLOCK ? nq - i0 : QBLOCK;
        kn->qk(sc, np, q + (size_t)i0 * dk, dk, kpt, np, rows, np, dk, 0);
        kn->softmax_rows(sc, np, rows, np, NULL);
        kn->qk(o + (size_t)i0 * dv, dv, sc, np, vpf, dv, rows, dv, np, 0);
    }
}

static attn_status lin_run(void *state)
{
    lin_state *s = state;
    attn_efficient_heads(&s->h, &s->x, linformer_head, s);
    return ATTN_OK;
}

const attn_backend attn_backend_linformer = {
    .name      = "linformer",
    .summary   = "Linformer: keys and values projected to --proj rows (not causal)",
    .kind      = ATTN_KIND_LINFORMER,
    .supports  = attn_efficient_supports,
    .prepare   = lin_prepare,
    .bind      = attn_host_bind,
    .run       = lin_run,
    .read      = attn_host_read,
    .release   = lin_release,
    .workspace = lin_workspace,
};

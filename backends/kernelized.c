/* linear and performer: O_i = phi(q_i)^T S / phi(q_i)^T z with
 * S = sum_j phi(k_j) v_j^T and z = sum_j phi(k_j) over the visible keys,
 * running prefix sums under causal masks; linear's phi is elu(x)+1 (O(N dk
 * dv)), performer's the FAVOR+ features (O(N m d)). GEMM-shaped: features
 * W x, S += phi(K)^T V, phi(Q) S. Queries go in blocks of QBLOCK rows: under
 * a causal mask a block takes the prefix sums over the keys every one of its
 * rows sees, plus a masked QBLOCK x QBLOCK product for the keys only some of
 * its rows see (the chunked form of causal linear attention). Threads:
 * OpenMP over (batch, head). */
#include <math.h>
#include <string.h>

#include "efficient.h"

typedef struct kern_state {
    attn_host h;
    attn_scratch x;
    float *wt;                  /* performer: W^T [dk][m] */
    float *ones;                /* [max(QBLOCK, nf)] */
} kern_state;

/* Features per key and query: dk for linear, m for performer. */
static size_t n_features(const attn_problem *p)
{
    return p->kind == ATTN_KIND_PERFORMER ? (size_t)p->var.features : (size_t)p->d_k;
}

static size_t ones_count(const attn_problem *p)
{
    return n_features(p) > QBLOCK ? n_features(p) : QBLOCK;
}

/* Per thread: phi(K) [Nk][nf], phi(Q) [QB][nf] and its transpose, the
 * masked block [QB][QB], a chunk of S and S in float [nf][dv], z in float
 * [nf] (twice), den [QB], one row [max(nf, dk)]; S, z in double. */
static void scratch_sizes(const attn_problem *p, size_t *fl, size_t *db)
{
    const size_t nk = (size_t)p->seq_kv, dk = (size_t)p->d_k, dv = (size_t)p->d_v;
    const size_t nf = n_features(p), qb = QBLOCK;
    *fl = nk * nf + 2 * qb * nf + qb * qb + 2 * nf * dv + 2 * nf + qb + (nf > dk ? nf : dk);
    *db = nf * dv + nf;
}

static size_t kern_workspace(const attn_problem *p, const attn_config *cfg)
{
    size_t fl, db;
    scratch_sizes(p, &fl, &db);
    size_t bytes = attn_host_workspace(sizeof(kern_state), p);
    bytes += attn_scratch_bytes(cfg->threads, fl, db);
    bytes += ones_count(p) * sizeof(float);
    if (p->kind == ATTN_KIND_PERFORMER)   /* W^T, and its double original in prepare */
        bytes += (size_t)p->var.features * p->d_k * (sizeof(float) + sizeof(double));
    return bytes;
}

static void kern_release(void *state)
{
    kern_state *s = state;
    if (s) {
        const attn_allocator *a = s->h.alloc;
        attn_scratch_free(&s->x, a);
        attn_free(a, s->wt);
        attn_free(a, s->ones);
    }
    attn_host_destroy(s);
}

/* performer: W^T [dk][m] from the generator's W [m][dk] (in double: a
 * temporary, part of the peak). */
static bool performer_features(kern_state *s, const attn_allocator *a)
{
    const attn_problem *p = &s->h.p;
    const int m = p->var.features, dk = p->d_k;
    s->wt = attn_alloc(a, (size_t)m * dk * sizeof(float));
    double *w = s->wt ? attn_alloc(a, (size_t)m * dk * sizeof(double)) : NULL;
    if (!w)
        return false;
    attn_performer_features(p, w);
    for (int t = 0; t < m; t++)
        for (int c = 0; c < dk; c++)
            s->wt[(size_t)c * m + t] = (float)w[(size_t)t * dk + c];
    attn_free(a, w);
    return true;
}

static attn_status kern_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    kern_state *s;
    attn_status st = attn_host_create(sizeof(*s), p, cfg, (void **)&s);
    if (st != ATTN_OK)
        return st;
    size_t fl, db;
    scratch_sizes(p, &fl, &db);
    if (!attn_scratch_alloc(&s->x, cfg->alloc, cfg->threads, fl, db) ||
        !(s->ones = attn_efficient_ones(cfg->alloc, ones_count(p))) ||
        (p->kind == ATTN_KIND_PERFORMER && !performer_features(s, cfg->alloc))) {
        kern_release(s);
        return ATTN_ENOMEM;
    }
    *state = s;
    return ATTN_OK;
}

static inline float elu1(float x)
{
    return x > 0 ? x + 1.0f : expf(x);
}

/* Performer's feature exponents of `rows` rows of x (stride dk), in log2
 * units, into g [rows][m]: log2(e) (W x~ - |x~|^2 / 2) with x~ = x scale^(1/2). */
static void performer_exponents(const kern_state *s, const float *x, int rows, float *g)
{
    const attn_problem *p = &s->h.p;
    const int dk = p->d_k, m = p->var.features;
    const float a = (float)(ATTN_LOG2E * sqrt((double)p->scale));
    const float h = (float)(0.5 * ATTN_LOG2E * p->scale);
    s->h.k->qk(g, m, x, dk, s->wt, m, rows, m, dk, 0);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * dk;
        float sq = 0;
#pragma omp simd reduction(+ : sq)
        for (int c = 0; c < dk; c++)
            sq += xr[c] * xr[c];
        const float off = h * sq;
        float *gr = g + (size_t)r * m;
#pragma omp simd
        for (int t = 0; t < m; t++)
            gr[t] = a * gr[t] - off;
    }
}

/* g[r][t] <- 2^(g[r][t] - shift), shift = *sub or, when sub is NULL, the
 * row's own max. tmp holds one row. */
static void exp2_rows(const kern_state *s, float *g, int rows, int m, const float *sub, float *tmp)
{
    for (int r = 0; r < rows; r++) {
        float *gr = g + (size_t)r * m;
        float sh;
        if (sub) {
            sh = *sub;
        } else {
            sh = -INFINITY;
            for (int t = 0; t < m; t++)
                sh = gr[t] > sh ? gr[t] : sh;
        }
#pragma omp simd
        for (int t = 0; t < m; t++)
            tmp[t] = gr[t] - sh;
        s->h.k->exp2(gr, tmp, m);
    }
}

/* phi of `rows` query rows of x into f [rows][nf]. Performer: each row minus
 * its own max exponent (it cancels in the ratio, as does 1/sqrt(m)). */
static void phi_queries(const kern_state *s, const float *x, int rows, float *f, float *tmp)
{
    const attn_problem *p = &s->h.p;
    if (p->kind == ATTN_KIND_LINEAR) {
        const size_t n = (size_t)rows * p->d_k;
        for (size_t e = 0; e < n; e++)
            f[e] = elu1(x[e]);
        return;
    }
    performer_exponents(s, x, rows, f);
    exp2_rows(s, f, rows, p->var.features, NULL, tmp);
}

/* phi of the first n key rows of x into f [n][nf]. Performer: every key
 * minus the largest exponent of them all (one stabilizer per head). */
static void phi_keys(const kern_state *s, const float *x, int n, float *f, float *tmp)
{
    const attn_problem *p = &s->h.p;
    if (p->kind == ATTN_KIND_LINEAR) {
        phi_queries(s, x, n, f, tmp);
        return;
    }
    const int m = p->var.features;
    performer_exponents(s, x, n, f);
    float kmax = -INFINITY;
    for (size_t e = 0; e < (size_t)n * m; e++)
        kmax = f[e] > kmax ? f[e] : kmax;
    exp2_rows(s, f, n, m, &kmax, tmp);
}

/* S += phi(K)^T V and z += column sums of phi(K) over keys [j0, j1): float
 * within chunks of KCHUNK keys, double across them. */
static void add_prefix(const kern_state *s, const float *fk, const float *v, int j0, int j1,
                       float *sc, float *zc, double *sd, double *zd)
{
    const int nf = (int)n_features(&s->h.p), dv = s->h.p.d_v;
    const size_t nsv = (size_t)nf * dv;
    for (int c0 = j0; c0 < j1; c0 += KCHUNK) {
        const int n = j1 - c0 < KCHUNK ? j1 - c0 : KCHUNK;
        memset(sc, 0, nsv * sizeof(float));
        memset(zc, 0, (size_t)nf * sizeof(float));
        s->h.k->pv(sc, dv, fk + (size_t)c0 * nf, nf, v + (size_t)c0 * dv, dv, s->ones, nf, n, dv,
                   0);
        for (int j = 0; j < n; j++) {
            const float *row = fk + (size_t)(c0 + j) * nf;
#pragma omp simd
            for (int t = 0; t < nf; t++)
                zc[t] += row[t];
        }
        for (size_t e = 0; e < nsv; e++)
            sd[e] += sc[e];
        for (int t = 0; t < nf; t++)
            zd[t] += zc[t];
    }
}

static void kernel_head(void *state, size_t bh, float *fs, double *ds)
{
    const kern_state *s = state;
    const attn_problem *p = &s->h.p;
    const attn_kernels *kn = s->h.k;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const int nf = (int)n_features(p), b = (int)(bh / (size_t)p->heads);
    const size_t nsv = (size_t)nf * dv;
    const float *q = s->h.t.q + bh * (size_t)nq * dk;
    const float *k = s->h.t.k + bh * (size_t)nk * dk, *v = s->h.t.v + bh * (size_t)nk * dv;
    float *o = s->h.t.o + bh * (size_t)nq * dv;
    float *fk = fs, *fq = fk + (size_t)nk * nf, *fqt = fq + (size_t)QBLOCK * nf;
    float *at = fqt + (size_t)QBLOCK * nf, *sc = at + QBLOCK * QBLOCK;
    float *sf = sc + nsv, *zf = sf + nsv, *zc = zf + nf, *den = zc + nf, *tmp = den + QBLOCK;
    double *sd = ds, *zd = sd + nsv;

    /* Visible ends never decrease with i: the last row sees every key any row does. */
    const int kend = nq ? attn_visible_end(p, b, nq - 1) : 0;
    phi_keys(s, k, kend, fk, tmp);
    memset(sd, 0, nsv * sizeof(double));
    memset(zd, 0, (size_t)nf * sizeof(double));
    memset(sf, 0, nsv * sizeof(float));
    memset(zf, 0, (size_t)nf * sizeof(float));
    int added = 0;
    for (int i0 = 0; i0 < nq; i0 += QBLOCK) {
        const int rows = nq - i0 < QBLOCK ? nq - i0 : QBLOCK;
        /* Keys [0, e0) are seen by every row of the block: prefix sums.
         * Keys [e0, e1) by some (fewer than QBLOCK: a causal diagonal). */
        const int e0 = attn_visible_end(p, b, i0), e1 = attn_visible_end(p, b, i0 + rows - 1);
        if (e0 > added) {
            add_prefix(s, fk, v, added, e0, sc, zc, sd, zd);
            for (size_t e = 0; e < nsv; e++)
                sf[e] = (float)sd[e];
            for (int t = 0; t < nf; t++)
                zf[t] = (float)zd[t];
            added = e0;
        }
        float *ob = o + (size_t)i0 * dv;
        phi_queries(s, q + (size_t)i0 * dk, rows, fq, tmp);
        kn->qk(ob, dv, fq, nf, sf, dv, rows, dv, nf, 0);
        for (int r = 0; r < rows; r++) {
            const float *fr = fq + (size_t)r * nf;
            double d = 0;
            for (int t = 0; t < nf; t++)
                d += (double)fr[t] * zf[t];
            den[r] = (float)d;
        }
        const int np = e1 - e0;
        if (np > 0) {
            for (int r = 0; r < rows; r++)
                for (int t = 0; t < nf; t++)
                    fqt[(size_t)t * QBLOCK + r] = fq[(size_t)r * nf + t];
            kn->qk(at, QBLOCK, fk + (size_t)e0 * nf, nf, fqt, QBLOCK, np, rows, nf, 0);
            for (int r = 0; r < rows; r++) {
                const int end = attn_visible_end(p, b, i0 + r);
                float d = 0;
                for (int j = 0; j < np; j++) {
                    float *a = at + (size_t)j * QBLOCK + r;
                    if (e0 + j >= end)
                        *a = 0;
                    d += *a;
                }
                den[r] += d;
            }
            const float *vd = v + (size_t)e0 * dv;
            if (attn_rows_finite(vd, (size_t)np, (size_t)dv)) {
                kn->pv(ob, dv, at, QBLOCK, vd, dv, s->ones, rows, np, dv, 0);
            } else {
                /* A NaN or Inf in V: each row over its own visible keys. */
                for (int r = 0; r < rows; r++) {
                    const int n = attn_visible_end(p, b, i0 + r) - e0;
                    kn->pv(ob + (size_t)r * dv, dv, at + r, QBLOCK, vd, dv, s->ones, 1,
                           n < 0 ? 0 : n > np ? np : n, dv, 0);
                }
            }
        }
        for (int r = 0; r < rows; r++) {
            float *orow = ob + (size_t)r * dv;
            /* A row that sees no key is 0 by definition, whatever its q. */
            const float d = attn_visible_end(p, b, i0 + r) ? den[r] : 0.0f;
            for (int c = 0; c < dv; c++)
                orow[c] = d > 0 || d != d ? orow[c] / d : 0.0f;   /* NaN stays NaN */
        }
    }
}

static attn_status kern_run(void *state)
{
    kern_state *s = state;
    attn_efficient_heads(&s->h, &s->x, kernel_head, s);
    return ATTN_OK;
}

#define KERN_VERBS                                                                  \
    .supports = attn_efficient_supports, .prepare = kern_prepare,                    \
    .bind = attn_host_bind, .run = kern_run, .read = attn_host_read,                 \
    .release = kern_release, .workspace = kern_workspace

const attn_backend attn_backend_linear = {
    .name    = "linear",
    .summary = "linear attention, elu(x)+1 features, prefix sums when causal",
    .kind    = ATTN_KIND_LINEAR,
    KERN_VERBS,
};

const attn_backend attn_backend_performer = {
    .name    = "performer",
    .summary = "Performer FAVOR+: --features positive orthogonal random features",
    .kind    = ATTN_KIND_PERFORMER,
    KERN_VERBS,
};

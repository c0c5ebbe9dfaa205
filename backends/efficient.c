/* The efficient-attention variants (definitions in variant.h), none of
 * which forms the N x N score matrix:
 *   local, sparse  exact softmax over the visible key intervals of each row
 *                  only (window, global tokens, random blocks, merged), online
 *                  over the intervals; O(N (w + g + r bs) d).
 *   linear         S = sum_j phi(k_j) v_j^T and z = sum_j phi(k_j), running
 *                  prefix sums under causal masks; O(N dk dv).
 *   performer      the same with FAVOR+ features; O(N m d).
 *   linformer      K' = E K, V' = F V, then softmax over p keys; O(N p d).
 * Threads: OpenMP over (batch, head) pairs and, for local and sparse, over
 * blocks of 32 consecutive query rows, whose windows overlap so their K and
 * V rows stay in cache. Sums over keys (S, z, K', V') are kept in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "variant.h"

#define ROW_BLOCK 32

typedef struct eff_state {
    attn_problem p;
    int *kv_len;
    int threads;
    const attn_allocator *alloc;
    float *scratch;             /* [threads][per_thread] floats */
    size_t per_thread;
    double *dscratch;           /* [threads][per_thread_d] doubles */
    size_t per_thread_d;
    float *w;                   /* performer: W [m][dk] */
    float *e, *f;               /* linformer: E, F [p][Nk] */
    attn_tensors t;
} eff_state;

/* Per-thread scratch, floats and doubles, for each kind. */
static void scratch_sizes(const attn_problem *p, size_t *fl, size_t *db)
{
    const size_t nk = (size_t)p->seq_kv, dk = (size_t)p->d_k, dv = (size_t)p->d_v;
    const size_t m = (size_t)p->var.features, np = (size_t)p->var.proj;
    *fl = *db = 0;
    switch (p->kind) {
    case ATTN_KIND_LOCAL: {
        const size_t w = 2 * (size_t)p->var.window + 1;
        *fl = (w < nk ? w : nk) + dv;
        break;
    }
    case ATTN_KIND_SPARSE:
        *fl = nk + dv;      /* a global query row sees every key */
        break;
    case ATTN_KIND_LINEAR:
        *fl = dk;
        *db = dk * dv + dk + dv;
        break;
    case ATTN_KIND_PERFORMER:
        *fl = m + dk;
        *db = m * dv + m + dv;
        break;
    case ATTN_KIND_LINFORMER:
        *fl = np;
        *db = np * (dk + dv) + dv;
        break;
    default:
        break;
    }
}

static size_t eff_workspace(const attn_problem *p, const attn_config *cfg)
{
    size_t fl, db;
    scratch_sizes(p, &fl, &db);
    size_t bytes = sizeof(eff_state) + attn_kv_len_bytes(p);
    bytes += (size_t)cfg->threads * fl * sizeof(float);
    bytes += (size_t)cfg->threads * db * sizeof(double);
    if (p->kind == ATTN_KIND_PERFORMER)   /* W, and its double original in prepare */
        bytes += (size_t)p->var.features * p->d_k * (sizeof(float) + sizeof(double));
    if (p->kind == ATTN_KIND_LINFORMER)
        bytes += 2 * (size_t)p->var.proj * p->seq_kv * sizeof(float);
    return bytes;
}

static void eff_release(void *state)
{
    eff_state *s = state;
    if (!s)
        return;
    const attn_allocator *a = s->alloc;
    attn_free(a, s->scratch);
    attn_free(a, s->dscratch);
    attn_free(a, s->w);
    attn_free(a, s->e);
    attn_free(a, s->f);
    attn_free(a, s->kv_len);
    attn_free(a, s);
}

static attn_status eff_supports(const attn_problem *p, const attn_config *cfg, char *why,
                                size_t len)
{
    (void)cfg;
    const attn_status st = attn_variant_supports(p, why, len);
    if (st == ATTN_EINVAL)
        return ATTN_EUNSUPPORTED;
    return st;
}

static attn_status eff_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    eff_state *s = attn_alloc(cfg->alloc, sizeof(*s));
    if (!s)
        return ATTN_ENOMEM;
    memset(s, 0, sizeof(*s));
    s->alloc = cfg->alloc;
    s->p = *p;
    s->threads = cfg->threads;
    if (!attn_own_kv_len(cfg->alloc, &s->p, &s->kv_len))
        goto fail;
    scratch_sizes(p, &s->per_thread, &s->per_thread_d);
    if (s->per_thread &&
        !(s->scratch = attn_alloc(cfg->alloc, (size_t)s->threads * s->per_thread * sizeof(float))))
        goto fail;
    if (s->per_thread_d &&
        !(s->dscratch = attn_alloc(cfg->alloc,
                                   (size_t)s->threads * s->per_thread_d * sizeof(double))))
        goto fail;
    if (p->kind == ATTN_KIND_PERFORMER) {
        const size_t n = (size_t)p->var.features * p->d_k;
        /* The generator works in double: a temporary, part of the peak. */
        s->w = attn_alloc(cfg->alloc, n * sizeof(float));
        double *w = s->w ? attn_alloc(cfg->alloc, n * sizeof(double)) : NULL;
        if (!w)
            goto fail;
        attn_performer_features(p, w);
        for (size_t e = 0; e < n; e++)
            s->w[e] = (float)w[e];
        attn_free(cfg->alloc, w);
    }
    if (p->kind == ATTN_KIND_LINFORMER) {
        const size_t n = (size_t)p->var.proj * p->seq_kv;
        s->e = attn_alloc(cfg->alloc, n * sizeof(float));
        s->f = attn_alloc(cfg->alloc, n * sizeof(float));
        if (!s->e || !s->f)
            goto fail;
        for (int t = 0; t < p->var.proj; t++)
            for (int j = 0; j < p->seq_kv; j++) {
                s->e[(size_t)t * p->seq_kv + j] = (float)attn_linformer_e(p, t, j);
                s->f[(size_t)t * p->seq_kv + j] = (float)attn_linformer_f(p, t, j);
            }
    }
    *state = s;
    return ATTN_OK;
fail:
    eff_release(s);
    return ATTN_ENOMEM;
}

static attn_status eff_bind(void *state, const attn_tensors *t)
{
    ((eff_state *)state)->t = *t;
    return ATTN_OK;
}

/* ---- local, sparse ------------------------------------------------------- */

typedef struct span {
    int lo, hi;
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* The visible keys of query i as ascending disjoint intervals; returns how many. */
static int row_spans(const attn_problem *p, int b, int i, span *sp)
{
    const int end = attn_visible_end(p, b, i);
    const int at = i + p->seq_kv - p->seq_q, w = p->var.window;
    int n = 0;
    if (p->kind == ATTN_KIND_SPARSE && i < p->var.globals) {
        sp[n++] = (span){ 0, end };
    } else {
        sp[n++] = (span){ at - w > 0 ? at - w : 0, at + w + 1 };
        if (p->kind == ATTN_KIND_SPARSE) {
            sp[n++] = (span){ 0, p->var.globals };
            if (p->var.random_blocks > 0) {
                int blocks[ATTN_MAX_RANDOM_BLOCKS];
                const int bs = p->var.block, nb = attn_random_blocks(p, at / bs, blocks);
                for (int t = 0; t < nb; t++)
                    sp[n++] = (span){ blocks[t] * bs, (blocks[t] + 1) * bs };
            }
        }
    }
    for (int x = 0; x < n; x++)
        if (sp[x].hi > end)
            sp[x].hi = end;
    qsort(sp, (size_t)n, sizeof(*sp), cmp_span);
    int m = 0;
    for (int x = 0; x < n; x++) {
        if (sp[x].hi <= sp[x].lo)
            continue;
        if (m && sp[x].lo <= sp[m - 1].hi) {
            if (sp[x].hi > sp[m - 1].hi)
                sp[m - 1].hi = sp[x].hi;
        } else {
            sp[m++] = sp[x];
        }
    }
    return m;
}

static void masked_row(const eff_state *s, size_t bh, int i, float *sc, float *acc)
{
    const attn_problem *p = &s->p;
    const int nk = p->seq_kv, dk = p->d_k, dv = p->d_v, b = (int)(bh / (size_t)p->heads);
    const float *q = s->t.q + (bh * p->seq_q + i) * (size_t)dk;
    const float *k = s->t.k + bh * (size_t)nk * dk, *v = s->t.v + bh * (size_t)nk * dv;
    float *o = s->t.o + (bh * p->seq_q + i) * (size_t)dv;
    span sp[ATTN_MAX_RANDOM_BLOCKS + 2];
    const int ns = row_spans(p, b, i, sp);
    int n = 0;
    float mx = -INFINITY;
    for (int x = 0; x < ns; x++)
        for (int j = sp[x].lo; j < sp[x].hi; j++) {
            const float *kj = k + (size_t)j * dk;
            float dot = 0;
#pragma omp simd reduction(+ : dot)
            for (int c = 0; c < dk; c++)
                dot += q[c] * kj[c];
            dot *= p->scale;
            sc[n++] = dot;
            mx = dot > mx ? dot : mx;
        }
    for (int c = 0; c < dv; c++)
        acc[c] = 0;
    if (!n) {
        memset(o, 0, (size_t)dv * sizeof(float));
        return;
    }
    float l = 0;
    n = 0;
    for (int x = 0; x < ns; x++)
        for (int j = sp[x].lo; j < sp[x].hi; j++) {
            const float e = expf(sc[n++] - mx);
            const float *vj = v + (size_t)j * dv;
            l += e;
#pragma omp simd
            for (int c = 0; c < dv; c++)
                acc[c] += e * vj[c];
        }
    const float inv = 1.0f / l;
    for (int c = 0; c < dv; c++)
        o[c] = acc[c] * inv;
}

static void run_masked(eff_state *s)
{
    const attn_problem *p = &s->p;
    const long bh_n = (long)p->batch * p->heads;
    const long blocks = (p->seq_q + ROW_BLOCK - 1) / ROW_BLOCK;
    const long total = bh_n * blocks;
#ifdef _OPENMP
#pragma omp parallel for num_threads(s->threads) schedule(dynamic, 1)
#endif
    for (long x = 0; x < total; x++) {
        float *sc = s->scratch + (size_t)attn_thread_id() * s->per_thread;
        float *acc = sc + (s->per_thread - (size_t)p->d_v);
        const size_t bh = (size_t)(x / blocks);
        const int i0 = (int)(x % blocks) * ROW_BLOCK;
        const int i1 = i0 + ROW_BLOCK < p->seq_q ? i0 + ROW_BLOCK : p->seq_q;
        for (int i = i0; i < i1; i++)
            masked_row(s, bh, i, sc, acc);
    }
}

/* ---- linear, performer --------------------------------------------------- */

static inline float elu1(float x)
{
    return x > 0 ? x + 1.0f : expf(x);
}

/* phi of one query or key row into f (length m for performer, dk for
 * linear). Performer: exponents minus `sub` (or minus their own max when sub
 * is NULL); the 1/sqrt(m) cancels in the ratio and is left out. */
static void features(const eff_state *s, const float *x, float *f, const float *sub,
                     float *max_out)
{
    const attn_problem *p = &s->p;
    const int dk = p->d_k;
    if (p->kind == ATTN_KIND_LINEAR) {
        for (int c = 0; c < dk; c++)
            f[c] = elu1(x[c]);
        return;
    }
    const int m = p->var.features;
    const float rs = sqrtf(p->scale);
    float sq = 0;
    for (int c = 0; c < dk; c++)
        sq += (rs * x[c]) * (rs * x[c]);
    float mx = -INFINITY;
    for (int t = 0; t < m; t++) {
        const float *wt = s->w + (size_t)t * dk;
        float dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int c = 0; c < dk; c++)
            dot += wt[c] * x[c];
        f[t] = rs * dot - 0.5f * sq;
        mx = f[t] > mx ? f[t] : mx;
    }
    if (max_out) {
        *max_out = mx;
        return;
    }
    const float shift = sub ? *sub : mx;
    for (int t = 0; t < m; t++)
        f[t] = expf(f[t] - shift);
}

static void kernel_head(eff_state *s, size_t bh, float *f, double *sv, double *z, double *num)
{
    const attn_problem *p = &s->p;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const int b = (int)(bh / (size_t)p->heads);
    const int nf = p->kind == ATTN_KIND_LINEAR ? dk : p->var.features;
    const float *k = s->t.k + bh * (size_t)nk * dk, *v = s->t.v + bh * (size_t)nk * dv;
    const int valid = p->kv_len ? p->kv_len[b] : nk;
    float kmax = 0;
    if (p->kind == ATTN_KIND_PERFORMER) {
        /* One stabilizer for every key of the head: it cancels in the ratio. */
        kmax = -INFINITY;
        for (int j = 0; j < valid; j++) {
            float mj;
            features(s, k + (size_t)j * dk, f, NULL, &mj);
            kmax = mj > kmax ? mj : kmax;
        }
    }
    memset(sv, 0, (size_t)nf * dv * sizeof(double));
    memset(z, 0, (size_t)nf * sizeof(double));
    int added = 0;
    /* Keys are added in order up to each row's visible end: all of them at
     * once without a causal mask, a running prefix with one. */
    for (int i = 0; i < nq; i++) {
        const int end = attn_visible_end(p, b, i);
        for (; added < end; added++) {
            features(s, k + (size_t)added * dk, f, &kmax, NULL);
            const float *vj = v + (size_t)added * dv;
            for (int t = 0; t < nf; t++) {
                const double ft = f[t];
                double *row = sv + (size_t)t * dv;
#pragma omp simd
                for (int c = 0; c < dv; c++)
                    row[c] += ft * vj[c];
                z[t] += ft;
            }
        }
        float *o = s->t.o + (bh * nq + i) * (size_t)dv;
        if (!end) {
            memset(o, 0, (size_t)dv * sizeof(float));
            continue;
        }
        features(s, s->t.q + (bh * nq + i) * (size_t)dk, f, NULL, NULL);
        double den = 0;
        for (int c = 0; c < dv; c++)
            num[c] = 0;
        for (int t = 0; t < nf; t++) {
            const double ft = f[t];
            const double *row = sv + (size_t)t * dv;
#pragma omp simd
            for (int c = 0; c < dv; c++)
                num[c] += ft * row[c];
            den += ft * z[t];
        }
        for (int c = 0; c < dv; c++)
            o[c] = den > 0 ? (float)(num[c] / den) : 0.0f;
    }
}

/* ---- linformer ----------------------------------------------------------- */

static void linformer_head(eff_state *s, size_t bh, float *sc, double *kp, double *vp,
                           double *acc)
{
    const attn_problem *p = &s->p;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v, np = p->var.proj;
    const int b = (int)(bh / (size_t)p->heads);
    const int valid = p->kv_len ? p->kv_len[b] : nk;
    const float *k = s->t.k + bh * (size_t)nk * dk, *v = s->t.v + bh * (size_t)nk * dv;
    memset(kp, 0, (size_t)np * dk * sizeof(double));
    memset(vp, 0, (size_t)np * dv * sizeof(double));
    for (int t = 0; t < np; t++) {
        const float *et = s->e + (size_t)t * nk, *ft = s->f + (size_t)t * nk;
        double *kt = kp + (size_t)t * dk, *vt = vp + (size_t)t * dv;
        for (int j = 0; j < valid; j++) {
            const double e = et[j], f = ft[j];
            const float *kj = k + (size_t)j * dk, *vj = v + (size_t)j * dv;
#pragma omp simd
            for (int c = 0; c < dk; c++)
                kt[c] += e * kj[c];
#pragma omp simd
            for (int c = 0; c < dv; c++)
                vt[c] += f * vj[c];
        }
    }
    for (int i = 0; i < nq; i++) {
        const float *q = s->t.q + (bh * nq + i) * (size_t)dk;
        float mx = -INFINITY;
        for (int t = 0; t < np; t++) {
            const double *kt = kp + (size_t)t * dk;
            double dot = 0;
#pragma omp simd reduction(+ : dot)
            for (int c = 0; c < dk; c++)
                dot += q[c] * kt[c];
            sc[t] = (float)(p->scale * dot);
            mx = sc[t] > mx ? sc[t] : mx;
        }
        double l = 0;
        for (int c = 0; c < dv; c++)
            acc[c] = 0;
        for (int t = 0; t < np; t++) {
            const double e = expf(sc[t] - mx);
            const double *vt = vp + (size_t)t * dv;
            l += e;
#pragma omp simd
            for (int c = 0; c < dv; c++)
                acc[c] += e * vt[c];
        }
        float *o = s->t.o + (bh * nq + i) * (size_t)dv;
        for (int c = 0; c < dv; c++)
            o[c] = (float)(acc[c] / l);
    }
}

static attn_status eff_run(void *state)
{
    eff_state *s = state;
    const attn_problem *p = &s->p;
    if (p->kind == ATTN_KIND_LOCAL || p->kind == ATTN_KIND_SPARSE) {
        run_masked(s);
        return ATTN_OK;
    }
    const long bh_n = (long)p->batch * p->heads;
    const size_t dk = (size_t)p->d_k, dv = (size_t)p->d_v;
#ifdef _OPENMP
#pragma omp parallel for num_threads(s->threads) schedule(dynamic, 1)
#endif
    for (long bh = 0; bh < bh_n; bh++) {
        const int tid = attn_thread_id();
        float *f = s->scratch + (size_t)tid * s->per_thread;
        double *d = s->dscratch + (size_t)tid * s->per_thread_d;
        if (p->kind == ATTN_KIND_LINFORMER) {
            const size_t np = (size_t)p->var.proj;
            linformer_head(s, (size_t)bh, f, d, d + np * dk, d + np * (dk + dv));
        } else {
            const size_t nf = p->kind == ATTN_KIND_LINEAR ? dk : (size_t)p->var.features;
            kernel_head(s, (size_t)bh, f, d, d + nf * dv, d + nf * dv + nf);
        }
    }
    return ATTN_OK;
}

static attn_status eff_read(void *state, float *out)
{
    eff_state *s = state;
    return attn_host_read(&s->p, s->t.o, out);
}

#define EFF_COMMON                                                                  \
    .cls = ATTN_CLASS_EXACT_FP32, .supports = eff_supports, .prepare = eff_prepare,  \
    .bind = eff_bind, .run = eff_run, .read = eff_read, .release = eff_release,      \
    .workspace = eff_workspace

const attn_backend attn_backend_local = {
    .name = "local",
    .summary = "sliding-window attention (--window), exact softmax over the window only",
    .caps = ATTN_CAP_CAUSAL | ATTN_CAP_PADDING | ATTN_CAP_CROSS | ATTN_CAP_DV,
    .kind = ATTN_KIND_LOCAL,
    EFF_COMMON,
};

const attn_backend attn_backend_sparse = {
    .name = "sparse",
    .summary = "Longformer/BigBird: window + global tokens + random key blocks",
    .caps = ATTN_CAP_CAUSAL | ATTN_CAP_PADDING | ATTN_CAP_CROSS | ATTN_CAP_DV,
    .kind = ATTN_KIND_SPARSE,
    EFF_COMMON,
};

const attn_backend attn_backend_linear = {
    .name = "linear",
    .summary = "linear attention, elu(x)+1 features, prefix sums when causal",
    .caps = ATTN_CAP_CAUSAL | ATTN_CAP_PADDING | ATTN_CAP_CROSS | ATTN_CAP_DV,
    .kind = ATTN_KIND_LINEAR,
    EFF_COMMON,
};

const attn_backend attn_backend_performer = {
    .name = "performer",
    .summary = "Performer FAVOR+: --features positive orthogonal random features",
    .caps = ATTN_CAP_CAUSAL | ATTN_CAP_PADDING | ATTN_CAP_CROSS | ATTN_CAP_DV,
    .kind = ATTN_KIND_PERFORMER,
    EFF_COMMON,
};

const attn_backend attn_backend_linformer = {
    .name = "linformer",
    .summary = "Linformer: keys and values projected to --proj rows (not causal)",
    .caps = ATTN_CAP_CAUSAL | ATTN_CAP_PADDING | ATTN_CAP_CROSS | ATTN_CAP_DV,
    .kind = ATTN_KIND_LINFORMER,
    EFF_COMMON,
};

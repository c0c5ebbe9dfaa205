/* The efficient-attention variants (definitions in variant.h), none of
 * which forms the N x N score matrix:
 *   local, sparse  exact softmax over each row's visible key intervals
 *                  (window, global tokens, random blocks, merged); a block
 *                  of rows scores only the union of its rows' intervals;
 *                  O(N (w + g + r bs) d).
 *   linear         S = sum_j phi(k_j) v_j^T and z = sum_j phi(k_j), running
 *                  prefix sums under causal masks; O(N dk dv).
 *   performer      the same with FAVOR+ features; O(N m d).
 *   linformer      K' = E K, V' = F V, then softmax over p keys; O(N p d).
 * Threads: OpenMP over (batch, head) pairs and, for local and sparse, over
 * blocks of QBLOCK consecutive query rows as well.
 *
 * All of them are GEMM-shaped: every product (a block's scores against the
 * union of its rows' key intervals and P V for local and sparse; features
 * W x, S += phi(K)^T V, phi(Q) S, E K, Q K'^T, P V') is one call of the
 * register-tiled kernels of kernels/ (the tiled backend's, AVX-512 / AVX2 /
 * C chosen at run time). Sums over keys (S, z, K', V') are taken in float
 * over chunks of KCHUNK keys and added up across chunks in double, so their
 * rounding does not grow with N. Queries go in blocks of QBLOCK rows: under
 * a causal mask a block takes the prefix sums over the keys every one of its
 * rows sees, plus a masked QBLOCK x QBLOCK product for the keys only some of
 * its rows see (the chunked form of causal linear attention). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "kernels/kernels.h"
#include "variant.h"

#define QBLOCK 64
#define KCHUNK 256
#define LOG2E 1.4426950408889634

typedef struct eff_state {
    attn_problem p;
    int *kv_len;
    int threads;
    const attn_allocator *alloc;
    const attn_kernels *k;
    float *scratch;             /* [threads][per_thread] floats */
    size_t per_thread;
    double *dscratch;           /* [threads][per_thread_d] doubles */
    size_t per_thread_d;
    attn_span *spans;           /* local, sparse: [threads][spans_per_thread] */
    size_t spans_per_thread;
    float *wt;                  /* performer: W^T [dk][m] */
    float *et, *ft;             /* linformer: E^T, F^T [Nk][p] */
    float *ones;                /* [n_ones] 1.0f: the kernels' alpha to accumulate */
    size_t n_ones;
    attn_tensors t;
} eff_state;

/* Features per key and query: dk for linear, m for performer. */
static size_t n_features(const attn_problem *p)
{
    return p->kind == ATTN_KIND_PERFORMER ? (size_t)p->var.features : (size_t)p->d_k;
}

/* Keys a block of QBLOCK rows can see at most: the union of their windows
 * for local; every key for sparse (a global query row sees them all). */
static size_t masked_cap(const attn_problem *p)
{
    const size_t nk = (size_t)p->seq_kv;
    if (p->kind == ATTN_KIND_LOCAL) {
        const size_t w = QBLOCK + 2 * (size_t)p->var.window;
        return w < nk ? w : nk;
    }
    return nk;
}

/* Intervals one row can have (variant.h: attn_variant_spans). */
static size_t spans_per_row(const attn_problem *p)
{
    return p->kind == ATTN_KIND_SPARSE ? (size_t)p->var.random_blocks + 2 : 1;
}

/* Per-thread scratch, floats and doubles, for each kind.
 * linear, performer: phi(K) [Nk][nf], phi(Q) [QB][nf] and its transpose,
 *   the masked block [QB][QB], a chunk of S and S in float [nf][dv], z in
 *   float [nf] (twice), den [QB], one row [max(nf, dk)]; S, z in double.
 * linformer: a chunk of K' and V', K'^T and V' in float, scores [QB][p];
 *   K', V' in double. */
static void scratch_sizes(const attn_problem *p, size_t *fl, size_t *db)
{
    const size_t nk = (size_t)p->seq_kv, dk = (size_t)p->d_k, dv = (size_t)p->d_v;
    const size_t np = (size_t)p->var.proj, nf = n_features(p), qb = QBLOCK;
    *fl = *db = 0;
    switch (p->kind) {
    case ATTN_KIND_LOCAL:
    case ATTN_KIND_SPARSE:
        *fl = (masked_cap(p) + 32) * (QBLOCK + dk) + masked_cap(p) * dv;
        break;
    case ATTN_KIND_LINEAR:
    case ATTN_KIND_PERFORMER:
        *fl = nk * nf + 2 * qb * nf + qb * qb + 2 * nf * dv + 2 * nf + qb + (nf > dk ? nf : dk);
        *db = nf * dv + nf;
        break;
    case ATTN_KIND_LINFORMER:
        *fl = 2 * np * (dk + dv) + qb * np;
        *db = np * (dk + dv);
        break;
    default:
        break;
    }
}

static size_t ones_count(const attn_problem *p)
{
    const size_t nf = n_features(p), np = (size_t)p->var.proj;
    size_t n = QBLOCK;
    if (p->kind == ATTN_KIND_LINEAR || p->kind == ATTN_KIND_PERFORMER)
        n = nf > n ? nf : n;
    if (p->kind == ATTN_KIND_LINFORMER)
        n = np > n ? np : n;
    return n;
}

static size_t eff_workspace(const attn_problem *p, const attn_config *cfg)
{
    size_t fl, db;
    scratch_sizes(p, &fl, &db);
    size_t bytes = sizeof(eff_state) + attn_kv_len_bytes(p);
    bytes += (size_t)cfg->threads * fl * sizeof(float);
    bytes += (size_t)cfg->threads * db * sizeof(double);
    if (p->kind == ATTN_KIND_LINEAR || p->kind == ATTN_KIND_PERFORMER ||
        p->kind == ATTN_KIND_LINFORMER)
        bytes += ones_count(p) * sizeof(float);
    if (p->kind == ATTN_KIND_LOCAL || p->kind == ATTN_KIND_SPARSE)
        bytes += (size_t)cfg->threads * QBLOCK * spans_per_row(p) * sizeof(attn_span);
    if (p->kind == ATTN_KIND_PERFORMER)   /* W^T, and its double original in prepare */
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
    attn_free(a, s->spans);
    attn_free(a, s->wt);
    attn_free(a, s->et);
    attn_free(a, s->ft);
    attn_free(a, s->ones);
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
    s->k = attn_kernels_best();
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
    if (p->kind == ATTN_KIND_LOCAL || p->kind == ATTN_KIND_SPARSE) {
        s->spans_per_thread = QBLOCK * spans_per_row(p);
        if (!(s->spans = attn_alloc(cfg->alloc, (size_t)s->threads * s->spans_per_thread *
                                                    sizeof(attn_span))))
            goto fail;
    }
    if (p->kind == ATTN_KIND_LINEAR || p->kind == ATTN_KIND_PERFORMER ||
        p->kind == ATTN_KIND_LINFORMER) {
        s->n_ones = ones_count(p);
        if (!(s->ones = attn_alloc(cfg->alloc, s->n_ones * sizeof(float))))
            goto fail;
        for (size_t e = 0; e < s->n_ones; e++)
            s->ones[e] = 1.0f;
    }
    if (p->kind == ATTN_KIND_PERFORMER) {
        const int m = p->var.features, dk = p->d_k;
        /* The generator works in double: a temporary, part of the peak. */
        s->wt = attn_alloc(cfg->alloc, (size_t)m * dk * sizeof(float));
        double *w = s->wt ? attn_alloc(cfg->alloc, (size_t)m * dk * sizeof(double)) : NULL;
        if (!w)
            goto fail;
        attn_performer_features(p, w);
        for (int t = 0; t < m; t++)
            for (int c = 0; c < dk; c++)
                s->wt[(size_t)c * m + t] = (float)w[(size_t)t * dk + c];
        attn_free(cfg->alloc, w);
    }
    if (p->kind == ATTN_KIND_LINFORMER) {
        const size_t n = (size_t)p->var.proj * p->seq_kv, np = (size_t)p->var.proj;
        s->et = attn_alloc(cfg->alloc, n * sizeof(float));
        s->ft = attn_alloc(cfg->alloc, n * sizeof(float));
        if (!s->et || !s->ft)
            goto fail;
        for (int j = 0; j < p->seq_kv; j++)
            for (int t = 0; t < p->var.proj; t++) {
                s->et[(size_t)j * np + t] = (float)attn_linformer_e(p, t, j);
                s->ft[(size_t)j * np + t] = (float)attn_linformer_f(p, t, j);
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

static int cmp_span(const void *a, const void *b)
{
    const attn_span *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Row r's visible keys as ranges of the packed union (all[0..nu), merged,
 * ascending): each of the row's intervals lies inside one union interval. */
static void packed_ranges(const attn_span *all, int nu, const attn_span *row, int ns,
                          attn_span *out)
{
    int x = 0, off = 0;
    for (int y = 0; y < ns; y++) {
        while (x < nu && all[x].hi < row[y].hi) {
            off += all[x].hi - all[x].lo;
            x++;
        }
        const int lo = off + row[y].lo - all[x].lo;
        out[y] = (attn_span){ lo, lo + row[y].hi - row[y].lo };
    }
}

/* Rows [i0, i0 + rows) of one (batch, head): the union of their visible
 * intervals is packed (K^T, V), the block's scores against it are one GEMM,
 * each row is masked to its own intervals and softmaxed, and P V is one
 * more GEMM. The waste is the union's keys a row does not see: for local,
 * (QBLOCK + 2w) keys per row instead of 2w + 1. */
static void masked_block(const eff_state *s, size_t bh, int i0, int rows, float *fs,
                         attn_span *all)
{
    const attn_problem *p = &s->p;
    const attn_kernels *kn = s->k;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const int b = (int)(bh / (size_t)p->heads);
    const size_t cap = masked_cap(p) + 32;
    float *sc = fs, *kt = sc + QBLOCK * cap, *vp = kt + (size_t)dk * cap;
    const float *q = s->t.q + (bh * nq + i0) * (size_t)dk;
    const float *k = s->t.k + bh * (size_t)nk * dk, *v = s->t.v + bh * (size_t)nk * dv;
    float *o = s->t.o + (bh * nq + i0) * (size_t)dv;
    attn_span row[ATTN_MAX_SPANS], rng[ATTN_MAX_SPANS];

    int n = 0;
    for (int r = 0; r < rows; r++)
        n += attn_variant_spans(p, b, i0 + r, all + n);
    qsort(all, (size_t)n, sizeof(*all), cmp_span);
    int nu = 0;
    for (int x = 0; x < n; x++) {
        if (nu && all[x].lo <= all[nu - 1].hi) {
            if (all[x].hi > all[nu - 1].hi)
                all[nu - 1].hi = all[x].hi;
        } else {
            all[nu++] = all[x];
        }
    }
    int nkeys = 0;
    for (int x = 0; x < nu; x++)
        nkeys += all[x].hi - all[x].lo;
    /* Rows of S and K^T: whole vectors, and never a multiple of 1 KiB apart
     * (64 rows 2^k floats apart would share a handful of cache sets). */
    ptrdiff_t ld = (nkeys + 15) / 16 * 16;
    if (ld % 256 == 0)
        ld += 16;
    nkeys = 0;
    for (int x = 0; x < nu; x++) {
        const int lo = all[x].lo, len = all[x].hi - lo;
        memcpy(vp + (size_t)nkeys * dv, v + (size_t)lo * dv, (size_t)len * dv * sizeof(float));
        for (int c = 0; c < dk; c++) {
            float *dst = kt + (size_t)c * ld + nkeys;
            for (int j = 0; j < len; j++)
                dst[j] = k[(size_t)(lo + j) * dk + c];
        }
        nkeys += len;
    }
    if (!nkeys) {
        memset(o, 0, (size_t)rows * dv * sizeof(float));
        return;
    }
    kn->qk(sc, ld, q, dk, kt, ld, rows, nkeys, dk);
    const float ls = (float)(p->scale * LOG2E);
    for (int r = 0; r < rows; r++) {
        float *sr = sc + (size_t)r * ld;
        const int ns = attn_variant_spans(p, b, i0 + r, row);
        packed_ranges(all, nu, row, ns, rng);
        int prev = 0;
        for (int y = 0; y < ns; y++) {
            for (int u = prev; u < rng[y].lo; u++)
                sr[u] = -INFINITY;
            for (int u = rng[y].lo; u < rng[y].hi; u++)
                sr[u] *= ls;
            prev = rng[y].hi;
        }
        for (int u = prev; u < nkeys; u++)
            sr[u] = -INFINITY;
        kn->softmax_rows(sr, ld, 1, nkeys, NULL);
        /* Masked keys came out of exp2 as at most 2^-126, not 0. */
        prev = 0;
        for (int y = 0; y < ns; y++) {
            memset(sr + prev, 0, (size_t)(rng[y].lo - prev) * sizeof(float));
            prev = rng[y].hi;
        }
        memset(sr + prev, 0, (size_t)(nkeys - prev) * sizeof(float));
    }
    kn->qk(o, dv, sc, ld, vp, dv, rows, dv, nkeys);
    /* A NaN or Inf in V shows in the output first (the block's output is a
     * fifth of its packed V with the default window): only then is V looked
     * at, and if it holds one, each row is multiplied over its own
     * intervals only, so that a key it does not see stays out of it. */
    if (attn_rows_finite(o, (size_t)rows, (size_t)dv) || attn_rows_finite(vp, (size_t)nkeys, (size_t)dv))
        return;
    const float one = 1.0f;
    for (int r = 0; r < rows; r++) {
        float *orow = o + (size_t)r * dv;
        memset(orow, 0, (size_t)dv * sizeof(float));
        const int ns = attn_variant_spans(p, b, i0 + r, row);
        packed_ranges(all, nu, row, ns, rng);
        for (int y = 0; y < ns; y++)
            kn->pv(orow, dv, sc + (size_t)r * ld + rng[y].lo, 1, vp + (size_t)rng[y].lo * dv, dv,
                   &one, 1, rng[y].hi - rng[y].lo, dv);
    }
}

/* The row blocks of one (batch, head): sparse's global query rows (which see
 * every key) in blocks of their own, then blocks of at most QBLOCK rows that
 * end on multiples of QBLOCK, so that with the default --block 64 each block
 * is one query block and shares its random key blocks. */
static int global_rows(const attn_problem *p)
{
    if (p->kind != ATTN_KIND_SPARSE)
        return 0;
    return p->var.globals < p->seq_q ? p->var.globals : p->seq_q;
}

static long row_blocks(const attn_problem *p)
{
    const int g = global_rows(p), a = (g + QBLOCK - 1) / QBLOCK * QBLOCK;
    long n = (g + QBLOCK - 1) / QBLOCK;
    if (a > g && g < p->seq_q)
        n++;
    if (p->seq_q > a)
        n += (p->seq_q - a + QBLOCK - 1) / QBLOCK;
    return n;
}

static void row_block(const attn_problem *p, long x, int *i0, int *rows)
{
    const int g = global_rows(p), a = (g + QBLOCK - 1) / QBLOCK * QBLOCK;
    const long gb = (g + QBLOCK - 1) / QBLOCK;
    int lo, hi;
    if (x < gb) {
        lo = (int)x * QBLOCK;
        hi = lo + QBLOCK < g ? lo + QBLOCK : g;
    } else if (a > g && x == gb) {
        lo = g;
        hi = a;
    } else {
        lo = a + (int)(x - gb - (a > g)) * QBLOCK;
        hi = lo + QBLOCK;
    }
    hi = hi < p->seq_q ? hi : p->seq_q;
    *i0 = lo;
    *rows = hi - lo;
}

/* local, sparse: P over each row's own intervals, 0 elsewhere. */
static attn_status masked_weights(void *state, float *out)
{
    eff_state *s = state;
    const attn_problem *p = &s->p;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k;
    const size_t rows = (size_t)p->batch * p->heads * nq;
    attn_span sp[ATTN_MAX_SPANS];
    for (size_t row = 0; row < rows; row++) {
        const size_t bh = row / (size_t)nq;
        const int i = (int)(row % (size_t)nq), b = (int)(bh / (size_t)p->heads);
        const float *q = s->t.q + row * (size_t)dk, *k = s->t.k + bh * (size_t)nk * dk;
        float *w = out + row * (size_t)nk;
        memset(w, 0, (size_t)nk * sizeof(float));
        const int ns = attn_variant_spans(p, b, i, sp);
        float m = -INFINITY, l = 0;
        for (int x = 0; x < ns; x++)
            for (int j = sp[x].lo; j < sp[x].hi; j++) {
                float dot = 0;
                for (int c = 0; c < dk; c++)
                    dot += q[c] * k[(size_t)j * dk + c];
                w[j] = p->scale * dot;
                m = w[j] > m ? w[j] : m;
            }
        for (int x = 0; x < ns; x++)
            for (int j = sp[x].lo; j < sp[x].hi; j++)
                l += w[j] = expf(w[j] - m);
        for (int x = 0; x < ns; x++)
            for (int j = sp[x].lo; j < sp[x].hi; j++)
                w[j] /= l;
    }
    return ATTN_OK;
}

static void run_masked(eff_state *s)
{
    const attn_problem *p = &s->p;
    const long bh_n = (long)p->batch * p->heads;
    const long blocks = row_blocks(p);
    const long total = bh_n * blocks;
#ifdef _OPENMP
#pragma omp parallel for num_threads(s->threads) schedule(dynamic, 1)
#endif
    for (long x = 0; x < total; x++) {
        const int tid = attn_thread_id();
        int i0, rows;
        row_block(p, x % blocks, &i0, &rows);
        masked_block(s, (size_t)(x / blocks), i0, rows, s->scratch + (size_t)tid * s->per_thread,
                     s->spans + (size_t)tid * s->spans_per_thread);
    }
}

/* ---- linear, performer --------------------------------------------------- */

static inline float elu1(float x)
{
    return x > 0 ? x + 1.0f : expf(x);
}

/* Performer's feature exponents of `rows` rows of x (stride dk), in log2
 * units, into g [rows][m]: log2(e) (W x~ - |x~|^2 / 2) with x~ = x scale^(1/2). */
static void performer_exponents(const eff_state *s, const float *x, int rows, float *g)
{
    const attn_problem *p = &s->p;
    const int dk = p->d_k, m = p->var.features;
    const float a = (float)(LOG2E * sqrt((double)p->scale));
    const float h = (float)(0.5 * LOG2E * p->scale);
    s->k->qk(g, m, x, dk, s->wt, m, rows, m, dk);
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
static void exp2_rows(const eff_state *s, float *g, int rows, int m, const float *sub, float *tmp)
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
        s->k->exp2(gr, tmp, m);
    }
}

/* phi of `rows` query rows of x into f [rows][nf]. Performer: each row minus
 * its own max exponent (it cancels in the ratio, as does 1/sqrt(m)). */
static void phi_queries(const eff_state *s, const float *x, int rows, float *f, float *tmp)
{
    const attn_problem *p = &s->p;
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
static void phi_keys(const eff_state *s, const float *x, int n, float *f, float *tmp)
{
    const attn_problem *p = &s->p;
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
static void add_prefix(const eff_state *s, const float *fk, const float *v, int j0, int j1,
                       float *sc, float *zc, double *sd, double *zd)
{
    const int nf = (int)n_features(&s->p), dv = s->p.d_v;
    const size_t nsv = (size_t)nf * dv;
    for (int c0 = j0; c0 < j1; c0 += KCHUNK) {
        const int n = j1 - c0 < KCHUNK ? j1 - c0 : KCHUNK;
        memset(sc, 0, nsv * sizeof(float));
        memset(zc, 0, (size_t)nf * sizeof(float));
        s->k->pv(sc, dv, fk + (size_t)c0 * nf, nf, v + (size_t)c0 * dv, dv, s->ones, nf, n, dv);
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

static void kernel_head(eff_state *s, size_t bh, float *fs, double *ds)
{
    const attn_problem *p = &s->p;
    const attn_kernels *kn = s->k;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const int nf = (int)n_features(p), b = (int)(bh / (size_t)p->heads);
    const size_t nsv = (size_t)nf * dv;
    const float *q = s->t.q + bh * (size_t)nq * dk;
    const float *k = s->t.k + bh * (size_t)nk * dk, *v = s->t.v + bh * (size_t)nk * dv;
    float *o = s->t.o + bh * (size_t)nq * dv;
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
        kn->qk(ob, dv, fq, nf, sf, dv, rows, dv, nf);
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
            kn->qk(at, QBLOCK, fk + (size_t)e0 * nf, nf, fqt, QBLOCK, np, rows, nf);
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
                kn->pv(ob, dv, at, QBLOCK, vd, dv, s->ones, rows, np, dv);
            } else {
                /* A NaN or Inf in V: each row over its own visible keys. */
                for (int r = 0; r < rows; r++) {
                    const int n = attn_visible_end(p, b, i0 + r) - e0;
                    kn->pv(ob + (size_t)r * dv, dv, at + r, QBLOCK, vd, dv, s->ones, 1,
                           n < 0 ? 0 : n > np ? np : n, dv);
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

/* ---- linformer ----------------------------------------------------------- */

static void linformer_head(eff_state *s, size_t bh, float *fs, double *ds)
{
    const attn_problem *p = &s->p;
    const attn_kernels *kn = s->k;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v, np = p->var.proj;
    const int b = (int)(bh / (size_t)p->heads);
    const int valid = p->kv_len ? p->kv_len[b] : nk;
    const float *q = s->t.q + bh * (size_t)nq * dk;
    const float *k = s->t.k + bh * (size_t)nk * dk, *v = s->t.v + bh * (size_t)nk * dv;
    float *o = s->t.o + bh * (size_t)nq * dv;
    const size_t nkp = (size_t)np * dk, nvp = (size_t)np * dv;
    float *kc = fs, *vc = kc + nkp, *kpt = vc + nvp, *vpf = kpt + nkp, *sc = vpf + nvp;
    double *kd = ds, *vd = kd + nkp;

    memset(kd, 0, nkp * sizeof(double));
    memset(vd, 0, nvp * sizeof(double));
    for (int j0 = 0; j0 < valid; j0 += KCHUNK) {
        const int n = valid - j0 < KCHUNK ? valid - j0 : KCHUNK;
        memset(kc, 0, nkp * sizeof(float));
        memset(vc, 0, nvp * sizeof(float));
        kn->pv(kc, dk, s->et + (size_t)j0 * np, np, k + (size_t)j0 * dk, dk, s->ones, np, n, dk);
        kn->pv(vc, dv, s->ft + (size_t)j0 * np, np, v + (size_t)j0 * dv, dv, s->ones, np, n, dv);
        for (size_t e = 0; e < nkp; e++)
            kd[e] += kc[e];
        for (size_t e = 0; e < nvp; e++)
            vd[e] += vc[e];
    }
    /* K'^T scaled into log2 units for the softmax kernel, and V'. */
    const double ls = p->scale * LOG2E;
    for (int t = 0; t < np; t++)
        for (int c = 0; c < dk; c++)
            kpt[(size_t)c * np + t] = (float)(ls * kd[(size_t)t * dk + c]);
    for (size_t e = 0; e < nvp; e++)
        vpf[e] = (float)vd[e];
    for (int i0 = 0; i0 < nq; i0 += QBLOCK) {
        const int rows = nq - i0 < QBLOCK ? nq - i0 : QBLOCK;
        kn->qk(sc, np, q + (size_t)i0 * dk, dk, kpt, np, rows, np, dk);
        kn->softmax_rows(sc, np, rows, np, NULL);
        kn->qk(o + (size_t)i0 * dv, dv, sc, np, vpf, dv, rows, dv, np);
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
#ifdef _OPENMP
#pragma omp parallel for num_threads(s->threads) schedule(dynamic, 1)
#endif
    for (long bh = 0; bh < bh_n; bh++) {
        const int tid = attn_thread_id();
        float *f = s->scratch + (size_t)tid * s->per_thread;
        double *d = s->dscratch + (size_t)tid * s->per_thread_d;
        if (p->kind == ATTN_KIND_LINFORMER)
            linformer_head(s, (size_t)bh, f, d);
        else
            kernel_head(s, (size_t)bh, f, d);
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
    .weights = masked_weights,
    EFF_COMMON,
};

const attn_backend attn_backend_sparse = {
    .name = "sparse",
    .summary = "Longformer/BigBird: window + global tokens + random key blocks",
    .caps = ATTN_CAP_CAUSAL | ATTN_CAP_PADDING | ATTN_CAP_CROSS | ATTN_CAP_DV,
    .kind = ATTN_KIND_SPARSE,
    .weights = masked_weights,
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

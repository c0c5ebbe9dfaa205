/* local and sparse: exact softmax over each row's visible key intervals
 * (window, global tokens, random blocks, merged). A block of QBLOCK rows
 * scores only the union of its rows' intervals, packed (K^T, V), as one
 * GEMM; each row is masked to its own intervals and softmaxed; P V is one
 * more GEMM. O(N (w + g + r bs) d). Threads: OpenMP over (batch, head,
 * row block). Grouped K/V heads (--kv-heads) are read in place by each
 * query head of the group. */
#include <math.h>
#include <string.h>

#include "efficient.h"

typedef struct masked_state {
    attn_host h;
    attn_scratch x;             /* floats only */
    attn_span *spans;           /* [threads][spans_per_thread] */
    size_t spans_per_thread;
} masked_state;

/* Keys a block of QBLOCK rows can see at most: the union of their windows
 * for local; every key for sparse (a global query row sees them all). */
static size_t masked_cap(const attn_problem *p)
{
    const size_t nk = (size_t)p->seq_kv;
    if (p->kind == ATTN_KIND_LOCAL) {
        const size_t w = QBLOCK + (size_t)p->mods.left + (size_t)p->mods.right + 1;
        return w < nk ? w : nk;
    }
    return nk;
}

/* Intervals one row can have (variant.h: attn_variant_spans). */
static size_t spans_per_row(const attn_problem *p)
{
    return p->kind == ATTN_KIND_SPARSE ? (size_t)p->var.random_blocks + 2 : 1;
}

/* Per thread: the scores [QBLOCK][cap], K^T [dk][cap] and V [cap][dv] of
 * the packed union (cap padded by 32 for the row stride). */
static size_t scratch_floats(const attn_problem *p)
{
    return (masked_cap(p) + 32) * (QBLOCK + (size_t)p->d_k) + masked_cap(p) * (size_t)p->d_v;
}

static size_t masked_workspace(const attn_problem *p, const attn_config *cfg)
{
    return attn_host_workspace(sizeof(masked_state), p) +
           attn_scratch_bytes(cfg->threads, scratch_floats(p), 0) +
           (size_t)cfg->threads * QBLOCK * spans_per_row(p) * sizeof(attn_span);
}

static void masked_release(void *state)
{
    masked_state *s = state;
    if (s) {
        attn_scratch_free(&s->x, s->h.alloc);
        attn_free(s->h.alloc, s->spans);
    }
    attn_host_destroy(s);
}

static attn_status masked_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    masked_state *s;
    attn_status st = attn_host_create(sizeof(*s), p, cfg, (void **)&s);
    if (st != ATTN_OK)
        return st;
    s->spans_per_thread = QBLOCK * spans_per_row(p);
    s->spans = attn_scratch_alloc(&s->x, cfg->alloc, cfg->threads, scratch_floats(p), 0)
                   ? attn_alloc(cfg->alloc, (size_t)cfg->threads * s->spans_per_thread *
                                                sizeof(attn_span))
                   : NULL;
    if (!s->spans) {
        masked_release(s);
        return ATTN_ENOMEM;
    }
    *state = s;
    return ATTN_OK;
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
static void masked_block(const masked_state *s, size_t bh, int i0, int rows, float *fs,
                         attn_span *all)
{
    const attn_problem *p = &s->h.p;
    const attn_kernels *kn = s->h.k;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const int b = (int)(bh / (size_t)p->heads);
    const size_t cap = masked_cap(p) + 32;
    float *sc = fs, *kt = sc + QBLOCK * cap, *vp = kt + (size_t)dk * cap;
    const float *q = s->h.t.q + (bh * nq + i0) * (size_t)dk;
    const size_t g = attn_kv_head_of(p, bh);
    const float *k = s->h.t.k + g * nk * dk, *v = s->h.t.v + g * nk * dv;
    float *o = s->h.t.o + (bh * nq + i0) * (size_t)dv;
    attn_span row[ATTN_MAX_SPANS], rng[ATTN_MAX_SPANS];

    int n = 0;
    for (int r = 0; r < rows; r++)
        n += attn_variant_spans(p, b, i0 + r, all + n);
    const int nu = attn_spans_merge(all, n);
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
    kn->qk(sc, ld, q, dk, kt, ld, rows, nkeys, dk, 0);
    const float ls = (float)(p->scale * ATTN_LOG2E);
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
    kn->qk(o, dv, sc, ld, vp, dv, rows, dv, nkeys, 0);
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
                   &one, 1, rng[y].hi - rng[y].lo, dv, 0);
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
    masked_state *s = state;
    const attn_problem *p = &s->h.p;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k;
    const size_t rows = (size_t)p->batch * p->heads * nq;
    attn_span sp[ATTN_MAX_SPANS];
    for (size_t row = 0; row < rows; row++) {
        const size_t bh = row / (size_t)nq;
        const int i = (int)(row % (size_t)nq), b = (int)(bh / (size_t)p->heads);
        const float *q = s->h.t.q + row * (size_t)dk;
        const float *k = s->h.t.k + attn_kv_head_of(p, bh) * (size_t)nk * dk;
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

static attn_status masked_run(void *state)
{
    masked_state *s = state;
    const attn_problem *p = &s->h.p;
    const long bh_n = (long)p->batch * p->heads;
    const long blocks = row_blocks(p);
    const long total = bh_n * blocks;
#ifdef _OPENMP
#pragma omp parallel for num_threads(s->h.threads) schedule(dynamic, 1)
#endif
    for (long x = 0; x < total; x++) {
        const int tid = attn_thread_id();
        int i0, rows;
        row_block(p, x % blocks, &i0, &rows);
        masked_block(s, (size_t)(x / blocks), i0, rows, s->x.f + (size_t)tid * s->x.nf,
                     s->spans + (size_t)tid * s->spans_per_thread);
    }
    return ATTN_OK;
}

#define MASKED_VERBS                                                                \
    .supports = attn_efficient_supports, .prepare = masked_prepare,                  \
    .bind = attn_host_bind, .run = masked_run, .read = attn_host_read,               \
    .release = masked_release, .workspace = masked_workspace, .weights = masked_weights

const attn_backend attn_backend_local = {
    .name    = "local",
    .summary = "sliding-window attention (--window), exact softmax over the window only",
    .kind    = ATTN_KIND_LOCAL,
    .mods    = ATTN_MOD_WINDOW,
    MASKED_VERBS,
};

const attn_backend attn_backend_sparse = {
    .name    = "sparse",
    .summary = "Longformer/BigBird: window + global tokens + random key blocks",
    .kind    = ATTN_KIND_SPARSE,
    .mods    = ATTN_MOD_WINDOW,
    MASKED_VERBS,
};

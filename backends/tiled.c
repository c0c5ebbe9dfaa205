/* tiled: fused attention in the FlashAttention manner. For each (batch, K/V
 * head, block of Br queries), the keys are visited in blocks of Bc: a score
 * tile S = Q_blk.K_blk^T, an online-softmax step (running max m and sum l
 * per query, the accumulator rescaled by alpha when m grows), O_blk += P.V_blk,
 * and a division by l at the end. The N x N score matrix never exists: a
 * thread holds Q_blk^T, one Bc x Br score tile, the Br x dv accumulator and
 * per-query statistics, whatever the sequence length.
 *
 * Grouped K/V heads: the G = H/Hkv query heads that share a K/V head are one
 * work item, their queries side by side as the columns of one tile (G x Br
 * of them; Br = 64/G by default, so a tile stays 64 columns wide), so each
 * K/V tile is loaded once for the whole group. In decoding (Nq = 1) that is
 * what fills the tile at all: its columns are the group's heads.
 *
 * Split-KV (flash-decoding): when there are few work items, as in decoding
 * with a small batch, each block's keys are cut into chunks computed as
 * separate items; each leaves its unnormalized O, m and l, and a merge adds
 * them exactly: m = max m_s, l = sum l_s 2^(m_s - m), O = sum O_s 2^(m_s - m) / l.
 *
 * The inner pieces are the kernels of kernels/ (C, AVX2, AVX-512, picked at
 * run time). Causal masks and padding cut the key loop short: blocks wholly
 * past a query block's last visible key are never computed, and only blocks
 * that straddle a boundary pay for a visibility mask. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host.h"
#include "tiled.h"

#define ALIGN 64

/* Split-KV, chosen from the problem alone: unsplit when there are at least
 * SPLIT_ITEMS work items, else enough chunks to reach that many, each of at
 * least SPLIT_MIN_KEYS keys. A fixed target rather than a multiple of the
 * thread count, so that the chunks, and the output, are the same for any
 * thread count; 32 items keep up to 16 threads busy. */
#define SPLIT_ITEMS 32
#define SPLIT_MIN_KEYS 512

/* Tiles of at most this many columns (decoding: Nq x G of them) take Q.K^T
 * as dot products along d (qk_rows) rather than the outer product of qk,
 * whose 16 query lanes they would leave mostly empty. */
#define ROWS_MAX 8

static atomic_int planted;

void attn_tiled_plant(int bug)
{
    atomic_store(&planted, bug);
}

typedef struct tiled_plan {
    int br, bc;          /* queries of each head per block, keys per tile */
    int group;           /* G: query heads per K/V head, one work item together */
    int cols;            /* G * br: the columns of a tile */
    int brp;             /* cols rounded up to 16: the stride of the packed tiles */
    int splits;          /* key chunks per block; 1: unsplit */
    int chunk;           /* keys per chunk, a multiple of bc */
    long blocks;         /* B * Hkv * ceil(Nq / br) */
    size_t part_floats;  /* one (block, chunk)'s partial result: m, l [brp], O [cols][dv] */
    size_t thread_bytes; /* one thread's scratch, a multiple of ALIGN */
} tiled_plan;

typedef struct tiled_state {
    attn_host h;
    tiled_plan plan;
    float qscale;                 /* scale * log2(e): scores come out in log2 units */
    unsigned char *scratch;       /* [threads][plan.thread_bytes] */
    float *parts;                 /* [blocks][splits][part_floats] when split */
} tiled_state;

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

/* Per-thread scratch, in this order: Q^T [dk][brp], S^T [bc][brp],
 * the accumulator [cols][dv], Q's rows [ROWS_MAX][dk] for qk_rows,
 * m, l, alpha [brp] floats, end [brp] ints. */
static size_t qt_bytes(const attn_problem *p, const tiled_plan *t)
{
    return round_up((size_t)p->d_k * t->brp * sizeof(float), ALIGN);
}

static size_t st_bytes(const tiled_plan *t)
{
    return round_up((size_t)t->bc * t->brp * sizeof(float), ALIGN);
}

static size_t acc_bytes(const attn_problem *p, const tiled_plan *t)
{
    return round_up((size_t)t->cols * p->d_v * sizeof(float), ALIGN);
}

static size_t qr_bytes(const attn_problem *p)
{
    return round_up((size_t)ROWS_MAX * p->d_k * sizeof(float), ALIGN);
}

static size_t vec_bytes(const tiled_plan *t)
{
    return round_up((size_t)t->brp * sizeof(float), ALIGN);
}

static long l1d_bytes(void)
{
    const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    return l1 > 0 ? l1 : 32 * 1024;
}

static int auto_splits(long blocks, int seq_kv)
{
    if (blocks >= SPLIT_ITEMS)
        return 1;
    const long want = (SPLIT_ITEMS + blocks - 1) / blocks, most = seq_kv / SPLIT_MIN_KEYS;
    const long n = want < most ? want : most;
    return n > 1 ? (int)n : 1;
}

/* Tile sizes, unless the configuration sets them: 64 columns (one 64-lane
 * register tile of the AVX-512 Q.K^T kernel), that is Br = 64/G queries of
 * each of the G heads of a group (at least 1); Bc keys a multiple of 48
 * (whole 6-row register tiles and whole 16-lane vectors) such that the
 * score tile and the K and V rows it touches fit in half of L1, at least
 * 48. Measured on a 48 KiB-L1 core, Br x Bc from 48 to 128 x 32 to 192 were
 * all within the run-to-run noise of each other (see README); 64 x 48 is
 * among the best. Neither they nor the chunks depend on the thread count,
 * so neither does the output. */
static tiled_plan tiled_make_plan(const attn_problem *p, const attn_config *cfg)
{
    tiled_plan t;
    t.group = attn_group(p);
    t.br = cfg->tile_q > 0 ? cfg->tile_q : (64 / t.group > 1 ? 64 / t.group : 1);
    t.br = t.br < p->seq_q ? t.br : p->seq_q > 0 ? p->seq_q : 1;
    t.cols = t.group * t.br;
    if (cfg->tile_kv > 0) {
        t.bc = cfg->tile_kv;
    } else {
        const long per_key = (long)(t.cols + p->d_k + p->d_v) * (long)sizeof(float);
        const long bc = l1d_bytes() / 2 / per_key / 48 * 48;
        t.bc = bc < 48 ? 48 : bc > 192 ? 192 : (int)bc;
    }
    t.brp = (int)round_up((size_t)t.cols, 16);
    t.blocks = (long)p->batch * attn_kv_heads(p) * ((p->seq_q + t.br - 1) / t.br);
    t.splits = cfg->splits > 0 ? cfg->splits : auto_splits(t.blocks, p->seq_kv);
    /* Chunks of whole key tiles; with more chunks than tiles the last ones
     * are empty and merge as nothing. */
    const long per = ((long)p->seq_kv + t.splits - 1) / t.splits;
    t.chunk = (int)round_up((size_t)(per > 0 ? per : 1), (size_t)t.bc);
    t.part_floats = t.splits > 1 ? round_up(2 * (size_t)t.brp + (size_t)t.cols * p->d_v, 16) : 0;
    t.thread_bytes = qt_bytes(p, &t) + st_bytes(&t) + acc_bytes(p, &t) + qr_bytes(p) +
                     4 * vec_bytes(&t);
    return t;
}

int attn_tiled_auto_splits(const attn_problem *p, int tile_q, int tile_kv)
{
    const attn_config cfg = { .threads = 1, .tile_q = tile_q, .tile_kv = tile_kv };
    return tiled_make_plan(p, &cfg).splits;
}

static size_t parts_bytes(const tiled_plan *t)
{
    return t->splits > 1 ? (size_t)t->blocks * t->splits * t->part_floats * sizeof(float) : 0;
}

static size_t tiled_workspace(const attn_problem *p, const attn_config *cfg)
{
    const tiled_plan t = tiled_make_plan(p, cfg);
    return attn_host_workspace(sizeof(tiled_state), p) + (size_t)cfg->threads * t.thread_bytes +
           parts_bytes(&t);
}

static attn_status tiled_supports(const attn_problem *p, const attn_config *cfg, char *why,
                                  size_t len)
{
    (void)p;
    return attn_host_supports_isa("tiled", cfg, why, len);
}

static void tiled_release(void *state)
{
    tiled_state *s = state;
    if (s) {
        attn_free(s->h.alloc, s->parts);
        attn_free(s->h.alloc, s->scratch);
    }
    attn_host_destroy(s);
}

static attn_status tiled_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    if ((cfg->tile_q < 0 || cfg->tile_kv < 0) ||
        (cfg->tile_q > 4096 || cfg->tile_kv > 4096) || cfg->splits < 0)
        return ATTN_EINVAL;
    tiled_state *s;
    attn_status st = attn_host_create(sizeof(*s), p, cfg, (void **)&s);
    if (st != ATTN_OK)
        return st;
    s->plan = tiled_make_plan(p, cfg);
    s->qscale = (float)((double)p->scale * ATTN_LOG2E);
    s->scratch = attn_alloc(cfg->alloc, (size_t)cfg->threads * s->plan.thread_bytes);
    if (s->scratch && s->plan.splits > 1)
        s->parts = attn_alloc(cfg->alloc, parts_bytes(&s->plan));
    if (!s->scratch || (s->plan.splits > 1 && !s->parts)) {
        tiled_release(s);
        return ATTN_ENOMEM;
    }
    *state = s;
    return ATTN_OK;
}

typedef struct scratch {
    float *qt, *st, *acc, *qr, *m, *l, *alpha;
    int *end;
} scratch;

static scratch thread_scratch(const tiled_state *s, int tid)
{
    const tiled_plan *t = &s->plan;
    unsigned char *at = s->scratch + (size_t)tid * t->thread_bytes;
    scratch w;
    w.qt = (float *)at;
    at += qt_bytes(&s->h.p, t);
    w.st = (float *)at;
    at += st_bytes(t);
    w.acc = (float *)at;
    at += acc_bytes(&s->h.p, t);
    w.qr = (float *)at;
    at += qr_bytes(&s->h.p);
    w.m = (float *)at;
    w.l = (float *)(at + vec_bytes(t));
    w.alpha = (float *)(at + 2 * vec_bytes(t));
    w.end = (int *)(at + 3 * vec_bytes(t));
    return w;
}

/* A block: batch item b, K/V head g, queries [i0, i0 + nq) of each of the
 * group's heads. Column c of its tiles is query i0 + c % nq of the group's
 * head c / nq. */
typedef struct block {
    int b, g, i0, nq;
} block;

static block block_of(const tiled_state *s, long item)
{
    const attn_problem *p = &s->h.p;
    const long nqb = (p->seq_q + s->plan.br - 1) / s->plan.br;
    /* The last query blocks of a head first: under a causal mask they are
     * the longest, so handing them out first (dynamic, one at a time)
     * leaves the short ones to fill in at the end. */
    const long qb = nqb - 1 - item % nqb, r = item / nqb;
    block k;
    k.b = (int)(r / attn_kv_heads(p));
    k.g = (int)(r % attn_kv_heads(p));
    k.i0 = (int)(qb * s->plan.br);
    k.nq = p->seq_q - k.i0 < s->plan.br ? p->seq_q - k.i0 : s->plan.br;
    return k;
}

/* The query row of column c: its offset in Q (rows of dk) and O (rows of dv). */
static size_t column_row(const attn_problem *p, const block *k, int c)
{
    const int h = k->g * attn_group(p) + c / k->nq;
    return ((size_t)k->b * p->heads + h) * p->seq_q + (size_t)(k->i0 + c % k->nq);
}

/* The next tile's K and V rows towards L2 while this one is computed:
 * decoding reads each row once, and the hardware prefetchers alone leave
 * that stream well below the memory bandwidth (kernels_avx512.c has the
 * numbers, with its own prefetch further ahead). In prefill the rows are in L2 already and this costs one
 * instruction per 64 bytes of a tile used by many queries. */
static void prefetch_rows(const float *k, const float *v, int n, int dk, int dv)
{
    const char *a = (const char *)k, *b = (const char *)v;
    const size_t kb = (size_t)n * dk * sizeof(float), vb = (size_t)n * dv * sizeof(float);
    for (size_t x = 0; x < kb; x += 64)
        __builtin_prefetch(a + x, 0, 1);
    for (size_t x = 0; x < vb; x += 64)
        __builtin_prefetch(b + x, 0, 1);
}

/* Keys [j_lo, j_hi) of block k into the thread's accumulator w->acc [cols][dv]
 * (unnormalized) and statistics w->m, w->l (log2 units). */
static void tiled_keys(const tiled_state *s, const scratch *w, const block *k, int j_lo,
                       int j_hi)
{
    const attn_problem *p = &s->h.p;
    const tiled_plan *t = &s->plan;
    const attn_kernels *kn = s->h.k;
    const int dk = p->d_k, dv = p->d_v, brp = t->brp, nc = t->group * k->nq;
    size_t g = (size_t)k->b * attn_kv_heads(p) + (size_t)k->g;
    if (atomic_load_explicit(&planted, memory_order_relaxed) == ATTN_TILED_PLANT_WRONG_KV_HEAD)
        g = (size_t)k->b * attn_kv_heads(p) + (size_t)(k->g + 1) % (size_t)attn_kv_heads(p);
    const float *kk = s->h.t.k + g * p->seq_kv * dk;
    const float *vv = s->h.t.v + g * p->seq_kv * dv;

    const bool rows = nc <= ROWS_MAX;
    for (int c = 0; c < nc; c++) {
        const float *q = s->h.t.q + column_row(p, k, c) * dk;
        if (rows)
            for (int x = 0; x < dk; x++)
                w->qr[(size_t)c * dk + x] = q[x] * s->qscale;
        else
            for (int x = 0; x < dk; x++)
                w->qt[(size_t)x * brp + c] = q[x] * s->qscale;
        w->m[c] = -INFINITY;
        w->l[c] = 0.0f;
    }
    memset(w->acc, 0, (size_t)nc * dv * sizeof(float));

    /* Visible keys are a prefix per query, growing with i: keys below
     * lo are visible to every query of the block, none at or past hi is. */
    const int lo = attn_visible_end(p, k->b, k->i0);
    int hi = attn_visible_end(p, k->b, k->i0 + k->nq - 1);
    hi = hi < j_hi ? hi : j_hi;

    for (int j0 = j_lo; j0 < hi; j0 += t->bc) {
        const int n = hi - j0 < t->bc ? hi - j0 : t->bc;
        prefetch_rows(kk + (size_t)(j0 + n) * dk, vv + (size_t)(j0 + n) * dv,
                          hi - j0 - n < t->bc ? hi - j0 - n : t->bc, dk, dv);
        const int *end = NULL;
        if (j0 + n > lo) {
            for (int c = 0; c < nc; c++)
                w->end[c] = attn_visible_end(p, k->b, k->i0 + c % k->nq) - j0;
            end = w->end;
        }
        if (rows)
            kn->qk_rows(w->st, brp, kk + (size_t)j0 * dk, dk, w->qr, dk, n, nc, dk);
        else
            kn->qk(w->st, brp, kk + (size_t)j0 * dk, dk, w->qt, brp, n, nc, dk);
        kn->softmax(w->st, brp, n, nc, end, w->m, w->l, w->alpha);
        const float *vb = vv + (size_t)j0 * dv;
        if (!end || attn_rows_finite(vb, (size_t)n, (size_t)dv)) {
            kn->pv(w->acc, dv, w->st, brp, vb, dv, w->alpha, nc, n, dv);
        } else {
            /* A NaN or Inf in V: each column over its own visible keys. */
            for (int c = 0; c < nc; c++) {
                const int e = end[c] < 0 ? 0 : end[c] > n ? n : end[c];
                kn->pv(w->acc + (size_t)c * dv, dv, w->st + c, brp, vb, dv, w->alpha + c, 1, e,
                       dv);
            }
        }
    }
}

/* The whole of block k: its rows of O, normalized. */
static void tiled_block(const tiled_state *s, const scratch *w, const block *k)
{
    const attn_problem *p = &s->h.p;
    const int dv = p->d_v, nc = s->plan.group * k->nq;
    tiled_keys(s, w, k, 0, p->seq_kv);
    for (int c = 0; c < nc; c++) {
        /* l == 0: the query saw no key; its row is 0. */
        const float inv = w->l[c] > 0.0f ? 1.0f / w->l[c] : 0.0f;
        const float *a = w->acc + (size_t)c * dv;
        float *row = s->h.t.o + column_row(p, k, c) * dv;
        for (int x = 0; x < dv; x++)
            row[x] = a[x] * inv;
    }
}

/* Chunk x of block `item`: its partial result, m and l beside O unnormalized. */
static void tiled_chunk(const tiled_state *s, const scratch *w, long item, int x)
{
    const tiled_plan *t = &s->plan;
    const attn_problem *p = &s->h.p;
    const block k = block_of(s, item);
    const int nc = t->group * k.nq;
    const int j_lo = x * t->chunk;
    float *part = s->parts + ((size_t)item * t->splits + x) * t->part_floats;
    if (j_lo >= p->seq_kv) {
        for (int c = 0; c < nc; c++) {
            part[c] = -INFINITY;
            part[t->brp + c] = 0.0f;
        }
        memset(part + 2 * t->brp, 0, (size_t)nc * p->d_v * sizeof(float));
        return;
    }
    tiled_keys(s, w, &k, j_lo, j_lo + t->chunk);
    memcpy(part, w->m, (size_t)nc * sizeof(float));
    memcpy(part + t->brp, w->l, (size_t)nc * sizeof(float));
    memcpy(part + 2 * t->brp, w->acc, (size_t)nc * p->d_v * sizeof(float));
}

/* Block `item` from its chunks, in chunk order:
 *   m = max m_s, l = sum l_s 2^(m_s - m), O = sum O_s 2^(m_s - m) / l.
 * A chunk that saw no key (m_s = -inf) adds nothing; a NaN anywhere in a
 * chunk's statistics reaches the row, as it would unsplit. */
static void tiled_merge(const tiled_state *s, long item)
{
    const tiled_plan *t = &s->plan;
    const attn_problem *p = &s->h.p;
    const block k = block_of(s, item);
    const int nc = t->group * k.nq, dv = p->d_v;
    const float *parts = s->parts + (size_t)item * t->splits * t->part_floats;
    const bool bug =
        atomic_load_explicit(&planted, memory_order_relaxed) == ATTN_TILED_PLANT_MERGE_NO_RESCALE;
    for (int c = 0; c < nc; c++) {
        float m = -INFINITY;
        for (int x = 0; x < t->splits; x++) {
            const float mx = parts[(size_t)x * t->part_floats + c];
            m = mx > m ? mx : m;
        }
        float *row = s->h.t.o + column_row(p, &k, c) * dv;
        memset(row, 0, (size_t)dv * sizeof(float));
        float l = 0.0f;
        for (int x = 0; x < t->splits; x++) {
            const float *part = parts + (size_t)x * t->part_floats;
            if (part[c] == -INFINITY)
                continue;
            const float a = bug ? 1.0f : exp2f(part[c] - m);
            l += part[t->brp + c] * a;
            const float *o = part + 2 * t->brp + (size_t)c * dv;
            for (int e = 0; e < dv; e++)
                row[e] += o[e] * a;
        }
        /* l == 0: the query saw no key; its row stays 0. */
        const float inv = l > 0.0f || isnan(l) ? 1.0f / l : 0.0f;
        for (int e = 0; e < dv; e++)
            row[e] *= inv;
    }
}

/* Work items are blocks (batch, K/V head, query block), or with split-KV
 * (block, chunk) pairs and then one merge per block. Each is computed
 * whole by one thread in a fixed order, over chunks fixed by the problem,
 * so the output is bitwise the same for any thread count. */
static attn_status tiled_run(void *state)
{
    tiled_state *s = state;
    const tiled_plan *t = &s->plan;
    const long items = t->blocks, splits = t->splits;

#ifdef _OPENMP
#pragma omp parallel num_threads(s->h.threads)
#endif
    {
        const scratch w = thread_scratch(s, attn_thread_id());
        if (splits == 1) {
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (long it = 0; it < items; it++) {
                const block k = block_of(s, it);
                tiled_block(s, &w, &k);
            }
        } else {
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (long it = 0; it < items * splits; it++)
                tiled_chunk(s, &w, it / splits, (int)(it % splits));
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (long it = 0; it < items; it++)
                tiled_merge(s, it);
        }
    }
    return ATTN_OK;
}

static const char *tiled_version(void)
{
    static char buf[64];
    snprintf(buf, sizeof(buf), "%s kernels", attn_isa_name(attn_kernels_best()->isa));
    return buf;
}

const attn_backend attn_backend_tiled = {
    .name      = "tiled",
    .summary   = "fused FlashAttention-style tiles, online softmax, SIMD kernels",
    .supports  = tiled_supports,
    .prepare   = tiled_prepare,
    .bind      = attn_host_bind,
    .run       = tiled_run,
    .read      = attn_host_read,
    .release   = tiled_release,
    .workspace = tiled_workspace,
    .version   = tiled_version,
};

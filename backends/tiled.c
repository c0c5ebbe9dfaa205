/* tiled: fused attention in the FlashAttention manner. For each (batch, head,
 * block of Br queries), the keys are visited in blocks of Bc: a score tile
 * S = Q_blk.K_blk^T, an online-softmax step (running max m and sum l per
 * query, the accumulator rescaled by alpha when m grows), O_blk += P.V_blk,
 * and a division by l at the end. The N x N score matrix never exists: a
 * thread holds Q_blk^T, one Bc x Br score tile and per-query statistics,
 * whatever the sequence length; O accumulates in place in the output.
 *
 * The inner pieces are the kernels of kernels/ (C, AVX2, AVX-512, picked at
 * run time). Causal masks and padding cut the key loop short: blocks wholly
 * past a query block's last visible key are never computed, and only blocks
 * that straddle a boundary pay for a visibility mask. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

#define ALIGN 64

typedef struct tiled_plan {
    int br, bc;          /* queries and keys per block */
    int brp;             /* br rounded up to 16: the stride of the packed tiles */
    size_t thread_bytes; /* one thread's scratch, a multiple of ALIGN */
} tiled_plan;

typedef struct tiled_state {
    attn_host h;
    tiled_plan plan;
    float qscale;                 /* scale * log2(e): scores come out in log2 units */
    unsigned char *scratch;       /* [threads][plan.thread_bytes] */
} tiled_state;

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

/* Per-thread scratch, in this order: Q^T [dk][brp], S^T [bc][brp],
 * m, l, alpha [brp] floats, end [brp] ints. */
static size_t qt_bytes(const attn_problem *p, const tiled_plan *t)
{
    return round_up((size_t)p->d_k * t->brp * sizeof(float), ALIGN);
}

static size_t st_bytes(const tiled_plan *t)
{
    return round_up((size_t)t->bc * t->brp * sizeof(float), ALIGN);
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

/* Tile sizes, unless the configuration sets them: Br = 64 queries (one
 * 64-lane register tile of the AVX-512 Q.K^T kernel); Bc keys a multiple of
 * 48 (whole 6-row register tiles and whole 16-lane vectors) such that the
 * score tile and the K and V rows it touches fit in half of L1, at least 48.
 * Measured on a 48 KiB-L1 core, Br x Bc from 48 to 128 x 32 to 192 were all
 * within the run-to-run noise of each other (see README); 64 x 48 is among
 * the best. They never depend on the thread count, so neither does the
 * output. */
static tiled_plan tiled_make_plan(const attn_problem *p, const attn_config *cfg)
{
    tiled_plan t;
    t.br = cfg->tile_q > 0 ? cfg->tile_q : 64;
    if (cfg->tile_kv > 0) {
        t.bc = cfg->tile_kv;
    } else {
        const long per_key = (long)(t.br + p->d_k + p->d_v) * (long)sizeof(float);
        const long bc = l1d_bytes() / 2 / per_key / 48 * 48;
        t.bc = bc < 48 ? 48 : bc > 192 ? 192 : (int)bc;
    }
    t.brp = (int)round_up((size_t)t.br, 16);
    t.thread_bytes = qt_bytes(p, &t) + st_bytes(&t) + 4 * vec_bytes(&t);
    return t;
}

static size_t tiled_workspace(const attn_problem *p, const attn_config *cfg)
{
    const tiled_plan t = tiled_make_plan(p, cfg);
    return attn_host_workspace(sizeof(tiled_state), p) + (size_t)cfg->threads * t.thread_bytes;
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
    if (s)
        attn_free(s->h.alloc, s->scratch);
    attn_host_destroy(s);
}

static attn_status tiled_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    if ((cfg->tile_q < 0 || cfg->tile_kv < 0) ||
        (cfg->tile_q > 4096 || cfg->tile_kv > 4096))
        return ATTN_EINVAL;
    tiled_state *s;
    attn_status st = attn_host_create(sizeof(*s), p, cfg, (void **)&s);
    if (st != ATTN_OK)
        return st;
    s->plan = tiled_make_plan(p, cfg);
    s->qscale = (float)((double)p->scale * ATTN_LOG2E);
    s->scratch = attn_alloc(cfg->alloc, (size_t)cfg->threads * s->plan.thread_bytes);
    if (!s->scratch) {
        tiled_release(s);
        return ATTN_ENOMEM;
    }
    *state = s;
    return ATTN_OK;
}

typedef struct scratch {
    float *qt, *st, *m, *l, *alpha;
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
    w.m = (float *)at;
    w.l = (float *)(at + vec_bytes(t));
    w.alpha = (float *)(at + 2 * vec_bytes(t));
    w.end = (int *)(at + 3 * vec_bytes(t));
    return w;
}

/* One (batch, head, query block): the whole of its rows of O. */
static void tiled_block(const tiled_state *s, const scratch *w, int b, int h, int i0)
{
    const attn_problem *p = &s->h.p;
    const tiled_plan *t = &s->plan;
    const attn_kernels *k = s->h.k;
    const int dk = p->d_k, dv = p->d_v, brp = t->brp;
    const int nq = p->seq_q - i0 < t->br ? p->seq_q - i0 : t->br;
    const size_t bh = (size_t)b * p->heads + h;
    const float *q = s->h.t.q + (bh * p->seq_q + i0) * dk;
    const float *kk = s->h.t.k + bh * p->seq_kv * dk;
    const float *vv = s->h.t.v + bh * p->seq_kv * dv;
    float *o = s->h.t.o + (bh * p->seq_q + i0) * dv;

    /* Visible keys are a prefix per query, growing with i: keys below
     * lo are visible to every query of the block, none at or past hi is. */
    const int lo = attn_visible_end(p, b, i0);
    const int hi = attn_visible_end(p, b, i0 + nq - 1);

    for (int i = 0; i < nq; i++) {
        for (int c = 0; c < dk; c++)
            w->qt[(size_t)c * brp + i] = q[(size_t)i * dk + c] * s->qscale;
        w->m[i] = -INFINITY;
        w->l[i] = 0.0f;
        memset(o + (size_t)i * dv, 0, (size_t)dv * sizeof(float));
    }

    for (int j0 = 0; j0 < hi; j0 += t->bc) {
        const int nk = hi - j0 < t->bc ? hi - j0 : t->bc;
        const int *end = NULL;
        if (j0 + nk > lo) {
            for (int i = 0; i < nq; i++)
                w->end[i] = attn_visible_end(p, b, i0 + i) - j0;
            end = w->end;
        }
        k->qk(w->st, brp, kk + (size_t)j0 * dk, dk, w->qt, brp, nk, nq, dk);
        k->softmax(w->st, brp, nk, nq, end, w->m, w->l, w->alpha);
        const float *vb = vv + (size_t)j0 * dv;
        if (!end || attn_rows_finite(vb, (size_t)nk, (size_t)dv)) {
            k->pv(o, dv, w->st, brp, vb, dv, w->alpha, nq, nk, dv);
        } else {
            /* A NaN or Inf in V: each row over its own visible keys. */
            for (int i = 0; i < nq; i++) {
                const int n = end[i] < 0 ? 0 : end[i] > nk ? nk : end[i];
                k->pv(o + (size_t)i * dv, dv, w->st + i, brp, vb, dv, w->alpha + i, 1, n, dv);
            }
        }
    }

    for (int i = 0; i < nq; i++) {
        /* l == 0: the query saw no key; its row stays 0. */
        const float inv = w->l[i] > 0.0f ? 1.0f / w->l[i] : 0.0f;
        float *row = o + (size_t)i * dv;
        for (int c = 0; c < dv; c++)
            row[c] *= inv;
    }
}

/* Work items are (batch, head, query block), head by head so that the two
 * threads share one head's K and V in the cache, and in each head the last
 * query blocks first: under a causal mask they are the longest, so handing
 * them out first (dynamic, one at a time) leaves the short ones to fill in
 * at the end. Every item is computed whole by one thread in a fixed order,
 * so the output is bitwise the same for any thread count. */
static attn_status tiled_run(void *state)
{
    tiled_state *s = state;
    const attn_problem *p = &s->h.p;
    const long nqb = (p->seq_q + s->plan.br - 1) / s->plan.br;
    const long bh = (long)p->batch * p->heads;
    const long items = nqb * bh;

#ifdef _OPENMP
#pragma omp parallel num_threads(s->h.threads)
#endif
    {
        const scratch w = thread_scratch(s, attn_thread_id());
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (long it = 0; it < items; it++) {
            const long qb = nqb - 1 - it % nqb;
            const long r = it / nqb;
            tiled_block(s, &w, (int)(r / p->heads), (int)(r % p->heads), (int)(qb * s->plan.br));
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

/* tiled's serving batches (backend.h): each item a batch of one on a view
 * of its own tokens (internal.h, tiled_layout) with its own plan, and all
 * the items' work in one schedule over the threads.
 *
 * The split-KV chunks are chosen for the batch as a whole, by work: keys
 * are cut into chunks such that a unit (a chunk of each block of a work
 * item: of its K/V heads when decoding takes them together, plan.c's
 * heads_per_item) is about 1/SERVE_UNITS of all the keys the batch's
 * query blocks visit (at least SPLIT_MIN_KEYS per ROWS_MAX columns), so a
 * long request is split across the threads as a long dense one is, while a
 * batch of many requests is not split at all (as a dense batch with as
 * many blocks is not). Work units (an item's work items, or their chunks)
 * are handed out dynamically, the items with the longest units first,
 * then the split blocks are merged. Every block is computed whole
 * by one thread in a fixed order over chunks fixed by the problem, so the
 * output is bitwise the same for any thread count. */
#include "tiled/internal.h"

#define SERVE_UNITS 64
#define SPLIT_MIN_KEYS 512

/* Item b as a batch of one, its own lengths. */
static attn_problem item_problem(const attn_problem *p, int b)
{
    attn_problem q = *p;
    q.batch = 1;
    q.seq_q = p->ragged->nq[b];
    q.seq_kv = p->ragged->nk[b];
    q.ragged = NULL;
    q.lens = NULL;
    q.kv_len = NULL;
    return q;
}

/* The bytes of the schedule's arrays (internal.h, tiled_serving). */
static size_t arrays_bytes(int batch)
{
    const size_t b = (size_t)batch;
    return b * sizeof(tiled_plan) + b * sizeof(int) + 2 * (b + 1) * sizeof(long) +
           b * sizeof(size_t);
}

/* The keys item b's query blocks visit, summed over them: its share of
 * the batch's work. */
static double item_keys(const attn_problem *p, const attn_config *cfg, int b, int *span)
{
    const attn_problem q = item_problem(p, b);
    const tiled_plan t = tiled_make_plan(&q, cfg, p->ragged->page, true);
    int lo, hi;
    tiled_key_span(&q, &lo, &hi);
    *span = hi - lo;
    return (double)t.blocks * *span;
}

/* Item b's plan, with the batch's split count (cfg->splits > 0: that for
 * every item): units of about 1/SERVE_UNITS of all the keys (total) the
 * batch visits, a unit being a chunk of each of a work item's K/V heads
 * (plan.heads). Its units' work into *unit_work, when given. */
static tiled_plan item_plan(const attn_problem *p, const attn_config *cfg, int b, double total,
                            double *unit_work)
{
    const attn_problem q = item_problem(p, b);
    int span;
    item_keys(p, cfg, b, &span);
    attn_config c = *cfg;
    if (cfg->splits <= 0) {
        const tiled_plan t = tiled_make_plan(&q, cfg, p->ragged->page, true);
        const int wide = (t.cols + ROWS_MAX - 1) / ROWS_MAX;
        double chunk = total / SERVE_UNITS / t.heads;
        chunk = chunk > (double)SPLIT_MIN_KEYS * wide ? chunk : (double)SPLIT_MIN_KEYS * wide;
        const long n = (long)((span + chunk - 1) / chunk);
        c.splits = n > 1 ? (int)n : 1;
    }
    const tiled_plan t = tiled_make_plan(&q, &c, p->ragged->page, true);
    if (unit_work)
        *unit_work = (double)span / t.splits * t.cols * t.sb * t.heads;
    return t;
}

static double batch_keys(const attn_problem *p, const attn_config *cfg)
{
    double total = 0;
    int span;
    for (int b = 0; b < p->batch; b++)
        total += item_keys(p, cfg, b, &span);
    return total;
}

static size_t item_parts(const tiled_plan *t)
{
    return t->splits > 1 ? (size_t)t->blocks * t->splits * t->part_floats : 0;
}

size_t tiled_serving_bytes(const attn_problem *p, const attn_config *cfg, size_t *thread,
                           size_t *parts)
{
    const double total = batch_keys(p, cfg);
    *thread = *parts = 0;
    for (int b = 0; b < p->batch; b++) {
        const tiled_plan t = item_plan(p, cfg, b, total, NULL);
        *thread = t.thread_bytes > *thread ? t.thread_bytes : *thread;
        *parts += item_parts(&t) * sizeof(float);
    }
    return arrays_bytes(p->batch);
}

attn_status tiled_serving_plan(tiled_state *s, const attn_config *cfg, size_t *parts)
{
    const attn_problem *p = &s->h.p;
    const int B = p->batch;
    unsigned char *a = attn_alloc(cfg->alloc, arrays_bytes(B));
    if (!a)
        return ATTN_ENOMEM;
    tiled_serving *w = &s->serve;
    /* The 8-byte fields first, the ints last: each aligned. */
    w->plans = (tiled_plan *)a;
    w->unit0 = (long *)(a + (size_t)B * sizeof(tiled_plan));
    w->merge0 = w->unit0 + B + 1;
    w->parts0 = (size_t *)(w->merge0 + B + 1);
    w->order = (int *)(w->parts0 + B);
    /* Each item's unit work, in merge0 (as doubles: free until below),
     * then the items with the longest units first, ties in item order (an
     * insertion sort: stable, and batches are small). */
    _Static_assert(sizeof(double) <= sizeof(long), "merge0 holds the work as doubles");
    double *work = (double *)w->merge0;
    const double total = batch_keys(p, cfg);
    for (int b = 0; b < B; b++) {
        w->plans[b] = item_plan(p, cfg, b, total, &work[b]);
        int at = b;
        while (at > 0 && work[w->order[at - 1]] < work[b]) {
            w->order[at] = w->order[at - 1];
            at--;
        }
        w->order[at] = b;
    }
    s->stride = 0;
    *parts = 0;
    w->unit0[0] = 0;
    for (int o = 0; o < B; o++) {
        const tiled_plan *t = &w->plans[w->order[o]];
        s->stride = t->thread_bytes > s->stride ? t->thread_bytes : s->stride;
        w->parts0[w->order[o]] = *parts / sizeof(float);
        *parts += item_parts(t) * sizeof(float);
        w->unit0[o + 1] = w->unit0[o] + t->items * t->splits;
    }
    w->merge0[0] = 0;
    for (int o = 0; o < B; o++) {
        const tiled_plan *t = &w->plans[w->order[o]];
        w->merge0[o + 1] = w->merge0[o] + (t->splits > 1 ? t->blocks : 0);
    }
    s->plan = w->plans[w->order[0]];
    return ATTN_OK;
}

/* The o-th item of the schedule holding unit x of the offsets `first`. */
static int find(const long *first, int n, long x)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (first[mid] <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The view of item b: its problem, plan, layout, tokens and partial
 * results. */
static void view(const tiled_state *s, int b, tiled_state *v)
{
    const attn_problem *p = &s->h.p;
    const attn_ragged *r = p->ragged;
    const attn_tensors *t = &s->h.t;
    const size_t H = (size_t)p->heads, hkv = (size_t)attn_kv_heads(p);
    const size_t dk = (size_t)p->d_k, dv = (size_t)p->d_v, vs = (size_t)attn_v_stride(p);
    *v = *s;
    v->h.p = item_problem(p, b);
    v->plan = s->serve.plans[b];
    const int pow2 = r->page > 0 && !(r->page & (r->page - 1));
    v->lay = (tiled_layout){ .qstep = (int)H, .kvstep = r->page ? 1 : (int)hkv, .page = r->page,
                             .shift = pow2 ? __builtin_ctz((unsigned)r->page) : -1,
                             .pages = r->page ? t->pages + r->k0[b] : NULL };
    const size_t q0 = (size_t)r->q0[b] * H;
    v->h.t.q = t->q ? t->q + q0 * dk : NULL;
    v->h.t.q16 = t->q16 ? t->q16 + q0 * dk : NULL;
    v->h.t.o = t->o + q0 * dv;
    v->h.t.lse = NULL;
    if (!r->page) {
        const size_t k0 = (size_t)r->k0[b] * hkv;
        v->h.t.k = t->k ? t->k + k0 * dk : NULL;
        v->h.t.v = t->v ? t->v + k0 * vs : NULL;
        v->h.t.k16 = t->k16 ? t->k16 + k0 * dk : NULL;
        v->h.t.v16 = t->v16 ? t->v16 + k0 * vs : NULL;
        v->h.t.kq = t->kq ? t->kq + k0 * attn_dtype_row_bytes(p->kv_dtype, dk) : NULL;
        v->h.t.vq = t->vq ? t->vq + k0 * attn_dtype_row_bytes(p->kv_dtype, vs) : NULL;
    }
    /* fp8's scales: one per item and K/V head. */
    const size_t sc0 = atomic_load_explicit(&tiled_planted, memory_order_relaxed) ==
                               ATTN_TILED_PLANT_SCALE_ITEM0
                           ? 0
                           : (size_t)b * hkv;
    v->h.t.kscale = t->kscale ? t->kscale + sc0 : NULL;
    v->h.t.vscale = t->vscale ? t->vscale + sc0 : NULL;
    v->parts = s->parts ? s->parts + s->serve.parts0[b] : NULL;
}

void tiled_serving_forward(const tiled_state *s)
{
    const tiled_serving *w = &s->serve;
    const int B = s->h.p.batch;
    const long units = w->unit0[B], merges = w->merge0[B];

#ifdef _OPENMP
#pragma omp parallel num_threads(s->h.threads)
#endif
    {
        const int tid = attn_thread_id();
        tiled_state v;
        scratch sc[SB_MAX];
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (long x = 0; x < units; x++) {
            const int o = find(w->unit0, B, x);
            view(s, w->order[o], &v);
            const long u = x - w->unit0[o];
            for (int i = 0; i < v.plan.sb * v.plan.heads; i++)
                sc[i] = tiled_thread_scratch(&v, tid, i);
            float *st = tiled_thread_st(&v, tid);
            unsigned char *tile = tiled_thread_tile(&v, tid);
            if (v.plan.splits == 1)
                tiled_item(&v, st, tile, sc, u);
            else
                tiled_chunk(&v, st, tile, sc, u / v.plan.splits, (int)(u % v.plan.splits));
        }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (long x = 0; x < merges; x++) {
            const int o = find(w->merge0, B, x);
            view(s, w->order[o], &v);
            tiled_merge(&v, x - w->merge0[o]);
        }
    }
}

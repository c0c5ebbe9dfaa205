/* tiled: fused attention in the FlashAttention manner. For each (batch, K/V
 * head, block of Br queries), the keys are visited in blocks of Bc: a score
 * tile S = Q_blk.K_blk^T, an online-softmax step (running max m and sum l
 * per query, the accumulator rescaled by alpha when m grows), O_blk += P.V_blk,
 * and a division by l at the end. The N x N score matrix never exists: a
 * thread holds one Bc x Br score tile and, for each of the SB query blocks
 * of its work item, Q_blk^T, the Br x dv accumulator and per-query
 * statistics, whatever the sequence length.
 *
 * Query blocks share each pass over K/V: a work item is SB consecutive
 * query blocks of one (batch, K/V head), and each K/V tile, once loaded,
 * serves all of them, so K and V stream from L3 or memory once per SB
 * blocks (see auto_sb).
 *
 * Grouped K/V heads: the G = H/Hkv query heads that share a K/V head are one
 * work item, their queries side by side as the columns of one tile (G x Br
 * of them; Br = 64/G by default, so a tile stays 64 columns wide), so each
 * K/V tile is loaded once for the whole group. In decoding (Nq = 1) that is
 * what fills the tile at all: its columns are the group's heads.
 *
 * Split-KV (flash-decoding): when there are few work items, as in decoding
 * with a small batch, the keys some query sees (all Nk of them, or a
 * window's span) are cut into chunks computed as separate items; each leaves its unnormalized O, m and l, and a merge adds
 * them exactly: m = max m_s, l = sum l_s 2^(m_s - m), O = sum O_s 2^(m_s - m) / l.
 *
 * The inner pieces are the kernels of kernels/ (C, AVX2, AVX-512, picked at
 * run time). Causal masks and padding cut the key loop short: blocks wholly
 * past a query block's last visible key are never computed, and only tiles
 * that straddle a boundary pay for a visibility mask, computed only as far
 * as the mask lets anything through (qk_cut, pv_cut).
 *
 * 16-bit storage (tiled_path): bf16 Q, K and V on a CPU with AVX512_BF16
 * run Q.K^T and P.V on bf16 dot products (two products per fp32 lane per
 * instruction), P rounded to bf16 before P.V as FlashAttention does, the
 * scores, the softmax and every sum in fp32. Decoding tiles (at most
 * ROWS_MAX columns, or any width when one query block covers a K/V head)
 * read 16-bit K and V in place, widened to fp32 in registers as they stream
 * by (qk_rows16, pv16), K for the outer product widened a register tile's
 * keys at a time, or for bf16 Q and K with AVX512_BF16 Q.K^T on the dot
 * products (qk_rows_bf16): half the bytes of fp32.
 * Otherwise (fp16, mixed types, or no AVX512_BF16) each K/V tile and each
 * block of Q is widened to fp32 once, exactly, and the fp32 kernels run on
 * it.
 *
 * Score modifiers (backend.h): a window is one more mask, and tiles wholly
 * left of a query block's window are never visited, as those past its
 * causal diagonal are not: time grows with the window, not with Nk. The
 * softcap and ALiBi change each score tile between Q.K^T and the softmax
 * (the mods kernel; with the window's left edge, which it sets to -inf and
 * tiled_unmask then zeroes exactly after the softmax); a sink joins each
 * row's sum when it is normalized; V read from K is V read with K's row
 * stride.
 *
 * The backward (--pass bwd, fwdbwd) is backward.c's; the forward before
 * it also leaves each row's log-sum-exp.
 *
 * Files: this one is the backend (work items, the merge, the sinks);
 * plan.c chooses the tiles, sb and the chunks and lays out each thread's
 * scratch; keys.c is the key loop; serving.c runs serving batches (ragged,
 * paged) on these pieces; backward.c the backward; runs.h hands out
 * split chunks in runs with stealing; internal.h what they share. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tiled/internal.h"

atomic_int tiled_planted;
atomic_bool tiled_counting;
atomic_long tiled_tiles_seen;
atomic_long tiled_lazy_kept, tiled_lazy_raised, tiled_lazy_redone;

void attn_tiled_plant(int bug)
{
    atomic_store(&tiled_planted, bug);
}

void attn_tiled_count_tiles(bool on)
{
    atomic_store(&tiled_tiles_seen, 0);
    atomic_store(&tiled_lazy_kept, 0);
    atomic_store(&tiled_lazy_raised, 0);
    atomic_store(&tiled_lazy_redone, 0);
    atomic_store(&tiled_counting, on);
}

long attn_tiled_tiles(void)
{
    return atomic_load(&tiled_tiles_seen);
}

atomic_bool tiled_lazy_off;

void attn_tiled_lazy(bool on)
{
    atomic_store(&tiled_lazy_off, !on);
}

static atomic_bool steal_off;

void attn_tiled_steal(bool on)
{
    atomic_store(&steal_off, !on);
}

atomic_int tiled_kbf16_mode;

void attn_tiled_kbf16(int mode)
{
    atomic_store(&tiled_kbf16_mode, mode < 0 ? -1 : mode > 0 ? 1 : 0);
}

atomic_int tiled_pv_bf16_mode;

void attn_tiled_pv_bf16(int mode)
{
    atomic_store(&tiled_pv_bf16_mode, mode < 0 ? -1 : mode > 0 ? 1 : 0);
}

atomic_int tiled_pf_keys_set;

void attn_tiled_pf_keys(int keys)
{
    atomic_store(&tiled_pf_keys_set, keys > 0 ? keys : 0);
}

void attn_tiled_lazy_tiles(long *kept, long *raised, long *redone)
{
    *kept = atomic_load(&tiled_lazy_kept);
    *raised = atomic_load(&tiled_lazy_raised);
    *redone = atomic_load(&tiled_lazy_redone);
}

/* The runs of a dense batch's equal chunks (runs.h): one per thread. */
static size_t runs_bytes(const tiled_plan *t, const attn_config *cfg)
{
    return t->splits > 1 && t->chunks_even && t->items * t->splits <= RUNS_MAX_ITEMS &&
                   !atomic_load(&steal_off)
               ? (size_t)cfg->threads * sizeof(tiled_run_slot)
               : 0;
}

static size_t tiled_workspace(const attn_problem *p, const attn_config *cfg)
{
    size_t thread, parts, arrays = 0;
    if (p->ragged) {
        arrays = tiled_serving_bytes(p, cfg, &thread, &parts);
    } else {
        const tiled_plan t = tiled_make_plan(p, cfg, 0, false);
        thread = t.thread_bytes;
        parts = tiled_parts_bytes(&t) + runs_bytes(&t, cfg);
    }
    return attn_host_workspace(sizeof(tiled_state), p) + (size_t)cfg->threads * thread + parts +
           arrays + tiled_bwd_bytes(p, cfg);
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
        tiled_bwd_free(s);
        attn_free(s->h.alloc, s->serve.plans);
        attn_free(s->h.alloc, s->runs);
        attn_free(s->h.alloc, s->parts);
        attn_free(s->h.alloc, s->scratch);
    }
    attn_host_destroy(s);
}

static attn_status tiled_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    if ((cfg->tile_q < 0 || cfg->tile_kv < 0) ||
        (cfg->tile_q > 4096 || cfg->tile_kv > 4096) || cfg->splits < 0 || cfg->tile_sb < 0 ||
        cfg->tile_sb > SB_MAX)
        return ATTN_EINVAL;
    tiled_state *s;
    attn_status st = attn_host_create(sizeof(*s), p, cfg, (void **)&s);
    if (st != ATTN_OK)
        return st;
    s->qscale = (float)((double)p->scale * ATTN_LOG2E);
    s->lay = (tiled_layout){ .qstep = 1, .kvstep = 1 };
    size_t parts = 0;
    if (p->ragged) {
        if (tiled_serving_plan(s, cfg, &parts) != ATTN_OK) {
            tiled_release(s);
            return ATTN_ENOMEM;
        }
    } else {
        s->plan = tiled_make_plan(p, cfg, 0, false);
        s->stride = s->plan.thread_bytes;
        parts = tiled_parts_bytes(&s->plan);
    }
    const size_t runs = p->ragged ? 0 : runs_bytes(&s->plan, cfg);
    s->scratch = attn_alloc(cfg->alloc, (size_t)cfg->threads * s->stride);
    if (s->scratch && parts)
        s->parts = attn_alloc(cfg->alloc, parts);
    if (s->scratch && runs)
        s->runs = attn_alloc(cfg->alloc, runs);
    if (!s->scratch || (parts && !s->parts) || (runs && !s->runs) ||
        tiled_bwd_alloc(s, cfg) != ATTN_OK) {
        tiled_release(s);
        return ATTN_ENOMEM;
    }
    *state = s;
    return ATTN_OK;
}

/* The blocks of work item `item`, into k[0..sb heads); returns how many
 * (the last item of a head may have fewer, the last head group too).
 * Unsplit, items are runs of sb consecutive query blocks of each of the
 * item's `heads` K/V heads; split, one query block of each (sb = 1). */
static int item_blocks(const tiled_state *s, long item, block *k)
{
    const attn_problem *p = &s->h.p;
    const tiled_plan *t = &s->plan;
    const int hkv = attn_kv_heads(p);
    const long nqb = (p->seq_q + t->br - 1) / t->br, nit = (nqb + t->sb - 1) / t->sb;
    /* The last query blocks of a head first: under a causal mask they are
     * the longest, so handing them out first (dynamic, one at a time)
     * leaves the short ones to fill in at the end. */
    const long r = item / nit, first = (nit - 1 - item % nit) * t->sb;
    const int g0 = (int)(r % t->head_groups) * t->heads;
    const int g1 = g0 + t->heads < hkv ? g0 + t->heads : hkv;
    int n = 0;
    for (int g = g0; g < g1; g++)
        for (long qb = first; qb < first + t->sb && qb < nqb; qb++, n++) {
            k[n].b = (int)(r / t->head_groups);
            k[n].g = g;
            k[n].i0 = (int)(qb * t->br);
            k[n].nq = p->seq_q - k[n].i0 < t->br ? p->seq_q - k[n].i0 : t->br;
        }
    return n;
}

/* Blocks are numbered (b, g, query block) in that order: where a split
 * block's partial results lie, and the merges' units. */
static long block_index(const tiled_state *s, const block *k)
{
    const attn_problem *p = &s->h.p;
    const long nqb = (p->seq_q + s->plan.br - 1) / s->plan.br;
    return ((long)k->b * attn_kv_heads(p) + k->g) * nqb + k->i0 / s->plan.br;
}

static block block_at(const tiled_state *s, long index)
{
    const attn_problem *p = &s->h.p;
    const int br = s->plan.br;
    const long nqb = (p->seq_q + br - 1) / br, r = index / nqb;
    block k = { (int)(r / attn_kv_heads(p)), (int)(r % attn_kv_heads(p)),
                (int)(index % nqb * br), 0 };
    k.nq = p->seq_q - k.i0 < br ? p->seq_q - k.i0 : br;
    return k;
}

/* The sink's term of column c's sum, with its running max m (log2 units):
 * 2^(sigma log2(e) - m); 0 without sinks. */
static float sink_term(const tiled_state *s, const block *k, int c, float m)
{
    const attn_problem *p = &s->h.p;
    if (!p->mods.sinks)
        return 0.0f;
    const int h = k->g * attn_group(p) + c / k->nq;
    return exp2f((float)(s->h.t.sinks[h] * ATTN_LOG2E) - m);
}

/* Row `row`'s L = ln sum_j e^{s_j} from its statistics in log2 units (the
 * backward's; -inf for a row that saw no key). */
static void put_lse(const tiled_state *s, size_t row, float m, float l)
{
    if (s->h.t.lse)
        s->h.t.lse[row] = l > 0.0f ? (m + log2f(l)) * (float)(1.0 / ATTN_LOG2E) : -INFINITY;
}

/* The whole of work item `item`: its blocks' rows of O, normalized. */
void tiled_item(const tiled_state *s, float *st, unsigned char *tile, const scratch *w,
                long item)
{
    const attn_problem *p = &s->h.p;
    const int dv = p->d_v;
    block k[SB_MAX] = { { 0, 0, 0, 0 } };
    const int nb = item_blocks(s, item, k);
    tiled_keys(s, st, tile, w, k, nb, 0, p->seq_kv);
    for (int u = 0; u < nb; u++)
        for (int c = 0; c < s->plan.group * k[u].nq; c++) {
            /* l == 0: the query saw no key; its row is 0 (with a sink too:
             * its term is 2^(sigma - -inf) = inf). */
            const float sink = sink_term(s, &k[u], c, w[u].m[c]);
            const float l = w[u].l[c] + sink;
            const float inv = l > 0.0f ? 1.0f / l : 0.0f;
            const float *a = w[u].acc + (size_t)c * dv;
            float *row = s->h.t.o + column_row(s, &k[u], c) * dv;
            const float bug = atomic_load_explicit(&tiled_planted, memory_order_relaxed) ==
                                      ATTN_TILED_PLANT_SINK_VALUE && l > 0.0f ? sink : 0.0f;
            for (int x = 0; x < dv; x++)
                row[x] = (a[x] + bug) * inv;
            put_lse(s, column_row(s, &k[u], c), w[u].m[c], l);
        }
}

/* Chunk x of work item `item`: each of its blocks' partial result, m and
 * l beside O unnormalized. */
void tiled_chunk(const tiled_state *s, float *st, unsigned char *tile, const scratch *w,
                 long item, int x)
{
    const tiled_plan *t = &s->plan;
    const attn_problem *p = &s->h.p;
    block k[SB_MAX] = { { 0, 0, 0, 0 } };
    const int nb = item_blocks(s, item, k);
    const int j_lo = t->key_lo + x * t->chunk;
    const bool none = j_lo >= p->seq_kv;
    if (!none)
        tiled_keys(s, st, tile, w, k, nb, j_lo, j_lo + t->chunk);
    for (int u = 0; u < nb; u++) {
        const int nc = t->group * k[u].nq;
        float *part = s->parts + ((size_t)block_index(s, &k[u]) * t->splits + x) * t->part_floats;
        if (none) {
            for (int c = 0; c < nc; c++) {
                part[c] = -INFINITY;
                part[t->brp + c] = 0.0f;
            }
            memset(part + 2 * t->brp, 0, (size_t)nc * p->d_v * sizeof(float));
            continue;
        }
        memcpy(part, w[u].m, (size_t)nc * sizeof(float));
        memcpy(part + t->brp, w[u].l, (size_t)nc * sizeof(float));
        memcpy(part + 2 * t->brp, w[u].acc, (size_t)nc * p->d_v * sizeof(float));
    }
}

/* The block numbered `index` from its chunks, in chunk order:
 *   m = max m_s, l = sum l_s 2^(m_s - m), O = sum O_s 2^(m_s - m) / l.
 * A chunk that saw no key (m_s = -inf) adds nothing; a NaN anywhere in a
 * chunk's statistics reaches the row, as it would unsplit. */
void tiled_merge(const tiled_state *s, long index)
{
    const tiled_plan *t = &s->plan;
    const attn_problem *p = &s->h.p;
    const block k = block_at(s, index);
    const int nc = t->group * k.nq, dv = p->d_v;
    const float *parts = s->parts + (size_t)index * t->splits * t->part_floats;
    const bool bug =
        atomic_load_explicit(&tiled_planted, memory_order_relaxed) == ATTN_TILED_PLANT_MERGE_NO_RESCALE;
    for (int c = 0; c < nc; c++) {
        float m = -INFINITY;
        for (int x = 0; x < t->splits; x++) {
            const float mx = parts[(size_t)x * t->part_floats + c];
            m = mx > m ? mx : m;
        }
        float *row = s->h.t.o + column_row(s, &k, c) * dv;
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
        l += sink_term(s, &k, c, m);
        const float inv = l > 0.0f || isnan(l) ? 1.0f / l : 0.0f;
        for (int e = 0; e < dv; e++)
            row[e] *= inv;
        put_lse(s, column_row(s, &k, c), m, l);
    }
}

/* Work items are runs of sb query blocks of one (batch, K/V head) (or of
 * several heads: plan.heads), or with split-KV (item, chunk) pairs and
 * then one merge per block. Each block is computed whole by one thread in
 * a fixed order, over chunks fixed by the problem, so the output is
 * bitwise the same for any thread count. */
static void forward_view(const tiled_state *s)
{
    const tiled_plan *t = &s->plan;
    const long items = t->items, splits = t->splits, blocks = t->blocks;
    if (s->runs)
        tiled_runs_start(s->runs, s->h.threads, items * splits);

#ifdef _OPENMP
#pragma omp parallel num_threads(s->h.threads)
#endif
    {
        const int tid = attn_thread_id();
        float *st = tiled_thread_st(s, tid);
        unsigned char *tile = tiled_thread_tile(s, tid);
        scratch w[SB_MAX];
        for (int u = 0; u < t->sb * t->heads; u++)
            w[u] = tiled_thread_scratch(s, tid, u);
        if (splits == 1) {
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (long it = 0; it < items; it++)
                tiled_item(s, st, tile, w, it);
        } else {
            if (s->runs) {
                /* Equal chunks in runs, each thread's in key order: the
                 * rows the kernels prefetch past a chunk's end are the
                 * next chunk's first, its own. Handed out one at a time,
                 * each chunk began with rows no one had asked for. On the
                 * 2-core Intel Xeon (Skylake-SP), H = 32, Hkv = 1, d = 128,
                 * Nk = 32K, B = 1, 2 threads, 5 interleaved rounds:
                 * 3.12-3.28 ms against 3.38-3.58 (Hkv = 8: 14.88-15.37
                 * against 15.17-15.47). A thread done with its run takes
                 * the last chunks of the run with the most left (runs.h).
                 * On the 2-core Zen 4 EPYC (H = 32, d = 128, B = 1, 2
                 * threads, bench_ab --vs-steal off, 15 alternating rounds,
                 * the same bits), the runs alone took: Hkv = 8, Nq = 4,
                 * bf16 K/V, Nk = 16K 1.036x the time; Nq = 1, Nk = 32K,
                 * fp32 1.049x, bf16 1.012x, bf16 Q and K/V 1.088x; Hkv = 1
                 * fp32 1.014x, at B = 8 0.997x. */
                for (long it; (it = tiled_runs_next(s->runs, tid, s->h.threads)) >= 0;)
                    tiled_chunk(s, st, tile, w, it / splits, (int)(it % splits));
#ifdef _OPENMP
#pragma omp barrier
#endif
            } else if (t->chunks_even) {   /* the runs alone (attn_tiled_steal) */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
                for (long it = 0; it < items * splits; it++)
                    tiled_chunk(s, st, tile, w, it / splits, (int)(it % splits));
            } else {
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
                for (long it = 0; it < items * splits; it++)
                    tiled_chunk(s, st, tile, w, it / splits, (int)(it % splits));
            }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (long it = 0; it < blocks; it++)
                tiled_merge(s, it);
        }
    }
}

static void tiled_forward(void *state)
{
    const tiled_state *s = state;
    if (s->serve.plans)
        tiled_serving_forward(s);
    else
        forward_view(s);
}

static attn_status tiled_run(void *state)
{
    return attn_host_run_passes(state, tiled_forward, tiled_backward);
}

static attn_status tiled_bind(void *state, const attn_tensors *t)
{
    return attn_host_bind_passes(state, t, tiled_forward);
}

static const char *tiled_version(void)
{
    static char buf[64];
    const attn_kernels *k = attn_kernels_best();
    snprintf(buf, sizeof(buf), "%s kernels%s", attn_isa_name(k->isa),
             k->bf16_dot ? " + bf16 dot products" : "");
    return buf;
}

const attn_backend attn_backend_tiled = {
    .name      = "tiled",
    .summary   = "fused FlashAttention-style tiles, online softmax, SIMD kernels",
    .dtypes    = ATTN_DTYPE_BIT(ATTN_DTYPE_BF16) | ATTN_DTYPE_BIT(ATTN_DTYPE_FP16) |
                 ATTN_DTYPES_QUANTIZED,
    .mods      = ATTN_MOD_ALL,
    .passes    = ATTN_PASS_BIT(ATTN_PASS_BWD) | ATTN_PASS_BIT(ATTN_PASS_FWDBWD),
    .layouts   = ATTN_LAYOUT_RAGGED | ATTN_LAYOUT_PAGED,
    .supports  = tiled_supports,
    .prepare   = tiled_prepare,
    .bind      = tiled_bind,
    .run       = tiled_run,
    .read      = attn_host_read,
    .read_grads = attn_host_read_grads,
    .release   = tiled_release,
    .workspace = tiled_workspace,
    .version   = tiled_version,
};

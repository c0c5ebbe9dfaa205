/* tiled's key loop: the keys of one work item's query blocks, a tile at a
 * time, through the kernels of kernels/ (Q.K^T, the score modifiers, the
 * online softmax, P.V), with the masks' cuts; each tile for every K/V head
 * of the item in turn where decoding takes several (plan.c,
 * heads_per_item). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/half.h"
#include "tiled/internal.h"

/* Decoding tiles of dot products (plan.dots: the narrow ones, mostly
 * memory-bound), and every decoding tile where the kernels do not prefetch
 * themselves: the next tile's K and V rows towards L2 while this one is
 * computed. Decoding reads each row once, and the hardware prefetchers
 * alone leave that stream well below the memory bandwidth
 * (kernels/rows_of.h, PF_KEYS, has the numbers, with the kernels' own
 * prefetch further ahead).
 * Wider decoding tiles are compute-bound, and there a burst of a whole
 * tile's prefetches stalls the arithmetic it should hide behind: the few
 * misses a core keeps in flight fill, and the rest wait in line before any
 * FMA behind them (internal.h, DOTS_MAX, has the numbers); the AVX-512
 * and AVX2 kernels prefetch those tiles a row at a time instead (their pf,
 * and attn_kernels.prefetches). Prefill tiles go without: a whole tile's
 * prefetches at once (1536 at 192 keys, d = 64) held 1.6% of the samples
 * of a causal N = 1K run on one thread, and without them whole runs were
 * as fast or faster (B = 1, H = 8, 2 threads, medians of interleaved
 * processes: N = 1K causal d = 64 185 against 176 GFLOP/s over 4 each;
 * N = 32K d = 64 201 against 196 over 2 each), the hardware prefetchers
 * following the K/V stream well enough when a tile serves sb x cols
 * queries. */
static void prefetch_rows(const void *k, const void *v, int n, size_t krow, size_t vrow,
                          size_t kstride, size_t vstride)
{
    const char *a = k, *b = v;
    if (kstride == krow && vstride == vrow) {
        const size_t kb = (size_t)n * krow, vb = (size_t)n * vrow;
        for (size_t x = 0; x < kb; x += 64)
            __builtin_prefetch(a + x, 0, 1);
        for (size_t x = 0; x < vb; x += 64)
            __builtin_prefetch(b + x, 0, 1);
        return;
    }
    for (int r = 0; r < n; r++) {
        for (size_t x = 0; x < krow; x += 64)
            __builtin_prefetch(a + (size_t)r * kstride + x, 0, 1);
        for (size_t x = 0; x < vrow; x += 64)
            __builtin_prefetch(b + (size_t)r * vstride + x, 0, 1);
    }
}

/* Key j's page in the block table, and its slot in the page. */
static int page_of(const tiled_layout *l, int j)
{
    return l->shift >= 0 ? j >> l->shift : j / l->page;
}

static int slot_of(const tiled_layout *l, int j)
{
    return l->shift >= 0 ? j & (l->page - 1) : j % l->page;
}

/* The row of K (rows dk apart; of V, attn_v_stride apart) holding key j of
 * K/V head g: g, the flat b Hkv + g of a dense batch, or the K/V head of
 * the item a view holds (internal.h, tiled_layout). */
static size_t key_row(const tiled_state *s, size_t g, int j)
{
    const tiled_layout *l = &s->lay;
    if (l->pages) {
        int e = page_of(l, j);
        if (atomic_load_explicit(&tiled_planted, memory_order_relaxed) ==
                ATTN_TILED_PLANT_PAGE_NEXT &&
            (e + 1) * l->page < s->h.p.seq_kv)
            e++;
        return ((size_t)l->pages[e] * (size_t)attn_kv_heads(&s->h.p) + g) * (size_t)l->page +
               (size_t)slot_of(l, j);
    }
    if (l->kvstep > 1)
        return (size_t)j * (size_t)l->kvstep + g;
    return g * (size_t)s->h.p.seq_kv + (size_t)j;
}

/* Keys from j0 on that lie at one step in memory: to the end of j0's page. */
static int key_run(const tiled_state *s, int j0)
{
    return s->lay.pages ? s->lay.page - slot_of(&s->lay, j0) : 1 << 30;
}

/* The kernels' prefetch distance (their pf, kernels.h) for the rows of
 * keys from j0 on of K/V head g, whose first row is r0, in rows (times
 * the bytes per row of K or V: their pf): to the rows of the keys
 * plan.pf_keys fp32 rows ahead (attn_kernels.pf_keys; twice as many
 * 16-bit rows, four times quantized; over plan.heads for heads read
 * together), rows at one stride apart: in place that many strides; in
 * pages, the rows of the keys that many on rounded up to whole tiles,
 * found through the block table, and none when no key is that far on.
 * One distance serves all the tile's rows where the tile that far on lies
 * in one page as this one does (tiles are whole divisors of the page,
 * plan.c): otherwise the keys are rounded up to whole pages, the same
 * slots of a later page.
 * Whole pages alone put the kernels a page ahead in pages longer than
 * the distance, more than L1 holds: Llama-3.1-8B, bf16, Nk = 32K, pages of
 * 256 (then in tiles of 64: 128 keys ahead rather than 256), 2 threads, medians
 * of 6 interleaved runs on the 2-core Zen 3 EPYC: B = 1 10.96 ms against
 * 11.56, B = 4 31.1 against 33.1, B = 16 116.8 against 124.1. For 16-bit
 * rows, as many rows ahead as fp32's (half the bytes) or four times (twice
 * the bytes) instead of twice: H = 32, d = 128, Nq = 1, 2 threads of the
 * Skylake-SP Xeon, the two in one process (11 to 21 rounds, ratio of the
 * medians): 0.97-0.99x and 1.08x at Hkv = 8, B = 1, Nk = 32K; the first
 * 0.98x at Hkv = 32 and at B = 8 (Nk = 16K), inside this VM's noise. */
static ptrdiff_t pf_rows(const tiled_state *s, size_t g, int j0, size_t r0)
{
    const attn_problem *p = &s->h.p;
    const bool kvq = attn_dtype_quantized(p->kv_dtype);
    const long rows_ahead = (long)s->plan.pf_keys *
                            (kvq ? 4 : p->kv_dtype == ATTN_DTYPE_FP32 ? 1 : 2);
    /* With plan.heads K/V heads read tile by tile together, memory streams
     * that many rows per key: the same distance in bytes is that many
     * times fewer keys. */
    const long keys = (rows_ahead + s->plan.heads - 1) / s->plan.heads;
    if (!keys)
        return 0;
    const long bc = s->plan.bc, P = s->lay.page;
    /* Heads read together off one stride (the packed layout) read each
     * head's tile before the next head's: the distance is whole tiles, as
     * in pages, or the rows a head's tile reads last are fetched while it
     * reads them. Packed, a ragged decode batch (Llama-3.1-8B, bf16, B = 32,
     * Nk 1K..32K, 2 threads, the 2-core Zen 4 EPYC, 3 interleaved runs)
     * took 74-78 ms prefetching one tile ahead against 118-121 at 12 keys
     * (96 16-bit rows over 8 heads), and 76-93 at 64 keys. */
    if (!s->lay.pages)
        return (ptrdiff_t)((s->plan.heads > 1 ? (keys + bc - 1) / bc * bc : keys) *
                           (long)s->lay.kvstep);
    long ahead = (keys + bc - 1) / bc * bc;
    if (page_of(&s->lay, (int)(j0 + ahead)) != page_of(&s->lay, (int)(j0 + ahead + bc - 1)))
        ahead = ((long)page_of(&s->lay, (int)(keys + P - 1))) * P;
    if (j0 + ahead >= p->seq_kv)
        return 0;
    return (ptrdiff_t)key_row(s, g, j0 + (int)ahead) - (ptrdiff_t)r0;
}

/* Prefetches of keys [j, j + n) (below top) of K/V head g, page by page
 * through the block table: base pointers and bytes per row of K and V (vw
 * 0: V read from K). */
static void prefetch_keys(const tiled_state *s, size_t g, int j, int n, int top,
                          const unsigned char *kbase, const unsigned char *vbase, size_t kw,
                          size_t vw)
{
    n = top - j < n ? top - j : n;
    const size_t step = (size_t)s->lay.kvstep;
    while (n > 0) {
        const int run = key_run(s, j) < n ? key_run(s, j) : n;
        const size_t r = key_row(s, g, j);
        prefetch_rows(kbase + r * kw, vbase + r * (vw ? vw : kw), run, kw, vw, kw * step,
                      vw * step);
        j += run;
        n -= run;
    }
}

/* Decoding's V rows of keys [j, j + n) of K/V head g (bytes per row vw)
 * towards L1, page by page, requested as Q.K^T starts on the tile, so
 * that P.V after it finds them there (where the kernel table says
 * fetch_v: AVX2's). P.V's own prefetches, a tile ahead, still start them
 * from memory, but L1 does not hold the tiles of K and V in hand and the
 * ones ahead (four times 24 KB at 48 keys of d = 128 fp32, against 32 KB
 * on Zen 3): this brings back what was pushed out to L2. On the 2-core
 * Zen 3 EPYC (H = 32, d = 128, Nk = 32K, 2 threads, medians of 5
 * interleaved runs of the builds without and with it): Hkv = 8 fp32 13.2
 * -> 12.5 ms, bf16 7.24 -> 7.14, fp16 8.48 -> 8.21; Hkv = 32 fp32 66.5 ->
 * 58.3, bf16 35.0 -> 34.1; B = 8 fp32 111 -> 106, bf16 63.3 -> 59.8;
 * Llama-3.1-8B fp32 in pages of 16 15.3 -> 15.1, the ragged batch of 32
 * (Nk 1K-32K, 6 runs) packed 283 -> 287, in pages of 16 243 -> 233.
 * Quantized caches go without: q8_0, bound by its arithmetic, took 7.3 ms
 * with it against 6.7. Neither prefetching V two tiles ahead instead of
 * one nor K moved these figures. Not kept (6 interleaved runs, Hkv = 8):
 * the next tile's K requested the same way as P.V starts, fp32 13.9 ms
 * against 13.6, bf16 9.3 against 7.9; tiles of 16, 24 or 32 keys instead
 * of 48 (inside the noise); and with this, the kernels' own prefetches
 * left to the hardware prefetchers, fp32 19.5 against 15.2, bf16 9.5
 * against 8.0 (perf puts much of qk_rows' time on its prefetches: a core
 * keeps only so many misses in flight, and the stream is bound by that).
 * It walks the pages as prefetch_keys does rather than call it with the
 * hint as an argument: that took fp32 13.9 ms against 12.9 and bf16 7.9
 * against 7.4 (7 and 6 interleaved runs), 14.2 against 13.9 with both
 * forced inline. */
static void fetch_v(const tiled_state *s, size_t g, int j, int n, const unsigned char *vbase,
                    size_t vw)
{
    const size_t stride = vw * (size_t)s->lay.kvstep;
    while (n > 0) {
        const int run = key_run(s, j) < n ? key_run(s, j) : n;
        const unsigned char *v = vbase + key_row(s, g, j) * vw;
        for (int r = 0; r < run; r++, v += stride)
            for (size_t b = 0; b < vw; b += 64)
                __builtin_prefetch(v + b, 0, 3);
        j += run;
        n -= run;
    }
}

/* The rows of the AVX-512 kernels' register tiles: a tile on the causal
 * diagonal is computed in runs of that many keys (Q.K^T) or queries (P.V). */
#define TILE_ROWS 6

/* The first 16-column strip (as a column index) holding a column that sees
 * key j (end[c] > j); nc if none does. */
static int first_strip(const int *end, int nc, int j)
{
    for (int c = 0; c < nc; c++)
        if (end[c] > j)
            return c / 16 * 16;
    return nc;
}

/* One tile's operands as the kernels of the plan's path take them. */
typedef struct tile_ops {
    const float *kb, *vb;         /* K, V rows in fp32 (PATH_FP32, PATH_WIDEN) */
    const uint16_t *kh, *vh;      /* K rows in bf16 (PATH_BF16); K, V rows (PATH_ROWS16,
                                     whose K is also kb, widened, under widen_k) */
    ptrdiff_t kbs, vbs;           /* elements between the rows of kb, vb: in place, the
                                     layout's; converted into the tile, dk and dv */
    ptrdiff_t khs, vhs;           /* the same of kh, vh (always in place) */
    ptrdiff_t pfk, pfv;           /* the kernels' prefetch distances in K and V (pf_rows) */
    const uint32_t *vp, *pp;      /* V and P in pairs of keys (PATH_BF16) */
    const uint8_t *kq, *vq;       /* K, V rows of a quantized cache (PATH_QUANT) */
    size_t krow, vrow;            /* bytes between their rows (the layout's) */
    attn_kvq fmt;
    float ksc, vsc;               /* fp8's scales */
} tile_ops;

/* Q.K^T of keys [j, j + rows) against columns [c0, c0 + cols) of block w.
 * The kernels prefetch (pf) only where K and V stream once (plan.stream):
 * in prefill too, the next tile of the head was 1-7% slower at 7 of 8
 * shapes (H = 8, N = 1K and 4K, d = 64 and 128, causal both, 2 threads of
 * the 2-core Skylake-SP Xeon, medians of 5 interleaved processes), though
 * one 64-query block alone against K/V from L3 gained 5-9%. */
static void qk_part(const tiled_state *s, float *st, const tile_ops *x, const scratch *w, int j,
                    int c0, int rows, int cols)
{
    const int dk = s->h.p.d_k, brp = s->plan.brp;
    if (s->plan.path == PATH_BF16)
        s->h.k->qk_bf16(st + (size_t)j * brp + c0, brp, x->kh + (size_t)j * x->khs, x->khs,
                        (const uint32_t *)w->qt + c0, brp, rows, cols, dk, s->qscale);
    else if (s->plan.kbf16)
        s->h.k->qk_kbf16(st + (size_t)j * brp + c0, brp, x->kh + (size_t)j * x->khs, x->khs,
                         w->qt + c0, brp, rows, cols, dk, s->plan.stream ? x->pfk : 0);
    else
        s->h.k->qk(st + (size_t)j * brp + c0, brp, x->kb + (size_t)j * x->kbs, x->kbs,
                   w->qt + c0, brp, rows, cols, dk,
                   s->plan.stream && s->plan.path == PATH_FP32 ? x->pfk : 0);
}

/* The lazy rescale (kernels.h, qk_exp; FlashAttention-4 raises its max the
 * same way): while a block's scores stay within LAZY_MAX (log2 units) of
 * its running max m, a tile's weights are exp2(s - m) against m as it
 * stands, made in qk's epilogue from the scores in registers, and neither
 * m nor the accumulator is rescaled (alpha = 1). The weights are then at
 * most 2^LAZY_MAX and l sums them; O / l is the same softmax. A column
 * whose max rises further, by up to LAZY_FIX, is raised in place: m to its
 * max, its weights, l and (through alpha, in P.V) its accumulator times
 * 2^(m_old - m_new), so that its weights are at most 1 again (until
 * then they are at most 2^LAZY_FIX, and their sum finite). A tile with a
 * column past that (or a NaN or infinite score) is computed again through
 * qk and softmax, which raise m. A block's first tile always takes qk and
 * softmax, and after each tile that does, lazy_ready says whether the
 * next may take this way: scores that jump past LAZY_FIX (--fill extreme:
 * logits to ~1e4) keep every tile off it, where each tile computed twice
 * would cost half a tile again. Returns whether the tile's weights were
 * kept. Measured on the 2-core Zen 5 EPYC (one thread, a 64 x 192 tile in
 * L1/L2, qk and softmax or qk_exp, then pv, 41 alternating rounds,
 * medians): 0.96x the time at d = 64, 0.97-1.00x at d = 128; whole runs
 * in docs/backends.md. */
#define LAZY_MAX 8.0f
#define LAZY_FIX 100.0f
#define LAZY_ALPHA 0x1p-100f   /* 2^-LAZY_FIX */
#define LAZY_NEAR 0x1p-20f     /* l >= 1 + 2^-20: a key within 20 of the max */

/* After a tile through the softmax: whether the block's next tile may take
 * the lazy rescale. After its first tile (fresh: every m was -inf), when
 * every column saw another key within 20 (log2 units) of its max there:
 * logits that far apart (--fill extreme) never do, and scores that close
 * rarely jump by LAZY_FIX. After a later one, when it raised no column's
 * max by more than LAZY_FIX (alpha = 2^(m_old - m_new)). A wrong guess
 * costs the one tile computed twice. The planted bug takes the lazy
 * rescale from a block's second tile on, whatever the scores did. */
static bool lazy_ready(const scratch *w, int nc, bool fresh)
{
    if (atomic_load_explicit(&tiled_planted, memory_order_relaxed) ==
        ATTN_TILED_PLANT_LAZY_UNCHECKED)
        return true;
    bool ok = true;
    for (int c = 0; c < nc; c++)   /* false for a NaN alpha or l */
        ok &= fresh ? w->l[c] >= 1.0f + LAZY_NEAR && w->m[c] > -INFINITY
                    : w->alpha[c] >= LAZY_ALPHA;
    return ok;
}

static bool qk_lazy(const tiled_state *s, float *st, const tile_ops *x, const scratch *w, int n,
                    int nc, bool count)
{
    for (int c = 0; c < nc; c++) {
        if (w->m[c] == -INFINITY)
            return false;
        w->mx[c] = -INFINITY;
        w->sum[c] = 0.0f;
    }
    const int brp = s->plan.brp;
    s->h.k->qk_exp(st, brp, x->kb, x->kbs, w->qt, brp, n, nc, s->h.p.d_k, w->m, w->mx, w->sum);
    const bool unchecked = atomic_load_explicit(&tiled_planted, memory_order_relaxed) ==
                           ATTN_TILED_PLANT_LAZY_UNCHECKED;
    bool keep = true;
    for (int c = 0; c < nc && !unchecked; c++)   /* false for a NaN sum or max */
        keep &= w->mx[c] <= w->m[c] + LAZY_FIX && w->sum[c] <= FLT_MAX;
    long raised = 0;
    for (int c = 0; c < nc && keep; c++) {
        float f = 1.0f;
        if (!unchecked && w->mx[c] > w->m[c] + LAZY_MAX) {
            f = exp2f(w->m[c] - w->mx[c]);
            for (int j = 0; j < n; j++)
                st[(size_t)j * brp + c] *= f;
            w->m[c] = w->mx[c];
            raised++;
        }
        w->l[c] = (w->l[c] + w->sum[c]) * f;
        w->alpha[c] = f;
    }
    if (count) {
        atomic_fetch_add_explicit(keep ? &tiled_lazy_kept : &tiled_lazy_redone, 1,
                                  memory_order_relaxed);
        atomic_fetch_add_explicit(&tiled_lazy_raised, raised, memory_order_relaxed);
    }
    return keep;
}

/* P.V of keys [0, n) into the accumulator rows of columns [c, c + r). */
static void pv_part(const tiled_state *s, const float *st, const tile_ops *x, const scratch *w,
                    int c, int r, int n)
{
    const int dv = s->h.p.d_v, brp = s->plan.brp;
    if (s->plan.path == PATH_BF16)
        s->h.k->pv_bf16(w->acc + (size_t)c * dv, dv, x->pp + c, brp, x->vp, dv, w->alpha + c, r,
                        n, dv);
    else if (s->plan.path == PATH_QUANT)
        s->h.k->pv_q(w->acc + (size_t)c * dv, dv, st + c, brp, x->vq, (ptrdiff_t)x->vrow,
                     w->alpha + c, r, n, dv, x->fmt, x->vsc, s->plan.stream ? x->pfv : 0);
    else if (s->plan.rows_pv)
        s->h.k->pv_rows_bf16(w->acc + (size_t)c * dv, dv, st + c, brp, x->vh, x->vhs,
                             w->alpha + c, r, n, dv, s->plan.stream ? x->pfv : 0);
    else if (s->plan.path == PATH_ROWS16)
        s->h.k->pv16(w->acc + (size_t)c * dv, dv, st + c, brp, x->vh, x->vhs, w->alpha + c, r,
                     n, dv, s->h.p.kv_dtype == ATTN_DTYPE_BF16, s->plan.stream ? x->pfv : 0);
    else
        s->h.k->pv(w->acc + (size_t)c * dv, dv, st + c, brp, x->vb, x->vbs, w->alpha + c, r, n,
                   dv, s->plan.stream && s->plan.path == PATH_FP32 ? x->pfv : 0);
}

/* Q.K^T and P.V of a tile that a mask cuts (end[c]: the keys column c
 * sees), without the work the mask throws away: runs of TILE_ROWS keys
 * only for the 16-column strips from the first that sees any of them on,
 * and each run of TILE_ROWS queries only over the keys the last of them
 * sees. Scores left out are never read as visible, and the weights P.V
 * skips are the softmax's zeros, so the result is the one the whole tile
 * would give; on the diagonal of a causal mask this halves the tile. (In
 * pairs of keys, an odd count's last pair adds a key whose weight is 0.)
 * Not kept: the keys every column of a cut tile's block sees (those before
 * its first row's diagonal) run first as a tile of their own, unmasked and
 * open to the lazy rescale, only the rest through here: causal prefill,
 * B = 1, H = 8, N = 1K and 2K, d = 64 and 128, on against off in one
 * process (bench_ab, 11 to 15 rounds) on the 2-core Zen 4 EPYC took
 * 0.99-1.02x the time without it on one thread and 1.00-1.02x on two. */
static void qk_cut(const tiled_state *s, float *st, const tile_ops *x, const scratch *w, int n,
                   int nc, const int *end)
{
    for (int j = 0; j < n;) {
        const int c0 = first_strip(end, nc, j);
        int j1 = j + TILE_ROWS;
        while (j1 < n && first_strip(end, nc, j1) == c0)
            j1 += TILE_ROWS;
        j1 = j1 < n ? j1 : n;
        if (c0 < nc)
            qk_part(s, st, x, w, j, c0, j1 - j, nc - c0);
        j = j1;
    }
}

static void pv_cut(const tiled_state *s, const float *st, const tile_ops *x, const scratch *w,
                   int n, int nc, const int *end)
{
    for (int c = 0; c < nc; c += TILE_ROWS) {
        const int r = nc - c < TILE_ROWS ? nc - c : TILE_ROWS;
        int e = 0;
        for (int y = c; y < c + r; y++)
            e = end[y] > e ? end[y] : e;
        if (atomic_load_explicit(&tiled_planted, memory_order_relaxed) == ATTN_TILED_PLANT_CUT_SHORT)
            e--;
        pv_part(s, st, x, w, c, r, e < n ? e : n);
    }
}

/* Q.K^T on widen_k: the tile's 16-bit K widened (a quantized K read back)
 * into kb (x->kb) and
 * multiplied by qk WIDEN_ROWS keys at a time, so
 * that K's loads from memory, and cvt_rows' prefetches of the rows ahead,
 * fall among the FMAs instead of in one burst before them (each score is
 * the same sum either way). Measured on the 2-core EPYC (Zen 5), H = 32,
 * Hkv = 8, Nq = 4, d = 128, Nk = 32K, bf16 K/V, 2 threads, 6 interleaved
 * processes: B = 1 6.6 against 7.6 ms, B = 8 51.8 against 59.3 ms. A
 * tile a mask cuts is widened whole, then cut.
 * WIDEN_ROWS is 12, the rows of AVX-512 qk's one-vector register tile
 * (ROWS_NARROW: 13 to 16 columns), two of the 6-row tiles elsewhere. At 6,
 * the AVX-512 qk ran its 6-row tile there, 7 loads for 6 FMAs. On the
 * 2-core Intel Xeon (Skylake-SP), H = 32, d = 128, the two in one process
 * (the same inputs, 9 to 15 alternating rounds, ratio of the medians, the
 * output the same bits): Hkv = 8, Nq = 4, bf16 K/V 0.85x the time at
 * B = 1, Nk = 32K, 0.92x at B = 8, Nk = 4K, 0.93x on one thread at
 * Nk = 1K; q8_0 0.93x (Nk = 32K); multi-query (Hkv = 1, Nq = 1, 32
 * columns in 6-row tiles) bf16 0.96-0.97x; the AVX2 kernels (bf16, Nk = 1K, one
 * thread) 0.97x. Where the kernel table says so (attn_kernels.kbf16: AMD's
 * AVX-512 cores) bf16 K is not widened but read in place by qk_kbf16
 * (plan.kbf16, qk_part), the same scores bit for bit: docs/backends.md has
 * the figures.
 * Not kept: every piece widened into the same 12 rows of kb (a sixth of
 * L1 instead of the tile's 24 KB at d = 128), measured the same way:
 * bf16 0.98x at Nk = 32K and 0.99x at Nk = 1K on one thread, q8_0 1.05x
 * at Nk = 32K. */
#define WIDEN_ROWS 12

static void qk_widened(const tiled_state *s, float *st, float *kb, const tile_ops *x,
                       const scratch *w, int n, int nc, const int *end)
{
    const int dk = s->h.p.d_k;
    const int bf16 = s->h.p.kv_dtype == ATTN_DTYPE_BF16;
    const bool q = s->plan.path == PATH_QUANT;   /* a quantized K: read back */
    const ptrdiff_t pf = s->plan.stream ? x->pfk : 0;
    for (int j = 0; j < n; j += end ? n : WIDEN_ROWS) {
        const int r = end ? n : n - j < WIDEN_ROWS ? n - j : WIDEN_ROWS;
        if (q)
            s->h.k->dequant_rows(kb + (size_t)j * dk, dk, x->kq + (size_t)j * x->krow,
                                 (ptrdiff_t)x->krow, r, dk, x->fmt, x->ksc, pf);
        else
            s->h.k->cvt_rows(kb + (size_t)j * dk, dk, x->kh + (size_t)j * x->khs, x->khs, r, dk,
                             bf16, pf);
        if (!end)
            qk_part(s, st, x, w, j, 0, r, nc);
    }
    if (end)
        qk_cut(s, st, x, w, n, nc, end);
}

/* Whether rows [0, n) of a quantized cache (rb bytes each) read back only
 * finite values: no block scale with fp16's exponent all ones (q8_0,
 * q4_0), no NaN or infinity code (fp8), and a finite fp8 scale. */
static bool rows_finite_q(const uint8_t *y, int n, size_t rb, size_t stride, attn_kvq f,
                          float scale)
{
    if (attn_kvq_head_scaled(f) && !isfinite(scale))
        return false;
    const unsigned m = f == ATTN_KVQ_FP8E4M3 ? 0x7fu : 0x7cu;
    const size_t bb = f == ATTN_KVQ_Q8_0 ? 34 : 18;
    for (int r = 0; r < n; r++, y += stride) {
        if (attn_kvq_head_scaled(f)) {
            unsigned bad = 0;
            for (size_t i = 0; i < rb; i++)
                bad |= (y[i] & m) == m;
            if (bad)
                return false;
            continue;
        }
        for (size_t i = 0; i < rb; i += bb) {
            uint16_t h;
            memcpy(&h, y + i, sizeof(h));
            if ((h & 0x7c00u) == 0x7c00u)
                return false;
        }
    }
    return true;
}

/* Whether rows [0, n) of 16-bit storage hold only finite values (the
 * exponent field not all ones: bf16 0x7f80, fp16 0x7c00). */
static bool rows_finite16(const uint16_t *x, size_t n, size_t cols, bool bf16)
{
    const unsigned e = bf16 ? 0x7f80u : 0x7c00u;
    const size_t count = n * cols;
    unsigned bad = 0;
#pragma omp simd reduction(| : bad)
    for (size_t i = 0; i < count; i++)
        bad |= (x[i] & e) == e;
    return !bad;
}

/* The keys [*b, *e) of the tile (n keys from j0) column c sees: past the
 * window's left edge when beg is given, before its end when end is. */
static void col_span(const int *end, const int *beg, int c, int n, int j0, int *b, int *e)
{
    *e = !end ? n : end[c] < 0 ? 0 : end[c] > n ? n : end[c];
    *b = !beg ? 0 : beg[c] - j0 < 0 ? 0 : beg[c] - j0 > *e ? *e : beg[c] - j0;
}

/* PATH_BF16 with a NaN or Inf in the tile's V: each column over its own
 * visible keys, the weights rounded to bf16 as the kernel rounds them. */
static void pv_columns_bf16(const tiled_state *s, const float *st, const uint16_t *vh,
                            ptrdiff_t vs, const scratch *w, int n, int nc, const int *end,
                            const int *beg, int j0)
{
    const int dv = s->h.p.d_v, brp = s->plan.brp;
    for (int c = 0; c < nc; c++) {
        int b, e;
        col_span(end, beg, c, n, j0, &b, &e);
        float *acc = w->acc + (size_t)c * dv;
        for (int y = 0; y < dv; y++) {
            float a = acc[y] * w->alpha[c];
            for (int j = b; j < e; j++)
                a += attn_bf16_to_f32(attn_f32_to_bf16(st[(size_t)j * brp + c])) *
                     attn_bf16_to_f32(vh[(size_t)j * vs + y]);
            acc[y] = a;
        }
    }
}

/* After the softmax of a tile the window's left edge cuts: the weights of
 * the keys left of each column's window exactly 0 (the mods kernel gave
 * them -inf, whose exp2 may be a denormal rather than 0), and a column that
 * has seen no visible key yet keeps l = 0. */
static void tiled_unmask(float *st, int brp, int n, int nc, int j0, const scratch *w)
{
    for (int c = 0; c < nc; c++) {
        const int e = w->beg[c] - j0 < n ? w->beg[c] - j0 : n;
        for (int j = 0; j < e; j++)
            st[(size_t)j * brp + c] = 0.0f;
        if (w->m[c] == -INFINITY)
            w->l[c] = 0.0f;
    }
}

/* Block k's per-column modifier inputs: the window's first key, i' and
 * ALiBi's slope in log2 units. */
static void mods_columns(const tiled_state *s, const scratch *w, const block *k)
{
    const attn_problem *p = &s->h.p;
    const int nc = s->plan.group * k->nq;
    for (int c = 0; c < nc; c++) {
        const int i = k->i0 + c % k->nq, h = k->g * attn_group(p) + c / k->nq;
        const int bug = atomic_load_explicit(&tiled_planted, memory_order_relaxed);
        int hi;
        attn_visible_range(p, k->b, i, &w->beg[c], &hi);
        if (bug == ATTN_TILED_PLANT_WINDOW_EARLY && w->beg[c] > 0)
            w->beg[c]--;
        w->pos[c] = (float)(i + p->seq_kv - p->seq_q);
        const int hs = bug == ATTN_TILED_PLANT_ALIBI_HEAD ? (h + 1) % p->heads : h;
        w->slope[c] = p->mods.alibi ? (float)(attn_alibi_slope(p->heads, hs) * ATTN_LOG2E) : 0.0f;
    }
}

/* Block u's Q: packed as Q^T (scaled, fp32; or in bf16 pairs, unscaled, on
 * PATH_BF16), or for tiles of dot products (plan.dots) as scaled rows (qr).
 * 16-bit Q is widened to fp32 first, exactly. */
static void load_q(const tiled_state *s, const scratch *w, const block *k)
{
    const attn_problem *p = &s->h.p;
    const attn_kernels *kn = s->h.k;
    const int dk = p->d_k, brp = s->plan.brp, nc = s->plan.group * k->nq;
    const bool q16 = attn_dtype_half(p->dtype), bf16 = p->dtype == ATTN_DTYPE_BF16;
    const float qscale = s->qscale;
    if (s->plan.i8_dot) {
        /* Q's q8_0 blocks, from its fp32 values (exact: backend.h):
         * qk_rows_i8 scales its sums. */
        const size_t rb = attn_kvq_row_bytes(ATTN_KVQ_Q8_0, (size_t)dk);
        for (int c = 0; c < nc; c++)
            attn_kvq_quantize_row((uint8_t *)w->qr + (size_t)c * rb,
                                  s->h.t.q + column_row(s, k, c) * dk, (size_t)dk, ATTN_KVQ_Q8_0,
                                  1.0f);
        return;
    }
    if (s->plan.rows_dot) {
        /* bf16 rows as they are: qk_rows_bf16 scales its sums. */
        for (int c = 0; c < nc; c++)
            memcpy((uint16_t *)w->qr + (size_t)c * dk, s->h.t.q16 + column_row(s, k, c) * dk,
                   (size_t)dk * sizeof(uint16_t));
        return;
    }
    if (s->plan.dots) {
        for (int c = 0; c < nc; c++) {
            const size_t row = column_row(s, k, c);
            float *qr = w->qr + (size_t)c * dk;
            if (q16)
                kn->cvt_rows(qr, dk, s->h.t.q16 + row * dk, dk, 1, dk, bf16, 0);
            const float *q = q16 ? qr : s->h.t.q + row * dk;
            for (int x = 0; x < dk; x++)
                qr[x] = q[x] * qscale;
        }
        return;
    }
    /* Each head's nq queries are rows of Q qstep apart (consecutive in a
     * dense batch): a run of columns a head. With one query a head
     * (decoding), the group's heads' rows are one stride apart, so their
     * columns are one run (in runs that fit qr where 16-bit Q is widened
     * first), not one call a head. MQA's 32 heads (fp32, Nk = 32K, in 21
     * split-KV chunks, each packing its Q^T; 2 threads, Skylake-SP Xeon):
     * pack_qt 2.8% of the samples of a whole run (perf) with a call a
     * head, 0.4% with one call. */
    const bool heads = k->nq == 1 && nc > 1;
    const ptrdiff_t qs = heads ? (ptrdiff_t)(column_row(s, k, 1) - column_row(s, k, 0)) * dk
                               : (ptrdiff_t)dk * s->lay.qstep;
    const int cap = q16 && s->plan.path != PATH_BF16 ? tiled_qr_rows(p, &s->plan) : nc;
    const int run = !heads ? k->nq : nc < cap ? nc : cap;
    for (int c = 0; c < nc; c += run) {
        const size_t row = column_row(s, k, c);
        const int n = nc - c < run ? nc - c : run;
        if (s->plan.path == PATH_BF16) {
            kn->pack_qt_bf16((uint32_t *)w->qt + c, brp, s->h.t.q16 + row * dk, qs, n, dk);
        } else if (q16) {
            kn->cvt_rows(w->qr, dk, s->h.t.q16 + row * dk, qs, n, dk, bf16, 0);
            kn->pack_qt(w->qt + c, brp, w->qr, dk, n, dk, qscale);
        } else {
            kn->pack_qt(w->qt + c, brp, s->h.t.q + row * dk, qs, n, dk, qscale);
        }
    }
}

/* Where a work item's K/V rows are, whatever the head: the tensors from
 * their first row (a tile's rows start at key_row), bytes per row of K and
 * V (V read from K: K's rows) and between consecutive keys' rows. */
typedef struct key_src {
    bool kvq, kv16, bf16;
    attn_kvq fmt;
    int vs;                       /* V's rows: dk apart when V is read from K */
    size_t krow, vrow;            /* bytes of a row of K, V at their stored width */
    const uint8_t *kq, *vq;
    const float *kk, *vv;
    const uint16_t *kh, *vh;
    ptrdiff_t ks, vst;            /* elements between consecutive keys' rows */
    ptrdiff_t kqs, vqs;           /* the same in bytes (quantized) */
    size_t kw, vw;                /* bytes per row read (prefetches) */
    const unsigned char *kbase, *vbase;
} key_src;

static key_src key_source(const tiled_state *s)
{
    const attn_problem *p = &s->h.p;
    const int dk = p->d_k;
    key_src c;
    c.kvq = attn_dtype_quantized(p->kv_dtype);
    c.kv16 = p->kv_dtype != ATTN_DTYPE_FP32 && !c.kvq;
    c.bf16 = p->kv_dtype == ATTN_DTYPE_BF16;
    c.vs = attn_v_stride(p);
    c.krow = attn_dtype_row_bytes(p->kv_dtype, (size_t)dk);
    c.vrow = attn_dtype_row_bytes(p->kv_dtype, (size_t)c.vs);
    c.fmt = c.kvq ? attn_dtype_kvq(p->kv_dtype) : ATTN_KVQ_Q8_0;
    c.kq = c.kvq ? s->h.t.kq : NULL;
    c.vq = c.kvq ? s->h.t.vq : NULL;
    c.kk = c.kv16 || c.kvq ? NULL : s->h.t.k;
    const size_t shift = p->mods.v_from_k && atomic_load_explicit(&tiled_planted, memory_order_relaxed) ==
                                                 ATTN_TILED_PLANT_V_SHIFTED;
    c.vv = c.kv16 || c.kvq ? NULL : s->h.t.v + shift;
    c.kh = c.kv16 ? s->h.t.k16 : NULL;
    c.vh = c.kv16 ? s->h.t.v16 + shift : NULL;
    c.ks = (ptrdiff_t)dk * s->lay.kvstep;
    c.vst = (ptrdiff_t)c.vs * s->lay.kvstep;
    c.kqs = (ptrdiff_t)c.krow * s->lay.kvstep;
    c.vqs = (ptrdiff_t)c.vrow * s->lay.kvstep;
    c.kw = c.kvq ? c.krow : (size_t)dk * attn_dtype_size(p->kv_dtype);
    c.vw = c.kvq ? c.vrow : (size_t)c.vs * attn_dtype_size(p->kv_dtype);
    c.kbase = c.kvq ? c.kq : c.kv16 ? (const void *)c.kh : (const void *)c.kk;
    c.vbase = c.kvq ? c.vq : c.kv16 ? (const void *)c.vh : (const void *)c.vv;
    return c;
}

/* The flat K/V head (b Hkv + g) of block k's rows. */
static size_t kv_head(const tiled_state *s, const block *k)
{
    const size_t hkv = (size_t)attn_kv_heads(&s->h.p);
    if (atomic_load_explicit(&tiled_planted, memory_order_relaxed) == ATTN_TILED_PLANT_WRONG_KV_HEAD)
        return (size_t)k->b * hkv + (size_t)(k->g + 1) % hkv;
    return (size_t)k->b * hkv + (size_t)k->g;
}

/* The tile of keys [j0, j0 + nt) of K/V head g as the plan's kernels take
 * it: in place, or converted into `tile`; the next tile (below top, past
 * the last key any block sees) prefetched where the kernels do not
 * prefetch themselves. */
static void load_tile(const tiled_state *s, const key_src *c, unsigned char *tile, size_t g,
                      int j0, int nt, int top, tile_ops *x)
{
    const attn_problem *p = &s->h.p;
    const tiled_plan *t = &s->plan;
    const attn_kernels *kn = s->h.k;
    const int dk = p->d_k, dv = p->d_v;
    const size_t r0 = key_row(s, g, j0);
    const size_t pairs = ((size_t)t->bc + 1) / 2;
    if (t->cols <= ROWS_MAX && (t->dots || !kn->prefetches))
        prefetch_keys(s, g, j0 + nt, t->bc, top, c->kbase, c->vbase, c->kw,
                      p->mods.v_from_k ? 0 : c->vw);
    /* Copied, not zeroed in place: compilers zero 144 bytes with rep
     * stos, whose start-up was 15% of tiled_keys' own time in pages of 16. */
    static const tile_ops none;
    *x = none;
    const ptrdiff_t pf = pf_rows(s, g, j0, r0);
    if (t->dots && kn->fetch_v && !p->mods.v_from_k &&
        (t->path == PATH_FP32 || t->path == PATH_ROWS16))
        fetch_v(s, g, j0, nt, c->vbase, c->vw);
    x->pfk = pf * (ptrdiff_t)c->kw;
    x->pfv = pf * (ptrdiff_t)c->vw;
    /* The tile read back to fp32 whole (PATH_WIDEN) streams from memory
     * once in decoding: the rows ahead fetched as it is read. */
    const ptrdiff_t pfk = t->stream ? x->pfk : 0, pfv = t->stream ? x->pfv : 0;
    x->khs = x->kbs = c->ks;
    x->vhs = x->vbs = c->vst;
    if (t->path == PATH_FP32) {
        x->kb = c->kk + r0 * dk;
        x->vb = c->vv + r0 * c->vs;
    } else if (t->path == PATH_ROWS16) {
        x->kh = c->kh + r0 * dk;
        x->vh = c->vh + r0 * c->vs;
        if (t->widen_k) {
            x->kb = (const float *)tile;   /* widened by qk_widened */
            x->kbs = dk;
        }
    } else if (t->path == PATH_QUANT) {
        if (t->widen_k) {
            x->kb = (const float *)tile;   /* read back by qk_widened */
            x->kbs = dk;
        }
        x->kq = c->kq + r0 * c->krow;
        x->vq = c->vq + r0 * c->vrow;
        x->krow = (size_t)c->kqs;
        x->vrow = (size_t)c->vqs;
        x->fmt = c->fmt;
        /* fp8's scales: one per K/V head */
        x->ksc = s->h.t.kscale ? s->h.t.kscale[g] : 1.0f;
        x->vsc = s->h.t.vscale ? s->h.t.vscale[g] : 1.0f;
    } else if (t->path == PATH_WIDEN && c->kvq) {
        float *kf = (float *)tile, *vf = kf + (size_t)t->bc * dk;
        const float ksc = s->h.t.kscale ? s->h.t.kscale[g] : 1.0f;
        const float vsc = s->h.t.vscale ? s->h.t.vscale[g] : 1.0f;
        kn->dequant_rows(kf, dk, c->kq + r0 * c->krow, c->kqs, nt, dk, c->fmt, ksc, pfk);
        kn->dequant_rows(vf, dv, c->vq + r0 * c->vrow, c->vqs, nt, dv, c->fmt, vsc, pfv);
        x->kb = kf;
        x->vb = vf;
        x->kbs = dk;
        x->vbs = dv;
    } else if (t->path == PATH_WIDEN) {
        float *kf = (float *)tile, *vf = kf + (size_t)t->bc * dk;
        kn->cvt_rows(kf, dk, c->kh + r0 * dk, c->ks, nt, dk, c->bf16, pfk);
        kn->cvt_rows(vf, dv, c->vh + r0 * c->vs, c->vst, nt, dv, c->bf16, pfv);
        x->kb = kf;
        x->vb = vf;
        x->kbs = dk;
        x->vbs = dv;
    } else {
        uint32_t *vp = (uint32_t *)tile;
        kn->pack_v_bf16(vp, dv, c->vh + r0 * c->vs, c->vst, nt, dv);
        x->kh = c->kh + r0 * dk;
        x->vh = c->vh + r0 * c->vs;
        x->vp = vp;
        x->pp = (const uint32_t *)(tile + round_up(pairs * dv * sizeof(uint32_t), ALIGN));
    }
}

/* Keys [j_lo, j_hi) of the nb blocks k[] (all of one batch item: of one
 * K/V head, or with plan.heads > 1 one query block of each of several)
 * into their accumulators w[u].acc [cols][dv] (unnormalized) and
 * statistics w[u].m, w[u].l (log2 units). Each key tile is loaded (and on
 * the 16-bit paths widened or packed) once for each K/V head and used by
 * every block of that head that sees any of it, one block after the
 * other; then the next tile. */
void tiled_keys(const tiled_state *s, float *st, unsigned char *tile, const scratch *w,
                const block *k, int nb, int j_lo, int j_hi)
{
    const attn_problem *p = &s->h.p;
    const tiled_plan *t = &s->plan;
    const attn_kernels *kn = s->h.k;
    const int dk = p->d_k, dv = p->d_v, brp = t->brp;
    const key_src src = key_source(s);
    const bool bf16 = src.bf16;
    const ptrdiff_t kqs = src.kqs, vqs = src.vqs;
    const size_t vrow = src.vrow;
    const attn_kvq fmt = src.fmt;
    const float cap = p->mods.softcap > 0 ? (float)(p->mods.softcap * ATTN_LOG2E) : 0.0f;
    const bool scores_mod = cap > 0 || p->mods.alibi;
    const bool count = atomic_load_explicit(&tiled_counting, memory_order_relaxed);

    /* Visible keys are an interval per query, both ends growing with i:
     * keys in [wbig[u], lo[u]) are visible to every query of block u, none
     * at or past hi[u] or below wlo[u] is (without a window, an interval is
     * a prefix: wlo = wbig = 0). Blocks come in increasing query order, so
     * the last sees most. */
    int lo[SB_MAX], hi[SB_MAX], wlo[SB_MAX], wbig[SB_MAX], top = j_lo, first = j_hi;
    bool lazy[SB_MAX];   /* the block's next tile may take qk_lazy (lazy_ready) */
    for (int u = 0; u < nb; u++) {
        const int nc = t->group * k[u].nq;
        load_q(s, &w[u], &k[u]);
        lazy[u] = false;
        for (int c = 0; c < nc; c++) {
            w[u].m[c] = -INFINITY;
            w[u].l[c] = 0.0f;
        }
        memset(w[u].acc, 0, (size_t)nc * dv * sizeof(float));
        attn_visible_range(p, k[u].b, k[u].i0, &wlo[u], &lo[u]);
        attn_visible_range(p, k[u].b, k[u].i0 + k[u].nq - 1, &wbig[u], &hi[u]);
        hi[u] = hi[u] < j_hi ? hi[u] : j_hi;
        top = hi[u] > top ? hi[u] : top;
        first = wlo[u] < first ? wlo[u] : first;
        if (scores_mod || p->mods.window)
            mods_columns(s, &w[u], &k[u]);
    }

    /* The first tile any block sees: those wholly left of every window are
     * never visited. */
    const int j_first = first > j_lo ? j_lo + (first - j_lo) / t->bc * t->bc : j_lo;
    /* Tiles of bc keys, cut at the end of a page (a paged batch). */
    for (int j0 = j_first, step; j0 < top; j0 += step) {
        step = key_run(s, j0) < t->bc ? key_run(s, j0) : t->bc;
        const int nt = top - j0 < step ? top - j0 : step;
        static const tile_ops none;
        tile_ops x = none;
        bool finite = true;
        size_t xg = SIZE_MAX;   /* the K/V head x holds */
        bool finite_known = false;
        for (int u = 0; u < nb; u++) {
            if (j0 >= hi[u])
                continue;
            const scratch *wu = &w[u];
            const int n = hi[u] - j0 < step ? hi[u] - j0 : step, nc = t->group * k[u].nq;
            if (j0 + n <= wlo[u])
                continue;   /* left of every window of the block */
            const size_t g = kv_head(s, &k[u]);
            if (g != xg && (xg == SIZE_MAX ||
                            atomic_load_explicit(&tiled_planted, memory_order_relaxed) !=
                                ATTN_TILED_PLANT_HEADS_ONE_TILE)) {
                load_tile(s, &src, tile, g, j0, nt, top, &x);
                xg = g;
                finite_known = false;
            }
            if (count)
                atomic_fetch_add_explicit(&tiled_tiles_seen, 1, memory_order_relaxed);
            /* Left of some column's window: masked by the mods kernel. */
            const bool left = p->mods.window && j0 < wbig[u];
            const int *end = NULL;
            if (j0 + n > lo[u]) {
                for (int c = 0; c < nc; c++)
                    wu->end[c] = attn_visible_end(p, k[u].b, k[u].i0 + c % k[u].nq) - j0;
                end = wu->end;
            }
            bool kept = false;   /* qk_lazy's weights: no softmax to run */
            if (t->rows_dot)
                kn->qk_rows_bf16(st, brp, x.kh, x.khs, (const uint16_t *)wu->qr, dk, n, nc, dk,
                                 s->qscale, x.pfk);
            else if (t->dots && t->path == PATH_ROWS16)
                kn->qk_rows16(st, brp, x.kh, x.khs, wu->qr, dk, n, nc, dk, bf16, x.pfk);
            else if (t->i8_dot)
                kn->qk_rows_i8(st, brp, x.kq, kqs, (const uint8_t *)wu->qr,
                               (ptrdiff_t)attn_kvq_row_bytes(ATTN_KVQ_Q8_0, (size_t)dk), n, nc, dk,
                               fmt, s->qscale, x.pfk);
            else if (t->path == PATH_QUANT && t->dots)
                kn->qk_rows_q(st, brp, x.kq, kqs, wu->qr, dk, n, nc, dk, fmt, x.ksc,
                              x.pfk);
            else if (t->dots)
                kn->qk_rows(st, brp, x.kb, x.kbs, wu->qr, dk, n, nc, dk, x.pfk);
            else if (t->widen_k)
                qk_widened(s, st, (float *)tile, &x, wu, n, nc, end);
            else if (end)
                qk_cut(s, st, &x, wu, n, nc, end);
            else if (!(kept = lazy[u] && !scores_mod && !left &&
                              qk_lazy(s, st, &x, wu, n, nc, count)))
                qk_part(s, st, &x, wu, 0, 0, n, nc);
            if (scores_mod || left)
                kn->mods(st, brp, n, nc, j0, cap, p->mods.alibi ? wu->slope : NULL, wu->pos,
                         left ? wu->beg : NULL);
            if (!kept) {
                bool fresh = t->lazy;   /* the block's first tile */
                for (int c = 0; c < nc && fresh; c++)
                    fresh = wu->m[c] == -INFINITY;
                kn->softmax(st, brp, n, nc, end, wu->m, wu->l, wu->alpha);
                lazy[u] = t->lazy && lazy_ready(wu, nc, fresh);
            }
            if (left)
                tiled_unmask(st, brp, n, nc, j0, wu);
            if (t->path == PATH_BF16)
                kn->pack_p_bf16((uint32_t *)x.pp, brp, st, brp, n, nc);
            const bool cut = end || left;
            if (cut && !finite_known) {
                /* Once per tile: over the keys of the longest block, from
                 * the first row's start to the last row's dv-th value (with
                 * V read from K, K's other columns between them too). */
                const int span = top - j0 < step ? top - j0 : step;
                const bool half = t->path == PATH_BF16 || t->path == PATH_ROWS16;
                const size_t stride = (size_t)(half ? x.vhs : x.vbs);
                const size_t elems = (size_t)(span - 1) * stride + (size_t)dv;
                finite = t->path == PATH_QUANT ? rows_finite_q(x.vq, span, vrow, (size_t)vqs,
                                                                fmt, x.vsc)
                         : half ? rows_finite16(x.vh, 1, elems, bf16)
                                : attn_rows_finite(x.vb, 1, elems);
                finite_known = true;
            }
            const int *beg = left ? wu->beg : NULL;
            if (!cut || (finite && !end)) {
                pv_part(s, st, &x, wu, 0, nc, n);
            } else if (finite) {
                pv_cut(s, st, &x, wu, n, nc, end);
            } else if (t->path == PATH_BF16) {
                pv_columns_bf16(s, st, x.vh, x.vhs, wu, n, nc, end, beg, j0);
            } else if (t->path == PATH_QUANT) {
                for (int c = 0; c < nc; c++) {
                    int b, e;
                    col_span(end, beg, c, n, j0, &b, &e);
                    kn->pv_q(wu->acc + (size_t)c * dv, dv, st + (size_t)b * brp + c, brp,
                             x.vq + (size_t)b * x.vrow, vqs, wu->alpha + c, 1, e - b,
                             dv, fmt, x.vsc, 0);
                }
            } else if (t->rows_pv) {
                for (int c = 0; c < nc; c++) {
                    int b, e;
                    col_span(end, beg, c, n, j0, &b, &e);
                    kn->pv_rows_bf16(wu->acc + (size_t)c * dv, dv, st + (size_t)b * brp + c, brp,
                                     x.vh + (size_t)b * x.vhs, x.vhs, wu->alpha + c, 1, e - b,
                                     dv, 0);
                }
            } else if (t->path == PATH_ROWS16) {
                for (int c = 0; c < nc; c++) {
                    int b, e;
                    col_span(end, beg, c, n, j0, &b, &e);
                    kn->pv16(wu->acc + (size_t)c * dv, dv, st + (size_t)b * brp + c, brp,
                             x.vh + (size_t)b * x.vhs, x.vhs, wu->alpha + c, 1, e - b, dv,
                             bf16, 0);
                }
            } else {
                /* A NaN or Inf in V: each column over its own visible keys. */
                const ptrdiff_t xs = x.vbs;
                for (int c = 0; c < nc; c++) {
                    int b, e;
                    col_span(end, beg, c, n, j0, &b, &e);
                    kn->pv(wu->acc + (size_t)c * dv, dv, st + (size_t)b * brp + c, brp,
                           x.vb + (size_t)b * xs, xs, wu->alpha + c, 1, e - b, dv, 0);
                }
            }
        }
    }
}

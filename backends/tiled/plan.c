/* tiled's plan: the tile sizes, the query blocks per work item, split-KV
 * (all from the problem alone, so that the output does not depend on the
 * thread count), and the layout of each thread's scratch. */
#include <unistd.h>

#include "tiled/internal.h"

/* Split-KV, chosen from the problem alone: unsplit when there are at least
 * SPLIT_ITEMS work items, else enough chunks to reach that many, each of at
 * least SPLIT_MIN_KEYS keys for every ROWS_MAX columns of the tile (begun).
 * A fixed target rather than a multiple of the thread count, so that the
 * chunks, and the output, are the same for any thread count; 32 items keep
 * up to 16 threads busy. A wide tile's chunk leaves a wide partial result
 * for one thread to merge: DeepSeek-V3's latent decode (128 columns, dv 512,
 * bf16, Nk 32K, 2 threads, Zen 4) ran at 58% of its roofline in 32 chunks of
 * 1024 keys, 73% in 16, 75% in 8 (the 4096 keys this rule gives it). */
#define SPLIT_ITEMS 32
#define SPLIT_MIN_KEYS 512

/* Per-thread scratch, in this order: S^T [bc][brp], the tile's converted
 * or packed K/V (tile_bytes), then for each of the sb query blocks (of
 * each of the `heads` K/V heads) of a work item: Q^T [dk][brp], the
 * accumulator [cols][dv], Q's rows [max(ROWS_MAX, br)][dk] (for qk_rows,
 * and for 16-bit Q widened before packing), m, l, alpha [brp] floats, end
 * [brp] ints, and for the modifiers beg [brp] ints, pos, slope [brp]
 * floats, then qk_exp's max and sum [brp] floats. */
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

int tiled_qr_rows(const attn_problem *p, const tiled_plan *t)
{
    return attn_dtype_half(p->dtype) && t->br > ROWS_MAX ? t->br : ROWS_MAX;
}

static size_t qr_bytes(const attn_problem *p, const tiled_plan *t)
{
    return round_up((size_t)tiled_qr_rows(p, t) * p->d_k * sizeof(float), ALIGN);
}

static size_t tile_bytes(const attn_problem *p, const tiled_plan *t)
{
    const size_t pairs = ((size_t)t->bc + 1) / 2;
    if (t->path == PATH_WIDEN)
        return round_up((size_t)t->bc * (p->d_k + p->d_v) * sizeof(float), ALIGN);
    if (t->widen_k)
        return round_up((size_t)t->bc * p->d_k * sizeof(float), ALIGN);
    if (t->path == PATH_BF16)
        return round_up(pairs * p->d_v * sizeof(uint32_t), ALIGN) +
               round_up(pairs * t->brp * sizeof(uint32_t), ALIGN);
    return 0;
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

static long l2_bytes(void)
{
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 > 0 ? l2 : 1024 * 1024;
}

static size_t sub_bytes(const attn_problem *p, const tiled_plan *t)
{
    return qt_bytes(p, t) + acc_bytes(p, t) + qr_bytes(p, t) + 9 * vec_bytes(t);
}

/* Query blocks per work item (sb), unless the configuration sets it. Each
 * K/V tile, once brought in, serves the sb blocks one after the other, so
 * K and V stream from L3 or memory once per sb blocks instead of once per
 * block: as many as have their Q^T tiles and accumulators (sb x sub_bytes)
 * fit in L2, at most SB_MAX (measured at N = 32K, d = 64 and 128: 8 ran
 * 10-13% faster than 1, 16 no faster than 8). Fewer when that would leave
 * fewer than SB_ITEMS work items to share out. The blocks of an item are
 * computed exactly as they would be alone (same tiles, same order), so sb
 * changes no bit of the output. */
#define SB_ITEMS 16

static int auto_sb(const attn_problem *p, const tiled_plan *t)
{
    const long fit = l2_bytes() / (long)sub_bytes(p, t);
    const long spare = t->blocks / SB_ITEMS;
    long sb = fit < spare ? fit : spare;
    sb = sb < SB_MAX ? sb : SB_MAX;
    return sb > 1 ? (int)sb : 1;
}

static int auto_splits(long blocks, int keys, int cols)
{
    if (blocks >= SPLIT_ITEMS)
        return 1;
    const long wide = (cols + ROWS_MAX - 1) / ROWS_MAX;
    const long want = (SPLIT_ITEMS + blocks - 1) / blocks, most = keys / (SPLIT_MIN_KEYS * wide);
    const long n = want < most ? want : most;
    return n > 1 ? (int)n : 1;
}

/* The keys [*lo, *hi) some query of the problem sees: the union of every
 * row's visible interval. Split-KV cuts this span, not [0, Nk): a window
 * that shows a decoding query its last L keys is split L ways, not Nk. */
void tiled_key_span(const attn_problem *p, int *lo, int *hi)
{
    *lo = p->seq_kv;
    *hi = 0;
    for (int b = 0; b < p->batch; b++) {
        int l0, h0, l1, h1;
        attn_visible_range(p, b, 0, &l0, &h0);
        attn_visible_range(p, b, p->seq_q - 1, &l1, &h1);
        if (h1 > l0) {
            *lo = l0 < *lo ? l0 : *lo;
            *hi = h1 > *hi ? h1 : *hi;
        }
    }
    if (*hi <= *lo)
        *lo = *hi = 0;
    /* The planted early window starts the span early too. */
    if (*lo > 0 && atomic_load_explicit(&tiled_planted, memory_order_relaxed) ==
                       ATTN_TILED_PLANT_WINDOW_EARLY)
        (*lo)--;
}

/* K/V heads per work item. A cache stored a token at a time gives one
 * head's keys in short runs of memory: packed, a key's rows of every K/V
 * head lie side by side (256 bytes of every 2 KiB at bf16, Hkv = 8,
 * d = 128); paged, a page holds each head's rows in one run (4 KiB in
 * pages of 16), the pages at random places. Decoding (tiles of at most
 * ROWS_MAX columns: one query block per K/V head, reading K/V once from
 * memory) then takes the K/V heads of a batch item together, up to
 * SB_MAX of them in as even groups as there can be, and visits each key
 * tile for every head of the group before the next tile (keys.c), so
 * that memory is read in the runs of all the group's heads together.
 * Only where a head's run in a page is at most RUN_MAX bytes: longer runs
 * stream well alone, and taking them together was slower (below). Each
 * head's tiles are the same, in the same order, as it would have alone,
 * so the grouping changes no bit of a block's result.
 *
 * On the 2-core Zen 5 EPYC (Llama-3.1-8B, bf16, Nk = 32K, 3 or 4 rounds
 * of old and new builds alternating; the machine's bandwidth moved by up
 * to half between runs): a ragged batch of 32 decode tokens (Nk uniform
 * in 1K..32K) took 41-70 ms packed against 69-80 before, and 57-69 ms in
 * pages of 16 against 68-84; B = 16 in pages of 16, 56-65 ms against
 * 67-83; B = 1 on one thread, pages of 16 took 1.23-1.33x the contiguous
 * cache's time against 1.50-1.53x. A first version that also took the
 * heads of pages of 64 and 256 together took them (B = 1, 2 threads)
 * 1.27-1.49x and 1.90-2.60x the contiguous time against 1.09-1.38x and
 * 1.05-1.35x apart: hence RUN_MAX. */
#define RUN_MAX 8192

static int heads_per_item(const attn_problem *p, const tiled_plan *t, bool tokens, int page)
{
    const int hkv = attn_kv_heads(p);
    const size_t run = attn_dtype_row_bytes(p->kv_dtype, (size_t)p->d_k) *
                       (size_t)(page > 0 ? page : 1);
    if (!tokens || !t->stream || t->cols > ROWS_MAX || hkv <= 1 || run > RUN_MAX)
        return 1;
    const int groups = (hkv + SB_MAX - 1) / SB_MAX;
    return (hkv + groups - 1) / groups;
}

/* The tile of K/V in pages of `page` tokens, from the size bc chosen. A
 * tile never straddles two pages (keys.c also cuts a tile at its page's
 * end), so it is a divisor of the page: decoding's, the first from bc to a
 * third more (64 at 48), if any; else, and in prefill, the largest not
 * above bc; a page shorter than that is the tile. The tile of decoding
 * costs its softmax, and its accumulator's rescaling in P.V, once: on the
 * 2-core Zen 5 EPYC, one thread decoding B = 1, Nk = 2K (in L3), H = 32,
 * Hkv = 8, d = 128, bf16, 3 runs, pages of 64 and 256 took 198-203 us in
 * tiles of 64 against 218-225 in tiles of 32, the contiguous cache 188-191
 * in tiles of 64 and 195-197 in its tiles of 48. (Contiguous, from memory,
 * 64 kept no such edge: B = 4, Nk = 32K, 18.5-18.8 ms at 48 against
 * 19.3-19.5 at 64.) Tiles of several pages, short pages' keys run by run
 * through the kernels (one call per page), were no faster than a page's:
 * 16 tokens 252-264 us either way, the kernels' cost per call over 16
 * keys being that of a tile; a page of one token, 1.30-1.40 ms against
 * 1.42-1.43. Nor was a P.V that read a tile's rows across its pages in one
 * call (AVX2: a loop per page, then a pointer per key's row; Q.K^T page by
 * page, one softmax a tile), though on the 2-core Zen 3 EPYC the second
 * took 4 columns of 48 bf16 keys in L1 in 720 ns against 785 for three
 * calls of 16 (634 for one of 48 contiguous keys). Llama-3.1-8B, bf16,
 * B = 1, medians of the ratio to the contiguous cache in the same process:
 * one thread, Nk = 2K in L3, 15 interleaved rounds, pages of 16 took 1.26x
 * against 1.22x in tiles of a page; from memory (Nk = 32K, 2 threads,
 * three runs of 7-9 rounds) 1.20-1.32x against 1.12-1.13x, and 1.16x with
 * the next tile's prefetch cut to its first page. */
static int page_tile(int bc, int page, bool decoding)
{
    for (int n = bc; decoding && n <= bc + bc / 3 && n <= page; n++)
        if (page % n == 0)
            return n;
    int n = page < bc ? page : bc;
    while (page % n)
        n--;
    return n;
}

/* Tile sizes, unless the configuration sets them: 64 columns (one 64-lane
 * register tile of the AVX-512 Q.K^T kernel), that is Br = 64/G queries of
 * each of the G heads of a group (at least 1); Bc keys a multiple of 48
 * (whole 6-row register tiles and whole 16-lane vectors), at least 48:
 *  - prefill: the K and V tile in a quarter of L2, at most 192. The
 *    accumulator is loaded, rescaled and stored once per tile, so a longer
 *    tile spends less on it: in L2, on the 2-core EPYC, P.V ran at 108
 *    GFLOP/s a core with 48 keys, 112 with 96, 114 with 192 (peak 117).
 *    Whole runs (B = 1, H = 8, 2 threads, medians of 4 or 5 interleaved
 *    processes; N = 1K and 4K, d = 64 and 128, causal or not, and N = 256,
 *    d = 128) were 0.8-3.3% faster with 192 than with 96 at 7 of those 9
 *    shapes, and 0.1-0.2% slower at the other two (N = 4K: d = 64 causal,
 *    d = 128 not). With Br = 64 (or 32, 16, ...) dividing 192, the causal
 *    diagonal of a query block never straddles two tiles, so each block
 *    has one masked tile, not up to two;
 *  - decoding (tiles of at most ROWS_MAX columns, and multi-query decoding
 *    on fp32 K/V, below): the score tile and the
 *    K and V rows it touches in half of L1 (48 at d = 128: see
 *    kernels/rows_of.h's PF_KEYS for why short tiles stream better);
 *    tiles of dot products (DOTS_MAX columns or fewer), which have no
 *    6-key register tile to fill, in multiples of 16 keys, at least 32
 *    (32 at d = 128, where half of a 32 KB L1 holds the rows of 31 bf16
 *    keys, 15 fp32). On the 2-core Zen 3 EPYC (L1 32 KB; H = 32, Hkv = 8,
 *    d = 128, Nk = 32K, 2 threads, medians of 6 interleaved rounds, tiles
 *    of 32 set by --tile against the 48 of this rule's multiples of 48):
 *    bf16 6.34 ms against 6.85, fp16 6.27 against 6.44, fp32 11.74
 *    against 12.11 in one run and 12.07 against 11.80 in another, q8_0
 *    5.82 against 5.77; Llama-3.1-8B, bf16, B = 16 (3 rounds) 99.3
 *    against 107.2, pages of 64 110.7 against 127.2 (their tile 64 before,
 *    32 now), pages of 256 107.3 against 108.9. Not measured on the
 *    AVX-512 CPUs, where the multiples of 48 gave 48 too;
 *  - except, where the kernel table says (attn_kernels.dec_keys: the
 *    AVX-512 table on AMD's cores, 192), narrow decoding tiles on 16-bit
 *    and quantized K/V in a dense cache: there the tile's softmax and
 *    rescaling weigh on compute-bound tiles, and the prefetch distance
 *    is the kernel table's whatever the tile. On the 2-core Zen 4 EPYC
 *    (H = 32, d = 128, Nq = 1 unless said, bench_ab, 15 alternating
 *    rounds, 192 keys against the rule's 32, or 48 at Nq = 4; ratio of
 *    the medians), in L3 (1 thread, Nk = 2K; Hkv = 32 Nk = 1K): bf16
 *    0.91x, fp16 0.89x, bf16 Q and K/V 0.90x, q8_0 0.91-0.92x, q4_0
 *    0.92x, fp8e4m3 0.96x, Hkv = 32 bf16 0.79x and fp16 0.88x, Nq = 4
 *    0.96x both; 2 threads at Nk = 4K and 8K 0.87-0.94x, B = 8 at
 *    Nk = 512 0.92-0.94x; from memory (2 threads, Nk = 32K, where the
 *    bandwidth bounds and moved by a fifth between runs) bf16 Q and K/V
 *    0.92x and 0.95x, q8_0 0.94x (Q in q8_0 0.87x), q4_0 0.93x,
 *    fp8e4m3 0.94x, fp16 0.98x, bf16 0.90x and 1.01x in two runs,
 *    Hkv = 32 0.96-0.99x, Nq = 4 0.94-0.99x, B = 8 (Nk = 16K) 0.86x
 *    and 1.01x, Nk = 128K 0.97-0.99x; q8_0 and q4_0 at Nq = 4 (K read
 *    back 12 rows at a time, qk_widened) 0.97-0.98x in L3 and from
 *    memory. Not fp32 K/V: 1.05x and 1.05x
 *    from memory, 1.12x at Nk = 4K. Not pages, nor tokens packed
 *    (ragged batches), whose prefetch runs whole tiles ahead (keys.c,
 *    pf_rows): Llama-3.1-8B (bf16) in pages of 256, 2 threads, tiles of
 *    the page took 1.05-1.11x the time of the rule's 32, tiles of 128
 *    1.01-1.04x.
 * Neither they nor the chunks depend on the thread count, so neither does
 * the output. */
tiled_plan tiled_make_plan(const attn_problem *p, const attn_config *cfg, int page, bool tokens)
{
    tiled_plan t;
    const attn_kernels *kn = attn_kernels_for(cfg->isa);
    t.group = attn_group(p);
    t.br = cfg->tile_q > 0 ? cfg->tile_q : (64 / t.group > 1 ? 64 / t.group : 1);
    t.br = t.br < p->seq_q ? t.br : p->seq_q > 0 ? p->seq_q : 1;
    t.cols = t.group * t.br;
    t.stream = p->seq_q <= t.br;
    const int pf_set = atomic_load(&tiled_pf_keys_set);
    t.pf_keys = !kn || !kn->pf_keys ? 0 : pf_set > 0 ? pf_set : kn->pf_keys;
    /* Multi-query decoding (wider tiles, one query block) on fp32 K/V read
     * in place takes decoding's rule too: P.V reads V's tile once for each
     * of its row groups of 6 queries, from L1 in 48-key tiles, from L2 in
     * the 192 of prefill's rule. On the 2-core Zen 5 EPYC (H = 32, Hkv = 1,
     * d = 128, B = 1 and 8, Nk = 16K..128K, bench_ab, 7 to 11 alternating
     * rounds, 16 runs over an hour), 192 keys took 0.96-1.13x the time of
     * 48, 1.03x in the median run (1.19x in a run an hour before, at 32K);
     * 16-bit K/V, widened, keep 192: 48 took them 1.02-1.11x its time. */
    const bool l1_tile = t.cols <= ROWS_MAX || (t.stream && p->kv_dtype == ATTN_DTYPE_FP32);
    if (cfg->tile_kv > 0) {
        t.bc = cfg->tile_kv;
    } else if (l1_tile) {
        /* A quantized cache's tile is read back to fp32 beside its rows. */
        const long per_key =
            (long)t.cols * (long)sizeof(float) +
            (long)attn_dtype_row_bytes(p->kv_dtype, (size_t)p->d_k) +
            (p->mods.v_from_k ? 0 : (long)attn_dtype_row_bytes(p->kv_dtype, (size_t)p->d_v)) +
            (attn_dtype_quantized(p->kv_dtype) ? (long)(p->d_k + p->d_v) * (long)sizeof(float)
                                               : 0);
        const bool dots = t.cols <= DOTS_MAX;
        const long step = dots ? 16 : 48, least = dots ? 32 : 48;
        const long bc = l1d_bytes() / 2 / per_key / step * step;
        t.bc = bc < least ? (int)least : bc > 192 ? 192 : (int)bc;
        if (kn && kn->dec_keys > 0 && p->kv_dtype != ATTN_DTYPE_FP32 && t.cols <= ROWS_MAX &&
            page == 0 && !tokens)
            t.bc = kn->dec_keys;
    } else {
        const long per_key = (long)(p->d_k + p->d_v) * (long)sizeof(float);
        const long bc = l2_bytes() / 4 / per_key / 48 * 48;
        t.bc = bc < 48 ? 48 : bc > 192 ? 192 : (int)bc;
    }
    if (page > 0 && cfg->tile_kv <= 0)
        t.bc = page_tile(t.bc, page, l1_tile);
    t.brp = (int)round_up((size_t)t.cols, 16);
    const bool kvq = attn_dtype_quantized(p->kv_dtype);
    const bool kv16 = p->kv_dtype != ATTN_DTYPE_FP32 && !kvq;
    t.path = PATH_FP32;
    if (kvq)
        /* Decoding reads the cache in place; prefill (and multi-query
         * decoding) reads each tile back to fp32 once for all its columns
         * (dequant_rows). */
        t.path = t.cols <= ROWS_MAX ? PATH_QUANT : PATH_WIDEN;
    else if (kv16 && t.cols <= ROWS_MAX)
        t.path = PATH_ROWS16;
    else if (p->dtype == ATTN_DTYPE_BF16 && p->kv_dtype == ATTN_DTYPE_BF16 && kn &&
             kn->bf16_dot)
        t.path = PATH_BF16;
    else if (kv16 && t.stream)
        /* Wide decoding tiles (multi-query): K widened among qk's FMAs and
         * V read in place by pv16, not both widened a tile at a time (on
         * the 2-core Zen 5 EPYC, Hkv = 1, Nq = 1, Nk = 32K, 5 interleaved
         * processes: 1.06x at B = 1, 1.09-1.13x at B = 8). */
        t.path = PATH_ROWS16;
    else if (kv16)
        t.path = PATH_WIDEN;
    /* bf16 Q and K on the CPU's bf16 dot products: twice the fp32 rate */
    const bool narrow = t.cols <= ROWS_MAX;
    const bool bf16_rows = t.path == PATH_ROWS16 && narrow && p->dtype == ATTN_DTYPE_BF16 &&
                           p->kv_dtype == ATTN_DTYPE_BF16 && kn && kn->bf16_dot;
    t.dots = t.path != PATH_BF16 &&
             (t.cols <= DOTS_MAX || bf16_rows ||
              (t.path == PATH_ROWS16 && narrow && p->kv_dtype == ATTN_DTYPE_FP16));
    t.widen_k = (t.path == PATH_ROWS16 || t.path == PATH_QUANT) && !t.dots;
    /* bf16 K on the outer product: read in place by qk_kbf16 where the
     * table says it is the faster (kernels.h, attn_kernels.kbf16), or where
     * a test asks for it (attn_tiled_kbf16); the scores are the same bits. */
    const int kbf16_mode = atomic_load(&tiled_kbf16_mode);
    t.kbf16 = t.widen_k && t.path == PATH_ROWS16 && p->kv_dtype == ATTN_DTYPE_BF16 && kn &&
              (kbf16_mode > 0 || (kbf16_mode == 0 && kn->kbf16));
    t.widen_k = t.widen_k && !t.kbf16;
    t.rows_dot = t.dots && bf16_rows;
    /* and its P.V too where the table says (pv_rows_bf16: P rounded to
     * bf16, as the prefill's bf16 path rounds it), or a test asks */
    const int pv_mode = atomic_load(&tiled_pv_bf16_mode);
    t.rows_pv = t.rows_dot && (pv_mode > 0 || (pv_mode == 0 && kn->pv_rows));
    t.lazy = (t.path == PATH_FP32 || t.path == PATH_WIDEN) && !t.dots && !t.stream && kn &&
             kn->qk_exp && !atomic_load(&tiled_lazy_off);
    /* Q in q8_0 against a q8_0 or q4_0 K: Q.K^T in integers where the CPU
     * has int8 dot products (on the 2-core Zen 5 EPYC, bench_kernels' 48
     * keys of d = 128, 4 queries: 1.5x qk_rows_q for q8_0, 1.4x for q4_0);
     * elsewhere the fp32 path, which takes Q's fp32 values as any Q's. */
    t.i8_dot = t.dots && t.path == PATH_QUANT && p->dtype == ATTN_DTYPE_Q8_0 &&
               (p->kv_dtype == ATTN_DTYPE_Q8_0 || p->kv_dtype == ATTN_DTYPE_Q4_0) && kn &&
               kn->int8_dot;
    t.blocks = (long)p->batch * attn_kv_heads(p) * ((p->seq_q + t.br - 1) / t.br);
    int key_hi;
    tiled_key_span(p, &t.key_lo, &key_hi);
    t.splits = cfg->splits > 0 ? cfg->splits : auto_splits(t.blocks, key_hi - t.key_lo, t.cols);
    /* Split blocks and decoding tiles (qk_rows) are one query block per
     * item (of one K/V head, or of each of the item's heads). */
    t.sb = 1;
    if (t.splits == 1 && t.cols > ROWS_MAX)
        t.sb = cfg->tile_sb > 0 ? cfg->tile_sb : auto_sb(p, &t);
    t.heads = heads_per_item(p, &t, tokens, page);
    t.head_groups = (attn_kv_heads(p) + t.heads - 1) / t.heads;
    const long nqb = (p->seq_q + t.br - 1) / t.br;
    t.items = (long)p->batch * t.head_groups * ((nqb + t.sb - 1) / t.sb);
    /* Chunks of equal length from the span's first key, a multiple of 16
     * keys (a chunk's last tile may be short); with more chunks than that
     * allows the last ones are empty and merge as nothing. Whole tiles
     * made them unequal: multi-query decoding (H = 32, Hkv = 1, d = 128)
     * tiles 192 keys, so 8 chunks of Nk = 8K took 1152 keys each but the
     * last (128): one thread of two ran 4 whole chunks, the other 3 and
     * that one. On the 2-core Intel Xeon (Skylake-SP), 2 threads, B = 1,
     * Nk = 8K (in L3), interleaved rounds: 744-766 us against 792-821 (fp32
     * K/V, 6 rounds), medians 874 against 939 (bf16, 5 rounds); from memory
     * (Nk = 16K to 128K, B = 1 and 8) inside the noise either way. */
    const long per = ((long)key_hi - t.key_lo + t.splits - 1) / t.splits;
    t.chunk = (int)round_up((size_t)(per > 0 ? per : 1), 16);
    t.chunks_even = true;
    for (int b = 0; b < p->batch && t.chunks_even; b++) {
        int l0, h0, l1, h1;
        attn_visible_range(p, b, 0, &l0, &h0);
        attn_visible_range(p, b, p->seq_q - 1, &l1, &h1);
        t.chunks_even = l0 == t.key_lo && l1 == t.key_lo && h0 == key_hi && h1 == key_hi;
    }
    t.part_floats = t.splits > 1 ? round_up(2 * (size_t)t.brp + (size_t)t.cols * p->d_v, 16) : 0;
    t.sub_bytes = sub_bytes(p, &t);
    t.tile_bytes = tile_bytes(p, &t);
    t.thread_bytes = st_bytes(&t) + t.tile_bytes + (size_t)t.sb * t.heads * t.sub_bytes;
    return t;
}

int attn_tiled_auto_splits(const attn_problem *p, int tile_q, int tile_kv)
{
    const attn_config cfg = { .threads = 1, .tile_q = tile_q, .tile_kv = tile_kv };
    return tiled_make_plan(p, &cfg, 0, false).splits;
}

size_t tiled_parts_bytes(const tiled_plan *t)
{
    return t->splits > 1 ? (size_t)t->blocks * t->splits * t->part_floats * sizeof(float) : 0;
}

/* The score tile of thread tid, shared by its item's blocks. */
float *tiled_thread_st(const tiled_state *s, int tid)
{
    return (float *)(s->scratch + (size_t)tid * s->stride);
}

/* Thread tid's K/V tile area (tile_bytes; NULL on PATH_FP32): PATH_WIDEN's
 * K [bc][dk] then V [bc][dv] in fp32; widen_k's K [bc][dk] in fp32;
 * PATH_BF16's V pairs [bc/2][dv] then P pairs [bc/2][brp]. */
unsigned char *tiled_thread_tile(const tiled_state *s, int tid)
{
    if (!s->plan.tile_bytes)
        return NULL;
    return s->scratch + (size_t)tid * s->stride + st_bytes(&s->plan);
}

/* The state of block u (< sb heads) of thread tid's item. */
scratch tiled_thread_scratch(const tiled_state *s, int tid, int u)
{
    const tiled_plan *t = &s->plan;
    unsigned char *at = s->scratch + (size_t)tid * s->stride + st_bytes(t) +
                        t->tile_bytes + (size_t)u * t->sub_bytes;
    scratch w;
    w.qt = (float *)at;
    at += qt_bytes(&s->h.p, t);
    w.acc = (float *)at;
    at += acc_bytes(&s->h.p, t);
    w.qr = (float *)at;
    at += qr_bytes(&s->h.p, t);
    w.m = (float *)at;
    w.l = (float *)(at + vec_bytes(t));
    w.alpha = (float *)(at + 2 * vec_bytes(t));
    w.end = (int *)(at + 3 * vec_bytes(t));
    w.beg = (int *)(at + 4 * vec_bytes(t));
    w.pos = (float *)(at + 5 * vec_bytes(t));
    w.slope = (float *)(at + 6 * vec_bytes(t));
    w.mx = (float *)(at + 7 * vec_bytes(t));
    w.sum = (float *)(at + 8 * vec_bytes(t));
    return w;
}

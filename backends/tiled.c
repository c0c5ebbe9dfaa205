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
 * with a small batch, each block's keys are cut into chunks computed as
 * separate items; each leaves its unnormalized O, m and l, and a merge adds
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
 * ROWS_MAX columns) read 16-bit K and V in place, widened to fp32 in
 * registers as they stream by (qk_rows16, pv16), or for bf16 Q and K with
 * AVX512_BF16 Q.K^T on the dot products (qk_rows_bf16): half the bytes of
 * fp32.
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
 * stride. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host.h"
#include "kernels/half.h"
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
 * whose 16 query lanes they would leave mostly empty or, at 16 columns,
 * fill with one broadcast per FMA. 16 rather than 8: decoding H = 32,
 * Hkv = 8, d = 128, Nq = 4 (16 columns), Nk = 32K on the 2-core EPYC ran
 * in 19.9 ms against 22.6 (medians of 3 interleaved processes each) with
 * qk_rows' 4 x 4 blocks. */
#define ROWS_MAX 16

static atomic_int planted;
static atomic_bool counting;
static atomic_long tiles_seen;

void attn_tiled_plant(int bug)
{
    atomic_store(&planted, bug);
}

void attn_tiled_count_tiles(bool on)
{
    atomic_store(&tiles_seen, 0);
    atomic_store(&counting, on);
}

long attn_tiled_tiles(void)
{
    return atomic_load(&tiles_seen);
}

/* How the inputs reach the kernels. */
typedef enum tiled_path {
    PATH_FP32 = 0,       /* fp32 storage, read in place */
    PATH_WIDEN,          /* 16-bit storage widened to fp32 a tile at a time */
    PATH_BF16,           /* bf16 dot products on bf16 storage */
    PATH_ROWS16,         /* decoding tiles (qk_rows) on 16-bit K/V, widened in registers */
} tiled_path;

typedef struct tiled_plan {
    tiled_path path;
    bool rows_dot;       /* PATH_ROWS16 with bf16 Q and K on bf16 dot products */
    int br, bc;          /* queries of each head per block, keys per tile */
    int group;           /* G: query heads per K/V head, one work item together */
    int cols;            /* G * br: the columns of a tile */
    int brp;             /* cols rounded up to 16: the stride of the packed tiles */
    int sb;              /* query blocks per work item, sharing each pass over K/V */
    int splits;          /* key chunks per block; 1: unsplit */
    int chunk;           /* keys per chunk, a multiple of bc */
    long blocks;         /* B * Hkv * ceil(Nq / br) */
    long items;          /* B * Hkv * ceil(ceil(Nq / br) / sb): work items unsplit */
    size_t part_floats;  /* one (block, chunk)'s partial result: m, l [brp], O [cols][dv] */
    size_t sub_bytes;    /* one query block's share of a thread's scratch */
    size_t tile_bytes;   /* the converted K/V tile (PATH_WIDEN: K, V in fp32) or the
                            packed pairs (PATH_BF16: V^T pairs, P pairs) */
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

/* Per-thread scratch, in this order: S^T [bc][brp], the tile's converted
 * or packed K/V (tile_bytes), then for each of the sb query blocks of a
 * work item: Q^T [dk][brp], the accumulator [cols][dv], Q's rows
 * [max(ROWS_MAX, br)][dk] (for qk_rows, and for 16-bit Q widened before
 * packing), m, l, alpha [brp] floats, end [brp] ints, and for the
 * modifiers beg [brp] ints, pos, slope [brp] floats. */
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

static size_t qr_bytes(const attn_problem *p, const tiled_plan *t)
{
    const size_t rows = p->dtype != ATTN_DTYPE_FP32 && t->br > ROWS_MAX ? (size_t)t->br
                                                                         : ROWS_MAX;
    return round_up(rows * p->d_k * sizeof(float), ALIGN);
}

static size_t tile_bytes(const attn_problem *p, const tiled_plan *t)
{
    const size_t pairs = ((size_t)t->bc + 1) / 2;
    if (t->path == PATH_WIDEN)
        return round_up((size_t)t->bc * (p->d_k + p->d_v) * sizeof(float), ALIGN);
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
    return qt_bytes(p, t) + acc_bytes(p, t) + qr_bytes(p, t) + 7 * vec_bytes(t);
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
#define SB_MAX 8
#define SB_ITEMS 16

static int auto_sb(const attn_problem *p, const tiled_plan *t)
{
    const long fit = l2_bytes() / (long)sub_bytes(p, t);
    const long spare = t->blocks / SB_ITEMS;
    long sb = fit < spare ? fit : spare;
    sb = sb < SB_MAX ? sb : SB_MAX;
    return sb > 1 ? (int)sb : 1;
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
 *  - decoding (tiles of at most ROWS_MAX columns): the score tile and the
 *    K and V rows it touches in half of L1 (48 at d = 128: see
 *    kernels_avx512.c's PF_KEYS for why short tiles stream better).
 * Neither they nor the chunks depend on the thread count, so neither does
 * the output. */
static tiled_plan tiled_make_plan(const attn_problem *p, const attn_config *cfg)
{
    tiled_plan t;
    const attn_kernels *kn = attn_kernels_for(cfg->isa);
    t.group = attn_group(p);
    t.br = cfg->tile_q > 0 ? cfg->tile_q : (64 / t.group > 1 ? 64 / t.group : 1);
    t.br = t.br < p->seq_q ? t.br : p->seq_q > 0 ? p->seq_q : 1;
    t.cols = t.group * t.br;
    if (cfg->tile_kv > 0) {
        t.bc = cfg->tile_kv;
    } else if (t.cols <= ROWS_MAX) {
        const long per_key = (long)t.cols * (long)sizeof(float) +
                             (long)(p->d_k + (p->mods.v_from_k ? 0 : p->d_v)) *
                                 (long)attn_dtype_size(p->kv_dtype);
        const long bc = l1d_bytes() / 2 / per_key / 48 * 48;
        t.bc = bc < 48 ? 48 : bc > 192 ? 192 : (int)bc;
    } else {
        const long per_key = (long)(p->d_k + p->d_v) * (long)sizeof(float);
        const long bc = l2_bytes() / 4 / per_key / 48 * 48;
        t.bc = bc < 48 ? 48 : bc > 192 ? 192 : (int)bc;
    }
    t.brp = (int)round_up((size_t)t.cols, 16);
    t.path = PATH_FP32;
    if (p->kv_dtype != ATTN_DTYPE_FP32 && t.cols <= ROWS_MAX)
        t.path = PATH_ROWS16;
    else if (p->dtype == ATTN_DTYPE_BF16 && p->kv_dtype == ATTN_DTYPE_BF16 && kn &&
             kn->bf16_dot)
        t.path = PATH_BF16;
    else if (p->kv_dtype != ATTN_DTYPE_FP32)
        t.path = PATH_WIDEN;
    t.rows_dot = t.path == PATH_ROWS16 && p->dtype == ATTN_DTYPE_BF16 &&
                 p->kv_dtype == ATTN_DTYPE_BF16 && kn && kn->bf16_dot;
    t.blocks = (long)p->batch * attn_kv_heads(p) * ((p->seq_q + t.br - 1) / t.br);
    t.splits = cfg->splits > 0 ? cfg->splits : auto_splits(t.blocks, p->seq_kv);
    /* Split blocks and decoding tiles (qk_rows) are one block per item. */
    t.sb = 1;
    if (t.splits == 1 && t.cols > ROWS_MAX)
        t.sb = cfg->tile_sb > 0 ? cfg->tile_sb : auto_sb(p, &t);
    const long nqb = (p->seq_q + t.br - 1) / t.br;
    t.items = (long)p->batch * attn_kv_heads(p) * ((nqb + t.sb - 1) / t.sb);
    /* Chunks of whole key tiles; with more chunks than tiles the last ones
     * are empty and merge as nothing. */
    const long per = ((long)p->seq_kv + t.splits - 1) / t.splits;
    t.chunk = (int)round_up((size_t)(per > 0 ? per : 1), (size_t)t.bc);
    t.part_floats = t.splits > 1 ? round_up(2 * (size_t)t.brp + (size_t)t.cols * p->d_v, 16) : 0;
    t.sub_bytes = sub_bytes(p, &t);
    t.tile_bytes = tile_bytes(p, &t);
    t.thread_bytes = st_bytes(&t) + t.tile_bytes + (size_t)t.sb * t.sub_bytes;
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
        (cfg->tile_q > 4096 || cfg->tile_kv > 4096) || cfg->splits < 0 || cfg->tile_sb < 0 ||
        cfg->tile_sb > SB_MAX)
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

/* One query block's running state. */
typedef struct scratch {
    float *qt, *acc, *qr, *m, *l, *alpha;
    int *end;
    int *beg;                /* the window's first key of each column */
    float *pos, *slope;      /* ALiBi: each column's i' and slope (log2 units) */
} scratch;

/* The score tile of thread tid, shared by its item's blocks. */
static float *thread_st(const tiled_state *s, int tid)
{
    return (float *)(s->scratch + (size_t)tid * s->plan.thread_bytes);
}

/* Thread tid's K/V tile area (tile_bytes; NULL on PATH_FP32): PATH_WIDEN's
 * K [bc][dk] then V [bc][dv] in fp32; PATH_BF16's V pairs [bc/2][dv] then
 * P pairs [bc/2][brp]. */
static unsigned char *thread_tile(const tiled_state *s, int tid)
{
    if (!s->plan.tile_bytes)
        return NULL;
    return s->scratch + (size_t)tid * s->plan.thread_bytes + st_bytes(&s->plan);
}

/* The state of block u (< sb) of thread tid's item. */
static scratch thread_scratch(const tiled_state *s, int tid, int u)
{
    const tiled_plan *t = &s->plan;
    unsigned char *at = s->scratch + (size_t)tid * t->thread_bytes + st_bytes(t) +
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
    return w;
}

/* A block: batch item b, K/V head g, queries [i0, i0 + nq) of each of the
 * group's heads. Column c of its tiles is query i0 + c % nq of the group's
 * head c / nq. */
typedef struct block {
    int b, g, i0, nq;
} block;

/* The blocks of work item `item`, into k[0..sb); returns how many (the
 * last item of a head may have fewer). Unsplit, items are runs of sb
 * consecutive query blocks; split, one block each (sb = 1). */
static int item_blocks(const tiled_state *s, long item, block *k)
{
    const attn_problem *p = &s->h.p;
    const tiled_plan *t = &s->plan;
    const long nqb = (p->seq_q + t->br - 1) / t->br, nit = (nqb + t->sb - 1) / t->sb;
    /* The last query blocks of a head first: under a causal mask they are
     * the longest, so handing them out first (dynamic, one at a time)
     * leaves the short ones to fill in at the end. */
    const long r = item / nit, first = (nit - 1 - item % nit) * t->sb;
    int n = 0;
    for (long qb = first; qb < first + t->sb && qb < nqb; qb++, n++) {
        k[n].b = (int)(r / attn_kv_heads(p));
        k[n].g = (int)(r % attn_kv_heads(p));
        k[n].i0 = (int)(qb * t->br);
        k[n].nq = p->seq_q - k[n].i0 < t->br ? p->seq_q - k[n].i0 : t->br;
    }
    return n;
}

static block block_of(const tiled_state *s, long item)
{
    block k[1] = { { 0, 0, 0, 0 } };
    item_blocks(s, item, k);
    return k[0];
}

/* The query row of column c: its offset in Q (rows of dk) and O (rows of dv). */
static size_t column_row(const attn_problem *p, const block *k, int c)
{
    const int h = k->g * attn_group(p) + c / k->nq;
    return ((size_t)k->b * p->heads + h) * p->seq_q + (size_t)(k->i0 + c % k->nq);
}

/* Decoding tiles (at most ROWS_MAX columns): the next tile's K and V rows
 * towards L2 while this one is computed. Decoding reads each row once, and
 * the hardware prefetchers alone leave that stream well below the memory
 * bandwidth (kernels_avx512.c has the numbers, with its own prefetch
 * further ahead). Prefill tiles go without: a whole tile's prefetches at
 * once (1536 at 192 keys, d = 64) held 1.6% of the samples of a causal
 * N = 1K run on one thread, and without them whole runs were as fast or
 * faster (B = 1, H = 8, 2 threads, medians of interleaved processes:
 * N = 1K causal d = 64 185 against 176 GFLOP/s over 4 each; N = 32K
 * d = 64 201 against 196 over 2 each), the hardware prefetchers following
 * the K/V stream well enough when a tile serves sb x cols queries. */
static void prefetch_rows(const void *k, const void *v, int n, int dk, int dv, size_t es)
{
    const char *a = k, *b = v;
    const size_t kb = (size_t)n * dk * es, vb = (size_t)n * dv * es;
    for (size_t x = 0; x < kb; x += 64)
        __builtin_prefetch(a + x, 0, 1);
    for (size_t x = 0; x < vb; x += 64)
        __builtin_prefetch(b + x, 0, 1);
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
    const uint16_t *kh, *vh;      /* K rows in bf16 (PATH_BF16); K, V rows (PATH_ROWS16) */
    const uint32_t *vp, *pp;      /* V and P in pairs of keys (PATH_BF16) */
} tile_ops;

/* Q.K^T of keys [j, j + rows) against columns [c0, c0 + cols) of block w. */
static void qk_part(const tiled_state *s, float *st, const tile_ops *x, const scratch *w, int j,
                    int c0, int rows, int cols)
{
    const int dk = s->h.p.d_k, brp = s->plan.brp;
    if (s->plan.path == PATH_BF16)
        s->h.k->qk_bf16(st + (size_t)j * brp + c0, brp, x->kh + (size_t)j * dk, dk,
                        (const uint32_t *)w->qt + c0, brp, rows, cols, dk, s->qscale);
    else
        s->h.k->qk(st + (size_t)j * brp + c0, brp, x->kb + (size_t)j * dk, dk, w->qt + c0, brp,
                   rows, cols, dk);
}

/* P.V of keys [0, n) into the accumulator rows of columns [c, c + r). */
static void pv_part(const tiled_state *s, const float *st, const tile_ops *x, const scratch *w,
                    int c, int r, int n)
{
    const int dv = s->h.p.d_v, vs = attn_v_stride(&s->h.p), brp = s->plan.brp;
    if (s->plan.path == PATH_BF16)
        s->h.k->pv_bf16(w->acc + (size_t)c * dv, dv, x->pp + c, brp, x->vp, dv, w->alpha + c, r,
                        n, dv);
    else if (s->plan.path == PATH_ROWS16)
        s->h.k->pv16(w->acc + (size_t)c * dv, dv, st + c, brp, x->vh, vs, w->alpha + c, r, n, dv,
                     s->h.p.kv_dtype == ATTN_DTYPE_BF16);
    else
        s->h.k->pv(w->acc + (size_t)c * dv, dv, st + c, brp, x->vb,
                   s->plan.path == PATH_WIDEN ? dv : vs, w->alpha + c, r, n, dv);
}

/* Q.K^T and P.V of a tile that a mask cuts (end[c]: the keys column c
 * sees), without the work the mask throws away: runs of TILE_ROWS keys
 * only for the 16-column strips from the first that sees any of them on,
 * and each run of TILE_ROWS queries only over the keys the last of them
 * sees. Scores left out are never read as visible, and the weights P.V
 * skips are the softmax's zeros, so the result is the one the whole tile
 * would give; on the diagonal of a causal mask this halves the tile. (In
 * pairs of keys, an odd count's last pair adds a key whose weight is 0.) */
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
        if (atomic_load_explicit(&planted, memory_order_relaxed) == ATTN_TILED_PLANT_CUT_SHORT)
            e--;
        pv_part(s, st, x, w, c, r, e < n ? e : n);
    }
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
                            const scratch *w, int n, int nc, const int *end, const int *beg,
                            int j0)
{
    const int dv = s->h.p.d_v, vs = attn_v_stride(&s->h.p), brp = s->plan.brp;
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
        const int bug = atomic_load_explicit(&planted, memory_order_relaxed);
        int hi;
        attn_visible_range(p, k->b, i, &w->beg[c], &hi);
        if (bug == ATTN_TILED_PLANT_WINDOW_EARLY && w->beg[c] > 0)
            w->beg[c]--;
        w->pos[c] = (float)(i + p->seq_kv - p->seq_q);
        const int hs = bug == ATTN_TILED_PLANT_ALIBI_HEAD ? (h + 1) % p->heads : h;
        w->slope[c] = p->mods.alibi ? (float)(attn_alibi_slope(p->heads, hs) * ATTN_LOG2E) : 0.0f;
    }
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

/* Block u's Q: packed as Q^T (scaled, fp32; or in bf16 pairs, unscaled, on
 * PATH_BF16), or for tiles of at most ROWS_MAX columns as scaled rows (qr).
 * 16-bit Q is widened to fp32 first, exactly. */
static void load_q(const tiled_state *s, const scratch *w, const block *k)
{
    const attn_problem *p = &s->h.p;
    const attn_kernels *kn = s->h.k;
    const int dk = p->d_k, brp = s->plan.brp, nc = s->plan.group * k->nq;
    const bool q16 = p->dtype != ATTN_DTYPE_FP32, bf16 = p->dtype == ATTN_DTYPE_BF16;
    const float qscale = s->qscale;
    if (s->plan.rows_dot) {
        /* bf16 rows as they are: qk_rows_bf16 scales its sums. */
        for (int c = 0; c < nc; c++)
            memcpy((uint16_t *)w->qr + (size_t)c * dk, s->h.t.q16 + column_row(p, k, c) * dk,
                   (size_t)dk * sizeof(uint16_t));
        return;
    }
    if (s->plan.path != PATH_BF16 && nc <= ROWS_MAX) {
        for (int c = 0; c < nc; c++) {
            const size_t row = column_row(p, k, c);
            float *qr = w->qr + (size_t)c * dk;
            if (q16)
                kn->cvt_rows(qr, dk, s->h.t.q16 + row * dk, dk, 1, dk, bf16);
            const float *q = q16 ? qr : s->h.t.q + row * dk;
            for (int x = 0; x < dk; x++)
                qr[x] = q[x] * qscale;
        }
        return;
    }
    /* Each head's nq queries are consecutive rows of Q. */
    for (int c = 0; c < nc; c += k->nq) {
        const size_t row = column_row(p, k, c);
        if (s->plan.path == PATH_BF16) {
            kn->pack_qt_bf16((uint32_t *)w->qt + c, brp, s->h.t.q16 + row * dk, dk, k->nq, dk);
        } else if (q16) {
            kn->cvt_rows(w->qr, dk, s->h.t.q16 + row * dk, dk, k->nq, dk, bf16);
            kn->pack_qt(w->qt + c, brp, w->qr, dk, k->nq, dk, qscale);
        } else {
            kn->pack_qt(w->qt + c, brp, s->h.t.q + row * dk, dk, k->nq, dk, qscale);
        }
    }
}

/* Keys [j_lo, j_hi) of the nb blocks k[] (all of one batch item and K/V
 * head) into their accumulators w[u].acc [cols][dv] (unnormalized) and
 * statistics w[u].m, w[u].l (log2 units). Each key tile is loaded (and on
 * the 16-bit paths widened or packed) once and used by every block that
 * sees any of it, one block after the other. */
static void tiled_keys(const tiled_state *s, float *st, unsigned char *tile, const scratch *w,
                       const block *k, int nb, int j_lo, int j_hi)
{
    const attn_problem *p = &s->h.p;
    const tiled_plan *t = &s->plan;
    const attn_kernels *kn = s->h.k;
    const int dk = p->d_k, dv = p->d_v, brp = t->brp;
    size_t g = (size_t)k->b * attn_kv_heads(p) + (size_t)k->g;
    if (atomic_load_explicit(&planted, memory_order_relaxed) == ATTN_TILED_PLANT_WRONG_KV_HEAD)
        g = (size_t)k->b * attn_kv_heads(p) + (size_t)(k->g + 1) % (size_t)attn_kv_heads(p);
    const bool kv16 = p->kv_dtype != ATTN_DTYPE_FP32, bf16 = p->kv_dtype == ATTN_DTYPE_BF16;
    const size_t es = attn_dtype_size(p->kv_dtype);
    const int vs = attn_v_stride(p);   /* V's rows: dk apart when V is read from K */
    const float *kk = kv16 ? NULL : s->h.t.k + g * p->seq_kv * dk;
    const size_t shift = p->mods.v_from_k && atomic_load_explicit(&planted, memory_order_relaxed) ==
                                                 ATTN_TILED_PLANT_V_SHIFTED;
    const float *vv = kv16 ? NULL : s->h.t.v + g * p->seq_kv * vs + shift;
    const uint16_t *kh = kv16 ? s->h.t.k16 + g * p->seq_kv * dk : NULL;
    const uint16_t *vh = kv16 ? s->h.t.v16 + g * p->seq_kv * vs + shift : NULL;
    const float cap = p->mods.softcap > 0 ? (float)(p->mods.softcap * ATTN_LOG2E) : 0.0f;
    const bool scores_mod = cap > 0 || p->mods.alibi;
    const bool count = atomic_load_explicit(&counting, memory_order_relaxed);
    const unsigned char *kbase = kv16 ? (const void *)kh : (const void *)kk;
    const unsigned char *vbase = kv16 ? (const void *)vh : (const void *)vv;

    /* Visible keys are an interval per query, both ends growing with i:
     * keys in [wbig[u], lo[u]) are visible to every query of block u, none
     * at or past hi[u] or below wlo[u] is (without a window, an interval is
     * a prefix: wlo = wbig = 0). Blocks come in increasing query order, so
     * the last sees most. */
    int lo[SB_MAX], hi[SB_MAX], wlo[SB_MAX], wbig[SB_MAX], top = j_lo, first = j_hi;
    for (int u = 0; u < nb; u++) {
        const int nc = t->group * k[u].nq;
        load_q(s, &w[u], &k[u]);
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
    const size_t pairs = ((size_t)t->bc + 1) / 2;
    for (int j0 = j_first; j0 < top; j0 += t->bc) {
        const int nt = top - j0 < t->bc ? top - j0 : t->bc;
        if (t->cols <= ROWS_MAX)
            prefetch_rows(kbase + (size_t)(j0 + nt) * dk * es,
                          vbase + (size_t)(j0 + nt) * vs * es,
                          top - j0 - nt < t->bc ? top - j0 - nt : t->bc, dk,
                          p->mods.v_from_k ? 0 : dv, es);
        tile_ops x = { 0 };
        bool finite = true;
        if (t->path == PATH_FP32) {
            x.kb = kk + (size_t)j0 * dk;
            x.vb = vv + (size_t)j0 * vs;
        } else if (t->path == PATH_ROWS16) {
            x.kh = kh + (size_t)j0 * dk;
            x.vh = vh + (size_t)j0 * vs;
        } else if (t->path == PATH_WIDEN) {
            float *kf = (float *)tile, *vf = kf + (size_t)t->bc * dk;
            kn->cvt_rows(kf, dk, kh + (size_t)j0 * dk, dk, nt, dk, bf16);
            kn->cvt_rows(vf, dv, vh + (size_t)j0 * vs, vs, nt, dv, bf16);
            x.kb = kf;
            x.vb = vf;
        } else {
            uint32_t *vp = (uint32_t *)tile;
            kn->pack_v_bf16(vp, dv, vh + (size_t)j0 * vs, vs, nt, dv);
            x.kh = kh + (size_t)j0 * dk;
            x.vp = vp;
            x.pp = (const uint32_t *)(tile + round_up(pairs * dv * sizeof(uint32_t), ALIGN));
        }
        bool finite_known = false;
        for (int u = 0; u < nb; u++) {
            if (j0 >= hi[u])
                continue;
            const scratch *wu = &w[u];
            const int n = hi[u] - j0 < t->bc ? hi[u] - j0 : t->bc, nc = t->group * k[u].nq;
            if (j0 + n <= wlo[u])
                continue;   /* left of every window of the block */
            if (count)
                atomic_fetch_add_explicit(&tiles_seen, 1, memory_order_relaxed);
            /* Left of some column's window: masked by the mods kernel. */
            const bool left = p->mods.window && j0 < wbig[u];
            const int *end = NULL;
            if (j0 + n > lo[u]) {
                for (int c = 0; c < nc; c++)
                    wu->end[c] = attn_visible_end(p, k[u].b, k[u].i0 + c % k[u].nq) - j0;
                end = wu->end;
            }
            if (t->rows_dot)
                kn->qk_rows_bf16(st, brp, x.kh, dk, (const uint16_t *)wu->qr, dk, n, nc, dk,
                                 s->qscale);
            else if (t->path == PATH_ROWS16)
                kn->qk_rows16(st, brp, x.kh, dk, wu->qr, dk, n, nc, dk, bf16);
            else if (t->path != PATH_BF16 && nc <= ROWS_MAX)
                kn->qk_rows(st, brp, x.kb, dk, wu->qr, dk, n, nc, dk);
            else if (end)
                qk_cut(s, st, &x, wu, n, nc, end);
            else
                qk_part(s, st, &x, wu, 0, 0, n, nc);
            if (scores_mod || left)
                kn->mods(st, brp, n, nc, j0, cap, p->mods.alibi ? wu->slope : NULL, wu->pos,
                         left ? wu->beg : NULL);
            kn->softmax(st, brp, n, nc, end, wu->m, wu->l, wu->alpha);
            if (left)
                tiled_unmask(st, brp, n, nc, j0, wu);
            if (t->path == PATH_BF16)
                kn->pack_p_bf16((uint32_t *)x.pp, brp, st, brp, n, nc);
            const bool cut = end || left;
            if (cut && !finite_known) {
                /* Once per tile: over the keys of the longest block (V's
                 * rows whole: with V read from K, K's other columns too). */
                const int span = top - j0 < t->bc ? top - j0 : t->bc;
                finite = t->path == PATH_BF16 || t->path == PATH_ROWS16
                             ? rows_finite16(vh + (size_t)j0 * vs, (size_t)span, (size_t)vs, bf16)
                             : attn_rows_finite(x.vb, (size_t)span,
                                                (size_t)(t->path == PATH_WIDEN ? dv : vs));
                finite_known = true;
            }
            const int *beg = left ? wu->beg : NULL;
            if (!cut || (finite && !end)) {
                pv_part(s, st, &x, wu, 0, nc, n);
            } else if (finite) {
                pv_cut(s, st, &x, wu, n, nc, end);
            } else if (t->path == PATH_BF16) {
                pv_columns_bf16(s, st, vh + (size_t)j0 * vs, wu, n, nc, end, beg, j0);
            } else if (t->path == PATH_ROWS16) {
                for (int c = 0; c < nc; c++) {
                    int b, e;
                    col_span(end, beg, c, n, j0, &b, &e);
                    kn->pv16(wu->acc + (size_t)c * dv, dv, st + (size_t)b * brp + c, brp,
                             x.vh + (size_t)b * vs, vs, wu->alpha + c, 1, e - b, dv, bf16);
                }
            } else {
                /* A NaN or Inf in V: each column over its own visible keys. */
                const int xs = t->path == PATH_WIDEN ? dv : vs;
                for (int c = 0; c < nc; c++) {
                    int b, e;
                    col_span(end, beg, c, n, j0, &b, &e);
                    kn->pv(wu->acc + (size_t)c * dv, dv, st + (size_t)b * brp + c, brp,
                           x.vb + (size_t)b * xs, xs, wu->alpha + c, 1, e - b, dv);
                }
            }
        }
    }
}

/* The whole of work item `item`: its blocks' rows of O, normalized. */
static void tiled_item(const tiled_state *s, float *st, unsigned char *tile, const scratch *w,
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
            float *row = s->h.t.o + column_row(p, &k[u], c) * dv;
            const float bug = atomic_load_explicit(&planted, memory_order_relaxed) ==
                                      ATTN_TILED_PLANT_SINK_VALUE && l > 0.0f ? sink : 0.0f;
            for (int x = 0; x < dv; x++)
                row[x] = (a[x] + bug) * inv;
        }
}

/* Chunk x of block `item`: its partial result, m and l beside O unnormalized. */
static void tiled_chunk(const tiled_state *s, float *st, unsigned char *tile, const scratch *w,
                        long item, int x)
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
    tiled_keys(s, st, tile, w, &k, 1, j_lo, j_lo + t->chunk);
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
        l += sink_term(s, &k, c, m);
        const float inv = l > 0.0f || isnan(l) ? 1.0f / l : 0.0f;
        for (int e = 0; e < dv; e++)
            row[e] *= inv;
    }
}

/* Work items are runs of sb query blocks of one (batch, K/V head), or with
 * split-KV (block, chunk) pairs and then one merge per block. Each block
 * is computed whole by one thread in a fixed order, over chunks fixed by
 * the problem, so the output is bitwise the same for any thread count. */
static attn_status tiled_run(void *state)
{
    tiled_state *s = state;
    const tiled_plan *t = &s->plan;
    const long items = t->items, splits = t->splits;

#ifdef _OPENMP
#pragma omp parallel num_threads(s->h.threads)
#endif
    {
        const int tid = attn_thread_id();
        float *st = thread_st(s, tid);
        unsigned char *tile = thread_tile(s, tid);
        scratch w[SB_MAX];
        for (int u = 0; u < t->sb; u++)
            w[u] = thread_scratch(s, tid, u);
        if (splits == 1) {
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (long it = 0; it < items; it++)
                tiled_item(s, st, tile, w, it);
        } else {
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (long it = 0; it < items * splits; it++)
                tiled_chunk(s, st, tile, w, it / splits, (int)(it % splits));
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
    const attn_kernels *k = attn_kernels_best();
    snprintf(buf, sizeof(buf), "%s kernels%s", attn_isa_name(k->isa),
             k->bf16_dot ? " + bf16 dot products" : "");
    return buf;
}

const attn_backend attn_backend_tiled = {
    .name      = "tiled",
    .summary   = "fused FlashAttention-style tiles, online softmax, SIMD kernels",
    .dtypes    = ATTN_DTYPE_BIT(ATTN_DTYPE_BF16) | ATTN_DTYPE_BIT(ATTN_DTYPE_FP16),
    .mods      = ATTN_MOD_ALL,
    .supports  = tiled_supports,
    .prepare   = tiled_prepare,
    .bind      = attn_host_bind,
    .run       = tiled_run,
    .read      = attn_host_read,
    .release   = tiled_release,
    .workspace = tiled_workspace,
    .version   = tiled_version,
};

/* The tiled backend's pieces, shared by its files: the plan (plan.c: tile
 * sizes, split-KV, each thread's scratch), the key loop (keys.c) and the
 * backend around them (tiled.c). */
#ifndef ATTN_TILED_INTERNAL_H
#define ATTN_TILED_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "host.h"
#include "tiled/runs.h"
#include "tiled/tiled.h"

/* Tiles of at most this many columns are decoding's: the keys of a tile in
 * half of L1 rather than a quarter of L2 (plan.c), one block per work item,
 * and K and V streamed from memory once, prefetched ahead (keys.c). */
#define ROWS_MAX 16

/* Decoding tiles of at most this many columns take Q.K^T as dot products
 * along d (qk_rows: no lane of a vector is idle, but every score costs a
 * share of a horizontal sum); wider ones the outer product of qk on packed
 * Q^T (one query per lane: at 16 columns every lane busy, and no sums),
 * with 16-bit K widened to fp32 a tile at a time (widen_k), except that
 * bf16 Q and K on the CPU's bf16 dot products (twice the fp32 rate) keep
 * the dot products up to ROWS_MAX. In L1 and L2 (bench_kernels --bench,
 * 2-core EPYC, one thread, 48 keys, d = 128) qk_rows ran at 99-104
 * GFLOP/s for 4 to 32 columns, qk at 57 with 8 columns, 86 with 12 and 115
 * with 16 (peak 117). Whole runs (H = 32, d = 128, Nk = 32K, 2 threads,
 * alternating builds): 12 columns (H = 48, Hkv = 4) took 5.6 ms either way
 * with fp32 K/V, 5.0-5.1 against 5.8-5.9 as dot products with bf16 K/V,
 * and 4.1 against 5.8-5.9 with bf16 Q too; 16 columns (Hkv = 8, Nq = 4)
 * 12.7-13.6 ms as the outer product against 13.9-14.4 with fp32 K/V, the
 * same 12.6-13.0 with bf16 K/V, and 10.1-11.1 as dot products against
 * 12.8-12.9 with bf16 Q too. With the kernels prefetching a row at a time
 * instead of a burst per tile (keys.c), the 16-column fp32 case went from
 * 20.2 ms (dot products, burst) to 12.5-13.8. With fp16 K (fp32 Q), the
 * dot products again up to ROWS_MAX: on the 2-core Zen 5 EPYC (B = 1 and
 * 8, Hkv = 8, Nq = 4, Nk = 32K, 6 interleaved processes) they took 7.4
 * and 58.1 ms against 7.9 and 67.0 for the widened outer product; with
 * bf16 K the outer product on K widened a register tile's keys at a time
 * (keys.c, qk_widened) took 6.6 and 51.8 against 7.1 and 58.5 as dot
 * products (the same in L1: 165 GFLOP/s either way at 16 columns). */
#define DOTS_MAX 12

/* The alignment of every part of a thread's scratch. */
#define ALIGN 64

static inline size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

/* At most this many query blocks share a work item's pass over K/V
 * (plan.c's auto_sb says why). */
#define SB_MAX 8

/* The planted bug and the tile count of tiled.h's test hooks. */
extern atomic_int tiled_planted;
extern atomic_bool tiled_counting;
extern atomic_long tiled_tiles_seen;
extern atomic_long tiled_lazy_kept, tiled_lazy_raised, tiled_lazy_redone;
extern atomic_bool tiled_lazy_off;
extern atomic_int tiled_kbf16_mode;
extern atomic_int tiled_pv_bf16_mode;
extern atomic_int tiled_pf_keys_set;

/* How the inputs reach the kernels. */
typedef enum tiled_path {
    PATH_FP32 = 0,       /* fp32 storage, read in place */
    PATH_WIDEN,          /* 16-bit storage widened to fp32 a tile at a time; a
                            quantized cache's tiles read back to fp32 (dequant_rows) */
    PATH_BF16,           /* bf16 dot products on bf16 storage */
    PATH_ROWS16,         /* decoding on 16-bit K/V: tiles of at most ROWS_MAX columns,
                            and wider ones of one query block per K/V head (stream):
                            V read in place, K widened in registers by the dot
                            products or, for the outer product (widen_k), a register
                            tile's keys at a time */
    PATH_QUANT,          /* decoding from a quantized cache (tiles of at most ROWS_MAX
                            columns): V read in place at its stored width and read
                            back in registers (pv_q), K too up to DOTS_MAX columns
                            (qk_rows_q), wider ones read back a register tile's keys
                            at a time for the outer product (widen_k) */
} tiled_path;

typedef struct tiled_plan {
    tiled_path path;
    bool dots;           /* Q.K^T as dot products along d (qk_rows*): cols <= DOTS_MAX */
    bool rows_dot;       /* dots on PATH_ROWS16 with bf16 Q and K on bf16 dot products */
    bool rows_pv;        /* rows_dot's P.V on them too (pv_rows_bf16, P rounded to bf16)
                            where the kernel table says (attn_kernels.pv_rows) */
    bool i8_dot;         /* dots on PATH_QUANT with Q in q8_0 and a q8_0 or q4_0 K on
                            the CPU's int8 dot products (qk_rows_i8): Q's rows
                            quantized again, exactly, into its blocks */
    bool widen_k;        /* PATH_ROWS16 without dots: K widened to fp32 WIDEN_ROWS keys
                            at a time for qk (keys.c), V read in place by pv16; and
                            PATH_QUANT's K read back so */
    bool kbf16;          /* PATH_ROWS16 without dots, bf16 K: read in place by
                            qk_kbf16 (kernels.h), not widened; V by pv16 */
    bool stream;         /* one query block per batch item and K/V head (decoding):
                            K and V are read once, from memory, and the kernels that
                            read them in place prefetch ahead (the pf of qk, pv) */
    int pf_keys;         /* how far ahead they prefetch (keys.c, pf_rows): the kernel
                            table's attn_kernels.pf_keys, or attn_tiled_pf_keys's */
    bool lazy;           /* prefill's outer-product tiles in fp32 (read in place or
                            widened) where the ISA has qk_exp: the lazy rescale (keys.c) */
    int br, bc;          /* queries of each head per block, keys per tile */
    int group;           /* G: query heads per K/V head, one work item together */
    int cols;            /* G * br: the columns of a tile */
    int brp;             /* cols rounded up to 16: the stride of the packed tiles */
    int sb;              /* query blocks per work item, sharing each pass over K/V */
    int heads;           /* K/V heads per work item (plan.c, heads_per_item): each key
                            tile visited for all of them before the next; 1 but when
                            decoding from a cache stored a token at a time */
    int head_groups;     /* ceil(Hkv / heads): work items per batch item and query run */
    int splits;          /* key chunks per block; 1: unsplit */
    int chunk;           /* keys per chunk, a multiple of 16 */
    bool chunks_even;    /* every row sees the whole key span: the chunks are
                            equal work, handed out to the threads in runs */
    int key_lo;          /* the first key of chunk 0: the first any query sees */
    long blocks;         /* B * Hkv * ceil(Nq / br) */
    long items;          /* B * head_groups * ceil(ceil(Nq / br) / sb): work items
                            unsplit; split, each is cut into `splits` chunks */
    size_t part_floats;  /* one (block, chunk)'s partial result: m, l [brp], O [cols][dv] */
    size_t sub_bytes;    /* one query block's share of a thread's scratch */
    size_t tile_bytes;   /* the converted K/V tile (PATH_WIDEN: K, V in fp32; widen_k:
                            K in fp32) or the packed pairs (PATH_BF16: V^T pairs, P pairs) */
    size_t thread_bytes; /* one thread's scratch, a multiple of ALIGN */
} tiled_plan;

/* The backward's plan (backward.c): work units are (batch item, K/V head,
 * key chunk); the chunks, fixed by the problem, each leave dQ's share of
 * their keys, added in chunk order. */
typedef struct tiled_bwd {
    int br, bc, bcp;     /* queries per block, keys per block, bc rounded up to 16 */
    int chunks;          /* key chunks per K/V head */
    int chunk_blocks;    /* key blocks per chunk */
    size_t thread_bytes; /* one thread's scratch */
    unsigned char *scratch;       /* [threads][thread_bytes] */
    float *dqp;          /* dQ of chunks 1.. of each K/V head [B Hkv][chunks - 1][G Nq][dk] */
    float *dd, *lse2;    /* [B H Nq]: D = dO.O, and L log2(e) */
} tiled_bwd;

/* Where the rows of the bound tensors are (backend.h's layouts). A dense
 * batch: Q's queries of a head one row apart, K's keys of a K/V head too,
 * from (b Hkv + g) Nk on. A serving batch runs item by item (tiled.c), each
 * as a batch of one on a view of its own tokens: its queries H rows apart
 * from its first token, its keys Hkv rows apart from its first (packed) or
 * in its pages, one row apart within each (paged: key j in page
 * pages[j / page], slot j % page of K/V head g's rows there). */
typedef struct tiled_layout {
    int qstep;                    /* rows of Q (O) between a head's consecutive queries */
    int kvstep;                   /* rows of K (V) between a K/V head's consecutive keys */
    int page;                     /* tokens per page, or 0 */
    int shift;                    /* log2(page) where page is a power of two, else -1:
                                     the key's page and slot by shifts, not divisions */
    const int32_t *pages;         /* the item's block table when paged, else NULL */
} tiled_layout;

/* A serving batch's schedule (serving.c), in one allocation: each item's
 * plan, the items in the order their work is handed out, where each one's
 * units (its work items, or its blocks' chunks when split) and merges start
 * in that order, and where its partial results lie in parts (floats). */
typedef struct tiled_serving {
    tiled_plan *plans;            /* [B], NULL for a dense batch */
    int *order;                   /* [B] */
    long *unit0, *merge0;         /* [B + 1] each */
    size_t *parts0;               /* [B] */
} tiled_serving;

typedef struct tiled_state {
    attn_host h;
    tiled_plan plan;
    tiled_layout lay;
    float qscale;                 /* scale * log2(e): scores come out in log2 units */
    unsigned char *scratch;       /* [threads][stride] */
    size_t stride;                /* a thread's scratch: plan.thread_bytes, or for a
                                     serving batch the largest of its items' */
    float *parts;                 /* [blocks][splits][part_floats] when split (a serving
                                     batch: each split item's, one after the other) */
    tiled_run_slot *runs;         /* [threads]: a dense batch's equal chunks' runs
                                     (runs.h), or NULL */
    tiled_serving serve;          /* a serving batch's schedule (serving.c) */
    tiled_bwd bwd;                /* the backward (attn_backward(p)) */
} tiled_state;

/* One query block's running state. */
typedef struct scratch {
    float *qt, *acc, *qr, *m, *l, *alpha;
    int *end;
    int *beg;                /* the window's first key of each column */
    float *pos, *slope;      /* ALiBi: each column's i' and slope (log2 units) */
    float *mx, *sum;         /* qk_exp's max and sum of each column over a tile */
} scratch;

/* A block: batch item b, K/V head g, queries [i0, i0 + nq) of each of the
 * group's heads. Column c of its tiles is query i0 + c % nq of the group's
 * head c / nq. */
typedef struct block {
    int b, g, i0, nq;
} block;

/* The query row of column c: its offset in Q (rows of dk) and O (rows of dv). */
static inline size_t column_row(const tiled_state *s, const block *k, int c)
{
    const attn_problem *p = &s->h.p;
    const int h = k->g * attn_group(p) + c / k->nq;
    const size_t i = (size_t)(k->i0 + c % k->nq);
    if (s->lay.qstep > 1)
        return i * (size_t)s->lay.qstep + (size_t)h;
    return ((size_t)k->b * p->heads + h) * p->seq_q + i;
}

/* plan.c: the plan of a dense batch, or of one item of a serving batch
 * whose K/V is in pages of `page` tokens (0: packed, or dense); `tokens`:
 * K/V stored a token at a time (packed or paged: a key's, or a page's,
 * rows of every K/V head side by side). */
tiled_plan tiled_make_plan(const attn_problem *p, const attn_config *cfg, int page, bool tokens);
size_t tiled_parts_bytes(const tiled_plan *t);
/* Rows of Q the scratch's qr holds (each d_k floats). */
int tiled_qr_rows(const attn_problem *p, const tiled_plan *t);
float *tiled_thread_st(const tiled_state *s, int tid);
unsigned char *tiled_thread_tile(const tiled_state *s, int tid);
scratch tiled_thread_scratch(const tiled_state *s, int tid, int u);

/* tiled.c: the units of work: work item `item` whole (normalized into O),
 * chunk x of split work item `item` (its blocks' partial results), the
 * block numbered `index` (b, K/V head, query block) merged from its
 * chunks. */
void tiled_item(const tiled_state *s, float *st, unsigned char *tile, const scratch *w,
                long item);
void tiled_chunk(const tiled_state *s, float *st, unsigned char *tile, const scratch *w,
                 long item, int x);
void tiled_merge(const tiled_state *s, long index);

/* plan.c: the keys [*lo, *hi) some query of p sees. */
void tiled_key_span(const attn_problem *p, int *lo, int *hi);

/* serving.c: a serving batch's bytes (the schedule's arrays; a thread's
 * scratch and the partial results into *thread, *parts), its schedule
 * (s->serve, s->stride, s->plan; the partial results' bytes into *parts),
 * and its forward. */
size_t tiled_serving_bytes(const attn_problem *p, const attn_config *cfg, size_t *thread,
                           size_t *parts);
attn_status tiled_serving_plan(tiled_state *s, const attn_config *cfg, size_t *parts);
void tiled_serving_forward(const tiled_state *s);

/* backward.c: the backward's plan and bytes (0 for the forward), its
 * buffers, the backward itself from t.o, t.lse and t.dout. */
tiled_bwd tiled_bwd_plan(const attn_problem *p, const attn_config *cfg);
size_t tiled_bwd_bytes(const attn_problem *p, const attn_config *cfg);
attn_status tiled_bwd_alloc(tiled_state *s, const attn_config *cfg);
void tiled_bwd_free(tiled_state *s);
void tiled_backward(void *state);

/* keys.c: keys [j_lo, j_hi) of the nb blocks k[] (one work item's) into
 * w[]'s accumulators and statistics (unnormalized). */
void tiled_keys(const tiled_state *s, float *st, unsigned char *tile, const scratch *w,
                const block *k, int nb, int j_lo, int j_hi);

#endif

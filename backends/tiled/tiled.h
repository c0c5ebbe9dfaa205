/* The tiled backend's hooks for tests. */
#ifndef ATTN_TILED_H
#define ATTN_TILED_H

/* A bug to plant in the runs after this call, so tests can prove the
 * checker rejects it. */
enum {
    ATTN_TILED_PLANT_NONE = 0,
    ATTN_TILED_PLANT_WRONG_KV_HEAD,    /* a group reads the next K/V head's K and V */
    ATTN_TILED_PLANT_MERGE_NO_RESCALE, /* split-KV: chunks merged without 2^(m_s - m) */
    ATTN_TILED_PLANT_CUT_SHORT,        /* a tile a mask cuts: P.V of each run of queries
                                          stops one key short of the keys it sees */
    ATTN_TILED_PLANT_WINDOW_EARLY,     /* the window starts one key early */
    ATTN_TILED_PLANT_ALIBI_HEAD,       /* ALiBi takes the next head's slope */
    ATTN_TILED_PLANT_SINK_VALUE,       /* the sink adds to the numerator too (a value of 1) */
    ATTN_TILED_PLANT_V_SHIFTED,        /* V read from K one column on: past dv */
    ATTN_TILED_PLANT_PAGE_NEXT,        /* a paged batch: the keys of an item's page read
                                          from its next page (but the last's) */
    ATTN_TILED_PLANT_SCALE_ITEM0,      /* a serving batch's fp8 cache: every item read
                                          with the first item's scales */
    /* The backward's: */
    ATTN_TILED_PLANT_BWD_D_WRONG_O,    /* D = rowsum(dO o O) from the next row's O */
    ATTN_TILED_PLANT_BWD_NO_GROUP_SUM, /* dK, dV of a group: its last query head's only */
    ATTN_TILED_PLANT_BWD_SCALE_TWICE,  /* dQ scaled twice */
    ATTN_TILED_PLANT_BWD_WRONG_L,      /* one tile's P recomputed with the next row's L */
    /* The forward's again: */
    ATTN_TILED_PLANT_HEADS_ONE_TILE,   /* decoding K/V heads taken together (plan.c,
                                          heads_per_item): each key tile loaded for the
                                          first head that sees it, and used for all */
    ATTN_TILED_PLANT_LAZY_UNCHECKED,   /* the lazy rescale keeps qk_exp's weights however
                                          far a tile's max rises past m (keys.c) */
};
void attn_tiled_plant(int bug);

/* Counting, from this call on (and from zero), the (query block, key tile)
 * pairs the runs compute, for tests of what a mask lets them skip. */
#include <stdbool.h>
void attn_tiled_count_tiles(bool on);
long attn_tiled_tiles(void);
/* ... and of those, the tiles whose weights qk_exp gave and were kept (the
 * lazy rescale, keys.c), the columns of those whose max was raised in
 * place, and the tiles computed again through qk and softmax. */
void attn_tiled_lazy_tiles(long *kept, long *raised, long *redone);

/* The lazy rescale in the plans made after this call: on (the default) or
 * off, for timing the two in one process (bench_ab --lazy). */
void attn_tiled_lazy(bool on);

/* Split chunks in runs with stealing (runs.h) in the states prepared
 * after this call: on (the default), or off, each thread's run alone as
 * OpenMP's static schedule hands them out, for timing the two in one
 * process (bench_ab --steal); it changes no result. */
void attn_tiled_steal(bool on);

/* Decoding's outer-product Q.K^T on bf16 K, in the plans made after this
 * call: read in place by qk_kbf16 (1), widened by cvt_rows for qk (-1), or
 * as the kernel table prefers (0, the default: attn_kernels.kbf16). The
 * output is the same bits either way (test_backends; bench_ab --kbf16). */
void attn_tiled_kbf16(int mode);

/* Decoding's P.V with bf16 Q and K/V on the CPU's bf16 dot products, in
 * the plans made after this call: through pv_rows_bf16, P rounded to bf16
 * (1), or pv16, P in fp32 (-1), or as the kernel table prefers (0, the
 * default: attn_kernels.pv_rows). For timing the two in one process
 * (bench_ab --pv-bf16); the outputs differ by P's rounding. */
void attn_tiled_pv_bf16(int mode);

/* How far ahead decoding's kernels prefetch the K/V rows they stream, in
 * the plans made after this call: `keys` fp32 rows (attn_kernels.pf_keys'
 * unit: twice as many 16-bit rows, four times quantized), or the kernel
 * table's distance (0, the default); a table whose kernels do not
 * prefetch (C's) is left without. For timing one distance against
 * another in one process (bench_ab --pf-keys); it changes no result. */
void attn_tiled_pf_keys(int keys);

/* The split-KV chunks the backend chooses for p with --splits auto. */
struct attn_problem;
int attn_tiled_auto_splits(const struct attn_problem *p, int tile_q, int tile_kv);

#endif

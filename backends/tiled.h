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
};
void attn_tiled_plant(int bug);

/* The split-KV chunks the backend chooses for p with --splits auto. */
struct attn_problem;
int attn_tiled_auto_splits(const struct attn_problem *p, int tile_q, int tile_kv);

#endif

/* The ring backend against the reference on as many ranks as mpirun
 * starts (meson runs it under mpirun -n 1, 2 and 3; alone it is one rank):
 * causal, padding, cross-attention with Nk not divisible by the ranks,
 * ranks owning no keys or no queries, fully masked rows, grouped heads;
 * its per-rank figures; workspace growing as N, not N^2; and two planted
 * bugs of the merge that the checker must reject. Rank 0 prints the TAP;
 * the other ranks serve its cases. */
#include <math.h>
#include <string.h>

#include "ring.h"
#include "tap.h"
#include "util.h"

static const int kv_mixed[] = { 64, 1, 0 };       /* full, one key, fully masked */
static const int kv_tail[] = { 129, 100 };

typedef struct ring_case {
    int b, h, hkv, nq, nk, d;
    bool causal;
    const int *kv_len;
    attn_fill_kind fill;
} ring_case;

static attn_problem problem(const ring_case *c)
{
    return (attn_problem){ .batch = c->b, .heads = c->h, .kv_heads = c->hkv, .seq_q = c->nq,
                           .seq_kv = c->nk, .d_k = c->d, .d_v = c->d,
                           .scale = (float)(1.0 / sqrt((double)c->d)), .causal = c->causal,
                           .kv_len = c->kv_len };
}

static void grid_case(const attn_backend *be, const ring_case *c, int ranks)
{
    const attn_problem p = problem(c);
    char shape[256];
    attn_problem_describe(&p, shape, sizeof(shape));
    attn_result r;
    const attn_verdict v = run_case(be, &p, c->fill, 0, &r);
    /* Every rank that owns keys sends its block on, P - 1 times. */
    const bool sent = ranks == 1 || r.rank_max.sent_bytes > 0;
    if (!tap_ok(v == ATTN_PASSED && r.ranks == ranks && sent, "ring on %d rank%s: %s fill=%s",
                ranks, ranks > 1 ? "s" : "", shape, attn_fill_name(c->fill)))
        tap_diag("%s: %s | ranks %d, sent %llu | %s", attn_verdict_str(v), r.why, r.ranks,
                 (unsigned long long)r.rank_max.sent_bytes, r.repro);
}

/* Each rank's workspace grows as N / P: doubling N doubles it (at most),
 * where the score matrix would grow 4x; and it stays far below that matrix. */
static void workspace_linear(const attn_backend *be, int ranks)
{
    attn_result r1, r2;
    ring_case c1 = { 1, 2, 0, 1024, 1024, 64, .causal = true };
    ring_case c2 = c1;
    c2.nq = c2.nk = 2048;
    const attn_problem p1 = problem(&c1), p2 = problem(&c2);
    const attn_verdict v1 = run_case(be, &p1, ATTN_FILL_NORMAL, 256, &r1);
    const attn_verdict v2 = run_case(be, &p2, ATTN_FILL_NORMAL, 256, &r2);
    const double w1 = (double)r1.rank_max.workspace, w2 = (double)r2.rank_max.workspace;
    if (!tap_ok(v1 == ATTN_PASSED && v2 == ATTN_PASSED && w1 > 0 && w2 <= 2.05 * w1,
                "ring on %d rank%s: the largest per-rank workspace doubles at most with N "
                "(1K: %.0f KiB, 2K: %.0f KiB)", ranks, ranks > 1 ? "s" : "", w1 / 1024,
                w2 / 1024))
        tap_diag("%s %s | %s %s", attn_verdict_str(v1), r1.why, attn_verdict_str(v2), r2.why);
    /* Per rank: its slices and three K/V blocks of N/P rows, against a
     * score matrix of N^2 per head. */
    if (!tap_ok(v2 == ATTN_PASSED && w2 < (double)r2.score_bytes / 4,
                "ring on %d rank%s: per-rank workspace at N = 2048 (%.0f KiB) is under a quarter "
                "of the score matrix (%.0f KiB)", ranks, ranks > 1 ? "s" : "", w2 / 1024,
                (double)r2.score_bytes / 1024))
        tap_diag("%s", r2.why);
}

static void planted(const attn_backend *be, int bug, const char *what, int ranks)
{
    if (ranks < 2) {
        tap_skip("on one rank every key is in the rank's own block: there is no block from "
                 "another rank to merge or to skip", "ring rejects a planted bug: %s", what);
        return;
    }
    ring_case c = { 1, 2, 0, 129, 129, 64, .causal = false };
    const attn_problem p = problem(&c);
    attn_result r;
    attn_ring_plant(bug);
    const attn_verdict v = run_case(be, &p, ATTN_FILL_NORMAL, 0, &r);
    attn_ring_plant(ATTN_RING_PLANT_NONE);
    if (!tap_ok(v == ATTN_FAILED, "ring on %d ranks: the checker rejects a planted bug: %s",
                ranks, what))
        tap_diag("%s: %s", attn_verdict_str(v), r.why);
}

int main(int argc, char **argv)
{
    int rc = attn_ring_main(&argc, &argv);
    if (rc >= 0)
        return rc;
    const int ranks = attn_ring_size();
    const attn_backend *be = attn_backend_find("ring");
    const ring_case grid[] = {
        { 1, 2, 0, 64, 64, 16 },
        { 1, 2, 0, 129, 129, 64, .causal = true },
        { 1, 2, 0, 7, 129, 16, .causal = true },      /* cross: Nk mod 2, 3 != 0 */
        { 1, 2, 0, 129, 7, 16, .causal = true },      /* queries before every key: masked */
        { 1, 2, 0, 64, 7, 16 },
        { 1, 2, 0, 2, 129, 16 },                      /* 3 ranks: one owns no query */
        { 1, 2, 0, 7, 1, 16 },                        /* 2, 3 ranks: some own no key */
        { 1, 2, 0, 1, 1000, 64, .causal = true },     /* decoding: one query */
        { 3, 4, 0, 64, 64, 16, .kv_len = kv_mixed },  /* full, one key, no key at all */
        { 3, 4, 0, 64, 64, 32, .causal = true, .kv_len = kv_mixed },
        { 2, 3, 0, 7, 129, 64, .kv_len = kv_tail },
        { 2, 4, 2, 65, 65, 32, .causal = true },      /* grouped K/V heads */
        { 1, 4, 1, 33, 97, 16, .causal = true },      /* multi-query */
        { 1, 2, 0, 129, 129, 96, .causal = true, .fill = ATTN_FILL_EXTREME },
    };
    const size_t n = sizeof(grid) / sizeof(grid[0]);
    if (!be || be->not_built) {
        tap_skip(be ? be->not_built : "no ring backend is registered", "ring backend");
        return tap_done();
    }
    for (size_t i = 0; i < n; i++)
        grid_case(be, &grid[i], ranks);
    workspace_linear(be, ranks);
    planted(be, ATTN_RING_PLANT_NO_RESCALE, "a block merged without rescaling", ranks);
    planted(be, ATTN_RING_PLANT_SKIP_BLOCK, "a block skipped", ranks);
    rc = tap_done();
    attn_ring_finish();
    return rc;
}

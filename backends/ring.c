/* ring: sequence-parallel attention over MPI, as in Liu et al. 2023,
 * "Ring Attention with Blockwise Transformers".
 *
 * P ranks (mpirun -n P). Each sequence is cut in 2P chunks (N / 2P rows,
 * the first N mod 2P one more; a chunk may be empty), and rank r owns
 * chunks r and 2P - 1 - r of the queries of every head and of the keys and
 * values of every K/V head (zigzag()): its queries and its K/V block. In P
 * steps every K/V block visits every rank: at step s rank r computes on
 * the block of rank (r - s) mod P while it sends that block on to rank
 * r + 1 and receives the next from r - 1 (MPI_Isend / MPI_Irecv,
 * progressed between work items, waited for after the compute). Each rank
 * keeps, for each of its queries, the running max m, sum l and
 * unnormalized accumulator of the online softmax across the steps, so a
 * block merges by the log-sum-exp rule as it arrives:
 *   m' = max(m, rowmax), acc = acc 2^(m - m') + P.V, l = l 2^(m - m') + rowsum,
 * computed by the tiled backend's kernels (kernels/: pack_qt, qk, softmax,
 * pv) in query blocks of 64 (never across the two chunks) and key tiles of
 * 96. After the last step O = acc / l. Workspace per rank: its Q, O and
 * statistics, and three K/V blocks (its own, the one in hand, the one
 * arriving): O((N/P) d), never N^2.
 *
 * Causal: a chunk wholly past a query block's last visible key is not
 * computed (it still passes on), and the diagonal tiles are masked per
 * query. Contiguous slices (rank r owning the r-th of P) would leave rank
 * r about r + 1/2 blocks of work, the last rank about 2P/(P+1) times the
 * balanced share; with the zig-zag chunks every rank pairs an early chunk
 * with a late one and the work is even (for Nq = Nk; with Nq != Nk the
 * diagonal is offset and the balance is approximate).
 *
 * The harness runs on rank 0 alone. Every verb of this backend there first
 * sends its command to the other ranks, which serve them (attn_ring_serve)
 * until rank 0 finishes: prepare (the problem and configuration; then all
 * ranks agree on the outcome with an MPI_Allreduce, so a rank that fails
 * makes every rank return ERROR, none left waiting), bind (rank 0 sends
 * each rank its slices of Q, K and V), run (a barrier, the ring, a
 * barrier: rank 0's run lasts as long as the slowest rank's), read (the
 * slices of O gathered to rank 0), the per-rank figures, release.
 *
 * Without MPI (not built with it, or not started by mpirun) it runs as one
 * rank: the same arithmetic, no communication. */
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "config.h"
#include "host.h"
#include "ring.h"

#if ATTN_HAVE_MPI
#include <mpi.h>
#endif

#define ALIGN 64
#define RING_BR 64     /* queries per block: one 64-lane register tile of qk */
#define RING_BC 96     /* keys per tile: whole 6-row register tiles */

static struct {
    int rank, size;
    bool mpi;          /* MPI_Init was called */
    bool finished;
    int plant;         /* rank 0: the bug the next cases carry */
} world = { 0, 1, false, false, ATTN_RING_PLANT_NONE };

int attn_ring_size(void)
{
    return world.size;
}

int attn_ring_rank(void)
{
    return world.rank;
}

void attn_ring_plant(int bug)
{
    world.plant = bug;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Chunk c of n rows cut in `chunks`: [*start, *start + *count). */
static void slice(int n, int chunks, int c, int *start, int *count)
{
    const int base = n / chunks, extra = n % chunks;
    *count = base + (c < extra);
    *start = c * base + (c < extra ? c : extra);
}

/* A rank's rows, zig-zag: of the 2P chunks of a sequence, rank r owns
 * chunks r and 2P - 1 - r, so that under a causal mask every rank has one
 * chunk near the start and one near the end, and the same work. Locally
 * they are one run of rows, chunk r's first. */
typedef struct span2 {
    int start[2], count[2];
} span2;

static span2 zigzag(int n, int ranks, int r)
{
    span2 z;
    slice(n, 2 * ranks, r, &z.start[0], &z.count[0]);
    slice(n, 2 * ranks, 2 * ranks - 1 - r, &z.start[1], &z.count[1]);
    return z;
}

static int span_rows(const span2 *z)
{
    return z->count[0] + z->count[1];
}

/* The most rows any rank owns. */
static int most_rows(int n, int ranks)
{
    int most = 0;
    for (int r = 0; r < ranks; r++) {
        const span2 z = zigzag(n, ranks, r);
        most = span_rows(&z) > most ? span_rows(&z) : most;
    }
    return most;
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

typedef struct ring_state {
    attn_host h;             /* the whole problem; on rank 0 the bound tensors */
    int rank, size;
    span2 qs, ks;            /* this rank's queries and keys */
    int nq, nk;              /* how many: span_rows of each */
    int kmax;                /* keys of the largest block */
    int br, bc, brp;         /* queries per block, keys per tile, br rounded to 16 */
    int nqb[2];              /* query blocks of each of the rank's two chunks, per head */
    long items;              /* B * H * (nqb[0] + nqb[1]) */
    float qscale;            /* scale * log2(e) */
    float *q;                /* [B*H][nq][dk] */
    float *o;                /* [B*H][nq][dv]: the accumulator, then O */
    float *qt;               /* [items][dk][brp]: Q^T packed and scaled, at bind */
    float *ml;               /* [items][2][brp]: m, l */
    float *kv[3];            /* K [B*Hkv][n][dk] then V [B*Hkv][n][dv], n the block's keys:
                                own, two in flight */
    unsigned char *scratch;  /* [threads][thread_bytes]: S^T [bc][brp], alpha [brp], end [brp] */
    size_t thread_bytes;
    size_t allocated;        /* bytes taken through the allocator */
    int plant;
    int runs;                /* since bind */
    attn_rank_stats sum;     /* sums over those runs (workspace: as is) */
} ring_state;

/* --- sizes ------------------------------------------------------------- */

typedef struct ring_sizes {
    size_t state, q, o, qt, ml, kv, thread;
} ring_sizes;

static size_t kv_floats(const attn_problem *p, int n)
{
    return (size_t)p->batch * attn_kv_heads(p) * (size_t)n * (size_t)(p->d_k + p->d_v);
}

static ring_sizes sizes_for(const attn_problem *p, const span2 *qs, int kmax, int br, int bc)
{
    const int brp = (int)round_up((size_t)br, 16);
    const size_t bh = (size_t)p->batch * p->heads, nq = (size_t)span_rows(qs);
    const size_t items = bh * (size_t)((qs->count[0] + br - 1) / br +
                                       (qs->count[1] + br - 1) / br);
    ring_sizes z;
    z.state = attn_host_workspace(sizeof(ring_state), p);
    z.q = round_up(bh * nq * p->d_k * sizeof(float), ALIGN);
    z.o = round_up(bh * nq * p->d_v * sizeof(float), ALIGN);
    z.qt = round_up(items * p->d_k * brp * sizeof(float), ALIGN);
    z.ml = round_up(items * 2 * brp * sizeof(float), ALIGN);
    z.kv = round_up(kv_floats(p, kmax) * sizeof(float), ALIGN);
    z.thread = round_up((size_t)bc * brp * sizeof(float), ALIGN) +
               round_up((size_t)brp * sizeof(float), ALIGN) +
               round_up((size_t)brp * sizeof(int), ALIGN);
    return z;
}

/* Queries per block: RING_BR, or the longer chunk when it is shorter. */
static int block_rows(const span2 *qs)
{
    const int n = qs->count[0] > qs->count[1] ? qs->count[0] : qs->count[1];
    return n < RING_BR ? (n > 0 ? n : 1) : RING_BR;
}

static size_t ring_bytes(const attn_problem *p, const attn_config *cfg, int rank, int ranks)
{
    const span2 qs = zigzag(p->seq_q, ranks, rank);
    const int kmax = most_rows(p->seq_kv, ranks);
    const int br = cfg->tile_q > 0 ? cfg->tile_q : block_rows(&qs);
    const int bc = cfg->tile_kv > 0 ? cfg->tile_kv : RING_BC;
    const ring_sizes z = sizes_for(p, &qs, kmax, br, bc);
    const int blocks = ranks > 1 ? 3 : 1;
    return z.state + z.q + z.o + z.qt + z.ml + (size_t)blocks * z.kv +
           (size_t)cfg->threads * z.thread;
}

/* Rank 0's (the harness's allocator sees rank 0's alone). */
static size_t ring_workspace(const attn_problem *p, const attn_config *cfg)
{
    return ring_bytes(p, cfg, 0, world.size);
}

static attn_status ring_supports(const attn_problem *p, const attn_config *cfg, char *why,
                                 size_t len)
{
    const int nq = most_rows(p->seq_q, world.size), kmax = most_rows(p->seq_kv, world.size);
    /* MPI counts are ints. */
    if (kv_floats(p, kmax) > INT_MAX ||
        (size_t)p->batch * p->heads * nq * (size_t)(p->d_k > p->d_v ? p->d_k : p->d_v) > INT_MAX) {
        snprintf(why, len, "ring: a rank's slice of K and V or of Q holds more than %d "
                 "floats, beyond one MPI message: run on more ranks", INT_MAX);
        return ATTN_EUNSUPPORTED;
    }
    if (cfg->tile_q > 4096 || cfg->tile_kv > 4096 || cfg->tile_q < 0 || cfg->tile_kv < 0) {
        snprintf(why, len, "ring: tiles of 1..4096 queries and keys");
        return ATTN_EUNSUPPORTED;
    }
    return attn_host_supports_isa("ring", cfg, why, len);
}

/* --- one rank's state ---------------------------------------------------- */

static void ring_free(ring_state *s)
{
    if (!s)
        return;
    const attn_allocator *a = s->h.alloc;
    attn_free(a, s->scratch);
    for (int i = 0; i < 3; i++)
        attn_free(a, s->kv[i]);
    attn_free(a, s->ml);
    attn_free(a, s->qt);
    attn_free(a, s->o);
    attn_free(a, s->q);
    attn_host_destroy(s);
}

static void *take(ring_state *s, size_t bytes, bool *ok)
{
    if (!bytes)
        return NULL;
    void *x = attn_alloc(s->h.alloc, bytes);
    *ok &= x != NULL;
    s->allocated += x ? bytes : 0;
    return x;
}

/* Whether this rank fails prepare on purpose: ATTN_RING_FAIL_RANK=R, for
 * the tests of what the other ranks do then. */
static bool fail_on_purpose(int rank)
{
    const char *e = getenv("ATTN_RING_FAIL_RANK");
    char *end;
    if (!e || !*e)
        return false;
    const long r = strtol(e, &end, 10);
    return !*end && r == rank;
}

static attn_status local_prepare(const attn_problem *p, const attn_config *cfg, int plant,
                                 ring_state **out)
{
    *out = NULL;
    if (fail_on_purpose(world.rank)) {
        fprintf(stderr, "attnbench: rank %d of %d: ring: prepare fails on purpose "
                        "(ATTN_RING_FAIL_RANK=%d)\n", world.rank, world.size, world.rank);
        return ATTN_ENOMEM;
    }
    ring_state *s;
    attn_status st = attn_host_create(sizeof(*s), p, cfg, (void **)&s);
    if (st != ATTN_OK)
        return st;
    s->allocated = attn_host_workspace(sizeof(*s), p);
    s->rank = world.rank;
    s->size = world.size;
    s->plant = plant;
    s->qs = zigzag(p->seq_q, s->size, s->rank);
    s->ks = zigzag(p->seq_kv, s->size, s->rank);
    s->nq = span_rows(&s->qs);
    s->nk = span_rows(&s->ks);
    s->kmax = most_rows(p->seq_kv, s->size);
    s->br = cfg->tile_q > 0 ? cfg->tile_q : block_rows(&s->qs);
    s->bc = cfg->tile_kv > 0 ? cfg->tile_kv : RING_BC;
    s->brp = (int)round_up((size_t)s->br, 16);
    for (int u = 0; u < 2; u++)
        s->nqb[u] = (s->qs.count[u] + s->br - 1) / s->br;
    s->items = (long)p->batch * p->heads * (s->nqb[0] + s->nqb[1]);
    s->qscale = (float)((double)p->scale * ATTN_LOG2E);
    const ring_sizes z = sizes_for(p, &s->qs, s->kmax, s->br, s->bc);
    s->thread_bytes = z.thread;
    bool ok = true;
    s->q = take(s, z.q, &ok);
    s->o = take(s, z.o, &ok);
    s->qt = take(s, z.qt, &ok);
    s->ml = take(s, z.ml, &ok);
    for (int i = 0; i < (s->size > 1 ? 3 : 1); i++)
        s->kv[i] = take(s, z.kv, &ok);
    s->scratch = take(s, (size_t)cfg->threads * z.thread, &ok);
    if (!ok) {
        ring_free(s);
        return ATTN_ENOMEM;
    }
    *out = s;
    return ATTN_OK;
}

/* Work item `it`: a block of n queries of flat head bh, the global ones
 * [gi, gi + n), rows [row, row + n) of the rank's own. A block never
 * straddles the rank's two chunks. */
typedef struct item {
    long bh;
    int gi, row, n;
} item;

static item item_of(const ring_state *s, long it)
{
    const long per = s->nqb[0] + s->nqb[1], k = it % per;
    const int u = k >= s->nqb[0];
    const int i0 = (int)(u ? k - s->nqb[0] : k) * s->br;
    const int n = s->qs.count[u] - i0 < s->br ? s->qs.count[u] - i0 : s->br;
    return (item){ .bh = it / per, .gi = s->qs.start[u] + i0,
                   .row = (u ? s->qs.count[0] : 0) + i0, .n = n };
}

/* Q^T of every query block, once per bind. */
static void pack_q(ring_state *s)
{
    const attn_problem *p = &s->h.p;
    const int dk = p->d_k;
    for (long it = 0; it < s->items; it++) {
        const item x = item_of(s, it);
        s->h.k->pack_qt(s->qt + (size_t)it * dk * s->brp, s->brp,
                        s->q + ((size_t)x.bh * s->nq + x.row) * dk, dk, x.n, dk, s->qscale);
    }
}

/* Keys of block [k0, k0 + nk) that query i (global) of batch item b sees:
 * the first end of them. */
static int local_end(const attn_problem *p, int b, int i, int k0, int nk)
{
    const int e = attn_visible_end(p, b, i) - k0;
    return e < 0 ? 0 : e > nk ? nk : e;
}

/* Work item `it` (one block of queries of one head) against the K/V block
 * blk, whose keys are the chunks ks of the sequence: the online-softmax
 * step of every key tile of each chunk it sees. no_rescale: the planted bug
 * (the accumulator of the earlier blocks kept as it is when this block
 * raises the max). */
static void block_item(const ring_state *s, int tid, const float *blk, const span2 *ks, long it,
                       bool no_rescale)
{
    const attn_problem *p = &s->h.p;
    const attn_kernels *kn = s->h.k;
    const int dk = p->d_k, dv = p->d_v, brp = s->brp;
    const item x = item_of(s, it);
    const int b = (int)(x.bh / p->heads), h = (int)(x.bh % p->heads);
    const size_t g = attn_kv_head(p, b, h), ntot = (size_t)span_rows(ks);
    const size_t heads_kv = (size_t)p->batch * attn_kv_heads(p);
    unsigned char *sc = s->scratch + (size_t)tid * s->thread_bytes;
    float *st = (float *)sc;
    float *alpha = (float *)(sc + round_up((size_t)s->bc * brp * sizeof(float), ALIGN));
    int *end = (int *)((unsigned char *)alpha + round_up((size_t)brp * sizeof(float), ALIGN));
    const float *qt = s->qt + (size_t)it * dk * brp;
    float *m = s->ml + (size_t)it * 2 * brp, *l = m + brp;
    float *acc = s->o + ((size_t)x.bh * s->nq + x.row) * dv;
    for (int v = 0, off = 0; v < 2; off += ks->count[v], v++) {
        const int k0 = ks->start[v], nk = ks->count[v];
        const int lo = local_end(p, b, x.gi, k0, nk), hi = local_end(p, b, x.gi + x.n - 1, k0, nk);
        const float *kk = blk + (g * ntot + (size_t)off) * dk;
        const float *vv = blk + heads_kv * ntot * dk + (g * ntot + (size_t)off) * dv;
        for (int j0 = 0; j0 < hi; j0 += s->bc) {
            const int n = hi - j0 < s->bc ? hi - j0 : s->bc;
            const int *e = NULL;
            int emax = n;
            if (j0 + n > lo) {
                emax = 0;
                for (int c = 0; c < x.n; c++) {
                    end[c] = local_end(p, b, x.gi + c, k0, nk) - j0;
                    emax = end[c] > emax ? end[c] : emax;
                }
                emax = emax < n ? emax : n;
                e = end;
            }
            kn->qk(st, brp, kk + (size_t)j0 * dk, dk, qt, brp, n, x.n, dk, 0);
            kn->softmax(st, brp, n, x.n, e, m, l, alpha);
            if (no_rescale && j0 == 0)
                for (int c = 0; c < x.n; c++)
                    alpha[c] = 1.0f;
            const float *vt = vv + (size_t)j0 * dv;
            if (!e || attn_rows_finite(vt, (size_t)emax, (size_t)dv)) {
                /* Masked weights are 0, and 0 x a finite V is 0. A tile
                 * whose every column sees none of its keys left m, so
                 * alpha is 1 (or 0 on a zero accumulator): nothing to do. */
                if (emax > 0)
                    kn->pv(acc, dv, st, brp, vt, dv, alpha, x.n, emax, dv, 0);
            } else {
                /* A NaN or Inf in V: each column over its own visible keys. */
                for (int c = 0; c < x.n; c++) {
                    const int ec = end[c] < 0 ? 0 : end[c] > n ? n : end[c];
                    kn->pv(acc + (size_t)c * dv, dv, st + c, brp, vt, dv, alpha + c, 1, ec, dv, 0);
                }
            }
        }
    }
}

/* Step `step` of the ring: the block blk, of the keys ks, on every work
 * item; thread 0 of the team keeps the transfers in flight moving. */
static void compute_block(ring_state *s, const float *blk, const span2 *ks, int step,
                          void *reqs, int nreq)
{
    const bool no_rescale = s->plant == ATTN_RING_PLANT_NO_RESCALE && step > 0;
    if (s->plant == ATTN_RING_PLANT_SKIP_BLOCK && step == 1)
        return;
#if ATTN_HAVE_MPI
    MPI_Request *rq = reqs;
    int done = nreq == 0;
#else
    (void)reqs;
    (void)nreq;
#endif
    const long items = s->items;
#ifdef _OPENMP
#pragma omp parallel num_threads(s->h.threads)
#endif
    {
        const int tid = attn_thread_id();
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (long it = 0; it < items; it++) {
            block_item(s, tid, blk, ks, it, no_rescale);
#if ATTN_HAVE_MPI
            /* MPI_THREAD_FUNNELED: the team's thread 0 is the main thread. */
            if (tid == 0 && !done)
                MPI_Testall(nreq, rq, &done, MPI_STATUSES_IGNORE);
#endif
        }
    }
}

static void reset_stats(ring_state *s)
{
    s->runs = 0;
    memset(&s->sum, 0, sizeof(s->sum));
}

/* Message tags; the slices of Q, K, V and O take two each, one per chunk. */
enum { TAG_CMD = 1, TAG_Q = 2, TAG_K = 4, TAG_V = 6, TAG_O = 8, TAG_RING = 10 };

static attn_status local_run(ring_state *s)
{
    const attn_problem *p = &s->h.p;
    const int dv = p->d_v;
    const size_t bh = (size_t)p->batch * p->heads;
    if (s->nq)
        memset(s->o, 0, bh * s->nq * dv * sizeof(float));
    for (long it = 0; it < s->items; it++) {
        float *m = s->ml + (size_t)it * 2 * s->brp;
        for (int c = 0; c < s->brp; c++) {
            m[c] = -INFINITY;
            m[s->brp + c] = 0.0f;
        }
    }
    double compute = 0, comm = 0;
    uint64_t sent = 0;
#if ATTN_HAVE_MPI
    if (s->size > 1)
        MPI_Barrier(MPI_COMM_WORLD);
#endif
    const int prev = (s->rank + s->size - 1) % s->size, next = (s->rank + 1) % s->size;
    (void)prev;
    (void)next;
    for (int step = 0; step < s->size; step++) {
        const int owner = (s->rank - step + s->size) % s->size;
        const span2 ks = zigzag(p->seq_kv, s->size, owner);
        const int nk = span_rows(&ks);
        (void)nk;   /* the MPI send's length; unused in a build without MPI */
        const float *blk = step == 0 ? s->kv[0] : s->kv[1 + step % 2];
        int nreq = 0;
#if ATTN_HAVE_MPI
        MPI_Request req[2];
        if (step < s->size - 1) {
            const span2 from = zigzag(p->seq_kv, s->size, (owner + s->size - 1) % s->size);
            const int fn = span_rows(&from);
            MPI_Irecv(s->kv[1 + (step + 1) % 2], (int)kv_floats(p, fn), MPI_FLOAT, prev,
                      TAG_RING, MPI_COMM_WORLD, &req[nreq++]);
            MPI_Isend(blk, (int)kv_floats(p, nk), MPI_FLOAT, next, TAG_RING, MPI_COMM_WORLD,
                      &req[nreq++]);
            sent += kv_floats(p, nk) * sizeof(float);
        }
        void *reqs = req;
#else
        void *reqs = NULL;
#endif
        const double t0 = now();
        compute_block(s, blk, &ks, step, reqs, nreq);
        const double t1 = now();
#if ATTN_HAVE_MPI
        if (nreq)
            MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
#endif
        compute += t1 - t0;
        comm += now() - t1;
    }
    /* O = acc / l; l == 0: the query saw no key, its row is 0; a NaN in l
     * reaches the row. */
    const double t2 = now();
    for (long it = 0; it < s->items; it++) {
        const item x = item_of(s, it);
        const float *l = s->ml + (size_t)it * 2 * s->brp + s->brp;
        for (int c = 0; c < x.n; c++) {
            const float inv = l[c] > 0.0f || isnan(l[c]) ? 1.0f / l[c] : 0.0f;
            float *row = s->o + ((size_t)x.bh * s->nq + x.row + c) * dv;
            for (int e = 0; e < dv; e++)
                row[e] *= inv;
        }
    }
    compute += now() - t2;
#if ATTN_HAVE_MPI
    if (s->size > 1)
        MPI_Barrier(MPI_COMM_WORLD);
#endif
    s->runs++;
    s->sum.compute_s += compute;
    s->sum.comm_s += comm;
    s->sum.sent_bytes += sent;
    return ATTN_OK;
}

/* --- rank 0's verbs and the other ranks' service ------------------------ */

enum { OP_PREPARE = 1, OP_BIND, OP_RUN, OP_READ, OP_STATS, OP_RELEASE, OP_QUIT };

typedef struct ring_cmd {
    int op;
    int plant;
    attn_problem p;          /* p.kv_len follows as its own message when has_kv_len */
    int has_kv_len;
    int threads, isa, tile_q, tile_kv;
} ring_cmd;

#if ATTN_HAVE_MPI
/* A strided slice: n consecutive rows of each of `heads` matrices of
 * `rows` rows of d floats (the message starts at the first of them). */
static MPI_Datatype rows_type(int heads, int rows, int n, int d)
{
    MPI_Datatype t;
    MPI_Type_vector(heads, n * d, rows * d, MPI_FLOAT, &t);
    MPI_Type_commit(&t);
    return t;
}

/* The rows of span z of each of `heads` matrices of `rows` rows of d
 * floats at x, sent to (to >= 0) or received from (from = -1 - to) a rank
 * whose own copy holds them as one run per head, chunk 0's first: the
 * side holding the whole matrices (rank 0) with whole = true. One message
 * per chunk that has rows. */
static void move_span(float *x, int heads, int rows, const span2 *z, int d, bool whole, int to,
                      int tag)
{
    const int own = span_rows(z);
    for (int u = 0, off = 0; u < 2; off += z->count[u], u++) {
        if (!z->count[u])
            continue;
        float *at = x + (size_t)(whole ? z->start[u] : off) * d;
        MPI_Datatype t = rows_type(heads, whole ? rows : own, z->count[u], d);
        if (to >= 0)
            MPI_Send(at, 1, t, to, tag + u, MPI_COMM_WORLD);
        else
            MPI_Recv(at, 1, t, -1 - to, tag + u, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Type_free(&t);
    }
}

static void send_cmd(const ring_cmd *c)
{
    for (int r = 1; r < world.size; r++)
        MPI_Send(c, (int)sizeof(*c), MPI_BYTE, r, TAG_CMD, MPI_COMM_WORLD);
}

/* Every rank's outcome of prepare: ATTN_OK, or the first failing rank's status. */
static attn_status agree(attn_status st, int *failed)
{
    int mine[2] = { (int)st, st != ATTN_OK ? world.size - world.rank : 0 }, all[2];
    MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    *failed = all[1] ? world.size - all[1] : -1;
    return (attn_status)all[0];
}
#endif

static attn_status ring_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    *state = NULL;
    if (cfg->tile_q < 0 || cfg->tile_kv < 0 || cfg->tile_q > 4096 || cfg->tile_kv > 4096)
        return ATTN_EINVAL;
#if ATTN_HAVE_MPI
    if (world.size > 1) {
        ring_cmd c = { .op = OP_PREPARE, .plant = world.plant, .p = *p,
                       .has_kv_len = p->kv_len != NULL, .threads = cfg->threads,
                       .isa = (int)cfg->isa, .tile_q = cfg->tile_q, .tile_kv = cfg->tile_kv };
        c.p.kv_len = NULL;
        send_cmd(&c);
        if (p->kv_len)
            MPI_Bcast((void *)p->kv_len, p->batch, MPI_INT, 0, MPI_COMM_WORLD);
    }
#endif
    ring_state *s;
    attn_status st = local_prepare(p, cfg, world.plant, &s);
#if ATTN_HAVE_MPI
    if (world.size > 1) {
        int failed;
        const attn_status all = agree(st, &failed);
        if (all != ATTN_OK) {
            fprintf(stderr, "attnbench: rank 0 of %d: ring: ERROR: rank %d failed prepare (%s); "
                            "every rank gives the case up\n", world.size, failed,
                    attn_status_str(all));
            ring_free(s);
            return all;
        }
    }
#endif
    if (st != ATTN_OK)
        return st;
    *state = s;
    return ATTN_OK;
}

/* Between rank 0's whole matrices x ([heads][rows][d]) and its own rows y
 * ([heads][span_rows(z)][d]): into y (in) or back into x. */
static void copy_span(float *y, float *x, size_t heads, int rows, const span2 *z, int d, bool in)
{
    const size_t own = (size_t)span_rows(z);
    for (size_t hh = 0; hh < heads; hh++)
        for (int u = 0, off = 0; u < 2; off += z->count[u], u++) {
            float *a = y + (hh * own + (size_t)off) * d;
            float *b = x + (hh * rows + (size_t)z->start[u]) * d;
            const size_t bytes = (size_t)z->count[u] * d * sizeof(float);
            if (bytes)
                memmove(in ? a : b, in ? b : a, bytes);
        }
}

static attn_status ring_bind(void *state, const attn_tensors *t)
{
    ring_state *s = state;
    const attn_problem *p = &s->h.p;
    attn_host_bind(s, t);
    const size_t bh = (size_t)p->batch * p->heads, bg = (size_t)p->batch * attn_kv_heads(p);
    const int dk = p->d_k, dv = p->d_v;
#if ATTN_HAVE_MPI
    if (s->size > 1) {
        const ring_cmd c = { .op = OP_BIND };
        send_cmd(&c);
        for (int r = 1; r < s->size; r++) {
            const span2 qs = zigzag(p->seq_q, s->size, r), ks = zigzag(p->seq_kv, s->size, r);
            move_span((float *)t->q, (int)bh, p->seq_q, &qs, dk, true, r, TAG_Q);
            move_span((float *)t->k, (int)bg, p->seq_kv, &ks, dk, true, r, TAG_K);
            move_span((float *)t->v, (int)bg, p->seq_kv, &ks, dv, true, r, TAG_V);
        }
    }
#endif
    copy_span(s->q, (float *)t->q, bh, p->seq_q, &s->qs, dk, true);
    copy_span(s->kv[0], (float *)t->k, bg, p->seq_kv, &s->ks, dk, true);
    copy_span(s->kv[0] + bg * s->nk * dk, (float *)t->v, bg, p->seq_kv, &s->ks, dv, true);
    pack_q(s);
    reset_stats(s);
    return ATTN_OK;
}

static attn_status ring_run(void *state)
{
#if ATTN_HAVE_MPI
    if (((ring_state *)state)->size > 1) {
        const ring_cmd c = { .op = OP_RUN };
        send_cmd(&c);
    }
#endif
    return local_run(state);
}

static attn_status ring_read(void *state, float *out)
{
    ring_state *s = state;
    const attn_problem *p = &s->h.p;
    const size_t bh = (size_t)p->batch * p->heads;
    const int dv = p->d_v;
#if ATTN_HAVE_MPI
    if (s->size > 1) {
        const ring_cmd c = { .op = OP_READ };
        send_cmd(&c);
        for (int r = 1; r < s->size; r++) {
            const span2 qs = zigzag(p->seq_q, s->size, r);
            move_span(out, (int)bh, p->seq_q, &qs, dv, true, -1 - r, TAG_O);
        }
    }
#endif
    copy_span(s->o, out, bh, p->seq_q, &s->qs, dv, false);
    return ATTN_OK;
}

static attn_rank_stats own_stats(const ring_state *s)
{
    attn_rank_stats x = { 0 };
    const double runs = s->runs > 0 ? s->runs : 1;
    x.compute_s = s->sum.compute_s / runs;
    x.comm_s = s->sum.comm_s / runs;
    x.sent_bytes = (uint64_t)((double)s->sum.sent_bytes / runs + 0.5);
    x.workspace = s->allocated;
    return x;
}

static int ring_ranks(void *state, attn_rank_stats *out, int max)
{
    ring_state *s = state;
    attn_rank_stats mine = own_stats(s);
    if (s->size == 1) {
        if (max > 0)
            out[0] = mine;
        return 1;
    }
#if ATTN_HAVE_MPI
    const ring_cmd c = { .op = OP_STATS };
    send_cmd(&c);
    attn_rank_stats *all = malloc((size_t)s->size * sizeof(*all));
    MPI_Gather(&mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine), MPI_BYTE, 0,
               MPI_COMM_WORLD);
    for (int r = 0; r < s->size && r < max && all; r++)
        out[r] = all[r];
    free(all);
#endif
    return s->size;
}

static void ring_release(void *state)
{
#if ATTN_HAVE_MPI
    if (state && ((ring_state *)state)->size > 1) {
        const ring_cmd c = { .op = OP_RELEASE };
        send_cmd(&c);
    }
#endif
    ring_free(state);
}

static int ring_world(void)
{
    return world.size;
}

static const char *ring_version(void)
{
#if ATTN_HAVE_MPI
    static char buf[MPI_MAX_LIBRARY_VERSION_STRING + 32];
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, ",\n")] = '\0';
    snprintf(buf, sizeof(buf), "%s, %d rank%s", lib, world.size, world.size > 1 ? "s" : "");
    return buf;
#else
    return NULL;
#endif
}

/* --- the process side ---------------------------------------------------- */

#if ATTN_HAVE_MPI
/* Whether an MPI launcher started this process (Open MPI, PMIx, PMI, Hydra). */
static bool launched(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                                        "PMI_SIZE" };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (getenv(vars[i]))
            return true;
    return false;
}

/* FNV-1a over the arguments, each with its terminating NUL. */
static unsigned long long argv_hash(int argc, char **argv)
{
    unsigned long long h = 1469598103934665603ull;
    for (int i = 1; i < argc; i++)
        for (const char *c = argv[i];; c++) {
            h = (h ^ (unsigned char)*c) * 1099511628211ull;
            if (!*c)
                break;
        }
    return h;
}
#endif

int attn_ring_init(int *argc, char ***argv)
{
#if ATTN_HAVE_MPI
    if (!launched())
        return -1;
    int provided;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "attnbench: MPI_Init_thread failed\n");
        return ATTN_EXIT_ERROR;
    }
    world.mpi = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world.size);
    if (provided < MPI_THREAD_FUNNELED) {
        if (world.rank == 0)
            fprintf(stderr, "attnbench: this MPI library gives no MPI_THREAD_FUNNELED, which "
                            "the ring backend's threads need\n");
        attn_ring_finish();
        return ATTN_EXIT_ERROR;
    }
    if (world.size > 1) {
        const unsigned long long h = argv_hash(*argc, *argv);
        unsigned long long lo, hi;
        MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        if (lo != hi) {
            fprintf(stderr, "attnbench: rank %d of %d: the ranks were started with different "
                            "command lines; every rank must be given the same one\n",
                    world.rank, world.size);
            world.finished = true;
            MPI_Finalize();
            return ATTN_EXIT_USAGE;
        }
    }
#else
    (void)argc;
    (void)argv;
#endif
    return -1;
}

int attn_ring_main(int *argc, char ***argv)
{
    int rc = attn_ring_init(argc, argv);
    if (rc >= 0 || world.rank == 0)
        return rc;
    rc = attn_ring_serve();
    attn_ring_finish();
    return rc;
}

void attn_ring_finish(void)
{
#if ATTN_HAVE_MPI
    if (!world.mpi || world.finished)
        return;
    world.finished = true;
    if (world.rank == 0 && world.size > 1) {
        const ring_cmd c = { .op = OP_QUIT };
        send_cmd(&c);
    }
    MPI_Finalize();
#endif
}

#if ATTN_HAVE_MPI
/* The other ranks' allocator: aligned blocks, counted. */
static void *serve_alloc(void *ctx, size_t bytes)
{
    (void)ctx;
    return aligned_alloc(ALIGN, round_up(bytes ? bytes : 1, ALIGN));
}

static void serve_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

/* The next command from rank 0, waiting without spinning: 1 ms naps while
 * no case is prepared (rank 0 may be running other backends on these
 * cores), yielding the core between polls while one is. */
static void next_cmd(ring_cmd *c, bool held)
{
    MPI_Request rq;
    MPI_Irecv(c, (int)sizeof(*c), MPI_BYTE, 0, TAG_CMD, MPI_COMM_WORLD, &rq);
    int done = 0;
    for (;;) {
        MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        if (held) {
            sched_yield();
        } else {
            const struct timespec nap = { 0, 1000000 };
            nanosleep(&nap, NULL);
        }
    }
}
#endif

int attn_ring_serve(void)
{
    int rc = 0;
#if ATTN_HAVE_MPI
    const attn_allocator alloc = { serve_alloc, serve_free, NULL };
    ring_state *s = NULL;
    int *kv_len = NULL;
    for (;;) {
        ring_cmd c;
        next_cmd(&c, s != NULL);
        switch (c.op) {
        case OP_PREPARE: {
            if (c.has_kv_len) {
                int *x = realloc(kv_len, (size_t)c.p.batch * sizeof(int));
                if (!x) {
                    fprintf(stderr, "attnbench: rank %d of %d: out of memory\n", world.rank,
                            world.size);
                    MPI_Abort(MPI_COMM_WORLD, ATTN_EXIT_ERROR);
                }
                kv_len = x;
                MPI_Bcast(kv_len, c.p.batch, MPI_INT, 0, MPI_COMM_WORLD);
            }
            c.p.kv_len = c.has_kv_len ? kv_len : NULL;
            const attn_config cfg = { .threads = c.threads, .alloc = &alloc,
                                      .tile_q = c.tile_q, .tile_kv = c.tile_kv,
                                      .isa = (attn_isa)c.isa, .device = -1 };
            ring_free(s);
            attn_status st = local_prepare(&c.p, &cfg, c.plant, &s);
            int failed;
            const attn_status all = agree(st, &failed);
            if (all != ATTN_OK) {
                fprintf(stderr, "attnbench: rank %d of %d: ring: ERROR: rank %d failed prepare "
                                "(%s); every rank gives the case up\n", world.rank, world.size,
                        failed, attn_status_str(all));
                ring_free(s);
                s = NULL;
                rc = ATTN_EXIT_ERROR;
            }
            break;
        }
        case OP_BIND: {
            if (!s)
                break;
            const attn_problem *p = &s->h.p;
            const size_t bh = (size_t)p->batch * p->heads;
            const size_t bg = (size_t)p->batch * attn_kv_heads(p);
            /* -1 - 0: from rank 0. */
            move_span(s->q, (int)bh, 0, &s->qs, p->d_k, false, -1, TAG_Q);
            move_span(s->kv[0], (int)bg, 0, &s->ks, p->d_k, false, -1, TAG_K);
            move_span(s->kv[0] + bg * s->nk * p->d_k, (int)bg, 0, &s->ks, p->d_v, false, -1,
                      TAG_V);
            pack_q(s);
            reset_stats(s);
            break;
        }
        case OP_RUN:
            if (s)
                local_run(s);
            break;
        case OP_READ: {
            if (!s)
                break;
            const attn_problem *p = &s->h.p;
            move_span(s->o, p->batch * p->heads, 0, &s->qs, p->d_v, false, 0, TAG_O);
            break;
        }
        case OP_STATS: {
            /* Rank 0 gathers from every rank: take part even without a case. */
            const attn_rank_stats mine = s ? own_stats(s) : (attn_rank_stats){ 0 };
            MPI_Gather(&mine, (int)sizeof(mine), MPI_BYTE, NULL, 0, MPI_BYTE, 0, MPI_COMM_WORLD);
            break;
        }
        case OP_RELEASE:
            ring_free(s);
            s = NULL;
            break;
        case OP_QUIT:
            ring_free(s);
            free(kv_len);
            return rc;
        default:
            fprintf(stderr, "attnbench: rank %d of %d: ring: unknown command %d from rank 0\n",
                    world.rank, world.size, c.op);
            ring_free(s);
            free(kv_len);
            return ATTN_EXIT_ERROR;
        }
    }
#endif
    return rc;
}

const attn_backend attn_backend_ring = {
    .name      = "ring",
#if !ATTN_HAVE_MPI && ATTN_MPI_DISABLED
    .not_built = "this build was configured with -Dmpi=disabled",
#elif !ATTN_HAVE_MPI
    .not_built = "MPI was not found at configure time (Debian: libopenmpi-dev openmpi-bin)",
#endif
    .summary   = "ring attention over MPI: sequence slices per rank, K/V blocks passed "
                 "around (mpirun -n P ./attnbench --backend=ring; 1 rank without mpirun)",
    .supports  = ring_supports,
    .prepare   = ring_prepare,
    .bind      = ring_bind,
    .run       = ring_run,
    .read      = ring_read,
    .release   = ring_release,
    .workspace = ring_workspace,
    .version   = ring_version,
    .world     = ring_world,
    .ranks     = ring_ranks,
};

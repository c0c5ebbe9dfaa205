/* tiled's backward, FlashAttention-2's: P is recomputed a tile at a time
 * from Q, K and the forward's L, and the N x N matrices never exist.
 *
 * Work units are (batch item, K/V head, chunk of key blocks). A unit holds
 * the dK and dV of one key block of Bc keys while it visits every query
 * block of every query head of the group (so the group's sum is made in
 * place), and per tile of Br queries x Bc keys, query-major:
 *   S   = Q_i K_j^T            qk on K_j^T packed once per key block
 *   dP  = dO_i V_j^T           qk on V_j^T packed once per key block
 *   P, dS' = bwd_ds(S, dP)     with L and D = rowsum(dO o O) of each row
 *   dV_j += P^T dO_i           pv
 *   dK_j += dS'^T Q_i          pv
 *   dQ_i += dS' K_j            pv_t, into the unit's own dQ rows
 * which is five products of the forward's size, as FlashAttention counts
 * them. D and L log2(e) are computed first, once per row.
 *
 * dQ sums over every key, across chunks: each chunk leaves its share in a
 * buffer of its own (the first in dQ itself), and they are added in chunk
 * order at the end. The chunks are fixed by the problem (BWD_UNITS), so
 * each element is summed in the same order for any thread count and the
 * result is bitwise the same. Workspace: the threads' tiles, D and L, and
 * chunks - 1 copies of dQ when B Hkv < BWD_UNITS: O(N d), never O(N^2).
 *
 * 16-bit Q, K, V are widened to fp32 as they are read (K and V once per
 * key block, Q once per tile); every product and sum is fp32. */
#include <math.h>
#include <string.h>

#include "kernels/half.h"
#include "tiled/internal.h"

/* Units the K/V heads are cut into at least (by chunks of keys), so that
 * a batch of one K/V head (multi-query) still keeps threads busy. */
#define BWD_UNITS 8

/* For each key block a unit streams its group's Q, dO and dQ through the
 * caches (G Nq (2 dk + dv) floats). Past BWD_STREAM bytes of them, tiles of
 * 128 x 128 rather than 64 x 64 halve those passes. Measured (B = 1, H = 8,
 * 2 threads, 2-core EPYC): N = 4096, d = 128 (6 MiB) 176 GFLOP/s with
 * 64 x 64, 193-195 with 128 x 128; N = 8192, d = 128, 178 and 195; under
 * it, N = 4096, d = 64 (3 MiB), 202 and 192, and N = 1024 and 2048 the
 * same within the noise. */
#define BWD_STREAM (4u << 20)

tiled_bwd tiled_bwd_plan(const attn_problem *p, const attn_config *cfg)
{
    tiled_bwd w = { 0 };
    const double stream = (double)attn_group(p) * p->seq_q * (2.0 * p->d_k + p->d_v) * sizeof(float);
    const int tile = stream > BWD_STREAM ? 128 : 64;
    w.br = cfg->tile_q > 0 ? cfg->tile_q : tile;
    w.bc = cfg->tile_kv > 0 ? cfg->tile_kv : tile;
    w.bcp = (int)round_up((size_t)w.bc, 16);
    const long heads = (long)p->batch * attn_kv_heads(p);
    const int nkb = (p->seq_kv + w.bc - 1) / w.bc;
    int chunks = heads >= BWD_UNITS ? 1 : (int)((BWD_UNITS + heads - 1) / heads);
    chunks = chunks > nkb ? nkb : chunks < 1 ? 1 : chunks;
    w.chunk_blocks = (nkb + chunks - 1) / chunks;
    w.chunks = w.chunk_blocks ? (nkb + w.chunk_blocks - 1) / w.chunk_blocks : 1;
    const size_t dk = (size_t)p->d_k, dv = (size_t)p->d_v, bc = (size_t)w.bc,
                 br = (size_t)w.br, bcp = (size_t)w.bcp;
    const bool q16 = attn_dtype_half(p->dtype), kv16 = p->kv_dtype != ATTN_DTYPE_FP32;
    const size_t f = sizeof(float);
    w.thread_bytes = round_up(dk * bcp * f, ALIGN) + round_up(dv * bcp * f, ALIGN) +
                     round_up(bc * dk * f, ALIGN) + round_up(bc * dv * f, ALIGN) +
                     2 * round_up(br * bcp * f, ALIGN) +
                     (kv16 ? round_up(bc * dk * f, ALIGN) + round_up(bc * dv * f, ALIGN) : 0) +
                     (q16 ? round_up(br * dk * f, ALIGN) : 0) +
                     round_up((br > bc ? br : bc) * f, ALIGN) + 2 * round_up(br * sizeof(int), ALIGN);
    return w;
}

static size_t dqp_bytes(const attn_problem *p, const tiled_bwd *w)
{
    return (size_t)p->batch * p->heads * (size_t)p->seq_q * p->d_k * (size_t)(w->chunks - 1) *
           sizeof(float);
}

size_t tiled_bwd_bytes(const attn_problem *p, const attn_config *cfg)
{
    if (!attn_backward(p))
        return 0;
    const tiled_bwd w = tiled_bwd_plan(p, cfg);
    const size_t rows = (size_t)p->batch * p->heads * p->seq_q;
    return (size_t)cfg->threads * w.thread_bytes + dqp_bytes(p, &w) + 2 * rows * sizeof(float);
}

attn_status tiled_bwd_alloc(tiled_state *s, const attn_config *cfg)
{
    const attn_problem *p = &s->h.p;
    if (!attn_backward(p))
        return ATTN_OK;
    tiled_bwd *w = &s->bwd;
    *w = tiled_bwd_plan(p, cfg);
    const size_t rows = (size_t)p->batch * p->heads * p->seq_q;
    w->scratch = attn_alloc(cfg->alloc, (size_t)cfg->threads * w->thread_bytes);
    w->dd = attn_alloc(cfg->alloc, 2 * rows * sizeof(float));
    if (w->chunks > 1)
        w->dqp = attn_alloc(cfg->alloc, dqp_bytes(p, w));
    if (!w->scratch || !w->dd || (w->chunks > 1 && !w->dqp))
        return ATTN_ENOMEM;
    w->lse2 = w->dd + rows;
    return ATTN_OK;
}

void tiled_bwd_free(tiled_state *s)
{
    attn_free(s->h.alloc, s->bwd.scratch);
    attn_free(s->h.alloc, s->bwd.dd);
    attn_free(s->h.alloc, s->bwd.dqp);
}

/* One thread's scratch (the order of tiled_bwd_plan's sum). */
typedef struct bwd_scratch {
    float *kt, *vt, *dka, *dva, *sp, *dp, *kw, *vw, *qw, *ones;
    int *beg, *end;
} bwd_scratch;

static bwd_scratch thread_scratch(const tiled_state *s, int tid)
{
    const attn_problem *p = &s->h.p;
    const tiled_bwd *w = &s->bwd;
    const size_t dk = (size_t)p->d_k, dv = (size_t)p->d_v, bc = (size_t)w->bc,
                 br = (size_t)w->br, bcp = (size_t)w->bcp, f = sizeof(float);
    unsigned char *at = w->scratch + (size_t)tid * w->thread_bytes;
    bwd_scratch x;
#define TAKE(ptr, bytes) do { (ptr) = (void *)at; at += round_up((bytes), ALIGN); } while (0)
    TAKE(x.kt, dk * bcp * f);
    TAKE(x.vt, dv * bcp * f);
    TAKE(x.dka, bc * dk * f);
    TAKE(x.dva, bc * dv * f);
    TAKE(x.sp, br * bcp * f);
    TAKE(x.dp, br * bcp * f);
    x.kw = x.vw = x.qw = NULL;
    if (p->kv_dtype != ATTN_DTYPE_FP32) {
        TAKE(x.kw, bc * dk * f);
        TAKE(x.vw, bc * dv * f);
    }
    if (attn_dtype_half(p->dtype))
        TAKE(x.qw, br * dk * f);
    TAKE(x.ones, (br > bc ? br : bc) * f);
    TAKE(x.beg, br * sizeof(int));
    TAKE(x.end, br * sizeof(int));
#undef TAKE
    for (size_t e = 0; e < (br > bc ? br : bc); e++)
        x.ones[e] = 1.0f;
    return x;
}

/* D and L log2(e) of every row. */
static void rows_first(const tiled_state *s)
{
    const attn_problem *p = &s->h.p;
    const attn_tensors *t = &s->h.t;
    const long rows = (long)p->batch * p->heads * p->seq_q;
    const int dv = p->d_v;
    const bool bug = atomic_load_explicit(&tiled_planted, memory_order_relaxed) ==
                     ATTN_TILED_PLANT_BWD_D_WRONG_O;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (long r = 0; r < rows; r++) {
        const long ro = bug && r + 1 < rows ? r + 1 : r;
        const float *o = t->o + (size_t)ro * dv, *d = t->dout + (size_t)r * dv;
        float dd = 0.0f;
        for (int c = 0; c < dv; c++)
            dd += o[c] * d[c];
        s->bwd.dd[r] = dd;
        s->bwd.lse2[r] = t->lse[r] * (float)ATTN_LOG2E;
    }
}

/* Key block kb's rows of K or V in fp32: in place, or widened into buf. */
static const float *kv_rows(const tiled_state *s, size_t r, int j0, int n, int cols,
                            const float *f32, const uint16_t *h, float *buf)
{
    const attn_problem *p = &s->h.p;
    const size_t at = (r * (size_t)p->seq_kv + (size_t)j0) * (size_t)cols;
    if (f32)
        return f32 + at;
    s->h.k->cvt_rows(buf, cols, h + at, cols, n, cols, p->kv_dtype == ATTN_DTYPE_BF16, 0);
    return buf;
}

/* Unit u: chunk u % chunks of K/V head u / chunks. */
static void unit(const tiled_state *s, const bwd_scratch *x, long u)
{
    const attn_problem *p = &s->h.p;
    const attn_tensors *t = &s->h.t;
    const attn_kernels *kn = s->h.k;
    const tiled_bwd *w = &s->bwd;
    const int hkv = attn_kv_heads(p), group = attn_group(p), nq = p->seq_q, nk = p->seq_kv;
    const int dk = p->d_k, dv = p->d_v, bcp = w->bcp;
    const size_t r = (size_t)(u / w->chunks);
    const int c = (int)(u % w->chunks), b = (int)(r / (size_t)hkv), g = (int)(r % (size_t)hkv);
    const size_t row0 = ((size_t)b * p->heads + (size_t)g * group) * nq, rows = (size_t)group * nq;
    float *dq = c == 0 ? t->dq + row0 * dk
                       : w->dqp + ((r * (size_t)(w->chunks - 1) + (size_t)(c - 1)) * rows) * dk;
    memset(dq, 0, rows * dk * sizeof(float));
    const float cap = p->mods.softcap > 0 ? (float)(p->mods.softcap * ATTN_LOG2E) : 0.0f;
    const int nkb = (nk + w->bc - 1) / w->bc;
    const int bug = atomic_load_explicit(&tiled_planted, memory_order_relaxed);
    const int kb1 = (c + 1) * w->chunk_blocks < nkb ? (c + 1) * w->chunk_blocks : nkb;

    for (int kb = c * w->chunk_blocks; kb < kb1; kb++) {
        const int j0 = kb * w->bc, n = nk - j0 < w->bc ? nk - j0 : w->bc;
        memset(x->dka, 0, (size_t)n * dk * sizeof(float));
        memset(x->dva, 0, (size_t)n * dv * sizeof(float));
        const float *kr = NULL, *vr = NULL;
        for (int hh = 0; hh < group; hh++) {
            const int h = g * group + hh;
            const float slope =
                p->mods.alibi ? (float)(attn_alibi_slope(p->heads, h) * ATTN_LOG2E) : 0.0f;
            for (int i0 = 0; i0 < nq; i0 += w->br) {
                const int m = nq - i0 < w->br ? nq - i0 : w->br;
                /* Each row's keys are one interval, both ends growing with i. */
                int lo0, hi0, lo1, hi1;
                attn_visible_range(p, b, i0, &lo0, &hi0);
                attn_visible_range(p, b, i0 + m - 1, &lo1, &hi1);
                if (hi1 <= j0 || lo0 >= j0 + n)
                    continue;
                const bool masked = lo1 > j0 || hi0 < j0 + n;
                for (int e = 0; masked && e < m; e++)
                    attn_visible_range(p, b, i0 + e, &x->beg[e], &x->end[e]);
                if (!kr) {
                    kr = kv_rows(s, r, j0, n, dk, t->k, t->k16, x->kw);
                    vr = kv_rows(s, r, j0, n, dv, t->v, t->v16, x->vw);
                    kn->pack_qt(x->kt, bcp, kr, dk, n, dk, s->qscale);
                    kn->pack_qt(x->vt, bcp, vr, dv, n, dv, 1.0f);
                }
                const size_t row = row0 + (size_t)hh * nq + (size_t)i0;
                const float *qr = t->q ? t->q + row * dk : x->qw;
                if (!t->q)
                    kn->cvt_rows(x->qw, dk, t->q16 + row * dk, dk, m, dk,
                                 p->dtype == ATTN_DTYPE_BF16, 0);
                const float *dor = t->dout + row * dv;
                kn->qk(x->sp, bcp, qr, dk, x->kt, bcp, m, n, dk, 0);
                kn->qk(x->dp, bcp, dor, dv, x->vt, bcp, m, n, dv, 0);
                /* The planted bugs: each K/V head's first tile (first query
                 * head, first query block, first key block) takes the next
                 * row's L; the group's sum restarts at each query head. */
                const bool wrong_l = bug == ATTN_TILED_PLANT_BWD_WRONG_L && kb == 0 && i0 == 0 &&
                                     hh == 0 && m < nq;
                if (bug == ATTN_TILED_PLANT_BWD_NO_GROUP_SUM && i0 == 0 && hh > 0) {
                    memset(x->dka, 0, (size_t)n * dk * sizeof(float));
                    memset(x->dva, 0, (size_t)n * dv * sizeof(float));
                }
                kn->bwd_ds(x->sp, x->dp, bcp, m, n, j0, w->lse2 + row + wrong_l, w->dd + row,
                           masked ? x->beg : NULL, masked ? x->end : NULL, cap, slope,
                           i0 + nk - nq, p->scale);
                kn->pv(x->dva, dv, x->sp, bcp, dor, dv, x->ones, n, m, dv, 0);
                kn->pv(x->dka, dk, x->dp, bcp, qr, dk, x->ones, n, m, dk, 0);
                kn->pv_t(dq + ((size_t)hh * nq + (size_t)i0) * dk, dk, x->dp, bcp, kr, dk,
                         x->ones, m, n, dk);
            }
        }
        if (bug == ATTN_TILED_PLANT_BWD_SCALE_TWICE && kb == kb1 - 1)
            for (size_t e = 0; e < rows * (size_t)dk; e++)
                dq[e] *= p->scale;
        memcpy(t->dk + (r * (size_t)nk + (size_t)j0) * dk, x->dka, (size_t)n * dk * sizeof(float));
        memcpy(t->dv + (r * (size_t)nk + (size_t)j0) * dv, x->dva, (size_t)n * dv * sizeof(float));
    }
}

/* dQ += the chunks' shares, in chunk order: rows [e0, e1) of K/V head r. */
static void merge(const tiled_state *s, size_t r, size_t e0, size_t e1)
{
    const attn_problem *p = &s->h.p;
    const tiled_bwd *w = &s->bwd;
    const int group = attn_group(p), hkv = attn_kv_heads(p), dk = p->d_k;
    const size_t rows = (size_t)group * p->seq_q;
    const size_t row0 = (r / (size_t)hkv * p->heads + r % (size_t)hkv * group) * p->seq_q;
    float *dq = s->h.t.dq + row0 * dk;
    for (int c = 1; c < w->chunks; c++) {
        const float *part = w->dqp + ((r * (size_t)(w->chunks - 1) + (size_t)(c - 1)) * rows) * dk;
        for (size_t e = e0 * dk; e < e1 * dk; e++)
            dq[e] += part[e];
    }
}

void tiled_backward(void *state)
{
    tiled_state *s = state;
    const attn_problem *p = &s->h.p;
    const tiled_bwd *w = &s->bwd;
    const long heads = (long)p->batch * attn_kv_heads(p), units = heads * w->chunks;
    const size_t rows = (size_t)attn_group(p) * p->seq_q;
    const long pieces = (long)((rows + 255) / 256);
#ifdef _OPENMP
#pragma omp parallel num_threads(s->h.threads)
#endif
    {
        const bwd_scratch x = thread_scratch(s, attn_thread_id());
        rows_first(s);
#ifdef _OPENMP
#pragma omp barrier
#pragma omp for schedule(dynamic, 1)
#endif
        for (long u = 0; u < units; u++)
            unit(s, &x, u);
        if (w->chunks > 1) {
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (long it = 0; it < heads * pieces; it++) {
                const size_t e0 = (size_t)(it % pieces) * 256;
                merge(s, (size_t)(it / pieces), e0, e0 + 256 < rows ? e0 + 256 : rows);
            }
        }
    }
}

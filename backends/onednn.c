/* onednn: attention from oneDNN primitives, as a framework would build it.
 *   S = scale * Q.K^T + M   one matmul over all (batch, head) at once: the
 *                           scale is the primitive's output scale, the mask
 *                           M (0 or -inf: causal, padding, a window) a
 *                           binary-add post-op; the softcap C, when there
 *                           is one, an output scale of scale / C and a tanh
 *                           post-op times C before the mask;
 *   P = softmax(S)          the softmax primitive along the key axis, in place;
 *   O = P.V                 one matmul, batched the same way.
 * K is read in place as the transposed weights [B,H,dk,Nk] (format abdc).
 * The whole score tensor B*H*Nq*Nk is materialized, as it is in a framework.
 *
 * The mask tensor is as small as the problem allows and oneDNN broadcasts it:
 * [1,1,Nq,Nk] for causal or a window, [B,1,1,Nk] for padding, [B,1,Nq,Nk]
 * for both. ALiBi, sinks and V read from K are not computed (SKIP).
 * Which broadcasts have a JIT implementation matters: in oneDNN 2.6 a
 * [1,1,Nq,Nk] mask over [B>1,H,Nq,Nk] scores falls back to the reference
 * matmul (ref:any), measured at 10 s against 11 ms for B*H=8, N=1024. So
 * without padding the tensors are seen as [1,B*H,N,d] (the same memory),
 * and any plan that still lands on a reference implementation is refused
 * (SKIP, with the primitive named) rather than timed as oneDNN's speed.
 * Grouped K/V heads: the G = H/Hkv query heads of a group are consecutive
 * in Q and O, so the whole problem is seen as Hkv heads of G*Nq queries
 * ([B,Hkv,G*Nq,d], the same memory) against [B,Hkv,Nk,d] K and V: each K/V
 * head is read by one matmul for its whole group, never copied; a causal
 * mask then has G*Nq rows (query i at rows i, Nq + i, ...).
 * A fully masked row is all -inf, which oneDNN's softmax turns into NaN;
 * run writes zeros over those output rows, as the contract asks.
 *
 * 16-bit storage (bf16, fp16; Q and K/V the same): the matmuls take the
 * 16-bit tensors as they are, with fp32 scores (dst) and fp32 O; the
 * softmax reads the fp32 scores and writes P in the storage type (a second
 * [B,H,Nq,Nk] buffer, of 16-bit values) for the P.V matmul: P is rounded
 * once, after normalization. Where oneDNN 2.6 has no JIT kernel for the
 * type on this CPU (fp16 without AVX512_FP16), the plan lands on a
 * reference implementation and the case is refused, as any such plan is.
 *
 * Everything is planned in prepare: primitives created once, the scratchpad
 * in user mode taken from the tracking allocator (one buffer shared by the
 * three primitives, which run one after another on one stream), fp32 math
 * forced to strict so no environment variable can lower the precision.
 *
 * Threads: Debian's oneDNN runs on OpenMP and sizes its work and scratchpad
 * for omp_get_max_threads() when a primitive is created, so prepare and run
 * both set it to the case's thread count and restore the caller's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "host.h"
#include "kernels/half.h"
#include "onednn.h"
#include "config.h"

#if ATTN_HAVE_ONEDNN && ATTN_HAVE_OPENMP

#include <omp.h>
#include <dnnl.h>
#include <dnnl_debug.h>

enum { PRIM_QK, PRIM_SOFTMAX, PRIM_PV, PRIM_COUNT };

static const char *const prim_name[PRIM_COUNT] = {
    [PRIM_QK]      = "Q.K^T matmul",
    [PRIM_SOFTMAX] = "softmax",
    [PRIM_PV]      = "P.V matmul",
};

/* The primitive descriptors for one problem and thread count. */
typedef struct plan {
    dnnl_engine_t eng;
    dnnl_primitive_desc_t pd[PRIM_COUNT];
    dnnl_memory_desc_t q, kt, s, pw, mask, v, o;   /* pw: P in the storage type */
    bool masked;
    bool reduced;                 /* 16-bit storage: P apart from S, in pw */
    size_t scratch;               /* the largest of the three scratchpads */
} plan;

typedef struct onednn_state {
    attn_host h;                  /* h.t: the bound tensors (O is computed into h.t.o) */
    plan pl;
    dnnl_stream_t stream;
    dnnl_primitive_t prim[PRIM_COUNT];
    dnnl_memory_t q, kt, s, pw, mask, v, o, scratch[PRIM_COUNT];
    float *scores;                /* [B,H,Nq,Nk] */
    uint16_t *weights;            /* [B,H,Nq,Nk] P in 16 bits (reduced plans only) */
    float *maskbuf;               /* the mask's dims, see mask_dims */
    void *scratchbuf;
} onednn_state;

static attn_status from_dnnl(dnnl_status_t st)
{
    switch (st) {
    case dnnl_success:          return ATTN_OK;
    case dnnl_out_of_memory:    return ATTN_ENOMEM;
    case dnnl_unimplemented:    return ATTN_EUNSUPPORTED;
    case dnnl_invalid_arguments:return ATTN_EINVAL;
    default:                    return ATTN_EINTERNAL;
    }
}

/* Runs with oneDNN's OpenMP team sized for the case. */
typedef struct omp_guard { int saved; } omp_guard;

static omp_guard threads_set(int threads)
{
    omp_guard g = { omp_get_max_threads() };
    omp_set_num_threads(threads);
    return g;
}

static void threads_restore(omp_guard g)
{
    omp_set_num_threads(g.saved);
}

/* Whether the mask has a row per query: causal, or a window. */
static bool mask_rows(const attn_problem *p)
{
    return p->causal || p->mods.window;
}

static void mask_dims(const attn_problem *p, dnnl_dims_t d)
{
    d[0] = p->kv_len ? p->batch : 1;
    d[1] = 1;
    d[2] = mask_rows(p) ? (dnnl_dim_t)attn_group(p) * p->seq_q : 1;
    d[3] = p->seq_kv;
}

static size_t mask_elems(const attn_problem *p)
{
    if (!mask_rows(p) && !p->kv_len)
        return 0;
    dnnl_dims_t d;
    mask_dims(p, d);
    return (size_t)d[0] * (size_t)d[2] * (size_t)d[3];
}

static size_t score_elems(const attn_problem *p)
{
    return (size_t)p->batch * p->heads * (size_t)p->seq_q * (size_t)p->seq_kv;
}

static void plan_destroy(plan *pl)
{
    for (int i = 0; i < PRIM_COUNT; i++)
        if (pl->pd[i])
            dnnl_primitive_desc_destroy(pl->pd[i]);
    if (pl->eng)
        dnnl_engine_destroy(pl->eng);
    memset(pl, 0, sizeof(*pl));
}

static dnnl_status_t attr_create(dnnl_primitive_attr_t *attr)
{
    dnnl_status_t st = dnnl_primitive_attr_create(attr);
    if (st != dnnl_success)
        return st;
    st = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_fpmath_mode(*attr, dnnl_fpmath_mode_strict);
    return st;
}

static dnnl_status_t create_qk(plan *pl, const attn_problem *p)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_matmul_desc_t md;
    /* The softcap C: the output scale divides by C, a tanh post-op times C
     * follows, before the mask. */
    const float cap = p->mods.softcap, scale = cap > 0 ? p->scale / cap : p->scale;
    dnnl_status_t st = attr_create(&attr);
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale);
    if (st == dnnl_success && (pl->masked || cap > 0)) {
        st = dnnl_post_ops_create(&po);
        if (st == dnnl_success && cap > 0)
            st = dnnl_post_ops_append_eltwise(po, cap, dnnl_eltwise_tanh, 0.0f, 0.0f);
        if (st == dnnl_success && pl->masked)
            st = dnnl_post_ops_append_binary(po, dnnl_binary_add, &pl->mask);
        if (st == dnnl_success)
            st = dnnl_primitive_attr_set_post_ops(attr, po);
    }
    if (st == dnnl_success)
        st = dnnl_matmul_desc_init(&md, &pl->q, &pl->kt, NULL, &pl->s);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(&pl->pd[PRIM_QK], &md, attr, pl->eng, NULL);
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

static dnnl_status_t create_softmax(plan *pl)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_softmax_desc_t sd;
    dnnl_softmax_v2_desc_t sd2;
    dnnl_status_t st = attr_create(&attr);
    if (st == dnnl_success && pl->reduced)
        st = dnnl_softmax_v2_forward_desc_init(&sd2, dnnl_forward_inference,
                                               dnnl_softmax_accurate, &pl->s, &pl->pw, 3);
    else if (st == dnnl_success)
        st = dnnl_softmax_forward_desc_init(&sd, dnnl_forward_inference, &pl->s, 3);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(&pl->pd[PRIM_SOFTMAX],
                                        pl->reduced ? (const void *)&sd2 : (const void *)&sd,
                                        attr, pl->eng, NULL);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

static dnnl_status_t create_pv(plan *pl)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_matmul_desc_t md;
    dnnl_status_t st = attr_create(&attr);
    if (st == dnnl_success)
        st = dnnl_matmul_desc_init(&md, pl->reduced ? &pl->pw : &pl->s, &pl->v, NULL, &pl->o);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(&pl->pd[PRIM_PV], &md, attr, pl->eng, NULL);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

static const char *impl_name(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
        !impl)
        return "?";
    return impl;
}

static dnnl_data_type_t dnnl_type(attn_dtype d)
{
    return d == ATTN_DTYPE_BF16 ? dnnl_bf16 : d == ATTN_DTYPE_FP16 ? dnnl_f16 : dnnl_f32;
}

/* Describes the tensors and creates the three primitive descriptors; the
 * caller has set the thread count. On failure why says which step. */
static attn_status plan_dims(plan *pl, const attn_problem *p, bool collapse, char *why,
                             size_t len)
{
    memset(pl, 0, sizeof(*pl));
    /* Batch dimensions: only a padding mask needs the batch index. */
    collapse = collapse && !p->kv_len;
    const dnnl_dim_t hkv = attn_kv_heads(p);
    const dnnl_dim_t B = collapse ? 1 : p->batch, H = collapse ? (dnnl_dim_t)p->batch * hkv : hkv,
                     nq = (dnnl_dim_t)attn_group(p) * p->seq_q, nk = p->seq_kv, dk = p->d_k,
                     dv = p->d_v;
    const dnnl_dims_t dq = { B, H, nq, dk }, dkt = { B, H, dk, nk }, ds = { B, H, nq, nk },
                      dvv = { B, H, nk, dv }, dout = { B, H, nq, dv };
    dnnl_dims_t dm;
    mask_dims(p, dm);
    pl->masked = mask_elems(p) > 0;
    pl->reduced = attn_reduced(p);
    const dnnl_data_type_t tq = dnnl_type(p->dtype), tkv = dnnl_type(p->kv_dtype);
    const char *step = "the engine";
    dnnl_status_t st = dnnl_engine_create(&pl->eng, dnnl_cpu, 0);
    if (st == dnnl_success) {
        step = "the memory descriptors";
        st = dnnl_memory_desc_init_by_tag(&pl->q, 4, dq, tq, dnnl_abcd);
    }
    /* K [B,H,Nk,dk] seen as K^T [B,H,dk,Nk]: the last two strides swapped. */
    if (st == dnnl_success)
        st = dnnl_memory_desc_init_by_tag(&pl->kt, 4, dkt, tkv, dnnl_abdc);
    if (st == dnnl_success)
        st = dnnl_memory_desc_init_by_tag(&pl->s, 4, ds, dnnl_f32, dnnl_abcd);
    if (st == dnnl_success && pl->reduced)
        st = dnnl_memory_desc_init_by_tag(&pl->pw, 4, ds, tkv, dnnl_abcd);
    if (st == dnnl_success && pl->masked)
        st = dnnl_memory_desc_init_by_tag(&pl->mask, 4, dm, dnnl_f32, dnnl_abcd);
    if (st == dnnl_success)
        st = dnnl_memory_desc_init_by_tag(&pl->v, 4, dvv, tkv, dnnl_abcd);
    if (st == dnnl_success)
        st = dnnl_memory_desc_init_by_tag(&pl->o, 4, dout, dnnl_f32, dnnl_abcd);
    if (st == dnnl_success) {
        step = prim_name[PRIM_QK];
        st = create_qk(pl, p);
    }
    if (st == dnnl_success) {
        step = prim_name[PRIM_SOFTMAX];
        st = create_softmax(pl);
    }
    if (st == dnnl_success) {
        step = prim_name[PRIM_PV];
        st = create_pv(pl);
    }
    if (st != dnnl_success) {
        if (st == dnnl_unimplemented && attn_reduced(p))
            snprintf(why, len, "onednn: %s: %s for %s storage (oneDNN %d.%d has no "
                     "implementation of it for this CPU)", step, dnnl_status2str(st),
                     attn_dtype_name(p->dtype), dnnl_version()->major, dnnl_version()->minor);
        else
            snprintf(why, len, "onednn: %s: %s", step, dnnl_status2str(st));
        plan_destroy(pl);
        return from_dnnl(st);
    }
    for (int i = 0; i < PRIM_COUNT; i++) {
        const char *impl = impl_name(pl->pd[i]);
        if (!strncmp(impl, "ref", 3)) {
            snprintf(why, len, "onednn: oneDNN has only its reference implementation (%s) for "
                     "the %s of this shape, orders of magnitude slower than its JIT kernels; "
                     "not timed as oneDNN's speed", impl, prim_name[i]);
            plan_destroy(pl);
            return ATTN_EUNSUPPORTED;
        }
        const dnnl_memory_desc_t *md =
            dnnl_primitive_desc_query_md(pl->pd[i], dnnl_query_scratchpad_md, 0);
        const size_t bytes = md ? dnnl_memory_desc_get_size(md) : 0;
        if (bytes > pl->scratch)
            pl->scratch = bytes;
    }
    return ATTN_OK;
}

static attn_status plan_create(plan *pl, const attn_problem *p, char *why, size_t len)
{
    return plan_dims(pl, p, true, why, len);
}

attn_status attn_onednn_plan_check(const attn_problem *p, bool collapse, char *why, size_t len)
{
    plan pl;
    const attn_status st = plan_dims(&pl, p, collapse, why, len);
    if (st == ATTN_OK)
        plan_destroy(&pl);
    return st;
}

static attn_status onednn_supports(const attn_problem *p, const attn_config *cfg, char *why,
                                   size_t len)
{
    (void)cfg;
    if (p->dtype != p->kv_dtype) {
        snprintf(why, len, "onednn: its matmuls take Q and K/V of one type (this case: Q %s, "
                 "K/V %s)", attn_dtype_name(p->dtype), attn_dtype_name(p->kv_dtype));
        return ATTN_EUNSUPPORTED;
    }
    return attn_onednn_plan_check(p, true, why, len);
}

/* Exact: the scratchpad size is the one oneDNN asks for with these threads. */
static size_t onednn_workspace(const attn_problem *p, const attn_config *cfg)
{
    size_t bytes = attn_host_workspace(sizeof(onednn_state), p);
    bytes += score_elems(p) * sizeof(float);
    if (attn_reduced(p))
        bytes += score_elems(p) * sizeof(uint16_t);
    bytes += mask_elems(p) * sizeof(float);
    plan pl;
    char why[256];
    const omp_guard g = threads_set(cfg->threads);
    if (plan_create(&pl, p, why, sizeof(why)) == ATTN_OK) {
        bytes += pl.scratch;
        plan_destroy(&pl);
    }
    threads_restore(g);
    return bytes;
}

static void onednn_release(void *state)
{
    onednn_state *s = state;
    if (!s)
        return;
    dnnl_memory_t *mems[] = { &s->q, &s->kt, &s->s, &s->pw, &s->mask, &s->v, &s->o,
                              &s->scratch[0], &s->scratch[1], &s->scratch[2] };
    for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
        if (*mems[i])
            dnnl_memory_destroy(*mems[i]);
    for (int i = 0; i < PRIM_COUNT; i++)
        if (s->prim[i])
            dnnl_primitive_destroy(s->prim[i]);
    if (s->stream)
        dnnl_stream_destroy(s->stream);
    plan_destroy(&s->pl);
    const attn_allocator *a = s->h.alloc;
    attn_free(a, s->scratchbuf);
    attn_free(a, s->maskbuf);
    attn_free(a, s->scores);
    attn_free(a, s->weights);
    attn_host_destroy(s);
}

/* M[b][i][j] = 0 where query i of batch b sees key j, else -inf; a mask
 * dimension of extent 1 is broadcast by the post-op. */
static void fill_mask(const onednn_state *s)
{
    const attn_problem *p = &s->h.p;
    dnnl_dims_t d;
    mask_dims(p, d);
    float *m = s->maskbuf;
    for (int b = 0; b < (int)d[0]; b++)
        for (int r = 0; r < (int)d[2]; r++) {
            /* Row r is query r % Nq of a group's head; without causal or
             * a window the row does not matter: any will do. */
            int beg, end;
            attn_visible_range(p, b, mask_rows(p) ? r % p->seq_q : p->seq_q - 1, &beg, &end);
            for (int j = 0; j < p->seq_kv; j++)
                *m++ = j >= beg && j < end ? 0.0f : -INFINITY;
        }
}

static dnnl_status_t make_memories(onednn_state *s)
{
    const plan *pl = &s->pl;
    dnnl_status_t st = dnnl_memory_create(&s->q, &pl->q, pl->eng, DNNL_MEMORY_NONE);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->kt, &pl->kt, pl->eng, DNNL_MEMORY_NONE);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->v, &pl->v, pl->eng, DNNL_MEMORY_NONE);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->o, &pl->o, pl->eng, DNNL_MEMORY_NONE);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->s, &pl->s, pl->eng, s->scores);
    if (st == dnnl_success && pl->reduced)
        st = dnnl_memory_create(&s->pw, &pl->pw, pl->eng, s->weights);
    if (st == dnnl_success && pl->masked)
        st = dnnl_memory_create(&s->mask, &pl->mask, pl->eng, s->maskbuf);
    for (int i = 0; i < PRIM_COUNT && st == dnnl_success; i++) {
        const dnnl_memory_desc_t *md =
            dnnl_primitive_desc_query_md(pl->pd[i], dnnl_query_scratchpad_md, 0);
        if (md && dnnl_memory_desc_get_size(md) > 0)
            st = dnnl_memory_create(&s->scratch[i], md, pl->eng, s->scratchbuf);
    }
    return st;
}

static attn_status onednn_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    onednn_state *s;
    attn_status rc = attn_host_create(sizeof(*s), p, cfg, (void **)&s);
    if (rc != ATTN_OK)
        return rc;
    const omp_guard g = threads_set(cfg->threads);
    char why[256];
    if ((rc = plan_create(&s->pl, &s->h.p, why, sizeof(why))) != ATTN_OK)
        goto fail;
    rc = ATTN_ENOMEM;
    s->scores = attn_alloc(cfg->alloc, score_elems(p) * sizeof(float));
    if (!s->scores)
        goto fail;
    if (s->pl.reduced && !(s->weights = attn_alloc(cfg->alloc, score_elems(p) * sizeof(uint16_t))))
        goto fail;
    if (s->pl.masked) {
        s->maskbuf = attn_alloc(cfg->alloc, mask_elems(p) * sizeof(float));
        if (!s->maskbuf)
            goto fail;
        fill_mask(s);
    }
    if (s->pl.scratch && !(s->scratchbuf = attn_alloc(cfg->alloc, s->pl.scratch)))
        goto fail;
    dnnl_status_t st = make_memories(s);
    if (st == dnnl_success)
        st = dnnl_stream_create(&s->stream, s->pl.eng, dnnl_stream_default_flags);
    for (int i = 0; i < PRIM_COUNT && st == dnnl_success; i++)
        st = dnnl_primitive_create(&s->prim[i], s->pl.pd[i]);
    if (st != dnnl_success) {
        rc = from_dnnl(st);
        goto fail;
    }
    threads_restore(g);
    *state = s;
    return ATTN_OK;
fail:
    threads_restore(g);
    onednn_release(s);
    return rc;
}

static attn_status onednn_bind(void *state, const attn_tensors *t)
{
    onednn_state *s = state;
    /* oneDNN takes non-const handles; the primitives only read Q, K, V. */
    const bool q16 = s->h.p.dtype != ATTN_DTYPE_FP32, kv16 = s->h.p.kv_dtype != ATTN_DTYPE_FP32;
    dnnl_status_t st = dnnl_memory_set_data_handle(s->q, q16 ? (void *)t->q16 : (void *)t->q);
    if (st == dnnl_success)
        st = dnnl_memory_set_data_handle(s->kt, kv16 ? (void *)t->k16 : (void *)t->k);
    if (st == dnnl_success)
        st = dnnl_memory_set_data_handle(s->v, kv16 ? (void *)t->v16 : (void *)t->v);
    if (st == dnnl_success)
        st = dnnl_memory_set_data_handle(s->o, t->o);
    attn_host_bind(s, t);
    return from_dnnl(st);
}

static dnnl_status_t execute(const onednn_state *s, int i, dnnl_exec_arg_t *args, int nargs)
{
    if (s->scratch[i])
        args[nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_SCRATCHPAD, s->scratch[i] };
    return dnnl_primitive_execute(s->prim[i], s->stream, nargs, args);
}

/* Rows that see no key: the softmax left NaN there, the contract says 0. */
static void zero_masked_rows(const onednn_state *s)
{
    const attn_problem *p = &s->h.p;
    const size_t row = (size_t)p->d_v;
    for (int b = 0; b < p->batch; b++)
        for (int i = 0; i < p->seq_q; i++) {
            int beg, end;
            attn_visible_range(p, b, i, &beg, &end);
            if (end > beg)
                continue;
            for (int h = 0; h < p->heads; h++)
                memset(s->h.t.o + (((size_t)b * p->heads + h) * p->seq_q + i) * row, 0,
                       row * sizeof(float));
        }
}

/* Whether head (b, h) of x (K or V, rows of d) holds a NaN or Inf among the
 * keys some query cannot see, [visible_end(b, 0), Nk), or with a window
 * anywhere. The mask is added to the scores (NaN + -inf = NaN) and P V
 * multiplies every key by its weight (0 x NaN = NaN), so such a key would
 * reach rows that mask it. */
static bool masked_nonfinite(const onednn_state *s, bool is_v, int b, int h)
{
    const attn_problem *p = &s->h.p;
    const int lo = p->mods.window ? 0 : attn_visible_end(p, b, 0), d = is_v ? p->d_v : p->d_k;
    const size_t bh = attn_kv_head(p, b, h), at = (bh * p->seq_kv + lo) * d;
    const size_t n = (size_t)(p->seq_kv - lo) * d;
    if (lo >= p->seq_kv)
        return false;
    if (p->kv_dtype == ATTN_DTYPE_FP32)
        return !attn_rows_finite((is_v ? s->h.t.v : s->h.t.k) + at, n, 1);
    const uint16_t *x = (is_v ? s->h.t.v16 : s->h.t.k16) + at;
    const unsigned e = p->kv_dtype == ATTN_DTYPE_BF16 ? 0x7f80u : 0x7c00u;
    for (size_t i = 0; i < n; i++)
        if ((x[i] & e) == e)
            return true;
    return false;
}

/* Element i of a 16-bit tensor of p's K/V type. */
static float kv16(const attn_problem *p, const uint16_t *x, size_t i)
{
    return attn_half_to_f32(x[i], p->kv_dtype == ATTN_DTYPE_BF16);
}

/* Scores of head (b, h) set to -inf outside each row's visible keys. */
static void remask_head(const onednn_state *s, int b, int h)
{
    const attn_problem *p = &s->h.p;
    float *sc = s->scores + ((size_t)b * p->heads + h) * p->seq_q * p->seq_kv;
    for (int i = 0; i < p->seq_q; i++) {
        int beg, end;
        attn_visible_range(p, b, i, &beg, &end);
        for (int j = 0; j < p->seq_kv; j++)
            if (j < beg || j >= end)
                sc[(size_t)i * p->seq_kv + j] = -INFINITY;
    }
}

/* Rows of head (b, h) that do not see every key, again over their visible
 * keys only, from P (the softmax left it in the scores, or in 16 bits in
 * the weights). */
static void masked_rows_pv(const onednn_state *s, int b, int h)
{
    const attn_problem *p = &s->h.p;
    const int nk = p->seq_kv, dv = p->d_v;
    const size_t bh = (size_t)b * p->heads + h, v0 = attn_kv_head(p, b, h) * nk * dv;
    const size_t p0 = bh * p->seq_q * nk;
    for (int i = 0; i < p->seq_q; i++) {
        int beg, end;
        attn_visible_range(p, b, i, &beg, &end);
        if (beg == 0 && end == nk)
            continue;
        float *o = s->h.t.o + (bh * p->seq_q + i) * dv;
        memset(o, 0, (size_t)dv * sizeof(float));
        for (int j = beg; j < end; j++) {
            const size_t at = p0 + (size_t)i * nk + j;
            const float w = s->pl.reduced ? kv16(p, s->weights, at) : s->scores[at];
            for (int c = 0; c < dv; c++) {
                const size_t e = v0 + (size_t)j * dv + c;
                o[c] += w * (s->pl.reduced ? kv16(p, s->h.t.v16, e) : s->h.t.v[e]);
            }
        }
    }
}

static attn_status onednn_run(void *state)
{
    onednn_state *s = state;
    const omp_guard g = threads_set(s->h.threads);
    dnnl_exec_arg_t qk[5] = {
        { DNNL_ARG_SRC, s->q }, { DNNL_ARG_WEIGHTS, s->kt }, { DNNL_ARG_DST, s->s },
        /* The mask's post-op follows the softcap's tanh when there is one. */
        { DNNL_ARG_ATTR_MULTIPLE_POST_OP(s->h.p.mods.softcap > 0 ? 1 : 0) | DNNL_ARG_SRC_1,
          s->mask },
    };
    const dnnl_memory_t pm = s->pl.reduced ? s->pw : s->s;
    dnnl_exec_arg_t sm[3] = { { DNNL_ARG_SRC, s->s }, { DNNL_ARG_DST, pm } };
    dnnl_exec_arg_t pv[4] = {
        { DNNL_ARG_SRC, pm }, { DNNL_ARG_WEIGHTS, s->v }, { DNNL_ARG_DST, s->o },
    };
    const attn_problem *p = &s->h.p;
    bool kbad = false, vbad = false;
    /* Once per K/V head: the first query head of each group reads it. */
    for (int b = 0; s->pl.masked && b < p->batch; b++)
        for (int h = 0; h < p->heads; h += attn_group(p)) {
            kbad |= masked_nonfinite(s, false, b, h);
            vbad |= masked_nonfinite(s, true, b, h);
        }
    dnnl_status_t st = execute(s, PRIM_QK, qk, s->pl.masked ? 4 : 3);
    if (st == dnnl_success && kbad && (st = dnnl_stream_wait(s->stream)) == dnnl_success)
        for (int b = 0; b < p->batch; b++)
            for (int h = 0; h < p->heads; h++)
                if (masked_nonfinite(s, false, b, h))
                    remask_head(s, b, h);
    if (st == dnnl_success)
        st = execute(s, PRIM_SOFTMAX, sm, 2);
    if (st == dnnl_success)
        st = execute(s, PRIM_PV, pv, 3);
    if (st == dnnl_success)
        st = dnnl_stream_wait(s->stream);
    threads_restore(g);
    if (st == dnnl_success && vbad)
        for (int b = 0; b < p->batch; b++)
            for (int h = 0; h < p->heads; h++)
                if (masked_nonfinite(s, true, b, h))
                    masked_rows_pv(s, b, h);
    if (st == dnnl_success)
        zero_masked_rows(s);
    return from_dnnl(st);
}

static const char *onednn_version(void)
{
    static char buf[128];
    const dnnl_version_t *v = dnnl_version();
    /* The highest ISA it may dispatch to; a primitive may use less (its
     * implementation name says which: ONEDNN_VERBOSE=1). */
    const char *isa = dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa());
    if (!strncmp(isa, "cpu_isa_", 8))
        isa += 8;
    snprintf(buf, sizeof(buf), "oneDNN %d.%d.%d, %s runtime, max ISA %s", v->major, v->minor,
             v->patch, dnnl_runtime2str(v->cpu_runtime), isa);
    return buf;
}

const attn_backend attn_backend_onednn = {
    .name      = "onednn",
    .summary   = "oneDNN batched matmul + mask post-op + softmax + matmul, materialized scores",
    .dtypes    = ATTN_DTYPE_BIT(ATTN_DTYPE_BF16) | ATTN_DTYPE_BIT(ATTN_DTYPE_FP16),
    .mods      = ATTN_MOD_WINDOW | ATTN_MOD_SOFTCAP,
    .supports  = onednn_supports,
    .prepare   = onednn_prepare,
    .bind      = onednn_bind,
    .run       = onednn_run,
    .read      = attn_host_read,
    .release   = onednn_release,
    .workspace = onednn_workspace,
    .version   = onednn_version,
};

#else

const attn_backend attn_backend_onednn = {
    .name      = "onednn",
    .summary   = "oneDNN batched matmul + mask post-op + softmax + matmul, materialized scores",
#if ATTN_HAVE_ONEDNN
    .not_built = "this build has no OpenMP, and Debian's oneDNN takes its thread count "
                 "from OpenMP (reconfigure with -Dopenmp=enabled)",
#elif ATTN_ONEDNN_DISABLED
    .not_built = "this build was configured with -Donednn=disabled",
#else
    .not_built = "oneDNN was not found (CMake package dnnl or libdnnl + dnnl.h; "
                 "Debian: libdnnl-dev)",
#endif
};

#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models.h"
#include "shapes.h"

static size_t count_or_1(const attn_list *l)
{
    return l->n ? l->n : 1;
}

size_t attn_shapes_count(const attn_opts *o)
{
    const size_t causal = (o->causal & ATTN_CAUSAL_NO ? 1 : 0) + (o->causal & ATTN_CAUSAL_YES ? 1 : 0);
    return (o->nmodels ? o->nmodels : 1) * o->batch.n * o->heads.n * count_or_1(&o->kv_heads) * o->seq.n *
           count_or_1(&o->seq_kv) * o->dk.n *
           count_or_1(&o->dv) * count_or_1(&o->page) * count_or_1(&o->dtype) * count_or_1(&o->kv_dtype) * causal *
           count_or_1(&o->pass);
}

/* Mixed-radix decoding, the innermost (the pass, causal, then K/V's and
 * Q's storage types) varying fastest. */
bool attn_shape_buf_alloc(attn_shape_buf *buf, const attn_opts *o)
{
    memset(buf, 0, sizeof(*buf));
    const int n = attn_shapes_max_batch(o);
    buf->kv = calloc((size_t)n, sizeof(int));
    if (!buf->kv || !attn_batch_alloc(&buf->batch, n)) {
        attn_shape_buf_free(buf);
        return false;
    }
    return true;
}

void attn_shape_buf_free(attn_shape_buf *buf)
{
    free(buf->kv);
    attn_batch_free(&buf->batch);
    memset(buf, 0, sizeof(*buf));
}

void attn_shapes_problem(const attn_opts *o, size_t idx, attn_problem *p, attn_shape_buf *buf)
{
    const size_t pass = idx % count_or_1(&o->pass);
    idx /= count_or_1(&o->pass);
    const bool both = (o->causal & ATTN_CAUSAL_NO) && (o->causal & ATTN_CAUSAL_YES);
    bool causal = !(o->causal & ATTN_CAUSAL_NO);
    if (both) {
        causal = idx % 2;
        idx /= 2;
    }
    size_t i;
    i = idx % count_or_1(&o->page); idx /= count_or_1(&o->page); const size_t pg = i;
    i = idx % count_or_1(&o->kv_dtype); idx /= count_or_1(&o->kv_dtype); const size_t kvd = i;
    i = idx % count_or_1(&o->dtype); idx /= count_or_1(&o->dtype); const size_t dt = i;
    i = idx % count_or_1(&o->dv);  idx /= count_or_1(&o->dv);      const size_t dv = i;
    i = idx % o->dk.n;             idx /= o->dk.n;                 const size_t dk = i;
    i = idx % count_or_1(&o->seq_kv); idx /= count_or_1(&o->seq_kv); const size_t skv = i;
    i = idx % o->seq.n;            idx /= o->seq.n;                const size_t sq = i;
    i = idx % count_or_1(&o->kv_heads); idx /= count_or_1(&o->kv_heads); const size_t hkv = i;
    i = idx % o->heads.n;          idx /= o->heads.n;              const size_t h = i;
    const size_t b = idx % o->batch.n;
    idx /= o->batch.n;
    const attn_model *pm = o->nmodels ? o->models[idx % o->nmodels] : NULL;

    memset(p, 0, sizeof(*p));
    p->batch = o->batch.v[b];
    p->heads = o->heads.v[h];
    p->kv_heads = o->kv_heads.n ? o->kv_heads.v[hkv] : p->heads;
    p->seq_q = o->seq.v[sq];
    p->seq_kv = o->seq_kv.n ? o->seq_kv.v[skv] : p->seq_q;
    p->d_k = o->dk.v[dk];
    p->d_v = o->dv.n ? o->dv.v[dv] : p->d_k;
    p->scale = o->scale_set ? o->scale : (float)(1.0 / sqrt((double)p->d_k));
    p->causal = causal;
    p->dtype = o->dtype.n ? (attn_dtype)o->dtype.v[dt] : ATTN_DTYPE_FP32;
    p->kv_dtype = o->kv_dtype.n ? (attn_dtype)o->kv_dtype.v[kvd] : p->dtype;
    p->var = o->var;
    p->var.seed = o->setup.seed;
    p->pass = o->pass.n ? (attn_pass)o->pass.v[pass] : ATTN_PASS_FWD;
    p->mods = o->mods;
    if (pm) {
        /* The preset, under every option given explicitly. */
        p->model = pm->name;
        p->heads = o->heads_set ? p->heads : pm->heads;
        p->kv_heads = o->kv_heads_set ? p->kv_heads : pm->kv_heads;
        p->d_k = o->dk_set ? p->d_k : pm->d_k;
        p->d_v = o->dv_set ? p->d_v : o->dk_set ? p->d_k : pm->d_v;
        p->scale = o->scale_set ? o->scale
                                : o->dk_set ? (float)(1.0 / sqrt((double)p->d_k))
                                            : attn_model_scale(pm);
        p->causal = o->causal_set ? causal : pm->causal;
        p->mods = pm->mods;
        if (o->mods_set & ATTN_MOD_WINDOW) {
            p->mods.window = true;
            p->mods.left = o->mods.left;
            p->mods.right = o->mods.right;
        }
        if (o->mods_set & ATTN_MOD_SOFTCAP)
            p->mods.softcap = o->mods.softcap;
        p->mods.alibi |= o->mods.alibi;
        p->mods.sinks |= o->mods.sinks;
        p->mods.v_from_k |= o->mods.v_from_k;
    }
    if (o->kv_len) {
        for (int x = 0; x < p->batch; x++)
            buf->kv[x] = o->kv_len[o->nkv == 1 ? 0 : x];
        p->kv_len = buf->kv;
    }
    /* A serving batch: --lens, or a dense shape in pages (--page). */
    const int page = o->page.n ? o->page.v[pg] : 0;
    if (o->lens.spec) {
        attn_batch_make(&buf->batch, &o->lens, p->batch, page, o->setup.seed, &p->seq_q,
                        &p->seq_kv);
        p->ragged = &buf->batch.r;
        p->lens = o->lens.spec;
    } else if (page) {
        attn_batch_dense(&buf->batch, p->batch, p->seq_q, p->seq_kv, page);
        p->ragged = &buf->batch.r;
    }
}

int attn_shapes_max_batch(const attn_opts *o)
{
    int maxb = 1;
    for (size_t i = 0; i < o->batch.n; i++)
        maxb = o->batch.v[i] > maxb ? o->batch.v[i] : maxb;
    return maxb;
}

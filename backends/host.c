#include <stdio.h>

#include "host.h"

static size_t kv_len_bytes(const attn_problem *p)
{
    return p->kv_len ? (size_t)p->batch * sizeof(int) : 0;
}

/* A serving batch's lengths: nq, nk [B] ints, then q0, k0 [B + 1] longs. */
static size_t lens_bytes(const attn_problem *p)
{
    return p->ragged ? 2 * (size_t)p->batch * sizeof(int) +
                           2 * ((size_t)p->batch + 1) * sizeof(long)
                     : 0;
}

size_t attn_host_workspace(size_t size, const attn_problem *p)
{
    return size + kv_len_bytes(p) + lens_bytes(p);
}

static bool copy_lens(attn_host *h, const attn_problem *p, const attn_allocator *a)
{
    const size_t b = (size_t)p->batch;
    if (!(h->lens = attn_alloc(a, lens_bytes(p))))
        return false;
    long *q0 = h->lens, *k0 = q0 + b + 1;
    int *nq = (int *)(k0 + b + 1), *nk = nq + b;
    memcpy(q0, p->ragged->q0, (b + 1) * sizeof(long));
    memcpy(k0, p->ragged->k0, (b + 1) * sizeof(long));
    memcpy(nq, p->ragged->nq, b * sizeof(int));
    memcpy(nk, p->ragged->nk, b * sizeof(int));
    h->ragged = (attn_ragged){ .nq = nq, .nk = nk, .q0 = q0, .k0 = k0, .page = p->ragged->page };
    h->p.ragged = &h->ragged;
    return true;
}

attn_status attn_host_create(size_t size, const attn_problem *p, const attn_config *cfg,
                             void **state)
{
    *state = NULL;
    const attn_kernels *k = attn_kernels_for(cfg->isa);
    if (!k)
        return ATTN_EUNSUPPORTED;
    attn_host *h = attn_alloc(cfg->alloc, size);
    if (!h)
        return ATTN_ENOMEM;
    memset(h, 0, size);
    h->alloc = cfg->alloc;
    h->p = *p;
    h->threads = cfg->threads;
    h->k = k;
    if (p->kv_len) {
        if (!(h->kv_len = attn_alloc(cfg->alloc, kv_len_bytes(p)))) {
            attn_free(cfg->alloc, h);
            return ATTN_ENOMEM;
        }
        memcpy(h->kv_len, p->kv_len, kv_len_bytes(p));
        h->p.kv_len = h->kv_len;
    }
    if (p->ragged && !copy_lens(h, p, cfg->alloc)) {
        attn_free(cfg->alloc, h->kv_len);
        attn_free(cfg->alloc, h);
        return ATTN_ENOMEM;
    }
    *state = h;
    return ATTN_OK;
}

void attn_host_destroy(void *state)
{
    attn_host *h = state;
    if (!h)
        return;
    const attn_allocator *a = h->alloc;
    attn_free(a, h->kv_len);
    attn_free(a, h->lens);
    attn_free(a, h);
}

attn_status attn_host_bind(void *state, const attn_tensors *t)
{
    ((attn_host *)state)->t = *t;
    return ATTN_OK;
}

/* A copy only when the output is wanted somewhere else than the bound O. */
attn_status attn_host_read(void *state, float *out)
{
    const attn_host *h = state;
    const attn_problem *p = &h->p;
    if (out != h->t.o)
        memcpy(out, h->t.o, attn_q_rows(p) * (size_t)p->d_v * sizeof(float));
    return ATTN_OK;
}

attn_status attn_host_run_passes(void *state, attn_host_pass_fn *forward,
                                 attn_host_pass_fn *backward)
{
    const attn_problem *p = &((attn_host *)state)->p;
    if (p->pass != ATTN_PASS_BWD)
        forward(state);
    if (attn_backward(p))
        backward(state);
    return ATTN_OK;
}

attn_status attn_host_bind_passes(void *state, const attn_tensors *t, attn_host_pass_fn *forward)
{
    attn_host_bind(state, t);
    if (((attn_host *)state)->p.pass == ATTN_PASS_BWD)
        forward(state);
    return ATTN_OK;
}

attn_status attn_host_read_grads(void *state, float *dq, float *dk, float *dv)
{
    const attn_host *h = state;
    const attn_problem *p = &h->p;
    const size_t kv = (size_t)p->batch * attn_kv_heads(p) * p->seq_kv;
    if (dq != h->t.dq)
        memcpy(dq, h->t.dq, (size_t)p->batch * p->heads * p->seq_q * p->d_k * sizeof(float));
    if (dk != h->t.dk)
        memcpy(dk, h->t.dk, kv * p->d_k * sizeof(float));
    if (dv != h->t.dv)
        memcpy(dv, h->t.dv, kv * p->d_v * sizeof(float));
    return ATTN_OK;
}

attn_status attn_host_supports_isa(const char *name, const attn_config *cfg, char *why,
                                   size_t len)
{
    if (attn_isa_usable(cfg->isa))
        return ATTN_OK;
    snprintf(why, len, "%s: this CPU or build cannot run the %s kernels", name,
             attn_isa_name(cfg->isa));
    return ATTN_EUNSUPPORTED;
}

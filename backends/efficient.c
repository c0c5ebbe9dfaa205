#include <stdio.h>

#include "efficient.h"

attn_status attn_efficient_supports(const attn_problem *p, const attn_config *cfg, char *why,
                                    size_t len)
{
    attn_status st = attn_variant_supports(p, why, len);
    if (st == ATTN_OK && p->kind != ATTN_KIND_LOCAL && p->kind != ATTN_KIND_SPARSE &&
        attn_kv_heads(p) != p->heads) {
        snprintf(why, len, "%s: grouped K/V heads (Hkv = %d of H = %d) are not supported; "
                 "it runs Hkv = H only", attn_kind_name(p->kind), attn_kv_heads(p), p->heads);
        st = ATTN_EUNSUPPORTED;
    }
    if (st == ATTN_EINVAL)
        st = ATTN_EUNSUPPORTED;
    return st == ATTN_OK ? attn_host_supports_isa(attn_kind_name(p->kind), cfg, why, len) : st;
}

float *attn_efficient_ones(const attn_allocator *a, size_t n)
{
    float *x = attn_alloc(a, n * sizeof(float));
    for (size_t e = 0; x && e < n; e++)
        x[e] = 1.0f;
    return x;
}

size_t attn_scratch_bytes(int threads, size_t nf, size_t nd)
{
    return (size_t)threads * (nf * sizeof(float) + nd * sizeof(double));
}

bool attn_scratch_alloc(attn_scratch *x, const attn_allocator *a, int threads, size_t nf,
                        size_t nd)
{
    *x = (attn_scratch){ .nf = nf, .nd = nd };
    x->f = attn_alloc(a, (size_t)threads * nf * sizeof(float));
    if (x->f && nd)
        x->d = attn_alloc(a, (size_t)threads * nd * sizeof(double));
    return x->f && (!nd || x->d);
}

void attn_scratch_free(attn_scratch *x, const attn_allocator *a)
{
    attn_free(a, x->f);
    attn_free(a, x->d);
    x->f = NULL;
    x->d = NULL;
}

void attn_efficient_heads(const attn_host *h, const attn_scratch *x, attn_head_fn *head,
                          void *state)
{
    const long n = (long)h->p.batch * h->p.heads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(h->threads) schedule(dynamic, 1)
#endif
    for (long bh = 0; bh < n; bh++) {
        const size_t tid = (size_t)attn_thread_id();
        head(state, (size_t)bh, x->f + tid * x->nf, x->d ? x->d + tid * x->nd : NULL);
    }
}

#include "efficient.h"

attn_status attn_efficient_supports(const attn_problem *p, const attn_config *cfg, char *why,
                                    size_t len)
{
    attn_status st = attn_variant_supports(p, why, len);
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

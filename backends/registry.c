#include <stdio.h>
#include <string.h>

#include "backend.h"

extern const attn_backend attn_backend_naive;
extern const attn_backend attn_backend_tiled;
extern const attn_backend attn_backend_blas;
extern const attn_backend attn_backend_onednn;
extern const attn_backend attn_backend_vulkan;
extern const attn_backend attn_backend_vulkan_3pass;
extern const attn_backend attn_backend_local;
extern const attn_backend attn_backend_sparse;
extern const attn_backend attn_backend_linear;
extern const attn_backend attn_backend_performer;
extern const attn_backend attn_backend_linformer;

/* Every backend attnbench knows, built or not, in --list order. Backends whose
 * dependency meson did not find still appear, with the reason. */
static const attn_backend *const registry[] = {
    &attn_backend_naive,
    &attn_backend_tiled,
    &attn_backend_blas,
    &attn_backend_onednn,
    &attn_backend_vulkan,
    &attn_backend_vulkan_3pass,
    &attn_backend_local,
    &attn_backend_sparse,
    &attn_backend_linear,
    &attn_backend_performer,
    &attn_backend_linformer,
};

static const char *const status_str[ATTN_STATUS_COUNT] = {
    [ATTN_OK]           = "ok",
    [ATTN_EUNSUPPORTED] = "unsupported",
    [ATTN_EUNAVAILABLE] = "unavailable",
    [ATTN_ENOMEM]       = "out of memory",
    [ATTN_EINVAL]       = "invalid argument",
    [ATTN_EDEVICE]      = "device error",
    [ATTN_EINTERNAL]    = "internal error",
};

const char *attn_status_str(attn_status s)
{
    if ((unsigned)s >= ATTN_STATUS_COUNT)
        return "unknown status";
    return status_str[s];
}

size_t attn_backend_count(void)
{
    return sizeof(registry) / sizeof(registry[0]);
}

const attn_backend *attn_backend_get(size_t i)
{
    return i < attn_backend_count() ? registry[i] : NULL;
}

const attn_backend *attn_backend_find(const char *name)
{
    for (size_t i = 0; i < attn_backend_count(); i++)
        if (!strcmp(registry[i]->name, name))
            return registry[i];
    return NULL;
}

attn_status attn_backend_usable(const attn_backend *be, char *why, size_t len)
{
    if (be->not_built) {
        snprintf(why, len, "not built: %s", be->not_built);
        return ATTN_EUNAVAILABLE;
    }
    if (be->probe)
        return be->probe(why, len);
    return ATTN_OK;
}

attn_status attn_backend_supports(const attn_backend *be, const attn_problem *p,
                                  const attn_config *cfg, char *why, size_t len)
{
    static const struct { unsigned cap; const char *what; } need[] = {
        { ATTN_CAP_CAUSAL,  "causal masking" },
        { ATTN_CAP_PADDING, "padding masks (kv_len)" },
        { ATTN_CAP_CROSS,   "cross-attention (seq_q != seq_kv)" },
        { ATTN_CAP_DV,      "d_k != d_v" },
    };
    if (p->kind != be->kind) {
        snprintf(why, len, "%s computes kind %d, the problem is of kind %d", be->name,
                 (int)be->kind, (int)p->kind);
        return ATTN_EINVAL;
    }
    const bool uses[] = { p->causal, p->kv_len != NULL, p->seq_q != p->seq_kv,
                          p->d_k != p->d_v };
    for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
        if (uses[i] && !(be->caps & need[i].cap)) {
            snprintf(why, len, "%s does not support %s", be->name, need[i].what);
            return ATTN_EUNSUPPORTED;
        }
    }
    if (be->supports)
        return be->supports(p, cfg, why, len);
    return ATTN_OK;
}

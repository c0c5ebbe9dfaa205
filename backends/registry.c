#include <stdio.h>
#include <string.h>

#include "backend.h"

#define ATTN_BACKEND(id, str) extern const attn_backend attn_backend_##id;
#include "list.h"
#undef ATTN_BACKEND

/* Every backend attnbench knows, built or not, in --list order. Backends whose
 * dependency meson did not find still appear, with the reason. */
static const attn_backend *const registry[] = {
#define ATTN_BACKEND(id, str) &attn_backend_##id,
#include "list.h"
#undef ATTN_BACKEND
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

/* The backends of plugins (harness/plugin.c), after the built-ins, each
 * with the file it came from. */
#define MAX_ADDED 256
static const attn_backend *added[MAX_ADDED];
static const char *added_from[MAX_ADDED];
static size_t nadded;

#define NBUILTIN (sizeof(registry) / sizeof(registry[0]))

size_t attn_backend_count(void)
{
    return NBUILTIN + nadded;
}

const attn_backend *attn_backend_get(size_t i)
{
    return i < NBUILTIN ? registry[i] : i < attn_backend_count() ? added[i - NBUILTIN] : NULL;
}

const attn_backend *attn_backend_find(const char *name)
{
    for (size_t i = 0; i < attn_backend_count(); i++)
        if (!strcmp(attn_backend_get(i)->name, name))
            return attn_backend_get(i);
    return NULL;
}

bool attn_backend_add(const attn_backend *be, int n, const char *from)
{
    if (n < 0 || (size_t)n > MAX_ADDED - nadded)
        return false;
    for (int i = 0; i < n; i++)
        if (attn_backend_find(be[i].name))
            return false;
    for (int i = 0; i < n; i++) {
        added[nadded] = &be[i];
        added_from[nadded++] = from;
    }
    return true;
}

const char *attn_backend_origin(const attn_backend *be)
{
    for (size_t i = 0; i < nadded; i++)
        if (added[i] == be)
            return added_from[i];
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
    if (p->kind != be->kind) {
        snprintf(why, len, "%s computes kind %d, the problem is of kind %d", be->name,
                 (int)be->kind, (int)p->kind);
        return ATTN_EINVAL;
    }
    const int hkv = attn_kv_heads(p);
    if (hkv < 1 || hkv > p->heads || p->heads % hkv) {
        snprintf(why, len, "%s: %d K/V heads do not divide %d query heads", be->name, hkv,
                 p->heads);
        return ATTN_EINVAL;
    }
    for (int x = 0; x < 2; x++) {
        const attn_dtype d = x ? p->kv_dtype : p->dtype;
        if ((unsigned)d >= ATTN_DTYPE_COUNT) {
            snprintf(why, len, "%s: storage type %d is not one attnbench knows", be->name, (int)d);
            return ATTN_EINVAL;
        }
        if (d != ATTN_DTYPE_FP32 && !(be->dtypes & ATTN_DTYPE_BIT(d))) {
            /* "fp32", "fp32 and fp16", "fp32, bf16 and fp16" */
            char types[128] = "fp32";
            int n = 0, left = 0;
            for (int t = 1; t < ATTN_DTYPE_COUNT; t++)
                left += (be->dtypes & ATTN_DTYPE_BIT(t)) != 0;
            for (int t = 1; t < ATTN_DTYPE_COUNT; t++)
                if (be->dtypes & ATTN_DTYPE_BIT(t))
                    snprintf(types + strlen(types), sizeof(types) - strlen(types), "%s%s",
                             ++n == left ? " and " : ", ", attn_dtype_name((attn_dtype)t));
            snprintf(why, len, "%s computes from %s storage only (this case stores %s in %s)",
                     be->name, types, x ? "K and V" : "Q", attn_dtype_name(d));
            return ATTN_EUNSUPPORTED;
        }
    }
    if (attn_dtype_quantized(p->dtype) && p->dtype != ATTN_DTYPE_Q8_0) {
        snprintf(why, len, "%s: Q cannot be stored as %s, a quantized K/V cache type (Q: fp32, "
                 "bf16, fp16 or q8_0)", be->name, attn_dtype_name(p->dtype));
        return ATTN_EINVAL;
    }
    if (p->dtype == ATTN_DTYPE_Q8_0 && p->d_k % ATTN_QBLOCK) {
        snprintf(why, len, "%s: Q in q8_0 is stored in blocks of %d values along d: dk = %d "
                 "must be a multiple of %d", be->name, ATTN_QBLOCK, p->d_k, ATTN_QBLOCK);
        return ATTN_EINVAL;
    }
    if (attn_backward(p) && p->dtype == ATTN_DTYPE_Q8_0) {
        snprintf(why, len, "%s: the backward needs Q in fp32, bf16 or fp16 (q8_0 Q is for "
                 "the forward pass)", be->name);
        return ATTN_EUNSUPPORTED;
    }
    if (attn_dtype_quantized(p->kv_dtype) && !attn_kvq_head_scaled(attn_dtype_kvq(p->kv_dtype)) &&
        (p->d_k % ATTN_QBLOCK || p->d_v % ATTN_QBLOCK)) {
        snprintf(why, len, "%s: %s stores K and V in blocks of %d values along d: dk = %d and "
                 "dv = %d must be multiples of %d", be->name, attn_dtype_name(p->kv_dtype),
                 ATTN_QBLOCK, p->d_k, p->d_v, ATTN_QBLOCK);
        return ATTN_EINVAL;
    }
    const unsigned missing = attn_mods_used(p) & ~be->mods;
    if (missing) {
        const unsigned bit = missing & -missing;
        snprintf(why, len, "%s does not compute the %s modifier (%s)", be->name,
                 attn_mod_name(bit), attn_mod_option(bit));
        return ATTN_EUNSUPPORTED;
    }
    if ((unsigned)p->pass >= ATTN_PASS_COUNT) {
        snprintf(why, len, "%s: pass %d is not one attnbench knows", be->name, (int)p->pass);
        return ATTN_EINVAL;
    }
    if (attn_backward(p) && attn_dtype_quantized(p->kv_dtype)) {
        snprintf(why, len, "%s: the backward needs K and V in fp32, bf16 or fp16 (a quantized "
                 "cache is inference's; this case stores them in %s)", be->name,
                 attn_dtype_name(p->kv_dtype));
        return ATTN_EUNSUPPORTED;
    }
    if (attn_backward(p) && !(be->passes & ATTN_PASS_BIT(p->pass))) {
        snprintf(why, len, "%s computes the forward pass only (this case is --pass %s)",
                 be->name, attn_pass_name(p->pass));
        return ATTN_EUNSUPPORTED;
    }
    if (attn_backward(p) && (p->mods.sinks || p->mods.v_from_k)) {
        snprintf(why, len, "%s: the backward of %s is not defined in attnbench (backend.h)",
                 be->name, p->mods.sinks ? "attention sinks" : "latent attention (V read from K)");
        return ATTN_EUNSUPPORTED;
    }
    if (p->ragged) {
        const attn_ragged *r = p->ragged;
        const unsigned need = r->page ? ATTN_LAYOUT_PAGED : ATTN_LAYOUT_RAGGED;
        if (r->page < 0 || r->page > ATTN_MAX_PAGE) {
            snprintf(why, len, "%s: a page of %d tokens (1 to %d)", be->name, r->page,
                     ATTN_MAX_PAGE);
            return ATTN_EINVAL;
        }
        if (p->kv_len) {
            snprintf(why, len, "%s: a serving batch has each item's own key count; padding "
                     "(--kv-len) is for dense batches", be->name);
            return ATTN_EINVAL;
        }
        if (!(be->layouts & need)) {
            snprintf(why, len, "%s runs dense batches only (this case is a serving batch, K/V "
                     "%s)", be->name, r->page ? "in pages" : "packed");
            return ATTN_EUNSUPPORTED;
        }
        if (attn_backward(p)) {
            snprintf(why, len, "%s: the backward of a serving batch is not defined in "
                     "attnbench", be->name);
            return ATTN_EUNSUPPORTED;
        }
    }
    if (p->mods.v_from_k && p->d_v > p->d_k) {
        snprintf(why, len, "%s: V read from K needs dv <= dk (dv = %d, dk = %d)", be->name,
                 p->d_v, p->d_k);
        return ATTN_EINVAL;
    }
    if (be->supports)
        return be->supports(p, cfg, why, len);
    return ATTN_OK;
}

static const struct {
    unsigned bit;
    const char *name, *option;
} mod_names[] = {
    { ATTN_MOD_WINDOW, "sliding window", "--window" },
    { ATTN_MOD_SOFTCAP, "softcap", "--softcap" },
    { ATTN_MOD_ALIBI, "ALiBi", "--alibi" },
    { ATTN_MOD_SINKS, "attention sinks", "--sinks" },
    { ATTN_MOD_V_FROM_K, "latent attention", "--v-from-k" },
};

const char *attn_mod_name(unsigned bit)
{
    for (size_t i = 0; i < sizeof(mod_names) / sizeof(mod_names[0]); i++)
        if (mod_names[i].bit == bit)
            return mod_names[i].name;
    return "?";
}

const char *attn_mod_option(unsigned bit)
{
    for (size_t i = 0; i < sizeof(mod_names) / sizeof(mod_names[0]); i++)
        if (mod_names[i].bit == bit)
            return mod_names[i].option;
    return "?";
}

static const char *const pass_names[ATTN_PASS_COUNT] = {
    [ATTN_PASS_FWD] = "fwd",
    [ATTN_PASS_BWD] = "bwd",
    [ATTN_PASS_FWDBWD] = "fwdbwd",
};

const char *attn_pass_name(attn_pass x)
{
    return (unsigned)x < ATTN_PASS_COUNT ? pass_names[x] : "?";
}

attn_pass attn_pass_from_name(const char *name)
{
    for (int x = 0; x < ATTN_PASS_COUNT; x++)
        if (!strcmp(pass_names[x], name))
            return (attn_pass)x;
    return ATTN_PASS_COUNT;
}

static const char *const dtype_names[ATTN_DTYPE_COUNT] = {
    [ATTN_DTYPE_FP32] = "fp32",
    [ATTN_DTYPE_BF16] = "bf16",
    [ATTN_DTYPE_FP16] = "fp16",
    [ATTN_DTYPE_Q8_0] = "q8_0",
    [ATTN_DTYPE_Q4_0] = "q4_0",
    [ATTN_DTYPE_FP8E4M3] = "fp8e4m3",
    [ATTN_DTYPE_FP8E5M2] = "fp8e5m2",
};

const char *attn_dtype_name(attn_dtype d)
{
    return (unsigned)d < ATTN_DTYPE_COUNT ? dtype_names[d] : "?";
}

attn_dtype attn_dtype_from_name(const char *name)
{
    for (int d = 0; d < ATTN_DTYPE_COUNT; d++)
        if (!strcmp(name, dtype_names[d]))
            return (attn_dtype)d;
    return ATTN_DTYPE_COUNT;
}

const char *attn_backend_version(const attn_backend *be)
{
    return be->version ? be->version() : NULL;
}

bool attn_backend_device_bytes(const attn_backend *be, void *state, uint64_t *bytes)
{
    if (!be->device_bytes)
        return false;
    *bytes = be->device_bytes(state);
    return true;
}

bool attn_backend_device_name(const attn_backend *be, void *state, char *buf, size_t len,
                              bool *is_cpu)
{
    *is_cpu = false;
    if (!be->device_name)
        return false;
    snprintf(buf, len, "%s", be->device_name(state, is_cpu));
    return true;
}

bool attn_backend_device_time(const attn_backend *be, void *state, double *seconds)
{
    return be->device_time && be->device_time(state, seconds);
}

bool attn_backend_has_devices(const attn_backend *be)
{
    return be->devices != NULL;
}

int attn_backend_devices(const attn_backend *be, char *buf, size_t len)
{
    return be->devices ? be->devices(buf, len) : -1;
}

bool attn_backend_same_devices(const attn_backend *a, const attn_backend *b)
{
    return a->devices && a->devices == b->devices;
}

bool attn_backend_has_weights(const attn_backend *be)
{
    return be->weights != NULL;
}

attn_status attn_backend_weights(const attn_backend *be, void *state, float *out)
{
    return be->weights ? be->weights(state, out) : ATTN_EUNSUPPORTED;
}

int attn_backend_world(const attn_backend *be)
{
    return be->world ? be->world() : 1;
}

int attn_backend_ranks(const attn_backend *be, void *state, attn_rank_stats *out, int max)
{
    return be->ranks ? be->ranks(state, out, max) : 0;
}

attn_status attn_backend_read_grads(const attn_backend *be, void *state, float *dq, float *dk,
                                    float *dv)
{
    return be->read_grads ? be->read_grads(state, dq, dk, dv) : ATTN_EUNSUPPORTED;
}

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "problem.h"
#include "variant.h"

static const char *const fill_names[ATTN_FILL_COUNT] = {
    [ATTN_FILL_NORMAL]  = "normal",
    [ATTN_FILL_EXTREME] = "extreme",
};

const char *attn_setup_fill_name(const attn_setup *s)
{
    return s->inputs ? "npy" : attn_fill_name(s->fill);
}

const char *attn_fill_name(attn_fill_kind f)
{
    return (unsigned)f < ATTN_FILL_COUNT ? fill_names[f] : "?";
}

static bool mul(size_t *acc, size_t x)
{
    return !__builtin_mul_overflow(*acc, x, acc);
}

static bool count(size_t *out, size_t a, size_t b, size_t c, size_t d)
{
    size_t n = a;
    if (!mul(&n, b) || !mul(&n, c) || !mul(&n, d))
        return false;
    *out = n;
    return true;
}

bool attn_problem_sizes(const attn_problem *p, attn_sizes *s)
{
    const size_t b = (size_t)p->batch, h = (size_t)p->heads, hkv = (size_t)attn_kv_heads(p);
    size_t in;
    /* Query and key tokens: B Nq and B Nk, or a serving batch's (backend.h). */
    const size_t tq = attn_q_tokens(p), tk = attn_kv_tokens(p);
    if (p->ragged) {
        /* The score entries of its items, Nq_b Nk_b each. */
        s->scores = 0;
        for (int x = 0; x < p->batch; x++) {
            size_t e;
            if (!count(&e, (size_t)p->ragged->nq[x], (size_t)p->ragged->nk[x], h, sizeof(float)) ||
                __builtin_add_overflow(s->scores, e, &s->scores))
                return false;
        }
    } else if (!count(&s->scores, b, h, (size_t)p->seq_q, (size_t)p->seq_kv) ||
               !mul(&s->scores, sizeof(float))) {
        return false;
    }
    if (!count(&s->q, tq, h, (size_t)p->d_k, 1) ||
        !count(&s->k, tk, hkv, (size_t)p->d_k, 1) ||
        !count(&s->v, tk, hkv, p->mods.v_from_k ? 0 : (size_t)p->d_v, 1) ||
        !count(&s->o, tq, h, (size_t)p->d_v, 1) ||
        !count(&s->rows, tq, h, 1, 1))
        return false;
    size_t qb = s->q, kvb;
    if (attn_dtype_quantized(p->kv_dtype)) {
        /* Rows of blocks (or bytes), and fp8's scale per K/V head of each. */
        size_t kr = tk, vr;
        const size_t scales = attn_kvq_head_scaled(attn_dtype_kvq(p->kv_dtype))
                                  ? 2 * sizeof(float) : 0;
        if (!mul(&kr, hkv))
            return false;
        vr = p->mods.v_from_k ? 0 : kr;
        if (!mul(&kr, attn_dtype_row_bytes(p->kv_dtype, (size_t)p->d_k)) ||
            !mul(&vr, attn_dtype_row_bytes(p->kv_dtype, (size_t)p->d_v)) ||
            __builtin_add_overflow(kr, vr, &kvb) || __builtin_add_overflow(kvb, b * hkv * scales, &kvb))
            return false;
    } else if (__builtin_add_overflow(s->k, s->v, &kvb) || !mul(&kvb, attn_dtype_size(p->kv_dtype))) {
        return false;
    }
    if (!mul(&qb, attn_dtype_size(p->dtype)) || __builtin_add_overflow(qb, kvb, &in))
        return false;
    s->inputs = in;
    s->kv = kvb;
    s->output = s->o;
    if (!count(&s->dq, tq, h, (size_t)p->d_k, 1) ||
        !count(&s->dk, tk, hkv, (size_t)p->d_k, 1) ||
        !count(&s->dv, tk, hkv, (size_t)p->d_v, 1))
        return false;
    s->grads = s->dq;
    if (__builtin_add_overflow(s->grads, s->dk, &s->grads) ||
        __builtin_add_overflow(s->grads, s->dv, &s->grads) || !mul(&s->grads, sizeof(float)))
        return false;
    return mul(&s->output, sizeof(float));
}

/* Score entries left visible by the masks and the window, summed over
 * batch and heads; for local and sparse, by their patterns as well. */
static double visible_entries(const attn_problem *p)
{
    double pairs = 0;
    attn_span sp[ATTN_MAX_SPANS];
    for (int b = 0; b < p->batch; b++)
        for (int i = 0; i < attn_seq_q_of(p, b); i++) {
            if (p->kind == ATTN_KIND_LOCAL || p->kind == ATTN_KIND_SPARSE) {
                const int n = attn_variant_spans(p, b, i, sp);
                for (int x = 0; x < n; x++)
                    pairs += sp[x].hi - sp[x].lo;
            } else {
                int lo, hi;
                attn_visible_range(p, b, i, &lo, &hi);
                pairs += hi - lo;
            }
        }
    return pairs * p->heads;
}

/* FlashAttention's count of the backward: 2.5 forwards (five products of
 * the forward's size against its two); forward and backward 3.5. */
static double pass_factor(const attn_problem *p)
{
    return p->pass == ATTN_PASS_BWD ? 2.5 : p->pass == ATTN_PASS_FWDBWD ? 3.5 : 1.0;
}

static double forward_flops(const attn_problem *p);

double attn_problem_flops(const attn_problem *p)
{
    return pass_factor(p) * forward_flops(p);
}

static double forward_flops(const attn_problem *p)
{
    const double dk = p->d_k, dv = p->d_v, h = p->heads;
    double keys = 0;    /* keys some row of a batch sees, summed over the batch */
    for (int b = 0; b < p->batch; b++)
        keys += attn_seq_q_of(p, b) ? attn_visible_end(p, b, attn_seq_q_of(p, b) - 1) : 0;
    const double queries = (double)attn_q_tokens(p);
    switch (p->kind) {
    case ATTN_KIND_LINEAR:
    case ATTN_KIND_PERFORMER: {
        const double nf = p->kind == ATTN_KIND_LINEAR ? dk : p->var.features;
        /* S += phi(k) v^T, z += phi(k); phi(q)^T S, phi(q).z; performer's W x. */
        double f = keys * (2 * nf * dv + nf) + queries * (2 * nf * dv + 2 * nf);
        if (p->kind == ATTN_KIND_PERFORMER)
            f += (keys + queries) * 2 * nf * dk;
        return f * h;
    }
    case ATTN_KIND_LINFORMER: {
        const double np = p->var.proj;
        double valid = 0;
        for (int b = 0; b < p->batch; b++)
            valid += p->kv_len ? p->kv_len[b] : attn_seq_kv_of(p, b);
        /* E K, F V; then Q K'^T and P V' over p projected keys. */
        return (valid + queries) * 2 * np * (dk + dv) * h;
    }
    default:
        return 2.0 * (dk + dv) * visible_entries(p);
    }
}

double attn_problem_flops_dense(const attn_problem *p)
{
    double pairs = 0;
    for (int b = 0; b < p->batch; b++)
        pairs += (double)attn_seq_q_of(p, b) * attn_seq_kv_of(p, b);
    return pass_factor(p) * 2.0 * (p->d_k + p->d_v) * p->heads * pairs;
}

/* Keys of batch item b that some query sees: the prefix of the last query
 * under the dense masks; the union of the rows' intervals for local and
 * sparse (counted on a map of the keys); every valid key for linformer. */
static double keys_read(const attn_problem *p, int b, unsigned char *map)
{
    if (p->kind == ATTN_KIND_LINFORMER)
        return p->kv_len ? p->kv_len[b] : attn_seq_kv_of(p, b);
    if (p->kind != ATTN_KIND_LOCAL && p->kind != ATTN_KIND_SPARSE) {
        /* One interval per query, both ends growing with i: the union is
         * what each adds past the furthest end before it. */
        double keys = 0;
        int top = 0;
        const int nq = attn_seq_q_of(p, b);
        for (int i = p->mods.window ? 0 : nq - 1; i >= 0 && i < nq; i++) {
            int lo, hi;
            attn_visible_range(p, b, i, &lo, &hi);
            lo = lo > top ? lo : top;
            keys += hi > lo ? hi - lo : 0;
            top = hi > top ? hi : top;
        }
        return keys;
    }
    if (!map)
        return p->seq_kv;   /* no memory for the map: an upper bound */
    memset(map, 0, (size_t)p->seq_kv);
    attn_span sp[ATTN_MAX_SPANS];
    for (int i = 0; i < p->seq_q; i++) {
        const int n = attn_variant_spans(p, b, i, sp);
        for (int x = 0; x < n; x++)
            memset(map + sp[x].lo, 1, (size_t)(sp[x].hi - sp[x].lo));
    }
    double keys = 0;
    for (int j = 0; j < p->seq_kv; j++)
        keys += map[j];
    return keys;
}

double attn_problem_bytes(const attn_problem *p)
{
    const double wq = (double)attn_dtype_size(p->dtype), wo = sizeof(float);
    unsigned char *map = NULL;
    if (p->kind == ATTN_KIND_LOCAL || p->kind == ATTN_KIND_SPARSE)
        map = malloc((size_t)p->seq_kv + 1);
    double keys = 0;
    for (int b = 0; b < p->batch; b++)
        keys += keys_read(p, b, map);
    free(map);
    const double queries = (double)attn_q_rows(p);
    /* Latent attention reads V inside K's rows: bytes of K only. A
     * quantized cache's rows at their stored width, scales included (fp8's
     * per-head scale, a few bytes, is not counted). */
    const double row = (double)attn_dtype_row_bytes(p->kv_dtype, (size_t)p->d_k) +
                       (p->mods.v_from_k ? 0.0
                                         : (double)attn_dtype_row_bytes(p->kv_dtype, (size_t)p->d_v));
    const double kv = keys * attn_kv_heads(p) * row;
    if (!attn_backward(p))
        return queries * (wq * p->d_k + wo * p->d_v) + kv;
    /* The backward: each query's Q, O, dO, L and dQ, the visible keys' K
     * and V, and all of dK and dV (zeros where no query looks); the
     * forward before it writes O and L, which the backward alone reads. */
    const double grads_kv = wo * (double)attn_kv_tokens(p) * attn_kv_heads(p) * (p->d_k + p->d_v);
    return queries * (wq * p->d_k + wo * (2.0 * p->d_v + 1 + p->d_k)) + kv + grads_kv;
}

/* Appends to buf like snprintf, never past len; returns the new end. */
__attribute__((format(printf, 4, 5)))
static size_t cat(char *buf, size_t len, size_t at, const char *fmt, ...)
{
    if (at >= len)
        return at;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + at, len - at, fmt, ap);
    va_end(ap);
    return n < 0 ? at : at + (size_t)n;
}

/* The knobs p's kind reads, each through its format (the window is a
 * modifier: cat_mods). */
static size_t cat_variant(char *buf, size_t len, size_t at, const attn_problem *p,
                          const char *sparse, const char *features, const char *proj)
{
    switch (p->kind) {
    case ATTN_KIND_SPARSE:
        return cat(buf, len, at, sparse, p->var.globals, p->var.random_blocks, p->var.block);
    case ATTN_KIND_PERFORMER:
        return cat(buf, len, at, features, p->var.features);
    case ATTN_KIND_LINFORMER:
        return cat(buf, len, at, proj, p->var.proj);
    default:
        return at;
    }
}

/* The score modifiers in one of three forms: a description, a command
 * line, a case name. */
enum { FORM_TEXT, FORM_ARGS, FORM_NAME };

static size_t cat_mods(char *buf, size_t len, size_t at, const attn_problem *p, int form)
{
    static const char *const fmt[3][5] = {
        { " window=%d,%d", " softcap=%.9g", " alibi", " sinks", " v_from_k" },
        { " --window %d,%d", " --softcap %.9g", " --alibi", " --sinks", " --v-from-k" },
        { "/window:%d.%d", "/softcap:%.9g", "/alibi:1", "/sinks:1", "/vfromk:1" },
    };
    const attn_mods *m = &p->mods;
    if (m->window)
        at = cat(buf, len, at, fmt[form][0], m->left, m->right);
    if (m->softcap > 0)
        at = cat(buf, len, at, fmt[form][1], (double)m->softcap);
    if (m->alibi)
        at = cat(buf, len, at, "%s", fmt[form][2]);
    if (m->sinks)
        at = cat(buf, len, at, "%s", fmt[form][3]);
    if (m->v_from_k)
        at = cat(buf, len, at, "%s", fmt[form][4]);
    return at;
}

static size_t cat_kv_len(char *buf, size_t len, size_t at, const attn_problem *p,
                         const char *lead, const char *sep)
{
    if (!p->kv_len)
        return at;
    at = cat(buf, len, at, "%s", lead);
    for (int b = 0; b < p->batch; b++)
        at = cat(buf, len, at, "%s%d", b ? sep : "", p->kv_len[b]);
    return at;
}

static bool default_scale(const attn_problem *p)
{
    return p->scale == (float)(1.0 / sqrt((double)p->d_k));
}

void attn_problem_describe(const attn_problem *p, char *buf, size_t len)
{
    size_t at = cat(buf, len, 0, "B=%d H=%d", p->batch, p->heads);
    if (attn_kv_heads(p) != p->heads)
        at = cat(buf, len, at, " Hkv=%d", attn_kv_heads(p));
    if (p->lens)
        at = cat(buf, len, at, " lens=%s (Nq<=%d Nk<=%d, %zu tokens) dk=%d dv=%d", p->lens,
                 p->seq_q, p->seq_kv, attn_q_tokens(p), p->d_k, p->d_v);
    else
        at = cat(buf, len, at, " Nq=%d Nk=%d dk=%d dv=%d", p->seq_q, p->seq_kv, p->d_k, p->d_v);
    if (p->ragged && p->ragged->page)
        at = cat(buf, len, at, " page=%d", p->ragged->page);
    if (!default_scale(p))
        at = cat(buf, len, at, " scale=%.9g", p->scale);
    if (p->causal)
        at = cat(buf, len, at, " causal");
    at = cat_kv_len(buf, len, at, p, " kv_len=", ",");
    if (attn_reduced(p))
        at = cat(buf, len, at, " %s", attn_dtype_name(p->dtype));
    if (p->kv_dtype != p->dtype)
        at = cat(buf, len, at, " kv:%s", attn_dtype_name(p->kv_dtype));
    at = cat_mods(buf, len, at, p, FORM_TEXT);
    if (attn_backward(p))
        cat(buf, len, at, " pass=%s", attn_pass_name(p->pass));
}

attn_problem attn_problem_of(const attn_problem *p, const attn_backend *be)
{
    attn_problem pk = *p;
    pk.kind = be->kind;
    /* local and sparse need a window: without --window, their default. */
    if ((pk.kind == ATTN_KIND_LOCAL || pk.kind == ATTN_KIND_SPARSE) && !pk.mods.window)
        pk.mods = (attn_mods){ .window = true, .left = ATTN_DEFAULT_WINDOW,
                               .right = ATTN_DEFAULT_WINDOW, .softcap = pk.mods.softcap,
                               .alibi = pk.mods.alibi, .sinks = pk.mods.sinks,
                               .v_from_k = pk.mods.v_from_k };
    return pk;
}

void attn_repro(char *buf, size_t len, const char *prog, const attn_backend *be,
                const attn_problem *shape, const attn_setup *s)
{
    const attn_problem pk = attn_problem_of(shape, be), *p = &pk;
    /* A scale-out backend's case runs under the launcher that made it. */
    const int ranks = attn_backend_world(be);
    size_t at = ranks > 1 ? cat(buf, len, 0, "mpirun -n %d ", ranks) : 0;
    at = cat(buf, len, at, "%s --backend=%s", prog, be->name);
    if (attn_backend_origin(be))
        at = cat(buf, len, at, " --plugin %s", attn_backend_origin(be));
    /* The preset names the case; every value it set is given explicitly
     * after it, and explicit options win. */
    if (p->model)
        at = cat(buf, len, at, " --model %s", p->model);
    if (p->lens)
        at = cat(buf, len, at, " --batch %d --heads %d --lens %s --dk %d --dv %d", p->batch,
                 p->heads, p->lens, p->d_k, p->d_v);
    else
        at = cat(buf, len, at, " --batch %d --heads %d --seq %d --seq-kv %d --dk %d --dv %d",
                 p->batch, p->heads, p->seq_q, p->seq_kv, p->d_k, p->d_v);
    if (p->ragged && p->ragged->page)
        at = cat(buf, len, at, " --page %d", p->ragged->page);
    if (attn_kv_heads(p) != p->heads || p->model)
        at = cat(buf, len, at, " --kv-heads %d", attn_kv_heads(p));
    if (!default_scale(p) || p->model)
        at = cat(buf, len, at, " --scale %.9g", p->scale);
    if (p->causal)
        at = cat(buf, len, at, " --causal");
    at = cat_kv_len(buf, len, at, p, " --kv-len ", ",");
    if (attn_reduced(p))
        at = cat(buf, len, at, " --dtype %s", attn_dtype_name(p->dtype));
    if (p->kv_dtype != p->dtype)
        at = cat(buf, len, at, " --kv-dtype %s", attn_dtype_name(p->kv_dtype));
    if (s->inputs)
        at = cat(buf, len, at, " --inputs %s", s->inputs);
    else if (s->fill != ATTN_FILL_NORMAL)
        at = cat(buf, len, at, " --fill %s", attn_fill_name(s->fill));
    if (s->tile_q)
        at = cat(buf, len, at, " --tile %dx%d", s->tile_q, s->tile_kv);
    if (s->tile_q && s->tile_sb)
        at = cat(buf, len, at, "x%d", s->tile_sb);
    if (s->splits)
        at = cat(buf, len, at, " --splits %d", s->splits);
    if (s->device >= 0)
        at = cat(buf, len, at, " --device %d", s->device);
    if (s->isa != ATTN_ISA_AUTO)
        at = cat(buf, len, at, " --isa %s", attn_isa_name(s->isa));
    at = cat_mods(buf, len, at, p, FORM_ARGS);
    at = cat_variant(buf, len, at, p, " --globals %d --random-blocks %d --block %d",
                     " --features %d", " --proj %d");
    if (attn_backward(p))
        at = cat(buf, len, at, " --pass %s", attn_pass_name(p->pass));
    if (s->check_rows)
        at = s->check_rows < 0 ? cat(buf, len, at, " --check-rows all")
                               : cat(buf, len, at, " --check-rows %ld", s->check_rows);
    cat(buf, len, at, " --threads %d --seed %llu", s->threads, (unsigned long long)s->seed);
}

void attn_case_name(char *buf, size_t len, const attn_backend *be, const attn_problem *shape,
                    const attn_setup *s)
{
    const attn_problem pk = attn_problem_of(shape, be), *p = &pk;
    size_t at = cat(buf, len, 0, "attn/%s/b:%d/h:%d/sq:%d/skv:%d/dk:%d/dv:%d/causal:%d", be->name,
                    p->batch, p->heads, p->seq_q, p->seq_kv, p->d_k, p->d_v, p->causal ? 1 : 0);
    if (attn_kv_heads(p) != p->heads)
        at = cat(buf, len, at, "/hkv:%d", attn_kv_heads(p));
    if (p->lens) {
        /* Explicit pairs with '.' between them, as /kv: has: a name has no comma. */
        at = cat(buf, len, at, "/lens:");
        for (const char *c = p->lens; *c; c++)
            at = cat(buf, len, at, "%c", *c == ',' ? '.' : *c);
    }
    if (p->ragged && p->ragged->page)
        at = cat(buf, len, at, "/page:%d", p->ragged->page);
    at = cat_kv_len(buf, len, at, p, "/kv:", ".");
    if (attn_reduced(p))
        at = cat(buf, len, at, "/dtype:%s", attn_dtype_name(p->dtype));
    if (p->kv_dtype != p->dtype)
        at = cat(buf, len, at, "/kvdtype:%s", attn_dtype_name(p->kv_dtype));
    if (!default_scale(p))
        at = cat(buf, len, at, "/scale:%.9g", p->scale);
    if (s->inputs || s->fill != ATTN_FILL_NORMAL)
        at = cat(buf, len, at, "/fill:%s", attn_setup_fill_name(s));
    if (s->tile_q)
        at = cat(buf, len, at, "/tile:%dx%d", s->tile_q, s->tile_kv);
    if (s->tile_q && s->tile_sb)
        at = cat(buf, len, at, "x%d", s->tile_sb);
    if (s->splits)
        at = cat(buf, len, at, "/splits:%d", s->splits);
    if (s->device >= 0)
        at = cat(buf, len, at, "/device:%d", s->device);
    if (s->isa != ATTN_ISA_AUTO)
        at = cat(buf, len, at, "/isa:%s", attn_isa_name(s->isa));
    at = cat_mods(buf, len, at, p, FORM_NAME);
    at = cat_variant(buf, len, at, p, "/g:%d/r:%d/bs:%d", "/m:%d", "/p:%d");
    if (p->model)
        at = cat(buf, len, at, "/model:%s", p->model);
    if (attn_backward(p))
        at = cat(buf, len, at, "/pass:%s", attn_pass_name(p->pass));
    if (attn_backend_world(be) > 1)
        cat(buf, len, at, "/ranks:%d", attn_backend_world(be));
}

void attn_case_key(char *buf, size_t len, const attn_backend *be, const attn_problem *p,
                   const attn_setup *s)
{
    attn_case_name(buf, len, be, p, s);
    const size_t at = strlen(buf);
    cat(buf, len, at, "/threads:%d/seed:%llu", s->threads, (unsigned long long)s->seed);
}

void attn_format_bytes(char *buf, size_t len, double bytes)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    int u = 0;
    while (bytes >= 1024.0 && u < 6) {
        bytes /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%.0f B", bytes);
    else
        snprintf(buf, len, "%.1f %s", bytes, unit[u]);
}

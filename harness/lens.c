#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/rng.h"
#include "lens.h"

/* The largest length --lens takes, and the most explicit pairs. */
#define LENS_MAX_SEQ (1 << 24)
#define LENS_MAX_PAIRS 65536

/* The stream of the lengths' draws (kernels/rng.h). */
#define LENS_STREAM 0x1e45u

static bool int_at(const char **at, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    const long v = strtol(*at, &end, 10);
    if (end == *at || errno || v < lo || v > hi || (*end && *end != ':' && *end != ','))
        return false;
    *out = (int)v;
    *at = end;
    return true;
}

static const char grammar[] =
    "Nq:Nk[,Nq:Nk..] (one pair per item), decode:uniform:LO:HI, prefill:uniform:LO:HI or "
    "mixed:uniform:LO:HI:PREFILLS:CHUNK";

static bool parse_pairs(const char *val, attn_lens *l, char *why, size_t len)
{
    int n = 1;
    for (const char *c = val; *c; c++)
        n += *c == ',';
    if (n > LENS_MAX_PAIRS) {
        snprintf(why, len, "--lens: more than %d pairs", LENS_MAX_PAIRS);
        return false;
    }
    l->pairs = malloc((size_t)n * 2 * sizeof(int));
    if (!l->pairs) {
        snprintf(why, len, "--lens: out of memory");
        return false;
    }
    const char *at = val;
    for (int x = 0; x < n; x++) {
        int q, k;
        if (!int_at(&at, 1, LENS_MAX_SEQ, &q) || *at != ':' || (at++, !int_at(&at, 1, LENS_MAX_SEQ, &k)) ||
            (*at && *at != ',')) {
            snprintf(why, len, "--lens: '%s' is not %s, each length in [1, %d]", val, grammar,
                     LENS_MAX_SEQ);
            return false;
        }
        l->pairs[2 * x] = q;
        l->pairs[2 * x + 1] = k;
        at += *at == ',';
    }
    l->npairs = n;
    return true;
}

bool attn_lens_parse(const char *val, attn_lens *out, char *why, size_t len)
{
    attn_lens l = { 0 };
    static const struct { const char *name; attn_lens_kind kind; } kinds[] = {
        { "decode:", ATTN_LENS_DECODE },
        { "prefill:", ATTN_LENS_PREFILL },
        { "mixed:", ATTN_LENS_MIXED },
    };
    bool ok = false, named = false;
    for (size_t x = 0; x < sizeof(kinds) / sizeof(kinds[0]); x++) {
        const size_t n = strlen(kinds[x].name);
        if (strncmp(val, kinds[x].name, n))
            continue;
        named = true;
        l.kind = kinds[x].kind;
        const char *at = val + n;
        if (strncmp(at, "uniform:", 8)) {
            snprintf(why, len, "--lens: '%s': the only distribution is uniform (%s)", val,
                     grammar);
            return false;
        }
        at += 8;
        ok = int_at(&at, 1, LENS_MAX_SEQ, &l.lo) && *at == ':' && (at++, int_at(&at, 1, LENS_MAX_SEQ, &l.hi));
        if (ok && l.kind == ATTN_LENS_MIXED)
            ok = *at == ':' && (at++, int_at(&at, 0, LENS_MAX_PAIRS, &l.prefills)) && *at == ':' &&
                 (at++, int_at(&at, 1, LENS_MAX_SEQ, &l.chunk));
        ok = ok && !*at;
        if (ok && l.lo > l.hi) {
            snprintf(why, len, "--lens: '%s': LO %d is above HI %d", val, l.lo, l.hi);
            return false;
        }
    }
    if (named && !ok) {
        snprintf(why, len, "--lens: '%s' is not %s, each length in [1, %d]", val, grammar,
                 LENS_MAX_SEQ);
        return false;
    }
    if (!named && !parse_pairs(val, &l, why, len)) {
        free(l.pairs);
        return false;
    }
    if (!(l.spec = strdup(val))) {
        free(l.pairs);
        snprintf(why, len, "--lens: out of memory");
        return false;
    }
    *out = l;
    return true;
}

void attn_lens_free(attn_lens *l)
{
    free(l->pairs);
    free(l->spec);
    memset(l, 0, sizeof(*l));
}

bool attn_batch_alloc(attn_batch *bt, int max_batch)
{
    memset(bt, 0, sizeof(*bt));
    const size_t b = (size_t)max_batch;
    bt->nq = calloc(b, sizeof(int));
    bt->nk = calloc(b, sizeof(int));
    bt->q0 = calloc(b + 1, sizeof(long));
    bt->k0 = calloc(b + 1, sizeof(long));
    if (!bt->nq || !bt->nk || !bt->q0 || !bt->k0) {
        attn_batch_free(bt);
        return false;
    }
    return true;
}

void attn_batch_free(attn_batch *bt)
{
    free(bt->nq);
    free(bt->nk);
    free(bt->q0);
    free(bt->k0);
    memset(bt, 0, sizeof(*bt));
}

/* The offsets from the lengths: q0 the queries' cu_seqlens, k0 the keys'
 * (packed) or the pages' (paged). */
static void offsets(attn_batch *bt, int batch, int page)
{
    bt->q0[0] = bt->k0[0] = 0;
    for (int b = 0; b < batch; b++) {
        bt->q0[b + 1] = bt->q0[b] + bt->nq[b];
        bt->k0[b + 1] = bt->k0[b] + (page ? (bt->nk[b] + page - 1) / page : bt->nk[b]);
    }
    bt->r = (attn_ragged){ .nq = bt->nq, .nk = bt->nk, .q0 = bt->q0, .k0 = bt->k0,
                           .page = page };
}

void attn_batch_make(attn_batch *bt, const attn_lens *l, int batch, int page, uint64_t seed,
                     int *seq_q, int *seq_kv)
{
    *seq_q = *seq_kv = 0;
    for (int b = 0; b < batch; b++) {
        int q, k;
        if (l->kind == ATTN_LENS_PAIRS) {
            q = l->pairs[2 * (b % l->npairs)];
            k = l->pairs[2 * (b % l->npairs) + 1];
        } else {
            const double u = attn_uniform(seed, LENS_STREAM, (uint64_t)b);
            k = l->lo + (int)(u * ((double)l->hi - l->lo + 1));
            k = k > l->hi ? l->hi : k;
            q = l->kind == ATTN_LENS_PREFILL ? k
                : l->kind == ATTN_LENS_MIXED && b < l->prefills ? (l->chunk < k ? l->chunk : k)
                                                                : 1;
        }
        bt->nq[b] = q;
        bt->nk[b] = k;
        *seq_q = q > *seq_q ? q : *seq_q;
        *seq_kv = k > *seq_kv ? k : *seq_kv;
    }
    offsets(bt, batch, page);
}

void attn_batch_dense(attn_batch *bt, int batch, int seq_q, int seq_kv, int page)
{
    for (int b = 0; b < batch; b++) {
        bt->nq[b] = seq_q;
        bt->nk[b] = seq_kv;
    }
    offsets(bt, batch, page);
}

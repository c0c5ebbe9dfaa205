#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "variant.h"

enum { STREAM_BLOCKS = 0xb10c, STREAM_W = 0xfea7, STREAM_NORM = 0xfea8 };

const char *attn_kind_name(attn_kind k)
{
    static const char *const names[ATTN_KIND_COUNT] = {
        [ATTN_KIND_SOFTMAX] = "softmax",   [ATTN_KIND_LOCAL] = "local",
        [ATTN_KIND_SPARSE] = "sparse",     [ATTN_KIND_LINEAR] = "linear",
        [ATTN_KIND_PERFORMER] = "performer", [ATTN_KIND_LINFORMER] = "linformer",
    };
    return (unsigned)k < ATTN_KIND_COUNT ? names[k] : "?";
}

static int cmp_int(const void *a, const void *b)
{
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int attn_random_blocks(const attn_problem *p, int qb, int *out)
{
    const int bs = p->var.block, nblocks = (p->seq_kv + bs - 1) / bs;
    const int want = p->var.random_blocks < nblocks ? p->var.random_blocks : nblocks;
    if (want == nblocks) {
        for (int t = 0; t < nblocks; t++)
            out[t] = t;
        return nblocks;
    }
    int n = 0;
    for (uint64_t t = 0; n < want; t++) {
        const int c = (int)(attn_hash(p->var.seed, STREAM_BLOCKS,
                                      ((uint64_t)qb << 32) | t) % (uint64_t)nblocks);
        bool dup = false;
        for (int u = 0; u < n; u++)
            dup |= out[u] == c;
        if (!dup)
            out[n++] = c;
    }
    qsort(out, (size_t)n, sizeof(int), cmp_int);
    return n;
}

static int cmp_span(const void *a, const void *b)
{
    const attn_span *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

int attn_variant_spans(const attn_problem *p, int b, int i, attn_span *sp)
{
    /* The window is the problem's (attn_visible_range); global keys and
     * random blocks lie outside it, cut by the causal and padding masks only. */
    attn_problem nowin = *p;
    nowin.mods.window = false;
    const int end = attn_visible_end(&nowin, b, i);
    const int at = i + p->seq_kv - p->seq_q;
    int n = 0;
    if (p->kind == ATTN_KIND_SPARSE && i < p->var.globals) {
        sp[n++] = (attn_span){ 0, end };
    } else {
        attn_visible_range(p, b, i, &sp[n].lo, &sp[n].hi);
        n++;
        if (p->kind == ATTN_KIND_SPARSE) {
            sp[n++] = (attn_span){ 0, p->var.globals };
            if (p->var.random_blocks > 0) {
                int blocks[ATTN_MAX_RANDOM_BLOCKS];
                const int bs = p->var.block, nb = attn_random_blocks(p, at / bs, blocks);
                for (int t = 0; t < nb; t++)
                    sp[n++] = (attn_span){ blocks[t] * bs, (blocks[t] + 1) * bs };
            }
        }
    }
    for (int x = 0; x < n; x++)
        if (sp[x].hi > end)
            sp[x].hi = end;
    return attn_spans_merge(sp, n);
}

int attn_spans_merge(attn_span *sp, int n)
{
    qsort(sp, (size_t)n, sizeof(*sp), cmp_span);
    int m = 0;
    for (int x = 0; x < n; x++) {
        if (sp[x].hi <= sp[x].lo)
            continue;
        if (m && sp[x].lo <= sp[m - 1].hi) {
            if (sp[x].hi > sp[m - 1].hi)
                sp[m - 1].hi = sp[x].hi;
        } else {
            sp[m++] = sp[x];
        }
    }
    return m;
}

void attn_performer_features(const attn_problem *p, double *w)
{
    const int m = p->var.features, d = p->d_k;
    for (int r = 0; r < m; r++)
        for (int c = 0; c < d; c++)
            w[(size_t)r * d + c] = attn_gauss(p->var.seed, STREAM_W, (uint64_t)r * d + c);
    /* Gram-Schmidt within each block of d rows (twice, for orthogonality in
     * floating point); Gaussian rows are independent almost surely. */
    for (int b0 = 0; b0 < m; b0 += d) {
        const int b1 = b0 + d < m ? b0 + d : m;
        for (int r = b0; r < b1; r++) {
            double *x = w + (size_t)r * d;
            for (int pass = 0; pass < 2; pass++)
                for (int u = b0; u < r; u++) {
                    const double *y = w + (size_t)u * d;
                    double dot = 0;
                    for (int c = 0; c < d; c++)
                        dot += x[c] * y[c];
                    for (int c = 0; c < d; c++)
                        x[c] -= dot * y[c];
                }
            double nrm = 0;
            for (int c = 0; c < d; c++)
                nrm += x[c] * x[c];
            nrm = sqrt(nrm);
            for (int c = 0; c < d; c++)
                x[c] /= nrm;
        }
    }
    /* Row norms of independent Gaussian vectors (chi with d degrees). */
    for (int r = 0; r < m; r++) {
        double s = 0;
        for (int c = 0; c < d; c++) {
            const double g = attn_gauss(p->var.seed, STREAM_NORM, (uint64_t)r * d + c);
            s += g * g;
        }
        s = sqrt(s);
        for (int c = 0; c < d; c++)
            w[(size_t)r * d + c] *= s;
    }
}

attn_status attn_variant_supports(const attn_problem *p, char *why, size_t len)
{
    const attn_variant *v = &p->var;
    switch (p->kind) {
    case ATTN_KIND_SOFTMAX:
    case ATTN_KIND_LINEAR:
        return ATTN_OK;
    case ATTN_KIND_LOCAL:
        if (!p->mods.window || p->mods.left < 0 || p->mods.right < 0) {
            snprintf(why, len, "local: it needs a window of keys >= 0 either side (--window)");
            return ATTN_EINVAL;
        }
        return ATTN_OK;
    case ATTN_KIND_SPARSE:
        if (p->seq_q != p->seq_kv) {
            snprintf(why, len, "sparse: global tokens and query blocks are defined for "
                     "self-attention (Nq == Nk), not Nq = %d, Nk = %d", p->seq_q, p->seq_kv);
            return ATTN_EUNSUPPORTED;
        }
        if (!p->mods.window || p->mods.left < 0 || p->mods.right < 0 || v->globals < 0 ||
            v->random_blocks < 0 || v->block < 1) {
            snprintf(why, len, "sparse: window, globals and random blocks must be >= 0 and "
                     "the block >= 1");
            return ATTN_EINVAL;
        }
        return ATTN_OK;
    case ATTN_KIND_PERFORMER:
        if (v->features < 1) {
            snprintf(why, len, "performer: --features must be >= 1");
            return ATTN_EINVAL;
        }
        return ATTN_OK;
    case ATTN_KIND_LINFORMER:
        if (p->causal) {
            snprintf(why, len, "linformer: causal attention is not defined for Linformer "
                     "(its projections mix every key into every projected row)");
            return ATTN_EUNSUPPORTED;
        }
        if (v->proj < 1) {
            snprintf(why, len, "linformer: --proj must be >= 1");
            return ATTN_EINVAL;
        }
        return ATTN_OK;
    default:
        snprintf(why, len, "unknown attention kind %d", (int)p->kind);
        return ATTN_EINVAL;
    }
}

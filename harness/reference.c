#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "fill.h"
#include "kernels/half.h"
#include "memory.h"
#include "reference.h"
#include "variant.h"

/* The masks exactly as the definition states them, one entry at a time.
 * They are kept independent of attn_visible_range, which backends use, on
 * purpose. The causal and padding masks: */
/* Batch item b's queries and keys: a serving batch's own (backend.h). */
static int ref_nq(const attn_problem *p, int b)
{
    return p->ragged ? p->ragged->nq[b] : p->seq_q;
}

static int ref_nk(const attn_problem *p, int b)
{
    return p->ragged ? p->ragged->nk[b] : p->seq_kv;
}

bool attn_ref_visible(const attn_problem *p, int b, int i, int j)
{
    if (p->kv_len && j >= p->kv_len[b])
        return false;
    if (p->causal && j - i > ref_nk(p, b) - ref_nq(p, b))
        return false;
    return true;
}

/* The window: i' - L <= j <= i' + R, with i' = i + Nk - Nq. */
bool attn_ref_in_window(const attn_problem *p, int b, int i, int j)
{
    if (!p->mods.window)
        return true;
    const long at = (long)i + ref_nk(p, b) - ref_nq(p, b);
    return j >= at - p->mods.left && j <= at + p->mods.right;
}

/* ALiBi's slope of head h, from Press et al.'s definition: the geometric
 * sequence starting at and with ratio 2^(-8/n), n the largest power of two
 * not above H; heads past n take every other term of the sequence of 2n. */
double attn_ref_alibi_slope(int heads, int h)
{
    const double n = exp2(floor(log2((double)heads)));
    if (h < n)
        return pow(pow(2.0, -8.0 / n), h + 1);
    return pow(pow(2.0, -8.0 / (2 * n)), 2 * (h - n) + 1);
}

/* The K/V head query head bh = b*H + h reads: b*Hkv + h / (H/Hkv), written
 * out here rather than taken from backend.h, like the mask above. */
/* Where batch item b, query head h, query i of row `row` of Q and O is,
 * written out from backend.h's layouts (a serving batch: tokens outermost,
 * the items' tokens one after the other). */
static void ref_where(const attn_problem *p, size_t row, int *b, int *h, int *i)
{
    if (!p->ragged) {
        const size_t bh = row / (size_t)p->seq_q;
        *i = (int)(row % (size_t)p->seq_q);
        *b = (int)(bh / (size_t)p->heads);
        *h = (int)(bh % (size_t)p->heads);
        return;
    }
    const long tok = (long)(row / (size_t)p->heads);
    int x = 0;
    while (x + 1 < p->batch && p->ragged->q0[x + 1] <= tok)
        x++;
    *b = x;
    *h = (int)(row % (size_t)p->heads);
    *i = (int)(tok - p->ragged->q0[x]);
}

/* The row of K (and of V) holding key j of batch item b's K/V head g: the
 * dense [B][Hkv][Nk], a serving batch's packed [Tk][Hkv], or its pool of
 * pages [pages][Hkv][P], item b's page j / P being entry k0[b] + j / P of
 * the block tables. */
static size_t ref_kv_row(const attn_problem *p, const attn_tensors *in, int b, int g, int j)
{
    const size_t hkv = p->kv_heads > 0 ? (size_t)p->kv_heads : (size_t)p->heads;
    if (!p->ragged)
        return ((size_t)b * hkv + (size_t)g) * (size_t)p->seq_kv + (size_t)j;
    const int page = p->ragged->page;
    if (!page)
        return ((size_t)p->ragged->k0[b] + (size_t)j) * hkv + (size_t)g;
    const size_t at = (size_t)in->pages[p->ragged->k0[b] + j / page];
    return (at * hkv + (size_t)g) * (size_t)page + (size_t)(j % page);
}

size_t attn_ref_kv_of(const attn_problem *p, size_t bh)
{
    const size_t hkv = p->kv_heads > 0 ? (size_t)p->kv_heads : (size_t)p->heads;
    const size_t b = bh / (size_t)p->heads, h = bh % (size_t)p->heads;
    return b * hkv + h / ((size_t)p->heads / hkv);
}

size_t attn_ref_plan_rows(const attn_problem *p, long want)
{
    const size_t total = attn_q_rows(p);
    if (want < 0)
        return total;
    if (want > 0)
        return (size_t)want < total ? (size_t)want : total;
    const double per_row = (double)p->seq_kv * (p->d_k + p->d_v);
    if (per_row * (double)total <= (double)ATTN_REF_BUDGET)
        return total;
    double rows = (double)ATTN_REF_BUDGET / per_row;
    if (rows < 256)
        rows = 256;   /* below this a sample says too little, whatever it costs */
    return rows < (double)total ? (size_t)rows : total;
}

size_t attn_ref_bytes(const attn_problem *p, long want, int threads)
{
    const size_t n = attn_ref_plan_rows(p, want);
    return n * (sizeof(size_t) + (size_t)p->d_v * sizeof(double)) +
           (size_t)threads * (size_t)p->seq_kv * sizeof(double);
}

/* Stratified: one row drawn in each of n equal strata, so the sample spans
 * every batch and head; the first and the last row are always in it. */
static void pick_rows(size_t *rows, size_t n, size_t total, uint64_t seed)
{
    if (n == total) {
        for (size_t r = 0; r < n; r++)
            rows[r] = r;
        return;
    }
    for (size_t s = 0; s < n; s++) {
        const size_t lo = (size_t)((double)s * total / n);
        size_t hi = (size_t)((double)(s + 1) * total / n);
        if (hi <= lo)
            hi = lo + 1;
        rows[s] = lo + (size_t)(attn_uniform(seed, 0x5a3b1e, s) * (double)(hi - lo));
    }
    rows[0] = 0;
    rows[n - 1] = total - 1;
}

/* The window, and sparse's pattern around it, by their definitions
 * (variant.h), one entry at a time; blocks[0..nb) are the random key blocks
 * of query i's block. */
static bool in_pattern(const attn_problem *p, int b, int i, int j, const int *blocks, int nb)
{
    const bool near = attn_ref_in_window(p, b, i, j);
    if (p->kind != ATTN_KIND_SPARSE)
        return near;
    if (near || j < p->var.globals || i < p->var.globals)
        return true;
    for (int t = 0; t < nb; t++)
        if (blocks[t] == j / p->var.block)
            return true;
    return false;
}

/* K and V as the reference reads them: the fp32 values where the harness
 * holds them, else the 16-bit storage itself (harness/inputs.h), or a
 * quantized cache's rows read back (kernels/quant.h), element by element
 * of the flat [B*Hkv][Nk][n] layout. */
typedef struct kv_view {
    const float *f;
    const uint16_t *h;
    bool bf16;
    const uint8_t *qb;       /* quantized rows, else NULL */
    attn_kvq fmt;
    size_t n, row_bytes;     /* values and bytes per row */
    float scale;             /* fp8: the scale of the view's item and K/V head, else 1 */
} kv_view;

static inline double kv_at(const kv_view *x, size_t i)
{
    if (x->qb) {
        const size_t row = i / x->n;
        return (double)attn_kvq_value(x->qb + row * x->row_bytes, i % x->n, x->fmt, x->scale);
    }
    return x->f ? (double)x->f[i] : (double)attn_half_to_f32(x->h[i], x->bf16);
}

/* K (V: v) of item b's K/V head g. */
static kv_view kv_of(const attn_problem *p, const attn_tensors *in, bool v, int b, int g)
{
    const bool vk = p->mods.v_from_k;   /* latent attention: V is read from K */
    if (attn_dtype_quantized(p->kv_dtype)) {
        const size_t n = (size_t)(v && !vk ? p->d_v : p->d_k);
        const float *sc = v && !vk ? in->vscale : in->kscale;
        const size_t hkv = p->kv_heads > 0 ? (size_t)p->kv_heads : (size_t)p->heads;
        return (kv_view){ .qb = v && !vk ? in->vq : in->kq, .fmt = attn_dtype_kvq(p->kv_dtype),
                          .n = n, .row_bytes = attn_dtype_row_bytes(p->kv_dtype, n),
                          .scale = sc ? sc[(size_t)b * hkv + (size_t)g] : 1.0f };
    }
    return (kv_view){ .f = v && !vk ? in->v : in->k, .h = v && !vk ? in->v16 : in->k16,
                      .bf16 = p->kv_dtype == ATTN_DTYPE_BF16 };
}

static double ref_row(const attn_problem *p, const attn_tensors *in, size_t row,
                      double *s, double *o)
{
    const int dk = p->d_k, dv = p->d_v;
    int b, h, i;
    ref_where(p, row, &b, &h, &i);
    const int nq = ref_nq(p, b), nk = ref_nk(p, b);
    const size_t hkv = p->kv_heads > 0 ? (size_t)p->kv_heads : (size_t)p->heads;
    const int g = (int)((size_t)h / ((size_t)p->heads / hkv));
    const float *q = in->q + row * (size_t)dk;
    const kv_view kx = kv_of(p, in, false, b, g), vx = kv_of(p, in, true, b, g);
    /* Latent attention: V is the first dv columns of K's rows. */
    const size_t vs = p->mods.v_from_k ? (size_t)dk : (size_t)dv;
    const double cap = p->mods.softcap;
    const double slope = p->mods.alibi ? attn_ref_alibi_slope(p->heads, h) : 0.0;
    const long at = (long)i + nk - nq;

    int blocks[ATTN_MAX_RANDOM_BLOCKS], nb = 0;
    if (p->kind == ATTN_KIND_SPARSE && p->var.random_blocks > 0)
        nb = attn_random_blocks(p, (i + nk - nq) / p->var.block, blocks);
    /* Non-finite inputs follow IEEE arithmetic through the definition: a NaN
     * logit makes the maximum NaN and so the whole row; a visible key's V is
     * multiplied by its weight even when that weight is 0 (0 x NaN = NaN).
     * Keys that are not visible are never read. */
    double m = -INFINITY, max_abs = 0.0;
    int seen = 0;
    for (int j = 0; j < nk; j++) {
        if (!attn_ref_visible(p, b, i, j) || !in_pattern(p, b, i, j, blocks, nb)) {
            s[j] = NAN;   /* not a key of this row: skipped below */
            continue;
        }
        seen++;
        double dot = 0.0;
        const size_t k0 = ref_kv_row(p, in, b, g, j) * (size_t)dk;
        if (kx.f)
            for (int c = 0; c < dk; c++)
                dot += (double)q[c] * (double)kx.f[k0 + c];
        else
            for (int c = 0; c < dk; c++)
                dot += (double)q[c] * kv_at(&kx, k0 + c);
        s[j] = (double)p->scale * dot;
        if (cap > 0)
            s[j] = cap * tanh(s[j] / cap);
        s[j] -= slope * (double)labs((long)j - at);
        if (s[j] > m || isnan(s[j]))
            m = isnan(m) ? m : s[j];
        if (fabs(s[j]) > max_abs && isfinite(s[j]) && !p->mods.alibi)
            max_abs = fabs(s[j]);
    }
    for (int c = 0; c < dv; c++)
        o[c] = 0.0;
    if (!seen)
        return 0.0;   /* fully masked: zeros by definition */
    /* A sink joins the denominator only. */
    double l = p->mods.sinks ? exp((double)in->sinks[h] - m) : 0.0;
    for (int j = 0; j < nk; j++) {
        if (!attn_ref_visible(p, b, i, j) || !in_pattern(p, b, i, j, blocks, nb))
            continue;
        const double w = exp(s[j] - m);
        l += w;
        const size_t v0 = ref_kv_row(p, in, b, g, j) * vs;
        for (int c = 0; c < dv; c++)
            o[c] += w * kv_at(&vx, v0 + c);
        /* ALiBi's bias grows with the distance, to |logits| of m_h Nk, but
         * a logit 64 below the row's maximum weighs e^-64 and its rounding
         * reaches no output: the logits that count are the others. */
        if (p->mods.alibi && s[j] >= m - 64 && fabs(s[j]) > max_abs && isfinite(s[j]))
            max_abs = fabs(s[j]);
    }
    for (int c = 0; c < dv; c++)
        o[c] /= l;
    return max_abs;
}

static int thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static void count_nonfinite(attn_ref *r, float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof(bits));
    r->nonfinite_inputs++;
    r->nan_inputs += isnan(x) != 0;
    r->poison_inputs += bits == ATTN_POISON_BITS;
}

attn_status attn_ref_compute(attn_ref *r, const attn_problem *p_any, const attn_tensors *in,
                             long want, uint64_t seed, int threads)
{
    /* Softmax attention whatever kind p_any names: ref_row reads the kind. */
    attn_problem dense = *p_any;
    dense.kind = ATTN_KIND_SOFTMAX;
    const attn_problem *p = &dense;
    memset(r, 0, sizeof(*r));
    r->total_rows = attn_q_rows(p);
    r->nrows = attn_ref_plan_rows(p, want);
    r->rows = attn_host_alloc(r->nrows * sizeof(size_t));
    r->out = attn_host_alloc(r->nrows * (size_t)p->d_v * sizeof(double));
    double *scratch = attn_host_alloc((size_t)threads * (size_t)p->seq_kv * sizeof(double));
    if (!r->rows || !r->out || !scratch) {
        attn_host_free(scratch);
        attn_ref_free(r);
        return ATTN_ENOMEM;
    }
    pick_rows(r->rows, r->nrows, r->total_rows, seed);

    const int hkv = p->kv_heads > 0 ? p->kv_heads : p->heads;
    double max_v = 0.0, max_logit = 0.0;
    /* Over the rows that hold keys (a paged batch's pool has slots past
     * each item's keys, which no row reads). Latent attention: V is K's
     * first dv columns, and K's non-finite values are counted once. */
    for (int b = 0; b < p->batch; b++)
        for (int g = 0; g < hkv; g++) {
            const kv_view kx = kv_of(p, in, false, b, g), vx = kv_of(p, in, true, b, g);
            for (int j = 0; j < ref_nk(p, b); j++) {
                const size_t row = ref_kv_row(p, in, b, g, j);
                for (int c = 0; c < p->d_v; c++) {
                    const float x = p->mods.v_from_k
                                        ? (float)kv_at(&kx, row * (size_t)p->d_k + (size_t)c)
                                        : (float)kv_at(&vx, row * (size_t)p->d_v + (size_t)c);
                    if (!isfinite(x) && !p->mods.v_from_k)
                        count_nonfinite(r, x);
                    else if (isfinite(x) && fabs((double)x) > max_v)
                        max_v = fabs((double)x);
                }
                for (int c = 0; c < p->d_k; c++) {
                    const float x = (float)kv_at(&kx, row * (size_t)p->d_k + (size_t)c);
                    if (!isfinite(x))
                        count_nonfinite(r, x);
                }
            }
        }
    const size_t nq_all = attn_q_rows(p) * (size_t)p->d_k;
    for (size_t e = 0; e < nq_all; e++)
        if (!isfinite(in->q[e]))
            count_nonfinite(r, in->q[e]);

    const long n = (long)r->nrows;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 4) reduction(max : max_logit)
#endif
    for (long x = 0; x < n; x++) {
        double *s = scratch + (size_t)thread_id() * (size_t)p->seq_kv;
        const double l = ref_row(p, in, r->rows[x], s, r->out + (size_t)x * p->d_v);
        if (l > max_logit)
            max_logit = l;
    }
    attn_host_free(scratch);
    r->max_abs_v = max_v;
    r->max_abs_logit = max_logit;
    return ATTN_OK;
}

void attn_ref_free(attn_ref *r)
{
    attn_host_free(r->rows);
    attn_host_free(r->out);
    r->rows = NULL;
    r->out = NULL;
}

/* ---- the linear-time kinds ------------------------------------------------ */

static double elu1(double x)
{
    return x > 0 ? x + 1.0 : exp(x);
}

/* Per (batch, head): what every row of it needs, computed once.
 *   linear     phi(K) [Nk][dk]
 *   performer  the key feature exponents [Nk][m] minus their maximum
 *   linformer  K' [p][dk], V' [p][dv] */
typedef struct head_prep {
    double *a, *b;
    double kmax;        /* performer: the maximum subtracted from the key exponents */
} head_prep;

static void performer_exps(const attn_problem *p, const double *w, const float *x, double *e)
{
    const int m = p->var.features, d = p->d_k;
    const double s = sqrt((double)p->scale);
    double sq = 0;
    for (int c = 0; c < d; c++)
        sq += (s * x[c]) * (s * x[c]);
    for (int t = 0; t < m; t++) {
        double dot = 0;
        for (int c = 0; c < d; c++)
            dot += w[(size_t)t * d + c] * (s * x[c]);
        e[t] = dot - sq / 2;
    }
}

static void prep_head(const attn_problem *p, const attn_tensors *in, const double *w, size_t bh,
                      head_prep *hp)
{
    const int nk = p->seq_kv, dk = p->d_k, dv = p->d_v, b = (int)(bh / (size_t)p->heads);
    const float *k = in->k + attn_ref_kv_of(p, bh) * (size_t)nk * dk;
    const float *v = in->v + attn_ref_kv_of(p, bh) * (size_t)nk * dv;
    if (p->kind == ATTN_KIND_LINEAR) {
        for (size_t e = 0; e < (size_t)nk * dk; e++)
            hp->a[e] = elu1((double)k[e]);
    } else if (p->kind == ATTN_KIND_PERFORMER) {
        const int m = p->var.features;
        hp->kmax = -INFINITY;
        for (int j = 0; j < nk; j++) {
            performer_exps(p, w, k + (size_t)j * dk, hp->a + (size_t)j * m);
            for (int t = 0; t < m; t++)
                if (hp->a[(size_t)j * m + t] > hp->kmax)
                    hp->kmax = hp->a[(size_t)j * m + t];
        }
    } else if (p->kind == ATTN_KIND_LINFORMER) {
        const int np = p->var.proj, valid = p->kv_len ? p->kv_len[b] : nk;
        memset(hp->a, 0, (size_t)np * dk * sizeof(double));
        memset(hp->b, 0, (size_t)np * dv * sizeof(double));
        for (int t = 0; t < np; t++)
            for (int j = 0; j < valid; j++) {
                const double e = attn_linformer_e(p, t, j), f = attn_linformer_f(p, t, j);
                for (int c = 0; c < dk; c++)
                    hp->a[(size_t)t * dk + c] += e * k[(size_t)j * dk + c];
                for (int c = 0; c < dv; c++)
                    hp->b[(size_t)t * dv + c] += f * v[(size_t)j * dv + c];
            }
    }
}

/* One row of a linear-time kind; returns the largest exponent it evaluated. */
static double variant_row(const attn_problem *p, const attn_tensors *in, const double *w,
                          const head_prep *hp, size_t row, double *s, double *o)
{
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const size_t bh = row / (size_t)nq;
    const int i = (int)(row % (size_t)nq), b = (int)(bh / (size_t)p->heads);
    const float *q = in->q + row * (size_t)dk;
    const float *v = in->v + attn_ref_kv_of(p, bh) * (size_t)nk * dv;
    for (int c = 0; c < dv; c++)
        o[c] = 0.0;

    if (p->kind == ATTN_KIND_LINFORMER) {
        const int np = p->var.proj;
        double m = -INFINITY, big = 0;
        for (int t = 0; t < np; t++) {
            double dot = 0;
            for (int c = 0; c < dk; c++)
                dot += (double)q[c] * hp->a[(size_t)t * dk + c];
            s[t] = (double)p->scale * dot;
            m = s[t] > m ? s[t] : m;
            big = fabs(s[t]) > big && isfinite(s[t]) ? fabs(s[t]) : big;
        }
        double l = 0;
        for (int t = 0; t < np; t++) {
            const double e = exp(s[t] - m);
            l += e;
            for (int c = 0; c < dv; c++)
                o[c] += e * hp->b[(size_t)t * dv + c];
        }
        for (int c = 0; c < dv; c++)
            o[c] /= l;
        return big;
    }

    /* linear and performer: kernel weights kappa(q, k_j) over the visible keys. */
    double big = 0;
    const int m = p->var.features;
    double *phq = s + nk;                   /* performer: the query's features */
    if (p->kind == ATTN_KIND_PERFORMER) {
        performer_exps(p, w, q, phq);
        double qmax = -INFINITY;
        for (int t = 0; t < m; t++)
            qmax = phq[t] > qmax ? phq[t] : qmax;
        for (int t = 0; t < m; t++) {
            big = fabs(phq[t]) > big && isfinite(phq[t]) ? fabs(phq[t]) : big;
            phq[t] = exp(phq[t] - qmax);
        }
        big = big > fabs(hp->kmax) || !isfinite(hp->kmax) ? big : fabs(hp->kmax);
    }
    double l = 0;
    for (int j = 0; j < nk; j++) {
        s[j] = 0;
        if (!attn_ref_visible(p, b, i, j))
            continue;
        double kap = 0;
        if (p->kind == ATTN_KIND_LINEAR) {
            for (int c = 0; c < dk; c++)
                kap += elu1((double)q[c]) * hp->a[(size_t)j * dk + c];
        } else {
            for (int t = 0; t < m; t++)
                kap += phq[t] * exp(hp->a[(size_t)j * m + t] - hp->kmax);
        }
        l += kap;
        for (int c = 0; c < dv; c++)
            o[c] += kap * (double)v[(size_t)j * dv + c];
    }
    if (l > 0 || isnan(l))   /* a NaN weight makes the row NaN */
        for (int c = 0; c < dv; c++)
            o[c] /= l;
    else
        for (int c = 0; c < dv; c++)
            o[c] = 0;
    return big;
}

attn_status attn_ref_variant(attn_ref *r, const attn_ref *dense, const attn_problem *p,
                             const attn_tensors *in, int threads)
{
    memset(r, 0, sizeof(*r));
    r->nrows = dense->nrows;
    r->total_rows = dense->total_rows;
    r->max_abs_v = dense->max_abs_v;
    r->nonfinite_inputs = dense->nonfinite_inputs;
    r->nan_inputs = dense->nan_inputs;
    r->poison_inputs = dense->poison_inputs;
    r->rows = attn_host_alloc(r->nrows * sizeof(size_t));
    r->out = attn_host_alloc(r->nrows * (size_t)p->d_v * sizeof(double));
    if (!r->rows || !r->out) {
        attn_ref_free(r);
        return ATTN_ENOMEM;
    }
    memcpy(r->rows, dense->rows, r->nrows * sizeof(size_t));
    const int nk = p->seq_kv, dk = p->d_k, dv = p->d_v, m = p->var.features, np = p->var.proj;
    const bool masked = p->kind == ATTN_KIND_LOCAL || p->kind == ATTN_KIND_SPARSE;
    size_t scratch_row = (size_t)nk + (p->kind == ATTN_KIND_PERFORMER ? (size_t)m : 0) +
                         (p->kind == ATTN_KIND_LINFORMER ? (size_t)np : 0);
    size_t a_elems = 0, b_elems = 0;
    if (p->kind == ATTN_KIND_LINEAR)
        a_elems = (size_t)nk * dk;
    else if (p->kind == ATTN_KIND_PERFORMER)
        a_elems = (size_t)nk * m;
    else if (p->kind == ATTN_KIND_LINFORMER)
        a_elems = (size_t)np * dk, b_elems = (size_t)np * dv;
    double *scratch = attn_host_alloc((size_t)threads * scratch_row * sizeof(double));
    double *w = p->kind == ATTN_KIND_PERFORMER ? attn_host_alloc((size_t)m * dk * sizeof(double))
                                               : NULL;
    head_prep hp = { .a = a_elems ? attn_host_alloc(a_elems * sizeof(double)) : NULL,
                     .b = b_elems ? attn_host_alloc(b_elems * sizeof(double)) : NULL };
    if (!scratch || (p->kind == ATTN_KIND_PERFORMER && !w) || (a_elems && !hp.a) ||
        (b_elems && !hp.b)) {
        attn_host_free(scratch);
        attn_host_free(w);
        attn_host_free(hp.a);
        attn_host_free(hp.b);
        attn_ref_free(r);
        return ATTN_ENOMEM;
    }
    if (w)
        attn_performer_features(p, w);

    double max_logit = 0.0;
    /* Rows are ascending, so those of one (batch, head) are contiguous. */
    for (size_t x0 = 0; x0 < r->nrows;) {
        const size_t bh = r->rows[x0] / (size_t)p->seq_q;
        size_t x1 = x0;
        while (x1 < r->nrows && r->rows[x1] / (size_t)p->seq_q == bh)
            x1++;
        if (!masked)
            prep_head(p, in, w, bh, &hp);
        const long lo = (long)x0, hi = (long)x1;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 4) reduction(max : max_logit)
#endif
        for (long x = lo; x < hi; x++) {
            double *s = scratch + (size_t)thread_id() * scratch_row;
            double *o = r->out + (size_t)x * dv;
            const double l = masked ? ref_row(p, in, r->rows[x], s, o)
                                    : variant_row(p, in, w, &hp, r->rows[x], s, o);
            if (l > max_logit)
                max_logit = l;
        }
        x0 = x1;
    }
    r->max_abs_logit = p->kind == ATTN_KIND_LINEAR ? 0.0 : max_logit;
    attn_host_free(scratch);
    attn_host_free(w);
    attn_host_free(hp.a);
    attn_host_free(hp.b);
    return ATTN_OK;
}

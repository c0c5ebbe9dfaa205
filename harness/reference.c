#include <math.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "fill.h"
#include "memory.h"
#include "reference.h"

/* The mask exactly as the definition states it, one entry at a time. It is
 * kept independent of attn_visible_end, which backends use, on purpose. */
static bool visible(const attn_problem *p, int b, int i, int j)
{
    if (p->kv_len && j >= p->kv_len[b])
        return false;
    if (p->causal && j - i > p->seq_kv - p->seq_q)
        return false;
    return true;
}

size_t attn_ref_plan_rows(const attn_problem *p, long want)
{
    const size_t total = (size_t)p->batch * p->heads * p->seq_q;
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

static double ref_row(const attn_problem *p, const attn_tensors *in, size_t row,
                      double *s, double *o)
{
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const size_t bh = row / (size_t)nq;
    const int i = (int)(row % (size_t)nq), b = (int)(bh / (size_t)p->heads);
    const float *q = in->q + row * (size_t)dk;
    const float *k = in->k + bh * (size_t)nk * dk;
    const float *v = in->v + bh * (size_t)nk * dv;

    double m = -INFINITY, max_abs = 0.0;
    for (int j = 0; j < nk; j++) {
        if (!visible(p, b, i, j)) {
            s[j] = -INFINITY;
            continue;
        }
        double dot = 0.0;
        for (int c = 0; c < dk; c++)
            dot += (double)q[c] * (double)k[(size_t)j * dk + c];
        s[j] = (double)p->scale * dot;
        if (s[j] > m)
            m = s[j];
        if (fabs(s[j]) > max_abs)
            max_abs = fabs(s[j]);
    }
    for (int c = 0; c < dv; c++)
        o[c] = 0.0;
    if (m == -INFINITY)
        return 0.0;   /* fully masked: zeros by definition */
    double l = 0.0;
    for (int j = 0; j < nk; j++) {
        if (s[j] == -INFINITY)
            continue;
        const double w = exp(s[j] - m);
        l += w;
        for (int c = 0; c < dv; c++)
            o[c] += w * (double)v[(size_t)j * dv + c];
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

attn_status attn_ref_compute(attn_ref *r, const attn_problem *p, const attn_tensors *in,
                             long want, uint64_t seed, int threads)
{
    memset(r, 0, sizeof(*r));
    r->total_rows = (size_t)p->batch * p->heads * p->seq_q;
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

    const size_t nv = (size_t)p->batch * p->heads * p->seq_kv * p->d_v;
    double max_v = 0.0, max_logit = 0.0;
    for (size_t e = 0; e < nv; e++)
        if (fabs((double)in->v[e]) > max_v)
            max_v = fabs((double)in->v[e]);

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

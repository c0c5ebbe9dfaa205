/* A serving batch's inputs (docs/serving.md): the block tables, K and V
 * filled or read through them, the NaN past each item's last key, and the
 * packed .npy files of --inputs and --dump-inputs. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fill.h"
#include "kernels/half.h"
#include "kernels/rng.h"
#include "memory.h"
#include "npy.h"
#include "serving_inputs.h"

/* A paged batch's K (or V, rows of d) filled through the block tables with
 * the values its packed layout holds (the fill's index is the key's place
 * in [sum Nk, Hkv, d]): the page size moves the keys, never changes them.
 * fp32 into x, or straight to 16 bits into h where x is NULL. */
void attn_serving_fill(float *x, uint16_t *h, const attn_problem *p, const int32_t *pages,
                       const attn_setup *s, int tensor, int d)
{
    const size_t hkv = (size_t)attn_kv_heads(p);
    const bool bf16 = p->kv_dtype == ATTN_DTYPE_BF16;
    size_t first = 0;   /* the item's first key in the packed layout */
    for (int b = 0; b < p->batch; b++) {
        const int nk = p->ragged->nk[b];
#ifdef _OPENMP
#pragma omp parallel for num_threads(s->threads) schedule(static)
#endif
        for (int j = 0; j < nk; j++)
            for (size_t g = 0; g < hkv; g++) {
                const size_t at = ((first + (size_t)j) * hkv + g) * (size_t)d;
                const size_t row = attn_kv_row(p, pages, b, (int)g, j) * (size_t)d;
                for (int c = 0; c < d; c++) {
                    const float v = attn_fill_value(s->fill, s->seed, tensor, at + (size_t)c);
                    if (x)
                        x[row + (size_t)c] = v;
                    else
                        h[row + (size_t)c] = bf16 ? attn_f32_to_bf16(v) : attn_f32_to_f16(v);
                }
            }
        first += (size_t)nk;
    }
}

/* fp8's scale of a serving batch's item b, K/V head g: from the largest
 * |x| of its keys (attn_fp8_scale over them, gathered; the slack of its
 * last page, NaN, is not among them). */
float attn_serving_fp8_scale(const float *x, const attn_problem *p, const int32_t *pages, int b,
                           int g, int n, attn_kvq f, float *tmp)
{
    const int nk = p->ragged->nk[b];
    for (int j = 0; j < nk; j++)
        memcpy(tmp + (size_t)j * n, x + attn_kv_row(p, pages, b, g, j) * (size_t)n,
               (size_t)n * sizeof(float));
    return attn_fp8_scale(tmp, (size_t)nk * (size_t)n, f);
}

/* The stream of the block tables' shuffle (kernels/rng.h). */
#define PAGES_STREAM 0x9a6e5u

/* A paged batch's block tables: the pool's pages, each used once, in a
 * seeded shuffle (Fisher-Yates), so that no item's pages are contiguous
 * by accident. */
void attn_serving_shuffle_pages(int32_t *pages, long n, uint64_t seed)
{
    for (long e = 0; e < n; e++)
        pages[e] = (int32_t)e;
    for (long e = n - 1; e > 0; e--) {
        long x = (long)(attn_uniform(seed, PAGES_STREAM, (uint64_t)e) * (double)(e + 1));
        x = x > e ? e : x;
        const int32_t t = pages[e];
        pages[e] = pages[x];
        pages[x] = t;
    }
}

/* The slots of each item's last page past its keys: NaN in K and V (in
 * every storage held), so that a backend that reads past an item's keys
 * cannot pass. No row of the reference reads them. */
void attn_serving_poison_slack(attn_inputs *in, const attn_problem *p)
{
    const attn_ragged *r = p->ragged;
    const size_t hkv = (size_t)attn_kv_heads(p), P = (size_t)r->page;
    const uint16_t nan16 = p->kv_dtype == ATTN_DTYPE_BF16 ? 0x7fc0u : 0x7e00u;
    for (int b = 0; b < p->batch; b++) {
        const int nk = r->nk[b];
        if (nk % r->page == 0)
            continue;
        const size_t page = (size_t)in->pages[r->k0[b] + nk / r->page];
        for (size_t slot = (size_t)(nk % r->page); slot < P; slot++)
            for (size_t g = 0; g < hkv; g++) {
                const size_t row = (page * hkv + g) * P + slot;
                for (int c = 0; c < p->d_k; c++) {
                    if (in->k)
                        in->k[row * p->d_k + c] = NAN;
                    if (in->k16)
                        in->k16[row * p->d_k + c] = nan16;
                }
                for (int c = 0; c < p->d_v; c++) {
                    if (in->v)
                        in->v[row * p->d_v + c] = NAN;
                    if (in->v16)
                        in->v16[row * p->d_v + c] = nan16;
                }
            }
    }
}

/* DIR/cu_seqlens_<x>.npy, where it is there, against the batch's offsets
 * off[batch + 1]: the files of other lengths are refused, not misread. */
static attn_status check_offsets(const char *dir, const char *x, const long *off, int batch,
                                 char *why, size_t len)
{
    char path[4200], got[160];
    snprintf(path, sizeof(path), "%s/cu_seqlens_%s.npy", dir, x);
    if (access(path, F_OK))
        return ATTN_OK;
    attn_npy a;
    if (!attn_npy_read_ints(path, &a, why, len))
        return ATTN_EINVAL;
    attn_status st = ATTN_OK;
    if (a.ndim != 1 || a.shape[0] != (size_t)batch + 1) {
        attn_npy_shape_str(a.shape, a.ndim, got, sizeof(got));
        snprintf(why, len, "%s has shape %s, the case needs (%d,) (one offset per item of "
                 "--lens, and the total)", path, got, batch + 1);
        st = ATTN_EINVAL;
    }
    for (int b = 0; st == ATTN_OK && b <= batch; b++)
        if (a.ints[b] != off[b]) {
            snprintf(why, len, "%s: offset %d is %lld where the lengths of --lens put %ld (the "
                     "files hold another batch)", path, b, (long long)a.ints[b], off[b]);
            st = ATTN_EINVAL;
        }
    attn_npy_free(&a);
    return st;
}

/* K (or V, rows of d) of a serving batch from DIR/<name>.npy, packed
 * [sum Nk, Hkv, d] as FlashAttention's varlen layout holds it, into its
 * storage (packed the same, or the pool's rows through the block tables):
 * fp32 into x, or rounded once into 16-bit h where x is NULL. */
static attn_status read_serving_kv(const char *dir, const char *name, const attn_problem *p,
                                   const int32_t *pages, const long *koff, int d, float *x,
                                   uint16_t *h, char *why, size_t len)
{
    const size_t hkv = (size_t)attn_kv_heads(p), n = (size_t)koff[p->batch] * hkv * (size_t)d;
    float *t = attn_host_alloc(n ? n * sizeof(float) : 1);
    if (!t) {
        snprintf(why, len, "out of memory for the inputs");
        return ATTN_ENOMEM;
    }
    const size_t want[3] = { (size_t)koff[p->batch], hkv, (size_t)d };
    const attn_status st = attn_inputs_read_npy(dir, name, want, 3, t, p->kv_dtype, why, len);
    const bool bf16 = p->kv_dtype == ATTN_DTYPE_BF16;
    for (int b = 0; st == ATTN_OK && b < p->batch; b++)
        for (int j = 0; j < p->ragged->nk[b]; j++)
            for (size_t g = 0; g < hkv; g++) {
                const float *src = t + (((size_t)koff[b] + (size_t)j) * hkv + g) * (size_t)d;
                const size_t row = attn_kv_row(p, pages, b, (int)g, j) * (size_t)d;
                if (x)
                    memcpy(x + row, src, (size_t)d * sizeof(float));
                else
                    for (int c = 0; c < d; c++)
                        h[row + (size_t)c] = bf16 ? attn_f32_to_bf16(src[c])
                                                  : attn_f32_to_f16(src[c]);
            }
    attn_host_free(t);
    return st;
}

/* A serving batch's Q, K and V from DIR (the packed layout), its offsets
 * checked against DIR/cu_seqlens_q.npy and cu_seqlens_k.npy where they are
 * there; the block tables are drawn before. */
attn_status attn_serving_read(attn_inputs *in, const attn_problem *p, const char *dir,
                              char *why, size_t len)
{
    long *koff = attn_host_alloc(((size_t)p->batch + 1) * sizeof(long));
    if (!koff) {
        snprintf(why, len, "out of memory for the inputs");
        return ATTN_ENOMEM;
    }
    attn_inputs_key_offsets(p, koff);
    const size_t want_q[3] = { attn_q_tokens(p), (size_t)p->heads, (size_t)p->d_k };
    attn_status st = check_offsets(dir, "q", p->ragged->q0, p->batch, why, len);
    if (st == ATTN_OK)
        st = check_offsets(dir, "k", koff, p->batch, why, len);
    if (st == ATTN_OK)
        st = attn_inputs_read_npy(dir, "q", want_q, 3, in->q, p->dtype, why, len);
    if (st == ATTN_OK)
        st = read_serving_kv(dir, "k", p, in->pages, koff, p->d_k, in->k, in->k16, why, len);
    if (st == ATTN_OK && (in->v || in->v16))
        st = read_serving_kv(dir, "v", p, in->pages, koff, p->d_v, in->v, in->v16, why, len);
    attn_host_free(koff);
    return st;
}

float *attn_inputs_packed_kv(const attn_inputs *in, const attn_problem *p, bool v)
{
    const int d = v ? p->d_v : p->d_k;
    const size_t hkv = (size_t)attn_kv_heads(p);
    long *koff = attn_host_alloc(((size_t)p->batch + 1) * sizeof(long));
    if (!koff)
        return NULL;
    attn_inputs_key_offsets(p, koff);
    const size_t n = (size_t)koff[p->batch] * hkv * (size_t)d;
    float *x = attn_host_alloc(n ? n * sizeof(float) : 1);
    /* A quantized cache as the values it reads back; else fp32 or 16-bit. */
    const uint8_t *xq = v ? in->vq : in->kq;
    const float *x32 = xq ? NULL : v ? in->v : in->k, *scale = v ? in->vscale : in->kscale;
    const uint16_t *x16 = v ? in->v16 : in->k16;
    const bool bf16 = p->kv_dtype == ATTN_DTYPE_BF16;
    const size_t rb = xq ? attn_dtype_row_bytes(p->kv_dtype, (size_t)d) : 0;
    for (int b = 0; x && b < p->batch; b++)
        for (int j = 0; j < p->ragged->nk[b]; j++)
            for (size_t g = 0; g < hkv; g++) {
                float *dst = x + (((size_t)koff[b] + (size_t)j) * hkv + g) * (size_t)d;
                const size_t row = attn_kv_row(p, in->pages, b, (int)g, j);
                if (xq)
                    attn_kvq_dequantize_row(dst, xq + row * rb, (size_t)d,
                                            attn_dtype_kvq(p->kv_dtype),
                                            scale ? scale[(size_t)b * hkv + g] : 1.0f);
                else
                    for (int c = 0; c < d; c++)
                        dst[c] = x32 ? x32[row * (size_t)d + (size_t)c]
                                     : attn_half_to_f32(x16[row * (size_t)d + (size_t)c], bf16);
            }
    attn_host_free(koff);
    return x;
}

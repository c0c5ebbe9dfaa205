#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fill.h"
#include "inputs.h"
#include "kernels/half.h"
#include "kernels/quant.h"
#include "memory.h"
#include "npy.h"
#include "serving_inputs.h"
#include "timer.h"

/* DIR/<name>.npy into x, whose shape must be want (ndim 4: [B,H,N,d]; 3: a
 * serving batch's packed [T,H,d]) and which is stored as dt: uint16 files
 * are bf16 bits, for bf16 storage only. */
attn_status attn_inputs_read_npy(const char *dir, const char *name, const size_t *want,
                                 int ndim, float *x, attn_dtype dt, char *why, size_t len)
{
    char path[4200], got[160], need[160];
    snprintf(path, sizeof(path), "%s/%s.npy", dir, name);
    attn_npy a;
    if (!attn_npy_read(path, &a, why, len))
        return ATTN_EINVAL;
    bool same = a.ndim == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = a.shape[d] == want[d];
    if (!same) {
        attn_npy_shape_str(a.shape, a.ndim, got, sizeof(got));
        attn_npy_shape_str(want, ndim, need, sizeof(need));
        snprintf(why, len, "%s has shape %s, the case needs %s (%s)", path, got, need,
                 ndim == 4 ? "[B,H,N,d]: set --batch, --heads, --kv-heads, --seq, --seq-kv, "
                             "--dk, --dv to match"
                           : "[T,H,d], the items of --lens packed one after another: set "
                             "--lens, --heads, --kv-heads, --dk, --dv to match");
        attn_npy_free(&a);
        return ATTN_EINVAL;
    }
    if (a.u16 && dt != ATTN_DTYPE_BF16) {
        snprintf(why, len, "%s is uint16, which attnbench reads as bf16 bits, but %s is stored "
                 "as %s (give --dtype bf16%s, or a float file)", path, name, attn_dtype_name(dt),
                 strcmp(name, "q") ? " or --kv-dtype bf16" : "");
        attn_npy_free(&a);
        return ATTN_EINVAL;
    }
    memcpy(x, a.data, a.count * sizeof(float));
    attn_npy_free(&a);
    return ATTN_OK;
}

/* x rounded once to storage type dt (nearest, ties to even), kept in h,
 * and x replaced by the rounded values: the reference computes from what
 * the backends are given. */
static void round_to(float *x, uint16_t *h, size_t n, attn_dtype dt)
{
    const bool bf16 = dt == ATTN_DTYPE_BF16;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        h[i] = bf16 ? attn_f32_to_bf16(x[i]) : attn_f32_to_f16(x[i]);
        x[i] = attn_half_to_f32(h[i], bf16);
    }
}

/* Q in q8_0: rows of d values rounded to their q8_0 blocks (quantized and
 * read back), the values before kept in raw. */
static void round_q8_0(float *x, float *raw, size_t rows, int d)
{
    memcpy(raw, x, rows * (size_t)d * sizeof(float));
#pragma omp parallel for schedule(static)
    for (size_t r = 0; r < rows; r++) {
        uint8_t blk[34 * 64];   /* d <= 2048 a time: ATTN_QBLOCK * 64 */
        for (int c = 0; c < d; c += 2048) {
            const size_t n = (size_t)(d - c < 2048 ? d - c : 2048);
            attn_kvq_quantize_row(blk, x + r * (size_t)d + c, n, ATTN_KVQ_Q8_0, 1.0f);
            attn_kvq_dequantize_row(x + r * (size_t)d + c, blk, n, ATTN_KVQ_Q8_0, 1.0f);
        }
    }
}

/* The seeded fill of tensor straight into storage type dt, as attn_fill
 * then round_to would give it, with no fp32 array. */
static void fill16(uint16_t *h, size_t n, const attn_setup *s, int tensor, attn_dtype dt)
{
    const bool bf16 = dt == ATTN_DTYPE_BF16;
#ifdef _OPENMP
#pragma omp parallel for num_threads(s->threads) schedule(static)
#endif
    for (size_t i = 0; i < n; i++) {
        const float x = attn_fill_value(s->fill, s->seed, tensor, i);
        h[i] = bf16 ? attn_f32_to_bf16(x) : attn_f32_to_f16(x);
    }
}

/* DIR/<name>.npy straight into storage type dt, through a temporary fp32
 * array of its own. */
static attn_status read_npy16(const char *dir, const char *name, const size_t want[4],
                              uint16_t *h, size_t n, attn_dtype dt, char *why, size_t len)
{
    float *x = attn_host_alloc(n * sizeof(float));
    if (!x) {
        snprintf(why, len, "out of memory for the inputs");
        return ATTN_ENOMEM;
    }
    const attn_status st = attn_inputs_read_npy(dir, name, want, 4, x, dt, why, len);
    if (st == ATTN_OK)
        round_to(x, h, n, dt);
    attn_host_free(x);
    return st;
}

float *attn_inputs_widen(const uint16_t *h, size_t n, attn_dtype dt)
{
    float *x = attn_host_alloc(n * sizeof(float));
    const bool bf16 = dt == ATTN_DTYPE_BF16;
    if (x) {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++)
            x[i] = attn_half_to_f32(h[i], bf16);
    }
    return x;
}

/* K (or V: rows of n values) of every K/V head quantized into y, with
 * fp8's scale of each item's head into scale (NULL for the block
 * formats). A serving batch's storage is quantized row by row as it lies
 * (a paged pool's slack too, NaN in, NaN out: it stays poisoned). */
static attn_status quantize(uint8_t *y, float *scale, const float *x, const attn_problem *p,
                            const int32_t *pages, int n)
{
    const attn_kvq f = attn_dtype_kvq(p->kv_dtype);
    const long hkv = attn_kv_heads(p), heads = (long)p->batch * hkv;
    const size_t rb = attn_kvq_row_bytes(f, (size_t)n);
    if (p->ragged) {
        if (scale) {
            int most = 1;
            for (int b = 0; b < p->batch; b++)
                most = p->ragged->nk[b] > most ? p->ragged->nk[b] : most;
            float *tmp = attn_host_alloc((size_t)most * (size_t)n * sizeof(float));
            if (!tmp)
                return ATTN_ENOMEM;
            for (long e = 0; e < heads; e++)
                scale[e] = attn_serving_fp8_scale(x, p, pages, (int)(e / hkv), (int)(e % hkv), n,
                                                  f, tmp);
            attn_host_free(tmp);
        }
        /* Each stored row, with the scale of the item and head it holds
         * (attn_kv_row reaches the last page's slack too). */
        for (int b = 0; b < p->batch; b++) {
            const int nk = p->ragged->nk[b];
            const int last = p->ragged->page ? (nk + p->ragged->page - 1) / p->ragged->page *
                                                   p->ragged->page
                                             : nk;
#pragma omp parallel for schedule(static)
            for (int j = 0; j < last; j++)
                for (long g = 0; g < hkv; g++) {
                    const size_t row = attn_kv_row(p, pages, b, (int)g, j);
                    attn_kvq_quantize_row(y + row * rb, x + row * (size_t)n, (size_t)n, f,
                                          scale ? scale[(long)b * hkv + g] : 1.0f);
                }
        }
        return ATTN_OK;
    }
    const size_t rows = (size_t)p->seq_kv;
#pragma omp parallel for schedule(static)
    for (long g = 0; g < heads; g++) {
        const float *xh = x + (size_t)g * rows * n;
        const float sc = scale ? attn_fp8_scale(xh, rows * n, f) : 1.0f;
        if (scale)
            scale[g] = sc;
        for (size_t j = 0; j < rows; j++)
            attn_kvq_quantize_row(y + ((size_t)g * rows + j) * rb, xh + j * n, (size_t)n, f, sc);
    }
    return ATTN_OK;
}

float *attn_inputs_dequantize(const attn_inputs *in, const attn_problem *p, bool v)
{
    const int n = v ? p->d_v : p->d_k;
    const long heads = (long)p->batch * attn_kv_heads(p);
    const size_t rows = (size_t)p->seq_kv, rb = attn_dtype_row_bytes(p->kv_dtype, (size_t)n);
    const uint8_t *y = v ? in->vq : in->kq;
    const float *scale = v ? in->vscale : in->kscale;
    float *x = attn_host_alloc((size_t)heads * rows * (size_t)n * sizeof(float));
    if (!x)
        return NULL;
#pragma omp parallel for schedule(static)
    for (long g = 0; g < heads; g++)
        for (size_t j = 0; j < rows; j++)
            attn_kvq_dequantize_row(x + ((size_t)g * rows + j) * n, y + ((size_t)g * rows + j) * rb,
                                    (size_t)n, attn_dtype_kvq(p->kv_dtype),
                                    scale ? scale[g] : 1.0f);
    return x;
}

size_t attn_inputs_bytes(const attn_problem *p, const attn_sizes *sz)
{
    const size_t kv32 = attn_inputs_kv_fp32(p) ? sz->k + sz->v : 0;
    size_t fp32 = (sz->q + kv32 + (size_t)p->heads) * sizeof(float), half = 0;
    if (attn_backward(p))
        fp32 += sz->o * sizeof(float);   /* dO */
    if (p->ragged && p->ragged->page)
        fp32 += (size_t)p->ragged->k0[p->batch] * sizeof(int32_t);   /* the block tables */
    if (attn_dtype_half(p->dtype))
        half += sz->q * 2;
    else if (p->dtype == ATTN_DTYPE_Q8_0)
        fp32 += sz->q * sizeof(float);   /* Q before its rounding */
    if (attn_dtype_quantized(p->kv_dtype))
        half += sz->kv;   /* the quantized rows and scales */
    else if (p->kv_dtype != ATTN_DTYPE_FP32)
        half += (sz->k + sz->v) * 2;
    return fp32 + half;
}

attn_status attn_inputs_make(attn_inputs *in, const attn_problem *p, const attn_setup *s,
                             char *why, size_t len)
{
    memset(in, 0, sizeof(*in));
    attn_sizes sz;
    if (!attn_problem_sizes(p, &sz)) {
        snprintf(why, len, "its tensors overflow size_t");
        return ATTN_ENOMEM;
    }
    in->q = attn_host_alloc(sz.q * sizeof(float));
    const bool kv32 = attn_inputs_kv_fp32(p);
    if (kv32)
        in->k = attn_host_alloc(sz.k * sizeof(float));
    /* Latent attention stores no V: it is read from K (sz.v is 0). */
    const bool has_v = !p->mods.v_from_k;
    if (has_v && kv32)
        in->v = attn_host_alloc(sz.v * sizeof(float));
    const bool kvq = attn_dtype_quantized(p->kv_dtype);
    const bool q16 = attn_dtype_half(p->dtype), kv16 = p->kv_dtype != ATTN_DTYPE_FP32 && !kvq;
    const bool q8 = p->dtype == ATTN_DTYPE_Q8_0;
    const bool scaled = kvq && attn_kvq_head_scaled(attn_dtype_kvq(p->kv_dtype));
    const size_t kv_heads = (size_t)p->batch * (size_t)attn_kv_heads(p);
    if (q16)
        in->q16 = attn_host_alloc(sz.q * 2);
    if (q8)
        in->q_raw = attn_host_alloc(sz.q * sizeof(float));
    if (kvq) {
        const size_t rows = attn_kv_tokens(p) * (size_t)attn_kv_heads(p);
        in->kq = attn_host_alloc(rows * attn_dtype_row_bytes(p->kv_dtype, (size_t)p->d_k));
        if (has_v)
            in->vq = attn_host_alloc(rows * attn_dtype_row_bytes(p->kv_dtype, (size_t)p->d_v));
        if (scaled) {
            in->kscale = attn_host_alloc(kv_heads * sizeof(float));
            if (has_v)
                in->vscale = attn_host_alloc(kv_heads * sizeof(float));
        }
    }
    if (kv16) {
        in->k16 = attn_host_alloc(sz.k * 2);
        if (has_v)
            in->v16 = attn_host_alloc(sz.v * 2);
    }
    if (p->mods.sinks)
        in->sinks = attn_host_alloc((size_t)p->heads * sizeof(float));
    const bool paged = p->ragged && p->ragged->page;
    if (paged)
        in->pages = attn_host_alloc((size_t)p->ragged->k0[p->batch] * sizeof(int32_t) + 1);
    const bool bwd = attn_backward(p);
    if (bwd)
        in->dout = attn_host_alloc(sz.o * sizeof(float));
    attn_status st = ATTN_OK;
    if (!in->q || (kv32 && (!in->k || (has_v && !in->v))) || (q16 && !in->q16) ||
        (q8 && !in->q_raw) || (bwd && !in->dout) ||
        (kv16 && (!in->k16 || (has_v && !in->v16))) || (p->mods.sinks && !in->sinks) ||
        (kvq && (!in->kq || (has_v && !in->vq))) || (paged && !in->pages) ||
        (scaled && (!in->kscale || (has_v && !in->vscale)))) {
        snprintf(why, len, "out of memory for the inputs");
        st = ATTN_ENOMEM;
    } else if (paged) {
        /* Drawn first: --inputs fills the pool through them. */
        attn_serving_shuffle_pages(in->pages, p->ragged->k0[p->batch], s->seed);
    }
    if (st == ATTN_OK && s->inputs && p->ragged) {
        st = attn_serving_read(in, p, s->inputs, why, len);
    } else if (st == ATTN_OK && s->inputs) {
        const size_t b = (size_t)p->batch, h = (size_t)p->heads, hkv = (size_t)attn_kv_heads(p);
        const size_t want[3][4] = {
            { b, h, (size_t)p->seq_q, (size_t)p->d_k },
            { b, hkv, (size_t)p->seq_kv, (size_t)p->d_k },
            { b, hkv, (size_t)p->seq_kv, (size_t)p->d_v },
        };
        st = attn_inputs_read_npy(s->inputs, "q", want[0], 4, in->q, p->dtype, why, len);
        if (st == ATTN_OK && kv32)
            st = attn_inputs_read_npy(s->inputs, "k", want[1], 4, in->k, p->kv_dtype, why,
                                      len);
        else if (st == ATTN_OK)
            st = read_npy16(s->inputs, "k", want[1], in->k16, sz.k, p->kv_dtype, why, len);
        if (st == ATTN_OK && has_v && kv32)
            st = attn_inputs_read_npy(s->inputs, "v", want[2], 4, in->v, p->kv_dtype, why,
                                      len);
        else if (st == ATTN_OK && has_v)
            st = read_npy16(s->inputs, "v", want[2], in->v16, sz.v, p->kv_dtype, why, len);
        const size_t want_do[4] = { b, h, (size_t)p->seq_q, (size_t)p->d_v };
        if (st == ATTN_OK && bwd)
            st = attn_inputs_read_npy(s->inputs, "do", want_do, 4, in->dout, ATTN_DTYPE_FP32,
                                      why, len);
    } else if (st == ATTN_OK) {
        attn_fill(in->q, sz.q, s->fill, s->seed, ATTN_TENSOR_Q, s->threads);
        if (paged) {
            attn_serving_fill(in->k, in->k16, p, in->pages, s, ATTN_TENSOR_K, p->d_k);
            if (has_v)
                attn_serving_fill(in->v, in->v16, p, in->pages, s, ATTN_TENSOR_V, p->d_v);
        } else if (kv32) {
            attn_fill(in->k, sz.k, s->fill, s->seed, ATTN_TENSOR_K, s->threads);
            if (has_v)
                attn_fill(in->v, sz.v, s->fill, s->seed, ATTN_TENSOR_V, s->threads);
        } else {
            fill16(in->k16, sz.k, s, ATTN_TENSOR_K, p->kv_dtype);
            if (has_v)
                fill16(in->v16, sz.v, s, ATTN_TENSOR_V, p->kv_dtype);
        }
    }
    /* Before the rounding, which then reads no slot left unwritten. */
    if (st == ATTN_OK && paged)
        attn_serving_poison_slack(in, p);
    /* dO: N(0, 1) from the seed, whatever the fill of Q, K and V. */
    if (st == ATTN_OK && bwd && !s->inputs)
        attn_fill(in->dout, sz.o, ATTN_FILL_NORMAL, s->seed, ATTN_TENSOR_DOUT, s->threads);
    /* Sink logits: N(0, 1) from the seed, with --inputs as well. */
    if (st == ATTN_OK && in->sinks)
        attn_fill(in->sinks, (size_t)p->heads, ATTN_FILL_NORMAL, s->seed, ATTN_TENSOR_SINKS, 1);
    if (st == ATTN_OK && q16)
        round_to(in->q, in->q16, sz.q, p->dtype);
    if (st == ATTN_OK && q8)
        round_q8_0(in->q, in->q_raw, sz.q / (size_t)p->d_k, p->d_k);
    if (st == ATTN_OK && kv16 && kv32) {
        round_to(in->k, in->k16, sz.k, p->kv_dtype);
        if (has_v)
            round_to(in->v, in->v16, sz.v, p->kv_dtype);
    }
    if (st == ATTN_OK && kvq) {
        st = quantize(in->kq, in->kscale, in->k, p, in->pages, p->d_k);
        if (st == ATTN_OK && has_v)
            st = quantize(in->vq, in->vscale, in->v, p, in->pages, p->d_v);
        if (st != ATTN_OK)
            snprintf(why, len, "out of memory for the inputs");
    }
    if (st == ATTN_OK) {
        const attn_tensors t = attn_inputs_tensors(in);
        const double t0 = attn_now();
        st = attn_ref_compute(&in->ref, p, &t, s->check_rows, s->seed, s->threads);
        if (st == ATTN_OK && (kvq || q8)) {
            /* The same rows from Q, K and V before quantization. */
            attn_problem p32 = *p;
            attn_tensors t32 = t;
            if (kvq) {
                p32.kv_dtype = ATTN_DTYPE_FP32;
                t32.kq = t32.vq = NULL;
            }
            if (q8) {
                p32.dtype = ATTN_DTYPE_FP32;
                t32.q = in->q_raw;
            }
            if ((st = attn_ref_compute(&in->qref, &p32, &t32, s->check_rows, s->seed,
                                       s->threads)) != ATTN_OK)
                attn_ref_free(&in->ref);
        }
        if (st == ATTN_OK && bwd &&
            (st = attn_ref_grads_compute(&in->grads, p, &t, s->check_rows, s->threads)) != ATTN_OK) {
            attn_ref_free(&in->ref);
            if (kvq || q8)
                attn_ref_free(&in->qref);
        }
        in->ref.grads = bwd && st == ATTN_OK ? &in->grads : NULL;
        in->ref.unquantized = (kvq || q8) && st == ATTN_OK ? &in->qref : NULL;
        in->ref_seconds = attn_now() - t0;
        if (st != ATTN_OK)
            snprintf(why, len, "out of memory for the reference");
    }
    if (st != ATTN_OK) {
        attn_inputs_free(in);
        return st;
    }
    in->made = true;
    return ATTN_OK;
}

void attn_inputs_free(attn_inputs *in)
{
    if (in->made) {
        attn_ref_free(&in->ref);
        attn_ref_grads_free(&in->grads);
        if (in->kq || in->q_raw)
            attn_ref_free(&in->qref);
    }
    attn_host_free(in->q_raw);
    attn_host_free(in->kq);
    attn_host_free(in->vq);
    attn_host_free(in->kscale);
    attn_host_free(in->vscale);
    attn_host_free(in->q);
    attn_host_free(in->k);
    attn_host_free(in->v);
    attn_host_free(in->q16);
    attn_host_free(in->k16);
    attn_host_free(in->v16);
    attn_host_free(in->sinks);
    attn_host_free(in->pages);
    attn_host_free(in->dout);
    memset(in, 0, sizeof(*in));
}

bool attn_memory_fits(const attn_problem *p, const attn_setup *s, size_t workspace,
                      bool inputs_held, char *why, size_t len)
{
    attn_sizes sz;
    if (!attn_problem_sizes(p, &sz)) {
        snprintf(why, len, "its tensors overflow size_t (more than 2^64 bytes); choose smaller "
                 "sizes");
        return false;
    }
    double ref = (double)attn_ref_bytes(p, s->check_rows, s->threads);
    if (attn_dtype_quantized(p->kv_dtype))
        ref *= 2;   /* and the reference before quantization */
    if (attn_backward(p))
        ref += (double)attn_ref_grads_bytes(p, s->check_rows, s->threads);
    const double held = (double)attn_inputs_bytes(p, &sz) + ref;
    /* Each output twice (the checked copy, then the timed runs'); the
     * backward's gradients and L beside O. */
    const double outs = 2.0 * (double)sz.output +
                        (attn_backward(p) ? 2.0 * (double)sz.grads + 4.0 * (double)sz.rows : 0.0);
    const double ws = (double)workspace;
    const double total = held + outs + ws, fresh = inputs_held ? outs + ws : total;
    const uint64_t avail = attn_mem_available();
    const bool over_max = s->max_mem && total > (double)s->max_mem;
    const bool over_avail = avail && fresh > (double)avail;
    if (!over_max && !over_avail)
        return true;
    char t[32], i[32], o[32], r[32], w[32], l[32];
    attn_format_bytes(t, sizeof(t), over_max ? total : fresh);
    attn_format_bytes(i, sizeof(i), (double)attn_inputs_bytes(p, &sz));
    attn_format_bytes(o, sizeof(o), outs);
    attn_format_bytes(r, sizeof(r), ref);
    attn_format_bytes(w, sizeof(w), ws);
    attn_format_bytes(l, sizeof(l), over_max ? (double)s->max_mem : (double)avail);
    if (over_max)
        snprintf(why, len, "needs %s (inputs %s, reference %s, outputs %s, workspace %s), over "
                 "--max-mem %s", t, i, r, o, w, l);
    else
        snprintf(why, len, "needs %s more memory (%sworkspace %s, outputs %s), %s available", t,
                 inputs_held ? "" : "inputs and reference, ", w, o, l);
    return false;
}

/* attnbench arch's models: weights drawn as PyTorch draws them, activations
 * from the tracking allocator, and the fp32 forward passes (arch.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "arch.h"
#include "config.h"
#include "kernels/rng.h"
#include "layers.h"
#include "variant.h"

enum { STREAM_EMB = 0xe3b0, STREAM_W = 0x3e16 };

/* ---- weights and buffers -------------------------------------------------- */

/* n values U(-bound, bound) from (seed, tag), or all `fill` when bound is 0. */
static float *weights(size_t n, double bound, float fill, uint64_t seed, uint64_t tag)
{
    float *w = attn_host_alloc(n * sizeof(float));
    if (!w)
        return NULL;
    for (size_t i = 0; i < n; i++)
        w[i] = bound > 0 ? (float)((2.0 * attn_uniform(seed, STREAM_W + tag, i) - 1.0) * bound)
                         : fill;
    return w;
}

/* W [out][in] drawn as PyTorch does, stored transposed [in][out]. */
static float *weights_t(int out, int in, double bound, uint64_t seed, uint64_t tag)
{
    float *w = weights((size_t)out * in, bound, 0, seed, tag), *t;
    if (!w || !(t = attn_host_alloc((size_t)out * in * sizeof(float)))) {
        attn_host_free(w);
        return NULL;
    }
    for (int o = 0; o < out; o++)
        for (int i = 0; i < in; i++)
            t[(size_t)i * out + o] = w[(size_t)o * in + i];
    attn_host_free(w);
    return t;
}

/* Conv1d weight W[out][in][3] -> [3][in][out]. */
static float *conv_weights(int d, double bound, uint64_t seed, uint64_t tag)
{
    float *w = weights((size_t)d * d * 3, bound, 0, seed, tag), *t;
    if (!w || !(t = attn_host_alloc((size_t)3 * d * d * sizeof(float)))) {
        attn_host_free(w);
        return NULL;
    }
    for (int o = 0; o < d; o++)
        for (int i = 0; i < d; i++)
            for (int k = 0; k < 3; k++)
                t[((size_t)k * d + i) * d + o] = w[((size_t)o * d + i) * 3 + k];
    attn_host_free(w);
    return t;
}

static float *act(arch_net *n, size_t floats)
{
    float *p = attn_alloc(n->alloc, floats * sizeof(float));
    if (p)
        memset(p, 0, floats * sizeof(float));
    return p;
}

int arch_out_width(const arch_net *n)
{
    return n->model == ARCH_ATTN ? n->dk : n->d;
}

void arch_net_destroy(arch_net *n)
{
    if (n->be && n->be_state)
        n->be->release(n->be_state);
    n->be_state = NULL;
    float *host[] = { n->w_ih, n->w_hh, n->b_ih, n->b_hh, n->w_lin, n->b_lin, n->w_c1, n->b_c1,
                      n->w_c2, n->b_c2, n->ln_g, n->ln_b, n->w_q, n->w_k, n->w_v, n->w_qkv,
                      n->b_qkv, n->w_o, n->b_o };
    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
        attn_host_free(host[i]);
    float *tracked[] = { n->x, n->y, n->t0, n->t1, n->t2, n->t3, n->t4, n->t5 };
    for (size_t i = 0; i < sizeof(tracked) / sizeof(tracked[0]); i++)
        if (tracked[i])
            attn_free(n->alloc, tracked[i]);
    memset(n, 0, sizeof(*n));
}

attn_status arch_net_create(arch_net *n, arch_model m, int B, int N, int d, int threads,
                            arch_conv conv, const attn_backend *be, uint64_t seed,
                            const attn_allocator *alloc, char *why, size_t len)
{
    memset(n, 0, sizeof(*n));
    n->model = m;
    n->B = B, n->N = N, n->d = d, n->threads = threads, n->conv = conv, n->alloc = alloc;
    n->heads = m == ARCH_MHA ? 8 : 1;
    n->dk = d / 8;
    why[0] = '\0';
    if ((m == ARCH_ATTN || m == ARCH_MHA) && (d % 8 || n->dk < 1)) {
        snprintf(why, len, "--dmodel %d: attention needs a multiple of 8 (d_k = d/8)", d);
        return ATTN_EINVAL;
    }
    const size_t bn = (size_t)B * N, D = (size_t)d;
    const double inv = 1.0 / sqrt((double)d);
    bool ok = true;
    /* The input: embeddings + positional encoding. */
    if (!(n->x = act(n, bn * D)) || !(n->t0 = act(n, (size_t)N * D)))
        goto oom;
    attn_positional_encoding(n->t0, N, d);
    for (size_t r = 0; r < bn; r++)
        for (size_t c = 0; c < D; c++)
            n->x[r * D + c] = (float)attn_gauss(seed, STREAM_EMB, r * D + c) +
                              n->t0[(r % (size_t)N) * D + c];
    attn_free(alloc, n->t0);
    n->t0 = NULL;

    switch (m) {
    case ARCH_RNN:
        ok = (n->w_ih = weights_t(4 * d, d, inv, seed, 1)) && (n->w_hh = weights_t(4 * d, d, inv, seed, 2)) &&
             (n->b_ih = weights(4 * D, inv, 0, seed, 3)) && (n->b_hh = weights(4 * D, inv, 0, seed, 4)) &&
             (n->w_lin = weights_t(d, d, inv, seed, 5)) && (n->b_lin = weights(D, inv, 0, seed, 6));
        /* t0: input projection [B N][4d]; t1, t5: h [B][d] (double buffer);
         * t2: c [B][d]; t3: gates [B][4d]; t4: hidden states [B][N][d]; y. */
        ok = ok && (n->t0 = act(n, bn * 4 * D)) && (n->t1 = act(n, (size_t)B * D)) &&
             (n->t5 = act(n, (size_t)B * D)) &&
             (n->t2 = act(n, (size_t)B * D)) && (n->t3 = act(n, (size_t)B * 4 * D)) &&
             (n->t4 = act(n, bn * D)) && (n->y = act(n, bn * D));
        break;
    case ARCH_CNN: {
        const double cb = 1.0 / sqrt(3.0 * d);
        const size_t padded = (size_t)B * (N + 2) * D;
        ok = (n->w_c1 = conv_weights(d, cb, seed, 11)) && (n->b_c1 = weights(D, cb, 0, seed, 12)) &&
             (n->w_c2 = conv_weights(d, cb, seed, 13)) && (n->b_c2 = weights(D, cb, 0, seed, 14)) &&
             (n->ln_g = weights(D, 0, 1.0f, seed, 15)) && (n->ln_b = weights(D, 0, 0.0f, seed, 16));
        /* t0: padded input; t1: padded conv1 output; t2: conv2 output (padded
         * row count); t3 (im2col): [B N][3d]. */
        ok = ok && (n->t0 = act(n, padded)) && (n->t1 = act(n, padded)) &&
             (n->t2 = act(n, padded)) && (n->y = act(n, bn * D));
        if (ok && conv == ARCH_CONV_IM2COL)
            ok = (n->t3 = act(n, bn * 3 * D)) != NULL;
        break;
    }
    case ARCH_ATTN:
    case ARCH_MHA: {
        const size_t dk = (size_t)n->dk;
        if (m == ARCH_ATTN) {
            ok = (n->w_q = weights_t(n->dk, d, inv, seed, 21)) &&
                 (n->w_k = weights_t(n->dk, d, inv, seed, 22)) &&
                 (n->w_v = weights_t(n->dk, d, inv, seed, 23));
            /* t0, t1, t2: Q, K, V [B][1][N][dk]; y: O. */
            ok = ok && (n->t0 = act(n, bn * dk)) && (n->t1 = act(n, bn * dk)) &&
                 (n->t2 = act(n, bn * dk)) && (n->y = act(n, bn * dk));
        } else {
            const double xav = sqrt(6.0 / (d + 3.0 * d));
            ok = (n->w_qkv = weights_t(3 * d, d, xav, seed, 31)) &&
                 (n->b_qkv = weights(3 * D, 0, 0.0f, seed, 32)) &&
                 (n->w_o = weights_t(d, d, inv, seed, 33)) && (n->b_o = weights(D, 0, 0.0f, seed, 34));
            /* t0: QKV [B N][3d]; t1, t2, t3: Q, K, V [B][H][N][dk]; t4: O
             * [B][H][N][dk]; t5: O as [B][N][d]; y. */
            ok = ok && (n->t0 = act(n, bn * 3 * D)) && (n->t1 = act(n, bn * D)) &&
                 (n->t2 = act(n, bn * D)) && (n->t3 = act(n, bn * D)) &&
                 (n->t4 = act(n, bn * D)) && (n->t5 = act(n, bn * D)) && (n->y = act(n, bn * D));
        }
        if (!ok)
            break;
        n->p = (attn_problem){ B, n->heads, N, N, n->dk, n->dk,
                               (float)(1.0 / sqrt((double)n->dk)), false, NULL, ATTN_KIND_SOFTMAX };
        n->p.var = attn_variant_defaults();
        const attn_config cfg = { .threads = threads, .alloc = alloc, .device = -1 };
        attn_status st = attn_backend_supports(be, &n->p, &cfg, why, len);
        if (st != ATTN_OK) {
            arch_net_destroy(n);
            return st;
        }
        n->be = be;
        if ((st = be->prepare(&n->p, &cfg, &n->be_state)) != ATTN_OK) {
            snprintf(why, len, "%s: prepare failed: %s", be->name, attn_status_str(st));
            n->be_state = NULL;
            arch_net_destroy(n);
            return st;
        }
        n->t = m == ARCH_ATTN ? (attn_tensors){ .q = n->t0, .k = n->t1, .v = n->t2, .o = n->y }
                              : (attn_tensors){ .q = n->t1, .k = n->t2, .v = n->t3, .o = n->t4 };
        if ((st = be->bind(n->be_state, &n->t)) != ATTN_OK) {
            snprintf(why, len, "%s: bind failed: %s", be->name, attn_status_str(st));
            arch_net_destroy(n);
            return st;
        }
        break;
    }
    default:
        snprintf(why, len, "unknown model %d", (int)m);
        arch_net_destroy(n);
        return ATTN_EINVAL;
    }
    if (ok)
        return ATTN_OK;
oom:
    snprintf(why, len, "out of memory for %s at B=%d N=%d d=%d", arch_model_name(m), B, N, d);
    arch_net_destroy(n);
    return ATTN_ENOMEM;
}

/* ---- forward passes ------------------------------------------------------ */

static void add_bias(float *y, size_t rows, int w, const float *b)
{
    for (size_t r = 0; r < rows; r++) {
        float *yr = y + r * (size_t)w;
#pragma omp simd
        for (int c = 0; c < w; c++)
            yr[c] += b[c];
    }
}

/* The recurrence runs in one parallel region: thread t owns hidden units
 * [u0, u1) and computes their four gate columns (one small GEMM each), their
 * activations, c and h; one barrier per step publishes h (double-buffered). */
static void rnn_forward(arch_net *n)
{
    const int B = n->B, N = n->N, d = n->d, g4 = 4 * d;
    float *xp = n->t0, *c = n->t2, *g = n->t3, *hs = n->t4;
    float *hbuf[2] = { n->t1, n->t5 };
    attn_gemm(B * N, g4, d, n->x, d, n->w_ih, g4, 0, xp, g4, n->threads);
    memset(hbuf[0], 0, (size_t)B * d * sizeof(float));
    memset(c, 0, (size_t)B * d * sizeof(float));
#ifdef _OPENMP
#pragma omp parallel num_threads(n->threads)
#endif
    {
#ifdef _OPENMP
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
#else
        const int t = 0, T = 1;
#endif
        const int per = (d + 16 * T - 1) / (16 * T) * 16;
        const int u0 = per * t < d ? per * t : d, u1 = u0 + per < d ? u0 + per : d, w = u1 - u0;
        for (int step = 0; step < N; step++) {
            const float *cur = hbuf[step & 1];
            float *nxt = hbuf[(step + 1) & 1];
            for (int q = 0; q < 4 && w > 0; q++)
                attn_gemm(B, w, d, cur, d, n->w_hh + (size_t)q * d + u0, g4, 0,
                          g + (size_t)q * d + u0, g4, 1);
            for (int b = 0; b < B && w > 0; b++) {
                float *gb = g + (size_t)b * g4;
                const float *xb = xp + ((size_t)b * N + step) * g4;
                for (int q = 0; q < 4; q++) {
                    float *gq = gb + (size_t)q * d + u0;
                    const float *xq = xb + (size_t)q * d + u0;
                    const float *bi = n->b_ih + (size_t)q * d + u0, *bh = n->b_hh + (size_t)q * d + u0;
#pragma omp simd
                    for (int e = 0; e < w; e++)
                        gq[e] += xq[e] + bi[e] + bh[e];
                    if (q == 2)
                        attn_tanh(gq, (size_t)w);      /* g */
                    else
                        attn_sigmoid(gq, (size_t)w);   /* i, f, o */
                }
                const float *gi = gb + u0, *gf = gb + d + u0, *gg = gb + 2 * d + u0,
                            *go = gb + 3 * d + u0;
                float *cb = c + (size_t)b * d + u0, *hb = nxt + (size_t)b * d + u0;
#pragma omp simd
                for (int e = 0; e < w; e++)
                    cb[e] = gf[e] * cb[e] + gi[e] * gg[e];
                memcpy(hb, cb, (size_t)w * sizeof(float));
                attn_tanh(hb, (size_t)w);
#pragma omp simd
                for (int e = 0; e < w; e++)
                    hb[e] *= go[e];
                memcpy(hs + ((size_t)b * N + step) * d + u0, hb, (size_t)w * sizeof(float));
            }
#ifdef _OPENMP
#pragma omp barrier
#endif
        }
    }
    attn_gemm(B * N, d, d, hs, d, n->w_lin, d, 0, n->y, d, n->threads);
    add_bias(n->y, (size_t)B * N, d, n->b_lin);
}

/* out rows r = b (N+2) + i (i < N) get conv(in)[b][i] + bias, in and out
 * both [B][N+2][d]; out is written from row `shift` on (1: into a padded
 * buffer's data rows). Rows between batches receive junk, cleared after. */
static void conv(arch_net *n, const float *in, const float *w, const float *bias, float *out,
                 int shift)
{
    const int B = n->B, N = n->N, d = n->d;
    const int rows = B * (N + 2) - 2;
    if (n->conv == ARCH_CONV_SHIFT) {
        for (int k = 0; k < 3; k++)
            attn_gemm(rows, d, d, in + (size_t)k * d, d, w + (size_t)k * d * d, d, k ? 1.0f : 0.0f,
                      out + (size_t)shift * d, d, n->threads);
    } else {
        float *col = n->t3;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < N; i++)
                memcpy(col + ((size_t)b * N + i) * 3 * d, in + ((size_t)b * (N + 2) + i) * d,
                       3 * (size_t)d * sizeof(float));
        /* [B N][3d] . [3d][d]: the tap-major weights are exactly [3d][d]. */
        for (int b = 0; b < B; b++)
            attn_gemm(N, d, 3 * d, col + (size_t)b * N * 3 * d, 3 * d, w, d, 0,
                      out + ((size_t)b * (N + 2) + shift) * d, d, n->threads);
    }
    for (int b = 0; b < B; b++)
        add_bias(out + ((size_t)b * (N + 2) + shift) * d, (size_t)N, d, bias);
}

static void cnn_forward(arch_net *n)
{
    const int B = n->B, N = n->N, d = n->d;
    const size_t D = (size_t)d, pad_rows = (size_t)B * (N + 2);
    float *xp = n->t0, *h = n->t1, *o = n->t2;
    for (int b = 0; b < B; b++) {
        float *xb = xp + (size_t)b * (N + 2) * D;
        memset(xb, 0, D * sizeof(float));
        memcpy(xb + D, n->x + (size_t)b * N * D, (size_t)N * D * sizeof(float));
        memset(xb + (size_t)(N + 1) * D, 0, D * sizeof(float));
    }
    conv(n, xp, n->w_c1, n->b_c1, h, 1);
    for (size_t e = 0; e < pad_rows * D; e++)
        h[e] = h[e] > 0 ? h[e] : 0;
    for (int b = 0; b < B; b++) {   /* the padding rows took junk */
        memset(h + (size_t)b * (N + 2) * D, 0, D * sizeof(float));
        memset(h + ((size_t)b * (N + 2) + N + 1) * D, 0, D * sizeof(float));
    }
    conv(n, h, n->w_c2, n->b_c2, o, 0);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < N; i++) {
            const float *xr = n->x + ((size_t)b * N + i) * D, *cr = o + ((size_t)b * (N + 2) + i) * D;
            float *yr = n->y + ((size_t)b * N + i) * D;
            float mean = 0, var = 0;
#pragma omp simd reduction(+ : mean)
            for (int c = 0; c < d; c++) {
                yr[c] = xr[c] + cr[c];
                mean += yr[c];
            }
            mean /= (float)d;
#pragma omp simd reduction(+ : var)
            for (int c = 0; c < d; c++)
                var += (yr[c] - mean) * (yr[c] - mean);
            const float rs = 1.0f / sqrtf(var / (float)d + 1e-5f);
#pragma omp simd
            for (int c = 0; c < d; c++)
                yr[c] = (yr[c] - mean) * rs * n->ln_g[c] + n->ln_b[c];
        }
}

static attn_status attention(arch_net *n)
{
    /* read leaves O in t.o: free for host backends (it is their bound
     * output), a download for device ones. */
    attn_status st = n->be->run(n->be_state);
    if (st == ATTN_OK)
        st = n->be->read(n->be_state, n->t.o);
    return st;
}

static attn_status mha_forward(arch_net *n)
{
    const int B = n->B, N = n->N, d = n->d, H = n->heads, dk = n->dk;
    float *qkv = n->t0, *o = n->t4, *cat = n->t5;
    float *qkv3[3] = { n->t1, n->t2, n->t3 };
    attn_gemm(B * N, 3 * d, d, n->x, d, n->w_qkv, 3 * d, 0, qkv, 3 * d, n->threads);
    add_bias(qkv, (size_t)B * N, 3 * d, n->b_qkv);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < N; i++)
            for (int s = 0; s < 3; s++)
                for (int h = 0; h < H; h++)
                    memcpy(qkv3[s] + (((size_t)b * H + h) * N + i) * dk,
                           qkv + ((size_t)b * N + i) * 3 * d + (size_t)s * d + (size_t)h * dk,
                           (size_t)dk * sizeof(float));
    attn_status st = attention(n);
    if (st != ATTN_OK)
        return st;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++)
                memcpy(cat + ((size_t)b * N + i) * d + (size_t)h * dk,
                       o + (((size_t)b * H + h) * N + i) * dk, (size_t)dk * sizeof(float));
    attn_gemm(B * N, d, d, cat, d, n->w_o, d, 0, n->y, d, n->threads);
    add_bias(n->y, (size_t)B * N, d, n->b_o);
    return ATTN_OK;
}

attn_status arch_forward(arch_net *n)
{
    switch (n->model) {
    case ARCH_RNN:
        rnn_forward(n);
        return ATTN_OK;
    case ARCH_CNN:
        cnn_forward(n);
        return ATTN_OK;
    case ARCH_ATTN: {
        const int bn = n->B * n->N, d = n->d, dk = n->dk;
        attn_gemm(bn, dk, d, n->x, d, n->w_q, dk, 0, n->t0, dk, n->threads);
        attn_gemm(bn, dk, d, n->x, d, n->w_k, dk, 0, n->t1, dk, n->threads);
        attn_gemm(bn, dk, d, n->x, d, n->w_v, dk, 0, n->t2, dk, n->threads);
        return attention(n);
    }
    case ARCH_MHA:
        return mha_forward(n);
    default:
        return ATTN_EINVAL;
    }
}

double arch_flops(arch_model m, int B, int N, int d)
{
    const double b = B, n = N, D = d, dk = d / 8;
    switch (m) {
    case ARCH_RNN:
        return 18.0 * b * n * D * D;
    case ARCH_CNN:
        return 12.0 * b * n * D * D;
    case ARCH_ATTN:
        return 6.0 * b * n * D * dk + 4.0 * b * n * n * dk;
    case ARCH_MHA:
        return 8.0 * b * n * D * D + 4.0 * b * n * n * D;
    default:
        return 0;
    }
}

double arch_analytic_bytes(arch_model m, int B, int N, int d)
{
    const double b = B, n = N, D = d;
    switch (m) {
    case ARCH_RNN:
        return b * D * 4 + 2 * b * n * D * 4;
    case ARCH_ATTN:
        return b * n * n * 4 + 3 * b * n * D * 4;
    case ARCH_MHA:
        return 8 * b * n * n * 4 + 3 * b * n * D * 4;
    default:
        return 0;
    }
}

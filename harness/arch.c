#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "arch.h"
#include "cli.h"
#include "config.h"
#include "fill.h"
#include "kernels/layers.h"
#include "machine.h"
#include "timer.h"
#include "variant.h"

#define ARCH_CSV_SCHEMA 1

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
        n->t = m == ARCH_ATTN ? (attn_tensors){ n->t0, n->t1, n->t2, n->y }
                              : (attn_tensors){ n->t1, n->t2, n->t3, n->t4 };
        if ((st = be->bind(n->be_state, &n->t)) != ATTN_OK) {
            snprintf(why, len, "%s: bind failed: %s", be->name, attn_status_str(st));
            arch_net_destroy(n);
            return st;
        }
        break;
    }
    default:
        snprintf(why, len, "unknown model %d", (int)m);
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

/* ---- attnbench arch -------------------------------------------------------- */


typedef struct arch_row {
    arch_model model;
    int n;
    attn_status st;
    char why[256];
    attn_timing t;
    double flops, analytic;
    size_t peak;
} arch_row;

static attn_status arch_run_fn(void *state)
{
    return arch_forward(state);
}

static const attn_backend arch_timed = { .name = "arch", .run = arch_run_fn };

static double fit_slope(const double *x, const double *y, int n)
{
    double mx = 0, my = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        mx += log(x[i]) / n;
        my += log(y[i]) / n;
    }
    for (int i = 0; i < n; i++) {
        sxx += (log(x[i]) - mx) * (log(x[i]) - mx);
        sxy += (log(x[i]) - mx) * (log(y[i]) - my);
    }
    return sxx > 0 ? sxy / sxx : NAN;
}

static void fmt_s(char *buf, size_t len, double s)
{
    if (s >= 1)
        snprintf(buf, len, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(buf, len, "%.2f ms", s * 1e3);
    else
        snprintf(buf, len, "%.1f us", s * 1e6);
}

static void fmt_b(char *buf, size_t len, double b)
{
    if (b <= 0)
        snprintf(buf, len, "-");
    else if (b >= 1 << 30)
        snprintf(buf, len, "%.2f GiB", b / (1 << 30));
    else if (b >= 1 << 20)
        snprintf(buf, len, "%.1f MiB", b / (1 << 20));
    else
        snprintf(buf, len, "%.1f KiB", b / 1024);
}

static const arch_row *find_row(const arch_row *rows, size_t n, arch_model m, int seq)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].model == m && rows[i].n == seq && rows[i].st == ATTN_OK)
            return &rows[i];
    return NULL;
}

/* The N where a's time first exceeds b's, interpolated in log-log between
 * the measured lengths; 0 when it never does within them. */
static double crossover(const arch_row *rows, size_t nr, const attn_list *seq, arch_model a,
                        arch_model b)
{
    for (size_t i = 1; i < seq->n; i++) {
        const arch_row *a0 = find_row(rows, nr, a, seq->v[i - 1]), *a1 = find_row(rows, nr, a, seq->v[i]);
        const arch_row *b0 = find_row(rows, nr, b, seq->v[i - 1]), *b1 = find_row(rows, nr, b, seq->v[i]);
        if (!a0 || !a1 || !b0 || !b1)
            continue;
        const double d0 = log(a0->t.real_stats.median / b0->t.real_stats.median);
        const double d1 = log(a1->t.real_stats.median / b1->t.real_stats.median);
        if (i == 1 && d0 > 0)
            return seq->v[0];
        if (d0 <= 0 && d1 > 0) {
            const double f = -d0 / (d1 - d0);
            return exp(log(seq->v[i - 1]) + f * (log(seq->v[i]) - log(seq->v[i - 1])));
        }
    }
    return 0;
}

static int write_csv(const arch_opts *o, const arch_row *rows, size_t nr)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", o->csv);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return attn_error(ATTN_EXIT_ERROR, "--csv %s: %s", tmp, strerror(errno));
    fprintf(f, "schema,model,verdict,reason,batch,seq,dmodel,dk,heads,threads,gemm,attn_backend,"
               "conv,reps,iterations,median_s,min_s,mean_s,cv,flops,gflops,time_vs_cnn,"
               "peak_bytes,analytic_bytes\n");
    for (size_t i = 0; i < nr; i++) {
        const arch_row *r = &rows[i];
        const bool ok = r->st == ATTN_OK;
        const arch_row *cnn = find_row(rows, nr, ARCH_CNN, r->n);
        const bool attn = r->model == ARCH_ATTN || r->model == ARCH_MHA;
        fprintf(f, "%d,%s,%s,\"", ARCH_CSV_SCHEMA, arch_model_name(r->model),
                ok ? "OK" : r->st == ATTN_EUNSUPPORTED ? "SKIPPED" : "ERROR");
        for (const char *c = r->why; *c; c++)
            fputs(*c == '"' ? "\"\"" : (char[]){ *c, 0 }, f);
        fprintf(f, "\",%d,%d,%d,%d,%d,%d,\"%s\",%s,%s,", o->batch, r->n, o->dmodel,
                r->model == ARCH_ATTN || r->model == ARCH_MHA ? o->dmodel / 8 : 0,
                r->model == ARCH_MHA ? 8 : r->model == ARCH_ATTN ? 1 : 0, o->threads,
                attn_gemm_name(), attn ? o->be->name : "",
                r->model == ARCH_CNN ? (o->conv == ARCH_CONV_SHIFT ? "shift" : "im2col") : "");
        if (ok)
            fprintf(f, "%d,%ld,%.9g,%.9g,%.9g,%.6g,%.17g,%.6g,", r->t.reps, r->t.iterations,
                    r->t.real_stats.median, r->t.real_stats.min, r->t.real_stats.mean,
                    r->t.real_stats.cv, r->flops, r->flops / r->t.real_stats.median * 1e-9);
        else
            fprintf(f, ",,,,,,%.17g,,", r->flops);
        if (ok && cnn)
            fprintf(f, "%.6g", r->t.real_stats.median / cnn->t.real_stats.median);
        fprintf(f, ",%zu,", ok ? r->peak : (size_t)0);
        if (r->analytic > 0)
            fprintf(f, "%.17g", r->analytic);
        fputc('\n', f);
    }
    if (fflush(f) || fsync(fileno(f)) || fclose(f)) {
        unlink(tmp);
        return attn_error(ATTN_EXIT_ERROR, "--csv %s: %s", tmp, strerror(errno));
    }
    if (rename(tmp, o->csv)) {
        unlink(tmp);
        return attn_error(ATTN_EXIT_ERROR, "--csv %s: %s", o->csv, strerror(errno));
    }
    return -1;
}

int arch_main(int argc, char **argv, const char *prog)
{
    arch_opts o;
    int rc = arch_parse(&o, argc, argv);
    if (rc == -2) {
        arch_usage(stdout, prog);
        free(o.seq.v);
        return ATTN_EXIT_OK;
    }
    if (rc >= 0) {
        free(o.seq.v);
        return rc;
    }
#ifdef _OPENMP
    omp_set_num_threads(o.threads);
#endif
    attn_machine m;
    attn_machine_capture(&m, o.threads, "");
    printf("attnbench %s arch: B=%d d_model=%d threads=%d seed=%llu; GEMM: %s; attention: %s "
           "(d_k = %d); conv: %s\n", ATTN_VERSION, o.batch, o.dmodel, o.threads,
           (unsigned long long)o.seed, attn_gemm_name(), o.be->name, o.dmodel / 8,
           o.conv == ARCH_CONV_SHIFT ? "3 shifted GEMMs" : "im2col + GEMM");
    attn_machine_print(stdout, &m);
    if (!ATTN_HAVE_OPENMP && o.threads > 1)
        printf("note: this build has no OpenMP: everything runs on one thread whatever "
               "--threads says\n");

    const size_t total = o.seq.n * ARCH_COUNT;
    arch_row *rows = calloc(total, sizeof(*rows));
    if (!rows) {
        free(o.seq.v);
        return attn_error(ATTN_EXIT_ERROR, "out of memory");
    }
    size_t nr = 0;
    bool failed = false;
    printf("\n%-10s %6s %12s %6s %9s %9s %9s %11s %11s\n", "model", "N", "median", "cv", "vs cnn",
           "GFLOP", "GFLOP/s", "peak mem", "analytic");
    for (size_t si = 0; si < o.seq.n; si++)
        for (int mi = 0; mi < ARCH_COUNT; mi++) {
            if (!o.models[mi])
                continue;
            arch_row *r = &rows[nr++];
            r->model = (arch_model)mi;
            r->n = o.seq.v[si];
            r->flops = arch_flops(r->model, o.batch, r->n, o.dmodel);
            r->analytic = arch_analytic_bytes(r->model, o.batch, r->n, o.dmodel);
            attn_tracker tr;
            attn_tracker_init(&tr);
            arch_net net;
            r->st = arch_net_create(&net, r->model, o.batch, r->n, o.dmodel, o.threads, o.conv,
                                    o.be, o.seed, &tr.iface, r->why, sizeof(r->why));
            if (r->st == ATTN_OK) {
                r->st = attn_time_runs(&arch_timed, &net, &o.timer, &r->t);
                if (r->st != ATTN_OK)
                    snprintf(r->why, sizeof(r->why), "forward failed: %s", attn_status_str(r->st));
                if (r->st == ATTN_OK && !r->t.reps)
                    r->st = arch_forward(&net);
                arch_net_destroy(&net);
            }
            r->peak = atomic_load(&tr.peak);
            attn_tracker_destroy(&tr);
            char med[32], pk[32], an[32];
            fmt_b(an, sizeof(an), r->analytic);
            if (r->st != ATTN_OK) {
                failed |= r->st != ATTN_EUNSUPPORTED;
                printf("%-10s %6d %s: %s\n", arch_model_name((arch_model)mi), r->n,
                       r->st == ATTN_EUNSUPPORTED ? "SKIPPED" : "ERROR", r->why);
                continue;
            }
            if (!r->t.reps) {
                fmt_b(pk, sizeof(pk), (double)r->peak);
                printf("%-10s %6d %12s %6s %9s %9.3g %9s %11s %11s\n", arch_model_name((arch_model)mi), r->n,
                       "ran", "-", "-", r->flops * 1e-9, "-", pk, an);
                continue;
            }
            const arch_row *cnn = find_row(rows, nr, ARCH_CNN, r->n);
            char vs[32] = "-";
            if (cnn)
                snprintf(vs, sizeof(vs), "%.2fx", r->t.real_stats.median / cnn->t.real_stats.median);
            fmt_s(med, sizeof(med), r->t.real_stats.median);
            fmt_b(pk, sizeof(pk), (double)r->peak);
            printf("%-10s %6d %12s %5.1f%% %9s %9.3g %9.1f %11s %11s\n", arch_model_name((arch_model)mi), r->n,
                   med, 100 * r->t.real_stats.cv, vs, r->flops * 1e-9,
                   r->flops / r->t.real_stats.median * 1e-9, pk, an);
            fflush(stdout);
        }

    if (o.seq.n >= 2 && o.timer.reps) {
        printf("\nlog-log exponents against N (%d..%d):\n", o.seq.v[0], o.seq.v[o.seq.n - 1]);
        for (int mi = 0; mi < ARCH_COUNT; mi++) {
            double x[64], yt[64], ym[64];
            int k = 0;
            for (size_t si = 0; si < o.seq.n && k < 64; si++) {
                const arch_row *r = find_row(rows, nr, (arch_model)mi, o.seq.v[si]);
                if (r) {
                    x[k] = r->n;
                    yt[k] = r->t.real_stats.median;
                    ym[k++] = (double)r->peak;
                }
            }
            if (k >= 2)
                printf("  %-10s time %.2f, memory %.2f\n", arch_model_name((arch_model)mi), fit_slope(x, yt, k),
                       fit_slope(x, ym, k));
        }
        const double cx = crossover(rows, nr, &o.seq, ARCH_ATTN, ARCH_RNN);
        if (o.models[ARCH_ATTN] && o.models[ARCH_RNN]) {
            if (cx > 0)
                printf("attention becomes slower than the rnn at N = %.0f\n", cx);
            else
                printf("attention stays faster than the rnn up to N = %d\n",
                       o.seq.v[o.seq.n - 1]);
        }
    }
    if (o.csv && (rc = write_csv(&o, rows, nr)) >= 0) {
        free(rows);
        free(o.seq.v);
        return rc;
    }
    free(rows);
    free(o.seq.v);
    return failed ? ATTN_EXIT_ERROR : ATTN_EXIT_OK;
}

/* attnbench arch's check: each model's output against a straightforward
 * double-precision forward pass of one batch item, at a sample of its
 * positions (the recurrence: its first steps, which need every earlier one).
 * Written from the definitions in arch.h, sharing nothing with the fp32
 * forward passes but the weights and the input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "host.h"
#include "kernels/rng.h"

enum { STREAM_ITEM = 0xc4ec, STREAM_POS = 0xc4ed };

/* Multiply-adds the checked positions may take, about 0.1-0.3 s in double on
 * one core: as many positions as fit (at most ARCH_CHECK_ROWS). Attention's
 * K and V of every position come on top (2 N d_model width). */
#define BUDGET (1.0 * (1 << 28))
#define ARCH_CHECK_ROWS 32

static double sigm(double x)
{
    return 1 / (1 + exp(-x));
}

/* y [out] = x [in] W^T (+ bias), W^T stored [in][out]. */
static void linear_row(const double *x, int in, const float *wt, const float *bias, int out,
                       double *y)
{
    for (int o = 0; o < out; o++)
        y[o] = bias ? bias[o] : 0;
    for (int c = 0; c < in; c++) {
        const double xc = x[c];
        const float *w = wt + (size_t)c * out;
        for (int o = 0; o < out; o++)
            y[o] += xc * w[o];
    }
}

static void input_row(const arch_net *n, int b, int i, double *x)
{
    const float *src = n->x + ((size_t)b * n->N + i) * n->d;
    for (int c = 0; c < n->d; c++)
        x[c] = src[c];
}

/* rnn: steps 0..T-1 of item b into y [T][d]. */
static void ref_rnn(const arch_net *n, int b, int T, int bug, double *y, double *buf)
{
    const int d = n->d, g4 = 4 * d;
    double *h = buf, *c = h + d, *g = c + d, *x = g + g4, *hh = x + d;
    memset(h, 0, sizeof(double) * 2 * d);
    for (int t = 0; t < T; t++) {
        input_row(n, b, t, x);
        linear_row(x, d, n->w_ih, n->b_ih, g4, g);
        linear_row(h, d, n->w_hh, n->b_hh, g4, hh);
        for (int u = 0; u < d; u++) {
            double in = sigm(g[u] + hh[u]), f = sigm(g[d + u] + hh[d + u]);
            const double gg = tanh(g[2 * d + u] + hh[2 * d + u]);
            const double o = sigm(g[3 * d + u] + hh[3 * d + u]);
            if (bug & ARCH_BUG_SWAP_IF) {
                const double tmp = in;
                in = f;
                f = tmp;
            }
            c[u] = f * c[u] + in * gg;
            h[u] = o * tanh(c[u]);
        }
        linear_row(h, d, n->w_lin, n->b_lin, d, y + (size_t)t * d);
    }
}

/* PyTorch's Conv1d is a cross-correlation: out[i] = sum_k w[k] in[i + k - 1],
 * zero outside [0, N). One output row i of item b from rows of `in`. */
static void conv_row(const arch_net *n, double *(*row)(const arch_net *, int, int, void *),
                     void *ctx, int b, int i, const float *w, const float *bias, int bug,
                     double *out)
{
    const int d = n->d;
    for (int o = 0; o < d; o++)
        out[o] = bias[o];
    for (int k = 0; k < 3; k++) {
        const int src = (bug & ARCH_BUG_FLIP_CONV) ? i + 1 - k : i + k - 1;
        if (src < 0 || src >= n->N)
            continue;
        const double *in = row(n, b, src, ctx);
        for (int c = 0; c < d; c++) {
            const float *wr = w + ((size_t)k * d + c) * d;
            for (int o = 0; o < d; o++)
                out[o] += in[c] * wr[o];
        }
    }
}

typedef struct cnn_ctx {
    double *x[5], *h[3];     /* rows i-2..i+2 of the input, i-1..i+1 of relu(conv1) */
    int i;
    int bug;
} cnn_ctx;

static double *cnn_x(const arch_net *n, int b, int src, void *ctx)
{
    cnn_ctx *k = ctx;
    (void)n, (void)b;
    return k->x[src - k->i + 2];
}

static double *cnn_h(const arch_net *n, int b, int src, void *ctx)
{
    cnn_ctx *k = ctx;
    (void)n, (void)b;
    return k->h[src - k->i + 1];
}

/* cnn: row i of item b: LayerNorm(x + conv2(relu(conv1(x)))). */
static void ref_cnn_row(const arch_net *n, int b, int i, int bug, double *y, double *buf)
{
    const int d = n->d, N = n->N;
    cnn_ctx k = { .i = i, .bug = bug };
    for (int r = 0; r < 5; r++) {
        k.x[r] = buf + (size_t)r * d;
        if (i + r - 2 >= 0 && i + r - 2 < N)
            input_row(n, b, i + r - 2, k.x[r]);
    }
    for (int r = 0; r < 3; r++) {
        k.h[r] = buf + (size_t)(5 + r) * d;
        if (i + r - 1 < 0 || i + r - 1 >= N)
            continue;
        conv_row(n, cnn_x, &k, b, i + r - 1, n->w_c1, n->b_c1, bug, k.h[r]);
        for (int c = 0; c < d; c++)
            k.h[r][c] = k.h[r][c] > 0 ? k.h[r][c] : 0;
    }
    double *o = buf + (size_t)8 * d;
    conv_row(n, cnn_h, &k, b, i, n->w_c2, n->b_c2, bug, o);
    double mean = 0, var = 0;
    for (int c = 0; c < d; c++) {
        o[c] += k.x[2][c];
        mean += o[c] / d;
    }
    if (bug & ARCH_BUG_LN_NO_CENTER)
        mean = 0;
    for (int c = 0; c < d; c++)
        var += (o[c] - mean) * (o[c] - mean) / d;
    for (int c = 0; c < d; c++)
        y[c] = (o[c] - mean) / sqrt(var + 1e-5) * n->ln_g[c] + n->ln_b[c];
}

/* attention, mha: Q, K, V of position j of item b (mha: the fused
 * projection with its bias, split in three), each [width]. tmp: [4 d]. */
static void ref_qkv(const arch_net *n, int b, int j, double *q, double *k, double *v,
                    double *tmp)
{
    const int d = n->d;
    double *x = tmp, *all = tmp + d;
    input_row(n, b, j, x);
    if (n->model == ARCH_ATTN) {
        if (q)
            linear_row(x, d, n->w_q, NULL, n->dk, q);
        if (k)
            linear_row(x, d, n->w_k, NULL, n->dk, k);
        if (v)
            linear_row(x, d, n->w_v, NULL, n->dk, v);
        return;
    }
    linear_row(x, d, n->w_qkv, n->b_qkv, 3 * d, all);
    if (q)
        memcpy(q, all, sizeof(double) * d);
    if (k)
        memcpy(k, all + d, sizeof(double) * d);
    if (v)
        memcpy(v, all + 2 * d, sizeof(double) * d);
}

/* attention, mha: row i of item b, given K and V [N][width] of every
 * position: softmax(q k^T / sqrt(dk)) v per head, then (mha) W_o. */
static void ref_attn_row(const arch_net *n, int b, int i, const double *K, const double *V,
                         int bug, double *y, double *buf)
{
    const int N = n->N, dk = n->dk, H = n->heads, w = H * dk;
    double *q = buf, *o = q + w, *p = o + w, *tmp = p + N;
    ref_qkv(n, b, i, q, NULL, NULL, tmp);
    for (int h = 0; h < H; h++) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int c = 0; c < dk; c++)
                s += q[h * dk + c] * K[(size_t)j * w + h * dk + c];
            p[j] = (bug & ARCH_BUG_NO_SCALE) ? s : s / sqrt((double)dk);
            mx = fmax(mx, p[j]);
        }
        for (int j = 0; j < N; j++)
            sum += p[j] = exp(p[j] - mx);
        for (int c = 0; c < dk; c++) {
            double s = 0;
            for (int j = 0; j < N; j++)
                s += p[j] * V[(size_t)j * w + h * dk + c];
            o[h * dk + c] = s / sum;
        }
    }
    if (n->model == ARCH_ATTN)
        memcpy(y, o, sizeof(double) * dk);
    else
        linear_row(o, n->d, n->w_o, n->b_o, n->d, y);
}

/* Multiply-adds of the reference for one checked position. */
static double row_cost(const arch_net *n)
{
    const double d = n->d, N = n->N;
    switch (n->model) {
    case ARCH_RNN: return 10 * d * d;
    case ARCH_CNN: return 12 * d * d;
    case ARCH_ATTN: return 3 * d * n->dk + 2 * N * n->dk;
    default: return 4 * d * d + 2 * N * d;
    }
}

attn_status arch_check_output(const arch_net *n, uint64_t seed, int item, int bug,
                              arch_check *c)
{
    memset(c, 0, sizeof(*c));
    const int N = n->N, d = n->d, w = arch_out_width(n);
    const bool attn = n->model == ARCH_ATTN || n->model == ARCH_MHA;
    const int kvw = n->model == ARCH_ATTN ? n->dk : d;
    c->item = item >= 0 && item < n->B ? item : (int)(attn_hash(seed, STREAM_ITEM, 0) % (uint64_t)n->B);
    double fit = BUDGET / row_cost(n);
    if (fit < 1)
        fit = 1;
    c->rows = N < ARCH_CHECK_ROWS ? N : ARCH_CHECK_ROWS;
    if (c->rows > fit)
        c->rows = (int)fit;
    if (n->model == ARCH_RNN)   /* its steps are a prefix: as many as the budget allows */
        c->rows = N < fit ? N : (int)fit;
    c->total = N;
    const size_t per = (size_t)(12 * d + 2 * N + 8);
    double *ref = malloc(sizeof(double) * (size_t)c->rows * w);
    double *buf = malloc(sizeof(double) * per);
    double *K = attn ? malloc(sizeof(double) * (size_t)N * kvw) : NULL;
    double *V = attn ? malloc(sizeof(double) * (size_t)N * kvw) : NULL;
    double *tmp = attn ? malloc(sizeof(double) * 4 * (size_t)d * (size_t)n->threads) : NULL;
    int *pos = malloc(sizeof(int) * (size_t)c->rows);
    attn_status st = ATTN_OK;
    if (!ref || !buf || !pos || (attn && (!K || !V || !tmp))) {
        snprintf(c->why, sizeof(c->why), "out of memory for the double-precision check");
        st = ATTN_ENOMEM;
        goto done;
    }
    for (int r = 0; r < c->rows; r++) {
        const double u = n->model == ARCH_RNN ? 0 : attn_uniform(seed, STREAM_POS, (uint64_t)r);
        pos[r] = n->model == ARCH_RNN ? r : (int)(((double)r + u) * N / c->rows);
    }
    if (attn) {
        const int b = c->item;
#ifdef _OPENMP
#pragma omp parallel for num_threads(n->threads) schedule(static)
#endif
        for (int j = 0; j < N; j++)
            ref_qkv(n, b, j, NULL, K + (size_t)j * kvw, V + (size_t)j * kvw,
                    tmp + (size_t)attn_thread_id() * 4 * d);
    }
    if (n->model == ARCH_RNN)
        ref_rnn(n, c->item, c->rows, bug, ref, buf);
    for (int r = 0; r < c->rows && n->model != ARCH_RNN; r++) {
        double *y = ref + (size_t)r * w;
        if (n->model == ARCH_CNN)
            ref_cnn_row(n, c->item, pos[r], bug, y, buf);
        else
            ref_attn_row(n, c->item, pos[r], K, V, bug, y, buf);
    }
    for (int r = 0; r < c->rows; r++) {
        const float *got = n->y + ((size_t)c->item * N + pos[r]) * w;
        for (int x = 0; x < w; x++) {
            const double want = ref[(size_t)r * w + x];
            const double e = isfinite(got[x]) ? fabs(got[x] - want) : INFINITY;
            c->max_ref = fmax(c->max_ref, fabs(want));
            if (e > c->max_err || isnan(e)) {
                c->max_err = isnan(e) ? INFINITY : e;
                c->worst_pos = pos[r];
            }
        }
    }
    c->tol = ARCH_TOL * fmax(c->max_ref, 1e-30);
    c->pass = c->max_err <= c->tol;
    if (!c->pass)
        snprintf(c->why, sizeof(c->why), "max error %.3g > tol %.3g (%.0e of max |y| %.3g) at "
                 "batch item %d position %d, against a double-precision forward pass",
                 c->max_err, c->tol, ARCH_TOL, c->max_ref, c->item, c->worst_pos);
done:
    free(ref);
    free(buf);
    free(K);
    free(V);
    free(tmp);
    free(pos);
    return st;
}

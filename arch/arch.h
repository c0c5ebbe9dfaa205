/* attnbench arch: an LSTM, a small CNN, single-head self-attention and a
 * multi-head attention layer on the same input, forward only, fp32; time
 * and memory against sequence length (the classic comparison charts).
 *
 * Layout: activations are [B][N][d] (batch, position, channel), row-major.
 * Weights are kept transposed, [in][out], so every product is
 * attn_gemm(X, W^T); they are drawn as PyTorch initializes them:
 *   Linear, LSTM, Conv1d: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and
 *   biases (fan_in = in, hidden size, in * kernel); LayerNorm: 1 and 0;
 *   nn.MultiheadAttention: in_proj xavier-uniform with zero bias, out_proj
 *   weight U(-1/sqrt(d), 1/sqrt(d)) with zero bias.
 * Models:
 *   rnn   LSTM(d, d) (gates i, f, g, o; zero initial state), then Linear(d, d)
 *         on every position. Input projection of all steps is one GEMM; each
 *         step is one (B x d).(d x 4d) GEMM.
 *   cnn   Conv1d(d, d, 3, padding 1) -> ReLU -> Conv1d(d, d, 3, padding 1) ->
 *         + input -> LayerNorm(d) (eps 1e-5). Conv: three GEMMs, one per tap,
 *         on the zero-padded input shifted by 0, 1, 2 rows (no im2col copy),
 *         or --conv im2col: one GEMM on a [B*N][3d] copy.
 *   attention  Q, K, V = x W_q, x W_k, x W_v (Linear(d, d/8), no bias), then
 *         softmax(Q K^T / sqrt(d/8)) V through an attention backend, 1 head.
 *   mha   8 heads of d/8: fused QKV projection (with bias), attention through
 *         the backend, output projection W_o (with bias).
 * Input: seeded N(0, 1) embeddings plus the sinusoidal positional encoding. */
#ifndef ATTN_ARCH_H
#define ATTN_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#include <stdio.h>

#include "backend.h"
#include "cli.h"
#include "memory.h"
#include "timer.h"

typedef enum arch_model { ARCH_RNN, ARCH_CNN, ARCH_ATTN, ARCH_MHA, ARCH_COUNT } arch_model;
typedef enum arch_conv { ARCH_CONV_SHIFT, ARCH_CONV_IM2COL } arch_conv;

const char *arch_model_name(arch_model m);

/* The options of attnbench arch (arch/cli.c). */
typedef struct arch_opts {
    attn_list seq;
    int batch, dmodel, threads;
    bool models[ARCH_COUNT];
    arch_conv conv;
    const attn_backend *be;
    attn_timer_opts timer;
    uint64_t seed;
    const char *csv, *json;
} arch_opts;

/* Parses argv (argv[0] is "arch"). Returns -1 to go on, -2 for --help, or an
 * exit code after one line on stderr; o->seq.v is the caller's to free in
 * every case. */
int arch_parse(arch_opts *o, int argc, char **argv);
void arch_usage(FILE *f, const char *prog);

typedef struct arch_net {
    arch_model model;
    int B, N, d, dk, heads, threads;
    arch_conv conv;
    const attn_allocator *alloc;   /* activations and workspace (tracked) */
    /* Weights, untracked; transposed [in][out]. */
    float *w_ih, *w_hh, *b_ih, *b_hh;        /* rnn: [d][4d], [d][4d], [4d], [4d] */
    float *w_lin, *b_lin;                     /* rnn: [d][d], [d] */
    float *w_c1, *b_c1, *w_c2, *b_c2;         /* cnn: [3][d][d] (tap, in, out), [d] */
    float *ln_g, *ln_b;                       /* cnn: [d] */
    float *w_q, *w_k, *w_v;                   /* attention: [d][dk] */
    float *w_qkv, *b_qkv, *w_o, *b_o;         /* mha: [d][3d], [3d], [d][d], [d] */
    /* Activations (tracked). */
    float *x, *y;                             /* input, output [B][N][d_out] */
    float *t0, *t1, *t2, *t3, *t4, *t5;        /* model-specific scratch */
    /* The attention backend (attention, mha). */
    const attn_backend *be;
    void *be_state;
    attn_problem p;
    attn_tensors t;
} arch_net;

/* Builds a model at one shape; weights and input from seed. ATTN_OK, or an
 * error with why (ATTN_EUNSUPPORTED: the attention backend cannot run it). */
attn_status arch_net_create(arch_net *n, arch_model m, int B, int N, int d, int threads,
                            arch_conv conv, const attn_backend *be, uint64_t seed,
                            const attn_allocator *alloc, char *why, size_t len);
attn_status arch_forward(arch_net *n);
void arch_net_destroy(arch_net *n);

/* The output's width: d, or d/8 for single-head attention. */
int arch_out_width(const arch_net *n);

/* Floating-point operations of one forward (GEMMs and attention; the
 * elementwise work is not counted). */
double arch_flops(arch_model m, int B, int N, int d);
/* The articles' memory: attention B N^2 4 + 3 B N d 4 (mha: H N^2 per batch),
 * rnn B d 4 + 2 B N d 4 bytes; 0 where they give none (cnn). */
double arch_analytic_bytes(arch_model m, int B, int N, int d);

/* The check of a forward pass (arch/reference.c): its output against a
 * double-precision forward of one batch item drawn from the seed, at up to
 * 32 positions drawn from the seed (rnn: its first steps), as many as fit
 * in about 2^28 multiply-adds. Passes when max |y - ref| <= ARCH_TOL max |ref|
 * over the checked rows. ARCH_TOL: fp32 GEMMs over K <= 3 d = 1536 terms and
 * attention sums over N <= 4096 keys err by about sqrt(K) u ~ 2e-6 of the
 * output's scale (u = 2^-24); measured at B=32, d=512, N=64..4096: at most
 * 2.6e-6 (attention at N=4096), so 40x margin; a wrong gate, tap, scale or
 * normalization errs by 0.1 and more (tests/test_arch.c). */
#define ARCH_TOL 1e-4

typedef struct arch_check {
    int item;               /* the batch item checked */
    int rows, total;        /* positions checked, of N */
    int worst_pos;
    double max_err, max_ref, tol;
    bool pass;
    char why[256];
} arch_check;

/* Planted mistakes in the double-precision forward, for the tests that
 * prove the check catches each. */
enum {
    ARCH_BUG_NONE = 0,
    ARCH_BUG_SWAP_IF = 1,        /* rnn: input and forget gates swapped */
    ARCH_BUG_FLIP_CONV = 2,      /* cnn: a convolution instead of a cross-correlation */
    ARCH_BUG_LN_NO_CENTER = 4,   /* cnn: LayerNorm without the mean */
    ARCH_BUG_NO_SCALE = 8,       /* attention, mha: no 1/sqrt(d_k) */
};

/* After arch_forward(n): fills c; ATTN_ENOMEM (why in c) when the check's
 * buffers cannot be had. item: the batch item to check, or -1 for one drawn
 * from seed; bug: ARCH_BUG_* planted in the reference. */
attn_status arch_check_output(const arch_net *n, uint64_t seed, int item, int bug,
                              arch_check *c);

/* attnbench arch [options]: argv[0] is "arch". */
int arch_main(int argc, char **argv, const char *prog);

#endif

/* The model comparison's layers: the GEMMs against a triple loop, the
 * positional encoding and one LSTM step against values worked by hand, the
 * activations against libm, and every model against a straightforward
 * double-precision implementation on small shapes, with planted mistakes in
 * that implementation (gate order, convolution direction, LayerNorm, the
 * attention scale) shown to be caught. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "layers.h"
#include "tap.h"

#define TOL 2e-5   /* of max |y|: fp32 against double over sums of <= 3*64 terms */

static double *dalloc(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof(double));
    if (!p) {
        printf("Bail out! out of memory\n");
        exit(2);
    }
    return p;
}

/* ---- GEMM ------------------------------------------------------------------ */

static void gemm_case(const char *name, void (*fn)(int, int, int, const float *, int,
                                                   const float *, int, float, float *, int, int),
                      int M, int N, int K, float beta, int threads)
{
    const int lda = K + 3, ldb = N + 5, ldc = N + 7;
    float *A = malloc(sizeof(float) * (size_t)M * lda), *B = malloc(sizeof(float) * (size_t)K * ldb);
    float *C = malloc(sizeof(float) * (size_t)M * ldc);
    double *R = dalloc((size_t)M * N);
    for (int i = 0; i < M * lda; i++)
        A[i] = (float)((i * 37 % 101) - 50) / 25.0f;
    for (int i = 0; i < K * ldb; i++)
        B[i] = (float)((i * 53 % 89) - 44) / 22.0f;
    for (int i = 0; i < M * ldc; i++)
        C[i] = (float)((i * 17 % 23) - 11);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = beta * (double)C[(size_t)i * ldc + j];
            for (int k = 0; k < K; k++)
                s += (double)A[(size_t)i * lda + k] * B[(size_t)k * ldb + j];
            R[(size_t)i * N + j] = s;
        }
    const float sentinel = C[(size_t)(M - 1) * ldc + N];   /* past the last row's end */
    fn(M, N, K, A, lda, B, ldb, beta, C, ldc, threads);
    double err = 0, mx = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            err = fmax(err, fabs(C[(size_t)i * ldc + j] - R[(size_t)i * N + j]));
            mx = fmax(mx, fabs(R[(size_t)i * N + j]));
        }
    tap_ok(err <= 1e-5 * fmax(mx, 1) * sqrt(K) && C[(size_t)(M - 1) * ldc + N] == sentinel,
           "%s %dx%dx%d beta %g, %d threads: max error %.2g of %.3g, nothing past N written",
           name, M, N, K, beta, threads, err, mx);
    free(A);
    free(B);
    free(C);
    free(R);
}

static void gemms(void)
{
    static const int shapes[][3] = { { 1, 1, 1 }, { 7, 13, 5 }, { 200, 70, 129 }, { 33, 300, 64 },
                                     { 391, 257, 3 } };
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
        for (int beta = 0; beta <= 1; beta++) {
            gemm_case("blocked", attn_gemm_blocked, shapes[s][0], shapes[s][1], shapes[s][2],
                      (float)beta, 2);
            gemm_case(attn_gemm_is_blas() ? "openblas" : "attn_gemm", attn_gemm, shapes[s][0],
                      shapes[s][1], shapes[s][2], (float)beta, 2);
        }
}

/* ---- positional encoding, activations --------------------------------------- */

static void encoding(void)
{
    float pe[3 * 4];
    attn_positional_encoding(pe, 3, 4);
    /* pos 0: sin 0, cos 0, sin 0, cos 0; pos 1: sin 1, cos 1, sin 0.01,
     * cos 0.01 (10000^(2/4) = 100); pos 2: ..., sin 0.02. */
    const float want[] = { 0, 1, 0, 1, 0.841470985f, 0.540302306f, 0.00999983333f, 0.999950000f,
                           0.909297427f, -0.416146837f, 0.0199986667f, 0.999800007f };
    double err = 0;
    for (int i = 0; i < 12; i++)
        err = fmax(err, fabs(pe[i] - want[i]));
    tap_ok(err < 1e-7, "positional encoding, 3 x 4, against hand values: max error %.2g", err);
}

static void activations(void)
{
    enum { N = 4001 };
    float s[N], t[N];
    double es = 0, et = 0;
    for (int i = 0; i < N; i++)
        s[i] = t[i] = (float)(i - N / 2) / 100.0f;   /* -20 .. 20 */
    attn_sigmoid(s, N);
    attn_tanh(t, N);
    for (int i = 0; i < N; i++) {
        const double x = (double)(float)((i - N / 2) / 100.0f);
        es = fmax(es, fabs(s[i] - 1 / (1 + exp(-x))));
        et = fmax(et, fabs(t[i] - tanh(x)));
    }
    tap_ok(es < 1e-6 && et < 1e-6, "sigmoid, tanh on [-20, 20]: max error %.2g, %.2g", es, et);
    float x[4] = { NAN, -200.0f, 200.0f, 1e-6f };
    float y[4];
    memcpy(y, x, sizeof(x));
    attn_sigmoid(x, 4);
    attn_tanh(y, 4);
    tap_ok(isnan(x[0]) && isnan(y[0]) && x[1] == 0 && x[2] == 1 && y[1] == -1 && y[2] == 1 &&
           fabs(y[3] - 1e-6) < 1e-12,
           "NaN stays NaN; saturation at +-200; tanh(1e-6) = 1e-6 (got %g %g %g / %g %g %g %g)",
           x[0], x[1], x[2], y[0], y[1], y[2], y[3]);
}

/* ---- the models against double ---------------------------------------------- */

/* Every batch item of a model against the double-precision forward of
 * arch/reference.c (the check attnbench arch runs), then that reference with
 * a planted mistake, which the check must refuse. */
static void model(arch_model m, int B, int N, int d, arch_conv conv, int bug, const char *bugname)
{
    attn_tracker tr;
    attn_tracker_init(&tr);
    arch_net n;
    char why[256];
    attn_status st = arch_net_create(&n, m, B, N, d, 2, conv, attn_backend_find("tiled"), 7,
                                     &tr.iface, why, sizeof(why));
    if (st != ATTN_OK) {
        tap_ok(false, "%s: create: %s", arch_model_name(m), why);
        attn_tracker_destroy(&tr);
        return;
    }
    st = arch_forward(&n);
    double worst = 0;
    bool pass = st == ATTN_OK;
    arch_check c = { 0 };
    for (int b = 0; b < B && pass; b++) {
        pass = arch_check_output(&n, 7, b, ARCH_BUG_NONE, &c) == ATTN_OK && c.pass;
        worst = fmax(worst, c.max_err / fmax(c.max_ref, 1e-30));
    }
    const char *cv = m == ARCH_CNN ? (conv == ARCH_CONV_SHIFT ? " (shifted GEMMs)" : " (im2col)") : "";
    if (!tap_ok(pass && worst <= TOL, "%s%s B=%d N=%d d=%d against double, every item (%d of %d "
                "positions each): max error %.2g of max |y| (tol %g)", arch_model_name(m), cv, B,
                N, d, c.rows, N, worst, TOL))
        tap_diag("%s", c.why);
    if (bug) {
        arch_check c2;
        st = arch_check_output(&n, 7, B - 1, bug, &c2);
        tap_ok(st == ATTN_OK && !c2.pass && c2.max_err > 100 * TOL * c2.max_ref,
               "%s: the check refuses a reference with %s (error %.2g of max |y|)",
               arch_model_name(m), bugname, c2.max_err / fmax(c2.max_ref, 1e-30));
    }
    arch_net_destroy(&n);
    tap_ok(atomic_load(&tr.live) == 0, "%s: every tracked buffer freed", arch_model_name(m));
    attn_tracker_destroy(&tr);
}

/* One LSTM step worked by hand: d = 1, x = 1, h0 = c0 = 0, W_ih = (0.5, -1,
 * 2, 0) for (i, f, g, o), biases 0, Linear 2 h - 0.25:
 * i = sigmoid(0.5) = 0.6224593, g = tanh(2) = 0.9640276, o = 0.5,
 * c = i g = 0.6000680, h = 0.5 tanh(c) = 0.2685490, y = 0.2870979. */
static void lstm_by_hand(void)
{
    attn_tracker tr;
    attn_tracker_init(&tr);
    arch_net n;
    char why[256];
    if (arch_net_create(&n, ARCH_RNN, 1, 1, 1, 1, ARCH_CONV_SHIFT, attn_backend_find("tiled"), 1,
                        &tr.iface, why, sizeof(why)) != ATTN_OK) {
        tap_ok(false, "rnn d=1: %s", why);
        attn_tracker_destroy(&tr);
        return;
    }
    const float w[4] = { 0.5f, -1.0f, 2.0f, 0.0f };
    for (int i = 0; i < 4; i++) {
        n.w_ih[i] = w[i];
        n.w_hh[i] = 0.7f;   /* meets h0 = 0 only */
        n.b_ih[i] = n.b_hh[i] = 0;
    }
    n.w_lin[0] = 2.0f;
    n.b_lin[0] = -0.25f;
    n.x[0] = 1.0f;
    arch_forward(&n);
    tap_ok(fabs(n.y[0] - 0.2870979) < 2e-6 && fabs(n.t4[0] - 0.2685490) < 2e-6,
           "one LSTM step by hand: h = %.7f (0.2685490), y = %.7f (0.2870979)", n.t4[0], n.y[0]);
    arch_net_destroy(&n);
    attn_tracker_destroy(&tr);
}

int main(void)
{
    gemms();
    encoding();
    activations();
    lstm_by_hand();
    model(ARCH_RNN, 2, 5, 12, ARCH_CONV_SHIFT, ARCH_BUG_SWAP_IF, "the input and forget gates swapped");
    model(ARCH_RNN, 3, 9, 40, ARCH_CONV_SHIFT, ARCH_BUG_NONE, "");
    model(ARCH_CNN, 2, 7, 8, ARCH_CONV_SHIFT, ARCH_BUG_FLIP_CONV, "a convolution instead of PyTorch's cross-correlation");
    model(ARCH_CNN, 3, 11, 24, ARCH_CONV_IM2COL, ARCH_BUG_LN_NO_CENTER, "LayerNorm without the mean");
    model(ARCH_CNN, 1, 1, 16, ARCH_CONV_SHIFT, ARCH_BUG_NONE, "");
    model(ARCH_ATTN, 2, 9, 16, ARCH_CONV_SHIFT, ARCH_BUG_NO_SCALE, "no 1/sqrt(d_k) scale");
    model(ARCH_ATTN, 3, 70, 64, ARCH_CONV_SHIFT, ARCH_BUG_NONE, "");
    model(ARCH_MHA, 2, 6, 16, ARCH_CONV_SHIFT, ARCH_BUG_NO_SCALE, "no 1/sqrt(d_k) scale");
    model(ARCH_MHA, 2, 33, 64, ARCH_CONV_SHIFT, ARCH_BUG_NONE, "");
    return tap_done();
}

/* Inputs are a pure function of (seed, tensor, index). */
#include <math.h>

#include "fill.h"
#include "tap.h"

enum { N = 100003 };
static float a[N], b[N];

int main(void)
{
    attn_fill(a, N, ATTN_FILL_NORMAL, 42, ATTN_TENSOR_Q, 1);
    attn_fill(b, N, ATTN_FILL_NORMAL, 42, ATTN_TENSOR_Q, 2);
    bool same = true;
    for (size_t i = 0; i < N; i++)
        same &= a[i] == b[i];
    tap_ok(same, "the same seed gives the same values with 1 and 2 threads");

    bool alone = true;
    for (size_t i = 0; i < N; i += 997)
        alone &= attn_fill_value(ATTN_FILL_NORMAL, 42, ATTN_TENSOR_Q, i) == a[i];
    tap_ok(alone, "any element regenerates alone");

    attn_fill(b, N, ATTN_FILL_NORMAL, 43, ATTN_TENSOR_Q, 2);
    size_t equal = 0;
    for (size_t i = 0; i < N; i++)
        equal += a[i] == b[i];
    tap_ok(equal == 0, "seeds 42 and 43 share no value (%zu equal)", equal);

    attn_fill(b, N, ATTN_FILL_NORMAL, 42, ATTN_TENSOR_K, 2);
    equal = 0;
    for (size_t i = 0; i < N; i++)
        equal += a[i] == b[i];
    tap_ok(equal == 0, "Q and K of one seed share no value (%zu equal)", equal);

    /* N(0,1): with 1e5 samples the mean is within 4.5 standard errors of 0
     * and the variance within 2% of 1. The values are fixed by the seed. */
    double sum = 0, sq = 0;
    for (size_t i = 0; i < N; i++) {
        sum += a[i];
        sq += (double)a[i] * a[i];
    }
    const double mean = sum / N, var = sq / N - mean * mean;
    tap_ok(fabs(mean) < 4.5 / sqrt(N) && fabs(var - 1.0) < 0.02,
           "normal fill has mean %.4f and variance %.4f", mean, var);

    attn_fill(b, N, ATTN_FILL_EXTREME, 42, ATTN_TENSOR_K, 1);
    bool ints = true;
    float lo = 0, hi = 0;
    for (size_t i = 0; i < N; i++) {
        ints &= b[i] == truncf(b[i]) && fabsf(b[i]) <= 100;
        lo = fminf(lo, b[i]);
        hi = fmaxf(hi, b[i]);
    }
    tap_ok(ints && lo == -100 && hi == 100, "extreme fill of K is integers spanning [-100, 100]");
    return tap_done();
}

/* The kernels of kernels/, checkasm style: every ISA version against the C
 * one on random and edge-case inputs, over every tail size, with outputs in
 * guarded strided buffers (the lanes past the tile and the rows around it
 * hold a canary that must survive). The exp2 of each version is measured
 * against double-precision exp2 in ulp.
 *
 *   test_kernels          the TAP test
 *   test_kernels --bench  the speed of each kernel per ISA on the tiled
 *                         backend's shapes (not a test; prints a table) */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/half.h"
#include "kernels/kernels.h"
#include "memory.h"
#include "tap.h"
#include "timer.h"

#define CANARY 0x7fa5a5a5u      /* a NaN no arithmetic produces */
#define GUARD 32                /* floats of canary before and after a buffer */
#define PAD 19                  /* extra floats per row, beyond the widest tile */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

static float uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)(next32() >> 8) * (1.0f / 16777216.0f);
}

static float canary(void)
{
    const union { uint32_t u; float f; } c = { .u = CANARY };
    return c.f;
}

static bool is_canary(float x)
{
    union { float f; uint32_t u; } c = { .f = x };
    return c.u == CANARY;
}

/* rows x stride floats plus guards, all canary; returns the first row. */
typedef struct guarded {
    float *base, *data;
    size_t n;          /* floats between the guards */
} guarded;

static guarded guarded_new(size_t n)
{
    guarded g;
    g.n = n;
    g.base = attn_host_alloc((n + 2 * GUARD) * sizeof(float));
    if (!g.base) {
        printf("Bail out! out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < n + 2 * GUARD; i++)
        g.base[i] = canary();
    g.data = g.base + GUARD;
    return g;
}

/* The region rows x cols at the given stride is the only one that may change. */
static bool guarded_intact(const guarded *g, int rows, int cols, ptrdiff_t stride)
{
    for (size_t i = 0; i < g->n + 2 * GUARD; i++) {
        const ptrdiff_t at = (ptrdiff_t)i - GUARD;
        const bool inside = at >= 0 && at / stride < rows && at % stride < cols;
        if (!inside && !is_canary(g->base[i]))
            return false;
    }
    return true;
}

static void copy_region(guarded *dst, const guarded *src)
{
    memcpy(dst->base, src->base, (src->n + 2 * GUARD) * sizeof(float));
}

/* |a - b| within tol, or both the same NaN-ness. */
static bool close(float a, float b, double tol)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return fabs((double)a - (double)b) <= tol;
}

static double ulp_of(double x)
{
    int e;
    frexp(x, &e);
    return ldexp(1.0, (e - 24 < -149 ? -149 : e - 24));
}

/* ---- Q.K^T ---------------------------------------------------------------- */

static bool check_qk(const attn_kernels *kr, const attn_kernels *c, int nk, int nq, int dk,
                     char *why, size_t len)
{
    const ptrdiff_t ks = dk + 3, qs = nq + PAD, ss = nq + PAD;
    float *k = attn_host_alloc((size_t)nk * ks * sizeof(float));
    float *qt = attn_host_alloc((size_t)dk * qs * sizeof(float));
    guarded ref = guarded_new((size_t)nk * ss), got = guarded_new((size_t)nk * ss);
    for (ptrdiff_t i = 0; i < nk * ks; i++)
        k[i] = uniform(-2, 2);
    for (ptrdiff_t i = 0; i < dk * qs; i++)
        qt[i] = uniform(-2, 2);
    c->qk(ref.data, ss, k, ks, qt, qs, nk, nq, dk, 0);
    kr->qk(got.data, ss, k, ks, qt, qs, nk, nq, dk, nk & 1);   /* pf changes no result */
    bool ok = guarded_intact(&got, nk, nq, ss);
    if (!ok)
        snprintf(why, len, "wrote outside the %dx%d tile", nk, nq);
    for (int j = 0; ok && j < nk; j++)
        for (int i = 0; ok && i < nq; i++) {
            double mag = 0;
            for (int x = 0; x < dk; x++)
                mag += fabs((double)k[j * ks + x] * qt[x * qs + i]);
            const double tol = 2.0 * dk * 0x1p-24 * mag + 1e-30;
            if (!close(got.data[j * ss + i], ref.data[j * ss + i], tol)) {
                snprintf(why, len, "S[%d][%d] = %.9g, C says %.9g (tol %.3g)", j, i,
                         got.data[j * ss + i], ref.data[j * ss + i], tol);
                ok = false;
            }
        }
    attn_host_free(k);
    attn_host_free(qt);
    attn_host_free(ref.base);
    attn_host_free(got.base);
    return ok;
}

/* ---- Q.K^T with the weights in its epilogue (the lazy rescale) ------------- */

/* qk_exp against C's: each weight exp2(s - m) within what the score's
 * rounding (check_qk's bound) and the subtraction move it by, plus exp2's
 * ulps; the columns' max within the scores' bound, their sums within the
 * weights'. mx and sum start from values of their own (they are read,
 * then written). With nan_key, key 1 of K holds a NaN: its scores are NaN,
 * which must leave mx alone and make every sum NaN. */
static bool check_qk_exp(const attn_kernels *kr, const attn_kernels *c, int nk, int nq, int dk,
                         bool nan_key, char *why, size_t len)
{
    const ptrdiff_t ks = dk + 3, qs = nq + PAD, ss = nq + PAD;
    float *k = attn_host_alloc((size_t)nk * ks * sizeof(float));
    float *qt = attn_host_alloc((size_t)dk * qs * sizeof(float));
    float *m = malloc((size_t)(nq + 1) * sizeof(float));
    guarded ref = guarded_new((size_t)nk * ss), got = guarded_new((size_t)nk * ss);
    guarded stat[2][2];   /* [C, kr][mx, sum] */
    for (int v = 0; v < 2; v++)
        for (int x = 0; x < 2; x++)
            stat[v][x] = guarded_new((size_t)nq);
    for (ptrdiff_t i = 0; i < nk * ks; i++)
        k[i] = uniform(-2, 2);
    for (ptrdiff_t i = 0; i < dk * qs; i++)
        qt[i] = uniform(-2, 2);
    const int bad = nan_key && nk > 1 ? 1 : -1;
    if (bad >= 0)
        k[bad * ks] = NAN;
    for (int i = 0; i <= nq; i++)
        m[i] = uniform(-4, 8);
    for (int i = 0; i < nq; i++) {
        stat[0][0].data[i] = stat[1][0].data[i] = uniform(-10, 10);
        stat[0][1].data[i] = stat[1][1].data[i] = uniform(0, 10);
    }
    c->qk_exp(ref.data, ss, k, ks, qt, qs, nk, nq, dk, m, stat[0][0].data, stat[0][1].data);
    kr->qk_exp(got.data, ss, k, ks, qt, qs, nk, nq, dk, m, stat[1][0].data, stat[1][1].data);
    bool ok = guarded_intact(&got, nk, nq, ss) && guarded_intact(&stat[1][0], 1, nq, nq) &&
              guarded_intact(&stat[1][1], 1, nq, nq);
    if (!ok)
        snprintf(why, len, "wrote outside the %dx%d tile or its max and sum", nk, nq);
    for (int i = 0; ok && i < nq; i++) {
        double smax = 0, psum = 0;   /* the column's bounds on its max and sum */
        for (int j = 0; ok && j < nk; j++) {
            if (j == bad)
                continue;
            double mag = 0, s = 0;
            for (int x = 0; x < dk; x++) {
                mag += fabs((double)k[j * ks + x] * qt[x * qs + i]);
                s += (double)k[j * ks + x] * qt[x * qs + i];
            }
            const double ts = 2.0 * dk * 0x1p-24 * mag + 1e-30;
            const double tx = ts + 2 * ulp_of((float)(fabs(s) + fabs(m[i])));
            const float p0 = ref.data[j * ss + i], p1 = got.data[j * ss + i];
            const double tp = p0 * tx + 8 * ulp_of(p0) + 1e-37;
            if (!close(p1, p0, tp)) {
                snprintf(why, len, "P[%d][%d] = %.9g, C says %.9g (tol %.3g)", j, i, p1, p0, tp);
                ok = false;
            }
            smax = ts > smax ? ts : smax;
            psum += tp;
        }
        const float x0 = stat[0][0].data[i], x1 = stat[1][0].data[i];
        const float u0 = stat[0][1].data[i], u1 = stat[1][1].data[i];
        if (ok && !close(x1, x0, smax)) {
            snprintf(why, len, "mx[%d] = %.9g, C says %.9g", i, x1, x0);
            ok = false;
        }
        if (ok && (bad >= 0) != (bool)isnan(u1)) {
            snprintf(why, len, "sum[%d] = %.9g with%s a NaN score", i, u1, bad >= 0 ? "" : "out");
            ok = false;
        }
        if (ok && !close(u1, u0, psum + (nk + 8) * 4 * ulp_of(u0) + 1e-37)) {
            snprintf(why, len, "sum[%d] = %.9g, C says %.9g", i, u1, u0);
            ok = false;
        }
    }
    attn_host_free(k);
    attn_host_free(qt);
    free(m);
    attn_host_free(ref.base);
    attn_host_free(got.base);
    for (int v = 0; v < 2; v++)
        for (int x = 0; x < 2; x++)
            attn_host_free(stat[v][x].base);
    return ok;
}

/* ---- online softmax step ---------------------------------------------------- */

typedef enum { FIRST_BLOCK, LATER_BLOCK, EXTREME } sm_kind;

static bool check_softmax(const attn_kernels *kr, const attn_kernels *c, int nk, int nq,
                          bool masked, sm_kind kind, char *why, size_t len)
{
    const ptrdiff_t ss = nq + PAD;
    guarded s0 = guarded_new((size_t)nk * ss), ref = guarded_new((size_t)nk * ss),
            got = guarded_new((size_t)nk * ss);
    guarded stat[2][3];
    for (int v = 0; v < 2; v++)
        for (int x = 0; x < 3; x++)
            stat[v][x] = guarded_new((size_t)nq);
    int *end = masked ? malloc((size_t)nq * sizeof(int)) : NULL;
    const float span = kind == EXTREME ? 1.5e4f : 8.0f;
    for (int j = 0; j < nk; j++)
        for (int i = 0; i < nq; i++)
            s0.data[j * ss + i] = uniform(-span, span * 0.1f);
    for (int i = 0; i < nq; i++) {
        const bool fresh = kind == FIRST_BLOCK || (kind == EXTREME && i % 3 == 0);
        stat[0][0].data[i] = fresh ? -INFINITY : uniform(-span, span * 0.1f);   /* m */
        stat[0][1].data[i] = fresh ? 0.0f : uniform(1.0f, 50.0f);              /* l */
        if (end)   /* every case: none visible, some, all, past the tile */
            end[i] = (int)(next32() % (uint32_t)(nk + 5)) - 2;
    }
    copy_region(&ref, &s0);
    copy_region(&got, &s0);
    for (int x = 0; x < 3; x++)
        copy_region(&stat[1][x], &stat[0][x]);
    c->softmax(ref.data, ss, nk, nq, end, stat[0][0].data, stat[0][1].data, stat[0][2].data);
    kr->softmax(got.data, ss, nk, nq, end, stat[1][0].data, stat[1][1].data, stat[1][2].data);

    bool ok = guarded_intact(&got, nk, nq, ss);
    for (int x = 0; ok && x < 3; x++)
        ok = guarded_intact(&stat[1][x], 1, nq, nq);
    if (!ok)
        snprintf(why, len, "wrote outside the %dx%d tile or its statistics", nk, nq);
    /* m is a max: exact. P and alpha are exp2 values within a few ulp of
     * each other; masked P must be exactly 0 in both. l sums nk of them. */
    for (int i = 0; ok && i < nq; i++) {
        const float m0 = stat[0][0].data[i], m1 = stat[1][0].data[i];
        if (!(m0 == m1 || (isnan(m0) && isnan(m1)))) {
            snprintf(why, len, "m[%d] = %.9g, C says %.9g", i, m1, m0);
            ok = false;
        }
        const float a0 = stat[0][2].data[i], a1 = stat[1][2].data[i];
        if (ok && !close(a1, a0, 8 * ulp_of(a0) + 1e-37)) {
            snprintf(why, len, "alpha[%d] = %.9g, C says %.9g", i, a1, a0);
            ok = false;
        }
        const float l0 = stat[0][1].data[i], l1 = stat[1][1].data[i];
        if (ok && !close(l1, l0, (nk + 8) * 4 * ulp_of(l0) + 1e-37)) {
            snprintf(why, len, "l[%d] = %.9g, C says %.9g", i, l1, l0);
            ok = false;
        }
        for (int j = 0; ok && j < nk; j++) {
            const float p0 = ref.data[j * ss + i], p1 = got.data[j * ss + i];
            const bool vis = !end || j < end[i];
            if (vis ? !close(p1, p0, 8 * ulp_of(p0) + 1e-37) : (p0 != 0.0f || p1 != 0.0f)) {
                snprintf(why, len, "P[%d][%d] = %.9g, C says %.9g (%s)", j, i, p1, p0,
                         vis ? "visible" : "masked");
                ok = false;
            }
        }
    }
    attn_host_free(s0.base);
    attn_host_free(ref.base);
    attn_host_free(got.base);
    for (int v = 0; v < 2; v++)
        for (int x = 0; x < 3; x++)
            attn_host_free(stat[v][x].base);
    free(end);
    return ok;
}

/* ---- P.V --------------------------------------------------------------------- */

static bool check_pv(const attn_kernels *kr, const attn_kernels *c, int nq, int nk, int dv,
                     char *why, size_t len)
{
    const ptrdiff_t os = dv + PAD, ps = nq + PAD, vs = dv + 5;
    float *pt = attn_host_alloc((size_t)nk * ps * sizeof(float));
    float *v = attn_host_alloc((size_t)nk * vs * sizeof(float));
    float *alpha = attn_host_alloc((size_t)nq * sizeof(float));
    guarded o0 = guarded_new((size_t)nq * os), ref = guarded_new((size_t)nq * os),
            got = guarded_new((size_t)nq * os);
    for (ptrdiff_t i = 0; i < nk * ps; i++)
        pt[i] = uniform(0, 1);
    for (ptrdiff_t i = 0; i < nk * vs; i++)
        v[i] = uniform(-3, 3);
    for (int i = 0; i < nq; i++) {
        alpha[i] = i % 4 == 0 ? 0.0f : uniform(0, 1);
        for (int x = 0; x < dv; x++)
            o0.data[i * os + x] = uniform(-10, 10);
    }
    copy_region(&ref, &o0);
    copy_region(&got, &o0);
    c->pv(ref.data, os, pt, ps, v, vs, alpha, nq, nk, dv, 0);
    kr->pv(got.data, os, pt, ps, v, vs, alpha, nq, nk, dv, nk & 1);
    bool ok = guarded_intact(&got, nq, dv, os);
    if (!ok)
        snprintf(why, len, "wrote outside the %dx%d output tile", nq, dv);
    for (int i = 0; ok && i < nq; i++)
        for (int x = 0; ok && x < dv; x++) {
            double mag = fabs((double)alpha[i] * o0.data[i * os + x]);
            for (int j = 0; j < nk; j++)
                mag += fabs((double)pt[j * ps + i] * v[j * vs + x]);
            const double tol = 2.0 * (nk + 1) * 0x1p-24 * mag + 1e-30;
            if (!close(got.data[i * os + x], ref.data[i * os + x], tol)) {
                snprintf(why, len, "O[%d][%d] = %.9g, C says %.9g (tol %.3g)", i, x,
                         got.data[i * os + x], ref.data[i * os + x], tol);
                ok = false;
            }
        }
    attn_host_free(pt);
    attn_host_free(v);
    attn_host_free(alpha);
    attn_host_free(o0.base);
    attn_host_free(ref.base);
    attn_host_free(got.base);
    return ok;
}

/* ---- row softmax (materialized scores) ----------------------------------------- */

static bool check_softmax_rows(const attn_kernels *kr, const attn_kernels *c, int rows, int n,
                               bool masked, char *why, size_t len)
{
    const ptrdiff_t ss = n + PAD;
    guarded s0 = guarded_new((size_t)rows * ss), ref = guarded_new((size_t)rows * ss),
            got = guarded_new((size_t)rows * ss);
    int *end = masked ? malloc((size_t)rows * sizeof(int)) : NULL;
    for (int r = 0; r < rows; r++) {
        const float span = r % 2 ? 1.5e4f : 8.0f;
        for (int j = 0; j < n; j++)
            s0.data[r * ss + j] = uniform(-span, span);
        if (end)
            end[r] = (int)(next32() % (uint32_t)(n + 5)) - 2;
    }
    copy_region(&ref, &s0);
    copy_region(&got, &s0);
    c->softmax_rows(ref.data, ss, rows, n, end);
    kr->softmax_rows(got.data, ss, rows, n, end);
    bool ok = guarded_intact(&got, rows, n, ss);
    if (!ok)
        snprintf(why, len, "wrote outside the %dx%d rows", rows, n);
    for (int r = 0; ok && r < rows; r++)
        for (int j = 0; ok && j < n; j++) {
            const float p0 = ref.data[r * ss + j], p1 = got.data[r * ss + j];
            const bool vis = !end || j < end[r];
            /* The sums may be added in different orders: n ulp of slack. */
            if (vis ? !close(p1, p0, (8 + 2.0 * n) * ulp_of(p0) + 1e-37)
                    : (p0 != 0.0f || p1 != 0.0f)) {
                snprintf(why, len, "P[%d][%d] = %.9g, C says %.9g (%s)", r, j, p1, p0,
                         vis ? "visible" : "masked");
                ok = false;
            }
        }
    attn_host_free(s0.base);
    attn_host_free(ref.base);
    attn_host_free(got.base);
    free(end);
    return ok;
}

/* ---- score modifiers -------------------------------------------------------------- */

/* mods on an nk x nq tile (S^T: keys by queries) against the definition in
 * double: cap tanh(s / cap), minus slope |pos - (j0 + j)|, -inf left of
 * beg. *worst: the largest error of the capped scores (without ALiBi) in
 * ulp of cap. */
static bool check_mods(const attn_kernels *kr, int nk, int nq, float cap, bool alibi,
                       bool window, double *worst, char *why, size_t len)
{
    const ptrdiff_t ss = nq + PAD;
    const int j0 = (int)(next32() % 50u);
    guarded s0 = guarded_new((size_t)nk * ss), got = guarded_new((size_t)nk * ss);
    float *slope = malloc((size_t)nq * sizeof(float)), *pos = malloc((size_t)nq * sizeof(float));
    int *beg = malloc((size_t)nq * sizeof(int));
    if (!slope || !pos || !beg) {
        printf("Bail out! out of memory\n");
        exit(2);
    }
    const float span = cap > 0 ? 4.0f * cap : 60.0f;
    for (int j = 0; j < nk; j++)
        for (int i = 0; i < nq; i++)
            s0.data[j * ss + i] = uniform(-span, span);
    for (int i = 0; i < nq; i++) {
        slope[i] = uniform(0.001f, 0.7f);
        pos[i] = (float)(next32() % 100u);
        beg[i] = j0 - 2 + (int)(next32() % (uint32_t)(nk + 5));
    }
    copy_region(&got, &s0);
    kr->mods(got.data, ss, nk, nq, j0, cap, alibi ? slope : NULL, pos, window ? beg : NULL);
    bool ok = guarded_intact(&got, nk, nq, ss);
    if (!ok)
        snprintf(why, len, "wrote outside the %dx%d tile", nk, nq);
    for (int j = 0; ok && j < nk; j++)
        for (int i = 0; ok && i < nq; i++) {
            const double x = s0.data[j * ss + i], at = j0 + j;
            const double capped = cap > 0 ? cap * tanh(x / cap) : x;
            const double bias = alibi ? (double)slope[i] * fabs(pos[i] - at) : 0.0;
            const bool hidden = window && j0 + j < beg[i];
            const float y = got.data[j * ss + i];
            /* tanh to a few ulp of cap; the bias's product and sum rounded. */
            const double tol = 16 * ulp_of(cap > 0 ? cap : x) + 2 * ulp_of(bias) +
                               2 * ulp_of(capped - bias);
            if (hidden ? y != -INFINITY : !close(y, (float)(capped - bias), tol)) {
                snprintf(why, len, "cap %g%s%s: S[%d][%d] = %.9g from %.9g, want %.9g", cap,
                         alibi ? " alibi" : "", window ? " window" : "", j, i, y, x,
                         hidden ? -INFINITY : capped - bias);
                ok = false;
            }
            if (!hidden && !alibi && cap > 0)
                *worst = fmax(*worst, fabs(y - capped) / ulp_of(cap));
        }
    attn_host_free(s0.base);
    attn_host_free(got.base);
    free(slope);
    free(pos);
    free(beg);
    return ok;
}

/* Every tail of 16-lane vectors (queries 1..40), keys 1..5; caps at
 * Gemma's 50 (in log2 units) and small; with and without ALiBi and the
 * window. */
static bool mods_all(const attn_kernels *kr, double *worst, char *why, size_t len)
{
    static const float caps[] = { 0.0f, 0.75f, (float)(50.0 * ATTN_LOG2E) };
    bool ok = true;
    for (int nk = 1; ok && nk <= 5; nk++)
        for (int nq = 1; ok && nq <= 40; nq++)
            for (size_t c = 0; ok && c < 3; c++)
                for (int f = 0; ok && f < 4; f++)
                    ok = check_mods(kr, nk, nq, caps[c], f & 1, f & 2, worst, why, len);
    return ok;
}

static void test_mods(const attn_kernels *kr)
{
    char why[256] = "";
    double worst = 0.0;
    if (!tap_ok(mods_all(kr, &worst, why, sizeof(why)), "mods_%s: softcap, ALiBi and the "
                "window's left edge against their definitions, every tail, guarded",
                attn_isa_name(kr->isa)))
        tap_diag("%s", why);
    tap_diag("mods_%s: the softcap's tanh within %.2f ulp of cap", attn_isa_name(kr->isa),
             worst);
}

/* ---- exp2 accuracy -------------------------------------------------------------- */

/* Every float in [lo, hi) at a step of 1/2^13 plus 2^20 random ones: the
 * largest error against exp2 in double, in ulp of the true value. */
static double exp2_max_ulp(const attn_kernels *kr, float lo, float hi, float *worst_x)
{
    enum { N = 1 << 16 };
    static float x[N], y[N];
    double worst = 0;
    long done = 0;
    const long grid = (long)((hi - lo) * 8192.0f);
    while (done < grid + (1L << 20)) {
        int n = 0;
        for (; n < N && done < grid + (1L << 20); n++, done++)
            x[n] = done < grid ? lo + (float)done / 8192.0f : uniform(lo, hi);
        kr->exp2(y, x, n);
        for (int i = 0; i < n; i++) {
            const double t = exp2((double)x[i]);
            const double e = fabs((double)y[i] - t) / ulp_of(t);
            if (e > worst) {
                worst = e;
                *worst_x = x[i];
            }
        }
    }
    return worst;
}

static bool exp2_edges(const attn_kernels *kr, char *why, size_t len)
{
    static const float in[] = { 0.0f, -0.0f, -126.0f, -126.5f, -127.0f, -1e4f, -INFINITY,
                                NAN, 1.0f, 3.0f, -1.0f, -0.5f, 0.5f, -16.0f, -150.0f, -1e30f,
                                -3.0f };
    enum { N = sizeof(in) / sizeof(in[0]) };
    float out[N];
    kr->exp2(out, in, N);
    for (int i = 0; i < N; i++) {
        const float x = in[i], y = out[i];
        bool ok;
        if (isnan(x))
            ok = isnan(y);
        else if (x < ATTN_EXP2_LO)
            ok = y >= 0.0f && y <= 0x1p-126f;
        else if (x == floorf(x))   /* integer powers of two are exact */
            ok = y == ldexpf(1.0f, (int)x);
        else
            ok = fabs((double)y - exp2((double)x)) <= 4 * ulp_of(exp2((double)x));
        if (!ok) {
            snprintf(why, len, "exp2(%g) = %.9g", x, y);
            return false;
        }
    }
    return true;
}

/* ---- Q.K^T from rows of Q ------------------------------------------------- */

static bool check_qk_rows(const attn_kernels *kr, const attn_kernels *c, int nk, int nq, int dk,
                          char *why, size_t len)
{
    const ptrdiff_t ks = dk + 3, qs = dk + 5, ss = nq + PAD;
    float *k = attn_host_alloc((size_t)nk * ks * sizeof(float));
    float *q = attn_host_alloc((size_t)nq * qs * sizeof(float));
    guarded ref = guarded_new((size_t)nk * ss), got = guarded_new((size_t)nk * ss);
    for (ptrdiff_t i = 0; i < nk * ks; i++)
        k[i] = uniform(-2, 2);
    for (ptrdiff_t i = 0; i < nq * qs; i++)
        q[i] = uniform(-2, 2);
    c->qk_rows(ref.data, ss, k, ks, q, qs, nk, nq, dk, 1);
    kr->qk_rows(got.data, ss, k, ks, q, qs, nk, nq, dk, 1);
    bool ok = guarded_intact(&got, nk, nq, ss);
    if (!ok)
        snprintf(why, len, "wrote outside the %dx%d tile", nk, nq);
    for (int j = 0; ok && j < nk; j++)
        for (int i = 0; ok && i < nq; i++) {
            double mag = 0, exact = 0;
            for (int x = 0; x < dk; x++) {
                mag += fabs((double)k[j * ks + x] * q[i * qs + x]);
                exact += (double)k[j * ks + x] * q[i * qs + x];
            }
            /* Summation orders differ (C: along d; SIMD: lanes, then a tree). */
            const double tol = 2.0 * dk * 0x1p-24 * mag + 1e-30;
            const float g = got.data[j * ss + i], r = ref.data[j * ss + i];
            if (!close(g, r, 2 * tol) || !close(g, (float)exact, tol)) {
                snprintf(why, len, "S[%d][%d] = %.9g, C says %.9g, exact %.9g (tol %.3g)", j, i,
                         g, r, exact, tol);
                ok = false;
            }
        }
    attn_host_free(k);
    attn_host_free(q);
    attn_host_free(ref.base);
    attn_host_free(got.base);
    return ok;
}

/* ---- Q^T packing --------------------------------------------------------------- */

/* Exact: each element is one product, rounded once, in any ISA. */
static bool check_pack_qt(const attn_kernels *kr, int nq, int dk, char *why, size_t len)
{
    const ptrdiff_t qs = dk + 3, ts = nq + PAD;
    const float scale = 0.3183099f;
    float *q = attn_host_alloc((size_t)nq * qs * sizeof(float));
    guarded got = guarded_new((size_t)dk * ts);
    for (ptrdiff_t i = 0; i < nq * qs; i++)
        q[i] = uniform(-4, 4);
    kr->pack_qt(got.data, ts, q, qs, nq, dk, scale);
    bool ok = guarded_intact(&got, dk, nq, ts);
    if (!ok)
        snprintf(why, len, "wrote outside the %dx%d tile", dk, nq);
    for (int c = 0; ok && c < dk; c++)
        for (int i = 0; ok && i < nq; i++)
            if (got.data[c * ts + i] != q[i * qs + c] * scale) {
                snprintf(why, len, "Q^T[%d][%d] = %.9g, not %.9g (nq %d, dk %d)", c, i,
                         got.data[c * ts + i], q[i * qs + c] * scale, nq, dk);
                ok = false;
            }
    attn_host_free(q);
    attn_host_free(got.base);
    return ok;
}

/* ---- 16-bit storage ---------------------------------------------------------- */

static uint16_t random_bf16(float lo, float hi)
{
    return attn_f32_to_bf16(uniform(lo, hi));
}

static uint16_t *halves(size_t n, float lo, float hi, bool bf16)
{
    uint16_t *x = attn_host_alloc(n * sizeof(uint16_t) + 64);
    for (size_t i = 0; i < n; i++)
        x[i] = bf16 ? random_bf16(lo, hi) : attn_f32_to_f16(uniform(lo, hi));
    return x;
}

static uint32_t bits_at(const guarded *g, size_t i)
{
    uint32_t u;
    memcpy(&u, &g->data[i], sizeof(u));
    return u;
}

/* Exact: widening loses nothing; a few values are infinities and NaN. */
static bool check_cvt_rows(const attn_kernels *kr, int rows, int cols, bool bf16, char *why,
                           size_t len)
{
    const ptrdiff_t ss = cols + 5, ds = cols + PAD;
    uint16_t *src = halves((size_t)rows * ss, -70000, 70000, bf16);
    src[0] = bf16 ? 0x7fc0 : 0x7e00;                 /* NaN */
    if (rows * ss > 2)
        src[rows * ss - 2] = bf16 ? 0xff80 : 0xfc00;  /* -inf */
    guarded got = guarded_new((size_t)rows * ds);
    kr->cvt_rows(got.data, ds, src, ss, rows, cols, bf16, 4096);
    bool ok = guarded_intact(&got, rows, cols, ds);
    if (!ok)
        snprintf(why, len, "wrote outside the %dx%d rows", rows, cols);
    for (int r = 0; ok && r < rows; r++)
        for (int c = 0; ok && c < cols; c++) {
            const float want = attn_half_to_f32(src[r * ss + c], bf16);
            const float have = got.data[r * ds + c];
            if (!(have == want || (isnan(have) && isnan(want)))) {
                snprintf(why, len, "%s [%d][%d] = %.9g, not %.9g", bf16 ? "bf16" : "fp16", r, c,
                         have, want);
                ok = false;
            }
        }
    attn_host_free(src);
    attn_host_free(got.base);
    return ok;
}

/* qk_kbf16 against the same ISA's qk on K widened by C's cvt_rows, bit for
 * bit (kernels.h: each value widened exactly, the same sums in the same
 * order), with pf on where nk is odd; K's rows an odd number of values
 * apart (every row's values at both alignments of their 32-bit words, the
 * first row at the buffer's start), a few of its values +-0, subnormal or
 * +-inf; Q^T finite, so that a score is NaN only where inf meets 0 on both
 * sides alike. */
static bool check_qk_kbf16(const attn_kernels *kr, int nk, int nq, int dk, char *why,
                           size_t len)
{
    const ptrdiff_t ks = dk + 3, qs = nq + PAD, ss = nq + PAD;
    uint16_t *kh = halves((size_t)nk * ks, -4, 4, true);
    static const uint16_t special[] = { 0x0000, 0x8000, 0x0001, 0x807f, 0x7f80, 0xff80 };
    for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
        kh[(i * 37 + 5) % ((size_t)nk * ks)] = special[i];
    float *kf = attn_host_alloc((size_t)nk * ks * sizeof(float));
    float *qt = attn_host_alloc((size_t)dk * qs * sizeof(float));
    attn_kernels_for(ATTN_ISA_C)->cvt_rows(kf, ks, kh, ks, nk, (int)ks, 1, 0);
    for (ptrdiff_t i = 0; i < dk * qs; i++)
        qt[i] = uniform(-2, 2);
    guarded ref = guarded_new((size_t)nk * ss), got = guarded_new((size_t)nk * ss);
    kr->qk(ref.data, ss, kf, ks, qt, qs, nk, nq, dk, 0);
    kr->qk_kbf16(got.data, ss, kh, ks, qt, qs, nk, nq, dk, nk & 1);
    bool ok = guarded_intact(&got, nk, nq, ss);
    if (!ok)
        snprintf(why, len, "wrote outside the %dx%d tile (nk %d, nq %d, d %d)", nk, nq, nk, nq,
                 dk);
    for (int j = 0; ok && j < nk; j++)
        for (int i = 0; ok && i < nq; i++) {
            const size_t at = (size_t)j * (size_t)ss + (size_t)i;
            const float g = got.data[at], r = ref.data[at];
            if (bits_at(&got, at) != bits_at(&ref, at) && !(isnan(g) && isnan(r))) {
                snprintf(why, len, "S[%d][%d] = %.9g, qk on the widened rows %.9g (nk %d, "
                         "nq %d, d %d)", j, i, g, r, nk, nq, dk);
                ok = false;
            }
        }
    attn_host_free(kh);
    attn_host_free(kf);
    attn_host_free(qt);
    attn_host_free(ref.base);
    attn_host_free(got.base);
    return ok;
}

/* dequant_rows of format f against the definition (quant.h's value of
 * each element), bit for bit, NaN for NaN: rows quantized from values in
 * +-400 (some blocks with a NaN or an infinity, so a NaN scale; fp8 with
 * values past its range, saturated), src rows padded apart. */
static bool check_dequant(const attn_kernels *kr, int rows, int cols, attn_kvq f, char *why,
                          size_t len)
{
    const size_t rb = attn_kvq_row_bytes(f, (size_t)cols);
    const ptrdiff_t ss = (ptrdiff_t)rb + 7, ds = cols + PAD;
    float *x = attn_host_alloc((size_t)cols * sizeof(float));
    uint8_t *src = attn_host_alloc((size_t)rows * (size_t)ss + 64);
    const float scale = attn_kvq_head_scaled(f) ? 0.75f : 1.0f;
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++)
            x[c] = (float)uniform(-400, 400) * (r % 3 == 1 && c < 32 ? 1e-3f : 1.0f);
        if (r == 2)
            x[cols - 1] = NAN;
        if (r == 3)
            x[0] = -INFINITY;
        attn_kvq_quantize_row(src + r * ss, x, (size_t)cols, f, scale);
    }
    guarded got = guarded_new((size_t)rows * ds);
    kr->dequant_rows(got.data, ds, src, ss, rows, cols, f, scale, 4096);
    bool ok = guarded_intact(&got, rows, cols, ds);
    if (!ok)
        snprintf(why, len, "wrote outside the %dx%d rows", rows, cols);
    for (int r = 0; ok && r < rows; r++)
        for (int c = 0; ok && c < cols; c++) {
            const float want = attn_kvq_value(src + r * ss, (size_t)c, f, scale);
            const float have = got.data[r * ds + c];
            if (!(attn_f32_bits(have) == attn_f32_bits(want) || (isnan(have) && isnan(want)))) {
                snprintf(why, len, "format %d [%d][%d] = %.9g, not %.9g", (int)f, r, c, have, want);
                ok = false;
            }
        }
    attn_host_free(x);
    attn_host_free(src);
    attn_host_free(got.base);
    return ok;
}

/* pack_qt_bf16, pack_v_bf16, pack_p_bf16 against C: exact (the P weights
 * are in [0, 1], some exactly 0, none subnormal: where the hardware's
 * rounding flushes subnormals it agrees with C's). */
static bool check_packs(const attn_kernels *kr, const attn_kernels *c, int n, int m, char *why,
                        size_t len)
{
    const ptrdiff_t is = m + 3, os = n + PAD;
    uint16_t *x = halves((size_t)n * is + 1, -4, 4, true);
    float *pt = attn_host_alloc((size_t)n * (n + PAD) * sizeof(float) + 64);
    for (ptrdiff_t i = 0; i < n * (n + PAD); i++)
        pt[i] = i % 7 == 3 ? 0.0f : uniform(0, 1);
    const int pn = (n + 1) / 2, pm = (m + 1) / 2;
    bool ok = true;
    for (int which = 0; ok && which < 3; which++) {
        /* 0: Q [n][m] -> [ceil(m/2)][n]; 1: V [n][m] -> [ceil(n/2)][m];
         * 2: P^T [n][n] -> [ceil(n/2)][n] */
        const int rows = which == 0 ? pm : pn, cols = which == 1 ? m : n;
        const ptrdiff_t gs = which == 1 ? m + PAD : os;
        guarded ref = guarded_new((size_t)rows * gs), got = guarded_new((size_t)rows * gs);
        const char *name = which == 0 ? "pack_qt_bf16" : which == 1 ? "pack_v_bf16" : "pack_p_bf16";
        const attn_kernels *k[2] = { c, kr };
        guarded *g[2] = { &ref, &got };
        for (int v = 0; v < 2; v++) {
            if (which == 0)
                k[v]->pack_qt_bf16((uint32_t *)g[v]->data, gs, x, is, n, m);
            else if (which == 1)
                k[v]->pack_v_bf16((uint32_t *)g[v]->data, gs, x, is, n, m);
            else
                k[v]->pack_p_bf16((uint32_t *)g[v]->data, gs, pt, n + PAD, n, n);
        }
        ok = guarded_intact(&got, rows, cols, gs);
        if (!ok)
            snprintf(why, len, "%s wrote outside its %dx%d pairs (n %d, m %d)", name, rows, cols,
                     n, m);
        for (int r = 0; ok && r < rows; r++)
            for (int col = 0; ok && col < cols; col++)
                if (bits_at(&got, (size_t)(r * gs + col)) !=
                    bits_at(&ref, (size_t)(r * gs + col))) {
                    snprintf(why, len, "%s [%d][%d] = %08x, C says %08x (n %d, m %d)", name, r,
                             col, bits_at(&got, (size_t)(r * gs + col)),
                             bits_at(&ref, (size_t)(r * gs + col)), n, m);
                    ok = false;
                }
        attn_host_free(ref.base);
        attn_host_free(got.base);
    }
    attn_host_free(x);
    attn_host_free(pt);
    return ok;
}

/* qk_bf16 (rows: qk_rows_bf16, decoding's, on Q's rows as they are) against
 * C, and against the sums in double: the products of bf16 values are exact
 * in fp32, so both must be within fp32's summation error of the double sum,
 * times the scale. */
static bool check_qk_bf16(const attn_kernels *kr, const attn_kernels *c, int nk, int nq, int dk,
                          bool rows, char *why, size_t len)
{
    const ptrdiff_t ks = dk + 3, qs = dk + 1, ts = nq + PAD, ss = nq + PAD;
    const float scale = 0.18033688f;
    uint16_t *k = halves((size_t)nk * ks + 1, -2, 2, true);
    uint16_t *q = halves((size_t)nq * qs + 1, -2, 2, true);
    uint32_t *qt = attn_host_alloc((size_t)((dk + 1) / 2) * ts * sizeof(uint32_t));
    c->pack_qt_bf16(qt, ts, q, qs, nq, dk);
    guarded ref = guarded_new((size_t)nk * ss), got = guarded_new((size_t)nk * ss);
    if (rows) {
        c->qk_rows_bf16(ref.data, ss, k, ks, q, qs, nk, nq, dk, scale, 1);
        kr->qk_rows_bf16(got.data, ss, k, ks, q, qs, nk, nq, dk, scale, 1);
    } else {
        c->qk_bf16(ref.data, ss, k, ks, qt, ts, nk, nq, dk, scale);
        kr->qk_bf16(got.data, ss, k, ks, qt, ts, nk, nq, dk, scale);
    }
    const char *name = rows ? "qk_rows_bf16" : "qk_bf16";
    bool ok = guarded_intact(&got, nk, nq, ss);
    if (!ok)
        snprintf(why, len, "%s wrote outside the %dx%d tile", name, nk, nq);
    for (int j = 0; ok && j < nk; j++)
        for (int i = 0; ok && i < nq; i++) {
            double exact = 0, mag = 0;
            for (int x = 0; x < dk; x++) {
                const double t = (double)attn_bf16_to_f32(k[j * ks + x]) *
                                 attn_bf16_to_f32(q[i * qs + x]);
                exact += t;
                mag += fabs(t);
            }
            exact *= scale;
            /* Summation orders differ (C: along d; qk_rows_bf16: lanes, then a tree). */
            const double tol = (2.0 * dk + 2) * 0x1p-24 * mag * scale + 1e-30;
            const float g = got.data[j * ss + i], r = ref.data[j * ss + i];
            if (!close(g, r, 2 * tol) || fabs(g - exact) > tol) {
                snprintf(why, len, "%s S[%d][%d] = %.9g, C says %.9g, exact %.9g (tol %.3g; "
                         "dk %d)", name, j, i, g, r, exact, tol, dk);
                ok = false;
            }
        }
    attn_host_free(k);
    attn_host_free(q);
    attn_host_free(qt);
    attn_host_free(ref.base);
    attn_host_free(got.base);
    return ok;
}

/* A bf16 P.V's output got (o = alpha o0 + bf16(P) V; C's in ref) within
 * the output tile only, and within fp32's summation error of C's and of
 * the double sum (pv_bf16, pv_rows_bf16). */
static bool pv_pairs_match(const guarded *got, const guarded *ref, const guarded *o0,
                           ptrdiff_t os, const float *pt, ptrdiff_t ps, const uint16_t *v,
                           ptrdiff_t vs, const float *alpha, int nq, int nk, int dv,
                           const char *name, char *why, size_t len)
{
    bool ok = guarded_intact(got, nq, dv, os);
    if (!ok)
        snprintf(why, len, "%s wrote outside the %dx%d output tile", name, nq, dv);
    for (int i = 0; ok && i < nq; i++)
        for (int x = 0; ok && x < dv; x++) {
            double exact = (double)(alpha[i] * o0->data[i * os + x]);
            double mag = fabs(exact);
            for (int j = 0; j < nk; j++) {
                const double t = (double)attn_bf16_to_f32(attn_f32_to_bf16(pt[j * ps + i])) *
                                 attn_bf16_to_f32(v[j * vs + x]);
                exact += t;
                mag += fabs(t);
            }
            const double tol = 2.0 * (nk + 2) * 0x1p-24 * mag + 1e-30;
            const float g = got->data[i * os + x], r = ref->data[i * os + x];
            if (!close(g, r, tol) || fabs(g - exact) > tol) {
                snprintf(why, len, "%s O[%d][%d] = %.9g, C says %.9g, exact %.9g (tol %.3g; "
                         "nq %d, nk %d, dv %d)", name, i, x, g, r, exact, tol, nq, nk, dv);
                ok = false;
            }
        }
    return ok;
}

/* pv_rows_bf16 (decoding's P.V on bf16 V rows in place, P rounded to bf16)
 * against C, and against the double sum of bf16(P) x V; with the row
 * ahead prefetched (pf), which changes nothing. */
static bool check_pv_rows_bf16(const attn_kernels *kr, const attn_kernels *c, int nq, int nk,
                               int dv, char *why, size_t len)
{
    const ptrdiff_t os = dv + PAD, ps = nq + PAD, vs = dv + 5;
    float *pt = attn_host_alloc((size_t)(nk + 1) * ps * sizeof(float));
    uint16_t *v = halves((size_t)(nk + 1) * vs, -3, 3, true);
    float *alpha = attn_host_alloc((size_t)nq * sizeof(float));
    guarded o0 = guarded_new((size_t)nq * os), ref = guarded_new((size_t)nq * os),
            got = guarded_new((size_t)nq * os);
    for (ptrdiff_t i = 0; i < (nk + 1) * ps; i++)
        pt[i] = i % 5 == 2 ? 0.0f : uniform(0, 1);
    for (int i = 0; i < nq; i++) {
        alpha[i] = i % 4 == 0 ? 0.0f : uniform(0, 1);
        for (int x = 0; x < dv; x++)
            o0.data[i * os + x] = uniform(-10, 10);
    }
    copy_region(&ref, &o0);
    copy_region(&got, &o0);
    c->pv_rows_bf16(ref.data, os, pt, ps, v, vs, alpha, nq, nk, dv, 0);
    kr->pv_rows_bf16(got.data, os, pt, ps, v, vs, alpha, nq, nk, dv,
                     (ptrdiff_t)(3 * vs * sizeof(uint16_t)));
    const bool ok = pv_pairs_match(&got, &ref, &o0, os, pt, ps, v, vs, alpha, nq, nk, dv,
                                   "pv_rows_bf16", why, len);
    attn_host_free(pt);
    attn_host_free(v);
    attn_host_free(alpha);
    attn_host_free(o0.base);
    attn_host_free(ref.base);
    attn_host_free(got.base);
    return ok;
}

/* pv_bf16 against C, and against the double sum of bf16(P) x V. */
static bool check_pv_bf16(const attn_kernels *kr, const attn_kernels *c, int nq, int nk, int dv,
                          char *why, size_t len)
{
    const ptrdiff_t os = dv + PAD, ps = nq + PAD, vs = dv + 5;
    float *pt = attn_host_alloc((size_t)(nk + 1) * ps * sizeof(float));
    uint16_t *v = halves((size_t)(nk + 1) * vs, -3, 3, true);
    float *alpha = attn_host_alloc((size_t)nq * sizeof(float));
    const int pairs = (nk + 1) / 2;
    uint32_t *pp = attn_host_alloc((size_t)pairs * ps * sizeof(uint32_t));
    uint32_t *vp = attn_host_alloc((size_t)pairs * dv * sizeof(uint32_t) + 64);
    guarded o0 = guarded_new((size_t)nq * os), ref = guarded_new((size_t)nq * os),
            got = guarded_new((size_t)nq * os);
    for (ptrdiff_t i = 0; i < (nk + 1) * ps; i++)
        pt[i] = uniform(0, 1);
    for (int i = 0; i < nq; i++) {
        alpha[i] = i % 4 == 0 ? 0.0f : uniform(0, 1);
        for (int x = 0; x < dv; x++)
            o0.data[i * os + x] = uniform(-10, 10);
    }
    c->pack_p_bf16(pp, ps, pt, ps, nk, nq);
    c->pack_v_bf16(vp, dv, v, vs, nk, dv);
    copy_region(&ref, &o0);
    copy_region(&got, &o0);
    c->pv_bf16(ref.data, os, pp, ps, vp, dv, alpha, nq, nk, dv);
    kr->pv_bf16(got.data, os, pp, ps, vp, dv, alpha, nq, nk, dv);
    const bool ok = pv_pairs_match(&got, &ref, &o0, os, pt, ps, v, vs, alpha, nq, nk, dv,
                                   "pv_bf16", why, len);
    attn_host_free(pt);
    attn_host_free(v);
    attn_host_free(alpha);
    attn_host_free(pp);
    attn_host_free(vp);
    attn_host_free(o0.base);
    attn_host_free(ref.base);
    attn_host_free(got.base);
    return ok;
}

/* A decoding kernel pair of one storage type: Q.K^T (qk_rows16, qk_rows_q)
 * and P.V (pv16, pv_q) of the rows k, ks apart in the type's units. */
typedef struct rows_kernels {
    const char *qk_name, *pv_name, *type;
    bool bf16;                  /* 16-bit: bf16, else fp16 */
    attn_kvq fmt;               /* quantized: the format and fp8's scale */
    float scale;
    bool quantized;
} rows_kernels;

static void rows_qk(const attn_kernels *kr, const rows_kernels *x, float *st, ptrdiff_t ss,
                    const void *k, ptrdiff_t ks, const float *q, ptrdiff_t qs, int nk, int nq, int d)
{
    if (x->quantized)
        kr->qk_rows_q(st, ss, k, ks, q, qs, nk, nq, d, x->fmt, x->scale, 1);
    else
        kr->qk_rows16(st, ss, k, ks, q, qs, nk, nq, d, x->bf16, 1);
}

static void rows_pv(const attn_kernels *kr, const rows_kernels *x, float *o, ptrdiff_t os,
                    const float *pt, ptrdiff_t ps, const void *k, ptrdiff_t ks,
                    const float *alpha, int nq, int nk, int d, int pf)
{
    if (x->quantized)
        kr->pv_q(o, os, pt, ps, k, ks, alpha, nq, nk, d, x->fmt, x->scale, pf);
    else
        kr->pv16(o, os, pt, ps, k, ks, alpha, nq, nk, d, x->bf16, pf);
}

/* x's pair of kr against C's and against the double sums over kd [nk][d]
 * (the values k reads back), k serving as both K and V: the scores within
 * fp32's rounding of the sum's magnitudes, P.V likewise, nothing written
 * outside the tiles. */
static bool check_rows_kernels(const attn_kernels *kr, const attn_kernels *c,
                               const rows_kernels *x, const void *k, ptrdiff_t ks,
                               const float *kd, int nk, int nq, int d, char *why, size_t len)
{
    const ptrdiff_t qs = d + 5, ss = nq + PAD, os = d + PAD;
    float *q = attn_host_alloc((size_t)nq * qs * sizeof(float));
    float *pt = attn_host_alloc((size_t)nk * ss * sizeof(float));
    float *alpha = attn_host_alloc((size_t)nq * sizeof(float));
    for (ptrdiff_t i = 0; i < nq * qs; i++)
        q[i] = uniform(-2, 2);
    for (ptrdiff_t i = 0; i < nk * ss; i++)
        pt[i] = uniform(0, 1);
    for (int i = 0; i < nq; i++)
        alpha[i] = i % 3 ? uniform(0, 1) : 0.0f;
    guarded sr = guarded_new((size_t)nk * ss), sg = guarded_new((size_t)nk * ss);
    guarded o0 = guarded_new((size_t)nq * os), orf = guarded_new((size_t)nq * os),
            og = guarded_new((size_t)nq * os);
    for (int i = 0; i < nq; i++)
        for (int y = 0; y < d; y++)
            o0.data[i * os + y] = uniform(-5, 5);
    copy_region(&orf, &o0);
    copy_region(&og, &o0);
    rows_qk(c, x, sr.data, ss, k, ks, q, qs, nk, nq, d);
    rows_qk(kr, x, sg.data, ss, k, ks, q, qs, nk, nq, d);
    rows_pv(c, x, orf.data, os, pt, ss, k, ks, alpha, nq, nk, d, 0);
    rows_pv(kr, x, og.data, os, pt, ss, k, ks, alpha, nq, nk, d, nk & 1);
    bool ok = guarded_intact(&sg, nk, nq, ss) && guarded_intact(&og, nq, d, os);
    if (!ok)
        snprintf(why, len, "wrote outside its tile (nk %d, nq %d, d %d)", nk, nq, d);
    for (int j = 0; ok && j < nk; j++)
        for (int i = 0; ok && i < nq; i++) {
            double mag = 0, exact = 0;
            for (int y = 0; y < d; y++) {
                const double t = (double)kd[(size_t)j * d + y] * q[i * qs + y];
                exact += t;
                mag += fabs(t);
            }
            /* one rounding more than d products' (2 d): a kernel may take
             * fp8's head factor once, on the sum (kernels_avx2.c) */
            const double tol = (2.0 * d + 1) * 0x1p-24 * mag + 1e-30;
            const float g = sg.data[j * ss + i], r = sr.data[j * ss + i];
            if (!close(g, r, 2 * tol) || !close(g, (float)exact, tol)) {
                snprintf(why, len,
                         "%s %s S[%d][%d] = %.9g, C says %.9g, exact %.9g (nk %d, nq %d, d %d)",
                         x->qk_name, x->type, j, i, g, r, exact, nk, nq, d);
                ok = false;
            }
        }
    for (int i = 0; ok && i < nq; i++)
        for (int y = 0; ok && y < d; y++) {
            double exact = (double)(alpha[i] * o0.data[i * os + y]), mag = fabs(exact);
            for (int j = 0; j < nk; j++) {
                const double t = (double)pt[j * ss + i] * kd[(size_t)j * d + y];
                exact += t;
                mag += fabs(t);
            }
            const double tol = 2.0 * (nk + 1) * 0x1p-24 * mag + 1e-30;
            const float g = og.data[i * os + y], r = orf.data[i * os + y];
            if (!close(g, r, tol) || !close(g, (float)exact, tol)) {
                snprintf(why, len, "%s %s O[%d][%d] = %.9g, C says %.9g, exact %.9g", x->pv_name,
                         x->type, i, y, g, r, exact);
                ok = false;
            }
        }
    attn_host_free(q);
    attn_host_free(pt);
    attn_host_free(alpha);
    guarded *all[] = { &sr, &sg, &o0, &orf, &og };
    for (int y = 0; y < 5; y++)
        attn_host_free(all[y]->base);
    return ok;
}

/* qk_rows16 and pv16 (16-bit K, V widened as loaded) on values in +-2. */
static bool check_rows16(const attn_kernels *kr, const attn_kernels *c, int nk, int nq, int d,
                         bool bf16, char *why, size_t len)
{
    const ptrdiff_t ks = d + 3;
    uint16_t *k = halves((size_t)nk * ks, -2, 2, bf16);
    float *kd = attn_host_alloc((size_t)nk * d * sizeof(float));
    for (int j = 0; j < nk; j++)
        for (int y = 0; y < d; y++)
            kd[(size_t)j * d + y] = attn_half_to_f32(k[j * ks + y], bf16);
    const rows_kernels x = { "qk_rows16", "pv16", bf16 ? "bf16" : "fp16", .bf16 = bf16 };
    const bool ok = check_rows_kernels(kr, c, &x, k, ks, kd, nk, nq, d, why, len);
    attn_host_free(k);
    attn_host_free(kd);
    return ok;
}

/* qk_rows_q and pv_q (a quantized K, V read back as loaded): rows of format
 * f quantized from values in +-2, their bytes padded apart. */
static bool check_rows_q(const attn_kernels *kr, const attn_kernels *c, int nk, int nq, int d,
                         attn_kvq f, char *why, size_t len)
{
    static const char *const names[ATTN_KVQ_COUNT] = { "q8_0", "q4_0", "fp8e4m3", "fp8e5m2" };
    const size_t rb = attn_kvq_row_bytes(f, (size_t)d);
    const ptrdiff_t ks = (ptrdiff_t)rb + 5;
    const float scale = attn_kvq_head_scaled(f) ? 2.0f / attn_fp8_max(f) : 1.0f;
    uint8_t *k = attn_host_alloc((size_t)nk * ks + 64);
    float *v = attn_host_alloc((size_t)d * sizeof(float));
    float *kd = attn_host_alloc((size_t)nk * d * sizeof(float));
    for (int j = 0; j < nk; j++) {
        for (int y = 0; y < d; y++)
            v[y] = (float)uniform(-2, 2);
        attn_kvq_quantize_row(k + j * ks, v, (size_t)d, f, scale);
        attn_kvq_dequantize_row(kd + (size_t)j * d, k + j * ks, (size_t)d, f, scale);
    }
    /* fp8: in every fourth shape one NaN code (e4m3's negative one, which
     * the AVX-512 kernels find after their arithmetic) in the middle row:
     * that key's scores NaN, and that column of every output, as C's. */
    if (attn_kvq_head_scaled(f) && (nk + nq + d) % 4 == 0) {
        const int j = nk / 2, y = (7 * j) % d;
        k[j * ks + y] = f == ATTN_KVQ_FP8E4M3 ? 0xff : 0x7e;
        kd[(size_t)j * d + y] = NAN;
    }
    const rows_kernels x = { "qk_rows_q", "pv_q", names[f], .fmt = f, .scale = scale,
                             .quantized = true };
    const bool ok = check_rows_kernels(kr, c, &x, k, ks, kd, nk, nq, d, why, len);
    attn_host_free(k);
    attn_host_free(v);
    attn_host_free(kd);
    return ok;
}

/* qk_rows_i8 (Q in q8_0, K in q8_0 or q4_0 of format f): rows quantized
 * from values in +-2 (a block of zeros, and one of a single nonzero value,
 * where d allows), their bytes padded apart; kr against C's and against
 * the double sums of the values each reads back, times scale. */
static bool check_rows_i8(const attn_kernels *kr, const attn_kernels *c, int nk, int nq, int d,
                          attn_kvq f, char *why, size_t len)
{
    const size_t rb = attn_kvq_row_bytes(f, (size_t)d), qb = attn_kvq_row_bytes(ATTN_KVQ_Q8_0,
                                                                                  (size_t)d);
    const ptrdiff_t ks = (ptrdiff_t)rb + 5, qs = (ptrdiff_t)qb + 3, ss = nq + PAD;
    const float scale = 0.37f;
    uint8_t *k = attn_host_alloc((size_t)nk * ks + 64), *q = attn_host_alloc((size_t)nq * qs + 64);
    float *v = attn_host_alloc((size_t)d * sizeof(float));
    float *kd = attn_host_alloc((size_t)nk * d * sizeof(float));
    float *qd = attn_host_alloc((size_t)nq * d * sizeof(float));
    for (int j = 0; j < nk + nq; j++) {
        for (int y = 0; y < d; y++)
            v[y] = (float)uniform(-2, 2);
        if (d >= 64 && j % 3 == 1)
            for (int y = 32; y < 64; y++)
                v[y] = y == 40 ? -1.5f : 0.0f;
        if (j % 4 == 2)
            memset(v, 0, ATTN_QBLOCK * sizeof(float));
        if (j < nk) {
            attn_kvq_quantize_row(k + j * ks, v, (size_t)d, f, 1.0f);
            attn_kvq_dequantize_row(kd + (size_t)j * d, k + j * ks, (size_t)d, f, 1.0f);
        } else {
            const int i = j - nk;
            attn_kvq_quantize_row(q + i * qs, v, (size_t)d, ATTN_KVQ_Q8_0, 1.0f);
            attn_kvq_dequantize_row(qd + (size_t)i * d, q + i * qs, (size_t)d, ATTN_KVQ_Q8_0,
                                    1.0f);
        }
    }
    guarded sr = guarded_new((size_t)nk * ss), sg = guarded_new((size_t)nk * ss);
    c->qk_rows_i8(sr.data, ss, k, ks, q, qs, nk, nq, d, f, scale, 0);
    kr->qk_rows_i8(sg.data, ss, k, ks, q, qs, nk, nq, d, f, scale, 3 * ks);
    bool ok = guarded_intact(&sg, nk, nq, ss);
    if (!ok)
        snprintf(why, len, "qk_rows_i8 wrote outside its tile (nk %d, nq %d, d %d)", nk, nq, d);
    for (int j = 0; ok && j < nk; j++)
        for (int i = 0; ok && i < nq; i++) {
            double mag = 0, exact = 0;
            for (int y = 0; y < d; y++) {
                const double t = (double)kd[(size_t)j * d + y] * qd[(size_t)i * d + y];
                exact += t;
                mag += fabs(t);
            }
            exact *= scale;
            const double tol = 2.0 * d * 0x1p-24 * mag * scale + 1e-30;
            const float g = sg.data[j * ss + i], r = sr.data[j * ss + i];
            if (!close(g, r, 2 * tol) || !close(g, (float)exact, tol)) {
                snprintf(why, len, "qk_rows_i8 %s S[%d][%d] = %.9g, C says %.9g, exact %.9g "
                         "(nk %d, nq %d, d %d)", f == ATTN_KVQ_Q8_0 ? "q8_0" : "q4_0", j, i, g,
                         r, exact, nk, nq, d);
                ok = false;
            }
        }
    attn_host_free(k);
    attn_host_free(q);
    attn_host_free(v);
    attn_host_free(kd);
    attn_host_free(qd);
    attn_host_free(sr.base);
    attn_host_free(sg.base);
    return ok;
}

/* The bf16 kernels of one table over every tail. */
static void test_bf16(const attn_kernels *kr, const attn_kernels *c)
{
    const char *name = attn_isa_name(kr->isa), *how = kr->bf16_dot ? "vdpbf16ps" : "C's";
    char why[320] = "";
    bool ok = true;
    static const int ds[] = { 1, 2, 3, 16, 31, 64, 100, 128 };
    for (int rows = 1; ok && rows <= 5; rows++)
        for (size_t d = 0; ok && d < sizeof(ds) / sizeof(ds[0]); d++)
            for (int bf16 = 0; ok && bf16 < 2; bf16++)
                ok = check_cvt_rows(kr, rows, ds[d], bf16, why, sizeof(why));
    if (!tap_ok(ok, "cvt_rows_%s widens bf16 and fp16 exactly (inf, NaN), every tail, guarded",
                name))
        tap_diag("%s", why);

    ok = true;
    static const int qds[] = { 32, 64, 96, 128, 256 };   /* fp8 also every tail */
    for (int f = 0; ok && f < ATTN_KVQ_COUNT; f++)
        for (int rows = 1; ok && rows <= 5; rows++) {
            for (size_t d = 0; ok && d < sizeof(qds) / sizeof(qds[0]); d++)
                ok = check_dequant(kr, rows, qds[d], (attn_kvq)f, why, sizeof(why));
            for (int d = 1; ok && attn_kvq_head_scaled((attn_kvq)f) && d <= 40; d++)
                ok = check_dequant(kr, rows, d, (attn_kvq)f, why, sizeof(why));
        }
    if (!tap_ok(ok, "dequant_rows_%s reads q8_0, q4_0, fp8e4m3 and fp8e5m2 back as the "
                "definition does, bit for bit (NaN blocks, saturated fp8), guarded", name))
        tap_diag("%s", why);

    ok = true;
    static const int rds[] = { 1, 7, 16, 17, 64, 100, 128 };
    for (int nk = 1; ok && nk <= 35; nk += nk < 18 ? 1 : 17)
        for (int nq = 1; ok && nq <= 17; nq++)
            for (size_t d = 0; ok && d < sizeof(rds) / sizeof(rds[0]); d++)
                for (int bf16 = 0; ok && bf16 < 2; bf16++)
                    ok = check_rows16(kr, c, nk, nq, rds[d], bf16, why, sizeof(why));
    if (!tap_ok(ok, "qk_rows16_%s and pv16_%s (16-bit K, V widened as loaded) match C's and the "
                "double sums, bf16 and fp16, every tail, guarded", name, name))
        tap_diag("%s", why);

    ok = true;
    static const int qrds[] = { 32, 64, 128, 160 };   /* fp8 also odd d */
    /* 8, 12 and 16: AVX-512's P.V of every query in one register tile */
    static const int qnqs[] = { 1, 2, 3, 4, 5, 6, 8, 11, 12, 16, 17 };
    for (int f = 0; ok && f < ATTN_KVQ_COUNT; f++)
        for (int nk = 1; ok && nk <= 35; nk += nk < 9 ? 1 : 13)
            for (size_t n = 0; ok && n < sizeof(qnqs) / sizeof(qnqs[0]); n++) {
                const int nq = qnqs[n];
                for (size_t d = 0; ok && d < sizeof(qrds) / sizeof(qrds[0]); d++)
                    ok = check_rows_q(kr, c, nk, nq, qrds[d], (attn_kvq)f, why, sizeof(why));
                for (int d = 1; ok && attn_kvq_head_scaled((attn_kvq)f) && d <= 40; d += 13)
                    ok = check_rows_q(kr, c, nk, nq, d, (attn_kvq)f, why, sizeof(why));
            }
    /* a wide row: AVX2's block-scaled P.V takes its keys in several chunks */
    for (int f = 0; ok && f < ATTN_KVQ_COUNT; f++)
        for (int nq = 3; ok && nq <= 7; nq += 4)
            ok = check_rows_q(kr, c, 35, nq, 1024, (attn_kvq)f, why, sizeof(why));
    if (!tap_ok(ok, "qk_rows_q_%s and pv_q_%s (a quantized K, V read back as loaded) match C's "
                "and the double sums, every format, tails, fp8 NaN codes, guarded", name, name))
        tap_diag("%s", why);

    ok = true;
    static const int ids[] = { 32, 64, 96, 128, 256, 512, 544 };   /* 544: past the VNNI limit */
    for (int f = 0; ok && f < 2; f++)
        for (int nk = 1; ok && nk <= 35; nk += nk < 9 ? 1 : 13)
            for (int nq = 1; ok && nq <= 17; nq += nq < 6 ? 1 : 5)
                for (size_t d = 0; ok && d < sizeof(ids) / sizeof(ids[0]); d++)
                    ok = check_rows_i8(kr, c, nk, nq, ids[d], (attn_kvq)f, why, sizeof(why));
    if (!tap_ok(ok, "qk_rows_i8_%s (%s; Q in q8_0, K in q8_0 and q4_0) matches C's and the double "
                "sums, odd block counts, zero blocks, tails, guarded", name,
                kr->int8_dot ? "vpdpbusd" : "C's"))
        tap_diag("%s", why);

    ok = true;
    for (int n = 1; ok && n <= 35; n++)
        for (size_t d = 0; ok && d < sizeof(ds) / sizeof(ds[0]); d++)
            ok = check_packs(kr, c, n, ds[d], why, sizeof(why));
    if (!tap_ok(ok, "pack_qt_bf16, pack_v_bf16, pack_p_bf16 (%s): pairs exactly as C's, odd "
                "ends zero, P rounded to nearest even, guarded", name))
        tap_diag("%s", why);

    ok = true;
    static const int qdks[] = { 1, 2, 3, 16, 33, 64, 128 };
    for (int nk = 1; ok && nk <= 13; nk++)
        for (int nq = 1; ok && nq <= 81; nq += nq < 20 ? 1 : 15)
            for (size_t d = 0; ok && d < sizeof(qdks) / sizeof(qdks[0]); d++)
                ok = check_qk_bf16(kr, c, nk, nq, qdks[d], false, why, sizeof(why));
    for (int nq = 1; ok && nq <= 13; nq++)
        for (int dv = 1; ok && dv <= 81; dv += dv < 20 ? 1 : 15)
            for (int nk = 1; ok && nk <= 6; nk++)
                ok = check_pv_bf16(kr, c, nq, nk, dv, why, sizeof(why));
    static const int rdks[] = { 1, 2, 3, 31, 32, 33, 64, 100, 128 };
    for (int nk = 1; ok && nk <= 21; nk++)
        for (int nq = 1; ok && nq <= 17; nq++)
            for (size_t d = 0; ok && d < sizeof(rdks) / sizeof(rdks[0]); d++)
                ok = check_qk_bf16(kr, c, nk, nq, rdks[d], true, why, sizeof(why));
    if (!tap_ok(ok, "qk_bf16_%s, qk_rows_bf16_%s and pv_bf16_%s (%s) match C's and the double "
                "sums of the bf16 products, every tail and odd d or key count, guarded", name,
                name, name, how))
        tap_diag("%s", why);

    /* Queries 1..17 (decoding's tiles, in groups of 4), keys 1..9 (odd
     * counts end in a pair with a zero weight), dv: every tail of 16 and of
     * 32 values, one and two 64-value passes. */
    ok = true;
    static const int pdvs[] = { 1, 7, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 128 };
    for (int nq = 1; ok && nq <= 17; nq++)
        for (int nk = 1; ok && nk <= 9; nk++)
            for (size_t d = 0; ok && d < sizeof(pdvs) / sizeof(pdvs[0]); d++)
                ok = check_pv_rows_bf16(kr, c, nq, nk, pdvs[d], why, sizeof(why));
    if (!tap_ok(ok, "pv_rows_bf16_%s (%s; bf16 V in place, P rounded to bf16) matches C's and the "
                "double sums, odd key counts, every tail, guarded", name, how))
        tap_diag("%s", why);
}

/* half.h, the definition the harness and every conversion rely on, checked
 * against the arithmetic: widening by the formats' definitions, narrowing
 * to the nearest representable value with ties to even. */
static double fp16_value(uint16_t h)
{
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return h & 0x8000 ? -v : v;
}

static bool check_half(char *why, size_t len)
{
    /* Every finite fp16 widens to its value and narrows back to itself. */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if (((h >> 10) & 0x1f) == 0x1f)
            continue;
        const float f = attn_f16_to_f32((uint16_t)h);
        if ((double)f != fp16_value((uint16_t)h) ||
            (attn_f32_to_f16(f) != h && !(f == 0 && (attn_f32_to_f16(f) & 0x7fff) == 0))) {
            snprintf(why, len, "fp16 %04x: widens to %.9g, back to %04x", h, f, attn_f32_to_f16(f));
            return false;
        }
    }
    /* Random floats of every magnitude in fp16's range narrow to the
     * nearest value, ties (midpoints) to the even one. */
    for (int t = 0; t < 200000; t++) {
        const float x = ldexpf(uniform(1, 2), (int)(next32() % 42) - 26) * (t & 1 ? -1 : 1);
        const uint16_t h = attn_f32_to_f16(x);
        const double d = fabs(fp16_value(h) - x);
        for (int s = -1; s <= 1; s += 2) {
            const uint16_t n = (uint16_t)(h + s);
            if (((n >> 10) & 0x1f) == 0x1f || ((h & 0x7fff) == 0 && s < 0) ||
                (n & 0x8000) != (h & 0x8000))
                continue;
            const double dn = fabs(fp16_value(n) - x);
            if (dn < d || (dn == d && (h & 1))) {
                snprintf(why, len, "fp16(%.9g) = %04x, but %04x is nearer or even", x, h, n);
                return false;
            }
        }
    }
    /* Midpoints: between 1 and 1 + 2^-10 (to 1), 1 + 2^-10 and 1 + 2^-9 (up). */
    const float mids[4] = { 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f, 0x1p-25f };
    const uint16_t fp16_want[4] = { 0x3c00, 0x3c02, 0x7c00, 0x0000 };
    for (int i = 0; i < 4; i++)
        if (attn_f32_to_f16(mids[i]) != fp16_want[i]) {
            snprintf(why, len, "fp16(%.9g) = %04x, not %04x", mids[i], attn_f32_to_f16(mids[i]),
                     fp16_want[i]);
            return false;
        }
    const float bmid[3] = { 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 0x1.fffffep127f };
    const uint16_t bf16_want[3] = { 0x3f80, 0x3f82, 0x7f80 };
    for (int i = 0; i < 3; i++)
        if (attn_f32_to_bf16(bmid[i]) != bf16_want[i]) {
            snprintf(why, len, "bf16(%.9g) = %04x, not %04x", bmid[i], attn_f32_to_bf16(bmid[i]),
                     bf16_want[i]);
            return false;
        }
    if (!isnan(attn_bf16_to_f32(attn_f32_to_bf16(NAN))) ||
        !isnan(attn_f16_to_f32(attn_f32_to_f16(NAN))) ||
        attn_f16_to_f32(attn_f32_to_f16(-INFINITY)) != -INFINITY) {
        snprintf(why, len, "NaN or -inf did not survive a round trip");
        return false;
    }
    /* bf16 of random floats: within half an ulp of bf16 (8 bits of
     * precision: 2^(e - 8) in the binade [2^e, 2^(e+1))). */
    for (int t = 0; t < 100000; t++) {
        const float x = ldexpf(uniform(1, 2), (int)(next32() % 200) - 100);
        const double r = attn_bf16_to_f32(attn_f32_to_bf16(x));
        int e;
        frexp(x, &e);
        if (fabs(r - x) > ldexp(1.0, e - 1 - 8)) {
            snprintf(why, len, "bf16(%.9g) = %.9g, more than half an ulp away", x, r);
            return false;
        }
    }
    return true;
}

/* ---- driver ---------------------------------------------------------------------- */

static void test_isa(const attn_kernels *kr, const attn_kernels *c)
{
    const char *name = attn_isa_name(kr->isa);
    char why[256] = "";
    bool ok = true;

    /* Rows 1..25 cover two register tiles of either height (6; 12 for a
     * tile one vector wide) and every remainder; queries 1..81 every lane
     * tail of 8- and 16-wide vectors and of 64-wide tiles; d = 20 a step of
     * 16 columns and a shorter one where decoding's prefetches (odd nk)
     * split the columns. */
    static const int dks[] = { 1, 3, 16, 20, 64 };
    for (int nk = 1; ok && nk <= 25; nk++)
        for (int nq = 1; ok && nq <= 81; nq++)
            for (size_t d = 0; ok && d < sizeof(dks) / sizeof(dks[0]); d++)
                ok = check_qk(kr, c, nk, nq, dks[d], why, sizeof(why));
    if (!tap_ok(ok, "qk_%s matches qk_c, every tail, guarded", name))
        tap_diag("%s", why);

    /* qk_kbf16: qk's tails; d odd and even, a line of 32 bf16 values and
     * parts of one (its prefetches step a line at a time). */
    if (kr->qk_kbf16 != c->qk_kbf16) {
        ok = true;
        static const int kdks[] = { 1, 2, 3, 20, 33, 64 };
        for (int nk = 1; ok && nk <= 25; nk++)
            for (int nq = 1; ok && nq <= 81; nq++)
                for (size_t d = 0; ok && d < sizeof(kdks) / sizeof(kdks[0]); d++)
                    ok = check_qk_kbf16(kr, nk, nq, kdks[d], why, sizeof(why));
        if (!tap_ok(ok, "qk_kbf16_%s is qk_%s on the widened rows, bit for bit: every tail, "
                        "+-0, subnormals, +-inf, guarded", name, name))
            tap_diag("%s", why);
    } else {
        tap_skip("this ISA's qk_kbf16 is C's (checked against qk_c above); the tiled backend "
                 "widens bf16 K for its qk instead", "qk_kbf16_%s", name);
    }

    /* qk_exp: qk's tails, and a NaN score. */
    if (kr->qk_exp) {
        ok = true;
        static const int edks[] = { 1, 16, 20, 64 };
        for (int nk = 1; ok && nk <= 25; nk++)
            for (int nq = 1; ok && nq <= 81; nq++)
                for (size_t d = 0; ok && d < sizeof(edks) / sizeof(edks[0]); d++)
                    ok = check_qk_exp(kr, c, nk, nq, edks[d], (nk + nq) % 7 == 0, why,
                                      sizeof(why));
        if (!tap_ok(ok, "qk_exp_%s matches qk_exp_c: every tail, NaN scores, guarded", name))
            tap_diag("%s", why);
    } else {
        tap_skip("this ISA has no qk_exp; the tiled backend runs qk and softmax there",
                 "qk_exp_%s", name);
    }

    /* Keys 1..40 and queries 1..17 (decoding tiles of up to 16 columns, in
     * blocks of 4 x 4 and every remainder); d every lane tail. */
    ok = true;
    static const int rdks[] = { 1, 7, 16, 17, 64, 100, 128 };
    for (int nk = 1; ok && nk <= 40; nk++)
        for (int nq = 1; ok && nq <= 17; nq++)
            for (size_t d = 0; ok && d < sizeof(rdks) / sizeof(rdks[0]); d++)
                ok = check_qk_rows(kr, c, nk, nq, rdks[d], why, sizeof(why));
    if (!tap_ok(ok, "qk_rows_%s matches qk_rows_c and the exact dot products, every tail, "
                "guarded", name))
        tap_diag("%s", why);

    /* Queries 1..40 and d: every tail of 16 x 16 blocks, two blocks and more. */
    ok = true;
    static const int pdks[] = { 1, 7, 16, 17, 33, 64, 128 };
    for (int nq = 1; ok && nq <= 40; nq++)
        for (size_t d = 0; ok && d < sizeof(pdks) / sizeof(pdks[0]); d++)
            ok = check_pack_qt(kr, nq, pdks[d], why, sizeof(why));
    if (!tap_ok(ok, "pack_qt_%s: scale * Q transposed exactly, every tail, guarded", name))
        tap_diag("%s", why);

    ok = true;
    for (int nk = 1; ok && nk <= 13; nk++)
        for (int nq = 1; ok && nq <= 81; nq++)
            for (int kind = FIRST_BLOCK; ok && kind <= EXTREME; kind++)
                for (int masked = 0; ok && masked < 2; masked++)
                    ok = check_softmax(kr, c, nk, nq, masked, (sm_kind)kind, why, sizeof(why));
    /* decoding's tiles: few queries (AVX-512 takes up to 8 several keys a
       vector), whole tiles of keys and their tails */
    static const int dnk[] = { 16, 47, 48, 49, 64, 192 };
    for (size_t x = 0; ok && x < sizeof(dnk) / sizeof(dnk[0]); x++)
        for (int nq = 1; ok && nq <= 17; nq++)
            for (int kind = FIRST_BLOCK; ok && kind <= EXTREME; kind++)
                for (int masked = 0; ok && masked < 2; masked++)
                    ok = check_softmax(kr, c, dnk[x], nq, masked, (sm_kind)kind, why,
                                       sizeof(why));
    if (!tap_ok(ok, "softmax_%s matches softmax_c: masks, first and later blocks, "
                "logits to 1.5e4, decoding's few queries, guarded", name))
        tap_diag("%s", why);

    ok = true;
    for (int rows = 1; ok && rows <= 4; rows++)
        for (int n = 1; ok && n <= 81; n++)
            for (int masked = 0; ok && masked < 2; masked++)
                ok = check_softmax_rows(kr, c, rows, n, masked, why, sizeof(why));
    if (!tap_ok(ok, "softmax_rows_%s matches softmax_rows_c: masks, logits to 1.5e4, guarded",
                name))
        tap_diag("%s", why);

    ok = true;
    static const int nks[] = { 1, 5, 17 };
    for (int nq = 1; ok && nq <= 13; nq++)
        for (int dv = 1; ok && dv <= 81; dv++)
            for (size_t j = 0; ok && j < 3; j++)
                ok = check_pv(kr, c, nq, nks[j], dv, why, sizeof(why));
    if (!tap_ok(ok, "pv_%s matches pv_c, every tail, guarded", name))
        tap_diag("%s", why);
}

/* exp2 of one version: the edge cases exactly, the rest within 4 ulp
 * (a degree-6 minimax polynomial evaluated in float). */
static void test_exp2(const attn_kernels *kr)
{
    const char *name = attn_isa_name(kr->isa);
    char why[256] = "";
    tap_ok(exp2_edges(kr, why, sizeof(why)), "exp2_%s: 0, integers exactly, x < -126 and -inf to [0, 2^-126], NaN%s%s",
           name, why[0] ? ": " : "", why);
    float wx = 0;
    const double e = exp2_max_ulp(kr, -126.0f, 0.0f, &wx);
    tap_ok(e <= 4.0, "exp2_%s within 4 ulp on [-126, 0]", name);
    tap_diag("exp2_%s: max error %.2f ulp (at x = %.9g)", name, e, wx);
}

/* A mods whose window starts one key late. */
static decl_mods_fn(mods_window_late)
{
    int b[64];
    for (int i = 0; i < nq && i < 64; i++)
        b[i] = beg ? beg[i] + 1 : 0;
    attn_kernels_for(ATTN_ISA_C)->mods(st, st_stride, nk, nq, j0, cap, slope, pos,
                                       beg ? b : NULL);
}

/* A mods that caps with the wrong sign for negative scores. */
static decl_mods_fn(mods_cap_abs)
{
    attn_kernels_for(ATTN_ISA_C)->mods(st, st_stride, nk, nq, j0, cap, slope, pos, beg);
    for (int j = 0; cap > 0 && j < nk; j++)
        for (int i = 0; i < nq; i++)
            st[j * st_stride + i] = fabsf(st[j * st_stride + i]);
}

/* A planted bug must be caught: a qk that drops the last query of a tile. */
static decl_qk_fn(qk_drops_last_query)
{
    attn_kernels_for(ATTN_ISA_C)->qk(st, st_stride, k, k_stride, qt, qt_stride, nk,
                                     nq > 1 ? nq - 1 : nq, dk, pf);
}

/* ... a qk_kbf16 that pairs each column of Q^T with K's next value (the
 * upper half of the 32 bits at the value, not of those before it) ... */
static decl_qk_kbf16_fn(qk_kbf16_next_value)
{
    (void)pf;
    for (int j = 0; j < nk; j++)
        for (int i = 0; i < nq; i++) {
            float s = 0.0f;
            for (int c = 0; c < dk; c++)
                s += attn_bf16_to_f32(k[j * k_stride + (c + 1 < dk ? c + 1 : c)]) *
                     qt[c * qt_stride + i];
            st[j * st_stride + i] = s;
        }
}

/* ... a qk_rows that pairs each key with the next query's row ... */
static decl_qk_rows_fn(qk_rows_wrong_query)
{
    attn_kernels_for(ATTN_ISA_C)->qk_rows(st, st_stride, k, k_stride, q, q_stride, nk, nq, dk,
                                          pf);
    if (nq > 1)
        attn_kernels_for(ATTN_ISA_C)->qk_rows(st, st_stride, k, k_stride, q + q_stride,
                                              q_stride, nk, 1, dk, pf);
}

/* ... and one that writes one lane past the tile. */
static decl_pv_fn(pv_writes_past)
{
    attn_kernels_for(ATTN_ISA_C)->pv(o, o_stride, pt, pt_stride, v, v_stride, alpha, nq, nk, dv,
                                     pf);
    o[(ptrdiff_t)(nq - 1) * o_stride + dv] = 0.0f;
}

/* ... and a softmax that ignores the visibility mask. */
static decl_softmax_fn(softmax_ignores_mask)
{
    (void)end;
    attn_kernels_for(ATTN_ISA_C)->softmax(st, st_stride, nk, nq, NULL, m, l, alpha);
}

/* ... and a Q^T packing that swaps the last two queries' columns ... */
static decl_pack_qt_fn(pack_qt_swaps_last)
{
    attn_kernels_for(ATTN_ISA_C)->pack_qt(qt, qt_stride, q, q_stride, nq, dk, scale);
    if (nq > 1)
        for (int c = 0; c < dk; c++) {
            const float x = qt[c * qt_stride + nq - 1];
            qt[c * qt_stride + nq - 1] = qt[c * qt_stride + nq - 2];
            qt[c * qt_stride + nq - 2] = x;
        }
}

/* ... a qk_exp that takes each column's weights against the next column's m ... */
static decl_qk_exp_fn(qk_exp_next_m)
{
    attn_kernels_for(ATTN_ISA_C)->qk_exp(st, st_stride, k, k_stride, qt, qt_stride, nk, nq, dk,
                                         m + 1, mx, sum);
}

/* ... and one that leaves a tile's last key out of the sums. */
static decl_qk_exp_fn(qk_exp_sum_drops_last)
{
    attn_kernels_for(ATTN_ISA_C)->qk_exp(st, st_stride, k, k_stride, qt, qt_stride, nk, nq, dk,
                                         m, mx, sum);
    for (int i = 0; i < nq; i++)
        sum[i] -= st[(ptrdiff_t)(nk - 1) * st_stride + i];
}

/* ... and one that leaves a tile's last key out of l (a tail bug). */
static decl_softmax_fn(softmax_drops_last)
{
    const attn_kernels *c = attn_kernels_for(ATTN_ISA_C);
    c->softmax(st, st_stride, nk - 1, nq, end, m, l, alpha);
    for (int i = 0; i < nq; i++)
        st[(ptrdiff_t)(nk - 1) * st_stride + i] = 0.0f;
}

/* ... and a row softmax that leaves masked keys as they were. */
static decl_softmax_rows_fn(softmax_rows_keeps_masked)
{
    float *copy = malloc((size_t)rows * (size_t)stride * sizeof(float));
    memcpy(copy, s, (size_t)rows * (size_t)stride * sizeof(float));
    attn_kernels_for(ATTN_ISA_C)->softmax_rows(s, stride, rows, n, end);
    for (int r = 0; r < rows; r++)
        for (int j = end[r] < 0 ? 0 : end[r]; j < n; j++)
            s[r * stride + j] = copy[r * stride + j];
    free(copy);
}

/* ... a widening that reads every 16-bit value as fp16 ... */
static decl_cvt_rows_fn(cvt_rows_always_fp16)
{
    (void)bf16;
    attn_kernels_for(ATTN_ISA_C)->cvt_rows(dst, dst_stride, src, src_stride, rows, cols, 0, pf);
}

/* ... a pv16 that reads bf16 V as fp16 ... */
static decl_pv16_fn(pv16_always_fp16)
{
    (void)bf16;
    attn_kernels_for(ATTN_ISA_C)->pv16(o, o_stride, pt, pt_stride, v, v_stride, alpha, nq, nk,
                                       dv, 0, pf);
}

/* ... a qk_bf16 that leaves out an odd dk's last d ... */
static decl_qk_bf16_fn(qk_bf16_drops_odd_d)
{
    attn_kernels_for(ATTN_ISA_C)->qk_bf16(st, st_stride, k, k_stride, qt, qt_stride, nk, nq,
                                          dk & 1 && dk > 1 ? dk - 1 : dk, scale);
}

/* ... a decoding qk_rows_bf16 that leaves the scale out ... */
static decl_qk_rows_bf16_fn(qk_rows_bf16_unscaled)
{
    (void)scale;
    attn_kernels_for(ATTN_ISA_C)->qk_rows_bf16(st, st_stride, k, k_stride, q, q_stride, nk, nq,
                                               dk, 1.0f, pf);
}

/* ... a P packing that truncates instead of rounding ... */
static decl_pack_p_bf16_fn(pack_p_truncates)
{
    for (int j = 0; j < nk; j += 2)
        for (int i = 0; i < nq; i++) {
            uint32_t a, b = 0;
            memcpy(&a, &pt[j * pt_stride + i], 4);
            if (j + 1 < nk)
                memcpy(&b, &pt[(j + 1) * pt_stride + i], 4);
            pp[j / 2 * pp_stride + i] = (a >> 16) | (b & 0xffff0000u);
        }
}

/* ... a read-back that applies each block's scale to the next block ... */
static decl_dequant_rows_fn(dequant_next_scale)
{
    attn_kernels_for(ATTN_ISA_C)->dequant_rows(dst, dst_stride, src, src_stride, rows, cols, fmt,
                                               scale, pf);
    if (fmt != ATTN_KVQ_Q8_0)
        return;
    for (int r = 0; r < rows; r++)
        for (int b = 1; b < cols / ATTN_QBLOCK; b++) {
            uint16_t h0, h1;
            memcpy(&h0, src + r * src_stride + (b - 1) * 34, 2);
            memcpy(&h1, src + r * src_stride + b * 34, 2);
            for (int j = 0; j < ATTN_QBLOCK; j++)
                dst[r * dst_stride + b * ATTN_QBLOCK + j] *=
                    attn_f16_to_f32(h0) / attn_f16_to_f32(h1);
        }
}

/* ... a q4_0 read-back with the two nibbles of each byte swapped ... */
static decl_dequant_rows_fn(dequant_nibbles_swapped)
{
    attn_kernels_for(ATTN_ISA_C)->dequant_rows(dst, dst_stride, src, src_stride, rows, cols, fmt,
                                               scale, pf);
    if (fmt != ATTN_KVQ_Q4_0)
        return;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c += ATTN_QBLOCK)
            for (int j = 0; j < 16; j++) {
                float *a = &dst[r * dst_stride + c + j], t = *a;
                *a = a[16];
                a[16] = t;
            }
}

/* ... a pv_q that reads q4_0's nibbles the wrong way round ... */
static decl_pv_q_fn(pv_q_nibbles_swapped)
{
    if (fmt != ATTN_KVQ_Q4_0) {
        attn_kernels_for(ATTN_ISA_C)->pv_q(o, o_stride, pt, pt_stride, v, v_stride, alpha, nq, nk,
                                           dv, fmt, scale, pf);
        return;
    }
    for (int i = 0; i < nq; i++)
        for (int c = 0; c < dv; c++) {
            float a = o[i * o_stride + c] * alpha[i];
            for (int j = 0; j < nk; j++) {
                const size_t sw = (size_t)(c % 32 < 16 ? c + 16 : c - 16);
                a += pt[j * pt_stride + i] * attn_kvq_value(v + j * v_stride, sw, fmt, scale);
            }
            o[i * o_stride + c] = a;
        }
}

/* ... a qk_rows_i8 that takes every block's Q scale from block 0, and
 * one that reads q4_0's nibbles the wrong way round ... */
static decl_qk_rows_i8_fn(qk_rows_i8_first_scale)
{
    uint8_t *q2 = malloc((size_t)nq * q_stride);
    memcpy(q2, q, (size_t)nq * q_stride);
    for (int i = 0; i < nq; i++)
        for (int b = 1; b < dk / ATTN_QBLOCK; b++)
            memcpy(q2 + i * q_stride + b * 34, q2 + i * q_stride, 2);
    attn_kernels_for(ATTN_ISA_C)->qk_rows_i8(st, st_stride, k, k_stride, q2, q_stride, nk, nq,
                                             dk, fmt, scale, pf);
    free(q2);
}

static decl_qk_rows_i8_fn(qk_rows_i8_nibbles_swapped)
{
    uint8_t *k2 = malloc((size_t)nk * k_stride);
    memcpy(k2, k, (size_t)nk * k_stride);
    for (int j = 0; fmt == ATTN_KVQ_Q4_0 && j < nk; j++)
        for (int b = 0; b < dk / ATTN_QBLOCK; b++)
            for (int c = 0; c < 16; c++) {
                uint8_t *x = k2 + j * k_stride + b * 18 + 2 + c;
                *x = (uint8_t)(*x << 4 | *x >> 4);
            }
    attn_kernels_for(ATTN_ISA_C)->qk_rows_i8(st, st_stride, k2, k_stride, q, q_stride, nk, nq,
                                             dk, fmt, scale, pf);
    free(k2);
}

/* ... a pv_rows_bf16 that keeps P in fp32 (pv16's sums: the weights not
 * rounded to bf16 as the contract says) ... */
static decl_pv_rows_bf16_fn(pv_rows_bf16_fp32_p)
{
    attn_kernels_for(ATTN_ISA_C)->pv16(o, o_stride, pt, pt_stride, v, v_stride, alpha, nq, nk, dv,
                                       1, pf);
}

/* ... and a pv_bf16 that stops one pair of keys short. */
static decl_pv_bf16_fn(pv_bf16_short)
{
    attn_kernels_for(ATTN_ISA_C)->pv_bf16(o, o_stride, pp, pp_stride, vp, vp_stride, alpha, nq,
                                          nk > 2 ? nk - 2 : nk, dv);
}

static void test_planted(const attn_kernels *c)
{
    char why[320];
    attn_kernels bad = *c;
    bad.qk = qk_drops_last_query;
    tap_ok(!check_qk(&bad, c, 7, 33, 16, why, sizeof(why)),
           "the checker rejects a qk that leaves a query out");
    bool ok = true;
    for (int nk = 1; ok && nk <= 13; nk += 3)
        for (int nq = 1; ok && nq <= 33; nq += 4)
            ok = check_qk_kbf16(c, nk, nq, nk + nq, why, sizeof(why));
    if (!tap_ok(ok, "qk_kbf16_c is qk_c on the widened rows, bit for bit"))
        tap_diag("%s", why);
    bad = *c;
    bad.qk_kbf16 = qk_kbf16_next_value;
    tap_ok(!check_qk_kbf16(&bad, 5, 16, 20, why, sizeof(why)),
           "the checker rejects a qk_kbf16 that reads K's next value");
    bad = *c;
    bad.qk_rows = qk_rows_wrong_query;
    tap_ok(!check_qk_rows(&bad, c, 17, 3, 20, why, sizeof(why)),
           "the checker rejects a qk_rows that scores a key against the wrong query");
    tap_ok(check_pack_qt(c, 21, 17, why, sizeof(why)) && check_pack_qt(c, 1, 1, why, sizeof(why)),
           "pack_qt_c: scale * Q transposed exactly, guarded");
    bad = *c;
    bad.pack_qt = pack_qt_swaps_last;
    tap_ok(!check_pack_qt(&bad, 21, 17, why, sizeof(why)),
           "the checker rejects a Q^T packing that swaps two queries");
    bad = *c;
    bad.pv = pv_writes_past;
    tap_ok(!check_pv(&bad, c, 5, 3, 20, why, sizeof(why)),
           "the checker rejects a pv that writes past its tile");
    bad = *c;
    bad.qk_exp = qk_exp_next_m;
    tap_ok(!check_qk_exp(&bad, c, 7, 20, 16, false, why, sizeof(why)),
           "the checker rejects a qk_exp that weighs a column against the next column's max");
    bad.qk_exp = qk_exp_sum_drops_last;
    tap_ok(!check_qk_exp(&bad, c, 7, 20, 16, false, why, sizeof(why)),
           "the checker rejects a qk_exp that leaves a tile's last key out of the sums");
    bad = *c;
    bad.softmax = softmax_ignores_mask;
    tap_ok(!check_softmax(&bad, c, 9, 20, true, LATER_BLOCK, why, sizeof(why)),
           "the checker rejects a softmax that ignores the mask");
    bad.softmax = softmax_drops_last;
    tap_ok(!check_softmax(&bad, c, 49, 4, false, LATER_BLOCK, why, sizeof(why)),
           "the checker rejects a softmax that leaves a decoding tile's last key out");
    bad = *c;
    bad.softmax_rows = softmax_rows_keeps_masked;
    tap_ok(!check_softmax_rows(&bad, c, 4, 30, true, why, sizeof(why)),
           "the checker rejects a row softmax that leaves masked keys");
    bad = *c;
    bad.cvt_rows = cvt_rows_always_fp16;
    tap_ok(!check_cvt_rows(&bad, 3, 17, true, why, sizeof(why)),
           "the checker rejects a widening that reads bf16 as fp16");
    bad = *c;
    bad.dequant_rows = dequant_next_scale;
    tap_ok(!check_dequant(&bad, 3, 128, ATTN_KVQ_Q8_0, why, sizeof(why)),
           "the checker rejects a q8_0 read-back that applies a block's scale to the next block");
    bad.dequant_rows = dequant_nibbles_swapped;
    tap_ok(!check_dequant(&bad, 3, 64, ATTN_KVQ_Q4_0, why, sizeof(why)),
           "the checker rejects a q4_0 read-back with each byte's nibbles swapped");
    bad = *c;
    bad.pv_q = pv_q_nibbles_swapped;
    tap_ok(!check_rows_q(&bad, c, 5, 3, 64, ATTN_KVQ_Q4_0, why, sizeof(why)),
           "the checker rejects a pv_q that reads q4_0's nibbles the wrong way round");
    bad = *c;
    bad.qk_rows_i8 = qk_rows_i8_first_scale;
    tap_ok(!check_rows_i8(&bad, c, 5, 3, 128, ATTN_KVQ_Q8_0, why, sizeof(why)),
           "the checker rejects a qk_rows_i8 that applies Q's first block's scale to every block");
    bad.qk_rows_i8 = qk_rows_i8_nibbles_swapped;
    tap_ok(!check_rows_i8(&bad, c, 5, 3, 64, ATTN_KVQ_Q4_0, why, sizeof(why)),
           "the checker rejects a qk_rows_i8 that reads q4_0's nibbles the wrong way round");
    bad = *c;
    bad.pv16 = pv16_always_fp16;
    tap_ok(!check_rows16(&bad, c, 9, 3, 20, true, why, sizeof(why)),
           "the checker rejects a pv16 that reads bf16 V as fp16");
    bad = *c;
    bad.qk_bf16 = qk_bf16_drops_odd_d;
    tap_ok(!check_qk_bf16(&bad, c, 7, 20, 33, false, why, sizeof(why)),
           "the checker rejects a qk_bf16 that leaves out an odd dk's last d");
    bad = *c;
    bad.qk_rows_bf16 = qk_rows_bf16_unscaled;
    tap_ok(!check_qk_bf16(&bad, c, 5, 4, 64, true, why, sizeof(why)),
           "the checker rejects a qk_rows_bf16 that leaves the scale out");
    bad = *c;
    bad.pack_p_bf16 = pack_p_truncates;
    tap_ok(!check_packs(&bad, c, 9, 16, why, sizeof(why)),
           "the checker rejects a P packing that truncates to bf16 instead of rounding");
    bad = *c;
    bad.mods = mods_window_late;
    double worst = 0.0;
    tap_ok(!check_mods(&bad, 5, 20, 0.0f, false, true, &worst, why, sizeof(why)),
           "the checker rejects a mods whose window starts one key late");
    bad.mods = mods_cap_abs;
    tap_ok(!check_mods(&bad, 5, 20, 3.0f, false, false, &worst, why, sizeof(why)),
           "the checker rejects a softcap that loses the sign");
    bad = *c;
    bad.pv_rows_bf16 = pv_rows_bf16_fp32_p;
    tap_ok(!check_pv_rows_bf16(&bad, c, 4, 9, 64, why, sizeof(why)),
           "the checker rejects a pv_rows_bf16 that leaves P in fp32");
    bad = *c;
    bad.pv_bf16 = pv_bf16_short;
    tap_ok(!check_pv_bf16(&bad, c, 5, 5, 20, why, sizeof(why)),
           "the checker rejects a pv_bf16 that stops a pair of keys short");
    why[0] = '\0';
    if (!tap_ok(check_half(why, sizeof(why)), "half.h: every fp16 widens exactly and narrows "
                "back; fp16 and bf16 narrowing to nearest, ties to even, overflow to inf, NaN "
                "kept"))
        tap_diag("%s", why);
}

/* ---- --bench ----------------------------------------------------------------------- */

/* Each usable ISA's best time for one call of fn (0 where the CPU or build
 * lacks the ISA): a repetition of each ISA in every round, the ISAs in an
 * order rotated by one from the round before, so that a machine whose
 * speed drifts (a VM's neighbours) moves every ISA's best alike, where
 * repetitions of one ISA after another put the drift between them. */
static void best_by_isa(void (*fn)(const attn_kernels *, void *), void *ctx,
                        double best[ATTN_ISA_COUNT])
{
    long iters[ATTN_ISA_COUNT] = { 0 };
    for (int isa = 0; isa < ATTN_ISA_COUNT; isa++) {
        best[isa] = 0;
        const attn_kernels *kr = isa >= ATTN_ISA_C ? attn_kernels_for((attn_isa)isa) : NULL;
        if (!kr)
            continue;
        iters[isa] = 1;
        for (;;) {
            const double t0 = attn_now();
            for (long i = 0; i < iters[isa]; i++)
                fn(kr, ctx);
            if (attn_now() - t0 > 0.02 || iters[isa] > (1L << 24))
                break;
            iters[isa] *= 2;
        }
        best[isa] = 1e30;
    }
    for (int r = 0; r < 7; r++)
        for (int k = 0; k < ATTN_ISA_COUNT; k++) {
            const int isa = (k + r) % ATTN_ISA_COUNT;
            if (!iters[isa])
                continue;
            const attn_kernels *kr = attn_kernels_for((attn_isa)isa);
            const double t0 = attn_now();
            for (long i = 0; i < iters[isa]; i++)
                fn(kr, ctx);
            const double t = (attn_now() - t0) / (double)iters[isa];
            best[isa] = t < best[isa] ? t : best[isa];
        }
}

/* --bench NAME...: only the kernels named (all without names). */
static char **bench_only;
static int bench_nonly;

static bool bench_wanted(const char *name)
{
    for (int i = 0; i < bench_nonly; i++)
        if (!strcmp(bench_only[i], name))
            return true;
    return bench_nonly == 0;
}

typedef struct bench_ctx {
    int nk, nq, d;
    float *st, *k, *qt, *v, *o, *m, *l, *alpha, *x, *mx, *sum;
} bench_ctx;

static void run_qk(const attn_kernels *kr, void *p)
{
    bench_ctx *b = p;
    kr->qk(b->st, b->nq, b->k, b->d, b->qt, b->nq, b->nk, b->nq, b->d, 0);
}

static void run_softmax(const attn_kernels *kr, void *p)
{
    bench_ctx *b = p;
    /* Scores drift down by one per call; m stays where it was. */
    kr->softmax(b->st, b->nq, b->nk, b->nq, NULL, b->m, b->l, b->alpha);
}

static void run_pv(const attn_kernels *kr, void *p)
{
    bench_ctx *b = p;
    kr->pv(b->o, b->d, b->st, b->nq, b->v, b->d, b->alpha, b->nq, b->nk, b->d, 0);
}

/* One key tile of the tiled backend's loop, as it runs there. */
static void run_step(const attn_kernels *kr, void *p)
{
    run_qk(kr, p);
    run_softmax(kr, p);
    run_pv(kr, p);
}

/* The same tile where the scores stay below the tiles' max before by less
 * than the lazy threshold: qk_exp (the weights in qk's epilogue), then pv.
 * Nothing at an ISA without qk_exp (its row is not printed). */
static void run_qk_exp(const attn_kernels *kr, void *p)
{
    bench_ctx *b = p;
    if (kr->qk_exp)
        kr->qk_exp(b->st, b->nq, b->k, b->d, b->qt, b->nq, b->nk, b->nq, b->d, b->m, b->mx,
                   b->sum);
}

static void run_step_exp(const attn_kernels *kr, void *p)
{
    run_qk_exp(kr, p);
    run_pv(kr, p);
}

static void run_pack_qt(const attn_kernels *kr, void *p)
{
    bench_ctx *b = p;
    kr->pack_qt(b->qt, b->nq, b->v, b->d, b->nq, b->d, 0.125f);
}

static void run_softmax_rows(const attn_kernels *kr, void *p)
{
    bench_ctx *b = p;
    kr->softmax_rows(b->st, b->nq, b->nk, b->nq, NULL);
}

static void run_exp2(const attn_kernels *kr, void *p)
{
    bench_ctx *b = p;
    kr->exp2(b->alpha, b->x, b->nk * b->nq);
}

/* The tiled backend's prefill key tile on a 1 MiB L2 (backends/tiled/plan.c). */
#define BENCH_KEYS 192

static int bench(void)
{
    static const struct { const char *name; void (*fn)(const attn_kernels *, void *); int flops; }
        ks[] = { { "qk", run_qk, 1 }, { "softmax", run_softmax, 0 }, { "pv", run_pv, 1 },
                 { "step", run_step, 2 }, { "qk_exp", run_qk_exp, 1 },
                 { "step_exp", run_step_exp, 2 }, { "pack_qt", run_pack_qt, 0 },
                 { "softmax_rows", run_softmax_rows, 0 }, { "exp2", run_exp2, 0 } };
    printf("kernel speed on one thread, tiles of the tiled backend in prefill (Br = 64\n"
           "queries, Bc = %d keys), every operand in L1 or L2; each ISA's best of 7\n"
           "rounds, every ISA once a round in a rotated order.\n"
           "GFLOP/s counts 2*d per score entry and product; step is qk, softmax and pv\n"
           "in a row, as one key tile of the backend's loop; step_exp is qk_exp and pv,\n"
           "the tile where the lazy rescale holds.\n\n",
           BENCH_KEYS);
    printf("%-12s %4s %-8s %12s %10s %9s\n", "kernel", "d", "isa", "ns/call", "GFLOP/s", "vs c");
    for (int d = 64; d <= 128; d *= 2) {
        bench_ctx b = { .nk = BENCH_KEYS, .nq = 64, .d = d };
        const size_t big = (size_t)BENCH_KEYS * 64 + (size_t)BENCH_KEYS * d;
        float *buf = attn_host_alloc(8 * big * sizeof(float));
        if (!buf)
            return 2;
        for (size_t i = 0; i < 8 * big; i++)
            buf[i] = uniform(-1, 0);
        b.st = buf; b.k = buf + big; b.qt = buf + 2 * big; b.v = buf + 3 * big;
        b.o = buf + 4 * big; b.m = buf + 5 * big; b.l = b.m + 64; b.alpha = buf + 6 * big;
        b.x = buf + 7 * big; b.mx = b.alpha + 64; b.sum = b.alpha + 128;
        for (int i = 0; i < 64; i++) {
            b.m[i] = 0.0f;
            b.l[i] = 1.0f;
        }
        for (size_t kk = 0; kk < sizeof(ks) / sizeof(ks[0]); kk++) {
            if ((kk >= 7 && d != 64) || !bench_wanted(ks[kk].name))
                continue;
            double best[ATTN_ISA_COUNT];
            best_by_isa(ks[kk].fn, &b, best);
            const double tc = best[ATTN_ISA_C];
            for (int isa = ATTN_ISA_C; isa < ATTN_ISA_COUNT; isa++) {
                const attn_kernels *kr = best[isa] ? attn_kernels_for((attn_isa)isa) : NULL;
                if (kr && !kr->qk_exp && (ks[kk].fn == run_qk_exp || ks[kk].fn == run_step_exp))
                    continue;
                if (!best[isa]) {
                    printf("%-12s %4d %-8s %12s   (not usable on this CPU or build)\n", ks[kk].name,
                           d, attn_isa_name((attn_isa)isa), "-");
                    continue;
                }
                const double t = best[isa];
                char gf[32] = "-";
                if (ks[kk].flops)
                    snprintf(gf, sizeof(gf), "%.1f",
                             ks[kk].flops * 2.0 * b.nq * b.nk * d / t * 1e-9);
                printf("%-12s %4d %-8s %12.1f %10s %8.2fx\n", ks[kk].name, d, attn_isa_name((attn_isa)isa),
                       t * 1e9, gf, tc / t);
            }
        }
        attn_host_free(buf);
    }
    return 0;
}

/* Decoding tiles: cols query rows (G heads x Nq) against DEC_KEYS keys of
 * one K/V head, d = 128, K and V in fp32 or bf16, every operand in L1 or
 * L2 (a run streams K and V from memory; this is the arithmetic alone). */
#define DEC_KEYS 48
#define DEC_D 128
#define DEC_PF_MAX 256   /* the buffer's room past K and V for prefetches */

typedef struct dec_ctx {
    int cols;
    float *st, *k, *q, *qt, *v, *o, *alpha;
    float *kw;          /* kh widened (cvt+qk) */
    uint16_t *kh, *vh;
    uint8_t *kq, *vq;   /* K and V in format fmt, rows of qrow bytes */
    uint8_t *q8;        /* Q's rows in q8_0 */
    attn_kvq fmt;
    ptrdiff_t qrow;
} dec_ctx;

static void dec_qk_rows(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    kr->qk_rows(b->st, 16 * ((b->cols + 15) / 16), b->k, DEC_D, b->q, DEC_D, DEC_KEYS, b->cols,
                DEC_D, 1);
}

static void dec_qk_rows16(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    kr->qk_rows16(b->st, 16 * ((b->cols + 15) / 16), b->kh, DEC_D, b->q, DEC_D, DEC_KEYS,
                  b->cols, DEC_D, 1, 1);
}

static void dec_qk(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    const int brp = 16 * ((b->cols + 15) / 16);
    kr->qk(b->st, brp, b->k, DEC_D, b->qt, brp, DEC_KEYS, b->cols, DEC_D, 0);
}

/* qk, pv and pv16 as decoding calls them on a tile streamed from memory:
 * prefetching the lines as far ahead as pf_keys fp32 rows (the bytes the
 * tiled backend gives 16-bit rows too; the buffer runs on past the last
 * of them) among their FMAs. */
static ptrdiff_t dec_pf(const attn_kernels *kr)
{
    const int keys = kr->pf_keys < DEC_PF_MAX ? kr->pf_keys : DEC_PF_MAX;
    return (ptrdiff_t)keys * DEC_D * (ptrdiff_t)sizeof(float);
}

static void dec_qk_pf(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    const int brp = 16 * ((b->cols + 15) / 16);
    kr->qk(b->st, brp, b->k, DEC_D, b->qt, brp, DEC_KEYS, b->cols, DEC_D,
           dec_pf(kr));
}

/* Q.K^T of a bf16 K tile for the outer product, the tiled backend's two
 * ways: qk_kbf16 reading the rows in place (prefetching as qk+pf does), and
 * cvt_rows widening 12 rows at a time (with its own prefetches), each
 * followed by qk on them (keys.c, qk_widened). */
static void dec_qk_kbf16(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    const int brp = 16 * ((b->cols + 15) / 16);
    kr->qk_kbf16(b->st, brp, b->kh, DEC_D, b->qt, brp, DEC_KEYS, b->cols, DEC_D, dec_pf(kr));
}

static void dec_cvt_qk(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    const int brp = 16 * ((b->cols + 15) / 16);
    for (int j = 0; j < DEC_KEYS; j += 12) {
        const int r = DEC_KEYS - j < 12 ? DEC_KEYS - j : 12;
        kr->cvt_rows(b->kw + j * DEC_D, DEC_D, b->kh + j * DEC_D, DEC_D, r, DEC_D, 1, dec_pf(kr));
        kr->qk(b->st + j * brp, brp, b->kw + j * DEC_D, DEC_D, b->qt, brp, r, b->cols, DEC_D, 0);
    }
}

static void dec_pv(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    kr->pv(b->o, DEC_D, b->st, 16 * ((b->cols + 15) / 16), b->v, DEC_D, b->alpha, b->cols,
           DEC_KEYS, DEC_D, 0);
}

static void dec_pv_pf(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    kr->pv(b->o, DEC_D, b->st, 16 * ((b->cols + 15) / 16), b->v, DEC_D, b->alpha, b->cols,
           DEC_KEYS, DEC_D, dec_pf(kr));
}

static void dec_pv16(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    kr->pv16(b->o, DEC_D, b->st, 16 * ((b->cols + 15) / 16), b->vh, DEC_D, b->alpha, b->cols,
             DEC_KEYS, DEC_D, 1, 0);
}

static void dec_pv16_pf(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    kr->pv16(b->o, DEC_D, b->st, 16 * ((b->cols + 15) / 16), b->vh, DEC_D, b->alpha, b->cols,
             DEC_KEYS, DEC_D, 1, dec_pf(kr));
}

static void dec_pv_rows_bf16(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    kr->pv_rows_bf16(b->o, DEC_D, b->st, 16 * ((b->cols + 15) / 16), b->vh, DEC_D, b->alpha,
                     b->cols, DEC_KEYS, DEC_D, 0);
}

/* The online softmax of a decoding tile, in place (its statistics stay
 * finite call after call: P in [0, 1] under m, l growing by at most the
 * keys each time). */
static void dec_softmax(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    static float m[64], l[64], a[64];
    kr->softmax(b->st, 16 * ((b->cols + 15) / 16), DEC_KEYS, b->cols, NULL, m, l, a);
}

static void dec_qk_rows_q(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    kr->qk_rows_q(b->st, 16 * ((b->cols + 15) / 16), b->kq, b->qrow, b->q, DEC_D, DEC_KEYS,
                  b->cols, DEC_D, b->fmt, 0.01f, 1);
}

static void dec_pv_q(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    kr->pv_q(b->o, DEC_D, b->st, 16 * ((b->cols + 15) / 16), b->vq, b->qrow, b->alpha, b->cols,
             DEC_KEYS, DEC_D, b->fmt, 0.01f, 1);
}

static void dec_qk_rows_i8(const attn_kernels *kr, void *p)
{
    dec_ctx *b = p;
    kr->qk_rows_i8(b->st, 16 * ((b->cols + 15) / 16), b->kq, b->qrow, b->q8,
                   (ptrdiff_t)attn_kvq_row_bytes(ATTN_KVQ_Q8_0, DEC_D), DEC_KEYS, b->cols, DEC_D,
                   b->fmt, 0.01f, 1);
}

/* A quantized tile read back: DEC_KEYS rows of DEC_D values per format. */
typedef struct deq_ctx {
    float *dst;
    const uint8_t *src;
    size_t rb;
    attn_kvq fmt;
} deq_ctx;

static void deq_rows(const attn_kernels *kr, void *p)
{
    const deq_ctx *b = p;
    kr->dequant_rows(b->dst, DEC_D, b->src, (ptrdiff_t)b->rb, DEC_KEYS, DEC_D, b->fmt, 0.01f,
                     dec_pf(kr));
}

static void bench_dequant(void)
{
    if (!bench_wanted("dequant_rows"))
        return;
    printf("\nquantized K/V tiles read back to fp32 (dequant_rows): %d rows of d = %d, in L1;\n"
           "GB/s counts the bytes read.\n\n", DEC_KEYS, DEC_D);
    printf("%-12s %-8s %-8s %12s %10s %9s\n", "kernel", "format", "isa", "ns/call", "GB/s", "vs c");
    static const char *const names[ATTN_KVQ_COUNT] = { "q8_0", "q4_0", "fp8e4m3", "fp8e5m2" };
    float *x = attn_host_alloc((size_t)DEC_KEYS * DEC_D * sizeof(float));
    float *dst = attn_host_alloc((size_t)DEC_KEYS * DEC_D * sizeof(float));
    uint8_t *src = attn_host_alloc((size_t)DEC_KEYS * DEC_D * 2);
    if (!x || !dst || !src)
        return;
    for (size_t i = 0; i < (size_t)DEC_KEYS * DEC_D; i++)
        x[i] = uniform(-3, 3);
    for (int f = 0; f < ATTN_KVQ_COUNT; f++) {
        const size_t rb = attn_kvq_row_bytes((attn_kvq)f, DEC_D);
        for (int r = 0; r < DEC_KEYS; r++)
            attn_kvq_quantize_row(src + r * rb, x + r * DEC_D, DEC_D, (attn_kvq)f, 0.01f);
        deq_ctx b = { dst, src, rb, (attn_kvq)f };
        double bests[ATTN_ISA_COUNT];
        best_by_isa(deq_rows, &b, bests);
        const double tc = bests[ATTN_ISA_C];
        for (int isa = ATTN_ISA_C; isa < ATTN_ISA_COUNT; isa++) {
            if (!bests[isa])
                continue;
            const double best = bests[isa];
            printf("%-12s %-8s %-8s %12.1f %10.1f %8.2fx\n", "dequant_rows", names[f],
                   attn_isa_name((attn_isa)isa), best * 1e9, (double)rb * DEC_KEYS / best * 1e-9,
                   tc / best);
        }
    }
    attn_host_free(x);
    attn_host_free(dst);
    attn_host_free(src);
}

static void bench_decode(void)
{
    static const struct { const char *name; void (*fn)(const attn_kernels *, void *); }
        ks[] = { { "qk_rows", dec_qk_rows }, { "qk_rows16", dec_qk_rows16 }, { "qk", dec_qk },
                 { "qk+pf", dec_qk_pf }, { "qk_kbf16", dec_qk_kbf16 },
                 { "cvt+qk", dec_cvt_qk }, { "pv", dec_pv }, { "pv+pf", dec_pv_pf },
                 { "pv16", dec_pv16 }, { "pv16+pf", dec_pv16_pf },
                 { "pv_rows_bf16", dec_pv_rows_bf16 }, { "softmax", dec_softmax } };
    printf("\ndecoding tiles: cols query rows (G heads x Nq) against %d keys, d = %d;\n"
           "16-bit kernels on bf16 K or V; operands in L1 or L2 (softmax: the online\n"
           "softmax step of the tile's scores, no GFLOP/s).\n\n", DEC_KEYS, DEC_D);
    printf("%-12s %4s %-8s %12s %10s %9s\n", "kernel", "cols", "isa", "ns/call", "GFLOP/s", "vs c");
    const size_t n = (size_t)DEC_KEYS * DEC_D + 64 * DEC_D;
    float *buf = attn_host_alloc((9 * n + DEC_PF_MAX * DEC_D) * sizeof(float));
    if (!buf)
        return;
    for (size_t i = 0; i < 9 * n + DEC_PF_MAX * DEC_D; i++)
        buf[i] = uniform(-1, 0);
    dec_ctx b = { .st = buf, .k = buf + n, .q = buf + 2 * n, .qt = buf + 3 * n, .v = buf + 4 * n,
                  .o = buf + 5 * n, .alpha = buf + 6 * n };
    b.kh = (uint16_t *)(buf + 7 * n);
    b.vh = (uint16_t *)(buf + 8 * n);
    b.kw = attn_host_alloc((size_t)DEC_KEYS * DEC_D * sizeof(float));
    if (!b.kw) {
        attn_host_free(buf);
        return;
    }
    for (size_t i = 0; i < (size_t)DEC_KEYS * DEC_D; i++) {
        b.kh[i] = attn_f32_to_bf16(b.k[i]);
        b.vh[i] = attn_f32_to_bf16(b.v[i]);
    }
    for (int i = 0; i < 64; i++)
        b.alpha[i] = 1.0f;
    static const int cols[] = { 4, 8, 16, 32 };
    for (size_t cc = 0; cc < sizeof(cols) / sizeof(cols[0]); cc++) {
        b.cols = cols[cc];
        for (size_t kk = 0; kk < sizeof(ks) / sizeof(ks[0]); kk++) {
            if (!bench_wanted(ks[kk].name))
                continue;
            double best[ATTN_ISA_COUNT];
            best_by_isa(ks[kk].fn, &b, best);
            const double tc = best[ATTN_ISA_C];
            for (int isa = ATTN_ISA_C; isa < ATTN_ISA_COUNT; isa++) {
                if (!best[isa])
                    continue;
                const double t = best[isa];
                if (ks[kk].fn == dec_softmax)
                    printf("%-12s %4d %-8s %12.1f %10s %8.2fx\n", ks[kk].name, b.cols,
                           attn_isa_name((attn_isa)isa), t * 1e9, "-", tc / t);
                else
                    printf("%-12s %4d %-8s %12.1f %10.1f %8.2fx\n", ks[kk].name, b.cols,
                           attn_isa_name((attn_isa)isa), t * 1e9,
                           2.0 * b.cols * DEC_KEYS * DEC_D / t * 1e-9, tc / t);
            }
        }
    }
    /* the same from a quantized K or V, each format */
    static const char *const fmts[ATTN_KVQ_COUNT] = { "q8_0", "q4_0", "fp8e4m3", "fp8e5m2" };
    static const struct { const char *name; void (*fn)(const attn_kernels *, void *); }
        kq[] = { { "qk_rows_q", dec_qk_rows_q }, { "pv_q", dec_pv_q },
                 { "qk_rows_i8", dec_qk_rows_i8 } };
    b.kq = attn_host_alloc((size_t)DEC_KEYS * DEC_D * 2);
    b.vq = attn_host_alloc((size_t)DEC_KEYS * DEC_D * 2);
    b.q8 = attn_host_alloc((size_t)64 * DEC_D * 2);
    for (int i = 0; b.q8 && i < 64; i++)
        attn_kvq_quantize_row(b.q8 + i * attn_kvq_row_bytes(ATTN_KVQ_Q8_0, DEC_D),
                              b.q + (size_t)i * DEC_D, DEC_D, ATTN_KVQ_Q8_0, 1.0f);
    printf("\nquantized K or V (qk_rows_i8: Q in q8_0 too), %d keys, d = %d:\n\n"
           "%-12s %-8s %4s %-8s %12s %10s %9s\n", DEC_KEYS, DEC_D, "kernel", "format", "cols", "isa",
           "ns/call", "GFLOP/s", "vs c");
    for (int f = 0; b.kq && b.vq && f < ATTN_KVQ_COUNT; f++) {
        b.fmt = (attn_kvq)f;
        b.qrow = (ptrdiff_t)attn_kvq_row_bytes(b.fmt, DEC_D);
        for (int r = 0; r < DEC_KEYS; r++) {
            attn_kvq_quantize_row(b.kq + r * b.qrow, b.k + r * DEC_D, DEC_D, b.fmt, 0.01f);
            attn_kvq_quantize_row(b.vq + r * b.qrow, b.v + r * DEC_D, DEC_D, b.fmt, 0.01f);
        }
        for (int cc = 0; cc < 2; cc++) {
            b.cols = cc ? 16 : 4;
            for (size_t kk = 0; kk < sizeof(kq) / sizeof(kq[0]); kk++) {
                if (kq[kk].fn == dec_qk_rows_i8 && (f > ATTN_KVQ_Q4_0 || !b.q8))
                    continue;   /* Q in q8_0 against q8_0 and q4_0 K only */
                if (!bench_wanted(kq[kk].name))
                    continue;
                double best[ATTN_ISA_COUNT];
                best_by_isa(kq[kk].fn, &b, best);
                const double tc = best[ATTN_ISA_C];
                for (int isa = ATTN_ISA_C; isa < ATTN_ISA_COUNT; isa++) {
                    if (!best[isa])
                        continue;
                    const double t = best[isa];
                    printf("%-12s %-8s %4d %-8s %12.1f %10.1f %8.2fx\n", kq[kk].name, fmts[f],
                           b.cols, attn_isa_name((attn_isa)isa), t * 1e9,
                           2.0 * b.cols * DEC_KEYS * DEC_D / t * 1e-9, tc / t);
                }
            }
        }
    }
    attn_host_free(b.kq);
    attn_host_free(b.vq);
    attn_host_free(b.q8);
    attn_host_free(b.kw);
    attn_host_free(buf);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--bench")) {
        static const char *const known[] = {
            "qk", "softmax", "pv", "step", "qk_exp", "step_exp", "pack_qt", "softmax_rows", "exp2",
            "qk_rows", "qk_rows16", "qk+pf", "qk_kbf16", "cvt+qk", "pv+pf", "pv16", "pv16+pf",
            "pv_rows_bf16", "qk_rows_q", "pv_q",
            "qk_rows_i8", "dequant_rows"
        };
        for (int a = 2; a < argc; a++) {
            size_t i = 0;
            while (i < sizeof(known) / sizeof(known[0]) && strcmp(known[i], argv[a]))
                i++;
            if (i == sizeof(known) / sizeof(known[0])) {
                fprintf(stderr, "%s: no kernel '%s' (known:", argv[0], argv[a]);
                for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
                    fprintf(stderr, " %s", known[i]);
                fprintf(stderr, ")\n");
                return 2;
            }
        }
        bench_only = argv + 2;
        bench_nonly = argc - 2;
        const int rc = bench();
        if (!rc) {
            bench_decode();
            bench_dequant();
        }
        return rc;
    }
    if (argc > 1) {
        fprintf(stderr, "usage: %s [--bench [KERNEL...]]\n", argv[0]);
        return 2;
    }
    const attn_kernels *c = attn_kernels_for(ATTN_ISA_C);
    const int isas = ATTN_ISA_COUNT - ATTN_ISA_C;
    tap_plan(8 * (isas - 1) + 11 * isas + 27);
    test_planted(c);
    for (int isa = ATTN_ISA_C; isa < ATTN_ISA_COUNT; isa++) {
        const attn_kernels *kr = attn_kernels_for((attn_isa)isa);
        const char *name = attn_isa_name((attn_isa)isa);
        if (!kr) {
            const char *why = "this CPU or build lacks it";
            tap_skip(why, "exp2_%s edge cases", name);
            tap_skip(why, "exp2_%s accuracy", name);
            tap_skip(why, "mods_%s", name);
            for (int t = 0; t < 8; t++)
                tap_skip(why, "%s 16-bit or quantized kernel %d", name, t);
            if (isa != ATTN_ISA_C)
                for (int t = 0; t < 8; t++)
                    tap_skip(why, "%s kernel %d against C", name, t);
            continue;
        }
        test_exp2(kr);
        test_mods(kr);
        test_bf16(kr, c);
        if (isa != ATTN_ISA_C)
            test_isa(kr, c);
    }
    return 0;
}

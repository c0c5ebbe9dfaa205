/* The backward's kernels (pv_t, bwd_ds) of every ISA this CPU runs against
 * their definitions in double, checkasm-style: every tail of the register
 * tiles and vectors, the modifiers and the masks, guard zones around each
 * output; and a planted bug of each, which the check must reject. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "memory.h"
#include "tap.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static float uniform(float lo, float hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (float)((rng >> 40) * 0x1p-24);
}

/* A buffer of n floats with 16 guard floats before and after, the guards
 * and (with poison) the data holding a NaN no arithmetic makes. */
enum { GUARD = 16 };
static const uint32_t canary_bits = 0x7fc0beefu;

static float *guarded(size_t n)
{
    float *b = attn_host_alloc((n + 2 * GUARD) * sizeof(float));
    if (!b) {
        printf("Bail out! out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < n + 2 * GUARD; i++)
        memcpy(&b[i], &canary_bits, sizeof(canary_bits));
    return b + GUARD;
}

/* The guards intact, and every element outside the rows x cols region of
 * stride `stride` still the canary. */
static bool intact(const float *x, size_t n, int rows, int cols, ptrdiff_t stride)
{
    for (ptrdiff_t i = -GUARD; i < (ptrdiff_t)n + GUARD; i++) {
        const bool inside = i >= 0 && i < (ptrdiff_t)n && i / stride < rows && i % stride < cols;
        uint32_t u;
        memcpy(&u, &x[i], sizeof(u));
        if (!inside && u != canary_bits)
            return false;
    }
    return true;
}

static void release(float *x)
{
    attn_host_free(x - GUARD);
}

/* ---- pv_t: o = alpha o + P V with P not transposed ---------------------------- */

static bool check_pv_t(const attn_kernels *kr, int nq, int nk, int dv, char *why, size_t len)
{
    const ptrdiff_t os = dv + 3, ps = nk + 5, vs = dv + 2;
    const size_t no = (size_t)nq * os;
    float *o = guarded(no), *o0 = guarded(no), *p = guarded((size_t)nq * ps);
    float *v = guarded((size_t)nk * vs), *alpha = guarded((size_t)nq);
    for (int i = 0; i < nq; i++) {
        alpha[i] = i % 3 == 0 ? 1.0f : uniform(0, 1);
        for (int j = 0; j < nk; j++)
            p[i * ps + j] = uniform(-1, 1);
        for (int c = 0; c < dv; c++)
            o[i * os + c] = o0[i * os + c] = uniform(-5, 5);
    }
    for (int j = 0; j < nk; j++)
        for (int c = 0; c < dv; c++)
            v[j * vs + c] = uniform(-3, 3);
    kr->pv_t(o, os, p, ps, v, vs, alpha, nq, nk, dv);
    bool ok = intact(o, no, nq, dv, os);
    if (!ok)
        snprintf(why, len, "wrote outside the %dx%d output", nq, dv);
    for (int i = 0; ok && i < nq; i++)
        for (int c = 0; ok && c < dv; c++) {
            double want = (double)alpha[i] * o0[i * os + c], mag = fabs(want);
            for (int j = 0; j < nk; j++) {
                want += (double)p[i * ps + j] * v[j * vs + c];
                mag += fabs((double)p[i * ps + j] * v[j * vs + c]);
            }
            const double tol = 2.0 * (nk + 1) * 0x1p-24 * mag + 1e-30;
            if (!(fabs(o[i * os + c] - want) <= tol)) {
                snprintf(why, len, "O[%d][%d] = %.9g, the definition %.9g (tol %.3g), nq %d nk %d "
                         "dv %d", i, c, (double)o[i * os + c], want, tol, nq, nk, dv);
                ok = false;
            }
        }
    release(o);
    release(o0);
    release(p);
    release(v);
    release(alpha);
    return ok;
}

/* ---- bwd_ds: P and dS' of a query-major tile ---------------------------------- */

typedef struct ds_case {
    int nq, nk, j0, pos0;
    bool masked;
    float cap, slope;
} ds_case;

static bool check_bwd_ds(const attn_kernels *kr, const ds_case *k, char *why, size_t len)
{
    const int nq = k->nq, nk = k->nk;
    const ptrdiff_t st = nk + 7;
    const size_t n = (size_t)nq * st;
    float *s = guarded(n), *dp = guarded(n), *s0 = guarded(n), *dp0 = guarded(n);
    float *lse = guarded((size_t)nq), *dd = guarded((size_t)nq);
    int beg[64], end[64];
    const float scale = 0.17f;
    for (int r = 0; r < nq; r++) {
        beg[r] = k->j0 + (int)uniform(0, (float)nk * 0.6f);
        end[r] = beg[r] + (int)uniform(0, (float)nk);
        if (r == 1)
            end[r] = beg[r];   /* a row that sees nothing of the tile */
        double sum = 0;
        for (int j = 0; j < nk; j++) {
            s[r * st + j] = s0[r * st + j] = uniform(-30, 8);
            dp[r * st + j] = dp0[r * st + j] = uniform(-3, 3);
            sum += exp2(s[r * st + j]);
        }
        lse[r] = (float)log2(sum) + uniform(0, 2);
        dd[r] = uniform(-1, 1);
    }
    kr->bwd_ds(s, dp, st, nq, nk, k->j0, lse, dd, k->masked ? beg : NULL,
               k->masked ? end : NULL, k->cap, k->slope, k->pos0, scale);
    bool ok = intact(s, n, nq, nk, st) && intact(dp, n, nq, nk, st);
    if (!ok)
        snprintf(why, len, "wrote outside the %dx%d tile", nq, nk);
    for (int r = 0; ok && r < nq; r++)
        for (int j = 0; ok && j < nk; j++) {
            const int key = k->j0 + j;
            const bool vis = !k->masked || (key >= beg[r] && key < end[r]);
            double x = s0[r * st + j], d = 1.0;
            if (k->cap > 0) {
                const double t = tanh(x / k->cap);
                x = k->cap * t;
                d = 1.0 - t * t;
            }
            x -= k->slope * fabs((double)(k->pos0 + r) - key);
            const double pw = vis ? exp2(x - lse[r]) : 0.0;
            const double gw = vis ? scale * pw * ((double)dp0[r * st + j] - dd[r]) * d : 0.0;
            const double gmag = scale * pw * (fabs((double)dp0[r * st + j]) + fabs(dd[r]));
            /* exp2 to a few ulp of its argument, which is rounded once or
             * twice (the softcap's tanh: a few units of cap's rounding). */
            const double tp = 1e-5 * pw * (1.0 + fabs(x)) + 1e-37;
            const double tg = 1e-5 * gmag * (1.0 + fabs(x)) + 1e-37;
            if (!(fabs(s[r * st + j] - pw) <= tp) || !(fabs(dp[r * st + j] - gw) <= tg)) {
                snprintf(why, len, "row %d key %d (%s): P %.9g dS' %.9g, the definition %.9g "
                         "%.9g; nq %d nk %d cap %g slope %g", r, key, vis ? "visible" : "masked",
                         (double)s[r * st + j], (double)dp[r * st + j], pw, gw, nq, nk,
                         (double)k->cap, (double)k->slope);
                ok = false;
            }
        }
    release(s);
    release(dp);
    release(s0);
    release(dp0);
    release(lse);
    release(dd);
    return ok;
}

static bool all_ds(const attn_kernels *kr, char *why, size_t len)
{
    static const float caps[] = { 0.0f, 4.3f };
    static const float slopes[] = { 0.0f, 0.3f };
    bool ok = true;
    for (int nq = 1; ok && nq <= 9; nq++)
        for (int nk = 1; ok && nk <= 70; nk += nk < 20 ? 1 : 17)
            for (int m = 0; ok && m < 2; m++)
                for (int c = 0; ok && c < 2; c++)
                    for (int sl = 0; ok && sl < 2; sl++) {
                        const ds_case k = { nq, nk, 37, 50, m == 1, caps[c], slopes[sl] };
                        ok = check_bwd_ds(kr, &k, why, len);
                    }
    return ok;
}

static bool all_pv_t(const attn_kernels *kr, char *why, size_t len)
{
    static const int nks[] = { 1, 5, 17, 64 };
    bool ok = true;
    for (int nq = 1; ok && nq <= 13; nq++)
        for (int dv = 1; ok && dv <= 81; dv += dv < 18 ? 1 : 21)
            for (size_t j = 0; ok && j < 4; j++)
                ok = check_pv_t(kr, nq, nks[j], dv, why, len);
    return ok;
}

/* ---- planted ------------------------------------------------------------------- */

static attn_pv_fn *real_pv;
static attn_bwd_ds_fn *real_bwd_ds;

/* Reads P transposed: pv's reading, p[j][i]. */
static decl_pv_t_fn(pv_t_transposed)
{
    real_pv(o, o_stride, p, p_stride, v, v_stride, alpha, nq, nk, dv, 0);
}

/* Ignores the mask: every key of the tile visible. */
static decl_bwd_ds_fn(bwd_ds_unmasked)
{
    (void)beg;
    (void)end;
    real_bwd_ds(s, dp, stride, nq, nk, j0, lse, dd, NULL, NULL, cap, slope, pos0, scale);
}

int main(void)
{
    const int isas = ATTN_ISA_COUNT - ATTN_ISA_C;
    tap_plan(2 * isas + 2);
    char why[320] = "";
    for (int isa = ATTN_ISA_C; isa < ATTN_ISA_COUNT; isa++) {
        const attn_kernels *kr = attn_kernels_for((attn_isa)isa);
        const char *name = attn_isa_name((attn_isa)isa);
        if (!kr) {
            tap_skip("this CPU or build lacks it", "pv_t_%s", name);
            tap_skip("this CPU or build lacks it", "bwd_ds_%s", name);
            continue;
        }
        if (!tap_ok(all_pv_t(kr, why, sizeof(why)), "pv_t_%s: o = alpha o + P V (P row-major) "
                    "against the definition, every tail, guarded", name))
            tap_diag("%s", why);
        if (!tap_ok(all_ds(kr, why, sizeof(why)), "bwd_ds_%s: P and dS' against the "
                    "definition, masks, softcap, ALiBi, every tail, guarded", name))
            tap_diag("%s", why);
    }
    attn_kernels bad = *attn_kernels_for(ATTN_ISA_C);
    real_pv = bad.pv;
    real_bwd_ds = bad.bwd_ds;
    bad.pv_t = pv_t_transposed;
    tap_ok(!check_pv_t(&bad, 7, 7, 20, why, sizeof(why)),
           "the check rejects a pv_t that reads P transposed");
    bad.bwd_ds = bwd_ds_unmasked;
    const ds_case k = { 5, 30, 0, 10, true, 0.0f, 0.0f };
    tap_ok(!check_bwd_ds(&bad, &k, why, sizeof(why)),
           "the check rejects a bwd_ds that ignores the mask");
    return 0;
}

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memory.h"

enum { GUARD = 64, GUARD_BYTE = 0xA5 };

attn_status attn_guarded_alloc(attn_guarded *g, size_t n)
{
    memset(g, 0, sizeof(*g));
    size_t bytes;
    if (__builtin_mul_overflow(n, sizeof(float), &bytes) ||
        __builtin_add_overflow(bytes, (size_t)2 * GUARD, &bytes))
        return ATTN_ENOMEM;
    g->base = attn_host_alloc(bytes);
    if (!g->base)
        return ATTN_ENOMEM;
    g->n = n;
    g->data = (float *)(g->base + GUARD);
    memset(g->base, GUARD_BYTE, GUARD);
    memset(g->base + GUARD + n * sizeof(float), GUARD_BYTE, GUARD);
    return ATTN_OK;
}

void attn_guarded_poison(attn_guarded *g)
{
    const uint32_t nan_bits = ATTN_POISON_BITS;
    for (size_t i = 0; i < g->n; i++)
        memcpy(&g->data[i], &nan_bits, sizeof(nan_bits));
}

bool attn_guarded_intact(const attn_guarded *g)
{
    const unsigned char *back = g->base + GUARD + g->n * sizeof(float);
    for (int i = 0; i < GUARD; i++)
        if (g->base[i] != GUARD_BYTE || back[i] != GUARD_BYTE)
            return false;
    return true;
}

void attn_guarded_free(attn_guarded *g)
{
    attn_host_free(g->base);
    memset(g, 0, sizeof(*g));
}

/* Thresholds, as multiples of max|V| (every output is a convex combination of
 * V rows, so max|V| is the natural scale of an output and of its error).
 *
 * exact-fp32, with u = 2^-24 the fp32 unit roundoff:
 *  - base 2e-5 (~335 u): summing up to Nk weighted V rows and normalizing in
 *    fp32 errs by about sqrt(Nk) u; the dot product's own rounding, after the
 *    1/sqrt(dk) scale, is of the same order. Measured with naive: 1e-7 to 1e-6
 *    relative for Nk up to 16384 and dk up to 4096, so 20x margin or more,
 *    left for blocked orders and a fast exp accurate to a few ulp;
 *  - per_logit 16 u: a logit of magnitude L is rounded in fp32 at least once
 *    (the scale) and off by ~u L, and exp turns that into the same relative
 *    error of the weights. Measured with --fill extreme (L ~ 1.8e4): 0.17 u
 *    per unit of L at worst, so ~100x margin.
 * Bugs are far away: a missing scale, a mask off by one key or an unwritten
 * row moves outputs by 1e-2 to 1 in these units (see tests/test_checker.c). */
const attn_tolerance attn_tolerance_fp32 = { "exact-fp32", 2e-5, 16.0 * 0x1.0p-24 };

/* Reduced precision. The reference computes in double from the values the
 * backends are given (the inputs rounded once to their storage type), so
 * input rounding costs nothing here; what a class allows for is the
 * backend's own rounding to the storage type, with us = its unit roundoff
 * (bf16 2^-8, fp16 2^-11), on top of exact-fp32 (products and sums stay
 * fp32: backend.h):
 *  - P rounded once to the storage type before P.V (FlashAttention does
 *    this; so does the tiled backend's bf16 kernel): each weight is off by
 *    at most us relative, so O = sum p^_j v_j / l is off by at most
 *    us x sum p_j |v_j| / l <= us x max|V|;
 *  - one more rounding of the same size, of the output or of the
 *    normalized weights (a library's bf16 softmax): us x max|V| again.
 * So base = exact-fp32's + 2 us. The logits are not rounded (scores stay
 * fp32), so per_logit is exact-fp32's; a backend that rounded the scores
 * would move each output by up to 2 us max|logit| max|V| and needs a class
 * of its own. The classes are not interchangeable: one rounding of P to
 * bf16 erred by 5.6e-4 max|V| in tests/test_checker.c, 28 times
 * exact-fp32's base, while a dropped scale or a causal mask off by one
 * errs by 0.5 max|V| there, 70 times the bf16 class's base (the test shows
 * all three). A problem is judged by the coarsest of its storage types
 * (bf16, then fp16). */
const attn_tolerance attn_tolerance_bf16 = { "bf16-storage", 2e-5 + 2.0 * 0x1.0p-8,
                                             16.0 * 0x1.0p-24 };
const attn_tolerance attn_tolerance_fp16 = { "fp16-storage", 2e-5 + 2.0 * 0x1.0p-11,
                                             16.0 * 0x1.0p-24 };

const attn_tolerance *attn_tolerance_for(const attn_problem *p)
{
    if (p->dtype == ATTN_DTYPE_BF16 || p->kv_dtype == ATTN_DTYPE_BF16)
        return &attn_tolerance_bf16;
    if (p->dtype == ATTN_DTYPE_FP16 || p->kv_dtype == ATTN_DTYPE_FP16)
        return &attn_tolerance_fp16;
    return &attn_tolerance_fp32;
}

void attn_check_output(attn_check *c, const attn_problem *p, const attn_ref *ref,
                       const attn_guarded *out)
{
    attn_check_output_with(c, p, ref, out, attn_tolerance_for(p));
}

void attn_check_output_with(attn_check *c, const attn_problem *p, const attn_ref *ref,
                            const attn_guarded *out, const attn_tolerance *tolerance)
{
    memset(c, 0, sizeof(*c));
    const int dv = p->d_v;
    const float *o = out->data;

    c->guard_ok = attn_guarded_intact(out);
    /* With finite inputs every output must be finite, checked row or not.
     * With NaN or Inf among them only the checked rows are judged, element by
     * element against the reference's class: NaN for NaN, the same infinity
     * for an infinity, a finite value within tolerance for a finite one. */
    for (size_t e = 0; e < out->n && !ref->nonfinite_inputs; e++) {
        if (!isfinite(o[e]) && c->nonfinite++ == 0)
            c->first_nonfinite = e;
    }

    double err2 = 0.0, ref2 = 0.0;
    for (size_t x = 0; x < ref->nrows; x++) {
        const size_t row = ref->rows[x];
        for (int col = 0; col < dv; col++) {
            const double r = ref->out[x * dv + col];
            const float got = o[row * dv + col];
            if (!isfinite(r)) {
                const bool same = isnan(r) ? isnan(got) : (double)got == r;
                if (!same && c->mismatched++ == 0) {
                    c->first_mismatch = row * dv + (size_t)col;
                    c->mismatch_ref = r;
                }
                /* A NaN the backend wrote tells as much as a finite value:
                 * one it never wrote still holds the poison. */
                uint32_t bits;
                memcpy(&bits, &got, sizeof(bits));
                if (same && isnan(r) && bits == ATTN_POISON_BITS && !ref->poison_inputs &&
                    c->unwritten++ == 0)
                    c->first_unwritten = row * dv + (size_t)col;
                c->ref_nonfinite += same;
                continue;
            }
            if (!isfinite(got)) {
                if (ref->nonfinite_inputs && c->nonfinite++ == 0)
                    c->first_nonfinite = row * dv + (size_t)col;
                continue;
            }
            c->ref_zeros += r == 0.0;
            c->ref_elems++;
            const double d = fabs((double)got - r);
            if (d > c->max_abs) {
                c->max_abs = d;
                c->worst_row = row;
                c->worst_col = col;
            }
            err2 += d * d;
            ref2 += r * r;
            if (fabs(r) > c->ref_max)
                c->ref_max = fabs(r);
        }
    }
    c->max_rel = c->ref_max > 0 ? c->max_abs / c->ref_max : (c->max_abs > 0 ? INFINITY : 0);
    /* benchdnn's MISTRUSTED: a reference of (almost) only zeros, here fewer
     * nonzero values than one output row, passes a kernel that writes zeros. */
    c->mistrusted = c->ref_elems - c->ref_zeros + c->ref_nonfinite - c->unwritten < (size_t)dv;
    c->nmse = ref2 > 0 ? err2 / ref2 : (err2 > 0 ? INFINITY : 0);

    c->tolerance = tolerance;
    c->max_abs_v = ref->max_abs_v;
    c->max_abs_logit = ref->max_abs_logit;
    c->tol = c->max_abs_v * (c->tolerance->base + c->tolerance->per_logit * c->max_abs_logit);

    const size_t nq = (size_t)p->seq_q;
    if (!c->guard_ok) {
        snprintf(c->why, sizeof(c->why), "the output buffer was written outside its bounds");
    } else if (c->nonfinite) {
        const size_t row = c->first_nonfinite / dv;
        snprintf(c->why, sizeof(c->why),
                 "%zu non-finite output%s%s, first at b=%zu h=%zu i=%zu c=%zu (NaN there also means never written)",
                 c->nonfinite, c->nonfinite == 1 ? "" : "s",
                 ref->nonfinite_inputs ? " where the reference is finite" : "",
                 row / nq / p->heads, row / nq % p->heads, row % nq, c->first_nonfinite % dv);
    } else if (c->unwritten) {
        const size_t row = c->first_unwritten / dv;
        snprintf(c->why, sizeof(c->why),
                 "%zu output%s never written (still the poison NaN where the reference is NaN), "
                 "first at b=%zu h=%zu i=%zu c=%zu", c->unwritten, c->unwritten == 1 ? "" : "s",
                 row / nq / p->heads, row / nq % p->heads, row % nq, c->first_unwritten % dv);
    } else if (c->mismatched) {
        const size_t row = c->first_mismatch / dv;
        snprintf(c->why, sizeof(c->why),
                 "%zu output%s not %s where the reference is, first at b=%zu h=%zu i=%zu c=%zu "
                 "(reference %g, output %g)", c->mismatched, c->mismatched == 1 ? "" : "s",
                 isnan(c->mismatch_ref) ? "NaN" : "the same infinity", row / nq / p->heads,
                 row / nq % p->heads, row % nq, c->first_mismatch % dv, c->mismatch_ref,
                 (double)o[c->first_mismatch]);
    } else if (!(c->max_abs <= c->tol)) {
        snprintf(c->why, sizeof(c->why), "max_abs %.3g > tol %.3g at b=%zu h=%zu i=%zu c=%d",
                 c->max_abs, c->tol, c->worst_row / nq / p->heads, c->worst_row / nq % p->heads,
                 c->worst_row % nq, c->worst_col);
    }
    c->pass = c->why[0] == '\0';
}

/* The gradients as outputs of rows: dQ's rows are O's ([B,H,Nq], dk
 * wide), dK's and dV's [B,Hkv,Nk]; a view of g for each, whose rows are
 * the computed heads' (contiguous runs: reference.h). */
void attn_check_grads(attn_check c[3], const attn_problem *p, const attn_ref *fwd,
                      const attn_ref_grads *g, const attn_guarded out[3])
{
    static const char *const names[3] = { "dQ", "dK", "dV" };
    const size_t per[3] = { (size_t)attn_group(p) * (size_t)p->seq_q, (size_t)p->seq_kv,
                            (size_t)p->seq_kv };
    double *const data[3] = { g->dq, g->dk, g->dv };
    for (int x = 0; x < 3; x++) {
        attn_problem pv = *p;
        if (x > 0) {
            pv.heads = attn_kv_heads(p);
            pv.kv_heads = 0;
            pv.seq_q = p->seq_kv;
        }
        pv.d_v = x == 2 ? p->d_v : p->d_k;
        attn_ref view = *fwd;
        view.nrows = g->nheads * per[x];
        view.total_rows = g->total_heads * per[x];
        view.rows = malloc(view.nrows * sizeof(size_t));
        view.out = data[x];
        view.max_abs_v = g->mag[x];
        view.max_abs_logit = g->max_abs_logit;
        if (!view.rows) {
            memset(&c[x], 0, sizeof(c[x]));
            c[x].what = names[x];
            snprintf(c[x].why, sizeof(c[x].why), "%s: out of memory for the check", names[x]);
            continue;
        }
        /* dQ: K/V head r = b Hkv + g is read by query heads b H + g G ..
         * + G - 1, whose rows follow each other from (b H + g G) Nq. */
        for (size_t h = 0; h < g->nheads; h++) {
            const size_t r = g->heads[h], hkv = (size_t)attn_kv_heads(p);
            const size_t first = x ? r * per[x]
                                   : (r / hkv * (size_t)p->heads + r % hkv * (size_t)attn_group(p)) *
                                         (size_t)p->seq_q;
            for (size_t e = 0; e < per[x]; e++)
                view.rows[h * per[x] + e] = first + e;
        }
        attn_check_output_with(&c[x], &pv, &view, &out[x], attn_tolerance_for(p));
        free(view.rows);
        c[x].what = names[x];
        if (!c[x].pass) {
            char why[sizeof(c[x].why)];
            snprintf(why, sizeof(why), "%s", c[x].why);
            snprintf(c[x].why, sizeof(c[x].why), "%s: %.240s", names[x], why);
        }
    }
}

void attn_check_describe(const attn_check *c, char *buf, size_t len)
{
    const attn_tolerance *t = c->tolerance;
    char scale[16] = "max|V|";
    if (c->what)
        snprintf(scale, sizeof(scale), "M_%s", c->what);
    snprintf(buf, len,
             "%s%smax_abs %.2e rel %.2e nmse %.2e %s tol %.2e (%s: %s %.3g x (%.1e + %.1e x max|logit| %.3g))",
             c->what ? c->what : "", c->what ? " " : "",
             c->max_abs, c->max_rel, c->nmse, c->max_abs <= c->tol ? "<=" : ">", c->tol,
             t->name, scale, c->max_abs_v, t->base, t->per_logit, c->max_abs_logit);
    const size_t at = strlen(buf);
    if (c->ref_nonfinite && at < len)
        snprintf(buf + at, len - at, "; %zu NaN or Inf of the reference matched", c->ref_nonfinite);
}

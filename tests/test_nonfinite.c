/* NaN and infinities in Q, K and V. The documented behaviour (README,
 * "Non-finite inputs"): IEEE arithmetic through the definition of each
 * kind, over the keys a query can see and no others.
 *   - NaN in q_i, or in a k_j that query i sees: row i is all NaN;
 *   - NaN in v_j[c]: column c is NaN in every row that sees key j (its weight
 *     multiplies v_j even when it is 0);
 *   - a key a query cannot see (causal, padding, outside the window or
 *     pattern) never reaches its row, whatever K and V hold there;
 *   - infinities give what the arithmetic gives: +Inf in V is +Inf in the
 *     rows that see it, an infinite logit makes its row NaN (Inf - Inf).
 * First the reference is held to the rules it can be (exact NaN/Inf
 * patterns); then every backend must agree with the reference element by
 * element (NaN for NaN, the same infinity, finite within tolerance), which
 * is what the checker judges; the last lines print the table. */
#include <math.h>
#include <string.h>

#include "tap.h"
#include "util.h"
#include "variant.h"

enum { B = 2, H = 2, N = 72, D = 16, BH = 1 /* b=0, h=1 */, I = 37, J = 50, CQ = 3, CV = 5,
       WL = 8 };

typedef struct scenario {
    const char *name;
    char tensor;           /* 'q', 'k', 'v' */
    int b, row, col;       /* where (h = 1); col -1: the whole row */
    float value;
    bool causal;
    int kv1;               /* kv_len of batch 1 (batch 0 sees all N) */
    /* The reference's expected pattern in (b, h=1) for the rules that fix
     * it: 'r' row I NaN; 'a' all rows NaN; 'c' column CV NaN in all rows;
     * 'C' column CV NaN in rows >= J; 'K' all NaN in rows >= J; '-' column CV
     * -Inf in rows >= J; 'W' column CV NaN in rows J..J+WL only (the
     * window's); 'z' batch 1 all zero; '0' nothing non-finite;
     * '?' not fixed by a rule (depends on the signs of the data). */
    char rule;
    int window;            /* > 0: a causal window of that many keys left */
} scenario;

static const scenario scenarios[] = {
    { "NaN in q_i",                          'q', 0, I, CQ, NAN, false, N, 'r', 0 },
    { "NaN in k_j",                          'k', 0, J, CQ, NAN, false, N, 'a', 0 },
    { "NaN in v_j[c]",                       'v', 0, J, CV, NAN, false, N, 'c', 0 },
    { "NaN in k_j, causal (rows < j masked)", 'k', 0, J, CQ, NAN, true, N, 'K', 0 },
    { "NaN in v_j[c], causal",               'v', 0, J, CV, NAN, true, N, 'C', 0 },
    { "NaN in K and V of a padded key",      'p', 1, 45, -1, NAN, false, 30, '0', 0 },
    { "NaN in q_i of a row with no key",     'q', 1, 10, CQ, NAN, false, 0, 'z', 0 },
    { "+Inf in q_i",                         'q', 0, I, CQ, INFINITY, false, N, '?', 0 },
    { "+Inf in k_j",                         'k', 0, J, CQ, INFINITY, false, N, '?', 0 },
    { "+Inf in v_j[c]",                      'v', 0, J, CV, INFINITY, false, N, '?', 0 },
    { "-Inf in v_j[c], causal",              'v', 0, J, CV, -INFINITY, true, N, '-', 0 },
    { "NaN in v_j[c], causal window",        'v', 0, J, CV, NAN, true, N, 'W', WL },
};
enum { NS = sizeof(scenarios) / sizeof(scenarios[0]) };

typedef struct inputs {
    float *q, *k, *v;
    attn_sizes sz;
    int kv[B];
    attn_problem p;
} inputs;

static void make(inputs *x, const scenario *sc, attn_kind kind)
{
    memset(x, 0, sizeof(*x));
    x->kv[0] = N;
    x->kv[1] = sc->kv1;
    x->p = (attn_problem){ B, H, N, N, D, D, 0.25f, sc->causal, x->kv, kind };
    x->p.var = attn_variant_defaults();
    x->p.mods = (attn_mods){ .window = sc->window > 0, .left = sc->window };
    x->p.var.globals = 2, x->p.var.random_blocks = 1, x->p.var.block = 8;
    x->p.var.features = 16, x->p.var.proj = 12, x->p.var.seed = 5;
    attn_problem_sizes(&x->p, &x->sz);
    x->q = attn_host_alloc(x->sz.q * sizeof(float));
    x->k = attn_host_alloc(x->sz.k * sizeof(float));
    x->v = attn_host_alloc(x->sz.v * sizeof(float));
    if (!x->q || !x->k || !x->v) {
        printf("Bail out! out of memory\n");
        exit(2);
    }
    attn_fill(x->q, x->sz.q, ATTN_FILL_NORMAL, 11, ATTN_TENSOR_Q, 1);
    attn_fill(x->k, x->sz.k, ATTN_FILL_NORMAL, 11, ATTN_TENSOR_K, 1);
    attn_fill(x->v, x->sz.v, ATTN_FILL_NORMAL, 11, ATTN_TENSOR_V, 1);
    const size_t head = (size_t)(sc->b * H + 1) * N;
    if (sc->tensor == 'p') {   /* the whole of a padded key, K and V */
        for (int c = 0; c < D; c++) {
            x->k[(head + sc->row) * D + c] = sc->value;
            x->v[(head + sc->row) * D + c] = sc->value;
        }
    } else {
        float *t = sc->tensor == 'q' ? x->q : sc->tensor == 'k' ? x->k : x->v;
        t[(head + sc->row) * D + sc->col] = sc->value;
    }
}

static void unmake(inputs *x)
{
    attn_host_free(x->q);
    attn_host_free(x->k);
    attn_host_free(x->v);
}

/* The reference's rows of (b, h=1) against the scenario's rule. */
static bool rule_holds(const scenario *sc, const attn_ref *ref, char *why, size_t len)
{
    for (size_t x = 0; x < ref->nrows; x++) {
        const size_t row = ref->rows[x];
        const int i = (int)(row % N), h = (int)(row / N % H), b = (int)(row / N / H);
        for (int c = 0; c < D; c++) {
            const double r = ref->out[x * D + c];
            const bool here = h == 1 && b == sc->b;
            char want = 'f';   /* finite */
            switch (sc->rule) {
            case 'r': want = here && i == I ? 'n' : 'f'; break;
            case 'a': want = here ? 'n' : 'f'; break;
            case 'c': want = here && c == CV ? 'n' : 'f'; break;
            case 'C': want = here && c == CV && i >= J ? 'n' : 'f'; break;
            case 'K': want = here && i >= J ? 'n' : 'f'; break;
            case '-': want = here && c == CV && i >= J ? '-' : 'f'; break;
            case 'W': want = here && c == CV && i >= J && i <= J + WL ? 'n' : 'f'; break;
            case 'z': want = b == 1 ? '0' : 'f'; break;
            case '0': want = 'f'; break;
            default: return true;
            }
            const bool ok = want == 'f' ? isfinite(r) : want == 'n' ? isnan(r)
                          : want == '-' ? r == -INFINITY : r == 0.0;
            if (!ok) {
                snprintf(why, len, "b=%d h=%d i=%d c=%d is %g", b, h, i, c, r);
                return false;
            }
        }
    }
    return true;
}

int main(void)
{
    const attn_setup s = { .threads = ATTN_HAVE_OPENMP ? 2 : 1, .seed = 7, .check_rows = -1,
                           .timer = { .warmup = 1, .reps = 0 }, .device = -1 };
    char table[NS][ATTN_KIND_COUNT * 16][48];
    const size_t nb = attn_backend_count();
    memset(table, 0, sizeof(table));

    for (int si = 0; si < NS; si++) {
        const scenario *sc = &scenarios[si];
        inputs x;
        make(&x, sc, ATTN_KIND_SOFTMAX);
        const attn_tensors in = { .q = x.q, .k = x.k, .v = x.v };
        attn_ref ref;
        if (attn_ref_compute(&ref, &x.p, &in, -1, s.seed, s.threads) != ATTN_OK) {
            printf("Bail out! out of memory for the reference\n");
            return 2;
        }
        char why[256] = "";
        if (sc->rule != '?')
            tap_ok(rule_holds(sc, &ref, why, sizeof(why)), "reference, %s: the documented pattern%s%s",
                   sc->name, why[0] ? "; not at " : "", why);
        tap_ok(ref.nonfinite_inputs == (sc->tensor == 'p' ? 2u * D : 1u) && isfinite(ref.max_abs_v) &&
               isfinite(ref.max_abs_logit), "reference, %s: counts %zu non-finite input(s); "
               "max|V| %g and max|logit| %g, which set the tolerance, stay finite", sc->name,
               ref.nonfinite_inputs, ref.max_abs_v, ref.max_abs_logit);

        for (size_t bi = 0; bi < nb; bi++) {
            const attn_backend *be = attn_backend_get(bi);
            char *cell = table[si][bi];
            if (attn_backend_usable(be, why, sizeof(why)) != ATTN_OK) {
                snprintf(cell, 48, "n/a");
                if (si == 0)
                    tap_skip(why, "%s: not usable here", be->name);
                continue;
            }
            attn_problem p = x.p;
            p.kind = be->kind;
            const attn_config cfg = { .threads = s.threads, .device = -1 };
            if (attn_backend_supports(be, &p, &cfg, why, sizeof(why)) != ATTN_OK) {
                snprintf(cell, 48, "unsupported");
                continue;
            }
            attn_result r;
            attn_case_run(&r, be, &p, &in, &ref, &s, "attnbench");
            snprintf(cell, 48, "%s", r.verdict == ATTN_PASSED ? "agrees" : attn_verdict_str(r.verdict));
            tap_ok(r.verdict == ATTN_PASSED, "%s, %s: agrees with the reference (%s%s%s)", be->name,
                   sc->name, attn_verdict_str(r.verdict), r.why[0] ? ": " : "", r.why);
        }
        attn_ref_free(&ref);
        unmake(&x);
    }

    tap_diag("behaviour table (B=%d H=%d N=%d d=%d; the non-finite value in batch item 0 or 1, "
             "head 1):", B, H, N, D);
    char line[1024];
    int at = snprintf(line, sizeof(line), "| input |");
    for (size_t bi = 0; bi < nb; bi++)
        at += snprintf(line + at, sizeof(line) - (size_t)at, " %s |", attn_backend_get(bi)->name);
    tap_diag("%s", line);
    for (int si = 0; si < NS; si++) {
        at = snprintf(line, sizeof(line), "| %s |", scenarios[si].name);
        for (size_t bi = 0; bi < nb; bi++)
            at += snprintf(line + at, sizeof(line) - (size_t)at, " %s |", table[si][bi]);
        tap_diag("%s", line);
    }
    return tap_done();
}

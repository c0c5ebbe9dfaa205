/* The efficient-attention variants: each over its own grid against its own
 * definition; the new reference paths by hand-computed values and against
 * planted bugs (a definition one knob away must be told apart); and the
 * approximation-error columns. */
#include <math.h>
#include <string.h>

#include "tap.h"
#include "util.h"
#include "variant.h"

static void bail(const char *what)
{
    printf("Bail out! %s\n", what);
    exit(2);
}

static const int kv_pad[] = { 77, 30 };

/* Each variant over awkward knobs and shapes. */
static void grids(void)
{
    const struct {
        const char *be;
        attn_variant v;
        int w;               /* the window, either side */
        int b, nq, nk, d;
        bool causal;
        const int *kv;
        const char *what;
    } cases[] = {
        { "local", { 0 }, 0, 1, 77, 77, 16, false, NULL, "window 0" },
        { "local", { 0 }, 50, 1, 20, 20, 16, false, NULL, "N smaller than the window" },
        { "local", { 0 }, 7, 2, 77, 77, 33, true, kv_pad, "odd N, causal, padded" },
        { "local", { 0 }, 9, 1, 40, 77, 16, false, NULL, "cross, window on the diagonal" },
        { "sparse", { .globals = 77, .block = 8 }, 3, 1, 77, 77, 16, false, NULL,
          "all tokens global" },
        { "sparse", { .globals = 2, .block = 8 }, 4, 2, 77, 77, 16, true, kv_pad,
          "Longformer, causal, padded" },
        { "sparse", { .globals = 1, .random_blocks = 3, .block = 7 }, 2, 1, 101, 101,
          24, false, NULL, "BigBird, odd block" },
        { "sparse", { .globals = 0, .random_blocks = 2, .block = 16 }, 0, 1, 64, 64,
          16, true, NULL, "random blocks only, causal" },
        { "linear", { 0 }, 0, 2, 77, 77, 33, true, kv_pad, "causal, padded" },
        { "linear", { 0 }, 0, 1, 50, 90, 16, false, NULL, "cross" },
        { "performer", { .features = 16 }, 0, 1, 77, 77, 16, true, NULL, "m = 16, causal" },
        { "performer", { .features = 100 }, 0, 2, 50, 77, 24, false, kv_pad, "m = 100 > d, padded" },
        { "linformer", { .proj = 5 }, 0, 2, 77, 77, 16, false, kv_pad, "p = 5, padded" },
        { "linformer", { .proj = 200 }, 0, 1, 30, 90, 16, false, NULL, "p > Nk, cross" },
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        attn_problem p = { cases[c].b, 2, cases[c].nq, cases[c].nk, cases[c].d, cases[c].d,
                           (float)(1.0 / sqrt(cases[c].d)), cases[c].causal, cases[c].kv };
        p.var = cases[c].v;
        p.var.seed = 5;
        const attn_kind kind = attn_backend_find(cases[c].be)->kind;
        if (kind == ATTN_KIND_LOCAL || kind == ATTN_KIND_SPARSE)
            p.mods = (attn_mods){ .window = true, .left = cases[c].w, .right = cases[c].w };
        attn_result r;
        const attn_verdict v = run_case(attn_backend_find(cases[c].be), &p, ATTN_FILL_NORMAL,
                                        0, &r);
        if (!tap_ok(v == ATTN_PASSED && r.approx_known, "%s: %s", cases[c].be, cases[c].what))
            tap_diag("%s: %s | %s", attn_verdict_str(v), r.why, r.repro);
    }
}

/* The variant reference of p for tensors in, on every row. */
static void variant_ref(attn_ref *vr, attn_ref *dense, const attn_problem *p,
                        const attn_tensors *in)
{
    /* The dense reference of the shape: with the variant's window only when
     * the shape has it, as when --window is given; local and sparse here
     * take theirs as their own knob. */
    attn_problem shape = *p;
    if (p->kind == ATTN_KIND_LOCAL || p->kind == ATTN_KIND_SPARSE)
        shape.mods.window = false;
    if (attn_ref_compute(dense, &shape, in, -1, 1, 1) != ATTN_OK ||
        attn_ref_variant(vr, dense, p, in, 1) != ATTN_OK)
        bail("out of memory");
}

/* Hand-computed values of the new reference paths. */
static void hand_values(void)
{
    /* linear, d = 1: q = 0, keys 0 and 1, values 1 and 4:
     * phi = 1; phi(k) = 1, 2; O = (1*1 + 2*4) / (1 + 2) = 3. */
    {
        const float q[] = { 0 }, k[] = { 0, 1 }, v[] = { 1, 4 };
        attn_problem p = { 1, 1, 1, 2, 1, 1, 1.0f, false, NULL, ATTN_KIND_LINEAR };
        const attn_tensors in = { .q = q, .k = k, .v = v };
        attn_ref d, r;
        variant_ref(&r, &d, &p, &in);
        tap_ok(fabs(r.out[0] - 3.0) < 1e-12, "linear reference: (1*1 + 2*4) / 3 = 3 (got %.17g)",
               r.out[0]);
        attn_ref_free(&d);
        attn_ref_free(&r);
    }
    /* local, window 0: every row sees only its own key, so O = V. */
    {
        float q[12], k[12], v[12];
        for (int e = 0; e < 12; e++) {
            q[e] = (float)(e % 5) - 2;
            k[e] = (float)(e % 3);
            v[e] = (float)e;
        }
        attn_problem p = { 1, 1, 6, 6, 2, 2, 0.5f, false, NULL, ATTN_KIND_LOCAL };
        p.mods = (attn_mods){ .window = true };
        const attn_tensors in = { .q = q, .k = k, .v = v };
        attn_ref d, r;
        variant_ref(&r, &d, &p, &in);
        double err = 0;
        for (int e = 0; e < 12; e++)
            err = fmax(err, fabs(r.out[e] - v[e]));
        tap_ok(err == 0, "local reference, window 0: O == V (max error %g)", err);
        attn_ref_free(&d);
        attn_ref_free(&r);
    }
    /* sparse with every token global is dense softmax attention, exactly. */
    {
        attn_problem p = { 1, 2, 33, 33, 8, 8, 0.3f, true, NULL, ATTN_KIND_SPARSE };
        p.var = (attn_variant){ .globals = 33, .random_blocks = 1, .block = 4 };
        p.mods = (attn_mods){ .window = true, .left = 1, .right = 1 };
        attn_sizes sz;
        attn_problem_sizes(&p, &sz);
        float *q = malloc(sz.q * 4), *k = malloc(sz.k * 4), *v = malloc(sz.v * 4);
        if (!q || !k || !v)
            bail("out of memory");
        attn_fill(q, sz.q, ATTN_FILL_NORMAL, 2, ATTN_TENSOR_Q, 1);
        attn_fill(k, sz.k, ATTN_FILL_NORMAL, 2, ATTN_TENSOR_K, 1);
        attn_fill(v, sz.v, ATTN_FILL_NORMAL, 2, ATTN_TENSOR_V, 1);
        const attn_tensors in = { .q = q, .k = k, .v = v };
        attn_ref d, r;
        variant_ref(&r, &d, &p, &in);
        double err = 0;
        for (size_t e = 0; e < sz.o; e++)
            err = fmax(err, fabs(r.out[e] - d.out[e]));
        tap_ok(err == 0, "sparse reference, all tokens global: equals softmax attention "
               "(max difference %g)", err);
        attn_ref_free(&d);
        attn_ref_free(&r);
        free(q);
        free(k);
        free(v);
    }
}

/* Planted: the backend's output checked against the definition with one
 * knob changed must FAIL; the same check with the knob right passes. */
static void planted(void)
{
    const struct {
        const char *be, *what;
        attn_variant right, wrong;
        bool causal, wrong_causal;
        int wr, ww;          /* local, sparse: the window, right and wrong */
    } cases[] = {
        { "local", "window off by one", { 0 }, { 0 }, false, false, 6, 7 },
        { "sparse", "one global token fewer", { .globals = 3, .random_blocks = 2,
          .block = 8, .seed = 4 }, { .globals = 2, .random_blocks = 2, .block = 8,
          .seed = 4 }, false, false, 2, 2 },
        { "sparse", "random blocks from another seed", { .globals = 1,
          .random_blocks = 2, .block = 8, .seed = 4 }, { .globals = 1,
          .random_blocks = 2, .block = 8, .seed = 5 }, false, false, 2, 2 },
        { "linear", "causal prefix sums dropped", { 0 }, { 0 }, true, false },
        { "performer", "features from another seed", { .features = 64, .seed = 4 },
          { .features = 64, .seed = 5 } },
        { "performer", "half the features", { .features = 64, .seed = 4 },
          { .features = 32, .seed = 4 } },
        { "linformer", "projections from another seed", { .proj = 16, .seed = 4 },
          { .proj = 16, .seed = 5 } },
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const attn_backend *be = attn_backend_find(cases[c].be);
        attn_problem p = { 1, 2, 64, 64, 16, 16, 0.25f, cases[c].causal, NULL, be->kind };
        p.var = cases[c].right;
        if (cases[c].wr)
            p.mods = (attn_mods){ .window = true, .left = cases[c].wr, .right = cases[c].wr };
        attn_sizes sz;
        attn_problem_sizes(&p, &sz);
        float *q = malloc(sz.q * 4), *k = malloc(sz.k * 4), *v = malloc(sz.v * 4);
        attn_guarded out;
        if (!q || !k || !v || attn_guarded_alloc(&out, sz.o) != ATTN_OK)
            bail("out of memory");
        attn_fill(q, sz.q, ATTN_FILL_NORMAL, 9, ATTN_TENSOR_Q, 1);
        attn_fill(k, sz.k, ATTN_FILL_NORMAL, 9, ATTN_TENSOR_K, 1);
        attn_fill(v, sz.v, ATTN_FILL_NORMAL, 9, ATTN_TENSOR_V, 1);
        attn_tracker tr;
        attn_tracker_init(&tr);
        const attn_config cfg = { .threads = 1, .alloc = &tr.iface, .device = -1 };
        const attn_tensors t = { .q = q, .k = k, .v = v, .o = out.data };
        void *st = NULL;
        if (be->prepare(&p, &cfg, &st) != ATTN_OK || be->bind(st, &t) != ATTN_OK ||
            be->run(st) != ATTN_OK)
            bail("the backend did not run");
        be->release(st);
        attn_tracker_destroy(&tr);

        attn_problem wrong = p;
        wrong.var = cases[c].wrong;
        if (cases[c].ww)
            wrong.mods = (attn_mods){ .window = true, .left = cases[c].ww, .right = cases[c].ww };
        wrong.causal = cases[c].causal != cases[c].wrong_causal ? cases[c].wrong_causal
                                                                : cases[c].causal;
        const attn_tensors in = { .q = q, .k = k, .v = v };
        attn_ref d1, r1, d2, r2;
        variant_ref(&r1, &d1, &p, &in);
        variant_ref(&r2, &d2, &wrong, &in);
        attn_check ok_check, bad_check;
        attn_check_output(&ok_check, &p, &r1, &out);
        attn_check_output(&bad_check, &p, &r2, &out);
        if (!tap_ok(ok_check.pass && !bad_check.pass,
                    "%s checked against its definition with %s: caught", cases[c].be,
                    cases[c].what))
            tap_diag("right: %s; wrong: max_abs %g tol %g", ok_check.why, bad_check.max_abs,
                     bad_check.tol);
        attn_ref_free(&d1);
        attn_ref_free(&r1);
        attn_ref_free(&d2);
        attn_ref_free(&r2);
        attn_guarded_free(&out);
        free(q);
        free(k);
        free(v);
    }
}

/* The approximation columns: zero where the variant is exact softmax
 * attention (window covering every key), clearly non-zero where it is not. */
static void approximation(void)
{
    attn_problem p = { 1, 2, 64, 64, 16, 16, 0.25f, false, NULL };
    attn_result r;
    /* No window on the shape: local takes its default, 128 keys either side. */
    p.var = (attn_variant){ 0 };
    run_case(attn_backend_find("local"), &p, ATTN_FILL_NORMAL, 0, &r);
    tap_ok(r.verdict == ATTN_PASSED && r.approx_known && r.approx_max_abs < 1e-5,
           "local with a window over every key: approximation error %.3g (fp32 rounding only)",
           r.approx_max_abs);
    p.var = (attn_variant){ .proj = 8, .seed = 2 };
    run_case(attn_backend_find("linformer"), &p, ATTN_FILL_NORMAL, 0, &r);
    tap_ok(r.verdict == ATTN_PASSED && r.approx_known && r.approx_nmse > 1e-3,
           "linformer with p = 8 of 64 keys: approximation nmse %.3g, reported", r.approx_nmse);
}

/* The FLOP counts follow each kind's algorithm, checked against hand counts. */
static void flop_counts(void)
{
    attn_problem p = { 1, 3, 10, 10, 4, 2, 0.5f, false, NULL, ATTN_KIND_LOCAL };
    p.var = attn_variant_defaults();
    p.mods = (attn_mods){ .window = true, .left = 2, .right = 2 };
    /* Rows see 3, 4, 5 x 6, 4, 3 keys: 44 pairs, 2 (dk + dv) = 12 each, 3 heads. */
    tap_ok(attn_problem_flops(&p) == 44.0 * 12 * 3, "local: flops for 44 visible pairs (got %g)",
           attn_problem_flops(&p));
    p.kind = ATTN_KIND_SPARSE;
    p.var.globals = 1;
    p.var.random_blocks = 0;
    /* Row 0 (global) sees all 10 keys; rows 1..9 their window, plus key 0
     * (global) where the window does not reach it. */
    double pairs = 10;
    for (int i = 1; i < 10; i++) {
        const int lo = i - 2 > 0 ? i - 2 : 0, hi = i + 3 < 10 ? i + 3 : 10;
        pairs += hi - lo + (lo > 0);
    }
    tap_ok(attn_problem_flops(&p) == pairs * 12 * 3, "sparse: flops for %g visible pairs (got %g)",
           pairs, attn_problem_flops(&p));
    p.kind = ATTN_KIND_LINFORMER;
    p.var.proj = 5;
    /* (10 keys + 10 queries) x 2 p (dk + dv) x 3 heads. */
    tap_ok(attn_problem_flops(&p) == 20.0 * 2 * 5 * 6 * 3, "linformer: flops (got %g)",
           attn_problem_flops(&p));
    p.kind = ATTN_KIND_PERFORMER;
    p.var.features = 7;
    /* keys: 2 m dv + m + 2 m dk; queries: 2 m dv + 2 m + 2 m dk. */
    const double per_key = 2 * 7 * 2 + 7 + 2 * 7 * 4, per_query = 2 * 7 * 2 + 2 * 7 + 2 * 7 * 4;
    tap_ok(attn_problem_flops(&p) == (10 * per_key + 10 * per_query) * 3,
           "performer: flops (got %g)", attn_problem_flops(&p));
}

int main(void)
{
    tap_plan(14 + 3 + 7 + 2 + 4);
    grids();
    hand_values();
    planted();
    approximation();
    flop_counts();
    return 0;
}

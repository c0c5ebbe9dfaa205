/* The backward (--pass bwd, fwdbwd): every registered backend over a grid
 * of awkward shapes, checked on dQ, dK and dV against the double
 * reference (at each ISA for the host backends); the gradients bitwise the
 * same for 1, 2 and 3 threads; and bugs planted in tiled's backward, each
 * of which the checker must reject. A backend without a backward reports
 * SKIP with its reason. */
#include <math.h>
#include <string.h>

#include "kernels/half.h"
#include "tap.h"
#include "tiled/tiled.h"
#include "util.h"

typedef struct bwd_case {
    int b, h, hkv, nq, nk, dk, dv;
    bool causal;
    const int *kv_len;
    attn_dtype dt;
    attn_mods mods;
    attn_pass pass;
    attn_fill_kind fill;
} bwd_case;

static const int kv_empty[] = { 64, 1, 0 };   /* full, one key, none (an empty item) */
static const int kv_tail[] = { 129, 100 }, kv_short[] = { 90, 40 };

#define B ATTN_DTYPE_BF16
#define H ATTN_DTYPE_FP16
#define BWD ATTN_PASS_BWD
#define FB ATTN_PASS_FWDBWD

static const bwd_case grid[] = {
    { 1, 2, 0, 64, 64, 16, 16, .pass = BWD },
    { 1, 4, 2, 77, 129, 32, 32, .causal = true, .pass = BWD },     /* G 2, Nq < Nk */
    { 1, 4, 2, 129, 77, 32, 32, .causal = true, .pass = BWD },     /* Nq > Nk: empty rows */
    { 1, 8, 2, 100, 100, 16, 16, .causal = true, .pass = BWD },    /* G 4 */
    { 2, 4, 1, 65, 129, 24, 24, .pass = BWD },                     /* multi-query */
    { 3, 2, 0, 64, 64, 16, 16, .causal = true, .kv_len = kv_empty, .pass = BWD },
    { 2, 3, 0, 150, 129, 40, 24, .kv_len = kv_tail, .pass = BWD }, /* dk != dv */
    { 1, 2, 0, 131, 131, 33, 17, .causal = true, .pass = BWD },    /* no tile divides */
    { 1, 4, 2, 129, 129, 64, 64, .causal = true, .dt = B, .pass = BWD },
    { 2, 4, 4, 70, 90, 32, 32, .kv_len = kv_short, .dt = H, .pass = BWD },
    { 2, 4, 2, 129, 129, 32, 32, .causal = true, .kv_len = kv_tail, .pass = BWD,
      .mods = { .window = true, .left = 40, .right = 3, .softcap = 4.0f, .alibi = true } },
    { 1, 2, 0, 129, 129, 64, 64, .causal = true, .pass = BWD, .fill = ATTN_FILL_EXTREME },
    { 2, 4, 2, 100, 129, 32, 48, .causal = true, .kv_len = kv_tail, .pass = FB },
    { 1, 4, 1, 129, 129, 32, 32, .dt = B, .pass = FB,
      .mods = { .softcap = 3.0f } },
};
#define NGRID (int)(sizeof(grid) / sizeof(grid[0]))

static attn_problem problem_of(const bwd_case *g)
{
    return (attn_problem){ .batch = g->b, .heads = g->h, .kv_heads = g->hkv, .seq_q = g->nq,
                           .seq_kv = g->nk, .d_k = g->dk, .d_v = g->dv,
                           .scale = (float)(1.0 / sqrt((double)g->dk)), .causal = g->causal,
                           .kv_len = g->kv_len, .dtype = g->dt, .kv_dtype = g->dt,
                           .mods = g->mods, .pass = g->pass };
}

static void grid_one(const attn_backend *be, const bwd_case *g, attn_isa isa)
{
    attn_problem p = problem_of(g);
    p.kind = be->kind;
    char shape[256], at[32] = "";
    attn_problem_describe(&p, shape, sizeof(shape));
    if (isa != ATTN_ISA_AUTO)
        snprintf(at, sizeof(at), " --isa %s", attn_isa_name(isa));
    attn_setup s = test_setup(g->fill, 0);
    s.isa = isa;
    attn_result r;
    const attn_verdict v = run_case_setup(be, &p, &s, &r);
    if (v == ATTN_SKIPPED) {
        tap_skip(r.why, "%s%s %s", be->name, at, shape);
        return;
    }
    if (!tap_ok(v == ATTN_PASSED, "%s%s %s fill=%s", be->name, at, shape, attn_fill_name(g->fill)))
        tap_diag("%s: %s | %s", attn_verdict_str(v), r.why, r.repro);
}

/* The gradients of be on p at a thread count, straight through the verbs. */
static bool grads_with(const attn_backend *be, const attn_problem *p, const attn_tensors *in,
                       int threads, float *out, const attn_sizes *sz)
{
    attn_tracker tr;
    attn_tracker_init(&tr);
    const attn_config cfg = { .threads = threads, .alloc = &tr.iface, .device = -1 };
    attn_tensors t = *in;
    t.o = out;
    t.lse = out + sz->o;
    t.dq = t.lse + sz->rows;
    t.dk = t.dq + sz->dq;
    t.dv = t.dk + sz->dk;
    void *state = NULL;
    bool ok = be->prepare(p, &cfg, &state) == ATTN_OK;
    if (ok)
        ok = be->bind(state, &t) == ATTN_OK && be->run(state) == ATTN_OK &&
             be->read_grads(state, t.dq, t.dk, t.dv) == ATTN_OK;
    if (state)
        be->release(state);
    attn_tracker_destroy(&tr);
    return ok;
}

/* dQ, dK, dV (and O, L) bitwise the same with 1, 2 and 3 threads. */
static void thread_invariance(const attn_backend *be, const attn_problem *p, const char *what)
{
    char why[256] = "";
    if (attn_backend_usable(be, why, sizeof(why)) != ATTN_OK ||
        attn_backend_supports(be, p, &(attn_config){ .threads = 1, .device = -1 }, why,
                              sizeof(why)) != ATTN_OK) {
        tap_skip(why, "%s: %sgradients independent of the thread count", be->name, what);
        return;
    }
    attn_sizes sz;
    attn_problem_sizes(p, &sz);
    const size_t outs = sz.o + sz.rows + sz.dq + sz.dk + sz.dv;
    float *buf = attn_host_alloc((sz.q + sz.k + sz.v + sz.o + 2 * outs) * sizeof(float));
    if (!buf) {
        printf("Bail out! out of memory\n");
        exit(2);
    }
    float *q = buf, *k = q + sz.q, *v = k + sz.k, *d = v + sz.v, *o1 = d + sz.o, *o2 = o1 + outs;
    attn_fill(q, sz.q, ATTN_FILL_NORMAL, 5, ATTN_TENSOR_Q, 1);
    attn_fill(k, sz.k, ATTN_FILL_NORMAL, 5, ATTN_TENSOR_K, 1);
    attn_fill(v, sz.v, ATTN_FILL_NORMAL, 5, ATTN_TENSOR_V, 1);
    attn_fill(d, sz.o, ATTN_FILL_NORMAL, 5, ATTN_TENSOR_DOUT, 1);
    const attn_tensors in = { .q = q, .k = k, .v = v, .dout = d };
    bool same = grads_with(be, p, &in, 1, o1, &sz);
    for (int th = 2; same && th <= 3; th++)
        same = grads_with(be, p, &in, th, o2, &sz) && !memcmp(o1, o2, outs * sizeof(float));
    tap_ok(same, "%s: %sO, L, dQ, dK, dV bitwise identical with 1, 2 and 3 threads", be->name,
           what);
    attn_host_free(buf);
}

/* Planted in tiled's backward: each bug FAILS the check, the clean run
 * PASSES on the same case. */
static void planted(void)
{
    const attn_backend *be = attn_backend_find("tiled");
    static const int kv[] = { 129, 90 };
    const attn_problem p = { .batch = 2, .heads = 4, .kv_heads = 2, .seq_q = 100, .seq_kv = 129,
                             .d_k = 32, .d_v = 32, .scale = 0.17f, .causal = true,
                             .kv_len = kv, .pass = ATTN_PASS_BWD };
    static const struct { int bug; const char *what; } bugs[] = {
        { ATTN_TILED_PLANT_NONE, "no bug" },
        { ATTN_TILED_PLANT_BWD_D_WRONG_O, "D computed from the next row's O" },
        { ATTN_TILED_PLANT_BWD_NO_GROUP_SUM, "dK, dV not summed over the group" },
        { ATTN_TILED_PLANT_BWD_SCALE_TWICE, "the scale applied twice to dQ" },
        { ATTN_TILED_PLANT_BWD_WRONG_L, "one tile's P recomputed with the next row's L" },
    };
    for (size_t x = 0; x < sizeof(bugs) / sizeof(bugs[0]); x++) {
        attn_tiled_plant(bugs[x].bug);
        attn_result r;
        const attn_verdict v = run_case(be, &p, ATTN_FILL_NORMAL, 0, &r);
        attn_tiled_plant(ATTN_TILED_PLANT_NONE);
        const attn_verdict want = bugs[x].bug ? ATTN_FAILED : ATTN_PASSED;
        if (!tap_ok(v == want, "tiled: planted: %s: %s", bugs[x].what, attn_verdict_str(v)))
            tap_diag("%s | %s", r.why, r.repro);
        else if (bugs[x].bug)
            tap_diag("%s", r.why);
    }
}
#define NPLANTED 5

int main(void)
{
    const int isas = ATTN_ISA_COUNT - ATTN_ISA_C;
    int runs = 0;
    for (size_t i = 0; i < attn_backend_count(); i++)
        runs += 1 + (attn_backend_has_devices(attn_backend_get(i)) ? 0 : isas);
    tap_plan(runs * NGRID + 2 * (int)attn_backend_count() + NPLANTED);

    static const int kv[] = { 200, 77 };
    /* Few K/V heads (tiled cuts each into chunks of keys) and many. */
    const attn_problem inv = { .batch = 2, .heads = 6, .kv_heads = 2, .seq_q = 150,
                               .seq_kv = 200, .d_k = 40, .d_v = 24, .scale = 0.15f,
                               .causal = true, .kv_len = kv, .pass = ATTN_PASS_BWD,
                               .mods = { .window = true, .left = 90, .softcap = 3.0f,
                                         .alibi = true } };
    attn_problem many = { .batch = 3, .heads = 4, .seq_q = 70, .seq_kv = 130, .d_k = 16,
                          .d_v = 16, .scale = 0.25f, .pass = ATTN_PASS_FWDBWD };
    for (size_t i = 0; i < attn_backend_count(); i++) {
        const attn_backend *be = attn_backend_get(i);
        char why[256] = "";
        const bool usable = attn_backend_usable(be, why, sizeof(why)) == ATTN_OK;
        const int n = attn_backend_has_devices(be) ? 0 : isas;
        for (int x = -1; x < n; x++) {
            const attn_isa isa = x < 0 ? ATTN_ISA_AUTO : (attn_isa)(ATTN_ISA_C + x);
            char isa_why[128];
            snprintf(isa_why, sizeof(isa_why), "this CPU or build cannot run the %s kernels",
                     attn_isa_name(isa));
            /* Each case runs once with the same arithmetic (util.h). */
            char same_why[160];
            const bool repeat = x >= 0 && attn_isa_usable(isa) &&
                                isa_repeats(be, isa, same_why, sizeof(same_why));
            for (int c = 0; c < NGRID; c++) {
                if (!usable)
                    tap_skip(why, "%s backward case %d", be->name, c);
                else if (!attn_isa_usable(isa))
                    tap_skip(isa_why, "%s --isa %s backward case %d", be->name,
                             attn_isa_name(isa), c);
                else if (repeat)
                    tap_skip(same_why, "%s --isa %s backward case %d", be->name,
                             attn_isa_name(isa), c);
                else
                    grid_one(be, &grid[c], isa);
            }
        }
        attn_problem pi = inv, pm = many;
        pi.kind = pm.kind = be->kind;
        thread_invariance(be, &pi, "GQA, causal, padded, window, softcap, ALiBi: ");
        thread_invariance(be, &pm, "fwdbwd, B = 3, H = 4: ");
    }
    planted();
    return 0;
}

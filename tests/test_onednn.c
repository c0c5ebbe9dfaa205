/* What is particular to the onednn backend, beyond the grid every backend
 * passes in test_backends: its plans stay on oneDNN's JIT kernels, a plan
 * that would not is refused, fully masked rows come out as zeros (oneDNN's
 * softmax gives NaN there), and its workspace prediction is exact. */
#include <math.h>
#include <string.h>

#include "tap.h"
#include "util.h"

#define NCHECKS 11

#if ATTN_HAVE_ONEDNN && ATTN_HAVE_OPENMP

#include "onednn.h"

static const int kv_two[] = { 129, 40 };
static const int kv_dead[] = { 0, 5, 64 };

/* Every mask shape the backend builds, with B > 1 where it matters. */
static void plans_are_jit(void)
{
    const struct { attn_problem p; const char *what; } cases[] = {
        { { 3, 4, 64, 64, 16, 16, 0.25f, false, NULL }, "no mask, B=3" },
        { { 3, 4, 64, 64, 16, 16, 0.25f, true, NULL }, "causal, B=3" },
        { { 2, 3, 7, 129, 64, 32, 0.125f, false, kv_two }, "padding, cross, dk != dv" },
        { { 2, 3, 129, 129, 64, 64, 0.125f, true, kv_two }, "causal and padding" },
        { { 1, 8, 1024, 1024, 64, 64, 0.125f, true, NULL }, "causal, B=1 H=8 N=1024" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char why[512] = "";
        const attn_status st = attn_onednn_plan_check(&cases[i].p, true, why, sizeof(why));
        if (!tap_ok(st == ATTN_OK, "onednn plan on JIT kernels: %s", cases[i].what))
            tap_diag("%s: %s", attn_status_str(st), why);
    }
}

/* Planted: the batch and head dimensions kept apart under a causal mask
 * broadcast over both, which oneDNN 2.6 runs only on its reference matmul. */
static void reference_fallback_refused(void)
{
    const attn_problem p = { 2, 3, 129, 129, 64, 64, 0.125f, true, NULL };
    char why[512] = "";
    const attn_status st = attn_onednn_plan_check(&p, false, why, sizeof(why));
    if (st == ATTN_OK) {
        tap_skip("this oneDNN has a JIT matmul for a [1,1,N,N] mask over [2,3,N,N] scores, so "
                 "there is no reference fallback to plant",
                 "onednn refuses a plan on oneDNN's reference implementation");
        return;
    }
    if (!tap_ok(st == ATTN_EUNSUPPORTED && strstr(why, "ref") && strstr(why, "Q.K^T"),
                "onednn refuses a plan on oneDNN's reference implementation, naming it"))
        tap_diag("%s: %s", attn_status_str(st), why);
}

/* Rows that see no key are exactly 0, never NaN: a whole batch with
 * kv_len 0, and the first Nq - Nk rows of a causal cross case. */
static void masked_rows_are_zero(void)
{
    const attn_backend *be = attn_backend_find("onednn");
    const attn_problem cases[] = {
        { 3, 2, 64, 64, 16, 24, 0.25f, true, kv_dead },
        { 1, 2, 64, 7, 16, 16, 0.25f, true, NULL },
    };
    for (size_t c = 0; c < 2; c++) {
        const attn_problem *p = &cases[c];
        attn_sizes sz;
        attn_problem_sizes(p, &sz);
        float *buf = attn_host_alloc((sz.q + sz.k + sz.v + sz.o) * sizeof(float));
        if (!buf) {
            printf("Bail out! out of memory\n");
            exit(2);
        }
        float *q = buf, *k = q + sz.q, *v = k + sz.k, *o = v + sz.v;
        attn_fill(q, sz.q, ATTN_FILL_NORMAL, 3, ATTN_TENSOR_Q, 1);
        attn_fill(k, sz.k, ATTN_FILL_NORMAL, 3, ATTN_TENSOR_K, 1);
        attn_fill(v, sz.v, ATTN_FILL_NORMAL, 3, ATTN_TENSOR_V, 1);
        for (size_t i = 0; i < sz.o; i++)
            o[i] = NAN;
        attn_tracker tr;
        attn_tracker_init(&tr);
        const attn_config cfg = { .threads = 2, .alloc = &tr.iface, .device = -1 };
        const attn_tensors t = { .q = q, .k = k, .v = v, .o = o };
        void *state = NULL;
        bool ok = be->prepare(p, &cfg, &state) == ATTN_OK && be->bind(state, &t) == ATTN_OK &&
                  be->run(state) == ATTN_OK && be->read(state, o) == ATTN_OK;
        size_t dead = 0, bad = 0, live_nan = 0;
        for (int b = 0; ok && b < p->batch; b++)
            for (int h = 0; h < p->heads; h++)
                for (int i = 0; i < p->seq_q; i++) {
                    const float *row = o + (((size_t)b * p->heads + h) * p->seq_q + i) * p->d_v;
                    const bool masked = attn_visible_end(p, b, i) == 0;
                    dead += masked;
                    for (int j = 0; j < p->d_v; j++) {
                        bad += masked && (row[j] != 0.0f || signbit(row[j]));
                        live_nan += !masked && isnan(row[j]);
                    }
                }
        if (state)
            be->release(state);
        attn_tracker_destroy(&tr);
        attn_host_free(buf);
        char shape[256];
        attn_problem_describe(p, shape, sizeof(shape));
        if (!tap_ok(ok && dead > 0 && bad == 0 && live_nan == 0,
                    "onednn: the %zu fully masked rows of %s are +0.0", dead, shape))
            tap_diag("ran: %d, non-zero values in masked rows: %zu, NaN in others: %zu", ok, bad,
                     live_nan);
    }
}

/* workspace() asks oneDNN for the same scratchpad prepare takes. */
static void workspace_exact(void)
{
    const attn_backend *be = attn_backend_find("onednn");
    const attn_problem ps[] = {
        { 2, 3, 129, 129, 64, 64, 0.125f, true, kv_two },
        { 1, 4, 256, 256, 64, 64, 0.125f, true, NULL },
        { 1, 2, 300, 70, 96, 32, 0.1f, false, NULL },
    };
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        attn_result r;
        const attn_verdict v = run_case(be, &ps[i], ATTN_FILL_NORMAL, 0, &r);
        if (!tap_ok(v == ATTN_PASSED && r.ws_peak == r.ws_predicted && r.ws_peak >= r.score_bytes,
                    "onednn workspace: predicted %zu bytes, took %zu, scores %zu", r.ws_predicted,
                    r.ws_peak, r.score_bytes))
            tap_diag("%s: %s", attn_verdict_str(v), r.why);
    }
}

int main(void)
{
    tap_plan(NCHECKS);
    plans_are_jit();
    reference_fallback_refused();
    masked_rows_are_zero();
    workspace_exact();
    return 0;
}

#else

int main(void)
{
    tap_plan(NCHECKS);
    const attn_backend *be = attn_backend_find("onednn");
    char why[256] = "";
    attn_backend_usable(be, why, sizeof(why));
    for (int i = 0; i < NCHECKS; i++)
        tap_skip(why, "onednn check %d of %d", i + 1, NCHECKS);
    return 0;
}

#endif

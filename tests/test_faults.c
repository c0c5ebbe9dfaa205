/* Fault injection: for every backend, the tracking allocator fails each of
 * the allocations a normal case makes, one at a time. Each such case must end
 * as a clean ERROR naming the failed allocation, free everything it took
 * (no block left live), and not crash; the harness goes on to the next. */
#include <string.h>

#include "tap.h"
#include "util.h"
#include "variant.h"

static attn_verdict run_faulted(const attn_backend *be, const attn_problem *p, size_t fail_at,
                                attn_result *r)
{
    const attn_setup s = { .threads = ATTN_HAVE_OPENMP ? 2 : 1, .seed = 3, .check_rows = -1,
                           .timer = { .warmup = 1, .reps = 0 }, .device = -1,
                           .fail_alloc = fail_at };
    return run_case_setup(be, p, &s, r);
}

/* A planted bug: prepare leaks its first block when the second allocation fails. */
typedef struct leaky { const attn_allocator *a; void *x, *y; } leaky;

static attn_status leaky_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    (void)p;
    leaky *s = attn_alloc(cfg->alloc, sizeof(*s));
    if (!s)
        return ATTN_ENOMEM;
    s->a = cfg->alloc;
    if (!(s->x = attn_alloc(cfg->alloc, 64)) || !(s->y = attn_alloc(cfg->alloc, 64))) {
        attn_free(cfg->alloc, s->x);   /* forgets s itself */
        return ATTN_ENOMEM;
    }
    *state = s;
    return ATTN_OK;
}
static attn_status leaky_bind(void *st, const attn_tensors *t) { (void)st, (void)t; return ATTN_OK; }
static attn_status leaky_run(void *st) { (void)st; return ATTN_OK; }
static attn_status leaky_read(void *st, float *o) { (void)st, (void)o; return ATTN_OK; }
static void leaky_release(void *st)
{
    leaky *s = st;
    attn_free(s->a, s->x);
    attn_free(s->a, s->y);
    attn_free(s->a, s);
}
static size_t leaky_workspace(const attn_problem *p, const attn_config *c) { (void)p, (void)c; return 256; }
static const attn_backend leaky_backend = {
    .name = "leaky",
    .prepare = leaky_prepare, .bind = leaky_bind, .run = leaky_run, .read = leaky_read,
    .release = leaky_release, .workspace = leaky_workspace,
};

int main(void)
{
    int kv[2] = { 40, 23 };
    attn_problem p = { 2, 2, 40, 40, 16, 24, 0.25f, false, kv, ATTN_KIND_SOFTMAX };
    p.var = attn_variant_defaults();
    p.var.globals = 3, p.var.random_blocks = 2, p.var.block = 8;
    p.var.features = 12, p.var.proj = 10;
    for (size_t b = 0; b < attn_backend_count(); b++) {
        const attn_backend *be = attn_backend_get(b);
        char why[256];
        if (attn_backend_usable(be, why, sizeof(why)) != ATTN_OK) {
            tap_skip(why, "%s: not usable here", be->name);
            continue;
        }
        attn_result r;
        if (run_faulted(be, &p, 0, &r) != ATTN_PASSED) {
            tap_ok(false, "%s without a fault: %s %s", be->name, attn_verdict_str(r.verdict), r.why);
            continue;
        }
        const size_t calls = r.alloc_calls;
        size_t clean = 0, first_bad = 0;
        char bad[512] = "";
        for (size_t kth = 1; kth <= calls; kth++) {
            run_faulted(be, &p, kth, &r);
            const bool ok = r.verdict == ATTN_ERROR && r.leaked == 0 && strstr(r.why, "on purpose");
            if (ok) {
                clean++;
            } else if (!first_bad) {
                first_bad = kth;
                snprintf(bad, sizeof(bad), "%s, %zu block(s) left: %s", attn_verdict_str(r.verdict),
                         r.leaked, r.why);
            }
        }
        tap_ok(calls > 0 && clean == calls,
               "%s: each of its %zu allocations failed in turn gives a clean ERROR, nothing left "
               "allocated (%zu of %zu)%s%s", be->name, calls, clean, calls,
               first_bad ? "; first bad: " : "", bad);
    }
    attn_result r;
    run_faulted(&leaky_backend, &p, 3, &r);
    tap_ok(r.verdict == ATTN_FAILED && r.leaked == 1 && strstr(r.why, "release leaked"),
           "planted: a prepare that leaks on its error path is FAILED, not a clean ERROR "
           "(%s: %s; %zu block left)", attn_verdict_str(r.verdict), r.why, r.leaked);
    return tap_done();
}

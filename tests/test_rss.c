/* The peak-RSS measurement sees memory a backend takes behind the tracking
 * allocator's back (as a library would): a wrapper around naive that holds a
 * touched 64 MiB block from prepare to release. */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "util.h"

enum { BIG = 64 << 20 };

typedef struct wrap {
    void *inner;
    char *big;
} wrap;

static const attn_backend *naive;
static bool take_big;

static size_t wrap_workspace(const attn_problem *p, const attn_config *cfg)
{
    return naive->workspace(p, cfg);
}

static attn_status wrap_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    wrap *w = calloc(1, sizeof(*w));
    if (!w)
        return ATTN_ENOMEM;
    if (take_big) {
        w->big = malloc(BIG);
        if (!w->big) {
            free(w);
            return ATTN_ENOMEM;
        }
        memset(w->big, 1, BIG);
    }
    attn_status st = naive->prepare(p, cfg, &w->inner);
    if (st != ATTN_OK) {
        free(w->big);
        free(w);
        return st;
    }
    *state = w;
    return ATTN_OK;
}

static attn_status wrap_bind(void *s, const attn_tensors *t) { return naive->bind(((wrap *)s)->inner, t); }
static attn_status wrap_run(void *s) { return naive->run(((wrap *)s)->inner); }
static attn_status wrap_read(void *s, float *o) { return naive->read(((wrap *)s)->inner, o); }

static void wrap_release(void *s)
{
    wrap *w = s;
    naive->release(w->inner);
    free(w->big);
    free(w);
}

static const attn_backend wrapped = {
    .name = "rss-wrap", .summary = "naive plus 64 MiB outside the tracker",
    .prepare = wrap_prepare, .bind = wrap_bind, .run = wrap_run,
    .read = wrap_read, .release = wrap_release, .workspace = wrap_workspace,
};

int main(void)
{
    naive = attn_backend_find("naive");
    const attn_problem p = { .batch = 1, .heads = 2, .seq_q = 64, .seq_kv = 64, .d_k = 16,
                             .d_v = 16, .scale = 0.25f };
    attn_result r;
    take_big = true;
    run_case(&wrapped, &p, ATTN_FILL_NORMAL, 0, &r);
    if (!r.rss_known) {
        tap_skip("the kernel refused to reset the peak RSS (/proc/self/clear_refs)",
                 "peak RSS growth sees a 64 MiB block");
        tap_skip("the kernel refused to reset the peak RSS (/proc/self/clear_refs)",
                 "peak RSS growth is small without it");
        return tap_done();
    }
    /* Within 5%: the process may hand a few other pages back meanwhile. */
    tap_ok(r.verdict == ATTN_PASSED && r.rss_peak >= BIG / 20 * 19 && r.rss_peak < 2 * (uint64_t)BIG,
           "peak RSS growth sees a 64 MiB block (%.1f MiB)", (double)r.rss_peak / (1 << 20));
    tap_ok(r.ws_peak < (1 << 20), "the tracking allocator does not (%zu bytes)", r.ws_peak);
    take_big = false;
    run_case(&wrapped, &p, ATTN_FILL_NORMAL, 0, &r);
    tap_ok(r.rss_known && r.rss_peak < 8 << 20, "peak RSS growth is small without it (%.1f MiB)",
           (double)r.rss_peak / (1 << 20));
    return tap_done();
}

/* Shared by the test programs: run one backend on one problem through the
 * same case driver attnbench uses, with seeded inputs and the reference. */
#ifndef ATTN_TEST_UTIL_H
#define ATTN_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "case.h"
#include "config.h"
#include "fill.h"
#include "memory.h"

/* One case under setup s: s's seeded inputs (s->fill, s->seed), the
 * reference with s->check_rows, then the case driver. */
static inline attn_verdict run_case_setup(const attn_backend *be, const attn_problem *p,
                                          const attn_setup *s, attn_result *r)
{
    attn_sizes sz;
    if (!attn_problem_sizes(p, &sz)) {
        fprintf(stderr, "test: problem overflows\n");
        exit(2);
    }
    float *q = attn_host_alloc(sz.q * sizeof(float));
    float *k = attn_host_alloc(sz.k * sizeof(float));
    float *v = attn_host_alloc(sz.v * sizeof(float));
    if (!q || !k || !v) {
        fprintf(stderr, "test: out of memory\n");
        exit(2);
    }
    attn_fill(q, sz.q, s->fill, s->seed, ATTN_TENSOR_Q, s->threads);
    attn_fill(k, sz.k, s->fill, s->seed, ATTN_TENSOR_K, s->threads);
    attn_fill(v, sz.v, s->fill, s->seed, ATTN_TENSOR_V, s->threads);
    const attn_tensors in = { .q = q, .k = k, .v = v };
    attn_ref ref;
    if (attn_ref_compute(&ref, p, &in, s->check_rows, s->seed, s->threads) != ATTN_OK) {
        fprintf(stderr, "test: out of memory for the reference\n");
        exit(2);
    }
    attn_case_run(r, be, p, &in, &ref, s, "attnbench");
    attn_ref_free(&ref);
    attn_host_free(q);
    attn_host_free(k);
    attn_host_free(v);
    return r->verdict;
}

/* tile_q, tile_kv: --tile for the case (0, 0: the backend's own choice). */
static inline attn_verdict run_case_tiled(const attn_backend *be, const attn_problem *p,
                                          attn_fill_kind fill, long check_rows, int tile_q,
                                          int tile_kv, attn_result *r)
{
    const attn_setup s = { .threads = ATTN_HAVE_OPENMP ? 2 : 1, .seed = 7, .fill = fill,
                           .check_rows = check_rows,
                           .timer = { .warmup = 1, .reps = 2, .min_time = 1e-4 },
                           .tile_q = tile_q, .tile_kv = tile_kv, .device = -1 };
    return run_case_setup(be, p, &s, r);
}

static inline attn_verdict run_case(const attn_backend *be, const attn_problem *p,
                                    attn_fill_kind fill, long check_rows, attn_result *r)
{
    return run_case_tiled(be, p, fill, check_rows, 0, 0, r);
}

#endif

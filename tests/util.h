/* Shared by the test programs: run one backend on one problem through the
 * same case driver attnbench uses, with seeded inputs and the reference. */
#ifndef ATTN_TEST_UTIL_H
#define ATTN_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case.h"
#include "config.h"
#include "fill.h"
#include "inputs.h"
#include "kernels/kernels.h"
#include "memory.h"

/* One case under setup s: its inputs and reference made the way attnbench
 * makes them (harness/inputs.c), then the case driver. */
static inline attn_verdict run_case_setup(const attn_backend *be, const attn_problem *p,
                                          const attn_setup *s, attn_result *r)
{
    attn_inputs in;
    char why[4400];
    /* A case the backend refuses is SKIPPED before its inputs and their
     * double reference are made: those were most of a refused case's time,
     * 50 of test_backends' 134 s under the sanitizers. */
    if (attn_case_refused(be, p, s, why, sizeof(why))) {
        attn_case_skip(r, be, p, s, "attnbench", why);
        return r->verdict;
    }
    if (attn_inputs_make(&in, p, s, why, sizeof(why)) != ATTN_OK) {
        fprintf(stderr, "test: %s\n", why);
        exit(2);
    }
    const attn_tensors t = attn_inputs_tensors(&in);
    attn_case_run(r, be, p, &t, &in.ref, s, "attnbench");
    attn_inputs_free(&in);
    return r->verdict;
}

/* The backends whose arithmetic takes nothing from kernels/ (naive's own
 * loops, oneDNN's JIT; docs/command-line.md, --isa): a case of theirs at
 * any ISA repeats the run without --isa. test_backends checks that it
 * does, bitwise. */
static inline bool isa_free(const attn_backend *be)
{
    return !strcmp(be->name, "naive") || !strcmp(be->name, "onednn");
}

/* Whether the per-ISA grids' case of be at isa (usable here) would repeat
 * a run of the grid without --isa, with why: the same kernels (the widest
 * ISA, which that run took) or none. */
static inline bool isa_repeats(const attn_backend *be, attn_isa isa, char *why, size_t len)
{
    if (isa_free(be)) {
        snprintf(why, len, "%s takes nothing from kernels/: --isa %s repeats its run above",
                 be->name, attn_isa_name(isa));
        return true;
    }
    if (attn_kernels_for(isa) == attn_kernels_best()) {
        snprintf(why, len, "the %s kernels ran this case above, as the widest (no --isa)",
                 attn_isa_name(isa));
        return true;
    }
    return false;
}

/* The tests' setup: 2 threads (1 without OpenMP), seed 7, two short timed
 * repetitions, every other knob at its default. */
static inline attn_setup test_setup(attn_fill_kind fill, long check_rows)
{
    return (attn_setup){ .threads = ATTN_HAVE_OPENMP ? 2 : 1, .seed = 7, .fill = fill,
                         .check_rows = check_rows,
                         .timer = { .warmup = 1, .reps = 2, .min_time = 1e-4 }, .device = -1 };
}

/* tile_q, tile_kv: --tile for the case (0, 0: the backend's own choice). */
static inline attn_verdict run_case_tiled(const attn_backend *be, const attn_problem *p,
                                          attn_fill_kind fill, long check_rows, int tile_q,
                                          int tile_kv, attn_result *r)
{
    attn_setup s = test_setup(fill, check_rows);
    s.tile_q = tile_q;
    s.tile_kv = tile_kv;
    return run_case_setup(be, p, &s, r);
}

static inline attn_verdict run_case(const attn_backend *be, const attn_problem *p,
                                    attn_fill_kind fill, long check_rows, attn_result *r)
{
    return run_case_tiled(be, p, fill, check_rows, 0, 0, r);
}

#endif

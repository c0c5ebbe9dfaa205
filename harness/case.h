/* One case: one backend on one problem, driven through every verb of the
 * contract, checked against the reference, then timed. */
#ifndef ATTN_CASE_H
#define ATTN_CASE_H

#include "check.h"
#include "problem.h"
#include "reference.h"
#include "timer.h"

typedef enum attn_verdict {
    ATTN_PASSED = 0,
    ATTN_FAILED,     /* the output is wrong, or the backend broke the contract */
    ATTN_SKIPPED,    /* the backend cannot run this case here; why says why */
    ATTN_ERROR,      /* it should have run and could not (library, memory, device) */
    ATTN_VERDICT_COUNT
} attn_verdict;

const char *attn_verdict_str(attn_verdict v);

typedef struct attn_result {
    const attn_backend *be;
    attn_verdict verdict;
    char why[384];
    bool checked;
    attn_check check;
    attn_timing timing;
    size_t ws_predicted;    /* what workspace() said */
    size_t ws_peak;         /* what the tracking allocator saw */
    double flops;
    char repro[768];
} attn_result;

/* in holds Q, K, V (o unused); ref was computed from them for p. */
void attn_case_run(attn_result *r, const attn_backend *be, const attn_problem *p,
                   const attn_tensors *in, const attn_ref *ref, const attn_setup *s,
                   const char *prog);

#endif

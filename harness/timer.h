/* Timing of a backend's run verb: warm-up, then timed repetitions. */
#ifndef ATTN_TIMER_H
#define ATTN_TIMER_H

#include "backend.h"

typedef struct attn_timing {
    int reps;               /* timed runs; 0 when not timed */
    double median, min;     /* seconds, wall clock (CLOCK_MONOTONIC) */
} attn_timing;

/* Seconds on CLOCK_MONOTONIC. */
double attn_now(void);

/* Runs be->run(state) warmup times untimed, then reps times, each timed on
 * its own. Stops at the first status other than ATTN_OK and returns it. */
attn_status attn_time_runs(const attn_backend *be, void *state, int warmup, int reps,
                           attn_timing *t);

#endif

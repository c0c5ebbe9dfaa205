/* Timing of a backend's run verb: warm-up, iterations calibrated so that a
 * repetition lasts at least min_time, then repetitions until reps are done or
 * the max_time budget is spent (never fewer than 2). */
#ifndef ATTN_TIMER_H
#define ATTN_TIMER_H

#include "backend.h"
#include "stats.h"

#define ATTN_MAX_REPS 100

typedef struct attn_timer_opts {
    int warmup;          /* untimed runs, at least; the warm-up also lasts >= min_time */
    int reps;            /* repetitions wanted; 0: do not time */
    double min_time;     /* seconds a repetition lasts at least */
    double max_time;     /* seconds the repetitions of one case may take; 0: no budget */
} attn_timer_opts;

typedef struct attn_timing {
    int reps;                       /* repetitions done; 0 when not timed */
    long iterations;                /* runs per repetition */
    double real[ATTN_MAX_REPS];     /* seconds per run, wall clock (CLOCK_MONOTONIC) */
    double cpu[ATTN_MAX_REPS];      /* seconds per run, process CPU time (all threads) */
    attn_stats real_stats, cpu_stats;
    /* Device backends with timestamps: seconds per run on the device's own
     * clock, the dispatches only (no submission, no waiting, no copies). */
    bool device_known;
    double device[ATTN_MAX_REPS];
    attn_stats device_stats;
    bool budget_hit;                /* max_time stopped it before reps */
    double idle_wait_s;             /* waited for other threads to go idle (attn_quiesce) */
    bool busy_threads;              /* ... and they never did: the times may be low */
} attn_timing;

/* Waits until no other thread of this process wants a core: a BLAS pool
 * spin-waiting for work (OpenBLAS's workers spin for about 0.1 s after the
 * library loads, whatever its thread count), or an OpenMP team spinning after
 * its last region. Timing while one spins takes a core from the runs. Polls
 * every 2 ms until two polls in a row find no other thread runnable (state R
 * in /proc/self/task; without /proc: the process used under a tenth of the
 * poll's time as CPU time), for at most max_s. Returns the seconds waited,
 * negated when it gave up. */
double attn_quiesce(double max_s);

/* Seconds on CLOCK_MONOTONIC, and process CPU seconds. */
double attn_now(void);
double attn_cpu_now(void);

/* The clock's advertised resolution and its smallest observed step, in seconds. */
void attn_clock_resolution(double *advertised, double *observed);

/* Times run(ctx): the timed region, repeatable. device_time (may be NULL)
 * gives the seconds the last run took on a device's own clock, false when
 * there is none. Stops at the first status other than ATTN_OK and returns it. */
typedef attn_status attn_run_fn(void *ctx);
typedef bool attn_device_time_fn(void *ctx, double *seconds);
attn_status attn_time_calls(attn_run_fn *run, attn_device_time_fn *device_time, void *ctx,
                            const attn_timer_opts *o, attn_timing *t);

/* The same for a backend's run verb on its prepared state. */
attn_status attn_time_runs(const attn_backend *be, void *state, const attn_timer_opts *o,
                           attn_timing *t);

#endif

#include <math.h>
#include <string.h>
#include <time.h>

#include "timer.h"

static double seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double attn_now(void)
{
    return seconds(CLOCK_MONOTONIC);
}

double attn_cpu_now(void)
{
    return seconds(CLOCK_PROCESS_CPUTIME_ID);
}

void attn_clock_resolution(double *advertised, double *observed)
{
    struct timespec res;
    clock_getres(CLOCK_MONOTONIC, &res);
    *advertised = (double)res.tv_sec + 1e-9 * (double)res.tv_nsec;
    double best = INFINITY;
    for (int i = 0; i < 1000; i++) {
        const double a = attn_now();
        double b;
        while ((b = attn_now()) == a)
            ;
        if (b - a < best)
            best = b - a;
    }
    *observed = best;
}

attn_status attn_time_runs(const attn_backend *be, void *state, const attn_timer_opts *o,
                           attn_timing *t)
{
    memset(t, 0, sizeof(*t));
    if (o->reps <= 0)
        return ATTN_OK;
    attn_status st;

    const double w0 = attn_now();
    long warm = 0;
    do {
        if ((st = be->run(state)) != ATTN_OK)
            return st;
        warm++;
    } while (warm < o->warmup || attn_now() - w0 < o->min_time);
    const double per_run = (attn_now() - w0) / (double)warm;
    t->iterations = per_run > 0 ? (long)ceil(o->min_time / per_run) : 1;
    if (t->iterations < 1)
        t->iterations = 1;

    /* Device backends keep their own time of the last run (read from the
     * device in run); fetching it is a field read inside the timed loop. */
    double dev;
    t->device_known = be->device_time && be->device_time(state, &dev);
    const int want = o->reps < ATTN_MAX_REPS ? o->reps : ATTN_MAX_REPS;
    const double start = attn_now();
    for (int r = 0; r < want; r++) {
        double dsum = 0;
        const double c0 = attn_cpu_now(), r0 = attn_now();
        for (long i = 0; i < t->iterations; i++) {
            if ((st = be->run(state)) != ATTN_OK)
                return st;
            if (t->device_known && be->device_time(state, &dev))
                dsum += dev;
        }
        const double r1 = attn_now(), c1 = attn_cpu_now();
        t->real[r] = (r1 - r0) / (double)t->iterations;
        t->cpu[r] = (c1 - c0) / (double)t->iterations;
        t->device[r] = dsum / (double)t->iterations;
        t->reps = r + 1;
        if (o->max_time > 0 && t->reps >= 2 && t->reps < want && r1 - start >= o->max_time) {
            t->budget_hit = true;
            break;
        }
    }
    attn_stats_compute(&t->real_stats, t->real, (size_t)t->reps);
    attn_stats_compute(&t->cpu_stats, t->cpu, (size_t)t->reps);
    if (t->device_known)
        attn_stats_compute(&t->device_stats, t->device, (size_t)t->reps);
    return ATTN_OK;
}

#include <stdlib.h>
#include <time.h>

#include "timer.h"

double attn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

attn_status attn_time_runs(const attn_backend *be, void *state, int warmup, int reps,
                           attn_timing *t)
{
    t->reps = 0;
    t->median = t->min = 0.0;
    for (int w = 0; w < warmup; w++) {
        attn_status st = be->run(state);
        if (st != ATTN_OK)
            return st;
    }
    if (reps <= 0)
        return ATTN_OK;
    double *s = malloc((size_t)reps * sizeof(double));
    if (!s)
        return ATTN_ENOMEM;
    for (int r = 0; r < reps; r++) {
        const double t0 = attn_now();
        attn_status st = be->run(state);
        s[r] = attn_now() - t0;
        if (st != ATTN_OK) {
            free(s);
            return st;
        }
    }
    qsort(s, (size_t)reps, sizeof(double), cmp_double);
    t->reps = reps;
    t->min = s[0];
    t->median = reps % 2 ? s[reps / 2] : 0.5 * (s[reps / 2 - 1] + s[reps / 2]);
    free(s);
    return ATTN_OK;
}

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

/* Whether another thread of this process is runnable (state R in
 * /proc/self/task/TID/stat): spinning, or waiting for a core to spin on.
 * -1 when /proc cannot tell. */
static int others_runnable(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    const long self = (long)syscall(SYS_gettid);
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        char *end;
        const long tid = strtol(e->d_name, &end, 10);
        if (*end || end == e->d_name || tid == self)
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/self/task/%ld/stat", tid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;   /* the thread has exited */
        const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *paren = strrchr(buf, ')');   /* the name may hold spaces and ')' */
        found = paren && paren[1] == ' ' && paren[2] == 'R';
    }
    closedir(d);
    return found;
}

double attn_quiesce(double max_s)
{
    const double t0 = attn_now();
    int quiet = 0;
    for (;;) {
        const double c0 = attn_cpu_now(), w0 = attn_now();
        nanosleep(&(struct timespec){ .tv_nsec = 2000000 }, NULL);
        const double w1 = attn_now();
        int busy = others_runnable();
        if (busy < 0)
            busy = attn_cpu_now() - c0 >= 0.1 * (w1 - w0);
        quiet = busy ? 0 : quiet + 1;
        if (quiet == 2)
            return attn_now() - t0;
        if (w1 - t0 >= max_s)
            return -(w1 - t0);
    }
}

attn_status attn_time_calls(attn_run_fn *run, attn_device_time_fn *device_time, void *ctx,
                            const attn_timer_opts *o, attn_timing *t)
{
    memset(t, 0, sizeof(*t));
    if (o->reps <= 0)
        return ATTN_OK;
    attn_status st;

    const double idle = attn_quiesce(1.0);
    t->idle_wait_s = fabs(idle);
    t->busy_threads = idle < 0;
    const double w0 = attn_now();
    long warm = 0;
    do {
        if ((st = run(ctx)) != ATTN_OK)
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
    t->device_known = device_time && device_time(ctx, &dev);
    const int want = o->reps < ATTN_MAX_REPS ? o->reps : ATTN_MAX_REPS;
    const double start = attn_now();
    for (int r = 0; r < want; r++) {
        double dsum = 0;
        const double c0 = attn_cpu_now(), r0 = attn_now();
        for (long i = 0; i < t->iterations; i++) {
            if ((st = run(ctx)) != ATTN_OK)
                return st;
            if (t->device_known && device_time(ctx, &dev))
                dsum += dev;
        }
        const double r1 = attn_now(), c1 = attn_cpu_now();
        t->real[r] = (r1 - r0) / (double)t->iterations;
        t->cpu[r] = (c1 - c0) / (double)t->iterations;
        t->device[r] = dsum / (double)t->iterations;
        t->reps = r + 1;
        /* The budget: no repetition starts that would, at the length of the
         * last one, end past it; never fewer than two. */
        if (o->max_time > 0 && t->reps >= 2 && t->reps < want &&
            (r1 - start) + (r1 - r0) > o->max_time) {
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

/* A backend's run and device clock as the timer's callbacks. */
typedef struct backend_run {
    const attn_backend *be;
    void *state;
} backend_run;

static attn_status backend_run_fn(void *ctx)
{
    const backend_run *b = ctx;
    return b->be->run(b->state);
}

static bool backend_device_time(void *ctx, double *seconds)
{
    const backend_run *b = ctx;
    return attn_backend_device_time(b->be, b->state, seconds);
}

attn_status attn_time_runs(const attn_backend *be, void *state, const attn_timer_opts *o,
                           attn_timing *t)
{
    backend_run b = { be, state };
    return attn_time_calls(backend_run_fn, backend_device_time, &b, o, t);
}

/* tiled's runs with stealing (backends/tiled/runs.h): every item handed
 * out exactly once, whatever the thread count, with threads that start
 * late or never, and a thread's own run taken from its front in order. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "tiled/runs.h"

enum { MAX_T = 8, MAX_N = 20000 };

typedef struct shared {
    tiled_run_slot runs[MAX_T];
    int threads;
    long n;
    atomic_int taken[MAX_N];     /* times item i was handed out */
    atomic_long stolen;          /* items taken by a thread not their run's */
    atomic_bool out_of_order;    /* an owner's items not in increasing order */
    atomic_bool wild;            /* an item outside [0, n) */
    int late;                    /* this thread starts after the others are done */
    int started;                 /* threads that run */
    atomic_int done;
} shared;

typedef struct worker {
    shared *sh;
    int tid;
} worker;

/* Whose run item i is in: the one tiled_runs_start put it in. */
static int owner(const shared *sh, long i)
{
    for (int t = 0; t < sh->threads; t++)
        if (i < sh->n * (t + 1) / sh->threads)
            return t;
    return -1;
}

static void pause_ns(long ns)
{
    struct timespec ts = { 0, ns };
    nanosleep(&ts, NULL);
}

static void *work(void *arg)
{
    const worker *w = arg;
    shared *sh = w->sh;
    if (w->tid == sh->late)
        while (atomic_load(&sh->done) < sh->threads - 1)
            pause_ns(100000);
    long last = -1;
    for (long i; (i = tiled_runs_next(sh->runs, w->tid, sh->threads)) >= 0;) {
        if (i >= sh->n) {
            atomic_store(&sh->wild, true);
            break;
        }
        atomic_fetch_add(&sh->taken[i], 1);
        if (owner(sh, i) != w->tid) {
            atomic_fetch_add(&sh->stolen, 1);
        } else {
            if (i < last)
                atomic_store(&sh->out_of_order, true);
            last = i;
        }
        /* Thread 0 is slow: after its first item it waits until every
         * other thread is done, so they run out first and steal the rest
         * of its run (whatever the scheduler does). */
        if (w->tid == 0 && sh->late < 0 && last == i && i == 0)
            while (atomic_load(&sh->done) < sh->started - 1)
                pause_ns(100000);
    }
    atomic_fetch_add(&sh->done, 1);
    return NULL;
}

/* Whether every item of [0, n) was taken exactly once (the first that was
 * not into *bad). */
static bool each_once(const shared *sh, long *bad)
{
    for (long i = 0; i < sh->n; i++)
        if (atomic_load(&sh->taken[i]) != 1) {
            *bad = i;
            return false;
        }
    return true;
}

/* n items over `threads` runs, `started` of the threads running (the rest
 * never come), `late` (or -1) starting when the others are done. */
static void one(int threads, int started, long n, int late)
{
    static shared sh;
    memset(&sh, 0, sizeof(sh));
    sh.threads = threads;
    sh.n = n;
    sh.late = late;
    sh.started = started;
    tiled_runs_start(sh.runs, threads, n);
    pthread_t th[MAX_T];
    worker w[MAX_T];
    for (int t = 0; t < started; t++) {
        w[t] = (worker){ &sh, t };
        pthread_create(&th[t], NULL, work, &w[t]);
    }
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    long bad = -1;
    const bool once = each_once(&sh, &bad);
    tap_ok(once && !atomic_load(&sh.out_of_order) && !atomic_load(&sh.wild),
           "%ld items, %d runs, %d thread%s%s: each taken once, each owner's in order%s",
           n, threads, started, started == 1 ? "" : "s", late >= 0 ? " (one late)" : "",
           atomic_load(&sh.wild) ? " (an item past the end)"
           : once                ? ""
                                 : " (an item taken other than once)");
    if (!once)
        tap_diag("item %ld taken %d times", bad, atomic_load(&sh.taken[bad]));
    if (threads > 1 && started == threads && late < 0 && n >= 64 * threads)
        tap_ok(atomic_load(&sh.stolen) >= n / threads - 1,
               "%ld items, %d threads, thread 0 slow: the rest of its run stolen (%ld stolen)",
               n, threads, atomic_load(&sh.stolen));
    if (started < threads && n >= threads)
        tap_ok(atomic_load(&sh.stolen) >= n / threads,
               "the runs of threads that never came were taken (%ld stolen)",
               atomic_load(&sh.stolen));
}

int main(void)
{
    static const long ns[] = { 0, 1, 2, 3, 7, 100, 1000 };
    for (int t = 1; t <= 5; t++)
        for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
            one(t, t, ns[i], -1);
    one(2, 1, 100, -1);
    one(4, 2, 1000, -1);
    one(3, 3, 1000, 2);
    one(8, 8, MAX_N, -1);

    /* The check itself: a planted item handed out twice is caught. */
    static shared planted;
    memset(&planted, 0, sizeof(planted));
    planted.threads = 1;
    planted.n = 10;
    for (long i = 0; i < planted.n; i++)
        atomic_store(&planted.taken[i], 1);
    atomic_store(&planted.taken[4], 2);
    long bad = -1;
    const bool caught = !each_once(&planted, &bad);
    tap_ok(caught && bad == 4,
           "planted: an item handed out twice is caught (item %ld)", bad);
    return tap_done();
}

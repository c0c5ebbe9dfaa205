/* Work in runs, with stealing: items [0, n) cut into one run of
 * consecutive items per thread, as OpenMP's static schedule cuts them;
 * each thread takes its own run's items from the front, in order, and
 * when its run is done takes the last item of the run with the most left,
 * until none is left anywhere.
 *
 * Split-KV chunks want both: a thread's own chunks in key order (the
 * rows the kernels prefetch past a chunk's end are its next chunk's
 * first: tiled.c, forward_view), and no thread idle while another still
 * has chunks to do. On a VM whose cores run at speeds of their own from
 * one moment to the next, the static schedule's two threads of a decode
 * (H = 32, Hkv = 8, Nq = 4, d = 128, bf16 K/V, Nk = 16K, the 2-core Zen 4
 * EPYC) finished a call 1.5 ms apart in the median, of 7 ms: one or the
 * other first, as often. tiled.c (forward_view) has the times with
 * stealing against without.
 *
 * Which thread computes an item never changes what it computes, so the
 * output stays the same bits for any thread count and any steal.
 *
 * One atomic word a run, on a cache line of its own: the front (high 32
 * bits) and the end (low 32) of the items left. The owner moves the front
 * on by an atomic add (past the end when a thief took its last item: then
 * it has none); a thief moves the end back by a compare-and-swap, only
 * while the front is before it. Each item is handed out once. */
#ifndef ATTN_TILED_RUNS_H
#define ATTN_TILED_RUNS_H

#include <stdatomic.h>
#include <stdint.h>

/* Items a set of runs can hold: an owner's front moves on once per call
 * of tiled_runs_next, at most n + 1 times, so it stays below 2^32. */
#define RUNS_MAX_ITEMS 0x7fffffffL

typedef struct tiled_run_slot {
    _Alignas(64) _Atomic uint64_t span;   /* front << 32 | end */
} tiled_run_slot;

static inline uint64_t span_of(long front, long end)
{
    return (uint64_t)front << 32 | (uint64_t)end;
}

/* Items [0, n) (at most RUNS_MAX_ITEMS) into runs r[0..threads), before
 * any thread takes one. */
static inline void tiled_runs_start(tiled_run_slot *r, int threads, long n)
{
    for (int t = 0; t < threads; t++)
        atomic_store_explicit(&r[t].span, span_of(n * t / threads, n * (t + 1) / threads),
                              memory_order_relaxed);
}

/* The next item for thread tid of `threads`: its own run's front, or the
 * end of the run with the most left; -1 when every run is done. A run
 * whose thread never came (fewer threads than runs) is taken by the
 * others. */
static inline long tiled_runs_next(tiled_run_slot *r, int tid, int threads)
{
    const uint64_t own = atomic_fetch_add_explicit(&r[tid].span, (uint64_t)1 << 32,
                                                   memory_order_relaxed);
    if ((uint32_t)(own >> 32) < (uint32_t)own)
        return (long)(own >> 32);
    for (;;) {
        int victim = -1;
        uint64_t most = 0, at = 0;
        for (int t = 0; t < threads; t++) {
            const uint64_t v = atomic_load_explicit(&r[t].span, memory_order_relaxed);
            const uint32_t f = (uint32_t)(v >> 32), e = (uint32_t)v;
            if (f < e && e - f > most) {
                most = e - f;
                victim = t;
                at = v;
            }
        }
        if (victim < 0)
            return -1;
        /* The run's end moved back by one, if no one else moved it first. */
        if (atomic_compare_exchange_weak_explicit(&r[victim].span, &at, at - 1,
                                                  memory_order_relaxed, memory_order_relaxed))
            return (long)(uint32_t)at - 1;
    }
}

#endif

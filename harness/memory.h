/* Memory accounting: the tracking allocator every backend allocates through,
 * and what the machine has available. */
#ifndef ATTN_MEMORY_H
#define ATTN_MEMORY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

typedef struct attn_tracker {
    attn_allocator iface;        /* hand &iface to backends */
    atomic_size_t current;       /* bytes live */
    atomic_size_t peak;          /* high-water mark of current */
    atomic_size_t calls;         /* allocation calls, successful or not */
    atomic_size_t live;          /* blocks not yet freed */
    atomic_size_t corrupt;       /* blocks whose tail canary was overwritten at free */
    size_t fail_at;              /* fault injection: call number fail_at (1-based) returns
                                    NULL; 0: none. Set after init, before use. */
    atomic_size_t injected;      /* calls failed on purpose */
    pthread_mutex_t lock;        /* guards the list of live blocks */
    void *blocks;
} attn_tracker;

void attn_tracker_init(attn_tracker *t);
/* Frees every block still live (a backend's leak, so a sweep does not keep
 * it), and returns how many there were. The counters keep what they saw. */
size_t attn_tracker_reclaim(attn_tracker *t);
/* Reclaims what is left and tears the tracker down. */
void attn_tracker_destroy(attn_tracker *t);

/* Bytes the kernel says can be allocated without swapping (MemAvailable),
 * or 0 when it cannot be read. */
uint64_t attn_mem_available(void);

/* Peak RSS of this process: reset the kernel's high-water mark (VmHWM) to
 * the current RSS through /proc/self/clear_refs; false where it is refused,
 * and then a peak cannot be measured (report it unknown, never zero). */
bool attn_rss_reset_peak(void);
/* VmHWM and VmRSS in bytes; false when /proc/self/status cannot be read. */
bool attn_rss_read(uint64_t *hwm, uint64_t *rss);

/* 64-byte aligned, untracked: for the harness's own inputs and references.
 * With huge pages on (the default), a block of ATTN_HUGE_MIN bytes or more
 * is 2 MiB aligned, its size rounded up to 2 MiB, and advised to the kernel
 * as MADV_HUGEPAGE: decoding streams all of K and V once per token, and on
 * 4 KiB pages every 4 KiB of it is a TLB miss and a new page for the
 * hardware prefetchers to find (docs/benchmarks.md, "Huge pages").
 * Whether the kernel grants them is its choice (attn_huge_pages_mode). */
enum { ATTN_HUGE_PAGE = 2 << 20, ATTN_HUGE_MIN = 4 << 20 };
void *attn_host_alloc(size_t bytes);
void attn_host_free(void *p);
/* --huge-pages on|off: set before any allocation it should apply to. */
void attn_host_huge_pages(bool on);
bool attn_host_huge_pages_on(void);
/* The transparent huge page mode of this kernel (the bracketed word of
 * /sys/kernel/mm/transparent_hugepage/enabled: always, madvise, never),
 * or "unknown"; into buf. */
const char *attn_huge_pages_mode(char *buf, size_t len);

#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "memory.h"

/* Block layout: [64-byte header][payload, 64-byte aligned][64-byte canary].
 * The canary catches writes past the end of a backend's own buffers. */
enum { HEAD = 64, TAIL = 64, CANARY = 0xA5 };
static const uint64_t MAGIC = 0x61747472616b6572ull;

typedef struct block_head {
    uint64_t magic;
    size_t bytes;
    struct block_head *prev, *next;   /* the tracker's live blocks */
} block_head;
_Static_assert(sizeof(block_head) <= HEAD, "block header must fit before the payload");

static void tracker_note_peak(attn_tracker *t, size_t now)
{
    size_t peak = atomic_load(&t->peak);
    while (now > peak && !atomic_compare_exchange_weak(&t->peak, &peak, now))
        ;
}

static void *tracker_alloc(void *ctx, size_t bytes)
{
    attn_tracker *t = ctx;
    const size_t call = atomic_fetch_add(&t->calls, 1) + 1;
    if (t->fail_at && call == t->fail_at) {
        atomic_fetch_add(&t->injected, 1);
        return NULL;
    }
    size_t total;
    if (__builtin_add_overflow(bytes, (size_t)(HEAD + TAIL + 63), &total))
        return NULL;
    total &= ~(size_t)63;
    unsigned char *base = aligned_alloc(64, total);
    if (!base)
        return NULL;
    block_head *h = (block_head *)base;
    h->magic = MAGIC;
    h->bytes = bytes;
    memset(base + HEAD + bytes, CANARY, TAIL);
    pthread_mutex_lock(&t->lock);
    h->prev = NULL;
    h->next = t->blocks;
    if (h->next)
        h->next->prev = h;
    t->blocks = h;
    pthread_mutex_unlock(&t->lock);
    atomic_fetch_add(&t->live, 1);
    tracker_note_peak(t, atomic_fetch_add(&t->current, bytes) + bytes);
    return base + HEAD;
}

static void tracker_free(void *ctx, void *ptr)
{
    attn_tracker *t = ctx;
    if (!ptr)
        return;
    unsigned char *base = (unsigned char *)ptr - HEAD;
    block_head *h = (block_head *)base;
    if (h->magic != MAGIC) {
        atomic_fetch_add(&t->corrupt, 1);
        return;  /* not ours, or its header was overwritten: do not free garbage */
    }
    const unsigned char *tail = base + HEAD + h->bytes;
    for (int i = 0; i < TAIL; i++) {
        if (tail[i] != CANARY) {
            atomic_fetch_add(&t->corrupt, 1);
            break;
        }
    }
    atomic_fetch_sub(&t->current, h->bytes);
    atomic_fetch_sub(&t->live, 1);
    pthread_mutex_lock(&t->lock);
    if (h->prev)
        h->prev->next = h->next;
    else
        t->blocks = h->next;
    if (h->next)
        h->next->prev = h->prev;
    pthread_mutex_unlock(&t->lock);
    h->magic = 0;
    free(base);
}

size_t attn_tracker_reclaim(attn_tracker *t)
{
    size_t n = 0;
    pthread_mutex_lock(&t->lock);
    for (block_head *h = t->blocks, *next; h; h = next, n++) {
        next = h->next;
        h->magic = 0;
        free(h);
    }
    t->blocks = NULL;
    pthread_mutex_unlock(&t->lock);
    return n;
}

void attn_tracker_init(attn_tracker *t)
{
    t->iface.alloc = tracker_alloc;
    t->iface.free = tracker_free;
    t->iface.ctx = t;
    atomic_init(&t->current, 0);
    atomic_init(&t->peak, 0);
    atomic_init(&t->calls, 0);
    atomic_init(&t->live, 0);
    atomic_init(&t->corrupt, 0);
    atomic_init(&t->injected, 0);
    t->fail_at = 0;
    pthread_mutex_init(&t->lock, NULL);
    t->blocks = NULL;
}

void attn_tracker_destroy(attn_tracker *t)
{
    attn_tracker_reclaim(t);
    pthread_mutex_destroy(&t->lock);
}

uint64_t attn_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kib = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
            break;
    fclose(f);
    return (uint64_t)kib * 1024u;
}

bool attn_rss_reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return false;
    const bool ok = fputs("5", f) >= 0;
    return (fclose(f) == 0) && ok;
}

bool attn_rss_read(uint64_t *hwm, uint64_t *rss)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return false;
    char line[256];
    unsigned long long h = 0, r = 0;
    int found = 0;
    while (fgets(line, sizeof(line), f)) {
        found += sscanf(line, "VmHWM: %llu kB", &h) == 1;
        found += sscanf(line, "VmRSS: %llu kB", &r) == 1;
    }
    fclose(f);
    *hwm = (uint64_t)h * 1024u;
    *rss = (uint64_t)r * 1024u;
    return found == 2;
}

static bool huge_pages = true;

void *attn_host_alloc(size_t bytes)
{
    size_t rounded;
    if (__builtin_add_overflow(bytes, (size_t)63, &rounded))
        return NULL;
    rounded &= ~(size_t)63;
    if (huge_pages && rounded >= ATTN_HUGE_MIN) {
        const size_t hp = ATTN_HUGE_PAGE;
        if (__builtin_add_overflow(rounded, hp - 1, &rounded))
            return NULL;
        rounded &= ~(hp - 1);
        void *p = aligned_alloc(hp, rounded);
        /* Advice: where the kernel's mode is never (or it declines) the
         * block stays on small pages, as the run's context line says. */
        if (p)
            (void)madvise(p, rounded, MADV_HUGEPAGE);
        return p;
    }
    return aligned_alloc(64, rounded ? rounded : 64);
}

void attn_host_huge_pages(bool on)
{
    huge_pages = on;
}

bool attn_host_huge_pages_on(void)
{
    return huge_pages;
}

const char *attn_huge_pages_mode(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return buf;
    char line[128];
    if (fgets(line, sizeof(line), f)) {
        const char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b && b > a + 1)
            snprintf(buf, len, "%.*s", (int)(b - a - 1), a + 1);
    }
    fclose(f);
    return buf;
}

void attn_host_free(void *p)
{
    free(p);
}

/* The tracking allocator: alignment, exact current and peak bytes, and the
 * tail canary that catches a write past the end of a block. */
#include <stdint.h>
#include <string.h>

#include "memory.h"
#include "tap.h"

int main(void)
{
    attn_tracker t;
    attn_tracker_init(&t);
    const attn_allocator *a = &t.iface;

    char *x = attn_alloc(a, 1000), *y = attn_alloc(a, 24);
    tap_ok(x && y && (uintptr_t)x % 64 == 0 && (uintptr_t)y % 64 == 0, "blocks are 64-byte aligned");
    tap_ok(atomic_load(&t.current) == 1024 && atomic_load(&t.peak) == 1024 && atomic_load(&t.live) == 2,
           "current and peak count the bytes asked for (%zu, %zu)", atomic_load(&t.current),
           atomic_load(&t.peak));
    attn_free(a, x);
    tap_ok(atomic_load(&t.current) == 24 && atomic_load(&t.peak) == 1024, "free lowers current, not peak");

    memset(y, 1, 24);
    attn_free(a, y);
    tap_ok(atomic_load(&t.corrupt) == 0, "a block written within bounds is not reported");

    char *z = attn_alloc(a, 10);
    z[10] = 0;
    attn_free(a, z);
    tap_ok(atomic_load(&t.corrupt) == 1, "a write one byte past a block is reported at free");
    tap_ok(atomic_load(&t.current) == 0 && atomic_load(&t.live) == 0, "nothing is live after the frees");
    attn_alloc(a, 100);
    attn_alloc(a, 200);
    tap_ok(attn_tracker_reclaim(&t) == 2 && attn_tracker_reclaim(&t) == 0,
           "reclaim frees the blocks left live, once");
    tap_ok(attn_alloc(a, SIZE_MAX - 8) == NULL, "a size that overflows gives NULL, not a small block");
    tap_ok(attn_mem_available() > 0, "MemAvailable is read from /proc/meminfo (%llu MiB)",
           (unsigned long long)(attn_mem_available() >> 20));
    attn_tracker_destroy(&t);

    /* The harness's own blocks: huge pages for large ones, by default. */
    tap_ok(attn_host_huge_pages_on(), "huge pages are on by default");
    const size_t big = (size_t)ATTN_HUGE_MIN + 4096, small = (size_t)ATTN_HUGE_MIN - 64;
    char *h = attn_host_alloc(big), *s = attn_host_alloc(small);
    tap_ok(h && (uintptr_t)h % ATTN_HUGE_PAGE == 0, "a block of %zu bytes is 2 MiB aligned", big);
    tap_ok(s && (uintptr_t)s % 64 == 0, "a block under ATTN_HUGE_MIN is 64-byte aligned");
    if (h) {
        memset(h, 1, big);   /* all of it usable, to its last byte */
        tap_ok(h[big - 1] == 1, "the rounded block holds what was asked for");
    }
    char mode[32];
    attn_huge_pages_mode(mode, sizeof(mode));
    tap_ok(!strcmp(mode, "always") || !strcmp(mode, "madvise") || !strcmp(mode, "never") ||
           !strcmp(mode, "unknown"), "the kernel's THP mode reads as a word (%s)", mode);
    attn_host_free(h);
    attn_host_free(s);
    attn_host_huge_pages(false);
    tap_ok(!attn_host_huge_pages_on(), "--huge-pages off turns them off");
    h = attn_host_alloc(big);
    tap_ok(h && (uintptr_t)h % 64 == 0, "off, a large block is still 64-byte aligned");
    attn_host_free(h);
    tap_ok(attn_host_alloc(SIZE_MAX - 8) == NULL, "a size that overflows gives NULL (host)");
    attn_host_huge_pages(true);
    tap_ok(attn_host_alloc(SIZE_MAX - 8) == NULL,
           "a size that overflows in the 2 MiB rounding gives NULL");
    return tap_done();
}

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
    return tap_done();
}

/* libFuzzer target: the .npy reader on arbitrary bytes. Built and run by
 * test_fuzz.sh with clang -fsanitize=fuzzer,address,undefined. A file that
 * parses must describe exactly the data it returns. -DPLANTED reads one
 * float past the array (the check that the harness reports memory errors). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz.npy", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();
    attn_npy a;
    char why[512];
    if (attn_npy_read(path, &a, why, sizeof(why))) {
        size_t count = 1;
        for (int i = 0; i < a.ndim; i++)
            count *= a.shape[i];
        if (count != a.count || (a.count && !a.data))
            abort();
        volatile float sum = 0;
        for (size_t i = 0; i < a.count; i++)
            sum += a.data[i];
#ifdef PLANTED
        sum += a.data[a.count];
#endif
        attn_npy_free(&a);
    }
    /* The integer reader over the same bytes (a serving batch's offsets). */
    if (attn_npy_read_ints(path, &a, why, sizeof(why))) {
        if (a.count && !a.ints)
            abort();
        volatile uint64_t isum = 0;
        for (size_t i = 0; i < a.count; i++)
            isum += (uint64_t)a.ints[i];
        attn_npy_free(&a);
    }
    return 0;
}

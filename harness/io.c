#include <errno.h>
#include <unistd.h>

#include "io.h"

bool attn_write_all(int fd, const void *buf, size_t n)
{
    const char *b = buf;
    while (n) {
        const ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        b += k;
        n -= (size_t)k;
    }
    return true;
}

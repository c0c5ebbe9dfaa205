/* libFuzzer target: the CSV reader behind --resume (harness/csv.c) on
 * arbitrary file contents. The file either resumes, with every complete row's
 * key remembered and a torn last row cut off, or is refused with the usage
 * exit code; no descriptor and no memory is leaked. Only the reading half of
 * csv.c runs, so what it links for writing rows aborts if reached.
 * -DPLANTED reads one byte past the last remembered key. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int attn_error(int code, const char *fmt, ...)
{
    (void)fmt;
    return code;
}

void attn_case_key(char *buf, size_t len, const attn_backend *be, const attn_problem *p,
                   const attn_setup *s)
{
    (void)buf, (void)len, (void)be, (void)p, (void)s;
    abort();
}

const char *attn_kind_name(attn_kind k)
{
    (void)k;
    abort();
}

const char *attn_setup_fill_name(const attn_setup *s)
{
    (void)s;
    abort();
}

const char *attn_verdict_str(attn_verdict v)
{
    (void)v;
    abort();
}

const char *attn_dtype_name(attn_dtype d)
{
    (void)d;
    abort();
}

const char *attn_pass_name(attn_pass x)
{
    (void)x;
    abort();
}

double attn_peak_gflops(const attn_peak *pk, const struct attn_problem *p)
{
    (void)pk, (void)p;
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1, next_fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz.csv", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();
    attn_csv c;
    if (attn_csv_open(&c, path, true) < 0) {
        struct stat st;
        if (fstat(fd, &st))
            abort();
        /* The torn tail is gone, every complete row is remembered. */
        const size_t kept = size ? size - c.torn_bytes : (size_t)st.st_size;
        if ((size_t)st.st_size != kept || (size && c.torn_bytes > size) ||
            (size && kept && data[kept - 1] != '\n'))
            abort();
        size_t rows = 0;
        for (size_t i = 0; size && i < kept; i++)
            rows += data[i] == '\n';
        if (size && c.nkeys != rows - 1)
            abort();
        for (size_t i = 0; i < c.nkeys; i++)
            if (!c.keys[i] || strpbrk(c.keys[i], ",\n") || !attn_csv_has(&c, c.keys[i]))
                abort();
#ifdef PLANTED
        if (c.nkeys) {
            const char *k = c.keys[c.nkeys - 1];
            volatile char past = k[strlen(k) + 1];
            (void)past;
        }
#endif
        attn_csv_close(&c);
    }
    /* No descriptor outlives a call. */
    const int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (probe < 0)
        abort();
    close(probe);
    if (next_fd < 0)
        next_fd = probe;
    else if (probe != next_fd)
        abort();
    return 0;
}

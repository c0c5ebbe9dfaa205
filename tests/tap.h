/* A small TAP producer: stdout carries only the TAP stream, chatter goes to
 * "# " lines. A test program exits 0 after a complete stream. */
#ifndef ATTN_TAP_H
#define ATTN_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int tap_count;
static int tap_failed;

static inline void tap_plan(int n)
{
    printf("1..%d\n", n);
}

__attribute__((format(printf, 2, 3)))
static inline bool tap_ok(bool ok, const char *fmt, ...)
{
    va_list ap;
    printf("%sok %d - ", ok ? "" : "not ", ++tap_count);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
    tap_failed += !ok;
    return ok;
}

__attribute__((format(printf, 2, 3)))
static inline void tap_skip(const char *why, const char *fmt, ...)
{
    va_list ap;
    printf("ok %d - ", ++tap_count);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(" # SKIP %s\n", why);
    fflush(stdout);
}

__attribute__((format(printf, 1, 2)))
static inline void tap_diag(const char *fmt, ...)
{
    va_list ap;
    fputs("# ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

/* Ends a stream whose plan is printed last (when the count is only known then). */
static inline int tap_done(void)
{
    printf("1..%d\n", tap_count);
    return 0;
}

#endif

/* --case-timeout: a shape's cases run in a child process, one child at a
 * time. The child announces each case before it starts and sends each
 * result through a pipe; the parent records them. A case that outlasts the
 * limit is killed and recorded TIMEOUT, one whose process dies is ERROR
 * with how it died, and a fresh child goes on with the next case (making
 * the inputs and the reference again). Only the parent writes the outputs,
 * so a killed case cannot tear them. */
#ifndef ATTN_ISOLATE_H
#define ATTN_ISOLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "case.h"

typedef struct attn_isolate_ops {
    /* In the child: run the cases of todo in order, each announced through
     * attn_isolate_start and sent through attn_isolate_done on fd; header
     * is true for the shape's first child. */
    void (*work)(void *ctx, int fd, const bool *todo, bool header);
    /* In the parent: case `backend` finished with r (naive: naive's median
     * so far, for speedups). */
    void (*done)(void *ctx, size_t backend, const attn_result *r, double naive);
    /* In the parent: case `backend` never finished: TIMEOUT or ERROR, why. */
    void (*lost)(void *ctx, size_t backend, attn_verdict v, const char *why);
    /* In the parent, before lost for every remaining case: the inputs or
     * the reference never finished, why. */
    void (*no_reference)(void *ctx, const char *why);
} attn_isolate_ops;

/* Runs the todo[0..n) cases of one shape until none is left; todo is
 * cleared case by case. timeout: seconds per case (and per reference). */
void attn_isolate_run(double timeout, bool *todo, size_t n, const attn_isolate_ops *ops,
                      void *ctx);

/* In the child: case `backend` starts (-1: the inputs and the reference). */
void attn_isolate_start(int fd, int backend);
/* In the child: case `backend` finished with r. */
void attn_isolate_done(int fd, int backend, const attn_result *r, double naive);

#endif

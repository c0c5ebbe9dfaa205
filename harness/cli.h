/* The command line: parsing and validation, before any work is done. */
#ifndef ATTN_CLI_H
#define ATTN_CLI_H

#include <stdio.h>

#include "problem.h"

/* Exit codes of attnbench (documented in the README and --help). */
enum {
    ATTN_EXIT_OK        = 0,  /* every case that ran PASSED */
    ATTN_EXIT_FAILED    = 1,  /* a case FAILED its correctness check */
    ATTN_EXIT_USAGE     = 2,  /* bad command line: option, value, backend name */
    ATTN_EXIT_TOO_LARGE = 3,  /* the shape overflows size_t or does not fit in memory */
    ATTN_EXIT_ERROR     = 4,  /* a case hit a runtime ERROR (library, device, memory) */
    ATTN_EXIT_NONE_RAN  = 5,  /* every requested case was SKIPPED */
};

typedef struct attn_opts {
    attn_problem p;
    int *kv_len;                /* [p.batch] when --kv-len was given, else NULL */
    attn_setup setup;
    const attn_backend **backends;
    size_t nbackends;
    bool explicit_backends;     /* --backend was given */
    bool list, help, version;
} attn_opts;

/* Parses argv into o. Returns -1 to go on, or an exit code after printing
 * one line to stderr that names the option and what it accepts. */
int attn_cli_parse(attn_opts *o, int argc, char **argv);
void attn_cli_free(attn_opts *o);
void attn_cli_usage(FILE *f, const char *prog);

#endif

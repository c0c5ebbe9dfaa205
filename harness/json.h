/* Google-Benchmark-shaped JSON: a context object and a benchmarks array, one
 * entry per repetition then _mean, _median, _stddev and _cv aggregates, so
 * that Google Benchmark's tools/compare.py reads it. Every time is in
 * microseconds: compare.py only pairs entries whose time units agree. */
#ifndef ATTN_JSON_H
#define ATTN_JSON_H

#include "case.h"
#include "machine.h"

/* Writes the whole file atomically (a temporary beside it, then rename):
 * prior (entries kept from an earlier run, or NULL) first, then res.
 * Returns -1 on success, else ATTN_EXIT_ERROR after one line on stderr. */
int attn_json_write(const char *path, const attn_machine *m, const attn_setup *s,
                    const char *exe, const char *prior, const attn_result *res, size_t n);

/* For --resume: the benchmark entries of a JSON file attnbench wrote, as text
 * to carry over, keeping only the cases done (their CSV key passes done(),
 * keys being the entry's run_name plus "/threads:T/seed:S"). NULL when there
 * is no such file or it is not ours. */
char *attn_json_prior(const char *path, unsigned long long seed,
                      bool (*done)(const void *ctx, const char *key), const void *ctx);

#endif

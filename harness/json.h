/* Google-Benchmark-shaped JSON: a context object and a benchmarks array, one
 * entry per repetition then _mean, _median, _stddev and _cv aggregates, so
 * that Google Benchmark's tools/compare.py reads it. Every time is in
 * microseconds: compare.py only pairs entries whose time units agree. */
#ifndef ATTN_JSON_H
#define ATTN_JSON_H

#include <stdio.h>

#include "case.h"
#include "machine.h"

/* Writes the whole file atomically (a temporary beside it, then rename):
 * prior (entries kept from an earlier run, or NULL) first, then res.
 * Returns -1 on success, else ATTN_EXIT_ERROR after one line on stderr. */
int attn_json_write(const char *path, const attn_machine *m, const attn_setup *s,
                    const char *exe, const char *prior, const attn_result *res, size_t n);

/* The pieces, for another program's JSON of the same shape (attnbench arch):
 * the file is begun (a temporary beside path, the context written), its
 * entries written, then finished (renamed over path). begin returns NULL
 * and finish ATTN_EXIT_ERROR after one line on stderr. */
FILE *attn_json_begin(const char *path, char *tmp, size_t len, const attn_machine *m,
                      const attn_setup *s, const char *exe);
int attn_json_finish(FILE *f, const char *path, const char *tmp);

/* One case's entries: one per repetition, then the mean, median, stddev
 * and cv aggregates (or one entry without times when it was not timed);
 * counters(f, ctx, seconds) adds its own fields, seconds being the entry's
 * time per run (0 when none). */
typedef struct attn_json_case {
    const char *name;
    int family, instance, threads;
    const attn_timing *timing;
    attn_verdict verdict;
    const char *why, *repro;
    void (*counters)(FILE *f, const void *ctx, double seconds);
    const void *ctx;
} attn_json_case;
void attn_json_entries(FILE *f, bool *first, const attn_json_case *c);
/* Fields of an entry, for counters. */
void attn_json_field_str(FILE *f, const char *key, const char *v);
void attn_json_field_num(FILE *f, const char *key, double v);

/* For --resume: the benchmark entries of a JSON file attnbench wrote, as text
 * to carry over, keeping only the cases done (their CSV key passes done(),
 * keys being the entry's run_name plus "/threads:T/seed:S"). NULL when there
 * is no such file or it is not ours. */
char *attn_json_prior(const char *path, unsigned long long seed,
                      bool (*done)(const void *ctx, const char *key), const void *ctx);

#endif

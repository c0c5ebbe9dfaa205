/* The command line: parsing and validation, before any work is done. */
#ifndef ATTN_CLI_H
#define ATTN_CLI_H

#include <stdio.h>

#include "lens.h"
#include "problem.h"

/* Exit codes of attnbench (documented in the README and --help). */
enum {
    ATTN_EXIT_OK        = 0,  /* every case that ran PASSED */
    ATTN_EXIT_FAILED    = 1,  /* a case FAILED its correctness check */
    ATTN_EXIT_USAGE     = 2,  /* bad command line: option, value, backend name, output file */
    ATTN_EXIT_TOO_LARGE = 3,  /* the shape overflows size_t or does not fit in memory */
    ATTN_EXIT_ERROR     = 4,  /* a case hit a runtime ERROR or TIMEOUT, or an output could not be written */
    ATTN_EXIT_NONE_RAN  = 5,  /* every requested case was SKIPPED */
};

/* A list of sizes from "64", "1,8,16", "256:4096:x2" (geometric) or "16:64:+16". */
typedef struct attn_list {
    int *v;
    size_t n;
} attn_list;

enum { ATTN_CAUSAL_NO = 1u << 0, ATTN_CAUSAL_YES = 1u << 1 };

typedef struct attn_opts {
    attn_list batch, heads, kv_heads, seq, seq_kv, dk, dv;  /* kv_heads, seq_kv, dv empty:
                                                               follow heads, seq, dk */
    attn_list dtype, kv_dtype;  /* --dtype, --kv-dtype: attn_dtype values; empty: fp32,
                                   and K/V follow Q */
    attn_list pass;             /* --pass: attn_pass values; empty: the forward */
    attn_list page;             /* --page: K/V pages of a serving batch, 0 packed; empty:
                                   packed (with --lens) or dense */
    attn_lens lens;             /* --lens: a serving batch's lengths; spec NULL: none */
    unsigned causal;            /* ATTN_CAUSAL_* bits: which of the two to run */
    float scale;
    bool scale_set;
    int *kv_len;                /* [nkv] when --kv-len was given, else NULL */
    int nkv;
    attn_setup setup;
    attn_variant var;           /* --globals, ...; its seed is --seed */
    attn_mods mods;             /* --window, --softcap, --alibi, --sinks, --v-from-k */
    unsigned mods_set;          /* ATTN_MOD_*s given on the command line */
    const struct attn_model **models;   /* --model presets, the outermost sweep dimension */
    size_t nmodels;
    bool model_list;            /* --model list */
    bool heads_set, kv_heads_set, dk_set, dv_set, causal_set;   /* given, not defaulted:
                                                                  they override a preset */
    const attn_backend **backends;
    size_t nbackends;
    bool explicit_backends;     /* --backend was given */
    const char *csv, *json;     /* output files, or NULL */
    double case_timeout;        /* --case-timeout seconds; 0: cases run in this process */
    bool case_timeout_set;      /* given (0 included): a plugin's cases do not default to
                                   a child process (harness/main.c) */
    const char *dump_inputs;    /* --dump-inputs DIR: write the case's Q, K, V, run nothing */
    const char *check_output;   /* --check-output FILE.npy: a peer's O, checked and reported */
    const char *peer, *peer_times, *peer_skip;   /* --peer NAME, --peer-times, --peer-skip */
    int shard, shards;          /* --shard I/N: the cases with index = I mod N; shards 0:
                                   all */
    bool resume, pin, peak;
    bool small_pages;           /* --huge-pages off */
    bool list, help, version;
} attn_opts;

/* Prints "<program>: <message>" as one line on stderr and returns code;
 * the program is attnbench unless attn_error_program named another (the
 * tools beside it: bench_ab, bench_pool). */
__attribute__((format(printf, 2, 3)))
int attn_error(int code, const char *fmt, ...);
void attn_error_program(const char *name);

/* A table-driven command line (attnbench's and attnbench arch's): options
 * --name, --name=value or --name value, each looked up in a table. */
enum { ATTN_ARG_NONE, ATTN_ARG_REQUIRED, ATTN_ARG_OPTIONAL /* only as --opt=value */ };
typedef struct attn_option {
    const char *name;
    int id;
    int arg;
} attn_option;
/* Called per option: -1 to go on, or an exit code after one line on stderr. */
typedef int (*attn_option_fn)(void *ctx, int id, const char *name, const char *val);
/* Walks argv[first..] through opts; -1 when every option applied, else the
 * exit code of the first refusal (one line on stderr). */
int attn_options_parse(const attn_option *opts, size_t n, int argc, char **argv, int first,
                       attn_option_fn fn, void *ctx);

/* Values of options: -1 when val is one, else ATTN_EXIT_USAGE after one line
 * naming --name and what it accepts. */
int attn_opt_int(const char *name, const char *val, long lo, long hi, int *dst);
int attn_opt_real(const char *name, const char *val, double lo, double hi, double *dst);
int attn_opt_seed(const char *name, const char *val, uint64_t *dst);
/* --tile's BRxBC[xSB] into *tq, *tkv, *tsb (0 without SB); --isa's name of
 * kernels this build and CPU run. */
int attn_opt_tile(const char *name, const char *val, int *tq, int *tkv, int *tsb);
int attn_opt_isa(const char *name, const char *val, attn_isa *dst);

/* Parses argv into o. Returns -1 to go on, or an exit code after printing
 * one line to stderr that names the option and what it accepts. */
int attn_cli_parse(attn_opts *o, int argc, char **argv);
void attn_cli_free(attn_opts *o);
void attn_cli_usage(FILE *f, const char *prog);

/* Parses a list of integers in [lo, hi] for option name (exposed for tests).
 * Returns -1 on success, else ATTN_EXIT_USAGE after printing why. */
int attn_parse_list(const char *name, const char *val, long lo, long hi, attn_list *out);

#endif

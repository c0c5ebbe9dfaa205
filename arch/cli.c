/* attnbench arch: its command line, on the same table-driven parser as
 * attnbench's (harness/cli.c), apart from arch/main.c so that it can be
 * fuzzed alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "variant.h"

enum {
    MAX_SEQ = 1 << 20, MAX_BATCH = 1 << 20, MAX_DMODEL = 1 << 20, MAX_THREADS = 1024,
    MAX_WARMUP = 1000,
};

static const char *const model_names[ARCH_COUNT] = {
    [ARCH_RNN] = "rnn", [ARCH_CNN] = "cnn", [ARCH_ATTN] = "attention", [ARCH_MHA] = "mha",
};

const char *arch_model_name(arch_model m)
{
    return (unsigned)m < ARCH_COUNT ? model_names[m] : "?";
}

void arch_usage(FILE *f, const char *prog)
{
    fprintf(f,
"usage: %s arch [options]\n"
"The classic comparison on one input: an LSTM (+ Linear), a small CNN (two\n"
"Conv1d k=3, ReLU, residual, LayerNorm), single-head self-attention (d_k = d/8)\n"
"and an 8-head attention layer; forward passes, fp32. Per model and N: the\n"
"output checked against a double-precision forward of a sampled batch item\n"
"(PASSED or FAILED), median time per forward, time relative to the CNN, GFLOP/s,\n"
"tracked peak memory of activations and workspace beside the articles' analytic\n"
"memory, the log-log exponents of time and memory against N, and a repro line.\n"
"  --seq LIST         sequence lengths (default 64,128,256,512)\n"
"  --batch B          batch (default 32)\n"
"  --dmodel D         model width (default 512; a multiple of 8)\n"
"  --models LIST      of rnn,cnn,attention,mha (default all)\n"
"  --attn-backend B   attention backend for attention and mha (default tiled)\n"
"  --conv MODE        shift (three GEMMs on shifted rows, default) or im2col\n"
"  --threads T        threads (default: the CPUs online)\n"
"  --reps R, --min-time S, --max-time S, --warmup W   as for attnbench\n"
"  --seed S           weights, input and the checked item (default 1)\n"
"  --csv FILE         write one row per model and N (overwrites FILE)\n"
"  --json FILE        write Google-Benchmark-shaped JSON (overwrites FILE)\n",
            prog);
}

enum {
    O_SEQ, O_BATCH, O_DMODEL, O_MODELS, O_BACKEND, O_CONV, O_THREADS, O_REPS, O_MIN_TIME,
    O_MAX_TIME, O_WARMUP, O_SEED, O_CSV, O_JSON, O_HELP,
};

static const attn_option options[] = {
    { "seq", O_SEQ, ATTN_ARG_REQUIRED },         { "batch", O_BATCH, ATTN_ARG_REQUIRED },
    { "dmodel", O_DMODEL, ATTN_ARG_REQUIRED },   { "models", O_MODELS, ATTN_ARG_REQUIRED },
    { "attn-backend", O_BACKEND, ATTN_ARG_REQUIRED }, { "conv", O_CONV, ATTN_ARG_REQUIRED },
    { "threads", O_THREADS, ATTN_ARG_REQUIRED }, { "reps", O_REPS, ATTN_ARG_REQUIRED },
    { "min-time", O_MIN_TIME, ATTN_ARG_REQUIRED }, { "max-time", O_MAX_TIME, ATTN_ARG_REQUIRED },
    { "warmup", O_WARMUP, ATTN_ARG_REQUIRED },   { "seed", O_SEED, ATTN_ARG_REQUIRED },
    { "csv", O_CSV, ATTN_ARG_REQUIRED },         { "json", O_JSON, ATTN_ARG_REQUIRED },
    { "help", O_HELP, ATTN_ARG_NONE },
};

typedef struct parse_state {
    arch_opts *o;
    bool seq_set, help;
} parse_state;

static int parse_models(arch_opts *o, const char *val)
{
    bool want[ARCH_COUNT] = { false };
    bool any = false;
    for (const char *tok = val; *tok;) {
        const size_t len = strcspn(tok, ",");
        int m = 0;
        while (m < ARCH_COUNT && (strlen(model_names[m]) != len || strncmp(tok, model_names[m], len)))
            m++;
        if (m == ARCH_COUNT)
            return attn_error(ATTN_EXIT_USAGE, "--models: unknown model '%.*s' (rnn, cnn, "
                              "attention, mha)", (int)len, tok);
        want[m] = any = true;
        tok += len + (tok[len] == ',');
    }
    if (!any)
        return attn_error(ATTN_EXIT_USAGE, "--models: empty list");
    memcpy(o->models, want, sizeof(want));
    return -1;
}

static int apply(void *ctx, int id, const char *name, const char *val)
{
    parse_state *ps = ctx;
    arch_opts *o = ps->o;
    switch (id) {
    case O_SEQ:
        ps->seq_set = true;
        return attn_parse_list(name, val, 1, MAX_SEQ, &o->seq);
    case O_BATCH:   return attn_opt_int(name, val, 1, MAX_BATCH, &o->batch);
    case O_DMODEL:  return attn_opt_int(name, val, 1, MAX_DMODEL, &o->dmodel);
    case O_THREADS: return attn_opt_int(name, val, 1, MAX_THREADS, &o->threads);
    case O_REPS:    return attn_opt_int(name, val, 0, ATTN_MAX_REPS, &o->timer.reps);
    case O_WARMUP:  return attn_opt_int(name, val, 0, MAX_WARMUP, &o->timer.warmup);
    case O_MIN_TIME: return attn_opt_real(name, val, 0, 3600, &o->timer.min_time);
    case O_MAX_TIME: return attn_opt_real(name, val, 0, 3600, &o->timer.max_time);
    case O_SEED:    return attn_opt_seed(name, val, &o->seed);
    case O_MODELS:  return parse_models(o, val);
    case O_BACKEND:
        if (!(o->be = attn_backend_find(val)))
            return attn_error(ATTN_EXIT_USAGE, "--attn-backend: unknown backend '%s' "
                              "(attnbench --list)", val);
        if (o->be->kind != ATTN_KIND_SOFTMAX)
            return attn_error(ATTN_EXIT_USAGE, "--attn-backend: %s computes %s attention, "
                              "not softmax attention", val, attn_kind_name(o->be->kind));
        return -1;
    case O_CONV:
        if (!strcmp(val, "shift"))
            o->conv = ARCH_CONV_SHIFT;
        else if (!strcmp(val, "im2col"))
            o->conv = ARCH_CONV_IM2COL;
        else
            return attn_error(ATTN_EXIT_USAGE, "--conv: '%s' is not shift or im2col", val);
        return -1;
    case O_CSV:  o->csv = val; return -1;
    case O_JSON: o->json = val; return -1;
    case O_HELP: ps->help = true; return -1;
    }
    return attn_error(ATTN_EXIT_USAGE, "internal: unhandled option --%s", name);
}

int arch_parse(arch_opts *o, int argc, char **argv)
{
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (arch_opts){ .batch = 32, .dmodel = 512,
                      .threads = online > 0 ? (online > MAX_THREADS ? MAX_THREADS : (int)online) : 1,
                      .conv = ARCH_CONV_SHIFT, .be = attn_backend_find("tiled"),
                      .timer = { .warmup = 1, .reps = 5, .min_time = 0.1, .max_time = 10.0 },
                      .seed = 1 };
    for (int m = 0; m < ARCH_COUNT; m++)
        o->models[m] = true;
    parse_state ps = { .o = o };
    int rc = attn_options_parse(options, sizeof(options) / sizeof(options[0]), argc, argv, 1,
                                apply, &ps);
    if (rc >= 0)
        return rc;
    if (ps.help)
        return -2;
    if (!ps.seq_set && attn_parse_list("seq", "64,128,256,512", 1, MAX_SEQ, &o->seq) >= 0)
        return ATTN_EXIT_USAGE;
    if ((o->models[ARCH_ATTN] || o->models[ARCH_MHA]) && o->dmodel % 8)
        return attn_error(ATTN_EXIT_USAGE, "--dmodel %d: attention needs a multiple of 8 "
                          "(d_k = d/8)", o->dmodel);
    if (!o->be)
        return attn_error(ATTN_EXIT_USAGE, "--attn-backend: the tiled backend is missing");
    char why[256] = "";
    if ((o->models[ARCH_ATTN] || o->models[ARCH_MHA]) &&
        attn_backend_usable(o->be, why, sizeof(why)) != ATTN_OK)
        return attn_error(ATTN_EXIT_USAGE, "--attn-backend %s: unavailable: %s", o->be->name,
                          why);
    return -1;
}

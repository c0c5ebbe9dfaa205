/* attnbench arch: its command line (apart from arch.c, which runs the
 * models, so that the parser can be fuzzed alone). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "variant.h"

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
"and an 8-head attention layer; forward passes, fp32. Per model and N: median\n"
"time per forward, time relative to the CNN, GFLOP/s, tracked peak memory of\n"
"activations and workspace beside the articles' analytic memory, and the\n"
"log-log exponents of time and memory against N.\n"
"  --seq LIST         sequence lengths (default 64,128,256,512)\n"
"  --batch B          batch (default 32)\n"
"  --dmodel D         model width (default 512; a multiple of 8)\n"
"  --models LIST      of rnn,cnn,attention,mha (default all)\n"
"  --attn-backend B   attention backend for attention and mha (default tiled)\n"
"  --conv MODE        shift (three GEMMs on shifted rows, default) or im2col\n"
"  --threads T        threads (default: the CPUs online)\n"
"  --reps R, --min-time S, --max-time S, --warmup W   as for attnbench\n"
"  --seed S           weights and input (default 1)\n"
"  --csv FILE         write one row per model and N (overwrites FILE)\n",
            prog);
}

int arch_parse(arch_opts *o, int argc, char **argv)
{
    enum { O_SEQ = 256, O_BATCH, O_DMODEL, O_MODELS, O_BACKEND, O_CONV, O_THREADS, O_REPS,
           O_MIN_TIME, O_MAX_TIME, O_WARMUP, O_SEED, O_CSV, O_HELP };
    static const struct option longs[] = {
        { "seq", required_argument, NULL, O_SEQ },
        { "batch", required_argument, NULL, O_BATCH },
        { "dmodel", required_argument, NULL, O_DMODEL },
        { "models", required_argument, NULL, O_MODELS },
        { "attn-backend", required_argument, NULL, O_BACKEND },
        { "conv", required_argument, NULL, O_CONV },
        { "threads", required_argument, NULL, O_THREADS },
        { "reps", required_argument, NULL, O_REPS },
        { "min-time", required_argument, NULL, O_MIN_TIME },
        { "max-time", required_argument, NULL, O_MAX_TIME },
        { "warmup", required_argument, NULL, O_WARMUP },
        { "seed", required_argument, NULL, O_SEED },
        { "csv", required_argument, NULL, O_CSV },
        { "help", no_argument, NULL, O_HELP },
        { NULL, 0, NULL, 0 },
    };
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (arch_opts){ .batch = 32, .dmodel = 512, .threads = online > 0 ? (int)online : 1,
                      .conv = ARCH_CONV_SHIFT, .be = attn_backend_find("tiled"),
                      .timer = { .warmup = 1, .reps = 5, .min_time = 0.1, .max_time = 10.0 },
                      .seed = 1 };
    for (int m = 0; m < ARCH_COUNT; m++)
        o->models[m] = true;
    bool seq_set = false;
    optind = 0;   /* glibc: start afresh, whatever an earlier parse left */
    opterr = 0;
    int c, li = -1;
    while ((c = getopt_long(argc, argv, "", longs, &li)) != -1) {
        char name[64];
        if (c != '?' && li >= 0)
            snprintf(name, sizeof(name), "--%s", longs[li].name);
        else
            snprintf(name, sizeof(name), "%s", optind > 0 && optind <= argc ? argv[optind - 1] : "?");
        li = -1;
        char *end;
        errno = 0;
        switch (c) {
        case O_SEQ:
            if (attn_parse_list("--seq", optarg, 1, 1 << 20, &o->seq) >= 0)
                return ATTN_EXIT_USAGE;
            seq_set = true;
            break;
        case O_BATCH:
        case O_DMODEL:
        case O_THREADS:
        case O_REPS:
        case O_WARMUP: {
            const long v = strtol(optarg, &end, 10);
            const long hi = c == O_REPS ? ATTN_MAX_REPS : c == O_WARMUP ? 1000 :
                            c == O_THREADS ? 1024 : 1 << 20;
            const long lo = c == O_REPS || c == O_WARMUP ? 0 : 1;
            if (errno || end == optarg || *end || v < lo || v > hi)
                return attn_error(ATTN_EXIT_USAGE, "%s: '%s' is not an integer in [%ld, %ld]",
                                  name, optarg, lo, hi);
            *(c == O_BATCH ? &o->batch : c == O_DMODEL ? &o->dmodel : c == O_THREADS ? &o->threads
              : c == O_REPS ? &o->timer.reps : &o->timer.warmup) = (int)v;
            break;
        }
        case O_MIN_TIME:
        case O_MAX_TIME: {
            const double v = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(v >= 0) || v > 3600)
                return attn_error(ATTN_EXIT_USAGE, "%s: '%s' is not a number of seconds in "
                                  "[0, 3600]", name, optarg);
            *(c == O_MIN_TIME ? &o->timer.min_time : &o->timer.max_time) = v;
            break;
        }
        case O_SEED: {
            const unsigned long long v = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-')
                return attn_error(ATTN_EXIT_USAGE, "--seed: '%s' is not an unsigned integer",
                                  optarg);
            o->seed = v;
            break;
        }
        case O_MODELS: {
            for (int m = 0; m < ARCH_COUNT; m++)
                o->models[m] = false;
            char *copy = strdup(optarg), *save = NULL;
            if (!copy)
                return attn_error(ATTN_EXIT_USAGE, "--models: out of memory");
            bool any = false;
            for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int m = 0;
                while (m < ARCH_COUNT && strcmp(tok, arch_model_name((arch_model)m)))
                    m++;
                if (m == ARCH_COUNT) {
                    attn_error(ATTN_EXIT_USAGE, "--models: unknown model '%s' (rnn, cnn, "
                               "attention, mha)", tok);
                    free(copy);
                    return ATTN_EXIT_USAGE;
                }
                o->models[m] = any = true;
            }
            free(copy);
            if (!any)
                return attn_error(ATTN_EXIT_USAGE, "--models: empty list");
            break;
        }
        case O_BACKEND:
            if (!(o->be = attn_backend_find(optarg)))
                return attn_error(ATTN_EXIT_USAGE, "--attn-backend: unknown backend '%s' "
                                  "(attnbench --list)", optarg);
            if (o->be->kind != ATTN_KIND_SOFTMAX)
                return attn_error(ATTN_EXIT_USAGE, "--attn-backend: %s computes %s attention, "
                                  "not softmax attention", optarg, attn_kind_name(o->be->kind));
            break;
        case O_CONV:
            if (!strcmp(optarg, "shift"))
                o->conv = ARCH_CONV_SHIFT;
            else if (!strcmp(optarg, "im2col"))
                o->conv = ARCH_CONV_IM2COL;
            else
                return attn_error(ATTN_EXIT_USAGE, "--conv: '%s' is not shift or im2col", optarg);
            break;
        case O_CSV:
            o->csv = optarg;
            break;
        case O_HELP:
            return -2;
        default:
            return attn_error(ATTN_EXIT_USAGE, "arch: unknown or incomplete option '%s' "
                              "(attnbench arch --help)", name);
        }
    }
    if (optind < argc)
        return attn_error(ATTN_EXIT_USAGE, "arch: unexpected argument '%s'", argv[optind]);
    if (!seq_set && attn_parse_list("--seq", "64,128,256,512", 1, 1 << 20, &o->seq) >= 0)
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

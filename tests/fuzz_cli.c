/* libFuzzer target: the command line parsers (harness/cli.c, and
 * arch/cli.c when the first argument is "arch") on arbitrary
 * argument vectors. The input is split at NUL bytes into arguments, each in
 * its own allocation so a read past one is reported. Whatever it is given,
 * the parser either accepts and leaves every option inside its documented
 * range, or refuses with the usage exit code; it never leaks (LeakSanitizer)
 * and never crashes. The backends are stand-ins with the real names: the
 * parser only looks names up in the registry. -DPLANTED reads one element
 * past the --seq list (the check that the harness reports memory errors). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "backend.h"
#include "cli.h"

/* Every registered backend, from the one list, as a stand-in with its name. */
#define ATTN_BACKEND(id, str) const attn_backend attn_backend_##id = { .name = str };
#include "list.h"
#undef ATTN_BACKEND

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_ARGS = 48 };

static void list_in(const attn_list *l, bool may_be_empty, long lo, long hi)
{
    if ((!may_be_empty && l->n == 0) || l->n > 4096 || (l->n && !l->v))
        abort();
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] < lo || l->v[i] > hi)
            abort();
#ifdef PLANTED
    if (l->n) {
        volatile int past = l->v[l->n];
        (void)past;
    }
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *devnull;
    if (!devnull) {
        /* The parser's one-line errors go nowhere; sanitizer reports still
         * reach file descriptor 2. */
        devnull = fopen("/dev/null", "w");
        if (!devnull)
            abort();
        stderr = devnull;
    }
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    argv[argc++] = strdup("attnbench");
    for (size_t at = 0; at <= size && argc < MAX_ARGS;) {
        const uint8_t *nul = memchr(data + at, 0, size - at);
        const size_t len = nul ? (size_t)(nul - (data + at)) : size - at;
        char *arg = malloc(len + 1);
        if (!arg)
            abort();
        memcpy(arg, data + at, len);
        arg[len] = '\0';
        argv[argc++] = arg;
        at += len + 1;
    }
    argv[argc] = NULL;

    if (argc > 1 && !strcmp(argv[1], "arch")) {
        arch_opts ao;
        const int arc = arch_parse(&ao, argc - 1, argv + 1);
        if (arc == -1) {
            list_in(&ao.seq, false, 1, 1 << 20);
            bool any = false;
            for (int m = 0; m < ARCH_COUNT; m++)
                any |= ao.models[m];
            if (!any || ao.batch < 1 || ao.dmodel < 1 || ao.threads < 1 || !ao.be ||
                ao.timer.reps < 0 || !(ao.timer.min_time >= 0) || !(ao.timer.max_time >= 0))
                abort();
        } else if (arc != -2 && arc != ATTN_EXIT_USAGE) {
            abort();
        }
        free(ao.seq.v);
        for (int a = 0; a < argc; a++)
            free(argv[a]);
        return 0;
    }
    attn_opts o;
    const int rc = attn_cli_parse(&o, argc, argv);
    if (rc < 0) {
        list_in(&o.batch, false, 1, 65536);
        list_in(&o.heads, false, 1, 4096);
        list_in(&o.seq, false, 1, 1 << 24);
        list_in(&o.seq_kv, true, 1, 1 << 24);
        list_in(&o.dk, false, 1, 4096);
        list_in(&o.dv, true, 1, 4096);
        if (o.nbackends == 0 || !o.backends)
            abort();
        for (size_t i = 0; i < o.nbackends; i++)
            if (!o.backends[i] || attn_backend_find(o.backends[i]->name) != o.backends[i])
                abort();
        if ((o.kv_len == NULL) != (o.nkv == 0) || o.setup.threads < 1 ||
            (o.resume && !o.csv) || !(o.causal & (ATTN_CAUSAL_NO | ATTN_CAUSAL_YES)))
            abort();
        for (int b = 0; b < o.nkv; b++)
            if (o.kv_len[b] < 0)
                abort();
    } else if (rc != ATTN_EXIT_USAGE) {
        abort();
    }
    attn_cli_free(&o);
    for (int a = 0; a < argc; a++)
        free(argv[a]);
    return 0;
}

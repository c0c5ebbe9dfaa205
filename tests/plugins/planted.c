/* Planted plugins: the example plugin (examples/plugin/example.c) with one
 * bug each, chosen by PLANT when compiled, for test_plugin.sh. attnbench
 * must judge each as it would a built-in: the checker and the canaries
 * catch the lies, the child process the crash, the loader the ABI.
 *   PLANT_OVERRUN    run writes one float past the end of O: FAILED
 *   PLANT_WRONG_HEAD O of query head 0 is query head 1's: FAILED
 *   PLANT_CRASH      run aborts (SIGABRT): ERROR, and the sweep goes on
 *   PLANT_NEWER_ABI  built against an ABI one newer: refused at load
 *   PLANT_NO_ENTRY   no attnbench_plugin function: refused at load
 *   PLANT_OTHER_HEADER  the same ABI version, a bigger attn_backend (built
 *                    against another header): refused at load
 *   PLANT_BUILTIN_NAME  the plugin named "naive", as a built-in backend:
 *                    refused at load (--backend naive names one thing) */
#include <stdlib.h>

#define EXAMPLE_NO_ENTRY
#include "../../examples/plugin/example.c"

#define PLANT_OVERRUN 1
#define PLANT_WRONG_HEAD 2
#define PLANT_CRASH 3
#define PLANT_NEWER_ABI 4
#define PLANT_NO_ENTRY 5
#define PLANT_OTHER_HEADER 6
#define PLANT_BUILTIN_NAME 7

static attn_status planted_run(void *state)
{
    const example *s = state;
    const attn_problem *p = &s->p;
    const attn_status st = example_run(state);
    const size_t head = (size_t)p->seq_q * p->d_v;   /* O's floats per head */
#if PLANT == PLANT_OVERRUN
    s->t.o[(size_t)p->batch * p->heads * head] = 1.0f;
#elif PLANT == PLANT_WRONG_HEAD
    if (p->heads > 1)
        memcpy(s->t.o, s->t.o + head, head * sizeof(float));
#elif PLANT == PLANT_CRASH
    (void)head;
    abort();
#else
    (void)head;
#endif
    return st;
}

static const attn_backend planted_rows = {
    .name = "rows",
    .summary = "the example plugin with a planted bug",
    .kind = ATTN_KIND_SOFTMAX,
    .prepare = example_prepare,
    .bind = example_bind,
    .run = planted_run,
    .read = example_read,
    .release = example_release,
    .workspace = example_workspace,
};

static const attn_backend *const planted_backends[] = { &planted_rows };

#if PLANT != PLANT_NO_ENTRY
const attn_plugin *attnbench_plugin(void);

const attn_plugin *attnbench_plugin(void)
{
    static attn_plugin d = ATTN_PLUGIN_DESCRIBE("planted", "a planted bug", planted_backends, 1);
#if PLANT == PLANT_NEWER_ABI
    d.abi_version = ATTN_ABI_VERSION + 1;
#elif PLANT == PLANT_OTHER_HEADER
    d.backend_size += 8;
#elif PLANT == PLANT_BUILTIN_NAME
    d.name = "naive";
#endif
    return &d;
}
#else
/* Something else exported, so that the library is a plugin in all but
 * its entry. */
int planted_no_entry(void);

int planted_no_entry(void)
{
    return example_backends[0] != NULL && planted_backends[0] != NULL;
}
#endif

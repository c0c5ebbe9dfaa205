/* attnbench: build the problem and inputs, compute the reference, then run
 * each backend through the case driver and print one comparison. */
#include <stdio.h>
#include <stdlib.h>

#include "case.h"
#include "cli.h"
#include "config.h"
#include "fill.h"
#include "memory.h"
#include "report.h"

static void list_backends(FILE *f)
{
    fprintf(f, "%-14s %-12s %s\n", "backend", "status", "summary");
    for (size_t i = 0; i < attn_backend_count(); i++) {
        const attn_backend *be = attn_backend_get(i);
        char why[256] = "";
        attn_status st = attn_backend_usable(be, why, sizeof(why));
        fprintf(f, "%-14s %-12s %s", be->name,
                be->not_built ? "not built" : st == ATTN_OK ? "available" : "unavailable",
                be->summary);
        if (st != ATTN_OK)
            fprintf(f, " [%s]", why[0] ? why : attn_status_str(st));
        fputc('\n', f);
    }
}

/* Refuses, before any work, a shape whose buffers overflow size_t or that
 * cannot fit next to what the machine (or --max-mem) allows. */
static int shape_fits(const attn_opts *o, attn_sizes *sz)
{
    char shape[512];
    attn_problem_describe(&o->p, shape, sizeof(shape));
    if (!attn_problem_sizes(&o->p, sz)) {
        fprintf(stderr, "attnbench: shape %s: its tensors overflow size_t "
                        "(more than 2^64 bytes); choose smaller sizes\n", shape);
        return ATTN_EXIT_TOO_LARGE;
    }
    const double ref = (double)attn_ref_bytes(&o->p, o->setup.check_rows, o->setup.threads);
    const double need = (double)sz->inputs + 2.0 * (double)sz->output + ref;
    const uint64_t avail = attn_mem_available();
    const uint64_t limit = o->setup.max_mem && (!avail || o->setup.max_mem < avail)
                               ? o->setup.max_mem : avail;
    if (limit && need > (double)limit) {
        char n[32], in[32], out[32], r[32], l[32];
        attn_format_bytes(n, sizeof(n), need);
        attn_format_bytes(in, sizeof(in), (double)sz->inputs);
        attn_format_bytes(out, sizeof(out), 2.0 * (double)sz->output);
        attn_format_bytes(r, sizeof(r), ref);
        attn_format_bytes(l, sizeof(l), (double)limit);
        fprintf(stderr, "attnbench: shape %s needs %s before any backend workspace (inputs %s, "
                        "outputs %s, reference %s), but %s %s\n", shape, n, in, out, r, l,
                limit == avail ? "is available" : "is the --max-mem limit");
        return ATTN_EXIT_TOO_LARGE;
    }
    return -1;
}

static int exit_code(const attn_result *res, size_t n)
{
    bool failed = false, error = false, ran = false;
    for (size_t i = 0; i < n; i++) {
        failed |= res[i].verdict == ATTN_FAILED;
        error |= res[i].verdict == ATTN_ERROR;
        ran |= res[i].verdict == ATTN_PASSED;
    }
    return failed ? ATTN_EXIT_FAILED : error ? ATTN_EXIT_ERROR : ran ? ATTN_EXIT_OK
                                                                      : ATTN_EXIT_NONE_RAN;
}

static int run_cases(const attn_opts *o, const attn_sizes *sz, const char *prog)
{
    const attn_problem *p = &o->p;
    float *q = attn_host_alloc(sz->q * sizeof(float));
    float *k = attn_host_alloc(sz->k * sizeof(float));
    float *v = attn_host_alloc(sz->v * sizeof(float));
    attn_result *res = calloc(o->nbackends, sizeof(*res));
    attn_ref ref = { 0 };
    int rc = ATTN_EXIT_TOO_LARGE;
    if (!q || !k || !v || !res) {
        fprintf(stderr, "attnbench: out of memory allocating the inputs\n");
        goto done;
    }
    attn_fill(q, sz->q, o->setup.fill, o->setup.seed, ATTN_TENSOR_Q, o->setup.threads);
    attn_fill(k, sz->k, o->setup.fill, o->setup.seed, ATTN_TENSOR_K, o->setup.threads);
    attn_fill(v, sz->v, o->setup.fill, o->setup.seed, ATTN_TENSOR_V, o->setup.threads);
    const attn_tensors in = { .q = q, .k = k, .v = v };

    attn_report_header(stdout, p, &o->setup);
    const double t0 = attn_now();
    if (attn_ref_compute(&ref, p, &in, o->setup.check_rows, o->setup.seed, o->setup.threads)) {
        fprintf(stderr, "attnbench: out of memory computing the reference\n");
        goto done;
    }
    attn_report_reference(stdout, &ref, attn_now() - t0);

    size_t n = 0;
    for (size_t i = 0; i < o->nbackends; i++) {
        const attn_backend *be = o->backends[i];
        char why[256];
        if (!o->explicit_backends && attn_backend_usable(be, why, sizeof(why)) != ATTN_OK)
            continue;   /* the default run compares what can run; the footnote says the rest */
        attn_case_run(&res[n++], be, p, &in, &ref, &o->setup, prog);
    }
    attn_report_results(stdout, res, n);
    for (size_t i = 0; i < o->nbackends && !o->explicit_backends; i++) {
        char why[256] = "";
        if (attn_backend_usable(o->backends[i], why, sizeof(why)) != ATTN_OK)
            printf("\nnot run: %s (%s)\n", o->backends[i]->name, why);
    }
    rc = exit_code(res, n);
done:
    attn_ref_free(&ref);
    free(res);
    attn_host_free(q);
    attn_host_free(k);
    attn_host_free(v);
    return rc;
}

int main(int argc, char **argv)
{
    const char *prog = argc > 0 && argv[0] ? argv[0] : "attnbench";
    attn_opts o;
    int rc = attn_cli_parse(&o, argc, argv);
    if (rc < 0) {
        attn_sizes sz;
        if (o.help) {
            attn_cli_usage(stdout, prog);
            rc = ATTN_EXIT_OK;
        } else if (o.version) {
            printf("attnbench %s\n", ATTN_VERSION);
            rc = ATTN_EXIT_OK;
        } else if (o.list) {
            list_backends(stdout);
            rc = ATTN_EXIT_OK;
        } else if ((rc = shape_fits(&o, &sz)) < 0) {
            rc = run_cases(&o, &sz, prog);
        }
    }
    attn_cli_free(&o);
    return rc;
}

/* attnbench: parse the command line, set the machine up (threads, pinning),
 * capture its context, then run the sweep (one case is a sweep of one). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "models.h"
#include "arch.h"
#include "cli.h"
#include "config.h"
#include "io.h"
#include "machine.h"
#include "memory.h"
#include "merge.h"
#include "peer.h"
#include "plugin.h"
#include "ring.h"
#include "sweep.h"

static void list_backends(FILE *f)
{
    fprintf(f, "%-14s %-12s %s\n", "backend", "status", "summary");
    for (size_t i = 0; i < attn_backend_count(); i++) {
        const attn_backend *be = attn_backend_get(i);
        char why[256] = "";
        attn_status st = attn_backend_usable(be, why, sizeof(why));
        fprintf(f, "%-14s %-12s %s", be->name,
                be->not_built ? "not built" : st == ATTN_OK ? "available" : "unavailable",
                be->summary ? be->summary : "");
        if (st != ATTN_OK)
            fprintf(f, " [%s]", why[0] ? why : attn_status_str(st));
        if (attn_backend_origin(be))
            fprintf(f, " (plugin %s)", attn_backend_origin(be));
        fputc('\n', f);
    }
    attn_plugins_print(f);
    /* Devices, once per device layer: backends sharing one are named together. */
    for (size_t i = 0; i < attn_backend_count(); i++) {
        const attn_backend *be = attn_backend_get(i);
        char buf[4096];
        bool first = !be->not_built && attn_backend_has_devices(be);
        for (size_t j = 0; first && j < i; j++)
            first = !attn_backend_same_devices(attn_backend_get(j), be);
        if (!first)
            continue;
        fprintf(f, "\ndevices of %s", be->name);
        for (size_t j = i + 1; j < attn_backend_count(); j++)
            if (attn_backend_same_devices(attn_backend_get(j), be))
                fprintf(f, ", %s", attn_backend_get(j)->name);
        const int n = attn_backend_devices(be, buf, sizeof(buf));
        fprintf(f, " (--device N):\n%s", n > 0 ? buf : "  none\n");
        if (n >= (int)sizeof(buf))
            fputs("  (list truncated)\n", f);
    }
}

/* Pins the process to the first `threads` CPUs it may run on; desc lists them. */
static int pin(int threads, char *desc, size_t len)
{
    cpu_set_t allowed, set;
    if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
        fprintf(stderr, "attnbench: --pin: cannot read the CPU affinity: %s\n", strerror(errno));
        return ATTN_EXIT_ERROR;
    }
    CPU_ZERO(&set);
    int n = 0;
    size_t at = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && n < threads; cpu++) {
        if (!CPU_ISSET(cpu, &allowed))
            continue;
        CPU_SET(cpu, &set);
        if (at < len)
            at += (size_t)snprintf(desc + at, len - at, "%s%d", n ? "," : "CPUs ", cpu);
        n++;
    }
    if (n < threads) {
        fprintf(stderr, "attnbench: --pin: --threads %d, but only %d CPUs are allowed to this "
                        "process\n", threads, CPU_COUNT(&allowed));
        return ATTN_EXIT_USAGE;
    }
    if (sched_setaffinity(0, sizeof(set), &set)) {
        fprintf(stderr, "attnbench: --pin: cannot pin to %s: %s\n", desc, strerror(errno));
        return ATTN_EXIT_ERROR;
    }
    return -1;
}

/* --threads reaches every threading runtime of the build through here. */
static void set_threads(int threads)
{
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    (void)threads;
}

static int measure_peak(const attn_machine *m, int threads)
{
    attn_peak pk;
    if (!attn_peak_measure(&pk, threads, m->cpu)) {
        fprintf(stderr, "attnbench: --peak: not enough memory for the bandwidth arrays\n");
        return ATTN_EXIT_ERROR;
    }
    char path[4200];
    printf("peak on %s (%s):\n  fp32 FMA: %.1f GFLOP/s on 1 thread, %.1f GFLOP/s on %d threads\n"
           "  triad bandwidth: %.1f GB/s on %d threads\n"
           "  read-only stream: %.1f GB/s on %d threads (the roofline takes the faster)\n",
           pk.cpu, pk.isa, pk.fma_1, pk.fma_t, threads, pk.triad, threads, pk.read, threads);
    if (!attn_peak_save(&pk, path, sizeof(path))) {
        fprintf(stderr, "attnbench: --peak: measured, but could not keep it beside the "
                        "executable\n");
        return ATTN_EXIT_ERROR;
    }
    if (pk.dot_t > 0)
        printf("  bf16 dot products (vdpbf16ps): %.1f GFLOP/s on 1 thread, %.1f GFLOP/s on %d "
               "threads\n", pk.dot_1, pk.dot_t, threads);
    else
        printf("  bf16 dot products: none on this CPU (bf16 cases are held to the fp32 peak)\n");
    printf("kept in %s\n", path);
    /* T threads on T separate cores run T times the 1-thread rate; far less
     * means the cores were shared (SMT siblings, or another process). */
    if (threads > 1 && pk.fma_t < 0.75 * threads * pk.fma_1)
        fprintf(stderr, "attnbench: --peak: warning: %d threads reached only %.0f%% of %d times "
                        "the 1-thread rate; unless they share cores (SMT), another process was "
                        "running: measure again on a quiet machine\n",
                threads, 100.0 * pk.fma_t / (threads * pk.fma_1), threads);
    return ATTN_EXIT_OK;
}

/* Every file the run will write, tried before any case runs: a sweep must
 * never run to its end only to lose what it measured. --csv is opened (and
 * so checked) by the sweep before its first case. */
static int check_outputs(const attn_opts *o)
{
    const struct { const char *opt, *path; } file[] = {
        { "--json", o->json },
        { "--dump-output", o->setup.dump_output },
        { "--dump-weights", o->setup.dump_weights },
    };
    char why[4600];
    for (size_t i = 0; i < sizeof(file) / sizeof(file[0]); i++)
        if (file[i].path && !attn_output_writable(file[i].path, why, sizeof(why)))
            return attn_error(ATTN_EXIT_USAGE, "%s %s: cannot be written: %s", file[i].opt,
                              file[i].path, why);
    if (o->dump_inputs && !attn_output_folder(o->dump_inputs, why, sizeof(why)))
        return attn_error(ATTN_EXIT_USAGE, "--dump-inputs %s: %s", o->dump_inputs, why);
    return -1;
}

static int attnbench(int argc, char **argv);

static int run(const attn_opts *o, const char *prog)
{
    char pinned[96] = "";
    int rc;
    attn_host_huge_pages(!o->small_pages);
    if (o->pin && (rc = pin(o->setup.threads, pinned, sizeof(pinned))) >= 0)
        return rc;
    set_threads(o->setup.threads);
    attn_machine m;
    if (o->peak) {
        attn_machine_capture(&m, o->setup.threads, pinned);
        return measure_peak(&m, o->setup.threads);
    }
    if (o->case_timeout > 0 && attn_ring_size() > 1)
        return attn_error(ATTN_EXIT_USAGE, "--case-timeout runs each case in a child process, "
                          "and MPI processes cannot fork: drop it under mpirun");
    if ((rc = check_outputs(o)) >= 0)
        return rc;
    attn_inputs ready;
    if ((rc = attn_sweep_check(o, &ready)) >= 0) {
        /* refused */
    } else if (o->dump_inputs) {
        rc = attn_peer_dump_inputs(o);
    } else {
        attn_machine_capture(&m, o->setup.threads, pinned);
        rc = o->peer ? attn_peer_check(o, &m) : attn_sweep_run(o, &m, prog, &ready);
    }
    attn_inputs_free(&ready);
    return rc;
}

/* Under mpirun every rank starts here: ranks above 0 serve the ring
 * backend's cases (backends/ring.c), rank 0 is attnbench. */
int main(int argc, char **argv)
{
    int rc = attn_ring_main(&argc, &argv);
    if (rc >= 0)
        return rc;
    rc = attnbench(argc, argv);
    attn_ring_finish();
    return rc;
}

static int attnbench(int argc, char **argv)
{
    const char *prog = argc > 0 && argv[0] ? argv[0] : "attnbench";
    if (argc > 1 && !strcmp(argv[1], "arch"))
        return arch_main(argc - 1, argv + 1, prog);
    if (argc > 1 && !strcmp(argv[1], "merge"))
        return attn_merge_main(argc - 1, argv + 1);
    /* Plugins first: their backends are names --backend may give. */
    int rc = attn_plugins_from(argc, argv);
    if (rc >= 0)
        return rc;
    attn_opts o;
    rc = attn_cli_parse(&o, argc, argv);
    /* A plugin's case runs in a child process unless told otherwise (a
     * crash or a hang is its case's ERROR or TIMEOUT, and the run goes on),
     * but not under mpirun, where processes cannot fork. */
    for (size_t i = 0; rc < 0 && !o.case_timeout_set && attn_ring_size() <= 1 && i < o.nbackends;
         i++)
        if (attn_backend_origin(o.backends[i]))
            o.case_timeout = ATTN_PLUGIN_CASE_TIMEOUT;
    if (rc < 0) {
        if (o.help) {
            attn_cli_usage(stdout, prog);
            rc = ATTN_EXIT_OK;
        } else if (o.version) {
            printf("attnbench %s\n", ATTN_VERSION);
            rc = ATTN_EXIT_OK;
        } else if (o.list) {
            list_backends(stdout);
            rc = ATTN_EXIT_OK;
        } else if (o.model_list) {
            attn_models_print(stdout);
            rc = ATTN_EXIT_OK;
        } else {
            rc = run(&o, prog);
        }
    }
    attn_cli_free(&o);
    return rc;
}

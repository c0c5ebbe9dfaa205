/* What the memory system gives a paged KV cache's layout, with no
 * arithmetic: a pool read once a pass as runs of R bytes in a seeded
 * shuffle (a block table's pages at random places, each read whole, one
 * after the other), against the same pool read as one sequential stream
 * per thread (the contiguous cache). Each thread reads its share of the
 * runs in order and prefetches --ahead bytes further along that order,
 * into the next run where the current one ends, as tiled's decoding does
 * through the block table. Every size is timed once a round, the sizes in
 * an order rotated by one each round, so a machine whose bandwidth drifts
 * moves all of them alike; each pass's sum of the pool's words is checked
 * against the pool's, so a pass that skipped a run or read one twice
 * stops the tool (exit 1) rather than print its speed.
 *
 *   bench_pool [--pool MIB] [--runs BYTES[,BYTES..]] [--threads T]
 *              [--rounds R] [--ahead BYTES] [--seed S]
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "kernels/rng.h"
#include "memory.h"
#include "timer.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define ROUNDS_MAX 101
#define SIZES_MAX 32

enum { O_POOL, O_RUNS, O_THREADS, O_ROUNDS, O_AHEAD, O_SEED, O_PLANT, O_HELP };

static const attn_option options[] = {
    { "pool", O_POOL, ATTN_ARG_REQUIRED },     { "runs", O_RUNS, ATTN_ARG_REQUIRED },
    { "threads", O_THREADS, ATTN_ARG_REQUIRED }, { "rounds", O_ROUNDS, ATTN_ARG_REQUIRED },
    { "ahead", O_AHEAD, ATTN_ARG_REQUIRED },   { "seed", O_SEED, ATTN_ARG_REQUIRED },
    { "plant", O_PLANT, ATTN_ARG_NONE },       { "help", O_HELP, ATTN_ARG_NONE },
};

typedef struct pool_opts {
    int pool_mib, threads, rounds, ahead;
    attn_list runs;
    uint64_t seed;
    bool plant;   /* --plant: every shuffled pass skips its last run (the check's test) */
    bool help;
} pool_opts;

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [options]\n\n"
            "Reads a pool once a pass as runs of each size in a seeded shuffle, and as one\n"
            "sequential stream per thread, every size once a round in a rotated order;\n"
            "prints each one's median and best GB/s and the median of each round's time\n"
            "against the sequential stream's. Each pass's sum of the pool is checked.\n\n"
            "  --pool MIB       the pool, 16..16384 MiB (default 512: past the caches)\n"
            "  --runs SIZES     run sizes in bytes, multiples of 64 dividing the pool: a\n"
            "                   list or a range as attnbench's SIZES (4096:1048576:x2; default\n"
            "                   4096,16384,32768,65536,262144,1048576)\n"
            "  --threads T      threads, 1..1024 (default: the CPUs this process may run on)\n"
            "  --rounds R       rounds, 3..%d (default 15)\n"
            "  --ahead BYTES    prefetch distance along each thread's runs, 0..16777216, a\n"
            "                   multiple of 64 (default 4096; 0: the hardware prefetchers alone)\n"
            "  --seed S         the shuffle's seed (default 1)\n"
            "  --plant          for the tests: every shuffled pass skips its last run, which\n"
            "                   the sum check must catch (exit 1)\n",
            prog, ROUNDS_MAX);
}

static int on_option(void *ctx, int id, const char *name, const char *val)
{
    pool_opts *o = ctx;
    switch (id) {
    case O_POOL: return attn_opt_int(name, val, 16, 16384, &o->pool_mib);
    case O_RUNS:
        free(o->runs.v);
        o->runs = (attn_list){ 0 };
        return attn_parse_list(name, val, 64, 1 << 30, &o->runs);
    case O_THREADS: return attn_opt_int(name, val, 1, 1024, &o->threads);
    case O_ROUNDS: return attn_opt_int(name, val, 3, ROUNDS_MAX, &o->rounds);
    case O_AHEAD: return attn_opt_int(name, val, 0, 1 << 24, &o->ahead);
    case O_SEED: return attn_opt_seed(name, val, &o->seed);
    case O_PLANT: o->plant = true; return -1;
    default: o->help = true; return -1;
    }
}

static int cpus_allowed(void)
{
    cpu_set_t set;
    const long n = sched_getaffinity(0, sizeof(set), &set) ? sysconf(_SC_NPROCESSORS_ONLN)
                                                           : CPU_COUNT(&set);
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

/* The sum of runs order[lo..hi) (run bytes each) of pool, prefetching
 * `ahead` bytes further along them. */
static uint64_t read_runs(const uint64_t *pool, const size_t *order, size_t lo, size_t hi,
                          size_t run, size_t ahead)
{
    const size_t words = run / sizeof(uint64_t);
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t pr = lo, po = ahead;   /* the prefetch cursor: run pr, byte po of it */
    while (ahead && pr < hi && po >= run) {
        po -= run;
        pr++;
    }
    for (size_t r = lo; r < hi; r++) {
        const uint64_t *w = pool + order[r] * words;
        for (size_t x = 0; x < words; x += 8) {
            if (ahead && pr < hi) {
                __builtin_prefetch((const char *)(pool + order[pr] * words) + po, 0, 1);
                po += 64;
                if (po == run) {
                    po = 0;
                    pr++;
                }
            }
            s0 += w[x] + w[x + 4];
            s1 += w[x + 1] + w[x + 5];
            s2 += w[x + 2] + w[x + 6];
            s3 += w[x + 3] + w[x + 7];
        }
    }
    return s0 + s1 + s2 + s3;
}

/* One pass over the n runs of order on `threads` threads, each its
 * contiguous share; seconds, and the pass's sum in *sum. */
static double pass(const uint64_t *pool, const size_t *order, size_t n, size_t run,
                   size_t ahead, int threads, uint64_t *sum)
{
    uint64_t total = 0;
    const double t0 = attn_now();
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : total)
#endif
    {
#ifdef _OPENMP
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
        const int t = 0, nt = 1;
#endif
        total += read_runs(pool, order, n * (size_t)t / (size_t)nt,
                           n * (size_t)(t + 1) / (size_t)nt, run, ahead);
    }
    const double dt = attn_now() - t0;
    *sum = total;
    return dt;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double s[ROUNDS_MAX];
    memcpy(s, v, (size_t)n * sizeof(*s));
    qsort(s, (size_t)n, sizeof(*s), cmp_double);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

static void size_name(char *buf, size_t len, size_t bytes)
{
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
        snprintf(buf, len, "%zu MiB", bytes >> 20);
    else if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(buf, len, "%zu KiB", bytes >> 10);
    else
        snprintf(buf, len, "%zu B", bytes);
}

/* -1 when the run sizes and the distance fit the pool, else the usage
 * exit code after one line on stderr. */
static int checked(const pool_opts *o)
{
    const size_t bytes = (size_t)o->pool_mib << 20;
    if (o->runs.n + 1 > SIZES_MAX)
        return attn_error(ATTN_EXIT_USAGE, "--runs: %zu sizes, at most %d", o->runs.n,
                          SIZES_MAX - 1);
    for (size_t i = 0; i < o->runs.n; i++)
        if (o->runs.v[i] % 64 || bytes % (size_t)o->runs.v[i])
            return attn_error(ATTN_EXIT_USAGE, "--runs: %d is not a multiple of 64 dividing "
                              "the pool (%d MiB)", o->runs.v[i], o->pool_mib);
    if (o->ahead % 64)
        return attn_error(ATTN_EXIT_USAGE, "--ahead: %d is not a multiple of 64", o->ahead);
    return -1;
}

/* The rows: each size's median and best GB/s, and the median of each
 * round's time against the sequential stream's (size 0). */
static void print_rows(const pool_opts *o, int ns, const size_t *run, const size_t *nruns,
                       double t[][ROUNDS_MAX])
{
    char name[32];
    size_name(name, sizeof(name), (size_t)o->ahead);
    printf("bench_pool: a %d MiB pool, %d threads, %d rounds, prefetching %s ahead; every "
           "pass summed to the pool's sum\n", o->pool_mib, o->threads, o->rounds,
           o->ahead ? name : "nothing");
    printf("%-12s %-11s %12s %10s %18s\n", "runs of", "order", "median GB/s", "best GB/s",
           "time / sequential");
    for (int k = 0; k < ns; k++) {
        double ratio[ROUNDS_MAX], best = t[k][0];
        for (int r = 0; r < o->rounds; r++) {
            ratio[r] = t[k][r] / t[0][r];
            best = t[k][r] < best ? t[k][r] : best;
        }
        const double read = (double)(nruns[k] * run[k]);
        size_name(name, sizeof(name), run[k]);
        printf("%-12s %-11s %12.1f %10.1f %17.3fx\n", name, k ? "shuffled" : "sequential",
               read / median(t[k], o->rounds) * 1e-9, read / best * 1e-9,
               median(ratio, o->rounds));
    }
}

int main(int argc, char **argv)
{
    pool_opts o = { .pool_mib = 512, .rounds = 15, .ahead = 4096, .seed = 1 };
    attn_error_program("bench_pool");
    int rc = attn_options_parse(options, sizeof(options) / sizeof(options[0]), argc, argv, 1,
                                on_option, &o);
    if (rc >= 0 || o.help) {
        if (o.help)
            usage(stdout, argv[0]);
        free(o.runs.v);
        return rc >= 0 ? rc : 0;
    }
    static int dflt[] = { 4096, 16384, 32768, 65536, 262144, 1048576 };
    if (!o.runs.n) {
        o.runs.v = malloc(sizeof(dflt));
        if (!o.runs.v)
            return attn_error(ATTN_EXIT_TOO_LARGE, "no memory for the run sizes");
        memcpy(o.runs.v, dflt, sizeof(dflt));
        o.runs.n = sizeof(dflt) / sizeof(dflt[0]);
    }
    o.threads = o.threads ? o.threads : cpus_allowed();
    rc = checked(&o);
    if (rc >= 0) {
        free(o.runs.v);
        return rc;
    }
    const size_t bytes = (size_t)o.pool_mib << 20;

    /* Size 0 is the sequential stream: one run a thread. */
    const int ns = (int)o.runs.n + 1;
    size_t run[SIZES_MAX], nruns[SIZES_MAX];
    size_t *order[SIZES_MAX] = { 0 };
    run[0] = bytes / (size_t)o.threads / 64 * 64;
    for (int k = 1; k < ns; k++)
        run[k] = (size_t)o.runs.v[k - 1];
    /* On 2 MiB pages where the kernel grants them, as attnbench's pools. */
    uint64_t *pool = attn_host_alloc(bytes);
    if (!pool) {
        free(o.runs.v);
        return attn_error(ATTN_EXIT_TOO_LARGE, "no memory for a pool of %d MiB", o.pool_mib);
    }
    const size_t words = bytes / sizeof(uint64_t);
    for (size_t i = 0; i < words; i++)
        pool[i] = attn_hash(o.seed, 7, i);
    for (int k = 0; k < ns; k++) {
        /* The sequential stream's runs leave the pool's tail (under 64 bytes
         * a thread) unread: its expected sum is over the runs. */
        nruns[k] = k ? bytes / run[k] : (size_t)o.threads;
        if (!(order[k] = malloc(nruns[k] * sizeof(size_t)))) {
            rc = attn_error(ATTN_EXIT_TOO_LARGE, "no memory for the runs' order");
            goto done;
        }
        for (size_t i = 0; i < nruns[k]; i++)
            order[k][i] = i;
        for (size_t i = nruns[k] - 1; k && i > 0; i--) {
            const size_t j = (size_t)(attn_hash(o.seed, (uint64_t)k, i) % (i + 1));
            const size_t x = order[k][i];
            order[k][i] = order[k][j];
            order[k][j] = x;
        }
    }
    uint64_t whole = 0, seq = 0;
    for (size_t i = 0; i < words; i++)
        whole += pool[i];
    for (size_t i = 0; i < nruns[0] * run[0] / sizeof(uint64_t); i++)
        seq += pool[i];

    static double t[SIZES_MAX][ROUNDS_MAX];
    rc = 0;
    for (int r = 0; r < o.rounds && !rc; r++)
        for (int i = 0; i < ns && !rc; i++) {
            const int k = (i + r) % ns;
            /* The planted bug: a shuffled pass without its last run. */
            const size_t n = nruns[k] - (o.plant && k > 0);
            uint64_t sum;
            t[k][r] = pass(pool, order[k], n, run[k], (size_t)o.ahead, o.threads, &sum);
            const uint64_t want = k ? whole : seq;
            if (sum != want) {
                char name[32];
                size_name(name, sizeof(name), run[k]);
                fprintf(stderr, "bench_pool: a pass in runs of %s summed %llu, the pool's "
                        "runs %llu: a run skipped or read twice\n", name,
                        (unsigned long long)sum, (unsigned long long)want);
                rc = 1;
            }
        }

    if (!rc)
        print_rows(&o, ns, run, nruns, t);
done:
    for (int k = 0; k < ns; k++)
        free(order[k]);
    attn_host_free(pool);
    free(o.runs.v);
    return rc;
}

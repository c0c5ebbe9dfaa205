/* Statistics on known samples, the size-list parser, and the sweep's order. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "case.h"
#include "cli.h"
#include "csv.h"
#include "stats.h"
#include "shapes.h"
#include "sweep.h"
#include "tap.h"
#include "timer.h"

static bool near(double a, double b)
{
    return fabs(a - b) <= 1e-12 * fmax(1.0, fabs(b));
}

static void stats(void)
{
    attn_stats s;
    const double odd[] = { 5, 1, 4, 2, 3 };
    attn_stats_compute(&s, odd, 5);
    tap_ok(s.n == 5 && s.min == 1 && s.max == 5 && s.median == 3 && s.mean == 3 &&
           near(s.stddev, sqrt(2.5)) && near(s.cv, sqrt(2.5) / 3),
           "1..5: min 1, max 5, median 3, mean 3, sample stddev sqrt(2.5)");
    tap_ok(odd[0] == 5 && odd[4] == 3, "the sample is left in its order");

    const double even[] = { 10, 40, 20, 30 };
    attn_stats_compute(&s, even, 4);
    tap_ok(s.median == 25 && s.mean == 25 && near(s.stddev, sqrt(500.0 / 3)),
           "an even count takes the middle pair's mean as median (%g)", s.median);

    const double one[] = { 7 };
    attn_stats_compute(&s, one, 1);
    tap_ok(s.median == 7 && s.stddev == 0 && s.cv == 0, "one sample: no spread");

    /* A tiny spread on a large mean: the two-pass variance keeps it. */
    const double big[] = { 1e9 + 1, 1e9 + 2, 1e9 + 3 };
    attn_stats_compute(&s, big, 3);
    tap_ok(near(s.stddev, 1.0), "stddev 1 around a mean of 1e9 (%g)", s.stddev);

    attn_stats_compute(&s, NULL, 0);
    tap_ok(s.n == 0 && s.mean == 0, "an empty sample gives zeros");
}

static bool list_is(const char *spec, const int *want, size_t n)
{
    attn_list l = { 0 };
    if (attn_parse_list("seq", spec, 1, 1 << 24, &l) >= 0)
        return false;
    bool ok = l.n == n;
    for (size_t i = 0; ok && i < n; i++)
        ok = l.v[i] == want[i];
    free(l.v);
    return ok;
}

static void lists(void)
{
    tap_ok(list_is("64", (const int[]){ 64 }, 1), "a single value");
    tap_ok(list_is("1,8,16", (const int[]){ 1, 8, 16 }, 3), "a list");
    tap_ok(list_is("256:4096:x2", (const int[]){ 256, 512, 1024, 2048, 4096 }, 5),
           "a geometric range includes both ends");
    tap_ok(list_is("3:20:x3", (const int[]){ 3, 9 }, 2), "a geometric range stops before the end");
    tap_ok(list_is("16:64:+16", (const int[]){ 16, 32, 48, 64 }, 4), "an arithmetic range");
    tap_ok(list_is("64,256:1024:x2,7", (const int[]){ 64, 256, 512, 1024, 7 }, 5),
           "values and ranges mix, in the order given");
    tap_ok(list_is("5:5:x2", (const int[]){ 5 }, 1), "a range of one value");
    attn_list l = { 0 };
    const char *bad[] = { "256:16:x2", "256:4096:x0", "256:4096:x1", "", "1,,2", "8,", "1:8",
                          "0:8:x2", "16:64:+0", "12x", "x0" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        tap_ok(attn_parse_list("seq", bad[i], 1, 1 << 24, &l) == ATTN_EXIT_USAGE,
               "'%s' is refused", bad[i]);
}

static void order(void)
{
    char *argv[] = { "attnbench", "--seq", "8,16", "--heads", "1,2", "--causal=both", NULL };
    attn_opts o;
    if (attn_cli_parse(&o, 6, argv) >= 0) {
        printf("Bail out! the command line was refused\n");
        exit(2);
    }
    const size_t n = attn_shapes_count(&o);
    tap_ok(n == 8, "2 seq x 2 heads x both causal = 8 shapes (%zu)", n);
    /* heads outside seq outside causal, causal varying fastest */
    static const int want[8][3] = { { 1, 8, 0 }, { 1, 8, 1 }, { 1, 16, 0 }, { 1, 16, 1 },
                                    { 2, 8, 0 }, { 2, 8, 1 }, { 2, 16, 0 }, { 2, 16, 1 } };
    bool ok = true;
    attn_shape_buf kv;
    if (!attn_shape_buf_alloc(&kv, &o)) {
        printf("Bail out! out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < n && i < 8; i++) {
        attn_problem p;
        attn_shapes_problem(&o, i, &p, &kv);
        ok &= p.heads == want[i][0] && p.seq_q == want[i][1] && p.seq_kv == want[i][1] &&
              p.causal == want[i][2] && p.d_k == 64 && p.d_v == 64 && p.batch == 1;
    }
    tap_ok(ok, "the shapes come in a stable order, Nk and dv following Nq and dk");
    attn_shape_buf_free(&kv);
    attn_cli_free(&o);
}

static atomic_bool spin_stop, spin_started;

/* Spins for *arg seconds of wall time or until spin_stop, like a BLAS pool
 * waiting for work. */
static void *spinner(void *arg)
{
    const double until = attn_now() + *(const double *)arg;
    atomic_store(&spin_started, true);
    volatile unsigned long x = 0;
    while (attn_now() < until && !atomic_load(&spin_stop))
        x++;
    return NULL;
}

/* The timer waits for the process's other threads to stop burning CPU. */
static void quiesce(void)
{
    double idle = attn_quiesce(1.0);
    tap_ok(idle > 0 && idle < 0.5, "at start-up (a linked OpenBLAS pool spins about 0.1 s after load): idle after %.1f ms", 1e3 * idle);

    pthread_t th;
    double secs = 0.2;
    atomic_store(&spin_stop, false);
    atomic_store(&spin_started, false);
    if (pthread_create(&th, NULL, spinner, &secs) != 0) {
        tap_ok(false, "pthread_create");
        tap_ok(false, "pthread_create");
        return;
    }
    while (!atomic_load(&spin_started))
        ;
    idle = attn_quiesce(5.0);
    pthread_join(th, NULL);
    tap_ok(idle >= 0.15, "a thread spinning for 200 ms: waited %.1f ms for it", 1e3 * idle);

    secs = 10;
    atomic_store(&spin_stop, false);
    atomic_store(&spin_started, false);
    if (pthread_create(&th, NULL, spinner, &secs) != 0) {
        tap_ok(false, "pthread_create");
        return;
    }
    while (!atomic_load(&spin_started))
        ;
    idle = attn_quiesce(0.1);
    atomic_store(&spin_stop, true);
    pthread_join(th, NULL);
    tap_ok(idle < 0 && idle >= -0.2, "a thread that keeps spinning: gave up after %.1f ms",
           -1e3 * idle);
}

/* r's CSV file (header and row, peak as given) into buf; false when it
 * could not be written or read back. */
static bool csv_of(const attn_result *r, const attn_peak *pk, char *buf, size_t len)
{
    char path[] = "/tmp/attnbench-csv-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0)
        return false;
    close(fd);
    unlink(path);
    attn_csv c = { .fd = -1 };
    const attn_setup s = { .seed = 1, .threads = 1 };
    bool ok = attn_csv_open(&c, path, false) < 0 && attn_csv_append(&c, r, &s, pk) < 0;
    attn_csv_close(&c);
    memset(buf, 0, len);
    FILE *f = fopen(path, "r");
    ok = ok && f && fread(buf, 1, len - 1, f) > 0;
    if (f)
        fclose(f);
    unlink(path);
    return ok;
}

/* Byte counts reach the CSV as exact integers, also past 1e9. */
static void csv_bytes(void)
{
    attn_result r;
    memset(&r, 0, sizeof(r));
    r.be = attn_backend_find("naive");
    r.p = (attn_problem){ 1, 1, 8, 8, 4, 4, 0.5f, false, NULL, ATTN_KIND_SOFTMAX };
    r.verdict = ATTN_PASSED;
    r.ws_peak = 2147614884u;
    r.ws_predicted = 4294967297u;
    char buf[8192];
    const bool ok = csv_of(&r, NULL, buf, sizeof(buf));
    tap_ok(ok && strstr(buf, ",2147614884,4294967297,"),
           "workspace bytes 2147614884 and 4294967297 are written exactly");
}

/* The roofline on a planted machine (100 GFLOP/s fp32, 200 bf16, 50 GB/s):
 * the expected time, bound and %, in the CSV too. */
static void roofline(void)
{
    const attn_peak pk = { .threads = 1, .fma_1 = 100, .fma_t = 100, .dot_1 = 200, .dot_t = 200,
                           .triad = 50 };
    attn_result r;
    memset(&r, 0, sizeof(r));
    r.be = attn_backend_find("naive");
    r.p = (attn_problem){ 1, 1, 8, 8, 4, 4, 0.5f, false, NULL, ATTN_KIND_SOFTMAX };
    r.verdict = ATTN_PASSED;
    r.timing.reps = 3;
    r.timing.real_stats.median = 0.025;
    r.flops = 1e9, r.bytes = 1e9;   /* 20 ms of memory, 10 ms of FMA */
    attn_roofline x = attn_case_roofline(&r, &pk);
    tap_ok(x.memory_bound && near(x.s, 0.02) && near(x.mem_s, 0.02) && near(x.fma_s, 0.01) &&
           near(attn_case_pct_roofline(&r, &pk), 80),
           "1 GB and 1 GFLOP in 25 ms: memory-bound, roofline 20 ms, 80%% (%g s, %g%%)", x.s,
           attn_case_pct_roofline(&r, &pk));
    r.flops = 4e9;                  /* 40 ms of FMA */
    r.timing.real_stats.median = 0.05;
    x = attn_case_roofline(&r, &pk);
    tap_ok(!x.memory_bound && near(x.s, 0.04) && near(attn_case_pct_roofline(&r, &pk), 80),
           "1 GB and 4 GFLOP in 50 ms: compute-bound, roofline 40 ms, 80%% (%g s)", x.s);
    r.p.dtype = r.p.kv_dtype = ATTN_DTYPE_BF16;   /* held to the bf16 dot-product peak */
    x = attn_case_roofline(&r, &pk);
    tap_ok(x.memory_bound && near(x.s, 0.02) && near(attn_case_pct_roofline(&r, &pk), 40),
           "the same in bf16: 20 ms at 200 GFLOP/s, memory-bound again, 40%% (%g s)", x.s);
    r.p.dtype = r.p.kv_dtype = ATTN_DTYPE_FP32;
    attn_peak fast = pk;
    fast.read = 100;                /* a read-only stream faster than the triad */
    r.flops = 1e9;
    x = attn_case_roofline(&r, &fast);
    tap_ok(x.memory_bound && near(x.s, 0.01) && near(x.fma_s, 0.01),
           "with a 100 GB/s read-only stream the faster stream bounds it: 10 ms (%g s)", x.s);
    r.flops = 4e9;

    char buf[8192];
    const bool ok = csv_of(&r, &pk, buf, sizeof(buf));
    tap_ok(ok && strstr(buf, ",roofline_gbs,roofline_s,pct_roofline,bound,probe_gbs,") &&
           strstr(buf, ",50,0.04,80,compute,,"),
           "the CSV row holds roofline_gbs 50, roofline_s 0.04, pct_roofline 80, bound compute, "
           "no probe");

    /* --bw-probe: the faster of the two probes beside the timed runs
     * replaces the machine's bandwidth, whichever way it moved. */
    r.flops = 1e9;
    r.timing.real_stats.median = 0.05;
    r.probe_before = 20, r.probe_after = 25;   /* 1 GB at 25 GB/s: 40 ms */
    x = attn_case_roofline(&r, &pk);
    tap_ok(x.memory_bound && near(x.s, 0.04) && near(attn_case_pct_roofline(&r, &pk), 80) &&
           near(attn_case_bw(&r, &pk), 25),
           "probes of 20 and 25 GB/s: the roofline takes 25, 40 ms, 80%% (%g s)", x.s);
    r.probe_before = 100, r.probe_after = 0.5;
    x = attn_case_roofline(&r, &pk);
    tap_ok(near(x.s, 0.01) && near(attn_case_pct_roofline(&r, &pk), 20),
           "a probe faster than the machine's 50 GB/s is taken too: 10 ms, 20%% (%g s)", x.s);
    r.probe_before = 20, r.probe_after = 25;
    const bool ok2 = csv_of(&r, &pk, buf, sizeof(buf));
    tap_ok(ok2 && strstr(buf, ",25,0.04,80,memory,25,"),
           "the CSV row holds roofline_gbs 25 (the probe), pct_roofline 80 and probe_gbs 25");
    r.probe_before = r.probe_after = 0;

    /* --fma-probe: the faster of the two FMA probes replaces the machine's
     * peak, for %peak and the roofline, whichever way it moved. */
    r.flops = 4e9;
    r.fprobe_before = 80, r.fprobe_after = 50;   /* 4 GFLOP at 80 GFLOP/s: 50 ms */
    x = attn_case_roofline(&r, &pk);
    tap_ok(!x.memory_bound && near(x.fma_s, 0.05) && near(attn_case_pct_roofline(&r, &pk), 100) &&
           near(attn_case_peak_gflops(&r, &pk), 80),
           "FMA probes of 80 and 50 GFLOP/s: the peak is 80, the roofline 50 ms, 100%% (%g s)",
           x.s);
    r.fprobe_before = 0, r.fprobe_after = 400;
    x = attn_case_roofline(&r, &pk);
    tap_ok(x.memory_bound && near(x.fma_s, 0.01) && near(attn_case_pct_roofline(&r, &pk), 40),
           "an FMA probe faster than the machine's 100 GFLOP/s is taken too: 10 ms of FMA, "
           "memory-bound at 20 ms, 40%% (%g s)", x.s);
    r.p.dtype = r.p.kv_dtype = ATTN_DTYPE_BF16;   /* the probe, not the bf16 peak of 200 */
    tap_ok(near(attn_case_peak_gflops(&r, &pk), 400),
           "a bf16 case takes its probe (of the dot products) over the machine's bf16 peak");
    r.p.dtype = r.p.kv_dtype = ATTN_DTYPE_FP32;
    r.fprobe_before = 80, r.fprobe_after = 50;
    const bool ok5 = csv_of(&r, &pk, buf, sizeof(buf));
    const char *row5 = ok5 ? strchr(buf, '\n') : NULL;
    if (!tap_ok(ok5 && strstr(buf, ",bound,probe_gbs,probe_gflops,") && row5 &&
                    strstr(row5, ",80,100,") && strstr(row5, ",50,0.05,100,compute,,80,"),
                "the CSV row holds peak_gflops 80 and pct_peak 100 (the probe), roofline_s "
                "0.05, pct_roofline 100, no bandwidth probe and probe_gflops 80") && row5)
        tap_diag("%s", row5 + 1);
    r.fprobe_before = r.fprobe_after = 0;
    r.flops = 1e9;

    /* A GPU ran the case: the host CPU's peaks do not apply to it, and no
     * figure is quoted against them; a CPU device (lavapipe) keeps them. */
    snprintf(r.device, sizeof(r.device), "planted GPU (discrete GPU)");
    const bool ok3 = csv_of(&r, &pk, buf, sizeof(buf));
    const char *row = strchr(buf, '\n');
    tap_ok(!attn_case_peak(&r, &pk) && ok3 && row && !strstr(row, ",0.02,40,") &&
           !strstr(row, ",compute,") && !strstr(row, ",memory,"),
           "a GPU's row: no peak, %%peak, %%bw or roofline from the host's figures");
    r.device_is_cpu = true;
    const bool ok4 = csv_of(&r, &pk, buf, sizeof(buf));
    tap_ok(attn_case_peak(&r, &pk) == &pk && ok4 && strstr(buf, ",50,0.02,40,memory,,"),
           "a CPU device's row (lavapipe) keeps the host's roofline");
}

int main(void)
{
    stats();
    lists();
    order();
    quiesce();
    csv_bytes();
    roofline();
    return tap_done();
}

#include <immintrin.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend.h"
#include "config.h"
#include "memory.h"
#include "peak.h"
#include "timer.h"

/* Twelve independent chains of a = a*b + c: enough in flight to cover the FMA
 * latency on two ports. b < 1 keeps every value bounded and normal. */
#define CHAINS 12

__attribute__((target("avx512f")))
static float fma_avx512(long iters)
{
    __m512 a[CHAINS];
    const __m512 b = _mm512_set1_ps(0.99999994f), c = _mm512_set1_ps(1e-7f);
    for (int k = 0; k < CHAINS; k++)
        a[k] = _mm512_set1_ps((float)k);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++)
            a[k] = _mm512_fmadd_ps(a[k], b, c);
    __m512 s = a[0];
    for (int k = 1; k < CHAINS; k++)
        s = _mm512_add_ps(s, a[k]);
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma")))
static float fma_avx2(long iters)
{
    __m256 a[CHAINS];
    const __m256 b = _mm256_set1_ps(0.99999994f), c = _mm256_set1_ps(1e-7f);
    for (int k = 0; k < CHAINS; k++)
        a[k] = _mm256_set1_ps((float)k);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++)
            a[k] = _mm256_fmadd_ps(a[k], b, c);
    float out[8], sum = 0;
    for (int k = 1; k < CHAINS; k++)
        a[0] = _mm256_add_ps(a[0], a[k]);
    _mm256_storeu_ps(out, a[0]);
    for (int j = 0; j < 8; j++)
        sum += out[j];
    return sum;
}

static float fma_scalar(long iters)
{
    float a[CHAINS];
    for (int k = 0; k < CHAINS; k++)
        a[k] = (float)k;
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++)
            a[k] = a[k] * 0.99999994f + 1e-7f;
    float s = 0;
    for (int k = 0; k < CHAINS; k++)
        s += a[k];
    return s;
}

#if ATTN_HAVE_BF16_KERNELS
/* The same chains on vdpbf16ps: acc += a0*b0 + a1*b1 per lane, a and b
 * small enough that the sums stay bounded and normal. */
__attribute__((target("avx512f,avx512bf16")))
static float dot_bf16(long iters)
{
    __m512 a[CHAINS];
    const __m512i b = _mm512_set1_epi32(0x3a803a80);   /* bf16 pairs of 2^-10 */
    for (int k = 0; k < CHAINS; k++)
        a[k] = _mm512_set1_ps((float)k);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++)
            a[k] = _mm512_dpbf16_ps(a[k], (__m512bh)b, (__m512bh)b);
    __m512 s = a[0];
    for (int k = 1; k < CHAINS; k++)
        s = _mm512_add_ps(s, a[k]);
    return _mm512_reduce_add_ps(s);
}
#endif

typedef struct fma_isa {
    const char *name;
    int lanes;
    float (*fn)(long);
} fma_isa;

static fma_isa widest_fma(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return (fma_isa){ "avx512f", 16, fma_avx512 };
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return (fma_isa){ "avx2+fma", 8, fma_avx2 };
    return (fma_isa){ "scalar", 1, fma_scalar };
}

static volatile float sink;

/* GFLOP/s of `threads` threads each running `iters` of the chains; the best
 * of 3 runs. */
static double fma_best(const fma_isa *isa, long iters, int threads)
{
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        const double t0 = attn_now();
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
        sink = isa->fn(iters);
        const double dt = attn_now() - t0;
        const double gf = 2.0 * CHAINS * isa->lanes * (double)iters * threads / dt * 1e-9;
        best = gf > best ? gf : best;
    }
    return best;
}

/* The iterations of the chains that last about `seconds` on one thread. */
static long fma_calibrate(const fma_isa *isa, double seconds)
{
    for (long iters = 1 << 12;; iters *= 4) {
        const double t0 = attn_now();
        sink = isa->fn(iters);
        const double dt = attn_now() - t0;
        if (dt > seconds / 4 || iters > (1L << 40))
            return (long)((double)iters * seconds / dt) + 1;
    }
}

/* GFLOP/s of `threads` threads each running the chains; the best of 3 runs of
 * about 0.2 s each. */
static double fma_gflops(const fma_isa *isa, int threads)
{
    return fma_best(isa, fma_calibrate(isa, 0.2), threads);
}

/* STREAM's triad over arrays far larger than any cache; the best of 5 passes. */
static double triad_gbs(int threads)
{
    (void)threads;   /* unused without OpenMP */
    size_t n = (size_t)32 << 20;     /* 128 MiB per array */
    const uint64_t avail = attn_mem_available();
    while (avail && n > ((size_t)1 << 20) && 3 * n * sizeof(float) > avail / 4)
        n /= 2;
    float *a = attn_host_alloc(n * sizeof(float)), *b = attn_host_alloc(n * sizeof(float)),
          *c = attn_host_alloc(n * sizeof(float));
    double best = 0;
    if (a && b && c) {
        const long ln = (long)n;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
        for (long i = 0; i < ln; i++) {
            a[i] = 0.0f;
            b[i] = 1.0f;
            c[i] = 2.0f;
        }
        for (int rep = 0; rep < 5; rep++) {
            const double t0 = attn_now();
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
            for (long i = 0; i < ln; i++)
                a[i] = b[i] + 3.0f * c[i];
            const double dt = attn_now() - t0;
            const double gbs = 3.0 * (double)n * sizeof(float) / dt * 1e-9;
            best = gbs > best ? gbs : best;
        }
        sink = a[n / 2];
    }
    attn_host_free(a);
    attn_host_free(b);
    attn_host_free(c);
    return best;
}

/* One timed pass of a read-only stream over a[0..n) on `threads` threads:
 * the sum of the array as 32-bit integers (which the compiler may vectorize
 * and reorder freely, so the adds never bound it), plain or with each
 * 64-byte line prefetched READ_PF bytes ahead (as the decoding kernels do);
 * GB/s. */
#define READ_PF 2048
static double read_pass(const uint32_t *a, size_t n, int threads, bool pf)
{
    (void)threads;   /* unused without OpenMP */
    const long ln = (long)n;
    uint32_t total = 0;
    const double t0 = attn_now();
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
#endif
    for (long i = 0; i < ln; i += 16) {
        if (pf)
            __builtin_prefetch((const char *)(a + i) + READ_PF, 0, 1);
        uint32_t line = 0;
        for (int x = 0; x < 16; x++)
            line += a[i + x];
        total += line;
    }
    const double dt = attn_now() - t0;
    sink = (float)total;
    return (double)n * sizeof(uint32_t) / dt * 1e-9;
}

static uint32_t *stream_array(size_t n, int threads)
{
    (void)threads;   /* unused without OpenMP */
    uint32_t *a = attn_host_alloc(n * sizeof(uint32_t));
    if (a) {
        const long ln = (long)n;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
        for (long i = 0; i < ln; i++)
            a[i] = (uint32_t)i;
    }
    return a;
}

/* A read-only stream (what decoding does to K and V) over one array far
 * larger than any cache; the best of 5 passes plain and 5 prefetched. */
static double read_gbs(int threads)
{
    size_t n = (size_t)96 << 20;     /* 384 MiB */
    const uint64_t avail = attn_mem_available();
    while (avail && n > ((size_t)1 << 20) && n * sizeof(uint32_t) > avail / 4)
        n /= 2;
    uint32_t *a = stream_array(n, threads);
    double best = 0;
    for (int rep = 0; a && rep < 10; rep++) {
        const double gbs = read_pass(a, n, threads, rep & 1);
        best = gbs > best ? gbs : best;
    }
    attn_host_free(a);
    return best;
}

/* --bw-probe: the array, made once (before any case, so that no case's
 * peak RSS holds it), and the probe itself. */
static uint32_t *probe_a;
static size_t probe_n;

bool attn_bw_probe_init(size_t bytes, int threads)
{
    if (probe_a)
        return true;
    probe_n = bytes / sizeof(uint32_t) / 16 * 16;
    probe_a = probe_n ? stream_array(probe_n, threads) : NULL;
    return probe_a != NULL;
}

double attn_bw_probe(int threads)
{
    double best = 0;
    for (int rep = 0; probe_a && rep < 4; rep++) {
        const double gbs = read_pass(probe_a, probe_n, threads, rep & 1);
        best = gbs > best ? gbs : best;
    }
    return best;
}

/* --fma-probe: the FMA chains (or the bf16 dot products') of attn_peak_measure,
 * calibrated once to about PROBE_S a pass, so that each probe costs the same. */
#define PROBE_S 0.02
static long probe_iters[2];

static fma_isa probe_isa(bool dot)
{
#if ATTN_HAVE_BF16_KERNELS
    if (dot && attn_cpu_bf16_dot())
        return (fma_isa){ "avx512bf16", 32, dot_bf16 };
#endif
    (void)dot;
    return widest_fma();
}

void attn_fma_probe_init(void)
{
    for (int dot = 0; dot < 2; dot++) {
        if (probe_iters[dot])
            continue;
        const fma_isa isa = probe_isa(dot);
        probe_iters[dot] = fma_calibrate(&isa, PROBE_S);
    }
}

double attn_fma_probe(int threads, bool dot)
{
    if (!probe_iters[dot])
        return 0;
    const fma_isa isa = probe_isa(dot);
    return fma_best(&isa, probe_iters[dot], threads);
}

bool attn_peak_measure(attn_peak *pk, int threads, const char *cpu)
{
    memset(pk, 0, sizeof(*pk));
    const fma_isa isa = widest_fma();
    pk->threads = threads;
    snprintf(pk->isa, sizeof(pk->isa), "%s", isa.name);
    snprintf(pk->cpu, sizeof(pk->cpu), "%s", cpu);
    pk->fma_1 = fma_gflops(&isa, 1);
    pk->fma_t = threads > 1 ? fma_gflops(&isa, threads) : pk->fma_1;
#if ATTN_HAVE_BF16_KERNELS
    if (attn_cpu_bf16_dot()) {
        /* 16 lanes x 4 FLOPs counted as 2 x lanes by fma_gflops: 32 "lanes" */
        const fma_isa dot = { "avx512bf16", 32, dot_bf16 };
        pk->dot_1 = fma_gflops(&dot, 1);
        pk->dot_t = threads > 1 ? fma_gflops(&dot, threads) : pk->dot_1;
    }
#endif
    pk->triad = triad_gbs(threads);
    pk->read = read_gbs(threads);
    return pk->triad > 0;
}

double attn_peak_gflops(const attn_peak *pk, const attn_problem *p)
{
    if (p->dtype == ATTN_DTYPE_BF16 && p->kv_dtype == ATTN_DTYPE_BF16 && pk->dot_t > 0)
        return pk->dot_t;
    return pk->fma_t;
}

static bool cache_path(char *path, size_t len)
{
    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return false;
    *slash = '\0';
    return snprintf(path, len, "%s/attnbench-peak.txt", exe) < (int)len;
}

bool attn_peak_load(attn_peak *pk, int threads, const char *cpu)
{
    char path[PATH_MAX + 32];
    if (!cache_path(path, sizeof(path)))
        return false;
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    attn_peak p = { 0 };
    char line[256];
    int got = 0;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        got += sscanf(line, "threads=%d", &p.threads) == 1;
        got += sscanf(line, "fma_gflops_1=%lf", &p.fma_1) == 1;
        got += sscanf(line, "fma_gflops_t=%lf", &p.fma_t) == 1;
        got += sscanf(line, "triad_gbs=%lf", &p.triad) == 1;
        got += sscanf(line, "read_gbs=%lf", &p.read) == 1;
        got += sscanf(line, "bf16_gflops_1=%lf", &p.dot_1) == 1;
        got += sscanf(line, "bf16_gflops_t=%lf", &p.dot_t) == 1;
        got += sscanf(line, "isa=%15s", p.isa) == 1;
        if (!strncmp(line, "cpu=", 4)) {
            snprintf(p.cpu, sizeof(p.cpu), "%.127s", line + 4);
            got++;
        }
    }
    fclose(f);
    if (got != 9 || p.threads != threads || strcmp(p.cpu, cpu))
        return false;
    *pk = p;
    return true;
}

bool attn_peak_save(const attn_peak *pk, char *path, size_t len)
{
    char tmp[PATH_MAX + 48];
    if (!cache_path(path, len) || snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
        return false;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return false;
    fprintf(f, "cpu=%s\nthreads=%d\nisa=%s\nfma_gflops_1=%.6g\nfma_gflops_t=%.6g\ntriad_gbs=%.6g\n"
               "bf16_gflops_1=%.6g\nbf16_gflops_t=%.6g\nread_gbs=%.6g\n",
            pk->cpu, pk->threads, pk->isa, pk->fma_1, pk->fma_t, pk->triad, pk->dot_1, pk->dot_t,
            pk->read);
    const bool ok = fclose(f) == 0 && rename(tmp, path) == 0;
    if (!ok)
        unlink(tmp);
    return ok;
}

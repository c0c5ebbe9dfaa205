/* This machine's measured limits: fp32 FMA throughput with 1 and T threads,
 * bf16 dot-product throughput (AVX512_BF16) where the CPU has it, and
 * streaming (triad) memory bandwidth, kept beside the executable so every
 * case can report its share of the peak. */
#ifndef ATTN_PEAK_H
#define ATTN_PEAK_H

#include <stdbool.h>

typedef struct attn_peak {
    int threads;            /* T of fma_t and triad */
    double fma_1;           /* GFLOP/s, one thread */
    double fma_t;           /* GFLOP/s, T threads */
    double triad;           /* GB/s, T threads, a[i] = b[i] + s*c[i], 12 bytes per element:
                               the %bw of a case */
    double read;            /* GB/s, T threads, a read-only stream (a sum), the better of
                               plain and software-prefetched: what decoding's K/V see */
    double dot_1, dot_t;    /* GFLOP/s of vdpbf16ps (2 products and 2 adds per fp32
                               lane), 1 and T threads; 0: this CPU has none */
    char isa[16];           /* the widest FMA the measurement used */
    char cpu[128];          /* the CPU it was measured on */
} attn_peak;

/* Measures (a few seconds). false only when memory for the triad arrays is missing. */
bool attn_peak_measure(attn_peak *pk, int threads, const char *cpu);
/* The measurement kept beside the executable, if it is for this CPU and T. */
bool attn_peak_load(attn_peak *pk, int threads, const char *cpu);
bool attn_peak_save(const attn_peak *pk, char *path, size_t len);

/* --bw-probe: a read-only stream measured beside each case (before and
 * after its timed runs), for machines whose bandwidth moves with their
 * neighbours' load. init makes its array of `bytes` (larger than the last
 * level cache, as the caller chooses) once, before any case; false when
 * memory is missing. The probe: the best of 4 passes (2 plain, 2 with
 * software prefetch) on `threads` threads, GB/s; 0 without init. */
#include <stddef.h>
bool attn_bw_probe_init(size_t bytes, int threads);
double attn_bw_probe(int threads);

/* --fma-probe: the FMA peak measured beside each case (before and after its
 * timed runs), for machines whose cores' rate moves with their neighbours'
 * load. init calibrates the passes once, before any case. The probe: the
 * best of 3 passes of about 20 ms of attn_peak_measure's chains on
 * `threads` threads, fp32 FMA, or the bf16 dot products where dot and the
 * CPU has them; GFLOP/s, 0 without init. */
void attn_fma_probe_init(void);
double attn_fma_probe(int threads, bool dot);

/* The roofline's bandwidth: the faster of the two streams measured (triad,
 * read-only), so that the roofline stays a time no case can beat by
 * streaming as the faster one did. */
static inline double attn_peak_bw(const attn_peak *pk)
{
    return pk->read > pk->triad ? pk->read : pk->triad;
}

/* The peak a case of storage types q and kv is held to (T threads): the bf16
 * dot-product peak when both are bf16 and the CPU has bf16 dot products
 * (what a bf16 kernel can run on), else the fp32 FMA peak (fp16 storage is
 * computed in fp32 on CPUs without fp16 arithmetic). */
struct attn_problem;
double attn_peak_gflops(const attn_peak *pk, const struct attn_problem *p);

#endif

/* This machine's measured limits: fp32 FMA throughput with 1 and T threads,
 * and streaming (triad) memory bandwidth, kept beside the executable so every
 * case can report its share of the peak. */
#ifndef ATTN_PEAK_H
#define ATTN_PEAK_H

#include <stdbool.h>

typedef struct attn_peak {
    int threads;            /* T of fma_t and triad */
    double fma_1;           /* GFLOP/s, one thread */
    double fma_t;           /* GFLOP/s, T threads */
    double triad;           /* GB/s, T threads, a[i] = b[i] + s*c[i], 12 bytes per element */
    char isa[16];           /* the widest FMA the measurement used */
    char cpu[128];          /* the CPU it was measured on */
} attn_peak;

/* Measures (a few seconds). false only when memory for the triad arrays is missing. */
bool attn_peak_measure(attn_peak *pk, int threads, const char *cpu);
/* The measurement kept beside the executable, if it is for this CPU and T. */
bool attn_peak_load(attn_peak *pk, int threads, const char *cpu);
bool attn_peak_save(const attn_peak *pk, char *path, size_t len);

#endif

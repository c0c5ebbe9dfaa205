/* Summary statistics of a sample of measurements. */
#ifndef ATTN_STATS_H
#define ATTN_STATS_H

#include <stddef.h>

typedef struct attn_stats {
    size_t n;
    double min, max, median, mean;
    double stddev;   /* sample standard deviation (n - 1); 0 for n < 2 */
    double cv;       /* stddev / mean; 0 when mean is 0 */
} attn_stats;

/* x is left unchanged; n may be 0 (all fields 0). */
void attn_stats_compute(attn_stats *s, const double *x, size_t n);

#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void attn_stats_compute(attn_stats *s, const double *x, size_t n)
{
    memset(s, 0, sizeof(*s));
    s->n = n;
    if (n == 0)
        return;
    double *sorted = malloc(n * sizeof(double));
    if (sorted) {
        memcpy(sorted, x, n * sizeof(double));
        qsort(sorted, n, sizeof(double), cmp_double);
        s->min = sorted[0];
        s->max = sorted[n - 1];
        s->median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
        free(sorted);
    } else {
        s->median = NAN;   /* never silently wrong */
        s->min = s->max = x[0];
        for (size_t i = 1; i < n; i++) {
            s->min = fmin(s->min, x[i]);
            s->max = fmax(s->max, x[i]);
        }
    }
    /* Two passes: the mean first, then squared deviations from it, which
     * stays accurate when the spread is tiny compared with the mean. */
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    s->mean = sum / (double)n;
    if (n > 1) {
        double sq = 0.0;
        for (size_t i = 0; i < n; i++)
            sq += (x[i] - s->mean) * (x[i] - s->mean);
        s->stddev = sqrt(sq / (double)(n - 1));
    }
    s->cv = s->mean != 0.0 ? s->stddev / s->mean : 0.0;
}

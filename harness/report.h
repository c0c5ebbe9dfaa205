/* Report: what a person reads on stdout. */
#ifndef ATTN_REPORT_H
#define ATTN_REPORT_H

#include <stdio.h>

#include "case.h"
#include "machine.h"

/* The run: version, machine, build, clock, peak, and what will run. */
void attn_report_header(FILE *f, const attn_machine *m, const attn_setup *s, size_t shapes,
                        size_t cases);
void attn_report_reference(FILE *f, const attn_ref *ref, double seconds);
/* A sweep's shape heading: the shape, then the reference line. */
void attn_report_shape(FILE *f, const attn_problem *p, const attn_ref *ref, double seconds);

void attn_report_row_header(FILE *f);
/* naive: naive's median for the speedup column (0: unknown); peak: this
 * machine's FMA peak and triad bandwidth (NULL: unknown). */
void attn_report_row(FILE *f, const attn_result *r, double naive, const attn_peak *peak);
/* Verdict and why, check metrics with thresholds, memory, timing, the
 * roofline (peak: NULL where unknown), repro. */
void attn_report_details(FILE *f, const attn_result *r, const attn_peak *peak);

/* One case's comparison, in two parts so that the table is the last thing
 * a run prints: every case's details, after sorting res (fastest PASSED
 * first), then the table in that order. */
void attn_report_results_details(FILE *f, attn_result *res, size_t n, const attn_peak *peak);
void attn_report_results_table(FILE *f, const attn_result *res, size_t n, const attn_peak *peak);
/* A sweep's closing count. */
void attn_report_summary(FILE *f, const attn_result *res, size_t n, size_t resumed,
                         const char *csv);

/* With storage types beside fp32 in res: each reduced-precision case
 * against the fp32 case of the same backend and shape (median times, the
 * speedup, K/V bytes, its error). Nothing when there is no such pair. */
void attn_report_dtypes(FILE *f, const attn_result *res, size_t n);

#endif

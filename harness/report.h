/* Report: the human-readable header, comparison table and per-case details. */
#ifndef ATTN_REPORT_H
#define ATTN_REPORT_H

#include <stdio.h>

#include "case.h"

void attn_report_header(FILE *f, const attn_problem *p, const attn_setup *s);
void attn_report_reference(FILE *f, const attn_ref *ref, double seconds);
/* Sorts res (fastest PASSED first) and prints the table, then one detail
 * block per case with its verdict, error metrics, thresholds and repro. */
void attn_report_results(FILE *f, attn_result *res, size_t n);

#endif

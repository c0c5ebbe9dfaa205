#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "report.h"

void attn_report_header(FILE *f, const attn_problem *p, const attn_setup *s)
{
    char shape[512];
    attn_problem_describe(p, shape, sizeof(shape));
    fprintf(f, "attnbench %s: %s fp32 scale=%.6g, fill=%s seed=%llu threads=%d\n",
            ATTN_VERSION, shape, p->scale, attn_fill_name(s->fill),
            (unsigned long long)s->seed, s->threads);
}

void attn_report_reference(FILE *f, const attn_ref *ref, double seconds)
{
    fprintf(f, "reference: %zu of %zu rows (%s) in double precision, %.2f s; "
               "max|logit| %.3g, max|V| %.3g\n",
            ref->nrows, ref->total_rows,
            ref->nrows == ref->total_rows ? "all" : "seeded stratified sample", seconds,
            ref->max_abs_logit, ref->max_abs_v);
}

static void format_time(char *buf, size_t len, double s)
{
    if (s < 1e-3)
        snprintf(buf, len, "%.2f us", s * 1e6);
    else if (s < 1.0)
        snprintf(buf, len, "%.3f ms", s * 1e3);
    else
        snprintf(buf, len, "%.3f s", s);
}

static int rank(const attn_result *r)
{
    if (r->verdict == ATTN_PASSED)
        return r->timing.reps ? 0 : 1;
    return 1 + (int)r->verdict;
}

static int cmp_result(const void *a, const void *b)
{
    const attn_result *x = a, *y = b;
    if (rank(x) != rank(y))
        return rank(x) - rank(y);
    if (rank(x) == 0)
        return (x->timing.median > y->timing.median) - (x->timing.median < y->timing.median);
    return 0;
}

void attn_report_results(FILE *f, attn_result *res, size_t n)
{
    qsort(res, n, sizeof(*res), cmp_result);
    double naive = 0.0;
    for (size_t i = 0; i < n; i++)
        if (res[i].verdict == ATTN_PASSED && res[i].timing.reps && !strcmp(res[i].be->name, "naive"))
            naive = res[i].timing.median;

    fprintf(f, "\n%-14s %-8s %12s %12s %10s %9s %12s\n", "backend", "verdict", "median", "min",
            "GFLOP/s", "vs naive", "workspace");
    for (size_t i = 0; i < n; i++) {
        const attn_result *r = &res[i];
        char med[32] = "-", min[32] = "-", gf[32] = "-", sp[32] = "-", ws[32] = "-";
        if (r->verdict == ATTN_PASSED && r->timing.reps) {
            format_time(med, sizeof(med), r->timing.median);
            format_time(min, sizeof(min), r->timing.min);
            snprintf(gf, sizeof(gf), "%.2f", r->flops / r->timing.median * 1e-9);
            if (naive > 0)
                snprintf(sp, sizeof(sp), "%.2fx", naive / r->timing.median);
        }
        if (r->verdict == ATTN_PASSED || r->verdict == ATTN_FAILED)
            attn_format_bytes(ws, sizeof(ws), (double)r->ws_peak);
        fprintf(f, "%-14s %-8s %12s %12s %10s %9s %12s\n", r->be->name,
                attn_verdict_str(r->verdict), med, min, gf, sp, ws);
    }

    for (size_t i = 0; i < n; i++) {
        const attn_result *r = &res[i];
        fprintf(f, "\n%s: %s", r->be->name, attn_verdict_str(r->verdict));
        if (r->why[0])
            fprintf(f, ": %s", r->why);
        fputc('\n', f);
        if (r->checked) {
            char desc[512];
            attn_check_describe(&r->check, desc, sizeof(desc));
            fprintf(f, "  check: %s\n", desc);
        }
        if (r->verdict == ATTN_PASSED || r->verdict == ATTN_FAILED) {
            char peak[32], pred[32];
            attn_format_bytes(peak, sizeof(peak), (double)r->ws_peak);
            attn_format_bytes(pred, sizeof(pred), (double)r->ws_predicted);
            fprintf(f, "  workspace: peak %s (%zu bytes), predicted %s\n", peak, r->ws_peak, pred);
        }
        if (r->timing.reps)
            fprintf(f, "  time: median of %d runs after warm-up\n", r->timing.reps);
        fprintf(f, "  repro: %s\n", r->repro);
    }
}

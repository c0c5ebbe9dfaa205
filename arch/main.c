/* attnbench arch: every model at every N, checked against a double forward
 * pass, timed, its memory tracked; a table, the exponents, CSV and JSON, and
 * a repro line per row, in the main program's conventions. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "arch.h"
#include "config.h"
#include "csv.h"
#include "io.h"
#include "json.h"
#include "layers.h"
#include "machine.h"
#include "problem.h"

#define ARCH_CSV_SCHEMA 2

typedef struct arch_row {
    arch_model model;
    int n;
    attn_verdict verdict;
    char why[384];
    arch_check check;
    bool checked;
    attn_timing t;
    double flops, analytic;
    size_t peak;
    char name[160];
    char repro[512];
} arch_row;

static attn_status forward_fn(void *net)
{
    return arch_forward(net);
}

static double fit_slope(const double *x, const double *y, int n)
{
    double mx = 0, my = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        mx += log(x[i]) / n;
        my += log(y[i]) / n;
    }
    for (int i = 0; i < n; i++) {
        sxx += (log(x[i]) - mx) * (log(x[i]) - mx);
        sxy += (log(x[i]) - mx) * (log(y[i]) - my);
    }
    return sxx > 0 ? sxy / sxx : NAN;
}

static void fmt_s(char *buf, size_t len, double s)
{
    if (s >= 1)
        snprintf(buf, len, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(buf, len, "%.2f ms", s * 1e3);
    else
        snprintf(buf, len, "%.1f us", s * 1e6);
}

static const char *conv_name(arch_conv c)
{
    return c == ARCH_CONV_SHIFT ? "shift" : "im2col";
}

static bool uses_attention(arch_model m)
{
    return m == ARCH_ATTN || m == ARCH_MHA;
}

/* A row that ran within tolerance and was timed. */
static bool timed(const arch_row *r)
{
    return attn_verdict_ok(r->verdict) && r->t.reps;
}

static const arch_row *find_row(const arch_row *rows, size_t n, arch_model m, int seq)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].model == m && rows[i].n == seq && timed(&rows[i]))
            return &rows[i];
    return NULL;
}

/* The N where a's time first exceeds b's, interpolated in log-log between
 * the measured lengths; 0 when it never does within them. */
static double crossover(const arch_row *rows, size_t nr, const attn_list *seq, arch_model a,
                        arch_model b)
{
    for (size_t i = 1; i < seq->n; i++) {
        const arch_row *a0 = find_row(rows, nr, a, seq->v[i - 1]), *a1 = find_row(rows, nr, a, seq->v[i]);
        const arch_row *b0 = find_row(rows, nr, b, seq->v[i - 1]), *b1 = find_row(rows, nr, b, seq->v[i]);
        if (!a0 || !a1 || !b0 || !b1)
            continue;
        const double d0 = log(a0->t.real_stats.median / b0->t.real_stats.median);
        const double d1 = log(a1->t.real_stats.median / b1->t.real_stats.median);
        if (i == 1 && d0 > 0)
            return seq->v[0];
        if (d0 <= 0 && d1 > 0) {
            const double f = -d0 / (d1 - d0);
            return exp(log(seq->v[i - 1]) + f * (log(seq->v[i]) - log(seq->v[i - 1])));
        }
    }
    return 0;
}

/* The case's identity and the command that reruns it alone. */
static void name_row(arch_row *r, const arch_opts *o, const char *prog)
{
    const char *model = arch_model_name(r->model);
    int at = snprintf(r->name, sizeof(r->name), "arch/%s/b:%d/n:%d/d:%d", model, o->batch, r->n,
                      o->dmodel);
    if (r->model == ARCH_CNN && at > 0 && (size_t)at < sizeof(r->name))
        snprintf(r->name + at, sizeof(r->name) - (size_t)at, "/conv:%s", conv_name(o->conv));
    else if (uses_attention(r->model) && at > 0 && (size_t)at < sizeof(r->name))
        snprintf(r->name + at, sizeof(r->name) - (size_t)at, "/attn:%s", o->be->name);
    at = snprintf(r->repro, sizeof(r->repro), "%s arch --models %s --seq %d --batch %d --dmodel %d",
                  prog, model, r->n, o->batch, o->dmodel);
    if (r->model == ARCH_CNN && at > 0 && (size_t)at < sizeof(r->repro))
        at += snprintf(r->repro + at, sizeof(r->repro) - (size_t)at, " --conv %s",
                       conv_name(o->conv));
    if (uses_attention(r->model) && at > 0 && (size_t)at < sizeof(r->repro))
        at += snprintf(r->repro + at, sizeof(r->repro) - (size_t)at, " --attn-backend %s",
                       o->be->name);
    if (at > 0 && (size_t)at < sizeof(r->repro))
        snprintf(r->repro + at, sizeof(r->repro) - (size_t)at, " --threads %d --seed %llu",
                 o->threads, (unsigned long long)o->seed);
}

/* One model at one N: built, run once and checked, then timed. */
static void run_row(arch_row *r, const arch_opts *o)
{
    attn_tracker tr;
    attn_tracker_init(&tr);
    arch_net net;
    attn_status st = arch_net_create(&net, r->model, o->batch, r->n, o->dmodel, o->threads,
                                     o->conv, o->be, o->seed, &tr.iface, r->why, sizeof(r->why));
    if (st != ATTN_OK) {   /* create left nothing allocated */
        r->verdict = st == ATTN_EUNSUPPORTED ? ATTN_SKIPPED : ATTN_ERROR;
        r->peak = atomic_load(&tr.peak);
        attn_tracker_destroy(&tr);
        return;
    }
    if ((st = arch_forward(&net)) != ATTN_OK) {
        r->verdict = ATTN_ERROR;
        snprintf(r->why, sizeof(r->why), "forward failed: %s", attn_status_str(st));
    } else if (arch_check_output(&net, o->seed, -1, ARCH_BUG_NONE, &r->check) != ATTN_OK) {
        r->verdict = ATTN_ERROR;
        snprintf(r->why, sizeof(r->why), "%s", r->check.why);
    } else {
        r->checked = true;
        r->verdict = r->check.pass ? ATTN_PASSED : ATTN_FAILED;
        snprintf(r->why, sizeof(r->why), "%s", r->check.why);
        if (r->check.pass && (st = attn_time_calls(forward_fn, NULL, &net, &o->timer, &r->t)) != ATTN_OK) {
            r->verdict = ATTN_ERROR;
            snprintf(r->why, sizeof(r->why), "timed forward failed: %s", attn_status_str(st));
        }
    }
    arch_net_destroy(&net);
    r->peak = atomic_load(&tr.peak);
    attn_tracker_destroy(&tr);
}

static void print_row(const arch_row *r, const arch_row *rows, size_t nr)
{
    const char *model = arch_model_name(r->model);
    char med[32] = "-", cv[32] = "-", vs[32] = "-", gf[32] = "-", pk[32] = "-", an[32] = "-";
    if (r->analytic > 0)
        attn_format_bytes(an, sizeof(an), r->analytic);
    if (attn_verdict_ran(r->verdict))
        attn_format_bytes(pk, sizeof(pk), (double)r->peak);
    if (timed(r)) {
        const arch_row *cnn = find_row(rows, nr, ARCH_CNN, r->n);
        if (cnn && timed(cnn))
            snprintf(vs, sizeof(vs), "%.2fx", r->t.real_stats.median / cnn->t.real_stats.median);
        fmt_s(med, sizeof(med), r->t.real_stats.median);
        snprintf(cv, sizeof(cv), "%.1f%%", 100 * r->t.real_stats.cv);
        snprintf(gf, sizeof(gf), "%.1f", r->flops / r->t.real_stats.median * 1e-9);
    }
    printf("%-10s %6d %-8s %12s %6s %9s %9.3g %9s %11s %11s\n", model, r->n,
           attn_verdict_str(r->verdict), med, cv, vs, r->flops * 1e-9, gf, pk, an);
    if (r->verdict != ATTN_PASSED)
        printf("  %s: %s\n  repro: %s\n", attn_verdict_str(r->verdict), r->why, r->repro);
    fflush(stdout);
}

static int write_csv(const arch_opts *o, const arch_row *rows, size_t nr)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", o->csv);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return attn_error(ATTN_EXIT_ERROR, "--csv %s: cannot write: %s", o->csv, strerror(errno));
    fprintf(f, "schema,model,verdict,reason,batch,seq,dmodel,dk,heads,threads,gemm,attn_backend,"
               "conv,seed,check_item,check_rows,max_err,tol,reps,iterations,median_s,min_s,"
               "mean_s,cv,flops,gflops,time_vs_cnn,peak_bytes,analytic_bytes,repro\n");
    for (size_t i = 0; i < nr; i++) {
        const arch_row *r = &rows[i];
        const bool t = timed(r), attn = uses_attention(r->model);
        const arch_row *cnn = find_row(rows, nr, ARCH_CNN, r->n);
        attn_csv_row l = { .at = 0 };
        attn_csv_put(&l, "%d,%s,%s", ARCH_CSV_SCHEMA, arch_model_name(r->model),
                     attn_verdict_str(r->verdict));
        attn_csv_text(&l, r->verdict == ATTN_PASSED ? "" : r->why);
        attn_csv_put(&l, ",%d,%d,%d,%d,%d,%d", o->batch, r->n, o->dmodel,
                     attn ? o->dmodel / 8 : 0, r->model == ARCH_MHA ? 8 : attn ? 1 : 0,
                     o->threads);
        attn_csv_text(&l, attn_gemm_name());
        attn_csv_text(&l, attn ? o->be->name : "");
        attn_csv_text(&l, r->model == ARCH_CNN ? conv_name(o->conv) : "");
        attn_csv_put(&l, ",%llu", (unsigned long long)o->seed);
        attn_csv_num(&l, r->checked, r->check.item);
        attn_csv_num(&l, r->checked, r->check.rows);
        attn_csv_num(&l, r->checked, r->check.max_err);
        attn_csv_num(&l, r->checked, r->check.tol);
        attn_csv_num(&l, t, r->t.reps);
        attn_csv_num(&l, t, (double)r->t.iterations);
        attn_csv_num(&l, t, r->t.real_stats.median);
        attn_csv_num(&l, t, r->t.real_stats.min);
        attn_csv_num(&l, t, r->t.real_stats.mean);
        attn_csv_num(&l, t, r->t.real_stats.cv);
        attn_csv_put(&l, ",%.17g", r->flops);
        attn_csv_num(&l, t, r->flops / r->t.real_stats.median * 1e-9);
        attn_csv_num(&l, t && cnn && timed(cnn),
                     cnn && timed(cnn) ? r->t.real_stats.median / cnn->t.real_stats.median : 0);
        attn_csv_bytes(&l, attn_verdict_ran(r->verdict), r->peak);
        attn_csv_num(&l, r->analytic > 0, r->analytic);
        attn_csv_text(&l, r->repro);
        attn_csv_put(&l, "\n");
        if (l.at >= sizeof(l.buf) || fwrite(l.buf, 1, l.at, f) != l.at)
            break;
    }
    if (ferror(f) || fflush(f) || fsync(fileno(f)) || fclose(f)) {
        unlink(tmp);
        return attn_error(ATTN_EXIT_ERROR, "--csv %s: cannot write", o->csv);
    }
    if (rename(tmp, o->csv)) {
        unlink(tmp);
        return attn_error(ATTN_EXIT_ERROR, "--csv %s: %s", o->csv, strerror(errno));
    }
    return -1;
}

/* What a JSON entry says about its row beside the times. */
static void counters(FILE *f, const void *ctx, double seconds)
{
    const arch_row *r = ctx;
    attn_json_field_str(f, "label", attn_verdict_str(r->verdict));
    if (seconds > 0)
        attn_json_field_num(f, "GFLOPS", r->flops / seconds * 1e-9);
    attn_json_field_num(f, "flops", r->flops);
    attn_json_field_num(f, "peak_bytes", (double)r->peak);
    if (r->analytic > 0)
        attn_json_field_num(f, "analytic_bytes", r->analytic);
    if (r->checked) {
        attn_json_field_num(f, "max_err", r->check.max_err);
        attn_json_field_num(f, "tol", r->check.tol);
        attn_json_field_num(f, "rows_checked", r->check.rows);
    }
}

static int write_json(const arch_opts *o, const attn_machine *m, const char *prog,
                      const arch_row *rows, size_t nr)
{
    const attn_setup s = { .threads = o->threads, .seed = o->seed, .timer = o->timer,
                           .device = -1 };
    char tmp[4200];
    FILE *f = attn_json_begin(o->json, tmp, sizeof(tmp), m, &s, prog);
    if (!f)
        return ATTN_EXIT_ERROR;
    bool first = true;
    for (size_t i = 0; i < nr; i++) {
        int instance = 0;
        for (size_t j = 0; j < i; j++)
            instance += rows[j].model == rows[i].model;
        const attn_json_case c = {
            .name = rows[i].name, .family = (int)rows[i].model, .instance = instance,
            .threads = o->threads, .timing = &rows[i].t, .verdict = rows[i].verdict,
            .why = rows[i].why, .repro = rows[i].repro, .counters = counters, .ctx = &rows[i],
        };
        attn_json_entries(f, &first, &c);
    }
    return attn_json_finish(f, o->json, tmp);
}

static void exponents(const arch_opts *o, const arch_row *rows, size_t nr)
{
    printf("\nlog-log exponents against N (%d..%d):\n", o->seq.v[0], o->seq.v[o->seq.n - 1]);
    for (int mi = 0; mi < ARCH_COUNT; mi++) {
        double x[64], yt[64], ym[64];
        int k = 0;
        for (size_t si = 0; si < o->seq.n && k < 64; si++) {
            const arch_row *r = find_row(rows, nr, (arch_model)mi, o->seq.v[si]);
            if (r) {
                x[k] = r->n;
                yt[k] = r->t.real_stats.median;
                ym[k++] = (double)r->peak;
            }
        }
        if (k >= 2)
            printf("  %-10s time %.2f, memory %.2f\n", arch_model_name((arch_model)mi),
                   fit_slope(x, yt, k), fit_slope(x, ym, k));
    }
    const double cx = crossover(rows, nr, &o->seq, ARCH_ATTN, ARCH_RNN);
    if (o->models[ARCH_ATTN] && o->models[ARCH_RNN]) {
        if (cx > 0)
            printf("attention becomes slower than the rnn at N = %.0f\n", cx);
        else
            printf("attention stays faster than the rnn up to N = %d\n", o->seq.v[o->seq.n - 1]);
    }
}

int arch_main(int argc, char **argv, const char *prog)
{
    arch_opts o;
    int rc = arch_parse(&o, argc, argv);
    if (rc == -2) {
        arch_usage(stdout, prog);
        free(o.seq.v);
        return ATTN_EXIT_OK;
    }
    if (rc >= 0) {
        free(o.seq.v);
        return rc;
    }
    /* The outputs are written at the end: tried now, before the first model runs. */
    const char *outputs[2][2] = { { "--csv", o.csv }, { "--json", o.json } };
    for (int i = 0; i < 2; i++) {
        char why[4600];
        if (outputs[i][1] && !attn_output_writable(outputs[i][1], why, sizeof(why))) {
            free(o.seq.v);
            return attn_error(ATTN_EXIT_USAGE, "%s %s: cannot be written: %s", outputs[i][0],
                              outputs[i][1], why);
        }
    }
#ifdef _OPENMP
    omp_set_num_threads(o.threads);
#endif
    attn_machine m;
    attn_machine_capture(&m, o.threads, "");
    printf("attnbench %s arch: B=%d d_model=%d threads=%d seed=%llu; GEMM: %s; attention: %s "
           "(d_k = %d); conv: %s\n", ATTN_VERSION, o.batch, o.dmodel, o.threads,
           (unsigned long long)o.seed, attn_gemm_name(), o.be->name, o.dmodel / 8,
           o.conv == ARCH_CONV_SHIFT ? "3 shifted GEMMs" : "im2col + GEMM");
    attn_machine_print(stdout, &m);
    if (!ATTN_HAVE_OPENMP && o.threads > 1)
        printf("note: this build has no OpenMP: everything runs on one thread whatever "
               "--threads says\n");
    printf("check: each output against a double-precision forward of one batch item, at up "
           "to 32 positions (rnn: its first steps), tol %.0e of max |y|\n", ARCH_TOL);

    arch_row *rows = calloc(o.seq.n * ARCH_COUNT, sizeof(*rows));
    if (!rows) {
        free(o.seq.v);
        return attn_error(ATTN_EXIT_ERROR, "out of memory");
    }
    size_t nr = 0;
    printf("\n%-10s %6s %-8s %12s %6s %9s %9s %9s %11s %11s\n", "model", "N", "verdict", "median",
           "cv", "vs cnn", "GFLOP", "GFLOP/s", "peak mem", "analytic");
    for (size_t si = 0; si < o.seq.n; si++) {
        const size_t first = nr;
        for (int mi = 0; mi < ARCH_COUNT; mi++) {
            if (!o.models[mi])
                continue;
            arch_row *r = &rows[nr++];
            r->model = (arch_model)mi;
            r->n = o.seq.v[si];
            r->flops = arch_flops(r->model, o.batch, r->n, o.dmodel);
            r->analytic = arch_analytic_bytes(r->model, o.batch, r->n, o.dmodel);
            name_row(r, &o, prog);
            run_row(r, &o);
        }
        /* Printed once every model of this N ran: each row's "vs cnn" needs
         * the cnn's time, and the rnn runs before it. */
        for (size_t i = first; i < nr; i++)
            print_row(&rows[i], rows, nr);
    }
    if (o.seq.n >= 2 && o.timer.reps)
        exponents(&o, rows, nr);

    bool failed = false, error = false, ran = false;
    for (size_t i = 0; i < nr; i++) {
        failed |= rows[i].verdict == ATTN_FAILED;
        error |= rows[i].verdict == ATTN_ERROR;
        ran |= attn_verdict_ok(rows[i].verdict);
    }
    rc = failed ? ATTN_EXIT_FAILED : error ? ATTN_EXIT_ERROR : ran ? ATTN_EXIT_OK
                                                                  : ATTN_EXIT_NONE_RAN;
    int out;
    if (o.csv && (out = write_csv(&o, rows, nr)) >= 0 && rc == ATTN_EXIT_OK)
        rc = out;
    if (o.json && (out = write_json(&o, &m, prog, rows, nr)) >= 0 && rc == ATTN_EXIT_OK)
        rc = out;
    free(rows);
    free(o.seq.v);
    return rc;
}

/* The sweep: every shape in order (harness/shapes.c), each shape's inputs
 * and reference made once (harness/inputs.c), its cases run in this process
 * or, with --case-timeout, in a child process (harness/isolate.c); every
 * finished case is reported, appended to the CSV and to the JSON. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csv.h"
#include "inputs.h"
#include "isolate.h"
#include "json.h"
#include "memory.h"
#include "report.h"
#include "shapes.h"
#include "sweep.h"

typedef struct sweep {
    const attn_opts *o;
    const attn_machine *m;
    const char *prog;
    attn_csv csv;
    char *prior_json;           /* entries an interrupted run left in the JSON */
    attn_result *res;           /* every case of this run, in order */
    size_t n, cap;
    size_t total, done, resumed;
    double t0;
    bool stream;                /* print rows as they finish (more than one shape) */
    bool progress;              /* a progress line on a terminal */
    int rc;                     /* first output error, -1 if none */
    attn_inputs *ready;         /* the one shape's inputs, made by attn_sweep_check */
    size_t per_shape;           /* the backends each shape runs (wanted) */
    size_t cases;               /* the whole sweep's cases: shapes x per_shape */
    size_t si;                  /* the shape in hand */
    long *pos;                  /* [nbackends]: each wanted backend's place in a shape */
} sweep;

/* Where case (shape w->si, backend) stands in the whole sweep's order. */
static long case_index(const sweep *w, size_t backend)
{
    return (long)(w->si * w->per_shape) + w->pos[backend];
}

static void place(const sweep *w, attn_result *r, size_t backend)
{
    r->case_index = case_index(w, backend);
    r->cases = (long)w->cases;
}

static void format_hms(char *buf, size_t len, double s)
{
    const long t = (long)(s + 0.5);
    snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

static void progress(const sweep *w, const char *name)
{
    if (!w->progress)
        return;
    const double el = attn_now() - w->t0;
    char e[32], eta[32] = "?";
    format_hms(e, sizeof(e), el);
    if (w->done)
        format_hms(eta, sizeof(eta), el / (double)w->done * (double)(w->total - w->done));
    fprintf(stderr, "\r\033[K[%zu/%zu] %s  elapsed %s  eta %s", w->done + 1, w->total, name, e,
            eta);
}

/* A finished case: kept, appended to the CSV, the JSON rewritten, printed. */
static void emit(sweep *w, const attn_result *r, double naive)
{
    if (w->n == w->cap) {
        const size_t cap = w->cap ? 2 * w->cap : 64;
        attn_result *res = realloc(w->res, cap * sizeof(*res));
        if (!res) {
            fprintf(stderr, "attnbench: out of memory keeping results\n");
            w->rc = w->rc >= 0 ? w->rc : ATTN_EXIT_ERROR;
            return;
        }
        w->res = res;
        w->cap = cap;
    }
    w->res[w->n++] = *r;
    w->done++;
    if (r->dump_error[0]) {
        fprintf(stderr, "attnbench: %s\n", r->dump_error);
        w->rc = w->rc >= 0 ? w->rc : ATTN_EXIT_ERROR;
    }
    const attn_peak *peak = attn_machine_peak(w->m);
    /* The JSON first: a run killed in between leaves an entry without a CSV
     * row, which --resume drops and reruns, never a row without its entry. */
    int rc;
    if (w->o->json && (rc = attn_json_write(w->o->json, w->m, &w->o->setup, w->prog, w->prior_json,
                                          w->res, w->n)) >= 0)
        w->rc = w->rc >= 0 ? w->rc : rc;
    if (w->o->csv && w->csv.fd >= 0 && (rc = attn_csv_append(&w->csv, r, &w->o->setup, peak)) >= 0)
        w->rc = w->rc >= 0 ? w->rc : rc;
    if (w->stream) {
        if (w->progress)
            fputs("\r\033[K", stderr);
        attn_report_row(stdout, r, naive, peak);
        if (r->verdict != ATTN_PASSED)
            attn_report_details(stdout, r, peak);
        fflush(stdout);
    }
}

static bool csv_done(const void *ctx, const char *key)
{
    return attn_csv_has(ctx, key);
}

static bool wanted(const sweep *w, const attn_backend *be)
{
    char why[256];
    return w->o->explicit_backends || attn_backend_usable(be, why, sizeof(why)) == ATTN_OK;
}

/* Where a shape's finished cases go: emitted here, or from a child process
 * (--case-timeout) to the parent through the pipe fd. */
typedef struct sink {
    sweep *w;
    int fd;                 /* the pipe to the parent, or -1 */
} sink;

static void announce(sink *out, int backend)
{
    if (out->fd >= 0)
        attn_isolate_start(out->fd, backend);
}

static void finished(sink *out, int backend, const attn_result *r, double naive)
{
    if (out->fd < 0) {
        emit(out->w, r, naive);
        return;
    }
    attn_isolate_done(out->fd, backend, r, naive);
    out->w->done++;
}

static void skip_all(sink *out, const bool *todo, const attn_problem *p, const char *why)
{
    const sweep *w = out->w;
    attn_result r;
    for (size_t i = 0; i < w->o->nbackends; i++) {
        if (todo[i]) {
            attn_case_skip(&r, w->o->backends[i], p, &w->o->setup, w->prog, why);
            place(w, &r, i);
            finished(out, (int)i, &r, 0);
        }
    }
}

/* Whether every backend of todo refuses p: then each is SKIPPED with its
 * own reason, and the shape's inputs and double reference (minutes for a
 * long sequence) are never made. */
static bool all_refused(sink *out, const attn_problem *p, const bool *todo)
{
    const sweep *w = out->w;
    char why[4400];
    for (size_t i = 0; i < w->o->nbackends; i++)
        if (todo[i] && !attn_case_refused(w->o->backends[i], p, &w->o->setup, why, sizeof(why)))
            return false;
    attn_result r;
    for (size_t i = 0; i < w->o->nbackends; i++) {
        if (!todo[i])
            continue;
        attn_case_refused(w->o->backends[i], p, &w->o->setup, why, sizeof(why));
        attn_case_skip(&r, w->o->backends[i], p, &w->o->setup, w->prog, why);
        place(w, &r, i);
        finished(out, (int)i, &r, 0);
    }
    return true;
}

/* The inputs, the reference and every case of todo, in backend order. */
static void shape_work(sink *out, const attn_problem *p, const bool *todo, bool header)
{
    sweep *w = out->w;
    const attn_opts *o = w->o;
    const attn_setup *s = &o->setup;
    char why[4400];
    announce(out, -1);
    if (all_refused(out, p, todo))
        return;
    /* The one shape of a run with --inputs was checked and made already. */
    if (!w->ready && !attn_memory_fits(p, s, 0, false, why, sizeof(why))) {
        skip_all(out, todo, p, why);
        return;
    }
    attn_inputs made, *in = w->ready;
    if (!in) {
        if (attn_inputs_make(&made, p, s, why, sizeof(why)) != ATTN_OK) {
            skip_all(out, todo, p, why);
            return;
        }
        in = &made;
    }
    if (header && w->stream) {
        if (w->progress)
            fputs("\r\033[K", stderr);
        attn_report_shape(stdout, p, &in->ref, in->ref_seconds);
        attn_report_row_header(stdout);
    } else if (header) {
        attn_report_reference(stdout, &in->ref, in->ref_seconds);
    }
    fflush(stdout);

    const attn_tensors t = attn_inputs_tensors(in);
    double naive = 0;
    for (size_t i = 0; i < o->nbackends; i++) {
        if (!todo[i])
            continue;
        attn_result r;
        progress(w, o->backends[i]->name);
        announce(out, (int)i);
        attn_case_run(&r, o->backends[i], p, &t, &in->ref, s, w->prog);
        place(w, &r, i);
        if (!strcmp(r.be->name, "naive") && attn_verdict_ok(r.verdict) && r.timing.reps)
            naive = r.timing.real_stats.median;
        finished(out, (int)i, &r, naive);
    }
    if (in == &made)
        attn_inputs_free(&made);
}

/* --case-timeout: the sweep's side of the isolation protocol. */
typedef struct isolated {
    sweep *w;
    const attn_problem *p;
} isolated;

static void iso_work(void *ctx, int fd, const bool *todo, bool header)
{
    isolated *x = ctx;
    sink out = { .w = x->w, .fd = fd };
    shape_work(&out, x->p, todo, header);
}

static void iso_done(void *ctx, size_t backend, const attn_result *r, double naive)
{
    (void)backend;
    emit(((isolated *)ctx)->w, r, naive);
}

static void iso_lost(void *ctx, size_t backend, attn_verdict v, const char *why)
{
    isolated *x = ctx;
    attn_result r;
    attn_case_skip(&r, x->w->o->backends[backend], x->p, &x->w->o->setup, x->w->prog, why);
    place(x->w, &r, backend);
    r.verdict = v;
    emit(x->w, &r, 0);
}

static void iso_no_reference(void *ctx, const char *why)
{
    isolated *x = ctx;
    if (x->w->stream) {
        char shape[512];
        attn_problem_describe(x->p, shape, sizeof(shape));
        printf("\n== %s\nreference: none (%s)\n", shape, why);
        attn_report_row_header(stdout);
    }
}

static const attn_isolate_ops iso_ops = {
    .work = iso_work, .done = iso_done, .lost = iso_lost, .no_reference = iso_no_reference,
};

static void run_shape(sweep *w, const attn_problem *p)
{
    const attn_opts *o = w->o;
    const attn_setup *s = &o->setup;
    bool *todo = calloc(o->nbackends, sizeof(bool));
    size_t ntodo = 0;
    if (!todo) {
        fprintf(stderr, "attnbench: out of memory\n");
        w->rc = w->rc >= 0 ? w->rc : ATTN_EXIT_ERROR;
        return;
    }
    for (size_t i = 0; i < o->nbackends; i++) {
        char key[512];
        attn_case_key(key, sizeof(key), o->backends[i], p, s);
        if (!wanted(w, o->backends[i]))
            continue;
        if (o->shards && case_index(w, i) % o->shards != o->shard)
            continue;
        if (o->resume && attn_csv_has(&w->csv, key)) {
            w->resumed++;
            w->done++;
            continue;
        }
        todo[i] = true;
        ntodo++;
    }
    if (ntodo && o->case_timeout > 0) {
        isolated x = { .w = w, .p = p };
        attn_isolate_run(o->case_timeout, todo, o->nbackends, &iso_ops, &x);
    } else if (ntodo) {
        sink out = { .w = w, .fd = -1 };
        shape_work(&out, p, todo, true);
    }
    free(todo);
}

static int exit_code(const attn_result *res, size_t n, size_t resumed)
{
    bool failed = false, error = false, ran = resumed > 0;
    for (size_t i = 0; i < n; i++) {
        failed |= res[i].verdict == ATTN_FAILED;
        error |= res[i].verdict == ATTN_ERROR || res[i].verdict == ATTN_TIMEOUT;
        ran |= attn_verdict_ok(res[i].verdict);
    }
    return failed ? ATTN_EXIT_FAILED : error ? ATTN_EXIT_ERROR : ran ? ATTN_EXIT_OK
                                                                      : ATTN_EXIT_NONE_RAN;
}

int attn_sweep_check(const attn_opts *o, attn_inputs *ready)
{
    const attn_setup *s = &o->setup;
    memset(ready, 0, sizeof(*ready));
    const size_t shapes = attn_shapes_count(o);
    const char *what = s->inputs ? "--inputs" : s->dump_output ? "--dump-output"
                     : s->dump_weights ? "--dump-weights" : o->dump_inputs ? "--dump-inputs"
                     : o->peer ? "--peer" : NULL;
    if (what && shapes != 1)
        return attn_error(ATTN_EXIT_USAGE, "%s needs one case, but the size options make %zu "
                          "shapes", what, shapes);
    if ((s->dump_output || s->dump_weights) && (!o->explicit_backends || o->nbackends != 1))
        return attn_error(ATTN_EXIT_USAGE, "%s needs one backend: name it with --backend",
                          s->dump_output ? "--dump-output" : "--dump-weights");
    if (shapes != 1)
        return -1;
    /* One case that cannot fit is refused before any work; in a sweep such
     * a shape becomes SKIPPED rows. */
    attn_problem p;
    attn_shape_buf kv;
    if (!attn_shape_buf_alloc(&kv, o))
        return attn_error(ATTN_EXIT_TOO_LARGE, "out of memory");
    attn_shapes_problem(o, 0, &p, &kv);
    char why[4400], shape[512];
    int rc = -1;
    attn_problem_describe(&p, shape, sizeof(shape));
    if (s->dump_weights) {
        const attn_backend *be = o->backends[0];
        const double bytes = 4.0 * p.batch * p.heads * (double)p.seq_q * p.seq_kv;
        if (!attn_backend_has_weights(be))
            rc = attn_error(ATTN_EXIT_USAGE, "--dump-weights: %s cannot give its attention "
                            "weights (naive, local and sparse can)", be->name);
        else if (bytes > (double)(1u << 30))
            rc = attn_error(ATTN_EXIT_TOO_LARGE, "--dump-weights: P [B,H,Nq,Nk] = [%d,%d,%d,%d] "
                            "would take %.2f GiB, above the 1 GiB limit", p.batch, p.heads,
                            p.seq_q, p.seq_kv, bytes / (1u << 30));
    }
    if (rc < 0 && !attn_memory_fits(&p, s, 0, false, why, sizeof(why)))
        rc = attn_error(ATTN_EXIT_TOO_LARGE, "shape %s %s", shape, why);
    if (rc < 0 && s->inputs) {
        const attn_status st = attn_inputs_make(ready, &p, s, why, sizeof(why));
        if (st != ATTN_OK)
            rc = attn_error(st == ATTN_EINVAL ? ATTN_EXIT_USAGE : ATTN_EXIT_TOO_LARGE,
                            "--inputs: %s", why);
    }
    attn_shape_buf_free(&kv);
    return rc;
}

/* --bw-probe's array: 4x the largest cache, at least 64 MiB, at most an
 * eighth of MemAvailable. */
static size_t probe_bytes(const attn_machine *m)
{
    uint64_t llc = 0;
    for (int i = 0; i < m->ncaches; i++)
        llc = m->caches[i].size > llc ? m->caches[i].size : llc;
    uint64_t b = 4 * llc > ((uint64_t)64 << 20) ? 4 * llc : (uint64_t)64 << 20;
    const uint64_t avail = attn_mem_available();
    while (avail && b > ((uint64_t)8 << 20) && b > avail / 8)
        b /= 2;
    return (size_t)b;
}

int attn_sweep_run(const attn_opts *o, const attn_machine *m, const char *prog,
                   attn_inputs *ready)
{
    sweep w = { .o = o, .m = m, .prog = prog, .csv = { .fd = -1 }, .rc = -1,
                .ready = ready && ready->made ? ready : NULL };
    const size_t shapes = attn_shapes_count(o);
    w.pos = calloc(o->nbackends ? o->nbackends : 1, sizeof(long));
    if (!w.pos) {
        fprintf(stderr, "attnbench: out of memory\n");
        return ATTN_EXIT_ERROR;
    }
    for (size_t i = 0; i < o->nbackends; i++)
        w.pos[i] = wanted(&w, o->backends[i]) ? (long)w.per_shape++ : -1;
    w.cases = shapes * w.per_shape;
    w.total = w.cases;
    /* --shard I/N: the indices I, I + N, ... */
    if (o->shards)
        w.total = w.cases > (size_t)o->shard ? (w.cases - (size_t)o->shard + (size_t)o->shards - 1) /
                                                   (size_t)o->shards
                                             : 0;
    w.stream = shapes > 1;
    w.progress = w.stream && isatty(STDERR_FILENO);
    attn_shape_buf kv;
    if (!attn_shape_buf_alloc(&kv, o)) {
        fprintf(stderr, "attnbench: out of memory\n");
        free(w.pos);
        return ATTN_EXIT_ERROR;
    }
    if (o->csv) {
        int rc = attn_csv_open(&w.csv, o->csv, o->resume);
        if (rc >= 0) {
            attn_shape_buf_free(&kv);
            free(w.pos);
            return rc;
        }
        if (o->resume && o->json)
            w.prior_json = attn_json_prior(o->json, (unsigned long long)o->setup.seed, csv_done,
                                           &w.csv);
        if (w.csv.torn_bytes)
            fprintf(stderr, "attnbench: --csv %s: cut off a torn last row (%zu bytes) left by an "
                            "interrupted run\n", o->csv, w.csv.torn_bytes);
    }

    attn_report_header(stdout, m, &o->setup, shapes, w.total);
    if (o->setup.bw_probe && o->setup.timer.reps > 0) {
        const size_t bytes = probe_bytes(m);
        if (!attn_bw_probe_init(bytes, o->setup.threads)) {
            fprintf(stderr, "attnbench: --bw-probe: cannot allocate its %zu MiB array\n",
                    bytes >> 20);
            attn_csv_close(&w.csv);
            free(w.prior_json);
            attn_shape_buf_free(&kv);
            free(w.pos);
            return ATTN_EXIT_ERROR;
        }
        printf("bandwidth probe: a read-only stream over %zu MiB on %d threads, before and after "
               "each case's timed runs; the roofline takes the faster\n", bytes >> 20,
               o->setup.threads);
    }
    if (o->setup.fma_probe && o->setup.timer.reps > 0) {
        attn_fma_probe_init();
        printf("FMA probe: the peak's chains for 3 passes of about 20 ms on %d threads, before "
               "and after each case's timed runs; %%peak and the roofline take the faster\n",
               o->setup.threads);
    }
    if (o->shards)
        printf("shard %d of %d (--shard %d/%d): %zu of the sweep's %zu cases, those whose index "
               "is %d mod %d\n", o->shard, o->shards, o->shard, o->shards, w.total, w.cases,
               o->shard, o->shards);
    w.t0 = attn_now();
    for (size_t si = 0; si < shapes; si++) {
        attn_problem p;
        attn_shapes_problem(o, si, &p, &kv);
        w.si = si;
        if (!w.stream) {
            char shape[512];
            attn_problem_describe(&p, shape, sizeof(shape));
            printf("case: %s%s scale=%.6g\n", shape, attn_reduced(&p) ? "" : " fp32", p.scale);
        }
        run_shape(&w, &p);
    }
    if (w.progress)
        fputs("\r\033[K", stderr);

    /* The comparison comes last, where a terminal leaves it in view: one
     * case's table after every detail, a sweep's count after its rows. */
    const attn_peak *peak = attn_machine_peak(m);
    if (!w.stream && w.n)
        attn_report_results_details(stdout, w.res, w.n, peak);
    bool first = true;
    for (size_t i = 0; i < o->nbackends && !o->explicit_backends; i++) {
        char why[256] = "";
        if (attn_backend_usable(o->backends[i], why, sizeof(why)) == ATTN_OK)
            continue;
        printf("%snot run: %s (%s)\n", first ? "\n" : "", o->backends[i]->name, why);
        first = false;
    }
    if (!w.stream && w.resumed)
        printf("\n%zu case%s already in %s (--resume): not run again\n", w.resumed,
               w.resumed == 1 ? "" : "s", o->csv);
    if (!w.stream && w.n)
        attn_report_results_table(stdout, w.res, w.n, peak);
    else if (w.stream)
        attn_report_summary(stdout, w.res, w.n, w.resumed, o->csv);
    attn_report_dtypes(stdout, w.res, w.n);
    int rc = exit_code(w.res, w.n, w.resumed);
    if (w.rc >= 0 && rc == ATTN_EXIT_OK)
        rc = w.rc;
    attn_csv_close(&w.csv);
    free(w.prior_json);
    free(w.res);
    free(w.pos);
    attn_shape_buf_free(&kv);
    return rc;
}

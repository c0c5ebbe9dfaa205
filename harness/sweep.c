#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "csv.h"
#include "fill.h"
#include "json.h"
#include "memory.h"
#include "report.h"
#include "sweep.h"

static size_t count_or_1(const attn_list *l)
{
    return l->n ? l->n : 1;
}

size_t attn_sweep_shapes(const attn_opts *o)
{
    const size_t causal = (o->causal & ATTN_CAUSAL_NO ? 1 : 0) + (o->causal & ATTN_CAUSAL_YES ? 1 : 0);
    return o->batch.n * o->heads.n * o->seq.n * count_or_1(&o->seq_kv) * o->dk.n *
           count_or_1(&o->dv) * causal;
}

/* Mixed-radix decoding, the innermost (causal) varying fastest. */
void attn_sweep_problem(const attn_opts *o, size_t idx, attn_problem *p, int *kv)
{
    const bool both = (o->causal & ATTN_CAUSAL_NO) && (o->causal & ATTN_CAUSAL_YES);
    bool causal = !(o->causal & ATTN_CAUSAL_NO);
    if (both) {
        causal = idx % 2;
        idx /= 2;
    }
    size_t i;
    i = idx % count_or_1(&o->dv);  idx /= count_or_1(&o->dv);      const size_t dv = i;
    i = idx % o->dk.n;             idx /= o->dk.n;                 const size_t dk = i;
    i = idx % count_or_1(&o->seq_kv); idx /= count_or_1(&o->seq_kv); const size_t skv = i;
    i = idx % o->seq.n;            idx /= o->seq.n;                const size_t sq = i;
    i = idx % o->heads.n;          idx /= o->heads.n;              const size_t h = i;
    const size_t b = idx % o->batch.n;

    memset(p, 0, sizeof(*p));
    p->batch = o->batch.v[b];
    p->heads = o->heads.v[h];
    p->seq_q = o->seq.v[sq];
    p->seq_kv = o->seq_kv.n ? o->seq_kv.v[skv] : p->seq_q;
    p->d_k = o->dk.v[dk];
    p->d_v = o->dv.n ? o->dv.v[dv] : p->d_k;
    p->scale = o->scale_set ? o->scale : (float)(1.0 / sqrt((double)p->d_k));
    p->causal = causal;
    p->var = o->var;
    p->var.seed = o->setup.seed;
    if (o->kv_len) {
        for (int x = 0; x < p->batch; x++)
            kv[x] = o->kv_len[o->nkv == 1 ? 0 : x];
        p->kv_len = kv;
    }
}

bool attn_shape_fits(const attn_problem *p, const attn_setup *s, char *why, size_t len)
{
    attn_sizes sz;
    if (!attn_problem_sizes(p, &sz)) {
        snprintf(why, len, "its tensors overflow size_t (more than 2^64 bytes); choose smaller sizes");
        return false;
    }
    const double ref = (double)attn_ref_bytes(p, s->check_rows, s->threads);
    const double need = (double)sz.inputs + 2.0 * (double)sz.output + ref;
    const uint64_t avail = attn_mem_available();
    const uint64_t limit = s->max_mem && (!avail || s->max_mem < avail) ? s->max_mem : avail;
    if (limit && need > (double)limit) {
        char n[32], in[32], out[32], r[32], l[32];
        attn_format_bytes(n, sizeof(n), need);
        attn_format_bytes(in, sizeof(in), (double)sz.inputs);
        attn_format_bytes(out, sizeof(out), 2.0 * (double)sz.output);
        attn_format_bytes(r, sizeof(r), ref);
        attn_format_bytes(l, sizeof(l), (double)limit);
        snprintf(why, len, "needs %s before any backend workspace (inputs %s, outputs %s, "
                           "reference %s), but %s %s", n, in, out, r, l,
                 limit == avail ? "is available" : "is the --max-mem limit");
        return false;
    }
    return true;
}

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
} sweep;

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
    const double peak = w->m->peak_known ? w->m->peak.fma_t : 0.0;
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
            attn_report_details(stdout, r);
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

/* Where a shape's finished cases go: emitted here, or, in a child process
 * (--case-timeout), sent to the parent through a pipe, each case announced
 * before it starts so that the parent knows what to blame for a timeout. */
enum { MSG_START, MSG_RESULT };

typedef struct msg {
    int kind;
    int backend;            /* index in o->backends; -1: the inputs and reference */
    double naive;           /* MSG_RESULT: naive's median so far, for speedups */
    attn_result r;          /* MSG_RESULT; its pointers are valid in both processes */
} msg;

typedef struct sink {
    sweep *w;
    int fd;                 /* the pipe to the parent, or -1 */
} sink;

static bool write_full(int fd, const void *buf, size_t n)
{
    const char *b = buf;
    while (n) {
        ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        b += k;
        n -= (size_t)k;
    }
    return true;
}

static void announce(sink *out, int backend)
{
    if (out->fd < 0)
        return;
    msg m = { .kind = MSG_START, .backend = backend };
    /* A parent that is gone cannot record anything more: stop. */
    if (!write_full(out->fd, &m, offsetof(msg, r)))
        _exit(1);
}

static void finished(sink *out, int backend, const attn_result *r, double naive)
{
    if (out->fd < 0) {
        emit(out->w, r, naive);
        return;
    }
    msg m = { .kind = MSG_RESULT, .backend = backend, .naive = naive, .r = *r };
    if (!write_full(out->fd, &m, sizeof(m)))
        _exit(1);
    out->w->done++;
}

static void skip_all(sink *out, const bool *todo, const attn_problem *p, const char *why)
{
    const sweep *w = out->w;
    attn_result r;
    for (size_t i = 0; i < w->o->nbackends; i++) {
        if (todo[i]) {
            attn_case_skip(&r, w->o->backends[i], p, &w->o->setup, w->prog, why);
            finished(out, (int)i, &r, 0);
        }
    }
}

/* The inputs, the reference and every case of todo, in backend order. */
static void shape_work(sink *out, const attn_problem *p, const bool *todo, bool header)
{
    sweep *w = out->w;
    const attn_opts *o = w->o;
    const attn_setup *s = &o->setup;
    char why[384];
    announce(out, -1);
    if (!attn_shape_fits(p, s, why, sizeof(why))) {
        skip_all(out, todo, p, why);
        return;
    }
    attn_sizes sz;
    attn_problem_sizes(p, &sz);
    float *q = attn_host_alloc(sz.q * sizeof(float));
    float *k = attn_host_alloc(sz.k * sizeof(float));
    float *v = attn_host_alloc(sz.v * sizeof(float));
    attn_ref ref = { 0 };
    if (!q || !k || !v) {
        skip_all(out, todo, p, "out of memory for the inputs");
        goto done;
    }
    if (o->in_q) {   /* --inputs: loaded and checked against this (only) shape in main */
        memcpy(q, o->in_q, sz.q * sizeof(float));
        memcpy(k, o->in_k, sz.k * sizeof(float));
        memcpy(v, o->in_v, sz.v * sizeof(float));
    } else {
        attn_fill(q, sz.q, s->fill, s->seed, ATTN_TENSOR_Q, s->threads);
        attn_fill(k, sz.k, s->fill, s->seed, ATTN_TENSOR_K, s->threads);
        attn_fill(v, sz.v, s->fill, s->seed, ATTN_TENSOR_V, s->threads);
    }
    const attn_tensors in = { .q = q, .k = k, .v = v };
    const double t0 = attn_now();
    if (attn_ref_compute(&ref, p, &in, s->check_rows, s->seed, s->threads) != ATTN_OK) {
        skip_all(out, todo, p, "out of memory for the reference");
        goto done;
    }
    if (header && w->stream) {
        if (w->progress)
            fputs("\r\033[K", stderr);
        attn_report_shape(stdout, p, &ref, attn_now() - t0);
        attn_report_row_header(stdout);
    } else if (header) {
        attn_report_reference(stdout, &ref, attn_now() - t0);
    }
    fflush(stdout);

    double naive = 0;
    for (size_t i = 0; i < o->nbackends; i++) {
        if (!todo[i])
            continue;
        attn_result r;
        progress(w, o->backends[i]->name);
        announce(out, (int)i);
        attn_case_run(&r, o->backends[i], p, &in, &ref, s, w->prog);
        if (!strcmp(r.be->name, "naive") && r.verdict == ATTN_PASSED && r.timing.reps)
            naive = r.timing.real_stats.median;
        finished(out, (int)i, &r, naive);
    }
done:
    attn_ref_free(&ref);
    attn_host_free(q);
    attn_host_free(k);
    attn_host_free(v);
}

/* A case that never finished: TIMEOUT or ERROR, recorded by the parent. */
static void lost(sweep *w, const attn_problem *p, size_t i, attn_verdict v, const char *why)
{
    attn_result r;
    attn_case_skip(&r, w->o->backends[i], p, &w->o->setup, w->prog, why);
    r.verdict = v;
    emit(w, &r, 0);
}

static void describe_end(char *buf, size_t len, int status)
{
    if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}

/* --case-timeout: one child process at a time runs the shape's remaining
 * cases. One that outlasts the limit is killed and recorded TIMEOUT, one that
 * dies is recorded ERROR with how it died, and a fresh child goes on with the
 * next case (computing the inputs and the reference again). The CSV and JSON
 * are only ever written here, so a killed case cannot tear them. */
static void run_isolated(sweep *w, const attn_problem *p, bool *todo)
{
    const attn_opts *o = w->o;
    bool header = true;
    for (;;) {
        size_t left = 0;
        for (size_t i = 0; i < o->nbackends; i++)
            left += todo[i];
        if (!left)
            return;
        int fds[2] = { -1, -1 };
        fflush(stdout);
        fflush(stderr);
        const pid_t pid = pipe(fds) ? -1 : fork();
        if (pid < 0) {
            char why[160];
            snprintf(why, sizeof(why), "cannot start the process for the case: %s", strerror(errno));
            for (int f = 0; f < 2; f++)
                if (fds[f] >= 0)
                    close(fds[f]);
            for (size_t i = 0; i < o->nbackends; i++)
                if (todo[i])
                    lost(w, p, i, ATTN_ERROR, why);
            return;
        }
        if (pid == 0) {
            close(fds[0]);
            sink out = { .w = w, .fd = fds[1] };
            shape_work(&out, p, todo, header);
            fflush(stdout);
            fflush(stderr);
            _exit(0);
        }
        close(fds[1]);
        header = false;
        int current = -1;
        bool timed_out = false;
        double deadline = attn_now() + o->case_timeout;
        msg m;
        size_t have = 0, want = offsetof(msg, r);
        for (;;) {
            const double wait = deadline - attn_now();
            struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
            const int ready = wait > 0 ? poll(&pfd, 1, (int)(wait * 1000.0) + 1) : 0;
            if (ready < 0 && errno == EINTR)
                continue;
            if (ready == 0) {
                timed_out = true;
                kill(pid, SIGKILL);
                break;
            }
            const ssize_t k = read(fds[0], (char *)&m + have, want - have);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                break;   /* the child is done, or died */
            have += (size_t)k;
            if (have < want)
                continue;
            if (m.kind == MSG_RESULT && want == offsetof(msg, r)) {
                want = sizeof(m);
                continue;
            }
            if (m.kind == MSG_START) {
                current = m.backend;
                deadline = attn_now() + o->case_timeout;
            } else {
                emit(w, &m.r, m.naive);
                todo[m.backend] = false;
                current = -2;   /* between cases: the next one is to blame */
                deadline = attn_now() + o->case_timeout;
            }
            have = 0;
            want = offsetof(msg, r);
        }
        close(fds[0]);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        char why[384], how[128];
        describe_end(how, sizeof(how), status);
        if (current == -2 && (timed_out || !WIFEXITED(status) || WEXITSTATUS(status))) {
            /* Between two cases: the next one is the one that did not finish. */
            for (size_t i = 0; i < o->nbackends && current < 0; i++)
                if (todo[i])
                    current = (int)i;
        }
        if (current == -1) {
            /* The inputs or the reference: no case of the shape can run. */
            if (timed_out)
                snprintf(why, sizeof(why), "the inputs and the reference took longer than "
                                           "--case-timeout %g s", o->case_timeout);
            else
                snprintf(why, sizeof(why), "the process computing the inputs and the reference %s",
                         how);
            if (w->stream) {
                char shape[512];
                attn_problem_describe(p, shape, sizeof(shape));
                printf("\n== %s\nreference: none (%s)\n", shape, why);
                attn_report_row_header(stdout);
            }
            for (size_t i = 0; i < o->nbackends; i++) {
                if (todo[i]) {
                    lost(w, p, i, timed_out ? ATTN_TIMEOUT : ATTN_ERROR, why);
                    todo[i] = false;
                }
            }
        } else if (current >= 0) {
            if (timed_out)
                snprintf(why, sizeof(why), "no result after --case-timeout %g s; its process "
                                           "was killed", o->case_timeout);
            else
                snprintf(why, sizeof(why), "the case's process %s before it finished", how);
            lost(w, p, (size_t)current, timed_out ? ATTN_TIMEOUT : ATTN_ERROR, why);
            todo[current] = false;
        }
    }
}

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
        attn_case_key(key, sizeof(key), o->backends[i]->name, p, s);
        if (!wanted(w, o->backends[i]))
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
        run_isolated(w, p, todo);
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
        ran |= res[i].verdict == ATTN_PASSED;
    }
    return failed ? ATTN_EXIT_FAILED : error ? ATTN_EXIT_ERROR : ran ? ATTN_EXIT_OK
                                                                      : ATTN_EXIT_NONE_RAN;
}

int attn_sweep_run(const attn_opts *o, const attn_machine *m, const char *prog)
{
    sweep w = { .o = o, .m = m, .prog = prog, .csv = { .fd = -1 }, .rc = -1 };
    const size_t shapes = attn_sweep_shapes(o);
    size_t per_shape = 0;
    for (size_t i = 0; i < o->nbackends; i++)
        per_shape += wanted(&w, o->backends[i]);
    w.total = shapes * per_shape;
    w.stream = shapes > 1;
    w.progress = w.stream && isatty(STDERR_FILENO);
    int maxb = 1;
    for (size_t i = 0; i < o->batch.n; i++)
        maxb = o->batch.v[i] > maxb ? o->batch.v[i] : maxb;
    int *kv = calloc((size_t)maxb, sizeof(int));
    if (!kv) {
        fprintf(stderr, "attnbench: out of memory\n");
        return ATTN_EXIT_ERROR;
    }
    if (o->csv) {
        int rc = attn_csv_open(&w.csv, o->csv, o->resume);
        if (rc >= 0) {
            free(kv);
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
    w.t0 = attn_now();
    for (size_t si = 0; si < shapes; si++) {
        attn_problem p;
        attn_sweep_problem(o, si, &p, kv);
        if (!w.stream) {
            char shape[512];
            attn_problem_describe(&p, shape, sizeof(shape));
            printf("case: %s fp32 scale=%.6g\n", shape, p.scale);
        }
        run_shape(&w, &p);
    }
    if (w.progress)
        fputs("\r\033[K", stderr);

    const double peak = m->peak_known ? m->peak.fma_t : 0.0;
    if (!w.stream)
        attn_report_results(stdout, w.res, w.n, peak);
    else
        attn_report_summary(stdout, w.res, w.n, w.resumed, o->csv);
    for (size_t i = 0; i < o->nbackends && !o->explicit_backends; i++) {
        char why[256] = "";
        if (attn_backend_usable(o->backends[i], why, sizeof(why)) != ATTN_OK)
            printf("\nnot run: %s (%s)\n", o->backends[i]->name, why);
    }
    int rc = exit_code(w.res, w.n, w.resumed);
    if (w.rc >= 0 && rc == ATTN_EXIT_OK)
        rc = w.rc;
    attn_csv_close(&w.csv);
    free(w.prior_json);
    free(w.res);
    free(kv);
    return rc;
}

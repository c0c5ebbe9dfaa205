#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "json.h"

static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* JSON has no NaN or Inf. */
static void put_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.17g", v);
    else
        fputs("null", f);
}

void attn_json_field_str(FILE *f, const char *key, const char *v)
{
    fprintf(f, ",\n      \"%s\": ", key);
    put_str(f, v);
}

void attn_json_field_num(FILE *f, const char *key, double v)
{
    fprintf(f, ",\n      \"%s\": ", key);
    put_num(f, v);
}



static void context(FILE *f, const attn_machine *m, const attn_setup *s, const char *exe)
{
    fputs("  \"context\": {\n    \"date\": ", f);
    put_str(f, m->date);
    fputs(",\n    \"host_name\": ", f);
    put_str(f, m->host);
    fputs(",\n    \"executable\": ", f);
    put_str(f, exe);
    fprintf(f, ",\n    \"num_cpus\": %d,\n    \"mhz_per_cpu\": %d,\n", m->cpus_online, (int)m->mhz);
    fprintf(f, "    \"cpu_scaling_enabled\": %s,\n",
            strcmp(m->governor, "unknown") && strcmp(m->governor, "performance") ? "true" : "false");
    fputs("    \"caches\": [", f);
    for (int i = 0; i < m->ncaches; i++) {
        fprintf(f, "%s\n      {\"type\": ", i ? "," : "");
        put_str(f, m->caches[i].type);
        fprintf(f, ", \"level\": %d, \"size\": %llu, \"num_sharing\": %d}", m->caches[i].level,
                (unsigned long long)m->caches[i].size, m->caches[i].sharing);
    }
    fprintf(f, "\n    ],\n    \"load_avg\": [%g, %g, %g],\n", m->load[0], m->load[1], m->load[2]);
    fprintf(f, "    \"library_build_type\": \"%s\",\n",
            strcmp(attn_build_type(), "debug") ? "release" : "debug");
    fputs("    \"json_schema_version\": 3,\n    \"attnbench_version\": ", f);
    put_str(f, ATTN_VERSION);
    fputs(",\n    \"git_revision\": ", f);
    put_str(f, attn_git_revision());
    fputs(",\n    \"compiler\": ", f);
    put_str(f, attn_build_compiler());
    fputs(",\n    \"build_options\": ", f);
    put_str(f, attn_build_options());
    fputs(",\n    \"cpu_model\": ", f);
    put_str(f, m->cpu);
    fputs(",\n    \"os\": ", f);
    put_str(f, m->os);
    fputs(",\n    \"governor\": ", f);
    put_str(f, m->governor);
    fputs(",\n    \"backends\": ", f);
    put_str(f, m->backends);
    fputs(",\n    \"pinned\": ", f);
    put_str(f, m->pinned);
    fputs(",\n    \"huge_pages\": ", f);
    put_str(f, m->huge_pages);
    fprintf(f, ",\n    \"threads\": %d,\n    \"seed\": %llu,\n    \"fill\": \"%s\",\n", m->threads,
            (unsigned long long)s->seed, attn_setup_fill_name(s));
    fprintf(f, "    \"min_time_s\": %g,\n    \"max_time_s\": %g,\n    \"repetitions\": %d,\n",
            s->timer.min_time, s->timer.max_time, s->timer.reps);
    fprintf(f, "    \"clock_resolution_ns\": %g,\n    \"clock_step_ns\": %g", m->clock_res * 1e9,
            m->clock_step * 1e9);
    if (m->peak_known)
        fprintf(f, ",\n    \"peak_fma_gflops_1t\": %g,\n    \"peak_fma_gflops\": %g,\n"
                   "    \"peak_triad_gbs\": %g,\n    \"peak_read_gbs\": %g,\n"
                   "    \"peak_isa\": \"%s\",\n"
                   "    \"peak_bf16_gflops_1t\": %g,\n    \"peak_bf16_gflops\": %g",
                m->peak.fma_1, m->peak.fma_t, m->peak.triad, m->peak.read, m->peak.isa,
                m->peak.dot_1, m->peak.dot_t);
    fputs("\n  },\n", f);
}

/* What an entry says about its case beside the times. */
typedef struct case_ctx {
    const attn_result *r;
    const attn_machine *m;
} case_ctx;

static void counters(FILE *f, const void *ctx, double seconds)
{
    const attn_result *r = ((const case_ctx *)ctx)->r;
    const attn_machine *m = ((const case_ctx *)ctx)->m;
    attn_json_field_str(f, "label", attn_verdict_str(r->verdict));
    if (seconds > 0) {
        attn_json_field_num(f, "GFLOPS", r->flops / seconds * 1e-9);
        attn_json_field_num(f, "GFLOPS_dense", r->flops_dense / seconds * 1e-9);
        attn_json_field_num(f, "GBps", r->bytes / seconds * 1e-9);
        attn_json_field_num(f, "tokens_per_second", (double)attn_q_tokens(&r->p) / seconds);
        const attn_peak *pk = m->peak_known ? attn_case_peak(r, &m->peak) : NULL;
        if (pk) {
            attn_json_field_num(f, "pct_peak", 100.0 * r->flops / seconds * 1e-9 /
                                               attn_case_peak_gflops(r, pk));
            attn_json_field_num(f, "pct_bw", 100.0 * r->bytes / seconds * 1e-9 / pk->triad);
            const attn_roofline roof = attn_case_roofline(r, pk);
            attn_json_field_num(f, "roofline_s", roof.s);
            attn_json_field_num(f, "pct_roofline", 100.0 * roof.s / seconds);
            attn_json_field_str(f, "bound", roof.memory_bound ? "memory" : "compute");
        }
        if (attn_case_probe_gbs(r) > 0) {
            attn_json_field_num(f, "probe_GBps_before", r->probe_before);
            attn_json_field_num(f, "probe_GBps_after", r->probe_after);
        }
        if (attn_case_fprobe(r) > 0) {
            attn_json_field_num(f, "probe_GFLOPS_before", r->fprobe_before);
            attn_json_field_num(f, "probe_GFLOPS_after", r->fprobe_after);
        }
    }
    attn_json_field_num(f, "flops", r->flops);
    attn_json_field_num(f, "bytes", r->bytes);
    attn_json_field_num(f, "tokens", (double)attn_q_tokens(&r->p));
    if (r->p.lens)
        attn_json_field_str(f, "lens", r->p.lens);
    if (r->p.ragged && r->p.ragged->page)
        attn_json_field_num(f, "page", r->p.ragged->page);
    if (r->p.model)
        attn_json_field_str(f, "model", r->p.model);
    if (!r->ws_unknown)
        attn_json_field_num(f, "workspace_bytes", (double)r->ws_peak);
    if (r->rss_known)
        attn_json_field_num(f, "rss_peak_bytes", (double)r->rss_peak);
    if (r->device_known)
        attn_json_field_num(f, "device_bytes", (double)r->device_bytes);
    if (r->device[0] && (attn_verdict_ran(r->verdict))) {
        attn_json_field_num(f, "upload_us", r->upload_s * 1e6);
        attn_json_field_num(f, "download_us", r->download_s * 1e6);
    }
    attn_json_field_num(f, "score_matrix_bytes", (double)r->score_bytes);
    attn_json_field_num(f, "kv_bytes", (double)r->kv_bytes);
    if (r->ranks > 0 && attn_verdict_ran(r->verdict)) {
        attn_json_field_num(f, "ranks", r->ranks);
        attn_json_field_num(f, "rank_compute_s", r->rank_max.compute_s);
        attn_json_field_num(f, "rank_comm_s", r->rank_max.comm_s);
        attn_json_field_num(f, "rank_sent_bytes", (double)r->rank_max.sent_bytes);
        attn_json_field_num(f, "rank_workspace_bytes", (double)r->rank_max.workspace);
    }
    if (r->case_index >= 0) {
        attn_json_field_num(f, "case_index", (double)r->case_index);
        attn_json_field_num(f, "cases", (double)r->cases);
    }
    attn_json_field_str(f, "dtype", attn_dtype_name(r->p.dtype));
    attn_json_field_str(f, "kv_dtype", attn_dtype_name(r->p.kv_dtype));
    attn_json_field_str(f, "pass", attn_pass_name(r->p.pass));
    if (r->approx_known) {
        attn_json_field_num(f, "approx_max_abs", r->approx_max_abs);
        attn_json_field_num(f, "approx_nmse", r->approx_nmse);
    }
    if (r->quant_known) {
        attn_json_field_num(f, "quant_max_abs", r->quant_max_abs);
        attn_json_field_num(f, "quant_nmse", r->quant_nmse);
    }
    if (r->checked) {
        attn_json_field_num(f, "max_abs_err", r->check.max_abs);
        attn_json_field_num(f, "nmse", r->check.nmse);
        attn_json_field_num(f, "rows_checked", (double)r->ref_rows);
        attn_json_field_num(f, "tol", r->check.tol);
        attn_json_field_str(f, "tol_class", r->check.tolerance->name);
        static const char *const grad[3][3] = { { "dq_max_abs_err", "dq_nmse", "dq_tol" },
                                                { "dk_max_abs_err", "dk_nmse", "dk_tol" },
                                                { "dv_max_abs_err", "dv_nmse", "dv_tol" } };
        for (int x = 0; attn_backward(&r->p) && x < 3; x++) {
            attn_json_field_num(f, grad[x][0], r->grad[x].max_abs);
            attn_json_field_num(f, grad[x][1], r->grad[x].nmse);
            attn_json_field_num(f, grad[x][2], r->grad[x].tol);
        }
    }
}

static void head(FILE *f, bool *first, const char *name, const char *suffix, int family,
                 int instance, const char *run_type, int reps, int threads)
{
    fprintf(f, "%s    {\n      \"name\": \"%s%s\"", *first ? "" : ",\n", name, suffix);
    *first = false;
    fprintf(f, ",\n      \"family_index\": %d,\n      \"per_family_instance_index\": %d", family,
            instance);
    fprintf(f, ",\n      \"run_name\": \"%s\",\n      \"run_type\": \"%s\"", name, run_type);
    fprintf(f, ",\n      \"repetitions\": %d,\n      \"threads\": %d", reps, threads);
}

void attn_json_entries(FILE *f, bool *first, const attn_json_case *c)
{
    const attn_timing *t = c->timing;
    if (!t->reps) {
        head(f, first, c->name, "", c->family, c->instance, "iteration", 0, c->threads);
        fputs(",\n      \"repetition_index\": 0,\n      \"iterations\": 0", f);
        if (!attn_verdict_ok(c->verdict)) {
            fputs(",\n      \"error_occurred\": true", f);
            char msg[512];
            snprintf(msg, sizeof(msg), "%s: %s", attn_verdict_str(c->verdict), c->why);
            attn_json_field_str(f, "error_message", msg);
        }
        c->counters(f, c->ctx, 0);
        attn_json_field_str(f, "repro", c->repro);
        fputs("\n    }", f);
        return;
    }
    for (int i = 0; i < t->reps; i++) {
        head(f, first, c->name, "", c->family, c->instance, "iteration", t->reps, c->threads);
        fprintf(f, ",\n      \"repetition_index\": %d,\n      \"iterations\": %ld", i, t->iterations);
        attn_json_field_num(f, "real_time", t->real[i] * 1e6);
        attn_json_field_num(f, "cpu_time", t->cpu[i] * 1e6);
        fputs(",\n      \"time_unit\": \"us\"", f);
        if (t->device_known)
            attn_json_field_num(f, "device_time_us", t->device[i] * 1e6);
        c->counters(f, c->ctx, t->real[i]);
        fputs("\n    }", f);
    }
    const struct { const char *name; double real, cpu; const char *unit; } agg[] = {
        { "mean", t->real_stats.mean * 1e6, t->cpu_stats.mean * 1e6, "time" },
        { "median", t->real_stats.median * 1e6, t->cpu_stats.median * 1e6, "time" },
        { "stddev", t->real_stats.stddev * 1e6, t->cpu_stats.stddev * 1e6, "time" },
        { "cv", t->real_stats.cv, t->cpu_stats.cv, "percentage" },
    };
    for (size_t a = 0; a < sizeof(agg) / sizeof(agg[0]); a++) {
        char suffix[16];
        snprintf(suffix, sizeof(suffix), "_%s", agg[a].name);
        head(f, first, c->name, suffix, c->family, c->instance, "aggregate", t->reps, c->threads);
        fprintf(f, ",\n      \"aggregate_name\": \"%s\",\n      \"aggregate_unit\": \"%s\"",
                agg[a].name, agg[a].unit);
        fprintf(f, ",\n      \"iterations\": %d", t->reps);
        attn_json_field_num(f, "real_time", agg[a].real);
        attn_json_field_num(f, "cpu_time", agg[a].cpu);
        fputs(",\n      \"time_unit\": \"us\"", f);
        if (!strcmp(agg[a].name, "median")) {
            c->counters(f, c->ctx, t->real_stats.median);
            attn_json_field_str(f, "repro", c->repro);
        }
        fputs("\n    }", f);
    }
}

static int family_of(const attn_backend *be)
{
    for (size_t i = 0; i < attn_backend_count(); i++)
        if (attn_backend_get(i) == be)
            return (int)i;
    return (int)attn_backend_count();
}

static const char open_mark[] = "  \"benchmarks\": [\n", close_mark[] = "\n  ]\n}\n";

/* The entries are "    {\n...\n    }" joined by ",\n" (string values are
 * escaped, so that sequence only ends an entry). Keeps those done() accepts. */
static void keep_done(char *body, unsigned long long seed,
                      bool (*done)(const void *ctx, const char *key), const void *ctx)
{
    static const char start[] = "    {\n", end[] = "\n    }";
    char *out = body, *at = body;
    while ((at = strstr(at, start))) {
        char *stop = strstr(at, end);
        if (!stop)
            break;
        stop += strlen(end);
        const char *rn = strstr(at, "\"run_name\": \""), *th = strstr(at, "\"threads\": ");
        char key[1024] = "";
        if (rn && th && rn < stop && th < stop) {
            rn += strlen("\"run_name\": \"");
            const size_t len = strcspn(rn, "\"");
            snprintf(key, sizeof(key), "%.*s/threads:%d/seed:%llu", (int)len, rn,
                     atoi(th + strlen("\"threads\": ")), seed);
        }
        if (key[0] && done(ctx, key)) {
            if (out != body) {
                memcpy(out, ",\n", 2);
                out += 2;
            }
            memmove(out, at, (size_t)(stop - at));
            out += stop - at;
        }
        at = stop;
    }
    *out = '\0';
}

char *attn_json_prior(const char *path, unsigned long long seed,
                      bool (*done)(const void *ctx, const char *key), const void *ctx)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            char *t = realloc(text, cap = 2 * cap + 4096 + 1);
            if (!t)
                break;
            text = t;
        }
        const size_t r = fread(text + len, 1, cap - len - 1, f);
        if (!r)
            break;
        len += r;
    }
    fclose(f);
    if (!text)
        return NULL;
    text[len] = '\0';
    /* Only a file of our own making: the context first, the entries between
     * the markers, the closing at the very end. */
    static const char head_mark[] = "{\n  \"context\": {";
    char *open = strstr(text, open_mark);
    const size_t cl = strlen(close_mark);
    if (strncmp(text, head_mark, sizeof(head_mark) - 1) || !open || len < cl ||
        strcmp(text + len - cl, close_mark)) {
        free(text);
        return NULL;
    }
    char *body = open + strlen(open_mark);
    text[len - cl] = '\0';
    memmove(text, body, strlen(body) + 1);
    keep_done(text, seed, done, ctx);
    return text;
}

FILE *attn_json_begin(const char *path, char *tmp, size_t len, const attn_machine *m,
                      const attn_setup *s, const char *exe)
{
    if (snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid()) >= (int)len) {
        fprintf(stderr, "attnbench: --json %s: path too long\n", path);
        return NULL;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "attnbench: --json %s: cannot write: %s\n", path, strerror(errno));
        return NULL;
    }
    fputs("{\n", f);
    context(f, m, s, exe);
    fputs(open_mark, f);
    return f;
}

int attn_json_finish(FILE *f, const char *path, const char *tmp)
{
    fputs(close_mark, f);
    bool ok = !ferror(f);
    ok &= fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path)) {
        fprintf(stderr, "attnbench: --json %s: cannot write: %s\n", path, strerror(errno));
        unlink(tmp);
        return ATTN_EXIT_ERROR;
    }
    return -1;
}

int attn_json_write(const char *path, const attn_machine *m, const attn_setup *s,
                    const char *exe, const char *prior, const attn_result *res, size_t n)
{
    char tmp[4096];
    FILE *f = attn_json_begin(path, tmp, sizeof(tmp), m, s, exe);
    if (!f)
        return ATTN_EXIT_ERROR;
    bool first = true;
    if (prior && *prior) {
        fputs(prior, f);
        first = false;
    }
    for (size_t i = 0; i < n; i++) {
        int instance = 0;
        for (size_t j = 0; j < i; j++)
            instance += res[j].be == res[i].be;
        const case_ctx ctx = { &res[i], m };
        const attn_json_case c = {
            .name = res[i].name, .family = family_of(res[i].be), .instance = instance,
            .threads = s->threads, .timing = &res[i].timing, .verdict = res[i].verdict,
            .why = res[i].why, .repro = res[i].repro, .counters = counters, .ctx = &ctx,
        };
        attn_json_entries(f, &first, &c);
    }
    return attn_json_finish(f, path, tmp);
}

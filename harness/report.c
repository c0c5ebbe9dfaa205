#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "report.h"
#include "variant.h"

void attn_report_header(FILE *f, const attn_machine *m, const attn_setup *s, size_t shapes,
                        size_t cases)
{
    fprintf(f, "attnbench %s: %zu shape%s, %zu case%s; fill=%s seed=%llu threads=%d; "
               "min-time %gs, %d reps, max-time %gs\n",
            ATTN_VERSION, shapes, shapes == 1 ? "" : "s", cases, cases == 1 ? "" : "s",
            attn_setup_fill_name(s), (unsigned long long)s->seed, s->threads, s->timer.min_time,
            s->timer.reps, s->timer.max_time);
    attn_machine_print(f, m);
}

void attn_report_reference(FILE *f, const attn_ref *ref, double seconds)
{
    fprintf(f, "reference: %zu of %zu rows (%s) in double precision, %.2f s; "
               "max|logit| %.3g, max|V| %.3g\n",
            ref->nrows, ref->total_rows,
            ref->nrows == ref->total_rows ? "all" : "seeded stratified sample", seconds,
            ref->max_abs_logit, ref->max_abs_v);
    if (ref->grads)
        fprintf(f, "backward reference: dQ, dK and dV of %zu of %zu K/V heads (every row of "
                   "them), in double; M_dQ %.3g, M_dK %.3g, M_dV %.3g\n",
                ref->grads->nheads, ref->grads->total_heads, ref->grads->mag[0],
                ref->grads->mag[1], ref->grads->mag[2]);
    if (ref->nonfinite_inputs)
        fprintf(f, "inputs: %zu non-finite values in Q, K and V (%zu NaN, %zu infinite): each "
                   "output is judged element by element, NaN for NaN and the same infinity for "
                   "an infinity (docs/correctness.md, non-finite inputs)\n",
                ref->nonfinite_inputs, ref->nan_inputs, ref->nonfinite_inputs - ref->nan_inputs);
}

void attn_report_shape(FILE *f, const attn_problem *p, const attn_ref *ref, double seconds)
{
    char shape[512];
    attn_problem_describe(p, shape, sizeof(shape));
    fprintf(f, "\n== %s\n", shape);
    attn_report_reference(f, ref, seconds);
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

void attn_report_row_header(FILE *f)
{
    fprintf(f, "%-14s %-8s %12s %7s %10s %6s %8s %5s %6s %9s %14s %11s %11s\n", "backend",
            "verdict", "median", "cv", "GFLOP/s", "%peak", "GB/s", "%bw", "%roof", "vs naive",
            "vs exact", "workspace", "peak RSS");
}

/* What a row computes against softmax attention: "exact", or for a
 * variant (marked ~ beside its name) the nmse of its output against exact
 * attention on the same inputs, and for a quantized K/V cache ("kv nmse")
 * against exact attention on K and V before quantization, so that no
 * speedup is read without the error it costs. */
static void vs_exact(char *buf, size_t len, const attn_result *r)
{
    if (r->quant_known)
        snprintf(buf, len, "kv nmse %.1e", r->quant_nmse);
    else if (r->be->kind == ATTN_KIND_SOFTMAX)
        snprintf(buf, len, "exact");
    else if (r->approx_known)
        snprintf(buf, len, "nmse %.1e", r->approx_nmse);
    else
        snprintf(buf, len, "-");
}

/* Under a table holding a variant (marked ~) or a quantized cache: what
 * the mark and "vs exact" mean. */
static void approx_note(FILE *f, const attn_result *res, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (res[i].be->kind != ATTN_KIND_SOFTMAX) {
            fputs("~ another function than softmax attention (local, sparse: softmax over a "
                  "sparsity\n  pattern; linear, performer, linformer: approximations); 'vs "
                  "exact': the nmse of\n  its output against exact attention on the same "
                  "inputs\n", f);
            break;
        }
    for (size_t i = 0; i < n; i++)
        if (res[i].quant_known) {
            fputs("'kv nmse': a quantized K/V cache's output against exact attention on K and "
                  "V\n  before quantization (its verdict is against K and V as stored)\n", f);
            return;
        }
}

void attn_report_row(FILE *f, const attn_result *r, double naive, const attn_peak *peak)
{
    char med[32] = "-", cv[32] = "-", gf[32] = "-", pk[32] = "-", sp[32] = "-", ws[32] = "-",
         rss[32] = "-", gb[32] = "-", bw[32] = "-", roof[32] = "-";
    const attn_timing *t = &r->timing;
    peak = attn_case_peak(r, peak);
    if (attn_verdict_ok(r->verdict) && t->reps) {
        const double gflops = r->flops / t->real_stats.median * 1e-9;
        const double gbs = r->bytes / t->real_stats.median * 1e-9;
        format_time(med, sizeof(med), t->real_stats.median);
        snprintf(cv, sizeof(cv), "%.1f%%", 100.0 * t->real_stats.cv);
        snprintf(gf, sizeof(gf), "%.2f", gflops);
        snprintf(gb, sizeof(gb), "%.2f", gbs);
        if (peak) {
            snprintf(pk, sizeof(pk), "%.1f", 100.0 * gflops / attn_case_peak_gflops(r, peak));
            snprintf(bw, sizeof(bw), "%.0f", 100.0 * gbs / peak->triad);
            snprintf(roof, sizeof(roof), "%.0f", attn_case_pct_roofline(r, peak));
        }
        if (naive > 0)
            snprintf(sp, sizeof(sp), "%.2fx", naive / t->real_stats.median);
    }
    if (attn_verdict_ran(r->verdict)) {
        if (!r->ws_unknown)
            attn_format_bytes(ws, sizeof(ws), (double)r->ws_peak);
        if (r->rss_known)
            attn_format_bytes(rss, sizeof(rss), (double)r->rss_peak);
        else
            snprintf(rss, sizeof(rss), "unknown");
    }
    char name[32], ex[32];
    snprintf(name, sizeof(name), "%s%s", r->be->name, r->be->kind == ATTN_KIND_SOFTMAX ? "" : "~");
    vs_exact(ex, sizeof(ex), r);
    fprintf(f, "%-14s %-8s %12s %7s %10s %6s %8s %5s %6s %9s %14s %11s %11s\n", name,
            attn_verdict_str(r->verdict), med, cv, gf, pk, gb, bw, roof, sp, ex, ws, rss);
}

void attn_report_details(FILE *f, const attn_result *r, const attn_peak *peak)
{
    fprintf(f, "%s: %s", r->be->name, attn_verdict_str(r->verdict));
    if (r->why[0])
        fprintf(f, ": %s", r->why);
    fputc('\n', f);
    if (r->checked) {
        char desc[512];
        attn_check_describe(&r->check, desc, sizeof(desc));
        fprintf(f, "  check%s%s%s: %s; %zu of %zu rows\n",
                r->be->kind != ATTN_KIND_SOFTMAX ? " (against the " : "",
                r->be->kind != ATTN_KIND_SOFTMAX ? attn_kind_name(r->be->kind) : "",
                r->be->kind != ATTN_KIND_SOFTMAX ? " definition, in double)" : "", desc,
                r->ref_rows, r->ref_total);
        for (int x = 0; attn_backward(&r->p) && x < 3; x++) {
            attn_check_describe(&r->grad[x], desc, sizeof(desc));
            fprintf(f, "  check: %s\n", desc);
        }
    }
    if (r->approx_known)
        fprintf(f, "  approximation: against softmax attention on the same inputs, max_abs %.3g, "
                   "nmse %.3g\n", r->approx_max_abs, r->approx_nmse);
    if (r->quant_known)
        fprintf(f, "  quantization: against exact attention on K and V before quantization, "
                   "max_abs %.3g, nmse %.3g\n", r->quant_max_abs, r->quant_nmse);
    if (attn_verdict_ran(r->verdict)) {
        char wsp[64] = "unknown", pred[32], rss[32] = "unknown", score[32], kv[32], least[32];
        if (!r->ws_unknown) {
            attn_format_bytes(wsp, sizeof(wsp), (double)r->ws_peak);
            const size_t at = strlen(wsp);
            snprintf(wsp + at, sizeof(wsp) - at, " (%zu bytes)", r->ws_peak);
        }
        attn_format_bytes(pred, sizeof(pred), (double)r->ws_predicted);
        if (r->rss_known)
            attn_format_bytes(rss, sizeof(rss), (double)r->rss_peak);
        attn_format_bytes(score, sizeof(score), (double)r->score_bytes);
        attn_format_bytes(kv, sizeof(kv), (double)r->kv_bytes);
        attn_format_bytes(least, sizeof(least), r->bytes);
        fprintf(f, "  memory: workspace peak %s, predicted %s; peak RSS growth %s; "
                   "score matrix would be %s; K and V %s (%d K/V heads); least traffic %s\n",
                wsp, pred, rss, score, kv, attn_kv_heads(&r->p), least);
    }
    if (r->ranks > 0 && attn_verdict_ran(r->verdict)) {
        char sent[32], ws[32];
        fprintf(f, "  ranks: %d, each run's figures per rank (mean over the runs); the time above "
                   "is the slowest rank's\n", r->ranks);
        for (int i = 0; i < r->ranks && i < ATTN_RANK_ROWS; i++) {
            const attn_rank_stats *x = &r->rank[i];
            char c[32], w[32];
            attn_format_bytes(sent, sizeof(sent), (double)x->sent_bytes);
            attn_format_bytes(ws, sizeof(ws), (double)x->workspace);
            format_time(c, sizeof(c), x->compute_s);
            format_time(w, sizeof(w), x->comm_s);
            fprintf(f, "    rank %d: compute %s, waiting for K/V %s, sent %s, workspace %s\n", i, c,
                    w, sent, ws);
        }
        if (r->ranks > ATTN_RANK_ROWS)
            fprintf(f, "    (ranks %d to %d not listed; the CSV has the largest figures)\n",
                    ATTN_RANK_ROWS, r->ranks - 1);
    }
    if (r->device[0]) {
        char dev[32] = "unknown";
        if (r->device_known)
            attn_format_bytes(dev, sizeof(dev), (double)r->device_bytes);
        fprintf(f, "  device: %s; device memory %s%s\n", r->device, dev,
                r->device_is_cpu ? "; a CPU device: its times are not GPU performance"
                : peak ? "; no %peak, %bw or roofline: the peaks measured are this host's "
                         "CPU's, not the GPU's" : "");
    }
    peak = attn_case_peak(r, peak);
    const attn_timing *t = &r->timing;
    if (t->reps) {
        char med[32], min[32], mean[32], sd[32], cpu[32];
        format_time(med, sizeof(med), t->real_stats.median);
        format_time(min, sizeof(min), t->real_stats.min);
        format_time(mean, sizeof(mean), t->real_stats.mean);
        format_time(sd, sizeof(sd), t->real_stats.stddev);
        format_time(cpu, sizeof(cpu), t->cpu_stats.median);
        fprintf(f, "  time: median %s, min %s, mean %s, stddev %s (cv %.1f%%), cpu %s; "
                   "%d reps x %ld runs%s\n", med, min, mean, sd, 100.0 * t->real_stats.cv, cpu,
                t->reps, t->iterations, t->budget_hit ? " (stopped by --max-time)" : "");
        if (attn_case_probe_gbs(r) > 0)
            fprintf(f, "  bandwidth probe: %.1f GB/s before the timed runs, %.1f after%s\n",
                    r->probe_before, r->probe_after,
                    peak ? "; the roofline takes the faster" : "");
        if (attn_case_fprobe(r) > 0)
            fprintf(f, "  FMA probe: %.1f GFLOP/s before the timed runs, %.1f after%s\n",
                    r->fprobe_before, r->fprobe_after,
                    peak ? "; %peak and the roofline take the faster" : "");
        if (peak && attn_verdict_ok(r->verdict)) {
            const attn_roofline roof = attn_case_roofline(r, peak);
            char at[32], mem[32], fma[32];
            format_time(at, sizeof(at), roof.s);
            format_time(mem, sizeof(mem), roof.mem_s);
            format_time(fma, sizeof(fma), roof.fma_s);
            fprintf(f, "  roofline: %s here, %s-bound (%.4g MB at %.1f GB/s: %s; %.4g GFLOP at "
                       "%.1f GFLOP/s: %s); the median is %.0f%% of it\n",
                    at, roof.memory_bound ? "memory" : "compute", r->bytes * 1e-6,
                    attn_case_bw(r, peak), mem, r->flops * 1e-9, attn_case_peak_gflops(r, peak), fma,
                    attn_case_pct_roofline(r, peak));
        }
        if (r->p.ragged) {
            /* A serving batch's rate: query tokens, and requests for decode. */
            const attn_ragged *g = r->p.ragged;
            int qlo = g->nq[0], klo = g->nk[0];
            for (int b = 1; b < r->p.batch; b++) {
                qlo = g->nq[b] < qlo ? g->nq[b] : qlo;
                klo = g->nk[b] < klo ? g->nk[b] : klo;
            }
            const double tps = (double)attn_q_tokens(&r->p) / t->real_stats.median;
            fprintf(f, "  serving: %d requests, %zu query tokens (Nq %d..%d, Nk %d..%d), "
                       "%.4g tokens/s%s\n", r->p.batch, attn_q_tokens(&r->p), qlo, r->p.seq_q,
                    klo, r->p.seq_kv, tps,
                    r->p.seq_q == 1 ? " (decode: requests/s)" : "");
        }
        if (t->busy_threads)
            fprintf(f, "  warning: another thread of this process was still using CPU after "
                       "%.1f s of waiting (a BLAS or OpenMP pool spinning?); these times may be "
                       "low\n", t->idle_wait_s);
        else if (t->idle_wait_s > 0.02)
            fprintf(f, "  waited %.0f ms before timing for this process's other threads to go "
                       "idle\n", 1e3 * t->idle_wait_s);
    }
    if (r->device[0] && (attn_verdict_ran(r->verdict))) {
        char up[32], down[32];
        format_time(up, sizeof(up), r->upload_s);
        format_time(down, sizeof(down), r->download_s);
        if (t->reps && t->device_known) {
            char med[32], min[32];
            format_time(med, sizeof(med), t->device_stats.median);
            format_time(min, sizeof(min), t->device_stats.min);
            fprintf(f, "  device time: median %s, min %s (cv %.1f%%; timestamps around the "
                       "dispatches; the wall time above adds submission and waiting)\n",
                    med, min, 100.0 * t->device_stats.cv);
        } else if (t->reps) {
            fputs("  device time: none (this device has no timestamp queries); the times "
                  "above are wall time\n", f);
        }
        fprintf(f, "  transfers: upload of Q, K, V %s, download of O %s (wall time, once, "
                   "not in the times above)\n", up, down);
    }
    fprintf(f, "  repro: %s\n", r->repro);
}

static int rank(const attn_result *r)
{
    if (attn_verdict_ok(r->verdict))
        return r->timing.reps ? 0 : 1;
    return 1 + (int)r->verdict;
}

static int cmp_result(const void *a, const void *b)
{
    const attn_result *x = a, *y = b;
    if (rank(x) != rank(y))
        return rank(x) - rank(y);
    if (rank(x) == 0)
        return (x->timing.real_stats.median > y->timing.real_stats.median) -
               (x->timing.real_stats.median < y->timing.real_stats.median);
    return 0;
}

void attn_report_results_details(FILE *f, attn_result *res, size_t n, const attn_peak *peak)
{
    qsort(res, n, sizeof(*res), cmp_result);
    for (size_t i = 0; i < n; i++) {
        fputc('\n', f);
        attn_report_details(f, &res[i], peak);
    }
}

void attn_report_results_table(FILE *f, const attn_result *res, size_t n, const attn_peak *peak)
{
    double naive = 0.0;
    for (size_t i = 0; i < n; i++)
        if (attn_verdict_ok(res[i].verdict) && res[i].timing.reps && !strcmp(res[i].be->name, "naive"))
            naive = res[i].timing.real_stats.median;
    fputc('\n', f);
    attn_report_row_header(f);
    for (size_t i = 0; i < n; i++)
        attn_report_row(f, &res[i], naive, peak);
    approx_note(f, res, n);
}

void attn_report_summary(FILE *f, const attn_result *res, size_t n, size_t resumed,
                         const char *csv)
{
    size_t count[ATTN_VERDICT_COUNT] = { 0 };
    for (size_t i = 0; i < n; i++)
        count[res[i].verdict]++;
    fprintf(f, "\n%zu cases run: %zu passed, %zu failed, %zu skipped, %zu errors", n,
            count[ATTN_PASSED], count[ATTN_FAILED], count[ATTN_SKIPPED], count[ATTN_ERROR]);
    if (count[ATTN_MISTRUSTED])
        fprintf(f, ", %zu mistrusted", count[ATTN_MISTRUSTED]);
    if (count[ATTN_TIMEOUT])
        fprintf(f, ", %zu timed out", count[ATTN_TIMEOUT]);
    if (resumed)
        fprintf(f, "; %zu already in %s", resumed, csv);
    fputc('\n', f);
}

/* The shape of r without its storage types: what a reduced-precision row
 * is compared on. */
static void plain_shape(const attn_result *r, char *buf, size_t len)
{
    attn_problem p = r->p;
    p.dtype = p.kv_dtype = ATTN_DTYPE_FP32;
    attn_problem_describe(&p, buf, len);
}

static bool timed_ok(const attn_result *r)
{
    return attn_verdict_ok(r->verdict) && r->timing.reps > 0;
}

/* The row r is compared with: the same backend and shape (storage types
 * aside), Q stored as q and K/V as kv; NULL when the run has none. */
static const attn_result *base_of(const attn_result *res, size_t n, const attn_result *r,
                                  attn_dtype q, attn_dtype kv)
{
    char shape[512], other[512];
    plain_shape(r, shape, sizeof(shape));
    for (size_t j = 0; j < n; j++) {
        if (res[j].be != r->be || res[j].p.dtype != q || res[j].p.kv_dtype != kv)
            continue;
        plain_shape(&res[j], other, sizeof(other));
        if (!strcmp(shape, other))
            return &res[j];
    }
    return NULL;
}

/* The quantized caches against bf16 K/V: the same backend and shape, Q
 * the same; the speed each format buys and the error it costs (the rows
 * that ran, or failed: not the SKIPPED ones). */
static void report_quantized(FILE *f, const attn_result *res, size_t n)
{
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        const attn_result *r = &res[i];
        if (!attn_dtype_quantized(r->p.kv_dtype) || r->verdict == ATTN_SKIPPED)
            continue;   /* a SKIPPED row says why in the table above */
        char shape[512];
        plain_shape(r, shape, sizeof(shape));
        const attn_result *base = base_of(res, n, r, r->p.dtype, ATTN_DTYPE_BF16);
        if (!any) {
            fprintf(f, "\nquantized K/V caches against bf16 K/V (the same backend, shape and Q, "
                       "this run;\nkv max_abs, kv nmse: the output against exact attention on K "
                       "and V before quantization):\n");
            fprintf(f, "%-14s %-5s %-8s %12s %12s %8s %10s %8s %11s %11s  %s\n", "backend", "Q",
                    "K/V", "median", "bf16 median", "speedup", "K/V bytes", "GB/s", "kv max_abs",
                    "kv nmse", "shape");
            any = true;
        }
        char med[32] = "-", bmed[32] = "-", sp[32] = "-", kv[32], gb[32] = "-", ma[32] = "-",
             nm[32] = "-";
        if (timed_ok(r)) {
            format_time(med, sizeof(med), r->timing.real_stats.median);
            snprintf(gb, sizeof(gb), "%.2f", r->bytes / r->timing.real_stats.median * 1e-9);
        }
        if (base && timed_ok(base))
            format_time(bmed, sizeof(bmed), base->timing.real_stats.median);
        if (base && timed_ok(r) && timed_ok(base))
            snprintf(sp, sizeof(sp), "%.2fx",
                     base->timing.real_stats.median / r->timing.real_stats.median);
        if (r->quant_known) {
            snprintf(ma, sizeof(ma), "%.2e", r->quant_max_abs);
            snprintf(nm, sizeof(nm), "%.2e", r->quant_nmse);
        }
        attn_format_bytes(kv, sizeof(kv), (double)r->kv_bytes);
        fprintf(f, "%-14s %-5s %-8s %12s %12s %8s %10s %8s %11s %11s  %s%s%s\n", r->be->name,
                attn_dtype_name(r->p.dtype), attn_dtype_name(r->p.kv_dtype), med, bmed, sp, kv,
                gb, ma, nm, shape, timed_ok(r) ? "" : "  ",
                timed_ok(r) ? "" : attn_verdict_str(r->verdict));
    }
}

void attn_report_dtypes(FILE *f, const attn_result *res, size_t n)
{
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        const attn_result *r = &res[i];
        if (!attn_reduced(&r->p) || attn_dtype_quantized(r->p.kv_dtype))
            continue;
        char shape[512];
        plain_shape(r, shape, sizeof(shape));
        const attn_result *base = base_of(res, n, r, ATTN_DTYPE_FP32, ATTN_DTYPE_FP32);
        if (!base)
            continue;
        if (!any) {
            fprintf(f, "\nstorage types against fp32 (the same backend and shape, this run):\n");
            fprintf(f, "%-14s %-5s %-5s %12s %12s %8s %10s %10s %10s  %s\n", "backend", "Q", "K/V",
                    "median", "fp32 median", "speedup", "K/V bytes", "max_abs", "nmse", "shape");
            any = true;
        }
        char med[32] = "-", bmed[32] = "-", sp[32] = "-", kv[32], ma[32] = "-", nm[32] = "-";
        if (timed_ok(r))
            format_time(med, sizeof(med), r->timing.real_stats.median);
        if (timed_ok(base))
            format_time(bmed, sizeof(bmed), base->timing.real_stats.median);
        if (timed_ok(r) && timed_ok(base))
            snprintf(sp, sizeof(sp), "%.2fx",
                     base->timing.real_stats.median / r->timing.real_stats.median);
        if (r->checked) {
            snprintf(ma, sizeof(ma), "%.2e", r->check.max_abs);
            snprintf(nm, sizeof(nm), "%.2e", r->check.nmse);
        }
        attn_format_bytes(kv, sizeof(kv), (double)r->kv_bytes);
        fprintf(f, "%-14s %-5s %-5s %12s %12s %8s %10s %10s %10s  %s%s%s\n", r->be->name,
                attn_dtype_name(r->p.dtype), attn_dtype_name(r->p.kv_dtype), med, bmed, sp, kv,
                ma, nm, shape, timed_ok(r) ? "" : "  ",
                timed_ok(r) ? "" : attn_verdict_str(r->verdict));
    }
    report_quantized(f, res, n);
}

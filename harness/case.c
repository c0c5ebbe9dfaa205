#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case.h"
#include "inputs.h"
#include "memory.h"
#include "npy.h"
#include "variant.h"

static const char *const verdict_str[ATTN_VERDICT_COUNT] = {
    [ATTN_PASSED]  = "PASSED",
    [ATTN_FAILED]  = "FAILED",
    [ATTN_SKIPPED] = "SKIPPED",
    [ATTN_ERROR]   = "ERROR",
    [ATTN_TIMEOUT] = "TIMEOUT",
    [ATTN_MISTRUSTED] = "MISTRUSTED",
};

const char *attn_verdict_str(attn_verdict v)
{
    return (unsigned)v < ATTN_VERDICT_COUNT ? verdict_str[v] : "?";
}

__attribute__((format(printf, 3, 4)))
static void verdict(attn_result *r, attn_verdict v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof(r->why), fmt, ap);
    va_end(ap);
    r->verdict = v;
}

void attn_case_judge(attn_result *r)
{
    r->checked = true;
    const bool grads = attn_backward(&r->p);
    const attn_check *bad = !r->check.pass ? &r->check : NULL;
    bool mistrusted = r->check.mistrusted;
    for (int x = 0; grads && x < 3; x++) {
        if (!bad && !r->grad[x].pass)
            bad = &r->grad[x];
        mistrusted = mistrusted || r->grad[x].mistrusted;
    }
    if (bad)
        verdict(r, ATTN_FAILED, "%s", bad->why);
    else if (mistrusted && grads)
        verdict(r, ATTN_MISTRUSTED, "the checked reference of O or of a gradient holds fewer "
                "values that tell (nonzero finite ones) than one of its rows: every key masked? "
                "A kernel that writes zeros would pass as well");
    else if (r->check.mistrusted)
        verdict(r, ATTN_MISTRUSTED, "the checked reference holds %zu finite values, %zu of them "
                "exactly 0 (every key masked?), and %zu NaN or Inf the output matched: fewer "
                "values that tell than one output row (%d), so a kernel that writes zeros would "
                "pass as well", r->check.ref_elems, r->check.ref_zeros, r->check.ref_nonfinite,
                r->p.d_v);
    else
        verdict(r, ATTN_PASSED, "%s", "");
}

/* SKIPPED with the numbers when the case would not fit, before it allocates. */
static bool memory_guard(attn_result *r, const attn_problem *p, const attn_setup *s)
{
    if (attn_memory_fits(p, s, r->ws_predicted, true, r->why, sizeof(r->why)))
        return true;
    r->verdict = ATTN_SKIPPED;
    return false;
}

static attn_verdict status_verdict(attn_status st)
{
    return st == ATTN_EUNSUPPORTED || st == ATTN_EUNAVAILABLE ? ATTN_SKIPPED : ATTN_ERROR;
}

static bool allocated_in_run(attn_result *r, attn_tracker *tr, size_t calls)
{
    const size_t now = atomic_load(&tr->calls);
    if (now == calls)
        return false;
    verdict(r, ATTN_FAILED, "run made %zu allocation call(s); prepare must do all allocation",
            now - calls);
    return true;
}

/* The outputs of a case: O, and for the backward L and the gradients,
 * each in a guarded buffer; the checked copies the timed runs must repeat. */
typedef struct outputs {
    attn_guarded o, lse, g[3];
    float *first;           /* O then dQ, dK, dV as checked; NULL when not timing */
    size_t n;               /* floats in first */
} outputs;

/* Everything a run leaves, read into the guarded buffers. */
static attn_status read_all(const attn_backend *be, void *state, const attn_problem *p,
                            outputs *out)
{
    attn_status st = be->read(state, out->o.data);
    if (st == ATTN_OK && attn_backward(p))
        st = attn_backend_read_grads(be, state, out->g[0].data, out->g[1].data, out->g[2].data);
    return st;
}

static void copy_all(float *dst, const attn_problem *p, const outputs *out)
{
    memcpy(dst, out->o.data, out->o.n * sizeof(float));
    dst += out->o.n;
    for (int x = 0; attn_backward(p) && x < 3; x++) {
        memcpy(dst, out->g[x].data, out->g[x].n * sizeof(float));
        dst += out->g[x].n;
    }
}

static bool same_all(const float *first, const attn_problem *p, const outputs *out)
{
    bool same = !memcmp(first, out->o.data, out->o.n * sizeof(float));
    first += out->o.n;
    for (int x = 0; attn_backward(p) && x < 3; x++) {
        same = same && !memcmp(first, out->g[x].data, out->g[x].n * sizeof(float));
        first += out->g[x].n;
    }
    return same;
}

static bool all_intact(const attn_problem *p, const outputs *out)
{
    bool ok = attn_guarded_intact(&out->o);
    for (int x = 0; attn_backward(p) && x < 3; x++)
        ok = ok && attn_guarded_intact(&out->g[x]);
    return ok && (!attn_backward(p) || attn_guarded_intact(&out->lse));
}

/* Check once, then time; the timed runs must neither allocate nor change the
 * outputs. */
static void check_and_time(attn_result *r, const attn_backend *be, void *state,
                           const attn_ref *ref, const attn_setup *s, outputs *out,
                           attn_tracker *tr)
{
    const attn_problem *p = &r->p;
    const size_t calls = atomic_load(&tr->calls);
    attn_status st = be->run(state);
    const double t0 = attn_now();
    if (st == ATTN_OK)
        st = read_all(be, state, p, out);
    r->download_s = attn_now() - t0;
    if (st != ATTN_OK) {
        verdict(r, ATTN_ERROR, "run: %s", attn_status_str(st));
        return;
    }
    attn_check_output(&r->check, p, ref, &out->o);
    if (attn_backward(p) && !ref->grads) {
        verdict(r, ATTN_ERROR, "the backward's reference was not computed");
        return;
    }
    if (attn_backward(p)) {
        attn_check_grads(r->grad, p, ref, ref->grads, out->g);
        if (!attn_guarded_intact(&out->lse)) {
            r->grad[0].pass = false;
            snprintf(r->grad[0].why, sizeof(r->grad[0].why), "L (t->lse) was written outside "
                     "its bounds");
        }
    }
    attn_case_judge(r);
    if (r->verdict == ATTN_FAILED || allocated_in_run(r, tr, calls))
        return;
    if (!out->first)
        return;

    copy_all(out->first, p, out);
    /* The held arithmetic's probe: bf16 dot products for bf16 Q and K/V
     * (attn_peak_gflops' rule), fp32 FMA otherwise. */
    const bool dot = p->dtype == ATTN_DTYPE_BF16 && p->kv_dtype == ATTN_DTYPE_BF16;
    if (s->bw_probe)
        r->probe_before = attn_bw_probe(s->threads);
    if (s->fma_probe)
        r->fprobe_before = attn_fma_probe(s->threads, dot);
    st = attn_time_runs(be, state, &s->timer, &r->timing);
    if (s->fma_probe)
        r->fprobe_after = attn_fma_probe(s->threads, dot);
    if (s->bw_probe)
        r->probe_after = attn_bw_probe(s->threads);
    if (st == ATTN_OK)
        st = read_all(be, state, p, out);
    if (st != ATTN_OK) {
        verdict(r, ATTN_ERROR, "timed run: %s", attn_status_str(st));
    } else if (!allocated_in_run(r, tr, calls)) {
        if (!all_intact(p, out))
            verdict(r, ATTN_FAILED, "a timed run wrote outside an output buffer");
        else if (!same_all(out->first, p, out))
            verdict(r, ATTN_FAILED, "repeated runs gave different outputs");
    }
}

/* A scale-out backend's per-rank figures, kept beside its case. */
static void rank_figures(attn_result *r, const attn_backend *be, void *state)
{
    const int world = attn_backend_world(be);
    if (world < 1 || !be->ranks)
        return;
    attn_rank_stats *all = calloc((size_t)world, sizeof(*all));
    const int n = all ? attn_backend_ranks(be, state, all, world) : 0;
    r->ranks = n;
    for (int i = 0; i < n && i < world; i++) {
        const attn_rank_stats *x = &all[i];
        if (i < ATTN_RANK_ROWS)
            r->rank[i] = *x;
        attn_rank_stats *m = &r->rank_max;
        m->compute_s = x->compute_s > m->compute_s ? x->compute_s : m->compute_s;
        m->comm_s = x->comm_s > m->comm_s ? x->comm_s : m->comm_s;
        m->sent_bytes = x->sent_bytes > m->sent_bytes ? x->sent_bytes : m->sent_bytes;
        m->workspace = x->workspace > m->workspace ? x->workspace : m->workspace;
    }
    free(all);
}

/* prepare, bind, check and time, release: the part whose memory is measured. */
/* With keep, the prepared state is handed back (NULL if prepare failed)
 * instead of released: for --dump-weights after the measurements. */
static void drive(attn_result *r, const attn_backend *be, const attn_config *cfg,
                  const attn_tensors *in, const attn_ref *ref, const attn_setup *s,
                  outputs *out, attn_tracker *tr, void **keep)
{
    if (keep)
        *keep = NULL;
    void *state = NULL;
    attn_status st = be->prepare(&r->p, cfg, &state);
    if (st != ATTN_OK) {
        verdict(r, status_verdict(st), "prepare: %s", attn_status_str(st));
        return;
    }
    r->device_known = attn_backend_device_bytes(be, state, &r->device_bytes);
    attn_backend_device_name(be, state, r->device, sizeof(r->device), &r->device_is_cpu);
    /* Each input in its storage type only (backend.h). */
    const attn_problem *p = &r->p;
    attn_tensors t = attn_inputs_stored(in, p);
    t.o = out->o.data;
    if (attn_backward(p)) {
        t.dout = in->dout;
        t.lse = out->lse.data;
        t.dq = out->g[0].data;
        t.dk = out->g[1].data;
        t.dv = out->g[2].data;
    }
    const double t0 = attn_now();
    st = be->bind(state, &t);
    r->upload_s = attn_now() - t0;
    if (st != ATTN_OK)
        verdict(r, status_verdict(st), "bind: %s", attn_status_str(st));
    else
        check_and_time(r, be, state, ref, s, out, tr);
    rank_figures(r, be, state);
    if (keep)
        *keep = state;
    else
        be->release(state);
}

/* --dump-output, --dump-weights: after the measurements, so that neither
 * buffer is part of them. Both paths were tried before the first case; a
 * write that still fails (a full disk) is said in r->dump_error and makes
 * the exit code 4, and the case keeps its verdict and its row. A backend
 * that cannot give its weights is an ERROR. */
static void dumps(attn_result *r, const attn_backend *be, void *state, const attn_problem *p,
                  const attn_setup *s, const attn_guarded *out)
{
    char why[4400];
    if (s->dump_output && r->verdict != ATTN_ERROR) {
        /* A serving batch's O as it is stored: [Tq, H, dv] (backend.h). */
        const size_t dense[4] = { (size_t)p->batch, (size_t)p->heads, (size_t)p->seq_q,
                                  (size_t)p->d_v };
        const size_t packed[3] = { attn_q_tokens(p), (size_t)p->heads, (size_t)p->d_v };
        if (!attn_npy_write(s->dump_output, out->data, p->ragged ? packed : dense,
                            p->ragged ? 3 : 4, why, sizeof(why)))
            snprintf(r->dump_error, sizeof(r->dump_error), "--dump-output: %s", why);
    }
    if (s->dump_weights && state && attn_backend_has_weights(be) && r->verdict != ATTN_ERROR) {
        const size_t shape[4] = { (size_t)p->batch, (size_t)p->heads, (size_t)p->seq_q,
                                  (size_t)p->seq_kv };
        float *w = attn_host_alloc(shape[0] * shape[1] * shape[2] * shape[3] * sizeof(float));
        attn_status st = w ? attn_backend_weights(be, state, w) : ATTN_ENOMEM;
        if (st != ATTN_OK)
            verdict(r, ATTN_ERROR, "--dump-weights: %s", attn_status_str(st));
        else if (!attn_npy_write(s->dump_weights, w, shape, 4, why, sizeof(why)))
            snprintf(r->dump_error, sizeof(r->dump_error), "--dump-weights: %s", why);
        attn_host_free(w);
    }
}

static void case_init(attn_result *r, const attn_backend *be, const attn_problem *p,
                      const attn_setup *s, const char *prog)
{
    memset(r, 0, sizeof(*r));
    r->be = be;
    r->case_index = r->cases = -1;
    r->p = *p;
    r->flops = attn_problem_flops(p);
    r->flops_dense = attn_problem_flops_dense(p);
    r->bytes = attn_problem_bytes(p);
    attn_sizes sz;
    if (attn_problem_sizes(p, &sz)) {
        r->score_bytes = sz.scores;
        r->kv_bytes = sz.kv;
    }
    attn_case_name(r->name, sizeof(r->name), be, p, s);
    attn_repro(r->repro, sizeof(r->repro), prog, be, p, s);
}

void attn_case_skip(attn_result *r, const attn_backend *be, const attn_problem *p,
                    const attn_setup *s, const char *prog, const char *why)
{
    const attn_problem pk = attn_problem_of(p, be);
    case_init(r, be, &pk, s, prog);
    verdict(r, ATTN_SKIPPED, "%s", why);
}

static attn_config case_plan(const attn_setup *s)
{
    return (attn_config){ .threads = s->threads, .tile_q = s->tile_q, .tile_kv = s->tile_kv,
                          .tile_sb = s->tile_sb, .device = s->device, .isa = s->isa,
                          .splits = s->splits };
}

/* Whether be can run pk (its own function) under s: ATTN_OK, or why not. */
static attn_status case_accepts(const attn_backend *be, const attn_problem *pk,
                                const attn_setup *s, char *why, size_t len)
{
    const attn_config plan = case_plan(s);
    why[0] = '\0';
    attn_status st = attn_backend_usable(be, why, len);
    if (st == ATTN_OK)
        st = attn_backend_supports(be, pk, &plan, why, len);
    if (st != ATTN_OK && !why[0])
        snprintf(why, len, "%s", attn_status_str(st));
    return st;
}

bool attn_case_refused(const attn_backend *be, const attn_problem *p, const attn_setup *s,
                       char *why, size_t len)
{
    const attn_problem pk = attn_problem_of(p, be);
    const attn_status st = case_accepts(be, &pk, s, why, len);
    return st != ATTN_OK && status_verdict(st) == ATTN_SKIPPED;
}

void attn_case_run(attn_result *r, const attn_backend *be, const attn_problem *p_dense,
                   const attn_tensors *in, const attn_ref *dense, const attn_setup *s,
                   const char *prog)
{
    /* The backend's own function on the shape: p_dense with its kind. */
    const attn_problem pk = attn_problem_of(p_dense, be);
    const attn_problem *p = &pk;
    const attn_ref *ref = dense;
    attn_ref vref = { 0 };
    case_init(r, be, p, s, prog);
    r->ref_rows = ref->nrows;
    r->ref_total = ref->total_rows;

    const attn_config plan = case_plan(s);
    attn_status st = case_accepts(be, p, s, r->why, sizeof(r->why));
    if (st != ATTN_OK) {
        r->verdict = status_verdict(st);
        return;
    }

    if (p->kind != ATTN_KIND_SOFTMAX) {
        if (attn_ref_variant(&vref, dense, p, in, s->threads) != ATTN_OK) {
            verdict(r, ATTN_ERROR, "out of memory for the %s reference", attn_kind_name(p->kind));
            return;
        }
        ref = &vref;
    }

    attn_tracker tr;
    attn_tracker_init(&tr);
    tr.fail_at = s->fail_alloc;
    attn_config cfg = plan;
    cfg.alloc = &tr.iface;
    r->ws_predicted = be->workspace(p, &cfg);
    attn_sizes sz;
    attn_problem_sizes(p, &sz);
    outputs out = { 0 };
    const bool bwd = attn_backward(p);
    out.n = sz.o + (bwd ? sz.dq + sz.dk + sz.dv : 0);
    if (!memory_guard(r, p, s))
        goto done;
    /* The harness's own buffers are allocated and touched before the RSS
     * mark is reset, so the peak measured below is the backend's. */
    bool ok = attn_guarded_alloc(&out.o, sz.o) == ATTN_OK;
    if (bwd) {
        ok = ok && attn_guarded_alloc(&out.lse, sz.rows) == ATTN_OK;
        ok = ok && attn_guarded_alloc(&out.g[0], sz.dq) == ATTN_OK;
        ok = ok && attn_guarded_alloc(&out.g[1], sz.dk) == ATTN_OK;
        ok = ok && attn_guarded_alloc(&out.g[2], sz.dv) == ATTN_OK;
    }
    if (!ok || (s->timer.reps > 0 && !(out.first = attn_host_alloc(out.n * sizeof(float))))) {
        verdict(r, ATTN_ERROR, "out of memory for the output buffers");
        goto done;
    }
    attn_guarded_poison(&out.o);
    for (int x = 0; bwd && x < 3; x++)
        attn_guarded_poison(&out.g[x]);
    if (bwd)
        attn_guarded_poison(&out.lse);
    if (out.first)
        memset(out.first, 0, out.n * sizeof(float));

    uint64_t hwm, rss0 = 0;
    r->rss_known = attn_rss_reset_peak() && attn_rss_read(&hwm, &rss0);
    void *kept = NULL;
    drive(r, be, &cfg, in, ref, s, &out, &tr, s->dump_weights ? &kept : NULL);
    if (ref != dense && r->checked) {
        attn_check approx;
        attn_check_output(&approx, p, dense, &out.o);
        r->approx_known = true;
        r->approx_max_abs = approx.max_abs;
        r->approx_nmse = approx.nmse;
    }
    if (dense->unquantized && r->checked) {
        /* Infinite where the format made an output NaN or Inf that is
         * finite before quantization, or the other way round (a NaN block,
         * a saturated infinity). */
        attn_check q;
        attn_check_output(&q, p, dense->unquantized, &out.o);
        const bool lost = q.nonfinite > 0 || q.mismatched > 0;
        r->quant_known = true;
        r->quant_max_abs = lost ? INFINITY : q.max_abs;
        r->quant_nmse = lost ? INFINITY : q.nmse;
    }
    if (r->rss_known && attn_rss_read(&hwm, &(uint64_t){ 0 }))
        r->rss_peak = hwm > rss0 ? hwm - rss0 : 0;
    else
        r->rss_known = false;
    r->ws_peak = atomic_load(&tr.peak);
    dumps(r, be, kept, p, s, &out.o);
    if (kept)
        be->release(kept);

    r->leaked = atomic_load(&tr.live);
    r->alloc_calls = atomic_load(&tr.calls);
    if (atomic_load(&tr.injected) && r->verdict == ATTN_ERROR) {
        const size_t n = strlen(r->why);
        snprintf(r->why + n, sizeof(r->why) - n, " (allocation %zu failed on purpose: "
                 "ATTN_FAIL_ALLOC)", s->fail_alloc);
    }
    if (atomic_load(&tr.corrupt) && r->verdict != ATTN_FAILED)
        verdict(r, ATTN_FAILED, "wrote past the end of its own workspace (%zu blocks)",
                atomic_load(&tr.corrupt));
    else if (atomic_load(&tr.live) && r->verdict != ATTN_FAILED)
        verdict(r, ATTN_FAILED, "release leaked %zu bytes in %zu blocks",
                atomic_load(&tr.current), atomic_load(&tr.live));
done:
    attn_host_free(out.first);
    attn_guarded_free(&out.o);
    attn_guarded_free(&out.lse);
    for (int x = 0; x < 3; x++)
        attn_guarded_free(&out.g[x]);
    attn_tracker_destroy(&tr);
    attn_ref_free(&vref);
}

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "inputs.h"
#include "memory.h"
#include "npy.h"
#include "peer.h"
#include "report.h"
#include "shapes.h"

/* The one case of the options (attn_sweep_check has made sure there is one). */
static int one_case(const attn_opts *o, attn_problem *p, attn_shape_buf *kv)
{
    if (!attn_shape_buf_alloc(kv, o))
        return attn_error(ATTN_EXIT_TOO_LARGE, "out of memory");
    attn_shapes_problem(o, 0, p, kv);
    return -1;
}

/* A serving batch's inputs packed, FlashAttention's varlen form: q.npy
 * [Tq,H,dk], k.npy [sum Nk,Hkv,dk] and v.npy [sum Nk,Hkv,dv] (a paged
 * batch's pages gathered in order), and the offsets cu_seqlens_q.npy and
 * cu_seqlens_k.npy (int32 [B+1]). */
static int dump_serving(const attn_opts *o, const attn_problem *p, const attn_inputs *in)
{
    const size_t b1 = (size_t)p->batch + 1;
    int32_t *cu = malloc(2 * b1 * sizeof(int32_t));
    long *koff = malloc(b1 * sizeof(long));
    float *k32 = attn_inputs_packed_kv(in, p, false);
    float *v32 = in->v || in->v16 ? attn_inputs_packed_kv(in, p, true) : NULL;
    int rc = ATTN_EXIT_OK;
    if (!cu || !koff || !k32 || ((in->v || in->v16) && !v32))
        rc = attn_error(ATTN_EXIT_TOO_LARGE, "--dump-inputs: out of memory for packed K and V");
    if (rc == ATTN_EXIT_OK) {
        attn_inputs_key_offsets(p, koff);
        if (koff[p->batch] > INT32_MAX || p->ragged->q0[p->batch] > INT32_MAX)
            rc = attn_error(ATTN_EXIT_TOO_LARGE, "--dump-inputs: %ld key tokens are more than "
                            "the int32 offsets of cu_seqlens hold", koff[p->batch]);
        for (size_t b = 0; b < b1; b++) {
            cu[b] = (int32_t)p->ragged->q0[b];
            cu[b1 + b] = (int32_t)koff[b];
        }
    }
    const size_t h = (size_t)p->heads, hkv = (size_t)attn_kv_heads(p);
    const size_t tq = attn_q_tokens(p), tk = rc == ATTN_EXIT_OK ? (size_t)koff[p->batch] : 0;
    const struct { const char *name; const float *x; const int32_t *i; size_t shape[3]; } t[5] = {
        { "q", in->q, NULL, { tq, h, (size_t)p->d_k } },
        { "k", k32, NULL, { tk, hkv, (size_t)p->d_k } },
        { "v", v32, NULL, { tk, hkv, (size_t)p->d_v } },
        { "cu_seqlens_q", NULL, cu, { b1 } },
        { "cu_seqlens_k", NULL, cu + b1, { b1 } },
    };
    for (int i = 0; i < 5 && rc == ATTN_EXIT_OK; i++) {
        char path[4200], why[4400];
        snprintf(path, sizeof(path), "%s/%s.npy", o->dump_inputs, t[i].name);
        if (!t[i].x && !t[i].i)
            continue;   /* no V: it is read from K */
        if (t[i].x ? !attn_npy_write(path, t[i].x, t[i].shape, 3, why, sizeof(why))
                   : !attn_npy_write_i32(path, t[i].i, t[i].shape, 1, why, sizeof(why)))
            rc = attn_error(ATTN_EXIT_ERROR, "--dump-inputs: %s", why);
    }
    attn_host_free(k32);
    attn_host_free(v32);
    free(koff);
    free(cu);
    return rc;
}

int attn_peer_dump_inputs(const attn_opts *o)
{
    attn_problem p;
    attn_shape_buf kv;
    int rc;
    if ((rc = one_case(o, &p, &kv)) >= 0)
        return rc;
    attn_setup s = o->setup;
    s.check_rows = 1;   /* the reference is not what is wanted here */
    attn_inputs in;
    char why[4400];
    attn_status st = attn_inputs_make(&in, &p, &s, why, sizeof(why));
    if (st != ATTN_OK) {
        attn_shape_buf_free(&kv);
        return attn_error(st == ATTN_EINVAL ? ATTN_EXIT_USAGE : ATTN_EXIT_TOO_LARGE,
                          "--dump-inputs: %s", why);
    }
    if (p.ragged) {
        rc = dump_serving(o, &p, &in);
        attn_inputs_free(&in);
        attn_shape_buf_free(&kv);
        return rc;
    }
    const size_t b = (size_t)p.batch, h = (size_t)p.heads, hkv = (size_t)attn_kv_heads(&p);
    /* K and V held in 16 bits alone (attn_inputs_kv_fp32) are written as
     * the fp32 values they hold; a quantized cache as the fp32 values it
     * reads back (what the backends and the reference compute from), not
     * as the values before quantization. */
    attn_sizes sz;
    attn_problem_sizes(&p, &sz);
    const bool kvq = attn_dtype_quantized(p.kv_dtype);
    float *k32 = kvq    ? attn_inputs_dequantize(&in, &p, false)
                 : in.k ? NULL
                        : attn_inputs_widen(in.k16, sz.k, p.kv_dtype);
    float *v32 = kvq && in.vq     ? attn_inputs_dequantize(&in, &p, true)
                 : in.v || !in.v16 ? NULL
                                   : attn_inputs_widen(in.v16, sz.v, p.kv_dtype);
    const struct { const char *name; const float *x; size_t shape[4]; } t[4] = {
        { "q", in.q, { b, h, (size_t)p.seq_q, (size_t)p.d_k } },
        { "k", k32 ? k32 : in.k, { b, hkv, (size_t)p.seq_kv, (size_t)p.d_k } },
        { "v", v32 ? v32 : in.v, { b, hkv, (size_t)p.seq_kv, (size_t)p.d_v } },
        { "do", in.dout, { b, h, (size_t)p.seq_q, (size_t)p.d_v } },
    };
    rc = ATTN_EXIT_OK;
    if (!t[1].x || ((in.v16 || in.vq) && !t[2].x))
        rc = attn_error(ATTN_EXIT_TOO_LARGE, "--dump-inputs: out of memory for fp32 K and V");
    /* The backward's dO too (do.npy). */
    for (int i = 0; i < (attn_backward(&p) ? 4 : 3) && rc == ATTN_EXIT_OK; i++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s.npy", o->dump_inputs, t[i].name);
        if (!attn_npy_write(path, t[i].x, t[i].shape, 4, why, sizeof(why)))
            rc = attn_error(ATTN_EXIT_ERROR, "--dump-inputs: %s", why);
    }
    attn_host_free(k32);
    attn_host_free(v32);
    attn_inputs_free(&in);
    attn_shape_buf_free(&kv);
    return rc;
}

/* --peer-times FILE: "iterations N", then one "REAL CPU" line of seconds per
 * run for each repetition, then optional "workspace_bytes N", "rss_bytes N"
 * and "budget_hit 1" lines, and for a peer that ran on a GPU "device NAME"
 * (its row's device: no figure against the host CPU's peaks),
 * "device_bytes N" (the device memory it took), "upload_s S" (Q, K, V onto
 * the device) and "download_s S" (O back). */
static int read_times(const char *path, attn_result *r)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return attn_error(ATTN_EXIT_USAGE, "--peer-times %s: %s", path, strerror(errno));
    attn_timing *t = &r->timing;
    char line[256];
    int rc = -1;
    while (rc < 0 && fgets(line, sizeof(line), f)) {
        double a, c;
        unsigned long long n;
        if (sscanf(line, "iterations %llu", &n) == 1 && n > 0) {
            t->iterations = (long)n;
        } else if (sscanf(line, "workspace_bytes %llu", &n) == 1) {
            r->ws_unknown = false;
            r->ws_peak = (size_t)n;
        } else if (sscanf(line, "rss_bytes %llu", &n) == 1) {
            r->rss_known = true;
            r->rss_peak = n;
        } else if (sscanf(line, "budget_hit %llu", &n) == 1) {
            t->budget_hit = n != 0;
        } else if (sscanf(line, "upload_s %lf", &a) == 1 && a >= 0) {
            r->upload_s = a;
        } else if (sscanf(line, "download_s %lf", &a) == 1 && a >= 0) {
            r->download_s = a;
        } else if (sscanf(line, "device_bytes %llu", &n) == 1) {
            r->device_known = true;
            r->device_bytes = n;
        } else if (!strncmp(line, "device ", 7) && line[7] && line[7] != '\n') {
            snprintf(r->device, sizeof(r->device), "%.*s", (int)strcspn(line + 7, "\n"),
                     line + 7);
            r->device_is_cpu = false;
        } else if (sscanf(line, "%lf %lf", &a, &c) == 2 && a > 0 && c >= 0 &&
                   t->reps < ATTN_MAX_REPS) {
            t->real[t->reps] = a;
            t->cpu[t->reps++] = c;
        } else {
            rc = attn_error(ATTN_EXIT_USAGE, "--peer-times %s: cannot read line '%.*s'", path,
                            (int)strcspn(line, "\n"), line);
        }
    }
    fclose(f);
    if (rc < 0 && (!t->reps || !t->iterations))
        rc = attn_error(ATTN_EXIT_USAGE, "--peer-times %s: no 'iterations N' line or no "
                        "repetitions", path);
    if (rc < 0) {
        attn_stats_compute(&t->real_stats, t->real, (size_t)t->reps);
        attn_stats_compute(&t->cpu_stats, t->cpu, (size_t)t->reps);
    }
    return rc;
}

/* path (O, [B,H,Nq,dv]) or, beside it, a gradient (name.npy, of shape want)
 * into g, checked for its shape. */
static int read_output(const char *path, const char *name, const size_t want[4],
                       attn_guarded *g)
{
    char file[4200], why[4400];
    if (name) {
        const char *slash = strrchr(path, '/');
        const int dir = slash ? (int)(slash - path) : 1;
        snprintf(file, sizeof(file), "%.*s/%s.npy", dir, slash ? path : ".", name);
    } else {
        snprintf(file, sizeof(file), "%s", path);
    }
    attn_npy a;
    if (!attn_npy_read(file, &a, why, sizeof(why)))
        return attn_error(ATTN_EXIT_USAGE, "--check-output: %s", why);
    bool same = a.ndim == 4;
    for (int d = 0; same && d < 4; d++)
        same = a.shape[d] == want[d];
    if (!same) {
        char got[160], need[160];
        attn_npy_shape_str(a.shape, a.ndim, got, sizeof(got));
        attn_npy_shape_str(want, 4, need, sizeof(need));
        attn_npy_free(&a);
        return attn_error(ATTN_EXIT_USAGE, "--check-output: %s has shape %s, the case's %s is %s",
                          file, got, name ? name : "O", need);
    }
    int rc = -1;
    if (attn_guarded_alloc(g, a.count) != ATTN_OK)
        rc = attn_error(ATTN_EXIT_TOO_LARGE, "--check-output: out of memory");
    else
        memcpy(g->data, a.data, a.count * sizeof(float));
    attn_npy_free(&a);
    return rc;
}

/* The peer's output against the reference of the same case; for the
 * backward, its dQ, dK, dV too (dq.npy, dk.npy, dv.npy beside O's file). */
static int check(const attn_opts *o, const attn_problem *p, attn_result *r)
{
    const size_t b = (size_t)p->batch, h = (size_t)p->heads, hkv = (size_t)attn_kv_heads(p);
    const size_t nq = (size_t)p->seq_q, nk = (size_t)p->seq_kv, dk = (size_t)p->d_k,
                 dv = (size_t)p->d_v;
    const size_t want[4][4] = { { b, h, nq, dv }, { b, h, nq, dk }, { b, hkv, nk, dk },
                                { b, hkv, nk, dv } };
    static const char *const names[4] = { NULL, "dq", "dk", "dv" };
    attn_guarded out[4] = { { 0 } };
    int rc = -1;
    for (int x = 0; rc < 0 && x < (attn_backward(p) ? 4 : 1); x++)
        rc = read_output(o->check_output, names[x], want[x], &out[x]);
    attn_inputs in;
    char why[4400];
    if (rc < 0 && attn_inputs_make(&in, p, &o->setup, why, sizeof(why)) != ATTN_OK)
        rc = attn_error(ATTN_EXIT_TOO_LARGE, "--check-output: %s", why);
    else if (rc < 0) {
        attn_check_output(&r->check, p, &in.ref, &out[0]);
        if (attn_backward(p))
            attn_check_grads(r->grad, p, &in.ref, in.ref.grads, out + 1);
        attn_case_judge(r);
        r->ref_rows = in.ref.nrows;
        r->ref_total = in.ref.total_rows;
        attn_inputs_free(&in);
    }
    for (int x = 0; x < 4; x++)
        attn_guarded_free(&out[x]);
    return rc;
}

int attn_peer_check(const attn_opts *o, const attn_machine *m)
{
    attn_problem p;
    attn_shape_buf kv;
    int rc;
    if ((rc = one_case(o, &p, &kv)) >= 0)
        return rc;
    /* The peer as the row's backend: its name, softmax attention. */
    const attn_backend peer = { .name = o->peer, .summary = "a peer (scripts/peers)",
                                .kind = ATTN_KIND_SOFTMAX };
    attn_result *r = calloc(1, sizeof(*r));
    if (!r) {
        attn_shape_buf_free(&kv);
        return attn_error(ATTN_EXIT_ERROR, "out of memory");
    }
    attn_case_skip(r, &peer, &p, &o->setup, "scripts/peers", "");
    r->ws_unknown = true;   /* unless --peer-times gives it */
    const char *skip = o->peer_skip;
    if (skip) {
        r->verdict = ATTN_SKIPPED;
        snprintf(r->why, sizeof(r->why), "%s", skip);
    } else if ((rc = check(o, &p, r)) < 0 && attn_verdict_ok(r->verdict) && o->peer_times) {
        rc = read_times(o->peer_times, r);
    }
    const attn_peak *peak = attn_machine_peak(m);
    attn_csv csv = { .fd = -1 };
    char key[512];
    attn_case_key(key, sizeof(key), &peer, &p, &o->setup);
    if (rc < 0 && o->csv && (rc = attn_csv_open(&csv, o->csv, o->resume)) < 0 &&
        !attn_csv_has(&csv, key))
        rc = attn_csv_append(&csv, r, &o->setup, peak);
    attn_csv_close(&csv);
    if (rc < 0) {
        attn_report_row_header(stdout);
        attn_report_row(stdout, r, 0, peak);
        if (r->verdict != ATTN_PASSED)
            attn_report_details(stdout, r, peak);
        rc = r->verdict == ATTN_FAILED ? ATTN_EXIT_FAILED
           : r->verdict == ATTN_SKIPPED ? ATTN_EXIT_NONE_RAN : ATTN_EXIT_OK;
    }
    free(r);
    attn_shape_buf_free(&kv);
    return rc;
}

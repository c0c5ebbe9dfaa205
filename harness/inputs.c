#include <stdio.h>
#include <string.h>

#include "fill.h"
#include "inputs.h"
#include "memory.h"
#include "npy.h"
#include "timer.h"

/* DIR/<name>.npy into x, whose shape must be want [B,H,N,d]. */
static attn_status read_npy(const char *dir, const char *name, const size_t want[4], float *x,
                            char *why, size_t len)
{
    char path[4200], got[160], need[160];
    snprintf(path, sizeof(path), "%s/%s.npy", dir, name);
    attn_npy a;
    if (!attn_npy_read(path, &a, why, len))
        return ATTN_EINVAL;
    bool same = a.ndim == 4;
    for (int d = 0; same && d < 4; d++)
        same = a.shape[d] == want[d];
    if (!same) {
        attn_npy_shape_str(a.shape, a.ndim, got, sizeof(got));
        attn_npy_shape_str(want, 4, need, sizeof(need));
        snprintf(why, len, "%s has shape %s, the case needs %s ([B,H,N,d]: set --batch, "
                 "--heads, --kv-heads, --seq, --seq-kv, --dk, --dv to match)", path, got, need);
        attn_npy_free(&a);
        return ATTN_EINVAL;
    }
    memcpy(x, a.data, a.count * sizeof(float));
    attn_npy_free(&a);
    return ATTN_OK;
}

attn_status attn_inputs_make(attn_inputs *in, const attn_problem *p, const attn_setup *s,
                             char *why, size_t len)
{
    memset(in, 0, sizeof(*in));
    attn_sizes sz;
    if (!attn_problem_sizes(p, &sz)) {
        snprintf(why, len, "its tensors overflow size_t");
        return ATTN_ENOMEM;
    }
    in->q = attn_host_alloc(sz.q * sizeof(float));
    in->k = attn_host_alloc(sz.k * sizeof(float));
    in->v = attn_host_alloc(sz.v * sizeof(float));
    attn_status st = ATTN_OK;
    if (!in->q || !in->k || !in->v) {
        snprintf(why, len, "out of memory for the inputs");
        st = ATTN_ENOMEM;
    } else if (s->inputs) {
        const size_t b = (size_t)p->batch, h = (size_t)p->heads, hkv = (size_t)attn_kv_heads(p);
        const size_t want[3][4] = {
            { b, h, (size_t)p->seq_q, (size_t)p->d_k },
            { b, hkv, (size_t)p->seq_kv, (size_t)p->d_k },
            { b, hkv, (size_t)p->seq_kv, (size_t)p->d_v },
        };
        st = read_npy(s->inputs, "q", want[0], in->q, why, len);
        if (st == ATTN_OK)
            st = read_npy(s->inputs, "k", want[1], in->k, why, len);
        if (st == ATTN_OK)
            st = read_npy(s->inputs, "v", want[2], in->v, why, len);
    } else {
        attn_fill(in->q, sz.q, s->fill, s->seed, ATTN_TENSOR_Q, s->threads);
        attn_fill(in->k, sz.k, s->fill, s->seed, ATTN_TENSOR_K, s->threads);
        attn_fill(in->v, sz.v, s->fill, s->seed, ATTN_TENSOR_V, s->threads);
    }
    if (st == ATTN_OK) {
        const attn_tensors t = attn_inputs_tensors(in);
        const double t0 = attn_now();
        st = attn_ref_compute(&in->ref, p, &t, s->check_rows, s->seed, s->threads);
        in->ref_seconds = attn_now() - t0;
        if (st != ATTN_OK)
            snprintf(why, len, "out of memory for the reference");
    }
    if (st != ATTN_OK) {
        attn_inputs_free(in);
        return st;
    }
    in->made = true;
    return ATTN_OK;
}

void attn_inputs_free(attn_inputs *in)
{
    if (in->made)
        attn_ref_free(&in->ref);
    attn_host_free(in->q);
    attn_host_free(in->k);
    attn_host_free(in->v);
    memset(in, 0, sizeof(*in));
}

bool attn_memory_fits(const attn_problem *p, const attn_setup *s, size_t workspace,
                      bool inputs_held, char *why, size_t len)
{
    attn_sizes sz;
    if (!attn_problem_sizes(p, &sz)) {
        snprintf(why, len, "its tensors overflow size_t (more than 2^64 bytes); choose smaller "
                 "sizes");
        return false;
    }
    const double ref = (double)attn_ref_bytes(p, s->check_rows, s->threads);
    const double held = (double)sz.inputs + ref;
    const double outs = 2.0 * (double)sz.output, ws = (double)workspace;
    const double total = held + outs + ws, fresh = inputs_held ? outs + ws : total;
    const uint64_t avail = attn_mem_available();
    const bool over_max = s->max_mem && total > (double)s->max_mem;
    const bool over_avail = avail && fresh > (double)avail;
    if (!over_max && !over_avail)
        return true;
    char t[32], i[32], o[32], r[32], w[32], l[32];
    attn_format_bytes(t, sizeof(t), over_max ? total : fresh);
    attn_format_bytes(i, sizeof(i), (double)sz.inputs);
    attn_format_bytes(o, sizeof(o), outs);
    attn_format_bytes(r, sizeof(r), ref);
    attn_format_bytes(w, sizeof(w), ws);
    attn_format_bytes(l, sizeof(l), over_max ? (double)s->max_mem : (double)avail);
    if (over_max)
        snprintf(why, len, "needs %s (inputs %s, reference %s, outputs %s, workspace %s), over "
                 "--max-mem %s", t, i, r, o, w, l);
    else
        snprintf(why, len, "needs %s more memory (%sworkspace %s, outputs %s), %s available", t,
                 inputs_held ? "" : "inputs and reference, ", w, o, l);
    return false;
}

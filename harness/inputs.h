/* The one input path: a shape's Q, K and V (the seeded fill, or --inputs
 * .npy files) and the reference computed from them, for attnbench's sweep
 * and the tests alike; and the one memory check of a case. */
#ifndef ATTN_INPUTS_H
#define ATTN_INPUTS_H

#include "problem.h"
#include "reference.h"

typedef struct attn_inputs {
    float *q, *k, *v;       /* attn_host_alloc'ed; fp32, holding the values rounded to
                               the storage types (what the reference reads); k and v
                               NULL where they are held in 16 bits alone
                               (attn_inputs_kv_fp32) */
    uint16_t *q16, *k16, *v16;  /* the 16-bit storage of those that have it, else NULL;
                                   v and v16 NULL when V is read from K (v_from_k) */
    uint8_t *kq, *vq;       /* a quantized cache's K and V (kv_dtype), else NULL; k and v
                               then hold the values before quantization */
    float *kscale, *vscale; /* fp8: [B*Hkv] each K/V head's scale, else NULL */
    float *sinks;           /* [H] sink logits with mods.sinks, else NULL */
    int32_t *pages;         /* a paged serving batch's block tables (backend.h): the
                               pool's pages in a seeded shuffle; else NULL */
    float *dout;            /* the backward's dO [B,H,Nq,dv], else NULL */
    float *q_raw;           /* Q in q8_0 (p->dtype): Q before its rounding, for qref;
                               else NULL */
    attn_ref ref;
    attn_ref_grads grads;   /* the backward's reference (attn_backward(p)) */
    attn_ref qref;          /* a quantized cache, or Q in q8_0: the reference on Q, K
                               and V before quantization (the same rows as ref), whose
                               distance to a backend's output is the quantization error */
    double ref_seconds;     /* wall time of the reference */
    bool made;
} attn_inputs;

/* Q, K, V for p (and dO for the backward), read from s->inputs (DIR/q.npy,
 * k.npy, v.npy, do.npy, their shapes checked against p; a serving batch's
 * packed [T,H,d], with DIR/cu_seqlens_q.npy and cu_seqlens_k.npy checked
 * against its lengths where they are there) or filled from s->fill and
 * s->seed, rounded once to their storage types (p->dtype, p->kv_dtype),
 * then the reference from the rounded values with s->check_rows.
 * ATTN_EINVAL (why names the file and what is wrong) or ATTN_ENOMEM (why
 * says for what); nothing is left allocated on failure. */
attn_status attn_inputs_make(attn_inputs *in, const attn_problem *p, const attn_setup *s,
                             char *why, size_t len);
void attn_inputs_free(attn_inputs *in);

/* Whether the harness holds K and V in fp32 beside their storage: always
 * for fp32 storage; with 16-bit K and V only for the backward, whose
 * reference reads fp32 (reference_grad.c). The forward's reference reads
 * 16-bit K and V as they are stored, so a decoding cache of 8 GiB in bf16
 * is not held again as 16 GiB of fp32 copies. A quantized cache keeps
 * K and V as they were before quantization (unrounded), for the reference
 * of its quantization error. */
static inline bool attn_inputs_kv_fp32(const attn_problem *p)
{
    return p->kv_dtype == ATTN_DTYPE_FP32 || attn_backward(p) || attn_dtype_quantized(p->kv_dtype);
}

/* n values of 16-bit storage dt as a new fp32 array (attn_host_alloc'ed;
 * NULL when out of memory): K and V where the harness holds them in 16
 * bits alone, for --dump-inputs. */
float *attn_inputs_widen(const uint16_t *h, size_t n, attn_dtype dt);

/* A quantized cache's K (or V: v) read back as a new fp32 array [B,Hkv,Nk,d]
 * (attn_host_alloc'ed; NULL when out of memory): the values the backends
 * and the reference compute from, for --dump-inputs. */
float *attn_inputs_dequantize(const attn_inputs *in, const attn_problem *p, bool v);

/* A serving batch's key offsets as its packed files hold them (the
 * cu_seqlens_k of FlashAttention's varlen layout), into off[batch + 1]:
 * off[b] the keys of the items before b. The same as k0 with K/V packed;
 * a paged batch's k0 counts entries of the block tables instead. */
static inline void attn_inputs_key_offsets(const attn_problem *p, long *off)
{
    off[0] = 0;
    for (int b = 0; b < p->batch; b++)
        off[b + 1] = off[b] + p->ragged->nk[b];
}

/* A serving batch's K (or V: v) as a new fp32 array packed [sum Nk, Hkv, d]
 * (attn_host_alloc'ed; NULL when out of memory), gathered through the
 * block tables of a paged batch, widened from 16 bits, a quantized cache
 * read back: what --dump-inputs writes and --inputs reads. */
float *attn_inputs_packed_kv(const attn_inputs *in, const attn_problem *p, bool v);

/* DIR/<name>.npy into x (its float values), its shape checked against
 * want[0..ndim) (4: [B,H,N,d]; 3: a serving batch's packed [T,H,d]),
 * stored as dt (uint16 files are bf16 bits, for bf16 storage only).
 * ATTN_EINVAL with why naming the file. */
attn_status attn_inputs_read_npy(const char *dir, const char *name, const size_t *want,
                                 int ndim, float *x, attn_dtype dt, char *why, size_t len);

/* Bytes the harness holds for p's inputs: the fp32 values (K and V only
 * where attn_inputs_kv_fp32), and the 16-bit storage of those that have
 * one. */
size_t attn_inputs_bytes(const attn_problem *p, const attn_sizes *sz);

/* The view of in the reference reads (fp32, 16-bit and quantized all set,
 * but k and v only where they are held in fp32; o unset); with a quantized
 * cache the reference reads kq and vq, and k and v are the values before
 * quantization;
 * a case hands a backend only each input's storage (harness/case.c). */
static inline attn_tensors attn_inputs_tensors(const attn_inputs *in)
{
    /* Latent attention reads V from K's rows (backend.h). */
    const bool vk = !in->v && !in->v16;
    return (attn_tensors){ .q = in->q, .k = in->k, .v = vk ? in->k : in->v,
                           .q16 = in->q16, .k16 = in->k16, .v16 = vk ? in->k16 : in->v16,
                           .kq = in->kq, .vq = vk ? in->kq : in->vq, .kscale = in->kscale,
                           .vscale = vk ? in->kscale : in->vscale,
                           .sinks = in->sinks, .pages = in->pages, .dout = in->dout };
}

/* The view a backend is handed, from the reference's (attn_inputs_tensors):
 * each input in its storage type only (backend.h); o unset. */
static inline attn_tensors attn_inputs_stored(const attn_tensors *in, const attn_problem *p)
{
    const bool kvq = attn_dtype_quantized(p->kv_dtype);
    const bool q16 = attn_dtype_half(p->dtype), kv16 = p->kv_dtype != ATTN_DTYPE_FP32 && !kvq;
    const bool lower = kv16 || kvq;   /* K and V not handed in fp32 */
    return (attn_tensors){ .q = q16 ? NULL : in->q, .k = lower ? NULL : in->k,
                           .v = lower ? NULL : in->v, .q16 = q16 ? in->q16 : NULL,
                           .k16 = kv16 ? in->k16 : NULL, .v16 = kv16 ? in->v16 : NULL,
                           .kq = kvq ? in->kq : NULL, .vq = kvq ? in->vq : NULL,
                           .kscale = kvq ? in->kscale : NULL, .vscale = kvq ? in->vscale : NULL,
                           .sinks = p->mods.sinks ? in->sinks : NULL, .pages = in->pages };
}

/* The one memory check. A case of p holds its inputs, the reference, two
 * output buffers and `workspace` bytes of the backend; all of it must stay
 * within --max-mem, and what is not yet allocated (everything, or with
 * inputs_held only the outputs and the workspace) within MemAvailable.
 * false with why giving the numbers (and "overflows" when p's tensors
 * overflow size_t). */
bool attn_memory_fits(const attn_problem *p, const attn_setup *s, size_t workspace,
                      bool inputs_held, char *why, size_t len);

#endif

/* The entry points of decoding's kernels on K or V rows in their storage
 * (rows_of.h), the same for every SIMD ISA: included once by an ISA's
 * kernel file, after it defines ROWS_ISA (its suffix: avx2, avx512) and
 *   qk_rows_any(st, ss, rows_of k, q, qs, nk, nq, dk, pf, ST)
 *   pv_any(o, os, pt, ps, rows_of v, alpha, nq, nk, dv, pf, ST, TR)
 *   fp8_nan_row(row, d)      whether bytes [0, d) hold an e4m3 NaN code
 *   fp8_nan_rows(x, stride, rows, d)  whether any of rows rows does
 *   fp8_nan_bits(row, c, d)  those codes among bytes [c, c + FP8_NAN_SPAN),
 *                            one bit each (none past d), as a uint64_t
 * as inlined templates. It defines qk_rows_ISA, qk_rows16_ISA,
 * qk_rows_q_ISA, pv16_ISA and pv_q_ISA (kernels.h has their contracts);
 * with ROWS_PART_QK defined the first three alone, with ROWS_PART_PV the
 * last two (a file for each half: kernels_avx512_rows.h says why). */
#ifndef ROWS_ISA
#error "rows_entry.h: define ROWS_ISA first"
#endif

#define ROWS_CAT2(a, b) a##_##b
#define ROWS_CAT(a, b) ROWS_CAT2(a, b)
#define ROWS_FN(name) ROWS_CAT(name, ROWS_ISA)

#ifndef ROWS_PART_PV
static decl_qk_rows_fn(ROWS_FN(qk_rows))
{
    qk_rows_any(st, st_stride, (rows_of){ .f = k, .stride = k_stride }, q, q_stride, nk, nq, dk,
                pf, ST_F32);
}

static decl_qk_rows16_fn(ROWS_FN(qk_rows16))
{
    const rows_of kr = { .h = k, .stride = k_stride };
    if (bf16)
        qk_rows_any(st, st_stride, kr, q, q_stride, nk, nq, dk, pf, ST_BF16);
    else
        qk_rows_any(st, st_stride, kr, q, q_stride, nk, nq, dk, pf, ST_F16);
}

/* Each format's instances in a function of its own, so that one format's
 * code is compiled (and laid out) the same whatever the others add. */
typedef void qk_rows_q_inst(float *restrict, ptrdiff_t, rows_of, const float *restrict, ptrdiff_t,
                            int, int, int, ptrdiff_t);
#define QK_ROWS_Q(NAME, ST)                                                                  \
    static __attribute__((noinline)) void NAME(float *restrict st, ptrdiff_t ss, rows_of k,  \
                                               const float *restrict q, ptrdiff_t qs, int nk, \
                                               int nq, int dk, ptrdiff_t pf)                  \
    {                                                                                        \
        qk_rows_any(st, ss, k, q, qs, nk, nq, dk, pf, ST);                                   \
    }
QK_ROWS_Q(qk_rows_q8_0, ST_Q8_0)
QK_ROWS_Q(qk_rows_q4_0, ST_Q4_0)
QK_ROWS_Q(qk_rows_e4m3, ST_E4M3)
QK_ROWS_Q(qk_rows_e5m2, ST_E5M2)

static decl_qk_rows_q_fn(ROWS_FN(qk_rows_q))
{
    const rows_of kr = { .q = k, .stride = k_stride, .scale = scale };
    qk_rows_q_inst *f = fmt == ATTN_KVQ_Q8_0      ? qk_rows_q8_0
                        : fmt == ATTN_KVQ_Q4_0    ? qk_rows_q4_0
                        : fmt == ATTN_KVQ_FP8E5M2 ? qk_rows_e5m2
                                                  : qk_rows_e4m3;
    f(st, st_stride, kr, q, q_stride, nk, nq, dk, pf);
    if (fmt != ATTN_KVQ_FP8E4M3)
        return;
    /* e4m3 was read back without its NaN blend (three instructions per
     * vector); a key whose row holds a NaN code has every score NaN (q
     * times NaN is NaN, whatever q), so those rows are set after, from a
     * search of the rows the kernel has just brought into cache (one
     * compare per vector of bytes; before the kernel, the same search
     * waited on memory: a fifth of the run on the Zen 5 EPYC), first all
     * of them at once. */
    if (!fp8_nan_rows(k, k_stride, nk, dk))
        return;
    for (int j = 0; j < nk; j++)
        if (fp8_nan_row(k + j * k_stride, dk))
            for (int i = 0; i < nq; i++)
                st[j * st_stride + i] = NAN;
}

#endif

#ifndef ROWS_PART_QK
static decl_pv16_fn(ROWS_FN(pv16))
{
    const rows_of vr = { .h = v, .stride = v_stride };
    if (bf16)
        pv_any(o, o_stride, pt, pt_stride, vr, alpha, nq, nk, dv, pf, ST_BF16, 0);
    else
        pv_any(o, o_stride, pt, pt_stride, vr, alpha, nq, nk, dv, pf, ST_F16, 0);
}

typedef void pv_q_inst(float *restrict, ptrdiff_t, const float *restrict, ptrdiff_t, rows_of,
                       const float *restrict, int, int, int, ptrdiff_t);
#define PV_Q(NAME, ST)                                                                        \
    static __attribute__((noinline)) void NAME(float *restrict o, ptrdiff_t os,                \
                                               const float *restrict pt, ptrdiff_t ps,          \
                                               rows_of v, const float *restrict alpha, int nq,  \
                                               int nk, int dv, ptrdiff_t pf)                    \
    {                                                                                          \
        pv_any(o, os, pt, ps, v, alpha, nq, nk, dv, pf, ST, 0);                                \
    }
PV_Q(pv_q8_0, ST_Q8_0)
PV_Q(pv_q4_0, ST_Q4_0)
PV_Q(pv_e4m3, ST_E4M3)
PV_Q(pv_e5m2, ST_E5M2)

static decl_pv_q_fn(ROWS_FN(pv_q))
{
    const rows_of vr = { .q = v, .stride = v_stride, .scale = scale };
    pv_q_inst *f = fmt == ATTN_KVQ_Q8_0      ? pv_q8_0
                   : fmt == ATTN_KVQ_Q4_0    ? pv_q4_0
                   : fmt == ATTN_KVQ_FP8E5M2 ? pv_e5m2
                                             : pv_e4m3;
    f(o, o_stride, pt, pt_stride, vr, alpha, nq, nk, dv, pf);
    if (fmt != ATTN_KVQ_FP8E4M3)
        return;
    /* As qk_rows_q: a NaN code in column c of any row makes column c of
     * every output row NaN (a weight times NaN is NaN, 0 included). */
    if (!fp8_nan_rows(v, v_stride, nk, dv))
        return;
    for (int c = 0; c < dv; c += FP8_NAN_SPAN) {
        uint64_t m = 0;
        for (int j = 0; j < nk; j++)
            m |= fp8_nan_bits(v + j * v_stride, c, dv);
        for (; m; m &= m - 1)
            for (int r = 0; r < nq; r++)
                o[r * o_stride + c + __builtin_ctzll(m)] = NAN;
    }
}
#endif

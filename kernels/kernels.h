/* The micro-kernels of the fused (tiled) attention, one macro-declared
 * signature each, in a portable C version and in AVX2 and AVX-512 versions
 * chosen at run time from the CPU's flags (the ISA is the suffix of the name).
 *
 * The tile layout is transposed on purpose: a score tile S^T holds keys as
 * rows and queries as columns, so that
 *   - Q.K^T is a register-blocked outer product of rows of K (broadcast, read
 *     in place) and rows of the packed Q^T (vector loads), with no K packing;
 *   - the online-softmax statistics of a query (running max m, sum l) live in
 *     one vector lane: column max and column sum are vertical operations;
 *   - P.V broadcasts P^T[j][i] (queries of one key are contiguous) against
 *     rows of V read in place.
 * Scores are in log2 units (Q is pre-scaled by scale*log2(e)), so the softmax
 * uses exp2. Every kernel handles any tail size itself and touches nothing
 * outside the nq x nk (or nq x dv) region it is given. */
#ifndef ATTN_KERNELS_H
#define ATTN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "quant.h"

/* S^T[j][i] = sum_c k[j][c] * qt[c][i]  for j < nk, i < nq.
 * pf (here and in pv, pv16, pv_q and the qk_rows kernels) != 0: the rows of
 * K (V) stream from memory once, as decoding's do, and the row to fetch
 * while reading each row is pf bytes from it (any sign: the caller knows
 * where the keys ahead are, at the rows' stride or in another page);
 * kernels that prefetch (attn_kernels.prefetches) fetch it, a line at a
 * time among their arithmetic. It changes no result. */
#define decl_qk_fn(name) void (name)(float *restrict st, ptrdiff_t st_stride, \
    const float *restrict k, ptrdiff_t k_stride, const float *restrict qt, ptrdiff_t qt_stride, \
    int nk, int nq, int dk, ptrdiff_t pf)

/* qk on K's rows stored in bf16 (uint16_t bits), read in place: the scores
 * qk gives on those rows widened by cvt_rows, bit for bit (each value
 * widened exactly, the same products summed in the same order). For
 * decoding's outer-product tiles (13 to 16 columns, multi-query), whose
 * widened K otherwise passes through L1 once more. */
#define decl_qk_kbf16_fn(name) void (name)(float *restrict st, ptrdiff_t st_stride, \
    const uint16_t *restrict k, ptrdiff_t k_stride, const float *restrict qt, \
    ptrdiff_t qt_stride, int nk, int nq, int dk, ptrdiff_t pf)

/* The same scores from the rows of Q, not transposed: q[i][c], i < nq. For
 * tiles of a few queries (decoding), where qk, vectorized over queries,
 * would leave most lanes empty: here each score is a dot product along d,
 * vectorized over d, and K streams through in whole rows. */
#define decl_qk_rows_fn(name) void (name)(float *restrict st, ptrdiff_t st_stride, \
    const float *restrict k, ptrdiff_t k_stride, const float *restrict q, ptrdiff_t q_stride, \
    int nk, int nq, int dk, ptrdiff_t pf)

/* The packed Q^T of the tiled backend: qt[c][i] = scale * q[i][c] for
 * i < nq, c < dk. A transpose: each query row lands in one column. */
#define decl_pack_qt_fn(name) void (name)(float *restrict qt, ptrdiff_t qt_stride, \
    const float *restrict q, ptrdiff_t q_stride, int nq, int dk, float scale)

/* One online-softmax step over a tile of log2-scaled scores S^T (nk keys x nq
 * queries). Key j is visible to query i iff end == NULL or j < end[i]. Per query:
 *   mx = max of its visible scores; m' = max(m, mx);
 *   alpha = exp2(m - m') (0 while nothing was visible yet);
 *   S^T[j][i] <- exp2(S^T[j][i] - m') where visible, else 0;
 *   l <- l*alpha + sum_j S^T[j][i];  m <- m'.
 * A query that has seen no visible key keeps m = -inf and l = 0. */
#define decl_softmax_fn(name) void (name)(float *restrict st, ptrdiff_t st_stride, \
    int nk, int nq, const int *restrict end, float *restrict m, float *restrict l, \
    float *restrict alpha)

/* Q.K^T with the softmax's exp in its epilogue, against the running max m
 * as it stands (a lazy rescale: m is not raised here). For i < nq, j < nk,
 * with s = sum_c k[j][c] * qt[c][i] as qk computes it:
 *   S^T[j][i] <- exp2(s - m[i]);  mx[i] <- max(mx[i], s);  sum[i] += S^T[j][i]
 * (mx and sum are read, then written). Every m[i] must be finite. A score
 * that is NaN does not raise mx but makes sum NaN. The weights are
 * exp2(s - m) <= 2^t where mx[i] <= m[i] + t: from mx and sum the caller
 * (backends/tiled/keys.c, qk_lazy) keeps them, raises a column's m in
 * place, or computes the tile again through qk and softmax. Where it
 * keeps them, one pass over the scores in registers has replaced qk's
 * stores and softmax's two passes. */
#define decl_qk_exp_fn(name) void (name)(float *restrict st, ptrdiff_t st_stride, \
    const float *restrict k, ptrdiff_t k_stride, const float *restrict qt, ptrdiff_t qt_stride, \
    int nk, int nq, int dk, const float *restrict m, float *restrict mx, float *restrict sum)

/* o[i][c] = alpha[i] * o[i][c] + sum_j pt[j][i] * v[j][c]  for i < nq, c < dv. */
#define decl_pv_fn(name) void (name)(float *restrict o, ptrdiff_t o_stride, \
    const float *restrict pt, ptrdiff_t pt_stride, const float *restrict v, ptrdiff_t v_stride, \
    const float *restrict alpha, int nq, int nk, int dv, ptrdiff_t pf)

/* Row softmax of materialized log2-scaled scores, in place: key j of row r
 * is visible iff j < end[r] (end == NULL: all n). Visible entries become
 * exp2(s - rowmax) / rowsum, the others 0; a row with no visible key becomes
 * all 0. For the backends that hold the whole score matrix. */
#define decl_softmax_rows_fn(name) void (name)(float *restrict s, ptrdiff_t stride, \
    int rows, int n, const int *restrict end)

/* y[i] = 2^x[i]: the exp the softmax kernel uses, exposed so that its accuracy
 * can be measured. x <= 0 is the range that matters (max-subtracted scores). */
#define decl_exp2_fn(name) void (name)(float *restrict y, const float *restrict x, int n)

/* 16-bit storage. Rows of bf16 or fp16 values (uint16_t bits) widened to
 * fp32, exactly: dst[r][c] = src[r][c] for r < rows, c < cols. The tiled
 * backend converts each K/V tile and each block of Q once, then runs the
 * fp32 kernels: its path for fp16, and for bf16 where the CPU has no bf16
 * dot product. pf: as the decoding kernels' (qk_rows), the bytes from a
 * row to the one to prefetch (0: none); kernels that prefetch fetch that
 * row a line at a time as they widen this one. */
#define decl_cvt_rows_fn(name) void (name)(float *restrict dst, ptrdiff_t dst_stride, \
    const uint16_t *restrict src, ptrdiff_t src_stride, int rows, int cols, int bf16, \
    ptrdiff_t pf)

/* Quantized storage (kernels/quant.h): rows of format fmt, src_stride
 * bytes apart, read back to fp32 as attn_kvq_dequantize_row reads them,
 * exactly: dst[r][c] for r < rows, c < cols (a multiple of ATTN_QBLOCK for
 * the block formats); scale is fp8's. The tiled backend reads each K/V tile
 * of a quantized cache back this way, one tile at a time, into L1 (the
 * cache itself is never expanded). pf: cvt_rows's. */
#define decl_dequant_rows_fn(name) void (name)(float *restrict dst, ptrdiff_t dst_stride, \
    const uint8_t *restrict src, ptrdiff_t src_stride, int rows, int cols, attn_kvq fmt, \
    float scale, ptrdiff_t pf)

/* qk_rows and pv with K or V in 16-bit storage (bf16 != 0: bf16, else
 * fp16), each value widened to fp32 as it is loaded, the arithmetic that
 * of the fp32 kernels: for decoding, where K and V stream from memory once
 * and half the bytes is what 16 bits buys. */
#define decl_qk_rows16_fn(name) void (name)(float *restrict st, ptrdiff_t st_stride, \
    const uint16_t *restrict k, ptrdiff_t k_stride, const float *restrict q, \
    ptrdiff_t q_stride, int nk, int nq, int dk, int bf16, ptrdiff_t pf)
#define decl_pv16_fn(name) void (name)(float *restrict o, ptrdiff_t o_stride, \
    const float *restrict pt, ptrdiff_t pt_stride, const uint16_t *restrict v, \
    ptrdiff_t v_stride, const float *restrict alpha, int nq, int nk, int dv, int bf16, ptrdiff_t pf)

/* The same with K or V a quantized cache (quant.h): rows of format fmt,
 * k_stride (v_stride) bytes apart, each value read back to fp32 in
 * registers as the definition reads it (dequant_rows), then the arithmetic
 * of the fp32 kernels; scale is fp8's. Decoding reads the cache once, at
 * its stored width, and never writes it out in fp32. */
#define decl_qk_rows_q_fn(name) void (name)(float *restrict st, ptrdiff_t st_stride, \
    const uint8_t *restrict k, ptrdiff_t k_stride, const float *restrict q, \
    ptrdiff_t q_stride, int nk, int nq, int dk, attn_kvq fmt, float scale, ptrdiff_t pf)
#define decl_pv_q_fn(name) void (name)(float *restrict o, ptrdiff_t o_stride, \
    const float *restrict pt, ptrdiff_t pt_stride, const uint8_t *restrict v, \
    ptrdiff_t v_stride, const float *restrict alpha, int nq, int nk, int dv, attn_kvq fmt, \
    float scale, ptrdiff_t pf)

/* Decoding's scores with Q itself in q8_0 (--dtype q8_0: Q's values are
 * those of its q8_0 blocks) and K a q8_0 or q4_0 cache (fmt): block by
 * block along d, the integer sum of the 32 products of the two blocks'
 * integers (exact), times the two fp16 scales, the blocks' terms summed in
 * fp32, then times scale:
 *   S^T[j][i] = scale * sum_b (dq_ib dk_jb) sum_{c in b} nq_ic nk_jc
 * for j < nk, i < nq; q holds nq rows of q8_0 blocks, q_stride bytes apart
 * (dk a multiple of 32). llama.cpp's vec_dot of q8_0 and q4_0 rounds Q to
 * q8_0 and computes this; with AVX512_VNNI one vpdpbusd does 64 products
 * (kernels_avx512_vnni.c). */
#define decl_qk_rows_i8_fn(name) void (name)(float *restrict st, ptrdiff_t st_stride, \
    const uint8_t *restrict k, ptrdiff_t k_stride, const uint8_t *restrict q, \
    ptrdiff_t q_stride, int nk, int nq, int dk, attn_kvq fmt, float scale, ptrdiff_t pf)

/* bf16 with dot products of pairs (AVX512_BF16's vdpbf16ps: per fp32 lane,
 * acc + a0*b0 + a1*b1, the products exact, the sums in fp32). The operands
 * are pairs of bf16 along the reduction, packed into 32-bit words (low
 * half first); a pair past an odd end holds 0.
 *
 * pack_qt_bf16: qt[c2][i] = (q[i][2 c2], q[i][2 c2 + 1]) for i < nq,
 * c2 < ceil(dk / 2): Q's rows as columns of pairs, unscaled (a scale
 * rounded to bf16 would cost accuracy; qk_bf16 scales its fp32 sums). */
#define decl_pack_qt_bf16_fn(name) void (name)(uint32_t *restrict qt, ptrdiff_t qt_stride, \
    const uint16_t *restrict q, ptrdiff_t q_stride, int nq, int dk)

/* S^T[j][i] = scale * sum_c k[j][c] * q[i][c] for j < nk, i < nq: K's bf16
 * rows read in place (k_stride in elements), Q packed by pack_qt_bf16. */
#define decl_qk_bf16_fn(name) void (name)(float *restrict st, ptrdiff_t st_stride, \
    const uint16_t *restrict k, ptrdiff_t k_stride, const uint32_t *restrict qt, \
    ptrdiff_t qt_stride, int nk, int nq, int dk, float scale)

/* The scores of qk_rows (decoding tiles of a few queries) from bf16 K and
 * Q rows, both unscaled, as dot products of pairs along d:
 * S^T[j][i] = scale * sum_c k[j][c] * q[i][c] for j < nk, i < nq. */
#define decl_qk_rows_bf16_fn(name) void (name)(float *restrict st, ptrdiff_t st_stride, \
    const uint16_t *restrict k, ptrdiff_t k_stride, const uint16_t *restrict q, \
    ptrdiff_t q_stride, int nk, int nq, int dk, float scale, ptrdiff_t pf)

/* pack_v_bf16: vp[j2][c] = (v[2 j2][c], v[2 j2 + 1][c]) for j2 < ceil(nk / 2),
 * c < dv: V's rows interleaved in pairs of keys. pack_p_bf16: the same of
 * fp32 weights P^T [nk][nq], each rounded to bf16 (to nearest even):
 * pp[j2][i] = (bf16(pt[2 j2][i]), bf16(pt[2 j2 + 1][i])). P is rounded to
 * bf16 before P.V, as FlashAttention does; the sums stay fp32. */
#define decl_pack_v_bf16_fn(name) void (name)(uint32_t *restrict vp, ptrdiff_t vp_stride, \
    const uint16_t *restrict v, ptrdiff_t v_stride, int nk, int dv)
#define decl_pack_p_bf16_fn(name) void (name)(uint32_t *restrict pp, ptrdiff_t pp_stride, \
    const float *restrict pt, ptrdiff_t pt_stride, int nk, int nq)

/* o[i][c] = alpha[i] * o[i][c] + sum_j p[j][i] * v[j][c] for i < nq, c < dv,
 * over the ceil(nk / 2) pairs of keys of pp and vp. */
#define decl_pv_bf16_fn(name) void (name)(float *restrict o, ptrdiff_t o_stride, \
    const uint32_t *restrict pp, ptrdiff_t pp_stride, const uint32_t *restrict vp, \
    ptrdiff_t vp_stride, const float *restrict alpha, int nq, int nk, int dv)

/* P.V of decoding's tiles (qk_rows_bf16's, a few columns) on the CPU's
 * bf16 dot products, V's bf16 rows read in place, in pairs of keys: the
 * weights P^T [nk][nq] rounded to bf16 as pack_p_bf16 rounds them, then
 * exactly what pack_p_bf16, pack_v_bf16 and pv_bf16 give on them (an odd
 * nk's last pair adds a weight of 0). P is rounded to bf16 before P.V as
 * FlashAttention rounds it, the sums fp32: half the multiply-adds of pv16,
 * on each pair of keys' products at once. pf: pv16's. */
#define decl_pv_rows_bf16_fn(name) void (name)(float *restrict o, ptrdiff_t o_stride, \
    const float *restrict pt, ptrdiff_t pt_stride, const uint16_t *restrict v, \
    ptrdiff_t v_stride, const float *restrict alpha, int nq, int nk, int dv, ptrdiff_t pf)

/* The score modifiers (backend.h) on a tile of log2-scaled scores S^T (nk
 * keys x nq queries), key j at position j0 + j, in this order:
 *   cap > 0        s <- cap tanh(s / cap)   (cap in log2 units: C log2(e))
 *   slope != NULL  s <- s - slope[i] |pos[i] - (j0 + j)|  (ALiBi; pos[i] = i')
 *   beg != NULL    s <- -inf where j0 + j < beg[i]         (the window's left edge)
 * tanh(y) = sign(y) (1 - e) / (1 + e) with e = 2^(-2 log2(e) |y|) on the
 * exp2 of the softmax: within a few units of fp32 rounding of cap
 * (tests/test_kernels.c measures it), not libm per score. */
#define decl_mods_fn(name) void (name)(float *restrict st, ptrdiff_t st_stride, int nk, \
    int nq, int j0, float cap, const float *restrict slope, const float *restrict pos, \
    const int *restrict beg)

/* The backward (backends/tiled/backward.c). pv_t: P.V with the weights
 * not transposed, p[i][j] for output row i:
 *   o[i][c] = alpha[i] * o[i][c] + sum_j p[i][j] * v[j][c]  for i < nq, c < dv
 * (dQ = dS K from a query-major dS). */
#define decl_pv_t_fn(name) void (name)(float *restrict o, ptrdiff_t o_stride, \
    const float *restrict p, ptrdiff_t p_stride, const float *restrict v, ptrdiff_t v_stride, \
    const float *restrict alpha, int nq, int nk, int dv)

/* bwd_ds: the backward's weights and score gradients of a query-major tile:
 * row r < nq is query position i' = pos0 + r, column j < nk key j0 + j; s
 * holds the scores scale log2(e) q.k (log2 units) and dp the products
 * dO.v. Per row, lse[r] is L log2(e), dd[r] is D = dO.O, and the keys
 * [beg[r], end[r]) are visible (beg, end NULL: all of the tile). Each
 * score x takes the modifiers as the mods kernel does (cap > 0 in log2
 * units: x <- cap tanh(x / cap); then x <- x - slope |i' - (j0 + j)|), then
 *   s  <- P  = exp2(x - lse[r])  where visible, else 0
 *   dp <- scale dS' = scale P (dp - dd[r]) (1 - tanh^2 with the cap)  where visible, else 0
 * (dS' as backend.h names it), so that dQ = (scale dS') K and dK = (scale
 * dS')^T Q. tanh as the mods kernel computes it. */
#define decl_bwd_ds_fn(name) void (name)(float *restrict s, float *restrict dp, \
    ptrdiff_t stride, int nq, int nk, int j0, const float *restrict lse, \
    const float *restrict dd, const int *restrict beg, const int *restrict end, float cap, \
    float slope, int pos0, float scale)

typedef decl_pv_t_fn(attn_pv_t_fn);
typedef decl_bwd_ds_fn(attn_bwd_ds_fn);
typedef decl_mods_fn(attn_mods_fn);
typedef decl_qk_fn(attn_qk_fn);
typedef decl_qk_exp_fn(attn_qk_exp_fn);
typedef decl_qk_kbf16_fn(attn_qk_kbf16_fn);
typedef decl_cvt_rows_fn(attn_cvt_rows_fn);
typedef decl_dequant_rows_fn(attn_dequant_rows_fn);
typedef decl_qk_rows16_fn(attn_qk_rows16_fn);
typedef decl_pv16_fn(attn_pv16_fn);
typedef decl_qk_rows_q_fn(attn_qk_rows_q_fn);
typedef decl_pv_q_fn(attn_pv_q_fn);
typedef decl_qk_rows_i8_fn(attn_qk_rows_i8_fn);
typedef decl_pack_qt_bf16_fn(attn_pack_qt_bf16_fn);
typedef decl_qk_bf16_fn(attn_qk_bf16_fn);
typedef decl_qk_rows_bf16_fn(attn_qk_rows_bf16_fn);
typedef decl_pack_v_bf16_fn(attn_pack_v_bf16_fn);
typedef decl_pack_p_bf16_fn(attn_pack_p_bf16_fn);
typedef decl_pv_bf16_fn(attn_pv_bf16_fn);
typedef decl_pv_rows_bf16_fn(attn_pv_rows_bf16_fn);
typedef decl_qk_rows_fn(attn_qk_rows_fn);
typedef decl_pack_qt_fn(attn_pack_qt_fn);
typedef decl_softmax_fn(attn_softmax_fn);
typedef decl_pv_fn(attn_pv_fn);
typedef decl_softmax_rows_fn(attn_softmax_rows_fn);
typedef decl_exp2_fn(attn_exp2_fn);

typedef struct attn_kernels {
    attn_isa isa;
    attn_qk_fn *qk;
    attn_qk_exp_fn *qk_exp;    /* NULL where the ISA has none (AVX2) */
    attn_qk_kbf16_fn *qk_kbf16;
    attn_qk_rows_fn *qk_rows;
    attn_pack_qt_fn *pack_qt;
    attn_softmax_fn *softmax;
    attn_pv_fn *pv;
    attn_softmax_rows_fn *softmax_rows;
    attn_exp2_fn *exp2;
    attn_cvt_rows_fn *cvt_rows;
    attn_dequant_rows_fn *dequant_rows;
    attn_qk_rows16_fn *qk_rows16;
    attn_pv16_fn *pv16;
    attn_qk_rows_q_fn *qk_rows_q;
    attn_pv_q_fn *pv_q;
    attn_qk_rows_i8_fn *qk_rows_i8;
    attn_pack_qt_bf16_fn *pack_qt_bf16;
    attn_qk_bf16_fn *qk_bf16;
    attn_qk_rows_bf16_fn *qk_rows_bf16;
    attn_pack_v_bf16_fn *pack_v_bf16;
    attn_pack_p_bf16_fn *pack_p_bf16;
    attn_pv_bf16_fn *pv_bf16;
    attn_pv_rows_bf16_fn *pv_rows_bf16;
    attn_mods_fn *mods;
    attn_pv_t_fn *pv_t;
    attn_bwd_ds_fn *bwd_ds;
    int prefetches;     /* its qk, pv, pv16, pv_q, the qk_rows kernels, cvt_rows
                           and dequant_rows honor pf: the rows ahead of those
                           they read, a line at a time among their arithmetic
                           (the AVX-512 and AVX2 tables; kernels/rows_of.h,
                           PF_KEYS); where not (C), the
                           tiled backend prefetches each next key tile of
                           decoding */
    int pf_keys;        /* how far ahead decoding prefetches for them (pf): this
                           many keys of fp32 rows, twice as many of 16-bit, four
                           times quantized (0 where they do not prefetch; rows_of.h:
                           PF_KEYS, or PF_KEYS_AMD on AMD's cores; AVX2's own) */
    int dec_keys;       /* the key tile of the tiled backend's narrow decoding
                           tiles (at most 16 columns) on 16-bit and quantized
                           K/V in a dense cache: this many keys; 0: plan.c's
                           rule, the score tile and the rows in half of L1. The
                           AVX-512 table on AMD's cores: 192 (backends/tiled/
                           plan.c has the figures) */
    int fetch_v;        /* the tiled backend requests each narrow decoding tile's
                           V rows towards L1 as Q.K^T starts on it (the AVX2
                           table, where it was measured: backends/tiled/keys.c,
                           fetch_v) */
    int bf16_dot;       /* its bf16 kernels run on the CPU's bf16 dot products
                           (AVX512_BF16); where not, they are C's, the definition,
                           and the tiled backend converts bf16 to fp32 instead */
    int pv_rows;        /* the tiled backend runs decoding's P.V with bf16 Q and K/V
                           through pv_rows_bf16 (P rounded to bf16), not pv16: the
                           AVX-512 table with AVX512_BF16 on AMD's cores
                           (kernels_avx512_bf16.c has the figures) */
    int int8_dot;       /* its qk_rows_i8 runs on the CPU's int8 dot products
                           (AVX512_VNNI); where not, it is C's, the definition */
    int kbf16;          /* the tiled backend runs decoding's outer-product Q.K^T
                           on bf16 K through qk_kbf16, not cvt_rows and qk: the
                           AVX-512 table on AMD's cores (kernels_avx512.c says
                           why); not on Intel's, whose table has its qk_kbf16
                           all the same (tested, forced by attn_tiled_kbf16),
                           nor where qk_kbf16 is C's, the definition (C, AVX2) */
} attn_kernels;

/* "auto", "c", "avx2", "avx512"; and back (ATTN_ISA_COUNT when unknown). */
const char *attn_isa_name(attn_isa isa);
attn_isa attn_isa_from_name(const char *name);

/* Whether this build has kernels for isa and this CPU can run them (AUTO: yes). */
int attn_isa_usable(attn_isa isa);

/* The kernel table of exactly isa (AUTO: the widest usable one); NULL when
 * !attn_isa_usable(isa). */
const attn_kernels *attn_kernels_for(attn_isa isa);

/* The widest usable ISA's table. */
const attn_kernels *attn_kernels_best(void);

/* 2^x = 2^n * 2^f with n = floor(x), f in [0, 1): a relative-error minimax
 * polynomial of degree 6 for 2^f (1.9e-9 in exact arithmetic; evaluated in
 * float, about 1.3 ulp). Every version uses these coefficients and the same
 * reduction, so they differ only by rounding (FMA or not).
 * Below ATTN_EXP2_LO the result is some value in [0, 2^-126] (C: 0; it is
 * far below anything a softmax sum of at least 1 can notice); above
 * ATTN_EXP2_HI it overflows (never reached by max-subtracted scores). */
/* log2(e): scores are scaled by it so that the softmax can use exp2. */
#define ATTN_LOG2E 1.4426950408889634

#define ATTN_EXP2_C0 1.0f
#define ATTN_EXP2_C1 0.693147004f
#define ATTN_EXP2_C2 0.240229830f
#define ATTN_EXP2_C3 0.0554833412f
#define ATTN_EXP2_C4 0.00967884064f
#define ATTN_EXP2_C5 0.00124396884f
#define ATTN_EXP2_C6 0.000217022549f
#define ATTN_EXP2_LO (-126.0f)
#define ATTN_EXP2_HI 127.0f

/* Per-ISA tables, filled by each ISA's file. */
void attn_kernels_init_c(attn_kernels *k);
void attn_kernels_init_avx2(attn_kernels *k);
void attn_kernels_init_avx512(attn_kernels *k);
void attn_kernels_init_avx512_qk_rows(attn_kernels *k);   /* its decoding kernels' */
void attn_kernels_init_avx512_pv_rows(attn_kernels *k);   /* halves (the AVX-512 files) */
void attn_kernels_init_avx512_bf16(attn_kernels *k);   /* + AVX512_BF16 */
void attn_kernels_init_avx512_vnni(attn_kernels *k);   /* + AVX512_VNNI */

/* Whether this build has the AVX512_BF16 kernels and this CPU runs them. */
int attn_cpu_bf16_dot(void);

/* Whether this build has the AVX512_VNNI kernels and this CPU runs them. */
int attn_cpu_int8_dot(void);

/* Whether the CPU is AMD's (CPUID's vendor string "AuthenticAMD"). */
int attn_cpu_amd(void);

#endif

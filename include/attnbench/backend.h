/* attnbench's backend contract, public and versioned (ATTN_ABI_VERSION):
 * what every attention implementation is given, what it must compute, and
 * the verbs the harness drives it with. attnbench's own backends are
 * written against this header, and so is a plugin: a shared library that
 * attnbench loads at run time (--plugin; the end of this file, and
 * docs/writing-a-backend.md). The header is self-contained C11.
 *
 * Tensors are row-major, contiguous, layout [batch][heads][seq][dim]:
 *   Q [B,H,Nq,dk], K [B,Hkv,Nk,dk], V [B,Hkv,Nk,dv], O [B,H,Nq,dv].
 *   O[b,h,i,:] = sum_j softmax_j(scale * <Q[b,h,i,:], K[b,g,j,:]> + M(b,i,j)) * V[b,g,j,:]
 * with g = h / (H / Hkv): grouped-query attention, the convention of
 * FlashAttention and PyTorch's enable_gqa (Hkv = H: multi-head, Hkv = 1:
 * multi-query). Hkv divides H. M is 0 or -inf: causal masks keys
 * j > i + Nk - Nq (aligned bottom-right), padding masks keys j >= kv_len[b].
 * A fully masked row yields zeros.
 *
 * Score modifiers (p->mods; the models of today, each off by default).
 * With i' = i + Nk - Nq and s = scale * <q, k> for query head h of H:
 *   softcap C > 0   s <- C tanh(s / C), first;
 *   alibi           s <- s - m_h |i' - j|, m_h the slopes of attn_alibi_slope;
 *   window L, R     keys outside i' - L <= j <= i' + R are masked, as the
 *                   causal and padding masks are (attn_visible_range);
 *   sinks           a logit sigma_h per query head (t->sinks [H]) joins each
 *                   row's softmax denominator and adds no value:
 *                   O_i = sum_j e^{s_ij} v_j / (e^{sigma_h} + sum_j e^{s_ij});
 *                   a fully masked row still yields zeros;
 *   v_from_k        latent attention: V is the first dv <= dk columns of K,
 *                   stored once: t->v is t->k (v16 is k16), V rows read with
 *                   stride dk (attn_v_stride).
 * A backend names the modifiers it computes in its mods mask; the registry
 * refuses it every other one, with the reason.
 *
 * Storage: Q in p->dtype, K and V in p->kv_dtype, each fp32 (the default),
 * bf16 or fp16; O is always fp32. Whatever the storage, products are
 * accumulated in fp32 (at least); a backend may round intermediates (the
 * scores, P) to the storage type, as FlashAttention rounds P before P.V,
 * and the reduced-precision tolerance classes (docs/correctness.md) allow for
 * exactly that. A backend that computes from 16-bit storage says so in its
 * dtypes mask; the registry refuses every other backend such a problem.
 *
 * The backward (p->pass, --pass). With s_ij the scores after the modifiers,
 * L_i = ln sum_j e^{s_ij} each row's log-sum-exp (-inf for a row that sees
 * no key) and P_ij = e^{s_ij - L_i}, given dO [B,H,Nq,dv] (t->dout, fp32
 * whatever the storage):
 *   dV = P^T dO,  dP = dO V^T,  D_i = sum_c dO_ic O_ic,  dS = P o (dP - D),
 *   dQ = scale dS' K,  dK = scale dS'^T Q,  dS' = dS o ds_ij/ds0_ij
 * where s0 = scale q.k is the score before the modifiers (the softcap's
 * 1 - tanh^2(s0 / C); 1 without it), dK and dV summed over the query heads
 * of each group. A row that sees no key has dQ = 0, a key no query sees
 * dK = dV = 0. Gradients are fp32: dQ [B,H,Nq,dk] (t->dq), dK [B,Hkv,Nk,dk]
 * (t->dk), dV [B,Hkv,Nk,dv] (t->dv), left there by read_grads.
 *   ATTN_PASS_BWD: the backward from the backend's own forward's O and L,
 *     which bind computes into t->o and t->lse (a training step has them
 *     from its forward): run, the timed region, is the backward alone;
 *   ATTN_PASS_FWDBWD: run computes the forward (O and L into t->o and
 *     t->lse) and then the backward.
 * Attention sinks and latent attention have no backward here: the registry
 * refuses them with the reason.
 *
 * A serving batch (p->ragged; NULL: the dense layout above). Batch item b
 * has its own query and key counts, Nq_b = nq[b] and Nk_b = nk[b] (a
 * decode token: Nq_b = 1; a prefill chunk on top of a cached prefix:
 * 1 < Nq_b < Nk_b), and nothing is padded. Tokens are the outer dimension,
 * as in FlashAttention's varlen functions and FlashInfer's NHD layout:
 *   Q [Tq, H, dk], O [Tq, H, dv], Tq = q0[B]: query i of item b is token
 *     q0[b] + i (q0 is cu_seqlens);
 *   K/V packed [Tk, Hkv, d], Tk = k0[B]: key j of item b is token k0[b] + j;
 *   K/V paged (page P > 0): a pool of k0[B] pages [pages][Hkv][P][d], each
 *     K/V head's P keys of a page together (FlashInfer's HND layout, the
 *     head-major blocks of vLLM's cache); item b's key j is slot j % P of
 *     page t->pages[k0[b] + j / P] (its block table: k0[b] is where it
 *     starts in t->pages). The slots of an item's last page past Nk_b hold
 *     no key (the harness fills them with NaN).
 * The masks and modifiers see each item's own lengths: i' = i + Nk_b - Nq_b
 * (causal aligns bottom-right per item, as FlashAttention's varlen does).
 * p->seq_q and p->seq_kv are the largest Nq_b and Nk_b; kv_len is NULL. A
 * backend that runs serving batches names the layouts in its layouts mask;
 * the registry refuses it every other one. */
#ifndef ATTNBENCH_BACKEND_H
#define ATTNBENCH_BACKEND_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum attn_status {
    ATTN_OK = 0,
    ATTN_EUNSUPPORTED,  /* the problem is outside what the backend does: SKIP */
    ATTN_EUNAVAILABLE,  /* not built, or its library or device is missing: SKIP */
    ATTN_ENOMEM,
    ATTN_EINVAL,
    ATTN_EDEVICE,
    ATTN_EINTERNAL,
    ATTN_STATUS_COUNT
} attn_status;


/* Storage types of the inputs. bf16: the upper half of an fp32 (8 bits of
 * precision); fp16: IEEE binary16 (11 bits), both rounded to nearest even.
 * The quantized ones are for K and V (a KV cache): q8_0, q4_0 (blocks of
 * 32 values along d with an fp16 scale each), fp8e4m3 and fp8e5m2 (a byte
 * per value, with an fp32 scale per K/V head); docs/quantized.md defines
 * them. Q may be q8_0 too (llama.cpp rounds Q so for its q8_0 and q4_0 dot
 * products): Q's values are then those of its q8_0 blocks along d_k, handed
 * to the backends in fp32 (t->q), so that quantizing a row of t->q again
 * gives its blocks back exactly (tests/test_quant.c); d_k a multiple of 32.
 * A backend takes it where its dtypes mask names q8_0. */
typedef enum attn_dtype {
    ATTN_DTYPE_FP32 = 0,
    ATTN_DTYPE_BF16,
    ATTN_DTYPE_FP16,
    ATTN_DTYPE_Q8_0,
    ATTN_DTYPE_Q4_0,
    ATTN_DTYPE_FP8E4M3,
    ATTN_DTYPE_FP8E5M2,
    ATTN_DTYPE_COUNT
} attn_dtype;

#define ATTN_DTYPE_BIT(d) (1u << (unsigned)(d))
#define ATTN_DTYPES_QUANTIZED                                                          \
    (ATTN_DTYPE_BIT(ATTN_DTYPE_Q8_0) | ATTN_DTYPE_BIT(ATTN_DTYPE_Q4_0) |              \
     ATTN_DTYPE_BIT(ATTN_DTYPE_FP8E4M3) | ATTN_DTYPE_BIT(ATTN_DTYPE_FP8E5M2))


/* The quantized formats of a K/V cache (how each stores its values:
 * docs/quantized.md), and their row sizes. */
typedef enum attn_kvq {
    ATTN_KVQ_Q8_0 = 0,
    ATTN_KVQ_Q4_0,
    ATTN_KVQ_FP8E4M3,
    ATTN_KVQ_FP8E5M2,
    ATTN_KVQ_COUNT
} attn_kvq;

/* Values per block of the block formats (q8_0, q4_0): n must be a multiple. */
#define ATTN_QBLOCK 32

/* Bytes of a row of n values in format f (n a multiple of ATTN_QBLOCK for
 * the block formats). */
static inline size_t attn_kvq_row_bytes(attn_kvq f, size_t n)
{
    switch (f) {
    case ATTN_KVQ_Q8_0: return n / ATTN_QBLOCK * 34;
    case ATTN_KVQ_Q4_0: return n / ATTN_QBLOCK * 18;
    default: return n;
    }
}

/* Whether f carries a per-K/V-head scale (the fp8 formats). */
static inline int attn_kvq_head_scaled(attn_kvq f)
{
    return f == ATTN_KVQ_FP8E4M3 || f == ATTN_KVQ_FP8E5M2;
}

/* Whether d is a quantized (K/V-only) type, and its format. */
static inline bool attn_dtype_quantized(attn_dtype d)
{
    return d >= ATTN_DTYPE_Q8_0 && d < ATTN_DTYPE_COUNT;
}

static inline attn_kvq attn_dtype_kvq(attn_dtype d)
{
    return (attn_kvq)(d - ATTN_DTYPE_Q8_0);
}

/* Whether d is one of the 16-bit element types (bf16, fp16). */
static inline bool attn_dtype_half(attn_dtype d)
{
    return d == ATTN_DTYPE_BF16 || d == ATTN_DTYPE_FP16;
}

/* Bytes per element of the element types (fp32, bf16, fp16), and of Q in
 * q8_0 (handed over in fp32: 4). */
static inline size_t attn_dtype_size(attn_dtype d)
{
    return attn_dtype_half(d) ? 2 : 4;
}

/* Bytes of a row of n values stored as d (the quantized types: with their
 * scales; fp8's per-head scale not counted). */
static inline size_t attn_dtype_row_bytes(attn_dtype d, size_t n)
{
    return attn_dtype_quantized(d) ? attn_kvq_row_bytes(attn_dtype_kvq(d), n)
                                   : n * attn_dtype_size(d);
}

/* The function a backend computes. The exact kinds are softmax attention
 * under the causal and padding masks, and under a sparsity pattern on top
 * (local, sparse); the others are the linear-time approximations, each with
 * its own definition (docs/backends.md gives every formula). */
typedef enum attn_kind {
    ATTN_KIND_SOFTMAX = 0,   /* the definition above */
    ATTN_KIND_LOCAL,         /* + the window (mods.window): softmax with it, its own code */
    ATTN_KIND_SPARSE,        /* + window, global tokens, random key blocks */
    ATTN_KIND_LINEAR,        /* elu(x)+1 feature map (Katharopoulos et al. 2020) */
    ATTN_KIND_PERFORMER,     /* FAVOR+ positive orthogonal random features */
    ATTN_KIND_LINFORMER,     /* keys and values projected to `proj` rows */
    ATTN_KIND_COUNT
} attn_kind;

/* The knobs of the variants; each kind reads only its own. */
typedef struct attn_variant {
    int globals;         /* sparse: tokens 0..globals-1 see and are seen by all */
    int random_blocks;   /* sparse: random key blocks per query block (0: Longformer) */
    int block;           /* sparse: block size of the random blocks */
    int features;        /* performer: random features m */
    int proj;            /* linformer: projected length p */
    uint64_t seed;       /* sparse, performer, linformer: their random structure */
} attn_variant;

/* The score modifiers (see the top of this file). Zeroed: none. */
typedef struct attn_mods {
    bool window;                 /* keys i' - left <= j <= i' + right only */
    int left, right;             /* the window, each >= 0 */
    float softcap;               /* > 0: s <- softcap tanh(s / softcap); 0: none */
    bool alibi;                  /* s <- s - m_h |i' - j| */
    bool sinks;                  /* a sink logit per query head, t->sinks */
    bool v_from_k;               /* V = K[..., :dv], stored once */
} attn_mods;

enum {
    ATTN_MOD_WINDOW = 1u << 0,
    ATTN_MOD_SOFTCAP = 1u << 1,
    ATTN_MOD_ALIBI = 1u << 2,
    ATTN_MOD_SINKS = 1u << 3,
    ATTN_MOD_V_FROM_K = 1u << 4,
    ATTN_MOD_ALL = (1u << 5) - 1,
};

/* What a case computes (--pass): the forward, the backward (above) from
 * the forward's O and L, or both in one run. */
typedef enum attn_pass {
    ATTN_PASS_FWD = 0,
    ATTN_PASS_BWD,
    ATTN_PASS_FWDBWD,
    ATTN_PASS_COUNT
} attn_pass;

#define ATTN_PASS_BIT(x) (1u << (unsigned)(x))


/* A serving batch's lengths and layout (the top of this file). */
typedef struct attn_ragged {
    const int *nq, *nk;          /* [batch]: each item's queries and keys */
    const long *q0;              /* [batch + 1]: each item's first query token */
    const long *k0;              /* [batch + 1]: packed, its first key token; paged, its
                                    first entry of the block tables (t->pages) */
    int page;                    /* tokens per page; 0: K/V packed */
} attn_ragged;

/* The largest page of a paged batch, in tokens. */
#define ATTN_MAX_PAGE 1024

enum {
    ATTN_LAYOUT_RAGGED = 1u << 0,   /* serving batches with K/V packed */
    ATTN_LAYOUT_PAGED = 1u << 1,    /* serving batches with K/V in pages */
};

typedef struct attn_problem {
    int batch, heads, seq_q, seq_kv, d_k, d_v;
    float scale;
    bool causal;
    const int *kv_len;           /* [batch], each in [0, seq_kv]; NULL: all keys valid */
    attn_kind kind;              /* set from the backend's own kind by the harness */
    attn_variant var;
    int kv_heads;                /* Hkv, dividing heads; 0: = heads. Read it through
                                    attn_kv_heads() */
    attn_dtype dtype;            /* storage of Q (0: fp32) */
    attn_dtype kv_dtype;         /* storage of K and V (0: fp32) */
    attn_mods mods;              /* score modifiers; zeroed: none */
    const char *model;           /* the --model preset it came from, or NULL: a name for
                                    the results only, never read by a backend */
    attn_pass pass;              /* the forward (0), the backward, or both */
    const attn_ragged *ragged;   /* a serving batch, or NULL: the dense layout */
    const char *lens;            /* the --lens spec its lengths were drawn from, or NULL: a
                                    name for the results only, never read by a backend */
} attn_problem;

/* Item b's queries and keys (the problem's own for a dense batch). */
static inline int attn_seq_q_of(const attn_problem *p, int b)
{
    return p->ragged ? p->ragged->nq[b] : p->seq_q;
}

static inline int attn_seq_kv_of(const attn_problem *p, int b)
{
    return p->ragged ? p->ragged->nk[b] : p->seq_kv;
}

/* Query tokens of the batch (rows of Q per query head): B Nq, or Tq. */
static inline size_t attn_q_tokens(const attn_problem *p)
{
    return p->ragged ? (size_t)p->ragged->q0[p->batch] : (size_t)p->batch * (size_t)p->seq_q;
}

/* Key tokens stored (rows of K per K/V head): B Nk, Tk, or the pool's
 * pages times P. */
static inline size_t attn_kv_tokens(const attn_problem *p)
{
    if (!p->ragged)
        return (size_t)p->batch * (size_t)p->seq_kv;
    const size_t n = (size_t)p->ragged->k0[p->batch];
    return p->ragged->page ? n * (size_t)p->ragged->page : n;
}

/* The query rows of the batch (rows of O): B H Nq, or Tq H. */
static inline size_t attn_q_rows(const attn_problem *p)
{
    return attn_q_tokens(p) * (size_t)p->heads;
}

/* Whether p computes gradients (the backward, alone or after the forward). */
static inline bool attn_backward(const attn_problem *p)
{
    return p->pass != ATTN_PASS_FWD;
}

/* The ATTN_MOD_* bits of the modifiers p uses. */
static inline unsigned attn_mods_used(const attn_problem *p)
{
    return (p->mods.window ? ATTN_MOD_WINDOW : 0) | (p->mods.softcap > 0 ? ATTN_MOD_SOFTCAP : 0) |
           (p->mods.alibi ? ATTN_MOD_ALIBI : 0) | (p->mods.sinks ? ATTN_MOD_SINKS : 0) |
           (p->mods.v_from_k ? ATTN_MOD_V_FROM_K : 0);
}


/* The elements between consecutive rows of V: dk when V is read from K. */
static inline int attn_v_stride(const attn_problem *p)
{
    return p->mods.v_from_k ? p->d_k : p->d_v;
}

/* ALiBi's slope of query head h of H (Press et al.; ggml's max_bias 8):
 * with n the largest power of two <= H, m_h = 2^(-8 (h + 1) / n) for
 * h < n, and 2^(-4 (2 (h - n) + 1) / n) for the others (the odd powers of
 * the next power of two's sequence). */
static inline double attn_alibi_slope(int heads, int h)
{
    int n = 1;
    while (n * 2 <= heads)
        n *= 2;
    return h < n ? exp2(-8.0 * (h + 1) / n) : exp2(-4.0 * (2 * (h - n) + 1) / n);
}

/* Each input is given in its storage type only: q, k, v when it is fp32
 * (NULL otherwise), q16, k16, v16 (bf16 or fp16 bits) when it is 16-bit,
 * kq, vq when K and V are quantized: each row of K (V) is
 * attn_dtype_row_bytes(kv_dtype, dk (dv)) bytes, rows in the layout above;
 * with v_from_k, vq is kq and V's rows are the first dv values of K's. */
typedef struct attn_tensors {
    const float *q, *k, *v;
    const uint16_t *q16, *k16, *v16;
    const uint8_t *kq, *vq;
    const float *kscale, *vscale;  /* fp8 K/V: [B*Hkv] the scale of each item's K/V head
                                      (docs/quantized.md), else NULL; with v_from_k vscale
                                      is kscale */
    const float *sinks;          /* [H] sink logits (mods.sinks), else NULL */
    const int32_t *pages;        /* a paged serving batch: the block tables [k0[B]], each
                                    entry a page of the pool; else NULL */
    float *o;                    /* host backends write O here during run (the backward:
                                    the forward's O, written by bind or run) */
    /* The backward (attn_backward(p)), else NULL: */
    const float *dout;           /* dO [B,H,Nq,dv] */
    float *lse;                  /* [B,H,Nq]: the forward's L, written with O */
    float *dq, *dk, *dv;         /* the gradients, written by run */
} attn_tensors;

/* Whether p keeps any input in less than fp32 (16 bits, or quantized). */
static inline bool attn_reduced(const attn_problem *p)
{
    return p->dtype != ATTN_DTYPE_FP32 || p->kv_dtype != ATTN_DTYPE_FP32;
}

/* Every host allocation of a backend goes through this, so the harness
 * knows the exact peak workspace of each case. Blocks are 64-byte aligned. */
typedef struct attn_allocator {
    void *(*alloc)(void *ctx, size_t bytes);   /* NULL on failure */
    void  (*free)(void *ctx, void *ptr);        /* ptr may be NULL */
    void *ctx;
} attn_allocator;

/* The kernels a host backend runs (--isa). */
typedef enum attn_isa {
    ATTN_ISA_AUTO = 0,  /* not an ISA: the widest this CPU runs */
    ATTN_ISA_C,
    ATTN_ISA_AVX2,      /* AVX2 + FMA (+ F16C) */
    ATTN_ISA_AVX512,    /* AVX-512 F, BW, VL, DQ */
    ATTN_ISA_COUNT
} attn_isa;

typedef struct attn_config {
    int threads;                 /* >= 1 */
    const attn_allocator *alloc;
    int tile_q, tile_kv;         /* block sizes for experiments; 0: the backend's choice */
    int tile_sb;                 /* tiled: query blocks sharing each pass over K/V; 0: its
                                    choice */
    int device;                  /* device backends: index in devices(); -1: their choice */
    attn_isa isa;                /* host backends' kernels; ATTN_ISA_AUTO: the widest this
                                    CPU runs (--isa) */
    int splits;                  /* tiled: key chunks per query block (split-KV, --splits);
                                    0: its own choice */
} attn_config;

/* Hkv: the K/V heads of p (kv_heads, or heads when it is 0). Whether it
 * divides heads is attn_backend_supports's first check. */
static inline int attn_kv_heads(const attn_problem *p)
{
    return p->kv_heads != 0 ? p->kv_heads : p->heads;
}

/* Query heads per K/V head: H / Hkv. */
static inline int attn_group(const attn_problem *p)
{
    return p->heads / attn_kv_heads(p);
}

/* The flat K/V head (b * Hkv + g) that query head h of batch item b reads. */
static inline size_t attn_kv_head(const attn_problem *p, int b, int h)
{
    return (size_t)b * (size_t)attn_kv_heads(p) + (size_t)(h / attn_group(p));
}

/* The same from a flat query head bh = b * H + h. */
static inline size_t attn_kv_head_of(const attn_problem *p, size_t bh)
{
    return attn_kv_head(p, (int)(bh / (size_t)p->heads), (int)(bh % (size_t)p->heads));
}

/* The batch item, head and query of row `row` of Q (rows of dk) and O
 * (rows of dv): (b H + h) Nq + i, or a serving batch's (q0[b] + i) H + h. */
static inline void attn_q_where(const attn_problem *p, size_t row, int *b, int *h, int *i)
{
    if (!p->ragged) {
        const size_t bh = row / (size_t)p->seq_q;
        *i = (int)(row % (size_t)p->seq_q);
        *b = (int)(bh / (size_t)p->heads);
        *h = (int)(bh % (size_t)p->heads);
        return;
    }
    const long tok = (long)(row / (size_t)p->heads);
    int lo = 0, hi = p->batch - 1;   /* the last item whose first token is <= tok */
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (p->ragged->q0[mid] <= tok)
            lo = mid;
        else
            hi = mid - 1;
    }
    *b = lo;
    *h = (int)(row % (size_t)p->heads);
    *i = (int)(tok - p->ragged->q0[lo]);
}

/* Row of K (rows of dk; of V, rows of attn_v_stride) holding key j of K/V
 * head g of batch item b; pages: the block tables of a paged batch (t->pages). */
static inline size_t attn_kv_row(const attn_problem *p, const int32_t *pages, int b, int g,
                                 int j)
{
    const size_t hkv = (size_t)(p->kv_heads != 0 ? p->kv_heads : p->heads);
    if (!p->ragged)
        return ((size_t)b * hkv + (size_t)g) * (size_t)p->seq_kv + (size_t)j;
    const attn_ragged *r = p->ragged;
    if (!r->page)
        return ((size_t)r->k0[b] + (size_t)j) * hkv + (size_t)g;
    const size_t page = (size_t)pages[r->k0[b] + j / r->page];
    return (page * hkv + (size_t)g) * (size_t)r->page + (size_t)(j % r->page);
}

/* The masks leave each query row one interval of keys: query i of batch b
 * sees exactly keys [*lo, *hi) (lo == hi: none). Without a window lo is 0
 * and the interval a prefix, [0, attn_visible_end). The one definition of
 * the window: local and sparse read it too. */
static inline void attn_visible_range(const attn_problem *p, int b, int i, int *lo, int *hi)
{
    const long nk = attn_seq_kv_of(p, b);
    long end = p->kv_len ? p->kv_len[b] : nk, beg = 0;
    const long at = (long)i + nk - attn_seq_q_of(p, b);
    if (p->causal && at + 1 < end)
        end = at + 1;
    if (p->mods.window) {
        if (at + p->mods.right + 1 < end)
            end = at + p->mods.right + 1;
        beg = at - p->mods.left > 0 ? at - p->mods.left : 0;
    }
    end = end < 0 ? 0 : end;
    *lo = (int)(beg < end ? beg : end);
    *hi = (int)end;
}

static inline int attn_visible_end(const attn_problem *p, int b, int i)
{
    int lo, hi;
    attn_visible_range(p, b, i, &lo, &hi);
    return hi;
}

static inline void *attn_alloc(const attn_allocator *a, size_t bytes)
{
    return a->alloc(a->ctx, bytes);
}

static inline void attn_free(const attn_allocator *a, void *ptr)
{
    a->free(a->ctx, ptr);
}

/* Scale-out backends (ring): what one rank did in a run, averaged over the
 * runs since bind. */
typedef struct attn_rank_stats {
    double compute_s;      /* computing on the blocks in hand */
    double comm_s;         /* waiting for the next block: communication not hidden */
    uint64_t sent_bytes;   /* bytes it sent to the next rank */
    uint64_t workspace;    /* bytes it allocated: its peak (all of it in prepare) */
} attn_rank_stats;

/* One implementation. The handle (state) is always the first argument.
 * prepare does every allocation and all planning; run is the timed region,
 * repeatable, and allocates nothing; read leaves O in out (a copy for host
 * backends when out != the bound o, a download for device ones).
 * supports is the one answer to "can you run this problem": it names what
 * it refuses (ggml's supports_op). Optional slots may be NULL; the harness
 * calls them only through the attn_backend_* wrappers below. */
typedef struct attn_backend {
    const char *name;
    const char *summary;         /* one line for --list */
    const char *not_built;       /* NULL when compiled in, else why it is not */
    attn_kind kind;              /* the function it computes */
    /* ATTN_DTYPE_BIT()s of the storage types it computes from, beside fp32
     * (0: fp32 only); its supports() may refuse combinations further. */
    unsigned dtypes;
    /* ATTN_MOD_*s of the score modifiers it computes (0: none). */
    unsigned mods;
    /* ATTN_PASS_BIT()s of the passes it computes beside the forward (0: the
     * forward only); with any, read_grads is set. */
    unsigned passes;
    /* ATTN_LAYOUT_*s of the serving batches it runs (0: dense batches only). */
    unsigned layouts;
    attn_status (*probe)(char *why, size_t len);                           /* optional */
    /* Whether it can run p under cfg (cfg->alloc may be NULL here):
     * ATTN_OK, or ATTN_EUNSUPPORTED with why. NULL: every problem of its kind. */
    attn_status (*supports)(const attn_problem *p, const attn_config *cfg, char *why,
                            size_t len);                                  /* optional */
    attn_status (*prepare)(const attn_problem *p, const attn_config *cfg, void **state);
    attn_status (*bind)(void *state, const attn_tensors *t);
    attn_status (*run)(void *state);
    attn_status (*read)(void *state, float *out);
    /* The backward: leaves dQ, dK, dV in the three buffers (a copy for host
     * backends where they are not the bound ones). */
    attn_status (*read_grads)(void *state, float *dq, float *dk, float *dv);   /* optional */
    void        (*release)(void *state);
    /* Predicted peak bytes prepare will take through the allocator. */
    size_t      (*workspace)(const attn_problem *p, const attn_config *cfg);
    /* Device memory the prepared state holds; NULL for host backends. */
    size_t      (*device_bytes)(void *state);                             /* optional */
    /* The library or driver behind the backend, for the run's context. */
    const char *(*version)(void);                                         /* optional */
    /* Device backends. The device the prepared state runs on, one line;
     * is_cpu is set when it is a CPU implementation (no GPU performance). */
    const char *(*device_name)(void *state, bool *is_cpu);                /* optional */
    /* Seconds the device spent on the last run, from its own timestamps;
     * false when it has none (then only wall time is known). */
    bool        (*device_time)(void *state, double *seconds);             /* optional */
    /* Every device it could use, one line each, numbered as --device takes
     * them; returns the length snprintf would. Backends that share a device
     * layer share this function. */
    int         (*devices)(char *buf, size_t len);                        /* optional */
    /* The attention weights of the bound inputs, P [B][H][Nq][Nk] (0 where
     * a key is not visible), computed after bind the way run computes them;
     * for the visualization (--dump-weights), never timed. */
    attn_status (*weights)(void *state, float *out);                      /* optional */
    /* Scale-out backends. The processes it runs on, as attnbench was
     * launched (mpirun -n P). */
    int         (*world)(void);                                           /* optional */
    /* Each rank's figures for the runs since bind, into out[0..max);
     * returns the number of ranks (which may exceed max). */
    int         (*ranks)(void *state, attn_rank_stats *out, int max);     /* optional */
} attn_backend;

/* Plugins. A plugin is a shared library (built with this header alone:
 * `cc -shared -fPIC $(pkg-config --cflags attnbench) mine.c -o libmine.so`)
 * that exports one function, named by ATTN_PLUGIN_ENTRY:
 *
 *   const attn_plugin *attnbench_plugin(void);
 *
 * returning its descriptor, which ATTN_PLUGIN_DESCRIBE fills in. attnbench
 * serves exactly the ABI version it was built with, and compares the sizes
 * of the structures the two sides share as well, so a plugin built against
 * another version of this header is refused with the reason, never
 * misread. abi_version and struct_size stay the first two fields in every
 * version. The ABI version changes whenever any structure, enum or verb of
 * this header does.
 *
 * Its backends are listed and run as "PLUGIN.BACKEND" (name . backend
 * name): a plugin cannot shadow a built-in backend or another plugin's.
 * Both names are letters, digits, '_' and '-'. A plugin allocates its
 * workspace through cfg->alloc like any backend, and calls nothing of
 * attnbench's: everything it may use is in this header. */
#define ATTN_ABI_VERSION 2u
#define ATTN_PLUGIN_ENTRY "attnbench_plugin"

typedef struct attn_plugin {
    uint32_t abi_version;        /* ATTN_ABI_VERSION of the header it was built against */
    uint32_t struct_size;        /* sizeof(attn_plugin) */
    uint32_t backend_size;       /* sizeof(attn_backend), attn_problem, attn_tensors, */
    uint32_t problem_size;       /* attn_config, attn_ragged, attn_allocator: as the */
    uint32_t tensors_size;       /* plugin was compiled */
    uint32_t config_size;
    uint32_t ragged_size;
    uint32_t allocator_size;
    const char *name;            /* the namespace of its backends */
    const char *summary;         /* one line for --list */
    int count;                   /* backends[0..count) */
    const attn_backend *const *backends;
} attn_plugin;

typedef const attn_plugin *attn_plugin_entry(void);

/* The descriptor of a plugin named name, with count backends. */
#define ATTN_PLUGIN_DESCRIBE(name, summary, backends, count)                                 \
    {                                                                                          \
        ATTN_ABI_VERSION, sizeof(attn_plugin), sizeof(attn_backend), sizeof(attn_problem),    \
            sizeof(attn_tensors), sizeof(attn_config), sizeof(attn_ragged),                   \
            sizeof(attn_allocator), (name), (summary), (count), (backends)                    \
    }

#endif

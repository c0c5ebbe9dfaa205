/* A case: the problem (backend contract) plus the harness settings that
 * change what is computed or measured; its sizes, work and repro line. */
#ifndef ATTN_PROBLEM_H
#define ATTN_PROBLEM_H

#include <stdint.h>

#include "backend.h"
#include "timer.h"

typedef enum attn_fill_kind {
    ATTN_FILL_NORMAL = 0,   /* Q, K, V ~ N(0, 1) */
    ATTN_FILL_EXTREME,      /* Q, K integers in [-100, 100] (|logits| up to ~1e4), V ~ N(0, 1) */
    ATTN_FILL_COUNT
} attn_fill_kind;

const char *attn_fill_name(attn_fill_kind f);


typedef struct attn_setup {
    int threads;
    uint64_t seed;
    attn_fill_kind fill;
    long check_rows;        /* rows the reference checks: 0 automatic, -1 all */
    attn_timer_opts timer;  /* timer.reps == 0: check only, no timing */
    uint64_t max_mem;       /* bytes a case may take; 0: no limit beyond MemAvailable */
    int tile_q, tile_kv;    /* --tile; 0: each backend's own choice */
    int tile_sb;            /* --tile's third size; 0: the backend's own choice */
    int splits;             /* --splits: tiled's split-KV chunks; 0: its own choice */
    int device;             /* --device; -1: each device backend's own choice */
    attn_isa isa;           /* --isa: the host backends' kernels; ATTN_ISA_AUTO: the widest */
    bool bw_probe;          /* --bw-probe: a read-only stream beside each case's timing */
    bool fma_probe;         /* --fma-probe: the FMA peak beside each case's timing */
    const char *inputs;        /* --inputs DIR: Q, K, V from .npy files instead of the fill */
    const char *dump_output;   /* --dump-output FILE.npy, or NULL */
    const char *dump_weights;  /* --dump-weights FILE.npy, or NULL */
    size_t fail_alloc;         /* fault injection (ATTN_FAIL_ALLOC=k): each case's tracker
                                  fails its k-th allocation; 0: none */
} attn_setup;

/* Where the inputs came from: the fill's name, or "npy" with --inputs. */
const char *attn_setup_fill_name(const attn_setup *s);

typedef struct attn_sizes {
    size_t q, k, v, o;      /* elements; K and V have Hkv heads */
    size_t rows;            /* B*H*Nq query rows */
    size_t inputs;          /* bytes of Q, K, V at their storage widths */
    size_t kv;              /* bytes of K and V */
    size_t output;          /* bytes of O */
    size_t scores;          /* bytes of the B*H*Nq*Nk fp32 score matrix a materializing
                               implementation would hold */
    size_t dq, dk, dv;      /* elements of the gradients (the backward) */
    size_t grads;           /* their bytes, fp32 */
} attn_sizes;

/* false when a size overflows size_t. */
bool attn_problem_sizes(const attn_problem *p, attn_sizes *s);

/* Floating-point operations of the algorithm p's kind defines: softmax,
 * local, sparse: 2*dk (Q.K) + 2*dv (P.V) per score entry visible under the
 * masks and the pattern; linear, performer: the feature map (performer:
 * 2*m*dk per key and query), S and z over the keys some row sees
 * (2*nf*dv + nf per key) and their use per query (2*nf*dv + 2*nf);
 * linformer: 2*p*(dk+dv) per valid key (E K, F V) and per query (Q K'^T, P V').
 * Exponentials and the causal blocks' extra work are not counted. The
 * backward counts 2.5 times its forward, forward and backward 3.5 times, as
 * FlashAttention's benchmarks do (five products of the forward's size
 * against its two); masked entries are left out of all of them. */
double attn_problem_flops(const attn_problem *p);
/* The same for every score entry, masked or not: the dense-formula count. */
double attn_problem_flops_dense(const attn_problem *p);

/* The bytes any implementation must move at the least, at their storage
 * widths (Q, K, V: p's dtypes; O: fp32): Q and O whole, and of K and V the rows some query of the
 * batch item sees (each K/V head once, however many query heads share it).
 * Decoding is bound by these, not by the FLOPs. The backward (alone or
 * after the forward): Q, O, dO, L and dQ of every query, K and V of the
 * keys some query sees, and all of dK and dV, at their storage widths. */
double attn_problem_bytes(const attn_problem *p);

/* The problem backend be computes on shape p: p with be's kind, so that its
 * variant's knobs (window, features, ...) are part of what names it. The
 * name, key and repro below all see the shape through this. */
attn_problem attn_problem_of(const attn_problem *p, const attn_backend *be);

/* "attn/naive/b:1/h:8/sq:4096/skv:4096/dk:64/dv:64/causal:0", then
 * "/hkv:2" with grouped K/V heads, "/kv:3.5" with padding, "/dtype:bf16" and
 * "/kvdtype:fp16" off fp32 (the second when K/V's differs), "/scale:S" off
 * the default, "/fill:extreme", "/splits:N" and the other settings. */
void attn_case_name(char *buf, size_t len, const attn_backend *be, const attn_problem *p,
                    const attn_setup *s);

/* "B=1 H=8 Hkv=2 Nq=1024 Nk=1024 dk=64 dv=64 causal kv_len=3,5" (Hkv when not H) */
void attn_problem_describe(const attn_problem *p, char *buf, size_t len);

/* The exact command line that reruns this case alone. */
void attn_repro(char *buf, size_t len, const char *prog, const attn_backend *be,
                const attn_problem *p, const attn_setup *s);

/* The identity of a case in a CSV file: the name plus threads and seed. The
 * one key of a case: the CSV writer, the JSON and --resume all build it here. */
void attn_case_key(char *buf, size_t len, const attn_backend *be, const attn_problem *p,
                   const attn_setup *s);

/* Byte counts for people: "264.0 KiB". */
void attn_format_bytes(char *buf, size_t len, double bytes);

#endif

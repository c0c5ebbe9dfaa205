/* One case: one backend on one problem, driven through every verb of the
 * contract, checked against the reference, then timed. */
#ifndef ATTN_CASE_H
#define ATTN_CASE_H

#include "check.h"
#include "peak.h"
#include "problem.h"
#include "reference.h"
#include "timer.h"

typedef enum attn_verdict {
    ATTN_PASSED = 0,
    ATTN_FAILED,     /* the output is wrong, or the backend broke the contract */
    ATTN_SKIPPED,    /* the backend cannot run this case here; why says why */
    ATTN_ERROR,      /* it should have run and could not (library, memory, device, crash) */
    ATTN_TIMEOUT,    /* it outlasted --case-timeout and its process was killed */
    ATTN_MISTRUSTED, /* within tolerance, but the reference is (almost) all zeros (every
                        key masked, say): a kernel writing zeros would pass too */
    ATTN_VERDICT_COUNT
} attn_verdict;

const char *attn_verdict_str(attn_verdict v);

/* Ran within tolerance: its times and memory are meaningful. */
static inline bool attn_verdict_ok(attn_verdict v)
{
    return v == ATTN_PASSED || v == ATTN_MISTRUSTED;
}

/* Ran to the end, right or wrong: its measurements exist. */
static inline bool attn_verdict_ran(attn_verdict v)
{
    return attn_verdict_ok(v) || v == ATTN_FAILED;
}

#define ATTN_RANK_ROWS 64

typedef struct attn_result {
    const attn_backend *be;
    attn_problem p;         /* p.kv_len points at the caller's array */
    attn_verdict verdict;
    char why[384];
    bool checked;
    attn_check check;       /* O */
    attn_check grad[3];     /* the backward (attn_backward(&p)): dQ, dK, dV */
    size_t ref_rows, ref_total;   /* rows the reference checked, of all */
    attn_timing timing;
    size_t ws_predicted;    /* what workspace() said */
    size_t ws_peak;         /* what the tracking allocator saw */
    bool ws_unknown;        /* a peer that measured none (backends always have it) */
    size_t leaked;          /* blocks still live after release (any verdict) */
    size_t alloc_calls;     /* allocation calls the backend made through the tracker */
    bool rss_known;         /* false where the kernel refuses to reset the peak */
    uint64_t rss_peak;      /* peak RSS from prepare to release, above the RSS before it */
    bool device_known;      /* the backend reports device memory */
    uint64_t device_bytes;
    char device[256];       /* device backends: what ran it; empty: the host */
    bool device_is_cpu;     /* a CPU implementation of the device API */
    /* Device backends (device[0] set): wall seconds of bind (the upload of
     * Q, K, V) and of the read after the checked run (the download of O). */
    double upload_s, download_s;
    /* Variant backends: the output against softmax attention on the same
     * inputs (the dense reference's rows): the price of the approximation. */
    bool approx_known;
    double approx_max_abs, approx_nmse;
    /* A quantized K/V cache: the output against the reference on K and V
     * before quantization (the same rows): the price of the format. */
    bool quant_known;
    double quant_max_abs, quant_nmse;
    size_t score_bytes;     /* B*H*Nq*Nk*4: what a materializing implementation holds */
    size_t kv_bytes;        /* K and V: B*Hkv*Nk*(dk+dv) x their element size (4 or 2),
                               smaller by H/Hkv with grouped heads */
    double flops;           /* visible score entries only */
    double flops_dense;     /* every score entry */
    double bytes;           /* the least bytes moved (attn_problem_bytes): for GB/s */
    /* --bw-probe: the read-only stream's GB/s just before and just after
     * the timed runs; 0: not probed. */
    double probe_before, probe_after;
    /* --fma-probe: the FMA peak's GFLOP/s (attn_fma_probe, of the
     * arithmetic the case is held to) just before and just after the timed
     * runs; 0: not probed. */
    double fprobe_before, fprobe_after;
    /* Scale-out backends (ranks > 0): each rank's figures, the first
     * ATTN_RANK_ROWS of them, and the largest of each over all ranks;
     * means over the checked and the timed runs. */
    int ranks;
    attn_rank_stats rank[ATTN_RANK_ROWS];
    attn_rank_stats rank_max;
    /* Its index in the whole sweep's order, and the sweep's case count
     * (--shard runs those with index = I mod N); -1 outside a sweep. */
    long case_index, cases;
    char dump_error[4600];  /* a --dump-output or --dump-weights write that failed; "" */
    char name[256];         /* attn_case_name() */
    char repro[768];
} attn_result;

/* The machine's peaks (attnbench --peak: this host's CPU) where they apply
 * to r's case: NULL for a case a GPU ran, whose peaks attnbench does not
 * measure, so that no %peak, %bw or roofline is quoted against the host's
 * figures. A CPU device (lavapipe) keeps them: it runs on these cores. */
static inline const attn_peak *attn_case_peak(const attn_result *r, const attn_peak *pk)
{
    return r->device[0] && !r->device_is_cpu ? NULL : pk;
}

/* The faster FMA probe beside r's timed runs (--fma-probe); 0: none. */
static inline double attn_case_fprobe(const attn_result *r)
{
    return r->fprobe_before > r->fprobe_after ? r->fprobe_before : r->fprobe_after;
}

/* The peak that applies to r's case: the faster probe beside its timed
 * runs (--fma-probe), else the machine's for its storage types
 * (attn_peak_gflops); once per rank for a scale-out backend (each rank
 * runs on cores of its own, on this machine's kind of CPU). */
static inline double attn_case_peak_gflops(const attn_result *r, const attn_peak *pk)
{
    const double probe = attn_case_fprobe(r);
    return (probe > 0 ? probe : attn_peak_gflops(pk, &r->p)) * (r->ranks > 1 ? r->ranks : 1);
}

/* The bandwidth r's roofline takes: the faster probe beside its timed runs
 * (--bw-probe), else the machine's (attn_peak_bw). */
static inline double attn_case_probe_gbs(const attn_result *r)
{
    return r->probe_before > r->probe_after ? r->probe_before : r->probe_after;
}

static inline double attn_case_bw(const attn_result *r, const attn_peak *pk)
{
    const double probe = attn_case_probe_gbs(r);
    return probe > 0 ? probe : attn_peak_bw(pk);
}

/* The roofline: the time r's case cannot beat on this machine, the longer
 * of its least bytes at the measured bandwidth (attn_case_bw) and its
 * FLOPs at the peak that applies. It ignores the exponentials and the
 * caches (a case whose K and V fit the last-level cache can beat it: over
 * 100%). */
typedef struct attn_roofline {
    double mem_s, fma_s;    /* bytes / bandwidth, flops / peak */
    double s;               /* the larger of the two */
    bool memory_bound;      /* mem_s >= fma_s */
} attn_roofline;

static inline attn_roofline attn_case_roofline(const attn_result *r, const attn_peak *pk)
{
    attn_roofline x;
    x.mem_s = r->bytes / (attn_case_bw(r, pk) * 1e9);
    x.fma_s = r->flops / (attn_case_peak_gflops(r, pk) * 1e9);
    x.memory_bound = x.mem_s >= x.fma_s;
    x.s = x.memory_bound ? x.mem_s : x.fma_s;
    return x;
}

/* The share of its roofline r's median time reaches, in %. */
static inline double attn_case_pct_roofline(const attn_result *r, const attn_peak *pk)
{
    return 100.0 * attn_case_roofline(r, pk).s / r->timing.real_stats.median;
}

/* The verdict of r->check (just filled): FAILED with its why, MISTRUSTED,
 * or PASSED; r->checked is set. */
void attn_case_judge(attn_result *r);

/* A case that never reached the backend: SKIPPED with why, named and with its repro. */
void attn_case_skip(attn_result *r, const attn_backend *be, const attn_problem *p,
                    const attn_setup *s, const char *prog, const char *why);

/* Whether be refuses p under s (unusable, or its supports() says no):
 * true with why, the reason attn_case_run would give its SKIP, so a caller
 * can leave the inputs and their reference unmade. */
bool attn_case_refused(const attn_backend *be, const attn_problem *p, const attn_setup *s,
                       char *why, size_t len);

/* in holds Q, K, V (o unused); ref was computed from them for p. */
void attn_case_run(attn_result *r, const attn_backend *be, const attn_problem *p,
                   const attn_tensors *in, const attn_ref *ref, const attn_setup *s,
                   const char *prog);

#endif

/* Two configurations of one problem, A and B, timed in alternating rounds
 * in one process: a backend against itself with another --tile, --splits,
 * --isa, thread count, prefetch distance (--pf-keys) or K/V layout (--page:
 * the dense cache or a pool of pages, each arm with its own inputs), or
 * two backends. On a machine whose speed drifts
 * with its neighbours' load (a shared VM), runs in separate processes, or
 * one configuration's repetitions after the other's, put the drift between
 * A and B; rounds that alternate (A B, then B A) put it on both. Each arm
 * is checked against the double reference first (a FAILED arm is not
 * timed); whether their outputs are the same bits is printed (not where one
 * arm's cache is dense and the other's paged: the seeded fill gives the
 * two layouts other values). Speed only:
 * attnbench is the tool that reports a case (memory, roofline, CSV).
 *
 *   bench_ab [problem options] [--backend A] [--vs B] [arm options] [--rounds R]
 */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "check.h"
#include "cli.h"
#include "inputs.h"
#include "kernels/kernels.h"
#include "lens.h"
#include "memory.h"
#include "problem.h"
#include "tiled/tiled.h"
#include "timer.h"

#define ROUNDS_MAX 101

typedef struct arm {
    const attn_backend *be;
    attn_problem p;         /* the problem of its kind (attn_problem_of) */
    attn_config cfg;
    attn_tracker tr;
    attn_guarded out;
    void *state;
    bool lazy_off;          /* tiled: the lazy rescale off (attn_tiled_lazy) */
    bool steal_off;         /* tiled: split chunks in runs without stealing
                               (attn_tiled_steal) */
    int kbf16;              /* tiled: bf16 K in place for qk (1), widened (-1), as the
                               kernel table prefers (0; attn_tiled_kbf16) */
    int pv_bf16;            /* tiled: bf16 decoding's P.V on bf16 dot products (1), pv16
                               (-1), as the kernel table prefers (0; attn_tiled_pv_bf16) */
    int pf_keys;            /* tiled: decoding's prefetch distance, fp32 rows (0: the
                               kernel table's; attn_tiled_pf_keys) */
    int page;               /* K/V in a pool of pages of this many tokens (the dense
                               shape as a serving batch, as attnbench --page), 0 dense */
    attn_batch batch;       /* its lengths and block tables' offsets, with page */
    attn_inputs in;         /* its inputs: its own where its layout is its own */
    double t[ROUNDS_MAX];   /* seconds per run, each round */
    long iters;
} arm;

typedef struct ab_opts {
    attn_problem p;
    attn_setup s;
    arm a[2];
    const char *names[2];
    int rounds;
    double min_time;
    bool vs_isa, vs_tile, vs_splits, vs_threads, vs_lazy, vs_steal, vs_kbf16, vs_pv_bf16, vs_pf_keys, vs_page;
} ab_opts;

enum {
    O_BATCH, O_HEADS, O_KV_HEADS, O_SEQ, O_SEQ_KV, O_DK, O_DV, O_CAUSAL, O_DTYPE, O_KV_DTYPE,
    O_FILL, O_SEED, O_BACKEND, O_VS, O_TILE, O_VS_TILE, O_SPLITS, O_VS_SPLITS, O_ISA, O_VS_ISA,
    O_THREADS, O_VS_THREADS, O_LAZY, O_VS_LAZY, O_STEAL, O_VS_STEAL, O_KBF16, O_VS_KBF16, O_PV_BF16, O_VS_PV_BF16, O_PF_KEYS, O_VS_PF_KEYS, O_PAGE, O_VS_PAGE, O_ROUNDS, O_MIN_TIME, O_HELP
};

static const attn_option options[] = {
    { "batch", O_BATCH, ATTN_ARG_REQUIRED },     { "heads", O_HEADS, ATTN_ARG_REQUIRED },
    { "kv-heads", O_KV_HEADS, ATTN_ARG_REQUIRED }, { "seq", O_SEQ, ATTN_ARG_REQUIRED },
    { "seq-kv", O_SEQ_KV, ATTN_ARG_REQUIRED },   { "dk", O_DK, ATTN_ARG_REQUIRED },
    { "dv", O_DV, ATTN_ARG_REQUIRED },           { "causal", O_CAUSAL, ATTN_ARG_NONE },
    { "dtype", O_DTYPE, ATTN_ARG_REQUIRED },     { "kv-dtype", O_KV_DTYPE, ATTN_ARG_REQUIRED },
    { "fill", O_FILL, ATTN_ARG_REQUIRED },       { "seed", O_SEED, ATTN_ARG_REQUIRED },
    { "backend", O_BACKEND, ATTN_ARG_REQUIRED }, { "vs", O_VS, ATTN_ARG_REQUIRED },
    { "tile", O_TILE, ATTN_ARG_REQUIRED },       { "vs-tile", O_VS_TILE, ATTN_ARG_REQUIRED },
    { "splits", O_SPLITS, ATTN_ARG_REQUIRED },   { "vs-splits", O_VS_SPLITS, ATTN_ARG_REQUIRED },
    { "isa", O_ISA, ATTN_ARG_REQUIRED },         { "vs-isa", O_VS_ISA, ATTN_ARG_REQUIRED },
    { "threads", O_THREADS, ATTN_ARG_REQUIRED }, { "vs-threads", O_VS_THREADS, ATTN_ARG_REQUIRED },
    { "lazy", O_LAZY, ATTN_ARG_REQUIRED },       { "vs-lazy", O_VS_LAZY, ATTN_ARG_REQUIRED },
    { "steal", O_STEAL, ATTN_ARG_REQUIRED },     { "vs-steal", O_VS_STEAL, ATTN_ARG_REQUIRED },
    { "kbf16", O_KBF16, ATTN_ARG_REQUIRED },     { "vs-kbf16", O_VS_KBF16, ATTN_ARG_REQUIRED },
    { "pv-bf16", O_PV_BF16, ATTN_ARG_REQUIRED }, { "vs-pv-bf16", O_VS_PV_BF16, ATTN_ARG_REQUIRED },
    { "pf-keys", O_PF_KEYS, ATTN_ARG_REQUIRED }, { "vs-pf-keys", O_VS_PF_KEYS, ATTN_ARG_REQUIRED },
    { "page", O_PAGE, ATTN_ARG_REQUIRED },       { "vs-page", O_VS_PAGE, ATTN_ARG_REQUIRED },
    { "rounds", O_ROUNDS, ATTN_ARG_REQUIRED },   { "min-time", O_MIN_TIME, ATTN_ARG_REQUIRED },
    { "help", O_HELP, ATTN_ARG_NONE },
};

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [options]\n\n"
            "Times A and B in alternating rounds in one process (A B, then B A), after\n"
            "checking each against the double reference; prints each one's median and\n"
            "best, the ratios B/A, and whether their outputs are the same bits.\n\n"
            "problem:  --batch B --heads H --kv-heads G --seq NQ --seq-kv NK --dk D --dv D\n"
            "          --causal --dtype T (fp32, bf16, fp16, q8_0) --kv-dtype T (those and\n"
            "          q4_0, fp8e4m3, fp8e5m2) --fill normal|extreme --seed S\n"
            "          (defaults: 1, 8, H, 1024, NQ, 64, D, no, fp32, T, normal, 1)\n"
            "arm A:    --backend NAME (tiled) --tile BRxBC[xSB] --splits N --isa ISA\n"
            "          --threads T (the CPUs this process may run on) --lazy on|off (tiled's\n"
            "          lazy rescale, on) --steal on|off (tiled: a thread done with its run\n"
            "          of split chunks takes others', on) --kbf16 on|off|auto (tiled:\n"
            "          decoding's bf16 K read in place by qk_kbf16, or widened for qk; auto:\n"
            "          as the kernels prefer) --pv-bf16 on|off|auto (tiled: decoding's P.V\n"
            "          with bf16 Q and K/V on bf16 dot products, P rounded to bf16, or pv16's\n"
            "          fp32 P; auto: as the kernels prefer)\n"
            "          --pf-keys N (tiled: decoding prefetches the K/V rows N fp32 rows\n"
            "          ahead, 2N of 16 bits, 4N quantized; default: as its kernel table says)\n"
            "          --page P (K/V in a pool of pages of P tokens, 1..%d, in a seeded\n"
            "          shuffle, as attnbench --page; 0: the dense cache, the default)\n"
            "arm B:    --vs NAME (A's) --vs-tile --vs-splits --vs-isa --vs-threads --vs-lazy\n"
            "          --vs-steal --vs-kbf16 --vs-pv-bf16 --vs-pf-keys --vs-page (each A's\n"
            "          unless given)\n"
            "timing:   --rounds R (3..%d, default 15) --min-time S (a round's run of each,\n"
            "          default 0.05)\n",
            prog, ATTN_MAX_PAGE, ROUNDS_MAX);
}

static int parse_dtype(const char *name, const char *val, attn_dtype *d, bool kv)
{
    const attn_dtype t = attn_dtype_from_name(val);
    if (t == ATTN_DTYPE_COUNT || (!kv && attn_dtype_quantized(t) && t != ATTN_DTYPE_Q8_0))
        return attn_error(ATTN_EXIT_USAGE, "--%s: '%s' is not a storage type of %s", name, val,
                          kv ? "K and V" : "Q");
    *d = t;
    return -1;
}

static int parse_on_off(const char *name, const char *val, bool *off)
{
    if (strcmp(val, "on") && strcmp(val, "off"))
        return attn_error(ATTN_EXIT_USAGE, "--%s: '%s' is not one of: on, off", name, val);
    *off = !strcmp(val, "off");
    return -1;
}

static int parse_kbf16(const char *name, const char *val, int *mode)
{
    if (strcmp(val, "on") && strcmp(val, "off") && strcmp(val, "auto"))
        return attn_error(ATTN_EXIT_USAGE, "--%s: '%s' is not one of: on, off, auto", name, val);
    *mode = !strcmp(val, "on") ? 1 : !strcmp(val, "off") ? -1 : 0;
    return -1;
}

static int on_option(void *ctx, int id, const char *name, const char *val)
{
    ab_opts *o = ctx;
    attn_problem *p = &o->p;
    attn_config *a = &o->a[0].cfg, *b = &o->a[1].cfg;
    switch (id) {
    case O_BATCH:    return attn_opt_int(name, val, 1, 65536, &p->batch);
    case O_HEADS:    return attn_opt_int(name, val, 1, 4096, &p->heads);
    case O_KV_HEADS: return attn_opt_int(name, val, 1, 4096, &p->kv_heads);
    case O_SEQ:      return attn_opt_int(name, val, 1, 1 << 24, &p->seq_q);
    case O_SEQ_KV:   return attn_opt_int(name, val, 1, 1 << 24, &p->seq_kv);
    case O_DK:       return attn_opt_int(name, val, 1, 4096, &p->d_k);
    case O_DV:       return attn_opt_int(name, val, 1, 4096, &p->d_v);
    case O_CAUSAL:   p->causal = true; return -1;
    case O_DTYPE:    return parse_dtype(name, val, &p->dtype, false);
    case O_KV_DTYPE: return parse_dtype(name, val, &p->kv_dtype, true);
    case O_FILL:
        if (!strcmp(val, "normal") || !strcmp(val, "extreme")) {
            o->s.fill = strcmp(val, "normal") ? ATTN_FILL_EXTREME : ATTN_FILL_NORMAL;
            return -1;
        }
        return attn_error(ATTN_EXIT_USAGE, "--fill: '%s' is not one of: normal, extreme", val);
    case O_SEED:     return attn_opt_seed(name, val, &o->s.seed);
    case O_BACKEND:  o->names[0] = val; return -1;
    case O_VS:       o->names[1] = val; return -1;
    case O_TILE:     return attn_opt_tile(name, val, &a->tile_q, &a->tile_kv, &a->tile_sb);
    case O_VS_TILE:
        o->vs_tile = true;
        return attn_opt_tile(name, val, &b->tile_q, &b->tile_kv, &b->tile_sb);
    case O_SPLITS:   return attn_opt_int(name, val, 1, 1 << 20, &a->splits);
    case O_VS_SPLITS: o->vs_splits = true; return attn_opt_int(name, val, 1, 1 << 20, &b->splits);
    case O_ISA:      return attn_opt_isa(name, val, &a->isa);
    case O_VS_ISA:   o->vs_isa = true; return attn_opt_isa(name, val, &b->isa);
    case O_THREADS:  return attn_opt_int(name, val, 1, 1024, &a->threads);
    case O_VS_THREADS: o->vs_threads = true; return attn_opt_int(name, val, 1, 1024, &b->threads);
    case O_LAZY:     return parse_on_off(name, val, &o->a[0].lazy_off);
    case O_VS_LAZY:  o->vs_lazy = true; return parse_on_off(name, val, &o->a[1].lazy_off);
    case O_STEAL:    return parse_on_off(name, val, &o->a[0].steal_off);
    case O_VS_STEAL: o->vs_steal = true; return parse_on_off(name, val, &o->a[1].steal_off);
    case O_KBF16:    return parse_kbf16(name, val, &o->a[0].kbf16);
    case O_VS_KBF16: o->vs_kbf16 = true; return parse_kbf16(name, val, &o->a[1].kbf16);
    case O_PV_BF16:  return parse_kbf16(name, val, &o->a[0].pv_bf16);
    case O_VS_PV_BF16: o->vs_pv_bf16 = true; return parse_kbf16(name, val, &o->a[1].pv_bf16);
    case O_PF_KEYS:  return attn_opt_int(name, val, 1, 1 << 16, &o->a[0].pf_keys);
    case O_VS_PF_KEYS:
        o->vs_pf_keys = true;
        return attn_opt_int(name, val, 1, 1 << 16, &o->a[1].pf_keys);
    case O_PAGE:     return attn_opt_int(name, val, 0, ATTN_MAX_PAGE, &o->a[0].page);
    case O_VS_PAGE:  o->vs_page = true; return attn_opt_int(name, val, 0, ATTN_MAX_PAGE, &o->a[1].page);
    case O_ROUNDS:   return attn_opt_int(name, val, 3, ROUNDS_MAX, &o->rounds);
    case O_MIN_TIME: return attn_opt_real(name, val, 1e-4, 60, &o->min_time);
    default:         usage(stdout, "bench_ab"); return 0;
    }
}

/* "tiled (2 threads, isa avx512, tile 64x192, splits 4)": what was set. */
static void describe(const arm *x, char *buf, size_t len)
{
    const attn_config *c = &x->cfg;
    int n = snprintf(buf, len, "%s (%d thread%s", x->be->name, c->threads,
                     c->threads == 1 ? "" : "s");
    if (c->isa != ATTN_ISA_AUTO && n < (int)len)
        n += snprintf(buf + n, len - (size_t)n, ", isa %s", attn_isa_name(c->isa));
    if (c->tile_q && n < (int)len)
        n += snprintf(buf + n, len - (size_t)n, ", tile %dx%d", c->tile_q, c->tile_kv);
    if (c->tile_sb && n < (int)len)
        n += snprintf(buf + n, len - (size_t)n, "x%d", c->tile_sb);
    if (c->splits && n < (int)len)
        n += snprintf(buf + n, len - (size_t)n, ", splits %d", c->splits);
    if (x->lazy_off && n < (int)len)
        n += snprintf(buf + n, len - (size_t)n, ", lazy rescale off");
    if (x->steal_off && n < (int)len)
        n += snprintf(buf + n, len - (size_t)n, ", no stealing");
    if (x->kbf16 && n < (int)len)
        n += snprintf(buf + n, len - (size_t)n, ", bf16 K %s", x->kbf16 > 0 ? "in place" : "widened");
    if (x->pv_bf16 && n < (int)len)
        n += snprintf(buf + n, len - (size_t)n, ", P.V %s",
                      x->pv_bf16 > 0 ? "on bf16 dot products" : "by pv16");
    if (x->pf_keys && n < (int)len)
        n += snprintf(buf + n, len - (size_t)n, ", prefetch %d fp32 rows ahead", x->pf_keys);
    if (x->page && n < (int)len)
        n += snprintf(buf + n, len - (size_t)n, ", pages of %d", x->page);
    if (n < (int)len)
        snprintf(buf + n, len - (size_t)n, ")");
}

/* prepare, bind, one run checked against the reference, and the runs a
 * round takes (at least --min-time). */
static int start(arm *x, const attn_inputs *in, double min_time, const char *label)
{
    const attn_problem *p = &x->p;
    char why[256] = "", what[160];
    describe(x, what, sizeof(what));
    attn_tracker_init(&x->tr);
    x->cfg.alloc = &x->tr.iface;
    x->cfg.device = -1;
    attn_status st = attn_backend_supports(x->be, p, &x->cfg, why, sizeof(why));
    if (st != ATTN_OK)
        return attn_error(ATTN_EXIT_NONE_RAN, "%s: %s does not run this problem: %s", label,
                          what, why);
    if (attn_guarded_alloc(&x->out, attn_q_rows(p) * (size_t)p->d_v) != ATTN_OK)
        return attn_error(ATTN_EXIT_TOO_LARGE, "%s: no memory for the output", label);
    attn_guarded_poison(&x->out);
    attn_tiled_lazy(!x->lazy_off);   /* read by tiled's plan, in prepare */
    attn_tiled_steal(!x->steal_off);
    attn_tiled_kbf16(x->kbf16);
    attn_tiled_pv_bf16(x->pv_bf16);
    attn_tiled_pf_keys(x->pf_keys);
    st = x->be->prepare(p, &x->cfg, &x->state);
    attn_tiled_lazy(true);
    attn_tiled_steal(true);
    attn_tiled_kbf16(0);
    attn_tiled_pv_bf16(0);
    attn_tiled_pf_keys(0);
    if (st != ATTN_OK)
        return attn_error(ATTN_EXIT_ERROR, "%s: prepare: %s", label, attn_status_str(st));
    /* Each input in its storage type only, as attnbench hands them. */
    const attn_tensors all = attn_inputs_tensors(in);
    attn_tensors t = attn_inputs_stored(&all, p);
    t.o = x->out.data;
    if ((st = x->be->bind(x->state, &t)) != ATTN_OK || (st = x->be->run(x->state)) != ATTN_OK ||
        (st = x->be->read(x->state, x->out.data)) != ATTN_OK)
        return attn_error(ATTN_EXIT_ERROR, "%s: %s: %s", label, what, attn_status_str(st));
    attn_check c;
    attn_check_output(&c, p, &in->ref, &x->out);
    char line[512];
    attn_check_describe(&c, line, sizeof(line));
    printf("%s: %s: %s, %s\n", label, what, c.pass ? "PASSED" : "FAILED", line);
    if (!c.pass)
        return attn_error(ATTN_EXIT_FAILED, "%s: %s FAILED its check; nothing timed", label,
                          what);
    const double t0 = attn_now();
    long n = 0;
    do {
        if ((st = x->be->run(x->state)) != ATTN_OK)
            return attn_error(ATTN_EXIT_ERROR, "%s: %s", label, attn_status_str(st));
        n++;
    } while (attn_now() - t0 < min_time);
    const double one = (attn_now() - t0) / (double)n;
    x->iters = one > 0 ? (long)ceil(min_time / one) : 1;
    x->iters = x->iters < 1 ? 1 : x->iters;
    return -1;
}

/* One round of arm x: its runs, the seconds per run. */
static int round_of(arm *x, int r)
{
    const double t0 = attn_now();
    for (long i = 0; i < x->iters; i++) {
        const attn_status st = x->be->run(x->state);
        if (st != ATTN_OK)
            return attn_error(ATTN_EXIT_ERROR, "%s: %s", x->be->name, attn_status_str(st));
    }
    x->t[r] = (attn_now() - t0) / (double)x->iters;
    return -1;
}

static int compare(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Where output row (b, h, i) lies: [B,H,Nq,dv] dense, [sum Nq,H,dv] for a
 * serving batch (backend.h). */
static size_t out_row(const attn_problem *p, int b, int h, int i)
{
    if (p->ragged)
        return (size_t)(p->ragged->q0[b] + i) * (size_t)p->heads + (size_t)h;
    return ((size_t)b * (size_t)p->heads + (size_t)h) * (size_t)p->seq_q + (size_t)i;
}

/* Whether the two arms' outputs are the same bits, row by row through
 * each one's layout; the largest difference into *diff. */
static bool outputs_same(const arm *x, const arm *y, double *diff)
{
    const attn_problem *p = &x->p;
    const size_t dv = (size_t)p->d_v;
    bool same = true;
    *diff = 0;
    for (int b = 0; b < p->batch; b++)
        for (int h = 0; h < p->heads; h++)
            for (int i = 0; i < p->seq_q; i++) {
                const float *u = x->out.data + out_row(p, b, h, i) * dv,
                            *w = y->out.data + out_row(&y->p, b, h, i) * dv;
                same &= !memcmp(u, w, dv * sizeof(float));
                for (size_t c = 0; c < dv; c++) {
                    const double d = fabs((double)u[c] - (double)w[c]);
                    *diff = d > *diff || isnan(d) ? d : *diff;
                }
            }
    return same;
}

static int cpus_allowed(void)
{
    cpu_set_t set;
    const long n = sched_getaffinity(0, sizeof(set), &set) ? sysconf(_SC_NPROCESSORS_ONLN)
                                                           : CPU_COUNT(&set);
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

int main(int argc, char **argv)
{
    ab_opts o = { .p = { .batch = 1, .heads = 8, .seq_q = 1024, .d_k = 64 },
                  .s = { .seed = 1 }, .names = { "tiled", NULL }, .rounds = 15,
                  .min_time = 0.05 };
    attn_error_program("bench_ab");
    int rc = attn_options_parse(options, sizeof(options) / sizeof(options[0]), argc, argv, 1,
                                on_option, &o);
    if (rc >= 0)
        return rc;
    attn_problem *p = &o.p;
    p->seq_kv = p->seq_kv ? p->seq_kv : p->seq_q;
    p->d_v = p->d_v ? p->d_v : p->d_k;
    p->kv_dtype = p->kv_dtype ? p->kv_dtype : p->dtype;
    p->scale = (float)(1.0 / sqrt((double)p->d_k));
    if (p->kv_heads && p->heads % p->kv_heads)
        return attn_error(ATTN_EXIT_USAGE, "--kv-heads %d does not divide --heads %d",
                          p->kv_heads, p->heads);
    attn_config *a = &o.a[0].cfg, *b = &o.a[1].cfg;
    a->threads = a->threads ? a->threads : cpus_allowed();
    b->threads = o.vs_threads ? b->threads : a->threads;
    b->isa = o.vs_isa ? b->isa : a->isa;
    if (!o.vs_tile) {
        b->tile_q = a->tile_q;
        b->tile_kv = a->tile_kv;
        b->tile_sb = a->tile_sb;
    }
    b->splits = o.vs_splits ? b->splits : a->splits;
    o.a[1].lazy_off = o.vs_lazy ? o.a[1].lazy_off : o.a[0].lazy_off;
    o.a[1].steal_off = o.vs_steal ? o.a[1].steal_off : o.a[0].steal_off;
    o.a[1].kbf16 = o.vs_kbf16 ? o.a[1].kbf16 : o.a[0].kbf16;
    o.a[1].pv_bf16 = o.vs_pv_bf16 ? o.a[1].pv_bf16 : o.a[0].pv_bf16;
    o.a[1].pf_keys = o.vs_pf_keys ? o.a[1].pf_keys : o.a[0].pf_keys;
    o.a[1].page = o.vs_page ? o.a[1].page : o.a[0].page;
    o.names[1] = o.names[1] ? o.names[1] : o.names[0];
    for (int i = 0; i < 2; i++) {
        char why[256];
        if (!(o.a[i].be = attn_backend_find(o.names[i])))
            return attn_error(ATTN_EXIT_USAGE, "unknown backend '%s'", o.names[i]);
        if (attn_backend_usable(o.a[i].be, why, sizeof(why)) != ATTN_OK)
            return attn_error(ATTN_EXIT_NONE_RAN, "%s: %s", o.names[i], why);
        attn_problem pi = *p;
        if (o.a[i].page) {
            if (!attn_batch_alloc(&o.a[i].batch, p->batch))
                return attn_error(ATTN_EXIT_TOO_LARGE, "no memory for the block tables");
            attn_batch_dense(&o.a[i].batch, p->batch, p->seq_q, p->seq_kv, o.a[i].page);
            pi.ragged = &o.a[i].batch.r;
        }
        o.a[i].p = attn_problem_of(&pi, o.a[i].be);
    }
    char why[256], shape[256];
    o.s.threads = a->threads > b->threads ? a->threads : b->threads;
    /* One set of inputs where the arms' layouts are one; else each its own
     * (the seeded fill gives key j the same values in any layout). */
    const int arms_in = o.a[1].page != o.a[0].page ? 2 : 1;
    for (int i = 0; i < arms_in; i++)
        if (attn_inputs_make(&o.a[i].in, &o.a[i].p, &o.s, why, sizeof(why)) != ATTN_OK) {
            if (i)
                attn_inputs_free(&o.a[0].in);
            return attn_error(ATTN_EXIT_TOO_LARGE, "inputs: %s", why);
        }
    attn_problem_describe(p, shape, sizeof(shape));
    printf("%s; %d rounds (A B, then B A), each arm >= %g s a round\n", shape, o.rounds,
           o.min_time);
    for (int i = 0; i < 2 && rc < 0; i++)
        rc = start(&o.a[i], &o.a[arms_in == 2 ? i : 0].in, o.min_time, i ? "B" : "A");
    for (int r = 0; r < o.rounds && rc < 0; r++)
        for (int k = 0; k < 2 && rc < 0; k++)
            rc = round_of(&o.a[(k + r) % 2], r);
    if (rc < 0) {
        const double flops = attn_problem_flops(&o.a[0].p);
        double med[2], best[2];
        for (int i = 0; i < 2; i++) {
            char what[160];
            describe(&o.a[i], what, sizeof(what));
            qsort(o.a[i].t, (size_t)o.rounds, sizeof(double), compare);
            med[i] = o.a[i].t[o.rounds / 2];
            best[i] = o.a[i].t[0];
            printf("%s: median %.4g ms, best %.4g ms, %.1f GFLOP/s (median), %ld runs a "
                   "round  %s\n", i ? "B" : "A", med[i] * 1e3, best[i] * 1e3,
                   flops / med[i] * 1e-9, o.a[i].iters, what);
        }
        printf("B/A: %.3f (medians), %.3f (best); ", med[1] / med[0], best[1] / best[0]);
        double diff = 0;
        if (!o.a[0].page != !o.a[1].page)
            /* The seeded fill runs over the layout's own order: a serving
             * batch's key j holds the same values in pages of any size,
             * not those of the dense cache. */
            printf("outputs not compared (the dense cache and the pool hold other values)\n");
        else if (outputs_same(&o.a[0], &o.a[1], &diff))
            printf("outputs the same bits\n");
        else
            printf("outputs differ\n  largest difference %.3g\n", diff);
    }
    for (int i = 0; i < 2; i++) {
        if (o.a[i].state)
            o.a[i].be->release(o.a[i].state);
        if (o.a[i].cfg.alloc) {
            attn_guarded_free(&o.a[i].out);
            attn_tracker_destroy(&o.a[i].tr);
        }
        attn_inputs_free(&o.a[i].in);
        attn_batch_free(&o.a[i].batch);
    }
    return rc < 0 ? 0 : rc;
}

/* Serving batches (backend.h): ragged lengths, K/V packed or in a shuffled
 * pool of pages. naive and tiled PASS against the reference, whose own
 * indexing reads the pages through the block tables; tiled is bitwise the
 * same for any thread count; the other backends SKIP with the reason; a
 * planted page lookup and the NaN past each item's last key FAIL. Quantized
 * caches too, packed and paged, with fp8's scale per item and K/V head (a
 * planted first item's scale FAILS). */
#include <math.h>
#include <string.h>

#include "kernels/quant.h"
#include "lens.h"
#include "tap.h"
#include "tiled/tiled.h"
#include "util.h"

typedef struct serving_case {
    const char *lens;           /* --lens */
    int batch, page, heads, hkv, dk, dv;
    bool causal;
    attn_dtype dt, kvdt;
    attn_mods mods;
} serving_case;

static const serving_case cases[] = {
    /* decode tokens, a prefill chunk over a prefix, a whole prompt */
    { "1:100,5:50,7:7,40:300,1:1", 5, 0, 8, 2, 32, 32, false, 0, 0, { 0 } },
    { "1:100,5:50,7:7,40:300,1:1", 5, 0, 8, 2, 32, 32, true, 0, 0, { 0 } },
    { "1:100,5:50,7:7,40:300,1:1", 5, 16, 8, 2, 32, 32, true, 0, 0, { 0 } },
    { "1:100,5:50,7:7,40:300,1:1", 5, 1, 8, 8, 32, 32, true, ATTN_DTYPE_FP16, ATTN_DTYPE_FP16,
      { 0 } },
    { "1:100,5:50,7:7,40:300,1:1", 5, 3, 8, 1, 32, 16, true, ATTN_DTYPE_BF16, ATTN_DTYPE_BF16,
      { 0 } },
    { "1:100,5:50,7:7,40:300,1:1", 5, 0, 8, 2, 32, 32, false, 0, ATTN_DTYPE_BF16, { 0 } },
    { "decode:uniform:1:700", 6, 64, 8, 2, 64, 64, true, 0, ATTN_DTYPE_BF16, { 0 } },
    { "prefill:uniform:1:200", 4, 16, 4, 4, 32, 32, true, ATTN_DTYPE_BF16, ATTN_DTYPE_BF16,
      { 0 } },
    { "mixed:uniform:20:400:2:33", 6, 32, 8, 2, 32, 32, true, 0, 0, { 0 } },
    /* the modifiers, on the items' own lengths */
    { "1:100,5:50,7:7,40:300,1:1", 5, 16, 8, 2, 32, 32, true, 0, 0,
      { .window = true, .left = 20, .right = 0, .softcap = 20.0f, .alibi = true,
        .sinks = true } },
    { "1:100,5:50,7:7,40:300,1:1", 5, 8, 8, 2, 32, 16, false, 0, 0, { .v_from_k = true } },
    /* quantized caches, packed and in pages: each row's blocks where the
       row lies, fp8's scale per item and K/V head */
    { "1:100,5:50,7:7,40:300,1:1", 5, 0, 8, 2, 32, 32, true, 0, ATTN_DTYPE_Q8_0, { 0 } },
    { "1:100,5:50,7:7,40:300,1:1", 5, 16, 8, 2, 64, 32, true, 0, ATTN_DTYPE_Q4_0, { 0 } },
    { "1:100,5:50,7:7,40:300,1:1", 5, 3, 8, 1, 32, 32, true, ATTN_DTYPE_BF16,
      ATTN_DTYPE_FP8E4M3, { 0 } },
    { "decode:uniform:1:700", 6, 64, 8, 2, 64, 64, true, 0, ATTN_DTYPE_FP8E5M2, { 0 } },
    { "mixed:uniform:20:400:2:33", 6, 0, 8, 2, 32, 32, true, 0, ATTN_DTYPE_FP8E4M3, { 0 } },
    { "1:100,5:50,7:7,40:300,1:1", 5, 8, 8, 2, 32, 32, true, 0, ATTN_DTYPE_Q8_0,
      { .window = true, .left = 20, .right = 0, .softcap = 20.0f, .alibi = true,
        .sinks = true } },
    /* decoding's K/V heads taken together, in groups (plan.c): 10 packed,
       two groups of 5; 12 in pages of 16, two of 6 */
    { "decode:uniform:1:700", 6, 0, 20, 10, 32, 32, true, 0, 0, { 0 } },
    { "decode:uniform:1:700", 6, 16, 24, 12, 32, 32, true, 0, ATTN_DTYPE_Q8_0, { 0 } },
};
/* The fp8 cases of the planted scale: paged decode, packed mixed. */
#define FP8_PAGED 14
#define FP8_PACKED 15
/* The grouped K/V heads: packed, paged. */
#define HEADS_PACKED 17
#define HEADS_PAGED 18
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static attn_problem make(const serving_case *c, attn_lens *l, attn_batch *bt)
{
    char why[256];
    if (!attn_lens_parse(c->lens, l, why, sizeof(why)) || !attn_batch_alloc(bt, c->batch)) {
        printf("Bail out! %s\n", why);
        exit(2);
    }
    attn_problem p = { .batch = c->batch, .heads = c->heads, .kv_heads = c->hkv, .d_k = c->dk,
                       .d_v = c->dv, .scale = (float)(1.0 / sqrt((double)c->dk)),
                       .causal = c->causal, .dtype = c->dt, .kv_dtype = c->kvdt,
                       .mods = c->mods, .lens = l->spec };
    attn_batch_make(bt, l, c->batch, c->page, 7, &p.seq_q, &p.seq_kv);
    p.ragged = &bt->r;
    return p;
}

/* Case c's problem and its inputs, with the reference of check_rows rows
 * (test_setup's). */
static attn_problem inputs_of(const serving_case *c, long check_rows, attn_lens *l,
                              attn_batch *bt, attn_inputs *in)
{
    attn_problem p = make(c, l, bt);
    attn_setup s = test_setup(ATTN_FILL_NORMAL, check_rows);
    char why[4400];
    if (attn_inputs_make(in, &p, &s, why, sizeof(why)) != ATTN_OK) {
        printf("Bail out! %s\n", why);
        exit(2);
    }
    return p;
}

/* The row of item 0's K/V head 1 in the slot past its 100th key: cases 2
 * and 12 put its 100 keys in pages of 16, the last page's slots 4.. empty. */
static size_t slack_row(const attn_inputs *in, const attn_batch *bt, const attn_problem *p)
{
    const size_t page = (size_t)in->pages[bt->k0[0] + 100 / 16];
    return (page * (size_t)p->kv_heads + 1) * 16 + 100 % 16;
}

static void one(const attn_backend *be, const serving_case *c)
{
    attn_lens l;
    attn_batch bt;
    attn_problem p = make(c, &l, &bt);
    char shape[512];
    attn_problem_describe(&p, shape, sizeof(shape));
    attn_setup s = test_setup(ATTN_FILL_NORMAL, -1);
    attn_result r;
    const attn_verdict v = run_case_setup(be, &p, &s, &r);
    if (!tap_ok(v == ATTN_PASSED, "%s %s", be->name, shape))
        tap_diag("%s: %s | %s", attn_verdict_str(v), r.why, r.repro);
    attn_batch_free(&bt);
    attn_lens_free(&l);
}

/* be's output of p on `in` into o, on `threads` threads; whether it ran. */
static bool output_of(const attn_backend *be, const attn_problem *p, const attn_inputs *in,
                      int threads, float *o)
{
    attn_tensors t = attn_inputs_tensors(in);
    t.o = o;
    attn_tracker tr;
    attn_tracker_init(&tr);
    const attn_config cfg = { .threads = threads, .alloc = &tr.iface, .device = -1 };
    void *st = NULL;
    const bool ok = be->prepare(p, &cfg, &st) == ATTN_OK && be->bind(st, &t) == ATTN_OK &&
                    be->run(st) == ATTN_OK && be->read(st, o) == ATTN_OK;
    if (st)
        be->release(st);
    attn_tracker_destroy(&tr);
    return ok;
}

/* The output of every thread count, bitwise (split-KV chunks and item
 * plans come from the problem alone). */
static void thread_invariance(const attn_backend *be, const serving_case *c)
{
    attn_lens l;
    attn_batch bt;
    attn_inputs in;
    const attn_problem p = inputs_of(c, 1, &l, &bt, &in);
    const size_t n = attn_q_rows(&p) * (size_t)p.d_v;
    float *o[3];
    bool same = true;
    for (int x = 0; x < 3; x++) {
        o[x] = calloc(n, sizeof(float));
        same &= output_of(be, &p, &in, x + 1, o[x]);
        if (x)
            same &= !memcmp(o[0], o[x], n * sizeof(float));
    }
    tap_ok(same, "%s: a paged decode batch's output (K/V %s) is bitwise the same on 1, 2 and 3 "
           "threads", be->name, attn_dtype_name(c->kvdt));
    for (int x = 0; x < 3; x++)
        free(o[x]);
    attn_inputs_free(&in);
    attn_batch_free(&bt);
    attn_lens_free(&l);
}

/* Whether tiled's output of case c is the same bits with decoding's
 * prefetch distance (attn_tiled_pf_keys) at the table's, 1 row and 4096
 * (past every item's keys, so that none is prefetched), on 2 threads;
 * with bug planted in the runs after the first. */
static bool pf_same(const attn_backend *tiled, const serving_case *c, int bug)
{
    attn_lens l;
    attn_batch bt;
    attn_inputs in;
    const attn_problem p = inputs_of(c, 1, &l, &bt, &in);
    const size_t n = attn_q_rows(&p) * (size_t)p.d_v;
    float *o0 = calloc(n, sizeof(float)), *o1 = calloc(n, sizeof(float));
    bool same = o0 && o1 && output_of(tiled, &p, &in, 2, o0);
    static const int keys[2] = { 1, 4096 };
    attn_tiled_plant(bug);
    for (int x = 0; x < 2 && same; x++) {
        attn_tiled_pf_keys(keys[x]);
        same = output_of(tiled, &p, &in, 2, o1) && !memcmp(o0, o1, n * sizeof(float));
    }
    attn_tiled_pf_keys(0);
    attn_tiled_plant(ATTN_TILED_PLANT_NONE);
    free(o0);
    free(o1);
    attn_inputs_free(&in);
    attn_batch_free(&bt);
    attn_lens_free(&l);
    return same;
}

/* The kernels prefetch the rows ahead through the block table (keys.c,
 * pf_rows); how far ahead changes no bit of the output, packed or paged,
 * heads alone or together. The comparison is shown to see a planted
 * page lookup. */
static void pf_invariance(const attn_backend *tiled)
{
    static const int at[4] = { 6, HEADS_PAGED, HEADS_PACKED, FP8_PAGED };
    for (int x = 0; x < 4; x++) {
        const serving_case *c = &cases[at[x]];
        tap_ok(pf_same(tiled, c, ATTN_TILED_PLANT_NONE),
               "tiled: decoding's prefetch distance (the table's, 1 row, 4096) moves no bit "
               "of the output (K/V %s, %s, %d K/V heads)", attn_dtype_name(c->kvdt),
               c->page ? "paged" : "packed", c->hkv);
    }
    tap_ok(!pf_same(tiled, &cases[6], ATTN_TILED_PLANT_PAGE_NEXT),
           "tiled: the same comparison finds a planted page lookup's output");
}

/* tiled with bug planted (ATTN_TILED_PLANT_*) on case c FAILS; what: the
 * bug, for the test's line. */
static void planted(const attn_backend *tiled, const serving_case *c, int bug, const char *what)
{
    attn_lens l;
    attn_batch bt;
    attn_problem p = make(c, &l, &bt);
    attn_setup s = test_setup(ATTN_FILL_NORMAL, -1);
    attn_result r;
    attn_tiled_plant(bug);
    const attn_verdict v = run_case_setup(tiled, &p, &s, &r);
    attn_tiled_plant(ATTN_TILED_PLANT_NONE);
    if (!tap_ok(v == ATTN_FAILED, "tiled %s (%s, %s) FAILS", what, attn_dtype_name(c->kvdt),
                c->page ? "paged" : "packed"))
        tap_diag("%s: %s", attn_verdict_str(v), r.why);
    attn_batch_free(&bt);
    attn_lens_free(&l);
}

/* The slots past an item's last key of a quantized pool read back NaN, in
 * K's and V's rows, and the reference reads none. */
static void slack_poisoned_q(void)
{
    attn_lens l;
    attn_batch bt;
    attn_inputs in;
    const attn_problem p = inputs_of(&cases[12], -1, &l, &bt, &in);   /* q4_0, pages of 16 */
    const size_t row = slack_row(&in, &bt, &p);
    const size_t kb = attn_dtype_row_bytes(p.kv_dtype, (size_t)p.d_k);
    const size_t vb = attn_dtype_row_bytes(p.kv_dtype, (size_t)p.d_v);
    float k[64], v[64], k1[64];
    attn_kvq_dequantize_row(k, in.kq + row * kb, (size_t)p.d_k, ATTN_KVQ_Q4_0, 1.0f);
    attn_kvq_dequantize_row(v, in.vq + row * vb, (size_t)p.d_v, ATTN_KVQ_Q4_0, 1.0f);
    attn_kvq_dequantize_row(k1, in.kq + (row - 1) * kb, (size_t)p.d_k, ATTN_KVQ_Q4_0, 1.0f);
    tap_ok(isnan(k[0]) && isnan(k[63]) && isnan(v[31]) && !isnan(k1[0]) &&
               in.ref.nonfinite_inputs == 0,
           "a q4_0 pool's slot past an item's last key reads back NaN, the one before it does "
           "not; the reference reads none (%d non-finite)", (int)in.ref.nonfinite_inputs);
    attn_inputs_free(&in);
    attn_batch_free(&bt);
    attn_lens_free(&l);
}

/* The slots past an item's last key hold NaN: what reads them cannot pass.
 * The reference does not, and counts no non-finite input. */
static void slack_poisoned(void)
{
    attn_lens l;
    attn_batch bt;
    attn_inputs in;
    const attn_problem p = inputs_of(&cases[2], -1, &l, &bt, &in);
    const size_t row = slack_row(&in, &bt, &p);
    tap_ok(isnan(in.k[row * p.d_k]) && isnan(in.v[row * p.d_v + 3]) &&
               !isnan(in.k[(row - 1) * p.d_k]),
           "the slot past an item's last key holds NaN in K and V, the one before it does not");
    tap_ok(in.ref.nonfinite_inputs == 0, "the reference reads no slot past an item's keys");
    bool perm = true;
    int *seen = calloc((size_t)bt.k0[p.batch], sizeof(int));
    for (long e = 0; e < bt.k0[p.batch]; e++)
        perm &= in.pages[e] >= 0 && in.pages[e] < bt.k0[p.batch] && !seen[in.pages[e]]++;
    bool moved = false;
    for (long e = 0; e < bt.k0[p.batch]; e++)
        moved |= in.pages[e] != e;
    tap_ok(perm && moved, "the block tables use each page of the pool once, shuffled");
    free(seen);
    attn_inputs_free(&in);
    attn_batch_free(&bt);
    attn_lens_free(&l);
}

static void lens_grammar(void)
{
    static const char *const bad[] = { "1:0", "decode:uniform:10", "decode:normal:1:5",
                                       "prefill:uniform:9:3", "1:2,", "mixed:uniform:1:9:2",
                                       "x" };
    bool refused = true;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        attn_lens l;
        char why[256] = "";
        const bool ok = attn_lens_parse(bad[i], &l, why, sizeof(why));
        refused &= !ok && !strncmp(why, "--lens", 6);
        if (ok)
            attn_lens_free(&l);
    }
    tap_ok(refused, "--lens refuses malformed specs in one line naming itself");
    attn_lens l;
    attn_batch bt;
    char why[256];
    bool ok = attn_lens_parse("mixed:uniform:100:200:2:33", &l, why, sizeof(why)) &&
              attn_batch_alloc(&bt, 8);
    int nq, nk;
    attn_batch_make(&bt, &l, 8, 16, 3, &nq, &nk);
    for (int b = 0; ok && b < 8; b++)
        ok = bt.nk[b] >= 100 && bt.nk[b] <= 200 && bt.nq[b] == (b < 2 ? 33 : 1) &&
             bt.q0[b + 1] - bt.q0[b] == bt.nq[b] &&
             bt.k0[b + 1] - bt.k0[b] == (bt.nk[b] + 15) / 16;
    tap_ok(ok && nq == 33, "mixed: two prefill chunks of 33 queries, the rest decode tokens, "
                           "Nk in range, pages per item ceil(Nk / 16)");
    attn_batch_free(&bt);
    attn_lens_free(&l);
}

int main(void)
{
    const attn_backend *naive = attn_backend_find("naive"), *tiled = attn_backend_find("tiled");
    const attn_backend *blas = attn_backend_find("blas");
    tap_plan((int)(2 * NCASES) + 5 + 5 + 1 + 2 + 2 + 1 + 3 + 2 + 1);
    for (size_t c = 0; c < NCASES; c++) {
        one(naive, &cases[c]);
        one(tiled, &cases[c]);
    }
    thread_invariance(naive, &cases[6]);
    thread_invariance(tiled, &cases[6]);
    thread_invariance(naive, &cases[FP8_PAGED]);
    thread_invariance(tiled, &cases[FP8_PAGED]);
    thread_invariance(tiled, &cases[HEADS_PAGED]);
    pf_invariance(tiled);
    /* an item's pages read from the next entry of its block table */
    planted(tiled, &cases[2], ATTN_TILED_PLANT_PAGE_NEXT,
            "reading each page from the next entry of the block table");
    /* an fp8 cache's items all read with the first item's scales (each item
       and K/V head has its own) */
    planted(tiled, &cases[FP8_PAGED], ATTN_TILED_PLANT_SCALE_ITEM0,
            "reading every item with the first item's scales");
    planted(tiled, &cases[FP8_PACKED], ATTN_TILED_PLANT_SCALE_ITEM0,
            "reading every item with the first item's scales");
    /* K/V heads taken together, each tile loaded for the first and used
       for all */
    planted(tiled, &cases[HEADS_PACKED], ATTN_TILED_PLANT_HEADS_ONE_TILE,
            "using the first K/V head's tile for every head of a group");
    planted(tiled, &cases[HEADS_PAGED], ATTN_TILED_PLANT_HEADS_ONE_TILE,
            "using the first K/V head's tile for every head of a group");
    slack_poisoned_q();
    slack_poisoned();
    lens_grammar();
    /* Another backend: SKIPPED, with the reason. */
    attn_lens l;
    attn_batch bt;
    attn_problem p = make(&cases[2], &l, &bt);
    char why[256] = "";
    const attn_status st = attn_backend_supports(blas, &p, &(attn_config){ .threads = 1 }, why,
                                                 sizeof(why));
    tap_ok(st == ATTN_EUNSUPPORTED && strstr(why, "dense batches only"),
           "blas refuses a serving batch: %s", why);
    attn_batch_free(&bt);
    attn_lens_free(&l);
    return 0;
}

/* The checker must reject a planted bug of each kind. Each double below is a
 * small, independent attention implementation with one switchable fault; the
 * same double without a fault must pass, so a failure is the fault's doing. */
#include <math.h>
#include <string.h>

#include "kernels/half.h"
#include "tap.h"
#include "tiled/tiled.h"
#include "util.h"

typedef enum fault {
    FAULT_NONE, FAULT_NO_SCALE, FAULT_CAUSAL_OFF_BY_ONE, FAULT_DROP_LAST_ROW,
    FAULT_WRITE_PAST_END, FAULT_NAN, FAULT_ALLOC_IN_RUN, FAULT_WORKSPACE_OVERRUN,
    FAULT_LEAK, FAULT_DRIFT, FAULT_HUGE_WORKSPACE, FAULT_ZEROS,
} fault;

static fault planted;
/* Storage the double rounds its weights P to before P.V, as a bf16 or fp16
 * kernel does (ATTN_DTYPE_FP32: none). */
static attn_dtype round_p;

/* Element i of an input the double was given in its storage type. */
static float in_at(const float *f, const uint16_t *h, attn_dtype dt, size_t i)
{
    return f ? f[i] : attn_half_to_f32(h[i], dt == ATTN_DTYPE_BF16);
}

static float rounded(float x, attn_dtype dt)
{
    if (dt == ATTN_DTYPE_BF16)
        return attn_bf16_to_f32(attn_f32_to_bf16(x));
    if (dt == ATTN_DTYPE_FP16)
        return attn_f16_to_f32(attn_f32_to_f16(x));
    return x;
}

typedef struct dbl_state {
    attn_problem p;
    const attn_allocator *alloc;
    float *w;
    void *leak;
    int runs;
    attn_tensors t;
} dbl_state;

static size_t dbl_workspace(const attn_problem *p, const attn_config *cfg)
{
    (void)cfg;
    if (planted == FAULT_HUGE_WORKSPACE)
        return (size_t)1 << 60;
    return sizeof(dbl_state) + (size_t)p->seq_kv * sizeof(float);
}

static attn_status dbl_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    dbl_state *s = attn_alloc(cfg->alloc, sizeof(*s));
    if (!s)
        return ATTN_ENOMEM;
    memset(s, 0, sizeof(*s));
    s->p = *p;
    s->alloc = cfg->alloc;
    s->w = attn_alloc(cfg->alloc, (size_t)p->seq_kv * sizeof(float));
    if (planted == FAULT_LEAK)
        s->leak = attn_alloc(cfg->alloc, 100);
    *state = s;
    return s->w ? ATTN_OK : ATTN_ENOMEM;
}

static attn_status dbl_bind(void *state, const attn_tensors *t)
{
    ((dbl_state *)state)->t = *t;
    return ATTN_OK;
}

static attn_status dbl_run(void *state)
{
    dbl_state *s = state;
    const attn_problem *p = &s->p;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const float scale = planted == FAULT_NO_SCALE ? 1.0f : p->scale;
    const int shift = planted == FAULT_CAUSAL_OFF_BY_ONE ? 1 : 0;
    size_t rows = (size_t)p->batch * p->heads * nq;
    if (planted == FAULT_DROP_LAST_ROW)
        rows--;
    if (planted == FAULT_ALLOC_IN_RUN)
        attn_free(s->alloc, attn_alloc(s->alloc, 64));
    for (size_t row = 0; row < rows; row++) {
        const size_t bh = row / nq;
        const int i = (int)(row % nq), b = (int)(bh / p->heads);
        int end = p->kv_len ? p->kv_len[b] : nk;
        if (p->causal && i + nk - nq + 1 + shift < end)
            end = i + nk - nq + 1 + shift;
        float *o = s->t.o + row * dv;
        float m = -INFINITY, l = 0.0f;
        for (int j = 0; j < end; j++) {
            float d = 0.0f;
            for (int c = 0; c < dk; c++)
                d += in_at(s->t.q, s->t.q16, p->dtype, row * dk + c) *
                     in_at(s->t.k, s->t.k16, p->kv_dtype, (bh * nk + j) * dk + c);
            s->w[j] = scale * d;
            m = fmaxf(m, s->w[j]);
        }
        for (int c = 0; c < dv; c++)
            o[c] = 0.0f;
        for (int j = 0; j < end; j++) {
            const float e = expf(s->w[j] - m), ep = rounded(e, round_p);
            l += e;
            for (int c = 0; c < dv; c++)
                o[c] += ep * in_at(s->t.v, s->t.v16, p->kv_dtype, (bh * nk + j) * dv + c);
        }
        for (int c = 0; c < dv && end > 0; c++)
            o[c] /= l;
    }
    const size_t n = (size_t)p->batch * p->heads * nq * dv;
    if (planted == FAULT_WRITE_PAST_END)
        s->t.o[n] = 0.0f;
    if (planted == FAULT_NAN)
        s->t.o[n / 2] = NAN;
    if (planted == FAULT_WORKSPACE_OVERRUN)
        s->w[nk] = 1.0f;
    if (planted == FAULT_ZEROS)   /* a kernel that computes nothing */
        memset(s->t.o, 0, n * sizeof(float));
    if (planted == FAULT_DRIFT)   /* far below the tolerance, but not repeatable */
        s->t.o[0] += 1e-7f * (float)s->runs++;
    return ATTN_OK;
}

static attn_status dbl_read(void *state, float *out)
{
    dbl_state *s = state;
    const attn_problem *p = &s->p;
    if (out != s->t.o)
        memcpy(out, s->t.o, (size_t)p->batch * p->heads * p->seq_q * p->d_v * sizeof(float));
    return ATTN_OK;
}

static void dbl_release(void *state)
{
    dbl_state *s = state;
    attn_free(s->alloc, s->w);
    attn_free(s->alloc, s);
}

static const attn_backend dbl = {
    .name = "double", .summary = "test double with one planted fault",
    .dtypes = ATTN_DTYPE_BIT(ATTN_DTYPE_BF16) | ATTN_DTYPE_BIT(ATTN_DTYPE_FP16),
    .prepare = dbl_prepare, .bind = dbl_bind, .run = dbl_run,
    .read = dbl_read, .release = dbl_release, .workspace = dbl_workspace,
};

/* dt: the storage of the inputs; the double rounds P to round_p. */
static void expect_dt(fault f, const char *what, bool causal, long check_rows, const int *kv,
                      attn_dtype dt, attn_verdict want)
{
    const attn_problem p = { .batch = 2, .heads = 3, .seq_q = 33, .seq_kv = 33, .d_k = 16,
                             .d_v = 16, .scale = 0.25f, .causal = causal, .kv_len = kv,
                             .dtype = dt, .kv_dtype = dt };
    attn_result r;
    planted = f;
    const attn_verdict v = run_case(&dbl, &p, ATTN_FILL_NORMAL, check_rows, &r);
    if (!tap_ok(v == want, "%s%s: %s", what, check_rows > 0 ? " (sampled rows)" : "",
                attn_verdict_str(v)))
        tap_diag("wanted %s; why: %s", attn_verdict_str(want), r.why);
    else if (r.why[0])
        tap_diag("%s", r.why);
    if (r.checked && dt != ATTN_DTYPE_FP32) {
        char desc[512];
        attn_check_describe(&r.check, desc, sizeof(desc));
        tap_diag("%s", desc);
    }
}

static void expect_kv(fault f, const char *what, bool causal, long check_rows, const int *kv,
                      attn_verdict want)
{
    expect_dt(f, what, causal, check_rows, kv, ATTN_DTYPE_FP32, want);
}

/* The reduced-precision classes: an honest bf16 (fp16) kernel, P rounded
 * to the storage type, passes its class and fails exact-fp32's; the bugs
 * exact-fp32 rejects, the bf16 class rejects too. */
static void class_checks(void)
{
    round_p = ATTN_DTYPE_BF16;
    expect_dt(FAULT_NONE, "bf16 storage, P rounded to bf16: bf16-storage passes it", true, 0,
              NULL, ATTN_DTYPE_BF16, ATTN_PASSED);
    expect_dt(FAULT_NONE, "the same arithmetic judged by exact-fp32 (fp32 storage) fails: the "
              "classes are not interchangeable", true, 0, NULL, ATTN_DTYPE_FP32, ATTN_FAILED);
    expect_dt(FAULT_NO_SCALE, "bf16 storage: forgetting the scale fails", false, 0, NULL,
              ATTN_DTYPE_BF16, ATTN_FAILED);
    expect_dt(FAULT_CAUSAL_OFF_BY_ONE, "bf16 storage: a causal mask off by one fails", true, 0,
              NULL, ATTN_DTYPE_BF16, ATTN_FAILED);
    round_p = ATTN_DTYPE_FP16;
    expect_dt(FAULT_NONE, "fp16 storage, P rounded to fp16: fp16-storage passes it", true, 0,
              NULL, ATTN_DTYPE_FP16, ATTN_PASSED);
    expect_dt(FAULT_CAUSAL_OFF_BY_ONE, "fp16 storage: a causal mask off by one fails", true, 0,
              NULL, ATTN_DTYPE_FP16, ATTN_FAILED);
    round_p = ATTN_DTYPE_FP32;
    const attn_problem bf = { .dtype = ATTN_DTYPE_BF16, .kv_dtype = ATTN_DTYPE_FP32 };
    const attn_problem hf = { .dtype = ATTN_DTYPE_FP16, .kv_dtype = ATTN_DTYPE_BF16 };
    const attn_problem f32 = { 0 };
    tap_ok(attn_tolerance_for(&bf) == &attn_tolerance_bf16 &&
           attn_tolerance_for(&hf) == &attn_tolerance_bf16 &&
           attn_tolerance_for(&f32) == &attn_tolerance_fp32 &&
           attn_tolerance_bf16.base > 100 * attn_tolerance_fp32.base &&
           attn_tolerance_fp16.base > 10 * attn_tolerance_fp32.base &&
           attn_tolerance_bf16.base > 4 * attn_tolerance_fp16.base,
           "a case is judged by its coarsest storage type; bf16 (base %.2e) > fp16 (%.2e) > "
           "fp32 (%.2e)", attn_tolerance_bf16.base, attn_tolerance_fp16.base,
           attn_tolerance_fp32.base);
}

static void expect(fault f, const char *what, bool causal, long check_rows, attn_verdict want)
{
    expect_kv(f, what, causal, check_rows, NULL, want);
}

/* NaN and Inf among the inputs: the checker compares each checked element's
 * class with the reference's. A reference of 3 rows x 2 columns, rows 0 and
 * 2 checked; each planted output differs from the right one in one way. */
static bool judge_m(const double ref_out[4], const float got[6], size_t nonfinite_inputs,
                    char *why, size_t len, bool *mistrusted)
{
    size_t rows[2] = { 0, 2 };
    double out[4];
    memcpy(out, ref_out, sizeof(out));
    const attn_ref ref = { .nrows = 2, .total_rows = 3, .rows = rows, .out = out,
                           .max_abs_logit = 1.0, .max_abs_v = 4.0,
                           .nonfinite_inputs = nonfinite_inputs };
    const attn_problem p = { 1, 1, 3, 3, 2, 2, 1.0f, false, NULL, ATTN_KIND_SOFTMAX };
    attn_guarded g;
    if (attn_guarded_alloc(&g, 6) != ATTN_OK) {
        printf("Bail out! out of memory\n");
        exit(2);
    }
    memcpy(g.data, got, 6 * sizeof(float));
    attn_check c;
    attn_check_output(&c, &p, &ref, &g);
    snprintf(why, len, "%s", c.why);
    if (mistrusted)
        *mistrusted = c.mistrusted;
    attn_guarded_free(&g);
    return c.pass;
}

static bool judge(const double ref_out[4], const float got[6], size_t nonfinite_inputs,
                  char *why, size_t len)
{
    return judge_m(ref_out, got, nonfinite_inputs, why, len, NULL);
}

/* The tiled backend with a bug planted in its grouped-head indexing or its
 * split-KV merge: the checker must reject both, and pass it without them. */
static void tiled_expect_on(int bug, const attn_problem *p, int splits, attn_fill_kind fill,
                            attn_isa isa, const char *what, attn_verdict want)
{
    const attn_backend *be = attn_backend_find("tiled");
    attn_setup s = test_setup(fill, 0);
    s.splits = splits;
    s.isa = isa;
    attn_result r;
    attn_tiled_plant(bug);
    const attn_verdict v = run_case_setup(be, p, &s, &r);
    attn_tiled_plant(ATTN_TILED_PLANT_NONE);
    if (!tap_ok(v == want, "tiled: %s: %s", what, attn_verdict_str(v)))
        tap_diag("wanted %s; why: %s | %s", attn_verdict_str(want), r.why, r.repro);
    else if (r.why[0])
        tap_diag("%s", r.why);
}

static void tiled_expect(int bug, const attn_problem *p, int splits, const char *what,
                         attn_verdict want)
{
    tiled_expect_on(bug, p, splits, ATTN_FILL_NORMAL, ATTN_ISA_AUTO, what, want);
}

/* The lazy rescale (backends/tiled/keys.c), on C's kernels so that it runs
 * on every CPU: logits of about 10 nats raise some columns' max in place;
 * at about 65 a tile's max sometimes rises past what that allows and the
 * tile is computed again; logits to ~1e4 (--fill extreme) keep most tiles
 * off it. Each passes, its paths counted, and weights kept without the
 * check fail. */
static void lazy_expect(float scale, attn_fill_kind fill, const char *what)
{
    const attn_problem p = { .batch = 1, .heads = 2, .seq_q = 100, .seq_kv = 2000, .d_k = 32,
                             .d_v = 32, .scale = scale };
    long kept, raised, redone;
    attn_tiled_count_tiles(true);
    tiled_expect_on(ATTN_TILED_PLANT_NONE, &p, 1, fill, ATTN_ISA_C, what, ATTN_PASSED);
    attn_tiled_lazy_tiles(&kept, &raised, &redone);
    const long tiles = attn_tiled_tiles();
    attn_tiled_count_tiles(false);
    const bool hot = scale > 5;
    tap_ok(fill == ATTN_FILL_EXTREME ? redone + kept < tiles / 4
           : kept > tiles / 4 && raised > 0 && (redone > 0) == hot,
           "%s: of %ld tiles, %ld kept (%ld columns raised in place), %ld computed again", what,
           tiles, kept, raised, redone);
}

static void tiled_lazy(void)
{
    lazy_expect(1.77f, ATTN_FILL_NORMAL, "lazy rescale, logits of about 10 nats");
    lazy_expect(11.6f, ATTN_FILL_NORMAL, "lazy rescale, logits of about 65 nats");
    lazy_expect(0.18f, ATTN_FILL_EXTREME, "lazy rescale, logits to ~1e4");
    const attn_problem p = { .batch = 1, .heads = 2, .seq_q = 100, .seq_kv = 2000, .d_k = 32,
                             .d_v = 32, .scale = 0.18f };
    tiled_expect_on(ATTN_TILED_PLANT_LAZY_UNCHECKED, &p, 1, ATTN_FILL_EXTREME, ATTN_ISA_C,
                    "planted: weights kept however far the max rises fail", ATTN_FAILED);
}

static void tiled_planted(void)
{
    const attn_problem gqa = { .batch = 2, .heads = 4, .seq_q = 33, .seq_kv = 100, .d_k = 16,
                               .d_v = 16, .scale = 0.25f, .causal = true, .kv_heads = 2 };
    const attn_problem dec = { .batch = 1, .heads = 4, .seq_q = 1, .seq_kv = 1000, .d_k = 32,
                               .d_v = 32, .scale = 0.3f, .kv_heads = 1 };
    tiled_expect(ATTN_TILED_PLANT_NONE, &gqa, 0, "grouped heads (H 4, Hkv 2) pass", ATTN_PASSED);
    tiled_expect(ATTN_TILED_PLANT_WRONG_KV_HEAD, &gqa, 0,
                 "planted: a group reading the wrong K/V head fails", ATTN_FAILED);
    tiled_expect(ATTN_TILED_PLANT_NONE, &dec, 4, "decoding split into 4 chunks passes",
                 ATTN_PASSED);
    tiled_expect(ATTN_TILED_PLANT_MERGE_NO_RESCALE, &dec, 4,
                 "planted: chunks merged without rescaling by their maxima fail", ATTN_FAILED);
    const attn_problem causal = { .batch = 1, .heads = 2, .seq_q = 200, .seq_kv = 200,
                                  .d_k = 32, .d_v = 32, .scale = 0.18f, .causal = true };
    tiled_expect(ATTN_TILED_PLANT_NONE, &causal, 0, "causal, diagonal tiles cut to their keys, "
                 "passes", ATTN_PASSED);
    tiled_expect(ATTN_TILED_PLANT_CUT_SHORT, &causal, 0,
                 "planted: a diagonal tile's P.V stopping one key short fails", ATTN_FAILED);
    /* The score modifiers: each right passes, each planted bug fails. */
    const struct {
        attn_mods m;
        int bug, splits;
        const char *right, *wrong;
    } mods[] = {
        { { .window = true, .left = 37, .right = 0 }, ATTN_TILED_PLANT_WINDOW_EARLY, 0,
          "a window of 37 keys passes", "the window starting one key early fails" },
        { { .window = true, .left = 37, .right = 0 }, ATTN_TILED_PLANT_WINDOW_EARLY, 3,
          "a window, decoding split in 3, passes", "split, the window one key early fails" },
        { { .alibi = true }, ATTN_TILED_PLANT_ALIBI_HEAD, 0, "ALiBi passes",
          "ALiBi with the next head's slope fails" },
        { { .sinks = true }, ATTN_TILED_PLANT_SINK_VALUE, 0, "sinks pass",
          "a sink added to the numerator fails" },
        { { .v_from_k = true }, ATTN_TILED_PLANT_V_SHIFTED, 0, "V read from K passes",
          "V read from K one column on, past dv, fails" },
    };
    for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
        attn_problem p = mods[i].splits ? dec : causal;
        p.mods = mods[i].m;
        if (mods[i].m.v_from_k)
            p.d_v = p.d_k / 2;
        tiled_expect(ATTN_TILED_PLANT_NONE, &p, mods[i].splits, mods[i].right, ATTN_PASSED);
        tiled_expect(mods[i].bug, &p, mods[i].splits, mods[i].wrong, ATTN_FAILED);
    }
}

static void nonfinite_checks(void)
{
    const float nan = NAN, inf = INFINITY;
    const double ref[4] = { NAN, 1.0, INFINITY, 2.0 };
    char why[256];
    const float right[6] = { nan, 1.0f, nan, nan, inf, 2.0f };
    tap_ok(judge(ref, right, 1, why, sizeof(why)),
           "non-finite inputs: NaN for NaN, the same infinity, and an unchecked NaN row pass (%s)", why);
    const float dropped[6] = { 0.0f, 1.0f, 0.5f, 0.5f, inf, 2.0f };
    tap_ok(!judge(ref, dropped, 1, why, sizeof(why)) && strstr(why, "not NaN where the reference is"),
           "planted: a NaN dropped to 0 fails (%s)", why);
    const float flipped[6] = { nan, 1.0f, 0.5f, 0.5f, -inf, 2.0f };
    tap_ok(!judge(ref, flipped, 1, why, sizeof(why)) && strstr(why, "not the same infinity"),
           "planted: -Inf where the reference is +Inf fails (%s)", why);
    const float leaked[6] = { nan, 1.0f, 0.5f, 0.5f, inf, nan };
    tap_ok(!judge(ref, leaked, 1, why, sizeof(why)) && strstr(why, "where the reference is finite"),
           "planted: a NaN leaked where the reference is finite fails (%s)", why);
    const float off[6] = { nan, 1.5f, 0.5f, 0.5f, inf, 2.0f };
    tap_ok(!judge(ref, off, 1, why, sizeof(why)) && strstr(why, "> tol"),
           "planted: a wrong finite value fails; the infinities leave the tolerance finite (%s)", why);
    /* A NaN the backend never wrote still holds the poison's bits: it fails,
     * and a reference of NaN alone is then trusted (each NaN tells that the
     * backend propagated it) rather than MISTRUSTED. */
    const uint32_t poison_bits = ATTN_POISON_BITS;
    float poison;
    memcpy(&poison, &poison_bits, sizeof(poison));
    const float unwritten[6] = { poison, 1.0f, nan, nan, inf, 2.0f };
    tap_ok(!judge(ref, unwritten, 1, why, sizeof(why)) && strstr(why, "never written"),
           "planted: an output left unwritten where the reference is NaN fails (%s)", why);
    const double all_nan[4] = { NAN, NAN, NAN, NAN };
    const float nans[6] = { nan, nan, 0.5f, 0.5f, nan, nan };
    bool mistrusted = true;
    tap_ok(judge_m(all_nan, nans, 4, why, sizeof(why), &mistrusted) && !mistrusted,
           "a reference of NaN alone, matched by written NaN, passes and is trusted (%s)", why);
    const float none[6] = { poison, poison, 0.5f, 0.5f, poison, poison };
    tap_ok(!judge(all_nan, none, 4, why, sizeof(why)) && strstr(why, "4 outputs never written"),
           "planted: a reference of NaN alone and a backend writing nothing fails (%s)", why);
    const double finite_ref[4] = { 0.5, 1.0, 1.5, 2.0 };
    const float unchecked_nan[6] = { 0.5f, 1.0f, nan, 0.5f, 1.5f, 2.0f };
    tap_ok(!judge(finite_ref, unchecked_nan, 0, why, sizeof(why)) && strstr(why, "non-finite output"),
           "planted: with finite inputs a NaN in an unchecked row still fails (%s)", why);
}

int main(void)
{
    expect(FAULT_NONE, "the double without a fault passes", true, 0, ATTN_PASSED);
    expect(FAULT_NONE, "the double without a fault passes", true, 8, ATTN_PASSED);
    expect(FAULT_NO_SCALE, "forgetting the scale fails", false, 0, ATTN_FAILED);
    expect(FAULT_NO_SCALE, "forgetting the scale fails", false, 8, ATTN_FAILED);
    expect(FAULT_CAUSAL_OFF_BY_ONE, "a causal mask off by one fails", true, 0, ATTN_FAILED);
    expect(FAULT_CAUSAL_OFF_BY_ONE, "a causal mask off by one fails", true, 8, ATTN_FAILED);
    expect(FAULT_DROP_LAST_ROW, "dropping the last row fails", false, 0, ATTN_FAILED);
    expect(FAULT_DROP_LAST_ROW, "dropping the last row fails", false, 8, ATTN_FAILED);
    expect(FAULT_WRITE_PAST_END, "writing one element past the output fails", false, 0, ATTN_FAILED);
    expect(FAULT_NAN, "emitting a NaN fails", false, 0, ATTN_FAILED);
    expect(FAULT_NAN, "emitting a NaN fails", false, 8, ATTN_FAILED);
    expect(FAULT_ALLOC_IN_RUN, "allocating inside run fails", false, 0, ATTN_FAILED);
    expect(FAULT_WORKSPACE_OVERRUN, "writing past its own workspace fails", false, 0, ATTN_FAILED);
    expect(FAULT_LEAK, "leaking at release fails", false, 0, ATTN_FAILED);
    expect(FAULT_DRIFT, "an output that changes from run to run fails", false, 0, ATTN_FAILED);
    expect(FAULT_HUGE_WORKSPACE, "a workspace larger than memory is skipped before prepare",
           false, 0, ATTN_SKIPPED);
    expect(FAULT_ZEROS, "writing zeros fails", false, 0, ATTN_FAILED);
    static const int none[2] = { 0, 0 };
    expect_kv(FAULT_NONE, "every key masked: a right output is MISTRUSTED, not PASSED", false, 0,
              none, ATTN_MISTRUSTED);
    expect_kv(FAULT_ZEROS, "every key masked: writing zeros is MISTRUSTED, not PASSED", false, 0,
              none, ATTN_MISTRUSTED);
    static const int one[2] = { 0, 1 };
    expect_kv(FAULT_NONE, "one key visible to half the rows: PASSED", false, 0, one, ATTN_PASSED);
    expect_kv(FAULT_ZEROS, "one key visible to half the rows: writing zeros fails", false, 0, one,
              ATTN_FAILED);
    nonfinite_checks();
    class_checks();
    tiled_planted();
    tiled_lazy();
    return tap_done();
}

/* What is particular to the Vulkan backends, beyond the grid every backend
 * passes in test_backends: the validation layer is on and sees no error (and
 * does see a planted missing barrier), Mesa llvmpipe's loop-iteration limit
 * is modelled exactly for both fused kernels (a shape one key tile past it
 * is refused, and run anyway it is wrong), decoding takes decode.comp where
 * it applies and keeps test_nonfinite's rules there, vulkan-3pass chunks
 * heads when S does not fit one binding, the device's timestamps and
 * transfers are reported, shapes larger than the test grid pass, a tile
 * that cannot fit in shared memory is refused, and fp16 prefill on the
 * matrix units (flash_cm.comp), where the device has them, passes the
 * checker and keeps test_nonfinite's rules.
 *
 * meson test runs this with ATTN_VK_VALIDATION=1, synchronization
 * validation and VK_DRIVER_FILES pinned to lavapipe. With no Vulkan device
 * every check says SKIP with the reason. */
#include <math.h>
#include <string.h>

#include "kernels/half.h"
#include "tap.h"
#include "util.h"
#include "vulkan/vk.h"

#define NCHECKS 46
#define CM_CHECKS 8

static void bail(const char *what)
{
    printf("Bail out! %s\n", what);
    exit(2);
}

/* Runs be on p with the inputs of t straight through its verbs into t->o. */
static attn_status run_tensors(const attn_backend *be, const attn_problem *p,
                               const attn_tensors *t)
{
    attn_tracker tr;
    attn_tracker_init(&tr);
    const attn_config cfg = { .threads = 1, .alloc = &tr.iface, .device = -1 };
    void *state = NULL;
    attn_status st = be->prepare(p, &cfg, &state);
    if (st == ATTN_OK && (st = be->bind(state, t)) == ATTN_OK && (st = be->run(state)) == ATTN_OK)
        st = be->read(state, t->o);
    if (state)
        be->release(state);
    attn_tracker_destroy(&tr);
    return st;
}

/* run_tensors with Q, K and V in fp32. */
static attn_status run_verbs(const attn_backend *be, const attn_problem *p, const float *q,
                             const float *k, const float *v, float *o)
{
    return run_tensors(be, p, &(attn_tensors){ .q = q, .k = k, .v = v, .o = o });
}

static void validation_on(void)
{
    if (!getenv("ATTN_VK_VALIDATION")) {
        tap_skip("ATTN_VK_VALIDATION is not set (meson test sets it)",
                 "the validation layer is enabled");
        return;
    }
    if (!tap_ok(attn_vk_validation_enabled(),
                "VK_LAYER_KHRONOS_validation with synchronization validation is enabled"))
        tap_diag("ATTN_VK_VALIDATION=%s but the instance has no validation layer",
                 getenv("ATTN_VK_VALIDATION"));
}

/* Both kernels on masked shapes: they pass and the layer reports nothing. */
static void clean_runs(void)
{
    static const int kv[] = { 100, 0 };
    const attn_problem p = { 2, 3, 129, 129, 40, 24, 0.15f, true, kv };
    const char *names[] = { "vulkan", "vulkan-3pass" };
    for (int i = 0; i < 2; i++) {
        const unsigned long before = attn_vk_validation_errors();
        attn_result r;
        const attn_verdict v = run_case(attn_backend_find(names[i]), &p, ATTN_FILL_NORMAL, 0, &r);
        const unsigned long errors = attn_vk_validation_errors() - before;
        if (!tap_ok(v == ATTN_PASSED && errors == 0,
                    "%s: causal + padding case passes with no validation error", names[i]))
            tap_diag("%s: %s; %lu validation errors", attn_verdict_str(v), r.why, errors);
    }
}

/* Planted: vulkan-3pass without the barrier between the softmax and P.V
 * dispatches. lavapipe happens to run them in order, so only the
 * synchronization validation can see it; the case must become ERROR. */
static void missing_barrier_caught(void)
{
    if (!attn_vk_validation_enabled()) {
        tap_skip("the validation layer is not enabled", "a missing barrier is caught");
        return;
    }
    const attn_problem p = { 1, 2, 64, 64, 16, 16, 0.25f, false, NULL };
    const unsigned long before = attn_vk_validation_errors();
    attn_vk_plant(ATTN_VK_PLANT_NO_BARRIER);
    attn_result r;
    const attn_verdict v = run_case(attn_backend_find("vulkan-3pass"), &p, ATTN_FILL_NORMAL, 0, &r);
    attn_vk_plant(ATTN_VK_PLANT_NONE);
    const unsigned long errors = attn_vk_validation_errors() - before;
    if (!tap_ok(v == ATTN_ERROR && errors > 0,
                "planted missing barrier: synchronization validation reports it, the case is "
                "ERROR"))
        tap_diag("%s: %s; %lu validation errors", attn_verdict_str(v), r.why, errors);
}

/* nq queries, d = 4, Nk keys: all keys 0 but the last, whose logit is 40
 * and whose value is 1, so O is 1 (to 1e-9) in every row when the last key
 * tile is computed and 0 when it is not. */
static bool last_key_counts(const attn_backend *be, int nq, int nk, double *got,
                            attn_status *st)
{
    const attn_problem p = { 1, 1, nq, nk, 4, 4, 1.0f, false, NULL };
    float *k = calloc((size_t)nk * 4, sizeof(float)), *v = calloc((size_t)nk * 4, sizeof(float));
    float *q = calloc((size_t)nq * 4, sizeof(float)), *o = malloc((size_t)nq * 4 * sizeof(float));
    if (!k || !v || !q || !o)
        bail("out of memory");
    for (int i = 0; i < nq * 4; i++)
        o[i] = NAN;
    for (int i = 0; i < nq; i++)
        q[i * 4] = 1.0f;
    k[(size_t)(nk - 1) * 4] = 40.0f;
    for (int c = 0; c < 4; c++)
        v[(size_t)(nk - 1) * 4 + c] = 1.0f;
    *st = run_verbs(be, &p, q, k, v, o);
    const double want = 1.0 / (1.0 + (nk - 1) * exp(-40.0));
    *got = o[0];
    bool ok = *st == ATTN_OK;
    for (int i = 0; i < nq * 4; i++)
        ok = ok && fabs(o[i] - want) < 1e-5;
    free(k);
    free(v);
    free(q);
    free(o);
    return ok;
}

/* The limit for one kernel: decode.comp (Nq = 1) or flash.comp (Nq = 2). */
static void loop_limit(int nq)
{
    const attn_backend *be = attn_backend_find("vulkan");
    const char *kernel = nq == 1 ? "decode.comp" : "flash.comp";
    attn_problem p = { 1, 1, nq, 1, 4, 4, 1.0f, false, NULL };
    attn_vk_plan_t plan;
    char why[512] = "";
    if (attn_vk_plan_info(&p, true, 0, &plan, why, sizeof(why)) != ATTN_OK) {
        for (int i = 0; i < 3; i++)
            tap_skip(why, "vulkan (%s): loop-limit check %d of 3", kernel, i + 1);
        return;
    }
    if (plan.decode != (nq == 1))
        bail("the plan does not take the kernel this check is for");
    if (!plan.loop_limit) {
        for (int i = 0; i < 3; i++)
            tap_skip("this driver has no loop-iteration limit (not llvmpipe)",
                     "vulkan (%s): loop-limit check %d of 3", kernel, i + 1);
        return;
    }
    /* The largest Nk the backend's model of the limit allows; one key more
     * starts one more key tile. */
    int lo = 1, hi = 1 << 24;
    while (hi - lo > 1) {
        p.seq_kv = lo + (hi - lo) / 2;
        attn_vk_plan_info(&p, true, 0, &plan, why, sizeof(why));
        if (plan.loop_iterations <= plan.loop_limit)
            lo = p.seq_kv;
        else
            hi = p.seq_kv;
    }
    const int at = lo;
    p.seq_kv = at;
    attn_vk_plan_info(&p, true, 0, &plan, why, sizeof(why));
    double got;
    attn_status st;
    bool ok = last_key_counts(be, nq, at, &got, &st);
    if (!tap_ok(ok, "vulkan (%s): Nk = %d (%llu loop iterations, the most the model allows) "
                "runs and counts the last key", kernel, at,
                (unsigned long long)plan.loop_iterations))
        tap_diag("%s; O = %.9g", attn_status_str(st), got);

    p.seq_kv = at + 1;
    why[0] = '\0';
    st = attn_backend_supports(be, &p, &(attn_config){ .threads = 1, .device = -1 }, why,
                               sizeof(why));
    if (!tap_ok(st == ATTN_EUNSUPPORTED && strstr(why, "llvmpipe") && strstr(why, "65535"),
                "vulkan (%s): Nk = %d (one tile more) is refused, naming the limit", kernel,
                at + 1))
        tap_diag("%s: %s", attn_status_str(st), why);

    /* Planted: the guard off, one whole key tile more. The model counts
     * whole tiles; lavapipe may still finish the first keys of the next
     * one, never all of it: the invocation's loops stop before its last
     * key. */
    attn_vk_plant(ATTN_VK_PLANT_NO_LOOP_GUARD);
    ok = last_key_counts(be, nq, at + (int)plan.keys, &got, &st);
    attn_vk_plant(ATTN_VK_PLANT_NONE);
    if (!tap_ok(!ok && st == ATTN_OK && got == 0.0,
                "vulkan (%s): Nk = %d (one whole tile of %u keys more) run anyway: its last "
                "key is silently lost (O = 0)", kernel, at + (int)plan.keys, plan.keys))
        tap_diag("%s; O = %.9g (the model of the limit is wrong if this passed)",
                 attn_status_str(st), got);
}

/* vulkan-3pass: its grid limit (Nk / 16 workgroups) comes before its loop
 * limit, so the largest Nk it accepts stays inside the loop limit. */
static void threepass_loops(void)
{
    attn_vk_plan_t plan;
    char why[512] = "";
    attn_problem p = { 1, 1, 1, 65535 * 16, 4, 4, 1.0f, false, NULL };
    const attn_status st = attn_vk_plan_info(&p, false, 0, &plan, why, sizeof(why));
    if (st == ATTN_EUNAVAILABLE) {
        tap_skip(why, "vulkan-3pass: loops within the limit at the largest Nk");
        return;
    }
    if (!tap_ok(st == ATTN_OK && (!plan.loop_limit || plan.loop_iterations <= plan.loop_limit),
                "vulkan-3pass: Nk = %d (the grid's largest) needs %llu loop iterations, "
                "limit %llu", p.seq_kv, (unsigned long long)plan.loop_iterations,
                (unsigned long long)plan.loop_limit))
        tap_diag("%s: %s", attn_status_str(st), why);
}

/* S of 12 heads at 2048 x 2048 is 192 MiB: over lavapipe's 128 MiB binding,
 * so the plan takes the heads in chunks, the last one partial. Running that
 * shape took lavapipe a minute of the suite; the chunks are run on 12 heads
 * of 128 x 128 (768 KiB of S) with the binding capped at 512 KiB instead:
 * chunks of 8 and 4, through the same loop and barriers. */
static void chunked(void)
{
    const attn_problem big = { 1, 12, 2048, 2048, 2, 2, 0.7f, true, NULL };
    attn_vk_plan_t plan;
    char why[512] = "";
    if (attn_vk_plan_info(&big, false, 0, &plan, why, sizeof(why)) != ATTN_OK) {
        tap_skip(why, "vulkan-3pass: 12 heads of 2048 x 2048 planned in chunks");
        tap_skip(why, "vulkan-3pass: heads in chunks");
        return;
    }
    if (plan.chunk >= 12)
        tap_skip("this device binds all 12 heads' scores at once",
                 "vulkan-3pass: 12 heads of 2048 x 2048 planned in chunks");
    else
        tap_ok(plan.chunk > 0, "vulkan-3pass: 12 heads of 2048 x 2048 planned in chunks of %d%s",
               plan.chunk, plan.chunk > 0 && 12 % plan.chunk ? ", the last partial" : "");

    const attn_problem p = { 1, 12, 128, 128, 2, 2, 0.7f, true, NULL };
    attn_vk_cap_binding(8 * 128 * 128 * sizeof(float));
    const attn_status st = attn_vk_plan_info(&p, false, 0, &plan, why, sizeof(why));
    attn_result r;
    const attn_verdict v = st == ATTN_OK && plan.chunk == 8
                               ? run_case(attn_backend_find("vulkan-3pass"), &p, ATTN_FILL_NORMAL,
                                          0, &r)
                               : ATTN_ERROR;
    attn_vk_cap_binding(0);
    if (!tap_ok(v == ATTN_PASSED, "vulkan-3pass: 12 heads of 128 x 128, the binding capped at 8 "
                "heads' scores: chunks of 8 and 4 pass"))
        tap_diag("%s, chunk %d: %s", attn_status_str(st), plan.chunk,
                 st != ATTN_OK ? why : plan.chunk != 8 ? "not 8" : r.why);
}

/* Device name, timestamps and transfers reach the result. */
static void reported(void)
{
    const attn_problem p = { 1, 2, 200, 200, 64, 64, 0.125f, false, NULL };
    attn_result r;
    const attn_verdict v = run_case(attn_backend_find("vulkan"), &p, ATTN_FILL_NORMAL, 0, &r);
    const attn_timing *t = &r.timing;
    const bool ok = v == ATTN_PASSED && r.device[0] && r.device_known && r.device_bytes > 0 &&
                    (!r.device_is_cpu || strstr(r.device, "not GPU performance")) &&
                    t->reps > 0 && t->device_known && t->device_stats.median > 0 &&
                    t->device_stats.median <= t->real_stats.median * 1.05 && r.upload_s > 0 &&
                    r.download_s > 0;
    if (!tap_ok(ok, "vulkan: device, device memory, device time and transfers are reported"))
        tap_diag("%s: %s; device '%s' (cpu %d), %llu bytes; device time %d, %.3g s vs wall "
                 "%.3g s; upload %.3g s, download %.3g s", attn_verdict_str(v), r.why, r.device,
                 r.device_is_cpu, (unsigned long long)r.device_bytes, t->device_known,
                 t->device_stats.median, t->real_stats.median, r.upload_s, r.download_s);
}

/* Beyond the grid's sizes: many key tiles (19 of the fused kernel's 32),
 * d = 128. */
static void larger(void)
{
    static const int kv[] = { 600, 317 };
    const attn_problem ps[] = {
        { 2, 2, 600, 600, 64, 64, 0.125f, true, kv },
        { 1, 2, 300, 700, 128, 128, 0.088f, false, NULL },
    };
    const char *names[] = { "vulkan", "vulkan-3pass" };
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            attn_result r;
            char shape[256];
            attn_problem_describe(&ps[j], shape, sizeof(shape));
            const attn_verdict v = run_case(attn_backend_find(names[i]), &ps[j],
                                            ATTN_FILL_NORMAL, 300, &r);
            if (!tap_ok(v == ATTN_PASSED, "%s %s", names[i], shape))
                tap_diag("%s: %s", attn_verdict_str(v), r.why);
        }
}

/* Split-KV forced with --splits (the plan's own choice on a CPU device is
 * none): decoding with grouped heads and padding, and a short causal
 * prefill whose blocks see different key ranges, in 3 chunks and in as many
 * chunks as key tiles (--splits past that is cut to it). */
static void split_kv(void)
{
    static const int kv[] = { 777, 300 };
    const attn_problem ps[] = {
        { 2, 8, 1, 777, 128, 128, 0.088f, false, kv, .kv_heads = 2 },
        { 1, 2, 40, 300, 20, 20, 0.2f, true, NULL },
    };
    const int splits[] = { 3, 1000 };
    attn_vk_plan_t plan;
    char why[512] = "";
    const attn_problem mha = { 1, 4, 1, 4096, 64, 64, 0.125f, false, NULL };
    const attn_status st = attn_vk_plan_info(&mha, true, 0, &plan, why, sizeof(why));
    if (!tap_ok(st == ATTN_OK && (plan.cpu_device ? plan.splits == 1 : plan.splits > 1),
                "vulkan: its own choice for B=1 H=4 Nq=1 Nk=4096: %u chunks on this %s device",
                plan.splits, plan.cpu_device ? "CPU" : "GPU"))
        tap_diag("%s: %s", attn_status_str(st), why);
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 2; i++) {
            attn_setup s = test_setup(j ? ATTN_FILL_NORMAL : ATTN_FILL_EXTREME, 0);
            s.splits = splits[i];
            attn_vk_plan_info(&ps[j], true, splits[i], &plan, why, sizeof(why));
            const uint32_t tiles = (uint32_t)(ps[j].seq_kv + plan.keys - 1) / plan.keys;
            const uint32_t want = i ? tiles : 3;
            attn_result r;
            char shape[256];
            attn_problem_describe(&ps[j], shape, sizeof(shape));
            const attn_verdict v = run_case_setup(attn_backend_find("vulkan"), &ps[j], &s, &r);
            if (!tap_ok(v == ATTN_PASSED && plan.splits == want,
                        "vulkan --splits %d (%u chunks of %u keys) %s%s", splits[i],
                        plan.splits, plan.split_keys, shape, j ? "" : " fill=extreme"))
                tap_diag("%s: %s; %u chunks, %u wanted", attn_verdict_str(v), r.why,
                         plan.splits, want);
        }
}

/* The workgroup sizes a GPU gets (256 invocations for blocks of 32 rows,
 * 128 for fewer; a CPU device gets 64), forced here: prefill at d = 64 and
 * 128 with padding and causal cuts, and decoding split into chunks. */
static void gpu_sizes(void)
{
    static const int kv[] = { 600, 317 }, kv2[] = { 777, 300 };
    const struct { attn_problem p; uint32_t wg; int splits; } cs[] = {
        { { 2, 2, 600, 600, 64, 64, 0.125f, true, kv }, 256, 0 },
        { { 1, 2, 300, 700, 128, 128, 0.088f, false, NULL }, 256, 0 },
        { { 2, 8, 1, 777, 128, 128, 0.088f, false, kv2, .kv_heads = 2 }, 128, 3 },
        { { 2, 4, 5, 777, 40, 40, 0.15f, true, kv2 }, 128, 4 },
    };
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
        attn_setup s = test_setup(ATTN_FILL_NORMAL, 0);
        s.splits = cs[i].splits;
        attn_vk_force_invocations(cs[i].wg);
        attn_vk_plan_t plan;
        char why[512] = "", shape[256];
        attn_vk_plan_info(&cs[i].p, true, cs[i].splits, &plan, why, sizeof(why));
        attn_result r;
        const attn_verdict v = run_case_setup(attn_backend_find("vulkan"), &cs[i].p, &s, &r);
        attn_vk_force_invocations(0);
        attn_problem_describe(&cs[i].p, shape, sizeof(shape));
        if (!tap_ok(v == ATTN_PASSED && plan.invocations == cs[i].wg,
                    "vulkan, %u invocations (%u rows, %u keys, %u chunks) %s", plan.invocations,
                    plan.rows, plan.keys, plan.splits, shape))
            tap_diag("%s: %s", attn_verdict_str(v), r.why);
    }
    /* attn_vk_gpu_sizes (test_backends runs its grid so): the GPU's sizes
     * on this device whatever its type, its own again after. */
    const attn_problem p = { 1, 2, 64, 64, 96, 96, 0.1f, false, NULL };
    attn_vk_plan_t on, off;
    char why[512] = "";
    attn_vk_gpu_sizes(true);
    const attn_status st = attn_vk_plan_info(&p, true, 0, &on, why, sizeof(why));
    attn_vk_gpu_sizes(false);
    attn_vk_plan_info(&p, true, 0, &off, why, sizeof(why));
    if (!tap_ok(st == ATTN_OK && on.rows == 32 && on.invocations == 256 &&
                    off.invocations == (off.cpu_device ? 64u : 256u),
                "vulkan: the GPU's workgroup sizes asked for on this %s device: %u invocations "
                "for blocks of %u rows (its own: %u)", on.cpu_device ? "CPU" : "GPU",
                on.invocations, on.rows, off.invocations))
        tap_diag("%s: %s", attn_status_str(st), why);
}

/* decode.comp, where the plan takes it (Nq = 1, d a multiple of 4, of 8
 * for d_k in fp16 and bf16), and flash.comp where it does not: query heads
 * of a K/V head in blocks of up to 8 (the last partial), a d whose vec4
 * columns do not divide the invocations (the last P.V group of a tile
 * short), padding down to 0 keys, split-KV, fp16, bf16, MQA. */
static void decode_kernel(void)
{
    static const int kv[] = { 777, 300, 0 }, kv2[] = { 1000, 999 }, kv3[] = { 300, 17 },
                     kv4[] = { 500, 77 };
    const struct { attn_problem p; bool decode; int splits; attn_fill_kind fill; } cs[] = {
        { { 3, 12, 1, 777, 40, 40, 0.15f, false, kv, .kv_heads = 1 }, true, 0,
          ATTN_FILL_EXTREME },
        { { 3, 12, 1, 777, 40, 40, 0.15f, true, kv, .kv_heads = 1 }, true, 3, ATTN_FILL_NORMAL },
        { { 2, 32, 1, 1000, 128, 128, 0.088f, false, kv2, .kv_heads = 1,
            .dtype = ATTN_DTYPE_FP16, .kv_dtype = ATTN_DTYPE_FP16 }, true, 0, ATTN_FILL_NORMAL },
        { { 2, 6, 1, 300, 64, 32, 0.125f, false, kv3, .kv_heads = 2 }, true, 1000,
          ATTN_FILL_NORMAL },
        { { 2, 4, 1, 300, 36, 36, 0.16f, false, kv3, .kv_heads = 2,
            .dtype = ATTN_DTYPE_FP16, .kv_dtype = ATTN_DTYPE_FP16 }, false, 0, ATTN_FILL_NORMAL },
        { { 2, 4, 1, 300, 6, 6, 0.4f, false, kv3, .kv_heads = 4 }, false, 0, ATTN_FILL_NORMAL },
        { { 2, 8, 1, 500, 64, 64, 0.125f, true, kv4, .kv_heads = 2,
            .dtype = ATTN_DTYPE_BF16, .kv_dtype = ATTN_DTYPE_BF16 }, true, 3, ATTN_FILL_EXTREME },
        { { 2, 4, 1, 300, 36, 36, 0.16f, false, kv3, .kv_heads = 1,
            .dtype = ATTN_DTYPE_BF16, .kv_dtype = ATTN_DTYPE_BF16 }, false, 0, ATTN_FILL_NORMAL },
    };
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
        attn_setup s = test_setup(cs[i].fill, 0);
        s.splits = cs[i].splits;
        attn_vk_plan_t plan;
        char why[512] = "", shape[256];
        const attn_status st = attn_vk_plan_info(&cs[i].p, true, cs[i].splits, &plan, why,
                                                 sizeof(why));
        attn_result r;
        const attn_verdict v = run_case_setup(attn_backend_find("vulkan"), &cs[i].p, &s, &r);
        attn_problem_describe(&cs[i].p, shape, sizeof(shape));
        if (!tap_ok(st == ATTN_OK && v == ATTN_PASSED && plan.decode == cs[i].decode,
                    "vulkan: %s (%u %s a workgroup, %u chunks) %s%s",
                    plan.decode ? "decode.comp" : "flash.comp", plan.rows,
                    plan.decode ? "query heads" : "rows", plan.splits, shape,
                    cs[i].fill == ATTN_FILL_EXTREME ? " fill=extreme" : ""))
            tap_diag("%s: %s; decode %d, wanted %d", attn_verdict_str(v), r.why, plan.decode,
                     cs[i].decode);
    }
}

/* decode.comp and non-finite inputs (test_nonfinite's rules at Nq = 1):
 * NaN in V of a key that batch item 0 sees makes that column NaN in the
 * heads of its K/V head and nowhere else, NaN in K and V of a key past
 * batch item 1's length reaches nothing, and NaN in q of one head makes
 * that row NaN only. */
static void decode_nonfinite(void)
{
    enum { B = 2, H = 4, HKV = 2, NK = 300, D = 64, J0 = 150, C = 5, J1 = 250, HQ = 3 };
    static const int kv[] = { NK, 200 };
    const attn_problem p = { B, H, 1, NK, D, D, 0.125f, false, kv, .kv_heads = HKV };
    const size_t nq = (size_t)B * H * D, nkv = (size_t)B * HKV * NK * D;
    float *q = malloc(nq * sizeof(float)), *k = malloc(nkv * sizeof(float));
    float *v = malloc(nkv * sizeof(float)), *o = malloc(nq * sizeof(float));
    if (!q || !k || !v || !o)
        bail("out of memory");
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < nkv; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        k[i] = (float)((x >> 40) % 2001) / 1000.0f - 1.0f;
        v[i] = (float)((x >> 20) % 2001) / 1000.0f - 1.0f;
    }
    for (size_t i = 0; i < nq; i++)
        q[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    /* b = 0, K/V head 1 (query heads 2, 3): v[J0][C] NaN. */
    v[((size_t)(0 * HKV + 1) * NK + J0) * D + C] = NAN;
    /* b = 1, K/V head 0: key J1 >= its length 200, NaN in K and V. */
    for (int c = 0; c < D; c++) {
        k[((size_t)(1 * HKV + 0) * NK + J1) * D + c] = NAN;
        v[((size_t)(1 * HKV + 0) * NK + J1) * D + c] = NAN;
    }
    /* b = 1, query head HQ: q NaN in one element. */
    q[((size_t)1 * H + HQ) * D + 7] = NAN;
    attn_vk_plan_t plan;
    char why[512] = "";
    attn_vk_plan_info(&p, true, 0, &plan, why, sizeof(why));
    const attn_status st = run_verbs(attn_backend_find("vulkan"), &p, q, k, v, o);
    int wrong = 0, first = -1;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int c = 0; c < D; c++) {
                const bool nan_want = (b == 0 && h / (H / HKV) == 1 && c == C) ||
                                      (b == 1 && h == HQ);
                const float y = o[((size_t)b * H + h) * D + c];
                if (isnan(y) != nan_want || (!nan_want && !isfinite(y))) {
                    wrong++;
                    if (first < 0)
                        first = (b * H + h) * D + c;
                }
            }
    if (!tap_ok(st == ATTN_OK && plan.decode && wrong == 0,
                "vulkan (decode.comp): NaN in V reaches its column of its K/V head's rows, NaN "
                "past a length reaches nothing, NaN in q its row only"))
        tap_diag("%s; decode %d; %d elements wrong, the first at %d", attn_status_str(st),
                 plan.decode, wrong, first);
    free(q);
    free(k);
    free(v);
    free(o);
}

/* Causal attention, B = H = 1, N = 128, d = 64, in fp16 through
 * flash_cm.comp with one NaN planted at (key j, element c) of K or V:
 * whether each output element is NaN exactly where test_nonfinite's rules
 * put it (K: rows >= j; V: column c of rows >= j). */
static bool cm_nonfinite(bool in_v, int j, int c, bool *planned)
{
    enum { N = 128, D = 64 };
    const attn_problem p = { 1, 1, N, N, D, D, 0.125f, true, NULL,
                             .dtype = ATTN_DTYPE_FP16, .kv_dtype = ATTN_DTYPE_FP16 };
    float *q = malloc(N * D * sizeof(float)), *k = malloc(N * D * sizeof(float));
    float *v = malloc(N * D * sizeof(float)), *o = malloc(N * D * sizeof(float));
    if (!q || !k || !v || !o)
        bail("out of memory");
    for (int i = 0; i < N * D; i++) {
        q[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
        k[i] = (float)((i * 53) % 97) / 48.0f - 1.0f;
        v[i] = (float)((i * 29) % 89) / 44.0f - 1.0f;
    }
    (in_v ? v : k)[j * D + c] = NAN;
    uint16_t *h = malloc(3 * N * D * sizeof(uint16_t));
    if (!h)
        bail("out of memory");
    for (int i = 0; i < N * D; i++) {
        h[i] = attn_f32_to_f16(q[i]);
        h[N * D + i] = attn_f32_to_f16(k[i]);
        h[2 * N * D + i] = attn_f32_to_f16(v[i]);
    }
    attn_vk_plan_t plan;
    char why[512] = "";
    attn_vk_plan_info(&p, true, 0, &plan, why, sizeof(why));
    *planned = plan.coopmat;
    const attn_status st = run_tensors(attn_backend_find("vulkan"), &p,
                                       &(attn_tensors){ .q16 = h, .k16 = h + N * D,
                                                        .v16 = h + 2 * N * D, .o = o });
    free(h);
    int wrong = 0;
    for (int i = 0; i < N; i++)
        for (int x = 0; x < D; x++) {
            const bool want = i >= j && (!in_v || x == c);
            const float y = o[i * D + x];
            wrong += isnan(y) != want || (!want && !isfinite(y));
        }
    free(q);
    free(k);
    free(v);
    free(o);
    if (wrong)
        tap_diag("%d elements wrong", wrong);
    return st == ATTN_OK && wrong == 0;
}

/* flash_cm.comp, fp16 prefill on the matrix units, where the device has
 * them (VK_NV_cooperative_matrix): the last block of 64 rows partial,
 * causal with Nq < Nk and padding (a batch item of no key), GQA with
 * split-KV forced, 16 rows, d = 64 and 128, fill=extreme; the same shape on
 * flash.comp when asked; and non-finite K and V on the causal diagonal
 * (test_nonfinite's rules). Where the device has no matrix units every
 * check says SKIP with the reason. */
static void coopmat(void)
{
    const attn_problem p0 = { 1, 1, 64, 64, 64, 64, 0.125f, false, NULL,
                              .dtype = ATTN_DTYPE_FP16, .kv_dtype = ATTN_DTYPE_FP16 };
    attn_vk_plan_t plan;
    char why[512] = "", shape[256];
    attn_vk_plan_info(&p0, true, 0, &plan, why, sizeof(why));
    if (!plan.coopmat) {
        const char *no = attn_vk_coopmat_why();
        for (int i = 0; i < CM_CHECKS; i++)
            tap_skip(no[0] ? no : why[0] ? why : "the plan did not take flash_cm.comp",
                     "vulkan: flash_cm.comp check %d of %d", i + 1, CM_CHECKS);
        return;
    }
    static const int kv[] = { 777, 300 }, kv0[] = { 513, 0 };
    const struct { attn_problem p; int splits; attn_fill_kind fill; bool off; } cs[] = {
        { { 2, 4, 1000, 1000, 128, 128, 0.088f, false, NULL }, 0, ATTN_FILL_NORMAL, false },
        { { 2, 4, 300, 777, 64, 64, 0.125f, true, kv }, 0, ATTN_FILL_EXTREME, false },
        { { 1, 8, 200, 1500, 128, 128, 0.088f, true, NULL, .kv_heads = 2 }, 3,
          ATTN_FILL_NORMAL, false },
        { { 1, 2, 16, 4000, 64, 64, 0.125f, false, NULL }, 0, ATTN_FILL_NORMAL, false },
        { { 2, 4, 513, 513, 64, 64, 0.125f, true, kv0 }, 0, ATTN_FILL_NORMAL, false },
        { { 2, 4, 1000, 1000, 128, 128, 0.088f, false, NULL }, 0, ATTN_FILL_NORMAL, true },
    };
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
        attn_problem p = cs[i].p;
        p.dtype = p.kv_dtype = ATTN_DTYPE_FP16;
        attn_setup s = test_setup(cs[i].fill, 0);
        s.splits = cs[i].splits;
        attn_vk_no_coopmat(cs[i].off);
        const attn_status st = attn_vk_plan_info(&p, true, cs[i].splits, &plan, why,
                                                 sizeof(why));
        attn_result r;
        const attn_verdict v = run_case_setup(attn_backend_find("vulkan"), &p, &s, &r);
        attn_vk_no_coopmat(false);
        attn_problem_describe(&p, shape, sizeof(shape));
        if (!tap_ok(st == ATTN_OK && v == ATTN_PASSED && plan.coopmat == !cs[i].off,
                    "vulkan: %s (%u chunks) %s%s", plan.coopmat ? "flash_cm.comp" : "flash.comp",
                    plan.splits, shape, cs[i].fill == ATTN_FILL_EXTREME ? " fill=extreme" : ""))
            tap_diag("%s: %s; coopmat %d", attn_verdict_str(v), r.why, plan.coopmat);
    }
    bool planned = false;
    bool ok = cm_nonfinite(true, 70, 5, &planned);
    tap_ok(ok && planned, "vulkan (flash_cm.comp): NaN in v_j[c] on the causal diagonal reaches "
           "column c of the rows that see key j and nothing else");
    ok = cm_nonfinite(false, 30, 5, &planned);
    tap_ok(ok && planned, "vulkan (flash_cm.comp): NaN in k_j reaches the rows that see key j "
           "and nothing else");
}

/* A d whose one row and one key overflow shared memory is refused, not run. */
static void too_wide(void)
{
    const attn_problem p = { 1, 1, 16, 16, 65536, 65536, 0.004f, false, NULL };
    char why[512] = "";
    const attn_status st = attn_backend_supports(attn_backend_find("vulkan"), &p,
                                                 &(attn_config){ .threads = 1, .device = -1 },
                                                 why, sizeof(why));
    if (!tap_ok(st == ATTN_EUNSUPPORTED && strstr(why, "maxComputeSharedMemorySize"),
                "vulkan: d = 65536 is refused, naming the shared-memory limit"))
        tap_diag("%s: %s", attn_status_str(st), why);
}

int main(void)
{
    tap_plan(NCHECKS);
    const attn_backend *be = attn_backend_find("vulkan");
    char why[256] = "";
    if (!be || attn_backend_usable(be, why, sizeof(why)) != ATTN_OK) {
        for (int i = 0; i < NCHECKS; i++)
            tap_skip(be ? why : "no vulkan backend registered", "vulkan check %d of %d", i + 1,
                     NCHECKS);
        return 0;
    }
    validation_on();
    clean_runs();
    missing_barrier_caught();
    loop_limit(1);
    loop_limit(2);
    decode_kernel();
    decode_nonfinite();
    threepass_loops();
    chunked();
    reported();
    larger();
    split_kv();
    gpu_sizes();
    too_wide();
    coopmat();
    if (tap_count != NCHECKS)
        bail("the plan's count is wrong");
    return 0;
}

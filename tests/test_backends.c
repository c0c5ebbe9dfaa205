/* Every registered backend against the reference over a grid of small and
 * awkward shapes. A backend that is not built or not usable here, or that
 * does not support a case, reports SKIP with its reason. */
#include <math.h>
#include <string.h>

#include "kernels/half.h"
#include "kernels/kernels.h"
#include "tap.h"
#include "tiled/tiled.h"
#include "util.h"
#include "variant.h"
#include "vulkan/vk.h"

typedef struct grid_case {
    int b, h, nq, nk, dk, dv;
    bool causal;
    const int *kv_len;
    attn_fill_kind fill;
    long check_rows;
    int hkv;                 /* K/V heads; 0: h */
    attn_dtype dt, kvdt;     /* storage of Q, of K and V */
    attn_mods mods;          /* score modifiers */
} grid_case;

static const int kv_mixed[] = { 64, 1, 0 };       /* full, one key, fully masked */

/* Small knobs, so the variants' patterns and features matter at these sizes
 * (the exact backends ignore them). */
static const attn_variant grid_var = { .globals = 3, .random_blocks = 2, .block = 8,
                                       .features = 32, .proj = 16, .seed = 3 };

/* A case's modifiers as be is given them: local and sparse, which need a
 * window, get one of 5 keys either side when the case has none. */
static attn_mods mods_for(const attn_backend *be, attn_mods m)
{
    if (!m.window && (be->kind == ATTN_KIND_LOCAL || be->kind == ATTN_KIND_SPARSE))
        m.window = true, m.left = 5, m.right = 5;
    return m;
}
static const int kv_tail[] = { 129, 100 };
/* Decoding against caches of 1, 63 and 1000 keys: full, part, and empty. */
static const int kv_dec[3][3] = { { 1, 1, 0 }, { 63, 31, 0 }, { 1000, 517, 0 } };
static const int dec_nk[3] = { 1, 63, 1000 };

static size_t build_grid(grid_case *g)
{
    size_t n = 0;
    static const int seqs[] = { 1, 2, 7, 64, 129 };
    static const int dims[] = { 1, 16, 64, 96 };
    for (size_t s = 0; s < 5; s++)
        for (size_t d = 0; d < 4; d++)
            g[n++] = (grid_case){ 1, 2, seqs[s], seqs[s], dims[d], dims[d] };
    for (size_t s = 0; s < 5; s++)
        g[n++] = (grid_case){ 1, 2, seqs[s], seqs[s], 16, 16, .causal = true };
    static const int cross[][2] = { { 7, 64 }, { 64, 7 }, { 1, 129 }, { 129, 1 }, { 2, 129 } };
    for (size_t c = 0; c < 5; c++) {
        g[n++] = (grid_case){ 1, 2, cross[c][0], cross[c][1], 16, 16 };
        g[n++] = (grid_case){ 1, 2, cross[c][0], cross[c][1], 16, 16, .causal = true };
    }
    g[n++] = (grid_case){ 1, 2, 64, 64, 16, 64 };
    g[n++] = (grid_case){ 1, 2, 7, 129, 96, 1 };
    g[n++] = (grid_case){ 1, 2, 129, 7, 1, 96, .causal = true };
    g[n++] = (grid_case){ 3, 4, 64, 64, 16, 16, .kv_len = kv_mixed };
    g[n++] = (grid_case){ 3, 4, 64, 64, 16, 32, .causal = true, .kv_len = kv_mixed };
    g[n++] = (grid_case){ 2, 3, 7, 129, 64, 64, .kv_len = kv_tail };
    g[n++] = (grid_case){ 2, 3, 129, 129, 64, 64, .causal = true, .kv_len = kv_tail };
    g[n++] = (grid_case){ 1, 2, 64, 64, 16, 16, .fill = ATTN_FILL_EXTREME };
    g[n++] = (grid_case){ 1, 2, 129, 129, 64, 64, .fill = ATTN_FILL_EXTREME };
    g[n++] = (grid_case){ 1, 2, 129, 129, 96, 96, .causal = true, .fill = ATTN_FILL_EXTREME };
    g[n++] = (grid_case){ 2, 2, 64, 129, 64, 64, .causal = true, .kv_len = kv_tail,
                          .fill = ATTN_FILL_EXTREME };
    /* Several of tiled's default key tiles (192 keys at d = 64 on a 1 MiB
     * L2) and a short last one, causal: the online softmax across tiles
     * without --tile. */
    g[n++] = (grid_case){ 1, 2, 400, 400, 64, 64, .causal = true, .fill = ATTN_FILL_EXTREME };
    /* The sampled-rows path, as large problems use it. */
    g[n++] = (grid_case){ 2, 4, 129, 129, 64, 64, .causal = true, .check_rows = 40 };
    /* Grouped-query attention, H/Hkv = 2, 4, and 8 = H (multi-query). */
    g[n++] = (grid_case){ 1, 8, 64, 64, 16, 16, .hkv = 4 };
    g[n++] = (grid_case){ 2, 8, 7, 129, 64, 64, .causal = true, .kv_len = kv_tail, .hkv = 2 };
    g[n++] = (grid_case){ 1, 8, 129, 129, 32, 32, .causal = true, .hkv = 1 };
    g[n++] = (grid_case){ 2, 6, 33, 65, 16, 24, .hkv = 3, .fill = ATTN_FILL_EXTREME };
    /* Decoding: Nq = 1, 2, 7 against 1, 63, 1000 keys, causal or not, a
     * ragged cache with one batch item of kv_len 0, grouped heads. */
    static const int dec_nq[3] = { 1, 2, 7 };
    for (int a = 0; a < 3; a++)
        for (int k = 0; k < 3; k++)
            if (dec_nq[a] <= dec_nk[k])
                g[n++] = (grid_case){ 3, 4, dec_nq[a], dec_nk[k], 32, 32,
                                      .causal = (a + k) % 2 == 1, .kv_len = kv_dec[k],
                                      .hkv = k == 1 ? 4 : a == 0 ? 1 : 2 };
    g[n++] = (grid_case){ 1, 4, 1, 1000, 64, 64, .hkv = 1 };
    /* 16-bit storage: bf16 (the dot-product kernels where the CPU has them),
     * fp16, and fp32 Q with a 16-bit KV cache; odd d and key counts (pairs
     * with a missing half), causal cuts, padding, grouped heads, decoding
     * with split-KV, logits to 1e4 (the extreme fill's integers are exact
     * in bf16). */
    const attn_dtype B = ATTN_DTYPE_BF16, H = ATTN_DTYPE_FP16, F = ATTN_DTYPE_FP32;
    const attn_mods W = { .window = true, .left = 40, .right = 0 };
    const attn_mods W2 = { .window = true, .left = 3, .right = 9 };
    g[n++] = (grid_case){ 1, 2, 64, 64, 16, 16, .dt = B, .kvdt = B };
    g[n++] = (grid_case){ 1, 2, 129, 129, 33, 17, .causal = true, .dt = B, .kvdt = B };
    g[n++] = (grid_case){ 2, 3, 129, 129, 64, 64, .causal = true, .kv_len = kv_tail, .dt = B,
                          .kvdt = B };
    g[n++] = (grid_case){ 2, 8, 7, 129, 64, 64, .causal = true, .kv_len = kv_tail, .hkv = 2,
                          .dt = B, .kvdt = B };
    g[n++] = (grid_case){ 1, 2, 129, 129, 96, 96, .causal = true, .fill = ATTN_FILL_EXTREME,
                          .dt = B, .kvdt = B };
    g[n++] = (grid_case){ 3, 4, 1, 1000, 32, 32, .kv_len = kv_dec[2], .hkv = 1, .dt = B,
                          .kvdt = B };
    g[n++] = (grid_case){ 1, 2, 129, 129, 64, 64, .causal = true, .dt = H, .kvdt = H };
    g[n++] = (grid_case){ 2, 3, 7, 129, 33, 33, .kv_len = kv_tail, .dt = H, .kvdt = H };
    g[n++] = (grid_case){ 1, 8, 129, 129, 32, 32, .causal = true, .hkv = 1, .dt = F, .kvdt = B };
    g[n++] = (grid_case){ 3, 4, 2, 63, 32, 32, .kv_len = kv_dec[1], .hkv = 4, .dt = F, .kvdt = H };
    g[n++] = (grid_case){ 1, 2, 64, 129, 16, 16, .causal = true, .dt = H, .kvdt = B };
    /* Decoding tiles wider than tiled's dot products (14 and 16 columns):
     * bf16 K widened a register tile's keys at a time, causal cuts (a cut
     * tile widened whole), an empty cache; 16 columns of fp16 (dot
     * products) with a window's left edge; and 16 columns of bf16 Q and K,
     * dot products again where the CPU has bf16 ones. Multi-query decoding
     * (24 and 32 columns, one query block per K/V head): K widened as
     * above, V read in place, with padding, causal cuts, odd d. */
    g[n++] = (grid_case){ 3, 4, 7, 1000, 32, 32, .causal = true, .kv_len = kv_dec[2], .hkv = 2,
                          .dt = F, .kvdt = B };
    g[n++] = (grid_case){ 2, 8, 4, 300, 64, 64, .hkv = 2, .dt = H, .kvdt = H, .mods = W2 };
    g[n++] = (grid_case){ 1, 8, 4, 700, 64, 64, .causal = true, .hkv = 2, .dt = B, .kvdt = B };
    g[n++] = (grid_case){ 3, 32, 1, 1000, 40, 24, .kv_len = kv_dec[2], .hkv = 1, .dt = F,
                          .kvdt = H };
    g[n++] = (grid_case){ 2, 12, 2, 517, 33, 33, .causal = true, .hkv = 1, .dt = H, .kvdt = B,
                          .mods = W };
    /* Score modifiers, each alone and combined: the window with causal and
     * with padding (rows it leaves empty), prefill and decoding (split-KV),
     * softcap on logits to 1e4, ALiBi with grouped heads, sinks with a
     * fully masked row, V read from K with dk > dv, 16-bit storage. */
    g[n++] = (grid_case){ 1, 2, 400, 400, 64, 64, .causal = true, .mods = W };
    g[n++] = (grid_case){ 3, 4, 64, 64, 16, 16, .kv_len = kv_mixed, .mods = W2 };
    g[n++] = (grid_case){ 2, 8, 7, 129, 64, 64, .causal = true, .kv_len = kv_tail, .hkv = 2,
                          .mods = W };
    g[n++] = (grid_case){ 3, 4, 1, 1000, 32, 32, .kv_len = kv_dec[2], .hkv = 2, .mods = W2 };
    g[n++] = (grid_case){ 1, 2, 129, 129, 64, 64, .causal = true, .fill = ATTN_FILL_EXTREME,
                          .mods = { .softcap = 50.0f } };
    g[n++] = (grid_case){ 1, 2, 64, 64, 16, 16, .mods = { .softcap = 1.5f } };
    g[n++] = (grid_case){ 2, 6, 33, 65, 16, 24, .hkv = 3, .mods = { .alibi = true } };
    g[n++] = (grid_case){ 1, 8, 129, 129, 32, 32, .causal = true, .hkv = 1,
                          .mods = { .alibi = true } };
    g[n++] = (grid_case){ 3, 4, 64, 64, 16, 16, .kv_len = kv_mixed, .mods = { .sinks = true } };
    g[n++] = (grid_case){ 3, 4, 1, 1000, 32, 32, .kv_len = kv_dec[2], .hkv = 1,
                          .mods = { .sinks = true } };
    g[n++] = (grid_case){ 1, 4, 64, 64, 96, 64, .causal = true, .hkv = 1,
                          .mods = { .v_from_k = true } };
    g[n++] = (grid_case){ 3, 4, 1, 1000, 72, 64, .kv_len = kv_dec[2], .hkv = 1, .dt = B,
                          .kvdt = B, .mods = { .v_from_k = true } };
    g[n++] = (grid_case){ 2, 8, 129, 129, 64, 64, .causal = true, .kv_len = kv_tail, .hkv = 2,
                          .dt = B, .kvdt = B,
                          .mods = { .window = true, .left = 30, .softcap = 5.0f, .alibi = true,
                                    .sinks = true } };
    g[n++] = (grid_case){ 3, 4, 2, 1000, 72, 64, .kv_len = kv_dec[2], .hkv = 2, .dt = H,
                          .kvdt = H,
                          .mods = { .window = true, .left = 100, .right = 2, .softcap = 8.0f,
                                    .alibi = true, .sinks = true, .v_from_k = true } };
    /* Quantized K/V caches (q8_0, q4_0: d in blocks of 32; fp8: any d):
     * prefill with causal cuts and padding, decoding with grouped heads
     * (dot products, 16 columns, multi-query), odd d, logits to 1e4, bf16
     * and fp16 Q, the modifiers, V read from K. */
    const attn_dtype Q8 = ATTN_DTYPE_Q8_0, Q4 = ATTN_DTYPE_Q4_0, E4 = ATTN_DTYPE_FP8E4M3,
                     E5 = ATTN_DTYPE_FP8E5M2;
    g[n++] = (grid_case){ 2, 3, 129, 129, 64, 64, .causal = true, .kv_len = kv_tail, .kvdt = Q8 };
    g[n++] = (grid_case){ 3, 4, 1, 1000, 32, 32, .kv_len = kv_dec[2], .hkv = 2, .kvdt = Q4 };
    g[n++] = (grid_case){ 2, 8, 4, 300, 64, 64, .hkv = 2, .kvdt = E4, .mods = W2 };
    g[n++] = (grid_case){ 3, 32, 1, 1000, 32, 32, .kv_len = kv_dec[2], .hkv = 1, .kvdt = Q8 };
    g[n++] = (grid_case){ 1, 2, 129, 129, 33, 17, .causal = true, .kvdt = E5 };
    g[n++] = (grid_case){ 1, 2, 129, 129, 96, 96, .causal = true, .fill = ATTN_FILL_EXTREME,
                          .kvdt = Q8 };
    g[n++] = (grid_case){ 2, 8, 129, 129, 64, 64, .causal = true, .kv_len = kv_tail, .hkv = 2,
                          .dt = B, .kvdt = Q4,
                          .mods = { .window = true, .left = 30, .softcap = 5.0f, .alibi = true,
                                    .sinks = true } };
    g[n++] = (grid_case){ 1, 4, 64, 64, 96, 64, .causal = true, .hkv = 1, .kvdt = Q8,
                          .mods = { .v_from_k = true } };
    g[n++] = (grid_case){ 3, 4, 2, 1000, 72, 64, .kv_len = kv_dec[2], .hkv = 2, .dt = H,
                          .kvdt = E4,
                          .mods = { .window = true, .left = 100, .right = 2, .softcap = 8.0f,
                                    .alibi = true, .sinks = true, .v_from_k = true } };
    /* Q in q8_0 (its values those of its blocks): decoding from q8_0 and
     * q4_0 caches with grouped heads (tiled: int8 dot products where the
     * CPU has them), odd block counts, multi-query, the modifiers; prefill
     * from a q8_0 cache and from fp32 K/V. */
    g[n++] = (grid_case){ 3, 8, 1, 1000, 96, 64, .kv_len = kv_dec[2], .hkv = 2, .dt = Q8,
                          .kvdt = Q8 };
    g[n++] = (grid_case){ 2, 8, 1, 777, 160, 32, .hkv = 1, .dt = Q8, .kvdt = Q4,
                          .mods = { .softcap = 5.0f, .alibi = true, .sinks = true } };
    g[n++] = (grid_case){ 2, 4, 3, 300, 64, 64, .causal = true, .hkv = 2, .dt = Q8, .kvdt = Q4,
                          .fill = ATTN_FILL_EXTREME, .mods = W2 };
    g[n++] = (grid_case){ 1, 2, 129, 129, 64, 64, .causal = true, .dt = Q8, .kvdt = Q8 };
    g[n++] = (grid_case){ 2, 4, 65, 65, 32, 32, .causal = true, .kv_len = kv_tail, .dt = Q8 };
    return n;
}

/* Runs be on p straight through its verbs with the thread count, tiled's
 * --splits and --tile of knobs (the rest of it ignored). */
static bool output_with(const attn_backend *be, const attn_problem *p, const attn_tensors *in,
                        const attn_config *knobs, float *out)
{
    attn_tracker tr;
    attn_tracker_init(&tr);
    const attn_config cfg = { .threads = knobs->threads, .alloc = &tr.iface, .device = -1,
                              .splits = knobs->splits, .tile_q = knobs->tile_q,
                              .tile_kv = knobs->tile_kv, .tile_sb = knobs->tile_sb,
                              .isa = knobs->isa };
    attn_tensors t = *in;
    t.o = out;
    void *state = NULL;
    bool ok = be->prepare(p, &cfg, &state) == ATTN_OK;
    if (ok)
        ok = be->bind(state, &t) == ATTN_OK && be->run(state) == ATTN_OK &&
             be->read(state, out) == ATTN_OK;
    if (state)
        be->release(state);
    attn_tracker_destroy(&tr);
    return ok;
}

/* Whether be gives p bitwise the same output under each of the n knobs
 * (with modes, each run's plan made under attn_tiled_kbf16(modes[i])). */
static bool same_output_modes(const attn_backend *be, const attn_problem *p,
                              const attn_config *knobs, const int *modes, int n)
{
    attn_sizes sz;
    attn_problem_sizes(p, &sz);
    float *buf = attn_host_alloc((sz.q + sz.k + sz.v + 2 * sz.o) * sizeof(float));
    if (!buf) {
        printf("Bail out! out of memory\n");
        exit(2);
    }
    float *q = buf, *k = q + sz.q, *v = k + sz.k, *o1 = v + sz.v, *o2 = o1 + sz.o;
    attn_fill(q, sz.q, ATTN_FILL_NORMAL, 5, ATTN_TENSOR_Q, 1);
    attn_fill(k, sz.k, ATTN_FILL_NORMAL, 5, ATTN_TENSOR_K, 1);
    attn_fill(v, sz.v, ATTN_FILL_NORMAL, 5, ATTN_TENSOR_V, 1);
    attn_tensors in = { .q = q, .k = k, .v = v };
    /* 16-bit storage: each input in its type only, as a case gives it. */
    uint16_t *h = attn_reduced(p) ? attn_host_alloc((sz.q + sz.k + sz.v) * sizeof(uint16_t))
                                  : NULL;
    const attn_dtype dts[3] = { p->dtype, p->kv_dtype, p->kv_dtype };
    const float *src[3] = { q, k, v };
    const size_t count[3] = { sz.q, sz.k, sz.v };
    const float **f32[3] = { &in.q, &in.k, &in.v };
    const uint16_t **f16[3] = { &in.q16, &in.k16, &in.v16 };
    for (int x = 0, at = 0; h && x < 3; at += (int)count[x], x++) {
        if (dts[x] == ATTN_DTYPE_FP32)
            continue;
        for (size_t i = 0; i < count[x]; i++)
            h[at + i] = dts[x] == ATTN_DTYPE_BF16 ? attn_f32_to_bf16(src[x][i])
                                                   : attn_f32_to_f16(src[x][i]);
        *f16[x] = h + at;
        *f32[x] = NULL;
    }
    /* A quantized cache: K and V quantized as the harness does, fp8 with
     * each K/V head's scale. */
    const bool kvq = attn_dtype_quantized(p->kv_dtype);
    const attn_kvq f = attn_dtype_kvq(p->kv_dtype);
    const size_t heads = (size_t)p->batch * attn_kv_heads(p), nk = (size_t)p->seq_kv;
    const size_t krb = kvq ? attn_kvq_row_bytes(f, (size_t)p->d_k) : 0;
    const size_t vrb = kvq ? attn_kvq_row_bytes(f, (size_t)p->d_v) : 0;
    uint8_t *kq = kvq ? attn_host_alloc(heads * nk * (krb + vrb) + 2 * heads * sizeof(float))
                      : NULL;
    if (kvq) {
        uint8_t *vq = kq + heads * nk * krb;
        float *sc = (float *)(vq + heads * nk * vrb);
        for (size_t g = 0; g < heads; g++)
            for (int x = 0; x < (p->mods.v_from_k ? 1 : 2); x++) {
                const int d = x ? p->d_v : p->d_k;
                const float *h0 = (x ? v : k) + g * nk * d;
                const float s = attn_kvq_head_scaled(f) ? attn_fp8_scale(h0, nk * d, f) : 1.0f;
                sc[x * heads + g] = s;
                for (size_t j = 0; j < nk; j++)
                    attn_kvq_quantize_row((x ? vq : kq) + (g * nk + j) * (x ? vrb : krb),
                                          h0 + j * d, (size_t)d, f, s);
            }
        in.k = in.v = NULL;
        in.k16 = in.v16 = NULL;
        in.kq = kq;
        in.vq = p->mods.v_from_k ? kq : vq;
        in.kscale = attn_kvq_head_scaled(f) ? sc : NULL;
        in.vscale = attn_kvq_head_scaled(f) ? (p->mods.v_from_k ? sc : sc + heads) : NULL;
    }
    attn_tiled_kbf16(modes ? modes[0] : 0);
    bool same = output_with(be, p, &in, &knobs[0], o1);
    for (int i = 1; same && i < n; i++) {
        attn_tiled_kbf16(modes ? modes[i] : 0);
        same = output_with(be, p, &in, &knobs[i], o2) && !memcmp(o1, o2, sz.o * sizeof(float));
    }
    attn_tiled_kbf16(0);
    attn_host_free(buf);
    attn_host_free(h);
    attn_host_free(kq);
    return same;
}

static bool same_output(const attn_backend *be, const attn_problem *p, const attn_config *knobs,
                        int n)
{
    return same_output_modes(be, p, knobs, NULL, n);
}

/* Whether be gives p bitwise the same output with 1, 2 and 3 threads. */
static bool same_for_threads(const attn_backend *be, const attn_problem *p, int splits)
{
    const attn_config knobs[3] = { { .threads = 1, .splits = splits },
                                   { .threads = 2, .splits = splits },
                                   { .threads = 3, .splits = splits } };
    return same_output(be, p, knobs, 3);
}

/* p's output must not depend on how many threads computed it (what: the
 * case, for the TAP line). */
static void invariant_case(const attn_backend *be, const attn_problem *p, const char *what)
{
    char why[256] = "";
    if (attn_backend_usable(be, why, sizeof(why)) != ATTN_OK ||
        attn_backend_supports(be, p, &(attn_config){ .threads = 1, .device = -1 }, why,
                              sizeof(why)) != ATTN_OK) {
        tap_skip(why, "%s: %soutput independent of the thread count", be->name, what);
        return;
    }
    tap_ok(same_for_threads(be, p, 0), "%s: %soutput bitwise identical with 1, 2 and 3 threads",
           be->name, what);
}

/* Without modifiers (the variants' own window aside), then under a window,
 * the softcap and ALiBi. */
static void thread_invariance(const attn_backend *be)
{
    static const int kv[] = { 200, 77 }, kvm[] = { 700, 377 };
    const attn_problem p = { .batch = 2, .heads = 3, .seq_q = 150, .seq_kv = 200, .d_k = 40,
                             .d_v = 24, .scale = 0.15f, .causal = true, .kv_len = kv,
                             .kind = be->kind, .var = grid_var,
                             .mods = mods_for(be, (attn_mods){ 0 }) };
    invariant_case(be, &p, "");
    const attn_problem m = { .batch = 2, .heads = 4, .kv_heads = 2, .seq_q = 150,
                             .seq_kv = 700, .d_k = 40, .d_v = 24, .scale = 0.15f,
                             .causal = true, .kv_len = kvm, .kind = be->kind, .var = grid_var,
                             .mods = { .window = true, .left = 90, .right = 0,
                                       .softcap = 3.0f, .alibi = true } };
    invariant_case(be, &m, "window, softcap, ALiBi: ");
    /* A q8_0 cache, decoding (split-KV in tiled) and prefill. */
    static const int kvd[] = { 2000, 1500 };
    const attn_problem qd = { .batch = 2, .heads = 8, .kv_heads = 2, .seq_q = 1, .seq_kv = 2000,
                              .d_k = 64, .d_v = 64, .scale = 0.125f, .kv_len = kvd,
                              .kind = be->kind, .var = grid_var, .kv_dtype = ATTN_DTYPE_Q8_0,
                              .mods = mods_for(be, (attn_mods){ 0 }) };
    invariant_case(be, &qd, "q8_0 cache, decoding: ");
}

/* tiled visits no key tile wholly outside a query block's window: at
 * N = 4096 with a window of 256 keys and tiles of 64 x 64, each of the 64
 * query blocks (one head, H = Hkv) sees the tiles its rows' windows touch,
 * [i0 - 256, i0 + 63], 5 of them (4 for the first four blocks, which start
 * at key 0: 1, 2, 3, 4), counted; without the window, causal, it is 1 + 2
 * + ... + 64. */
static void window_tiles(void)
{
    const attn_backend *be = attn_backend_find("tiled");
    const attn_problem win = { .batch = 1, .heads = 1, .seq_q = 4096, .seq_kv = 4096, .d_k = 16,
                               .d_v = 16, .scale = 0.25f, .causal = true,
                               .mods = { .window = true, .left = 256, .right = 0 } };
    attn_problem full = win;
    full.mods.window = false;
    const attn_config knobs = { .threads = 2, .splits = 1, .tile_q = 64, .tile_kv = 64 };
    long seen[2];
    for (int x = 0; x < 2; x++) {
        const attn_problem *p = x ? &full : &win;
        attn_sizes sz;
        attn_problem_sizes(p, &sz);
        float *buf = attn_host_alloc((sz.q + sz.k + sz.v + sz.o) * sizeof(float));
        if (!buf) {
            printf("Bail out! out of memory\n");
            exit(2);
        }
        memset(buf, 0, (sz.q + sz.k + sz.v) * sizeof(float));
        const attn_tensors in = { .q = buf, .k = buf + sz.q, .v = buf + sz.q + sz.k };
        attn_tiled_count_tiles(true);
        const bool ran = output_with(be, p, &in, &knobs, buf + sz.q + sz.k + sz.v);
        seen[x] = ran ? attn_tiled_tiles() : -1;
        attn_tiled_count_tiles(false);
        attn_host_free(buf);
    }
    const long want = 1 + 2 + 3 + 4 + 60 * 5, full_want = 64 * 65 / 2;
    tap_ok(seen[0] == want && seen[1] == full_want,
           "tiled visits only the tiles a window touches: %ld (want %ld), causal without it "
           "%ld (want %ld)", seen[0], want, seen[1], full_want);
}

/* Block sizes that do not divide anything, single rows and columns, and
 * blocks larger than the problem: every tail of the tiled loop nest. */
static const int tiles[][2] = { { 1, 1 }, { 5, 7 }, { 17, 33 }, { 64, 48 }, { 200, 300 } };
#define NTILES (int)(sizeof(tiles) / sizeof(tiles[0]))

static void tile_sizes(const attn_backend *be)
{
    static const int kv[] = { 129, 40 };
    const attn_problem p = { .batch = 2, .heads = 2, .seq_q = 77, .seq_kv = 129, .d_k = 33,
                             .d_v = 65, .scale = 0.17f, .causal = true, .kv_len = kv };
    if (strcmp(be->name, "tiled"))
        return;
    for (int t = 0; t < NTILES; t++) {
        attn_result r;
        const attn_verdict v = run_case_tiled(be, &p, ATTN_FILL_EXTREME, 0, tiles[t][0],
                                              tiles[t][1], &r);
        if (!tap_ok(v == ATTN_PASSED, "tiled with --tile %dx%d, causal, padded, cross, dk != dv",
                    tiles[t][0], tiles[t][1]))
            tap_diag("%s: %s | %s", attn_verdict_str(v), r.why, r.repro);
    }
}

/* Query blocks sharing each pass over K/V (--tile's SB): 1, 3, 8 and
 * the backend's choice give bitwise the same output, at 1, 2 and 3 threads,
 * on grouped heads with a causal mask and a ragged cache (diagonal tiles
 * cut in every block); and SB 3 passes the check with extreme inputs. */
#define NSB_TESTS 4

static void query_block_groups(const attn_backend *be)
{
    if (strcmp(be->name, "tiled"))
        return;
    static const int kv[] = { 200, 77 };
    const attn_problem p = { .batch = 2, .heads = 4, .seq_q = 150, .seq_kv = 200, .d_k = 40,
                             .d_v = 24, .scale = 0.15f, .causal = true, .kv_len = kv,
                             .kv_heads = 2 };
    const attn_config knobs[4] = {
        { .threads = 1, .tile_q = 16, .tile_kv = 20, .tile_sb = 1 },
        { .threads = 2, .tile_q = 16, .tile_kv = 20, .tile_sb = 3 },
        { .threads = 3, .tile_q = 16, .tile_kv = 20, .tile_sb = 8 },
        { .threads = 2, .tile_q = 16, .tile_kv = 20 },
    };
    tap_ok(same_output(be, &p, knobs, 4), "tiled --tile 16x20 with SB 1, 3, 8 and auto, 1-3 "
           "threads: output bitwise identical");
    attn_setup s = test_setup(ATTN_FILL_EXTREME, 0);
    s.tile_q = 16;
    s.tile_kv = 20;
    s.tile_sb = 3;
    attn_result r;
    const attn_verdict v = run_case_setup(be, &p, &s, &r);
    if (!tap_ok(v == ATTN_PASSED, "tiled --tile 16x20x3, grouped heads, causal, padded, "
                "fill=extreme"))
        tap_diag("%s: %s | %s", attn_verdict_str(v), r.why, r.repro);
    /* The same with bf16 storage (the dot-product kernels where the CPU has
     * them), and bf16 decoding split in 5 chunks (K/V widened in registers). */
    attn_problem bf = p;
    bf.dtype = bf.kv_dtype = ATTN_DTYPE_BF16;
    tap_ok(same_output(be, &bf, knobs, 4), "tiled bf16 --tile 16x20 with SB 1, 3, 8 and auto, "
           "1-3 threads: output bitwise identical");
    const attn_problem dec = { .batch = 2, .heads = 4, .seq_q = 1, .seq_kv = 700, .d_k = 40,
                               .d_v = 24, .scale = 0.15f, .kv_len = kv, .kv_heads = 2,
                               .dtype = ATTN_DTYPE_BF16, .kv_dtype = ATTN_DTYPE_BF16 };
    const attn_config split[3] = { { .threads = 1, .splits = 5 }, { .threads = 2, .splits = 5 },
                                   { .threads = 3, .splits = 5 } };
    tap_ok(same_output(be, &dec, split, 3), "tiled bf16 decoding, --splits 5, 1-3 threads: "
           "output bitwise identical");
}

/* Decoding's tiles of 192 keys, which the AVX-512 table takes on AMD's
 * cores for 16-bit and quantized K/V (attn_kernels.dec_keys), set by
 * --tile on any CPU: grouped heads (4 columns), a ragged cache (333 of
 * 1000 keys: a short last tile) and split chunks of 336 keys (a tile and
 * a short one) give bitwise the same output at 1, 2 and 3 threads, and
 * the check passes with extreme inputs; bf16, fp16 and q8_0 K/V. */
#define NLONG_TESTS 6

static void long_decoding_tiles(const attn_backend *be)
{
    if (strcmp(be->name, "tiled"))
        return;
    static const int kv[] = { 1000, 333 };
    static const attn_dtype dts[3] = { ATTN_DTYPE_BF16, ATTN_DTYPE_FP16, ATTN_DTYPE_Q8_0 };
    for (int x = 0; x < 3; x++) {
        const attn_problem p = { .batch = 2, .heads = 8, .kv_heads = 2, .seq_q = 1,
                                 .seq_kv = 1000, .d_k = 64, .d_v = 64, .scale = 0.125f,
                                 .kv_len = kv, .kv_dtype = dts[x] };
        const attn_config knobs[3] = {
            { .threads = 1, .splits = 3, .tile_q = 1, .tile_kv = 192 },
            { .threads = 2, .splits = 3, .tile_q = 1, .tile_kv = 192 },
            { .threads = 3, .splits = 3, .tile_q = 1, .tile_kv = 192 },
        };
        tap_ok(same_output(be, &p, knobs, 3), "tiled %s decoding --tile 1x192, --splits 3, "
               "padded, 1-3 threads: output bitwise identical", attn_dtype_name(dts[x]));
        attn_setup s = test_setup(ATTN_FILL_EXTREME, 0);
        s.tile_q = 1;
        s.tile_kv = 192;
        attn_result r;
        const attn_verdict v = run_case_setup(be, &p, &s, &r);
        if (!tap_ok(v == ATTN_PASSED, "tiled %s decoding --tile 1x192, padded, fill=extreme",
                    attn_dtype_name(dts[x])))
            tap_diag("%s: %s | %s", attn_verdict_str(v), r.why, r.repro);
    }
}

/* Decoding's outer-product Q.K^T on bf16 K (13 to 16 columns; multi-query's
 * wider tiles): read in place by qk_kbf16 and widened by cvt_rows for qk
 * give bitwise the same output, at the widest ISA and C's, with 1 and 2
 * threads; in place, the check passes (fill=extreme too). On grouped heads
 * with 16 columns (causal with fewer queries than keys and a ragged cache:
 * tiles the mask cuts; split-KV) and on multi-query decoding. A table with
 * no qk_kbf16 of its own (AVX2's: C's, beside its own qk, another order of
 * sums) is held to the same bits at C's only; at its own ISA the test then
 * says so, and checks that the table's qk_kbf16 is indeed C's. */
#define NKBF16_TESTS 8

static void kbf16_tiles(const attn_backend *be)
{
    if (strcmp(be->name, "tiled"))
        return;
    static const int kv[] = { 333, 90 };
    const attn_problem gqa = { .batch = 2, .heads = 16, .kv_heads = 4, .seq_q = 4,
                               .seq_kv = 333, .d_k = 40, .d_v = 24, .scale = 0.15f,
                               .causal = true, .kv_len = kv, .kv_dtype = ATTN_DTYPE_BF16 };
    const attn_problem mqa = { .batch = 1, .heads = 32, .kv_heads = 1, .seq_q = 1,
                               .seq_kv = 700, .d_k = 64, .d_v = 64, .scale = 0.125f,
                               .kv_dtype = ATTN_DTYPE_BF16 };
    const attn_problem *ps[2] = { &gqa, &mqa };
    const char *names[2] = { "grouped decoding, 16 columns, causal, padded, split",
                             "multi-query decoding" };
    static const int modes[3] = { -1, 1, 1 };
    const attn_kernels *widest = attn_kernels_for(ATTN_ISA_AUTO),
                       *c_table = attn_kernels_for(ATTN_ISA_C);
    const bool own = widest == c_table || widest->qk_kbf16 != c_table->qk_kbf16;
    for (int x = 0; x < 2; x++) {
        if (!own) {
            tap_ok(widest->qk_kbf16 == c_table->qk_kbf16 && widest->qk != c_table->qk,
                   "tiled bf16 K in place (qk_kbf16) and widened, %s: the %s table's qk_kbf16 "
                   "is C's beside its own qk, not held to the same bits there (they are at "
                   "--isa c, next)", names[x], attn_isa_name(widest->isa));
        }
        for (int c = own ? 0 : 1; c < 2; c++) {
            const attn_isa isa = c ? ATTN_ISA_C : ATTN_ISA_AUTO;
            const attn_config knobs[3] = { { .threads = 2, .splits = 3, .isa = isa },
                                           { .threads = 1, .splits = 3, .isa = isa },
                                           { .threads = 2, .splits = 3, .isa = isa } };
            tap_ok(same_output_modes(be, ps[x], knobs, modes, 3), "tiled%s bf16 K in place "
                   "(qk_kbf16) and widened, %s: output bitwise identical (1 and 2 threads)",
                   c ? " --isa c" : "", names[x]);
        }
        for (int f = 0; f < 2; f++) {
            attn_setup s = test_setup(f ? ATTN_FILL_EXTREME : ATTN_FILL_NORMAL, 0);
            attn_result r;
            attn_tiled_kbf16(1);
            const attn_verdict v = run_case_setup(be, ps[x], &s, &r);
            attn_tiled_kbf16(0);
            if (!tap_ok(v == ATTN_PASSED, "tiled bf16 K in place, %s, fill=%s", names[x],
                        f ? "extreme" : "normal"))
                tap_diag("%s: %s | %s", attn_verdict_str(v), r.why, r.repro);
        }
    }
}

/* Decoding's P.V with bf16 Q and K/V on the CPU's bf16 dot products
 * (pv_rows_bf16, P rounded to bf16), which the AVX-512 table takes on AMD's
 * cores, forced on here on any CPU (attn_tiled_pv_bf16; where the CPU has
 * no bf16 dot products the plan keeps pv16, and these check that path):
 * grouped heads at Nq = 1 (4 columns, a ragged cache, split chunks, tiles
 * of 192 keys) and at Nq = 4 (16 columns, causal: tiles the mask cuts) give
 * bitwise the same output at 1, 2 and 3 threads, and the check passes with
 * normal and extreme inputs; and a causal window (tiles cut on the left). */
#define NPVBF16_TESTS 7

static void pv_bf16_tiles(const attn_backend *be)
{
    if (strcmp(be->name, "tiled"))
        return;
    static const int kv[] = { 1000, 333 };
    const attn_problem one = { .batch = 2, .heads = 8, .kv_heads = 2, .seq_q = 1, .seq_kv = 1000,
                               .d_k = 64, .d_v = 64, .scale = 0.125f, .kv_len = kv,
                               .dtype = ATTN_DTYPE_BF16, .kv_dtype = ATTN_DTYPE_BF16 };
    const attn_problem four = { .batch = 2, .heads = 16, .kv_heads = 4, .seq_q = 4,
                                .seq_kv = 1000, .d_k = 40, .d_v = 72, .scale = 0.15f,
                                .causal = true, .kv_len = kv, .dtype = ATTN_DTYPE_BF16,
                                .kv_dtype = ATTN_DTYPE_BF16 };
    const attn_problem *ps[2] = { &one, &four };
    const char *names[2] = { "Nq = 1, padded, --tile 1x192, --splits 3",
                             "Nq = 4 (16 columns), causal, padded, --splits 3" };
    attn_tiled_pv_bf16(1);
    for (int x = 0; x < 2; x++) {
        const int tkv = x ? 0 : 192;
        const attn_config knobs[3] = {
            { .threads = 1, .splits = 3, .tile_q = x ? 0 : 1, .tile_kv = tkv },
            { .threads = 2, .splits = 3, .tile_q = x ? 0 : 1, .tile_kv = tkv },
            { .threads = 3, .splits = 3, .tile_q = x ? 0 : 1, .tile_kv = tkv },
        };
        tap_ok(same_output(be, ps[x], knobs, 3), "tiled bf16 decoding, P.V on bf16 dot "
               "products, %s, 1-3 threads: output bitwise identical", names[x]);
        for (int f = 0; f < 2; f++) {
            attn_setup s = test_setup(f ? ATTN_FILL_EXTREME : ATTN_FILL_NORMAL, 0);
            s.splits = 3;
            s.tile_q = x ? 0 : 1;
            s.tile_kv = tkv;
            attn_result r;
            const attn_verdict v = run_case_setup(be, ps[x], &s, &r);
            if (!tap_ok(v == ATTN_PASSED, "tiled bf16 decoding, P.V on bf16 dot products, %s, "
                        "fill=%s", names[x], f ? "extreme" : "normal"))
                tap_diag("%s: %s | %s", attn_verdict_str(v), r.why, r.repro);
        }
    }
    attn_problem w = four;
    w.mods.window = true;
    w.mods.left = 100;
    attn_setup s = test_setup(ATTN_FILL_NORMAL, 0);
    attn_result r;
    const attn_verdict v = run_case_setup(be, &w, &s, &r);
    attn_tiled_pv_bf16(0);
    if (!tap_ok(v == ATTN_PASSED, "tiled bf16 decoding, P.V on bf16 dot products, Nq = 4, "
                "causal window of 100 keys"))
        tap_diag("%s: %s | %s", attn_verdict_str(v), r.why, r.repro);
}

/* Split-KV forced on (--splits): one chunk, three, and more chunks than
 * keys, on decoding and small prefill shapes with grouped heads, causal
 * masks and a ragged cache; then bitwise thread invariance of a split run. */
static const int split_counts[] = { 1, 3, 64 };
#define NSPLITS (int)(sizeof(split_counts) / sizeof(split_counts[0]))
#define NSPLIT_SHAPES 3
#define NSPLIT_TESTS (NSPLITS * NSPLIT_SHAPES + 3)

static void split_kv(const attn_backend *be)
{
    if (strcmp(be->name, "tiled"))
        return;
    static const int kv[3] = { 63, 20, 0 };
    const attn_problem shapes[NSPLIT_SHAPES] = {
        { .batch = 3, .heads = 4, .seq_q = 1, .seq_kv = 63, .d_k = 32, .d_v = 32,
          .scale = 0.17f, .kv_len = kv, .kv_heads = 1 },
        { .batch = 3, .heads = 4, .seq_q = 7, .seq_kv = 63, .d_k = 16, .d_v = 40,
          .scale = 0.25f, .causal = true, .kv_len = kv, .kv_heads = 2 },
        { .batch = 1, .heads = 2, .seq_q = 77, .seq_kv = 1000, .d_k = 33, .d_v = 17,
          .scale = 0.17f, .causal = true },
    };
    for (int x = 0; x < NSPLITS; x++)
        for (int i = 0; i < NSPLIT_SHAPES; i++) {
            attn_setup s = test_setup(ATTN_FILL_EXTREME, 0);
            s.splits = split_counts[x];
            attn_result r;
            const attn_verdict v = run_case_setup(be, &shapes[i], &s, &r);
            char shape[256];
            attn_problem_describe(&shapes[i], shape, sizeof(shape));
            if (!tap_ok(v == ATTN_PASSED, "tiled --splits %d %s fill=extreme", split_counts[x],
                        shape))
                tap_diag("%s: %s | %s", attn_verdict_str(v), r.why, r.repro);
        }

    static const int kv2[] = { 1000, 333 };
    const attn_problem p = { .batch = 2, .heads = 8, .seq_q = 3, .seq_kv = 1000, .d_k = 40,
                             .d_v = 24, .scale = 0.15f, .causal = true, .kv_len = kv2,
                             .kv_heads = 2 };
    tap_ok(same_for_threads(be, &p, 5),
           "tiled --splits 5: output bitwise identical with 1, 2 and 3 threads");

    /* --splits auto: multi-query decoding of one batch item splits; a
     * batch of 32 K/V heads, or prefill, has work enough and does not. */
    const attn_problem mqa = { .batch = 1, .heads = 32, .seq_q = 1, .seq_kv = 16384,
                               .d_k = 128, .d_v = 128, .kv_heads = 1 };
    attn_problem mha = mqa, pre = mqa;
    mha.kv_heads = 32;
    pre.seq_q = 4096;
    pre.kv_heads = 8;
    const int a = attn_tiled_auto_splits(&mqa, 0, 0), b = attn_tiled_auto_splits(&mha, 0, 0),
              c = attn_tiled_auto_splits(&pre, 0, 0);
    tap_ok(a > 1 && b == 1 && c == 1, "tiled --splits auto: %d chunks for B=1 Hkv=1 Nk=16K "
           "decoding, %d for Hkv=32, %d for a 4096-query prefill", a, b, c);
    /* A window: the chunks cut the keys it shows, not all Nk of them. */
    attn_problem win = mqa;
    win.mods = (attn_mods){ .window = true, .left = 4095, .right = 0 };
    const int w = attn_tiled_auto_splits(&win, 0, 0);
    tap_ok(w > 1 && w * 4 == a, "tiled --splits auto: a window of 4096 keys in Nk=16K splits "
           "%d ways, a quarter of the %d of the whole cache", w, a);
}

/* A backend the per-ISA grids pass over (util.h, isa_free): its output at
 * --isa c bitwise the one without --isa, on a case with grouped heads, a
 * causal mask and a ragged cache (where the C kernels' sums and exp2 would
 * round apart from the widest ISA's: tiled's do). */
static void isa_free_check(const attn_backend *be, bool usable, const char *why)
{
    static const int kv[] = { 100, 37 };
    const attn_problem p = { .batch = 2, .heads = 4, .kv_heads = 2, .seq_q = 40, .seq_kv = 100,
                             .d_k = 40, .d_v = 24, .scale = 0.15f, .causal = true,
                             .kv_len = kv };
    const attn_config knobs[2] = { { .threads = 2 }, { .threads = 2, .isa = ATTN_ISA_C } };
    char no[256] = "";
    if (!usable || attn_backend_supports(be, &p, &knobs[1], no, sizeof(no)) != ATTN_OK)
        tap_skip(usable ? no : why, "%s --isa c: output bitwise the one without --isa", be->name);
    else
        tap_ok(same_output(be, &p, knobs, 2), "%s --isa c: output bitwise the one without "
               "--isa (the per-ISA grid passes over it)", be->name);
}

/* One grid case of be at isa (ATTN_ISA_AUTO: the widest), as a TAP line. */
static void grid_one(const attn_backend *be, const grid_case *g, attn_isa isa)
{
    const attn_problem p = { .batch = g->b, .heads = g->h, .seq_q = g->nq, .seq_kv = g->nk,
                             .d_k = g->dk, .d_v = g->dv,
                             .scale = (float)(1.0 / sqrt((double)g->dk)), .causal = g->causal,
                             .kv_len = g->kv_len, .var = grid_var, .kv_heads = g->hkv,
                             .dtype = g->dt, .kv_dtype = g->kvdt,
                             .mods = mods_for(be, g->mods) };
    char shape[256], at[32] = "";
    attn_problem_describe(&p, shape, sizeof(shape));
    if (isa != ATTN_ISA_AUTO)
        snprintf(at, sizeof(at), " --isa %s", attn_isa_name(isa));
    if (be->kind == ATTN_KIND_PERFORMER && g->fill == ATTN_FILL_EXTREME) {
        tap_skip("performer: --fill extreme puts its feature exponents ~1e4 apart, far "
                 "past the ~87 fp32 exp can span, so its output there is not defined "
                 "(it FAILS; see README)", "%s%s %s fill=extreme", be->name, at, shape);
        return;
    }
    attn_setup s = test_setup(g->fill, g->check_rows);
    s.isa = isa;
    attn_result r;
    const attn_verdict v = run_case_setup(be, &p, &s, &r);
    if (v == ATTN_SKIPPED) {
        tap_skip(r.why, "%s%s %s", be->name, at, shape);
        return;
    }
    char desc[512] = "";
    if (r.checked)
        attn_check_describe(&r.check, desc, sizeof(desc));
    if (!tap_ok(v == ATTN_PASSED, "%s%s %s fill=%s", be->name, at, shape,
                attn_fill_name(g->fill)))
        tap_diag("%s: %s | %s | %s", attn_verdict_str(v), r.why, desc, r.repro);
}

/* The one list (backends/list.h) names each registered table by its own name,
 * in registry order: what the fuzz target's stand-ins are built from. */
static void list_matches_registry(void)
{
    static const char *const listed[] = {
#define ATTN_BACKEND(id, str) str,
#include "list.h"
#undef ATTN_BACKEND
    };
    const size_t n = sizeof(listed) / sizeof(listed[0]);
    bool same = n == attn_backend_count();
    for (size_t i = 0; same && i < n; i++)
        same = !strcmp(listed[i], attn_backend_get(i)->name);
    tap_ok(same, "backends/list.h names the %zu registered backends as their tables do", n);
}

int main(void)
{
    /* vulkan's grid in the workgroup sizes a GPU runs (256 invocations for
     * blocks of 32 rows, 128 for fewer), on lavapipe too: those are the
     * pipelines users measure, and lavapipe compiles them several times
     * faster than its own 64 (B=1 H=2 N=64 d=96, no shader cache: 2.2 s
     * against 16.4 on the 2-core Zen 5 EPYC; the grid's vulkan cases 142 s
     * of a cold `meson test`). test_vulkan, test_cli and test_plots run the
     * CPU device's own size. */
    attn_vk_gpu_sizes(true);
    grid_case grid[128];
    const size_t ncases = build_grid(grid);
    int extra = 0;
    for (size_t i = 0; i < attn_backend_count(); i++) {
        const attn_backend *be = attn_backend_get(i);
        extra += (!strcmp(be->name, "tiled") ? NTILES + NSPLIT_TESTS + NSB_TESTS +
                                                   NKBF16_TESTS + NLONG_TESTS + NPVBF16_TESTS + 1
                                                 : 0) +
                 isa_free(be);
    }
    /* The grid at the widest ISA for every backend, then at each ISA for the
     * host backends (device backends have no kernels of kernels/ to pick). */
    const int isas = ATTN_ISA_COUNT - ATTN_ISA_C;
    int host = 0;
    for (size_t i = 0; i < attn_backend_count(); i++)
        host += !attn_backend_has_devices(attn_backend_get(i));
    tap_plan((int)(attn_backend_count() * (ncases + 3) + (size_t)host * isas * ncases) + extra + 1);
    list_matches_registry();

    for (size_t i = 0; i < attn_backend_count(); i++) {
        const attn_backend *be = attn_backend_get(i);
        char why[256] = "";
        const bool usable = attn_backend_usable(be, why, sizeof(why)) == ATTN_OK;
        const int runs = attn_backend_has_devices(be) ? 0 : isas;
        for (int x = -1; x < runs; x++) {
            const attn_isa isa = x < 0 ? ATTN_ISA_AUTO : (attn_isa)(ATTN_ISA_C + x);
            char isa_why[128];
            snprintf(isa_why, sizeof(isa_why), "this CPU or build cannot run the %s kernels",
                     attn_isa_name(isa));
            /* Each case runs once with the same arithmetic: not again at
             * the widest ISA, nor at any for a backend without kernels. */
            char same_why[160];
            const bool repeat = x >= 0 && attn_isa_usable(isa) &&
                                isa_repeats(be, isa, same_why, sizeof(same_why));
            for (size_t c = 0; c < ncases; c++) {
                if (!usable)
                    tap_skip(why, "%s grid case %zu", be->name, c);
                else if (!attn_isa_usable(isa))
                    tap_skip(isa_why, "%s --isa %s grid case %zu", be->name, attn_isa_name(isa), c);
                else if (repeat)
                    tap_skip(same_why, "%s --isa %s grid case %zu", be->name, attn_isa_name(isa),
                             c);
                else
                    grid_one(be, &grid[c], isa);
            }
        }
        if (isa_free(be))
            isa_free_check(be, usable, why);
        thread_invariance(be);
        if (!strcmp(be->name, "tiled"))
            window_tiles();
        tile_sizes(be);
        split_kv(be);
        query_block_groups(be);
        kbf16_tiles(be);
        long_decoding_tiles(be);
        pv_bf16_tiles(be);
    }
    return 0;
}

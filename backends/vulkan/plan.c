/* The Vulkan backends' planning: what the open device allows for a problem
 * (buffer ranges, shared memory, workgroup counts), the fused kernel's tile
 * and the 3-pass score chunk, and lavapipe's loop-iteration limit, all
 * decided before anything is allocated. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "config.h"

#if ATTN_HAVE_VULKAN

#include "vulkan/vk_internal.h"

size_t attn_vk_elems(const attn_problem *p, int which)
{
    const size_t bh = (size_t)p->batch * p->heads, bhkv = (size_t)p->batch * attn_kv_heads(p);
    switch (which) {
    case B_Q: return bh * p->seq_q * p->d_k;
    case B_K: return bhkv * p->seq_kv * p->d_k;
    case B_V: return bhkv * p->seq_kv * p->d_v;
    case B_O: return bh * p->seq_q * p->d_v;
    case B_L: return (size_t)p->batch;
    default:  return 0;
    }
}

size_t attn_vk_bytes(const attn_problem *p, int which)
{
    size_t es = sizeof(float);
    if (which == B_Q)
        es = attn_dtype_size(p->dtype);
    else if (which == B_K || which == B_V)
        es = attn_dtype_size(p->kv_dtype);
    else if (which == B_L)
        es = sizeof(int);
    return attn_vk_elems(p, which) * es;
}

/* Mesa's llvmpipe (lavapipe) counts the iterations of all loops of one
 * shader invocation together and, past 65535, ends every loop after its
 * current iteration (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS): the shader
 * finishes with part of its work silently undone. The kernels unroll the
 * loops whose bodies are small; what is left is counted here per
 * invocation, the largest over the kernels of the case. A loop of k
 * iterations costs k + 1 (its exiting pass counts) except the last one an
 * invocation runs, whose exiting pass can be cut without loss:
 *   flash.comp    per key tile: the tile, BC + 1 keys, and NS + 1 score
 *                 slots (NS = BR BC / invocations) where BC does not divide
 *                 the invocations, over the tiles of one split (all
 *                 ceil(Nk / BC) tiles without split-KV)
 *   decode.comp   the tiles of one split and nothing else (its key loop is
 *                 its last; flash_cm.comp's likewise, but no CPU device
 *                 has the matrix units it needs)
 *   combine.comp  with split-KV: two passes over the S splits and, for
 *                 each of ceil(d_v / 64) columns, one more: (2 + ceil(d_v /
 *                 64)) (S + 1) + ceil(d_v / 64) + 1
 *   scores.comp   ceil(d_k / 16)
 *   softmax.comp  three passes over the row: 3 ceil(Nk / 64) + 2
 *   pv.comp       ceil(Nk / 16)
 * The fused kernel's count is of whole key tiles: test_vulkan finds its
 * limit there, and lavapipe losing the last key one tile further. */
#define LLVMPIPE_LOOP_LIMIT 65535u

static uint64_t loop_iterations(const attn_problem *p, bool fused, const attn_vk_plan_t *pl)
{
    const uint64_t nk = (uint64_t)p->seq_kv;
    if (fused) {
        const uint64_t bc = pl->keys, wg = pl->invocations, sp = pl->splits;
        const uint64_t ns = wg % bc ? ((uint64_t)pl->rows * bc + wg - 1) / wg + 1 : 0;
        const uint64_t keys = sp > 1 && pl->split_keys < nk ? pl->split_keys : nk;
        const uint64_t n = (keys + bc - 1) / bc * (pl->decode || pl->coopmat ? 1
                                                                          : 1 + ns + (bc + 1));
        const uint64_t cols = ((uint64_t)p->d_v + 63) / 64;
        const uint64_t combine = sp > 1 ? (2 + cols) * (sp + 1) + cols + 1 : 0;
        return n > combine ? n : combine;
    }
    uint64_t n = ((uint64_t)p->d_k + 15) / 16;
    if (3 * ((nk + 63) / 64) + 2 > n)
        n = 3 * ((nk + 63) / 64) + 2;
    if ((nk + 15) / 16 > n)
        n = (nk + 15) / 16;
    return n;
}

/* The loop limit of the open device; 0 where it has none. */
static uint64_t loop_limit(void)
{
    if (atomic_load(&attn_vk_planted) == ATTN_VK_PLANT_NO_LOOP_GUARD)
        return 0;
    return attn_vk_g.driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE ? LLVMPIPE_LOOP_LIMIT : 0;
}

static attn_status check_loops(const attn_problem *p, bool fused, const attn_vk_plan_t *pl,
                               char *why, size_t len)
{
    const uint64_t limit = loop_limit(), n = loop_iterations(p, fused, pl);
    if (limit && n > limit) {
        snprintf(why, len, "%s: Nk = %d needs %llu loop iterations in one shader invocation; "
                 "this driver (Mesa llvmpipe) silently stops every loop after %llu",
                 fused ? "vulkan" : "vulkan-3pass", p->seq_kv, (unsigned long long)n,
                 (unsigned long long)limit);
        return ATTN_EUNSUPPORTED;
    }
    return ATTN_OK;
}

uint64_t attn_vk_fused_shared(uint64_t br, uint64_t bc, int d_k, int d_v)
{
    const uint64_t dk4 = ((uint64_t)d_k + 3) / 4, dv4 = ((uint64_t)d_v + 3) / 4;
    const uint64_t ks = dk4 | 1, ps = bc | 1;
    const uint64_t kv = bc * (ks > dv4 ? ks : dv4);
    return (br * dk4 + kv) * 4 * sizeof(float) + (br * ps + 3 * br) * sizeof(float);
}

uint64_t attn_vk_cm_shared(int d)
{
    /* K/V tile (64 keys, rows of d + 8 halves), scores (4 x 16 rows of 68
     * floats), P (4 x 16 rows of 72 halves), 4 scratch 16 x 16 floats, l
     * of 64 rows, a flag in 4 words: flash_cm.comp's declarations. */
    return 64 * ((uint64_t)d + 8) * 2 + 4 * 16 * 68 * 4 + 4 * 16 * 72 * 2 + 4 * 256 * 4 +
           64 * 4 + 16;
}

uint64_t attn_vk_decode_shared(uint64_t r, uint64_t wg, int d_k, int d_v)
{
    const uint64_t dk4 = (uint64_t)d_k / 4, dv4 = (uint64_t)d_v / 4, kq = wg / dv4;
    return (r * dk4 + kq * r * dv4) * 4 * sizeof(float) +
           (r * (wg | 1) + 2 * kq * r) * sizeof(float);
}

/* Split-KV for the fused kernel: each block's keys cut into S chunks of
 * whole key tiles, run as S times the workgroups, whose partial rows
 * (unnormalized O, m and l) combine.comp merges. `want` is --splits: N
 * (at most one chunk per key tile), 1 never, 0 the plan's choice: on a
 * GPU, enough chunks for WG_TARGET workgroups where the `wgs` alone
 * are fewer (decoding, short prefill), at least 4 tiles a chunk and at most
 * 64 chunks; on a CPU device (lavapipe) none, its threads being few. */
#define WG_TARGET 1024u

static attn_status plan_splits(const attn_problem *p, int want, uint64_t wgs,
                               attn_vk_plan_t *pl, uint64_t range, char *why, size_t len)
{
    const VkPhysicalDeviceLimits *lim = &attn_vk_g.props.limits;
    const uint64_t tiles = ((uint64_t)p->seq_kv + pl->keys - 1) / pl->keys;
    uint64_t s = 1;
    if (want > 0)
        s = (uint64_t)want;
    else if (!pl->cpu_device && wgs < WG_TARGET) {
        s = (WG_TARGET + wgs - 1) / wgs;
        if (s > tiles / 4)
            s = tiles / 4;
        if (s > 64)
            s = 64;
    }
    if (s > tiles)
        s = tiles;
    if (s < 1)
        s = 1;
    const uint64_t per = tiles ? (tiles + s - 1) / s : 1;     /* tiles per chunk */
    s = tiles ? (tiles + per - 1) / per : 1;                   /* no empty chunk */
    pl->splits = 1;
    pl->split_keys = (uint32_t)(per * pl->keys);
    if (s == 1)
        return ATTN_OK;
    const uint64_t rows = (uint64_t)p->batch * p->heads * p->seq_q;
    const uint64_t bytes = s * rows * ((uint64_t)p->d_v + 2) * sizeof(float);
    const char *no = NULL;
    if ((uint64_t)p->batch * s > lim->maxComputeWorkGroupCount[2])
        no = "B x splits workgroups exceed maxComputeWorkGroupCount[2]";
    else if (rows > lim->maxComputeWorkGroupCount[0])
        no = "B x H x Nq rows to merge exceed maxComputeWorkGroupCount[0]";
    else if (bytes > range)
        no = "the partial rows exceed maxStorageBufferRange";
    if (no && want > 0) {
        snprintf(why, len, "vulkan: --splits %d: %s", want, no);
        return ATTN_EUNSUPPORTED;
    }
    if (!no)
        pl->splits = (uint32_t)s;
    return ATTN_OK;
}

/* Whether the fused kernels' grid (x, y, z; z before split-KV) fits the
 * device's workgroup counts; why says it where it does not. */
static bool grid_fits(uint64_t x, uint64_t y, uint64_t z, char *why, size_t len)
{
    const uint32_t *n = attn_vk_g.props.limits.maxComputeWorkGroupCount;
    if (x <= n[0] && y <= n[1] && z <= n[2])
        return true;
    snprintf(why, len, "vulkan: the grid (%llu, %llu, %llu) exceeds this device's "
             "maxComputeWorkGroupCount (%u, %u, %u)", (unsigned long long)x,
             (unsigned long long)y, (unsigned long long)z, n[0], n[1], n[2]);
    return false;
}

/* Invocations per workgroup of the fused kernels: `gpu` on a GPU, 64 on a
 * CPU device (unless a test asks for the GPU's: attn_vk_gpu_sizes), or what
 * a test forces, within the device's limits. */
static uint32_t invocations(uint32_t gpu, bool cpu_device)
{
    const VkPhysicalDeviceLimits *lim = &attn_vk_g.props.limits;
    uint32_t wg = cpu_device && !atomic_load(&attn_vk_gpu_sizes_on) ? 64 : gpu;
    if (atomic_load(&attn_vk_invocations))
        wg = atomic_load(&attn_vk_invocations);
    if (wg > lim->maxComputeWorkGroupSize[0])
        wg = lim->maxComputeWorkGroupSize[0];
    if (wg > lim->maxComputeWorkGroupInvocations)
        wg = lim->maxComputeWorkGroupInvocations;
    return wg;
}

/* Decoding (Nq = 1) runs decode.comp where its vector loads fit the rows:
 * d_k and d_v multiples of 4 (d_k of 8 in fp16 and bf16, read 16 bytes at
 * a time), one vec4 column of V per invocation of a group (d_v / 4 <=
 * invocations), and shared memory for at least one query head. Up to 8
 * query heads of one K/V head share each read of K and V (more would spill
 * the registers that hold their accumulators); a tile is one key per
 * invocation: 128 on a GPU, 64 on a CPU device. Elsewhere decoding runs
 * flash.comp with one row a block. Sets pl->decode, rows (query heads per
 * workgroup), keys and invocations; false where it does not apply. */
static bool plan_decode(const attn_problem *p, attn_vk_plan_t *pl)
{
    const uint64_t limit = attn_vk_g.props.limits.maxComputeSharedMemorySize;
    const int kmul = attn_dtype_half(p->dtype) ? 8 : 4;
    if (p->seq_q != 1 || p->d_k % kmul || p->d_v % 4)
        return false;
    const uint32_t wg = invocations(128, pl->cpu_device);
    if ((uint32_t)p->d_v / 4 > wg)
        return false;
    uint32_t r = attn_group(p) < 8 ? (uint32_t)attn_group(p) : 8;
    while (r > 1 && attn_vk_decode_shared(r, wg, p->d_k, p->d_v) > limit)
        r--;
    if (attn_vk_decode_shared(r, wg, p->d_k, p->d_v) > limit)
        return false;
    pl->decode = true;
    pl->rows = r;
    pl->keys = wg;
    pl->invocations = wg;
    return true;
}

/* fp16 prefill on the matrix units: flash_cm.comp where the open device
 * can run it (device.c says why not), Q and K/V in fp16, d_k = d_v = 64 or
 * 128 (the builds there are), Nq >= 16 (a block is 64 rows; fewer would
 * leave most of the product to rows that do not exist), and its shared
 * memory within the limit. Sets pl->coopmat, 64 rows and keys a tile,
 * 128 invocations; false where it does not apply. */
static bool plan_coopmat(const attn_problem *p, attn_vk_plan_t *pl)
{
    if (!attn_vk_g.coopmat || atomic_load(&attn_vk_coopmat_off) ||
        p->dtype != ATTN_DTYPE_FP16 || p->kv_dtype != ATTN_DTYPE_FP16 || p->d_k != p->d_v ||
        (p->d_k != 64 && p->d_k != 128) || p->seq_q < 16 ||
        attn_vk_cm_shared(p->d_k) > attn_vk_g.props.limits.maxComputeSharedMemorySize ||
        attn_vk_g.props.limits.maxComputeWorkGroupSize[0] < 128 ||
        attn_vk_g.props.limits.maxComputeWorkGroupInvocations < 128)
        return false;
    pl->coopmat = true;
    pl->rows = 64;
    pl->keys = 64;
    pl->invocations = 128;
    return true;
}

/* The fused kernels' split-KV chunks over `wgs` workgroups and their loop
 * count against the driver's limit, once the tile is planned. */
static attn_status plan_fused_rest(const attn_problem *p, int splits, uint64_t wgs,
                                   attn_vk_plan_t *pl, uint64_t range, char *why, size_t len)
{
    const attn_status st = plan_splits(p, splits, wgs, pl, range, why, len);
    if (st != ATTN_OK)
        return st;
    pl->loop_iterations = loop_iterations(p, true, pl);
    return check_loops(p, true, pl, why, len);
}

/* What the device allows for p, decided before anything is allocated. The
 * fused kernel's tile comes from d and the shared-memory limit; the 3-pass
 * score chunk from maxStorageBufferRange. */
attn_status attn_vk_plan(const attn_problem *p, bool fused, int splits, attn_vk_plan_t *pl,
                        char *why, size_t len)
{
    memset(pl, 0, sizeof(*pl));
    pl->cpu_device = attn_vk_g.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    const VkPhysicalDeviceLimits *lim = &attn_vk_g.props.limits;
    const uint64_t cap = atomic_load(&attn_vk_binding_cap);
    const uint64_t range = cap && cap < lim->maxStorageBufferRange ? cap
                                                                 : lim->maxStorageBufferRange;
    static const char *const names[] = { "Q", "K", "V", "O" };
    for (int i = B_Q; i <= B_O; i++) {
        const uint64_t bytes = (uint64_t)attn_vk_bytes(p, i);
        if (bytes > range) {
            snprintf(why, len, "vulkan: %s is %llu bytes, over this device's "
                     "maxStorageBufferRange of %llu", names[i], (unsigned long long)bytes,
                     (unsigned long long)range);
            return ATTN_EUNSUPPORTED;
        }
    }
    const uint32_t bh = (uint32_t)p->batch * (uint32_t)p->heads;
    if (fused && plan_decode(p, pl)) {
        const uint64_t blocks = ((uint64_t)attn_group(p) + pl->rows - 1) / pl->rows;
        const uint32_t hkv = (uint32_t)attn_kv_heads(p);
        if (!grid_fits(blocks, hkv, (uint64_t)p->batch, why, len))
            return ATTN_EUNSUPPORTED;
        return plan_fused_rest(p, splits, blocks * hkv * (uint64_t)p->batch, pl, range, why, len);
    }
    if (fused && plan_coopmat(p, pl)) {
        const uint64_t blocks = ((uint64_t)p->seq_q + pl->rows - 1) / pl->rows;
        if (!grid_fits(blocks, (uint64_t)p->heads, (uint64_t)p->batch, why, len))
            return ATTN_EUNSUPPORTED;
        return plan_fused_rest(p, splits, blocks * (uint64_t)p->heads * (uint64_t)p->batch, pl,
                               range, why, len);
    }
    if (fused) {
        /* Shared memory (flash.comp) holds Q of BR rows, K or V of BC keys
         * as vec4 (d rounded up to a multiple of 4, K rows at an odd
         * stride), the BR x BC scores (rows at an odd stride) and three
         * floats per row. BR from 32 (or the least power of two not under
         * Nq) down, BC a power of two up to 32 (so that it divides the
         * invocations), as large as maxComputeSharedMemorySize allows
         * (checked here: drivers need not catch it at pipeline creation). */
        const uint64_t limit = lim->maxComputeSharedMemorySize;
        uint64_t rows = 32, keys = 0;
        while (rows > 1 && rows / 2 >= (uint64_t)p->seq_q)
            rows /= 2;              /* no more rows than Nq (decoding: 1) */
        for (; rows >= 1; rows /= 2) {
            for (keys = 32; keys >= 1; keys /= 2)
                if (attn_vk_fused_shared(rows, keys, p->d_k, p->d_v) <= limit)
                    break;
            if (keys >= 8 || (rows == 1 && keys >= 1))
                break;
        }
        if (rows < 1 || keys < 1) {
            snprintf(why, len, "vulkan: one query row and one key with d_k = %d, d_v = %d "
                     "need more than this device's maxComputeSharedMemorySize of %u bytes",
                     p->d_k, p->d_v, lim->maxComputeSharedMemorySize);
            return ATTN_EUNSUPPORTED;
        }
        const uint64_t blocks = ((uint64_t)p->seq_q + rows - 1) / rows;
        if (!grid_fits(blocks, (uint64_t)p->heads, (uint64_t)p->batch, why, len))
            return ATTN_EUNSUPPORTED;
        pl->rows = (uint32_t)rows;
        pl->keys = (uint32_t)keys;
        /* Invocations per workgroup: 256 for blocks of 32 rows, 128 for
         * fewer (decoding), where the device allows it. On an H200 (one
         * run, results/gpu/fused-ab) 256 took 0.16-0.17x the time of 64 at
         * d = 128 (where 64 was slower than the kernel before this one)
         * and 0.41-0.43x at d = 64; with one row, 128 took 0.61-0.65x the
         * time of 64 (256 was not measured there). On a CPU device
         * (lavapipe) 64: there 256 took 1.34-1.39x the time of 64 (B=1,
         * H=4, N=256, d=64 and 128, 3 rounds). */
        pl->invocations = invocations(rows >= 32 ? 256 : 128, pl->cpu_device);
        return plan_fused_rest(p, splits, blocks * (uint64_t)p->heads * (uint64_t)p->batch, pl,
                               range, why, len);
    }
    if (lim->maxComputeWorkGroupInvocations < 256 || lim->maxComputeWorkGroupSize[0] < 64 ||
        lim->maxComputeWorkGroupSize[1] < 16) {
        snprintf(why, len, "vulkan-3pass: its 16x16 workgroups need 256 invocations; "
                 "this device allows %u", lim->maxComputeWorkGroupInvocations);
        return ATTN_EUNSUPPORTED;
    }
    const uint64_t head_bytes = (uint64_t)p->seq_q * p->seq_kv * sizeof(float);
    if (head_bytes > range) {
        snprintf(why, len, "vulkan-3pass: one head's %d x %d score matrix (%llu bytes) exceeds "
                 "this device's maxStorageBufferRange of %llu", p->seq_q, p->seq_kv,
                 (unsigned long long)head_bytes, (unsigned long long)range);
        return ATTN_EUNSUPPORTED;
    }
    uint64_t heads = range / head_bytes;
    if (heads > bh)
        heads = bh;
    if (heads > lim->maxComputeWorkGroupCount[2])
        heads = lim->maxComputeWorkGroupCount[2];
    const uint64_t tiles_q = ((uint64_t)p->seq_q + 15) / 16, tiles_k = ((uint64_t)p->seq_kv + 15) / 16;
    if (tiles_k > lim->maxComputeWorkGroupCount[0] ||
        (uint64_t)p->seq_q > lim->maxComputeWorkGroupCount[0] ||
        tiles_q > lim->maxComputeWorkGroupCount[1] ||
        ((uint64_t)p->d_v + 15) / 16 > lim->maxComputeWorkGroupCount[0]) {
        snprintf(why, len, "vulkan-3pass: Nq = %d or Nk = %d exceeds this device's "
                 "maxComputeWorkGroupCount", p->seq_q, p->seq_kv);
        return ATTN_EUNSUPPORTED;
    }
    pl->chunk = (int)heads;
    pl->loop_iterations = loop_iterations(p, false, pl);
    return check_loops(p, false, pl, why, len);
}

static attn_status vk_supports_common(const attn_problem *p, const attn_config *cfg, bool fused,
                                      char *why, size_t len)
{
    const char *name = fused ? "vulkan" : "vulkan-3pass";
    if (p->dtype != p->kv_dtype) {
        snprintf(why, len, "%s: its shaders take Q and K/V in one type (this case: Q %s, K/V %s)",
                 name, attn_dtype_name(p->dtype), attn_dtype_name(p->kv_dtype));
        return ATTN_EUNSUPPORTED;
    }
    attn_status st = attn_vk_open_device(cfg->device, why, len);
    if (st != ATTN_OK)
        return st;
    if (attn_dtype_half(p->dtype) && !attn_vk_g.storage16) {
        snprintf(why, len, "%s: %s lacks storageBuffer16BitAccess, which %s storage needs",
                 name, attn_vk_g.props.deviceName, attn_dtype_name(p->dtype));
        return ATTN_EUNSUPPORTED;
    }
    attn_vk_plan_t pl;
    return attn_vk_plan(p, fused, cfg->splits, &pl, why, len);
}

attn_status attn_vk_plan_info(const attn_problem *p, bool fused, int splits,
                              attn_vk_plan_t *out, char *why, size_t len)
{
    attn_status st = attn_vk_open_device(-1, why, len);
    if (st != ATTN_OK)
        return st;
    const int saved = atomic_exchange(&attn_vk_planted, ATTN_VK_PLANT_NO_LOOP_GUARD);
    st = attn_vk_plan(p, fused, splits, out, why, len);
    atomic_store(&attn_vk_planted, saved);
    out->loop_limit = attn_vk_g.driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE ? LLVMPIPE_LOOP_LIMIT : 0;
    return st;
}

attn_status attn_vk_fused_supports(const attn_problem *p, const attn_config *cfg, char *why,
                                  size_t len)
{
    return vk_supports_common(p, cfg, true, why, len);
}

attn_status attn_vk_threepass_supports(const attn_problem *p, const attn_config *cfg,
                                      char *why, size_t len)
{
    return vk_supports_common(p, cfg, false, why, len);
}

attn_status attn_vk_probe(char *why, size_t len)
{
    return attn_vk_open_device(-1, why, len);
}

#endif

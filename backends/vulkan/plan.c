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
 *   flash.comp    per key tile: the tile, NS + 1 score slots, BC + 1 keys
 *                 (NS = BR BC / invocations), over ceil(Nk / BC) tiles
 *   scores.comp   ceil(d_k / 16)
 *   softmax.comp  three passes over the row: 3 ceil(Nk / 64) + 2
 *   pv.comp       ceil(Nk / 16)
 * test_vulkan finds the fused kernel's limit exactly where this puts it. */
#define LLVMPIPE_LOOP_LIMIT 65535u

static uint64_t loop_iterations(const attn_problem *p, bool fused, uint32_t br, uint32_t bc,
                                uint32_t wg)
{
    const uint64_t nk = (uint64_t)p->seq_kv;
    if (fused) {
        const uint64_t ns = ((uint64_t)br * bc + wg - 1) / wg;
        return (nk + bc - 1) / bc * (1 + (ns + 1) + (bc + 1));
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

static attn_status check_loops(const attn_problem *p, bool fused, uint32_t br, uint32_t bc,
                               uint32_t wg, char *why, size_t len)
{
    const uint64_t limit = loop_limit(), n = loop_iterations(p, fused, br, bc, wg);
    if (limit && n > limit) {
        snprintf(why, len, "%s: Nk = %d needs %llu loop iterations in one shader invocation; "
                 "this driver (Mesa llvmpipe) silently stops every loop after %llu",
                 fused ? "vulkan" : "vulkan-3pass", p->seq_kv, (unsigned long long)n,
                 (unsigned long long)limit);
        return ATTN_EUNSUPPORTED;
    }
    return ATTN_OK;
}

/* What the device allows for p, decided before anything is allocated. The
 * fused kernel's tile comes from d and the shared-memory limit; the 3-pass
 * score chunk from maxStorageBufferRange. */
attn_status attn_vk_plan(const attn_problem *p, bool fused, uint32_t *br, uint32_t *bc,
                        uint32_t *wg_out, int *chunk, char *why, size_t len)
{
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
    if (fused) {
        /* Invocations per workgroup: 64 where the device allows it. */
        uint32_t wg = 64;
        if (wg > lim->maxComputeWorkGroupSize[0])
            wg = lim->maxComputeWorkGroupSize[0];
        if (wg > lim->maxComputeWorkGroupInvocations)
            wg = lim->maxComputeWorkGroupInvocations;
        /* Shared memory holds Q of BR rows and K and V of BC keys as vec4
         * (d rounded up to a multiple of 4), the BR x BC scores and three
         * floats per row; BR from 32 down, BC up to 32, as large as
         * maxComputeSharedMemorySize allows (checked here: drivers need not
         * catch it at pipeline creation). */
        const uint64_t limit = lim->maxComputeSharedMemorySize;
        const uint64_t dk = ((uint64_t)p->d_k + 3) & ~3u, dv = ((uint64_t)p->d_v + 3) & ~3u;
        uint64_t rows = 32, keys = 0;
        for (; rows >= 1; rows /= 2) {
            const uint64_t fixed = rows * (dk + 3) * sizeof(float);
            keys = fixed < limit ? (limit - fixed) / ((dk + dv + rows) * sizeof(float)) : 0;
            if (keys > 32)
                keys = 32;
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
        if (blocks > lim->maxComputeWorkGroupCount[0] ||
            (uint32_t)p->heads > lim->maxComputeWorkGroupCount[1] ||
            (uint32_t)p->batch > lim->maxComputeWorkGroupCount[2]) {
            snprintf(why, len, "vulkan: the grid (%llu, %d, %d) exceeds this device's "
                     "maxComputeWorkGroupCount (%u, %u, %u)", (unsigned long long)blocks,
                     p->heads, p->batch, lim->maxComputeWorkGroupCount[0],
                     lim->maxComputeWorkGroupCount[1], lim->maxComputeWorkGroupCount[2]);
            return ATTN_EUNSUPPORTED;
        }
        *br = (uint32_t)rows;
        *bc = (uint32_t)keys;
        *wg_out = wg;
        *chunk = 0;
        return check_loops(p, true, *br, *bc, *wg_out, why, len);
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
    *chunk = (int)heads;
    *br = *bc = *wg_out = 0;
    return check_loops(p, false, 0, 0, 0, why, len);
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
    if (p->dtype == ATTN_DTYPE_FP16 && !attn_vk_g.storage16) {
        snprintf(why, len, "%s: %s lacks storageBuffer16BitAccess, which fp16 storage needs",
                 name, attn_vk_g.props.deviceName);
        return ATTN_EUNSUPPORTED;
    }
    uint32_t br, bc, wg;
    int chunk;
    return attn_vk_plan(p, fused, &br, &bc, &wg, &chunk, why, len);
}

attn_status attn_vk_plan_info(const attn_problem *p, bool fused, attn_vk_plan_t *out,
                              char *why, size_t len)
{
    attn_status st = attn_vk_open_device(-1, why, len);
    if (st != ATTN_OK)
        return st;
    memset(out, 0, sizeof(*out));
    const int saved = atomic_exchange(&attn_vk_planted, ATTN_VK_PLANT_NO_LOOP_GUARD);
    st = attn_vk_plan(p, fused, &out->rows, &out->keys, &out->invocations, &out->chunk, why, len);
    atomic_store(&attn_vk_planted, saved);
    out->loop_iterations = loop_iterations(p, fused, out->rows, out->keys, out->invocations);
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

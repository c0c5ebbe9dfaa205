/* vulkan and vulkan-3pass: attention as Vulkan compute shaders (shaders/);
 * this file holds the per-case part: buffers, pipelines, recording and the
 * verbs (device.c: the device layer; plan.c: what a device allows).
 *   vulkan        one dispatch of the fused FlashAttention kernel (flash.comp,
 *                 decode.comp where Nq = 1 and plan.c takes it, or
 *                 flash_cm.comp on the matrix units for fp16 where the
 *                 device has VK_NV_cooperative_matrix); with
 *                 split-KV (plan.c) a second, combine.comp, merging the
 *                 chunks' partial rows
 *   vulkan-3pass  scores (scores.comp), row softmax (softmax.comp) and P.V
 *                 (pv.comp) with S materialized in device memory, heads in
 *                 chunks that fit maxStorageBufferRange
 * One device layer serves both: a process-wide instance and logical device
 * (created on first use, destroyed at exit), and per case: buffers, one
 * staging buffer, pipelines, one descriptor set and three command buffers
 * (upload, run, download) recorded in prepare. bind uploads, run submits the
 * recorded dispatches and waits, read downloads.
 *
 * 16-bit storage (--dtype fp16 or bf16, Q and K/V alike): the buffers hold
 * the 16-bit values and the shaders built with -DSTORAGE16 read them as
 * float16_t, those built with -DSTORAGEBF16 as uint16_t widened by a shift
 * (GLSL has no bf16 type; bf16 is the upper half of an fp32), both through
 * the device's storageBuffer16BitAccess (enabled when it has it; refused
 * otherwise), and compute in fp32: half the bytes to upload and to read.
 * decode.comp reads them through 32-bit words.
 *
 * Validation: with ATTN_VK_VALIDATION=1 in the environment the instance
 * enables VK_LAYER_KHRONOS_validation with synchronization validation and a
 * debug-utils messenger; every error it reports is printed to stderr and
 * turns the verb that caused it into ATTN_EDEVICE, so tests fail on it. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "config.h"
#include "vulkan/vk.h"

#if ATTN_HAVE_VULKAN

#include "vulkan/vk_internal.h"


static const uint32_t flash_spv[] =
#include "flash.spv.h"
;
static const uint32_t scores_spv[] =
#include "scores.spv.h"
;
static const uint32_t softmax_spv[] =
#include "softmax.spv.h"
;
static const uint32_t pv_spv[] =
#include "pv.spv.h"
;
static const uint32_t combine_spv[] =
#include "combine.spv.h"
;
static const uint32_t decode_spv[] =
#include "decode.spv.h"
;
/* The same shaders reading Q, K and V as fp16 (-DSTORAGE16) and as bf16
 * (-DSTORAGEBF16). */
static const uint32_t flash16_spv[] =
#include "flash16.spv.h"
;
static const uint32_t scores16_spv[] =
#include "scores16.spv.h"
;
static const uint32_t pv16_spv[] =
#include "pv16.spv.h"
;
static const uint32_t decode16_spv[] =
#include "decode16.spv.h"
;
static const uint32_t flashbf16_spv[] =
#include "flashbf16.spv.h"
;
static const uint32_t scoresbf16_spv[] =
#include "scoresbf16.spv.h"
;
static const uint32_t pvbf16_spv[] =
#include "pvbf16.spv.h"
;
static const uint32_t decodebf16_spv[] =
#include "decodebf16.spv.h"
;
static const uint32_t flash_cm64_spv[] =
#include "flash_cm64.spv.h"
;
static const uint32_t flash_cm128_spv[] =
#include "flash_cm128.spv.h"
;
/* A shader's SPIR-V for storage type dt (fp32, fp16, bf16), and its bytes. */
#define SPV(name, dt) ((dt) == ATTN_DTYPE_FP16 ? name##16_spv                  \
                       : (dt) == ATTN_DTYPE_BF16 ? name##bf16_spv : name##_spv)
#define SPV_BYTES(name, dt) ((dt) == ATTN_DTYPE_FP16 ? sizeof(name##16_spv)     \
                             : (dt) == ATTN_DTYPE_BF16 ? sizeof(name##bf16_spv)  \
                                                       : sizeof(name##_spv))

/* ---- one case ------------------------------------------------------------ */

enum { P_FLASH, P_COMBINE, P_SCORES, P_SOFTMAX, P_PV, NPIPE };

typedef struct push {
    uint32_t heads, nq, nk, dk, dv, causal, head_base;
    float scale;
    uint32_t group;               /* H / Hkv: query head h reads K/V head h / group */
    uint32_t splits, split_keys;  /* fused: split-KV chunks, keys per chunk */
    uint32_t rows;                /* fused: B H Nq, the rows combine.comp merges */
} push;

typedef struct vk_buf {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize bytes;
} vk_buf;

typedef struct vk_state {
    attn_problem p;
    const attn_allocator *alloc;
    bool fused;
    VkDevice dev;
    vk_buf b[NBUF], staging;
    void *mapped;
    VkDeviceSize off[5];            /* staging offsets of Q, K, V, kv_len, O */
    size_t device_bytes;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkDescriptorPool pool;
    VkDescriptorSet set;
    VkShaderModule module[NPIPE];
    VkPipeline pipe[NPIPE];
    VkCommandPool cpool;
    VkCommandBuffer up, run, down;
    VkFence fence;
    VkQueryPool queries;
    bool timestamps;
    double last_device_s;
    attn_vk_plan_t plan;            /* plan.c: tile, split-KV, 3-pass head chunks */
    char device[1024];
    bool is_cpu;
    float *o;
} vk_state;

static uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < attn_vk_g.mem.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (attn_vk_g.mem.memoryTypes[i].propertyFlags & want) == want)
            return i;
    return UINT32_MAX;
}

static VkResult buf_create(vk_state *s, vk_buf *b, VkDeviceSize bytes, VkBufferUsageFlags usage,
                           VkMemoryPropertyFlags want, VkMemoryPropertyFlags fallback)
{
    b->bytes = bytes;
    const VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = bytes,
        .usage = usage,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = vkCreateBuffer(s->dev, &bci, NULL, &b->buf);
    if (r != VK_SUCCESS)
        return r;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(s->dev, b->buf, &req);
    uint32_t type = memory_type(req.memoryTypeBits, want);
    if (type == UINT32_MAX)
        type = memory_type(req.memoryTypeBits, fallback);
    if (type == UINT32_MAX)
        return VK_ERROR_OUT_OF_DEVICE_MEMORY;
    const VkMemoryAllocateInfo mai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    r = vkAllocateMemory(s->dev, &mai, NULL, &b->mem);
    if (r != VK_SUCCESS)
        return r;
    s->device_bytes += req.size;
    return vkBindBufferMemory(s->dev, b->buf, b->mem, 0);
}

static void buf_destroy(vk_state *s, vk_buf *b)
{
    if (b->buf)
        vkDestroyBuffer(s->dev, b->buf, NULL);
    if (b->mem)
        vkFreeMemory(s->dev, b->mem, NULL);
    memset(b, 0, sizeof(*b));
}

static void vk_release(void *state)
{
    vk_state *s = state;
    if (!s)
        return;
    if (s->dev) {
        vkDeviceWaitIdle(s->dev);
        if (s->queries)
            vkDestroyQueryPool(s->dev, s->queries, NULL);
        if (s->fence)
            vkDestroyFence(s->dev, s->fence, NULL);
        if (s->cpool)
            vkDestroyCommandPool(s->dev, s->cpool, NULL);
        for (int i = 0; i < NPIPE; i++) {
            if (s->pipe[i])
                vkDestroyPipeline(s->dev, s->pipe[i], NULL);
            if (s->module[i])
                vkDestroyShaderModule(s->dev, s->module[i], NULL);
        }
        if (s->pool)
            vkDestroyDescriptorPool(s->dev, s->pool, NULL);
        if (s->layout)
            vkDestroyPipelineLayout(s->dev, s->layout, NULL);
        if (s->dsl)
            vkDestroyDescriptorSetLayout(s->dev, s->dsl, NULL);
        if (s->mapped)
            vkUnmapMemory(s->dev, s->staging.mem);
        for (int i = 0; i < NBUF; i++)
            buf_destroy(s, &s->b[i]);
        buf_destroy(s, &s->staging);
    }
    attn_free(s->alloc, s);
}

static VkResult make_pipeline(vk_state *s, int i, const uint32_t *code, size_t bytes,
                              const VkSpecializationInfo *spec)
{
    const VkShaderModuleCreateInfo smi = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = bytes,
        .pCode = code,
    };
    VkResult r = vkCreateShaderModule(s->dev, &smi, NULL, &s->module[i]);
    if (r != VK_SUCCESS)
        return r;
    const VkComputePipelineCreateInfo cpi = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = s->module[i],
            .pName = "main",
            .pSpecializationInfo = spec,
        },
        .layout = s->layout,
    };
    return vkCreateComputePipelines(s->dev, VK_NULL_HANDLE, 1, &cpi, NULL, &s->pipe[i]);
}

static void barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access,
                    VkPipelineStageFlags dst, VkAccessFlags dst_access)
{
    const VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = src_access,
        .dstAccessMask = dst_access,
    };
    vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

#define ALL_RW (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | \
                VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT)
#define STAGES (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT)

static VkResult record(vk_state *s)
{
    const attn_problem *p = &s->p;
    const VkCommandBufferBeginInfo begin = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
    VkResult r;

    /* Upload: staging -> Q, K, V, kv_len. */
    if ((r = vkBeginCommandBuffer(s->up, &begin)) != VK_SUCCESS)
        return r;
    barrier(s->up, STAGES | VK_PIPELINE_STAGE_HOST_BIT, ALL_RW | VK_ACCESS_HOST_WRITE_BIT,
            VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    const int ups[] = { B_Q, B_K, B_V, B_L };
    for (int i = 0; i < 4; i++) {
        const VkBufferCopy c = { .srcOffset = s->off[i], .dstOffset = 0,
                                 .size = s->b[ups[i]].bytes };
        vkCmdCopyBuffer(s->up, s->staging.buf, s->b[ups[i]].buf, 1, &c);
    }
    if ((r = vkEndCommandBuffer(s->up)) != VK_SUCCESS)
        return r;

    /* Run: the dispatches between two timestamps. */
    if ((r = vkBeginCommandBuffer(s->run, &begin)) != VK_SUCCESS)
        return r;
    barrier(s->run, STAGES, ALL_RW, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    if (s->timestamps) {
        vkCmdResetQueryPool(s->run, s->queries, 0, 2);
        vkCmdWriteTimestamp(s->run, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, s->queries, 0);
    }
    vkCmdBindDescriptorSets(s->run, VK_PIPELINE_BIND_POINT_COMPUTE, s->layout, 0, 1, &s->set, 0,
                            NULL);
    const attn_vk_plan_t *pl = &s->plan;
    const VkAccessFlags rw = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    push pc = { (uint32_t)p->heads, (uint32_t)p->seq_q, (uint32_t)p->seq_kv, (uint32_t)p->d_k,
                (uint32_t)p->d_v, p->causal, 0, p->scale, (uint32_t)attn_group(p),
                pl->splits, pl->split_keys,
                (uint32_t)p->batch * (uint32_t)p->heads * (uint32_t)p->seq_q };
    if (s->fused) {
        vkCmdBindPipeline(s->run, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipe[P_FLASH]);
        vkCmdPushConstants(s->run, s->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), &pc);
        if (pl->decode)             /* query heads of one K/V head, K/V heads, chunks */
            vkCmdDispatch(s->run, ((uint32_t)attn_group(p) + pl->rows - 1) / pl->rows,
                          (uint32_t)attn_kv_heads(p), (uint32_t)p->batch * pl->splits);
        else
            vkCmdDispatch(s->run, ((uint32_t)p->seq_q + pl->rows - 1) / pl->rows,
                          (uint32_t)p->heads, (uint32_t)p->batch * pl->splits);
        if (pl->splits > 1) {       /* the chunks' partial rows, merged into O */
            barrier(s->run, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw,
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw);
            vkCmdBindPipeline(s->run, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipe[P_COMBINE]);
            vkCmdDispatch(s->run, pc.rows, 1, 1);
        }
    } else {
        const int bh = p->batch * p->heads, chunk = pl->chunk;
        for (int h0 = 0; h0 < bh; h0 += chunk) {
            const uint32_t n = (uint32_t)(bh - h0 < chunk ? bh - h0 : chunk);
            pc.head_base = (uint32_t)h0;
            vkCmdPushConstants(s->run, s->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), &pc);
            if (h0 > 0) /* the previous chunk's P.V has read S */
                barrier(s->run, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw,
                        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw);
            vkCmdBindPipeline(s->run, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipe[P_SCORES]);
            vkCmdDispatch(s->run, ((uint32_t)p->seq_kv + 15) / 16, ((uint32_t)p->seq_q + 15) / 16, n);
            barrier(s->run, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw,
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw);
            vkCmdBindPipeline(s->run, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipe[P_SOFTMAX]);
            vkCmdDispatch(s->run, (uint32_t)p->seq_q, n, 1);
            if (atomic_load(&attn_vk_planted) != ATTN_VK_PLANT_NO_BARRIER)
                barrier(s->run, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw,
                        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw);
            vkCmdBindPipeline(s->run, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipe[P_PV]);
            vkCmdDispatch(s->run, ((uint32_t)p->d_v + 15) / 16, ((uint32_t)p->seq_q + 15) / 16, n);
        }
    }
    if (s->timestamps)
        vkCmdWriteTimestamp(s->run, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, s->queries, 1);
    if ((r = vkEndCommandBuffer(s->run)) != VK_SUCCESS)
        return r;

    /* Download: O -> staging, visible to the host. */
    if ((r = vkBeginCommandBuffer(s->down, &begin)) != VK_SUCCESS)
        return r;
    barrier(s->down, STAGES, ALL_RW, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    const VkBufferCopy c = { .srcOffset = 0, .dstOffset = s->off[4], .size = s->b[B_O].bytes };
    vkCmdCopyBuffer(s->down, s->b[B_O].buf, s->staging.buf, 1, &c);
    barrier(s->down, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    return vkEndCommandBuffer(s->down);
}

static VkResult submit(vk_state *s, VkCommandBuffer cb)
{
    const VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &cb,
    };
    VkResult r = vkQueueSubmit(attn_vk_g.queue, 1, &si, s->fence);
    if (r == VK_SUCCESS)
        r = vkWaitForFences(s->dev, 1, &s->fence, VK_TRUE, UINT64_MAX);
    if (r == VK_SUCCESS)
        r = vkResetFences(s->dev, 1, &s->fence);
    return r;
}

static VkResult build(vk_state *s)
{
    const attn_problem *p = &s->p;
    const attn_dtype dt = p->dtype;                 /* Q, K and V alike (supports) */
    VkResult r;
    const VkBufferUsageFlags use = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                   VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                   VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
    const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    for (int i = B_Q; i <= B_L; i++)
        if ((r = buf_create(s, &s->b[i], attn_vk_bytes(p, i), use, local, 0)) != VK_SUCCESS)
            return r;
    /* Binding 5: vulkan-3pass's S, the fused kernel's partial rows under
     * split-KV (O unnormalized, m and l of each chunk's rows; a word
     * unused without). */
    VkDeviceSize sbytes = (VkDeviceSize)s->plan.chunk * p->seq_q * p->seq_kv * sizeof(float);
    if (s->fused)
        sbytes = s->plan.splits > 1 ? (VkDeviceSize)s->plan.splits * p->batch * p->heads *
                                          p->seq_q * (p->d_v + 2) * sizeof(float)
                                    : sizeof(float);
    r = buf_create(s, &s->b[B_S], sbytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, local, 0);
    if (r != VK_SUCCESS)
        return r;
    /* Staging: Q | K | V | kv_len up, O down, each region its own. */
    VkDeviceSize at = 0;
    const int regions[] = { B_Q, B_K, B_V, B_L, B_O };
    for (int i = 0; i < 5; i++) {
        s->off[i] = at;
        at += (s->b[regions[i]].bytes + 255) & ~(VkDeviceSize)255;
    }
    if ((r = buf_create(s, &s->staging, at,
                        VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                            VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) != VK_SUCCESS)
        return r;
    if ((r = vkMapMemory(s->dev, s->staging.mem, 0, VK_WHOLE_SIZE, 0, &s->mapped)) != VK_SUCCESS) {
        s->mapped = NULL;
        return r;
    }

    /* One descriptor set: bindings 0..5 = Q, K, V, O, kv_len, S or the
     * partial rows. */
    const int nb = 6;
    VkDescriptorSetLayoutBinding lb[NBUF];
    for (int i = 0; i < nb; i++)
        lb[i] = (VkDescriptorSetLayoutBinding){ .binding = (uint32_t)i,
                                                .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                .descriptorCount = 1,
                                                .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT };
    const VkDescriptorSetLayoutCreateInfo dli = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = (uint32_t)nb,
        .pBindings = lb,
    };
    if ((r = vkCreateDescriptorSetLayout(s->dev, &dli, NULL, &s->dsl)) != VK_SUCCESS)
        return r;
    const VkPushConstantRange pr = { VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push) };
    const VkPipelineLayoutCreateInfo pli = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &s->dsl,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &pr,
    };
    if ((r = vkCreatePipelineLayout(s->dev, &pli, NULL, &s->layout)) != VK_SUCCESS)
        return r;
    const VkDescriptorPoolSize ps = { VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, (uint32_t)nb };
    const VkDescriptorPoolCreateInfo dpi = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = 1,
        .poolSizeCount = 1,
        .pPoolSizes = &ps,
    };
    if ((r = vkCreateDescriptorPool(s->dev, &dpi, NULL, &s->pool)) != VK_SUCCESS)
        return r;
    const VkDescriptorSetAllocateInfo dai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = s->pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &s->dsl,
    };
    if ((r = vkAllocateDescriptorSets(s->dev, &dai, &s->set)) != VK_SUCCESS)
        return r;
    VkDescriptorBufferInfo bi[NBUF];
    VkWriteDescriptorSet w[NBUF];
    for (int i = 0; i < nb; i++) {
        bi[i] = (VkDescriptorBufferInfo){ s->b[i].buf, 0, VK_WHOLE_SIZE };
        w[i] = (VkWriteDescriptorSet){ .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstSet = s->set,
                                       .dstBinding = (uint32_t)i,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &bi[i] };
    }
    vkUpdateDescriptorSets(s->dev, (uint32_t)nb, w, 0, NULL);

    if (s->fused) {
        const uint32_t sc[5] = { s->plan.invocations, s->plan.keys, (uint32_t)p->d_k,
                                 (uint32_t)p->d_v, s->plan.rows };
        const VkSpecializationMapEntry me[5] = {
            { 0, 0, 4 }, { 1, 4, 4 }, { 2, 8, 4 }, { 3, 12, 4 }, { 4, 16, 4 },
        };
        const VkSpecializationInfo spec = { 5, me, sizeof(sc), sc };
        /* decode.comp: invocations, query heads per workgroup, d_k, d_v. */
        const uint32_t dc[4] = { s->plan.invocations, s->plan.rows, (uint32_t)p->d_k,
                                 (uint32_t)p->d_v };
        const VkSpecializationInfo dspec = { 4, me, sizeof(dc), dc };
        if (s->plan.coopmat && p->d_k == 64)
            r = make_pipeline(s, P_FLASH, flash_cm64_spv, sizeof(flash_cm64_spv), NULL);
        else if (s->plan.coopmat)
            r = make_pipeline(s, P_FLASH, flash_cm128_spv, sizeof(flash_cm128_spv), NULL);
        else if (s->plan.decode)
            r = make_pipeline(s, P_FLASH, SPV(decode, dt), SPV_BYTES(decode, dt), &dspec);
        else
            r = make_pipeline(s, P_FLASH, SPV(flash, dt), SPV_BYTES(flash, dt), &spec);
        if (r == VK_SUCCESS && s->plan.splits > 1)
            r = make_pipeline(s, P_COMBINE, combine_spv, sizeof(combine_spv), NULL);
        if (r != VK_SUCCESS)
            return r;
    } else {
        r = make_pipeline(s, P_SCORES, SPV(scores, dt), SPV_BYTES(scores, dt), NULL);
        if (r == VK_SUCCESS)
            r = make_pipeline(s, P_SOFTMAX, softmax_spv, sizeof(softmax_spv), NULL);
        if (r == VK_SUCCESS)
            r = make_pipeline(s, P_PV, SPV(pv, dt), SPV_BYTES(pv, dt), NULL);
        if (r != VK_SUCCESS)
            return r;
    }

    const VkCommandPoolCreateInfo cpi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .queueFamilyIndex = attn_vk_g.family,
    };
    if ((r = vkCreateCommandPool(s->dev, &cpi, NULL, &s->cpool)) != VK_SUCCESS)
        return r;
    VkCommandBuffer cbs[3];
    const VkCommandBufferAllocateInfo cai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = s->cpool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 3,
    };
    if ((r = vkAllocateCommandBuffers(s->dev, &cai, cbs)) != VK_SUCCESS)
        return r;
    s->up = cbs[0];
    s->run = cbs[1];
    s->down = cbs[2];
    const VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    if ((r = vkCreateFence(s->dev, &fci, NULL, &s->fence)) != VK_SUCCESS)
        return r;
    s->timestamps = attn_vk_g.timestamp_bits > 0 && attn_vk_g.props.limits.timestampPeriod > 0;
    if (s->timestamps) {
        const VkQueryPoolCreateInfo qpi = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = 2,
        };
        if ((r = vkCreateQueryPool(s->dev, &qpi, NULL, &s->queries)) != VK_SUCCESS)
            return r;
    }
    return record(s);
}

/* ATTN_EDEVICE when the validation layer reported an error since mark. */
static attn_status checked(attn_status st, unsigned long mark)
{
    if (st == ATTN_OK && attn_vk_validation_errors() != mark)
        return ATTN_EDEVICE;
    return st;
}

static attn_status vk_prepare_common(const attn_problem *p, const attn_config *cfg, void **state,
                                     bool fused)
{
    const unsigned long mark = attn_vk_validation_errors();
    char why[256];
    attn_status st = attn_vk_open_device(cfg->device, why, sizeof(why));
    if (st != ATTN_OK)
        return st;
    vk_state *s = attn_alloc(cfg->alloc, sizeof(*s));
    if (!s)
        return ATTN_ENOMEM;
    memset(s, 0, sizeof(*s));
    s->alloc = cfg->alloc;
    s->p = *p;
    s->p.kv_len = NULL;            /* uploaded in bind; not kept */
    s->fused = fused;
    s->dev = attn_vk_g.dev;
    if ((st = attn_vk_plan(p, fused, cfg->splits, &s->plan, why, sizeof(why))) != ATTN_OK)
        goto fail;
    s->is_cpu = s->plan.cpu_device;
    snprintf(s->device, sizeof(s->device), "%s [%s%s; %s %s]", attn_vk_g.props.deviceName,
             attn_vk_type_str(attn_vk_g.props.deviceType), s->is_cpu ? ": not GPU performance" : "",
             attn_vk_g.driver.driverName[0] ? attn_vk_g.driver.driverName : "driver", attn_vk_g.driver.driverInfo);
    VkResult r = build(s);
    if (r != VK_SUCCESS) {
        st = attn_vk_status(r);
        goto fail;
    }
    /* kv_len goes up with the inputs; all keys valid when there is none. */
    int *kv = (int *)((char *)s->mapped + s->off[3]);
    for (int b = 0; b < p->batch; b++)
        kv[b] = p->kv_len ? p->kv_len[b] : p->seq_kv;
    if ((st = checked(ATTN_OK, mark)) != ATTN_OK)
        goto fail;
    *state = s;
    return ATTN_OK;
fail:
    vk_release(s);
    return st;
}

static attn_status fused_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    return vk_prepare_common(p, cfg, state, true);
}

static attn_status threepass_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    return vk_prepare_common(p, cfg, state, false);
}

static attn_status vk_bind(void *state, const attn_tensors *t)
{
    vk_state *s = state;
    const unsigned long mark = attn_vk_validation_errors();
    const bool half = attn_dtype_half(s->p.dtype);   /* fp16 or bf16 bits */
    memcpy((char *)s->mapped + s->off[0], half ? (const void *)t->q16 : (const void *)t->q,
           s->b[B_Q].bytes);
    memcpy((char *)s->mapped + s->off[1], half ? (const void *)t->k16 : (const void *)t->k,
           s->b[B_K].bytes);
    memcpy((char *)s->mapped + s->off[2], half ? (const void *)t->v16 : (const void *)t->v,
           s->b[B_V].bytes);
    s->o = t->o;
    return checked(attn_vk_status(submit(s, s->up)), mark);
}

static attn_status vk_run(void *state)
{
    vk_state *s = state;
    const unsigned long mark = attn_vk_validation_errors();
    VkResult r = submit(s, s->run);
    if (r == VK_SUCCESS && s->timestamps) {
        uint64_t ts[2];
        r = vkGetQueryPoolResults(s->dev, s->queries, 0, 2, sizeof(ts), ts, sizeof(ts[0]),
                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
        const uint64_t mask = attn_vk_g.timestamp_bits >= 64 ? UINT64_MAX
                                                     : (UINT64_C(1) << attn_vk_g.timestamp_bits) - 1;
        const uint64_t ticks = ((ts[1] & mask) - (ts[0] & mask)) & mask;
        s->last_device_s = (double)ticks * attn_vk_g.props.limits.timestampPeriod * 1e-9;
    }
    return checked(attn_vk_status(r), mark);
}

static attn_status vk_read(void *state, float *out)
{
    vk_state *s = state;
    const unsigned long mark = attn_vk_validation_errors();
    VkResult r = submit(s, s->down);
    if (r == VK_SUCCESS)
        memcpy(out, (char *)s->mapped + s->off[4], s->b[B_O].bytes);
    return checked(attn_vk_status(r), mark);
}

static size_t vk_workspace(const attn_problem *p, const attn_config *cfg)
{
    (void)p;
    (void)cfg;
    return sizeof(vk_state);
}

static size_t vk_device_bytes(void *state)
{
    return ((vk_state *)state)->device_bytes;
}

static const char *vk_device_name(void *state, bool *is_cpu)
{
    vk_state *s = state;
    *is_cpu = s->is_cpu;
    return s->device;
}

static bool vk_device_time(void *state, double *seconds)
{
    vk_state *s = state;
    *seconds = s->last_device_s;
    return s->timestamps;
}

static const char *vk_version(void)
{
    static char buf[64];
    const uint32_t v = VK_HEADER_VERSION_COMPLETE;
    snprintf(buf, sizeof(buf), "Vulkan headers %u.%u.%u", VK_API_VERSION_MAJOR(v),
             VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
    return buf;
}

#define VK_COMMON                                                              \
    .dtypes = ATTN_DTYPE_BIT(ATTN_DTYPE_FP16) | ATTN_DTYPE_BIT(ATTN_DTYPE_BF16),  \
    .probe = attn_vk_probe, .bind = vk_bind,                                         \
    .run = vk_run, .read = vk_read, .release = vk_release,                      \
    .workspace = vk_workspace, .device_bytes = vk_device_bytes,                 \
    .version = vk_version, .device_name = vk_device_name,                       \
    .device_time = vk_device_time, .devices = attn_vk_devices

const attn_backend attn_backend_vulkan = {
    .name = "vulkan",
    .summary = "Vulkan compute: fused FlashAttention kernel, one dispatch",
    .supports = attn_vk_fused_supports,
    .prepare = fused_prepare,
    VK_COMMON,
};

const attn_backend attn_backend_vulkan_3pass = {
    .name = "vulkan-3pass",
    .summary = "Vulkan compute: scores, row softmax, P.V; S in device memory, heads chunked",
    .supports = attn_vk_threepass_supports,
    .prepare = threepass_prepare,
    VK_COMMON,
};

#else

#if ATTN_VULKAN_DISABLED
#define NOT_BUILT "this build was configured with -Dvulkan=disabled"
#else
#define NOT_BUILT "libvulkan (pkg-config vulkan) or glslc was not found (Debian: libvulkan-dev, " \
                  "glslc)"
#endif

const attn_backend attn_backend_vulkan = {
    .name = "vulkan",
    .summary = "Vulkan compute: fused FlashAttention kernel, one dispatch",
    .not_built = NOT_BUILT,
};

const attn_backend attn_backend_vulkan_3pass = {
    .name = "vulkan-3pass",
    .summary = "Vulkan compute: scores, row softmax, P.V; S in device memory, heads chunked",
    .not_built = NOT_BUILT,
};

void attn_vk_plant(int bug)
{
    (void)bug;
}

void attn_vk_cap_binding(uint64_t bytes)
{
    (void)bytes;
}

void attn_vk_force_invocations(uint32_t n)
{
    (void)n;
}

void attn_vk_gpu_sizes(bool on)
{
    (void)on;
}

void attn_vk_no_coopmat(bool off)
{
    (void)off;
}

const char *attn_vk_coopmat_why(void)
{
    return "";
}

attn_status attn_vk_plan_info(const attn_problem *p, bool fused, int splits,
                              attn_vk_plan_t *out, char *why, size_t len)
{
    (void)p;
    (void)fused;
    (void)splits;
    memset(out, 0, sizeof(*out));
    snprintf(why, len, "%s", NOT_BUILT);
    return ATTN_EUNSUPPORTED;
}

unsigned long attn_vk_validation_errors(void)
{
    return 0;
}

bool attn_vk_validation_enabled(void)
{
    return false;
}

#endif

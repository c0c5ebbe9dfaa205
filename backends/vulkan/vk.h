/* The Vulkan backends' hooks for tests. */
#ifndef ATTN_VK_H
#define ATTN_VK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

/* Errors the validation layer has reported in this process (0 when it is
 * not enabled: ATTN_VK_VALIDATION=1 enables it). */
unsigned long attn_vk_validation_errors(void);
/* Whether this process's instance has the validation layer on. */
bool attn_vk_validation_enabled(void);

/* A bug to plant in the command buffers recorded after this call, so tests
 * can prove the validation layer catches it. */
enum {
    ATTN_VK_PLANT_NONE = 0,
    /* vulkan-3pass: no barrier between the softmax and P.V dispatches. (The
     * validation layers of Debian 12, 1.3.239, report this one but not a
     * missing barrier between scores and softmax, whose S binding is
     * read-write.) */
    ATTN_VK_PLANT_NO_BARRIER,
    ATTN_VK_PLANT_NO_LOOP_GUARD, /* run shapes past lavapipe's loop-iteration limit */
};
void attn_vk_plant(int bug);

/* For tests: plan as if the device's maxStorageBufferRange were at most
 * `bytes` (0: the device's own), so that vulkan-3pass chunks the heads of a
 * small shape just as it chunks a large one on the real limit. */
void attn_vk_cap_binding(uint64_t bytes);

/* For tests: the fused kernel's workgroups of n invocations (0: the plan's
 * own choice), so that a CPU device runs the GPUs' sizes too. */
void attn_vk_force_invocations(uint32_t n);

/* For tests: a CPU device's fused kernels in the workgroup sizes a GPU gets
 * (true), or in its own (false); what attn_vk_force_invocations sets comes
 * first. */
void attn_vk_gpu_sizes(bool on);


/* For tests and comparisons: flash.comp where flash_cm.comp would run
 * (true), or the plan's own choice (false). */
void attn_vk_no_coopmat(bool off);

/* Why the open device cannot run flash_cm.comp ("" where it can, or where
 * no device could be opened). */
const char *attn_vk_coopmat_why(void);

/* How the backend would run p on the default device, computed as in
 * prepare but without the loop-limit refusal, so tests can stand on either
 * side of that limit. */
typedef struct attn_vk_plan_t {
    bool decode;                    /* fused: decode.comp (Nq = 1) rather than flash.comp */
    bool coopmat;                   /* fused: flash_cm.comp (fp16 on the matrix units) */
    uint32_t rows, keys;            /* fused: query rows per workgroup (decode.comp: query
                                       heads of one K/V head), keys per tile */
    uint32_t invocations;           /* fused: invocations per workgroup */
    uint32_t splits, split_keys;    /* fused: split-KV chunks (1: none), keys per chunk */
    bool cpu_device;                /* the device is a CPU (lavapipe): 64 invocations, no
                                       split-KV of its own */
    int chunk;                      /* 3-pass: heads per score chunk */
    uint64_t loop_iterations;       /* the most loop iterations of one invocation */
    uint64_t loop_limit;            /* the driver's limit on them; 0: none */
} attn_vk_plan_t;
/* splits as --splits: N, 1 none, 0 the plan's choice. */
attn_status attn_vk_plan_info(const attn_problem *p, bool fused, int splits,
                              attn_vk_plan_t *out, char *why, size_t len);

#endif

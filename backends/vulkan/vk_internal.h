/* What the files of the Vulkan backends share (device.c, plan.c, vulkan.c);
 * vk.h is the part open to tests. */
#ifndef ATTN_VK_INTERNAL_H
#define ATTN_VK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "backend.h"
#include "vulkan/vk.h"

#define MAX_DEVICES 16

typedef struct vk_global {
    pthread_mutex_t lock;
    bool tried;
    VkResult init_result;
    char why[256];                  /* why there is no usable instance or device */
    bool validation;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    uint32_t ndev;
    VkPhysicalDevice phys[MAX_DEVICES];
    /* The open logical device. */
    int open_index;
    VkDevice dev;
    VkQueue queue;
    uint32_t family;
    uint32_t timestamp_bits;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceDriverProperties driver;
    VkPhysicalDeviceMemoryProperties mem;
    bool storage16;                 /* storageBuffer16BitAccess, enabled on the device */
    bool coopmat;                   /* flash_cm.comp can run (VK_NV_cooperative_matrix) */
    char coopmat_why[448];          /* why not, where it cannot */
} vk_global;

/* The process-wide instance and open device (device.c), under its lock. */
extern vk_global attn_vk_g;
/* The bug planted by attn_vk_plant (ATTN_VK_PLANT_*). */
extern atomic_int attn_vk_planted;
/* attn_vk_cap_binding's bytes (0: none). */
extern atomic_ullong attn_vk_binding_cap;
/* attn_vk_no_coopmat's choice. */
extern atomic_bool attn_vk_coopmat_off;
/* attn_vk_force_invocations' count (0: the plan's own). */
extern atomic_uint attn_vk_invocations;
/* attn_vk_gpu_sizes' switch: a CPU device planned in the GPU's workgroup sizes. */
extern atomic_bool attn_vk_gpu_sizes_on;

const char *attn_vk_result_str(VkResult r);
attn_status attn_vk_status(VkResult r);
const char *attn_vk_type_str(VkPhysicalDeviceType t);
/* Every device, one line each (the backends' devices slot). */
int attn_vk_devices(char *buf, size_t len);
/* Opens device index (or the best one for -1) as the current logical device. */
attn_status attn_vk_open_device(int index, char *why, size_t len);
/* The probe slot: whether a device can be opened. */
attn_status attn_vk_probe(char *why, size_t len);

/* The device buffers of a case. */
enum { B_Q, B_K, B_V, B_O, B_L, B_S, NBUF };
/* Elements of buffer `which` (B_Q .. B_L) for p, and their bytes (Q, K, V
 * at their storage width: fp32, or fp16 read by the 16-bit shaders). */
size_t attn_vk_elems(const attn_problem *p, int which);
size_t attn_vk_bytes(const attn_problem *p, int which);

/* Bytes of shared memory flash.comp declares for br rows and bc keys. */
uint64_t attn_vk_fused_shared(uint64_t br, uint64_t bc, int d_k, int d_v);
/* Bytes of shared memory flash_cm.comp declares for d = d_k = d_v. */
uint64_t attn_vk_cm_shared(int d);
/* Bytes of shared memory decode.comp declares for r query heads and wg
 * invocations (a tile of wg keys). */
uint64_t attn_vk_decode_shared(uint64_t r, uint64_t wg, int d_k, int d_v);

/* How the open device runs p (attn_vk_plan_t): the fused kernel's rows per
 * workgroup, keys per tile, invocations and split-KV chunks (splits as
 * --splits: N, 1 none, 0 its choice), or the 3-pass kernels' heads per
 * score chunk; ATTN_EUNSUPPORTED with why where the device cannot. */
attn_status attn_vk_plan(const attn_problem *p, bool fused, int splits, attn_vk_plan_t *pl,
                         char *why, size_t len);
attn_status attn_vk_fused_supports(const attn_problem *p, const attn_config *cfg, char *why,
                                   size_t len);
attn_status attn_vk_threepass_supports(const attn_problem *p, const attn_config *cfg,
                                       char *why, size_t len);

#endif

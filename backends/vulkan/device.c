/* The Vulkan backends' device layer: one process-wide instance (with the
 * validation layer and a debug messenger under ATTN_VK_VALIDATION=1), the
 * list of devices, and one open logical device with a compute queue,
 * created on first use and destroyed at exit. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#if ATTN_HAVE_VULKAN

#include "vulkan/vk_internal.h"




vk_global attn_vk_g = { .lock = PTHREAD_MUTEX_INITIALIZER, .open_index = -1 };
static atomic_ulong validation_errors;
atomic_int attn_vk_planted;

void attn_vk_plant(int bug)
{
    atomic_store(&attn_vk_planted, bug);
}

atomic_ullong attn_vk_binding_cap;

void attn_vk_cap_binding(uint64_t bytes)
{
    atomic_store(&attn_vk_binding_cap, (unsigned long long)bytes);
}

atomic_uint attn_vk_invocations;

atomic_bool attn_vk_coopmat_off;

void attn_vk_no_coopmat(bool off)
{
    atomic_store(&attn_vk_coopmat_off, off);
}

const char *attn_vk_coopmat_why(void)
{
    return attn_vk_g.dev && !attn_vk_g.coopmat ? attn_vk_g.coopmat_why : "";
}

void attn_vk_force_invocations(uint32_t n)
{
    atomic_store(&attn_vk_invocations, n);
}

atomic_bool attn_vk_gpu_sizes_on;

void attn_vk_gpu_sizes(bool on)
{
    atomic_store(&attn_vk_gpu_sizes_on, on);
}

unsigned long attn_vk_validation_errors(void)
{
    return atomic_load(&validation_errors);
}

bool attn_vk_validation_enabled(void)
{
    return attn_vk_g.validation;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *d,
                                                 void *user)
{
    (void)type;
    (void)user;
    if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        atomic_fetch_add(&validation_errors, 1);
        fprintf(stderr, "vulkan validation error: %s\n", d->pMessage);
    } else if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        fprintf(stderr, "vulkan validation warning: %s\n", d->pMessage);
    }
    return VK_FALSE;
}

const char *attn_vk_result_str(VkResult r)
{
    switch (r) {
    case VK_SUCCESS:                        return "VK_SUCCESS";
    case VK_ERROR_OUT_OF_HOST_MEMORY:       return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:     return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:    return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:              return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_LAYER_NOT_PRESENT:        return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:    return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:         return "VK_ERROR_TOO_MANY_OBJECTS";
    default:                                return "a VkResult error";
    }
}

attn_status attn_vk_status(VkResult r)
{
    switch (r) {
    case VK_SUCCESS:                    return ATTN_OK;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return ATTN_ENOMEM;
    default:                            return ATTN_EDEVICE;
    }
}

static void close_device(void)
{
    if (attn_vk_g.dev) {
        vkDeviceWaitIdle(attn_vk_g.dev);
        vkDestroyDevice(attn_vk_g.dev, NULL);
    }
    attn_vk_g.dev = VK_NULL_HANDLE;
    attn_vk_g.open_index = -1;
}

static void global_destroy(void)
{
    pthread_mutex_lock(&attn_vk_g.lock);
    close_device();
    if (attn_vk_g.messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)
            vkGetInstanceProcAddr(attn_vk_g.instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy)
            destroy(attn_vk_g.instance, attn_vk_g.messenger, NULL);
    }
    if (attn_vk_g.instance)
        vkDestroyInstance(attn_vk_g.instance, NULL);
    attn_vk_g.instance = VK_NULL_HANDLE;
    pthread_mutex_unlock(&attn_vk_g.lock);
}

static bool env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0");
}

/* Once per process: the instance and the list of devices. */
static attn_status global_init(char *why, size_t len)
{
    pthread_mutex_lock(&attn_vk_g.lock);
    if (!attn_vk_g.tried) {
        attn_vk_g.tried = true;
        attn_vk_g.validation = env_on("ATTN_VK_VALIDATION");
        const char *layers[] = { "VK_LAYER_KHRONOS_validation" };
        const char *exts[] = { VK_EXT_DEBUG_UTILS_EXTENSION_NAME };
        const VkValidationFeatureEnableEXT enables[] = {
            VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT,
        };
        const VkValidationFeaturesEXT features = {
            .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
            .enabledValidationFeatureCount = 1,
            .pEnabledValidationFeatures = enables,
        };
        const VkDebugUtilsMessengerCreateInfoEXT mci = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
            .pNext = &features,
            .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
            .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
            .pfnUserCallback = on_message,
        };
        const VkApplicationInfo app = {
            .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
            .pApplicationName = "attnbench",
            .applicationVersion = 1,
            .apiVersion = VK_API_VERSION_1_2,
        };
        const VkInstanceCreateInfo ci = {
            .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
            .pNext = attn_vk_g.validation ? &mci : NULL,
            .pApplicationInfo = &app,
            .enabledLayerCount = attn_vk_g.validation ? 1 : 0,
            .ppEnabledLayerNames = layers,
            .enabledExtensionCount = attn_vk_g.validation ? 1 : 0,
            .ppEnabledExtensionNames = exts,
        };
        VkResult r = vkCreateInstance(&ci, NULL, &attn_vk_g.instance);
        if (r != VK_SUCCESS) {
            attn_vk_g.instance = VK_NULL_HANDLE;
            snprintf(attn_vk_g.why, sizeof(attn_vk_g.why), "vkCreateInstance: %s%s", attn_vk_result_str(r),
                     r == VK_ERROR_INCOMPATIBLE_DRIVER ? " (no Vulkan driver is installed)" :
                     r == VK_ERROR_LAYER_NOT_PRESENT ?
                         " (ATTN_VK_VALIDATION asks for VK_LAYER_KHRONOS_validation; "
                         "Debian: vulkan-validationlayers)" : "");
        } else {
            if (attn_vk_g.validation) {
                PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)
                    vkGetInstanceProcAddr(attn_vk_g.instance, "vkCreateDebugUtilsMessengerEXT");
                VkDebugUtilsMessengerCreateInfoEXT m = mci;
                m.pNext = NULL;
                if (!create || create(attn_vk_g.instance, &m, NULL, &attn_vk_g.messenger) != VK_SUCCESS)
                    snprintf(attn_vk_g.why, sizeof(attn_vk_g.why), "validation: no debug-utils messenger");
            }
            attn_vk_g.ndev = MAX_DEVICES;
            r = vkEnumeratePhysicalDevices(attn_vk_g.instance, &attn_vk_g.ndev, attn_vk_g.phys);
            if (r != VK_SUCCESS && r != VK_INCOMPLETE)
                attn_vk_g.ndev = 0;
            if (!attn_vk_g.ndev && !attn_vk_g.why[0])
                snprintf(attn_vk_g.why, sizeof(attn_vk_g.why), "no Vulkan device (vkEnumeratePhysicalDevices "
                         "found none)");
            atexit(global_destroy);
        }
    }
    attn_status st = attn_vk_g.instance && attn_vk_g.ndev && !attn_vk_g.why[0] ? ATTN_OK : ATTN_EUNAVAILABLE;
    if (st != ATTN_OK)
        snprintf(why, len, "vulkan: %s", attn_vk_g.why);
    pthread_mutex_unlock(&attn_vk_g.lock);
    return st;
}

const char *attn_vk_type_str(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:   return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:    return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:            return "CPU";
    default:                                     return "other";
    }
}

static int type_rank(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:   return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:    return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:            return 1;
    default:                                     return 0;
    }
}

static void device_props(VkPhysicalDevice pd, VkPhysicalDeviceProperties *p,
                         VkPhysicalDeviceDriverProperties *drv)
{
    memset(drv, 0, sizeof(*drv));
    drv->sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
    VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                       .pNext = drv };
    vkGetPhysicalDeviceProperties(pd, p);
    if (p->apiVersion >= VK_API_VERSION_1_2)
        vkGetPhysicalDeviceProperties2(pd, &p2);
}

/* Whether pd can run flash_cm.comp: VK_NV_cooperative_matrix with 16 x 16
 * x 16 products of fp16 into fp32 in a subgroup of 32 invocations that
 * shuffles, fp16 arithmetic, the Vulkan memory model (which the extension's
 * SPIR-V declares) and 16-bit storage buffers. Where not, why says what is
 * missing. */
static bool coopmat_usable(VkPhysicalDevice pd, bool storage16, char *why, size_t len)
{
    VkExtensionProperties ext[512];
    uint32_t n = 512;
    bool have = false;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, ext) >= 0)
        for (uint32_t i = 0; i < n && !have; i++)
            have = !strcmp(ext[i].extensionName, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    if (!have) {
        snprintf(why, len, "no %s", VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
        return false;
    }
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
    };
    VkPhysicalDeviceVulkan12Features v12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &cm,
    };
    VkPhysicalDeviceFeatures2 f2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                     .pNext = &v12 };
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    VkPhysicalDeviceSubgroupProperties sub = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
    };
    VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                       .pNext = &sub };
    vkGetPhysicalDeviceProperties2(pd, &p2);
    const VkSubgroupFeatureFlags ops = VK_SUBGROUP_FEATURE_BASIC_BIT |
                                       VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
    const char *no = NULL;
    if (!cm.cooperativeMatrix)
        no = "the cooperativeMatrix feature is off";
    else if (!v12.shaderFloat16 || !v12.vulkanMemoryModel || !storage16)
        no = "it lacks shaderFloat16, vulkanMemoryModel or storageBuffer16BitAccess";
    else if (sub.subgroupSize != 32 || !(sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ||
             (sub.supportedOperations & ops) != ops)
        no = "its subgroups are not of 32 invocations with basic and shuffle operations";
    if (no) {
        snprintf(why, len, "%s: %s", VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME, no);
        return false;
    }
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)vkGetInstanceProcAddr(
            attn_vk_g.instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
    VkCooperativeMatrixPropertiesNV props[64];
    uint32_t np = 64;
    for (uint32_t i = 0; i < np; i++)
        props[i] = (VkCooperativeMatrixPropertiesNV){
            .sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV };
    if (!get || get(pd, &np, props) < 0)
        np = 0;
    for (uint32_t i = 0; i < np; i++) {
        const VkCooperativeMatrixPropertiesNV *c = &props[i];
        if (c->MSize == 16 && c->NSize == 16 && c->KSize == 16 &&
            c->AType == VK_COMPONENT_TYPE_FLOAT16_NV && c->BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
            c->CType == VK_COMPONENT_TYPE_FLOAT32_NV && c->DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
            c->scope == VK_SCOPE_SUBGROUP_NV)
            return true;
    }
    snprintf(why, len, "%s: no 16x16x16 fp16 x fp16 + fp32 product in a subgroup among its %u",
             VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME, np);
    return false;
}

int attn_vk_devices(char *buf, size_t len)
{
    char why[256];
    if (global_init(why, sizeof(why)) != ATTN_OK)
        return snprintf(buf, len, "%s\n", why);
    size_t at = 0;
    int n = 0;
    for (uint32_t i = 0; i < attn_vk_g.ndev; i++) {
        VkPhysicalDeviceProperties p;
        VkPhysicalDeviceDriverProperties d;
        device_props(attn_vk_g.phys[i], &p, &d);
        /* Which kernel fp16 prefill would take there (vulkan), and why. */
        char cm[160] = "Vulkan 1.2 needed";
        bool cm_ok = false;
        if (p.apiVersion >= VK_API_VERSION_1_2) {
            VkPhysicalDevice16BitStorageFeatures s16 = {
                .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
            };
            VkPhysicalDeviceFeatures2 f2 = {
                .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &s16,
            };
            vkGetPhysicalDeviceFeatures2(attn_vk_g.phys[i], &f2);
            cm_ok = coopmat_usable(attn_vk_g.phys[i], s16.storageBuffer16BitAccess == VK_TRUE, cm,
                                   sizeof(cm));
        }
        n = snprintf(buf + (at < len ? at : len), at < len ? len - at : 0,
                     "%u: %s [%s; %s %s; Vulkan %u.%u]; fp16 prefill: %s%s%s\n", i,
                     p.deviceName, attn_vk_type_str(p.deviceType),
                     d.driverName[0] ? d.driverName : "driver", d.driverInfo,
                     VK_API_VERSION_MAJOR(p.apiVersion), VK_API_VERSION_MINOR(p.apiVersion),
                     cm_ok ? "flash_cm.comp (matrix units)" : "flash.comp (", cm_ok ? "" : cm,
                     cm_ok ? "" : ")");
        at += n > 0 ? (size_t)n : 0;
    }
    return (int)at;
}

/* Opens device index (or the best one for -1) as the current logical device. */
attn_status attn_vk_open_device(int index, char *why, size_t len)
{
    attn_status st = global_init(why, len);
    if (st != ATTN_OK)
        return st;
    pthread_mutex_lock(&attn_vk_g.lock);
    if (index >= (int)attn_vk_g.ndev) {
        snprintf(why, len, "vulkan: --device %d, but this machine has %u Vulkan device(s)",
                 index, attn_vk_g.ndev);
        pthread_mutex_unlock(&attn_vk_g.lock);
        return ATTN_EINVAL;
    }
    if (index < 0) {
        int best = -1;
        for (uint32_t i = 0; i < attn_vk_g.ndev; i++) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(attn_vk_g.phys[i], &p);
            if (p.apiVersion < VK_API_VERSION_1_2)
                continue;
            VkPhysicalDeviceProperties pb;
            if (best >= 0)
                vkGetPhysicalDeviceProperties(attn_vk_g.phys[best], &pb);
            if (best < 0 || type_rank(p.deviceType) > type_rank(pb.deviceType))
                best = (int)i;
        }
        if (best < 0) {
            snprintf(why, len, "vulkan: no Vulkan 1.2 device among %u", attn_vk_g.ndev);
            pthread_mutex_unlock(&attn_vk_g.lock);
            return ATTN_EUNAVAILABLE;
        }
        index = best;
    }
    if (attn_vk_g.open_index == index) {
        pthread_mutex_unlock(&attn_vk_g.lock);
        return ATTN_OK;
    }
    close_device();
    VkPhysicalDevice pd = attn_vk_g.phys[index];
    device_props(pd, &attn_vk_g.props, &attn_vk_g.driver);
    if (attn_vk_g.props.apiVersion < VK_API_VERSION_1_2) {
        snprintf(why, len, "vulkan: device %d (%s) supports Vulkan %u.%u, not 1.2", index,
                 attn_vk_g.props.deviceName, VK_API_VERSION_MAJOR(attn_vk_g.props.apiVersion),
                 VK_API_VERSION_MINOR(attn_vk_g.props.apiVersion));
        pthread_mutex_unlock(&attn_vk_g.lock);
        return ATTN_EUNAVAILABLE;
    }
    vkGetPhysicalDeviceMemoryProperties(pd, &attn_vk_g.mem);
    VkQueueFamilyProperties fam[32];
    uint32_t nfam = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nfam, fam);
    attn_vk_g.family = UINT32_MAX;
    for (uint32_t f = 0; f < nfam && attn_vk_g.family == UINT32_MAX; f++)
        if (fam[f].queueFlags & VK_QUEUE_COMPUTE_BIT)
            attn_vk_g.family = f;
    if (attn_vk_g.family == UINT32_MAX) {
        snprintf(why, len, "vulkan: device %d (%s) has no compute queue", index,
                 attn_vk_g.props.deviceName);
        pthread_mutex_unlock(&attn_vk_g.lock);
        return ATTN_EUNAVAILABLE;
    }
    attn_vk_g.timestamp_bits = fam[attn_vk_g.family].timestampValidBits;
    const float prio = 1.0f;
    const VkDeviceQueueCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = attn_vk_g.family,
        .queueCount = 1,
        .pQueuePriorities = &prio,
    };
    /* fp16 storage buffers (the 16-bit shaders), enabled where the device has them. */
    VkPhysicalDevice16BitStorageFeatures s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
    };
    VkPhysicalDeviceFeatures2 f2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                     .pNext = &s16 };
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    attn_vk_g.storage16 = s16.storageBuffer16BitAccess == VK_TRUE;
    const VkPhysicalDevice16BitStorageFeatures want16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
        .storageBuffer16BitAccess = VK_TRUE,
    };
    /* flash_cm.comp's extension and features, where it can run. */
    char cm_why[160] = "";
    attn_vk_g.coopmat = coopmat_usable(pd, attn_vk_g.storage16, cm_why, sizeof(cm_why));
    snprintf(attn_vk_g.coopmat_why, sizeof(attn_vk_g.coopmat_why), "%s: %s",
             attn_vk_g.props.deviceName, cm_why);
    VkPhysicalDeviceCooperativeMatrixFeaturesNV want_cm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
        .cooperativeMatrix = VK_TRUE,
    };
    VkPhysicalDeviceVulkan12Features want12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .pNext = (void *)&want16,
        .shaderFloat16 = VK_TRUE,
        .vulkanMemoryModel = VK_TRUE,
    };
    const char *cm_ext = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
    if (attn_vk_g.coopmat)
        want_cm.pNext = &want12;
    const VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = attn_vk_g.coopmat ? (const void *)&want_cm
                 : attn_vk_g.storage16 ? (const void *)&want16 : NULL,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qci,
        .enabledExtensionCount = attn_vk_g.coopmat ? 1 : 0,
        .ppEnabledExtensionNames = attn_vk_g.coopmat ? &cm_ext : NULL,
    };
    VkResult r = vkCreateDevice(pd, &dci, NULL, &attn_vk_g.dev);
    if (r != VK_SUCCESS) {
        attn_vk_g.dev = VK_NULL_HANDLE;
        snprintf(why, len, "vulkan: vkCreateDevice on %s: %s", attn_vk_g.props.deviceName,
                 attn_vk_result_str(r));
        pthread_mutex_unlock(&attn_vk_g.lock);
        return attn_vk_status(r);
    }
    vkGetDeviceQueue(attn_vk_g.dev, attn_vk_g.family, 0, &attn_vk_g.queue);
    attn_vk_g.open_index = index;
    pthread_mutex_unlock(&attn_vk_g.lock);
    return ATTN_OK;
}

#endif

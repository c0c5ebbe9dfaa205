/* The Vulkan backends' hooks for tests. */
#ifndef ATTN_VK_H
#define ATTN_VK_H

#include <stdbool.h>

/* Errors the validation layer has reported in this process (0 when it is
 * not enabled: ATTN_VK_VALIDATION=1 enables it). */
unsigned long attn_vk_validation_errors(void);
/* Whether this process's instance has the validation layer on. */
bool attn_vk_validation_enabled(void);

/* A bug to plant in the command buffers recorded after this call, so tests
 * can prove the validation layer catches it. */
enum {
    ATTN_VK_PLANT_NONE = 0,
    ATTN_VK_PLANT_NO_BARRIER,   /* vulkan-3pass: no barrier between scores and softmax */
};
void attn_vk_plant(int bug);

#endif

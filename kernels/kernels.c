/* Run-time selection of the kernel tables: C fills every table first, then
 * an ISA's own versions replace it where the build has them and the CPU
 * reports the flags they were compiled for. */
#include <stdbool.h>

#include "config.h"
#include "kernels.h"

static const char *const isa_names[ATTN_ISA_COUNT] = {
    [ATTN_ISA_C]      = "c",
    [ATTN_ISA_AVX2]   = "avx2",
    [ATTN_ISA_AVX512] = "avx512",
};

const char *attn_isa_name(attn_isa isa)
{
    return (unsigned)isa < ATTN_ISA_COUNT ? isa_names[isa] : "?";
}

int attn_isa_usable(attn_isa isa)
{
    switch (isa) {
    case ATTN_ISA_C:
        return 1;
#if ATTN_HAVE_X86_KERNELS
    case ATTN_ISA_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case ATTN_ISA_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#endif
    default:
        return 0;
    }
}

static attn_kernels tables[ATTN_ISA_COUNT];

/* Filled once, before any thread can ask: a constructor, so that no lock
 * and no lazy-initialization race is needed. */
__attribute__((constructor))
static void kernels_init(void)
{
    for (int i = 0; i < ATTN_ISA_COUNT; i++)
        attn_kernels_init_c(&tables[i]);
#if ATTN_HAVE_X86_KERNELS
    if (attn_isa_usable(ATTN_ISA_AVX2))
        attn_kernels_init_avx2(&tables[ATTN_ISA_AVX2]);
    if (attn_isa_usable(ATTN_ISA_AVX512))
        attn_kernels_init_avx512(&tables[ATTN_ISA_AVX512]);
#endif
}

const attn_kernels *attn_kernels_for(attn_isa isa)
{
    return (unsigned)isa < ATTN_ISA_COUNT && attn_isa_usable(isa) ? &tables[isa] : NULL;
}

const attn_kernels *attn_kernels_best(void)
{
    for (int i = ATTN_ISA_COUNT - 1; i > 0; i--)
        if (attn_isa_usable((attn_isa)i))
            return &tables[i];
    return &tables[ATTN_ISA_C];
}

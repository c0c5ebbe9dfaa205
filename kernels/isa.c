/* The ISAs of the kernels: names, and whether this build and CPU run them. */
#include <string.h>

#include "config.h"
#include "kernels.h"

static const char *const isa_names[ATTN_ISA_COUNT] = {
    [ATTN_ISA_AUTO]   = "auto",
    [ATTN_ISA_C]      = "c",
    [ATTN_ISA_AVX2]   = "avx2",
    [ATTN_ISA_AVX512] = "avx512",
};

const char *attn_isa_name(attn_isa isa)
{
    return (unsigned)isa < ATTN_ISA_COUNT ? isa_names[isa] : "?";
}

attn_isa attn_isa_from_name(const char *name)
{
    for (int i = 0; i < ATTN_ISA_COUNT; i++)
        if (!strcmp(name, isa_names[i]))
            return (attn_isa)i;
    return ATTN_ISA_COUNT;
}

int attn_isa_usable(attn_isa isa)
{
    switch (isa) {
    case ATTN_ISA_AUTO:
    case ATTN_ISA_C:
        return 1;
#if ATTN_HAVE_X86_KERNELS
    case ATTN_ISA_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c");
    case ATTN_ISA_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#endif
    default:
        return 0;
    }
}


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

#if ATTN_HAVE_X86_KERNELS
#include <cpuid.h>

/* Bit `bit` of register `reg` (0 eax .. 3 edx) of CPUID leaf, subleaf: for
 * the flags not every compiler's __builtin_cpu_supports knows (clang 14
 * lacks "f16c"). */
static int cpuid_bit(unsigned leaf, unsigned sub, int reg, int bit)
{
    unsigned r[4];
    if (!__get_cpuid_count(leaf, sub, &r[0], &r[1], &r[2], &r[3]))
        return 0;
    return (int)((r[reg] >> bit) & 1u);
}
#endif

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
               cpuid_bit(1, 0, 2, 29);   /* F16C: leaf 1, ecx bit 29 */
    case ATTN_ISA_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#endif
    default:
        return 0;
    }
}

int attn_cpu_bf16_dot(void)
{
#if ATTN_HAVE_X86_KERNELS && ATTN_HAVE_BF16_KERNELS
    /* AVX512_BF16: leaf 7 subleaf 1, eax bit 5 */
    return attn_isa_usable(ATTN_ISA_AVX512) && cpuid_bit(7, 1, 0, 5);
#else
    return 0;
#endif
}

int attn_cpu_amd(void)
{
#if ATTN_HAVE_X86_KERNELS
    unsigned r[4];
    if (!__get_cpuid(0, &r[0], &r[1], &r[2], &r[3]))
        return 0;
    /* the vendor string in ebx, edx, ecx */
    return r[1] == 0x68747541u && r[3] == 0x69746e65u && r[2] == 0x444d4163u;
#else
    return 0;
#endif
}

int attn_cpu_int8_dot(void)
{
#if ATTN_HAVE_X86_KERNELS && ATTN_HAVE_VNNI_KERNELS
    /* AVX512_VNNI: leaf 7 subleaf 0, ecx bit 11 */
    return attn_isa_usable(ATTN_ISA_AVX512) && cpuid_bit(7, 0, 2, 11);
#else
    return 0;
#endif
}

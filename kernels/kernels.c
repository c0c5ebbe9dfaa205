/* Run-time selection of the kernel tables: C fills every table first, then
 * an ISA's own versions replace it where the build has them and the CPU
 * reports the flags they were compiled for (kernels/isa.c). */
#include <stdbool.h>

#include "config.h"
#include "kernels.h"

static attn_kernels tables[ATTN_ISA_COUNT];

/* Filled once, before any thread can ask: a constructor, so that no lock
 * and no lazy-initialization race is needed. */
__attribute__((constructor))
static void kernels_init(void)
{
    for (int i = ATTN_ISA_C; i < ATTN_ISA_COUNT; i++)
        attn_kernels_init_c(&tables[i]);
#if ATTN_HAVE_X86_KERNELS
    if (attn_isa_usable(ATTN_ISA_AVX2))
        attn_kernels_init_avx2(&tables[ATTN_ISA_AVX2]);
    if (attn_isa_usable(ATTN_ISA_AVX512))
        attn_kernels_init_avx512(&tables[ATTN_ISA_AVX512]);
    if (attn_isa_usable(ATTN_ISA_AVX512) && attn_cpu_bf16_dot())
        attn_kernels_init_avx512_bf16(&tables[ATTN_ISA_AVX512]);
    if (attn_isa_usable(ATTN_ISA_AVX512) && attn_cpu_int8_dot())
        attn_kernels_init_avx512_vnni(&tables[ATTN_ISA_AVX512]);
#endif
}


const attn_kernels *attn_kernels_for(attn_isa isa)
{
    if (isa == ATTN_ISA_AUTO)
        return attn_kernels_best();
    return (unsigned)isa < ATTN_ISA_COUNT && attn_isa_usable(isa) ? &tables[isa] : NULL;
}

const attn_kernels *attn_kernels_best(void)
{
    for (int i = ATTN_ISA_COUNT - 1; i > ATTN_ISA_C; i--)
        if (attn_isa_usable((attn_isa)i))
            return &tables[i];
    return &tables[ATTN_ISA_C];
}

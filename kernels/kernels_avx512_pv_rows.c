/* AVX-512 P.V of decoding on V's rows in their storage (pv16, pv_q:
 * rows_entry.h's entry points), on kernels_avx512_rows.h's register tile;
 * a file of its own (kernels_avx512_rows.h says why). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels.h"
#include "kernels_avx512.h"
#include "kernels_avx512_rows.h"
#include "rows_of.h"

#define ROWS_ISA avx512
#define ROWS_PART_PV
#include "rows_entry.h"

void attn_kernels_init_avx512_pv_rows(attn_kernels *k)
{
    k->pv16 = pv16_avx512;
    k->pv_q = pv_q_avx512;
}

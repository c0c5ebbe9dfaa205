#version 450
#extension GL_EXT_control_flow_attributes : require
// Built three times: Q, K and V as float; (-DSTORAGE16) as float16_t; and
// (-DSTORAGEBF16) as bf16 bits in uint16_t, widened by a 16-bit shift. 16-bit
// storage is read into fp32 (storageBuffer16BitAccess); the math is fp32.
#if defined(STORAGEBF16)
#extension GL_EXT_shader_16bit_storage : require
#define ELEM uint16_t
#define TOF(x) uintBitsToFloat(uint(x) << 16)
#elif defined(STORAGE16)
#extension GL_EXT_shader_16bit_storage : require
#define ELEM float16_t
#define TOF(x) float(x)
#else
#define ELEM float
#define TOF(x) (x)
#endif
// Three-pass attention, pass 3: O = P.V for a chunk of heads, 16x16 output
// tiles through shared memory. The key loop stops at the tile's last visible
// key (P is zero past it).
// The inner product loop is unrolled: the one loop left per invocation runs
// over the keys in steps of 16 (see loop_iterations in vulkan.c).
layout(local_size_x = 16, local_size_y = 16) in;

layout(std430, binding = 2) readonly buffer Vb { ELEM v[]; };
layout(std430, binding = 3) writeonly buffer Ob { float o[]; };
layout(std430, binding = 4) readonly buffer Lb { int kv_len[]; };
layout(std430, binding = 5) readonly buffer Sb { float sc[]; };

layout(push_constant) uniform Push {
    uint heads, nq, nk, dk, dv, causal, head_base;
    float scale;
    uint group;                     // query heads per K/V head (H / Hkv)
} pc;

shared float Ps[16][17];
shared float Vs[16][17];

int visible_end(uint b, int i)
{
    int end = kv_len[b];
    if (pc.causal != 0)
        end = min(end, i + int(pc.nk) - int(pc.nq) + 1);
    return max(end, 0);
}

void main()
{
    const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    const uint c0 = gl_WorkGroupID.x * 16, i0 = gl_WorkGroupID.y * 16;
    const uint hc = gl_WorkGroupID.z, bh = pc.head_base + hc, b = bh / pc.heads;
    const uint kvh = b * (pc.heads / pc.group) + (bh % pc.heads) / pc.group;
    const uint i = i0 + ty, c = c0 + tx;
    const uint end_tile = uint(visible_end(b, int(min(i0 + 16, pc.nq)) - 1));
    // The tile's first row sees the fewest keys: below its end every row of
    // the tile sees every key (one test per key tile, the same for the
    // whole workgroup); past it each row stops at its own end.
    const uint all_end = uint(visible_end(b, int(i0)));
    const uint row_end = i < pc.nq ? uint(visible_end(b, int(i))) : 0;
    float acc = 0.0;
    [[dont_unroll]] for (uint j0 = 0; j0 < end_tile; j0 += 16) {
        const uint pj = j0 + tx, vj = j0 + ty;
        Ps[ty][tx] = i < pc.nq && pj < pc.nk ? sc[(hc * pc.nq + i) * pc.nk + pj] : 0.0;
        Vs[ty][tx] = vj < pc.nk && c < pc.dv ? TOF(v[(kvh * pc.nk + vj) * pc.dv + c]) : 0.0;
        barrier();
        // Keys this row cannot see are left out by the condition, not
        // multiplied by their 0, so a NaN or Inf in their V stays out of the
        // row; below all_end every row sees every key of the tile.
        const bool full = j0 + 16 <= all_end;
        [[unroll]] for (uint t = 0; t < 16; t++)
            if (full || j0 + t < row_end)
                acc += Ps[ty][t] * Vs[t][tx];
        barrier();
    }
    if (i < pc.nq && c < pc.dv)
        o[(bh * pc.nq + i) * pc.dv + c] = acc;
}

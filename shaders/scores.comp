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
// Three-pass attention, pass 1: S = scale * Q.K^T for a chunk of heads,
// 16x16 output tiles through shared memory, masked entries -inf. Tiles that
// lie wholly past the visible keys skip the products.
// The inner product loop is unrolled: the one loop left per invocation runs
// over d in steps of 16 (see loop_iterations in vulkan.c).
layout(local_size_x = 16, local_size_y = 16) in;

layout(std430, binding = 0) readonly buffer Qb { ELEM q[]; };
layout(std430, binding = 1) readonly buffer Kb { ELEM k[]; };
layout(std430, binding = 4) readonly buffer Lb { int kv_len[]; };
layout(std430, binding = 5) writeonly buffer Sb { float sc[]; };

layout(push_constant) uniform Push {
    uint heads, nq, nk, dk, dv, causal, head_base;
    float scale;
    uint group;                     // query heads per K/V head (H / Hkv)
} pc;

shared float Qs[16][17];
shared float Ks[16][17];

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
    const uint j0 = gl_WorkGroupID.x * 16, i0 = gl_WorkGroupID.y * 16;
    const uint hc = gl_WorkGroupID.z, bh = pc.head_base + hc, b = bh / pc.heads;
    const uint kvh = b * (pc.heads / pc.group) + (bh % pc.heads) / pc.group;
    const uint i = i0 + ty, j = j0 + tx;
    const int end_tile = visible_end(b, int(min(i0 + 16, pc.nq)) - 1);
    float acc = 0.0;
    if (int(j0) < end_tile) {
        [[dont_unroll]] for (uint d0 = 0; d0 < pc.dk; d0 += 16) {
            const uint d = d0 + tx;
            Qs[ty][tx] = i < pc.nq && d < pc.dk ? TOF(q[(bh * pc.nq + i) * pc.dk + d]) : 0.0;
            const uint kj = j0 + ty;
            Ks[ty][tx] = kj < pc.nk && d < pc.dk ? TOF(k[(kvh * pc.nk + kj) * pc.dk + d]) : 0.0;
            barrier();
            [[unroll]] for (uint t = 0; t < 16; t++)
                acc += Qs[ty][t] * Ks[tx][t];
            barrier();
        }
    }
    if (i < pc.nq && j < pc.nk) {
        const bool seen = int(j) < visible_end(b, int(i));
        sc[(hc * pc.nq + i) * pc.nk + j] = seen ? acc * pc.scale : uintBitsToFloat(0xff800000u);
    }
}

#version 450
#extension GL_EXT_control_flow_attributes : require
// Three-pass attention, pass 2: the softmax of one score row per workgroup,
// in place. Max and sum are reduced through shared memory (no assumption on
// the subgroup size). A row with no visible key (all -inf) becomes zeros.
// The reductions are unrolled; the loops left per invocation run over the
// row in steps of 64 (see loop_iterations in vulkan.c).
layout(local_size_x = 64) in;

layout(std430, binding = 5) buffer Sb { float sc[]; };

layout(push_constant) uniform Push {
    uint heads, nq, nk, dk, dv, causal, head_base;
    float scale;
    uint group;                     // query heads per K/V head (H / Hkv)
} pc;

shared float red[64];

void main()
{
    const uint tid = gl_LocalInvocationID.x;
    const uint row = (gl_WorkGroupID.y * pc.nq + gl_WorkGroupID.x) * pc.nk;
    const float ninf = uintBitsToFloat(0xff800000u);

    float mx = ninf;
    [[dont_unroll]] for (uint j = tid; j < pc.nk; j += 64)
        mx = max(mx, sc[row + j]);
    red[tid] = mx;
    barrier();
    [[unroll]] for (uint s = 32; s > 0; s >>= 1) {
        if (tid < s)
            red[tid] = max(red[tid], red[tid + s]);
        barrier();
    }
    mx = red[0];
    barrier();

    float sum = 0.0;
    [[dont_unroll]] for (uint j = tid; j < pc.nk; j += 64) {
        const float x = sc[row + j];
        const float e = x == ninf ? 0.0 : exp(x - mx);
        sc[row + j] = e;
        sum += e;
    }
    red[tid] = sum;
    barrier();
    [[unroll]] for (uint s = 32; s > 0; s >>= 1) {
        if (tid < s)
            red[tid] += red[tid + s];
        barrier();
    }
    const float inv = red[0] > 0.0 ? 1.0 / red[0] : 0.0;
    [[dont_unroll]] for (uint j = tid; j < pc.nk; j += 64)
        sc[row + j] *= inv;
}

#version 450
// Split-KV's merge (after flash.comp with splits > 1): one workgroup per
// row of O, B H Nq of them. Chunk s left its row as unnormalized O_s with
// its running max m_s and sum l_s (log2 units); the row is
//   O = sum_s 2^(m_s - M) O_s / sum_s 2^(m_s - M) l_s,   M = max_s m_s,
// zeros where no chunk saw a key (every l_s = 0), and NaN where a NaN
// reached l, as in flash.comp's own write.
layout(local_size_x = 64) in;

layout(std430, binding = 3) writeonly buffer Ob { float o[]; };
layout(std430, binding = 5) readonly buffer Pb { float part[]; };

layout(push_constant) uniform Push {
    uint heads, nq, nk, dk, dv, causal, head_base;
    float scale;
    uint group;
    uint splits, split_keys;
    uint rows;                      // B H Nq
} pc;

void main()
{
    const uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
    const uint stride = pc.rows * (pc.dv + 2);   // from one chunk's row to the next's
    const uint at = row * (pc.dv + 2);
    float mx = -1e30;
    for (uint s = 0; s < pc.splits; s++)
        mx = max(mx, part[s * stride + at + pc.dv]);
    float l = 0.0;
    for (uint s = 0; s < pc.splits; s++)
        l += exp2(part[s * stride + at + pc.dv] - mx) * part[s * stride + at + pc.dv + 1];
    const bool nan_l = (floatBitsToUint(l) & 0x7fffffffu) > 0x7f800000u;
    for (uint c = tid; c < pc.dv; c += 64) {
        float y = 0.0;
        for (uint s = 0; s < pc.splits; s++)
            y += exp2(part[s * stride + at + pc.dv] - mx) * part[s * stride + at + c];
        o[row * pc.dv + c] = nan_l ? uintBitsToFloat(0x7fc00000u) : l > 0.0 ? y / l : 0.0;
    }
}

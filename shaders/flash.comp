#version 450
#extension GL_EXT_control_flow_attributes : require
// Fused attention (FlashAttention): one workgroup per block of BR query rows
// of one (batch, head). Per tile of BC keys the workgroup stages K and V in
// shared memory, computes the BR x BC scores, updates each row's running max
// m and sum l (online softmax in log2 units: Q is scaled by scale*log2(e) on
// load) and rescales and accumulates the BR x DV output block, which also
// lives in shared memory; O is written once, divided by l, at the end. The
// key loop stops at the block's last visible key. Work inside a phase is
// spread over the invocations without assuming a subgroup size.
//
// Loops are kept rolled: unrolled over d and the tile, they took lavapipe
// (Mesa 22.3, LLVM 15) up to a minute to compile for one shape.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BC = 16;
layout(constant_id = 2) const uint DK = 64;
layout(constant_id = 3) const uint DV = 64;
layout(constant_id = 4) const uint BR = 32;

layout(std430, binding = 0) readonly buffer Qb { float q[]; };
layout(std430, binding = 1) readonly buffer Kb { float k[]; };
layout(std430, binding = 2) readonly buffer Vb { float v[]; };
layout(std430, binding = 3) writeonly buffer Ob { float o[]; };
layout(std430, binding = 4) readonly buffer Lb { int kv_len[]; };

layout(push_constant) uniform Push {
    uint heads, nq, nk, dk, dv, causal, head_base;
    float scale;
} pc;

shared float Qs[BR * DK];
shared float Ks[BC * DK];
shared float Vs[BC * DV];
shared float Ss[BR * BC];           // scores, then probabilities, of the tile
shared float Os[BR * DV];           // the unnormalized output block
shared float Ms[BR], Ls[BR], As[BR];

// Keys [0, end) are visible to query i of batch b.
int visible_end(uint b, int i)
{
    int end = kv_len[b];
    if (pc.causal != 0)
        end = min(end, i + int(pc.nk) - int(pc.nq) + 1);
    return max(end, 0);
}

void main()
{
    const uint wg = gl_WorkGroupSize.x;
    const uint tid = gl_LocalInvocationID.x;
    const uint h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint bh = b * pc.heads + h;
    const uint i0 = gl_WorkGroupID.x * BR;
    const uint rows = min(BR, pc.nq - i0);
    // Visibility grows with the row: the block's last row sees the most.
    const int end_blk = visible_end(b, int(i0 + rows) - 1);
    const float qscale = pc.scale * 1.4426950408889634;
    const float ninf = uintBitsToFloat(0xff800000u);

    const uint qbase = (bh * pc.nq + i0) * DK;
    [[dont_unroll]] for (uint x = tid; x < BR * DK; x += wg)
        Qs[x] = x < rows * DK ? q[qbase + x] * qscale : 0.0;
    [[dont_unroll]] for (uint x = tid; x < BR * DV; x += wg)
        Os[x] = 0.0;
    [[dont_unroll]] for (uint r = tid; r < BR; r += wg) {
        Ms[r] = -1e30;
        Ls[r] = 0.0;
    }

    [[dont_unroll]] for (int j0 = 0; j0 < end_blk; j0 += int(BC)) {
        // A tile of keys is one contiguous run of K (and of V).
        const uint keys = min(BC, pc.nk - uint(j0));
        const uint kbase = (bh * pc.nk + uint(j0)) * DK, vbase = (bh * pc.nk + uint(j0)) * DV;
        memoryBarrierShared();
        barrier();
        [[dont_unroll]] for (uint x = tid; x < BC * DK; x += wg)
            Ks[x] = x < keys * DK ? k[kbase + x] : 0.0;
        [[dont_unroll]] for (uint x = tid; x < BC * DV; x += wg)
            Vs[x] = x < keys * DV ? v[vbase + x] : 0.0;
        memoryBarrierShared();
        barrier();
        [[dont_unroll]] for (uint x = tid; x < BR * BC; x += wg) {
            const uint r = x / BC, c = x % BC;
            const int end = r < rows ? visible_end(b, int(i0 + r)) : 0;
            float s = ninf;
            if (j0 + int(c) < end) {
                s = 0.0;
                [[dont_unroll]] for (uint d = 0; d < DK; d++)
                    s += Qs[r * DK + d] * Ks[c * DK + d];
            }
            Ss[x] = s;
        }
        memoryBarrierShared();
        barrier();
        [[dont_unroll]] for (uint r = tid; r < BR; r += wg) {
            float mt = Ms[r];
            [[dont_unroll]] for (uint c = 0; c < BC; c++)
                mt = max(mt, Ss[r * BC + c]);
            float sum = 0.0;
            [[dont_unroll]] for (uint c = 0; c < BC; c++) {
                const float s = Ss[r * BC + c];
                const float p = s == ninf ? 0.0 : exp2(s - mt);
                Ss[r * BC + c] = p;
                sum += p;
            }
            const float alpha = exp2(Ms[r] - mt);
            Ls[r] = Ls[r] * alpha + sum;
            Ms[r] = mt;
            As[r] = alpha;
        }
        memoryBarrierShared();
        barrier();
        [[dont_unroll]] for (uint x = tid; x < BR * DV; x += wg) {
            const uint r = x / DV, d = x % DV;
            float acc = Os[x] * As[r];
            [[dont_unroll]] for (uint c = 0; c < BC; c++)
                acc += Ss[r * BC + c] * Vs[c * DV + d];
            Os[x] = acc;
        }
    }
    memoryBarrierShared();
    barrier();
    // A row that saw no key has l == 0 and gives zeros.
    const uint obase = (bh * pc.nq + i0) * DV;
    [[dont_unroll]] for (uint x = tid; x < rows * DV; x += wg) {
        const float l = Ls[x / DV];
        o[obase + x] = l > 0.0 ? Os[x] / l : 0.0;
    }
}

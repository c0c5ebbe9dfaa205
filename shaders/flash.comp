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
// Fused attention (FlashAttention): one workgroup per block of BR query rows
// of one (batch, head). Per tile of BC keys the workgroup stages K in shared
// memory, computes the BR x BC scores, then stages V where K was while it
// updates each row's running max m and sum l (online softmax in log2 units:
// Q is scaled by scale*log2(e) on load), and rescales and accumulates the
// BR x DV output block, which lives in registers: each invocation owns NO
// vec4 of it. O is written once, divided by l, at the end. The key loop
// stops at the block's last visible key. With split-KV (splits > 1) the
// workgroup takes one chunk of split_keys keys and writes its rows
// unnormalized, with their m and l, for combine.comp to merge. Work is
// spread over the invocations without assuming a subgroup size.
//
// Rows of Q, K and V are staged as vec4 with d padded to a multiple of 4 by
// zeros, so any d works and the dot products are vec4 wide. Where BC divides
// the workgroup, an invocation's scores share one key: it reads each vec4
// of that key once for its NS rows (whose Q reads every invocation of a
// row shares). Where DV4 divides it, its output vec4 share one column and
// it reads each V vec4 once per key for its NO rows. K rows and the score
// rows sit at odd strides (KS vec4, PS floats): invocations that read
// different keys, or different rows in the softmax, then hit different
// shared-memory banks.
//
// Every loop but the key loop and the P.V loop over the tile's keys (and,
// where BC does not divide the workgroup, the loop over an invocation's
// scores) has a trip count fixed by the specialization constants and is
// unrolled when the pipeline is specialized. That keeps the invocation's
// loop iterations per key tile few, which matters on Mesa's llvmpipe
// (lavapipe): it ends every loop of an invocation once 65535 iterations of
// all its loops together have run (the backend refuses shapes that would get
// there; see loop_iterations in plan.c).
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BC = 16;
layout(constant_id = 2) const uint DK = 64;
layout(constant_id = 3) const uint DV = 64;
layout(constant_id = 4) const uint BR = 32;

const uint WG = gl_WorkGroupSize.x;
const uint DK4 = (DK + 3) / 4, DV4 = (DV + 3) / 4;
const uint NQ = (BR * DK4 + WG - 1) / WG;   // Q vec4 loads per invocation
const uint NK = (BC * DK4 + WG - 1) / WG;   // K vec4 loads per invocation and tile
const uint NV = (BC * DV4 + WG - 1) / WG;   // V vec4 loads per invocation and tile
const uint NS = (BR * BC + WG - 1) / WG;    // scores per invocation and tile
const uint NO = (BR * DV4 + WG - 1) / WG;   // output vec4 per invocation
const uint KS = DK4 + 1 - (DK4 & 1);        // K row stride in vec4 (odd)
const uint PS = BC + 1 - (BC & 1);          // score row stride in floats (odd)
const uint KVN = BC * KS > BC * DV4 ? BC * KS : BC * DV4;
const bool KEY1 = WG % BC == 0;             // one key per invocation's scores
const uint RSTEP = WG / BC;                 // and its rows are RSTEP apart
const bool COL1 = WG % DV4 == 0;            // one column per invocation's output

layout(std430, binding = 0) readonly buffer Qb { ELEM q[]; };
layout(std430, binding = 1) readonly buffer Kb { ELEM k[]; };
layout(std430, binding = 2) readonly buffer Vb { ELEM v[]; };
layout(std430, binding = 3) writeonly buffer Ob { float o[]; };
layout(std430, binding = 4) readonly buffer Lb { int kv_len[]; };
// Split-KV: per chunk and row (B H Nq of them), DV floats of O, then m, l.
layout(std430, binding = 5) writeonly buffer Pb { float part[]; };

layout(push_constant) uniform Push {
    uint heads, nq, nk, dk, dv, causal, head_base;
    float scale;
    uint group;                     // query heads per K/V head (H / Hkv)
    uint splits, split_keys;        // split-KV chunks (1: none), keys per chunk
    uint rows;                      // B H Nq
} pc;

shared vec4 Qs[BR * DK4];
shared vec4 KV[KVN];                // the tile's K (rows KS apart), then its V
shared float Ps[BR * PS];           // scores, then probabilities, of the tile
shared float Ms[BR], Ls[BR], As[BR];

// Keys [0, end) are visible to query i of batch b.
int visible_end(uint b, int i)
{
    int end = kv_len[b];
    if (pc.causal != 0)
        end = min(end, i + int(pc.nk) - int(pc.nq) + 1);
    return max(end, 0);
}

// Row `row` of a [rows x n] float matrix at base, elements 4t..4t+3, zeros
// past n.
vec4 load4(uint which, uint base, uint n, uint t)
{
    vec4 x = vec4(0.0);
    [[unroll]] for (uint e = 0; e < 4; e++) {
        const uint c = 4 * t + e;
        if (c < n)
            x[e] = which == 0 ? TOF(q[base + c]) : which == 1 ? TOF(k[base + c])
                                  : TOF(v[base + c]);
    }
    return x;
}

void main()
{
    const uint tid = gl_LocalInvocationID.x;
    // z: chunk s of batch item b, s * B + b.
    const uint batch = gl_NumWorkGroups.z / pc.splits;
    const uint h = gl_WorkGroupID.y, b = gl_WorkGroupID.z % batch;
    const uint split = gl_WorkGroupID.z / batch;
    const uint bh = b * pc.heads + h;
    const uint kvh = b * (pc.heads / pc.group) + h / pc.group;   // its K/V head
    const uint i0 = gl_WorkGroupID.x * BR;
    const uint rows = min(BR, pc.nq - i0);
    // Visibility grows with the row: the block's last row sees the most.
    const int end_blk = visible_end(b, int(i0 + rows) - 1);
    const int j_lo = int(split * pc.split_keys);
    const int j_hi = pc.splits > 1 ? min(end_blk, j_lo + int(pc.split_keys)) : end_blk;
    const float qscale = pc.scale * 1.4426950408889634;
    const float ninf = uintBitsToFloat(0xff800000u);

    [[unroll]] for (uint n = 0; n < NQ; n++) {
        const uint x = tid + n * WG;
        if (x < BR * DK4) {
            const uint r = x / DK4, t = x % DK4;
            Qs[x] = r < rows ? load4(0, (bh * pc.nq + i0 + r) * DK, DK, t) * qscale : vec4(0.0);
        }
    }
    if (tid < BR) {
        Ms[tid] = -1e30;
        Ls[tid] = 0.0;
    }
    vec4 acc[NO];
    int rend[NO];                   // the visible end of each accumulator's row
    [[unroll]] for (uint n = 0; n < NO; n++) {
        acc[n] = vec4(0.0);
        const uint r = (tid + n * WG) / DV4;
        rend[n] = r < rows ? visible_end(b, int(i0 + r)) : 0;
    }

    [[dont_unroll]] for (int j0 = j_lo; j0 < j_hi; j0 += int(BC)) {
        // A tile of keys is one contiguous run of K (and of V).
        const uint keys = min(BC, pc.nk - uint(j0));
        const uint kbase = (kvh * pc.nk + uint(j0)) * DK, vbase = (kvh * pc.nk + uint(j0)) * DV;
        barrier();                  // the previous tile's V and Ps are consumed
        [[unroll]] for (uint n = 0; n < NK; n++) {
            const uint x = tid + n * WG;
            if (x < BC * DK4) {
                const uint c = x / DK4, t = x % DK4;
                KV[c * KS + t] = c < keys ? load4(1, kbase + c * DK, DK, t) : vec4(0.0);
            }
        }
        barrier();
        if (KEY1) {
            // Key c for rows r0, r0 + RSTEP, ...: rows past the block's
            // last are skipped, keys a row cannot see computed and not kept.
            const uint c = tid % BC, r0 = tid / BC;
            vec4 d4[NS];
            [[unroll]] for (uint n = 0; n < NS; n++)
                d4[n] = vec4(0.0);
            [[unroll]] for (uint t = 0; t < DK4; t++) {
                const vec4 kt = KV[c * KS + t];
                [[unroll]] for (uint n = 0; n < NS; n++)
                    if (r0 + n * RSTEP < rows)
                        d4[n] += Qs[(r0 + n * RSTEP) * DK4 + t] * kt;
            }
            [[unroll]] for (uint n = 0; n < NS; n++) {
                const uint r = r0 + n * RSTEP;
                if (r < BR) {
                    const int end = r < rows ? visible_end(b, int(i0 + r)) : 0;
                    Ps[r * PS + c] = j0 + int(c) < end ? d4[n].x + d4[n].y + d4[n].z + d4[n].w
                                                       : ninf;
                }
            }
        } else {
            [[dont_unroll]] for (uint n = 0; n < NS; n++) {
                const uint x = tid + n * WG;
                if (x < BR * BC) {
                    const uint r = x / BC, c = x % BC;
                    const int end = r < rows ? visible_end(b, int(i0 + r)) : 0;
                    float s = ninf;
                    if (j0 + int(c) < end) {
                        vec4 d4 = vec4(0.0);
                        [[unroll]] for (uint t = 0; t < DK4; t++)
                            d4 += Qs[r * DK4 + t] * KV[c * KS + t];
                        s = d4.x + d4.y + d4.z + d4.w;
                    }
                    Ps[r * PS + c] = s;
                }
            }
        }
        barrier();                  // the scores are in Ps, K is consumed
        [[unroll]] for (uint n = 0; n < NV; n++) {
            const uint x = tid + n * WG;
            if (x < BC * DV4) {
                const uint c = x / DV4, t = x % DV4;
                KV[x] = c < keys ? load4(2, vbase + c * DV, DV, t) : vec4(0.0);
            }
        }
        if (tid < BR) {
            const uint r = tid;
            float mt = Ms[r];
            [[unroll]] for (uint c = 0; c < BC; c++)
                mt = max(mt, Ps[r * PS + c]);
            float sum = 0.0;
            [[unroll]] for (uint c = 0; c < BC; c++) {
                const float s = Ps[r * PS + c];
                const float p = s == ninf ? 0.0 : exp2(s - mt);
                Ps[r * PS + c] = p;
                sum += p;
            }
            const float alpha = exp2(Ms[r] - mt);
            Ls[r] = Ls[r] * alpha + sum;
            Ms[r] = mt;
            As[r] = alpha;
        }
        barrier();
        [[unroll]] for (uint n = 0; n < NO; n++) {
            const uint x = tid + n * WG;
            if (x < BR * DV4)
                acc[n] *= As[x / DV4];
        }
        // A tile that some rows see only in part: a key a row cannot see is
        // left out by the condition, not multiplied by its 0, so a NaN or
        // Inf in its V stays out of that row.
        const bool partial = j0 + int(keys) > visible_end(b, int(i0));
        [[dont_unroll]] for (uint c = 0; c < BC; c++) {
            const vec4 vc = KV[c * DV4 + tid % DV4];    // this invocation's column (COL1)
            [[unroll]] for (uint n = 0; n < NO; n++) {
                const uint x = tid + n * WG;
                if (x < BR * DV4 && (!partial || j0 + int(c) < rend[n]))
                    acc[n] += Ps[(x / DV4) * PS + c] * (COL1 ? vc : KV[c * DV4 + x % DV4]);
            }
        }
    }
    barrier();                      // Ls of rows that saw no tile
    if (pc.splits > 1) {
        // m = -1e30 and l = 0 for a row that saw no key of this chunk.
        [[unroll]] for (uint n = 0; n < NO; n++) {
            const uint x = tid + n * WG;
            if (x < BR * DV4) {
                const uint r = x / DV4, t = x % DV4;
                if (r < rows) {
                    const uint base = (split * pc.rows + bh * pc.nq + i0 + r) * (DV + 2);
                    [[unroll]] for (uint e = 0; e < 4; e++)
                        if (4 * t + e < DV)
                            part[base + 4 * t + e] = acc[n][e];
                    if (t == 0) {
                        part[base + DV] = Ms[r];
                        part[base + DV + 1] = Ls[r];
                    }
                }
            }
        }
        return;
    }
    // A row that saw no key has l == 0 and gives zeros.
    [[unroll]] for (uint n = 0; n < NO; n++) {
        const uint x = tid + n * WG;
        if (x < BR * DV4) {
            const uint r = x / DV4, t = x % DV4;
            if (r < rows) {
                const float l = Ls[r];
                // NaN (a NaN logit) by its bits: compilers may assume no NaN
                // in float compares.
                const bool nan_l = (floatBitsToUint(l) & 0x7fffffffu) > 0x7f800000u;
                const vec4 y = nan_l ? vec4(uintBitsToFloat(0x7fc00000u))
                             : l > 0.0 ? acc[n] / l : vec4(0.0);
                const uint base = (bh * pc.nq + i0 + r) * DV;
                [[unroll]] for (uint e = 0; e < 4; e++)
                    if (4 * t + e < DV)
                        o[base + 4 * t + e] = y[e];
            }
        }
    }
}

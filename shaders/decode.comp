#version 450
#extension GL_EXT_control_flow_attributes : require
// Decoding (Nq = 1): one workgroup per (batch item, K/V head, block of up to
// R of that head's query heads, split-KV chunk). Built three times: Q, K
// and V as float; (-DSTORAGE16) as fp16 and (-DSTORAGEBF16) as bf16, both
// read through 32-bit words and unpacked (unpackHalf2x16; bf16 by shifts);
// the math is fp32 every time.
//
// With one query row per head, flash.comp leaves most of a workgroup idle
// and runs the softmax on one invocation; this kernel spreads a tile of WG
// keys over the invocations instead:
//   - scores: invocation i takes key j0 + i and reads that key's row of K
//     once, in 16-byte loads, for the R query heads of its K/V group (Q,
//     pre-scaled by scale*log2(e), sits in shared memory and every
//     invocation reads the same element: a broadcast);
//   - P.V: the invocations are KQ groups of DV4 (one vec4 column of V each;
//     a group's loads of one key's V row are contiguous), group g taking
//     keys g*KPQ .. g*KPQ + KPQ-1 of the tile. Each group keeps its own
//     online softmax (running max m, sum l, in log2 units) over the keys it
//     sees, so a tile needs no reduction across the workgroup: two barriers
//     a tile. The groups' (m, l, O) are merged once at the end, as
//     combine.comp merges split-KV chunks.
// A key the row cannot see is left out by the loop bound, not multiplied by
// a 0, so a NaN or Inf in its V stays out of the row. With split-KV
// (splits > 1) the workgroup takes one chunk of split_keys keys and writes
// its rows unnormalized with m and l for combine.comp.
//
// Every loop but the key loop has a trip count fixed by the specialization
// constants and is unrolled, so an invocation runs one loop iteration per
// key tile (Mesa's llvmpipe limit; plan.c counts it). plan.c takes this
// kernel where d_k and d_v are multiples of 4 (8 for d_k in fp16 and bf16,
// for the 16-byte loads) and DV4 <= WG; elsewhere decoding runs flash.comp.
#if defined(STORAGE16) || defined(STORAGEBF16)
#define HALVES
#define KVEC uvec4                  // 8 halves
#define QVEC uvec2                  // 4 halves
#else
#define KVEC vec4
#define QVEC vec4
#endif
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint R = 4;   // query heads per workgroup
layout(constant_id = 2) const uint DK = 64;
layout(constant_id = 3) const uint DV = 64;

const uint WG = gl_WorkGroupSize.x;
const uint BC = WG;                         // keys per tile
const uint DK4 = DK / 4, DV4 = DV / 4;
#ifdef HALVES
const uint DKL = DK / 8;                    // 16-byte loads per K row
#else
const uint DKL = DK / 4;
#endif
const uint KQ = WG / DV4;                   // P.V groups
const uint KPQ = (BC + KQ - 1) / KQ;        // keys per group and tile
const uint PS = BC + 1 - (BC & 1);          // score row stride (odd)
const uint NQ = (R * DK4 + WG - 1) / WG;    // Q vec4 loads per invocation
const uint NO = (R * DV4 + WG - 1) / WG;    // merged output vec4 per invocation

layout(std430, binding = 0) readonly buffer Qb { QVEC q[]; };
layout(std430, binding = 1) readonly buffer Kb { KVEC k[]; };
layout(std430, binding = 2) readonly buffer Vb { QVEC v[]; };
layout(std430, binding = 3) writeonly buffer Ob { vec4 o[]; };
layout(std430, binding = 4) readonly buffer Lb { int kv_len[]; };
// Split-KV: per chunk and row (B H of them), DV floats of O, then m, l.
layout(std430, binding = 5) writeonly buffer Pb { float part[]; };

layout(push_constant) uniform Push {
    uint heads, nq, nk, dk, dv, causal, head_base;
    float scale;
    uint group;                     // query heads per K/V head (H / Hkv)
    uint splits, split_keys;        // split-KV chunks (1: none), keys per chunk
    uint rows;                      // B H Nq
} pc;

shared vec4 Qs[R * DK4];
shared float Ps[R * PS];            // the tile's scores, rows PS apart
shared vec4 Os[KQ * R * DV4];       // the groups' unnormalized O, at the end
shared float Ms[KQ * R], Ls[KQ * R];

// The two 16-bit values of a word, the first in its low half.
vec2 unpack2(uint w)
{
#ifdef STORAGEBF16
    return vec2(uintBitsToFloat(w << 16), uintBitsToFloat(w & 0xffff0000u));
#else
    return unpackHalf2x16(w);
#endif
}

vec4 unpack4(QVEC x)
{
#ifdef HALVES
    return vec4(unpack2(x.x), unpack2(x.y));
#else
    return x;
#endif
}

void main()
{
    const uint tid = gl_LocalInvocationID.x;
    const uint batch = gl_NumWorkGroups.z / pc.splits;
    const uint g = gl_WorkGroupID.y, b = gl_WorkGroupID.z % batch;
    const uint split = gl_WorkGroupID.z / batch;
    const uint kvh = b * (pc.heads / pc.group) + g;             // the K/V head
    const uint h0 = g * pc.group + gl_WorkGroupID.x * R;        // its first query head
    const uint rows = min(R, g * pc.group + pc.group - h0);
    // One query row: causal sees every key (the row is the last).
    const int end = max(min(kv_len[b], int(pc.nk)), 0);
    const int j_lo = int(split * pc.split_keys);
    const int j_hi = pc.splits > 1 ? min(end, j_lo + int(pc.split_keys)) : end;
    const float qscale = pc.scale * 1.4426950408889634;
    const float ninf = uintBitsToFloat(0xff800000u);

    [[unroll]] for (uint n = 0; n < NQ; n++) {
        const uint x = tid + n * WG;
        if (x < R * DK4) {
            const uint r = x / DK4, t = x % DK4;
            Qs[x] = r < rows ? unpack4(q[(b * pc.heads + h0 + r) * DK4 + t]) * qscale : vec4(0.0);
        }
    }
    // P.V: column t of group kq (an invocation past the groups only scores).
    const uint t = tid % DV4, kq = tid / DV4;
    float m[R], l[R];
    vec4 acc[R];
    [[unroll]] for (uint r = 0; r < R; r++) {
        m[r] = -1e30;
        l[r] = 0.0;
        acc[r] = vec4(0.0);
    }
    barrier();                      // Qs

    [[dont_unroll]] for (int j0 = j_lo; j0 < j_hi; j0 += int(BC)) {
        // Scores of key j0 + tid, one read of its K row for the R heads.
        const int j = j0 + int(tid);
        if (j < j_hi) {
            vec4 d4[R];
            [[unroll]] for (uint r = 0; r < R; r++)
                d4[r] = vec4(0.0);
            const uint kb = (kvh * pc.nk + uint(j)) * DKL;
            [[unroll]] for (uint c = 0; c < DKL; c++) {
                const KVEC kx = k[kb + c];
#ifdef HALVES
                const vec4 ka = vec4(unpack2(kx.x), unpack2(kx.y));
                const vec4 kb4 = vec4(unpack2(kx.z), unpack2(kx.w));
                [[unroll]] for (uint r = 0; r < R; r++)
                    d4[r] += Qs[r * DK4 + 2 * c] * ka + Qs[r * DK4 + 2 * c + 1] * kb4;
#else
                [[unroll]] for (uint r = 0; r < R; r++)
                    d4[r] += Qs[r * DK4 + c] * kx;
#endif
            }
            [[unroll]] for (uint r = 0; r < R; r++)
                Ps[r * PS + tid] = d4[r].x + d4[r].y + d4[r].z + d4[r].w;
        }
        barrier();                  // the tile's scores
        if (kq < KQ) {
            const int c0 = j0 + int(kq * KPQ);
            // Keys of this group here (the last group of a tile may be short).
            const int n = clamp(min(j_hi, j0 + int(BC)) - c0, 0, int(KPQ));
            const uint p0 = kq * KPQ;
            [[unroll]] for (uint r = 0; r < R; r++) {
                float mt = m[r];
                [[unroll]] for (uint c = 0; c < KPQ; c++)
                    if (int(c) < n)
                        mt = max(mt, Ps[r * PS + p0 + c]);
                const float alpha = exp2(m[r] - mt);
                l[r] *= alpha;
                acc[r] *= alpha;
                m[r] = mt;
            }
            [[unroll]] for (uint c = 0; c < KPQ; c++) {
                if (int(c) < n) {
                    const vec4 vc = unpack4(v[(kvh * pc.nk + uint(c0) + c) * DV4 + t]);
                    [[unroll]] for (uint r = 0; r < R; r++) {
                        const float s = Ps[r * PS + p0 + c];
                        const float p = s == ninf ? 0.0 : exp2(s - m[r]);
                        l[r] += p;
                        acc[r] += p * vc;
                    }
                }
            }
        }
        barrier();                  // Ps is consumed
    }

    // Merge the groups: O = sum_g 2^(m_g - M) O_g / sum_g 2^(m_g - M) l_g.
    if (kq < KQ) {
        [[unroll]] for (uint r = 0; r < R; r++) {
            Os[(kq * R + r) * DV4 + t] = acc[r];
            if (t == 0) {
                Ms[kq * R + r] = m[r];
                Ls[kq * R + r] = l[r];
            }
        }
    }
    barrier();
    [[unroll]] for (uint n = 0; n < NO; n++) {
        const uint x = tid + n * WG;
        if (x < R * DV4) {
            const uint r = x / DV4, c = x % DV4;
            if (r < rows) {
                float mx = -1e30;
                [[unroll]] for (uint e = 0; e < KQ; e++)
                    mx = max(mx, Ms[e * R + r]);
                float lsum = 0.0;
                vec4 y = vec4(0.0);
                [[unroll]] for (uint e = 0; e < KQ; e++) {
                    const float w = exp2(Ms[e * R + r] - mx);
                    lsum += w * Ls[e * R + r];
                    y += w * Os[(e * R + r) * DV4 + c];
                }
                const uint bh = b * pc.heads + h0 + r;
                if (pc.splits > 1) {
                    const uint base = (split * pc.rows + bh) * (DV + 2);
                    [[unroll]] for (uint e = 0; e < 4; e++)
                        part[base + 4 * c + e] = y[e];
                    if (c == 0) {
                        part[base + DV] = mx;
                        part[base + DV + 1] = lsum;
                    }
                } else {
                    // A row that saw no key has l == 0 and gives zeros; NaN
                    // (a NaN logit) by its bits: compilers may assume no NaN
                    // in float compares.
                    const bool nan_l = (floatBitsToUint(lsum) & 0x7fffffffu) > 0x7f800000u;
                    o[bh * DV4 + c] = nan_l ? vec4(uintBitsToFloat(0x7fc00000u))
                                    : lsum > 0.0 ? y / lsum : vec4(0.0);
                }
            }
        }
    }
}

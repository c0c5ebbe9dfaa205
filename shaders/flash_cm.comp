#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_NV_cooperative_matrix : require
// flash.comp's computation on the GPU's matrix units (VK_NV_cooperative_
// matrix, 16 x 16 x 16 products of fp16 into fp32), for fp16 Q, K and V
// with d_k = d_v = D (built for 64 and 128). One workgroup of four
// subgroups of 32 invocations takes BR = 64 query rows of one (batch,
// head), 16 rows per subgroup; per tile of BC = 64 keys:
//   - the workgroup stages K in shared memory (keys past the batch item's
//     length as zeros);
//   - each subgroup multiplies its Q (held as D / 16 matrices since the
//     start) by K^T into 16 x 64 fp32 scores and stores them;
//   - the workgroup stages V where K was, while each subgroup runs the
//     online softmax on its scores, two invocations a row (log2 units: the
//     scores are scaled by scale * log2(e) in fp32), and writes P rounded to
//     fp16 (the fp16 class allows that one rounding, docs/correctness.md);
//   - each subgroup rescales its 16 x D fp32 accumulators by the rows'
//     factors and adds P V.
// K, V, Q and P sit in shared memory as words of fp16 pairs (uvec4 for K
// and V, uint for Q and P), so staging writes 16 or 4 bytes at a time; the
// matrix loads count their offsets and strides in those words.
// Every shared array is a multiple of 16 bytes long, so each starts on a
// 16-byte boundary wherever the driver places it: the matrix loads and
// stores need that (on the H200 a 4-byte flag before the arrays shifted
// every matrix by two fp16 elements), and the strides and offsets below
// are multiples of 16 bytes too.
// A cooperative matrix's elements are spread over the subgroup in a way the
// driver chooses, but the same way for every matrix of one type. So a
// per-row factor reaches each element through a matrix of that type loaded
// with the factor in every column of its row, and a row's number likewise.
// Non-finite values: a tile of keys that some rows see only in part (the
// causal diagonal, the batch item's length) multiplies P by V with 0 for
// the keys a row cannot see, and 0 x NaN or 0 x Inf would reach that row.
// Such a tile's V is scanned as it is staged; where a non-finite value
// is found, the subgroups add P V over each row's own keys one element at a
// time instead. Split-KV (splits > 1) as flash.comp: the rows unnormalized,
// with m and l, for combine.comp. Every wait is a workgroup barrier, also
// where one subgroup's own scratch is handed between its invocations and
// its matrices (all in control flow uniform over the workgroup).
#ifndef D
#define D 128
#endif
layout(local_size_x = 128) in;
const uint BR = 64, BC = 64;
const uint DT = D / 16, CT = BC / 16;      // 16-wide slices of d, of a key tile
const uint KS = D / 8 + 1;                 // K/V row stride (uvec4 of 8 halves; rows
                                           // that fall on different banks)
const uint SS = BC + 4;                    // score row stride (floats)
const uint PS = BC / 2 + 4;                // P row stride (words of 2 halves)
const uint D8 = D / 8;                     // uvec4 per row of K or V

#define M16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define M32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

layout(std430, binding = 0) readonly buffer Qb { float16_t q[]; };
layout(std430, binding = 1) readonly buffer Kb { uvec4 k4[]; };
layout(std430, binding = 2) readonly buffer Vb { uvec4 v4[]; };
layout(std430, binding = 3) writeonly buffer Ob { float o[]; };
layout(std430, binding = 4) readonly buffer Lb { int kv_len[]; };
layout(std430, binding = 5) writeonly buffer Pb { float part[]; };

layout(push_constant) uniform Push {
    uint heads, nq, nk, dk, dv, causal, head_base;
    float scale;
    uint group;
    uint splits, split_keys;
    uint rows;
} pc;

shared uvec4 KV[BC * KS];           // the tile's K, then its V, 8 halves a word
shared float Ss[4 * 16 * SS];       // each subgroup's scores
shared uint Ps[4 * 16 * PS];        // each subgroup's P, 2 halves a word (at the start:
                                    // Q, 16 x 16 at a time)
shared float Xs[4 * 256];           // each subgroup's 16 x 16 fp32 scratch
shared float Lx[BR];                // each row's l at the end
shared uint vbad[4];                // [0]: a non-finite V in a partly visible tile (four
                                    // words, a multiple of 16 bytes: see the top)

int visible_end(uint b, int i)
{
    int end = kv_len[b];
    if (pc.causal != 0)
        end = min(end, i + int(pc.nk) - int(pc.nq) + 1);
    return max(end, 0);
}

// Element i of a row of halves, from the word holding i and i ^ 1.
float half_at(uint w, uint i)
{
    const f16vec2 h = unpackFloat2x16(w);
    return float((i & 1u) != 0u ? h.y : h.x);
}

// Whether a 16-bit float of the word is Inf or NaN.
bool nonfinite2(uint w)
{
    return (w & 0x7c00u) == 0x7c00u || (w & 0x7c000000u) == 0x7c000000u;
}

// A matrix of the accumulators' type whose element (r, c) is r (cols: c).
M32 index_matrix(uint sg, uint lane, bool cols)
{
    barrier();
    [[unroll]] for (uint e = 0; e < 8; e++) {
        const uint x = lane * 8 + e;
        Xs[sg * 256 + x] = float(cols ? x % 16 : x / 16);
    }
    barrier();
    M32 m;
    coopMatLoadNV(m, Xs, sg * 256, 16, false);
    return m;
}

void main()
{
    const uint tid = gl_LocalInvocationID.x;
    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint batch = gl_NumWorkGroups.z / pc.splits;
    const uint h = gl_WorkGroupID.y, b = gl_WorkGroupID.z % batch;
    const uint split = gl_WorkGroupID.z / batch;
    const uint bh = b * pc.heads + h;
    const uint kvh = b * (pc.heads / pc.group) + h / pc.group;
    const uint i0 = gl_WorkGroupID.x * BR;
    const uint rows = min(BR, pc.nq - i0);
    const int end_blk = visible_end(b, int(i0 + rows) - 1);
    const int j_lo = int(split * pc.split_keys);
    const int j_hi = pc.splits > 1 ? min(end_blk, j_lo + int(pc.split_keys)) : end_blk;
    const int kvl = min(kv_len[b], int(pc.nk));     // keys no row sees from here on
    const float qscale = pc.scale * 1.4426950408889634;
    const float ninf = uintBitsToFloat(0xff800000u);

    // This invocation's softmax row (of the subgroup's 16) and half of the tile.
    const uint r = lane & 15, half_ = lane >> 4;
    const uint srow = sg * 16 + r;
    const int rend = srow < rows ? visible_end(b, int(i0 + srow)) : 0;
    float m = -1e30, l = 0.0;

    // Q, 16 x 16 at a time through this subgroup's P rows (zeros past Nq).
    M16 qf[DT];
    {
        const uint rr = lane >> 1, cc = (lane & 1) * 8, row = sg * 16 + rr;
        [[unroll]] for (uint t = 0; t < DT; t++) {
            [[unroll]] for (uint e = 0; e < 8; e += 2) {
                const uint at = (bh * pc.nq + i0 + row) * D + 16 * t + cc + e;
                Ps[sg * 16 * PS + rr * PS + (cc + e) / 2] =
                    row < rows ? packFloat2x16(f16vec2(q[at], q[at + 1])) : 0u;
            }
            barrier();
            coopMatLoadNV(qf[t], Ps, sg * 16 * PS, PS, false);
            barrier();
        }
    }
    M32 of[DT];
    [[unroll]] for (uint t = 0; t < DT; t++)
        of[t] = M32(0.0);

    [[dont_unroll]] for (int j0 = j_lo; j0 < j_hi; j0 += int(BC)) {
        const int keys = min(int(BC), int(pc.nk) - j0);
        const bool part_tile = j0 + keys > visible_end(b, int(i0));
        barrier();                  // the previous tile's V is consumed
        if (tid == 0)
            vbad[0] = 0u;
        [[unroll]] for (uint n = 0; n < BC * D8 / 128; n++) {
            const uint x = tid + n * 128, c = x / D8, t = x % D8;
            const int j = j0 + int(c);
            KV[c * KS + t] = j < kvl ? k4[((kvh * pc.nk + uint(j)) * D) / 8 + t] : uvec4(0u);
        }
        barrier();
        {
            M32 sf[CT];
            [[unroll]] for (uint c = 0; c < CT; c++) {
                sf[c] = M32(0.0);
                [[unroll]] for (uint t = 0; t < DT; t++) {
                    M16 kf;
                    coopMatLoadNV(kf, KV, c * 16 * KS + t * 2, KS, true);
                    sf[c] = coopMatMulAddNV(qf[t], kf, sf[c]);
                }
            }
            [[unroll]] for (uint c = 0; c < CT; c++)
                coopMatStoreNV(sf[c], Ss, sg * 16 * SS + c * 16, SS, false);
        }
        barrier();                  // every subgroup's scores are out; K is consumed
        [[unroll]] for (uint n = 0; n < BC * D8 / 128; n++) {
            const uint x = tid + n * 128, c = x / D8, t = x % D8;
            const int j = j0 + int(c);
            const uvec4 w = j < kvl ? v4[((kvh * pc.nk + uint(j)) * D) / 8 + t] : uvec4(0u);
            if (part_tile && (nonfinite2(w.x) || nonfinite2(w.y) || nonfinite2(w.z) ||
                              nonfinite2(w.w)))
                atomicOr(vbad[0], 1u);
            KV[c * KS + t] = w;
        }
        // The online softmax, as flash.comp's: keys a row cannot see are -inf
        // and weigh 0.
        {
            const uint sb = sg * 16 * SS + r * SS + half_ * (BC / 2);
            float sv[BC / 2];
            float mt = m;
            [[unroll]] for (uint e = 0; e < BC / 2; e++) {
                const int j = j0 + int(half_ * (BC / 2) + e);
                sv[e] = j < rend ? Ss[sb + e] * qscale : ninf;
                mt = max(mt, sv[e]);
            }
            mt = max(mt, subgroupShuffleXor(mt, 16));
            float sum = 0.0;
            const uint pb = sg * 16 * PS + r * PS + half_ * (BC / 4);
            [[unroll]] for (uint e = 0; e < BC / 2; e += 2) {
                const float p0 = sv[e] == ninf ? 0.0 : exp2(sv[e] - mt);
                const float p1 = sv[e + 1] == ninf ? 0.0 : exp2(sv[e + 1] - mt);
                Ps[pb + e / 2] = packFloat2x16(f16vec2(p0, p1));
                sum += p0 + p1;
            }
            sum += subgroupShuffleXor(sum, 16);
            const float alpha = exp2(m - mt);
            l = l * alpha + sum;
            m = mt;
            [[unroll]] for (uint e = 0; e < 8; e++)
                Xs[sg * 256 + r * 16 + half_ * 8 + e] = alpha;
        }
        barrier();
        {
            M32 am;
            coopMatLoadNV(am, Xs, sg * 256, 16, false);
            [[unroll]] for (uint t = 0; t < DT; t++)
                [[unroll]] for (int i = 0; i < of[t].length(); i++)
                    of[t][i] *= am[i];
        }
        barrier();                  // V is staged, vbad final
        if (vbad[0] == 0u) {
            [[unroll]] for (uint c = 0; c < CT; c++) {
                M16 pf;
                coopMatLoadNV(pf, Ps, sg * 16 * PS + c * 8, PS, false);
                [[unroll]] for (uint t = 0; t < DT; t++) {
                    M16 vf;
                    coopMatLoadNV(vf, KV, c * 16 * KS + t * 2, KS, false);
                    of[t] = coopMatMulAddNV(pf, vf, of[t]);
                }
            }
        } else {
            // Each row over its own keys only, one element at a time.
            const M32 rid = index_matrix(sg, lane, false);
            const M32 cid = index_matrix(sg, lane, true);
            [[unroll]] for (uint t = 0; t < DT; t++)
                [[unroll]] for (int i = 0; i < of[t].length(); i++) {
                    const uint rr = uint(rid[i]), col = t * 16 + uint(cid[i]);
                    const uint row = sg * 16 + rr;
                    const int re = row < rows ? visible_end(b, int(i0 + row)) : 0;
                    float a = of[t][i];
                    for (uint c = 0; c < BC && j0 + int(c) < re; c++)
                        a += half_at(Ps[sg * 16 * PS + rr * PS + c / 2], c) *
                             half_at(KV[c * KS + col / 8][(col / 2) % 4], col);
                    of[t][i] = a;
                }
        }
    }

    // The rows out: l of each row through shared memory, each 16 x 16 slice
    // of O through this subgroup's scratch, rows past Nq not written.
    if (half_ == 0)
        Lx[srow] = l;
    const M32 rid = index_matrix(sg, lane, false);
    const uint rr = lane >> 1, cc = (lane & 1) * 8, row = sg * 16 + rr;
    if (pc.splits > 1) {
        // m = -1e30 and l = 0 for a row that saw no key of this chunk.
        const uint base = (split * pc.rows + bh * pc.nq + i0 + row) * (D + 2);
        [[unroll]] for (uint t = 0; t < DT; t++) {
            barrier();
            coopMatStoreNV(of[t], Xs, sg * 256, 16, false);
            barrier();
            if (row < rows)
                [[unroll]] for (uint e = 0; e < 8; e++)
                    part[base + 16 * t + cc + e] = Xs[sg * 256 + rr * 16 + cc + e];
        }
        if (half_ == 0 && srow < rows) {
            const uint at = (split * pc.rows + bh * pc.nq + i0 + srow) * (D + 2);
            part[at + D] = m;
            part[at + D + 1] = l;
        }
        return;
    }
    barrier();
    [[unroll]] for (uint t = 0; t < DT; t++) {
        // A row that saw no key has l == 0 and gives zeros; a NaN in l, NaN.
        [[unroll]] for (int i = 0; i < of[t].length(); i++) {
            const float li = Lx[sg * 16 + uint(rid[i])];
            const bool nan_l = (floatBitsToUint(li) & 0x7fffffffu) > 0x7f800000u;
            of[t][i] = nan_l ? uintBitsToFloat(0x7fc00000u) : li > 0.0 ? of[t][i] / li : 0.0;
        }
        barrier();
        coopMatStoreNV(of[t], Xs, sg * 256, 16, false);
        barrier();
        if (row < rows)
            [[unroll]] for (uint e = 0; e < 8; e++)
                o[(bh * pc.nq + i0 + row) * D + 16 * t + cc + e] = Xs[sg * 256 + rr * 16 + cc + e];
    }
}

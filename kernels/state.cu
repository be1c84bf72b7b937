// State kernels of the kinds beyond Mamba1 (docs/numeric-model.md §8):
// Gated DeltaNet's recurrent decode (fused_recurrent_gated_delta_rule) and
// chunked prefill (chunk_gated_delta_rule), Mamba2's state update
// (selective_state_update) and SSD scan (mamba_chunk_scan_combined). All
// four are one gated linear recurrence per head over S[head][dv][dk]:
//
//     S <- S * e^g (g a log decay per key channel, or one per head)
//     u  = beta * (v - S k)   (the delta rule)   or   u = v   (Mamba2)
//     S <- S + u k^T;  o = S q
//
// Inputs are per token: q, k, g [token][heads][dk] (g [token][heads] when
// the gate is per head), v, o [token][heads][dv], beta [token][heads]; rows
// are token ranges cu_seqlens[row] .. cu_seqlens[row + 1].
//
// The state address has one source: the row's slot from read_slot /
// write_slots, times page_elems, plus state_offset, formed in 64 bits. A
// negative read slot starts from zeros (no initial state). Speculative
// decoding: with per_token set, the state after the row's t-th token goes
// to write_slots[row * write_stride + t] for t < write_stride (vLLM's state
// columns); otherwise the final state goes to write_slots[row * write_stride].
#include "common.cuh"

// The backend's launch geometry (kernels.StateRecThreads, StateRecRows);
// the benchmark compiles variants with -DREC_WARPS=... -DREC_ROWS=....
// docs/kernel-bench.md has the geometries measured.
#ifndef REC_WARPS
#define REC_WARPS 4
#endif
#ifndef REC_ROWS
#define REC_ROWS 8     // value rows per warp
#endif
#ifdef REC_MIN_BLOCKS  // a variant's register cap: this many resident blocks per multiprocessor
#define REC_BOUNDS __launch_bounds__(32 * REC_WARPS, REC_MIN_BLOCKS)
#else
#define REC_BOUNDS __launch_bounds__(32 * REC_WARPS)
#endif
// REC_LINEAR: blocks take work in launch order (x fastest), value blocks
// first, then heads, then rows, so consecutive blocks read adjacent pieces
// of one slot's page, as the Triton grid (value block fastest) does; 0
// keeps (row, head, value block) = (x, y, z). The set of blocks is the same.
#ifndef REC_LINEAR
#define REC_LINEAR 1
#endif
// REC_FULL: a second copy of the recurrence for the common shape (dk =
// MAX_DK, dv a multiple of the rows a block covers) with no bounds checks,
// so the hot path carries no partial-vector code or divergent branches.
#ifndef REC_FULL
#define REC_FULL 1
#endif
// REC_CS: state loads and stores marked evict-first (ld/st.global.cs).
#ifndef REC_CS
#define REC_CS 0
#endif
#define MAX_DK 128     // key channels: four per lane
#define CHUNK_MAX 64   // tokens per chunk at most
#define CHUNK_MAX_DV 128

// full: the caller knows c + 3 < dk (a compile-time constant after inlining).
__device__ __forceinline__ float4 ld4(const float* p, int c, int dk, bool full = false) {
    if (full || c + 3 < dk) return *reinterpret_cast<const float4*>(p + c);
    float4 r = make_float4(0.f, 0.f, 0.f, 0.f);
    if (c < dk) r.x = p[c];
    if (c + 1 < dk) r.y = p[c + 1];
    if (c + 2 < dk) r.z = p[c + 2];
    return r;
}

__device__ __forceinline__ void st4(float* p, int c, int dk, float4 v, bool full = false) {
    if (full || c + 3 < dk) { *reinterpret_cast<float4*>(p + c) = v; return; }
    if (c < dk) p[c] = v.x;
    if (c + 1 < dk) p[c + 1] = v.y;
    if (c + 2 < dk) p[c + 2] = v.z;
}

// The state's own loads and stores (REC_CS: streaming).
__device__ __forceinline__ float4 lds4(const float* p, int c, int dk, bool full) {
#if REC_CS
    if (full || c + 3 < dk) return __ldcs(reinterpret_cast<const float4*>(p + c));
#endif
    return ld4(p, c, dk, full);
}

__device__ __forceinline__ void sts4(float* p, int c, int dk, float4 v, bool full) {
#if REC_CS
    if (full || c + 3 < dk) { __stcs(reinterpret_cast<float4*>(p + c), v); return; }
#endif
    st4(p, c, dk, v, full);
}

__device__ __forceinline__ float dot4(float4 a, float4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }

__device__ __forceinline__ float* state_at(float* state, long long page_elems, long long state_offset, int slot,
                                           int head, int dv, int dk) {
    return state + (long long)slot * page_elems + state_offset + ((long long)head * dv) * dk;
}

// Token by token. grid (rows, heads, ceil(dv / (REC_WARPS * REC_ROWS))),
// block 32 * REC_WARPS (REC_LINEAR: the blocks' work in launch order); a
// warp owns REC_ROWS value rows, a lane four key channels (dk <= 128, a
// multiple of 4 for 16-byte accesses).
template <bool DELTA, bool FULL>
__device__ void recurrent(float* state, long long page_elems, long long state_offset, const int* cu_seqlens,
                          const int* read_slot, const int* write_slots, int write_stride, int per_token,
                          const float* q, const float* k, const float* v, const float* g, const float* beta,
                          int gate_per_channel, float* o, int heads, int dk, int dv) {
#if REC_LINEAR
    unsigned id = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z); // < 2^32 blocks
    int zb = (int)(id % gridDim.z);
    id /= gridDim.z;
    int head = (int)(id % gridDim.y), row = (int)(id / gridDim.y);
#else
    int row = blockIdx.x, head = blockIdx.y, zb = blockIdx.z;
#endif
    if (FULL) dk = MAX_DK;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int p0 = (zb * REC_WARPS + warp) * REC_ROWS;
    int c = lane * 4;
    int t0 = cu_seqlens[row], t1 = cu_seqlens[row + 1];
    int rs = read_slot[row];
    int ws_final = per_token ? 0 : write_slots[row * write_stride]; // loaded beside the state
    float4 s[REC_ROWS];
    // Every row's load first: REC_ROWS 16-byte loads in flight per lane.
#pragma unroll
    for (int r = 0; r < REC_ROWS; r++) {
        int p = p0 + r;
        s[r] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (rs >= 0 && (FULL || p < dv)) s[r] = lds4(state_at(state, page_elems, state_offset, rs, head, dv, dk) + (long long)p * dk, c, dk, FULL);
    }
    for (int t = t0; t < t1; t++) {
        long long hk = ((long long)t * heads + head) * dk;
        float4 q4 = ld4(q + hk, c, dk, FULL), k4 = ld4(k + hk, c, dk, FULL);
        float4 e;
        if (gate_per_channel) {
            float4 g4 = ld4(g + hk, c, dk, FULL);
            e = make_float4(expf(g4.x), expf(g4.y), expf(g4.z), expf(g4.w));
        } else {
            float x = expf(g[(long long)t * heads + head]);
            e = make_float4(x, x, x, x);
        }
        float b = DELTA ? beta[(long long)t * heads + head] : 0.f;
        long long hv = ((long long)t * heads + head) * dv;
#pragma unroll
        for (int r = 0; r < REC_ROWS; r++) {
            int p = p0 + r;
            if (!FULL && p >= dv) break;
            float4 x = s[r];
            x.x *= e.x; x.y *= e.y; x.z *= e.z; x.w *= e.w;
            float u = v[hv + p];
            if (DELTA) u = b * (u - warp_sum(dot4(x, k4)));
            x.x += u * k4.x; x.y += u * k4.y; x.z += u * k4.z; x.w += u * k4.w;
            s[r] = x;
            float y = warp_sum(dot4(x, q4));
            if (lane == 0) o[hv + p] = y;
        }
        int j = t - t0;
        if (per_token && j < write_stride) {
            int ws = write_slots[row * write_stride + j];
            float* dst = state_at(state, page_elems, state_offset, ws, head, dv, dk);
#pragma unroll
            for (int r = 0; r < REC_ROWS; r++)
                if (FULL || p0 + r < dv) sts4(dst + (long long)(p0 + r) * dk, c, dk, s[r], FULL);
        }
    }
    if (!per_token) {
        float* dst = state_at(state, page_elems, state_offset, ws_final, head, dv, dk);
#pragma unroll
        for (int r = 0; r < REC_ROWS; r++)
            if (FULL || p0 + r < dv) sts4(dst + (long long)(p0 + r) * dk, c, dk, s[r], FULL);
    }
}

extern "C" __global__ void REC_BOUNDS
gdn_recurrent_decode(float* state, long long page_elems, long long state_offset, const int* cu_seqlens,
                     const int* read_slot, const int* write_slots, int write_stride, int per_token, const float* q,
                     const float* k, const float* v, const float* g, const float* beta, int gate_per_channel, float* o,
                     int heads, int dk, int dv) {
#if REC_FULL
    if (dk == MAX_DK && dv % (REC_WARPS * REC_ROWS) == 0) {
        recurrent<true, true>(state, page_elems, state_offset, cu_seqlens, read_slot, write_slots, write_stride,
            per_token, q, k, v, g, beta, gate_per_channel, o, heads, dk, dv);
        return;
    }
#endif
    recurrent<true, false>(state, page_elems, state_offset, cu_seqlens, read_slot, write_slots, write_stride,
        per_token, q, k, v, g, beta, gate_per_channel, o, heads, dk, dv);
}

extern "C" __global__ void REC_BOUNDS
mamba2_state_update(float* state, long long page_elems, long long state_offset, const int* cu_seqlens,
                    const int* read_slot, const int* write_slots, int write_stride, int per_token, const float* q,
                    const float* k, const float* v, const float* g, const float* beta, int gate_per_channel, float* o,
                    int heads, int dk, int dv) {
#if REC_FULL
    if (dk == MAX_DK && dv % (REC_WARPS * REC_ROWS) == 0) {
        recurrent<false, true>(state, page_elems, state_offset, cu_seqlens, read_slot, write_slots, write_stride,
            per_token, q, k, v, g, beta, gate_per_channel, o, heads, dk, dv);
        return;
    }
#endif
    recurrent<false, false>(state, page_elems, state_offset, cu_seqlens, read_slot, write_slots, write_stride,
        per_token, q, k, v, g, beta, gate_per_channel, o, heads, dk, dv);
}

// In chunks of L tokens (L <= CHUNK_MAX, L * dk <= 2048 floats of shared
// memory per array): with G_i the cumulative log decay inside the chunk,
//
//     u_i = beta_i (v_i - S0 (e^G_i . k_i) - sum_{s<i} <k_i . e^(G_i - G_s), k_s> u_s)   (u_i = v_i without the delta rule)
//     o_i = S0 (e^G_i . q_i) + sum_{s<=i} <q_i . e^(G_i - G_s), k_s> u_s
//     S   = S0 . e^G_L + sum_s u_s (k_s . e^(G_L - G_s))^T
//
// grid (rows, heads), block 128 threads: thread p owns value row p (rows
// p, p + 128, ... up to dv <= CHUNK_MAX_DV... one per thread here: dv <= 128).
// Shared: the chunk's k, q, e^G, e^(G_L - G) [L][dk], the pair products
// [L][L] twice, beta [L].
template <bool DELTA>
__device__ void chunked(float* state, long long page_elems, long long state_offset, const int* cu_seqlens,
                        const int* read_slot, const int* write_slots, const float* q, const float* k, const float* v,
                        const float* g, const float* beta, int gate_per_channel, float* o, int heads, int dk, int dv,
                        int L) {
    extern __shared__ float sh[];
    float* kc = sh;                 // [L][dk]
    float* qc = kc + L * dk;        // [L][dk]
    float* eg = qc + L * dk;        // [L][dk]: e^G_i, then G_i while building
    float* ee = eg + L * dk;        // [L][dk]: e^(G_last - G_s)
    float* akk = ee + L * dk;       // [L][L]
    float* aqk = akk + L * L;       // [L][L]
    float* bt = aqk + L * L;        // [L]
    float* gam = bt + L;            // [L][dk]: G
    int row = blockIdx.x, head = blockIdx.y, p = threadIdx.x, nt = blockDim.x;
    int t0 = cu_seqlens[row], t1 = cu_seqlens[row + 1];
    int rs = read_slot[row];
    float sr[MAX_DK];
    float u[CHUNK_MAX];
    const float* src = rs >= 0 ? state_at(state, page_elems, state_offset, rs, head, dv, dk) + (long long)p * dk : nullptr;
    for (int c = 0; c < dk; c++) sr[c] = (p < dv && src) ? src[c] : 0.f;
    for (int c0 = t0; c0 < t1; c0 += L) {
        int n = min(L, t1 - c0);
        __syncthreads();
        for (int i = threadIdx.x; i < n * dk; i += nt) {
            int t = c0 + i / dk, c = i % dk;
            long long hk = ((long long)t * heads + head) * dk + c;
            kc[i] = k[hk];
            qc[i] = q[hk];
            gam[i] = gate_per_channel ? g[hk] : g[(long long)t * heads + head];
        }
        for (int i = threadIdx.x; i < n; i += nt) bt[i] = DELTA ? beta[(long long)(c0 + i) * heads + head] : 0.f;
        __syncthreads();
        for (int c = threadIdx.x; c < dk; c += nt)
            for (int i = 1; i < n; i++) gam[i * dk + c] += gam[(i - 1) * dk + c];
        __syncthreads();
        for (int i = threadIdx.x; i < n * dk; i += nt) {
            int c = i % dk;
            eg[i] = expf(gam[i]);
            ee[i] = expf(gam[(n - 1) * dk + c] - gam[i]);
        }
        for (int i = threadIdx.x; i < n * n; i += nt) {
            int a = i / n, s = i % n;
            float kk = 0.f, qk = 0.f;
            if (s <= a) {
                for (int c = 0; c < dk; c++) {
                    float d = expf(gam[a * dk + c] - gam[s * dk + c]) * kc[s * dk + c];
                    kk += kc[a * dk + c] * d;
                    qk += qc[a * dk + c] * d;
                }
            }
            akk[i] = s < a ? kk : 0.f;
            aqk[i] = qk;
        }
        __syncthreads();
        if (p < dv) {
            for (int i = 0; i < n; i++) {
                long long hv = ((long long)(c0 + i) * heads + head) * dv + p;
                float ui = v[hv];
                if (DELTA) {
                    float pred = 0.f;
                    for (int c = 0; c < dk; c++) pred += sr[c] * eg[i * dk + c] * kc[i * dk + c];
                    for (int s = 0; s < i; s++) pred += akk[i * n + s] * u[s];
                    ui = bt[i] * (ui - pred);
                }
                u[i] = ui;
                float y = 0.f;
                for (int c = 0; c < dk; c++) y += sr[c] * eg[i * dk + c] * qc[i * dk + c];
                for (int s = 0; s <= i; s++) y += aqk[i * n + s] * u[s];
                o[hv] = y;
            }
            for (int c = 0; c < dk; c++) {
                float x = sr[c] * eg[(n - 1) * dk + c];
                for (int s = 0; s < n; s++) x += u[s] * kc[s * dk + c] * ee[s * dk + c];
                sr[c] = x;
            }
        }
    }
    if (p < dv) {
        float* dst = state_at(state, page_elems, state_offset, write_slots[row], head, dv, dk) + (long long)p * dk;
        for (int c = 0; c < dk; c++) dst[c] = sr[c];
    }
}

extern "C" __global__ void __launch_bounds__(128)
gdn_chunk_prefill(float* state, long long page_elems, long long state_offset, const int* cu_seqlens,
                  const int* read_slot, const int* write_slots, const float* q, const float* k, const float* v,
                  const float* g, const float* beta, int gate_per_channel, float* o, int heads, int dk, int dv, int L) {
    chunked<true>(state, page_elems, state_offset, cu_seqlens, read_slot, write_slots, q, k, v, g, beta,
                  gate_per_channel, o, heads, dk, dv, L);
}

extern "C" __global__ void __launch_bounds__(128)
mamba2_ssd_scan(float* state, long long page_elems, long long state_offset, const int* cu_seqlens,
                const int* read_slot, const int* write_slots, const float* q, const float* k, const float* v,
                const float* g, const float* beta, int gate_per_channel, float* o, int heads, int dk, int dv, int L) {
    chunked<false>(state, page_elems, state_offset, cu_seqlens, read_slot, write_slots, q, k, v, g, beta,
                   gate_per_channel, o, heads, dk, dv, L);
}

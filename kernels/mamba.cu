// Mamba1 kernels for statesim's CUDA backend: causal conv1d (prefill and
// update) and the selective scan (prefill) / selective state update
// (decode), over vLLM's shared cache pages.
//
// A batch is described as vLLM's model runner describes it: rows with
// query_start_loc (token ranges), one cache index (state slot) per row and
// a has_initial_state flag. Each launch covers a list of rows (the decode
// prefix or the prefill rest), one grid row per batch row.
//
// Page layout (docs/numeric-model.md §3): page `slot` of a raw tensor
// starts at element slot × page_elems; the conv window comes first,
// win[k·d_inner + d] for k < d_conv − 1, oldest first; the SSM state
// h[d·d_state + n] follows at state_offset.
#include "common.cuh"

#define MAX_CONV 8    // d_conv at most
#define MAX_DSTATE 16 // d_state at most (Jamba: 16)

// One channel of one row through the causal conv1d: start from the cached
// window (or zeros), run the row's tokens, write the window back. The
// window address uses 64-bit indices (vLLM cast them to int64 too).
__device__ __forceinline__ void conv_row(float* xc, const float* xz, int xz_stride, const float* w,
                                         const float* b, float* cache, long long page_elems, int slot,
                                         bool init, int t0, int t1, int di, int K, int d) {
    float win[MAX_CONV];
    float* c = cache + (long long)slot * page_elems + d;
#pragma unroll
    for (int k = 0; k < MAX_CONV; k++)
        win[k] = (k < K - 1 && init) ? c[(long long)k * di] : 0.0f;
    float wk[MAX_CONV];
#pragma unroll
    for (int k = 0; k < MAX_CONV; k++) wk[k] = k < K ? w[d * K + k] : 0.0f;
    float bias = b[d];
    for (int t = t0; t < t1; t++) {
        float x = xz[(long long)t * xz_stride + d];
        float acc = bias;
#pragma unroll
        for (int k = 0; k < MAX_CONV; k++) {
            if (k < K - 1) acc += wk[k] * win[k];
            else if (k == K - 1) acc += wk[k] * x;
        }
        xc[(long long)t * di + d] = silu_f(acc);
#pragma unroll
        for (int k = 0; k < MAX_CONV - 1; k++)
            if (k < K - 2) win[k] = win[k + 1];
        if (K > 1) {
#pragma unroll
            for (int k = 0; k < MAX_CONV; k++)
                if (k == K - 2) win[k] = x;
        }
    }
#pragma unroll
    for (int k = 0; k < MAX_CONV; k++)
        if (k < K - 1) c[(long long)k * di] = win[k];
}

// causal_conv1d_fwd: prefill rows; the window starts from zeros unless the
// row has_initial_state. grid (ceil(di/blockDim), len(rows)).
extern "C" __global__ void causal_conv1d_fwd(float* xc, const float* xz, int xz_stride, const float* w,
                                             const float* b, float* cache, long long page_elems,
                                             const int* rows, const int* qsl, const int* cache_idx,
                                             const int* has_init, int di, int K) {
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    if (d >= di) return;
    int r = rows[blockIdx.y];
    conv_row(xc, xz, xz_stride, w, b, cache, page_elems, cache_idx[r], has_init[r] != 0, qsl[r], qsl[r + 1],
             di, K, d);
}

// causal_conv1d_update: decode rows; always reads the cached window.
extern "C" __global__ void causal_conv1d_update(float* xc, const float* xz, int xz_stride, const float* w,
                                                const float* b, float* cache, long long page_elems,
                                                const int* rows, const int* qsl, const int* cache_idx, int di,
                                                int K) {
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    if (d >= di) return;
    int r = rows[blockIdx.y];
    conv_row(xc, xz, xz_stride, w, b, cache, page_elems, cache_idx[r], true, qsl[r], qsl[r + 1], di, K, d);
}

// Selective scan over one row's tokens. Each channel's d_state values are
// split over G = N/4 consecutive threads, 4 each, held in registers; the
// per-channel inputs of G consecutive tokens are loaded one token per
// thread (softplus computed once) and passed round with shuffles, and the
// G partial sums of C·h meet by shuffles too. Few registers per thread, so
// the chip is full of independent rows and channels.
//
// The state address is formed as vLLM's selective_scan_fwd formed it,
// ssm_states + cache_index × batch_stride, with the product in index_t:
// uint32_t reproduces the wrap of bug B (PR #35275), uint64_t is the fix.
// grid (ceil(di·G/blockDim), len(rows)); blockDim a multiple of 32.
template <typename index_t>
__device__ __forceinline__ void scan_row(float* y, const float* xc, const float* dtp, const float* dbc,
                                         int dbc_stride, int R, const float* xz, int xz_stride, const float* A,
                                         const float* Dp, const float* dt_bias, float* states,
                                         long long stride, int slot, bool init, int t0, int t1, int di,
                                         int N) {
    int G = N / 4;
    long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int d = (int)(tid / G), j = (int)(tid % G);
    bool live = d < di;
    int lane0 = (threadIdx.x & 31) & ~(G - 1);
    index_t base = (index_t)slot * (index_t)stride;
    float* hp = states + (size_t)base + (size_t)d * N + j * 4;
    float h[4], a[4];
#pragma unroll
    for (int e = 0; e < 4; e++) {
        h[e] = (live && init) ? hp[e] : 0.0f;
        a[e] = live ? A[(long long)d * N + j * 4 + e] : 0.0f;
    }
    float bias = live ? dt_bias[d] : 0.0f, skip = live ? Dp[d] : 0.0f;
    for (int tc = t0; tc < t1; tc += G) {
        int tj = tc + j;
        float dtj = 0.0f, uj = 0.0f, zj = 0.0f;
        if (live && tj < t1) {
            dtj = softplus_f(dtp[(long long)tj * di + d] + bias);
            uj = xc[(long long)tj * di + d];
            zj = xz[(long long)tj * xz_stride + di + d];
        }
        for (int c = 0; c < G; c++) {
            int t = tc + c;
            if (t >= t1) break; // the same for the whole block: one row per block
            float dt = __shfl_sync(0xffffffffu, dtj, lane0 + c);
            float u = __shfl_sync(0xffffffffu, uj, lane0 + c);
            float z = __shfl_sync(0xffffffffu, zj, lane0 + c);
            float part = 0.0f;
            if (live) {
                const float* B = dbc + (long long)t * dbc_stride + R + j * 4;
                const float* C = B + N;
                float du = dt * u;
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    h[e] = expf(a[e] * dt) * h[e] + __ldg(B + e) * du;
                    part += __ldg(C + e) * h[e];
                }
            }
            for (int o = G >> 1; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
            if (live && j == 0) y[(long long)t * di + d] = (part + skip * u) * silu_f(z);
        }
    }
    if (live) {
#pragma unroll
        for (int e = 0; e < 4; e++) hp[e] = h[e];
    }
}

#define SCAN_ENTRY(NAME, INDEX_T)                                                                              \
    extern "C" __global__ void NAME(float* y, const float* xc, const float* dtp, const float* dbc,            \
                                    int dbc_stride, int R, const float* xz, int xz_stride, const float* A,    \
                                    const float* Dp, const float* dt_bias, float* states, long long stride,   \
                                    const int* rows, const int* qsl, const int* cache_idx,                    \
                                    const int* has_init, int di, int N) {                                     \
        int r = rows[blockIdx.y];                                                                             \
        scan_row<INDEX_T>(y, xc, dtp, dbc, dbc_stride, R, xz, xz_stride, A, Dp, dt_bias, states, stride,      \
                          cache_idx[r], has_init[r] != 0, qsl[r], qsl[r + 1], di, N);                         \
    }

// selective_scan_fwd_u32: the state index as vLLM had it before PR #35275.
SCAN_ENTRY(selective_scan_fwd_u32, uint32_t)
// selective_scan_fwd_u64: the fixed, 64-bit state index.
SCAN_ENTRY(selective_scan_fwd_u64, uint64_t)

// Selective state update (decode): one token per row from the cached
// state, written back in place. Memory-bound on the fp32 state (read +
// write): each thread owns V consecutive state elements of one channel
// (V = 4: 16-byte accesses, consecutive threads on consecutive addresses)
// and walks SSU_ROWS decode rows, loading the next row's state while it
// computes the current one, so a load is always in flight; the G = N/V
// threads of a channel sum C·h with shuffles. Rows come as their token
// index and state slot; the slot index is 64-bit.
// grid (ceil(di·G/blockDim), ceil(nrows/SSU_ROWS)); blockDim a multiple of
// 32; G a power of two.
#define SSU_ROWS 8

template <int V>
struct RowIn {
    float h[V];
    float dtr, u, z;
    int t;
    float* hp;
};

template <int V>
__device__ __forceinline__ void ssu_load(RowIn<V>& in, int r, const int* tok, const int* slot, const float* xc,
                                         const float* dtp, const float* xz, int xz_stride, float* states,
                                         long long stride, int di, int N, int d, int j) {
    in.t = tok[r];
    in.hp = states + (long long)slot[r] * stride + (long long)d * N + j * V;
    if constexpr (V == 4) {
        float4 v = *reinterpret_cast<const float4*>(in.hp);
        in.h[0] = v.x, in.h[1] = v.y, in.h[2] = v.z, in.h[3] = v.w;
    } else {
#pragma unroll
        for (int e = 0; e < V; e++) in.h[e] = in.hp[e];
    }
    in.dtr = dtp[(long long)in.t * di + d];
    in.u = xc[(long long)in.t * di + d];
    in.z = xz[(long long)in.t * xz_stride + di + d];
}

template <int V>
__device__ __forceinline__ void state_update(float* y, const float* xc, const float* dtp, const float* dbc,
                                             int dbc_stride, int R, const float* xz, int xz_stride,
                                             const float* A, const float* Dp, const float* dt_bias,
                                             float* states, long long stride, const int* tok, const int* slot,
                                             int nrows, int di, int N) {
    int G = N / V;
    long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int d = (int)(tid / G), j = (int)(tid % G);
    bool live = d < di;
    int r0 = blockIdx.y * SSU_ROWS, r1 = min(r0 + SSU_ROWS, nrows);
    float a[V];
#pragma unroll
    for (int e = 0; e < V; e++) a[e] = live ? A[(long long)d * N + j * V + e] : 0.0f;
    float bias = live ? dt_bias[d] : 0.0f, skip = live ? Dp[d] : 0.0f;
    RowIn<V> cur, nxt;
    if (live && r0 < r1) ssu_load<V>(cur, r0, tok, slot, xc, dtp, xz, xz_stride, states, stride, di, N, d, j);
    for (int r = r0; r < r1; r++) {
        if (live && r + 1 < r1) ssu_load<V>(nxt, r + 1, tok, slot, xc, dtp, xz, xz_stride, states, stride, di, N, d, j);
        float part = 0.0f;
        if (live) {
            float dt = softplus_f(cur.dtr + bias);
            float du = dt * cur.u;
            const float* B = dbc + (long long)cur.t * dbc_stride + R + j * V;
            const float* C = B + N;
#pragma unroll
            for (int e = 0; e < V; e++) {
                cur.h[e] = expf(a[e] * dt) * cur.h[e] + __ldg(B + e) * du;
                part += __ldg(C + e) * cur.h[e];
            }
            if constexpr (V == 4) {
                *reinterpret_cast<float4*>(cur.hp) = make_float4(cur.h[0], cur.h[1], cur.h[2], cur.h[3]);
            } else {
#pragma unroll
                for (int e = 0; e < V; e++) cur.hp[e] = cur.h[e];
            }
        }
        // Groups of G lanes never straddle a warp (G divides 32).
        for (int o = G >> 1; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
        if (live && j == 0) y[(long long)cur.t * di + d] = (part + skip * cur.u) * silu_f(cur.z);
        cur = nxt;
    }
}

#define SSU_ENTRY(NAME, V)                                                                                    \
    extern "C" __global__ void NAME(float* y, const float* xc, const float* dtp, const float* dbc,            \
                                    int dbc_stride, int R, const float* xz, int xz_stride, const float* A,    \
                                    const float* Dp, const float* dt_bias, float* states, long long stride,   \
                                    const int* tok, const int* slot, int nrows, int di, int N) {              \
        state_update<V>(y, xc, dtp, dbc, dbc_stride, R, xz, xz_stride, A, Dp, dt_bias, states, stride, tok,   \
                        slot, nrows, di, N);                                                                  \
    }

// selective_state_update_v4: 16-byte state accesses (d_state, stride and
// state offset multiples of 4); _v1 is the scalar fallback.
SSU_ENTRY(selective_state_update_v4, 4)
SSU_ENTRY(selective_state_update_v1, 1)

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
#define SCAN_CHUNK 8  // tokens whose inputs the scan loads ahead

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

// Selective scan over one row's tokens for channel d, state in registers.
// The state address is formed as vLLM's selective_scan_fwd formed it,
// ssm_states + cache_index × batch_stride, with the product in index_t:
// uint32_t reproduces the wrap of bug B (PR #35275), uint64_t is the fix.
template <typename index_t>
__device__ __forceinline__ void scan_row(float* y, const float* xc, const float* dtp, const float* dbc,
                                         int dbc_stride, int R, const float* xz, int xz_stride, const float* A,
                                         const float* Dp, const float* dt_bias, float* states,
                                         long long stride, int slot, bool init, int t0, int t1, int di,
                                         int N, int d) {
    index_t base = (index_t)slot * (index_t)stride;
    float* hp = states + (size_t)base + (size_t)d * N;
    float h[MAX_DSTATE], a[MAX_DSTATE];
#pragma unroll
    for (int n = 0; n < MAX_DSTATE; n++) {
        h[n] = (n < N && init) ? hp[n] : 0.0f;
        a[n] = n < N ? A[d * N + n] : 0.0f;
    }
    float bias = dt_bias[d], skip = Dp[d];
    // Tokens in chunks of SCAN_CHUNK: the chunk's per-channel inputs are
    // all loaded before the recurrence uses them, so the loads overlap
    // instead of each waiting on the previous token's arithmetic.
    for (int tc = t0; tc < t1; tc += SCAN_CHUNK) {
        float dtv[SCAN_CHUNK], uv[SCAN_CHUNK], zv[SCAN_CHUNK];
#pragma unroll
        for (int c = 0; c < SCAN_CHUNK; c++) {
            int t = tc + c;
            if (t < t1) {
                dtv[c] = dtp[(long long)t * di + d];
                uv[c] = xc[(long long)t * di + d];
                zv[c] = xz[(long long)t * xz_stride + di + d];
            }
        }
#pragma unroll
        for (int c = 0; c < SCAN_CHUNK; c++) {
            int t = tc + c;
            if (t >= t1) break;
            float dt = softplus_f(dtv[c] + bias);
            float u = uv[c];
            float du = dt * u;
            const float* B = dbc + (long long)t * dbc_stride + R;
            const float* C = B + N;
            float acc = 0.0f;
#pragma unroll
            for (int n = 0; n < MAX_DSTATE; n++) {
                if (n < N) {
                    h[n] = expf(a[n] * dt) * h[n] + __ldg(B + n) * du;
                    acc += __ldg(C + n) * h[n];
                }
            }
            acc += skip * u;
            y[(long long)t * di + d] = acc * silu_f(zv[c]);
        }
    }
#pragma unroll
    for (int n = 0; n < MAX_DSTATE; n++)
        if (n < N) hp[n] = h[n];
}

#define SCAN_ENTRY(NAME, INDEX_T)                                                                              \
    extern "C" __global__ void NAME(float* y, const float* xc, const float* dtp, const float* dbc,            \
                                    int dbc_stride, int R, const float* xz, int xz_stride, const float* A,    \
                                    const float* Dp, const float* dt_bias, float* states, long long stride,   \
                                    const int* rows, const int* qsl, const int* cache_idx,                    \
                                    const int* has_init, int di, int N) {                                     \
        int d = blockIdx.x * blockDim.x + threadIdx.x;                                                        \
        if (d >= di) return;                                                                                  \
        int r = rows[blockIdx.y];                                                                             \
        scan_row<INDEX_T>(y, xc, dtp, dbc, dbc_stride, R, xz, xz_stride, A, Dp, dt_bias, states, stride,      \
                          cache_idx[r], has_init[r] != 0, qsl[r], qsl[r + 1], di, N, d);                      \
    }

// selective_scan_fwd_u32: the state index as vLLM had it before PR #35275.
SCAN_ENTRY(selective_scan_fwd_u32, uint32_t)
// selective_scan_fwd_u64: the fixed, 64-bit state index.
SCAN_ENTRY(selective_scan_fwd_u64, uint64_t)

// Selective state update (decode): one token per row from the cached
// state, written back in place. Memory-bound on the fp32 state (read +
// write): each thread owns V consecutive state elements of one channel
// (V = 4: 16-byte accesses, consecutive threads on consecutive addresses)
// and walks rows_per_block decode rows (the host sizes the grid to one
// wave of blocks, see kernels.SSUGrid). To keep enough bytes in flight without
// spending registers, the state and inputs of the next SSU_STAGES − 1 rows
// are fetched by asynchronous copies (cp.async) into shared memory while
// the current row computes; each thread reads back only what it fetched,
// so no barrier is needed. The G = N/V threads of a channel sum C·h with
// shuffles. Rows come as their token index and state slot; the slot index
// is 64-bit.
// grid (ceil(di·G/128), ceil(nrows/rows_per_block)); blockDim exactly 128;
// G a power of two.
#ifndef SSU_STAGES
#define SSU_STAGES 4
#endif
#define SSU_THREADS 128

__device__ __forceinline__ void cp_async(void* smem, const void* gmem, int bytes) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    if (bytes == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most SSU_STAGES − 1 of this thread's groups are pending.
__device__ __forceinline__ void cp_async_wait_stages() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(SSU_STAGES - 1));
}

template <int V>
__device__ __forceinline__ void state_update(float* y, const float* xc, const float* dtp, const float* dbc,
                                             int dbc_stride, int R, const float* xz, int xz_stride,
                                             const float* A, const float* Dp, const float* dt_bias,
                                             float* states, long long stride, const int* tok, const int* slot,
                                             int nrows, int rows_per_block, int di, int N) {
    __shared__ __align__(16) float sh[SSU_STAGES][V][SSU_THREADS]; // [stage][element][thread]: no bank conflicts
    __shared__ __align__(16) float4 sh4[SSU_STAGES][SSU_THREADS];  // the V = 4 state
    __shared__ float sin[SSU_STAGES][3][SSU_THREADS];               // dt_raw, x, z
    int G = N / V, tx = threadIdx.x;
    long long tid = (long long)blockIdx.x * blockDim.x + tx;
    int d = (int)(tid / G), j = (int)(tid % G);
    bool live = d < di;
    int r0 = blockIdx.y * rows_per_block, r1 = min(r0 + rows_per_block, nrows);
    float a[V];
#pragma unroll
    for (int e = 0; e < V; e++) a[e] = live ? A[(long long)d * N + j * V + e] : 0.0f;
    float bias = live ? dt_bias[d] : 0.0f, skip = live ? Dp[d] : 0.0f;
    // fetch issues row r's copies into stage r % SSU_STAGES; every thread
    // commits one group per call, empty or not, so the counts line up.
    auto fetch = [&](int r) {
        if (live && r < r1) {
            int st = (r - r0) % SSU_STAGES, t = tok[r];
            const float* hp = states + (long long)slot[r] * stride + (long long)d * N + j * V;
            if constexpr (V == 4) {
                cp_async(&sh4[st][tx], hp, 16);
            } else {
#pragma unroll
                for (int e = 0; e < V; e++) cp_async(&sh[st][e][tx], hp + e, 4);
            }
            cp_async(&sin[st][0][tx], dtp + (long long)t * di + d, 4);
            cp_async(&sin[st][1][tx], xc + (long long)t * di + d, 4);
            cp_async(&sin[st][2][tx], xz + (long long)t * xz_stride + di + d, 4);
        }
        cp_async_commit();
    };
#pragma unroll
    for (int k = 0; k < SSU_STAGES - 1; k++) fetch(r0 + k);
    for (int r = r0; r < r1; r++) {
        fetch(r + SSU_STAGES - 1);
        cp_async_wait_stages();
        int st = (r - r0) % SSU_STAGES;
        float part = 0.0f, u = 0.0f, z = 0.0f;
        int t = 0;
        if (live) {
            float h[V];
            if constexpr (V == 4) {
                float4 v = sh4[st][tx];
                h[0] = v.x, h[1] = v.y, h[2] = v.z, h[3] = v.w;
            } else {
#pragma unroll
                for (int e = 0; e < V; e++) h[e] = sh[st][e][tx];
            }
            t = tok[r];
            u = sin[st][1][tx];
            z = sin[st][2][tx];
            float dt = softplus_f(sin[st][0][tx] + bias);
            float du = dt * u;
            const float* B = dbc + (long long)t * dbc_stride + R + j * V;
            const float* C = B + N;
#pragma unroll
            for (int e = 0; e < V; e++) {
                h[e] = expf(a[e] * dt) * h[e] + __ldg(B + e) * du;
                part += __ldg(C + e) * h[e];
            }
            float* hp = states + (long long)slot[r] * stride + (long long)d * N + j * V;
            if constexpr (V == 4) {
                *reinterpret_cast<float4*>(hp) = make_float4(h[0], h[1], h[2], h[3]);
            } else {
#pragma unroll
                for (int e = 0; e < V; e++) hp[e] = h[e];
            }
        }
        // Groups of G lanes never straddle a warp (G divides 32).
        for (int o = G >> 1; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
        if (live && j == 0) y[(long long)t * di + d] = (part + skip * u) * silu_f(z);
    }
}

#define SSU_ENTRY(NAME, V)                                                                                    \
    extern "C" __global__ void __launch_bounds__(SSU_THREADS)                                                 \
        NAME(float* y, const float* xc, const float* dtp, const float* dbc, int dbc_stride, int R,            \
             const float* xz, int xz_stride, const float* A, const float* Dp, const float* dt_bias,           \
             float* states, long long stride, const int* tok, const int* slot, int nrows, int rows_per_block,  \
             int di, int N) {                                                                                 \
        state_update<V>(y, xc, dtp, dbc, dbc_stride, R, xz, xz_stride, A, Dp, dt_bias, states, stride, tok,   \
                        slot, nrows, rows_per_block, di, N);                                                  \
    }

// selective_state_update_v4: 16-byte state accesses (d_state, stride and
// state offset multiples of 4); _v1 is the scalar fallback.
SSU_ENTRY(selective_state_update_v4, 4)
SSU_ENTRY(selective_state_update_v1, 1)

// selective_state_update_n16: the decode state update for d_state 16 (the
// Jamba shape), with the fewest memory instructions per byte. The v4/v1
// kernels above are bound by load/store issue, not by DRAM: every 16 bytes
// of state cost them over a dozen loads. Here one thread owns one whole
// channel (16 states in registers). A block's 128 channels of a row are one
// contiguous 8 KiB slab, fetched by coalesced 16-byte cp.async copies into
// shared memory (SSU16_STAGES − 1 rows ahead), read back per channel through an
// XOR swizzle that keeps the 16-byte reads free of bank conflicts, and
// written back the same way; B and C are staged once per row for the whole
// block. grid (ceil(di/128), ceil(nrows/rows_per_block)); blockDim exactly
// 128; the slot stride and state offset multiples of 4.
#define SLAB_CPC 4 // 16-byte chunks per channel (d_state 16)
#ifndef SSU16_STAGES
#define SSU16_STAGES 3 // rows in flight per block
#endif
#ifndef SSU16_MIN_BLOCKS
#define SSU16_MIN_BLOCKS 4 // resident blocks per multiprocessor the registers are capped for
#endif

__device__ __forceinline__ void cp_async_wait_n16() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(SSU16_STAGES - 1));
}

// slab_at is where chunk k of channel ch lives in a slab buffer.
__device__ __forceinline__ int slab_at(int ch, int k) { return ch * SLAB_CPC + (k ^ ((ch >> 1) & (SLAB_CPC - 1))); }

extern "C" __global__ void __launch_bounds__(SSU_THREADS, SSU16_MIN_BLOCKS)
    selective_state_update_n16(float* y, const float* xc, const float* dtp, const float* dbc, int dbc_stride, int R,
                               const float* xz, int xz_stride, const float* A, const float* Dp,
                               const float* dt_bias, float* states, long long stride, const int* tok,
                               const int* slot, int nrows, int rows_per_block, int di) {
    constexpr int NS = 16, CH = SSU_THREADS;
    __shared__ __align__(16) float4 stage[SSU16_STAGES][CH * SLAB_CPC];
    __shared__ __align__(16) float4 outb[CH * SLAB_CPC];
    __shared__ float sc[SSU16_STAGES][3][CH]; // dt_raw, x, z per channel
    __shared__ float bc[SSU16_STAGES][2 * NS]; // B then C of the row's token
    int tx = threadIdx.x, d0 = blockIdx.x * CH, d = d0 + tx;
    bool live = d < di;
    int nchunk = min(CH, di - d0) * SLAB_CPC;
    int r0 = blockIdx.y * rows_per_block, r1 = min(r0 + rows_per_block, nrows);
    float a[NS];
#pragma unroll
    for (int n = 0; n < NS; n++) a[n] = live ? A[(long long)d * NS + n] : 0.0f;
    float bias = live ? dt_bias[d] : 0.0f, skip = live ? Dp[d] : 0.0f;
    auto fetch = [&](int r) {
        if (r < r1) {
            int s = (r - r0) % SSU16_STAGES, t = tok[r];
            const float4* src = reinterpret_cast<const float4*>(states + (long long)slot[r] * stride + (long long)d0 * NS);
#pragma unroll
            for (int i = 0; i < SLAB_CPC; i++) {
                int c = tx + i * CH;
                if (c < nchunk) cp_async(&stage[s][slab_at(c / SLAB_CPC, c % SLAB_CPC)], src + c, 16);
            }
            if (live) {
                cp_async(&sc[s][0][tx], dtp + (long long)t * di + d, 4);
                cp_async(&sc[s][1][tx], xc + (long long)t * di + d, 4);
                cp_async(&sc[s][2][tx], xz + (long long)t * xz_stride + di + d, 4);
            }
            if (tx < 2 * NS) cp_async(&bc[s][tx], dbc + (long long)t * dbc_stride + R + tx, 4);
        }
        cp_async_commit();
    };
#pragma unroll
    for (int k = 0; k < SSU16_STAGES - 1; k++) fetch(r0 + k);
    for (int r = r0; r < r1; r++) {
        fetch(r + SSU16_STAGES - 1);
        cp_async_wait_n16();
        __syncthreads(); // every thread's copies of this row are in
        int s = (r - r0) % SSU16_STAGES;
        if (live) {
            float h[NS];
#pragma unroll
            for (int k = 0; k < SLAB_CPC; k++) {
                float4 v = stage[s][slab_at(tx, k)];
                h[4 * k] = v.x, h[4 * k + 1] = v.y, h[4 * k + 2] = v.z, h[4 * k + 3] = v.w;
            }
            float u = sc[s][1][tx], z = sc[s][2][tx];
            float dt = softplus_f(sc[s][0][tx] + bias);
            float du = dt * u, acc = 0.0f;
#pragma unroll
            for (int n = 0; n < NS; n++) {
                h[n] = expf(a[n] * dt) * h[n] + bc[s][n] * du;
                acc += bc[s][NS + n] * h[n];
            }
            y[(long long)tok[r] * di + d] = (acc + skip * u) * silu_f(z);
#pragma unroll
            for (int k = 0; k < SLAB_CPC; k++)
                outb[slab_at(tx, k)] = make_float4(h[4 * k], h[4 * k + 1], h[4 * k + 2], h[4 * k + 3]);
        }
        __syncthreads(); // the slab is complete
        float4* dst = reinterpret_cast<float4*>(states + (long long)slot[r] * stride + (long long)d0 * NS);
#pragma unroll
        for (int i = 0; i < SLAB_CPC; i++) {
            int c = tx + i * CH;
            if (c < nchunk) dst[c] = outb[slab_at(c / SLAB_CPC, c % SLAB_CPC)];
        }
    }
}

// ---- selective_state_update_b16: the n16 update with Hopper bulk copies ----
// The backend runs it for d_state 16 where the H200 sweep showed it faster
// than _n16 (kernels.SSU16Launch: from 2^21 decode channel-rows, e.g. batch
// 256 x d_inner 8192), _n16 elsewhere. cp.async.bulk and the mbarrier
// transaction counts are sm_90 PTX (ISA 8.0): no sm_90a needed.
// state_update_bulk: the n16 update with Hopper bulk copies.
// The same math as _n16 (one thread per channel, 16 states in registers,
// the same order of operations), but each row's slab of CHN channels
// (CHN × 64 contiguous bytes) moves with ONE bulk copy (cp.async.bulk, the
// 1-D form of the tensor copy engine) issued by one thread: global → shared,
// completing on an mbarrier, and shared → global after the update, written
// back in place. The per-channel inputs (dt, x, z) and the row's B and C go
// by 4-byte cp.async whose completion the same mbarrier tracks
// (cp.async.mbarrier.arrive.noinc), so one wait covers a row. Rows go
// through a ring of S stages: S − 2 rows are fetched ahead of the one being
// updated, and one stage is left to the store in flight, so the fetching
// thread never waits on the store it just issued. Threads read their
// channel's four 16-byte chunks in a lane-dependent order (chunk k ^ sw) so
// that the reads of a quarter warp hit distinct banks, and put them back in
// order with selects; the stores mirror this.
// grid (ceil(di/CHN), ceil(nrows/rows_per_block)); blockDim exactly CHN;
// the slot stride and state offset multiples of 4.
__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(unsigned long long* b, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned long long* b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(b)), "r"(bytes) : "memory");
}
// The mbarrier receives one arrival when this thread's earlier cp.async copies have landed.
__device__ __forceinline__ void cp_async_arrive_noinc(unsigned long long* b) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_u32(b)) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* b, unsigned parity) {
    unsigned ok = 0;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(ok)
                     : "r"(smem_u32(b)), "r"(parity)
                     : "memory");
    } while (!ok);
}
__device__ __forceinline__ void bulk_load(void* smem, const void* gmem, unsigned bytes, unsigned long long* b) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     smem_u32(smem)),
                 "l"(gmem), "r"(bytes), "r"(smem_u32(b))
                 : "memory");
}
__device__ __forceinline__ void bulk_store(void* gmem, const void* smem, unsigned bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(gmem), "r"(smem_u32(smem)),
                 "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Waits until at most N of this thread's bulk stores still read shared memory.
template <int N> __device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// xor_chunks reorders four chunks: position k takes the chunk at k ^ sw
// (its own inverse), with selects (selp) rather than a run-time register
// index or divergent branches.
__device__ __forceinline__ float sel_f(bool p, float a, float b) {
    float r;
    asm("{\n.reg .pred q;\nsetp.ne.u32 q, %1, 0;\nselp.f32 %0, %2, %3, q;\n}\n"
        : "=f"(r)
        : "r"((unsigned)p), "f"(a), "f"(b));
    return r;
}
__device__ __forceinline__ float4 sel_4(bool p, float4 a, float4 b) {
    return make_float4(sel_f(p, a.x, b.x), sel_f(p, a.y, b.y), sel_f(p, a.z, b.z), sel_f(p, a.w, b.w));
}
__device__ __forceinline__ void xor_chunks(float4& v0, float4& v1, float4& v2, float4& v3, int sw) {
    bool p1 = sw & 1, p2 = sw & 2;
    float4 t0 = sel_4(p1, v1, v0), t1 = sel_4(p1, v0, v1), t2 = sel_4(p1, v3, v2), t3 = sel_4(p1, v2, v3);
    v0 = sel_4(p2, t2, t0), v1 = sel_4(p2, t3, t1), v2 = sel_4(p2, t0, t2), v3 = sel_4(p2, t1, t3);
}

template <int CHN, int S>
__device__ __forceinline__ void state_update_bulk(float* y, const float* xc, const float* dtp, const float* dbc,
                                                  int dbc_stride, int R, const float* xz, int xz_stride,
                                                  const float* A, const float* Dp, const float* dt_bias, float* states,
                                                  long long stride, const int* tok, const int* slot, int nrows,
                                                  int rows_per_block, int di) {
    static_assert(S >= 2, "a stage for the row being updated and one for the store in flight");
    constexpr int NS = 16;
    __shared__ __align__(128) float4 slab[S][CHN * SLAB_CPC];
    __shared__ float sc[S][3][CHN]; // dt_raw, x, z per channel
    __shared__ float bc[S][2 * NS]; // B then C of the row's token
    __shared__ __align__(8) unsigned long long bar[S];
    int tx = threadIdx.x, d0 = blockIdx.x * CHN, d = d0 + tx;
    bool live = d < di;
    unsigned bytes = (unsigned)min(CHN, di - d0) * NS * 4;
    int r0 = blockIdx.y * rows_per_block, n = min(r0 + rows_per_block, nrows) - r0;
    if (tx == 0) {
#pragma unroll
        for (int s = 0; s < S; s++) mbar_init(&bar[s], CHN + 1); // CHN cp.async arrivals + the bulk copy's
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        fence_proxy_async();
    }
    float a[NS];
#pragma unroll
    for (int k = 0; k < NS; k++) a[k] = live ? A[(long long)d * NS + k] : 0.0f;
    float bias = live ? dt_bias[d] : 0.0f, skip = live ? Dp[d] : 0.0f;
    __syncthreads();
    // fetch: every thread calls it for row r0 + i, into stage i % S.
    auto fetch = [&](int i) {
        int s = i % S, r = r0 + i, t = tok[r];
        if (tx == 0) {
            mbar_arrive_expect_tx(&bar[s], bytes);
            bulk_load(&slab[s][0], states + (long long)slot[r] * stride + (long long)d0 * NS, bytes, &bar[s]);
        }
        if (live) {
            cp_async(&sc[s][0][tx], dtp + (long long)t * di + d, 4);
            cp_async(&sc[s][1][tx], xc + (long long)t * di + d, 4);
            cp_async(&sc[s][2][tx], xz + (long long)t * xz_stride + di + d, 4);
        }
        if (tx < 2 * NS) cp_async(&bc[s][tx], dbc + (long long)t * dbc_stride + R + tx, 4);
        cp_async_arrive_noinc(&bar[s]);
    };
    for (int i = 0; i < S - 2 && i < n; i++) fetch(i);
    int sw = (tx >> 1) & (SLAB_CPC - 1);
    for (int i = 0; i < n; i++) {
        // Row i + S − 2 goes into the stage of row i − 2, whose store was
        // issued two rows ago: the store of row i − 1 may still read.
        if (i + S - 2 < n) {
            if (tx == 0) bulk_wait_read<1>();
            fetch(i + S - 2);
        }
        int s = i % S, r = r0 + i;
        mbar_wait(&bar[s], (unsigned)(i / S) & 1u);
        if (live) {
            float4* sl = &slab[s][tx * SLAB_CPC];
            float4 v0 = sl[0 ^ sw], v1 = sl[1 ^ sw], v2 = sl[2 ^ sw], v3 = sl[3 ^ sw];
            xor_chunks(v0, v1, v2, v3, sw);
            float h[NS] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w,
                           v2.x, v2.y, v2.z, v2.w, v3.x, v3.y, v3.z, v3.w};
            float u = sc[s][1][tx], z = sc[s][2][tx];
            float dt = softplus_f(sc[s][0][tx] + bias);
            float du = dt * u, acc = 0.0f;
#pragma unroll
            for (int k = 0; k < NS; k++) {
                h[k] = expf(a[k] * dt) * h[k] + bc[s][k] * du;
                acc += bc[s][NS + k] * h[k];
            }
            y[(long long)tok[r] * di + d] = (acc + skip * u) * silu_f(z);
            v0 = make_float4(h[0], h[1], h[2], h[3]), v1 = make_float4(h[4], h[5], h[6], h[7]);
            v2 = make_float4(h[8], h[9], h[10], h[11]), v3 = make_float4(h[12], h[13], h[14], h[15]);
            xor_chunks(v0, v1, v2, v3, sw);
            sl[0 ^ sw] = v0, sl[1 ^ sw] = v1, sl[2 ^ sw] = v2, sl[3 ^ sw] = v3;
        }
        fence_proxy_async(); // this thread's slab writes, before the copy engine reads them
        __syncthreads();
        if (tx == 0) bulk_store(states + (long long)slot[r] * stride + (long long)d0 * NS, &slab[s][0], bytes);
    }
    if (tx == 0) bulk_wait_read<0>(); // the shared memory outlives the last store's read
}

#define SSU_BULK_CH 64         // channels (4 KiB of state) per block; blockDim exactly this
#define SSU_BULK_STAGES 4      // ring of row stages
#define SSU_BULK_MIN_BLOCKS 8  // resident blocks per multiprocessor the registers are capped for

// selective_state_update_b16: state_update_bulk with the sweep's best settings
// (docs/kernel-bench.md): 64 channels per block, 4 stages, 8 blocks per
// multiprocessor (the host caps rows per block at 4, kernels.SSUBulkMaxRows).
// Bitwise equal to _n16. grid (ceil(di/64), ceil(nrows/rows_per_block));
// blockDim exactly 64; the slot stride and state offset multiples of 4 (16-byte
// aligned bulk copies).
extern "C" __global__ void __launch_bounds__(SSU_BULK_CH, SSU_BULK_MIN_BLOCKS)
    selective_state_update_b16(float* y, const float* xc, const float* dtp, const float* dbc, int dbc_stride, int R,
                               const float* xz, int xz_stride, const float* A, const float* Dp,
                               const float* dt_bias, float* states, long long stride, const int* tok,
                               const int* slot, int nrows, int rows_per_block, int di) {
    state_update_bulk<SSU_BULK_CH, SSU_BULK_STAGES>(y, xc, dtp, dbc, dbc_stride, R, xz, xz_stride, A, Dp, dt_bias,
                                                    states, stride, tok, slot, nrows, rows_per_block, di);
}

// The bulk-copy variant of the Mamba1 decode state update (d_state 16),
// benchmarked by kernel_bench.cu beside _n16 (kernels/mamba.cu). It is not
// in the backend's PTX: on an H200 it ran 1–3% faster than _n16 at three
// of the four batch >= 256 shapes and level at batch 256 x d_inner 4096
// (docs/kernel-bench.md). Include after kernels/mamba.cu (it uses cp_async,
// SLAB_CPC and the math helpers from there).
#pragma once

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

// The non-Mamba kernels of statesim's CUDA backend: embedding, RMSNorm, a
// plain tiled matmul (no cuBLAS: the backend links libcuda only), residual
// add, vLLM's paged KV write (reshape_and_cache) and paged attention, and
// log-softmax over the vocabulary. float32 throughout, as the mock.
#include "common.cuh"

// embed_tokens: out[i] = embed[tokens[i]]. grid (n).
extern "C" __global__ void embed_tokens(float* out, const float* embed, const int* tokens, int H) {
    int i = blockIdx.x;
    const float* src = embed + (long long)tokens[i] * H;
    for (int k = threadIdx.x; k < H; k += blockDim.x) out[(long long)i * H + k] = src[k];
}

// rms_norm: out[i] = x[src] · rsqrt(mean(x[src]²) + eps) · gamma, where src
// is idx[i] when idx is given (gathering the rows that produce logits).
// grid (n), blockDim a multiple of 32.
extern "C" __global__ void rms_norm(float* out, const float* in, const float* gamma, const int* idx, int H,
                                    float eps) {
    __shared__ float red[32];
    int i = blockIdx.x;
    long long src = idx ? idx[i] : i;
    const float* x = in + src * H;
    float ss = 0.0f;
    for (int k = threadIdx.x; k < H; k += blockDim.x) ss += x[k] * x[k];
    ss = block_sum(ss, red);
    float inv = 1.0f / sqrtf(ss / (float)H + eps);
    for (int k = threadIdx.x; k < H; k += blockDim.x) out[(long long)i * H + k] = x[k] * inv * gamma[k];
}

#define TILE 16

// matmul_nt: y[i][o] = Σ_k x[i][k] · w[o][k] for row-major x (row stride
// ldx), w [out][in] and y (row stride ldy): a linear layer. 16×16 tiles
// through shared memory. grid (ceil(out/16), ceil(n/16)), block (16, 16).
extern "C" __global__ void matmul_nt(float* y, const float* x, const float* w, int n, int out, int in, int ldx,
                                     int ldy) {
    __shared__ float xs[TILE][TILE + 1];
    __shared__ float ws[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int i = blockIdx.y * TILE + ty, o = blockIdx.x * TILE + tx;
    int wo = blockIdx.x * TILE + ty; // the w row this thread loads
    float acc = 0.0f;
    for (int k0 = 0; k0 < in; k0 += TILE) {
        int k = k0 + tx;
        xs[ty][tx] = (i < n && k < in) ? x[(long long)i * ldx + k] : 0.0f;
        ws[ty][tx] = (wo < out && k < in) ? w[(long long)wo * in + k] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TILE; kk++) acc += xs[ty][kk] * ws[tx][kk];
        __syncthreads();
    }
    if (i < n && o < out) y[(long long)i * ldy + o] = acc;
}

// add_inplace: a += b over n elements (the residual stream).
extern "C" __global__ void add_inplace(float* a, const float* b, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += b[i];
}

// reshape_and_cache: write each token's K and V into its paged slot,
// slot_mapping[t] = block × block_size + offset, as vLLM's kernel. In a
// page, K is [block_size][kv_heads][head_dim] from element 0 and V the
// same from kv_elems. grid (n).
extern "C" __global__ void reshape_and_cache(float* cache, const float* k, const float* v,
                                             const long long* slot_mapping, int kvd, int block_size,
                                             long long page_elems, long long kv_elems) {
    int t = blockIdx.x;
    long long s = slot_mapping[t];
    long long dst = (s / block_size) * page_elems + (s % block_size) * kvd;
    for (int j = threadIdx.x; j < kvd; j += blockDim.x) {
        cache[dst + j] = k[(long long)t * kvd + j];
        cache[dst + kv_elems + j] = v[(long long)t * kvd + j];
    }
}

#define MAX_HD_PER_LANE 4 // head_dim at most 128

// paged_attention: causal attention of token t (batch row tok_row[t], at
// position tok_pos[t]) over positions [0, tok_pos[t]] read back through the
// row's block table, for one query head; one warp per (token, head), the
// head dimension split over lanes, softmax computed online. No positional
// rotation, as the mock. grid (n, heads), block 32.
extern "C" __global__ void paged_attention(float* out, const float* q, const float* cache,
                                           const int* block_tables, int max_blocks, const int* tok_row,
                                           const int* tok_pos, int nh, int nkv, int hd, int block_size,
                                           long long page_elems, long long kv_elems, float scale) {
    int t = blockIdx.x, hq = blockIdx.y, lane = threadIdx.x;
    int g = hq / (nh / nkv);
    const int* bt = block_tables + (long long)tok_row[t] * max_blocks;
    const float* qp = q + ((long long)t * nh + hq) * hd;
    float qv[MAX_HD_PER_LANE], acc[MAX_HD_PER_LANE];
#pragma unroll
    for (int e = 0; e < MAX_HD_PER_LANE; e++) {
        int k = lane + 32 * e;
        qv[e] = k < hd ? qp[k] : 0.0f;
        acc[e] = 0.0f;
    }
    float m = -INFINITY, sum = 0.0f;
    int p = tok_pos[t];
    for (int s = 0; s <= p; s++) {
        long long kb = (long long)bt[s / block_size] * page_elems + ((long long)(s % block_size) * nkv + g) * hd;
        float part = 0.0f;
#pragma unroll
        for (int e = 0; e < MAX_HD_PER_LANE; e++) {
            int k = lane + 32 * e;
            if (k < hd) part += qv[e] * cache[kb + k];
        }
        float sc = warp_sum(part) * scale;
        float mn = fmaxf(m, sc);
        float corr = expf(m - mn), pe = expf(sc - mn);
        sum = sum * corr + pe;
#pragma unroll
        for (int e = 0; e < MAX_HD_PER_LANE; e++) {
            int k = lane + 32 * e;
            if (k < hd) acc[e] = acc[e] * corr + pe * cache[kb + kv_elems + k];
        }
        m = mn;
    }
    float* op = out + ((long long)t * nh + hq) * hd;
#pragma unroll
    for (int e = 0; e < MAX_HD_PER_LANE; e++) {
        int k = lane + 32 * e;
        if (k < hd) op[k] = acc[e] / sum;
    }
}

// log_softmax: out[i] = logits[i] − logsumexp(logits[i]) over V entries.
// grid (n), blockDim a multiple of 32.
extern "C" __global__ void log_softmax(float* out, const float* logits, int V) {
    __shared__ float red[32];
    const float* l = logits + (long long)blockIdx.x * V;
    float mx = -INFINITY;
    for (int k = threadIdx.x; k < V; k += blockDim.x) mx = fmaxf(mx, l[k]);
    mx = block_max(mx, red);
    float s = 0.0f;
    for (int k = threadIdx.x; k < V; k += blockDim.x) s += expf(l[k] - mx);
    s = block_sum(s, red);
    float lse = mx + logf(s);
    for (int k = threadIdx.x; k < V; k += blockDim.x) out[(long long)blockIdx.x * V + k] = l[k] - lse;
}

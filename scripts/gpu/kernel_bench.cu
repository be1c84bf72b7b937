// Standalone harness for statesim's Mamba kernels, compiled by nvcc on the
// GPU machine from the very sources the Go backend loads as PTX.
//
//   kernel_bench check        correctness against a float64 CPU reference, and
//                             _b16 bitwise against _n16
//   kernel_bench bench JSON   timings, written as JSON
//   kernel_bench sweep        the 16-byte kernels over rows per block
//   kernel_bench bulk         the bulk-copy update (state_update_bulk, kernels/mamba.cu)
//                             over its configurations, checked bitwise against _n16
//
// Every CUDA call is checked; inputs are random, never zeros; outputs are
// poisoned with NaN before each checked launch.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../kernels/layers.cu"
#include "../../kernels/mamba.cu"

// The grid policy of kernels.SSUGrid (kernels/kernels.go), repeated here.
#ifndef SSU_BLOCKS_PER_SM
#define SSU_BLOCKS_PER_SM 8
#endif
#ifndef SSU16_BLOCKS_PER_SM
#define SSU16_BLOCKS_PER_SM 4
#endif
#define SSU_WAVES 4
#define SSU_MAX_ROWS 8
// _b16 (kernels/mamba.cu: SSU_BULK_CH channels per block, SSU_BULK_STAGES
// stages, SSU_BULK_MIN_BLOCKS resident blocks per multiprocessor) at most
// SSU_BULK_MAX_ROWS rows per block (kernels.SSUBulk*). Which of _n16 and
// _b16 the backend runs at a size is kernels.SSU16Launch's choice, repeated
// in bench_report.py.
#define SSU_BULK_BLOCKS_PER_SM SSU_BULK_MIN_BLOCKS
#define SSU_BULK_MAX_ROWS 4

// ssu_bulk_k: state_update_bulk at other settings, for the sweep (kernel_bench bulk).
template <int CHN, int S, int MINB>
__global__ void __launch_bounds__(CHN, MINB)
    ssu_bulk_k(float* y, const float* xc, const float* dtp, const float* dbc, int dbc_stride, int R, const float* xz,
               int xz_stride, const float* A, const float* Dp, const float* dt_bias, float* states, long long stride,
               const int* tok, const int* slot, int nrows, int rows_per_block, int di) {
    state_update_bulk<CHN, S>(y, xc, dtp, dbc, dbc_stride, R, xz, xz_stride, A, Dp, dt_bias, states, stride, tok, slot,
                              nrows, rows_per_block, di);
}

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                            \
        }                                                                                       \
    } while (0)
#define CKL() CK(cudaGetLastError())

// splitmix64: a fixed, portable stream of random inputs.
static unsigned long long rng_state = 20261129;
static unsigned long long next_u64() {
    unsigned long long z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static std::vector<float> randv(size_t n, float lo, float hi) {
    std::vector<float> v(n);
    for (auto& x : v) x = lo + (hi - lo) * (float)((next_u64() >> 40) * (1.0 / (1 << 24)));
    return v;
}
template <typename T> static T* dev(const std::vector<T>& h) {
    T* p;
    CK(cudaMalloc(&p, h.size() * sizeof(T)));
    CK(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return p;
}
template <typename T> static std::vector<T> host(const T* p, size_t n) {
    std::vector<T> h(n);
    CK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

// One Mamba batch: rows of tokens with their inputs, on host and device.
struct Batch {
    int rows, di, N, R, T;
    std::vector<int> qsl, slot, init, rowids, tok;
    std::vector<float> xc, dtp, dbc, xz, A, D, bias;
    long long stride, offset;
    int *d_qsl, *d_slot, *d_init, *d_rows, *d_tok;
    float *d_xc, *d_dtp, *d_dbc, *d_xz, *d_A, *d_D, *d_bias, *d_y;
};

static Batch make_batch(int rows, int L, int di, int N, int nslots, long long stride, long long offset) {
    Batch b{rows, di, N, 4, rows * L};
    b.stride = stride, b.offset = offset;
    std::vector<int> perm(nslots - 1);
    for (int i = 0; i < nslots - 1; i++) perm[i] = i + 1; // slot 0 is the null block
    for (int i = (int)perm.size() - 1; i > 0; i--) std::swap(perm[i], perm[next_u64() % (i + 1)]);
    for (int r = 0; r <= rows; r++) b.qsl.push_back(r * L);
    for (int r = 0; r < rows; r++)
        b.slot.push_back(perm[r]), b.init.push_back(r % 3 != 0), b.rowids.push_back(r), b.tok.push_back(r * L);
    b.xc = randv((size_t)b.T * di, -1, 1);
    b.dtp = randv((size_t)b.T * di, -3, 0);
    b.dbc = randv((size_t)b.T * (b.R + 2 * N), -1, 1);
    b.xz = randv((size_t)b.T * 2 * di, -2, 2);
    b.A.resize((size_t)di * N);
    for (int d = 0; d < di; d++)
        for (int n = 0; n < N; n++) b.A[(size_t)d * N + n] = -(float)(n + 1);
    b.D = randv(di, 0, 0.2f);
    b.bias = randv(di, -4, -2);
    b.d_qsl = dev(b.qsl), b.d_slot = dev(b.slot), b.d_init = dev(b.init), b.d_rows = dev(b.rowids), b.d_tok = dev(b.tok);
    b.d_xc = dev(b.xc), b.d_dtp = dev(b.dtp), b.d_dbc = dev(b.dbc), b.d_xz = dev(b.xz);
    b.d_A = dev(b.A), b.d_D = dev(b.D), b.d_bias = dev(b.bias);
    CK(cudaMalloc(&b.d_y, (size_t)b.T * di * sizeof(float)));
    return b;
}

static void launch_scan(Batch& b, float* states, bool u32) {
    dim3 g((b.di + 127) / 128, b.rows);
    auto f = u32 ? selective_scan_fwd_u32 : selective_scan_fwd_u64;
    f<<<g, 128>>>(b.d_y, b.d_xc, b.d_dtp, b.d_dbc, b.R + 2 * b.N, b.R, b.d_xz, 2 * b.di, b.d_A, b.d_D, b.d_bias,
                  states + b.offset, b.stride, b.d_rows, b.d_qsl, b.d_slot, b.d_init, b.di, b.N);
    CKL();
}

// launch_ssu runs a decode state update: V = 16 the slab kernel for d_state
// 16, V = 64 its bulk-copy variant _b16, else the V-wide kernel. The grid is
// sized as kernels.SSUGrid sizes it (b16: with its own blocks per
// multiprocessor and row cap) unless rpb_override is given.
static void launch_ssu(Batch& b, float* states, int V, int rpb_override = 0) {
    static int sms = 0;
    if (!sms) CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    int G = V >= 16 ? 1 : b.N / V, ch = V == 64 ? SSU_BULK_CH : 128;
    int bx = (int)(((long long)b.di * G + ch - 1) / ch);
    int per_sm = V == 64 ? SSU_BULK_BLOCKS_PER_SM : V == 16 ? SSU16_BLOCKS_PER_SM : SSU_BLOCKS_PER_SM;
    int max_rows = V == 64 ? SSU_BULK_MAX_ROWS : SSU_MAX_ROWS;
    long long slots = std::max(1, sms * per_sm * SSU_WAVES);
    int rpb = (int)std::min<long long>(max_rows, std::max<long long>(1, ((long long)b.rows * bx + slots - 1) / slots));
    if (rpb_override > 0) rpb = rpb_override;
    dim3 g(bx, (b.rows + rpb - 1) / rpb);
    if (V == 64) {
        selective_state_update_b16<<<g, SSU_BULK_CH>>>(b.d_y, b.d_xc, b.d_dtp, b.d_dbc, b.R + 2 * b.N, b.R, b.d_xz,
                                                       2 * b.di, b.d_A, b.d_D, b.d_bias, states + b.offset, b.stride,
                                                       b.d_tok, b.d_slot, b.rows, rpb, b.di);
    } else if (V == 16) {
        selective_state_update_n16<<<g, 128>>>(b.d_y, b.d_xc, b.d_dtp, b.d_dbc, b.R + 2 * b.N, b.R, b.d_xz, 2 * b.di,
                                               b.d_A, b.d_D, b.d_bias, states + b.offset, b.stride, b.d_tok,
                                               b.d_slot, b.rows, rpb, b.di);
    } else {
        auto f = V == 4 ? selective_state_update_v4 : selective_state_update_v1;
        f<<<g, 128>>>(b.d_y, b.d_xc, b.d_dtp, b.d_dbc, b.R + 2 * b.N, b.R, b.d_xz, 2 * b.di, b.d_A, b.d_D, b.d_bias,
                      states + b.offset, b.stride, b.d_tok, b.d_slot, b.rows, rpb, b.di, b.N);
    }
    CKL();
}

// cpu_rows runs the Mamba1 recurrence in float64 over every row; decode
// treats each row's state as initial.
static void cpu_rows(const Batch& b, std::vector<float>& st, std::vector<double>& y, bool decode) {
    y.assign((size_t)b.T * b.di, 0);
    for (int r = 0; r < b.rows; r++) {
        float* h = st.data() + b.offset + (size_t)b.slot[r] * b.stride;
        for (int d = 0; d < b.di; d++) {
            std::vector<double> hd(b.N);
            for (int n = 0; n < b.N; n++) hd[n] = (decode || b.init[r]) ? h[(size_t)d * b.N + n] : 0;
            for (int t = b.qsl[r]; t < b.qsl[r + 1]; t++) {
                double x = b.dtp[(size_t)t * b.di + d] + b.bias[d];
                double dt = x > 20 ? x : std::log1p(std::exp(x));
                double u = b.xc[(size_t)t * b.di + d];
                const float* B = &b.dbc[(size_t)t * (b.R + 2 * b.N) + b.R];
                double acc = 0;
                for (int n = 0; n < b.N; n++) {
                    hd[n] = std::exp(b.A[(size_t)d * b.N + n] * dt) * hd[n] + B[n] * dt * u;
                    acc += B[b.N + n] * hd[n];
                }
                double z = b.xz[(size_t)t * 2 * b.di + b.di + d];
                y[(size_t)t * b.di + d] = (acc + b.D[d] * u) * z / (1 + std::exp(-z));
            }
            for (int n = 0; n < b.N; n++) h[(size_t)d * b.N + n] = (float)hd[n];
        }
    }
}

static double relerr(const std::vector<float>& got, const std::vector<double>& want) {
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); i++) {
        if (std::isnan(got[i])) return INFINITY;
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    return std::sqrt(num / den);
}

static int failures = 0;
static void report(const char* what, double err, double tol) {
    bool ok = err <= tol;
    failures += !ok;
    printf("%-48s rel err %.3g (tol %.0e) %s\n", what, err, tol, ok ? "ok" : "FAIL");
}

// check_mamba compares the scan (both index widths, below the wrap) and
// both state-update variants with the CPU reference.
static void check_mamba() {
    int di = 512, N = 16, rows = 12, L = 37, nslots = 40;
    long long stride = (long long)di * (N + 3) + 64, offset = 3LL * di;
    for (int variant = 0; variant < 6; variant++) {
        bool decode = variant >= 2;
        Batch b = make_batch(rows, decode ? 1 : L, di, N, nslots, stride, offset);
        std::vector<float> st = randv((size_t)nslots * stride, -1, 1);
        float* d_st = dev(st);
        CK(cudaMemset(b.d_y, 0xff, (size_t)b.T * di * sizeof(float))); // NaN poison
        if (decode) launch_ssu(b, d_st, variant == 2 ? 4 : variant == 3 ? 1 : variant == 4 ? 16 : 64);
        else launch_scan(b, d_st, variant == 0);
        CK(cudaDeviceSynchronize());
        std::vector<double> y;
        cpu_rows(b, st, y, decode);
        std::vector<double> stw(st.begin(), st.end());
        const char* names[] = {"selective_scan_fwd_u32 output", "selective_scan_fwd_u64 output",
                               "selective_state_update_v4 output", "selective_state_update_v1 output",
                               "selective_state_update_n16 output", "selective_state_update_b16 output"};
        report(names[variant], relerr(host(b.d_y, (size_t)b.T * di), y), 1e-5);
        report("  ... state after", relerr(host(d_st, st.size()), stw), 1e-5);
        CK(cudaFree(d_st));
    }
    // Chunked prefill then decodes equals one prefill: the state carries.
    int Lt = 24, L1 = 16;
    Batch whole = make_batch(4, Lt, di, N, 8, stride, offset);
    for (auto& i : whole.init) i = 0;
    CK(cudaMemcpy(whole.d_init, whole.init.data(), 4 * sizeof(int), cudaMemcpyHostToDevice));
    std::vector<float> st = randv((size_t)8 * stride, -1, 1);
    float *s1 = dev(st), *s2 = dev(st);
    launch_scan(whole, s1, false);
    std::vector<float> y1 = host(whole.d_y, (size_t)whole.T * di);
    // The same rows as a prefill of L1 tokens, then token by token.
    // A table of 8 rows, row 2r = [r·Lt, r·Lt + L1): launch over the even rows.
    std::vector<int> qtab;
    for (int r = 0; r < 4; r++) qtab.push_back(r * Lt), qtab.push_back(r * Lt + L1);
    qtab.push_back(4 * Lt);
    std::vector<int> slot8, init8, even = {0, 2, 4, 6};
    for (int r = 0; r < 4; r++) slot8.push_back(whole.slot[r]), slot8.push_back(whole.slot[r]);
    for (int r = 0; r < 4; r++) init8.push_back(0), init8.push_back(1);
    int *d_q = dev(qtab), *d_s = dev(slot8), *d_i = dev(init8), *d_even = dev(even);
    CK(cudaMemset(whole.d_y, 0xff, (size_t)whole.T * di * sizeof(float)));
    selective_scan_fwd_u64<<<dim3(di / 128, 4), 128>>>(whole.d_y, whole.d_xc, whole.d_dtp, whole.d_dbc, whole.R + 2 * N,
                                                       whole.R, whole.d_xz, 2 * di, whole.d_A, whole.d_D, whole.d_bias,
                                                       s2 + offset, stride, d_even, d_q, d_s, d_i, di, N);
    CKL();
    // Decode the remaining tokens one at a time: a row table of single tokens.
    for (int k = L1; k < Lt; k++) {
        std::vector<int> tk, ss;
        for (int r = 0; r < 4; r++) tk.push_back(r * Lt + k), ss.push_back(whole.slot[r]);
        int *dq = dev(tk), *ds = dev(ss), *dv = dev(tk);
        selective_state_update_v4<<<dim3(di * 4 / 128, 1), 128>>>(whole.d_y, whole.d_xc, whole.d_dtp, whole.d_dbc,
                                                                  whole.R + 2 * N, whole.R, whole.d_xz, 2 * di, whole.d_A,
                                                                  whole.d_D, whole.d_bias, s2 + offset, stride, dq, ds, 4,
                                                                  4, di, N);
        CKL();
        CK(cudaDeviceSynchronize());
        cudaFree(dq), cudaFree(ds), cudaFree(dv);
    }
    std::vector<float> y2 = host(whole.d_y, (size_t)whole.T * di);
    std::vector<double> y1d(y1.begin(), y1.end());
    report("prefill 16 + 8 decodes == prefill 24 (y)", relerr(y2, y1d), 1e-5);
    std::vector<float> h1 = host(s1, st.size());
    std::vector<double> h1d(h1.begin(), h1.end());
    report("  ... final state", relerr(host(s2, st.size()), h1d), 1e-5);
}

static void check_matmul() {
    int n = 70, out = 133, in = 91;
    auto x = randv((size_t)n * in, -1, 1), w = randv((size_t)out * in, -1, 1);
    float *dx = dev(x), *dw = dev(w), *dy;
    CK(cudaMalloc(&dy, (size_t)n * out * 4));
    CK(cudaMemset(dy, 0xff, (size_t)n * out * 4));
    matmul_nt<<<dim3((out + 15) / 16, (n + 15) / 16), dim3(16, 16)>>>(dy, dx, dw, n, out, in, in, out);
    CKL();
    std::vector<double> want((size_t)n * out);
    for (int i = 0; i < n; i++)
        for (int o = 0; o < out; o++) {
            double s = 0;
            for (int k = 0; k < in; k++) s += (double)x[(size_t)i * in + k] * w[(size_t)o * in + k];
            want[(size_t)i * out + o] = s;
        }
    report("matmul_nt", relerr(host(dy, (size_t)n * out), want), 1e-5);
}

// ---- benchmark ----

// A second ceiling for in-place kernels: read and rewrite a buffer with
// 16-byte accesses (the state update's access pattern without its math).
__global__ void inplace_stream(float4* p, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float4 v = p[i];
        p[i] = make_float4(v.x * 0.5f + 1, v.y * 0.5f + 1, v.z * 0.5f + 1, v.w * 0.5f + 1);
    }
}

__global__ void empty_k() {}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// time_b2b_ms is the time per launch of inner back-to-back launches (the
// steady state of many decode steps), median over reps.
template <typename F> static float time_b2b_ms(F f, int reps, int inner) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) f();
    CK(cudaDeviceSynchronize());
    std::vector<float> ts;
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(a));
        for (int k = 0; k < inner; k++) f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        ts.push_back(ms / inner);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return median(ts);
}

// time_ms is the time of one launch on its own, median over reps.
template <typename F> static float time_ms(F f, int reps) { return time_b2b_ms(f, reps, 1); }

static void bench(const char* path) {
    FILE* js = fopen(path, "w");
    if (!js) { perror(path); exit(2); }
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    // Device-to-device copy: bytes read + bytes written.
    size_t cb = 4ull << 30;
    void *ca, *cb2;
    CK(cudaMalloc(&ca, cb));
    CK(cudaMalloc(&cb2, cb));
    CK(cudaMemset(ca, 1, cb));
    float cms = time_ms([&] { CK(cudaMemcpy(cb2, ca, cb, cudaMemcpyDeviceToDevice)); }, 20);
    double copy_gbs = 2.0 * cb / (cms * 1e-3) / 1e9;
    float ims = time_ms([&] { inplace_stream<<<p.multiProcessorCount * 16, 128>>>((float4*)ca, (long long)(cb / 16)); }, 20);
    CKL();
    double inplace_gbs = 2.0 * cb / (ims * 1e-3) / 1e9;
    CK(cudaFree(ca));
    CK(cudaFree(cb2));
    // What one launch costs by itself, timed the same way (events around it).
    float ems = time_ms([&] { empty_k<<<1, 32>>>(); }, 50);
    CKL();
    printf("device %s, %d SMs; device-to-device copy %.0f GB/s, in-place 16-byte stream %.0f GB/s (read + write); "
           "empty launch %.2f us\n",
           p.name, p.multiProcessorCount, copy_gbs, inplace_gbs, ems * 1e3);
    fprintf(js, "{\"device\": \"%s\", \"sms\": %d, \"copy_gbs\": %.1f, \"inplace_gbs\": %.1f, \"empty_launch_us\": %.2f, \"decode\": [",
            p.name, p.multiProcessorCount, copy_gbs, inplace_gbs, ems * 1e3);
    int N = 16;
    const char* sep = "";
    printf("\nselective_state_update (decode), d_state %d, fp32 state, slots scattered over a pool twice the batch;\n"
           "kernel 64 = b16 (bulk-copy variant), 16 = _n16, 4 = _v4, 1 = _v1\n", N);
    printf("%6s %7s %4s %10s %8s %8s %8s %8s %10s\n", "batch", "d_inner", "kernel", "time_us", "GB/s", "of_copy",
           "b2b_GB/s", "of_copy", "copy_same");
    void *sa, *sb;
    size_t smax = 1ull << 30;
    CK(cudaMalloc(&sa, smax));
    CK(cudaMalloc(&sb, smax));
    CK(cudaMemset(sa, 1, smax));
    std::string ceil_js;
    for (int di : {4096, 8192})
        for (int batch : {64, 256, 1024}) {
            // Ceilings at this size: a device-to-device copy and an in-place
            // 16-byte read-modify-write stream moving the same bytes (half
            // read, half written), per launch and back to back.
            double cbytes = (double)batch * di * (2.0 * N * 4 + 4 * 4) + (double)batch * 2 * N * 4;
            size_t half = std::min<size_t>(smax, (size_t)(cbytes / 2) & ~(size_t)255);
            auto copy1 = [&] { CK(cudaMemcpyAsync(sb, sa, half, cudaMemcpyDeviceToDevice)); };
            auto inpl1 = [&] { inplace_stream<<<p.multiProcessorCount * 16, 128>>>((float4*)sa, (long long)(half / 16)); };
            float c1 = time_ms(copy1, 50), c20 = time_b2b_ms(copy1, 20, 20);
            float i1 = time_ms(inpl1, 50), i20 = time_b2b_ms(inpl1, 20, 20);
            CKL();
            auto g = [&](float ms) { return 2.0 * half / (ms * 1e-3) / 1e9; };
            printf("%6d %7d same-size copy %.0f GB/s per launch, %.0f back to back; in-place stream %.0f, %.0f\n", batch, di,
                   g(c1), g(c20), g(i1), g(i20));
            char cj[256];
            snprintf(cj, sizeof cj,
                     "%s{\"batch\": %d, \"d_inner\": %d, \"copy_gbs\": %.1f, \"copy_gbs_b2b\": %.1f, \"inplace_gbs\": %.1f, \"inplace_gbs_b2b\": %.1f}",
                     ceil_js.empty() ? "" : ", ", batch, di, g(c1), g(c20), g(i1), g(i20));
            ceil_js += cj;
            double copy_same = g(c20);
            for (int V : {64, 16, 4, 1}) {
                long long stride = (long long)di * (N + 3), offset = 3LL * di;
                Batch b = make_batch(batch, 1, di, N, 2 * batch + 1, stride, offset);
                float* st;
                size_t sn = (size_t)(2 * batch + 1) * stride;
                CK(cudaMalloc(&st, sn * 4));
                std::vector<float> init = randv(1 << 20, -1, 1);
                for (size_t o = 0; o < sn; o += init.size())
                    CK(cudaMemcpy(st + o, init.data(), std::min(init.size(), sn - o) * 4, cudaMemcpyHostToDevice));
                float ms = time_ms([&] { launch_ssu(b, st, V); }, 50);
                float bms = time_b2b_ms([&] { launch_ssu(b, st, V); }, 20, 20);
                // Counted bytes: the state read and written, plus x, dt, z in and y out.
                double bytes = (double)batch * di * (2.0 * N * 4 + 4 * 4) + (double)batch * 2 * N * 4;
                double gbs = bytes / (ms * 1e-3) / 1e9, bgbs = bytes / (bms * 1e-3) / 1e9;
                double cgbs = copy_same;
                printf("%6d %7d %4d %10.1f %8.0f %7.0f%% %8.0f %7.0f%% %10.0f\n", batch, di, V, ms * 1e3, gbs,
                       100 * gbs / copy_gbs, bgbs, 100 * bgbs / copy_gbs, cgbs);
                fprintf(js, "%s{\"batch\": %d, \"d_inner\": %d, \"d_state\": %d, \"vec\": %d, \"time_us\": %.2f, \"bytes\": %.0f, \"gbs\": %.1f, \"time_us_b2b\": %.2f, \"gbs_b2b\": %.1f, \"copy_same_gbs\": %.1f}",
                        sep, batch, di, N, V, ms * 1e3, bytes, gbs, bms * 1e3, bgbs, cgbs);
                sep = ", ";
                CK(cudaFree(st));
            }
        }
    CK(cudaFree(sa));
    CK(cudaFree(sb));
    fprintf(js, "], \"ceilings\": [%s], \"prefill\": [", ceil_js.c_str());
    sep = "";
    printf("\nselective_scan_fwd (prefill), d_state %d, 64-bit index\n", N);
    printf("%6s %6s %7s %10s %10s %8s\n", "rows", "tokens", "d_inner", "time_us", "GB/s", "of_copy");
    struct { int rows, L, di; } cfgs[] = {{1024, 16, 4096}, {256, 64, 8192}, {64, 512, 8192}, {16, 2048, 4096}};
    for (auto c : cfgs) {
        long long stride = (long long)c.di * (N + 3), offset = 3LL * c.di;
        Batch b = make_batch(c.rows, c.L, c.di, N, 2 * c.rows + 1, stride, offset);
        float* st;
        size_t sn = (size_t)(2 * c.rows + 1) * stride;
        CK(cudaMalloc(&st, sn * 4));
        CK(cudaMemset(st, 0, sn * 4));
        float ms = time_ms([&] { launch_scan(b, st, false); }, 20);
        // Counted bytes: per token u, dt, z in and y out per channel, B and
        // C once; per row the state read and written.
        double bytes = (double)b.T * c.di * 16.0 + (double)b.T * 2 * N * 4 + (double)c.rows * c.di * N * 8.0;
        double gbs = bytes / (ms * 1e-3) / 1e9;
        printf("%6d %6d %7d %10.1f %10.0f %7.0f%%\n", c.rows, c.L, c.di, ms * 1e3, gbs, 100 * gbs / copy_gbs);
        fprintf(js, "%s{\"rows\": %d, \"tokens_per_row\": %d, \"d_inner\": %d, \"d_state\": %d, \"time_us\": %.2f, \"bytes\": %.0f, \"gbs\": %.1f}",
                sep, c.rows, c.L, c.di, N, ms * 1e3, bytes, gbs);
        sep = ", ";
        CK(cudaFree(st));
    }
    fprintf(js, "]}\n");
    fclose(js);
}

// sweep times the 16-byte state update for several rows per block.
static void sweep() {
    int N = 16;
    printf("SSU_STAGES %d\n%6s %7s %3s", SSU_STAGES, "batch", "d_inner", "V");
    int rpbs[] = {1, 2, 4, 8, 16, 32};
    for (int r : rpbs) printf(" %6s%-3d", "rpb=", r);
    printf("\n");
    for (int di : {4096, 8192})
        for (int batch : {256, 1024}) {
            long long stride = (long long)di * (N + 3), offset = 3LL * di;
            Batch b = make_batch(batch, 1, di, N, 2 * batch + 1, stride, offset);
            float* st;
            size_t sn = (size_t)(2 * batch + 1) * stride;
            CK(cudaMalloc(&st, sn * 4));
            CK(cudaMemset(st, 0x3e, sn * 4));
            for (int V : {16, 4}) {
                printf("%6d %7d %3d", batch, di, V);
                for (int r : rpbs) {
                    float ms = time_ms([&] { launch_ssu(b, st, V, r); }, 30);
                    double bytes = (double)batch * di * (2.0 * N * 4 + 4 * 4) + (double)batch * 2 * N * 4;
                    printf(" %9.0f", bytes / (ms * 1e-3) / 1e9);
                }
                float ms = time_ms([&] { launch_ssu(b, st, V); }, 30);
                double bytes = (double)batch * di * (2.0 * N * 4 + 4 * 4) + (double)batch * 2 * N * 4;
                printf(" %9.0f  GB/s (last: the grid policy)\n", bytes / (ms * 1e-3) / 1e9);
            }
            CK(cudaFree(st));
        }
}

// ---- the bulk-copy state update (state_update_bulk, kernels/mamba.cu), swept ----

struct BulkCfg {
    int chn, S, minb;
    decltype(&ssu_bulk_k<128, 2, 8>) fn;
};
static const BulkCfg bulk_cfgs[] = {
    {128, 2, 8, ssu_bulk_k<128, 2, 8>}, {128, 2, 4, ssu_bulk_k<128, 2, 4>}, {128, 3, 6, ssu_bulk_k<128, 3, 6>},
    {128, 4, 4, ssu_bulk_k<128, 4, 4>}, {256, 2, 4, ssu_bulk_k<256, 2, 4>}, {64, 2, 16, ssu_bulk_k<64, 2, 16>},
    {64, 4, 8, ssu_bulk_k<64, 4, 8>},
};

static void launch_bulk(Batch& b, float* states, const BulkCfg& c, int rpb) {
    dim3 g((b.di + c.chn - 1) / c.chn, (b.rows + rpb - 1) / rpb);
    c.fn<<<g, c.chn>>>(b.d_y, b.d_xc, b.d_dtp, b.d_dbc, b.R + 2 * b.N, b.R, b.d_xz, 2 * b.di, b.d_A, b.d_D, b.d_bias,
                       states + b.offset, b.stride, b.d_tok, b.d_slot, b.rows, rpb, b.di);
    CKL();
}

// The largest |a − b| over n floats, as bits (NaN: all ones).
__global__ void maxdiff_k(const float* a, const float* b, long long n, unsigned* out) {
    unsigned m = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float d = fabsf(a[i] - b[i]);
        unsigned u = d != d ? 0xffffffffu : __float_as_uint(d);
        m = max(m, u);
    }
    atomicMax(out, m);
}
static float maxdiff(const float* a, const float* b, long long n) {
    unsigned* d;
    CK(cudaMalloc(&d, 4));
    CK(cudaMemset(d, 0, 4));
    maxdiff_k<<<264, 256>>>(a, b, n, d);
    CKL();
    unsigned h;
    CK(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost));
    CK(cudaFree(d));
    float f;
    memcpy(&f, &h, 4);
    return h == 0xffffffffu ? NAN : f;
}

// bulk_compare runs _n16 and one bulk configuration from the same state and
// reports the largest differences in the state and in y (0 = bitwise equal).
static bool bulk_compare(int rows, int di, const BulkCfg& c, int rpb) {
    int N = 16;
    long long stride = (long long)di * (N + 3) + 4, offset = 3LL * di;
    int nslots = 2 * rows + 1;
    Batch b = make_batch(rows, 1, di, N, nslots, stride, offset);
    size_t sn = (size_t)nslots * stride;
    std::vector<float> init = randv(sn, -1, 1);
    float *s1 = dev(init), *s2 = dev(init), *y1;
    size_t yn = (size_t)b.T * di;
    CK(cudaMalloc(&y1, yn * 4));
    CK(cudaMemset(b.d_y, 0xff, yn * 4));
    launch_ssu(b, s1, 16);
    CK(cudaMemcpy(y1, b.d_y, yn * 4, cudaMemcpyDeviceToDevice));
    CK(cudaMemset(b.d_y, 0xff, yn * 4));
    launch_bulk(b, s2, c, rpb);
    CK(cudaDeviceSynchronize());
    float ds = maxdiff(s1, s2, (long long)sn), dy = maxdiff(y1, b.d_y, (long long)yn);
    bool ok = ds == 0 && dy == 0;
    printf("compare b%d s%d m%d rpb %d rows %d di %d: max |state diff| %g, max |y diff| %g %s\n", c.chn, c.S, c.minb, rpb,
           rows, di, ds, dy, ok ? "bitwise equal" : (ds < 1e-5f && dy < 1e-5f ? "close" : "FAIL"));
    CK(cudaFree(s1));
    CK(cudaFree(s2));
    CK(cudaFree(y1));
    return ds < 1e-5f && dy < 1e-5f;
}

// check_b16: the backend's _b16 against _n16 from the same state, bitwise
// (state and y), over shapes with partial channel blocks and partial row
// blocks; rpb 0 is the grid policy's rows per block.
static void check_b16() {
    struct { int rows, di, rpb; } cs[] = {{12, 448, 0}, {12, 448, 5}, {7, 100, 3}, {64, 1024, 1},
                                          {256, 4096, 0}, {300, 8192, 0}, {1024, 4096, 0}};
    int N = 16;
    for (auto c : cs) {
        long long stride = (long long)c.di * (N + 3) + 4, offset = 3LL * c.di;
        int nslots = 2 * c.rows + 1;
        Batch b = make_batch(c.rows, 1, c.di, N, nslots, stride, offset);
        size_t sn = (size_t)nslots * stride, yn = (size_t)b.T * c.di;
        std::vector<float> init = randv(sn, -1, 1);
        float *s1 = dev(init), *s2 = dev(init), *y1;
        CK(cudaMalloc(&y1, yn * 4));
        CK(cudaMemset(b.d_y, 0xff, yn * 4));
        launch_ssu(b, s1, 16);
        CK(cudaMemcpy(y1, b.d_y, yn * 4, cudaMemcpyDeviceToDevice));
        CK(cudaMemset(b.d_y, 0xff, yn * 4));
        launch_ssu(b, s2, 64, c.rpb);
        CK(cudaDeviceSynchronize());
        float ds = maxdiff(s1, s2, (long long)sn), dy = maxdiff(y1, b.d_y, (long long)yn);
        bool ok = ds == 0 && dy == 0;
        failures += !ok;
        printf("b16 vs n16, rows %4d d_inner %4d rpb %s%d: max |state diff| %g, max |y diff| %g %s\n", c.rows, c.di,
               c.rpb ? "" : "policy ", c.rpb, ds, dy, ok ? "bitwise equal ok" : "FAIL");
        CK(cudaFree(s1));
        CK(cudaFree(s2));
        CK(cudaFree(y1));
    }
}

// bulk_sweep: every bulk configuration against _n16 (the grid policy), per
// launch and back to back, at the four batch >= 256 shapes.
static void bulk_sweep() {
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    for (auto& c : bulk_cfgs) {
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, c.fn));
        int nb = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, c.fn, c.chn, 0));
        printf("b%d s%d m%d: %d registers, %zu B shared, %zu B local, %d blocks/SM\n", c.chn, c.S, c.minb, fa.numRegs,
               fa.sharedSizeBytes, fa.localSizeBytes, nb);
    }
    {
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, selective_state_update_n16));
        printf("n16: %d registers, %zu B shared, %zu B local\n", fa.numRegs, fa.sharedSizeBytes, fa.localSizeBytes);
    }
    bool okall = true;
    for (auto& c : bulk_cfgs) {
        okall &= bulk_compare(12, 448, c, 5);
        okall &= bulk_compare(256, 4096, c, 3);
        okall &= bulk_compare(64, 1024, c, 1);
    }
    printf(okall ? "bulk compare: all ok\n" : "bulk compare: FAILED\n");
    fflush(stdout);
    size_t cb = 4ull << 30;
    void *ca, *cb2;
    CK(cudaMalloc(&ca, cb));
    CK(cudaMalloc(&cb2, cb));
    CK(cudaMemset(ca, 1, cb));
    float cms = time_ms([&] { CK(cudaMemcpy(cb2, ca, cb, cudaMemcpyDeviceToDevice)); }, 20);
    double copy_gbs = 2.0 * cb / (cms * 1e-3) / 1e9;
    CK(cudaFree(ca));
    CK(cudaFree(cb2));
    float ems = time_ms([&] { empty_k<<<1, 32>>>(); }, 50);
    printf("device %s, %d SMs; device-to-device copy (4 GiB) %.0f GB/s; empty launch %.2f us (events)\n", p.name,
           p.multiProcessorCount, copy_gbs, ems * 1e3);
    printf("%6s %6s %-12s %4s %9s %7s %6s %9s %7s %6s\n", "batch", "d_in", "kernel", "rpb", "us", "GB/s", "%copy", "b2b_us",
           "GB/s", "%copy");
    void *sa, *sb;
    size_t smax = 1ull << 30;
    CK(cudaMalloc(&sa, smax));
    CK(cudaMalloc(&sb, smax));
    CK(cudaMemset(sa, 1, smax));
    int N = 16;
    for (int di : {4096, 8192})
        for (int batch : {256, 1024}) {
            long long stride = (long long)di * (N + 3), offset = 3LL * di;
            Batch b = make_batch(batch, 1, di, N, 2 * batch + 1, stride, offset);
            float* st;
            size_t sn = (size_t)(2 * batch + 1) * stride;
            CK(cudaMalloc(&st, sn * 4));
            std::vector<float> init = randv(1 << 20, -1, 1);
            for (size_t o = 0; o < sn; o += init.size())
                CK(cudaMemcpy(st + o, init.data(), std::min(init.size(), sn - o) * 4, cudaMemcpyHostToDevice));
            double bytes = (double)batch * di * (2.0 * N * 4 + 4 * 4) + (double)batch * 2 * N * 4;
            size_t half = std::min<size_t>(smax, (size_t)(bytes / 2) & ~(size_t)255);
            float c1 = time_ms([&] { CK(cudaMemcpyAsync(sb, sa, half, cudaMemcpyDeviceToDevice)); }, 50);
            float c2 = time_b2b_ms([&] { CK(cudaMemcpyAsync(sb, sa, half, cudaMemcpyDeviceToDevice)); }, 20, 20);
            auto row = [&](const char* name, int rpb, float ms, float bms) {
                double g = bytes / (ms * 1e-3) / 1e9, bg = bytes / (bms * 1e-3) / 1e9;
                printf("%6d %6d %-12s %4d %9.1f %7.0f %5.1f%% %9.1f %7.0f %5.1f%%\n", batch, di, name, rpb, ms * 1e3, g,
                       100 * g / copy_gbs, bms * 1e3, bg, 100 * bg / copy_gbs);
            };
            row("copy-same", 0, c1 * (float)(bytes / (2.0 * half)), c2 * (float)(bytes / (2.0 * half)));
            for (int rep = 0; rep < 2; rep++) {
                row("n16", 0, time_ms([&] { launch_ssu(b, st, 16); }, 50),
                    time_b2b_ms([&] { launch_ssu(b, st, 16); }, 20, 20));
                for (auto& c : bulk_cfgs)
                    for (int rpb : {1, 2, 4, 8, 16}) {
                        char name[32];
                        snprintf(name, sizeof name, "b%d_s%d_m%d", c.chn, c.S, c.minb);
                        row(name, rpb, time_ms([&] { launch_bulk(b, st, c, rpb); }, 50),
                            time_b2b_ms([&] { launch_bulk(b, st, c, rpb); }, 20, 20));
                    }
                fflush(stdout);
            }
            CK(cudaFree(st));
        }
}

int main(int argc, char** argv) {
    std::string mode = argc > 1 ? argv[1] : "check";
    if (mode == "check") {
        check_mamba();
        check_matmul();
        check_b16();
        printf(failures ? "kernel check: %d FAILED\n" : "kernel check: all ok\n", failures);
        return failures ? 1 : 0;
    }
    if (mode == "sweep") {
        sweep();
        return 0;
    }
    if (mode == "bulk") {
        bulk_sweep();
        return 0;
    }
    if (mode == "bench" && argc > 2) {
        bench(argv[2]);
        return 0;
    }
    fprintf(stderr, "usage: kernel_bench check | bench OUT.json | sweep | bulk\n");
    return 2;
}

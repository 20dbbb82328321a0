// SpMM with the dense operand staged through shared memory in slabs,
// written by hand, against cusparseSpMM and against one (row, column) per
// thread (warpfit's generated 2-D kernels): y = A·X, A CSR (f32, rows
// sorted by column), X row-major cols×k. The question: can a kernel that
// reads X from L2 a few times, instead of once per nonzero, beat
// cuSPARSE by 2× on the pruned AlexNet layers (the SpMM issue's target)?
//
// Slabs: a block owns R rows × 32 columns of y (a warp's worth); X's rows
// are cut into slabs of S rows; for each slab the block copies its S × 32
// piece of X into shared memory, then each warp folds its rows' entries
// that fall in the slab (a row's entries in slab s are the subrange
// off[r][s]..off[r][s+1] of its CSR range: the column blocks of the
// throttled handle, one level down), 32 entries loaded at a time and
// handed round by shuffles, the accumulators (R / 8 a lane) in registers
// across slabs: no carry, X read from L2 rows/R times in all.
//
// Each result is compared with an f64 host reference; times are CUDA
// events, median of 20 after 3, L2 flushed before each run. Not part of
// any build. On a machine with CUDA:
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o spmm_slabs spmm_slabs.cu -lcusparse
//   ./spmm_slabs
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <vector>
#include <algorithm>
#include <random>
#include <cusparse.h>
#include <cuda_runtime.h>
#include <cuda_pipeline.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
#define CS(x) do { cusparseStatus_t e = (x); if (e != CUSPARSE_STATUS_SUCCESS) { printf("cusparse %d line %d\n", (int)e, __LINE__); exit(1);} } while (0)

constexpr int WARPS = 8;

// Slabs, second form: each slab's copy into shared memory issued as
// asynchronous copies (cp.async, nothing through registers) one slab ahead
// (two buffers), and each warp's rows' slab bounds loaded together before
// their folds.
template <int R>
__global__ void __launch_bounds__(WARPS * 32) slabs_async(const uint32_t* __restrict__ off, const uint32_t* __restrict__ col,
                                                         const float* __restrict__ val, const float* __restrict__ x,
                                                         uint32_t rows, uint32_t cols, uint32_t k, uint32_t S, uint32_t ns,
                                                         float* __restrict__ y) {
    extern __shared__ float slab2[];  // 2 × S × 32
    constexpr int PER = R / WARPS;
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t j = blockIdx.y * 32 + lane;
    const bool live_col = j < k;
    auto issue = [&](uint32_t s) {
        float* buf = slab2 + (s & 1) * S * 32;
        const uint32_t base = s * S;
        for (uint32_t i = warp; i < S; i += WARPS) {
            const uint32_t xr = base + i;
            if (xr < cols && live_col) __pipeline_memcpy_async(buf + i * 32 + lane, x + uint64_t(xr) * k + j, 4);
        }
        __pipeline_commit();
    };
    float acc[PER];
#pragma unroll
    for (int i = 0; i < PER; ++i) acc[i] = 0;
    issue(0);
    for (uint32_t s = 0; s < ns; ++s) {
        if (s + 1 < ns) {
            issue(s + 1);
            __pipeline_wait_prior(1);
        } else {
            __pipeline_wait_prior(0);
        }
        __syncthreads();
        const float* buf = slab2 + (s & 1) * S * 32;
        const uint32_t base = s * S;
        uint32_t lo[PER], hi[PER];
#pragma unroll
        for (int i = 0; i < PER; ++i) {
            const uint32_t r = blockIdx.x * R + warp + i * WARPS;
            lo[i] = hi[i] = 0;
            if (r < rows) { lo[i] = __ldg(off + uint64_t(r) * (ns + 1) + s); hi[i] = __ldg(off + uint64_t(r) * (ns + 1) + s + 1); }
        }
#pragma unroll
        for (int i = 0; i < PER; ++i) {
            float a = acc[i];
            for (uint32_t b = lo[i]; b < hi[i]; b += 32) {
                const uint32_t e = b + lane;
                uint32_t c = 0;
                float v = 0;
                if (e < hi[i]) { c = __ldg(col + e) - base; v = __ldg(val + e); }
                const uint32_t n = min(32u, hi[i] - b);
#pragma unroll 4
                for (uint32_t t = 0; t < n; ++t) {
                    const uint32_t ct = __shfl_sync(0xffffffffu, c, t);
                    const float vt = __shfl_sync(0xffffffffu, v, t);
                    a += vt * buf[ct * 32 + lane];
                }
            }
            acc[i] = a;
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < PER; ++i) {
        const uint32_t r = blockIdx.x * R + warp + i * WARPS;
        if (r < rows && live_col) y[uint64_t(r) * k + j] = acc[i];
    }
}

// One (row, column) per thread: warpfit's mapping.
__global__ void per_thread(const uint32_t* __restrict__ ptr, const uint32_t* __restrict__ col,
                           const float* __restrict__ val, const float* __restrict__ x, uint32_t rows, uint32_t k,
                           float* __restrict__ y) {
    uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= uint64_t(rows) * k) return;
    uint32_t r = uint32_t(t / k), j = uint32_t(t % k);
    float acc = 0;
#pragma unroll 4
    for (uint32_t e = ptr[r]; e < ptr[r + 1]; ++e) acc += __ldg(val + e) * __ldg(x + uint64_t(__ldg(col + e)) * k + j);
    y[t] = acc;
}

// Slabs: block (blockIdx.x: R rows, blockIdx.y: 32 columns), 8 warps.
// off: per row, its ns + 1 slab boundaries (absolute positions).
template <int R>
__global__ void __launch_bounds__(WARPS * 32) slabs(const uint32_t* __restrict__ off, const uint32_t* __restrict__ col,
                                                   const float* __restrict__ val, const float* __restrict__ x,
                                                   uint32_t rows, uint32_t cols, uint32_t k, uint32_t S, uint32_t ns,
                                                   float* __restrict__ y) {
    extern __shared__ float slab[];  // S × 32
    constexpr int PER = R / WARPS;
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t j = blockIdx.y * 32 + lane;
    const bool live_col = j < k;
    float acc[PER];
#pragma unroll
    for (int i = 0; i < PER; ++i) acc[i] = 0;
    for (uint32_t s = 0; s < ns; ++s) {
        __syncthreads();
        const uint32_t base = s * S;
        for (uint32_t i = warp; i < S; i += WARPS) {
            const uint32_t xr = base + i;
            slab[i * 32 + lane] = (xr < cols && live_col) ? __ldg(x + uint64_t(xr) * k + j) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < PER; ++i) {
            const uint32_t r = blockIdx.x * R + warp + i * WARPS;
            if (r >= rows) continue;
            const uint32_t lo = __ldg(off + uint64_t(r) * (ns + 1) + s), hi = __ldg(off + uint64_t(r) * (ns + 1) + s + 1);
            float a = acc[i];
            for (uint32_t b = lo; b < hi; b += 32) {
                const uint32_t e = b + lane;
                uint32_t c = 0;
                float v = 0;
                if (e < hi) { c = __ldg(col + e) - base; v = __ldg(val + e); }
                const uint32_t n = min(32u, hi - b);
                for (uint32_t t = 0; t < n; ++t) {
                    const uint32_t ct = __shfl_sync(0xffffffffu, c, t);
                    const float vt = __shfl_sync(0xffffffffu, v, t);
                    a += vt * slab[ct * 32 + lane];
                }
            }
            acc[i] = a;
        }
    }
#pragma unroll
    for (int i = 0; i < PER; ++i) {
        const uint32_t r = blockIdx.x * R + warp + i * WARPS;
        if (r < rows && live_col) y[uint64_t(r) * k + j] = acc[i];
    }
}

struct Csr { uint32_t rows, cols; std::vector<uint32_t> ptr, col; std::vector<float> val; };

// Each row keeps each column with probability `density` (a pruned layer's
// rows vary in length around rows · density), Gaussian values.
static Csr layer(uint32_t rows, uint32_t cols, double density, uint32_t seed) {
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<double> u(0, 1);
    std::normal_distribution<float> n(0, 1);
    Csr a{rows, cols, {0}, {}, {}};
    for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t c = 0; c < cols; ++c)
            if (u(g) < density) { a.col.push_back(c); a.val.push_back(n(g)); }
        a.ptr.push_back(uint32_t(a.col.size()));
    }
    return a;
}

static float* flush_buf;
static void flush() { CK(cudaMemset(flush_buf, 0, 256u << 20)); }

template <class F> static double timed(F f) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int i = 0; i < 23; ++i) {
        flush();
        CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float t; CK(cudaEventElapsedTime(&t, a, b));
        if (i >= 3) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

// The largest error of y against the f64 reference, relative to Σ|a·x|.
static double error(const Csr& a, const std::vector<float>& x, uint32_t k, const float* yd) {
    std::vector<float> y(size_t(a.rows) * k);
    CK(cudaMemcpy(y.data(), yd, y.size() * 4, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (uint32_t r = 0; r < a.rows; ++r)
        for (uint32_t j = 0; j < k; ++j) {
            double s = 0, m = 0;
            for (uint32_t e = a.ptr[r]; e < a.ptr[r + 1]; ++e) { double t = double(a.val[e]) * x[size_t(a.col[e]) * k + j]; s += t; m += fabs(t); }
            worst = std::max(worst, fabs(y[size_t(r) * k + j] - s) / std::max(m, 1.0));
        }
    return worst;
}

template <int R, bool ASYNC>
static void run_slabs(const char* name, const Csr& a, uint32_t k, uint32_t S, const uint32_t* dcol, const float* dval,
                      const float* dx, float* dy, const std::vector<float>& x) {
    const uint32_t ns = (a.cols + S - 1) / S;
    std::vector<uint32_t> off(size_t(a.rows) * (ns + 1));
    for (uint32_t r = 0; r < a.rows; ++r)
        for (uint32_t s = 0; s <= ns; ++s) {
            const uint32_t* b = a.col.data() + a.ptr[r];
            const uint32_t* e = a.col.data() + a.ptr[r + 1];
            off[size_t(r) * (ns + 1) + s] = uint32_t(std::lower_bound(b, e, std::min(s * S, a.cols)) - a.col.data());
        }
    uint32_t* doff;
    CK(cudaMalloc(&doff, off.size() * 4));
    CK(cudaMemcpy(doff, off.data(), off.size() * 4, cudaMemcpyHostToDevice));
    const size_t smem = size_t(S) * 32 * 4 * (ASYNC ? 2 : 1);
    auto kern = ASYNC ? slabs_async<R> : slabs<R>;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    dim3 grid((a.rows + R - 1) / R, (k + 31) / 32);
    auto f = [&] { kern<<<grid, WARPS * 32, smem>>>(doff, dcol, dval, dx, a.rows, a.cols, k, S, ns, dy); };
    CK(cudaMemset(dy, 0xff, size_t(a.rows) * k * 4));
    f(); CK(cudaDeviceSynchronize());
    const double err = error(a, x, k, dy);
    printf("  %-6s R=%-3d S=%-4u slabs=%-3u blocks=%-5u %8.4f ms  err %.1e\n", name, R, S, ns, grid.x * grid.y, timed(f), err);
    CK(cudaFree(doff));
}

int main() {
    CK(cudaMalloc(&flush_buf, 256u << 20));
    cusparseHandle_t h; CS(cusparseCreate(&h));
    struct L { const char* name; uint32_t rows, cols; double d; };
    const L layers[] = {{"fc6", 4096, 9216, 0.09}, {"fc7", 4096, 4096, 0.09}, {"fc8", 1000, 4096, 0.25}};
    const uint32_t k = 150;
    for (const L& l : layers) {
        Csr a = layer(l.rows, l.cols, l.d, 1);
        std::vector<float> x(size_t(a.cols) * k);
        for (size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + float((i / k + i % k) % 7) / 7.0f;
        uint32_t *dptr, *dcol; float *dval, *dx, *dy;
        CK(cudaMalloc(&dptr, a.ptr.size() * 4)); CK(cudaMalloc(&dcol, a.col.size() * 4));
        CK(cudaMalloc(&dval, a.val.size() * 4)); CK(cudaMalloc(&dx, x.size() * 4));
        CK(cudaMalloc(&dy, size_t(a.rows) * k * 4));
        CK(cudaMemcpy(dptr, a.ptr.data(), a.ptr.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dcol, a.col.data(), a.col.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dval, a.val.data(), a.val.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
        printf("%s: %u x %u, %zu nonzeros, k = %u\n", l.name, a.rows, a.cols, a.col.size(), k);

        cusparseSpMatDescr_t A; cusparseDnMatDescr_t X, Y;
        CS(cusparseCreateCsr(&A, a.rows, a.cols, a.col.size(), dptr, dcol, dval, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                             CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
        CS(cusparseCreateDnMat(&X, a.cols, k, k, dx, CUDA_R_32F, CUSPARSE_ORDER_ROW));
        CS(cusparseCreateDnMat(&Y, a.rows, k, k, dy, CUDA_R_32F, CUSPARSE_ORDER_ROW));
        float one = 1, zero = 0; size_t ws = 0; void* dws = nullptr;
        CS(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, X, &zero, Y,
                                   CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &ws));
        CK(cudaMalloc(&dws, ws + 1));
        auto sp = [&] { CS(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, X, &zero, Y,
                                        CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, dws)); };
        sp(); CK(cudaDeviceSynchronize());
        printf("  cusparseSpMM                                   %8.4f ms  err %.1e\n", timed(sp), error(a, x, k, dy));
        auto pt = [&] {
            uint64_t n = uint64_t(a.rows) * k;
            per_thread<<<(n + 255) / 256, 256>>>(dptr, dcol, dval, dx, a.rows, k, dy);
        };
        pt(); CK(cudaDeviceSynchronize());
        printf("  per (row, column) thread                       %8.4f ms  err %.1e\n", timed(pt), error(a, x, k, dy));
        for (uint32_t S : {256u, 512u}) {
            run_slabs<32, false>("slabs", a, k, S, dcol, dval, dx, dy, x);
            run_slabs<64, false>("slabs", a, k, S, dcol, dval, dx, dy, x);
        }
        for (uint32_t S : {128u, 256u, 512u}) {
            run_slabs<16, true>("async", a, k, S, dcol, dval, dx, dy, x);
            run_slabs<32, true>("async", a, k, S, dcol, dval, dx, dy, x);
            run_slabs<64, true>("async", a, k, S, dcol, dval, dx, dy, x);
            run_slabs<128, true>("async", a, k, S, dcol, dval, dx, dy, x);
        }
        cusparseDestroySpMat(A); cusparseDestroyDnMat(X); cusparseDestroyDnMat(Y);
        cudaFree(dws); cudaFree(dptr); cudaFree(dcol); cudaFree(dval); cudaFree(dx); cudaFree(dy);
    }
    return 0;
}

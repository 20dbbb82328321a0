// SpMM kernel structures written by hand, against cusparseSpMM: y = A·X,
// A CSR (f32), X row-major n×k. Each structure's result is compared with
// cuSPARSE's (the largest relative difference printed beside its time),
// then timed (CUDA events, median of 15 after 3, L2 flushed before each
// run), over rows whole and over rows cut as warpfit cuts hubs (rows
// longer than 256 and 8 times the mean, into pieces of 256; split pieces
// added atomically). What warpfit's generated 2-D kernels
// are measured against (BENCHMARKS.md, "Threads fold with a lean fault
// flag"); not part of any build. On a machine with CUDA:
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o spmm_structures spmm_structures.cu -lcusparse
//   ./spmm_structures
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <random>
#include <cusparse.h>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
#define CS(x) do { cusparseStatus_t e = (x); if (e != CUSPARSE_STATUS_SUCCESS) { printf("cusparse %d line %d\n", (int)e, __LINE__); exit(1);} } while (0)

struct Piece { uint32_t row, lo, hi, split; };

// A piece's partial for output element `o`: added where its row is split.
__device__ __forceinline__ void put(const Piece& p, float* o, float v) {
    if (p.split) atomicAdd(o, v); else *o = v;
}

// The warp's walk over piece `p` for K3 and K5: 32 nonzeros loaded at a time,
// coalesced, then handed to every lane by shuffles, `f(column, value)` each.
template <class F>
__device__ __forceinline__ void each_shuffled(const Piece& p, uint32_t lane, const uint32_t* __restrict__ col,
                                              const float* __restrict__ val, F f) {
    for (uint32_t base = p.lo; base < p.hi; base += 32) {
        uint32_t e = base + lane;
        uint32_t c = 0; float v = 0;
        if (e < p.hi) { c = __ldg(col + e); v = __ldg(val + e); }
        uint32_t n = min(32u, p.hi - base);
        for (uint32_t i = 0; i < n; ++i) f(__shfl_sync(0xffffffff, c, i), __shfl_sync(0xffffffff, v, i));
    }
}

// K0: one (piece, column) per thread, as warpfit's column list does now.
__global__ void k0(const Piece* __restrict__ pc, uint64_t np, const uint32_t* __restrict__ col,
                   const float* __restrict__ val, const float* __restrict__ x, uint32_t k, float* y) {
    uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= np * k) return;
    uint64_t pi = t / k, j = t % k;
    Piece p = pc[pi];
    float acc = 0;
#pragma unroll 4
    for (uint64_t e = p.lo; e < p.hi; ++e) acc += __ldg(val + e) * __ldg(x + uint64_t(__ldg(col + e)) * k + j);
    put(p, y + uint64_t(p.row) * k + j, acc);
}


// K0 variants: FMAD false (Rust's rounding), and the gather checked with a
// lean flag (CHECK 1) or with the first-fault record's selects (CHECK 2).
struct Rec { uint32_t kind, array; uint64_t index; };
template <bool FMAD, int CHECK>
__global__ void k0v(const Piece* __restrict__ pc, uint64_t np, const uint32_t* __restrict__ col,
                   const float* __restrict__ val, const float* __restrict__ x, uint64_t xlen, uint32_t k, float* y, Rec* rec) {
    uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= np * k) return;
    uint64_t pi = t / k, j = t % k;
    Piece p = pc[pi];
    float acc = 0;
    bool bad = false; Rec r = {0, 0, 0};
#pragma unroll 4
    for (uint64_t e = p.lo; e < p.hi; ++e) {
        uint64_t i = uint64_t(__ldg(col + e)) * k + j;
        float xv;
        if (CHECK == 0) xv = __ldg(x + i);
        else if (CHECK == 1) { if (i < xlen) xv = __ldg(x + i); else { bad = true; xv = 0; } }
        else { if (i < xlen) xv = __ldg(x + i); else { if (r.kind == 0) { r.kind = 1; r.array = 3; r.index = i; } xv = 0; } }
        float v = __ldg(val + e);
        if (FMAD) acc += v * xv; else acc = __fadd_rn(acc, __fmul_rn(v, xv));
    }
    if (bad || r.kind) { rec->kind = r.kind | bad; rec->index = r.index; }
    put(p, y + uint64_t(p.row) * k + j, acc);
}


// KA<MINB>: k0 lean with warpfit's per-item work: the piece found by a
// division (32-bit fast path), the flattened task divided again for row
// and column, the row's range read (checked) as the prologue does, then
// the piece's range used; MINB > 0: __launch_bounds__(256, MINB).
__device__ __forceinline__ uint64_t idiv(uint64_t a, uint64_t b) { return (a | b) >> 32 ? a / b : uint64_t(uint32_t(a) / uint32_t(b)); }
template <int MINB, int DIVS>
__global__ void __launch_bounds__(256, MINB > 0 ? MINB : 1) ka(const Piece* __restrict__ pc, uint64_t np, const uint32_t* __restrict__ ptr, uint64_t ptrlen, const uint32_t* __restrict__ col,
                   const float* __restrict__ val, const float* __restrict__ x, uint64_t xlen, uint32_t k, float* y, Rec* rec) {
    uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= np * k) return;
    uint64_t pi = idiv(t, k), j = t - pi * k;
    Piece p = pc[pi];
    bool bad = false;
    uint64_t task = uint64_t(p.row) * k + j;
    uint64_t row = p.row, jj = j;
    if (DIVS) { row = idiv(task, k); jj = task - idiv(task, k) * k; if (k == 0) bad = true; }
    uint64_t tlo = row < ptrlen ? __ldg(ptr + row) : (bad = true, 0);
    uint64_t thi = row + 1 < ptrlen ? __ldg(ptr + row + 1) : (bad = true, 0);
    if (p.lo < tlo || p.hi > thi) bad = true;
    float acc = 0;
#pragma unroll 4
    for (uint64_t e = p.lo; e < p.hi; ++e) {
        uint64_t i = uint64_t(__ldg(col + e)) * k + jj;
        float xv;
        if (i < xlen) xv = __ldg(x + i); else { bad = true; xv = 0; }
        acc = __fadd_rn(acc, __fmul_rn(__ldg(val + e), xv));
    }
    if (bad) { rec->kind = 1; }
    put(p, y + row * k + jj, acc);
}

// The strided fold of K1 and K4: a thread folds piece `p` against columns
// `first + stride c` (c < C, below k), reading each nonzero once.
template <int C>
__device__ __forceinline__ void fold_strided(const Piece& p, const uint32_t* __restrict__ col,
                                             const float* __restrict__ val, const float* __restrict__ x,
                                             uint32_t k, uint32_t first, uint32_t stride, float* y) {
    float acc[C];
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c] = 0;
#pragma unroll 2
    for (uint64_t e = p.lo; e < p.hi; ++e) {
        float v = __ldg(val + e);
        const float* xr = x + uint64_t(__ldg(col + e)) * k + first;
#pragma unroll
        for (int c = 0; c < C; ++c)
            if (first + c * stride < k) acc[c] += v * __ldg(xr + c * stride);
    }
#pragma unroll
    for (int c = 0; c < C; ++c)
        if (first + c * stride < k) put(p, y + uint64_t(p.row) * k + first + c * stride, acc[c]);
}

// K1<C>: C columns a thread, strided by S = ceil(k/C) (each load coalesced).
template <int C>
__global__ void k1(const Piece* __restrict__ pc, uint64_t np, const uint32_t* __restrict__ col,
                   const float* __restrict__ val, const float* __restrict__ x, uint32_t k, float* y) {
    uint32_t S = (k + C - 1) / C;
    uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= np * S) return;
    fold_strided<C>(pc[t / S], col, val, x, k, uint32_t(t % S), S, y);
}

// K3<Q>: a warp per piece, lanes over columns (lane + 32 q), nonzeros loaded
// 32 at a time coalesced and broadcast by shuffles (GE-SpMM's row caching).
template <int Q>
__global__ void k3(const Piece* __restrict__ pc, uint64_t np, const uint32_t* __restrict__ col,
                   const float* __restrict__ val, const float* __restrict__ x, uint32_t k, float* y) {
    uint64_t w = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    uint32_t lane = threadIdx.x & 31;
    if (w >= np) return;
    Piece p = pc[w];
    float acc[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q) acc[q] = 0;
    each_shuffled(p, lane, col, val, [&](uint32_t ci, float vi) {
        const float* xr = x + uint64_t(ci) * k + lane;
#pragma unroll
        for (int q = 0; q < Q; ++q)
            if (lane + 32 * q < k) acc[q] += vi * __ldg(xr + 32 * q);
    });
#pragma unroll
    for (int q = 0; q < Q; ++q)
        if (lane + 32 * q < k) put(p, y + uint64_t(p.row) * k + lane + 32 * q, acc[q]);
}

// K4<G, Q>: G lanes per piece (a sub-warp), each (piece) the lanes over
// columns lane + G q, nonzeros read by every lane (broadcast loads).
template <int G, int Q>
__global__ void k4(const Piece* __restrict__ pc, uint64_t np, const uint32_t* __restrict__ col,
                   const float* __restrict__ val, const float* __restrict__ x, uint32_t k, float* y) {
    uint64_t w = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / G;
    if (w >= np) return;
    fold_strided<Q>(pc[w], col, val, x, k, threadIdx.x % G, G, y);
}

// K5: K3 with float2 loads (k even): lane takes columns 2 lane + 64 q.
template <int Q>
__global__ void k5(const Piece* __restrict__ pc, uint64_t np, const uint32_t* __restrict__ col,
                   const float* __restrict__ val, const float* __restrict__ x, uint32_t k, float* y) {
    uint64_t w = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    uint32_t lane = threadIdx.x & 31;
    if (w >= np) return;
    Piece p = pc[w];
    float2 acc[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q) acc[q] = make_float2(0, 0);
    each_shuffled(p, lane, col, val, [&](uint32_t ci, float vi) {
        const float2* xr = reinterpret_cast<const float2*>(x + uint64_t(ci) * k) + lane;
#pragma unroll
        for (int q = 0; q < Q; ++q)
            if (2 * (lane + 32 * q) < k) { float2 xv = __ldg(xr + 32 * q); acc[q].x += vi * xv.x; acc[q].y += vi * xv.y; }
    });
#pragma unroll
    for (int q = 0; q < Q; ++q)
        if (2 * (lane + 32 * q) < k) {
            float* o = y + uint64_t(p.row) * k + 2 * (lane + 32 * q);
            put(p, o, acc[q].x);
            put(p, o + 1, acc[q].y);
        }
}

struct Csr { uint32_t n, m; std::vector<uint32_t> ptr, col; std::vector<float> val; };

// A pruned layer's shape: rows of binomial length at the layer's density
// (within a few percent of the mean, as magnitude pruning leaves them),
// their columns uniformly placed, Gaussian weights.
static Csr random_rows(uint32_t n, uint32_t m, double density, uint64_t seed) {
    std::mt19937_64 g(seed);
    std::binomial_distribution<uint32_t> len(m, density);
    std::normal_distribution<float> nd(0, 1);
    Csr a; a.n = n; a.m = m; a.ptr.push_back(0);
    std::vector<uint32_t> cols(m);
    for (uint32_t i = 0; i < m; ++i) cols[i] = i;
    for (uint32_t r = 0; r < n; ++r) {
        uint32_t l = len(g);
        for (uint32_t i = 0; i < l; ++i) std::swap(cols[i], cols[i + g() % (m - i)]);
        std::sort(cols.begin(), cols.begin() + l);
        for (uint32_t i = 0; i < l; ++i) { a.col.push_back(cols[i]); a.val.push_back(nd(g)); }
        a.ptr.push_back(a.col.size());
    }
    return a;
}

static Csr uniform(uint32_t n, uint32_t per, uint64_t seed) {
    std::mt19937_64 g(seed);
    Csr a; a.n = n; a.m = n; a.ptr.resize(n + 1); a.col.resize(uint64_t(n) * per); a.val.resize(a.col.size());
    for (uint32_t r = 0; r <= n; ++r) a.ptr[r] = r * per;
    for (uint64_t i = 0; i < a.col.size(); ++i) { a.col[i] = g() % n; a.val[i] = float(g() % 1000) / 1000.f; }
    return a;
}

static Csr rmat(int scale, int ef, uint64_t seed) {
    std::mt19937_64 g(seed);
    uint32_t n = 1u << scale; uint64_t m = uint64_t(n) * ef;
    std::vector<uint32_t> src(m), dst(m);
    std::uniform_real_distribution<double> u(0, 1);
    for (uint64_t i = 0; i < m; ++i) {
        uint32_t s = 0, d = 0;
        for (int b = 0; b < scale; ++b) {
            double r = u(g);
            int q = r < 0.57 ? 0 : r < 0.76 ? 1 : r < 0.95 ? 2 : 3;
            s = (s << 1) | (q >> 1); d = (d << 1) | (q & 1);
        }
        src[i] = s; dst[i] = d;
    }
    Csr a; a.n = n; a.m = n; a.ptr.assign(n + 1, 0);
    for (uint64_t i = 0; i < m; ++i) a.ptr[src[i] + 1]++;
    for (uint32_t r = 0; r < n; ++r) a.ptr[r + 1] += a.ptr[r];
    a.col.resize(m); a.val.resize(m);
    std::vector<uint32_t> at(a.ptr.begin(), a.ptr.end() - 1);
    for (uint64_t i = 0; i < m; ++i) { uint32_t p = at[src[i]]++; a.col[p] = dst[i]; a.val[p] = float(i % 1000) / 1000.f; }
    return a;
}

static std::vector<Piece> pieces(const Csr& a, uint32_t maxlen) {
    std::vector<Piece> out;
    uint64_t nnz = a.col.size();
    uint32_t cut = std::max<uint32_t>(maxlen, uint32_t(8 * nnz / a.n));
    for (uint32_t r = 0; r < a.n; ++r) {
        uint32_t lo = a.ptr[r], hi = a.ptr[r + 1];
        if (hi - lo <= cut) { out.push_back({r, lo, hi, 0}); continue; }
        for (uint32_t s = lo; s < hi; s += maxlen) out.push_back({r, s, std::min(hi, s + maxlen), 1});
    }
    return out;
}

static float* flush_buf; 
static void flush() { CK(cudaMemsetAsync(flush_buf, 0, 256u << 20)); }

template <class F>
static double timeit(F f, int runs) {
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    std::vector<float> ts;
    for (int i = 0; i < runs + 3; ++i) {
        flush();
        cudaEventRecord(a); f(); cudaEventRecord(b); CK(cudaEventSynchronize(b));
        float ms; cudaEventElapsedTime(&ms, a, b);
        if (i >= 3) ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
}

static void run(const char* name, const Csr& a, uint32_t k, int runs) {
    uint64_t nnz = a.col.size();
    std::vector<float> hx(uint64_t(a.m) * k);
    for (uint64_t i = 0; i < hx.size(); ++i) hx[i] = 1.f + float((i / k + i % k) % 7) / 7.f;
    uint32_t *dptr, *dcol; float *dval, *dx, *dy, *dref; Piece* dpc;
    std::vector<Piece> pc = pieces(a, 256);
    std::vector<Piece> whole = pieces(a, 0xffffffffu);
    CK(cudaMalloc(&dptr, 4 * (a.n + 1))); CK(cudaMalloc(&dcol, 4 * nnz)); CK(cudaMalloc(&dval, 4 * nnz));
    CK(cudaMalloc(&dx, 4 * hx.size())); CK(cudaMalloc(&dy, 4ull * a.n * k)); CK(cudaMalloc(&dref, 4ull * a.n * k));
    Rec* rec; CK(cudaMalloc(&rec, sizeof(Rec))); CK(cudaMalloc(&dpc, sizeof(Piece) * std::max(pc.size(), whole.size())));
    CK(cudaMemcpy(dptr, a.ptr.data(), 4 * (a.n + 1), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dcol, a.col.data(), 4 * nnz, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dval, a.val.data(), 4 * nnz, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dx, hx.data(), 4 * hx.size(), cudaMemcpyHostToDevice));

    cusparseHandle_t h; CS(cusparseCreate(&h));
    cusparseSpMatDescr_t A; cusparseDnMatDescr_t B, Cm;
    CS(cusparseCreateCsr(&A, a.n, a.m, nnz, dptr, dcol, dval, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CS(cusparseCreateDnMat(&B, a.m, k, k, dx, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    CS(cusparseCreateDnMat(&Cm, a.n, k, k, dref, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    float one = 1, zero = 0; size_t ws = 0; void* dws = nullptr;
    CS(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, B, &zero, Cm, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &ws));
    CK(cudaMalloc(&dws, ws + 1));
    double tc = timeit([&] { CS(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, B, &zero, Cm, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, dws)); }, runs);
    std::vector<float> ref(uint64_t(a.n) * k), got(ref.size());
    CK(cudaMemcpy(ref.data(), dref, 4 * ref.size(), cudaMemcpyDeviceToHost));
    printf("%s k=%u nnz=%lu pieces=%zu: cusparse %.3f ms\n", name, k, (unsigned long)nnz, pc.size(), tc);

    auto check_time = [&](const char* v, bool cut, auto launch) {
        const std::vector<Piece>& P = cut ? pc : whole;
        CK(cudaMemcpy(dpc, P.data(), sizeof(Piece) * P.size(), cudaMemcpyHostToDevice));
        uint64_t np = P.size();
        auto go = [&] { if (cut) CK(cudaMemsetAsync(dy, 0, 4ull * a.n * k)); launch(np); };
        go(); CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(got.data(), dy, 4 * got.size(), cudaMemcpyDeviceToHost));
        double worst = 0;
        for (uint64_t i = 0; i < got.size(); ++i) worst = std::max(worst, double(fabsf(got[i] - ref[i])) / (1.0 + fabsf(ref[i])));
        double t = timeit(go, runs);
        printf("  %-22s %s %.3f ms  x%.2f cusparse  err %.1e\n", v, cut ? "cut  " : "whole", t, tc / t, worst);
    };
    const int B256 = 256;
    auto grid = [&](uint64_t threads) { return unsigned((threads + B256 - 1) / B256); };
    for (int cut = 0; cut < 2; ++cut) {
        check_time("k0 thread/col", cut, [&](uint64_t np) { k0<<<grid(np * k), B256>>>(dpc, np, dcol, dval, dx, k, dy); });
        check_time("k0 nofmad", cut, [&](uint64_t np) { k0v<false, 0><<<grid(np * k), B256>>>(dpc, np, dcol, dval, dx, hx.size(), k, dy, rec); });
        check_time("k0 nofmad lean", cut, [&](uint64_t np) { k0v<false, 1><<<grid(np * k), B256>>>(dpc, np, dcol, dval, dx, hx.size(), k, dy, rec); });
        check_time("k0 nofmad record", cut, [&](uint64_t np) { k0v<false, 2><<<grid(np * k), B256>>>(dpc, np, dcol, dval, dx, hx.size(), k, dy, rec); });
        check_time("ka<0,0> items", cut, [&](uint64_t np) { ka<0, 0><<<grid(np * k), B256>>>(dpc, np, dptr, a.n + 1, dcol, dval, dx, hx.size(), k, dy, rec); });
        check_time("ka<0,1> items+divs", cut, [&](uint64_t np) { ka<0, 1><<<grid(np * k), B256>>>(dpc, np, dptr, a.n + 1, dcol, dval, dx, hx.size(), k, dy, rec); });
        check_time("ka<6,1> items+divs 40r", cut, [&](uint64_t np) { ka<6, 1><<<grid(np * k), B256>>>(dpc, np, dptr, a.n + 1, dcol, dval, dx, hx.size(), k, dy, rec); });
        check_time("k1<2> strided", cut, [&](uint64_t np) { k1<2><<<grid(np * ((k + 1) / 2)), B256>>>(dpc, np, dcol, dval, dx, k, dy); });
        check_time("k1<4> strided", cut, [&](uint64_t np) { k1<4><<<grid(np * ((k + 3) / 4)), B256>>>(dpc, np, dcol, dval, dx, k, dy); });
        if (k <= 64) {
            check_time("k3<2> warp shfl", cut, [&](uint64_t np) { k3<2><<<grid(np * 32), B256>>>(dpc, np, dcol, dval, dx, k, dy); });
            check_time("k4<32,2> warp bcast", cut, [&](uint64_t np) { k4<32, 2><<<grid(np * 32), B256>>>(dpc, np, dcol, dval, dx, k, dy); });
            check_time("k4<16,4> half bcast", cut, [&](uint64_t np) { k4<16, 4><<<grid(np * 16), B256>>>(dpc, np, dcol, dval, dx, k, dy); });
            if (k % 2 == 0) check_time("k5<1> warp float2", cut, [&](uint64_t np) { k5<1><<<grid(np * 32), B256>>>(dpc, np, dcol, dval, dx, k, dy); });
        } else {
            check_time("k3<5> warp shfl", cut, [&](uint64_t np) { k3<5><<<grid(np * 32), B256>>>(dpc, np, dcol, dval, dx, k, dy); });
            check_time("k4<32,5> warp bcast", cut, [&](uint64_t np) { k4<32, 5><<<grid(np * 32), B256>>>(dpc, np, dcol, dval, dx, k, dy); });
            if (k % 2 == 0) check_time("k5<3> warp float2", cut, [&](uint64_t np) { k5<3><<<grid(np * 32), B256>>>(dpc, np, dcol, dval, dx, k, dy); });
        }
    }
    cudaFree(dptr); cudaFree(dcol); cudaFree(dval); cudaFree(dx); cudaFree(dy); cudaFree(dref); cudaFree(dpc); cudaFree(dws);
    cusparseDestroySpMat(A); cusparseDestroyDnMat(B); cusparseDestroyDnMat(Cm); cusparseDestroy(h);
}

int main() {
    int runs = 15;
    CK(cudaMalloc(&flush_buf, 256u << 20));
    run("fc6", random_rows(4096, 9216, 0.09, 1), 150, runs);
    run("fc7", random_rows(4096, 4096, 0.09, 2), 150, runs);
    run("fc8", random_rows(1000, 4096, 0.25, 3), 150, runs);
    run("uniform22", uniform(1u << 22, 16, 4), 64, runs);
    run("rmat22", rmat(22, 16, 5), 64, runs);
    run("uniform20", uniform(1u << 20, 16, 6), 32, runs);
    return 0;
}

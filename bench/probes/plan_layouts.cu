// The column blocks' layout made on the device, in other structures than
// plan.cuh's, against plan.cuh's own: what a rerun from the plan cache
// spends remaking a decided layout (BENCHMARKS.md traced uniform 2^24 at
// 2.4 ms counting, 2.7 ms placing and 2.2 ms gathering, about a third of
// the copy bandwidth, and 1.9 ms hashing the plan cache's key).
//
// For a CSR pattern (`ptr`, `idx`, u32) and `k` column blocks of `width`
// gathered elements, each structure makes
//   counts[b * n + t]  the fine tasks of task t in block b (scanned after:
//                      every block's range array at once),
//   perm[new] = old    each task's fine tasks grouped by block, in their
//                      order within a block (a stable counting sort),
// and, where it fuses the gather, the index array in the new order. Every
// structure's output is compared with a plain host loop's before it is
// timed (CUDA events, median of 15 after 3). Not part of any build. On a
// machine with CUDA:
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o plan_layouts plan_layouts.cu
//   ./plan_layouts            # uniform 2^24 x 16, power-law 2^24 x 16, k = 3
//   ./plan_layouts 22 8       # 2^22 rows, k = 8
//
// Structures:
//   group/match   plan.cuh's: a group of 8, 16 or 32 lanes per task (the
//                 smallest at least the mean), the warp stepping through
//                 its longest task, lanes of a block ranked by
//                 `__match_any_sync`, counters in shared memory;
//   group/ballot  the same groups, each block's lanes found by one ballot
//                 per block (k ≤ group size), block b's counter and cursor
//                 in the register of the group's lane b: no shared memory,
//                 no `__syncwarp`;
//   thread        a thread per task, its k counters and cursors in
//                 registers, its fine tasks read in order;
// and each placement once more with the gather of `idx` fused (the index
// written at its new place as it is placed: no perm read, no second read
// of `idx`). The digest: plan.cuh's one mix per word against one per four.
// The kernels here check no index (plan.cuh's check each against the array
// it addresses and raise a flag): a structure's gain must hold with them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#define CK(x)                                                                         \
    do {                                                                              \
        cudaError_t e_ = (x);                                                         \
        if (e_ != cudaSuccess) {                                                      \
            printf("CUDA %s line %d\n", cudaGetErrorString(e_), __LINE__);            \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

constexpr uint32_t FULL = 0xffffffffu;
constexpr uint32_t BLOCK = 256;
constexpr uint32_t KMAX = 32;

__device__ __forceinline__ uint32_t block_of(uint32_t g, uint32_t width, uint32_t k) {
    const uint32_t b = g / width;
    return b < k ? b : k - 1;
}

// ---- the groups' walk, shared by group/match and group/ballot ----------

/// A group of `1 << shift` lanes per task, the warp stepping together
/// through its longest task (the warp-wide votes need every lane), lane
/// `in_group` taking fine task `lo + step·G + in_group`: `start(t)` before
/// each task (t may be past the end), `step(e, live, g, b)` each step (`g`
/// the gathered element and `b` its block, `KMAX` where not `live`),
/// `end(t)` after.
template <class Start, class Step, class End>
__device__ __forceinline__ void group_tasks(const uint32_t* __restrict__ ptr, const uint32_t* __restrict__ idx,
                                            uint64_t n, uint32_t width, uint32_t k, uint32_t shift, Start start,
                                            Step step, End end) {
    const uint32_t lane = threadIdx.x % 32;
    const uint32_t gsize = 1u << shift, group = lane >> shift, in_group = lane & (gsize - 1);
    const uint64_t per_warp = 32 >> shift;
    const uint64_t warps = uint64_t(gridDim.x) * (BLOCK / 32);
    const uint64_t warp = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) / 32;
    for (uint64_t first = warp * per_warp; first < n; first += warps * per_warp) {
        const uint64_t t = first + group;
        start(t);
        const uint32_t lo = t < n ? ptr[t] : 0, hi = t < n ? ptr[t + 1] : 0;
        const uint32_t steps = (hi - lo + gsize - 1) >> shift;
        const uint32_t most = __reduce_max_sync(FULL, steps);
        for (uint32_t s = 0; s < most; ++s) {
            const uint32_t e = lo + (s << shift) + in_group;
            const bool live = e < hi;
            const uint32_t g = live ? idx[e] : 0;
            step(e, live, g, live ? block_of(g, width, k) : KMAX);
        }
        end(t);
    }
}

// ---- group/match: plan.cuh's structure --------------------------------

template <bool PLACE, bool FUSED>
__global__ void __launch_bounds__(BLOCK)
    group_match(const uint32_t* __restrict__ ptr, const uint32_t* __restrict__ idx, uint64_t n, uint32_t width,
                uint32_t k, uint32_t shift, uint32_t* counts, const uint32_t* offsets, uint32_t* perm,
                uint32_t* idx_out) {
    __shared__ uint32_t ctr[BLOCK / 8][KMAX];
    const uint32_t lane = threadIdx.x % 32, w = threadIdx.x / 32;
    const uint32_t gsize = 1u << shift, group = lane >> shift, in_group = lane & (gsize - 1);
    const unsigned below = (1u << lane) - 1;
    uint32_t* mine = ctr[w * (32 / 8) + group];
    group_tasks(
        ptr, idx, n, width, k, shift,
        [&](uint64_t t) {
            for (uint32_t b = in_group; b < k; b += gsize) {
                mine[b] = PLACE && t < n ? offsets[uint64_t(b) * n + t] : 0;
            }
            __syncwarp();
        },
        [&](uint32_t e, bool live, uint32_t g, uint32_t b) {
            const unsigned peers = __match_any_sync(FULL, group * (KMAX + 1) + b);
            if (PLACE && live) {
                const uint32_t at = mine[b] + __popc(peers & below);
                if (FUSED) {
                    idx_out[at] = g;
                } else {
                    perm[at] = e;
                }
            }
            __syncwarp();
            if (live && lane == uint32_t(__ffs(peers) - 1)) {
                mine[b] += __popc(peers);
            }
            __syncwarp();
        },
        [&](uint64_t t) {
            if (!PLACE && t < n) {
                for (uint32_t b = in_group; b < k; b += gsize) {
                    counts[uint64_t(b) * n + t] = mine[b];
                }
            }
            __syncwarp();
        });
}

// ---- group/ballot: one ballot per block, counters in registers --------

template <bool PLACE, bool FUSED>
__global__ void __launch_bounds__(BLOCK)
    group_ballot(const uint32_t* __restrict__ ptr, const uint32_t* __restrict__ idx, uint64_t n, uint32_t width,
                 uint32_t k, uint32_t shift, uint32_t* counts, const uint32_t* offsets, uint32_t* perm,
                 uint32_t* idx_out) {
    const uint32_t lane = threadIdx.x % 32;
    const uint32_t gsize = 1u << shift, in_group = lane & (gsize - 1);
    const uint32_t first_lane = (lane >> shift) << shift;
    const unsigned gmask = (gsize == 32 ? FULL : ((1u << gsize) - 1)) << first_lane;
    const unsigned below = (1u << lane) - 1;
    // Lane `in_group == b` holds block b's counter (or cursor).
    uint32_t mine = 0;
    group_tasks(
        ptr, idx, n, width, k, shift,
        [&](uint64_t t) { mine = PLACE && t < n && in_group < k ? offsets[uint64_t(in_group) * n + t] : 0; },
        [&](uint32_t e, bool, uint32_t g, uint32_t b) {
            for (uint32_t c = 0; c < k; ++c) {
                const unsigned same = __ballot_sync(FULL, b == c) & gmask;
                if (PLACE) {
                    const uint32_t base = __shfl_sync(FULL, mine, first_lane + c);
                    if (b == c) {
                        const uint32_t at = base + __popc(same & below);
                        if (FUSED) {
                            idx_out[at] = g;
                        } else {
                            perm[at] = e;
                        }
                    }
                }
                if (in_group == c) {
                    mine += __popc(same);
                }
            }
        },
        [&](uint64_t t) {
            if (!PLACE && t < n && in_group < k) {
                counts[uint64_t(in_group) * n + t] = mine;
            }
        });
}

// ---- thread: a thread per task ------------------------------------------

template <bool PLACE, bool FUSED, uint32_t K>
__global__ void __launch_bounds__(BLOCK)
    per_thread(const uint32_t* __restrict__ ptr, const uint32_t* __restrict__ idx, uint64_t n, uint32_t width,
               uint32_t k, uint32_t* counts, const uint32_t* offsets, uint32_t* perm, uint32_t* idx_out) {
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    for (uint64_t t = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; t < n; t += stride) {
        uint32_t c[K];
#pragma unroll
        for (uint32_t b = 0; b < K; ++b) {
            c[b] = PLACE && b < k ? offsets[uint64_t(b) * n + t] : 0;
        }
        const uint32_t lo = ptr[t], hi = ptr[t + 1];
        for (uint32_t e = lo; e < hi; ++e) {
            const uint32_t g = idx[e];
            const uint32_t b = block_of(g, width, k);
            // Registers, not local memory: the block is found by a compare
            // per slot, which the unrolled loop keeps in registers.
#pragma unroll
            for (uint32_t s = 0; s < K; ++s) {
                if (s == b) {
                    if (PLACE) {
                        if (FUSED) {
                            idx_out[c[s]] = g;
                        } else {
                            perm[c[s]] = e;
                        }
                    }
                    c[s] += 1;
                }
            }
        }
        if (!PLACE) {
#pragma unroll
            for (uint32_t b = 0; b < K; ++b) {
                if (b < k) {
                    counts[uint64_t(b) * n + t] = c[b];
                }
            }
        }
    }
}

// ---- the gather plan.cuh's layout runs after placing --------------------

__global__ void gather(const uint32_t* __restrict__ perm, const uint32_t* __restrict__ src, uint64_t len,
                       uint32_t* out) {
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    for (uint64_t i = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; i < len; i += stride) {
        out[i] = src[perm[i]];
    }
}

// ---- the digest ----------------------------------------------------------

__device__ __forceinline__ uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

__device__ __forceinline__ void add_warp(uint64_t h, unsigned long long* out) {
    for (int d = 16; d > 0; d /= 2) {
        h += __shfl_xor_sync(FULL, h, d);
    }
    if (threadIdx.x % 32 == 0) {
        atomicAdd(out, (unsigned long long)h);
    }
}

__global__ void hash1(const uint32_t* words, uint64_t n, uint64_t seed, unsigned long long* out) {
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    uint64_t h = 0;
    for (uint64_t i = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; i < n; i += stride) {
        h += mix((seed + i * 0x9e3779b97f4a7c15ull) ^ uint64_t(words[i]));
    }
    add_warp(h, out);
}

// Four words a mix: two 64-bit lanes folded by a multiply-xorshift first.
__global__ void hash4(const uint32_t* words, uint64_t n, uint64_t seed, unsigned long long* out) {
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    const uint64_t quads = n / 4;
    const uint4* q = reinterpret_cast<const uint4*>(words);
    uint64_t h = 0;
    for (uint64_t i = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; i < quads; i += stride) {
        const uint4 v = q[i];
        const uint64_t a = (uint64_t(v.y) << 32) | v.x, b = (uint64_t(v.w) << 32) | v.z;
        h += mix((seed + i * 0x9e3779b97f4a7c15ull) ^ a ^ ((b ^ (b >> 29)) * 0xbf58476d1ce4e5b9ull));
    }
    for (uint64_t i = quads * 4 + uint64_t(blockIdx.x) * BLOCK + threadIdx.x; i < n; i += stride) {
        h += mix((seed + i * 0x9e3779b97f4a7c15ull) ^ uint64_t(words[i]));
    }
    add_warp(h, out);
}

// ---- host ------------------------------------------------------------------

struct Csr {
    uint64_t n;
    std::vector<uint32_t> ptr, idx;
};

// Row lengths all `per_row` (uniform) or power-law with mean about
// `per_row` (a few rows of thousands); columns uniform at random.
static Csr make(uint64_t n, uint32_t per_row, bool power_law, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Csr a{n, std::vector<uint32_t>(n + 1), {}};
    std::uniform_real_distribution<double> u(0.0, 1.0);
    uint64_t nnz = 0;
    for (uint64_t t = 0; t < n; ++t) {
        a.ptr[t] = uint32_t(nnz);
        uint64_t len = per_row;
        if (power_law) {
            // Pareto, shape 1.6, scaled to a mean of per_row; capped.
            const double x = std::pow(1.0 - u(rng), -1.0 / 1.6);
            len = std::min<uint64_t>(uint64_t(per_row * 0.375 * x), 1u << 16);
        }
        nnz += len;
    }
    a.ptr[n] = uint32_t(nnz);
    a.idx.resize(nnz);
    // SplitMix64 per entry: a fast stream, the same on every run.
    uint64_t z = seed * 0x9e3779b97f4a7c15ull;
    for (auto& c : a.idx) {
        z += 0x9e3779b97f4a7c15ull;
        uint64_t r = z;
        r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ull;
        r = (r ^ (r >> 27)) * 0x94d049bb133111ebull;
        c = uint32_t((r ^ (r >> 31)) % n);
    }
    // Sorted within each row, as a CSR matrix's are.
    for (uint64_t t = 0; t < n; ++t) {
        std::sort(a.idx.begin() + a.ptr[t], a.idx.begin() + a.ptr[t + 1]);
    }
    return a;
}

// The host loop's counts (unscanned) and permutation.
static void reference(const Csr& a, uint32_t width, uint32_t k, std::vector<uint32_t>& counts,
                      std::vector<uint32_t>& perm) {
    const uint64_t n = a.n;
    counts.assign(uint64_t(k) * n, 0);
    for (uint64_t t = 0; t < n; ++t) {
        for (uint32_t e = a.ptr[t]; e < a.ptr[t + 1]; ++e) {
            counts[uint64_t(std::min(a.idx[e] / width, k - 1)) * n + t] += 1;
        }
    }
    std::vector<uint32_t> off(counts.size());
    uint64_t run = 0;
    for (uint64_t i = 0; i < counts.size(); ++i) {
        off[i] = uint32_t(run);
        run += counts[i];
    }
    perm.assign(a.idx.size(), 0);
    for (uint64_t t = 0; t < n; ++t) {
        for (uint32_t e = a.ptr[t]; e < a.ptr[t + 1]; ++e) {
            perm[off[uint64_t(std::min(a.idx[e] / width, k - 1)) * n + t]++] = e;
        }
    }
}

template <class F>
static float median_ms(F f) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int r = 0; r < 18; ++r) {
        CK(cudaEventRecord(a));
        f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r >= 3) {
            t.push_back(ms);
        }
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

template <class T>
static T* upload(const std::vector<T>& v) {
    T* d = nullptr;
    CK(cudaMalloc(&d, std::max<size_t>(v.size(), 1) * sizeof(T)));
    CK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <class T>
static std::vector<T> download(const T* d, size_t len) {
    std::vector<T> v(len);
    CK(cudaMemcpy(v.data(), d, len * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
}

static void run(const char* name, const Csr& a, uint32_t k) {
    const uint64_t n = a.n, nnz = a.idx.size();
    const uint32_t width = uint32_t((n + k - 1) / k);
    const uint32_t mean = uint32_t((nnz + n - 1) / std::max<uint64_t>(n, 1));
    const uint32_t shift = mean <= 8 ? 3 : mean <= 16 ? 4 : 5;
    std::vector<uint32_t> want_counts, want_perm;
    reference(a, width, k, want_counts, want_perm);
    std::vector<uint32_t> want_idx(nnz);
    for (uint64_t i = 0; i < nnz; ++i) {
        want_idx[i] = a.idx[want_perm[i]];
    }
    std::vector<uint32_t> want_off(want_counts.size());
    uint64_t run_sum = 0;
    for (uint64_t i = 0; i < want_counts.size(); ++i) {
        want_off[i] = uint32_t(run_sum);
        run_sum += want_counts[i];
    }

    uint32_t* ptr = upload(a.ptr);
    uint32_t* idx = upload(a.idx);
    uint32_t* offsets = upload(want_off);
    uint32_t *counts, *perm, *idx_out, *scanned;
    CK(cudaMalloc(&counts, want_counts.size() * 4));
    CK(cudaMalloc(&scanned, want_counts.size() * 4));
    CK(cudaMalloc(&perm, nnz * 4));
    CK(cudaMalloc(&idx_out, nnz * 4));
    size_t scan_bytes = 0;
    CK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts, scanned, want_counts.size()));
    void* scan_tmp;
    CK(cudaMalloc(&scan_tmp, scan_bytes));
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const uint32_t grid = uint32_t(sms) * 8;
    const uint32_t grid_threads = uint32_t(std::min<uint64_t>((n + BLOCK - 1) / BLOCK, uint64_t(sms) * 64));
    printf("%s: %llu tasks, %llu fine tasks (mean %u), k = %u, group of %u lanes\n", name,
           (unsigned long long)n, (unsigned long long)nnz, mean, k, 1u << shift);

    auto check = [&](const char* what, const std::vector<uint32_t>& got, const std::vector<uint32_t>& want) {
        if (got != want) {
            size_t i = 0;
            while (got[i] == want[i]) {
                ++i;
            }
            printf("  %-28s WRONG at %zu: %u, want %u\n", what, i, got[i], want[i]);
            return false;
        }
        return true;
    };
    auto report = [&](const char* what, float ms, double bytes) {
        printf("  %-28s %8.3f ms  %7.0f GB/s\n", what, ms, bytes / (ms * 1e6));
    };
    // `launch` run once into `out` (filled with 0xff first) and checked
    // against `want`; timed only where right.
    auto trial = [&](const char* what, uint32_t* out, const std::vector<uint32_t>& want, auto launch,
                     double bytes) {
        CK(cudaMemset(out, 0xff, want.size() * 4));
        launch();
        CK(cudaDeviceSynchronize());
        if (check(what, download(out, want.size()), want)) {
            report(what, median_ms(launch), bytes);
        }
    };
    const double idx_bytes = double(nnz) * 4, ptr_bytes = double(n + 1) * 4, cnt_bytes = double(k) * n * 4;

    // Counting.
    auto count = [&](int s) {
        if (s == 0) {
            group_match<false, false><<<grid, BLOCK>>>(ptr, idx, n, width, k, shift, counts, nullptr, nullptr,
                                                        nullptr);
        } else if (s == 1) {
            group_ballot<false, false><<<grid, BLOCK>>>(ptr, idx, n, width, k, shift, counts, nullptr, nullptr,
                                                         nullptr);
        } else if (k <= 4) {
            per_thread<false, false, 4><<<grid_threads, BLOCK>>>(ptr, idx, n, width, k, counts, nullptr, nullptr,
                                                                  nullptr);
        } else {
            per_thread<false, false, 8><<<grid_threads, BLOCK>>>(ptr, idx, n, width, k, counts, nullptr, nullptr,
                                                                  nullptr);
        }
    };
    auto place = [&](int s, bool fused) {
        uint32_t* p = fused ? nullptr : perm;
        uint32_t* o = fused ? idx_out : nullptr;
        if (s == 0) {
            if (fused) {
                group_match<true, true><<<grid, BLOCK>>>(ptr, idx, n, width, k, shift, nullptr, offsets, p, o);
            } else {
                group_match<true, false><<<grid, BLOCK>>>(ptr, idx, n, width, k, shift, nullptr, offsets, p, o);
            }
        } else if (s == 1) {
            if (fused) {
                group_ballot<true, true><<<grid, BLOCK>>>(ptr, idx, n, width, k, shift, nullptr, offsets, p, o);
            } else {
                group_ballot<true, false><<<grid, BLOCK>>>(ptr, idx, n, width, k, shift, nullptr, offsets, p, o);
            }
        } else if (k <= 4) {
            if (fused) {
                per_thread<true, true, 4><<<grid_threads, BLOCK>>>(ptr, idx, n, width, k, nullptr, offsets, p, o);
            } else {
                per_thread<true, false, 4><<<grid_threads, BLOCK>>>(ptr, idx, n, width, k, nullptr, offsets, p, o);
            }
        } else {
            if (fused) {
                per_thread<true, true, 8><<<grid_threads, BLOCK>>>(ptr, idx, n, width, k, nullptr, offsets, p, o);
            } else {
                per_thread<true, false, 8><<<grid_threads, BLOCK>>>(ptr, idx, n, width, k, nullptr, offsets, p, o);
            }
        }
    };
    const char* names[3] = {"group/match", "group/ballot", "thread"};
    for (int s = 0; s < 3; ++s) {
        // The ballot groups hold block b's counter in lane b of the
        // group; a thread holds at most 8.
        if ((s == 1 && k > (1u << shift)) || (s == 2 && k > 8)) {
            continue;
        }
        char what[64];
        snprintf(what, sizeof what, "%s count", names[s]);
        trial(what, counts, want_counts, [&] { count(s); }, idx_bytes + ptr_bytes + cnt_bytes);
        snprintf(what, sizeof what, "%s place", names[s]);
        trial(what, perm, want_perm, [&] { place(s, false); }, idx_bytes * 2 + ptr_bytes + cnt_bytes);
        snprintf(what, sizeof what, "%s place+gather", names[s]);
        trial(what, idx_out, want_idx, [&] { place(s, true); }, idx_bytes * 2 + ptr_bytes + cnt_bytes);
    }
    // What the unfused placement pays after it, and the scan between.
    trial("gather of idx", idx_out, want_idx, [&] { gather<<<grid, BLOCK>>>(perm, idx, nnz, idx_out); },
          idx_bytes * 3);
    report("scan of the counts (CUB)", median_ms([&] {
               cub::DeviceScan::ExclusiveSum(scan_tmp, scan_bytes, counts, scanned, want_counts.size());
           }),
           cnt_bytes * 2);
    // The digest of ptr and idx, as the plan cache's key takes it.
    unsigned long long* h;
    CK(cudaMalloc(&h, 8));
    report("digest, a mix a word", median_ms([&] {
               hash1<<<grid, BLOCK>>>(ptr, n + 1, 1, h);
               hash1<<<grid, BLOCK>>>(idx, nnz, 2, h);
           }),
           idx_bytes + ptr_bytes);
    report("digest, a mix per 4 words", median_ms([&] {
               hash4<<<grid, BLOCK>>>(ptr, n + 1, 1, h);
               hash4<<<grid, BLOCK>>>(idx, nnz, 2, h);
           }),
           idx_bytes + ptr_bytes);
    float copy = median_ms([&] { CK(cudaMemcpyAsync(idx_out, idx, nnz * 4, cudaMemcpyDeviceToDevice)); });
    report("copy of idx (the bound)", copy, idx_bytes * 2);
    for (void* p : {(void*)ptr, (void*)idx, (void*)offsets, (void*)counts, (void*)scanned, (void*)perm,
                    (void*)idx_out, scan_tmp, (void*)h}) {
        CK(cudaFree(p));
    }
}

int main(int argc, char** argv) {
    const int scale = argc > 1 ? atoi(argv[1]) : 24;
    const uint32_t k = argc > 2 ? uint32_t(atoi(argv[2])) : 3;
    if (scale < 10 || scale > 26 || k < 1 || k > KMAX) {
        printf("usage: plan_layouts [scale 10..26] [k 1..32]\n");
        return 2;
    }
    const uint64_t n = 1ull << scale;
    run("uniform", make(n, 16, false, 1), k);
    run("power law", make(n, 16, true, 2), k);
    return 0;
}

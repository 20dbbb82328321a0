// warpfit device library: cache-fit plans made on the device from the
// range and index arrays already there.
//
//   cb_count:    per task t and column block b, the fine tasks of t whose
//                gathered element falls in b, written part-major
//                (`counts[b * n + t]`): a warp per task, one counter per
//                block in shared memory;
//   scan_*:      an exclusive scan of u32 words in place (tile sums,
//                one block over the sums, tiles again), so that the
//                scanned counts are every block's range array at once:
//                block b's is `counts[b * n .. b * n + n + 1]`;
//   cb_place:    the plan's fine-task permutation (`perm[new] = old`):
//                each task's fine tasks grouped by block, in their order
//                within a block (a stable counting sort per task: lanes
//                that fall in the same block are ranked by
//                `__match_any_sync`);
//   rows_*:      a task renumbering's range array and fine-task
//                permutation (new task r is old task order[r], its fine
//                tasks in the order stored);
//   locality:    of sampled warps of 32 consecutive tasks, the gathers
//                each step of theirs makes and the distinct cache lines
//                they touch (the model `auto` decides by);
//   hash_words:  a position-dependent 64-bit digest of an array's words
//                (the plan cache's key).
//
// Every index read from an array is checked against the array it
// addresses; one out of range sets `*bad` and moves nothing for it.
// Grid-stride loops: any grid size is correct. Column blocks are at most
// `CB_MAX_BLOCKS`, which keeps a warp's counters in one word per lane.
#pragma once
#include "warpfit/scan.cuh"
#include "warpfit/types.cuh"

namespace warpfit {
namespace plan {

/// The most column blocks a device plan makes: one counter per lane.
constexpr uint32_t CB_MAX_BLOCKS = 32;

/// Task t's fine tasks `[*lo, *hi)`, or false (the flag set) when the
/// range array is corrupt there.
__device__ __forceinline__ bool range_of(const uint32_t* ptr, uint64_t t, uint64_t nnz, uint32_t* bad,
                                         uint32_t* lo, uint32_t* hi) {
    *lo = ptr[t];
    *hi = ptr[t + 1];
    if (*lo > *hi || *hi > nnz) {
        *bad = 1;
        return false;
    }
    return true;
}

/// The column block of gathered element `g`: blocks of `width`, the last
/// taking the rest.
__device__ __forceinline__ uint32_t block_of(uint32_t g, uint32_t width, uint32_t k) {
    const uint32_t b = g / width;
    return b < k ? b : k - 1;
}

__device__ __forceinline__ void cb_count(const uint32_t* ptr, const uint32_t* idx, uint64_t n, uint64_t nnz,
                                         uint64_t n_gathered, uint32_t width, uint32_t k, uint32_t* counts,
                                         uint32_t* bad) {
    __shared__ uint32_t per_block[WARPS_PER_BLOCK][CB_MAX_BLOCKS];
    const uint64_t warps = uint64_t(gridDim.x) * WARPS_PER_BLOCK;
    const uint32_t lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
    for (uint64_t t = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) / WARP; t < n; t += warps) {
        per_block[w][lane] = 0;
        __syncwarp();
        uint32_t lo, hi;
        if (range_of(ptr, t, nnz, bad, &lo, &hi)) {
            for (uint32_t base = lo; base < hi; base += WARP) {
                const uint32_t e = base + lane;
                const bool live = e < hi;
                uint32_t b = CB_MAX_BLOCKS;
                if (live) {
                    const uint32_t g = idx[e];
                    if (g < n_gathered) {
                        b = block_of(g, width, k);
                    } else {
                        *bad = 1;
                    }
                }
                const unsigned peers = __match_any_sync(FULL_MASK, b);
                if (b < CB_MAX_BLOCKS && lane == uint32_t(__ffs(peers) - 1)) {
                    per_block[w][b] += __popc(peers);
                }
                __syncwarp();
            }
        }
        if (lane < k) {
            counts[uint64_t(lane) * n + t] = per_block[w][lane];
        }
        __syncwarp();
    }
}

__device__ __forceinline__ void cb_place(const uint32_t* ptr, const uint32_t* idx, uint64_t n, uint64_t nnz,
                                         uint64_t n_gathered, uint32_t width, uint32_t k, const uint32_t* offsets,
                                         uint32_t* perm, uint32_t* bad) {
    __shared__ uint32_t cursor[WARPS_PER_BLOCK][CB_MAX_BLOCKS];
    const uint64_t warps = uint64_t(gridDim.x) * WARPS_PER_BLOCK;
    const uint32_t lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
    const unsigned below = (1u << lane) - 1;
    for (uint64_t t = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) / WARP; t < n; t += warps) {
        cursor[w][lane] = lane < k ? offsets[uint64_t(lane) * n + t] : 0;
        __syncwarp();
        uint32_t lo, hi;
        if (range_of(ptr, t, nnz, bad, &lo, &hi)) {
            for (uint32_t base = lo; base < hi; base += WARP) {
                const uint32_t e = base + lane;
                uint32_t b = CB_MAX_BLOCKS;
                if (e < hi) {
                    const uint32_t g = idx[e];
                    b = g < n_gathered ? block_of(g, width, k) : CB_MAX_BLOCKS;
                }
                const unsigned peers = __match_any_sync(FULL_MASK, b);
                if (b < CB_MAX_BLOCKS) {
                    const uint32_t at = cursor[w][b] + __popc(peers & below);
                    if (at < nnz) {
                        perm[at] = e;
                    } else {
                        *bad = 1;
                    }
                }
                __syncwarp();
                if (b < CB_MAX_BLOCKS && lane == uint32_t(__ffs(peers) - 1)) {
                    cursor[w][b] += __popc(peers);
                }
                __syncwarp();
            }
        }
    }
}

/// `lengths[r]` of old task `order[r]` for every new task r < n.
__device__ __forceinline__ void rows_lengths(const uint32_t* ptr, const uint32_t* order, uint64_t n, uint64_t nnz,
                                             uint32_t* lengths, uint32_t* bad) {
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    for (uint64_t r = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; r < n; r += stride) {
        const uint32_t v = order[r];
        uint32_t lo = 0, hi = 0;
        if (v >= n) {
            *bad = 1;
        } else {
            range_of(ptr, v, nnz, bad, &lo, &hi);
        }
        lengths[r] = hi >= lo ? hi - lo : 0;
    }
}

/// Lanes that copy one task's fine-task range in `rows_perm`: the tasks a
/// renumbering is made for (mesh and geometric-graph rows, the level order
/// has no hubs) hold 7 to 30 entries, which left most of a warp idle.
constexpr uint32_t ROWS_GROUP = 8;

/// A group of ROWS_GROUP lanes per new task r:
/// `perm[new_ptr[r] + j] = ptr[order[r]] + j`.
__device__ __forceinline__ void rows_perm(const uint32_t* ptr, const uint32_t* order, const uint32_t* new_ptr,
                                          uint64_t n, uint64_t nnz, uint32_t* perm, uint32_t* bad) {
    const uint64_t groups = uint64_t(gridDim.x) * (BLOCK / ROWS_GROUP);
    const uint32_t g = threadIdx.x % ROWS_GROUP;
    for (uint64_t r = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) / ROWS_GROUP; r < n; r += groups) {
        const uint32_t v = order[r];
        uint32_t lo, hi;
        if (v >= n || !range_of(ptr, v, nnz, bad, &lo, &hi) || uint64_t(new_ptr[r]) + (hi - lo) > nnz) {
            if (g == 0) {
                *bad = 1;
            }
            continue;
        }
        const uint64_t d = new_ptr[r];
        for (uint64_t j = g; j < hi - lo; j += ROWS_GROUP) {
            perm[d + j] = uint32_t(lo + j);
        }
    }
}

/// Warp s of `samples` takes the 32 tasks from `s * stride` (a lane each)
/// and walks their fine tasks in step, as a CTE warp of short tasks does:
/// per step, `out[0] += ` the gathers made and `out[1] += ` the distinct
/// lines of `line` elements they touch.
__device__ __forceinline__ void locality(const uint32_t* ptr, const uint32_t* idx, uint64_t n, uint64_t nnz,
                                         uint64_t samples, uint64_t stride, uint32_t line, uint32_t max_steps,
                                         unsigned long long* out, uint32_t* bad) {
    const uint64_t warps = uint64_t(gridDim.x) * WARPS_PER_BLOCK;
    const uint32_t lane = threadIdx.x % WARP;
    for (uint64_t s = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) / WARP; s < samples; s += warps) {
        const uint64_t t = s * stride + lane;
        uint32_t lo = 0, hi = 0;
        if (t < n) {
            range_of(ptr, t, nnz, bad, &lo, &hi);
            hi = hi >= lo ? hi : lo;
        }
        const uint32_t mine = hi - lo;
        uint32_t longest = mine;
        for (int d = WARP / 2; d > 0; d /= 2) {
            longest = max(longest, __shfl_xor_sync(FULL_MASK, longest, d));
        }
        longest = min(longest, max_steps);
        unsigned long long gathers = 0, lines = 0;
        for (uint32_t j = 0; j < longest; ++j) {
            const bool live = j < mine;
            const uint32_t l = live ? idx[lo + j] / line : 0xffffffffu;
            const unsigned peers = __match_any_sync(FULL_MASK, l);
            if (live) {
                gathers += 1;
                lines += lane == uint32_t(__ffs(peers) - 1) ? 1 : 0;
            }
        }
        for (int d = WARP / 2; d > 0; d /= 2) {
            gathers += __shfl_xor_sync(FULL_MASK, gathers, d);
            lines += __shfl_xor_sync(FULL_MASK, lines, d);
        }
        if (lane == 0) {
            atomicAdd(&out[0], gathers);
            atomicAdd(&out[1], lines);
        }
    }
}

/// A 64-bit mix (the finaliser of SplitMix64).
__device__ __forceinline__ uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/// `*out += Σ mix(seed + i · φ ^ words[i])` over the words: a digest that
/// depends on every word and its position (a sum, so blocks may add in
/// any order).
__device__ __forceinline__ void hash_words(const uint32_t* words, uint64_t n, uint64_t seed,
                                           unsigned long long* out) {
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    uint64_t h = 0;
    for (uint64_t i = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; i < n; i += stride) {
        h += mix((seed + i * 0x9e3779b97f4a7c15ull) ^ uint64_t(words[i]));
    }
    for (int d = WARP / 2; d > 0; d /= 2) {
        h += __shfl_xor_sync(FULL_MASK, h, d);
    }
    if (threadIdx.x % WARP == 0) {
        atomicAdd(out, (unsigned long long)h);
    }
}

}  // namespace plan
}  // namespace warpfit

/// Every device planning entry point.
#define WARPFIT_PLAN_ENTRY_POINTS                                                                                \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_cb_count(const uint32_t* ptr, const uint32_t* idx, uint64_t n, uint64_t nnz, uint64_t n_gathered,     \
                    uint64_t width, uint64_t k, uint32_t* counts, uint32_t* bad) {                               \
        warpfit::plan::cb_count(ptr, idx, n, nnz, n_gathered, uint32_t(width), uint32_t(k), counts, bad);        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_cb_place(const uint32_t* ptr, const uint32_t* idx, uint64_t n, uint64_t nnz, uint64_t n_gathered,     \
                    uint64_t width, uint64_t k, const uint32_t* offsets, uint32_t* perm, uint32_t* bad) {        \
        warpfit::plan::cb_place(ptr, idx, n, nnz, n_gathered, uint32_t(width), uint32_t(k), offsets, perm, bad); \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_scan_reduce(const uint32_t* v, uint64_t len, uint32_t* tile_sums) {                                   \
        warpfit::scan_reduce(v, len, tile_sums);                                                           \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_scan_sums(uint32_t* tile_sums, uint64_t tiles, uint32_t* sum) {                                       \
        const uint32_t s = warpfit::scan_tiles(tile_sums, tiles);                                           \
        if (threadIdx.x == 0) {                                                                                  \
            *sum = s;                                                                                            \
        }                                                                                                        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_scan_apply(uint32_t* v, uint64_t len, const uint32_t* tile_sums) {                                    \
        warpfit::scan_apply(v, len, tile_sums);                                                            \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_rows_lengths(const uint32_t* ptr, const uint32_t* order, uint64_t n, uint64_t nnz, uint32_t* lengths, \
                        uint32_t* bad) {                                                                         \
        warpfit::plan::rows_lengths(ptr, order, n, nnz, lengths, bad);                                           \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_rows_perm(const uint32_t* ptr, const uint32_t* order, const uint32_t* new_ptr, uint64_t n,            \
                     uint64_t nnz, uint32_t* perm, uint32_t* bad) {                                              \
        warpfit::plan::rows_perm(ptr, order, new_ptr, n, nnz, perm, bad);                                        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_locality(const uint32_t* ptr, const uint32_t* idx, uint64_t n, uint64_t nnz, uint64_t samples,        \
                    uint64_t stride, uint64_t line, uint64_t max_steps, unsigned long long* out, uint32_t* bad) { \
        warpfit::plan::locality(ptr, idx, n, nnz, samples, stride, uint32_t(line), uint32_t(max_steps), out,     \
                                bad);                                                                            \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_hash_words(const uint32_t* words, uint64_t n, uint64_t seed, unsigned long long* out) {               \
        warpfit::plan::hash_words(words, n, seed, out);                                                          \
    }

// warpfit device library: cache-fit plans made on the device from the
// range and index arrays already there.
//
//   cb_count:    per task t and column block b, the fine tasks of t whose
//                gathered element falls in b, written part-major
//                (`counts[b * n + t]`): a group of 8, 16 or 32 lanes per
//                task, one counter per block in shared memory;
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
//                (the plan cache's key, and the check of a level order
//                it kept);
//   invert_order, check_inverse: a level order read back from the plan
//                cache inverted (`position[order[r]] = r`), then
//                checked to be a permutation of the rows.
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

/// Lanes per task of the column blocks' kernels: `1 << shift` of 8, 16 or
/// 32 (the host picks the smallest power at least the mean task length),
/// so that short tasks share a warp instead of leaving most lanes idle.
constexpr uint32_t CB_MIN_GROUP_SHIFT = 3;
constexpr uint32_t CB_GROUPS_PER_WARP = WARP >> CB_MIN_GROUP_SHIFT;

/// The group of `1 << shift` lanes of this thread, and its task's loop: a
/// task per group, the warp stepping together through its longest task
/// (`__match_any_sync` needs every lane), each lane taking fine task
/// `lo + step·G + its lane in the group`. `body(t, e, live, key_base)`
/// runs each step; `start(t)` and `end(t)` before and after each task
/// (every lane, its group's task, or `n` past the end).
template <class Start, class Body, class End>
__device__ __forceinline__ void cb_tasks(const uint32_t* ptr, uint64_t n, uint64_t nnz, uint32_t shift,
                                         uint32_t* bad, Start start, Body body, End end) {
    const uint32_t lane = threadIdx.x % WARP;
    const uint32_t group = lane >> shift, in_group = lane & ((1u << shift) - 1);
    const uint64_t per_warp = WARP >> shift;
    const uint64_t warps = uint64_t(gridDim.x) * WARPS_PER_BLOCK;
    const uint64_t warp = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) / WARP;
    for (uint64_t first = warp * per_warp; first < n; first += warps * per_warp) {
        const uint64_t t = first + group;
        start(t < n ? t : n);
        uint32_t lo = 0, hi = 0;
        if (t < n && !range_of(ptr, t, nnz, bad, &lo, &hi)) {
            lo = hi = 0;
        }
        const uint32_t steps = ((hi - lo) + (1u << shift) - 1) >> shift;
        const uint32_t most = __reduce_max_sync(FULL_MASK, steps);
        for (uint32_t step = 0; step < most; ++step) {
            const uint32_t e = lo + (step << shift) + in_group;
            body(t, e, e < hi, group * (CB_MAX_BLOCKS + 1));
        }
        end(t < n ? t : n);
    }
}

/// The block of fine task `e`, or `CB_MAX_BLOCKS` where it is not `live`
/// or its index is out of range (the flag set).
__device__ __forceinline__ uint32_t cb_block(const uint32_t* idx, uint32_t e, bool live, uint64_t n_gathered,
                                             uint32_t width, uint32_t k, uint32_t* bad) {
    uint32_t b = CB_MAX_BLOCKS;
    if (live) {
        const uint32_t g = idx[e];
        if (g < n_gathered) {
            b = block_of(g, width, k);
        } else {
            *bad = 1;
        }
    }
    return b;
}

__device__ __forceinline__ void cb_count(const uint32_t* ptr, const uint32_t* idx, uint64_t n, uint64_t nnz,
                                         uint64_t n_gathered, uint32_t width, uint32_t k, uint32_t shift,
                                         uint32_t* counts, uint32_t* bad) {
    __shared__ uint32_t per_block[WARPS_PER_BLOCK * CB_GROUPS_PER_WARP][CB_MAX_BLOCKS];
    const uint32_t lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
    const uint32_t g_size = 1u << shift, in_group = lane & (g_size - 1);
    uint32_t* mine = per_block[w * CB_GROUPS_PER_WARP + (lane >> shift)];
    cb_tasks(
        ptr, n, nnz, shift, bad,
        [&](uint64_t) {
            for (uint32_t b = in_group; b < CB_MAX_BLOCKS; b += g_size) {
                mine[b] = 0;
            }
            __syncwarp();
        },
        [&](uint64_t, uint32_t e, bool live, uint32_t key_base) {
            const uint32_t b = cb_block(idx, e, live, n_gathered, width, k, bad);
            const unsigned peers = __match_any_sync(FULL_MASK, key_base + b);
            if (b < CB_MAX_BLOCKS && lane == uint32_t(__ffs(peers) - 1)) {
                mine[b] += __popc(peers);
            }
            __syncwarp();
        },
        [&](uint64_t t) {
            if (t < n) {
                for (uint32_t b = in_group; b < k; b += g_size) {
                    counts[uint64_t(b) * n + t] = mine[b];
                }
            }
            __syncwarp();
        });
}

__device__ __forceinline__ void cb_place(const uint32_t* ptr, const uint32_t* idx, uint64_t n, uint64_t nnz,
                                         uint64_t n_gathered, uint32_t width, uint32_t k, uint32_t shift,
                                         const uint32_t* offsets, uint32_t* perm, uint32_t* bad) {
    __shared__ uint32_t cursor[WARPS_PER_BLOCK * CB_GROUPS_PER_WARP][CB_MAX_BLOCKS];
    const uint32_t lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
    const uint32_t g_size = 1u << shift, in_group = lane & (g_size - 1);
    const unsigned below = (1u << lane) - 1;
    uint32_t* mine = cursor[w * CB_GROUPS_PER_WARP + (lane >> shift)];
    cb_tasks(
        ptr, n, nnz, shift, bad,
        [&](uint64_t t) {
            if (t < n) {
                for (uint32_t b = in_group; b < k; b += g_size) {
                    mine[b] = offsets[uint64_t(b) * n + t];
                }
            }
            __syncwarp();
        },
        [&](uint64_t, uint32_t e, bool live, uint32_t key_base) {
            const uint32_t b = cb_block(idx, e, live, n_gathered, width, k, bad);
            // Lanes of other groups have other keys: `peers` is this
            // group's lanes in the same block, ranked in fine-task order.
            const unsigned peers = __match_any_sync(FULL_MASK, key_base + b);
            if (b < CB_MAX_BLOCKS) {
                const uint32_t at = mine[b] + __popc(peers & below);
                if (at < nnz) {
                    perm[at] = e;
                } else {
                    *bad = 1;
                }
            }
            __syncwarp();
            if (b < CB_MAX_BLOCKS && lane == uint32_t(__ffs(peers) - 1)) {
                mine[b] += __popc(peers);
            }
            __syncwarp();
        },
        [&](uint64_t) {});
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

/// `position[order[r]] = r` for every row `r`; an entry of `order` out of
/// range sets `*bad` and writes nothing.
__device__ __forceinline__ void invert_order(const uint32_t* order, uint64_t n, uint32_t* position, uint32_t* bad) {
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    for (uint64_t r = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; r < n; r += stride) {
        const uint32_t old = order[r];
        if (old < n) {
            position[old] = uint32_t(r);
        } else {
            *bad = 1;
        }
    }
}

/// Sets `*bad` where `order[position[j]] != j`. After `invert_order` over
/// a `position` whose every entry is below `n` (zeroed), nothing is set
/// exactly when `order` is a permutation: a row `j` missing from it keeps
/// a position whose entry of `order` is another row.
__device__ __forceinline__ void check_inverse(const uint32_t* order, const uint32_t* position, uint64_t n,
                                              uint32_t* bad) {
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    for (uint64_t j = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; j < n; j += stride) {
        const uint32_t at = position[j];
        if (at >= n || order[at] != j) {
            *bad = 1;
        }
    }
}

}  // namespace plan
}  // namespace warpfit

/// Every device planning entry point.
#define WARPFIT_PLAN_ENTRY_POINTS                                                                                \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_cb_count(const uint32_t* ptr, const uint32_t* idx, uint64_t n, uint64_t nnz, uint64_t n_gathered,     \
                    uint64_t width, uint64_t k, uint64_t shift, uint32_t* counts, uint32_t* bad) {               \
        warpfit::plan::cb_count(ptr, idx, n, nnz, n_gathered, uint32_t(width), uint32_t(k), uint32_t(shift),     \
                                counts, bad);                                                                    \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_cb_place(const uint32_t* ptr, const uint32_t* idx, uint64_t n, uint64_t nnz, uint64_t n_gathered,     \
                    uint64_t width, uint64_t k, uint64_t shift, const uint32_t* offsets, uint32_t* perm,         \
                    uint32_t* bad) {                                                                             \
        warpfit::plan::cb_place(ptr, idx, n, nnz, n_gathered, uint32_t(width), uint32_t(k), uint32_t(shift),     \
                                offsets, perm, bad);                                                             \
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
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_invert_order(const uint32_t* order, uint64_t n, uint32_t* position, uint32_t* bad) {                  \
        warpfit::plan::invert_order(order, n, position, bad);                                                    \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_check_inverse(const uint32_t* order, const uint32_t* position, uint64_t n, uint32_t* bad) {           \
        warpfit::plan::check_inverse(order, position, n, bad);                                                   \
    }

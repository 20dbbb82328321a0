// warpfit device library: a launch's task list cut on the device from the
// size kernel's ranges, the same list the host cut makes
// (`TaskList::chunked`, `launch_steps::pack_warps` and `whole_runs`), so
// that a launch over tens of millions of rows is prepared without reading
// its ranges back:
//
//   cut_count:  per task, its pieces of at most `max_len` fine tasks (an
//               empty task keeps one) and whether it is split; flags
//               ranges that do not follow one another (the host cut
//               takes those) or that reach u32::MAX (refused);
//   cut_write:  the segments, their whole flags, the split tasks and
//               their segment ids, from the scanned piece counts, and
//               for a 2-D kernel's column list each split segment's
//               position among the split segments (its scratch slot);
//   pack_count, pack_write: CTE warp groups packed greedily by work, one
//               thread per chunk of PACK_CHUNK segments (a group never
//               spans two chunks, on the host as here), so that each
//               chunk packs on its own;
//   pack_runs:  per group, its first task when it holds whole
//               consecutive tasks only, else u32::MAX.
//
// The offsets come from the device-wide scan of scan.cuh. Grid-stride
// loops: any grid size is correct.
#pragma once
#include "warpfit/scan.cuh"
#include "warpfit/types.cuh"

namespace warpfit {
namespace cut {

/// Segments one packing thread groups; a chunk boundary always starts a
/// group (`launch_steps::PACK_CHUNK` on the host).
constexpr uint64_t PACK_CHUNK = 2048;
/// `flags` bits: a task's range does not start where the one before it
/// ends; an index saturated to u32::MAX by the size kernel.
constexpr uint32_t NOT_CONTIGUOUS = 1;
constexpr uint32_t SATURATED = 2;

/// Task t's range as the host cut reads it: `hi` below `lo` is empty.
__device__ __forceinline__ void range_of(const uint32_t* ranges, uint64_t t, uint32_t* lo, uint32_t* hi) {
    *lo = ranges[2 * t];
    const uint32_t h = ranges[2 * t + 1];
    *hi = h > *lo ? h : *lo;
}

/// `info[0]` gets the flags, `info[1]` the most pieces of a task.
__device__ __forceinline__ void cut_count(const uint32_t* ranges, uint64_t n, uint32_t max_len, uint32_t* pieces,
                                          uint32_t* split, uint32_t* info) {
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    uint32_t most = 0;
    for (uint64_t t = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; t < n; t += stride) {
        uint32_t lo, hi;
        range_of(ranges, t, &lo, &hi);
        if (ranges[2 * t] == 0xffffffffu || ranges[2 * t + 1] == 0xffffffffu) {
            atomicOr(&info[0], SATURATED);
        }
        if (t > 0) {
            uint32_t plo, phi;
            range_of(ranges, t - 1, &plo, &phi);
            if (phi != lo) {
                atomicOr(&info[0], NOT_CONTIGUOUS);
            }
        }
        const uint32_t len = hi - lo;
        const uint32_t p = len == 0 ? 1 : (len - 1) / max_len + 1;
        pieces[t] = p;
        split[t] = p > 1 ? 1 : 0;
        most = p > most ? p : most;
    }
    for (int d = WARP / 2; d > 0; d >>= 1) {
        const uint32_t o = __shfl_xor_sync(FULL_MASK, most, d);
        most = o > most ? o : most;
    }
    if (threadIdx.x % WARP == 0 && most > 0) {
        atomicMax(&info[1], most);
    }
}

/// From `seg_off` (pieces scanned, `n + 1` words) and `split_at` (split
/// flags scanned): task t's segments start at `seg_off[t]`; a split task
/// is split task `split_at[t]`, and the split segments before it are
/// `seg_off[t] - (t - split_at[t])` (every whole task before it has one).
/// `slots` (null: none) gets each split segment's position in
/// `split_segments`.
__device__ __forceinline__ void cut_write(const uint32_t* ranges, uint64_t n, uint32_t max_len,
                                          const uint32_t* seg_off, const uint32_t* split_at, uint32_t* segments,
                                          uint8_t* whole, uint32_t* split_tasks, uint32_t* split_segments,
                                          uint32_t* slots) {
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    for (uint64_t t = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; t < n; t += stride) {
        uint32_t lo, hi;
        range_of(ranges, t, &lo, &hi);
        const uint32_t off = seg_off[t], p = seg_off[t + 1] - off;
        for (uint32_t k = 0; k < p; ++k) {
            // (p - 1) * max_len < hi - lo: no start overflows.
            const uint32_t s = lo + k * max_len;
            const uint32_t e = hi - s > max_len ? s + max_len : hi;
            const uint64_t at = uint64_t(off) + k;
            segments[3 * at] = uint32_t(t);
            segments[3 * at + 1] = s;
            segments[3 * at + 2] = e;
            whole[at] = p == 1 ? 1 : 0;
        }
        if (p > 1) {
            const uint32_t i = split_at[t];
            const uint32_t first = off - (uint32_t(t) - i);
            split_tasks[3 * uint64_t(i)] = uint32_t(t);
            split_tasks[3 * uint64_t(i) + 1] = first;
            split_tasks[3 * uint64_t(i) + 2] = p;
            for (uint32_t k = 0; k < p; ++k) {
                split_segments[uint64_t(first) + k] = off + k;
                if (slots != nullptr) {
                    slots[uint64_t(off) + k] = first + k;
                }
            }
        }
    }
}

/// The greedy packing of chunk c: calls `group(i)` with the first segment
/// of each of its groups; returns the number of groups.
template <class Group>
__device__ __forceinline__ uint32_t pack_chunk(const uint32_t* segments, uint64_t n_seg, uint64_t c, uint32_t budget,
                                               Group group) {
    const uint64_t b = c * PACK_CHUNK, e = b + PACK_CHUNK < n_seg ? b + PACK_CHUNK : n_seg;
    uint32_t groups = 0, count = 0;
    uint64_t work = 0;
    for (uint64_t i = b; i < e; ++i) {
        const uint32_t lo = segments[3 * i + 1], hi = segments[3 * i + 2];
        const uint64_t len = hi > lo ? hi - lo : 0;
        if (count == 0 || count == WARP || work + len > budget) {
            group(i, groups);
            ++groups;
            count = 0;
            work = 0;
        }
        ++count;
        work += len;
    }
    return groups;
}

__device__ __forceinline__ void pack_count(const uint32_t* segments, uint64_t n_seg, uint32_t budget,
                                           uint32_t* counts) {
    const uint64_t chunks = (n_seg + PACK_CHUNK - 1) / PACK_CHUNK;
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    for (uint64_t c = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; c < chunks; c += stride) {
        counts[c] = pack_chunk(segments, n_seg, c, budget, [](uint64_t, uint32_t) {});
    }
}

/// `first[group_off[c] + g]`: chunk c's g-th group's first segment; the
/// last chunk also writes the end, `first[groups] = n_seg`.
__device__ __forceinline__ void pack_write(const uint32_t* segments, uint64_t n_seg, uint32_t budget,
                                           const uint32_t* group_off, uint32_t* first) {
    const uint64_t chunks = (n_seg + PACK_CHUNK - 1) / PACK_CHUNK;
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    for (uint64_t c = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; c < chunks; c += stride) {
        const uint32_t off = group_off[c];
        const uint32_t groups =
            pack_chunk(segments, n_seg, c, budget, [&](uint64_t i, uint32_t g) { first[off + g] = uint32_t(i); });
        if (c + 1 == chunks) {
            first[off + groups] = uint32_t(n_seg);
        }
    }
}

__device__ __forceinline__ void pack_runs(const uint32_t* segments, const uint8_t* whole, const uint32_t* first,
                                          uint64_t n_groups, uint32_t* task) {
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    for (uint64_t g = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; g < n_groups; g += stride) {
        const uint32_t b = first[g], e = first[g + 1];
        const uint64_t t0 = segments[3 * uint64_t(b)];
        bool run = true;
        for (uint32_t i = b; i < e && run; ++i) {
            run = whole[i] != 0 && uint64_t(segments[3 * uint64_t(i)]) == t0 + (i - b);
        }
        task[g] = run ? uint32_t(t0) : 0xffffffffu;
    }
}

}  // namespace cut
}  // namespace warpfit

#define WARPFIT_TASK_CUT_ENTRY_POINTS                                                                              \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                   \
        wf_cut_count(const uint32_t* ranges, uint64_t n, uint64_t max_len, uint32_t* pieces, uint32_t* split,      \
                     uint32_t* info) {                                                                             \
        warpfit::cut::cut_count(ranges, n, uint32_t(max_len), pieces, split, info);                                \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                   \
        wf_cut_write(const uint32_t* ranges, uint64_t n, uint64_t max_len, const uint32_t* seg_off,                \
                     const uint32_t* split_at, uint32_t* segments, uint8_t* whole, uint32_t* split_tasks,          \
                     uint32_t* split_segments, uint32_t* slots) {                                                  \
        warpfit::cut::cut_write(ranges, n, uint32_t(max_len), seg_off, split_at, segments, whole, split_tasks,     \
                                split_segments, slots);                                                            \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                   \
        wf_pack_count(const uint32_t* segments, uint64_t n_seg, uint64_t budget, uint32_t* counts) {               \
        warpfit::cut::pack_count(segments, n_seg, uint32_t(budget), counts);                                       \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                   \
        wf_pack_write(const uint32_t* segments, uint64_t n_seg, uint64_t budget, const uint32_t* group_off,        \
                      uint32_t* first) {                                                                           \
        warpfit::cut::pack_write(segments, n_seg, uint32_t(budget), group_off, first);                             \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                   \
        wf_pack_runs(const uint32_t* segments, const uint8_t* whole, const uint32_t* first, uint64_t n_groups,     \
                     uint32_t* task) {                                                                             \
        warpfit::cut::pack_runs(segments, whole, first, n_groups, task);                                           \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                   \
        wf_cut_scan_reduce(const uint32_t* v, uint64_t len, uint32_t* tile_sums) {                                 \
        warpfit::scan_reduce(v, len, tile_sums);                                                                   \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                   \
        wf_cut_scan_sums(uint32_t* tile_sums, uint64_t tiles, uint32_t* sum) {                                     \
        const uint32_t s = warpfit::scan_tiles(tile_sums, tiles);                                                  \
        if (threadIdx.x == 0) {                                                                                    \
            *sum = s;                                                                                              \
        }                                                                                                          \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                   \
        wf_cut_scan_apply(uint32_t* v, uint64_t len, const uint32_t* tile_sums) {                                  \
        warpfit::scan_apply(v, len, tile_sums);                                                                    \
    }

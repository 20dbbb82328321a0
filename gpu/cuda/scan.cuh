// warpfit device library: exclusive scans of u32 words: one value per
// thread over a block (`block_exclusive_scan`), and the three passes of a
// reduce-then-scan over the device (`scan_reduce`: each tile's sum;
// `scan_tiles`: the tile sums scanned in place by a single block;
// `scan_apply`: each tile's words replaced by their exclusive prefix). The
// level order, the device planner and the device task cut build their
// offsets with these.
#pragma once
#include "warpfit/types.cuh"

namespace warpfit {

/// Exclusive scan of one value per thread over the block, in thread order;
/// `*total` is the block's sum. Every thread of the block calls it.
__device__ __forceinline__ uint32_t block_exclusive_scan(uint32_t v, uint32_t* total) {
    __shared__ uint32_t warp_sums[WARPS_PER_BLOCK];
    const int lane = int(threadIdx.x) % WARP, w = int(threadIdx.x) / WARP;
    uint32_t incl = v;
    for (int d = 1; d < WARP; d <<= 1) {
        const uint32_t t = __shfl_up_sync(FULL_MASK, incl, d);
        if (lane >= d) {
            incl += t;
        }
    }
    if (lane == WARP - 1) {
        warp_sums[w] = incl;
    }
    __syncthreads();
    uint32_t before = 0, sum = 0;
    for (int i = 0; i < WARPS_PER_BLOCK; ++i) {
        const uint32_t s = warp_sums[i];
        before += i < w ? s : 0;
        sum += s;
    }
    // `warp_sums` is rewritten by the next call.
    __syncthreads();
    *total = sum;
    return before + incl - v;
}

/// One block: `tile_sums[0 .. tiles)` scanned in place (exclusive); the sum.
__device__ __forceinline__ uint32_t scan_tiles(uint32_t* tile_sums, uint64_t tiles) {
    uint32_t carry = 0;
    for (uint64_t base = 0; base < tiles; base += BLOCK) {
        const uint64_t t = base + threadIdx.x;
        const uint32_t v = t < tiles ? tile_sums[t] : 0;
        uint32_t total;
        const uint32_t ex = block_exclusive_scan(v, &total);
        if (t < tiles) {
            tile_sums[t] = carry + ex;
        }
        carry += total;
    }
    return carry;
}

/// Words per tile of the device-wide scan: ITEMS consecutive words per thread.
constexpr int SCAN_ITEMS = 8;
constexpr uint64_t SCAN_TILE = uint64_t(BLOCK) * SCAN_ITEMS;

/// Per tile of SCAN_TILE words: its sum.
__device__ __forceinline__ void scan_reduce(const uint32_t* v, uint64_t len, uint32_t* tile_sums) {
    for (uint64_t tile = blockIdx.x; tile * SCAN_TILE < len; tile += gridDim.x) {
        const uint64_t first = tile * SCAN_TILE + uint64_t(threadIdx.x) * SCAN_ITEMS;
        uint32_t s = 0;
        for (int i = 0; i < SCAN_ITEMS; ++i) {
            s += first + i < len ? v[first + i] : 0;
        }
        uint32_t total;
        block_exclusive_scan(s, &total);
        if (threadIdx.x == 0) {
            tile_sums[tile] = total;
        }
    }
}

/// Per tile: its words replaced by their exclusive prefix, from the
/// scanned tile sums.
__device__ __forceinline__ void scan_apply(uint32_t* v, uint64_t len, const uint32_t* tile_sums) {
    for (uint64_t tile = blockIdx.x; tile * SCAN_TILE < len; tile += gridDim.x) {
        const uint64_t first = tile * SCAN_TILE + uint64_t(threadIdx.x) * SCAN_ITEMS;
        uint32_t items[SCAN_ITEMS];
        uint32_t s = 0;
        for (int i = 0; i < SCAN_ITEMS; ++i) {
            items[i] = first + i < len ? v[first + i] : 0;
            s += items[i];
        }
        uint32_t total;
        uint32_t at = tile_sums[tile] + block_exclusive_scan(s, &total);
        for (int i = 0; i < SCAN_ITEMS; ++i) {
            if (first + i < len) {
                v[first + i] = at;
            }
            at += items[i];
        }
    }
}

}  // namespace warpfit

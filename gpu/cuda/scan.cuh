// warpfit device library: exclusive scans of u32 words by one block: one
// value per thread (`block_exclusive_scan`), and an array of tile sums
// scanned in place by a single block (`scan_tiles`), the middle pass of a
// reduce-then-scan over the device. The level order and the device
// planner build their offsets with these.
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

}  // namespace warpfit

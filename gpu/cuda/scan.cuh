// warpfit device library: exclusive scans of u32 words: one value per
// thread over a block (`block_exclusive_scan`), and the three passes of a
// reduce-then-scan over the device (`scan_reduce`: each tile's sum;
// `scan_tiles`: the tile sums scanned in place by a single block;
// `scan_apply`: each tile's words replaced by their exclusive prefix), and
// a tile's prefix by decoupled look-back within one pass
// (`tile_exclusive_prefix`). The level order, the device planner and the
// device task cut build their offsets with these.
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

/// A look-back word's flag: the value is the tile's inclusive prefix (else
/// its sum alone).
constexpr unsigned long long LOOKBACK_PREFIX = 1ull << 32;
/// Pass stamps run 1 ..= LOOKBACK_STAMPS; 0 is a word never published.
constexpr uint32_t LOOKBACK_STAMPS = 0x7fffffffu;

/// A look-back word: the pass's stamp, the flag, the value.
__device__ __forceinline__ unsigned long long lookback_word(uint32_t stamp, bool prefix, uint32_t v) {
    return (static_cast<unsigned long long>(stamp) << 33) | (prefix ? LOOKBACK_PREFIX : 0ull) | v;
}

/// The stamp of the pass after `stamp`.
__device__ __forceinline__ uint32_t next_lookback_stamp(uint32_t stamp) {
    return stamp % LOOKBACK_STAMPS + 1;
}

/// Tile `t`'s exclusive prefix over the sums of tiles `0 .. t` of one pass,
/// by decoupled look-back (Merrill and Garland, "Single-pass Parallel
/// Prefix Scan with Decoupled Look-back", 2016): the tile publishes its
/// `sum` in `words[t]`, adds its predecessors' words from the nearest back
/// (a warp reads 32 at a time) up to the first that holds an inclusive
/// prefix, then publishes its own inclusive prefix. Words carry the pass's
/// `stamp`, so a word left from another pass reads as not yet published
/// and no pass resets them (a caller running more than 2^30 passes over
/// one array zeroes it between). Every thread of the block calls it.
///
/// The tiles must be handed out in order by an atomic counter to blocks
/// that are running: a tile then only waits for tiles taken earlier by
/// running blocks, each of which publishes its sum before it waits for
/// anything, so no wait is on a block that cannot start. A tool that
/// schedules blocks itself may not run the one waited for: the level
/// order's test makes no progress under compute-sanitizer's racecheck
/// (memcheck and synccheck pass).
__device__ __forceinline__ uint32_t tile_exclusive_prefix(unsigned long long* words, uint64_t t, uint32_t sum,
                                                          uint32_t stamp) {
    __shared__ uint32_t prefix;
    if (threadIdx.x < WARP) {
        const int lane = int(threadIdx.x);
        // Words are published by an atomic exchange (one 64-bit store at
        // the L2) and read volatile (from the L2, never a stale L1 line).
        if (lane == 0) {
            atomicExch(&words[t], lookback_word(stamp, t == 0, sum));
        }
        uint32_t before = 0;
        for (int64_t nearest = int64_t(t) - 1; nearest >= 0; nearest -= WARP) {
            // Lane k reads tile `nearest - k`; before tile 0, a prefix of 0.
            const int64_t i = nearest - lane;
            unsigned long long w;
            bool published;
            do {
                w = i >= 0 ? *reinterpret_cast<volatile unsigned long long*>(&words[i])
                           : lookback_word(stamp, true, 0);
                published = uint32_t(w >> 33) == stamp;
            } while (!__all_sync(FULL_MASK, published));
            const uint32_t prefixes = __ballot_sync(FULL_MASK, (w & LOOKBACK_PREFIX) != 0);
            // Every tile up to the nearest holding a prefix, that one included.
            const int upto = prefixes != 0 ? __ffs(int(prefixes)) - 1 : WARP - 1;
            uint32_t v = lane <= upto ? uint32_t(w) : 0;
            for (int d = WARP / 2; d > 0; d /= 2) {
                v += __shfl_xor_sync(FULL_MASK, v, d);
            }
            before += v;
            if (prefixes != 0) {
                break;
            }
        }
        if (lane == 0) {
            if (t > 0) {
                atomicExch(&words[t], lookback_word(stamp, true, before + sum));
            }
            prefix = before;
        }
    }
    __syncthreads();
    const uint32_t p = prefix;
    // `prefix` is rewritten by the block's next tile.
    __syncthreads();
    return p;
}

}  // namespace warpfit

// warpfit device library: worklists, pushed to by push kernels and read as
// a task source (`FrontierTasks`).
//
// A worklist in device memory is `WorklistRef` (a kernel's `&Worklist`
// parameter, passed by value in its `Params`): `capacity` item slots, a
// push counter, a spill bitmap of one bit per element of the universe,
// and for a deduplicating list a bitmap of the items pushed since it was
// cleared. `push` reserves slots on the counter; a slot at or past the
// capacity puts the item's bit in the spill bitmap instead (the host
// grows the list and `wf_unspill_count` / `wf_unspill` move the spilled items in), so an item
// is never dropped and never written out of bounds. An item outside the
// universe records an index fault on the worklist's parameter and is not
// pushed. The counter keeps counting past the capacity: it is the room
// the round wanted.
//
// How slots are reserved is the list's `variant`, chosen per launch by the
// host (`PushVariant` in gpu/src/abi.rs), so that the three can be
// measured against each other on one kernel:
//   PUSH_ATOMIC: one global atomicAdd per push (the base worklist of
//     Nasre et al., Section III-A);
//   PUSH_WARP: the lanes of a warp that push to one list together (the
//     active lanes at the push, `__activemask`, matched on the list with
//     `__match_any_sync`) take consecutive slots with one atomicAdd by their
//     leader, each its offset by the popcount of the lanes below it (III-C's
//     chunking, per warp);
//   PUSH_BLOCK: pushes are staged in shared memory (III-B's hierarchical
//     worklist), each warp in its own region reserved with one
//     shared-memory atomic per coalesced group; when the block's items are
//     done, a prefix sum over the warps' counts places every warp's items
//     and one global atomicAdd per block reserves them all (III-D's
//     prefix-sum update), then the block copies them out, coalesced. A
//     warp whose region is full pushes the rest as PUSH_WARP does.
// Staging needs a point where the whole block meets: a functor with
// worklists defines `block_begin`/`block_end` (calling `stage_begin` and
// `stage_end` per list), which the entry points run around the block's
// items (`block_hooks` below).
#pragma once
#include "warpfit/task_source.cuh"
#include "warpfit/atomic.cuh"

namespace warpfit {

/// `WorklistRef::variant`: how a push reserves its slot. Mirrored by
/// `PushVariant` in gpu/src/abi.rs.
constexpr uint32_t PUSH_ATOMIC = 0;
constexpr uint32_t PUSH_WARP = 1;
constexpr uint32_t PUSH_BLOCK = 2;

/// Items one warp stages in shared memory under PUSH_BLOCK before it
/// pushes to the global list directly (4 KiB per list and block).
constexpr int STAGE_PER_WARP = 128;

/// A worklist in device memory, as a kernel's `Params` holds it. Mirrored
/// by `WorklistRef` in gpu/src/abi.rs.
struct WorklistRef {
    uint32_t* items;             // `capacity` slots
    unsigned long long* count;   // pushes since the list was cleared (stored + spilled)
    uint32_t* spill;             // one bit per universe element: items pushed while full
    uint32_t* seen;              // deduplicating lists: one bit per element pushed; else null
    uint64_t capacity;
    uint64_t universe;
    uint32_t variant;            // PUSH_*
    uint32_t pad;
};

/// Stores `item` in slot `slot`, or records it in the spill bitmap when
/// the slot is past the capacity.
__device__ __forceinline__ void store_or_spill(const WorklistRef& w, unsigned long long slot, uint32_t item) {
    if (slot < w.capacity) {
        w.items[slot] = item;
    } else {
        atomicOr(&w.spill[item >> 5], 1u << (item & 31u));
    }
}

/// PUSH_WARP: the lanes pushing to the same list together take consecutive
/// slots, reserved by one atomicAdd of their leader. The group is the lanes
/// active here (`__activemask`) matched on the list (`__match_any_sync` on
/// its counter's address), so code the compiler merged across two pushes to
/// different lists still reserves each list's own slots.
__device__ __forceinline__ void push_warp(const WorklistRef& w, uint32_t item) {
    const unsigned mask = __match_any_sync(__activemask(), (unsigned long long)w.count);
    const int lane = lane_id();
    const int leader = __ffs(mask) - 1;
    unsigned long long base = 0;
    if (lane == leader) {
        base = atomicAdd(w.count, (unsigned long long)__popc(mask));
    }
    base = __shfl_sync(mask, base, leader);
    store_or_spill(w, base + __popc(mask & ((1u << lane) - 1u)), item);
}

/// One list's staging area in a block's shared memory (PUSH_BLOCK).
struct Stage {
    uint32_t count[WARPS_PER_BLOCK];      // pushes staged by each warp (may pass STAGE_PER_WARP)
    uint32_t offset[WARPS_PER_BLOCK];     // each warp's first slot past `base`, at the flush
    unsigned long long base;              // the block's reservation on the global list
    uint32_t items[WARPS_PER_BLOCK][STAGE_PER_WARP];
};

/// The staging area of the kernel's list number `S` (one per list and block).
template <int S> __device__ __forceinline__ Stage& stage() {
    __shared__ Stage s;
    return s;
}

/// PUSH_BLOCK: stages `item` in the warp's region of list `S`'s area.
template <int S> __device__ __forceinline__ void push_block(const WorklistRef& w, uint32_t item) {
    Stage& st = stage<S>();
    const int warp = int(threadIdx.x) / WARP;
    // Lanes staging into the same area together (matched as in `push_warp`).
    const unsigned mask = __match_any_sync(__activemask(), (unsigned long long)&st);
    const int lane = lane_id();
    const int leader = __ffs(mask) - 1;
    uint32_t at = 0;
    if (lane == leader) {
        at = atomicAdd(&st.count[warp], uint32_t(__popc(mask)));
    }
    at = __shfl_sync(mask, at, leader);
    const uint32_t slot = at + uint32_t(__popc(mask & ((1u << lane) - 1u)));
    if (slot < uint32_t(STAGE_PER_WARP)) {
        st.items[warp][slot] = item;
    } else {
        push_warp(w, item);
    }
}

/// `push(list, item)` onto worklist parameter `array_id`, the kernel's list
/// number `S`: deduplicated when the list is, out of the universe a fault.
template <int S, class F>
__device__ __forceinline__ void push(const WorklistRef& w, uint32_t item, uint32_t array_id, F& f) {
    if (uint64_t(item) >= w.universe) {
        f.out_of_range(array_id, item);
        return;
    }
    if (w.seen != nullptr) {
        // Read first: an item pushed already costs no atomic on its word.
        const uint32_t bit = 1u << (item & 31u);
        if ((ld_relaxed(&w.seen[item >> 5]) & bit) || (atomicOr(&w.seen[item >> 5], bit) & bit)) {
            return;  // pushed already since the list was cleared
        }
    }
    if (w.variant == PUSH_ATOMIC) {
        store_or_spill(w, atomicAdd(w.count, 1ull), item);
    } else if (w.variant == PUSH_WARP) {
        push_warp(w, item);
    } else {
        push_block<S>(w, item);
    }
}

/// Before a block's items: empties list `S`'s staging area (PUSH_BLOCK).
/// Every thread of the block calls it (it has a barrier).
template <int S> __device__ __forceinline__ void stage_begin(const WorklistRef& w) {
    if (w.variant != PUSH_BLOCK) {
        return;  // the same for every thread: the barrier is uniform
    }
    Stage& st = stage<S>();
    if (threadIdx.x < WARPS_PER_BLOCK) {
        st.count[threadIdx.x] = 0;
    }
    __syncthreads();
}

/// After a block's items: one global reservation for everything the block
/// staged in list `S` (a prefix sum over the warps' counts), then each warp
/// copies its items out. Every thread of the block calls it.
template <int S> __device__ __forceinline__ void stage_end(const WorklistRef& w) {
    if (w.variant != PUSH_BLOCK) {
        return;
    }
    Stage& st = stage<S>();
    __syncthreads();
    if (threadIdx.x < WARP) {
        const int lane = lane_id();
        const uint32_t c = lane < WARPS_PER_BLOCK ? min(st.count[lane], uint32_t(STAGE_PER_WARP)) : 0u;
        uint32_t incl = c;
#pragma unroll
        for (int d = 1; d < WARPS_PER_BLOCK; d <<= 1) {
            const uint32_t o = __shfl_up_sync(FULL_MASK, incl, d);
            if (lane >= d) {
                incl += o;
            }
        }
        const uint32_t total = __shfl_sync(FULL_MASK, incl, WARPS_PER_BLOCK - 1);
        if (lane < WARPS_PER_BLOCK) {
            st.offset[lane] = incl - c;
        }
        if (lane == 0) {
            st.base = total > 0 ? atomicAdd(w.count, (unsigned long long)total) : 0ull;
        }
    }
    __syncthreads();
    const int warp = int(threadIdx.x) / WARP;
    const uint32_t n = min(st.count[warp], uint32_t(STAGE_PER_WARP));
    const unsigned long long at = st.base + st.offset[warp];
    for (uint32_t j = uint32_t(lane_id()); j < n; j += WARP) {
        store_or_spill(w, at + j, st.items[warp][j]);
    }
}

// ---------------------------------------------------------------- functor traits

/// A functor's per-block hooks (`block_begin`/`block_end`, generated for
/// kernels with worklists), or nothing.
template <class K, class = void> struct block_hooks {
    static __device__ __forceinline__ void begin(const typename K::params_t&) {}
    static __device__ __forceinline__ void end(const typename K::params_t&) {}
};
template <class K> struct block_hooks<K, typename void_type<decltype(&K::block_begin)>::type> {
    static __device__ __forceinline__ void begin(const typename K::params_t& p) { K::block_begin(p); }
    static __device__ __forceinline__ void end(const typename K::params_t& p) { K::block_end(p); }
};

// ---------------------------------------------------------------- the frontier as a task source

/// The items of a worklist, each a whole task (`LaunchArgs::frontier`,
/// `frontier_count`; `n_items` is the list's capacity, which sizes the
/// grid). The number stored, `min(count, capacity)`, is read on the device
/// by every thread, so the host never waits for it: threads past it have
/// no item.
struct FrontierTasks {
    static constexpr bool is_list = false;
    static constexpr bool is_queue = false;

    template <class K>
    static __device__ __forceinline__ void load(const typename K::params_t& p, const LaunchArgs& a, uint64_t i,
                                                Item<K>& it, Fault& f) {
        it.slot = 0;
        const unsigned long long count = __ldcg(a.frontier_count);
        const uint64_t stored = count < a.n_items ? count : a.n_items;
        const bool live = i < stored;
        load_task<K>(p, live ? uint64_t(__ldcg(a.frontier + i)) : 0, live, it, f);
    }
};

// ---------------------------------------------------------------- growth and clearing, on the device

/// The tiles of BLOCK bitmap words block `b` of `wf_unspill_count` and
/// `wf_unspill` walks: a contiguous range, so that blocks in order hold the
/// items in ascending order.
__device__ __forceinline__ void unspill_range(uint64_t words, uint64_t& first, uint64_t& end) {
    const uint64_t tiles = (words + BLOCK - 1) / BLOCK;
    const uint64_t per = (tiles + gridDim.x - 1) / gridDim.x;
    first = uint64_t(blockIdx.x) * per * BLOCK;
    end = first + per * BLOCK;
    if (end > words) {
        end = words;
    }
}

/// Growth, first pass: block `b` counts the spilled items of its range of
/// the bitmap into `block_sums[b]`.
__device__ __forceinline__ void unspill_count(const WorklistRef& w, uint32_t* block_sums) {
    __shared__ uint32_t warp_total[WARPS_PER_BLOCK];
    uint64_t first, end;
    unspill_range((w.universe + 31) / 32, first, end);
    uint32_t c = 0;
    for (uint64_t wi = first + threadIdx.x; wi < end; wi += BLOCK) {
        c += __popc(w.spill[wi]);
    }
    c = __reduce_add_sync(FULL_MASK, c);
    if (lane_id() == 0) {
        warp_total[threadIdx.x / WARP] = c;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        uint32_t t = 0;
        for (int v = 0; v < WARPS_PER_BLOCK; ++v) {
            t += warp_total[v];
        }
        block_sums[blockIdx.x] = t;
    }
}

/// Growth, second pass: moves list `w`'s spilled items into its slots after
/// the host gave it room: `old_capacity` slots are full (the list
/// overflowed, else there is nothing to do), the spilled items follow in
/// ascending order while `w.capacity` allows, their bits cleared; the count
/// becomes the items stored plus those still spilled, as the CPU's
/// `Worklist::grow` leaves it. Each block walks its range of the bitmap in
/// tiles of BLOCK words from the slot the blocks before it fill up to
/// (`block_sums`, the first pass), a block-wide prefix sum of the words'
/// popcounts placing each word's items. (One block walking the whole bitmap
/// took 1.3 ms for 1.2M items of RMAT 22's BFS, `BENCHMARKS.md`.)
__device__ __forceinline__ void unspill(const WorklistRef& w, uint64_t old_capacity, const uint32_t* block_sums) {
    __shared__ uint32_t warp_total[WARPS_PER_BLOCK];
    __shared__ unsigned long long next;
    __shared__ unsigned long long sums[2];
    // The items before this block's range, and in all.
    unsigned long long before = 0, all = 0;
    for (uint32_t v = threadIdx.x; v < gridDim.x; v += BLOCK) {
        all += block_sums[v];
        before += v < blockIdx.x ? block_sums[v] : 0u;
    }
    if (threadIdx.x < 2) {
        sums[threadIdx.x] = 0;
    }
    __syncthreads();
    atomicAdd(&sums[0], before);
    atomicAdd(&sums[1], all);
    __syncthreads();
    if (sums[1] == 0) {
        return;  // uniform: nothing was spilled
    }
    if (threadIdx.x == 0) {
        next = old_capacity + sums[0];
        if (blockIdx.x == 0) {
            *w.count = old_capacity + sums[1];  // stored + still spilled
        }
    }
    __syncthreads();
    uint64_t first, end;
    unspill_range((w.universe + 31) / 32, first, end);
    const int lane = lane_id();
    const int warp = int(threadIdx.x) / WARP;
    for (uint64_t tile = first; tile < end; tile += BLOCK) {
        const uint64_t wi = tile + threadIdx.x;
        uint32_t bits = wi < end ? w.spill[wi] : 0u;
        const uint32_t c = __popc(bits);
        uint32_t incl = c;
#pragma unroll
        for (int d = 1; d < WARP; d <<= 1) {
            const uint32_t o = __shfl_up_sync(FULL_MASK, incl, d);
            if (lane >= d) {
                incl += o;
            }
        }
        if (lane == WARP - 1) {
            warp_total[warp] = incl;
        }
        __syncthreads();
        uint32_t below = 0, tile_total = 0;
        for (int v = 0; v < WARPS_PER_BLOCK; ++v) {
            below += v < warp ? warp_total[v] : 0u;
            tile_total += warp_total[v];
        }
        unsigned long long slot = next + below + (incl - c);
        uint32_t left = bits;
        while (bits != 0u) {
            const uint32_t b = __ffs(bits) - 1;
            bits &= bits - 1u;
            if (slot < w.capacity) {
                w.items[slot] = uint32_t(wi * 32 + b);
                left &= ~(1u << b);
            }
            ++slot;
        }
        if (wi < end) {
            w.spill[wi] = left;
        }
        __syncthreads();  // every thread has read `next` and `warp_total`
        if (threadIdx.x == 0) {
            next += tile_total;
        }
        __syncthreads();
    }
}

/// Clears list `w`'s bitmaps for the next round, reading the count on the
/// device: after an overflow every word of the spill and dedup bitmaps
/// (grid-stride), otherwise only the dedup bits of the items stored (the
/// spill bitmap is empty). The host zeroes the count after this kernel.
__device__ __forceinline__ void clear_bitmaps(const WorklistRef& w) {
    const unsigned long long count = *w.count;
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    const uint64_t t = uint64_t(blockIdx.x) * BLOCK + threadIdx.x;
    if (count > w.capacity) {
        const uint64_t words = (w.universe + 31) / 32;
        for (uint64_t i = t; i < words; i += stride) {
            w.spill[i] = 0u;
            if (w.seen != nullptr) {
                w.seen[i] = 0u;
            }
        }
    } else if (w.seen != nullptr) {
        for (uint64_t i = t; i < count; i += stride) {
            const uint32_t item = w.items[i];
            atomicAnd(&w.seen[item >> 5], ~(1u << (item & 31u)));
        }
    }
}

}  // namespace warpfit

// The worklist library's kernels (no user functor): compiled once per
// device, like the layout library (gpu/src/worklist.rs).
#define WARPFIT_WORKLIST_ENTRY_POINTS                                                                 \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                      \
        wf_unspill_count(const warpfit::WorklistRef w, uint32_t* block_sums) {                        \
        warpfit::unspill_count(w, block_sums);                                                        \
    }                                                                                                 \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                      \
        wf_unspill(const warpfit::WorklistRef w, const uint64_t old_capacity,                        \
                   const uint32_t* block_sums) {                                                      \
        warpfit::unspill(w, old_capacity, block_sums);                                                \
    }                                                                                                 \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK) wf_clear(const warpfit::WorklistRef w) { \
        warpfit::clear_bitmaps(w);                                                                    \
    }

// warpfit device library: the round kernels of the CUDA round backend
// (`CudaRounds`, gpu/src/rounds.rs), one thing: the per-round bookkeeping
// around the user's kernels that lets the host enqueue many rounds and wait
// for them once.
//
// A round is enqueued as
//   wf_round_begin          gated on the halt word: clears the output (and a
//                           far pile being split) and sets the task count
//                           the user kernel runs over;
//   wf_round_split_<key>    near-far rounds: the input's items, filtered by
//                           the bucket [lo, hi) into the scratch list (the
//                           user kernel's tasks), the far pile, or dropped;
//   the user's kernel       over a device frontier whose count is the task
//                           count above (0 when halted: it does nothing);
//   wf_round_min_key_<key>  topology rounds asked for the least key of the
//                           output's items;
//   wf_round_finish         one thread: the round's outcome into its record
//                           (host-mapped memory, read after one wait for
//                           several rounds), and the halt word set when an
//                           output a later round reads overflowed, or the
//                           user kernel faulted.
// Every kernel reads the halt word first and a skipped round touches no
// list: halting needs no host round trip. `wf_round_resume` clears the word
// after the host grew the list that overflowed; `wf_round_iota` writes a
// topology round's items `0..n` once.
//
// The key's type is a template parameter (one entry point per type: the
// host picks it from the key array's Rust type); keys compare as doubles,
// exactly for f32 and u32. The least key is kept as an order-preserving
// u64 image of its double, so that one atomicMin takes it.
#pragma once
#include "warpfit/worklist.cuh"

namespace warpfit {

/// The backend's device state, one per backend. Mirrored by `RoundState`
/// in gpu/src/rounds.rs.
struct RoundState {
    unsigned long long tasks;            // the user kernel's task count this round
    unsigned long long dropped;          // items dropped as stale (key < lo)
    unsigned long long deferred_before;  // the far pile's count after its clear
    unsigned long long min_key;          // ordered image of the least key seen
    unsigned long long done_blocks;      // wf_round_begin's blocks finished (the last one resets it)
    uint32_t halt;                       // later rounds are skipped while set
    uint32_t skipped;                    // this round is skipped
};

/// A round's outcome. Mirrored by `RoundRecord` in gpu/src/rounds.rs.
struct RoundRecord {
    uint32_t index;
    uint32_t flags;  // ROUND_*
    unsigned long long processed;
    unsigned long long pushed;
    unsigned long long deferred;
    unsigned long long deferred_len;
    unsigned long long dropped;
    unsigned long long min_key;  // the bits of a double
};

constexpr uint32_t ROUND_SKIPPED = 1;
constexpr uint32_t ROUND_OUT_OVERFLOWED = 2;
constexpr uint32_t ROUND_DEFERRED_OVERFLOWED = 4;
constexpr uint32_t ROUND_FAULT = 8;

/// An order-preserving image of a double in u64 (negative values below
/// positive ones), so that integer min is the doubles' min.
__device__ __forceinline__ unsigned long long ordered_key(double k) {
    const unsigned long long b = (unsigned long long)__double_as_longlong(k);
    return (b >> 63) ? ~b : (b | (1ull << 63));
}

/// +inf, the least key of no item.
__device__ __forceinline__ double inf_key() { return __longlong_as_double(0x7ff0000000000000ll); }

__device__ __forceinline__ double key_of_ordered(unsigned long long o) {
    const unsigned long long b = (o >> 63) ? (o & ~(1ull << 63)) : ~o;
    return __longlong_as_double((long long)b);
}

/// Items stored in a list, read on the device.
__device__ __forceinline__ unsigned long long stored(const WorklistRef& w) {
    const unsigned long long c = *w.count;
    return c < w.capacity ? c : w.capacity;
}

/// Adds `v` to `*counter` once per group of lanes that agree to (one
/// atomic per warp).
__device__ __forceinline__ void warp_add(unsigned long long* counter, bool take) {
    const unsigned mask = __ballot_sync(__activemask(), take);
    if (take && lane_id() == __ffs(mask) - 1) {
        atomicAdd(counter, (unsigned long long)__popc(mask));
    }
}

/// Pushes `item` (in the universe) onto `w` as a kernel's `push` does:
/// deduplicated when the list is, a slot per warp group, spilled when full.
__device__ __forceinline__ void round_push(const WorklistRef& w, uint32_t item) {
    if (w.seen != nullptr) {
        const uint32_t bit = 1u << (item & 31u);
        if ((ld_relaxed(&w.seen[item >> 5]) & bit) || (atomicOr(&w.seen[item >> 5], bit) & bit)) {
            return;
        }
    }
    push_warp(w, item);
}

/// Clears the output (and, with `clear_far`, the far pile) for the round,
/// then, in the last block to finish, zeroes their counts and sets the task
/// count: `topology_n` for a topology round, the input's stored items when
/// `input_count` is given (a frontier round without a bucket), else 0 (the
/// split fills it). Nothing when halted but the skip marks.
__device__ __forceinline__ void round_begin(RoundState* s, uint32_t* round_word, uint32_t index,
                                            const WorklistRef& out, const WorklistRef& far, uint32_t has_far,
                                            uint32_t clear_far, const unsigned long long* input_count,
                                            uint64_t input_capacity, uint64_t topology_n) {
    __shared__ bool last;
    const bool halted = ld_relaxed(&s->halt) != 0u;
    if (!halted) {
        clear_bitmaps(out);
        if (has_far && clear_far) {
            clear_bitmaps(far);
        }
    }
    // Every block has read the counts (in clear_bitmaps) before the last
    // one zeroes them.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(&s->done_blocks, 1ull) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last || threadIdx.x != 0) {
        return;
    }
    __threadfence();
    s->done_blocks = 0;
    s->skipped = halted ? 1u : 0u;
    if (halted) {
        s->tasks = 0;
        return;
    }
    *round_word = index;
    *out.count = 0;
    if (has_far) {
        if (clear_far) {
            *far.count = 0;
        }
        s->deferred_before = *far.count;
    }
    s->dropped = 0;
    s->min_key = ordered_key(inf_key());  // +inf
    if (input_count != nullptr) {
        const unsigned long long c = *input_count;
        s->tasks = c < input_capacity ? c : input_capacity;
    } else {
        s->tasks = topology_n;
    }
}

/// Near-far: each stored item of `input` with key `k`: `k < lo` dropped,
/// `k >= hi` pushed onto the far pile (its least key kept), else appended
/// to the scratch list the user kernel runs over (`s->tasks` its count).
template <class K>
__device__ __forceinline__ void round_split(RoundState* s, const K* key, const WorklistRef& input, uint32_t* scratch,
                                            const WorklistRef& far, double lo, double hi) {
    if (ld_relaxed(&s->skipped) != 0u) {
        return;
    }
    const unsigned long long n = stored(input);
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    // Whole warps iterate together so that the warp-wide counters see
    // every lane (the bound is uniform per warp after rounding up).
    const uint64_t first = uint64_t(blockIdx.x) * BLOCK + threadIdx.x;
    const uint64_t rounded = (n + WARP - 1) / WARP * WARP;
    unsigned long long least = ordered_key(inf_key());
    for (uint64_t i = first; i < rounded; i += stride) {
        const bool live = i < n;
        const uint32_t v = live ? __ldcg(input.items + i) : 0u;
        const double k = live ? double(key[v]) : 0.0;
        const bool drop = live && k < lo;
        const bool defer = live && !drop && k >= hi;
        const bool run = live && !drop && !defer;
        warp_add(&s->dropped, drop);
        if (defer) {
            round_push(far, v);
            const unsigned long long o = ordered_key(k);
            least = o < least ? o : least;
        }
        const unsigned mask = __ballot_sync(__activemask(), run);
        unsigned long long base = 0;
        if (mask != 0u) {
            const int leader = __ffs(mask) - 1;
            if (lane_id() == leader) {
                base = atomicAdd(&s->tasks, (unsigned long long)__popc(mask));
            }
            base = __shfl_sync(__activemask(), base, leader);
        }
        if (run) {
            scratch[base + __popc(mask & ((1u << lane_id()) - 1u))] = v;
        }
    }
    const unsigned long long inf = ordered_key(inf_key());
    if (least != inf) {
        atomicMin(&s->min_key, least);
    }
}

/// The least key among `out`'s stored items, into `s->min_key`.
template <class K>
__device__ __forceinline__ void round_min_key(RoundState* s, const K* key, const WorklistRef& out) {
    if (ld_relaxed(&s->skipped) != 0u) {
        return;
    }
    const unsigned long long n = stored(out);
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    const unsigned long long inf = ordered_key(inf_key());
    unsigned long long least = inf;
    for (uint64_t i = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; i < n; i += stride) {
        const unsigned long long o = ordered_key(double(key[__ldcg(out.items + i)]));
        least = o < least ? o : least;
    }
    if (least != inf) {
        atomicMin(&s->min_key, least);
    }
}

/// One thread: the round's record, and the halt word.
__device__ __forceinline__ void round_finish(RoundState* s, RoundRecord* rec, uint32_t index, const WorklistRef& out,
                                             const WorklistRef& far, uint32_t has_far, uint32_t consumed,
                                             const uint32_t* fault_claimed) {
    RoundRecord r;
    r.index = index;
    r.flags = 0;
    r.processed = 0;
    r.pushed = 0;
    r.deferred = 0;
    r.deferred_len = 0;
    r.dropped = 0;
    r.min_key = 0x7ff0000000000000ull;  // +inf
    if (s->skipped != 0u) {
        r.flags = ROUND_SKIPPED;
    } else {
        r.processed = s->tasks;
        r.pushed = *out.count;
        if (r.pushed > out.capacity) {
            r.flags |= ROUND_OUT_OVERFLOWED;
        }
        if (has_far) {
            r.deferred_len = *far.count;
            r.deferred = r.deferred_len - s->deferred_before;
            if (r.deferred_len > far.capacity) {
                r.flags |= ROUND_DEFERRED_OVERFLOWED;
            }
        }
        r.dropped = s->dropped;
        r.min_key = (unsigned long long)__double_as_longlong(key_of_ordered(s->min_key));
        if (*fault_claimed != 0u) {
            r.flags |= ROUND_FAULT;
        }
        const bool halt = ((r.flags & ROUND_OUT_OVERFLOWED) && consumed) || (r.flags & ROUND_DEFERRED_OVERFLOWED) ||
                          (r.flags & ROUND_FAULT);
        if (halt) {
            s->halt = 1u;
        }
    }
    // The record lives in host-mapped memory: whole words, written once.
    volatile unsigned long long* words = reinterpret_cast<volatile unsigned long long*>(rec);
    words[0] = (unsigned long long)r.index | ((unsigned long long)r.flags << 32);
    words[1] = r.processed;
    words[2] = r.pushed;
    words[3] = r.deferred;
    words[4] = r.deferred_len;
    words[5] = r.dropped;
    words[6] = r.min_key;
    __threadfence_system();
}

}  // namespace warpfit

#define WARPFIT_ROUND_KEY_ENTRY_POINTS(K, NAME)                                                                   \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_round_split_##NAME(warpfit::RoundState* s, const K* key, const warpfit::WorklistRef input,           \
                              uint32_t* scratch, const warpfit::WorklistRef far, double lo, double hi) {        \
        warpfit::round_split<K>(s, key, input, scratch, far, lo, hi);                                           \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_round_min_key_##NAME(warpfit::RoundState* s, const K* key, const warpfit::WorklistRef out) {         \
        warpfit::round_min_key<K>(s, key, out);                                                                 \
    }

// The round backend's kernels (no user functor): compiled once per device.
#define WARPFIT_ROUNDS_ENTRY_POINTS                                                                              \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                                 \
        wf_round_begin(warpfit::RoundState* s, uint32_t* round_word, uint32_t index,                            \
                       const warpfit::WorklistRef out, const warpfit::WorklistRef far, uint32_t has_far,        \
                       uint32_t clear_far, const unsigned long long* input_count, uint64_t input_capacity,      \
                       uint64_t topology_n) {                                                                   \
        warpfit::round_begin(s, round_word, index, out, far, has_far, clear_far, input_count, input_capacity,   \
                             topology_n);                                                                       \
    }                                                                                                            \
    extern "C" __global__ void wf_round_finish(warpfit::RoundState* s, warpfit::RoundRecord* rec, uint32_t index, \
                                               const warpfit::WorklistRef out, const warpfit::WorklistRef far,  \
                                               uint32_t has_far, uint32_t consumed,                             \
                                               const uint32_t* fault_claimed) {                                 \
        warpfit::round_finish(s, rec, index, out, far, has_far, consumed, fault_claimed);                       \
    }                                                                                                            \
    extern "C" __global__ void wf_round_resume(warpfit::RoundState* s) { s->halt = 0u; }                        \
    extern "C" __global__ void wf_round_iota(uint32_t* items, uint64_t n) {                                      \
        const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;                                                \
        for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {                \
            items[i] = uint32_t(i);                                                                              \
        }                                                                                                        \
    }                                                                                                            \
    WARPFIT_ROUND_KEY_ENTRY_POINTS(float, f32)                                                                   \
    WARPFIT_ROUND_KEY_ENTRY_POINTS(uint32_t, u32)

// warpfit device library: CTE for a push kernel's `for_each` (`CteForEach`).
//
// Khorasani et al.'s collaborative task engagement as they first used it:
// the expansion without the reduction. A warp takes 32 items as `Cte`
// does (cte.cuh): the prologues, an inclusive scan of the fine-task
// counts, the non-empty items' slots in shared memory; then walks the
// warp's concatenated range 32 fine tasks at a time, each lane running the
// body of the fine task at its position (`Cte::map_round`, coalesced
// across the lanes). A `for_each` body runs for its effects (atomics,
// pushes) and folds nothing, so there is no segmented scan per round, and
// each item's epilogue runs when the rounds are done.
//
// The rounds run with the exact fault record (`Fault`), not `Cte`'s lean
// flag and second pass: a body has effects, so no fine task may run twice.
// Serial fallbacks (a warp not full, or whose items are all short) are
// `Cte`'s: each lane runs its own item. Items longer than a donating
// launch's bound go to the whole grid (work donation, below).
#pragma once
#include "warpfit/cte.cuh"
#include "warpfit/worklist.cuh"

namespace warpfit {

// ---------------------------------------------------------------- work donation
//
// Nasre et al.'s work donation (III-E), for a hub: CTE balances the 32
// items of a warp, but one item of 100 thousand fine tasks is still one
// warp's, and a frontier round waits for it (BFS from a hub: the whole first
// round). A warp of a donating launch (`LaunchArgs::donate_min` set, the
// functor `donates`: a `for_each` with nothing after it) that finds an item
// longer than `donate_min` posts it on the launch's board in chunks of
// `DONATE_CHUNK` fine tasks, each with the item's prologue values, and
// leaves it out of its own walk; the donation launch that follows
// (`wf_donated`) spreads the chunks over its warps. Every fine task runs
// its body once, with the values of its item's one prologue: only the order
// differs, which a `for_each` never promised. A board too full for an
// item's chunks leaves the item to its warp.

/// Fine tasks per donated chunk: a warp's 32 steps.
constexpr uint64_t DONATE_CHUNK = 32 * WARP;

/// A donated chunk: fine tasks `lo..hi` of `task`, with its prologue values.
template <class K> struct Donated {
    uint64_t task;
    uint64_t lo;
    uint64_t hi;
    typename K::ctx_t ctx;
};

/// Whether a functor may donate (`static constexpr bool donates`).
template <class K, class = void> struct donates {
    static constexpr bool value = false;
};
template <class K> struct donates<K, typename void_type<decltype(K::donates)>::type> {
    static constexpr bool value = K::donates;
};

/// Posts `it`'s fine tasks on the board if they fit; whether they did.
template <class K> __device__ __forceinline__ bool donate(const LaunchArgs& a, const Item<K>& it) {
    const uint64_t chunks = (it.hi - it.lo + DONATE_CHUNK - 1) / DONATE_CHUNK;
    const unsigned long long cap = a.donated_bytes / sizeof(Donated<K>);
    // Reserve the slots only if they fit, so that every slot below the
    // count holds a chunk.
    unsigned long long at = atomicAdd(&a.donation[0], 0ull);
    for (;;) {
        if (at + chunks > cap) {
            return false;
        }
        const unsigned long long seen = atomicCAS(&a.donation[0], at, at + chunks);
        if (seen == at) {
            break;
        }
        at = seen;
    }
    Donated<K>* board = static_cast<Donated<K>*>(a.donated) + at;
    for (uint64_t c = 0; c < chunks; ++c) {
        Donated<K> d;
        d.task = it.task;
        d.lo = it.lo + c * DONATE_CHUNK;
        d.hi = d.lo + DONATE_CHUNK < it.hi ? d.lo + DONATE_CHUNK : it.hi;
        d.ctx = it.ctx;
        board[c] = d;
    }
    return true;
}

/// The donation launch: its warps take the posted chunks in turn, each
/// chunk's fine tasks across the lanes; the last block to finish adds the
/// chunks to the running total (`donation[2]`) and clears the board for
/// the next launch.
template <class K> __device__ __forceinline__ void run_donated(const typename K::params_t& p, const LaunchArgs& a) {
    if (donates<K>::value && a.donate_min != 0) {
        const unsigned long long cap = a.donated_bytes / sizeof(Donated<K>);
        const unsigned long long posted = *static_cast<volatile unsigned long long*>(a.donation);
        const unsigned long long n = posted < cap ? posted : cap;
        const Donated<K>* board = static_cast<const Donated<K>*>(a.donated);
        const uint64_t warps = uint64_t(gridDim.x) * WARPS_PER_BLOCK;
        for (uint64_t c = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) / WARP; c < n; c += warps) {
            const Donated<K> d = board[c];
            Fault f;
            for (uint64_t k = d.lo + uint64_t(lane_id()); k < d.hi; k += WARP) {
                (void)K::map(p, d.task, d.ctx, k, f);
            }
            f.attribute(d.task);
            publish(a.fault, f);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            if (atomicAdd(&a.donation[1], 1ull) == gridDim.x - 1) {
                a.donation[2] += n;  // the running total: the only writer
                a.donation[0] = 0;
                a.donation[1] = 0;
            }
        }
    }
}

struct CteForEach {
    /// Runs the bodies of the warp's concatenated range.
    template <class K, class Off, class F>
    static __device__ __forceinline__ void expand(const typename K::params_t& p, const CteShared<K>& sh, Off excl,
                                                  Off size, Off total, Off lead, F& f) {
        int ended = 0;
        for (Off base = 0; base < total; base += WARP) {
            (void)Cte::template map_round<K, Off>(p, sh, excl, size, total, base, lead, ended, f);
        }
    }

    /// One warp's items, taken as `Cte::run_warp` takes them.
    template <class K, class Src>
    static __device__ __forceinline__ void run_warp(const typename K::params_t& p, const LaunchArgs& a,
                                                    CteShared<K>& sh, uint64_t base_item, bool packed,
                                                    uint64_t gw) {
        typedef typename K::acc_t acc_t;
        const int lane = lane_id();
        uint64_t i = base_item + uint64_t(lane);
        uint32_t whole_run = 0xffffffffu;
        if (packed) {
            if (gw >= a.n_warps) {
                return;
            }
            const uint32_t first = a.warp_first[gw];
            const uint32_t end = a.warp_first[gw + 1];
            whole_run = a.warp_task[gw];
            i = first + uint32_t(lane) < end ? uint64_t(first) + uint64_t(lane) : a.n_items;
        }

        Fault f;
        Item<K> it;
        if (whole_run != 0xffffffffu) {
            it.slot = uint32_t(i);
            load_task<K>(p, uint64_t(whole_run) + uint64_t(lane), i < a.n_items, it, f);
        } else {
            Src::template load<K>(p, a, i, it, f);
        }
        if (donates<K>::value && a.donate_min != 0 && it.valid && it.hi - it.lo > a.donate_min &&
            donate<K>(a, it)) {
            it.hi = it.lo;  // the donation launch runs its fine tasks
        }
        const uint64_t size = it.valid ? it.hi - it.lo : 0;
        const unsigned max_size =
            __reduce_max_sync(FULL_MASK, unsigned(size > 0xffffffffull ? 0xffffffffull : size));
        const bool full = packed || base_item + WARP <= a.n_items;

        if (!full || max_size <= a.cte_serial_max) {
            if (it.valid) {
                Partial<acc_t> acc = seed<K>(p, a, it, f);
                fold_item<K>(p, it, acc, f);
                finish<K>(p, a, it, acc, true, f);
            }
            publish(a.fault, f);
            return;
        }

        uint64_t incl = size;
#pragma unroll
        for (int d = 1; d < WARP; d <<= 1) {
            const uint64_t o = shfl_up(incl, d);
            if (lane >= d) {
                incl += o;
            }
        }
        const unsigned nonempty = __ballot_sync(FULL_MASK, size > 0);
        const uint64_t lead = Cte::lead_of(it, nonempty);  // aligned rounds, as `Cte`'s
        const uint64_t total = shfl(incl, WARP - 1) + lead;
        const uint64_t excl = incl - size + lead;
        const int rank = __popc(nonempty & ((1u << lane) - 1u));
        if (size > 0) {
            CteSlot<K>& sl = sh.slot[rank];
            sl.ctx = it.ctx;
            sl.task = it.task;
            sl.delta = it.lo - excl;
        }
        __syncwarp();
        publish(a.fault, f);
        f = Fault();

        // A fault in a round is attributed to the task whose fine task hit it.
        const bool ranges_ok = __all_sync(FULL_MASK, size == 0 || it.hi <= K::direct_len(p));
        if (total >= 0xffffff00ull) {
            expand<K, uint64_t>(p, sh, excl, size, total, lead, f);
        } else if (ranges_ok) {
            RangeCheckedFault checked(f);
            expand<K, uint32_t>(p, sh, uint32_t(excl), uint32_t(size), uint32_t(total), uint32_t(lead), checked);
            f = checked;
        } else {
            expand<K, uint32_t>(p, sh, uint32_t(excl), uint32_t(size), uint32_t(total), uint32_t(lead), f);
        }
        // The placeholder fold has nothing to add: `finish` runs a whole
        // task's epilogue on `init` (or leaves a split piece's empty partial).
        const bool faulted = f.any();
        publish(a.fault, f);
        if (!faulted) {
            Fault g;
            finish<K>(p, a, it, Partial<acc_t>(), false, g);
            publish(a.fault, g);
        }
    }

    template <class K, class Src> static __device__ __forceinline__ void run(const typename K::params_t& p,
                                                                             const LaunchArgs& a) {
        __shared__ CteShared<K> s_warp[WARPS_PER_BLOCK];
        CteShared<K>& sh = s_warp[int(threadIdx.x) / WARP];
        const uint64_t base_item = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) - uint64_t(lane_id());
        const bool packed = Src::is_list && a.warp_first != nullptr;
        if (Src::is_queue) {
            // As `Cte::run`: warps dequeue chunks of groups in list order.
            const uint64_t chunk = a.queue_chunk > 0 ? a.queue_chunk : 1;
            for (;;) {
                uint32_t c = 0;
                if (lane_id() == 0) {
                    c = atomicAdd(a.queue, 1u);
                }
                c = __shfl_sync(FULL_MASK, c, 0);
                const uint64_t g0 = uint64_t(c) * chunk;
                if (g0 >= a.n_warps) {
                    return;
                }
                const uint64_t g1 = g0 + chunk < a.n_warps ? g0 + chunk : a.n_warps;
                for (uint64_t g = g0; g < g1; ++g) {
                    run_warp<K, Src>(p, a, sh, 0, true, g);
                    __syncwarp();
                }
            }
        }
        run_warp<K, Src>(p, a, sh, base_item, packed, base_item / WARP);
    }
};

/// The decomposition that runs `D` for functor `K`: a `for_each` kernel
/// runs CTE as the expansion without the reduction; everything else as is.
template <class K, class D, bool FOR_EACH = is_for_each<K>::value> struct decomposition_for {
    typedef D type;
};
template <class K> struct decomposition_for<K, Cte, true> {
    typedef CteForEach type;
};

}  // namespace warpfit

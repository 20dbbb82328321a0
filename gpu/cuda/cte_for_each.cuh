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
// `Cte`'s: each lane runs its own item.
#pragma once
#include "warpfit/cte.cuh"
#include "warpfit/worklist.cuh"

namespace warpfit {

struct CteForEach {
    /// Runs the bodies of the warp's concatenated range.
    template <class K, class Off, class F>
    static __device__ __forceinline__ void expand(const typename K::params_t& p, const CteShared<K>& sh, Off excl,
                                                  Off size, Off total, F& f) {
        int ended = 0;
        for (Off base = 0; base < total; base += WARP) {
            (void)Cte::template map_round<K, Off>(p, sh, excl, size, total, base, ended, f);
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
        const uint64_t total = shfl(incl, WARP - 1);
        const uint64_t excl = incl - size;
        const unsigned nonempty = __ballot_sync(FULL_MASK, size > 0);
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
            expand<K, uint64_t>(p, sh, excl, size, total, f);
        } else if (ranges_ok) {
            RangeCheckedFault checked(f);
            expand<K, uint32_t>(p, sh, uint32_t(excl), uint32_t(size), uint32_t(total), checked);
            f = checked;
        } else {
            expand<K, uint32_t>(p, sh, uint32_t(excl), uint32_t(size), uint32_t(total), f);
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

// warpfit device library: collaborative task engagement (`Cte`).
//
// Khorasani et al., "Eliminating Intra-warp Load Imbalance in Irregular
// Nested Patterns via Collaborative Task Engagement", Section III and
// Figure 4. A warp takes 32 consecutive items (one per lane) and expands
// their fine tasks together:
//
//   1. each lane runs its item's prologue; an inclusive shuffle scan of the
//      fine-task counts gives every item its offset in the warp's
//      concatenated range [0, total);
//   2. the warp walks that range 32 fine tasks at a time: lane l takes
//      position base + l, finds the item that owns it by binary search over
//      the scan (kept in shared memory), and maps it (coalesced loads);
//   3. a segmented shuffle scan, keyed by owner, folds each owner's run of
//      the round in fine-task order; the owner lane picks its run's total
//      from the run's last lane and folds it onto its own accumulator.
//
// No lane idles while another has fine tasks left, whatever the size skew
// among the 32 items. The total work of a warp is what it is, though: a
// task list of bounded segments (TaskList::chunked) is what keeps one hub
// row from serializing a warp.
//
// Two fallbacks run each lane's own item serially (the 1D order): a warp
// that is not full (the launch's tail), and a warp whose items are so even
// that expansion would cost more than it balances — the longest item is at
// most `cte_thread_ratio` times the number of rounds expansion would take.
#pragma once
#include "warpfit/task_source.cuh"

namespace warpfit {

template <class K> struct CteSlot {
    typename K::ctx_t ctx;
    uint64_t task;
    uint64_t lo;
    uint64_t excl;  // offset of the item's first fine task in the warp's range
};

struct Cte {
    template <class K, class Src> static __device__ __forceinline__ void run(const typename K::params_t& p,
                                                                             const LaunchArgs& a) {
        typedef typename K::acc_t acc_t;
        __shared__ uint64_t s_incl[WARPS_PER_BLOCK][WARP];
        __shared__ CteSlot<K> s_slot[WARPS_PER_BLOCK][WARP];

        const int lane = lane_id();
        const int w = int(threadIdx.x) / WARP;
        const uint64_t base_item = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) - uint64_t(lane);
        const uint64_t i = base_item + uint64_t(lane);

        Fault f;
        Item<K> it;
        Src::template load<K>(p, a, i, it, f);
        const uint64_t size = it.valid ? it.hi - it.lo : 0;

        // Inclusive scan of the sizes.
        uint64_t incl = size;
#pragma unroll
        for (int d = 1; d < WARP; d <<= 1) {
            const uint64_t o = shfl_up(incl, d);
            if (lane >= d) {
                incl += o;
            }
        }
        const uint64_t total = shfl(incl, WARP - 1);
        const uint64_t rounds = (total + WARP - 1) / WARP;
        const unsigned max_size = __reduce_max_sync(FULL_MASK, unsigned(size > 0xffffffffull ? 0xffffffffull : size));
        const bool full = base_item + WARP <= a.n_items;

        if (!full || uint64_t(max_size) <= uint64_t(a.cte_thread_ratio) * rounds) {
            // 1D: every lane folds its own item from `init`.
            if (it.valid) {
                Partial<acc_t> acc = seed<K>(p, it, f);
                fold_serial<K>(p, it, acc, f);
                finish<K>(p, a, it, acc, true, f);
            }
            publish(a.fault, f);
            return;  // warp-uniform: `full` and the ratio test are the same on every lane
        }

        s_incl[w][lane] = incl;
        s_slot[w][lane].ctx = it.ctx;
        s_slot[w][lane].task = it.task;
        s_slot[w][lane].lo = it.lo;
        s_slot[w][lane].excl = incl - size;
        __syncwarp();

        const uint64_t my_excl = incl - size;
        Partial<acc_t> own;
        for (uint64_t base = 0; base < total; base += WARP) {
            const uint64_t pos = base + uint64_t(lane);
            const bool active = pos < total;
            // Owner: the number of items whose inclusive end is <= pos (the
            // first item ending after pos). pos < total = incl[31], so o < 32.
            int o = 0;
#pragma unroll
            for (int s = WARP / 2; s > 0; s >>= 1) {
                if (s_incl[w][o + s - 1] <= pos) {
                    o += s;
                }
            }
            Partial<acc_t> v;
            int run_start = lane;  // first lane of this lane's owner run in the round
            if (active) {
                const CteSlot<K>& sl = s_slot[w][o];
                const uint64_t k = sl.lo + (pos - sl.excl);
                v.value = K::map(p, sl.task, sl.ctx, k, f);
                v.has = true;
                f.attribute(sl.task);
                run_start = sl.excl > base ? int(sl.excl - base) : 0;
            }
            // Segmented inclusive scan over the round, operands in lane order.
#pragma unroll
            for (int d = 1; d < WARP; d <<= 1) {
                Partial<acc_t> u;
                u.value = shfl_up(v.value, d);
                u.has = shfl_up(v.has, d);
                if (lane - d >= run_start) {
                    u.template append<K>(v, f);
                    v = u;
                }
            }
            // The owner lane takes its run's total from the run's last lane.
            const uint64_t my_end = incl < base + WARP ? incl : base + WARP;
            const bool mine = size > 0 && my_excl < base + WARP && incl > base;
            const int tail = mine ? int(my_end - 1 - base) : 0;
            Partial<acc_t> r;
            r.value = shfl(v.value, tail);
            r.has = shfl(v.has, tail);
            if (mine) {
                own.template append<K>(r, f);
            }
        }
        f.attribute(it.task);
        finish<K>(p, a, it, own, false, f);
        publish(a.fault, f);
    }
};

}  // namespace warpfit

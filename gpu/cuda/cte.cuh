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
//      position base + l and finds the item that owns it: the paper's
//      binary search over the scan, done here in O(1) with no shared-memory
//      round trip per round. The non-empty items are ranked once (their
//      slots stored by rank); in a round, the items ending inside it OR
//      their end offsets into a mask, and a lane's owner is the item of
//      rank (items ended before the round) + (ends below the lane). Then
//      it maps it (consecutive positions: coalesced loads). The walk
//      starts `lead` positions early, the first item's first fine task
//      modulo 32, so that a round's loads at the fine-task index cover
//      aligned blocks of 32 elements (one 128-byte line of a 4-byte array)
//      instead of straddling two (`Cte::lead_of`);
//   3. a segmented shuffle scan, keyed by owner, folds each owner's run of
//      the round in fine-task order; the owner lane picks its run's total
//      from the run's last lane and folds it onto its own accumulator;
//   4. where the reduce operator commutes (`commutes`: `+`, `*`, bit
//      operators, min/max), a round in which no item ends belongs whole to
//      one item and needs no scan: each lane folds its value onto a carry
//      of its own, and the carries join that item's run (one shuffle tree)
//      in the next round that has an end. A long item then costs a map and
//      one fold per round (BENCHMARKS.md, "Rounds inside one row").
//
// A short-circuiting fold (`(lo..hi).any(..)`, `.all(..)`) skips the fine
// tasks of items already settled and ends the walk once every item is
// settled or done.
//
// No lane idles while another has fine tasks left, whatever the size skew
// among the 32 items. The total work of a warp is what it is, though: a
// task list of bounded segments (TaskList::chunked) is what keeps one hub
// row from serializing a warp.
//
// Over a task list packed by work (task_source.cuh), a warp takes its
// group of up to 32 segments instead of 32 consecutive ones; over a
// `QueuedTaskList`, a persistent grid's warps dequeue chunks of groups from
// a device queue in list order instead (the CF-Q and SJ-Q schedules of
// throttling).
//
// Two fallbacks run each lane's own item serially (the 1D order): a warp
// that is not full (the launch's tail), and a warp whose longest item has
// at most `cte_serial_max` fine tasks — a few serial steps per lane cost
// less than the shuffles of expansion, and nothing is left to balance. (The
// host raises that bound for a launch whose gathers are local: see
// `gathers_local`.)
#pragma once
#include "warpfit/task_source.cuh"

namespace warpfit {

template <class K> struct CteSlot {
    typename K::ctx_t ctx;
    uint64_t task;
    uint64_t delta;  // lo - excl: fine task = position + delta
};

/// Per-warp shared state of the expansion: the slots of the warp's
/// non-empty items, indexed by their rank among them. Written once before
/// the rounds; the rounds only read it, so they need no barrier.
template <class K> struct CteShared {
    CteSlot<K> slot[WARP];
};

/// Whether CTE may fold a round that one item owns whole without a scan
/// (`Cte::expand`): the reduce operator commutes (the lanes' values then
/// fold out of fine-task order) and does not short-circuit (settling is
/// tracked per round, through the scan).
template <class K> struct carries {
    static constexpr bool value = commutes<K>::value && !short_circuits<K>::value;
};

/// Lane 0 ends with the fold of every lane's `v` (other lanes with partial
/// folds): a shuffle-down tree, which reads only lanes below 32 on the way
/// to lane 0. Operands are not kept in lane order: for commuting operators.
template <class K, class T, class F> __device__ __forceinline__ T lane0_total(T v, F& f) {
#pragma unroll
    for (int d = WARP / 2; d >= 1; d >>= 1) {
        v = K::reduce(v, shfl_down(v, d), f);
    }
    return v;
}

struct Cte {
    /// One round's mapped value and the facts its segmented scan needs.
    template <class K> struct Round {
        typename K::acc_t v;
        int run_start;  // first lane of this lane's owner run in the round
        bool active;    // the lane's position is below the warp's total
        unsigned ends;  // bit l: a non-empty item ends at position base + l
    };

    /// Maps the round at `base`: finds every lane's owner and maps its fine
    /// task. `ended` counts the non-empty items that ended before the round
    /// (the rank of the round's first owner) and is advanced past it.
    ///
    /// Positions below `lead` (the first round's leading lanes, see
    /// `lead_of`) belong to no item: those lanes are inactive and the first
    /// run starts after them.
    ///
    /// Items whose rank is set in `settled` (short-circuiting folds) are not
    /// mapped: their lanes yield `acc_t()` (zero), which the settled accumulator
    /// absorbs.
    template <class K, class Off, class F>
    static __device__ __forceinline__ Round<K> map_round(const typename K::params_t& p, const CteShared<K>& sh,
                                                         Off excl, Off size, Off total, Off base, Off lead,
                                                         int& ended, F& f, unsigned settled = 0u) {
        typedef typename K::acc_t acc_t;
        const int lane = lane_id();
        // Non-empty items end at distinct positions, so one bit each.
        const Off incl = excl + size;
        const bool ends = size > 0 && incl > base && incl <= base + WARP;
        const unsigned end_mask = __reduce_or_sync(FULL_MASK, ends ? 1u << unsigned(incl - base - 1) : 0u);
        const unsigned below = end_mask & ((1u << lane) - 1u);
        Round<K> r;
        const int first = base < lead ? int(lead - base) : 0;  // lanes before the walk's start
        r.run_start = below ? WARP - __clz(below) : first;     // one past the last end below the lane
        const Off pos = base + Off(lane);
        r.active = pos >= lead && pos < total;
        r.ends = end_mask;
        r.v = acc_t();
        const int owner = ended + __popc(below);
        if (r.active && !((settled >> owner) & 1u)) {
            const CteSlot<K>& sl = sh.slot[owner];
            r.v = K::map(p, sl.task, sl.ctx, uint64_t(pos) + sl.delta, f);
            f.attribute(sl.task);
        }
        ended += __popc(end_mask);
        return r;
    }

    /// Segmented inclusive scan of round `base`, operands in lane order;
    /// the owner lane of each run folds the run's total onto `own`. Lanes
    /// of one run are contiguous and active, so a partner inside the run
    /// always holds a value.
    template <class K, class Off, class F>
    static __device__ __forceinline__ void reduce_round(Round<K> r, Off excl, Off size, Off base,
                                                        Partial<typename K::acc_t>& own, F& f) {
        typedef typename K::acc_t acc_t;
        const int lane = lane_id();
        acc_t v = r.v;
#pragma unroll
        for (int d = 1; d < WARP; d <<= 1) {
            const acc_t u = shfl_up(v, d);
            if (r.active && lane - d >= r.run_start) {
                v = K::reduce(u, v, f);
            }
        }
        // The owner lane takes its run's total from the run's last lane.
        const Off incl = excl + size;
        const bool mine = size > 0 && excl < base + WARP && incl > base;
        const Off end = incl < base + WARP ? incl : base + WARP;
        const acc_t t = shfl(v, mine ? int(end - 1 - base) : 0);
        if (mine) {
            own.template push<K>(t, f);
        }
    }

    /// The expansion proper, with positions of type `Off` (u32 when the
    /// warp's total fits, the common case: cheaper compares and shuffles).
    ///
    /// A short-circuiting fold (`any` / `all`; `rank` is the lane's item's
    /// rank among the non-empty ones) skips the fine tasks of items already
    /// settled, and the walk ends once no item is left that is neither
    /// settled nor ended.
    template <class K, class Off, class F>
    static __device__ __forceinline__ Partial<typename K::acc_t> expand(const typename K::params_t& p,
                                                                        CteShared<K>& sh, Off excl, Off size,
                                                                        Off total, Off lead, F& f, int rank = 0) {
        typedef typename K::acc_t acc_t;
        Partial<acc_t> own;
        int ended = 0;           // non-empty items that ended before the round
        unsigned settled = 0u;   // by rank: items whose fold is settled
        for (Off base = 0; base < total; base += WARP) {
            Round<K> r = map_round<K, Off>(p, sh, excl, size, total, base, lead, ended, f, settled);
            if (carries<K>::value && r.ends == 0u && base >= lead) {
                // A round in which no item ends (past the leading lanes)
                // belongs whole to one item: each lane folds its value, and
                // those of the following such rounds, onto a carry of its
                // own instead of scanning. The next round with an end (there
                // is one: the last item ends in the last round) starts with
                // the same item's run, so the carries' total joins the scan
                // through lane 0. The carry lives in this inner walk only,
                // not across the scan.
                acc_t carry = r.v;
                for (;;) {
                    base += WARP;
                    r = map_round<K, Off>(p, sh, excl, size, total, base, lead, ended, f);
                    if (r.ends != 0u) {
                        break;
                    }
                    carry = K::reduce(carry, r.v, f);
                }
                const acc_t t = lane0_total<K>(carry, f);
                if (lane_id() == 0) {
                    r.v = K::reduce(t, r.v, f);
                }
            }
            reduce_round<K, Off>(r, excl, size, base, own, f);
            if (short_circuits<K>::value) {
                const bool done = size > 0 && settle<K>::done(own);
                const bool open = size > 0 && !done && excl + size > base + WARP;
                if (!__any_sync(FULL_MASK, open)) {
                    break;
                }
                settled = __reduce_or_sync(FULL_MASK, done ? 1u << rank : 0u);
            }
        }
        return own;
    }

    /// Where the walk of a warp's concatenated range starts: the first
    /// non-empty item's first fine task modulo 32 (`nonempty`, the ballot of
    /// non-empty items, is not zero). A round over consecutive items then
    /// maps fine tasks `32j .. 32j + 32`, whose loads at the fine-task index
    /// read one aligned block of 32 elements per array (for a 4-byte array
    /// one 128-byte line, one L2 request) rather than parts of two. It costs
    /// the first round `lead` idle lanes: at most one round more per warp.
    template <class K>
    static __device__ __forceinline__ uint64_t lead_of(const Item<K>& it, unsigned nonempty) {
        const unsigned lo = unsigned(it.lo) & unsigned(WARP - 1);
        return uint64_t(shfl(lo, __ffs(nonempty) - 1));
    }

    /// Runs one warp's items: 32 consecutive ones from `base_item`, or over
    /// a packed task list (`packed`) group `gw`'s segments.
    template <class K, class Src>
    static __device__ __forceinline__ void run_warp(const typename K::params_t& p, const LaunchArgs& a,
                                                    CteShared<K>& sh, uint64_t base_item, bool packed,
                                                    uint64_t gw) {
        typedef typename K::acc_t acc_t;
        const int lane = lane_id();
        uint64_t i = base_item + uint64_t(lane);
        uint32_t whole_run = 0xffffffffu;  // packed: the first task of a group of whole tasks
        if (packed) {
            // Packed: this warp's segments are a group the host bounded by
            // work. A group of fewer than 32 holds long segments (the
            // budget filled up), exactly what expansion is for, so it counts
            // as full.
            if (gw >= a.n_warps) {
                return;  // the last block's spare warps (warp-uniform)
            }
            const uint32_t first = a.warp_first[gw];
            const uint32_t end = a.warp_first[gw + 1];
            whole_run = a.warp_task[gw];
            i = first + uint32_t(lane) < end ? uint64_t(first) + uint64_t(lane) : a.n_items;
        }

        Fault f;
        Item<K> it;
        if (whole_run != 0xffffffffu) {
            // Whole consecutive tasks (the host checked): the tasks' own
            // ranges, without reading their segments.
            it.slot = uint32_t(i);
            load_task<K>(p, uint64_t(whole_run) + uint64_t(lane), i < a.n_items, it, f);
        } else {
            Src::template load<K>(p, a, i, it, f);
        }
        const uint64_t size = it.valid ? it.hi - it.lo : 0;

        const unsigned max_size = __reduce_max_sync(FULL_MASK, unsigned(size > 0xffffffffull ? 0xffffffffull : size));
        const bool full = packed || base_item + WARP <= a.n_items;

        // Warp-uniform: `full` and `max_size` are the same on every lane.
        if (!full || max_size <= a.cte_serial_max) {
            // 1D: every lane folds its own item from `init`.
            if (it.valid) {
                Partial<acc_t> acc = seed<K>(p, a, it, f);
                fold_item<K>(p, it, acc, f);
                finish<K>(p, a, it, acc, true, f);
            }
            publish(a.fault, f);
            return;
        }

        // Inclusive scan of the sizes.
        uint64_t incl = size;
#pragma unroll
        for (int d = 1; d < WARP; d <<= 1) {
            const uint64_t o = shfl_up(incl, d);
            if (lane >= d) {
                incl += o;
            }
        }
        const unsigned nonempty = __ballot_sync(FULL_MASK, size > 0);
        const uint64_t lead = lead_of(it, nonempty);
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
        // A prologue fault is final (the item is invalid): publish it now,
        // so that no fault record stays live across the rounds.
        publish(a.fault, f);
        f = Fault();

        // Expanded with lean checks; if any lane's flag went up, every lane
        // folds its own item again with the exact fault record (the warp
        // fails the launch, so only the record matters). Its range comes
        // back from the slot, so that `lo`/`hi` need no registers meanwhile.
        // When every item's range ends within the arrays read at the fine-task
        // index (`Kernel::direct_len`), those loads go unchecked.
        const bool ranges_ok = __all_sync(FULL_MASK, size == 0 || it.hi <= K::direct_len(p));
        LeanFault lean;
        Partial<acc_t> own;
        if (total >= 0xffffff00ull) {
            own = expand<K, uint64_t>(p, sh, excl, size, total, lead, lean, rank);
        } else if (ranges_ok) {
            RangeCheckedLeanFault checked;
            own = expand<K, uint32_t>(p, sh, uint32_t(excl), uint32_t(size), uint32_t(total), uint32_t(lead),
                                      checked, rank);
            lean.bad = checked.bad;
        } else {
            own = expand<K, uint32_t>(p, sh, uint32_t(excl), uint32_t(size), uint32_t(total), uint32_t(lead), lean,
                                      rank);
        }
        if (__any_sync(FULL_MASK, lean.bad)) {
            Item<K> again = it;
            again.lo = again.hi = 0;
            if (size > 0) {
                again.lo = excl + sh.slot[rank].delta;
                again.hi = again.lo + size;
            }
            own = Partial<acc_t>();
            fold_serial<K>(p, again, own, f);
        }
        f.attribute(it.task);
        finish<K>(p, a, it, own, false, f);
        publish(a.fault, f);
    }

    template <class K, class Src> static __device__ __forceinline__ void run(const typename K::params_t& p,
                                                                             const LaunchArgs& a) {
        __shared__ CteShared<K> s_warp[WARPS_PER_BLOCK];
        CteShared<K>& sh = s_warp[int(threadIdx.x) / WARP];
        const uint64_t base_item = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) - uint64_t(lane_id());
        const bool packed = Src::is_list && a.warp_first != nullptr;
        if (Src::is_queue) {
            // CF-Q / SJ-Q (Chen et al., Algorithm 2): a persistent grid whose
            // warps dequeue chunks of `queue_chunk` groups, one atomic per
            // chunk, so the groups start in list (partition) order whatever
            // order the hardware runs the blocks in.
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
                    __syncwarp();  // the next group rewrites the slots this one read
                }
            }
        }
        run_warp<K, Src>(p, a, sh, base_item, packed, base_item / WARP);
    }
};

}  // namespace warpfit

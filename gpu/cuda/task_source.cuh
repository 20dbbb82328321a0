// warpfit device library: task sources.
//
// A task source turns an item number into an `Item`: the coarse task, its
// prologue bindings, the fine-task range to fold, and what to do with the
// result. `AllTasks` is tasks 0..n, each whole. `TaskList` reads
// `(task, lo, hi)` segments: a segment whose task occurs once is whole; a
// piece of a split task leaves a partial in its per-segment scratch slot,
// which the merge kernel (merge.cuh) folds in list order.
//
// A CTE launch may run a task list packed by work: warp w takes segments
// warp_first[w] .. warp_first[w + 1] (at most 32, one per lane), grouped
// on the host so that each warp's fine tasks stay within a budget. Tasks
// no longer than the budget then run whole, wherever they fall, and only
// longer ones are split.
#pragma once
#include "warpfit/fault.cuh"
#include "warpfit/warp.cuh"

namespace warpfit {

/// Launch-wide arguments of every library kernel, passed by value after
/// the kernel's `Params`. Mirrored by `LaunchArgs` in `gpu/src/abi.rs`.
struct LaunchArgs {
    uint64_t n_items;          // tasks (AllTasks), segments (TaskList) or split tasks (merge); ColumnList
                               // and its merge: those times `columns`
    const Segment* segments;   // TaskList
    const uint8_t* whole;      // TaskList: 1 when the segment's task occurs once
    void* scratch;             // TaskList: one acc_t per segment (split segments only)
    uint8_t* present;          // TaskList: 1 when the segment's partial holds a value
    const SplitTask* split;    // merge
    const uint32_t* split_segments;  // merge: segment ids grouped by split task
    FaultRecord* fault;
    uint32_t* sizes;           // sizes kernel: (lo, hi) per task, saturated to u32
    uint32_t cte_serial_max;   // CTE: fold per lane when the warp's longest item is at most this
    uint32_t n_warps;          // CTE over a packed TaskList: warps (groups of segments)
    const uint32_t* warp_first;  // CTE over a packed TaskList: first segment of each warp, then the end
    const uint32_t* warp_task;   // CTE over a packed TaskList: the group's first task when its
                                 // segments are whole consecutive tasks, else ~0u
    void* carry;                 // CARRY_*: one acc_t per task, carried between launches
    uint32_t carry_mode;         // CARRY_NONE, or which launch of a carried sequence this is
    uint32_t flags;              // LIST_*
    uint32_t* queue;             // CTE over a packed TaskList: a zeroed queue head; warps take
                                 // chunks of `queue_chunk` groups from it in list order (CF-Q,
                                 // SJ-Q). Null: warp w takes group w.
    uint32_t queue_chunk;        // groups per dequeue
    uint32_t queue_pad;
    const uint32_t* frontier;    // FrontierTasks (worklist.cuh): the worklist's items
    const unsigned long long* frontier_count;  // FrontierTasks: its push count on the device
    void* donated;               // work donation (cte_for_each.cuh): the board's chunk records
    unsigned long long* donation;  // work donation: [chunks posted, donation blocks finished, chunks run in all]
    uint64_t donated_bytes;      // work donation: bytes at `donated`
    uint32_t donate_min;         // work donation: items of more fine tasks are donated (0: none)
    uint32_t donate_pad;
    uint64_t columns;              // ColumnList, merge of a column list, RowEnds, PieceEnds: the 2-D
                                   // kernel's columns k
    const uint32_t* column_slot;   // ColumnList: per segment, its position among the split segments
    const uint32_t* gate;          // GATE_IF_*: the validation launch's fault record's claimed word
    uint32_t gate_when;            // GATE_*: whether the launch runs only after a validation
    uint32_t validate_lanes;       // ValidateEnds: lanes per item, a power of two up to 32
};

// A 2-D launch checked by a validation launch first (`ValidateEnds`,
// thread.cuh) runs two kernels after it, each behind a gate on what the
// validation found: the fold with its loads unchecked where it found every
// load in range, the ordinary checked fold (which records the fault as the
// CPU twin reports it) where it did not. The one whose gate is shut returns
// at once.
constexpr uint32_t GATE_NONE = 0;
constexpr uint32_t GATE_IF_VALID = 1;
constexpr uint32_t GATE_IF_INVALID = 2;

/// Whether a launch behind a gate runs (every block reads the same word).
__device__ __forceinline__ bool gate_open(const LaunchArgs& a) {
    if (a.gate_when == GATE_NONE) {
        return true;
    }
    const bool invalid = *a.gate != 0u;
    return (a.gate_when == GATE_IF_INVALID) == invalid;
}

/// `LaunchArgs::flags`: the list's segments index arrays the host laid out
/// itself (the throttled handle's part-major copies), not the task's own
/// range from its prologue, so they are not checked against it. The fine
/// arrays' own bounds are still checked at every load.
constexpr uint32_t LIST_TRUSTED = 1;

// A task's fold carried over a sequence of launches (the cache-fit
// partitions of a throttled kernel, each folding its share of every task's
// fine tasks): the first launch folds from `init` and stores the value in
// `carry[task]` instead of running the epilogue; the middle ones fold onto
// `carry[task]` and store it again; the last folds onto it and runs the
// epilogue. The launches run in stream order and each task is finished by
// one thread per launch, so the value is the fold of the task's fine tasks
// in launch order, deterministically, with no atomics.
constexpr uint32_t CARRY_NONE = 0;
constexpr uint32_t CARRY_FIRST = 1;
constexpr uint32_t CARRY_MIDDLE = 2;
constexpr uint32_t CARRY_LAST = 3;

/// One unit of work for a decomposition.
template <class K> struct Item {
    typename K::ctx_t ctx;
    uint64_t task;
    uint64_t lo;
    uint64_t hi;
    uint32_t slot;  // TaskList: the segment id (scratch slot)
    bool whole;     // fold from `init` and run the epilogue; else leave a partial
    bool valid;     // false past the end, or when the prologue faulted
};

/// Task `i` whole, its range from the prologue (`valid` false when not
/// `live`, or when the prologue faulted).
template <class K>
__device__ __forceinline__ void load_task(const typename K::params_t& p, uint64_t i, bool live, Item<K>& it,
                                          Fault& f) {
    it.valid = false;
    it.whole = true;
    it.task = i;
    it.lo = it.hi = 0;
    if (!live) {
        return;
    }
    K::prologue(p, i, it.ctx, it.lo, it.hi, f);
    if (f.any()) {
        f.attribute(i);
        it.lo = it.hi = 0;
        return;
    }
    if (it.hi < it.lo) {
        it.hi = it.lo;  // an empty Rust range
    }
    it.valid = true;
}

/// Tasks 0..n, each whole.
struct AllTasks {
    static constexpr bool is_list = false;
    static constexpr bool is_queue = false;

    template <class K>
    static __device__ __forceinline__ void load(const typename K::params_t& p, const LaunchArgs& a, uint64_t i,
                                                Item<K>& it, Fault& f) {
        it.slot = 0;
        load_task<K>(p, i, i < a.n_items, it, f);
    }
};

/// `it` as no item: not valid, task 0, an empty range, slot 0.
template <class K> __device__ __forceinline__ void empty_item(Item<K>& it) {
    it.valid = false;
    it.whole = true;
    it.slot = 0;
    it.task = 0;
    it.lo = it.hi = 0;
}

/// Segment `seg` of the list as item `it` of task `task` (the segment's
/// own task, or a 2-D kernel's flattened task in the segment's row): its
/// range, checked against the task's own unless the host laid the list out
/// itself.
template <class K>
__device__ __forceinline__ void load_segment(const typename K::params_t& p, const LaunchArgs& a, uint64_t seg,
                                             uint64_t task, Item<K>& it, Fault& f) {
    const Segment s = a.segments[seg];
    it.task = task;
    uint64_t tlo = 0, thi = 0;
    K::prologue(p, it.task, it.ctx, tlo, thi, f);
    if (f.any()) {
        f.attribute(it.task);
        return;
    }
    // The same check as the CPU executor: the segment lies in the task's
    // range (unless the host laid the positions out itself).
    if ((a.flags & LIST_TRUSTED) == 0 && (uint64_t(s.lo) < tlo || uint64_t(s.hi) > (thi > tlo ? thi : tlo))) {
        Fault g;
        g.kind = FAULT_SEGMENT;
        g.index = seg;
        g.task = it.task;
        publish(a.fault, g, tlo, thi);
        return;
    }
    it.lo = s.lo;
    it.hi = s.hi;
    it.valid = true;
}

/// The segments of a task list.
struct TaskList {
    static constexpr bool is_list = true;
    static constexpr bool is_queue = false;

    template <class K>
    static __device__ __forceinline__ void load(const typename K::params_t& p, const LaunchArgs& a, uint64_t i,
                                                Item<K>& it, Fault& f) {
        empty_item(it);
        it.slot = uint32_t(i);
        if (i >= a.n_items) {
            return;
        }
        it.whole = a.whole[i] != 0;
        load_segment<K>(p, a, i, a.segments[i].task, it, f);
    }
};

/// `a / b` for the index arithmetic of column lists: the hardware's 32-bit
/// division when both fit (64-bit division is a long subroutine).
__device__ __forceinline__ uint64_t index_div(uint64_t a, uint64_t b) {
    return (a | b) >> 32 ? a / b : uint64_t(uint32_t(a) / uint32_t(b));
}

/// A task list of a 2-D kernel's rows (`columns = k`, docs/codegen.md),
/// spread over its `a.columns` columns: item i is segment `i / k` at
/// column `j = i % k`, the flattened task `row·k + j`, so that consecutive
/// lanes take consecutive columns of one piece of a row (its loads one
/// address for the warp, its gathers of `x` coalesced), as the launch
/// over all tasks does; a hub row cut into pieces then spreads over as
/// many threads per column as it has pieces. A split piece's partial for
/// column j goes to slot `column_slot[seg]·k + j`, where `column_slot` is
/// the piece's position among the split segments, so that scratch holds
/// `k` partials per split segment only (`merge_columns`, merge.cuh).
struct ColumnList {
    static constexpr bool is_list = true;
    static constexpr bool is_queue = false;

    template <class K>
    static __device__ __forceinline__ void load(const typename K::params_t& p, const LaunchArgs& a, uint64_t i,
                                                Item<K>& it, Fault& f) {
        empty_item(it);
        if (i >= a.n_items) {
            return;
        }
        const uint64_t k = a.columns;
        const uint64_t seg = index_div(i, k);
        const uint64_t j = i - seg * k;
        it.whole = a.whole[seg] != 0;
        if (!it.whole) {
            it.slot = uint32_t(uint64_t(a.column_slot[seg]) * k + j);
        }
        load_segment<K>(p, a, seg, uint64_t(a.segments[seg].task) * k + j, it, f);
    }
};

/// The column `j` of a 2-D kernel's validation item `i`: each row or piece
/// is validated at its first column (`i` even) and its last (`i` odd).
__device__ __forceinline__ uint64_t end_column(uint64_t i, uint64_t k) {
    return (i & 1) != 0 && k > 0 ? k - 1 : 0;
}

/// A 2-D kernel's rows at their first and last columns (`n_items` is twice
/// the rows): item `i` is the flattened task `(i / 2)·k + end_column(i)`.
struct RowEnds {
    static constexpr bool is_list = false;
    static constexpr bool is_queue = false;

    template <class K>
    static __device__ __forceinline__ void load(const typename K::params_t& p, const LaunchArgs& a, uint64_t i,
                                                Item<K>& it, Fault& f) {
        it.slot = 0;
        const uint64_t k = a.columns;
        load_task<K>(p, (i >> 1) * k + end_column(i, k), i < a.n_items, it, f);
    }
};

/// A column list's pieces at their rows' first and last columns
/// (`n_items` is twice the segments): item `i` is segment `i / 2` at
/// column `end_column(i)`, its range checked against its row's as
/// `ColumnList` checks it.
struct PieceEnds {
    static constexpr bool is_list = false;
    static constexpr bool is_queue = false;

    template <class K>
    static __device__ __forceinline__ void load(const typename K::params_t& p, const LaunchArgs& a, uint64_t i,
                                                Item<K>& it, Fault& f) {
        empty_item(it);
        if (i >= a.n_items) {
            return;
        }
        const uint64_t k = a.columns;
        const uint64_t seg = i >> 1;
        load_segment<K>(p, a, seg, uint64_t(a.segments[seg].task) * k + end_column(i, k), it, f);
    }
};

/// A task list packed by work whose groups warps take from a device queue
/// (`LaunchArgs::queue`, zeroed before the launch), `queue_chunk` groups per
/// dequeue, in list order: the CF-Q and SJ-Q schedules, where the list is
/// cache-fit partitions in order and the queue keeps a partition's groups
/// together in time whatever order the hardware runs blocks in. CTE only.
struct QueuedTaskList : TaskList {
    static constexpr bool is_queue = true;
};

/// Lines (of 32 elements) the first gathers of a warp's 32 items may touch
/// for the warp to count as local. Neighbouring rows of a spatially ordered
/// mesh or geometric graph start a handful of lines apart; rows of a
/// random or power-law matrix, ~32.
constexpr int LOCAL_LINES = 8;

/// Whether a warp's items gather locally: each non-empty item's first
/// gathered index (`Kernel::gather_at`), bucketed in lines of 32 elements,
/// and few distinct lines over the warp. The size kernel counts such warps;
/// when most are, the host raises CTE's serial-fallback bound, since serial
/// loads of neighbouring lanes then hit lines already in L1 and a serial
/// step costs far fewer instructions than a round of expansion. Kernels
/// with no index-array gather: never.
template <class K>
__device__ __forceinline__ bool gathers_local(const typename K::params_t& p, const Item<K>& it, uint64_t size) {
    if (!K::has_gather) {
        return false;
    }
    // `gather_at` reads an array of at least `direct_len`: only below it.
    const bool probe = size > 0 && it.lo < K::direct_len(p);
    const uint64_t line = probe ? (K::gather_at(p, it.task, it.lo) >> 5) : ~0ull;
    const unsigned same = __match_any_sync(FULL_MASK, line);
    const bool first = probe && (same & ((1u << lane_id()) - 1u)) == 0;
    return __popc(__ballot_sync(FULL_MASK, first)) <= LOCAL_LINES;
}

/// What a whole task's fold starts from: `init`, or in a carried launch
/// after the first the value the launches before it carried.
template <class K>
__device__ __forceinline__ Partial<typename K::acc_t> task_base(const typename K::params_t& p,
                                                                 const LaunchArgs& a, const Item<K>& it,
                                                                 Fault& f) {
    typedef typename K::acc_t acc_t;
    Partial<acc_t> r;
    r.has = true;
    if (a.carry_mode == CARRY_MIDDLE || a.carry_mode == CARRY_LAST) {
        r.value = static_cast<const acc_t*>(a.carry)[it.task];
    } else {
        r.value = K::init(p, it.task, it.ctx, f);
        f.attribute(it.task);
    }
    return r;
}

/// Whether a middle launch of a carried sequence leaves the item's carry
/// as it is: its task has no fine task in this part, and folding nothing
/// onto the carried value is that value. Such an item reads and writes
/// nothing (a row of a 2-D kernel carries `k` values, as many bytes per
/// part as its gathers).
template <class K>
__device__ __forceinline__ bool carried_through(const LaunchArgs& a, const Item<K>& it) {
    return a.carry_mode == CARRY_MIDDLE && it.lo == it.hi;
}

/// The accumulator an item starts from. A lane that folds a whole task
/// alone starts from `task_base` (`init`) and folds left to right, exactly
/// as the CPU twin does; cooperative decompositions start empty and put
/// the base in front when they finish.
template <class K>
__device__ __forceinline__ Partial<typename K::acc_t> seed(const typename K::params_t& p, const LaunchArgs& a,
                                                            const Item<K>& it, Fault& f) {
    Partial<typename K::acc_t> r;
    if (it.valid && it.whole && !carried_through(a, it)) {
        r = task_base<K>(p, a, it, f);
    }
    return r;
}

/// Whether functor `K`'s fold may stop early: `(lo..hi).any(..)` and
/// `.all(..)` generate `short_circuit` and `settled`.
template <class K, class = void> struct short_circuits {
    static constexpr bool value = false;
};
template <class K> struct short_circuits<K, typename void_type<decltype(K::short_circuit)>::type> {
    static constexpr bool value = K::short_circuit;
};

/// Whether functor `K`'s reduce operator commutes (and associates) exactly
/// as the language defines it: the generated `commutative` (wrapping
/// integer and float `+`/`*`, bit operators, `min`/`max`). Float `+` and
/// `*` commute exactly but associate only within rounding, which every
/// parallel fold already relies on. Operators the compiler cannot see
/// through (a `#[device_fn]`) are folded in fine-task order.
template <class K, class = void> struct commutes {
    static constexpr bool value = false;
};
template <class K> struct commutes<K, typename void_type<decltype(K::commutative)>::type> {
    static constexpr bool value = K::commutative;
};

/// Whether `acc` settles `K`'s fold: nothing folded onto it changes it
/// (`any`: true; `all`: false), so the task's remaining fine tasks may be
/// skipped. Always false for folds that do not short-circuit, so that the
/// checks below compile away for them.
template <class K, bool S = short_circuits<K>::value> struct settle {
    static __device__ __forceinline__ bool done(const Partial<typename K::acc_t>&) { return false; }
    static __device__ __forceinline__ bool done(const typename K::acc_t&) { return false; }
};
template <class K> struct settle<K, true> {
    static __device__ __forceinline__ bool done(const Partial<typename K::acc_t>& a) {
        return a.has && K::settled(a.value);
    }
    static __device__ __forceinline__ bool done(const typename K::acc_t& a) { return K::settled(a); }
};

/// Folds fine tasks `lo..hi` of `it` onto `acc`, left to right, up to the
/// first value that settles it (`any` / `all`).
template <class K, class F>
__device__ __forceinline__ void fold_serial(const typename K::params_t& p, const Item<K>& it,
                                            Partial<typename K::acc_t>& acc, F& f) {
#pragma unroll 4
    for (uint64_t k = it.lo; k < it.hi; ++k) {
        acc.template push<K>(K::map(p, it.task, it.ctx, k, f), f);
        if (settle<K>::done(acc)) {
            break;
        }
    }
    f.attribute(it.task);
}

/// `fold_serial` with the loads at the fine-task index unchecked when the
/// item's range ends within `Kernel::direct_len` (the common case: then no
/// such load can fault), checked otherwise.
template <class K>
__device__ __forceinline__ void fold_item(const typename K::params_t& p, const Item<K>& it,
                                          Partial<typename K::acc_t>& acc, Fault& f) {
    if (it.hi <= K::direct_len(p)) {
        RangeCheckedFault r(f);
        fold_serial<K>(p, it, acc, r);
        f = r;
    } else {
        fold_serial<K>(p, it, acc, f);
    }
}

/// `fold_serial` over the accumulator's value itself once it holds one (no
/// per-element test of `Partial::has`).
template <class K, class F>
__device__ __forceinline__ void fold_serial_value(const typename K::params_t& p, const Item<K>& it,
                                                  Partial<typename K::acc_t>& acc, F& f) {
    uint64_t k = it.lo;
    if (!acc.has) {
        if (k >= it.hi) {
            return;
        }
        acc.value = K::map(p, it.task, it.ctx, k, f);
        acc.has = true;
        if (settle<K>::done(acc.value)) {
            return;
        }
        ++k;
    }
    typename K::acc_t v = acc.value;
#pragma unroll 4
    for (; k < it.hi; ++k) {
        v = K::reduce(v, K::map(p, it.task, it.ctx, k, f), f);
        if (settle<K>::done(v)) {
            break;
        }
    }
    acc.value = v;
}

/// Whether a functor is a push kernel's `for_each` (`is_for_each`): its
/// map runs the body for its effects, and the fold is a placeholder. Every
/// other fold's map only reads (the language allows no effects there,
/// since CTE's lean pass may evaluate it twice), so folding an item twice
/// does what folding it once does.
template <class K, class = void> struct is_for_each {
    static constexpr bool value = false;
};
template <class K> struct is_for_each<K, typename void_type<decltype(K::is_for_each)>::type> {
    static constexpr bool value = K::is_for_each;
};

/// `fold_item` for a thread that folds its item alone (`Thread`): the fold
/// runs with a lean fault flag, where a checked load costs a compare and a
/// predicate instead of the record's selects, and its loads at the
/// fine-task index stay cached (other threads may read the same lines: a
/// 2-D kernel's other columns of the row). An item that raised the flag
/// folds again from `acc` with the full record, so the fault reported is
/// the CPU twin's; the second fold reads what the first did. A push
/// kernel's `for_each` (`is_for_each`), whose map writes, folds once, with
/// the record. (Measured:
/// BENCHMARKS.md, "Threads fold with a lean fault flag".)
template <class K>
__device__ __forceinline__ void fold_item_alone(const typename K::params_t& p, const Item<K>& it,
                                                Partial<typename K::acc_t>& acc, Fault& f) {
    if (!is_for_each<K>::value && it.hi <= K::direct_len(p)) {
        RangeCheckedCachedLeanFault lean;
        Partial<typename K::acc_t> r = acc;
        fold_serial_value<K>(p, it, r, lean);
        if (!lean.any()) {
            acc = r;
            return;
        }
    }
    fold_item<K>(p, it, acc, f);
}

/// What happens to an item's folded value: a whole task runs its epilogue
/// on it (with `task_base` put in front unless `seeded`), or in a carried
/// launch before the last stores it in `carry`; a piece of a split task
/// stores its partial in its scratch slot. The epilogue is skipped when
/// this thread faulted: the launch fails and outputs are unspecified.
template <class K>
__device__ __forceinline__ void finish(const typename K::params_t& p, const LaunchArgs& a, const Item<K>& it,
                                       const Partial<typename K::acc_t>& acc, bool seeded, Fault& f) {
    typedef typename K::acc_t acc_t;
    if (!it.valid) {
        return;
    }
    if (it.whole) {
        if (carried_through(a, it)) {
            return;
        }
        Partial<acc_t> r = acc;
        if (!seeded) {
            r = task_base<K>(p, a, it, f);
            r.template append<K>(acc, f);
            f.attribute(it.task);
        }
        if (f.any()) {
            return;
        }
        if (a.carry_mode == CARRY_FIRST || a.carry_mode == CARRY_MIDDLE) {
            static_cast<acc_t*>(a.carry)[it.task] = r.value;
        } else {
            K::epilogue(p, it.task, it.ctx, r.value, f);
            f.attribute(it.task);
        }
    } else {
        static_cast<acc_t*>(a.scratch)[it.slot] = acc.value;
        a.present[it.slot] = acc.has ? 1 : 0;
    }
}

}  // namespace warpfit

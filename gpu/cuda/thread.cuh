// warpfit device library: the 1D decomposition (`Thread`).
//
// One item per thread, folded left to right from `init`: the CPU twin's
// order exactly. Cheapest per fine task, but a warp waits for its longest
// task, and neighbouring lanes read addresses a row apart. The fold runs
// with a lean fault flag (`fold_item_alone`), the full record only for an
// item that raised it. For 2-D launches, also the validation launch, the
// fold it lets run unchecked two columns a thread, and the checked fold over
// a strided grid (`ValidateEnds`, `ThreadPairValidated`, `ThreadStrided`).
#pragma once
#include "warpfit/task_source.cuh"

namespace warpfit {

struct Thread {
    template <class K, class Src> static __device__ __forceinline__ void run(const typename K::params_t& p,
                                                                             const LaunchArgs& a) {
        item<K, Src>(p, a, uint64_t(blockIdx.x) * BLOCK + threadIdx.x);
    }

    /// Item `i`, folded and finished, its fault published.
    template <class K, class Src>
    static __device__ __forceinline__ void item(const typename K::params_t& p, const LaunchArgs& a, uint64_t i) {
        Fault f;
        Item<K> it;
        Src::template load<K>(p, a, i, it, f);
        if (it.valid) {
            Partial<typename K::acc_t> acc = seed<K>(p, a, it, f);
            fold_item_alone<K>(p, it, acc, f);
            finish<K>(p, a, it, acc, true, f);
        }
        publish(a.fault, f);
    }
};

/// `Thread` over a grid of any size, each thread taking items `i`, `i +
/// grid`, ... below `n_items`: a validated 2-D launch's checked fold, which
/// runs only where the validation found a fault (then the launch fails and
/// speed is moot) and is otherwise a grid of a wave of blocks that return
/// at once, not one of a block per 256 items.
struct ThreadStrided {
    template <class K, class Src> static __device__ __forceinline__ void run(const typename K::params_t& p,
                                                                             const LaunchArgs& a) {
        const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
        for (uint64_t i = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; i < a.n_items; i += stride) {
            Thread::item<K, Src>(p, a, i);
        }
    }
};

/// Folds fine tasks `lo..hi` of two items of one row or piece (two of its
/// columns) onto `a0` and `a1`, each left to right as `fold_serial_value`
/// folds one: the map evaluated at both columns per fine task, its loads at
/// the fine-task index, and the row's address made of them, one for both
/// under a validation's fault state (`ld_pure`, `ld_col`). No settling
/// (`any`/`all` folds one column at a time).
template <class K, class F>
__device__ __forceinline__ void fold_pair_value(const typename K::params_t& p, const Item<K>& it0,
                                                const Item<K>& it1, Partial<typename K::acc_t>& a0,
                                                Partial<typename K::acc_t>& a1, F& f) {
    uint64_t e = it0.lo;
    if (e >= it0.hi) {
        return;
    }
    if (!a0.has || !a1.has) {  // a piece's partials start empty
        a0.template push<K>(K::map(p, it0.task, it0.ctx, e, f), f);
        a1.template push<K>(K::map(p, it1.task, it1.ctx, e, f), f);
        ++e;
    }
    typename K::acc_t v0 = a0.value, v1 = a1.value;
#pragma unroll 4
    for (; e < it0.hi; ++e) {
        v0 = K::reduce(v0, K::map(p, it0.task, it0.ctx, e, f), f);
        v1 = K::reduce(v1, K::map(p, it1.task, it1.ctx, e, f), f);
    }
    a0.value = v0;
    a1.value = v1;
}

/// The fold of a 2-D launch a validation launch (`ValidateEnds`) has
/// covered, behind the gate `GATE_IF_VALID`: its loads unchecked
/// (`ValidatedFault`), so the loop is a chain of plain loads, with no fault
/// flag, no refold with the record and none of their registers; and two
/// columns a thread: thread `q` takes columns `j` and `j + ⌈k/2⌉` of row or
/// piece `q / ⌈k/2⌉` (items of `Src`, numbered as it numbers them: `unit·k
/// + j`), so consecutive lanes still take consecutive columns, and a row's
/// bounds, range and loads at the fine-task index are read once for two
/// columns. A thread holds two items and two accumulators; under the
/// checked fold's fault state that cost more registers than it saved
/// (BENCHMARKS.md, "Two columns a thread, tried and reverted"). An odd
/// column count leaves the last thread of each row one column. The
/// prologue, `init` and the epilogue still check as ever. Written for two
/// columns on purpose: the same fold over arrays of `N` items, unrolled,
/// ran 1.6–1.8× slower at two columns and took 94 to 102 registers at
/// four (BENCHMARKS.md, "Validated folds: loads merged across columns").
struct ThreadPairValidated {
    template <class K, class Src> static __device__ __forceinline__ void run(const typename K::params_t& p,
                                                                             const LaunchArgs& a) {
        const uint64_t q = uint64_t(blockIdx.x) * BLOCK + threadIdx.x;
        const uint64_t k = a.columns;
        if (k == 0) {
            return;
        }
        const uint64_t h = (k + 1) >> 1;
        const uint64_t unit = index_div(q, h);
        const uint64_t j = q - unit * h;
        const uint64_t b0 = unit * k + j;
        const bool two = j + h < k;
        Fault f0, f1;
        Item<K> it0, it1;
        Src::template load<K>(p, a, b0, it0, f0);
        Src::template load<K>(p, a, two ? b0 + h : b0, it1, f1);
        Partial<typename K::acc_t> acc0 = seed<K>(p, a, it0, f0);
        Partial<typename K::acc_t> acc1 = seed<K>(p, a, it1, f1);
        ValidatedFault v;
        if (!short_circuits<K>::value && it0.valid && it1.valid) {
            fold_pair_value<K>(p, it0, it1, acc0, acc1, v);
        } else {
            if (it0.valid) {
                fold_serial_value<K>(p, it0, acc0, v);
            }
            if (it1.valid && two) {
                fold_serial_value<K>(p, it1, acc1, v);
            }
        }
        finish<K>(p, a, it0, acc0, true, f0);
        publish(a.fault, f0);
        if (two) {
            finish<K>(p, a, it1, acc1, true, f1);
            publish(a.fault, f1);
        }
    }
};

/// Whether functor `K`'s map reads the arrays it does not read at the
/// fine-task index only for their values (`leaf_gathers`, decided by the
/// macro): no such value reaches an index, a divisor, a call or a
/// condition. The validation then checks those loads' indices without
/// loading (`ProbeFault`).
template <class K, class = void> struct leaf_gathers {
    static constexpr bool value = false;
};
template <class K> struct leaf_gathers<K, typename void_type<decltype(K::leaf_gathers)>::type> {
    static constexpr bool value = K::leaf_gathers;
};

/// The validation launch of a 2-D launch (`Src` is `RowEnds` or
/// `PieceEnds`, items `2r` and `2r + 1` a row or piece at its first and
/// last column): the map run at every fine task of every row or piece at
/// both columns, its value unused, every load and division checked, by
/// `a.validate_lanes` lanes per row or piece (a power of two up to 32: one
/// where rows are many, more for few long ones) striding over its fine
/// tasks; the second
/// column's loads at the fine-task index hit the lines the first's brought
/// in. For the maps the macro admits (`checks_at_end_columns`), a load is
/// either the same for every column or at `base + j` with `base` the same
/// for every column, so both ends in range means every column in range. Any
/// fault (the prologue's, a piece outside its row, the map's) is published
/// to this launch's own record, whose claimed word is the gate of the two
/// launches after it. No settling: the main fold may reach any fine task.
struct ValidateEnds {
    template <class K, class Src> static __device__ __forceinline__ void run(const typename K::params_t& p,
                                                                             const LaunchArgs& a) {
        const uint64_t t = uint64_t(blockIdx.x) * BLOCK + threadIdx.x;
        const uint32_t lanes = a.validate_lanes > 0 ? a.validate_lanes : 1u;
        const uint32_t shift = __ffs(lanes) - 1;
        const uint64_t group_lane = t & (lanes - 1);
        const uint64_t row = t >> shift;
        Fault f;
        Item<K> first, last;
        Src::template load<K>(p, a, 2 * row, first, f);
        Src::template load<K>(p, a, 2 * row + 1, last, f);
        typedef typename conditional<leaf_gathers<K>::value, ProbeFault, LeanFault>::type Check;
        if (first.valid && last.valid) {
            Check check;
#pragma unroll 2
            for (uint64_t e = first.lo + group_lane; e < first.hi; e += lanes) {
                (void)K::map(p, first.task, first.ctx, e, check);
                (void)K::map(p, last.task, last.ctx, e, check);
            }
            if (check.any()) {
                f.out_of_range(0, 0);  // only the record's being claimed is read
            }
        }
        publish(a.fault, f);
    }
};

}  // namespace warpfit

// warpfit device library: the 1D decomposition (`Thread`).
//
// One item per thread, folded left to right from `init`: the CPU twin's
// order exactly. Cheapest per fine task, but a warp waits for its longest
// task, and neighbouring lanes read addresses a row apart. The fold runs
// with a lean fault flag (`fold_item_alone`), the full record only for an
// item that raised it. For 2-D launches, also the validation launch and the
// fold it lets run unchecked (`ValidateEnds`, `ThreadValidated`).
#pragma once
#include "warpfit/task_source.cuh"

namespace warpfit {

struct Thread {
    template <class K, class Src> static __device__ __forceinline__ void run(const typename K::params_t& p,
                                                                             const LaunchArgs& a) {
        const uint64_t i = uint64_t(blockIdx.x) * BLOCK + threadIdx.x;
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

/// `Thread` for a 2-D launch a validation launch (`ValidateEnds`) has
/// covered: the fold's loads unchecked (`ValidatedFault`), so the loop is a
/// chain of plain loads and the fault flag, its refold with the record and
/// their registers are gone. The prologue, `init` and the epilogue still
/// check as ever. Runs behind the gate `GATE_IF_VALID`.
struct ThreadValidated {
    template <class K, class Src> static __device__ __forceinline__ void run(const typename K::params_t& p,
                                                                             const LaunchArgs& a) {
        const uint64_t i = uint64_t(blockIdx.x) * BLOCK + threadIdx.x;
        Fault f;
        Item<K> it;
        Src::template load<K>(p, a, i, it, f);
        if (it.valid) {
            Partial<typename K::acc_t> acc = seed<K>(p, a, it, f);
            ValidatedFault v;
            fold_serial_value<K>(p, it, acc, v);
            finish<K>(p, a, it, acc, true, f);
        }
        publish(a.fault, f);
    }
};

/// The validation launch of a 2-D launch (`Src` is `RowEnds` or
/// `PieceEnds`): the map run at every fine task of every row or piece at
/// its first and last column, its value unused, every load and division
/// checked. For the maps the macro admits (`checks_at_end_columns`), a load
/// is either the same for every column or at `base + j` with `base` the
/// same for every column, so both ends in range means every column in
/// range. Any fault (the prologue's, a piece outside its row, the map's)
/// is published to this launch's own record, whose claimed word is the
/// gate of the two launches after it. No settling: the main fold may reach
/// any fine task.
struct ValidateEnds {
    template <class K, class Src> static __device__ __forceinline__ void run(const typename K::params_t& p,
                                                                             const LaunchArgs& a) {
        const uint64_t i = uint64_t(blockIdx.x) * BLOCK + threadIdx.x;
        Fault f;
        Item<K> it;
        Src::template load<K>(p, a, i, it, f);
        if (it.valid) {
            LeanFault lean;
#pragma unroll 4
            for (uint64_t e = it.lo; e < it.hi; ++e) {
                (void)K::map(p, it.task, it.ctx, e, lean);
            }
            if (lean.any()) {
                f.out_of_range(0, 0);  // only the record's being claimed is read
            }
        }
        publish(a.fault, f);
    }
};

}  // namespace warpfit

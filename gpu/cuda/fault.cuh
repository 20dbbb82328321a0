// warpfit device library: faults.
//
// A kernel body never traps: a checked load out of range or an integer
// division by zero records a `Fault` in the thread that hit it and the
// computation goes on with a zero. When the thread is done, the first fault
// it saw is published to the launch's `FaultRecord` (first claimant wins);
// the host reads the record after the launch and turns it into the same
// `Error` the CPU twin returns.
#pragma once
#include "warpfit/types.cuh"

namespace warpfit {

enum FaultKind : uint32_t {
    FAULT_NONE = 0,
    /// `array[index]` out of range; `array` is the parameter's position in
    /// `KernelSpec::params` (the task index excluded).
    FAULT_INDEX = 1,
    /// Integer `/` or `%` by zero.
    FAULT_DIV_ZERO = 2,
    /// A task-list segment outside its task's own fine-task range.
    FAULT_SEGMENT = 3,
};

/// Sentinel for "no task attributed yet".
constexpr uint64_t NO_TASK = ~0ull;

/// The first fault of one thread. Kept small (it lives in registers for
/// the whole kernel); the library attributes it to a task after each call
/// into the kernel functor.
struct Fault {
    uint32_t kind;
    uint32_t array;
    uint64_t index;
    uint64_t task;

    /// Loads at the fine-task index are checked one by one (`ld_k`).
    static constexpr bool ranges_checked = false;
    static constexpr bool streaming = false;
    /// Every load is checked (`ld`), and loads.
    static constexpr bool validated = false;
    static constexpr bool probe_only = false;

    __device__ __forceinline__ Fault() : kind(FAULT_NONE), array(0), index(0), task(NO_TASK) {}

    __device__ __forceinline__ bool any() const { return kind != FAULT_NONE; }

    /// Records an out-of-range index into parameter `array` (first fault wins).
    __device__ __forceinline__ void out_of_range(uint32_t array_id, uint64_t i) {
        if (kind == FAULT_NONE) {
            kind = FAULT_INDEX;
            array = array_id;
            index = i;
        }
    }

    /// Records an integer division by zero (first fault wins).
    __device__ __forceinline__ void div_zero() {
        if (kind == FAULT_NONE) {
            kind = FAULT_DIV_ZERO;
        }
    }

    /// Attributes a fault recorded since the last call to `task`.
    __device__ __forceinline__ void attribute(uint64_t t) {
        if (kind != FAULT_NONE && task == NO_TASK) {
            task = t;
        }
    }
};

/// The fault state of the CTE expansion's rounds: one flag, no record.
/// Checking an index costs a compare and a predicate instead of the
/// record's selects, and no task attribution runs per round; a warp that
/// raised the flag folds its items again with a `Fault` to record exactly
/// what the CPU twin reports (the launch fails either way, so speed there
/// is moot). Measurements: BENCHMARKS.md, "Tuning constants: history".
struct LeanFault {
    bool bad;

    static constexpr bool ranges_checked = false;
    static constexpr bool streaming = false;
    static constexpr bool validated = false;
    static constexpr bool probe_only = false;

    __device__ __forceinline__ LeanFault() : bad(false) {}

    __device__ __forceinline__ bool any() const { return bad; }
    __device__ __forceinline__ void out_of_range(uint32_t, uint64_t) { bad = true; }
    __device__ __forceinline__ void div_zero() { bad = true; }
    __device__ __forceinline__ void attribute(uint64_t) {}
};

/// `Fault` for an item whose range lies within `Kernel::direct_len`: loads
/// at the fine-task index (`ld_k`) need no check; the record is the same.
struct RangeCheckedFault : Fault {
    static constexpr bool ranges_checked = true;

    __device__ __forceinline__ explicit RangeCheckedFault(const Fault& f) : Fault(f) {}
};

/// `LeanFault` for a warp whose items' ranges all lie within
/// `Kernel::direct_len`: loads at the fine-task index (`ld_k`) need no
/// check, only gathers and divisions do: fewer instructions per round of
/// expansion (measurements: BENCHMARKS.md, "Tuning constants: history").
struct RangeCheckedLeanFault : LeanFault {
    static constexpr bool ranges_checked = true;
    static constexpr bool streaming = true;
};

/// `RangeCheckedLeanFault` whose loads at the fine-task index stay cached:
/// for a thread folding its item alone, where other threads read the same
/// lines again (a 2-D kernel's other columns of the row).
struct RangeCheckedCachedLeanFault : LeanFault {
    static constexpr bool ranges_checked = true;
};

/// The fault state of a fold a validation launch has covered already: a
/// 2-D kernel's map run at every fine task of every row at the row's first
/// and last column (`ValidateEnds`, thread.cuh) found every load in range
/// (the macro admits only maps whose loads are either the same for every
/// column or at `base + j`, with nothing that can fault depending on the
/// column otherwise: `checks_at_end_columns`). So no load is checked
/// (`ld`, `ld_k`), and nothing is recorded; integer division still yields
/// zero for a zero divisor, which the validation has ruled out.
struct ValidatedFault {
    static constexpr bool ranges_checked = true;
    static constexpr bool streaming = false;
    static constexpr bool validated = true;
    static constexpr bool probe_only = false;

    __device__ __forceinline__ bool any() const { return false; }
    __device__ __forceinline__ void out_of_range(uint32_t, uint64_t) {}
    __device__ __forceinline__ void div_zero() {}
    __device__ __forceinline__ void attribute(uint64_t) {}
};

/// `LeanFault` for a validation whose map's gathers are leaves
/// (`leaf_gathers`, thread.cuh): `ld` checks its index and yields zero
/// without loading, since the value is never looked at; loads at the
/// fine-task index (`ld_k`), which indices are made of, load as ever.
struct ProbeFault : LeanFault {
    static constexpr bool probe_only = true;
};

/// The launch-wide fault word the host reads back; mirrored by
/// `FaultRecord` in `gpu/src/abi.rs`.
struct FaultRecord {
    uint32_t claimed;  // 0 until a thread publishes its fault
    uint32_t kind;
    uint32_t array;
    uint32_t pad;
    uint64_t task;
    uint64_t index;
    uint64_t aux0;  // FAULT_SEGMENT: the task's own range lo (index = segment id)
    uint64_t aux1;  // FAULT_SEGMENT: the task's own range hi
};

/// Publishes `f` if no other thread has published a fault yet.
__device__ __forceinline__ void publish(FaultRecord* rec, const Fault& f, uint64_t aux0 = 0, uint64_t aux1 = 0) {
    if (!f.any()) {
        return;
    }
    if (atomicCAS(&rec->claimed, 0u, 1u) == 0u) {
        rec->kind = f.kind;
        rec->array = f.array;
        rec->task = f.task;
        rec->index = f.index;
        rec->aux0 = aux0;
        rec->aux1 = aux1;
        __threadfence();
    }
}

}  // namespace warpfit

// warpfit device library: how a kernel reads the index array it gathers
// through (`col` in `x[col[k] as usize]`).
//
// A throttled handle may hold that array as 16-bit offsets from the task
// (`col[k] - task`, one `int16_t` per fine task) where every one of them
// fits: a mesh or geometric graph in a local numbering has all its columns
// within a few thousand of the row. A kernel that streams its matrix at
// copy bandwidth then moves 6 bytes per nonzero instead of 8 (f32 values).
// The handle compiles such a launch's translation unit with
// `WARPFIT_INDEX_DELTA16` defined before the device library; the `Params`
// field keeps its declared type and the length counts entries, so nothing
// else of the ABI changes. Without the define the loads are the plain
// `ld_k` and `ldg`.
#pragma once
#include "warpfit/rust_ops.cuh"

namespace warpfit {

#ifdef WARPFIT_INDEX_DELTA16
/// The entries of an index array held as `int16_t` offsets.
template <class T> __device__ __forceinline__ const int16_t* delta16(const T* p) {
    return reinterpret_cast<const int16_t*>(p);
}
#endif

/// `index[k]` at the fine-task index `k` of task `task`, checked like
/// `ld_k` (a range-checked caller runs it unchecked).
template <class T, class I, class F>
__device__ __forceinline__ T ld_index(const T* p, uint64_t len, I k, uint64_t task, uint32_t array_id, F& f) {
#ifdef WARPFIT_INDEX_DELTA16
    const int16_t d = ld_k(delta16(p), len, k, array_id, f);
    return T(int64_t(task) + int64_t(d));
#else
    (void)task;
    return ld_k(p, len, k, array_id, f);
#endif
}

/// `index[k]` unchecked (the caller has checked `k < len`): the locality
/// probe's read of an item's first gathered index.
template <class T> __device__ __forceinline__ T index_at(const T* p, uint64_t k, uint64_t task) {
#ifdef WARPFIT_INDEX_DELTA16
    return T(int64_t(task) + int64_t(ldg(delta16(p) + k)));
#else
    (void)task;
    return ldg(p + k);
#endif
}

}  // namespace warpfit

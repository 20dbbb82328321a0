// warpfit device library: the merge of split tasks.
//
// After a task-list launch, each task that occurs in several segments has
// one partial per segment in scratch (or none, for an empty segment). One
// warp per split task folds them in list order: lane j folds a contiguous
// chunk of the task's segments, an ordered shuffle tree joins the chunks,
// and lane 0 puts `init` in front and runs the epilogue. No atomics; the
// same result for any associative operator, on every run.
#pragma once
#include "warpfit/task_source.cuh"

namespace warpfit {

template <class K> __device__ __forceinline__ void merge(const typename K::params_t& p, const LaunchArgs& a) {
    typedef typename K::acc_t acc_t;
    const uint64_t wid = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) / WARP;
    if (wid >= a.n_items) {
        return;  // warp-uniform
    }
    const int lane = lane_id();
    const SplitTask st = a.split[wid];
    const uint32_t chunk = (st.count + WARP - 1) / WARP;
    const uint32_t b = min(uint32_t(lane) * chunk, st.count);
    const uint32_t e = min(b + chunk, st.count);
    const acc_t* scratch = static_cast<const acc_t*>(a.scratch);
    Fault f;
    Partial<acc_t> acc;
    for (uint32_t g = b; g < e; ++g) {
        const uint32_t s = a.split_segments[st.first + g];
        if (a.present[s]) {
            acc.template push<K>(scratch[s], f);
        }
    }
    acc = group_reduce<K, WARP>(acc, f);
    if (lane == 0) {
        Item<K> it;
        it.task = st.task;
        it.valid = true;
        it.whole = true;
        it.slot = 0;
        K::prologue(p, it.task, it.ctx, it.lo, it.hi, f);
        f.attribute(it.task);
        if (!f.any()) {
            finish<K>(p, a, it, acc, false, f);
        }
    }
    f.attribute(st.task);
    publish(a.fault, f);
}

/// The fine-task range of every task, `sizes[2i] = lo`, `sizes[2i+1] = hi`
/// (saturated to u32), for splitting long tasks on the host.
template <class K> __device__ __forceinline__ void task_sizes(const typename K::params_t& p, const LaunchArgs& a) {
    const uint64_t i = uint64_t(blockIdx.x) * BLOCK + threadIdx.x;
    if (i >= a.n_items) {
        return;
    }
    Fault f;
    Item<K> it;
    AllTasks::load<K>(p, a, i, it, f);
    a.sizes[2 * i] = it.lo > 0xffffffffull ? 0xffffffffu : uint32_t(it.lo);
    a.sizes[2 * i + 1] = it.hi > 0xffffffffull ? 0xffffffffu : uint32_t(it.hi);
    publish(a.fault, f);
}

}  // namespace warpfit

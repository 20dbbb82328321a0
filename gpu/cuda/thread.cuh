// warpfit device library: the 1D decomposition (`Thread`).
//
// One item per thread, folded left to right from `init`: the CPU twin's
// order exactly. Cheapest per fine task, but a warp waits for its longest
// task, and neighbouring lanes read addresses a row apart. The fold runs
// with a lean fault flag (`fold_item_alone`), the full record only for an
// item that raised it.
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

}  // namespace warpfit

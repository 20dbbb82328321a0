// warpfit device library: the sub-warp decomposition (`SubWarp<W>`).
//
// A group of W consecutive lanes (W = 2, 4, 8, 16, 32) takes one item: lane
// j folds fine tasks lo+j, lo+j+W, ... (coalesced across the group), then
// an ordered shuffle tree combines the lanes' partials. Lane order is not
// fine-task order, so the reduce operator must be associative and
// commutative, as for any parallel fold; the result is the same from run to
// run. Good when tasks are about W long; a warp still waits for its longest.
// An `any` / `all` fold stops after the step in which its group settles it.
#pragma once
#include "warpfit/task_source.cuh"

namespace warpfit {

template <int W> struct SubWarp {
    static_assert(W == 2 || W == 4 || W == 8 || W == 16 || W == 32, "sub-warp width must be 2, 4, 8, 16 or 32");

    template <class K, class Src> static __device__ __forceinline__ void run(const typename K::params_t& p,
                                                                             const LaunchArgs& a) {
        typedef typename K::acc_t acc_t;
        const uint64_t tid = uint64_t(blockIdx.x) * BLOCK + threadIdx.x;
        const uint64_t i = tid / W;
        const int j = int(tid & (W - 1));
        Fault f;
        Item<K> it;
        // Every lane of the group runs the prologue (same addresses: one
        // broadcast load); only the group's first lane keeps its faults.
        Src::template load<K>(p, a, i, it, f);
        if (j != 0) {
            f = Fault();
        }
        Partial<acc_t> acc;
        if (it.valid && short_circuits<K>::value) {
            // `any` / `all`: the group steps together and stops after the
            // step in which one of its lanes settled the fold. Lanes of a
            // group share the item, so they agree on `valid` and the trip
            // count.
            const unsigned group = W == WARP ? FULL_MASK : ((1u << W) - 1u) << (lane_id() & ~(W - 1));
            for (uint64_t b = it.lo; b < it.hi; b += W) {
                if (b + j < it.hi) {
                    acc.template push<K>(K::map(p, it.task, it.ctx, b + j, f), f);
                }
                if (__any_sync(group, settle<K>::done(acc))) {
                    break;
                }
            }
            f.attribute(it.task);
        } else if (it.valid) {
#pragma unroll 2
            for (uint64_t k = it.lo + j; k < it.hi; k += W) {
                acc.template push<K>(K::map(p, it.task, it.ctx, k, f), f);
            }
            f.attribute(it.task);
        }
        acc = group_reduce<K, W>(acc, f);
        if (j == 0) {
            finish<K>(p, a, it, acc, false, f);
        }
        publish(a.fault, f);
    }
};

}  // namespace warpfit

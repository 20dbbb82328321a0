// warpfit device library: warp primitives over any accumulator type.
//
// The accumulator of a kernel is one of the language's scalar types, some of
// which (`bool`, `uint8_t`) the shuffle intrinsics do not take; these
// wrappers widen them. A tuple accumulator is shuffled element by element
// (tuple.cuh). Every primitive is a `*_sync` intrinsic over an
// explicit mask: nothing relies on implicit warp-synchronous execution.
#pragma once
#include "warpfit/types.cuh"

namespace warpfit {

template <class T> struct shfl_word { typedef T type; };
template <> struct shfl_word<bool> { typedef int type; };
template <> struct shfl_word<uint8_t> { typedef unsigned type; };
template <> struct shfl_word<int8_t> { typedef int type; };
template <> struct shfl_word<uint64_t> { typedef unsigned long long type; };
template <> struct shfl_word<int64_t> { typedef long long type; };

template <class T> __device__ __forceinline__ T shfl(T v, int src, int width = WARP) {
    typedef typename shfl_word<T>::type W;
    return T(__shfl_sync(FULL_MASK, W(v), src, width));
}
template <class T> __device__ __forceinline__ T shfl_up(T v, unsigned d, int width = WARP) {
    typedef typename shfl_word<T>::type W;
    return T(__shfl_up_sync(FULL_MASK, W(v), d, width));
}
template <class T> __device__ __forceinline__ T shfl_down(T v, unsigned d, int width = WARP) {
    typedef typename shfl_word<T>::type W;
    return T(__shfl_down_sync(FULL_MASK, W(v), d, width));
}

/// Lane index within the warp.
__device__ __forceinline__ int lane_id() { return int(threadIdx.x) & (WARP - 1); }

/// An accumulator that may hold no value yet. Reduce operators of the
/// kernel language need not have an identity (`f32::min` has none in the
/// type), so "nothing folded" is a flag, never a made-up neutral element.
template <class T> struct Partial {
    T value;
    bool has;

    __device__ __forceinline__ Partial() : value(), has(false) {}

    /// Folds `v` on the right: `self = self ⊕ v`.
    template <class K, class F> __device__ __forceinline__ void push(T v, F& f) {
        value = has ? K::reduce(value, v, f) : v;
        has = true;
    }

    /// Folds another partial on the right: `self = self ⊕ o`.
    template <class K, class F> __device__ __forceinline__ void append(const Partial& o, F& f) {
        if (o.has) {
            value = has ? K::reduce(value, o.value, f) : o.value;
            has = true;
        }
    }
};

/// Ordered tree reduction of one partial per lane over groups of `W`
/// consecutive lanes: the group's first lane ends with
/// `p[0] ⊕ p[1] ⊕ ... ⊕ p[W-1]`, operands in lane order.
template <class K, int W, class T, class F> __device__ __forceinline__ Partial<T> group_reduce(Partial<T> p, F& f) {
#pragma unroll
    for (int d = 1; d < W; d <<= 1) {
        Partial<T> o;
        o.value = shfl_down(p.value, d, W);
        o.has = shfl_down(p.has, d, W);
        // A source lane past the group's end would hand back the caller's
        // own value; such lanes keep theirs.
        if ((lane_id() & (W - 1)) + d < W) {
            p.template append<K>(o, f);
        }
    }
    return p;
}

}  // namespace warpfit

// warpfit device library: the value a fold of several elements carries.
//
// A Rust tuple `(A, B, ..)` of the kernel language is a
// `warpfit::tuple<A, B, ..>`: its first element and the tuple of the rest.
// Every element stays a named scalar member, never an array or a dynamic
// index, so the compiler keeps a tuple accumulator in registers as it does
// a scalar one. The warp primitives shuffle it one element at a time; the
// generated code reads element `I` with `warpfit::get<I>`.
//
// The host sizes a split task's partials by the same layout (`AccType::size`
// in gpu/src/spec.rs); each generated kernel with a tuple accumulator checks
// it with a `static_assert`.
#pragma once
#include "warpfit/warp.cuh"

namespace warpfit {

template <class H, class... T> struct tuple {
    H head;
    tuple<T...> tail;

    // Defaulted, so that `acc_t()` value-initialises every element to zero.
    tuple() = default;
    __device__ __forceinline__ tuple(H h, T... t) : head(h), tail(t...) {}
};

template <class H> struct tuple<H> {
    H head;

    tuple() = default;
    __device__ __forceinline__ explicit tuple(H h) : head(h) {}
};

/// Element `I` of a tuple: the head of the tuple `I` tails in.
template <int I> struct tuple_at {
    template <class H, class... T> static __device__ __forceinline__ auto get(const tuple<H, T...>& t) {
        return tuple_at<I - 1>::get(t.tail);
    }
};
template <> struct tuple_at<0> {
    template <class H, class... T> static __device__ __forceinline__ H get(const tuple<H, T...>& t) {
        return t.head;
    }
};

template <int I, class... T> __device__ __forceinline__ auto get(const tuple<T...>& t) {
    return tuple_at<I>::get(t);
}

// The shuffles of warp.cuh, element by element. Calls from the library's
// templates find these by argument-dependent lookup when they instantiate
// over a tuple, and partial ordering prefers them to the scalar ones. One
// definition per shuffle: `NAME` is the shuffle, `ARG` its lane argument.
#define WARPFIT_TUPLE_SHUFFLE(NAME, ARG)                                                            \
    template <class H> __device__ __forceinline__ tuple<H> NAME(tuple<H> v, ARG a, int width = WARP) { \
        return tuple<H>(NAME(v.head, a, width));                                                      \
    }                                                                                                 \
    template <class H, class H2, class... T>                                                          \
    __device__ __forceinline__ tuple<H, H2, T...> NAME(tuple<H, H2, T...> v, ARG a, int width = WARP) { \
        tuple<H, H2, T...> o;                                                                         \
        o.head = NAME(v.head, a, width);                                                              \
        o.tail = NAME(v.tail, a, width);                                                              \
        return o;                                                                                     \
    }
WARPFIT_TUPLE_SHUFFLE(shfl, int)
WARPFIT_TUPLE_SHUFFLE(shfl_up, unsigned)
WARPFIT_TUPLE_SHUFFLE(shfl_down, unsigned)
#undef WARPFIT_TUPLE_SHUFFLE

}  // namespace warpfit

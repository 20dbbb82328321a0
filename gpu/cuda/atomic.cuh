// warpfit device library: the atomic intrinsics on shared arrays.
//
// A push kernel's `&[Atomic<T>]` parameters are updated by any task through
// `atomic_min`, `atomic_max`, `atomic_add`, `atomic_or`, `atomic_cas` and
// `atomic_apply` (a compare-and-swap loop around a `#[device_fn]`), and
// read with `ld_shared`. Each update returns the element's previous value
// and has the meaning the CPU twin gives it (`warpfit_runtime::worklist`):
// integers use the hardware's atomics (`atomicMin`/`Max`/`Add`/`Or`, `add`
// wrapping); float `min`/`max` are CAS loops on the bits that follow
// Rust's `f32::min`/`max` (a NaN operand is ignored, as `fminf` does);
// float `add` is a CAS loop for `f32` (the hardware's `atom.add.f32`
// flushes subnormals, Rust does not) and the hardware's IEEE `atomicAdd`
// for `f64`; `cas` compares bit patterns. CAS loops skip the write when the
// result has the element's own bits.
//
// Every access is relaxed: rounds are separated by kernel boundaries.
// Reads go through L2 (`ld.global.cg`), where the atomics are performed, so
// a thread never reads an L1 line older than an update it has seen. An
// index out of range records a fault (array id = the parameter's position)
// and the operation yields zero without touching memory.
#pragma once
#include "warpfit/rust_ops.cuh"

namespace warpfit {

// ---------------------------------------------------------------- bits of floats

template <class T> struct atomic_bits { typedef T type; };
template <> struct atomic_bits<float> { typedef unsigned type; };
template <> struct atomic_bits<double> { typedef unsigned long long type; };
template <> struct atomic_bits<int32_t> { typedef unsigned type; };
template <> struct atomic_bits<uint32_t> { typedef unsigned type; };
template <> struct atomic_bits<int64_t> { typedef unsigned long long type; };
template <> struct atomic_bits<uint64_t> { typedef unsigned long long type; };

template <class T> __device__ __forceinline__ typename atomic_bits<T>::type to_bits(T v) {
    return typename atomic_bits<T>::type(v);
}
template <> __device__ __forceinline__ unsigned to_bits<float>(float v) { return __float_as_uint(v); }
template <> __device__ __forceinline__ unsigned long long to_bits<double>(double v) {
    return (unsigned long long)__double_as_longlong(v);
}
template <class T> __device__ __forceinline__ T from_bits(typename atomic_bits<T>::type b) { return T(b); }
template <> __device__ __forceinline__ float from_bits<float>(unsigned b) { return __uint_as_float(b); }
template <> __device__ __forceinline__ double from_bits<double>(unsigned long long b) {
    return __longlong_as_double((long long)b);
}

/// A relaxed read of a shared array's element, through L2.
template <class T> __device__ __forceinline__ T load_relaxed(const T* p) {
    return from_bits<T>(__ldcg(reinterpret_cast<const typename atomic_bits<T>::type*>(p)));
}

/// `*p = op(*p, v)` by a compare-and-swap loop on the bits; returns the
/// previous value. No write when the result has the element's bits.
template <class T, class Op> __device__ __forceinline__ T cas_loop(T* p, T v, Op op) {
    typedef typename atomic_bits<T>::type B;
    B* w = reinterpret_cast<B*>(p);
    B old = __ldcg(w);
    for (;;) {
        const B next = to_bits<T>(op(from_bits<T>(old), v));
        if (next == old) {
            return from_bits<T>(old);
        }
        const B seen = atomicCAS(w, old, next);
        if (seen == old) {
            return from_bits<T>(old);
        }
        old = seen;
    }
}

// ---------------------------------------------------------------- unchecked updates

__device__ __forceinline__ int32_t atomic_min_at(int32_t* p, int32_t v) { return atomicMin(p, v); }
__device__ __forceinline__ uint32_t atomic_min_at(uint32_t* p, uint32_t v) { return atomicMin(p, v); }
__device__ __forceinline__ int64_t atomic_min_at(int64_t* p, int64_t v) { return atomicMin(p, v); }
__device__ __forceinline__ uint64_t atomic_min_at(uint64_t* p, uint64_t v) { return atomicMin(p, v); }
__device__ __forceinline__ float atomic_min_at(float* p, float v) {
    return cas_loop(p, v, [](float a, float b) { return fmin(a, b); });
}
__device__ __forceinline__ double atomic_min_at(double* p, double v) {
    return cas_loop(p, v, [](double a, double b) { return fmin(a, b); });
}

__device__ __forceinline__ int32_t atomic_max_at(int32_t* p, int32_t v) { return atomicMax(p, v); }
__device__ __forceinline__ uint32_t atomic_max_at(uint32_t* p, uint32_t v) { return atomicMax(p, v); }
__device__ __forceinline__ int64_t atomic_max_at(int64_t* p, int64_t v) { return atomicMax(p, v); }
__device__ __forceinline__ uint64_t atomic_max_at(uint64_t* p, uint64_t v) { return atomicMax(p, v); }
__device__ __forceinline__ float atomic_max_at(float* p, float v) {
    return cas_loop(p, v, [](float a, float b) { return fmax(a, b); });
}
__device__ __forceinline__ double atomic_max_at(double* p, double v) {
    return cas_loop(p, v, [](double a, double b) { return fmax(a, b); });
}

// Integer adds wrap: the 64-bit signed add is the unsigned one on the bits.
__device__ __forceinline__ int32_t atomic_add_at(int32_t* p, int32_t v) { return atomicAdd(p, v); }
__device__ __forceinline__ uint32_t atomic_add_at(uint32_t* p, uint32_t v) { return atomicAdd(p, v); }
__device__ __forceinline__ int64_t atomic_add_at(int64_t* p, int64_t v) {
    return int64_t(atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v));
}
__device__ __forceinline__ uint64_t atomic_add_at(uint64_t* p, uint64_t v) { return atomicAdd(p, v); }
__device__ __forceinline__ float atomic_add_at(float* p, float v) {
    return cas_loop(p, v, [](float a, float b) { return a + b; });
}
__device__ __forceinline__ double atomic_add_at(double* p, double v) { return atomicAdd(p, v); }

__device__ __forceinline__ int32_t atomic_or_at(int32_t* p, int32_t v) { return atomicOr(p, v); }
__device__ __forceinline__ uint32_t atomic_or_at(uint32_t* p, uint32_t v) { return atomicOr(p, v); }
__device__ __forceinline__ int64_t atomic_or_at(int64_t* p, int64_t v) {
    return int64_t(atomicOr(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v));
}
__device__ __forceinline__ uint64_t atomic_or_at(uint64_t* p, uint64_t v) { return atomicOr(p, v); }

template <class T> __device__ __forceinline__ T atomic_cas_at(T* p, T current, T next) {
    typedef typename atomic_bits<T>::type B;
    return from_bits<T>(atomicCAS(reinterpret_cast<B*>(p), to_bits<T>(current), to_bits<T>(next)));
}

// ---------------------------------------------------------------- checked, as kernels call them

/// `atomic_min(&a[i], v)`: the previous value, or zero and a fault when
/// `i` is out of range.
template <class T, class I, class F>
__device__ __forceinline__ T atomic_min(T* p, uint64_t len, I i, T v, uint32_t array_id, F& f) {
    const uint64_t j = uint64_t(i);
    if (j < len) {
        return atomic_min_at(p + j, v);
    }
    f.out_of_range(array_id, j);
    return T(0);
}

/// `atomic_max(&a[i], v)`.
template <class T, class I, class F>
__device__ __forceinline__ T atomic_max(T* p, uint64_t len, I i, T v, uint32_t array_id, F& f) {
    const uint64_t j = uint64_t(i);
    if (j < len) {
        return atomic_max_at(p + j, v);
    }
    f.out_of_range(array_id, j);
    return T(0);
}

/// `atomic_add(&a[i], v)`.
template <class T, class I, class F>
__device__ __forceinline__ T atomic_add(T* p, uint64_t len, I i, T v, uint32_t array_id, F& f) {
    const uint64_t j = uint64_t(i);
    if (j < len) {
        return atomic_add_at(p + j, v);
    }
    f.out_of_range(array_id, j);
    return T(0);
}

/// `atomic_or(&a[i], v)` (integers).
template <class T, class I, class F>
__device__ __forceinline__ T atomic_or(T* p, uint64_t len, I i, T v, uint32_t array_id, F& f) {
    const uint64_t j = uint64_t(i);
    if (j < len) {
        return atomic_or_at(p + j, v);
    }
    f.out_of_range(array_id, j);
    return T(0);
}

/// `atomic_cas(&a[i], current, next)`: stores `next` when the element's
/// bits are `current`'s; returns the previous value either way.
template <class T, class I, class F>
__device__ __forceinline__ T atomic_cas(T* p, uint64_t len, I i, T current, T next, uint32_t array_id, F& f) {
    const uint64_t j = uint64_t(i);
    if (j < len) {
        return atomic_cas_at(p + j, current, next);
    }
    f.out_of_range(array_id, j);
    return T(0);
}

/// `atomic_apply(&a[i], v, op)`: `a[i] = op(a[i], v)` by a CAS loop, `op`
/// a `#[device_fn]` (called again whenever another thread changed the
/// element in between).
template <class T, class I, class F, class Op>
__device__ __forceinline__ T atomic_apply(T* p, uint64_t len, I i, T v, uint32_t array_id, F& f, Op op) {
    const uint64_t j = uint64_t(i);
    if (j < len) {
        return cas_loop(p + j, v, op);
    }
    f.out_of_range(array_id, j);
    return T(0);
}

/// `a[i].load()` of a shared array.
template <class T, class I, class F>
__device__ __forceinline__ T ld_shared(const T* p, uint64_t len, I i, uint32_t array_id, F& f) {
    const uint64_t j = uint64_t(i);
    if (j < len) {
        return load_relaxed(p + j);
    }
    f.out_of_range(array_id, j);
    return T(0);
}

}  // namespace warpfit

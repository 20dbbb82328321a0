// warpfit device library: Rust semantics for generated code.
//
// The CPU twin is the reference, so every operation whose C++ meaning differs
// from Rust's (release profile) goes through a helper here: checked loads and
// stores, `as` casts, wrapping integer arithmetic, guarded division, masked
// shifts, NaN-ignoring float min/max, and the float methods of the kernel
// language. Each helper is overloaded or templated over the language's types:
// f32 = float, f64 = double, i32/u32/i64/u64 = int32_t/.../uint64_t, u8 =
// uint8_t, bool = bool.
#pragma once
#include "warpfit/fault.cuh"

namespace warpfit {

// ---------------------------------------------------------------- type traits

template <class T> struct traits;
// is_int: a Rust integer type; is_signed: signed integer or float; bits: width.
template <> struct traits<int8_t> { typedef uint8_t unsigned_t; static constexpr bool is_int = true, is_signed = true; static constexpr int bits = 8; };
template <> struct traits<uint8_t> { typedef uint8_t unsigned_t; static constexpr bool is_int = true, is_signed = false; static constexpr int bits = 8; };
template <> struct traits<int16_t> { typedef uint16_t unsigned_t; static constexpr bool is_int = true, is_signed = true; static constexpr int bits = 16; };
template <> struct traits<uint16_t> { typedef uint16_t unsigned_t; static constexpr bool is_int = true, is_signed = false; static constexpr int bits = 16; };
template <> struct traits<int32_t> { typedef uint32_t unsigned_t; static constexpr bool is_int = true, is_signed = true; static constexpr int bits = 32; };
template <> struct traits<uint32_t> { typedef uint32_t unsigned_t; static constexpr bool is_int = true, is_signed = false; static constexpr int bits = 32; };
template <> struct traits<int64_t> { typedef uint64_t unsigned_t; static constexpr bool is_int = true, is_signed = true; static constexpr int bits = 64; };
template <> struct traits<uint64_t> { typedef uint64_t unsigned_t; static constexpr bool is_int = true, is_signed = false; static constexpr int bits = 64; };
template <> struct traits<float> { typedef float unsigned_t; static constexpr bool is_int = false, is_signed = true; static constexpr int bits = 32; };
template <> struct traits<double> { typedef double unsigned_t; static constexpr bool is_int = false, is_signed = true; static constexpr int bits = 64; };
template <> struct traits<bool> { typedef bool unsigned_t; static constexpr bool is_int = false, is_signed = false; static constexpr int bits = 1; };

template <class T> __device__ __forceinline__ constexpr T min_value() {
    return traits<T>::is_signed ? T(typename traits<T>::unsigned_t(1) << (traits<T>::bits - 1)) : T(0);
}
template <class T> __device__ __forceinline__ constexpr T max_value() {
    return traits<T>::is_signed ? T(~(typename traits<T>::unsigned_t(1) << (traits<T>::bits - 1)))
                                : T(~typename traits<T>::unsigned_t(0));
}

// ---------------------------------------------------------------- loads and stores

/// Read-only global load through the non-coherent cache. `bool` is loaded
/// as its byte (the GPU and the host both store it as 0 or 1).
template <class T> __device__ __forceinline__ T ldg(const T* p) { return __ldg(p); }
template <> __device__ __forceinline__ bool ldg<bool>(const bool* p) {
    return __ldg(reinterpret_cast<const unsigned char*>(p)) != 0;
}
template <> __device__ __forceinline__ int64_t ldg<int64_t>(const int64_t* p) { return __ldg(reinterpret_cast<const long long*>(p)); }
template <> __device__ __forceinline__ uint64_t ldg<uint64_t>(const uint64_t* p) {
    return __ldg(reinterpret_cast<const unsigned long long*>(p));
}

/// Read-only global load the compiler may merge with an equal one, unlike
/// `ldg` (CUDA's `__ldg` is a volatile `asm`, never merged; NVRTC merges
/// no `asm` load, volatile or not): a plain load. Only for loads a
/// validation launch has covered (`F::validated`), whose arrays are inputs
/// the launch never writes: two columns' loads of `col[e]` in one fold step
/// are then one load, and the index arithmetic on it is done once.
template <class T> __device__ __forceinline__ T ld_pure(const T* p) { return *p; }

/// Read-only global load through the non-coherent cache that the compiler
/// treats as a pure function of its address: a non-volatile `asm`, which
/// unlike `ldg`'s volatile one lets the plain loads around it (`ld_pure`)
/// merge. For a validated fold's gathers (`ld_col`). By size, so every
/// scalar type takes one of four forms.
template <class T> __device__ __forceinline__ T ldg_pure(const T* p) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "a scalar");
    typedef typename conditional<sizeof(T) == 8, unsigned long long,
                                 typename conditional<sizeof(T) == 4, unsigned int, unsigned short>::type>::type
        word_t;
    word_t v;
    if constexpr (sizeof(T) == 8) {
        asm("ld.global.nc.u64 %0, [%1];" : "=l"(v) : "l"(p));
    } else if constexpr (sizeof(T) == 4) {
        asm("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
    } else if constexpr (sizeof(T) == 2) {
        asm("ld.global.nc.u16 %0, [%1];" : "=h"(v) : "l"(p));
    } else {
        asm("ld.global.nc.u8 %0, [%1];" : "=h"(v) : "l"(p));
    }
    union {
        typename conditional<sizeof(T) == 1, unsigned char, word_t>::type w;
        T t;
    } bits;
    bits.w = v;
    return bits.t;
}
template <> __device__ __forceinline__ bool ldg_pure<bool>(const bool* p) {
    return ldg_pure(reinterpret_cast<const unsigned char*>(p)) != 0;
}

/// Read-only global load marked streaming (`ld.global.cs`: evict first
/// from L1 and L2), for data read once.
template <class T> __device__ __forceinline__ T ldcs(const T* p) { return __ldcs(p); }
template <> __device__ __forceinline__ bool ldcs<bool>(const bool* p) {
    return __ldcs(reinterpret_cast<const unsigned char*>(p)) != 0;
}
template <> __device__ __forceinline__ int64_t ldcs<int64_t>(const int64_t* p) {
    return __ldcs(reinterpret_cast<const long long*>(p));
}
template <> __device__ __forceinline__ uint64_t ldcs<uint64_t>(const uint64_t* p) {
    return __ldcs(reinterpret_cast<const unsigned long long*>(p));
}

/// `array[i]` of a read-only array, checked: out of range records a fault
/// (array id = parameter position, task index excluded) and yields zero.
template <class T, class I, class F>
__device__ __forceinline__ T ld_checked(const T* p, uint64_t len, I i, uint32_t array_id, F& f) {
    uint64_t j = uint64_t(i);
    if (j < len) {
        return ldg(p + j);
    }
    f.out_of_range(array_id, j);
    return T(0);
}

/// `array[i]` of a read-only array (`&[T]`), checked (`ld_checked`);
/// unchecked under a fault state a validation launch has covered
/// (`F::validated`: `ld_pure`, merged where two columns load alike);
/// checked without loading under a validation's that never looks at the
/// value of such a load (`F::probe_only`: the map's gathers are leaves).
template <class T, class I, class F>
__device__ __forceinline__ T ld(const T* p, uint64_t len, I i, uint32_t array_id, F& f) {
    if (F::validated) {
        return ld_pure(p + uint64_t(i));
    }
    if (F::probe_only) {
        const uint64_t j = uint64_t(i);
        if (j >= len) {
            f.out_of_range(array_id, j);
        }
        return T(0);
    }
    return ld_checked(p, len, i, array_id, f);
}

/// `array[base + j]` of a 2-D kernel's gather at its column `j` (the
/// macro's `column_gather`): `ld` of the sum, except under a validation's
/// fault state, where the address is the row's `p + base` plus `j`, the
/// first made once for every column a thread folds (the validation has
/// shown `base + j` in range at both end columns, hence at every one).
template <class T, class F>
__device__ __forceinline__ T ld_col(const T* p, uint64_t len, uint64_t base, uint64_t j, uint32_t array_id, F& f) {
    if (F::validated) {
        // The row's address kept as one value: the compiler would otherwise
        // fold `(p + base) + j` back into `p + (base + j)`, a 64-bit add and
        // shift per column instead of one add.
        const T* row = p + base;
        asm("" : "+l"(row));
        return ldg_pure(row + j);
    }
    return ld(p, len, base + j, array_id, f);
}

/// `array[k]` at the fine-task index itself (`val[k]`): checked and
/// loaded (whatever the fault state: indices are made of these values),
/// unless the fault state is one whose caller has checked the item's whole
/// range against `Kernel::direct_len` already (`F::ranges_checked`); under
/// a validation's (`F::validated`) a load the compiler may merge.
template <class T, class I, class F>
__device__ __forceinline__ T ld_k(const T* p, uint64_t len, I i, uint32_t array_id, F& f) {
    if (F::validated) {
        return ld_pure(p + uint64_t(i));
    }
    if (F::ranges_checked) {
        return F::streaming ? ldcs(p + uint64_t(i)) : ldg(p + uint64_t(i));
    }
    return ld_checked(p, len, i, array_id, f);
}

/// `out[i]` read of an output (`&mut [T]`), checked like `ld` but through
/// the coherent path: the epilogue may read what this launch wrote earlier.
template <class T, class I, class F>
__device__ __forceinline__ T ld_out(const T* p, uint64_t len, I i, uint32_t array_id, F& f) {
    uint64_t j = uint64_t(i);
    if (j < len) {
        return p[j];
    }
    f.out_of_range(array_id, j);
    return T(0);
}

/// `out[i] = v` of an output, checked; out of range records a fault and
/// writes nothing.
template <class T, class I, class V, class F>
__device__ __forceinline__ void st_out(T* p, uint64_t len, I i, V v, uint32_t array_id, F& f) {
    uint64_t j = uint64_t(i);
    if (j < len) {
        p[j] = T(v);
        return;
    }
    f.out_of_range(array_id, j);
}

// ---------------------------------------------------------------- `as` casts

template <class To, class From, bool FromFloat = !traits<From>::is_int && traits<From>::bits >= 32,
          bool ToInt = traits<To>::is_int>
struct cast_impl {
    // int -> int (truncate / sign- or zero-extend), int -> float (round to
    // nearest), float -> float (round to nearest), bool -> int or float.
    static __device__ __forceinline__ To run(From v) { return To(v); }
};

template <class To, class From> struct cast_impl<To, From, true, true> {
    // float -> int: Rust saturates, NaN -> 0. The comparison bounds are
    // powers of two, exactly representable in both float types.
    static __device__ __forceinline__ To run(From v) {
        if (v != v) {
            return To(0);
        }
        if (traits<To>::is_signed) {
            // -2^(bits-1): exact in both float types.
            const From lo = -From(1ull << (traits<To>::bits - 1));
            if (v <= lo) return min_value<To>();
            if (v >= -lo) return max_value<To>();
        } else {
            if (v <= From(0)) return To(0);
            // 2^bits as a float: 2 * 2^(bits-1), exact.
            const From hi = From(1ull << (traits<To>::bits - 1)) * From(2);
            if (v >= hi) return max_value<To>();
        }
        return To(v);
    }
};

/// Rust `v as To`.
template <class To, class From> __device__ __forceinline__ To cast(From v) { return cast_impl<To, From>::run(v); }

// ---------------------------------------------------------------- integer arithmetic

template <class T, bool Int = traits<T>::is_int> struct arith {
    static __device__ __forceinline__ T add(T a, T b) { return a + b; }
    static __device__ __forceinline__ T sub(T a, T b) { return a - b; }
    static __device__ __forceinline__ T mul(T a, T b) { return a * b; }
    template <class F> static __device__ __forceinline__ T div(T a, T b, F&) { return a / b; }
    template <class F> static __device__ __forceinline__ T rem(T a, T b, F&) { return fmod(a, b); }
};

template <class T> struct arith<T, true> {
    typedef typename traits<T>::unsigned_t U;
    // Through the unsigned type: wraps without C++ signed-overflow UB.
    static __device__ __forceinline__ T add(T a, T b) { return T(U(U(a) + U(b))); }
    static __device__ __forceinline__ T sub(T a, T b) { return T(U(U(a) - U(b))); }
    static __device__ __forceinline__ T mul(T a, T b) {
        // Promote narrow types to unsigned int so that u8/i8 products wrap too.
        return T(U((unsigned long long)U(a) * (unsigned long long)U(b)));
    }
    template <class F> static __device__ __forceinline__ T div(T a, T b, F& f) {
        if (b == T(0)) {
            f.div_zero();
            return T(0);
        }
        if (traits<T>::is_signed && a == min_value<T>() && b == T(-1)) {
            return a;  // wrapping_div
        }
        // 64-bit division is a long subroutine; operands that fit 32 bits
        // (a 2-D kernel's `t / k`, most index arithmetic) take the hardware's
        // 32-bit path. Same quotient.
        if (sizeof(T) == 8 && !traits<T>::is_signed && ((uint64_t(a) | uint64_t(b)) >> 32) == 0) {
            return T(uint32_t(a) / uint32_t(b));
        }
        return a / b;
    }
    template <class F> static __device__ __forceinline__ T rem(T a, T b, F& f) {
        if (b == T(0)) {
            f.div_zero();
            return T(0);
        }
        if (traits<T>::is_signed && b == T(-1)) {
            return T(0);  // wrapping_rem: MIN % -1 == 0
        }
        if (sizeof(T) == 8 && !traits<T>::is_signed && ((uint64_t(a) | uint64_t(b)) >> 32) == 0) {
            return T(uint32_t(a) % uint32_t(b));
        }
        return a % b;
    }
};

template <> struct arith<float, false> {
    static __device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
    static __device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
    static __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
    template <class F> static __device__ __forceinline__ float div(float a, float b, F&) { return __fdiv_rn(a, b); }
    template <class F> static __device__ __forceinline__ float rem(float a, float b, F&) { return fmodf(a, b); }
};

template <> struct arith<double, false> {
    static __device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
    static __device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
    static __device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
    template <class F> static __device__ __forceinline__ double div(double a, double b, F&) { return __ddiv_rn(a, b); }
    template <class F> static __device__ __forceinline__ double rem(double a, double b, F&) { return fmod(a, b); }
};

// Floats: `__f*_rn` keep the compiler from contracting a*b+c into an FMA,
// which Rust never does implicitly; `mul_add` is the explicit FMA.

/// Rust `a + b` (integers wrap).
template <class T> __device__ __forceinline__ T add(T a, T b) { return arith<T>::add(a, b); }
/// Rust `a - b` (integers wrap).
template <class T> __device__ __forceinline__ T sub(T a, T b) { return arith<T>::sub(a, b); }
/// Rust `a * b` (integers wrap).
template <class T> __device__ __forceinline__ T mul(T a, T b) { return arith<T>::mul(a, b); }
/// Rust `a / b`: integer division by zero records a fault and yields 0; `MIN / -1` wraps.
template <class T, class F> __device__ __forceinline__ T div(T a, T b, F& f) { return arith<T>::div(a, b, f); }
/// Rust `a % b`: integer remainder by zero records a fault and yields 0; `MIN % -1` is 0.
template <class T, class F> __device__ __forceinline__ T rem(T a, T b, F& f) { return arith<T>::rem(a, b, f); }

/// Rust `a << b` (release: the amount is masked to the bit width).
template <class T, class S> __device__ __forceinline__ T shl(T a, S b) {
    typedef typename traits<T>::unsigned_t U;
    const unsigned s = unsigned(b) & unsigned(traits<T>::bits - 1);
    return T(U(U(a) << s));
}
/// Rust `a >> b` (masked amount; arithmetic for signed types).
template <class T, class S> __device__ __forceinline__ T shr(T a, S b) {
    const unsigned s = unsigned(b) & unsigned(traits<T>::bits - 1);
    return T(a >> s);
}

// ---------------------------------------------------------------- min / max / clamp

/// `f32::min` / `f64::min`: a NaN operand is ignored (as `fminf`).
__device__ __forceinline__ float fmin(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double fmin(double a, double b) { return ::fmin(a, b); }
/// `f32::max` / `f64::max`: a NaN operand is ignored (as `fmaxf`).
__device__ __forceinline__ float fmax(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double fmax(double a, double b) { return ::fmax(a, b); }

/// `Ord::min` / `Ord::max` of integers.
template <class T> __device__ __forceinline__ T min(T a, T b) { return b < a ? b : a; }
template <class T> __device__ __forceinline__ T max(T a, T b) { return a < b ? b : a; }
__device__ __forceinline__ float min(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double min(double a, double b) { return ::fmin(a, b); }
__device__ __forceinline__ float max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double max(double a, double b) { return ::fmax(a, b); }

/// `clamp`: Rust's definition, which keeps a NaN `v` as NaN.
template <class T> __device__ __forceinline__ T clamp(T v, T lo, T hi) {
    if (v < lo) return lo;
    if (v > hi) return hi;
    return v;
}

// ---------------------------------------------------------------- float methods

template <class T> __device__ __forceinline__ T abs(T v) {
    // Integers: wrapping_abs (MIN stays MIN), through the unsigned type.
    typedef typename traits<T>::unsigned_t U;
    return v < T(0) ? T(U(0) - U(v)) : v;
}
__device__ __forceinline__ float abs(float v) { return fabsf(v); }
__device__ __forceinline__ double abs(double v) { return ::fabs(v); }

__device__ __forceinline__ float sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double sqrt(double v) { return ::sqrt(v); }
__device__ __forceinline__ float exp(float v) { return expf(v); }
__device__ __forceinline__ double exp(double v) { return ::exp(v); }
__device__ __forceinline__ float ln(float v) { return logf(v); }
__device__ __forceinline__ double ln(double v) { return ::log(v); }
__device__ __forceinline__ float exp2(float v) { return exp2f(v); }
__device__ __forceinline__ double exp2(double v) { return ::exp2(v); }
__device__ __forceinline__ float log2(float v) { return log2f(v); }
__device__ __forceinline__ double log2(double v) { return ::log2(v); }
__device__ __forceinline__ float log10(float v) { return log10f(v); }
__device__ __forceinline__ double log10(double v) { return ::log10(v); }
__device__ __forceinline__ float sin(float v) { return sinf(v); }
__device__ __forceinline__ double sin(double v) { return ::sin(v); }
__device__ __forceinline__ float cos(float v) { return cosf(v); }
__device__ __forceinline__ double cos(double v) { return ::cos(v); }
__device__ __forceinline__ float tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double tanh(double v) { return ::tanh(v); }
__device__ __forceinline__ float floor(float v) { return floorf(v); }
__device__ __forceinline__ double floor(double v) { return ::floor(v); }
__device__ __forceinline__ float ceil(float v) { return ceilf(v); }
__device__ __forceinline__ double ceil(double v) { return ::ceil(v); }
/// Half away from zero, as Rust's `round`.
__device__ __forceinline__ float round(float v) { return roundf(v); }
__device__ __forceinline__ double round(double v) { return ::round(v); }
__device__ __forceinline__ float trunc(float v) { return truncf(v); }
__device__ __forceinline__ double trunc(double v) { return ::trunc(v); }
__device__ __forceinline__ float powf(float a, float b) { return ::powf(a, b); }
__device__ __forceinline__ double powf(double a, double b) { return ::pow(a, b); }
/// `mul_add`: one fused multiply-add, as Rust's.
__device__ __forceinline__ float mul_add(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double mul_add(double a, double b, double c) { return ::fma(a, b, c); }

/// `powi`: repeated squaring, as LLVM's `powi` that Rust lowers to; a
/// negative exponent takes the reciprocal at the end.
template <class F> __device__ __forceinline__ F powi_impl(F x, int32_t n) {
    unsigned e = n < 0 ? 0u - unsigned(n) : unsigned(n);
    F r = F(1);
    F b = x;
    while (e) {
        if (e & 1u) r = r * b;
        b = b * b;
        e >>= 1;
    }
    return n < 0 ? F(1) / r : r;
}
__device__ __forceinline__ float powi(float x, int32_t n) { return powi_impl(x, n); }
__device__ __forceinline__ double powi(double x, int32_t n) { return powi_impl(x, n); }

/// `signum`: 1.0 for +0.0 and positives, -1.0 for -0.0 and negatives, NaN for NaN.
__device__ __forceinline__ float signum(float v) { return v != v ? v : copysignf(1.0f, v); }
__device__ __forceinline__ double signum(double v) { return v != v ? v : ::copysign(1.0, v); }
/// Integer `signum`: -1, 0 or 1.
template <class T> __device__ __forceinline__ T signum(T v) { return v > T(0) ? T(1) : (v < T(0) ? T(-1) : T(0)); }

__device__ __forceinline__ bool is_nan(float v) { return v != v; }
__device__ __forceinline__ bool is_nan(double v) { return v != v; }

}  // namespace warpfit

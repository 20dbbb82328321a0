// warpfit device library: fixed-width integer types and launch-wide constants.
//
// NVRTC ships no C standard headers, so the fixed-width names the generated
// code uses (`uint32_t`, `int64_t`, ...) are defined here. The definitions
// agree with the LP64 ABI the host uses, so a redundant declaration by some
// other header is a harmless re-typedef of the same type.
//
// The host mirrors of this library's ABI (these constants, the entry-point
// names, `LaunchArgs`, `FaultRecord`, the fault kinds and the minimum
// architecture) are in `gpu/src/abi.rs`, whose tests check both sides agree.
#pragma once

// The warp reductions (`__reduce_max_sync`) need compute capability 8.0.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "warpfit's device library needs compute capability 8.0 or newer"
#endif

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;

namespace warpfit {

/// Threads per warp on every architecture warpfit targets (sm_80 and newer).
constexpr int WARP = 32;
/// Threads per block of every library kernel: 8 warps, enough to hide
/// latency with several blocks per SM, small enough to keep shared memory
/// per block low for large `ctx_t`.
constexpr int BLOCK = 256;
constexpr int WARPS_PER_BLOCK = BLOCK / WARP;
constexpr unsigned FULL_MASK = 0xffffffffu;

/// A piece of one coarse task, as `warpfit_runtime::Segment` lays it out
/// (`#[repr(C)]`, three u32).
struct Segment {
    uint32_t task;
    uint32_t lo;
    uint32_t hi;
};

/// A task of a task list that occurs in several segments, as
/// `warpfit_runtime::SplitTask` lays it out.
struct SplitTask {
    uint32_t task;
    uint32_t first;
    uint32_t count;
};

/// `void` for any well-formed list of types: the detection idiom behind the
/// functor traits (`is_for_each`, `short_circuits`, the block hooks).
template <class...> struct void_type {
    typedef void type;
};

/// `A` when `C`, else `B` (`std::conditional`; NVRTC has no standard
/// library).
template <bool C, class A, class B> struct conditional {
    typedef A type;
};
template <class A, class B> struct conditional<false, A, B> {
    typedef B type;
};

}  // namespace warpfit

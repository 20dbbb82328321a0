// warpfit device library: moving arrays between layouts on the device.
//
// The throttled handle keeps a kernel's per-fine-task arrays (column
// indices, values) in the layouts its schedules run on: fine tasks sorted
// by partition within each task, and part-major (each group of partitions'
// share of every task contiguous). It builds them here from the arrays
// already on the device instead of permuting on the host and uploading,
// and it permutes per-launch vectors for remapped plans the same way.
// Element types are moved as raw words of 1, 2, 4 or 8 bytes.
//
//   gather:       out[i] = in[idx[i]]             (a permutation `new -> old`,
//                                                  or a table lookup)
//   copy_ranges:  out[dst[t] .. dst[t + 1]] = in[src[t] ..]   per task t
//   delta16:      out[k] = idx[k] - t for k in ptr[t] .. ptr[t + 1], as
//                 int16_t (index.cuh), per task t; `*wide` when one does
//                 not fit
//
// Every index is checked against the array it reads or writes; one out of
// range sets `*bad` (the host checks it after the build and reports a
// corrupt plan) and moves nothing for that element. Grid-stride loops: any
// grid size is correct.
#pragma once
#include "warpfit/types.cuh"

namespace warpfit {

template <class T>
__device__ __forceinline__ void gather(T* out, const T* in, const uint32_t* idx, uint64_t n, uint64_t in_len,
                                       uint32_t* bad) {
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    for (uint64_t i = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; i < n; i += stride) {
        const uint32_t j = idx[i];
        if (j < in_len) {
            out[i] = in[j];
        } else {
            *bad = 1;
        }
    }
}

/// A warp per task: task t's range `dst[t] .. dst[t + 1]` of `out` takes
/// the elements of `in` from `src[t]` on, 32 consecutive words a step.
template <class T>
__device__ __forceinline__ void copy_ranges(T* out, const T* in, const uint32_t* dst, const uint32_t* src,
                                            uint64_t n_tasks, uint64_t out_len, uint64_t in_len, uint32_t* bad) {
    const uint64_t warps = uint64_t(gridDim.x) * WARPS_PER_BLOCK;
    const int lane = int(threadIdx.x) % WARP;
    for (uint64_t t = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) / WARP; t < n_tasks; t += warps) {
        const uint64_t d = dst[t], e = dst[t + 1], s = src[t];
        if (e < d || e > out_len || s + (e - d) > in_len) {
            if (lane == 0) {
                *bad = 1;
            }
            continue;
        }
        for (uint64_t k = uint64_t(lane); k < e - d; k += WARP) {
            out[d + k] = in[s + k];
        }
    }
}

/// A warp per task: the entries `ptr[t] .. ptr[t + 1]` of the index array
/// `idx` as offsets from `t` (index.cuh). An offset outside `int16_t` sets
/// `*wide` (the layout keeps its plain array; what was written is unused),
/// a range outside `len` sets `*bad`.
template <class P>
__device__ __forceinline__ void delta16(int16_t* out, const uint32_t* idx, const P* ptr, uint64_t n_tasks,
                                        uint64_t len, uint32_t* wide, uint32_t* bad) {
    const uint64_t warps = uint64_t(gridDim.x) * WARPS_PER_BLOCK;
    const int lane = int(threadIdx.x) % WARP;
    for (uint64_t t = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) / WARP; t < n_tasks; t += warps) {
        const uint64_t lo = ptr[t], hi = ptr[t + 1];
        if (hi < lo || hi > len) {
            if (lane == 0) {
                *bad = 1;
            }
            continue;
        }
        bool fits = true;
        for (uint64_t k = lo + uint64_t(lane); k < hi; k += WARP) {
            const int64_t d = int64_t(idx[k]) - int64_t(t);
            fits = fits && d >= -32768 && d <= 32767;
            out[k] = int16_t(d);
        }
        if (!fits) {
            *wide = 1;
        }
    }
}

}  // namespace warpfit

#define WARPFIT_LAYOUT_ENTRY_POINTS_(T, W)                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                      \
        wf_gather_##W(T* out, const T* in, const uint32_t* idx, uint64_t n, uint64_t in_len,          \
                      uint32_t* bad) {                                                                \
        warpfit::gather<T>(out, in, idx, n, in_len, bad);                                             \
    }                                                                                                 \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                      \
        wf_copy_ranges_##W(T* out, const T* in, const uint32_t* dst, const uint32_t* src,             \
                           uint64_t n_tasks, uint64_t out_len, uint64_t in_len, uint32_t* bad) {      \
        warpfit::copy_ranges<T>(out, in, dst, src, n_tasks, out_len, in_len, bad);                    \
    }

#define WARPFIT_LAYOUT_DELTA16_(P, W)                                                                 \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                      \
        wf_delta16_##W(int16_t* out, const uint32_t* idx, const P* ptr, uint64_t n_tasks, uint64_t len, \
                       uint32_t* wide, uint32_t* bad) {                                               \
        warpfit::delta16<P>(out, idx, ptr, n_tasks, len, wide, bad);                                  \
    }

/// Every layout entry point: `wf_{gather,copy_ranges}_{1,2,4,8}` (the
/// element width in bytes) and `wf_delta16_{4,8}` (the range array's).
#define WARPFIT_LAYOUT_ENTRY_POINTS                                                                   \
    WARPFIT_LAYOUT_ENTRY_POINTS_(uint8_t, 1)                                                          \
    WARPFIT_LAYOUT_ENTRY_POINTS_(uint16_t, 2)                                                         \
    WARPFIT_LAYOUT_ENTRY_POINTS_(uint32_t, 4)                                                         \
    WARPFIT_LAYOUT_ENTRY_POINTS_(uint64_t, 8)                                                         \
    WARPFIT_LAYOUT_DELTA16_(uint32_t, 4)                                                              \
    WARPFIT_LAYOUT_DELTA16_(uint64_t, 8)

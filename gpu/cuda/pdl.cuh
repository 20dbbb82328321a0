// warpfit device library: programmatic dependent launch (sm_90).
//
// A task-list launch with split tasks is followed by the merge launch. With
// programmatic stream serialization the merge grid may start while the
// task-list grid is still running, and waits for it on the device, so its
// launch latency hides under the first grid's tail.
#pragma once

namespace warpfit {

/// Lets the grid launched after this one with programmatic stream
/// serialization start before this one ends.
/// A no-op before sm_90 and when the next launch does not ask for it.
__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

/// The other half: waits until the preceding grid has completed and its
/// writes are visible. Returns at once when this grid was launched normally
/// (the stream already ordered it) and before sm_90.
__device__ __forceinline__ void wait_for_primary() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace warpfit

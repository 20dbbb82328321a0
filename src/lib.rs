//! warpfit: irregular sparse-matrix and graph kernels as plain Rust map/fold.

// Generated code names `::warpfit::…`; this makes those paths resolve inside
// this crate too (its own apps are `#[nested_reduce]` kernels).
extern crate self as warpfit;

pub mod apps;
/// The device layer: the CUDA device, buffers, prepared launches, NVRTC
/// compilation, the cuSPARSE baseline and the SpMV benchmark.
pub use warpfit_gpu as gpu;
pub use warpfit_gpu::{
    split_one_task, CudaDevice, Decomposition, Device, DeviceBuffer, DeviceInfo, LaunchConfig,
    OneTaskSplit, Split,
};
pub use warpfit_macros::{device_fn, nested_reduce};
pub use warpfit_runtime as runtime;
pub use warpfit_runtime::{Error, Result, Segment, TaskList, Tasks};

/// What a kernel file needs in scope.
pub mod prelude {
    pub use crate::{device_fn, nested_reduce};
    pub use crate::{Decomposition, Device, Error, LaunchConfig, Segment, Split, TaskList, Tasks};
}

/// Items the generated code refers to; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use warpfit_gpu::{
        Arg, Device, DeviceFnSource, KernelSpec, LaunchConfig, ParamKind, ParamSpec, ScalarType,
    };
    pub use warpfit_runtime::exec::{cpu, Fault, GatherKernel, NestedKernel, SharedOut};
    pub use warpfit_runtime::partition::WorkGraph;
    pub use warpfit_runtime::{Error, Result, Tasks};
}

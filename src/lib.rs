#![doc = include_str!("../README.md")]

// Generated code names `::warpfit::…`; this makes those paths resolve inside
// this crate too (its own apps are `#[nested_reduce]` kernels).
extern crate self as warpfit;

pub mod apps;
pub mod distributed;

/// The reference chapters of `docs/`, rendered here so that `cargo doc` shows them next to
/// the API and so that every Rust example in them is a doctest (`cargo test --doc`), as the
/// README's are through the crate documentation above. Modules rather than a
/// `#[cfg(doctest)]` item: a reader finds the chapters in the rendered docs too.
pub mod docs {
    #[doc = include_str!("../docs/language.md")]
    pub mod language {}
    #[doc = include_str!("../docs/launching.md")]
    pub mod launching {}
    #[doc = include_str!("../docs/throttling.md")]
    pub mod throttling {}
    #[doc = include_str!("../docs/drivers.md")]
    pub mod drivers {}
    #[doc = include_str!("../docs/distributed.md")]
    pub mod distributed {}
    #[doc = include_str!("../docs/cli.md")]
    pub mod cli {}
    #[doc = include_str!("../docs/design.md")]
    pub mod design {}
}

/// CUDA-specific parts beyond the types at the crate root: which CUDA
/// libraries load ([`gpu::probe`]) and the level order of a pattern already
/// on the device ([`gpu::levels`]).
pub mod gpu {
    pub use warpfit_gpu::{levels, probe};
}
pub use warpfit_gpu::{
    default_cache_dir, split_one_task, Arch, CudaDevice, CudaRounds, Decomposition, Device,
    DeviceBuffer, DeviceInfo, DevicePlan, DeviceVec, DeviceWorklist, ExpectedLaunch, Input,
    LaunchConfig, ModelReport, OneTaskSplit, Output, PlanOrder, PreparedLaunch, PushVariant,
    Readback, Scalar, Split, ThrottleReport, ThrottleStatus, Throttled, MAX_READBACK_DEPTH,
    MAX_READBACK_LEN,
};
pub use warpfit_macros::{device_fn, nested_reduce, throttled};
pub use warpfit_runtime as runtime;
pub use warpfit_runtime::schedule::{
    CacheSize, Partitioner, RemapOrder, ThrottleOptions, ThrottlePolicy,
};
pub use warpfit_runtime::worklist::{
    atomic_add, atomic_apply, atomic_cas, atomic_max, atomic_min, atomic_or, push, Atomic,
    AtomicInt, AtomicScalar, PushError, Worklist,
};
pub use warpfit_runtime::{Error, Result, Segment, TaskList, Tasks};

/// What a kernel file needs in scope.
pub mod prelude {
    pub use crate::{
        atomic_add, atomic_apply, atomic_cas, atomic_max, atomic_min, atomic_or, push, Atomic,
        DeviceWorklist, PushVariant, Worklist,
    };
    pub use crate::{device_fn, nested_reduce, throttled};
    pub use crate::{
        Decomposition, Device, DeviceVec, Error, LaunchConfig, PreparedLaunch, Segment, Split,
        TaskList, Tasks,
    };
    pub use crate::{ThrottleOptions, ThrottlePolicy};
}

/// Items the generated code refers to (and the workspace's own benchmarks
/// and tests reach below the public surface); not a public API.
#[doc(hidden)]
pub mod __private {
    pub use warpfit_gpu::__private::*;
    pub use warpfit_gpu::levels::DeviceLevelOrder;
    pub use warpfit_gpu::{
        Device, DeviceVec, Input, LaunchConfig, Output, PlanOrder, PreparedLaunch, ThrottleReport,
        ThrottleStatus, Throttled,
    };
    pub use warpfit_runtime::exec::{cpu, Fault, GatherKernel, NestedKernel, SharedOut};
    pub use warpfit_runtime::mem::check_elems as mem_check_elems;
    pub use warpfit_runtime::partition::WorkGraph;
    pub use warpfit_runtime::schedule::ThrottleOptions;
    pub use warpfit_runtime::worklist::{
        atomic_add, atomic_cas, atomic_max, atomic_min, atomic_or, try_atomic_apply, Atomic,
        AtomicScalar, Worklist,
    };
    pub use warpfit_runtime::{Error, Result, Tasks};
}

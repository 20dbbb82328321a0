//! The device layer of warpfit: where a launch runs (the CPU or a CUDA
//! GPU), the description of a kernel that generated code hands over, and
//! the CUDA backend.
//!
//! What users hold is re-exported here, once each: [`Device`] and
//! [`CudaDevice`], [`LaunchConfig`] with [`Decomposition`] and [`Split`],
//! device-resident arrays ([`DeviceVec`], taken by generated launches
//! through [`Input`] and [`Output`]; raw [`DeviceBuffer`]s),
//! [`PreparedLaunch`] (what a generated `prepare` returns), [`Readback`],
//! [`DeviceWorklist`] and the drivers' [`CudaRounds`], the throttled handle
//! [`Throttled`] and its [`ThrottleReport`], and [`Error`]/[`Result`]; the
//! level order of a pattern on the device is [`levels`]. Every CUDA library
//! is loaded at run time and probed first ([`probe`]), so the crate builds
//! and its CPU paths run on machines without CUDA.
//!
//! What generated code (and the workspace's own benchmarks and tests) needs
//! beyond that lives under one hidden path, `__private`: the contract between
//! the macros and this crate, not an API; it changes with either.
//!
//! Layers, each importing only from those below it:
//! - bottom: `arch` (compute capability), `abi` (the device library's ABI
//!   mirrored on the host, with tests that both sides agree), `config`
//!   (launch options), `spec` (what `#[nested_reduce]` emits per kernel),
//!   [`probe`] (which CUDA libraries load);
//! - `driver`: context, stream, device attributes, device memory, events,
//!   and a keyed slot on each device for what the layers above keep per
//!   device;
//! - `compile`: NVRTC, the on-disk cache, a kernel's modules on a device,
//!   compiling ahead;
//! - `launch`: argument kinds, [`DeviceVec`] and the [`Input`]/[`Output`]
//!   traits, launch planning, task lists, faults, the CUDA launch, prepared
//!   launches, readbacks, device worklists, opening a device;
//! - `engines`: carried and one-task launches, gathers and layouts, the
//!   level order ([`levels`]), the worklist drivers' round backend
//!   ([`CudaRounds`]);
//! - `throttle`: the throttled handle ([`Throttled`]);
//! - `group`: several devices running one distributed kernel
//!   ([`DeviceGroup`]): NCCL between GPUs, host copies between CPU parts.

mod abi;
mod arch;
mod compile;
mod config;
mod driver;
mod engines;
mod group;
mod launch;
pub mod probe;
mod spec;
mod throttle;

/// The level order (breadth-first, Cuthill–McKee) of a pattern already on
/// the device, and the pattern renumbered by it.
pub mod levels {
    pub use crate::engines::level_order::{
        level_order, level_order_from_roots, level_order_within, load, spread_roots,
        DeviceLevelOrder, FIRST_ROUNDS_PER_CHECK, ROUNDS_PER_CHECK,
    };
    pub use crate::engines::level_renumber::{renumber, DeviceCsr};
}

pub use abi::PushVariant;
pub use arch::Arch;
pub use compile::default_cache_dir;
pub use config::{Decomposition, LaunchConfig, Split};
pub use driver::buffer::DeviceBuffer;
pub use driver::cuda_device::CudaDevice;
pub use driver::device::{Device, DeviceInfo};
pub use engines::one_task::{split_one_task, OneTaskSplit};
pub use engines::round_backend::CudaRounds;
pub use group::{DeviceGroup, GroupSize, Transfer, DEFAULT_GROUP_TIMEOUT, MAX_GROUP};
pub use launch::device_vec::DeviceVec;
pub use launch::device_worklist::DeviceWorklist;
pub use launch::input_output::{Input, Output};
pub use launch::open_device::ExpectedLaunch;
pub use launch::prepared_launch::PreparedLaunch;
pub use launch::readback::{Readback, MAX_READBACK_DEPTH, MAX_READBACK_LEN};
pub use spec::Scalar;
pub use throttle::{DevicePlan, ModelReport, PlanOrder, ThrottleReport, ThrottleStatus, Throttled};
pub use warpfit_runtime::{Error, Result};

/// What generated code needs, and what the workspace's benchmarks and tests
/// reach below the public surface: the kernel description the macros emit
/// ([`KernelSpec`](__private::KernelSpec) and its parts), argument kinds and
/// the CPU backend's argument views, the throttling roles, the CUDA launch
/// over explicit arguments ([`CudaLaunch`](__private::CudaLaunch)), carried
/// launches, NVRTC compilation and its cache ([`compile`](__private::compile)),
/// the event timer. Not a public API: it changes with the macros.
#[doc(hidden)]
pub mod __private {
    pub use crate::abi::ENTRY_POINTS;
    pub use crate::driver::errors::cuda_err;
    pub use crate::driver::event_timer::EventTimer;
    pub use crate::engines::carried_launch::CarriedLaunch;
    pub use crate::engines::level_order::{level_order_run, LevelRun};
    pub use crate::engines::plan_kernels::{column_blocks_both_ways, level_order_inverse};
    pub use crate::launch::arg::{Arg, HostSlice, HostSliceMut, SharedSlice};
    pub use crate::launch::columns::{column_config, column_tasks};
    pub use crate::launch::cpu_args::{host_input, host_output, host_shared, CpuArgs};
    pub use crate::launch::cuda_launch::CudaLaunch;
    pub use crate::launch::device_cut::{cut_both_ways, DEVICE_CUT_MIN_TASKS};
    pub use crate::launch::device_tasks::TaskListWords;
    pub use crate::launch::device_vec::ResidentArray;
    pub use crate::launch::input_output::{InputRef, OutputRef};
    pub use crate::launch::launch_steps::{pack_warps, whole_runs, PACK_CHUNK};
    pub use crate::launch::prepared_launch::CpuRun;
    pub use crate::launch::worklist_arg::{check_frontier, host_worklist, ListArg, WorklistArg};
    pub use crate::spec::{
        AccType, DeviceFnSource, IndexEncoding, KernelSpec, ParamKind, ParamSpec, ScalarType,
        ScalarValue,
    };
    pub use crate::throttle::plan_cache_entry;
    pub use crate::throttle::{CpuRunFn, HostArray, OwnedShape, ThrottleRoles, LEVEL_ROOTS};

    /// NVRTC compilation, translation units, entry points and the on-disk
    /// cache (the NVRTC tests and the compile-time example use them).
    pub mod compile {
        pub use crate::compile::*;
    }
}

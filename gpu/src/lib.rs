//! The device layer of warpfit: where a launch runs (the CPU or a CUDA
//! GPU), the description of a kernel that generated code hands over, and
//! the CUDA backend.
//!
//! What users hold is re-exported here: [`Device`] and [`CudaDevice`],
//! [`LaunchConfig`] with [`Decomposition`] and [`Split`], device-resident
//! arrays ([`DeviceVec`], taken by generated launches through [`Input`] and
//! [`Output`]), [`PreparedLaunch`] (what a generated `prepare` returns),
//! [`DeviceBuffer`], [`Prepared`] launches, and [`Error`]/[`Result`]. Every CUDA library is
//! loaded at run time and probed first ([`probe`]), so the crate builds and
//! its CPU paths run on machines without CUDA.
//!
//! Layers, each importing only from those below it:
//! - bottom: `arch` (compute capability), `abi` (the device library's ABI
//!   mirrored on the host, with tests that both sides agree), `config`
//!   (launch options), [`spec`] (what `#[nested_reduce]` emits per kernel,
//!   [`KernelSpec`]), [`probe`] (which CUDA libraries load);
//! - `driver`: context, stream, device attributes, device memory
//!   ([`buffer`]), events ([`event_timer`]), and a keyed slot on each
//!   device for what the layers above keep per device;
//! - [`compile`]: NVRTC, the on-disk cache, a kernel's modules on a device,
//!   compiling ahead;
//! - [`launch`]: argument kinds, [`DeviceVec`] and the [`Input`]/[`Output`]
//!   traits, launch planning, task lists, faults, prepared launches,
//!   readbacks, device worklists, opening a device;
//! - `engines`: carried and one-task launches, gathers and layouts, the
//!   level order ([`levels`]), the worklist drivers' round backend
//!   ([`CudaRounds`]);
//! - `throttle`: the throttled handle ([`Throttled`]).

mod abi;
mod arch;
pub mod compile;
mod config;
mod driver;
mod engines;
pub mod launch;
pub mod probe;
pub mod spec;
mod throttle;

pub use driver::{buffer, event_timer};

/// The level order's public path (the items live in the engines layer).
pub mod levels {
    pub use crate::engines::level_order::{
        level_order, level_order_within, load, renumber, DeviceCsr, DeviceLevelOrder,
        ROUNDS_PER_CHECK,
    };
}

pub use abi::PushVariant;
pub use buffer::DeviceBuffer;
pub use compile::Arch;
pub use config::{Decomposition, LaunchConfig, Split};
pub use driver::cuda_device::CudaDevice;
pub use driver::device::{Device, DeviceInfo};
pub use engines::carried_launch::CarriedLaunch;
pub use engines::one_task::{split_one_task, OneTaskSplit};
pub use engines::round_backend::{
    Bind, CudaRounds, RoundKey, CUDA_ROUNDS_PER_SYNC, DONATION_BOARD_BYTES,
};
pub use launch::arg::{Arg, HostSlice, HostSliceMut, SharedSlice};
/// Maps a driver error to [`Error::Cuda`] with context (for the benchmarks,
/// which call the driver directly).
#[doc(hidden)]
pub use driver::errors::cuda_err;
pub use launch::cpu_args::CpuArgs;
/// What generated `launch` functions call on the CPU backend.
#[doc(hidden)]
pub use launch::cpu_args::{host_input, host_output, host_shared};
pub use launch::device_vec::{DeviceVec, ResidentArray};
pub use launch::device_worklist::DeviceWorklist;
pub use launch::input_output::{Input, InputRef, Output, OutputRef};
pub use launch::open_device::ExpectedLaunch;
pub use launch::prepared_launch::{CpuRun, PreparedLaunch};
pub use launch::readback::{Readback, MAX_READBACK_DEPTH, MAX_READBACK_LEN};
#[doc(hidden)]
pub use launch::worklist_arg::{check_frontier, host_worklist};
pub use launch::worklist_arg::{ListArg, WorklistArg};
pub use launch::Prepared;
pub use spec::{
    DeviceFnSource, IndexEncoding, KernelSpec, ParamKind, ParamSpec, Scalar, ScalarType,
    ScalarValue,
};
pub use throttle::{
    CpuRunFn, HostArray, PlanOrder, ThrottleReport, ThrottleRoles, ThrottleStatus, Throttled,
};
pub use warpfit_runtime::{Error, Result};

/// Every entry point the device library defines for a kernel (for the
/// NVRTC compile test).
#[doc(hidden)]
pub use abi::ENTRY_POINTS;

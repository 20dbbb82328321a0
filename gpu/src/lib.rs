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
//! Layout, one concern per module:
//! - `config`, `device`: launch options, devices and their compiled modules;
//! - [`spec`]: what `#[nested_reduce]` emits per kernel ([`KernelSpec`]);
//! - `args`: the kinds of launch argument ([`Arg`]), made resident on the
//!   device and packed into the kernel's `Params`;
//! - `resident`: [`DeviceVec`], the [`Input`]/[`Output`] argument traits,
//!   placement checks, and [`PreparedLaunch`] on both backends;
//! - `abi`: the device library's ABI (`gpu/cuda/*.cuh`) mirrored on the
//!   host, with tests that both sides agree;
//! - `plan`: launch planning, host code only: the split policy and its
//!   tuning constants, task lists, warp packing, the kernels to launch;
//! - `tasks`, [`launch`], `fault`: the task list on the device, the launch
//!   itself, and faults read back as the CPU twin's errors;
//! - `one_task`: one long task (a global reduction) split over a device;
//! - `worklist`: [`DeviceWorklist`], what push kernels push to and a
//!   data-driven round's launch takes as its tasks, with the device
//!   library's growth and clearing kernels;
//! - [`levels`]: a breadth-first (Cuthill–McKee) order of a pattern
//!   already on the device, and the pattern renumbered by it;
//! - `readback`: small asynchronous downloads for iterative drivers;
//! - `rounds`: [`CudaRounds`], the worklist drivers' round backend on CUDA
//!   (`rounds.cuh`: halting, near-far splitting and outcome records on the
//!   device);
//! - [`compile`]: NVRTC with an on-disk cache; [`buffer`]: device memory.

mod abi;
mod args;
pub mod buffer;
mod carried;
pub mod compile;
mod config;
mod device;
pub mod event_timer;
mod fault;
pub mod launch;
mod layout;
pub mod levels;
mod one_task;
mod plan;
pub mod probe;
mod readback;
mod resident;
mod rounds;
pub mod spec;
mod tasks;
mod throttle;
mod worklist;

pub use abi::PushVariant;
pub use args::{Arg, HostSlice, HostSliceMut, SharedSlice};
/// Maps a driver error to [`Error::Cuda`] with context (for the benchmarks,
/// which call the driver directly).
#[doc(hidden)]
pub use buffer::cuda_err;
pub use buffer::DeviceBuffer;
pub use carried::CarriedLaunch;
pub use compile::Arch;
pub use config::{Decomposition, LaunchConfig, Split};
pub use device::{CudaDevice, Device, DeviceInfo, ExpectedLaunch};
pub use launch::Prepared;
pub use one_task::{split_one_task, OneTaskSplit};
pub use readback::{Readback, MAX_READBACK_DEPTH, MAX_READBACK_LEN};
/// What generated `launch` functions call on the CPU backend.
#[doc(hidden)]
pub use resident::{host_input, host_output, host_shared};
pub use resident::{
    CpuArgs, CpuRun, DeviceVec, Input, InputRef, Output, OutputRef, PreparedLaunch, ResidentArray,
};
pub use rounds::{Bind, CudaRounds, RoundKey, CUDA_ROUNDS_PER_SYNC, DONATION_BOARD_BYTES};
pub use spec::{
    DeviceFnSource, IndexEncoding, KernelSpec, ParamKind, ParamSpec, Scalar, ScalarType,
    ScalarValue,
};
pub use throttle::{
    CpuRunFn, HostArray, PlanOrder, ThrottleReport, ThrottleRoles, ThrottleStatus, Throttled,
};
pub use warpfit_runtime::{Error, Result};
#[doc(hidden)]
pub use worklist::{check_frontier, host_worklist};
pub use worklist::{DeviceWorklist, ListArg, WorklistArg};

/// Every entry point the device library defines for a kernel (for the
/// NVRTC compile test).
#[doc(hidden)]
pub use abi::ENTRY_POINTS;

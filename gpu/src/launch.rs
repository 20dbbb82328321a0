//! Launches on a device, above the driver and the compiler: the kinds of
//! launch argument and how they become resident, device-resident arrays
//! ([`DeviceVec`](crate::DeviceVec)) and worklists, launch planning (host
//! code only), task lists on the device, the launch itself ([`CudaLaunch`]),
//! faults read back as the CPU twin's errors, and small readbacks.
//!
//! Files, bottom up: `split_policy`, `launch_steps`, `validation` and
//! `likely_entries` (planning: the split, the kernels a launch runs, the
//! validation in front of a 2-D fold, the entry points likely compiled);
//! `fault` and `pending_faults`; `device_vec`, `device_alloc`,
//! `input_output`, `worklist_kernels`, `device_worklist`, `worklist_arg`
//! (what arguments are); `arg`, `placement`, `resident_args`, `cpu_args`
//! (arguments checked and made resident); `device_tasks`, `enqueue`,
//! `prepared`, `prepared_launch` (the launch); `readback`; `open_device`
//! (opening a GPU with the compiles its first launches need).

pub(crate) mod arg;
pub(crate) mod columns;
pub(crate) mod cpu_args;
pub(crate) mod cuda_launch;
pub(crate) mod device_alloc;
pub(crate) mod device_cut;
pub(crate) mod device_tasks;
pub(crate) mod device_vec;
pub(crate) mod device_worklist;
pub(crate) mod enqueue;
pub(crate) mod fault;
pub(crate) mod input_output;
pub(crate) mod launch_steps;
pub(crate) mod library_kernels;
pub(crate) mod likely_entries;
pub(crate) mod merge_width;
pub(crate) mod open_device;
pub(crate) mod pending_faults;
pub(crate) mod placement;
pub(crate) mod prepared_launch;
pub(crate) mod readback;
pub(crate) mod resident_args;
pub(crate) mod split_policy;
pub(crate) mod validation;
pub(crate) mod worklist_arg;
pub(crate) mod worklist_kernels;

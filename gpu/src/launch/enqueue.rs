//! Enqueuing a prepared launch's kernels on the device's stream: each
//! kernel resolved ([`Launch`], [`plan_steps`]), the size kernel that
//! measures the tasks ([`TaskSizes`]), plain and programmatic dependent
//! launches, and the fault check that follows a synchronous one.

use crate::abi::{self, LaunchArgs, TaskStats, BLOCK, SIZES_ENTRY};
use crate::compile::device_modules::Module;
use crate::config::Decomposition;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::errors::cuda_err;
use crate::launch::device_cut::{cut_on_device, DeviceCut};
use crate::launch::device_tasks::DeviceTaskList;
use crate::launch::launch_steps;
use crate::launch::launch_steps::{grid, LaunchPlan, Validation};
use crate::launch::likely_entries::{likely_after_row_sizes, likely_after_sizes};
use crate::launch::pending_faults::{read_back_error, read_fault};
use crate::launch::resident_args::{ParamBlock, ResidentArgs};
use crate::launch::split_policy::Cut;
use crate::spec::KernelSpec;
use cudarc::driver::{CudaFunction, LaunchConfig as CuLaunch, PushKernelArg};
use warpfit_runtime::{Error, Result};

/// One kernel launch, resolved: everything but the enqueue.
#[derive(Clone)]
pub(super) struct Launch {
    pub(super) entry: &'static str,
    pub(super) function: CudaFunction,
    pub(super) blocks: u32,
    pub(super) dependent: bool,
    pub(super) args: LaunchArgs,
}

/// The launches of `plan`, each over `base` with its step's item count.
/// With `queue` (the queue head and the groups per dequeue), the first step
/// (the task-list kernel) runs the queue entry point of `decomposition` as
/// a persistent grid: as many blocks as can be resident, each warp taking
/// `chunk` groups at a time in list order until the queue is empty. With
/// `gate` (a validated 2-D launch, `launch/validation.rs`), the validation
/// step records its faults there and the gated steps read it.
pub(super) fn plan_steps(
    dev: &CudaDevice,
    module: &Module,
    plan: &LaunchPlan,
    decomposition: Decomposition,
    queue: Option<(&DeviceBuffer<u32>, u32)>,
    gate: Option<&DeviceBuffer<u64>>,
    base: LaunchArgs,
) -> Result<Vec<Launch>> {
    let base = match queue {
        Some((head, chunk)) => LaunchArgs {
            queue: head.device_ptr(dev),
            queue_chunk: chunk.max(1),
            ..base
        },
        None => base,
    };
    let resident_blocks = (dev.resident_warps() / u64::from(BLOCK / abi::WARP)).max(1);
    plan.steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (entry, blocks) = match (i, queue) {
                (0, Some(_)) => (
                    abi::entry_point(decomposition, abi::TaskSource::Queue)?,
                    s.blocks.min(resident_blocks as u32).max(1),
                ),
                _ => (s.entry, s.blocks),
            };
            Ok(Launch {
                entry,
                function: module.function(entry)?.clone(),
                blocks,
                dependent: s.dependent,
                args: step_args(
                    LaunchArgs {
                        n_items: s.items,
                        ..base
                    },
                    s.validation,
                    gate.map(|g| g.device_ptr(dev)),
                )?,
            })
        })
        .collect()
}

/// A step's arguments with its part in a validated launch: the
/// validation's fault record is the gate, which the gated steps read.
fn step_args(args: LaunchArgs, validation: Validation, gate: Option<u64>) -> Result<LaunchArgs> {
    let gate = || gate.ok_or_else(|| Error::invalid("a validated launch without its gate record"));
    Ok(match validation {
        Validation::None => args,
        Validation::Validate { columns, lanes } => LaunchArgs {
            fault: gate()?,
            columns,
            validate_lanes: lanes,
            ..args
        },
        Validation::Gated { when, columns } => LaunchArgs {
            gate: gate()?,
            gate_when: when as u32,
            columns,
            ..args
        },
    })
}

/// What the size kernel measured: the statistics, and each task's range
/// on the device (read back only when tasks are cut).
pub(super) struct TaskSizes {
    pub(super) stats: TaskStats,
    pub(super) ranges: DeviceBuffer<u32>,
}

impl TaskSizes {
    /// Runs the size kernel over tasks `0..n` and reads its statistics
    /// (32 bytes: most launches need no split and never read the ranges).
    /// With `columns` above 1, over a 2-D kernel's `n` rows (each read as
    /// its flattened task `row·columns`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn measure(
        dev: &CudaDevice,
        spec: &KernelSpec,
        module: &Module,
        params: &ParamBlock,
        fault: &DeviceBuffer<u64>,
        args: &ResidentArgs,
        n: usize,
        columns: u64,
    ) -> Result<Self> {
        let ranges = DeviceBuffer::<u32>::zeros(dev, 2 * n)?;
        let stats = DeviceBuffer::<u64>::zeros(dev, TaskStats::WORDS)?;
        let a = LaunchArgs {
            n_items: n as u64,
            sizes: ranges.device_ptr(dev),
            scratch: stats.device_ptr(dev),
            fault: fault.device_ptr(dev),
            columns,
            ..Default::default()
        };
        let next = match columns > 1 {
            true => likely_after_row_sizes(spec, Some(columns)),
            false => likely_after_sizes(n as u64, dev.resident_warps()),
        };
        let function = module.function_then(SIZES_ENTRY, next)?;
        enqueue(
            dev,
            spec,
            SIZES_ENTRY,
            function,
            grid(n as u64, 1)?,
            params,
            &a,
        )?;
        check_fault(dev, spec, fault, args, |_| None)?;
        let words: [u64; TaskStats::WORDS] = stats
            .to_vec(dev)?
            .try_into()
            .map_err(|_| read_back_error(spec, "task statistics"))?;
        Ok(TaskSizes {
            stats: TaskStats::from_words(&words),
            ranges,
        })
    }

    /// Each task's `lo, hi`, for cutting tasks into segments.
    pub(super) fn ranges(&self, dev: &CudaDevice, spec: &KernelSpec) -> Result<Vec<u32>> {
        let lr = self.ranges.to_vec(dev)?;
        // The size kernel saturates indices to u32::MAX.
        if lr.contains(&u32::MAX) {
            return Err(Self::saturated(spec));
        }
        Ok(lr)
    }

    /// The task list of a launch over tasks `0..n` whose sizes were measured,
    /// cut as `cut` says: on the device where it takes the ranges
    /// ([`cut_on_device`]), else on the host from the ranges read back.
    pub(super) fn cut(
        &self,
        dev: &CudaDevice,
        spec: &KernelSpec,
        n: usize,
        cut: Cut,
        trace: &mut TraceSplit,
    ) -> Result<DeviceTaskList> {
        let acc = spec.acc.size();
        match cut_on_device(dev, &self.ranges, n, self.stats.total, cut, acc, false)? {
            DeviceCut::Cut(l) => {
                trace.mark("cut on the device");
                Ok(*l)
            }
            DeviceCut::Saturated => Err(TaskSizes::saturated(spec)),
            DeviceCut::OnTheHost => {
                let ranges = self.ranges(dev, spec)?;
                trace.mark("ranges read");
                let list = launch_steps::cut_tasks(&ranges, cut.max_len)?;
                trace.mark("cut");
                let l = DeviceTaskList::upload(dev, list, acc, cut.pack_budget)?;
                trace.mark("uploaded");
                Ok(l)
            }
        }
    }

    /// The error for ranges whose indices reach u32::MAX.
    pub(super) fn saturated(spec: &KernelSpec) -> Error {
        Error::invalid(format!(
            "kernel `{}`: fine-task indices reach u32::MAX, too large to split into segments",
            spec.name
        ))
    }
}

/// Waits for the stream and turns the fault record into the CPU twin's error.
pub(super) fn check_fault(
    dev: &CudaDevice,
    spec: &KernelSpec,
    fault: &DeviceBuffer<u64>,
    args: &ResidentArgs,
    segment: impl Fn(usize) -> Option<warpfit_runtime::Segment>,
) -> Result<()> {
    read_fault(dev, spec, fault, |i| args.array_len(i), segment)
}

/// Enqueues entry point `entry` of `spec` on the device's stream. Every
/// entry point takes (`Params`, `LaunchArgs`) by value.
pub(super) fn enqueue(
    dev: &CudaDevice,
    spec: &KernelSpec,
    entry: &str,
    function: &CudaFunction,
    blocks: u32,
    params: &ParamBlock,
    args: &LaunchArgs,
) -> Result<()> {
    let cfg = CuLaunch {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = dev.stream().launch_builder(function);
    b.arg(params);
    b.arg(args);
    // SAFETY: the entry point takes (Params by value, LaunchArgs by value);
    // `params` was packed from this kernel's spec and every pointer in
    // both structs refers to a live buffer owned by the prepared launch
    // (or by the caller until the launch completes).
    unsafe { b.launch(cfg) }.map_err(cuda_err(format!(
        "launching `{entry}` of kernel `{}`",
        spec.name
    )))?;
    Ok(())
}

/// Enqueues `l` as a programmatic dependent of the launch before it
/// (sm_90 and newer): its grid may be scheduled while the previous grid
/// runs its last blocks, and waits for that grid's completion on the
/// device (`wait_for_primary` in merge.cuh).
pub(super) fn enqueue_dependent(
    dev: &CudaDevice,
    spec: &KernelSpec,
    l: &Launch,
    params: &ParamBlock,
) -> Result<()> {
    use cudarc::driver::sys;
    let context = || format!("launching `{}` of kernel `{}`", l.entry, spec.name);
    dev.context()
        .bind_to_thread()
        .map_err(cuda_err(context()))?;
    // SAFETY: the union is plain data; only the field the id names is read.
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.programmaticStreamSerializationAllowed = 1;
    let mut attr = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value,
    };
    let cfg = sys::CUlaunchConfig {
        gridDimX: l.blocks,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: BLOCK,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        hStream: dev.stream().cu_stream(),
        attrs: &mut attr,
        numAttrs: 1,
    };
    let mut kernel_params: [*mut std::ffi::c_void; 2] = [
        (params as *const ParamBlock).cast_mut().cast(),
        (&l.args as *const LaunchArgs).cast_mut().cast(),
    ];
    // SAFETY: as in `enqueue`: the entry point takes (Params, LaunchArgs)
    // by value, the driver copies them from `kernel_params` before
    // returning, and every pointer inside refers to a live buffer.
    let r = unsafe {
        sys::cuLaunchKernelEx(
            &cfg,
            l.function.cu_function(),
            kernel_params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    r.result().map_err(cuda_err(context()))
}

/// With `WARPFIT_TRACE_SPLIT=1`, one line on stderr per launch prepared:
/// the kernel, its tasks (0 for a list or a worklist) and the wall time of
/// each step (the module, the arguments, the fault word, and with the
/// automatic split measuring the tasks, reading their ranges, cutting
/// them, uploading the list): host work that grows with the tasks,
/// repeated for every launch of a schedule.
pub(super) struct TraceSplit {
    kernel: &'static str,
    tasks: usize,
    start: Option<std::time::Instant>,
    marks: Vec<(&'static str, std::time::Duration)>,
}

impl TraceSplit {
    /// A trace of the launch over `tasks` (counted where they are all
    /// tasks), on where `WARPFIT_TRACE_SPLIT=1`.
    pub(super) fn start(kernel: &'static str, tasks: &warpfit_runtime::Tasks<'_>) -> Self {
        let tasks = match tasks {
            warpfit_runtime::Tasks::All(n) => *n,
            _ => 0,
        };
        let on = std::env::var_os("WARPFIT_TRACE_SPLIT").is_some_and(|v| v == "1");
        TraceSplit {
            kernel,
            tasks,
            start: on.then(std::time::Instant::now),
            marks: Vec::new(),
        }
    }

    pub(super) fn mark(&mut self, step: &'static str) {
        if let Some(t) = self.start {
            self.marks.push((step, t.elapsed()));
        }
    }
}

impl Drop for TraceSplit {
    fn drop(&mut self) {
        if let Some(t) = self.start {
            let steps: Vec<String> = self
                .marks
                .iter()
                .map(|(s, d)| format!("{s} {:.1}", d.as_secs_f64() * 1e3))
                .collect();
            eprintln!(
                "split {}: {} tasks, {:.1} ms (at ms: {})",
                self.kernel,
                self.tasks,
                t.elapsed().as_secs_f64() * 1e3,
                steps.join(", ")
            );
        }
    }
}

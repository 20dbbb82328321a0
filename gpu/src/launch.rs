//! The launch itself. [`Prepared::new`] makes everything a launch needs
//! resident on the device — module, arguments (`args.rs`), task list
//! (`tasks.rs`), fault record — runs the size kernel when the split depends
//! on the tasks' sizes, and resolves the kernels launch planning chose
//! (`plan.rs`); [`Prepared::run`] enqueues them, and
//! [`Prepared::check_fault`] reads the fault record back as the error the
//! CPU twin returns (`fault.rs`).

use crate::abi::{self, FaultRecord, LaunchArgs, TaskStats, BLOCK, SIZES_ENTRY};
use crate::args::{Arg, ParamBlock, ResidentArgs};
use crate::buffer::{cuda_err, DeviceBuffer};
use crate::config::{LaunchConfig, Split};
use crate::device::{CudaDevice, Module};
use crate::fault::fault_error;
use crate::plan::{self, Items, SplitDecision};
use crate::spec::KernelSpec;
use crate::tasks::DeviceTaskList;
use cudarc::driver::{CudaFunction, LaunchConfig as CuLaunch, PushKernelArg};
use warpfit_runtime::{Error, Result, TaskList, Tasks};

/// One kernel launch, resolved: everything but the enqueue.
struct Launch {
    entry: &'static str,
    function: CudaFunction,
    blocks: u32,
    dependent: bool,
    args: LaunchArgs,
}

/// How a task list the throttled handle built over its own layouts runs
/// ([`Prepared::over_plan_list`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlanList {
    /// CTE warps take groups of consecutive segments holding at most this
    /// much work.
    pub budget: u32,
    /// Warps take `chunk` groups per dequeue from a device queue, in list
    /// order (CF-Q, SJ-Q); `None`: warp `w` takes group `w`.
    pub queue_chunk: Option<u32>,
}

/// Everything a launch needs, resident on the device: running it again
/// re-runs the kernels on the same buffers (what benchmarks time).
pub struct Prepared {
    dev: CudaDevice,
    spec: KernelSpec,
    args: ResidentArgs,
    params: ParamBlock,
    /// The task list the kernels run; `None` over all tasks.
    tasks: Option<DeviceTaskList>,
    launches: Vec<Launch>,
    chosen_split: Option<Split>,
    cte_serial_max: u32,
    fault: DeviceBuffer<u64>,
    /// The queue head of a queued list, zeroed before each run.
    queue: Option<DeviceBuffer<u32>>,
    /// A host worklist's items and count, uploaded for a launch over it
    /// (held for the kernels, which read them by address).
    _frontier: Option<(DeviceBuffer<u32>, DeviceBuffer<u64>)>,
}

/// The launches of `plan`, each over `base` with its step's item count.
/// With `queue` (the queue head and the groups per dequeue), the first step
/// (the task-list kernel) runs the queue entry point of `decomposition` as
/// a persistent grid: as many blocks as can be resident, each warp taking
/// `chunk` groups at a time in list order until the queue is empty.
fn plan_steps(
    dev: &CudaDevice,
    module: &Module,
    plan: &plan::LaunchPlan,
    decomposition: crate::config::Decomposition,
    queue: Option<(&DeviceBuffer<u32>, u32)>,
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
                args: LaunchArgs {
                    n_items: s.items,
                    ..base
                },
            })
        })
        .collect()
}

impl Prepared {
    /// Compiles (or fetches) the module, makes the arguments resident and,
    /// for a CTE launch over all tasks whose split depends on the tasks'
    /// sizes, runs the size kernel and builds the task list that bounds
    /// each warp's work.
    ///
    /// A `Prepared` owns copies of its arguments, so it takes host arrays
    /// and scalars only: device-resident arrays go through a generated
    /// `prepare`, whose handle borrows them for as long as it runs.
    pub fn new(
        dev: &CudaDevice,
        spec: &KernelSpec,
        config: &LaunchConfig,
        tasks: Tasks<'_>,
        args: &[Arg<'_>],
    ) -> Result<Self> {
        if let Some(i) = args.iter().position(|a| matches!(a, Arg::Resident(_))) {
            let name = spec.params.get(i).map_or("?", |p| p.name);
            return Err(Error::invalid(format!(
                "kernel `{}`: argument {i} (`{name}`) is a DeviceVec, which `Prepared::new` cannot borrow: use the kernel's generated `prepare`",
                spec.name
            )));
        }
        Self::new_borrowing(dev, spec, config, tasks, args)
    }

    /// [`Prepared::new`], with device-resident arrays taken by address: the
    /// caller keeps them alive while the launch can run (a plain launch for
    /// its call, a `PreparedLaunch` for its borrow).
    pub(crate) fn new_borrowing(
        dev: &CudaDevice,
        spec: &KernelSpec,
        config: &LaunchConfig,
        tasks: Tasks<'_>,
        args: &[Arg<'_>],
    ) -> Result<Self> {
        // A per-task map runs one thread per task, whatever `config` says.
        let config = &spec.launch_config(config);
        abi::entry_point(config.decomposition, abi::TaskSource::All)?;
        let module = dev.module(spec)?;
        let args = ResidentArgs::new(dev, spec, args)?;
        let params = args.pack(dev)?;
        let fault = DeviceBuffer::<u64>::zeros(dev, FaultRecord::WORDS)?;
        let unsplit = SplitDecision {
            chosen: None,
            cte_serial_max: config.cte_serial_max,
            cut: None,
            small: false,
        };
        let mut decomposition = config.decomposition;
        // A worklist's items as the tasks: its items and count on the device.
        let mut frontier = None;
        let mut frontier_buffers = None;
        let (items, task_list, decision) = match tasks {
            Tasks::DeviceFrontier(f) => {
                if f.device != dev.ordinal() {
                    return Err(Error::invalid(format!(
                        "kernel `{}`: its tasks are a worklist of CUDA device {}, but the launch runs on CUDA device {} ({})",
                        spec.name,
                        f.device,
                        dev.ordinal(),
                        dev.name()
                    )));
                }
                if let Some((i, _)) = args.lists().find(|(_, r)| r.items == f.items) {
                    return Err(crate::worklist::frontier_is_target(spec, i));
                }
                frontier = Some((f.items, f.count));
                (Items::Frontier(f.capacity), None, unsplit)
            }
            Tasks::Frontier(list) => {
                // A CPU list's items, uploaded for this launch.
                let items: Vec<u32> = (0..list.len()).filter_map(|i| list.get(i)).collect();
                let buffers = (
                    DeviceBuffer::upload(dev, &items)?,
                    DeviceBuffer::upload(dev, &[items.len() as u64])?,
                );
                frontier = Some((buffers.0.device_ptr(dev), buffers.1.device_ptr(dev)));
                frontier_buffers = Some(buffers);
                (Items::Frontier(items.len() as u64), None, unsplit)
            }
            Tasks::List(list) => {
                plan::check_u32_items(list.len())?;
                let l = DeviceTaskList::upload(dev, list.clone(), spec.acc.size(), None)?;
                (l.items(), Some(l), unsplit)
            }
            Tasks::All(n) if plan::needs_task_sizes(config.decomposition, config.split, n) => {
                plan::check_split(config.split)?;
                plan::check_u32_items(n)?;
                let mut trace = TraceSplit::start(spec.name, n);
                let sizes = TaskSizes::measure(dev, spec, &module, &params, &fault, &args, n)?;
                let decision = plan::choose_split(
                    config.split,
                    &sizes.stats,
                    dev.resident_warps(),
                    config.cte_serial_max,
                )?;
                trace.mark("measured");
                match decision.cut {
                    Some(cut) => {
                        decomposition =
                            plan::list_decomposition(decomposition, cut, decision.cte_serial_max);
                        let ranges = sizes.ranges(dev, spec)?;
                        trace.mark("ranges read");
                        let list = plan::cut_tasks(&ranges, cut.max_len)?;
                        trace.mark("cut");
                        let mut l =
                            DeviceTaskList::upload(dev, list, spec.acc.size(), cut.pack_budget)?;
                        trace.mark("uploaded");
                        if decision.small {
                            l.merge_wide();
                        }
                        (l.items(), Some(l), decision)
                    }
                    None => (Items::All(n as u64), None, decision),
                }
            }
            Tasks::All(n) => (Items::All(n as u64), None, unsplit),
            #[allow(unreachable_patterns)]
            _ => {
                return Err(Error::invalid(
                    "this task source is not supported by the CUDA backend",
                ))
            }
        };
        let plan = plan::plan_launches(decomposition, items, dev.arch())?;
        // A `Split::Queued` launch's packed warps dequeue their groups
        // (`plan::PACKED_QUEUE_WORK` fine tasks at a time); the head is
        // zeroed before each run.
        let queue_chunk = decision
            .cut
            .and_then(|c| c.queue_chunk)
            .filter(|_| plan.packed_warps);
        let queue = match queue_chunk {
            Some(_) => Some(DeviceBuffer::<u32>::zeros(dev, 1)?),
            None => None,
        };
        let base = LaunchArgs {
            n_items: 0,
            fault: fault.device_ptr(dev),
            cte_serial_max: decision.cte_serial_max,
            ..Default::default()
        };
        let base = match &task_list {
            Some(l) => l.launch_args(dev, plan.packed_warps, base),
            None => base,
        };
        let base = match frontier {
            Some((items, count)) => LaunchArgs {
                frontier: items,
                frontier_count: count,
                ..base
            },
            None => base,
        };
        let launches = plan_steps(
            dev,
            &module,
            &plan,
            decomposition,
            queue.as_ref().zip(queue_chunk),
            base,
        )?;
        Ok(Prepared {
            dev: dev.clone(),
            spec: *spec,
            args,
            params,
            tasks: task_list,
            launches,
            chosen_split: decision.chosen,
            cte_serial_max: decision.cte_serial_max,
            fault,
            queue,
            _frontier: frontier_buffers,
        })
    }

    /// Work donation (Nasre et al., III-E) for a CTE launch over a device
    /// frontier of a kernel that [`donates`](KernelSpec::donates): a warp
    /// that finds an item of more than `min_len` fine tasks posts them, in
    /// chunks with the item's prologue values, on the board `board`
    /// (`board_bytes`), and a donation launch enqueued behind the main one
    /// spreads them over a full wave of warps (`wf_donated`,
    /// cte_for_each.cuh), adds the chunks it ran to the third counter at
    /// `counters` and zeroes the first two for the next launch. An item
    /// whose chunks do not fit stays with its warp. Other launches are left
    /// as they are.
    ///
    /// # Safety
    /// `board` holds `board_bytes` and `counters` three zeroed `u64` on this
    /// launch's device, both living as long as the launch, and no launch
    /// using the same board runs concurrently with this one (launches on
    /// one stream run in order).
    pub(crate) unsafe fn donate(
        &mut self,
        min_len: u32,
        board: u64,
        board_bytes: u64,
        counters: u64,
    ) -> Result<()> {
        let frontier_cte = self.launches.len() == 1
            && self.launches[0].entry
                == abi::entry_point(crate::Decomposition::Cte, abi::TaskSource::Frontier)?;
        if !self.spec.donates || !frontier_cte || min_len == 0 {
            return Ok(());
        }
        let module = self.dev.module(&self.spec)?;
        let function = module.function(abi::DONATED_ENTRY)?.clone();
        let args = LaunchArgs {
            donated: board,
            donation: counters,
            donated_bytes: board_bytes,
            donate_min: min_len,
            ..self.launches[0].args
        };
        self.launches[0].args = args;
        let wave = (self.dev.resident_warps() / u64::from(BLOCK / 32)).max(1);
        self.launches.push(Launch {
            entry: abi::DONATED_ENTRY,
            function,
            blocks: u32::try_from(wave).unwrap_or(u32::MAX),
            dependent: false,
            args,
        });
        Ok(())
    }

    /// A launch over `list`, a task list whose positions index arrays the
    /// caller laid out itself (the throttled handle's part-major copies):
    /// its segments are not checked against each task's own range
    /// (`LIST_TRUSTED`), the fine arrays' bounds still are at every load.
    /// With CTE, warps are packed by `how.budget`; with `how.queue_chunk`,
    /// a persistent grid's warps dequeue the groups from a device queue in
    /// list order (CTE only). Split tasks are merged after, in list order.
    ///
    /// # Errors
    /// A queue with another decomposition than CTE; as [`Prepared::new`].
    pub(crate) fn over_plan_list(
        dev: &CudaDevice,
        spec: &KernelSpec,
        config: &LaunchConfig,
        list: TaskList,
        how: PlanList,
        args: &[Arg<'_>],
    ) -> Result<Self> {
        let config = &spec.launch_config(config);
        let decomposition = config.decomposition;
        let cte = decomposition == crate::config::Decomposition::Cte;
        if how.queue_chunk.is_some() && !cte {
            abi::entry_point(decomposition, abi::TaskSource::Queue)?;
        }
        plan::check_u32_items(list.len())?;
        let module = dev.module(spec)?;
        let args = ResidentArgs::new(dev, spec, args)?;
        let params = args.pack(dev)?;
        let fault = DeviceBuffer::<u64>::zeros(dev, FaultRecord::WORDS)?;
        let tasks = DeviceTaskList::upload_as(
            dev,
            list,
            spec.acc.size(),
            cte.then_some(how.budget.max(1)),
            true,
        )?;
        let plan = plan::plan_launches(decomposition, tasks.items(), dev.arch())?;
        let queue = match how.queue_chunk {
            Some(_) => Some(DeviceBuffer::<u32>::zeros(dev, 1)?),
            None => None,
        };
        let base = LaunchArgs {
            n_items: 0,
            fault: fault.device_ptr(dev),
            cte_serial_max: config.cte_serial_max,
            flags: abi::LIST_TRUSTED,
            ..Default::default()
        };
        let base = tasks.launch_args(dev, plan.packed_warps, base);
        let launches = plan_steps(
            dev,
            &module,
            &plan,
            decomposition,
            queue.as_ref().zip(how.queue_chunk),
            base,
        )?;
        Ok(Prepared {
            dev: dev.clone(),
            spec: *spec,
            args,
            params,
            tasks: Some(tasks),
            launches,
            chosen_split: None,
            cte_serial_max: config.cte_serial_max,
            fault,
            queue,
            _frontier: None,
        })
    }

    /// A launch over the segments of `list`, run as one kernel launch per
    /// range of `ranges` in that order, then one merge of the split tasks
    /// after the last: the form of the cache-fit schedules, where a range
    /// is a partition (or a node of the SJ-tree) and consecutive launches
    /// keep one partition's data in the cache at a time. Split tasks'
    /// partials are merged in list order, as for a single launch, so the
    /// result does not depend on how the list is cut into ranges.
    ///
    /// # Errors
    /// Ranges that are not consecutive, non-empty and covering the list
    /// exactly; as [`Prepared::new`].
    pub fn in_ranges(
        dev: &CudaDevice,
        spec: &KernelSpec,
        config: &LaunchConfig,
        list: &TaskList,
        ranges: &[std::ops::Range<usize>],
        args: &[Arg<'_>],
    ) -> Result<Self> {
        let mut end = 0;
        for r in ranges {
            if r.start != end || r.is_empty() {
                return Err(Error::invalid(format!(
                    "launch ranges must be consecutive and non-empty from segment 0: found {}..{} after {end}",
                    r.start, r.end
                )));
            }
            end = r.end;
        }
        if end != list.len() {
            return Err(Error::length("launch ranges' segments", list.len(), end));
        }
        let mut p = Self::new_borrowing(dev, spec, config, Tasks::List(list), args)?;
        let Some(tasks) = &p.tasks else {
            return Ok(p);
        };
        // The list kernel is the first launch; the merge, if any, follows.
        let mut launches = Vec::with_capacity(ranges.len() + 1);
        let mut rest = std::mem::take(&mut p.launches).into_iter();
        if let Some(first) = rest.next() {
            let config = &spec.launch_config(config);
            for r in ranges {
                let step = plan::plan_launches(
                    config.decomposition,
                    Items::List {
                        segments: r.len() as u64,
                        packed_warps: None,
                        split_tasks: 0,
                        wide_merge: false,
                    },
                    dev.arch(),
                )?;
                for s in step.steps {
                    launches.push(Launch {
                        entry: first.entry,
                        function: first.function.clone(),
                        blocks: s.blocks,
                        dependent: false,
                        args: tasks.range_args(r.clone(), spec.acc.size(), first.args),
                    });
                }
            }
        }
        launches.extend(rest);
        p.launches = launches;
        Ok(p)
    }

    /// Makes every kernel of the launch one of a carried sequence
    /// (`carried.rs`): `mode` says which, `carry` is the device address of
    /// one accumulator per task.
    pub(crate) fn carry(&mut self, carry: u64, mode: abi::CarryMode) {
        for l in &mut self.launches {
            l.args.carry = carry;
            l.args.carry_mode = mode as u32;
        }
    }

    /// Enqueues the launch (main kernel, then the merge of split tasks).
    /// Asynchronous: call [`Prepared::check_fault`] or [`Prepared::finish`].
    pub fn run(&self) -> Result<()> {
        if let Some(q) = &self.queue {
            q.zero_async(&self.dev)?;
        }
        for l in &self.launches {
            if l.dependent {
                enqueue_dependent(&self.dev, &self.spec, l, &self.params)?;
            } else {
                enqueue(
                    &self.dev,
                    &self.spec,
                    l.entry,
                    &l.function,
                    l.blocks,
                    &self.params,
                    &l.args,
                )?;
            }
        }
        Ok(())
    }

    /// Waits for the launch and turns a recorded fault into the error the
    /// CPU twin returns for it.
    pub fn check_fault(&self) -> Result<()> {
        let segments = self.tasks.as_ref().map_or(&[][..], |l| l.list().segments());
        check_fault(&self.dev, &self.spec, &self.fault, &self.args, segments)
    }

    /// [`Prepared::check_fault`], and on a fault clears the record, so that
    /// the next check reports only faults of later runs.
    pub(crate) fn check_and_clear_fault(&self) -> Result<()> {
        let r = self.check_fault();
        if r.is_err() {
            self.fault.zero_async(&self.dev)?;
        }
        r
    }

    /// The device address of the launch's fault record, whose first `u32`
    /// is non-zero once a kernel recorded a fault (the round backend's
    /// finishing kernel reads it).
    pub(crate) fn fault_claimed_ptr(&self) -> u64 {
        self.fault.device_ptr(&self.dev)
    }

    /// The CUDA device the launch runs on.
    pub(crate) fn device_ordinal(&self) -> usize {
        self.dev.ordinal()
    }

    /// The kernel's name.
    pub(crate) fn kernel_name(&self) -> &'static str {
        self.spec.name
    }

    /// What checking this launch's faults later needs, without its buffers
    /// (after [`Prepared::run`], for a launch that does not wait).
    pub(crate) fn into_pending(self) -> PendingFault {
        let lens = (0..self.spec.params.len())
            .map(|i| self.args.array_len(i))
            .collect();
        PendingFault {
            spec: self.spec,
            fault: self.fault,
            lens,
            segments: self
                .tasks
                .map(|l| l.into_list().segments().to_vec())
                .unwrap_or_default(),
        }
    }

    /// Waits, checks the fault record and downloads the outputs into
    /// `args`, which must match the kernel's parameters as the prepared
    /// arguments did.
    pub fn finish(&self, args: &mut [Arg<'_>]) -> Result<()> {
        self.check_fault()?;
        self.args.copy_back(&self.dev, &self.spec, args)
    }

    /// What [`Split::Auto`] chose for this launch (`None` when the launch
    /// was configured otherwise).
    pub fn chosen_split(&self) -> Option<Split> {
        self.chosen_split
    }

    /// The launch's serial-fallback bound (`cte_serial_max`, raised by the
    /// automatic split where gathers are local).
    pub fn cte_serial_max(&self) -> u32 {
        self.cte_serial_max
    }

    /// The kernels a run enqueues, in order (entry-point names: the
    /// decomposition's over its task source, then any merge).
    pub fn entry_points(&self) -> Vec<&'static str> {
        self.launches.iter().map(|l| l.entry).collect()
    }

    /// The task list the launch runs, when it runs one (given, or built by
    /// an automatic split).
    pub fn task_list(&self) -> Option<&TaskList> {
        self.tasks.as_ref().map(DeviceTaskList::list)
    }
}

/// The fault record of a launch that returned before its kernels ran,
/// with what turning it into the twin's error needs.
pub(crate) struct PendingFault {
    spec: KernelSpec,
    fault: DeviceBuffer<u64>,
    lens: Vec<Option<u64>>,
    segments: Vec<warpfit_runtime::Segment>,
}

impl PendingFault {
    /// The launch's fault as the CPU twin's error (reading the record
    /// waits for the device).
    pub(crate) fn check(&self, dev: &CudaDevice) -> Result<()> {
        let lens = |i: usize| self.lens.get(i).copied().flatten();
        read_fault(dev, &self.spec, &self.fault, lens, &self.segments)
    }
}

/// What the size kernel measured: the statistics, and each task's range
/// on the device (read back only when tasks are cut).
struct TaskSizes {
    stats: TaskStats,
    ranges: DeviceBuffer<u32>,
}

impl TaskSizes {
    /// Runs the size kernel over tasks `0..n` and reads its statistics
    /// (32 bytes: most launches need no split and never read the ranges).
    fn measure(
        dev: &CudaDevice,
        spec: &KernelSpec,
        module: &Module,
        params: &ParamBlock,
        fault: &DeviceBuffer<u64>,
        args: &ResidentArgs,
        n: usize,
    ) -> Result<Self> {
        let ranges = DeviceBuffer::<u32>::zeros(dev, 2 * n)?;
        let stats = DeviceBuffer::<u64>::zeros(dev, TaskStats::WORDS)?;
        let a = LaunchArgs {
            n_items: n as u64,
            sizes: ranges.device_ptr(dev),
            scratch: stats.device_ptr(dev),
            fault: fault.device_ptr(dev),
            ..Default::default()
        };
        let next = plan::likely_after_sizes(n as u64, dev.resident_warps());
        let function = module.function_then(SIZES_ENTRY, next)?;
        enqueue(
            dev,
            spec,
            SIZES_ENTRY,
            function,
            plan::grid(n as u64, 1)?,
            params,
            &a,
        )?;
        check_fault(dev, spec, fault, args, &[])?;
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
    fn ranges(&self, dev: &CudaDevice, spec: &KernelSpec) -> Result<Vec<u32>> {
        let lr = self.ranges.to_vec(dev)?;
        // The size kernel saturates indices to u32::MAX.
        if lr.contains(&u32::MAX) {
            return Err(Error::invalid(format!(
                "kernel `{}`: fine-task indices reach u32::MAX, too large to split into segments",
                spec.name
            )));
        }
        Ok(lr)
    }
}

fn read_back_error(spec: &KernelSpec, what: &str) -> Error {
    Error::Cuda {
        context: format!("kernel `{}`", spec.name),
        message: format!("the {what} read back have the wrong size"),
    }
}

/// Waits for the stream and turns the fault record into the CPU twin's error.
fn check_fault(
    dev: &CudaDevice,
    spec: &KernelSpec,
    fault: &DeviceBuffer<u64>,
    args: &ResidentArgs,
    segments: &[warpfit_runtime::Segment],
) -> Result<()> {
    read_fault(dev, spec, fault, |i| args.array_len(i), segments)
}

/// Reads `fault` (waiting for the stream) and turns a recorded fault into
/// the CPU twin's error; `array_len` and `segments` as for [`fault_error`].
fn read_fault(
    dev: &CudaDevice,
    spec: &KernelSpec,
    fault: &DeviceBuffer<u64>,
    array_len: impl Fn(usize) -> Option<u64>,
    segments: &[warpfit_runtime::Segment],
) -> Result<()> {
    let words: [u64; FaultRecord::WORDS] = fault
        .to_vec(dev)?
        .try_into()
        .map_err(|_| read_back_error(spec, "fault record"))?;
    let rec = FaultRecord::from_words(&words);
    match fault_error(spec, &rec, array_len, segments) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Enqueues entry point `entry` of `spec` on the device's stream. Every
/// entry point takes (`Params`, `LaunchArgs`) by value.
fn enqueue(
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
fn enqueue_dependent(
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

/// With `WARPFIT_TRACE_SPLIT=1`, one line on stderr per launch prepared
/// with the automatic split: the kernel, its tasks and the wall time of
/// each step (measuring the tasks, reading their ranges, cutting them,
/// uploading the list): host work that grows with the tasks, repeated for
/// every launch of a schedule.
struct TraceSplit {
    kernel: &'static str,
    tasks: usize,
    start: Option<std::time::Instant>,
    marks: Vec<(&'static str, std::time::Duration)>,
}

impl TraceSplit {
    fn start(kernel: &'static str, tasks: usize) -> Self {
        let on = std::env::var_os("WARPFIT_TRACE_SPLIT").is_some_and(|v| v == "1");
        TraceSplit {
            kernel,
            tasks,
            start: on.then(std::time::Instant::now),
            marks: Vec::new(),
        }
    }

    fn mark(&mut self, step: &'static str) {
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

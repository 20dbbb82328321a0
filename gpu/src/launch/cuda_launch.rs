//! The launch itself. [`CudaLaunch::new`] makes everything a launch needs
//! resident on the device — module, arguments (`resident_args`), task list
//! (`device_tasks`), fault record — runs the size kernel when the split
//! depends on the tasks' sizes, and resolves the kernels launch planning
//! chose (`split_policy`, `launch_steps`); [`CudaLaunch::run`] enqueues them
//! (`enqueue`), and [`CudaLaunch::check_fault`] reads the fault record back
//! as the error the CPU twin returns (`fault`).

use crate::abi::{self, FaultRecord, LaunchArgs, BLOCK};
use crate::config::{LaunchConfig, Split};
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::launch::arg::Arg;
use crate::launch::columns;
use crate::launch::device_tasks::{DeviceTaskList, FaultSegments, TaskListWords};
use crate::launch::enqueue::{
    check_fault, enqueue, enqueue_dependent, plan_steps, Launch, TaskSizes, TraceSplit,
};
use crate::launch::launch_steps::{self, Items};
use crate::launch::pending_faults::PendingFault;
use crate::launch::resident_args::{ParamBlock, ResidentArgs};
use crate::launch::split_policy::{self, SplitDecision};
use crate::launch::validation;
use crate::launch::worklist_arg::frontier_is_target;
use crate::spec::KernelSpec;
use std::sync::Arc;
use warpfit_runtime::exec::DeviceFrontier;
use warpfit_runtime::worklist::Worklist;
use warpfit_runtime::{Error, Result, TaskList, Tasks};

mod launch_ranges;
mod rebinding;

/// How a task list the throttled handle built over its own layouts runs
/// ([`CudaLaunch::over_plan_list`]).
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
pub struct CudaLaunch {
    dev: CudaDevice,
    spec: KernelSpec,
    args: ResidentArgs,
    params: ParamBlock,
    /// The task list the kernels run; `None` over all tasks. Shared with
    /// the launches rebound from this one (`rebinding`).
    tasks: Option<Arc<DeviceTaskList>>,
    launches: Vec<Launch>,
    chosen_split: Option<Split>,
    cte_serial_max: u32,
    /// The longest task, where the size kernel measured the tasks.
    longest_task: Option<u64>,
    fault: DeviceBuffer<u64>,
    /// The queue head of a queued list, zeroed before each run.
    queue: Option<DeviceBuffer<u32>>,
    /// A validated 2-D launch's gate: the validation's fault record,
    /// zeroed before each run (`launch/validation.rs`).
    gate: Option<DeviceBuffer<u64>>,
    /// A host worklist's items and count, uploaded for a launch over it
    /// (held for the kernels, which read them by address).
    _frontier: Option<(DeviceBuffer<u32>, DeviceBuffer<u64>)>,
}

impl CudaLaunch {
    /// Compiles (or fetches) the module, makes the arguments resident and,
    /// for a CTE launch over all tasks whose split depends on the tasks'
    /// sizes, runs the size kernel and builds the task list that bounds
    /// each warp's work.
    ///
    /// A `CudaLaunch` owns copies of its arguments, so it takes host arrays
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
                "kernel `{}`: argument {i} (`{name}`) is a DeviceVec, which `CudaLaunch::new` cannot borrow: use the kernel's generated `prepare`",
                spec.name
            )));
        }
        Self::new_borrowing(dev, spec, config, tasks, args)
    }

    /// [`CudaLaunch::new`], with device-resident arrays taken by address: the
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
        let columns = columns::column_count(spec, args).unwrap_or(1);
        let mut trace = TraceSplit::start(spec.name, &tasks);
        let module = dev.module(spec)?;
        trace.mark("module");
        let args = ResidentArgs::new(dev, spec, args)?;
        let params = args.pack(dev)?;
        trace.mark("arguments");
        let fault = DeviceBuffer::<u64>::zeros(dev, FaultRecord::WORDS)?;
        trace.mark("fault word");
        let unsplit = SplitDecision::whole(config.cte_serial_max);
        let mut decomposition = config.decomposition;
        // A worklist's items as the tasks: its items and count on the device.
        let mut frontier = None;
        let mut frontier_buffers = None;
        let mut longest_task = None;
        // A 2-D launch's rows cut because some are hubs: a launch of a thread
        // per resident slot or more cuts only those (`columns::piece_len`).
        let mut hubs_cut = false;
        let (items, task_list, decision) = match tasks {
            Tasks::DeviceFrontier(f) => {
                check_device_frontier(dev, spec, &args, &f)?;
                frontier = Some((f.items, f.count));
                (Items::Frontier(f.capacity), None, unsplit)
            }
            Tasks::Frontier(list) => {
                let (items, count, len) = upload_frontier(dev, list)?;
                frontier = Some((items.device_ptr(dev), count.device_ptr(dev)));
                frontier_buffers = Some((items, count));
                (Items::Frontier(len), None, unsplit)
            }
            Tasks::List(list) => {
                split_policy::check_u32_items(list.len())?;
                let l = DeviceTaskList::upload(dev, list.clone(), spec.acc.size(), None)?;
                (l.items(), Some(l), unsplit)
            }
            Tasks::All(n)
                if split_policy::needs_task_sizes(config.decomposition, config.split, n) =>
            {
                split_policy::check_split(config.split)?;
                split_policy::check_u32_items(n)?;
                let sizes = TaskSizes::measure(dev, spec, &module, &params, &fault, &args, n, 1)?;
                longest_task = Some(sizes.stats.longest);
                let decision = split_policy::choose_split(
                    config.split,
                    &sizes.stats,
                    dev.resident_warps(),
                    config.cte_serial_max,
                )?;
                trace.mark("measured");
                match decision.cut {
                    Some(cut) => {
                        decomposition = split_policy::list_decomposition(
                            decomposition,
                            cut,
                            decision.cte_serial_max,
                        );
                        let mut l = sizes.cut(dev, spec, n, cut, &mut trace)?;
                        if decision.small {
                            l.merge_wide();
                        }
                        (l.items(), Some(l), decision)
                    }
                    None => (Items::All(n as u64), None, decision),
                }
            }
            Tasks::All(n) => {
                let (f, p) = (&fault, &params);
                match columns::cut_rows(dev, spec, &module, p, f, &args, config, n, columns)? {
                    Some(c) => {
                        longest_task = Some(c.longest);
                        let slots = dev.resident_warps().saturating_mul(32);
                        hubs_cut = columns::cuts_hubs_only(n as u64, slots);
                        let chosen =
                            (config.split == Split::Auto).then_some(Split::Max(c.piece_len));
                        (
                            c.list.items(),
                            Some(c.list),
                            SplitDecision { chosen, ..unsplit },
                        )
                    }
                    None => (Items::All(n as u64), None, unsplit),
                }
            }
            #[allow(unreachable_patterns)]
            _ => {
                return Err(Error::invalid(
                    "this task source is not supported by the CUDA backend",
                ))
            }
        };
        let plan = launch_steps::plan_launches(decomposition, items, dev.arch())?;
        let (plan, gate) =
            validation::gated_plan(dev, spec, decomposition, columns, hubs_cut, plan)?;
        // A `Split::Queued` launch's packed warps dequeue their groups
        // (`split_policy::PACKED_QUEUE_WORK` fine tasks at a time); the head is
        // zeroed before each run.
        let queue_chunk = decision
            .cut
            .and_then(|c| c.queue_chunk)
            .filter(|_| plan.packed_warps);
        let queue = match queue_chunk {
            Some(_) => Some(DeviceBuffer::<u32>::zeros(dev, 1)?),
            None => None,
        };
        let base = base_args(
            dev,
            &fault,
            decision.cte_serial_max,
            (task_list.as_ref(), plan.packed_warps),
            frontier,
        );
        let launches = plan_steps(
            dev,
            &module,
            &plan,
            decomposition,
            queue.as_ref().zip(queue_chunk),
            gate.as_ref(),
            base,
        )?;
        Ok(CudaLaunch {
            dev: dev.clone(),
            spec: *spec,
            args,
            params,
            tasks: task_list.map(Arc::new),
            launches,
            chosen_split: decision.chosen,
            cte_serial_max: decision.cte_serial_max,
            longest_task,
            fault,
            queue,
            gate,
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
                == abi::entry_point(crate::config::Decomposition::Cte, abi::TaskSource::Frontier)?;
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
    /// A queue with another decomposition than CTE; as [`CudaLaunch::new`].
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
        split_policy::check_u32_items(list.len())?;
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
        let plan = launch_steps::plan_launches(decomposition, tasks.items(), dev.arch())?;
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
            None,
            base,
        )?;
        Ok(CudaLaunch {
            dev: dev.clone(),
            spec: *spec,
            args,
            params,
            tasks: Some(Arc::new(tasks)),
            launches,
            chosen_split: None,
            longest_task: None,
            cte_serial_max: config.cte_serial_max,
            fault,
            queue,
            gate: None,
            _frontier: None,
        })
    }
}

impl CudaLaunch {
    /// Makes every kernel of the launch one of a carried sequence
    /// (`engines/carried_launch.rs`): `mode` says which, `carry` is the device address of
    /// one accumulator per task.
    pub(crate) fn carry(&mut self, carry: u64, mode: abi::CarryMode) {
        for l in &mut self.launches {
            l.args.carry = carry;
            l.args.carry_mode = mode as u32;
        }
    }

    /// Enqueues the launch (main kernel, then the merge of split tasks).
    /// Asynchronous: call [`CudaLaunch::check_fault`] or [`CudaLaunch::finish`].
    pub fn run(&self) -> Result<()> {
        if let Some(q) = &self.queue {
            q.zero_async(&self.dev)?;
        }
        if let Some(g) = &self.gate {
            g.zero_async(&self.dev)?;
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
        let segment = |i| self.tasks.as_ref().and_then(|l| l.segment(&self.dev, i));
        check_fault(&self.dev, &self.spec, &self.fault, &self.args, segment)
    }

    /// [`CudaLaunch::check_fault`], and on a fault clears the record, so that
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
    /// (after [`CudaLaunch::run`], for a launch that does not wait).
    pub(crate) fn into_pending(self) -> PendingFault {
        let lens = (0..self.spec.params.len())
            .map(|i| self.args.array_len(i))
            .collect();
        PendingFault::new(
            self.spec,
            self.fault,
            lens,
            self.tasks.map_or(FaultSegments::None, |t| {
                Arc::try_unwrap(t).map_or_else(FaultSegments::Shared, |t| t.into_fault_segments())
            }),
        )
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

    /// The longest task's fine tasks, where the launch measured its tasks
    /// (a CTE launch over all tasks with a size-dependent split).
    pub fn longest_task(&self) -> Option<u64> {
        self.longest_task
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
    /// an automatic split; a list cut on the device is read back).
    pub fn task_list(&self) -> Result<Option<TaskList>> {
        self.tasks
            .as_ref()
            .map(|l| l.to_list(&self.dev))
            .transpose()
    }

    /// The device arrays of the launch's task list, as its kernels read
    /// them, when it runs one.
    pub fn task_list_words(&self) -> Result<Option<TaskListWords>> {
        self.tasks.as_ref().map(|l| l.words(&self.dev)).transpose()
    }
}

/// The arguments every kernel of a launch over all tasks, a task list or a
/// worklist shares: its fault record and serial bound, the list's arrays
/// (its packed warp groups where CTE reads them), the worklist's items and
/// count.
fn base_args(
    dev: &CudaDevice,
    fault: &DeviceBuffer<u64>,
    cte_serial_max: u32,
    (task_list, packed_warps): (Option<&DeviceTaskList>, bool),
    frontier: Option<(u64, u64)>,
) -> LaunchArgs {
    let base = LaunchArgs {
        n_items: 0,
        fault: fault.device_ptr(dev),
        cte_serial_max,
        ..Default::default()
    };
    let base = match task_list {
        Some(l) => l.launch_args(dev, packed_warps, base),
        None => base,
    };
    match frontier {
        Some((items, count)) => LaunchArgs {
            frontier: items,
            frontier_count: count,
            ..base
        },
        None => base,
    }
}

/// Refuses a device worklist as a launch's tasks where it lives on another
/// device, or where the launch pushes to the same list.
fn check_device_frontier(
    dev: &CudaDevice,
    spec: &KernelSpec,
    args: &ResidentArgs,
    f: &DeviceFrontier<'_>,
) -> Result<()> {
    if f.device != dev.ordinal() {
        return Err(Error::invalid(format!(
            "kernel `{}`: its tasks are a worklist of CUDA device {}, but the launch runs on CUDA device {} ({})",
            spec.name,
            f.device,
            dev.ordinal(),
            dev.name()
        )));
    }
    match args.lists().find(|(_, r)| r.items == f.items) {
        Some((i, _)) => Err(frontier_is_target(spec, i)),
        None => Ok(()),
    }
}

/// A CPU worklist's items uploaded for one launch: the items, their count
/// on the device, and the count.
fn upload_frontier(
    dev: &CudaDevice,
    list: &Worklist,
) -> Result<(DeviceBuffer<u32>, DeviceBuffer<u64>, u64)> {
    let items: Vec<u32> = (0..list.len()).filter_map(|i| list.get(i)).collect();
    let len = items.len() as u64;
    Ok((
        DeviceBuffer::upload(dev, &items)?,
        DeviceBuffer::upload(dev, &[len])?,
        len,
    ))
}

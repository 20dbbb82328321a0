//! The throttled handle, [`Throttled`]: made over a kernel's shape arrays,
//! planned on the host, launched over the schedule its policy builds.

use super::device_layouts::{Builder, DeviceLayout, Space};
use super::erased_vec::ErasedVec;
use super::plan_thread::{plan_on_host, HostPlan, PlanDetail, Shape};
use super::roles::ThrottleRoles;
use crate::config::LaunchConfig;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::device::Device;
use crate::driver::event_timer::EventTimer;
use crate::engines::carried_launch::{CarriedPart, CarriedRun};
use crate::engines::gather_layouts::{DeviceGather, LayoutKernels};
use crate::launch::arg::Arg;
use crate::launch::cpu_args::CpuArgs;
use crate::launch::device_vec::{Place, ResidentArray};
use crate::launch::prepared::{PlanList, Prepared};
use crate::spec::{IndexEncoding, KernelSpec, ParamKind, ScalarType, ScalarValue};
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};
use warpfit_runtime::partition::WorkGraph;
use warpfit_runtime::schedule::{
    profiling_passes, recombine, CacheFitPlan, RemapOrder, ThrottleOptions, ThrottlePolicy,
};
use warpfit_runtime::{Error, Result, Tasks};

/// What building and choosing a throttled schedule found.
#[derive(Debug, Clone, PartialEq)]
pub struct ThrottleReport {
    /// The policy asked for.
    pub asked: ThrottlePolicy,
    /// The schedule the launches run (`auto` resolved on the first launch
    /// after the plan).
    pub chosen: ThrottlePolicy,
    /// Cache-fit partitions of the plan (0 when none was planned).
    pub partitions: usize,
    /// Host time spent partitioning and ordering the plan.
    pub planning: Duration,
    /// Measurements on the first launch after the plan: median device
    /// milliseconds per run of each schedule timed (`auto` times every
    /// candidate; `sj` and `sjq` their chosen cover), permutations of a
    /// remapped schedule included.
    pub profile: Vec<(ThrottlePolicy, f64)>,
    /// Candidates `auto` did not time, and why.
    pub skipped: Vec<(ThrottlePolicy, String)>,
    /// The partitions each launch of the chosen `sj`/`sjq` cover runs.
    pub sj_launches: Vec<Range<usize>>,
    /// Wall time the first launch after the plan spent building layouts
    /// and profiling (SJ passes, `auto`'s candidates).
    pub profiling: Duration,
    /// Of that, per schedule built: the wall time of its layouts, task
    /// lists and launches, its SJ passes (built and timed) included, and of
    /// its timing runs (`auto` builds every candidate).
    pub profiling_by_policy: Vec<(ThrottlePolicy, Duration)>,
    /// Whether the chosen schedule runs in the remapped numbering.
    pub remapped: bool,
    /// The order of that numbering (`None`: not remapped).
    pub remap_order: Option<RemapOrder>,
    /// `org_r`'s median milliseconds per run in each order timed: two
    /// entries where `auto` compared them
    /// ([`ThrottleOptions::remap_orders_to_time`]); `profile` holds the
    /// faster.
    pub remap_profile: Vec<(RemapOrder, f64)>,
    /// The warp budgets `auto` timed for a single-launch schedule (`org`,
    /// `org_r`) whose automatic split packed warps by work, each with its
    /// median milliseconds per run: the automatic split's own first, then
    /// wider ones; the schedule keeps the fastest, whose time `profile`
    /// holds. Empty where no launch was packed that way.
    pub budget_profile: Vec<(ThrottlePolicy, u32, f64)>,
    /// The warp budget the chosen schedule runs under where `auto` kept a
    /// wider one than its automatic split's (`None`: the automatic split).
    pub warp_budget: Option<u32>,
    /// The CTE serial-fallback bounds `auto` timed for a single-launch
    /// schedule whose automatic split packed warps by work and raised the
    /// bound for local gathers, each with its median milliseconds per run
    /// at the fastest budget: the raised bound, then the configured one
    /// (`LaunchConfig::cte_serial_max`). Empty where none was raised.
    pub serial_profile: Vec<(ThrottlePolicy, u32, f64)>,
    /// The serial-fallback bound the chosen schedule runs under where
    /// `auto` timed more than one (`None`: not timed).
    pub serial_bound: Option<u32>,
    /// The same single-launch schedules at their fastest budget and serial
    /// bound, timed again with their packed warps taken from a device queue
    /// ([`Split::Queued`](crate::Split::Queued)): the policy, its median
    /// milliseconds per run without and with the queue. Empty where no
    /// launch was packed by work.
    pub queue_profile: Vec<(ThrottlePolicy, f64, f64)>,
    /// Whether the chosen schedule's packed warps take their groups from a
    /// device queue (`auto` found it faster).
    pub queued: bool,
    /// Whether the chosen schedule's layout holds the gather's index array
    /// as 16-bit offsets from the task
    /// ([`ThrottleOptions::narrow_index`]; `org` reads the arrays as given).
    pub narrow_index: bool,
    /// Launches run with `org` while a pipelined plan was being made.
    pub launches_before_plan: usize,
}

/// A kernel's launches over a cache-fit plan (see the module docs); made
/// by a `#[throttled]` kernel's generated `throttle`, which wraps it in a
/// typed handle.
pub struct Throttled {
    /// The prepared schedule: declared first, so dropped before the
    /// arrays whose device addresses it holds.
    schedule: Option<Schedule>,
    /// The schedule prepared over other arrays before, and their key.
    spare: Option<(Vec<u64>, Schedule)>,
    device: Device,
    spec: &'static KernelSpec,
    config: LaunchConfig,
    roles: ThrottleRoles,
    options: ThrottleOptions,
    n_tasks: usize,
    /// The gathered array's length the plan was made for.
    gathered_len: usize,
    /// One per parameter.
    slots: Vec<Slot>,
    /// Per-launch arrays in the remapped numbering, by parameter.
    staged_r: Vec<(usize, ErasedVec)>,
    /// Whether the prepared schedule takes its per-launch arrays in the
    /// plan's numbering ([`Throttled::launch_in_plan_order`]).
    plan_order: bool,
    /// What `schedule` was prepared over ([`Throttled::binding_key`]).
    key: Vec<u64>,
    layouts: Layouts,
    /// Launch options `auto` kept for a single-launch schedule under a
    /// wider warp budget: that schedule prepared again (over other arrays,
    /// or in plan order) runs under them too.
    kept_configs: Vec<(ThrottlePolicy, LaunchConfig)>,
    /// The plan, once made.
    plan: Option<HostPlan>,
    /// A plan being made on a CPU thread (pipelined planning).
    pending: Option<PendingPlan>,
    report: ThrottleReport,
    cpu_run: CpuRunFn,
}

/// The CPU twin over a launch's arguments (generated).
pub type CpuRunFn = fn(&CpuArgs<'_>, usize) -> Result<()>;

enum Slot {
    /// A range or fine array as given (absent once no schedule reads it).
    Shape(Option<ErasedVec>),
    /// A per-launch array: the caller's own `DeviceVec` of the handle's
    /// device (bound: used in place), else a buffer of the handle's that
    /// each launch copies in (and out, for an output).
    Staged(Staging),
    Scalar(Option<ScalarValue>),
}

enum Staging {
    Empty,
    Own(ErasedVec),
    Bound(Bound),
}

/// The caller's array a launch used in place: its address on the device
/// (CUDA) or in host memory (the CPU backend), checked again at every
/// launch, which re-prepares when it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bound {
    addr: u64,
    cuda: bool,
    len: usize,
}

/// The handle's layouts of the shape arrays beyond the originals, each
/// shared with the schedules that read it.
#[derive(Default)]
struct Layouts {
    /// The plan's order in the original numbering.
    sorted: Option<Arc<DeviceLayout>>,
    /// The plan's order in the remapped numbering.
    remapped: Option<Arc<DeviceLayout>>,
    /// Every partition alone (part-major), by numbering.
    leaves: Option<Arc<DeviceLayout>>,
    leaves_r: Option<Arc<DeviceLayout>>,
    /// The chosen SJ cover's layout (`sj`), kept for preparing again.
    sj: Option<Arc<DeviceLayout>>,
    /// The task and gathered-element permutations (`new -> old`).
    tables: Option<RemapTables>,
}

/// A remapped plan's permutations on the device, as gathers. One whose
/// source is larger than half the cache the plan fits runs staged (two
/// gathers through cache-sized blocks of the source) when that timed faster
/// on the device: a random permutation of a vector larger than L2 otherwise
/// moves a 32-byte sector per element (BENCHMARKS.md, "Permutations in two
/// passes").
struct RemapTables {
    /// `r[new] = a[task_perm[new]]`.
    task_perm: DeviceGather,
    /// `task_inv[old] = new`: outputs go back by a gather through it
    /// (random reads, writes in order) rather than a scatter through
    /// `task_perm` (random 4- or 8-byte writes, each a partial sector).
    task_inv: DeviceGather,
    /// `x_r[new] = x[gathered_perm[new]]`.
    gathered_perm: DeviceGather,
    /// The staged gathers' scratch, sized for the arrays staged.
    scratch: Option<DeviceBuffer<u8>>,
}

/// How a launch runs.
#[derive(Debug, Clone, Copy)]
struct Mode {
    /// Wait for the device and report the kernel's fault.
    wait: bool,
    /// The per-launch arrays are in the plan's numbering.
    plan_order: bool,
}

impl Default for Mode {
    fn default() -> Self {
        Mode {
            wait: true,
            plan_order: false,
        }
    }
}

/// The numbering of a remapped schedule ([`Throttled::plan_order`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanOrder<'a> {
    /// `tasks[new] = old`: task (output) `new` of the plan is the kernel's
    /// task `old`.
    pub tasks: &'a [u32],
    /// `gathered[new] = old` for the gathered array.
    pub gathered: &'a [u32],
}

/// A prepared schedule and the layouts it reads.
struct Schedule {
    policy: ThrottlePolicy,
    space: Space,
    runs: Runs,
    /// The layouts `runs` reads, kept alive for it (declared after it).
    layouts: Vec<Arc<DeviceLayout>>,
}

enum Runs {
    Single(Box<Prepared>),
    Carried(CarriedRun),
    Cpu,
}

impl Runs {
    fn run(&self) -> Result<()> {
        match self {
            Runs::Single(p) => p.run(),
            Runs::Carried(c) => c.run(),
            Runs::Cpu => Ok(()),
        }
    }

    fn check(&self) -> Result<()> {
        match self {
            Runs::Single(p) => p.check_and_clear_fault(),
            Runs::Carried(c) => c.check(),
            Runs::Cpu => Ok(()),
        }
    }
}

/// A host array the throttled handle copies (a pipelined handle keeps it
/// until its plan is made): `Vec<T>` for any scalar `T`.
pub trait HostArray: Send + 'static {
    /// The elements' bytes.
    fn bytes(&self) -> &[u8];
    /// Their type.
    fn ty(&self) -> ScalarType;
}

impl<T: crate::Scalar> HostArray for Vec<T> {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `T: Scalar` is plain-old-data; the view covers exactly
        // the vector's elements.
        unsafe {
            std::slice::from_raw_parts(self.as_ptr().cast::<u8>(), std::mem::size_of_val(&self[..]))
        }
    }
    fn ty(&self) -> ScalarType {
        T::TYPE
    }
}

/// Where a throttled handle's plan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThrottleStatus {
    /// A CPU thread is partitioning; launches run `org` meanwhile.
    Planning,
    /// The plan is in; the next launch lays it out and, for `sj`, `sjq`
    /// and `auto`, profiles.
    Profiling,
    /// Launches run this schedule.
    Running(ThrottlePolicy),
}

/// A plan being made on a CPU thread.
type PendingPlan = std::thread::JoinHandle<Result<HostPlan>>;

/// Timed runs per candidate or SJ pass (median taken).
const AUTO_SAMPLES: usize = 5;

/// Work units per packed CTE warp of a task list the handle builds (the
/// budget CTE's automatic split uses on large launches).
const LIST_BUDGET: u32 = 512;

fn check_shape<'s>(
    spec: &KernelSpec,
    roles: ThrottleRoles,
    shape: Vec<Option<(&'s [u8], ScalarType)>>,
) -> Result<Shape<'s>> {
    if shape.len() != spec.params.len() {
        return Err(Error::invalid(format!(
            "kernel `{}`: throttle got {} parameter slots for {} parameters",
            spec.name,
            shape.len(),
            spec.params.len()
        )));
    }
    for (i, (p, s)) in spec.params.iter().zip(&shape).enumerate() {
        let fits = match s {
            Some((_, ty)) => roles.shapes(i) && *ty == p.ty,
            None => !roles.shapes(i),
        };
        if !fits {
            return Err(Error::invalid(format!(
                "kernel `{}`: parameter {i} (`{}`) {}",
                spec.name,
                p.name,
                if roles.shapes(i) {
                    format!(
                        "shapes the work and must be given to throttle as a host array of {}",
                        p.ty.rust_name()
                    )
                } else {
                    "is passed to each launch, not to throttle".to_string()
                }
            )));
        }
    }
    Ok(shape)
}

/// Checks what the handle is asked to run.
fn check_policy(spec: &KernelSpec, roles: ThrottleRoles, options: &ThrottleOptions) -> Result<()> {
    options.validate()?;
    let remapped = options.remap || options.policy == ThrottlePolicy::OrgR;
    if remapped && roles.index.is_none() {
        return Err(Error::invalid(format!(
            "kernel `{}`: a remapped plan (policy {}{}) cannot run it: {}",
            spec.name,
            options.policy,
            if options.remap { ", remap" } else { "" },
            roles.remap_refused
        )));
    }
    Ok(())
}

/// The median of `v` (0 for none).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

impl Throttled {
    /// Plans `graph` (the kernel's work graph over `n_tasks` tasks) under
    /// `options` and makes the handle's copies of the arrays `shape` gives
    /// (one entry per parameter: `Some(host array)` for the range and fine
    /// arrays, `None` for the others). Generated `throttle` calls this.
    ///
    /// # Errors
    /// Invalid options, a remapped policy for a kernel that cannot be
    /// remapped, arguments that do not match the kernel, a range array that
    /// does not tile the fine arrays from 0 (a plan needs that), the
    /// partitioner's errors, and device errors.
    #[allow(clippy::too_many_arguments)]
    #[doc(hidden)]
    pub fn new(
        device: &Device,
        spec: &'static KernelSpec,
        roles: ThrottleRoles,
        options: &ThrottleOptions,
        config: &LaunchConfig,
        n_tasks: usize,
        graph: &WorkGraph,
        shape: &[Option<Arg<'_>>],
        cpu_run: CpuRunFn,
    ) -> Result<Self> {
        check_policy(spec, roles, options)?;
        let shape = shape
            .iter()
            .map(|a| match a {
                Some(Arg::Input(s)) => Ok(Some((s.bytes, s.ty))),
                None => Ok(None),
                Some(_) => Err(Error::invalid(format!(
                    "kernel `{}`: throttle takes host arrays",
                    spec.name
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        let shape = check_shape(spec, roles, shape)?;
        let plan = match device.cuda() {
            Some(dev) if options.policy != ThrottlePolicy::Org => Some(plan_on_host(
                spec,
                roles,
                options,
                dev.l2_bytes() as u64,
                graph,
                &shape,
            )?),
            _ => None,
        };
        let mut t = Self::with_slots(
            device,
            spec,
            roles,
            options,
            config,
            n_tasks,
            graph.n_gathered(),
            &shape,
            cpu_run,
        )?;
        if let Some(plan) = plan {
            t.install(plan);
        }
        Ok(t)
    }

    /// [`Throttled::new`] with the planning on a CPU thread: the handle is
    /// ready at once and runs `org` until the plan is in (its first launch
    /// after that switches; [`status`](Self::status) says where it is).
    /// Takes the kernel's shape arrays by value (`Vec<T>`), which the thread
    /// reads. Pipelined planning is Section 4 of the throttling paper.
    ///
    /// # Errors
    /// As [`Throttled::new`], except the planner's, which the first launch
    /// after the plan failed reports.
    #[allow(clippy::too_many_arguments)]
    #[doc(hidden)]
    pub fn pipelined(
        device: &Device,
        spec: &'static KernelSpec,
        roles: ThrottleRoles,
        options: &ThrottleOptions,
        config: &LaunchConfig,
        n_tasks: usize,
        graph: WorkGraph,
        shape: Vec<Option<Box<dyn HostArray>>>,
        cpu_run: CpuRunFn,
    ) -> Result<Self> {
        check_policy(spec, roles, options)?;
        let borrowed = shape
            .iter()
            .map(|a| a.as_ref().map(|a| (a.bytes(), a.ty())))
            .collect();
        let checked = check_shape(spec, roles, borrowed)?;
        let mut t = Self::with_slots(
            device,
            spec,
            roles,
            options,
            config,
            n_tasks,
            graph.n_gathered(),
            &checked,
            cpu_run,
        )?;
        drop(checked);
        if let (Some(dev), true) = (device.cuda(), options.policy != ThrottlePolicy::Org) {
            let (options, l2) = (*options, dev.l2_bytes() as u64);
            let started = std::thread::Builder::new()
                .name("warpfit-throttle-plan".into())
                .spawn(move || {
                    let shape: Shape<'_> = shape
                        .iter()
                        .map(|a| a.as_ref().map(|a| (a.bytes(), a.ty())))
                        .collect();
                    plan_on_host(spec, roles, &options, l2, &graph, &shape)
                })
                .map_err(|e| Error::Unavailable {
                    what: "a planning thread".into(),
                    reason: e.to_string(),
                })?;
            t.pending = Some(started);
        }
        Ok(t)
    }

    /// The handle with its shape arrays uploaded as given and no plan: it
    /// runs `org`.
    #[allow(clippy::too_many_arguments)]
    fn with_slots(
        device: &Device,
        spec: &'static KernelSpec,
        roles: ThrottleRoles,
        options: &ThrottleOptions,
        config: &LaunchConfig,
        n_tasks: usize,
        gathered_len: usize,
        shape: &Shape<'_>,
        cpu_run: CpuRunFn,
    ) -> Result<Self> {
        let slots = (0..spec.params.len())
            .map(|i| {
                Ok(match (spec.params[i].kind, shape[i]) {
                    (ParamKind::Scalar, _) => Slot::Scalar(None),
                    (_, Some((bytes, ty))) => {
                        Slot::Shape(Some(ErasedVec::upload(device, bytes, ty)?))
                    }
                    (_, None) => Slot::Staged(Staging::Empty),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Throttled {
            schedule: None,
            device: device.clone(),
            spec,
            config: *config,
            roles,
            options: *options,
            n_tasks,
            gathered_len,
            slots,
            staged_r: Vec::new(),
            plan_order: false,
            key: Vec::new(),
            spare: None,
            layouts: Layouts::default(),
            kept_configs: Vec::new(),
            plan: None,
            pending: None,
            report: ThrottleReport {
                asked: options.policy,
                chosen: ThrottlePolicy::Org,
                partitions: 0,
                planning: Duration::ZERO,
                profile: Vec::new(),
                skipped: Vec::new(),
                sj_launches: Vec::new(),
                profiling: Duration::ZERO,
                profiling_by_policy: Vec::new(),
                remapped: false,
                remap_order: None,
                remap_profile: Vec::new(),
                budget_profile: Vec::new(),
                warp_budget: None,
                serial_profile: Vec::new(),
                serial_bound: None,
                queue_profile: Vec::new(),
                queued: false,
                narrow_index: false,
                launches_before_plan: 0,
            },
            cpu_run,
        })
    }

    /// Takes a plan in: the next launch lays it out and runs the asked
    /// schedule (profiling first where the policy does).
    fn install(&mut self, plan: HostPlan) {
        self.report.partitions = plan.partitions;
        self.report.planning = plan.planning;
        self.report.chosen = if plan.detail.is_some() {
            self.report.asked
        } else {
            // One partition: the plan is the unthrottled launch.
            ThrottlePolicy::Org
        };
        self.plan = Some(plan);
        self.schedule = None;
        self.spare = None;
        self.kept_configs.clear();
    }

    /// What a prepared schedule depends on besides the plan: the staged
    /// arrays' addresses and lengths, the scalars, the numbering.
    fn binding_key(&self) -> Result<Vec<u64>> {
        let mut key = vec![u64::from(self.plan_order)];
        for slot in &self.slots {
            match slot {
                Slot::Scalar(v) => key.push(match v {
                    None => u64::MAX,
                    Some(ScalarValue::F32(x)) => u64::from(x.to_bits()),
                    Some(ScalarValue::F64(x)) => x.to_bits(),
                    Some(ScalarValue::I32(x)) => *x as u32 as u64,
                    Some(ScalarValue::U32(x)) => u64::from(*x),
                    Some(ScalarValue::I64(x)) => *x as u64,
                    Some(ScalarValue::U64(x)) => *x,
                    Some(ScalarValue::U8(x)) => u64::from(*x),
                    Some(ScalarValue::Bool(x)) => u64::from(*x),
                }),
                Slot::Staged(Staging::Own(b)) => {
                    let addr = match b.arg(ParamKind::Input) {
                        Arg::Resident(ResidentArray {
                            place: Place::Cuda { ptr, .. },
                            ..
                        }) => ptr,
                        Arg::Resident(ResidentArray {
                            place: Place::Host { addr },
                            ..
                        }) => addr as u64,
                        _ => 0,
                    };
                    key.extend([addr, b.len() as u64]);
                }
                Slot::Staged(Staging::Bound(b)) => key.extend([b.addr, b.len as u64]),
                Slot::Staged(Staging::Empty) | Slot::Shape(_) => key.push(0),
            }
        }
        Ok(key)
    }

    /// Keeps the prepared schedule when the staged arrays are those it was
    /// prepared over; else sets it aside and takes the one set aside if it
    /// fits (a driver alternating two sets of arrays, `x → y` then `y → x`,
    /// prepares each once), or leaves none, which the launch prepares.
    fn rebind(&mut self) -> Result<()> {
        let key = self.binding_key()?;
        if key == self.key {
            return Ok(());
        }
        let current = self.schedule.take();
        if let Some((k, s)) = self.spare.take() {
            if k == key {
                self.schedule = Some(s);
            }
        }
        if let Some(s) = current {
            self.spare = Some((std::mem::take(&mut self.key), s));
        }
        self.key = key;
        Ok(())
    }

    /// Where the plan is.
    pub fn status(&self) -> ThrottleStatus {
        match (&self.pending, &self.schedule) {
            (Some(_), _) => ThrottleStatus::Planning,
            (None, Some(s)) => ThrottleStatus::Running(s.policy),
            (None, None) if self.report.chosen == ThrottlePolicy::Org => {
                ThrottleStatus::Running(ThrottlePolicy::Org)
            }
            (None, None) => ThrottleStatus::Profiling,
        }
    }

    /// Takes a finished plan in (before a launch).
    fn take_finished_plan(&mut self) -> Result<()> {
        if self.pending.as_ref().is_some_and(PendingPlan::is_finished) {
            self.wait_for_plan()?;
        }
        Ok(())
    }

    /// Waits for a pipelined plan and takes it in, so that the next launch
    /// runs the planned schedule.
    ///
    /// # Errors
    /// The planner's errors.
    pub fn wait_for_plan(&mut self) -> Result<()> {
        if let Some(handle) = self.pending.take() {
            let plan = handle.join().map_err(|_| Error::Unavailable {
                what: format!("the plan of kernel `{}`", self.spec.name),
                reason: "the planning thread panicked".into(),
            })??;
            self.install(plan);
        }
        Ok(())
    }

    /// What planning and choosing found.
    pub fn report(&self) -> &ThrottleReport {
        &self.report
    }

    /// Runs the kernel once over `per_launch` (the parameters that do not
    /// shape the work, in parameter order): inputs and outputs are copied
    /// into the handle's device buffers (or used in place), the chosen
    /// schedule runs (a remapped one with its arrays permuted in and out on
    /// the device), outputs are copied back to host slices. Waits for the
    /// device and reports a fault.
    ///
    /// # Errors
    /// Arguments that do not match the kernel (count, kind, type, a
    /// device-resident array of another device), the kernel's faults, and
    /// device errors.
    #[doc(hidden)]
    pub fn launch(&mut self, per_launch: &mut [Arg<'_>]) -> Result<()> {
        self.launch_as(per_launch, Mode::default())
    }

    /// [`launch`](Self::launch) that does not wait: every array must be a
    /// `DeviceVec` of the handle's device (nothing to copy back), and a
    /// fault is reported by [`check`](Self::check). The launch that lays a
    /// new plan out and profiles it waits anyway. For iterative drivers that
    /// keep several iterations enqueued.
    ///
    /// # Errors
    /// A host slice among the arrays; as [`launch`](Self::launch), without
    /// the kernel's faults.
    #[doc(hidden)]
    pub fn enqueue(&mut self, per_launch: &mut [Arg<'_>]) -> Result<()> {
        self.launch_as(
            per_launch,
            Mode {
                wait: false,
                plan_order: false,
            },
        )
    }

    /// [`enqueue`](Self::enqueue) over arrays in the plan's numbering (see
    /// [`launch_in_plan_order`](Self::launch_in_plan_order)).
    ///
    /// # Errors
    /// As [`launch_in_plan_order`](Self::launch_in_plan_order), without the
    /// kernel's faults.
    #[doc(hidden)]
    pub fn enqueue_in_plan_order(&mut self, per_launch: &mut [Arg<'_>]) -> Result<()> {
        self.require_plan_order()?;
        self.launch_as(
            per_launch,
            Mode {
                wait: false,
                plan_order: true,
            },
        )
    }

    fn require_plan_order(&self) -> Result<()> {
        if self.plan_order().is_none() {
            return Err(Error::invalid(format!(
                "kernel `{}`: no plan order: {}",
                self.spec.name,
                if self.schedule.is_none() {
                    "the first launch after the plan chooses the schedule"
                } else {
                    "the chosen schedule is not remapped"
                }
            )));
        }
        Ok(())
    }

    /// [`launch`](Self::launch) over arrays already in the plan's
    /// numbering ([`plan_order`](Self::plan_order)): no permutation in or
    /// out. An iterative application converts its vectors once, launches in
    /// plan order for the whole run, and converts the result back; for a
    /// square kernel (as many tasks as gathered elements) one permutation
    /// renames both, so an output is the next launch's gathered array as it
    /// is.
    ///
    /// # Errors
    /// The chosen schedule is not remapped (or not chosen yet: the first
    /// launch after the plan chooses); as [`launch`](Self::launch).
    #[doc(hidden)]
    pub fn launch_in_plan_order(&mut self, per_launch: &mut [Arg<'_>]) -> Result<()> {
        self.require_plan_order()?;
        self.launch_as(
            per_launch,
            Mode {
                wait: true,
                plan_order: true,
            },
        )
    }

    /// The numbering the chosen schedule runs in, when it is remapped:
    /// `tasks[new] = old` and `gathered[new] = old` (one permutation for a
    /// square kernel). `None` before the choice or for a schedule in the
    /// kernel's own numbering.
    pub fn plan_order(&self) -> Option<PlanOrder<'_>> {
        let s = self.schedule.as_ref()?;
        if s.space != Space::Remapped {
            return None;
        }
        let (_, r) = self.plan.as_ref()?.detail.as_ref()?.remapping.as_ref()?;
        Some(PlanOrder {
            tasks: r.task_perm(),
            gathered: r.gathered_perm(),
        })
    }

    /// Waits for the launches enqueued so far and reports the first fault
    /// among them.
    ///
    /// # Errors
    /// The kernel's fault, device errors.
    pub fn check(&self) -> Result<()> {
        match &self.schedule {
            Some(s) => s.runs.check(),
            None => Ok(()),
        }
    }

    fn launch_as(&mut self, per_launch: &mut [Arg<'_>], mode: Mode) -> Result<()> {
        self.take_finished_plan()?;
        if self.pending.is_some() {
            self.report.launches_before_plan += 1;
        }
        if !mode.wait {
            if let Some(i) = per_launch
                .iter()
                .position(|a| matches!(a, Arg::Input(_) | Arg::Output(_)))
            {
                return Err(Error::invalid(format!(
                    "kernel `{}`: an enqueued throttled launch takes DeviceVecs only; argument {i} is a host slice",
                    self.spec.name
                )));
            }
        }
        let params = self.stage(per_launch)?;
        self.plan_order = mode.plan_order;
        self.rebind()?;
        if self.schedule.is_none() {
            self.schedule = Some(self.prepare()?);
        }
        let s = self
            .schedule
            .as_ref()
            .ok_or_else(|| Error::invalid("no schedule"))?;
        if let Runs::Cpu = s.runs {
            let args = CpuArgs::new(self.spec, self.args(None, Space::Original)?)?;
            (self.cpu_run)(&args, self.n_tasks)?;
        } else {
            self.run_once(s)?;
            if mode.wait {
                s.runs.check()?;
            }
        }
        for (arg, &i) in per_launch.iter_mut().zip(&params) {
            if let (Slot::Staged(Staging::Own(b)), ParamKind::Output) =
                (&self.slots[i], self.spec.params[i].kind)
            {
                b.copy_out(&self.device, arg)?;
            }
        }
        Ok(())
    }

    /// Enqueues one run of `s`, with the permutations in and out of a
    /// remapped one (asynchronous).
    fn run_once(&self, s: &Schedule) -> Result<()> {
        let permuted = s.space == Space::Remapped && !self.plan_order;
        if permuted {
            self.permute(true)?;
        }
        s.runs.run()?;
        if permuted {
            self.permute(false)?;
        }
        Ok(())
    }

    /// Checks `per_launch` against the kernel and stages it: scalars and
    /// arrays bound or copied into the handle's buffers (a change of
    /// length, scalar or bound array drops the prepared schedule, which the
    /// launch prepares again). Returns the per-launch parameters' indices.
    fn stage(&mut self, per_launch: &[Arg<'_>]) -> Result<Vec<usize>> {
        let name = self.spec.name;
        let params: Vec<usize> = (0..self.spec.params.len())
            .filter(|&i| !self.roles.shapes(i))
            .collect();
        if per_launch.len() != params.len() {
            return Err(Error::invalid(format!(
                "kernel `{name}`: a throttled launch takes {} arguments, got {}",
                params.len(),
                per_launch.len()
            )));
        }
        for (arg, &i) in per_launch.iter().zip(&params) {
            let p = &self.spec.params[i];
            let (kind, ty, len) = arg_signature(arg);
            if kind != p.kind || ty != p.ty {
                return Err(Error::invalid(format!(
                    "kernel `{name}`: argument `{}` must be {}, got {}",
                    p.name,
                    p.kind.rust_type(p.ty),
                    kind.rust_type(ty)
                )));
            }
            match (&mut self.slots[i], arg) {
                (Slot::Scalar(v), Arg::Scalar(s)) => *v = Some(*s),
                (Slot::Staged(staging), _) => {
                    if let Some(bound) = bindable(&self.device, arg) {
                        *staging = Staging::Bound(bound);
                        continue;
                    }
                    if !matches!(staging, Staging::Own(b) if b.len() == len) {
                        *staging = Staging::Empty;
                        *staging = Staging::Own(ErasedVec::zeros(&self.device, ty, len)?);
                    }
                    if let Staging::Own(b) = staging {
                        b.copy_in(&self.device, arg, p.name)?;
                    }
                }
                _ => {
                    return Err(Error::invalid(format!(
                        "kernel `{name}`: argument `{}` does not match its parameter",
                        p.name
                    )))
                }
            }
        }
        self.check_bound_outputs()?;
        Ok(params)
    }

    /// An output used in place must not be another argument too (the
    /// kernel would read what it writes).
    fn check_bound_outputs(&self) -> Result<()> {
        let bound: Vec<(usize, Bound)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Slot::Staged(Staging::Bound(b)) => Some((i, *b)),
                _ => None,
            })
            .collect();
        for &(i, b) in &bound {
            if self.spec.params[i].kind != ParamKind::Output || b.len == 0 {
                continue;
            }
            if let Some(&(j, _)) = bound.iter().find(|(j, c)| *j != i && c.addr == b.addr) {
                return Err(Error::invalid(format!(
                    "kernel `{}`: output `{}` is also passed as `{}`; an output must be an array of its own",
                    self.spec.name, self.spec.params[i].name, self.spec.params[j].name
                )));
            }
        }
        Ok(())
    }

    /// Enqueues the chosen schedule once more over the arrays the last
    /// [`launch`](Self::launch) staged, copying nothing (asynchronous on
    /// CUDA; faults at the next launch). For timing the schedule alone;
    /// refused when the last launch used a caller's arrays in place, which
    /// may be gone.
    ///
    /// # Errors
    /// No launch has prepared a schedule yet, or one used arrays in place;
    /// device errors.
    #[doc(hidden)]
    pub fn enqueue_again(&self) -> Result<()> {
        if self
            .slots
            .iter()
            .any(|s| matches!(s, Slot::Staged(Staging::Bound(_))))
        {
            return Err(Error::invalid(
                "enqueue_again needs a launch whose arrays the handle staged",
            ));
        }
        match &self.schedule {
            Some(Schedule {
                runs: Runs::Cpu, ..
            }) => {
                let args = CpuArgs::new(self.spec, self.args(None, Space::Original)?)?;
                (self.cpu_run)(&args, self.n_tasks)
            }
            Some(s) => self.run_once(s),
            None => Err(Error::invalid(format!(
                "kernel `{}`: the throttled handle has not launched yet",
                self.spec.name
            ))),
        }
    }

    /// The device address of per-launch array `i` as staged.
    fn staged_ptr(&self, i: usize) -> Result<(u64, usize)> {
        match &self.slots[i] {
            Slot::Staged(Staging::Own(b)) => Ok((b.device_ptr()?, b.len())),
            Slot::Staged(Staging::Bound(b)) if b.cuda => Ok((b.addr, b.len)),
            _ => Err(Error::invalid(format!(
                "kernel `{}`: parameter `{}` has no device array",
                self.spec.name, self.spec.params[i].name
            ))),
        }
    }

    /// The remapped numbering's copy of per-launch array `i`.
    fn staged_r(&self, i: usize) -> Option<&ErasedVec> {
        self.staged_r.iter().find(|(j, _)| *j == i).map(|(_, v)| v)
    }

    /// Moves the permuted per-launch arrays between the caller's numbering
    /// and the plan's (`into`: before a run, every permuted array;
    /// after: the outputs back).
    fn permute(&self, into: bool) -> Result<()> {
        let (Some(dev), Some(tables)) = (self.device.cuda(), self.layouts.tables.as_ref()) else {
            return Err(Error::invalid(
                "a remapped schedule without its permutations",
            ));
        };
        let kernels = dev.extension::<LayoutKernels>()?;
        for (i, r) in &self.staged_r {
            let (ptr, len) = self.staged_ptr(*i)?;
            let perm = if *i == self.roles.gathered {
                &tables.gathered_perm
            } else {
                &tables.task_perm
            };
            let w = r.ty().size();
            let scratch = tables.scratch.as_ref();
            if into && self.roles.overwritten.contains(i) {
                // Every task overwrites it: its old values are never seen.
                continue;
            }
            if into {
                // r[new] = a[perm[new]]
                perm.run(dev, &kernels, w, r.device_ptr()?, ptr, len as u64, scratch)?;
            } else if self.spec.params[*i].kind == ParamKind::Output {
                // a[perm[new]] = r[new], written as a[old] = r[inv[old]]
                // over the tasks (an output is only ever indexed by the
                // task, and `perm` is a bijection of them): random reads
                // and ordered writes cost a fraction of the scatter's
                // random partial-sector writes (BENCHMARKS.md, "Outputs
                // back by a gather").
                tables.task_inv.run(
                    dev,
                    &kernels,
                    w,
                    ptr,
                    r.device_ptr()?,
                    r.len() as u64,
                    scratch,
                )?;
            }
        }
        Ok(())
    }

    /// The arguments of a launch: the shape arrays of `shape` (a layout and
    /// which of its range arrays; `None`: the arrays as given), the
    /// per-launch ones as staged, in the remapped numbering for `space`
    /// `Remapped`.
    fn args<'s>(
        &'s self,
        shape: Option<(&'s DeviceLayout, usize)>,
        space: Space,
    ) -> Result<Vec<Arg<'s>>> {
        let missing = |i: usize| {
            Error::invalid(format!(
                "kernel `{}`: parameter `{}` has no array for this schedule",
                self.spec.name, self.spec.params[i].name
            ))
        };
        (0..self.spec.params.len())
            .map(|i| {
                let kind = self.spec.params[i].kind;
                if space == Space::Remapped && !self.plan_order && self.roles.permuted(i) {
                    return Ok(self.staged_r(i).ok_or_else(|| missing(i))?.arg(kind));
                }
                Ok(match (&self.slots[i], shape) {
                    (Slot::Scalar(v), _) => Arg::Scalar(v.ok_or_else(|| missing(i))?),
                    (Slot::Staged(Staging::Own(b)), _) => b.arg(kind),
                    (Slot::Staged(Staging::Bound(b)), _) => {
                        let place = match (b.cuda, self.device.cuda()) {
                            (true, Some(device)) => Place::Cuda {
                                ptr: b.addr,
                                device,
                            },
                            _ => Place::Host {
                                addr: b.addr as usize,
                            },
                        };
                        Arg::Resident(ResidentArray {
                            kind,
                            ty: self.spec.params[i].ty,
                            len: b.len,
                            place,
                        })
                    }
                    (Slot::Staged(Staging::Empty), _) => return Err(missing(i)),
                    (Slot::Shape(_), Some((l, p))) if i == self.roles.range => {
                        l.ptrs.get(p).ok_or_else(|| missing(i))?.arg(kind)
                    }
                    (Slot::Shape(_), Some((l, _))) => match &l.delta {
                        Some(d) if d.param == i => d.arg(kind),
                        _ => l.fine(i).ok_or_else(|| missing(i))?.arg(kind),
                    },
                    (Slot::Shape(b), None) => b.as_ref().ok_or_else(|| missing(i))?.arg(kind),
                })
            })
            .collect()
    }

    // ----- building schedules -----

    fn detail(&self) -> Result<&PlanDetail> {
        self.plan
            .as_ref()
            .and_then(|p| p.detail.as_ref())
            .ok_or_else(|| {
                Error::invalid(format!(
                    "kernel `{}`: no plan of several partitions",
                    self.spec.name
                ))
            })
    }

    /// The numbering `cf`, `cfq`, `sj` and `sjq` run in.
    fn plan_space(&self) -> Space {
        if self.options.remap {
            Space::Remapped
        } else {
            Space::Original
        }
    }

    /// The plan in `space`'s numbering.
    fn plan_in(&self, space: Space) -> Result<&CacheFitPlan> {
        let d = self.detail()?;
        match space {
            Space::Original => Ok(&d.plan),
            Space::Remapped => d.remapped.as_ref().ok_or_else(|| {
                Error::invalid(format!(
                    "kernel `{}`: the plan was made without remapping",
                    self.spec.name
                ))
            }),
        }
    }

    fn builder<'a>(
        &'a self,
        dev: &'a CudaDevice,
        kernels: &'a crate::engines::gather_layouts::LayoutKernels,
    ) -> Result<Builder<'a>> {
        let range_ty = self.spec.params[self.roles.range].ty;
        Ok(Builder {
            device: &self.device,
            dev,
            kernels,
            range_ty,
            n_tasks: self.n_tasks,
            kernel: self.spec.name,
        })
    }

    /// The original fine arrays on the device, by parameter.
    fn original_fine(&self) -> Result<Vec<(usize, &ErasedVec)>> {
        self.roles
            .fine
            .iter()
            .map(|&i| match &self.slots[i] {
                Slot::Shape(Some(v)) => Ok((i, v)),
                _ => Err(Error::invalid(format!(
                    "kernel `{}`: the original `{}` was released",
                    self.spec.name, self.spec.params[i].name
                ))),
            })
            .collect()
    }

    /// The plan's order in `space`, built on first use.
    fn sorted(&mut self, dev: &CudaDevice, space: Space) -> Result<Arc<DeviceLayout>> {
        if let Some(l) = match space {
            Space::Original => &self.layouts.sorted,
            Space::Remapped => &self.layouts.remapped,
        } {
            return Ok(l.clone());
        }
        let kernels = dev.extension::<LayoutKernels>()?;
        let built = {
            let b = self.builder(dev, &kernels)?;
            let mut built = match space {
                Space::Original => {
                    let d = self.detail()?;
                    b.sorted(&self.original_fine()?, &d.plan, &d.ptr)?
                }
                Space::Remapped => {
                    let index = self.roles.index.ok_or_else(|| {
                        Error::invalid(format!(
                            "kernel `{}`: cannot be remapped: {}",
                            self.spec.name, self.roles.remap_refused
                        ))
                    })?;
                    // Only `org_r` runs remapped unless the cache-fit
                    // schedules do too (`ThrottleOptions::remap`), and its
                    // single launch needs no partition's share of a row
                    // together: rows sorted by their new column.
                    let rows_sorted = if self.options.remap {
                        None
                    } else {
                        b.remapped_rows_sorted(
                            &self.original_fine()?,
                            self.detail()?,
                            index,
                            self.gathered_len,
                        )?
                    };
                    match rows_sorted {
                        Some(l) => l,
                        None => {
                            let sorted = match &self.layouts.sorted {
                                Some(s) => s.clone(),
                                None => {
                                    let d = self.detail()?;
                                    Arc::new(b.sorted(&self.original_fine()?, &d.plan, &d.ptr)?)
                                }
                            };
                            b.remapped(&sorted, self.detail()?, index, self.gathered_len)?
                        }
                    }
                }
            };
            self.narrow_index(&b, &mut built)?;
            Arc::new(built)
        };
        match space {
            Space::Original => self.layouts.sorted = Some(built.clone()),
            Space::Remapped => {
                self.layouts.remapped = Some(built.clone());
                self.remap_tables(dev)?;
            }
        }
        Ok(built)
    }

    /// The permutations and the remapped copies of per-launch arrays.
    fn remap_tables(&mut self, dev: &CudaDevice) -> Result<()> {
        if self.layouts.tables.is_none() {
            let (_, r) = self.detail()?.remapping.as_ref().ok_or_else(|| {
                Error::invalid(format!("kernel `{}`: no remapping", self.spec.name))
            })?;
            // The cache the plan fits (the L2 unless given), so that a
            // plan for a small cache stages small vectors too.
            let cache = usize::try_from(self.options.cache.resolve(Some(dev.l2_bytes() as u64))?)
                .unwrap_or(usize::MAX);
            let stages = |in_len| crate::engines::gather_layouts::stages_gather(in_len, cache);
            // The timer (and its cache-evicting buffer) only where a
            // table has two forms to time.
            let timer = if stages(self.n_tasks) || stages(self.gathered_len) {
                Some(EventTimer::new(dev)?)
            } else {
                None
            };
            let kernels = dev.extension::<LayoutKernels>()?;
            let table = |idx: &[u32], in_len: usize| match &timer {
                Some(timer) if stages(in_len) => {
                    let block = crate::engines::gather_layouts::staged_block(cache);
                    DeviceGather::fastest(dev, &kernels, timer, idx, in_len, block)
                }
                _ => DeviceGather::upload(dev, idx, in_len, None),
            };
            self.layouts.tables = Some(RemapTables {
                task_perm: table(r.task_perm(), self.n_tasks)?,
                task_inv: table(r.task_inv(), self.n_tasks)?,
                gathered_perm: table(r.gathered_perm(), self.gathered_len)?,
                scratch: None,
            });
        }
        let mut staged = Vec::new();
        for i in 0..self.spec.params.len() {
            if self.roles.shapes(i) || !self.roles.permuted(i) {
                continue;
            }
            let (_, len) = self.staged_ptr(i)?;
            if i == self.roles.gathered && len != self.gathered_len {
                return Err(Error::invalid(format!(
                    "kernel `{}`: `{}` has {len} elements; the remapped plan was made for {}",
                    self.spec.name, self.spec.params[i].name, self.gathered_len
                )));
            }
            if i != self.roles.gathered && len < self.n_tasks {
                return Err(Error::invalid(format!(
                    "kernel `{}`: `{}` has {len} elements, fewer than the {} tasks",
                    self.spec.name, self.spec.params[i].name, self.n_tasks
                )));
            }
            let keep = self
                .staged_r
                .iter()
                .position(|(j, v)| *j == i && v.len() == len);
            let v = match keep {
                Some(k) => self.staged_r.swap_remove(k).1,
                None => ErasedVec::zeros(&self.device, self.spec.params[i].ty, len)?,
            };
            staged.push((i, v));
        }
        self.staged_r = staged;
        if let Some(t) = self.layouts.tables.as_mut() {
            let need = self
                .staged_r
                .iter()
                .map(|(i, v)| {
                    let w = v.ty().size();
                    if *i == self.roles.gathered {
                        t.gathered_perm.scratch_bytes(w)
                    } else {
                        t.task_perm
                            .scratch_bytes(w)
                            .max(t.task_inv.scratch_bytes(w))
                    }
                })
                .max()
                .unwrap_or(0);
            if need > 0 && !t.scratch.as_ref().is_some_and(|b| b.len() >= need) {
                t.scratch = Some(DeviceBuffer::zeros(dev, need)?);
            }
        }
        Ok(())
    }

    /// Every partition alone in `space`, built on first use.
    fn leaves(&mut self, dev: &CudaDevice, space: Space) -> Result<Arc<DeviceLayout>> {
        if let Some(l) = match space {
            Space::Original => &self.layouts.leaves,
            Space::Remapped => &self.layouts.leaves_r,
        } {
            return Ok(l.clone());
        }
        let l = Arc::new(self.cover(dev, space, &self.plan_in(space)?.cf_launches())?);
        match space {
            Space::Original => self.layouts.leaves = Some(l.clone()),
            Space::Remapped => self.layouts.leaves_r = Some(l.clone()),
        }
        Ok(l)
    }

    /// The layout of `launches` in `space` (not kept by the handle).
    fn cover(
        &mut self,
        dev: &CudaDevice,
        space: Space,
        launches: &[Range<usize>],
    ) -> Result<DeviceLayout> {
        let sorted = self.sorted(dev, space)?;
        let kernels = dev.extension::<LayoutKernels>()?;
        let b = self.builder(dev, &kernels)?;
        let mut l = b.cover(&sorted, self.plan_in(space)?, launches)?;
        self.narrow_index(&b, &mut l)?;
        Ok(l)
    }

    /// Narrows `layout`'s index array to 16-bit offsets from the task where
    /// the options allow it and every entry fits (`Builder::narrow_index`).
    fn narrow_index(&self, b: &Builder<'_>, layout: &mut DeviceLayout) -> Result<()> {
        match self.roles.index {
            Some(index) if self.options.narrow_index => b.narrow_index(layout, index),
            _ => Ok(()),
        }
    }

    /// The kernel as launches over `layout` compile it: reading the index
    /// array in the layout's encoding.
    fn spec_for(&self, layout: Option<&DeviceLayout>) -> KernelSpec {
        KernelSpec {
            index_encoding: layout.map_or(IndexEncoding::Plain, |l| l.index_encoding()),
            ..*self.spec
        }
    }

    /// One launch over all tasks: the arrays as given (`layout` `None`,
    /// `org`) or a sorted layout (`org_r`).
    fn single(
        &self,
        dev: &CudaDevice,
        policy: ThrottlePolicy,
        layout: Option<Arc<DeviceLayout>>,
    ) -> Result<Schedule> {
        let config = self
            .kept_configs
            .iter()
            .find(|(p, _)| *p == policy)
            .map_or(self.config, |(_, c)| *c);
        self.single_with(dev, policy, layout, &config)
    }

    /// As [`single`](Self::single), under launch options `config`.
    fn single_with(
        &self,
        dev: &CudaDevice,
        policy: ThrottlePolicy,
        layout: Option<Arc<DeviceLayout>>,
        config: &LaunchConfig,
    ) -> Result<Schedule> {
        let space = layout.as_ref().map_or(Space::Original, |l| l.space);
        let args = self.args(layout.as_deref().map(|l| (l, 0)), space)?;
        let spec = self.spec_for(layout.as_deref());
        let p = Prepared::new_borrowing(dev, &spec, config, Tasks::All(self.n_tasks), &args)?;
        drop(args);
        Ok(Schedule {
            policy,
            space,
            runs: Runs::Single(Box::new(p)),
            layouts: layout.into_iter().collect(),
        })
    }

    /// One carried launch per launch of `layout` (`cf`, `sj`).
    fn carried(
        &self,
        dev: &CudaDevice,
        policy: ThrottlePolicy,
        layout: Arc<DeviceLayout>,
    ) -> Result<Schedule> {
        let args = (0..layout.ptrs.len())
            .map(|j| self.args(Some((&layout, j)), layout.space))
            .collect::<Result<Vec<_>>>()?;
        let parts = args.iter().map(|a| CarriedPart::All(a)).collect();
        let spec = self.spec_for(Some(&layout));
        let runs = CarriedRun::of_parts(dev, &spec, &self.config, self.n_tasks, parts)?;
        drop(args);
        Ok(Schedule {
            policy,
            space: layout.space,
            runs: Runs::Carried(runs),
            layouts: vec![layout],
        })
    }

    /// One queued task list per launch of `launches` over the part-major
    /// layout `leaves` (`cfq`: one launch of everything; `sjq`: the chosen
    /// nodes), carried between them.
    fn queued(
        &self,
        dev: &CudaDevice,
        policy: ThrottlePolicy,
        leaves: Arc<DeviceLayout>,
        launches: &[Range<usize>],
    ) -> Result<Schedule> {
        let cover = leaves
            .cover
            .as_ref()
            .ok_or_else(|| Error::invalid("a queued schedule needs the part-major layout"))?;
        let plan = self.plan_in(leaves.space)?;
        let how = PlanList {
            budget: LIST_BUDGET,
            queue_chunk: Some(self.options.chunk.div_ceil(LIST_BUDGET).max(1)),
        };
        let last = launches.len().saturating_sub(1);
        let lists = launches
            .iter()
            .enumerate()
            .map(|(j, r)| cover.segments(plan, r.clone(), j == 0 || j == last))
            .collect::<Result<Vec<_>>>()?;
        // The prologue reads the range array for its context only (the
        // list's positions are the layout's): any of the layout's serves.
        let args = self.args(Some((&leaves, 0)), leaves.space)?;
        let parts = lists
            .into_iter()
            .map(|l| CarriedPart::List(l, how, &args))
            .collect();
        let spec = self.spec_for(Some(&leaves));
        let runs = CarriedRun::of_parts(dev, &spec, &self.config, self.n_tasks, parts)?;
        drop(args);
        Ok(Schedule {
            policy,
            space: leaves.space,
            runs: Runs::Carried(runs),
            layouts: vec![leaves],
        })
    }

    /// The schedule of `policy` (not `auto`, not `sj`/`sjq` before their
    /// cover is chosen: `sj_cover` gives it).
    fn build(
        &mut self,
        dev: &CudaDevice,
        policy: ThrottlePolicy,
        sj_cover: Option<&[Range<usize>]>,
    ) -> Result<Schedule> {
        let space = self.plan_space();
        match policy {
            ThrottlePolicy::Org => self.single(dev, policy, None),
            ThrottlePolicy::OrgR => {
                let l = self.sorted(dev, Space::Remapped)?;
                self.single(dev, policy, Some(l))
            }
            ThrottlePolicy::Cf => {
                let l = self.leaves(dev, space)?;
                self.carried(dev, policy, l)
            }
            ThrottlePolicy::Cfq => {
                let l = self.leaves(dev, space)?;
                let all = self.plan_in(space)?.single_launch();
                self.queued(dev, policy, l, &all)
            }
            ThrottlePolicy::Sj => {
                let cover = sj_cover.ok_or_else(|| Error::invalid("sj needs its cover"))?;
                let kept = self.layouts.sj.as_ref().filter(|l| {
                    l.space == space && l.cover.as_ref().is_some_and(|c| c.launches() == cover)
                });
                let l = match kept {
                    Some(l) => l.clone(),
                    None => Arc::new(self.cover(dev, space, cover)?),
                };
                self.carried(dev, policy, l)
            }
            ThrottlePolicy::Sjq => {
                let cover = sj_cover.ok_or_else(|| Error::invalid("sjq needs its cover"))?;
                let l = self.leaves(dev, space)?;
                self.queued(dev, policy, l, cover)
            }
            ThrottlePolicy::Auto => Err(Error::invalid("auto is a choice, not a schedule")),
        }
    }

    // ----- profiling -----

    /// Copies of the outputs as staged, so that every timing run starts
    /// from what the launch was given (an epilogue may read its output).
    fn snapshot(&self) -> Result<Vec<(usize, DeviceBuffer<u8>)>> {
        let Some(dev) = self.device.cuda() else {
            return Ok(Vec::new());
        };
        (0..self.spec.params.len())
            .filter(|&i| self.spec.params[i].kind == ParamKind::Output)
            .map(|i| {
                let (ptr, len) = self.staged_ptr(i)?;
                let bytes = len * self.spec.params[i].ty.size();
                let copy = DeviceBuffer::<u8>::zeros(dev, bytes)?;
                dtod(dev, copy.device_ptr(dev), ptr, bytes)?;
                Ok((i, copy))
            })
            .collect()
    }

    fn restore(&self, snapshot: &[(usize, DeviceBuffer<u8>)]) -> Result<()> {
        let Some(dev) = self.device.cuda() else {
            return Ok(());
        };
        for (i, copy) in snapshot {
            let (ptr, _) = self.staged_ptr(*i)?;
            dtod(dev, ptr, copy.device_ptr(dev), copy.len())?;
        }
        Ok(())
    }

    /// The median device time of a run of `s` (permutations included),
    /// each run from the snapshot's outputs.
    fn time(
        &self,
        s: &Schedule,
        timer: &EventTimer,
        snap: &[(usize, DeviceBuffer<u8>)],
    ) -> Result<f64> {
        self.restore(snap)?;
        self.run_once(s)?;
        s.runs.check()?;
        let mut ms = Vec::with_capacity(AUTO_SAMPLES);
        for _ in 0..AUTO_SAMPLES {
            self.restore(snap)?;
            ms.push(timer.time_ms(1, &mut || self.run_once(s))?);
        }
        s.runs.check()?;
        Ok(median(ms))
    }

    /// SJ profiling: every pass (a cover of the partitions by SJ-tree
    /// nodes, one complete run) timed node by node, then tree
    /// recombination (Algorithm 3). Returns the chosen cover's launches.
    fn profile_sj(
        &mut self,
        dev: &CudaDevice,
        queued: bool,
        timer: &EventTimer,
        snap: &[(usize, DeviceBuffer<u8>)],
    ) -> Result<Vec<Range<usize>>> {
        let space = self.plan_space();
        let (tree, passes) = {
            let plan = self.plan_in(space)?;
            (plan.tree().clone(), profiling_passes(plan.tree()))
        };
        let mut stime = vec![f64::INFINITY; tree.nodes().len()];
        for pass in &passes {
            let launches = self.plan_in(space)?.node_launches(pass)?;
            let policy = if queued {
                ThrottlePolicy::Sjq
            } else {
                ThrottlePolicy::Sj
            };
            let s = self.build(dev, policy, Some(&launches))?;
            let Runs::Carried(runs) = &s.runs else {
                return Err(Error::invalid("an SJ pass is a carried sequence"));
            };
            let mut per_node = vec![Vec::with_capacity(AUTO_SAMPLES); runs.len()];
            for sample in 0..=AUTO_SAMPLES {
                self.restore(snap)?;
                if s.space == Space::Remapped {
                    self.permute(true)?;
                }
                let ms = timer.time_each_ms(runs.len(), &mut |i| runs.run_part(i))?;
                if sample > 0 {
                    // The first run warms up (and is checked).
                    for (v, t) in per_node.iter_mut().zip(ms) {
                        v.push(t);
                    }
                }
                runs.check()?;
            }
            for (&node, times) in pass.iter().zip(per_node) {
                let t = median(times);
                let slot = &mut stime[node as usize];
                *slot = slot.min(t);
            }
        }
        // Every node is in some pass; one that is not (none, for a tree
        // from the partitioner) is never chosen.
        for t in &mut stime {
            if !t.is_finite() {
                *t = f64::MAX / 4.0;
            }
        }
        let r = recombine(&tree, &stime)?;
        self.plan_in(space)?.node_launches(&r.nodes)
    }

    /// Prepares the schedule to run: on the CPU the twin; with no plan of
    /// several partitions `org`; else the asked policy, profiled where it
    /// is `sj`, `sjq` or `auto` (each timing run computes the launch's
    /// result from the staged arrays).
    fn prepare(&mut self) -> Result<Schedule> {
        let Some(dev) = self.device.cuda().cloned() else {
            return Ok(Schedule {
                policy: ThrottlePolicy::Org,
                space: Space::Original,
                runs: Runs::Cpu,
                layouts: Vec::new(),
            });
        };
        let started = Instant::now();
        let asked = self.report.chosen;
        let has_detail = self.plan.as_ref().is_some_and(|p| p.detail.is_some());
        if !has_detail || asked == ThrottlePolicy::Org {
            // No plan yet, or one partition: the unthrottled launch.
            return self.single(&dev, ThrottlePolicy::Org, None);
        }
        if self.layouts.tables.is_some() {
            // Prepared again (other arrays): the remapped copies follow them.
            self.remap_tables(&dev)?;
        }
        let timer = EventTimer::new(&dev)?;
        let snap = self.snapshot()?;
        let out = match asked {
            ThrottlePolicy::Sj | ThrottlePolicy::Sjq if !self.report.sj_launches.is_empty() => {
                let cover = self.report.sj_launches.clone();
                self.build(&dev, asked, Some(&cover))?
            }
            ThrottlePolicy::Sj | ThrottlePolicy::Sjq => {
                let cover = self.profile_sj(&dev, asked == ThrottlePolicy::Sjq, &timer, &snap)?;
                self.report.sj_launches = cover.clone();
                let s = self.build(&dev, asked, Some(&cover))?;
                let ms = self.time(&s, &timer, &snap)?;
                self.report.profile.push((asked, ms));
                s
            }
            ThrottlePolicy::Auto => self.auto(&dev, &timer, &snap)?,
            p => self.build(&dev, p, None)?,
        };
        if asked != ThrottlePolicy::Auto {
            self.report
                .profiling_by_policy
                .push((out.policy, started.elapsed()));
        }
        self.restore(&snap)?;
        self.report.chosen = out.policy;
        let kept = self
            .kept_configs
            .iter()
            .find(|(p, _)| *p == out.policy)
            .map(|(_, c)| c.split);
        self.report.warp_budget = match kept {
            Some(crate::Split::Budget(b) | crate::Split::Queued(b))
                if b != crate::launch::split_policy::PACKED_WARP_BUDGET =>
            {
                Some(b)
            }
            _ => None,
        };
        self.report.queued = matches!(kept, Some(crate::Split::Queued(_)));
        self.report.serial_bound = self
            .report
            .serial_profile
            .iter()
            .filter(|t| t.0 == out.policy)
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .map(|t| t.1);
        self.report.remapped = out.space == Space::Remapped;
        self.report.narrow_index = out
            .layouts
            .iter()
            .any(|l| l.index_encoding() == IndexEncoding::Delta16);
        self.report.remap_order = match out.space {
            Space::Remapped => self.detail()?.remapping.as_ref().map(|(o, _)| *o),
            Space::Original => None,
        };
        if let Some(p) = self.plan.as_mut().and_then(|p| p.detail.as_mut()) {
            // Host memory of an order no schedule runs in.
            p.alternative = None;
        }
        self.report.profiling = started.elapsed();
        self.release_unused(&out);
        Ok(out)
    }

    /// `auto`: times every schedule that applies and keeps the fastest.
    fn auto(
        &mut self,
        dev: &CudaDevice,
        timer: &EventTimer,
        snap: &[(usize, DeviceBuffer<u8>)],
    ) -> Result<Schedule> {
        let mut best: Option<(f64, Schedule)> = None;
        // Host time of each candidate: from the start of its build to the
        // end of its timing.
        let mut since = Instant::now();
        // Records `s`'s time `ms` and keeps it if it is the fastest so far.
        let mut keep = |t: &mut Self, s: Schedule, ms: f64, since: &mut Instant| -> bool {
            t.report.profile.push((s.policy, ms));
            t.report
                .profiling_by_policy
                .push((s.policy, since.elapsed()));
            *since = Instant::now();
            let better = best.as_ref().map_or(true, |(b, _)| ms < *b);
            if better {
                best = Some((ms, s));
            }
            better
        };
        let org = self.single(dev, ThrottlePolicy::Org, None)?;
        let ms = self.time(&org, timer, snap)?;
        let (org, ms) = self.fastest_budget(dev, org, ms, timer, snap)?;
        keep(self, org, ms, &mut since);
        if self.detail()?.remapping.is_some() {
            let (s, ms) = self.fastest_org_r(dev, timer, snap)?;
            let (s, ms) = self.fastest_budget(dev, s, ms, timer, snap)?;
            keep(self, s, ms, &mut since);
        } else {
            self.report.skipped.push((
                ThrottlePolicy::OrgR,
                format!(
                    "the kernel cannot be remapped: {}",
                    self.roles.remap_refused
                ),
            ));
        }
        for p in [ThrottlePolicy::Cf, ThrottlePolicy::Cfq] {
            match self.build(dev, p, None) {
                Ok(s) => {
                    let ms = self.time(&s, timer, snap)?;
                    keep(self, s, ms, &mut since);
                }
                Err(e) => {
                    self.report.skipped.push((p, e.to_string()));
                    since = Instant::now();
                }
            }
        }
        for (p, queued) in [(ThrottlePolicy::Sj, false), (ThrottlePolicy::Sjq, true)] {
            let cover = match self.profile_sj(dev, queued, timer, snap) {
                Ok(c) => c,
                Err(e) => {
                    self.report.skipped.push((p, e.to_string()));
                    since = Instant::now();
                    continue;
                }
            };
            let s = self.build(dev, p, Some(&cover))?;
            let ms = self.time(&s, timer, snap)?;
            if keep(self, s, ms, &mut since) {
                self.report.sj_launches = cover;
            }
        }
        best.map(|(_, s)| s)
            .ok_or_else(|| Error::invalid("auto timed no schedule"))
    }

    /// A single-launch schedule `s` (timed at `ms`) whose automatic split
    /// packed its warps by work, timed again under the wider budgets of
    /// `split_policy::budgets_to_time` over the same layout and serial bound, then,
    /// where the split raised that bound, at the fastest budget under the
    /// configured one, then with its groups dequeued (`Split::Queued`):
    /// the fastest with its time. Every budget timed goes to
    /// `budget_profile`, every serial bound to `serial_profile`, the queue
    /// to `queue_profile`.
    fn fastest_budget(
        &mut self,
        dev: &CudaDevice,
        s: Schedule,
        ms: f64,
        timer: &EventTimer,
        snap: &[(usize, DeviceBuffer<u8>)],
    ) -> Result<(Schedule, f64)> {
        let (budgets, serial_max) = match &s.runs {
            Runs::Single(p) => (
                crate::launch::split_policy::budgets_to_time(p.chosen_split()),
                p.cte_serial_max(),
            ),
            _ => return Ok((s, ms)),
        };
        if budgets.is_empty() {
            return Ok((s, ms));
        }
        let policy = s.policy;
        self.report.budget_profile.push((
            policy,
            crate::launch::split_policy::PACKED_WARP_BUDGET,
            ms,
        ));
        let mut best = (s, ms, None);
        for &b in budgets {
            let config = LaunchConfig {
                split: crate::Split::Budget(b),
                cte_serial_max: serial_max,
                ..self.config
            };
            let (wider, wider_ms) = self.timed_like(dev, &best.0, &config, timer, snap)?;
            self.report.budget_profile.push((policy, b, wider_ms));
            if wider_ms < best.1 {
                best = (wider, wider_ms, Some(config));
            }
        }
        // The automatic split raises the serial-fallback bound where the
        // first gathers of neighbouring tasks are local, which a mesh's
        // rows gain from; a level-ordered power-law matrix passes the same
        // probe but loses a little (BENCHMARKS.md, "Where the remaining
        // time goes"), so the configured bound is timed too, at the
        // fastest budget.
        let configured = self.config.cte_serial_max;
        if serial_max > configured {
            let budget = match best.2 {
                Some(LaunchConfig {
                    split: crate::Split::Budget(b),
                    ..
                }) => b,
                _ => crate::launch::split_policy::PACKED_WARP_BUDGET,
            };
            let config = LaunchConfig {
                split: crate::Split::Budget(budget),
                cte_serial_max: configured,
                ..self.config
            };
            let (serial, serial_ms) = self.timed_like(dev, &best.0, &config, timer, snap)?;
            self.report.serial_profile.extend([
                (policy, serial_max, best.1),
                (policy, configured, serial_ms),
            ]);
            if serial_ms < best.1 {
                best = (serial, serial_ms, Some(config));
            }
        }
        // The fastest configuration once more, its groups dequeued by a
        // persistent grid (`Split::Queued`): faster where warps of a block
        // finish far apart, slower where neighbouring warps shared lines.
        let (budget, serial) = match best.2 {
            Some(LaunchConfig {
                split: crate::Split::Budget(b),
                cte_serial_max,
                ..
            }) => (b, cte_serial_max),
            _ => (crate::launch::split_policy::PACKED_WARP_BUDGET, serial_max),
        };
        let config = LaunchConfig {
            split: crate::Split::Queued(budget),
            cte_serial_max: serial,
            ..self.config
        };
        let (queued, queued_ms) = self.timed_like(dev, &best.0, &config, timer, snap)?;
        self.report.queue_profile.push((policy, best.1, queued_ms));
        if queued_ms < best.1 {
            best = (queued, queued_ms, Some(config));
        }
        if let Some(config) = best.2 {
            self.kept_configs.retain(|(p, _)| *p != policy);
            self.kept_configs.push((policy, config));
        }
        Ok((best.0, best.1))
    }

    /// `s`'s policy as one launch over `s`'s layout under `config`, and its
    /// time.
    fn timed_like(
        &self,
        dev: &CudaDevice,
        s: &Schedule,
        config: &LaunchConfig,
        timer: &EventTimer,
        snap: &[(usize, DeviceBuffer<u8>)],
    ) -> Result<(Schedule, f64)> {
        let layout = s.layouts.first().cloned();
        let t = self.single_with(dev, s.policy, layout, config)?;
        let ms = self.time(&t, timer, snap)?;
        Ok((t, ms))
    }

    /// `org_r` timed in the remapping's order and, where `auto` has an
    /// alternative order, in that one too: the faster with its time, the
    /// handle's remapping (and its device copies) left at its order. Each
    /// order's time goes to `remap_profile`.
    fn fastest_org_r(
        &mut self,
        dev: &CudaDevice,
        timer: &EventTimer,
        snap: &[(usize, DeviceBuffer<u8>)],
    ) -> Result<(Schedule, f64)> {
        let first = self.build(dev, ThrottlePolicy::OrgR, None)?;
        let first_ms = self.time(&first, timer, snap)?;
        self.record_remap_time(first_ms)?;
        if self.detail()?.alternative.is_none() {
            return Ok((first, first_ms));
        }
        // The first order's layout and permutations put aside, so that the
        // other order's are built (the staged per-launch copies keep their
        // buffers: both schedules read the same ones).
        let aside = (self.layouts.remapped.take(), self.layouts.tables.take());
        self.swap_remapping()?;
        let second = self.build(dev, ThrottlePolicy::OrgR, None)?;
        let second_ms = self.time(&second, timer, snap)?;
        self.record_remap_time(second_ms)?;
        if second_ms < first_ms {
            return Ok((second, second_ms));
        }
        drop(second);
        self.swap_remapping()?;
        (self.layouts.remapped, self.layouts.tables) = aside;
        Ok((first, first_ms))
    }

    /// Swaps the remapping for `auto`'s alternative order.
    fn swap_remapping(&mut self) -> Result<()> {
        let name = self.spec.name;
        let d = self
            .plan
            .as_mut()
            .and_then(|p| p.detail.as_mut())
            .filter(|d| d.remapping.is_some() && d.alternative.is_some())
            .ok_or_else(|| {
                Error::invalid(format!(
                    "kernel `{name}`: no second remapping order to time"
                ))
            })?;
        std::mem::swap(&mut d.remapping, &mut d.alternative);
        Ok(())
    }

    /// Records `org_r`'s time `ms` in the remapping's current order.
    fn record_remap_time(&mut self, ms: f64) -> Result<()> {
        if let Some((order, _)) = &self.detail()?.remapping {
            let order = *order;
            self.report.remap_profile.push((order, ms));
        }
        Ok(())
    }

    /// Drops the layouts and copies no schedule of the chosen one reads.
    fn release_unused(&mut self, keep: &Schedule) {
        let wants = |l: &Option<Arc<DeviceLayout>>| {
            l.as_ref()
                .is_some_and(|l| keep.layouts.iter().any(|k| Arc::ptr_eq(k, l)))
        };
        if !wants(&self.layouts.leaves) {
            self.layouts.leaves = None;
        }
        if !wants(&self.layouts.leaves_r) {
            self.layouts.leaves_r = None;
        }
        // The sorted layouts are the sources of any other; a chosen
        // schedule only reads its own.
        if !wants(&self.layouts.sorted) {
            self.layouts.sorted = None;
        }
        if !wants(&self.layouts.remapped) {
            self.layouts.remapped = None;
        }
        self.layouts.sj = match keep.policy {
            ThrottlePolicy::Sj => keep.layouts.first().cloned(),
            _ => None,
        };
        if keep.space != Space::Remapped {
            self.layouts.tables = None;
            self.staged_r.clear();
        }
        if keep.policy != ThrottlePolicy::Org {
            // The original shape arrays: only `org` reads them.
            for (i, s) in self.slots.iter_mut().enumerate() {
                if let Slot::Shape(v) = s {
                    if self.roles.fine.contains(&i) {
                        *v = None;
                    }
                }
            }
        }
    }
}

/// Copies `bytes` bytes between device addresses on `dev`'s stream.
fn dtod(dev: &CudaDevice, dst: u64, src: u64, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the callers pass two device allocations of at least `bytes`.
    unsafe { cudarc::driver::result::memcpy_dtod_async(dst, src, bytes, dev.stream().cu_stream()) }
        .map_err(crate::driver::errors::cuda_err(format!(
            "copying {bytes} bytes on the device"
        )))
}

impl std::fmt::Debug for Throttled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Throttled")
            .field("kernel", &self.spec.name)
            .field("backend", &self.device.backend_name())
            .field("report", &self.report)
            .finish()
    }
}

/// `arg` as an array the handle can use in place: a `DeviceVec` of the
/// handle's device (`None`: copy it).
fn bindable(device: &Device, arg: &Arg<'_>) -> Option<Bound> {
    match (arg, device.cuda()) {
        (
            Arg::Resident(ResidentArray {
                place: Place::Cuda { ptr, device: d },
                len,
                ..
            }),
            Some(own),
        ) if d.ordinal() == own.ordinal() => Some(Bound {
            addr: *ptr,
            cuda: true,
            len: *len,
        }),
        (
            Arg::Resident(ResidentArray {
                place: Place::Host { addr },
                len,
                ..
            }),
            None,
        ) => Some(Bound {
            addr: *addr as u64,
            cuda: false,
            len: *len,
        }),
        _ => None,
    }
}

/// The kind, element type and length of a launch argument.
fn arg_signature(arg: &Arg<'_>) -> (ParamKind, ScalarType, usize) {
    match arg {
        Arg::Input(s) => (ParamKind::Input, s.ty, s.len()),
        Arg::Output(s) => (ParamKind::Output, s.ty, s.len()),
        Arg::Scalar(v) => (ParamKind::Scalar, v.ty(), 0),
        Arg::Resident(r) => (r.kind, r.ty, r.len),
        // Throttled kernels have no shared arrays or worklists (the macro
        // rejects them); the signature is for the argument check's error.
        Arg::Shared(s) => (ParamKind::Shared, s.0.ty, s.0.len()),
        Arg::Worklist(_) => (ParamKind::Worklist, ScalarType::U32, 0),
    }
}

//! The throttled handle behind a `#[throttled]` kernel's generated
//! `throttle` (`Throttled`): the kernel's launches over a cache-fit plan,
//! with the arrays that shape the work kept on the device, laid out for
//! the plan.
//!
//! The kernel's parameters have three roles, which the macro derives from
//! the kernel's IR ([`ThrottleRoles`]): the **range array** (`row_ptr` in
//! `row_ptr[t] as usize .. row_ptr[t + 1] as usize`), the **fine arrays**
//! (read only at the fine-task index: `col`, `val`) and everything else,
//! passed at each launch (the gathered array, outputs, other inputs,
//! scalars). The handle owns copies of the first two, in the original order
//! for `org` and part by part for `cf` ([`PartMajor`]: each partition's
//! share of every task contiguous, with a range array of its own). A
//! per-launch array that is a `DeviceVec` of the handle's device is used in
//! place; a host slice goes through a device buffer of the handle's, copied
//! in (and out, for an output). So every schedule is prepared once (split
//! decisions, task lists, argument blocks) and a launch with the same
//! arrays only enqueues it; other `DeviceVec`s prepare it again.
//!
//! Schedules: `org` (one launch, tasks whole), `cf` (one launch per
//! partition, each task's fold carried between launches on the device,
//! [`CarriedLaunch`](crate::CarriedLaunch)), and `auto`, which times both
//! on the first launch's data with CUDA events (the timing runs compute
//! that launch's result, so nothing is lost) and keeps the faster. The
//! queue and split-join schedules (`cfq`, `sj`, `sjq`) and remapping
//! (`org_r`) are planned on the host (`schedule`) but not launched by the
//! handle yet: asking for them is an error that says so. On the CPU backend
//! every policy runs the CPU twin over the original arrays.
//!
//! Reordering fine tasks changes the order in which each task's values are
//! folded: throttling requires a commutative and associative reduce
//! operator (`+`, `min`, `max`, `|`, ...). Integer, boolean and min/max
//! kernels give identical results under every policy; float sums agree
//! within rounding (the fold of a reordered row).

use crate::args::Arg;
use crate::buffer::{cuda_err, DeviceBuffer};
use crate::carried::CarriedRun;
use crate::device::{CudaDevice, Device};
use crate::launch::Prepared;
use crate::resident::{CpuArgs, Place, ResidentArray};
use crate::spec::{KernelSpec, ParamKind, ScalarType, ScalarValue};
use crate::LaunchConfig;
use std::cell::UnsafeCell;
use std::time::{Duration, Instant};
use warpfit_runtime::partition::WorkGraph;
use warpfit_runtime::schedule::{CacheFitPlan, PartMajor, ThrottleOptions, ThrottlePolicy};
use warpfit_runtime::{Error, Result, Tasks};

/// Which parameters shape the work (generated `THROTTLE_ROLES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleRoles {
    /// The range array: task `t`'s fine tasks are `range[t]..range[t + 1]`.
    pub range: usize,
    /// The arrays read only at the fine-task index, sorted.
    pub fine: &'static [usize],
}

impl ThrottleRoles {
    /// Whether parameter `i` is owned by the handle (given once, to
    /// `throttle`) rather than passed to each launch.
    pub fn shapes(&self, i: usize) -> bool {
        i == self.range || self.fine.contains(&i)
    }
}

/// What building and choosing a throttled schedule found.
#[derive(Debug, Clone, PartialEq)]
pub struct ThrottleReport {
    /// The policy asked for.
    pub asked: ThrottlePolicy,
    /// The schedule the launches run (`org` or `cf`; `auto` resolved on
    /// the first launch).
    pub chosen: ThrottlePolicy,
    /// Cache-fit partitions of the plan (0 when none was planned).
    pub partitions: usize,
    /// Host time spent partitioning and laying out the plan.
    pub planning: Duration,
    /// `auto`'s measurements on the first launch: median milliseconds per
    /// run of each candidate.
    pub profile: Vec<(ThrottlePolicy, f64)>,
    /// Launches run with `org` while a pipelined plan was being made.
    pub launches_before_plan: usize,
}

/// A kernel's launches over a cache-fit plan (see the module docs); made
/// by a `#[throttled]` kernel's generated `throttle`, which wraps it in a
/// typed handle.
pub struct Throttled {
    /// Prepared launches: declared first, so dropped before the arrays
    /// whose device addresses they hold.
    runs: Option<Runs>,
    device: Device,
    spec: &'static KernelSpec,
    config: LaunchConfig,
    roles: ThrottleRoles,
    n_tasks: usize,
    /// One per parameter.
    slots: Vec<Slot>,
    /// The part-major copies of the range and fine arrays (`cf`).
    parts: Option<PartArrays>,
    /// A plan being made on a CPU thread (pipelined planning).
    pending: Option<PendingPlan>,
    report: ThrottleReport,
    cpu_run: CpuRunFn,
}

/// The CPU twin over a launch's arguments (generated).
pub type CpuRunFn = fn(&CpuArgs<'_>, usize) -> Result<()>;

enum Slot {
    /// A range or fine array in the original order (absent when only
    /// `cf` runs).
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

struct PartArrays {
    /// One range array per partition.
    ptrs: Vec<ErasedVec>,
    /// The fine arrays in part-major order, by parameter.
    fine: Vec<(usize, ErasedVec)>,
}

enum Runs {
    Org(Box<Prepared>),
    Cf(CarriedRun),
    Cpu,
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
    /// The plan is in; the next launch times `org` and `cf` (`auto`).
    Profiling,
    /// Launches run this schedule.
    Running(ThrottlePolicy),
}

/// A plan laid out on the host: what a handle uploads for `cf`.
struct HostPlan {
    partitions: usize,
    planning: Duration,
    /// `None` for one partition (the plan is the unthrottled launch).
    layout: Option<HostLayout>,
}

struct HostLayout {
    ptrs: Vec<Vec<u32>>,
    range_ty: ScalarType,
    fine: Vec<(usize, Vec<u8>, ScalarType)>,
}

/// The shape arrays of a kernel, by parameter (`None`: not a shape
/// array), checked against the kernel's roles and types.
type Shape<'s> = Vec<Option<(&'s [u8], ScalarType)>>;

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

/// Checks the policy the handle is asked to run.
fn check_policy(spec: &KernelSpec, options: &ThrottleOptions) -> Result<()> {
    options.validate()?;
    let asked = options.policy;
    if !matches!(
        asked,
        ThrottlePolicy::Org | ThrottlePolicy::Cf | ThrottlePolicy::Auto
    ) || options.remap
    {
        return Err(Error::invalid(format!(
            "kernel `{}`: throttling policy `{asked}`{} is planned but not launched by the throttled handle yet; use org, cf or auto without remapping",
            spec.name,
            if options.remap { " with remapping" } else { "" }
        )));
    }
    Ok(())
}

/// Partitions `graph` for a cache of `l2` bytes (the device's) and lays
/// the plan out part by part: host work only, so that it can run on a
/// thread of its own.
fn plan_on_host(
    spec: &KernelSpec,
    roles: ThrottleRoles,
    options: &ThrottleOptions,
    l2: u64,
    graph: &WorkGraph,
    shape: &Shape<'_>,
) -> Result<HostPlan> {
    let t = Instant::now();
    let (range_bytes, range_ty) =
        shape[roles.range].ok_or_else(|| Error::invalid("the range array is missing"))?;
    check_tiles(spec, roles.range, range_bytes, range_ty, graph)?;
    let partition = options.partition(graph, Some(l2), None)?;
    let plan = CacheFitPlan::new(graph, &partition)?;
    let partitions = plan.len();
    let layout = if partitions > 1 {
        let pm = PartMajor::new(&plan)?;
        let ptrs = (0..pm.len()).map(|p| pm.part_ptr(p).to_vec()).collect();
        let fine = roles
            .fine
            .iter()
            .map(|&i| {
                let (bytes, ty) =
                    shape[i].ok_or_else(|| Error::invalid("a fine array is missing"))?;
                Ok((i, permute_bytes(bytes, ty.size(), pm.fine_perm())?, ty))
            })
            .collect::<Result<Vec<_>>>()?;
        Some(HostLayout {
            ptrs,
            range_ty,
            fine,
        })
    } else {
        None
    };
    Ok(HostPlan {
        partitions,
        planning: t.elapsed(),
        layout,
    })
}

/// A plan being made on a CPU thread.
type PendingPlan = std::thread::JoinHandle<Result<HostPlan>>;

impl Throttled {
    /// Plans `graph` (the kernel's work graph over `n_tasks` tasks) under
    /// `options` and makes the handle's copies of the arrays `shape` gives
    /// (one entry per parameter: `Some(host array)` for the range and fine
    /// arrays, `None` for the others). Generated `throttle` calls this.
    ///
    /// # Errors
    /// Invalid options, a policy the handle does not launch, arguments that
    /// do not match the kernel, a range array that does not tile the fine
    /// arrays from 0 (a `cf` plan needs that), the partitioner's errors,
    /// and device errors.
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
        check_policy(spec, options)?;
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
        let keep_original = !(options.policy == ThrottlePolicy::Cf
            && plan.as_ref().is_some_and(|p| p.layout.is_some()));
        let mut t = Self::with_slots(
            device,
            spec,
            roles,
            options,
            config,
            n_tasks,
            &shape,
            keep_original,
            cpu_run,
        )?;
        if let Some(plan) = plan {
            t.install(plan)?;
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
        check_policy(spec, options)?;
        let borrowed = shape
            .iter()
            .map(|a| a.as_ref().map(|a| (a.bytes(), a.ty())))
            .collect();
        let checked = check_shape(spec, roles, borrowed)?;
        let mut t = Self::with_slots(
            device, spec, roles, options, config, n_tasks, &checked, true, cpu_run,
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

    /// The handle with its shape arrays uploaded in the original order
    /// (when `keep_original`) and no plan: it runs `org`.
    #[allow(clippy::too_many_arguments)]
    fn with_slots(
        device: &Device,
        spec: &'static KernelSpec,
        roles: ThrottleRoles,
        options: &ThrottleOptions,
        config: &LaunchConfig,
        n_tasks: usize,
        shape: &Shape<'_>,
        keep_original: bool,
        cpu_run: CpuRunFn,
    ) -> Result<Self> {
        let slots = (0..spec.params.len())
            .map(|i| {
                Ok(match (spec.params[i].kind, shape[i]) {
                    (ParamKind::Scalar, _) => Slot::Scalar(None),
                    (_, Some((bytes, ty))) => Slot::Shape(if keep_original {
                        Some(ErasedVec::upload(device, bytes, ty)?)
                    } else {
                        None
                    }),
                    (_, None) => Slot::Staged(Staging::Empty),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Throttled {
            runs: None,
            device: device.clone(),
            spec,
            config: *config,
            roles,
            n_tasks,
            slots,
            parts: None,
            pending: None,
            report: ThrottleReport {
                asked: options.policy,
                chosen: ThrottlePolicy::Org,
                partitions: 0,
                planning: Duration::ZERO,
                profile: Vec::new(),
                launches_before_plan: 0,
            },
            cpu_run,
        })
    }

    /// Uploads `plan`'s part-major arrays and makes the next launch run
    /// the asked schedule (`auto`: profile first).
    fn install(&mut self, plan: HostPlan) -> Result<()> {
        self.report.partitions = plan.partitions;
        self.report.planning = plan.planning;
        let Some(layout) = plan.layout else {
            // One partition: the plan is the unthrottled launch.
            self.report.chosen = ThrottlePolicy::Org;
            return Ok(());
        };
        let ptrs = layout
            .ptrs
            .iter()
            .map(|p| ErasedVec::upload_u32_as(&self.device, p, layout.range_ty))
            .collect::<Result<Vec<_>>>()?;
        let fine = layout
            .fine
            .iter()
            .map(|(i, bytes, ty)| Ok((*i, ErasedVec::upload(&self.device, bytes, *ty)?)))
            .collect::<Result<Vec<_>>>()?;
        self.parts = Some(PartArrays { ptrs, fine });
        self.report.chosen = self.report.asked;
        self.runs = None;
        Ok(())
    }

    /// Where the plan is.
    pub fn status(&self) -> ThrottleStatus {
        match (&self.pending, self.report.chosen) {
            (Some(_), _) => ThrottleStatus::Planning,
            (None, ThrottlePolicy::Auto) => ThrottleStatus::Profiling,
            (None, p) => ThrottleStatus::Running(p),
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
    /// The planner's errors, device errors.
    pub fn wait_for_plan(&mut self) -> Result<()> {
        if let Some(handle) = self.pending.take() {
            let plan = handle.join().map_err(|_| Error::Unavailable {
                what: format!("the plan of kernel `{}`", self.spec.name),
                reason: "the planning thread panicked".into(),
            })??;
            self.install(plan)?;
        }
        Ok(())
    }

    /// What planning and choosing found.
    pub fn report(&self) -> &ThrottleReport {
        &self.report
    }

    /// Runs the kernel once over `per_launch` (the parameters that do not
    /// shape the work, in parameter order): inputs and outputs are copied
    /// into the handle's device buffers, the chosen schedule runs, outputs
    /// are copied back (host slices downloaded, device-resident arrays
    /// copied on the device). Waits for the device and reports a fault.
    ///
    /// # Errors
    /// Arguments that do not match the kernel (count, kind, type, a
    /// device-resident array of another device), the kernel's faults, and
    /// device errors.
    #[doc(hidden)]
    pub fn launch(&mut self, per_launch: &mut [Arg<'_>]) -> Result<()> {
        self.take_finished_plan()?;
        if self.pending.is_some() {
            self.report.launches_before_plan += 1;
        }
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
        // Stage: allocate (re-preparing when a length or scalar changed),
        // then copy in.
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
                (Slot::Scalar(v), Arg::Scalar(s)) => {
                    if v.as_ref() != Some(s) {
                        *v = Some(*s);
                        self.runs = None;
                    }
                }
                (Slot::Staged(staging), _) => {
                    if let Some(bound) = bindable(&self.device, arg) {
                        if !matches!(staging, Staging::Bound(b) if *b == bound) {
                            self.runs = None;
                            *staging = Staging::Bound(bound);
                        }
                        continue;
                    }
                    if !matches!(staging, Staging::Own(b) if b.len() == len) {
                        self.runs = None;
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
        if self.runs.is_none() {
            self.runs = Some(self.prepare()?);
        }
        match self.runs.as_ref() {
            Some(Runs::Org(p)) => {
                p.run()?;
                p.check_and_clear_fault()?;
            }
            Some(Runs::Cf(c)) => {
                c.run()?;
                c.check()?;
            }
            Some(Runs::Cpu) => {
                let args = CpuArgs::new(self.spec, self.args(None)?)?;
                (self.cpu_run)(&args, self.n_tasks)?;
            }
            None => {}
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
        match &self.runs {
            Some(Runs::Org(p)) => p.run(),
            Some(Runs::Cf(c)) => c.run(),
            Some(Runs::Cpu) => {
                let args = CpuArgs::new(self.spec, self.args(None)?)?;
                (self.cpu_run)(&args, self.n_tasks)
            }
            None => Err(Error::invalid(format!(
                "kernel `{}`: the throttled handle has not launched yet",
                self.spec.name
            ))),
        }
    }

    /// The arguments of the launch over the original arrays (`None`) or of
    /// part `p` of the carried launch.
    fn args(&self, part: Option<usize>) -> Result<Vec<Arg<'_>>> {
        let missing = |i: usize| {
            Error::invalid(format!(
                "kernel `{}`: parameter `{}` has no array for this schedule",
                self.spec.name, self.spec.params[i].name
            ))
        };
        (0..self.spec.params.len())
            .map(|i| {
                let kind = self.spec.params[i].kind;
                Ok(match (&self.slots[i], part, &self.parts) {
                    (Slot::Scalar(v), ..) => Arg::Scalar(v.ok_or_else(|| missing(i))?),
                    (Slot::Staged(Staging::Own(b)), ..) => b.arg(kind),
                    (Slot::Staged(Staging::Bound(b)), ..) => {
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
                    (Slot::Staged(Staging::Empty), ..) => return Err(missing(i)),
                    (Slot::Shape(_), Some(p), Some(parts)) if i == self.roles.range => {
                        parts.ptrs[p].arg(kind)
                    }
                    (Slot::Shape(_), Some(_), Some(parts)) => parts
                        .fine
                        .iter()
                        .find(|(j, _)| *j == i)
                        .ok_or_else(|| missing(i))?
                        .1
                        .arg(kind),
                    (Slot::Shape(b), ..) => b.as_ref().ok_or_else(|| missing(i))?.arg(kind),
                })
            })
            .collect()
    }

    fn org(&self, dev: &CudaDevice) -> Result<Runs> {
        let args = self.args(None)?;
        Prepared::new_borrowing(
            dev,
            self.spec,
            &self.config,
            Tasks::All(self.n_tasks),
            &args,
        )
        .map(|p| Runs::Org(Box::new(p)))
    }

    fn cf(&self, dev: &CudaDevice) -> Result<Runs> {
        let n_parts = self.parts.as_ref().map_or(0, |p| p.ptrs.len());
        let parts = (0..n_parts)
            .map(|p| self.args(Some(p)))
            .collect::<Result<Vec<_>>>()?;
        CarriedRun::new(dev, self.spec, &self.config, self.n_tasks, &parts).map(Runs::Cf)
    }

    /// Prepares the chosen schedule; `auto` first times `org` and `cf` on
    /// the staged data and keeps the faster (each timing run computes the
    /// launch's result, which the caller's launch then computes once more).
    fn prepare(&mut self) -> Result<Runs> {
        let Some(dev) = self.device.cuda().cloned() else {
            return Ok(Runs::Cpu);
        };
        match self.report.chosen {
            ThrottlePolicy::Org => self.org(&dev),
            ThrottlePolicy::Cf => self.cf(&dev),
            _ => {
                let timer = crate::event_timer::EventTimer::new(&dev)?;
                let mut profile = Vec::new();
                let time = |runs: &Runs| -> Result<f64> {
                    let mut go = || match runs {
                        Runs::Org(p) => p.run(),
                        Runs::Cf(c) => c.run(),
                        Runs::Cpu => Ok(()),
                    };
                    go()?;
                    let mut ms: Vec<f64> = (0..AUTO_SAMPLES)
                        .map(|_| timer.time_ms(1, &mut go))
                        .collect::<Result<_>>()?;
                    ms.sort_by(f64::total_cmp);
                    Ok(ms[ms.len() / 2])
                };
                let org = self.org(&dev)?;
                let org_ms = time(&org)?;
                if let Runs::Org(p) = &org {
                    p.check_and_clear_fault()?;
                }
                profile.push((ThrottlePolicy::Org, org_ms));
                let cf = self.cf(&dev)?;
                let cf_ms = time(&cf)?;
                if let Runs::Cf(c) = &cf {
                    c.check()?;
                }
                profile.push((ThrottlePolicy::Cf, cf_ms));
                self.report.profile = profile;
                if cf_ms < org_ms {
                    self.report.chosen = ThrottlePolicy::Cf;
                    drop(org);
                    Ok(cf)
                } else {
                    self.report.chosen = ThrottlePolicy::Org;
                    drop(cf);
                    // The part-major copies are no longer needed.
                    self.parts = None;
                    Ok(org)
                }
            }
        }
    }
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

/// Timed runs per candidate of `auto` (median taken).
const AUTO_SAMPLES: usize = 5;

/// A cache-fit plan reorders the fine arrays by tuple id, which is the
/// fine-task index only when the range array tiles them from 0 in task
/// order: the work graph's own pointers.
fn check_tiles(
    spec: &KernelSpec,
    range: usize,
    bytes: &[u8],
    ty: ScalarType,
    graph: &WorkGraph,
) -> Result<()> {
    let size = ty.size();
    let ptr = graph.ptr();
    let tiles = bytes.len() >= ptr.len() * size
        && ptr.iter().enumerate().all(|(t, &p)| {
            let b = &bytes[t * size..(t + 1) * size];
            let v = match size {
                4 => u64::from(u32::from_ne_bytes(b.try_into().unwrap_or([0; 4]))),
                _ => u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])),
            };
            v == u64::from(p)
        });
    if tiles {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "kernel `{}`: its range array `{}` does not tile the fine arrays from 0 in task order (first entry 0, never decreasing), which a cache-fit plan needs; run it with policy org",
            spec.name, spec.params[range].name
        )))
    }
}

/// `src`'s elements of `size` bytes in the order `perm` gives (position
/// `i` takes element `perm[i]`), then the elements past `perm.len()`
/// unchanged (never read by the kernel's ranges).
fn permute_bytes(src: &[u8], size: usize, perm: &[u32]) -> Result<Vec<u8>> {
    let n = src.len() / size.max(1);
    if perm.len() > n {
        return Err(Error::invalid(format!(
            "a fine array of {n} elements is shorter than the {} fine tasks its kernel's ranges cover",
            perm.len()
        )));
    }
    warpfit_runtime::mem::check("the part-major copy of a fine array", src.len() as u64)?;
    let mut out = Vec::with_capacity(src.len());
    for &p in perm {
        let p = p as usize;
        out.extend_from_slice(&src[p * size..(p + 1) * size]);
    }
    out.extend_from_slice(&src[perm.len() * size..]);
    Ok(out)
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

/// An array of a scalar type the handle owns, erased to its bytes: device
/// memory on CUDA, 8-byte-aligned host cells on the CPU backend (so that
/// the twin can view them as any scalar type).
struct ErasedVec {
    storage: ErasedStorage,
    ty: ScalarType,
    len: usize,
}

enum ErasedStorage {
    Cuda {
        buffer: DeviceBuffer<u8>,
        device: CudaDevice,
    },
    Host(Box<[UnsafeCell<u64>]>),
}

impl ErasedVec {
    fn zeros(device: &Device, ty: ScalarType, len: usize) -> Result<Self> {
        let bytes = len.checked_mul(ty.size()).ok_or_else(|| {
            Error::invalid(format!(
                "{len} elements of {} overflow the address space",
                ty.rust_name()
            ))
        })?;
        let storage = match device.cuda() {
            Some(d) => ErasedStorage::Cuda {
                buffer: DeviceBuffer::zeros(d, bytes)?,
                device: d.clone(),
            },
            None => {
                warpfit_runtime::mem::check("a throttled launch's host array", bytes as u64)?;
                let words = bytes.div_ceil(8);
                let mut v = Vec::new();
                v.try_reserve_exact(words).map_err(|e| Error::Unavailable {
                    what: format!("{bytes} bytes of host memory"),
                    reason: e.to_string(),
                })?;
                v.extend((0..words).map(|_| UnsafeCell::new(0u64)));
                ErasedStorage::Host(v.into_boxed_slice())
            }
        };
        Ok(ErasedVec { storage, ty, len })
    }

    fn upload(device: &Device, bytes: &[u8], ty: ScalarType) -> Result<Self> {
        let mut v = Self::zeros(device, ty, bytes.len() / ty.size())?;
        v.write_bytes(bytes)?;
        Ok(v)
    }

    /// `values` as an array of `ty` (`u32` or `u64`, a range array's types).
    fn upload_u32_as(device: &Device, values: &[u32], ty: ScalarType) -> Result<Self> {
        let bytes: Vec<u8> = match ty.size() {
            4 => values.iter().flat_map(|v| v.to_ne_bytes()).collect(),
            _ => values
                .iter()
                .flat_map(|&v| u64::from(v).to_ne_bytes())
                .collect(),
        };
        Self::upload(device, &bytes, ty)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn host_ptr(cells: &[UnsafeCell<u64>]) -> *mut u8 {
        UnsafeCell::raw_get(cells.as_ptr()).cast::<u8>()
    }

    fn write_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let n = bytes.len().min(self.len * self.ty.size());
        match &mut self.storage {
            ErasedStorage::Cuda { buffer, device } => {
                let ptr = buffer.device_ptr(device);
                // SAFETY: `ptr` is this buffer's start and holds at least
                // `n` bytes; the copy is ordered on the device's stream
                // before any launch that reads it.
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(
                        ptr,
                        &bytes[..n],
                        device.stream().cu_stream(),
                    )
                }
                .map_err(cuda_err(format!("uploading {n} bytes")))?;
                device
                    .stream()
                    .synchronize()
                    .map_err(cuda_err("waiting for an upload"))
            }
            ErasedStorage::Host(cells) => {
                // SAFETY: the cells hold at least `n` bytes; `&mut self`
                // means no view of them is alive.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), Self::host_ptr(cells), n) };
                Ok(())
            }
        }
    }

    fn arg(&self, kind: ParamKind) -> Arg<'_> {
        let place = match &self.storage {
            ErasedStorage::Cuda { buffer, device } => Place::Cuda {
                ptr: buffer.device_ptr(device),
                device,
            },
            ErasedStorage::Host(cells) => Place::Host {
                addr: Self::host_ptr(cells) as usize,
            },
        };
        Arg::Resident(ResidentArray {
            kind,
            ty: self.ty,
            len: self.len,
            place,
        })
    }

    /// Overwrites the array with a host slice's elements (the handle uses
    /// `DeviceVec`s of its device in place, so any other array is a
    /// `DeviceVec` of another device: an error).
    fn copy_in(&mut self, device: &Device, arg: &Arg<'_>, name: &str) -> Result<()> {
        match arg {
            Arg::Input(s) => self.write_bytes(s.bytes),
            Arg::Output(s) => self.write_bytes(s.bytes),
            _ => Err(Error::invalid(format!(
                "argument `{name}` is a DeviceVec of another device than the throttled handle's ({})",
                device.backend_name()
            ))),
        }
    }

    /// Writes the array into `arg`, a host output slice, waiting for the
    /// device.
    fn copy_out(&self, device: &Device, arg: &mut Arg<'_>) -> Result<()> {
        let bytes = self.len * self.ty.size();
        match (arg, &self.storage) {
            (
                Arg::Output(s),
                ErasedStorage::Cuda {
                    buffer,
                    device: own,
                },
            ) => {
                // SAFETY: the buffer holds `bytes` bytes, the slice as many.
                unsafe {
                    cudarc::driver::result::memcpy_dtoh_async(
                        &mut s.bytes[..bytes],
                        buffer.device_ptr(own),
                        own.stream().cu_stream(),
                    )
                }
                .map_err(cuda_err(format!("downloading {bytes} bytes")))?;
                own.stream()
                    .synchronize()
                    .map_err(cuda_err("waiting for a download"))
            }
            (Arg::Output(s), ErasedStorage::Host(cells)) => {
                // SAFETY: as above; no launch runs during this call.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        Self::host_ptr(cells),
                        s.bytes.as_mut_ptr(),
                        bytes,
                    )
                };
                Ok(())
            }
            _ => Err(Error::invalid(format!(
                "an output of a throttled launch is not a host slice or a DeviceVec of {}",
                device.backend_name()
            ))),
        }
    }
}

//! The throttled handle, [`Throttled`]: the kernel, its options and roles,
//! the handle's arrays and its prepared schedule, made over a kernel's
//! shape arrays (at once, or with the plan made on a thread of its own),
//! and where its plan is ([`ThrottleStatus`]).

use crate::config::LaunchConfig;
use crate::driver::device::Device;
use crate::engines::carried_launch::CarriedRun;
use crate::launch::arg::Arg;
use crate::launch::cpu_args::CpuArgs;
use crate::launch::cuda_launch::CudaLaunch;
use crate::launch::device_vec::{Place, ResidentArray};
use crate::spec::{KernelSpec, ParamKind, ParamSpec, ScalarType};
use crate::throttle::device_layouts::{DeviceLayout, Space};
use crate::throttle::erased_vec::{ErasedVec, OwnedShape};
use crate::throttle::host_plan::{plan_on_host, HostPlan, PendingPlan, Shape};
use crate::throttle::layout_set::Layouts;
use crate::throttle::report::ThrottleReport;
use crate::throttle::roles::ThrottleRoles;
use crate::throttle::shape_checks::{check_policy, check_shape, check_slot_count, misplaced};
use crate::throttle::slots::{Slot, Staging};
use std::sync::Arc;
use warpfit_runtime::partition::WorkGraph;
use warpfit_runtime::schedule::{ThrottleOptions, ThrottlePolicy};
use warpfit_runtime::{Error, Result};

/// A kernel's launches over a cache-fit plan (see the module docs); made
/// by a `#[throttled]` kernel's generated `throttle`, which wraps it in a
/// typed handle.
pub struct Throttled {
    /// The prepared schedule: declared first, so dropped before the
    /// arrays whose device addresses it holds.
    pub(in crate::throttle) schedule: Option<Schedule>,
    /// The schedule prepared over other arrays before, and their key.
    pub(in crate::throttle) spare: Option<(Vec<u64>, Schedule)>,
    pub(in crate::throttle) device: Device,
    pub(in crate::throttle) spec: &'static KernelSpec,
    pub(in crate::throttle) config: LaunchConfig,
    pub(in crate::throttle) roles: ThrottleRoles,
    pub(in crate::throttle) options: ThrottleOptions,
    pub(in crate::throttle) n_tasks: usize,
    /// The gathered array's length the plan was made for.
    pub(in crate::throttle) gathered_len: usize,
    /// One per parameter.
    pub(in crate::throttle) slots: Vec<Slot>,
    /// Per-launch arrays in the remapped numbering, by parameter.
    pub(in crate::throttle) staged_r: Vec<(usize, ErasedVec)>,
    /// Whether the prepared schedule takes its per-launch arrays in the
    /// plan's numbering ([`Throttled::launch_in_plan_order`]).
    pub(in crate::throttle) plan_order: bool,
    /// What `schedule` was prepared over ([`Throttled::binding_key`]).
    pub(in crate::throttle) key: Vec<u64>,
    pub(in crate::throttle) layouts: Layouts,
    /// Launch options `auto` kept for a single-launch schedule under a
    /// wider warp budget: that schedule prepared again (over other arrays,
    /// or in plan order) runs under them too.
    pub(in crate::throttle) kept_configs: Vec<(ThrottlePolicy, LaunchConfig)>,
    /// The plan, once made.
    pub(in crate::throttle) plan: Option<HostPlan>,
    /// A plan being made on a CPU thread (pipelined planning).
    pub(in crate::throttle) pending: Option<PendingPlan>,
    pub(in crate::throttle) report: ThrottleReport,
    pub(in crate::throttle) cpu_run: CpuRunFn,
    /// The plan `auto` by the model chose (made on the device), kept for
    /// preparing again over other arrays.
    pub(in crate::throttle) device_choice: Option<crate::throttle::plan_choice::DevicePlan>,
    /// The host copy of a device plan's order, read back on the first
    /// [`Throttled::plan_order`] (`None` inside: the read failed).
    pub(in crate::throttle) device_order: std::sync::OnceLock<Option<Vec<u32>>>,
    /// The launch being prepared has run already: `auto`'s last timed run
    /// was of the schedule it kept, so its outputs hold the launch's result
    /// (taken by that launch, which then runs nothing more).
    pub(in crate::throttle) ran_while_choosing: bool,
    /// A 2-D kernel's column count (`columns.rs`): `n_tasks` counts rows,
    /// the launches run `n_tasks · k` flattened tasks, and a gathered
    /// element is a row of `k` values.
    pub(in crate::throttle) columns: Option<u64>,
    /// The level order's write beside the plan cache (waited for on drop).
    pub(in crate::throttle) order_write: crate::throttle::pending_write::PendingWrite,
}

/// The CPU twin over a launch's arguments (generated).
pub type CpuRunFn = fn(&CpuArgs<'_>, usize) -> Result<()>;

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
pub(in crate::throttle) struct Schedule {
    pub(in crate::throttle) policy: ThrottlePolicy,
    pub(in crate::throttle) space: Space,
    pub(in crate::throttle) runs: Runs,
    /// The layouts `runs` reads, kept alive for it (declared after it).
    pub(in crate::throttle) layouts: Vec<Arc<DeviceLayout>>,
}

pub(in crate::throttle) enum Runs {
    Single(Box<CudaLaunch>),
    Carried(CarriedRun),
    Cpu,
}

impl Runs {
    pub(in crate::throttle) fn run(&self) -> Result<()> {
        match self {
            Runs::Single(p) => p.run(),
            Runs::Carried(c) => c.run(),
            Runs::Cpu => Ok(()),
        }
    }

    pub(in crate::throttle) fn check(&self) -> Result<()> {
        match self {
            Runs::Single(p) => p.check_and_clear_fault(),
            Runs::Carried(c) => c.check(),
            Runs::Cpu => Ok(()),
        }
    }
}

/// The host planner was asked for without the work graph it plans.
fn missing_graph(spec: &KernelSpec) -> Error {
    Error::invalid(format!(
        "kernel `{}`: planning on the host needs the kernel's work graph",
        spec.name
    ))
}

/// A host array the throttled handle copies (a pipelined handle keeps it
/// until its plan is made): `Vec<T>` for any scalar `T`.
pub trait HostArray: Send + 'static {
    /// The elements' bytes.
    fn bytes(&self) -> &[u8];
    /// Their type.
    fn ty(&self) -> ScalarType;
}

impl<T: crate::spec::Scalar> HostArray for Vec<T> {
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

/// Work units per packed CTE warp of a task list the handle builds (the
/// budget CTE's automatic split uses on large launches).
pub(in crate::throttle) const LIST_BUDGET: u32 = 512;

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
        gathered_len: usize,
        graph: Option<&WorkGraph>,
        shape: &[Option<Arg<'_>>],
        cpu_run: CpuRunFn,
    ) -> Result<Self> {
        let parts = Parts {
            device,
            spec,
            roles,
            options,
            config,
            n_tasks,
            gathered_len,
            cpu_run,
        };
        parts.check_policy()?;
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
            // A 2-D kernel's plans are made on the device (`columns`).
            Some(dev) if spec.columns.is_none() && Self::plans_on_host(device, options) => {
                Some(plan_on_host(
                    spec,
                    roles,
                    options,
                    dev.l2_bytes() as u64,
                    graph.ok_or_else(|| missing_graph(spec))?,
                    &shape,
                )?)
            }
            _ => None,
        };
        let mut t = Self::with_slots(parts, &shape)?;
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
        gathered_len: usize,
        graph: Option<WorkGraph>,
        shape: Vec<Option<Box<dyn HostArray>>>,
        cpu_run: CpuRunFn,
    ) -> Result<Self> {
        let parts = Parts {
            device,
            spec,
            roles,
            options,
            config,
            n_tasks,
            gathered_len,
            cpu_run,
        };
        parts.check_policy()?;
        let borrowed = shape
            .iter()
            .map(|a| a.as_ref().map(|a| (a.bytes(), a.ty())))
            .collect();
        let checked = check_shape(spec, roles, borrowed)?;
        let mut t = Self::with_slots(parts, &checked)?;
        drop(checked);
        if let (Some(dev), true) = (device.cuda(), Self::plans_on_host(device, options)) {
            let graph = graph.ok_or_else(|| missing_graph(spec))?;
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

    /// Whether a handle on `device` under `options` plans on the host, from
    /// the kernel's work graph: a CUDA device and a policy other than `org`
    /// and `auto` by the model (which plans on the device).
    #[doc(hidden)]
    pub fn plans_on_host(device: &Device, options: &ThrottleOptions) -> bool {
        device.cuda().is_some()
            && options.policy != ThrottlePolicy::Org
            && !options.decides_by_model()
    }

    /// Whether generated `throttle` builds the kernel's work graph: where
    /// the host plans from it, and on the CPU backend, where building it
    /// checks every gathered index against the gathered length before any
    /// launch. `auto` by the model on CUDA does without (its plans are made
    /// on the device, which checks the indices it follows, and a launch
    /// reports an index out of range as a fault).
    #[doc(hidden)]
    pub fn needs_work_graph(device: &Device, options: &ThrottleOptions) -> bool {
        !(device.cuda().is_some() && options.decides_by_model())
    }

    /// The handle with its shape arrays uploaded as given and no plan: it
    /// runs `org`.
    fn with_slots(parts: Parts<'_>, shape: &Shape<'_>) -> Result<Self> {
        let Parts { device, spec, .. } = parts;
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
        Ok(Self::from_slots(parts, slots))
    }

    /// [`Throttled::new`] over shape arrays already on the handle's CUDA
    /// device (`DeviceVec`s, as `Arg::resident_input`), copied on the
    /// device: no host copy, no upload, no work graph. Only `auto` by the
    /// model plans without a work graph, so only it is accepted. Generated
    /// `throttle_resident` calls this.
    ///
    /// # Errors
    /// Another policy or a CUDA device other than the arrays', arguments
    /// that do not match the kernel, invalid options, device errors.
    #[allow(clippy::too_many_arguments)]
    #[doc(hidden)]
    pub fn resident(
        device: &Device,
        spec: &'static KernelSpec,
        roles: ThrottleRoles,
        options: &ThrottleOptions,
        config: &LaunchConfig,
        n_tasks: usize,
        gathered_len: usize,
        shape: &[Option<Arg<'_>>],
        cpu_run: CpuRunFn,
    ) -> Result<Self> {
        let parts = Parts {
            device,
            spec,
            roles,
            options,
            config,
            n_tasks,
            gathered_len,
            cpu_run,
        };
        let made_by = "throttle_resident";
        let dev = parts.check_on_device(shape.len(), made_by)?;
        let ty_of = |a: &&Arg<'_>| match a {
            Arg::Resident(r) => Some(r.ty),
            _ => None,
        };
        let keep = |p: &ParamSpec, a: &Arg<'_>| match a {
            Arg::Resident(ResidentArray {
                place: Place::Cuda { ptr, device: d },
                ty,
                len,
                ..
            }) if d.ordinal() == dev.ordinal() => {
                ErasedVec::copy_of_device(device, *ptr, *ty, *len)
            }
            Arg::Resident(ResidentArray {
                place: Place::Cuda { device: d, .. },
                ..
            }) => Err(Error::invalid(format!(
                "kernel `{}`: `{}` is on CUDA device {}, the handle on {}",
                spec.name,
                p.name,
                d.ordinal(),
                dev.ordinal()
            ))),
            _ => Err(Error::invalid(format!(
                "kernel `{}`: `{}` is not on a CUDA device",
                spec.name, p.name
            ))),
        };
        let shape = shape.iter().map(Option::as_ref);
        let slots = device_slots(spec, roles, shape, made_by, ty_of, keep)?;
        Ok(Self::from_slots(parts, slots))
    }

    /// [`Throttled::resident`] over shape arrays handed over by value
    /// (`DeviceVec`s of the handle's CUDA device), which the handle keeps
    /// as they are: no copy at all. Generated `throttle_owned` calls this.
    ///
    /// # Errors
    /// As [`Throttled::resident`]; an array not in the handle's GPU memory.
    #[allow(clippy::too_many_arguments)]
    #[doc(hidden)]
    pub fn owning(
        device: &Device,
        spec: &'static KernelSpec,
        roles: ThrottleRoles,
        options: &ThrottleOptions,
        config: &LaunchConfig,
        n_tasks: usize,
        gathered_len: usize,
        shape: Vec<Option<OwnedShape>>,
        cpu_run: CpuRunFn,
    ) -> Result<Self> {
        let parts = Parts {
            device,
            spec,
            roles,
            options,
            config,
            n_tasks,
            gathered_len,
            cpu_run,
        };
        let made_by = "throttle_owned";
        let dev = parts.check_on_device(shape.len(), made_by)?;
        let keep = |p: &ParamSpec, a: OwnedShape| {
            a.on_device(dev.ordinal()).map_err(|place| {
                Error::invalid(format!(
                    "kernel `{}`: `{}` is in {place}, the handle on {}",
                    spec.name,
                    p.name,
                    crate::launch::device_vec::cuda_name(dev)
                ))
            })
        };
        let ty_of = |a: &OwnedShape| Some(a.ty());
        let slots = device_slots(spec, roles, shape.into_iter(), made_by, ty_of, keep)?;
        Ok(Self::from_slots(parts, slots))
    }

    /// The handle over `slots`, with no plan.
    fn from_slots(parts: Parts<'_>, slots: Vec<Slot>) -> Self {
        let Parts {
            device,
            spec,
            roles,
            options,
            config,
            n_tasks,
            gathered_len,
            cpu_run,
        } = parts;
        Throttled {
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
            report: ThrottleReport::new(options.policy),
            cpu_run,
            device_choice: None,
            device_order: std::sync::OnceLock::new(),
            ran_while_choosing: false,
            columns: None,
            order_write: Default::default(),
        }
    }

    /// What planning and choosing found.
    pub fn report(&self) -> &ThrottleReport {
        &self.report
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

/// What every constructor of a handle is given besides its shape arrays
/// (the generated constructors' common arguments).
#[derive(Clone, Copy)]
struct Parts<'a> {
    device: &'a Device,
    spec: &'static KernelSpec,
    roles: ThrottleRoles,
    options: &'a ThrottleOptions,
    config: &'a LaunchConfig,
    n_tasks: usize,
    gathered_len: usize,
    cpu_run: CpuRunFn,
}

impl<'a> Parts<'a> {
    /// The policy and options checked against the kernel and its sizes.
    fn check_policy(&self) -> Result<()> {
        check_policy(
            self.spec,
            self.roles,
            self.options,
            self.n_tasks,
            self.gathered_len,
        )
    }

    /// What a handle over arrays already on the device needs: `auto` by
    /// the model on a CUDA device (the one returned), and a slot per
    /// parameter (`slots` given), besides the shape checks.
    fn check_on_device(
        &self,
        slots: usize,
        made_by: &str,
    ) -> Result<&'a crate::driver::cuda_device::CudaDevice> {
        self.check_policy()?;
        let spec = self.spec;
        let Some(dev) = self.device.cuda() else {
            return Err(Error::invalid(format!(
                "kernel `{}`: {made_by} takes arrays on a CUDA device; on the CPU use throttle",
                spec.name
            )));
        };
        // A 2-D kernel plans on the device under every policy it runs.
        if self.spec.columns.is_none() && Throttled::needs_work_graph(self.device, self.options) {
            return Err(Error::invalid(format!(
                "kernel `{}`: {made_by} plans on the device, which only auto by the model does (policy {}{}); use throttle, which plans on the host",
                spec.name,
                self.options.policy,
                if self.options.exhaustive { ", exhaustive" } else { "" }
            )));
        }
        check_slot_count(spec, slots)?;
        Ok(dev)
    }
}

/// The slots of a handle over shape arrays on the device, one entry of
/// `shape` per parameter (its count checked): a shape array of the
/// parameter's type (`ty_of`) kept as `keep` makes it, a scalar or a
/// per-launch array left for the launches; anything else is misplaced.
fn device_slots<A>(
    spec: &KernelSpec,
    roles: ThrottleRoles,
    shape: impl Iterator<Item = Option<A>>,
    made_by: &str,
    ty_of: impl Fn(&A) -> Option<ScalarType>,
    mut keep: impl FnMut(&ParamSpec, A) -> Result<ErasedVec>,
) -> Result<Vec<Slot>> {
    shape
        .zip(spec.params.iter())
        .enumerate()
        .map(|(i, (a, p))| {
            Ok(match (p.kind, a) {
                (ParamKind::Scalar, None) => Slot::Scalar(None),
                (_, None) if !roles.shapes(i) => Slot::Staged(Staging::Empty),
                (_, Some(a)) if roles.shapes(i) && ty_of(&a) == Some(p.ty) => {
                    Slot::Shape(Some(keep(p, a)?))
                }
                _ => return Err(misplaced(spec, roles, i, made_by, "a DeviceVec of")),
            })
        })
        .collect()
}

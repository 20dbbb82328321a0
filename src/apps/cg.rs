//! Conjugate gradient on a symmetric positive definite matrix, with every
//! vector and scalar on the device.
//!
//! An iteration is seven launches prepared once (SpMV `q = A·p`, the dot
//! product `pᵀq`, the update of `x` and `r` (and `z` with Jacobi), `rᵀz`,
//! with Jacobi `rᵀr`, the direction `p = z + β·p`, and keeping `rᵀz` for the
//! next iteration) and one small asynchronous download of the three scalars
//! `pᵀq`, `rᵀz`, `rᵀr`, which decide convergence and detect a breakdown. The
//! step sizes `α` and `β` are computed by the kernels from those scalars on
//! the device, and the host reads them a few iterations behind the launches,
//! so the device never waits for the host.
//!
//! With [`CgOrder::Levels`] the solver renumbers the matrix by
//! breadth-first levels (the Cuthill–McKee order from row 0), permutes its
//! vectors once and goes on in the new order; `x` comes back in the
//! caller's order. On CUDA the order is made on the device from the matrix
//! already there (`gpu::levels`) after the set-up, before the first
//! iteration. On the CPU backend it is made (`Remapping::levels`) on a
//! thread of its own while the first iterations run in the given order.
//! On a randomly numbered mesh this turns the SpMV's scattered reads of `p`
//! into reads of a few levels' width.

use super::kernels::{cg_direction, cg_publish, cg_step, cg_step_jacobi, copy, dot, permute, spmv};
use super::pipelined::{pipelined, slot_of, Probe, DEPTH};
use super::throttled::{SpmvThrottle, ThrottledRun};
use super::timing::Timings;
use crate::gpu::levels::{self, DeviceCsr, DeviceLevelOrder};
use crate::runtime::mem;
use crate::runtime::partition::Remapping;
use crate::runtime::sparse::mm::MmValue;
use crate::runtime::Csr;
use crate::Scalar;
use crate::{
    split_one_task, Device, DeviceVec, Error, LaunchConfig, OneTaskSplit, PreparedLaunch, Result,
    Segment, TaskList, ThrottleOptions,
};
use std::cell::OnceCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

/// The preconditioner of [`cg`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Preconditioner {
    /// Plain CG.
    #[default]
    None,
    /// Jacobi: `M = diag(A)`; needs a positive diagonal.
    Jacobi,
}

/// The numbering [`cg`] iterates in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CgOrder {
    /// The matrix's own.
    #[default]
    Given,
    /// Breadth-first levels (the Cuthill–McKee order from row 0). On CUDA
    /// the order is made on the device before the first iteration
    /// (`gpu::levels`), or on the host when the graph has more levels than
    /// `max(nnz / 512, 4096)` (a long diameter). On the CPU backend it is
    /// made on a thread of its own while the first iterations run in the
    /// given order (`Remapping::levels`). The switch renumbers the matrix
    /// and permutes the vectors once. For meshes and grids
    /// numbered without locality; the result is in the caller's order.
    Levels,
}

impl std::str::FromStr for CgOrder {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "given" => Ok(CgOrder::Given),
            "levels" => Ok(CgOrder::Levels),
            _ => Err(Error::invalid(format!(
                "unknown order `{}`: expected `given` or `levels`",
                crate::runtime::error::excerpt(s.as_bytes())
            ))),
        }
    }
}

/// What a renumbered run ([`CgOrder::Levels`]) did.
#[derive(Debug, Clone, PartialEq)]
pub struct RenumberedRun {
    /// Time of the level order: on CUDA, made on the device (the host
    /// waiting for it); on the CPU backend, on its thread.
    pub planning: Duration,
    /// Whether the order was made on the device (CUDA) rather than on the
    /// host.
    pub on_device: bool,
    /// Iterations enqueued in the given order before the switch.
    pub iterations_before: usize,
    /// Host time of the switch: the matrix renumbered (on CUDA on the
    /// device, waiting for it; on the CPU backend on the host) and the
    /// vectors' permutation enqueued.
    pub switch: Duration,
    /// The switch's steps and their host times: on CUDA the iterations
    /// before it waited for, the matrix renumbered, the vectors permuted
    /// (waited for), the SpMV over the renumbered matrix prepared.
    pub switch_steps: Vec<(&'static str, Duration)>,
    /// Where the order came from a throttled SpMV's `auto` and was left to
    /// the solve to renumber by (`ThrottleOptions::caller_renumbers`): the
    /// first renumbered SpMV timed against `org`'s timed run.
    pub confirmation: Option<OrderConfirmation>,
}

/// The level order `auto` left to CG, confirmed in a real iteration: the
/// first SpMV over the renumbered matrix timed (CUDA events) against the
/// throttled handle's timed run of `org`. Where it is not faster, the solve
/// goes back to the given order from the next iteration and the handle
/// (and its plan cache) back to `org`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrderConfirmation {
    /// The renumbered SpMV (ms).
    pub renumbered_ms: f64,
    /// `org`'s timed run in the handle's decision (ms).
    pub org_ms: f64,
    /// Whether the solve kept the level order.
    pub kept: bool,
}

/// When [`cg`] stops, and how it preconditions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CgOptions {
    /// Stop when the residual `‖r‖ ≤ tol·‖b‖` (the recurrence residual, as
    /// `scipy.sparse.linalg.cg` tests it).
    pub tol: f64,
    /// Stop after this many iterations, converged or not.
    pub max_iters: usize,
    /// The preconditioner.
    pub precond: Preconditioner,
    /// Cache-fit throttling of the SpMV `q = A·p` (the `spmv::f32` / `spmv::f64`
    /// throttled handle, planned on a CPU thread while the first iterations
    /// run unthrottled); `None`: unthrottled.
    pub throttle: Option<ThrottleOptions>,
    /// With `throttle` or a renumbering made on a CPU thread: wait for the
    /// plan before the first iteration instead of iterating without it
    /// meanwhile (an order made on CUDA always comes first).
    pub plan_first: bool,
    /// The numbering the iterations run in (a renumbering and `throttle`
    /// do not combine).
    pub order: CgOrder,
    /// For tests of the way back: a level order the throttled SpMV left to
    /// the solve counts as slower than `org` once timed, whatever the
    /// times, so that the solve goes back to the given order.
    #[doc(hidden)]
    pub reject_order: bool,
}

impl Default for CgOptions {
    fn default() -> Self {
        CgOptions {
            tol: 1e-6,
            max_iters: 1000,
            precond: Preconditioner::None,
            throttle: None,
            plan_first: false,
            order: CgOrder::Given,
            reject_order: false,
        }
    }
}

/// The outcome of [`cg`].
#[derive(Debug, Clone)]
pub struct CgResult<T> {
    /// The solution.
    pub x: Vec<T>,
    /// Iterations run.
    pub iterations: usize,
    /// `‖r‖ / ‖b‖` after the last iteration (the recurrence residual, which
    /// stops the iterations).
    pub relative_residual: f64,
    /// `‖b − A·x‖ / ‖b‖` of the returned `x`, on the host in f64
    /// ([`relative_residual`]): the recurrence residual drifts from it in
    /// low precision or on an ill-conditioned matrix.
    pub true_residual: f64,
    /// Whether both residuals reached `tol` (otherwise it stopped at
    /// `max_iters`, or the recurrence reached `tol` and the true residual
    /// did not, [`MAX_RESTARTS`] restarts later: the precision's limit).
    pub converged: bool,
    /// Restarts from the true residual (iterative refinement): a run whose
    /// recurrence residual reached `tol` before its true residual did
    /// solves `A·d = b − A·x` and adds `d`, at most [`MAX_RESTARTS`] times.
    pub restarts: usize,
    /// Set-up and per-iteration times.
    pub timings: Timings,
    /// What throttling did, when [`CgOptions::throttle`] asked for it.
    pub throttle: Option<ThrottledRun>,
    /// What the renumbering did, when [`CgOptions::order`] asked for one
    /// (`None` also when the run ended before the switch).
    pub renumbered: Option<RenumberedRun>,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The precisions [`cg`] runs in (`f32`, `f64`): each has its own kernels,
/// since the kernel language has no generics.
pub trait CgScalar: Scalar + MmValue + PartialOrd + std::fmt::Display + sealed::Sealed {
    /// The value as f64 (exact).
    fn to_f64(self) -> f64;
    /// `v` rounded to this type.
    fn from_f64(v: f64) -> Self;
    #[doc(hidden)]
    fn prepare_spmv<'a>(
        device: &Device,
        config: &LaunchConfig,
        rows: usize,
        a: &'a DeviceCsr<Self>,
        x: &'a DeviceVec<Self>,
        y: &'a DeviceVec<Self>,
    ) -> Result<PreparedLaunch<'a>>;
    /// The throttled SpMV's attribute defaults (`spmv::throttle_options`
    /// or `spmv::f64::throttle_options`).
    fn throttle_options() -> Result<ThrottleOptions>;
    #[doc(hidden)]
    fn throttle_spmv(
        device: &Device,
        options: &ThrottleOptions,
        a: &Csr<Self>,
    ) -> Result<Box<dyn SpmvThrottle<Self>>>;
    /// The throttled SpMV over the matrix already on the device (`auto` by
    /// the model on CUDA, which plans there).
    #[doc(hidden)]
    fn throttle_spmv_resident(
        device: &Device,
        options: &ThrottleOptions,
        a: &DeviceCsr<Self>,
        cols: usize,
    ) -> Result<Box<dyn SpmvThrottle<Self>>>;
    #[doc(hidden)]
    fn prepare_permute<'a>(
        device: &Device,
        config: &LaunchConfig,
        perm: &'a DeviceVec<u32>,
        src: &'a DeviceVec<Self>,
        out: &'a DeviceVec<Self>,
    ) -> Result<PreparedLaunch<'a>>;
    #[doc(hidden)]
    fn prepare_copy<'a>(
        device: &Device,
        config: &LaunchConfig,
        src: &'a DeviceVec<Self>,
        out: &'a DeviceVec<Self>,
    ) -> Result<PreparedLaunch<'a>>;
    #[doc(hidden)]
    fn prepare_dot<'a>(
        device: &Device,
        split: &'a OneTaskSplit,
        n: u32,
        x: &'a DeviceVec<Self>,
        y: &'a DeviceVec<Self>,
        out: &'a DeviceVec<Self>,
    ) -> Result<PreparedLaunch<'a>>;
    #[doc(hidden)]
    fn prepare_step<'a>(
        device: &Device,
        config: &LaunchConfig,
        v: &'a Vectors<Self>,
        parity: usize,
    ) -> Result<PreparedLaunch<'a>>;
    #[doc(hidden)]
    fn prepare_direction<'a>(
        device: &Device,
        config: &LaunchConfig,
        v: &'a Vectors<Self>,
        parity: usize,
    ) -> Result<PreparedLaunch<'a>>;
    #[doc(hidden)]
    fn prepare_publish<'a>(
        device: &Device,
        config: &LaunchConfig,
        v: &'a Vectors<Self>,
        parity: usize,
        slot: &'a TaskList,
        base: u32,
    ) -> Result<PreparedLaunch<'a>>;
}

/// CG's vectors and scalars on the device. `z` is `None` without a
/// preconditioner (then `z = r`), and so is `inv_diag`.
#[doc(hidden)]
#[derive(Debug)]
pub struct Vectors<T: Scalar> {
    pub n: usize,
    pub(crate) x: DeviceVec<T>,
    pub(crate) r: DeviceVec<T>,
    pub(crate) z: Option<DeviceVec<T>>,
    pub(crate) inv_diag: Option<DeviceVec<T>>,
    pub p: DeviceVec<T>,
    pub q: DeviceVec<T>,
    /// The iteration's scalars, slot 0: `pᵀq`, 1: `rᵀz`, 2: `rᵀr` (with a
    /// preconditioner); iteration `k` writes `dots[k % 2]` and reads the
    /// previous iteration's from the other (the set-up fills `dots[0]`).
    pub(crate) dots: [DeviceVec<T>; 2],
    /// Host-mapped: [`DEPTH`] slots of an iteration's three scalars, which
    /// the iteration's last launch writes and the host reads.
    pub hist: DeviceVec<T>,
    /// `(tol·‖b‖)²`: the step is a no-op once `rᵀr` is at most this.
    pub stop: T,
}

impl<T: Scalar> Vectors<T> {
    /// `z`: the preconditioned residual, or `r` itself without one.
    pub(crate) fn z(&self) -> &DeviceVec<T> {
        self.z.as_ref().unwrap_or(&self.r)
    }

    /// The scalars iteration `k` (of parity `k % 2`) writes, and those of
    /// the iteration before it.
    fn cur_prev(&self, parity: usize) -> (&DeviceVec<T>, &DeviceVec<T>) {
        (&self.dots[parity % 2], &self.dots[(parity + 1) % 2])
    }
}

/// The task lists of CG's reductions and publications, which its prepared
/// launches borrow.
#[doc(hidden)]
#[derive(Debug)]
pub struct CgLists {
    pq: OneTaskSplit,
    rz: OneTaskSplit,
    rr: OneTaskSplit,
    /// Per slot of `Vectors::hist`: tasks `3·slot .. 3·slot + 3`.
    publish: Vec<TaskList>,
}

impl CgLists {
    pub fn new(device: &Device, n: usize) -> Result<Self> {
        let publish = (0..DEPTH as u32)
            .map(|slot| {
                TaskList::new(
                    (3 * slot..3 * slot + 3)
                        .map(|t| Segment::new(t, 0, 0))
                        .collect(),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(CgLists {
            pq: split_one_task(device, PAP, 0..n)?,
            rz: split_one_task(device, RZ, 0..n)?,
            rr: split_one_task(device, RR, 0..n)?,
            publish,
        })
    }
}

/// One CG iteration's launches after its SpMV, for one parity of the
/// iteration count (which of `Vectors::dots` it writes).
pub struct CgIteration<'a> {
    pub dot_pq: PreparedLaunch<'a>,
    pub step: PreparedLaunch<'a>,
    pub dot_rz: PreparedLaunch<'a>,
    pub(crate) dot_rr: Option<PreparedLaunch<'a>>,
    pub direction: PreparedLaunch<'a>,
    /// Per slot of `Vectors::hist`.
    pub publish: Vec<PreparedLaunch<'a>>,
}

impl<'a> CgIteration<'a> {
    pub fn prepare<T: CgScalar>(
        device: &Device,
        config: &LaunchConfig,
        v: &'a Vectors<T>,
        lists: &'a CgLists,
        parity: usize,
    ) -> Result<Self> {
        let n32 = u32::try_from(v.n).map_err(|_| Error::invalid("cg: more than u32::MAX rows"))?;
        let (cur, _) = v.cur_prev(parity);
        Ok(CgIteration {
            dot_pq: T::prepare_dot(device, &lists.pq, n32, &v.p, &v.q, cur)?,
            step: T::prepare_step(device, config, v, parity)?,
            dot_rz: T::prepare_dot(device, &lists.rz, n32, &v.r, v.z(), cur)?,
            dot_rr: match v.z {
                Some(_) => Some(T::prepare_dot(device, &lists.rr, n32, &v.r, &v.r, cur)?),
                None => None,
            },
            direction: T::prepare_direction(device, config, v, parity)?,
            publish: lists
                .publish
                .iter()
                .zip(0u32..)
                .map(|(l, slot)| T::prepare_publish(device, config, v, parity, l, 3 * slot))
                .collect::<Result<Vec<_>>>()?,
        })
    }

    /// Enqueues the iteration after its SpMV, publishing into `slot`.
    pub fn run(&self, slot: usize) -> Result<()> {
        self.dot_pq.run()?;
        self.step.run()?;
        self.dot_rz.run()?;
        if let Some(l) = &self.dot_rr {
            l.run()?;
        }
        self.direction.run()?;
        self.publish
            .get(slot)
            .ok_or_else(|| Error::invalid(format!("cg: no publication slot {slot}")))?
            .run()
    }

    /// Every launch, for fault checks.
    pub fn launches(&self) -> impl Iterator<Item = &PreparedLaunch<'a>> {
        [&self.dot_pq, &self.step, &self.dot_rz]
            .into_iter()
            .chain(self.dot_rr.as_ref())
            .chain([&self.direction])
            .chain(&self.publish)
    }
}

/// Slots of `Vectors::dots`.
pub const PAP: usize = 0;
pub const RZ: usize = 1;
pub(crate) const RR: usize = 2;

/// `CgScalar` for `$t`: the `$t` instance of each generic kernel, and the
/// SpMV `$spmv`.
macro_rules! cg_scalar {
    ($t:ident) => {
        impl CgScalar for $t {
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn prepare_spmv<'a>(
                device: &Device,
                config: &LaunchConfig,
                rows: usize,
                a: &'a DeviceCsr<Self>,
                x: &'a DeviceVec<Self>,
                y: &'a DeviceVec<Self>,
            ) -> Result<PreparedLaunch<'a>> {
                spmv::$t::prepare(
                    device, config, rows, &a.row_ptr, &a.col_idx, &a.values, x, y,
                )
            }
            fn throttle_options() -> Result<ThrottleOptions> {
                spmv::$t::throttle_options()
            }
            fn throttle_spmv(
                device: &Device,
                options: &ThrottleOptions,
                a: &Csr<Self>,
            ) -> Result<Box<dyn SpmvThrottle<Self>>> {
                mem::check(
                    "the throttled handle's host copy of the matrix",
                    (4 * (a.nrows() as u64 + 1))
                        .saturating_add((4 + std::mem::size_of::<$t>() as u64) * a.nnz() as u64),
                )?;
                Ok(Box::new(spmv::$t::throttle_pipelined(
                    device,
                    options,
                    a.nrows(),
                    a.ncols(),
                    a.row_ptr().to_vec(),
                    a.col_idx().to_vec(),
                    a.values().to_vec(),
                )?))
            }
            fn throttle_spmv_resident(
                device: &Device,
                options: &ThrottleOptions,
                a: &DeviceCsr<Self>,
                cols: usize,
            ) -> Result<Box<dyn SpmvThrottle<Self>>> {
                Ok(Box::new(spmv::$t::throttle_resident(
                    device,
                    options,
                    a.row_ptr.len().saturating_sub(1),
                    cols,
                    &a.row_ptr,
                    &a.col_idx,
                    &a.values,
                )?))
            }
            fn prepare_permute<'a>(
                device: &Device,
                config: &LaunchConfig,
                perm: &'a DeviceVec<u32>,
                src: &'a DeviceVec<Self>,
                out: &'a DeviceVec<Self>,
            ) -> Result<PreparedLaunch<'a>> {
                permute::$t::prepare(device, config, perm.len(), perm, src, out)
            }
            fn prepare_copy<'a>(
                device: &Device,
                config: &LaunchConfig,
                src: &'a DeviceVec<Self>,
                out: &'a DeviceVec<Self>,
            ) -> Result<PreparedLaunch<'a>> {
                copy::$t::prepare(device, config, src.len(), src, out)
            }
            fn prepare_dot<'a>(
                device: &Device,
                split: &'a OneTaskSplit,
                n: u32,
                x: &'a DeviceVec<Self>,
                y: &'a DeviceVec<Self>,
                out: &'a DeviceVec<Self>,
            ) -> Result<PreparedLaunch<'a>> {
                dot::$t::prepare(device, &split.config, &split.tasks, n, x, y, out)
            }
            fn prepare_step<'a>(
                device: &Device,
                config: &LaunchConfig,
                v: &'a Vectors<Self>,
                parity: usize,
            ) -> Result<PreparedLaunch<'a>> {
                let (cur, prev) = v.cur_prev(parity);
                match (&v.z, &v.inv_diag) {
                    (Some(z), Some(inv_diag)) => cg_step_jacobi::$t::prepare(
                        device, config, v.n, prev, cur, v.stop, inv_diag, &v.p, &v.q, &v.x, &v.r, z,
                    ),
                    _ => cg_step::$t::prepare(
                        device, config, v.n, prev, cur, v.stop, &v.p, &v.q, &v.x, &v.r,
                    ),
                }
            }
            fn prepare_direction<'a>(
                device: &Device,
                config: &LaunchConfig,
                v: &'a Vectors<Self>,
                parity: usize,
            ) -> Result<PreparedLaunch<'a>> {
                let (cur, prev) = v.cur_prev(parity);
                cg_direction::$t::prepare(device, config, v.n, prev, cur, v.z(), &v.p)
            }
            fn prepare_publish<'a>(
                device: &Device,
                config: &LaunchConfig,
                v: &'a Vectors<Self>,
                parity: usize,
                slot: &'a TaskList,
                base: u32,
            ) -> Result<PreparedLaunch<'a>> {
                let (cur, _) = v.cur_prev(parity);
                cg_publish::$t::prepare(device, config, slot, base, cur, &v.hist)
            }
        }
    };
}

cg_scalar!(f32);
cg_scalar!(f64);

/// Solves `A·x = b` by conjugate gradient from `x = 0`, for a symmetric
/// positive definite `a`, on `device`.
///
/// # Errors
/// `a` empty or not square, `b` of the wrong length or not finite, `tol`
/// negative or not finite, with Jacobi a diagonal entry that is missing or
/// not positive, a breakdown (`pᵀA·p ≤ 0` or a residual that is no longer
/// finite: `a` is not symmetric positive definite, or too ill-conditioned for
/// the precision), device errors and kernel faults.
pub fn cg<T: CgScalar>(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<T>,
    b: &[T],
    opts: &CgOptions,
) -> Result<CgResult<T>> {
    cg_observed(device, config, a, b, opts, &mut |_, _| {})
}

/// [`cg`], calling `on_step(k, relative_residual)` after iteration `k`
/// (from 1), for progress reports.
pub fn cg_observed<T: CgScalar>(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<T>,
    b: &[T],
    opts: &CgOptions,
    on_step: &mut dyn FnMut(usize, f64),
) -> Result<CgResult<T>> {
    let n = check_inputs(a, b, opts)?;
    let setup_start = Instant::now();
    let b_norm = b
        .iter()
        .map(|&v| v.to_f64() * v.to_f64())
        .sum::<f64>()
        .sqrt();
    if !b_norm.is_finite() {
        return Err(Error::invalid(
            "cg: the right-hand side b has a non-finite norm",
        ));
    }
    if b_norm == 0.0 {
        // b = 0: x = 0 is exact, once the preconditioner asked for is
        // known to exist.
        if opts.precond == Preconditioner::Jacobi {
            inverse_diagonal(a)?;
        }
        let mut x = Vec::new();
        mem::try_reserve(&mut x, n, "the cg solution")?;
        x.resize(n, T::from_f64(0.0));
        return Ok(CgResult {
            x,
            iterations: 0,
            relative_residual: 0.0,
            true_residual: 0.0,
            converged: true,
            restarts: 0,
            timings: Timings::new(setup_start.elapsed(), super::IterationTimes::new()),
            throttle: None,
            renumbered: None,
        });
    }
    if opts.order != CgOrder::Given && opts.throttle.is_some() {
        return Err(Error::invalid(
            "cg: a renumbered run (order levels) and a throttled SpMV do not combine; pick one",
        ));
    }
    let first = solve_once(device, config, a, b, opts, on_step, b_norm, setup_start)?;
    refine(device, config, a, b, opts, on_step, b_norm, first)
}

/// Restarts after which a run whose recurrence residual reached `tol`
/// but whose true residual did not is reported as not converged.
pub const MAX_RESTARTS: usize = 3;

/// Iterative refinement: while the recurrence residual reached `tol` and
/// the true one did not (rounding drift: f32, an ill-conditioned matrix),
/// and iterations are left, solve `A·d = b − A·x` (the residual made on the
/// host in f64) to the tolerance that brings `b − A·x` to `tol·‖b‖`, and
/// add `d` to `x`. Each restart runs in the given order, unthrottled.
#[allow(clippy::too_many_arguments)]
fn refine<T: CgScalar>(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<T>,
    b: &[T],
    opts: &CgOptions,
    on_step: &mut dyn FnMut(usize, f64),
    b_norm: f64,
    mut result: CgResult<T>,
) -> Result<CgResult<T>> {
    while !result.converged
        && result.relative_residual <= opts.tol
        && result.iterations < opts.max_iters
        && result.restarts < MAX_RESTARTS
    {
        let r = residual_vector(a, &result.x, b)?;
        let r_norm = result.true_residual * b_norm;
        let sub = CgOptions {
            tol: (opts.tol * b_norm / r_norm).max(smallest_tol::<T>()),
            max_iters: opts.max_iters - result.iterations,
            throttle: None,
            plan_first: false,
            order: CgOrder::Given,
            ..*opts
        };
        let done = result.iterations;
        let scale = r_norm / b_norm;
        let d = solve_once(
            device,
            config,
            a,
            &r,
            &sub,
            &mut |k, rel| on_step(done + k, rel * scale),
            r_norm,
            Instant::now(),
        )?;
        for (x, d) in result.x.iter_mut().zip(&d.x) {
            *x = T::from_f64(x.to_f64() + d.to_f64());
        }
        result.iterations += d.iterations;
        result.relative_residual = d.relative_residual * scale;
        result.timings.setup += d.timings.setup;
        result.timings.iterations.append(&d.timings.iterations);
        result.true_residual = relative_residual(a, &result.x, b)?;
        result.converged = result.relative_residual <= opts.tol && result.true_residual <= opts.tol;
        result.restarts += 1;
    }
    Ok(result)
}

/// Row `r` of `A` times `x`, in f64.
fn row_times<T: CgScalar>(a: &Csr<T>, r: usize, x: &[T]) -> f64 {
    let (cols, vals) = a.row(r);
    cols.iter()
        .zip(vals)
        .map(|(&c, v)| v.to_f64() * x[c as usize].to_f64())
        .sum()
}

/// `b − A·x` on the host in f64, rounded to `T`.
fn residual_vector<T: CgScalar>(a: &Csr<T>, x: &[T], b: &[T]) -> Result<Vec<T>> {
    use rayon::prelude::*;
    let mut r = Vec::new();
    mem::try_reserve(&mut r, b.len(), "the cg residual for a restart")?;
    b.par_iter()
        .enumerate()
        .map(|(i, &bi)| T::from_f64(bi.to_f64() - row_times(a, i, x)))
        .collect_into_vec(&mut r);
    Ok(r)
}

/// One CG solve from `x = 0`, its result's `converged` confirmed by the
/// true residual.
#[allow(clippy::too_many_arguments)]
fn solve_once<T: CgScalar>(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<T>,
    b: &[T],
    opts: &CgOptions,
    on_step: &mut dyn FnMut(usize, f64),
    b_norm: f64,
    setup_start: Instant,
) -> Result<CgResult<T>> {
    // On the CPU backend the renumbering, like the throttled SpMV's plan
    // below, is made on a CPU thread while the set-up and the first
    // iterations go on (on CUDA it is made on the device, in `solve`).
    // A run that ends before the order is in stops the thread making it
    // rather than waiting for an order nobody uses.
    let cancel = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let on_host = opts.order == CgOrder::Levels && device.cuda().is_none();
        let levels = on_host.then(|| scope.spawn(|| LevelPlan::on_host(a, &cancel)));
        let result = solve(
            device,
            config,
            a,
            b,
            opts,
            on_step,
            b_norm,
            setup_start,
            levels,
        );
        cancel.store(true, Ordering::Relaxed);
        result
    })
}

/// A level renumbering, and the time it took.
struct LevelPlan {
    order: LevelOrder,
    planning: Duration,
}

/// Where a level order was made.
enum LevelOrder {
    /// On the host.
    Host(Remapping),
    /// On the CUDA device, from the matrix already there.
    Device(DeviceLevelOrder),
}

impl LevelPlan {
    /// The plan made on the host, or `None` when `cancel` was set before
    /// it was made.
    fn on_host<T>(a: &Csr<T>, cancel: &AtomicBool) -> Result<Option<Self>> {
        let t = Instant::now();
        let Some(remapping) = Remapping::levels_unless(a, cancel)? else {
            return Ok(None);
        };
        Ok(Some(LevelPlan {
            order: LevelOrder::Host(remapping),
            planning: t.elapsed(),
        }))
    }

    /// The plan made on the CUDA device `matrix` lives on (waits for it),
    /// or on the host when the device would take more than
    /// [`device_round_budget`] rounds (a graph of long diameter).
    fn on_device<T: Scalar>(device: &Device, a: &Csr<T>, matrix: &DeviceCsr<T>) -> Result<Self> {
        let t = Instant::now();
        let budget = device_round_budget(a.nnz());
        let order = match levels::level_order_within(
            device,
            &matrix.row_ptr,
            &matrix.col_idx,
            0,
            budget,
        )? {
            Some(order) => LevelOrder::Device(order),
            None => LevelOrder::Host(Remapping::levels(a)?),
        };
        Ok(LevelPlan {
            order,
            planning: t.elapsed(),
        })
    }

    fn made_on_device(&self) -> bool {
        matches!(self.order, LevelOrder::Device(_))
    }

    fn join(handle: ScopedJoinHandle<'_, Result<Option<Self>>>) -> Result<Option<Self>> {
        handle
            .join()
            .map_err(|_| Error::invalid("cg: the thread making the level order panicked"))?
    }
}

/// Rounds the device level order may take before the host makes the order
/// instead. The device spends a round per level, tens of microseconds each,
/// the host tens of nanoseconds per edge (BENCHMARKS.md, "Tuning constants:
/// history"). So past `nnz / 512` rounds the host is likely the faster, and
/// a few thousand rounds are always allowed: meshes and grids of any size
/// fit them, a path does not.
fn device_round_budget(nnz: usize) -> usize {
    (nnz / 512).max(4096)
}

/// The level order of a renumbered run until the switch takes it: the
/// thread making it, then the plan (both `None` without a renumbering).
struct PendingLevels<'s> {
    thread: Option<ScopedJoinHandle<'s, Result<Option<LevelPlan>>>>,
    ready: Option<LevelPlan>,
}

impl<'s> PendingLevels<'s> {
    /// With `plan_first`, waits for the plan.
    fn new(
        thread: Option<ScopedJoinHandle<'s, Result<Option<LevelPlan>>>>,
        plan_first: bool,
    ) -> Result<Self> {
        Ok(match (thread, plan_first) {
            (Some(h), true) => PendingLevels {
                thread: None,
                ready: LevelPlan::join(h)?,
            },
            (thread, _) => PendingLevels {
                thread,
                ready: None,
            },
        })
    }

    /// The plan, once, as soon as it is made (without waiting for it).
    fn take_ready(&mut self) -> Result<Option<LevelPlan>> {
        if self.thread.as_ref().is_some_and(|h| h.is_finished()) {
            self.ready = self
                .thread
                .take()
                .map(LevelPlan::join)
                .transpose()?
                .flatten();
        }
        Ok(self.ready.take())
    }
}

/// The host's test of an iteration's scalars `dots` (read `done`
/// iterations in): a breakdown is an error (after the launches' own
/// faults), otherwise the relative residual and whether it converged.
fn inspect_step<T: CgScalar>(
    done: usize,
    dots: &[T],
    v: &Vectors<T>,
    b_norm: f64,
    launches: &[&PreparedLaunch<'_>],
) -> Result<(f64, bool)> {
    let pap = dots[PAP].to_f64();
    let rr = dots[if v.z.is_some() { RR } else { RZ }];
    // A NaN is a breakdown too: reported, never returned as a result.
    if pap.is_nan() || pap <= 0.0 {
        check_faults(launches)?;
        return Err(Error::invalid(format!(
            "cg broke down at iteration {done}: pᵀA·p = {pap:.3e} is not positive, so the \
             matrix is not symmetric positive definite{}",
            ill_conditioned_hint::<T>()
        )));
    }
    if !rr.to_f64().is_finite() {
        check_faults(launches)?;
        return Err(Error::invalid(format!(
            "cg broke down at iteration {done}: the residual norm is {rr}{}",
            ill_conditioned_hint::<T>()
        )));
    }
    Ok((rr.to_f64().sqrt() / b_norm, rr <= v.stop))
}

/// The renumbered matrix on the device, and the way back from its order.
struct Renumbered<T: Scalar> {
    matrix: DeviceCsr<T>,
    /// `position[old] = new`: `x` goes back through it.
    position: DeviceVec<u32>,
}

/// Renumbers `matrix` (`a` on the device) by `plan` and permutes CG's
/// vectors into the new order (through `v.q`, which every iteration
/// rewrites before reading). On CUDA the rows are copied on the device
/// (`gpu::levels::renumber`); the CPU backend's arrays are host memory,
/// renumbered there. Enqueued behind the iterations before it.
fn switch_to<T: CgScalar>(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<T>,
    matrix: &DeviceCsr<T>,
    v: &Vectors<T>,
    plan: LevelPlan,
    steps: &mut Vec<(&'static str, Duration)>,
) -> Result<Renumbered<T>> {
    let mut step = Instant::now();
    let mut lap = |name: &'static str, steps: &mut Vec<_>| {
        steps.push((name, step.elapsed()));
        step = Instant::now();
    };
    // The iterations enqueued before, waited for apart from the switch's
    // own work (the renumbering waits for the device anyway).
    device.synchronize()?;
    lap("waited for the iterations before", steps);
    let (perm, position, remapping) = match plan.order {
        LevelOrder::Device(order) => (order.order, order.position, None),
        LevelOrder::Host(r) => (
            device.upload(r.task_perm())?,
            device.upload(r.task_inv())?,
            Some(r),
        ),
    };
    let renumbered = match (device.cuda(), remapping) {
        (None, Some(r)) => DeviceCsr::upload(device, &r.apply_csr(a)?)?,
        _ => levels::renumber(device, &perm, &position, matrix)?,
    };
    lap("matrix renumbered", steps);
    permute_vectors(device, config, v, &perm)?;
    lap("vectors permuted", steps);
    Ok(Renumbered {
        matrix: renumbered,
        position,
    })
}

/// CG's vectors gathered through `through` (`vec[i] = vec[through[i]]`,
/// by way of `v.q`, which every iteration rewrites before reading): into
/// a new order through its `order`, back through its `position`.
fn permute_vectors<T: CgScalar>(
    device: &Device,
    config: &LaunchConfig,
    v: &Vectors<T>,
    through: &DeviceVec<u32>,
) -> Result<()> {
    let vectors = [
        Some(&v.x),
        Some(&v.r),
        Some(&v.p),
        v.z.as_ref(),
        v.inv_diag.as_ref(),
    ];
    // Prepared first, then enqueued back to back (stream order keeps each
    // gather before its copy back, and that before the next gather into
    // `q`), then waited for once.
    let mut launches = Vec::new();
    for vec in vectors.into_iter().flatten() {
        launches.push(T::prepare_permute(device, config, through, vec, &v.q)?);
        launches.push(T::prepare_copy(device, config, &v.q, vec)?);
    }
    for l in &launches {
        l.run()?;
    }
    for l in &launches {
        l.check()?;
    }
    Ok(())
}

/// `org`'s time in the throttled SpMV's decision, where it timed `org`
/// and left the level order to the caller (`ThrottleOptions::caller_renumbers`):
/// what the solve's renumbered SpMV must beat. `None` for an order read
/// from the plan cache (confirmed when it was decided).
fn org_timed_ms(r: &crate::ThrottleReport) -> Option<f64> {
    r.model
        .as_ref()?
        .timed
        .iter()
        .find(|(p, _)| *p == crate::DevicePlan::Org)
        .map(|(_, ms)| *ms)
}

/// The first renumbered SpMV `l` run and timed on the device (CUDA
/// events), against `org`'s timed run: the order's confirmation.
fn confirm_order(
    device: &Device,
    l: &PreparedLaunch<'_>,
    org_ms: f64,
    reject: bool,
) -> Result<OrderConfirmation> {
    let renumbered_ms = match device.cuda() {
        Some(cuda) => {
            crate::__private::EventTimer::events_only(cuda)?.time_ms(1, &mut || l.run())?
        }
        // The CPU backend's launches return when done.
        None => {
            let t = Instant::now();
            l.run()?;
            t.elapsed().as_secs_f64() * 1e3
        }
    };
    Ok(OrderConfirmation {
        renumbered_ms,
        org_ms,
        kept: renumbered_ms < org_ms && !reject,
    })
}

/// Prepares the renumbering's kernels once over one-element arrays, so
/// that compiling them (on CUDA) belongs to the set-up, not to the switch.
fn compile_renumbering<T: CgScalar>(device: &Device, config: &LaunchConfig) -> Result<()> {
    let perm = device.alloc::<u32>(1)?;
    let (src, out) = (device.alloc::<T>(1)?, device.alloc::<T>(1)?);
    T::prepare_permute(device, config, &perm, &src, &out)?;
    T::prepare_copy(device, config, &src, &out)?;
    if device.cuda().is_some() {
        levels::load(device)?;
    }
    Ok(())
}

/// [`cg_observed`] after its checks, with the level order's thread when
/// one was asked for.
#[allow(clippy::too_many_arguments)]
fn solve<T: CgScalar>(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<T>,
    b: &[T],
    opts: &CgOptions,
    on_step: &mut dyn FnMut(usize, f64),
    b_norm: f64,
    setup_start: Instant,
    levels: Option<ScopedJoinHandle<'_, Result<Option<LevelPlan>>>>,
) -> Result<CgResult<T>> {
    let n = b.len();
    let (mut throttled, matrix) = upload_with_throttle(device, a, opts.throttle.as_ref())?;
    if let (Some(t), true) = (&mut throttled, opts.plan_first) {
        t.wait_for_plan()?;
    }
    let mut levels = PendingLevels::new(levels, opts.plan_first)?;
    let mut planned_from = None;
    let v = Vectors::start(device, a, b, opts, b_norm)?;
    let lists = CgLists::new(device, n)?;
    let spmv = T::prepare_spmv(device, config, n, &matrix, &v.p, &v.q)?;
    // The renumbering's kernels are compiled (or loaded from the kernel
    // cache) with the rest: for the level order asked for, and for one a
    // throttled SpMV's `auto` may leave to the solve (on CUDA).
    let may_renumber = opts.order == CgOrder::Levels
        || (throttled.is_some()
            && device.cuda().is_some()
            && opts.throttle.is_some_and(|t| t.decides_by_model()));
    if may_renumber {
        compile_renumbering::<T>(device, config)?;
    }
    let by_parity = [
        CgIteration::prepare(device, config, &v, &lists, 0)?,
        CgIteration::prepare(device, config, &v, &lists, 1)?,
    ];
    let launches: Vec<&PreparedLaunch<'_>> = std::iter::once(&spmv)
        .chain(by_parity.iter().flat_map(CgIteration::launches))
        .collect();
    // r₀ᵀz₀ (and with Jacobi r₀ᵀr₀) into `dots[0]`, the scalars of the
    // "iteration" before the first.
    by_parity[0].dot_rz.run()?;
    if let Some(dot_rr) = &by_parity[0].dot_rr {
        dot_rr.run()?;
    }
    device.synchronize()?;
    check_faults(&launches)?;
    let setup = setup_start.elapsed();
    // On CUDA the order is made on the device, now (or on the host when the
    // graph has too many levels for the device): the first iteration
    // switches to it.
    if opts.order == CgOrder::Levels && device.cuda().is_some() {
        levels.ready = Some(LevelPlan::on_device(device, a, &matrix)?);
    }
    // The renumbered matrix (set once, at the switch) and the SpMV over it.
    let renumbered: OnceCell<Renumbered<T>> = OnceCell::new();
    let mut switch = OrderSwitch::new(&renumbered);
    // The throttled SpMV chose the level order and the solve switched to it.
    let mut throttled_choice_made = false;

    // Each iteration publishes its scalars into a host-mapped slot, read
    // `DEPTH` iterations behind the launches: the iterations enqueued past
    // the converged one find `rᵀr ≤ stop` and leave `x` as it is (see
    // `cg_step`), so the host's test below, made on the same values in
    // the same precision, agrees with the device's.
    let mut relative_residual = 1.0;
    let mut converged = opts.tol >= 1.0;
    let max_iters = if converged { 0 } else { opts.max_iters };
    let rounds = pipelined(
        device,
        Probe::Mapped {
            slots: &v.hist,
            len: 3,
        },
        DEPTH,
        max_iters,
        &mut |k| {
            if switch.go_back_if_it_lost(device, config, &v)? {
                if let Some(t) = throttled.as_mut() {
                    t.reject_level_order()?;
                }
            }
            if let Some(plan) = levels.take_ready()? {
                let org_ms = throttled
                    .as_ref()
                    .filter(|_| throttled_choice_made)
                    .and_then(|t| org_timed_ms(t.report()));
                switch.switch(device, config, (a, &matrix), &v, plan, k, org_ms)?;
            }
            if switch.run_spmv(device, opts.reject_order)? {
                if throttled_choice_made {
                    ThrottledRun::note(&mut planned_from, k - 1, true);
                }
            } else if let Some(t) = throttled.as_mut() {
                let before = t.report().launches_before_plan;
                t.enqueue(&v.p, &v.q)?;
                let planned = t.report().launches_before_plan == before;
                ThrottledRun::note(&mut planned_from, k - 1, planned);
                if !throttled_choice_made {
                    if let Some(plan) = chosen_level_order(device, a, &matrix, t.as_ref())? {
                        throttled_choice_made = true;
                        levels.ready = Some(plan);
                    }
                }
            } else {
                spmv.run()?;
            }
            by_parity[k % 2].run(slot_of(k, DEPTH))
        },
        &mut |done, dots| {
            (relative_residual, converged) = inspect_step(done, dots, &v, b_norm, &launches)?;
            on_step(done, relative_residual);
            Ok(converged)
        },
    )?;
    let done = rounds.inspected;
    let iterations = rounds.times;
    check_faults(&launches)?;
    if let Some(l) = &switch.spmv {
        l.check()?;
    }
    if let Some(t) = &throttled {
        t.check()?;
    }
    let x = solution_in_given_order(device, config, switch.renumbered_at_end(), &v)?;
    // The recurrence residual is confirmed by the true one.
    let true_residual = self::relative_residual(a, &x, b)?;
    let converged = converged && true_residual <= opts.tol;
    // A plan still being made when the run ended is cancelled by the
    // caller (`cg_observed`), whose scope then joins its thread.
    Ok(CgResult {
        x,
        iterations: done,
        relative_residual,
        true_residual,
        converged,
        restarts: 0,
        timings: Timings::new(setup, iterations),
        throttle: throttled.map(|t| ThrottledRun {
            report: t.report().clone(),
            status: t.status(),
            renumbered: false,
            first_steps: Vec::new(),
            planned_from,
        }),
        renumbered: switch.report,
    })
}

/// The solve's move to a level order, and where the throttled SpMV left
/// the order to it, the order's confirmation and the way back.
struct OrderSwitch<'a, T: CgScalar> {
    /// The renumbered matrix (set once, at the switch).
    renumbered: &'a OnceCell<Renumbered<T>>,
    /// The SpMV over it, while the solve runs in the level order.
    spmv: Option<PreparedLaunch<'a>>,
    report: Option<RenumberedRun>,
    /// `org`'s timed run, while the first renumbered SpMV is still to be
    /// timed against it.
    to_confirm: Option<f64>,
}

impl<'a, T: CgScalar> OrderSwitch<'a, T> {
    fn new(renumbered: &'a OnceCell<Renumbered<T>>) -> Self {
        OrderSwitch {
            renumbered,
            spmv: None,
            report: None,
            to_confirm: None,
        }
    }

    /// The first renumbered SpMV lost to `org`: the solve goes back (or
    /// went back) to the given order.
    fn lost(&self) -> bool {
        self.report
            .as_ref()
            .and_then(|r| r.confirmation)
            .is_some_and(|c| !c.kept)
    }

    /// Renumbers the matrix and the vectors by `plan` before iteration `k`
    /// (from 1) and prepares the SpMV over the renumbered matrix; its first
    /// run is timed against `org_ms` where that is given (an order the
    /// throttled SpMV left to the solve).
    #[allow(clippy::too_many_arguments)]
    fn switch(
        &mut self,
        device: &Device,
        config: &LaunchConfig,
        (a, matrix): (&Csr<T>, &DeviceCsr<T>),
        v: &'a Vectors<T>,
        plan: LevelPlan,
        k: usize,
        org_ms: Option<f64>,
    ) -> Result<()> {
        let t = Instant::now();
        let (planning, on_device) = (plan.planning, plan.made_on_device());
        let mut switch_steps = Vec::new();
        let r = switch_to(device, config, a, matrix, v, plan, &mut switch_steps)?;
        let r = self.renumbered.get_or_init(|| r);
        let step = Instant::now();
        self.spmv = Some(T::prepare_spmv(
            device,
            config,
            v.q.len(),
            &r.matrix,
            &v.p,
            &v.q,
        )?);
        switch_steps.push(("SpMV prepared", step.elapsed()));
        self.report = Some(RenumberedRun {
            planning,
            on_device,
            // Rounds count from 1.
            iterations_before: k - 1,
            switch: t.elapsed(),
            switch_steps,
            confirmation: None,
        });
        self.to_confirm = org_ms;
        Ok(())
    }

    /// Runs the SpMV over the renumbered matrix where the solve is in the
    /// level order (the first one timed against `org` where asked; with
    /// `reject`, counted as slower whatever the times): whether it ran.
    fn run_spmv(&mut self, device: &Device, reject: bool) -> Result<bool> {
        let Some(l) = &self.spmv else {
            return Ok(false);
        };
        match self.to_confirm.take() {
            Some(org_ms) => {
                let c = confirm_order(device, l, org_ms, reject)?;
                if let Some(r) = self.report.as_mut() {
                    r.confirmation = Some(c);
                }
            }
            None => l.run()?,
        }
        Ok(true)
    }

    /// Where the first renumbered SpMV lost to `org`: the vectors back in
    /// the given order and the renumbered SpMV dropped, before the next
    /// iteration. Whether it went back (the caller puts the throttled SpMV
    /// back on `org`).
    fn go_back_if_it_lost(
        &mut self,
        device: &Device,
        config: &LaunchConfig,
        v: &Vectors<T>,
    ) -> Result<bool> {
        if !self.lost() || self.spmv.is_none() {
            return Ok(false);
        }
        if let Some(r) = self.renumbered.get() {
            permute_vectors(device, config, v, &r.position)?;
        }
        self.spmv = None;
        Ok(true)
    }

    /// The renumbering the solution goes back through at the end: none
    /// where the solve never left the given order or went back to it.
    fn renumbered_at_end(&self) -> Option<&'a Renumbered<T>> {
        self.renumbered.get().filter(|_| !self.lost())
    }
}

/// When `auto` by the model chose the level order for the throttled SpMV
/// `t`, that order as CG's plan: the whole solve switches to it from the
/// next iteration, as with `CgOrder::Levels` (the vectors renumbered once,
/// not permuted around every SpMV). The handle's own order is copied on the
/// device, not made a second time.
fn chosen_level_order<T: CgScalar>(
    device: &Device,
    a: &Csr<T>,
    matrix: &DeviceCsr<T>,
    t: &dyn SpmvThrottle<T>,
) -> Result<Option<LevelPlan>> {
    let r = t.report();
    if r.model.is_none()
        || r.remap_order != Some(crate::RemapOrder::Levels)
        || device.cuda().is_none()
    {
        return Ok(None);
    }
    t.check()?;
    let started = Instant::now();
    Ok(Some(match t.device_level_order()? {
        Some(order) => LevelPlan {
            order: LevelOrder::Device(order),
            planning: started.elapsed(),
        },
        None => LevelPlan::on_device(device, a, matrix)?,
    }))
}

/// The matrix uploaded, and the throttled SpMV `throttle` asks for. A
/// policy planned on the host starts first, so that its CPU thread works
/// while the set-up and the first iterations go on; on CUDA `auto` by the
/// model plans on the device, over the matrix once it is there.
#[allow(clippy::type_complexity)]
fn upload_with_throttle<T: CgScalar>(
    device: &Device,
    a: &Csr<T>,
    throttle: Option<&ThrottleOptions>,
) -> Result<(Option<Box<dyn SpmvThrottle<T>>>, DeviceCsr<T>)> {
    let on_device = |t: &&ThrottleOptions| !crate::Throttled::needs_work_graph(device, t);
    let host_planned = throttle
        .filter(|t| !on_device(t))
        .map(|t| T::throttle_spmv(device, t, a))
        .transpose()?;
    let matrix = DeviceCsr::upload(device, a)?;
    let throttled = match throttle.filter(on_device) {
        // The solve renumbers itself by a level order `auto` chooses
        // (`chosen_level_order`): the handle need not lay one out.
        Some(t) => Some(T::throttle_spmv_resident(
            device,
            &t.with_caller_renumbers(true),
            &matrix,
            a.ncols(),
        )?),
        None => host_planned,
    };
    Ok((throttled, matrix))
}

/// The solution `x` in the matrix's own order: as it is, or permuted back
/// from a renumbered run's (`x_old[i] = x_new[position[i]]`, by way of `q`,
/// free after the last iteration).
fn solution_in_given_order<T: CgScalar>(
    device: &Device,
    config: &LaunchConfig,
    renumbered: Option<&Renumbered<T>>,
    v: &Vectors<T>,
) -> Result<Vec<T>> {
    match renumbered {
        Some(r) => {
            let back = T::prepare_permute(device, config, &r.position, &v.x, &v.q)?;
            back.run()?;
            back.check()?;
            v.q.to_vec()
        }
        None => v.x.to_vec(),
    }
}

impl<T: CgScalar> Vectors<T> {
    /// CG's start on `device`: `x = 0`, `r = b`, `z = M⁻¹·r`, `p = z`, the
    /// update frozen once `rᵀr ≤ (tol·‖b‖)²`.
    pub fn start(
        device: &Device,
        a: &Csr<T>,
        b: &[T],
        opts: &CgOptions,
        b_norm: f64,
    ) -> Result<Self> {
        let inv_diag = match opts.precond {
            Preconditioner::None => None,
            Preconditioner::Jacobi => Some(inverse_diagonal(a)?),
        };
        let z0: Vec<T> = match &inv_diag {
            None => b.to_vec(),
            Some(d) => b
                .iter()
                .zip(d)
                .map(|(&b, &d)| T::from_f64(b.to_f64() * d.to_f64()))
                .collect(),
        };
        Ok(Vectors {
            n: b.len(),
            x: device.alloc::<T>(b.len())?,
            r: device.upload(b)?,
            z: match inv_diag {
                Some(_) => Some(device.upload(&z0)?),
                None => None,
            },
            inv_diag: inv_diag.as_deref().map(|d| device.upload(d)).transpose()?,
            p: device.upload(&z0)?,
            q: device.alloc::<T>(b.len())?,
            dots: [device.alloc::<T>(3)?, device.alloc::<T>(3)?],
            hist: device.alloc_mapped::<T>(3 * DEPTH)?,
            stop: T::from_f64((opts.tol * b_norm).powi(2)),
        })
    }
}

/// `a` square and non-empty, `b` of its size, `tol` usable, room for the
/// start vectors' host copies; the size `n`.
fn check_inputs<T: CgScalar>(a: &Csr<T>, b: &[T], opts: &CgOptions) -> Result<usize> {
    let n = a.nrows();
    if n != a.ncols() || n == 0 {
        return Err(Error::invalid(format!(
            "cg needs a non-empty square matrix, got {} x {}",
            a.nrows(),
            a.ncols()
        )));
    }
    if b.len() != n {
        return Err(Error::length("cg: right-hand side b (= rows)", n, b.len()));
    }
    if !(opts.tol.is_finite() && opts.tol >= 0.0) {
        return Err(Error::invalid(format!(
            "cg: tol must be a finite number ≥ 0, got {}",
            opts.tol
        )));
    }
    let floor = smallest_tol::<T>();
    if opts.tol > 0.0 && opts.tol < floor {
        return Err(Error::invalid(format!(
            "cg: tol {:e} is below the smallest relative residual {} arithmetic can reach, {floor:.1e} \
             (8 units in the last place); raise it, solve in f64, or give 0 to run max_iters iterations",
            opts.tol,
            T::TYPE.rust_name()
        )));
    }
    // Host copies made below: z0 and, with Jacobi, 1 / diag(A).
    mem::check(
        "the cg start vectors",
        (2 * n as u64).saturating_mul(T::TYPE.size() as u64),
    )?;
    Ok(n)
}

/// Reports the first kernel fault of the launches run so far, if any.
fn check_faults(launches: &[&PreparedLaunch<'_>]) -> Result<()> {
    launches.iter().try_for_each(|l| l.check())
}

fn ill_conditioned_hint<T: CgScalar>() -> &'static str {
    if T::TYPE.size() == 4 {
        " (or too ill-conditioned for f32: try f64)"
    } else {
        ""
    }
}

/// `1 / a(i, i)` for every row (duplicates of the diagonal entry summed), or
/// an error naming the first row whose diagonal is missing or not positive.
fn inverse_diagonal<T: CgScalar>(a: &Csr<T>) -> Result<Vec<T>> {
    let mut inv = Vec::new();
    mem::try_reserve(&mut inv, a.nrows(), "the Jacobi preconditioner")?;
    for r in 0..a.nrows() {
        let (cols, vals) = a.row(r);
        let mut diagonal = cols
            .iter()
            .zip(vals)
            .filter(|(&c, _)| c as usize == r)
            .map(|(_, v)| v.to_f64())
            .peekable();
        let stored = diagonal.peek().is_some();
        let d: f64 = diagonal.fold(0.0, |s, v| s + v);
        if d.is_nan() || d <= 0.0 {
            // 1-based, as Matrix Market numbers rows.
            let i = r + 1;
            let shown = if stored {
                format!("a({i}, {i}) = {d}")
            } else {
                format!("a({i}, {i}) is not stored")
            };
            return Err(Error::invalid(format!(
                "cg: the Jacobi preconditioner needs a positive diagonal, but {shown}: \
                 the matrix is not symmetric positive definite"
            )));
        }
        inv.push(T::from_f64(1.0 / d));
    }
    Ok(inv)
}

/// `A·1`, in f64 and rounded to `T`: the right-hand side whose exact solution
/// is all ones.
pub fn rhs_for_ones<T: CgScalar>(a: &Csr<T>) -> Result<Vec<T>> {
    let mut b = Vec::new();
    mem::try_reserve(&mut b, a.nrows(), "the right-hand side A·1")?;
    b.extend((0..a.nrows()).map(|r| T::from_f64(a.row(r).1.iter().map(|v| v.to_f64()).sum())));
    Ok(b)
}

/// The smallest positive `tol` [`cg`] accepts in precision `T`: 8 machine
/// epsilons (9.5e-7 for f32, 1.8e-15 for f64). Below it the recurrence
/// residual goes on falling while `‖b − A·x‖` stays at the rounding of
/// `A·x`, so such a run would claim what `x` does not have.
pub fn smallest_tol<T: CgScalar>() -> f64 {
    if T::TYPE.size() == 4 {
        8.0 * f32::EPSILON as f64
    } else {
        8.0 * f64::EPSILON
    }
}

/// `‖b − A·x‖ / ‖b‖`, on the host in f64 (0 when `b = 0` and `A·x = 0`),
/// rows in parallel.
///
/// # Errors
/// `x` or `b` of the wrong length.
pub fn relative_residual<T: CgScalar>(a: &Csr<T>, x: &[T], b: &[T]) -> Result<f64> {
    if x.len() != a.ncols() {
        return Err(Error::length("residual: x (= columns)", a.ncols(), x.len()));
    }
    if b.len() != a.nrows() {
        return Err(Error::length("residual: b (= rows)", a.nrows(), b.len()));
    }
    use rayon::prelude::*;
    let (rr, bb) = b
        .par_iter()
        .enumerate()
        .map(|(r, &bi)| {
            let d = bi.to_f64() - row_times(a, r, x);
            (d * d, bi.to_f64() * bi.to_f64())
        })
        .reduce(|| (0.0, 0.0), |p, q| (p.0 + q.0, p.1 + q.1));
    Ok(if bb == 0.0 {
        rr.sqrt()
    } else {
        (rr / bb).sqrt()
    })
}

//! A kernel run as a sequence of launches, each over one part of every
//! task's fine tasks, the tasks' folds carried from one launch to the next
//! on the device: the form of the cache-fit schedules.
//!
//! Part `i` is the same kernel over other arguments (typically the same
//! arrays reordered so that each part is contiguous, and a range array of
//! its own that gives every task its share of part `i`). The first launch
//! folds each task from `init` and keeps the value in a carry buffer (one
//! accumulator per task) instead of running the epilogue; the next ones
//! fold onto it; the last runs the epilogue (`CARRY_*` in
//! task_source.cuh). So a task's value is the fold of its fine tasks in
//! part order, whatever each launch's decomposition or split (a long task
//! split inside a part is merged, then carried), with no atomics and no
//! second pass over the outputs: every part costs the tasks one carry
//! read and write, the epilogue runs once.

use crate::abi::CarryMode;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::launch::arg::Arg;
use crate::launch::cuda_launch::{CudaLaunch, PlanList};
use crate::spec::KernelSpec;
use std::marker::PhantomData;
use std::sync::Arc;
use warpfit_runtime::{Error, Result, TaskList, Tasks};

/// Launches over the parts of every task's fine tasks, run in order with
/// the tasks' folds carried between them (see the module docs).
pub struct CarriedLaunch<'a> {
    run: CarriedRun,
    _borrows: PhantomData<&'a ()>,
}

/// A [`CarriedLaunch`] without the borrow: the parts hold their arrays'
/// device addresses, so whoever keeps one keeps those arrays alive (the
/// throttled handle owns both).
pub(crate) struct CarriedRun {
    parts: Vec<CudaLaunch>,
    /// Shared with the runs rebound from this one: runs on the device's
    /// one stream never interleave.
    _carry: Option<Arc<DeviceBuffer<u64>>>,
}

impl<'a> CarriedLaunch<'a> {
    /// Prepares `spec` over tasks `0..n_tasks` once per entry of `parts`
    /// (each the kernel's full argument list for that part; device-resident
    /// arrays are borrowed for `'a`), with `config` (each part makes its own
    /// split choice), and the carry buffer of one accumulator per task.
    ///
    /// # Errors
    /// No part; as [`CudaLaunch::new`] for each part.
    pub fn cuda(
        dev: &CudaDevice,
        spec: &KernelSpec,
        config: &crate::config::LaunchConfig,
        n_tasks: usize,
        parts: Vec<Vec<Arg<'a>>>,
    ) -> Result<Self> {
        Ok(CarriedLaunch {
            run: CarriedRun::new(dev, spec, config, n_tasks, &parts)?,
            _borrows: PhantomData,
        })
    }

    /// Number of parts (launches per run, besides merges of split tasks).
    pub fn len(&self) -> usize {
        self.run.parts.len()
    }

    /// Whether there is no part (never: [`CarriedLaunch::cuda`] refuses).
    pub fn is_empty(&self) -> bool {
        self.run.parts.is_empty()
    }

    /// Enqueues every part's kernels in part order (asynchronous; faults
    /// at the next [`check`](Self::check)).
    pub fn run(&self) -> Result<()> {
        self.run.run()
    }

    /// Waits for the runs enqueued so far and reports the first part's
    /// fault among them (then clears every part's record).
    pub fn check(&self) -> Result<()> {
        self.run.check()
    }
}

/// One launch of a carried sequence: tasks `0..n` over the part's own
/// range array, or a task list over the caller's own layout
/// ([`CudaLaunch::over_plan_list`]: segments unchecked against the tasks'
/// ranges, optionally dequeued from a device queue). A list part that is
/// first or last in the sequence must name every task (an empty segment
/// for a task with no work there), so that every fold starts from `init`
/// and every epilogue runs; a middle one only the tasks it works on.
pub(crate) enum CarriedPart<'b, 'a> {
    All(&'b [Arg<'a>]),
    List(TaskList, PlanList, &'b [Arg<'a>]),
}

impl CarriedRun {
    /// See [`CarriedLaunch::cuda`]; the arrays `parts` name must outlive
    /// the result.
    pub(crate) fn new(
        dev: &CudaDevice,
        spec: &KernelSpec,
        config: &crate::config::LaunchConfig,
        n_tasks: usize,
        parts: &[Vec<Arg<'_>>],
    ) -> Result<Self> {
        let parts = parts.iter().map(|a| CarriedPart::All(a)).collect();
        Self::of_parts(dev, spec, config, n_tasks, parts)
    }

    /// A carried sequence over `parts`, in order.
    pub(crate) fn of_parts(
        dev: &CudaDevice,
        spec: &KernelSpec,
        config: &crate::config::LaunchConfig,
        n_tasks: usize,
        parts: Vec<CarriedPart<'_, '_>>,
    ) -> Result<Self> {
        if parts.is_empty() {
            return Err(Error::invalid(format!(
                "kernel `{}`: a carried launch needs at least one part",
                spec.name
            )));
        }
        let carry = if parts.len() > 1 {
            let words = n_tasks
                .checked_mul(spec.acc.size())
                .ok_or_else(|| Error::invalid("carry buffer size overflows"))?
                .div_ceil(8);
            Some(DeviceBuffer::<u64>::zeros(dev, words)?)
        } else {
            None
        };
        let carry_ptr = carry.as_ref().map_or(0, |c| c.device_ptr(dev));
        let n = parts.len();
        let parts = parts
            .into_iter()
            .enumerate()
            .map(|(i, part)| {
                let mut p = match part {
                    CarriedPart::All(args) => {
                        CudaLaunch::new_borrowing(dev, spec, config, Tasks::All(n_tasks), args)?
                    }
                    CarriedPart::List(list, how, args) => {
                        CudaLaunch::over_plan_list(dev, spec, config, list, how, args)?
                    }
                };
                p.carry(carry_ptr, CarryMode::of(i, n));
                Ok(p)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(CarriedRun {
            parts,
            _carry: carry.map(Arc::new),
        })
    }

    /// This sequence with every part rebound to the arguments `replace`
    /// gives (the same per-launch arrays and scalars for every part; each
    /// part keeps its own shape arrays), its task lists and carry buffer
    /// shared ([`CudaLaunch::rebound`]).
    pub(crate) fn rebound<'a>(
        &self,
        replace: &dyn Fn() -> Result<Vec<(usize, Arg<'a>)>>,
    ) -> Result<Self> {
        let parts = self
            .parts
            .iter()
            .map(|p| p.rebound(replace()?))
            .collect::<Result<Vec<_>>>()?;
        Ok(CarriedRun {
            parts,
            _carry: self._carry.clone(),
        })
    }

    /// Number of launches in the sequence.
    pub(crate) fn len(&self) -> usize {
        self.parts.len()
    }

    /// Enqueues part `i` alone (for timing it between events).
    pub(crate) fn run_part(&self, i: usize) -> Result<()> {
        self.parts
            .get(i)
            .ok_or_else(|| Error::invalid(format!("no part {i} in a carried launch")))?
            .run()
    }

    pub(crate) fn run(&self) -> Result<()> {
        self.parts.iter().try_for_each(CudaLaunch::run)
    }

    pub(crate) fn check(&self) -> Result<()> {
        let mut first = Ok(());
        for p in &self.parts {
            let r = p.check_and_clear_fault();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

impl std::fmt::Debug for CarriedLaunch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CarriedLaunch")
            .field("parts", &self.run.parts.len())
            .finish()
    }
}

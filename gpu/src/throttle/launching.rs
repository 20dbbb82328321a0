//! Running a throttled handle: each launch takes its per-launch arrays in
//! (staged or bound), rebinds a prepared schedule when they changed,
//! prepares one after a new plan, and runs it, waiting or not, in the
//! caller's numbering or the plan's.

use crate::launch::arg::Arg;
use crate::launch::cpu_args::CpuArgs;
use crate::spec::ParamKind;
use crate::throttle::device_layouts::Space;
use crate::throttle::handle::{PlanOrder, Runs, Schedule, Throttled};
use crate::throttle::slots::{Slot, Staging};
use warpfit_runtime::{Error, Result};

/// How a launch runs.
#[derive(Debug, Clone, Copy)]
pub(in crate::throttle) struct Mode {
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

impl Throttled {
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

    pub(in crate::throttle) fn require_plan_order(&self) -> Result<()> {
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
        if self.plans_on_device() {
            // The level order, read back from the device once.
            let order = self
                .device_order
                .get_or_init(|| self.download_device_order().ok());
            let order = order.as_deref()?;
            return Some(PlanOrder {
                tasks: order,
                gathered: order,
            });
        }
        let (_, r) = self.plan.as_ref()?.detail.as_ref()?.remapping.as_ref()?;
        Some(PlanOrder {
            tasks: r.task_perm(),
            gathered: r.gathered_perm(),
        })
    }

    /// Waits for the launches enqueued so far and reports the first fault
    /// among them: those of the schedule prepared for the arrays of the
    /// last launch, then those of the one kept for the arrays before (a
    /// driver alternating two sets of arrays enqueues both).
    ///
    /// # Errors
    /// The kernel's fault, device errors.
    pub fn check(&self) -> Result<()> {
        let current = match &self.schedule {
            Some(s) => s.runs.check(),
            None => Ok(()),
        };
        let before = match &self.spare {
            Some((_, s)) => s.runs.check(),
            None => Ok(()),
        };
        current.and(before)
    }

    pub(in crate::throttle) fn launch_as(
        &mut self,
        per_launch: &mut [Arg<'_>],
        mode: Mode,
    ) -> Result<()> {
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
        self.check_column_count()?;
        self.plan_order = mode.plan_order;
        self.rebind()?;
        if self.schedule.is_none() {
            let s = match self.rebound_spare()? {
                Some(s) => s,
                None => self.prepare()?,
            };
            self.schedule = Some(s);
        }
        let s = self
            .schedule
            .as_ref()
            .ok_or_else(|| Error::invalid("no schedule"))?;
        if let Runs::Cpu = s.runs {
            let args = CpuArgs::new(self.spec, self.args(None, Space::Original)?)?;
            (self.cpu_run)(&args, self.launch_tasks())?;
        } else if std::mem::take(&mut self.ran_while_choosing) {
            // `auto`'s last timed run was this schedule's, from the staged
            // outputs: its result is this launch's.
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
    pub(in crate::throttle) fn run_once(&self, s: &Schedule) -> Result<()> {
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
                (self.cpu_run)(&args, self.launch_tasks())
            }
            Some(s) => self.run_once(s),
            None => Err(Error::invalid(format!(
                "kernel `{}`: the throttled handle has not launched yet",
                self.spec.name
            ))),
        }
    }
}

//! `auto`: every schedule that applies, timed on the first launch after
//! the plan, the fastest kept; `org_r` in both remapping orders where the
//! order is not pinned.

use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::event_timer::EventTimer;
use crate::throttle::handle::{Schedule, Throttled};
use std::time::Instant;
use warpfit_runtime::schedule::ThrottlePolicy;
use warpfit_runtime::{Error, Result};

impl Throttled {
    /// `auto`: times every schedule that applies and keeps the fastest.
    pub(in crate::throttle) fn auto(
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

    /// `org_r` timed in the remapping's order and, where `auto` has an
    /// alternative order, in that one too: the faster with its time, the
    /// handle's remapping (and its device copies) left at its order. Each
    /// order's time goes to `remap_profile`.
    pub(in crate::throttle) fn fastest_org_r(
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
    pub(in crate::throttle) fn swap_remapping(&mut self) -> Result<()> {
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
    pub(in crate::throttle) fn record_remap_time(&mut self, ms: f64) -> Result<()> {
        if let Some((order, _)) = &self.detail()?.remapping {
            let order = *order;
            self.report.remap_profile.push((order, ms));
        }
        Ok(())
    }
}

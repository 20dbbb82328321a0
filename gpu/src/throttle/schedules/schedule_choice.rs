//! From a policy to a prepared schedule: [`build`](Throttled::build) makes
//! the schedule of one policy, `prepare` the one the asked policy resolves
//! to on the first launch after a plan (profiling `sj`/`sjq`, timing every
//! candidate for `auto`), and records what it found in the report.

use crate::driver::cuda_device::CudaDevice;
use crate::driver::event_timer::EventTimer;
use crate::spec::IndexEncoding;
use crate::throttle::device_layouts::Space;
use crate::throttle::handle::{Runs, Schedule, Throttled};
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;
use warpfit_runtime::schedule::ThrottlePolicy;
use warpfit_runtime::{Error, Result};

impl Throttled {
    /// The schedule of `policy` (not `auto`, not `sj`/`sjq` before their
    /// cover is chosen: `sj_cover` gives it).
    pub(in crate::throttle) fn build(
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

    /// [`prepare`](Self::prepare) for `auto` by the model: the plan kept
    /// from an earlier launch prepared again, else decided (or read from
    /// the plan cache) and built on the device.
    fn prepare_on_device(&mut self, dev: &CudaDevice, started: Instant) -> Result<Schedule> {
        if self.device_choice.is_none() {
            // A 2-D kernel's pinned policy (`org`, `cf`).
            self.device_choice = self.columns_plan(dev)?;
        }
        let out = match self.device_choice {
            Some(plan) => self.device_schedule(dev, plan)?,
            None => {
                let s = self.auto_by_model(dev)?;
                self.report.profiling = started.elapsed();
                s
            }
        };
        self.report
            .record_choice(out.policy, None, out.space == Space::Remapped, false);
        self.report.remap_order = self.device_remap_order();
        if let Some(crate::throttle::plan_choice::DevicePlan::ColumnBlocks { k }) =
            self.device_choice
        {
            self.report.partitions = k;
        }
        self.release_unused(&out);
        Ok(out)
    }

    /// Prepares the schedule to run: on the CPU the twin; with no plan of
    /// several partitions `org`; else the asked policy, profiled where it
    /// is `sj`, `sjq` or `auto` (each timing run computes the launch's
    /// result from the staged arrays).
    pub(in crate::throttle) fn prepare(&mut self) -> Result<Schedule> {
        let Some(dev) = self.device.cuda().cloned() else {
            return Ok(Schedule {
                policy: ThrottlePolicy::Org,
                space: Space::Original,
                runs: Runs::Cpu,
                layouts: Vec::new(),
            });
        };
        let started = Instant::now();
        if self.plans_on_device() {
            return self.prepare_on_device(&dev, started);
        }
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
        let kept = self
            .kept_configs
            .iter()
            .find(|(p, _)| *p == out.policy)
            .map(|(_, c)| c.split);
        let narrow_index = out
            .layouts
            .iter()
            .any(|l| l.index_encoding() == IndexEncoding::Delta16);
        self.report
            .record_choice(out.policy, kept, out.space == Space::Remapped, narrow_index);
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
}

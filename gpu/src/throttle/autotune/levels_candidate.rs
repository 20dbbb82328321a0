//! `auto` by the model's level-order candidate: the order made on the
//! device and either laid out, sampled and timed against the best so far,
//! or (`ThrottleOptions::caller_renumbers`) left to the caller to renumber
//! by and confirm.

use crate::driver::cuda_device::CudaDevice;
use crate::engines::level_order::LevelRun;
use crate::engines::plan_kernels::DeviceShape;
use crate::throttle::autotune::auto_by_model::{Best, Sample, Trial};
use crate::throttle::autotune::model::{self, ShapeStats, SAMPLED_WARPS};
use crate::throttle::device_layouts::DeviceLayout;
use crate::throttle::device_plan::{LevelsLayout, MAX_LEVEL_ROUNDS};
use crate::throttle::handle::Throttled;
use crate::throttle::layout_set::{LevelOrderBuffers, RemapTables};
use crate::throttle::plan_choice::DevicePlan;
use std::sync::Arc;
use std::time::Instant;
use warpfit_runtime::{Error, Result};

impl Throttled {
    /// Builds the level order's layout, samples it, and where the model
    /// keeps it, times it against the best so far.
    pub(super) fn try_levels(
        &mut self,
        dev: &CudaDevice,
        sample: &Sample,
        stats: &ShapeStats,
        trial: &mut Trial,
        best: &mut Best,
    ) -> Result<()> {
        let built = Instant::now();
        let width_limit = model::level_width_limit(stats.budget_bytes, sample.elem);
        if self.options.caller_renumbers {
            return self.levels_for_caller(dev, sample.shape, width_limit, trial);
        }
        match self.levels_layout(dev, sample.shape, width_limit)? {
            LevelsLayout::GivenUp(run) => {
                let (why, what) = given_up(run, width_limit);
                trial.report.reason.push_str(&why);
                trial.lap(what);
            }
            LevelsLayout::Built(built_layout, order_time) => {
                let (layout, tables) = *built_layout;
                trial.report.steps.push(("level order", order_time));
                let layout_time = trial.step.elapsed().saturating_sub(order_time);
                trial.report.steps.push(("levels layout", layout_time));
                trial.step = Instant::now();
                let levels = self.sharing_in_levels(dev, sample, &layout)?;
                trial.report.sharing_levels = Some(levels);
                trial
                    .report
                    .build
                    .push((DevicePlan::Levels, built.elapsed()));
                trial.lap("levels sampled");
                if model::keep_levels(stats.sharing, levels) {
                    self.time_levels(dev, layout, tables, trial, best)?;
                }
            }
        }
        Ok(())
    }

    /// [`ThrottleOptions::caller_renumbers`](warpfit_runtime::schedule::ThrottleOptions::caller_renumbers):
    /// the level order only, kept for the caller, who renumbers its own
    /// matrix and vectors by it and times its launch against `org`'s timed
    /// run. No layout, sample or timed run of the handle's in that order:
    /// the caller's renumbered launch is the confirmation.
    fn levels_for_caller(
        &mut self,
        dev: &CudaDevice,
        shape: DeviceShape,
        width_limit: u64,
        trial: &mut Trial,
    ) -> Result<()> {
        let built = Instant::now();
        match self.level_order_only(dev, shape, width_limit)? {
            Err(run) => {
                let (why, what) = given_up(run, width_limit);
                trial.report.reason.push_str(&why);
                trial.lap(what);
            }
            Ok((order, position)) => {
                self.layouts.caller_order = Some(LevelOrderBuffers { order, position });
                trial
                    .report
                    .build
                    .push((DevicePlan::Levels, built.elapsed()));
                trial
                    .report
                    .reason
                    .push_str("; the level order left to the caller to renumber by and confirm");
                trial.lap("level order");
            }
        }
        Ok(())
    }

    /// The sharing of the sampled warp steps' gathers in the level order's
    /// numbering (`layout`).
    fn sharing_in_levels(
        &self,
        dev: &CudaDevice,
        sample: &Sample,
        layout: &DeviceLayout,
    ) -> Result<f64> {
        let renumbered = DeviceShape {
            ptr: layout.ptrs[0].device_ptr()?,
            idx: layout
                .fine(self.roles.index.unwrap_or(usize::MAX))
                .ok_or_else(|| Error::invalid("the renumbered index array"))?
                .device_ptr()?,
            ..sample.shape
        };
        let (g, l) = sample
            .pk
            .locality(dev, renumbered, SAMPLED_WARPS, sample.line)?;
        Ok(model::sharing(g, l))
    }

    /// Times the level order's schedule and keeps it where it beats the
    /// best so far; its remap tables are dropped where it does not.
    fn time_levels(
        &mut self,
        dev: &CudaDevice,
        layout: DeviceLayout,
        tables: RemapTables,
        trial: &mut Trial,
        best: &mut Best,
    ) -> Result<()> {
        self.layouts.tables = Some(tables);
        let layout = Arc::new(layout);
        let s = self.schedule_over(dev, DevicePlan::Levels, layout.clone())?;
        trial.lap("levels prepared");
        let ms = self.time_once(&s, &trial.timer, &trial.snap)?;
        trial.lap("levels timed");
        trial.report.timed.push((DevicePlan::Levels, ms));
        trial.last_timed = Some(DevicePlan::Levels);
        if model::replaces(ms, best.ms) {
            *best = Best {
                ms,
                schedule: s,
                plan: DevicePlan::Levels,
                layout: Some(layout),
            };
        } else {
            self.layouts.tables = None;
        }
        Ok(())
    }
}

/// Why the level order was given up, for the report's reason, and its
/// step's name.
fn given_up(run: LevelRun, width_limit: u64) -> (String, &'static str) {
    match run {
        LevelRun::TooWide { widest } => (
            format!(
                "; the level order given up at a level of {widest} rows (more than {width_limit}: \
                 three levels' gathers would not fit the cache a partition may fill)"
            ),
            "levels given up (too wide)",
        ),
        LevelRun::Expanding { widest, projected } => (
            format!(
                "; the level order given up at a level of {widest} rows, the second in a row {}× or \
                 more the one before: the next, about {projected} rows, would pass {width_limit} \
                 (three levels' gathers would not fit the cache a partition may fill)",
                crate::abi::LEVEL_GROWTH
            ),
            "levels given up (too wide)",
        ),
        _ => (
            format!("; the level order took more than {MAX_LEVEL_ROUNDS} levels"),
            "levels given up (too deep)",
        ),
    }
}

//! `auto` by the cost model (`model`): the cached decision, or the
//! model's decision confirmed by one timed run of each candidate it keeps
//! and of `org`, inside the launch; the plans are made on the device
//! (`device_plan`).

use crate::driver::cuda_device::CudaDevice;
use crate::driver::event_timer::EventTimer;
use crate::engines::level_order::LevelRun;
use crate::engines::plan_kernels::{plan_kernels, DeviceShape, MAX_COLUMN_BLOCKS};
use crate::throttle::autotune::model::{self, Decision, ShapeStats, SAMPLED_WARPS};
use crate::throttle::device_layouts::DeviceLayout;
use crate::throttle::device_plan::{LevelsLayout, MAX_LEVEL_ROUNDS};
use crate::throttle::handle::{Schedule, Throttled};
use crate::throttle::plan_cache;
use crate::throttle::plan_choice::DevicePlan;
use crate::throttle::report::ModelReport;
use std::sync::Arc;
use std::time::Instant;
use warpfit_runtime::schedule::ThrottlePolicy;
use warpfit_runtime::{Error, Result};

impl Throttled {
    /// `auto` by the model: the cached decision, or the model's decision
    /// confirmed by one timed run of each candidate and of `org`.
    pub(in crate::throttle) fn auto_by_model(&mut self, dev: &CudaDevice) -> Result<Schedule> {
        let started = Instant::now();
        let key = match self.options.plan_cache {
            true => plan_cache::key(self, dev)?,
            false => None,
        };
        let keyed = started.elapsed();
        if let Some(plan) = key.as_ref().and_then(|k| plan_cache::load(dev, k)) {
            // A cached plan whose layout cannot be made again (a level
            // order past its budget on a device of other speed) is decided
            // again.
            if let Ok(s) = self.device_schedule(dev, plan) {
                let mut report = ModelReport::new();
                report.from_cache = true;
                report.reason = format!("the plan cache's decision: {plan}");
                report.steps = vec![("key", keyed), ("layout", started.elapsed() - keyed)];
                report.planning = started.elapsed();
                self.device_choice = Some(plan);
                self.report.model = Some(report);
                return Ok(s);
            }
            self.layouts.device = None;
            self.layouts.tables = None;
        }
        let (s, plan, mut report) = self.decide_and_confirm(dev)?;
        report.steps.insert(0, ("key", keyed));
        if let Some(k) = key {
            let t = Instant::now();
            report.cache_error = plan_cache::store(dev, &k, plan)
                .err()
                .map(|e| e.to_string());
            report.steps.push(("cache write", t.elapsed()));
        }
        report.planning = started.elapsed();
        self.device_choice = Some(plan);
        self.report.model = Some(report);
        Ok(s)
    }

    /// The model's decision, confirmed: the schedule, its plan, and what
    /// the model saw and timed.
    fn decide_and_confirm(
        &mut self,
        dev: &CudaDevice,
    ) -> Result<(Schedule, DevicePlan, ModelReport)> {
        let mut report = ModelReport::new();
        let shape = match self.device_shape() {
            Ok(s) => s,
            Err(why) => {
                report.reason = format!("no device plan: {why}");
                let s = self.single(dev, ThrottlePolicy::Org, None)?;
                return Ok((s, DevicePlan::Org, report));
            }
        };
        let mut step = Instant::now();
        let pk = plan_kernels(dev)?;
        // A line holds elements of one array; a partition holds an element
        // of each gathered array.
        let line = (128 / self.spec.params[self.roles.first_gathered()].ty.size()).max(1);
        let elem: usize = self
            .roles
            .gathered
            .iter()
            .map(|&i| self.spec.params[i].ty.size())
            .sum();
        let (gathers, lines) = pk.locality(dev, shape, SAMPLED_WARPS, line)?;
        report.steps.push(("sample", step.elapsed()));
        step = Instant::now();
        let cache = self.options.cache.resolve(Some(dev.l2_bytes() as u64))?;
        let stats = ShapeStats {
            n_gathered: shape.n_gathered,
            gathered_elem_bytes: elem,
            budget_bytes: (cache as f64 * self.options.safety) as u64,
            levels_possible: shape.n == shape.n_gathered && self.roles.index.is_some(),
            sharing: model::sharing(gathers, lines),
        };
        report.sharing = stats.sharing;
        let (columns, levels_if_gain) = match model::decide(&stats, MAX_COLUMN_BLOCKS) {
            Decision::Org(why) => {
                report.reason = why;
                let s = self.single(dev, ThrottlePolicy::Org, None)?;
                return Ok((s, DevicePlan::Org, report));
            }
            Decision::Time {
                columns,
                levels_if_gain,
                why,
            } => {
                report.reason = why;
                (columns, levels_if_gain)
            }
        };
        let timer = EventTimer::new(dev)?;
        let snap = self.snapshot()?;
        report.steps.push(("timer and snapshot", step.elapsed()));
        step = Instant::now();
        let org = self.single(dev, ThrottlePolicy::Org, None)?;
        let org_prep = step.elapsed().as_secs_f64() * 1e3;
        report.steps.push(("org prepared", step.elapsed()));
        step = Instant::now();
        let ms = self.time_once(&org, &timer, &snap)?;
        report.steps.push(("org timed", step.elapsed()));
        step = Instant::now();
        report.timed.push((DevicePlan::Org, ms));
        // Each candidate's launches are prepared as org's was: one over
        // every task per column block, one for the level order.
        let (mut columns, mut levels_if_gain) = (columns, levels_if_gain);
        if let Some(k) = columns.filter(|&k| !model::pays_back(k as f64 * org_prep, ms)) {
            report.reason.push_str(&format!(
                "; {k} column blocks not built: {k} launches prepared as org's ({org_prep:.1} ms each) would not pay back within {} launches",
                model::BREAK_EVEN_LAUNCHES
            ));
            columns = None;
        }
        if levels_if_gain && !model::pays_back(org_prep, ms) {
            report.reason.push_str(&format!(
                "; the level order not built: a launch prepared as org's ({org_prep:.1} ms) would not pay back within {} launches",
                model::BREAK_EVEN_LAUNCHES
            ));
            levels_if_gain = false;
        }
        let mut best = (ms, org, DevicePlan::Org, None::<Arc<DeviceLayout>>);
        if levels_if_gain {
            let built = Instant::now();
            let width_limit = model::level_width_limit(stats.budget_bytes, elem);
            match self.levels_layout(dev, shape, width_limit)? {
                LevelsLayout::GivenUp(run) => {
                    let (why, what) = given_up(run, width_limit);
                    report.reason.push_str(&why);
                    report.steps.push((what, step.elapsed()));
                    step = Instant::now();
                }
                LevelsLayout::Built(built_layout, order_time) => {
                    let (layout, tables) = *built_layout;
                    report.steps.push(("level order", order_time));
                    report
                        .steps
                        .push(("levels layout", step.elapsed().saturating_sub(order_time)));
                    step = Instant::now();
                    let renumbered = DeviceShape {
                        ptr: layout.ptrs[0].device_ptr()?,
                        idx: layout
                            .fine(self.roles.index.unwrap_or(usize::MAX))
                            .ok_or_else(|| Error::invalid("the renumbered index array"))?
                            .device_ptr()?,
                        ..shape
                    };
                    let (g, l) = pk.locality(dev, renumbered, SAMPLED_WARPS, line)?;
                    let levels = model::sharing(g, l);
                    report.sharing_levels = Some(levels);
                    report.build.push((DevicePlan::Levels, built.elapsed()));
                    report.steps.push(("levels sampled", step.elapsed()));
                    step = Instant::now();
                    if model::keep_levels(stats.sharing, levels) {
                        self.layouts.tables = Some(tables);
                        let layout = Arc::new(layout);
                        let s = self.schedule_over(dev, DevicePlan::Levels, layout.clone())?;
                        report.steps.push(("levels prepared", step.elapsed()));
                        step = Instant::now();
                        let ms = self.time_once(&s, &timer, &snap)?;
                        report.steps.push(("levels timed", step.elapsed()));
                        step = Instant::now();
                        report.timed.push((DevicePlan::Levels, ms));
                        if ms < best.0 {
                            best = (ms, s, DevicePlan::Levels, Some(layout));
                        } else {
                            self.layouts.tables = None;
                        }
                    }
                }
            }
        }
        if let Some(k) = columns {
            let built = Instant::now();
            let layout = Arc::new(self.column_blocks_layout(dev, shape, k)?);
            report
                .build
                .push((DevicePlan::ColumnBlocks { k }, built.elapsed()));
            report.steps.push(("columns built", step.elapsed()));
            step = Instant::now();
            let s = self.schedule_over(dev, DevicePlan::ColumnBlocks { k }, layout.clone())?;
            report.steps.push(("columns prepared", step.elapsed()));
            step = Instant::now();
            let ms = self.time_once(&s, &timer, &snap)?;
            report.steps.push(("columns timed", step.elapsed()));
            report.timed.push((DevicePlan::ColumnBlocks { k }, ms));
            if ms < best.0 {
                if best.2 == DevicePlan::Levels {
                    self.layouts.tables = None;
                }
                best = (ms, s, DevicePlan::ColumnBlocks { k }, Some(layout));
            }
        }
        self.restore(&snap)?;
        let (_, s, plan, layout) = best;
        self.layouts.device = layout;
        Ok((s, plan, report))
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
        _ => (
            format!("; the level order took more than {MAX_LEVEL_ROUNDS} levels"),
            "levels given up (too deep)",
        ),
    }
}

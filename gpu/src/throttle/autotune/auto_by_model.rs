//! `auto` by the cost model (`model`): `org` where the shape alone
//! decides it (the sizes, then a locality sample); otherwise the cached
//! decision, or the model's candidates confirmed by one timed run of each
//! and of `org`, inside the launch. The plans are made on the device
//! (`device_plan`).

use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::event_timer::EventTimer;
use crate::engines::plan_kernels::{plan_kernels, DeviceShape, PlanKernels};
use crate::throttle::autotune::model::{self, Decision, ShapeStats, SAMPLED_WARPS};
use crate::throttle::device_layouts::DeviceLayout;
use crate::throttle::handle::{Runs, Schedule, Throttled};
use crate::throttle::plan_cache;
use crate::throttle::plan_choice::DevicePlan;
use crate::throttle::report::ModelReport;
use std::sync::Arc;
use std::time::Instant;
use warpfit_runtime::schedule::ThrottlePolicy;
use warpfit_runtime::Result;

impl Throttled {
    /// `auto` by the model: `org` where the shape alone decides it, else
    /// the cached decision, or the model's candidates confirmed by one
    /// timed run of each and of `org`.
    pub(in crate::throttle) fn auto_by_model(&mut self, dev: &CudaDevice) -> Result<Schedule> {
        let started = Instant::now();
        // The model looks at the shape (its sizes, then a sample of a few
        // hundred warp steps: a fraction of a millisecond) before the cache
        // key is made (hashing the shape arrays: milliseconds at millions
        // of rows): where it decides `org`, nothing is hashed, timed or
        // cached.
        let mut outlook = match self.outlook(dev)? {
            Outlook::Org(report) => {
                let (s, plan, mut report) = self.org_only(dev, report)?;
                report.planning = started.elapsed();
                self.device_choice = Some(plan);
                self.report.model = Some(report);
                return Ok(s);
            }
            Outlook::Time(candidates) => *candidates,
        };
        let keyed = Instant::now();
        let key = match self.options.plan_cache {
            true => plan_cache::key(self, dev)?,
            false => None,
        };
        let keyed = keyed.elapsed();
        if let Some(k) = &key {
            if let Some((s, plan, mut report)) =
                self.schedule_from_plan_cache(dev, k, &outlook.report, keyed)?
            {
                report.planning = started.elapsed();
                self.device_choice = Some(plan);
                self.report.model = Some(report);
                return Ok(s);
            }
        }
        outlook.report.steps.push(("key", keyed));
        let (s, plan, mut report) = self.confirm(dev, outlook)?;
        if let Some(k) = key {
            let t = Instant::now();
            report.cache_error = plan_cache::store(dev, &k, plan)
                .err()
                .map(|e| e.to_string());
            if plan == DevicePlan::Levels && report.cache_error.is_none() {
                report.cache_error = self.keep_level_order(dev, &k);
            }
            report.steps.push(("cache write", t.elapsed()));
        }
        report.planning = started.elapsed();
        self.device_choice = Some(plan);
        self.report.model = Some(report);
        Ok(s)
    }

    /// What the model decides from the shape alone: `org`, with its
    /// reason, or the candidates to time.
    fn outlook(&self, dev: &CudaDevice) -> Result<Outlook> {
        let mut report = ModelReport::new();
        if let Some(why) = self.gathered_fits(dev)? {
            // Rule 1 from the sizes alone: nothing sampled.
            report.reason = why;
            return Ok(Outlook::Org(report));
        }
        let shape = match self.device_shape() {
            Ok(s) => s,
            Err(why) => {
                report.reason = format!("no device plan: {why}");
                return Ok(Outlook::Org(report));
            }
        };
        let step = Instant::now();
        let sample = self.sample_locality(dev, shape)?;
        report.steps.push(("sample", step.elapsed()));
        let stats = self.shape_stats(dev, &sample)?;
        report.sharing = stats.sharing;
        match self.decide(&stats, (shape.n, shape.nnz)) {
            Decision::Org(why) => {
                report.reason = why;
                Ok(Outlook::Org(report))
            }
            Decision::Time {
                columns,
                levels_if_gain,
                why,
            } => {
                report.reason = why;
                Ok(Outlook::Time(Box::new(Candidates {
                    sample,
                    stats,
                    columns,
                    levels_if_gain,
                    report,
                })))
            }
        }
    }

    /// The model's candidates, confirmed: each timed against `org` inside
    /// the launch; the schedule, its plan, and what the model saw and
    /// timed.
    fn confirm(
        &mut self,
        dev: &CudaDevice,
        outlook: Candidates,
    ) -> Result<(Schedule, DevicePlan, ModelReport)> {
        let Candidates {
            sample,
            stats,
            columns,
            levels_if_gain,
            report,
        } = outlook;
        let shape = sample.shape;
        let step = Instant::now();
        let mut trial = Trial {
            timer: EventTimer::new(dev)?,
            snap: self.snapshot()?,
            report,
            step,
            last_timed: None,
        };
        trial.lap("timer and snapshot");
        let (mut best, org_prep) = self.time_org(dev, &mut trial)?;
        let launches = model::break_even_launches(self.options.expected_launches);
        let hubs = !model::levels_without_hubs(longest_task(&best.schedule));
        let (columns, levels_if_gain) = trial.drop_unpaid(
            columns,
            levels_if_gain,
            (org_prep, best.ms),
            (shape.nnz, hubs),
            launches,
        );
        let levels_if_gain = levels_if_gain && trial.no_hubs(&best.schedule);
        if levels_if_gain {
            self.try_levels(dev, &sample, &stats, &mut trial, &mut best)?;
        }
        // An order left to the caller is the decision: the caller renumbers
        // by it and confirms it, so no column blocks are built beside it.
        let for_caller = self.layouts.caller_order.is_some();
        let columns = columns.filter(|_| !for_caller && trial.columns_after_levels(&best));
        if let Some(k) = columns {
            self.try_columns(dev, shape, k, &mut trial, &mut best)?;
        }
        // Every timed run starts from the snapshot; where the last one was
        // the kept schedule's, its outputs are the launch's result.
        if trial.last_timed == Some(best.plan) {
            self.ran_while_choosing = true;
            trial
                .report
                .reason
                .push_str("; its timed run's result kept");
        } else {
            self.restore(&trial.snap)?;
        }
        self.layouts.device = best.layout;
        let plan = if for_caller {
            DevicePlan::Levels
        } else {
            best.plan
        };
        Ok((best.schedule, plan, trial.report))
    }

    /// `org` as the decision, for `report`'s reason.
    fn org_only(
        &self,
        dev: &CudaDevice,
        report: ModelReport,
    ) -> Result<(Schedule, DevicePlan, ModelReport)> {
        let s = self.single(dev, ThrottlePolicy::Org, None)?;
        Ok((s, DevicePlan::Org, report))
    }

    /// Why `org` runs at once (the gathered arrays fit the cache a
    /// partition may fill: [`model::fits`]), or `None` where the model must
    /// look further (or cannot plan on the device: the full path says why).
    fn gathered_fits(&self, dev: &CudaDevice) -> Result<Option<String>> {
        let Ok(shape) = self.device_shape() else {
            return Ok(None);
        };
        Ok(model::fits(
            shape.n_gathered,
            self.gathered_elem_bytes(),
            self.partition_budget(dev)?,
        ))
    }

    /// Bytes of the cache a partition may fill (`safety × cache`).
    pub(in crate::throttle) fn partition_budget(&self, dev: &CudaDevice) -> Result<u64> {
        let cache = self.options.cache.resolve(Some(dev.l2_bytes() as u64))?;
        Ok((cache as f64 * self.options.safety) as u64)
    }

    /// Bytes a partition holds per gathered element: one element of each
    /// gathered array.
    pub(in crate::throttle) fn gathered_elem_bytes(&self) -> usize {
        let one: usize = self
            .roles
            .gathered
            .iter()
            .map(|&i| self.spec.params[i].ty.size())
            .sum();
        // A 2-D kernel gathers a row of `k` (checked not to overflow).
        one.saturating_mul(self.columns.map_or(1, |k| k as usize))
    }

    /// Samples the gathers of `shape`'s warp steps: the cache lines they
    /// fall on, with the sizes the model weighs them by.
    fn sample_locality(&self, dev: &CudaDevice, shape: DeviceShape) -> Result<Sample> {
        let pk = plan_kernels(dev)?;
        // A line holds elements of one array; a partition holds an element
        // of each gathered array.
        let row = self.columns.map_or(1, |k| k as usize);
        let elem_size = self.spec.params[self.roles.first_gathered()].ty.size();
        let line = (128 / elem_size.saturating_mul(row)).max(1);
        let elem = self.gathered_elem_bytes();
        let (gathers, lines) = pk.locality(dev, shape, SAMPLED_WARPS, line)?;
        Ok(Sample {
            shape,
            pk,
            line,
            elem,
            sharing: model::sharing(gathers, lines),
        })
    }

    /// What the model decides from: the sample and the cache a partition
    /// may fill.
    fn shape_stats(&self, dev: &CudaDevice, sample: &Sample) -> Result<ShapeStats> {
        let shape = sample.shape;
        Ok(ShapeStats {
            n_gathered: shape.n_gathered,
            gathered_elem_bytes: sample.elem,
            budget_bytes: self.partition_budget(dev)?,
            levels_possible: shape.n == shape.n_gathered && self.roles.index.is_some(),
            sharing: sample.sharing,
        })
    }

    /// Prepares and times `org`, the candidate every other must beat; also
    /// returns its preparation time (ms).
    fn time_org(&self, dev: &CudaDevice, trial: &mut Trial) -> Result<(Best, f64)> {
        let org = self.single(dev, ThrottlePolicy::Org, None)?;
        let org_prep = trial.step.elapsed().as_secs_f64() * 1e3;
        trial.lap("org prepared");
        let ms = self.time_once(&org, &trial.timer, &trial.snap)?;
        trial.lap("org timed");
        trial.report.timed.push((DevicePlan::Org, ms));
        trial.last_timed = Some(DevicePlan::Org);
        let best = Best {
            ms,
            schedule: org,
            plan: DevicePlan::Org,
            layout: None,
        };
        Ok((best, org_prep))
    }

    /// Builds `k` column blocks, times their schedule, and keeps it where
    /// it beats the best so far (dropping the level order's remap tables
    /// where that was the best).
    fn try_columns(
        &mut self,
        dev: &CudaDevice,
        shape: DeviceShape,
        k: usize,
        trial: &mut Trial,
        best: &mut Best,
    ) -> Result<()> {
        let built = Instant::now();
        let layout = Arc::new(self.column_blocks_layout(dev, shape, k)?);
        trial
            .report
            .build
            .push((DevicePlan::ColumnBlocks { k }, built.elapsed()));
        trial.lap("columns built");
        let s = self.schedule_over(dev, DevicePlan::ColumnBlocks { k }, layout.clone())?;
        trial.lap("columns prepared");
        let ms = self.time_once(&s, &trial.timer, &trial.snap)?;
        trial.lap("columns timed");
        trial
            .report
            .timed
            .push((DevicePlan::ColumnBlocks { k }, ms));
        trial.last_timed = Some(DevicePlan::ColumnBlocks { k });
        if model::replaces(ms, best.ms) {
            if best.plan == DevicePlan::Levels {
                self.layouts.tables = None;
            }
            *best = Best {
                ms,
                schedule: s,
                plan: DevicePlan::ColumnBlocks { k },
                layout: Some(layout),
            };
        }
        Ok(())
    }
}

/// What the model decided from the shape alone.
enum Outlook {
    /// `org`, with the report saying why.
    Org(ModelReport),
    /// Candidates to time against `org`.
    Time(Box<Candidates>),
}

/// The candidates the model keeps, and what it saw: the sample, the
/// statistics it decided from, and its report so far.
struct Candidates {
    sample: Sample,
    stats: ShapeStats,
    columns: Option<usize>,
    levels_if_gain: bool,
    report: ModelReport,
}

/// The locality sample of a kernel's shape: the shape, the kernels that
/// sampled it, a cache line's length in elements, the bytes a partition
/// holds per gathered element, and the share of gathers on a shared line.
pub(super) struct Sample {
    pub(super) shape: DeviceShape,
    pub(super) pk: Arc<PlanKernels>,
    pub(super) line: usize,
    pub(super) elem: usize,
    pub(super) sharing: f64,
}

/// A decision being confirmed by timed runs: the report it fills, the
/// start of its current step, and the timer and output snapshot every
/// timed run starts from.
pub(super) struct Trial {
    pub(super) timer: EventTimer,
    pub(super) snap: Vec<(usize, DeviceBuffer<u8>)>,
    pub(super) report: ModelReport,
    pub(super) step: Instant,
    /// The plan of the last timed run, whose result the outputs hold.
    pub(super) last_timed: Option<DevicePlan>,
}

impl Trial {
    /// Records the current step's wall time as `name` and starts the next.
    pub(super) fn lap(&mut self, name: &'static str) {
        self.report.steps.push((name, self.step.elapsed()));
        self.step = Instant::now();
    }

    /// Whether `org`'s launch found no hub row (the level order is not
    /// made where it did: [`model::levels_without_hubs`]); a hub is noted
    /// in the reason.
    fn no_hubs(&mut self, org: &Schedule) -> bool {
        let longest = longest_task(org);
        let ok = model::levels_without_hubs(longest);
        if !ok {
            self.report.reason.push_str(&format!(
                "; the level order not made: a row of {} entries (more than {}), a graph with hubs",
                longest.unwrap_or(0),
                model::LEVELS_MAX_ROW
            ));
        }
        ok
    }

    /// Whether the column blocks are still worth building after the
    /// level order was timed ([`model::columns_after_levels`]); why not is
    /// noted in the reason.
    fn columns_after_levels(&mut self, best: &Best) -> bool {
        let timed = |plan| {
            self.report
                .timed
                .iter()
                .find(|(p, _)| *p == plan)
                .map(|&(_, ms)| ms)
        };
        let (Some(org), Some(levels), Some(sharing)) = (
            timed(DevicePlan::Org),
            timed(DevicePlan::Levels),
            self.report.sharing_levels,
        ) else {
            return true;
        };
        if best.plan != DevicePlan::Levels || model::columns_after_levels(sharing, levels, org) {
            return true;
        }
        self.report.reason.push_str(&format!(
            "; column blocks not built: the level order made {:.0}% of a warp's gathers share a line and ran {:.1}× org",
            100.0 * sharing,
            org / levels
        ));
        false
    }

    /// The candidates worth building: each whose predicted preparation
    /// (its launches prepared as org's were, `org_prep` ms each; the column
    /// blocks' layout over `fine_tasks`, at the hubs' rate where `hubs`)
    /// pays back against org's `org_ms` within the break-even launches;
    /// the reason says which were not.
    fn drop_unpaid(
        &mut self,
        columns: Option<usize>,
        levels_if_gain: bool,
        (org_prep, org_ms): (f64, f64),
        (fine_tasks, hubs): (usize, bool),
        launches: f64,
    ) -> (Option<usize>, bool) {
        // Each candidate's launches are prepared as org's was: one over
        // every task per column block, one for the level order.
        let (mut columns, mut levels_if_gain) = (columns, levels_if_gain);
        let pays = |prep: f64| model::pays_back(prep, org_ms, launches);
        if let Some(k) = columns {
            let prep = model::column_blocks_prep(k, org_prep, fine_tasks, hubs);
            if !pays(prep) {
                self.report.reason.push_str(&format!(
                    "; {k} column blocks not built: their layout and {k} launches prepared as org's ({org_prep:.1} ms each), about {prep:.1} ms, would not pay back within {launches} launches"
                ));
                columns = None;
            }
        }
        if levels_if_gain && !pays(org_prep) {
            self.report.reason.push_str(&format!(
                "; the level order not built: a launch prepared as org's ({org_prep:.1} ms) would not pay back within {launches} launches"
            ));
            levels_if_gain = false;
        }
        (columns, levels_if_gain)
    }
}

/// The fastest candidate timed so far: its time (ms), schedule, plan and
/// layout.
pub(super) struct Best {
    pub(super) ms: f64,
    pub(super) schedule: Schedule,
    pub(super) plan: DevicePlan,
    pub(super) layout: Option<Arc<DeviceLayout>>,
}

/// The longest task `org`'s launch measured, if it measured them.
fn longest_task(org: &Schedule) -> Option<u64> {
    match &org.runs {
        Runs::Single(p) => p.longest_task(),
        _ => None,
    }
}

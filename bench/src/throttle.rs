//! `warpfit bench throttle`: the generated `spmv` kernel through its
//! throttled handle under every policy, against the library baseline, per
//! matrix; a Markdown report and an SVG chart ([`ThrottleBenchReport`]).
//!
//! Each matrix runs these variants, in this order:
//! - **the baseline** on the original matrix: `cusparseSpMV` (default
//!   algorithm) on CUDA, the unthrottled CPU twin (`spmv::launch`) on the
//!   CPU backend;
//! - **the baseline on the remapped matrix**: rows and columns renumbered
//!   as the handle remaps them ([`ThrottleBenchOptions::remap_order`]: by
//!   Algorithm 5 ([`Remapping`]) of the partition the handle plans, same
//!   partitioner and cache, or by levels), so the reader sees what
//!   remapping alone gives;
//! - **every [`ThrottlePolicy`]** through the kernel's throttled handle
//!   ([`Throttled`], what `spmv::throttle` builds): planned, launched once
//!   (`auto` profiles its candidates there) and checked, then the chosen
//!   schedule timed alone ([`Throttled::enqueue_again`]), then launched and
//!   checked once more. A policy the handle refuses to launch is reported
//!   as not launched, with its reason;
//! - on the CPU backend, **the CPU plan executor** ([`run_carried`]) over a
//!   part-major plan of column blocks and one of K-D tiles: what the
//!   handle's `cf` runs on the CPU once it follows plans there.
//!
//! Protocol: every result is checked against an f64 reference on the host
//! before it is timed (largest error relative to the row's `Σ|a·x|` at most
//! 1e-4); `x[i] = 1 + (i mod 7)/7`, as `warpfit run spmv` and
//! `scripts/bench-graphblas.py` use. A variant's time is the median of
//! `runs` timed runs after `warmup` untimed ones: on CUDA each run between
//! two CUDA events, after clearing a 512 MiB buffer that evicts L2
//! ([`EventTimer`]); on the CPU the wall time of the call. With several
//! `rounds`, every variant is prepared, checked and timed once per round,
//! variants alternating within a round (each dropped before the next is
//! prepared, so that one variant's copies are in memory at a time); speed-ups
//! are then the median of the per-round ratios, as the CPU comparison with
//! GraphBLAS in BENCHMARKS.md does, since a shared machine drifts between
//! rounds. Planning is the host time a variant needs before its first
//! launch (work graph, partition, plan layout; for the remapped baseline,
//! the partition, remapping and renumbered matrix), reported apart and
//! amortised over [`ThrottleBenchOptions::amortise_over`] launches.

use crate::baseline::{CusparseSpmv, SpmvAlg};
use crate::input::{gens, median, opt, timed_runs, MatrixSource, SpmvReference, TOLERANCE};
use std::fmt::Write as _;
use std::time::Instant;
use warpfit::__private::EventTimer;
use warpfit::__private::{Arg, CpuArgs};
use warpfit::apps::spmv::f32 as spmv;
use warpfit::apps::spmv_input;
use warpfit::runtime::exec::{cpu, SharedOut};
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::partition::{Remapping, WorkGraph, WorkGraphOf};
use warpfit::runtime::schedule::{
    cpu_cache_share, run_carried, CacheFitPlan, CacheSize, CarriedLayout, Partitioner, RemapOrder,
    ThrottleOptions, ThrottlePolicy,
};
use warpfit::runtime::Csr;
use warpfit::{Device, Error, LaunchConfig, Result, Tasks, Throttled};

/// What `warpfit bench throttle` runs.
#[derive(Debug, Clone)]
pub struct ThrottleBenchOptions {
    /// The matrices, in order.
    pub matrices: Vec<MatrixSource>,
    /// Timed runs per variant and round (the median is reported).
    pub runs: usize,
    /// Untimed runs before them.
    pub warmup: usize,
    /// Rounds: every variant is prepared and timed once per round.
    pub rounds: usize,
    /// The cache the plans fit (`l2`: the GPU's L2, or on the CPU backend
    /// the share of the last-level cache, [`cpu_cache_share`]).
    pub cache: CacheSize,
    /// The partitioner of the handle's plans (`None`: the kernel's
    /// `#[throttled]` default) and of the CPU executor's (`None`: both
    /// column blocks and K-D tiles).
    pub partitioner: Option<Partitioner>,
    /// Launches the planning time is amortised over.
    pub amortise_over: usize,
    /// Only these variants (see [`VARIANT_NAMES`]); empty: all of them.
    /// The reference of the speed-ups always runs.
    pub variants: Vec<String>,
    /// The renumbering of the remapped schedules and of the remapped
    /// baseline ([`ThrottleOptions::remap_order`]). `None` (the default):
    /// the baseline by Algorithm 5, and the handle's own default (`auto`
    /// times `org_r` in both orders).
    pub remap_order: Option<RemapOrder>,
    /// Whether the handles may narrow the index array to 16-bit offsets
    /// ([`ThrottleOptions::narrow_index`]; default `true`).
    pub narrow_index: bool,
}

/// The names [`ThrottleBenchOptions::variants`] accepts: the baseline on
/// the original and on the remapped matrix, the policies, and the CPU plan
/// executor.
pub const VARIANT_NAMES: [&str; 11] = [
    "baseline", "remapped", "org", "org_r", "cf", "cfq", "sj", "sjq", "auto", "model", "carried",
];

impl ThrottleBenchOptions {
    /// The protocol's defaults for `matrices`: 20 timed runs after 3
    /// untimed ones, one round, the cache `l2`, the kernel's partitioner,
    /// planning amortised over 100 launches.
    pub fn new(matrices: Vec<MatrixSource>) -> Self {
        ThrottleBenchOptions {
            matrices,
            runs: 20,
            warmup: 3,
            rounds: 1,
            cache: CacheSize::L2,
            partitioner: None,
            amortise_over: 100,
            variants: Vec::new(),
            remap_order: None,
            narrow_index: true,
        }
    }

    /// Checks the options.
    ///
    /// # Errors
    /// No run, round or launch to amortise over; an unknown variant name.
    pub fn validate(&self) -> Result<()> {
        if self.runs == 0 || self.rounds == 0 || self.amortise_over == 0 {
            return Err(Error::invalid(
                "bench throttle: runs, rounds and the launches planning is amortised over must be at least 1",
            ));
        }
        if let Some(v) = self
            .variants
            .iter()
            .find(|v| !VARIANT_NAMES.contains(&v.as_str()))
        {
            return Err(Error::invalid(format!(
                "bench throttle: unknown variant `{}`: expected some of {}",
                warpfit::runtime::error::excerpt(v.as_bytes()),
                VARIANT_NAMES.join(", ")
            )));
        }
        Ok(())
    }

    /// Whether the variant `kind` runs (the reference always does).
    fn runs_variant(&self, kind: VariantKind, cpu: bool) -> bool {
        let name = match kind {
            VariantKind::Baseline if !cpu => return true,
            VariantKind::Policy(ThrottlePolicy::Org) if cpu => return true,
            VariantKind::Baseline => "baseline",
            VariantKind::BaselineRemapped => "remapped",
            VariantKind::Policy(p) => p.name(),
            VariantKind::Model => "model",
            VariantKind::Carried(_) => "carried",
        };
        self.variants.is_empty() || self.variants.iter().any(|v| v == name)
    }
}

/// The suite whose gathered vector exceeds a GPU's L2: RMAT scale 24 and
/// 25 (edge factor 16), uniform 2^24 and 2^25 (16 per row), rgg 2^24 in
/// random order, and the 4096² grid (natural locality: throttling must not
/// lose there).
///
/// # Errors
/// None in practice (the specs are fixed).
pub fn large_suite() -> Result<Vec<MatrixSource>> {
    gens(&[
        "rmat:scale=24,edge_factor=16,seed=1",
        "rmat:scale=25,edge_factor=16,seed=1",
        "uniform:n=16777216,per_row=16,seed=1",
        "uniform:n=33554432,per_row=16,seed=1",
        "rgg:n=16777216,seed=1,order=random",
        "grid2d:side=4096",
    ])
}

/// A smoke run's suite: small RMAT, uniform and grid matrices.
///
/// # Errors
/// None in practice (the specs are fixed).
pub fn small_suite() -> Result<Vec<MatrixSource>> {
    gens(&[
        "rmat:scale=14,edge_factor=16,seed=1",
        "uniform:n=65536,per_row=16,seed=1",
        "grid2d:side=256",
    ])
}

/// What a variant is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VariantKind {
    /// The library SpMV on the original matrix: cuSPARSE on CUDA, the
    /// unthrottled CPU twin on the CPU backend.
    Baseline,
    /// The same on the matrix remapped as the handle remaps it.
    BaselineRemapped,
    /// The throttled handle under a policy (`auto`: the exhaustive sweep,
    /// [`ThrottleOptions::exhaustive`]).
    Policy(ThrottlePolicy),
    /// The throttled handle under `auto` by the cost model, plans made on
    /// the device, the plan cache off (what applications get by default).
    Model,
    /// The CPU plan executor ([`run_carried`]) over a part-major plan of
    /// this partitioner.
    Carried(Partitioner),
}

impl VariantKind {
    /// The variant's name in the report; `cpu` picks the baseline's.
    pub fn name(self, cpu: bool) -> String {
        match (self, cpu) {
            (VariantKind::Baseline, false) => "cuSPARSE".into(),
            (VariantKind::BaselineRemapped, false) => "cuSPARSE remapped".into(),
            (VariantKind::Baseline, true) => "CPU twin".into(),
            (VariantKind::BaselineRemapped, true) => "CPU twin remapped".into(),
            (VariantKind::Policy(p), _) => p.name().into(),
            (VariantKind::Model, _) => "model".into(),
            (VariantKind::Carried(p), _) => format!("carried {p}"),
        }
    }
}

/// How a variant fared.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Checked and timed in every round so far.
    Timed(Timing),
    /// The handle refused the policy (the reason).
    NotLaunched(String),
    /// An error (the message); the run went on.
    Failed(String),
}

/// A variant's measurements, one entry per round.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timing {
    /// Median kernel time of each round (ms).
    pub round_ms: Vec<f64>,
    /// Planning time of each round (s; 0 for a variant that plans nothing).
    pub round_plan_s: Vec<f64>,
    /// Wall time of each round's first launch (ms): copies in and out, and
    /// `auto`'s profiling.
    pub round_first_ms: Vec<f64>,
    /// A remapped schedule's median kernel time of each round over vectors
    /// kept in its numbering (ms; empty for the others).
    pub round_plan_order_ms: Vec<f64>,
    /// Largest relative error of any check.
    pub max_rel_err: f64,
}

impl Timing {
    /// Median over the rounds of the kernel time (ms).
    pub fn ms(&self) -> Option<f64> {
        median(&self.round_ms)
    }
    /// Median over the rounds of the kernel time in plan order (ms), for a
    /// remapped schedule.
    pub fn plan_order_ms(&self) -> Option<f64> {
        median(&self.round_plan_order_ms)
    }
    /// Median over the rounds of the planning time (s).
    pub fn plan_s(&self) -> Option<f64> {
        median(&self.round_plan_s)
    }
    /// Median over the rounds of the first launch (ms).
    pub fn first_ms(&self) -> Option<f64> {
        median(&self.round_first_ms)
    }
    /// Kernel time with the planning spread over `launches` launches (ms).
    pub fn amortised_ms(&self, launches: usize) -> Option<f64> {
        Some(self.ms()? + self.plan_s()? * 1e3 / launches.max(1) as f64)
    }
}

/// One variant on one matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantResult {
    /// What ran.
    pub kind: VariantKind,
    /// The schedule the handle chose (policies), `cf` for the executor.
    pub chosen: Option<ThrottlePolicy>,
    /// Partitions of its plan (0: none planned).
    pub partitions: Option<usize>,
    /// `auto`'s profile (`org 3.1 ms, cf 2.7 ms`), when it made one.
    pub note: String,
    /// Times or why there are none.
    pub outcome: Outcome,
}

impl VariantResult {
    /// The timing, when the variant was timed.
    pub fn timing(&self) -> Option<&Timing> {
        match &self.outcome {
            Outcome::Timed(t) => Some(t),
            _ => None,
        }
    }
}

/// Every variant on one matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixResult {
    /// The input's name.
    pub name: String,
    /// A short label for the chart.
    pub label: String,
    /// Rows.
    pub rows: usize,
    /// Columns (the gathered vector's length).
    pub cols: usize,
    /// Stored entries.
    pub nnz: usize,
    /// Seconds to generate or read it.
    pub load_s: f64,
    /// The variants, in run order.
    pub variants: Vec<VariantResult>,
}

impl MatrixResult {
    /// The variant speed-ups are measured against: the baseline on CUDA,
    /// `org` on the CPU backend.
    pub fn reference(&self, cpu: bool) -> Option<&VariantResult> {
        let want = if cpu {
            VariantKind::Policy(ThrottlePolicy::Org)
        } else {
            VariantKind::Baseline
        };
        self.variants.iter().find(|v| v.kind == want)
    }

    /// `v`'s speed-up over the reference: the median over rounds of the
    /// reference's time over `v`'s in the same round.
    pub fn speedup(&self, v: &VariantResult, cpu: bool) -> Option<f64> {
        let r = self.reference(cpu)?.timing()?;
        let t = v.timing()?;
        let ratios: Vec<f64> = r
            .round_ms
            .iter()
            .zip(&t.round_ms)
            .filter(|(_, &b)| b > 0.0)
            .map(|(a, b)| a / b)
            .collect();
        median(&ratios)
    }

    fn get(&self, kind: VariantKind) -> Option<&VariantResult> {
        self.variants.iter().find(|v| v.kind == kind)
    }
}

/// Everything `warpfit bench throttle` measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ThrottleBenchReport {
    /// The device, in words.
    pub device: String,
    /// Whether it ran on the CPU backend.
    pub cpu: bool,
    /// The cache the plans fit, in bytes, and where that size comes from.
    pub cache_bytes: u64,
    /// Where [`cache_bytes`](Self::cache_bytes) comes from.
    pub cache_source: String,
    /// The command that produced the report.
    pub command: String,
    /// The options' runs, warm-up runs, rounds and amortisation.
    pub runs: usize,
    /// Untimed runs.
    pub warmup: usize,
    /// Rounds.
    pub rounds: usize,
    /// Launches planning is amortised over.
    pub amortise_over: usize,
    /// The renumbering of the remapped schedules and baseline, when pinned.
    pub remap_order: Option<RemapOrder>,
    /// Per matrix.
    pub matrices: Vec<MatrixResult>,
    /// Matrices that could not be loaded, and variants that failed.
    pub failures: Vec<String>,
}

/// Progress: the step just started (1-based), the number of steps, what.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, &str);

/// Runs the benchmark on `device`: see the module docs. Progress goes to
/// `progress`; `snapshot` receives the report after each matrix, so that
/// a run cut short keeps what it measured. A variant that fails is recorded
/// and the run goes on.
///
/// # Errors
/// Invalid options; the cache size (`l2` on a CPU whose caches sysfs does
/// not describe); CUDA errors outside one variant.
pub fn run_throttle_bench(
    device: &Device,
    opts: &ThrottleBenchOptions,
    command: &str,
    progress: Progress<'_>,
    snapshot: &mut dyn FnMut(&ThrottleBenchReport),
) -> Result<ThrottleBenchReport> {
    opts.validate()?;
    let cpu = device.cuda().is_none();
    let (l2, source) = match device.cuda() {
        Some(d) => (Some(d.l2_bytes() as u64), "the GPU's L2"),
        None => (cpu_cache_share(), "the CPU's share of its last-level cache"),
    };
    let cache_bytes = opts.cache.resolve(l2).map_err(|e| {
        Error::invalid(format!(
            "bench throttle: {e} (on the CPU backend `l2` is the share of the last-level cache that sysfs describes)"
        ))
    })?;
    let cache_source = match opts.cache {
        CacheSize::L2 => source.to_string(),
        CacheSize::Bytes(_) => "--cache".to_string(),
    };
    let info = device.describe();
    let mut report = ThrottleBenchReport {
        device: match info.arch {
            Some(arch) => format!("{} ({arch})", info.name),
            None => info.name,
        },
        cpu,
        cache_bytes,
        cache_source,
        command: command.to_string(),
        runs: opts.runs,
        warmup: opts.warmup,
        rounds: opts.rounds,
        amortise_over: opts.amortise_over,
        remap_order: opts.remap_order,
        matrices: Vec::new(),
        failures: Vec::new(),
    };
    let kinds: Vec<VariantKind> = variant_kinds(cpu, opts.partitioner)
        .into_iter()
        .filter(|&k| opts.runs_variant(k, cpu))
        .collect();
    let clock = match device.cuda() {
        Some(d) => Clock(Some(EventTimer::new(d)?)),
        None => Clock(None),
    };
    let total = opts.matrices.len() * (1 + opts.rounds * kinds.len());
    let mut step = 0;
    for input in &opts.matrices {
        let name = input.name();
        step += 1;
        progress(step, total, &format!("{name}: generating/reading"));
        let start = Instant::now();
        let a = match input.load::<f32>() {
            Ok(a) => a,
            Err(e) => {
                report.failures.push(format!("{name}: {e}"));
                step += opts.rounds * kinds.len();
                continue;
            }
        };
        let load_s = start.elapsed().as_secs_f64();
        let bench = match OneMatrix::new(device, opts, &a, Some(cache_bytes), &clock) {
            Ok(b) => b,
            Err(e) => {
                report.failures.push(format!("{name}: {e}"));
                step += opts.rounds * kinds.len();
                continue;
            }
        };
        let mut variants: Vec<VariantResult> = kinds
            .iter()
            .map(|&kind| VariantResult {
                kind,
                chosen: None,
                partitions: None,
                note: String::new(),
                outcome: Outcome::Timed(Timing::default()),
            })
            .collect();
        for round in 0..opts.rounds {
            for v in variants.iter_mut() {
                step += 1;
                if !matches!(v.outcome, Outcome::Timed(_)) {
                    continue;
                }
                progress(
                    step,
                    total,
                    &format!(
                        "{name}: {} (round {}/{})",
                        v.kind.name(cpu),
                        round + 1,
                        opts.rounds
                    ),
                );
                let measured = bench.measure(v.kind);
                record(v, measured, &name, &mut report.failures);
            }
        }
        report.matrices.push(MatrixResult {
            label: short_label(input),
            name,
            rows: a.nrows(),
            cols: a.ncols(),
            nnz: a.nnz(),
            load_s,
            variants,
        });
        snapshot(&report);
    }
    Ok(report)
}

/// The variants run on each matrix, in order.
fn variant_kinds(cpu: bool, partitioner: Option<Partitioner>) -> Vec<VariantKind> {
    let mut kinds = vec![VariantKind::Baseline, VariantKind::BaselineRemapped];
    kinds.extend(ThrottlePolicy::ALL.into_iter().map(VariantKind::Policy));
    if !cpu {
        kinds.push(VariantKind::Model);
    }
    if cpu {
        match partitioner {
            Some(p) => kinds.push(VariantKind::Carried(p)),
            None => kinds.extend([
                VariantKind::Carried(Partitioner::Columns),
                VariantKind::Carried(Partitioner::Kd),
            ]),
        }
    }
    kinds
}

/// Folds one round's measurement into `v`.
fn record(v: &mut VariantResult, m: Result<Measured>, matrix: &str, failures: &mut Vec<String>) {
    let Outcome::Timed(t) = &mut v.outcome else {
        return;
    };
    match m {
        Ok(m) => {
            t.round_ms.push(m.ms);
            t.round_plan_s.push(m.plan_s);
            t.round_first_ms.push(m.first_ms);
            t.round_plan_order_ms.extend(m.plan_order_ms);
            t.max_rel_err = t.max_rel_err.max(m.max_rel_err);
            v.chosen = m.chosen;
            v.partitions = m.partitions;
            v.note = m.note;
        }
        Err(e) => {
            let msg = e.to_string().replace('\n', " ");
            // The handle's refusal of a policy it plans but does not launch.
            if matches!(v.kind, VariantKind::Policy(_)) && msg.contains("not launched") {
                v.outcome = Outcome::NotLaunched(msg);
            } else {
                failures.push(format!("{matrix}, {}: {msg}", v.kind.name(false)));
                v.outcome = Outcome::Failed(msg);
            }
        }
    }
}

/// A short label for a matrix, for the chart's axis: `rmat 24`, `uniform
/// 2^24`, `rgg 2^24 random`, `grid2d 4096`, or the file name.
pub fn short_label(input: &MatrixSource) -> String {
    let pow = |n: u64| {
        if n.is_power_of_two() {
            format!("2^{}", n.trailing_zeros())
        } else {
            n.to_string()
        }
    };
    match input {
        MatrixSource::Gen(g) => match *g {
            GenSpec::Rmat { scale, .. } => format!("rmat {scale}"),
            GenSpec::Uniform { n, .. } => format!("uniform {}", pow(n)),
            GenSpec::Rgg { n, order, .. } => format!("rgg {} {order}", pow(n)),
            GenSpec::Grid2d { side } => format!("grid2d {side}"),
            GenSpec::Road { side, order, .. } => format!("road {side} {order}"),
            GenSpec::Poisson2d { side } => format!("poisson2d {side}"),
            GenSpec::Poisson3d { side, order, .. } => format!("poisson3d {side} {order}"),
        },
        MatrixSource::Mtx(_) => {
            let n = input.name();
            n.strip_suffix(".mtx").unwrap_or(&n).to_string()
        }
    }
}

/// How kernel times are taken: CUDA events on a GPU, L2 evicted before
/// each run; the wall time of the call on the CPU backend (no timer).
struct Clock(Option<EventTimer>);

impl Clock {
    /// The median of `runs` timings of `f` (ms) after `warmup` calls.
    fn median_ms(
        &self,
        warmup: usize,
        runs: usize,
        f: &mut dyn FnMut() -> Result<()>,
    ) -> Result<f64> {
        median(&timed_runs(self.0.as_ref(), warmup, runs, f)?)
            .ok_or_else(|| Error::invalid("bench throttle: no timed run"))
    }
}

/// One round's measurement of one variant.
struct Measured {
    ms: f64,
    plan_s: f64,
    first_ms: f64,
    /// A remapped schedule's time over vectors kept in its numbering.
    plan_order_ms: Option<f64>,
    max_rel_err: f64,
    chosen: Option<ThrottlePolicy>,
    partitions: Option<usize>,
    note: String,
}

/// One matrix: its input vector, the f64 reference every variant is
/// checked against, and what measuring a variant needs.
struct OneMatrix<'a> {
    device: &'a Device,
    opts: &'a ThrottleBenchOptions,
    a: &'a Csr<f32>,
    x: Vec<f32>,
    reference: SpmvReference,
    /// The cache the plans fit, in bytes.
    cache: Option<u64>,
    clock: &'a Clock,
}

/// The handle's options: the kernel's `#[throttled]` defaults, with the
/// bench's cache and partitioner.
fn handle_options(opts: &ThrottleBenchOptions) -> Result<ThrottleOptions> {
    let mut o = spmv::throttle_options()?
        .with_cache(opts.cache)
        .with_narrow_index(opts.narrow_index);
    if let Some(order) = opts.remap_order {
        o = o.with_remap_order(order);
    }
    Ok(match opts.partitioner {
        Some(p) => o.with_partitioner(p),
        None => o,
    })
}

/// The handle's CPU run: the generated twin over the launch's arrays (what
/// `spmv::throttle` passes).
fn spmv_cpu_run(args: &CpuArgs<'_>, n: usize) -> Result<()> {
    let k = spmv::Kernel {
        row_ptr: args.input(0)?,
        col: args.input(1)?,
        val: args.input(2)?,
        x: args.input(3)?,
        y: args.output(4)?,
    };
    cpu::run(&k, Tasks::All(n))
}

impl<'a> OneMatrix<'a> {
    fn new(
        device: &'a Device,
        opts: &'a ThrottleBenchOptions,
        a: &'a Csr<f32>,
        cache: Option<u64>,
        clock: &'a Clock,
    ) -> Result<Self> {
        let x = spmv_input(a.ncols());
        let reference = SpmvReference::new(a, &x)?;
        Ok(OneMatrix {
            device,
            opts,
            a,
            x,
            reference,
            cache,
            clock,
        })
    }

    /// `y` against the reference: the largest relative error, or an error.
    fn check(&self, y: &[f32]) -> Result<f64> {
        let err = self.reference.max_rel_err(y)?;
        if err > TOLERANCE {
            return Err(Error::invalid(format!(
                "the result differs from the f64 reference (max relative error {err:.3e})"
            )));
        }
        Ok(err)
    }

    fn measure(&self, kind: VariantKind) -> Result<Measured> {
        match kind {
            VariantKind::Baseline => self.baseline(self.a, None, 0.0),
            VariantKind::BaselineRemapped => self.remapped(),
            VariantKind::Policy(p) => self.handle(p, true),
            VariantKind::Model => self.handle(ThrottlePolicy::Auto, false),
            VariantKind::Carried(p) => self.carried(p),
        }
    }

    /// The library SpMV on `a` (the original matrix, or the remapped one
    /// with its remapping and planning time), checked in the original order.
    fn baseline(&self, a: &Csr<f32>, remap: Option<&Remapping>, plan_s: f64) -> Result<Measured> {
        let x = match remap {
            Some(r) => r.gathered_to_new(&self.x)?,
            None => self.x.clone(),
        };
        let back = |y: Vec<f32>| -> Result<Vec<f32>> {
            match remap {
                Some(r) => r.tasks_to_old(&y),
                None => Ok(y),
            }
        };
        let (n, m) = (a.nrows(), a.ncols());
        let (err, ms, first_ms) = match self.device.cuda() {
            Some(dev) => {
                let start = Instant::now();
                let s = CusparseSpmv::<f32>::new(
                    dev,
                    n,
                    m,
                    a.row_ptr(),
                    a.col_idx(),
                    a.values(),
                    &x,
                    SpmvAlg::Default,
                )?;
                s.run()?;
                let err = self.check(&back(s.y()?)?)?;
                let first_ms = start.elapsed().as_secs_f64() * 1e3;
                let ms = self
                    .clock
                    .median_ms(self.opts.warmup, self.opts.runs, &mut || s.run())?;
                let err = err.max(self.check(&back(s.y()?)?)?);
                (err, ms, first_ms)
            }
            None => {
                let mut y = vec![f32::NAN; n];
                let cfg = LaunchConfig::default();
                let run = |y: &mut [f32]| {
                    spmv::launch_with(
                        self.device,
                        &cfg,
                        n,
                        a.row_ptr(),
                        a.col_idx(),
                        a.values(),
                        &x,
                        y,
                    )
                };
                let start = Instant::now();
                run(&mut y)?;
                let first_ms = start.elapsed().as_secs_f64() * 1e3;
                let err = self.check(&back(y.clone())?)?;
                let ms = self
                    .clock
                    .median_ms(self.opts.warmup, self.opts.runs, &mut || run(&mut y))?;
                let err = err.max(self.check(&back(y)?)?);
                (err, ms, first_ms)
            }
        };
        Ok(Measured {
            ms,
            plan_s,
            first_ms,
            plan_order_ms: None,
            max_rel_err: err,
            chosen: None,
            partitions: None,
            note: String::new(),
        })
    }

    /// The baseline on the matrix remapped as the handle remaps it: by
    /// Algorithm 5 of the handle's partition, or by levels (columns sorted
    /// within each row, as libraries expect).
    fn remapped(&self) -> Result<Measured> {
        let start = Instant::now();
        let graph = WorkGraphOf::borrow_csr(self.a)?.with_elem_bytes(4, 4)?;
        let partition = handle_options(self.opts)?.partition(&graph, self.cache, None)?;
        let remap = match self.opts.remap_order.unwrap_or_default() {
            RemapOrder::Partitions => Remapping::new(&graph, &partition)?,
            RemapOrder::Levels => Remapping::levels_of(&graph)?,
        };
        let parts = partition.len();
        drop(partition);
        let mut b = remap.apply_csr(self.a)?;
        b.sort_indices();
        let plan_s = start.elapsed().as_secs_f64();
        let mut m = self.baseline(&b, Some(&remap), plan_s)?;
        m.partitions = Some(parts);
        Ok(m)
    }

    /// The throttled handle under `policy`: planned, launched once and
    /// checked, the chosen schedule timed alone, then checked again.
    fn handle(&self, policy: ThrottlePolicy, exhaustive: bool) -> Result<Measured> {
        let a = self.a;
        let n = a.nrows();
        let options = handle_options(self.opts)?
            .with_policy(policy)
            .with_exhaustive(exhaustive)
            .with_plan_cache(false);
        let start = Instant::now();
        let graph = match Throttled::needs_work_graph(self.device, &options) {
            true => Some(spmv_graph(a)?),
            false => None,
        };
        let graph_s = start.elapsed().as_secs_f64();
        let shape = [
            Some(Arg::input(a.row_ptr())),
            Some(Arg::input(a.col_idx())),
            Some(Arg::input(a.values())),
            None,
            None,
        ];
        let mut t = Throttled::new(
            self.device,
            &spmv::SPEC,
            spmv::THROTTLE_ROLES,
            &options,
            &LaunchConfig::default(),
            n,
            a.ncols(),
            graph.as_ref(),
            &shape,
            spmv_cpu_run,
        )?;
        drop(graph);
        let mut y = vec![f32::NAN; n];
        let start = Instant::now();
        t.launch(&mut [Arg::input(&self.x), Arg::output(&mut y)])?;
        let first_ms = start.elapsed().as_secs_f64() * 1e3;
        let mut err = self.check(&y)?;
        let ms = self
            .clock
            .median_ms(self.opts.warmup, self.opts.runs, &mut || t.enqueue_again())?;
        // Again through `launch`, which reports the timed runs' faults.
        y.fill(f32::NAN);
        t.launch(&mut [Arg::input(&self.x), Arg::output(&mut y)])?;
        err = err.max(self.check(&y)?);
        let order = t
            .plan_order()
            .map(|o| (o.tasks.to_vec(), o.gathered.to_vec()));
        let in_plan_order = match order {
            Some((tasks, gathered)) => {
                let (ms, e) = self.in_plan_order(&mut t, &tasks, &gathered)?;
                err = err.max(e);
                Some(ms)
            }
            None => None,
        };
        let r = t.report();
        let planned = r.partitions > 0 || !r.planning.is_zero();
        Ok(Measured {
            ms,
            plan_s: if planned {
                graph_s + r.planning.as_secs_f64()
            } else {
                0.0
            },
            first_ms,
            plan_order_ms: in_plan_order,
            max_rel_err: err,
            chosen: Some(r.chosen),
            partitions: Some(r.partitions),
            note: in_plan_order
                .map(|ms| format!("in plan order {ms:.3} ms"))
                .into_iter()
                .chain(r.profile.iter().map(|(p, ms)| format!("{p} {ms:.3} ms")))
                .chain(remap_orders_note(&r.remap_profile, r.remap_order))
                .chain(settings_note(&r.budget_profile, r.chosen, "warp budget"))
                .chain(settings_note(&r.serial_profile, r.chosen, "serial bound"))
                .chain(queue_note(&r.queue_profile, r.chosen, r.queued))
                .chain(
                    r.narrow_index
                        .then(|| "index as 16-bit offsets".to_string()),
                )
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// A remapped schedule over vectors kept in the plan's numbering, as an
    /// iterative application keeps them (`tasks[new] = old` for `y`,
    /// `gathered[new] = old` for `x`): launched and checked, then timed
    /// with no permutation in or out. Returns the median (ms) and the
    /// check's error.
    fn in_plan_order(
        &self,
        t: &mut Throttled,
        tasks: &[u32],
        gathered: &[u32],
    ) -> Result<(f64, f64)> {
        let xp: Vec<f32> = gathered.iter().map(|&o| self.x[o as usize]).collect();
        let mut yp = vec![f32::NAN; tasks.len()];
        t.launch_in_plan_order(&mut [Arg::input(&xp), Arg::output(&mut yp)])?;
        let ms = self
            .clock
            .median_ms(self.opts.warmup, self.opts.runs, &mut || t.enqueue_again())?;
        yp.fill(f32::NAN);
        t.launch_in_plan_order(&mut [Arg::input(&xp), Arg::output(&mut yp)])?;
        let mut y = vec![0f32; yp.len()];
        for (&o, &v) in tasks.iter().zip(&yp) {
            y[o as usize] = v;
        }
        Ok((ms, self.check(&y)?))
    }

    /// The CPU plan executor over a part-major plan of `partitioner`.
    fn carried(&self, partitioner: Partitioner) -> Result<Measured> {
        let a = self.a;
        let start = Instant::now();
        let (col, val, layout) = {
            let graph = WorkGraphOf::borrow_csr(a)?.with_elem_bytes(4, 4)?;
            let partition = handle_options(self.opts)?
                .with_partitioner(partitioner)
                .partition(&graph, self.cache, None)?;
            let plan = CacheFitPlan::new(&graph, &partition)?;
            drop(partition);
            let layout = CarriedLayout::new(&plan)?;
            drop(plan);
            let col = layout.permute_fine(a.col_idx())?;
            (col, layout.permute_fine(a.values())?, layout)
        };
        let parts = layout.parts();
        let plan_s = start.elapsed().as_secs_f64();
        let mut y = vec![f32::NAN; a.nrows()];
        let run = |y: &mut [f32]| -> Result<()> {
            let k = spmv::Kernel {
                row_ptr: a.row_ptr(),
                col: &col,
                val: &val,
                x: &self.x,
                y: SharedOut::new(y),
            };
            run_carried(&k, &parts).map(|_| ())
        };
        let start = Instant::now();
        run(&mut y)?;
        let first_ms = start.elapsed().as_secs_f64() * 1e3;
        let mut err = self.check(&y)?;
        let ms = self
            .clock
            .median_ms(self.opts.warmup, self.opts.runs, &mut || run(&mut y))?;
        err = err.max(self.check(&y)?);
        Ok(Measured {
            ms,
            plan_s,
            first_ms,
            plan_order_ms: None,
            max_rel_err: err,
            chosen: Some(ThrottlePolicy::Cf),
            partitions: Some(parts.len()),
            note: String::new(),
        })
    }
}

/// The work graph `spmv::throttle` plans: the twin's own tuples over the
/// matrix, with a zeroed stand-in for `x`.
fn spmv_graph(a: &Csr<f32>) -> Result<WorkGraph> {
    warpfit::runtime::mem::check_elems::<f32>("the gathered array's stand-in", a.ncols())?;
    let zeros = vec![0f32; a.ncols()];
    let k = spmv::Kernel {
        row_ptr: a.row_ptr(),
        col: a.col_idx(),
        val: a.values(),
        x: &zeros,
        y: SharedOut::new(&mut []),
    };
    WorkGraph::from_kernel(&k, a.nrows())
}

/// `org_r`'s time in each remapping order `auto` compared, the chosen
/// order marked (nothing when it timed one order).
fn remap_orders_note(timed: &[(RemapOrder, f64)], chosen: Option<RemapOrder>) -> Option<String> {
    if timed.len() < 2 {
        return None;
    }
    let each = timed
        .iter()
        .map(|(o, ms)| {
            let mark = if chosen == Some(*o) { " (kept)" } else { "" };
            format!("{o} {ms:.3} ms{mark}")
        })
        .collect::<Vec<_>>()
        .join(" / ");
    Some(format!("org_r by {each}"))
}

/// The warp budgets (or serial bounds: `what`) `auto` timed for each
/// single-launch schedule, as "org_r warp budget 512 2.453 ms / 1024
/// 2.370 ms / 2048 2.349 ms (kept)", the fastest marked where that
/// schedule was chosen.
fn settings_note(
    timed: &[(ThrottlePolicy, u32, f64)],
    chosen: ThrottlePolicy,
    what: &str,
) -> Vec<String> {
    let mut policies: Vec<ThrottlePolicy> = Vec::new();
    for &(p, _, _) in timed {
        if !policies.contains(&p) {
            policies.push(p);
        }
    }
    policies
        .into_iter()
        .map(|p| {
            let mine: Vec<(u32, f64)> = timed
                .iter()
                .filter(|t| t.0 == p)
                .map(|&(_, b, ms)| (b, ms))
                .collect();
            let fastest = mine
                .iter()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|&(b, _)| b);
            let each = mine
                .iter()
                .map(|&(b, ms)| {
                    let mark = if p == chosen && Some(b) == fastest {
                        " (kept)"
                    } else {
                        ""
                    };
                    format!("{b} {ms:.3} ms{mark}")
                })
                .collect::<Vec<_>>()
                .join(" / ");
            format!("{p} {what} {each}")
        })
        .collect()
}

/// `auto`'s single-launch schedules timed without and with their packed
/// warps dequeued (`ThrottleReport::queue_profile`), the chosen one
/// marked where it kept the queue.
fn queue_note(
    timed: &[(ThrottlePolicy, f64, f64)],
    chosen: ThrottlePolicy,
    queued: bool,
) -> Vec<String> {
    timed
        .iter()
        .map(|&(p, without, with)| {
            let mark = if p == chosen && queued { " (kept)" } else { "" };
            format!("{p} warps from a queue {without:.3} → {with:.3} ms{mark}")
        })
        .collect()
}

/// A byte count for people: `64.0 MiB`, `4.0 KiB`, `100 B`.
fn size(bytes: f64) -> String {
    if bytes >= f64::from(1 << 20) {
        format!("{:.1} MiB", bytes / f64::from(1 << 20))
    } else if bytes >= 1024.0 {
        format!("{:.1} KiB", bytes / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

impl ThrottleBenchReport {
    /// The name of the baseline on this backend.
    fn baseline_name(&self) -> &'static str {
        if self.cpu {
            "the unthrottled CPU twin"
        } else {
            "`cusparseSpMV` (default algorithm)"
        }
    }

    /// The reference of the speed-ups, in words.
    fn reference_name(&self) -> &'static str {
        if self.cpu {
            "org"
        } else {
            "cuSPARSE"
        }
    }

    /// The report as Markdown: the setting, one table per matrix of every
    /// variant, a summary of the best variant and of `auto` against `org`,
    /// and the reasons of policies not launched.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        self.setting(&mut md);
        let reference = self.reference_name();
        let mut reasons: Vec<(String, String)> = Vec::new();
        for m in &self.matrices {
            let _ = writeln!(md, "### {}\n", m.name);
            let rounds_col = self.rounds > 1;
            let _ = writeln!(
                md,
                "| variant | chosen | partitions | kernel (ms) |{} speed-up over {reference} | planning (s) | with planning (ms) | first launch (ms) | max rel err | notes |\n|---|---|---:|---:|{}---:|---:|---:|---:|---:|---|",
                if rounds_col { " per round (ms) |" } else { "" },
                if rounds_col { "---|" } else { "" },
            );
            for v in &m.variants {
                let name = v.kind.name(self.cpu);
                match &v.outcome {
                    Outcome::Timed(t) if !t.round_ms.is_empty() => {
                        let per_round = if rounds_col {
                            format!(
                                " {} |",
                                t.round_ms
                                    .iter()
                                    .map(|ms| format!("{ms:.3}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        } else {
                            String::new()
                        };
                        let _ = writeln!(
                            md,
                            "| {name} | {} | {} | {} |{per_round} {} | {} | {} | {} | {:.1e} | {} |",
                            v.chosen.map_or("–".to_string(), |c| c.to_string()),
                            v.partitions.map_or("–".to_string(), |p| p.to_string()),
                            opt(t.ms(), 3),
                            opt(m.speedup(v, self.cpu), 2),
                            opt(t.plan_s(), 2),
                            opt(t.amortised_ms(self.amortise_over), 3),
                            opt(t.first_ms(), 1),
                            t.max_rel_err,
                            v.note
                        );
                    }
                    Outcome::Timed(_) => {}
                    Outcome::NotLaunched(why) | Outcome::Failed(why) => {
                        let failed = matches!(v.outcome, Outcome::Failed(_));
                        let _ = writeln!(
                            md,
                            "| {name} | – | – | {} |{} – | – | – | – | – | {} |",
                            if failed { "failed" } else { "not launched" },
                            if rounds_col { " – |" } else { "" },
                            if failed { why.as_str() } else { "" }
                        );
                        if !failed && !reasons.iter().any(|(n, _)| *n == name) {
                            reasons.push((name.clone(), why.clone()));
                        }
                    }
                }
            }
            md.push('\n');
        }
        self.summary(&mut md);
        if let Some((_, first)) = reasons.first() {
            let names: Vec<&str> = reasons.iter().map(|(n, _)| n.as_str()).collect();
            let _ = writeln!(
                md,
                "Not launched by the handle: {} (it says, for the first: \"{first}\").\n",
                names.join(", ")
            );
        }
        if !self.failures.is_empty() {
            md.push_str("Failures:\n\n");
            for f in &self.failures {
                let _ = writeln!(md, "- {f}");
            }
            md.push('\n');
        }
        md
    }

    /// The report's setting: device, cache and command; the protocol; the
    /// matrices and their sizes against the cache.
    fn setting(&self, md: &mut String) {
        let reference = self.reference_name();
        let _ = writeln!(
            md,
            "Device: {}. Cache the plans fit: {} ({}). Command: `{}`.\n",
            self.device,
            size(self.cache_bytes as f64),
            self.cache_source,
            self.command
        );
        let _ = writeln!(
            md,
            "Kernel time: median of {} timed runs after {} untimed ({}), every result checked \
             against an f64 reference first (max relative error ≤ 1e-4){}. Baseline: {}; \
             \"remapped\": on the matrix renumbered {}; a remapped schedule's kernel time \
             includes the permutations of `x` and `y`, its notes give it \"in plan order\" too \
             (vectors kept in the plan's numbering, as an iterative application keeps them). \
             Planning: host time before the first launch (work graph, partition, layout), \
             amortised over {} launches in \"with planning\". First launch: wall time of the \
             first run, with the copies in and out, the library's set-up and `auto`'s \
             profiling. Speed-up: over {reference}{}.\n",
            self.runs,
            self.warmup,
            if self.cpu {
                "wall time"
            } else {
                "CUDA events, L2 evicted before each run"
            },
            if self.rounds > 1 {
                format!(
                    "; {} rounds, variants alternating, times the median of the round medians",
                    self.rounds
                )
            } else {
                String::new()
            },
            self.baseline_name(),
            self.remapped_description(),
            self.amortise_over,
            if self.rounds > 1 {
                ", the median of the per-round ratios"
            } else {
                ""
            },
        );
        if !self.matrices.is_empty() {
            md.push_str(
                "| matrix | rows | nnz | x | x / cache | generate/read (s) |\n|---|---:|---:|---:|---:|---:|\n",
            );
            for m in &self.matrices {
                let x = 4.0 * m.cols as f64;
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {:.2} | {:.2} |",
                    m.name,
                    m.rows,
                    m.nnz,
                    size(x),
                    x / self.cache_bytes.max(1) as f64,
                    m.load_s
                );
            }
            md.push('\n');
        }
    }

    /// How the remapped baseline's matrix was renumbered.
    fn remapped_description(&self) -> &'static str {
        match self.remap_order {
            Some(RemapOrder::Partitions) => "by Algorithm 5 of the handle's partition",
            Some(RemapOrder::Levels) => {
                "by breadth-first levels from row 0, as the handle's remapped schedules are \
                 (remapping order `levels`)"
            }
            None => {
                "by Algorithm 5 of the handle's partition (the handle's default order; `auto` \
                 times `org_r` by levels too)"
            }
        }
    }

    /// Per matrix: the fastest variant other than the baselines, `auto`
    /// over `org`; the geometric mean of the best speed-ups.
    fn summary(&self, md: &mut String) {
        let reference = self.reference_name();
        let mut best_speedups = Vec::new();
        let mut best_in_plan_order = Vec::new();
        let mut rows = String::new();
        for m in &self.matrices {
            // With remapped schedules over vectors kept in plan order.
            let reference_ms = m
                .reference(self.cpu)
                .and_then(VariantResult::timing)
                .and_then(Timing::ms);
            let plan_order = m
                .variants
                .iter()
                .filter(|v| matches!(v.kind, VariantKind::Policy(_)))
                .filter_map(|v| {
                    let t = v.timing()?;
                    let ms = match (t.ms(), t.plan_order_ms()) {
                        (Some(a), Some(b)) => a.min(b),
                        (a, b) => a.or(b)?,
                    };
                    Some((v, reference_ms? / ms))
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let best = m
                .variants
                .iter()
                .filter(|v| {
                    !matches!(
                        v.kind,
                        VariantKind::Baseline | VariantKind::BaselineRemapped
                    )
                })
                .filter_map(|v| Some((v, m.speedup(v, self.cpu)?)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let auto_org = match (
                m.get(VariantKind::Policy(ThrottlePolicy::Auto))
                    .and_then(VariantResult::timing)
                    .and_then(Timing::ms),
                m.get(VariantKind::Policy(ThrottlePolicy::Org))
                    .and_then(VariantResult::timing)
                    .and_then(Timing::ms),
            ) {
                (Some(auto), Some(org)) if auto > 0.0 => Some(org / auto),
                _ => None,
            };
            if let Some((_, s)) = best {
                best_speedups.push(s);
            }
            if let Some((_, s)) = plan_order {
                best_in_plan_order.push(s);
            }
            let _ = writeln!(
                rows,
                "| {} | {} | {} | {} | {} |",
                m.name,
                best.map_or("–".to_string(), |(v, _)| v.kind.name(self.cpu)),
                opt(best.map(|(_, s)| s), 2),
                plan_order.map_or("–".to_string(), |(v, s)| format!(
                    "{} {s:.2}",
                    v.kind.name(self.cpu)
                )),
                opt(auto_org, 2)
            );
        }
        if rows.is_empty() {
            return;
        }
        let _ = writeln!(
            md,
            "### Summary\n\n| matrix | fastest variant | its speed-up over {reference} | fastest policy in plan order, speed-up | auto / org (≥ 0.95) |\n|---|---|---:|---:|---:|\n{rows}"
        );
        if !best_speedups.is_empty() {
            let geo = (best_speedups.iter().map(|s| s.ln()).sum::<f64>()
                / best_speedups.len() as f64)
                .exp();
            let _ = writeln!(
                md,
                "Geometric mean of the fastest variant's speed-up over {reference}: **{geo:.2}×** over {} matri{}.\n",
                best_speedups.len(),
                if best_speedups.len() == 1 { "x" } else { "ces" }
            );
        }
        let geo = |v: &[f64]| (v.iter().map(|s| s.ln()).sum::<f64>() / v.len() as f64).exp();
        if !best_in_plan_order.is_empty() && best_in_plan_order != best_speedups {
            let _ = writeln!(
                md,
                "With remapped schedules over vectors kept in plan order (no permutation per launch, as an iterative application runs them), the fastest policy's geometric mean: **{:.2}×** over {} matri{}.\n",
                geo(&best_in_plan_order),
                best_in_plan_order.len(),
                if best_in_plan_order.len() == 1 { "x" } else { "ces" }
            );
        }
    }

    /// The chart as SVG: per matrix, one bar per variant (the reference
    /// left out), its speed-up over the reference on a log scale; policies
    /// not launched are marked on the axis.
    ///
    /// # Errors
    /// The plotting library's errors.
    pub fn to_svg(&self) -> Result<String> {
        crate::throttle_chart::render(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(ms: &[f64], plan_s: f64) -> Outcome {
        Outcome::Timed(Timing {
            round_ms: ms.to_vec(),
            round_plan_s: vec![plan_s; ms.len()],
            round_first_ms: vec![1.0; ms.len()],
            round_plan_order_ms: Vec::new(),
            max_rel_err: 1e-7,
        })
    }

    fn variant(kind: VariantKind, outcome: Outcome) -> VariantResult {
        VariantResult {
            kind,
            chosen: Some(ThrottlePolicy::Cf),
            partitions: Some(3),
            note: String::new(),
            outcome,
        }
    }

    fn report(cpu: bool) -> ThrottleBenchReport {
        let not_launched = |p: &str| {
            Outcome::NotLaunched(format!(
                "kernel `spmv`: throttling policy `{p}` is planned but not launched by the throttled handle yet"
            ))
        };
        let m = |name: &str, label: &str, scale: f64| MatrixResult {
            name: name.into(),
            label: label.into(),
            rows: 4,
            cols: 1 << 20,
            nnz: 16,
            load_s: 0.1,
            variants: vec![
                variant(VariantKind::Baseline, timed(&[4.0, 6.0, 5.0], 0.0)),
                variant(VariantKind::BaselineRemapped, timed(&[3.0, 3.0, 3.0], 0.5)),
                variant(
                    VariantKind::Policy(ThrottlePolicy::Org),
                    timed(&[4.0 * scale, 6.0, 5.0], 0.0),
                ),
                variant(
                    VariantKind::Policy(ThrottlePolicy::OrgR),
                    not_launched("org_r"),
                ),
                variant(
                    VariantKind::Policy(ThrottlePolicy::Cf),
                    timed(&[2.0, 3.0, 2.5], 2.0),
                ),
                variant(
                    VariantKind::Policy(ThrottlePolicy::Sj),
                    Outcome::Failed("boom & <bust>".into()),
                ),
                variant(
                    VariantKind::Policy(ThrottlePolicy::Auto),
                    timed(&[2.0, 3.0, 2.5], 2.0),
                ),
            ],
        };
        ThrottleBenchReport {
            device: "test device".into(),
            cpu,
            cache_bytes: 1 << 20,
            cache_source: "--cache".into(),
            command: "warpfit bench throttle".into(),
            runs: 20,
            warmup: 3,
            rounds: 3,
            amortise_over: 100,
            remap_order: None,
            matrices: vec![
                m("rmat:scale=24,edge_factor=16,seed=1", "rmat 24", 1.0),
                m("a&b<c>.mtx", "a&b<c>", 0.25),
            ],
            failures: vec!["a&b<c>.mtx, sj: boom & <bust>".into()],
        }
    }

    #[test]
    fn speedups_are_medians_of_per_round_ratios() {
        let r = report(false);
        let m = &r.matrices[0];
        let cf = m.get(VariantKind::Policy(ThrottlePolicy::Cf)).unwrap();
        // Ratios 4/2, 6/3, 5/2.5: all 2.
        assert_eq!(m.speedup(cf, false), Some(2.0));
        let t = cf.timing().unwrap();
        assert_eq!(t.ms(), Some(2.5));
        assert_eq!(t.amortised_ms(100), Some(2.5 + 20.0));
        // On the CPU the reference is org: on the second matrix its first
        // round is 1.0 ms, so the ratios are 0.5, 2, 2: median 2.
        let r = report(true);
        let m = &r.matrices[1];
        let cf = m.get(VariantKind::Policy(ThrottlePolicy::Cf)).unwrap();
        assert_eq!(m.speedup(cf, true), Some(2.0));
        let sj = m.get(VariantKind::Policy(ThrottlePolicy::Sj)).unwrap();
        assert_eq!(m.speedup(sj, true), None);
    }

    #[test]
    fn the_markdown_has_every_variant_and_the_reasons() {
        let md = report(false).to_markdown();
        for row in [
            "| cuSPARSE | cf | 3 | 5.000 |",
            "| org_r | – | – | not launched |",
            "| sj | – | – | failed |",
            "| cf | cf | 3 | 2.500 | 2.000, 3.000, 2.500 | 2.00 | 2.00 | 22.500 |",
        ] {
            assert!(md.contains(row), "{row} not in\n{md}");
        }
        assert!(md.contains("Not launched by the handle: org_r"), "{md}");
        assert!(md.contains("**2.00×** over 2 matrices"), "{md}");
        assert!(md.contains("| auto / org (≥ 0.95) |"), "{md}");
        // No remapped schedule timed in plan order: no second mean.
        assert!(!md.contains("kept in plan order"), "{md}");
    }

    #[test]
    fn remapped_schedules_in_plan_order_get_their_own_mean() {
        let mut r = report(false);
        // cf on the first matrix: 1.25 ms in plan order against the
        // reference's 5.0: 4×; the second matrix stays at 2×.
        for v in &mut r.matrices[0].variants {
            if v.kind == VariantKind::Policy(ThrottlePolicy::Cf) {
                if let Outcome::Timed(t) = &mut v.outcome {
                    t.round_plan_order_ms = vec![1.25, 1.25, 1.25];
                }
            }
        }
        let md = r.to_markdown();
        assert!(md.contains("| cf 4.00 |"), "{md}");
        assert!(md.contains("**2.00×** over 2 matrices"), "{md}");
        assert!(
            md.contains("geometric mean: **2.83×** over 2 matrices"),
            "{md}"
        );
    }

    #[test]
    fn auto_notes_the_warp_budgets_it_timed() {
        use ThrottlePolicy::{Org, OrgR};
        assert!(settings_note(&[], OrgR, "warp budget").is_empty());
        let timed = [
            (Org, 512, 3.75),
            (Org, 1024, 3.86),
            (OrgR, 512, 2.4534),
            (OrgR, 1024, 2.37),
            (OrgR, 2048, 2.349),
        ];
        assert_eq!(
            settings_note(&timed, OrgR, "warp budget"),
            [
                "org warp budget 512 3.750 ms / 1024 3.860 ms",
                "org_r warp budget 512 2.453 ms / 1024 2.370 ms / 2048 2.349 ms (kept)",
            ]
        );
        // Another policy won: nothing marked.
        assert!(!settings_note(&timed, ThrottlePolicy::Cf, "warp budget")
            .concat()
            .contains("kept"));
        // Serial bounds read the same way.
        assert_eq!(
            settings_note(
                &[(OrgR, 64, 2.349), (OrgR, 8, 2.3921)],
                OrgR,
                "serial bound"
            ),
            ["org_r serial bound 64 2.349 ms (kept) / 8 2.392 ms"]
        );
    }

    #[test]
    fn auto_notes_the_queue_it_timed() {
        use ThrottlePolicy::{Org, OrgR};
        assert!(queue_note(&[], OrgR, false).is_empty());
        let timed = [(Org, 3.5041, 3.759), (OrgR, 4.673, 4.5962)];
        assert_eq!(
            queue_note(&timed, OrgR, true),
            [
                "org warps from a queue 3.504 → 3.759 ms",
                "org_r warps from a queue 4.673 → 4.596 ms (kept)",
            ]
        );
        assert!(!queue_note(&timed, OrgR, false).concat().contains("kept"));
    }

    #[test]
    fn auto_notes_org_r_in_each_order_it_timed() {
        use RemapOrder::{Levels, Partitions};
        assert_eq!(remap_orders_note(&[(Partitions, 3.0)], None), None);
        let both = [(Partitions, 3.24), (Levels, 2.3214)];
        assert_eq!(
            remap_orders_note(&both, Some(Levels)).as_deref(),
            Some("org_r by partitions 3.240 ms / levels 2.321 ms (kept)")
        );
        // Neither kept: another policy won.
        assert_eq!(
            remap_orders_note(&both, None).as_deref(),
            Some("org_r by partitions 3.240 ms / levels 2.321 ms")
        );
        // The setting says how the remapped baseline was renumbered.
        let mut r = report(false);
        assert!(r
            .to_markdown()
            .contains("`auto` times `org_r` by levels too"));
        r.remap_order = Some(Levels);
        assert!(r.to_markdown().contains("(remapping order `levels`)"));
    }

    #[test]
    fn the_chart_is_well_formed_svg_with_its_labels() {
        for cpu in [false, true] {
            let svg = report(cpu).to_svg().unwrap();
            let doc = roxmltree::Document::parse(&svg).expect("well-formed");
            let texts: Vec<&str> = doc
                .descendants()
                .filter(|n| n.has_tag_name("text"))
                .filter_map(|n| n.text())
                .map(str::trim)
                .collect();
            for want in ["rmat 24", "a&b<c>", "cf", "org_r", "× not launched"] {
                assert!(texts.contains(&want), "{want}: {texts:?}");
            }
            let reference = if cpu { "org" } else { "cuSPARSE" };
            assert!(!texts.contains(&reference), "{texts:?}");
        }
    }

    #[test]
    fn labels_are_short() {
        let g = |s: &str| short_label(&MatrixSource::Gen(s.parse().unwrap()));
        assert_eq!(g("rmat:scale=25,edge_factor=16,seed=1"), "rmat 25");
        assert_eq!(g("uniform:n=33554432,per_row=16,seed=1"), "uniform 2^25");
        assert_eq!(g("uniform:n=3000,per_row=6"), "uniform 3000");
        assert_eq!(g("rgg:n=16777216,seed=1,order=random"), "rgg 2^24 random");
        assert_eq!(g("grid2d:side=4096"), "grid2d 4096");
        let m = MatrixSource::Mtx("dir/bcsstk16.mtx".into());
        assert_eq!(short_label(&m), "bcsstk16");
    }

    #[test]
    fn suites_parse_and_options_are_checked() {
        assert_eq!(large_suite().unwrap().len(), 6);
        assert_eq!(crate::default_suite().unwrap().len(), 8);
        assert_eq!(small_suite().unwrap().len(), 3);
        let mut o = ThrottleBenchOptions::new(Vec::new());
        assert!(o.validate().is_ok());
        o.rounds = 0;
        assert!(o.validate().is_err());
        assert_eq!(
            variant_kinds(true, Some(Partitioner::Kd)).last(),
            Some(&VariantKind::Carried(Partitioner::Kd))
        );
        // On CUDA: the baselines, every policy, and `auto` by the model.
        assert_eq!(
            variant_kinds(false, None).len(),
            2 + ThrottlePolicy::ALL.len() + 1
        );
        assert_eq!(variant_kinds(false, None).last(), Some(&VariantKind::Model));
        assert!(!variant_kinds(true, None).contains(&VariantKind::Model));
    }
}

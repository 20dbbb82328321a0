//! The tuple-fold benchmark behind `warpfit bench tuple`: what a fold that
//! carries a tuple costs on the GPU against the same fold on a scalar.
//!
//! Two pairs of kernels, each written with `#[nested_reduce]` below:
//! - SpMV, `y = A·x` over `(+, ×)`: [`spmv_scalar()`] against [`spmv_tuple()`],
//!   whose sum is carried as a 1-tuple `(s,)`;
//! - min-plus, `d = min over k of x[col[k]] + val[k]`: [`min_plus()`] (a
//!   scalar fold by `f32::min`) against [`argmin_plus()`], which also carries
//!   the column of the minimum in a 2-tuple `(d, column)`, ties to the lower
//!   column (an `if` picking by a strict lexicographic order, which the macro
//!   sees commute, as it does `f32::min`).
//!
//! Protocol, per matrix: generate or read it, run the four kernels' CPU
//! twins (`Device::cpu()`), upload the matrix and `x` once (device-resident
//! arguments, as the apps do), then per launch configuration (the default,
//! CTE with the automatic split, and the 1D `thread` decomposition):
//! prepare the four launches, run each once and check its result against
//! its twin (the min and the argmin exactly, the sums within
//! [`TOLERANCE`] of the row's `Σ|a·x|`), warm up, then time the scalar and
//! the tuple kernel of a pair in alternating order (`ABBA…`, so that drift
//! in clocks or temperature weighs on both alike), each run between CUDA
//! events after the timer's lead buffer is cleared ([`EventTimer`]: no run
//! starts with the matrix or `x` in L2). The report gives each kernel's
//! median and the ratio tuple / scalar of the medians, against the
//! targets [`SPMV_TARGET`] and [`ARGMIN_TARGET`].

use crate::input::{gens, median, timed_runs, MatrixSource, TOLERANCE};
use rayon::prelude::*;
use std::fmt::Write as _;
use warpfit::__private::EventTimer;
use warpfit::prelude::*;
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::Csr;
use warpfit::Result;

/// `y = A·x`, the sum a scalar fold (the reference of [`spmv_tuple()`]).
#[nested_reduce]
pub fn spmv_scalar(row: usize, ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0.0, |a, b| a + b);
}

/// `y = A·x` with the sum carried as a 1-tuple.
#[nested_reduce]
pub fn spmv_tuple(row: usize, ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let (s,) = (lo..hi)
        .map(|k| (val[k] * x[col[k] as usize],))
        .fold((0.0,), |a, b| (a.0 + b.0,));
    y[row] = s;
}

/// `d[row] = min over the row of x[col] + val` (infinity for an empty
/// row), a scalar fold by `f32::min` (the reference of [`argmin_plus()`]).
#[nested_reduce]
pub fn min_plus(row: usize, ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], d: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    d[row] = (lo..hi)
        .map(|k| x[col[k] as usize] + val[k])
        .fold(f32::INFINITY, f32::min);
}

/// [`min_plus()`] and the column where the minimum is reached, ties to the
/// lower column (`u32::MAX` for an empty row): a 2-tuple fold.
#[nested_reduce]
pub fn argmin_plus(
    row: usize,
    ptr: &[u32],
    col: &[u32],
    val: &[f32],
    x: &[f32],
    d: &mut [f32],
    at: &mut [u32],
) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let (best, arg) = (lo..hi)
        .map(|k| (x[col[k] as usize] + val[k], col[k]))
        .fold((f32::INFINITY, u32::MAX), |a, b| {
            if b.0 < a.0 || (b.0 == a.0 && b.1 < a.1) {
                b
            } else {
                a
            }
        });
    d[row] = best;
    at[row] = arg;
}

/// The largest ratio tuple / scalar the 1-tuple SpMV may take under the
/// default launch configuration, on every matrix.
pub const SPMV_TARGET: f64 = 1.02;

/// The largest ratio tuple / scalar the 2-tuple argmin may take under the
/// default launch configuration on RMAT scale 22.
pub const ARGMIN_TARGET: f64 = 1.30;

/// The name of the default launch configuration (`LaunchConfig::default()`:
/// CTE with the automatic split), the one the targets are for.
pub const DEFAULT_CONFIG: &str = "cte";

/// A pair of kernels: a scalar fold and the same computation as a tuple fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pair {
    /// [`spmv_scalar()`] against [`spmv_tuple()`].
    Spmv,
    /// [`min_plus()`] against [`argmin_plus()`].
    ArgminPlus,
}

impl Pair {
    /// Both pairs, in report order.
    pub const ALL: [Pair; 2] = [Pair::Spmv, Pair::ArgminPlus];

    /// The pair as the report names it.
    pub fn name(self) -> &'static str {
        match self {
            Pair::Spmv => "spmv: `(s,)` vs `s`",
            Pair::ArgminPlus => "min-plus: `(min, col)` vs `min`",
        }
    }

    /// The target ratio tuple / scalar for this pair under launch
    /// configuration `config` on `matrix`, if the benchmark has one there.
    pub fn target(self, config: &str, matrix: &MatrixSource) -> Option<f64> {
        if config != DEFAULT_CONFIG {
            return None;
        }
        match self {
            Pair::Spmv => Some(SPMV_TARGET),
            Pair::ArgminPlus => is_rmat22(matrix).then_some(ARGMIN_TARGET),
        }
    }
}

/// Whether `m` is generated RMAT scale 22 (any edge factor or seed).
fn is_rmat22(m: &MatrixSource) -> bool {
    matches!(m, MatrixSource::Gen(GenSpec::Rmat { scale: 22, .. }))
}

/// The default suite of `warpfit bench tuple`: RMAT scale 22 (edge factor
/// 16) and uniform 2^22 with 16 per row.
///
/// # Errors
/// None in practice (the specs are fixed).
pub fn default_suite() -> Result<Vec<MatrixSource>> {
    gens(&[
        "rmat:scale=22,edge_factor=16,seed=1",
        "uniform:n=4194304,per_row=16,seed=1",
    ])
}

/// A small suite for smoke runs: RMAT scale 16 and uniform 2^18.
///
/// # Errors
/// None in practice (the specs are fixed).
pub fn small_suite() -> Result<Vec<MatrixSource>> {
    gens(&[
        "rmat:scale=16,edge_factor=16,seed=1",
        "uniform:n=262144,per_row=16,seed=1",
    ])
}

/// What `warpfit bench tuple` runs.
#[derive(Debug, Clone)]
pub struct TupleBenchOptions {
    /// The matrices, in report order.
    pub matrices: Vec<MatrixSource>,
    /// Timed runs per kernel (the median is reported).
    pub runs: usize,
    /// Untimed runs of each kernel before timing.
    pub warmup: usize,
    /// The launch configurations, by name, in report order.
    pub configs: Vec<(String, LaunchConfig)>,
}

impl TupleBenchOptions {
    /// The protocol's defaults over `matrices`: 20 timed runs after 3
    /// warm-up runs, the default configuration and the 1D `thread`
    /// decomposition.
    pub fn new(matrices: Vec<MatrixSource>) -> Self {
        TupleBenchOptions {
            matrices,
            runs: 20,
            warmup: 3,
            configs: vec![
                (DEFAULT_CONFIG.to_string(), LaunchConfig::default()),
                (
                    Decomposition::Thread.to_string(),
                    LaunchConfig::new(Decomposition::Thread),
                ),
            ],
        }
    }

    /// The launch configurations named by `names` (decompositions: `cte`,
    /// the default configuration; `thread`; `subwarp:W`), in the given
    /// order, each once.
    ///
    /// # Errors
    /// A name that is no decomposition (the error lists the valid ones);
    /// no name at all.
    pub fn configs_from_names(names: &[String]) -> Result<Vec<(String, LaunchConfig)>> {
        if names.is_empty() {
            return Err(Error::invalid(
                "bench tuple: no launch configuration given (expected cte, thread or subwarp:W)",
            ));
        }
        let mut out: Vec<(String, LaunchConfig)> = Vec::with_capacity(names.len());
        for name in names {
            let d: Decomposition = name
                .parse()
                .map_err(|e| Error::invalid(format!("bench tuple --variants: {e}")))?;
            let config = if d == Decomposition::Cte {
                LaunchConfig::default()
            } else {
                LaunchConfig::new(d)
            };
            let name = d.to_string();
            if !out.iter().any(|(n, _)| *n == name) {
                out.push((name, config));
            }
        }
        Ok(out)
    }

    /// Checks the options before any work.
    ///
    /// # Errors
    /// No matrix, no launch configuration, or no timed run.
    pub fn validate(&self) -> Result<()> {
        if self.matrices.is_empty() {
            return Err(Error::invalid("bench tuple: no matrix to run"));
        }
        if self.configs.is_empty() {
            return Err(Error::invalid("bench tuple: no launch configuration"));
        }
        if self.runs == 0 {
            return Err(Error::invalid(
                "bench tuple: at least one timed run is needed",
            ));
        }
        Ok(())
    }
}

/// Median, fastest and slowest of one kernel's timed runs, in ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// The median (the upper one of an even count).
    pub median_ms: f64,
    /// The fastest run.
    pub min_ms: f64,
    /// The slowest run.
    pub max_ms: f64,
}

impl Timing {
    /// The summary of `ms`.
    ///
    /// # Errors
    /// `ms` empty.
    pub fn of(ms: &[f64]) -> Result<Self> {
        let median_ms =
            median(ms).ok_or_else(|| Error::invalid("bench tuple: a kernel has no timed run"))?;
        Ok(Timing {
            median_ms,
            min_ms: ms.iter().copied().fold(f64::INFINITY, f64::min),
            max_ms: ms.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// One pair timed under one launch configuration on one matrix.
#[derive(Debug, Clone)]
pub struct PairResult {
    /// The launch configuration's name (`cte`, `thread`, ...).
    pub config: String,
    /// The pair.
    pub pair: Pair,
    /// The scalar fold.
    pub scalar: Timing,
    /// The tuple fold.
    pub tuple: Timing,
    /// The largest error of the pair's GPU results against their twins,
    /// relative to the row's `Σ|a·x|` (SpMV; checked against
    /// [`TOLERANCE`]), or 0 (min-plus: checked for equality).
    pub max_rel_err: f64,
    /// The target ratio, where the benchmark has one.
    pub target: Option<f64>,
}

impl PairResult {
    /// The ratio tuple / scalar of the medians.
    pub fn ratio(&self) -> f64 {
        self.tuple.median_ms / self.scalar.median_ms
    }

    /// Whether the ratio meets the target (`None` without one).
    pub fn meets_target(&self) -> Option<bool> {
        self.target.map(|t| self.ratio() <= t)
    }
}

/// One matrix's results.
#[derive(Debug, Clone)]
pub struct MatrixTuple {
    /// The generator spec or the file name.
    pub name: String,
    /// Whether this is RMAT scale 22, the matrix of [`ARGMIN_TARGET`].
    pub rmat22: bool,
    /// Rows.
    pub nrows: usize,
    /// Columns (the length of `x`).
    pub ncols: usize,
    /// Nonzeros.
    pub nnz: usize,
    /// The longest row's nonzeros.
    pub max_row: usize,
    /// Every pair under every configuration that ran.
    pub pairs: Vec<PairResult>,
}

/// The whole run.
#[derive(Debug, Clone, Default)]
pub struct TupleReport {
    /// The device's name and architecture.
    pub device: String,
    /// The command line that produced the report.
    pub command: String,
    /// Timed runs per kernel.
    pub runs: usize,
    /// Untimed runs per kernel before timing.
    pub warmup: usize,
    /// The matrices measured.
    pub matrices: Vec<MatrixTuple>,
    /// What failed (a matrix that did not load, a result that differs from
    /// its twin, a CUDA error): one line each, the run went on.
    pub failures: Vec<String>,
}

/// Runs the benchmark on `device` (a CUDA device), reporting progress
/// through `progress`. A matrix or configuration that fails (loading, a
/// GPU result that differs from its CPU twin, a CUDA error) is recorded in
/// [`TupleReport::failures`] and the run goes on; callers should treat a
/// report with failures as a failed run.
///
/// # Errors
/// `device` not a CUDA device; invalid options; CUDA errors creating the
/// event timer.
pub fn run_tuple(
    device: &Device,
    opts: &TupleBenchOptions,
    command: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<TupleReport> {
    let Some(cuda) = device.cuda() else {
        return Err(Error::invalid("warpfit bench tuple needs a CUDA device"));
    };
    opts.validate()?;
    let timer = EventTimer::new(cuda)?;
    let info = device.describe();
    let mut report = TupleReport {
        device: match info.arch {
            Some(arch) => format!("{} ({arch})", info.name),
            None => info.name,
        },
        command: command.to_string(),
        runs: opts.runs,
        warmup: opts.warmup,
        ..TupleReport::default()
    };
    for source in &opts.matrices {
        let name = source.name();
        progress(&format!("{name}: generating/reading"));
        let a = match source.load::<f32>() {
            Ok(a) => a,
            Err(e) => {
                report.failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        match measure_matrix(device, Some(&timer), opts, source, &a, progress) {
            Ok((m, failures)) => {
                report.matrices.push(m);
                report.failures.extend(failures);
            }
            Err(e) => report.failures.push(format!("{name}: {e}")),
        }
    }
    Ok(report)
}

/// The input vector: pseudo-random multiples of 1/16 in [-1, 1] (no
/// negative zero), so that the min-plus folds meet ties wherever a row's
/// values repeat (integer weights, as in many Matrix Market files), and
/// the tie-break is checked there.
///
/// # Errors
/// `n` beyond the memory limit.
pub fn input_vector(n: usize) -> Result<Vec<f32>> {
    Ok(warpfit::runtime::gen::random_values(n, 17)?
        .into_iter()
        // `+ 0.0` turns a rounded -0.0 into 0.0.
        .map(|v| ((v * 16.0).round() / 16.0 + 0.0) as f32)
        .collect())
}

/// The four kernels' results on one matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Results {
    /// [`spmv_scalar()`].
    pub y_scalar: Vec<f32>,
    /// [`spmv_tuple()`].
    pub y_tuple: Vec<f32>,
    /// [`min_plus()`].
    pub d_scalar: Vec<f32>,
    /// [`argmin_plus()`]: the minimum.
    pub d_tuple: Vec<f32>,
    /// [`argmin_plus()`]: the column of the minimum.
    pub at: Vec<u32>,
}

/// The four kernels' CPU twins on `a` and `x` (the reference every GPU
/// result is checked against).
///
/// # Errors
/// `x` not of `a`'s column count; the twins' faults.
pub fn cpu_twins(a: &Csr<f32>, x: &[f32]) -> Result<Results> {
    if x.len() != a.ncols() {
        return Err(Error::length("x (= ncols)", a.ncols(), x.len()));
    }
    let (cpu, n) = (Device::cpu(), a.nrows());
    let (ptr, col, val) = (a.row_ptr(), a.col_idx(), a.values());
    let mut r = Results {
        y_scalar: vec![f32::NAN; n],
        y_tuple: vec![f32::NAN; n],
        d_scalar: vec![f32::NAN; n],
        d_tuple: vec![f32::NAN; n],
        at: vec![0; n],
    };
    spmv_scalar::launch(&cpu, n, ptr, col, val, x, &mut r.y_scalar)?;
    spmv_tuple::launch(&cpu, n, ptr, col, val, x, &mut r.y_tuple)?;
    min_plus::launch(&cpu, n, ptr, col, val, x, &mut r.d_scalar)?;
    argmin_plus::launch(&cpu, n, ptr, col, val, x, &mut r.d_tuple, &mut r.at)?;
    Ok(r)
}

/// Per row, `Σ |val · x[col]|` in f64: the scale of an SpMV row's rounding
/// error.
fn row_magnitudes(a: &Csr<f32>, x: &[f32]) -> Vec<f64> {
    (0..a.nrows())
        .into_par_iter()
        .map(|r| {
            a.row_range(r)
                .map(|k| (f64::from(a.values()[k]) * f64::from(x[a.col_idx()[k] as usize])).abs())
                .sum()
        })
        .collect()
}

/// The largest `|got - want| / (mag + tiny)` over rows (infinite where
/// they disagree on NaN).
fn max_rel_err(got: &[f32], want: &[f32], mag: &[f64]) -> f64 {
    got.par_iter()
        .zip(want)
        .zip(mag)
        .map(|((&g, &w), &m)| {
            if g.is_nan() || w.is_nan() {
                return if g.is_nan() && w.is_nan() {
                    0.0
                } else {
                    f64::INFINITY
                };
            }
            let e = (f64::from(g) - f64::from(w)).abs() / (m + 1e-30);
            if e.is_nan() {
                // inf - inf: equal infinities are no error.
                if g == w {
                    0.0
                } else {
                    f64::INFINITY
                }
            } else {
                e
            }
        })
        .reduce(|| 0.0, f64::max)
}

/// The first row where `got` and `want` differ (NaN equal to NaN).
fn first_difference<T: PartialEq + Copy + Send + Sync>(
    got: &[T],
    want: &[T],
    same: impl Fn(T, T) -> bool + Sync,
) -> Option<usize> {
    got.par_iter()
        .zip(want)
        .position_first(|(&g, &w)| !same(g, w))
}

/// f32 equality with NaN equal to NaN.
fn same_f32(a: f32, b: f32) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// A mismatch between a GPU result and its twin, as an error naming where.
fn mismatch(matrix: &str, config: &str, kernel: &str, what: String) -> Error {
    Error::Cuda {
        context: format!("benchmark tuple {matrix} / {config} / {kernel}"),
        message: format!("result differs from the CPU twin: {what}"),
    }
}

/// Checks `got` (one configuration's GPU results) against the twins:
/// the min and argmin exactly, the sums within [`TOLERANCE`] of the row's
/// magnitude. Returns the largest relative error of the sums.
fn check_results(
    matrix: &str,
    config: &str,
    got: &Results,
    want: &Results,
    mag: &[f64],
) -> Result<f64> {
    let mut worst: f64 = 0.0;
    for (kernel, g, w) in [
        ("spmv_scalar", &got.y_scalar, &want.y_scalar),
        ("spmv_tuple", &got.y_tuple, &want.y_tuple),
    ] {
        if g.len() != w.len() {
            return Err(Error::length(kernel, w.len(), g.len()));
        }
        let e = max_rel_err(g, w, mag);
        if e > TOLERANCE {
            return Err(mismatch(
                matrix,
                config,
                kernel,
                format!("max error {e:.3e} of the row's Σ|a·x| (tolerance {TOLERANCE:.0e})"),
            ));
        }
        worst = worst.max(e);
    }
    if let Some(r) = first_difference(&got.d_scalar, &want.d_scalar, same_f32) {
        let what = format!("row {r}: GPU {}, CPU {}", got.d_scalar[r], want.d_scalar[r]);
        return Err(mismatch(matrix, config, "min_plus", what));
    }
    let pairs = |d: &Results| -> Vec<(f32, u32)> {
        d.d_tuple
            .iter()
            .copied()
            .zip(d.at.iter().copied())
            .collect()
    };
    let (g, w) = (pairs(got), pairs(want));
    if let Some(r) = first_difference(&g, &w, |a, b| same_f32(a.0, b.0) && a.1 == b.1) {
        let what = format!("row {r}: GPU {:?}, CPU {:?}", g[r], w[r]);
        return Err(mismatch(matrix, config, "argmin_plus", what));
    }
    Ok(worst)
}

/// The device-resident arrays of one matrix.
struct Resident {
    ptr: DeviceVec<u32>,
    col: DeviceVec<u32>,
    val: DeviceVec<f32>,
    x: DeviceVec<f32>,
}

/// The outputs of one configuration's four launches, filled with values
/// no kernel writes (NaN, `u32::MAX - 1`), so a row left unwritten fails
/// the check.
struct Outputs {
    y_scalar: DeviceVec<f32>,
    y_tuple: DeviceVec<f32>,
    d_scalar: DeviceVec<f32>,
    d_tuple: DeviceVec<f32>,
    at: DeviceVec<u32>,
}

impl Outputs {
    fn new(device: &Device, n: usize) -> Result<Self> {
        let nan = vec![f32::NAN; n];
        Ok(Outputs {
            y_scalar: device.upload(&nan)?,
            y_tuple: device.upload(&nan)?,
            d_scalar: device.upload(&nan)?,
            d_tuple: device.upload(&nan)?,
            at: device.upload(&vec![u32::MAX - 1; n])?,
        })
    }

    fn download(&self) -> Result<Results> {
        Ok(Results {
            y_scalar: self.y_scalar.to_vec()?,
            y_tuple: self.y_tuple.to_vec()?,
            d_scalar: self.d_scalar.to_vec()?,
            d_tuple: self.d_tuple.to_vec()?,
            at: self.at.to_vec()?,
        })
    }
}

/// One matrix: the twins, the uploads, then every configuration checked
/// and timed. A configuration that fails is returned among the failures
/// (the others still run).
///
/// `timer` is `None` only on the CPU backend (the tests), where runs are
/// timed by the wall clock.
///
/// # Errors
/// The twins' faults, uploads.
pub fn measure_matrix(
    device: &Device,
    timer: Option<&EventTimer>,
    opts: &TupleBenchOptions,
    source: &MatrixSource,
    a: &Csr<f32>,
    progress: &mut dyn FnMut(&str),
) -> Result<(MatrixTuple, Vec<String>)> {
    let name = source.name();
    let x = input_vector(a.ncols())?;
    progress(&format!("{name}: CPU twins"));
    let want = cpu_twins(a, &x)?;
    let mag = row_magnitudes(a, &x);
    let resident = Resident {
        ptr: device.upload(a.row_ptr())?,
        col: device.upload(a.col_idx())?,
        val: device.upload(a.values())?,
        x: device.upload(&x)?,
    };
    let mut m = MatrixTuple {
        name: name.clone(),
        rmat22: is_rmat22(source),
        nrows: a.nrows(),
        ncols: a.ncols(),
        nnz: a.nnz(),
        max_row: a
            .row_ptr()
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0),
        pairs: Vec::new(),
    };
    let mut failures = Vec::new();
    for (config_name, config) in &opts.configs {
        let ctx = Config {
            device,
            timer,
            opts,
            source,
            name: &name,
            config_name,
            config,
            n: a.nrows(),
        };
        match ctx.run(&resident, &want, &mag, progress) {
            Ok(pairs) => m.pairs.extend(pairs),
            Err(e) => failures.push(format!("{name}, {config_name}: {e}")),
        }
    }
    Ok((m, failures))
}

/// One launch configuration on one matrix.
struct Config<'c> {
    device: &'c Device,
    timer: Option<&'c EventTimer>,
    opts: &'c TupleBenchOptions,
    source: &'c MatrixSource,
    name: &'c str,
    config_name: &'c str,
    config: &'c LaunchConfig,
    n: usize,
}

impl Config<'_> {
    /// Prepares the four launches, checks their results, then times both
    /// pairs.
    fn run(
        &self,
        r: &Resident,
        want: &Results,
        mag: &[f64],
        progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<PairResult>> {
        let (d, c, n) = (self.device, self.config, self.n);
        let o = Outputs::new(d, n)?;
        let (p, col, val, x) = (&r.ptr, &r.col, &r.val, &r.x);
        let ys = spmv_scalar::prepare(d, c, n, p, col, val, x, &o.y_scalar)?;
        let yt = spmv_tuple::prepare(d, c, n, p, col, val, x, &o.y_tuple)?;
        let ms = min_plus::prepare(d, c, n, p, col, val, x, &o.d_scalar)?;
        let mt = argmin_plus::prepare(d, c, n, p, col, val, x, &o.d_tuple, &o.at)?;
        for l in [&ys, &yt, &ms, &mt] {
            l.run()?;
            l.check()?;
        }
        let err = check_results(self.name, self.config_name, &o.download()?, want, mag)?;
        progress(&format!(
            "{}, {}: every result equals its CPU twin (sums within {err:.1e}); timing",
            self.name, self.config_name
        ));
        let mut out = Vec::with_capacity(2);
        for (pair, scalar, tuple) in [(Pair::Spmv, &ys, &yt), (Pair::ArgminPlus, &ms, &mt)] {
            let (s, t) = time_pair(self.timer, self.opts.warmup, self.opts.runs, scalar, tuple)?;
            let result = PairResult {
                config: self.config_name.to_string(),
                pair,
                scalar: Timing::of(&s)?,
                tuple: Timing::of(&t)?,
                max_rel_err: if pair == Pair::Spmv { err } else { 0.0 },
                target: pair.target(self.config_name, self.source),
            };
            progress(&format!(
                "{}, {}, {}: scalar {:.4} ms, tuple {:.4} ms, {:.3}×",
                self.name,
                self.config_name,
                pair.name(),
                result.scalar.median_ms,
                result.tuple.median_ms,
                result.ratio()
            ));
            out.push(result);
        }
        Ok(out)
    }
}

/// The time of one run of `l` (ms): between CUDA events after an L2
/// eviction, or by the wall clock without a timer.
fn time_one(timer: Option<&EventTimer>, l: &PreparedLaunch<'_>) -> Result<f64> {
    timed_runs(timer, 0, 1, &mut || l.run())?
        .first()
        .copied()
        .ok_or_else(|| Error::invalid("bench tuple: no timed run"))
}

/// `runs` timings (ms) of `scalar` and of `tuple`, after `warmup` untimed
/// runs of each, in alternating order (scalar first in even rounds, tuple
/// first in odd ones); the faults of every run checked.
fn time_pair(
    timer: Option<&EventTimer>,
    warmup: usize,
    runs: usize,
    scalar: &PreparedLaunch<'_>,
    tuple: &PreparedLaunch<'_>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    for _ in 0..warmup {
        scalar.run()?;
        tuple.run()?;
    }
    scalar.check()?;
    tuple.check()?;
    // Grown as runs complete: a huge `runs` costs time, not memory up front.
    let (mut s, mut t) = (
        Vec::with_capacity(runs.min(1 << 16)),
        Vec::with_capacity(runs.min(1 << 16)),
    );
    for round in 0..runs {
        if round % 2 == 0 {
            s.push(time_one(timer, scalar)?);
            t.push(time_one(timer, tuple)?);
        } else {
            t.push(time_one(timer, tuple)?);
            s.push(time_one(timer, scalar)?);
        }
    }
    scalar.check()?;
    tuple.check()?;
    Ok((s, t))
}

impl TupleReport {
    /// The report as Markdown: the matrices, one table row per matrix,
    /// configuration and pair, the summary against the targets, and the
    /// failures.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "Device: {}. Command: `{}`.\n", self.device, self.command);
        let _ = writeln!(
            s,
            "Median of {} timed runs per kernel after {} warm-up runs (CUDA events around each run, \
             L2 flushed before it; the scalar and the tuple kernel of a pair timed in alternating \
             order). Every GPU result was checked against its CPU twin first: the min and the \
             argmin exactly, the sums within {TOLERANCE:.0e} of the row's Σ|a·x|. Arrays \
             uploaded once (device-resident arguments, prepared launches). `x`: pseudo-random \
             multiples of 1/16 in [-1, 1]. `cte` is the default `LaunchConfig` (CTE, automatic \
             split); `thread` one row per thread. Ratio: tuple / scalar of the medians.\n",
            self.runs, self.warmup
        );
        if !self.matrices.is_empty() {
            let _ = writeln!(s, "| matrix | rows | columns | nonzeros | longest row |");
            let _ = writeln!(s, "|---|---:|---:|---:|---:|");
            for m in &self.matrices {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} |",
                    m.name, m.nrows, m.ncols, m.nnz, m.max_row
                );
            }
            s.push('\n');
            self.write_pairs(&mut s);
            self.write_summary(&mut s);
        }
        if !self.failures.is_empty() {
            let _ = writeln!(s, "### Failures\n");
            for f in &self.failures {
                let _ = writeln!(s, "- {}", f.replace('\n', " "));
            }
        }
        s
    }

    fn write_pairs(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "| matrix | decomposition | kernel pair | scalar ms (min–max) | tuple ms (min–max) | ratio | target | check |"
        );
        let _ = writeln!(s, "|---|---|---|---:|---:|---:|---|---|");
        for m in &self.matrices {
            for p in &m.pairs {
                let target = match (p.target, p.meets_target()) {
                    (Some(t), Some(true)) => format!("≤ {t:.2}×: met"),
                    (Some(t), _) => format!("≤ {t:.2}×: **missed**"),
                    (None, _) => "–".to_string(),
                };
                let check = match p.pair {
                    Pair::Spmv => format!("sums within {:.1e}", p.max_rel_err),
                    Pair::ArgminPlus => "exact".to_string(),
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {:.4} ({:.4}–{:.4}) | {:.4} ({:.4}–{:.4}) | {:.3}× | {target} | {check} |",
                    m.name,
                    p.config,
                    p.pair.name(),
                    p.scalar.median_ms,
                    p.scalar.min_ms,
                    p.scalar.max_ms,
                    p.tuple.median_ms,
                    p.tuple.min_ms,
                    p.tuple.max_ms,
                    p.ratio(),
                );
            }
        }
        s.push('\n');
    }

    fn write_summary(&self, s: &mut String) {
        let _ = writeln!(s, "### Summary against the targets\n");
        let spmv: Vec<(&str, &PairResult)> = self
            .matrices
            .iter()
            .flat_map(|m| m.pairs.iter().map(move |p| (m.name.as_str(), p)))
            .filter(|(_, p)| p.pair == Pair::Spmv && p.target.is_some())
            .collect();
        match spmv
            .iter()
            .max_by(|a, b| a.1.ratio().total_cmp(&b.1.ratio()))
        {
            Some((worst, p)) => {
                let met = spmv
                    .iter()
                    .filter(|(_, p)| p.meets_target() == Some(true))
                    .count();
                let _ = writeln!(
                    s,
                    "- (a) 1-tuple SpMV within {:.0}% of the scalar SpMV (`{DEFAULT_CONFIG}`): \
                     **{}**, met on {met} of {} matrices (worst {:.3}× on {worst}).",
                    (SPMV_TARGET - 1.0) * 100.0,
                    if met == spmv.len() { "met" } else { "missed" },
                    spmv.len(),
                    p.ratio()
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "- (a) 1-tuple SpMV within {:.0}%: not measured (needs `--variants {DEFAULT_CONFIG}`).",
                    (SPMV_TARGET - 1.0) * 100.0
                );
            }
        }
        let argmin: Vec<(&str, &PairResult)> = self
            .matrices
            .iter()
            .filter(|m| m.rmat22)
            .flat_map(|m| m.pairs.iter().map(move |p| (m.name.as_str(), p)))
            .filter(|(_, p)| p.pair == Pair::ArgminPlus && p.target.is_some())
            .collect();
        if argmin.is_empty() {
            let _ = writeln!(
                s,
                "- (b) 2-tuple argmin within {ARGMIN_TARGET:.2}× of the scalar min on RMAT scale 22 \
                 (`{DEFAULT_CONFIG}`): not measured (no RMAT scale 22 in this run)."
            );
        }
        for (name, p) in argmin {
            let _ = writeln!(
                s,
                "- (b) 2-tuple argmin within {ARGMIN_TARGET:.2}× of the scalar min on {name} \
                 (`{DEFAULT_CONFIG}`): **{}** ({:.3}×).",
                if p.meets_target() == Some(true) {
                    "met"
                } else {
                    "missed"
                },
                p.ratio()
            );
        }
        s.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small RMAT with values that tie often (0.5, 1, 1.5 or 2), and its
    /// input vector.
    fn small() -> (Csr<f32>, Vec<f32>) {
        let a = warpfit::runtime::gen::rmat(10, 8, 3)
            .unwrap()
            .map_values(|&v| (v * 4.0).ceil() * 0.5);
        let x = input_vector(a.ncols()).unwrap();
        (a, x)
    }

    /// The four kernels the plain way.
    fn plain_loops(a: &Csr<f32>, x: &[f32]) -> Results {
        let n = a.nrows();
        let (ptr, col, val) = (a.row_ptr(), a.col_idx(), a.values());
        let mut r = Results {
            y_scalar: vec![0.0; n],
            y_tuple: vec![0.0; n],
            d_scalar: vec![f32::INFINITY; n],
            d_tuple: vec![f32::INFINITY; n],
            at: vec![u32::MAX; n],
        };
        for row in 0..n {
            for k in ptr[row] as usize..ptr[row + 1] as usize {
                let c = col[k];
                r.y_scalar[row] += val[k] * x[c as usize];
                let t = x[c as usize] + val[k];
                r.d_scalar[row] = r.d_scalar[row].min(t);
                if t < r.d_tuple[row] || (t == r.d_tuple[row] && c < r.at[row]) {
                    r.d_tuple[row] = t;
                    r.at[row] = c;
                }
            }
        }
        r.y_tuple = r.y_scalar.clone();
        r
    }

    #[test]
    fn cpu_twins_equal_plain_loops() {
        let (a, x) = small();
        let want = plain_loops(&a, &x);
        // Dyadic values of few bits: every order of the sums is exact.
        let got = cpu_twins(&a, &x).unwrap();
        assert_eq!(got, want);
        // The plain functions are the reference too.
        let mut row = (vec![0.0f32; a.nrows()], vec![0u32; a.nrows()]);
        for r in 0..a.nrows() {
            argmin_plus(
                r,
                a.row_ptr(),
                a.col_idx(),
                a.values(),
                &x,
                &mut row.0,
                &mut row.1,
            );
        }
        assert_eq!((row.0, row.1), (want.d_tuple.clone(), want.at.clone()));
        // Ties happened, and the tie-break chose the lower column.
        let ties = (0..a.nrows())
            .filter(|&r| {
                let range = a.row_range(r);
                range
                    .clone()
                    .filter(|&k| x[a.col_idx()[k] as usize] + a.values()[k] == want.d_tuple[r])
                    .count()
                    > 1
            })
            .count();
        assert!(ties > 10, "{ties} rows with tied minima");
        // An empty row: infinity and u32::MAX.
        let empty = (0..a.nrows()).find(|&r| a.row_range(r).is_empty()).unwrap();
        assert_eq!(
            (got.d_tuple[empty], got.at[empty]),
            (f32::INFINITY, u32::MAX)
        );
        assert_eq!(got.d_scalar[empty], f32::INFINITY);
    }

    #[test]
    fn checks_catch_every_kind_of_difference() {
        let (a, x) = small();
        let want = cpu_twins(&a, &x).unwrap();
        let mag = row_magnitudes(&a, &x);
        assert_eq!(check_results("m", "cte", &want, &want, &mag).unwrap(), 0.0);
        let row = (0..a.nrows()).find(|&r| a.row_range(r).len() > 3).unwrap();
        let mut bad = want.clone();
        bad.at[row] = bad.at[row].wrapping_add(1);
        let e = check_results("m", "cte", &bad, &want, &mag)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("argmin_plus") && e.contains(&format!("row {row}")),
            "{e}"
        );
        let mut bad = want.clone();
        bad.d_scalar[row] = f32::NAN;
        let e = check_results("m", "thread", &bad, &want, &mag)
            .unwrap_err()
            .to_string();
        assert!(e.contains("min_plus") && e.contains("thread"), "{e}");
        let mut bad = want.clone();
        bad.y_tuple[row] += 1.0;
        let e = check_results("m", "cte", &bad, &want, &mag)
            .unwrap_err()
            .to_string();
        assert!(e.contains("spmv_tuple"), "{e}");
        let mut bad = want.clone();
        bad.y_scalar[row] = f32::NAN;
        assert!(check_results("m", "cte", &bad, &want, &mag).is_err());
        // A rounding-sized error passes.
        let mut close = want.clone();
        close.y_scalar[row] += (mag[row] * 1e-6) as f32;
        let e = check_results("m", "cte", &close, &want, &mag).unwrap();
        assert!(e > 0.0 && e < TOLERANCE, "{e}");
        let short = Results {
            y_scalar: vec![0.0],
            ..want.clone()
        };
        assert!(check_results("m", "cte", &short, &want, &mag).is_err());
    }

    #[test]
    fn options_configs_and_targets() {
        let opts = TupleBenchOptions::new(default_suite().unwrap());
        assert!(opts.validate().is_ok());
        let names: Vec<&str> = opts.configs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["cte", "thread"]);
        assert_eq!(opts.configs[0].1, LaunchConfig::default());
        assert!(is_rmat22(&opts.matrices[0]) && !is_rmat22(&opts.matrices[1]));
        assert_eq!(
            Pair::ArgminPlus.target("cte", &opts.matrices[0]),
            Some(1.30)
        );
        assert_eq!(Pair::ArgminPlus.target("cte", &opts.matrices[1]), None);
        assert_eq!(Pair::Spmv.target("cte", &opts.matrices[1]), Some(1.02));
        assert_eq!(Pair::Spmv.target("thread", &opts.matrices[0]), None);
        let c = TupleBenchOptions::configs_from_names(&[
            "THREAD".into(),
            "subwarp:8".into(),
            "thread".into(),
        ])
        .unwrap();
        let names: Vec<&str> = c.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["thread", "subwarp:8"]);
        let e = TupleBenchOptions::configs_from_names(&["warp".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("warp") && e.contains("subwarp:W"), "{e}");
        assert!(TupleBenchOptions::configs_from_names(&[]).is_err());
        for bad in [
            TupleBenchOptions {
                runs: 0,
                ..opts.clone()
            },
            TupleBenchOptions {
                configs: vec![],
                ..opts.clone()
            },
            TupleBenchOptions {
                matrices: vec![],
                ..opts.clone()
            },
        ] {
            assert!(bad.validate().is_err());
        }
        assert_eq!(small_suite().unwrap().len(), 2);
    }

    #[test]
    fn a_cpu_device_is_refused_in_one_line() {
        let opts = TupleBenchOptions::new(small_suite().unwrap());
        let e = run_tuple(&Device::cpu(), &opts, "x", &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("needs a CUDA device") && !e.contains('\n'),
            "{e}"
        );
    }

    /// The whole per-matrix protocol on the CPU backend (wall-clock
    /// timing): every configuration checked and timed, and the report.
    #[test]
    fn one_matrix_on_the_cpu_is_checked_timed_and_reported() {
        let source = MatrixSource::Gen("rmat:scale=9,edge_factor=8,seed=2".parse().unwrap());
        let a = source.load::<f32>().unwrap();
        let opts = TupleBenchOptions {
            runs: 3,
            warmup: 1,
            ..TupleBenchOptions::new(vec![source.clone()])
        };
        let mut lines = Vec::new();
        let (m, failures) = measure_matrix(&Device::cpu(), None, &opts, &source, &a, &mut |l| {
            lines.push(l.to_string())
        })
        .unwrap();
        assert!(failures.is_empty(), "{failures:?}");
        assert_eq!(m.pairs.len(), 4);
        assert!(m
            .pairs
            .iter()
            .all(|p| p.ratio().is_finite() && p.ratio() > 0.0));
        assert!(
            lines.iter().any(|l| l.contains("equals its CPU twin")),
            "{lines:?}"
        );
        let report = TupleReport {
            device: "host".into(),
            command: "warpfit bench tuple".into(),
            runs: 3,
            warmup: 1,
            matrices: vec![m],
            failures: vec!["other: it broke\non two lines".into()],
        };
        let md = report.to_markdown();
        assert_eq!(md.matches("| rmat:scale=9").count(), 5, "{md}");
        assert!(md.contains("≤ 1.02×"), "{md}");
        assert!(md.contains("(a) 1-tuple SpMV"), "{md}");
        assert!(md.contains("no RMAT scale 22 in this run"), "{md}");
        assert!(md.contains("- other: it broke on two lines"), "{md}");
    }
}

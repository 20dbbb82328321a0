//! What every harness shares: where a benchmark matrix comes from, the
//! default suite, the f64 reference an SpMV result is checked against,
//! timed runs, and report formatting.

use rayon::prelude::*;
use std::path::PathBuf;
use std::time::Instant;
use warpfit::__private::EventTimer;
use warpfit::apps::CgScalar;
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::sparse::mm;
use warpfit::runtime::Csr;
use warpfit::{Error, Result};

/// A benchmark matrix: a generator spec or a Matrix Market file.
#[derive(Debug, Clone)]
pub enum MatrixSource {
    /// `--gen SPEC`.
    Gen(GenSpec),
    /// `--mtx FILE`.
    Mtx(PathBuf),
}

impl MatrixSource {
    /// The canonical spec or the file name, for the report.
    pub fn name(&self) -> String {
        match self {
            MatrixSource::Gen(g) => g.to_string(),
            MatrixSource::Mtx(p) => p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
        }
    }

    /// Generates or reads the matrix with values of type `T` (generated
    /// values are small integers, exact in f32 and f64).
    ///
    /// # Errors
    /// Generator and Matrix Market errors.
    pub fn load<T: CgScalar>(&self) -> Result<Csr<T>> {
        match self {
            MatrixSource::Gen(g) => Ok(g.generate()?.map_values(|&v| T::from_f64(v as f64))),
            MatrixSource::Mtx(p) => mm::read_csr::<T>(p),
        }
    }
}

/// The generator specs `specs`, as sources.
///
/// # Errors
/// A spec that does not parse.
pub fn gens(specs: &[&str]) -> Result<Vec<MatrixSource>> {
    specs
        .iter()
        .map(|s| Ok(MatrixSource::Gen(s.parse()?)))
        .collect()
}

/// The default suite of `warpfit bench spmv` and `warpfit bench throttle`:
/// RMAT scale 20/22/24 (edge factor 16), uniform 2^22 and 2^24 with 16 per
/// row, rgg 2^22 in random and spatial order, the 4096² grid.
///
/// # Errors
/// None in practice (the specs are fixed); a `Result` so that a spec typo
/// is an error, not a panic.
pub fn default_suite() -> Result<Vec<MatrixSource>> {
    gens(&[
        "rmat:scale=20,edge_factor=16,seed=1",
        "rmat:scale=22,edge_factor=16,seed=1",
        "rmat:scale=24,edge_factor=16,seed=1",
        "uniform:n=4194304,per_row=16,seed=1",
        "uniform:n=16777216,per_row=16,seed=1",
        "rgg:n=4194304,seed=1,order=random",
        "rgg:n=4194304,seed=1,order=spatial",
        "grid2d:side=4096",
    ])
}

/// The largest error an SpMV result may have relative to its row's
/// `Σ|a·x|` (f32 sums against the f64 reference).
pub const TOLERANCE: f64 = 1e-4;

/// The f64 reference of `y = A·x` that every SpMV variant is checked
/// against before it is timed: per row, the sum and the sum of the terms'
/// magnitudes (which scales the error, so that cancellation in a row does
/// not fail a correct f32 sum).
#[derive(Debug, Clone)]
pub struct SpmvReference {
    rows: Vec<(f64, f64)>,
}

impl SpmvReference {
    /// The reference of `a·x`.
    ///
    /// # Errors
    /// `x` not of `a`'s column count; the reference beyond the memory limit.
    pub fn new(a: &Csr<f32>, x: &[f32]) -> Result<Self> {
        if x.len() != a.ncols() {
            return Err(Error::length("x (= ncols)", a.ncols(), x.len()));
        }
        warpfit::runtime::mem::check_elems::<(f64, f64)>("the f64 reference", a.nrows())?;
        let rows = (0..a.nrows())
            .into_par_iter()
            .map(|r| {
                a.row_range(r).fold((0.0, 0.0), |(s, m), k| {
                    let t = f64::from(a.values()[k]) * f64::from(x[a.col_idx()[k] as usize]);
                    (s + t, m + t.abs())
                })
            })
            .collect();
        Ok(SpmvReference { rows })
    }

    /// The largest `|y - ref| / (Σ|a·x| + tiny)` over rows (infinite where
    /// `y` is NaN); callers compare it with [`TOLERANCE`].
    ///
    /// # Errors
    /// `y` not of the matrix's row count.
    pub fn max_rel_err(&self, y: &[f32]) -> Result<f64> {
        if y.len() != self.rows.len() {
            return Err(Error::length("result", self.rows.len(), y.len()));
        }
        Ok(y.par_iter()
            .zip(&self.rows)
            .map(|(&g, &(r, mag))| {
                let e = (f64::from(g) - r).abs() / (mag + 1e-30);
                if e.is_nan() {
                    f64::INFINITY
                } else {
                    e
                }
            })
            .reduce(|| 0.0, f64::max))
    }
}

/// The times (ms) of `runs` calls of `f` after `warmup` untimed ones,
/// sorted: on CUDA each call between two events of `timer`, after its lead
/// buffer's clearing evicts L2 ([`EventTimer::time_ms`]); without a timer
/// (the CPU backend) the wall time of the call.
///
/// # Errors
/// `f`'s errors; CUDA errors of the events; no timed run.
pub fn timed_runs(
    timer: Option<&EventTimer>,
    warmup: usize,
    runs: usize,
    f: &mut dyn FnMut() -> Result<()>,
) -> Result<Vec<f64>> {
    if runs == 0 {
        return Err(Error::invalid("at least one timed run is needed"));
    }
    for _ in 0..warmup {
        f()?;
    }
    // Grown as runs complete: a huge `runs` costs time, never an allocation
    // up front.
    let mut ms = Vec::with_capacity(runs.min(1 << 16));
    for _ in 0..runs {
        ms.push(match timer {
            Some(timer) => timer.time_ms(1, f)?,
            None => {
                let t = Instant::now();
                f()?;
                t.elapsed().as_secs_f64() * 1e3
            }
        });
    }
    ms.sort_by(f64::total_cmp);
    Ok(ms)
}

/// The median of `v` (the upper one of an even count).
pub fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied()
}

/// `v` with `digits` decimals, or `–` when there is none.
pub fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{v:.digits$}"))
}

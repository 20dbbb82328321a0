//! SSSP, BFS and connected components under a choice of drivers
//! (`warpfit run sssp|bfs|cc --driver …`):
//!
//! - `topo`: topology-driven pulls to a fixed point with the graph and both
//!   vectors on the device (the [`relax`](super::relax),
//!   [`bfs_pull`](super::bfs_pull) and [`cc_pull_min`](super::cc_pull_min)
//!   kernels, Jacobi style: each round reads one vector and writes the
//!   other); every backend;
//! - the worklist drivers ([`Driver`]) over the push-form steps of
//!   [`push_kernels`](super::push_kernels): `topo:rounds` (topology-driven,
//!   in place), `data` (data-driven: near-far for sssp, FIFO for bfs and
//!   cc), `data:fifo`, `data:nearfar[:DELTA]`, `hybrid[:UP[:DOWN]]` (the
//!   temporal hybrid; for bfs it is direction-optimising: top-down while the
//!   frontier is small, bottom-up while it is large); every backend: the
//!   CPU's [`CpuRounds`], CUDA's [`CudaRounds`] with the graph and the
//!   vectors on the device and several rounds per host synchronisation;
//! - `auto`: one of them, chosen from the graph ([`auto_driver`]), on every
//!   backend.
//!
//! Every driver computes the same values, bit for bit: the steps are
//! monotone and each app's fixed point is unique (for sssp, the least f32
//! path sum; see [`reference::dijkstra`](crate::runtime::reference::dijkstra)).

use super::graph::{count_launches, count_slots, FixedPoint};
use super::kernels::{cc_pull_min, count_changed};
use super::push_kernels::{bfs_bottom_up, bfs_top_down, cc_pull, cc_push, sssp_pull, sssp_push};
use super::Graph;
use crate::runtime::worklist::drivers::{
    CpuRounds, Driver, DriverOptions, GraphShape, Order, RunReport, Start, Strategy,
};
use crate::runtime::worklist::Atomic;
use crate::runtime::{mem, Coo, Csr};
use crate::CudaRounds;
use crate::{Device, Error, LaunchConfig, Result};
use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// The graph apps a driver choice applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrivenApp {
    /// Single-source shortest paths.
    Sssp,
    /// Breadth-first levels.
    Bfs,
    /// Connected components.
    Cc,
}

impl fmt::Display for DrivenApp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DrivenApp::Sssp => "sssp",
            DrivenApp::Bfs => "bfs",
            DrivenApp::Cc => "cc",
        })
    }
}

/// The order of a data-driven driver as written on the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OrderChoice {
    /// `fifo`.
    Fifo,
    /// `nearfar[:DELTA]` (sssp): the bucket width, or the default from the
    /// weights ([`default_delta`]).
    NearFar(Option<f64>),
}

/// A `--driver` choice, before it meets a graph.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DriverChoice {
    /// `topo`: device-resident topology-driven pulls (every backend).
    Topo,
    /// `topo:rounds`: the worklist driver's topology-driven strategy.
    TopoRounds,
    /// `data[:fifo|:nearfar[:DELTA]]`; `None`: near-far for sssp, FIFO for
    /// bfs and cc.
    Data(Option<OrderChoice>),
    /// `hybrid[:UP[:DOWN]]`: fractions of the vertices (defaults
    /// [`HYBRID_UP`], for bfs on CUDA 0.01 as Beamer's rule has it for
    /// power-law graphs, and [`HYBRID_DOWN`]).
    Hybrid {
        /// Switch to topology-driven rounds above `UP · n` frontier items.
        up: Option<f64>,
        /// Back below `DOWN · n` changed vertices.
        down: Option<f64>,
    },
    /// `auto`: chosen from the graph ([`auto_driver`]).
    Auto,
}

impl FromStr for DriverChoice {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        use crate::runtime::error::excerpt;
        // The input as messages quote it: a short escaped excerpt.
        let shown = excerpt(s.as_bytes());
        let bad = || {
            Error::invalid(format!(
                "unknown driver `{shown}`: expected topo, topo:rounds, data, data:fifo, \
                 data:nearfar[:DELTA], hybrid[:UP[:DOWN]] or auto"
            ))
        };
        let fraction = |v: &str| -> Result<f64> {
            v.parse::<f64>()
                .ok()
                .filter(|f| (0.0..=1.0).contains(f))
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "driver `{shown}`: `{}` is not a fraction of the vertices (a number from 0 to 1)",
                        excerpt(v.as_bytes())
                    ))
                })
        };
        // Any letter case, as every enumerated value warpfit parses.
        let lowered = s.trim().to_ascii_lowercase();
        let parts: Vec<&str> = lowered.split(':').collect();
        Ok(match parts.as_slice() {
            ["topo"] => DriverChoice::Topo,
            ["topo", "rounds"] => DriverChoice::TopoRounds,
            ["data"] => DriverChoice::Data(None),
            ["data", "fifo"] => DriverChoice::Data(Some(OrderChoice::Fifo)),
            ["data", "nearfar"] => DriverChoice::Data(Some(OrderChoice::NearFar(None))),
            ["data", "nearfar", d] => {
                let delta = d
                    .parse::<f64>()
                    .ok()
                    .filter(|d| d.is_finite() && *d > 0.0)
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "driver `{shown}`: the near-far bucket width must be a positive number, \
                             got `{}`",
                            excerpt(d.as_bytes())
                        ))
                    })?;
                DriverChoice::Data(Some(OrderChoice::NearFar(Some(delta))))
            }
            ["hybrid"] => DriverChoice::Hybrid {
                up: None,
                down: None,
            },
            ["hybrid", up] => DriverChoice::Hybrid {
                up: Some(fraction(up)?),
                down: None,
            },
            ["hybrid", up, down] => {
                let (up, down) = (fraction(up)?, fraction(down)?);
                if down > up {
                    return Err(Error::invalid(format!(
                        "driver `{shown}`: DOWN ({down}) must not exceed UP ({up}): the hybrid returns \
                         to data-driven rounds below DOWN after leaving them above UP"
                    )));
                }
                DriverChoice::Hybrid {
                    up: Some(up),
                    down: Some(down),
                }
            }
            ["auto"] => DriverChoice::Auto,
            _ => return Err(bad()),
        })
    }
}

/// The hybrid's default switch to topology-driven rounds, as a fraction of
/// the vertices.
pub const HYBRID_UP: f64 = crate::runtime::worklist::drivers::HYBRID_TO_TOPOLOGY;
/// The hybrid's default switch back to data-driven rounds.
pub const HYBRID_DOWN: f64 = crate::runtime::worklist::drivers::HYBRID_TO_DATA;

/// The hybrid's switch to bottom-up rounds for bfs on CUDA: a frontier of
/// more than 1% of the vertices, as Beamer's rule puts it for power-law
/// graphs, whose first frontiers hold the hubs' edges (a frontier of
/// hubs is cheaper to find bottom-up than to expand). At 5% the second
/// round of a BFS from a hub of symmetrised RMAT expands the hub's
/// neighbours top-down, and the run is slower (`BENCHMARKS.md`, "Tuning
/// constants: history").
pub(crate) const HYBRID_UP_BFS_CUDA: f64 = 0.01;

/// The hybrid's default switch to topology-driven rounds for `app` on
/// `device`.
fn hybrid_up(app: DrivenApp, device: &Device) -> f64 {
    if app == DrivenApp::Bfs && device.cuda().is_some() {
        HYBRID_UP_BFS_CUDA
    } else {
        HYBRID_UP
    }
}
/// The near-far bucket width in mean edge weights on the CPU
/// ([`default_delta`]).
pub(crate) const DELTA_WEIGHTS: f64 = 4.0;

/// The near-far bucket width in mean edge weights on CUDA: wider, since a
/// round costs a few launches (about 30 µs) whatever its size, and a wider
/// bucket runs fewer rounds for a few more relaxations. Measured on the road
/// graph: `BENCHMARKS.md`, "Tuning constants: history".
pub(crate) const DELTA_WEIGHTS_CUDA: f64 = 16.0;

/// The default near-far bucket width on `device`: 4 (CUDA: 16) times the
/// mean weight `|a(i, j)|` of the edges with a positive weight (1 when there
/// is none), so that a bucket spans a few hops whatever the weights' scale.
pub fn default_delta(a: &Csr<f32>, device: &Device) -> f64 {
    let (sum, count) = a
        .values()
        .iter()
        .map(|w| w.abs() as f64)
        .filter(|w| *w > 0.0 && w.is_finite())
        .fold((0.0, 0u64), |(s, c), w| (s + w, c + 1));
    let mean = if count == 0 { 1.0 } else { sum / count as f64 };
    let per_weight = if device.cuda().is_some() {
        DELTA_WEIGHTS_CUDA
    } else {
        DELTA_WEIGHTS
    };
    per_weight * mean
}

/// What `auto` runs for `app` on a graph of this shape on `device`: the
/// rule is in `docs/drivers.md`, the measurements behind it in
/// `BENCHMARKS.md`.
/// `None`: the device-resident topology-driven pulls.
///
/// On CUDA a [skewed](GraphShape::skewed) graph runs bfs as the
/// direction-optimising hybrid (bottom-up past 1% of the vertices:
/// top-down from the source, its hubs donated to the grid, bottom-up rounds that stop at the
/// first parent while the frontier is large), sssp data-driven (FIFO) when
/// its hubs are long enough to be donated ([`DONATE_MIN`]), and cc (and sssp
/// otherwise) as the device-resident pulls, whose few rounds each sweep most
/// of the graph at full bandwidth (symmetrised RMAT 22 on an H100, each
/// choice the fastest of the drivers: `BENCHMARKS.md`, "Worklists and
/// drivers (CUDA)"); the CPU, where the hybrid wins on such
/// graphs, follows [`GraphShape::auto_strategy`]. A bounded-degree graph runs
/// data-driven on both (near-far for sssp).
pub fn auto_driver(
    app: DrivenApp,
    shape: &GraphShape,
    delta: f64,
    device: &Device,
) -> Option<Strategy> {
    let order = match app {
        DrivenApp::Sssp => Order::NearFar { delta },
        DrivenApp::Bfs | DrivenApp::Cc => Order::Fifo,
    };
    if device.cuda().is_some() && shape.skewed() {
        return match app {
            DrivenApp::Bfs => Some(Strategy::Hybrid {
                order,
                to_topology: HYBRID_UP_BFS_CUDA,
                to_data: HYBRID_DOWN,
            }),
            // Data-driven rounds win once their hubs are donated to the grid.
            DrivenApp::Sssp if shape.max_degree > DONATE_MIN as usize => {
                Some(Strategy::Data(Order::Fifo))
            }
            DrivenApp::Sssp | DrivenApp::Cc => None,
        };
    }
    Some(shape.auto_strategy(order))
}

/// How a graph app runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriveOptions {
    /// The driver.
    pub driver: DriverChoice,
    /// The worklists' initial capacity (default: a fifth of the vertices).
    pub initial_capacity: Option<usize>,
    /// Rounds per host synchronisation (default: the backend's).
    pub rounds_per_sync: Option<usize>,
    /// Deduplicating worklists (default true).
    pub dedup: bool,
    /// Work donation in CUDA frontier rounds on a skewed graph (default
    /// true): on a [skewed](GraphShape::skewed) graph whose longest row
    /// exceeds [`DONATE_MIN`], long frontier items are spread over a wave of
    /// warps ([`CudaRounds::donate`]).
    pub donate: bool,
}

impl DriveOptions {
    /// `driver` with the default lists.
    pub fn new(driver: DriverChoice) -> Self {
        DriveOptions {
            driver,
            initial_capacity: None,
            rounds_per_sync: None,
            dedup: true,
            donate: true,
        }
    }
}

/// A frontier item's fine tasks beyond which CUDA frontier rounds donate
/// it to a wave of warps ([`CudaRounds::donate`]): 8 chunks of 1024, where
/// a warp walking it alone would take 256 steps.
pub const DONATE_MIN: u32 = 8192;

/// Work donation for the frontier rounds over `g` (whose rows are the
/// frontier kernel's ranges): on a [skewed](GraphShape::skewed) graph whose
/// longest row exceeds [`DONATE_MIN`], unless `options` turn it off. Other
/// graphs have no item to donate and would pay the donation launch every
/// round (a road graph's thousands of rounds).
fn donation(g: &Csr<f32>, options: &DriveOptions) -> Option<u32> {
    let shape = GraphShape::of(g.row_ptr());
    (options.donate && shape.skewed() && shape.max_degree > DONATE_MIN as usize)
        .then_some(DONATE_MIN)
}

/// What a driven run did.
#[derive(Debug, Clone, PartialEq)]
pub struct DrivenReport {
    /// The driver that ran, in words.
    pub driver: String,
    /// Why `auto` chose it, or why another backend ran it.
    pub note: Option<String>,
    /// Rounds up to the last one needed.
    pub rounds: u64,
    /// Host synchronisations.
    pub syncs: u64,
    /// Items (or vertices) processed.
    pub processed: u64,
    /// Worklist growths.
    pub growths: u64,
    /// Chunks of 1024 fine tasks (edges) that CUDA frontier rounds donated
    /// to a wave of warps (`DriveOptions::donate`); 0 elsewhere.
    pub donated_chunks: u64,
    /// Building the graph, uploads, kernel preparation and, for a
    /// driver's rounds, its lists and launches (`Driver::prepare`).
    pub setup: Duration,
    /// The rounds.
    pub run: Duration,
    /// Per host synchronisation, the time since the previous one (per round
    /// where each round is waited for).
    pub times: super::IterationTimes,
    /// The worklist driver's report, when one ran.
    pub rounds_report: Option<RunReport>,
}

/// What the choice resolves to for one graph.
enum Resolved {
    Resident,
    Rounds(Strategy),
}

fn resolve(
    app: DrivenApp,
    choice: DriverChoice,
    a: &Csr<f32>,
    device: &Device,
) -> Result<(Resolved, Option<String>)> {
    let delta = || default_delta(a, device);
    let data_order = |order: Option<OrderChoice>| -> Result<Order> {
        Ok(match (app, order) {
            (DrivenApp::Sssp, None) => Order::NearFar { delta: delta() },
            (_, None | Some(OrderChoice::Fifo)) => Order::Fifo,
            (DrivenApp::Sssp, Some(OrderChoice::NearFar(d))) => Order::NearFar {
                delta: d.unwrap_or_else(delta),
            },
            (_, Some(OrderChoice::NearFar(_))) => {
                let why = if app == DrivenApp::Bfs {
                    "bfs rounds are levels already"
                } else {
                    "a label may fall in any round"
                };
                return Err(Error::invalid(format!(
                    "--driver data:nearfar orders items by a key (sssp's distance); {app} has none \
                     ({why}): use data or data:fifo"
                )));
            }
        })
    };
    let (resolved, note) = match choice {
        DriverChoice::Topo => (Resolved::Resident, None),
        DriverChoice::TopoRounds => (Resolved::Rounds(Strategy::Topology), None),
        DriverChoice::Data(order) => (Resolved::Rounds(Strategy::Data(data_order(order)?)), None),
        DriverChoice::Hybrid { up, down } => {
            let to_topology = up.unwrap_or_else(|| hybrid_up(app, device));
            let to_data = down.unwrap_or(HYBRID_DOWN).min(to_topology);
            let order = match app {
                DrivenApp::Sssp => data_order(None)?,
                _ => Order::Fifo,
            };
            (
                Resolved::Rounds(Strategy::Hybrid {
                    order,
                    to_topology,
                    to_data,
                }),
                None,
            )
        }
        DriverChoice::Auto => {
            let shape = GraphShape::of(a.row_ptr());
            let note = Some(format!("auto: {}", describe_shape(&shape)));
            match auto_driver(app, &shape, delta(), device) {
                None => (Resolved::Resident, note),
                Some(s) => (Resolved::Rounds(s), note),
            }
        }
    };
    Ok((resolved, note))
}

fn describe_shape(s: &GraphShape) -> String {
    format!(
        "{} vertices, mean degree {:.1}, max degree {}",
        s.vertices,
        s.mean_degree(),
        s.max_degree
    )
}

fn check_square(app: DrivenApp, a: &Csr<f32>) -> Result<()> {
    if a.nrows() != a.ncols() {
        return Err(Error::invalid(format!(
            "{app} needs a square matrix, got {} x {}",
            a.nrows(),
            a.ncols()
        )));
    }
    Ok(())
}

fn check_source(a: &Csr<f32>, source: usize) -> Result<()> {
    if source >= a.nrows() {
        return Err(Error::out_of_range("source vertex", source, a.nrows()));
    }
    Ok(())
}

fn driver_options(s: Strategy, o: &DriveOptions) -> DriverOptions {
    DriverOptions {
        initial_capacity: o.initial_capacity,
        rounds_per_sync: o.rounds_per_sync,
        dedup: o.dedup,
        ..DriverOptions::new(s)
    }
}

fn rounds_report(r: RunReport, setup: Duration, note: Option<String>) -> DrivenReport {
    DrivenReport {
        driver: r.strategy.to_string(),
        note,
        rounds: r.rounds,
        syncs: r.syncs,
        processed: r.processed,
        growths: r.growths,
        donated_chunks: 0,
        setup,
        run: r.time,
        times: r.sync_times.iter().copied().collect(),
        rounds_report: Some(r),
    }
}

/// [`rounds_report`] of a run on CUDA, with the chunks its frontier rounds
/// donated; drops the backend (whose closures borrow the run's arrays).
fn cuda_rounds_report(
    rounds: CudaRounds<'_>,
    r: RunReport,
    setup: Duration,
    note: Option<String>,
) -> Result<DrivenReport> {
    let donated_chunks = rounds.donated_chunks()?;
    drop(rounds);
    Ok(DrivenReport {
        donated_chunks,
        ..rounds_report(r, setup, note)
    })
}

fn resident_report(
    rounds: usize,
    n: usize,
    timings: super::Timings,
    note: Option<String>,
) -> DrivenReport {
    DrivenReport {
        driver: "topology-driven (device-resident pulls)".into(),
        note,
        rounds: rounds as u64,
        syncs: rounds as u64,
        processed: (rounds * n) as u64,
        growths: 0,
        donated_chunks: 0,
        setup: timings.setup,
        run: timings.iterations_total(),
        times: timings.iterations,
        rounds_report: None,
    }
}

/// The matrix with weights `|a(i, j)|`, copied only if some are negative.
fn abs_weights(a: &Csr<f32>) -> Result<Cow<'_, Csr<f32>>> {
    if a.values().iter().all(|w| !w.is_sign_negative()) {
        return Ok(Cow::Borrowed(a));
    }
    mem::check(
        "the graph's absolute weights",
        4 * (a.nrows() as u64 + 1) + 8 * a.nnz() as u64,
    )?;
    Ok(Cow::Owned(a.map_values(|w| w.abs())))
}

fn check_transpose(a: &Csr<f32>) -> Result<()> {
    mem::check(
        "the graph's in-edges (transpose)",
        4 * (a.ncols() as u64 + 1) + 8 * a.nnz() as u64,
    )
}

/// Shortest paths from `source` (weights `|a(i, j)|`, edge `i → j` for
/// entry `(i, j)`; unreachable: `f32::INFINITY`) under `options.driver`.
pub fn sssp_driven(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<f32>,
    source: usize,
    options: &DriveOptions,
) -> Result<(Vec<f32>, DrivenReport)> {
    sssp_driven_observed(device, config, a, source, options, &mut |_| {})
}

/// [`sssp_driven`], calling `on_round(rounds)` as rounds finish (after each
/// host synchronisation), for progress on long runs.
pub fn sssp_driven_observed(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<f32>,
    source: usize,
    options: &DriveOptions,
    on_round: &mut dyn FnMut(u64),
) -> Result<(Vec<f32>, DrivenReport)> {
    check_square(DrivenApp::Sssp, a)?;
    check_source(a, source)?;
    let (resolved, note) = resolve(DrivenApp::Sssp, options.driver, a, device)?;
    let setup_start = Instant::now();
    let strategy = match resolved {
        Resolved::Resident => {
            let g = Graph::from_matrix(a)?;
            let graph = setup_start.elapsed();
            let (dist, rounds, mut t) =
                super::sssp_observed(device, config, &g, source, &mut |r| on_round(r as u64))?;
            t.setup += graph;
            return Ok((dist, resident_report(rounds, a.nrows(), t, note)));
        }
        Resolved::Rounds(s) => s,
    };
    let n = a.nrows();
    let out = abs_weights(a)?;
    let needs = strategy.needs();
    let inc = if needs.topology {
        check_transpose(&out)?;
        Some(out.transpose())
    } else {
        None
    };
    let mut dist = mem::try_filled("the sssp distances", n, f32::INFINITY)?;
    dist[source] = 0.0;
    if device.cuda().is_some() {
        let dist = device.upload(&dist)?;
        let up = |g: &Csr<f32>| -> Result<_> {
            Ok((
                device.upload(g.row_ptr())?,
                device.upload(g.col_idx())?,
                device.upload(g.values())?,
            ))
        };
        let (ptr, dst, w) = up(&out)?;
        let pull = inc.as_ref().map(up).transpose()?;
        let mut rounds = CudaRounds::new(device, n)?
            .donate(donation(&out, options))
            .frontier(|b| sssp_push::prepare(device, config, b.tasks, &ptr, &dst, &w, &dist, b.out))
            .key(&dist)?;
        if let Some((iptr, isrc, iw)) = &pull {
            rounds = rounds.topology(|b| {
                sssp_pull::prepare(device, config, b.tasks, iptr, isrc, iw, &dist, b.out)
            });
        }
        let driver = Driver::new(driver_options(strategy, options));
        driver.prepare(&mut rounds, Start::Items(&[source as u32]))?;
        let setup = setup_start.elapsed();
        let report =
            driver.run_observed(&mut rounds, Start::Items(&[source as u32]), &mut |r| {
                on_round(r.rounds)
            })?;
        let report = cuda_rounds_report(rounds, report, setup, note)?;
        return Ok((dist.to_vec()?, report));
    }
    let d = Atomic::from_mut_slice(&mut dist);
    let mut cpu = CpuRounds::new(n)?
        .frontier(|v, step| {
            sssp_push(
                v as usize,
                out.row_ptr(),
                out.col_idx(),
                out.values(),
                d,
                step.out,
            )
        })
        .key(|v| d[v as usize].load() as f64);
    if let Some(inc) = &inc {
        cpu = cpu.topology(|v, step| {
            sssp_pull(
                v as usize,
                inc.row_ptr(),
                inc.col_idx(),
                inc.values(),
                d,
                step.out,
            )
        });
    }
    let driver = Driver::new(driver_options(strategy, options));
    driver.prepare(&mut cpu, Start::Items(&[source as u32]))?;
    let setup = setup_start.elapsed();
    let report = driver.run_observed(&mut cpu, Start::Items(&[source as u32]), &mut |r| {
        on_round(r.rounds)
    })?;
    drop(cpu);
    Ok((dist, rounds_report(report, setup, note)))
}

/// Breadth-first levels from `source` (unreachable: -1) under
/// `options.driver`: top-down as the data-driven step, bottom-up as the
/// topology-driven one.
pub fn bfs_driven(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<f32>,
    source: usize,
    options: &DriveOptions,
) -> Result<(Vec<i32>, DrivenReport)> {
    bfs_driven_observed(device, config, a, source, options, &mut |_| {})
}

/// [`bfs_driven`], calling `on_round(rounds)` as rounds finish (after each
/// host synchronisation), for progress on long runs.
pub fn bfs_driven_observed(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<f32>,
    source: usize,
    options: &DriveOptions,
    on_round: &mut dyn FnMut(u64),
) -> Result<(Vec<i32>, DrivenReport)> {
    check_square(DrivenApp::Bfs, a)?;
    check_source(a, source)?;
    i32::try_from(a.nrows()).map_err(|_| {
        Error::invalid(format!(
            "BFS levels are i32: {} vertices are too many",
            a.nrows()
        ))
    })?;
    let (resolved, note) = resolve(DrivenApp::Bfs, options.driver, a, device)?;
    let setup_start = Instant::now();
    let strategy = match resolved {
        Resolved::Resident => {
            let g = Graph::from_matrix(a)?;
            let graph = setup_start.elapsed();
            let (level, rounds, mut t) =
                super::bfs_observed(device, config, &g, source, &mut |r| on_round(r as u64))?;
            t.setup += graph;
            return Ok((level, resident_report(rounds, a.nrows(), t, note)));
        }
        Resolved::Rounds(s) => s,
    };
    let n = a.nrows();
    let inc = if strategy.needs().topology {
        check_transpose(a)?;
        Some(a.transpose())
    } else {
        None
    };
    let mut level = mem::try_filled("the bfs levels", n, -1i32)?;
    level[source] = 0;
    if device.cuda().is_some() {
        let level = device.upload(&level)?;
        let up = |g: &Csr<f32>| -> Result<_> {
            Ok((device.upload(g.row_ptr())?, device.upload(g.col_idx())?))
        };
        let (ptr, dst) = up(a)?;
        let pull = inc.as_ref().map(up).transpose()?;
        let mut rounds = CudaRounds::new(device, n)?
            .donate(donation(a, options))
            .frontier(|b| {
                bfs_top_down::prepare(device, config, b.tasks, &ptr, &dst, &level, b.out)
            });
        if let Some((iptr, isrc)) = &pull {
            rounds = rounds.topology(|b| {
                bfs_bottom_up::prepare(device, config, b.tasks, iptr, isrc, &level, b.round, b.out)
            });
        }
        let driver = Driver::new(driver_options(strategy, options));
        driver.prepare(&mut rounds, Start::Items(&[source as u32]))?;
        let setup = setup_start.elapsed();
        let report =
            driver.run_observed(&mut rounds, Start::Items(&[source as u32]), &mut |r| {
                on_round(r.rounds)
            })?;
        let report = cuda_rounds_report(rounds, report, setup, note)?;
        return Ok((level.to_vec()?, report));
    }
    let l = Atomic::from_mut_slice(&mut level);
    let mut cpu = CpuRounds::new(n)?
        .frontier(|v, step| bfs_top_down(v as usize, a.row_ptr(), a.col_idx(), l, step.out));
    if let Some(inc) = &inc {
        cpu = cpu.topology(|v, step| {
            bfs_bottom_up(
                v as usize,
                inc.row_ptr(),
                inc.col_idx(),
                l,
                &[step.round],
                step.out,
            )
        });
    }
    let driver = Driver::new(driver_options(strategy, options));
    driver.prepare(&mut cpu, Start::Items(&[source as u32]))?;
    let setup = setup_start.elapsed();
    let report = driver.run_observed(&mut cpu, Start::Items(&[source as u32]), &mut |r| {
        on_round(r.rounds)
    })?;
    drop(cpu);
    Ok((level, rounds_report(report, setup, note)))
}

/// The undirected adjacency of a square matrix: row `v` lists, sorted and
/// once each, every `u` with an entry `(v, u)` or `(u, v)` (self loops
/// included).
pub fn undirected(a: &Csr<f32>) -> Result<Csr<f32>> {
    let nnz = a.nnz();
    // Both directions as coordinates, then their canonical CSR.
    let m = 2 * nnz as u64;
    mem::check(
        "the undirected adjacency (both directions, sorted)",
        m.saturating_mul(24) + 8 * (a.nrows() as u64 + 1),
    )?;
    let coo = a.to_coo();
    let (n, _, rows, cols, _) = coo.into_parts();
    let mut r = Vec::with_capacity(2 * nnz);
    r.extend_from_slice(&rows);
    r.extend_from_slice(&cols);
    let mut c = cols;
    c.extend_from_slice(&rows);
    drop(rows);
    let both = Coo::new(n, n, r, c, vec![1.0f32; 2 * nnz])?;
    let mut csr = both.into_csr()?;
    csr.merge_duplicates(|_, _| {});
    Ok(csr)
}

/// Connected components with edge directions ignored: per vertex, the
/// smallest vertex id of its component, by label propagation under
/// `options.driver` (data-driven rounds start from every vertex).
pub fn cc_driven(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<f32>,
    options: &DriveOptions,
) -> Result<(Vec<u32>, DrivenReport)> {
    cc_driven_observed(device, config, a, options, &mut |_| {})
}

/// [`cc_driven`], calling `on_round(rounds)` as rounds finish (after each
/// host synchronisation), for progress on long runs.
pub fn cc_driven_observed(
    device: &Device,
    config: &LaunchConfig,
    a: &Csr<f32>,
    options: &DriveOptions,
    on_round: &mut dyn FnMut(u64),
) -> Result<(Vec<u32>, DrivenReport)> {
    check_square(DrivenApp::Cc, a)?;
    crate::runtime::error::to_u32("cc vertices", a.nrows())?;
    let (resolved, note) = resolve(DrivenApp::Cc, options.driver, a, device)?;
    let n = a.nrows();
    if n == 0 {
        let report = DrivenReport {
            driver: "none (no vertex)".into(),
            note,
            rounds: 0,
            syncs: 0,
            processed: 0,
            growths: 0,
            donated_chunks: 0,
            setup: Duration::ZERO,
            run: Duration::ZERO,
            times: super::IterationTimes::new(),
            rounds_report: None,
        };
        return Ok((Vec::new(), report));
    }
    let setup_start = Instant::now();
    let nbr = undirected(a)?;
    let graph = setup_start.elapsed();
    let strategy = match resolved {
        Resolved::Resident => {
            let (label, rounds, mut t) = cc_resident(device, config, &nbr, on_round)?;
            t.setup += graph;
            return Ok((label, resident_report(rounds, n, t, note)));
        }
        Resolved::Rounds(s) => s,
    };
    let mut label: Vec<u32> = Vec::new();
    mem::try_reserve(&mut label, n, "the cc labels")?;
    label.extend(0..n as u32);
    if device.cuda().is_some() {
        let label = device.upload(&label)?;
        let (ptr, adj) = (device.upload(nbr.row_ptr())?, device.upload(nbr.col_idx())?);
        let mut rounds = CudaRounds::new(device, n)?
            .donate(donation(&nbr, options))
            .frontier(|b| cc_push::prepare(device, config, b.tasks, &ptr, &adj, &label, b.out))
            .topology(|b| cc_pull::prepare(device, config, b.tasks, &ptr, &adj, &label, b.out));
        let driver = Driver::new(driver_options(strategy, options));
        driver.prepare(&mut rounds, Start::All)?;
        let setup = setup_start.elapsed();
        let report = driver.run_observed(&mut rounds, Start::All, &mut |r| on_round(r.rounds))?;
        let report = cuda_rounds_report(rounds, report, setup, note)?;
        return Ok((label.to_vec()?, report));
    }
    let lab = Atomic::from_mut_slice(&mut label);
    let (ptr, adj) = (nbr.row_ptr(), nbr.col_idx());
    let mut cpu = CpuRounds::new(n)?
        .frontier(|v, step| cc_push(v as usize, ptr, adj, lab, step.out))
        .topology(|v, step| cc_pull(v as usize, ptr, adj, lab, step.out));
    let driver = Driver::new(driver_options(strategy, options));
    driver.prepare(&mut cpu, Start::All)?;
    let setup = setup_start.elapsed();
    let report = driver.run_observed(&mut cpu, Start::All, &mut |r| on_round(r.rounds))?;
    drop(cpu);
    Ok((label, rounds_report(report, setup, note)))
}

/// Label propagation on the device: [`cc_pull_min`] Jacobi rounds to a
/// fixed point, the changed count read a few rounds behind.
fn cc_resident(
    device: &Device,
    config: &LaunchConfig,
    nbr: &Csr<f32>,
    on_round: &mut dyn FnMut(u64),
) -> Result<(Vec<u32>, usize, super::Timings)> {
    let setup_start = Instant::now();
    let n = nbr.nrows();
    let n32 = crate::runtime::error::to_u32("cc vertices", n)?;
    let ptr = device.upload(nbr.row_ptr())?;
    let adj = device.upload(nbr.col_idx())?;
    let start: Vec<u32> = (0..n32).collect();
    let label = device.upload(&start)?;
    drop(start);
    let next = device.alloc::<u32>(n)?;
    let (splits, changed) = count_slots(device, n)?;
    let rounds = FixedPoint {
        vectors: [&label, &next],
        steps: [
            cc_pull_min::prepare(device, config, n, &ptr, &adj, &label, &next)?,
            cc_pull_min::prepare(device, config, n, &ptr, &adj, &next, &label)?,
        ],
        counts: count_launches(&splits, [&label, &next], |split, from, to| {
            count_changed::u32::prepare(
                device,
                &split.config,
                &split.tasks,
                n32,
                from,
                to,
                &changed,
            )
        })?,
        changed: &changed,
    };
    let setup = setup_start.elapsed();
    // Labels fall at least once per round until the fixed point: at most n
    // rounds, one more proves it.
    let (result, rounds, iterations) = rounds.run(device, n + 1, &mut |r| on_round(r as u64))?;
    Ok((
        result.to_vec()?,
        rounds,
        super::Timings::new(setup, iterations),
    ))
}

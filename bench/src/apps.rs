//! `warpfit bench apps`: every app's device-resident loop against its
//! kernels' device time, conjugate gradient against a CG whose SpMV is
//! cuSPARSE's, and PageRank end to end on CUDA and on the CPU backend.
//!
//! How each number is taken:
//! - an app's **iteration time** is the median of the wall times its own
//!   driver reports (`*_observed`, [`Timings`]): the launches of one
//!   iteration, the wait for the device and the iteration's one
//!   download, as `warpfit run` times them;
//! - its **kernel time** is the sum over the launches of one iteration of
//!   each launch's device time, taken with CUDA events around
//!   `kernel_repeats` back-to-back runs of that launch (prepared on arrays of
//!   the same sizes as the driver's, with the same configuration), divided by
//!   the repeats, the host's launch latency kept out by a memset that
//!   occupies the device while the runs are enqueued ([`EventTimer`]);
//! - the ratio iteration / kernels is then the host's share: 1.0 means the
//!   device never waits for the host.
//!
//! The CG comparison runs one loop twice, once with warpfit's SpMV and once
//! with `cusparseSpMV` (default algorithm) on the same device vectors; the
//! vector operations are warpfit's CG kernels in both. The warpfit side's
//! iteration time is the `cg` app's own.

use crate::baseline::{CusparseSpmvOn, SpmvAlg, SpmvScalar};
use crate::input::{gens, opt, MatrixSource};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;
use warpfit::__private::EventTimer;
use warpfit::apps::bench_support::{
    pipelined, slot_of, CgIteration, CgLists, Probe, Vectors, DEPTH, PAP, RZ,
};
use warpfit::apps::{
    bfs_observed, bfs_pull, cg_observed, count_changed, dangling_rank, pagerank, pagerank_contrib,
    pagerank_observed, pagerank_pull_resident, relax, rhs_for_ones, spmv_input, sssp_observed,
    CgOptions, CgOrder, CgScalar, Graph, PageRankOptions, Preconditioner, Timings,
};
use warpfit::gpu::levels::DeviceCsr;
use warpfit::runtime::Csr;
use warpfit::CudaDevice;
use warpfit::{split_one_task, Device, DeviceVec, Error, LaunchConfig, PreparedLaunch, Result};

/// What `warpfit bench apps` runs.
#[derive(Debug, Clone)]
pub struct AppsBenchOptions {
    /// Inputs of spmv, pagerank, sssp and bfs (run after CG's). The first
    /// one also runs PageRank end to end on CUDA and on the CPU backend.
    pub graph_inputs: Vec<MatrixSource>,
    /// Symmetric positive definite inputs of CG (f64 and f32, and the
    /// cuSPARSE comparison in f64).
    pub cg_inputs: Vec<MatrixSource>,
    /// Back-to-back runs of one launch between its two CUDA events.
    pub kernel_repeats: usize,
    /// Timed SpMV iterations (after one untimed run).
    pub spmv_iters: usize,
    /// PageRank iterations, for the per-iteration and end-to-end runs.
    pub pagerank_iters: usize,
    /// CG's relative residual tolerance.
    pub cg_tol: f64,
    /// CG's iteration cap in f64.
    pub cg_max_iters: usize,
    /// CG's iteration cap in f32, which only times iterations (f32 may not
    /// reach `cg_tol` on the larger matrices).
    pub cg_f32_iters: usize,
    /// Whether PageRank end to end also runs on the CPU backend.
    pub cpu_pagerank: bool,
    /// Where to write the end-to-end PageRank matrix as Matrix Market (for
    /// the GraphBLAS reference on the same matrix).
    pub write_pagerank_mtx: Option<PathBuf>,
}

impl AppsBenchOptions {
    /// The inputs: RMAT 22, uniform 2^22, poisson2d side 2048 and rgg
    /// 2^22 for the apps; poisson2d side 2048 and poisson3d side 128 for CG.
    ///
    /// # Errors
    /// None in practice (the specs are fixed); kept a `Result` so a spec
    /// typo is an error, not a panic.
    pub fn full() -> Result<Self> {
        Ok(AppsBenchOptions {
            graph_inputs: gens(&[
                "rmat:scale=22,edge_factor=16,seed=1",
                "uniform:n=4194304,per_row=16,seed=1",
                "poisson2d:side=2048",
                "rgg:n=4194304,seed=1",
            ])?,
            cg_inputs: gens(&["poisson2d:side=2048", "poisson3d:side=128"])?,
            kernel_repeats: 10,
            spmv_iters: 20,
            pagerank_iters: 20,
            cg_tol: 1e-6,
            cg_max_iters: 20_000,
            cg_f32_iters: 300,
            cpu_pagerank: true,
            write_pagerank_mtx: None,
        })
    }

    /// A quick run: the same shapes, small.
    ///
    /// # Errors
    /// As for [`AppsBenchOptions::full`].
    pub fn small() -> Result<Self> {
        Ok(AppsBenchOptions {
            graph_inputs: gens(&[
                "rmat:scale=14,edge_factor=16,seed=1",
                "uniform:n=65536,per_row=16,seed=1",
                "poisson2d:side=128",
                "rgg:n=65536,seed=1",
            ])?,
            cg_inputs: gens(&["poisson2d:side=64", "poisson3d:side=16"])?,
            kernel_repeats: 5,
            spmv_iters: 10,
            pagerank_iters: 20,
            cg_tol: 1e-6,
            cg_max_iters: 5_000,
            cg_f32_iters: 50,
            cpu_pagerank: true,
            write_pagerank_mtx: None,
        })
    }
}

/// One launch's device time.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTime {
    /// The kernel (or library call).
    pub name: String,
    /// Milliseconds per run.
    pub ms: f64,
}

/// An app's iteration time against its kernels' time, on one input.
#[derive(Debug, Clone, PartialEq)]
pub struct AppMeasure {
    /// The input's name.
    pub input: String,
    /// `spmv`, `pagerank`, `sssp`, `bfs`, `cg f64`, `cg f32`.
    pub app: String,
    /// Iterations the driver ran.
    pub iterations: usize,
    /// Median iteration wall time (ms).
    pub iteration_ms: f64,
    /// One iteration's launches.
    pub kernels: Vec<KernelTime>,
}

impl AppMeasure {
    /// The kernels' total device time of one iteration (ms).
    pub fn kernel_sum_ms(&self) -> f64 {
        self.kernels.iter().map(|k| k.ms).sum()
    }

    /// Iteration time over kernel time (`None` without kernel time).
    pub fn ratio(&self) -> Option<f64> {
        let k = self.kernel_sum_ms();
        (k > 0.0).then(|| self.iteration_ms / k)
    }
}

/// CG with warpfit's SpMV against CG with cuSPARSE's, on one matrix (f64).
#[derive(Debug, Clone, PartialEq)]
pub struct CgComparison {
    /// The input's name.
    pub input: String,
    /// Rows and stored entries.
    pub rows: usize,
    /// Stored entries.
    pub nnz: usize,
    /// Iterations of the `cg` app to the tolerance.
    pub warpfit_iterations: usize,
    /// The `cg` app's median iteration time (ms).
    pub warpfit_ms: f64,
    /// Iterations of the cuSPARSE CG to the same tolerance.
    pub cusparse_iterations: usize,
    /// Its median iteration time (ms).
    pub cusparse_ms: f64,
    /// Device time of each operation of the cuSPARSE CG's iteration.
    pub cusparse_ops: Vec<KernelTime>,
    /// The cuSPARSE CG's iterations, summed (ms).
    pub cusparse_total_ms: f64,
    /// The `cg` app's iterations, summed (ms).
    pub warpfit_total_ms: f64,
    /// The `cg` app renumbered by levels (`CgOrder::Levels`).
    /// `None` when the runs did no iteration (a tolerance of 1 or more),
    /// so nothing was renumbered.
    pub levels: Option<LevelsCg>,
}

/// The `cg` app renumbered by breadth-first levels, end to end: once with
/// the order made before the first iteration (nothing hides its cost: on
/// CUDA it is made on the device, which is always so), and on the CPU
/// backend once more pipelined (made on a CPU thread during the set-up and
/// the first iterations, which run in the given order).
#[derive(Debug, Clone, PartialEq)]
pub struct LevelsCg {
    /// Iterations run (planned first).
    pub iterations: usize,
    /// Time of the level order (ms): made on the device on CUDA, with the
    /// renumbering's sources on the host on the CPU backend.
    pub planning_ms: f64,
    /// Host time of the switch: the matrix renumbered, the vectors'
    /// permutation enqueued (ms).
    pub switch_ms: f64,
    /// Median iteration after the switch (ms).
    pub iteration_ms: f64,
    /// Planning plus every iteration, the switch included (ms).
    pub total_ms: f64,
    /// The pipelined run's iterations, summed (ms; `None` on CUDA, where
    /// the order is made on the device before the first iteration).
    pub pipelined_total_ms: Option<f64>,
    /// The pipelined run's iterations before the switch (`None`: it never
    /// switched).
    pub pipelined_before: Option<usize>,
    /// Largest `|x_levels − x| / max |x|` against the app in the given
    /// order, over both runs.
    pub max_rel_diff: f64,
}

impl CgComparison {
    /// The cuSPARSE CG's iterations over the renumbered run, planning
    /// included: above 1 the renumbered run is faster end to end.
    pub fn levels_speedup(&self) -> Option<f64> {
        let l = self.levels.as_ref()?;
        (l.total_ms > 0.0).then(|| self.cusparse_total_ms / l.total_ms)
    }
}

impl CgComparison {
    /// cuSPARSE CG time over warpfit CG time: above 1 warpfit is faster.
    pub fn speedup(&self) -> Option<f64> {
        (self.warpfit_ms > 0.0).then(|| self.cusparse_ms / self.warpfit_ms)
    }

    /// Whether the iteration counts agree within one.
    pub fn iterations_agree(&self) -> bool {
        self.warpfit_iterations.abs_diff(self.cusparse_iterations) <= 1
    }
}

/// PageRank end to end (graph build, upload, iterations, download; the
/// matrix already in memory).
#[derive(Debug, Clone, PartialEq)]
pub struct PagerankEndToEnd {
    /// The input's name.
    pub input: String,
    /// Iterations.
    pub iterations: usize,
    /// Seconds on CUDA (kernels already compiled and cached).
    pub cuda_s: f64,
    /// Seconds on the CPU backend, when run.
    pub cpu_s: Option<f64>,
    /// Largest difference between the two rank vectors, when both ran.
    pub max_abs_diff: Option<f64>,
}

/// An input as generated or read.
#[derive(Debug, Clone, PartialEq)]
pub struct InputInfo {
    /// The input's name.
    pub name: String,
    /// Rows.
    pub rows: usize,
    /// Stored entries.
    pub nnz: usize,
    /// Seconds to generate or read it.
    pub load_s: f64,
}

/// Everything `warpfit bench apps` measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AppsReport {
    /// The GPU, in words.
    pub device: String,
    /// The command that produced the report.
    pub command: String,
    /// The inputs, in order.
    pub inputs: Vec<InputInfo>,
    /// Per app and input: iteration against kernel time.
    pub apps: Vec<AppMeasure>,
    /// CG against cuSPARSE CG.
    pub cg: Vec<CgComparison>,
    /// PageRank end to end.
    pub pagerank: Vec<PagerankEndToEnd>,
    /// Measurements that failed, with their error (the run goes on).
    pub failures: Vec<String>,
}

/// The share of each kernel in `kernels`, largest first, as `name 61%`.
fn dominant(kernels: &[KernelTime]) -> String {
    let total: f64 = kernels.iter().map(|k| k.ms).sum();
    if total <= 0.0 {
        return String::new();
    }
    let mut sorted: Vec<&KernelTime> = kernels.iter().collect();
    sorted.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    sorted
        .iter()
        .take(3)
        .map(|k| format!("{} {:.0}%", k.name, 100.0 * k.ms / total))
        .collect::<Vec<_>>()
        .join(", ")
}

impl AppsReport {
    /// The report as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(
            md,
            "Device: {}. Command: `{}`.\n",
            self.device, self.command
        );
        if !self.inputs.is_empty() {
            md.push_str("| input | rows | nnz | generate/read (s) |\n|---|---:|---:|---:|\n");
            for i in &self.inputs {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {:.2} |",
                    i.name, i.rows, i.nnz, i.load_s
                );
            }
            md.push('\n');
        }
        if !self.apps.is_empty() {
            md.push_str(
                "### Iteration time against kernel time\n\n\
                 Iteration: median wall time of the app's device-resident loop, per \
                 iteration: the interval between the host receiving consecutive iterations' \
                 readback (the drivers keep three iterations enqueued; spmv waits for each \
                 run). Kernels: sum of one iteration's \
                 launches, each timed with CUDA events over back-to-back runs enqueued \
                 behind a memset (no host latency inside). Target: ratio ≤ 1.15. `cg f32` runs a \
                 fixed number of iterations (timing only); sssp and bfs start from vertex 0.\n\n\
                 | input | app | iterations | iteration (ms) | kernels (ms) | ratio | dominant kernels |\n\
                 |---|---|---:|---:|---:|---:|---|\n",
            );
            for a in &self.apps {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {:.3} | {:.3} | {} | {} |",
                    a.input,
                    a.app,
                    a.iterations,
                    a.iteration_ms,
                    a.kernel_sum_ms(),
                    opt(a.ratio(), 2),
                    dominant(&a.kernels)
                );
            }
            md.push('\n');
        }
        if !self.cg.is_empty() {
            md.push_str(
                "### CG (f64) against CG with cuSPARSE SpMV\n\n\
                 Same vector kernels, same tolerance; cuSPARSE: `cusparseSpMV`, default \
                 algorithm, on the solver's device vectors. Speed-up: cuSPARSE CG time over \
                 warpfit CG time (target ≥ 1.0); iterations must agree within 1.\n\n\
                 | input | rows | nnz | warpfit iters | warpfit (ms/iter) | cuSPARSE iters | \
                 cuSPARSE (ms/iter) | speed-up | iterations agree | cuSPARSE CG's dominant ops |\n\
                 |---|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
            );
            for c in &self.cg {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {:.3} | {} | {:.3} | {} | {} | {} |",
                    c.input,
                    c.rows,
                    c.nnz,
                    c.warpfit_iterations,
                    c.warpfit_ms,
                    c.cusparse_iterations,
                    c.cusparse_ms,
                    opt(c.speedup(), 2),
                    if c.iterations_agree() { "yes" } else { "NO" },
                    dominant(&c.cusparse_ops)
                );
            }
            md.push_str(
                "\n### CG (f64) end to end, renumbered by levels, planning included\n\n\
                 Every run's iterations summed (set-up excluded: the same uploads for all). \
                 `levels`: the `cg` app with `CgOrder::Levels`, the level order made before the \
                 first iteration (its time added; on CUDA on the device, on the CPU backend on \
                 the host), the matrix renumbered on the device in the first iteration; \
                 `pipelined` (CPU backend only): the same order made on a CPU thread during the \
                 set-up and the first iterations. Speed-up: the cuSPARSE CG's iterations over \
                 `levels`' planning plus iterations. `x` against the app in the given order: \
                 largest difference over `max |x|`.\n\n\
                 | input | iters | cuSPARSE (ms) | warpfit, given order (ms) | level order (ms) | \
                 switch (ms) | levels (ms/iter) | levels, planning included (ms) | speed-up over \
                 cuSPARSE | pipelined (ms, iterations before the switch) | x rel diff |\n\
                 |---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n",
            );
            for c in &self.cg {
                let Some(l) = &c.levels else {
                    let _ = writeln!(
                        md,
                        "| {} | 0 | – | – | – | – | – | – | – | – | – |",
                        c.input
                    );
                    continue;
                };
                let _ = writeln!(
                    md,
                    "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.3} | {:.1} | {} | {} | {:.1e} |",
                    c.input,
                    l.iterations,
                    c.cusparse_total_ms,
                    c.warpfit_total_ms,
                    l.planning_ms,
                    l.switch_ms,
                    l.iteration_ms,
                    l.total_ms,
                    opt(c.levels_speedup(), 2),
                    l.pipelined_total_ms.map_or("–".to_string(), |t| format!(
                        "{t:.1} ({})",
                        l.pipelined_before
                            .map_or("never switched".to_string(), |k| k.to_string())
                    )),
                    l.max_rel_diff
                );
            }
            md.push('\n');
        }
        if !self.pagerank.is_empty() {
            md.push_str(
                "### PageRank end to end\n\n\
                 Graph build (transpose), upload, iterations and download, the matrix already \
                 in memory (generation excluded); CUDA with its kernels already in the cache.\n\n\
                 | input | iterations | CUDA (s) | CPU backend (s) | CPU / CUDA | max abs diff |\n\
                 |---|---:|---:|---:|---:|---:|\n",
            );
            for p in &self.pagerank {
                let _ = writeln!(
                    md,
                    "| {} | {} | {:.3} | {} | {} | {} |",
                    p.input,
                    p.iterations,
                    p.cuda_s,
                    opt(p.cpu_s, 3),
                    opt(p.cpu_s.map(|c| c / p.cuda_s), 1),
                    p.max_abs_diff
                        .map_or_else(|| "–".to_string(), |d| format!("{d:.1e}"))
                );
            }
            md.push('\n');
        }
        if !self.failures.is_empty() {
            md.push_str("### Failures\n\n");
            for f in &self.failures {
                let _ = writeln!(md, "- {f}");
            }
            md.push('\n');
        }
        md
    }
}

/// The in-edges of `g` on `device` (row pointers, sources), as the graph
/// apps upload them.
fn upload_pattern(device: &Device, g: &Graph) -> Result<(DeviceVec<u32>, DeviceVec<u32>)> {
    Ok((
        device.upload(g.incoming.row_ptr())?,
        device.upload(g.incoming.col_idx())?,
    ))
}

/// The vertex count as the u32 a whole-array reduction takes.
fn vertices_u32(g: &Graph) -> Result<u32> {
    u32::try_from(g.len())
        .map_err(|_| Error::invalid(format!("{} vertices are more than u32 holds", g.len())))
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Times each launch of `launches` with `timer` (nothing without one: the
/// CPU backend, in tests).
fn time_launches(
    timer: Option<&EventTimer>,
    repeats: usize,
    launches: &[(&str, &PreparedLaunch<'_>)],
) -> Result<Vec<KernelTime>> {
    let Some(timer) = timer else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(launches.len());
    for (name, l) in launches {
        let t = timer.time_ms(repeats, &mut || l.run())?;
        l.check()?;
        out.push(KernelTime {
            name: (*name).to_string(),
            ms: t,
        });
    }
    Ok(out)
}

/// The benchmark's state on one GPU. `cuda` and `timer` are `None` only on
/// the CPU backend, which the tests use to check the drivers' replicas
/// (kernel times and cuSPARSE need a GPU).
struct Bench<'a> {
    device: Device,
    cuda: Option<CudaDevice>,
    config: LaunchConfig,
    timer: Option<EventTimer>,
    opts: &'a AppsBenchOptions,
    report: AppsReport,
}

/// Runs the benchmark on `device` (a CUDA device), reporting progress
/// through `progress` and the report so far through `snapshot` after each
/// input (so that a run cut short keeps what it measured).
///
/// # Errors
/// `device` not a GPU, and CUDA errors outside one measurement (a failing
/// measurement is recorded in [`AppsReport::failures`] and the run goes on).
pub fn run_apps_bench(
    device: &Device,
    opts: &AppsBenchOptions,
    command: &str,
    progress: &mut dyn FnMut(&str),
    snapshot: &mut dyn FnMut(&AppsReport),
) -> Result<AppsReport> {
    if device.cuda().is_none() {
        return Err(Error::invalid("warpfit bench apps needs a CUDA device"));
    }
    let mut b = Bench::new(device, opts, command)?;
    // CG first: its comparison with cuSPARSE is quick, and a run cut short
    // by a time limit then still has it.
    for input in &opts.cg_inputs {
        let name = input.name();
        progress(&format!("{name}: generating/reading (cg)"));
        let t = Instant::now();
        let a = match input.load::<f64>() {
            Ok(a) => a,
            Err(e) => {
                b.report.failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        if !b.report.inputs.iter().any(|i| i.name == name) {
            b.report.inputs.push(InputInfo {
                name: name.clone(),
                rows: a.nrows(),
                nnz: a.nnz(),
                load_s: t.elapsed().as_secs_f64(),
            });
        }
        let r = b.cg_f64(&name, &a, progress);
        b.record(&name, "cg f64", r);
        let a32 = a.map_values(|&v| v as f32);
        drop(a);
        let r = b.cg_f32(&name, &a32, progress);
        b.record(&name, "cg f32", r);
        snapshot(&b.report);
    }
    for (i, input) in opts.graph_inputs.iter().enumerate() {
        let name = input.name();
        progress(&format!("{name}: generating/reading"));
        let t = Instant::now();
        let a = match input.load::<f32>() {
            Ok(a) => a,
            Err(e) => {
                b.report.failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        b.report.inputs.push(InputInfo {
            name: name.clone(),
            rows: a.nrows(),
            nnz: a.nnz(),
            load_s: t.elapsed().as_secs_f64(),
        });
        b.graph_apps(&name, &a, progress);
        if i == 0 {
            b.pagerank_end_to_end(&name, &a, progress);
        }
        snapshot(&b.report);
    }
    Ok(b.report)
}

impl<'a> Bench<'a> {
    fn new(device: &Device, opts: &'a AppsBenchOptions, command: &str) -> Result<Self> {
        let cuda = device.cuda().cloned();
        let info = device.describe();
        Ok(Bench {
            device: device.clone(),
            timer: cuda.as_ref().map(EventTimer::new).transpose()?,
            cuda,
            config: LaunchConfig {
                decomposition: "cte".parse()?,
                ..LaunchConfig::default()
            },
            report: AppsReport {
                device: match info.arch {
                    Some(arch) => format!("{} ({arch})", info.name),
                    None => info.name,
                },
                command: command.to_string(),
                ..AppsReport::default()
            },
            opts,
        })
    }

    fn record(&mut self, input: &str, what: &str, r: Result<()>) {
        if let Err(e) = r {
            self.report.failures.push(format!("{input}, {what}: {e}"));
        }
    }

    fn graph_apps(&mut self, name: &str, a: &Csr<f32>, progress: &mut dyn FnMut(&str)) {
        progress(&format!("{name}: spmv"));
        let r = self.spmv(name, a);
        self.record(name, "spmv", r);
        let g = match Graph::from_matrix(a) {
            Ok(g) => g,
            Err(e) => {
                self.report.failures.push(format!("{name}: graph: {e}"));
                return;
            }
        };
        progress(&format!("{name}: pagerank"));
        let r = self.pagerank(name, &g);
        self.record(name, "pagerank", r);
        progress(&format!("{name}: sssp"));
        let r = self.sssp(name, &g);
        self.record(name, "sssp", r);
        progress(&format!("{name}: bfs"));
        let r = self.bfs(name, &g);
        self.record(name, "bfs", r);
    }

    /// The SpMV app's loop (`warpfit run spmv`): one prepared launch, run
    /// and waited for per iteration.
    fn spmv(&mut self, name: &str, a: &Csr<f32>) -> Result<()> {
        let d = &self.device;
        let (ptr, col, val) = (
            d.upload(a.row_ptr())?,
            d.upload(a.col_idx())?,
            d.upload(a.values())?,
        );
        let x = d.upload(&spmv_input(a.ncols()))?;
        let y = d.alloc::<f32>(a.nrows())?;
        let l = warpfit::apps::spmv::f32::prepare(
            d,
            &self.config,
            a.nrows(),
            &ptr,
            &col,
            &val,
            &x,
            &y,
        )?;
        l.run()?;
        d.synchronize()?;
        l.check()?;
        // Grown as launches complete, not allocated up front for a huge count.
        let mut times = Vec::with_capacity(self.opts.spmv_iters.min(1 << 16));
        for _ in 0..self.opts.spmv_iters {
            let t = Instant::now();
            l.run()?;
            d.synchronize()?;
            times.push(t.elapsed());
        }
        l.check()?;
        let timings = Timings::new(Default::default(), times.into_iter().collect());
        let kernels = time_launches(
            self.timer.as_ref(),
            self.opts.kernel_repeats,
            &[("spmv", &l)],
        )?;
        self.push_app(name, "spmv", &timings, kernels);
        Ok(())
    }

    fn push_app(&mut self, input: &str, app: &str, timings: &Timings, kernels: Vec<KernelTime>) {
        self.report.apps.push(AppMeasure {
            input: input.to_string(),
            app: app.to_string(),
            iterations: timings.iterations.len(),
            iteration_ms: timings.median_iteration().map_or(0.0, ms),
            kernels,
        });
    }

    fn pagerank(&mut self, name: &str, g: &Graph) -> Result<()> {
        let opts = PageRankOptions {
            iterations: self.opts.pagerank_iters,
            ..PageRankOptions::default()
        };
        let (_, timings) = pagerank_observed(&self.device, &self.config, g, opts, &mut |_| {})?;
        // The driver's forward launches, on arrays of the same sizes.
        let d = &self.device;
        let n = g.len();
        let n32 = vertices_u32(g)?;
        let (ptr, src) = upload_pattern(d, g)?;
        let out_degree = d.upload(&g.out_degree)?;
        let rank = d.upload(&vec![1.0 / n as f32; n])?;
        let next = d.alloc::<f32>(n)?;
        let contrib = d.alloc::<f32>(n)?;
        let dangling = d.alloc::<f64>(1)?;
        let split = split_one_task(d, 0, 0..n)?;
        let c = &self.config;
        let l1 = pagerank_contrib::prepare(d, c, n, &rank, &out_degree, &contrib)?;
        let l2 = dangling_rank::prepare(
            d,
            &split.config,
            &split.tasks,
            n32,
            &rank,
            &out_degree,
            &dangling,
        )?;
        let l3 = pagerank_pull_resident::prepare(
            d,
            c,
            n,
            &ptr,
            &src,
            &contrib,
            &dangling,
            opts.damping,
            n as f64,
            &next,
        )?;
        let kernels = time_launches(
            self.timer.as_ref(),
            self.opts.kernel_repeats,
            &[
                ("pagerank_contrib", &l1),
                ("dangling_rank", &l2),
                ("pagerank_pull", &l3),
            ],
        )?;
        self.push_app(name, "pagerank", &timings, kernels);
        Ok(())
    }

    fn sssp(&mut self, name: &str, g: &Graph) -> Result<()> {
        let (_, _, timings) = sssp_observed(&self.device, &self.config, g, 0, &mut |_| {})?;
        let d = &self.device;
        let n = g.len();
        let n32 = vertices_u32(g)?;
        let (ptr, src) = upload_pattern(d, g)?;
        let w = d.upload(g.incoming.values())?;
        let mut start = vec![f32::INFINITY; n];
        start[0] = 0.0;
        let dist = d.upload(&start)?;
        let next = d.alloc::<f32>(n)?;
        let changed = d.alloc_mapped::<u32>(1)?;
        let split = split_one_task(d, 0, 0..n)?;
        let l1 = relax::prepare(d, &self.config, n, &ptr, &src, &w, &dist, &next)?;
        let l2 = count_changed::f32::prepare(
            d,
            &split.config,
            &split.tasks,
            n32,
            &dist,
            &next,
            &changed,
        )?;
        let kernels = time_launches(
            self.timer.as_ref(),
            self.opts.kernel_repeats,
            &[("relax", &l1), ("count_changed", &l2)],
        )?;
        self.push_app(name, "sssp", &timings, kernels);
        Ok(())
    }

    fn bfs(&mut self, name: &str, g: &Graph) -> Result<()> {
        let (_, _, timings) = bfs_observed(&self.device, &self.config, g, 0, &mut |_| {})?;
        let d = &self.device;
        let n = g.len();
        let n32 = vertices_u32(g)?;
        let (ptr, src) = upload_pattern(d, g)?;
        let mut start = vec![-1i32; n];
        start[0] = 0;
        let level = d.upload(&start)?;
        let next = d.alloc::<i32>(n)?;
        let changed = d.alloc_mapped::<u32>(1)?;
        let split = split_one_task(d, 0, 0..n)?;
        let l1 = bfs_pull::prepare(d, &self.config, n, &ptr, &src, &level, &next)?;
        let l2 = count_changed::i32::prepare(
            d,
            &split.config,
            &split.tasks,
            n32,
            &level,
            &next,
            &changed,
        )?;
        let kernels = time_launches(
            self.timer.as_ref(),
            self.opts.kernel_repeats,
            &[("bfs_pull", &l1), ("count_changed", &l2)],
        )?;
        self.push_app(name, "bfs", &timings, kernels);
        Ok(())
    }

    fn pagerank_end_to_end(&mut self, name: &str, a: &Csr<f32>, progress: &mut dyn FnMut(&str)) {
        let opts = PageRankOptions {
            iterations: self.opts.pagerank_iters,
            ..PageRankOptions::default()
        };
        if let Some(path) = &self.opts.write_pagerank_mtx {
            progress(&format!("{name}: writing {}", path.display()));
            if let Err(e) = warpfit::runtime::sparse::mm::write(path, a) {
                self.report
                    .failures
                    .push(format!("{name}: writing {}: {e}", path.display()));
            }
        }
        let run = |device: &Device| -> Result<(f64, Vec<f32>)> {
            let t = Instant::now();
            let g = Graph::from_matrix(a)?;
            let rank = pagerank(device, &self.config, &g, opts)?;
            Ok((t.elapsed().as_secs_f64(), rank))
        };
        progress(&format!("{name}: pagerank end to end, CUDA"));
        let (cuda_s, cuda_rank) = match run(&self.device) {
            Ok(r) => r,
            Err(e) => {
                self.record(name, "pagerank end to end (CUDA)", Err(e));
                return;
            }
        };
        let mut entry = PagerankEndToEnd {
            input: name.to_string(),
            iterations: opts.iterations,
            cuda_s,
            cpu_s: None,
            max_abs_diff: None,
        };
        if self.opts.cpu_pagerank {
            progress(&format!("{name}: pagerank end to end, CPU backend"));
            match run(&Device::cpu()) {
                Ok((cpu_s, cpu_rank)) => {
                    entry.cpu_s = Some(cpu_s);
                    entry.max_abs_diff = Some(
                        cuda_rank
                            .iter()
                            .zip(&cpu_rank)
                            .map(|(a, b)| f64::from((a - b).abs()))
                            .fold(0.0, f64::max),
                    );
                }
                Err(e) => self.record(name, "pagerank end to end (CPU)", Err(e)),
            }
        }
        self.report.pagerank.push(entry);
    }

    /// The `cg` app in f64, then the same loop with cuSPARSE's SpMV.
    fn cg_f64(&mut self, name: &str, a: &Csr<f64>, progress: &mut dyn FnMut(&str)) -> Result<()> {
        let b = rhs_for_ones(a)?;
        let cg_opts = CgOptions {
            tol: self.opts.cg_tol,
            max_iters: self.opts.cg_max_iters,
            ..CgOptions::default()
        };
        progress(&format!("{name}: cg f64 (the app)"));
        let app = cg_observed(&self.device, &self.config, a, &b, &cg_opts, &mut |_, _| {})?;
        progress(&format!("{name}: cg f64 (warpfit SpMV, kernels timed)"));
        let ours = self.cg_loop(a, &b, &cg_opts, false)?;
        progress(&format!("{name}: cg f64 (cusparseSpMV)"));
        let theirs = self.cg_loop(a, &b, &cg_opts, true)?;
        progress(&format!(
            "{name}: cg f64 renumbered by levels (planned first)"
        ));
        let first_opts = CgOptions {
            order: CgOrder::Levels,
            plan_first: true,
            ..cg_opts
        };
        let first = cg_observed(
            &self.device,
            &self.config,
            a,
            &b,
            &first_opts,
            &mut |_, _| {},
        )?;
        // On CUDA the order is made on the device before the first
        // iteration either way: a pipelined run would repeat this one.
        let piped = match self.device.cuda() {
            Some(_) => None,
            None => {
                progress(&format!("{name}: cg f64 renumbered by levels (pipelined)"));
                let pipelined_opts = CgOptions {
                    plan_first: false,
                    ..first_opts
                };
                Some(cg_observed(
                    &self.device,
                    &self.config,
                    a,
                    &b,
                    &pipelined_opts,
                    &mut |_, _| {},
                )?)
            }
        };
        let scale = app.x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = |x: &[f64]| {
            x.iter()
                .zip(&app.x)
                .fold(0.0f64, |m, (u, v)| m.max((u - v).abs()))
                / scale.max(f64::MIN_POSITIVE)
        };
        let levels = first.renumbered.as_ref().map(|r| LevelsCg {
            iterations: first.iterations,
            planning_ms: ms(r.planning),
            switch_ms: ms(r.switch),
            iteration_ms: first.timings.iterations.median_from(1).map_or(0.0, ms),
            total_ms: ms(r.planning) + ms(first.timings.iterations_total()),
            pipelined_total_ms: piped.as_ref().map(|p| ms(p.timings.iterations_total())),
            pipelined_before: piped
                .as_ref()
                .and_then(|p| p.renumbered.as_ref())
                .map(|r| r.iterations_before),
            max_rel_diff: piped
                .as_ref()
                .map_or(diff(&first.x), |p| diff(&first.x).max(diff(&p.x))),
        });
        self.push_app(name, "cg f64", &app.timings, ours.ops);
        self.report.cg.push(CgComparison {
            input: name.to_string(),
            rows: a.nrows(),
            nnz: a.nnz(),
            warpfit_iterations: app.iterations,
            warpfit_ms: app.timings.median_iteration().map_or(0.0, ms),
            cusparse_iterations: theirs.iterations,
            cusparse_ms: theirs.median_ms,
            cusparse_ops: theirs.ops,
            cusparse_total_ms: theirs.total_ms,
            warpfit_total_ms: ms(app.timings.iterations_total()),
            levels,
        });
        Ok(())
    }

    /// The `cg` app in f32 for a fixed number of iterations (tolerance 0).
    fn cg_f32(&mut self, name: &str, a: &Csr<f32>, progress: &mut dyn FnMut(&str)) -> Result<()> {
        let b = rhs_for_ones(a)?;
        let cg_opts = CgOptions {
            tol: 0.0,
            max_iters: self.opts.cg_f32_iters,
            ..CgOptions::default()
        };
        progress(&format!("{name}: cg f32 (the app)"));
        let app = cg_observed(&self.device, &self.config, a, &b, &cg_opts, &mut |_, _| {})?;
        let ours = self.cg_loop(a, &b, &cg_opts, false)?;
        self.push_app(name, "cg f32", &app.timings, ours.ops);
        Ok(())
    }

    /// Plain CG from `x = 0` with the `cg` app's launches in its order (the
    /// SpMV warpfit's or, with `cusparse`, `cusparseSpMV`), then each
    /// operation's device time.
    ///
    /// The operations are timed on a second set of vectors whose update is
    /// never frozen (`stop` below every residual): on the solver's own
    /// vectors after convergence the update kernels would skip their work.
    fn cg_loop<T: CgScalar + SpmvScalar>(
        &self,
        a: &Csr<T>,
        b: &[T],
        opts: &CgOptions,
        cusparse: bool,
    ) -> Result<CgLoop> {
        let d = &self.device;
        let n = a.nrows();
        let b_norm = b
            .iter()
            .map(|&v| v.to_f64() * v.to_f64())
            .sum::<f64>()
            .sqrt();
        let m = DeviceCsr::upload(d, a)?;
        let lists = CgLists::new(d, n)?;
        let plain = CgOptions {
            precond: Preconditioner::None,
            ..*opts
        };
        let v = Vectors::start(d, a, b, &plain, b_norm)?;
        let solver = self.cg_ops(a, &m, &v, &lists, cusparse)?;
        // The app's driver: scalars read back a few iterations behind.
        let max_iters = if opts.tol >= 1.0 { 0 } else { opts.max_iters };
        let rounds = pipelined(
            d,
            Probe::Mapped {
                slots: &v.hist,
                len: 3,
            },
            DEPTH,
            max_iters,
            &mut |k| solver.run(k),
            &mut |done, dots| {
                let pap = dots[PAP].to_f64();
                if pap.is_nan() || pap <= 0.0 {
                    return Err(Error::invalid(format!(
                        "cg ({}) broke down at iteration {done}: pᵀA·p = {pap:.3e}",
                        solver.spmv.name(),
                    )));
                }
                Ok(dots[RZ] <= v.stop)
            },
        )?;
        solver.check()?;
        let timings = Timings::new(Default::default(), rounds.times);

        let mut vt = Vectors::start(d, a, b, &plain, b_norm)?;
        vt.stop = T::from_f64(-1.0);
        let timed_ops = self.cg_ops(a, &m, &vt, &lists, cusparse)?;
        // One iteration first: pᵀq > 0, so the timed update does its work.
        timed_ops.run(1)?;
        let reps = self.opts.kernel_repeats;
        let mut timed = Vec::new();
        if let Some(timer) = &self.timer {
            timed.push(KernelTime {
                name: timed_ops.spmv.name().to_string(),
                ms: timer.time_ms(reps, &mut || timed_ops.spmv.run())?,
            });
        }
        timed.extend(time_launches(
            self.timer.as_ref(),
            reps,
            &timed_ops.named(),
        )?);
        Ok(CgLoop {
            iterations: timings.iterations.len(),
            median_ms: timings.median_iteration().map_or(0.0, ms),
            total_ms: ms(timings.iterations_total()),
            ops: timed,
        })
    }

    /// The launches of plain CG iterations on `v` (both parities), with
    /// `r₀ᵀr₀` already computed.
    fn cg_ops<'v, T: CgScalar + SpmvScalar>(
        &self,
        a: &Csr<T>,
        m: &'v DeviceCsr<T>,
        v: &'v Vectors<T>,
        lists: &'v CgLists,
        cusparse: bool,
    ) -> Result<CgOps<'v, T>> {
        let d = &self.device;
        let n = v.n;
        let c = &self.config;
        let spmv = if cusparse {
            let cuda = self
                .cuda
                .as_ref()
                .ok_or_else(|| Error::invalid("a CG with cuSPARSE needs a CUDA device"))?;
            CgSpmv::Cusparse(Box::new(CusparseSpmvOn::new(
                cuda,
                a.ncols(),
                &m.row_ptr,
                &m.col_idx,
                &m.values,
                &v.p,
                &v.q,
                SpmvAlg::Default,
            )?))
        } else {
            CgSpmv::Warpfit(T::prepare_spmv(d, c, n, m, &v.p, &v.q)?)
        };
        let by_parity = [
            CgIteration::prepare(d, c, v, lists, 0)?,
            CgIteration::prepare(d, c, v, lists, 1)?,
        ];
        by_parity[0].dot_rz.run()?;
        d.synchronize()?;
        Ok(CgOps { spmv, by_parity })
    }
}

/// What [`Bench::cg_loop`] measured.
struct CgLoop {
    iterations: usize,
    median_ms: f64,
    total_ms: f64,
    ops: Vec<KernelTime>,
}

/// Plain CG iterations' launches ([`Bench::cg_ops`]), as the app runs them.
struct CgOps<'a, T: CgScalar + SpmvScalar> {
    spmv: CgSpmv<'a, T>,
    by_parity: [CgIteration<'a>; 2],
}

impl<'a, T: CgScalar + SpmvScalar> CgOps<'a, T> {
    /// Enqueues iteration `k` (from 1).
    fn run(&self, k: usize) -> Result<()> {
        self.spmv.run()?;
        self.by_parity[k % 2].run(slot_of(k, DEPTH))
    }

    fn check(&self) -> Result<()> {
        self.by_parity
            .iter()
            .flat_map(CgIteration::launches)
            .try_for_each(|l| l.check())
    }

    /// An odd iteration's launches after the SpMV, named.
    fn named(&self) -> Vec<(&'static str, &PreparedLaunch<'a>)> {
        let it = &self.by_parity[1];
        vec![
            ("dot pᵀq", &it.dot_pq),
            ("x, r update", &it.step),
            ("dot rᵀr", &it.dot_rz),
            ("p update", &it.direction),
            ("publish scalars", &it.publish[0]),
        ]
    }
}

/// CG's SpMV: warpfit's prepared launch or cuSPARSE on the same vectors.
enum CgSpmv<'a, T: CgScalar + SpmvScalar> {
    Warpfit(PreparedLaunch<'a>),
    /// Boxed: the wrapper holds cuSPARSE's descriptors and work buffer.
    Cusparse(Box<CusparseSpmvOn<'a, T>>),
}

impl<T: CgScalar + SpmvScalar> CgSpmv<'_, T> {
    fn run(&self) -> Result<()> {
        match self {
            CgSpmv::Warpfit(l) => l.run(),
            CgSpmv::Cusparse(s) => s.run(),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            CgSpmv::Warpfit(_) => "spmv",
            CgSpmv::Cusparse(_) => "cusparseSpMV",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str, ms: f64) -> KernelTime {
        KernelTime {
            name: name.to_string(),
            ms,
        }
    }

    #[test]
    fn ratios_and_dominant_kernels() {
        let a = AppMeasure {
            input: "g".into(),
            app: "pagerank".into(),
            iterations: 20,
            iteration_ms: 1.1,
            kernels: vec![k("contrib", 0.1), k("pull", 0.8), k("dangling", 0.1)],
        };
        assert!((a.kernel_sum_ms() - 1.0).abs() < 1e-12);
        assert!((a.ratio().unwrap() - 1.1).abs() < 1e-12);
        assert_eq!(dominant(&a.kernels), "pull 80%, contrib 10%, dangling 10%");
        let none = AppMeasure {
            kernels: vec![],
            ..a
        };
        assert_eq!(none.ratio(), None);
        assert_eq!(dominant(&none.kernels), "");
    }

    fn levels_cg(total_ms: f64) -> LevelsCg {
        LevelsCg {
            iterations: 100,
            planning_ms: 5.0,
            switch_ms: 1.0,
            iteration_ms: 0.15,
            total_ms,
            pipelined_total_ms: Some(19.0),
            pipelined_before: Some(3),
            max_rel_diff: 1e-14,
        }
    }

    #[test]
    fn cg_comparison_speedup_and_agreement() {
        let mut c = CgComparison {
            input: "p".into(),
            rows: 4,
            nnz: 10,
            warpfit_iterations: 100,
            warpfit_ms: 0.5,
            cusparse_iterations: 101,
            cusparse_ms: 0.6,
            cusparse_ops: vec![],
            cusparse_total_ms: 60.6,
            warpfit_total_ms: 50.0,
            levels: Some(levels_cg(20.2)),
        };
        assert!((c.speedup().unwrap() - 1.2).abs() < 1e-12);
        assert!((c.levels_speedup().unwrap() - 3.0).abs() < 1e-12);
        c.levels = None;
        assert_eq!(c.levels_speedup(), None);
        assert!(c.iterations_agree());
        c.cusparse_iterations = 98;
        assert!(!c.iterations_agree());
        c.warpfit_ms = 0.0;
        assert_eq!(c.speedup(), None);
    }

    #[test]
    fn markdown_has_every_section_and_row() {
        let report = AppsReport {
            device: "GPU X".into(),
            command: "warpfit bench apps --small".into(),
            inputs: vec![InputInfo {
                name: "poisson2d:side=64".into(),
                rows: 4096,
                nnz: 20224,
                load_s: 0.01,
            }],
            apps: vec![AppMeasure {
                input: "poisson2d:side=64".into(),
                app: "cg f64".into(),
                iterations: 150,
                iteration_ms: 0.2,
                kernels: vec![k("spmv", 0.05), k("dot pᵀq", 0.05)],
            }],
            cg: vec![CgComparison {
                input: "poisson2d:side=64".into(),
                rows: 4096,
                nnz: 20224,
                warpfit_iterations: 150,
                warpfit_ms: 0.2,
                cusparse_iterations: 152,
                cusparse_ms: 0.25,
                cusparse_ops: vec![k("cusparseSpMV", 0.06)],
                cusparse_total_ms: 38.0,
                warpfit_total_ms: 30.0,
                levels: Some(levels_cg(19.0)),
            }],
            pagerank: vec![PagerankEndToEnd {
                input: "rmat".into(),
                iterations: 20,
                cuda_s: 0.5,
                cpu_s: Some(5.0),
                max_abs_diff: Some(1e-9),
            }],
            failures: vec!["rgg, bfs: out of memory".into()],
        };
        let md = report.to_markdown();
        assert!(md.contains("Device: GPU X. Command: `warpfit bench apps --small`."));
        assert!(
            md.contains("| poisson2d:side=64 | 100 | 38.0 | 30.0 | 5.0 | 1.0 | 0.150 | 19.0 | 2.00 | 19.0 (3) | 1.0e-14 |"),
            "{md}"
        );
        assert!(
            md.contains("| poisson2d:side=64 | 4096 | 20224 | 0.01 |"),
            "{md}"
        );
        assert!(
            md.contains("| poisson2d:side=64 | cg f64 | 150 | 0.200 | 0.100 | 2.00 | spmv 50%, dot pᵀq 50% |"),
            "{md}"
        );
        assert!(
            md.contains("| 150 | 0.200 | 152 | 0.250 | 1.25 | NO | cusparseSpMV 100% |"),
            "{md}"
        );
        assert!(
            md.contains("| rmat | 20 | 0.500 | 5.000 | 10.0 | 1.0e-9 |"),
            "{md}"
        );
        assert!(
            md.contains("### Failures\n\n- rgg, bfs: out of memory"),
            "{md}"
        );
        // Empty sections are left out.
        let empty = AppsReport::default().to_markdown();
        assert!(!empty.contains("###"), "{empty}");
    }

    #[test]
    fn default_and_small_inputs() {
        let full = AppsBenchOptions::full().unwrap();
        let names: Vec<String> = full.graph_inputs.iter().map(MatrixSource::name).collect();
        assert!(names[0].starts_with("rmat:scale=22"), "{names:?}");
        assert_eq!(names.len(), 4);
        assert!(names.iter().any(|n| n.starts_with("poisson2d:side=2048")));
        let cg: Vec<String> = full.cg_inputs.iter().map(MatrixSource::name).collect();
        assert!(
            cg.iter().any(|n| n.starts_with("poisson3d:side=128")),
            "{cg:?}"
        );
        let small = AppsBenchOptions::small().unwrap();
        // The small inputs generate quickly and load in both precisions.
        for input in small.graph_inputs.iter().chain(&small.cg_inputs) {
            let a = input.load::<f32>().unwrap();
            assert!(a.nrows() > 0 && a.nrows() <= 65536, "{}", input.name());
        }
        let a = small.cg_inputs[0].load::<f64>().unwrap();
        assert_eq!(a.nrows(), 64 * 64);
    }

    /// The drivers' replicas on the CPU backend: every app runs on the
    /// small inputs, and the benchmark's CG loop (warpfit SpMV) takes the
    /// `cg` app's iterations, so its kernels are the app's.
    #[test]
    fn small_inputs_run_the_apps_and_the_cg_replica_on_the_cpu() {
        let opts = AppsBenchOptions {
            graph_inputs: gens(&["rmat:scale=8,edge_factor=8,seed=1"]).unwrap(),
            cg_inputs: gens(&["poisson2d:side=16"]).unwrap(),
            spmv_iters: 2,
            ..AppsBenchOptions::small().unwrap()
        };
        let mut b = Bench::new(&Device::cpu(), &opts, "test").unwrap();
        let a = opts.graph_inputs[0].load::<f32>().unwrap();
        b.graph_apps("rmat", &a, &mut |_| {});
        assert!(b.report.failures.is_empty(), "{:?}", b.report.failures);
        let apps: Vec<&str> = b.report.apps.iter().map(|a| a.app.as_str()).collect();
        assert_eq!(apps, ["spmv", "pagerank", "sssp", "bfs"]);
        assert!(b.report.apps.iter().all(|a| a.iterations > 0));
        assert_eq!(b.report.apps[1].iterations, 20);

        let a = opts.cg_inputs[0].load::<f64>().unwrap();
        let rhs = rhs_for_ones(&a).unwrap();
        let cg_opts = CgOptions::default();
        let app = warpfit::apps::cg(&Device::cpu(), &b.config, &a, &rhs, &cg_opts).unwrap();
        let replica = b.cg_loop(&a, &rhs, &cg_opts, false).unwrap();
        assert!(app.converged && app.iterations > 10, "{}", app.iterations);
        assert_eq!(replica.iterations, app.iterations);
        let e = b
            .cg_loop(&a, &rhs, &cg_opts, true)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("needs a CUDA device"), "{e}");
    }

    #[test]
    fn a_cpu_device_is_refused_in_one_line() {
        let opts = AppsBenchOptions::small().unwrap();
        let e = run_apps_bench(&Device::cpu(), &opts, "x", &mut |_| {}, &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("needs a CUDA device") && !e.contains('\n'),
            "{e}"
        );
    }
}

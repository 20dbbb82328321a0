//! `warpfit run APP`: runs one of the built-in apps and prints a summary.

mod cfd;
mod group;
mod mst;
mod nn;

use super::input::MatrixInput;
use super::output::{refuse_input_as_output, OutputFile};
use super::progress::Steps;
use super::vector::read_vector;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use warpfit::apps::{
    self, CgOptions, CgOrder, CgScalar, DriveOptions, DrivenReport, DriverChoice, Graph,
    IterationTimes, PageRankOptions, Preconditioner, Timings,
};
use warpfit::runtime::mem;
use warpfit::runtime::Csr;
use warpfit::RemapOrder;
use warpfit::{
    Decomposition, Device, DevicePlan, Error, ExpectedLaunch, LaunchConfig, ModelReport, Result,
    ThrottleOptions, ThrottlePolicy, ThrottleReport, ThrottleStatus,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum App {
    /// y = A·x with `x[i] = 1 + (i mod 7)/7` (f32).
    Spmv,
    /// PageRank, damping 0.85, `--iters` power iterations from 1/n.
    Pagerank,
    /// Shortest paths from `--source` (weights |a(i, j)|), under `--driver`.
    Sssp,
    /// Breadth-first levels from `--source` (-1 = unreachable), under `--driver`.
    Bfs,
    /// Connected components, edge directions ignored: per vertex the
    /// smallest vertex id of its component, under `--driver`.
    Cc,
    /// Conjugate gradient on a symmetric positive definite matrix: solves
    /// A·x = b (b = A·1 without `--rhs`, so that x is all ones).
    Cg,
    /// Minimum spanning forest of a symmetric matrix read as an undirected
    /// graph (weights |a(i, j)|) by Borůvka's rounds: its total weight and
    /// edge count; `--output` writes one `u v w` line per forest edge.
    Mst,
    /// Rodinia's euler3d: compressible flow on a tetrahedral mesh
    /// (`--gen tetmesh:side=S,order=natural|random,seed=N` or `--mesh
    /// FILE.domn`) from the free stream, `--iters` iterations (default
    /// 2000); `--output` writes each cell's five conserved variables.
    Cfd,
    /// Inference through a sparse (pruned) fully connected network over a
    /// batch: each layer `Y = relu(W·X + b)`, none after the last
    /// (`--layer W.mtx` per layer with `--bias`, or `--model alexnet-fc`),
    /// the batch from `--input` or `x[i][b] = 1 + ((i + b) mod 7) / 7`;
    /// `--output` writes the last layer's `Y`, one row per line.
    Nn,
}

/// A generated network for `run nn --model`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NnModel {
    /// AlexNet's fully connected layers pruned as in deep compression: fc6
    /// 9216→4096 at 9%, fc7 4096→4096 at 9%, fc8 4096→1000 at 25%
    /// (magnitude-pruned Gaussian weights, `gen pruned`).
    #[value(name = "alexnet-fc")]
    AlexnetFc,
}

/// The precision `cg` computes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Precision {
    F32,
    F64,
}

/// `cg`'s preconditioner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PrecondArg {
    None,
    /// M = diag(A) (needs a positive diagonal).
    Jacobi,
}

#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Which app to run.
    #[arg(value_enum, ignore_case = true)]
    pub app: App,
    #[command(flatten)]
    pub input: MatrixInput,
    /// `cpu`, `cuda`, or `auto` (CUDA when a GPU and driver are present).
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// GPU decomposition: `cte` (the default), `thread` or `subwarp:W`
    /// (W = 2, 4, 8, 16, 32). The CPU backend runs every task whole and
    /// ignores it (the summary says so).
    #[arg(long)]
    pub decomp: Option<String>,
    /// Iterations: SpMV repetitions (default 10), PageRank power iterations
    /// (default 20), mst repetitions of the whole forest (default 3, the
    /// first compiles the kernels), cfd time steps (default 2000), nn
    /// inferences of the whole network (default 10); at least 1. Not for sssp, bfs and cc,
    /// which run to a fixed point, nor cg, which stops at --tol or
    /// --max-iters.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub iters: Option<u64>,
    /// Source vertex of sssp and bfs (default 0); not for the other apps.
    #[arg(long)]
    pub source: Option<usize>,
    /// sssp, bfs, cc: how rounds are driven: `topo` (device-resident
    /// topology-driven pulls, every backend), `topo:rounds`, `data`
    /// (sssp: near-far; bfs, cc: FIFO), `data:fifo`,
    /// `data:nearfar[:DELTA]`, `hybrid[:UP[:DOWN]]` (bfs: direction-
    /// optimising) or `auto` (the default). Every driver runs on both
    /// backends.
    #[arg(long, value_name = "DRIVER")]
    pub driver: Option<String>,
    /// sssp, bfs, cc with a worklist driver: the worklists' initial
    /// capacity (default: a fifth of the vertices; they grow on demand).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub worklist_capacity: Option<u64>,
    /// sssp, bfs, cc with a worklist driver: rounds per host
    /// synchronisation, 1 to 1024 (default: the backend's; 1 on the CPU).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub rounds_per_sync: Option<u64>,
    /// Writes the result vector here, one value per line, in vertex order
    /// (cg: the solution x). Checked before the run starts.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// cg: the right-hand side b, one value per line (default b = A·1).
    #[arg(long, value_name = "FILE")]
    pub rhs: Option<PathBuf>,
    /// cg: stop at the relative residual ‖r‖/‖b‖ ≤ T (default 1e-6; at
    /// least 9.5e-7 in f32, 1.8e-15 in f64; 0 runs --max-iters iterations).
    /// A run that does not reach it exits with status 1.
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    pub tol: Option<f64>,
    /// cg: stop after N iterations, converged or not (default 1000).
    #[arg(long, value_name = "N")]
    pub max_iters: Option<usize>,
    /// cg: f32 or f64 (default f64).
    #[arg(long, value_enum, ignore_case = true)]
    pub precision: Option<Precision>,
    /// cg: none or jacobi (default none).
    #[arg(long, value_enum, ignore_case = true)]
    pub precond: Option<PrecondArg>,
    /// spmv, pagerank, cg, cfd: cache-fit throttling of the SpMV-shaped
    /// kernel, or of cfd's flux, whose gathered arrays are the five
    /// variables (`org`, `org_r`, `cf`, `cfq`, `sj`, `sjq` or `auto`). `auto` decides
    /// by a cost model on the first iteration, with its plan made on the
    /// GPU and cached on disk for the next run over the same matrix; the
    /// other policies (and `auto` with --throttle-exhaustive) plan on a CPU
    /// thread while the iterations run unthrottled, then switch. The
    /// summary reports what was decided, what it cost and when throttling
    /// paid for itself. The CPU backend runs every policy unthrottled.
    #[arg(long, value_name = "POLICY")]
    pub throttle: Option<String>,
    /// With --throttle: the cache a partition must fit (`l2`, the default,
    /// or a size such as `8MiB`).
    #[arg(long, value_name = "SIZE")]
    pub throttle_cache: Option<String>,
    /// With --throttle auto: plan on the host and time every schedule, warp
    /// budget and queue on the first iteration after the plan, instead of
    /// the cost model (slow; for comparing the model against).
    #[arg(long)]
    pub throttle_exhaustive: bool,
    /// With --throttle: the renumbering of a remapped schedule (`org_r`, or
    /// one `auto` picks): `partitions` (Algorithm 5 of the plan's
    /// partition) or `levels` (breadth-first levels from row 0, for
    /// matrices numbered without locality). Unset: `partitions`, and `auto`
    /// times `org_r` in both. The output is in the matrix's own order
    /// either way.
    #[arg(long, value_name = "ORDER")]
    pub remap_order: Option<String>,
    /// cg: the numbering the iterations run in: `given` (the default) or
    /// `levels` (breadth-first levels from row 0, made on the GPU before the
    /// first iteration, or on the CPU backend on a thread of its own while
    /// the first iterations run; the matrix and the vectors are then
    /// renumbered, for meshes numbered without locality). The solution is
    /// written in the matrix's own order either way.
    #[arg(long, value_name = "ORDER")]
    pub order: Option<String>,
    /// cfd: a mesh in Rodinia's `.domn` format (instead of `--gen
    /// tetmesh:..`).
    // In `MatrixInput`'s group: one of --matrix, --gen and --mesh.
    #[arg(long, value_name = "FILE.domn", group = "MatrixInput")]
    pub mesh: Option<PathBuf>,
    /// mst: also runs Kruskal's algorithm (the sequential reference) on one
    /// CPU thread, times it, and checks that the forest is the same, edge
    /// for edge (a mismatch exits with status 1).
    #[arg(long)]
    pub check: bool,
    /// nn: a layer's weights (rows = outputs, columns = inputs), once per
    /// layer in order.
    // In `MatrixInput`'s group: nn's layers stand for the matrix.
    #[arg(long, value_name = "FILE.mtx", group = "MatrixInput")]
    pub layer: Vec<PathBuf>,
    /// nn: a generated network instead of --layer.
    #[arg(long, value_enum, ignore_case = true, group = "MatrixInput")]
    pub model: Option<NnModel>,
    /// nn: a layer's bias, one value per output row, once per --layer in
    /// the same order (default zero).
    #[arg(long, value_name = "FILE")]
    pub bias: Vec<PathBuf>,
    /// nn: the input batch, row-major: one line per input, the batch
    /// items' values separated by spaces (its width is the batch).
    #[arg(long = "input", value_name = "FILE")]
    pub nn_input: Option<PathBuf>,
    /// nn: the batch size of the generated input (default 150).
    #[arg(long, value_name = "B", value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: Option<u32>,
    /// nn --model: the seed of the generated weights (default 1).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// spmv, pagerank, cg: run on a device group of N members (`all`: every
    /// GPU), each member a part of the rows, the gathered vector's halo
    /// exchanged before every launch (NCCL between GPUs; with `--backend
    /// cpu`, N CPU parts and host copies). `--gpus 1` is the same code on
    /// one device, the scaling baseline.
    #[arg(long, value_name = "N|all")]
    pub gpus: Option<String>,
    /// With --gpus: how rows are split, `rows` (contiguous blocks balanced
    /// by nonzeros, the default) or `levels` (blocks of the breadth-first
    /// level order, fewer exchanged entries on a matrix numbered without
    /// locality; square matrices).
    #[arg(long, value_name = "KIND")]
    pub partition: Option<String>,
    /// With --gpus (spmv, pagerank): each member's rows split by where
    /// their gathered entries live; the owned block runs while the halo
    /// moves, then each sender's block adds its part (sums taken block by
    /// block: equal within rounding).
    #[arg(long)]
    pub overlap: bool,
}

/// Rejects options the chosen app does not use, instead of ignoring them.
pub(crate) fn check_options(args: &RunArgs) -> Result<()> {
    let fixed_point = matches!(args.app, App::Sssp | App::Bfs | App::Cc);
    let driven = fixed_point;
    if !driven {
        let driven_only = [
            ("--driver", args.driver.is_some()),
            ("--worklist-capacity", args.worklist_capacity.is_some()),
            ("--rounds-per-sync", args.rounds_per_sync.is_some()),
        ];
        if let Some((name, _)) = driven_only.iter().find(|(_, given)| *given) {
            return Err(Error::invalid(format!(
                "{name} applies to sssp, bfs and cc only"
            )));
        }
    }
    if let Some(driver) = &args.driver {
        let choice: DriverChoice = driver.parse()?;
        if choice == DriverChoice::Topo
            && (args.worklist_capacity.is_some() || args.rounds_per_sync.is_some())
        {
            return Err(Error::invalid(
                "--worklist-capacity and --rounds-per-sync apply to the worklist drivers, not --driver topo",
            ));
        }
    }
    if args.mesh.is_some() && args.app != App::Cfd {
        return Err(Error::invalid("--mesh applies to cfd only"));
    }
    if args.app == App::Cfd {
        let mesh_spec = args
            .input
            .gen
            .as_deref()
            .is_some_and(|g| g.trim().to_ascii_lowercase().starts_with("tetmesh"));
        if args.input.matrix.is_some() || (args.input.gen.is_some() && !mesh_spec) {
            return Err(Error::invalid(
                "cfd runs on a mesh: give --gen tetmesh:side=S,order=natural|random,seed=N or --mesh FILE.domn",
            ));
        }
        if args.input.gen.is_some() == args.mesh.is_some() {
            return Err(Error::invalid(
                "cfd needs exactly one of --gen tetmesh:.. or --mesh FILE.domn",
            ));
        }
    } else if args
        .input
        .gen
        .as_deref()
        .is_some_and(|g| g.trim().to_ascii_lowercase().starts_with("tetmesh"))
    {
        return Err(Error::invalid(
            "a tetmesh is a mesh, not a matrix: only cfd runs on it",
        ));
    }
    if args.check && !matches!(args.app, App::Mst | App::Nn) {
        return Err(Error::invalid("--check applies to mst and nn only"));
    }
    nn::check_options(args)?;
    group::check_options(args)?;
    if args.app == App::Cg && args.iters.is_some() {
        return Err(Error::invalid(
            "--iters applies to spmv, pagerank, mst, cfd and nn only: cg stops at --tol or --max-iters",
        ));
    }
    if fixed_point && args.iters.is_some() {
        return Err(Error::invalid(
            "--iters applies to spmv, pagerank, mst, cfd and nn only: sssp, bfs and cc run to a fixed point",
        ));
    }
    if args.throttle.is_some()
        && !matches!(args.app, App::Spmv | App::Pagerank | App::Cg | App::Cfd)
    {
        return Err(Error::invalid(
            "--throttle applies to spmv, pagerank, cg and cfd (sssp, bfs and cc take --driver)",
        ));
    }
    if let Some(policy) = &args.throttle {
        policy.parse::<ThrottlePolicy>()?;
    }
    if args.throttle.is_none() && (args.throttle_cache.is_some() || args.throttle_exhaustive) {
        return Err(Error::invalid(
            "--throttle-cache and --throttle-exhaustive apply with --throttle",
        ));
    }
    if let Some(cache) = &args.throttle_cache {
        cache.parse::<warpfit::CacheSize>()?;
    }
    if let Some(order) = &args.remap_order {
        let Some(policy) = &args.throttle else {
            return Err(Error::invalid(
                "--remap-order applies with --throttle (the renumbering of a remapped throttled schedule)",
            ));
        };
        order.parse::<RemapOrder>()?;
        let policy = policy.parse::<ThrottlePolicy>()?;
        if !matches!(policy, ThrottlePolicy::OrgR | ThrottlePolicy::Auto) {
            return Err(Error::invalid(format!(
                "--remap-order applies with --throttle org_r or auto, the schedules that renumber; {policy} runs in the given order"
            )));
        }
    }
    if let Some(k) = args.rounds_per_sync {
        let max = warpfit::runtime::worklist::drivers::MAX_ROUNDS_PER_SYNC;
        if k > max as u64 {
            return Err(Error::invalid(format!(
                "--rounds-per-sync {k} is more than the {max} rounds a synchronisation may cover"
            )));
        }
    }
    if args.throttle.is_some() && args.decomp.is_some() {
        return Err(Error::invalid(
            "--decomp does not apply with --throttle: throttled launches choose their own decomposition (CTE with the automatic split)",
        ));
    }
    if !matches!(args.app, App::Sssp | App::Bfs) && args.source.is_some() {
        return Err(Error::invalid("--source applies to sssp and bfs only"));
    }
    if args.app != App::Cg {
        let cg_only = [
            ("--rhs", args.rhs.is_some()),
            ("--tol", args.tol.is_some()),
            ("--max-iters", args.max_iters.is_some()),
            ("--precision", args.precision.is_some()),
            ("--precond", args.precond.is_some()),
            ("--order", args.order.is_some()),
        ];
        if let Some((name, _)) = cg_only.iter().find(|(_, given)| *given) {
            return Err(Error::invalid(format!("{name} applies to cg only")));
        }
    }
    if let Some(order) = &args.order {
        if order.parse::<CgOrder>()? != CgOrder::Given && args.throttle.is_some() {
            return Err(Error::invalid(
                "--order levels and --throttle do not combine: the renumbered run uses the plain SpMV; pick one",
            ));
        }
    }
    if let Some(tol) = args.tol {
        if !(tol.is_finite() && tol >= 0.0) {
            return Err(Error::invalid(format!(
                "--tol must be a finite number ≥ 0, got {tol}"
            )));
        }
    }
    Ok(())
}

/// How a run that wrote its output ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The answer is an answer.
    Done,
    /// cg stopped without converging (why, in CLI terms); `x` was still
    /// written. The command exits with status 1.
    NotConverged(String),
    /// `mst --check`: the forest differs from Kruskal's (where). The
    /// command exits with status 1.
    Mismatch(String),
}

pub fn run(args: &RunArgs) -> Result<Outcome> {
    check_options(args)?;
    let decomposition = args.decomp.as_deref().unwrap_or("cte");
    let config = LaunchConfig {
        decomposition: decomposition.parse::<Decomposition>()?,
        ..LaunchConfig::default()
    };
    let iters = match args.iters {
        None => None,
        Some(n) => Some(usize::try_from(n).map_err(|_| {
            Error::invalid(format!("--iters {n} is more than this machine can count"))
        })?),
    };
    if args.app == App::Spmv {
        // One timing per repetition is kept for the median: refuse a count
        // whose timings do not fit in memory before doing anything else.
        mem::check_elems::<f64>(
            &format!("the timings of --iters {}", iters.unwrap_or(SPMV_ITERS)),
            iters.unwrap_or(SPMV_ITERS),
        )?;
    }
    if let Some(output) = &args.output {
        refuse_input_as_output(
            output,
            "--output",
            &[
                ("--matrix", args.input.matrix.as_deref()),
                ("--rhs", args.rhs.as_deref()),
            ],
        )?;
    }
    let output = args
        .output
        .as_deref()
        .map(|p| OutputFile::open(p, "--output"))
        .transpose()?;
    // The matrix is read before the device is opened, so that the first
    // SpMV's kernels compile beside the context's creation.
    let (a, read) = if matches!(args.app, App::Cg | App::Cfd | App::Nn) {
        (None, Duration::ZERO)
    } else {
        let read_start = Instant::now();
        // What the file declares is checked before any entry is read: the
        // matrix and the app's vectors are sized by its header line.
        if let Some(h) = args.input.header()? {
            let sizes = (h.nrows, h.ncols, stored_upper_bound(&h));
            check_app_memory(args.app, sizes, args.worklist_capacity)?;
        }
        let a = args.input.load()?;
        let read = read_start.elapsed();
        let sizes = (a.nrows(), a.ncols(), a.nnz());
        check_app_memory(args.app, sizes, args.worklist_capacity)?;
        check_remap_order(args, &a)?;
        (Some(a), read)
    };
    let expected: Vec<ExpectedLaunch<'_>> = match &a {
        Some(a) if args.app == App::Spmv => vec![ExpectedLaunch {
            spec: &apps::spmv::f32::SPEC,
            config,
            n_tasks: a.nrows(),
        }],
        _ => Vec::new(),
    };
    let (device, fallback) = pick_device(&args.backend.to_ascii_lowercase(), &expected)?;
    let mut notes: Vec<String> = fallback.into_iter().collect();
    if args.decomp.is_some() && device.cuda().is_none() {
        notes.push(format!(
            "--decomp {decomposition} has no effect on the CPU backend, which runs each task whole"
        ));
    }
    let run = AppRun {
        args,
        config,
        device,
        notes,
        output,
        iters,
    };
    let Some(a) = a else {
        if args.app == App::Cfd {
            return run.cfd().map(|()| Outcome::Done);
        }
        if args.app == App::Nn {
            return run.nn();
        }
        if args.gpus.is_some() {
            return run.group_cg();
        }
        return match args.precision.unwrap_or(Precision::F64) {
            Precision::F32 => run.cg::<f32>(),
            Precision::F64 => run.cg::<f64>(),
        };
    };
    run.print_header(&a);
    if args.gpus.is_some() {
        return run.group_app(&a, read);
    }
    match args.app {
        App::Spmv => match args.throttle.as_deref() {
            Some(policy) => run.spmv_throttled(&a, read, policy.parse()?),
            None => run.spmv(&a, read),
        },
        App::Pagerank => run.graph_app(&a, read),
        App::Sssp | App::Bfs | App::Cc => run.driven_app(&a, read),
        App::Mst => return run.mst(&a, read),
        App::Cg | App::Cfd | App::Nn => unreachable!("cg, cfd and nn returned above"),
    }
    .map(|()| Outcome::Done)
}

/// Refuses `--remap-order levels` on a rectangular matrix on every backend
/// (the CPU backend runs the plain twin and would not notice): the level
/// order renumbers rows and columns alike.
fn check_remap_order(args: &RunArgs, a: &Csr<f32>) -> Result<()> {
    let levels = match args.remap_order.as_deref() {
        Some(o) => o.parse::<RemapOrder>()? == RemapOrder::Levels,
        None => false,
    };
    if levels && a.nrows() != a.ncols() {
        return Err(Error::invalid(format!(
            "--remap-order levels renumbers rows and columns alike and needs a square matrix, got {} x {}; use --remap-order partitions",
            a.nrows(),
            a.ncols()
        )));
    }
    Ok(())
}

/// Refuses a matrix cg cannot solve: CG's iterations assume `A = Aᵀ`, and
/// on any other matrix end in an `x` that is no answer. Checked once the
/// matrix is read (each entry's mirror found by binary search).
fn check_symmetric<T: CgScalar + Sync>(a: &Csr<T>) -> Result<()> {
    let Some((i, j)) = a.first_asymmetry()? else {
        return Ok(());
    };
    let shown = |r: usize, c: usize| {
        a.get(r, c)
            .map_or("not stored".to_string(), |v| format!("= {v}"))
    };
    Err(Error::invalid(format!(
        "cg needs a symmetric matrix: a({}, {}) {} but a({}, {}) {}",
        i + 1,
        j + 1,
        shown(i, j),
        j + 1,
        i + 1,
        shown(j, i)
    )))
}

/// One `run` invocation, once the options are checked and the device open.
struct AppRun<'a> {
    args: &'a RunArgs,
    config: LaunchConfig,
    device: Device,
    notes: Vec<String>,
    output: Option<OutputFile>,
    iters: Option<usize>,
}

impl AppRun<'_> {
    /// `--throttle`'s policy over `defaults`, the throttled kernel's
    /// attribute defaults (its `throttle_options()`), expecting `launches`
    /// launches (the run's iterations: `auto` weighs a plan's preparation
    /// against them).
    fn throttle_options(
        &self,
        defaults: fn() -> Result<ThrottleOptions>,
        launches: usize,
    ) -> Result<Option<ThrottleOptions>> {
        self.args
            .throttle
            .as_deref()
            .map(|p| {
                let mut o = defaults()?
                    .with_policy(p.parse()?)
                    .with_exhaustive(self.args.throttle_exhaustive)
                    .with_expected_launches(launches.max(1) as u64);
                if let Some(cache) = self.args.throttle_cache.as_deref() {
                    o = o.with_cache(cache.parse()?);
                }
                Ok(match self.args.remap_order.as_deref() {
                    Some(order) => o.with_remap_order(order.parse()?),
                    None => o,
                })
            })
            .transpose()
    }

    fn print_header<T>(&self, a: &Csr<T>) {
        say!(
            "{}: {} x {}, {} nonzeros; backend {}{}",
            self.args.input.label(),
            a.nrows(),
            a.ncols(),
            a.nnz(),
            self.device.backend_name(),
            if self.notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", self.notes.join("; "))
            }
        );
    }

    /// Repeated `y = A·x` with the matrix and both vectors on the device and
    /// the launch prepared once; each repetition waits for the device.
    fn spmv(self, a: &Csr<f32>, read: Duration) -> Result<()> {
        let device = &self.device;
        let iters = self.iters.unwrap_or(SPMV_ITERS);
        let setup_start = Instant::now();
        let x = apps::spmv_input(a.ncols());
        let (ptr, col, val) = (
            device.upload(a.row_ptr())?,
            device.upload(a.col_idx())?,
            device.upload(a.values())?,
        );
        let x = device.upload(&x)?;
        let y = device.alloc::<f32>(a.nrows())?;
        let launch =
            apps::spmv::f32::prepare(device, &self.config, a.nrows(), &ptr, &col, &val, &x, &y)?;
        // One untimed run: the first launch of a kernel pays for its module
        // load; on the CPU it warms the caches.
        launch.run()?;
        device.synchronize()?;
        launch.check()?;
        let setup = setup_start.elapsed();
        let mut timings = Timings::new(setup, IterationTimes::new());
        let mut steps = Steps::new("spmv", Some(iters as u64));
        for _ in 0..iters {
            let t = Instant::now();
            launch.run()?;
            device.synchronize()?;
            timings.iterations.push(t.elapsed());
            steps.step();
        }
        drop(steps);
        launch.check()?;
        let per = timings.median_iteration().unwrap_or_default().as_secs_f64();
        say!(
            "spmv: median {:.3} ms/iter, {:.2} GFLOP/s ({} iterations, {})",
            per * 1e3,
            2.0 * a.nnz() as f64 / per / 1e9,
            iters,
            device.backend_name()
        );
        print_timing(read, &timings, "repetitions");
        let y = y.to_vec()?;
        write_output(self.output, y.iter().map(|v| v.to_string()))
    }

    /// [`AppRun::spmv`] through the throttled handle, planned on a CPU
    /// thread while the first repetitions run unthrottled; each repetition
    /// copies `x` in and `y` out on the device and waits for it.
    fn spmv_throttled(self, a: &Csr<f32>, read: Duration, policy: ThrottlePolicy) -> Result<()> {
        let device = &self.device;
        let iters = self.iters.unwrap_or(SPMV_ITERS);
        let setup_start = Instant::now();
        let x = apps::spmv_input(a.ncols());
        let options = self
            .throttle_options(apps::spmv::f32::throttle_options, iters)?
            .unwrap_or(apps::spmv::f32::throttle_options()?.with_policy(policy));
        mem::check(
            "the throttled handle's host copy of the matrix",
            4 * (a.nrows() as u64 + 1) + 8 * a.nnz() as u64,
        )?;
        let mut t = apps::spmv::f32::throttle_pipelined(
            device,
            &options,
            a.nrows(),
            a.ncols(),
            a.row_ptr().to_vec(),
            a.col_idx().to_vec(),
            a.values().to_vec(),
        )?;
        let xd = device.upload(&x)?;
        let mut yd = device.alloc::<f32>(a.nrows())?;
        let setup = setup_start.elapsed();
        let mut timings = Timings::new(setup, IterationTimes::new());
        // The first repetition that ran the plan.
        let mut planned_from = None;
        let mut steps = Steps::new("spmv", Some(iters as u64));
        for i in 0..iters {
            let unthrottled = t.report().launches_before_plan;
            let s = Instant::now();
            t.launch(&xd, &mut yd)?;
            timings.iterations.push(s.elapsed());
            let planned = t.report().launches_before_plan == unthrottled;
            apps::ThrottledRun::note(&mut planned_from, i, planned);
            steps.step();
        }
        drop(steps);
        let r = t.report().clone();
        let per = timings.median_iteration().unwrap_or_default().as_secs_f64();
        say!(
            "spmv: median {:.3} ms/iter, {:.2} GFLOP/s ({} iterations, {}, throttle {})",
            per * 1e3,
            2.0 * a.nnz() as f64 / per / 1e9,
            iters,
            device.backend_name(),
            policy
        );
        say!(
            "{}",
            throttle_summary(&r, t.status(), &timings.iterations, planned_from)
        );
        print_timing(read, &timings, "repetitions");
        let y = yd.to_vec()?;
        write_output(self.output, y.iter().map(|v| v.to_string()))
    }

    fn graph_app(self, a: &Csr<f32>, read: Duration) -> Result<()> {
        let device = &self.device;
        let config = &self.config;
        let graph_start = Instant::now();
        let g = Graph::from_matrix(a)?;
        let graph = graph_start.elapsed();
        let with_graph = |mut t: Timings| {
            t.setup += graph;
            t
        };
        let backend = device.backend_name();
        match self.args.app {
            App::Pagerank => {
                let iterations = self.iters.unwrap_or(PAGERANK_ITERS);
                let opts = PageRankOptions {
                    iterations,
                    throttle: self.throttle_options(
                        apps::pagerank_pull_resident::throttle_options,
                        iterations,
                    )?,
                    ..PageRankOptions::default()
                };
                let mut steps = Steps::new("pagerank", Some(opts.iterations as u64));
                let (rank, timings, throttled) =
                    apps::pagerank_throttled(device, config, &g, opts, &mut |_| steps.step())?;
                drop(steps);
                let timings = with_graph(timings);
                // `+ 0.0`: the empty sum is -0.0, which would print as `-0.000000`.
                let rank_sum = rank.iter().map(|&r| r as f64).sum::<f64>() + 0.0;
                if g.is_empty() {
                    say!("pagerank: empty graph, nothing to rank ({backend})");
                } else {
                    let per = timings.median_iteration().unwrap_or_default().as_secs_f64();
                    say!(
                        "pagerank: {} iterations, {:.3} ms/iter, {:.1} M edges/s, rank sum {:.6} ({backend})",
                        opts.iterations,
                        per * 1e3,
                        g.edges() as f64 / per / 1e6,
                        rank_sum,
                    );
                }
                if let Some(t) = &throttled {
                    say!(
                        "{}",
                        throttle_summary(&t.report, t.status, &timings.iterations, t.planned_from)
                    );
                    if !t.first_steps.is_empty() {
                        let steps: Vec<String> = t
                            .first_steps
                            .iter()
                            .map(|(what, d)| format!("{what} {:.1}", d.as_secs_f64() * 1e3))
                            .collect();
                        say!(
                            "throttle: the first iteration (ms): {}{}",
                            steps.join(", "),
                            if t.renumbered {
                                "; the rest in the plan's numbering"
                            } else {
                                ""
                            }
                        );
                    }
                }
                print_timing(read, &timings, "iterations");
                write_output(self.output, rank.iter().map(|v| v.to_string()))
            }
            App::Spmv
            | App::Cg
            | App::Sssp
            | App::Bfs
            | App::Cc
            | App::Mst
            | App::Cfd
            | App::Nn => {
                unreachable!("not run by graph_app")
            }
        }
    }

    /// sssp, bfs or cc under `--driver`.
    fn driven_app(self, a: &Csr<f32>, read: Duration) -> Result<()> {
        let args = self.args;
        let choice: DriverChoice = args.driver.as_deref().unwrap_or("auto").parse()?;
        let to_usize = |v: Option<u64>, what: &str| -> Result<Option<usize>> {
            v.map(|v| {
                usize::try_from(v).map_err(|_| {
                    Error::invalid(format!("{what} {v} is more than this machine can count"))
                })
            })
            .transpose()
        };
        let capacity = to_usize(args.worklist_capacity, "--worklist-capacity")?;
        if let Some(c) = capacity.filter(|&c| c > a.nrows().max(1)) {
            say!(
                "note: --worklist-capacity {c} is more than the {} vertices a worklist can hold here; its lists start at {}",
                a.nrows(),
                a.nrows().max(1)
            );
        }
        let options = DriveOptions {
            initial_capacity: capacity,
            rounds_per_sync: to_usize(args.rounds_per_sync, "--rounds-per-sync")?,
            ..DriveOptions::new(choice)
        };
        let (device, config) = (&self.device, &self.config);
        let source = args.source.unwrap_or(0);
        let backend = device.backend_name();
        let app = format!("{:?}", args.app).to_lowercase();
        let mut steps = Steps::new(&app, None);
        let on_round = &mut |r| steps.reach(r);
        let (summary, report, values): (String, DrivenReport, Vec<String>) = match args.app {
            App::Sssp => {
                let (dist, r) =
                    apps::sssp_driven_observed(device, config, a, source, &options, on_round)?;
                let reached = dist.iter().filter(|d| d.is_finite()).count();
                let s = format!("{reached} of {} vertices reached", dist.len());
                (s, r, dist.iter().map(|v| v.to_string()).collect())
            }
            App::Bfs => {
                let (level, r) =
                    apps::bfs_driven_observed(device, config, a, source, &options, on_round)?;
                let reached = level.iter().filter(|&&l| l >= 0).count();
                let depth = level.iter().copied().max().unwrap_or(-1);
                let s = format!(
                    "depth {depth}, {reached} of {} vertices reached",
                    level.len()
                );
                (s, r, level.iter().map(|v| v.to_string()).collect())
            }
            App::Cc => {
                let (label, r) = apps::cc_driven_observed(device, config, a, &options, on_round)?;
                let components = label
                    .iter()
                    .enumerate()
                    .filter(|&(v, &l)| v as u32 == l)
                    .count();
                let largest = component_sizes(&label).into_iter().max().unwrap_or(0);
                let s = format!(
                    "{components} components, the largest of {largest} of {} vertices",
                    label.len()
                );
                (s, r, label.iter().map(|v| v.to_string()).collect())
            }
            _ => unreachable!("not a driven app"),
        };
        drop(steps);
        if let Some(note) = &report.note {
            say!("{app}: {note}");
        }
        let growths = match report.growths {
            0 => String::new(),
            1 => ", 1 worklist growth".into(),
            g => format!(", {g} worklist growths"),
        };
        let donated = match report.donated_chunks {
            0 => String::new(),
            c => format!(", {c} chunks of 1024 edges donated"),
        };
        say!(
            "{app}: {}: {} rounds, {} host synchronisations, {} items processed{growths}{donated}, {:.1} ms; {summary} ({backend})",
            report.driver,
            report.rounds,
            report.syncs,
            report.processed,
            report.run.as_secs_f64() * 1e3,
        );
        let unit = if report.rounds == report.syncs {
            "rounds"
        } else {
            "host synchronisations"
        };
        let timings = Timings::new(report.setup, report.times);
        print_timing(read, &timings, unit);
        write_output(self.output, values.into_iter())
    }

    /// Conjugate gradient in precision `T`.
    fn cg<T: CgScalar>(self) -> Result<Outcome> {
        let args = self.args;
        let read_start = Instant::now();
        let order = args
            .order
            .as_deref()
            .map(str::parse::<CgOrder>)
            .transpose()?
            .unwrap_or_default();
        let floor = apps::smallest_tol::<T>();
        if let Some(tol) = args.tol.filter(|&t| t > 0.0 && t < floor) {
            return Err(Error::invalid(format!(
                "--tol {tol:e} is below the smallest relative residual {} can reach, {floor:.1e}; \
                 raise it{}, or give 0 to run --max-iters iterations",
                T::TYPE.rust_name(),
                if T::TYPE.size() == 4 {
                    ", use --precision f64"
                } else {
                    ""
                }
            )));
        }
        if let Some(h) = args.input.header()? {
            check_cg_memory::<T>(h.nrows, stored_upper_bound(&h), order)?;
        }
        let a = args.input.load_as::<T>()?;
        check_cg_memory::<T>(a.nrows(), a.nnz(), order)?;
        check_symmetric(&a)?;
        let b: Vec<T> = match &args.rhs {
            Some(path) => read_vector(path, "--rhs", a.nrows())?
                .into_iter()
                .map(|v| {
                    let t = T::from_f64(v);
                    if t.to_f64().is_finite() {
                        Ok(t)
                    } else {
                        Err(Error::invalid(format!(
                            "--rhs {}: {v} does not fit {}",
                            path.display(),
                            T::TYPE.rust_name()
                        )))
                    }
                })
                .collect::<Result<_>>()?,
            None => apps::rhs_for_ones(&a)?,
        };
        let read = read_start.elapsed();
        self.print_header(&a);
        let max_iters = args.max_iters.unwrap_or(1000);
        let opts = CgOptions {
            tol: args.tol.unwrap_or(1e-6),
            max_iters,
            precond: match args.precond.unwrap_or(PrecondArg::None) {
                PrecondArg::None => Preconditioner::None,
                PrecondArg::Jacobi => Preconditioner::Jacobi,
            },
            // A solve may stop at --tol sooner: --max-iters is what it may
            // need, and what a plan must pay back within.
            throttle: self.throttle_options(T::throttle_options, max_iters)?,
            order,
            ..CgOptions::default()
        };
        let mut steps = Steps::new("cg", Some(opts.max_iters as u64));
        let result = apps::cg_observed(&self.device, &self.config, &a, &b, &opts, &mut |_, _| {
            steps.step()
        })?;
        drop(steps);
        let true_residual = result.true_residual;
        let per = result.timings.median_iteration().unwrap_or_default();
        say!(
            "cg: {} after {} iterations{}, relative residual {:.3e} (‖b − A·x‖/‖b‖ {:.3e}), {:.3} ms per iteration ({}, {}, {})",
            if result.converged {
                "converged"
            } else {
                "NOT converged"
            },
            result.iterations,
            match result.restarts {
                0 => String::new(),
                1 => " (1 restart from the true residual)".into(),
                r => format!(" ({r} restarts from the true residual)"),
            },
            result.relative_residual,
            true_residual,
            per.as_secs_f64() * 1e3,
            T::TYPE.rust_name(),
            match opts.precond {
                Preconditioner::None => "no preconditioner",
                Preconditioner::Jacobi => "Jacobi",
            },
            self.device.backend_name()
        );
        if let Some(t) = &result.throttle {
            say!(
                "{}",
                throttle_summary(
                    &t.report,
                    t.status,
                    &result.timings.iterations,
                    t.planned_from
                )
            );
        }
        if opts.order == CgOrder::Levels {
            say!("{}", renumber_summary(&result));
        }
        if let (Some(_), Some(r)) = (&result.throttle, &result.renumbered) {
            say!("{}", switch_summary(r));
        }
        print_timing(read, &result.timings, "iterations");
        write_output(self.output, result.x.iter().map(|v| v.to_string()))?;
        if result.converged {
            return Ok(Outcome::Done);
        }
        let why = if result.relative_residual <= opts.tol {
            format!(
                "the recurrence residual reached --tol {:e} but ‖b − A·x‖/‖b‖ is {true_residual:.1e}: {}'s rounding limit on this matrix{}",
                opts.tol,
                T::TYPE.rust_name(),
                if T::TYPE.size() == 4 { " (try --precision f64)" } else { "" }
            )
        } else {
            format!(
                "--max-iters {} ran out at relative residual {:.1e} (raise --max-iters, or try --precond jacobi)",
                opts.max_iters, result.relative_residual
            )
        };
        Ok(Outcome::NotConverged(why))
    }
}

/// How a throttled cg run moved to the level order its SpMV's `auto` chose:
/// the switch's steps, and the order's confirmation against `org` where
/// the decision was made in this run (an order from the plan cache was
/// confirmed when it was decided).
fn switch_summary(r: &apps::RenumberedRun) -> String {
    let steps: Vec<String> = r
        .switch_steps
        .iter()
        .map(|(what, d)| format!("{what} {:.1}", d.as_secs_f64() * 1e3))
        .collect();
    let head = format!(
        "throttle: the solve renumbered itself by the level order after {} iterations ({:.1} ms of host time: {})",
        r.iterations_before,
        r.switch.as_secs_f64() * 1e3,
        steps.join(", "),
    );
    match r.confirmation {
        Some(c) => format!(
            "{head}; its first SpMV took {:.3} ms against org's {:.3} ms: {}",
            c.renumbered_ms,
            c.org_ms,
            if c.kept {
                "order kept"
            } else {
                "back to the given order and org"
            }
        ),
        None => head,
    }
}

/// What a renumbered cg run did: the plan, the iterations before the
/// switch, the median iteration before and after it.
fn renumber_summary<T>(result: &apps::CgResult<T>) -> String {
    let Some(r) = &result.renumbered else {
        return "order: the level order was not ready before the last iteration; every iteration ran in the given order".into();
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let median = |t: Option<Duration>| t.map_or("–".to_string(), |d| format!("{:.3} ms", ms(d)));
    let times = &result.timings.iterations;
    format!(
        "order: levels made in {:.1} ms {}, {} iterations in the given order before the switch ({:.1} ms of host time); iterations {} before, {} after",
        ms(r.planning),
        if r.on_device {
            "on the device"
        } else {
            "on the host"
        },
        r.iterations_before,
        ms(r.switch),
        median(times.median_before(r.iterations_before)),
        // The first iteration after the switch pays for its module loads.
        median(times.median_from(r.iterations_before + 1)),
    )
}

/// What pipelined throttling did: the plan, the repetitions run before it
/// was in, the schedule chosen and when it paid for itself against the
/// unthrottled repetitions' median (`org`'s profile when none ran
/// unthrottled).
fn throttle_summary(
    r: &ThrottleReport,
    status: ThrottleStatus,
    iterations: &IterationTimes,
    planned_from: Option<usize>,
) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    if let Some(m) = &r.model {
        return model_summary(r, m, iterations);
    }
    if r.partitions == 0 && r.profile.is_empty() && status != ThrottleStatus::Planning {
        return if r.asked == ThrottlePolicy::Org {
            "throttle: org is the unthrottled schedule, nothing planned".into()
        } else {
            format!(
                "throttle: {} asked, but this backend runs the kernel unthrottled (the CPU backend runs the CPU twin under every policy)",
                r.asked
            )
        };
    }
    if status == ThrottleStatus::Planning {
        return format!(
            "throttle: still planning after {} repetitions, all unthrottled (raise --iters to see the switch)",
            iterations.len()
        );
    }
    let mut head = format!(
        "throttle: {} partitions planned in {:.2} s on a CPU thread, {} repetitions unthrottled before the switch; {} runs",
        r.partitions,
        r.planning.as_secs_f64(),
        r.launches_before_plan,
        r.chosen
    );
    if let Some(order) = r.remap_order {
        head += &format!(" (remapped by {order})");
    }
    if !r.profile.is_empty() {
        let mut p: Vec<String> = r
            .profile
            .iter()
            .map(|(p, t)| format!("{p} {t:.3} ms"))
            .collect();
        if r.remap_profile.len() > 1 {
            let each: Vec<String> = r
                .remap_profile
                .iter()
                .map(|(o, t)| format!("{o} {t:.3} ms"))
                .collect();
            p.push(format!("org_r by {}", each.join(" / ")));
        }
        head += &format!(" (auto timed {})", p.join(", "));
    }
    let switch = planned_from.unwrap_or(iterations.len());
    let org = iterations.median_before(switch).map(ms).or_else(|| {
        r.profile
            .iter()
            .find(|(p, _)| *p == ThrottlePolicy::Org)
            .map(|(_, t)| *t)
    });
    let thr = planned_from.and_then(|s| iterations.median_from(s)).map(ms);
    let (Some(org), Some(thr)) = (org, thr) else {
        return head;
    };
    head += &format!("; repetitions {org:.3} ms unthrottled, {thr:.3} ms after the switch");
    format!("{head}; {}", payback(org, thr, iterations))
}

/// When throttling paid for itself against running every repetition
/// unthrottled at `org` ms: `times` are the repetitions in order, `thr` the
/// throttled repetitions' median (ms). Past the kept repetitions the time
/// saved grows at their mean pace.
fn payback(org: f64, thr: f64, times: &IterationTimes) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut saved = 0.0;
    let mut lowest = 0.0f64;
    let mut paid = None;
    for (i, t) in times.kept().iter().enumerate() {
        saved += org - ms(*t);
        lowest = lowest.min(saved);
        if lowest < 0.0 && saved >= 0.0 && paid.is_none() {
            paid = Some(i + 1);
        }
    }
    let (rest, rest_total) = times.after_kept();
    if rest > 0 {
        let pace = org - ms(rest_total) / rest as f64;
        if paid.is_none() && saved < 0.0 && pace > 0.0 && saved + pace * rest as f64 >= 0.0 {
            paid = Some(times.kept().len() + ((-saved) / pace).ceil() as usize);
        }
        saved += pace * rest as f64;
    }
    match paid {
        _ if lowest >= 0.0 => "throttling cost nothing extra".to_string(),
        Some(i) => format!("throttling had paid for itself after {i} repetitions"),
        None if thr < org => format!(
            "throttling will have paid for itself after about {} repetitions",
            times.len() + ((-saved) / (org - thr)).ceil() as usize
        ),
        None => "the throttled schedule is not faster here".to_string(),
    }
}

/// [`throttle_summary`] of `auto` by the model: what it decided and why,
/// its time on the first repetition, and when that time was paid back.
fn model_summary(r: &ThrottleReport, m: &ModelReport, iterations: &IterationTimes) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let source = if m.from_cache {
        "read from the plan cache and built".to_string()
    } else {
        "decided".to_string()
    };
    // `org` with an order is an order left to the caller to renumber by
    // (`ThrottleOptions::caller_renumbers`).
    let runs = match (r.chosen, r.remap_order) {
        (ThrottlePolicy::Org, Some(o)) => format!("org, the {o} order left to the caller"),
        (c, Some(o)) => format!("{c} by {o}"),
        (c, None) => c.to_string(),
    };
    let mut head = format!(
        "throttle: auto by the model runs {runs} ({source} on the device in {:.1} ms: {})",
        ms(m.planning),
        m.reason
    );
    if !m.timed.is_empty() {
        let each: Vec<String> = m
            .timed
            .iter()
            .map(|(p, t)| format!("{p} {t:.3} ms"))
            .collect();
        head += &format!("; timed {}", each.join(", "));
    }
    if let Some(s) = m.sharing_levels {
        head += &format!(
            "; in the level order {:.0}% of a warp's gathers share a line",
            100.0 * s
        );
    }
    if let Some(why) = &m.order_not_read {
        head += &format!("; level order made again: {why}");
    }
    if let Some(e) = &m.cache_error {
        head += &format!("; not cached: {e}");
    }
    if !m.steps.is_empty() {
        let each: Vec<String> = m
            .steps
            .iter()
            .map(|(s, d)| format!("{s} {:.1}", ms(*d)))
            .collect();
        head += &format!("; steps (ms): {}", each.join(", "));
    }
    let org = m
        .timed
        .iter()
        .find(|(p, _)| *p == DevicePlan::Org)
        .map(|(_, t)| *t);
    let rest = iterations.median_from(1).map(ms);
    let (Some(org), Some(first), Some(thr)) = (org, iterations.first(), rest) else {
        return head;
    };
    head += &format!(
        "; repetitions {org:.3} ms unthrottled (timed), {thr:.3} ms throttled, the first {:.1} ms",
        ms(first)
    );
    format!("{head}; {}", payback(org, thr, iterations))
}

/// The timing summary every app prints: what came before the first
/// iteration apart from the iterations themselves.
fn print_timing(read: Duration, t: &Timings, unit: &str) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let iterations = match t.median_iteration() {
        None => format!("no {unit}"),
        Some(median) => format!(
            "{} {unit}: median {:.3} ms, total {:.1} ms",
            t.iterations.len(),
            ms(median),
            ms(t.iterations_total())
        ),
    };
    // The throttleable kernel's part of the set-up: an end-to-end
    // comparison of throttling adds it to the iterations of either run.
    let kernel = t
        .kernel_setup
        .map(|d| format!("; the throttleable kernel {:.1} ms of it", ms(d)))
        .unwrap_or_default();
    say!(
        "timing: read {:.1} ms; set-up {:.1} ms (upload, prepare, compile{kernel}); {iterations}",
        ms(read),
        ms(t.setup)
    );
}

/// Checks cg's working memory: the matrix on the host (read) and on the
/// device, which on the CPU backend is host memory too, and its vectors.
fn check_cg_memory<T: CgScalar>(rows: usize, nnz: usize, order: CgOrder) -> Result<()> {
    let size = T::TYPE.size() as u64;
    let (rows, nnz) = (rows as u64, nnz as u64);
    // The matrix as read, and its copy on the device (host memory on the
    // CPU backend).
    let mut matrix = 2 * (4 * (rows + 1) + (4 + size) * nnz);
    if order == CgOrder::Levels {
        // The renumbered copy, and the level order on the host (on the CPU
        // backend, or on CUDA when the graph has too many levels for the
        // device): the remapping's four permutations, 16 bytes a row; the
        // order's 9 bytes a row of claims, marks and order come before.
        matrix = 2 * matrix + 16 * rows;
    }
    // b, x, r, z, p, q, 1/diag, a start vector.
    mem::check(
        "the cg matrix, its copy and its vectors",
        matrix.saturating_add(8 * size * rows),
    )
}

/// The most entries a Matrix Market file with header `h` holds once read:
/// a symmetric file's off-diagonal entries are mirrored.
fn stored_upper_bound(h: &warpfit::runtime::sparse::mm::MmHeader) -> usize {
    use warpfit::runtime::sparse::mm::MmSymmetry;
    match h.symmetry {
        MmSymmetry::General => h.entries,
        _ => h.entries.saturating_mul(2),
    }
}
/// Checks the app's memory for the whole run against the budget: the
/// matrix as read (row pointers, columns, f32 values), vectors over the rows
/// and columns (whose count a file's size line sets, whatever its entries)
/// and, for the graph apps, the transposed matrix. Called with a file's
/// declared sizes before any entry is read, and with the matrix's after.
fn check_app_memory(
    app: App,
    (rows, cols, nnz): (usize, usize, usize),
    worklist_capacity: Option<u64>,
) -> Result<()> {
    let (rows, cols, nnz) = (rows as u64, cols as u64, nnz as u64);
    // A worklist driver's lists (up to four, near-far's): each its items
    // (at most one per vertex: the driver clamps a larger capacity) and two
    // bitmaps over the vertices (spill and dedup).
    let lists = 4 * (4 * worklist_capacity.unwrap_or(rows / 5).min(rows) + rows.div_ceil(4));
    let matrix = 4 * (rows + 1) + 8 * nnz;
    let (what, bytes) = match app {
        // x, y.
        App::Spmv => ("the spmv matrix and its vectors x and y", 4 * (rows + cols)),
        // The transpose (row pointers, columns, values), out-degrees and
        // three (pagerank) or two (sssp, bfs) vectors.
        App::Pagerank => (
            "the pagerank matrix, its transpose and vectors",
            4 * (cols + 1 + 2 * nnz) + 16 * rows,
        ),
        // The transpose, a copy with absolute weights and two vectors.
        App::Sssp | App::Bfs => (
            "the matrix, its graph, its vectors and worklists",
            8 * (cols + 1 + 2 * nnz) + 12 * rows + lists,
        ),
        // Both edge directions sorted into the undirected adjacency, and two
        // vectors.
        App::Cc => (
            "the matrix, its undirected graph, its labels and worklists",
            48 * nnz + 4 * (rows + 1) + 12 * rows + lists,
        ),
        // The graph's weights, weight bits, canonical ids and rows on the
        // host; its pattern, those arrays and eight vectors on the device.
        App::Mst => (
            "the matrix, its spanning-forest graph and vectors",
            4 * (rows + 1) + 36 * nnz + 40 * rows,
        ),
        // Checked with the matrix's precision (`check_cg_memory`); a
        // mesh is no matrix (`check_cfd_memory`).
        App::Cg | App::Cfd | App::Nn => return Ok(()),
    };
    mem::check(what, matrix.saturating_add(bytes))
}

/// SpMV repetitions without `--iters`.
const SPMV_ITERS: usize = 10;
/// PageRank iterations without `--iters`.
const PAGERANK_ITERS: usize = 20;

/// The device for `--backend`; with `auto`, also why CUDA was not used, so
/// the summary can say it (stderr stays free for the one error line).
/// `expected`: the first launches, announced to a CUDA device as it opens.
fn pick_device(backend: &str, expected: &[ExpectedLaunch<'_>]) -> Result<(Device, Option<String>)> {
    if backend == "cuda" {
        return Ok((Device::open_cuda_expecting(0, expected)?, None));
    }
    if backend != "auto" {
        return Ok((Device::from_name(backend)?, None));
    }
    Ok(match Device::open_cuda_expecting(0, expected) {
        Ok(d) => (d, None),
        Err(e) => (Device::cpu(), Some(e.to_string())),
    })
}

fn write_output(output: Option<OutputFile>, values: impl Iterator<Item = String>) -> Result<()> {
    let Some(output) = output else { return Ok(()) };
    output.write_with(|w| {
        for v in values {
            writeln!(w, "{v}")?;
        }
        Ok(())
    })
}

/// The size of every component, from labels that name a component by its
/// smallest vertex.
fn component_sizes(label: &[u32]) -> Vec<usize> {
    let mut size = vec![0usize; label.len()];
    for &l in label {
        if let Some(s) = size.get_mut(l as usize) {
            *s += 1;
        }
    }
    size
}

#[cfg(test)]
mod tests {
    use super::{payback, switch_summary};
    use std::time::Duration;
    use warpfit::apps::{IterationTimes, OrderConfirmation, RenumberedRun, KEPT_ITERATIONS};

    #[test]
    fn the_switch_summary_says_its_steps_and_the_confirmation_where_there_is_one() {
        let mut r = RenumberedRun {
            planning: Duration::from_millis(14),
            on_device: true,
            iterations_before: 1,
            switch: Duration::from_micros(10_100),
            switch_steps: vec![
                ("matrix renumbered", Duration::from_micros(7_100)),
                ("vectors permuted", Duration::from_micros(1_800)),
            ],
            confirmation: None,
        };
        let cached = switch_summary(&r);
        assert_eq!(
            cached,
            "throttle: the solve renumbered itself by the level order after 1 iterations \
             (10.1 ms of host time: matrix renumbered 7.1, vectors permuted 1.8)"
        );
        for (kept, verdict) in [
            (true, "order kept"),
            (false, "back to the given order and org"),
        ] {
            r.confirmation = Some(OrderConfirmation {
                renumbered_ms: 0.58,
                org_ms: 2.78,
                kept,
            });
            assert_eq!(
                switch_summary(&r),
                format!("{cached}; its first SpMV took 0.580 ms against org's 2.780 ms: {verdict}")
            );
        }
    }

    fn ms(v: &[f64]) -> IterationTimes {
        v.iter()
            .map(|&m| Duration::from_secs_f64(m / 1e3))
            .collect()
    }

    #[test]
    fn payback_counts_the_repetitions_until_the_savings_cover_the_cost() {
        // A first repetition 30 ms slower, then 5 ms faster each.
        let mut times = vec![40.0];
        times.extend([5.0; 9]);
        assert_eq!(
            payback(10.0, 5.0, &ms(&times)),
            "throttling had paid for itself after 7 repetitions"
        );
        assert_eq!(
            payback(10.0, 5.0, &ms(&times[..3])),
            "throttling will have paid for itself after about 7 repetitions"
        );
        assert_eq!(
            payback(10.0, 9.0, &ms(&[9.0, 9.0])),
            "throttling cost nothing extra"
        );
        assert_eq!(
            payback(10.0, 12.0, &ms(&[40.0, 12.0])),
            "the throttled schedule is not faster here"
        );
    }

    #[test]
    fn payback_past_the_kept_repetitions_uses_their_mean_pace() {
        // The first repetition costs KEPT + 9.5 ms more than org; every later
        // one saves 1 ms, so the cost is covered 11 repetitions after the
        // kept ones.
        let mut times = ms(&[10.0 + KEPT_ITERATIONS as f64 + 9.5]);
        for _ in 0..KEPT_ITERATIONS + 100 {
            times.push(Duration::from_millis(9));
        }
        assert_eq!(
            payback(10.0, 9.0, &times),
            format!(
                "throttling had paid for itself after {} repetitions",
                KEPT_ITERATIONS + 11
            )
        );
    }
}

//! `warpfit run APP`: runs one of the built-in apps and prints a summary.

use super::input::MatrixInput;
use super::output::OutputFile;
use super::progress::Steps;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;
use warpfit::apps::{self, Graph, PageRankOptions};
use warpfit::runtime::mem;
use warpfit::{Decomposition, Device, Error, LaunchConfig, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum App {
    /// y = A·x with x[i] = 1 + (i mod 7)/7 (f32).
    Spmv,
    /// PageRank, damping 0.85, `--iters` power iterations from 1/n.
    Pagerank,
    /// Bellman-Ford shortest paths from `--source` (weights |a(i, j)|).
    Sssp,
    /// Breadth-first levels from `--source` (-1 = unreachable).
    Bfs,
}

#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Which app to run.
    #[arg(value_enum)]
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
    /// (default 20); at least 1. Not for sssp and bfs, which run to a fixed
    /// point.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub iters: Option<u64>,
    /// Source vertex of sssp and bfs (default 0); not for spmv and pagerank.
    #[arg(long)]
    pub source: Option<usize>,
    /// Writes the result vector here, one value per line, in vertex order.
    /// Checked before the run starts.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Rejects options the chosen app does not use, instead of ignoring them.
fn check_options(args: &RunArgs) -> Result<()> {
    let fixed_point = matches!(args.app, App::Sssp | App::Bfs);
    if fixed_point && args.iters.is_some() {
        return Err(Error::invalid(
            "--iters applies to spmv and pagerank only: sssp and bfs run to a fixed point",
        ));
    }
    if !fixed_point && args.source.is_some() {
        return Err(Error::invalid("--source applies to sssp and bfs only"));
    }
    Ok(())
}

pub fn run(args: &RunArgs) -> Result<()> {
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
    let output = args
        .output
        .as_deref()
        .map(|p| OutputFile::open(p, "--output"))
        .transpose()?;
    let (device, fallback) = pick_device(&args.backend)?;
    let a = args.input.load()?;
    check_app_memory(args.app, &a)?;
    let mut notes: Vec<String> = fallback.into_iter().collect();
    if args.decomp.is_some() && device.cuda().is_none() {
        notes.push(format!(
            "--decomp {decomposition} has no effect on the CPU backend, which runs each task whole"
        ));
    }
    println!(
        "{}: {} x {}, {} nonzeros; backend {}{}",
        args.input.label(),
        a.nrows(),
        a.ncols(),
        a.nnz(),
        device.backend_name(),
        if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        }
    );
    match args.app {
        App::Spmv => {
            let iters = iters.unwrap_or(SPMV_ITERS);
            let x = apps::spmv_input(a.ncols());
            // One untimed run: compiles the kernel on a GPU, warms caches on the CPU.
            let mut y = vec![0.0f32; a.nrows()];
            apps::spmv_into(&device, &config, &a, &x, &mut y)?;
            let mut times = Vec::new();
            mem::try_reserve(&mut times, iters, "the timings of --iters")?;
            let mut steps = Steps::new("spmv", Some(iters as u64));
            for _ in 0..iters {
                let t = Instant::now();
                apps::spmv_into(&device, &config, &a, &x, &mut y)?;
                times.push(t.elapsed().as_secs_f64());
                steps.step();
            }
            drop(steps);
            times.sort_by(f64::total_cmp);
            let per = times[times.len() / 2];
            println!(
                "spmv: median {:.3} ms/iter, {:.2} GFLOP/s ({} iterations, {})",
                per * 1e3,
                2.0 * a.nnz() as f64 / per / 1e9,
                iters,
                device.backend_name()
            );
            write_output(output, y.iter().map(|v| v.to_string()))
        }
        App::Pagerank => {
            let g = Graph::from_matrix(&a)?;
            let opts = PageRankOptions {
                iterations: iters.unwrap_or(PAGERANK_ITERS),
                ..PageRankOptions::default()
            };
            let mut steps = Steps::new("pagerank", Some(opts.iterations as u64));
            let t = Instant::now();
            let rank = apps::pagerank_observed(&device, &config, &g, opts, &mut |_| steps.step())?;
            let secs = t.elapsed().as_secs_f64();
            drop(steps);
            // `+ 0.0`: the empty sum is -0.0, which would print as `-0.000000`.
            let rank_sum = rank.iter().map(|&r| r as f64).sum::<f64>() + 0.0;
            if g.is_empty() {
                println!(
                    "pagerank: empty graph, nothing to rank ({})",
                    device.backend_name()
                );
            } else {
                let per = secs / opts.iterations as f64;
                println!(
                    "pagerank: {} iterations, {:.3} ms/iter, {:.1} M edges/s, rank sum {:.6} ({})",
                    opts.iterations,
                    per * 1e3,
                    g.edges() as f64 / per / 1e6,
                    rank_sum,
                    device.backend_name()
                );
            }
            write_output(output, rank.iter().map(|v| v.to_string()))
        }
        App::Sssp => {
            let g = Graph::from_matrix(&a)?;
            let source = args.source.unwrap_or(0);
            let mut steps = Steps::new("sssp rounds", None);
            let t = Instant::now();
            let (dist, rounds) =
                apps::sssp_observed(&device, &config, &g, source, &mut |_| steps.step())?;
            let secs = t.elapsed().as_secs_f64();
            drop(steps);
            let reached = dist.iter().filter(|d| d.is_finite()).count();
            println!(
                "sssp: {rounds} rounds, {:.3} ms/round, {:.1} M edges/s, {reached} of {} vertices reached ({})",
                secs / rounds as f64 * 1e3,
                (g.edges() * rounds) as f64 / secs / 1e6,
                g.len(),
                device.backend_name()
            );
            write_output(output, dist.iter().map(|v| v.to_string()))
        }
        App::Bfs => {
            let g = Graph::from_matrix(&a)?;
            let source = args.source.unwrap_or(0);
            let mut steps = Steps::new("bfs steps", None);
            let t = Instant::now();
            let (level, steps_done) =
                apps::bfs_observed(&device, &config, &g, source, &mut |_| steps.step())?;
            let secs = t.elapsed().as_secs_f64();
            drop(steps);
            let reached = level.iter().filter(|&&l| l >= 0).count();
            let depth = level.iter().copied().max().unwrap_or(-1);
            println!(
                "bfs: {steps_done} steps, depth {depth}, {reached} of {} vertices reached, {:.3} ms/step, {:.1} M edges/s ({})",
                g.len(),
                secs / steps_done as f64 * 1e3,
                (g.edges() * steps_done) as f64 / secs / 1e6,
                device.backend_name()
            );
            write_output(output, level.iter().map(|v| v.to_string()))
        }
    }
}

/// Checks the app's working memory against the budget before it
/// allocates: vectors over the rows and columns (whose count a file's size
/// line sets, whatever its entries) and, for the graph apps, the transposed
/// matrix.
fn check_app_memory(app: App, a: &warpfit::runtime::Csr<f32>) -> Result<()> {
    let (rows, cols, nnz) = (a.nrows() as u64, a.ncols() as u64, a.nnz() as u64);
    let (what, bytes) = match app {
        // x, y.
        App::Spmv => ("the spmv vectors x and y", 4 * (rows + cols)),
        // The transpose (row pointers, columns, values), out-degrees and
        // three (pagerank) or two (sssp, bfs) vectors.
        App::Pagerank => (
            "the pagerank graph and vectors",
            4 * (cols + 1 + 2 * nnz) + 16 * rows,
        ),
        App::Sssp | App::Bfs => (
            "the graph and its two vectors",
            4 * (cols + 1 + 2 * nnz) + 12 * rows,
        ),
    };
    mem::check(what, bytes)
}

/// SpMV repetitions without `--iters`.
const SPMV_ITERS: usize = 10;
/// PageRank iterations without `--iters`.
const PAGERANK_ITERS: usize = 20;

/// The device for `--backend`; with `auto`, also why CUDA was not used, so
/// the summary can say it (stderr stays free for the one error line).
fn pick_device(backend: &str) -> Result<(Device, Option<String>)> {
    if backend != "auto" {
        return Ok((Device::from_name(backend)?, None));
    }
    Ok(match Device::open_cuda(0) {
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

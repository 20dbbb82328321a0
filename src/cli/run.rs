//! `warpfit run APP`: runs one of the built-in apps and prints a summary.

use super::input::MatrixInput;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;
use warpfit::apps::{self, Graph, PageRankOptions};
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
    /// GPU decomposition: `cte`, `thread` or `subwarp:W` (W = 2, 4, 8, 16, 32).
    #[arg(long, default_value = "cte")]
    pub decomp: String,
    /// Iterations: SpMV repetitions, PageRank power iterations.
    #[arg(long)]
    pub iters: Option<usize>,
    /// Source vertex of sssp and bfs.
    #[arg(long, default_value_t = 0)]
    pub source: usize,
    /// Writes the result vector here, one value per line, in vertex order.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: &RunArgs) -> Result<()> {
    let config = LaunchConfig {
        decomposition: args.decomp.parse::<Decomposition>()?,
        ..LaunchConfig::default()
    };
    let (device, fallback) = pick_device(&args.backend)?;
    let a = args.input.load()?;
    println!(
        "{}: {} x {}, {} nonzeros; backend {}{}",
        args.input.label(),
        a.nrows(),
        a.ncols(),
        a.nnz(),
        device.backend_name(),
        fallback.map_or(String::new(), |why| format!(" ({why})"))
    );
    match args.app {
        App::Spmv => {
            let iters = args.iters.unwrap_or(10).max(1);
            let x = apps::spmv_input(a.ncols());
            // One untimed run: compiles the kernel on a GPU, warms caches on the CPU.
            let mut y = vec![0.0f32; a.nrows()];
            apps::spmv_into(&device, &config, &a, &x, &mut y)?;
            let mut times = Vec::with_capacity(iters);
            for _ in 0..iters {
                let t = Instant::now();
                apps::spmv_into(&device, &config, &a, &x, &mut y)?;
                times.push(t.elapsed().as_secs_f64());
            }
            times.sort_by(f64::total_cmp);
            let per = times[times.len() / 2];
            println!(
                "spmv: median {:.3} ms/iter, {:.2} GFLOP/s ({} iterations, {})",
                per * 1e3,
                2.0 * a.nnz() as f64 / per / 1e9,
                iters,
                device.backend_name()
            );
            write_output(args.output.as_deref(), y.iter().map(|v| v.to_string()))
        }
        App::Pagerank => {
            let g = Graph::from_matrix(&a)?;
            let opts = PageRankOptions {
                iterations: args.iters.unwrap_or(20),
                ..PageRankOptions::default()
            };
            let t = Instant::now();
            let rank = apps::pagerank(&device, &config, &g, opts)?;
            let secs = t.elapsed().as_secs_f64();
            let per = secs / opts.iterations.max(1) as f64;
            println!(
                "pagerank: {} iterations, {:.3} ms/iter, {:.1} M edges/s, rank sum {:.6} ({})",
                opts.iterations,
                per * 1e3,
                g.edges() as f64 / per / 1e6,
                rank.iter().map(|&r| r as f64).sum::<f64>(),
                device.backend_name()
            );
            write_output(args.output.as_deref(), rank.iter().map(|v| v.to_string()))
        }
        App::Sssp => {
            let g = Graph::from_matrix(&a)?;
            let t = Instant::now();
            let (dist, rounds) = apps::sssp(&device, &config, &g, args.source)?;
            let secs = t.elapsed().as_secs_f64();
            let reached = dist.iter().filter(|d| d.is_finite()).count();
            println!(
                "sssp: {rounds} rounds, {:.3} ms/round, {:.1} M edges/s, {reached} of {} vertices reached ({})",
                secs / rounds as f64 * 1e3,
                (g.edges() * rounds) as f64 / secs / 1e6,
                g.len(),
                device.backend_name()
            );
            write_output(args.output.as_deref(), dist.iter().map(|v| v.to_string()))
        }
        App::Bfs => {
            let g = Graph::from_matrix(&a)?;
            let t = Instant::now();
            let (level, steps) = apps::bfs(&device, &config, &g, args.source)?;
            let secs = t.elapsed().as_secs_f64();
            let reached = level.iter().filter(|&&l| l >= 0).count();
            let depth = level.iter().copied().max().unwrap_or(-1);
            println!(
                "bfs: {steps} steps, depth {depth}, {reached} of {} vertices reached, {:.3} ms/step, {:.1} M edges/s ({})",
                g.len(),
                secs / steps as f64 * 1e3,
                (g.edges() * steps) as f64 / secs / 1e6,
                device.backend_name()
            );
            write_output(args.output.as_deref(), level.iter().map(|v| v.to_string()))
        }
    }
}

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

fn write_output(path: Option<&Path>, values: impl Iterator<Item = String>) -> Result<()> {
    let Some(path) = path else { return Ok(()) };
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    for v in values {
        writeln!(w, "{v}").map_err(io)?;
    }
    w.flush().map_err(io)
}

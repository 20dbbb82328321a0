//! `warpfit bench spmv`: warpfit's decompositions against cuSPARSE on the GPU;
//! `warpfit bench apps` (in `bench_apps`): every app's iteration time against
//! its kernels' time, CG against cuSPARSE CG, PageRank end to end.
//!
//! The protocol lives in `warpfit_gpu::bench` (CPU check first, CUDA events,
//! L2 flushed before every run, median of at least 20 runs, copy bandwidth
//! measured in the same run); this module parses the options, prints
//! progress and writes the `## GPU SpMV` section of `BENCHMARKS.md`.

use super::output::OutputFile;
use std::path::{Path, PathBuf};
use warpfit::gpu::bench::{default_suite, run_spmv, small_suite, MatrixSource, SpmvBenchOptions};
use warpfit::gpu::CudaDevice;
use warpfit::{Error, Result};

/// Options of `warpfit bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// What to benchmark: `spmv` (the SpMV decompositions against cuSPARSE)
    /// or `apps` (every app's iterations against its kernels, CG against a
    /// cuSPARSE CG, PageRank end to end against the CPU backend).
    #[arg(value_parser = ["spmv", "apps"])]
    pub kernel: String,
    /// Matrix suite: `default` (RMAT 20/22/24, uniform 2^22/2^24, rgg 2^22
    /// random and spatial, grid 4096²) or `small` (a smoke run).
    #[arg(long, default_value = "default", value_parser = ["default", "small"])]
    pub suite: String,
    /// Generated matrices to run instead of the suite (`--gen rmat:scale=20`; apps: instead of
    /// RMAT 22, uniform 2^22, poisson2d 2048² and rgg 2^22); repeatable.
    #[arg(long = "gen", value_name = "SPEC")]
    pub gens: Vec<String>,
    /// Matrix Market files to add (the largest real matrices; apps: to the app and CG inputs);
    /// repeatable.
    #[arg(long = "mtx", value_name = "FILE")]
    pub mtx: Vec<PathBuf>,
    /// Timed runs per variant; the median is reported.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(20..))]
    pub runs: u32,
    /// Untimed runs before timing.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Only these warpfit variants (`cte`, `thread`, `subwarp:8`, `cte:S=32`, `cte:B=1024`,
    /// `cte:cf`, `cte:cf-slices`, ...); cuSPARSE always runs. Default: all of them.
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub variants: Vec<String>,
    /// Fixed CTE segment lengths timed besides the automatic split.
    #[arg(long, value_delimiter = ',', value_name = "S,...", default_values_t = [8u32, 16, 32, 64, 256],
          value_parser = clap::value_parser!(u32).range(1..))]
    pub segment_lens: Vec<u32>,
    /// Fixed CTE warp work budgets (warps packed by work, longer rows split)
    /// timed besides the automatic split.
    #[arg(long, value_delimiter = ',', value_name = "B,...", default_values_t = [256u32, 512, 1024, 2048],
          value_parser = clap::value_parser!(u32).range(1..))]
    pub budgets: Vec<u32>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Replace the `## GPU SpMV` section of this Markdown file with the report.
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Small inputs, for a quick run (`spmv`: the small suite).
    #[arg(long)]
    pub small: bool,
    /// apps: write the Markdown report to this file (it is always printed).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// apps: CG inputs instead of poisson2d side 2048 and poisson3d side
    /// 128 (symmetric positive definite); repeatable. `--mtx` files are
    /// added to both lists.
    #[arg(long = "cg-gen", value_name = "SPEC")]
    pub cg_gens: Vec<String>,
    /// apps: CG's relative residual tolerance.
    #[arg(long, value_name = "TOL")]
    pub cg_tol: Option<f64>,
    /// apps: back-to-back runs of a launch between its CUDA events.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub repeats: Option<u32>,
    /// apps: skip PageRank end to end on the CPU backend.
    #[arg(long)]
    pub no_cpu: bool,
    /// apps: write the end-to-end PageRank matrix (the first input) as
    /// Matrix Market, for `scripts/bench-graphblas.py --pagerank`.
    #[arg(long, value_name = "FILE.mtx")]
    pub pagerank_mtx: Option<PathBuf>,
}

/// Runs `warpfit bench`.
pub fn run(args: &BenchArgs) -> Result<()> {
    if args.kernel == "apps" {
        return super::bench_apps::run(args);
    }
    super::bench_apps::refuse_apps_options(args)?;
    let mut opts = SpmvBenchOptions {
        runs: args.runs as usize,
        warmup: args.warmup as usize,
        variants: args.variants.clone(),
        segment_lens: args.segment_lens.clone(),
        budgets: args.budgets.clone(),
        // The generated kernel of the built-in spmv app, not a hand-written one.
        add_kernel: Some(&warpfit::apps::spmv_add::SPEC),
        ..SpmvBenchOptions::new(&warpfit::apps::spmv::SPEC)
    };
    opts.matrices = if !args.gens.is_empty() {
        args.gens
            .iter()
            .map(|g| g.parse().map(MatrixSource::Gen))
            .collect::<Result<Vec<_>>>()?
    } else if args.suite == "small" || args.small {
        small_suite()
    } else {
        default_suite()
    };
    opts.matrices
        .extend(args.mtx.iter().cloned().map(MatrixSource::Mtx));
    let write = args
        .write
        .as_deref()
        .map(|p| OutputFile::open(p, "--write"))
        .transpose()?;
    let dev = CudaDevice::new(args.device).map_err(|e| {
        Error::invalid(format!(
            "warpfit bench times GPU kernels and needs an NVIDIA GPU with its driver; \
             device {} cannot be used: {e}",
            args.device
        ))
    })?;
    let report = run_spmv(&dev, &opts, &mut |line| eprintln!("{line}"))?;
    let command: Vec<String> = std::env::args().collect();
    let md = report.to_markdown(&format!("warpfit {}", command[1..].join(" ")));
    println!("{md}");
    if let Some(write) = write {
        let path = write.keep();
        write_section(&path, "## GPU SpMV", &md)?;
        eprintln!("wrote the `## GPU SpMV` section of {}", path.display());
    }
    Ok(())
}

/// Replaces (or appends) the section that starts with `heading` in the
/// Markdown file at `path`, up to the next heading of the same level.
pub(crate) fn write_section(path: &Path, heading: &str, body: &str) -> Result<()> {
    let old = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(Error::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let section = format!("{heading}\n\n{body}\n");
    let new = match old.find(&format!("{heading}\n")) {
        Some(start) => {
            let after = start + heading.len() + 1;
            let end = old[after..]
                .find("\n## ")
                .map_or(old.len(), |i| after + i + 1);
            format!("{}{section}{}", &old[..start], &old[end..])
        }
        None if old.is_empty() => format!("# Benchmarks\n\n{section}"),
        None => format!("{}\n{section}", old.trim_end()),
    };
    std::fs::write(path, new).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

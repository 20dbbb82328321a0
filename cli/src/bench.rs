//! `warpfit bench spmv`: warpfit's decompositions against cuSPARSE on the GPU;
//! `warpfit bench apps` (in `bench_apps`): every app's iteration time against
//! its kernels' time, CG against cuSPARSE CG, PageRank end to end;
//! `warpfit bench throttle` (in `bench_throttle`): the throttled SpMV under
//! every policy against cuSPARSE (or, on the CPU, against `org`), with a
//! chart; `warpfit bench tuple` (in `bench_tuple`): folds that carry tuples
//! against the same folds on scalars.
//!
//! The protocol lives in `warpfit_bench::spmv` (CPU check first, CUDA events,
//! L2 flushed before every run, median of at least 20 runs, copy bandwidth
//! measured in the same run); this module parses the options, prints
//! progress and writes the `## GPU SpMV` section of `BENCHMARKS.md`.

use super::output::{refuse_input_as_output, OutputFile};
use std::path::{Path, PathBuf};
use warpfit::CudaDevice;
use warpfit::{Error, Result};
use warpfit_bench::spmv::{run_spmv, small_suite, SpmvBenchOptions};
use warpfit_bench::{default_suite, MatrixSource};

/// Options of `warpfit bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// What to benchmark: `spmv` (the SpMV decompositions against cuSPARSE),
    /// `apps` (every app's iterations against its kernels, CG against a
    /// cuSPARSE CG, PageRank end to end against the CPU backend) or
    /// `throttle` (the throttled SpMV under every policy against cuSPARSE,
    /// on the original and the remapped matrix; `--svg` draws the chart) or
    /// `tuple` (SpMV as a 1-tuple fold and min-plus with its argmin as a
    /// 2-tuple fold, against the same folds on scalars).
    #[arg(value_parser = lowercase(&["spmv", "apps", "throttle", "tuple"]), ignore_case = true)]
    pub kernel: String,
    /// Matrix suite: `default` (RMAT 20/22/24, uniform 2^22/2^24, rgg 2^22
    /// random and spatial, grid 4096²), `small` (a smoke run) or, for
    /// `throttle`, `large` (RMAT 24/25, uniform 2^24/2^25, rgg 2^24 random,
    /// grid 4096²: x larger than a GPU's L2). For `tuple`, `default` is
    /// RMAT 22 and uniform 2^22, `small` RMAT 16 and uniform 2^18.
    #[arg(long, default_value = "default", ignore_case = true,
          value_parser = lowercase(&["default", "small", "large"]))]
    pub suite: String,
    /// Generated matrices to run instead of the suite (`--gen rmat:scale=20`; apps: instead of
    /// RMAT 22, uniform 2^22, poisson2d 2048² and rgg 2^22); repeatable.
    #[arg(long = "gen", value_name = "SPEC")]
    pub gens: Vec<String>,
    /// Matrix Market files to add (the largest real matrices; apps: to the app and CG inputs);
    /// repeatable.
    #[arg(long = "mtx", value_name = "FILE")]
    pub mtx: Vec<PathBuf>,
    /// Timed runs per variant, at least 20; the median is reported.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(20..))]
    pub runs: u32,
    /// Untimed runs before timing.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Only these warpfit variants (`cte`, `thread`, `subwarp:8`, `cte:S=32`, `cte:B=1024`,
    /// `cte:cf`, `cte:cf-slices`, ...); cuSPARSE always runs. Default: all of them.
    /// throttle: `baseline`, `remapped`, policies (`org`, `cf`, ...) and `carried` (the
    /// CPU plan executor); the reference (cuSPARSE, or `org` on the CPU) always runs.
    /// tuple: decompositions (`cte`, the default configuration; `thread`; `subwarp:W`),
    /// default `cte,thread`.
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub variants: Vec<String>,
    /// Fixed CTE segment lengths timed besides the automatic split.
    #[arg(long, value_delimiter = ',', value_name = "S,...", default_values_t = SEGMENT_LENS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub segment_lens: Vec<u32>,
    /// Fixed CTE warp work budgets (warps packed by work, longer rows split)
    /// timed besides the automatic split.
    #[arg(long, value_delimiter = ',', value_name = "B,...", default_values_t = BUDGETS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub budgets: Vec<u32>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Replace the `## GPU SpMV` section of this Markdown file with the report
    /// (throttle: the `## Throttled SpMV, every policy (…)` section of the backend;
    /// tuple: the ``## Tuple folds against scalar folds (GPU, `warpfit bench tuple`)`` section).
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Small inputs, for a quick run (`spmv`, `throttle`, `tuple`: the small suite).
    #[arg(long)]
    pub small: bool,
    /// apps, throttle, tuple: write the Markdown report to this file (it is
    /// always printed).
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
    /// apps: stop CG after N iterations, converged or not (with
    /// `--cg-tol 0`, exactly N: the end-to-end comparison's 200).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub cg_max_iters: Option<u32>,
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
    /// throttle: `cuda` (the default: CUDA device `--device`) or `cpu`
    /// (the CPU backend, speed-ups over `org`, and the CPU plan executor).
    #[arg(long, value_parser = lowercase(&["cuda", "cpu"]), ignore_case = true)]
    pub backend: Option<String>,
    /// throttle: draw the speed-up of every variant per matrix as an SVG
    /// chart in this file.
    #[arg(long, value_name = "FILE.svg")]
    pub svg: Option<PathBuf>,
    /// throttle: the cache the plans fit: `l2` (the default: the GPU's L2;
    /// on the CPU backend, the share of the last-level cache) or a size
    /// (`8MiB`), e.g. to emulate a smaller cache.
    #[arg(long, value_name = "SIZE")]
    pub cache: Option<String>,
    /// throttle: the partitioner, `kd`, `bisect` or `columns` (default: the
    /// kernel's, columns, for the handle; columns and kd for the CPU
    /// executor).
    #[arg(long, value_name = "NAME")]
    pub partitioner: Option<String>,
    /// throttle: the renumbering of the remapped schedules (`org_r`, and
    /// the others' remapped forms) and of the remapped baseline:
    /// `partitions` (Algorithm 5 of the plan's partition) or `levels`
    /// (breadth-first levels from row 0, for matrices numbered without
    /// locality; square matrices only). Unset: the baseline by
    /// `partitions`, and `auto` times `org_r` in both orders.
    #[arg(long, value_name = "ORDER")]
    pub remap_order: Option<String>,
    /// throttle: the handle's layouts keep the gather's index array as
    /// given, never as 16-bit offsets from the row (to measure what the
    /// narrow index gives).
    #[arg(long)]
    pub plain_index: bool,
    /// throttle: rounds, each preparing and timing every variant once, in
    /// turn; speed-ups are the median of the per-round ratios.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: Option<u32>,
}

/// Which `warpfit bench` kinds take each option: an option given to
/// another kind is an error, not silently ignored.
fn check_options(args: &BenchArgs) -> Result<()> {
    let given: [(&str, bool, &[&str]); 20] = [
        (
            "--variants",
            !args.variants.is_empty(),
            &["spmv", "throttle", "tuple"],
        ),
        (
            "--segment-lens",
            args.segment_lens != SEGMENT_LENS,
            &["spmv"],
        ),
        ("--budgets", args.budgets != BUDGETS, &["spmv"]),
        (
            "--write",
            args.write.is_some(),
            &["spmv", "throttle", "tuple"],
        ),
        ("--out", args.out.is_some(), &["apps", "throttle", "tuple"]),
        ("--cg-gen", !args.cg_gens.is_empty(), &["apps"]),
        ("--cg-tol", args.cg_tol.is_some(), &["apps"]),
        ("--cg-max-iters", args.cg_max_iters.is_some(), &["apps"]),
        ("--repeats", args.repeats.is_some(), &["apps"]),
        ("--no-cpu", args.no_cpu, &["apps"]),
        ("--pagerank-mtx", args.pagerank_mtx.is_some(), &["apps"]),
        ("--backend", args.backend.is_some(), &["throttle"]),
        ("--svg", args.svg.is_some(), &["throttle"]),
        ("--cache", args.cache.is_some(), &["throttle"]),
        ("--partitioner", args.partitioner.is_some(), &["throttle"]),
        ("--rounds", args.rounds.is_some(), &["throttle"]),
        ("--remap-order", args.remap_order.is_some(), &["throttle"]),
        ("--plain-index", args.plain_index, &["throttle"]),
        ("--suite large", args.suite == "large", &["throttle"]),
        (
            "--suite",
            args.suite != "default",
            &["spmv", "throttle", "tuple"],
        ),
    ];
    for (name, set, kinds) in given {
        if set && !kinds.contains(&args.kernel.as_str()) {
            let owners = kinds
                .iter()
                .map(|k| format!("`warpfit bench {k}`"))
                .collect::<Vec<_>>()
                .join(" and ");
            return Err(Error::invalid(format!(
                "{name} belongs to {owners}, not `bench {}`",
                args.kernel
            )));
        }
    }
    Ok(())
}

/// `--segment-lens` without the option.
const SEGMENT_LENS: [u32; 5] = [8, 16, 32, 64, 256];
/// `--budgets` without the option.
const BUDGETS: [u32; 4] = [256, 512, 1024, 2048];

/// Runs `warpfit bench`.
pub fn run(args: &BenchArgs) -> Result<()> {
    check_options(args)?;
    refuse_inputs_as_outputs(args)?;
    match args.kernel.as_str() {
        "apps" => return super::bench_apps::run(args),
        "throttle" => return super::bench_throttle::run(args),
        "tuple" => return super::bench_tuple::run(args),
        _ => {}
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
        ..SpmvBenchOptions::new(&warpfit::apps::spmv::f32::SPEC)?
    };
    opts.matrices = matrices(args, default_suite, small_suite, None)?;
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
    let md = report.to_markdown(&command_line());
    say!("{md}");
    if let Some(write) = write {
        let path = write.keep();
        write_section(&path, "## GPU SpMV", &md)?;
        eprintln!("wrote the `## GPU SpMV` section of {}", path.display());
    }
    Ok(())
}

/// Refuses a report, chart or matrix output that names one of the `--mtx`
/// inputs, before any work: it would replace the matrix it was measured on.
/// The matrices a bench kind runs: `--gen`'s in place of the suite
/// (`--small` or `--suite small`: `small`; `--suite large`: `large`, where
/// the kind has one; else `default`), then the `--mtx` files.
pub(crate) fn matrices(
    args: &BenchArgs,
    default: fn() -> Result<Vec<MatrixSource>>,
    small: fn() -> Result<Vec<MatrixSource>>,
    large: Option<fn() -> Result<Vec<MatrixSource>>>,
) -> Result<Vec<MatrixSource>> {
    let mut out = if !args.gens.is_empty() {
        args.gens
            .iter()
            .map(|g| g.parse().map(MatrixSource::Gen))
            .collect::<Result<Vec<_>>>()?
    } else if args.small || args.suite == "small" {
        small()?
    } else if let (Some(large), "large") = (large, args.suite.as_str()) {
        large()?
    } else {
        default()?
    };
    out.extend(args.mtx.iter().cloned().map(MatrixSource::Mtx));
    Ok(out)
}

/// CUDA device `args.device` for `warpfit bench KIND`, or an error that
/// says the kind needs a GPU (`alternative`: what else it can run on).
pub(crate) fn open_gpu(args: &BenchArgs, kind: &str, alternative: &str) -> Result<warpfit::Device> {
    warpfit::Device::open_cuda(args.device).map_err(|e| {
        Error::invalid(format!(
            "warpfit bench {kind} times GPU kernels and needs an NVIDIA GPU with its driver{alternative}; \
             device {} cannot be used: {}",
            args.device,
            e.to_string().replace('\n', " ")
        ))
    })
}

/// The command line as the reports quote it: `warpfit ARGS..`.
pub(crate) fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("warpfit {}", args.join(" "))
}

fn refuse_inputs_as_outputs(args: &BenchArgs) -> Result<()> {
    let inputs: Vec<(&str, Option<&Path>)> = args
        .mtx
        .iter()
        .map(|p| ("--mtx", Some(p.as_path())))
        .collect();
    for (what, output) in [
        ("--out", &args.out),
        ("--write", &args.write),
        ("--svg", &args.svg),
        ("--pagerank-mtx", &args.pagerank_mtx),
    ] {
        if let Some(output) = output {
            refuse_input_as_output(output, what, &inputs)?;
        }
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

/// `bench ARGS` parsed as the command line parses it, for the subcommands'
/// tests.
#[cfg(test)]
pub(crate) fn try_parse_for_test(args: &[&str]) -> Result<BenchArgs, clap::Error> {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }
    Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).map(|c| c.bench)
}

/// [`try_parse_for_test`] for arguments that parse.
#[cfg(test)]
pub(crate) fn parse_for_test(args: &[&str]) -> BenchArgs {
    try_parse_for_test(args).expect("the test's arguments parse")
}

/// One of `names`, in any letter case (with the argument's `ignore_case`),
/// stored in lower case: every enumerated value warpfit parses takes any
/// case.
fn lowercase(
    names: &'static [&'static str],
) -> impl clap::builder::TypedValueParser<Value = String> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(names).map(|s| s.to_ascii_lowercase())
}

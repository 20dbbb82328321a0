//! Times warpfit's SpMM (the 2-D kernel `apps::spmm`) against `cusparseSpMM`
//! and dense cuBLAS GEMM, every result checked against an f64 host reference
//! first: the pruned AlexNet fully connected layers at batch 150 and their
//! inference end to end, graph aggregation (RMAT 22 and uniform 2^22 × 64
//! columns), and column counts 1 to 256 on uniform 2^20.
//!
//! ```text
//! cargo run --release -p warpfit-bench --example spmm_bench -- [--runs 30] [--quick | --graphs | --throttled [--matrix SPEC@K]...] [--decomp D] [--whole-rows | --piece N]
//! ```
//! `--quick` runs the AlexNet layers only, `--graphs` the aggregation only,
//! `--throttled` SpMM under `#[throttled]` (`auto` end to end and in steady
//! state, `cf`) on graphs whose `X` exceeds the L2 cache (`--matrix SPEC@K`,
//! repeated, times those matrices and column counts instead);
//! `--decomp D` runs warpfit's kernels with decomposition `D` instead of the
//! default; `--whole-rows` runs every row whole (`Split::Never`: no row cut
//! into pieces over the columns), `--piece N` cuts every row longer than `N`
//! (`Split::Max(N)`).

use std::process::ExitCode;
use warpfit::apps::NetworkLayer;
use warpfit::runtime::gen::{alexnet_fc, GenSpec};
use warpfit::{Decomposition, Device, LaunchConfig, Result, Split};
use warpfit_bench::spmm::{time_inference, time_spmm, to_markdown, SpmmRow};
use warpfit_bench::spmm_throttled::{throttled_markdown, time_throttled_spmm};

/// Which rows of the table to time.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Set {
    All,
    /// `--quick`: the AlexNet layers and their inference.
    Alexnet,
    /// `--graphs`: RMAT 22 and uniform 2^22 × 64.
    Graphs,
    /// `--throttled`: SpMM under `#[throttled]` on graphs whose `X` exceeds
    /// the L2 cache.
    Throttled,
}

/// The throttled set: RMAT 24 × 32 (`X` 2 GiB, the target's), uniform
/// 2^24 × 32 (the same size of `X`, rows of 16), uniform 2^20 × 32 with
/// rows of 64 (`X` 128 MiB: several nonzeros of a row per partition).
const THROTTLED: [(&str, usize); 3] = [
    ("rmat:scale=24", 32),
    ("uniform:n=16777216,per_row=16", 32),
    ("uniform:n=1048576,per_row=64", 32),
];

/// The throttled set, or the matrices `--matrix SPEC@K` named instead.
fn run_throttled(device: &Device, runs: usize, named: &[(String, usize)]) -> Result<String> {
    let mut rows = Vec::new();
    let set: Vec<(String, usize)> = match named.is_empty() {
        true => THROTTLED.iter().map(|&(s, k)| (s.to_string(), k)).collect(),
        false => named.to_vec(),
    };
    for (spec, k) in &set {
        let a = spec.parse::<GenSpec>()?.generate()?;
        rows.push(time_throttled_spmm(device, spec, &a, *k, (3, runs))?);
        eprintln!("{spec} × {k} done");
    }
    let matrices: String = named
        .iter()
        .map(|(s, k)| format!(" --matrix {s}@{k}"))
        .collect();
    Ok(throttled_markdown(
        &rows,
        &format!("spmm_bench --runs {runs} --throttled{matrices}"),
    ))
}

/// `SPEC@K`: a generator spec and a column count of at least 1.
fn matrix_arg(v: Option<String>) -> Option<(String, usize)> {
    let v = v?;
    let (spec, k) = v.rsplit_once('@')?;
    let k = k.parse::<usize>().ok().filter(|&k| k > 0)?;
    Some((spec.to_string(), k))
}

fn run(
    device: &Device,
    cfg: &LaunchConfig,
    runs: usize,
    set: Set,
    named: &[(String, usize)],
) -> Result<String> {
    if set == Set::Throttled {
        return run_throttled(device, runs, named);
    }
    let t = (3, runs);
    let mut rows: Vec<SpmmRow> = Vec::new();
    let mut inference = None;
    if set != Set::Graphs {
        let layers: Vec<NetworkLayer> = alexnet_fc(1)?
            .into_iter()
            .map(|l| NetworkLayer {
                weights: l.matrix,
                bias: l.bias,
            })
            .collect();
        for (l, name) in layers.iter().zip(["fc6", "fc7", "fc8"]) {
            let label = format!("alexnet {name}");
            rows.push(time_spmm(device, cfg, &label, &l.weights, 150, true, t)?);
            eprintln!("{name} done");
        }
        inference = Some(time_inference(device, cfg, &layers, 150, t)?);
    }
    if set != Set::Alexnet {
        for spec in ["rmat:scale=22", "uniform:n=4194304,per_row=16"] {
            let a = spec.parse::<GenSpec>()?.generate()?;
            rows.push(time_spmm(device, cfg, spec, &a, 64, false, t)?);
            eprintln!("{spec} done");
        }
    }
    if set == Set::All {
        let spec = "uniform:n=1048576,per_row=16";
        let a = spec.parse::<GenSpec>()?.generate()?;
        for k in [1usize, 8, 32, 150, 256] {
            rows.push(time_spmm(device, cfg, spec, &a, k, false, t)?);
            eprintln!("{spec} k={k} done");
        }
    }
    let decomp = match cfg.decomposition == LaunchConfig::default().decomposition {
        true => String::new(),
        false => format!(" --decomp {}", cfg.decomposition),
    };
    let split = match cfg.split {
        Split::Never => " --whole-rows".to_string(),
        Split::Max(n) => format!(" --piece {n}"),
        _ => String::new(),
    };
    let set = match set {
        Set::All => "",
        Set::Alexnet => " --quick",
        Set::Graphs => " --graphs",
        Set::Throttled => " --throttled",
    };
    let command = format!("spmm_bench --runs {runs}{set}{decomp}{split}");
    Ok(to_markdown(&rows, inference.as_ref(), &command))
}

const USAGE: &str = "usage: spmm_bench [--runs N] [--quick | --graphs | --throttled [--matrix SPEC@K]...] [--decomp D] [--whole-rows | --piece N] (N at least 1)";

fn main() -> ExitCode {
    let mut runs = 30usize;
    let mut set = Set::All;
    let mut cfg = LaunchConfig::default();
    let mut named: Vec<(String, usize)> = Vec::new();
    let mut args = std::env::args().skip(1);
    let positive = |v: Option<String>| v.and_then(|v| v.parse::<u32>().ok()).filter(|&v| v > 0);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => set = Set::Alexnet,
            "--graphs" => set = Set::Graphs,
            "--throttled" => set = Set::Throttled,
            "--matrix" => match matrix_arg(args.next()) {
                Some(m) => named.push(m),
                None => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--whole-rows" => cfg.split = Split::Never,
            "--piece" => match positive(args.next()) {
                Some(n) => cfg.split = Split::Max(n),
                None => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--decomp" => match args.next().map(|d| d.parse::<Decomposition>()) {
                Some(Ok(d)) => cfg.decomposition = d,
                _ => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--runs" => match positive(args.next()) {
                Some(v) => runs = v as usize,
                None => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            },
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let device = match Device::open_cuda(0) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&device, &cfg, runs, set, &named) {
        Ok(md) => {
            print!("{md}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

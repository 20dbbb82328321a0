//! Times warpfit's SpMM (the 2-D kernel `apps::spmm`) against `cusparseSpMM`
//! and dense cuBLAS GEMM, every result checked against an f64 host reference
//! first: the pruned AlexNet fully connected layers at batch 150 and their
//! inference end to end, graph aggregation (RMAT 22 and uniform 2^22 × 64
//! columns), and column counts 1 to 256 on uniform 2^20.
//!
//! ```text
//! cargo run --release -p warpfit-bench --example spmm_bench -- [--runs 30] [--quick] [--decomp D] [--whole-rows]
//! ```
//! `--quick` runs the AlexNet layers only; `--decomp D` runs warpfit's kernels
//! with decomposition `D` instead of the default; `--whole-rows` runs every
//! row whole (`Split::Never`: no row cut into pieces over the columns).

use std::process::ExitCode;
use warpfit::apps::NetworkLayer;
use warpfit::runtime::gen::{alexnet_fc, GenSpec};
use warpfit::{Decomposition, Device, LaunchConfig, Result, Split};
use warpfit_bench::spmm::{time_inference, time_spmm, to_markdown, SpmmRow};

fn run(device: &Device, cfg: &LaunchConfig, runs: usize, quick: bool) -> Result<String> {
    let t = (3, runs);
    let mut rows: Vec<SpmmRow> = Vec::new();
    let layers: Vec<NetworkLayer> = alexnet_fc(1)?
        .into_iter()
        .map(|l| NetworkLayer {
            weights: l.matrix,
            bias: l.bias,
        })
        .collect();
    for (l, name) in layers.iter().zip(["fc6", "fc7", "fc8"]) {
        rows.push(time_spmm(
            device,
            cfg,
            &format!("alexnet {name}"),
            &l.weights,
            150,
            true,
            t,
        )?);
        eprintln!("{name} done");
    }
    let inference = time_inference(device, cfg, &layers, 150, t)?;
    drop(layers);
    if !quick {
        for spec in ["rmat:scale=22", "uniform:n=4194304,per_row=16"] {
            let a = spec.parse::<GenSpec>()?.generate()?;
            rows.push(time_spmm(device, cfg, spec, &a, 64, false, t)?);
            eprintln!("{spec} done");
        }
        let spec = "uniform:n=1048576,per_row=16";
        let a = spec.parse::<GenSpec>()?.generate()?;
        for k in [1usize, 8, 32, 150, 256] {
            rows.push(time_spmm(device, cfg, spec, &a, k, false, t)?);
            eprintln!("{spec} k={k} done");
        }
    }
    let command = format!(
        "spmm_bench --runs {runs}{}{}{}",
        if quick { " --quick" } else { "" },
        if cfg.decomposition == LaunchConfig::default().decomposition {
            String::new()
        } else {
            format!(" --decomp {}", cfg.decomposition)
        },
        if cfg.split == Split::Never {
            " --whole-rows"
        } else {
            ""
        }
    );
    Ok(to_markdown(&rows, Some(&inference), &command))
}

fn main() -> ExitCode {
    let mut runs = 30usize;
    let mut quick = false;
    let mut cfg = LaunchConfig::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--whole-rows" => cfg.split = Split::Never,
            "--decomp" => match args.next().map(|d| d.parse::<Decomposition>()) {
                Some(Ok(d)) => cfg.decomposition = d,
                _ => {
                    eprintln!("usage: spmm_bench [--runs N] [--quick] [--decomp D] [--whole-rows]");
                    return ExitCode::from(2);
                }
            },
            "--runs" => match args.next().and_then(|v| v.parse::<usize>().ok()) {
                Some(v) if v > 0 => runs = v,
                _ => {
                    eprintln!("usage: spmm_bench [--runs N] [--quick] [--decomp D] [--whole-rows] (N at least 1)");
                    return ExitCode::from(2);
                }
            },
            _ => {
                eprintln!("usage: spmm_bench [--runs N] [--quick] [--decomp D] [--whole-rows] (N at least 1)");
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
    match run(&device, &cfg, runs, quick) {
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

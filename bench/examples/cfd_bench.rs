//! Times the CFD solver's flux (`apps::cfd_flux`, generated) against a CUDA
//! kernel written by hand the way Rodinia's `compute_flux` is, on a
//! `tetmesh` in natural and in random order, results checked first.
//!
//! ```text
//! cargo run --release -p warpfit-bench --example cfd_bench -- [--side 70] [--runs 20]
//! ```
//! Side 70: 2,058,000 cells.

use std::process::ExitCode;
use warpfit::{Decomposition, Device};

fn main() -> ExitCode {
    let mut side = 70usize;
    let mut runs = 20usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let value = args.next().and_then(|v| v.parse::<usize>().ok());
        match (a.as_str(), value) {
            ("--side", Some(v)) if v > 0 => side = v,
            ("--runs", Some(v)) if v > 0 => runs = v,
            _ => {
                eprintln!("usage: cfd_bench [--side S] [--runs N] (S, N at least 1)");
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
    let decompositions = [Decomposition::Cte, Decomposition::Thread];
    match warpfit_bench::cfd::run_cfd(&device, side, &decompositions, 3, runs) {
        Ok(rows) => {
            let command = format!("cfd_bench --side {side} --runs {runs}");
            print!("{}", warpfit_bench::cfd::to_markdown(&rows, &command));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

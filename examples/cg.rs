//! Conjugate gradient on the 3D Poisson matrix (7-point Laplacian), or on a
//! symmetric positive definite Matrix Market file, in f64 with the Jacobi
//! preconditioner; `b = A·1`, so the exact solution is all ones. Runs on the
//! GPU when there is one, on the CPU otherwise.
//!
//! ```text
//! cargo run --release --example cg [-- FILE.mtx]
//! ```

use std::process::ExitCode;
use warpfit::apps::{self, CgOptions, Preconditioner};
use warpfit::runtime::gen::{poisson3d, Poisson3dOrder};
use warpfit::runtime::sparse::mm;
use warpfit::{Device, LaunchConfig};

fn run() -> warpfit::Result<()> {
    let a = match std::env::args().nth(1) {
        Some(path) => mm::read_csr::<f64>(std::path::Path::new(&path))?,
        None => poisson3d(48, Poisson3dOrder::Natural, 1)?.map_values(|&v| v as f64),
    };
    let b = apps::rhs_for_ones(&a)?;
    let device = Device::best();
    let opts = CgOptions {
        tol: 1e-8,
        max_iters: 5000,
        precond: Preconditioner::Jacobi,
        ..CgOptions::default()
    };
    let result = apps::cg(&device, &LaunchConfig::default(), &a, &b, &opts)?;
    let max_error = result.x.iter().fold(0.0f64, |m, &v| m.max((v - 1.0).abs()));
    println!(
        "cg on {} rows, {} nonzeros ({}): {} in {} iterations, relative residual {:.2e}",
        a.nrows(),
        a.nnz(),
        device.backend_name(),
        if result.converged {
            "converged"
        } else {
            "stopped"
        },
        result.iterations,
        result.relative_residual
    );
    println!(
        "  max |x - 1| = {max_error:.2e}; set-up {:.1} ms, {:.3} ms per iteration (median)",
        result.timings.setup.as_secs_f64() * 1e3,
        result
            .timings
            .median_iteration()
            .unwrap_or_default()
            .as_secs_f64()
            * 1e3
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

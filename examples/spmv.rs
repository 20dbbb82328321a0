//! `y = A·x` with a `#[nested_reduce]` kernel: on the GPU when there is one,
//! else on all CPU cores. Checks the result against the plain function.
//!
//! ```text
//! cargo run --release --example spmv                 # RMAT scale 18, generated
//! cargo run --release --example spmv -- FILE.mtx     # a Matrix Market file
//! cargo run --release --example spmv -- uniform:n=1048576,per_row=16
//! ```

use std::process::ExitCode;
use std::time::Instant;
use warpfit::prelude::*;
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::sparse::{mm, Csr};

/// One coarse task per row; its fine tasks are the row's nonzeros.
#[nested_reduce]
pub fn spmv(row: usize, row_ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0.0, |a, b| a + b);
}

const DEFAULT_INPUT: &str = "rmat:scale=18,edge_factor=16,seed=1";

fn load(arg: Option<String>) -> warpfit::Result<(String, Csr<f32>)> {
    let input = arg.unwrap_or_else(|| DEFAULT_INPUT.to_string());
    let a = if input.ends_with(".mtx") {
        mm::read_csr::<f32>(std::path::Path::new(&input))?
    } else {
        input.parse::<GenSpec>()?.generate()?
    };
    Ok((input, a))
}

fn run() -> warpfit::Result<()> {
    let (label, a) = load(std::env::args().nth(1))?;
    let device = Device::best();
    let x: Vec<f32> = (0..a.ncols()).map(|i| 1.0 + (i % 7) as f32 / 7.0).collect();
    let mut y = vec![0.0f32; a.nrows()];
    let args = (a.row_ptr(), a.col_idx(), a.values());

    // First launch compiles the kernel on a GPU; time the ones after it.
    spmv::launch(&device, a.nrows(), args.0, args.1, args.2, &x, &mut y)?;
    let iters = 10;
    let t = Instant::now();
    for _ in 0..iters {
        spmv::launch(&device, a.nrows(), args.0, args.1, args.2, &x, &mut y)?;
    }
    let per = t.elapsed().as_secs_f64() / iters as f64;

    // The annotated function is still plain Rust: the reference, row by row.
    let mut reference = vec![0.0f32; a.nrows()];
    for row in 0..a.nrows() {
        spmv(row, args.0, args.1, args.2, &x, &mut reference);
    }
    let worst = y
        .iter()
        .zip(&reference)
        .map(|(g, r)| ((g - r).abs() / r.abs().max(1.0)) as f64)
        .fold(0.0, f64::max);

    println!(
        "{label}: {} x {}, {} nonzeros on {}",
        a.nrows(),
        a.ncols(),
        a.nnz(),
        device.backend_name()
    );
    println!(
        "spmv: {:.3} ms per launch, {:.2} GFLOP/s; |y| = {:.6e}; max relative difference to the plain function {:.2e}",
        per * 1e3,
        2.0 * a.nnz() as f64 / per / 1e9,
        y.iter().map(|&v| (v as f64) * (v as f64)).sum::<f64>().sqrt(),
        worst
    );
    if worst > 1e-4 {
        return Err(warpfit::Error::invalid(format!(
            "result differs from the plain function by {worst:.2e}"
        )));
    }
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

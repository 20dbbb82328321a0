//! Data that stays on the device between launches: power iteration of
//! PageRank with the arrays uploaded once, a prepared launch per direction
//! run in a loop, and one download at the end. The same program runs on the
//! CPU backend, where a `DeviceVec` is host memory used in place.
//!
//! ```text
//! cargo run --release --example resident [-- GEN_SPEC [ITERATIONS]]
//! ```

use std::process::ExitCode;
use std::time::Instant;
use warpfit::prelude::*;
use warpfit::runtime::gen::GenSpec;

/// One pull step: `next[v] = base + damping · Σ rank[u] / outdeg(u)` over the
/// in-neighbours `u` of `v` (the columns of row `v`).
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
pub fn pull(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    rank: &[f32],
    inv_deg: &[f32],
    base: f32,
    damping: f32,
    next: &mut [f32],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = base
        + damping
            * (lo..hi)
                .map(|e| rank[src[e] as usize] * inv_deg[src[e] as usize])
                .fold(0.0, |a, b| a + b);
}

fn run() -> warpfit::Result<()> {
    let mut args = std::env::args().skip(1);
    let spec = args.next().unwrap_or_else(|| "rmat:scale=16".into());
    let iterations: usize = match args.next() {
        Some(s) => s
            .parse()
            .map_err(|_| warpfit::Error::invalid(format!("`{s}` is not an iteration count")))?,
        None => 20,
    };
    let a = spec.parse::<GenSpec>()?.generate()?;
    let n = a.nrows();
    let mut out_deg = vec![0u32; n];
    for &u in a.col_idx() {
        out_deg[u as usize] += 1;
    }
    let inv_deg: Vec<f32> = out_deg.iter().map(|&d| 1.0 / d.max(1) as f32).collect();
    let (damping, base) = (0.85f32, 0.15 / n as f32);

    let device = Device::best();
    // Upload once.
    let ptr = device.upload(a.row_ptr())?;
    let src = device.upload(a.col_idx())?;
    let inv = device.upload(&inv_deg)?;
    let rank = device.upload(&vec![1.0 / n as f32; n])?;
    let next = device.alloc::<f32>(n)?;
    // Prepare once per direction: on a GPU everything but the enqueue is done here.
    let cfg = LaunchConfig::default();
    let forth = pull::prepare(
        &device, &cfg, n, &ptr, &src, &rank, &inv, base, damping, &next,
    )?;
    let back = pull::prepare(
        &device, &cfg, n, &ptr, &src, &next, &inv, base, damping, &rank,
    )?;
    // Launch in a loop: nothing is copied, nothing waits.
    let t = Instant::now();
    for _ in 0..iterations.div_ceil(2) {
        forth.run()?;
        back.run()?;
    }
    back.check()?; // waits, and reports a fault of any run
    let per = t.elapsed().as_secs_f64() / (2 * iterations.div_ceil(2)) as f64;
    // Download once.
    let result = rank.to_vec()?;

    let top = result
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(v, _)| v);
    println!(
        "{spec}: {n} vertices, {} iterations on {} in {:.3} ms each; highest rank {:.3e} at vertex {top}",
        2 * iterations.div_ceil(2),
        device.backend_name(),
        per * 1e3,
        result.get(top).copied().unwrap_or(0.0),
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

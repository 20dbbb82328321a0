//! A custom semiring: longest paths in a DAG over (max, +), with the semiring's
//! "add" written as a `#[device_fn]` and compiled into the kernel — no CUDA by hand.
//!
//! The DAG is layered (embedded generator): vertex `v` has edges from a few
//! vertices of the previous layer. Relaxing to a fixed point gives, for every
//! vertex, the heaviest path from layer 0.
//!
//! ```text
//! cargo run --release --example semiring
//! ```

use std::process::ExitCode;
use warpfit::prelude::*;

/// The semiring's addition: `max`, with -inf as identity ("no path").
#[device_fn]
pub fn max_plus(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// One (max, +) step: the heaviest path into `v` through one more edge.
#[nested_reduce]
pub fn longest_step(v: usize, ptr: &[u32], src: &[u32], w: &[f32], best: &[f32], next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi)
        .map(|e| best[src[e] as usize] + w[e])
        .fold(best[v], max_plus);
}

/// A layered DAG: `layers` layers of `width` vertices; vertex `i` of layer
/// `l > 0` has edges from vertices `i`, `i + 1` and `i * 7 + 3` (mod width) of
/// layer `l - 1`, with small integer weights. Returned as in-edge CSR.
fn layered_dag(layers: usize, width: usize) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let (mut ptr, mut src, mut w) = (vec![0u32], Vec::new(), Vec::new());
    for l in 0..layers {
        for i in 0..width {
            if l > 0 {
                for (j, p) in [i, (i + 1) % width, (i * 7 + 3) % width]
                    .into_iter()
                    .enumerate()
                {
                    src.push(((l - 1) * width + p) as u32);
                    w.push(((i * 31 + p * 17 + j * 5 + l) % 9 + 1) as f32);
                }
            }
            ptr.push(src.len() as u32);
        }
    }
    (ptr, src, w)
}

fn run() -> warpfit::Result<()> {
    let (layers, width) = (64, 4096);
    let (ptr, src, w) = layered_dag(layers, width);
    let n = layers * width;
    let device = Device::best();

    // Layer 0 starts at 0, everything else has no path yet.
    let mut best: Vec<f32> = (0..n)
        .map(|v| if v < width { 0.0 } else { f32::NEG_INFINITY })
        .collect();
    let mut next = best.clone();
    let mut rounds = 0;
    loop {
        longest_step::launch(&device, n, &ptr, &src, &w, &best, &mut next)?;
        rounds += 1;
        let changed = next != best;
        std::mem::swap(&mut best, &mut next);
        if !changed {
            break;
        }
    }

    // Reference: one pass in topological (= vertex) order.
    let mut reference: Vec<f32> = (0..n)
        .map(|v| if v < width { 0.0 } else { f32::NEG_INFINITY })
        .collect();
    for v in width..n {
        for e in ptr[v] as usize..ptr[v + 1] as usize {
            reference[v] = reference[v].max(reference[src[e] as usize] + w[e]);
        }
    }
    let last = &best[(layers - 1) * width..];
    println!(
        "longest paths over (max, +) on a {layers}-layer DAG ({n} vertices, {} edges): {rounds} rounds ({})",
        src.len(),
        device.backend_name()
    );
    println!(
        "  heaviest path into the last layer: {}, lightest: {}",
        last.iter().copied().fold(f32::NEG_INFINITY, f32::max),
        last.iter().copied().fold(f32::INFINITY, f32::min)
    );
    if best != reference {
        return Err(warpfit::Error::invalid(
            "(max, +) result differs from the sequential reference",
        ));
    }
    println!("  matches the sequential topological-order reference");
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

//! Host-side cost of one launch: a prepared `run()` against plain launches,
//! on a small SpMV whose kernel takes a few microseconds, so that what is
//! timed is the host's work per call.
//!
//! ```text
//! cargo run --release -p warpfit-bench --example launch_overhead [-- --backend cuda] [--gen SPEC] [--iters N]
//! ```
//!
//! Method: the arrays are uploaded once; each variant is warmed up (the
//! first launch compiles the kernel), then called `--iters` times, each call
//! timed alone with `Instant` around the call and nothing else. Every
//! [`BATCH`] calls the device is synchronised outside the timed region, so
//! the launch queue never fills (a full queue would make an enqueue wait
//! for the GPU, timing the kernel instead of the host). Printed: median,
//! 10th and 90th percentile in microseconds per call. On the CPU backend a
//! call runs the kernel, so there the times are the kernel's.

use std::process::ExitCode;
use std::time::Instant;
use warpfit::prelude::*;
use warpfit::runtime::gen::GenSpec;

/// One coarse task per row; its fine tasks are the row's nonzeros.
#[nested_reduce]
pub fn spmv(row: usize, row_ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0.0, |a, b| a + b);
}

/// Calls timed between two synchronisations.
const BATCH: usize = 32;

struct Options {
    backend: String,
    gen: String,
    iters: usize,
}

fn options() -> warpfit::Result<Options> {
    let mut o = Options {
        backend: "auto".into(),
        gen: "uniform:n=16384,per_row=8".into(),
        iters: 4000,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| warpfit::Error::invalid(format!("{a} needs a value")))
        };
        match a.as_str() {
            "--backend" => o.backend = value()?,
            "--gen" => o.gen = value()?,
            "--iters" => {
                let v = value()?;
                o.iters = v.parse().map_err(|_| {
                    warpfit::Error::invalid(format!("--iters `{v}` is not a count"))
                })?;
            }
            _ => {
                return Err(warpfit::Error::invalid(format!(
                    "unknown argument `{a}`: expected --backend, --gen or --iters"
                )))
            }
        }
    }
    Ok(o)
}

/// Median, 10th and 90th percentile of `call`'s duration in microseconds,
/// over `iters` calls after [`BATCH`] untimed ones.
fn time(
    device: &Device,
    iters: usize,
    mut call: impl FnMut() -> warpfit::Result<()>,
) -> warpfit::Result<(f64, f64, f64)> {
    for _ in 0..BATCH {
        call()?;
    }
    device.synchronize()?;
    let mut us = Vec::with_capacity(iters);
    while us.len() < iters {
        for _ in 0..BATCH.min(iters - us.len()) {
            let t = Instant::now();
            call()?;
            us.push(t.elapsed().as_secs_f64() * 1e6);
        }
        device.synchronize()?;
    }
    us.sort_by(f64::total_cmp);
    let at = |q: f64| us[((us.len() - 1) as f64 * q).round() as usize];
    Ok((at(0.5), at(0.1), at(0.9)))
}

fn run() -> warpfit::Result<()> {
    let o = options()?;
    if o.iters == 0 {
        return Err(warpfit::Error::invalid("--iters must be at least 1"));
    }
    let device = Device::from_name(&o.backend)?;
    let a = o.gen.parse::<GenSpec>()?.generate()?;
    let n = a.nrows();
    let x = vec![1.0f32; a.ncols()];
    let mut y = vec![0.0f32; n];
    let (ptr_d, col_d, val_d) = (
        device.upload(a.row_ptr())?,
        device.upload(a.col_idx())?,
        device.upload(a.values())?,
    );
    let x_d = device.upload(&x)?;
    let mut y_d = device.alloc::<f32>(n)?;
    let info = device.describe();
    println!(
        "# launch overhead: {} ({}), {} ({} rows, {} nonzeros), {} calls per variant",
        info.backend,
        info.name,
        o.gen,
        n,
        a.nnz(),
        o.iters
    );
    println!("| variant | median µs | p10 µs | p90 µs |");
    println!("|---|---:|---:|---:|");
    let row = |name: &str, (med, p10, p90): (f64, f64, f64)| {
        println!("| {name} | {med:.2} | {p10:.2} | {p90:.2} |");
    };

    let cfg = LaunchConfig::default();
    let prepared = spmv::prepare(&device, &cfg, n, &ptr_d, &col_d, &val_d, &x_d, &y_d)?;
    row("prepared run()", time(&device, o.iters, || prepared.run())?);
    prepared.check()?;
    drop(prepared);

    let never = LaunchConfig {
        split: Split::Never,
        ..cfg
    };
    row(
        "launch, resident arrays, Split::Never",
        time(&device, o.iters, || {
            spmv::launch_with(&device, &never, n, &ptr_d, &col_d, &val_d, &x_d, &mut y_d)
        })?,
    );
    row(
        "launch, resident arrays, default config",
        time(&device, o.iters, || {
            spmv::launch_with(&device, &cfg, n, &ptr_d, &col_d, &val_d, &x_d, &mut y_d)
        })?,
    );
    let (rp, ci, va) = (a.row_ptr(), a.col_idx(), a.values());
    row(
        "launch, host slices, default config",
        time(&device, o.iters.min(500), || {
            spmv::launch_with(&device, &cfg, n, rp, ci, va, &x, &mut y)
        })?,
    );

    // The result is the plain function's, row by row.
    let got = y_d.to_vec()?;
    let mut reference = vec![0.0f32; n];
    for r in 0..n {
        spmv(r, rp, ci, va, &x, &mut reference);
    }
    let worst = got
        .iter()
        .zip(&reference)
        .map(|(g, r)| (g - r).abs() / r.abs().max(1.0))
        .fold(0.0f32, f32::max);
    if worst > 1e-4 {
        return Err(warpfit::Error::invalid(format!(
            "result differs from the reference: relative error {worst}"
        )));
    }
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

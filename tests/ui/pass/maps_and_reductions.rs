//! Per-task maps and a global reduction, launched on the CPU.
use warpfit::prelude::*;

/// y = a·x + y.
#[nested_reduce]
pub fn axpy(i: usize, a: f64, x: &[f64], y: &mut [f64]) {
    y[i] = a * x[i] + y[i];
}

/// A stencil with a plain copy of the task index and an `if` statement.
#[nested_reduce]
pub fn smooth(i: usize, n: u32, x: &[f32], y: &mut [f32]) {
    let me = i;
    let left = if i > 0 { x[i - 1] } else { x[i] };
    let right = if i + 1 < n as usize { x[i + 1] } else { x[i] };
    if left < right {
        y[me] = (left + x[i] + right) / 3.0;
    } else {
        y[me] = x[i];
    }
}

/// x·y, one task folding the whole vectors.
#[nested_reduce]
pub fn dot(t: usize, n: u32, x: &[f64], y: &[f64], out: &mut [f64]) {
    out[t] = (0..n as usize).map(|i| x[i] * y[i]).fold(0.0, |a, b| a + b);
}

fn main() -> warpfit::Result<()> {
    let device = Device::cpu();
    let x = vec![1.0f64; 5000];
    let mut y = vec![2.0f64; 5000];
    axpy::launch(&device, y.len(), 0.5, &x, &mut y)?;
    assert!(y.iter().all(|&v| v == 2.5));
    let split = warpfit::split_one_task(&device, 0, 0..x.len())?;
    let mut out = [0.0f64];
    dot::launch_with(&device, &split.config, &split.tasks, 5000, &x, &y, &mut out)?;
    assert_eq!(out[0], 12_500.0);
    let xs = [1.0f32, 4.0, 2.0];
    let mut ys = [0.0f32; 3];
    smooth::launch(&device, 3, 3, &xs, &mut ys)?;
    assert_eq!(ys, [2.0, (1.0 + 4.0 + 2.0) / 3.0, 2.0]);
    Ok(())
}

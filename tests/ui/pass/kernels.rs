//! The example kernels of the design, with scalars, epilogue `if`s and a
//! device function, launched on the CPU.
use warpfit::prelude::*;

#[nested_reduce]
pub fn spmv(row: usize, row_ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0.0, |a, b| a + b);
}

#[nested_reduce]
pub fn relax(v: usize, ptr: &[u32], src: &[u32], w: &[f32], dist: &[f32], next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi)
        .map(|e| dist[src[e] as usize] + w[e])
        .fold(dist[v], f32::min);
}

#[device_fn]
fn max_plus(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

#[nested_reduce]
fn longest(v: usize, ptr: &[u32], src: &[u32], w: &[f32], dist: &[f32], next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi)
        .map(|e| dist[src[e] as usize] + w[e])
        .fold(f32::NEG_INFINITY, max_plus);
}

fn main() {
    let ptr = [0u32, 2, 3];
    let col = [0u32, 1, 0];
    let val = [1.0f32, 2.0, 3.0];
    let x = [10.0f32, 20.0];
    let mut y = [0.0f32; 2];
    spmv::launch(&Device::cpu(), 2, &ptr, &col, &val, &x, &mut y).unwrap();
    assert_eq!(y, [50.0, 30.0]);
    relax::launch(&Device::cpu(), 2, &ptr, &col, &val, &x, &mut y).unwrap();
    assert_eq!(y, [10.0, 13.0]);
    longest::launch(&Device::cpu(), 2, &ptr, &col, &val, &x, &mut y).unwrap();
    assert_eq!(y, [22.0, 13.0]);
}

/// A kernel that is compiled out (the `cfg` comes after the macro, which
/// sees it): its companion module must go with it, or `gone::launch` would
/// exist without `gone`.
#[nested_reduce]
#[cfg(any())]
pub fn gone(row: usize, ptr: &[u32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| k as f32).fold(0.0, |a, b| a + b);
}

/// Compiles only if no `gone` module exists: both live in the type namespace.
#[allow(non_camel_case_types, dead_code)]
struct gone;

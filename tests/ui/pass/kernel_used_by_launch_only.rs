//! A kernel used only through its companion module, in a crate that
//! denies warnings: its plain function, never called, is not dead code.
#![deny(warnings)]

use warpfit::prelude::*;

#[nested_reduce]
fn row_sum(row: usize, ptr: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| x[k]).fold(0.0, |a, b| a + b);
}

#[nested_reduce]
fn row_argmax(row: usize, ptr: &[u32], x: &[f32], best: &mut [u32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let (_, at) = (lo..hi)
        .map(|k| (x[k], k as u32))
        .fold((f32::NEG_INFINITY, u32::MAX), |a, b| if b.0 > a.0 { b } else { a });
    best[row] = at;
}

fn main() {
    let ptr = [0u32, 2, 5];
    let x = [1.0f32, 2.0, 3.0, 5.0, 4.0];
    let mut y = [0.0f32; 2];
    row_sum::launch(&Device::cpu(), 2, &ptr, &x, &mut y).unwrap();
    assert_eq!(y, [3.0, 12.0]);
    let mut best = [0u32; 2];
    row_argmax::launch(&Device::cpu(), 2, &ptr, &x, &mut best).unwrap();
    assert_eq!(best, [1, 3]);
}

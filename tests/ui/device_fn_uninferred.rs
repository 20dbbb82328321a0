use warpfit::prelude::*;

#[device_fn]
pub fn half(a: f32) -> f32 {
    a * 0.5
}

#[nested_reduce]
fn k(row: usize, ptr: &[u32], col: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| {
        let h = half(x[k]);
        h as f32
    }).fold(0.0, |a, b| a + b);
}

fn main() {}

use warpfit::prelude::*;

#[device_fn]
pub fn scale(a: f32, s: f32) -> f32 {
    a * s
}

// Rust infers `2.0` as f32 from `scale`'s signature, which a macro cannot
// read: the kernel language types it f64 (no context), and the generated
// signature check reports the wrong guess at the call.
#[nested_reduce]
fn k(row: usize, ptr: &[u32], col: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| scale(x[col[k] as usize], 2.0)).fold(0.0, |a, b| a + b);
}

fn main() {}

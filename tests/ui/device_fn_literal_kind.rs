use warpfit::prelude::*;

#[device_fn]
pub fn add(a: f32, b: f32) -> f32 {
    a + b
}

// An unsuffixed literal argument takes the parameter's type, as in Rust; an
// integer literal cannot be an `f32`, and rustc says so at the literal.
#[nested_reduce]
fn k(row: usize, ptr: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| add(x[k], 1)).fold(0.0, |a, b| a + b);
}

fn main() {}

use warpfit::prelude::*;

#[device_fn]
pub fn add(a: f32, b: f32) -> f32 {
    a + b
}

// Just above the midpoint between 1.0 and the next `f32`: parsed as an
// `f32` it rounds up, but through `f64` (what the CUDA side passes) it
// becomes the midpoint and rounds to even, down. The macro cannot see that
// the parameter is `f32`, so it asks for a suffix.
#[nested_reduce]
fn k(row: usize, ptr: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| add(x[k], 1.0000000596046447753906250001))
        .fold(0.0, |a, b| a + b);
}

fn main() {}

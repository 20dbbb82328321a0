use warpfit::prelude::*;

// Operators apply to a tuple's elements, not to the tuple.
#[nested_reduce]
fn k(row: usize, ptr: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let s = (lo..hi).map(|k| (x[k], x[k])).fold((0.0f32, 0.0f32), |a, b| a + b);
    y[row] = s.0;
}

fn main() {}

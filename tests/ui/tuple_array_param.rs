use warpfit::prelude::*;

#[nested_reduce]
fn k(row: usize, ptr: &[u32], x: &[(f32, u32)], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| x[k].0).fold(0.0, |a, b| a + b);
}

fn main() {}

use warpfit::prelude::*;

#[nested_reduce]
fn k(row: usize, ptr: &[u32], col: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let n = (lo..hi).map(|k| k).fold(0, |a, b| a + b);
    y[row] = n as f32;
}

fn main() {}

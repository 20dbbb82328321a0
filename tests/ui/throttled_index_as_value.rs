use warpfit::prelude::*;

// The fine index itself is a value: reordering fine tasks changes it.
#[nested_reduce]
#[throttled]
fn k(row: usize, ptr: &[u32], col: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| x[col[k] as usize] * (k as f32)).fold(0.0, |a, b| a + b);
}

fn main() {}

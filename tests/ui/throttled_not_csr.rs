use warpfit::prelude::*;

// Fixed-width rows (ELL): no range array to give each partition.
#[nested_reduce]
#[throttled]
fn ell(row: usize, col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = row * 4;
    let hi = lo + 4;
    y[row] = (lo..hi).map(|k| val[k] * x[col[k] as usize]).fold(0.0, |a, b| a + b);
}

fn main() {}

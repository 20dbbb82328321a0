use warpfit::prelude::*;

// `col` is read at the fine index and in the prologue: throttling reorders it.
#[nested_reduce]
#[throttled]
fn k(row: usize, ptr: &[u32], col: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let first = col[lo];
    y[row] = (lo..hi).map(|k| x[col[k] as usize]).fold(0.0, |a, b| a + b) + first as f32;
}

fn main() {}

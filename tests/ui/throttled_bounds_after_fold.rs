use warpfit::prelude::*;

// The mean of a row: its length comes from the range's bounds, which
// under throttling are each partition's.
#[nested_reduce]
#[throttled]
fn mean(row: usize, ptr: &[u32], col: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let s = (lo..hi).map(|k| x[col[k] as usize]).fold(0.0, |a, b| a + b);
    y[row] = s / ((hi - lo) as f32);
}

fn main() {}

use warpfit::prelude::*;

// Under `#[throttled]` a 2-D kernel gathers whole rows of `x`: a gather
// that ignores the column index is not a row of `k` elements.
#[nested_reduce(columns = k)]
#[throttled]
fn spmm(row: usize, j: usize, ptr: &[u32], col: &[u32], x: &[f32], k: u32, y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row * k as usize + j] = (lo..hi).map(|e| x[col[e] as usize]).fold(0.0, |a, b| a + b);
}

fn main() {}

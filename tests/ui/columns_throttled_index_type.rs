use warpfit::prelude::*;

// A throttled 2-D kernel's plan is made on the device, which groups each
// row's fine tasks by the block of a `u32` index: a `u64` one is refused.
#[nested_reduce(columns = k)]
#[throttled]
fn spmm(row: usize, j: usize, ptr: &[u32], col: &[u64], x: &[f32], k: u32, y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row * k as usize + j] = (lo..hi).map(|e| x[col[e] as usize * k as usize + j]).fold(0.0, |a, b| a + b);
}

fn main() {}

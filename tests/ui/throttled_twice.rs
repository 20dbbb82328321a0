use warpfit::prelude::*;

#[nested_reduce]
#[throttled]
#[throttled(policy = cf)]
fn spmv(row: usize, ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| val[k] * x[col[k] as usize]).fold(0.0, |a, b| a + b);
}

fn main() {}

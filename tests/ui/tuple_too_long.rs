use warpfit::prelude::*;

#[nested_reduce]
fn k(row: usize, ptr: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let s = (lo..hi)
        .map(|k| (x[k], x[k], x[k], x[k], x[k], x[k], x[k], x[k], x[k]))
        .fold((0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0), |a, b| a);
    y[row] = s.0;
}

fn main() {}

use warpfit::prelude::*;

#[nested_reduce]
fn k(row: usize, ptr: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let s = (lo..hi).map(|k| (x[k], 1u32)).fold((0.0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    y[row] = s.2;
}

fn main() {}

use warpfit::prelude::*;

#[nested_reduce]
fn k(row: usize, ptr: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let s = (lo..hi)
        .map(|k| (x[k], k as u32))
        .fold((f32::INFINITY, u32::MAX), |a, b| if b < a { b } else { a });
    y[row] = s.0;
}

fn main() {}

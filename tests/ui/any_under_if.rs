use warpfit::prelude::*;

#[nested_reduce]
fn k(row: usize, ptr: &[u32], x: &[f32], y: &mut [bool]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = if lo < hi { (lo..hi).any(|k| x[k] > 0.0) } else { false };
}

fn main() {}

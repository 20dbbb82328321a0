use warpfit::prelude::*;

#[nested_reduce]
fn k(row: usize, ptr: &[u32], col: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let s = (lo..hi).map(|k| x[col[k] as usize]).fold(0.0, |a, b| a + b);
    y[row] = if s > 0.0 { s } else { 0 };
}

fn main() {}

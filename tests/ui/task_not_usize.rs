use warpfit::prelude::*;

#[nested_reduce]
fn k(row: u32, ptr: &[u32], col: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row as usize] as usize;
    let hi = ptr[row as usize + 1] as usize;
    y[row as usize] = (lo..hi).map(|k| x[col[k] as usize]).fold(0.0, |a, b| a + b);
}

fn main() {}

use warpfit::prelude::*;

#[nested_reduce]
fn k(row: usize, ptr: &[u32], col: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let b: u8 = 300;
    y[row] = (lo..hi).map(|k| x[col[k] as usize]).fold(0.0, |a, b| a + b) + b as f32;
}

fn main() {}

use warpfit::prelude::*;

#[nested_reduce(u8 = [f32, f64])]
fn k<u8>(row: usize, ptr: &[u32], col: &[u32], x: &[u8], y: &mut [u8]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| x[col[k] as usize]).fold(0.0, |a, b| a + b);
}

fn main() {}

use warpfit::prelude::*;

#[nested_reduce]
fn k(row: usize, x: &[f32], x_len: u64, y: &mut [f32]) {
    let lo = row;
    let hi = x_len as usize;
    y[row] = (lo..hi).map(|k| x[k]).fold(0.0, |a, b| a + b);
}

fn main() {}

use warpfit::prelude::*;

#[nested_reduce(columns = n)]
fn k(row: usize, j: usize, ptr: &[u32], col: &[u32], x: &[f32], k: u32, y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row * k as usize + j] = (lo..hi).map(|e| x[col[e] as usize * k as usize + j]).fold(0.0, |a, b| a + b);
}

fn main() {}

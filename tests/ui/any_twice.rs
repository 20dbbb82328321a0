use warpfit::prelude::*;

#[nested_reduce]
fn k(row: usize, ptr: &[u32], x: &[f32], y: &mut [bool]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let a = (lo..hi).any(|k| x[k] > 0.0);
    y[row] = a && (lo..hi).any(|k| x[k] < 0.0);
}

fn main() {}

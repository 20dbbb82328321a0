use warpfit::prelude::*;

#[nested_reduce]
fn k(row: usize, ptr: &[u32], x: &[f32], y: &mut [f32], at: &mut [u32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let (best, arg) = (lo..hi)
        .map(|k| (x[k], k))
        .fold((f32::INFINITY, 0), |a, b| if b.0 < a.0 { b } else { a });
    y[row] = best;
    at[row] = arg as u32;
}

fn main() {}

use warpfit::prelude::*;

// Tuples hold scalars: a tuple inside a tuple is refused.
#[nested_reduce]
fn k(row: usize, ptr: &[u32], col: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let p = ((lo, hi), 1u32);
    y[row] = (lo..hi).map(|k| x[col[k] as usize]).fold(0.0, |a, b| a + b);
}

fn main() {}

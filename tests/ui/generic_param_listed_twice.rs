use warpfit::prelude::*;

#[nested_reduce(T = [f32], T = [f64])]
fn k<T>(row: usize, ptr: &[u32], col: &[u32], x: &[T], y: &mut [T]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| x[col[k] as usize]).fold(0.0, |a, b| a + b);
}

fn main() {}

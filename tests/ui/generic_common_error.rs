use warpfit::prelude::*;

// An error of every instance is reported once, as a non-generic kernel's.
#[nested_reduce(T = [f32, f64, u32])]
fn k<T>(row: usize, ptr: &[u32], col: &[u32], x: &[T], y: &mut [T]) {
    let mut lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| x[col[k] as usize]).fold(x[row], T::max);
}

fn main() {}

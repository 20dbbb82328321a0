//! A 2-D kernel, generic and not, launched over rows on the CPU.
use warpfit::prelude::*;

#[nested_reduce(T = [f32, f64], columns = k)]
pub fn spmm<T>(row: usize, j: usize, ptr: &[u32], col: &[u32], val: &[T], x: &[T], k: u32, y: &mut [T]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row * k as usize + j] = (lo..hi)
        .map(|e| val[e] * x[col[e] as usize * k as usize + j])
        .fold(0.0, |a, b| a + b);
}

/// The index written `j + (k as usize) * row`, a `u64` count.
#[nested_reduce(columns = k)]
pub fn colsum(row: usize, j: usize, ptr: &[u32], x: &[f32], k: u64, y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[j + (k as usize) * row] = (lo..hi).map(|e| x[e * k as usize + j]).fold(0.0, |a, b| a + b);
}

fn main() -> warpfit::Result<()> {
    // [[1, 2], [0, 3]] times [[1, 10], [2, 20]].
    let (ptr, col) = ([0u32, 2, 3], [0u32, 1, 1]);
    let mut y = [0.0f64; 4];
    spmm::f64::launch(&Device::cpu(), 2, &ptr, &col, &[1.0, 2.0, 3.0], &[1.0, 10.0, 2.0, 20.0], 2, &mut y)?;
    assert_eq!(y, [5.0, 50.0, 6.0, 60.0]);
    let mut s = [0.0f32; 4];
    colsum::launch(&Device::cpu(), 2, &ptr, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, &mut s)?;
    assert_eq!(s, [4.0, 6.0, 5.0, 6.0]);
    Ok(())
}

use warpfit::prelude::*;

// The gathered index depends on `shift`, read in the prologue: the plan is
// made before any launch, without the launch's arrays.
#[nested_reduce]
#[throttled]
fn k(row: usize, ptr: &[u32], col: &[u32], shift: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let s = shift[row] as usize;
    y[row] = (lo..hi).map(|k| x[col[k] as usize + s]).fold(0.0, |a, b| a + b);
}

fn main() {}

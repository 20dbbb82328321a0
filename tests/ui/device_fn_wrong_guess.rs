use warpfit::prelude::*;

#[device_fn]
pub fn scale(a: f32, s: f32) -> f32 {
    a * s
}

// Rust infers `s` as f32 from `scale`'s signature, which a macro cannot
// read: the kernel language types it f64 (no context), and the generated
// signature check reports the wrong guess at the call. (A literal written
// directly as the argument, `scale(.., 2.0)`, takes the parameter's type.)
#[nested_reduce]
fn k(row: usize, ptr: &[u32], col: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let s = 2.0;
    y[row] = (lo..hi).map(|k| scale(x[col[k] as usize], s)).fold(0.0, |a, b| a + b);
}

fn main() {}

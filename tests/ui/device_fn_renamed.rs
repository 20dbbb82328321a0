use warpfit::prelude::*;

mod ops {
    use warpfit::prelude::*;

    #[device_fn]
    pub fn max_plus(a: f32, b: f32) -> f32 {
        a.max(b)
    }
}

use ops::max_plus as best;

#[nested_reduce]
fn k(row: usize, ptr: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| x[k]).fold(f32::NEG_INFINITY, best);
}

fn main() {}

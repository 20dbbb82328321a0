use warpfit::prelude::*;

// No nested pattern: a per-task map, which must write an output.
#[nested_reduce]
fn k(i: usize, x: &[f32], y: &mut [f32]) {
    let v = x[i] * 2.0;
    if v > 1.0 {
        let w = v + 1.0;
    }
}

fn main() {}

use warpfit::prelude::*;

// A per-task map writes each output at the task index only.
#[nested_reduce]
fn shift(i: usize, x: &[f32], y: &mut [f32]) {
    y[i + 1] = x[i];
}

fn main() {}

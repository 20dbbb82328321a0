use warpfit::prelude::*;

// `.load()` reads shared arrays; a plain array is indexed.
#[nested_reduce]
fn copy(v: usize, x: &[f32], y: &mut [f32]) {
    y[v] = x[v].load();
}

fn main() {}

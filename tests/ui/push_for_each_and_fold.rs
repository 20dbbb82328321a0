use warpfit::prelude::*;

// One nested pattern per kernel: a `for_each` has no fold.
#[nested_reduce]
fn both(v: usize, ptr: &[u32], dst: &[u32], w: &[f32], hits: &[Atomic<u32>], y: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        atomic_add(&hits[dst[e] as usize], 1);
    });
    y[v] = (lo..hi).map(|e| w[e]).fold(0.0, |a, b| a + b);
}

fn main() {}

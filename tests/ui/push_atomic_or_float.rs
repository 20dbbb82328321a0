use warpfit::prelude::*;

// `atomic_or` is an integer operation.
#[nested_reduce]
fn flags(v: usize, ptr: &[u32], dst: &[u32], mask: &[Atomic<f32>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        atomic_or(&mask[dst[e] as usize], 1.0);
    });
}

fn main() {}

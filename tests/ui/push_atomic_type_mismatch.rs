use warpfit::prelude::*;

// The value's type is the element's: no implicit conversion.
#[nested_reduce]
fn lower(v: usize, ptr: &[u32], dst: &[u32], level: &[u32], dist: &[Atomic<f32>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        atomic_min(&dist[dst[e] as usize], level[e]);
    });
}

fn main() {}

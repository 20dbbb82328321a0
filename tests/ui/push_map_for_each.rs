use warpfit::prelude::*;

// `for_each` takes the range itself.
#[nested_reduce]
fn mapped(v: usize, ptr: &[u32], dst: &[u32], hits: &[Atomic<u32>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).map(|e| dst[e] as usize).for_each(|u| {
        atomic_add(&hits[u], 1);
    });
}

fn main() {}

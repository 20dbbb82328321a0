use warpfit::prelude::*;

// `for_each` is a statement.
#[nested_reduce]
fn valued(v: usize, ptr: &[u32], dst: &[u32], hits: &[Atomic<u32>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let r = (lo..hi).for_each(|e| {
        atomic_add(&hits[dst[e] as usize], 1);
    });
}

fn main() {}

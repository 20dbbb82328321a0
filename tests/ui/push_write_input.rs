use warpfit::prelude::*;

// A plain input array is read-only, in a `for_each` body too.
#[nested_reduce]
fn mark(v: usize, ptr: &[u32], dst: &[u32], seen: &[u32], hits: &[Atomic<u32>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        seen[dst[e] as usize] = 1;
        atomic_add(&hits[dst[e] as usize], 1);
    });
}

fn main() {}

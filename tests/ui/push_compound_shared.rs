use warpfit::prelude::*;

// `+=` on a shared array's element is a plain write too: use `atomic_add`.
#[nested_reduce]
fn count(v: usize, ptr: &[u32], dst: &[u32], hits: &[Atomic<u32>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        hits[dst[e] as usize] += 1;
    });
}

fn main() {}

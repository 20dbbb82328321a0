use warpfit::prelude::*;

// Outputs keep the owner-computes rule in a push kernel's epilogue.
#[nested_reduce]
fn spread(v: usize, ptr: &[u32], dst: &[u32], hits: &[Atomic<u32>], deg: &mut [u32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        atomic_add(&hits[dst[e] as usize], 1);
    });
    deg[v + 1] = (hi - lo) as u32;
}

fn main() {}

use warpfit::prelude::*;

// A fold's map computes a value: no effects there.
#[nested_reduce]
fn count(v: usize, ptr: &[u32], dst: &[u32], hits: &[Atomic<u32>], y: &mut [u32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    y[v] = (lo..hi)
        .map(|e| atomic_add(&hits[dst[e] as usize], 1))
        .fold(0, |a, b| a + b);
}

fn main() {}

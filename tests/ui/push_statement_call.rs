use warpfit::prelude::*;

#[device_fn]
fn twice(a: u32) -> u32 {
    a * 2
}

// A statement-position call is an intrinsic: a device function's value
// must be used.
#[nested_reduce]
fn dropped(v: usize, ptr: &[u32], dst: &[u32], hits: &[Atomic<u32>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        twice(dst[e]);
        atomic_add(&hits[dst[e] as usize], 1);
    });
}

fn main() {}

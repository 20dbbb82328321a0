use warpfit::prelude::*;

// `atomic_apply` takes a `#[device_fn]` by name.
#[nested_reduce]
fn apply(v: usize, ptr: &[u32], dst: &[u32], best: &[Atomic<u32>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        atomic_apply(&best[dst[e] as usize], v as u32, |a, b| a.max(b));
    });
}

fn main() {}

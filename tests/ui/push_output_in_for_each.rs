use warpfit::prelude::*;

// Inside `for_each` a task's fine tasks run in parallel: outputs are
// written in the epilogue.
#[nested_reduce]
fn last(v: usize, ptr: &[u32], dst: &[u32], hits: &[Atomic<u32>], y: &mut [u32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        atomic_add(&hits[dst[e] as usize], 1);
        y[v] = dst[e];
    });
}

fn main() {}

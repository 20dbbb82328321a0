use warpfit::prelude::*;

// Every task runs its range once: not under an `if`.
#[nested_reduce]
fn maybe(v: usize, ptr: &[u32], dst: &[u32], on: &[u8], hits: &[Atomic<u32>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    if on[v] != 0 {
        (lo..hi).for_each(|e| {
            atomic_add(&hits[dst[e] as usize], 1);
        });
    }
}

fn main() {}

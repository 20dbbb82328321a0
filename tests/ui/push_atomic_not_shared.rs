use warpfit::prelude::*;

// The atomic intrinsics update shared arrays `&[Atomic<T>]` only.
#[nested_reduce]
fn relax(v: usize, ptr: &[u32], dst: &[u32], w: &[f32], dist: &[f32], out: &Worklist) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        if w[e] < atomic_min(&dist[dst[e] as usize], w[e]) {
            push(out, dst[e]);
        }
    });
}

fn main() {}

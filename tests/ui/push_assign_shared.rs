use warpfit::prelude::*;

// A shared array is written only through the atomic intrinsics.
#[nested_reduce]
fn relax(v: usize, ptr: &[u32], dst: &[u32], w: &[f32], dist: &[Atomic<f32>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let dv = dist[v].load();
    (lo..hi).for_each(|e| {
        dist[dst[e] as usize] = dv + w[e];
    });
}

fn main() {}

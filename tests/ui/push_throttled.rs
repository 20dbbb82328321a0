use warpfit::prelude::*;

// Throttling carries a fold between launches: a `for_each` has none.
#[nested_reduce]
#[throttled]
fn scatter(v: usize, ptr: &[u32], dst: &[u32], x: &[f32], sum: &[Atomic<f32>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        atomic_add(&sum[dst[e] as usize], x[v]);
    });
}

fn main() {}

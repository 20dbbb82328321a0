use warpfit::prelude::*;

// Worklist items are `u32`.
#[nested_reduce]
fn neighbours(v: usize, ptr: &[u32], dst: &[u32], out: &Worklist) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        let u = dst[e] as usize;
        push(out, u);
    });
}

fn main() {}

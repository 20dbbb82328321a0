use warpfit::prelude::*;

// A kernel needs somewhere to write: an output, a shared array or a
// worklist.
#[nested_reduce]
fn nothing(v: usize, ptr: &[u32], dst: &[u32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        let u = dst[e];
    });
}

fn main() {}

use warpfit::prelude::*;

// Effects run in the `for_each` body, the epilogue or a per-task map: the
// prologue may run more than once per task.
#[nested_reduce]
fn early(v: usize, ptr: &[u32], dst: &[u32], hits: &[Atomic<u32>], out: &Worklist) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let before = atomic_add(&hits[v], 1);
    push(out, before);
    (lo..hi).for_each(|e| {
        atomic_add(&hits[dst[e] as usize], 1);
    });
}

fn main() {}

use warpfit::prelude::*;

// `push` takes a worklist parameter.
#[nested_reduce]
fn frontier(v: usize, flags: &[u8], next: &[Atomic<u32>]) {
    if flags[v] != 0 {
        push(next, v as u32);
    }
}

fn main() {}

use warpfit::prelude::*;

// Shared arrays hold the types the device has atomics for, under a
// shared borrow; worklists are shared borrows too.
#[nested_reduce]
fn params(v: usize, a: &[Atomic<u8>], b: &mut [Atomic<u32>], c: &mut Worklist) {
    push(c, v as u32);
}

fn main() {}

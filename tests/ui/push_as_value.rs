use warpfit::prelude::*;

// `push` returns nothing.
#[nested_reduce]
fn pushed(v: usize, out: &Worklist, y: &mut [u32]) {
    let p = push(out, v as u32);
    y[v] = 1;
}

fn main() {}

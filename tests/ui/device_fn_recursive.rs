use warpfit::prelude::*;

// A device function that calls itself: CUDA gives it no defined stack and
// the CPU twin would overflow its own.
#[device_fn]
pub fn countdown(a: u32) -> u32 {
    if a == 0 {
        0
    } else {
        countdown(a - 1)
    }
}

fn main() {}

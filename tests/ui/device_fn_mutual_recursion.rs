use warpfit::prelude::*;

// Recursion through three device functions, each only seeing its own callees.
#[device_fn]
pub fn ping(a: u32) -> u32 {
    if a == 0 {
        0
    } else {
        pong(a - 1)
    }
}

#[device_fn]
pub fn pong(a: u32) -> u32 {
    let b: u32 = pang(a);
    b
}

#[device_fn]
pub fn pang(a: u32) -> u32 {
    let b: u32 = ping(a);
    b
}

fn main() {}

use warpfit::prelude::*;

// 17 nested calls (link_0 -> link_1 -> ... -> link_17): more than the 16
// the compile-time recursion check follows, so `link_0` is rejected; every
// other link starts a chain of at most 16 calls and is accepted.

#[device_fn]
pub fn link_0(a: u32) -> u32 {
    let b: u32 = link_1(a);
    b + 1
}

#[device_fn]
pub fn link_1(a: u32) -> u32 {
    let b: u32 = link_2(a);
    b + 1
}

#[device_fn]
pub fn link_2(a: u32) -> u32 {
    let b: u32 = link_3(a);
    b + 1
}

#[device_fn]
pub fn link_3(a: u32) -> u32 {
    let b: u32 = link_4(a);
    b + 1
}

#[device_fn]
pub fn link_4(a: u32) -> u32 {
    let b: u32 = link_5(a);
    b + 1
}

#[device_fn]
pub fn link_5(a: u32) -> u32 {
    let b: u32 = link_6(a);
    b + 1
}

#[device_fn]
pub fn link_6(a: u32) -> u32 {
    let b: u32 = link_7(a);
    b + 1
}

#[device_fn]
pub fn link_7(a: u32) -> u32 {
    let b: u32 = link_8(a);
    b + 1
}

#[device_fn]
pub fn link_8(a: u32) -> u32 {
    let b: u32 = link_9(a);
    b + 1
}

#[device_fn]
pub fn link_9(a: u32) -> u32 {
    let b: u32 = link_10(a);
    b + 1
}

#[device_fn]
pub fn link_10(a: u32) -> u32 {
    let b: u32 = link_11(a);
    b + 1
}

#[device_fn]
pub fn link_11(a: u32) -> u32 {
    let b: u32 = link_12(a);
    b + 1
}

#[device_fn]
pub fn link_12(a: u32) -> u32 {
    let b: u32 = link_13(a);
    b + 1
}

#[device_fn]
pub fn link_13(a: u32) -> u32 {
    let b: u32 = link_14(a);
    b + 1
}

#[device_fn]
pub fn link_14(a: u32) -> u32 {
    let b: u32 = link_15(a);
    b + 1
}

#[device_fn]
pub fn link_15(a: u32) -> u32 {
    let b: u32 = link_16(a);
    b + 1
}

#[device_fn]
pub fn link_16(a: u32) -> u32 {
    let b: u32 = link_17(a);
    b + 1
}

#[device_fn]
pub fn link_17(a: u32) -> u32 {
    a
}

fn main() {}

use warpfit::prelude::*;

#[device_fn]
fn pick(a: ((f32, u32), u8), b: f32) -> f32 {
    b
}

fn main() {}

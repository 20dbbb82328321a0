use warpfit::prelude::*;

#[device_fn]
fn f(a: f32) {
    let b = a;
}

fn main() {}

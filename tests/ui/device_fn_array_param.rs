use warpfit::prelude::*;

#[device_fn]
fn f(a: &[f32]) -> f32 {
    a[0]
}

fn main() {}

//! A device function brought in with `use` (its companion module comes along).
use warpfit::prelude::*;

mod ops {
    use warpfit::prelude::*;

    /// ⊕ of the (max, +) semiring.
    #[device_fn]
    pub fn max_plus(a: f32, b: f32) -> f32 {
        a.max(b)
    }
}

use ops::max_plus;

/// Device functions calling others by `super::` and `self::` paths, with
/// unsuffixed literal arguments typed by the callee's parameters.
mod more {
    use warpfit::prelude::*;

    #[device_fn]
    pub fn shifted_max(a: f32, b: f32) -> f32 {
        let m: f32 = super::ops::max_plus(a, b);
        self::nudge(m, 0.5)
    }

    #[device_fn]
    pub fn nudge(a: f32, by: f32) -> f32 {
        a + by
    }
}

#[nested_reduce]
fn shifted(v: usize, ptr: &[u32], w: &[f32], out: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let s = (lo..hi).map(|e| w[e]).fold(0.0, |a, b| a + b);
    out[v] = more::shifted_max(s, 1.0);
}

#[nested_reduce]
fn longest(v: usize, ptr: &[u32], src: &[u32], w: &[f32], dist: &[f32], next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi)
        .map(|e| dist[src[e] as usize] + w[e])
        .fold(f32::NEG_INFINITY, max_plus);
}

fn main() {
    let mut next = [0.0f32; 2];
    longest::launch(
        &Device::cpu(),
        2,
        &[0, 2, 2],
        &[1, 0],
        &[1.0, 2.5],
        &[4.0, 3.0],
        &mut next,
    )
    .unwrap();
    assert_eq!(next, [6.5, f32::NEG_INFINITY]);
    assert_eq!(longest::SPEC.device_fns[0].name, "max_plus");
    assert_eq!(max_plus(1.0, 2.0), 2.0);

    let mut out = [0.0f32; 2];
    shifted::launch(&Device::cpu(), 2, &[0, 2, 2], &[1.0, 2.5], &mut out).unwrap();
    assert_eq!(out, [4.0, 1.5]);
}

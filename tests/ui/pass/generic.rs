//! Generic kernels compile without warnings in every visibility, with
//! `#[throttled]`, several type parameters, `#[cfg]` and lint attributes,
//! and run through their instances' modules and their generic function.
#![deny(warnings)]

use warpfit::prelude::*;

/// y = A·x, public, throttled.
#[nested_reduce(T = [f32, f64])]
#[throttled(policy = cf)]
pub fn spmv<T>(row: usize, ptr: &[u32], col: &[u32], val: &[T], x: &[T], y: &mut [T]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0.0, |a, b| a + b);
}

// Private, used only through one instance's module.
#[nested_reduce(T = [u32, i64])]
fn largest<T>(v: usize, ptr: &[u32], w: &[T], out: &mut [T]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    out[v] = (lo..hi).map(|e| w[e]).fold(T::MIN, T::max);
}

// Crate-visible, two parameters, a lint attribute the body needs, and a
// `#[cfg]` that holds.
#[nested_reduce(T = [f32, f64], I = [u32, u64])]
#[cfg(not(any()))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn scaled<T, I>(
    row: usize,
    ptr: &[I],
    col: &[I],
    val: &[T],
    x: &[T],
    a: T,
    b: T,
    y: &mut [T],
) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = a * b * (lo..hi).map(|k| val[k] * x[col[k] as usize]).fold(0.0, |p, q| p + q);
}

// A `#[cfg]` that does not hold: neither the function nor its module exist.
#[nested_reduce(T = [f32])]
#[cfg(any())]
fn absent<T>(i: usize, x: &[T], y: &mut [T]) {
    y[i] = x[i];
}

// A push kernel: a shared array and a worklist beside the element type.
#[nested_reduce(T = [f32, u32])]
pub fn scatter_min<T>(v: usize, ptr: &[u32], dst: &[u32], w: &[T], best: &[Atomic<T>], out: &Worklist) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        let u = dst[e] as usize;
        if w[e] < atomic_min(&best[u], w[e]) {
            push(out, u as u32);
        }
    });
}

// A shared array of the second parameter's type.
#[nested_reduce(T = [f32], C = [u32, u64])]
pub fn count_heavy<T, C>(v: usize, ptr: &[u32], dst: &[u32], w: &[T], heavy: T, count: &[Atomic<C>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        if w[e] > heavy {
            atomic_add(&count[dst[e] as usize], 1);
        }
    });
}

mod inner {
    use warpfit::prelude::*;

    /// A map in a module of its own, generic over one type.
    #[nested_reduce(T = [f64])]
    pub fn halve<T>(i: usize, x: &[T], y: &mut [T]) {
        y[i] = x[i] * 0.5;
    }
}

fn main() -> warpfit::Result<()> {
    let dev = Device::cpu();
    let (ptr, col) = (vec![0u32, 2, 3], vec![0u32, 1, 1]);
    let mut y = vec![0.0f64; 2];
    spmv::f64::launch(&dev, 2, &ptr, &col, &[1.0, 2.0, 3.0], &[1.0, 10.0], &mut y)?;
    assert_eq!(y, [21.0, 30.0]);
    let mut t = spmv::f32::throttle(&dev, &spmv::f32::throttle_options()?, 2, 2, &ptr, &col, &[1.0f32, 2.0, 3.0])?;
    let mut y32 = vec![0.0f32; 2];
    t.launch(&[1.0f32, 10.0], &mut y32[..])?;
    assert_eq!(y32, [21.0, 30.0]);
    let mut plain = [0.0f32; 2];
    spmv(1, &ptr, &col, &[1.0f32, 2.0, 3.0], &[1.0, 10.0], &mut plain);
    assert_eq!(plain, [0.0, 30.0]);

    let mut out = vec![0i64; 2];
    largest::i64::launch(&dev, 2, &ptr, &[-4i64, 7, 1], &mut out)?;
    assert_eq!(out, [7, 1]);

    let ptr64 = [0u64, 2, 3];
    let mut y = [0.0f32; 2];
    scaled::f32_u64::launch(&dev, 2, &ptr64, &[0u64, 1, 1], &[1.0, 2.0, 3.0], &[1.0, 10.0], 2.0, 0.5, &mut y)?;
    assert_eq!(y, [21.0, 30.0]);
    let mut z = [0.0f64; 2];
    scaled(0, &ptr64, &[0u64, 1, 1], &[1.0, 2.0, 3.0], &[1.0, 10.0], 2.0, 0.5, &mut z);
    assert_eq!(z, [21.0, 0.0]);

    let mut best = vec![u32::MAX; 2];
    let out = dev.worklist(2, 2)?;
    scatter_min::u32::launch(&dev, 2, &ptr, &col, &[5u32, 3, 4], &mut best, &out)?;
    assert_eq!(best, [5, 3]);

    let mut count = vec![0u64; 2];
    count_heavy::f32_u64::launch(&dev, 2, &ptr, &col, &[5.0f32, 3.0, 4.0], 3.5, &mut count)?;
    assert_eq!(count, [1, 1]);

    let mut h = [0.0f64; 3];
    inner::halve::f64::launch(&dev, 3, &[2.0, 4.0, 6.0], &mut h)?;
    assert_eq!(h, [1.0, 2.0, 3.0]);
    Ok(())
}

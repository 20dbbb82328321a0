//! Generic kernels (`#[nested_reduce(T = [..])]`), shared by the CPU, NVRTC
//! and GPU suites, and the plain loops they are checked against.
// The plain loops index by task and edge as the kernels do.
#![allow(dead_code, clippy::needless_range_loop)]

use warpfit::prelude::*;

/// y = A·x over (+, ×), for f32 and f64; throttled.
#[nested_reduce(T = [f32, f64])]
#[throttled(partitioner = columns)]
pub fn spmv<T>(row: usize, row_ptr: &[u32], col: &[u32], val: &[T], x: &[T], y: &mut [T]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0.0, |a, b| a + b);
}

/// `out[t] = Σ x[i]·y[i]` over `0..n`: a whole-array reduction whose
/// initial value is a cast to the element type (`0 as T`), for floats and
/// a wrapping integer.
#[nested_reduce(T = [f32, f64, i64])]
pub fn dot<T>(t: usize, n: u32, x: &[T], y: &[T], out: &mut [T]) {
    out[t] = (0..n as usize)
        .map(|i| x[i] * y[i])
        .fold(0 as T, |a, b| a + b);
}

/// A Bellman-Ford step over (min, +), `T::MAX` standing for "unreached"
/// (kept, not added to) and `T::min` the reduce operator.
#[nested_reduce(T = [f32, f64, u32])]
pub fn min_plus<T>(v: usize, ptr: &[u32], src: &[u32], w: &[T], dist: &[T], next: &mut [T]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi)
        .map(|e| {
            let d = dist[src[e] as usize];
            if d == T::MAX {
                T::MAX
            } else {
                d + w[e]
            }
        })
        .fold(dist[v], T::min);
}

/// SpMV over a choice of index width too: two type parameters, four
/// instances (`gather::f32_u32` … `gather::f64_u64`).
#[nested_reduce(T = [f32, f64], I = [u32, u64])]
pub fn gather<T, I>(row: usize, ptr: &[I], col: &[I], val: &[T], x: &[T], y: &mut [T]) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0.0, |a, b| a + b);
}

/// A per-task map over element types that are not numbers too.
#[nested_reduce(T = [f32, i32, u8, bool])]
pub fn select<T>(i: usize, pick: &[bool], a: &[T], b: &[T], out: &mut [T]) {
    out[i] = if pick[i] { a[i] } else { b[i] };
}

/// A push kernel over a shared array of the element type: each edge
/// lowers its head's `best` to its weight and pushes the head when it did.
#[nested_reduce(T = [f32, f64, u32, i64])]
pub fn lower_heads<T>(
    v: usize,
    ptr: &[u32],
    dst: &[u32],
    w: &[T],
    best: &[Atomic<T>],
    out: &Worklist,
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        let u = dst[e] as usize;
        if w[e] < atomic_min(&best[u], w[e]) {
            push(out, u as u32);
        }
    });
}

/// A device function called from a generic kernel in a module below it
/// (`super::twice`: the instances live one module further down).
#[device_fn]
pub fn twice(a: f64) -> f64 {
    a * 2.0
}

pub mod scaled {
    use warpfit::prelude::*;

    /// `y = 3·x` through a device function of the parent module.
    #[nested_reduce(T = [f32, f64])]
    pub fn scale<T>(i: usize, x: &[T], y: &mut [T]) {
        let s: f64 = super::twice(1.5);
        y[i] = x[i] * s as T;
    }
}

/// A CSR matrix with `rows` rows over `cols` columns: row `r` holds up to
/// `r % 7` entries, at scattered columns, of dyadic values (every sum of a
/// few products is exact in f32 and f64).
pub fn matrix(rows: usize, cols: usize) -> (Vec<u32>, Vec<u32>, Vec<f64>) {
    let (mut ptr, mut col, mut val) = (vec![0u32], Vec::new(), Vec::new());
    for r in 0..rows {
        for j in 0..r % 7 {
            col.push(((r * 31 + j * 17) % cols) as u32);
            val.push(((r + j) % 9) as f64 * 0.25 - 1.0);
        }
        ptr.push(col.len() as u32);
    }
    (ptr, col, val)
}

/// `y = A·x` by a plain loop, in f64.
pub fn spmv_reference(ptr: &[u32], col: &[u32], val: &[f64], x: &[f64]) -> Vec<f64> {
    (0..ptr.len() - 1)
        .map(|r| {
            (ptr[r] as usize..ptr[r + 1] as usize)
                .map(|k| val[k] * x[col[k] as usize])
                .sum()
        })
        .collect()
}

/// The (min, +) step by a plain loop, `max` standing for "unreached".
pub fn min_plus_reference<T: Copy + PartialOrd + std::ops::Add<Output = T>>(
    ptr: &[u32],
    src: &[u32],
    w: &[T],
    dist: &[T],
    max: T,
) -> Vec<T> {
    (0..ptr.len() - 1)
        .map(|v| {
            let mut best = dist[v];
            for e in ptr[v] as usize..ptr[v + 1] as usize {
                let d = dist[src[e] as usize];
                let c = if d == max { max } else { d + w[e] };
                if c < best {
                    best = c;
                }
            }
            best
        })
        .collect()
}

/// Dyadic values, as f64.
pub fn dyadic(n: usize, seed: usize) -> Vec<f64> {
    (0..n)
        .map(|i| ((i * 7 + seed) % 11) as f64 * 0.5 - 2.0)
        .collect()
}

//! 2-D kernels (`#[nested_reduce(columns = k)]`), shared by the CPU, NVRTC
//! and GPU suites, and the plain loops they are checked against.
// The plain loops index by row, column and edge as the kernels do.
#![allow(dead_code, clippy::needless_range_loop, clippy::too_many_arguments)]

use warpfit::prelude::*;

/// `Y = A·X` (SpMM) for f32 and f64; throttled (`spmm::f64::throttle`),
/// a cache-fit partition holds whole rows of `x`.
#[nested_reduce(T = [f32, f64], columns = k)]
#[throttled]
pub fn spmm<T>(
    row: usize,
    j: usize,
    ptr: &[u32],
    col: &[u32],
    val: &[T],
    x: &[T],
    k: u32,
    y: &mut [T],
) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row * k as usize + j] = (lo..hi)
        .map(|e| val[e] * x[col[e] as usize * k as usize + j])
        .fold(0.0, |a, b| a + b);
}

#[device_fn]
pub fn max_plus(a: f32, b: f32) -> f32 {
    a.max(b)
}

/// The (max, +) product with a `#[device_fn]` reduce, the column count a
/// `u64`, the operands of `*` and `+` in the other order; throttled under
/// `cf` by its attribute (the reduce commutes).
#[nested_reduce(columns = n)]
#[throttled(policy = cf)]
pub fn max_plus_columns(
    v: usize,
    c: usize,
    ptr: &[u32],
    src: &[u32],
    w: &[f32],
    dist: &[f32],
    n: u64,
    out: &mut [f32],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    out[c + (n as usize) * v] = (lo..hi)
        .map(|e| w[e] + dist[src[e] as usize * n as usize + c])
        .fold(f32::NEG_INFINITY, max_plus);
}

/// Per (row, column): the largest product and the edge that gives it, ties
/// to the lower edge; a tuple fold written to two outputs, the edge read in
/// the epilogue against a per-column threshold.
#[nested_reduce(columns = k)]
pub fn argmax_columns(
    row: usize,
    j: usize,
    ptr: &[u32],
    col: &[u32],
    val: &[f32],
    x: &[f32],
    floor: &[f32],
    k: u32,
    best: &mut [f32],
    edge: &mut [u32],
) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let (b, e) = (lo..hi)
        .map(|e| (val[e] * x[col[e] as usize * k as usize + j], e as u32))
        .fold((f32::NEG_INFINITY, u32::MAX), |a, b| {
            if b.0 > a.0 || (b.0 == a.0 && b.1 < a.1) {
                b
            } else {
                a
            }
        });
    best[row * k as usize + j] = b.max(floor[j]);
    edge[row * k as usize + j] = e;
}

/// A map whose loads at the fine-task index run on one path only (`w[e]`
/// where the column index is even): the conditional load, and the gather
/// behind it, in every decomposition of a 2-D launch.
#[nested_reduce(columns = k)]
pub fn masked_columns(
    row: usize,
    j: usize,
    ptr: &[u32],
    col: &[u32],
    w: &[f32],
    x: &[f32],
    k: u32,
    out: &mut [f32],
) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    out[row * k as usize + j] = (lo..hi)
        .map(|e| {
            if col[e] % 2 == 0 {
                w[e] * x[col[e] as usize * k as usize + j]
            } else {
                0.0
            }
        })
        .fold(0.0, |a, b| a + b);
}

/// SpMM through a permutation of `x`'s rows (`x[perm[col[e]] · k + j]`):
/// validated at each row's end columns, but a gathered value (`perm`'s) is
/// an index, so the validation loads the gathers rather than only checking
/// their indices.
#[nested_reduce(columns = k)]
pub fn permuted_columns(
    row: usize,
    j: usize,
    ptr: &[u32],
    col: &[u32],
    perm: &[u32],
    val: &[f32],
    x: &[f32],
    k: u32,
    y: &mut [f32],
) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row * k as usize + j] = (lo..hi)
        .map(|e| val[e] * x[perm[col[e] as usize] as usize * k as usize + j])
        .fold(0.0, |a, b| a + b);
}

/// Gathers of every width at `base + j`: bytes, flags, 32-bit and 64-bit
/// integers of a row of `k` columns, summed per (row, column). Validated,
/// so its folds load each width as the unchecked fold loads it.
#[nested_reduce(columns = k)]
#[allow(clippy::too_many_arguments)]
pub fn widths_columns(
    row: usize,
    j: usize,
    ptr: &[u32],
    col: &[u32],
    bytes: &[u8],
    flags: &[bool],
    ints: &[i32],
    words: &[u64],
    k: u32,
    out: &mut [u64],
) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    out[row * k as usize + j] = (lo..hi)
        .map(|e| {
            bytes[col[e] as usize * k as usize + j] as u64
                + flags[col[e] as usize * k as usize + j] as u64
                + ints[col[e] as usize * k as usize + j] as u64
                + words[col[e] as usize * k as usize + j]
        })
        .fold(0, |a, b| a + b);
}

/// A per-element map over a dense matrix (no nested pattern): each row
/// scaled by a per-column factor, added onto the output.
#[nested_reduce(columns = k)]
pub fn scale_columns(row: usize, j: usize, a: &[f32], s: &[f32], k: u32, out: &mut [f32]) {
    out[row * k as usize + j] += a[row * k as usize + j] * s[j];
}

/// A small CSR matrix with rows of 0 to 6 entries and dyadic values.
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

/// A matrix whose row `r` has `len(r)` entries, for hubs.
pub fn matrix_with(
    rows: usize,
    cols: usize,
    len: impl Fn(usize) -> usize,
) -> (Vec<u32>, Vec<u32>, Vec<f64>) {
    let (mut ptr, mut col, mut val) = (vec![0u32], Vec::new(), Vec::new());
    for r in 0..rows {
        for e in 0..len(r) {
            col.push(((r * 131 + e * 17) % cols) as u32);
            val.push(((r + e) % 9) as f64 * 0.25 - 1.0);
        }
        ptr.push(col.len() as u32);
    }
    (ptr, col, val)
}

/// Small dyadic values: sums of their products are exact in f32 and f64.
pub fn dense(rows: usize, k: usize, seed: usize) -> Vec<f64> {
    (0..rows * k)
        .map(|i| ((i * 7 + seed) % 11) as f64 * 0.5 - 2.0)
        .collect()
}

/// `Y = A·X` by a plain loop, in f64 (exact for [`matrix`] and [`dense`]).
pub fn spmm_reference(ptr: &[u32], col: &[u32], val: &[f64], x: &[f64], k: usize) -> Vec<f64> {
    let rows = ptr.len() - 1;
    let mut y = vec![0.0; rows * k];
    for r in 0..rows {
        for j in 0..k {
            y[r * k + j] = (ptr[r] as usize..ptr[r + 1] as usize)
                .map(|e| val[e] * x[col[e] as usize * k + j])
                .sum();
        }
    }
    y
}

pub fn f32s(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

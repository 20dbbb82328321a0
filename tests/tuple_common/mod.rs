//! Kernels whose folds carry tuples, shared by the CPU, NVRTC and GPU
//! suites, and the plain loops they are checked against.
// The plain loops index by task and edge as the kernels do.
#![allow(dead_code, clippy::needless_range_loop)]

use warpfit::prelude::*;

/// The lightest in-edge of each vertex and its edge id, ties to the lowest
/// id: an argmin with a deterministic tie-break (Borůvka's step).
#[nested_reduce]
pub fn lightest(v: usize, ptr: &[u32], w: &[f32], best_w: &mut [f32], best_e: &mut [u32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let (bw, be) = (lo..hi)
        .map(|e| (w[e], e as u32))
        .fold((f32::INFINITY, u32::MAX), |a, b| {
            if b.0 < a.0 || (b.0 == a.0 && b.1 < a.1) {
                b
            } else {
                a
            }
        });
    best_w[v] = bw;
    best_e[v] = be;
}

/// The same argmin through a `#[device_fn]` that takes and returns tuples.
#[device_fn]
pub fn lighter(a: (f32, u32), b: (f32, u32)) -> (f32, u32) {
    if b.0 < a.0 || (b.0 == a.0 && b.1 < a.1) {
        b
    } else {
        a
    }
}

#[nested_reduce]
pub fn lightest_fn(v: usize, ptr: &[u32], w: &[f32], best_w: &mut [f32], best_e: &mut [u32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let best: (f32, u32) = (lo..hi)
        .map(|e| (w[e], e as u32))
        .fold((f32::INFINITY, u32::MAX), lighter);
    best_w[v] = best.0;
    best_e[v] = best.1;
}

/// Count, sum and sum of squares at once (a commuting fold element by
/// element), and the weighted mean `Σ w·x / Σ w` from them.
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
pub fn moments(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    x: &[f64],
    w: &[f64],
    count: &mut [u32],
    sum: &mut [f64],
    mean: &mut [f64],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let (n, s, sw, swx) = (lo..hi)
        .map(|e| {
            let xv = x[src[e] as usize];
            (1u32, xv, w[e], w[e] * xv)
        })
        .fold((0, 0.0, 0.0, 0.0), |a, b| {
            (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3)
        });
    count[v] = n;
    sum[v] = s;
    mean[v] = if sw > 0.0 { swx / sw } else { 0.0 };
}

/// y = A·x with the sum carried as a 1-tuple.
#[nested_reduce]
pub fn spmv_1(row: usize, row_ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    let (s,) = (lo..hi)
        .map(|k| (val[k] * x[col[k] as usize],))
        .fold((0.0,), |a, b| (a.0 + b.0,));
    y[row] = s;
}

/// Eight elements of mixed types, every element its own operator: the
/// widest tuple the language allows (its product of powers of two is exact
/// in every order).
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
pub fn eight(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    x: &[i64],
    f: &[f32],
    lo_out: &mut [i64],
    hi_out: &mut [i64],
    bits: &mut [u32],
    any_neg: &mut [bool],
    fsum: &mut [f32],
    big: &mut [u64],
    small: &mut [u8],
    prod: &mut [f64],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let (mn, mx, or, neg, fs, bg, sm, pr) = (lo..hi)
        .map(|e| {
            let s = src[e] as usize;
            (
                x[s],
                x[s],
                1u32 << (s % 32),
                x[s] < 0,
                f[e],
                x[s] as u64,
                (s % 200) as u8,
                if f[e] > 0.5 { 2.0 } else { 0.5 },
            )
        })
        .fold(
            (
                i64::MAX,
                i64::MIN,
                0u32,
                false,
                0.0f32,
                0u64,
                u8::MAX,
                1.0f64,
            ),
            |a, b| {
                (
                    a.0.min(b.0),
                    a.1.max(b.1),
                    a.2 | b.2,
                    a.3 | b.3,
                    a.4 + b.4,
                    a.5 ^ b.5,
                    a.6.min(b.6),
                    a.7 * b.7,
                )
            },
        );
    lo_out[v] = mn;
    hi_out[v] = mx;
    bits[v] = or;
    any_neg[v] = neg;
    fsum[v] = fs;
    big[v] = bg;
    small[v] = sm;
    prod[v] = pr;
}

/// A tuple made in the prologue and read after the fold (it travels in
/// the context), destructured with a wildcard, and an `if` of tuples.
#[nested_reduce]
pub fn carried(v: usize, ptr: &[u32], w: &[f32], scale: f32, y: &mut [f32], pick: &mut [u32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let pair: (f32, u32) = if v % 2 == 0 { (scale, 1) } else { (-scale, 2) };
    let best = (lo..hi)
        .map(|e| (w[e], 1u32))
        .fold((0.0f32, 0u32), |a, b| (a.0.max(b.0), a.1 + b.1));
    let (top, _) = best;
    y[v] = top * pair.0;
    pick[v] = pair.1 + best.1;
}

/// The argmin the plain way: `(weight, edge)` per vertex.
pub fn lightest_reference(ptr: &[u32], w: &[f32]) -> (Vec<f32>, Vec<u32>) {
    let n = ptr.len() - 1;
    let mut bw = vec![f32::INFINITY; n];
    let mut be = vec![u32::MAX; n];
    for v in 0..n {
        for e in ptr[v] as usize..ptr[v + 1] as usize {
            if w[e] < bw[v] || (w[e] == bw[v] && (e as u32) < be[v]) {
                bw[v] = w[e];
                be[v] = e as u32;
            }
        }
    }
    (bw, be)
}

/// Weights with many ties (a quarter of the values), so the tie-break
/// decides.
pub fn tied_weights(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919) % 4) as f32 * 0.5).collect()
}

/// A gather with two sums (`Σ a·x` and `Σ a`), throttled: its fold
/// commutes element by element.
#[nested_reduce]
#[throttled]
pub fn gather_pair(
    row: usize,
    ptr: &[u32],
    col: &[u32],
    val: &[f32],
    x: &[f32],
    y: &mut [f32],
    s: &mut [f32],
) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let (ax, a) = (lo..hi)
        .map(|k| (val[k] * x[col[k] as usize], val[k]))
        .fold((0.0, 0.0), |p, q| (p.0 + q.0, p.1 + q.1));
    y[row] = ax;
    s[row] = a;
}

/// The nearest neighbour through a gather, `argmin (x[col] + val)` with
/// ties to the lowest column, throttled: the tie-break does not commute
/// syntactically, so only order-keeping schedules fold it.
#[nested_reduce]
#[throttled]
pub fn nearest(
    row: usize,
    ptr: &[u32],
    col: &[u32],
    val: &[f32],
    x: &[f32],
    d: &mut [f32],
    at: &mut [u32],
) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    let (best, arg) = (lo..hi)
        .map(|k| (x[col[k] as usize] + val[k], col[k]))
        .fold((f32::INFINITY, u32::MAX), |a, b| {
            if b.0 < a.0 || (b.0 == a.0 && b.1 < a.1) {
                b
            } else {
                a
            }
        });
    d[row] = best;
    at[row] = arg;
}

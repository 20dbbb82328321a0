//! Kernels and inputs shared by the macro test suites (CPU twin and GPU).
#![allow(dead_code)]

use warpfit::prelude::*;

/// y = A·x over (+, ×).
#[nested_reduce]
#[throttled]
pub fn spmv(row: usize, row_ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0.0, |a, b| a + b);
}

/// Bellman-Ford step over (min, +).
#[nested_reduce]
#[throttled(policy = cf, cache = "4KiB", partitioner = columns)]
pub fn relax(v: usize, ptr: &[u32], src: &[u32], w: &[f32], dist: &[f32], next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi)
        .map(|e| dist[src[e] as usize] + w[e])
        .fold(dist[v], f32::min);
}

/// A Bellman-Ford step anchored at vertex 0's distance: `dist` read at a
/// constant index beside its gathers, which no renumbering keeps, so a
/// remapped plan cannot run it.
#[nested_reduce]
#[throttled(policy = cf, cache = "4KiB", partitioner = columns)]
pub fn relax_anchored(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    w: &[f32],
    dist: &[f32],
    next: &mut [f32],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi)
        .map(|e| dist[src[e] as usize] + w[e])
        .fold(dist[0], f32::min);
}

/// PageRank pull step.
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
pub fn pagerank(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    rank: &[f32],
    inv_deg: &[f32],
    base: f32,
    damping: f32,
    next: &mut [f32],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = base
        + damping
            * (lo..hi)
                .map(|e| rank[src[e] as usize] * inv_deg[src[e] as usize])
                .fold(0.0, |a, b| a + b);
}

/// BFS step: an unreached vertex with an in-neighbour at level `cur` gets `cur + 1`.
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
pub fn bfs_step(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    level: &[i32],
    cur: i32,
    next: &mut [i32],
    changed: &mut [u32],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let hits = (lo..hi)
        .map(|e| {
            if level[src[e] as usize] == cur {
                1u32
            } else {
                0
            }
        })
        .fold(0, |a, b| a + b);
    if level[v] < 0 && hits > 0 {
        next[v] = cur + 1;
        changed[v] = 1;
    } else if level[v] < 0 {
        next[v] = -1;
        changed[v] = 0;
    } else {
        next[v] = level[v];
        changed[v] = 0;
    }
}

/// Bottom-up BFS's question: does `v` have an in-neighbour on level `cur`?
/// `(lo..hi).any(..)`, which stops at the first one.
#[nested_reduce]
pub fn has_parent(v: usize, ptr: &[u32], src: &[u32], level: &[i32], cur: i32, found: &mut [u8]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let hit = (lo..hi).any(|e| level[src[e] as usize] == cur);
    found[v] = if hit { 1 } else { 0 };
}

/// Whether every in-neighbour of `v` is reached: `(lo..hi).all(..)`, which
/// stops at the first unreached one; vacuously true for no in-edges.
#[nested_reduce]
pub fn all_reached(v: usize, ptr: &[u32], src: &[u32], level: &[i32], done: &mut [bool]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    done[v] = (lo..hi).all(|e| level[src[e] as usize] >= 0);
}

/// ⊕ of the (max, +) semiring.
#[device_fn]
pub fn max_plus(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// One step of longest paths over (max, +).
#[nested_reduce]
pub fn longest(v: usize, ptr: &[u32], src: &[u32], w: &[f32], dist: &[f32], next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi)
        .map(|e| dist[src[e] as usize] + w[e])
        .fold(f32::NEG_INFINITY, max_plus);
}

/// `a + b`, for calls with an unsuffixed literal argument.
#[device_fn]
pub fn add1(a: f32, b: f32) -> f32 {
    a + b
}

/// The larger of two values (`f32::max` without the NaN rule).
#[device_fn]
pub fn larger(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// `a` scaled by a signed integer factor.
#[device_fn]
pub fn scaled(a: i64, by: i64) -> i64 {
    a * by
}

/// Unsuffixed literal arguments take their device function parameter's
/// type (`1.0`, `0.5` and `-0.25` as `f32`, `-3` as `i64`), and the output
/// is written through a plain copy of the task index.
#[nested_reduce]
pub fn literal_args(row: usize, row_ptr: &[u32], val: &[f32], y: &mut [f32], z: &mut [i64]) {
    let r = row;
    let lo = row_ptr[r] as usize;
    let hi = row_ptr[row + 1] as usize;
    let s = (lo..hi)
        .map(|k| {
            let shifted: f32 = add1(val[k], 1.0);
            larger(shifted, 0.5)
        })
        .fold(0.0f32, |a, b| a + b);
    let owner = r;
    y[owner] = add1(s, -0.25);
    z[r] = scaled((hi - lo) as i64, -3);
}

/// The reference of [`literal_args`].
pub fn literal_args_reference(row_ptr: &[u32], val: &[f32]) -> (Vec<f32>, Vec<i64>) {
    row_ptr
        .windows(2)
        .map(|w| {
            let (lo, hi) = (w[0] as usize, w[1] as usize);
            let s = val[lo..hi]
                .iter()
                .map(|&v| larger(v + 1.0, 0.5))
                .fold(0.0f32, |a, b| a + b);
            (s - 0.25, (hi - lo) as i64 * -3)
        })
        .unzip()
}

/// Row sums: no gather, so no work graph.
#[nested_reduce]
pub fn row_sum(row: usize, row_ptr: &[u32], val: &[f32], y: &mut [f32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| val[k]).fold(0.0, |a, b| a + b);
}

/// `a` unless it is the no-match marker `u32::MAX`, else `b`: associative,
/// not commutative.
#[device_fn]
pub fn first_of(a: u32, b: u32) -> u32 {
    if a != u32::MAX {
        a
    } else {
        b
    }
}

/// The first fine task of a row whose value is odd (`u32::MAX` if none): a
/// fold whose result depends on fine-task order, so a decomposition that
/// keeps that order (Thread, CTE) must give the twin's bits, and a lane that
/// maps none of a row's fine tasks (CTE's idle leading lanes) must add
/// nothing to its fold.
#[nested_reduce]
pub fn first_odd(row: usize, row_ptr: &[u32], val: &[u32], y: &mut [u32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| if val[k] % 2 == 1 { k as u32 } else { u32::MAX })
        .fold(u32::MAX, first_of);
}

/// Rows laid out so that the first non-empty row of the `w`-th group of 32
/// rows (a CTE warp's items) starts at fine task `w` modulo 32: each group's
/// last row pads to it. Every fourth group begins with an empty row; the
/// other lengths cycle through 0..=70. Values are odd at about one fine
/// task in five.
pub fn offset_rows(n: usize) -> (Vec<u32>, Vec<u32>) {
    let ptr = offset_ptr(n, |r| (r * 37 % 71) as u32);
    let nnz = ptr[n] as usize;
    let val = (0..nnz as u32)
        .map(|k| k.wrapping_mul(2_654_435_761) >> 3)
        .map(|h| if h % 5 == 0 { 2 * h + 1 } else { 2 * h })
        .collect();
    (ptr, val)
}

/// `offset_rows`' layout with long rows: every fifth row has 33 to 300
/// fine tasks, and the first row of every 32nd group (whose first row starts
/// aligned, at 0 modulo 32) has 100, so that many of a warp's rounds lie
/// whole inside one row, the first round included. Values are 1 to 1000
/// (never 0).
pub fn long_offset_rows(n: usize) -> (Vec<u32>, Vec<u32>) {
    let ptr = offset_ptr(n, |r| match r {
        _ if r % 1024 == 0 => 100,
        _ if r % 5 == 2 => 33 + (r * 53 % 268) as u32,
        _ => (r * 37 % 71) as u32,
    });
    let nnz = ptr[n] as usize;
    let val = (0..nnz as u32)
        .map(|k| (k.wrapping_mul(2_654_435_761) >> 7) % 1000 + 1)
        .collect();
    (ptr, val)
}

/// Row pointers of `n` rows of lengths `len(r)`, in groups of 32, except
/// that every fourth group (`w % 4 == 1`) begins with an empty row, and
/// each group ends with a row padded so that the next group's first
/// non-empty row starts at that group's number modulo 32 (`offset_rows`).
fn offset_ptr(n: usize, len: impl Fn(usize) -> u32) -> Vec<u32> {
    let mut ptr = vec![0u32];
    for r in 0..n {
        let group = (r / 32) as u32;
        let len = if r % 32 == 31 {
            let pad = (group + 1 + 32 - ptr[r] % 32) % 32;
            pad + 32 * (group % 3)
        } else if r % 32 == 0 && group % 4 == 1 {
            0
        } else {
            len(r)
        };
        ptr.push(ptr[r] + len);
    }
    ptr
}

/// The least value of each row (`u32::MAX` for an empty row): a commuting
/// fold with no identity among the values, so that a value folded in from
/// outside the row (an idle lane's 0) would show.
#[nested_reduce]
pub fn row_min(row: usize, row_ptr: &[u32], val: &[u32], y: &mut [u32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| val[k]).fold(u32::MAX, u32::min);
}

/// Where each group of 32 rows starts its first non-empty row, modulo 32.
pub fn group_starts(ptr: &[u32]) -> Vec<u32> {
    ptr[..ptr.len() - 1]
        .chunks(32)
        .enumerate()
        .filter_map(|(g, rows)| {
            let first = (0..rows.len()).find(|&i| ptr[32 * g + i + 1] > ptr[32 * g + i])?;
            Some(ptr[32 * g + first] % 32)
        })
        .collect()
}

/// Integer arithmetic that overflows: wraps as in release Rust.
#[nested_reduce]
pub fn wrap_sum(row: usize, row_ptr: &[u32], val: &[i32], shift: u32, y: &mut [i32], z: &mut [u8]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    let s = (lo..hi)
        .map(|k| val[k] * 1_000_000)
        .fold(i32::MAX, |a, b| a + b);
    y[row] = (s << shift) / -1;
    z[row] = (s as u8) * 200 + 100;
}

/// Division by a data value: zero is a fault, `MIN / -1` wraps.
#[nested_reduce]
pub fn quotient(row: usize, row_ptr: &[u32], num: &[i32], den: &[i32], y: &mut [i32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| num[k] / den[k] % 1000)
        .fold(0, |a, b| a + b);
}

/// Integer division inside a device function: a fault, not a panic.
#[device_fn]
pub fn ratio(a: u32, b: u32) -> u32 {
    let q = a / b;
    q.min(100)
}

#[nested_reduce]
pub fn ratios(row: usize, row_ptr: &[u32], a: &[u32], b: &[u32], y: &mut [u32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| ratio(a[k], b[k])).fold(0, |s, t| s + t);
}

/// Expression forms: blocks, `if` values, methods, casts that saturate,
/// compound assignment reading the output, literals typed by context.
#[nested_reduce]
pub fn forms(
    row: usize,
    row_ptr: &[u32],
    val: &[f32],
    scale: f64,
    y: &mut [f32],
    sat: &mut [i32],
    acc: &mut [f64],
) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    let n = (hi - lo) as f32;
    let m = (lo..hi)
        .map(|k| {
            let v = val[k];
            let c = v.clamp(-2.0, 2.0);
            if c.is_nan() {
                0.0
            } else {
                c.abs().sqrt().powi(2)
            }
        })
        .fold(f32::NEG_INFINITY, |a, b| a.max(b));
    y[row] = if n > 0.0 {
        m * 0.5 + n.mul_add(2.0, 1.0)
    } else {
        -1.0
    };
    y[row] += 1.0;
    sat[row] = (m * 1.0e10) as i32;
    acc[row] = (m as f64) * scale + 0.25;
}

/// A u64 accumulator from `usize` fine-task indices, and `k` in the map.
#[nested_reduce]
pub fn index_sum(row: usize, row_ptr: &[u32], y: &mut [u64]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    let base = row as u64 * 1000;
    y[row] = (lo..hi).map(|k| k as u64 + base).fold(0, |a, b| a + b);
}

/// A small graph: 6 vertices, an empty row, a long row to split.
pub fn graph() -> (Vec<u32>, Vec<u32>) {
    let ptr = vec![0u32, 2, 2, 9, 10, 13, 14];
    let src = vec![1u32, 3, 0, 1, 2, 3, 4, 5, 1, 0, 2, 5, 4, 3];
    (ptr, src)
}

/// Exactly representable weights so that every fold order gives the same sum.
pub fn weights(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i % 5) as f32 * 0.5 + 0.25).collect()
}

pub fn task_lists(ptr: &[u32]) -> Vec<TaskList> {
    let mut lists = vec![TaskList::from_ptr(ptr).unwrap()];
    for len in [1, 2, 3] {
        lists.push(TaskList::chunked(ptr, len).unwrap());
    }
    // Segments out of order: split task 2 with its pieces apart.
    let segs = vec![
        Segment::new(2, 6, 9),
        Segment::new(0, 0, 2),
        Segment::new(5, 13, 14),
        Segment::new(2, 2, 4),
        Segment::new(3, 9, 10),
        Segment::new(4, 10, 13),
        Segment::new(1, 2, 2),
        Segment::new(2, 4, 6),
    ];
    lists.push(TaskList::new(segs).unwrap());
    lists
}

/// A deterministic graph of `n` vertices with skewed in-degrees (most short,
/// a few hundreds long) for launches that exercise warp-level decompositions.
pub fn skewed_graph(n: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    let mut ptr = vec![0u32];
    let mut src = Vec::new();
    for _ in 0..n {
        let r = next() % 100;
        let deg = match r {
            0 => 300 + next() % 400,
            1..=9 => 20 + next() % 60,
            _ => next() % 8,
        };
        for _ in 0..deg {
            src.push(next() % n as u32);
        }
        ptr.push(src.len() as u32);
    }
    (ptr, src)
}

/// Values that are multiples of 1/4 up to 2: sums of their products with
/// multiples of 1/2 stay exact in f32 in any order, so results compare exactly.
pub fn quarters(n: usize, seed: u32) -> Vec<f32> {
    (0..n as u32)
        .map(|i| ((i.wrapping_mul(2654435761).wrapping_add(seed) >> 7) % 9) as f32 * 0.25)
        .collect()
}

/// y = a·x + y: a per-task map (a body without a nested pattern), reading
/// its output at the task index.
#[nested_reduce]
#[allow(clippy::assign_op_pattern)]
pub fn axpy(i: usize, a: f32, x: &[f32], y: &mut [f32]) {
    y[i] = a * x[i] + y[i];
}

/// A per-task map with `let`s, a neighbour read (inputs are read anywhere),
/// an `if` statement, two outputs, compound assignment and a device call.
#[nested_reduce]
pub fn diff_clamp(i: usize, x: &[i32], floor: i32, d: &mut [i32], below: &mut [u8]) {
    let prev = if i > 0 { x[i - 1] } else { 0 };
    let diff = x[i] - prev;
    if diff < floor {
        d[i] = floor;
        below[i] = 1;
    } else {
        let twice: i64 = scaled(diff as i64, 2);
        d[i] = twice as i32;
        d[i] -= diff;
        below[i] = 0;
    }
}

/// The reference of [`diff_clamp`].
pub fn diff_clamp_reference(x: &[i32], floor: i32) -> (Vec<i32>, Vec<u8>) {
    (0..x.len())
        .map(|i| {
            let diff = x[i].wrapping_sub(if i > 0 { x[i - 1] } else { 0 });
            if diff < floor {
                (floor, 1)
            } else {
                (diff, 0)
            }
        })
        .unzip()
}

/// A global reduction: one task folding the whole vectors (launched split
/// over the device with `warpfit::split_one_task`).
#[nested_reduce]
pub fn dot(t: usize, n: u32, x: &[f64], y: &[f64], out: &mut [f64]) {
    out[t] = (0..n as usize).map(|i| x[i] * y[i]).fold(0.0, |a, b| a + b);
}

/// The Euclidean norm: a reduction whose epilogue runs once, after the merge.
#[nested_reduce]
pub fn norm(t: usize, n: u32, x: &[f32], out: &mut [f32]) {
    let s = (0..n as usize)
        .map(|i| x[i] * x[i])
        .fold(0.0f32, |a, b| a + b);
    out[t] = s.sqrt();
}

/// An integer sum (wrapping, as release Rust): exact on every backend and
/// for every split.
#[nested_reduce]
pub fn isum(t: usize, n: u32, x: &[i64], out: &mut [i64]) {
    out[t] = (0..n as usize).map(|i| x[i]).fold(0, |a, b| a + b);
}

/// y = A·x over wrapping u32 (+, ×): exact under any fold order.
#[nested_reduce]
#[throttled(partitioner = kd)]
pub fn spmv_u32(row: usize, row_ptr: &[u32], col: &[u32], val: &[u32], x: &[u32], y: &mut [u32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0u32, |a, b| a + b);
}

/// `y += A x` over u32: the output is read as well as written, so a
/// remapped launch must bring its old values into the plan's order.
#[nested_reduce]
#[throttled(partitioner = kd)]
pub fn spmv_add_u32(
    row: usize,
    row_ptr: &[u32],
    col: &[u32],
    val: &[u32],
    x: &[u32],
    y: &mut [u32],
) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] += (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0u32, |a, b| a + b);
}

/// `A x` stored only where it is nonzero: the other rows keep their old
/// values, so a remapped launch must bring those into the plan's order.
#[nested_reduce]
#[throttled(partitioner = kd)]
pub fn spmv_nonzero_u32(
    row: usize,
    row_ptr: &[u32],
    col: &[u32],
    val: &[u32],
    x: &[u32],
    y: &mut [u32],
) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    let s = (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0u32, |a, b| a + b);
    if s != 0 {
        y[row] = s;
    }
}

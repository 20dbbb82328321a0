//! The kernels of the built-in apps, in the kernel language.

use crate::prelude::*;

/// `y = A·x` over the (+, ×) semiring; one coarse task per row.
#[nested_reduce]
pub fn spmv(row: usize, row_ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0.0, |a, b| a + b);
}

/// One pull step of PageRank: `next[v] = base + damping · Σ contrib[u]` over
/// the in-neighbours `u` of `v`, where `contrib[u] = rank[u] / outdeg[u]`.
#[nested_reduce]
pub fn pagerank_pull(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    contrib: &[f32],
    base: f32,
    damping: f32,
    next: &mut [f32],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let sum = (lo..hi)
        .map(|e| contrib[src[e] as usize])
        .fold(0.0, |a, b| a + b);
    next[v] = base + damping * sum;
}

/// One Bellman-Ford step over the (min, +) semiring: the same shape as SpMV,
/// other operators.
#[nested_reduce]
pub fn relax(v: usize, ptr: &[u32], src: &[u32], w: &[f32], dist: &[f32], next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi)
        .map(|e| dist[src[e] as usize] + w[e])
        .fold(dist[v], f32::min);
}

/// One level-synchronous BFS step: an unvisited vertex with an in-neighbour
/// on level `depth` joins level `depth + 1`.
#[nested_reduce]
pub fn bfs_step(v: usize, ptr: &[u32], src: &[u32], level: &[i32], depth: i32, next: &mut [i32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let reached = (lo..hi)
        .map(|e| level[src[e] as usize] == depth)
        .fold(false, |a, b| a || b);
    if level[v] < 0 && reached {
        next[v] = depth + 1;
    } else {
        next[v] = level[v];
    }
}

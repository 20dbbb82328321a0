//! `#[nested_reduce]` kernels run on the CPU twin, against plain loops and
//! against the plain function each macro keeps.

use warpfit::prelude::*;

/// y = A·x over (+, ×).
#[nested_reduce]
pub fn spmv(row: usize, row_ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi).map(|k| val[k] * x[col[k] as usize]).fold(0.0, |a, b| a + b);
}

/// Bellman-Ford step over (min, +).
#[nested_reduce]
pub fn relax(v: usize, ptr: &[u32], src: &[u32], w: &[f32], dist: &[f32], next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi).map(|e| dist[src[e] as usize] + w[e]).fold(dist[v], f32::min);
}

/// PageRank pull step.
#[nested_reduce]
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
        + damping * (lo..hi).map(|e| rank[src[e] as usize] * inv_deg[src[e] as usize]).fold(0.0, |a, b| a + b);
}

/// BFS step: a vertex not yet reached whose in-neighbour is in the frontier level.
#[nested_reduce]
pub fn bfs_step(v: usize, ptr: &[u32], src: &[u32], level: &[i32], cur: i32, next: &mut [i32], changed: &mut [u32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let hits = (lo..hi).map(|e| if level[src[e] as usize] == cur { 1u32 } else { 0 }).fold(0, |a, b| a + b);
    if level[v] < 0 && hits > 0 {
        next[v] = cur + 1;
        changed[v] = 1;
    } else {
        next[v] = level[v];
        changed[v] = 0;
    }
}

/// ⊕ of the (max, +) semiring.
#[device_fn]
pub fn max_plus(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// One step of longest paths over (max, +).
#[nested_reduce]
pub fn longest(v: usize, ptr: &[u32], src: &[u32], w: &[f32], dist: &[f32], next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi).map(|e| dist[src[e] as usize] + w[e]).fold(f32::NEG_INFINITY, max_plus);
}

#[test]
fn smoke() {
    let row_ptr = [0u32, 2, 3, 3];
    let col = [0u32, 2, 1];
    let val = [1.0f32, 2.0, 3.0];
    let x = [1.0f32, 10.0, 100.0];
    let mut y = [0.0f32; 3];
    spmv::launch(&Device::cpu(), 3, &row_ptr, &col, &val, &x, &mut y).unwrap();
    assert_eq!(y, [201.0, 30.0, 0.0]);
    println!("{}", spmv::CUDA_SOURCE);
}

//! The kernels of the built-in apps, in the kernel language.

use crate::prelude::*;

/// `y = A·x` over the (+, ×) semiring; one coarse task per row, in f32
/// (`spmv::f32`, the CLI's and the benchmarks') and f64 (`spmv::f64`, CG's).
/// Throttled (`spmv::f32::throttle`): column blocks are the partitioner
/// whose carried launches measured fastest (BENCHMARKS.md, "Cache-fit SpMV:
/// carried launches").
#[nested_reduce(T = [f32, f64])]
#[throttled(partitioner = columns)]
pub fn spmv<T>(row: usize, row_ptr: &[u32], col: &[u32], val: &[T], x: &[T], y: &mut [T]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0.0, |a, b| a + b);
}

/// `y += A·x`: [`fn@spmv`] adding onto `y`, for a matrix run as slices (the
/// cache-fit partitions of `warpfit bench spmv`'s `cte:cf-slices`).
#[nested_reduce]
pub fn spmv_add(row: usize, row_ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] += (lo..hi)
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

// ---------------------------------------------------------------------------
// Conjugate gradient, in f32 and f64: the solver picks each kernel's
// instance through `CgScalar`. The solver's scalars stay on the device:
// `dots` holds the reductions of the current iteration (slot 0: pᵀq, 1: rᵀz,
// 2: rᵀr) and `rho` the rᵀz of the previous one, and the updates read their
// coefficients from there, so that an iteration downloads nothing but `dots`.

/// `out[t] = Σ x[i]·y[i]` over `0..n`: a whole-array dot product, one task
/// whose fold covers the arrays, launched split over the device
/// (`split_one_task`) with `t` the slot of `out` it fills.
#[nested_reduce(T = [f32, f64])]
pub fn dot<T>(t: usize, n: u32, x: &[T], y: &[T], out: &mut [T]) {
    out[t] = (0..n as usize).map(|i| x[i] * y[i]).fold(0.0, |a, b| a + b);
}

/// CG's update of the iterate and the residual: `x += α·p`, `r −= α·q` with
/// `α = prev[1] / cur[0]` (the previous iteration's `rᵀz` over this one's
/// `pᵀAp`; CG's scalars alternate between two 3-slot arrays, `pᵀAp`, `rᵀz`,
/// `rᵀr`). A no-op once the previous iteration's `rᵀr` (`prev[1]`) is at
/// most `stop` (`(tol·‖b‖)²`), or when `pᵀAp` is not positive: the
/// iterations a driver enqueues past convergence, or past a breakdown it is
/// about to report, leave `x` as it was.
#[nested_reduce(T = [f32, f64])]
#[allow(clippy::too_many_arguments)]
pub fn cg_step<T>(
    i: usize,
    prev: &[T],
    cur: &[T],
    stop: T,
    p: &[T],
    q: &[T],
    x: &mut [T],
    r: &mut [T],
) {
    if prev[1] > stop && cur[0] > 0.0 {
        let alpha = prev[1] / cur[0];
        x[i] += alpha * p[i];
        r[i] -= alpha * q[i];
    }
}

/// [`fn@cg_step`] with the Jacobi preconditioner applied to the new
/// residual: `z = r / diag(A)` (`inv_diag` holds `1 / a(i, i)`); `rᵀr` is
/// `prev[2]`.
#[nested_reduce(T = [f32, f64])]
#[allow(clippy::too_many_arguments)]
pub fn cg_step_jacobi<T>(
    i: usize,
    prev: &[T],
    cur: &[T],
    stop: T,
    inv_diag: &[T],
    p: &[T],
    q: &[T],
    x: &mut [T],
    r: &mut [T],
    z: &mut [T],
) {
    if prev[2] > stop && cur[0] > 0.0 {
        let alpha = prev[1] / cur[0];
        let r_new = r[i] - alpha * q[i];
        x[i] += alpha * p[i];
        r[i] = r_new;
        z[i] = inv_diag[i] * r_new;
    }
}

/// CG's new search direction: `p = z + β·p` with `β = cur[1] / prev[1]`
/// (this iteration's `rᵀz` over the previous one's).
#[nested_reduce(T = [f32, f64])]
pub fn cg_direction<T>(i: usize, prev: &[T], cur: &[T], z: &[T], p: &mut [T]) {
    let beta = cur[1] / prev[1];
    p[i] = z[i] + beta * p[i];
}

/// Publishes an iteration's three scalars where the host reads them: tasks
/// `base..base + 3` copy `cur` into `hist[base..]`, a slot of a host-mapped
/// array (launched over a task list of those three tasks).
#[nested_reduce(T = [f32, f64])]
pub fn cg_publish<T>(t: usize, base: u32, cur: &[T], hist: &mut [T]) {
    hist[t] = cur[t - base as usize];
}

// ---------------------------------------------------------------------------
// Renumbering arrays already on the device (CG's level order).

/// `out[i] = src[perm[i]]`: a vector into a renumbering (`perm[new] = old`).
#[nested_reduce(T = [f32, f64, u32, i32])]
pub fn permute<T>(i: usize, perm: &[u32], src: &[T], out: &mut [T]) {
    out[i] = src[perm[i] as usize];
}

/// `out[i] = src[i]`.
#[nested_reduce(T = [f32, f64])]
pub fn copy<T>(i: usize, src: &[T], out: &mut [T]) {
    out[i] = src[i];
}

// ---------------------------------------------------------------------------
// Graph apps on device-resident arrays.

/// PageRank's per-vertex share: `contrib[u] = rank[u] / outdeg[u]`, 0 for a
/// dangling vertex (no out-edge; its rank is spread by [`fn@dangling_rank`]).
#[nested_reduce]
pub fn pagerank_contrib(u: usize, rank: &[f32], out_degree: &[u32], contrib: &mut [f32]) {
    if out_degree[u] == 0 {
        contrib[u] = 0.0;
    } else {
        contrib[u] = rank[u] / out_degree[u] as f32;
    }
}

/// The rank held by dangling vertices, summed in f64 over `0..n`: a
/// whole-array reduction (one task `t`, launched split over the device).
#[nested_reduce]
pub fn dangling_rank(t: usize, n: u32, rank: &[f32], out_degree: &[u32], out: &mut [f64]) {
    out[t] = (0..n as usize)
        .map(|u| {
            if out_degree[u] == 0 {
                rank[u] as f64
            } else {
                0.0
            }
        })
        .fold(0.0, |a, b| a + b);
}

/// [`fn@pagerank_pull`] with the teleport term computed on the device from the
/// dangling rank `dangling[0]`: `base = (1 − d)/n + d · dangling/n`, in f64
/// and rounded to f32, the host driver's formula.
#[nested_reduce]
#[throttled(partitioner = columns)]
#[allow(clippy::too_many_arguments)]
pub fn pagerank_pull_resident(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    contrib: &[f32],
    dangling: &[f64],
    damping: f32,
    n: f64,
    next: &mut [f32],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let sum = (lo..hi)
        .map(|e| contrib[src[e] as usize])
        .fold(0.0, |a, b| a + b);
    // The teleport term after the fold: a throttled kernel's prologue reads
    // only its range array (the plan is made before any launch).
    let d = damping as f64;
    let base = ((1.0 - d) / n + d * dangling[0] / n) as f32;
    next[v] = base + damping * sum;
}

/// `next[v] += damping · Σ contrib[u]` over a further block of `v`'s
/// in-edges: [`fn@pagerank_pull_resident`]'s sum continued block by block,
/// for a device group whose halo blocks are pulled after its owned block
/// ([`crate::apps::pagerank_group_overlapped`]).
#[nested_reduce]
pub fn pagerank_pull_add(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    contrib: &[f32],
    damping: f32,
    next: &mut [f32],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let sum = (lo..hi)
        .map(|e| contrib[src[e] as usize])
        .fold(0.0, |a, b| a + b);
    next[v] += damping * sum;
}

/// How many of the first `n` entries differ between two arrays (one task
/// `t`, launched split over the device): the fixed-point test of sssp (f32
/// distances), bfs (i32 levels) and cc (u32 labels).
#[nested_reduce(T = [f32, i32, u32])]
pub fn count_changed<T>(t: usize, n: u32, old: &[T], new: &[T], out: &mut [u32]) {
    out[t] = (0..n as usize)
        .map(|i| if old[i] != new[i] { 1u32 } else { 0u32 })
        .fold(0, |a, b| a + b);
}

/// One level-synchronous BFS step with no scalar argument, so that one
/// prepared launch serves every step: an unvisited vertex takes one more than
/// the highest level among its in-neighbours, when one is reached. At step
/// `d` that level is exactly `d` (a vertex with a neighbour on an earlier
/// level was reached earlier), so this equals [`fn@bfs_step`].
#[nested_reduce]
pub fn bfs_pull(v: usize, ptr: &[u32], src: &[u32], level: &[i32], next: &mut [i32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let highest = (lo..hi).map(|e| level[src[e] as usize]).fold(-1, i32::max);
    if level[v] < 0 && highest >= 0 {
        next[v] = highest + 1;
    } else {
        next[v] = level[v];
    }
}

/// One label-propagation step of connected components: `next[v]` is the
/// least label among `v`'s and its neighbours' (`nbr` lists both edge
/// directions), a (min, ·) pull like [`fn@relax`].
#[nested_reduce]
pub fn cc_pull_min(v: usize, ptr: &[u32], nbr: &[u32], label: &[u32], next: &mut [u32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi)
        .map(|e| label[nbr[e] as usize])
        .fold(label[v], u32::min);
}

/// `Y = A·X` for a dense row-major `X` of `k` columns (SpMM): element `(row,
/// j)` of the row-major `Y` (`k` columns) folds row `row` of `A` against
/// column `j` of `X`. A 2-D kernel (`columns = k`): a launch takes the row
/// count, and on the GPU a warp's lanes take consecutive columns of a row.
/// Throttled (`spmm::f32::throttle`), a cache-fit partition holds whole rows
/// of `X`.
#[nested_reduce(T = [f32, f64], columns = k)]
#[throttled]
#[allow(clippy::too_many_arguments)]
pub fn spmm<T>(
    row: usize,
    j: usize,
    row_ptr: &[u32],
    col: &[u32],
    val: &[T],
    x: &[T],
    k: u32,
    y: &mut [T],
) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row * k as usize + j] = (lo..hi)
        .map(|e| val[e] * x[col[e] as usize * k as usize + j])
        .fold(0.0, |a, b| a + b);
}

/// One layer of a sparse neural network over a batch: `Y = relu(W·X + b)`
/// with `X` row-major (`k` columns, one per batch item), `b` a bias per
/// output row, and the ReLU applied only when `relu` (a network's last
/// layer goes without). The bias and the ReLU are the epilogue: one launch
/// per layer.
#[nested_reduce(columns = k)]
#[allow(clippy::too_many_arguments)]
pub fn sparse_layer(
    row: usize,
    j: usize,
    row_ptr: &[u32],
    col: &[u32],
    val: &[f32],
    bias: &[f32],
    x: &[f32],
    k: u32,
    relu: bool,
    y: &mut [f32],
) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    let sum = (lo..hi)
        .map(|e| val[e] * x[col[e] as usize * k as usize + j])
        .fold(0.0, |a, c| a + c);
    let v = sum + bias[row];
    y[row * k as usize + j] = if relu { v.max(0.0) } else { v };
}

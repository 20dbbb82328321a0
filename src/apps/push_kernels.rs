//! The per-element steps of the worklist-driven apps, in the kernel
//! language's push form: a task's prologue of `let`s, one
//! `(lo..hi).for_each(..)` scatter (or `.map(..).fold(..)` gather) over its
//! edges, shared arrays written only through the atomic intrinsics, and
//! `push(out, item)` for the elements activated. `#[nested_reduce]` keeps
//! each function callable as it is, which the CPU round backend does once
//! per item (a frontier round) or per vertex (a topology round), and
//! generates its CUDA kernel and launch API (a worklist frontier as the task
//! source) for a device backend.
//!
//! Every step is monotone: a distance, level or label only decreases (a
//! level is only set once), so any order of the updates, concurrent or not,
//! reaches the same fixed point, and a step run past it changes nothing.

use crate::prelude::*;

/// SSSP, data-driven: relaxes the out-edges of `v` (`dst`, weights `w`)
/// with `atomic_min` and pushes every vertex whose distance it lowered.
#[nested_reduce]
pub fn sssp_push(
    v: usize,
    ptr: &[u32],
    dst: &[u32],
    w: &[f32],
    dist: &[Atomic<f32>],
    out: &Worklist,
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let dv = dist[v].load();
    (lo..hi).for_each(|e| {
        let u = dst[e] as usize;
        let nd = dv + w[e];
        if nd < atomic_min(&dist[u], nd) {
            push(out, u as u32);
        }
    });
}

/// SSSP, topology-driven: `v` pulls the least `dist[u] + w` over its
/// in-edges (`src`) in place, and pushes itself when that lowered its
/// distance. Only `v` writes `dist[v]` in such a round, so the `atomic_min`
/// never retries.
#[nested_reduce]
pub fn sssp_pull(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    w: &[f32],
    dist: &[Atomic<f32>],
    out: &Worklist,
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let best = (lo..hi)
        .map(|e| dist[src[e] as usize].load() + w[e])
        .fold(dist[v].load(), f32::min);
    if best < atomic_min(&dist[v], best) {
        push(out, v as u32);
    }
}

/// BFS, top-down (data-driven): the unvisited out-neighbours of a frontier
/// vertex `v` join the next level, each claimed once by a compare-and-swap.
#[nested_reduce]
pub fn bfs_top_down(v: usize, ptr: &[u32], dst: &[u32], level: &[Atomic<i32>], out: &Worklist) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let next = level[v].load() + 1;
    (lo..hi).for_each(|e| {
        let u = dst[e] as usize;
        if level[u].load() < 0 && atomic_cas(&level[u], -1, next) == -1 {
            push(out, u as u32);
        }
    });
}

/// BFS, bottom-up (topology-driven): an unvisited `v` with an in-neighbour
/// (`src`) on level `depth - 1` joins level `depth`, the round's number
/// `round[0]`. The search stops at the first such parent (`any`: where
/// direction optimisation gets its gain, since most vertices of a large
/// level find one among their first in-edges); a visited vertex searches
/// an empty range. The round comes
/// as a one-element array, not a scalar, so that a device backend's one
/// prepared launch serves every round (the backend sets the element on the
/// device: the `round` of what [`CudaRounds::frontier`](crate::CudaRounds::frontier)'s
/// closure gets).
#[nested_reduce]
pub fn bfs_bottom_up(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    level: &[Atomic<i32>],
    round: &[u32],
    out: &Worklist,
) {
    let depth = round[0] as i32;
    let lo = ptr[v] as usize;
    let hi = if level[v].load() < 0 {
        ptr[v + 1] as usize
    } else {
        lo
    };
    let found = (lo..hi).any(|e| level[src[e] as usize].load() == depth - 1);
    if found && atomic_cas(&level[v], -1, depth) == -1 {
        push(out, v as u32);
    }
}

/// Connected components, data-driven: `v` offers its label to its
/// neighbours (edge directions ignored: `nbr` lists both) and pushes those
/// it lowered.
#[nested_reduce]
pub fn cc_push(v: usize, ptr: &[u32], nbr: &[u32], label: &[Atomic<u32>], out: &Worklist) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let lv = label[v].load();
    (lo..hi).for_each(|e| {
        let u = nbr[e] as usize;
        if lv < atomic_min(&label[u], lv) {
            push(out, u as u32);
        }
    });
}

/// Connected components, topology-driven: `v` takes the least label among
/// itself and its neighbours, in place, and pushes itself when it changed.
#[nested_reduce]
pub fn cc_pull(v: usize, ptr: &[u32], nbr: &[u32], label: &[Atomic<u32>], out: &Worklist) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let least = (lo..hi)
        .map(|e| label[nbr[e] as usize].load())
        .fold(label[v].load(), u32::min);
    if least < atomic_min(&label[v], least) {
        push(out, v as u32);
    }
}

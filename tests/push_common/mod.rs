//! Push kernels (`for_each` with atomics and worklists), their sequential
//! references and inputs, shared by the CPU suite (tests/macro_push.rs) and
//! the GPU suite (tests/macro_push_gpu.rs).
#![allow(dead_code)]

use std::collections::BTreeSet;
/// SSSP relaxation and connected components' label offer: the apps' own
/// push kernels.
pub use warpfit::apps::push_kernels::{cc_push, sssp_push};
use warpfit::prelude::*;

/// Top-down BFS: an unvisited neighbour (level -1) takes the next level by
/// a compare-and-swap; the one task whose swap succeeds pushes it.
#[nested_reduce]
pub fn bfs_push(v: usize, ptr: &[u32], dst: &[u32], level: &[Atomic<i32>], out: &Worklist) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let next = level[v].load() + 1;
    (lo..hi).for_each(|e| {
        let u = dst[e] as usize;
        if atomic_cas(&level[u], -1, next) == -1 {
            push(out, u as u32);
        }
    });
}

/// Top-down BFS with `atomic_min` on `u32` levels (`u32::MAX`: unvisited).
#[nested_reduce]
pub fn bfs_min(v: usize, ptr: &[u32], dst: &[u32], level: &[Atomic<u32>], out: &Worklist) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let next = level[v].load() + 1;
    (lo..hi).for_each(|e| {
        let u = dst[e] as usize;
        if next < atomic_min(&level[u], next) {
            push(out, u as u32);
        }
    });
}

/// A histogram of the edges' keys, `bins` buckets: the expansion with
/// `atomic_add`, no worklist.
#[nested_reduce]
pub fn histogram(v: usize, ptr: &[u32], key: &[u32], bins: u32, counts: &[Atomic<u64>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        atomic_add(&counts[(key[e] % bins) as usize], 1);
    });
}

/// Addition that stops at `u32::MAX`.
#[device_fn]
pub fn sat_add(a: u32, b: u32) -> u32 {
    if a > u32::MAX - b {
        u32::MAX
    } else {
        a + b
    }
}

/// Every edge adds its amount to its target, saturating: a `#[device_fn]`
/// operator applied by a compare-and-swap loop.
#[nested_reduce]
pub fn sat_scatter(v: usize, ptr: &[u32], dst: &[u32], amount: &[u32], total: &[Atomic<u32>]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        atomic_apply(&total[dst[e] as usize], amount[e], sat_add);
    });
}

/// The wider of two capacities.
#[device_fn]
pub fn wider(a: f32, b: f32) -> f32 {
    a.max(b)
}

/// Widest path (maximum bottleneck) push: a neighbour's capacity is the
/// max over in-edges of min(capacity of the source, edge width), through a
/// `#[device_fn]` operator and `atomic_apply`.
#[nested_reduce]
pub fn widest_push(
    v: usize,
    ptr: &[u32],
    dst: &[u32],
    width: &[f32],
    cap: &[Atomic<f32>],
    out: &Worklist,
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let cv = cap[v].load();
    (lo..hi).for_each(|e| {
        let u = dst[e] as usize;
        let c = cv.min(width[e]);
        if c > atomic_apply(&cap[u], c, wider) {
            push(out, u as u32);
        }
    });
}

/// `f64` sums pushed by edges into their targets, and the count of edges
/// per target through `atomic_or`-set bits: float add and integer or.
#[nested_reduce]
pub fn scatter_add(
    v: usize,
    ptr: &[u32],
    dst: &[u32],
    w: &[f64],
    sum: &[Atomic<f64>],
    seen: &[Atomic<u64>],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        let u = dst[e] as usize;
        atomic_add(&sum[u], w[e]);
        atomic_or(&seen[u], 1u64 << (v as u64 % 64));
    });
}

/// A per-task map that pushes: the flagged vertices, the first frontier.
#[nested_reduce]
pub fn seed(v: usize, flags: &[u8], out: &Worklist) {
    if flags[v] != 0 {
        push(out, v as u32);
    }
}

/// A pull step (a fold) whose epilogue pushes the vertices it lowered.
#[nested_reduce]
pub fn relax_changed(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    w: &[f32],
    dist: &[f32],
    next: &mut [f32],
    changed: &Worklist,
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let m = (lo..hi)
        .map(|e| dist[src[e] as usize] + w[e])
        .fold(dist[v], f32::min);
    next[v] = m;
    if m < dist[v] {
        push(changed, v as u32);
    }
}

/// A pull step over in-edges whose fold reads the shared distances and
/// whose epilogue lowers the task's own by `atomic_min` (Gauss-Seidel style:
/// a round sees the updates of the tasks before it) and pushes it.
#[nested_reduce]
pub fn pull_min(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    w: &[f32],
    dist: &[Atomic<f32>],
    changed: &Worklist,
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let m = (lo..hi)
        .map(|e| dist[src[e] as usize].load() + w[e])
        .fold(f32::INFINITY, f32::min);
    if m < atomic_min(&dist[v], m) {
        push(changed, v as u32);
    }
}

/// The graph with every edge reversed (CSR of the in-edges), and the
/// weights in the same order.
pub fn transpose(g: &Graph, w: &[f32]) -> (Graph, Vec<f32>) {
    let n = g.0.len() - 1;
    let mut adj = vec![Vec::new(); n];
    for v in 0..n {
        for e in g.0[v] as usize..g.0[v + 1] as usize {
            adj[g.1[e] as usize].push((v as u32, w[e]));
        }
    }
    let (mut ptr, mut src, mut wt) = (vec![0u32], Vec::new(), Vec::new());
    for a in adj {
        for (s, x) in a {
            src.push(s);
            wt.push(x);
        }
        ptr.push(src.len() as u32);
    }
    ((ptr, src), wt)
}

/// `for_each` with an epilogue: pushes each target reached, then counts
/// the task's edges into its own output.
#[nested_reduce]
pub fn degree_push(v: usize, ptr: &[u32], dst: &[u32], hits: &[Atomic<u32>], deg: &mut [u32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        atomic_add(&hits[dst[e] as usize], 1);
    });
    deg[v] = (hi - lo) as u32;
}

/// Every edge pushes its target: the most push traffic a round can have
/// (what the push variants are measured on).
#[nested_reduce]
pub fn push_all(v: usize, ptr: &[u32], dst: &[u32], out: &Worklist) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        push(out, dst[e]);
    });
}

/// A quarter of the edges (by a hash of their ends) push their target:
/// pushes from some lanes of a warp at a time.
#[nested_reduce]
pub fn push_some(v: usize, ptr: &[u32], dst: &[u32], out: &Worklist) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    (lo..hi).for_each(|e| {
        if (dst[e] ^ v as u32) % 4 == 0 {
            push(out, dst[e]);
        }
    });
}

/// A CSR graph: `(ptr, dst)` with `n + 1` pointers.
pub type Graph = (Vec<u32>, Vec<u32>);

/// A deterministic random directed graph of `n` vertices, out-degrees
/// skewed (a few hubs), from `seed`.
pub fn random_graph(n: usize, seed: u64) -> Graph {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut ptr = vec![0u32];
    let mut dst = Vec::new();
    for v in 0..n {
        let deg = match next() % 16 {
            0 => (next() % (4 * n as u64 + 1)) as usize, // a hub
            k => (k % 5) as usize,
        };
        for _ in 0..deg {
            let u = (next() % n as u64) as usize;
            if u != v || n == 1 {
                dst.push(u as u32);
            }
        }
        ptr.push(dst.len() as u32);
    }
    (ptr, dst)
}

/// The graph with every edge in both directions (CSR).
pub fn symmetrise(g: &Graph) -> Graph {
    let n = g.0.len() - 1;
    let mut adj = vec![Vec::new(); n];
    for v in 0..n {
        for e in g.0[v] as usize..g.0[v + 1] as usize {
            let u = g.1[e] as usize;
            adj[v].push(u as u32);
            adj[u].push(v as u32);
        }
    }
    let mut ptr = vec![0u32];
    let mut dst = Vec::new();
    for a in adj {
        dst.extend(a);
        ptr.push(dst.len() as u32);
    }
    (ptr, dst)
}

/// Edge weights in quarters (exact sums), deterministic.
pub fn edge_weights(m: usize, seed: u64) -> Vec<f32> {
    (0..m)
        .map(|e| ((e as u64 * 2_654_435_761 + seed * 97) % 37) as f32 * 0.25 + 0.25)
        .collect()
}

/// Dijkstra from `source` (the reference for SSSP), sums `d[v] + w` in f32
/// along each path as the kernel does.
#[allow(clippy::needless_range_loop)] // CSR loops read clearest as ranges
pub fn dijkstra(g: &Graph, w: &[f32], source: usize) -> Vec<f32> {
    let n = g.0.len() - 1;
    let mut dist = vec![f32::INFINITY; n];
    let mut done = vec![false; n];
    let mut heap = BTreeSet::new();
    dist[source] = 0.0;
    heap.insert((0u32, source));
    while let Some((_, v)) = heap.pop_first() {
        if done[v] {
            continue;
        }
        done[v] = true;
        for e in g.0[v] as usize..g.0[v + 1] as usize {
            let u = g.1[e] as usize;
            let nd = dist[v] + w[e];
            if nd < dist[u] {
                dist[u] = nd;
                heap.insert((nd.to_bits(), u));
            }
        }
    }
    dist
}

/// BFS levels from `source` (-1 unreached).
pub fn bfs_levels(g: &Graph, source: usize) -> Vec<i32> {
    let n = g.0.len() - 1;
    let mut level = vec![-1i32; n];
    level[source] = 0;
    let mut q = std::collections::VecDeque::from([source]);
    while let Some(v) = q.pop_front() {
        for e in g.0[v] as usize..g.0[v + 1] as usize {
            let u = g.1[e] as usize;
            if level[u] < 0 {
                level[u] = level[v] + 1;
                q.push_back(u);
            }
        }
    }
    level
}

/// Connected components of a symmetric graph by union-find: the smallest
/// vertex id of each vertex's component.
pub fn components(g: &Graph) -> Vec<u32> {
    let n = g.0.len() - 1;
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for v in 0..n {
        for e in g.0[v] as usize..g.0[v + 1] as usize {
            let (a, b) = (find(&mut parent, v), find(&mut parent, g.1[e] as usize));
            if a != b {
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    (0..n).map(|v| find(&mut parent, v) as u32).collect()
}

/// Widest path from `source` by a sequential label-correcting loop.
#[allow(clippy::needless_range_loop)] // CSR loops read clearest as ranges
pub fn widest_reference(g: &Graph, width: &[f32], source: usize) -> Vec<f32> {
    let n = g.0.len() - 1;
    let mut cap = vec![0.0f32; n];
    cap[source] = f32::INFINITY;
    let mut changed = true;
    while changed {
        changed = false;
        for v in 0..n {
            for e in g.0[v] as usize..g.0[v + 1] as usize {
                let u = g.1[e] as usize;
                let c = cap[v].min(width[e]);
                if c > cap[u] {
                    cap[u] = c;
                    changed = true;
                }
            }
        }
    }
    cap
}

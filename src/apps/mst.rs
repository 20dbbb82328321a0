//! Minimum spanning forests by Borůvka's rounds (seed 003's LonestarGPU
//! study), every step a kernel of the language:
//!
//! 1. [`fn@mst_lightest`]: each active vertex folds its edges to other
//!    components into the lightest one, a tuple argmin `(weight, edge)`
//!    whose ties go to the lower edge id, lowers its component's candidate
//!    to it with an `atomic_min` on the pair packed into a `u64`, and pushes
//!    itself to the next round's worklist when it has such an edge;
//! 2. [`fn@mst_hook`]: each component hooks onto the component at the
//!    other end of its lightest edge;
//! 3. [`fn@mst_break`]: two components that chose each other chose the same
//!    edge (the order of edges is strict), so the lower one stays a root;
//!    every other hooked component records its edge in the forest;
//! 4. [`fn@mst_jump`] until no pointer moves: the hooked trees become stars;
//! 5. [`fn@mst_relabel`]: every vertex takes its component's root.
//!
//! Rounds repeat until no component has an edge leaving it. They are
//! data-driven: each round's scan pushes the vertices it found an edge
//! leaving their component from to a worklist on the device (a vertex whose
//! edges all stay inside its component keeps them there: components only
//! merge), and a round scans only that list once it is short (at most
//! [`FRONTIER_SHARE`]⁻¹ of the vertices), every vertex before. Weights are
//! `|a(u, v)|`; an edge is ordered by `(weight, u, v)` with `u < v`, through
//! its *canonical id*, the position of `(u, v)` in row `u`: the same order
//! as [`crate::runtime::reference::kruskal`]'s, so the forest is the one
//! Kruskal's algorithm finds, edge for edge. Weights compare as their bit
//! patterns, which order non-negative floats as their values do.

use crate::prelude::*;
use crate::runtime::error::to_u32;
use crate::runtime::{mem, Csr};
use crate::{
    split_one_task, Device, DeviceVec, DeviceWorklist, Error, LaunchConfig, OneTaskSplit,
    PreparedLaunch, PushVariant, Result,
};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// Step 1: the lightest edge from `v` to another component, folded into
/// its component's candidate `best[comp[v]]` (`weight bits << 32 | edge`);
/// `v` goes to `active`, the next round's vertices, when it has one.
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
pub fn mst_lightest(
    v: usize,
    ptr: &[u32],
    col: &[u32],
    wbits: &[u32],
    canon: &[u32],
    comp: &[u32],
    best: &[Atomic<u64>],
    active: &Worklist,
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let cv = comp[v];
    let (w, e) = (lo..hi)
        .map(|k| {
            if comp[col[k] as usize] != cv {
                (wbits[k], canon[k])
            } else {
                (u32::MAX, u32::MAX)
            }
        })
        .fold((u32::MAX, u32::MAX), |a, b| {
            if b.0 < a.0 || (b.0 == a.0 && b.1 < a.1) {
                b
            } else {
                a
            }
        });
    // Most vertices of a large component lose to a lighter candidate
    // already there: read before contending for the one address.
    let key = ((w as u64) << 32) | e as u64;
    if e != u32::MAX && key < best[cv as usize].load() {
        atomic_min(&best[cv as usize], key);
    }
    if e != u32::MAX {
        push(active, v as u32);
    }
}

/// Step 2: a component root `c` with a candidate edge hooks onto the
/// component at the edge's other end; every other vertex points to itself.
#[nested_reduce]
pub fn mst_hook(
    c: usize,
    comp: &[u32],
    best: &[u64],
    row_of: &[u32],
    col: &[u32],
    hook: &mut [u32],
) {
    let b = best[c];
    hook[c] = if comp[c] == c as u32 && b != u64::MAX {
        let e = (b & 0xffff_ffff) as usize;
        let a = comp[row_of[e] as usize];
        if a == c as u32 {
            comp[col[e] as usize]
        } else {
            a
        }
    } else {
        c as u32
    };
}

/// Step 3: breaks the hooks' 2-cycles (the lower root stays) and records
/// every hooked component's edge at a slot of `forest` (`count[0]` counts
/// the forest's edges).
#[nested_reduce]
pub fn mst_break(
    c: usize,
    hook: &[u32],
    best: &[u64],
    parent: &mut [u32],
    forest: &[Atomic<u32>],
    count: &[Atomic<u32>],
) {
    let h = hook[c];
    let mutual = hook[h as usize] == c as u32;
    let root = h == c as u32 || (mutual && (c as u32) < h);
    parent[c] = if root { c as u32 } else { h };
    if !root {
        let slot = atomic_add(&count[0], 1u32);
        atomic_or(&forest[slot as usize], (best[c] & 0xffff_ffff) as u32);
    }
}

/// Step 4: one pointer jump.
#[nested_reduce]
pub fn mst_jump(v: usize, parent: &[u32], next: &mut [u32]) {
    next[v] = parent[parent[v] as usize];
}

/// Step 5: every vertex takes its component's root; the candidates are
/// cleared for the next round.
#[nested_reduce]
pub fn mst_relabel(v: usize, comp: &[u32], root: &[u32], next: &mut [u32], best: &mut [u64]) {
    next[v] = root[comp[v] as usize];
    best[v] = u64::MAX;
}

/// The number of positions where `old` and `new` differ (one task over
/// `0..n`).
#[nested_reduce]
pub fn mst_moved(t: usize, n: u32, old: &[u32], new: &[u32], out: &mut [u32]) {
    out[t] = (0..n as usize)
        .map(|i| if old[i] != new[i] { 1u32 } else { 0u32 })
        .fold(0, |a, b| a + b);
}

/// A symmetric matrix as Borůvka's rounds read it: rows of neighbours with
/// each edge's weight bits, canonical id and row.
#[derive(Debug, Clone)]
pub struct MstGraph {
    ptr: Vec<u32>,
    col: Vec<u32>,
    weights: Vec<f32>,
    wbits: Vec<u32>,
    canon: Vec<u32>,
    row_of: Vec<u32>,
}

impl MstGraph {
    /// Reads a symmetric matrix (pattern and values) as an undirected
    /// graph whose edge `{u, v}` weighs `|a(u, v)|`; diagonal entries are
    /// ignored.
    ///
    /// # Errors
    /// A matrix that is not square or not symmetric (naming the first
    /// entry whose mirror differs), a NaN entry, or more than `u32::MAX - 1`
    /// entries (edges are addressed by u32).
    pub fn from_matrix(a: &Csr<f32>) -> Result<Self> {
        if let Some((i, j)) = a.first_asymmetry()? {
            return Err(Error::invalid(format!(
                "a minimum spanning forest needs a symmetric matrix: a({}, {}) is not a({}, {}) (1-based)",
                i + 1,
                j + 1,
                j + 1,
                i + 1
            )));
        }
        let nnz = a.nnz();
        if nnz >= u32::MAX as usize {
            return Err(Error::invalid(format!(
                "{nnz} stored entries: a spanning forest addresses edges by u32 (at most {})",
                u32::MAX - 1
            )));
        }
        if let Some(k) = a.values().iter().position(|w| w.is_nan()) {
            return Err(Error::invalid(format!(
                "entry {k} of the matrix is NaN: edge weights must be numbers"
            )));
        }
        // Sorted rows (the mirror search) without repeated entries: of
        // parallel edges the lightest counts.
        let sorted;
        let a = if a.is_sorted() {
            a
        } else {
            let mut b = a.clone();
            b.merge_duplicates(|first, later| {
                if later.abs() < first.abs() {
                    *first = later;
                }
            });
            sorted = b;
            &sorted
        };
        let nnz = a.nnz();
        for what in [
            "the edge weight bits",
            "the canonical edge ids",
            "the edge rows",
        ] {
            mem::check_elems::<u32>(what, nnz)?;
        }
        let ptr = a.row_ptr().to_vec();
        let col = a.col_idx().to_vec();
        let weights: Vec<f32> = a.values().iter().map(|w| w.abs()).collect();
        let wbits = weights.iter().map(|w| w.to_bits()).collect();
        let row_of: Vec<u32> = (0..a.nrows())
            .into_par_iter()
            .flat_map_iter(|u| std::iter::repeat(u as u32).take((ptr[u + 1] - ptr[u]) as usize))
            .collect();
        // The canonical id of (u, v) is its own position when u <= v, else
        // that of its mirror (v, u) in row v, found by binary search (the
        // matrix is symmetric, so the mirror is there).
        let canon = (0..nnz)
            .into_par_iter()
            .map(|e| {
                let (u, v) = (row_of[e], col[e]);
                if u <= v {
                    return e as u32;
                }
                let (lo, hi) = (ptr[v as usize] as usize, ptr[v as usize + 1] as usize);
                let at = col[lo..hi].binary_search(&u).unwrap_or(0);
                (lo + at) as u32
            })
            .collect();
        Ok(MstGraph {
            ptr,
            col,
            weights,
            wbits,
            canon,
            row_of,
        })
    }

    /// Number of vertices.
    pub fn len(&self) -> usize {
        self.ptr.len() - 1
    }

    /// Whether the graph has no vertex.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A round scans its worklist instead of every vertex once the list holds
/// at most `1 / FRONTIER_SHARE` of the vertices. A launch over a worklist
/// cannot split long rows ahead (its items are known only on the device):
/// while hubs are active, the prepared launch over every vertex, long rows
/// split at preparation, is the faster (symmetrised RMAT 22 on an H100:
/// 56 ms with every later round over the list, against 13 ms).
pub const FRONTIER_SHARE: usize = 16;

/// A minimum spanning forest.
#[derive(Debug, Clone)]
pub struct SpanningForest {
    /// The forest's edges `(u, v, weight)`, `u < v`, in increasing `(u, v)`.
    pub edges: Vec<(u32, u32, f32)>,
    /// The sum of the edges' weights, in f64 in the order of `edges`.
    pub weight: f64,
    /// Trees in the forest (connected components, isolated vertices
    /// included).
    pub trees: usize,
    /// Borůvka rounds run (the last one finds no edge).
    pub rounds: usize,
    /// Vertices each round scanned: all of them, or, once they are few
    /// enough ([`FRONTIER_SHARE`]), those with an edge leaving their
    /// component at the round before.
    pub scanned: Vec<usize>,
    /// Vertices with an edge leaving their component at each round's start
    /// (every vertex at the first).
    pub active: Vec<usize>,
    /// Uploading the graph and allocating the vectors.
    pub setup: Duration,
    /// The rounds, from the first launch to the forest downloaded.
    pub solve: Duration,
}

/// The device arrays of one run.
struct Arrays {
    ptr: DeviceVec<u32>,
    col: DeviceVec<u32>,
    wbits: DeviceVec<u32>,
    canon: DeviceVec<u32>,
    row_of: DeviceVec<u32>,
    comp: [DeviceVec<u32>; 2],
    best: DeviceVec<u64>,
    hook: DeviceVec<u32>,
    parent: [DeviceVec<u32>; 2],
    forest: DeviceVec<u32>,
    count: DeviceVec<u32>,
    moved: DeviceVec<u32>,
    /// The rounds' vertices: one list a round fills, the other it scans.
    active: [DeviceWorklist; 2],
}

impl Arrays {
    fn upload(device: &Device, g: &MstGraph) -> Result<Self> {
        let n = g.len();
        let start: Vec<u32> = (0..to_u32("spanning forest vertices", n)?).collect();
        let mut best = device.alloc::<u64>(n)?;
        best.fill(u64::MAX)?;
        let mut forest = device.alloc::<u32>(n.max(1))?;
        forest.fill(0)?;
        let mut count = device.alloc::<u32>(1)?;
        count.fill(0)?;
        // Every active vertex of a round over all of them pushes itself:
        // block staging (one atomic per block, the items copied out
        // coalesced) is the cheapest of the push variants under CTE
        // (BENCHMARKS.md, "Push variants").
        let mut active = [device.worklist(n, n)?, device.worklist(n, n)?];
        for list in &mut active {
            list.set_push_variant(PushVariant::Block);
        }
        Ok(Arrays {
            ptr: device.upload(&g.ptr)?,
            col: device.upload(&g.col)?,
            wbits: device.upload(&g.wbits)?,
            canon: device.upload(&g.canon)?,
            row_of: device.upload(&g.row_of)?,
            comp: [device.upload(&start)?, device.alloc::<u32>(n)?],
            best,
            hook: device.alloc::<u32>(n)?,
            parent: [device.alloc::<u32>(n)?, device.alloc::<u32>(n)?],
            forest,
            count,
            moved: device.alloc::<u32>(1)?,
            active,
        })
    }
}

/// The minimum spanning forest of the symmetric matrix `a` (see the
/// module's documentation) on `device`; `config` runs the edge scan
/// ([`fn@mst_lightest`]), the other steps are per-vertex maps.
///
/// # Errors
/// Those of [`MstGraph::from_matrix`]; more vertices than u32 holds;
/// device errors.
pub fn mst(device: &Device, config: &LaunchConfig, a: &Csr<f32>) -> Result<SpanningForest> {
    let g = MstGraph::from_matrix(a)?;
    mst_of(device, config, &g)
}

/// The launches of one run, prepared once (the edge scan's split of long
/// rows is planned at preparation, not per round): index `i` of a pair
/// reads `comp[i]` (or, for the jumps and relabelling, `parent[i]`).
struct Launches<'a> {
    /// `[comp][list]`: a round over every vertex, filling `active[list]`.
    all: [[PreparedLaunch<'a>; 2]; 2],
    /// `[comp][list]`: a later round over `active[list]`, filling the
    /// other list.
    lightest: [[PreparedLaunch<'a>; 2]; 2],
    hook: [PreparedLaunch<'a>; 2],
    brk: PreparedLaunch<'a>,
    jump: [PreparedLaunch<'a>; 2],
    moved: [PreparedLaunch<'a>; 2],
    /// `[comp][parent]`.
    relabel: [[PreparedLaunch<'a>; 2]; 2],
}

impl<'a> Launches<'a> {
    fn prepare(
        device: &Device,
        config: &LaunchConfig,
        d: &'a Arrays,
        count_split: &'a OneTaskSplit,
    ) -> Result<Self> {
        let n = d.hook.len();
        let n32 = to_u32("spanning forest vertices", n)?;
        let [c0, c1] = &d.comp;
        let [p0, p1] = &d.parent;
        let [a0, a1] = &d.active;
        let all = |c, to| {
            mst_lightest::prepare(
                device, config, n, &d.ptr, &d.col, &d.wbits, &d.canon, c, &d.best, to,
            )
        };
        let lightest = |c, from: &'a DeviceWorklist, to| {
            mst_lightest::prepare(
                device, config, from, &d.ptr, &d.col, &d.wbits, &d.canon, c, &d.best, to,
            )
        };
        let hook = |c| {
            mst_hook::prepare(
                device,
                &LaunchConfig::default(),
                n,
                c,
                &d.best,
                &d.row_of,
                &d.col,
                &d.hook,
            )
        };
        let jump = |from, to| mst_jump::prepare(device, &LaunchConfig::default(), n, from, to);
        let (cfg, tasks) = (&count_split.config, &count_split.tasks);
        let moved = |from, to| mst_moved::prepare(device, cfg, tasks, n32, from, to, &d.moved);
        let relabel =
            |c, p, to| mst_relabel::prepare(device, &LaunchConfig::default(), n, c, p, to, &d.best);
        Ok(Launches {
            all: [[all(c0, a0)?, all(c0, a1)?], [all(c1, a0)?, all(c1, a1)?]],
            lightest: [
                [lightest(c0, a0, a1)?, lightest(c0, a1, a0)?],
                [lightest(c1, a0, a1)?, lightest(c1, a1, a0)?],
            ],
            hook: [hook(c0)?, hook(c1)?],
            brk: mst_break::prepare(
                device,
                &LaunchConfig::default(),
                n,
                &d.hook,
                &d.best,
                p0,
                &d.forest,
                &d.count,
            )?,
            jump: [jump(p0, p1)?, jump(p1, p0)?],
            moved: [moved(p0, p1)?, moved(p1, p0)?],
            relabel: [
                [relabel(c0, p0, c1)?, relabel(c0, p1, c1)?],
                [relabel(c1, p0, c0)?, relabel(c1, p1, c0)?],
            ],
        })
    }
}

/// [`mst`] of a graph already read.
pub fn mst_of(device: &Device, config: &LaunchConfig, g: &MstGraph) -> Result<SpanningForest> {
    let setup_start = Instant::now();
    let n = g.len();
    let d = Arrays::upload(device, g)?;
    let count_split = split_one_task(device, 0, 0..n)?;
    let l = Launches::prepare(device, config, &d, &count_split)?;
    let setup = setup_start.elapsed();
    let solve_start = Instant::now();
    let (mut found, mut rounds, mut c) = (0u32, 0usize, 0usize);
    let (mut scanned, mut active) = (Vec::new(), Vec::new());
    loop {
        // Round `r` fills `active[r % 2]`, cleared first, and scans the
        // list the round before filled where it is short, else every vertex.
        let (to, from) = (rounds % 2, (rounds + 1) % 2);
        let listed = match rounds {
            0 => n,
            _ => d.active[from].len()?,
        };
        d.active[to].clear()?;
        active.push(listed);
        if rounds > 0 && listed <= n / FRONTIER_SHARE {
            scanned.push(listed);
            l.lightest[c][from].run()?;
        } else {
            scanned.push(n);
            l.all[c][to].run()?;
        }
        rounds += 1;
        l.hook[c].run()?;
        l.brk.run()?;
        let now = d.count.to_vec()?[0];
        if now == found {
            break;
        }
        found = now;
        // Jump until no pointer moves; `p` ends at the array holding the
        // stars (`parent[0]` is where the hooks are).
        let mut p = 0;
        loop {
            l.jump[p].run()?;
            l.moved[p].run()?;
            p = 1 - p;
            if d.moved.to_vec()?[0] == 0 {
                break;
            }
        }
        l.relabel[c][p].run()?;
        c = 1 - c;
    }
    let slots = d.forest.to_vec()?;
    let solve = solve_start.elapsed();
    drop(l);
    let mut edges: Vec<(u32, u32, f32)> = slots[..found as usize]
        .iter()
        .map(|&e| {
            (
                g.row_of[e as usize],
                g.col[e as usize],
                g.weights[e as usize],
            )
        })
        .collect();
    edges.sort_unstable_by_key(|&(u, v, _)| (u, v));
    let weight = edges.iter().map(|&(_, _, w)| w as f64).sum();
    Ok(SpanningForest {
        trees: n - edges.len(),
        edges,
        weight,
        rounds,
        scanned,
        active,
        setup,
        solve,
    })
}

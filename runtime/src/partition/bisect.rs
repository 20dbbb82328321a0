//! Coarsened multilevel bisection (Section 4.1, Algorithm 4).
//!
//! A bisection of a tuple subset is modelled as a hypergraph bisection: the
//! hypergraph's vertices are *entities* (sets of tuples, weighted by their
//! tuple count) and its nets are the data elements (tasks and gathered
//! elements), each connecting the entities whose tuples touch it. A net with
//! pins on both sides is exactly one vertex replica, so the cut-net count of a
//! bisection is the replication cost it adds, and summed over DBWP's recursion
//! it is Equation 2's R. Balance is on tuples (edges), as in the paper.
//!
//! The first coarsening happens while the subset is read (see [`build`]): a
//! task's consecutive tuples form one entity, long tasks are cut into chunks of
//! [`CoarsenOptions::entity_tuples`] joined by the task's net, and consecutive
//! short tasks that read common data share an entity. Large hypergraphs are
//! then renumbered breadth-first so that neighbours sit close in memory. Level
//! by level, each entity joins the cluster it is most connected to (heavy
//! connectivity: shared nets weighted by `1 / (|net| - 1)`), visiting entities
//! by increasing degree as Algorithm 4 does; nets left with a single pin are
//! dropped. The coarsest hypergraph is bisected by greedy growing from a few
//! seeds, each refined by Fiduccia–Mattheyses (FM), the best kept; the
//! bisection is then projected back level by level and refined by FM at each
//! level except the finest [`CoarsenOptions::skip_levels`], which the paper
//! shows cost most of the time for little gain.
//!
//! A bisection runs on one thread; DBWP runs the two halves of every split in
//! parallel, which keeps both cores busy below the root.

use super::dbwp::task_from;
use super::kd;
use super::scratch::{release_free_memory, with_sparse_map, SparseMap};
use super::work_graph::WorkGraphOf;
use super::CoarsenOptions;
use crate::rng;
use rand::RngCore;
use rand_chacha::ChaCha8Rng;
use std::collections::BinaryHeap;

/// Stop coarsening at this many entities: small enough that trying several
/// initial bisections is cheap, large enough for them to be balanced.
const COARSEST: usize = 160;
/// Stop coarsening when a level removes less than this fraction of entities.
const MIN_REDUCTION: f64 = 0.08;
/// While scoring matches, only this many pins on each side of an entity in
/// each of its nets are looked at. Scanning whole nets makes matching
/// quadratic in a dense row or column; a window in entity order (input or
/// breadth-first order) keeps it linear and still finds close neighbours.
const MATCH_WINDOW: usize = 3;
/// Nets of one entity looked at while scoring its matches, at most: the
/// first few nets find the best match almost always, and every further net
/// costs clustering time in proportion (measurements in BENCHMARKS.md,
/// "Partitioner constants").
const MATCH_NETS: usize = 8;
/// Level-0 hypergraphs with more pins than this (4 MiB per pin array, beyond
/// a core's L2) are renumbered breadth-first before coarsening, unless their
/// order is already local (see [`Hypergraph::is_local`]).
const RENUMBER_PINS: usize = 1 << 20;
/// An order is local when a net's entities span, on average, less than this
/// fraction of all entities: spatially numbered meshes span far less, randomly
/// numbered graphs far more, so the threshold separates them with a wide
/// margin (spans measured in BENCHMARKS.md, "Partitioner constants").
const LOCAL_SPAN: usize = 32;
/// A level-0 hypergraph with more pins than this (16 MiB per array) is freed
/// once the next level is built, and its bisection is the projection of
/// level 1's, unrefined. It is the largest level: keeping it through
/// coarsening held it alongside the whole rest of the hierarchy, and on
/// large inputs level 1's entities are already coarse enough that refining
/// there finds the separator, so refining level 0 again costs much time for
/// a small gain (measured in BENCHMARKS.md, "Partitioner constants").
const DROP_LEVEL0_PINS: usize = 1 << 22;
/// Subsets of at least this many tuples hand freed hierarchy levels back to
/// the operating system as they go (see [`release_free_memory`]).
const RELEASE_TUPLES: usize = 1 << 20;
/// Bisections of fewer tuples than this (a few hundred entities) are direct:
/// no coarsening, one region grown on the level-0 hypergraph and refined by
/// FM. A deep recursion has many of them, and there the fixed costs of the
/// levels (clustering, contraction, a second region, projection) outweigh
/// what they add (the time and R trade-off is in BENCHMARKS.md,
/// "Partitioner constants").
const SMALL_TUPLES: usize = 8192;
/// Initial bisections tried on the coarsest hypergraph.
const INITIAL_TRIES: u64 = 2;
/// FM passes on the coarsest level at most.
const FM_PASSES: usize = 2;
/// FM passes on a projected level at most: projection starts from a good
/// bisection, so later passes rarely find much.
const FM_PASSES_PROJECTED: usize = 2;

/// One level of the hypergraph, CSR style.
///
/// A level keeps only its entity→net incidence. The net→entity incidence
/// (the transpose) is needed only while the level is clustered or refined,
/// so it is built then and dropped afterwards: keeping both orientations of
/// every level alive made the hierarchy of a large bisection cost several
/// times the matrix itself.
struct Hypergraph {
    /// Weight (tuples) of every entity.
    w: Vec<u32>,
    /// Nets of entity `e`: `pins[xpins[e]..xpins[e + 1]]`, without duplicates.
    xpins: Vec<u32>,
    pins: Vec<u32>,
    n_nets: usize,
    /// Entities of net `n`, ascending: `net_pins[xnets[n]..xnets[n + 1]]`.
    /// Empty unless [`Hypergraph::transpose`] was called.
    xnets: Vec<u32>,
    net_pins: Vec<u32>,
}

impl Hypergraph {
    /// A hypergraph with no entity, standing in for a level that was freed.
    fn empty() -> Self {
        Hypergraph {
            w: Vec::new(),
            xpins: vec![0],
            pins: Vec::new(),
            n_nets: 0,
            xnets: Vec::new(),
            net_pins: Vec::new(),
        }
    }
    fn n(&self) -> usize {
        self.w.len()
    }
    fn n_nets(&self) -> usize {
        self.n_nets
    }
    fn nets_of(&self, e: usize) -> &[u32] {
        &self.pins[self.xpins[e] as usize..self.xpins[e + 1] as usize]
    }
    fn pins_of(&self, n: usize) -> &[u32] {
        &self.net_pins[self.xnets[n] as usize..self.xnets[n + 1] as usize]
    }

    /// Builds from per-entity net lists (each without duplicates), dropping
    /// nets with fewer than two pins, which no bisection can cut, and
    /// renumbering the rest. The lists are compacted in place.
    fn from_entity_nets(
        mut w: Vec<u32>,
        mut xpins: Vec<u32>,
        mut pins: Vec<u32>,
        n_nets: usize,
    ) -> Self {
        const NONE: u32 = u32::MAX;
        // Pin counts, then (same array) the new id of every kept net.
        let mut renum = vec![0u32; n_nets];
        for &p in &pins {
            renum[p as usize] += 1;
        }
        let mut kept = 0u32;
        for r in renum.iter_mut() {
            if *r >= 2 {
                *r = kept;
                kept += 1;
            } else {
                *r = NONE;
            }
        }
        let mut wpos = 0usize;
        let mut start = 0usize;
        for e in 0..w.len() {
            let end = xpins[e + 1] as usize;
            for i in start..end {
                let r = renum[pins[i] as usize];
                if r != NONE {
                    pins[wpos] = r;
                    wpos += 1;
                }
            }
            start = end;
            xpins[e + 1] = wpos as u32;
        }
        pins.truncate(wpos);
        // Levels live through the whole coarsening: hold no spare capacity
        // (shrinking a heap block in place does not copy it).
        drop(renum);
        pins.shrink_to_fit();
        xpins.shrink_to_fit();
        w.shrink_to_fit();
        Hypergraph {
            w,
            xpins,
            pins,
            n_nets: kept as usize,
            xnets: Vec::new(),
            net_pins: Vec::new(),
        }
    }

    /// Builds the net→entity incidence (counting sort of the pins by net).
    /// Entities are visited in order, so every net's list is ascending.
    fn transpose(&mut self) {
        let m = self.n_nets;
        // Counts at `p + 2`, prefix sums leave the start of net `p` at
        // `p + 1`, which then serves as its fill cursor and ends as its end.
        let mut xnets = vec![0u32; m + 2];
        for &p in &self.pins {
            xnets[p as usize + 2] += 1;
        }
        for i in 2..m + 2 {
            xnets[i] += xnets[i - 1];
        }
        let mut net_pins = vec![0u32; self.pins.len()];
        for e in 0..self.n() {
            for &p in self.nets_of(e) {
                let f = &mut xnets[p as usize + 1];
                net_pins[*f as usize] = e as u32;
                *f += 1;
            }
        }
        xnets.truncate(m + 1);
        self.xnets = xnets;
        self.net_pins = net_pins;
    }

    /// Frees the net→entity incidence.
    fn drop_transpose(&mut self) {
        self.xnets = Vec::new();
        self.net_pins = Vec::new();
    }

    /// Whether the entity order already keeps every net's entities close:
    /// their mean span (last minus first) is under `1 / LOCAL_SPAN` of the
    /// entities. Breadth-first renumbering then buys little locality for a
    /// transpose and a copy of the level.
    fn is_local(&self) -> bool {
        const NONE: u32 = u32::MAX;
        let mut first = vec![NONE; self.n_nets];
        let mut last = vec![0u32; self.n_nets];
        for e in 0..self.n() {
            for &p in self.nets_of(e) {
                let f = &mut first[p as usize];
                if *f == NONE {
                    *f = e as u32;
                }
                last[p as usize] = e as u32;
            }
        }
        let span: u64 = first
            .iter()
            .zip(&last)
            .map(|(&f, &l)| u64::from(l.saturating_sub(f)))
            .sum();
        span * (LOCAL_SPAN as u64) < self.n() as u64 * self.n_nets as u64
    }

    /// Entities in breadth-first order over shared nets (from entity 0, then
    /// from the next unvisited one). Each net is expanded once, so this costs
    /// O(pins). Needs the transpose.
    fn bfs_order(&self) -> Vec<u32> {
        let n = self.n();
        let mut seen = vec![false; n];
        let mut order: Vec<u32> = Vec::with_capacity(n);
        let mut net_done = vec![false; self.n_nets()];
        let mut head = 0;
        for root in 0..n {
            if std::mem::replace(&mut seen[root], true) {
                continue;
            }
            order.push(root as u32);
            while head < order.len() {
                let e = order[head] as usize;
                head += 1;
                for &net in self.nets_of(e) {
                    if std::mem::replace(&mut net_done[net as usize], true) {
                        continue;
                    }
                    for &u in self.pins_of(net as usize) {
                        if !std::mem::replace(&mut seen[u as usize], true) {
                            order.push(u);
                        }
                    }
                }
            }
        }
        order
    }

    /// The same hypergraph with entity `order[i]` renumbered `i`; returns it
    /// with the new id of every old entity. The transpose is not carried over.
    fn permuted(self, order: &[u32]) -> (Hypergraph, Vec<u32>) {
        let n = self.n();
        let mut new_id = vec![0u32; n];
        let mut w = Vec::with_capacity(n);
        let mut xpins = Vec::with_capacity(n + 1);
        xpins.push(0u32);
        let mut pins = Vec::with_capacity(self.pins.len());
        for (i, &old) in order.iter().enumerate() {
            new_id[old as usize] = i as u32;
            w.push(self.w[old as usize]);
            pins.extend_from_slice(self.nets_of(old as usize));
            xpins.push(pins.len() as u32);
        }
        let n_nets = self.n_nets;
        drop(self);
        let h = Hypergraph {
            w,
            xpins,
            pins,
            n_nets,
            xnets: Vec::new(),
            net_pins: Vec::new(),
        };
        (h, new_id)
    }

    /// One level of heavy-connectivity clustering: every entity not yet in a
    /// cluster joins the cluster (or unclustered entity) it shares the most
    /// net weight with, within the weight bound `max_w`. Clusters rather than
    /// pairs shrink a level by more than half, so fewer levels are built.
    /// Returns the coarse id of every entity and the number of clusters, or
    /// `None` when the level would barely shrink. Needs the transpose.
    fn cluster(&self, max_w: u32) -> Option<(Vec<u32>, usize)> {
        let n = self.n();
        const NONE: u32 = u32::MAX;
        // Algorithm 4: visit by entity degree, low first. Degrees are bucketed
        // by powers of two and ties kept in entity order, which is input
        // order: the sweep then walks the arrays nearly sequentially, where a
        // fine-grained or random order would miss the cache on every entity.
        // A stable counting sort over the 33 buckets.
        let bucket = |e: usize| (self.xpins[e + 1] - self.xpins[e]).max(1).ilog2() as usize;
        let mut start = [0u32; 34];
        for e in 0..n {
            start[bucket(e) + 1] += 1;
        }
        for b in 0..33 {
            start[b + 1] += start[b];
        }
        let mut order = vec![0u32; n];
        for e in 0..n {
            let s = &mut start[bucket(e)];
            order[*s as usize] = e as u32;
            *s += 1;
        }
        // Representative entity of every entity's cluster (NONE: unvisited
        // and unclustered), and the weight of each cluster at its representative.
        // Clusters of at most ~3 average entities: one level then shrinks the
        // hypergraph by 2-3x, leaving levels for refinement to work on.
        let total: u64 = self.w.iter().map(|&w| w as u64).sum();
        let max_w = max_w
            .min((3 * total / n as u64).max(1) as u32)
            .max(2 * self.w.iter().copied().min().unwrap_or(1));
        let mut rep = vec![NONE; n];
        let mut cw = self.w.clone();
        let mut score = vec![0f32; n];
        let mut touched: Vec<u32> = Vec::new();
        for &u in &order {
            let u = u as usize;
            if rep[u] != NONE {
                continue;
            }
            let wu = self.w[u];
            let (first, last) = (self.xpins[u] as usize, self.xpins[u + 1] as usize);
            // A coarse entity with many nets is scored on an even sample of them.
            let stride = (last - first).div_ceil(MATCH_NETS).max(1);
            for i in (first..last).step_by(stride) {
                let pins = self.pins_of(self.pins[i] as usize);
                let s = 1.0 / (pins.len() - 1) as f32;
                // Pins are in entity order, which follows the input's order:
                // the window around `u` holds its nearest candidates.
                let at = pins.binary_search(&(u as u32)).unwrap_or(0);
                let window =
                    &pins[at.saturating_sub(MATCH_WINDOW)..(at + MATCH_WINDOW + 1).min(pins.len())];
                for &v in window {
                    let v = v as usize;
                    if v == u {
                        continue;
                    }
                    let c = if rep[v] == NONE { v } else { rep[v] as usize };
                    if wu + cw[c] <= max_w {
                        if score[c] == 0.0 {
                            touched.push(c as u32);
                        }
                        score[c] += s;
                    }
                }
            }
            let mut best = u;
            let mut best_s = 0f32;
            for &c in &touched {
                let c = c as usize;
                // Prefer the lighter of equally connected clusters: it keeps
                // coarse weights even.
                if score[c] > best_s || (score[c] == best_s && cw[c] < cw[best]) {
                    best = c;
                    best_s = score[c];
                }
                score[c] = 0.0;
            }
            touched.clear();
            if best == u {
                rep[u] = u as u32;
            } else {
                rep[u] = best as u32;
                rep[best] = best as u32;
                cw[best] += wu;
            }
        }
        drop((order, cw, score));
        // Coarse ids by representative, in entity order (keeps input order).
        // `rep[r]` is rewritten once `r`'s id is known, so mark it.
        let mut cmap = vec![NONE; n];
        let mut nc = 0u32;
        for u in 0..n {
            let r = rep[u] as usize;
            if cmap[r] == NONE {
                cmap[r] = nc;
                nc += 1;
            }
            cmap[u] = cmap[r];
        }
        let nc = nc as usize;
        if nc as f64 > (1.0 - MIN_REDUCTION) * n as f64 {
            return None;
        }
        Some((cmap, nc))
    }

    /// The coarse level of a clustering: every cluster's nets are the union
    /// of its members' nets. Needs no transpose.
    fn contract(&self, cmap: &[u32], nc: usize) -> Hypergraph {
        let n = self.n();
        const NONE: u32 = u32::MAX;
        let mut w = vec![0u32; nc];
        // Members grouped by coarse id (counting sort, cursor trick as in
        // `transpose`).
        let mut xm = vec![0u32; nc + 2];
        for (&c, &wu) in cmap.iter().zip(&self.w) {
            w[c as usize] += wu;
            xm[c as usize + 2] += 1;
        }
        for c in 2..nc + 2 {
            xm[c] += xm[c - 1];
        }
        let mut members = vec![0u32; n];
        for (u, &c) in cmap.iter().enumerate() {
            let f = &mut xm[c as usize + 1];
            members[*f as usize] = u as u32;
            *f += 1;
        }
        // Coarse pins: union of the members' nets, deduplicated by stamp.
        let mut stamp = vec![NONE; self.n_nets()];
        let mut xpins = Vec::with_capacity(nc + 1);
        xpins.push(0u32);
        let mut pins = Vec::with_capacity(self.pins.len());
        for c in 0..nc {
            for &e in &members[xm[c] as usize..xm[c + 1] as usize] {
                for &net in self.nets_of(e as usize) {
                    if stamp[net as usize] != c as u32 {
                        stamp[net as usize] = c as u32;
                        pins.push(net);
                    }
                }
            }
            xpins.push(pins.len() as u32);
        }
        drop((members, stamp, xm));
        Hypergraph::from_entity_nets(w, xpins, pins, self.n_nets())
    }
}

/// The runtime's one generator ([`crate::rng`]), seeded per bisection:
/// results must not depend on thread timing, so every bisection draws from
/// its own stream.
struct Rng(ChaCha8Rng);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(rng::chunk_rng(seed, rng::BISECTION, 0))
    }
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in `0..n` (`n ≥ 1`; entity counts fit in u32).
    fn below(&mut self, n: usize) -> usize {
        rng::below(&mut self.0, n.min(u32::MAX as usize) as u32) as usize
    }
}

/// FM priority queues, one per source side: `(gain, random tie-break,
/// entity)`, with stale entries skipped when popped.
type Heaps = [BinaryHeap<(i32, u32, u32)>; 2];

/// A bisection of one level's entities with its pin counts per side.
struct Bisection<'h> {
    h: &'h Hypergraph,
    side: Vec<u8>,
    /// Pins of every net on side 0 and side 1.
    cnt: Vec<[u32; 2]>,
    weight: [u64; 2],
    /// Most tuples a side may hold.
    max_side: u64,
}

impl<'h> Bisection<'h> {
    fn new(h: &'h Hypergraph, side: Vec<u8>, max_side: u64) -> Self {
        let mut cnt = vec![[0u32; 2]; h.n_nets()];
        let mut weight = [0u64; 2];
        for (e, &s) in side.iter().enumerate() {
            let s = s as usize;
            weight[s] += h.w[e] as u64;
            for &net in h.nets_of(e) {
                cnt[net as usize][s] += 1;
            }
        }
        Bisection {
            h,
            side,
            cnt,
            weight,
            max_side,
        }
    }

    fn cut(&self) -> u64 {
        self.cnt.iter().filter(|c| c[0] > 0 && c[1] > 0).count() as u64
    }

    /// How far the heavier side is over its bound (0 when balanced).
    fn overload(&self) -> u64 {
        self.weight[0]
            .max(self.weight[1])
            .saturating_sub(self.max_side)
    }

    /// FM gain of moving `e` (cut nets removed minus cut nets created), and
    /// whether `e` touches a cut net.
    fn gain(&self, e: usize) -> (i32, bool) {
        let s = self.side[e] as usize;
        let (mut g, mut boundary) = (0i32, false);
        for &net in self.h.nets_of(e) {
            let c = self.cnt[net as usize];
            g += i32::from(c[s] == 1) - i32::from(c[1 - s] == 0);
            boundary |= c[1 - s] > 0;
        }
        (g, boundary)
    }

    /// Moves `e` to the other side, updating pin counts, weights and (for free
    /// entities, i.e. not `locked`) the gains, pushing changed ones on `heaps`.
    fn apply(
        &mut self,
        e: usize,
        gain: &mut [i32],
        locked: &[bool],
        heaps: Option<&mut Heaps>,
        rng: &mut Rng,
    ) {
        let from = self.side[e] as usize;
        let to = 1 - from;
        let h = self.h;
        let mut heaps = heaps;
        let mut bump = |u: usize, d: i32, gain: &mut [i32], side: &[u8]| {
            gain[u] += d;
            if let Some(hs) = heaps.as_deref_mut() {
                hs[side[u] as usize].push((gain[u], rng.next() as u32, u as u32));
            }
        };
        for &net in h.nets_of(e) {
            let n = net as usize;
            let c = self.cnt[n];
            if c[to] == 0 {
                for &u in h.pins_of(n) {
                    let u = u as usize;
                    if !locked[u] && u != e {
                        bump(u, 1, gain, &self.side);
                    }
                }
            } else if c[to] == 1 {
                for &u in h.pins_of(n) {
                    let u = u as usize;
                    if !locked[u] && u != e && self.side[u] as usize == to {
                        bump(u, -1, gain, &self.side);
                    }
                }
            }
            self.cnt[n][from] -= 1;
            self.cnt[n][to] += 1;
            let c = self.cnt[n];
            if c[from] == 0 {
                for &u in h.pins_of(n) {
                    let u = u as usize;
                    if !locked[u] && u != e {
                        bump(u, -1, gain, &self.side);
                    }
                }
            } else if c[from] == 1 {
                for &u in h.pins_of(n) {
                    let u = u as usize;
                    if !locked[u] && u != e && self.side[u] as usize == from {
                        bump(u, 1, gain, &self.side);
                    }
                }
            }
        }
        self.side[e] = to as u8;
        let w = h.w[e] as u64;
        self.weight[from] -= w;
        self.weight[to] += w;
    }

    /// Fiduccia–Mattheyses refinement: passes of single-entity moves by best
    /// gain under the balance bound, each rolled back to its best prefix.
    /// Returns the final cut.
    fn fm(&mut self, rng: &mut Rng, passes: usize) -> u64 {
        let n = self.h.n();
        let mut cut = self.cut();
        let mut gain = vec![0i32; n];
        let mut locked = vec![false; n];
        // A pass ends after this many moves without a new best.
        let patience = (n / 100).clamp(10, 50);
        for _ in 0..passes {
            locked.iter_mut().for_each(|l| *l = false);
            let mut heaps: Heaps = [BinaryHeap::new(), BinaryHeap::new()];
            for e in 0..n {
                let (g, boundary) = self.gain(e);
                gain[e] = g;
                // Only boundary entities can have a non-negative gain; interior
                // ones join the heaps when a neighbour's move changes their gain.
                if boundary || n <= COARSEST * 4 {
                    heaps[self.side[e] as usize].push((g, rng.next() as u32, e as u32));
                }
            }
            let start_cut = cut;
            let start_over = self.overload();
            let mut moves: Vec<u32> = Vec::new();
            let (mut best_cut, mut best_over, mut best_len) = (cut, start_over, 0usize);
            loop {
                // Valid tops of both heaps.
                let mut tops: [Option<(i32, usize)>; 2] = [None, None];
                for s in 0..2 {
                    while let Some(&(g, _, e)) = heaps[s].peek() {
                        let e = e as usize;
                        if locked[e] || self.side[e] as usize != s || gain[e] != g {
                            heaps[s].pop();
                            continue;
                        }
                        tops[s] = Some((g, e));
                        break;
                    }
                }
                let feasible = |s: usize, e: usize, this: &Self| {
                    let w = this.h.w[e] as u64;
                    // A move is allowed when the target stays within bound, or
                    // when it relieves an overloaded source side.
                    this.weight[1 - s] + w <= this.max_side
                        || this.weight[s] > this.max_side && this.weight[1 - s] + w < this.weight[s]
                };
                let mut pick: Option<(usize, usize, i32)> = None;
                for s in 0..2 {
                    if let Some((g, e)) = tops[s] {
                        if feasible(s, e, self) {
                            if pick.map_or(true, |(_, _, pg)| g > pg) {
                                pick = Some((s, e, g));
                            }
                        } else {
                            // Not movable now; it comes back if its gain changes.
                            heaps[s].pop();
                        }
                    }
                }
                let Some((s, e, g)) = pick else {
                    if tops.iter().all(Option::is_none) {
                        break;
                    }
                    continue;
                };
                heaps[s].pop();
                locked[e] = true;
                self.apply(e, &mut gain, &locked, Some(&mut heaps), rng);
                cut = (cut as i64 - g as i64) as u64;
                moves.push(e as u32);
                let over = self.overload();
                if (over, cut) < (best_over, best_cut) {
                    best_cut = cut;
                    best_over = over;
                    best_len = moves.len();
                } else if moves.len() - best_len > patience {
                    break;
                }
            }
            // Roll back to the best prefix.
            for &e in moves[best_len..].iter().rev() {
                self.apply(e as usize, &mut gain, &locked, None, rng);
            }
            cut = best_cut;
            if (best_over, best_cut) >= (start_over, start_cut) {
                break;
            }
        }
        cut
    }
}

/// Greedy growing: a breadth-first region from `seed` takes side 0 until it
/// holds half the weight; disconnected remainders restart from the next
/// unassigned entity.
fn grow(h: &Hypergraph, seed: usize, rng: &mut Rng) -> Vec<u8> {
    let n = h.n();
    let total: u64 = h.w.iter().map(|&w| w as u64).sum();
    let target = total / 2;
    let mut side = vec![1u8; n];
    let mut seen = vec![false; n];
    let mut queue = std::collections::VecDeque::new();
    let mut w0 = 0u64;
    let mut next_seed = seed;
    let start = rng.below(n.max(1));
    let mut scan = 0usize;
    while w0 < target {
        if queue.is_empty() {
            // New component: the seed first, then unseen entities in a rotated scan.
            while seen[next_seed] {
                next_seed = (start + scan) % n;
                scan += 1;
                if scan > n {
                    return side;
                }
            }
            seen[next_seed] = true;
            queue.push_back(next_seed);
        }
        let Some(e) = queue.pop_front() else { break };
        if w0 + h.w[e] as u64 > target + target / 20 && w0 > 0 {
            continue;
        }
        side[e] = 0;
        w0 += h.w[e] as u64;
        for &net in h.nets_of(e) {
            for &u in h.pins_of(net as usize) {
                let u = u as usize;
                if !seen[u] {
                    seen[u] = true;
                    queue.push_back(u);
                }
            }
        }
    }
    side
}

/// Bisects ascending tuple ids `ids` (`len >= 2`) in place into two non-empty
/// ascending halves; returns the left half's length.
pub(crate) fn split(
    g: &WorkGraphOf<'_>,
    ids: &mut [u32],
    depth: u32,
    opts: &CoarsenOptions,
) -> usize {
    let n = ids.len();
    let mut rng = Rng::new(opts.seed ^ ((ids[0] as u64) << 20) ^ ((n as u64) << 40) ^ depth as u64);
    let (mut h0, entity_end) = build(g, ids, opts.entity_tuples);
    // Breadth-first renumbering gives neighbours nearby ids, so coarsening and
    // refinement touch memory locally even when the input order is random. It
    // only pays when the hypergraph is larger than a core's cache; smaller
    // ones keep the input order (and its tie-breaking) unchanged.
    let new_id = if h0.pins.len() > RENUMBER_PINS && !h0.is_local() {
        h0.transpose();
        let order = h0.bfs_order();
        h0.drop_transpose();
        let (h, new_id) = h0.permuted(&order);
        h0 = h;
        Some(new_id)
    } else {
        None
    };
    let total = n as u64;
    let max_side = ((total as f64 / 2.0) * (1.0 + opts.imbalance)).ceil() as u64;
    let release = n >= RELEASE_TUPLES;
    let effort = if n < SMALL_TUPLES {
        Effort {
            coarsest: usize::MAX,
            tries: 1,
        }
    } else {
        Effort {
            coarsest: COARSEST,
            tries: INITIAL_TRIES,
        }
    };
    let side = multilevel(
        h0,
        total,
        max_side,
        opts.skip_levels,
        release,
        effort,
        &mut rng,
    );
    let Some(side) = side else {
        return kd::split_in_place(g, ids, &mut vec![0; n], depth);
    };
    let side_of = |e: usize| side[new_id.as_ref().map_or(e, |m| m[e] as usize)];
    // Entities are runs of consecutive positions: walk them alongside.
    let mut right = 0usize;
    let mut begin = 0usize;
    for (e, &end) in entity_end.iter().enumerate() {
        if side_of(e) != 0 {
            right += end as usize - begin;
        }
        begin = end as usize;
    }
    if right == 0 || right == n {
        // Degenerate (e.g. one heavy entity): fall back to a geometric cut.
        return kd::split_in_place(g, ids, &mut vec![0; n], depth);
    }
    // The right side waits in a buffer of its own size, allocated only now
    // that the hierarchy is freed.
    let mut buf = Vec::with_capacity(right);
    let (mut w, mut begin) = (0usize, 0usize);
    for (e, &end) in entity_end.iter().enumerate() {
        let end = end as usize;
        if side_of(e) == 0 {
            ids.copy_within(begin..end, w);
            w += end - begin;
        } else {
            buf.extend_from_slice(&ids[begin..end]);
        }
        begin = end;
    }
    ids[w..].copy_from_slice(&buf);
    if release {
        drop(buf);
        release_free_memory();
    }
    w
}

/// The multilevel bisection of a level-0 hypergraph: coarsen, bisect the
/// coarsest level, project back with refinement. Returns the side of every
/// level-0 entity, or `None` when the hypergraph has fewer than two entities.
/// With `release`, freed levels are handed back to the operating system.
#[allow(clippy::too_many_arguments)]
fn multilevel(
    h0: Hypergraph,
    total: u64,
    max_side: u64,
    skip_levels: u32,
    release: bool,
    effort: Effort,
    rng: &mut Rng,
) -> Option<Vec<u8>> {
    // A huge level 0 is not refined (see [`DROP_LEVEL0_PINS`]).
    let skip_levels = skip_levels.max(u32::from(h0.pins.len() > DROP_LEVEL0_PINS));
    let released = || {
        if release {
            release_free_memory();
        }
    };
    let max_w =
        ((total / (COARSEST as u64 / 2)).max(1) as u32).max(*h0.w.iter().max().unwrap_or(&1));
    let mut levels: Vec<Hypergraph> = vec![h0];
    let mut maps: Vec<Vec<u32>> = Vec::new();
    loop {
        let h = levels.last_mut().expect("level 0 exists");
        if h.n() <= effort.coarsest {
            break;
        }
        if h.net_pins.is_empty() {
            h.transpose();
        }
        let clusters = h.cluster(max_w);
        // The transpose is rebuilt for refinement: keeping every level's
        // alive until then held them all at once at the coarsest level, and
        // the contraction does not need it.
        h.drop_transpose();
        let Some((cmap, nc)) = clusters else {
            break;
        };
        let coarse = h.contract(&cmap, nc);
        let finer = levels.len() - 1;
        // A level whose refinement is skipped is never read again, only its map.
        if (finer as u32) < skip_levels {
            levels[finer] = Hypergraph::empty();
        }
        levels.push(coarse);
        maps.push(cmap);
        released();
    }
    // Initial bisection of the coarsest level: best of several grown regions.
    let coarsest = levels.last_mut().expect("level 0 exists");
    if coarsest.n() < 2 {
        return None;
    }
    if coarsest.net_pins.is_empty() {
        coarsest.transpose();
    }
    let mut side = initial(coarsest, max_side, effort.tries, rng);
    // Uncoarsen: project, refine except on the finest `skip_levels` levels.
    for level in (0..maps.len()).rev() {
        // The coarser level is done with: free it before refining this one.
        levels.truncate(level + 1);
        let cmap = maps.pop().expect("one map per level");
        side = cmap.iter().map(|&c| side[c as usize]).collect();
        drop(cmap);
        released();
        if level as u32 >= skip_levels {
            let h = &mut levels[level];
            if h.net_pins.is_empty() {
                h.transpose();
            }
            let mut b = Bisection::new(h, side, max_side);
            b.fm(rng, FM_PASSES_PROJECTED);
            side = b.side;
        }
    }
    Some(side)
}

/// How hard a bisection tries: see [`SMALL_TUPLES`].
#[derive(Clone, Copy)]
struct Effort {
    /// Coarsening stops at this many entities (`usize::MAX`: not at all).
    coarsest: usize,
    /// Grown initial regions (at least 1).
    tries: u64,
}

/// Best of `tries` grown regions, each refined by FM. Needs the transpose.
fn initial(h: &Hypergraph, max_side: u64, tries: u64, rng: &mut Rng) -> Vec<u8> {
    let mut best: Option<(u64, u64, Vec<u8>)> = None;
    for t in 0..tries.max(1) {
        let seed = if t == 0 { 0 } else { rng.below(h.n()) };
        let side = grow(h, seed, rng);
        let mut b = Bisection::new(h, side, max_side);
        let cut = b.fm(rng, FM_PASSES);
        let key = (b.overload(), cut);
        if best.as_ref().map_or(true, |(o, c, _)| key < (*o, *c)) {
            best = Some((key.0, key.1, b.side));
        }
    }
    best.expect("at least one try").2
}

/// The level-0 hypergraph of a subset: Algorithm 4's first coarsening, done
/// while the subset is read. A task whose tuples exceed `entity_tuples` is
/// cut into chunks of that size, joined by the task's net; shorter tasks are
/// whole, and consecutive ones share an entity while it stays within
/// `2 × entity_tuples` and the next task reads an element the entity already
/// reads (so unrelated rows of a badly ordered input are never glued
/// together). Merging short tasks more than chunking long ones halves the
/// hypergraph of short-row meshes, while long rows keep fine pieces to split.
/// Nets are gathered elements and split tasks. Returns the hypergraph and
/// the end position (exclusive) of every entity.
fn build(g: &WorkGraphOf<'_>, ids: &[u32], entity_tuples: u32) -> (Hypergraph, Vec<u32>) {
    let n = ids.len();
    let gathered = g.gathered();
    let ptr = g.ptr();
    let n_g = g.n_gathered();
    let mut w: Vec<u32> = Vec::new();
    let mut xpins: Vec<u32> = vec![0];
    let mut pins: Vec<u32> = Vec::with_capacity(n + n / 4);
    // Last entity that read each local net.
    let mut last_ent: Vec<u32> = Vec::new();
    let chunk = entity_tuples.max(1) as usize;
    // Sorts the open entity's pins (deduplicated as they were pushed) and
    // closes it.
    let close = |pins: &mut Vec<u32>, xpins: &mut Vec<u32>, w: &mut Vec<u32>, weight: u32| {
        let first = *xpins.last().expect("xpins starts with 0") as usize;
        pins[first..].sort_unstable();
        xpins.push(pins.len() as u32);
        w.push(weight);
    };
    let n_nets = with_sparse_map(n_g, |map| {
        let local = |v: u32, map: &mut SparseMap<'_>, last_ent: &mut Vec<u32>| {
            map.get(v).unwrap_or_else(|| {
                let id = last_ent.len() as u32;
                map.insert(v, id);
                last_ent.push(u32::MAX);
                id
            })
        };
        // Weight of the open entity (0: none open).
        let mut open_w = 0u32;
        let (mut i, mut t) = (0, 0);
        while i < n {
            // One task's run of tuples.
            t = task_from(ptr, t, ids[i]);
            let end_id = ptr[t + 1];
            let mut j = i;
            while j < n && ids[j] < end_id {
                j += 1;
            }
            let len = j - i;
            if len > chunk {
                if open_w > 0 {
                    close(&mut pins, &mut xpins, &mut w, open_w);
                    open_w = 0;
                }
                // Tuple ids ascend, so a task is met once: its net is new.
                let task_net = last_ent.len() as u32;
                last_ent.push(u32::MAX);
                for s in (i..j).step_by(chunk) {
                    let e = (s + chunk).min(j);
                    let ent = w.len() as u32;
                    pins.push(task_net);
                    for p in s..e {
                        let net = local(gathered[ids[p] as usize], map, &mut last_ent);
                        if last_ent[net as usize] != ent {
                            last_ent[net as usize] = ent;
                            pins.push(net);
                        }
                    }
                    close(&mut pins, &mut xpins, &mut w, (e - s) as u32);
                }
            } else {
                let ent = w.len() as u32;
                let joins = open_w > 0
                    && open_w as usize + len <= 2 * chunk
                    && ids[i..j].iter().any(|&id| {
                        map.get(gathered[id as usize])
                            .is_some_and(|net| last_ent[net as usize] == ent)
                    });
                if open_w > 0 && !joins {
                    close(&mut pins, &mut xpins, &mut w, open_w);
                    open_w = 0;
                }
                let ent = w.len() as u32;
                for p in i..j {
                    let net = local(gathered[ids[p] as usize], map, &mut last_ent);
                    if last_ent[net as usize] != ent {
                        last_ent[net as usize] = ent;
                        pins.push(net);
                    }
                }
                open_w += len as u32;
            }
            i = j;
        }
        if open_w > 0 {
            close(&mut pins, &mut xpins, &mut w, open_w);
        }
        last_ent.len()
    });
    // Entities are runs of consecutive positions, in order, so their ends
    // are the running sum of their weights: no per-tuple entity id needed.
    let entity_end: Vec<u32> = w
        .iter()
        .scan(0u32, |end, &x| {
            *end += x;
            Some(*end)
        })
        .collect();
    (
        Hypergraph::from_entity_nets(w, xpins, pins, n_nets),
        entity_end,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(h: &Hypergraph) -> Hypergraph {
        Hypergraph {
            w: h.w.clone(),
            xpins: h.xpins.clone(),
            pins: h.pins.clone(),
            n_nets: h.n_nets,
            xnets: h.xnets.clone(),
            net_pins: h.net_pins.clone(),
        }
    }

    fn rgg_level0(n: usize) -> Hypergraph {
        let csr = crate::gen::rgg(n, 5).unwrap();
        let g = WorkGraphOf::from_csr(&csr).unwrap();
        let ids: Vec<u32> = (0..g.n_tuples() as u32).collect();
        build(&g, &ids, 16).0
    }

    #[test]
    fn bfs_renumbering_is_an_isomorphism() {
        let mut h = rgg_level0(2000);
        h.transpose();
        let order = h.bfs_order();
        let (mut r, new_id) = copy(&h).permuted(&order);
        let mut seen = vec![false; h.n()];
        for &n in &new_id {
            assert!(!std::mem::replace(&mut seen[n as usize], true));
        }
        assert_eq!((r.n(), r.n_nets()), (h.n(), h.n_nets()));
        for (e, &m) in new_id.iter().enumerate() {
            let m = m as usize;
            assert_eq!(r.w[m], h.w[e]);
            assert_eq!(r.nets_of(m), h.nets_of(e));
        }
        // The transpose lists every entity of a net once, ascending.
        r.transpose();
        for net in 0..r.n_nets() {
            let pins = r.pins_of(net);
            assert!(pins.len() >= 2 && pins.windows(2).all(|p| p[0] < p[1]));
            for &e in pins {
                assert!(r.nets_of(e as usize).contains(&(net as u32)));
            }
        }
        assert_eq!(r.net_pins.len(), r.pins.len());
    }

    #[test]
    fn contraction_unions_member_nets() {
        let mut h = rgg_level0(3000);
        h.transpose();
        let (cmap, nc) = h.cluster(u32::MAX).expect("an rgg level shrinks");
        assert!(nc < h.n() && cmap.iter().all(|&c| (c as usize) < nc));
        let c = h.contract(&cmap, nc);
        assert_eq!(c.n(), nc);
        let total = |w: &[u32]| w.iter().map(|&x| x as u64).sum::<u64>();
        assert_eq!(total(&c.w), total(&h.w));
        // A coarse net set is the members' nets that still join two clusters.
        let mut clusters_of = vec![std::collections::BTreeSet::new(); h.n_nets()];
        for (e, &c) in cmap.iter().enumerate() {
            for &net in h.nets_of(e) {
                clusters_of[net as usize].insert(c);
            }
        }
        let kept = clusters_of.iter().filter(|s| s.len() >= 2).count();
        assert_eq!(c.n_nets(), kept);
        let pins: usize = clusters_of
            .iter()
            .filter(|s| s.len() >= 2)
            .map(|s| s.len())
            .sum();
        assert_eq!(c.pins.len(), pins);
        // Levels live through the whole coarsening: no spare capacity.
        assert_eq!(c.pins.capacity(), c.pins.len());
        assert_eq!(c.xpins.capacity(), c.xpins.len());
        assert_eq!(h.pins.capacity(), h.pins.len());
    }

    /// Sorted input, two non-empty ascending halves that together are the input.
    fn check_split(g: &WorkGraphOf<'_>, ids: &[u32], opts: &CoarsenOptions) -> usize {
        let mut out = ids.to_vec();
        let cut = split(g, &mut out, 0, opts);
        assert!(cut > 0 && cut < ids.len(), "cut {cut} of {}", ids.len());
        let (l, r) = out.split_at(cut);
        assert!(l.windows(2).all(|w| w[0] < w[1]) && r.windows(2).all(|w| w[0] < w[1]));
        let mut all = out.clone();
        all.sort_unstable();
        assert_eq!(all, ids);
        cut
    }

    #[test]
    fn direct_and_multilevel_splits_are_valid_and_balanced() {
        let opts = CoarsenOptions::default();
        // 400 vertices: a few thousand tuples, the direct path; 3000: over
        // SMALL_TUPLES, the multilevel one.
        for (n, multilevel) in [(400, false), (3000, true)] {
            let csr = crate::gen::rgg(n, 3).unwrap();
            let g = WorkGraphOf::from_csr(&csr).unwrap();
            let ids: Vec<u32> = (0..g.n_tuples() as u32).collect();
            assert_eq!(
                ids.len() >= SMALL_TUPLES,
                multilevel,
                "{} tuples",
                ids.len()
            );
            let cut = check_split(&g, &ids, &opts);
            let max_side = (ids.len() as f64 * (1.0 + opts.imbalance) / 2.0).ceil() as usize;
            // Entities are at most 2 x entity_tuples: the bound holds up to one.
            let slack = 2 * opts.entity_tuples as usize;
            assert!(cut <= max_side + slack && ids.len() - cut <= max_side + slack);
            // A subset with gaps, as deep in the recursion.
            let odd: Vec<u32> = ids.iter().copied().filter(|id| id % 3 != 1).collect();
            check_split(&g, &odd, &opts);
        }
    }

    #[test]
    fn small_subsets_give_valid_partitions() {
        use super::super::{dbwp, Bisection, PartitionOptions};
        // Most bisections of this recursion are below SMALL_TUPLES: direct.
        let csr = crate::gen::rgg(1500, 11).unwrap();
        let g = WorkGraphOf::from_csr(&csr).unwrap();
        for t in [40, 150, 700] {
            let p = dbwp(
                &g,
                &PartitionOptions {
                    capacity: t,
                    bisection: Bisection::Coarsened(CoarsenOptions::default()),
                },
                None,
            )
            .unwrap();
            let mut seen = vec![0u8; g.n_tuples()];
            for part in 0..p.len() {
                let ids = p.part(part);
                let rows: std::collections::BTreeSet<u32> =
                    ids.iter().map(|&id| g.task_of(id)).collect();
                let cols: std::collections::BTreeSet<u32> =
                    ids.iter().map(|&id| g.gathered()[id as usize]).collect();
                assert!(
                    (rows.len() + cols.len()) as u32 <= t,
                    "partition {part} over T = {t}"
                );
                for &id in ids {
                    seen[id as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "T = {t}: not an exact cover");
        }
    }

    #[test]
    fn freed_memory_release_is_harmless() {
        let v = vec![1u32; 1 << 20];
        drop(v);
        crate::partition::scratch::release_free_memory();
        let w = vec![2u32; 1 << 20];
        assert!(w.iter().all(|&x| x == 2));
    }

    #[test]
    fn locality_tells_grid_order_from_random_order() {
        for (order, local) in [
            (crate::gen::RggOrder::Spatial, true),
            (crate::gen::RggOrder::Random, false),
        ] {
            let csr = crate::gen::rgg_with(20_000, 2, order).unwrap();
            let g = WorkGraphOf::from_csr(&csr).unwrap();
            let ids: Vec<u32> = (0..g.n_tuples() as u32).collect();
            let h = build(&g, &ids, 16).0;
            assert_eq!(h.is_local(), local, "{order:?}");
        }
    }
}

//! Breadth-first search on a [`DeviceGroup`], direction-optimising, with
//! the frontier exchanged as bitmaps.
//!
//! Each member owns a block of vertices (the rows of the in-edge pattern,
//! split by [`PartitionKind`]) and keeps their levels only. Every vertex
//! has one bit in a *part-major* bitmap: member `p`'s vertices are bits
//! `32·W_p + i` (`i` its local index, `W_p` the words of the members before
//! it), so each member's block is whole words and moves as one message.
//! Every edge's other end is stored as its bit in that bitmap, so no round
//! reads another member's levels:
//!
//! - **bottom-up** (a large frontier): each member writes its block of the
//!   frontier bitmap, the blocks are all-gathered (one grouped send of each
//!   block to every other member), and each unvisited vertex searches its
//!   in-edges for a frontier bit, stopping at the first;
//! - **top-down** (a small frontier): each member's frontier vertices mark
//!   their out-neighbours' bits in a claims bitmap, the claims on each
//!   member's block are sent to it, and its unvisited vertices with a claim
//!   join the level.
//!
//! Either way a member receives at most one bit per vertex a round (`n/8`
//! bytes), against four bytes per halo entry for an exchange of the levels;
//! the round ends with one all-reduce of the new level's size, which picks
//! the next direction ([`BfsDirection::Auto`]).

use super::distributed::GroupRun;
use super::driven::HYBRID_UP_BFS_CUDA;
use super::graph::Graph;
use crate::distributed::{DeviceGroup, ExchangeStats, PartitionKind, Transfer};
use crate::prelude::*;
use crate::runtime::{mem, Csr};
use crate::{split_one_task, DeviceVec, Error, LaunchConfig, OneTaskSplit, PreparedLaunch, Result};
use rayon::prelude::*;
use std::fmt;
use std::str::FromStr;
use std::time::Instant;
use warpfit_runtime::distribute::Ownership;

/// Which way each round of [`bfs_group`] searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BfsDirection {
    /// Direction-optimising: top-down while the frontier holds at most
    /// [`BFS_BOTTOM_UP_SHARE`] of the vertices, bottom-up while it holds
    /// more (Beamer's rule by vertices, as the single-device hybrid).
    #[default]
    Auto,
    /// Every round top-down.
    TopDown,
    /// Every round bottom-up.
    BottomUp,
}

/// The frontier share of the vertices past which [`BfsDirection::Auto`]
/// searches bottom-up: the single-device hybrid's switch on CUDA.
pub const BFS_BOTTOM_UP_SHARE: f64 = HYBRID_UP_BFS_CUDA;

impl BfsDirection {
    /// The name `--direction` takes.
    pub fn name(self) -> &'static str {
        match self {
            BfsDirection::Auto => "auto",
            BfsDirection::TopDown => "top-down",
            BfsDirection::BottomUp => "bottom-up",
        }
    }

    /// Whether a round after a frontier of `frontier` of `n` vertices runs
    /// bottom-up.
    fn bottom_up(self, frontier: usize, n: usize) -> bool {
        match self {
            BfsDirection::Auto => frontier as f64 > BFS_BOTTOM_UP_SHARE * n as f64,
            BfsDirection::TopDown => false,
            BfsDirection::BottomUp => true,
        }
    }
}

impl fmt::Display for BfsDirection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BfsDirection {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(BfsDirection::Auto),
            "top-down" => Ok(BfsDirection::TopDown),
            "bottom-up" => Ok(BfsDirection::BottomUp),
            other => Err(Error::invalid(format!(
                "unknown BFS direction `{other}`: expected auto, top-down or bottom-up"
            ))),
        }
    }
}

// ---------------------------------------------------------------------------
// Kernels. `depth` is a one-element array (the level a round assigns), so
// that one prepared launch serves every round: `bfs_next_depth` advances it
// on the device.

/// `depth[0] += 1`: the next round's level.
#[nested_reduce]
pub fn bfs_next_depth(i: usize, depth: &mut [u32]) {
    depth[i] += 1;
}

/// `out[w] = 0`: clears a bitmap.
#[nested_reduce]
pub fn bfs_clear_words(w: usize, out: &mut [u32]) {
    out[w] = 0;
}

/// Word `w` of the part-major frontier bitmap: in this member's block
/// (`words` words from `lo_word`) bit `i` is set when owned vertex `32·(w −
/// lo_word) + i` (of `n`) is on the frontier, level `depth[0] − 1`; every
/// other word is 0 (the other blocks arrive by transfer).
#[nested_reduce]
pub fn bfs_frontier_bits(
    w: usize,
    lo_word: u32,
    n: u32,
    level: &[i32],
    depth: &[u32],
    bits: &mut [u32],
) {
    let base = lo_word as usize;
    let mine = w >= base && (w - base) * 32 < n as usize;
    let lo = if mine { (w - base) * 32 } else { 0 };
    let hi = if mine { (lo + 32).min(n as usize) } else { 0 };
    let on = depth[0] as i32 - 1;
    bits[w] = (lo..hi)
        .map(|i| {
            if level[i] == on {
                1u32 << (i - lo)
            } else {
                0u32
            }
        })
        .fold(0u32, |a, b| a | b);
}

/// Bottom-up: an unvisited owned vertex `v` with an in-neighbour on the
/// frontier (`bit[e]`: the frontier bit of in-edge `e`'s source) joins
/// level `depth[0]`. The search stops at the first such neighbour, and a
/// visited vertex's at its first edge. (A task's range must not depend on
/// arrays a launch writes: a prepared launch splits long rows once, by
/// their ranges then.)
#[nested_reduce]
pub fn bfs_bits_bottom_up(
    v: usize,
    ptr: &[u32],
    bit: &[u32],
    frontier: &[u32],
    depth: &[u32],
    level: &mut [i32],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let visited = level[v] >= 0;
    let found =
        (lo..hi).any(|e| visited || ((frontier[(bit[e] >> 5) as usize] >> (bit[e] & 31)) & 1) == 1);
    if found && !visited {
        level[v] = depth[0] as i32;
    }
}

/// Top-down: an owned vertex on the frontier (level `depth[0] − 1`) sets
/// each out-neighbour's bit (`bit[e]`) in `claimed`; a bit already set is
/// not written again. Every vertex walks its range (fixed, see
/// [`fn@bfs_bits_bottom_up`]), but only the frontier's edges read or write.
#[nested_reduce]
pub fn bfs_bits_top_down(
    v: usize,
    ptr: &[u32],
    bit: &[u32],
    level: &[i32],
    depth: &[u32],
    claimed: &[Atomic<u32>],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    let on = level[v] == depth[0] as i32 - 1;
    (lo..hi).for_each(|e| {
        if on {
            let w = (bit[e] >> 5) as usize;
            let m = 1u32 << (bit[e] & 31);
            if (claimed[w].load() & m) == 0 {
                atomic_or(&claimed[w], m);
            }
        }
    });
}

/// After a top-down round: an unvisited owned vertex `v` joins level
/// `depth[0]` when its bit is set in this member's claims (`mine`, bit
/// `first_bit + v`) or in any other member's: `got` holds one block of
/// `stride` words per member, vertex `v` at bit `v` of each (this member's
/// own block is never written, so 0).
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
pub fn bfs_bits_apply(
    v: usize,
    first_bit: u32,
    stride: u32,
    parts: u32,
    mine: &[u32],
    got: &[u32],
    depth: &[u32],
    level: &mut [i32],
) {
    let b = first_bit as usize + v;
    let own = ((mine[b >> 5] >> (b & 31)) & 1) == 1;
    let done = level[v] >= 0 || own;
    let found = (0..parts as usize)
        .any(|q| done || ((got[q * stride as usize + (v >> 5)] >> (v & 31)) & 1) == 1);
    if level[v] < 0 && (own || found) {
        level[v] = depth[0] as i32;
    }
}

/// `out[t]`: how many of the `n` entries of `level` equal `depth[0]` (one
/// task, launched split over the device): the new level's size.
#[nested_reduce]
pub fn bfs_count_level(t: usize, n: u32, level: &[i32], depth: &[u32], out: &mut [u32]) {
    let d = depth[0] as i32;
    out[t] = (0..n as usize)
        .map(|i| if level[i] == d { 1u32 } else { 0u32 })
        .fold(0, |a, b| a + b);
}

// ---------------------------------------------------------------------------
// The host side.

/// The split of the vertices and every member's edges as bits.
struct BitPlan {
    /// Global vertex ids of each member's vertices, ascending (local index
    /// order).
    owned: Vec<Vec<u32>>,
    /// First word of each member's block in the part-major bitmap.
    first_word: Vec<usize>,
    /// Words of the whole bitmap.
    total_words: usize,
    /// Words of the largest block.
    stride: usize,
}

impl BitPlan {
    fn new(own: &Ownership) -> Result<Self> {
        let parts = own.parts();
        let mut owned: Vec<Vec<u32>> = vec![Vec::new(); parts];
        for (v, &p) in own.task_owner().iter().enumerate() {
            owned[p as usize].push(v as u32);
        }
        let mut first_word = Vec::with_capacity(parts);
        let mut total_words = 0usize;
        for o in &owned {
            first_word.push(total_words);
            total_words += o.len().div_ceil(32);
        }
        if total_words.saturating_mul(32) > u32::MAX as usize {
            return Err(Error::invalid(format!(
                "a group BFS numbers vertex bits in u32: {} words of bitmap are too many",
                total_words
            )));
        }
        let stride = owned
            .iter()
            .map(|o| o.len().div_ceil(32))
            .max()
            .unwrap_or(0);
        Ok(BitPlan {
            owned,
            first_word,
            total_words,
            stride,
        })
    }

    /// Each vertex's bit in the part-major bitmap.
    fn bit_of_vertex(&self, n: usize) -> Result<Vec<u32>> {
        let mut bit = mem::try_filled("the vertices' frontier bits", n, 0u32)?;
        for (o, &w) in self.owned.iter().zip(&self.first_word) {
            for (i, &v) in o.iter().enumerate() {
                bit[v as usize] = (32 * w + i) as u32;
            }
        }
        Ok(bit)
    }

    /// Member `p`'s rows of `a`: the local range array and each entry's
    /// column as its bit.
    fn member_rows(&self, p: usize, a: &Csr<f32>, bit: &[u32]) -> Result<(Vec<u32>, Vec<u32>)> {
        let (row_ptr, col) = (a.row_ptr(), a.col_idx());
        let rows = &self.owned[p];
        let mut ptr = Vec::new();
        mem::try_reserve(&mut ptr, rows.len() + 1, "a member's range array")?;
        ptr.push(0u32);
        for &v in rows {
            let len = row_ptr[v as usize + 1] - row_ptr[v as usize];
            ptr.push(ptr[ptr.len() - 1] + len);
        }
        let nnz = ptr[ptr.len() - 1] as usize;
        let mut bits = mem::try_filled("a member's edge bits", nnz, 0u32)?;
        let mut rest = &mut bits[..];
        let mut slices = Vec::with_capacity(rows.len());
        for &v in rows {
            let (lo, hi) = (
                row_ptr[v as usize] as usize,
                row_ptr[v as usize + 1] as usize,
            );
            let (head, tail) = rest.split_at_mut(hi - lo);
            slices.push((head, &col[lo..hi]));
            rest = tail;
        }
        slices.into_par_iter().for_each(|(out, cols)| {
            for (o, &c) in out.iter_mut().zip(cols) {
                *o = bit[c as usize];
            }
        });
        Ok((ptr, bits))
    }

    /// The grouped sends of the frontier's all-gather: every block to every
    /// other member, at the same place.
    fn gather(&self) -> Vec<Transfer> {
        let parts = self.owned.len();
        let mut t = Vec::new();
        for q in 0..parts {
            let len = self.owned[q].len().div_ceil(32);
            for p in (0..parts).filter(|&p| p != q && len > 0) {
                t.push(Transfer {
                    from: q,
                    to: p,
                    src_offset: self.first_word[q],
                    dst_offset: self.first_word[q],
                    len,
                });
            }
        }
        t
    }

    /// The grouped sends of the claims: member `q`'s claims on member
    /// `p`'s block into `p`'s `got` at block `q`.
    fn claims(&self) -> Vec<Transfer> {
        let parts = self.owned.len();
        let mut t = Vec::new();
        for p in 0..parts {
            let len = self.owned[p].len().div_ceil(32);
            for q in (0..parts).filter(|&q| q != p && len > 0) {
                t.push(Transfer {
                    from: q,
                    to: p,
                    src_offset: self.first_word[p],
                    dst_offset: q * self.stride,
                    len,
                });
            }
        }
        t
    }
}

/// Whether every edge `u → v` of `a` has its mirror `v → u` (rows sorted
/// or not), checked by all cores.
fn pattern_symmetric(a: &Csr<f32>) -> bool {
    let sorted = a.has_sorted_columns();
    (0..a.nrows()).into_par_iter().all(|i| {
        a.row(i).0.iter().all(|&j| {
            let cols = a.row(j as usize).0;
            if sorted {
                cols.binary_search(&(i as u32)).is_ok()
            } else {
                cols.contains(&(i as u32))
            }
        })
    })
}

/// One member's arrays.
struct Member {
    in_ptr: DeviceVec<u32>,
    in_bit: DeviceVec<u32>,
    /// Out-edges, when the graph is not symmetric (else the in-edges).
    out: Option<(DeviceVec<u32>, DeviceVec<u32>)>,
    level: DeviceVec<i32>,
    frontier: DeviceVec<u32>,
    claimed: DeviceVec<u32>,
    got: DeviceVec<u32>,
    depth: DeviceVec<u32>,
    count: DeviceVec<u32>,
}

impl Member {
    fn out_edges(&self) -> (&DeviceVec<u32>, &DeviceVec<u32>) {
        match &self.out {
            Some((p, b)) => (p, b),
            None => (&self.in_ptr, &self.in_bit),
        }
    }
}

/// The arrays of every member: edges as bits, levels, bitmaps.
fn upload_members(
    group: &DeviceGroup,
    plan: &BitPlan,
    g: &Graph,
    source: usize,
) -> Result<Vec<Member>> {
    let n = g.incoming.nrows();
    let bit = plan.bit_of_vertex(n)?;
    // Top-down follows out-edges: the in-edges' transpose, unless the
    // pattern is symmetric.
    let outgoing = (!pattern_symmetric(&g.incoming)).then(|| g.incoming.transpose());
    let words = plan.total_words.max(1);
    let mut members = Vec::with_capacity(group.len());
    for (p, dev) in group.devices().iter().enumerate() {
        let (ptr, bits) = plan.member_rows(p, &g.incoming, &bit)?;
        let (in_ptr, in_bit) = (dev.upload(&ptr)?, dev.upload(&bits)?);
        drop((ptr, bits));
        let out = match &outgoing {
            Some(o) => {
                let (ptr, bits) = plan.member_rows(p, o, &bit)?;
                Some((dev.upload(&ptr)?, dev.upload(&bits)?))
            }
            None => None,
        };
        let level: Vec<i32> = plan.owned[p]
            .iter()
            .map(|&v| if v as usize == source { 0 } else { -1 })
            .collect();
        members.push(Member {
            in_ptr,
            in_bit,
            out,
            level: dev.upload(&level)?,
            frontier: dev.upload(&vec![0u32; words])?,
            claimed: dev.upload(&vec![0u32; words])?,
            got: dev.upload(&vec![0u32; (group.len() * plan.stride).max(1)])?,
            depth: dev.upload(&[0u32])?,
            count: dev.upload(&[0u32])?,
        });
    }
    Ok(members)
}

/// One member's prepared launches.
struct Launches<'a> {
    next_depth: PreparedLaunch<'a>,
    clear: PreparedLaunch<'a>,
    top_down: PreparedLaunch<'a>,
    apply: PreparedLaunch<'a>,
    frontier: PreparedLaunch<'a>,
    bottom_up: PreparedLaunch<'a>,
    count: PreparedLaunch<'a>,
}

impl<'a> Launches<'a> {
    fn prepare(
        group: &'a DeviceGroup,
        config: &LaunchConfig,
        plan: &BitPlan,
        p: usize,
        m: &'a Member,
        split: &'a OneTaskSplit,
    ) -> Result<Self> {
        let dev = &group.devices()[p];
        let n = plan.owned[p].len();
        let to_u32 = |what: &str, v: usize| {
            u32::try_from(v).map_err(|_| Error::invalid(format!("{what} {v} does not fit u32")))
        };
        let words = m.frontier.len();
        let (out_ptr, out_bit) = m.out_edges();
        Ok(Launches {
            next_depth: bfs_next_depth::prepare(dev, config, 1, &m.depth)?,
            clear: bfs_clear_words::prepare(dev, config, words, &m.claimed)?,
            top_down: bfs_bits_top_down::prepare(
                dev, config, n, out_ptr, out_bit, &m.level, &m.depth, &m.claimed,
            )?,
            apply: bfs_bits_apply::prepare(
                dev,
                config,
                n,
                to_u32("a member's first bit", 32 * plan.first_word[p])?,
                to_u32("the bitmap's block stride", plan.stride)?,
                to_u32("the group's size", group.len())?,
                &m.claimed,
                &m.got,
                &m.depth,
                &m.level,
            )?,
            frontier: bfs_frontier_bits::prepare(
                dev,
                config,
                words,
                to_u32("a member's first word", plan.first_word[p])?,
                to_u32("a member's vertices", n)?,
                &m.level,
                &m.depth,
                &m.frontier,
            )?,
            bottom_up: bfs_bits_bottom_up::prepare(
                dev,
                config,
                n,
                &m.in_ptr,
                &m.in_bit,
                &m.frontier,
                &m.depth,
                &m.level,
            )?,
            count: bfs_count_level::prepare(
                dev,
                &split.config,
                &split.tasks,
                n as u32,
                &m.level,
                &m.depth,
                &m.count,
            )?,
        })
    }

    fn all(&self) -> [&PreparedLaunch<'a>; 7] {
        [
            &self.next_depth,
            &self.clear,
            &self.top_down,
            &self.apply,
            &self.frontier,
            &self.bottom_up,
            &self.count,
        ]
    }
}

/// Breadth-first levels from `source` on `group` (`-1`: unreachable),
/// direction-optimising by default (`docs/distributed.md`, "BFS", for the rounds
/// and what they move). Equals [`super::bfs`]'s levels exactly, in every
/// direction; `iterations` is the rounds run (the last finds nothing), and
/// `detail` says how many ran each way.
///
/// # Errors
/// `source` not a vertex; a graph whose bitmap does not fit u32 bit
/// indices; a member out of memory; a failed launch or transfer.
pub fn bfs_group(
    group: &DeviceGroup,
    kind: PartitionKind,
    config: &LaunchConfig,
    g: &Graph,
    source: usize,
    direction: BfsDirection,
) -> Result<GroupRun<i32>> {
    let inc = &g.incoming;
    let n = inc.nrows();
    if source >= n {
        return Err(Error::invalid(format!(
            "BFS source {source} is not a vertex of a graph of {n}"
        )));
    }
    let start = Instant::now();
    let own = Ownership::new(kind, group.len(), inc.row_ptr(), inc.col_idx(), n)?;
    let plan = BitPlan::new(&own)?;
    let members = upload_members(group, &plan, g, source)?;
    let splits = (0..group.len())
        .map(|p| split_one_task(&group.devices()[p], 0, 0..plan.owned[p].len()))
        .collect::<Result<Vec<_>>>()?;
    let launches = (0..group.len())
        .map(|p| Launches::prepare(group, config, &plan, p, &members[p], &splits[p]))
        .collect::<Result<Vec<_>>>()?;
    let (gather, claims) = (plan.gather(), plan.claims());
    let frontier: Vec<&DeviceVec<u32>> = members.iter().map(|m| &m.frontier).collect();
    let claimed: Vec<&DeviceVec<u32>> = members.iter().map(|m| &m.claimed).collect();
    let got: Vec<&DeviceVec<u32>> = members.iter().map(|m| &m.got).collect();
    let counts: Vec<&DeviceVec<u32>> = members.iter().map(|m| &m.count).collect();
    let setup = start.elapsed();
    let (mut steps, mut size, mut rounds) = (Vec::new(), 1usize, [0usize; 2]);
    loop {
        let t = Instant::now();
        let up = direction.bottom_up(size, n);
        for l in &launches {
            l.next_depth.run()?;
        }
        if up {
            for l in &launches {
                l.frontier.run()?;
            }
            group.transfer(&frontier, &frontier, &gather)?;
            for l in &launches {
                l.bottom_up.run()?;
            }
        } else {
            for l in &launches {
                l.clear.run()?;
                l.top_down.run()?;
            }
            group.transfer(&claimed, &got, &claims)?;
            for l in &launches {
                l.apply.run()?;
            }
        }
        for l in &launches {
            l.count.run()?;
        }
        group.all_reduce_sum(&counts, 0..1)?;
        group.synchronize()?;
        let mut c = [0u32];
        members[0].count.download(&mut c)?;
        rounds[usize::from(up)] += 1;
        steps.push(t.elapsed());
        size = c[0] as usize;
        // A graph has at most n levels.
        if size == 0 || rounds[0] + rounds[1] > n {
            break;
        }
    }
    for l in &launches {
        l.all().into_iter().try_for_each(PreparedLaunch::check)?;
    }
    let levels = members
        .iter()
        .map(|m| m.level.to_vec())
        .collect::<Result<Vec<_>>>()?;
    let mut result = mem::try_filled("the BFS levels", n, -1i32)?;
    for (o, l) in plan.owned.iter().zip(&levels) {
        for (&v, &x) in o.iter().zip(l) {
            result[v as usize] = x;
        }
    }
    let received: Vec<usize> = plan.owned.iter().map(|o| n - o.len()).collect();
    let kib = plan.total_words as f64 * 4.0 / 1024.0;
    Ok(GroupRun {
        result,
        group: group.describe(),
        setup,
        steps,
        exchange: ExchangeStats {
            entries: received.iter().sum(),
            max_entries: received.iter().copied().max().unwrap_or(0),
            x_len: n,
            messages: gather.len(),
            replication: 0,
        },
        iterations: rounds[0] + rounds[1],
        relative_residual: 0.0,
        detail: format!(
            "rounds: {} top-down, {} bottom-up; frontier bitmap {kib:.1} KiB, \
             each member receives at most {:.1} KiB a round",
            rounds[0],
            rounds[1],
            plan.stride as f64 * 4.0 * (group.len() - 1) as f64 / 1024.0
        ),
    })
}

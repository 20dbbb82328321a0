//! Road-network-like graphs: a 2D grid with random positive weights and a
//! fraction of its edges removed. Like a road network it is planar, has
//! degrees of at most 4 and a diameter that grows like the side (a
//! `side × side` grid has about `2·side` BFS levels), which is what makes
//! data-driven graph algorithms differ from topology-driven ones (Nasre,
//! Burtscher and Pingali); RMAT is the power-law opposite.

use crate::error::to_u32;
use crate::rng::{chunk_rng, EDGES, PERMUTATION};
use crate::sparse::Csr;
use crate::{Error, Result};
use rand::RngCore;
use rayon::prelude::*;

/// Edges (or vertices, for the numbering) generated per random stream; fixed,
/// so the output does not depend on the number of threads.
const CHUNK: usize = 1 << 16;

/// Vertex numbering of [`road`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RoadOrder {
    /// Vertex `i·side + j` is grid point `(i, j)`: neighbours at distances 1
    /// and `side`, a banded matrix with perfect locality.
    Natural,
    /// The natural graph renumbered by a random permutation (rows and columns
    /// alike): the same graph without locality, like a road network read
    /// in file order (the default).
    #[default]
    Random,
}

impl std::fmt::Display for RoadOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RoadOrder::Natural => "natural",
            RoadOrder::Random => "random",
        })
    }
}

/// A road-network-like graph: the `side × side` grid (`side²` vertices, each
/// joined to its up to four horizontal and vertical neighbours) with every
/// one of its `2·side·(side − 1)` undirected edges removed with probability
/// `drop` and the others given a weight uniform in (0, 1] (24 random bits,
/// never zero). The matrix is symmetric (edge `u — v` is the two entries
/// `(u, v)` and `(v, u)`, of the same weight), has no self loops, sorted rows
/// and at most 4 entries per row; it holds `4·side·(side − 1)·(1 − drop)`
/// entries on average. With [`RoadOrder::Random`], vertices are renumbered
/// by a random permutation.
///
/// Deterministic for a given `(side, drop, seed, order)` on every machine and
/// thread count: edge `e` (horizontal edges `(i, j) — (i, j + 1)` first, row
/// by row, then the vertical ones `(i, j) — (i + 1, j)`) takes one 64-bit draw
/// of the stream of its chunk of 2^16 edges, whose low 32 bits decide its
/// removal (removed when below `drop · 2^32`) and whose high bits give its
/// weight; the permutation sorts the vertices by one 64-bit draw each (ties
/// by vertex), so both are generated in parallel.
///
/// # Errors
/// `drop` outside `[0, 1]` (or NaN), `side²` vertices or the entry count
/// beyond u32, and the memory budget ([`crate::mem::check`]).
///
/// # Examples
/// ```
/// use warpfit_runtime::gen::{road, RoadOrder};
/// let g = road(64, 0.15, 1, RoadOrder::Random)?;
/// assert_eq!(g.nrows(), 64 * 64);
/// assert!(g.is_symmetric());
/// assert!((0..g.nrows()).all(|v| g.row_range(v).len() <= 4));
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
pub fn road(side: usize, drop: f64, seed: u64, order: RoadOrder) -> Result<Csr<f32>> {
    if !(0.0..=1.0).contains(&drop) {
        return Err(Error::invalid(format!(
            "road: drop = {drop} must lie in [0, 1] (the fraction of grid edges removed)"
        )));
    }
    let n = super::side_power("road vertices", side, 2)?;
    // Undirected grid edges, and the entries if none is removed.
    let edges = 2 * side * side.saturating_sub(1);
    to_u32("road entries (4·side·(side − 1))", 2 * edges)?;
    let permutation = match order {
        RoadOrder::Natural => 0,
        // Sort keys (vertex, draw), the permutation and its inverse.
        RoadOrder::Random => 24 * n as u64,
    };
    crate::mem::check(
        &format!("road:side={side},order={order} (weights, CSR and numbering)"),
        (4 * edges as u64)
            .saturating_add(4 * n as u64 + 4)
            .saturating_add(16 * edges as u64)
            .saturating_add(permutation),
    )?;

    // The weight of every grid edge; 0 marks a removed edge.
    let threshold = (drop * 4294967296.0).round() as u64; // ≤ 2^32
    let mut weight = vec![0f32; edges];
    weight
        .par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(chunk, ws)| {
            let mut rng = chunk_rng(seed, EDGES, chunk as u64);
            for w in ws {
                let draw = rng.next_u64();
                *w = if (draw & 0xffff_ffff) < threshold {
                    0.0
                } else {
                    // The high 24 bits, plus one: a multiple of 2^-24 in (0, 1].
                    ((draw >> 40) + 1) as f32 * (1.0 / (1u32 << 24) as f32)
                };
            }
        });
    let grid = Grid {
        side,
        horizontal: side * side.saturating_sub(1),
        weight: &weight,
    };

    // `old_of[new]` and `new_of[old]`: the numbering.
    let (old_of, new_of) = match order {
        RoadOrder::Natural => (None, None),
        RoadOrder::Random => {
            let (old_of, new_of) = random_numbering(n, seed);
            (Some(old_of), Some(new_of))
        }
    };
    let old = |new: usize| old_of.as_ref().map_or(new, |o| o[new] as usize);
    let label = |v: usize| new_of.as_ref().map_or(v as u32, |p| p[v]);

    let mut row_ptr = Vec::with_capacity(n + 1);
    row_ptr.push(0u32);
    let degrees: Vec<u8> = (0..n)
        .into_par_iter()
        .map(|new| grid.degree(old(new)))
        .collect();
    let mut total = 0u32;
    for d in degrees {
        // At most 2·edges, which fits u32 (checked above).
        total += d as u32;
        row_ptr.push(total);
    }
    let mut col_idx = vec![0u32; total as usize];
    let mut values = vec![0f32; total as usize];
    crate::sparse::par_rows_mut(&row_ptr, &mut col_idx, &mut values, |rows, cols, vals| {
        let base = row_ptr[rows.start] as usize;
        let mut row: Vec<(u32, f32)> = Vec::with_capacity(4);
        for new in rows {
            row.clear();
            grid.neighbours(old(new), |v, w| row.push((label(v), w)));
            // Natural order lists neighbours ascending already.
            if new_of.is_some() {
                row.sort_unstable_by_key(|e| e.0);
            }
            let at = row_ptr[new] as usize - base;
            for (k, &(c, w)) in row.iter().enumerate() {
                cols[at + k] = c;
                vals[at + k] = w;
            }
        }
    });
    Ok(Csr::from_parts_unchecked(n, n, row_ptr, col_idx, values))
}

/// The grid's edges and weights.
struct Grid<'a> {
    side: usize,
    /// Number of horizontal edges; vertical edge `(i, j) — (i + 1, j)` is
    /// `horizontal + i·side + j`.
    horizontal: usize,
    weight: &'a [f32],
}

impl Grid<'_> {
    /// Calls `f(neighbour, weight)` for the kept edges of vertex `v` in
    /// ascending neighbour order (up, left, right, down).
    #[inline]
    fn neighbours(&self, v: usize, mut f: impl FnMut(usize, f32)) {
        let s = self.side;
        let (i, j) = (v / s, v % s);
        let mut edge = |e: usize, u: usize| {
            let w = self.weight[e];
            if w > 0.0 {
                f(u, w);
            }
        };
        if i > 0 {
            edge(self.horizontal + (i - 1) * s + j, v - s);
        }
        if j > 0 {
            edge(i * (s - 1) + j - 1, v - 1);
        }
        if j + 1 < s {
            edge(i * (s - 1) + j, v + 1);
        }
        if i + 1 < s {
            edge(self.horizontal + i * s + j, v + s);
        }
    }

    fn degree(&self, v: usize) -> u8 {
        let mut d = 0;
        self.neighbours(v, |_, _| d += 1);
        d
    }
}

/// A uniformly random numbering of `0..n` (up to ties among 64-bit draws,
/// broken by vertex): the vertices sorted by one draw each, drawn per chunk
/// of [`CHUNK`] vertices. Returns `(old_of, new_of)`.
fn random_numbering(n: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let mut keys: Vec<(u64, u32)> = vec![(0, 0); n];
    keys.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(chunk, ks)| {
            let mut rng = chunk_rng(seed, PERMUTATION, chunk as u64);
            for (k, slot) in ks.iter_mut().enumerate() {
                // n fits u32 (checked by the caller).
                *slot = (rng.next_u64(), (chunk * CHUNK + k) as u32);
            }
        });
    keys.par_sort_unstable();
    let old_of: Vec<u32> = keys.par_iter().map(|&(_, v)| v).collect();
    drop(keys);
    let mut new_of = vec![0u32; n];
    for (new, &old) in old_of.iter().enumerate() {
        new_of[old as usize] = new as u32;
    }
    (old_of, new_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_is_a_permutation_and_its_inverse() {
        for n in [0usize, 1, 5, 70_000] {
            let (old_of, new_of) = random_numbering(n, 3);
            let mut seen = vec![false; n];
            for (new, &old) in old_of.iter().enumerate() {
                assert!(!seen[old as usize]);
                seen[old as usize] = true;
                assert_eq!(new_of[old as usize] as usize, new);
            }
        }
        assert_ne!(random_numbering(1000, 1).0, random_numbering(1000, 2).0);
    }

    #[test]
    fn grid_neighbours_are_the_four_sides() {
        let weight = vec![1.0f32; 2 * 3 * 2];
        let g = Grid {
            side: 3,
            horizontal: 6,
            weight: &weight,
        };
        let around = |v| {
            let mut out = Vec::new();
            g.neighbours(v, |u, _| out.push(u));
            out
        };
        assert_eq!(around(0), [1, 3]);
        assert_eq!(around(4), [1, 3, 5, 7]);
        assert_eq!(around(8), [5, 7]);
        assert_eq!(around(5), [2, 4, 8]);
    }
}

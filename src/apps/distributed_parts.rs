//! Graphs made part by part for a device group: no array of the whole
//! graph is ever held, so a graph past one u32-indexed CSR (RMAT 28 has
//! 4.3G edges) runs on a group whose parts each fit one.

use super::distributed::{pagerank_on, GroupRun};
use super::graph::PageRankOptions;
use crate::distributed::{DeviceGroup, Distributed, Distribution, WHOLE_BLOCK_SHARE};
use crate::runtime::gen::{rmat_row_blocks, RmatSide};
use crate::runtime::Csr;
use crate::{Error, LaunchConfig, Result};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::time::Instant;

/// A graph held as contiguous blocks of vertices, one per member of a
/// group: each block's in-edges (row `r` of block `p` is the vertex
/// `first(p) + r`, its columns the sources' global ids) and every vertex's
/// out-degree.
#[derive(Debug, Clone)]
pub struct GraphParts {
    incoming: Vec<Csr<f32>>,
    out_degree: Vec<u32>,
}

impl GraphParts {
    /// From blocks already made: `incoming[p]` the in-edges of the `p`-th
    /// block of vertices (blocks in vertex order), `out_degree` of every
    /// vertex.
    ///
    /// # Errors
    /// No block; a block whose columns are not the graph's vertices (its
    /// column count not the total of the blocks' rows); `out_degree` not one
    /// per vertex.
    pub fn new(incoming: Vec<Csr<f32>>, out_degree: Vec<u32>) -> Result<Self> {
        let n: usize = incoming.iter().map(Csr::nrows).sum();
        if incoming.is_empty() {
            return Err(Error::invalid("a graph in parts needs at least one block"));
        }
        if let Some(p) = incoming.iter().position(|b| b.ncols() != n) {
            return Err(Error::invalid(format!(
                "block {p} of a graph in parts has {} columns; its blocks' rows total {n} vertices",
                incoming[p].ncols()
            )));
        }
        if out_degree.len() != n {
            return Err(Error::length(
                "out-degrees (one per vertex)",
                n,
                out_degree.len(),
            ));
        }
        Ok(GraphParts {
            incoming,
            out_degree,
        })
    }

    /// `rmat(scale, edge_factor, seed)` as a graph (an entry `(u, v)` is
    /// the edge `u → v`) in `parts` equal blocks of vertices, made in one
    /// pass without the whole matrix ([`rmat_row_blocks`]): each block's
    /// in-edges (the transpose's rows); the out-degrees counted from them.
    /// Equal to
    /// [`Graph::from_matrix`](super::Graph::from_matrix) of the whole RMAT,
    /// cut (values aside: PageRank reads none).
    ///
    /// # Errors
    /// `parts` is 0 or above `2^scale`; as [`rmat_row_blocks`] (a block's
    /// entries past u32: more parts needed); the memory budget.
    pub fn rmat(scale: u32, edge_factor: usize, seed: u64, parts: usize) -> Result<Self> {
        let n = 1usize
            .checked_shl(scale)
            .filter(|_| scale <= 31)
            .ok_or_else(|| Error::invalid(format!("rmat scale {scale} is above 31")))?;
        if parts == 0 || parts > n {
            return Err(Error::invalid(format!(
                "a graph of {n} vertices cannot be cut into {parts} blocks"
            )));
        }
        // One pass: every block's in-edges (rows of the transpose), then
        // each vertex's out-degree as the count of its column entries.
        let bounds: Vec<usize> = (0..=parts).map(|p| p * n / parts).collect();
        let incoming = rmat_row_blocks(scale, edge_factor, seed, &bounds, RmatSide::Targets)?;
        crate::runtime::mem::check("the out-degree counts", 4 * n as u64)?;
        let counts: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
        for b in &incoming {
            b.col_idx().par_chunks(1 << 16).for_each(|c| {
                for &u in c {
                    counts[u as usize].fetch_add(1, Relaxed);
                }
            });
        }
        let out_degree = counts.into_iter().map(AtomicU32::into_inner).collect();
        GraphParts::new(incoming, out_degree)
    }

    /// The distribution of the blocks' in-edges, one part per block
    /// ([`Distribution::from_row_blocks`], whole blocks where a member
    /// reads most of another's, as [`pagerank_group_parts`] makes it). Made
    /// once, it can be placed on several groups in turn
    /// ([`Distributed::from_distribution`],
    /// [`Distributed::into_distribution`]) for [`pagerank_on_parts`].
    ///
    /// # Errors
    /// As [`Distribution::from_row_blocks`].
    pub fn distribution(&self) -> Result<Distribution> {
        let blocks: Vec<(&[u32], &[u32])> = self
            .incoming
            .iter()
            .map(|b| (b.row_ptr(), b.col_idx()))
            .collect();
        Distribution::from_row_blocks(&blocks)?.with_whole_blocks(WHOLE_BLOCK_SHARE)
    }

    /// The vertices.
    pub fn vertices(&self) -> usize {
        self.out_degree.len()
    }

    /// The edges (entries of every block).
    pub fn edges(&self) -> u64 {
        self.incoming.iter().map(|b| b.nnz() as u64).sum()
    }

    /// The blocks' in-edges, in vertex order.
    pub fn incoming(&self) -> &[Csr<f32>] {
        &self.incoming
    }

    /// Every vertex's out-degree.
    pub fn out_degree(&self) -> &[u32] {
        &self.out_degree
    }
}

/// [`super::pagerank_group`] on a graph held in parts, one block per
/// member: the distribution is made from the blocks
/// ([`Distribution::from_row_blocks`]), never from the whole graph. The
/// ranks equal [`super::pagerank_group`]'s on the whole graph within
/// rounding (the dangling rank's f64 sum is added per member).
///
/// # Errors
/// The graph's block count not the group's size; as
/// [`super::pagerank_group`].
pub fn pagerank_group_parts(
    group: &DeviceGroup,
    config: &LaunchConfig,
    g: &GraphParts,
    opts: &PageRankOptions,
) -> Result<GroupRun<f32>> {
    parts_on_group(group, config, g, opts, false)
}

/// [`pagerank_group_parts`] with the exchange beside the pull, as
/// [`super::pagerank_group_overlapped`]: each member's owned block is
/// pulled while the halo is in flight.
///
/// # Errors
/// As [`pagerank_group_parts`].
pub fn pagerank_group_parts_overlapped(
    group: &DeviceGroup,
    config: &LaunchConfig,
    g: &GraphParts,
    opts: &PageRankOptions,
) -> Result<GroupRun<f32>> {
    parts_on_group(group, config, g, opts, true)
}

fn parts_on_group(
    group: &DeviceGroup,
    config: &LaunchConfig,
    g: &GraphParts,
    opts: &PageRankOptions,
    overlap: bool,
) -> Result<GroupRun<f32>> {
    if g.incoming.len() != group.len() {
        return Err(Error::length(
            "a graph's blocks (one per member of the group)",
            group.len(),
            g.incoming.len(),
        ));
    }
    let start = Instant::now();
    let d = Distributed::from_distribution(group, g.distribution()?)?;
    pagerank_on(&d, config, &g.out_degree, opts, start, overlap)
}

/// [`pagerank_group_parts`] on `g`'s distribution already placed on a
/// group (`d`, from [`GraphParts::distribution`]): the set-up it reports
/// is the launches' preparation only. One distribution of a graph too
/// large to make twice serves several groups in turn: one GPU per part
/// over NCCL, then the same parts several to a GPU
/// ([`DeviceGroup::cuda_parts`]), their ranks compared.
///
/// # Errors
/// `d` not made from a graph of `g`'s vertices (its task count); as
/// [`pagerank_group_parts`].
pub fn pagerank_on_parts(
    d: &Distributed<'_>,
    config: &LaunchConfig,
    g: &GraphParts,
    opts: &PageRankOptions,
) -> Result<GroupRun<f32>> {
    if d.distribution().n_tasks() != g.vertices() {
        return Err(Error::length(
            "a distributed graph's vertices",
            g.vertices(),
            d.distribution().n_tasks(),
        ));
    }
    pagerank_on(d, config, &g.out_degree, opts, Instant::now(), false)
}

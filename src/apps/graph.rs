//! Graph drivers over a matrix read as a directed graph: entry `(i, j)` is the
//! edge `i → j`. Kernels pull along in-edges, so each driver works on the
//! transposed pattern and every vertex is written by its own task.

use super::kernels::{bfs_step, pagerank_pull, relax};
use crate::runtime::Csr;
use crate::{Device, Error, LaunchConfig, Result};

/// In-edges of every vertex plus out-degrees, built once per matrix.
#[derive(Debug, Clone)]
pub struct Graph {
    /// Row `v` lists the sources `u` of the edges `u → v`; its values are the
    /// edge weights `|a(u, v)|` (1 for a pattern matrix).
    pub incoming: Csr<f32>,
    /// Number of out-edges of every vertex (stored entries of its row).
    pub out_degree: Vec<u32>,
}

impl Graph {
    /// Reads a square matrix as a graph.
    pub fn from_matrix(a: &Csr<f32>) -> Result<Self> {
        if a.nrows() != a.ncols() {
            return Err(Error::invalid(format!(
                "graph apps need a square matrix, got {} x {}",
                a.nrows(),
                a.ncols()
            )));
        }
        let mut incoming = a.transpose();
        incoming.values_mut().iter_mut().for_each(|w| *w = w.abs());
        let out_degree = a.row_ptr().windows(2).map(|w| w[1] - w[0]).collect();
        Ok(Graph {
            incoming,
            out_degree,
        })
    }

    /// Number of vertices.
    pub fn len(&self) -> usize {
        self.out_degree.len()
    }

    /// Whether the graph has no vertex.
    pub fn is_empty(&self) -> bool {
        self.out_degree.is_empty()
    }

    /// Number of edges.
    pub fn edges(&self) -> usize {
        self.incoming.nnz()
    }

    fn check_source(&self, source: usize) -> Result<()> {
        if source >= self.len() {
            return Err(Error::out_of_range("source vertex", source, self.len()));
        }
        Ok(())
    }
}

/// PageRank parameters.
#[derive(Debug, Clone, Copy)]
pub struct PageRankOptions {
    /// Probability of following an edge; the rest teleports uniformly.
    pub damping: f32,
    /// Number of pull iterations (fixed, no convergence test).
    pub iterations: usize,
}

impl Default for PageRankOptions {
    fn default() -> Self {
        PageRankOptions {
            damping: 0.85,
            iterations: 20,
        }
    }
}

/// PageRank by power iteration from the uniform vector `1/n`; the rank of
/// dangling vertices (no out-edge) is spread uniformly over all vertices.
pub fn pagerank(
    device: &Device,
    config: &LaunchConfig,
    g: &Graph,
    opts: PageRankOptions,
) -> Result<Vec<f32>> {
    pagerank_observed(device, config, g, opts, &mut |_| {})
}

/// [`pagerank`], calling `on_step(k)` after iteration `k` (from 1), for
/// progress reports.
pub fn pagerank_observed(
    device: &Device,
    config: &LaunchConfig,
    g: &Graph,
    opts: PageRankOptions,
    on_step: &mut dyn FnMut(usize),
) -> Result<Vec<f32>> {
    let n = g.len();
    if !(0.0..=1.0).contains(&opts.damping) {
        return Err(Error::invalid(format!(
            "damping must lie in [0, 1], got {}",
            opts.damping
        )));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut rank = vec![1.0 / n as f32; n];
    let mut next = vec![0.0f32; n];
    let mut contrib = vec![0.0f32; n];
    for iteration in 1..=opts.iterations {
        let mut dangling = 0.0f64;
        for ((c, &r), &d) in contrib.iter_mut().zip(&rank).zip(&g.out_degree) {
            if d == 0 {
                dangling += r as f64;
                *c = 0.0;
            } else {
                *c = r / d as f32;
            }
        }
        let d = opts.damping as f64;
        let base = ((1.0 - d) / n as f64 + d * dangling / n as f64) as f32;
        pagerank_pull::launch_with(
            device,
            config,
            n,
            g.incoming.row_ptr(),
            g.incoming.col_idx(),
            &contrib,
            base,
            opts.damping,
            &mut next,
        )?;
        std::mem::swap(&mut rank, &mut next);
        on_step(iteration);
    }
    Ok(rank)
}

/// Single-source shortest paths by Bellman-Ford relaxation to a fixed point.
/// Weights are `|a(u, v)|`; unreachable vertices stay at `f32::INFINITY`.
/// Returns the distances and the number of relaxation rounds.
pub fn sssp(
    device: &Device,
    config: &LaunchConfig,
    g: &Graph,
    source: usize,
) -> Result<(Vec<f32>, usize)> {
    sssp_observed(device, config, g, source, &mut |_| {})
}

/// [`sssp`], calling `on_step(round)` after each relaxation round.
pub fn sssp_observed(
    device: &Device,
    config: &LaunchConfig,
    g: &Graph,
    source: usize,
    on_step: &mut dyn FnMut(usize),
) -> Result<(Vec<f32>, usize)> {
    g.check_source(source)?;
    let n = g.len();
    let mut dist = vec![f32::INFINITY; n];
    dist[source] = 0.0;
    let mut next = dist.clone();
    // Non-negative weights converge in at most n - 1 rounds; one more proves it.
    for round in 1..=n {
        relax::launch_with(
            device,
            config,
            n,
            g.incoming.row_ptr(),
            g.incoming.col_idx(),
            g.incoming.values(),
            &dist,
            &mut next,
        )?;
        let changed = next.iter().zip(&dist).any(|(a, b)| a != b);
        std::mem::swap(&mut dist, &mut next);
        on_step(round);
        if !changed {
            return Ok((dist, round));
        }
    }
    Ok((dist, n))
}

/// Breadth-first levels from `source`; unreachable vertices get -1.
/// Returns the levels and the number of steps.
pub fn bfs(
    device: &Device,
    config: &LaunchConfig,
    g: &Graph,
    source: usize,
) -> Result<(Vec<i32>, usize)> {
    bfs_observed(device, config, g, source, &mut |_| {})
}

/// [`bfs`], calling `on_step(k)` after step `k` (from 1).
pub fn bfs_observed(
    device: &Device,
    config: &LaunchConfig,
    g: &Graph,
    source: usize,
    on_step: &mut dyn FnMut(usize),
) -> Result<(Vec<i32>, usize)> {
    g.check_source(source)?;
    let n = g.len();
    let max_depth = i32::try_from(n)
        .map_err(|_| Error::invalid(format!("BFS levels are i32: {n} vertices are too many")))?;
    let mut level = vec![-1i32; n];
    level[source] = 0;
    let mut next = level.clone();
    for depth in 0..max_depth {
        bfs_step::launch_with(
            device,
            config,
            n,
            g.incoming.row_ptr(),
            g.incoming.col_idx(),
            &level,
            depth,
            &mut next,
        )?;
        let changed = next.iter().zip(&level).any(|(a, b)| a != b);
        std::mem::swap(&mut level, &mut next);
        on_step(depth as usize + 1);
        if !changed {
            return Ok((level, depth as usize + 1));
        }
    }
    Ok((level, n))
}

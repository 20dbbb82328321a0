//! A graph's shape, and the strategy `auto` picks from it.

use super::{Order, Strategy};

/// What the `auto` strategy looks at: sizes and the degree distribution of
/// the rows a kernel walks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GraphShape {
    /// Vertices (rows).
    pub vertices: usize,
    /// Edges (stored entries).
    pub edges: usize,
    /// The largest row.
    pub max_degree: usize,
}

impl GraphShape {
    /// The shape of a CSR graph given its row pointers.
    pub fn of(row_ptr: &[u32]) -> Self {
        let vertices = row_ptr.len().saturating_sub(1);
        let edges = row_ptr.last().map_or(0, |&e| e as usize);
        let max_degree = row_ptr
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0);
        GraphShape {
            vertices,
            edges,
            max_degree,
        }
    }

    /// Mean entries per row.
    pub fn mean_degree(&self) -> f64 {
        self.edges as f64 / self.vertices.max(1) as f64
    }

    /// The strategy `auto` runs: see the crate's README for the rule.
    pub fn auto_strategy(&self, order: Order) -> Strategy {
        Strategy::Data(order)
    }
}

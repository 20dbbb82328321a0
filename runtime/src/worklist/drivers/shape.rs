//! A graph's shape, and the strategy `auto` picks from it.

use super::{Order, Strategy};

/// A graph is skewed when its largest degree exceeds this many times the
/// mean ([`GraphShape::skewed`]).
pub const SKEW: f64 = 16.0;

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

    /// Whether the largest degree exceeds [`SKEW`] times the mean: a
    /// power-law graph (RMAT, web and social graphs), whose frontier explodes
    /// within a few rounds, as opposed to a bounded-degree one (road
    /// networks, meshes, geometric graphs), whose frontier stays a thin
    /// wave for as many rounds as its diameter.
    pub fn skewed(&self) -> bool {
        self.max_degree as f64 > SKEW * self.mean_degree().max(1.0)
    }

    /// The strategy `auto` runs, data-driven rounds in `order`:
    ///
    /// - on a [skewed](Self::skewed) graph the temporal hybrid
    ///   ([`Strategy::hybrid`]): data-driven while the frontier is small,
    ///   topology-driven while it holds more than 5% of the vertices (on
    ///   symmetrised RMAT, faster than data-driven rounds for BFS, SSSP and
    ///   connected components on the CPU);
    /// - otherwise data-driven: the frontier of a bounded-degree graph never
    ///   comes near that size (the hybrid would run the same rounds), except
    ///   connected components' start from every vertex, where topology-driven
    ///   rounds cost more than the data-driven ones on a road graph.
    ///
    /// The measurements are in `BENCHMARKS.md`, "Tuning constants: history"
    /// and "Worklists and drivers (CPU)".
    pub fn auto_strategy(&self, order: Order) -> Strategy {
        if self.skewed() {
            Strategy::hybrid(order)
        } else {
            Strategy::Data(order)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_and_skew() {
        // Degrees 1, 0, 3: mean 4/3, max 3.
        let s = GraphShape::of(&[0, 1, 1, 4]);
        assert_eq!((s.vertices, s.edges, s.max_degree), (3, 4, 3));
        assert!(!s.skewed());
        let order = Order::Fifo;
        assert_eq!(s.auto_strategy(order), Strategy::Data(order));
        // One row of 100 among 100 rows of 1.
        let mut ptr: Vec<u32> = (0..=100).collect();
        ptr.push(200);
        let hub = GraphShape::of(&ptr);
        assert!(hub.skewed());
        assert_eq!(hub.auto_strategy(order), Strategy::hybrid(order));
        let empty = GraphShape::of(&[0]);
        assert_eq!((empty.vertices, empty.max_degree), (0, 0));
        assert!(!GraphShape::of(&[]).skewed());
    }
}

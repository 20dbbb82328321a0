//! Work graph and data-balanced work partition (DBWP), after Chen, Hayes et
//! al., *Locality-Aware Software Throttling for Sparse Matrix Operation on
//! GPUs* (ATC'18), Sections 2 and 4.
//!
//! - [`WorkGraph`]: the kernel's fine tasks as tuples `(task, gathered index)`,
//!   from a CSR matrix ([`WorkGraph::from_csr`]) or from any
//!   [`GatherKernel`](crate::exec::GatherKernel) ([`WorkGraph::from_kernel`]),
//!   or read in place from a CSR matrix ([`WorkGraphOf::borrow_csr`]).
//! - [`Capacity`]: the vertex budget T of a partition, from a cache size.
//! - [`dbwp`]: Algorithm 1, recursive bisection until every partition's unique
//!   vertices fit T, by [`Bisection::KdTiling`] or
//!   [`Bisection::Coarsened`] multilevel bisection; the result is a
//!   [`Partition`] with its [`SjTree`].
//! - [`Metrics`]: partitions, unique vertices, replication cost R (Equation 2),
//!   split tasks.
//! - [`SegmentList`]: the partition as [`TaskList`](crate::exec::TaskList)
//!   segments in partition order.
//! - [`Remapping`]: Algorithm 5, permutations that pack each partition's data.
//!
//! A vertex is a data element with reuse: a task's output (`y[t]`) or a
//! gathered element (`x[g]`). They are distinct elements even when the ids
//! coincide, as in a square matrix.

mod bisect;
mod columns;
mod dbwp;
mod kd;
mod levels;
mod metrics;
pub(crate) mod par;
mod remap;
mod scratch;
mod segments;
mod work_graph;

pub use columns::{column_block_count, column_blocks};
pub use dbwp::{dbwp, Partition, SjNode, SjTree, Unique};
pub use levels::{level_order, level_order_from_roots, level_order_unless};
pub use metrics::Metrics;
pub use remap::Remapping;
pub use segments::SegmentList;
pub use work_graph::{WorkGraph, WorkGraphOf};

pub(crate) use dbwp::{stable_partition, task_from};

use crate::{Error, Result};

/// Fraction of the cache the partitioner plans to fill, by default.
///
/// A partition's vertices are not the only data in flight: the matrix values
/// and indices stream through the same cache once, set associativity and the
/// hashed L2 slices of NVIDIA GPUs evict before the nominal capacity is full,
/// and LRU-like replacement needs headroom to keep a working set resident.
/// Half the cache is the usual conservative choice for streaming kernels.
pub const DEFAULT_SAFETY: f64 = 0.5;

/// The vertex budget T of one partition, derived from a cache size.
///
/// Vertices have two kinds with possibly different sizes (gathered elements
/// and task outputs); T counts vertices regardless of kind, so it is computed
/// with the larger of the two sizes. That way any mix of T vertices fits:
/// `T = floor(safety × cache_bytes / max(gathered_bytes, output_bytes))`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Capacity {
    /// Cache size in bytes.
    pub cache_bytes: u64,
    /// Fraction of the cache to plan for, in `(0, 1]`: see [`DEFAULT_SAFETY`].
    pub safety: f64,
    /// Bytes of one gathered element.
    pub gathered_elem_bytes: usize,
    /// Bytes of one task's outputs.
    pub output_elem_bytes: usize,
}

impl Capacity {
    /// The capacity for `graph`'s element sizes and a cache of `cache_bytes`,
    /// with [`DEFAULT_SAFETY`].
    pub fn for_graph(graph: &WorkGraphOf<'_>, cache_bytes: u64) -> Self {
        Capacity {
            cache_bytes,
            safety: DEFAULT_SAFETY,
            gathered_elem_bytes: graph.gathered_elem_bytes(),
            output_elem_bytes: graph.output_elem_bytes(),
        }
    }

    /// The same with another safety factor.
    pub fn with_safety(self, safety: f64) -> Self {
        Capacity { safety, ..self }
    }

    /// T, the number of unique vertices a partition may hold (at least 2).
    pub fn vertices(&self) -> Result<u32> {
        if !(self.safety > 0.0 && self.safety <= 1.0) {
            return Err(Error::invalid(format!(
                "cache safety factor must be in (0, 1], got {:?}",
                self.safety
            )));
        }
        let elem = self.gathered_elem_bytes.max(self.output_elem_bytes).max(1) as f64;
        let t = (self.safety * self.cache_bytes as f64 / elem).floor();
        if t < 2.0 {
            return Err(Error::invalid(format!(
                "a cache of {} bytes at safety {:?} holds {:.0} elements of {} bytes; a partition needs at least 2",
                self.cache_bytes, self.safety, t, elem
            )));
        }
        Ok(t.min(u32::MAX as f64) as u32)
    }
}

/// Options of the coarsened multilevel bisection.
#[derive(Debug, Clone, PartialEq)]
pub struct CoarsenOptions {
    /// Refinement is skipped on this many of the finest levels (the paper's
    /// overhead trade-off: the last levels cost most and gain least). 0
    /// refines every level.
    pub skip_levels: u32,
    /// Initial entity size, in tuples: longer tasks are read as chunks of
    /// this many tuples so that they can be split; consecutive short tasks
    /// that share data are merged up to twice this size.
    pub entity_tuples: u32,
    /// Allowed tuple imbalance of a bisection: each side holds at most
    /// `(1 + imbalance) / 2` of the tuples.
    pub imbalance: f64,
    /// Seed of the randomized tie-breaking; results depend only on it and the
    /// input, never on thread timing.
    pub seed: u64,
}

impl Default for CoarsenOptions {
    fn default() -> Self {
        CoarsenOptions {
            skip_levels: 0,
            entity_tuples: 16,
            imbalance: 0.05,
            seed: 1,
        }
    }
}

/// The bisection method DBWP applies to a subset that does not fit.
#[derive(Debug, Clone, PartialEq)]
pub enum Bisection {
    /// Median cuts alternating between the task and the gathered coordinate:
    /// O(n) per split, ignores connectivity.
    KdTiling,
    /// Coarsened multilevel hypergraph bisection: slower, fewer replicas.
    Coarsened(CoarsenOptions),
}

impl Bisection {
    fn validate(&self) -> Result<()> {
        if let Bisection::Coarsened(c) = self {
            if c.entity_tuples == 0 {
                return Err(Error::invalid("entity size must be at least one tuple"));
            }
            if !(0.0..1.0).contains(&c.imbalance) {
                return Err(Error::invalid(format!(
                    "bisection imbalance must be in [0, 1), got {}",
                    c.imbalance
                )));
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for Bisection {
    type Err = Error;
    /// `kd` or `bisect` (with default [`CoarsenOptions`]).
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "kd" => Ok(Bisection::KdTiling),
            "bisect" => Ok(Bisection::Coarsened(CoarsenOptions::default())),
            _ => Err(Error::invalid(format!(
                "unknown partitioner `{}`: expected `kd` (K-D tiling) or `bisect` (coarsened bisection)",
                crate::error::excerpt(s.as_bytes())
            ))),
        }
    }
}

/// Options of [`dbwp`].
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionOptions {
    /// T: most unique vertices (tasks + gathered elements) per partition.
    pub capacity: u32,
    /// How a subset is bisected.
    pub bisection: Bisection,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_uses_the_larger_element() {
        let c = Capacity {
            cache_bytes: 1 << 20,
            safety: 0.5,
            gathered_elem_bytes: 8,
            output_elem_bytes: 4,
        };
        assert_eq!(c.vertices().unwrap(), (1 << 19) / 8);
        assert_eq!(c.with_safety(1.0).vertices().unwrap(), (1 << 20) / 8);
        assert!(c.with_safety(0.0).vertices().is_err());
        assert!(c.with_safety(1.5).vertices().is_err());
        let tiny = Capacity {
            cache_bytes: 8,
            ..c
        };
        assert!(tiny.vertices().is_err());
    }

    #[test]
    fn partitioner_names() {
        assert_eq!("kd".parse::<Bisection>().unwrap(), Bisection::KdTiling);
        assert!(matches!(
            "bisect".parse::<Bisection>().unwrap(),
            Bisection::Coarsened(_)
        ));
        assert!("metis".parse::<Bisection>().is_err());
    }
}

//! V-EP quality metrics of a partition (Definition 2.1).

use super::dbwp::{count_gathered, count_tasks, Partition};
use super::work_graph::WorkGraphOf;
use crate::{Error, Result};

/// What a partition costs and how it fills the cache.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    /// Number of partitions.
    pub partitions: usize,
    /// T, the capacity every partition respects.
    pub capacity: u32,
    /// Largest number of unique vertices in a partition.
    pub max_unique: u32,
    /// Mean unique vertices per partition.
    pub mean_unique: f64,
    /// Replication cost R = Σ (P(n) − 1) over the vertices touched by at least
    /// one tuple (Equation 2): tasks and gathered elements are distinct vertices.
    pub replication: u64,
    /// Fewest, mean and most tuples (edges) in a partition.
    pub min_edges: u32,
    pub mean_edges: f64,
    pub max_edges: u32,
    /// Tasks whose tuples lie in more than one partition.
    pub split_tasks: u64,
    /// Seconds the partitioning took.
    pub seconds: f64,
}

impl Metrics {
    /// Measures `partition` of `graph`, recounting every partition's vertices
    /// from its tuples rather than trusting the tree.
    pub fn of(graph: &WorkGraphOf<'_>, partition: &Partition) -> Result<Self> {
        if partition.order().len() != graph.n_tuples() {
            return Err(Error::length(
                "partition tuples (= work graph tuples)",
                graph.n_tuples(),
                partition.order().len(),
            ));
        }
        let k = partition.len();
        let mut sum_unique = 0u64;
        let mut max_unique = 0u32;
        let (mut min_edges, mut max_edges) = (u32::MAX, 0u32);
        // Split tasks: the last partition that touched each task, and whether
        // a second one did.
        let mut last = vec![u32::MAX; graph.n_tasks()];
        let mut split = vec![false; graph.n_tasks()];
        for p in 0..k {
            let ids = partition.part(p);
            if let Some(&bad) = ids.iter().find(|&&id| id as usize >= graph.n_tuples()) {
                return Err(Error::out_of_range(
                    format!("partition {p} tuple id"),
                    bad,
                    graph.n_tuples(),
                ));
            }
            let u = count_tasks(graph, ids) + count_gathered(graph, ids);
            sum_unique += u as u64;
            max_unique = max_unique.max(u);
            min_edges = min_edges.min(ids.len() as u32);
            max_edges = max_edges.max(ids.len() as u32);
            let mut prev = u32::MAX;
            for &id in ids {
                let t = if prev != u32::MAX && graph.ptr()[prev as usize + 1] > id {
                    prev
                } else {
                    graph.task_of(id)
                };
                prev = t;
                let l = &mut last[t as usize];
                if *l != p as u32 {
                    split[t as usize] |= *l != u32::MAX;
                    *l = p as u32;
                }
            }
        }
        let touched = graph.touched_vertices() as u64;
        Ok(Metrics {
            partitions: k,
            capacity: partition.capacity(),
            max_unique,
            mean_unique: if k == 0 {
                0.0
            } else {
                sum_unique as f64 / k as f64
            },
            replication: sum_unique - touched,
            min_edges: if k == 0 { 0 } else { min_edges },
            mean_edges: if k == 0 {
                0.0
            } else {
                graph.n_tuples() as f64 / k as f64
            },
            max_edges,
            split_tasks: split.iter().filter(|&&s| s).count() as u64,
            seconds: partition.seconds(),
        })
    }
}

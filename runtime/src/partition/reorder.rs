//! Fine tasks reordered within each task, so that each partition's share of
//! a task is one contiguous segment ([`FineOrder`]).
//!
//! [`SegmentList`] keeps the user's data where they are and gives a
//! partition one segment per maximal run of a task's fine tasks: a row whose
//! columns are random, split over `k` partitions, becomes about one segment
//! per nonzero. A cache-fit schedule that owns its copy of the arrays read
//! at the fine-task index (a matrix's column indices and values) can instead
//! reorder each task's fine tasks by partition, stably, and give each
//! partition exactly one segment per task it touches.
//!
//! Reordering changes the order in which a task's fine tasks are folded:
//! results are the same for a commutative and associative reduce operator
//! (integers, booleans, min/max exactly; float sums within rounding).

use super::dbwp::Partition;
use super::graph::WorkGraphOf;
use super::segments::SegmentList;
use crate::exec::Segment;
use crate::mem;
use crate::{Error, Result};

/// The permutation of fine tasks that makes every partition's share of a
/// task contiguous, and the partitions' segments over the reordered
/// positions.
///
/// ```
/// use warpfit_runtime::partition::{dbwp, Bisection, FineOrder, PartitionOptions, WorkGraphOf};
/// use warpfit_runtime::Csr;
/// # fn main() -> warpfit_runtime::Result<()> {
/// // Two rows over four columns; a capacity of 4 vertices forces a split.
/// let a = Csr::<f32>::new(2, 4, vec![0, 4, 8], vec![0, 2, 1, 3, 3, 1, 2, 0], vec![1.0; 8])?;
/// let graph = WorkGraphOf::borrow_csr(&a)?;
/// let opts = PartitionOptions { capacity: 4, bisection: Bisection::KdTiling };
/// let partition = dbwp(&graph, &opts, None)?;
/// let order = FineOrder::new(&graph, &partition)?;
/// // Each partition holds at most one segment per row.
/// for p in 0..partition.len() {
///     let rows: Vec<u32> = order.segments().part(p).iter().map(|s| s.task).collect();
///     let mut unique = rows.clone();
///     unique.dedup();
///     assert_eq!(rows, unique);
/// }
/// // The column indices a throttled launch reads, in the new order.
/// let col = order.permute(a.col_idx())?;
/// assert_eq!(col.len(), 8);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FineOrder {
    /// `perm[new position] = old position`, both in `0..n_tuples`; every
    /// task's positions stay inside its own range.
    perm: Vec<u32>,
    segments: SegmentList,
    /// Tasks with fine tasks in more than one partition (folded from
    /// pieces, merged in partition order).
    split_tasks: usize,
}

impl FineOrder {
    /// The reordering of `graph`'s fine tasks for `partition`: within each
    /// task, fine tasks sorted by partition id, stably (a partition's fine
    /// tasks of one task keep their order).
    ///
    /// # Errors
    /// A graph whose fine tasks are not the positions of its tuples (the
    /// fine-task index of a CSR-shaped kernel is), a partition of another
    /// graph (tuple count), memory the budget of [`mem`] refuses.
    pub fn new(graph: &WorkGraphOf<'_>, partition: &Partition) -> Result<Self> {
        let n = graph.n_tuples();
        let ptr = graph.ptr();
        if let Some(t) = (0..graph.n_tasks()).find(|&t| graph.fine_lo(t as u32) != ptr[t]) {
            return Err(Error::invalid(format!(
                "reordering fine tasks needs a work graph whose fine tasks are the positions of \
                 its tuples (a CSR matrix's nonzeros); task {t}'s fine tasks start at {}, its \
                 tuples at {}",
                graph.fine_lo(t as u32),
                ptr[t]
            )));
        }
        if partition.order().len() != n {
            return Err(Error::length(
                "partition tuples (= work graph tuples)",
                n,
                partition.order().len(),
            ));
        }
        // The assignments, the permutation, one segment per tuple at most
        // (12 bytes) and a task's (partition, tuple) pairs at most.
        mem::check(
            "the fine-task reordering",
            (n as u64).saturating_mul(4 + 4 + 12 + 8),
        )?;
        let part_of = partition.assignments();
        let parts = partition.len();
        let mut perm = Vec::new();
        mem::try_reserve(&mut perm, n, "the fine-task permutation")?;
        // Per partition, its segments in task order.
        let mut buckets: Vec<Vec<Segment>> = vec![Vec::new(); parts];
        let mut empty = Vec::new();
        let mut split_tasks = 0;
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for t in 0..graph.n_tasks() {
            let (lo, hi) = (ptr[t] as usize, ptr[t + 1] as usize);
            let fine_lo = graph.fine_lo(t as u32);
            if lo == hi {
                empty.push(Segment::new(t as u32, fine_lo, fine_lo));
                continue;
            }
            pairs.clear();
            pairs.extend((lo..hi).map(|id| (part_of[id], id as u32)));
            // Tuple ids increase within a task: sorting the pairs is a
            // stable sort by partition.
            pairs.sort_unstable();
            perm.extend(pairs.iter().map(|&(_, id)| id));
            let mut start = 0;
            let mut pieces = 0;
            while start < pairs.len() {
                let p = pairs[start].0;
                let end = start + pairs[start..].iter().take_while(|q| q.0 == p).count();
                let seg = Segment::new(t as u32, fine_lo + start as u32, fine_lo + end as u32);
                buckets
                    .get_mut(p as usize)
                    .ok_or_else(|| {
                        Error::invalid(format!("partition id {p} of {parts} partitions"))
                    })?
                    .push(seg);
                pieces += 1;
                start = end;
            }
            if pieces > 1 {
                split_tasks += 1;
            }
        }
        let mut segments = Vec::new();
        let total: usize = buckets.iter().map(Vec::len).sum::<usize>() + empty.len();
        mem::try_reserve(&mut segments, total, "the cache-fit segments")?;
        let mut part_ptr = Vec::with_capacity(parts + 1);
        part_ptr.push(0u32);
        for b in buckets {
            segments.extend(b);
            part_ptr.push(crate::error::to_u32("number of segments", segments.len())?);
        }
        segments.extend(empty);
        crate::error::to_u32("number of segments", segments.len())?;
        Ok(FineOrder {
            perm,
            segments: SegmentList::from_parts(segments, part_ptr),
            split_tasks,
        })
    }

    /// `perm[new position] = old position`.
    pub fn perm(&self) -> &[u32] {
        &self.perm
    }

    /// The partitions' segments over the reordered positions, in partition
    /// order (one per task a partition touches), then one empty segment per
    /// task without fine tasks.
    pub fn segments(&self) -> &SegmentList {
        &self.segments
    }

    /// Tasks whose fine tasks lie in more than one partition.
    pub fn split_tasks(&self) -> usize {
        self.split_tasks
    }

    /// A per-fine-task array (read at the fine-task index, like a matrix's
    /// column indices and values) in the new order: `out[i] = src[perm[i]]`.
    ///
    /// # Errors
    /// `src` of another length than the fine tasks; memory the budget
    /// refuses.
    pub fn permute<T: Copy>(&self, src: &[T]) -> Result<Vec<T>> {
        if src.len() != self.perm.len() {
            return Err(Error::length(
                "a per-fine-task array (= fine tasks)",
                self.perm.len(),
                src.len(),
            ));
        }
        let mut out = Vec::new();
        mem::try_reserve(&mut out, src.len(), "a reordered per-fine-task array")?;
        out.extend(self.perm.iter().map(|&i| src[i as usize]));
        Ok(out)
    }
}

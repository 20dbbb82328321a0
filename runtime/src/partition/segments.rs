//! A partition as task-list segments `(task, lo, hi)`.
//!
//! Design choice: a partition that owns a non-contiguous subset of a task's
//! fine tasks gets one segment per maximal run, and the data stay where they
//! are. The alternative, remapping the matrix so that every partition's share
//! of a row is contiguous, would change the fine-task indices the kernel sees
//! and the matrix the user holds; segments keep the user's data intact and the
//! executors already fold split tasks in list order. [`Remapping`] is the
//! separate, optional step that improves coalescing.
//!
//! [`Remapping`]: super::Remapping

use super::dbwp::Partition;
use super::work_graph::WorkGraphOf;
use crate::exec::{Segment, TaskList};
use crate::{Error, Result};

/// Segments of every partition, in partition order, plus one empty segment
/// for each task without fine tasks (so that its epilogue still runs: an
/// empty row's `y[t]` is still assigned its fold's initial value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentList {
    segments: Vec<Segment>,
    /// Partition `p`'s segments are `segments[part_ptr[p]..part_ptr[p + 1]]`;
    /// the empty tasks' segments follow `part_ptr[k]`.
    part_ptr: Vec<u32>,
}

impl SegmentList {
    /// Segments of `partition` of `graph`: within a partition, tuples are in
    /// CSR order, and each maximal run of consecutive tuples of one task is a
    /// segment over that task's fine-task indices.
    pub fn new(graph: &WorkGraphOf<'_>, partition: &Partition) -> Result<Self> {
        if partition.order().len() != graph.n_tuples() {
            return Err(Error::length(
                "partition tuples (= work graph tuples)",
                graph.n_tuples(),
                partition.order().len(),
            ));
        }
        let ptr = graph.ptr();
        let mut segments = Vec::new();
        let mut part_ptr = Vec::with_capacity(partition.len() + 1);
        part_ptr.push(0u32);
        for p in 0..partition.len() {
            let ids = partition.part(p);
            let mut i = 0;
            while i < ids.len() {
                let t = graph.task_of(ids[i]);
                let end = ptr[t as usize + 1];
                let mut j = i + 1;
                while j < ids.len() && ids[j] == ids[j - 1] + 1 && ids[j] < end {
                    j += 1;
                }
                let lo = graph.fine_index(t, ids[i]);
                segments.push(Segment::new(t, lo, lo + (j - i) as u32));
                i = j;
            }
            part_ptr.push(crate::error::to_u32("number of segments", segments.len())?);
        }
        for t in 0..graph.n_tasks() {
            if ptr[t] == ptr[t + 1] {
                let lo = graph.fine_lo(t as u32);
                segments.push(Segment::new(t as u32, lo, lo));
            }
        }
        crate::error::to_u32("number of segments", segments.len())?;
        Ok(SegmentList { segments, part_ptr })
    }

    /// All segments: partitions in order, then the empty tasks.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }
    /// Segment ranges per partition (`partitions + 1` entries).
    pub fn part_ptr(&self) -> &[u32] {
        &self.part_ptr
    }
    /// Segments of partition `p`.
    pub fn part(&self, p: usize) -> &[Segment] {
        &self.segments[self.part_ptr[p] as usize..self.part_ptr[p + 1] as usize]
    }
    /// Segments of the tasks that have no fine task.
    pub fn empty_tasks(&self) -> &[Segment] {
        &self.segments[*self.part_ptr.last().unwrap_or(&0) as usize..]
    }
    /// The whole list as one [`TaskList`], in partition order: running it
    /// computes the same result as running every task whole.
    pub fn task_list(&self) -> Result<TaskList> {
        TaskList::new(self.segments.clone())
    }
}

//! The chunk queue of CF-Q and SJ-Q (Algorithm 2): the plan's segments cut
//! into chunks, in partition order, as flat arrays a queue kernel reads.

use super::plan::CacheFitPlan;
use crate::error::to_u32;
use crate::exec::{Segment, TaskList};
use crate::mem;
use crate::{Error, Result};
use std::ops::Range;

/// The chunks a device queue hands out, one per dequeue, in partition
/// order.
///
/// **A chunk is a run of consecutive segments of one partition holding at
/// most `chunk` work units**, where a segment's work is its fine-task count
/// and at least 1 (an empty task still runs its epilogue). A segment longer
/// than `chunk` is cut into pieces of `chunk` fine tasks, each a chunk of
/// its own, and a shorter remainder that starts the next chunk. Chunks never span two partitions, so a partition's chunks are
/// consecutive in the queue (the relaxed barrier of CF-Q) and a range of
/// partitions (an SJ-tree node) is a range of chunks (SJ-Q: one queue per
/// chosen node). The empty tasks' segments are chunked after, and belong
/// to, the last partition.
///
/// Why work units rather than a fixed number of segments: after fine-task
/// reordering a partition's segments range from one fine task (a random
/// column of a long row) to a whole hub row, so chunks of C segments would
/// differ in work by orders of magnitude; bounding the work per chunk keeps
/// every dequeue (one atomic) worth about the same work, and counting each
/// segment as at least 1 also bounds the segments per chunk by `chunk`.
///
/// For a GPU queue kernel, upload [`segments`](Self::segments) (the
/// `#[repr(C)]` [`Segment`]: `task, lo, hi` as three `u32`) and
/// [`chunk_ptr`](Self::chunk_ptr) (`u32`, chunks + 1 entries): a warp takes
/// chunk `c` with one `atomicAdd` on a zeroed head plus the launch's first
/// chunk and processes segments `chunk_ptr[c]..chunk_ptr[c + 1]`. A task
/// that occurs in several segments (split across partitions, or cut here)
/// needs the deterministic merge; [`task_list`](Self::task_list) gives the
/// [`TaskList`] whose split-task tables describe it.
///
/// ```
/// use warpfit_runtime::partition::{dbwp, Bisection, PartitionOptions, WorkGraph};
/// use warpfit_runtime::schedule::{CacheFitPlan, ChunkQueue};
/// use warpfit_runtime::gen;
///
/// let a = gen::rmat(8, 8, 1)?;
/// let g = WorkGraph::from_csr(&a)?;
/// let p = dbwp(&g, &PartitionOptions { capacity: 64, bisection: Bisection::KdTiling }, None)?;
/// let plan = CacheFitPlan::new(&g, &p)?;
/// let q = ChunkQueue::new(&plan, 32)?;
/// let ptr = q.chunk_ptr();
/// for c in 0..q.len() {
///     let work: u32 = q.segments()[ptr[c] as usize..ptr[c + 1] as usize]
///         .iter()
///         .map(|s| s.len().max(1))
///         .sum();
///     assert!(work <= 32);
/// }
/// // CF-Q: one launch over every chunk; SJ-Q: one per chosen node.
/// assert_eq!(q.chunks_of(0..plan.len())?, 0..q.len() as u32);
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkQueue {
    segments: Vec<Segment>,
    chunk_ptr: Vec<u32>,
    /// Partition `p`'s chunks are `part_chunk_ptr[p]..part_chunk_ptr[p + 1]`
    /// (the last partition's end is the number of chunks).
    part_chunk_ptr: Vec<u32>,
    chunk: u32,
}

impl ChunkQueue {
    /// The chunks of `plan` with at most `chunk` work units each.
    ///
    /// # Errors
    /// `chunk` is 0, or the queue exceeds `u32` ids or the memory limit.
    pub fn new(plan: &CacheFitPlan, chunk: u32) -> Result<Self> {
        if chunk == 0 {
            return Err(Error::invalid(
                "chunk size must be at least 1 work unit, got 0",
            ));
        }
        // Count first, so that the arrays are checked before they exist.
        let k = plan.len();
        let groups: Vec<Range<usize>> = plan
            .cf_launches()
            .into_iter()
            .map(|r| plan.launch_range(r))
            .collect::<Result<_>>()?;
        let all = plan.segments();
        let (mut n_segments, mut n_chunks) = (0usize, 0usize);
        for g in &groups {
            chunk_group(
                &all[g.clone()],
                chunk,
                |_| n_segments += 1,
                || n_chunks += 1,
            );
        }
        to_u32("number of queue segments", n_segments)?;
        to_u32("number of queue chunks", n_chunks)?;
        mem::check(
            "the chunk queue",
            mem::bytes_of::<Segment>("queue segments", n_segments)?.saturating_add(
                mem::bytes_of::<u32>("queue chunks", n_chunks.saturating_add(1))?,
            ),
        )?;
        let mut segments = Vec::with_capacity(n_segments);
        let mut chunk_ptr = Vec::with_capacity(n_chunks + 1);
        let mut part_chunk_ptr = Vec::with_capacity(k + 1);
        chunk_ptr.push(0u32);
        for g in &groups {
            part_chunk_ptr.push((chunk_ptr.len() - 1) as u32);
            let seg_count = std::cell::Cell::new(segments.len());
            chunk_group(
                &all[g.clone()],
                chunk,
                |s| {
                    segments.push(s);
                    seg_count.set(seg_count.get() + 1);
                },
                || chunk_ptr.push(seg_count.get() as u32),
            );
        }
        if k == 0 {
            part_chunk_ptr = vec![0];
        } else {
            part_chunk_ptr.push((chunk_ptr.len() - 1) as u32);
        }
        Ok(ChunkQueue {
            segments,
            chunk_ptr,
            part_chunk_ptr,
            chunk,
        })
    }

    /// The queue's segments: the plan's, in order, long ones cut.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }
    /// Chunk `c` is `segments()[chunk_ptr()[c]..chunk_ptr()[c + 1]]`
    /// (`len() + 1` entries).
    pub fn chunk_ptr(&self) -> &[u32] {
        &self.chunk_ptr
    }
    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.chunk_ptr.len() - 1
    }
    /// Whether the queue holds no chunk (a plan without tasks).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The work bound of a chunk.
    pub fn chunk(&self) -> u32 {
        self.chunk
    }
    /// First chunk of every partition, `partitions + 1` entries (for a plan
    /// without partitions: `[0]`, and its empty tasks' chunks are
    /// `chunks_of(0..0)`).
    pub fn part_chunk_ptr(&self) -> &[u32] {
        &self.part_chunk_ptr
    }

    /// The chunks of partitions `parts`: what one SJ-Q launch (a chosen
    /// node's partitions) or the CF-Q launch (`0..partitions`) dequeues. As
    /// [`CacheFitPlan::launch_segments`], a range that reaches the last
    /// partition includes the empty tasks' chunks.
    ///
    /// # Errors
    /// `parts` is reversed or reaches past the partitions.
    pub fn chunks_of(&self, parts: Range<usize>) -> Result<Range<u32>> {
        let k = self.part_chunk_ptr.len() - 1;
        if parts.start > parts.end || parts.end > k {
            return Err(Error::invalid(format!(
                "chunks of partitions {}..{}: the queue has {k} partitions",
                parts.start, parts.end
            )));
        }
        let end = if parts.end == k {
            self.len() as u32
        } else {
            self.part_chunk_ptr[parts.end]
        };
        Ok(self.part_chunk_ptr[parts.start]..end)
    }

    /// Segments of chunk `c`.
    ///
    /// # Errors
    /// `c >= len()`.
    pub fn chunk_segments(&self, c: usize) -> Result<&[Segment]> {
        if c >= self.len() {
            return Err(Error::out_of_range("queue chunk", c, self.len()));
        }
        Ok(&self.segments[self.chunk_ptr[c] as usize..self.chunk_ptr[c + 1] as usize])
    }

    /// The queue's segments as a [`TaskList`]: its split-task tables are
    /// the merge a queue launch needs (partials folded in queue order).
    ///
    /// # Errors
    /// As [`TaskList::new`].
    pub fn task_list(&self) -> Result<TaskList> {
        mem::check_elems::<Segment>("the queue's task list", self.segments.len())?;
        TaskList::new(self.segments.clone())
    }
}

/// Cuts one partition's segments into chunks: `emit` every (possibly cut)
/// segment in order, `close` after the last segment of every chunk.
fn chunk_group(
    segs: &[Segment],
    chunk: u32,
    mut emit: impl FnMut(Segment),
    mut close: impl FnMut(),
) {
    let mut work = 0u32;
    for s in segs {
        let w = s.len().max(1);
        if w > chunk {
            if work > 0 {
                close();
                work = 0;
            }
            let mut lo = s.lo;
            while s.hi - lo >= chunk {
                emit(Segment::new(s.task, lo, lo + chunk));
                close();
                lo += chunk;
            }
            if lo < s.hi {
                emit(Segment::new(s.task, lo, s.hi));
                work = s.hi - lo;
            }
            continue;
        }
        if work + w > chunk {
            close();
            work = 0;
        }
        emit(*s);
        work += w;
    }
    if work > 0 {
        close();
    }
}

//! A member's fine tasks split by where their gathered entries come from
//! ([`Distributed::source_blocks`], [`Distributed::source_patterns`]): the
//! owned block can run while the halo is in flight, each halo block after
//! its sender's entries have arrived.

use super::pattern::Distributed;
use crate::{DeviceVec, Result, Scalar};
use rayon::prelude::*;
use warpfit_runtime::{Segment, TaskList};

/// The longest segment of a source block's task list: a warp's 32 lanes
/// for 32 steps.
const LIST_SEGMENT: u32 = 1024;

/// The fine tasks of one member that read from one source
/// ([`Distributed::source_patterns`]): block 0 its owned entries, block
/// `k ≥ 1` the halo from the `k`-th member it receives from.
pub struct SourcePattern {
    /// Range array over all the member's tasks (empty rows where a task
    /// reads nothing from this source).
    pub row_ptr: DeviceVec<u32>,
    /// Local gathered index of each fine task of the block.
    pub col: DeviceVec<u32>,
    /// Where fewer than half the tasks read from the block, the segments
    /// of those that do (rows longer than 1024 cut into segments of 1024):
    /// launch over this list instead of every task (a grid's halo block is
    /// one row of the grid, not every row).
    pub tasks: Option<TaskList>,
}

/// One block of a member's fine tasks with their values
/// ([`Distributed::source_blocks`]).
pub struct SourceBlock<T: Scalar> {
    /// Range array over all the member's tasks.
    pub row_ptr: DeviceVec<u32>,
    /// Local gathered index of each fine task of the block.
    pub col: DeviceVec<u32>,
    /// The values, cut the same way.
    pub val: DeviceVec<T>,
    /// As [`SourcePattern::tasks`].
    pub tasks: Option<TaskList>,
}

/// A block on the host: range array, index array, values (none for a
/// pattern).
type HostBlock<T> = (Vec<u32>, Vec<u32>, Option<Vec<T>>);

impl Distributed<'_> {
    /// Each member's fine tasks split by where their gathered entry comes
    /// from: block 0 reads owned entries, block `k ≥ 1` the halo from the
    /// `k`-th member this one receives from (its `halo` order). Each block
    /// is a range array over all the member's tasks (empty rows where a
    /// task reads nothing there), its index array (local numbering) and
    /// `values` cut the same way. A kernel run block by block can start on
    /// block 0 while the halo is in flight
    /// ([`Exchange::start`](super::Exchange::start)); its fold then adds a
    /// task's blocks in block order, not in its fine order.
    ///
    /// # Errors
    /// `values` not one per fine task, or a distribution made from row
    /// blocks (it has no global fine array); a member out of memory.
    pub fn source_blocks<T: Scalar + Sync + Send>(
        &self,
        values: &[T],
    ) -> Result<Vec<Vec<SourceBlock<T>>>> {
        let host = self.split_sources(Some(values))?;
        self.upload_sources(host, |p, ptr, col, val, tasks| {
            let d = self.device(p);
            let val = val.unwrap_or_default();
            Ok(SourceBlock {
                row_ptr: d.upload(&ptr)?,
                col: d.upload(&col)?,
                val: d.upload(&val)?,
                tasks,
            })
        })
    }

    /// [`Distributed::source_blocks`] of a kernel that reads no values (a
    /// graph's pull): the range and index arrays of each member's blocks.
    /// Also for a distribution made from row blocks.
    ///
    /// # Errors
    /// A member out of memory.
    pub fn source_patterns(&self) -> Result<Vec<Vec<SourcePattern>>> {
        let host = self.split_sources::<f32>(None)?;
        self.upload_sources(host, |p, ptr, col, _, tasks| {
            let d = self.device(p);
            Ok(SourcePattern {
                row_ptr: d.upload(&ptr)?,
                col: d.upload(&col)?,
                tasks,
            })
        })
    }

    /// Every member's blocks on the host, the members in parallel.
    fn split_sources<T: Scalar + Sync + Send>(
        &self,
        values: Option<&[T]>,
    ) -> Result<Vec<Vec<HostBlock<T>>>> {
        let dist = self.distribution();
        (0..self.group().len())
            .into_par_iter()
            .map(|p| {
                let part = &dist.parts()[p];
                let val = values.map(|v| dist.fine_part(p, v)).transpose()?;
                let mut edges = vec![part.owned_x.len() as u32];
                edges.extend(part.halo.iter().map(|h| (h.offset + h.global.len()) as u32));
                Ok(split_by_source(
                    &part.row_ptr,
                    &part.col,
                    val.as_deref(),
                    &edges,
                ))
            })
            .collect()
    }

    /// Each host block made into `B` by `make(member, ptr, col, values,
    /// its task list)`.
    fn upload_sources<T, B>(
        &self,
        host: Vec<Vec<HostBlock<T>>>,
        make: impl Fn(usize, Vec<u32>, Vec<u32>, Option<Vec<T>>, Option<TaskList>) -> Result<B>,
    ) -> Result<Vec<Vec<B>>> {
        host.into_iter()
            .enumerate()
            .map(|(p, blocks)| {
                blocks
                    .into_iter()
                    .map(|(ptr, col, val)| {
                        let tasks = task_list(&ptr)?;
                        make(p, ptr, col, val, tasks)
                    })
                    .collect()
            })
            .collect()
    }
}

/// The segments of a block's non-empty rows where they are fewer than
/// half its rows (else `None`: the block launches over every task). A
/// task list runs as given, so its long rows (a power-law graph's hubs)
/// are cut here, as a launch over every task would cut them.
fn task_list(ptr: &[u32]) -> Result<Option<TaskList>> {
    let rows = ptr.len().saturating_sub(1);
    let segments: Vec<Segment> = ptr
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[1] > w[0])
        .flat_map(|(r, w)| {
            (w[0]..w[1])
                .step_by(LIST_SEGMENT as usize)
                .map(move |lo| Segment::new(r as u32, lo, (lo + LIST_SEGMENT).min(w[1])))
        })
        .collect();
    if segments.len() < rows / 2 {
        Ok(Some(TaskList::new(segments)?))
    } else {
        Ok(None)
    }
}

/// Splits a CSR pattern `(row_ptr, col)` with `val` (if any) into blocks
/// by column: block `b` holds the entries with `edges[b - 1] <= col <
/// edges[b]` (`edges` ascending, the last at least every column), each
/// row's entries in their order.
fn split_by_source<T: Copy>(
    row_ptr: &[u32],
    col: &[u32],
    val: Option<&[T]>,
    edges: &[u32],
) -> Vec<HostBlock<T>> {
    let block = |c: u32| edges.partition_point(|&e| e <= c);
    let rows = row_ptr.len() - 1;
    let mut counts = vec![vec![0u32; rows + 1]; edges.len()];
    for r in 0..rows {
        for &c in &col[row_ptr[r] as usize..row_ptr[r + 1] as usize] {
            counts[block(c)][r + 1] += 1;
        }
    }
    let mut out: Vec<HostBlock<T>> = counts
        .into_iter()
        .map(|mut ptr| {
            for r in 0..rows {
                ptr[r + 1] += ptr[r];
            }
            let n = ptr[rows] as usize;
            let v = val.map(|_| Vec::with_capacity(n));
            (ptr, Vec::with_capacity(n), v)
        })
        .collect();
    for (e, &c) in col.iter().enumerate() {
        let b = &mut out[block(c)];
        b.1.push(c);
        if let (Some(v), Some(val)) = (&mut b.2, val) {
            v.push(val[e]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_splits_by_source_with_and_without_values() {
        // Rows: {0, 5, 2}, {}, {7, 3}; sources [0, 3), [3, 6), [6, 8).
        let (ptr, col) = ([0u32, 3, 3, 5], [0u32, 5, 2, 7, 3]);
        let val = [1.0f32, 2.0, 3.0, 4.0, 5.0];
        let with = split_by_source(&ptr, &col, Some(&val[..]), &[3, 6, 8]);
        let without = split_by_source::<f32>(&ptr, &col, None, &[3, 6, 8]);
        let want = [
            (vec![0u32, 2, 2, 2], vec![0u32, 2], vec![1.0f32, 3.0]),
            (vec![0, 1, 1, 2], vec![5, 3], vec![2.0, 5.0]),
            (vec![0, 0, 0, 1], vec![7], vec![4.0]),
        ];
        for (b, (ptr, col, v)) in want.into_iter().enumerate() {
            assert_eq!(with[b], (ptr.clone(), col.clone(), Some(v)));
            assert_eq!(without[b], (ptr, col, None));
        }
    }

    #[test]
    fn a_block_read_by_few_rows_has_a_task_list_with_hubs_cut() {
        // 10 rows, one of 2500 entries: 3 segments, fewer than 5.
        let mut ptr = vec![0u32; 11];
        for p in ptr.iter_mut().skip(4) {
            *p = 2500;
        }
        let list = task_list(&ptr).unwrap().expect("a task list");
        let segs = list.segments();
        assert_eq!(segs.len(), 3);
        assert!(segs
            .iter()
            .all(|s| s.task == 3 && s.hi - s.lo <= LIST_SEGMENT));
        // Every row non-empty: no list.
        let dense: Vec<u32> = (0..=10).collect();
        assert!(task_list(&dense).unwrap().is_none());
    }
}

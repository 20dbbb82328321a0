//! A member's fine tasks split by where their gathered entries come from
//! ([`Distributed::source_blocks`], [`Distributed::source_patterns`]): the
//! owned block can run while the halo is in flight, each halo block after
//! its sender's entries have arrived.

use super::pattern::Distributed;
use crate::{DeviceVec, Result, Scalar};
use rayon::prelude::*;
use warpfit_runtime::{mem, Segment, TaskList};

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
                split_by_source(&part.row_ptr, &part.col, val.as_deref(), &edges)
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
/// row's entries in their order. On all cores: the rows are cut into
/// chunks, each chunk's entries of a block land in one contiguous range of
/// that block's arrays (a member of RMAT 28 on four GPUs holds a billion
/// entries). Every array is reserved against the memory budget first.
fn split_by_source<T: Copy + Send + Sync>(
    row_ptr: &[u32],
    col: &[u32],
    val: Option<&[T]>,
    edges: &[u32],
) -> Result<Vec<HostBlock<T>>> {
    let block = |c: u32| edges.partition_point(|&e| e <= c);
    let (rows, nb) = (row_ptr.len() - 1, edges.len());
    let entries = |r: usize| &col[row_ptr[r] as usize..row_ptr[r + 1] as usize];
    // Per row, its entries in each block.
    let cells = rows
        .checked_mul(nb)
        .ok_or_else(|| crate::Error::invalid("a split by source: too many counters"))?;
    let mut counts = mem::try_filled("a split by source's counters", cells, 0u32)?;
    counts
        .par_chunks_mut(nb.max(1))
        .enumerate()
        .for_each(|(r, c)| {
            for &x in entries(r) {
                c[block(x)] += 1;
            }
        });
    // Each block's range array.
    let ptrs: Vec<Vec<u32>> = (0..nb)
        .into_par_iter()
        .map(|b| {
            let mut ptr = Vec::new();
            mem::try_reserve(&mut ptr, rows + 1, "a source block's range array")?;
            let mut at = 0u32;
            ptr.push(0);
            for r in 0..rows {
                at += counts[r * nb + b];
                ptr.push(at);
            }
            Ok(ptr)
        })
        .collect::<Result<_>>()?;
    drop(counts);
    let mut cols: Vec<Vec<u32>> = ptrs
        .iter()
        .map(|p| mem::try_filled("a source block's index array", p[rows] as usize, 0u32))
        .collect::<Result<_>>()?;
    // Values filled with any value of T (the first), every slot written.
    let mut vals: Vec<Option<Vec<T>>> = ptrs
        .iter()
        .map(|p| {
            val.and_then(|v| v.first())
                .map(|&z| mem::try_filled("a source block's values", p[rows] as usize, z))
                .transpose()
        })
        .collect::<Result<_>>()?;
    // Chunks of rows; chunk k's entries of block b are `ptrs[b][bounds[k]]
    // .. ptrs[b][bounds[k + 1]]`.
    const CHUNK_ROWS: usize = 1 << 14;
    let bounds: Vec<usize> = (0..rows)
        .step_by(CHUNK_ROWS)
        .chain(std::iter::once(rows))
        .collect();
    let mut col_parts: Vec<Vec<&mut [u32]>> = (0..bounds.len() - 1).map(|_| Vec::new()).collect();
    for (b, c) in cols.iter_mut().enumerate() {
        let mut rest: &mut [u32] = c;
        for (k, w) in bounds.windows(2).enumerate() {
            let len = (ptrs[b][w[1]] - ptrs[b][w[0]]) as usize;
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
            col_parts[k].push(head);
            rest = tail;
        }
    }
    let mut val_parts: Vec<Vec<Option<&mut [T]>>> =
        (0..bounds.len() - 1).map(|_| Vec::new()).collect();
    for (b, v) in vals.iter_mut().enumerate() {
        let mut rest: Option<&mut [T]> = v.as_deref_mut();
        for (k, w) in bounds.windows(2).enumerate() {
            let len = (ptrs[b][w[1]] - ptrs[b][w[0]]) as usize;
            let head = rest.take().map(|r| {
                let (head, tail) = r.split_at_mut(len);
                rest = Some(tail);
                head
            });
            val_parts[k].push(head);
        }
    }
    col_parts
        .into_par_iter()
        .zip(val_parts)
        .enumerate()
        .for_each(|(k, (mut cs, mut vs))| {
            let mut at = vec![0usize; nb];
            for w in row_ptr[bounds[k]..=bounds[k + 1]].windows(2) {
                let lo = w[0] as usize;
                for (e, &x) in col[lo..w[1] as usize].iter().enumerate() {
                    let b = block(x);
                    cs[b][at[b]] = x;
                    if let (Some(v), Some(val)) = (vs[b].as_deref_mut(), val) {
                        v[at[b]] = val[lo + e];
                    }
                    at[b] += 1;
                }
            }
        });
    Ok(ptrs
        .into_iter()
        .zip(cols)
        .zip(vals)
        .map(|((p, c), v)| (p, c, v))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_splits_by_source_with_and_without_values() {
        // Rows: {0, 5, 2}, {}, {7, 3}; sources [0, 3), [3, 6), [6, 8).
        let (ptr, col) = ([0u32, 3, 3, 5], [0u32, 5, 2, 7, 3]);
        let val = [1.0f32, 2.0, 3.0, 4.0, 5.0];
        let with = split_by_source(&ptr, &col, Some(&val[..]), &[3, 6, 8]).unwrap();
        let without = split_by_source::<f32>(&ptr, &col, None, &[3, 6, 8]).unwrap();
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

    /// Many chunks of rows, every block, values or none: the same blocks
    /// as one pass over the rows in order.
    #[test]
    fn the_split_on_all_cores_equals_one_pass_in_order() {
        let rows = 40_000usize;
        let mut ptr = vec![0u32];
        let mut col = Vec::new();
        let mut state = 12345u64;
        let mut next = |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        for r in 0..rows {
            let len = if r % 997 == 0 { 300 } else { next(9) };
            for _ in 0..len {
                col.push(next(50_000) as u32);
            }
            ptr.push(col.len() as u32);
        }
        let val: Vec<f64> = (0..col.len()).map(|e| e as f64 * 0.5).collect();
        let edges = [10_000u32, 10_001, 35_000, 50_000];
        let got = split_by_source(&ptr, &col, Some(&val[..]), &edges).unwrap();
        let bare = split_by_source::<f64>(&ptr, &col, None, &edges).unwrap();
        for (b, ((p, c, v), (p2, c2, v2))) in got.iter().zip(&bare).enumerate() {
            let lo = if b == 0 { 0 } else { edges[b - 1] };
            let (mut wp, mut wc, mut wv) = (vec![0u32], Vec::new(), Vec::new());
            for r in 0..rows {
                for e in ptr[r] as usize..ptr[r + 1] as usize {
                    if (lo..edges[b]).contains(&col[e]) {
                        wc.push(col[e]);
                        wv.push(val[e]);
                    }
                }
                wp.push(wc.len() as u32);
            }
            assert_eq!((p, c, v.as_ref()), (&wp, &wc, Some(&wv)), "block {b}");
            assert_eq!((p2, c2, v2), (&wp, &wc, &None), "block {b}, no values");
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

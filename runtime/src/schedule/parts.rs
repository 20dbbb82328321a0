//! A cache-fit plan laid out part by part: every partition's share of all
//! tasks contiguous, with a range array of its own.

use super::plan::CacheFitPlan;
use crate::error::to_u32;
use crate::exec::SharedOut;
use crate::mem;
use crate::partition::{par, Partition, WorkGraphOf};
use crate::{Error, Result};
use rayon::prelude::*;

/// Segments per chunk while positions are summed.
const SEGMENT_CHUNK: usize = 1 << 14;

/// Tasks per chunk of a range array.
const TASK_CHUNK: usize = 1 << 16;

/// A [`CacheFitPlan`] in part-major layout: the fine tasks ordered by
/// partition, then by task, then as in the plan (so a task's share of one
/// partition keeps the plan's order), and per partition a CSR range array
/// over that order.
///
/// A kernel whose tasks' ranges come from a range array (`row_ptr[t] ..
/// row_ptr[t + 1]`) runs unchanged on partition `p` when given
/// [`part_ptr(p)`](Self::part_ptr) as its range array and its per-fine-task
/// arrays in this order ([`permute_fine`](Self::permute_fine)): each launch
/// then reads one partition's fine tasks as one dense CSR slice, the form a
/// carried sequence of launches (one per partition, the tasks' folds
/// carried between them) runs fastest on the GPU, with no segment list.
///
/// ```
/// use warpfit_runtime::partition::{column_blocks, WorkGraph};
/// use warpfit_runtime::schedule::{CacheFitPlan, PartMajor};
/// use warpfit_runtime::Csr;
///
/// // Row 0 reads columns 0, 5, 1, 4; row 1 is empty; row 2 reads 5 and 0.
/// let a = Csr::new(3, 6, vec![0, 4, 4, 6], vec![0, 5, 1, 4, 5, 0], vec![1.0f32; 6])?;
/// let graph = WorkGraph::from_csr(&a)?;
/// let plan = CacheFitPlan::new(&graph, &column_blocks(&graph, 3)?)?;
/// let parts = PartMajor::new(&plan)?;
/// // Columns 0..3, then 3..6.
/// assert_eq!(parts.permute_fine(a.col_idx())?, [0, 1, 0, 5, 4, 5]);
/// assert_eq!(parts.part_ptr(0), [0, 2, 2, 3]);
/// assert_eq!(parts.part_ptr(1), [3, 5, 5, 6]);
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartMajor {
    n_tasks: usize,
    /// `fine_perm[position] = original fine-task id`.
    fine_perm: Vec<u32>,
    /// Partition `p`'s range array is `ptrs[p * (n_tasks + 1)..][..n_tasks + 1]`.
    ptrs: Vec<u32>,
}

impl PartMajor {
    /// `plan` laid out part by part.
    ///
    /// The part-major order is the plan's segments in their order
    /// (partitions in order, tasks ascending in each): a segment's first
    /// position is the sum of the lengths before it. Both the copy of the
    /// plan's permutation and every partition's range array are then
    /// filled in parallel.
    ///
    /// # Errors
    /// The arrays exceed the memory limit, or the plan's segments do not
    /// cover its fine tasks.
    pub fn new(plan: &CacheFitPlan) -> Result<Self> {
        let (n, k, m) = (plan.n_tasks(), plan.len(), plan.n_fine());
        let ptr_len = Self::check(n, k, m)?;
        let segs = &plan.segments()[..plan.part_ptr()[k] as usize];
        // Every segment's first part-major position, in parallel chunks.
        let sums: Vec<u64> = segs
            .par_chunks(SEGMENT_CHUNK)
            .map(|c| c.iter().map(|s| u64::from(s.len())).sum())
            .collect();
        let mut chunk_at = Vec::with_capacity(sums.len());
        let mut total = 0u64;
        for s in &sums {
            chunk_at.push(total);
            total += s;
        }
        if total != m as u64 {
            return Err(Error::invalid(format!(
                "part-major layout: the partitions hold {total} fine tasks, the plan {m}"
            )));
        }
        let mut at: Vec<u32> = par::zeroed("the part-major segment positions", segs.len())?;
        at.par_chunks_mut(SEGMENT_CHUNK)
            .zip(segs.par_chunks(SEGMENT_CHUNK))
            .zip(chunk_at.par_iter())
            .for_each(|((out, c), &start)| {
                let mut pos = start as u32;
                for (o, s) in out.iter_mut().zip(c) {
                    *o = pos;
                    pos += s.len();
                }
            });
        let plan_perm = plan.fine_perm();
        let mut fine_perm = par::zeroed_u32("the part-major permutation", m)?;
        {
            let out = SharedOut::new(&mut fine_perm);
            segs.par_chunks(SEGMENT_CHUNK)
                .zip(at.par_chunks(SEGMENT_CHUNK))
                .try_for_each(|(c, a)| {
                    for (s, &pos) in c.iter().zip(a) {
                        let src = plan_perm.get(s.lo as usize..s.hi as usize).ok_or_else(|| {
                            Error::invalid("part-major layout: a segment outside the plan")
                        })?;
                        for (i, &v) in src.iter().enumerate() {
                            // SAFETY: segments have disjoint positions
                            // (prefix sums of their lengths).
                            unsafe { out.set(pos as usize + i, v, "part-major permutation") }
                                .map_err(|_| {
                                    Error::invalid("part-major layout: positions overrun")
                                })?;
                        }
                    }
                    Ok::<(), Error>(())
                })?;
        }
        // Range arrays: task t of partition p starts at its segment's
        // position, or where p's next segment starts.
        let mut ptrs = par::zeroed_u32("the part-major range arrays", ptr_len)?;
        if k == 0 {
            return Ok(PartMajor {
                n_tasks: n,
                fine_perm,
                ptrs,
            });
        }
        let part_end: Vec<u32> = (0..k)
            .map(|p| {
                let e = plan.part_ptr()[p + 1] as usize;
                if e < at.len() {
                    at[e]
                } else {
                    m as u32
                }
            })
            .collect();
        ptrs.par_chunks_mut(n + 1).enumerate().for_each(|(p, row)| {
            let lo = plan.part_ptr()[p] as usize;
            let psegs = &segs[lo..plan.part_ptr()[p + 1] as usize];
            let pat = &at[lo..lo + psegs.len()];
            row.par_chunks_mut(TASK_CHUNK)
                .enumerate()
                .for_each(|(c, out)| {
                    let t0 = c * TASK_CHUNK;
                    let mut j = psegs.partition_point(|s| (s.task as usize) < t0);
                    for (i, o) in out.iter_mut().enumerate() {
                        let t = t0 + i;
                        while j < psegs.len() && (psegs[j].task as usize) < t {
                            j += 1;
                        }
                        *o = if j < psegs.len() { pat[j] } else { part_end[p] };
                    }
                });
        });
        Ok(PartMajor {
            n_tasks: n,
            fine_perm,
            ptrs,
        })
    }

    /// The part-major layout straight from a partition of `graph`, without
    /// a [`CacheFitPlan`]: the same layout as
    /// `PartMajor::new(&CacheFitPlan::new(graph, &partition)?)`.
    ///
    /// The part-major order is the partition's own tuple order (partitions
    /// in order, ascending tuple ids in each, which is tasks ascending and
    /// each task's fine tasks in their order), so it is taken over without
    /// a copy; partition `p`'s range array holds, for every task, where
    /// its tuples in `p` start: its first tuple id's rank in `p`. Every
    /// partition's range array is filled in parallel, in chunks of tasks.
    ///
    /// ```
    /// use warpfit_runtime::partition::{column_blocks, WorkGraph};
    /// use warpfit_runtime::schedule::{CacheFitPlan, PartMajor};
    /// use warpfit_runtime::Csr;
    ///
    /// let a = Csr::new(3, 6, vec![0, 4, 4, 6], vec![0, 5, 1, 4, 5, 0], vec![1.0f32; 6])?;
    /// let graph = WorkGraph::from_csr(&a)?;
    /// let partition = column_blocks(&graph, 3)?;
    /// let via_plan = PartMajor::new(&CacheFitPlan::new(&graph, &partition)?)?;
    /// assert_eq!(PartMajor::from_partition(&graph, partition)?, via_plan);
    /// # Ok::<(), warpfit_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// The partition is not one of `graph`'s tuples (another tuple count, a
    /// partition whose ids do not ascend), the fine-task indices are not
    /// the tuple ids (as [`CacheFitPlan::new`]), or the range arrays exceed
    /// the memory limit.
    pub fn from_partition(graph: &WorkGraphOf<'_>, partition: Partition) -> Result<Self> {
        let (n, k, m) = (graph.n_tasks(), partition.len(), graph.n_tuples());
        if partition.order().len() != m {
            return Err(Error::length(
                "part-major layout: partition tuples (= work graph tuples)",
                m,
                partition.order().len(),
            ));
        }
        let ptr = graph.ptr();
        if let Some(t) = (0..n)
            .into_par_iter()
            .find_first(|&t| graph.fine_lo(t as u32) != ptr[t])
        {
            return Err(Error::invalid(format!(
                "part-major layout: task {t} starts at fine task {} but at tuple {}: fine-task \
                 reordering needs ranges that tile 0..m in task order (CSR-shaped)",
                graph.fine_lo(t as u32),
                ptr[t]
            )));
        }
        let ptr_len = Self::check(n, k, 0)?;
        let (order, part_ptr) = partition.into_order();
        let mut ptrs = par::zeroed_u32("the part-major range arrays", ptr_len)?;
        // Every chunk of tasks of every partition walks its ids, writing
        // where each task's share starts, on through its last task's ids;
        // the walks check the ids ascend (within a walk, and walks that
        // meet end to end) on the way.
        let ascending = k == 0
            || ptrs.par_chunks_mut(n + 1).enumerate().all(|(p, row)| {
                let base = part_ptr[p];
                let ids = &order[base as usize..part_ptr[p + 1] as usize];
                let walks: Vec<(usize, usize, bool)> = row
                    .par_chunks_mut(TASK_CHUNK)
                    .enumerate()
                    .map(|(c, out)| {
                        let t0 = c * TASK_CHUNK;
                        let first = ids.partition_point(|&id| id < ptr[t0]);
                        let (mut j, mut ok) = (first, true);
                        let mut walk = |to: u32, j: &mut usize| {
                            while *j < ids.len() && ids[*j] < to {
                                ok &= *j == 0 || ids[*j - 1] < ids[*j];
                                *j += 1;
                            }
                        };
                        for (i, o) in out.iter_mut().enumerate() {
                            walk(ptr[t0 + i], &mut j);
                            *o = base + j as u32;
                        }
                        if let Some(&end) = ptr.get(t0 + out.len()) {
                            walk(end, &mut j);
                        }
                        (first, j, ok)
                    })
                    .collect();
                walks.iter().all(|w| w.2)
                    && walks.first().map_or(true, |w| w.0 == 0)
                    && walks.last().map_or(true, |w| w.1 == ids.len())
                    && walks.windows(2).all(|w| w[0].1 == w[1].0)
            });
        if !ascending {
            return Err(Error::invalid(
                "part-major layout: a partition's tuple ids do not ascend",
            ));
        }
        Ok(PartMajor {
            n_tasks: n,
            fine_perm: order,
            ptrs,
        })
    }

    /// Checks the sizes of a layout of `n` tasks, `k` partitions and `m`
    /// fine tasks to allocate; returns the range arrays' length.
    fn check(n: usize, k: usize, m: usize) -> Result<usize> {
        let ptr_len = n
            .checked_add(1)
            .and_then(|l| l.checked_mul(k.max(1)))
            .ok_or_else(|| Error::invalid("part-major range arrays overflow"))?;
        mem::check(
            &format!("the part-major layout of {m} fine tasks, {k} partitions of {n} tasks"),
            mem::bytes_of::<u32>("part-major arrays", m.saturating_add(ptr_len))?,
        )?;
        to_u32("part-major position", m)?;
        Ok(ptr_len)
    }

    /// Number of partitions (at least 1).
    pub fn len(&self) -> usize {
        self.ptrs.len() / (self.n_tasks + 1)
    }

    /// Never empty: a plan without fine tasks has one partition of empty
    /// ranges.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Partition `p`'s range array (`n_tasks + 1` entries): task `t`'s share
    /// of it is `part_ptr(p)[t]..part_ptr(p)[t + 1]`. Panics past the end,
    /// like slice indexing.
    pub fn part_ptr(&self, p: usize) -> &[u32] {
        let w = self.n_tasks + 1;
        &self.ptrs[p * w..(p + 1) * w]
    }

    /// `fine_perm()[position] = original fine-task id`.
    pub fn fine_perm(&self) -> &[u32] {
        &self.fine_perm
    }

    /// A per-fine-task array in part-major order: `out[i] =
    /// src[fine_perm()[i]]`.
    ///
    /// # Errors
    /// `src` does not have one element per fine task, or the copy exceeds
    /// the memory limit.
    pub fn permute_fine<T: Copy + Send + Sync>(&self, src: &[T]) -> Result<Vec<T>> {
        permute_fine_by(&self.fine_perm, src)
    }

    /// A per-fine-task array given as bytes, `size` bytes per element, in
    /// part-major order: element `i` of the result is element
    /// `fine_perm()[i]` of `src`. Elements of `src` past the fine tasks
    /// (an array longer than the kernel's ranges reach) follow unchanged.
    /// Written in parallel, in chunks of positions; element sizes of 1, 2,
    /// 4, 8 and 16 bytes copy as one load and store.
    ///
    /// ```
    /// use warpfit_runtime::partition::{column_blocks, WorkGraph};
    /// use warpfit_runtime::schedule::PartMajor;
    /// use warpfit_runtime::Csr;
    ///
    /// let a = Csr::new(3, 6, vec![0, 4, 4, 6], vec![0, 5, 1, 4, 5, 0], vec![1.0f32; 6])?;
    /// let graph = WorkGraph::from_csr(&a)?;
    /// let parts = PartMajor::from_partition(&graph, column_blocks(&graph, 3)?)?;
    /// let bytes: Vec<u8> = a.col_idx().iter().flat_map(|c| c.to_ne_bytes()).collect();
    /// let moved = parts.permute_bytes(&bytes, 4)?;
    /// let back: Vec<u32> = moved
    ///     .chunks(4)
    ///     .map(|b| u32::from_ne_bytes(b.try_into().unwrap()))
    ///     .collect();
    /// assert_eq!(back, parts.permute_fine(a.col_idx())?);
    /// # Ok::<(), warpfit_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// A size of 0, a byte length that is not a multiple of `size`, fewer
    /// elements than fine tasks, or a copy beyond the memory limit.
    pub fn permute_bytes(&self, src: &[u8], size: usize) -> Result<Vec<u8>> {
        let n = self.check_bytes(src, size)?;
        let mut out: Vec<u8> = Vec::new();
        mem::try_reserve(&mut out, src.len(), "the part-major copy of a fine array")?;
        par::huge_pages(out.as_mut_ptr(), out.capacity());
        permute_into(
            src,
            size,
            &self.fine_perm,
            0..n,
            &mut out.spare_capacity_mut()[..src.len()],
        );
        // SAFETY: `permute_into` wrote every byte of `0..src.len()`: the
        // elements at positions `0..n`, `size` bytes each.
        unsafe { out.set_len(src.len()) };
        Ok(out)
    }

    /// Elements `positions` (of `size` bytes each) of
    /// [`permute_bytes`](Self::permute_bytes)`(src, size)`, written into
    /// `dst` (`positions.len() * size` bytes): the part-major copy made
    /// piece by piece into a buffer the caller keeps (a pinned staging
    /// buffer reused for every piece of an upload, say), without a fresh
    /// array of the whole length.
    ///
    /// ```
    /// use warpfit_runtime::partition::{column_blocks, WorkGraph};
    /// use warpfit_runtime::schedule::PartMajor;
    /// use warpfit_runtime::Csr;
    ///
    /// let a = Csr::new(3, 6, vec![0, 4, 4, 6], vec![0, 5, 1, 4, 5, 0], vec![1.0f32; 6])?;
    /// let graph = WorkGraph::from_csr(&a)?;
    /// let parts = PartMajor::from_partition(&graph, column_blocks(&graph, 3)?)?;
    /// let bytes: Vec<u8> = a.col_idx().iter().flat_map(|c| c.to_ne_bytes()).collect();
    /// let whole = parts.permute_bytes(&bytes, 4)?;
    /// let mut piece = [0u8; 8];
    /// parts.permute_bytes_into(&bytes, 4, 2..4, &mut piece)?;
    /// assert_eq!(piece, whole[8..16]);
    /// # Ok::<(), warpfit_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`permute_bytes`](Self::permute_bytes), and positions past the
    /// array or a `dst` of another length.
    pub fn permute_bytes_into(
        &self,
        src: &[u8],
        size: usize,
        positions: std::ops::Range<usize>,
        dst: &mut [u8],
    ) -> Result<()> {
        let n = self.check_bytes(src, size)?;
        if positions.start > positions.end || positions.end > n {
            return Err(Error::invalid(format!(
                "positions {}..{} of a fine array of {n} elements",
                positions.start, positions.end
            )));
        }
        if dst.len() != positions.len() * size {
            return Err(Error::length(
                "part-major piece (bytes = positions x element size)",
                positions.len() * size,
                dst.len(),
            ));
        }
        // SAFETY: `MaybeUninit<u8>` has the layout of `u8`, and
        // `permute_into` only writes initialized bytes, so `dst` stays
        // initialized.
        let dst = unsafe { &mut *(dst as *mut [u8] as *mut [std::mem::MaybeUninit<u8>]) };
        permute_into(src, size, &self.fine_perm, positions, dst);
        Ok(())
    }

    /// Checks a fine array of `size`-byte elements against the layout;
    /// returns its element count.
    fn check_bytes(&self, src: &[u8], size: usize) -> Result<usize> {
        if size == 0 || src.len() % size != 0 {
            return Err(Error::invalid(format!(
                "a fine array of {} bytes is not made of {size}-byte elements",
                src.len()
            )));
        }
        let n = src.len() / size;
        if self.fine_perm.len() > n {
            return Err(Error::invalid(format!(
                "a fine array of {n} elements is shorter than the {} fine tasks its kernel's ranges cover",
                self.fine_perm.len()
            )));
        }
        Ok(n)
    }
}

/// Positions per chunk of a parallel byte permutation.
const GATHER_CHUNK: usize = 1 << 14;

/// Writes positions `positions` of the permuted array into `dst`
/// (`positions.len() * size` bytes, every one written): position `i`
/// takes element `perm[i]` of `src` (`size`-byte elements), or element
/// `i` itself past `perm`. In parallel; element sizes of 1, 2, 4, 8 and
/// 16 bytes copy as one load and store.
fn permute_into(
    src: &[u8],
    size: usize,
    perm: &[u32],
    positions: std::ops::Range<usize>,
    dst: &mut [std::mem::MaybeUninit<u8>],
) {
    let split = positions.end.min(perm.len()).max(positions.start);
    let (head, tail) = dst.split_at_mut((split - positions.start) * size);
    let perm = perm.get(positions.start..split).unwrap_or(&[]);
    match size {
        1 => gather::<1>(src, perm, head),
        2 => gather::<2>(src, perm, head),
        4 => gather::<4>(src, perm, head),
        8 => gather::<8>(src, perm, head),
        16 => gather::<16>(src, perm, head),
        _ => head
            .par_chunks_mut(size * GATHER_CHUNK)
            .zip(perm.par_chunks(GATHER_CHUNK))
            .for_each(|(dst, idx)| {
                for (d, &p) in dst.chunks_exact_mut(size).zip(idx) {
                    let s = &src[p as usize * size..(p as usize + 1) * size];
                    for (d, &b) in d.iter_mut().zip(s) {
                        d.write(b);
                    }
                }
            }),
    }
    tail.par_chunks_mut(GATHER_CHUNK)
        .zip(src[split * size..positions.end * size].par_chunks(GATHER_CHUNK))
        .for_each(|(d, s)| {
            for (d, &b) in d.iter_mut().zip(s) {
                d.write(b);
            }
        });
}

/// `dst` element `i` (of `N` bytes) = `src` element `perm[i]`, in parallel.
fn gather<const N: usize>(src: &[u8], perm: &[u32], dst: &mut [std::mem::MaybeUninit<u8>]) {
    dst.par_chunks_mut(N * GATHER_CHUNK)
        .zip(perm.par_chunks(GATHER_CHUNK))
        .for_each(|(dst, idx)| {
            for (d, &p) in dst.chunks_exact_mut(N).zip(idx) {
                let at = p as usize * N;
                let s: [u8; N] = src[at..at + N].try_into().unwrap_or([0; N]);
                for (d, b) in d.iter_mut().zip(s) {
                    d.write(b);
                }
            }
        });
}

/// `out[i] = src[fine_perm[i]]`, in parallel: a per-fine-task array in a
/// layout's order ([`PartMajor::permute_fine`], the carried layout's).
///
/// # Errors
/// `src` does not have one element per fine task, or the copy exceeds the
/// memory limit.
pub(crate) fn permute_fine_by<T: Copy + Send + Sync>(
    fine_perm: &[u32],
    src: &[T],
) -> Result<Vec<T>> {
    if src.len() != fine_perm.len() {
        return Err(Error::length(
            "per-fine-task array (one element per fine task)",
            fine_perm.len(),
            src.len(),
        ));
    }
    mem::check_elems::<T>("a part-major per-fine-task array", src.len())?;
    Ok(fine_perm.par_iter().map(|&old| src[old as usize]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::{SjTree, WorkGraph};

    #[test]
    fn partitions_whose_ids_do_not_ascend_are_refused() {
        // Two tasks of three tuples; partition 1 lists its ids out of order.
        let g = WorkGraph::new(vec![0, 3, 6], vec![0, 1, 2, 0, 1, 2], 3, 4, 4).unwrap();
        let bad = || {
            Partition::from_parts(
                vec![0, 3, 5, 4, 1, 2],
                vec![0, 2, 6],
                SjTree::default(),
                4,
                0.0,
            )
        };
        let e = PartMajor::from_partition(&g, bad())
            .unwrap_err()
            .to_string();
        assert!(e.contains("do not ascend"), "{e}");
        let e = CacheFitPlan::new(&g, &bad()).unwrap_err().to_string();
        assert!(e.contains("do not ascend"), "{e}");
        // The same ids in order are a partition of the graph.
        let good = Partition::from_parts(
            vec![0, 3, 1, 2, 4, 5],
            vec![0, 2, 6],
            SjTree::default(),
            4,
            0.0,
        );
        let pm = PartMajor::from_partition(&g, good).unwrap();
        assert_eq!(
            (pm.part_ptr(0), pm.part_ptr(1)),
            (&[0, 1, 2][..], &[2, 4, 6][..])
        );
    }
}

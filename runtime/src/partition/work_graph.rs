//! The work graph: one tuple `(task, gathered index)` per fine task.

use super::par;
use crate::error::to_u32;
use crate::exec::GatherKernel;
use crate::sparse::Csr;
use crate::{Error, Result};
use rayon::prelude::*;
use std::borrow::Cow;

/// Tasks per rayon job while a work graph is enumerated from a kernel.
const BUILD_GRAIN: usize = 4096;

/// The work of a gather kernel as the paper's 2-tuple list (Section 2.1).
///
/// Every fine task `k` of coarse task `t` that reads gathered element `g` is one
/// tuple `(t, g)`: an edge between the output vertex `y[t]` and the input
/// vertex `x[g]`. Matrix entries are read once and carry no reuse, so they are
/// not vertices.
///
/// Storage is CSR-like, never a list of pairs: `ptr[t]..ptr[t + 1]` are the tuple
/// ids of task `t` (tuple id = position in task order, which is CSR order) and
/// `gathered[id]` is the tuple's gathered index, both u32. A graph with `m`
/// tuples costs `4 (m + n_tasks)` bytes.
///
/// Fine-task indices: tuple `id` of task `t` is fine task
/// `fine_lo(t) + (id - ptr[t])`. For a CSR matrix (and any kernel whose ranges
/// tile `0..m` in task order) that is `id` itself; otherwise the per-task start
/// is kept so that segments can name the kernel's own `k`.
///
/// The arrays are owned ([`WorkGraph`], the `'static` case) or borrowed from
/// the CSR matrix whose entries the tuples are
/// ([`WorkGraphOf::borrow_csr`]): then the graph costs no memory beyond the
/// matrix, and the partitioner reads the matrix's own row pointers and column
/// indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkGraphOf<'a> {
    n_gathered: u32,
    ptr: Cow<'a, [u32]>,
    gathered: Cow<'a, [u32]>,
    /// First fine-task index of every task, when it differs from `ptr`.
    fine_lo: Option<Vec<u32>>,
    gathered_elem_bytes: usize,
    output_elem_bytes: usize,
}

/// A work graph that owns its arrays.
pub type WorkGraph = WorkGraphOf<'static>;

impl<'a> WorkGraphOf<'a> {
    /// Builds a work graph from its parts, validating every invariant.
    ///
    /// `ptr` has `n_tasks + 1` non-decreasing entries starting at 0 and ending at
    /// `gathered.len()`; every gathered index is `< n_gathered`; the number of
    /// vertices `n_tasks + n_gathered` fits u32 (vertex ids are u32 throughout
    /// the partitioner). Element sizes are in bytes and must be non-zero.
    pub fn new(
        ptr: Vec<u32>,
        gathered: Vec<u32>,
        n_gathered: usize,
        gathered_elem_bytes: usize,
        output_elem_bytes: usize,
    ) -> Result<Self> {
        Self::validated(
            Cow::Owned(ptr),
            Cow::Owned(gathered),
            n_gathered,
            gathered_elem_bytes,
            output_elem_bytes,
        )
    }

    /// The checks of [`WorkGraphOf::new`], over owned or borrowed arrays.
    fn validated(
        ptr: Cow<'a, [u32]>,
        gathered: Cow<'a, [u32]>,
        n_gathered: usize,
        gathered_elem_bytes: usize,
        output_elem_bytes: usize,
    ) -> Result<Self> {
        if ptr.is_empty() {
            return Err(Error::invalid(
                "work graph: task pointer array must have n_tasks + 1 >= 1 entries",
            ));
        }
        let n_tasks = ptr.len() - 1;
        to_u32(
            "work graph vertices (tasks + gathered)",
            n_tasks + n_gathered,
        )?;
        to_u32("work graph tuples", gathered.len())?;
        if ptr[0] != 0 {
            return Err(Error::InvalidMatrix {
                format: "work graph",
                message: format!("task pointer starts at {}, expected 0", ptr[0]),
            });
        }
        if let Some(t) = (0..n_tasks)
            .into_par_iter()
            .with_min_len(BUILD_GRAIN)
            .find_first(|&t| ptr[t] > ptr[t + 1])
        {
            return Err(Error::InvalidMatrix {
                format: "work graph",
                message: format!(
                    "task pointer decreases at task {t}: {} > {}",
                    ptr[t],
                    ptr[t + 1]
                ),
            });
        }
        if ptr[n_tasks] as usize != gathered.len() {
            return Err(Error::length(
                "work graph tuples (= ptr[n_tasks])",
                ptr[n_tasks] as usize,
                gathered.len(),
            ));
        }
        if let Some(i) = gathered
            .par_iter()
            .with_min_len(BUILD_GRAIN)
            .position_first(|&g| g as usize >= n_gathered)
        {
            return Err(Error::out_of_range(
                format!("work graph gathered index of tuple {i}"),
                gathered[i],
                n_gathered,
            ));
        }
        if gathered_elem_bytes == 0 || output_elem_bytes == 0 {
            return Err(Error::invalid(
                "work graph: element sizes must be at least one byte",
            ));
        }
        Ok(WorkGraphOf {
            n_gathered: n_gathered as u32,
            ptr,
            gathered,
            fine_lo: None,
            gathered_elem_bytes,
            output_elem_bytes,
        })
    }

    /// The work graph of `y = A ⊙ x` over a CSR matrix: tasks are rows, tuples
    /// are the stored entries in stored order, gathered indices their columns.
    /// Element sizes are those of `T` for both `x` and `y`; use
    /// [`WorkGraph::with_elem_bytes`] when the vectors have other types.
    pub fn from_csr<T>(csr: &Csr<T>) -> Result<Self> {
        let bytes = std::mem::size_of::<T>().max(1);
        Self::new(
            csr.row_ptr().to_vec(),
            csr.col_idx().to_vec(),
            csr.ncols(),
            bytes,
            bytes,
        )
    }

    /// The same graph as [`WorkGraphOf::from_csr`], reading the matrix's row
    /// pointers and column indices in place instead of copying them: no
    /// allocation, and the matrix must outlive the graph. Use
    /// [`WorkGraphOf::into_owned`] for a graph that does not borrow.
    pub fn borrow_csr<T>(csr: &'a Csr<T>) -> Result<Self> {
        let bytes = std::mem::size_of::<T>().max(1);
        Self::validated(
            Cow::Borrowed(csr.row_ptr()),
            Cow::Borrowed(csr.col_idx()),
            csr.ncols(),
            bytes,
            bytes,
        )
    }

    /// Whether the tuple arrays are borrowed from a matrix.
    pub fn is_borrowed(&self) -> bool {
        matches!(self.gathered, Cow::Borrowed(_))
    }

    /// The same graph owning its arrays (copies them if they were borrowed).
    pub fn into_owned(self) -> WorkGraph {
        WorkGraphOf {
            n_gathered: self.n_gathered,
            ptr: Cow::Owned(self.ptr.into_owned()),
            gathered: Cow::Owned(self.gathered.into_owned()),
            fine_lo: self.fine_lo,
            gathered_elem_bytes: self.gathered_elem_bytes,
            output_elem_bytes: self.output_elem_bytes,
        }
    }

    /// Enumerates the tuples of a kernel from its own IR: for every task
    /// `0..n_tasks` the prologue gives the fine-task range `lo..hi`, and
    /// [`GatherKernel::gathered_index`] the element fine task `k` reads.
    /// Tuples come out in task order, fine tasks in increasing `k` (CSR order).
    ///
    /// A prologue fault or an out-of-range gathered index is an error naming the
    /// kernel and task; a range with `hi < lo` is empty, as the executor runs it.
    pub fn from_kernel<K: GatherKernel>(kernel: &K, n_tasks: usize) -> Result<Self> {
        to_u32("number of tasks", n_tasks)?;
        let n_gathered = kernel.gathered_len();
        to_u32(
            "work graph vertices (tasks + gathered)",
            n_tasks + n_gathered,
        )?;
        // Pass 1: every task's range, in parallel: its start and length.
        let mut lo = par::zeroed_u32("the work graph's fine-task starts", n_tasks)?;
        let mut len = par::zeroed_u32("the work graph's task pointers", n_tasks + 1)?;
        lo.par_chunks_mut(BUILD_GRAIN)
            .zip(len[..n_tasks].par_chunks_mut(BUILD_GRAIN))
            .enumerate()
            .try_for_each(|(c, (lo, len))| {
                for (i, (lo, len)) in lo.iter_mut().zip(len.iter_mut()).enumerate() {
                    let t = c * BUILD_GRAIN + i;
                    let (_, a, b) = kernel.shape(t).map_err(|f| f.into_error(K::NAME, t))?;
                    *lo = to_u32("fine-task index", a)?;
                    *len = to_u32("work graph tuples", b.max(a) - a)?;
                }
                Ok::<(), Error>(())
            })?;
        // The task pointers: an exclusive scan of the lengths, per chunk
        // in parallel; the fine-task starts are kept only when they are
        // not the pointers themselves.
        let ptr = exclusive_scan(len, "work graph tuples")?;
        let total = ptr[n_tasks] as usize;
        let identity = lo.par_iter().zip(ptr.par_iter()).all(|(&lo, &p)| lo == p);
        let fine_lo = (!identity).then_some(lo);
        // Pass 2: gathered indices, one disjoint slice per block of tasks.
        let mut gathered = par::zeroed_u32("the work graph's gathered indices", total)?;
        let mut blocks: Vec<(usize, &mut [u32])> = Vec::new();
        let mut rest: &mut [u32] = &mut gathered;
        for b in (0..n_tasks).step_by(BUILD_GRAIN) {
            let e = (b + BUILD_GRAIN).min(n_tasks);
            let (head, tail) = rest.split_at_mut((ptr[e] - ptr[b]) as usize);
            blocks.push((b, head));
            rest = tail;
        }
        blocks.into_par_iter().try_for_each(|(b, out)| {
            let e = (b + BUILD_GRAIN).min(n_tasks);
            let mut w = 0;
            for t in b..e {
                let (ctx, lo, hi) = kernel.shape(t).map_err(|f| f.into_error(K::NAME, t))?;
                for k in lo..hi.max(lo) {
                    let g = kernel
                        .gathered_index(t, &ctx, k)
                        .map_err(|f| f.into_error(K::NAME, t))?;
                    if g >= n_gathered {
                        return Err(Error::out_of_range(
                            format!(
                                "kernel `{}`, task {t}, fine task {k}: gathered array `{}`",
                                K::NAME,
                                K::GATHERED
                            ),
                            g,
                            n_gathered,
                        ));
                    }
                    out[w] = g as u32;
                    w += 1;
                }
            }
            Ok(())
        })?;
        // Pointers ascend from 0 to the tuple count by construction and
        // every gathered index was checked above.
        Ok(WorkGraphOf {
            n_gathered: n_gathered as u32,
            ptr: Cow::Owned(ptr),
            gathered: Cow::Owned(gathered),
            fine_lo,
            gathered_elem_bytes: K::GATHERED_ELEM_BYTES.max(1),
            output_elem_bytes: K::OUTPUT_ELEM_BYTES.max(1),
        })
    }

    /// The same graph with other element sizes (bytes of one gathered element
    /// and of one task's outputs), for capacity planning.
    pub fn with_elem_bytes(mut self, gathered: usize, output: usize) -> Result<Self> {
        if gathered == 0 || output == 0 {
            return Err(Error::invalid(
                "work graph: element sizes must be at least one byte",
            ));
        }
        self.gathered_elem_bytes = gathered;
        self.output_elem_bytes = output;
        Ok(self)
    }

    /// Number of coarse tasks (output vertices).
    pub fn n_tasks(&self) -> usize {
        self.ptr.len() - 1
    }
    /// Length of the gathered array (input vertices).
    pub fn n_gathered(&self) -> usize {
        self.n_gathered as usize
    }
    /// Number of tuples (fine tasks, edges).
    pub fn n_tuples(&self) -> usize {
        self.gathered.len()
    }
    /// Tuple range of every task, `n_tasks + 1` entries.
    pub fn ptr(&self) -> &[u32] {
        &self.ptr
    }
    /// Gathered index of every tuple, in task order.
    pub fn gathered(&self) -> &[u32] {
        &self.gathered
    }
    /// Bytes of one gathered element.
    pub fn gathered_elem_bytes(&self) -> usize {
        self.gathered_elem_bytes
    }
    /// Bytes of one task's output elements.
    pub fn output_elem_bytes(&self) -> usize {
        self.output_elem_bytes
    }
    /// Tuple ids of task `t`.
    pub fn task_tuples(&self, t: usize) -> std::ops::Range<usize> {
        self.ptr[t] as usize..self.ptr[t + 1] as usize
    }

    /// The task that owns tuple `id` (`id < n_tuples`). Empty tasks own nothing,
    /// so this is the last task whose range starts at or before `id`.
    #[inline]
    pub fn task_of(&self, id: u32) -> u32 {
        (self.ptr.partition_point(|&p| p <= id) - 1) as u32
    }

    /// The kernel's fine-task index of tuple `id` of task `t`.
    #[inline]
    pub fn fine_index(&self, t: u32, id: u32) -> u32 {
        match &self.fine_lo {
            None => id,
            Some(lo) => lo[t as usize] + (id - self.ptr[t as usize]),
        }
    }

    /// First fine-task index of task `t` (where its empty segment sits when it
    /// has no tuple).
    #[inline]
    pub fn fine_lo(&self, t: u32) -> u32 {
        match &self.fine_lo {
            None => self.ptr[t as usize],
            Some(lo) => lo[t as usize],
        }
    }

    /// Total number of distinct vertices touched by at least one tuple: tasks
    /// with a fine task plus gathered elements read at least once.
    pub fn touched_vertices(&self) -> usize {
        let tasks = self.ptr.windows(2).filter(|w| w[1] > w[0]).count();
        let mut seen = vec![false; self.n_gathered()];
        let mut cols = 0;
        for &g in self.gathered.iter() {
            let s = &mut seen[g as usize];
            cols += usize::from(!*s);
            *s = true;
        }
        tasks + cols
    }
}

/// The exclusive prefix sums of `len` (its last entry ignored), in place:
/// entry `t` becomes the sum of entries `0..t`. Chunks are summed in
/// parallel, their offsets added in parallel. An error naming `what` when
/// a sum exceeds u32.
fn exclusive_scan(mut len: Vec<u32>, what: &'static str) -> Result<Vec<u32>> {
    const SCAN_CHUNK: usize = 1 << 16;
    let n = len.len() - 1;
    let sums: Vec<u64> = len[..n]
        .par_chunks(SCAN_CHUNK)
        .map(|c| c.iter().map(|&x| u64::from(x)).sum())
        .collect();
    let mut offsets = Vec::with_capacity(sums.len());
    let mut total = 0u64;
    for s in sums {
        offsets.push(total);
        total += s;
    }
    to_u32(what, total as usize)?;
    len[n] = total as u32;
    len[..n]
        .par_chunks_mut(SCAN_CHUNK)
        .zip(offsets.par_iter())
        .for_each(|(c, &start)| {
            let mut at = start as u32;
            for x in c {
                let l = *x;
                *x = at;
                at += l;
            }
        });
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_borrowed_graph_is_the_copied_one_without_the_copy() {
        let csr = crate::gen::rgg(500, 4).unwrap();
        let owned = WorkGraph::from_csr(&csr).unwrap();
        let borrowed = WorkGraphOf::borrow_csr(&csr).unwrap();
        assert!(borrowed.is_borrowed() && !owned.is_borrowed());
        // The very arrays of the matrix, not copies.
        assert!(std::ptr::eq(borrowed.ptr(), csr.row_ptr()));
        assert!(std::ptr::eq(borrowed.gathered(), csr.col_idx()));
        assert_eq!(borrowed, owned);
        let again = borrowed.clone().into_owned();
        assert!(!again.is_borrowed());
        assert_eq!(again, owned);
        assert_eq!(
            (
                borrowed.n_tasks(),
                borrowed.n_gathered(),
                borrowed.n_tuples()
            ),
            (csr.nrows(), csr.ncols(), csr.nnz())
        );
        assert_eq!(borrowed.touched_vertices(), owned.touched_vertices());
        // The partitioner gives the same partition either way.
        for bisection in [
            super::super::Bisection::KdTiling,
            super::super::Bisection::Coarsened(Default::default()),
        ] {
            let opts = super::super::PartitionOptions {
                capacity: 300,
                bisection,
            };
            let a = super::super::dbwp(&owned, &opts, None).unwrap();
            let b = super::super::dbwp(&borrowed, &opts, None).unwrap();
            assert!(a.len() > 1);
            assert_eq!((a.order(), a.part_ptr()), (b.order(), b.part_ptr()));
        }
    }
}

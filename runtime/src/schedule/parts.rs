//! A cache-fit plan laid out part by part: every partition's share of all
//! tasks contiguous, with a range array of its own.

use super::plan::CacheFitPlan;
use crate::error::to_u32;
use crate::mem;
use crate::{Error, Result};

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
    /// # Errors
    /// The arrays exceed the memory limit.
    pub fn new(plan: &CacheFitPlan) -> Result<Self> {
        let (n, k, m) = (plan.n_tasks(), plan.len(), plan.n_fine());
        let ptr_len = n
            .checked_add(1)
            .and_then(|l| l.checked_mul(k.max(1)))
            .ok_or_else(|| Error::invalid("part-major range arrays overflow"))?;
        mem::check(
            &format!("the part-major layout of {m} fine tasks, {k} partitions of {n} tasks"),
            mem::bytes_of::<u32>("part-major arrays", m.saturating_add(ptr_len))?,
        )?;
        let plan_perm = plan.fine_perm();
        let mut fine_perm = Vec::with_capacity(m);
        let mut ptrs = Vec::with_capacity(ptr_len);
        for p in 0..k {
            let mut segs = plan.part(p)?.iter().peekable();
            for t in 0..n {
                ptrs.push(to_u32("part-major position", fine_perm.len())?);
                if let Some(s) = segs.next_if(|s| s.task as usize == t) {
                    fine_perm.extend_from_slice(&plan_perm[s.lo as usize..s.hi as usize]);
                }
            }
            ptrs.push(to_u32("part-major position", fine_perm.len())?);
        }
        if k == 0 {
            // No fine task: one partition of empty ranges.
            ptrs.resize(n + 1, 0);
        }
        if fine_perm.len() != m {
            return Err(Error::invalid(format!(
                "part-major layout: the partitions hold {} fine tasks, the plan {m}",
                fine_perm.len()
            )));
        }
        Ok(PartMajor {
            n_tasks: n,
            fine_perm,
            ptrs,
        })
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
        use rayon::prelude::*;
        if src.len() != self.fine_perm.len() {
            return Err(Error::length(
                "per-fine-task array (one element per fine task)",
                self.fine_perm.len(),
                src.len(),
            ));
        }
        mem::check_elems::<T>("a part-major per-fine-task array", src.len())?;
        Ok(self
            .fine_perm
            .par_iter()
            .map(|&old| src[old as usize])
            .collect())
    }
}

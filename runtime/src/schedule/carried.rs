//! The CPU backend running a part-major plan as the GPU's carried launches
//! do: one pass per partition, in partition order, every task folding its
//! share of that partition onto an accumulator carried from the previous
//! pass (one per task), the epilogue after the last pass.
//!
//! The GPU runs each partition as a launch over the partition's own range
//! array (`CARRY_*` in the device library); here the kernel keeps its own
//! range array, whose prologue gives the context the fold and the epilogue
//! read, and the executor takes each task's fine-task range of partition
//! `p` from partition `p`'s range array instead. `#[throttled]` guarantees
//! that this is the same thing: nothing after a throttled kernel's prologue
//! uses a binding that reads the range array, so the context does not
//! depend on which range the fold covers.

use super::parts::{permute_fine_by, PartMajor};
use super::plan::CacheFitPlan;
use crate::error::to_u32;
use crate::exec::cpu::{FirstFault, GRAIN, PRECHECK_SPAN};
use crate::exec::{Fault, NestedKernel};
use crate::mem;
use crate::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;
use std::time::Instant;

/// One partition's range array over the tasks it touches: task `t` in
/// `first..first + ptr.len() - 1` has positions `ptr[t - first] ..
/// ptr[t - first + 1]`, every other task none. `ptr` is nondecreasing and
/// has at least one entry.
#[derive(Debug, Clone, Copy)]
struct Part<'a> {
    first: usize,
    ptr: &'a [u32],
}

impl<'a> Part<'a> {
    /// A full range array (one entry per task and one more, nondecreasing)
    /// cut to the tasks from the first to the last with a share: two binary
    /// searches, since the tasks before the first share all start at
    /// `ptr[0]` and those after the last all end at `ptr[n]`.
    fn of_dense(ptr: &'a [u32]) -> Self {
        let (Some(&lo_pos), Some(&hi_pos)) = (ptr.first(), ptr.last()) else {
            return Part { first: 0, ptr };
        };
        let lo = ptr.partition_point(|&v| v <= lo_pos).saturating_sub(1);
        let hi = ptr.partition_point(|&v| v < hi_pos).max(lo);
        Part {
            first: lo,
            ptr: &ptr[lo..=hi],
        }
    }

    /// The tasks with a share, and those between them.
    fn active(&self) -> Range<usize> {
        self.first..self.first + self.ptr.len() - 1
    }
}

/// The partitions' range arrays of a part-major plan: task `t`'s fine tasks
/// (positions of the part-major per-fine-task arrays) in partition `p`.
/// Checked once when made, so that every [`run_carried`] over them trusts
/// them. Each partition keeps the range of the tasks it touches, so that a
/// pass visits those only.
///
/// ```
/// use warpfit_runtime::schedule::CarriedParts;
/// let p0 = [0u32, 2, 2, 3];
/// let p1 = [3u32, 5, 5, 6];
/// let parts = CarriedParts::new(vec![&p0[..], &p1[..]])?;
/// assert_eq!((parts.len(), parts.n_tasks()), (2, 3));
/// // A range array that decreases is refused.
/// assert!(CarriedParts::new(vec![&[0u32, 2, 1][..]]).is_err());
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct CarriedParts<'a> {
    parts: Vec<Part<'a>>,
    n_tasks: usize,
}

impl<'a> CarriedParts<'a> {
    /// The partitions' full range arrays (`ptr[t]..ptr[t + 1]` for every
    /// task `t`), in partition order.
    ///
    /// # Errors
    /// No partition; range arrays of different lengths or empty (one entry
    /// per task and one more); a range array that decreases.
    pub fn new(ptrs: Vec<&'a [u32]>) -> Result<Self> {
        let first = ptrs
            .first()
            .ok_or_else(|| Error::invalid("a carried run needs at least one partition"))?;
        let n_tasks = first.len().checked_sub(1).ok_or_else(|| {
            Error::invalid("a partition's range array needs one entry per task and one more")
        })?;
        for (p, ptr) in ptrs.iter().enumerate() {
            if ptr.len() != n_tasks + 1 {
                return Err(Error::length(
                    format!("range array of partition {p} (tasks + 1, as partition 0's)"),
                    n_tasks + 1,
                    ptr.len(),
                ));
            }
            if let Some(t) = ptr.par_windows(2).position_any(|w| w[0] > w[1]) {
                return Err(Error::invalid(format!(
                    "range array of partition {p} decreases at task {t} ({} then {})",
                    ptr[t],
                    ptr[t + 1]
                )));
            }
        }
        Ok(CarriedParts {
            parts: ptrs.into_iter().map(Part::of_dense).collect(),
            n_tasks,
        })
    }

    /// The range arrays of `parts` (valid by construction: not checked again).
    pub fn of_part_major(parts: &'a PartMajor) -> Self {
        CarriedParts {
            parts: (0..parts.len())
                .map(|p| Part::of_dense(parts.part_ptr(p)))
                .collect(),
            n_tasks: parts.part_ptr(0).len() - 1,
        }
    }

    /// Number of partitions (at least 1).
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Never empty: [`CarriedParts::new`] refuses no partition.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Number of tasks.
    pub fn n_tasks(&self) -> usize {
        self.n_tasks
    }

    /// The tasks partition `p` touches, and those between them (empty for
    /// `p >= len()`).
    pub fn active_tasks(&self, p: usize) -> Range<usize> {
        self.parts.get(p).map_or(0..0, Part::active)
    }
}

/// A [`CacheFitPlan`] laid out part by part for [`run_carried`]: the fine
/// tasks ordered by partition, then by task (as [`PartMajor`] orders them),
/// and per partition a range array over the tasks it touches only, from
/// the first to the last. Column blocks touch nearly every row, so their
/// arrays are as long as [`PartMajor`]'s; a K-D tile touches a range of
/// rows, and its array covers those: the layout of `k` K-D tiles of `n`
/// tasks takes about `n` range entries, not `k · n`.
///
/// ```
/// use warpfit_runtime::partition::{column_blocks, WorkGraph};
/// use warpfit_runtime::schedule::{CacheFitPlan, CarriedLayout, PartMajor};
/// use warpfit_runtime::Csr;
///
/// // Row 0 reads columns 0, 5, 1, 4; row 1 is empty; row 2 reads 5 and 0.
/// let a = Csr::new(3, 6, vec![0, 4, 4, 6], vec![0, 5, 1, 4, 5, 0], vec![1.0f32; 6])?;
/// let graph = WorkGraph::from_csr(&a)?;
/// let plan = CacheFitPlan::new(&graph, &column_blocks(&graph, 3)?)?;
/// let layout = CarriedLayout::new(&plan)?;
/// // The fine tasks in the order PartMajor gives them.
/// assert_eq!(layout.fine_perm(), PartMajor::new(&plan)?.fine_perm());
/// assert_eq!(layout.permute_fine(a.col_idx())?, [0, 1, 0, 5, 4, 5]);
/// let parts = layout.parts();
/// assert_eq!((parts.len(), parts.active_tasks(0)), (2, 0..3));
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarriedLayout {
    n_tasks: usize,
    /// `fine_perm[position] = original fine-task id`.
    fine_perm: Vec<u32>,
    /// Partition `p` touches tasks from `firsts[p]`; its range array is
    /// `ptrs[ptr_at[p]..ptr_at[p + 1]]`.
    firsts: Vec<usize>,
    ptr_at: Vec<usize>,
    ptrs: Vec<u32>,
}

impl CarriedLayout {
    /// `plan` laid out part by part.
    ///
    /// # Errors
    /// The layout exceeds the memory limit or `u32` positions.
    pub fn new(plan: &CacheFitPlan) -> Result<Self> {
        let (n, k, m) = (plan.n_tasks(), plan.len(), plan.n_fine());
        // Per partition: its tasks from the first to the last, plus one.
        let spans: Vec<usize> = (0..k)
            .map(|p| {
                let segs = plan.part(p)?;
                Ok(match (segs.first(), segs.last()) {
                    (Some(a), Some(b)) => (b.task - a.task) as usize + 2,
                    _ => 1,
                })
            })
            .collect::<Result<_>>()?;
        let n_ptrs = spans.iter().sum::<usize>().max(1);
        mem::check(
            &format!("the carried layout of {m} fine tasks, {k} partitions of {n} tasks"),
            mem::bytes_of::<u32>("carried layout arrays", m.saturating_add(n_ptrs))?,
        )?;
        let plan_perm = plan.fine_perm();
        let mut fine_perm = Vec::with_capacity(m);
        let mut ptrs = Vec::with_capacity(n_ptrs);
        let mut firsts = Vec::with_capacity(k.max(1));
        let mut ptr_at = vec![0usize];
        for p in 0..k {
            let segs = plan.part(p)?;
            let first = segs.first().map_or(0, |s| s.task as usize);
            firsts.push(first);
            let mut t = first;
            for s in segs {
                // Tasks between two segments have no share here.
                while t <= s.task as usize {
                    ptrs.push(to_u32("carried layout position", fine_perm.len())?);
                    t += 1;
                }
                fine_perm.extend_from_slice(&plan_perm[s.lo as usize..s.hi as usize]);
            }
            ptrs.push(to_u32("carried layout position", fine_perm.len())?);
            ptr_at.push(ptrs.len());
        }
        if k == 0 {
            // No fine task: one partition of no task.
            firsts.push(0);
            ptrs.push(0);
            ptr_at.push(1);
        }
        if fine_perm.len() != m {
            return Err(Error::invalid(format!(
                "carried layout: the partitions hold {} fine tasks, the plan {m}",
                fine_perm.len()
            )));
        }
        Ok(CarriedLayout {
            n_tasks: n,
            fine_perm,
            firsts,
            ptr_at,
            ptrs,
        })
    }

    /// Number of partitions (at least 1).
    pub fn len(&self) -> usize {
        self.firsts.len()
    }

    /// Never empty: a plan without fine tasks has one partition of none.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// `fine_perm()[position] = original fine-task id`.
    pub fn fine_perm(&self) -> &[u32] {
        &self.fine_perm
    }

    /// A per-fine-task array in this layout's order: `out[i] =
    /// src[fine_perm()[i]]`.
    ///
    /// # Errors
    /// `src` does not have one element per fine task, or the copy exceeds
    /// the memory limit.
    pub fn permute_fine<T: Copy + Send + Sync>(&self, src: &[T]) -> Result<Vec<T>> {
        permute_fine_by(&self.fine_perm, src)
    }

    /// The range arrays [`run_carried`] takes.
    pub fn parts(&self) -> CarriedParts<'_> {
        CarriedParts {
            parts: self
                .firsts
                .iter()
                .zip(self.ptr_at.windows(2))
                .map(|(&first, w)| Part {
                    first,
                    ptr: &self.ptrs[w[0]..w[1]],
                })
                .collect(),
            n_tasks: self.n_tasks,
        }
    }

    /// Bytes of the layout's range arrays, against [`PartMajor`]'s
    /// `partitions × (tasks + 1)` entries.
    pub fn range_bytes(&self) -> usize {
        std::mem::size_of_val(&self.ptrs[..])
    }
}

/// Wall-clock times of a [`run_carried`].
#[derive(Debug, Clone, PartialEq)]
pub struct CarriedRun {
    /// Seconds of each partition's pass, in partition order.
    pub part_seconds: Vec<f64>,
}

impl CarriedRun {
    /// Seconds of all passes.
    pub fn total_seconds(&self) -> f64 {
        self.part_seconds.iter().sum()
    }
}

/// Calls `f(task, lo, hi, ok)` for every task of `tasks` in order, with
/// its positions `lo..hi` in `part`, in runs of consecutive tasks whose
/// positions add up to about [`PRECHECK_SPAN`]: the positions of a run are
/// contiguous in the part-major layout, so one
/// [`precheck`](NestedKernel::precheck) covers them (`ok`), and the pass
/// over their indices leaves them in L1/L2 for the folds that follow.
#[inline(always)]
fn for_each_run<K: NestedKernel>(
    kernel: &K,
    part: &Part<'_>,
    tasks: Range<usize>,
    mut f: impl FnMut(usize, usize, usize, bool),
) {
    // The block's tasks the partition touches, `a..b`; the others have no
    // share here.
    let active = part.active();
    let a = tasks.start.max(active.start).min(tasks.end);
    let b = tasks.end.min(active.end).max(a);
    for t in tasks.start..a {
        f(t, 0, 0, false);
    }
    if a < b {
        // Their range entries: `ptr[i]..ptr[i + 1]` is task `a + i`'s share.
        let ptr = &part.ptr[a - part.first..=b - part.first];
        let m = b - a;
        let mut i = 0;
        while i < m {
            let lo = ptr[i] as usize;
            let mut j = i + 1;
            while j < m && (ptr[j] as usize) - lo < PRECHECK_SPAN {
                j += 1;
            }
            let hi = ptr[j] as usize;
            let ok = lo < hi && kernel.precheck(lo, hi);
            for (t, w) in (a + i..).zip(ptr[i..=j].windows(2)) {
                f(t, w[0] as usize, w[1] as usize, ok);
            }
            i = j;
        }
    }
    for t in b..tasks.end {
        f(t, 0, 0, false);
    }
}

/// Folds positions `lo..hi` of `task` onto `acc`: unchecked when `ok` (the
/// run's precheck, which covers `lo..hi`, passed), else checked as
/// [`NestedKernel::fold_range`] does, which reports the exact fault.
///
/// # Safety
/// `ok` only when `precheck` passed on this kernel for a range holding
/// `lo..hi`.
#[inline(always)]
unsafe fn fold<K: NestedKernel>(
    kernel: &K,
    ok: bool,
    task: usize,
    ctx: &K::Ctx,
    lo: usize,
    hi: usize,
    acc: K::Acc,
) -> Result<K::Acc, Fault> {
    if lo >= hi {
        Ok(acc)
    } else if ok {
        // SAFETY: the caller's contract.
        unsafe { kernel.fold_range_prechecked(task, ctx, lo, hi, acc) }
    } else {
        kernel.fold_range(task, ctx, lo, hi, acc)
    }
}

/// Runs `kernel` over a part-major plan on the CPU: for each partition in
/// order, every task in parallel (rayon) folds its share of the partition
/// onto its carried accumulator (from `init` in the first partition), and
/// the last partition runs the epilogue. The CPU mirror of the GPU's
/// carried launches: each pass gathers from one partition's slice of the
/// gathered array only, which a cache-fit plan sized for the cache.
///
/// `kernel` reads its per-fine-task arrays in part-major order
/// ([`CarriedLayout::permute_fine`], or [`PartMajor::permute_fine`]: the
/// same order) and keeps its own range array (the one the plan was made
/// from), which gives each task's context; `parts` gives the fine-task
/// ranges ([`CarriedLayout::parts`], or [`CarriedParts::of_part_major`]).
/// A task's value is the fold of its shares in partition order, so the
/// result equals the unthrottled run's for a commutative and associative
/// reduce operator: exactly for integer, boolean, min and max folds, up to
/// rounding for float sums. The kernel must obey `#[throttled]`'s rule that
/// nothing after the prologue uses a binding read from the range array
/// (the macro checks it for generated kernels).
///
/// The first and the last pass visit every task (`init`, the epilogue);
/// the others only the tasks from the first to the last the partition
/// touches, so a partition of a few rows (a K-D tile) costs those rows.
///
/// Each pass checks the loads of runs of consecutive tasks with one
/// [`precheck`](NestedKernel::precheck) and folds them unchecked, as the
/// unthrottled executor does; a task whose loads do not pass is folded
/// checked, so it reports its exact fault.
///
/// Tasks `0..parts.n_tasks()` run: a kernel with fewer tasks faults in its
/// prologue (an index fault), it never reads out of bounds.
///
/// # Errors
/// The kernel's faults: the pass of the first partition in which a task
/// faults returns the fault of its lowest-numbered failing task, as
/// [`cpu::run`](crate::exec::cpu::run) does (outputs are then
/// unspecified); the carried accumulators exceeding the memory limit.
///
/// ```
/// use warpfit_runtime::exec::{Fault, NestedKernel, SharedOut};
/// use warpfit_runtime::partition::{column_blocks, WorkGraph};
/// use warpfit_runtime::schedule::{run_carried, CacheFitPlan, CarriedParts, PartMajor};
/// use warpfit_runtime::{gen, Tasks};
///
/// /// `out[r] = min over the row of x[col[k]]`, from `u32::MAX`.
/// struct RowMin<'a> { ptr: &'a [u32], col: &'a [u32], x: &'a [u32], out: SharedOut<'a, u32> }
/// impl NestedKernel for RowMin<'_> {
///     const NAME: &'static str = "rowmin";
///     type Acc = u32;
///     type Ctx = ();
///     fn prologue(&self, t: usize) -> Result<((), usize, usize), Fault> {
///         Ok(((), self.ptr[t] as usize, self.ptr[t + 1] as usize))
///     }
///     fn init(&self, _: usize, _: &()) -> Result<u32, Fault> { Ok(u32::MAX) }
///     fn map(&self, _: usize, _: &(), k: usize) -> Result<u32, Fault> {
///         let c = *self.col.get(k).ok_or(Fault::index("col", k, self.col.len()))? as usize;
///         self.x.get(c).copied().ok_or(Fault::index("x", c, self.x.len()))
///     }
///     fn reduce(&self, a: u32, b: u32) -> Result<u32, Fault> { Ok(a.min(b)) }
///     fn epilogue(&self, t: usize, _: &(), acc: u32) -> Result<(), Fault> {
///         // SAFETY: each task writes only its own index.
///         unsafe { self.out.set(t, acc, "out") }
///     }
/// }
///
/// let a = gen::rmat(9, 8, 3)?;
/// let x: Vec<u32> = (0..a.ncols() as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
/// let mut want = vec![0u32; a.nrows()];
/// let k = RowMin { ptr: a.row_ptr(), col: a.col_idx(), x: &x, out: SharedOut::new(&mut want) };
/// warpfit_runtime::exec::cpu::run(&k, Tasks::All(a.nrows()))?;
///
/// // Column blocks of 100 columns, laid out part by part.
/// let g = WorkGraph::from_csr(&a)?;
/// let plan = CacheFitPlan::new(&g, &column_blocks(&g, 100)?)?;
/// let parts = PartMajor::new(&plan)?;
/// let col = parts.permute_fine(a.col_idx())?;
/// let mut got = vec![0u32; a.nrows()];
/// let k = RowMin { ptr: a.row_ptr(), col: &col, x: &x, out: SharedOut::new(&mut got) };
/// let run = run_carried(&k, &CarriedParts::of_part_major(&parts))?;
/// assert_eq!(run.part_seconds.len(), parts.len());
/// assert_eq!(got, want);
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
pub fn run_carried<K: NestedKernel>(kernel: &K, parts: &CarriedParts<'_>) -> Result<CarriedRun> {
    let n = parts.n_tasks;
    let k = parts.len();
    let mut part_seconds = Vec::with_capacity(k);
    let blocks = n.div_ceil(GRAIN);
    let block = |b: usize| b * GRAIN..((b + 1) * GRAIN).min(n);
    // SAFETY (of every `fold` below): `for_each_run` passes `ok` only for a
    // run whose precheck covers the positions it passes with it, on this
    // kernel, whose inputs are shared borrows that cannot change meanwhile.

    if k == 1 {
        // One partition: every task whole, init to epilogue.
        let part = &parts.parts[0];
        let faults = FirstFault::new();
        let start = Instant::now();
        (0..blocks).into_par_iter().for_each(|b| {
            for_each_run(kernel, part, block(b), |t, lo, hi, ok| {
                let step = || -> Result<(), Fault> {
                    let (ctx, _, _) = kernel.prologue(t)?;
                    let init = kernel.init(t, &ctx)?;
                    let acc = unsafe { fold(kernel, ok, t, &ctx, lo, hi, init)? };
                    kernel.epilogue(t, &ctx, acc)
                };
                if let Err(f) = step() {
                    faults.record(t, f);
                }
            });
        });
        part_seconds.push(start.elapsed().as_secs_f64());
        faults.into_result::<K>()?;
        return Ok(CarriedRun { part_seconds });
    }

    mem::check_elems::<K::Acc>("the carried accumulators (one per task)", n)?;
    let mut carry: Vec<K::Acc> = Vec::new();
    carry.try_reserve_exact(n).map_err(|e| Error::Unavailable {
        what: format!("{n} carried accumulators"),
        reason: e.to_string(),
    })?;

    // First partition: init, fold, store.
    {
        let part = &parts.parts[0];
        let faults = FirstFault::new();
        let start = Instant::now();
        carry.spare_capacity_mut()[..n]
            .par_chunks_mut(GRAIN)
            .enumerate()
            .for_each(|(b, slots)| {
                let tasks = block(b);
                let first = tasks.start;
                for_each_run(kernel, part, tasks, |t, lo, hi, ok| {
                    let step = || -> Result<K::Acc, Fault> {
                        let (ctx, _, _) = kernel.prologue(t)?;
                        let init = kernel.init(t, &ctx)?;
                        unsafe { fold(kernel, ok, t, &ctx, lo, hi, init) }
                    };
                    match step() {
                        Ok(acc) => {
                            slots[t - first].write(acc);
                        }
                        Err(f) => faults.record(t, f),
                    }
                });
            });
        part_seconds.push(start.elapsed().as_secs_f64());
        faults.into_result::<K>()?;
        // SAFETY: no task faulted, so every task `0..n` wrote its slot
        // (the chunks cover `0..n`, one slot per task), and `n` is within
        // the capacity reserved above.
        unsafe { carry.set_len(n) };
    }

    // Middle partitions: fold onto the carried value, over the tasks the
    // partition touches only (a K-D tile's rows). A task with no share
    // skips its prologue (it ran without fault in the first pass).
    for part in &parts.parts[1..k - 1] {
        let faults = FirstFault::new();
        let start = Instant::now();
        let active = part.active();
        carry[active.clone()]
            .par_chunks_mut(GRAIN)
            .enumerate()
            .for_each(|(b, accs)| {
                let first = active.start + b * GRAIN;
                for_each_run(kernel, part, first..first + accs.len(), |t, lo, hi, ok| {
                    if lo >= hi {
                        return;
                    }
                    let acc = &mut accs[t - first];
                    let step = || -> Result<K::Acc, Fault> {
                        let (ctx, _, _) = kernel.prologue(t)?;
                        unsafe { fold(kernel, ok, t, &ctx, lo, hi, *acc) }
                    };
                    match step() {
                        Ok(v) => *acc = v,
                        Err(f) => faults.record(t, f),
                    }
                });
            });
        part_seconds.push(start.elapsed().as_secs_f64());
        faults.into_result::<K>()?;
    }

    // Last partition: fold, then the epilogue.
    let part = &parts.parts[k - 1];
    let faults = FirstFault::new();
    let start = Instant::now();
    carry.par_chunks(GRAIN).enumerate().for_each(|(b, accs)| {
        let tasks = block(b);
        let first = tasks.start;
        for_each_run(kernel, part, tasks, |t, lo, hi, ok| {
            let step = || -> Result<(), Fault> {
                let (ctx, _, _) = kernel.prologue(t)?;
                let acc = unsafe { fold(kernel, ok, t, &ctx, lo, hi, accs[t - first])? };
                kernel.epilogue(t, &ctx, acc)
            };
            if let Err(f) = step() {
                faults.record(t, f);
            }
        });
    });
    part_seconds.push(start.elapsed().as_secs_f64());
    faults.into_result::<K>()?;
    Ok(CarriedRun { part_seconds })
}

#[cfg(test)]
mod tests {
    use super::Part;

    #[test]
    fn parts_keep_the_hull_of_the_nonempty_shares() {
        let active = |ptr: &[u32]| Part::of_dense(ptr).active();
        assert_eq!(active(&[0, 0, 2, 2, 5, 5, 5]), 1..4);
        assert_eq!(active(&[3, 4]), 0..1);
        assert!(active(&[7, 7, 7]).is_empty());
        assert_eq!(active(&[0]), 0..0);
        assert_eq!(active(&[1, 2, 2, 3]), 0..3);
        assert_eq!(Part::of_dense(&[0, 0, 2, 2, 5, 5, 5]).ptr, [0, 2, 2, 5]);
    }
}

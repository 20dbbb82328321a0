//! The CPU backend following a cache-fit plan.
//!
//! Every launch of a schedule is one [`cpu::run`] of a [`TaskList`]: the
//! executor's own parallel loop, fault reporting and in-list merge of split
//! tasks. What the executor cannot do alone is merge a task whose segments
//! lie in *different* launches (a row split across two CF partitions): its
//! merge runs only at the end of one list. So, as on the GPU (per-segment
//! scratch, then a merge kernel), a task that occurs in more than one
//! launch is *staged*: in each launch a wrapper kernel folds its segments
//! there without `init` and stores the partial instead of running the
//! epilogue; after the last launch a merge kernel, run by the same
//! executor, folds the partials in launch order from `init` and runs the
//! epilogue. Every other task runs exactly as in an unthrottled task-list
//! launch.
//!
//! [`cpu::run`]: crate::exec::cpu::run

use super::plan::CacheFitPlan;
use crate::exec::{cpu, Fault, NestedKernel, SharedOut, TaskList, Tasks};
use crate::mem;
use crate::Result;
use std::ops::Range;
use std::time::Instant;

const NONE: u32 = u32::MAX;

/// A kernel whose per-fine-task arrays are in their original order, seen
/// in plan order: fine task `k` of the plan is the kernel's
/// `fine_perm()[k]`.
///
/// [`run_plan`] expects a kernel over arrays in plan order
/// ([`CacheFitPlan::permute_fine`]), as the GPU's throttled handle keeps
/// them. This wrapper runs a kernel over the user's own arrays instead, at
/// the cost of one more load per fine task and without the kernel's
/// unchecked fast path (a segment's positions map anywhere in its task's
/// range, which the kernel's range precheck does not cover).
pub struct PlanOrder<'a, K> {
    inner: &'a K,
    fine_perm: &'a [u32],
}

impl<'a, K: NestedKernel> PlanOrder<'a, K> {
    /// `kernel` seen through `plan`'s fine-task permutation.
    pub fn new(kernel: &'a K, plan: &'a CacheFitPlan) -> Self {
        PlanOrder {
            inner: kernel,
            fine_perm: plan.fine_perm(),
        }
    }
}

impl<K: NestedKernel> NestedKernel for PlanOrder<'_, K> {
    const NAME: &'static str = K::NAME;
    type Acc = K::Acc;
    type Ctx = K::Ctx;

    fn prologue(&self, task: usize) -> Result<(K::Ctx, usize, usize), Fault> {
        self.inner.prologue(task)
    }
    fn init(&self, task: usize, ctx: &K::Ctx) -> Result<K::Acc, Fault> {
        self.inner.init(task, ctx)
    }
    fn map(&self, task: usize, ctx: &K::Ctx, k: usize) -> Result<K::Acc, Fault> {
        let old = self.fine_perm.get(k).ok_or(Fault::index(
            "fine-task permutation",
            k,
            self.fine_perm.len(),
        ))?;
        self.inner.map(task, ctx, *old as usize)
    }
    fn reduce(&self, a: K::Acc, b: K::Acc) -> Result<K::Acc, Fault> {
        self.inner.reduce(a, b)
    }
    fn settled(&self, acc: &K::Acc) -> bool {
        self.inner.settled(acc)
    }
    fn epilogue(&self, task: usize, ctx: &K::Ctx, acc: K::Acc) -> Result<(), Fault> {
        self.inner.epilogue(task, ctx, acc)
    }
}

/// One launch's view of the kernel: tasks with a slot fold without `init`
/// and store their partial there; the others run as usual.
struct Staged<'a, K: NestedKernel> {
    inner: &'a K,
    /// Per task: its partial's slot in this launch, or `NONE`.
    slot: &'a [u32],
    partials: SharedOut<'a, Option<K::Acc>>,
}

impl<K: NestedKernel> Staged<'_, K> {
    #[inline]
    fn slot(&self, task: usize) -> u32 {
        self.slot.get(task).copied().unwrap_or(NONE)
    }
}

impl<K: NestedKernel> NestedKernel for Staged<'_, K> {
    const NAME: &'static str = K::NAME;
    type Acc = Option<K::Acc>;
    type Ctx = K::Ctx;

    fn prologue(&self, task: usize) -> Result<(K::Ctx, usize, usize), Fault> {
        self.inner.prologue(task)
    }
    fn init(&self, task: usize, ctx: &K::Ctx) -> Result<Self::Acc, Fault> {
        if self.slot(task) == NONE {
            self.inner.init(task, ctx).map(Some)
        } else {
            Ok(None)
        }
    }
    fn map(&self, task: usize, ctx: &K::Ctx, k: usize) -> Result<Self::Acc, Fault> {
        self.inner.map(task, ctx, k).map(Some)
    }
    fn reduce(&self, a: Self::Acc, b: Self::Acc) -> Result<Self::Acc, Fault> {
        match (a, b) {
            (Some(a), Some(b)) => self.inner.reduce(a, b).map(Some),
            (a, None) => Ok(a),
            (None, b) => Ok(b),
        }
    }
    fn settled(&self, acc: &Self::Acc) -> bool {
        acc.as_ref().is_some_and(|a| self.inner.settled(a))
    }
    /// The inner kernel's own fold (and fast path) on the unwrapped value.
    #[inline]
    fn fold_range(
        &self,
        task: usize,
        ctx: &K::Ctx,
        lo: usize,
        hi: usize,
        acc: Self::Acc,
    ) -> Result<Self::Acc, Fault> {
        match acc {
            Some(a) => self.inner.fold_range(task, ctx, lo, hi, a).map(Some),
            None if lo < hi => {
                let first = self.inner.map(task, ctx, lo)?;
                self.inner
                    .fold_range(task, ctx, lo + 1, hi, first)
                    .map(Some)
            }
            None => Ok(None),
        }
    }
    fn epilogue(&self, task: usize, ctx: &K::Ctx, acc: Self::Acc) -> Result<(), Fault> {
        match self.slot(task) {
            // SAFETY: a slot belongs to one task in one launch, and the
            // executor runs a task's epilogue once per launch.
            s if s != NONE => unsafe { self.partials.set(s as usize, acc, "partials") },
            _ => {
                let acc = match acc {
                    Some(a) => a,
                    None => self.inner.init(task, ctx)?,
                };
                self.inner.epilogue(task, ctx, acc)
            }
        }
    }
}

/// The merge launch: task `merge_tasks[j]` folds partials
/// `merge_ptr[j]..merge_ptr[j + 1]` (launch order) from `init`, then runs
/// its epilogue.
struct Merge<'a, K: NestedKernel> {
    inner: &'a K,
    merge_tasks: &'a [u32],
    merge_ptr: &'a [u32],
    partials: &'a [Option<K::Acc>],
}

impl<K: NestedKernel> NestedKernel for Merge<'_, K> {
    const NAME: &'static str = K::NAME;
    type Acc = K::Acc;
    type Ctx = K::Ctx;

    fn prologue(&self, task: usize) -> Result<(K::Ctx, usize, usize), Fault> {
        let (ctx, _, _) = self.inner.prologue(task)?;
        let j = self
            .merge_tasks
            .binary_search(&(task as u32))
            .map_err(|_| Fault::index("merged tasks", task, self.merge_tasks.len()))?;
        Ok((
            ctx,
            self.merge_ptr[j] as usize,
            self.merge_ptr[j + 1] as usize,
        ))
    }
    fn init(&self, task: usize, ctx: &K::Ctx) -> Result<K::Acc, Fault> {
        self.inner.init(task, ctx)
    }
    fn map(&self, _: usize, _: &K::Ctx, k: usize) -> Result<K::Acc, Fault> {
        match self.partials.get(k) {
            Some(Some(p)) => Ok(*p),
            _ => Err(Fault::index("partials", k, self.partials.len())),
        }
    }
    fn reduce(&self, a: K::Acc, b: K::Acc) -> Result<K::Acc, Fault> {
        self.inner.reduce(a, b)
    }
    /// Folds the partials that exist (a launch whose segments of the task
    /// were all empty leaves none).
    fn fold_range(
        &self,
        _: usize,
        _: &K::Ctx,
        lo: usize,
        hi: usize,
        mut acc: K::Acc,
    ) -> Result<K::Acc, Fault> {
        let slots =
            self.partials
                .get(lo..hi)
                .ok_or(Fault::index("partials", hi, self.partials.len()))?;
        for p in slots.iter().flatten() {
            acc = self.inner.reduce(acc, *p)?;
        }
        Ok(acc)
    }
    fn epilogue(&self, task: usize, ctx: &K::Ctx, acc: K::Acc) -> Result<(), Fault> {
        self.inner.epilogue(task, ctx, acc)
    }
}

/// Wall-clock times of a [`run_plan`].
#[derive(Debug, Clone, PartialEq)]
pub struct PlanRun {
    /// Seconds of every launch, in launch order: for SJ profiling, a
    /// launch's stand-alone time. Building each launch's task list is not
    /// included.
    pub launch_seconds: Vec<f64>,
    /// Seconds of the final merge of tasks split across launches (0 when
    /// none is).
    pub merge_seconds: f64,
    /// Tasks merged after the launches (they occur in more than one launch).
    pub merged_tasks: usize,
}

/// Runs `kernel` on the CPU over `plan`, one [`cpu::run`] per launch in
/// the order given, each launch a range of partitions (see
/// [`CacheFitPlan::cf_launches`], [`CacheFitPlan::node_launches`],
/// [`CacheFitPlan::single_launch`]); then merges the tasks that occur in
/// more than one launch: their partials are folded in launch order, `init`
/// once in front, then the epilogue runs — deterministic, like a task-list
/// launch. Within a launch, the executor runs its segments in parallel.
///
/// `kernel` must read its per-fine-task arrays in plan order
/// ([`CacheFitPlan::permute_fine`]), or be wrapped in [`PlanOrder`]. The
/// result equals the unthrottled run's for a commutative and associative
/// reduce operator (exactly for integer, boolean, min and max folds; float
/// sums up to rounding, since fine tasks are folded in another order).
///
/// # Errors
/// Launches that do not cover the partitions in order
/// ([`CacheFitPlan::check_launches`]); a kernel fault, reported as
/// [`cpu::run`] does for the launch it happened in (outputs are then
/// unspecified); the bookkeeping exceeding the memory limit.
///
/// ```
/// use warpfit_runtime::exec::{Fault, NestedKernel, SharedOut};
/// use warpfit_runtime::partition::{dbwp, Bisection, PartitionOptions, WorkGraph};
/// use warpfit_runtime::schedule::{run_plan, CacheFitPlan, PlanOrder};
/// use warpfit_runtime::{gen, Tasks};
///
/// /// Row sums of column ids: `out[r] = Σ col[k]`.
/// struct ColSum<'a> { ptr: &'a [u32], col: &'a [u32], out: SharedOut<'a, u64> }
/// impl NestedKernel for ColSum<'_> {
///     const NAME: &'static str = "colsum";
///     type Acc = u64;
///     type Ctx = ();
///     fn prologue(&self, t: usize) -> Result<((), usize, usize), Fault> {
///         Ok(((), self.ptr[t] as usize, self.ptr[t + 1] as usize))
///     }
///     fn init(&self, _: usize, _: &()) -> Result<u64, Fault> { Ok(0) }
///     fn map(&self, _: usize, _: &(), k: usize) -> Result<u64, Fault> { Ok(self.col[k] as u64) }
///     fn reduce(&self, a: u64, b: u64) -> Result<u64, Fault> { Ok(a + b) }
///     fn epilogue(&self, t: usize, _: &(), acc: u64) -> Result<(), Fault> {
///         // SAFETY: each task writes only its own index.
///         unsafe { self.out.set(t, acc, "out") }
///     }
/// }
///
/// let a = gen::rmat(8, 8, 3)?;
/// let g = WorkGraph::from_csr(&a)?;
/// let p = dbwp(&g, &PartitionOptions { capacity: 48, bisection: Bisection::KdTiling }, None)?;
/// let plan = CacheFitPlan::new(&g, &p)?;
///
/// let mut want = vec![0u64; a.nrows()];
/// let k = ColSum { ptr: a.row_ptr(), col: a.col_idx(), out: SharedOut::new(&mut want) };
/// warpfit_runtime::exec::cpu::run(&k, Tasks::All(a.nrows()))?;
///
/// // On the plan's own copy of the column indices...
/// let col = plan.permute_fine(a.col_idx())?;
/// let mut got = vec![0u64; a.nrows()];
/// let k = ColSum { ptr: a.row_ptr(), col: &col, out: SharedOut::new(&mut got) };
/// let run = run_plan(&k, &plan, &plan.cf_launches())?;
/// assert_eq!(run.launch_seconds.len(), plan.len());
/// assert_eq!(got, want);
///
/// // ...or on the user's arrays, through the permutation.
/// let mut got = vec![0u64; a.nrows()];
/// let k = ColSum { ptr: a.row_ptr(), col: a.col_idx(), out: SharedOut::new(&mut got) };
/// run_plan(&PlanOrder::new(&k, &plan), &plan, &plan.cf_launches())?;
/// assert_eq!(got, want);
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
pub fn run_plan<K: NestedKernel>(
    kernel: &K,
    plan: &CacheFitPlan,
    launches: &[Range<usize>],
) -> Result<PlanRun> {
    plan.check_launches(launches)?;
    let n = plan.n_tasks();
    mem::check_elems::<u32>("the plan run's per-task tables", n.saturating_mul(2))?;
    let lists = launches
        .iter()
        .map(|r| plan.launch_segments(r.clone()))
        .collect::<Result<Vec<_>>>()?;
    // Tasks in more than one launch, and in how many.
    let mut last = mem::try_filled("the plan run's per-task tables", n, NONE)?;
    let mut slot = mem::try_filled("the plan run's per-task tables", n, 0u32)?;
    for (i, segs) in lists.iter().enumerate() {
        for s in segs.iter() {
            let t = s.task as usize;
            if last[t] != i as u32 {
                last[t] = i as u32;
                slot[t] += 1;
            }
        }
    }
    let mut merge_tasks = Vec::new();
    let mut merge_ptr = vec![0u32];
    let mut slots = 0usize;
    for (t, count) in slot.iter_mut().enumerate() {
        if *count >= 2 {
            merge_tasks.push(t as u32);
            let first = slots;
            slots += *count as usize;
            merge_ptr.push(crate::error::to_u32("partial results", slots)?);
            *count = first as u32;
        } else {
            *count = NONE;
        }
    }
    last.fill(NONE);
    let mut partials: Vec<Option<K::Acc>> = mem::try_filled("partial results", slots, None)?;

    let mut launch_seconds = Vec::with_capacity(lists.len());
    for (i, segs) in lists.iter().enumerate() {
        mem::check_elems::<crate::exec::Segment>("a launch's task list", segs.len())?;
        let list = TaskList::new(segs.to_vec())?;
        let staged = Staged {
            inner: kernel,
            slot: &slot,
            partials: SharedOut::new(&mut partials),
        };
        let start = Instant::now();
        cpu::run(&staged, Tasks::List(&list))?;
        launch_seconds.push(start.elapsed().as_secs_f64());
        // The next launch of each staged task writes its next slot.
        for s in segs.iter() {
            let t = s.task as usize;
            if slot[t] != NONE && last[t] != i as u32 {
                last[t] = i as u32;
                slot[t] += 1;
            }
        }
    }
    drop((last, slot));

    let mut merge_seconds = 0.0;
    if !merge_tasks.is_empty() {
        let list = TaskList::new(
            merge_tasks
                .iter()
                .zip(merge_ptr.windows(2))
                .map(|(&t, w)| crate::exec::Segment::new(t, w[0], w[1]))
                .collect(),
        )?;
        let merge = Merge {
            inner: kernel,
            merge_tasks: &merge_tasks,
            merge_ptr: &merge_ptr,
            partials: &partials,
        };
        let start = Instant::now();
        cpu::run(&merge, Tasks::List(&list))?;
        merge_seconds = start.elapsed().as_secs_f64();
    }
    Ok(PlanRun {
        launch_seconds,
        merge_seconds,
        merged_tasks: merge_tasks.len(),
    })
}

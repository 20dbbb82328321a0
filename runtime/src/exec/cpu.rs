//! The CPU executor: runs a [`NestedKernel`] over [`Tasks`] with rayon.

use super::{Fault, NestedKernel, Prechecked, TaskList, Tasks};
use crate::worklist::Worklist;
use crate::Result;
use rayon::prelude::*;
use std::sync::Mutex;

/// Tasks handed to one rayon job at a time: large enough that scheduling
/// overhead vanishes next to a short row, small enough to balance power-law rows.
pub(crate) const GRAIN: usize = 512;

/// The fault of the lowest-numbered failing task, so that the error a launch
/// returns does not depend on thread timing.
///
/// Tasks run with `for_each` and report here rather than through rayon's
/// `try_for_each`: a fault is exceptional, and threading a `Result` through
/// every task made SpMV slower (`BENCHMARKS.md`, "Tuning constants:
/// history").
pub(crate) struct FirstFault(Mutex<Option<(usize, Fault)>>);

impl FirstFault {
    pub(crate) fn new() -> Self {
        FirstFault(Mutex::new(None))
    }

    #[cold]
    pub(crate) fn record(&self, task: usize, fault: Fault) {
        let mut first = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if first.map_or(true, |(t, _)| task < t) {
            *first = Some((task, fault));
        }
    }

    /// Whether a fault was recorded.
    pub(crate) fn any(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    pub(crate) fn into_result<K: NestedKernel>(self) -> Result<()> {
        match self.0.into_inner().unwrap_or_else(|e| e.into_inner()) {
            None => Ok(()),
            Some((task, fault)) => Err(fault.into_error(K::NAME, task)),
        }
    }
}

/// Runs `kernel` over `tasks` on the CPU. Tasks run in parallel; if any task
/// faults, the launch returns the fault of the lowest-numbered failing task
/// (outputs are then unspecified, as on the GPU).
pub fn run<K: NestedKernel>(kernel: &K, tasks: Tasks<'_>) -> Result<()> {
    match tasks {
        Tasks::All(n) => run_all(kernel, n),
        Tasks::List(list) => run_list(kernel, list),
        Tasks::Frontier(list) => run_frontier(kernel, list),
        Tasks::DeviceFrontier(f) => Err(crate::Error::invalid(format!(
            "kernel `{}`: its tasks are a worklist in the memory of CUDA device {}, which a CPU launch cannot read: run it on that device, or use a worklist of the CPU backend",
            K::NAME,
            f.device
        ))),
    }
}

/// The items of `list` stored when the launch starts, each a whole task.
/// Items are scattered (a frontier is in push order), so each task checks
/// its own range rather than a block of them.
fn run_frontier<K: NestedKernel>(kernel: &K, list: &Worklist) -> Result<()> {
    let n = list.len();
    let faults = FirstFault::new();
    (0..n.div_ceil(GRAIN)).into_par_iter().for_each(|b| {
        for i in b * GRAIN..((b + 1) * GRAIN).min(n) {
            let t = list.slot(i) as usize;
            if let Err(f) = kernel.run_task(t) {
                faults.record(t, f);
            }
        }
    });
    faults.into_result::<K>()
}

fn run_all<K: NestedKernel>(kernel: &K, n: usize) -> Result<()> {
    let faults = FirstFault::new();
    (0..n.div_ceil(GRAIN)).into_par_iter().for_each(|b| {
        let end = ((b + 1) * GRAIN).min(n);
        let mut t = b * GRAIN;
        while t < end {
            let (tasks, block) = next_run(kernel, t, end);
            for t in tasks.clone() {
                let r = match &block {
                    Some(block) => block.run_task(t),
                    None => kernel.run_task(t),
                };
                if let Err(f) = r {
                    faults.record(t, f);
                }
            }
            t = tasks.end;
        }
    });
    faults.into_result::<K>()
}

/// Fine tasks one precheck covers at most: the pass over their indices
/// should leave them in L1/L2 for the fold that follows (RMAT's hub rows
/// in one pass would be read twice from memory).
pub(crate) const PRECHECK_SPAN: usize = 4096;

/// The next run of tasks from `t` (at least one, fewer than `end`) whose
/// fine-task ranges add up to about [`PRECHECK_SPAN`], and their precheck:
/// one bound check for the run, over the hull of its ranges, when that is
/// not much larger than the ranges themselves (consecutive CSR rows:
/// exactly their union). `None` (each task checks its own range) when the
/// kernel has no fast path, a prologue faults, or the ranges are scattered.
fn next_run<K: NestedKernel>(
    kernel: &K,
    t: usize,
    end: usize,
) -> (std::ops::Range<usize>, Option<Prechecked<'_, K>>) {
    let (mut lo, mut hi, mut work) = (usize::MAX, 0usize, 0usize);
    let mut u = t;
    while u < end && (u == t || work < PRECHECK_SPAN) {
        match kernel.prologue(u) {
            // Branch-free: empty ranges are as common as not (half of RMAT's
            // rows), and an empty `a..a` inside the hull changes nothing.
            Ok((_, a, b)) => {
                let b = b.max(a);
                lo = lo.min(a);
                hi = hi.max(b);
                work += b - a;
            }
            Err(_) => return (t..u.max(t + 1), None),
        }
        u += 1;
    }
    if work == 0 || hi - lo > 2 * work {
        return (t..u, None);
    }
    (t..u, Prechecked::new(kernel, lo, hi))
}

#[inline]
fn segment_ctx<K: NestedKernel>(
    kernel: &K,
    task: usize,
    lo: usize,
    hi: usize,
) -> Result<K::Ctx, Fault> {
    let (ctx, task_lo, task_hi) = kernel.prologue(task)?;
    if lo < task_lo || hi > task_hi.max(task_lo) {
        return Err(Fault::SegmentOutOfRange {
            lo: lo as u64,
            hi: hi as u64,
            task_lo: task_lo as u64,
            task_hi: task_hi as u64,
        });
    }
    Ok(ctx)
}

fn run_list<K: NestedKernel>(kernel: &K, list: &TaskList) -> Result<()> {
    let segs = list.segments();
    let faults = FirstFault::new();
    // Phase 1: whole tasks run to completion; split segments leave a partial.
    // `None` is an empty segment: the reduce operator has no known identity.
    let mut partials: Vec<Option<K::Acc>> = vec![None; segs.len()];
    partials
        .par_iter_mut()
        .zip(segs.par_iter())
        .enumerate()
        .with_min_len(GRAIN / 4)
        .for_each(|(i, (slot, s))| {
            let (task, lo, hi) = (s.task as usize, s.lo as usize, s.hi as usize);
            let step = || -> Result<Option<K::Acc>, Fault> {
                let ctx = segment_ctx(kernel, task, lo, hi)?;
                if list.is_whole(i) {
                    let init = kernel.init(task, &ctx)?;
                    let acc = kernel.fold_range(task, &ctx, lo, hi, init)?;
                    kernel.epilogue(task, &ctx, acc)?;
                    return Ok(None);
                }
                if lo >= hi {
                    return Ok(None);
                }
                let first = kernel.map(task, &ctx, lo)?;
                kernel.fold_range(task, &ctx, lo + 1, hi, first).map(Some)
            };
            match step() {
                Ok(p) => *slot = p,
                Err(f) => faults.record(task, f),
            }
        });
    if faults.any() {
        return faults.into_result::<K>();
    }
    // Phase 2: fold each split task's partials in list order, then its epilogue.
    let order = list.split_segments();
    list.split_tasks().par_iter().for_each(|st| {
        let task = st.task as usize;
        let merge = || -> Result<(), Fault> {
            let (ctx, _, _) = kernel.prologue(task)?;
            let mut acc = kernel.init(task, &ctx)?;
            let group = &order[st.first as usize..(st.first + st.count) as usize];
            for &i in group {
                if let Some(p) = partials[i as usize] {
                    acc = kernel.reduce(acc, p)?;
                }
            }
            kernel.epilogue(task, &ctx, acc)
        };
        if let Err(f) = merge() {
            faults.record(task, f);
        }
    });
    faults.into_result::<K>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::{Segment, SharedOut};
    use crate::Error;

    /// `out[t] = Σ_{k in 0..t%5} k`, faulting on the tasks listed in `bad`.
    struct Sums<'a> {
        bad: &'a [usize],
        out: SharedOut<'a, u64>,
    }

    impl NestedKernel for Sums<'_> {
        const NAME: &'static str = "sums";
        type Acc = u64;
        type Ctx = ();
        fn prologue(&self, t: usize) -> Result<((), usize, usize), Fault> {
            Ok(((), 0, t % 5))
        }
        fn init(&self, _: usize, _: &()) -> Result<u64, Fault> {
            Ok(0)
        }
        fn map(&self, t: usize, _: &(), k: usize) -> Result<u64, Fault> {
            if self.bad.contains(&t) {
                return Err(Fault::index("x", k + 100, 100));
            }
            Ok(k as u64)
        }
        fn reduce(&self, a: u64, b: u64) -> Result<u64, Fault> {
            Ok(a + b)
        }
        fn epilogue(&self, t: usize, _: &(), acc: u64) -> Result<(), Fault> {
            // SAFETY: each task writes only its own index.
            unsafe { self.out.set(t, acc, "out") }
        }
    }

    fn task_of(e: Error) -> String {
        e.to_string()
    }

    #[test]
    fn all_tasks_and_split_lists_agree() {
        let n = 5000;
        let mut whole = vec![0u64; n];
        run(
            &Sums {
                bad: &[],
                out: SharedOut::new(&mut whole),
            },
            Tasks::All(n),
        )
        .unwrap();
        let want: Vec<u64> = (0..n as u64).map(|t| (0..t % 5).sum()).collect();
        assert_eq!(whole, want);
        let mut segs = Vec::new();
        for t in (0..n as u32).rev() {
            let hi = t % 5;
            segs.push(Segment::new(t, hi / 2, hi));
            segs.push(Segment::new(t, 0, hi / 2));
        }
        let list = TaskList::new(segs).unwrap();
        let mut split = vec![0u64; n];
        run(
            &Sums {
                bad: &[],
                out: SharedOut::new(&mut split),
            },
            Tasks::List(&list),
        )
        .unwrap();
        assert_eq!(split, want);
    }

    #[test]
    fn the_lowest_failing_task_is_reported_whatever_the_timing() {
        let n = 100_000;
        for _ in 0..5 {
            let mut out = vec![0u64; n];
            let k = Sums {
                bad: &[99_999, 4, 51_203],
                out: SharedOut::new(&mut out),
            };
            let e = task_of(run(&k, Tasks::All(n)).unwrap_err());
            assert!(e.contains("task 4:"), "{e}");
            let list = TaskList::new(
                (0..n as u32)
                    .flat_map(|t| {
                        [
                            Segment::new(t, 0, (t % 5) / 2),
                            Segment::new(t, (t % 5) / 2, t % 5),
                        ]
                    })
                    .collect(),
            )
            .unwrap();
            let e = task_of(run(&k, Tasks::List(&list)).unwrap_err());
            assert!(e.contains("task 4:"), "{e}");
        }
    }

    #[test]
    fn a_frontier_runs_its_items_each_as_often_as_stored() {
        let n = 5000;
        let list = Worklist::new(n, 3 * n).unwrap();
        for t in (0..n as u32).rev().chain([7, 7, 4999]) {
            list.push(t).unwrap();
        }
        let mut out = vec![0u64; n];
        let k = Sums {
            bad: &[],
            out: SharedOut::new(&mut out),
        };
        run(&k, Tasks::from(&list)).unwrap();
        let want: Vec<u64> = (0..n as u64).map(|t| (0..t % 5).sum()).collect();
        assert_eq!(out, want);
        // Faults: the lowest failing task among the items, whatever the order.
        let k = Sums {
            bad: &[4999, 12],
            out: SharedOut::new(&mut out),
        };
        let e = task_of(run(&k, Tasks::from(&list)).unwrap_err());
        assert!(e.contains("task 12:"), "{e}");
        // A worklist in GPU memory cannot run on the CPU.
        // SAFETY: never dereferenced (the CPU refuses it).
        let f = unsafe { crate::exec::DeviceFrontier::new(1, 2, 3, 0) };
        let e = run(&k, Tasks::DeviceFrontier(f)).unwrap_err().to_string();
        assert!(e.contains("CUDA device 0"), "{e}");
    }

    /// Sums of given fine-task ranges, with a fast path whose use is
    /// counted: `precheck` passes when `lo..hi` lies within `limit`.
    struct Ranged<'a> {
        ranges: &'a [(usize, usize)],
        limit: usize,
        prechecks: std::sync::atomic::AtomicUsize,
        fast_folds: std::sync::atomic::AtomicUsize,
        out: SharedOut<'a, u64>,
    }

    impl NestedKernel for Ranged<'_> {
        const NAME: &'static str = "ranged";
        type Acc = u64;
        type Ctx = ();
        fn prologue(&self, t: usize) -> Result<((), usize, usize), Fault> {
            Ok(((), self.ranges[t].0, self.ranges[t].1))
        }
        fn init(&self, _: usize, _: &()) -> Result<u64, Fault> {
            Ok(0)
        }
        fn map(&self, _: usize, _: &(), k: usize) -> Result<u64, Fault> {
            if k >= self.limit {
                return Err(Fault::index("v", k, self.limit));
            }
            Ok(k as u64)
        }
        fn reduce(&self, a: u64, b: u64) -> Result<u64, Fault> {
            Ok(a + b)
        }
        fn epilogue(&self, t: usize, _: &(), acc: u64) -> Result<(), Fault> {
            // SAFETY: each task writes only its own index.
            unsafe { self.out.set(t, acc, "out") }
        }
        fn precheck(&self, lo: usize, hi: usize) -> bool {
            use std::sync::atomic::Ordering::Relaxed;
            self.prechecks.fetch_add(1, Relaxed);
            lo <= hi && hi <= self.limit
        }
        unsafe fn fold_range_prechecked(
            &self,
            task: usize,
            ctx: &(),
            lo: usize,
            hi: usize,
            acc: u64,
        ) -> Result<u64, Fault> {
            use std::sync::atomic::Ordering::Relaxed;
            self.fast_folds.fetch_add(1, Relaxed);
            self.fold_range_checked(task, ctx, lo, hi, acc)
        }
    }

    fn ranged<'a>(ranges: &'a [(usize, usize)], limit: usize, out: &'a mut [u64]) -> Ranged<'a> {
        Ranged {
            ranges,
            limit,
            prechecks: Default::default(),
            fast_folds: Default::default(),
            out: SharedOut::new(out),
        }
    }

    #[test]
    fn consecutive_ranges_are_prechecked_in_runs_of_a_bounded_span() {
        use std::sync::atomic::Ordering::Relaxed;
        let n = 3 * GRAIN + 7;
        let ptr: Vec<usize> = std::iter::once(0)
            .chain((0..n).scan(0, |s, t| {
                *s += t * 7 % 5;
                Some(*s)
            }))
            .collect();
        let ranges: Vec<(usize, usize)> = ptr.windows(2).map(|w| (w[0], w[1])).collect();
        let want: Vec<u64> = (0..n)
            .map(|t| (ptr[t]..ptr[t + 1]).map(|k| k as u64).sum())
            .collect();
        let mut out = vec![0u64; n];
        let k = ranged(&ranges, ptr[n], &mut out);
        run(&k, Tasks::All(n)).unwrap();
        // One precheck per block of GRAIN tasks (2 fine tasks on average
        // each: under one span), and every task folds through the fast path.
        assert_eq!(k.prechecks.load(Relaxed), n.div_ceil(GRAIN));
        assert_eq!(k.fast_folds.load(Relaxed), n);
        assert_eq!(out, want);
        // Long ranges: one precheck per run of tasks reaching PRECHECK_SPAN.
        let long: Vec<(usize, usize)> = (0..64).map(|t| (t * 1000, t * 1000 + 1000)).collect();
        let mut out = vec![0u64; 64];
        let k = ranged(&long, 64_000, &mut out);
        run(&k, Tasks::All(64)).unwrap();
        assert_eq!(
            k.prechecks.load(Relaxed),
            64usize.div_ceil(PRECHECK_SPAN.div_ceil(1000))
        );
        assert_eq!(k.fast_folds.load(Relaxed), 64);
        // A block whose hull fails the precheck runs each task checked,
        // and the first failing task's own fault comes back.
        let mut out = vec![0u64; n];
        let limit = ptr[GRAIN + 10] + 1;
        let k = ranged(&ranges, limit, &mut out);
        let e = run(&k, Tasks::All(n)).unwrap_err().to_string();
        let first_bad = (0..n).find(|&t| ptr[t + 1] > limit).unwrap();
        assert!(e.contains(&format!("task {first_bad}:")), "{e}");
    }

    #[test]
    fn scattered_ranges_are_not_prechecked_as_a_block() {
        // Two tasks far apart: the hull is mostly not theirs.
        let ranges = [(0usize, 4usize), (7, 7), (1000, 1004)];
        let mut out = vec![0u64; 3];
        let k = ranged(&ranges, 2000, &mut out);
        let (run, block) = next_run(&k, 0, 3);
        assert_eq!(run, 0..3);
        assert!(block.is_none());
        assert!(next_run(&k, 0, 2).1.is_some());
        assert!(
            next_run(&k, 1, 2).1.is_none(),
            "an empty task has nothing to check"
        );
    }
}

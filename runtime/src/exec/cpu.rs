//! The CPU executor: runs a [`NestedKernel`] over [`Tasks`] with rayon.

use super::{Fault, NestedKernel, TaskList, Tasks};
use crate::Result;
use rayon::prelude::*;
use std::sync::Mutex;

/// Tasks handed to one rayon job at a time: large enough that scheduling
/// overhead vanishes next to a short row, small enough to balance power-law rows.
const GRAIN: usize = 512;

/// The fault of the lowest-numbered failing task, so that the error a launch
/// returns does not depend on thread timing.
///
/// Tasks run with `for_each` and report here rather than through rayon's
/// `try_for_each`: a fault is exceptional, and threading a `Result` through
/// every task measured 1.3–1.5× slower on SpMV.
struct FirstFault(Mutex<Option<(usize, Fault)>>);

impl FirstFault {
    fn new() -> Self {
        FirstFault(Mutex::new(None))
    }

    #[cold]
    fn record(&self, task: usize, fault: Fault) {
        let mut first = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if first.map_or(true, |(t, _)| task < t) {
            *first = Some((task, fault));
        }
    }

    fn into_result<K: NestedKernel>(self) -> Result<()> {
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
    }
}

fn run_all<K: NestedKernel>(kernel: &K, n: usize) -> Result<()> {
    let faults = FirstFault::new();
    (0..n).into_par_iter().with_min_len(GRAIN).for_each(|t| {
        if let Err(f) = kernel.run_task(t) {
            faults.record(t, f);
        }
    });
    faults.into_result::<K>()
}

/// Fine-task range of `task`, checked against the segment `lo..hi`.
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
    if faults.0.lock().map_or(true, |f| f.is_some()) {
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
}

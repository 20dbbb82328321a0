//! Launch planning, host code only: the task list a split makes
//! ([`cut_tasks`]), the packing of CTE warps by work ([`pack_warps`],
//! [`whole_runs`]), and the kernel launches with their grid sizes
//! ([`plan_launches`]). `prepared` runs what this module decides.

use crate::abi::{self, Gate, TaskSource, BLOCK, MERGE_COLUMNS_ENTRY, PDL_ARCH, WARP};
use crate::arch::Arch;
use crate::config::Decomposition;
pub(crate) use crate::launch::merge_width::MergeWidth;
use crate::launch::split_policy::check_u32_items;
use rayon::prelude::*;
use warpfit_runtime::{Error, Result, Segment, TaskList};

/// Cuts every task's fine-task range into segments of at most `max_len`
/// fine tasks, in task order; an empty task keeps one empty segment.
/// `ranges` holds `lo, hi` per task as the size kernel writes them (a `hi`
/// below `lo` counts as empty).
///
/// The cutting is the runtime's [`TaskList::chunked`]. Ranges that follow
/// one another (CSR rows, the common case) are its pointer array as they
/// are; other ranges are laid end to end from 0 (in batches whose total
/// fits u32), cut, and each segment moved back to its task's range.
pub(crate) fn cut_tasks(ranges: &[u32], max_len: u32) -> Result<TaskList> {
    let n = ranges.len() / 2;
    check_u32_items(n)?;
    let range = |t: usize| (ranges[2 * t], ranges[2 * t + 1].max(ranges[2 * t]));
    if n > 0 && (1..n).into_par_iter().all(|t| range(t).0 == range(t - 1).1) {
        // Contiguous ranges (a matrix's rows): their pointer array. In
        // parallel, as the cut: tens of millions of tasks per launch.
        let mut ptr = Vec::with_capacity(n + 1);
        ptr.push(range(0).0);
        ptr.par_extend((0..n).into_par_iter().map(|t| range(t).1));
        return TaskList::chunked(&ptr, max_len);
    }
    let mut segments = Vec::with_capacity(n);
    let mut first = 0;
    while first < n {
        let mut ptr = vec![0u32];
        let mut end = first;
        while end < n {
            let (lo, hi) = range(end);
            // One task always fits: its length is at most u32::MAX.
            match ptr[end - first].checked_add(hi - lo) {
                Some(p) => ptr.push(p),
                None => break,
            }
            end += 1;
        }
        let batch = TaskList::chunked(&ptr, max_len)?;
        segments.extend(batch.segments().iter().map(|s| {
            let (t, base) = (first + s.task as usize, ptr[s.task as usize]);
            let lo = range(t).0;
            Segment::new(t as u32, lo + (s.lo - base), lo + (s.hi - base))
        }));
        first = end;
    }
    TaskList::new(segments)
}

/// Segments packed as one run by [`pack_warps`]: a group never spans two
/// chunks, so that the device packs each chunk on its own thread
/// (`PACK_CHUNK` in task_cut.cuh) and gets the same groups. It costs at
/// most one short group a chunk.
pub const PACK_CHUNK: usize = 2048;

/// Groups consecutive segments into CTE warps, greedily in list order: at
/// most 32 segments each (one per lane), and at most `budget` fine tasks
/// in all unless the group is a single longer segment; every
/// [`PACK_CHUNK`]-th segment starts a group. Returns each group's first
/// segment, then the number of segments.
pub fn pack_warps(segments: &[Segment], budget: u32) -> Vec<u32> {
    let mut first = Vec::with_capacity(segments.len() / 4 + 2);
    let (mut count, mut work) = (0u32, 0u64);
    for (i, s) in segments.iter().enumerate() {
        let len = u64::from(s.hi.saturating_sub(s.lo));
        if count == 0 || count == WARP || work + len > u64::from(budget) || i % PACK_CHUNK == 0 {
            first.push(i as u32);
            (count, work) = (0, 0);
        }
        count += 1;
        work += len;
    }
    first.push(segments.len() as u32);
    first
}

/// The first task of each group that holds whole consecutive tasks only
/// (CTE loads those by task, without reading their segments), else
/// `u32::MAX`.
pub fn whole_runs(list: &TaskList, first: &[u32]) -> Vec<u32> {
    let (segs, whole) = (list.segments(), list.whole_flags());
    first
        .windows(2)
        .map(|g| {
            let (b, e) = (g[0] as usize, g[1] as usize);
            let t0 = segs[b].task;
            let run = (b..e)
                .all(|i| whole[i] && u64::from(segs[i].task) == u64::from(t0) + (i - b) as u64);
            if run {
                t0
            } else {
                u32::MAX
            }
        })
        .collect()
}

/// Blocks for `n` items of `threads_per_item` threads.
pub(crate) fn grid(n: u64, threads_per_item: u64) -> Result<u32> {
    let blocks = (n * threads_per_item).div_ceil(u64::from(BLOCK));
    u32::try_from(blocks)
        .ok()
        .filter(|&b| b < (1u32 << 31))
        .ok_or_else(|| {
            Error::invalid(format!(
                "{n} items need {blocks} blocks, more than CUDA's grid allows"
            ))
        })
}

/// The items a launch runs, as far as planning its kernels goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Items {
    /// Tasks `0..n`, each whole.
    All(u64),
    /// The items of a device worklist of this capacity, each a whole task
    /// (the grid covers the capacity; the count is read on the device).
    Frontier(u64),
    /// A task list on the device.
    List {
        segments: u64,
        /// Groups of segments when CTE warps are packed by work.
        packed_warps: Option<u32>,
        split_tasks: u64,
        merge: MergeWidth,
    },
    /// A 2-D kernel's rows cut into segments on the device, each run over
    /// `columns` columns (`ColumnList`, one thread per segment and column).
    Columns {
        segments: u64,
        columns: u64,
        split_tasks: u64,
    },
}

/// A step's part in a 2-D launch validated first (`launch/validation.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Validation {
    /// Not part of one.
    #[default]
    None,
    /// The validation itself, over the rows or pieces of a launch of
    /// `columns` columns, `lanes` lanes per row or piece: its fault record
    /// is the gate of the steps after.
    Validate { columns: u64, lanes: u32 },
    /// A fold behind the gate, over `columns` columns.
    Gated { when: Gate, columns: u64 },
}

/// One kernel launch of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Step {
    pub entry: &'static str,
    pub blocks: u32,
    /// `LaunchArgs::n_items`.
    pub items: u64,
    /// Launched as a programmatic dependent of the step before it: it may
    /// be scheduled while that grid runs its last blocks, and waits for its
    /// completion on the device (`wait_for_primary` in merge.cuh).
    pub dependent: bool,
    /// Its part in a 2-D launch checked by a validation launch first.
    pub validation: Validation,
}

/// The kernels a launch enqueues, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LaunchPlan {
    /// Launches with no block are left out.
    pub steps: Vec<Step>,
    /// The task-list kernel reads the packed warp groups.
    pub packed_warps: bool,
}

/// The merge after a task list of `split_tasks` merge items (none: no
/// step), `lanes` per item with `entry`, as a programmatic dependent of
/// the list's launch where the GPU has them.
fn merge_step(
    (entry, lanes): (&'static str, u64),
    split_tasks: u64,
    arch: Arch,
) -> Result<Option<Step>> {
    if split_tasks == 0 {
        return Ok(None);
    }
    Ok(Some(Step {
        entry,
        blocks: grid(split_tasks, lanes)?,
        items: split_tasks,
        dependent: arch >= PDL_ARCH,
        validation: Validation::None,
    }))
}

fn too_many() -> Error {
    Error::invalid(
        "a 2-D launch's pieces times its columns are more items than a launch can number",
    )
}

/// The kernels that run `items` with `decomposition` on `arch`: the
/// decomposition's entry point, then for a task list with split tasks the
/// merge, as a programmatic dependent where the GPU has them.
pub(crate) fn plan_launches(
    decomposition: Decomposition,
    items: Items,
    arch: Arch,
) -> Result<LaunchPlan> {
    let tpi = decomposition.threads_per_item();
    let mut steps = Vec::with_capacity(2);
    let mut push = |step: Step| {
        if step.blocks > 0 {
            steps.push(step);
        }
    };
    let packed_warps = match items {
        Items::All(n) => {
            push(Step {
                entry: abi::entry_point(decomposition, TaskSource::All)?,
                blocks: grid(n, tpi)?,
                items: n,
                dependent: false,
                validation: Validation::None,
            });
            false
        }
        Items::Frontier(capacity) => {
            push(Step {
                entry: abi::entry_point(decomposition, TaskSource::Frontier)?,
                blocks: grid(capacity, tpi)?,
                items: capacity,
                dependent: false,
                validation: Validation::None,
            });
            false
        }
        Items::List {
            segments,
            packed_warps,
            split_tasks,
            merge,
        } => {
            // Only CTE reads the packed groups, a warp per group.
            let packed = packed_warps.filter(|_| decomposition == Decomposition::Cte);
            push(Step {
                entry: abi::entry_point(decomposition, TaskSource::List)?,
                blocks: match packed {
                    Some(w) => grid(u64::from(w), u64::from(WARP))?,
                    None => grid(segments, tpi)?,
                },
                items: segments,
                dependent: false,
                validation: Validation::None,
            });
            if let Some(step) = merge_step(merge.entry(), split_tasks, arch)? {
                push(step);
            }
            packed.is_some()
        }
        Items::Columns {
            segments,
            columns,
            split_tasks,
        } => {
            let items = segments.checked_mul(columns).ok_or_else(too_many)?;
            push(Step {
                entry: abi::entry_point(decomposition, TaskSource::Columns)?,
                blocks: grid(items, tpi)?,
                items,
                dependent: false,
                validation: Validation::None,
            });
            let split = split_tasks.checked_mul(columns).ok_or_else(too_many)?;
            if let Some(step) = merge_step((MERGE_COLUMNS_ENTRY, 1), split, arch)? {
                push(step);
            }
            false
        }
    };
    Ok(LaunchPlan {
        steps,
        packed_warps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::split_policy::{list_decomposition, Cut, SMALL_LAUNCH_SEGMENT};
    fn cut_each(ranges: &[u32], s: u32) -> Vec<Segment> {
        let mut segs = Vec::new();
        for t in 0..ranges.len() / 2 {
            let (lo, hi) = (ranges[2 * t], ranges[2 * t + 1].max(ranges[2 * t]));
            let mut a = lo;
            segs.push(Segment::new(t as u32, a, hi.min(a.saturating_add(s))));
            a = a.saturating_add(s);
            while a < hi {
                segs.push(Segment::new(t as u32, a, hi.min(a.saturating_add(s))));
                a = a.saturating_add(s);
            }
        }
        segs
    }

    #[test]
    fn cut_tasks_handles_csr_rows_gaps_overlaps_and_huge_ranges() {
        // CSR rows from 0 and from 10, an empty row.
        for ranges in [vec![0, 5, 5, 5, 5, 6], vec![10, 15, 15, 15, 15, 16]] {
            let l = cut_tasks(&ranges, 2).unwrap();
            assert_eq!(l.segments(), cut_each(&ranges, 2));
            assert_eq!(l.split_tasks().len(), 1);
        }
        // Gaps, overlaps, a reversed range (empty), ranges near u32::MAX
        // whose lengths add up past u32.
        let big = u32::MAX - 1;
        for (ranges, lens) in [
            (
                vec![0, 3, 10, 12, 1, 7, 9, 4],
                vec![1, 2, 3, 1000, u32::MAX],
            ),
            (
                vec![0, big, 0, big, 5, 9, big - 3, big],
                vec![1 << 20, 1 << 31, u32::MAX],
            ),
        ] {
            for s in lens {
                let l = cut_tasks(&ranges, s).unwrap();
                assert_eq!(l.segments(), cut_each(&ranges, s), "{ranges:?} {s}");
            }
        }
        assert!(cut_tasks(&[], 4).unwrap().is_empty());
        assert!(cut_tasks(&[0, 4], 0).is_err());
    }

    proptest::proptest! {
        #[test]
        fn cut_tasks_matches_cutting_each_task(
            ranges in proptest::collection::vec(0u32..200, 0..120),
            contiguous in proptest::bool::ANY,
            s in 1u32..40,
        ) {
            let mut ranges = ranges;
            ranges.truncate(ranges.len() / 2 * 2);
            if contiguous {
                // Prefix sums of the values: CSR-style rows.
                let mut at = 0;
                for t in 0..ranges.len() / 2 {
                    let len = ranges[2 * t + 1] % 50;
                    ranges[2 * t] = at;
                    at += len;
                    ranges[2 * t + 1] = at;
                }
            }
            let l = cut_tasks(&ranges, s).unwrap();
            proptest::prop_assert_eq!(l.segments(), &cut_each(&ranges, s)[..]);
        }

        /// Groups are contiguous and cover the list in order, hold 1 to 32
        /// segments, stay within the budget unless they are one segment,
        /// and never span a chunk of `PACK_CHUNK` segments.
        #[test]
        fn packed_warps_respect_count_and_budget(
            lens in proptest::collection::vec(0u32..300, 0..2 * PACK_CHUNK + 100),
            budget in 1u32..1200,
        ) {
            let mut at = 0u32;
            let segs: Vec<Segment> = lens
                .iter()
                .enumerate()
                .map(|(t, &l)| {
                    at += l;
                    Segment::new(t as u32, at - l, at)
                })
                .collect();
            let first = pack_warps(&segs, budget);
            proptest::prop_assert_eq!(first[0], 0);
            proptest::prop_assert_eq!(*first.last().unwrap() as usize, segs.len());
            for g in first.windows(2) {
                let n = g[1] - g[0];
                proptest::prop_assert!((1..=32).contains(&n) || segs.is_empty());
                let work: u64 = (g[0]..g[1]).map(|i| u64::from(lens[i as usize])).sum();
                proptest::prop_assert!(n == 1 || work <= u64::from(budget));
                proptest::prop_assert_eq!(
                    g[0] as usize / PACK_CHUNK,
                    (g[1] as usize - 1) / PACK_CHUNK
                );
                // Greedy: the next segment did not fit, the group was full,
                // or a chunk starts there.
                if let Some(&next) = lens.get(g[1] as usize) {
                    proptest::prop_assert!(
                        n == 32
                            || work + u64::from(next) > u64::from(budget)
                            || g[1] as usize % PACK_CHUNK == 0
                    );
                }
            }
        }
    }

    #[test]
    fn whole_runs_name_groups_of_whole_consecutive_tasks() {
        // Tasks 0-2 whole, task 3 in two pieces, task 4 whole, task 6 then 5.
        let segs = vec![
            Segment::new(0, 0, 4),
            Segment::new(1, 4, 8),
            Segment::new(2, 8, 9),
            Segment::new(3, 9, 20),
            Segment::new(3, 20, 30),
            Segment::new(4, 30, 31),
            Segment::new(6, 40, 41),
            Segment::new(5, 31, 40),
        ];
        let list = TaskList::new(segs).unwrap();
        let first = [0, 3, 4, 5, 6, 8];
        assert_eq!(
            whole_runs(&list, &first),
            vec![0, u32::MAX, u32::MAX, 4, u32::MAX]
        );
        assert_eq!(whole_runs(&list, &[0, 8]), vec![u32::MAX]);
        assert_eq!(whole_runs(&list, &[0, 1]), vec![0]);
    }

    #[test]
    fn grid_counts_threads_per_item() {
        assert_eq!(grid(256, 1).unwrap(), 1);
        assert_eq!(grid(257, 1).unwrap(), 2);
        assert_eq!(grid(256, 32).unwrap(), 32);
        assert_eq!(grid(0, 4).unwrap(), 0);
        assert!(grid(u64::from(u32::MAX) * 64, 32).is_err());
    }

    const SM80: Arch = Arch::new(8, 0);
    const SM90: Arch = Arch::new(9, 0);

    fn step(entry: &'static str, blocks: u32, items: u64, dependent: bool) -> Step {
        Step {
            entry,
            blocks,
            items,
            dependent,
            validation: Validation::None,
        }
    }

    #[test]
    fn all_tasks_launch_one_kernel_sized_by_threads_per_task() {
        let p = plan_launches(Decomposition::Cte, Items::All(1000), SM90).unwrap();
        assert_eq!(p.steps, [step("wf_cte_all", 4, 1000, false)]);
        assert!(!p.packed_warps);
        let p = plan_launches(Decomposition::SubWarp(8), Items::All(1000), SM90).unwrap();
        assert_eq!(p.steps, [step("wf_sub8_all", 32, 1000, false)]);
        // No task: no launch.
        let p = plan_launches(Decomposition::Thread, Items::All(0), SM90).unwrap();
        assert!(p.steps.is_empty());
        assert!(plan_launches(Decomposition::SubWarp(6), Items::All(1), SM90).is_err());
    }

    #[test]
    fn task_lists_add_the_merge_as_a_dependent_on_sm90() {
        let list = |packed_warps, split_tasks, merge| Items::List {
            segments: 5000,
            packed_warps,
            split_tasks,
            merge,
        };
        // Packed CTE: a warp per group; the merge 8 lanes per split task.
        let p = plan_launches(
            Decomposition::Cte,
            list(Some(300), 100, MergeWidth::Narrow),
            SM90,
        )
        .unwrap();
        assert_eq!(
            p.steps,
            [
                step("wf_cte_list", 38, 5000, false),
                step("wf_merge", 4, 100, true)
            ]
        );
        assert!(p.packed_warps);
        // Before sm_90 the merge follows in stream order; wide: 32 lanes.
        let p = plan_launches(Decomposition::Cte, list(None, 100, MergeWidth::Wide), SM80).unwrap();
        assert_eq!(
            p.steps,
            [
                step("wf_cte_list", 20, 5000, false),
                step("wf_merge_wide", 13, 100, false)
            ]
        );
        assert!(!p.packed_warps);
        // Other decompositions ignore packed groups; no split task, no merge.
        let p = plan_launches(
            Decomposition::SubWarp(4),
            list(Some(300), 0, MergeWidth::Narrow),
            SM90,
        )
        .unwrap();
        assert_eq!(p.steps, [step("wf_sub4_list", 79, 5000, false)]);
        assert!(!p.packed_warps);
        // A task of many pieces: a block per split task.
        let p = plan_launches(
            Decomposition::SubWarp(32),
            list(None, 3, MergeWidth::Block),
            SM90,
        )
        .unwrap();
        assert_eq!(p.steps[1], step("wf_merge_block", 3, 3, true));
    }

    #[test]
    fn column_lists_run_a_thread_per_piece_and_column_then_their_merge() {
        let list = |split_tasks| Items::Columns {
            segments: 1000,
            columns: 64,
            split_tasks,
        };
        let p = plan_launches(Decomposition::Thread, list(10), SM90).unwrap();
        assert_eq!(
            p.steps,
            [
                step("wf_thread_columns", 250, 64_000, false),
                step("wf_merge_columns", 3, 640, true)
            ]
        );
        let p = plan_launches(Decomposition::Thread, list(10), SM80).unwrap();
        assert_eq!(p.steps[1], step("wf_merge_columns", 3, 640, false));
        let p = plan_launches(Decomposition::Thread, list(0), SM90).unwrap();
        assert_eq!(p.steps, [step("wf_thread_columns", 250, 64_000, false)]);
        // One thread per item only; a product past u64 is an error.
        assert!(plan_launches(Decomposition::Cte, list(0), SM90).is_err());
        let huge = Items::Columns {
            segments: u64::MAX / 2,
            columns: 3,
            split_tasks: 0,
        };
        assert!(plan_launches(Decomposition::Thread, huge, SM90).is_err());
    }

    #[test]
    fn serial_segments_run_as_threads_and_packed_warps_as_cte() {
        let serial = Cut {
            max_len: SMALL_LAUNCH_SEGMENT,
            pack_budget: None,
            queue_chunk: None,
        };
        assert_eq!(
            list_decomposition(Decomposition::Cte, serial, 8),
            Decomposition::Thread
        );
        // Segments longer than the serial bound expand.
        assert_eq!(
            list_decomposition(Decomposition::Cte, serial, 2),
            Decomposition::Cte
        );
        // Packed warps expand whatever their segments' lengths.
        let packed = Cut {
            max_len: 64,
            pack_budget: Some(64),
            queue_chunk: None,
        };
        assert_eq!(
            list_decomposition(Decomposition::Cte, packed, 64),
            Decomposition::Cte
        );
        // Other decompositions are what they were asked to be.
        assert_eq!(
            list_decomposition(Decomposition::SubWarp(8), serial, 8),
            Decomposition::SubWarp(8)
        );
    }
}
